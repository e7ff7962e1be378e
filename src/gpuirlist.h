/*-------------------------------------------------------------------------
 *
 * gpuirlist.h
 *	  The posting-list format of gpuir, its one owner: a term's list is a
 *	  run of block headers (GpuirBlockHeader, in a segment's BLOCKDIR
 *	  stream) and of encoded blocks (gpuircodec.h, in its PAYLOAD stream),
 *	  described by a dictionary entry (GpuirDictEntry, in its DICT stream).
 *	  src/README draws the layout.
 *
 * Pure C (stdint only): no postgres.h, no palloc, no ereport, so that the
 * backend (segment builder, merges, the cursor of gpuirlistread.c), the GPU
 * worker's upload, cuda/ (format constants), test/, bench/ and the fuzz
 * seeds build and check lists with the same code.
 *
 *	  encoder	GpuirListEncoder: blocks of 128 postings, each with its header
 *				(last docID, payload offset, block-max impacts), and the
 *				dictionary entry's counts and list-level bounds
 *	  checks	GpuirListCheckEntry, GpuirListCheckHeader, GpuirListDecodeBlock:
 *				every rule a reader relies on, as one set; each returns NULL
 *				or what is wrong, and the caller raises it with the location
 *				(the backend: ERRCODE_INDEX_CORRUPTED, gpuirlistread.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIRLIST_H
#define GPUIRLIST_H

#include <stddef.h>
#include <stdint.h>

#include "gpuircodec.h"

#ifdef __cplusplus
#define GPUIR_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define GPUIR_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/*
 * Impacts kept per block: (tf, dl) pairs such that every posting of the
 * block has tf <= impact_tf[i] and dl >= impact_dl[i] for some i (a reduced
 * Pareto frontier), so max_i BM25(impact_tf[i], impact_dl[i]) bounds the
 * block's scores whatever avgdl is (src/README, "Block-max bounds").
 */
#define GPUIR_BLOCK_IMPACTS		2

/* a block header (block directory entry): 24 bytes */
typedef struct GpuirBlockHeader
{
	uint32_t	last_docid;		/* docID of the block's last posting */
	uint32_t	payload_off;	/* byte offset of the block in the PAYLOAD stream */
	uint32_t	impact_tf[GPUIR_BLOCK_IMPACTS];
	uint32_t	impact_dl[GPUIR_BLOCK_IMPACTS];
} GpuirBlockHeader;

/* a dictionary entry: 32 bytes */
typedef struct GpuirDictEntry
{
	uint32_t	lexeme_off;		/* offset in the LEXEMES stream */
	uint16_t	lexeme_len;
	uint16_t	reserved;
	uint32_t	df;				/* live docs holding the term (VACUUM lowers it) */
	uint32_t	npostings;		/* postings stored in the list */
	uint32_t	first_block;	/* index of the list's first GpuirBlockHeader */
	uint32_t	nblocks;		/* ceil(npostings / GPUIR_BLOCK_SIZE) */
	uint32_t	max_tf;			/* list-level bound inputs: largest tf, */
	uint32_t	min_dl;			/* and smallest dl of the list's documents */
} GpuirDictEntry;

/* the layouts the pages, cuda/ and the codec agree on */
GPUIR_STATIC_ASSERT(sizeof(GpuirBlockHeader) == 24, "block header is 24 bytes on disk");
GPUIR_STATIC_ASSERT(sizeof(GpuirDictEntry) == 32, "dictionary entry is 32 bytes on disk");
GPUIR_STATIC_ASSERT(GPUIR_BLOCK_SIZE >= 1 && GPUIR_BLOCK_SIZE <= 256,
					"n - 1 and exception positions are stored in one byte");
GPUIR_STATIC_ASSERT(GPUIR_BLOCK_HEADER == 8, "the block header is 8 bytes");
GPUIR_STATIC_ASSERT(GPUIR_BLOCK_MAX_BYTES % 4 == 0, "blocks are whole 32-bit words");
/* a section is at most 128 packed words, 128 positions and, since w + h <= 32, one spare word */
GPUIR_STATIC_ASSERT(GPUIR_BLOCK_MAX_BYTES >=
					GPUIR_BLOCK_HEADER + 2 * (4 * GPUIR_BLOCK_SIZE + GPUIR_BLOCK_SIZE + 4),
					"GPUIR_BLOCK_MAX_BYTES holds the largest well-formed block");

/* blocks of a list of npostings postings */
static inline uint32_t
GpuirListBlocks(uint32_t npostings)
{
	return (uint32_t) (((uint64_t) npostings + GPUIR_BLOCK_SIZE - 1) / GPUIR_BLOCK_SIZE);
}

/* postings in block blk (0-based) of a list of npostings postings */
static inline int
GpuirListBlockPostings(uint32_t npostings, uint32_t blk)
{
	uint64_t	before = (uint64_t) blk * GPUIR_BLOCK_SIZE;

	return (int) ((uint64_t) npostings - before < GPUIR_BLOCK_SIZE
				  ? (uint64_t) npostings - before : GPUIR_BLOCK_SIZE);
}

/* ---------- encoder ---------- */

/*
 * The state of one list being encoded.  Postings come in docID order, in
 * blocks of GPUIR_BLOCK_SIZE (the last one may be shorter).  k1, b and avgdl
 * only steer which impacts are kept (GpuirCodecBlockImpacts); the bounds are
 * safe for any avgdl.
 */
typedef struct GpuirListEncoder
{
	double		k1;
	double		b;
	double		avgdl;
	uint32_t	payload_off;	/* where the next block goes in PAYLOAD */
	uint32_t	prev_docid;		/* last docID so far (GPUIR_FIRST_PREV_DOCID) */
	uint32_t	npostings;
	uint32_t	nblocks;
	uint32_t	max_tf;
	uint32_t	min_dl;
} GpuirListEncoder;

/*
 * GpuirListEncoderInit: start a list whose first block will be written at
 * byte payload_off of the PAYLOAD stream (a multiple of 4).
 */
extern void GpuirListEncoderInit(GpuirListEncoder *e, double k1, double b, double avgdl,
								 uint32_t payload_off);

/*
 * GpuirListEncodeBlock: encode the next block of the list: n (1..128)
 * postings, docs[] strictly increasing and above every earlier docID of the
 * list, tfs[] >= 1, dls[] the documents' lengths.  Writes the block's bytes
 * to out (room for GPUIR_BLOCK_MAX_BYTES) and its header to *bh; returns the
 * number of bytes written (a multiple of 4), or 0, writing nothing, when the
 * postings break the rules above (a duplicate docID of a corrupt merge
 * input) or the PAYLOAD offset would pass 4 GB.  Only the last block of a
 * list may have fewer than 128 postings.
 */
extern size_t GpuirListEncodeBlock(GpuirListEncoder *e, const uint32_t *docs,
								   const uint32_t *tfs, const uint32_t *dls, int n,
								   GpuirBlockHeader *bh, uint8_t *out);

/*
 * GpuirListEncoderFinish: the list's counts and bounds into *de (npostings,
 * df = npostings, nblocks, max_tf, min_dl); lexeme and first_block are the
 * caller's.
 */
extern void GpuirListEncoderFinish(const GpuirListEncoder *e, GpuirDictEntry *de);

/*
 * GpuirListCheckEncoded: decode the block just written (out, len bytes,
 * after a block ending at prev_docid) and compare it with its postings and
 * header: the builder's self-check under USE_ASSERT_CHECKING (as GIN checks
 * what it wrote).  Returns NULL, or what differs.
 */
extern const char *GpuirListCheckEncoded(const uint8_t *out, size_t len, uint32_t prev_docid,
										 const GpuirBlockHeader *bh, const uint32_t *docs,
										 const uint32_t *tfs, const uint32_t *dls, int n);

/* ---------- checks of the readers ---------- */

/*
 * GpuirListCheckEntry: a dictionary entry's list fits its segment: at least
 * one posting, nblocks = ceil(npostings / 128), blocks inside the segment's
 * seg_nblocks.  Returns NULL or what is wrong.
 */
extern const char *GpuirListCheckEntry(const GpuirDictEntry *de, uint32_t seg_nblocks);

/*
 * GpuirListCheckHeader: one block header, read without its block: its
 * payload [payload_off, end) starts and ends 4-byte aligned (encoded blocks
 * are whole 32-bit words; the GPU copies them as such), at least a block header
 * and at most GPUIR_BLOCK_MAX_BYTES long (end: the next block's offset, or
 * the PAYLOAD stream's length after a segment's last block); its last docID
 * is below ndocs and, when prev is the header of the list's previous block,
 * above prev's.  Readers that skip blocks by their headers (WAND, BMW, the
 * GPU kernels) rely on these without decoding.  Returns NULL or what is
 * wrong.
 */
extern const char *GpuirListCheckHeader(const GpuirBlockHeader *bh, const GpuirBlockHeader *prev,
										uint32_t end, uint32_t ndocs);

/*
 * GpuirListDecodeBlock: decode a block whose header passed
 * GpuirListCheckHeader: enc holds its len bytes, prev_docid is the list's
 * previous block's last docID (GPUIR_FIRST_PREV_DOCID for the first),
 * expect the postings it must hold (GpuirListBlockPostings).  The block's
 * own header gives exactly len bytes, it decodes to expect postings whose
 * last docID is bh's, and its tf section is sound (so GpuirCodecTf may read
 * it).  docs (room for 128) receives the docIDs; tfs, when not NULL, the
 * tfs.  With padded, enc has GPUIR_CODEC_SLOP readable bytes after the
 * block and docs and tfs room for 128 each (GpuirCodecDecodePadded, the
 * faster decoder); without, docs and tfs need room for expect postings
 * only.  Returns NULL or what is wrong.
 */
extern const char *GpuirListDecodeBlock(const uint8_t *enc, uint32_t len, uint32_t prev_docid,
										const GpuirBlockHeader *bh, int expect,
										uint32_t *docs, uint32_t *tfs, int padded);

/*
 * GpuirListCheckLengths: check nblocks consecutive blocks whose headers
 * dir[] passed GpuirListCheckHeader as GpuirListDecodeBlock's first check
 * does (a block's own header must give its extent's length,
 * GpuirCodecBlockBytes).  Block i spans [dir[i].payload_off,
 * dir[i + 1].payload_off), the last one up to end (byte offsets in the
 * segment's payload); payload holds the bytes from dir[0].payload_off on.
 * Returns NULL when every block passes, else why the first that does not
 * fails (GpuirListDecodeBlock's words), its index (0-based, from dir[0])
 * in *bad.  For a reader that holds blocks without decoding them (the GPU
 * worker's lists in transit: the kernels take a list's block layout from
 * its header unchecked, gpuir_warp_decode_listed_block).
 */
extern const char *GpuirListCheckLengths(const uint8_t *payload, const GpuirBlockHeader *dir,
										 uint32_t nblocks, uint32_t end, uint32_t *bad);

/* ---------- scoring ---------- */

/*
 * GpuirBM25Expr: the BM25 contribution of one term to one document, in
 * float32, the one CPU-side expression of the formula (ARCHITECTURE.md
 * decision 7; Robertson & Zaragoza, "The Probabilistic Relevance Framework:
 * BM25 and Beyond" (2009), eq. 3.15):
 *   idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))
 * tf >= 1 occurrences, dl in tokens, avgdl > 0.  The engine (GpuirBM25 in
 * gpuir.h) and bench/ call it; the kernels compute the same expression with
 * round-to-nearest intrinsics and no fused multiply-add; C code that calls
 * it must not contract it either (the Makefile, test/ and bench/ build with
 * -ffp-contract=off: with FMA, GCC would fuse tf + k1 * (...) here but not
 * in GpuirBM25FromNorm given a stored norm, and the bits would differ).
 * GpuirBM25Norm is its length norm k1 (1 - b + b dl / avgdl), which depends
 * on the document only (run_taat keeps it per document), and
 * GpuirBM25FromNorm the rest: the same float operations in the same order.
 */
static inline float
GpuirBM25Norm(uint32_t dl, float k1, float b, float avgdl)
{
	return k1 * ((1.0f - b) + b * ((float) dl / avgdl));
}

/* GpuirBM25FromNorm: GpuirBM25Expr given the document's GpuirBM25Norm (the same bits) */
static inline float
GpuirBM25FromNorm(float idf, uint32_t tf, float norm, float k1)
{
	float		tff = (float) tf;

	return idf * (tff * (k1 + 1.0f)) / (tff + norm);
}

static inline float
GpuirBM25Expr(float idf, uint32_t tf, uint32_t dl, float k1, float b, float avgdl)
{
	return GpuirBM25FromNorm(idf, tf, GpuirBM25Norm(dl, k1, b, avgdl), k1);
}

#endif							/* GPUIRLIST_H */
