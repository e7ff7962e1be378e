/*-------------------------------------------------------------------------
 *
 * gpuir_search_maxscore.cuh
 *	  BMW queries before and instead of the tiles (gpuir_search.cu): a
 *	  threshold seeded from the lists alone, then a search driven by the
 *	  essential lists' blocks whose bounds reach it, which looks their
 *	  documents up in the other lists, so that the work follows the
 *	  postings that can matter and not the docID space.
 *
 * Seed (Kane & Tompa, "Split-lists and initial thresholds for WAND-based
 * search", SIGIR 2018: an initial threshold from single-term scores): the
 * decode kernel keeps, for every decoded block, its largest contribution of
 * a document in the window that is not deleted (0 when that document is
 * deleted).  k distinct blocks of one list are k distinct documents, and a
 * document's score, a float sum from 0.0f of non-negative contributions
 * (BMW runs only with every idf >= 0), is at least each of them; so the
 * k-th largest of a list's block maxima is a lower bound of the query's
 * k-th best score, and so is the largest such value over the query's
 * lists.  gpuir_search_seed_kernel finds it (a value with at least k
 * maxima at or above it, by two 256-bin histograms of the float bits) and
 * raises the query's threshold with it before any tile runs.
 *
 * MaxScore (Turtle & Flood, "Query evaluation: strategies and
 * optimizations", IP&M 1995, s3.2): with the lists' bounds (the largest
 * block bound of each, as the tiles' bounds, GPUIR_BOUND_SLACK applied),
 * the longest suffix of the query's terms (term order: idf descending, so
 * the long lists come last) whose bounds sum below the threshold is
 * non-essential: a document holding none of the other, essential, terms
 * scores below the threshold and cannot be in the top-k (every term is
 * essential when no such suffix exists).  When the seed is above 0, the
 * essential lists hold at most 1 / share of the query's postings
 * (gpuir_cuda_search_set_maxscore; GPUIR_CUDA_MAXSCORE_SHARE, 1: always),
 * plan_query let this path take the query (not with dense lists: those
 * queries run as OR) and every list of the query is in the decoded area
 * (gpuir_seed_split), the seed kernel leaves the query off the tile
 * kernel's items and writes the work entries of its essential blocks that
 * can hold a top-k document
 * (gpuir_seed_emit_blocks); gpuir_search_maxscore_kernel answers it: a
 * thread block of GPUIR_AND_THREADS threads per entry, a thread per
 * posting.  A document of essential term e is scored by the thread block
 * of e's block only if no earlier essential term holds it (each document
 * once, by its first essential term); its score is summed in the query's
 * term order from 0.0f over the terms that hold it (e, then the later
 * terms), the contributions read from the decoded area, so it is the
 * tiles' float sum bit for bit; the earlier essential terms are looked up
 * last, for the candidates still alive.  A candidate is looked up in a
 * list by a 32-ary warp search of block_last for the warp's docID range
 * and a binary search within it, which gives the block that may hold it,
 * then a search of that decoded block in two rounds (its 128 docIDs are
 * ascending in the flat view of the uint4 layout: three fences pick a
 * quarter, whose 32 docIDs are one 128-byte line).  Pruning, all with
 * GPUIR_BOUND_SLACK and bounds rounded up, so that nothing of the top-k is
 * lost:
 *	- a block of e whose bound plus the later terms' list bounds is below
 *	  the threshold is skipped (its documents hold no earlier essential
 *	  term, or another thread block scores them): below the seed, it gets
 *	  no work entry; below the threshold when its entry runs, it stops;
 *	- at a later term j, a candidate whose partial sum plus the bound of
 *	  the block of j that may hold it plus the list bounds of the terms
 *	  after j is below the threshold is dropped before that block is
 *	  searched (BMW's block-max check, Ding & Suel, "Faster top-k document
 *	  retrieval using block-max indexes", SIGIR 2011, s4); after j, one
 *	  whose partial sum plus the bounds of the terms after j is below it.
 * The survivors leave as the AND kernel's do (gpuir_and_emit): each thread
 * block keeps its k best at or above the threshold and raises it.
 *
 * A query of one term takes this path even with a seed of 0 (unless share
 * is 0): only its blocks whose bound reaches the threshold are read (the
 * block-max top-k of one list; the tiles would visit every tile of the
 * window, mostly empty on a short list).  Its candidate region is OR's,
 * min(tiles x k, its postings), so it goes to the tiles when those blocks,
 * min(k, GPUIR_AND_CAND) keys each, might not fit it
 * (gpuir_seed_count_blocks): never when the list holds at most tiles x k
 * postings, each of which the MaxScore kernel emits at most once.
 *
 * Why this path and not the tiles whenever the seed is above 0 (H200, 40 M
 * documents, bench/results/2026-11-27-h200-bmw-worklists.md): a tile
 * costs its fixed work (its lists' first blocks found, the match bitmap
 * cleared and walked, barriers per term) on each of the window's tiles,
 * about 200 postings a tile on the real logs; here a query costs its
 * essential blocks that pass the seed's bound, with one lookup per other
 * list for each of their postings.  Sending also the queries whose every
 * list is essential here raised BMW from 1.37x to 1.88x OR (TREC 2005,
 * k = 10, batches of 1000, resampled paragraphs).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_SEARCH_MAXSCORE_CUH
#define GPUIR_SEARCH_MAXSCORE_CUH

#include <stdint.h>

#include "gpuir_search_and.cuh"
#include "gpuir_topk.cuh"

#define GPUIR_SEED_THREADS		256		/* seed kernel */
#define GPUIR_MS_MAX_TERMS		32		/* longer queries stay on the tiles */

#define GPUIR_SEED_LOADS		8		/* a seed pass's loads in flight per thread */

static_assert(GPUIR_SEED_THREADS == 256, "one histogram bin a thread");

/* shared memory of the seed kernel */
struct GpuirSeedSmem
{
	uint32_t	hist[256];
	float		red[GPUIR_SEED_THREADS / 32];
	/* gpuir_seed_pick's scan: warp scans, which fit the kernel's 40 registers unspilled */
	typename cub::BlockScan<uint32_t, GPUIR_SEED_THREADS, cub::BLOCK_SCAN_WARP_SCANS>::TempStorage scan;
	uint32_t	bin;			/* gpuir_seed_pick's answer */
	uint32_t	above;			/* values in the bins above it */
	uint32_t	ne;				/* essential terms of a query the MaxScore kernel takes, else 0 */
	uint32_t	kept;			/* gpuir_seed_count_blocks' count */
};

/*
 * gpuir_seed_load: a seed pass's values of the calling thread, round i0 (its
 * first index, i0 = threadIdx.x + a multiple of GPUIR_SEED_LOADS x
 * GPUIR_SEED_THREADS): v[j] = a[i0 + j * GPUIR_SEED_THREADS], or 0 past n.
 * The GPUIR_SEED_LOADS loads are issued before any is used: the passes'
 * shared-memory atomics, ballots and global stores would otherwise hold
 * each load until the one before it was used (the compiler cannot move a
 * load of a generic pointer above them), a chain of dependent loads that
 * made one long list's seed cost tens of microseconds.
 */
__device__ static inline void
gpuir_seed_load(const float *__restrict__ a, uint32_t n, uint32_t i0, float v[GPUIR_SEED_LOADS])
{
#pragma unroll
	for (uint32_t j = 0; j < GPUIR_SEED_LOADS; j++)
	{
		const uint32_t i = i0 + j * GPUIR_SEED_THREADS;

		v[j] = (i < n) ? __ldg(a + i) : 0.0f;
	}
}

/*
 * A MaxScore work entry (gpuir_search_seed_kernel writes them, the MaxScore
 * kernel runs them): block r of essential term e of work item l of the
 * chunk, as uint2 {l, e << GPUIR_MS_BLOCK_BITS | r}
 */
#define GPUIR_MS_BLOCK_BITS		27
static_assert(GPUIR_MS_MAX_TERMS <= (1u << (32 - GPUIR_MS_BLOCK_BITS)),
			  "a term index fits above the block's");

/*
 * gpuir_seed_pick: every thread of the seed kernel, over sm.hist (above <
 * k): the highest bin b such that above + (values in bins >= b) >= k
 * (gpuir_block_kth_bin, one bin a thread), with *above_out = above +
 * (values in bins > b), in every thread; UINT32_MAX when all the bins hold
 * fewer than k - above.  Every thread reads sm.bin and sm.above after the
 * barrier that ends the scan; the caller must pass another barrier before
 * they, sm.scan or sm.hist are written again.
 */
__device__ static __forceinline__ uint32_t
gpuir_seed_pick(uint32_t k, uint32_t above, uint32_t *above_out, GpuirSeedSmem &sm)
{
	uint32_t	c[1] = {sm.hist[255 - threadIdx.x]};
	uint32_t	before;
	const int	r = gpuir_block_kth_bin<GPUIR_SEED_THREADS, 1,
										cub::BLOCK_SCAN_WARP_SCANS>(c, k - above, sm.scan, &before);

	if (r >= 0)
	{
		sm.bin = 255 - threadIdx.x;
		sm.above = above + before;
	}
	if (!__syncthreads_or(r >= 0))
		return UINT32_MAX;
	*above_out = sm.above;
	return sm.bin;
}

/* the largest of v over the thread block (every thread gets it); two barriers */
__device__ static inline float
gpuir_seed_max(float v, GpuirSeedSmem &sm)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, o));
	if ((threadIdx.x & 31) == 0)
		sm.red[threadIdx.x >> 5] = v;
	__syncthreads();
	v = sm.red[0];
	for (int w = 1; w < GPUIR_SEED_THREADS / 32; w++)
		v = fmaxf(v, sm.red[w]);
	__syncthreads();
	return v;
}

/*
 * gpuir_seed_kth: a value x such that at least k of top[0 .. n) are >= x
 * (their k-th largest, its low 15 bits of mantissa cleared), or 0 when
 * fewer than k are above 0.  Every thread calls it; every thread gets it.
 */
__device__ static float
gpuir_seed_kth(const float *top, uint32_t n, uint32_t k, GpuirSeedSmem &sm)
{
	const uint32_t t = threadIdx.x;
	uint32_t	e,
				above;

	/* the exponent byte */
	sm.hist[t] = 0;
	__syncthreads();
	for (uint32_t i0 = t; i0 < n; i0 += GPUIR_SEED_LOADS * GPUIR_SEED_THREADS)
	{
		float		v[GPUIR_SEED_LOADS];

		gpuir_seed_load(top, n, i0, v);
#pragma unroll
		for (uint32_t j = 0; j < GPUIR_SEED_LOADS; j++)
			if (v[j] > 0.0f)	/* 0 past n */
				atomicAdd(&sm.hist[__float_as_uint(v[j]) >> 23], 1u);
	}
	__syncthreads();
	e = gpuir_seed_pick(k, 0, &above, sm);
	if (e == UINT32_MAX)
		return 0.0f;
	__syncthreads();			/* gpuir_seed_pick's: before sm.hist is cleared again */

	/* the next 8 bits of the values of that exponent */
	sm.hist[t] = 0;
	__syncthreads();
	for (uint32_t i0 = t; i0 < n; i0 += GPUIR_SEED_LOADS * GPUIR_SEED_THREADS)
	{
		float		v[GPUIR_SEED_LOADS];

		gpuir_seed_load(top, n, i0, v);
#pragma unroll
		for (uint32_t j = 0; j < GPUIR_SEED_LOADS; j++)
		{
			const uint32_t u = __float_as_uint(v[j]);

			if (v[j] > 0.0f && (u >> 23) == e)
				atomicAdd(&sm.hist[(u >> 15) & 0xFF], 1u);
		}
	}
	__syncthreads();
	{
		/* found: the exponent's bins hold enough */
		const uint32_t m = gpuir_seed_pick(k, above, &above, sm);

		__syncthreads();
		return (m == UINT32_MAX) ? 0.0f : __uint_as_float((e << 23) | (m << 15));
	}
}

/*
 * gpuir_seed_split: thread 0 of the seed kernel, with qrem[j] holding the
 * bound of list j: turns qrem[j] into the sum of the bounds of the lists
 * after j plus prior_bound (gpuir_prior_bound: a document's prior may add
 * that much to it, so every bound that uses qrem includes it) and returns
 * the number of essential terms when the MaxScore kernel should answer the
 * query, else 0 (the tiles answer it).  The non-essential suffix grows
 * from the last term back while the bounds from j on sum below the seed
 * (term 0 always stays essential).  Only a query that plan_query let the
 * MaxScore kernel take (qw.maxscore: share not 0, its lists' blocks fit a
 * work entry; a query of several terms with lists of more than one posting
 * for every GPUIR_CUDA_MAXSCORE_DENSE docIDs of the window's tiles runs as
 * OR: on the generated log's 8.5 M postings a query over 40 M documents,
 * BMW through the lookups ran at 0.37-0.64x OR), and only when every list
 * is decoded: then a query of one term (its one list's blocks that reach
 * the threshold are all the work, where the tiles would visit every tile
 * of the window), and one of several terms with a seed above 0 whose
 * essential lists (all of them when no suffix is non-essential) hold at
 * most 1 / share of its total postings.  The tiles pay for every tile of
 * the window whatever the lists hold, the MaxScore kernel only for the
 * essential blocks whose bound with the later lists' reaches the seed
 * (gpuir_seed_emit_blocks), and on text the seed leaves few of the long
 * lists' blocks (H200, 40 M documents:
 * bench/results/2026-11-27-h200-bmw-worklists.md).
 */
__device__ static uint32_t
gpuir_seed_split(const GpuirSearchWork &qw, const gpuir_cuda_term *qt, double *qrem, float seed,
				 bool all_decoded, uint64_t total, uint32_t share, double prior_bound)
{
	uint32_t	ne = qw.nterms;
	double		s = prior_bound;	/* the prior: a last list every document holds */
	bool		suffix = true;
	uint64_t	essential = 0;

	for (uint32_t j = qw.nterms; j-- > 0;)
	{
		const double u = qrem[j];
		float		f;

		qrem[j] = s;
		s += u;
		f = __double2float_ru(s * GPUIR_BOUND_SLACK_DEV);
		suffix = suffix && j > 0 && !isnan(f) && f < seed;
		if (suffix)
			ne = j;
	}
	if (!qw.maxscore || !all_decoded)
		return 0;				/* plan_query's verdict; or a list the tiles decode */
	if (qw.nterms > 1 && seed <= 0.0f)
		return 0;				/* no bound can skip a block */
	if (qw.nterms == 1)
		return 1;
	for (uint32_t j = 0; j < ne; j++)
		essential += qt[j].npostings;
	return (essential * share <= total) ? ne : 0;
}

/*
 * gpuir_seed_keeps: does the MaxScore kernel need a block of an essential
 * list whose bound is ub, later the bounds of the terms after its own (as
 * gpuir_seed_split leaves qrem), th the threshold: is its bound sum, times
 * GPUIR_BOUND_SLACK and rounded up, not below th?
 */
__device__ static inline bool
gpuir_seed_keeps(float ub, double later, float th)
{
	return !(__double2float_ru(((double) ub + later) * GPUIR_BOUND_SLACK_DEV) < th);
}

/*
 * gpuir_seed_count_blocks: every thread of the seed kernel, for a query of
 * one term the MaxScore kernel would take (qrem as gpuir_seed_split left
 * it, visible after a barrier): the number of its list's blocks that
 * gpuir_seed_emit_blocks would append (every thread gets it).
 */
__device__ static uint32_t
gpuir_seed_count_blocks(const GpuirSearchWork &qw, const gpuir_cuda_term *qt,
						const GpuirDecoded &dec, const double *qrem, float th, GpuirSeedSmem &sm)
{
	const uint32_t nb = qt[0].nblocks;
	const uint32_t doff = dec.off[qw.first_term];
	const double later = qrem[0];
	uint32_t	n = 0;

	if (threadIdx.x == 0)
		sm.kept = 0;
	__syncthreads();
	for (uint32_t r0 = threadIdx.x; r0 < nb; r0 += GPUIR_SEED_LOADS * GPUIR_SEED_THREADS)
	{
		float		v[GPUIR_SEED_LOADS];

		gpuir_seed_load(dec.ub + doff, nb, r0, v);
#pragma unroll
		for (uint32_t j = 0; j < GPUIR_SEED_LOADS; j++)
			n += (r0 + j * GPUIR_SEED_THREADS < nb && gpuir_seed_keeps(v[j], later, th)) ? 1 : 0;
	}
	for (int o = 16; o > 0; o >>= 1)
		n += __shfl_xor_sync(0xFFFFFFFFu, n, o);
	if ((threadIdx.x & 31) == 0)
		atomicAdd(&sm.kept, n);
	__syncthreads();
	return sm.kept;
}

/*
 * gpuir_seed_emit_blocks: every thread of the seed kernel, for a query
 * the MaxScore kernel takes (ne essential terms; qrem as
 * gpuir_seed_split left it, visible after a barrier): appends to ms_work
 * one entry (see GPUIR_MS_BLOCK_BITS) per block of an essential list whose
 * bound plus the later terms' list bounds, times GPUIR_BOUND_SLACK and
 * rounded up, is not below th (the blocks the MaxScore kernel would not
 * skip), counting them in *ms_count (one atomic per warp and load of a
 * round: up to GPUIR_SEED_LOADS a round).
 */
__device__ static void
gpuir_seed_emit_blocks(const GpuirSearchWork &qw, const gpuir_cuda_term *qt,
					   const GpuirDecoded &dec, const double *qrem, uint32_t ne, float th,
					   uint2 *ms_work, uint32_t *ms_count)
{
	const uint32_t lane = threadIdx.x & 31;

	for (uint32_t e = 0; e < ne; e++)
	{
		const uint32_t nb = qt[e].nblocks;
		const uint32_t doff = dec.off[qw.first_term + e];
		const double later = qrem[e];

		/* whole warps go round together (the ballot; r - lane is the warp's) */
		for (uint32_t r0 = threadIdx.x; r0 - lane < nb;
			 r0 += GPUIR_SEED_LOADS * GPUIR_SEED_THREADS)
		{
			float		v[GPUIR_SEED_LOADS];

			gpuir_seed_load(dec.ub + doff, nb, r0, v);
#pragma unroll
			for (uint32_t j = 0; j < GPUIR_SEED_LOADS; j++)
			{
				const uint32_t r = r0 + j * GPUIR_SEED_THREADS;
				const bool	keep = r < nb && gpuir_seed_keeps(v[j], later, th);
				const unsigned m = __ballot_sync(0xFFFFFFFFu, keep);
				uint32_t	base = 0;

				if (m == 0)
					continue;
				if (lane == 0)
					base = atomicAdd(ms_count, (uint32_t) __popc(m));
				base = __shfl_sync(0xFFFFFFFFu, base, 0);
				if (keep)
					ms_work[base + __popc(m & ((1u << lane) - 1))] =
						make_uint2(blockIdx.x, (e << GPUIR_MS_BLOCK_BITS) | r);
			}
		}
	}
}

/*
 * gpuir_search_seed_kernel: grid of nw thread blocks of GPUIR_SEED_THREADS
 * threads, block w for work item w of the chunk (an AND item returns, an
 * OR item is put on the live list below): for a BMW item, writes to
 * rem[rem_off + j] the sum of the list bounds of the terms after term j (a
 * list's bound: the largest of its decoded blocks' bounds; +infinity for a
 * list not decoded, 0 for an empty one) plus prior_bound (the segment's
 * gpuir_prior_bound), the MaxScore kernel's bounds,
 * raises thr[w] to the seed (see the top of the file) and, when the query
 * should run on its essential lists (gpuir_seed_split; for a query of one
 * term, whose candidate region plan_query sized as OR's, only when its
 * blocks that reach the seed, min(k, GPUIR_AND_CAND) keys each and never
 * more than its postings, fit that region: gpuir_seed_count_blocks),
 * counts it in stats
 * (debug, may be NULL) and appends to ms_work (counted in *ms_count) an
 * entry for each block of its essential lists whose bound with the later
 * terms' reaches the seed (the MaxScore kernel's work: the other blocks
 * cannot hold a document of the top-k that no earlier essential list
 * holds).  ms_work has room for every block of every BMW item of the
 * chunk that the MaxScore kernel may take (GpuirSearchWork's maxscore).
 * Every OR item, and every BMW item left to the tiles, is appended to live
 * (counted in *nlive, zero before; in no order), the tile kernel's items.
 * share: gpuir_cuda_search_set_maxscore's (gpuir_seed_split).
 */
__global__ void __launch_bounds__(GPUIR_SEED_THREADS)
gpuir_search_seed_kernel(const GpuirSearchWork *__restrict__ work,
						 const gpuir_cuda_term *__restrict__ terms, GpuirDecoded dec,
						 uint32_t share, double prior_bound, uint32_t *thr,
						 double *rem,
						 uint2 *ms_work, uint32_t *ms_count,
						 uint32_t *live, uint32_t *nlive, GpuirSearchDevStats *stats)
{
	gpuir_pdl_start();
	__shared__ GpuirSeedSmem sm;
	const GpuirSearchWork qw = work[blockIdx.x];
	const gpuir_cuda_term *qt = terms + qw.first_term;
	double	   *qrem = rem + qw.rem_off;
	float		seed = 0.0f;
	bool		all_decoded = true;
	uint64_t	total = 0;
	uint32_t	ne;

	if (qw.mode == GPUIR_CUDA_MODE_AND)
		return;					/* the AND kernel answers it */
	if (qw.mode == GPUIR_CUDA_MODE_OR || dec.off == NULL)
	{
		if (threadIdx.x == 0)
			live[atomicAdd(nlive, 1u)] = blockIdx.x;	/* the tiles answer it */
		return;
	}
	for (uint32_t j = 0; j < qw.nterms; j++)
	{
		const gpuir_cuda_term term = qt[j];
		const uint32_t doff = dec.off[qw.first_term + j];
		float		u = 0.0f;

		total += term.npostings;
		if (term.nblocks > 0 && doff == GPUIR_NOT_DECODED)
		{
			all_decoded = false;
			u = INFINITY;
		}
		else if (term.nblocks > 0)
		{
			float		m = 0.0f;

			for (uint32_t i0 = threadIdx.x; i0 < term.nblocks;
				 i0 += GPUIR_SEED_LOADS * GPUIR_SEED_THREADS)
			{
				float		v[GPUIR_SEED_LOADS];

				gpuir_seed_load(dec.ub + doff, term.nblocks, i0, v);	/* 0 past the list */
#pragma unroll
				for (uint32_t x = 0; x < GPUIR_SEED_LOADS; x++)
					m = fmaxf(m, v[x]);
			}
			u = gpuir_seed_max(m, sm);
			if (term.nblocks >= qw.k)
				seed = fmaxf(seed, gpuir_seed_kth(dec.top + doff, term.nblocks, qw.k, sm));
		}
		if (threadIdx.x == 0)
			qrem[j] = u;		/* the list's bound until the suffix sums below */
	}
	/* seed, total and all_decoded are the same in every thread */
	if (threadIdx.x == 0)
	{
		gpuir_threshold_raise(&thr[blockIdx.x], seed);
		sm.ne = gpuir_seed_split(qw, qt, qrem, seed, all_decoded, total, share, prior_bound);
	}
	__syncthreads();
	ne = sm.ne;

	/*
	 * A query of one term: its region is min(tiles x k, postings) keys
	 * (plan_query), and MaxScore emits at most a key a posting, so its keys
	 * fit when its postings do; else only when its blocks that reach the
	 * seed, min(k, GPUIR_AND_CAND) keys each, fit (counted only then: the
	 * count is a pass over the list's block bounds).  Otherwise the tiles
	 * answer it.
	 */
	if (ne > 0 && qw.nterms == 1 && qt[0].npostings > qw.cand_cap &&
		(uint64_t) gpuir_seed_count_blocks(qw, qt, dec, qrem, seed, sm) *
		min(qw.k, (uint32_t) GPUIR_AND_CAND) > qw.cand_cap)
		ne = 0;
	if (threadIdx.x == 0)
	{
		if (ne == 0)
			live[atomicAdd(nlive, 1u)] = blockIdx.x;	/* the tiles answer it */
		else if (stats != NULL)
			atomicAdd(&stats->maxscore_queries, 1ull);
	}
	if (ne > 0)
		gpuir_seed_emit_blocks(qw, qt, dec, qrem, ne, seed, ms_work, ms_count);
}

/*
 * gpuir_ms_find: the contribution of docID d in block b of term's decoded
 * list (its first decoded block doff); false if the block does not hold d.
 * Two rounds of loads instead of a 7-step binary search: the block's 128
 * docIDs ascend in the flat view of the uint4 layout (padding UINT32_MAX),
 * so the last docIDs of its first three quarters pick the quarter that may
 * hold d, and that quarter's 32 docIDs (one 128-byte line) are read as
 * eight uint4 and compared.
 */
static_assert(GPUIR_CUDA_BLOCK_SIZE == 128, "gpuir_ms_find reads a block as four quarters of 32");

__device__ static inline bool
gpuir_ms_find(const GpuirDecoded &dec, const gpuir_cuda_term &term, uint32_t doff, uint32_t b,
			  uint32_t d, float *c)
{
	const uint32_t *ddoc = reinterpret_cast<const uint32_t *>(dec.doc);
	const float *dsc = reinterpret_cast<const float *>(dec.score);
	const size_t base = ((size_t) doff + (b - term.first_block)) * GPUIR_CUDA_BLOCK_SIZE;
	const uint4 *q;
	uint32_t	quarter,
				p = UINT32_MAX;

	/* the quarter of 32 docIDs whose last is the first >= d (padding is UINT32_MAX) */
	quarter = (uint32_t) (ddoc[base + 31] < d) + (uint32_t) (ddoc[base + 63] < d) +
		(uint32_t) (ddoc[base + 95] < d);
	/* its 32 docIDs, one 128-byte line */
	q = dec.doc + (base + 32 * quarter) / 4;
#pragma unroll
	for (uint32_t i = 0; i < 8; i++)
	{
		const uint4 v = q[i];

		p = (v.x == d) ? 4 * i : p;
		p = (v.y == d) ? 4 * i + 1 : p;
		p = (v.z == d) ? 4 * i + 2 : p;
		p = (v.w == d) ? 4 * i + 3 : p;
	}
	if (p == UINT32_MAX)
		return false;
	*c = dsc[base + 32 * quarter + p];
	return true;
}

/*
 * gpuir_ms_block_for: the block of term's list that may hold docID d of a
 * live thread (the first whose last docID is >= d), or UINT32_MAX when the
 * thread is not live, the list is empty or d lies past the list's last
 * docID.  The warp's live docIDs ascend with the lane, so the first and
 * last live lanes span them: a 32-ary warp search of block_last bounds the
 * span's blocks (gpuir_warp_block_range), then each live thread
 * binary-searches its own among them.  Every lane of the warp calls it.
 */
__device__ static inline uint32_t
gpuir_ms_block_for(const gpuir_cuda_segment &seg, const gpuir_cuda_term &term, bool live,
				   uint32_t d)
{
	const unsigned any = __ballot_sync(0xFFFFFFFFu, live);
	uint32_t	blo,
				bhi,
				b;

	if (term.nblocks == 0 || any == 0)
		return UINT32_MAX;
	gpuir_warp_block_range(seg.block_last, term.first_block, term.first_block + term.nblocks,
						   __shfl_sync(0xFFFFFFFFu, d, __ffs(any) - 1),
						   __shfl_sync(0xFFFFFFFFu, d, 31 - __clz(any)), &blo, &bhi);
	if (!live)
		return UINT32_MAX;
	b = blo + gpuir_lower_bound(bhi - blo, d, [&](uint32_t m) { return seg.block_last[blo + m]; });
	return (b < bhi) ? b : UINT32_MAX;
}

/* the MaxScore kernel's shared values besides GpuirAndSmem's */
struct GpuirMsSmem
{
	float		th;				/* the query's threshold, read once */
	uint32_t	next[2];		/* work entries taken: the current one and the next */
};

/*
 * gpuir_ms_block: the MaxScore kernel's work on block r of essential term
 * e of work item l (every thread of the thread block calls it; it returns
 * in all of them at once): the block's documents that no earlier essential
 * list holds, scored, those that can reach the threshold appended to the
 * query's candidates (gpuir_and_emit).  See gpuir_search_maxscore_kernel.
 */
__device__ static void
gpuir_ms_block(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
			   const GpuirSearchWork *__restrict__ work,
			   const gpuir_cuda_term *__restrict__ terms, const GpuirDecoded &dec,
			   const double *__restrict__ rem, uint32_t *thr, uint64_t *__restrict__ cand,
			   uint32_t *__restrict__ cand_count, uint32_t *corrupt, uint32_t l, uint32_t e,
			   uint32_t r, GpuirAndSmem &sm, GpuirMsSmem &ms)
{
	const uint32_t t = threadIdx.x;
	const uint32_t wlo = gpuir_window_lo(seg);
	const uint32_t whi = gpuir_window_hi(seg);
	const uint32_t *ddoc = reinterpret_cast<const uint32_t *>(dec.doc);
	const float *dsc = reinterpret_cast<const float *>(dec.score);
	const GpuirSearchWork qw = work[l];
	const gpuir_cuda_term *qt = terms + qw.first_term;
	const uint32_t *qoff = dec.off + qw.first_term;
	const double *qrem = rem + qw.rem_off;
	const size_t at = ((size_t) qoff[e] + r) * GPUIR_CUDA_BLOCK_SIZE;
	uint32_t	d;
	float		score,
				c,
				cj;
	bool		live,
				skip = false;

	/* the block's posting of this thread (read while thread 0 reads the threshold) */
	d = ddoc[at + t];
	c = dsc[at + t];

	/*
	 * The threshold, once; the block's bound with the later terms'.  The
	 * verdict travels in the barrier, not in shared memory: a thread that
	 * returns here reads nothing shared after the barrier, so thread 0 may
	 * go on to the next entry and write ms.th at once.
	 */
	if (t == 0)
	{
		ms.th = gpuir_threshold_read(&thr[l]);
		skip = __double2float_ru(((double) dec.ub[qoff[e] + r] + qrem[e]) *
								 GPUIR_BOUND_SLACK_DEV) < ms.th ||
			*(volatile uint32_t *) corrupt != 0;
	}
	if (__syncthreads_or(skip))
		return;

	/* in the window, not deleted, able to reach th */
	live = d != UINT32_MAX && d >= wlo && d < whi &&
		!(seg.deleted != NULL && (seg.deleted[d >> 3] >> (d & 7)) & 1) &&
		!(__double2float_ru(((double) c + qrem[e]) * GPUIR_BOUND_SLACK_DEV) < ms.th);

	/*
	 * The later terms in order, adding to the score (summed in term order
	 * from 0.0f, as the tiles sum it).  At term j the candidate is dropped
	 * before the block of j's list that may hold it is searched when its
	 * score plus that block's bound plus the list bounds of the terms after
	 * j is below the threshold (then it is also below after j: the check
	 * after the search drops it), and after it when its score plus the
	 * bounds of the terms after j is.
	 */
	score = c;				/* 0.0f + c: the first term the document holds */
	for (uint32_t j = e + 1; j < qw.nterms; j++)
	{
		const gpuir_cuda_term term = qt[j];
		const uint32_t b = gpuir_ms_block_for(seg, term, live, d);

		if (b != UINT32_MAX &&
			!(__double2float_ru(((double) score +
								 (double) dec.ub[qoff[j] + (b - term.first_block)] + qrem[j]) *
								GPUIR_BOUND_SLACK_DEV) < ms.th) &&
			gpuir_ms_find(dec, term, qoff[j], b, d, &cj))
			score = __fadd_rn(score, cj);
		if (live && __double2float_ru(((double) score + qrem[j]) * GPUIR_BOUND_SLACK_DEV) < ms.th)
			live = false;
	}

	/* the earlier essential terms: a document one of them holds is scored by its first's block */
	for (uint32_t j = 0; j < e; j++)
	{
		const uint32_t b = gpuir_ms_block_for(seg, qt[j], live, d);

		if (b != UINT32_MAX && gpuir_ms_find(dec, qt[j], qoff[j], b, d, &cj))
			live = false;
	}

	/* the survivors, compacted (thread t takes candidate t), then emitted */
	if (__syncthreads_or(live) == 0)
		return;					/* none (most blocks): no barriers of the emit */
	if (live)
		score = gpuir_prior_add(seg, sc, score, d);	/* the final score */
	sm.tf0[t] = __float_as_uint(score);
	gpuir_and_keep(live, d, t, sm);
	score = (t < sm.ncand) ? __uint_as_float(sm.tf0[sm.cslot[t]]) : 0.0f;
	gpuir_and_emit(score, qw, &thr[l], cand, &cand_count[l], corrupt, sm);
}

/*
 * gpuir_search_maxscore_kernel: the essential lists of the chunk's BMW
 * queries that the seed kernel gave it: the *ms_count entries
 * of ms_work (block r of essential term e of item l; see
 * GPUIR_MS_BLOCK_BITS), which the seed kernel wrote for the blocks whose
 * bound reached its seed, each run by one thread block of
 * GPUIR_AND_THREADS threads (gpuir_ms_block), a thread block taking the
 * next entry (*next, zero before) as it comes free (a grid of about what
 * the device holds at once, so that the work, not the queries' blocks,
 * sets the number of thread blocks).  rem: the seed kernel's sums
 * of the later terms' list bounds.  Appends the survivors to the query's
 * candidates (gpuir_and_emit) as the tiles would have.  Documents outside
 * a windowed segment's window and deleted ones never qualify.
 */
__global__ void __launch_bounds__(GPUIR_AND_THREADS, GPUIR_AND_MIN_BLOCKS)
gpuir_search_maxscore_kernel(gpuir_cuda_segment seg, gpuir_cuda_scoring sc,
							 const GpuirSearchWork *__restrict__ work,
							 const uint2 *__restrict__ ms_work, const uint32_t *ms_count,
							 uint32_t *next,
							 const gpuir_cuda_term *__restrict__ terms, GpuirDecoded dec,
							 const double *__restrict__ rem, uint32_t *thr,
							 uint64_t *__restrict__ cand, uint32_t *__restrict__ cand_count,
							 uint32_t *corrupt)
{
	gpuir_pdl_start();
	__shared__ GpuirAndSmem sm;
	__shared__ GpuirMsSmem ms;
	const uint32_t n = *ms_count;

	/*
	 * Thread 0 takes the next entry while the thread block runs the current
	 * one (ms.next[i & 1] is entry i of this thread block): each path of
	 * gpuir_ms_block passes a barrier after every thread read the current
	 * entry, so the slot written is no longer read, and the barrier ending
	 * it orders the write before the next iteration's reads.
	 */
	if (threadIdx.x == 0)
		ms.next[0] = atomicAdd(next, 1u);
	__syncthreads();
	for (uint32_t i = 0;; i++)
	{
		const uint32_t cur = ms.next[i & 1];
		uint2		w;

		if (cur >= n)
			return;
		w = ms_work[cur];
		if (threadIdx.x == 0)
			ms.next[(i + 1) & 1] = atomicAdd(next, 1u);
		gpuir_ms_block(seg, sc, work, terms, dec, rem, thr, cand, cand_count, corrupt, w.x,
					   w.y >> GPUIR_MS_BLOCK_BITS, w.y & ((1u << GPUIR_MS_BLOCK_BITS) - 1), sm,
					   ms);
	}
}

#endif							/* GPUIR_SEARCH_MAXSCORE_CUH */
