/*-------------------------------------------------------------------------
 *
 * gpuir_decode.cuh
 *	  Block-wide device routine that decodes one gpuir posting block
 *	  (src/gpuircodec.h format) with 128 threads, for the search kernels
 *	  (gpuir_search.cu) that decode the blocks they select, and for the
 *	  unit test's decode kernel (test/cuda_decode_kernel.cu).
 *
 * The algorithm is block-wise PForDelta decoding on the GPU (Ding, He, Yan,
 * Suel, WWW 2009, section 6.2): every value sits at a fixed bit offset, so
 * thread i unpacks posting i of the d-gap and tf sections independently,
 * threads j < e patch the exceptions' high bits into the unpacked values,
 * and a block-local inclusive prefix sum (cub::BlockScan) of gap + 1,
 * seeded with the previous block's last docID, yields the docIDs.  Blocks
 * therefore decode independently: no list-wide scan is needed.
 *
 * This is a device re-implementation of GpuirCodecBlockBytes and
 * GpuirCodecDecode (src/gpuircodec.c), not shared code: the format's
 * constants come from src/gpuircodec.h, but the checks are written again
 * here to the same rules (header and section widths and counts, the
 * block inside the bytes available, exception positions strictly
 * increasing and < n, docIDs below 0xFFFFFFFF, tf - 1 below 0xFFFFFFFF).
 * test/test_cuda_decode.c checks, on random and corrupted blocks, that
 * both decoders give the same postings and the same corruption verdict.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_DECODE_CUH
#define GPUIR_DECODE_CUH

#include <stddef.h>
#include <stdint.h>

#include <cub/block/block_scan.cuh>

#include "gpuir_cuda_internal.h"

/*
 * One thread per posting of a block.  The format's limits are
 * src/gpuircodec.h's: GPUIR_BLOCK_HEADER, GPUIR_BLOCK_MAX_BYTES,
 * GPUIR_FIRST_PREV_DOCID.
 */
#define GPUIR_DECODE_THREADS	GPUIR_BLOCK_SIZE

/* where one section (d-gap or tf) of a validated block lies */
struct GpuirSectionLayout
{
	int			w;				/* bit width of packed values */
	int			e;				/* number of exceptions */
	int			h;				/* bit width of an exception's high part */
	uint32_t	word;			/* first word of the packed values */
	uint32_t	pos_byte;		/* first byte of the exception positions */
	uint32_t	high_word;		/* first word of the exceptions' high bits */
	uint32_t	bytes;			/* length of the section in bytes */
};

/* layout of a validated block; offsets are relative to the block start */
struct GpuirBlockLayout
{
	int			n;				/* postings, 1..128 */
	uint32_t	total_bytes;	/* encoded length, a multiple of 4 */
	GpuirSectionLayout gap;
	GpuirSectionLayout tf;
};

/* shared memory of gpuir_decode_block (one per thread block) */
struct GpuirDecodeTempStorage
{
	uint32_t	words[GPUIR_BLOCK_MAX_BYTES / 4];	/* the block's bytes */
	uint32_t	gap[GPUIR_DECODE_THREADS];	/* unpacked, patched d-gaps */
	uint32_t	tf[GPUIR_DECODE_THREADS];	/* unpacked, patched tf - 1 */
	typename cub::BlockScan<unsigned long long, GPUIR_DECODE_THREADS>::TempStorage scan;
	int			corrupt;		/* set by any thread that finds corruption */
};

/*
 * gpuir_section_check: validate one section header (w, e, h) whose bytes
 * start at byte off of a block with avail bytes available; fill *s.  Same
 * rules as section_check in src/gpuircodec.c.  off is a multiple of 4.
 */
__host__ __device__ static inline bool
gpuir_section_check(size_t avail, uint32_t off, int n, int w, int e, int h,
					GpuirSectionLayout *s)
{
	uint32_t	packed,
				padded,
				high,
				size;

	if (w > 32 || e > n || h > 32 || (e > 0 && (w + h > 32 || h == 0)) ||
		(e == 0 && h != 0))
		return false;
	packed = 4 * (((uint32_t) n * w + 31) / 32);
	padded = ((uint32_t) e + 3) & ~3u;
	high = 4 * (((uint32_t) e * h + 31) / 32);
	size = packed + padded + high;
	if (off > avail || size > avail - off)
		return false;
	s->w = w;
	s->e = e;
	s->h = h;
	s->word = off / 4;
	s->pos_byte = off + packed;
	s->high_word = (off + packed + padded) / 4;
	s->bytes = size;
	return true;
}

/*
 * gpuir_block_layout: validate the 8 header bytes hdr of a block with
 * avail (>= 8) bytes available and compute its layout, as
 * GpuirCodecBlockBytes does.  Returns false for a corrupt header.
 */
__host__ __device__ static inline bool
gpuir_block_layout(const uint8_t *hdr, size_t avail, GpuirBlockLayout *l)
{
	int			n = hdr[0] + 1;

	if (avail < GPUIR_BLOCK_HEADER || n > GPUIR_BLOCK_SIZE || hdr[7] != 0)
		return false;
	l->n = n;
	if (!gpuir_section_check(avail, GPUIR_BLOCK_HEADER, n, hdr[1], hdr[2], hdr[3], &l->gap))
		return false;
	if (!gpuir_section_check(avail, GPUIR_BLOCK_HEADER + l->gap.bytes, n,
							 hdr[4], hdr[5], hdr[6], &l->tf))
		return false;
	l->total_bytes = GPUIR_BLOCK_HEADER + l->gap.bytes + l->tf.bytes;
	return true;
}

/*
 * gpuir_unpack: value i of width w (0..32) from LSB-first packed words;
 * reads words[(i*w)/32] and, if the value straddles, the next word (both
 * inside the section for a validated block).
 */
__device__ static inline uint32_t
gpuir_unpack(const uint32_t *words, int i, int w)
{
	uint32_t	bit,
				wi,
				off;
	uint64_t	v;

	if (w == 0)
		return 0;
	bit = (uint32_t) i * (uint32_t) w;
	wi = bit >> 5;
	off = bit & 31;
	v = words[wi] >> off;
	if (off + w > 32)
		v |= (uint64_t) words[wi + 1] << (32 - off);
	return (uint32_t) (v & (w == 32 ? 0xFFFFFFFFull : ((1ull << w) - 1)));
}

/*
 * gpuir_load_word: 32-bit little-endian word k of in; word loads when in
 * is 4-byte aligned, byte loads otherwise.
 */
__device__ static inline uint32_t
gpuir_load_word(const uint8_t *__restrict__ in, bool aligned, uint32_t k)
{
	if (aligned)
		return reinterpret_cast<const uint32_t *>(in)[k];
	return (uint32_t) in[4 * k] | ((uint32_t) in[4 * k + 1] << 8) |
		((uint32_t) in[4 * k + 2] << 16) | ((uint32_t) in[4 * k + 3] << 24);
}

/*
 * gpuir_patch_section: threads j < e patch exception j of section s into
 * vals[pos[j]] (vals |= high_j << w), checking that positions are < n and
 * strictly increasing; corruption sets ts.corrupt.  Caller syncs before
 * (vals unpacked) and after (vals patched).
 */
__device__ static inline void
gpuir_patch_section(const GpuirSectionLayout &s, int n, GpuirDecodeTempStorage &ts,
					uint32_t *vals)
{
	const int	j = threadIdx.x;
	const uint8_t *bytes = reinterpret_cast<const uint8_t *>(ts.words);

	if (j < s.e)
	{
		int			p = bytes[s.pos_byte + j];

		if (p >= n || (j > 0 && p <= (int) bytes[s.pos_byte + j - 1]))
			atomicOr(&ts.corrupt, 1);
		else
			atomicOr(&vals[p], gpuir_unpack(ts.words + s.high_word, j, s.h) << s.w);
	}
}

/*
 * gpuir_decode_block: decode one posting block with the 128 threads of the
 * calling thread block (blockDim.x must be 128; every thread must call it,
 * with the same arguments).  Ding et al. 2009, section 6.2.
 *
 * Inputs:
 *	in[0..avail)	the block's bytes in global memory (read only within
 *					the validated encoded length, so never past avail)
 *	prev			docID[-1]: the previous block's last docID, or
 *					GPUIR_FIRST_PREV_DOCID for a list's first block
 *	want_docids, want_tfs	which sections to decode and validate (as
 *					passing NULL docids/tfs to GpuirCodecDecode)
 *	ts				shared temp storage; like CUB collectives, a caller
 *					reusing ts for another block must __syncthreads() first
 * Outputs (per thread t): *docid and *tf of posting t when t < count, 0
 * otherwise (and for all threads of a corrupt block).
 * Returns (the same in every thread) the posting count 1..128, or
 * GPUIR_CUDA_BLOCK_CORRUPT.
 */
__device__ static inline int
gpuir_decode_block(const uint8_t *__restrict__ in, size_t avail, uint32_t prev,
				   bool want_docids, bool want_tfs, GpuirDecodeTempStorage &ts,
				   uint32_t *docid, uint32_t *tf)
{
	typedef cub::BlockScan<unsigned long long, GPUIR_DECODE_THREADS> BlockScan;
	const int	t = threadIdx.x;
	const bool	aligned = (reinterpret_cast<uintptr_t>(in) & 3) == 0;
	uint8_t		hdr[GPUIR_BLOCK_HEADER];
	GpuirBlockLayout l;
	int			n;
	int			corrupt;

	*docid = 0;
	*tf = 0;
	if (avail < GPUIR_BLOCK_HEADER)
		return GPUIR_CUDA_BLOCK_CORRUPT;
	for (int k = 0; k < 2; k++)
	{
		uint32_t	w = gpuir_load_word(in, aligned, k);

		for (int b = 0; b < 4; b++)
			hdr[4 * k + b] = (uint8_t) (w >> (8 * b));
	}
	/* uniform: every thread sees the same header */
	if (!gpuir_block_layout(hdr, avail, &l))
		return GPUIR_CUDA_BLOCK_CORRUPT;
	n = l.n;

	/* stage the block in shared memory, coalesced */
	for (uint32_t k = t; k < l.total_bytes / 4; k += GPUIR_DECODE_THREADS)
		ts.words[k] = gpuir_load_word(in, aligned, k);
	if (t == 0)
		ts.corrupt = 0;
	__syncthreads();

	/* thread t unpacks value t of each section at its bit offset */
	if (t < n)
	{
		if (want_docids)
			ts.gap[t] = gpuir_unpack(ts.words + l.gap.word, t, l.gap.w);
		if (want_tfs)
			ts.tf[t] = gpuir_unpack(ts.words + l.tf.word, t, l.tf.w);
	}
	__syncthreads();

	/* patch exceptions */
	if (want_docids)
		gpuir_patch_section(l.gap, n, ts, ts.gap);
	if (want_tfs)
		gpuir_patch_section(l.tf, n, ts, ts.tf);
	__syncthreads();

	/* localized prefix sum of gap + 1, seeded with prev */
	if (want_docids)
	{
		unsigned long long x = (t < n) ? (unsigned long long) ts.gap[t] + 1 : 0;
		unsigned long long sum;
		long long	d;

		BlockScan(ts.scan).InclusiveSum(x, sum);
		d = (prev == GPUIR_FIRST_PREV_DOCID ? -1LL : (long long) prev) + (long long) sum;
		if (t < n)
		{
			if (d >= (long long) GPUIR_FIRST_PREV_DOCID)
				atomicOr(&ts.corrupt, 1);
			*docid = (uint32_t) d;
		}
	}
	if (want_tfs && t < n)
	{
		uint32_t	v = ts.tf[t];

		if (v == 0xFFFFFFFFu)
			atomicOr(&ts.corrupt, 1);
		*tf = v + 1;
	}
	__syncthreads();
	corrupt = ts.corrupt;
	if (corrupt)
	{
		*docid = 0;
		*tf = 0;
		return GPUIR_CUDA_BLOCK_CORRUPT;
	}
	return n;
}

#endif							/* GPUIR_DECODE_CUH */
