/*-------------------------------------------------------------------------
 *
 * gpuir_search_and.cuh
 *	  Device routines and kernel of the search's AND queries
 *	  (gpuir_search.cu): the work follows the shortest list's blocks, one
 *	  thread block per block, and the longer lists are decoded only in the
 *	  blocks that can hold one of its candidates.
 *
 * Ding, He, Yan, Suel, "Using Graphics Processors for High Performance IR
 * Query Processing", WWW 2009, sections 7 and 8.1 (Parallel Merge Find):
 * the docIDs of the shortest list are the candidates, and each is looked
 * up in the longer lists by binary search of block_last, the last docID of
 * each block, so that only the blocks found are decompressed.  Here a
 * thread block of GPUIR_AND_THREADS threads takes one 128-posting block of
 * the shortest list (so a query's work is as many thread blocks as that
 * list has blocks, whatever the docID space: a query whose shortest list
 * has 40 postings is one thread block on a segment of 40 M documents); its
 * candidates, the block's docIDs that are in the segment's window and not
 * deleted, are kept compacted and ascending in shared memory, a thread
 * each.  The longer lists are taken from shortest to longest
 * (gpuir_and_probe):
 *	1. each candidate's thread finds the block of the list that may hold
 *	   it: a lower bound in block_last, searched between the blocks of the
 *	   smallest and the largest candidate (32-ary warp search; for the
 *	   second list, those of the shortest block's first and last docID,
 *	   searched by warp 2 while warps 0 and 1 decode that block);
 *	2. the distinct blocks found are listed, and the warps decode their
 *	   docIDs at once (warp w the blocks w, w + GPUIR_AND_WARPS, ...); a
 *	   block's candidates are looked up by binary search in a copy of its
 *	   docIDs in the warp's shared memory, or, up to GPUIR_AND_FEW of them,
 *	   each compared with the docIDs in the lanes' registers: a candidate
 *	   not there is dropped, the tf of one found is read alone
 *	   (gpuir_block_tf: most postings of a longer list's block are no
 *	   candidate, so its tf section is checked but not unpacked);
 *	3. the survivors are compacted; the thread block stops when none is
 *	   left.
 * A list much longer than the candidates costs about one block decode per
 * candidate (a block of it holding two candidates is decoded once), a
 * list of about the candidates' density about one per block of the
 * shortest list.  The survivors are then scored in the query's term order
 * (the order of the CPU's float additions, from 0.0f): the tfs found by
 * the probes are kept in shared memory for the first GPUIR_AND_TF_ROWS
 * terms (and the shortest list), and the lists of later terms probed again
 * (only the survivors' blocks).
 *	Measured (H200, 40 M documents, TREC 2005 log, batches of 1000,
 *	bench/results/2026-11-27-h200-and-probe.md): 256 threads a thread
 *	block, 90,600 q/s (63% of the warps' cycles waiting at barriers);
 *	no shared list of blocks nor compaction, each warp probing for its own
 *	32 candidates, 118,000 q/s (a block holding candidates of two warps is
 *	decoded twice: 39% more blocks); 128 threads as here, 145,000 q/s, and
 *	with registers capped for 12 thread blocks an SM (some spilled),
 *	153,000-156,000 against 141,000-144,000 (8 thread blocks: 0.95x).  A
 *	warp per block of the shortest list, 4 candidates a lane, took 118
 *	registers and decoded up to 128 blocks one after another: 0.64x of the
 *	tile kernel at batch 1 on the generated corpus.
 *
 * Top-k: a thread block keeps its survivors at or above the query's
 * threshold; when more than k are, only their k best (gpuir_block_select
 * on the result key, score descending, docID ascending: no other survivor
 * of it can be in the query's top-k).  When it keeps k, it publishes the
 * lowest kept score as the query's threshold (k non-deleted, fully scored
 * documents: a lower bound of the query's k-th best, as the tiles' do).
 * Once the threshold has risen, most thread blocks keep fewer than k and
 * skip the select.  It appends to the query's candidate region those of
 * its kept survivors still at or above the threshold it then reads, and the
 * final (and partial) kernels select the k best of the candidates.  A
 * query's candidates are thus at most min(k, 128) per block of its
 * shortest list, and at most that list's postings: the region plan_query
 * gives it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_SEARCH_AND_CUH
#define GPUIR_SEARCH_AND_CUH

#include <stdint.h>

#include "gpuir_search_tile.cuh"
#include "gpuir_topk.cuh"

#define GPUIR_AND_THREADS		128		/* AND kernel: a thread per candidate */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define GPUIR_AND_MIN_BLOCKS	1		/* older cards (the PTX's JIT): no cap */
#else
#define GPUIR_AND_MIN_BLOCKS	12		/* its thread blocks per SM on sm_90: 40 registers a thread */
#endif
#define GPUIR_AND_WARPS			(GPUIR_AND_THREADS / 32)
#define GPUIR_AND_CAND			GPUIR_CUDA_BLOCK_SIZE	/* candidates of a thread block */
#define GPUIR_AND_TF_ROWS		8		/* terms (query order) whose tfs are kept */
#define GPUIR_AND_NO_BLOCK		UINT32_MAX
#define GPUIR_AND_FEW			4		/* a probed block's candidates looked up one by one */

static_assert(GPUIR_DECODE_PER_LANE * 32 == GPUIR_CUDA_BLOCK_SIZE,
			  "a warp decodes one block, GPUIR_DECODE_PER_LANE postings a lane");
static_assert(GPUIR_AND_THREADS >= GPUIR_AND_CAND && GPUIR_AND_CAND % 32 == 0,
			  "a thread per candidate, whole warps");
static_assert(GPUIR_AND_WARPS >= 3, "two warps decode the shortest list's block, a third searches the second list");

/* shared memory of the AND kernel (about 12 KB) */
struct GpuirAndSmem
{
	/* the live candidates, ascending: docID, slot in the shortest block, probed block */
	uint32_t	cdoc[GPUIR_AND_CAND];
	uint32_t	cslot[GPUIR_AND_CAND];
	uint32_t	cbid[GPUIR_AND_CAND];
	uint32_t	ncand;
	/* the distinct probed blocks: blk[u] holds candidates blk_first[u] .. blk_first[u + 1] - 1 */
	uint32_t	blk[GPUIR_AND_CAND];
	uint32_t	blk_first[GPUIR_AND_CAND + 1];
	uint32_t	keep[GPUIR_AND_CAND];	/* candidate i found in the probed list */
	/* tfs by slot: the shortest list's, terms j < GPUIR_AND_TF_ROWS, a scratch row */
	uint32_t	tf0[GPUIR_AND_CAND];
	uint32_t	tf[GPUIR_AND_TF_ROWS + 1][GPUIR_AND_CAND];
	float		score[GPUIR_AND_CAND];
	float		th;				/* the query's threshold, as read for the select */
	unsigned long long kkey;	/* the lowest kept survivor's key (k survivors) */
	GpuirSelectTempStorage<GPUIR_AND_THREADS> sel;	/* the k-best select's */
	/*
	 * each warp's decoded block: its docIDs (the tfs found are read
	 * singly); during a decode, the warp's patch
	 * (gpuir_warp_decode_listed_block)
	 */
	__align__(GPUIR_PATCH_ALIGN) uint32_t wdoc[GPUIR_AND_WARPS][GPUIR_CUDA_BLOCK_SIZE];
	uint32_t	wsum[GPUIR_AND_WARPS];	/* gpuir_and_compact's warp counts */
	uint32_t	base;			/* first candidate slot of the thread block */
	uint32_t	bad;			/* a corrupt block */
	uint32_t	bad0[2];		/* the shortest block's docIDs (warp 0), tfs (warp 1) corrupt */
	uint32_t	range1[2];		/* the second list's blocks that may hold a candidate (warp 2) */
	uint32_t	stop;			/* the batch had failed when the thread block began */
};

/*
 * gpuir_and_compact: the position of the calling thread's item among the
 * thread block's items with keep set, in thread order, and (in every
 * thread) their number.  Every thread calls it; two barriers.
 */
__device__ static inline uint32_t
gpuir_and_compact(bool keep, uint32_t *total, GpuirAndSmem &sm)
{
	const uint32_t warp = threadIdx.x >> 5;
	const uint32_t lane = threadIdx.x & 31;
	const unsigned m = __ballot_sync(0xFFFFFFFFu, keep);
	uint32_t	before = 0,
				all = 0;

	if (lane == 0)
		sm.wsum[warp] = (uint32_t) __popc(m);
	__syncthreads();
	for (uint32_t w = 0; w < GPUIR_AND_WARPS; w++)
	{
		const uint32_t c = sm.wsum[w];

		before += (w < warp) ? c : 0;
		all += c;
	}
	__syncthreads();			/* wsum is read before the next call writes it */
	*total = all;
	return before + (uint32_t) __popc(m & ((1u << lane) - 1));
}

/*
 * gpuir_and_keep: the candidates for which keep is set, the calling
 * thread's being docID d at slot sl of the shortest list's block, written
 * compacted (in thread order) to the front of cdoc and cslot, and their
 * number to ncand.  Every thread calls it (d and sl read before: it
 * overwrites cdoc and cslot); three barriers, the last after ncand.
 */
__device__ static inline void
gpuir_and_keep(bool keep, uint32_t d, uint32_t sl, GpuirAndSmem &sm)
{
	uint32_t	total;
	const uint32_t pos = gpuir_and_compact(keep, &total, sm);

	if (keep)
	{
		sm.cdoc[pos] = d;
		sm.cslot[pos] = sl;
	}
	if (threadIdx.x == 0)
		sm.ncand = total;
	__syncthreads();
}

/* the first i in [0, n) with a(i) >= x, n if none (a ascending) */
template <typename Load>
__device__ static inline uint32_t
gpuir_lower_bound(uint32_t n, uint32_t x, Load a)
{
	uint32_t	l = 0,
				h = n;

	while (l < h)
	{
		const uint32_t mid = l + (h - l) / 2;

		if (a(mid) < x)
			l = mid + 1;
		else
			h = mid;
	}
	return l;
}

/*
 * gpuir_and_found: candidate i was found at posting p of the probed block
 * at in (layout lay, from gpuir_tile_decode): its tf (read alone) into
 * row[its slot], and it is kept; a corrupt tf sets sm.bad
 */
__device__ static inline void
gpuir_and_found(const uint8_t *in, const GpuirBlockLayout &lay, uint32_t p, uint32_t i,
				uint32_t *row, GpuirAndSmem &sm)
{
	uint32_t	tf;

	if (!gpuir_block_tf<true>(in, lay, p, &tf))
		sm.bad = 1;
	row[sm.cslot[i]] = tf;
	sm.keep[i] = 1;
}

/*
 * gpuir_and_probe: look the thread block's live candidates (sm.cdoc[0 ..
 * sm.ncand)) up in term's list, storing the tf of each found into row[its
 * slot]; with drop, the candidates not found are removed (the survivors
 * stay compacted and ascending), without it every candidate must be found
 * (a list probed again).  Decodes only the blocks that hold a candidate's
 * docID, each once, checked as gpuir_tile_decode checks them (their tf
 * sections as the CPU reader checks a block decoded without tfs; counted
 * in *ndec).  range, when not NULL, gives list blocks [range[0], range[1])
 * that hold every block that may hold a candidate (found beforehand),
 * else they are searched.  Every thread calls it; false (in every thread)
 * when a block is corrupt.
 */
__device__ static bool
gpuir_and_probe(const gpuir_cuda_segment &seg, const gpuir_cuda_term &term, uint32_t *row,
				bool drop, const uint32_t *range, GpuirAndSmem &sm, uint32_t *ndec)
{
	const uint32_t fb = term.first_block;
	const uint32_t end = fb + term.nblocks;
	const uint32_t t = threadIdx.x;
	const uint32_t warp = t >> 5;
	const uint32_t lane = t & 31;
	const uint32_t nc = sm.ncand;
	uint32_t	bid = GPUIR_AND_NO_BLOCK,
				blo,
				bend,
				nblk,
				pos;
	bool		start;

	/*
	 * The blocks searched, [blo, bend): from the smallest candidate's to
	 * the largest's (every warp finds them, with the same loads), or the
	 * range given
	 */
	if (range != NULL)
	{
		blo = range[0];
		bend = range[1];
	}
	else
		gpuir_warp_block_range(seg.block_last, fb, end, sm.cdoc[0], sm.cdoc[nc - 1], &blo, &bend);
	if (t < nc)
	{
		const uint32_t i = gpuir_lower_bound(bend - blo, sm.cdoc[t],
											 [&](uint32_t m) { return seg.block_last[blo + m]; });

		if (blo + i < bend)
			bid = blo + i;		/* else past the list's last docID: not in it */
		sm.cbid[t] = bid;
		sm.keep[t] = 0;
	}
	__syncthreads();

	/* the distinct blocks, ascending (the candidates are) */
	start = t < nc && bid != GPUIR_AND_NO_BLOCK && (t == 0 || sm.cbid[t - 1] != bid);
	pos = gpuir_and_compact(start, &nblk, sm);
	if (start)
	{
		sm.blk[pos] = bid;
		sm.blk_first[pos] = t;
	}
	if (t == 0)
	{
		uint32_t	n = nc;

		while (n > 0 && sm.cbid[n - 1] == GPUIR_AND_NO_BLOCK)
			n--;				/* candidates past the list's end come last */
		sm.blk_first[nblk] = n;
		sm.bad = 0;
	}
	__syncthreads();

	/* each warp decodes some of them and looks their candidates up */
	for (uint32_t u = warp; u < nblk; u += GPUIR_AND_WARPS)
	{
		const uint32_t blk = sm.blk[u];
		uint32_t	bd[GPUIR_DECODE_PER_LANE],
					bt[GPUIR_DECODE_PER_LANE];
		GpuirBlockLayout lay;
		const int	n = gpuir_tile_decode<GPUIR_UNPACK_VALUES>(seg, term, blk, true, false, bd,
																bt, sm.wdoc[warp], &lay);
		const uint8_t *in = seg.payload + seg.block_offset[blk];

		if (n < 0)
		{
			if (lane == 0)
				sm.bad = 1;
			break;
		}
		(*ndec)++;
		if (sm.blk_first[u + 1] - sm.blk_first[u] <= GPUIR_AND_FEW)
		{
			/*
			 * Few candidates in the block (the usual case of a list much
			 * longer than the candidates): each is compared with the
			 * docIDs in the lanes' registers, and the lane holding it
			 * reads its tf
			 */
			for (uint32_t i = sm.blk_first[u]; i < sm.blk_first[u + 1]; i++)
			{
				const uint32_t d = sm.cdoc[i];
				int			hit = -1;

#pragma unroll
				for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
					if ((int) (GPUIR_DECODE_PER_LANE * lane + r) < n && bd[r] == d)
						hit = r;
				if (hit >= 0)
					gpuir_and_found(in, lay, GPUIR_DECODE_PER_LANE * lane + hit, i, row, sm);
			}
			continue;
		}
		__syncwarp();			/* the last block's lookups are done */
#pragma unroll
		for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		{
			const uint32_t p = GPUIR_DECODE_PER_LANE * lane + r;

			sm.wdoc[warp][p] = ((int) p < n) ? bd[r] : UINT32_MAX;
		}
		__syncwarp();
		for (uint32_t i = sm.blk_first[u] + lane; i < sm.blk_first[u + 1]; i += 32)
		{
			const uint32_t d = sm.cdoc[i];
			const uint32_t p = gpuir_lower_bound((uint32_t) n, d,
												 [&](uint32_t m) { return sm.wdoc[warp][m]; });

			if (p < (uint32_t) n && sm.wdoc[warp][p] == d)
				gpuir_and_found(in, lay, p, i, row, sm);
		}
	}
	__syncthreads();
	if (sm.bad)
		return false;
	if (!drop)
		return true;

	/* the survivors, compacted */
	{
		const bool	k = t < nc && sm.keep[t] != 0;

		gpuir_and_keep(k, k ? sm.cdoc[t] : 0, k ? sm.cslot[t] : 0, sm);
	}
	return true;
}

/*
 * gpuir_item_of: the work item of thread block g of a kernel whose items
 * have start[w + 1] - start[w] thread blocks each (start[0 .. nw], prefix
 * sums mod 2^32, as plan_query builds and_start): the last w
 * with start[w] - start[0] <= g, which has a thread block.  A 32-ary
 * search by the calling warp (every lane calls it with the same
 * arguments): each step's 32 loads are issued at once, so a batch of 1000
 * items costs two dependent loads, not ten.
 */
__device__ static inline uint32_t
gpuir_item_of(const uint32_t *start, uint32_t nw, uint32_t g)
{
	const uint32_t lane = threadIdx.x & 31;
	const uint32_t base0 = start[0];
	uint32_t	l = 0,
				h = nw;

	/* start[l] - base0 <= g, and the answer is in [l, h) */
	while (h - l > 1)
	{
		const uint32_t step = (h - l + 31) / 32;
		const uint32_t i = l + lane * step;
		const unsigned m = __ballot_sync(0xFFFFFFFFu, i < h && start[i] - base0 <= g);
		const uint32_t last = 31 - (uint32_t) __clz(m);	/* lane 0's i = l is in m */

		l += last * step;
		h = min(h, l + step);
	}
	return l;
}

/*
 * gpuir_and_emit: the end of an AND (or MaxScore, gpuir_search_maxscore.cuh)
 * thread block, whose thread t < sm.ncand holds candidate t, docID
 * sm.cdoc[t], fully scored score (its prior added): the candidates at or above the query's
 * threshold *thr (read once, by one thread: every thread must agree on the
 * keys selected from); of more than k, only their k best can be in the
 * query's top-k; the lowest of k kept bounds the query's k-th best score
 * from below and is published as its threshold.  Those still at or above
 * the threshold it then reads (other blocks' raises) are appended to the
 * query's candidate region (qw.cand_off, counted in *count; more than
 * qw.cand_cap sets *corrupt).  Every thread calls it.
 */
__device__ static void
gpuir_and_emit(float score, const GpuirSearchWork &qw, uint32_t *thr, uint64_t *cand,
			   uint32_t *count, uint32_t *corrupt, GpuirAndSmem &sm)
{
	const uint32_t t = threadIdx.x;
	uint32_t	total,
				pos;
	bool		live;

	if (t < sm.ncand)
		sm.score[t] = score;
	if (t == 0)
		sm.th = gpuir_threshold_read(thr);
	__syncthreads();
	live = t < sm.ncand && !(sm.th > 0.0f && !(score >= sm.th));
	{
		const uint32_t above = (uint32_t) __syncthreads_count(live);
		const uint32_t ncand = sm.ncand;
		const float th = sm.th;

		if (above > qw.k)
		{
			/* radix select (gpuir_topk.cuh): every thread owns key t */
			const uint64_t kth = gpuir_block_select<GPUIR_AND_THREADS>(
				[&](uint64_t i) -> uint64_t {
					if (i >= ncand || (th > 0.0f && !(sm.score[i] >= th)))
						return 0;
					return gpuir_result_key(sm.score[i], sm.cdoc[i]);
				},
				GPUIR_AND_THREADS, qw.k, sm.sel);

			live = live && gpuir_result_key(score, sm.cdoc[t]) >= kth;
			if (t == 0)
				gpuir_threshold_raise(thr, gpuir_key_to_score(kth));
		}
		else if (above == qw.k && qw.k > 0)
		{
			/* all of them are kept; the lowest one's score is the bound */
			if (t == 0)
				sm.kkey = ~0ull;
			__syncthreads();
			if (live)
				atomicMin(&sm.kkey, (unsigned long long) gpuir_result_key(score, sm.cdoc[t]));
			__syncthreads();
			if (t == 0)
				gpuir_threshold_raise(thr, gpuir_key_to_score(sm.kkey));
		}
	}

	{
		const float th = gpuir_threshold_read(thr);	/* other blocks' raises */

		if (live && th > 0.0f && !(score >= th))
			live = false;
	}

	/* append them to the query's candidates */
	pos = gpuir_and_compact(live, &total, sm);
	if (total == 0)
		return;
	if (t == 0)
		sm.base = gpuir_claim_slots(count, total, qw.cand_cap, corrupt, false);
	__syncthreads();
	if (live && sm.base != UINT32_MAX)
		cand[qw.cand_off + sm.base + pos] = gpuir_result_key(score, sm.cdoc[t]);
}

/*
 * gpuir_search_and_kernel: the AND queries of a chunk (GpuirSearchWork
 * work[0 .. nw)), one thread block per block of each query's shortest
 * list: and_start[w] - and_start[0] is the first thread block of item w
 * (and_start[w + 1] - and_start[w] its shortest list's blocks, 0 for items
 * that are not AND; the entries may wrap around 2^32, their differences
 * within the chunk do not); a grid of and_start[nw] - and_start[0] thread
 * blocks of GPUIR_AND_THREADS threads.  order holds each AND query's term
 * indexes from the shortest list to the longest (work.order_off).
 * Survivors at or above the query's threshold thr[w] are appended to its
 * candidate region cand[cand_off ..], counted in cand_count[w]; more than
 * its cand_cap, or a corrupt block, sets *corrupt.  Documents outside a
 * windowed segment's window and deleted ones never qualify.  stats (debug,
 * may be NULL) counts decoded blocks.
 */
__global__ void __launch_bounds__(GPUIR_AND_THREADS, GPUIR_AND_MIN_BLOCKS)
gpuir_search_and_kernel(gpuir_cuda_segment seg, gpuir_cuda_scoring sc,
						const GpuirSearchWork *__restrict__ work,
						const uint32_t *__restrict__ and_start, uint32_t nw,
						const gpuir_cuda_term *__restrict__ terms,
						const uint32_t *__restrict__ order, uint32_t *thr,
						uint64_t *__restrict__ cand, uint32_t *__restrict__ cand_count,
						uint32_t *corrupt, GpuirSearchDevStats *stats)
{
	gpuir_pdl_start();
	__shared__ GpuirAndSmem sm;
	const uint32_t t = threadIdx.x;
	const uint32_t warp = t >> 5;
	const uint32_t lane = t & 31;
	const uint32_t base0 = and_start[0];
	const uint32_t g = blockIdx.x;
	const uint32_t wlo = gpuir_window_lo(seg);
	const uint32_t whi = gpuir_window_hi(seg);
	uint32_t	ndec = 0;
	float		score = 0.0f;
	bool		live,
				bad = false;

	const uint32_t l = gpuir_item_of(and_start, nw, g);
	const GpuirSearchWork qw = work[l];
	const gpuir_cuda_term *qt = terms + qw.first_term;
	const uint32_t *ord = order + qw.order_off;
	const uint32_t s = ord[0];
	const gpuir_cuda_term st = qt[s];
	const uint32_t b = st.first_block + (g - (and_start[l] - base0));

	/* the shortest list's block: its docIDs in the window, not deleted */
	if (seg.windowed &&
		(seg.block_last[b] < wlo ||
		 (b > st.first_block && seg.block_last[b - 1] >= whi - 1)))
		return;					/* no docID of the block in the window */
	if (warp < 2)
	{
		/* warp 0 decodes its docIDs, warp 1 at the same time its tfs */
		const bool	docs = (warp == 0);
		uint32_t	bd[GPUIR_DECODE_PER_LANE],
					bt[GPUIR_DECODE_PER_LANE];
		const int	n = gpuir_tile_decode<GPUIR_UNPACK_VALUES>(seg, st, b, docs, !docs, bd, bt,
																sm.wdoc[warp]);

#pragma unroll
		for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		{
			const uint32_t p = GPUIR_DECODE_PER_LANE * lane + r;

			if (docs)
				sm.wdoc[0][p] = ((int) p < n) ? bd[r] : UINT32_MAX;
			else
				sm.tf0[p] = bt[r];
		}
		if (lane == 0)
		{
			sm.bad0[warp] = (n < 0);
			if (docs)
				sm.stop = *(volatile uint32_t *) corrupt;
		}
		ndec = docs ? 1 : 0;
	}
	else if (warp == 2 && qw.nterms > 1)
	{
		/*
		 * Meanwhile the blocks of the second list that may hold one of
		 * the block's docIDs: a superset of the first probe's search
		 */
		const gpuir_cuda_term t1 = qt[ord[1]];
		const uint32_t dlo = (b > st.first_block) ? seg.block_last[b - 1] + 1 : 0;
		uint32_t	blo,
					bend;

		gpuir_warp_block_range(seg.block_last, t1.first_block, t1.first_block + t1.nblocks,
							   dlo, seg.block_last[b], &blo, &bend);
		if (lane == 0)
		{
			sm.range1[0] = blo;
			sm.range1[1] = bend;
		}
	}
	__syncthreads();
	if (sm.stop)
		return;					/* the batch fails anyway */
	if (sm.bad0[0] || sm.bad0[1])
	{
		bad = true;
		goto done;
	}
	{
		const uint32_t d = (t < GPUIR_AND_CAND) ? sm.wdoc[0][t] : UINT32_MAX;

		live = d != UINT32_MAX && d >= wlo && d < whi &&
			!(seg.deleted != NULL && (seg.deleted[d >> 3] >> (d & 7)) & 1);
		gpuir_and_keep(live, d, t, sm);
	}

	/* the longer lists, shortest first: drop the candidates they lack */
	for (uint32_t jj = 1; jj < qw.nterms && sm.ncand > 0; jj++)
	{
		const uint32_t j = ord[jj];

		if (!gpuir_and_probe(seg, qt[j], sm.tf[min(j, (uint32_t) GPUIR_AND_TF_ROWS)], true,
							 jj == 1 ? sm.range1 : NULL, sm, &ndec))
		{
			bad = true;
			goto done;
		}
	}
	if (sm.ncand == 0)
		goto done;

	/* the survivors' scores, in query term order from 0.0f */
	for (uint32_t j = 0; j < qw.nterms; j++)
	{
		const uint32_t *row = (j == s) ? sm.tf0 : sm.tf[min(j, (uint32_t) GPUIR_AND_TF_ROWS)];

		if (j != s && j >= GPUIR_AND_TF_ROWS &&
			!gpuir_and_probe(seg, qt[j], sm.tf[GPUIR_AND_TF_ROWS], false, NULL, sm, &ndec))
		{
			bad = true;
			goto done;
		}
		if (t < sm.ncand)
		{
			const uint32_t d = sm.cdoc[t];

			score = __fadd_rn(score, gpuir_bm25(qt[j].idf, row[sm.cslot[t]], gpuir_doclen(seg, d), sc));
		}
	}
	if (t < sm.ncand)
		score = gpuir_prior_add(seg, sc, score, sm.cdoc[t]);

	gpuir_and_emit(score, qw, &thr[l], cand, &cand_count[l], corrupt, sm);

done:
	if (bad && t == 0)
		atomicOr(corrupt, 1u);
	if (!bad && stats != NULL && lane == 0 && ndec > 0)
		atomicAdd(&stats->blocks_decoded, (unsigned long long) ndec);
}

#endif							/* GPUIR_SEARCH_AND_CUH */
