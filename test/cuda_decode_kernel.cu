/*-------------------------------------------------------------------------
 *
 * cuda_decode_kernel.cu
 *	  Test-only batch decoding of gpuir posting blocks on the GPU: the
 *	  kernel gpuir_decode_blocks_kernel and its host launchers (contracts
 *	  in cuda_decode_kernel.h), for test/test_cuda_decode.c, which compares
 *	  the device decoder (cuda/gpuir_decode.cuh) with the CPU codec.  Not
 *	  part of gpuir.so: the Makefile's unittest section builds it with the
 *	  NVCC flags of cuda/.
 *
 * One warp per posting block (Ding, He, Yan, Suel, WWW 2009, section 6.2);
 * the per-block work is gpuir_warp_decode_block in cuda/gpuir_decode.cuh,
 * which the search kernels use as well.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>

#include "../cuda/gpuir_cuda_internal.cuh"
#include "../cuda/gpuir_decode.cuh"
#include "cuda_decode_kernel.h"

#define DECODE_WARPS	4		/* warps (posting blocks) per thread block */

/* gpuir_cuda_decode_tf_single's setting: tfs read one by one (1), the first alone (2) */
static int	tf_single = 0;

/* gpuir_cuda_decode_listed's setting, and the blocks decoded as a list's since */
static int	listed_blocks = 0;
__device__ unsigned long long listed_decoded;

/*
 * listed_gate: whether the block at in, with avail bytes available to it,
 * passes the host's gate for a list's block on the device (4-byte aligned,
 * its header sound and giving the length avail: gpuir_cuda_segment_upload's
 * directory checks), so that gpuir_warp_decode_listed_block may decode it;
 * gpuir_block_layout gives GpuirCodecBlockBytes' verdict and length on
 * every header (test/test_cuda_layout.cu, on the host), so this is the
 * host's gate
 */
__device__ static bool
listed_gate(const uint8_t *in, size_t avail)
{
	uint8_t		hdr[GPUIR_BLOCK_HEADER];
	GpuirBlockLayout l;

	if ((reinterpret_cast<uintptr_t>(in) & 3) != 0 || avail < GPUIR_BLOCK_HEADER)
		return false;
	gpuir_block_header<true>(in, hdr);
	return gpuir_block_layout(hdr, avail, &l) && l.total_bytes == avail;
}

/*
 * gpuir_decode_blocks_kernel: grid of ceil(nblocks / 4) thread blocks x 128
 * threads; warp w of thread block x decodes posting block b = 4 x + w (if
 * b < nblocks), the block at payload[offsets[b]] with docID[-1] =
 * prev_docids[b], and writes postings to docids/tfs[b * 128 ..], the count
 * (or GPUIR_CUDA_BLOCK_CORRUPT) to counts[b], and counts corrupt blocks in
 * *ncorrupt.  The bytes available to block b are payload_bytes - offset,
 * further limited by block_bytes[b] when block_bytes is not NULL.
 * docids / tfs may be NULL (section neither decoded nor validated);
 * ncorrupt may be NULL.  With single = 1, the tf section is not unpacked:
 * each lane reads its postings' tfs one by one (gpuir_block_tf, as the AND
 * kernel reads the tfs of the postings it finds), after the warp's decode
 * with the block's layout; with single = 2 only the first posting's tf is
 * read (the others stay 0), so the verdict is the decode's check alone.
 * The single modes unpack as the AND kernel does (GPUIR_UNPACK_VALUES),
 * the others as the tile kernels do (GPUIR_UNPACK_WORDS).  With listed set,
 * a block that passes listed_gate is decoded as a list's block
 * (gpuir_warp_decode_listed_block), as the search kernels decode them.
 */
__global__ void __launch_bounds__(32 * DECODE_WARPS)
gpuir_decode_blocks_kernel(const uint8_t *__restrict__ payload, size_t payload_bytes,
						   const uint32_t *__restrict__ block_offsets,
						   const uint32_t *__restrict__ block_bytes,
						   const uint32_t *__restrict__ prev_docids, uint32_t nblocks,
						   uint32_t *__restrict__ docids,
						   uint32_t *__restrict__ tfs,
						   int32_t *__restrict__ counts,
						   uint32_t *__restrict__ ncorrupt, int single, int listed)
{
	/* each warp's decode scratch (gpuir_warp_decode_block's patch) */
	__shared__ __align__(GPUIR_PATCH_ALIGN) uint32_t patch[DECODE_WARPS][GPUIR_BLOCK_SIZE];
	const uint32_t b = blockIdx.x * DECODE_WARPS + (threadIdx.x >> 5);
	const uint32_t lane = threadIdx.x & 31;
	size_t		out,
				avail;
	uint32_t	off;
	const uint8_t *in;
	bool		as_listed;
	uint32_t	docid[GPUIR_DECODE_PER_LANE],
				tf[GPUIR_DECODE_PER_LANE];
	int			count;

	if (b >= nblocks)
		return;					/* the whole warp */
	out = (size_t) b * GPUIR_BLOCK_SIZE + GPUIR_DECODE_PER_LANE * lane;
	off = block_offsets[b];
	avail = (off <= payload_bytes) ? payload_bytes - off : 0;
	if (block_bytes != NULL && block_bytes[b] < avail)
		avail = block_bytes[b];
	in = avail > 0 ? payload + off : payload;
	as_listed = listed != 0 && listed_gate(in, avail);	/* uniform */
	if (single != 0 && tfs != NULL)
	{
		GpuirBlockLayout lay;
		bool		bad = false;

		count = as_listed
			? gpuir_warp_decode_listed_block<GPUIR_UNPACK_VALUES>(in, prev_docids[b],
																  docids != NULL, false, docid,
																  tf, patch[threadIdx.x >> 5],
																  &lay)
			: gpuir_warp_decode_block<GPUIR_UNPACK_VALUES>(in, avail, prev_docids[b],
														   docids != NULL, false, docid, tf,
														   patch[threadIdx.x >> 5], &lay);
#pragma unroll
		for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		{
			const uint32_t i = GPUIR_DECODE_PER_LANE * lane + r;

			tf[r] = 0;		/* also past the count and in a corrupt block */
			if ((int) i < count && (single == 1 || i == 0) &&
				!(as_listed ? gpuir_block_tf<true>(in, lay, i, &tf[r])
				  : gpuir_block_tf(in, lay, i, &tf[r])))
				bad = true;
		}
		if (__any_sync(0xFFFFFFFFu, bad))
		{
			count = GPUIR_CUDA_BLOCK_CORRUPT;
#pragma unroll
			for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
				docid[r] = tf[r] = 0;
		}
	}
	else if (as_listed)
		count = gpuir_warp_decode_listed_block(in, prev_docids[b], docids != NULL, tfs != NULL,
											   docid, tf, patch[threadIdx.x >> 5]);
	else
		count = gpuir_warp_decode_block(in, avail, prev_docids[b], docids != NULL, tfs != NULL,
										docid, tf, patch[threadIdx.x >> 5]);
	for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
	{
		if (docids != NULL)
			docids[out + r] = docid[r];
		if (tfs != NULL)
			tfs[out + r] = tf[r];
	}
	if (lane == 0)
	{
		if (as_listed)
			atomicAdd(&listed_decoded, 1ull);
		counts[b] = count;
		if (count == GPUIR_CUDA_BLOCK_CORRUPT && ncorrupt != NULL)
			atomicAdd(ncorrupt, 1u);
	}
}

/*
 * gpuir_cuda_decode_blocks: enqueue gpuir_decode_blocks_kernel on stream;
 * contract in cuda_decode_kernel.h.
 */
extern "C" gpuir_cuda_status
gpuir_cuda_decode_blocks(const uint8_t *d_payload, size_t payload_bytes,
						 const uint32_t *d_block_offsets,
						 const uint32_t *d_block_bytes,
						 const uint32_t *d_prev_docids, uint32_t nblocks,
						 uint32_t *d_docids, uint32_t *d_tfs, int32_t *d_counts,
						 uint32_t *d_ncorrupt, void *stream)
{
	if (nblocks == 0)
		return GPUIR_CUDA_OK;
	if (d_payload == NULL || d_block_offsets == NULL || d_prev_docids == NULL ||
		d_counts == NULL || nblocks > (uint32_t) INT32_MAX)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	gpuir_decode_blocks_kernel<<<(nblocks + DECODE_WARPS - 1) / DECODE_WARPS, 32 * DECODE_WARPS,
		0, (cudaStream_t) stream>>>
		(d_payload, payload_bytes, d_block_offsets, d_block_bytes, d_prev_docids, nblocks,
		 d_docids, d_tfs, d_counts, d_ncorrupt, tf_single, listed_blocks);
	return gpuir_cuda_check(cudaGetLastError());
}

/* gpuir_cuda_decode_tf_single: contract in cuda_decode_kernel.h */
extern "C" void
gpuir_cuda_decode_tf_single(int mode)
{
	tf_single = mode;
}

/* gpuir_cuda_decode_listed: contract in cuda_decode_kernel.h */
extern "C" void
gpuir_cuda_decode_listed(int on)
{
	const unsigned long long zero = 0;

	listed_blocks = on;
	gpuir_cuda_ignore_error(cudaMemcpyToSymbol(listed_decoded, &zero, sizeof(zero)));
}

/* gpuir_cuda_decode_listed_count: contract in cuda_decode_kernel.h */
extern "C" unsigned long long
gpuir_cuda_decode_listed_count(void)
{
	unsigned long long n = 0;

	gpuir_cuda_ignore_error(cudaMemcpyFromSymbol(&n, listed_decoded, sizeof(n)));
	return n;
}

/* cudaMalloc of bytes (at least 4, so that 0 still gives a valid pointer) */
static gpuir_cuda_status
dev_alloc(void **p, size_t bytes)
{
	*p = NULL;
	return gpuir_cuda_check(cudaMalloc(p, bytes > 0 ? bytes : 4));
}

/* host-to-device copy on stream */
static gpuir_cuda_status
to_dev(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
	return gpuir_cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s));
}

/* device-to-host copy on stream */
static gpuir_cuda_status
to_host(void *dst, const void *src, size_t bytes, cudaStream_t s)
{
	return gpuir_cuda_check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s));
}

/*
 * gpuir_cuda_decode_blocks_host: copy in, decode, copy out, synchronize;
 * contract in cuda_decode_kernel.h.  Device buffers are always freed.
 */
extern "C" gpuir_cuda_status
gpuir_cuda_decode_blocks_host(const uint8_t *payload, size_t payload_bytes,
							  const uint32_t *block_offsets,
							  const uint32_t *block_bytes,
							  const uint32_t *prev_docids, uint32_t nblocks,
							  uint32_t *docids, uint32_t *tfs, int32_t *counts,
							  void *stream)
{
	cudaStream_t s = (cudaStream_t) stream;
	const size_t nb = nblocks;
	const size_t npost = nb * GPUIR_BLOCK_SIZE;
	void	   *d_payload = NULL,
			   *d_offsets = NULL,
			   *d_bytes = NULL,
			   *d_prev = NULL,
			   *d_docids = NULL,
			   *d_tfs = NULL,
			   *d_counts = NULL,
			   *d_ncorrupt = NULL;
	uint32_t	ncorrupt = 0;
	gpuir_cuda_status st;
	gpuir_cuda_status st2;

	if (nblocks == 0)
		return GPUIR_CUDA_OK;
	if ((payload == NULL && payload_bytes > 0) || block_offsets == NULL ||
		prev_docids == NULL || counts == NULL || nblocks > (uint32_t) INT32_MAX)
		return GPUIR_CUDA_INVALID_ARGUMENT;

	if ((st = dev_alloc(&d_payload, payload_bytes)) != GPUIR_CUDA_OK ||
		(st = dev_alloc(&d_offsets, nb * sizeof(uint32_t))) != GPUIR_CUDA_OK ||
		(block_bytes != NULL &&
		 (st = dev_alloc(&d_bytes, nb * sizeof(uint32_t))) != GPUIR_CUDA_OK) ||
		(st = dev_alloc(&d_prev, nb * sizeof(uint32_t))) != GPUIR_CUDA_OK ||
		(docids != NULL &&
		 (st = dev_alloc(&d_docids, npost * sizeof(uint32_t))) != GPUIR_CUDA_OK) ||
		(tfs != NULL &&
		 (st = dev_alloc(&d_tfs, npost * sizeof(uint32_t))) != GPUIR_CUDA_OK) ||
		(st = dev_alloc(&d_counts, nb * sizeof(int32_t))) != GPUIR_CUDA_OK ||
		(st = dev_alloc(&d_ncorrupt, sizeof(uint32_t))) != GPUIR_CUDA_OK)
		goto done;

	if ((payload_bytes > 0 &&
		 (st = to_dev(d_payload, payload, payload_bytes, s)) != GPUIR_CUDA_OK) ||
		(st = to_dev(d_offsets, block_offsets, nb * sizeof(uint32_t), s)) != GPUIR_CUDA_OK ||
		(block_bytes != NULL &&
		 (st = to_dev(d_bytes, block_bytes, nb * sizeof(uint32_t), s)) != GPUIR_CUDA_OK) ||
		(st = to_dev(d_prev, prev_docids, nb * sizeof(uint32_t), s)) != GPUIR_CUDA_OK ||
		(st = gpuir_cuda_check(cudaMemsetAsync(d_ncorrupt, 0, sizeof(uint32_t), s))) != GPUIR_CUDA_OK)
		goto done;

	st = gpuir_cuda_decode_blocks((const uint8_t *) d_payload, payload_bytes,
								  (const uint32_t *) d_offsets,
								  (const uint32_t *) d_bytes,
								  (const uint32_t *) d_prev, nblocks,
								  (uint32_t *) d_docids, (uint32_t *) d_tfs,
								  (int32_t *) d_counts, (uint32_t *) d_ncorrupt,
								  stream);
	if (st != GPUIR_CUDA_OK)
		goto done;

	if ((docids != NULL &&
		 (st = to_host(docids, d_docids, npost * sizeof(uint32_t), s)) != GPUIR_CUDA_OK) ||
		(tfs != NULL &&
		 (st = to_host(tfs, d_tfs, npost * sizeof(uint32_t), s)) != GPUIR_CUDA_OK) ||
		(st = to_host(counts, d_counts, nb * sizeof(int32_t), s)) != GPUIR_CUDA_OK ||
		(st = to_host(&ncorrupt, d_ncorrupt, sizeof(uint32_t), s)) != GPUIR_CUDA_OK ||
		(st = gpuir_cuda_check(cudaStreamSynchronize(s))) != GPUIR_CUDA_OK)
		goto done;
	if (ncorrupt > 0)
		st = GPUIR_CUDA_CORRUPT;

done:
	/* on an early failure wait for enqueued copies before freeing */
	if (st != GPUIR_CUDA_OK && st != GPUIR_CUDA_CORRUPT)
		gpuir_cuda_ignore_error(cudaStreamSynchronize(s));
	st2 = GPUIR_CUDA_OK;
	{
		void	   *bufs[] = {d_payload, d_offsets, d_bytes, d_prev, d_docids,
							  d_tfs, d_counts, d_ncorrupt};

		for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
			if (bufs[i] != NULL && st2 == GPUIR_CUDA_OK)
				st2 = gpuir_cuda_check(cudaFree(bufs[i]));
			else if (bufs[i] != NULL)
				gpuir_cuda_ignore_error(cudaFree(bufs[i]));
	}
	if (st2 != GPUIR_CUDA_OK && (st == GPUIR_CUDA_OK || st == GPUIR_CUDA_CORRUPT))
		st = st2;
	return st;
}
