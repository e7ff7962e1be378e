/*-------------------------------------------------------------------------
 *
 * test_cuda_layout.cu
 *	  The device decoder's block header rules against the CPU codec's, run
 *	  on the host (no GPU needed): cuda/gpuir_decode.cuh's gpuir_block_layout
 *	  (the checked decoder's header check) and gpuir_block_layout_of (the
 *	  unchecked layout the search kernels take from a list's block, whose
 *	  header the host checked with GpuirCodecBlockBytes) are __host__
 *	  __device__, so they are compared here with GpuirCodecBlockBytes
 *	  (src/gpuircodec.c) on the headers of blocks GpuirCodecEncode wrote and
 *	  on random headers: same verdict, same length, for every bytes
 *	  available.  The kernels' own decoding is test_cuda_decode's (on a GPU).
 *
 * Prints "cuda layout: N passed, N failed", exit 1 on failure.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gpuir_decode.cuh"
#include "test_util.h"

/*
 * compare: the verdicts of both checks on the block at buf (its header
 * first) with avail bytes available; for a sound header, the unchecked
 * layout's length too
 */
static void
compare(const uint8_t *buf, size_t avail, const char *what)
{
	GpuirBlockLayout l,
				lo;
	const bool	ok = gpuir_block_layout(buf, avail, &l);
	const long	c = GpuirCodecBlockBytes(buf, avail);
	char		msg[160];

	snprintf(msg, sizeof(msg), "%s: header %02x %02x %02x %02x %02x %02x %02x %02x, %zu bytes: device %s %u, codec %ld",
			 what, buf[0], buf[1], buf[2], buf[3], buf[4], buf[5], buf[6], buf[7], avail,
			 ok ? "sound" : "corrupt", ok ? l.total_bytes : 0, c);
	check(ok == (c >= 0) && (!ok || (long) l.total_bytes == c), msg);
	if (ok)
	{
		gpuir_block_layout_of(buf, &lo);
		check(lo.total_bytes == l.total_bytes && lo.n == l.n &&
			  lo.gap.bytes == l.gap.bytes && lo.tf.bytes == l.tf.bytes, msg);
	}
}

int
main(void)
{
	static uint8_t buf[GPUIR_BLOCK_MAX_BYTES + 64];
	uint32_t	docs[GPUIR_BLOCK_SIZE],
				tfs[GPUIR_BLOCK_SIZE];
	unsigned long sound = 0;

	/* encoded blocks: every avail around the block's length */
	for (int round = 0; round < 20000; round++)
	{
		const int	n = 1 + (int) (rnd() % GPUIR_BLOCK_SIZE);
		const int	gbits = (int) (rnd() % 33);
		const int	tbits = (int) (rnd() % 17);
		uint32_t	d = rnd() % 1000;
		size_t		len;

		for (int i = 0; i < n; i++)
		{
			/* mostly narrow values, a few wide ones: exceptions */
			uint32_t	gap = (gbits == 0) ? 0 : rnd() >> (32 - gbits);

			if (rnd() % 16 == 0)
				gap = rnd() >> (rnd() % 8);
			gap = gap % (0x7FFFFFFFu / GPUIR_BLOCK_SIZE);	/* docIDs stay below 2^31 + 1000 */
			d += gap + 1;
			docs[i] = d;
			tfs[i] = 1 + ((tbits == 0) ? 0 : rnd() >> (32 - tbits));
			if (rnd() % 32 == 0)
				tfs[i] = 1 + (rnd() >> (rnd() % 16));
		}
		len = GpuirCodecEncode(docs, tfs, n, GPUIR_FIRST_PREV_DOCID, buf);
		for (size_t avail = (len > 12 ? len - 12 : 0); avail <= len + 12; avail += 4)
			compare(buf, avail, "encoded block");
	}

	/* random headers, half of them with plausible fields */
	for (long it = 0; it < 2000000; it++)
	{
		const size_t avail = rnd() % (GPUIR_BLOCK_MAX_BYTES + 16);

		for (int i = 0; i < GPUIR_BLOCK_HEADER; i++)
			buf[i] = (uint8_t) rnd();
		if (it & 1)
		{
			buf[0] %= GPUIR_BLOCK_SIZE;
			buf[1] %= 33;
			buf[2] %= buf[0] + 2;
			buf[3] %= 33;
			buf[4] %= 33;
			buf[5] %= buf[0] + 2;
			buf[6] %= 33;
			buf[7] = 0;
		}
		sound += GpuirCodecBlockBytes(buf, avail) >= 0;
		compare(buf, avail, "random header");
	}
	printf("cuda layout: %lu sound random headers\n", sound);
	printf("cuda layout: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
