/*-------------------------------------------------------------------------
 *
 * gpuir_cuda_internal.h
 *	  Helpers shared by the files of cuda/ only (not part of the interface
 *	  that src/ sees; pure C so the C and CUDA files both include it).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_CUDA_INTERNAL_H
#define GPUIR_CUDA_INTERNAL_H

#include "gpuir_cuda.h"

/*
 * The count the decoders of gpuir_decode.cuh return for a block that is not
 * well formed (gpuir_warp_decode_block; gpuir_warp_decode_listed_block for
 * what it still checks), and the search kernels' gpuir_tile_decode; the
 * test decode kernel (test/cuda_decode_kernel.cu) writes it as the block's
 * count.
 */
#define GPUIR_CUDA_BLOCK_CORRUPT	(-1)

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * gpuir_cuda_set_detail: record "name: description" of a failing CUDA call
 * in the calling thread's buffer read by gpuir_cuda_last_error_detail();
 * either argument may be NULL.  Truncates silently.
 */
extern void gpuir_cuda_set_detail(const char *name, const char *description);

#ifdef __cplusplus
}
#endif

#endif							/* GPUIR_CUDA_INTERNAL_H */
