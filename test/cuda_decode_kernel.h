/*-------------------------------------------------------------------------
 *
 * cuda_decode_kernel.h
 *	  Test-only interface of test/cuda_decode_kernel.cu: decoding a batch
 *	  of posting blocks on the device with cuda/gpuir_decode.cuh, for
 *	  test/test_cuda_decode.c.  Pure C, like cuda/gpuir_cuda.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CUDA_DECODE_KERNEL_H
#define CUDA_DECODE_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "../cuda/gpuir_cuda_internal.h"

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * gpuir_cuda_decode_blocks: decode a batch of posting blocks on the device
 * (Ding et al. 2009, section 6.2: block-wise PForDelta decoding, one
 * warp per block and four postings per lane, exceptions patched, then a
 * localized prefix sum of the d-gaps within each block, seeded with the previous block's last
 * docID, so blocks decode independently and in any order).
 *
 * Block format: src/gpuircodec.h (identical bytes; test_cuda_decode.c
 * checks that the result matches GpuirCodecDecode bit for bit, corruption
 * verdict included).
 *
 * Inputs (all device pointers, except stream):
 *	d_payload[payload_bytes]	bytes holding the encoded blocks
 *	d_block_offsets[nblocks]	byte offset of block b in d_payload; blocks
 *								may be in any order, repeat or overlap;
 *								4-byte aligned offsets take the fast path
 *								(word loads), others are read bytewise
 *	d_block_bytes[nblocks]		optional (NULL): bytes available to block
 *								b, as GpuirCodecDecode's len; always
 *								clamped to payload_bytes - offset.  NULL
 *								means "up to the end of the payload"
 *	d_prev_docids[nblocks]		docID[-1] of block b: the last docID of the
 *								preceding block of its posting list, or
 *								0xFFFFFFFF (GPUIR_FIRST_PREV_DOCID) for a
 *								list's first block
 *	nblocks						0 .. INT32_MAX (0 enqueues nothing)
 *	stream						cudaStream_t as void *, NULL = default
 * Outputs (device pointers; shapes nblocks * 128 in block-major order, the
 * postings of block b at [b * 128, b * 128 + count)):
 *	d_docids	docIDs (uint32) or NULL to skip the d-gap section
 *	d_tfs		term frequencies (>= 1) or NULL to skip the tf section
 *	d_counts[nblocks]	number of postings (1..128) of block b, or
 *				GPUIR_CUDA_BLOCK_CORRUPT (cuda/gpuir_cuda_internal.h)
 *				when the block is not well formed (the checks of
 *				GpuirCodecDecode, applied to the requested sections
 *				only); required
 *	d_ncorrupt	optional (NULL): a device counter the kernel atomically
 *				increments once per corrupt block; the caller zeroes it
 * Slots past count, and all 128 slots of a corrupt block, are written 0.
 * A corrupt block never causes a read outside its byte range nor a write
 * outside its 128 slots.
 *
 * Returns GPUIR_CUDA_OK when the kernel was enqueued (results are ready
 * after the stream synchronizes; errors during execution surface at the
 * next synchronizing call), GPUIR_CUDA_INVALID_ARGUMENT (NULL d_payload,
 * d_block_offsets, d_prev_docids or d_counts with nblocks > 0, or nblocks
 * > INT32_MAX), GPUIR_CUDA_NO_DEVICE or GPUIR_CUDA_ERROR (launch failed).
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_decode_blocks(const uint8_t *d_payload,
												  size_t payload_bytes,
												  const uint32_t *d_block_offsets,
												  const uint32_t *d_block_bytes,
												  const uint32_t *d_prev_docids,
												  uint32_t nblocks,
												  uint32_t *d_docids,
												  uint32_t *d_tfs,
												  int32_t *d_counts,
												  uint32_t *d_ncorrupt,
												  void *stream);

/*
 * gpuir_cuda_decode_tf_single: with mode 1, later gpuir_cuda_decode_blocks
 * calls that decode tfs read them one posting at a time with
 * gpuir_block_tf (cuda/gpuir_decode.cuh) after a decode of the block's
 * docIDs and layout, instead of unpacking the tf section with the warp
 * (the outputs and verdicts must be the same); with mode 2 they read only
 * each block's first tf (the others are 0; the verdict must still be the
 * CPU's); 0: unpacked by the warp.  Test-only, not thread-safe.
 */
extern GPUIR_CUDA_API void gpuir_cuda_decode_tf_single(int mode);

/*
 * gpuir_cuda_decode_listed: with on = 1, later gpuir_cuda_decode_blocks
 * calls decode each block that the host would have let onto the device as
 * part of a list (4-byte aligned, its header sound and giving the length
 * of the bytes available to it: the gate of gpuir_cuda_segment_upload's
 * directory checks, made here on the device) with
 * gpuir_warp_decode_listed_block, as the search kernels do, and the rest
 * as before (the outputs and verdicts must be the same as the CPU's
 * either way); 0: every block with gpuir_warp_decode_block.  Either call
 * zeroes the count of blocks decoded as a list's, which
 * gpuir_cuda_decode_listed_count returns (after the decodes' stream has
 * synchronized; 0 on a CUDA error), so that a test can see the path taken.
 * Test-only, not thread-safe.
 */
extern GPUIR_CUDA_API void gpuir_cuda_decode_listed(int on);
extern GPUIR_CUDA_API unsigned long long gpuir_cuda_decode_listed_count(void);

/*
 * gpuir_cuda_decode_blocks_host: convenience wrapper of
 * gpuir_cuda_decode_blocks for host arrays (the GPU service keeps lists
 * resident instead).  Allocates device buffers with cudaMalloc,
 * copies the inputs, decodes on stream, copies the outputs back,
 * synchronizes the stream and frees the buffers.
 *
 * Inputs and outputs: as gpuir_cuda_decode_blocks, but host pointers
 * (block_bytes may be NULL; docids, tfs may be NULL to skip a section;
 * counts is required; docids/tfs have room for nblocks * 128 entries).
 * Returns GPUIR_CUDA_OK if every block decoded, GPUIR_CUDA_CORRUPT if at
 * least one block is corrupt (all outputs are still filled; see counts),
 * GPUIR_CUDA_OOM, GPUIR_CUDA_NO_DEVICE, GPUIR_CUDA_ERROR or
 * GPUIR_CUDA_INVALID_ARGUMENT.  Outputs are undefined unless OK or CORRUPT.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_decode_blocks_host(const uint8_t *payload,
													   size_t payload_bytes,
													   const uint32_t *block_offsets,
													   const uint32_t *block_bytes,
													   const uint32_t *prev_docids,
													   uint32_t nblocks,
													   uint32_t *docids,
													   uint32_t *tfs,
													   int32_t *counts,
													   void *stream);

#ifdef __cplusplus
}
#endif

#endif							/* CUDA_DECODE_KERNEL_H */
