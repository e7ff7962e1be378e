/*-------------------------------------------------------------------------
 *
 * gpuir_segment.cu
 *	  Resident segments: gpuir_cuda_segment_upload copies a segment's
 *	  posting data to device memory, gpuir_cuda_segment_free releases it
 *	  (contracts in gpuir_cuda.h).  The GPU service's list cache keeps
 *	  segments resident between batches (Ding et al. 2009, section 5).
 *
 *-------------------------------------------------------------------------
 */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <atomic>

#include "gpuir_cuda_internal.cuh"

/*
 * cudaMalloc + cudaMemcpy of bytes on the legacy default stream (the build
 * has no --default-stream per-thread; NULL src: nothing allocated); the
 * copy may still be in flight on return (gpuir_cuda_segment_upload waits
 * for that stream)
 */
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
			gpuir_cuda_ignore_error(cudaFree(p));
			return st;
		}
	}
	*dst = p;
	return GPUIR_CUDA_OK;
}

/*
 * gpuir_doclen_code_kernel: code[d] = min(doclen[d], GPUIR_CUDA_DL_ESCAPE)
 * for d < n (gpuir_cuda_segment.doclen_code), a thread a document
 */
__global__ void
gpuir_doclen_code_kernel(const uint32_t *__restrict__ doclen, uint32_t n,
						 uint8_t *__restrict__ code)
{
	const uint64_t d = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;

	if (d < n)
		code[d] = (uint8_t) min(doclen[d], (uint32_t) GPUIR_CUDA_DL_ESCAPE);
}

/*
 * doclen_codes: allocate s->doclen_code and fill it from s->doclen on the
 * legacy default stream, behind the length array's copy (the upload then
 * waits for that stream)
 */
static gpuir_cuda_status
doclen_codes(gpuir_cuda_segment *s)
{
	void	   *p = NULL;
	gpuir_cuda_status st;

	if ((st = gpuir_cuda_check(cudaMalloc(&p, s->ndocs > 0 ? s->ndocs : 4))) != GPUIR_CUDA_OK)
		return st;
	s->doclen_code = (const uint8_t *) p;
	if (s->ndocs > 0)
	{
		gpuir_doclen_code_kernel<<<(uint32_t) (((uint64_t) s->ndocs + 255) / 256), 256, 0,
			cudaStreamLegacy>>>
			(s->doclen, s->ndocs, (uint8_t *) p);
		if ((st = gpuir_cuda_check(cudaGetLastError())) != GPUIR_CUDA_OK)
			return st;
	}
	return GPUIR_CUDA_OK;
}

/*
 * directory_checks: the host prefix counts h_bad and h_desc of s (contract
 * in gpuir_cuda.h) over a block directory whose offsets are non-decreasing
 * and end at payload_bytes, and the blocks' headers in payload (a block
 * whose header is unsound or gives another length than its extent is bad,
 * as the CPU reader's GpuirListDecodeBlock refuses it, and so is one whose
 * offset is not a multiple of 4: the kernels take a block's layout from
 * its header unchecked and read it in whole words,
 * gpuir_warp_decode_listed_block); false when out of memory.
 */
static bool
directory_checks(gpuir_cuda_segment *s, const uint8_t *payload, const uint32_t *block_last,
				 const uint32_t *block_offset)
{
	const uint32_t nb = s->nblocks;

	s->h_bad = (uint32_t *) malloc(sizeof(uint32_t) * ((size_t) nb + 1));
	s->h_desc = (uint32_t *) malloc(sizeof(uint32_t) * ((size_t) nb + 1));
	if (s->h_bad == NULL || s->h_desc == NULL)
		return false;
	s->h_bad[0] = 0;
	s->h_desc[0] = 0;
	for (uint32_t b = 0; b < nb; b++)
	{
		const uint32_t ext = block_offset[b + 1] - block_offset[b];
		const bool	bad = block_last[b] >= s->ndocs || block_offset[b] % 4 != 0 ||
			ext < GPUIR_BLOCK_HEADER || ext > GPUIR_BLOCK_MAX_BYTES ||
			GpuirCodecBlockBytes(payload + block_offset[b], ext) != (long) ext;
		const bool	desc = b > 0 && block_last[b] <= block_last[b - 1];

		s->h_bad[b + 1] = s->h_bad[b] + (bad ? 1 : 0);
		s->h_desc[b + 1] = s->h_desc[b] + (desc ? 1 : 0);
	}
	return true;
}

/* uploads so far in the process: each upload's decode_id (gpuir_cuda.h) */
static std::atomic<uint64_t> segment_uploads;

/*
 * gpuir_cuda_segment_upload: validate, the directory's prefix counts, then
 * one cudaMalloc and copy per array; contract in gpuir_cuda.h.
 */
extern "C" gpuir_cuda_status
gpuir_cuda_segment_upload(const uint8_t *payload, uint64_t payload_bytes,
						  const uint32_t *block_last, const uint32_t *block_offset,
						  const uint32_t *impact_tf, const uint32_t *impact_dl,
						  uint32_t nblocks, const uint32_t *doclen, const uint8_t *deleted,
						  const float *prior, float prior_max, uint32_t ndocs,
						  gpuir_cuda_segment *dev)
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
	if (prior != NULL)
	{
		/*
		 * the kernels' bounds add prior_weight * prior_max: it must bound
		 * every prior, each valid as GpuirPriorValid (src/gpuir.h) says
		 */
		if (!(prior_max >= 0.0f && prior_max <= FLT_MAX))
			return GPUIR_CUDA_CORRUPT;
		for (uint32_t d = 0; d < ndocs; d++)
			if (!(prior[d] >= 0.0f && prior[d] <= prior_max))
				return GPUIR_CUDA_CORRUPT;
	}

	memset(&s, 0, sizeof(s));
	s.decode_id = ++segment_uploads;
	s.payload_bytes = payload_bytes;
	s.ndocs = ndocs;
	s.nblocks = nblocks;
	if (!directory_checks(&s, payload, block_last, block_offset))
	{
		st = GPUIR_CUDA_OOM;
		goto fail;
	}
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
		if ((st = doclen_codes(&s)) != GPUIR_CUDA_OK)
			goto fail;
		if ((st = upload_array(deleted, ((size_t) ndocs + 7) / 8, &p)) != GPUIR_CUDA_OK)
			goto fail;
		s.deleted = (const uint8_t *) p;
		if ((st = upload_array(prior, (size_t) ndocs * sizeof(float), &p)) != GPUIR_CUDA_OK)
			goto fail;
		s.prior = (const float *) p;
		s.prior_max = (prior != NULL) ? prior_max : 0.0f;
	}

	/*
	 * A copy from pageable memory may return before its DMA has reached
	 * the device, and the searches run on non-blocking streams, which do
	 * not wait for the legacy stream: wait for the copies here, so
	 * that no search reads a segment still arriving.  Without this wait, on
	 * an H200 shared with another process, pg_regress's compact and filter
	 * tests (gpuir.device = gpu) returned wrong rankings right after VACUUM
	 * had rewritten a segment (bench/results/2026-11-27-h200-upload-sync.md).
	 */
	if ((st = gpuir_cuda_check(cudaStreamSynchronize(cudaStreamLegacy))) != GPUIR_CUDA_OK)
		goto fail;
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
							  dev->impact_tf, dev->impact_dl, dev->doclen, dev->doclen_code,
							  dev->deleted, dev->prior};

		for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
			if (bufs[i] != NULL)
			{
				gpuir_cuda_status s2 = gpuir_cuda_check(cudaFree((void *) bufs[i]));

				if (st == GPUIR_CUDA_OK)
					st = s2;
			}
	}
	free(dev->h_bad);
	free(dev->h_desc);
	memset(dev, 0, sizeof(*dev));
	return st;
}
