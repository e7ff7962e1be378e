/*
 * fuzz_common.h: helpers shared by the gpuir codec fuzz targets.
 */
#ifndef GPUIR_FUZZ_COMMON_H
#define GPUIR_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuircodec.h"

/* a violated invariant: say which and abort (libFuzzer keeps the input) */
#define FUZZ_CHECK(cond) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "fuzz invariant violated: %s (%s:%d)\n", \
					#cond, __FILE__, __LINE__); \
			abort(); \
		} \
	} while (0)

static inline uint32_t
fuzz_load32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) |
		((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

/*
 * Check a successful full decode of n postings after prev: count, strictly
 * increasing docIDs above prev (0xFFFFFFFF = none), tf >= 1.
 */
static inline void
fuzz_check_postings(int n, uint32_t prev, const uint32_t *docids,
					const uint32_t *tfs)
{
	int64_t		last = (prev == GPUIR_FIRST_PREV_DOCID) ? -1 : (int64_t) prev;

	FUZZ_CHECK(n >= 1 && n <= GPUIR_BLOCK_SIZE);
	for (int i = 0; i < n; i++)
	{
		FUZZ_CHECK((int64_t) docids[i] > last);
		FUZZ_CHECK(docids[i] != GPUIR_FIRST_PREV_DOCID);
		FUZZ_CHECK(tfs[i] >= 1);
		last = docids[i];
	}
}

/*
 * Check the encoded block blk[0..len) of n postings (docids/tfs after prev):
 * header-reported length, exact-length decode of all three variants,
 * GpuirCodecTf for every posting.  blk must be a heap buffer of exactly len
 * bytes so that ASan sees any read past the block.
 */
static inline void
fuzz_check_block(const uint8_t *blk, size_t len, int n, uint32_t prev,
				 const uint32_t *docids, const uint32_t *tfs)
{
	uint32_t	d[GPUIR_BLOCK_SIZE];
	uint32_t	t[GPUIR_BLOCK_SIZE];

	FUZZ_CHECK(len >= GPUIR_BLOCK_HEADER && len <= GPUIR_BLOCK_MAX_BYTES);
	FUZZ_CHECK(len % 4 == 0);
	FUZZ_CHECK(GpuirCodecBlockBytes(blk, len) == (long) len);
	FUZZ_CHECK(GpuirCodecBlockBytes(blk, len - 1) == GPUIR_CODEC_CORRUPT);
	FUZZ_CHECK(GpuirCodecDecode(blk, len - 1, prev, d, t) == GPUIR_CODEC_CORRUPT);

	FUZZ_CHECK(GpuirCodecDecode(blk, len, prev, d, t) == n);
	FUZZ_CHECK(memcmp(d, docids, n * sizeof(uint32_t)) == 0);
	FUZZ_CHECK(memcmp(t, tfs, n * sizeof(uint32_t)) == 0);
	memset(d, 0, sizeof(d));
	FUZZ_CHECK(GpuirCodecDecode(blk, len, prev, d, NULL) == n);
	FUZZ_CHECK(memcmp(d, docids, n * sizeof(uint32_t)) == 0);
	memset(t, 0, sizeof(t));
	FUZZ_CHECK(GpuirCodecDecode(blk, len, prev, NULL, t) == n);
	FUZZ_CHECK(memcmp(t, tfs, n * sizeof(uint32_t)) == 0);
	FUZZ_CHECK(GpuirCodecDecode(blk, len, prev, NULL, NULL) == n);
	for (int i = 0; i < n; i++)
		FUZZ_CHECK(GpuirCodecTf(blk, i) == tfs[i]);
}

#endif							/* GPUIR_FUZZ_COMMON_H */
