/*-------------------------------------------------------------------------
 *
 * gpuir_search.cu
 *	  Batched exact top-k BM25 search over one resident segment on the GPU:
 *	  segment upload, the AND and OR kernels, top-k selection and the host
 *	  launcher gpuir_cuda_search_batch (contracts in gpuir_cuda.h).
 *
 * Organisation by docID range (Ding, He, Yan, Suel, "Using Graphics
 * Processors for High Performance IR Query Processing", WWW 2009, section
 * 8.3; Stanfill, "Parallel Information Retrieval Algorithms", 1992:
 * parallel inverted files with score accumulators).  The docID space of
 * the segment is cut into tiles of GPUIR_TILE_DOCS docIDs.  One thread
 * block of 128 threads handles one (query, tile) pair and keeps, in shared
 * memory, a float accumulator and a match bit per docID of its tile, so no
 * per-query array of ndocs scores ever exists in global memory.  The
 * blocks of a list that overlap the tile are found by binary search on
 * block_last and decoded with gpuir_decode_block (section 6.2); a block
 * spanning several tiles is decoded by each of them (at most one extra
 * decode per list and tile).
 *
 * Exactness (ARCHITECTURE.md decision 6).  A document's score must be the
 * float32 sum, in the query's term order starting from 0.0f, of
 * idf * (tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * (dl / avgdl))), as
 * GpuirBM25 and the CPU engine compute it.  The tile processes the query's
 * terms one after another in term order; within one term a docID occurs at
 * most once, so each accumulator is touched by one thread per term, and
 * terms are separated by barriers: every accumulator sees exactly the CPU's
 * sequence of float additions.  The formula is written with the _rn
 * intrinsics so that no multiply-add is contracted, whatever --fmad says.
 *
 * OR: every list's overlapping blocks are decoded and scored; a document
 * matches when any list holds it (match bit).
 *
 * BMW: the OR result with block-max pruning (Ding & Suel, "Faster top-k
 * document retrieval using block-max indexes", SIGIR 2011, on the GPU as
 * in Huang et al., "GPU-Accelerated Block-Max Query Processing", ICA3PP
 * 2017: docID-range partitions, block-max bounds, a shared threshold).
 * The bound of a posting block of a term is the larger BM25 of its two
 * impacts, in double (GpuirBM25Bound of src/gpuir.h); every bound sum is
 * multiplied by GPUIR_BOUND_SLACK before it is compared with float32
 * scores, as on the CPU.  Each query keeps a threshold in global memory
 * that is always a lower bound of its final k-th best score: a tile that
 * kept k non-deleted fully scored documents publishes the k-th best score
 * of its own (atomicMax on the float's bits).  Per chunk:
 *	1. gpuir_search_bound_kernel: per (query, tile), the sum over terms of
 *	   the largest bound of the term's blocks overlapping the tile;
 *	2. gpuir_search_order_kernel: per query, the tiles by that bound,
 *	   highest first (the 2048 highest sorted, the rest after them), and
 *	   the tile kernel's grid runs rank-major (rank r of every query before
 *	   rank r + 1 of any), so that every query's most promising tiles run
 *	   first and raise its threshold early;
 *	3. the tile kernel skips a tile whose bound is below the threshold;
 *	   otherwise it cuts the tile into 128 sub-ranges of 64 docIDs (one per
 *	   thread; a sub-range overlaps at most two blocks of a list, found by
 *	   binary search on block_last) and sums each sub-range's per-term
 *	   maximal block bound; a sub-range is dead once its bound is strictly
 *	   below the threshold (a document scoring exactly the threshold may
 *	   still win by docID).  Terms are scored in query order as in OR, but
 *	   a block is decoded only if a sub-range it overlaps is alive; the live
 *	   set is refreshed from the threshold between terms (it only shrinks,
 *	   so a sub-range alive at the end saw every term: its scores are
 *	   exact), and the documents of dead sub-ranges are dropped before the
 *	   tile's top-k.  No document of the true top-k is ever dropped: its
 *	   score is at least the k-th best, so at least every threshold, and at
 *	   most its sub-range's bound times the slack.  A query falls back to
 *	   OR when the segment has no impacts or a term's idf is negative.
 *	   Corrupt blocks are detected only among the blocks BMW decodes (like
 *	   the CPU engine's BMW); the directory is checked in full.
 *
 * AND: Parallel Merge Find (Ding et al. 2009, sections 7 and 8.1) inside
 * the tile.  A tile is skipped at once unless every list has a block
 * overlapping it.  Lists are then taken from shortest to longest: the
 * shortest list's blocks give the candidate bitmap; for every longer list
 * a block is decoded only when its docID range (previous block's last
 * docID, its own last docID] holds a surviving candidate (Ding et al. find
 * the blocks of the longer list by binary search of each candidate in
 * block_last; testing each block's range against the candidate bitmap
 * selects the same blocks), and the candidates not in it are dropped; the
 * tile stops as soon as none survives.  The survivors are scored in a
 * second pass in the query's term order (not the shortest-first order),
 * again decoding only blocks that hold a survivor.
 *
 * Top-k (Ding et al. 2009, section 8.3, multi-level selection): every tile
 * drops deleted docIDs and keeps its k best documents (block-wide radix
 * select on the result key, gpuir_topk.cuh), appending them to its query's
 * candidate region; then one thread block per query selects the k best of
 * its candidates and sorts them by key (cub::BlockRadixSort).  The key
 * orders by score descending, then docID ascending, and is distinct per
 * document, so ties are broken exactly as on the CPU at both levels.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <cmath>

#include <cub/block/block_radix_sort.cuh>

#include "gpuir_cuda_internal.cuh"
#include "gpuir_decode.cuh"
#include "gpuir_topk.cuh"

#define GPUIR_SEARCH_THREADS	GPUIR_DECODE_THREADS	/* tile kernel: 128 */
#define GPUIR_TILE_DOCS			8192	/* docIDs per tile */
#define GPUIR_TILE_WORDS		(GPUIR_TILE_DOCS / 32)	/* bitmap words per tile */
#define GPUIR_TILE_FIRST_CACHE	GPUIR_SEARCH_THREADS	/* terms whose first block is cached */
#define GPUIR_FINAL_THREADS		256		/* final selection kernel */
#define GPUIR_FINAL_ITEMS		4		/* keys per thread in the final sort */
#define GPUIR_CAND_BUDGET		((uint64_t) 32 << 20)	/* candidate keys per chunk (256 MiB) */
#define GPUIR_BLOCK_MAX_BYTES_DEV	(4 * GPUIR_DECODE_MAX_WORDS)
#define GPUIR_BMW_SUB_DOCS		(GPUIR_TILE_DOCS / GPUIR_SEARCH_THREADS)	/* 64 */
#define GPUIR_BMW_ALIVE_WORDS	(GPUIR_SEARCH_THREADS / 32)	/* live sub-range bitmap */
#define GPUIR_BOUND_SLACK_DEV	1.0001	/* GPUIR_BOUND_SLACK of src/gpuir.h */
#define GPUIR_ORDER_THREADS		256		/* tile order kernel */
#define GPUIR_ORDER_ITEMS		8		/* tiles per thread sorted by bound */
#define GPUIR_NO_BMW			UINT32_MAX	/* GpuirSearchWork.bmw of a non-BMW query */

static_assert(GPUIR_FINAL_THREADS * GPUIR_FINAL_ITEMS >= GPUIR_CUDA_MAX_K,
			  "the final sort must hold k keys");
static_assert(GPUIR_TILE_DOCS % (32 * GPUIR_SEARCH_THREADS) == 0,
			  "tile items must divide evenly among the threads");
static_assert(GPUIR_BMW_SUB_DOCS % 32 == 0 && GPUIR_BMW_SUB_DOCS <= GPUIR_CUDA_BLOCK_SIZE,
			  "a BMW sub-range is whole bitmap words and overlaps at most two blocks");

/* one query of a chunk as the kernels see it */
struct GpuirSearchWork
{
	uint32_t	qindex;			/* row of the outputs */
	uint32_t	first_term;		/* its terms: terms[first_term ..] */
	uint32_t	nterms;
	uint32_t	k;
	uint32_t	mode;			/* GPUIR_CUDA_MODE_AND, _OR or _BMW */
	uint32_t	order_off;		/* AND: shortest-first order at order[order_off ..] */
	uint32_t	bmw;			/* BMW: its tile bounds and order at [bmw * ntiles
								 * ..] of tile_ub, tile_order; else GPUIR_NO_BMW */
	uint64_t	cand_off;		/* its candidate region in the chunk's buffer */
	uint64_t	cand_cap;		/* and the region's size in keys */
};

/* shared memory of the tile kernel (about 39 KB) */
struct GpuirTileSmem
{
	float		acc[GPUIR_TILE_DOCS];	/* score accumulators */
	uint32_t	cur[GPUIR_TILE_WORDS];	/* OR: matched; AND: candidates */
	uint32_t	nxt[GPUIR_TILE_WORDS];	/* AND: candidates in the current list */
	uint32_t	first[GPUIR_TILE_FIRST_CACHE];	/* first overlapping block of term j */
	union
	{
		GpuirDecodeTempStorage dec;
		GpuirSelectTempStorage<GPUIR_SEARCH_THREADS> sel;
	}			u;
	uint32_t	total;			/* valid documents in the tile */
	uint32_t	base;			/* first candidate slot of the tile */
	uint32_t	pos;			/* candidate slots handed out */
	uint32_t	alive[GPUIR_BMW_ALIVE_WORDS];	/* BMW: live sub-ranges */
	uint32_t	ndec;			/* blocks decoded (debug statistics) */
	unsigned long long kmin;	/* BMW: smallest key kept by the tile */
};

/* debug statistics (gpuir_cuda_search_stats), device side */
struct GpuirSearchDevStats
{
	unsigned long long blocks_decoded;
	unsigned long long tiles_pruned;
	unsigned long long subranges_pruned;
};

/* ---------- device helpers ---------- */

/*
 * gpuir_bm25: one term's contribution, the float32 expression of GpuirBM25
 * (src/gpuir.h) operation by operation, rounded to nearest at each step.
 */
__device__ static inline float
gpuir_bm25(float idf, uint32_t tf, uint32_t dl, const gpuir_cuda_scoring &sc)
{
	float		tff = __uint2float_rn(tf);
	float		norm = __fmul_rn(sc.k1, __fadd_rn(__fsub_rn(1.0f, sc.b),
												  __fmul_rn(sc.b, __fdiv_rn(__uint2float_rn(dl),
																			sc.avgdl))));

	return __fdiv_rn(__fmul_rn(idf, __fmul_rn(tff, __fadd_rn(sc.k1, 1.0f))),
					 __fadd_rn(tff, norm));
}

/*
 * gpuir_block_bound: the block-max bound of block b for a term of idf >= 0:
 * the larger of GpuirBM25Bound (src/gpuir.h, double) over the block's
 * GPUIR_CUDA_BLOCK_IMPACTS impacts; +infinity rather than NaN (0 / 0 from
 * a malformed impact), so that a bad impact never prunes.
 */
__device__ static inline double
gpuir_block_bound(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc, float idf,
				  uint32_t b)
{
	double		m = 0.0;

	for (int i = 0; i < GPUIR_CUDA_BLOCK_IMPACTS; i++)
	{
		const double tff = (double) seg.impact_tf[(size_t) b * GPUIR_CUDA_BLOCK_IMPACTS + i];
		const double dl = (double) seg.impact_dl[(size_t) b * GPUIR_CUDA_BLOCK_IMPACTS + i];
		const double norm = (double) sc.k1 * ((1.0 - (double) sc.b) +
											 (double) sc.b * (dl / (double) sc.avgdl));
		double		v = (double) idf * (tff * ((double) sc.k1 + 1.0)) / (tff + norm);

		if (isnan(v))
			v = (double) INFINITY;
		m = fmax(m, v);
	}
	return m;
}

/*
 * gpuir_first_block: the first block b of the list [fb, end) whose last
 * docID is >= lo (binary search on block_last; end if none), if that block
 * may hold a docID below hi, else end.  Every thread may call it (same
 * addresses: broadcast loads).
 */
__device__ static inline uint32_t
gpuir_first_block(const uint32_t *__restrict__ block_last, uint32_t fb, uint32_t end,
				  uint32_t lo, uint32_t hi)
{
	uint32_t	l = fb,
				h = end;

	while (l < h)
	{
		uint32_t	mid = l + (h - l) / 2;

		if (block_last[mid] < lo)
			l = mid + 1;
		else
			h = mid;
	}
	if (l < end && l > fb && block_last[l - 1] >= hi - 1)
		return end;				/* its docIDs start at or after hi */
	return l;
}

/* is any bit of bits[a .. z] (inclusive, tile offsets) set?  Block-wide. */
__device__ static inline bool
gpuir_bits_any(const uint32_t *bits, uint32_t a, uint32_t z)
{
	const uint32_t wa = a >> 5,
				wz = z >> 5;
	bool		any = false;

	if (a <= z)
		for (uint32_t w = wa + threadIdx.x; w <= wz; w += GPUIR_SEARCH_THREADS)
		{
			uint32_t	v = bits[w];

			if (w == wa)
				v &= ~0u << (a & 31);
			if (w == wz)
				v &= ~0u >> (31 - (z & 31));
			any |= (v != 0);
		}
	return __syncthreads_or(any) != 0;
}

/*
 * gpuir_tile_decode: decode block b of a list (blocks [fb, fb + nblocks),
 * npostings postings) with the calling thread block, checked as the CPU
 * engine's cursor_decode checks it: the extent lies inside the payload and
 * is at most GPUIR_BLOCK_MAX_BYTES, the block decodes, holds 128 postings
 * (the list's last block: the rest) and ends at block_last[b] < ndocs.
 * Returns the count (same in every thread; *doc, *tf of posting threadIdx.x)
 * or GPUIR_CUDA_BLOCK_CORRUPT.  Ends with a barrier, so ts is free again.
 */
__device__ static int
gpuir_tile_decode(const gpuir_cuda_segment &seg, const gpuir_cuda_term &term, uint32_t b,
				  bool want_tfs, GpuirDecodeTempStorage &ts, uint32_t *doc, uint32_t *tf)
{
	const uint32_t fb = term.first_block;
	const uint32_t off = seg.block_offset[b];
	const uint32_t end = seg.block_offset[b + 1];
	const uint32_t last = seg.block_last[b];
	const uint32_t prev = (b > fb) ? seg.block_last[b - 1] : GPUIR_DECODE_FIRST_PREV;
	const int	expect = (b + 1 < fb + term.nblocks) ? GPUIR_CUDA_BLOCK_SIZE
		: (int) (term.npostings - (uint32_t) GPUIR_CUDA_BLOCK_SIZE * (term.nblocks - 1));
	int			n;
	bool		bad;

	/* uniform: every thread read the same directory entries */
	if (end < off || end > seg.payload_bytes || end - off > GPUIR_BLOCK_MAX_BYTES_DEV ||
		last >= seg.ndocs || (b > fb && last <= prev))
		return GPUIR_CUDA_BLOCK_CORRUPT;
	n = gpuir_decode_block(seg.payload + off, end - off, prev, true, want_tfs, ts, doc, tf);
	if (n != expect)
		return GPUIR_CUDA_BLOCK_CORRUPT;
	bad = ((int) threadIdx.x == n - 1 && *doc != last);
	if (__syncthreads_or(bad))
		return GPUIR_CUDA_BLOCK_CORRUPT;
	return n;
}

/* is any sub-range sa .. sz (inclusive) of the live bitmap alive? */
__device__ static inline bool
gpuir_alive_any(const uint32_t *alive, uint32_t sa, uint32_t sz)
{
	for (uint32_t w = sa >> 5; w <= (sz >> 5); w++)
	{
		uint32_t	v = alive[w];

		if (w == (sa >> 5))
			v &= ~0u << (sa & 31);
		if (w == (sz >> 5))
			v &= ~0u >> (31 - (sz & 31));
		if (v != 0)
			return true;
	}
	return false;
}

/* what gpuir_tile_term does with the postings of a list inside the tile */
enum GpuirTilePass
{
	GPUIR_PASS_OR,				/* add contributions, set match bits */
	GPUIR_PASS_BMW,				/* OR, decoding only blocks with a live sub-range */
	GPUIR_PASS_FIRST,			/* AND, shortest list: candidates = its docIDs */
	GPUIR_PASS_FILTER,			/* AND, longer list: keep candidates it holds */
	GPUIR_PASS_SCORE			/* AND, survivors: add contributions */
};

/*
 * gpuir_tile_term: one list's pass over the tile [lo, hi), starting at its
 * first overlapping block first.  Blocks whose docID range holds no
 * candidate are skipped undecoded in the FILTER and SCORE passes (Parallel
 * Merge Find); in the BMW pass, blocks whose docID range in the tile lies
 * in dead sub-ranges only (sm.alive).  Within the pass each docID is
 * handled by one thread, so the
 * accumulator updates need no atomics.  Returns false if a block is
 * corrupt.
 */
template <int PASS>
__device__ static bool
gpuir_tile_term(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
				const gpuir_cuda_term &term, uint32_t first, uint32_t lo, uint32_t hi,
				GpuirTileSmem &sm)
{
	const uint32_t fb = term.first_block;
	const uint32_t end = fb + term.nblocks;

	for (uint32_t b = first; b < end; b++)
	{
		uint32_t	prev = (b > fb) ? seg.block_last[b - 1] : 0;
		uint32_t	doc,
					tf;
		int			n;

		if (b > fb && prev >= hi - 1)
			break;				/* this block and the next start at or after hi */
		if (PASS == GPUIR_PASS_FILTER || PASS == GPUIR_PASS_SCORE)
		{
			uint32_t	a = (b > fb && prev >= lo) ? prev + 1 - lo : 0;
			uint32_t	last = seg.block_last[b];
			uint32_t	z = ((last < hi - 1) ? last : hi - 1) - lo;

			if (!gpuir_bits_any(sm.cur, a, z))
				continue;
		}
		if (PASS == GPUIR_PASS_BMW)
		{
			uint32_t	a = (b > fb && prev >= lo) ? prev + 1 - lo : 0;
			uint32_t	last = seg.block_last[b];
			uint32_t	z = ((last < hi - 1) ? last : hi - 1) - lo;

			/* uniform: sm.alive changes only between terms, behind barriers */
			if (!gpuir_alive_any(sm.alive, a / GPUIR_BMW_SUB_DOCS, z / GPUIR_BMW_SUB_DOCS))
				continue;
		}
		n = gpuir_tile_decode(seg, term, b,
							  PASS == GPUIR_PASS_OR || PASS == GPUIR_PASS_BMW ||
							  PASS == GPUIR_PASS_SCORE,
							  sm.u.dec, &doc, &tf);
		if (n < 0)
			return false;
		if (threadIdx.x == 0)
			sm.ndec++;
		if ((int) threadIdx.x < n && doc >= lo && doc < hi)
		{
			const uint32_t i = doc - lo;
			const uint32_t bit = 1u << (i & 31);

			if (PASS == GPUIR_PASS_OR || PASS == GPUIR_PASS_BMW)
			{
				sm.acc[i] = __fadd_rn(sm.acc[i], gpuir_bm25(term.idf, tf, seg.doclen[doc], sc));
				atomicOr(&sm.cur[i >> 5], bit);
			}
			else if (PASS == GPUIR_PASS_FIRST)
				atomicOr(&sm.nxt[i >> 5], bit);
			else if (PASS == GPUIR_PASS_FILTER)
			{
				if (sm.cur[i >> 5] & bit)
					atomicOr(&sm.nxt[i >> 5], bit);
			}
			else if (sm.cur[i >> 5] & bit)
				sm.acc[i] = __fadd_rn(sm.acc[i], gpuir_bm25(term.idf, tf, seg.doclen[doc], sc));
		}
	}
	return true;
}

/* the first block of term j of the query in the tile (cached for j < 128) */
__device__ static inline uint32_t
gpuir_term_first(const gpuir_cuda_segment &seg, const gpuir_cuda_term &term, uint32_t j,
				 uint32_t lo, uint32_t hi, const GpuirTileSmem &sm)
{
	if (j < GPUIR_TILE_FIRST_CACHE)
		return sm.first[j];
	return gpuir_first_block(seg.block_last, term.first_block,
							 term.first_block + term.nblocks, lo, hi);
}

/*
 * gpuir_tile_scan_terms: every thread takes some terms, finds their first
 * overlapping blocks (cached in sm.first), and reports whether any term
 * (want_all false) or every term (want_all true) reaches the tile.
 */
__device__ static bool
gpuir_tile_scan_terms(const gpuir_cuda_segment &seg, const gpuir_cuda_term *qt, uint32_t nt,
					  uint32_t lo, uint32_t hi, bool want_all, GpuirTileSmem &sm)
{
	bool		any = false,
				missing = false;

	for (uint32_t j = threadIdx.x; j < nt; j += GPUIR_SEARCH_THREADS)
	{
		const gpuir_cuda_term term = qt[j];
		const uint32_t end = term.first_block + term.nblocks;
		uint32_t	first = end;

		if (term.nblocks > 0)
			first = gpuir_first_block(seg.block_last, term.first_block, end, lo, hi);
		if (j < GPUIR_TILE_FIRST_CACHE)
			sm.first[j] = first;
		if (first < end)
			any = true;
		else
			missing = true;
	}
	if (want_all)
		return __syncthreads_or(missing) == 0;
	return __syncthreads_or(any) != 0;
}

/*
 * gpuir_tile_or: accumulate the OR scores of the tile; 1 when some document
 * matched (sm.cur, sm.acc), 0 when no list reaches the tile, -1 corrupt.
 */
__device__ static int
gpuir_tile_or(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
			  const gpuir_cuda_term *qt, uint32_t nt, uint32_t lo, uint32_t hi,
			  GpuirTileSmem &sm)
{
	if (!gpuir_tile_scan_terms(seg, qt, nt, lo, hi, false, sm))
		return 0;
	for (uint32_t i = threadIdx.x; i < GPUIR_TILE_DOCS; i += GPUIR_SEARCH_THREADS)
		sm.acc[i] = 0.0f;
	for (uint32_t w = threadIdx.x; w < GPUIR_TILE_WORDS; w += GPUIR_SEARCH_THREADS)
		sm.cur[w] = 0;
	__syncthreads();
	/* query term order: the order of the float additions */
	for (uint32_t j = 0; j < nt; j++)
	{
		const gpuir_cuda_term term = qt[j];
		uint32_t	first;

		if (term.nblocks == 0)
			continue;
		first = gpuir_term_first(seg, term, j, lo, hi, sm);
		if (!gpuir_tile_term<GPUIR_PASS_OR>(seg, sc, term, first, lo, hi, sm))
			return -1;
	}
	__syncthreads();
	return 1;
}

/*
 * gpuir_bmw_refresh: BMW's live sub-ranges against the query's current
 * threshold *thr: thread t's sub-range (bound ub, liveness mine) dies when
 * ub * GPUIR_BOUND_SLACK is strictly below the threshold, and stays dead
 * (the threshold never falls).  Publishes the bitmap in sm.alive; returns
 * whether any sub-range is alive.  Block-wide, with barriers before (every
 * thread is done reading sm.alive) and after (the bitmap is visible).
 */
__device__ static bool
gpuir_bmw_refresh(double ub, bool &mine, const uint32_t *thr, GpuirTileSmem &sm)
{
	const float th = gpuir_threshold_read(thr);
	unsigned	bits;

	__syncthreads();
	if (mine && ub * GPUIR_BOUND_SLACK_DEV < (double) th)
		mine = false;
	bits = __ballot_sync(0xFFFFFFFFu, mine);
	if ((threadIdx.x & 31) == 0)
		sm.alive[threadIdx.x >> 5] = bits;
	return __syncthreads_or(mine) != 0;
}

/*
 * gpuir_tile_bmw: the OR scores of the tile with block-max pruning (see the
 * file header): thread t bounds sub-range t (docIDs lo + 64 t .., at most
 * two blocks per list, binary search from the list's first block in the
 * tile), then the terms are scored in query order, decoding only blocks
 * that overlap a live sub-range, and the documents of sub-ranges dead at
 * the end are cleared from sm.cur.  1 when some sub-range survived (sm.cur,
 * sm.acc; sm.cur may be empty), 0 when no list reaches the tile or every
 * sub-range was pruned, -1 corrupt.  stats (debug, may be NULL) counts
 * pruned tiles and sub-ranges.
 */
__device__ static int
gpuir_tile_bmw(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
			   const gpuir_cuda_term *qt, uint32_t nt, uint32_t lo, uint32_t hi,
			   const uint32_t *thr, GpuirSearchDevStats *stats, GpuirTileSmem &sm)
{
	const uint32_t slo = lo + threadIdx.x * (uint32_t) GPUIR_BMW_SUB_DOCS;
	const uint32_t shi = (slo < hi && hi - slo > GPUIR_BMW_SUB_DOCS)
		? slo + GPUIR_BMW_SUB_DOCS : hi;
	double		ub = 0.0;
	bool		mine = (slo < hi);

	if (!gpuir_tile_scan_terms(seg, qt, nt, lo, hi, false, sm))
		return 0;
	for (uint32_t j = 0; mine && j < nt; j++)
	{
		const gpuir_cuda_term term = qt[j];
		const uint32_t fb = term.first_block;
		const uint32_t end = fb + term.nblocks;
		uint32_t	first,
					b;
		double		m = 0.0;

		if (term.nblocks == 0)
			continue;
		first = gpuir_term_first(seg, term, j, lo, hi, sm);
		if (first >= end)
			continue;
		for (b = gpuir_first_block(seg.block_last, first, end, slo, shi); b < end; b++)
		{
			if (b > fb && seg.block_last[b - 1] >= shi - 1)
				break;			/* this block and the next start at or after shi */
			m = fmax(m, gpuir_block_bound(seg, sc, term.idf, b));
		}
		ub += m;
	}
	if (!gpuir_bmw_refresh(ub, mine, thr, sm))
	{
		if (stats != NULL && threadIdx.x == 0)
			atomicAdd(&stats->tiles_pruned, 1ull);
		return 0;
	}
	for (uint32_t i = threadIdx.x; i < GPUIR_TILE_DOCS; i += GPUIR_SEARCH_THREADS)
		sm.acc[i] = 0.0f;
	for (uint32_t w = threadIdx.x; w < GPUIR_TILE_WORDS; w += GPUIR_SEARCH_THREADS)
		sm.cur[w] = 0;
	__syncthreads();
	/* query term order: the order of the float additions */
	for (uint32_t j = 0; j < nt; j++)
	{
		const gpuir_cuda_term term = qt[j];
		uint32_t	first;
		bool		any;

		if (term.nblocks == 0)
			continue;
		first = gpuir_term_first(seg, term, j, lo, hi, sm);
		if (!gpuir_tile_term<GPUIR_PASS_BMW>(seg, sc, term, first, lo, hi, sm))
			return -1;
		any = gpuir_bmw_refresh(ub, mine, thr, sm);
		if (!any)
			break;
	}
	{
		const uint32_t dead = __syncthreads_count(slo < hi && !mine);

		if (stats != NULL && threadIdx.x == 0 && dead > 0)
			atomicAdd(&stats->subranges_pruned, (unsigned long long) dead);
	}
	/* drop the documents of dead sub-ranges (partial scores, or none) */
	for (uint32_t w = threadIdx.x; w < GPUIR_TILE_WORDS; w += GPUIR_SEARCH_THREADS)
	{
		const uint32_t sub = w * 32 / GPUIR_BMW_SUB_DOCS;

		if (!((sm.alive[sub >> 5] >> (sub & 31)) & 1))
			sm.cur[w] = 0;
	}
	__syncthreads();
	return 1;
}

/*
 * gpuir_tile_and: Parallel Merge Find over the tile, then scoring of the
 * survivors in query term order; 1 when some document holds every term
 * (sm.cur, sm.acc), 0 when none, -1 corrupt.  order[0 .. nt) is the
 * query's term indexes from the shortest list to the longest.
 */
__device__ static int
gpuir_tile_and(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
			   const gpuir_cuda_term *qt, const uint32_t *order, uint32_t nt,
			   uint32_t lo, uint32_t hi, GpuirTileSmem &sm)
{
	if (!gpuir_tile_scan_terms(seg, qt, nt, lo, hi, true, sm))
		return 0;
	for (uint32_t w = threadIdx.x; w < GPUIR_TILE_WORDS; w += GPUIR_SEARCH_THREADS)
		sm.nxt[w] = 0;
	__syncthreads();
	for (uint32_t jj = 0; jj < nt; jj++)
	{
		const uint32_t j = order[jj];
		const gpuir_cuda_term term = qt[j];
		const uint32_t first = gpuir_term_first(seg, term, j, lo, hi, sm);
		bool		ok,
					any = false;

		if (jj == 0)
			ok = gpuir_tile_term<GPUIR_PASS_FIRST>(seg, sc, term, first, lo, hi, sm);
		else
			ok = gpuir_tile_term<GPUIR_PASS_FILTER>(seg, sc, term, first, lo, hi, sm);
		if (!ok)
			return -1;
		__syncthreads();
		for (uint32_t w = threadIdx.x; w < GPUIR_TILE_WORDS; w += GPUIR_SEARCH_THREADS)
		{
			uint32_t	v = sm.nxt[w];

			sm.cur[w] = v;
			sm.nxt[w] = 0;
			any |= (v != 0);
		}
		if (!__syncthreads_or(any))
			return 0;			/* intersection empty in this tile */
	}
	for (uint32_t i = threadIdx.x; i < GPUIR_TILE_DOCS; i += GPUIR_SEARCH_THREADS)
		sm.acc[i] = 0.0f;
	__syncthreads();
	for (uint32_t j = 0; j < nt; j++)
	{
		const gpuir_cuda_term term = qt[j];
		const uint32_t first = gpuir_term_first(seg, term, j, lo, hi, sm);

		if (!gpuir_tile_term<GPUIR_PASS_SCORE>(seg, sc, term, first, lo, hi, sm))
			return -1;
	}
	__syncthreads();
	return 1;
}

/* ---------- kernels ---------- */

/*
 * gpuir_search_check_kernel: one thread block per list used by the batch
 * (terms[ref[blockIdx.x]]): the directory checks of the CPU engine's
 * cursor_open (last docIDs increasing and below ndocs) and the block
 * extents (inside the payload, 8 .. GPUIR_BLOCK_MAX_BYTES bytes).  Sets
 * *corrupt on failure; the tile kernel then does nothing.
 */
__global__ void
gpuir_search_check_kernel(gpuir_cuda_segment seg, const gpuir_cuda_term *__restrict__ terms,
						  const uint32_t *__restrict__ ref, uint32_t *corrupt)
{
	const gpuir_cuda_term term = terms[ref[blockIdx.x]];
	const uint32_t end = term.first_block + term.nblocks;
	bool		bad = false;

	for (uint32_t b = term.first_block + threadIdx.x; b < end; b += blockDim.x)
	{
		uint32_t	last = seg.block_last[b];
		uint32_t	off = seg.block_offset[b];
		uint32_t	next = seg.block_offset[b + 1];

		if (last >= seg.ndocs || (b > term.first_block && last <= seg.block_last[b - 1]) ||
			next < off || next > seg.payload_bytes || next - off < GPUIR_DECODE_HEADER ||
			next - off > GPUIR_BLOCK_MAX_BYTES_DEV)
			bad = true;
	}
	if (bad)
		atomicOr(corrupt, 1u);
}

/*
 * gpuir_search_bound_kernel: BMW step 1, grid of nwork * ntiles thread
 * blocks of 128 threads; block x bounds tile x % ntiles for query work[x /
 * ntiles] (nothing for other modes): tile_ub[bmw * ntiles + tile] = the sum
 * over the query's terms of the largest block-max bound of the term's
 * blocks overlapping the tile, times GPUIR_BOUND_SLACK, rounded up to
 * float (so no document of the tile scores above it).  One warp per term.
 */
__global__ void __launch_bounds__(GPUIR_SEARCH_THREADS)
gpuir_search_bound_kernel(gpuir_cuda_segment seg, gpuir_cuda_scoring sc,
						  const GpuirSearchWork *__restrict__ work, uint32_t ntiles,
						  const gpuir_cuda_term *__restrict__ terms, float *tile_ub,
						  const uint32_t *corrupt)
{
	__shared__ double wsum[GPUIR_SEARCH_THREADS / 32];
	const uint32_t wi = blockIdx.x / ntiles;
	const uint32_t tile = blockIdx.x % ntiles;
	const GpuirSearchWork qw = work[wi];
	const uint32_t lo = tile * (uint32_t) GPUIR_TILE_DOCS;
	const uint32_t hi = (uint32_t) min((uint64_t) lo + GPUIR_TILE_DOCS, (uint64_t) seg.ndocs);
	const gpuir_cuda_term *qt = terms + qw.first_term;
	const uint32_t warp = threadIdx.x >> 5;
	const uint32_t lane = threadIdx.x & 31;
	double		sum = 0.0;

	if (qw.mode != GPUIR_CUDA_MODE_BMW)
		return;
	if (*(const volatile uint32_t *) corrupt)
		return;					/* a list failed the check kernel */
	for (uint32_t j = warp; j < qw.nterms; j += GPUIR_SEARCH_THREADS / 32)
	{
		const gpuir_cuda_term term = qt[j];
		const uint32_t fb = term.first_block;
		const uint32_t end = fb + term.nblocks;
		uint32_t	first = end;
		double		m = 0.0;

		if (term.nblocks > 0)
			first = gpuir_first_block(seg.block_last, fb, end, lo, hi);
		for (uint32_t b = first + lane; b < end; b += 32)
		{
			if (b > fb && seg.block_last[b - 1] >= hi - 1)
				break;			/* this block and the next start at or after hi */
			m = fmax(m, gpuir_block_bound(seg, sc, term.idf, b));
		}
		for (int o = 16; o > 0; o >>= 1)
			m = fmax(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
		sum += m;
	}
	if (lane == 0)
		wsum[warp] = sum;
	__syncthreads();
	if (threadIdx.x == 0)
	{
		double		total = 0.0;
		float		f;

		for (int w = 0; w < GPUIR_SEARCH_THREADS / 32; w++)
			total += wsum[w];
		f = __double2float_ru(total * GPUIR_BOUND_SLACK_DEV);
		tile_ub[(size_t) qw.bmw * ntiles + tile] = isnan(f) ? INFINITY : f;
	}
}

/*
 * gpuir_search_order_kernel: BMW step 2, one thread block of 256 threads per
 * query of the chunk (nothing for other modes): tile_order[bmw * ntiles +
 * r] = the tile of rank r, by tile_ub descending (ties by tile ascending):
 * all tiles when ntiles <= 2048, else the 2048 best sorted (radix select on
 * the key (bound, ~tile), then cub::BlockRadixSort) and the others after
 * them in no particular order.  The order affects speed only, never the
 * result.
 */
__global__ void __launch_bounds__(GPUIR_ORDER_THREADS)
gpuir_search_order_kernel(const GpuirSearchWork *__restrict__ work, uint32_t ntiles,
						  const float *__restrict__ tile_ub, uint32_t *__restrict__ tile_order,
						  const uint32_t *corrupt)
{
	typedef cub::BlockRadixSort<uint64_t, GPUIR_ORDER_THREADS, GPUIR_ORDER_ITEMS> BlockSort;
	const uint32_t CAP = GPUIR_ORDER_THREADS * GPUIR_ORDER_ITEMS;
	__shared__ union
	{
		GpuirSelectTempStorage<GPUIR_ORDER_THREADS> sel;
		uint64_t	keys[GPUIR_ORDER_THREADS * GPUIR_ORDER_ITEMS];
		typename BlockSort::TempStorage sort;
	}			sm;
	__shared__ uint32_t pos,
				rest;
	const GpuirSearchWork qw = work[blockIdx.x];
	const float *ub = tile_ub + (size_t) qw.bmw * ntiles;
	uint32_t   *ord = tile_order + (size_t) qw.bmw * ntiles;
	const int	t = threadIdx.x;
	const uint32_t take = min(ntiles, CAP);
	auto		key_of = [&](uint64_t i) -> uint64_t {
		return ((uint64_t) gpuir_score_key(ub[i]) << 32) | (uint64_t) (~(uint32_t) i);
	};
	uint64_t	thr = 1;
	uint64_t	keys[GPUIR_ORDER_ITEMS];

	if (qw.mode != GPUIR_CUDA_MODE_BMW)
		return;
	if (*(const volatile uint32_t *) corrupt)
		return;
	if (ntiles > CAP)
		thr = gpuir_block_select<GPUIR_ORDER_THREADS>(key_of, ntiles, CAP, sm.sel);
	for (uint32_t i = t; i < CAP; i += GPUIR_ORDER_THREADS)
		sm.keys[i] = 0;
	if (t == 0)
	{
		pos = 0;
		rest = 0;
	}
	__syncthreads();
	for (uint32_t base = 0; base < ntiles; base += GPUIR_ORDER_THREADS)
	{
		const uint32_t i = base + t;
		const uint64_t key = (i < ntiles) ? key_of(i) : 0;
		const bool	in = (key != 0 && key >= thr);
		const uint32_t slot = gpuir_warp_slot(&pos, in);
		const uint32_t rslot = gpuir_warp_slot(&rest, key != 0 && !in);

		if (in && slot < take)
			sm.keys[slot] = key;
		if (key != 0 && !in && take + rslot < ntiles)
			ord[take + rslot] = i;
	}
	__syncthreads();
	for (int r = 0; r < GPUIR_ORDER_ITEMS; r++)
		keys[r] = sm.keys[t * GPUIR_ORDER_ITEMS + r];
	__syncthreads();
	BlockSort(sm.sort).SortDescending(keys);
	for (int r = 0; r < GPUIR_ORDER_ITEMS; r++)
	{
		const uint32_t rank = t * GPUIR_ORDER_ITEMS + r;

		if (rank < take)
			ord[rank] = ~(uint32_t) keys[r];
	}
}

/*
 * gpuir_search_tile_kernel: grid of nw * ntiles thread blocks of 128
 * threads; block x handles query wi = x / ntiles on tile x % ntiles, or,
 * when rank_major, query wi = x % nw on its tile of rank x / nw (the tile
 * itself for AND and OR, tile_order[bmw * ntiles + rank] for BMW): scores
 * the tile (AND, OR or BMW), drops deleted docIDs and appends the tile's
 * min(k, matched) best result keys to the query's candidate region
 * cand[cand_off ..], counting them in cand_count[wi].  BMW reads and raises
 * the query's threshold thr[wi] and skips a tile whose tile_ub is below
 * it.  stats (debug, may be NULL) accumulates decoded blocks and pruning.
 */
__global__ void __launch_bounds__(GPUIR_SEARCH_THREADS)
gpuir_search_tile_kernel(gpuir_cuda_segment seg, gpuir_cuda_scoring sc,
						 const GpuirSearchWork *__restrict__ work, uint32_t nw, uint32_t ntiles,
						 bool rank_major, const gpuir_cuda_term *__restrict__ terms,
						 const uint32_t *__restrict__ order,
						 const float *__restrict__ tile_ub,
						 const uint32_t *__restrict__ tile_order, uint32_t *bmw_thr,
						 uint64_t *__restrict__ cand, uint32_t *__restrict__ cand_count,
						 uint32_t *corrupt, GpuirSearchDevStats *stats)
{
	__shared__ GpuirTileSmem sm;
	const uint32_t wi = rank_major ? blockIdx.x % nw : blockIdx.x / ntiles;
	const uint32_t rank = rank_major ? blockIdx.x / nw : blockIdx.x % ntiles;
	const GpuirSearchWork qw = work[wi];
	const bool	bmw = (qw.mode == GPUIR_CUDA_MODE_BMW);
	const uint32_t tile = bmw ? tile_order[(size_t) qw.bmw * ntiles + rank] : rank;
	const uint32_t lo = tile * (uint32_t) GPUIR_TILE_DOCS;
	const uint32_t hi = (uint32_t) min((uint64_t) lo + GPUIR_TILE_DOCS, (uint64_t) seg.ndocs);
	const gpuir_cuda_term *qt = terms + qw.first_term;
	const int	t = threadIdx.x;
	uint32_t	cnt = 0;
	uint32_t	take;
	uint64_t	thr = 1;
	int			r;

	if (*(volatile uint32_t *) corrupt)
		return;					/* a list failed the check kernel */
	if (bmw)
	{
		/* the whole tile bounded below the threshold: thread 0's read decides */
		if (t == 0)
			sm.total = (tile_ub[(size_t) qw.bmw * ntiles + tile] <
						gpuir_threshold_read(&bmw_thr[wi]));
		__syncthreads();
		if (sm.total)
		{
			if (stats != NULL && t == 0)
				atomicAdd(&stats->tiles_pruned, 1ull);
			return;
		}
		__syncthreads();
	}
	if (t == 0)
	{
		sm.total = 0;
		sm.pos = 0;
		sm.ndec = 0;
		sm.kmin = ~0ull;
	}
	if (qw.mode == GPUIR_CUDA_MODE_AND)
		r = gpuir_tile_and(seg, sc, qt, order + qw.order_off, qw.nterms, lo, hi, sm);
	else if (bmw)
		r = gpuir_tile_bmw(seg, sc, qt, qw.nterms, lo, hi, &bmw_thr[wi], stats, sm);
	else
		r = gpuir_tile_or(seg, sc, qt, qw.nterms, lo, hi, sm);
	if (stats != NULL && t == 0 && r >= 0 && sm.ndec > 0)
		atomicAdd(&stats->blocks_decoded, (unsigned long long) sm.ndec);
	if (r < 0)
	{
		if (t == 0)
			atomicOr(corrupt, 1u);
		return;
	}
	if (r == 0)
		return;

	/* drop deleted docIDs from the match bitmap and count what is left */
	for (uint32_t w = t; w < GPUIR_TILE_WORDS; w += GPUIR_SEARCH_THREADS)
	{
		uint32_t	v = sm.cur[w];

		if (v != 0 && seg.deleted != NULL)
		{
			const uint64_t byte0 = ((uint64_t) lo + 32 * w) >> 3;
			const uint64_t nbytes = ((uint64_t) seg.ndocs + 7) >> 3;
			uint32_t	del = 0;

			for (int j = 0; j < 4; j++)
				if (byte0 + j < nbytes)
					del |= (uint32_t) seg.deleted[byte0 + j] << (8 * j);
			v &= ~del;
			sm.cur[w] = v;
		}
		cnt += __popc(v);
	}
	for (int s = 16; s > 0; s >>= 1)
		cnt += __shfl_down_sync(0xFFFFFFFFu, cnt, s);
	if ((t & 31) == 0 && cnt > 0)
		atomicAdd(&sm.total, cnt);
	__syncthreads();
	if (sm.total == 0)
		return;
	take = min(sm.total, qw.k);

	/* the tile's k best (score desc, docID asc): radix select on the key */
	{
		auto		key_of = [&](uint64_t i) -> uint64_t {
			const uint32_t ii = (uint32_t) i;

			return ((sm.cur[ii >> 5] >> (ii & 31)) & 1)
				? gpuir_result_key(sm.acc[ii], lo + ii) : 0;
		};

		if (sm.total > qw.k)
			thr = gpuir_block_select<GPUIR_SEARCH_THREADS>(key_of, GPUIR_TILE_DOCS, qw.k,
															 sm.u.sel);
		if (t == 0)
		{
			uint32_t	base = atomicAdd(&cand_count[wi], take);

			if ((uint64_t) base + take > qw.cand_cap)
			{
				atomicOr(corrupt, 1u);	/* more matches than postings */
				base = UINT32_MAX;
			}
			sm.base = base;
		}
		__syncthreads();
		if (sm.base == UINT32_MAX)
			return;
		{
			unsigned long long kmin = ~0ull;

			for (uint32_t i = t; i < GPUIR_TILE_DOCS; i += GPUIR_SEARCH_THREADS)
			{
				const uint64_t key = key_of(i);
				const bool	in = (key != 0 && key >= thr);
				const uint32_t slot = gpuir_warp_slot(&sm.pos, in);

				if (in && slot < take)
				{
					cand[qw.cand_off + sm.base + slot] = key;
					kmin = min(kmin, (unsigned long long) key);
				}
			}
			/*
			 * BMW: k non-deleted, fully scored documents of the tile score at
			 * least its k-th best, so that score bounds the query's k-th best
			 * from below: publish it as the threshold.
			 */
			if (bmw && sm.total >= qw.k)
			{
				if (kmin != ~0ull)
					atomicMin(&sm.kmin, kmin);
				__syncthreads();
				if (t == 0)
					gpuir_threshold_raise(&bmw_thr[wi], gpuir_key_to_score(sm.kmin));
			}
		}
	}
}

/*
 * gpuir_search_final_kernel: one thread block of 256 threads per query of
 * the chunk: the k best of the query's candidate keys (radix select), sorted
 * descending (cub::BlockRadixSort), written to row qindex of the outputs
 * with the count.
 */
__global__ void __launch_bounds__(GPUIR_FINAL_THREADS)
gpuir_search_final_kernel(const GpuirSearchWork *__restrict__ work,
						  const uint64_t *__restrict__ cand,
						  const uint32_t *__restrict__ cand_count, uint32_t kmax,
						  uint32_t *__restrict__ out_docids, float *__restrict__ out_scores,
						  uint32_t *__restrict__ out_counts)
{
	typedef cub::BlockRadixSort<uint64_t, GPUIR_FINAL_THREADS, GPUIR_FINAL_ITEMS> BlockSort;
	__shared__ union
	{
		GpuirSelectTempStorage<GPUIR_FINAL_THREADS> sel;
		uint64_t	keys[GPUIR_FINAL_THREADS * GPUIR_FINAL_ITEMS];
		typename BlockSort::TempStorage sort;
	}			sm;
	__shared__ uint32_t pos;
	const GpuirSearchWork qw = work[blockIdx.x];
	const uint64_t n = min((uint64_t) cand_count[blockIdx.x], qw.cand_cap);
	const uint64_t *qc = cand + qw.cand_off;
	const uint32_t take = (uint32_t) min(n, (uint64_t) qw.k);
	const size_t row = (size_t) qw.qindex * kmax;
	const int	t = threadIdx.x;
	uint64_t	thr = 1;
	uint64_t	keys[GPUIR_FINAL_ITEMS];

	if (n > qw.k)
		thr = gpuir_block_select<GPUIR_FINAL_THREADS>([&](uint64_t i) -> uint64_t {
			return qc[i];
		}, n, qw.k, sm.sel);
	for (int i = t; i < GPUIR_FINAL_THREADS * GPUIR_FINAL_ITEMS; i += GPUIR_FINAL_THREADS)
		sm.keys[i] = 0;
	if (t == 0)
		pos = 0;
	__syncthreads();
	for (uint64_t base = 0; base < n; base += GPUIR_FINAL_THREADS)
	{
		const uint64_t i = base + t;
		const uint64_t key = (i < n) ? qc[i] : 0;
		const bool	in = (key != 0 && key >= thr);
		const uint32_t slot = gpuir_warp_slot(&pos, in);

		if (in && slot < take)
			sm.keys[slot] = key;
	}
	__syncthreads();
	for (int r = 0; r < GPUIR_FINAL_ITEMS; r++)
		keys[r] = sm.keys[t * GPUIR_FINAL_ITEMS + r];
	__syncthreads();
	BlockSort(sm.sort).SortDescending(keys);
	for (int r = 0; r < GPUIR_FINAL_ITEMS; r++)
	{
		const uint32_t rank = t * GPUIR_FINAL_ITEMS + r;

		if (rank < take)
		{
			out_docids[row + rank] = gpuir_key_docid(keys[r]);
			out_scores[row + rank] = gpuir_key_to_score(keys[r]);
		}
	}
	if (t == 0)
		out_counts[qw.qindex] = take;
}

/* ---------- host side ---------- */

/* drop the error of a best-effort cleanup call, keeping the recorded detail */
static void
ignore_error(cudaError_t err)
{
	if (err != cudaSuccess)
		(void) cudaGetLastError();
}

/* cudaMalloc + synchronous copy of bytes (NULL src: nothing allocated) */
static gpuir_cuda_status
upload_array(const void *src, size_t bytes, const void **dst)
{
	void	   *p = NULL;
	gpuir_cuda_status st;

	*dst = NULL;
	if (src == NULL)
		return GPUIR_CUDA_OK;
	st = gpuir_cuda_check(cudaMalloc(&p, bytes > 0 ? bytes : 4));
	if (st != GPUIR_CUDA_OK)
		return st;
	if (bytes > 0)
	{
		st = gpuir_cuda_check(cudaMemcpy(p, src, bytes, cudaMemcpyHostToDevice));
		if (st != GPUIR_CUDA_OK)
		{
			ignore_error(cudaFree(p));
			return st;
		}
	}
	*dst = p;
	return GPUIR_CUDA_OK;
}

/*
 * gpuir_cuda_segment_upload: validate, then one cudaMalloc and copy per
 * array; contract in gpuir_cuda.h.
 */
extern "C" gpuir_cuda_status
gpuir_cuda_segment_upload(const uint8_t *payload, uint64_t payload_bytes,
						  const uint32_t *block_last, const uint32_t *block_offset,
						  const uint32_t *impact_tf, const uint32_t *impact_dl,
						  uint32_t nblocks, const uint32_t *doclen, const uint8_t *deleted,
						  uint32_t ndocs, gpuir_cuda_segment *dev)
{
	gpuir_cuda_segment s;
	gpuir_cuda_status st;
	const size_t nb = nblocks;
	const size_t nimp = nb * GPUIR_CUDA_BLOCK_IMPACTS;
	static const uint32_t zero_offset = 0;

	if (dev == NULL)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	memset(dev, 0, sizeof(*dev));
	if ((payload == NULL && payload_bytes > 0) || payload_bytes > UINT32_MAX ||
		(nblocks > 0 && (payload == NULL || block_last == NULL || block_offset == NULL)) ||
		((impact_tf == NULL) != (impact_dl == NULL)) ||
		(ndocs > 0 && doclen == NULL) || ndocs > 0xFFFFFFFEu)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	if (block_offset != NULL)
	{
		for (uint32_t b = 0; b < nblocks; b++)
			if (block_offset[b] > block_offset[b + 1])
				return GPUIR_CUDA_CORRUPT;
		if (block_offset[nblocks] != payload_bytes)
			return GPUIR_CUDA_CORRUPT;
	}
	else if (payload_bytes != 0)
		return GPUIR_CUDA_CORRUPT;

	memset(&s, 0, sizeof(s));
	s.payload_bytes = payload_bytes;
	s.ndocs = ndocs;
	s.nblocks = nblocks;
	{
		const void *p;

		if ((st = upload_array(payload ? payload : (const void *) &zero_offset,
							   payload_bytes, &p)) != GPUIR_CUDA_OK)
			goto fail;
		s.payload = (const uint8_t *) p;
		if ((st = upload_array(block_last ? (const void *) block_last : &zero_offset,
							   nb * sizeof(uint32_t), &p)) != GPUIR_CUDA_OK)
			goto fail;
		s.block_last = (const uint32_t *) p;
		if ((st = upload_array(block_offset ? block_offset : &zero_offset,
							   (nb + 1) * sizeof(uint32_t), &p)) != GPUIR_CUDA_OK)
			goto fail;
		s.block_offset = (const uint32_t *) p;
		if ((st = upload_array(impact_tf, nimp * sizeof(uint32_t), &p)) != GPUIR_CUDA_OK)
			goto fail;
		s.impact_tf = (const uint32_t *) p;
		if ((st = upload_array(impact_dl, nimp * sizeof(uint32_t), &p)) != GPUIR_CUDA_OK)
			goto fail;
		s.impact_dl = (const uint32_t *) p;
		if ((st = upload_array(doclen ? (const void *) doclen : &zero_offset,
							   (size_t) ndocs * sizeof(uint32_t), &p)) != GPUIR_CUDA_OK)
			goto fail;
		s.doclen = (const uint32_t *) p;
		if ((st = upload_array(deleted, ((size_t) ndocs + 7) / 8, &p)) != GPUIR_CUDA_OK)
			goto fail;
		s.deleted = (const uint8_t *) p;
	}
	*dev = s;
	return GPUIR_CUDA_OK;

fail:
	(void) gpuir_cuda_segment_free(&s);
	return st;
}

/* gpuir_cuda_segment_free: contract in gpuir_cuda.h */
extern "C" gpuir_cuda_status
gpuir_cuda_segment_free(gpuir_cuda_segment *dev)
{
	gpuir_cuda_status st = GPUIR_CUDA_OK;

	if (dev == NULL)
		return GPUIR_CUDA_OK;
	{
		const void *bufs[] = {dev->payload, dev->block_last, dev->block_offset,
							  dev->impact_tf, dev->impact_dl, dev->doclen, dev->deleted};

		for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
			if (bufs[i] != NULL)
			{
				gpuir_cuda_status s2 = gpuir_cuda_check(cudaFree((void *) bufs[i]));

				if (st == GPUIR_CUDA_OK)
					st = s2;
			}
	}
	memset(dev, 0, sizeof(*dev));
	return st;
}

/* round up to a multiple of 256 bytes (workspace sub-array alignment) */
static inline size_t
align256(size_t n)
{
	return (n + 255) & ~(size_t) 255;
}

/* is the term a valid reference into seg (absent, or a full block range)? */
static bool
term_valid(const gpuir_cuda_term *t, const gpuir_cuda_segment *seg)
{
	if (!std::isfinite(t->idf))
		return false;
	if (t->nblocks == 0)
		return t->npostings == 0;
	return t->first_block <= seg->nblocks && t->nblocks <= seg->nblocks - t->first_block &&
		t->npostings >= 1 &&
		(t->npostings - 1) / GPUIR_CUDA_BLOCK_SIZE + 1 == t->nblocks;
}

/*
 * search_batch: gpuir_cuda_search_batch with optional debug statistics
 * (stats may be NULL): validate, plan chunks, upload the query arrays, run
 * check / (BMW: bound / order) / tile / final kernels, copy back; contract
 * in gpuir_cuda.h.
 *
 * Candidate memory: a query gets a region of min(ntiles * k, bound) keys,
 * bound = its shortest list's postings (AND) or the sum of its lists'
 * postings (OR), which no tile output can exceed (every candidate is a
 * posting of a list).  Consecutive queries are grouped into chunks of at
 * most GPUIR_CAND_BUDGET keys (a larger query alone); each chunk is one
 * tile launch and one final launch, reusing the same candidate buffer.
 */
static gpuir_cuda_status
search_batch(const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc,
			 const gpuir_cuda_query *queries, uint32_t nqueries,
			 const gpuir_cuda_term *terms, uint32_t nterms, uint32_t kmax,
			 uint32_t *out_docids, float *out_scores, uint32_t *out_counts,
			 void *stream, gpuir_cuda_search_stats *stats)
{
	cudaStream_t s = (cudaStream_t) stream;
	const size_t nout = (size_t) nqueries * kmax;
	uint32_t	ntiles;
	GpuirSearchWork *work = NULL;
	uint32_t   *order = NULL;
	uint32_t   *ref = NULL;
	uint8_t    *used = NULL;
	uint32_t   *chunk_start = NULL;
	uint8_t    *host = NULL;
	uint8_t    *arena = NULL;
	uint32_t	nwork = 0,
				norder = 0,
				nref = 0,
				nchunks = 0,
				nbmw = 0;
	uint8_t    *chunk_bmw = NULL;
	uint64_t	chunk_keys = 0,
				max_chunk_keys = 0;
	size_t		o_work,
				o_terms,
				o_order,
				o_ref,
				o_count,
				o_corrupt,
				o_docids,
				o_scores,
				o_counts,
				o_thr,
				o_stats,
				o_tub,
				o_tord,
				o_cand,
				total;
	GpuirSearchDevStats hstats;
	uint32_t	corrupt = 0;
	gpuir_cuda_status st = GPUIR_CUDA_OK;

	/* ---- arguments ---- */
	if (stats != NULL)
		memset(stats, 0, sizeof(*stats));
	if (nqueries == 0)
		return GPUIR_CUDA_OK;
	if (seg == NULL || sc == NULL || queries == NULL || out_docids == NULL ||
		out_scores == NULL || out_counts == NULL || (terms == NULL && nterms > 0) ||
		kmax < 1 || kmax > GPUIR_CUDA_MAX_K)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	if (!(std::isfinite(sc->k1) && sc->k1 >= 0.0f && sc->b >= 0.0f && sc->b <= 1.0f &&
		  std::isfinite(sc->avgdl) && sc->avgdl > 0.0f))
		return GPUIR_CUDA_INVALID_ARGUMENT;
	if (seg->ndocs > 0xFFFFFFFEu || seg->payload_bytes > UINT32_MAX ||
		(seg->ndocs > 0 && seg->doclen == NULL) ||
		(seg->nblocks > 0 && (seg->payload == NULL || seg->block_last == NULL ||
							  seg->block_offset == NULL)))
		return GPUIR_CUDA_INVALID_ARGUMENT;
	for (uint32_t i = 0; i < nterms; i++)
		if (!term_valid(&terms[i], seg))
			return GPUIR_CUDA_INVALID_ARGUMENT;
	for (uint32_t q = 0; q < nqueries; q++)
	{
		const gpuir_cuda_query *qq = &queries[q];

		if (qq->k < 1 || qq->k > kmax || qq->first_term > nterms ||
			qq->nterms > nterms - qq->first_term ||
			(qq->mode != GPUIR_CUDA_MODE_AND && qq->mode != GPUIR_CUDA_MODE_OR &&
			 qq->mode != GPUIR_CUDA_MODE_BMW))
			return GPUIR_CUDA_INVALID_ARGUMENT;
	}
	ntiles = (uint32_t) (((uint64_t) seg->ndocs + GPUIR_TILE_DOCS - 1) / GPUIR_TILE_DOCS);

	/* ---- plan: active queries, AND orders, used lists, chunks ---- */
	work = (GpuirSearchWork *) malloc(sizeof(GpuirSearchWork) * nqueries);
	order = (uint32_t *) malloc(sizeof(uint32_t));	/* grown below */
	used = (uint8_t *) calloc(nterms + 1, 1);
	chunk_start = (uint32_t *) malloc(sizeof(uint32_t) * ((size_t) nqueries + 1));
	chunk_bmw = (uint8_t *) calloc((size_t) nqueries + 1, 1);
	if (work == NULL || order == NULL || used == NULL || chunk_start == NULL ||
		chunk_bmw == NULL)
	{
		st = GPUIR_CUDA_OOM;
		goto done;
	}
	{
		size_t		order_cap = 1;
		uint64_t	max_per_chunk = (uint64_t) INT32_MAX / (ntiles > 0 ? ntiles : 1);

		for (uint32_t q = 0; q < nqueries && ntiles > 0; q++)
		{
			const gpuir_cuda_query *qq = &queries[q];
			const gpuir_cuda_term *qt = terms + qq->first_term;
			const bool	and_mode = (qq->mode == GPUIR_CUDA_MODE_AND);
			bool		bmw_mode = (qq->mode == GPUIR_CUDA_MODE_BMW &&
									seg->impact_tf != NULL && seg->impact_dl != NULL);
			uint32_t	present = 0;
			uint64_t	sump = 0,
						minp = UINT64_MAX,
						cap;
			GpuirSearchWork *w;

			for (uint32_t j = 0; j < qq->nterms; j++)
			{
				if (qt[j].nblocks > 0)
					present++;
				sump += qt[j].npostings;
				minp = std::min(minp, (uint64_t) qt[j].npostings);
				if (qt[j].nblocks > 0 && !(qt[j].idf >= 0.0f))
					bmw_mode = false;	/* bounds assume idf >= 0: run OR */
			}
			if (qq->nterms == 0 || present == 0 || (and_mode && present < qq->nterms))
				continue;		/* no document can qualify: count 0 */
			cap = std::min((uint64_t) ntiles * qq->k, and_mode ? minp : sump);

			w = &work[nwork];
			w->qindex = q;
			w->first_term = qq->first_term;
			w->nterms = qq->nterms;
			w->k = qq->k;
			w->mode = and_mode ? GPUIR_CUDA_MODE_AND
				: (bmw_mode ? GPUIR_CUDA_MODE_BMW : GPUIR_CUDA_MODE_OR);
			w->order_off = 0;
			w->bmw = bmw_mode ? nbmw++ : GPUIR_NO_BMW;
			if (and_mode)
			{
				if ((size_t) norder + qq->nterms > order_cap)
				{
					size_t		ncap = std::max(order_cap * 2, (size_t) norder + qq->nterms);
					uint32_t   *n2 = (uint32_t *) realloc(order, ncap * sizeof(uint32_t));

					if (n2 == NULL)
					{
						st = GPUIR_CUDA_OOM;
						goto done;
					}
					order = n2;
					order_cap = ncap;
				}
				w->order_off = norder;
				for (uint32_t j = 0; j < qq->nterms; j++)
					order[norder + j] = j;
				std::stable_sort(order + norder, order + norder + qq->nterms,
								 [qt](uint32_t a, uint32_t b) {
									 return qt[a].npostings < qt[b].npostings;
								 });
				norder += qq->nterms;
			}
			for (uint32_t j = 0; j < qq->nterms; j++)
				if (qt[j].nblocks > 0)
					used[qq->first_term + j] = 1;

			/* chunking */
			if (nchunks == 0 || (chunk_keys + cap > GPUIR_CAND_BUDGET && chunk_keys > 0) ||
				nwork - chunk_start[nchunks - 1] >= max_per_chunk)
			{
				chunk_start[nchunks++] = nwork;
				chunk_keys = 0;
			}
			if (bmw_mode)
				chunk_bmw[nchunks - 1] = 1;
			w->cand_off = chunk_keys;
			w->cand_cap = cap;
			chunk_keys += cap;
			max_chunk_keys = std::max(max_chunk_keys, chunk_keys);
			nwork++;
		}
		chunk_start[nchunks] = nwork;
	}
	for (uint32_t i = 0; i < nterms; i++)
		nref += used[i];

	/* ---- workspace: one device arena, staged inputs in one host buffer ---- */
	o_work = 0;
	o_terms = align256(o_work + sizeof(GpuirSearchWork) * nwork);
	o_order = align256(o_terms + sizeof(gpuir_cuda_term) * nterms);
	o_ref = align256(o_order + sizeof(uint32_t) * norder);
	o_count = align256(o_ref + sizeof(uint32_t) * nref);	/* end of the staged inputs */
	o_corrupt = align256(o_count + sizeof(uint32_t) * nwork);
	o_docids = align256(o_corrupt + sizeof(uint32_t));
	o_scores = align256(o_docids + sizeof(uint32_t) * nout);
	o_counts = align256(o_scores + sizeof(float) * nout);
	o_thr = align256(o_counts + sizeof(uint32_t) * nqueries);
	o_stats = align256(o_thr + sizeof(uint32_t) * nwork);
	o_tub = align256(o_stats + sizeof(GpuirSearchDevStats));
	o_tord = align256(o_tub + sizeof(float) * (size_t) nbmw * ntiles);
	o_cand = align256(o_tord + sizeof(uint32_t) * (size_t) nbmw * ntiles);
	total = o_cand + sizeof(uint64_t) * max_chunk_keys;

	host = (uint8_t *) malloc(o_count > 0 ? o_count : 1);
	if (host == NULL)
	{
		st = GPUIR_CUDA_OOM;
		goto done;
	}
	memcpy(host + o_work, work, sizeof(GpuirSearchWork) * nwork);
	if (nterms > 0)
		memcpy(host + o_terms, terms, sizeof(gpuir_cuda_term) * nterms);
	if (norder > 0)
		memcpy(host + o_order, order, sizeof(uint32_t) * norder);
	ref = (uint32_t *) (host + o_ref);
	for (uint32_t i = 0, r = 0; i < nterms; i++)
		if (used[i])
			ref[r++] = i;

	if ((st = gpuir_cuda_check(cudaMalloc((void **) &arena, total))) != GPUIR_CUDA_OK)
		goto done;
	if ((o_count > 0 &&
		 (st = gpuir_cuda_check(cudaMemcpyAsync(arena, host, o_count, cudaMemcpyHostToDevice,
												s))) != GPUIR_CUDA_OK) ||
		(st = gpuir_cuda_check(cudaMemsetAsync(arena + o_count, 0, o_cand - o_count,
											   s))) != GPUIR_CUDA_OK)
		goto done;

	/* ---- kernels ---- */
	{
		const gpuir_cuda_segment dseg = *seg;
		const gpuir_cuda_scoring dsc = *sc;
		const GpuirSearchWork *d_work = (const GpuirSearchWork *) (arena + o_work);
		const gpuir_cuda_term *d_terms = (const gpuir_cuda_term *) (arena + o_terms);
		const uint32_t *d_order = (const uint32_t *) (arena + o_order);
		uint32_t   *d_count = (uint32_t *) (arena + o_count);
		uint32_t   *d_corrupt = (uint32_t *) (arena + o_corrupt);
		uint64_t   *d_cand = (uint64_t *) (arena + o_cand);
		uint32_t   *d_thr = (uint32_t *) (arena + o_thr);
		float	   *d_tub = (float *) (arena + o_tub);
		uint32_t   *d_tord = (uint32_t *) (arena + o_tord);
		GpuirSearchDevStats *d_stats = stats ? (GpuirSearchDevStats *) (arena + o_stats) : NULL;

		if (nref > 0)
		{
			gpuir_search_check_kernel<<<nref, 128, 0, s>>>(dseg, d_terms,
														   (const uint32_t *) (arena + o_ref),
														   d_corrupt);
			if ((st = gpuir_cuda_check(cudaGetLastError())) != GPUIR_CUDA_OK)
				goto done;
		}
		for (uint32_t c = 0; c < nchunks; c++)
		{
			const uint32_t w0 = chunk_start[c];
			const uint32_t nw = chunk_start[c + 1] - w0;

			if (chunk_bmw[c])
			{
				gpuir_search_bound_kernel<<<nw * ntiles, GPUIR_SEARCH_THREADS, 0, s>>>
					(dseg, dsc, d_work + w0, ntiles, d_terms, d_tub, d_corrupt);
				if ((st = gpuir_cuda_check(cudaGetLastError())) != GPUIR_CUDA_OK)
					goto done;
				gpuir_search_order_kernel<<<nw, GPUIR_ORDER_THREADS, 0, s>>>
					(d_work + w0, ntiles, d_tub, d_tord, d_corrupt);
				if ((st = gpuir_cuda_check(cudaGetLastError())) != GPUIR_CUDA_OK)
					goto done;
			}
			gpuir_search_tile_kernel<<<nw * ntiles, GPUIR_SEARCH_THREADS, 0, s>>>
				(dseg, dsc, d_work + w0, nw, ntiles, chunk_bmw[c] != 0, d_terms, d_order,
				 d_tub, d_tord, d_thr + w0, d_cand, d_count + w0, d_corrupt, d_stats);
			if ((st = gpuir_cuda_check(cudaGetLastError())) != GPUIR_CUDA_OK)
				goto done;
			gpuir_search_final_kernel<<<nw, GPUIR_FINAL_THREADS, 0, s>>>
				(d_work + w0, d_cand, d_count + w0, kmax,
				 (uint32_t *) (arena + o_docids), (float *) (arena + o_scores),
				 (uint32_t *) (arena + o_counts));
			if ((st = gpuir_cuda_check(cudaGetLastError())) != GPUIR_CUDA_OK)
				goto done;
		}
	}

	/* ---- results ---- */
	if ((st = gpuir_cuda_check(cudaMemcpyAsync(&corrupt, arena + o_corrupt, sizeof(uint32_t),
											   cudaMemcpyDeviceToHost, s))) != GPUIR_CUDA_OK ||
		(st = gpuir_cuda_check(cudaMemcpyAsync(out_docids, arena + o_docids,
											   sizeof(uint32_t) * nout,
											   cudaMemcpyDeviceToHost, s))) != GPUIR_CUDA_OK ||
		(st = gpuir_cuda_check(cudaMemcpyAsync(out_scores, arena + o_scores,
											   sizeof(float) * nout,
											   cudaMemcpyDeviceToHost, s))) != GPUIR_CUDA_OK ||
		(st = gpuir_cuda_check(cudaMemcpyAsync(out_counts, arena + o_counts,
											   sizeof(uint32_t) * nqueries,
											   cudaMemcpyDeviceToHost, s))) != GPUIR_CUDA_OK ||
		(stats != NULL &&
		 (st = gpuir_cuda_check(cudaMemcpyAsync(&hstats, arena + o_stats, sizeof(hstats),
												cudaMemcpyDeviceToHost, s))) != GPUIR_CUDA_OK) ||
		(st = gpuir_cuda_check(cudaStreamSynchronize(s))) != GPUIR_CUDA_OK)
		goto done;
	if (corrupt)
		st = GPUIR_CUDA_CORRUPT;
	if (stats != NULL)
	{
		stats->blocks_decoded = hstats.blocks_decoded;
		stats->tiles_pruned = hstats.tiles_pruned;
		stats->subranges_pruned = hstats.subranges_pruned;
		stats->bmw_queries = nbmw;
	}

done:
	if (arena != NULL)
	{
		gpuir_cuda_status st2;

		/* on an early failure wait for enqueued work before freeing */
		if (st != GPUIR_CUDA_OK && st != GPUIR_CUDA_CORRUPT)
			ignore_error(cudaStreamSynchronize(s));
		st2 = gpuir_cuda_check(cudaFree(arena));
		if (st == GPUIR_CUDA_OK)
			st = st2;
	}
	free(host);
	free(work);
	free(order);
	free(used);
	free(chunk_start);
	free(chunk_bmw);
	return st;
}

/* gpuir_cuda_search_batch: contract in gpuir_cuda.h */
extern "C" gpuir_cuda_status
gpuir_cuda_search_batch(const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc,
						const gpuir_cuda_query *queries, uint32_t nqueries,
						const gpuir_cuda_term *terms, uint32_t nterms, uint32_t kmax,
						uint32_t *out_docids, float *out_scores, uint32_t *out_counts,
						void *stream)
{
	return search_batch(seg, sc, queries, nqueries, terms, nterms, kmax, out_docids,
						out_scores, out_counts, stream, NULL);
}

/* gpuir_cuda_search_batch_debug: contract in gpuir_cuda.h */
extern "C" gpuir_cuda_status
gpuir_cuda_search_batch_debug(const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc,
							  const gpuir_cuda_query *queries, uint32_t nqueries,
							  const gpuir_cuda_term *terms, uint32_t nterms, uint32_t kmax,
							  uint32_t *out_docids, float *out_scores, uint32_t *out_counts,
							  void *stream, gpuir_cuda_search_stats *stats)
{
	return search_batch(seg, sc, queries, nqueries, terms, nterms, kmax, out_docids,
						out_scores, out_counts, stream, stats);
}
