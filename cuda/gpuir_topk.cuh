/*-------------------------------------------------------------------------
 *
 * gpuir_topk.cuh
 *	  Device routines for exact top-k selection: the 64-bit result key
 *	  (score, docID) and a block-wide radix select over such keys.
 *
 * A result is ordered by score descending, then docID ascending (the CPU
 * engine's total order, src/gpuirengine.c).  Both fit in one unsigned
 * 64-bit key whose natural order is that order reversed:
 *
 *	key = score_key(score) << 32 | ~docID
 *
 * score_key maps a float's bits to an unsigned integer that orders like the
 * float (the radix sort trick: flip every bit of a negative float, only the
 * sign bit of a positive one).  A docID is at most 0xFFFFFFFE, so ~docID is
 * never 0 and a real key never 0: key 0 means "no result".  Keys of
 * different documents are distinct, so "the k largest keys" is always a
 * set of exactly k keys, which makes the selection below tie-free and
 * deterministic.  (Scores are sums starting from +0.0f, never -0.0f, and
 * never NaN for valid constants, so float and key order agree.)
 *
 * The selection is the data-parallel top-N extraction of Stanfill,
 * "Parallel Information Retrieval Algorithms" (1992), as a most
 * significant digit first radix select: 8 passes of 8 bits at most, each
 * building a 256-bin histogram of the keys that share the digits fixed so
 * far; the digit holding the k-th largest key is found by a block-wide scan
 * of the histogram; it stops as soon as that digit's bin holds exactly the
 * keys still needed.  Ding et al. (WWW 2009, section 8.3) apply it at two
 * levels: per docID tile, then per query.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_TOPK_CUH
#define GPUIR_TOPK_CUH

#include <stdint.h>

#include <cub/block/block_scan.cuh>

/*
 * keys each thread loads before it uses the first, in a block-wide pass
 * over keys: gpuir_search.cu's gpuir_block_topk reads a query's candidates
 * from global memory with one thread block, bound by the latency of its
 * loads rather than by bandwidth, so eight are kept in flight;
 * gpuir_block_select and gpuir_block_emit read in the same rounds (they
 * now run over gpuir_block_topk's buffer in shared memory).
 */
#define GPUIR_KEYS_IN_FLIGHT	8

/* score_key: float bits -> unsigned integer with the float's order */
__device__ static inline uint32_t
gpuir_score_key(float s)
{
	uint32_t	u = __float_as_uint(s);

	return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/* inverse of gpuir_score_key */
__device__ static inline float
gpuir_key_score(uint32_t k)
{
	return __uint_as_float((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k);
}

/* the result key of (score, docID); never 0 */
__device__ static inline uint64_t
gpuir_result_key(float score, uint32_t docid)
{
	return ((uint64_t) gpuir_score_key(score) << 32) | (uint64_t) (~docid);
}

__device__ static inline uint32_t
gpuir_key_docid(uint64_t key)
{
	return ~(uint32_t) key;
}

__device__ static inline float
gpuir_key_to_score(uint64_t key)
{
	return gpuir_key_score((uint32_t) (key >> 32));
}

/* shared memory of gpuir_block_select */
template <int THREADS>
struct GpuirSelectTempStorage
{
	uint32_t	hist[256];
	typename cub::BlockScan<uint32_t, THREADS>::TempStorage scan;
	uint32_t	digit;			/* digit holding the k-th largest key */
	uint32_t	above;			/* keys in bins above it, this pass */
};

/*
 * gpuir_warp_count: add 1 to hist[bin] for every lane of the warp with bin
 * < 256, one shared-memory atomic per distinct bin (warp-aggregated, so
 * that keys crowding into few bins do not serialise).  Every lane of the
 * warp must call it (bin = 256 for "nothing to count").
 */
__device__ static inline void
gpuir_warp_count(uint32_t *hist, uint32_t bin)
{
	unsigned	peers = __match_any_sync(0xFFFFFFFFu, bin);

	if (bin < 256 && (threadIdx.x & 31) == (unsigned) (__ffs(peers) - 1))
		atomicAdd(&hist[bin], (uint32_t) __popc(peers));
}

/*
 * gpuir_block_kth_bin: block-wide, over counts ordered from the top (the
 * highest bin first), thread t holding those of positions PER t .. PER t +
 * PER - 1 in c[0 .. PER): find the position p at which the counts reach
 * need (those before p sum to less than need, those up to p inclusive to
 * at least need: the bin holding the need-th largest value), by one
 * cub::BlockScan exclusive sum.  Returns, in the thread holding p, its
 * index among that thread's positions (p - PER t), with *above the counts
 * before p; -1 in every other thread, and in all of them when the counts
 * sum to less than need.  need >= 1; blockDim.x == THREADS; every thread
 * calls it; ALG is the scan's algorithm (scan: its storage).  Used by the
 * radix select (256 bins of a key's digit), by the seed kernel (bins of a
 * float's bits, gpuir_search_maxscore.cuh) and by the tiles' score
 * histogram (gpuir_search.cu).
 */
template <int THREADS, int PER, cub::BlockScanAlgorithm ALG = cub::BLOCK_SCAN_RAKING>
__device__ static __forceinline__ int
gpuir_block_kth_bin(uint32_t (&c)[PER], uint32_t need,
					typename cub::BlockScan<uint32_t, THREADS, ALG>::TempStorage &scan,
					uint32_t *above)
{
	uint32_t	excl[PER];
	int			found = -1;

	cub::BlockScan<uint32_t, THREADS, ALG>(scan).ExclusiveSum(c, excl);
#pragma unroll
	for (int r = 0; r < PER; r++)
		if (excl[r] < need && excl[r] + c[r] >= need)
		{
			found = r;
			*above = excl[r];
		}
	return found;
}

/*
 * gpuir_radix_select: the pass driver of the radix selects below: the
 * smallest key thr such that exactly k of the keys are >= thr.  Each pass
 * clears ts.hist, calls count(prefix, mask, shift), which must add every
 * nonzero key with (key & mask) == prefix to ts.hist[(key >> shift) & 255]
 * through gpuir_warp_count (in every thread, converged), then finds the
 * digit holding the k-th largest key by a block-wide scan from the top
 * bin (gpuir_block_kth_bin), and stops as soon as that digit's bin holds
 * exactly the keys still needed.  Preconditions: more than k keys are
 * nonzero and the nonzero keys are distinct; blockDim.x == THREADS (a multiple of 32 dividing
 * 256); every thread calls it with the same k.  A caller that used ts for
 * something else must __syncthreads() first; ts is free again when it
 * returns.  At most 8 passes.
 */
template <int THREADS, typename Count>
__device__ static inline uint64_t
gpuir_radix_select(uint32_t k, GpuirSelectTempStorage<THREADS> &ts, Count count)
{
	const int	BINS = 256 / THREADS;	/* histogram bins per thread */
	const int	t = threadIdx.x;
	uint64_t	prefix = 0;
	uint64_t	mask = 0;
	uint32_t	need = k;

	static_assert(THREADS % 32 == 0 && 256 % THREADS == 0, "THREADS must be 32, 64, 128 or 256");
	for (int shift = 56; shift >= 0; shift -= 8)
	{
		uint32_t	cnt[BINS],
					above;
		uint32_t	inbin;
		int			r;

		for (int i = t; i < 256; i += THREADS)
			ts.hist[i] = 0;
		__syncthreads();
		count(prefix, mask, shift);
		__syncthreads();

		/* thread t owns digits 255 - (t * BINS + r): a scan from the top */
		for (int i = 0; i < BINS; i++)
			cnt[i] = ts.hist[255 - (t * BINS + i)];
		r = gpuir_block_kth_bin<THREADS, BINS>(cnt, need, ts.scan, &above);
		if (r >= 0)
		{
			ts.digit = 255 - (t * BINS + r);
			ts.above = above;
		}
		__syncthreads();
		need -= ts.above;
		prefix |= (uint64_t) ts.digit << shift;
		mask |= (uint64_t) 0xFF << shift;
		inbin = ts.hist[ts.digit];
		__syncthreads();		/* everyone read ts before the next pass */
		if (inbin == need)
			break;				/* every key with this prefix is in */
	}
	return prefix;
}

/*
 * gpuir_block_select: gpuir_radix_select over the keys get(0) .. get(n -
 * 1), ignoring keys equal to 0.  Same preconditions, and every thread
 * calls it with the same n (the item loop then runs the same number of
 * rounds in every thread, as the warp-wide histogram update needs); get(i)
 * returns the same key every time.
 */
template <int THREADS, typename Get>
__device__ static inline uint64_t
gpuir_block_select(Get get, uint64_t n, uint32_t k, GpuirSelectTempStorage<THREADS> &ts)
{
	return gpuir_radix_select<THREADS>(k, ts, [&](uint64_t prefix, uint64_t mask, int shift) {
		for (uint64_t base = 0; base < n; base += THREADS * GPUIR_KEYS_IN_FLIGHT)
		{
			uint64_t	key[GPUIR_KEYS_IN_FLIGHT];

#pragma unroll
			for (int r = 0; r < GPUIR_KEYS_IN_FLIGHT; r++)
			{
				const uint64_t i = base + (uint64_t) r * THREADS + threadIdx.x;

				key[r] = (i < n) ? get(i) : 0;
			}
#pragma unroll
			for (int r = 0; r < GPUIR_KEYS_IN_FLIGHT; r++)
			{
				uint32_t	bin = 256;

				if (key[r] != 0 && (key[r] & mask) == prefix)
					bin = (uint32_t) (key[r] >> shift) & 255;
				gpuir_warp_count(ts.hist, bin);
			}
		}
	});
}

/*
 * gpuir_bits_select: gpuir_radix_select over the keys key_of(i) of the set
 * bits i of bits[0 .. nwords) only, for a sparse bitmap: each pass reads
 * the words and visits their set bits, never the clear ones, so its cost
 * follows the number of keys rather than the bitmap's size.  Same
 * preconditions, with "the keys" those of the set bits (more than k of
 * them, distinct, none 0); bits and key_of must not change during the
 * call.  Lanes stay converged (one set bit per lane per round) for the
 * warp-aggregated histogram update.
 */
template <int THREADS, typename KeyOf>
__device__ static inline uint64_t
gpuir_bits_select(const uint32_t *bits, uint32_t nwords, KeyOf key_of, uint32_t k,
				  GpuirSelectTempStorage<THREADS> &ts)
{
	return gpuir_radix_select<THREADS>(k, ts, [&](uint64_t prefix, uint64_t mask, int shift) {
		for (uint32_t base = 0; base < nwords; base += THREADS)
		{
			const uint32_t w = base + threadIdx.x;
			uint32_t	v = (w < nwords) ? bits[w] : 0;

			while (__any_sync(0xFFFFFFFFu, v != 0))
			{
				uint32_t	bin = 256;

				if (v != 0)
				{
					const uint64_t key = key_of(32 * w + (uint32_t) (__ffs(v) - 1));

					v &= v - 1;
					if ((key & mask) == prefix)
						bin = (uint32_t) (key >> shift) & 255;
				}
				gpuir_warp_count(ts.hist, bin);
			}
		}
	});
}

/*
 * gpuir_warp_slot: warp-aggregated allocation of output slots: the lanes
 * with take set get distinct consecutive slots from *counter (shared
 * memory), one atomic per warp.  Every lane of the warp must call it;
 * returns the lane's slot (undefined when take is false).
 */
__device__ static inline uint32_t
gpuir_warp_slot(uint32_t *counter, bool take)
{
	unsigned	m = __ballot_sync(0xFFFFFFFFu, take);
	const int	lane = threadIdx.x & 31;
	uint32_t	base = 0;

	if (m == 0)
		return 0;
	if (lane == __ffs(m) - 1)
		base = atomicAdd(counter, (uint32_t) __popc(m));
	base = __shfl_sync(0xFFFFFFFFu, base, __ffs(m) - 1);
	return base + (uint32_t) __popc(m & ((1u << lane) - 1));
}

/*
 * gpuir_block_emit: block-wide, the nonzero keys of keys[0 .. n) that are
 * >= thr into out[0 .. take), in no particular order, the slots from *pos
 * (shared memory, 0 and visible to every thread before the call); keys
 * past take are dropped.  With thr from a radix select over the same keys
 * and take = min(k, keys), exactly the k largest land in out.  Every
 * thread of the block calls it with the same n (converged warps, for
 * gpuir_warp_slot).
 */
template <int THREADS>
__device__ static inline void
gpuir_block_emit(const uint64_t *keys, uint64_t n, uint64_t thr, uint32_t take,
				 uint32_t *pos, uint64_t *out)
{
	for (uint64_t base = 0; base < n; base += THREADS * GPUIR_KEYS_IN_FLIGHT)
	{
		uint64_t	key[GPUIR_KEYS_IN_FLIGHT];

#pragma unroll
		for (int r = 0; r < GPUIR_KEYS_IN_FLIGHT; r++)
		{
			const uint64_t i = base + (uint64_t) r * THREADS + threadIdx.x;

			key[r] = (i < n) ? keys[i] : 0;
		}
#pragma unroll
		for (int r = 0; r < GPUIR_KEYS_IN_FLIGHT; r++)
		{
			const bool	in = (key[r] != 0 && key[r] >= thr);
			const uint32_t slot = gpuir_warp_slot(pos, in);

			if (in && slot < take)
				out[slot] = key[r];
		}
	}
}

/*
 * gpuir_threshold_raise / gpuir_threshold_read: a query's shared top-k
 * threshold in global memory (Huang et al., ICA3PP 2017; Ding & Suel,
 * SIGIR 2011): the bit pattern of a float score that is always a lower
 * bound of the query's final k-th best score once it is above 0.  It only
 * takes positive scores (a negative idf, which the kernels accept, gives
 * negative ones), and the bit patterns of non-negative floats order like
 * the floats, so raising is an atomicMax on the bits.  Starts at 0 (0.0f),
 * which means "no bound yet", not "scores >= 0".
 */
__device__ static inline void
gpuir_threshold_raise(uint32_t *thr, float score)
{
	if (score > 0.0f)
		atomicMax(thr, __float_as_uint(score));
}

__device__ static inline float
gpuir_threshold_read(const uint32_t *thr)
{
	return __uint_as_float(*(const volatile uint32_t *) thr);
}

#endif							/* GPUIR_TOPK_CUH */
