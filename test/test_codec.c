/*-------------------------------------------------------------------------
 *
 * test_codec.c
 *	  Standalone round-trip test of the posting block codec (no PostgreSQL).
 *
 * Encodes and decodes full blocks, single postings, docID gaps near 2^32,
 * tf in the thousands and random mixtures, checks every value and the
 * single-tf reader, and checks that truncated or corrupted blocks are
 * rejected without reading out of bounds (run it under valgrind or ASan).
 * Prints "N passed, N failed".
 *
 *-------------------------------------------------------------------------
 */
#include "../src/gpuircodec.h"
#include "test_util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * padded_same: GpuirCodecDecodePadded on a heap copy of buf[0..len) followed
 * by GPUIR_CODEC_SLOP bytes of noise (valgrind or ASan catch a read past
 * them) returns what GpuirCodecDecode on buf does, with the same postings,
 * decoding both sections or either alone, and for every truncation, where
 * the header's length is the length given (GpuirCodecBlockBytes), and
 * GPUIR_CODEC_CORRUPT where it is not (the padded decoder takes exactly one
 * block); returns 1 when it does
 */
static int
padded_same(const uint8_t *buf, size_t len, uint32_t prev)
{
	uint8_t    *pad = malloc(len + GPUIR_CODEC_SLOP);
	int			ok = 1;

	memcpy(pad, buf, len);
	for (int i = 0; i < GPUIR_CODEC_SLOP; i++)
		pad[len + i] = (uint8_t) rnd();
	for (size_t cut = len + 1; ok && cut-- > 0;)
		for (int what = 0; ok && what < 3; what++)
		{
			uint32_t	d1[GPUIR_BLOCK_SIZE],
						t1[GPUIR_BLOCK_SIZE],
						d2[GPUIR_BLOCK_SIZE],
						t2[GPUIR_BLOCK_SIZE];
			int			r1 = GpuirCodecDecode(buf, cut, prev, what != 2 ? d1 : NULL,
											  what != 1 ? t1 : NULL);
			int			r2 = GpuirCodecDecodePadded(pad, cut, prev, what != 2 ? d2 : NULL,
													what != 1 ? t2 : NULL);

			if (GpuirCodecBlockBytes(buf, cut) != (long) cut)
				r1 = GPUIR_CODEC_CORRUPT;
			if (r1 != r2)
				ok = 0;
			for (int i = 0; ok && i < r1; i++)
				if ((what != 2 && d1[i] != d2[i]) || (what != 1 && t1[i] != t2[i]))
					ok = 0;
		}
	free(pad);
	return ok;
}

/* round-trip one block; returns 1 on success */
static int
roundtrip(const uint32_t *docids, const uint32_t *tfs, int n, uint32_t prev)
{
	uint8_t		buf[GPUIR_BLOCK_MAX_BYTES];
	uint32_t	d[GPUIR_BLOCK_SIZE],
				t[GPUIR_BLOCK_SIZE];
	size_t		len = GpuirCodecEncode(docids, tfs, n, prev, buf);

	if (len % 4 != 0 || len > GPUIR_BLOCK_MAX_BYTES)
		return 0;
	if (GpuirCodecBlockBytes(buf, len) != (long) len)
		return 0;
	if (GpuirCodecDecode(buf, len, prev, d, t) != n)
		return 0;
	for (int i = 0; i < n; i++)
		if (d[i] != docids[i] || t[i] != tfs[i] || GpuirCodecTf(buf, i) != tfs[i])
			return 0;
	/* every truncation is rejected */
	for (size_t cut = 0; cut < len; cut++)
		if (GpuirCodecDecode(buf, cut, prev, d, t) != GPUIR_CODEC_CORRUPT)
			return 0;
	return padded_same(buf, len, prev);
}

/*
 * ref_impacts: GpuirCodecBlockImpacts' frontier by the simple route (sort
 * every pair by tf descending, dl ascending, keep each pair whose dl is
 * below every earlier one), for comparison; returns the frontier's length
 */
static int
ref_pair_cmp(const void *a, const void *b)
{
	const uint32_t *pa = a;
	const uint32_t *pb = b;

	if (pa[0] != pb[0])
		return (pa[0] < pb[0]) - (pa[0] > pb[0]);
	return (pa[1] > pb[1]) - (pa[1] < pb[1]);
}

static int
ref_impacts(uint32_t (*pairs)[2], int n)
{
	int			m = 0;
	uint32_t	mindl = UINT32_MAX;

	qsort(pairs, n, sizeof(pairs[0]), ref_pair_cmp);
	for (int i = 0; i < n; i++)
		if (pairs[i][1] < mindl)
		{
			mindl = pairs[i][1];
			pairs[m][0] = pairs[i][0];
			pairs[m][1] = pairs[i][1];
			m++;
		}
	return m;
}

int
main(void)
{
	uint32_t	docids[GPUIR_BLOCK_SIZE],
				tfs[GPUIR_BLOCK_SIZE];
	char		what[128];

	/* single posting, first block, docID 0 and the largest docID */
	docids[0] = 0;
	tfs[0] = 1;
	check(roundtrip(docids, tfs, 1, GPUIR_FIRST_PREV_DOCID), "single posting docID 0");
	docids[0] = UINT32_MAX - 1;
	tfs[0] = 4000;
	check(roundtrip(docids, tfs, 1, GPUIR_FIRST_PREV_DOCID), "single posting docID 2^32-2");

	/* full dense block */
	for (int i = 0; i < GPUIR_BLOCK_SIZE; i++)
	{
		docids[i] = 1000 + i;
		tfs[i] = 1;
	}
	check(roundtrip(docids, tfs, GPUIR_BLOCK_SIZE, 999), "full dense block");

	/* gaps near 2^32: two postings at both ends of the docID space */
	docids[0] = 1;
	docids[1] = UINT32_MAX - 1;
	tfs[0] = 7;
	tfs[1] = 65536;
	check(roundtrip(docids, tfs, 2, GPUIR_FIRST_PREV_DOCID), "gap near 2^32");
	docids[0] = UINT32_MAX - 2;
	docids[1] = UINT32_MAX - 1;
	check(roundtrip(docids, tfs, 2, 0), "first gap near 2^32 after docID 0");

	/* tf in the thousands and the largest tf */
	for (int i = 0; i < GPUIR_BLOCK_SIZE; i++)
	{
		docids[i] = 3 * i;
		tfs[i] = (i % 17 == 0) ? 1000 + 37 * i : 1 + i % 3;
	}
	tfs[5] = UINT32_MAX - 1;
	check(roundtrip(docids, tfs, GPUIR_BLOCK_SIZE, GPUIR_FIRST_PREV_DOCID), "tf in the thousands");

	/* random blocks of random sizes and skew */
	for (int iter = 0; iter < 20000; iter++)
	{
		int			n = 1 + rnd() % GPUIR_BLOCK_SIZE;
		int			maxgapbits = rnd() % 33;
		uint64_t	cur = rnd() % 1000;
		uint32_t	prev = (rnd() & 1) ? GPUIR_FIRST_PREV_DOCID : 0;
		int			ok = 1;

		if (prev == 0)
			cur += 1;
		for (int i = 0; i < n; i++)
		{
			uint32_t	g = maxgapbits ? rnd() >> (32 - maxgapbits) : 0;

			if (rnd() % 10 == 0)
				g = rnd() >> (rnd() % 32);	/* outlier: an exception */
			if (i > 0)
				cur += (uint64_t) g + 1;
			if (cur >= UINT32_MAX - 1)
			{
				n = i;
				break;
			}
			docids[i] = (uint32_t) cur;
			tfs[i] = 1 + ((rnd() % 8 == 0) ? rnd() % 5000 : rnd() % 3);
		}
		if (n == 0)
			continue;
		ok = roundtrip(docids, tfs, n, prev);
		if (!ok)
		{
			snprintf(what, sizeof(what), "random block %d (n=%d)", iter, n);
			check(0, what);
		}
		else
			passed++;
	}

	/* corruption: random byte flips never crash and are caught or decode in range */
	for (int iter = 0; iter < 20000; iter++)
	{
		uint8_t		buf[GPUIR_BLOCK_MAX_BYTES];
		uint32_t	d[GPUIR_BLOCK_SIZE],
					t[GPUIR_BLOCK_SIZE];
		int			n = 1 + rnd() % GPUIR_BLOCK_SIZE;
		size_t		len;
		int			r;

		for (int i = 0; i < n; i++)
		{
			docids[i] = 10 * i + rnd() % 10;
			tfs[i] = 1 + rnd() % 50;
		}
		len = GpuirCodecEncode(docids, tfs, n, GPUIR_FIRST_PREV_DOCID, buf);
		buf[rnd() % len] ^= (uint8_t) (1 + rnd() % 255);
		r = GpuirCodecDecode(buf, len, GPUIR_FIRST_PREV_DOCID, d, t);
		if (r != GPUIR_CODEC_CORRUPT && (r < 1 || r > GPUIR_BLOCK_SIZE))
			check(0, "corrupt block decoded to an impossible count");
		else if (iter % 8 == 0 && !padded_same(buf, len, GPUIR_FIRST_PREV_DOCID))
			check(0, "the padded decoder differs on a corrupt block");
		else
			passed++;
	}

	/* a corrupt tf section is caught by GpuirCodecCheckTf (found by fuzzing) */
	{
		static const uint8_t wrap[] = {0, 0, 0, 0, 0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
		static const uint8_t order[] = {1, 0, 0, 0, 0, 2, 1, 0, 1, 0, 0, 0, 3, 0, 0, 0};
		uint32_t	d[GPUIR_BLOCK_SIZE];

		uint32_t	t[GPUIR_BLOCK_SIZE];

		check(GpuirCodecDecode(wrap, sizeof(wrap), GPUIR_FIRST_PREV_DOCID, d, NULL) == 1 &&
			  GpuirCodecCheckTf(wrap) == GPUIR_CODEC_CORRUPT, "tf wrap rejected");
		/* and by GpuirCodecDecode itself when it decodes the tfs */
		check(GpuirCodecDecode(wrap, sizeof(wrap), GPUIR_FIRST_PREV_DOCID, d, t) ==
			  GPUIR_CODEC_CORRUPT, "tf wrap rejected by the decoder");
		check(GpuirCodecBlockBytes(order, sizeof(order)) == (long) sizeof(order) &&
			  GpuirCodecCheckTf(order) == GPUIR_CODEC_CORRUPT, "tf exception order rejected");
	}
	/*
	 * d-gaps whose sum passes 2^32 - 1: rejected, whether the 32-bit prefix
	 * sums wrap within a group of four (the SSE2 path) or in the scalar tail;
	 * and large gaps that stay below it decode exactly
	 */
	for (int n = 1; n <= 11; n++)
	{
		uint8_t		blk[GPUIR_BLOCK_HEADER + 4 * 11] = {0};
		uint32_t	d[GPUIR_BLOCK_SIZE];
		uint32_t	prev = (n % 2) ? GPUIR_FIRST_PREV_DOCID : 5;

		blk[0] = (uint8_t) (n - 1);
		blk[1] = 32;			/* gaps: 32 bits, no exceptions; tfs: width 0 */
		for (int i = 0; i < n; i++)
		{
			uint32_t	g = (i == n - 1) ? 0x80000000u : 0x01000000u;

			memcpy(blk + GPUIR_BLOCK_HEADER + 4 * i, &g, 4);
		}
		/* the last gap alone reaches 2^31 and the others add 2^24 each */
		check(GpuirCodecDecode(blk, GPUIR_BLOCK_HEADER + 4 * n, prev, d, NULL) == n &&
			  d[n - 1] == (prev == GPUIR_FIRST_PREV_DOCID ? 0 : prev + 1) +
			  (uint32_t) (n - 1) * 0x01000001u + 0x80000000u,
			  "large d-gaps below 2^32 decode");
		for (int i = 0; i < n; i++)
		{
			uint32_t	g = 0x7fffffffu;

			memcpy(blk + GPUIR_BLOCK_HEADER + 4 * i, &g, 4);
		}
		{
			/* the last docID in 64 bits: start + n 2^31 */
			int64_t		last = (prev == GPUIR_FIRST_PREV_DOCID ? -1 : (int64_t) prev) +
				(int64_t) n * 0x80000000LL;
			int			want = last < (int64_t) GPUIR_FIRST_PREV_DOCID ? n : GPUIR_CODEC_CORRUPT;

			check(GpuirCodecDecode(blk, GPUIR_BLOCK_HEADER + 4 * n, prev, d, NULL) == want,
				  "d-gaps past 2^32 rejected");
		}
		{
			uint32_t	g = 0xffffffffu;

			memcpy(blk + GPUIR_BLOCK_HEADER + 4 * (n - 1), &g, 4);
		}
		check(GpuirCodecDecode(blk, GPUIR_BLOCK_HEADER + 4 * n, prev, d, NULL) == GPUIR_CODEC_CORRUPT,
			  "a d-gap of 2^32 - 1 rejected");
		check(padded_same(blk, GPUIR_BLOCK_HEADER + 4 * n, prev),
			  "the padded decoder rejects it too");
	}

	/*
	 * every width of packed values (the unpackers by width: AVX2 up to 25
	 * bits where the CPU has it, 8-byte loads) at every group boundary, each
	 * value the largest of its width or random, docIDs near 2^32 and low
	 */
	for (int w = 1; w <= 32; w++)
		for (int n = 1; n <= GPUIR_BLOCK_SIZE; n += (n < 20 || n > 120) ? 1 : 7)
		{
			uint32_t	top = w == 32 ? UINT32_MAX : (1u << w) - 1;
			uint32_t	prev = (w % 2) ? GPUIR_FIRST_PREV_DOCID : 3;
			uint64_t	cur = prev == GPUIR_FIRST_PREV_DOCID ? 0 : prev + 1;
			int			ok;

			/* the gaps' sum must stay below 2^32 - 1: at most 2^32 / n each */
			if (w > 24)
				top >>= 7;
			for (int i = 0; i < n; i++)
			{
				uint32_t	g = (rnd() & 1) ? top : (uint32_t) rnd() & top;

				if (i > 0)
					cur += (uint64_t) g + 1;
				docids[i] = (uint32_t) cur;
				tfs[i] = 1 + ((rnd() & 1) ? (w == 32 ? UINT32_MAX - 1 : (1u << w) - 1) :
							  (uint32_t) rnd() % (w == 32 ? UINT32_MAX - 1 : (1u << w)));
			}
			ok = roundtrip(docids, tfs, n, prev);
			snprintf(what, sizeof(what), "values %d bits wide, n = %d", w, n);
			check(ok, what);
		}

	/* every encoded block passes GpuirCodecCheckTf */
	for (int iter = 0; iter < 2000; iter++)
	{
		uint8_t		buf[GPUIR_BLOCK_MAX_BYTES];
		int			n = 1 + rnd() % GPUIR_BLOCK_SIZE;

		for (int i = 0; i < n; i++)
		{
			docids[i] = 5 * i + rnd() % 5;
			tfs[i] = 1 + ((rnd() % 9 == 0) ? rnd() : rnd() % 7);
			if (tfs[i] == 0)
				tfs[i] = 1;
		}
		GpuirCodecEncode(docids, tfs, n, GPUIR_FIRST_PREV_DOCID, buf);
		check(GpuirCodecCheckTf(buf) == GPUIR_CODEC_OK, "encoded block passes the tf check");
	}

	/* block impacts: the frontier equals the simple sort's, small and large tfs mixed */
	for (int iter = 0; iter < 5000; iter++)
	{
		uint32_t	pairs[GPUIR_BLOCK_SIZE][2];
		uint32_t	ref[GPUIR_BLOCK_SIZE][2];
		int			n = 1 + rnd() % GPUIR_BLOCK_SIZE;
		int			m,
					mref;
		bool		same;

		for (int i = 0; i < n; i++)
		{
			pairs[i][0] = iter % 3 == 0 ? 1 + rnd() % 4 :
				(rnd() % 5 == 0 ? 20 + rnd() % 60 : 1 + rnd() % 8);
			pairs[i][1] = 1 + rnd() % (iter % 2 ? 40 : 2000);
			ref[i][0] = pairs[i][0];
			ref[i][1] = pairs[i][1];
		}
		m = GpuirCodecBlockImpacts(pairs, n, GPUIR_BLOCK_SIZE, 1.2, 0.75, 100.0);
		mref = ref_impacts(ref, n);
		same = m == mref;
		for (int i = 0; same && i < m; i++)
			same = pairs[i][0] == ref[i][0] && pairs[i][1] == ref[i][1];
		check(same, "block impacts: frontier as the full sort's");
	}

	printf("codec: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
