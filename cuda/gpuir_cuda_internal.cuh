/*-------------------------------------------------------------------------
 *
 * gpuir_cuda_internal.cuh
 *	  CUDA-side helpers shared by the .cu files of cuda/ (and of test/):
 *	  mapping of cudaError_t to gpuir_cuda_status, cleanup errors, buffers
 *	  that grow.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_CUDA_INTERNAL_CUH
#define GPUIR_CUDA_INTERNAL_CUH

#include <stddef.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "gpuir_cuda_internal.h"

/*
 * gpuir_cuda_check: GPUIR_CUDA_OK for cudaSuccess; otherwise records the
 * error's name and description for gpuir_cuda_last_error_detail(), clears
 * the runtime's (non-sticky) last-error state so that a later launch check
 * does not see it again, and returns the matching status: OOM for
 * allocation failures, NO_DEVICE when no driver/GPU is usable, ERROR for
 * the rest.
 */
static inline gpuir_cuda_status
gpuir_cuda_check(cudaError_t err)
{
	if (err == cudaSuccess)
		return GPUIR_CUDA_OK;
	gpuir_cuda_set_detail(cudaGetErrorName(err), cudaGetErrorString(err));
	(void) cudaGetLastError();
	switch (err)
	{
		case cudaErrorMemoryAllocation:
			return GPUIR_CUDA_OOM;
		case cudaErrorNoDevice:
		case cudaErrorInsufficientDriver:
		case cudaErrorStubLibrary:
		case cudaErrorDevicesUnavailable:
		case cudaErrorSystemNotReady:
		case cudaErrorSystemDriverMismatch:
		case cudaErrorCompatNotSupportedOnDevice:
			return GPUIR_CUDA_NO_DEVICE;
		default:
			return GPUIR_CUDA_ERROR;
	}
}

/*
 * gpuir_cuda_ignore_error: drop the error of a best-effort cleanup call
 * (cudaFree, cudaStreamSynchronize after a failure), clearing the runtime's
 * last error but keeping the detail recorded for the failure reported.
 */
static inline void
gpuir_cuda_ignore_error(cudaError_t err)
{
	if (err != cudaSuccess)
		(void) cudaGetLastError();
}

/* where a buffer of gpuir_cuda_grow lives */
typedef enum GpuirCudaMem
{
	GPUIR_CUDA_MEM_DEVICE,		/* cudaMalloc */
	GPUIR_CUDA_MEM_PINNED,		/* cudaMallocHost: host memory copies and
								 * kernels reach */
	GPUIR_CUDA_MEM_HOST			/* malloc: host memory only the host reads */
} GpuirCudaMem;

/*
 * gpuir_cuda_free: free p (may be NULL), a buffer of kind mem; the
 * runtime's error (to check, or to ignore in a cleanup)
 */
static inline cudaError_t
gpuir_cuda_free(void *p, GpuirCudaMem mem)
{
	if (p == NULL)
		return cudaSuccess;
	switch (mem)
	{
		case GPUIR_CUDA_MEM_DEVICE:
			return cudaFree(p);
		case GPUIR_CUDA_MEM_PINNED:
			return cudaFreeHost(p);
		case GPUIR_CUDA_MEM_HOST:
			free(p);
			break;
	}
	return cudaSuccess;
}

/*
 * gpuir_cuda_grow: make the buffer *p of *cap units (of unit bytes each),
 * of kind mem, hold need units: when it is too small, free it and allocate
 * half as large again as asked (at least min units), or, when that fails,
 * exactly need units.  On failure *p is NULL and *cap 0 (OOM).  The
 * workspace arenas of searches and of lists in transit grow through this
 * (never per batch once they are large enough), and so do a search's kept
 * inputs (search_keep).
 */
static inline gpuir_cuda_status
gpuir_cuda_grow(void **p, size_t *cap, size_t need, size_t unit, size_t min, GpuirCudaMem mem)
{
	size_t		want = need + need / 2 > min ? need + need / 2 : min;
	gpuir_cuda_status st = GPUIR_CUDA_OK;

	if (*p != NULL && need <= *cap)
		return GPUIR_CUDA_OK;
	gpuir_cuda_ignore_error(gpuir_cuda_free(*p, mem));
	*p = NULL;
	*cap = 0;
	for (int attempt = 0; attempt < 2; attempt++, want = need)
	{
		switch (mem)
		{
			case GPUIR_CUDA_MEM_DEVICE:
				st = gpuir_cuda_check(cudaMalloc(p, want * unit));
				break;
			case GPUIR_CUDA_MEM_PINNED:
				st = gpuir_cuda_check(cudaMallocHost(p, want * unit));
				break;
			case GPUIR_CUDA_MEM_HOST:
				*p = malloc(want * unit);
				st = (*p != NULL) ? GPUIR_CUDA_OK : GPUIR_CUDA_OOM;
				break;
		}
		if (st == GPUIR_CUDA_OK)
		{
			*cap = want;
			break;
		}
		*p = NULL;
	}
	return st;
}

#endif							/* GPUIR_CUDA_INTERNAL_CUH */
