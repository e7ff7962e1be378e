/*-------------------------------------------------------------------------
 *
 * gpuir_search_tile.cuh
 *	  Device routines of the search's tile kernel (gpuir_search.cu): one
 *	  thread block of 256 threads scores one (query, tile) pair, a tile
 *	  being GPUIR_TILE_DOCS consecutive docIDs of the segment, with the OR
 *	  algorithm (also BMW's tiles that their bound did not prune), in
 *	  shared memory (GpuirTileSmem), and, in chunks of few waves of tile
 *	  items with kmax <= 256 and no seed kernel (search_launch's rule), the
 *	  final selection of a query whose last tile it finished
 *	  (gpuir_search_tile_kernel); gpuir_tile_decode also serves the AND
 *	  kernel (gpuir_search_and.cuh).
 *
 * The algorithms, their sources and why the scores are exact are described
 * at the top of gpuir_search.cu.  Included by gpuir_search.cu only.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_SEARCH_TILE_CUH
#define GPUIR_SEARCH_TILE_CUH

#include <stdint.h>

#include "gpuir_cuda_internal.cuh"
#include "gpuir_decode_cache.cuh"
#include "gpuir_decode.cuh"
#include "gpuir_topk.cuh"

#define GPUIR_SEARCH_THREADS	256		/* tile kernel */
#define GPUIR_SEARCH_MIN_BLOCKS	3		/* tile kernel's blocks per SM (shared memory) */
#define GPUIR_SEARCH_WARPS		(GPUIR_SEARCH_THREADS / 32)
#define GPUIR_TILE_DOCS			GPUIR_CUDA_TILE_DOCS	/* docIDs per tile (gpuir_cuda.h) */
#define GPUIR_TILE_WORDS		(GPUIR_TILE_DOCS / 32)	/* bitmap words per tile */
#define GPUIR_TILE_FIRST_CACHE	GPUIR_SEARCH_THREADS	/* terms whose first block is cached */
#define GPUIR_BOUND_SLACK_DEV	1.0001	/* GPUIR_BOUND_SLACK of src/gpuir.h */

static_assert(GPUIR_TILE_DOCS % (32 * GPUIR_SEARCH_THREADS) == 0,
			  "tile items must divide evenly among the threads");

/* shared memory of the tile kernel (about 70 KB, dynamic) */
struct GpuirTileSmem
{
	float		acc[GPUIR_TILE_DOCS];	/* score accumulators (valid where cur is set) */
	uint32_t	cur[GPUIR_TILE_WORDS];	/* matched */
	uint32_t	first[GPUIR_TILE_FIRST_CACHE];	/* first overlapping block of term j */
	GpuirSelectTempStorage<GPUIR_SEARCH_THREADS> sel;
	uint32_t	total;			/* the tile's candidates (gpuir_tile_candidates) */
	uint32_t	base;			/* first candidate slot of the tile */
	uint32_t	pos;			/* candidate slots handed out */
	uint32_t	ndec;			/* blocks decoded (debug statistics) */
	uint32_t	next;			/* the pair the thread block takes next */
	bool		last;			/* its last pair was its item's last tile
								 * (the tile kernel's final selections) */
	double		bsum[GPUIR_SEARCH_WARPS];	/* BMW: the warps' term bound sums */
	float		thb;			/* BMW: the query's threshold, read for the bound */
	float		th;				/* the query's threshold, read once per tile */
	unsigned long long kmin;	/* smallest key kept by the tile */
	/*
	 * each warp's decode scratch (gpuir_warp_decode_listed_block's patch);
	 * once a tile is scored, the tile's score-bucket counts
	 * (gpuir_search.cu, gpuir_tile_hist_count)
	 */
	__align__(GPUIR_PATCH_ALIGN) uint32_t patch[GPUIR_SEARCH_WARPS][GPUIR_CUDA_BLOCK_SIZE];
};

/*
 * The lists of a batch decoded once (gpuir_search_decode_kernel), so that
 * a block spanning several tiles is not decoded by each of them: block i
 * of the decoded area holds 128 postings as 32 uint4 of docIDs and 32
 * float4 of BM25 contributions (posting 4 l + r in element r of vector l,
 * the lanes' layout of gpuir_warp_decode_listed_block), docID UINT32_MAX
 * past the list's end; when the batch has BMW queries, ub[i] is the block's BM25
 * bound (gpuir_block_bound rounded up to float: never below it) and top[i]
 * its largest contribution of a document in the window that is not
 * deleted, 0 if that document is deleted (the seed of
 * gpuir_search_seed_kernel; 0 too for a block outside the window, whose
 * docIDs are padding).  off[term] is
 * the decoded block of the term's first block, GPUIR_NOT_DECODED for a
 * term not there (a list past the decode budget, which the tiles decode
 * themselves, or a term of AND queries only); off is NULL when nothing was
 * decoded.
 */
/* GPUIR_NOT_DECODED: gpuir_decode_cache.cuh, which places the decoded lists */
struct GpuirDecoded
{
	const uint32_t *off;		/* [nterms] or NULL */
	const uint4 *doc;			/* [blocks * 32] */
	const float4 *score;		/* [blocks * 32] */
	const float *ub;			/* [blocks]: block-max bounds (BMW only) */
	const float *top;			/* [blocks]: largest live contributions (BMW only) */
};

/* debug statistics (gpuir_cuda_search_stats), device side */
struct GpuirSearchDevStats
{
	unsigned long long blocks_decoded;
	unsigned long long tiles_pruned;
	unsigned long long maxscore_queries;
	unsigned long long partial_queries;
	unsigned long long tile_keys;
};

/* ---------- device helpers ---------- */

/*
 * gpuir_pdl_start: the first statement of every search kernel, before any
 * read.  search_launch starts each kernel of a call after its first with
 * programmatic dependent launch (Hopper and later), so that it may begin
 * while the kernel before it on the stream still runs.
 * griddepcontrol.wait blocks until that kernel has completed and its
 * writes are visible; each kernel waits so before it can finish, so this
 * also covers every earlier kernel of the call.  launch_dependents then
 * lets the next kernel's thread blocks be scheduled, to wait in turn, as
 * soon as every thread block of this one has started: the next kernel's
 * launch overlaps this one's last wave instead of following its end.  On
 * a launch without the attribute both are no-ops.  Code compiled below
 * sm_90 (the compute_75 PTX, which a newer device than sm_90 would
 * compile at load) has neither, so search_launch launches it without the
 * attribute (resident_grids checks the kernels' PTX version).
 */
__device__ __forceinline__ void
gpuir_pdl_start(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
	asm volatile("griddepcontrol.wait;" ::: "memory");
	asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/*
 * gpuir_window_lo / gpuir_window_hi: the docIDs [lo, hi) a search of seg
 * covers: its window's tiles on a windowed segment, else all its documents
 */
__device__ static inline uint32_t
gpuir_window_lo(const gpuir_cuda_segment &seg)
{
	return seg.windowed ? seg.tile_first * (uint32_t) GPUIR_CUDA_TILE_DOCS : 0;
}

__device__ static inline uint32_t
gpuir_window_hi(const gpuir_cuda_segment &seg)
{
	return seg.windowed
		? (uint32_t) min((uint64_t) seg.tile_end * GPUIR_CUDA_TILE_DOCS, (uint64_t) seg.ndocs)
		: seg.ndocs;
}

/*
 * gpuir_claim_slots: n slots of a query's candidate region, whose count is
 * *count and capacity cap: the first slot's index, or UINT32_MAX when they
 * would pass cap (*count then stays past cap).  A full region of a query
 * (spill false) holds every key its kernels may emit, so passing it means
 * corrupt input: *corrupt is set and the batch fails.  A short region
 * (spill true, GpuirSearchWork.cand_short) may spill: the final selection
 * sees the count past cap and the host searches the query again.  One
 * thread of the block calls it.
 */
__device__ static inline uint32_t
gpuir_claim_slots(uint32_t *count, uint32_t n, uint64_t cap, uint32_t *corrupt, bool spill)
{
	const uint32_t base = atomicAdd(count, n);

	if ((uint64_t) base + n > cap)
	{
		if (!spill)
			atomicOr(corrupt, 1u);
		return UINT32_MAX;
	}
	return base;
}

/*
 * gpuir_doclen: dl of docID d of seg, from its one-byte code unless that is
 * the escape (gpuir_cuda_segment.doclen_code)
 */
__device__ static inline uint32_t
gpuir_doclen(const gpuir_cuda_segment &seg, uint32_t d)
{
	const uint32_t c = __ldg(seg.doclen_code + d);

	return (c < GPUIR_CUDA_DL_ESCAPE) ? c : __ldg(seg.doclen + d);
}

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
 * gpuir_prior_add: the score of docID d whose BM25 sum is score: the sum
 * plus prior_weight * prior[d], the product and the sum each rounded to
 * float (GpuirPriorScore of src/gpuir.h, added after the BM25 sum as the
 * CPU engine adds it); score itself in a segment without priors.
 */
__device__ static inline float
gpuir_prior_add(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc, float score,
				uint32_t d)
{
	return (seg.prior != NULL) ? __fadd_rn(score, __fmul_rn(sc.prior_weight, seg.prior[d]))
		: score;
}

/*
 * gpuir_prior_bound: the most a prior of seg adds to a score, in double
 * (the CPU engine's prior_bound, GpuirPriorScore of src/gpuir.h on
 * prior_max; restated: CUDA files cannot include gpuir.h): prior_weight *
 * prior_max rounded to float,
 * which bounds every prior's float product (rounding is monotone); 0 in a
 * segment without priors.  Every upper bound of a score (tiles, list and
 * block bounds of BMW) adds it; the seeds (lower bounds) do not need to,
 * as a prior is never negative.  Host and device (the seed kernel takes it
 * as an argument).
 */
__host__ __device__ static inline double
gpuir_prior_bound(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc)
{
	return (seg.prior != NULL) ? (double) (sc.prior_weight * seg.prior_max) : 0.0;
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

/*
 * gpuir_warp_first_block: gpuir_first_block with the calling warp, a
 * 32-ary search: each round the lanes probe 32 evenly spaced entries at
 * once and keep the stretch where block_last first reaches lo, so a list
 * of n blocks costs about log32(n) + 1 dependent loads instead of log2(n)
 * (the latency of those loads was the longest chain of a tile's start).
 * Every lane of the warp must call it with the same arguments; every lane
 * gets the result.
 */
__device__ static inline uint32_t
gpuir_warp_first_block(const uint32_t *__restrict__ block_last, uint32_t fb, uint32_t end,
					   uint32_t lo, uint32_t hi)
{
	const uint32_t lane = threadIdx.x & 31;
	uint32_t	l = fb,
				h = end;		/* the answer lies in [l, h]; h: none */

	while (l < h)
	{
		const uint32_t step = (h - l + 31) / 32;
		const uint32_t p = l + (lane + 1) * step - 1;	/* probes: last of each stretch */
		const unsigned reach = __ballot_sync(0xFFFFFFFFu, p >= h || block_last[p] >= lo);
		uint32_t	f;

		if (reach == 0)
		{
			l = h;				/* every probe below lo, the last one at h - 1 */
			break;
		}
		f = (uint32_t) (__ffs(reach) - 1);
		if (step == 1)
		{
			l += f;				/* probes were l .. l + 31: exact */
			break;
		}
		h = min(h, l + (f + 1) * step - 1);	/* probe f reached lo */
		l += f * step;			/* probe f - 1 did not */
	}
	if (l < end && l > fb && block_last[l - 1] >= hi - 1)
		return end;				/* its docIDs start at or after hi */
	return l;
}

/*
 * gpuir_warp_block_range: the blocks [*blo, *bend) of the list [fb, end)
 * that may hold a docID of [dmin, dmax]: from the first whose last docID
 * is >= dmin to the first whose last docID is >= dmax, inclusive (two
 * gpuir_warp_first_block searches; a docID of the range past the list's
 * last docID is in none).  Every lane of the warp calls it with the same
 * arguments.
 */
__device__ static inline void
gpuir_warp_block_range(const uint32_t *__restrict__ block_last, uint32_t fb, uint32_t end,
					   uint32_t dmin, uint32_t dmax, uint32_t *blo, uint32_t *bend)
{
	const uint32_t lo = gpuir_warp_first_block(block_last, fb, end, dmin, UINT32_MAX);
	const uint32_t hi = (lo < end) ? gpuir_warp_first_block(block_last, lo, end, dmax,
															UINT32_MAX) : end;

	*blo = lo;
	*bend = (hi < end) ? hi + 1 : end;
}

/*
 * gpuir_tile_decode: decode block b of a list (blocks [fb, fb + nblocks),
 * npostings postings) with the calling warp, checked as the CPU reader
 * checks it (GpuirListDecodeBlock, src/gpuirlist.h).  Its directory entry
 * and header were checked on the host before any kernel reads them (the
 * extent inside the payload, 8 .. GPUIR_BLOCK_MAX_BYTES bytes, 4-byte
 * aligned, the header's length that of the extent, block_last below ndocs
 * and increasing in the list: the segment's prefix counts h_bad and
 * h_desc, or the list images' writer; gpuir_cuda.h), so the block is
 * decoded with gpuir_warp_decode_listed_block; here it must hold 128
 * postings (the list's last block: the rest) and, when its docIDs are
 * decoded (want_docids), end at block_last[b].  With layout not NULL and
 * want_tfs false, single tfs may then be read with gpuir_block_tf (patch:
 * the warp's scratch in shared memory; UNPACK: GpuirUnpack).  Returns the
 * count (same in every lane; doc[r], tf[r] of posting 4 lane + r) or
 * GPUIR_CUDA_BLOCK_CORRUPT.
 */
template <GpuirUnpack UNPACK = GPUIR_UNPACK_WORDS>
__device__ static int
gpuir_tile_decode(const gpuir_cuda_segment &seg, const gpuir_cuda_term &term, uint32_t b,
				  bool want_docids, bool want_tfs, uint32_t doc[GPUIR_DECODE_PER_LANE],
				  uint32_t tf[GPUIR_DECODE_PER_LANE], uint32_t *patch,
				  GpuirBlockLayout *layout = NULL)
{
	const uint32_t fb = term.first_block;
	const uint32_t prev = (b > fb) ? seg.block_last[b - 1] : GPUIR_FIRST_PREV_DOCID;
	const int	expect = (b + 1 < fb + term.nblocks) ? GPUIR_CUDA_BLOCK_SIZE
		: (int) (term.npostings - (uint32_t) GPUIR_CUDA_BLOCK_SIZE * (term.nblocks - 1));
	const uint32_t lane = threadIdx.x & 31;
	int			n;
	bool		bad = false;

	n = gpuir_warp_decode_listed_block<UNPACK>(seg.payload + seg.block_offset[b], prev,
											   want_docids, want_tfs, doc, tf, patch, layout);
	if (n != expect)
		return GPUIR_CUDA_BLOCK_CORRUPT;
	if (!want_docids)
		return n;
#pragma unroll
	for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		if (GPUIR_DECODE_PER_LANE * lane + r == (uint32_t) n - 1)
			bad = (doc[r] != seg.block_last[b]);
	if (__any_sync(0xFFFFFFFFu, bad))
		return GPUIR_CUDA_BLOCK_CORRUPT;
	return n;
}

/*
 * gpuir_tile_term: one list's OR pass over the tile [lo, hi), starting at
 * its first overlapping block first; warp w takes blocks first + w, first
 * + w + GPUIR_SEARCH_WARPS, ...  A block is read from the decoded area
 * when doff is not GPUIR_NOT_DECODED (the list's first block there; its
 * contributions already computed), else decoded with the warp
 * (gpuir_warp_decode_listed_block).  Within the pass each docID is handled
 * by one lane (a docID occurs once in a list), so the accumulator updates need no
 * atomics; the pass ends with a barrier, which orders the lists'
 * additions.  Returns false (in every thread) if a block is corrupt.
 */
__device__ static bool
gpuir_tile_term(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
				const gpuir_cuda_term &term, uint32_t first, uint32_t lo, uint32_t hi,
				uint32_t doff, const GpuirDecoded &dec, GpuirTileSmem &sm)
{
	const bool	decoded = doff != GPUIR_NOT_DECODED;
	const uint32_t fb = term.first_block;
	const uint32_t end = fb + term.nblocks;
	const uint32_t lane = threadIdx.x & 31;
	bool		bad = false;

	for (uint32_t b = first + (threadIdx.x >> 5); b < end; b += GPUIR_SEARCH_WARPS)
	{
		uint32_t	prev = (b > fb) ? seg.block_last[b - 1] : 0;
		uint32_t	doc[GPUIR_DECODE_PER_LANE],
					tf[GPUIR_DECODE_PER_LANE];
		int			n;

		if (b > fb && prev >= hi - 1)
			break;				/* this block and the next start at or after hi */
		if (decoded)
		{
			/* docIDs and contributions (as bits, in tf) of the decoded block */
			const size_t at = ((size_t) doff + (b - fb)) * (GPUIR_CUDA_BLOCK_SIZE / 4) + lane;
			const uint4 d4 = dec.doc[at];
			const float4 c4 = dec.score[at];

			doc[0] = d4.x, doc[1] = d4.y, doc[2] = d4.z, doc[3] = d4.w;
			tf[0] = __float_as_uint(c4.x), tf[1] = __float_as_uint(c4.y);
			tf[2] = __float_as_uint(c4.z), tf[3] = __float_as_uint(c4.w);
			n = GPUIR_CUDA_BLOCK_SIZE;	/* the padding's docIDs lie past hi */
		}
		else
		{
			n = gpuir_tile_decode(seg, term, b, true, true, doc, tf,
								  sm.patch[threadIdx.x >> 5]);
			if (n < 0)
			{
				bad = true;
				break;
			}
			if (lane == 0)
				atomicAdd(&sm.ndec, 1u);
		}
#pragma unroll
		for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		{
			if ((int) (GPUIR_DECODE_PER_LANE * lane + r) < n && doc[r] >= lo && doc[r] < hi)
			{
				const uint32_t d = doc[r];
				const uint32_t i = d - lo;
				const uint32_t bit = 1u << (i & 31);
				const float c = decoded ? __uint_as_float(tf[r])
					: gpuir_bm25(term.idf, tf[r], gpuir_doclen(seg, d), sc);
				const uint32_t old = atomicOr(&sm.cur[i >> 5], bit);

				/* the document's first term starts its sum at 0.0f, as the CPU */
				sm.acc[i] = __fadd_rn((old & bit) ? sm.acc[i] : 0.0f, c);
			}
		}
	}
	/* every warp is done with this list before the next one adds to acc */
	return __syncthreads_or(bad) == 0;
}

/* the first block of term j of the query in the tile (cached for j < 256) */
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
 * gpuir_tile_term_bound: BMW's bound of term j over the tile [lo, hi), its
 * first overlapping block being first: the largest bound of the term's
 * blocks overlapping the tile (dec.ub for a list decoded once, else its
 * impacts), in every lane of the calling warp.
 */
__device__ static double
gpuir_tile_term_bound(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
					  const gpuir_cuda_term &term, uint32_t first, uint32_t hi, uint32_t doff,
					  const GpuirDecoded &dec)
{
	const uint32_t fb = term.first_block;
	const uint32_t end = fb + term.nblocks;
	double		m = 0.0;

	for (uint32_t b = first + (threadIdx.x & 31); b < end; b += 32)
	{
		if (b > fb && seg.block_last[b - 1] >= hi - 1)
			break;				/* this block and the next start at or after hi */
		m = fmax(m, (doff != GPUIR_NOT_DECODED) ? (double) dec.ub[doff + (b - fb)]
				 : gpuir_block_bound(seg, sc, term.idf, b));
	}
	for (int o = 16; o > 0; o >>= 1)
		m = fmax(m, __shfl_xor_sync(0xFFFFFFFFu, m, o));
	return m;
}

/*
 * gpuir_tile_scan_terms: every warp takes some terms, finds their first
 * overlapping blocks (gpuir_warp_first_block; cached in sm.first), and
 * reports whether any term reaches the tile.  With thr (BMW), each warp
 * also sums its terms' bounds over the tile (gpuir_tile_term_bound) into
 * sm.bsum[warp], and thread 0 reads the query's threshold into sm.thb, all
 * before the one barrier, so that gpuir_tile_bound_below needs none.
 */
__device__ static bool
gpuir_tile_scan_terms(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
					  const gpuir_cuda_term *qt, const uint32_t *qoff, const GpuirDecoded &dec,
					  uint32_t nt, uint32_t lo, uint32_t hi, const uint32_t *thr,
					  GpuirTileSmem &sm)
{
	const uint32_t warp = threadIdx.x >> 5;
	bool		any = false;
	double		bsum = 0.0;

	for (uint32_t j = warp; j < nt; j += GPUIR_SEARCH_WARPS)
	{
		const gpuir_cuda_term term = qt[j];
		const uint32_t end = term.first_block + term.nblocks;
		uint32_t	first = end;

		if (term.nblocks > 0)
			first = gpuir_warp_first_block(seg.block_last, term.first_block, end, lo, hi);
		if (j < GPUIR_TILE_FIRST_CACHE && (threadIdx.x & 31) == 0)
			sm.first[j] = first;
		if (first < end)
		{
			any = true;
			if (thr != NULL)
				bsum += gpuir_tile_term_bound(seg, sc, term, first, hi,
											  (qoff != NULL) ? qoff[j] : GPUIR_NOT_DECODED, dec);
		}
	}
	if (thr != NULL)
	{
		if ((threadIdx.x & 31) == 0)
			sm.bsum[warp] = bsum;
		if (threadIdx.x == 0)
			sm.thb = gpuir_threshold_read(thr);
	}
	return __syncthreads_or(any) != 0;
}

/*
 * gpuir_tile_bound_below: BMW's test of a whole tile (Ding & Suel 2011,
 * block-max bounds, on docID-range partitions as Huang et al. 2017), after
 * gpuir_tile_scan_terms with thr: the sum over the terms of the largest
 * bound of each term's blocks overlapping the tile, plus the segment's
 * prior bound (gpuir_prior_bound), times
 * GPUIR_BOUND_SLACK, rounded up to float, against the query's threshold
 * as thread 0 read it; true (in every thread: they read the same shared
 * values) when the bound is strictly below it, so that no document of the
 * tile can be in the top-k (one scoring exactly the threshold may still
 * win by docID).
 */
__device__ static inline bool
gpuir_tile_bound_below(const GpuirTileSmem &sm, double prior_bound)
{
	double		total = prior_bound;
	float		f;

	for (int w = 0; w < GPUIR_SEARCH_WARPS; w++)
		total += sm.bsum[w];
	f = __double2float_ru(total * GPUIR_BOUND_SLACK_DEV);
	return !isnan(f) && f < sm.thb;
}

/*
 * gpuir_tile_or: accumulate the OR scores of the tile (term j's list read
 * from the decoded area when qoff is not NULL and qoff[j] names a place
 * there); with thr (BMW), first skip the tile when its block-max bound is
 * below the query's threshold (gpuir_tile_bound_below; counted in stats,
 * debug, may be NULL).  1 when some document matched (sm.cur, sm.acc), 0
 * when no list reaches the tile or BMW skipped it, -1 corrupt.
 */
__device__ static int
gpuir_tile_or(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc,
			  const gpuir_cuda_term *qt, const uint32_t *qoff, const GpuirDecoded &dec,
			  uint32_t nt, uint32_t lo, uint32_t hi, const uint32_t *thr,
			  GpuirSearchDevStats *stats, GpuirTileSmem &sm)
{
	if (!gpuir_tile_scan_terms(seg, sc, qt, qoff, dec, nt, lo, hi, thr, sm))
		return 0;
	if (thr != NULL && gpuir_tile_bound_below(sm, gpuir_prior_bound(seg, sc)))
	{
		if (stats != NULL && threadIdx.x == 0)
			atomicAdd(&stats->tiles_pruned, 1ull);
		return 0;
	}
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
		if (!gpuir_tile_term(seg, sc, term, first, lo, hi,
							 qoff != NULL ? qoff[j] : GPUIR_NOT_DECODED, dec, sm))
			return -1;
	}
	__syncthreads();
	return 1;
}

/*
 * gpuir_tile_candidates: keep in the match bitmap sm.cur only the tile's
 * candidates, the matched documents that are not deleted and score at
 * least sm.th (the query's threshold when the tile was scored: a document
 * below it cannot be in the top-k), and add their number to sm.total (zero
 * before the call).  In a segment with priors, each live document's prior
 * is added to its accumulator (gpuir_prior_add) before the threshold test:
 * sm.acc then holds final scores.  Visits the bitmap's words and their set
 * bits only, never the empty slots.  Ends with a barrier, so sm.total is
 * final.
 */
__device__ static void
gpuir_tile_candidates(const gpuir_cuda_segment &seg, const gpuir_cuda_scoring &sc, uint32_t lo,
					  GpuirTileSmem &sm)
{
	const float th = sm.th;
	uint32_t	cnt = 0;

	for (uint32_t w = threadIdx.x; w < GPUIR_TILE_WORDS; w += GPUIR_SEARCH_THREADS)
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
		}
		if (seg.prior != NULL)
			for (uint32_t r = v; r != 0; r &= r - 1)
			{
				const uint32_t i = 32 * w + (uint32_t) (__ffs(r) - 1);

				sm.acc[i] = gpuir_prior_add(seg, sc, sm.acc[i], lo + i);
			}
		if (v != 0 && th > 0.0f)
			for (uint32_t r = v; r != 0; r &= r - 1)
			{
				const uint32_t b = __ffs(r) - 1;

				if (!(sm.acc[32 * w + b] >= th))
					v &= ~(1u << b);
			}
		sm.cur[w] = v;
		cnt += __popc(v);
	}
	for (int s = 16; s > 0; s >>= 1)
		cnt += __shfl_down_sync(0xFFFFFFFFu, cnt, s);
	if ((threadIdx.x & 31) == 0 && cnt > 0)
		atomicAdd(&sm.total, cnt);
	__syncthreads();
}

#endif							/* GPUIR_SEARCH_TILE_CUH */
