/*-------------------------------------------------------------------------
 *
 * gpuir_search.cu
 *	  Batched exact top-k BM25 search over one resident segment on the GPU:
 *	  the kernels (decode, tile, partial and final top-k; the AND kernel is
 *	  in gpuir_search_and.cuh) and the host side of gpuir_cuda_search_batch
 *	  (contracts in gpuir_cuda.h): validation, the list checks, the plan of
 *	  chunks, the workspace and the launches.  The tile kernel's device
 *	  routines (OR and BMW over one tile) are in gpuir_search_tile.cuh,
 *	  segment residency in gpuir_segment.cu.
 *
 * Organisation by docID range (Ding, He, Yan, Suel, "Using Graphics
 * Processors for High Performance IR Query Processing", WWW 2009, section
 * 8.3; Stanfill, "Parallel Information Retrieval Algorithms", 1992:
 * parallel inverted files with score accumulators).  The docID space of
 * the segment is cut into tiles of GPUIR_TILE_DOCS docIDs.  One thread
 * block of 256 threads handles one (query, tile) pair and keeps, in shared
 * memory, a float accumulator and a match bit per docID of its tile, so no
 * per-query array of ndocs scores ever exists in global memory.  Only the
 * matched documents are visited: an accumulator is written first by the
 * document's first term (no clearing), and the tile's candidates and its
 * top-k selection walk the set bits of the match bitmap.  The blocks of a
 * list that overlap the tile are found by binary search on block_last and
 * decoded with gpuir_warp_decode_listed_block (section 6.2), the tile's eight
 * warps taking different blocks of the list at once; a block spanning
 * several tiles is decoded by each of them (at most one extra decode per
 * list and tile).
 *
 * Exactness (ARCHITECTURE.md decision 6).  A document's score must be the
 * float32 sum, in the query's term order starting from 0.0f, of
 * idf * (tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * (dl / avgdl))), as
 * GpuirBM25 and the CPU engine compute it.  The tile processes the query's
 * terms one after another in term order; within one term a docID occurs at
 * most once, so each accumulator is touched by one lane per term, and
 * terms are separated by barriers: every accumulator sees exactly the CPU's
 * sequence of float additions, the first of them to 0.0f.  The AND kernel
 * sums a survivor's contributions in one thread, in term order from 0.0f.
 * The formula is written with the _rn intrinsics so that no multiply-add
 * is contracted, whatever --fmad says.
 *
 * Document priors (Wang et al. 2017, eq. 3; src/README, "Document
 * priors").  In a segment uploaded with priors, a document's score is its
 * BM25 sum plus prior_weight * prior, the product rounded to float and
 * added once the sum is complete, as GpuirPriorScore and the CPU engine do
 * (gpuir_prior_add: in gpuir_tile_candidates, the AND kernel and the
 * MaxScore kernel, before any threshold test or result key).  Every upper
 * bound of a score adds the segment's gpuir_prior_bound: the tiles' bound
 * (gpuir_tile_bound_below) and the lists' bounds of the seed and MaxScore
 * kernels (the suffix sums start from it).  The seeds, lower bounds, need
 * nothing: a prior is never negative.
 *
 * OR: every list's overlapping blocks are decoded and scored; a document
 * matches when any list holds it (match bit).
 *
 * Decoded once per batch: a block of a sparse list spans many tiles (on 10
 * M documents, a list of 5,000 postings has a block every 256,000 docIDs,
 * 16 tiles), and every tile it overlaps would decode it and gather its
 * documents' lengths again (resampled Wikipedia at 10 M documents: 2.6
 * block decodes per block of the queries' lists).  So the lists of the
 * batch's OR and BMW queries are first decoded once
 * (gpuir_search_decode_kernel, one warp a block, every block checked),
 * each posting's contribution computed there, into a workspace area that
 * the tiles read with vector loads (GpuirDecoded, up to
 * GPUIR_CUDA_DECODE_BUDGET blocks a batch; the tiles decode the rest
 * themselves).  That area is the search job's and keeps the lists for its
 * later searches, which read those they find there rather than decode
 * them again (gpuir_decode_cache.cuh: a log's frequent lists repeat).
 * AND's lists are not there: its kernel decodes only the blocks that can
 * hold a candidate.
 *
 * BMW: the OR result with block-max pruning (Ding & Suel, "Faster top-k
 * document retrieval using block-max indexes", SIGIR 2011, on the GPU as
 * in Huang et al., "GPU-Accelerated Block-Max Query Processing", ICA3PP
 * 2017: docID-range partitions, block-max bounds, a shared threshold).
 * The bound of a posting block of a term is the larger BM25 of its two
 * impacts, in double (GpuirBM25Bound of src/gpuir.h), rounded up to float
 * when the decode kernel computes it; every bound sum is multiplied by
 * GPUIR_BOUND_SLACK before it is compared with float32 scores, as on the
 * CPU.  Each query keeps a threshold in global memory that is always a
 * lower bound of its final k-th best score: a tile that kept k non-deleted
 * fully scored documents publishes the k-th best score of its own
 * (atomicMax on the float's bits).  The tile kernel's grid runs
 * rank-major (tile r of every query before tile r + 1 of any), so that
 * every query's earlier tiles have raised its threshold before its later
 * ones start.  A tile sums, per term, the largest bound of the term's
 * blocks overlapping it (gpuir_tile_bound_below, one warp per term, from
 * the decoded blocks' bounds) and is skipped when that sum is strictly
 * below the threshold (a document scoring exactly the threshold may
 * still win by docID); the other tiles are scored as OR.  No document of
 * the true top-k is ever dropped: its score is at least the k-th best, so
 * at least every threshold, and at most its tile's bound.
 *	Measured and removed (bench/results/2026-11-26-h200-bmw.md): pruning
 *	inside a tile (64-docID sub-ranges bounded per thread, blocks of dead
 *	sub-ranges not read; with the lists decoded once per batch, reading a
 *	block costs less than bounding the sub-ranges: BMW at 0.47-0.75x OR),
 *	and a bound kernel and an order kernel that ran each query's tiles
 *	best bound first (a thread block per (query, tile) for the bounds, and
 *	tiles visited out of docID order: BMW at 0.70-0.72x OR, against
 *	0.88-1.01x with the bound in the tile and tiles in docID order).
 *	Since 2026-11-27 a BMW query's threshold is also seeded before its
 *	tiles from its lists' block maxima, and a query whose seed is above 0
 *	(or that has one term) is answered from its essential lists' blocks
 *	that can reach it instead of the tiles (MaxScore;
 *	gpuir_search_maxscore.cuh): BMW at 1.04-1.87x OR
 *	(bench/results/2026-11-27-h200-bmw-worklists.md); the tiles answer
 *	the rest.
 *	A query falls back to OR when the segment has no impacts or a term's
 *	idf is negative.  Corrupt blocks are detected among the blocks decoded
 *	(all blocks of a list decoded once per batch; else, like the CPU
 *	engine's BMW, those of the tiles not pruned); the directory is checked
 *	in full.
 *
 * AND: Parallel Merge Find (Ding et al. 2009, sections 7 and 8.1) driven by
 * the shortest list, not by tiles: gpuir_search_and_kernel gives each
 * block of a query's shortest list a thread block, which probes the longer
 * lists only in the blocks that can hold its candidates and appends its
 * best survivors' keys to the query's candidates (gpuir_search_and.cuh).
 * The work follows the shortest list's postings, not the docID space.
 *	Replaced (bench/results/2026-11-27-h200-and-probe.md): AND in the tile
 *	kernel, a thread block per (query, tile) with candidate bitmaps: on 40 M
 *	documents every query launched 2,442 thread blocks whatever its lists.
 *
 * Top-k (Ding et al. 2009, section 8.3, multi-level selection): every tile
 * (and every thread block of the AND kernel) drops deleted docIDs and
 * documents scoring below its query's threshold and keeps its k best
 * documents (block-wide radix select on the result key over the match
 * bitmap's set bits, gpuir_topk.cuh; over an AND thread block's survivors
 * only when more than k of them pass the threshold),
 * appending them to the query's candidate region; then one thread block
 * per query selects
 * the k best of its candidates and orders them (gpuir_final_query: one
 * pass behind a rising bound, then a rank by counting or
 * cub::BlockRadixSort), in the final kernel, or, for a chunk of tile
 * queries of a batch with kmax <= 256, no partial selection and few waves
 * of tiles (search_launch), in the tile kernel, by the thread block that
 * finished the query's last tile; it writes them straight into the pinned
 * host buffer when the batch's outputs are small (GpuirSearchLayout).  The
 * key orders by score descending, then docID
 * ascending, and is distinct per document, so ties are broken exactly as
 * on the CPU at both levels.  Every mode keeps the query's threshold in
 * global memory (see BMW): a tile (or AND thread block) that kept k
 * documents raises it to its k-th best score (and, for k >=
 * GPUIR_HIST_MIN_K, to a bound from a histogram of all the query's tiles'
 * candidates so far: gpuir_tile_hist_raise), and later ones emit only
 * documents at or above it (a
 * document below it cannot be in the top-k; one equal to it still can, by
 * docID).
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <new>
#include <utility>
#include <cmath>

#include <cub/block/block_radix_sort.cuh>

#include "gpuir_cuda_internal.cuh"
#include "gpuir_decode_cache.cuh"
#include "gpuir_search_tile.cuh"
#include "gpuir_topk.cuh"

#ifdef GPUIR_SEARCH_TRACE
#include "gpuir_search_trace.cuh"
#else
#define GPUIR_TRACE_START(nq, q, k)	((void) 0)
#define GPUIR_TRACE_HOST(stage)		((void) 0)
#define GPUIR_TRACE_EVENT(stage, s)	((void) 0)
#define GPUIR_TRACE_FINISH()		((void) 0)
#endif

#define GPUIR_FINAL_THREADS		256		/* final selection kernel */
#define GPUIR_FINAL_ITEMS		4		/* keys per thread in the final sort */
/*
 * candidate keys per chunk (1 GiB): chunks run one after another, each with
 * its own launches; at k = 1000 over the 2,442 tiles of 40 M documents a
 * query may need 2.4 M keys, and 256 MiB made chunks of 13 queries
 */
#define GPUIR_CAND_BUDGET		((uint64_t) 128 << 20)
#define GPUIR_PART_SLICES		32		/* partial selections of a query's candidates */
#define GPUIR_FAILED_INTERNAL	2u		/* in the corrupt word: a kernel's own check failed */
#define GPUIR_OUTPUT_DONE		(1u << 31)	/* in the status word: every selection wrote */

/*
 * The candidate-score histogram of a query with k >= GPUIR_HIST_MIN_K
 * (gpuir_tile_hist_raise): GPUIR_HIST_BUCKETS buckets over the
 * GPUIR_HIST_OCTAVES octaves below the query's score bound (plan_query's
 * hist_base: the float bits of bound / 2^GPUIR_HIST_OCTAVES), bucket b
 * holding the positive scores whose float bits less hist_base, >>
 * GPUIR_HIST_SHIFT, are b (the last also those above: 1/256 of an octave
 * each; the float order of positive scores is their bits' order, so a
 * bucket's lower edge is exact); scores below hist_base are not counted
 */
#define GPUIR_HIST_BUCKETS		2048
#define GPUIR_HIST_OCTAVES		8
#define GPUIR_HIST_SHIFT		15	/* 23 mantissa bits less log2(2048 / 8) */
#define GPUIR_HIST_MIN_K		GPUIR_CUDA_HIST_MIN_K	/* gpuir_cuda.h */

static_assert(GPUIR_HIST_BUCKETS << GPUIR_HIST_SHIFT == GPUIR_HIST_OCTAVES << 23,
			  "the buckets cover the octaves");

/*
 * Short candidate regions (plan_query): an OR query with k >=
 * GPUIR_HIST_MIN_K gets room for the k keys of GPUIR_SHORT_ROOM_TILES
 * tiles plus twice the tiles it runs at once (plan_short_tiles) rather
 * than for every tile's; the final selection (gpuir_final_query) writes
 * GPUIR_COUNT_SPILLED as the count of one whose tiles emitted more, and
 * search_finish searches it again with its full region.
 */
#define GPUIR_SHORT_ROOM_TILES	64
#define GPUIR_COUNT_SPILLED		UINT32_MAX

static_assert(GPUIR_FINAL_THREADS * GPUIR_FINAL_ITEMS >= GPUIR_CUDA_MAX_K,
			  "the final sort must hold k keys");

/*
 * plan_hist_query: does a query of mode and k get a score histogram
 * (GpuirSearchWork.hist_row; gpuir_tile_hist_raise): OR and BMW queries
 * with k >= GPUIR_HIST_MIN_K that the plan keeps (one with no list is
 * answered with no work; plan_short_tiles counts every such query, kept
 * or not, which can only make its short rooms smaller)
 */
static inline bool
plan_hist_query(int32_t mode, uint32_t k)
{
	return mode != GPUIR_CUDA_MODE_AND && k >= GPUIR_HIST_MIN_K;
}

/* one query of a chunk as the kernels see it */
struct GpuirSearchWork
{
	uint32_t	qindex;			/* row of the outputs */
	uint32_t	first_term;		/* its terms: terms[first_term ..] */
	uint32_t	nterms;
	uint32_t	k;
	uint32_t	mode;			/* GPUIR_CUDA_MODE_AND, _OR or _BMW */
	uint32_t	order_off;		/* AND: shortest-first order at order[order_off ..] */
	uint32_t	rem_off;		/* BMW: its nterms bound sums at rem[rem_off ..]
								 * (gpuir_search_seed_kernel; per query, since
								 * queries may share their terms' entries) */
	uint32_t	maxscore;		/* BMW: 1 when the MaxScore kernel may answer it
								 * (plan_query reserved its work entries and
								 * candidates), 0 when the tiles do */
	uint32_t	hist_row;		/* OR or BMW with k >= GPUIR_HIST_MIN_K: its row of
								 * the batch's histograms; else UINT32_MAX */
	uint32_t	hist_base;		/* its histogram's lowest score, as float bits */
	uint32_t	cand_short;		/* 1: cand_cap is a short region (plan_query),
								 * below what its tiles may emit: a count past
								 * it is a spill (the query is searched again
								 * with its full region), not corruption */
	uint64_t	cand_off;		/* its candidate region in the chunk's buffer: */
	uint64_t	cand_cap;		/* cand_cap keys, then (gpuir_part_needed(cand_cap,
								 * k)) GPUIR_PART_SLICES x k partial results */
};

/*
 * gpuir_part_needed: does a query with n candidate keys, k wanted, select
 * in two levels (gpuir_search_partial_kernel, then the final kernel over
 * GPUIR_PART_SLICES x k keys)?  Only when that cuts the final kernel's
 * keys by half or more: one thread block per query cannot go through a
 * million candidates (k = 1000 over a thousand tiles) quickly.  Monotone in
 * n, so the host's answer for a query's capacity covers the device's for
 * its count.  (From 2,048 keys rather than 16,384, one OR query at k = 10
 * over 40 M documents took 0.233 ms rather than 0.235 in one H200 run,
 * 2026-11-30, within that run's noise: not kept.)
 */
__host__ __device__ static inline bool
gpuir_part_needed(uint64_t n, uint32_t k)
{
	return n > (uint64_t) 2 * GPUIR_PART_SLICES * k && n > 16384;
}

/*
 * region_keys: the keys of a query's candidate region of capacity cap, k
 * wanted: cap, then room for the partial selections' results when it may
 * need them (GpuirSearchWork.cand_cap)
 */
static inline uint64_t
region_keys(uint64_t cap, uint32_t k)
{
	return cap + (gpuir_part_needed(cap, k) ? (uint64_t) GPUIR_PART_SLICES * k : 0);
}

/* the AND kernel and BMW's seed and MaxScore kernels (they read GpuirSearchWork) */
#include "gpuir_search_and.cuh"
#include "gpuir_search_maxscore.cuh"

/* ---------- kernels ---------- */

/*
 * gpuir_search_decode_kernel: decode once the lists of a batch that the
 * tiles of OR and BMW queries read and that the job's decoded area does
 * not hold yet (GpuirDecoded, gpuir_decode_cache.cuh): grid of
 * ceil(nblocks / 8) thread blocks of 256 threads, warp g decoding block
 * g - list_first[l] of list l (list_first[l] <= g < list_first[l + 1],
 * nlists + 1 entries) into decoded block list_dst[l] + g - list_first[l]
 * of the area, the list of terms[list_term[l]],
 * checked as the tiles check it (gpuir_tile_decode), each posting's BM25
 * contribution computed as the tiles compute it (gpuir_bm25), so that the
 * tiles' sums are the same float additions, and with bmw (the batch has
 * BMW queries, so the segment has impacts) its block-max bound and
 * largest live contribution (GpuirDecoded's ub and top; the bound is
 * +infinity for NaN).  A block outside the window of a windowed segment
 * is not decoded (no tile reads it): its docIDs are padding, its bound
 * and top 0.  A corrupt block sets *corrupt (the batch fails).  stats
 * (debug, may be NULL) counts blocks.
 */
__global__ void __launch_bounds__(GPUIR_SEARCH_THREADS)
gpuir_search_decode_kernel(gpuir_cuda_segment seg, gpuir_cuda_scoring sc,
						   const gpuir_cuda_term *__restrict__ terms,
						   const uint32_t *__restrict__ list_term,
						   const uint32_t *__restrict__ list_first,
						   const uint32_t *__restrict__ list_dst, uint32_t nlists,
						   uint4 *__restrict__ dec_doc, float4 *__restrict__ dec_score,
						   float *__restrict__ dec_ub, float *__restrict__ dec_top, bool bmw,
						   uint32_t *corrupt, GpuirSearchDevStats *stats)
{
	gpuir_pdl_start();
	/* each warp's decode scratch (gpuir_warp_decode_listed_block's patch) */
	__shared__ __align__(GPUIR_PATCH_ALIGN) uint32_t patch[GPUIR_SEARCH_WARPS][GPUIR_CUDA_BLOCK_SIZE];
	const uint32_t g = blockIdx.x * (GPUIR_SEARCH_THREADS / 32) + (threadIdx.x >> 5);
	const uint32_t lane = threadIdx.x & 31;
	uint32_t	l = 0,
				h = nlists,
				b,
				at,				/* the decoded block written */
				blo,
				wlo,
				whi;
	gpuir_cuda_term term;
	uint32_t	doc[GPUIR_DECODE_PER_LANE],
				tf[GPUIR_DECODE_PER_LANE];
	float		c[GPUIR_DECODE_PER_LANE];
	int			n;

	if (g >= list_first[nlists])
		return;
	/* the list: the last l with list_first[l] <= g */
	while (h - l > 1)
	{
		const uint32_t mid = l + (h - l) / 2;

		if (list_first[mid] <= g)
			l = mid;
		else
			h = mid;
	}
	term = terms[list_term[l]];
	b = term.first_block + (g - list_first[l]);
	at = list_dst[l] + (g - list_first[l]);
	wlo = gpuir_window_lo(seg);
	whi = gpuir_window_hi(seg);
	if (seg.windowed)
	{
		blo = (b > term.first_block) ? seg.block_last[b - 1] + 1 : 0;
		if (seg.block_last[b] < wlo || blo >= whi)
		{
			/* no docID of it in the window: padding, bound and seed 0 */
			dec_doc[(size_t) at * (GPUIR_CUDA_BLOCK_SIZE / 4) + lane] =
				make_uint4(UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX);
			if (bmw && lane == 0)
			{
				dec_ub[at] = 0.0f;
				dec_top[at] = 0.0f;
			}
			return;
		}
	}
	n = gpuir_tile_decode(seg, term, b, true, true, doc, tf, patch[threadIdx.x >> 5]);
	if (n < 0)
	{
		if (lane == 0)
			atomicOr(corrupt, 1u);
		n = 0;					/* padding only: the batch fails anyway */
	}
	else if (stats != NULL && lane == 0)
		atomicAdd(&stats->blocks_decoded, 1ull);
#pragma unroll
	for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
	{
		const bool	in = (int) (GPUIR_DECODE_PER_LANE * lane + r) < n;

		c[r] = in ? gpuir_bm25(term.idf, tf[r], gpuir_doclen(seg, doc[r]), sc) : 0.0f;
		if (!in)
			doc[r] = UINT32_MAX;
	}
	dec_doc[(size_t) at * (GPUIR_CUDA_BLOCK_SIZE / 4) + lane] = make_uint4(doc[0], doc[1], doc[2],
																		   doc[3]);
	dec_score[(size_t) at * (GPUIR_CUDA_BLOCK_SIZE / 4) + lane] = make_float4(c[0], c[1], c[2],
																			  c[3]);
	if (bmw)
	{
		/*
		 * BMW's seed (gpuir_search_seed_kernel): the block's largest
		 * contribution of a document in the window, 0 if that document is
		 * deleted (a lower bound of a real document's score, or nothing)
		 */
		float		top = 0.0f;
		uint32_t	topdoc = UINT32_MAX;

#pragma unroll
		for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
			if (doc[r] >= wlo && doc[r] < whi && c[r] > top)
			{
				top = c[r];
				topdoc = doc[r];
			}
		for (int o = 16; o > 0; o >>= 1)
		{
			const float ot = __shfl_xor_sync(0xFFFFFFFFu, top, o);
			const uint32_t od = __shfl_xor_sync(0xFFFFFFFFu, topdoc, o);

			if (ot > top || (ot == top && od < topdoc))
			{
				top = ot;
				topdoc = od;
			}
		}
		if (lane == 0)
		{
			const float f = __double2float_ru(gpuir_block_bound(seg, sc, term.idf, b));

			dec_ub[at] = isnan(f) ? INFINITY : f;
			if (topdoc != UINT32_MAX && seg.deleted != NULL &&
				(seg.deleted[topdoc >> 3] >> (topdoc & 7)) & 1)
				top = 0.0f;
			dec_top[at] = top;
		}
	}
}

/*
 * The tile's candidate counts by score bucket (gpuir_tile_hist_raise), in
 * the warps' decode scratch (free once the tile is scored), two 16-bit
 * counts a word: gpuir_tile_hist_count adds a candidate of score sc to
 * them (a score above 0 and of float bits at least base, the query's
 * GpuirSearchWork.hist_base; 0 counts every such one)
 */
static_assert(GPUIR_HIST_BUCKETS / 2 <= sizeof(GpuirTileSmem::patch) / sizeof(uint32_t),
			  "the tile's counts fit the decode scratch");
static_assert(GPUIR_TILE_DOCS < 65536, "a tile's count fits 16 bits");

__device__ static inline uint32_t *
gpuir_tile_hist_counts(GpuirTileSmem &sm)
{
	return &sm.patch[0][0];
}

__device__ static inline uint32_t
gpuir_hist_bucket(uint32_t bits, uint32_t base)
{
	return min((bits - base) >> GPUIR_HIST_SHIFT, GPUIR_HIST_BUCKETS - 1u);
}

__device__ static inline void
gpuir_tile_hist_count(GpuirTileSmem &sm, float sc, uint32_t base)
{
	const uint32_t bits = __float_as_uint(sc);

	if (sc > 0.0f && bits >= base)
	{
		const uint32_t b = gpuir_hist_bucket(bits, base);

		atomicAdd(&gpuir_tile_hist_counts(sm)[b >> 1], 1u << (16 * (b & 1)));
	}
}

/*
 * gpuir_tile_hist_raise: every thread of the tile kernel, after a tile of
 * a query with k >= GPUIR_HIST_MIN_K emitted its candidates and counted
 * each of them (matched, not deleted, at least the threshold sm.th, fully
 * scored) with gpuir_tile_hist_count (the counts zero before the tile)
 * and passed a barrier after the counting:
 * adds the tile's counts to the query's histogram hist[GPUIR_HIST_BUCKETS]
 * (zero before the batch), then raises thr to the lower edge of the
 * highest bucket b such that the candidates counted in buckets >= b, from
 * every tile of the query so far, are at least k.  They are k distinct
 * documents (a document is a candidate of one tile) scoring at least that
 * edge, so it is a lower bound of the query's k-th best score, as the
 * threshold must be.  A tile alone publishes only its own k-th best; for
 * large k that is a low quantile of its scores and barely rises, so
 * nearly every tile emitted k keys (2.2 M of at most 2.4 M a query at k =
 * 1000 over 2,442 dense tiles, in a simulation), which the partial and
 * final selections then read; with the histogram, tile r emits about k /
 * r.  The bucket counts are those of bucketSelect (Alabi et al., "Fast
 * k-selection algorithms for graphics processing units", ACM JEA 2012),
 * kept across the query's tiles as they finish rather than taken over a
 * whole array.  Each bucket with a count of the tile adds it to the
 * query's with one atomic (the tiles of a query running at once, all of
 * them in a batch of one, contend for the same counters); the query's
 * counts are read back past L1 (__ldcg).  Only buckets at or above that
 * of sm.th are read: the tile's candidates lie there, and a bucket below
 * it cannot raise the threshold.  The bucket is found by
 * gpuir_block_kth_bin, thread t holding the 8 buckets from the top at
 * 8 t.
 */
__device__ static void
gpuir_tile_hist_raise(GpuirTileSmem &sm, uint32_t k, uint32_t base, uint32_t *hist,
					  uint32_t *thr)
{
	constexpr uint32_t per = GPUIR_HIST_BUCKETS / GPUIR_SEARCH_THREADS;
	const uint32_t *tcount = gpuir_tile_hist_counts(sm);
	const uint32_t thb = __float_as_uint(sm.th);
	/* the lowest bucket read: that of the threshold the tile's candidates reach */
	const uint32_t low = (sm.th > 0.0f && thb >= base) ? gpuir_hist_bucket(thb, base) : 0;
	uint32_t	c[per],
				above;
	int			r;

	static_assert(GPUIR_HIST_BUCKETS % GPUIR_SEARCH_THREADS == 0, "whole buckets a thread");
#pragma unroll
	for (uint32_t j = 0; j < per; j++)
	{
		const uint32_t b = GPUIR_HIST_BUCKETS - 1 - (per * threadIdx.x + j);
		const uint32_t n = (tcount[b >> 1] >> (16 * (b & 1))) & 0xFFFFu;

		c[j] = (b < low) ? 0 : (n != 0) ? atomicAdd(&hist[b], n) + n : __ldcg(&hist[b]);
	}
	r = gpuir_block_kth_bin<GPUIR_SEARCH_THREADS, per>(c, k, sm.sel.scan, &above);
	if (r >= 0)
		gpuir_threshold_raise(thr, __uint_as_float(base + ((GPUIR_HIST_BUCKETS - 1 -
																 (per * threadIdx.x + r))
																<< GPUIR_HIST_SHIFT)));
}

/*
 * gpuir_tile_item: the tile kernel's work on tile `tile` of item wi
 * (every thread of the thread block calls it; it returns in all of them at
 * once): scores the tile, drops deleted docIDs and documents below the
 * query's threshold thr[wi], appends the tile's min(k, candidates) best
 * result keys to the query's candidate region cand[cand_off ..], counting
 * them in cand_count[wi], and raises thr[wi] when it kept k; for k >=
 * GPUIR_HIST_MIN_K, counts its candidates by score as it emits them
 * (gpuir_tile_hist_count), adds the counts to row qw.hist_row of hist (the
 * batch's histograms) and raises thr[wi] from them
 * (gpuir_tile_hist_raise).  BMW skips a tile whose bound is below the
 * threshold.  stats (debug, may be NULL) counts blocks decoded, tiles
 * pruned and keys emitted.  See gpuir_search_tile_kernel.
 */
__device__ static void
gpuir_tile_item(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
				const GpuirSearchWork *__restrict__ work, uint32_t wi, uint32_t tile,
				const gpuir_cuda_term *__restrict__ terms, const GpuirDecoded &dec,
				uint32_t *thr, uint64_t *__restrict__ cand, uint32_t *__restrict__ cand_count,
				uint32_t *hist, uint32_t *corrupt, GpuirSearchDevStats *stats, GpuirTileSmem &sm)
{
	const GpuirSearchWork qw = work[wi];
	const uint32_t lo = (seg.tile_first + tile) * (uint32_t) GPUIR_TILE_DOCS;
	const uint32_t hi = (uint32_t) min((uint64_t) lo + GPUIR_TILE_DOCS, (uint64_t) seg.ndocs);
	const gpuir_cuda_term *qt = terms + qw.first_term;
	const uint32_t *qoff = (dec.off != NULL) ? dec.off + qw.first_term : NULL;
	const int	t = threadIdx.x;
	const bool	with_hist = qw.hist_row != UINT32_MAX;	/* k >= GPUIR_HIST_MIN_K */
	uint32_t	take;
	uint64_t	kthr = 1;		/* smallest key kept (1: every key) */
	int			r;

	if (t == 0)
	{
		sm.total = 0;
		sm.pos = 0;
		sm.ndec = 0;
		sm.kmin = ~0ull;
	}
	r = gpuir_tile_or(seg, sc, qt, qoff, dec, qw.nterms, lo, hi,
					  qw.mode == GPUIR_CUDA_MODE_BMW ? &thr[wi] : NULL, stats, sm);
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

	/*
	 * The tile's candidates: matched, not deleted, at least the query's
	 * threshold (read once, so that every thread sees the same keys).
	 */
	if (t == 0)
		sm.th = gpuir_threshold_read(&thr[wi]);
	__syncthreads();
	gpuir_tile_candidates(seg, sc, lo, sm);
	if (sm.total == 0)
		return;
	take = min(sm.total, qw.k);
	if (with_hist)
	{
		/* the tile's counts (gpuir_tile_hist_count): the decode scratch is free */
		for (uint32_t i = t; i < GPUIR_HIST_BUCKETS / 2; i += GPUIR_SEARCH_THREADS)
			gpuir_tile_hist_counts(sm)[i] = 0;
	}

	/* the tile's k best (score desc, docID asc): radix select on the key */
	{
		auto		key_of = [&](uint32_t i) -> uint64_t {
			return gpuir_result_key(sm.acc[i], lo + i);
		};
		unsigned long long kmin = ~0ull;

		if (sm.total > qw.k)
			kthr = gpuir_bits_select<GPUIR_SEARCH_THREADS>(sm.cur, GPUIR_TILE_WORDS, key_of,
															qw.k, sm.sel);
		if (t == 0)
			sm.base = gpuir_claim_slots(&cand_count[wi], take, qw.cand_cap, corrupt,
										 qw.cand_short != 0);
		__syncthreads();		/* (also: the counts are zero) */
		if (sm.base == UINT32_MAX)
			return;
		if (stats != NULL && t == 0)
			atomicAdd(&stats->tile_keys, (unsigned long long) take);
		for (uint32_t w = t; w < GPUIR_TILE_WORDS; w += GPUIR_SEARCH_THREADS)
		{
			uint32_t	v = sm.cur[w];

			while (__any_sync(0xFFFFFFFFu, v != 0))
			{
				uint64_t	key = 0;
				bool		in;
				uint32_t	slot;

				if (v != 0)
				{
					const uint32_t i = 32 * w + (uint32_t) (__ffs(v) - 1);

					key = key_of(i);
					v &= v - 1;
					if (with_hist)
						gpuir_tile_hist_count(sm, sm.acc[i], qw.hist_base);
				}
				in = (key != 0 && key >= kthr);
				slot = gpuir_warp_slot(&sm.pos, in);
				if (in && slot < take)
				{
					cand[qw.cand_off + sm.base + slot] = key;
					kmin = min(kmin, (unsigned long long) key);
				}
			}
		}

		/*
		 * k non-deleted, fully scored documents of the tile score at least
		 * its k-th best, so that score bounds the query's k-th best from
		 * below: publish it as the threshold (Huang et al. 2017).  One
		 * barrier (uniform: take and with_hist are the block's) orders
		 * the atomicMin before thread 0's read and, for large k, the
		 * tile's bucket counts before gpuir_tile_hist_raise reads them.
		 */
		const bool	full = take == qw.k;	/* the tile kept k keys */

		if (full && kmin != ~0ull)
			atomicMin(&sm.kmin, kmin);
		if (full || with_hist)
			__syncthreads();
		if (full && t == 0)
			gpuir_threshold_raise(&thr[wi], gpuir_key_to_score(sm.kmin));
	}

	/* large k: every tile's candidates so far, counted by score (uniform branch) */
	if (with_hist)
		gpuir_tile_hist_raise(sm, qw.k, qw.hist_base,
							  hist + (size_t) qw.hist_row * GPUIR_HIST_BUCKETS, &thr[wi]);
}

/*
 * Selection with a rising bound (Ding et al. 2009, section 8.3): the k best
 * of n keys in global memory by one thread block, reading each key once.
 * One pass, GPUIR_KEYS_IN_FLIGHT loads in flight per thread, appends the
 * keys at or above a running bound to a buffer in shared memory; whenever
 * the buffer may not take another round, a radix select over the buffer
 * (shared memory only) finds its k-th best key, the buffer keeps its k
 * best, and that key becomes the bound (a key below the k-th best of some
 * of the keys is below the k-th best of all).  At the end the buffer is cut
 * to k the same way.
 */
#define GPUIR_FINAL_BUFFER		4096	/* keys buffered by the pass */
#define GPUIR_FINAL_ROUND		(GPUIR_FINAL_THREADS * GPUIR_KEYS_IN_FLIGHT)

static_assert(GPUIR_FINAL_BUFFER >= GPUIR_FINAL_ROUND + GPUIR_CUDA_MAX_K,
			  "the buffer must hold k keys and a round");
static_assert(GPUIR_FINAL_BUFFER - GPUIR_FINAL_ROUND > GPUIR_CUDA_MAX_K,
			  "a full buffer must hold more than k keys");

/* shared memory of gpuir_block_topk */
struct GpuirTopkStorage
{
	GpuirSelectTempStorage<GPUIR_FINAL_THREADS> sel;
	uint64_t	buf[GPUIR_FINAL_BUFFER];	/* the kept keys, unordered */
	uint64_t	top[GPUIR_CUDA_MAX_K];	/* a cut's k best, before they move back */
	uint32_t	pos;			/* keys in buf */
	uint32_t	tpos;
	uint64_t	bound;			/* keys below it are not kept */
};

/*
 * gpuir_block_topk: into ts.buf[0 .. c), in no particular order, the c =
 * min(k, keys at or above bound) best of the nonzero keys keys[0 .. n)
 * (distinct; zeros ignored); returns c.  bound >= 1 (1: every key).  Every
 * thread of the block calls it with the same arguments; blockDim.x ==
 * GPUIR_FINAL_THREADS; 1 <= k <= GPUIR_CUDA_MAX_K.  coherent: the keys
 * were written by other thread blocks of the running kernel, of whose
 * lines this SM's L1 may hold stale copies: read them at L2 (__ldcg).
 * Ends with a barrier.
 */
__device__ static uint32_t
gpuir_block_topk(const uint64_t *keys, uint64_t n, uint32_t k, uint64_t bound,
				 GpuirTopkStorage &ts, bool coherent = false)
{
	const int	t = threadIdx.x;
	/* ts.buf[0 .. c) (c > k) -> its k best; the k-th becomes the bound */
	auto		cut = [&](uint32_t c) {
		const uint64_t kth = gpuir_block_select<GPUIR_FINAL_THREADS>(
			[&](uint64_t i) -> uint64_t { return ts.buf[i]; }, c, k, ts.sel);

		if (t == 0)
			ts.tpos = 0;
		__syncthreads();
		gpuir_block_emit<GPUIR_FINAL_THREADS>(ts.buf, c, kth, k, &ts.tpos, ts.top);
		__syncthreads();
		for (uint32_t i = t; i < k; i += GPUIR_FINAL_THREADS)
			ts.buf[i] = ts.top[i];
		if (t == 0)
		{
			ts.pos = k;
			ts.bound = kth;
		}
		__syncthreads();
	};
	uint32_t	c;

	if (t == 0)
	{
		ts.pos = 0;
		ts.bound = bound;
	}
	__syncthreads();
	for (uint64_t base = 0; base < n; base += GPUIR_FINAL_ROUND)
	{
		uint64_t	key[GPUIR_KEYS_IN_FLIGHT];
		const uint32_t filled = ts.pos;
		uint64_t	lo;

		__syncthreads();		/* everyone read pos before it grows */
		if (filled > GPUIR_FINAL_BUFFER - GPUIR_FINAL_ROUND)
			cut(filled);		/* filled > k: the buffer must make room */
		lo = ts.bound;
#pragma unroll
		for (int r = 0; r < GPUIR_KEYS_IN_FLIGHT; r++)
		{
			const uint64_t i = base + (uint64_t) r * GPUIR_FINAL_THREADS + t;

			key[r] = (i >= n) ? 0 : coherent ? __ldcg(keys + i) : keys[i];
		}
#pragma unroll
		for (int r = 0; r < GPUIR_KEYS_IN_FLIGHT; r++)
		{
			const bool	in = (key[r] != 0 && key[r] >= lo);
			const uint32_t slot = gpuir_warp_slot(&ts.pos, in);

			if (in)
				ts.buf[slot] = key[r];
		}
		__syncthreads();
	}
	c = ts.pos;
	if (c > k)
	{
		cut(c);
		c = k;
	}
	return c;
}

/*
 * gpuir_threshold_key: the smallest key of a document scoring at the
 * threshold thr_bits; 1 (every key) while none was set, as scores may be
 * negative (a negative idf) and the threshold only rises above 0
 * (gpuir_threshold_raise)
 */
__device__ static inline uint64_t
gpuir_threshold_key(uint32_t thr_bits)
{
	return (thr_bits == 0) ? 1 : (uint64_t) gpuir_score_key(__uint_as_float(thr_bits)) << 32;
}

/*
 * gpuir_search_partial_kernel: the first level of a large query's final
 * selection (Ding et al. 2009, section 8.3, multi-level selection): grid
 * of nw * GPUIR_PART_SLICES thread blocks of 256 threads; block x takes
 * slice g = x % GPUIR_PART_SLICES of the candidates of query x /
 * GPUIR_PART_SLICES and writes the slice's best keys at or above the
 * query's threshold (gpuir_block_topk; at most k: every key of the query's
 * k best is among them), then zeros up to k, to the query's partial
 * results (after its candidates).  Nothing for a query whose count does
 * not need it (gpuir_part_needed).
 */
__global__ void __launch_bounds__(GPUIR_FINAL_THREADS)
gpuir_search_partial_kernel(const GpuirSearchWork *__restrict__ work, uint64_t *cand,
							const uint32_t *__restrict__ cand_count,
							const uint32_t *__restrict__ thr_bits)
{
	gpuir_pdl_start();
	__shared__ GpuirTopkStorage ts;
	const uint32_t wi = blockIdx.x / GPUIR_PART_SLICES;
	const uint32_t g = blockIdx.x % GPUIR_PART_SLICES;
	const GpuirSearchWork qw = work[wi];
	const uint64_t n = min((uint64_t) cand_count[wi], qw.cand_cap);
	const uint64_t s0 = n * g / GPUIR_PART_SLICES;
	const uint64_t len = n * (g + 1) / GPUIR_PART_SLICES - s0;
	uint64_t   *out = cand + qw.cand_off + qw.cand_cap + (uint64_t) g * qw.k;
	uint32_t	c;

	if (!gpuir_part_needed(n, qw.k) || cand_count[wi] > qw.cand_cap)
		return;					/* not needed, or spilled (searched again) */
	c = gpuir_block_topk(cand + qw.cand_off + s0, len, qw.k, gpuir_threshold_key(thr_bits[wi]),
						 ts);
	for (uint32_t i = threadIdx.x; i < qw.k; i += GPUIR_FINAL_THREADS)
		out[i] = (i < c) ? ts.buf[i] : 0;
}

/*
 * Where the final selections write (gpuir_final_query), the same for the
 * final kernel and the tile kernel's selections: the outputs' rows (kmax
 * docIDs and scores a query) and counts, in the job's pinned host buffer
 * or in the arena (GpuirSearchLayout), and the batch's failure bits, its
 * count of selections made (zero before) against the nfinal to make, and
 * its status word (gpuir_final_done)
 */
struct GpuirFinalOut
{
	uint32_t	kmax;
	uint32_t   *docids;
	float	   *scores;
	uint32_t   *counts;
	uint32_t   *failed;
	uint32_t   *finals;
	uint32_t	nfinal;
	uint32_t   *status;
};

/*
 * gpuir_final_done: the end of a final selection's thread block (every
 * thread calls it, after its last write of outputs): counts the selection
 * in *o.finals; the block that brings it to o.nfinal, the batch's last,
 * writes the failure bits (*o.failed, which the kernels before it and this
 * one's blocks set with atomicOr) with GPUIR_OUTPUT_DONE to *o.status, the
 * first word of the outputs (in host memory, or in the arena when a copy
 * brings them back: GpuirSearchLayout).  System-scope fences order each block's
 * output writes before its count, and every count before the status,
 * so that a host that reads the
 * status after the stream's work completed (search_finish) reads every
 * output written too; a status without GPUIR_OUTPUT_DONE means that some
 * selection never finished (search_finish fails the batch).
 */
__device__ static void
gpuir_final_done(const GpuirFinalOut &o)
{
	__syncthreads();			/* the block's output writes are issued */
	if (threadIdx.x == 0)
	{
		__threadfence_system();
		if (atomicAdd(o.finals, 1u) == o.nfinal - 1)
		{
			__threadfence_system();
			*(volatile uint32_t *) o.status = atomicOr(o.failed, 0u) | GPUIR_OUTPUT_DONE;
		}
	}
}

typedef cub::BlockRadixSort<uint64_t, GPUIR_FINAL_THREADS, GPUIR_FINAL_ITEMS> GpuirFinalSort;

/*
 * gpuir_final_query: the final selection of work item qw, by a thread
 * block of GPUIR_FINAL_THREADS threads: the k best of its candidate keys
 * (of its partial selections' results when gpuir_part_needed; count: its
 * candidate count), sorted descending, written to row qw.qindex of the
 * outputs o (o.kmax slots, zeros past the count) with the count.
 * gpuir_block_topk keeps them, starting from the query's threshold
 * (thr_bits, raised by the tiles and the AND thread blocks: a lower bound
 * of its k-th best score, and every one of its k best keys is a candidate
 * at or above it, since a tile or AND thread block emits its own k best at
 * or above the threshold of the moment); up to 256 are ordered by each
 * thread counting the keys above its own, more by cub::BlockRadixSort
 * (Sort; the tile kernel's selections, whose batch's kmax is at most 256,
 * need none).  Should fewer than min(k, candidates) keys come out (the
 * argument above says never), the batch fails (*o.failed |=
 * GPUIR_FAILED_INTERNAL) rather
 * than return fewer rows.  A query whose short region spilled (its count
 * past cand_cap) gets the count GPUIR_COUNT_SPILLED and no rows.
 * Coherent: the candidates were written by other thread blocks of the
 * running kernel (the tile kernel's selections), so they are read past
 * L1.  stats (debug, may be NULL) counts the queries selected in two
 * levels.  Ends with gpuir_final_done.
 */
template <bool Sort, bool Coherent>
__device__ static void
gpuir_final_query(const GpuirSearchWork &qw, const uint64_t *cand, uint32_t count,
				  uint32_t thr_bits, const GpuirFinalOut &o, GpuirSearchDevStats *stats,
				  GpuirTopkStorage &f, typename GpuirFinalSort::TempStorage *sort)
{
	const uint64_t n = min((uint64_t) count, qw.cand_cap);
	const bool	part = gpuir_part_needed(n, qw.k);
	/* the candidates, or the partial selections' results (zeros ignored) */
	const uint64_t *qc = cand + qw.cand_off + (part ? qw.cand_cap : 0);
	const uint64_t m = part ? (uint64_t) GPUIR_PART_SLICES * qw.k : n;
	const uint32_t take = (uint32_t) min(n, (uint64_t) qw.k);
	const size_t row = (size_t) qw.qindex * o.kmax;
	const int	t = threadIdx.x;
	uint32_t	c;

	if (count > qw.cand_cap)
	{
		/* a short region spilled (every thread reads the same count) */
		if (t == 0)
			o.counts[qw.qindex] = GPUIR_COUNT_SPILLED;
		gpuir_final_done(o);
		return;
	}
	c = gpuir_block_topk(qc, m, qw.k, gpuir_threshold_key(thr_bits), f, Coherent);
	/* the slots past the count (rows are kmax wide): the host buffer is not zeroed */
	for (uint32_t i = min(c, take) + t; i < o.kmax; i += GPUIR_FINAL_THREADS)
	{
		o.docids[row + i] = 0;
		o.scores[row + i] = 0.0f;
	}

	/* c == take: a query with fewer than k candidates never set thr */
	if (!Sort || c <= GPUIR_FINAL_THREADS)
	{
		/* rank by counting: the kept keys are distinct */
		if ((uint32_t) t < c)
		{
			const uint64_t key = f.buf[t];
			uint32_t	rank = 0;

			for (uint32_t j = 0; j < c; j++)
				rank += (f.buf[j] > key);
			if (rank < take)
			{
				o.docids[row + rank] = gpuir_key_docid(key);
				o.scores[row + rank] = gpuir_key_to_score(key);
			}
		}
	}
	else
	{
		uint64_t	keys[GPUIR_FINAL_ITEMS];

		for (int r = 0; r < GPUIR_FINAL_ITEMS; r++)
		{
			const uint32_t i = t * GPUIR_FINAL_ITEMS + r;

			keys[r] = (i < c) ? f.buf[i] : 0;
		}
		__syncthreads();		/* the sort's storage overlays the buffer */
		GpuirFinalSort(*sort).SortDescending(keys);
		for (int r = 0; r < GPUIR_FINAL_ITEMS; r++)
		{
			const uint32_t rank = t * GPUIR_FINAL_ITEMS + r;

			if (rank < take && rank < c)
			{
				o.docids[row + rank] = gpuir_key_docid(keys[r]);
				o.scores[row + rank] = gpuir_key_to_score(keys[r]);
			}
		}
	}
	if (t == 0)
	{
		o.counts[qw.qindex] = min(c, take);
		if (part && stats != NULL)
			atomicAdd(&stats->partial_queries, 1ull);
		if (c != take)
			atomicOr(o.failed, GPUIR_FAILED_INTERNAL);	/* never: see above */
	}
	gpuir_final_done(o);
}

/*
 * gpuir_search_final_kernel: one thread block of GPUIR_FINAL_THREADS
 * threads per query of the chunk, each its query's gpuir_final_query into
 * o: the outputs are in the job's pinned host buffer when small, so that
 * no copy follows the kernel, else in the arena (GpuirSearchLayout); the
 * thread block that completes the batch's o.nfinal selections (the tile
 * kernel makes some of them, gpuir_search_tile_kernel) then writes the
 * batch's status (gpuir_final_done).
 */
__global__ void __launch_bounds__(GPUIR_FINAL_THREADS)
gpuir_search_final_kernel(const GpuirSearchWork *__restrict__ work,
						  const uint64_t *__restrict__ cand,
						  const uint32_t *__restrict__ cand_count,
						  const uint32_t *__restrict__ thr_bits, GpuirFinalOut o,
						  GpuirSearchDevStats *stats)
{
	gpuir_pdl_start();
	__shared__ union
	{
		GpuirTopkStorage f;
		typename GpuirFinalSort::TempStorage sort;
	}			sm;

	gpuir_final_query<true, false>(work[blockIdx.x], cand, cand_count[blockIdx.x],
								   thr_bits[blockIdx.x], o, stats, sm.f, &sm.sort);
}

/*
 * The tile kernel's final selections (gpuir_search_tile_kernel): done NULL
 * when the chunk has a final kernel, else the items' tile counts (zero
 * before), and where the selections write
 */
struct GpuirTileFinal
{
	uint32_t   *done;
	GpuirFinalOut out;
};

static_assert(sizeof(GpuirTopkStorage) <= sizeof(((GpuirTileSmem *) 0)->acc),
			  "a tile's selection overlays its accumulators");
static_assert(GPUIR_SEARCH_THREADS == GPUIR_FINAL_THREADS,
			  "a tile kernel's thread block makes a final selection");

/*
 * gpuir_search_tile_kernel: the OR and BMW items of a chunk that the tiles
 * answer (AND items are gpuir_search_and_kernel's, BMW items the seed
 * kernel gave the MaxScore kernel are not among them): items[0 .. n), n being *nlive
 * (the seed kernel's list) or, when nlive is NULL, ni; grid of
 * thread blocks of GPUIR_SEARCH_THREADS threads with sizeof(GpuirTileSmem)
 * bytes of dynamic shared memory, about what the device holds at once,
 * each taking the next pair x of n * ntiles (*next, zero before: pairs are
 * handed out in order as thread blocks come free, so that a heavy query's
 * tiles do not queue behind one thread block): item wi = items[x % n] on
 * tile x / n (rank-major: a batch's queries have their first tiles done,
 * and their thresholds raised, before their later tiles start), through
 * gpuir_tile_item.  The lists are read
 * from dec (GpuirDecoded) where it has them.  A thread block stops once
 * the batch has failed (*corrupt).  hist: the batch's score histograms
 * (GPUIR_HIST_BUCKETS counts a row, zero before; the rows of the queries
 * with k >= GPUIR_HIST_MIN_K, GpuirSearchWork.hist_row).  stats (debug, may
 * be NULL) accumulates decoded blocks, pruned tiles and emitted keys.
 *
 * With fin.done (GpuirTileFinal), the kernel also makes the final
 * selections of the chunk, whose every item is then a tile item with k <=
 * GPUIR_FINAL_THREADS and no partial selection (search_launch), so that
 * no final kernel follows it: the thread block that finishes an item's
 * last tile (fin.done[item] counts them, zero before; the "last block"
 * pattern of the CUDA programming guide's threadfence example) selects its
 * k best (gpuir_final_query, in the tile's shared memory) while the other
 * blocks go on with the later pairs.
 */
__global__ void __launch_bounds__(GPUIR_SEARCH_THREADS, GPUIR_SEARCH_MIN_BLOCKS)
gpuir_search_tile_kernel(gpuir_cuda_segment seg, gpuir_cuda_scoring sc,
						 const GpuirSearchWork *__restrict__ work,
						 const uint32_t *__restrict__ items, uint32_t ni,
						 const uint32_t *nlive, uint32_t ntiles, uint32_t *next,
						 const gpuir_cuda_term *__restrict__ terms, GpuirDecoded dec,
						 uint32_t *thr, uint64_t *__restrict__ cand,
						 uint32_t *__restrict__ cand_count, uint32_t *hist, uint32_t *corrupt,
						 GpuirSearchDevStats *stats, GpuirTileFinal fin)
{
	gpuir_pdl_start();
	extern __shared__ __align__(16) unsigned char tile_smem[];
	GpuirTileSmem &sm = *reinterpret_cast<GpuirTileSmem *>(tile_smem);
	const uint32_t n = (nlive != NULL) ? *nlive : ni;
	const uint32_t npairs = n * ntiles;	/* below 2^31: plan_query's max_per_chunk */
	uint32_t	prev = UINT32_MAX;	/* the item of the block's last pair (fin.done) */

	for (;;)
	{
		const bool	counted = fin.done != NULL && prev != UINT32_MAX;
		uint32_t	x;

		/*
		 * One barrier a pair: after it every thread has finished the last
		 * pair (each path of gpuir_tile_item passes a barrier after its
		 * last read of sm.next) and knows whether the batch has failed.
		 * With the selections here, a barrier first (the pair's candidate
		 * writes are all issued), then thread 32 counts the pair's tile
		 * behind a fence while thread 0 takes the next pair.
		 */
		if (counted)
			__syncthreads();
		if (threadIdx.x == 0)
			sm.next = atomicAdd(next, 1u);
		if (counted && threadIdx.x == 32)
		{
			__threadfence();
			sm.last = atomicAdd(&fin.done[prev], 1u) == ntiles - 1;
		}
		if (__syncthreads_or(threadIdx.x == 0 && *(volatile uint32_t *) corrupt))
			return;				/* a corrupt block was found: the batch fails */
		if (counted && sm.last)
		{
			/* every tile of item prev is in: its selection, over sm.acc */
			__threadfence();
			gpuir_final_query<false, true>(work[prev], cand, __ldcg(&cand_count[prev]),
										   __ldcg(&thr[prev]), fin.out, stats,
										   *reinterpret_cast<GpuirTopkStorage *>(sm.acc), NULL);
		}
		x = sm.next;
		if (x >= npairs)
			return;
		prev = items[x % n];
		gpuir_tile_item(seg, sc, work, prev, x / n, terms, dec, thr, cand, cand_count,
						hist, corrupt, stats, sm);
	}
}

/* ---------- host side ---------- */

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
 * search_args_valid: the argument checks of gpuir_cuda_search_batch
 * (gpuir_cuda.h) for nqueries > 0, but for the output pointers (its
 * callers check those): input pointers, kmax, BM25 constants, the
 * segment's counts, every term and every query.
 */
static bool
search_args_valid(const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc,
				  const gpuir_cuda_query *queries, uint32_t nqueries,
				  const gpuir_cuda_term *terms, uint32_t nterms, uint32_t kmax)
{
	if (seg == NULL || sc == NULL || queries == NULL || (terms == NULL && nterms > 0) ||
		kmax < 1 || kmax > GPUIR_CUDA_MAX_K)
		return false;
	if (!(std::isfinite(sc->k1) && sc->k1 >= 0.0f && sc->b >= 0.0f && sc->b <= 1.0f &&
		  std::isfinite(sc->avgdl) && sc->avgdl > 0.0f))
		return false;
	if (seg->prior != NULL &&
		!(sc->prior_weight >= 0.0f && std::isfinite(sc->prior_weight) &&
		  seg->prior_max >= 0.0f && std::isfinite(seg->prior_max)))
		return false;
	if (seg->windowed &&
		(seg->tile_first > seg->tile_end ||
		 seg->tile_end > ((uint64_t) seg->ndocs + GPUIR_TILE_DOCS - 1) / GPUIR_TILE_DOCS))
		return false;
	if (seg->ndocs > 0xFFFFFFFEu || seg->payload_bytes > UINT32_MAX ||
		(seg->ndocs > 0 && (seg->doclen == NULL || seg->doclen_code == NULL)) ||
		(seg->nblocks > 0 && (seg->payload == NULL || seg->block_last == NULL ||
							  seg->block_offset == NULL || seg->h_bad == NULL ||
							  seg->h_desc == NULL)))
		return false;
	for (uint32_t i = 0; i < nterms; i++)
		if (!term_valid(&terms[i], seg))
			return false;
	for (uint32_t q = 0; q < nqueries; q++)
	{
		const gpuir_cuda_query *qq = &queries[q];

		if (qq->k < 1 || qq->k > kmax || qq->first_term > nterms ||
			qq->nterms > nterms - qq->first_term ||
			(qq->mode != GPUIR_CUDA_MODE_AND && qq->mode != GPUIR_CUDA_MODE_OR &&
			 qq->mode != GPUIR_CUDA_MODE_BMW))
			return false;
	}
	return true;
}

/*
 * The plan of a batch (host memory): the queries that can have results as
 * the kernels see them, the AND queries' term orders, the lists used and
 * the chunks.
 */
struct GpuirSearchPlan
{
	uint32_t	ntiles;			/* tiles of the segment */
	GpuirSearchWork *work;		/* [nwork] */
	uint32_t   *order;			/* [norder], capacity order_cap */
	size_t		order_cap;
	uint8_t    *used;			/* [nterms + 1]: term used by a query */
	uint32_t   *chunk_start;	/* [nchunks + 1]: first work of each chunk */
	uint8_t    *chunk_part;		/* [nchunks]: chunk has a query that may need
								 * the partial selection */
	uint32_t   *tile_items;		/* [ntile_items]: the OR and BMW items, each
								 * chunk's in order, as indexes into its chunk */
	uint32_t   *chunk_items;	/* [nchunks + 1]: chunk c's are tile_items[
								 * chunk_items[c] .. chunk_items[c + 1]) */
	uint32_t	ntile_items;
	uint32_t   *and_start;		/* [nwork + 1]: prefix sums, mod 2^32, of the AND
								 * items' shortest list blocks (the AND kernel's
								 * thread blocks); chunk c has
								 * and_start[chunk_start[c + 1]] -
								 * and_start[chunk_start[c]] of them */
	uint32_t   *ms_start;		/* [nwork + 1]: the same for the blocks the
								 * MaxScore kernel may have to run (its work
								 * entries): every block of each BMW item */
	uint32_t	nwork;
	uint32_t	norder;
	uint32_t	nchunks;
	uint32_t	nbmw;			/* BMW queries: bounds, seed and MaxScore only with some */
	uint32_t	nrem;			/* their terms (GpuirSearchWork.rem_off) */
	uint64_t	chunk_keys;		/* candidate keys of the last chunk so far */
	uint64_t	max_chunk_keys;
	uint32_t	nhist;			/* OR and BMW queries with k >= GPUIR_HIST_MIN_K */
	uint32_t	short_tiles;	/* a short region's room, in tiles of k keys; 0: none */
	uint64_t	short_full_keys;	/* the full regions' keys of the queries given a
									 * short region, summed (0: none) */
	uint64_t	short_full_max;	/* the largest of those */
	bool		bmw_as_or;		/* plan_bmw_as_or: the batch's BMW queries run as OR */
	/*
	 * the lists decoded once (GpuirDecoded), dcache_plan's: dec.dec_off is
	 * GpuirDecoded.off (NULL if none), nlists of them decoded by this batch
	 */
	GpuirDecodeOut dec;

	/*
	 * The arrays: kept by the job from one search to the next (plan_reset
	 * keeps them, plan_free frees them) and grown by plan_reserve, so that
	 * a batch allocates nothing once they are as large as it needs.
	 * work holds query_cap entries; chunk_start, chunk_part, tile_items,
	 * chunk_items, and_start and ms_start query_cap + 1; used and the dec
	 * buffers term_cap + 2; order and seq grow by themselves
	 * (plan_and_order, plan_decode).
	 */
	size_t		query_cap;
	size_t		term_cap;
	uint32_t   *seq;			/* plan_decode's terms, [seq_cap] */
	size_t		seq_cap;
	uint32_t   *dec_buf[4];		/* dec's dec_off, list_term, list_first, list_dst */
};

/* plan_free: free the plan's arrays; *p is zeroed */
static void
plan_free(GpuirSearchPlan *p)
{
	free(p->work);
	free(p->order);
	free(p->used);
	free(p->chunk_start);
	free(p->chunk_part);
	free(p->tile_items);
	free(p->chunk_items);
	free(p->and_start);
	free(p->ms_start);
	free(p->seq);
	for (int i = 0; i < 4; i++)
		free(p->dec_buf[i]);
	memset(p, 0, sizeof(*p));
}

/* plan_reset: *p empty for the next batch, its arrays kept */
static void
plan_reset(GpuirSearchPlan *p)
{
	GpuirSearchPlan keep = *p;

	memset(p, 0, sizeof(*p));
	p->work = keep.work;
	p->order = keep.order;
	p->order_cap = keep.order_cap;
	p->used = keep.used;
	p->chunk_start = keep.chunk_start;
	p->chunk_part = keep.chunk_part;
	p->tile_items = keep.tile_items;
	p->chunk_items = keep.chunk_items;
	p->and_start = keep.and_start;
	p->ms_start = keep.ms_start;
	p->query_cap = keep.query_cap;
	p->term_cap = keep.term_cap;
	p->seq = keep.seq;
	p->seq_cap = keep.seq_cap;
	memcpy(p->dec_buf, keep.dec_buf, sizeof(p->dec_buf));
}

/* grow: *a to n elements (its contents not kept); false when out of memory */
template <typename T>
static bool
grow(T **a, size_t n)
{
	T		   *b = (T *) malloc(n * sizeof(T));

	if (b == NULL)
		return false;
	free(*a);
	*a = b;
	return true;
}

/*
 * plan_reserve: the plan's arrays for a batch of nqueries queries and
 * nterms terms (grown by half again past what the batch needs); zeroed,
 * for the entries the batch uses: used, chunk_part, and_start and ms_start
 * (plan_batch adds to them)
 */
static gpuir_cuda_status
plan_reserve(GpuirSearchPlan *p, uint32_t nqueries, uint32_t nterms)
{
	if (nqueries > p->query_cap || p->work == NULL)
	{
		size_t		n = (size_t) nqueries + nqueries / 2 + 1;

		p->query_cap = 0;		/* until all are grown */
		if (!grow(&p->work, n) || !grow(&p->chunk_start, n + 1) ||
			!grow(&p->chunk_part, n + 1) || !grow(&p->tile_items, n + 1) ||
			!grow(&p->chunk_items, n + 1) || !grow(&p->and_start, n + 1) ||
			!grow(&p->ms_start, n + 1))
			return GPUIR_CUDA_OOM;
		p->query_cap = n;
	}
	if (nterms > p->term_cap || p->used == NULL)
	{
		size_t		n = (size_t) nterms + nterms / 2 + 1;

		p->term_cap = 0;
		if (!grow(&p->used, n + 2))
			return GPUIR_CUDA_OOM;
		for (int i = 0; i < 4; i++)
			if (!grow(&p->dec_buf[i], n + 2))
				return GPUIR_CUDA_OOM;
		p->term_cap = n;
	}
	if (p->order == NULL)
	{
		if (!grow(&p->order, 1))
			return GPUIR_CUDA_OOM;
		p->order_cap = 1;
	}
	memset(p->used, 0, (size_t) nterms + 1);
	memset(p->chunk_part, 0, (size_t) nqueries + 1);
	memset(p->and_start, 0, sizeof(uint32_t) * ((size_t) nqueries + 1));
	memset(p->ms_start, 0, sizeof(uint32_t) * ((size_t) nqueries + 1));
	return GPUIR_CUDA_OK;
}

/*
 * plan_and_order: append query q's term indexes, shortest list first (ties
 * in query order), to p->order; its work item w points at them.
 */
static gpuir_cuda_status
plan_and_order(GpuirSearchPlan *p, GpuirSearchWork *w, const gpuir_cuda_term *qt,
			   uint32_t nt)
{
	if ((size_t) p->norder + nt > p->order_cap)
	{
		size_t		ncap = std::max(p->order_cap * 2, (size_t) p->norder + nt);
		uint32_t   *n2 = (uint32_t *) realloc(p->order, ncap * sizeof(uint32_t));

		if (n2 == NULL)
			return GPUIR_CUDA_OOM;
		p->order = n2;
		p->order_cap = ncap;
	}
	w->order_off = p->norder;
	for (uint32_t j = 0; j < nt; j++)
		p->order[p->norder + j] = j;
	/* ties in query order: std::sort allocates nothing, std::stable_sort does */
	std::sort(p->order + p->norder, p->order + p->norder + nt,
			  [qt](uint32_t a, uint32_t b) {
				  return qt[a].npostings < qt[b].npostings ||
					  (qt[a].npostings == qt[b].npostings && a < b);
			  });
	p->norder += nt;
	return GPUIR_CUDA_OK;
}

/* the MaxScore share and density of the calling thread (gpuir_cuda_search_set_maxscore) */
static thread_local uint32_t maxscore_share = GPUIR_CUDA_MAXSCORE_SHARE;
static thread_local uint32_t maxscore_dense = GPUIR_CUDA_MAXSCORE_DENSE;
/* a batch of BMW queries whose tiles fill few waves runs as OR (plan_bmw_as_or) */
static thread_local uint64_t bmw_batch_waves = GPUIR_CUDA_BMW_BATCH_WAVES,
			bmw_batch_total = GPUIR_CUDA_BMW_BATCH_TOTAL;

/*
 * plan_query: add query q to the plan unless no document can qualify (its
 * count stays 0): its work item (mode: BMW runs as OR without impacts,
 * with a negative idf, with dense lists, see below, or when the batch's
 * tiles fill few waves, p->bmw_as_or), AND order and
 * thread blocks, used lists, and its place in a chunk (and, OR or BMW,
 * among the chunk's tile items).
 *
 * Candidate memory: an AND query gets a region of min(its shortest list's
 * postings, min(k, 128) x that list's blocks) keys (every candidate is one
 * of those postings, and a thread block per block emits at most min(k,
 * 128)), an OR query one of min(ntiles * k, the sum of its lists'
 * postings) keys, which no tile output can exceed (k keys a tile, every
 * one a posting); a BMW query of several terms that the MaxScore kernel
 * may answer (gpuir_search_maxscore.cuh; decided below) also covers min(k,
 * 128) keys per thread block of that kernel (its lists are not dense, so
 * that is bounded); one of one term gets OR's region, and the seed kernel
 * leaves it to the tiles when the blocks the MaxScore kernel would run
 * might emit more (a list of 33 M postings would need 33 M keys at k =
 * 1000).  An OR query with k >= GPUIR_HIST_MIN_K gets a short region when
 * that is less: p->short_tiles x k keys (plan_batch).  Its tiles raise its
 * threshold from the histogram of all its tiles' candidates
 * (gpuir_tile_hist_raise), so that tile r emits about k / r keys once the
 * first ones are in, and the region rarely fills; if it does, the query
 * spills (gpuir_claim_slots) and search_finish searches it again with its
 * full region.  Short regions let a batch of such queries share one chunk
 * (at k = 1000 over 2,442 tiles the full regions took 12 chunks a batch of
 * 1,000, each tile launch reading the decoded lists again).  Each region
 * is followed by GPUIR_PART_SLICES x k keys for the
 * partial selections when gpuir_part_needed(its capacity, k).  Consecutive
 * queries are grouped into chunks of at most GPUIR_CAND_BUDGET keys (a
 * larger query alone); each chunk is a seed and a MaxScore launch for its
 * BMW queries, a tile launch for its OR queries and the BMW queries the
 * seed leaves to the tiles, an AND launch for its AND queries, a partial
 * launch if one of its queries may need it, and one final launch (none
 * when the tile kernel makes the selections, search_launch), reusing the
 * same candidate buffer.
 */
static gpuir_cuda_status
plan_query(GpuirSearchPlan *p, const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc,
		   const gpuir_cuda_query *qq, uint32_t q, const gpuir_cuda_term *terms)
{
	const gpuir_cuda_term *qt = terms + qq->first_term;
	const bool	and_mode = (qq->mode == GPUIR_CUDA_MODE_AND);
	const uint64_t max_per_chunk = (uint64_t) INT32_MAX / p->ntiles;
	bool		bmw_mode = (qq->mode == GPUIR_CUDA_MODE_BMW &&
							seg->impact_tf != NULL && seg->impact_dl != NULL);
	bool		maxscore = false;
	uint32_t	present = 0;
	uint64_t	sump = 0,
				minp = UINT64_MAX,
				cap,
				region;
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
		return GPUIR_CUDA_OK;	/* no document can qualify: count 0 */

	/*
	 * A BMW query of several terms whose lists hold more than one posting
	 * for every maxscore_dense docIDs of the tiles runs as OR: a tile then
	 * overlaps many blocks of each list, the largest of their bounds is
	 * near the list's, and a tile's bound sum is rarely below the
	 * threshold (generated log, 40 M documents: 11 tiles of 48,840
	 * skipped), while the seed, the bounds and the threshold reads cost
	 * BMW 0.42-0.84x OR (bench/results/2026-11-30-h200-bmw-plan.md); the
	 * MaxScore lookups cost more a posting than full tiles there.
	 * Otherwise: may the MaxScore kernel answer it (the seed kernel decides
	 * with its seed, gpuir_seed_split)?  Not when the thread's share is 0,
	 * with more than GPUIR_MS_MAX_TERMS terms, or when a list's blocks do
	 * not fit a work entry.  Only such a query needs room for MaxScore work
	 * entries and candidates.
	 */
	if (bmw_mode && qq->nterms > 1 && maxscore_dense != 0 &&
		sump > (uint64_t) p->ntiles * GPUIR_TILE_DOCS / maxscore_dense)
		bmw_mode = false;
	/*
	 * a batch whose tiles fill few waves (plan_bmw_as_or): the seed and
	 * MaxScore launches cost more than they save
	 */
	if (bmw_mode && p->bmw_as_or)
		bmw_mode = false;
	if (bmw_mode)
	{
		maxscore = maxscore_share != 0 && qq->nterms <= GPUIR_MS_MAX_TERMS;
		for (uint32_t j = 0; j < qq->nterms; j++)
			if (qt[j].nblocks >> GPUIR_MS_BLOCK_BITS)
				maxscore = false;
	}
	w = &p->work[p->nwork];
	w->qindex = q;
	w->first_term = qq->first_term;
	w->nterms = qq->nterms;
	w->k = qq->k;
	w->mode = and_mode ? GPUIR_CUDA_MODE_AND
		: (bmw_mode ? GPUIR_CUDA_MODE_BMW : GPUIR_CUDA_MODE_OR);
	w->order_off = 0;
	w->rem_off = p->nrem;
	w->maxscore = maxscore ? 1 : 0;
	w->hist_row = UINT32_MAX;
	w->hist_base = 0;
	w->cand_short = 0;
	if (bmw_mode)
	{
		p->nbmw++;
		p->nrem += qq->nterms;
	}
	if (and_mode && plan_and_order(p, w, qt, qq->nterms) != GPUIR_CUDA_OK)
		return GPUIR_CUDA_OOM;
	/*
	 * Its thread blocks in the AND kernel, a block of its shortest list
	 * each, and its candidates: at most min(k, 128) a thread block, and
	 * never more than that list's postings.
	 */
	p->ms_start[p->nwork + 1] = p->ms_start[p->nwork];
	if (and_mode)
	{
		const uint32_t nb = qt[p->order[w->order_off]].nblocks;

		p->and_start[p->nwork + 1] = p->and_start[p->nwork] + nb;
		cap = std::min(minp, (uint64_t) nb * std::min(qq->k, (uint32_t) GPUIR_AND_CAND));
	}
	else
	{
		uint64_t	msb = 0;	/* the BMW query's blocks: its MaxScore work entries, at most */

		for (uint32_t j = 0; maxscore && j < qq->nterms; j++)
			msb += qt[j].nblocks;
		p->and_start[p->nwork + 1] = p->and_start[p->nwork];
		p->ms_start[p->nwork + 1] = p->ms_start[p->nwork] + (uint32_t) msb;
		cap = std::min(std::max((uint64_t) p->ntiles * qq->k,
								(qq->nterms > 1) ? msb * std::min(qq->k, (uint32_t) GPUIR_AND_CAND)
								: 0), sump);
		if (w->mode == GPUIR_CUDA_MODE_OR && plan_hist_query(w->mode, qq->k) &&
			p->short_tiles > 0 && (uint64_t) p->short_tiles * qq->k < cap)
		{
			const uint64_t full = region_keys(cap, qq->k);

			p->short_full_keys += full;
			p->short_full_max = std::max(p->short_full_max, full);
			cap = (uint64_t) p->short_tiles * qq->k;
			w->cand_short = 1;
		}
	}
	for (uint32_t j = 0; j < qq->nterms; j++)
		if (qt[j].nblocks > 0)
			p->used[qq->first_term + j] = 1;

	/* chunking */
	region = region_keys(cap, qq->k);
	if (p->nchunks == 0 || (p->chunk_keys + region > GPUIR_CAND_BUDGET && p->chunk_keys > 0) ||
		p->nwork - p->chunk_start[p->nchunks - 1] >= max_per_chunk)
	{
		p->chunk_items[p->nchunks] = p->ntile_items;
		p->chunk_start[p->nchunks++] = p->nwork;
		p->chunk_keys = 0;
	}
	if (gpuir_part_needed(cap, qq->k))
		p->chunk_part[p->nchunks - 1] = 1;
	if (!and_mode)
	{
		p->tile_items[p->ntile_items++] = p->nwork - p->chunk_start[p->nchunks - 1];
		if (plan_hist_query(qq->mode, qq->k))
		{
			/*
			 * Its histogram spans the octaves below a bound of its scores:
			 * a term adds less than idf (k1 + 1) (tf / (tf + norm) < 1),
			 * a prior at most gpuir_prior_bound.  The bound only places the
			 * buckets: scores above it count in the last.
			 */
			double		ub = gpuir_prior_bound(*seg, *sc);
			float		ubf;
			uint32_t	bits;

			for (uint32_t j = 0; j < qq->nterms; j++)
				if (qt[j].nblocks > 0 && qt[j].idf > 0.0f)
					ub += (double) qt[j].idf * ((double) sc->k1 + 1.0);
			ubf = (float) ub;
			memcpy(&bits, &ubf, sizeof(bits));
			w->hist_row = p->nhist++;
			w->hist_base = (std::isfinite(ubf) && bits > ((uint32_t) GPUIR_HIST_OCTAVES << 23))
				? bits - ((uint32_t) GPUIR_HIST_OCTAVES << 23) : 0;
		}
	}
	w->cand_off = p->chunk_keys;
	w->cand_cap = cap;
	p->chunk_keys += region;
	p->max_chunk_keys = std::max(p->max_chunk_keys, p->chunk_keys);
	p->nwork++;
	return GPUIR_CUDA_OK;
}

/*
 * plan_area_blocks: the blocks of the lists that the plan's tiles read
 * from the job's decoded area (found there or decoded by the batch)
 */
static inline uint32_t
plan_area_blocks(const GpuirSearchPlan *p)
{
	return (p->dec.dec_off != NULL) ? p->dec.dec_blocks : 0;
}

/* plan_decode_blocks: the blocks the plan's decode kernel decodes (list_first's last entry) */
static inline uint32_t
plan_decode_blocks(const GpuirSearchPlan *p)
{
	return (p->dec.dec_off != NULL) ? p->dec.list_first[p->dec.nlists] : 0;
}

/* the decode budget of the calling thread (gpuir_cuda_search_set_decode_budget) */
static thread_local uint32_t decode_budget = GPUIR_CUDA_DECODE_BUDGET;

/* lists its searches found decoded and decoded (gpuir_cuda_search_take_decode_counts) */
static thread_local uint64_t decode_found,
			decode_decoded;

/* gpuir_cuda_search_take_decode_counts: contract in gpuir_cuda.h */
extern "C" void
gpuir_cuda_search_take_decode_counts(uint64_t *found, uint64_t *decoded)
{
	*found = decode_found;
	*decoded = decode_decoded;
	decode_found = decode_decoded = 0;
}

/* the blocks its searches keep decoded lists in (gpuir_cuda_search_set_decode_cache) */
static thread_local uint32_t decode_cache_blocks = GPUIR_CUDA_DECODE_BUDGET;

/* gpuir_cuda_search_set_decode_cache: contract in gpuir_cuda.h */
extern "C" void
gpuir_cuda_search_set_decode_cache(uint32_t blocks)
{
	decode_cache_blocks = blocks;
}

/* gpuir_cuda_search_set_maxscore: contract in gpuir_cuda.h */
extern "C" void
gpuir_cuda_search_set_maxscore(uint32_t share, uint32_t dense)
{
	maxscore_share = share;
	maxscore_dense = dense;
}

/* gpuir_cuda_search_set_bmw_batch: contract in gpuir_cuda.h */
extern "C" void
gpuir_cuda_search_set_bmw_batch(uint64_t waves, uint64_t batch_postings)
{
	bmw_batch_waves = waves;
	bmw_batch_total = batch_postings;
}

/* gpuir_cuda_search_set_decode_budget: contract in gpuir_cuda.h */
extern "C" void
gpuir_cuda_search_set_decode_budget(uint32_t blocks)
{
	decode_budget = blocks;
}

static thread_local uint32_t short_room = GPUIR_CUDA_SHORT_ROOM_AUTO;

/* queries the calling thread's searches searched again (search_again) */
static thread_local uint64_t searched_again;

/* gpuir_cuda_search_take_searched_again: contract in gpuir_cuda.h */
extern "C" uint64_t
gpuir_cuda_search_take_searched_again(void)
{
	const uint64_t n = searched_again;

	searched_again = 0;
	return n;
}

/* gpuir_cuda_search_set_short_room: contract in gpuir_cuda.h */
extern "C" void
gpuir_cuda_search_set_short_room(uint32_t tiles)
{
	short_room = tiles;
}

static void resident_grids(uint32_t *tile, uint32_t *ms, bool *pdl);

/*
 * plan_short_tiles: the room of the batch's short candidate regions in
 * tiles of k keys (plan_query; 0: none): the test's setting, or
 * GPUIR_SHORT_ROOM_TILES plus twice the tiles of each such query that run
 * at once at the start (the tile kernel's resident thread blocks over the
 * batch's OR and BMW queries with k >= GPUIR_HIST_MIN_K, which take their
 * tiles in turn): those emit up to k keys each before the histogram has
 * k, and later tile r about k / r (gpuir_tile_hist_raise).
 */
static uint32_t
plan_short_tiles(const gpuir_cuda_query *queries, uint32_t nqueries)
{
	uint32_t	nh = 0,
				tile_grid;

	if (short_room != GPUIR_CUDA_SHORT_ROOM_AUTO)
		return short_room;
	for (uint32_t q = 0; q < nqueries; q++)
		nh += plan_hist_query(queries[q].mode, queries[q].k);
	if (nh == 0)
		return 0;
	resident_grids(&tile_grid, NULL, NULL);
	return GPUIR_SHORT_ROOM_TILES + 2 * ((tile_grid + nh - 1) / nh);
}

/*
 * plan_decode: the lists that the tiles of the plan's OR and BMW queries
 * read decoded once (GpuirDecoded), planned by dcache_plan
 * (gpuir_decode_cache.cuh) over the job's decoded area dc with the
 * thread's decode budget and reuse capacity: their terms in query order,
 * repeats included.  Nothing when no query is OR or BMW, or the budget is
 * 0.
 */
static gpuir_cuda_status
plan_decode(GpuirSearchPlan *p, GpuirDecodeCache *dc, const gpuir_cuda_segment *seg,
			const gpuir_cuda_scoring *sc, const gpuir_cuda_term *terms, uint32_t nterms)
{
	size_t		nseq = 0;		/* the OR and BMW queries' terms, in p->seq */
	uint64_t	found = 0;
	gpuir_cuda_status st;

	/* queries' term ranges may overlap: a term may come more than once */
	for (uint32_t w = 0; w < p->nwork; w++)
		if (p->work[w].mode != GPUIR_CUDA_MODE_AND)
			nseq += p->work[w].nterms;
	if (nseq > p->seq_cap)
	{
		p->seq_cap = 0;
		if (!grow(&p->seq, nseq + nseq / 2))
			return GPUIR_CUDA_OOM;
		p->seq_cap = nseq + nseq / 2;
	}
	nseq = 0;
	for (uint32_t w = 0; w < p->nwork; w++)
		if (p->work[w].mode != GPUIR_CUDA_MODE_AND)
			for (uint32_t j = p->work[w].first_term; j < p->work[w].first_term + p->work[w].nterms; j++)
				p->seq[nseq++] = j;
	if (nseq == 0 || decode_budget == 0)
		return GPUIR_CUDA_OK;
	p->dec.dec_off = p->dec_buf[0];
	p->dec.list_term = p->dec_buf[1];
	p->dec.list_first = p->dec_buf[2];
	p->dec.list_dst = p->dec_buf[3];
	st = dcache_plan(dc, seg, sc, terms, nterms, p->seq, (uint32_t) nseq, p->nbmw > 0,
					 decode_budget, decode_cache_blocks, &p->dec, &found);
	if (st == GPUIR_CUDA_OK)
	{
		decode_found += found;
		decode_decoded += p->dec.nlists;
	}
	return st;
}

/*
 * fewer_waves: do pairs (query, tile) fill fewer than waves waves of grid
 * thread blocks, the tile kernel's resident ones (resident_grids)?
 * floor(pairs / grid) < waves: pairs < waves x grid, without overflow.
 */
static inline bool
fewer_waves(uint64_t pairs, uint32_t grid, uint64_t waves)
{
	return pairs / grid < waves;
}

/*
 * plan_bmw_as_or: do the BMW queries of the batch run as OR?  Yes when the
 * tiles OR would give them, the window's ntiles for each BMW query, fill
 * fewer than bmw_batch_waves waves of the tile kernel's resident thread
 * blocks (resident_grids), and their lists hold fewer than bmw_batch_total
 * postings together.  BMW spares tiles: the MaxScore
 * kernel takes a query whose essential blocks are few, the tiles skip
 * those whose bound cannot reach the threshold; but its seed and MaxScore
 * kernels are two more launches on the batch's critical path (H200,
 * batches of 16 over 1.2 M documents: 17 us each against a tile kernel of
 * 38 us), which a tile kernel of a few waves cannot repay.  The count is
 * of the queries sent as BMW, some of which plan_query may still run as
 * OR.  Decided for the whole batch: one whose BMW queries were cut one by
 * one would mix both paths and pay both.  H200 (396 tiles a wave),
 * engine_bench, TREC 2005, MQ 2009 and the unseen log, 2026-11-30
 * (bench/results/2026-11-30-h200-bmw-waves.md): batches of 16 over 1.2 M
 * documents (1,184 tiles) ran 22-26% faster (BMW/OR 0.74-0.93x to
 * 0.95-1.24x at k = 10); one query over 40 M (2,442 tiles) keeps BMW
 * (1.37x OR), which a rule by the postings a query, on average or each,
 * had cut (-10%).  Same results either way.
 */
static bool
plan_bmw_as_or(const gpuir_cuda_query *queries, uint32_t nqueries, const gpuir_cuda_term *terms,
			   uint32_t ntiles)
{
	uint64_t	total = 0,
				nbmw = 0;
	uint32_t	tile_grid;

	if (bmw_batch_waves == 0 || bmw_batch_total == 0)
		return false;
	for (uint32_t q = 0; q < nqueries; q++)
	{
		if (queries[q].mode != GPUIR_CUDA_MODE_BMW)
			continue;
		nbmw++;
		for (uint32_t j = 0; j < queries[q].nterms; j++)
			total += terms[queries[q].first_term + j].npostings;
		if (total >= bmw_batch_total)
			return false;
	}
	if (nbmw == 0)
		return false;			/* no BMW query: no grid to look up */
	resident_grids(&tile_grid, NULL, NULL);
	return fewer_waves(nbmw * ntiles, tile_grid, bmw_batch_waves);
}

/*
 * plan_batch: the plan of a batch whose arguments are valid (*p reset:
 * plan_reset);
 * full_regions: no short candidate region (a search again of the queries
 * that spilled)
 */
static gpuir_cuda_status
plan_batch(GpuirSearchPlan *p, GpuirDecodeCache *dc, const gpuir_cuda_segment *seg,
		   const gpuir_cuda_scoring *sc, const gpuir_cuda_query *queries, uint32_t nqueries,
		   const gpuir_cuda_term *terms, uint32_t nterms, bool full_regions)
{
	/* tiles searched: the window's (tile_first is added by the kernels), or all */
	p->ntiles = seg->windowed ? seg->tile_end - seg->tile_first
		: (uint32_t) (((uint64_t) seg->ndocs + GPUIR_TILE_DOCS - 1) / GPUIR_TILE_DOCS);
	{
		gpuir_cuda_status st = plan_reserve(p, nqueries, nterms);

		if (st != GPUIR_CUDA_OK)
			return st;
	}
	p->short_tiles = full_regions ? 0 : plan_short_tiles(queries, nqueries);
	p->bmw_as_or = plan_bmw_as_or(queries, nqueries, terms, p->ntiles);
	for (uint32_t q = 0; q < nqueries && p->ntiles > 0; q++)
	{
		gpuir_cuda_status st = plan_query(p, seg, sc, &queries[q], q, terms);

		if (st != GPUIR_CUDA_OK)
			return st;
	}
	p->chunk_start[p->nchunks] = p->nwork;
	p->chunk_items[p->nchunks] = p->ntile_items;
	try
	{
		gpuir_cuda_status st = plan_decode(p, dc, seg, sc, terms, nterms);

		if (st != GPUIR_CUDA_OK)
			return st;
	}
	catch (...)
	{
		return GPUIR_CUDA_OOM;	/* the list map's allocation (std::bad_alloc) */
	}
	/* the block directory of every list used, from the segment's prefix counts */
	for (uint32_t i = 0; i < nterms; i++)
	{
		const uint32_t f = terms[i].first_block;
		const uint32_t e = f + terms[i].nblocks;

		if (p->used[i] &&
			(seg->h_bad[e] != seg->h_bad[f] || seg->h_desc[e] != seg->h_desc[f + 1]))
			return GPUIR_CUDA_CORRUPT;
	}
	return GPUIR_CUDA_OK;
}

/*
 * The workspace of a call: sub-arrays of the device arena at these byte
 * offsets.  The inputs [0, o_count) are staged in the pinned host buffer
 * and copied with one copy, and [o_count, o_cand) is zeroed.  When
 * [o_count, o_cand) is at most GPUIR_ZERO_BY_COPY bytes (zero_by_copy),
 * its zeros are staged too and go with the inputs' copy: one copy instead
 * of a copy and a memset, each a few microseconds of a small batch's
 * latency.  The outputs are a block of out_bytes (the status word, kmax
 * docIDs and scores a query at r_docids and r_scores, the counts at
 * r_counts) that ends up in the pinned buffer at h_out, past the staged
 * bytes.  When it is at most GPUIR_DIRECT_OUT_BYTES (direct), the final
 * selections write it there, at the host's addresses
 * (gpuir_cuda_search_job), and no copy back follows the kernels (one was
 * about 7 us of a small batch's latency on an H200); otherwise they write
 * it into the arena at o_out, inside the zeroed range, and one copy
 * brings it back: the kernels' writes across the bus were slower than the
 * copy for large outputs (H200, 1.2 M documents, OR and BMW at k = 1000,
 * written in place: batches of 16, 128 KB of outputs, -12 to -16%, of 64
 * and 1,000 -33 to -52%, AND -12% at 1,000; one query, 8 KB, +1 to +3%).
 * The debug statistics are copied back to h_stats.
 */
#define GPUIR_ZERO_BY_COPY		((size_t) 64 << 10)
#define GPUIR_DIRECT_OUT_BYTES	((size_t) 32 << 10)

struct GpuirSearchLayout
{
	size_t		o_work,
				o_terms,
				o_order,
				o_astart,
				o_items,
				o_doff,
				o_lterm,
				o_lfirst,
				o_ldst,
				o_count,
				o_corrupt,
				o_finals,
				o_out,			/* the outputs, unless direct */
				o_thr,
				o_stats,
				o_msn,
				o_nlive,
				o_next,
				o_done,
				o_hist,
				o_cand,
				o_rem,
				o_mswork,
				o_live,
				total;
	size_t		r_docids,		/* in the outputs' block, after the status word */
				r_scores,
				r_counts,
				out_bytes;
	size_t		h_out,			/* the outputs in the pinned buffer */
				h_stats,		/* the debug statistics' copy */
				h_total;
	bool		zero_by_copy;	/* [o_count, o_cand) staged as zeros */
	bool		direct;			/* the kernels write the outputs at h_out */
};

/* search_layout: the workspace of plan p */
static void
search_layout(GpuirSearchLayout *l, const GpuirSearchPlan *p, uint32_t nqueries,
			  uint32_t nterms, uint32_t kmax)
{
	const size_t nout = (size_t) nqueries * kmax;
	uint32_t	ms_max = 0;		/* MaxScore work entries of a chunk, at most */

	l->o_work = 0;
	l->o_terms = align256(l->o_work + sizeof(GpuirSearchWork) * p->nwork);
	l->o_order = align256(l->o_terms + sizeof(gpuir_cuda_term) * nterms);
	l->o_astart = align256(l->o_order + sizeof(uint32_t) * p->norder);
	l->o_items = align256(l->o_astart + sizeof(uint32_t) * ((size_t) p->nwork + 1));
	l->o_doff = align256(l->o_items + sizeof(uint32_t) * p->ntile_items);
	l->o_lterm = align256(l->o_doff + (p->dec.dec_off != NULL ? sizeof(uint32_t) * nterms : 0));
	l->o_lfirst = align256(l->o_lterm + sizeof(uint32_t) * p->dec.nlists);
	l->o_ldst = align256(l->o_lfirst + (p->dec.dec_off != NULL ? sizeof(uint32_t) * (p->dec.nlists + 1)
										: 0));
	l->o_count = align256(l->o_ldst + sizeof(uint32_t) * p->dec.nlists);	/* end of the inputs */
	l->o_corrupt = align256(l->o_count + sizeof(uint32_t) * p->nwork);
	l->o_finals = l->o_corrupt + sizeof(uint32_t);
	l->r_docids = align256(sizeof(uint32_t));	/* after the status word */
	l->r_scores = align256(l->r_docids + sizeof(uint32_t) * nout);
	l->r_counts = align256(l->r_scores + sizeof(float) * nout);
	l->out_bytes = l->r_counts + sizeof(uint32_t) * nqueries;
	l->direct = l->out_bytes <= GPUIR_DIRECT_OUT_BYTES;
	l->o_out = align256(l->o_finals + sizeof(uint32_t));
	l->o_thr = align256(l->o_out + (l->direct ? 0 : l->out_bytes));
	l->o_stats = align256(l->o_thr + sizeof(uint32_t) * p->nwork);
	l->o_msn = align256(l->o_stats + sizeof(GpuirSearchDevStats));
	l->o_nlive = l->o_msn + sizeof(uint32_t) * p->nchunks;
	l->o_next = l->o_nlive + sizeof(uint32_t) * p->nchunks;	/* 2 a chunk: tiles, MaxScore */
	l->o_done = l->o_next + 2 * sizeof(uint32_t) * p->nchunks;	/* a work item's tiles */
	l->o_hist = align256(l->o_done + sizeof(uint32_t) * p->nwork);
	l->o_cand = align256(l->o_hist + sizeof(uint32_t) * GPUIR_HIST_BUCKETS * (size_t) p->nhist);
	l->o_rem = align256(l->o_cand + sizeof(uint64_t) * p->max_chunk_keys);
	l->o_mswork = align256(l->o_rem + sizeof(double) * p->nrem);
	for (uint32_t c = 0; c < p->nchunks; c++)
		ms_max = std::max(ms_max, p->ms_start[p->chunk_start[c + 1]] -
						  p->ms_start[p->chunk_start[c]]);
	l->o_live = align256(l->o_mswork + sizeof(uint2) * (size_t) ms_max);
	l->total = l->o_live + sizeof(uint32_t) * (size_t) p->ntile_items;
	l->zero_by_copy = l->o_cand - l->o_count <= GPUIR_ZERO_BY_COPY;
	l->h_out = align256(l->zero_by_copy ? l->o_cand : l->o_count);
	l->h_stats = align256(l->h_out + l->out_bytes);
	l->h_total = l->h_stats + sizeof(GpuirSearchDevStats);
}

/*
 * A search job (gpuir_cuda.h): its workspace, kept between searches (a
 * device arena and a pinned host buffer, each grown, freed and allocated
 * again half as large again as asked, when a search needs more), its
 * stream, and the search started on it and not yet finished: its plan and
 * layout, whose outputs end up in the pinned buffer.  A
 * workspace is replaced only between searches (gpuir_cuda_search_start
 * finds no search pending), so no work in flight uses it.  Each thread has
 * a default job for gpuir_cuda_search_batch (on the caller's stream);
 * gpuir_cuda_search_job_create makes others, each on a stream of its own,
 * so that searches of two jobs run at once.
 */
struct gpuir_cuda_search_job
{
	uint8_t    *dev;
	size_t		dev_cap;
	/*
	 * pinned (cudaMallocHost): with unified addressing, which every 64-bit
	 * process has, kernels reach it at the host's own addresses (the
	 * runtime API's "automatic mapping of host allocated host memory"), so
	 * the final selections write small outputs there (GpuirSearchLayout)
	 */
	uint8_t    *host;
	size_t		host_cap;
	cudaStream_t stream;		/* the job's own, or the caller's (default job) */
	bool		own_stream;
	cudaEvent_t done;			/* recorded after the last kernel or copy (own stream) */
	bool		pending;		/* a search started and not finished */
	bool		with_stats;
	uint32_t	nfused;			/* the pending search's queries whose final
								 * selections the tile kernel makes */
	uint32_t	nqueries;
	uint32_t	kmax;
	GpuirSearchPlan plan;
	GpuirSearchLayout l;
	/*
	 * The pending search's inputs, kept while any of its queries has a
	 * short region, for search_finish to search again those that spilled
	 * (host arrays that grow, never shrink: the host alone reads them;
	 * freed by ws_release)
	 */
	gpuir_cuda_segment seg;
	gpuir_cuda_scoring sc;
	gpuir_cuda_query *queries;
	size_t		queries_cap;
	gpuir_cuda_term *terms;
	size_t		terms_cap;
	uint32_t	nterms;
	/* the decoded lists kept between its searches (allocated at its first) */
	GpuirDecodeCache *dcache;
};

static thread_local gpuir_cuda_search_job default_job;

/* ws_reserve: make job's workspace hold dev_bytes and host_bytes */
static gpuir_cuda_status
ws_reserve(gpuir_cuda_search_job *job, size_t dev_bytes, size_t host_bytes)
{
	gpuir_cuda_status st = gpuir_cuda_grow((void **) &job->dev, &job->dev_cap, dev_bytes, 1,
										   (size_t) 1 << 20, GPUIR_CUDA_MEM_DEVICE);

	if (st == GPUIR_CUDA_OK)
		st = gpuir_cuda_grow((void **) &job->host, &job->host_cap, host_bytes, 1,
							 (size_t) 1 << 16, GPUIR_CUDA_MEM_PINNED);
	return st;
}

/* ws_release: free job's workspace (no search pending); the first failing free's status */
static gpuir_cuda_status
ws_release(gpuir_cuda_search_job *job)
{
	gpuir_cuda_status st = GPUIR_CUDA_OK;

	if (job->dev != NULL)
		st = gpuir_cuda_check(cudaFree(job->dev));
	if (job->host != NULL)
	{
		gpuir_cuda_status st2 = gpuir_cuda_check(cudaFreeHost(job->host));

		if (st == GPUIR_CUDA_OK)
			st = st2;
	}
	job->dev = job->host = NULL;
	job->dev_cap = job->host_cap = 0;
	if (job->dcache != NULL)
	{
		gpuir_cuda_status st2 = dcache_release(job->dcache);

		if (st == GPUIR_CUDA_OK)
			st = st2;
		delete job->dcache;
		job->dcache = NULL;
	}
	gpuir_cuda_ignore_error(gpuir_cuda_free(job->queries, GPUIR_CUDA_MEM_HOST));
	gpuir_cuda_ignore_error(gpuir_cuda_free(job->terms, GPUIR_CUDA_MEM_HOST));
	job->queries = NULL;
	job->terms = NULL;
	job->queries_cap = job->terms_cap = 0;
	plan_free(&job->plan);
	return st;
}

/* plan_may_spill: has plan p a query with a short region (search_again)? */
static inline bool
plan_may_spill(const GpuirSearchPlan *p)
{
	return p->short_full_keys > 0;
}

/*
 * spill_room: the device arena's (*dev) and the pinned buffer's (*host)
 * bytes beyond plan p's own that searching its short-region queries again
 * may need (search_again), reserved with it so that search_finish does not
 * grow the workspace (a failure there could not make room as a failed
 * start can; the batch then fails).  The search again plans those queries
 * with their full regions, in chunks of at most GPUIR_CAND_BUDGET keys (a
 * larger region alone), and may stage its zeroed range with its inputs
 * (zero_by_copy) where p did not: GPUIR_ZERO_BY_COPY more pinned bytes
 * (the outputs that follow the staged bytes move by no more: o_count is
 * 256-aligned, search_layout).
 * Every other part of its workspace is at most p's (a subset of the
 * queries and lists, the same terms), up to the 256-byte alignment of each
 * part.  Its decoded lists are in the job's decoded area: with reuse it
 * finds there those p's search decoded, and the area grows only when the
 * reuse capacity exceeds the decode budget and the search again takes a
 * list p's left past the budget (an allocation in search_finish, whose
 * failure fails the batch); without reuse they take at most the room p's
 * did.
 */
static void
spill_room(const GpuirSearchPlan *p, size_t *dev, size_t *host)
{
	const uint64_t keys = std::min(std::max((uint64_t) GPUIR_CAND_BUDGET, p->short_full_max),
								   p->short_full_keys);

	*dev = *host = 0;
	if (!plan_may_spill(p))
		return;
	*host = GPUIR_ZERO_BY_COPY;
	if (keys > p->max_chunk_keys)
		*dev = sizeof(uint64_t) * (size_t) (keys - p->max_chunk_keys) + (size_t) 64 * 256;
}

/*
 * search_keep: keep a search's inputs in its job, for search_again: the
 * segment and constants by value (the segment's arrays stay where they
 * are: it must stay resident until search_finish anyway), the queries and
 * terms copied into buffers kept by the job (gpuir_cuda_grow: grown, never
 * allocated per batch once large enough)
 */
static gpuir_cuda_status
search_keep(gpuir_cuda_search_job *job, const gpuir_cuda_segment *seg,
			const gpuir_cuda_scoring *sc, const gpuir_cuda_query *queries, uint32_t nqueries,
			const gpuir_cuda_term *terms, uint32_t nterms)
{
	gpuir_cuda_status st;

	if ((st = gpuir_cuda_grow((void **) &job->queries, &job->queries_cap, nqueries,
							  sizeof(*queries), 64, GPUIR_CUDA_MEM_HOST)) != GPUIR_CUDA_OK ||
		(st = gpuir_cuda_grow((void **) &job->terms, &job->terms_cap, std::max(nterms, 1u),
							  sizeof(*terms), 64, GPUIR_CUDA_MEM_HOST)) != GPUIR_CUDA_OK)
		return st;
	job->seg = *seg;
	job->sc = *sc;
	memcpy(job->queries, queries, sizeof(*queries) * nqueries);
	memcpy(job->terms, terms, sizeof(*terms) * nterms);
	job->nterms = nterms;
	return GPUIR_CUDA_OK;
}

/* gpuir_cuda_workspace_release: contract in gpuir_cuda.h */
extern "C" gpuir_cuda_status
gpuir_cuda_workspace_release(void)
{
	return ws_release(&default_job);
}

/*
 * search_stage: the inputs [0, o_count) of the workspace, staged in host
 * (the pinned buffer): work items, terms, AND orders and thread blocks,
 * the tile kernel's items, and the decoded lists' places; with
 * zero_by_copy, also the zeros of [o_count, o_cand).
 */
static void
search_stage(uint8_t *host, const GpuirSearchPlan *p, const GpuirSearchLayout *l,
			 const gpuir_cuda_term *terms, uint32_t nterms)
{
	memcpy(host + l->o_work, p->work, sizeof(GpuirSearchWork) * p->nwork);
	if (nterms > 0)
		memcpy(host + l->o_terms, terms, sizeof(gpuir_cuda_term) * nterms);
	if (p->norder > 0)
		memcpy(host + l->o_order, p->order, sizeof(uint32_t) * p->norder);
	memcpy(host + l->o_astart, p->and_start, sizeof(uint32_t) * ((size_t) p->nwork + 1));
	if (p->ntile_items > 0)
		memcpy(host + l->o_items, p->tile_items, sizeof(uint32_t) * p->ntile_items);
	if (p->dec.dec_off != NULL)
	{
		memcpy(host + l->o_doff, p->dec.dec_off, sizeof(uint32_t) * nterms);
		memcpy(host + l->o_lterm, p->dec.list_term, sizeof(uint32_t) * p->dec.nlists);
		memcpy(host + l->o_lfirst, p->dec.list_first, sizeof(uint32_t) * (p->dec.nlists + 1));
		memcpy(host + l->o_ldst, p->dec.list_dst, sizeof(uint32_t) * p->dec.nlists);
	}
	if (l->zero_by_copy)
		memset(host + l->o_count, 0, l->o_cand - l->o_count);
}

/*
 * search_outputs_init: the outputs the kernels write into the pinned
 * buffer (direct), before they run: the status word and the counts 0, and
 * zeros in the rows of the queries that plan p left out (no document can
 * qualify: count 0; p's work items are in query order).  The final
 * selections write the other rows whole (a spilled query's count only,
 * its row coming from search_again), their counts and, last, the status.
 * (Otherwise the arena's outputs are in the zeroed range.)
 */
static void
search_outputs_init(uint8_t *host, const GpuirSearchPlan *p, const GpuirSearchLayout *l,
					uint32_t nqueries, uint32_t kmax)
{
	uint8_t    *out = host + l->h_out;
	uint32_t   *docids = (uint32_t *) (out + l->r_docids);
	float	   *scores = (float *) (out + l->r_scores);
	uint32_t	w = 0;

	if (!l->direct)
		return;
	*(uint32_t *) out = 0;
	memset(out + l->r_counts, 0, sizeof(uint32_t) * nqueries);
	if (p->nwork == nqueries)
		return;					/* none left out (the usual case) */
	for (uint32_t q = 0; q < nqueries; q++)
	{
		if (w < p->nwork && p->work[w].qindex == q)
		{
			w++;
			continue;
		}
		memset(docids + (size_t) q * kmax, 0, sizeof(uint32_t) * kmax);
		memset(scores + (size_t) q * kmax, 0, sizeof(float) * kmax);
	}
}

/*
 * resident_grids: the thread blocks of the tile and MaxScore kernels that
 * the current device holds at once (its SMs times each kernel's
 * occupancy), their grids when they have more work than that; asked of the
 * runtime once per device and thread, after setting the tile kernel's
 * shared memory attribute (which the occupancy needs, and every launch of
 * the tile kernel: search_launch calls this before its first launch;
 * plan_short_tiles and plan_bmw_as_or when they need the grid).
 * A failed query clears its error, gives 1024 and is tried again next
 * call.  ms and pdl may be NULL.  *pdl: whether the search kernels may go
 * as programmatic dependent launches (SearchLauncher): the device runs
 * their sm_90 code (its PTX version 90, as CUB's PtxVersion reads it),
 * which waits for the kernel before (gpuir_pdl_start), and so has
 * programmatic dependent launch (compute capability 9.x); a newer device
 * compiles the compute_75 PTX at load, whose kernels do not wait.
 */
static void
resident_grids(uint32_t *tile, uint32_t *ms, bool *pdl)
{
	static thread_local int cached_dev = -1;
	static thread_local uint32_t cached_tile,
				cached_ms;
	static thread_local bool cached_pdl;
	cudaFuncAttributes fa;
	int			dev,
				sms,
				per_tile,
				per_ms;

	*tile = 1024;
	if (ms != NULL)
		*ms = 1024;
	if (pdl != NULL)
		*pdl = false;
	if (cudaGetDevice(&dev) != cudaSuccess)
	{
		(void) cudaGetLastError();
		return;
	}
	if (dev != cached_dev)
	{
		if (cudaFuncSetAttribute(gpuir_search_tile_kernel,
								 cudaFuncAttributeMaxDynamicSharedMemorySize,
								 (int) sizeof(GpuirTileSmem)) != cudaSuccess ||
			cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
			cudaFuncGetAttributes(&fa, gpuir_search_final_kernel) != cudaSuccess ||
			cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_tile, gpuir_search_tile_kernel,
														  GPUIR_SEARCH_THREADS,
														  sizeof(GpuirTileSmem)) != cudaSuccess ||
			cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_ms, gpuir_search_maxscore_kernel,
														  GPUIR_AND_THREADS, 0) != cudaSuccess ||
			sms < 1 || per_tile < 1 || per_ms < 1)
		{
			(void) cudaGetLastError();
			return;
		}
		cached_dev = dev;
		cached_tile = (uint32_t) sms * (uint32_t) per_tile;
		cached_ms = (uint32_t) sms * (uint32_t) per_ms;
		cached_pdl = fa.ptxVersion >= 90;
	}
	*tile = cached_tile;
	if (ms != NULL)
		*ms = cached_ms;
	if (pdl != NULL)
		*pdl = cached_pdl;
}

/* gpuir_cuda_search_tile_blocks: contract in gpuir_cuda.h */
extern "C" uint32_t
gpuir_cuda_search_tile_blocks(void)
{
	uint32_t	tile_grid;

	resident_grids(&tile_grid, NULL, NULL);
	return tile_grid;
}

/*
 * SearchLauncher: search_launch's kernel launches on stream s.  In a call
 * of at most GPUIR_PDL_MAX_QUERIES queries with work (GpuirSearchPlan.nwork:
 * those with a list), each kernel after its first goes
 * with programmatic dependent launch where the device has it (every search
 * kernel starts with gpuir_pdl_start): its launch overlaps the end of the
 * kernel before it rather than following it.  The first waits in full for
 * what precedes it on the stream (the call's copies).  Returns the launch
 * status.  H200, 40 M documents, against launches in turn (two rounds,
 * best of each): one query at a time 1.005-1.114x the q/s on the TREC 2005
 * and MQ 2009 logs (AND, OR and BMW, k = 10 and 1000), but in batches of 16
 * AND k = 1000 0.92-0.97x (bench/results/2026-11-30-h200-pdl.md), hence
 * small calls only.
 */
#define GPUIR_PDL_MAX_QUERIES	4

/*
 * The tile kernel makes a chunk's final selections (search_launch) when
 * its pairs fill fewer than fused_waves waves of its resident thread
 * blocks (fewer_waves: fewer than this many whole ones; the calling
 * thread's, gpuir_cuda_search_set_fused_waves).  H200, TREC 2005 over
 * 1.2 M documents, OR at k = 10, with them in every chunk that qualified
 * otherwise, against the base's final kernel: batches of 16 (3 waves) +3%,
 * of 64 (12 waves) -5%, of 1,000 (190 waves) -10%, where AND and BMW,
 * which never had them, gained from the outputs written in place
 * (bench/results/2026-12-01-h200-direct-outputs.md).
 */
static thread_local uint32_t fused_waves = GPUIR_CUDA_FUSED_WAVES;

/* gpuir_cuda_search_set_fused_waves: contract in gpuir_cuda.h */
extern "C" void
gpuir_cuda_search_set_fused_waves(uint32_t waves)
{
	fused_waves = waves;
}

struct SearchLauncher
{
	cudaStream_t s;
	bool		pdl;			/* the device has programmatic dependent launch */
	bool		after;			/* a kernel of this call is enqueued before */

	template <typename... Param, typename... Arg>
	gpuir_cuda_status
	operator() (void (*kernel) (Param...), uint32_t grid, uint32_t threads, size_t smem,
				Arg &&... args)
	{
		cudaLaunchConfig_t cfg = {};
		cudaLaunchAttribute attr[1];

		attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
		attr[0].val.programmaticStreamSerializationAllowed = 1;
		cfg.gridDim = dim3(grid);
		cfg.blockDim = dim3(threads);
		cfg.dynamicSmemBytes = smem;
		cfg.stream = s;
		cfg.attrs = attr;
		cfg.numAttrs = (pdl && after) ? 1 : 0;
		after = true;
		return gpuir_cuda_check(cudaLaunchKernelEx(&cfg, kernel, std::forward<Arg>(args)...));
	}
};

/*
 * search_launch: enqueue the kernels on s over the workspace arena: the
 * decode kernel (lists of OR and BMW queries), then per chunk the seed
 * (BMW queries: thresholds, the tiles' live list and MaxScore's work
 * entries), tile (OR queries and the BMW queries left to the tiles),
 * MaxScore (the seed kernel's work entries), AND, (partial) and final
 * kernels, the last writing the outputs into host, the job's pinned
 * buffer (l->direct), or into the arena (GpuirSearchLayout).
 * Returns the launch status; *nfused the queries whose final selections
 * the tile kernel makes (gpuir_cuda_search_stats.fused_queries).
 */
static gpuir_cuda_status
search_launch(const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc,
			  const GpuirSearchPlan *p, const GpuirSearchLayout *l, uint8_t *arena,
			  uint8_t *host, const GpuirDecodeCache *dc, uint32_t kmax, bool with_stats,
			  cudaStream_t s, uint32_t *nfused)
{
	uint8_t    *out = l->direct ? host + l->h_out : arena + l->o_out;
	const gpuir_cuda_segment dseg = *seg;
	const gpuir_cuda_scoring dsc = *sc;
	const uint32_t ntiles = p->ntiles;
	uint32_t	tile_grid,
				ms_grid;
	const GpuirSearchWork *d_work = (const GpuirSearchWork *) (arena + l->o_work);
	const gpuir_cuda_term *d_terms = (const gpuir_cuda_term *) (arena + l->o_terms);
	const uint32_t *d_order = (const uint32_t *) (arena + l->o_order);
	const uint32_t *d_astart = (const uint32_t *) (arena + l->o_astart);
	const uint32_t *d_items = (const uint32_t *) (arena + l->o_items);
	uint32_t   *d_count = (uint32_t *) (arena + l->o_count);
	uint32_t   *d_corrupt = (uint32_t *) (arena + l->o_corrupt);
	uint64_t   *d_cand = (uint64_t *) (arena + l->o_cand);
	uint32_t   *d_thr = (uint32_t *) (arena + l->o_thr);
	double	   *d_rem = (double *) (arena + l->o_rem);
	uint32_t   *d_msn = (uint32_t *) (arena + l->o_msn);
	uint32_t   *d_nlive = (uint32_t *) (arena + l->o_nlive);
	uint32_t   *d_next = (uint32_t *) (arena + l->o_next);
	uint32_t   *d_done = (uint32_t *) (arena + l->o_done);
	/* where the final selections write, in every chunk */
	const GpuirFinalOut fout = {
		kmax, (uint32_t *) (out + l->r_docids), (float *) (out + l->r_scores),
		(uint32_t *) (out + l->r_counts), d_corrupt, (uint32_t *) (arena + l->o_finals),
		p->nwork, (uint32_t *) out
	};
	uint32_t   *d_hist = (uint32_t *) (arena + l->o_hist);
	uint32_t   *d_live = (uint32_t *) (arena + l->o_live);
	uint2	   *d_mswork = (uint2 *) (arena + l->o_mswork);
	GpuirSearchDevStats *d_stats = with_stats ? (GpuirSearchDevStats *) (arena + l->o_stats) : NULL;
	const uint32_t ndec = plan_area_blocks(p);
	const uint32_t ndecode = plan_decode_blocks(p);
	/* BMW queries read the decoded area: the seed kernel makes the tiles' live lists */
	const bool	seeded = ndec > 0 && p->nbmw > 0;
	/* the batch allows the tile kernel's final selections (the chunk decides the rest) */
	const bool	may_fuse = !seeded && kmax <= GPUIR_FINAL_THREADS;
	/* the job's decoded area (gpuir_decode_cache.cuh), when the tiles read it */
	const GpuirDecodeArrays da = (ndec > 0) ? dcache_arrays(dc)
		: GpuirDecodeArrays{NULL, NULL, NULL, NULL};
	bool		pdl;
	GpuirDecoded dec;
	gpuir_cuda_status st;

	dec.off = (ndec > 0) ? (const uint32_t *) (arena + l->o_doff) : NULL;
	dec.doc = da.doc;
	dec.score = da.score;
	dec.ub = da.ub;
	dec.top = da.top;

	/*
	 * also lets the tile kernel use its shared memory (above the 48 KB of a
	 * default launch; if that failed, the tile kernel's launch fails) and
	 * says whether the kernels may go as programmatic dependent launches
	 */
	resident_grids(&tile_grid, &ms_grid, &pdl);

	SearchLauncher launch = {s, pdl && p->nwork <= GPUIR_PDL_MAX_QUERIES, false};

	*nfused = 0;

	if (ndecode > 0)
	{
		const uint32_t per = GPUIR_SEARCH_THREADS / 32;

		if ((st = launch(gpuir_search_decode_kernel, (ndecode + per - 1) / per,
						 GPUIR_SEARCH_THREADS, 0,
						 dseg, dsc, d_terms, (const uint32_t *) (arena + l->o_lterm),
						 (const uint32_t *) (arena + l->o_lfirst),
						 (const uint32_t *) (arena + l->o_ldst), p->dec.nlists,
						 da.doc, da.score, da.ub, da.top,
						 p->nbmw > 0, d_corrupt, d_stats)) != GPUIR_CUDA_OK)
			return st;
		GPUIR_TRACE_EVENT("decode", s);
	}
	for (uint32_t c = 0; c < p->nchunks; c++)
	{
		const uint32_t w0 = p->chunk_start[c];
		const uint32_t nw = p->chunk_start[c + 1] - w0;

		const uint32_t nand = p->and_start[w0 + nw] - p->and_start[w0];
		const uint32_t nms = (ndec > 0) ? p->ms_start[w0 + nw] - p->ms_start[w0] : 0;
		const uint32_t i0 = p->chunk_items[c];
		const uint32_t ni = p->chunk_items[c + 1] - i0;
		const uint64_t pairs = (uint64_t) ni * ntiles;	/* (query, tile) */

		if (seeded)
		{
			if ((st = launch(gpuir_search_seed_kernel, nw, GPUIR_SEED_THREADS, 0,
							 d_work + w0, d_terms, dec, maxscore_share,
							 gpuir_prior_bound(*seg, *sc), d_thr + w0, d_rem, d_mswork,
							 d_msn + c, d_live + p->chunk_items[c], d_nlive + c,
							 d_stats)) != GPUIR_CUDA_OK)
				return st;
			GPUIR_TRACE_EVENT("seed", s);
		}
		/*
		 * the tile kernel makes the chunk's final selections when it has
		 * them all (gpuir_search_tile_kernel): every item a tile item, none
		 * a BMW item the seed kernel may give the MaxScore kernel (not
		 * seeded: then no MaxScore work either), the batch's kmax <=
		 * GPUIR_FINAL_THREADS (may_fuse), no partial selection; and when
		 * its pairs fill fewer than fused_waves waves of its thread blocks:
		 * each pair then costs a block a fence and an atomic (about 1 us on
		 * an H200), against one launch less on the batch's critical path
		 */
		const bool	fused = may_fuse && ni == nw && !p->chunk_part[c] &&
			fewer_waves(pairs, tile_grid, fused_waves);
		const GpuirTileFinal fin = {fused ? d_done + w0 : NULL, fout};

		*nfused += fused ? nw : 0;
		if (ni > 0)
		{
			if ((st = launch(gpuir_search_tile_kernel,
							 (uint32_t) std::min(pairs, (uint64_t) tile_grid),
							 GPUIR_SEARCH_THREADS, sizeof(GpuirTileSmem),
							 dseg, dsc, d_work + w0, seeded ? d_live + i0 : d_items + i0, ni,
							 seeded ? d_nlive + c : NULL, ntiles, d_next + 2 * c, d_terms, dec,
							 d_thr + w0, d_cand, d_count + w0, d_hist, d_corrupt,
							 d_stats, fin)) != GPUIR_CUDA_OK)
				return st;
			GPUIR_TRACE_EVENT("tile", s);
		}
		if (nms > 0)
		{
			if ((st = launch(gpuir_search_maxscore_kernel, std::min(nms, ms_grid),
							 GPUIR_AND_THREADS, 0,
							 dseg, dsc, d_work + w0, d_mswork, d_msn + c, d_next + 2 * c + 1,
							 d_terms, dec, d_rem, d_thr + w0, d_cand, d_count + w0,
							 d_corrupt)) != GPUIR_CUDA_OK)
				return st;
			GPUIR_TRACE_EVENT("maxscore", s);
		}
		if (nand > 0)
		{
			if ((st = launch(gpuir_search_and_kernel, nand, GPUIR_AND_THREADS, 0,
							 dseg, dsc, d_work + w0, d_astart + w0, nw, d_terms, d_order,
							 d_thr + w0, d_cand, d_count + w0, d_corrupt,
							 d_stats)) != GPUIR_CUDA_OK)
				return st;
			GPUIR_TRACE_EVENT("and", s);
		}
		if (p->chunk_part[c])
		{
			if ((st = launch(gpuir_search_partial_kernel, nw * GPUIR_PART_SLICES,
							 GPUIR_FINAL_THREADS, 0,
							 d_work + w0, d_cand, d_count + w0, d_thr + w0)) != GPUIR_CUDA_OK)
				return st;
			GPUIR_TRACE_EVENT("partial", s);
		}
		if (fused)
			continue;
		if ((st = launch(gpuir_search_final_kernel, nw, GPUIR_FINAL_THREADS, 0,
						 d_work + w0, d_cand, d_count + w0, d_thr + w0, fout,
						 d_stats)) != GPUIR_CUDA_OK)
			return st;
		GPUIR_TRACE_EVENT("final", s);
	}
	return GPUIR_CUDA_OK;
}

/*
 * search_start: validate, plan chunks and the lists decoded once, stage and
 * upload the query arrays into job's workspace, and enqueue on its stream
 * the kernels (search_launch, whose final selections write the outputs
 * into the pinned buffer when they are small, l->direct) and the copy
 * back of the outputs otherwise and, with_stats, of the statistics; the
 * search is then pending until search_finish.  On a failure nothing stays
 * enqueued and nothing is pending.  Arguments as gpuir_cuda_search_batch's
 * (the outputs' checks are search_finish's).
 */
static gpuir_cuda_status
search_start(gpuir_cuda_search_job *job, const gpuir_cuda_segment *seg,
			 const gpuir_cuda_scoring *sc, const gpuir_cuda_query *queries, uint32_t nqueries,
			 const gpuir_cuda_term *terms, uint32_t nterms, uint32_t kmax, bool with_stats,
			 bool full_regions)
{
	cudaStream_t s = job->stream;
	GpuirSearchLayout *l = &job->l;
	size_t		dev_extra,
				host_extra,
				up;
	gpuir_cuda_status st;

	if (job->pending)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	job->nqueries = nqueries;
	job->kmax = kmax;
	job->with_stats = with_stats;
	if (nqueries == 0)
		return GPUIR_CUDA_OK;
	if (!search_args_valid(seg, sc, queries, nqueries, terms, nterms, kmax))
		return GPUIR_CUDA_INVALID_ARGUMENT;
	GPUIR_TRACE_START(nqueries, queries, kmax);

	plan_reset(&job->plan);
	if (job->dcache == NULL)
	{
		job->dcache = new (std::nothrow) GpuirDecodeCache();
		if (job->dcache == NULL)
			return GPUIR_CUDA_OOM;
	}
	if ((st = plan_batch(&job->plan, job->dcache, seg, sc, queries, nqueries, terms, nterms,
						 full_regions)) != GPUIR_CUDA_OK ||
		(plan_may_spill(&job->plan) &&
		 (st = search_keep(job, seg, sc, queries, nqueries, terms, nterms)) != GPUIR_CUDA_OK))
		goto done;
	GPUIR_TRACE_HOST("plan");
	search_layout(l, &job->plan, nqueries, nterms, kmax);
	spill_room(&job->plan, &dev_extra, &host_extra);
	if ((st = ws_reserve(job, l->total + dev_extra, l->h_total + host_extra)) != GPUIR_CUDA_OK)
		goto done;
	search_stage(job->host, &job->plan, l, terms, nterms);
	search_outputs_init(job->host, &job->plan, l, nqueries, kmax);
	GPUIR_TRACE_HOST("layout, stage");
	GPUIR_TRACE_EVENT("start", s);

	/* the inputs, with the zeroed range when staged (zero_by_copy) */
	up = l->zero_by_copy ? l->o_cand : l->o_count;
	if ((up > 0 &&
		 (st = gpuir_cuda_check(cudaMemcpyAsync(job->dev, job->host, up, cudaMemcpyHostToDevice,
												s))) != GPUIR_CUDA_OK) ||
		(!l->zero_by_copy &&
		 (st = gpuir_cuda_check(cudaMemsetAsync(job->dev + l->o_count, 0, l->o_cand - l->o_count,
												s))) != GPUIR_CUDA_OK))
		goto fail;
	GPUIR_TRACE_EVENT("upload, zero", s);
	if ((st = search_launch(seg, sc, &job->plan, l, job->dev, job->host, job->dcache, kmax,
							with_stats, s, &job->nfused)) != GPUIR_CUDA_OK)
		goto fail;

	/* the outputs, unless written in place; the debug statistics */
	if ((!l->direct &&
		 (st = gpuir_cuda_check(cudaMemcpyAsync(job->host + l->h_out, job->dev + l->o_out,
												l->out_bytes, cudaMemcpyDeviceToHost,
												s))) != GPUIR_CUDA_OK) ||
		(with_stats &&
		 (st = gpuir_cuda_check(cudaMemcpyAsync(job->host + l->h_stats, job->dev + l->o_stats,
												sizeof(GpuirSearchDevStats),
												cudaMemcpyDeviceToHost, s))) != GPUIR_CUDA_OK) ||
		(job->own_stream &&
		 (st = gpuir_cuda_check(cudaEventRecord(job->done, s))) != GPUIR_CUDA_OK))
		goto fail;
	if (!l->direct)
		GPUIR_TRACE_EVENT("download", s);
	GPUIR_TRACE_HOST("enqueue");
	job->pending = true;
	return GPUIR_CUDA_OK;

fail:
	/* wait for enqueued work before the workspace may be reused */
	gpuir_cuda_ignore_error(cudaStreamSynchronize(s));
done:
	/* the lists the plan gave room may not have been decoded */
	dcache_clear(job->dcache);
	return st;
}

static gpuir_cuda_status search_finish(gpuir_cuda_search_job *job, uint32_t *out_docids,
										float *out_scores, uint32_t *out_counts,
										gpuir_cuda_search_stats *stats);

/*
 * search_again: after search_finish copied the outputs of job's search
 * (its queries kept by search_keep), search again, with their full
 * candidate regions, the queries whose short region spilled (count
 * GPUIR_COUNT_SPILLED), and write their rows and counts; count them (the
 * thread's searched_again) and, with stats (the first search's debug
 * statistics), add the second search's blocks decoded, tiles pruned,
 * partial selections and tile keys and count the queries there too (its
 * queries ran as OR: no BMW or MaxScore ones to add; a BMW query that the
 * batch rule ran as OR runs as OR again, since a subset of the batch fills
 * no more waves and holds no more postings, plan_bmw_as_or).
 * Synchronous.  The memory is allocated here: spills are rare
 * (gpuir_tile_hist_raise).
 */
static gpuir_cuda_status
search_again(gpuir_cuda_search_job *job, uint32_t *out_docids, float *out_scores,
			 uint32_t *out_counts, gpuir_cuda_search_stats *stats)
{
	/* the first search's; the second one's search_start overwrites them */
	const uint32_t nqueries = job->nqueries;
	const uint32_t kmax = job->kmax;
	const bool	with_stats = job->with_stats && stats != NULL;
	uint32_t	n = 0;
	uint32_t   *idx,
			   *docids,
			   *counts;
	float	   *scores;
	gpuir_cuda_query *sub;
	gpuir_cuda_search_stats again;
	gpuir_cuda_status st = GPUIR_CUDA_OOM;

	for (uint32_t q = 0; q < nqueries; q++)
		n += (out_counts[q] == GPUIR_COUNT_SPILLED);
	if (n == 0)
		return GPUIR_CUDA_OK;
	idx = (uint32_t *) malloc(sizeof(uint32_t) * n);
	sub = (gpuir_cuda_query *) malloc(sizeof(gpuir_cuda_query) * n);
	docids = (uint32_t *) malloc(sizeof(uint32_t) * n * (size_t) kmax);
	scores = (float *) malloc(sizeof(float) * n * (size_t) kmax);
	counts = (uint32_t *) malloc(sizeof(uint32_t) * n);
	if (idx != NULL && sub != NULL && docids != NULL && scores != NULL && counts != NULL)
	{
		n = 0;
		for (uint32_t q = 0; q < nqueries; q++)
			if (out_counts[q] == GPUIR_COUNT_SPILLED)
			{
				idx[n] = q;
				sub[n++] = job->queries[q];
			}
		st = search_start(job, &job->seg, &job->sc, sub, n, job->terms, job->nterms, kmax,
						  with_stats, true);
		if (st == GPUIR_CUDA_OK)
			st = search_finish(job, docids, scores, counts, with_stats ? &again : NULL);
	}
	if (st == GPUIR_CUDA_OK)
	{
		searched_again += n;
		for (uint32_t i = 0; i < n; i++)
		{
			memcpy(out_docids + (size_t) idx[i] * kmax, docids + (size_t) i * kmax,
				   sizeof(uint32_t) * kmax);
			memcpy(out_scores + (size_t) idx[i] * kmax, scores + (size_t) i * kmax,
				   sizeof(float) * kmax);
			out_counts[idx[i]] = counts[i];
		}
		if (with_stats)
		{
			stats->blocks_decoded += again.blocks_decoded;
			stats->tiles_pruned += again.tiles_pruned;
			stats->partial_queries += again.partial_queries;
			stats->tile_keys += again.tile_keys;
			stats->fused_queries += again.fused_queries;
			stats->spilled_queries += n;
		}
	}
	free(idx);
	free(sub);
	free(docids);
	free(scores);
	free(counts);
	return st;
}

/*
 * search_finish: wait for job's pending search and copy its outputs (a
 * final selection's failed check, GPUIR_FAILED_INTERNAL, is
 * GPUIR_CUDA_ERROR, a corrupt block GPUIR_CUDA_CORRUPT, and so is a status
 * word without GPUIR_OUTPUT_DONE: GPUIR_CUDA_CORRUPT when the device's
 * failure bits say a block was corrupt, else GPUIR_CUDA_ERROR); OK at once
 * when none is pending
 * (a search of no query).  The queries whose short region spilled are
 * searched again (search_again) before it returns.  Nothing is pending
 * afterwards.
 */
static gpuir_cuda_status
search_finish(gpuir_cuda_search_job *job, uint32_t *out_docids, float *out_scores,
			  uint32_t *out_counts, gpuir_cuda_search_stats *stats)
{
	const GpuirSearchLayout *l = &job->l;
	const size_t nout = (size_t) job->nqueries * job->kmax;
	const uint8_t *out;
	uint32_t	status;
	gpuir_cuda_status st;
	bool		spill_possible;

	if (stats != NULL)
		memset(stats, 0, sizeof(*stats));
	if (!job->pending)
		return GPUIR_CUDA_OK;
	job->pending = false;
	GPUIR_TRACE_HOST("caller");
	st = gpuir_cuda_check(cudaStreamSynchronize(job->stream));
	GPUIR_TRACE_HOST("wait");
	if (st == GPUIR_CUDA_OK &&
		(out_docids == NULL || out_scores == NULL || out_counts == NULL))
		st = GPUIR_CUDA_INVALID_ARGUMENT;
	if (st != GPUIR_CUDA_OK)
	{
		dcache_clear(job->dcache);	/* the decode may not have run */
		return st;
	}
	out = job->host + l->h_out;
	/* the final selections' status (gpuir_final_done); none without work items */
	status = (job->plan.nwork > 0) ? *(const volatile uint32_t *) out : GPUIR_OUTPUT_DONE;
	memcpy(out_docids, out + l->r_docids, sizeof(uint32_t) * nout);
	memcpy(out_scores, out + l->r_scores, sizeof(float) * nout);
	memcpy(out_counts, out + l->r_counts, sizeof(uint32_t) * job->nqueries);
	if (!(status & GPUIR_OUTPUT_DONE))
	{
		/*
		 * Some selection was not made: the tile kernel stops when a block
		 * was corrupt, its selections with it.  The failure bits, then.
		 */
		st = gpuir_cuda_check(cudaMemcpyAsync(&status, job->dev + l->o_corrupt, sizeof(status),
											  cudaMemcpyDeviceToHost, job->stream));
		if (st == GPUIR_CUDA_OK)
			st = gpuir_cuda_check(cudaStreamSynchronize(job->stream));
		if (st == GPUIR_CUDA_OK && status == 0)
		{
			gpuir_cuda_set_detail("gpuir_search_final_kernel",
								  "the batch completed without every final selection");
			st = GPUIR_CUDA_ERROR;
		}
	}
	if (st == GPUIR_CUDA_OK && (status & GPUIR_FAILED_INTERNAL))
	{
		gpuir_cuda_set_detail("gpuir_search_final_kernel",
							  "fewer keys than the count to return survived the selection");
		st = GPUIR_CUDA_ERROR;
	}
	else if (st == GPUIR_CUDA_OK && (status & ~GPUIR_OUTPUT_DONE))
		st = GPUIR_CUDA_CORRUPT;
	if (st != GPUIR_CUDA_OK)
		dcache_clear(job->dcache);	/* a corrupt block's list holds padding */
	if (stats != NULL && job->with_stats)
	{
		GpuirSearchDevStats hstats;

		memcpy(&hstats, job->host + l->h_stats, sizeof(hstats));
		stats->blocks_decoded = hstats.blocks_decoded;
		stats->tiles_pruned = hstats.tiles_pruned;
		stats->maxscore_queries = hstats.maxscore_queries;
		stats->partial_queries = hstats.partial_queries;
		stats->tile_keys = hstats.tile_keys;
		stats->bmw_queries = job->plan.nbmw;
		stats->fused_queries = job->nfused;
	}
	spill_possible = plan_may_spill(&job->plan);
	GPUIR_TRACE_HOST("outputs");
	GPUIR_TRACE_FINISH();
	if (st == GPUIR_CUDA_OK && spill_possible)
		st = search_again(job, out_docids, out_scores, out_counts, stats);
	return st;
}

/*
 * search_batch: gpuir_cuda_search_batch with optional debug statistics
 * (stats may be NULL): search_start and search_finish on the thread's
 * default job, on the caller's stream.
 */
static gpuir_cuda_status
search_batch(const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc,
			 const gpuir_cuda_query *queries, uint32_t nqueries,
			 const gpuir_cuda_term *terms, uint32_t nterms, uint32_t kmax,
			 uint32_t *out_docids, float *out_scores, uint32_t *out_counts,
			 void *stream, gpuir_cuda_search_stats *stats)
{
	gpuir_cuda_status st;

	if (stats != NULL)
		memset(stats, 0, sizeof(*stats));
	if (nqueries > 0 && (out_docids == NULL || out_scores == NULL || out_counts == NULL))
		return GPUIR_CUDA_INVALID_ARGUMENT;
	default_job.stream = (cudaStream_t) stream;
	st = search_start(&default_job, seg, sc, queries, nqueries, terms, nterms, kmax,
					  stats != NULL, false);
	if (st != GPUIR_CUDA_OK)
		return st;
	return search_finish(&default_job, out_docids, out_scores, out_counts, stats);
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

/* gpuir_cuda_search_job_create: contract in gpuir_cuda.h */
extern "C" gpuir_cuda_status
gpuir_cuda_search_job_create(gpuir_cuda_search_job **jobp)
{
	gpuir_cuda_search_job *job;
	gpuir_cuda_status st;

	if (jobp == NULL)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	*jobp = NULL;
	job = (gpuir_cuda_search_job *) calloc(1, sizeof(gpuir_cuda_search_job));
	if (job == NULL)
		return GPUIR_CUDA_OOM;
	if ((st = gpuir_cuda_check(cudaStreamCreateWithFlags(&job->stream,
														 cudaStreamNonBlocking))) != GPUIR_CUDA_OK)
	{
		free(job);
		return st;
	}
	if ((st = gpuir_cuda_check(cudaEventCreateWithFlags(&job->done,
														cudaEventDisableTiming))) != GPUIR_CUDA_OK)
	{
		gpuir_cuda_ignore_error(cudaStreamDestroy(job->stream));
		free(job);
		return st;
	}
	job->own_stream = true;
	*jobp = job;
	return GPUIR_CUDA_OK;
}

/* gpuir_cuda_search_job_free: contract in gpuir_cuda.h */
extern "C" void
gpuir_cuda_search_job_free(gpuir_cuda_search_job *job)
{
	if (job == NULL)
		return;
	if (job->pending)
	{
		gpuir_cuda_ignore_error(cudaStreamSynchronize(job->stream));
		job->pending = false;
	}
	(void) ws_release(job);
	gpuir_cuda_ignore_error(cudaEventDestroy(job->done));
	gpuir_cuda_ignore_error(cudaStreamDestroy(job->stream));
	free(job);
}

/* gpuir_cuda_search_job_release: contract in gpuir_cuda.h */
extern "C" gpuir_cuda_status
gpuir_cuda_search_job_release(gpuir_cuda_search_job *job)
{
	if (job == NULL || job->pending)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	return ws_release(job);
}

/* gpuir_cuda_search_start: contract in gpuir_cuda.h */
extern "C" gpuir_cuda_status
gpuir_cuda_search_start(gpuir_cuda_search_job *job, const gpuir_cuda_segment *seg,
						const gpuir_cuda_scoring *sc, const gpuir_cuda_query *queries,
						uint32_t nqueries, const gpuir_cuda_term *terms, uint32_t nterms,
						uint32_t kmax)
{
	if (job == NULL || !job->own_stream)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	return search_start(job, seg, sc, queries, nqueries, terms, nterms, kmax, false, false);
}

/* gpuir_cuda_search_done: contract in gpuir_cuda.h */
extern "C" bool
gpuir_cuda_search_done(const gpuir_cuda_search_job *job)
{
	return job == NULL || !job->pending || cudaEventQuery(job->done) != cudaErrorNotReady;
}

/* gpuir_cuda_search_finish: contract in gpuir_cuda.h */
extern "C" gpuir_cuda_status
gpuir_cuda_search_finish(gpuir_cuda_search_job *job, uint32_t *out_docids, float *out_scores,
						 uint32_t *out_counts)
{
	if (job == NULL)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	return search_finish(job, out_docids, out_scores, out_counts, NULL);
}
