/*-------------------------------------------------------------------------
 *
 * gpuircodec.h
 *	  Block codec of gpuir posting lists: PForDelta-style bit packing of
 *	  docID d-gaps and term frequencies, 128 postings per block.
 *
 * Pure C (stdint only): no postgres.h, no palloc, no ereport, so that the
 * same code serves the backend, the list encoder (gpuirlist.h), test/ and
 * bench/.  cuda/ decodes the same bytes on the device with its own code
 * (cuda/gpuir_decode.cuh) and takes the constants below from this header.
 *
 * Block payload layout (all multi-byte fields little-endian, the payload
 * starts 4-byte aligned and its length is a multiple of 4):
 *
 *   byte  0      n - 1          number of postings in the block (1..128)
 *   byte  1      bg             bit width of the packed d-gap field (0..32)
 *   byte  2      eg             number of d-gap exceptions (0..n)
 *   byte  3      hg             bit width of a d-gap exception's high part
 *   byte  4      bt             bit width of the packed tf-1 field (0..32)
 *   byte  5      et             number of tf exceptions
 *   byte  6      ht             bit width of a tf exception's high part
 *   byte  7      0              reserved
 *   then the d-gap section, then the tf section, each laid out as:
 *     words[ceil(n*w/32)]       value i's low w bits at bit i*w, LSB first,
 *                               a value may straddle two 32-bit words
 *     uint8 pos[e], zero-padded to a multiple of 4 bytes
 *                               positions (0..n-1) of the exceptions
 *     words[ceil(e*h/32)]       exception j's bits above w (value >> w)
 *
 *   d-gap i = docID[i] - docID[i-1] - 1 (mod 2^32), docID[-1] being the
 *   previous block's last docID, or 0xFFFFFFFF for a list's first block, so
 *   any docID in 0..2^32-2 and any gap encode.  tf values are stored as tf-1.
 *
 *   For example n = 3, docIDs 7, 8, 12 after a block ending at 5, tf 1, 1, 9:
 *   gaps 1, 0, 3 -> bg = 2, words[0] = 0b11_00_01; tf-1 = 0, 0, 8 -> bt = 0,
 *   et = 1, ht = 4, pos = {2}, high = 8 (the exception's whole value).
 *
 * Width selection is "patched frame of reference" (Zukowski et al., ICDE
 * 2006; the block-wise GPU variant is Ding et al., WWW 2009, section 6.2):
 * per section the width w minimising the encoded size is chosen, and the
 * values that do not fit in w bits become exceptions, patched after
 * unpacking.  Every value is at a fixed bit offset, so a single tf can be
 * read without unpacking the block (GpuirCodecTf), and a GPU thread per
 * posting can unpack in parallel before a block-local prefix sum.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIRCODEC_H
#define GPUIRCODEC_H

#include <stddef.h>
#include <stdint.h>

#define GPUIR_BLOCK_SIZE		128		/* postings per full block */
#define GPUIR_BLOCK_HEADER		8		/* bytes of the payload header */
/* worst case: header + 2 sections of (128 x 32-bit words + 128 positions + 128 words) */
#define GPUIR_BLOCK_MAX_BYTES	(GPUIR_BLOCK_HEADER + 2 * (3 * 4 * GPUIR_BLOCK_SIZE))
#define GPUIR_FIRST_PREV_DOCID	UINT32_MAX	/* docID[-1] of a list's first block */

/* status codes of the decoder */
#define GPUIR_CODEC_OK			0
#define GPUIR_CODEC_CORRUPT		(-1)

#ifdef __CUDACC__
#define GPUIR_CODEC_HOST_DEVICE __host__ __device__
#else
#define GPUIR_CODEC_HOST_DEVICE
#endif

/*
 * GpuirCodecSectionSound: does the header (w, e, h) of a section of a
 * block of n postings follow the field rules (widths up to 32, at most n
 * exceptions, a high width that is nonzero exactly when there are
 * exceptions, w + h up to 32)?  1 or 0.  The one statement of these field
 * rules: GpuirCodecBlockBytes checks every section with it, and so does the
 * device's checked decoder (cuda/gpuir_decode.cuh, gpuir_block_layout).
 * The block-level rules and the sections' sizes are written in both;
 * test/test_cuda_layout.cu checks that they agree.
 */
GPUIR_CODEC_HOST_DEVICE static inline int
GpuirCodecSectionSound(int n, int w, int e, int h)
{
	return !(w > 32 || e > n || h > 32 || (e > 0 && (w + h > 32 || h == 0)) ||
			 (e == 0 && h != 0));
}

/* C linkage for the CUDA host code that checks blocks (cuda/gpuir_segment.cu) */
#ifdef __cplusplus
extern "C"
{
#endif

/*
 * GpuirCodecEncode: encode n (1..128) postings, docids strictly increasing
 * and greater than prev_docid (wrapping: prev_docid = GPUIR_FIRST_PREV_DOCID
 * for a first block), tfs >= 1.  Writes at most GPUIR_BLOCK_MAX_BYTES to out
 * and returns the number of bytes written (a multiple of 4).
 */
extern size_t GpuirCodecEncode(const uint32_t *docids, const uint32_t *tfs,
							   int n, uint32_t prev_docid, uint8_t *out);

/*
 * GpuirCodecDecode: decode the block in in[0..len) into docids[] and tfs[]
 * (each of room for 128).  Returns the number of postings (1..128), or
 * GPUIR_CODEC_CORRUPT if the bytes are not a well-formed block: it never
 * reads outside in[0..len) and never writes past 128 entries.  Either output
 * may be NULL to skip that section.
 */
extern int	GpuirCodecDecode(const uint8_t *in, size_t len, uint32_t prev_docid,
							 uint32_t *docids, uint32_t *tfs);

/*
 * GPUIR_CODEC_SLOP: the bytes after a block that GpuirCodecDecodePadded may
 * load.  Its unpackers load whole groups of 8 values with wide unaligned
 * loads (a group's loads end at most 32 bytes after the words of its
 * section); none of those bytes reaches an output.
 */
#define GPUIR_CODEC_SLOP		32

/*
 * GpuirCodecDecodePadded: GpuirCodecDecode for a block that is exactly
 * in[0..len) (the list readers know each block's length from the block
 * directory) and whose buffer holds GPUIR_CODEC_SLOP readable bytes after
 * in[len - 1] (their values do not matter), so that no section's last
 * values are unpacked from a copy.  The same checks and the same outputs
 * as GpuirCodecDecode, and GPUIR_CODEC_CORRUPT also when the block's header
 * gives another length than len (GpuirCodecBlockBytes); docids[n..128) and
 * tfs[n..128) may be overwritten.  The query cursors' decoder
 * (gpuirlistread.c).
 */
extern int	GpuirCodecDecodePadded(const uint8_t *in, size_t len, uint32_t prev_docid,
								   uint32_t *docids, uint32_t *tfs);

/*
 * GpuirCodecBlockBytes: the encoded length of the block at in[0..len), from
 * its header, or GPUIR_CODEC_CORRUPT.
 */
extern long GpuirCodecBlockBytes(const uint8_t *in, size_t len);

/*
 * GpuirCodecCheckTf: validate the tf section of a block whose length
 * GpuirCodecBlockBytes accepted, without unpacking it when it need not:
 * exception positions strictly increasing and inside the block, and no tf
 * that would wrap (only possible with 32-bit values).  Returns
 * GPUIR_CODEC_OK or GPUIR_CODEC_CORRUPT.  A block that passes it and whose
 * docIDs decode gives the same tfs through GpuirCodecTf as through
 * GpuirCodecDecode.
 */
extern int	GpuirCodecCheckTf(const uint8_t *in);

/*
 * GpuirCodecTf: the tf of posting i of an already validated block, read at
 * its bit offset without unpacking the rest of the block (Ding et al. 2009,
 * section 8.2).
 */
extern uint32_t GpuirCodecTf(const uint8_t *in, int i);

/*
 * The tf section of an already validated block, located once from its
 * header (GpuirCodecTfReaderInit), so that a query reading the tfs of
 * several of the block's postings one at a time (GpuirCodecTfAt, what
 * GpuirCodecTf does for one) does not parse the header again for each.
 */
typedef struct GpuirCodecTfReader
{
	const uint8_t *words;		/* the packed tf-1 values, w bits each */
	const uint8_t *pos;			/* positions of the e exceptions */
	const uint8_t *high;		/* their bits above w, h bits each */
	int			w;
	int			e;
	int			h;
} GpuirCodecTfReader;

extern void GpuirCodecTfReaderInit(const uint8_t *in, GpuirCodecTfReader *r);

/* GpuirCodecUnpackOne: value i of a section's words, w bits wide */
static inline uint32_t
GpuirCodecUnpackOne(const uint8_t *words, int i, int w)
{
	size_t		bit = (size_t) i * w;
	const uint8_t *p = words + 4 * (bit >> 5);
	int			off = (int) (bit & 31);
	uint64_t	v;

	if (w == 0)
		return 0;
	v = ((uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) |
		 ((uint32_t) p[3] << 24)) >> off;
	if (off + w > 32)
		v |= (uint64_t) ((uint32_t) p[4] | ((uint32_t) p[5] << 8) | ((uint32_t) p[6] << 16) |
						 ((uint32_t) p[7] << 24)) << (32 - off);
	return (uint32_t) (v & ((w == 32) ? 0xFFFFFFFFu : (((uint64_t) 1 << w) - 1)));
}

/* GpuirCodecTfAt: the tf of posting i of r's block */
static inline uint32_t
GpuirCodecTfAt(const GpuirCodecTfReader *r, int i)
{
	uint32_t	v = GpuirCodecUnpackOne(r->words, i, r->w);

	for (int j = 0; j < r->e; j++)
	{
		if (r->pos[j] == i)
		{
			v |= GpuirCodecUnpackOne(r->high, j, r->h) << r->w;
			break;
		}
		if (r->pos[j] > i)
			break;
	}
	return v + 1;
}

/*
 * GpuirCodecBlockImpacts: reduce the (tf, dl) pairs of a block's postings,
 * pairs[0 .. n) (n >= 1; reordered in place), to at most nimpacts pairs
 * that dominate every posting (tf no smaller, dl no larger), left in
 * pairs[0 .. m); returns m (1 .. nimpacts).  The Pareto frontier (Lucene's
 * "competitive impacts") is computed first; while it is too long, the two
 * neighbours whose merge (larger tf, smaller dl) raises the BM25 tf part
 * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl)) least are merged.  The
 * result bounds the block for any avgdl; avgdl (> 0) only steers which bound
 * is tightest.  Block-max bounds as in Ding & Suel, SIGIR 2011, section 3.
 */
extern int	GpuirCodecBlockImpacts(uint32_t (*pairs)[2], int n, int nimpacts,
								   double k1, double b, double avgdl);

#ifdef __cplusplus
}
#endif

#endif							/* GPUIRCODEC_H */
