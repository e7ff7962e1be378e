/*-------------------------------------------------------------------------
 *
 * gpuir_cuda_status.c
 *	  Status strings and the per-thread error detail of the gpuir CUDA
 *	  interface (plain C: linked with and without nvcc).
 *
 *-------------------------------------------------------------------------
 */
#include "gpuir_cuda_internal.h"

#include <stdio.h>

/* detail of the last failing CUDA call of this thread ("" if none) */
static _Thread_local char gpuir_cuda_detail[256];

/*
 * gpuir_cuda_status_string: static description of a status code; see
 * gpuir_cuda.h.
 */
const char *
gpuir_cuda_status_string(gpuir_cuda_status status)
{
	switch (status)
	{
		case GPUIR_CUDA_OK:
			return "success";
		case GPUIR_CUDA_NO_DEVICE:
			return "no CUDA device";
		case GPUIR_CUDA_ERROR:
			return "CUDA runtime error";
		case GPUIR_CUDA_OOM:
			return "out of GPU memory";
		case GPUIR_CUDA_CORRUPT:
			return "corrupt posting block";
		case GPUIR_CUDA_INVALID_ARGUMENT:
			return "invalid argument";
	}
	return "unknown gpuir CUDA status";
}

/*
 * gpuir_cuda_last_error_detail: this thread's last recorded CUDA error;
 * see gpuir_cuda.h.
 */
const char *
gpuir_cuda_last_error_detail(void)
{
	return gpuir_cuda_detail;
}

/*
 * gpuir_cuda_set_detail: record the detail of a failing CUDA call; see
 * gpuir_cuda_internal.h.
 */
void
gpuir_cuda_set_detail(const char *name, const char *description)
{
	snprintf(gpuir_cuda_detail, sizeof(gpuir_cuda_detail), "%s: %s",
			 name ? name : "cudaError", description ? description : "");
}
