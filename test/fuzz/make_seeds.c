/*
 * make_seeds.c: write seed inputs for the codec fuzz targets.
 *
 *   make_seeds CODEC_DIR ROUNDTRIP_DIR
 *
 * CODEC_DIR gets 4-byte prev docID + encoder-produced blocks (and a few
 * malformed edge cases); ROUNDTRIP_DIR gets posting descriptions in the
 * fuzz_roundtrip.c input format.  Deterministic (fixed PRNG seed).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuircodec.h"

static const char *codec_dir;
static const char *rt_dir;
static int	nseed = 0;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng >> 16);
}

static void
put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
	p[2] = (uint8_t) (v >> 16);
	p[3] = (uint8_t) (v >> 24);
}

static void
write_file(const char *dir, const char *name, const uint8_t *buf, size_t len)
{
	char		path[4096];
	FILE	   *f;

	snprintf(path, sizeof(path), "%s/seed-%03d-%s", dir, nseed++, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0)
	{
		perror(path);
		exit(1);
	}
}

/* one postings list: codec seed (encoded) and roundtrip seed (described) */
static void
emit(const char *name, const uint32_t *docids, const uint32_t *tfs, int n,
	 uint32_t prev)
{
	uint8_t		buf[4 + GPUIR_BLOCK_MAX_BYTES];
	uint8_t		rt[4 + 10 * GPUIR_BLOCK_SIZE];
	size_t		len;
	uint32_t	p = prev;

	put32(buf, prev);
	len = GpuirCodecEncode(docids, tfs, n, prev, buf + 4);
	write_file(codec_dir, name, buf, 4 + len);

	put32(rt, prev);
	for (int i = 0; i < n; i++)
	{
		uint32_t	gap = docids[i] - p - 1;

		rt[4 + 10 * i] = 32;		/* full-width gap */
		rt[4 + 10 * i + 1] = 32;	/* full-width tf-1 */
		put32(rt + 4 + 10 * i + 2, gap);
		put32(rt + 4 + 10 * i + 6, tfs[i] - 1);
		p = docids[i];
	}
	write_file(rt_dir, name, rt, 4 + 10 * (size_t) n);
}

/* n postings: gaps below 2^gbits (plus rare outliers), tf-1 below 2^tbits */
static void
emit_random(const char *name, int n, uint32_t prev, int gbits, int tbits,
			int outlier_pct)
{
	uint32_t	docids[GPUIR_BLOCK_SIZE];
	uint32_t	tfs[GPUIR_BLOCK_SIZE];
	int64_t		cur = (prev == GPUIR_FIRST_PREV_DOCID) ? -1 : (int64_t) prev;

	for (int i = 0; i < n; i++)
	{
		uint32_t	gap = gbits ? rnd() & (uint32_t) (((uint64_t) 1 << gbits) - 1) : 0;
		uint32_t	tf = tbits ? rnd() & (uint32_t) (((uint64_t) 1 << tbits) - 1) : 0;

		if ((int) (rnd() % 100) < outlier_pct)
			gap += rnd() & 0xFFFFF;
		if ((int) (rnd() % 100) < outlier_pct)
			tf += rnd() & 0xFFFF;
		if (cur + (int64_t) gap + 1 >= (int64_t) GPUIR_FIRST_PREV_DOCID)
			gap = 0;
		if (cur + 1 >= (int64_t) GPUIR_FIRST_PREV_DOCID)
		{
			n = i;
			break;
		}
		cur += (int64_t) gap + 1;
		docids[i] = (uint32_t) cur;
		tfs[i] = (tf == UINT32_MAX) ? tf : tf + 1;
	}
	if (n > 0)
		emit(name, docids, tfs, n, prev);
}

int
main(int argc, char **argv)
{
	uint32_t	docids[GPUIR_BLOCK_SIZE];
	uint32_t	tfs[GPUIR_BLOCK_SIZE];
	static const int sizes[] = {1, 2, 3, 7, 31, 64, 127, 128};

	if (argc != 3)
	{
		fprintf(stderr, "usage: %s CODEC_DIR ROUNDTRIP_DIR\n", argv[0]);
		return 2;
	}
	codec_dir = argv[1];
	rt_dir = argv[2];

	/* the example of gpuircodec.h: docIDs 7, 8, 12 after 5, tf 1, 1, 9 */
	docids[0] = 7; docids[1] = 8; docids[2] = 12;
	tfs[0] = 1; tfs[1] = 1; tfs[2] = 9;
	emit("header-example", docids, tfs, 3, 5);

	/* first block of a list: docID 0, tf 1 (all-zero sections) */
	docids[0] = 0; tfs[0] = 1;
	emit("first-zero", docids, tfs, 1, GPUIR_FIRST_PREV_DOCID);

	/* the largest docID and tf */
	docids[0] = UINT32_MAX - 1; tfs[0] = UINT32_MAX;
	emit("max-docid-max-tf", docids, tfs, 1, GPUIR_FIRST_PREV_DOCID);
	docids[0] = UINT32_MAX - 1; tfs[0] = 1;
	emit("max-docid-after-prev", docids, tfs, 1, UINT32_MAX - 2);

	/* 128 consecutive docIDs, tf 1 */
	for (int i = 0; i < 128; i++)
	{
		docids[i] = 1000 + i;
		tfs[i] = 1;
	}
	emit("dense-128", docids, tfs, 128, 999);

	/* 128 consecutive docIDs ending at 0xFFFFFFFE */
	for (int i = 0; i < 128; i++)
	{
		docids[i] = UINT32_MAX - 128 + i;
		tfs[i] = (uint32_t) i + 1;
	}
	emit("dense-top", docids, tfs, 128, GPUIR_FIRST_PREV_DOCID - 129);

	/* one big gap among small ones: a single d-gap exception */
	for (int i = 0; i < 128; i++)
	{
		docids[i] = (uint32_t) (i * 3 + (i >= 64 ? 3000000000u : 0));
		tfs[i] = (i % 17 == 0) ? 70000 : 2;
	}
	emit("one-exception-each", docids, tfs, 128, GPUIR_FIRST_PREV_DOCID);

	/* maximal gaps: 32-bit wide packed field, no exceptions */
	for (int i = 0; i < 2; i++)
	{
		docids[i] = i == 0 ? 0x7FFFFFFF : 0xFFFFFFFE;
		tfs[i] = 0x80000000u + i;
	}
	emit("wide-32", docids, tfs, 2, GPUIR_FIRST_PREV_DOCID);

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
	{
		static const int widths[][3] = {
			{0, 0, 0}, {1, 0, 0}, {3, 2, 5}, {7, 1, 10}, {12, 4, 3},
			{17, 9, 0}, {20, 20, 30}, {26, 0, 2}, {31, 31, 0}
		};

		for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++)
		{
			char		name[64];
			uint32_t	prev = (w % 3 == 0) ? GPUIR_FIRST_PREV_DOCID : rnd() & 0xFFFFFF;

			snprintf(name, sizeof(name), "rand-n%d-g%d-t%d-o%d", sizes[s],
					 widths[w][0], widths[w][1], widths[w][2]);
			emit_random(name, sizes[s], prev, widths[w][0], widths[w][1],
						widths[w][2]);
		}
	}

	/* malformed blocks for the decoder (codec dir only) */
	{
		uint8_t		b[4 + 16];

		memset(b, 0, sizeof(b));
		put32(b, GPUIR_FIRST_PREV_DOCID);
		write_file(codec_dir, "bad-empty", b, 0);
		write_file(codec_dir, "bad-prev-only", b, 4);
		write_file(codec_dir, "bad-short-header", b, 4 + 7);
		b[4 + 7] = 1;			/* reserved byte set */
		write_file(codec_dir, "bad-reserved", b, 4 + 8);
		b[4 + 7] = 0;
		b[4 + 1] = 33;			/* d-gap width 33 */
		write_file(codec_dir, "bad-width-33", b, 4 + 16);
		b[4 + 1] = 0;
		b[4 + 0] = 127;			/* n = 128 with w = 0: fine */
		b[4 + 5] = 1;			/* tf exception, h = 0 */
		write_file(codec_dir, "bad-exception-h0", b, 4 + 16);
		b[4 + 6] = 32;			/* h = 32, high words missing */
		write_file(codec_dir, "bad-exception-truncated", b, 4 + 16);
		b[4 + 0] = 0;			/* n = 1 */
		b[4 + 5] = 2;			/* e > n */
		b[4 + 6] = 1;
		write_file(codec_dir, "bad-e-gt-n", b, 4 + 16);
	}
	printf("%d seeds\n", nseed);
	return 0;
}
