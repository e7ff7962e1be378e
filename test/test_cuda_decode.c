/*-------------------------------------------------------------------------
 *
 * test_cuda_decode.c
 *	  Standalone test of the GPU posting block decoder against the CPU
 *	  codec (no PostgreSQL): cuda/gpuir_decode.cuh, through the test's
 *	  decode kernel test/cuda_decode_kernel.cu, vs src/gpuircodec.c.
 *
 * Encodes random posting lists (blocks of 1..128 postings, d-gaps from 0
 * to near 2^32, tf up to thousands and beyond, exceptions in both
 * sections, some blocks at unaligned offsets) with GpuirCodecEncode,
 * decodes them in batches with gpuir_cuda_decode_blocks_host and compares
 * every count, docID and tf with GpuirCodecDecode.  Then feeds corrupted
 * blocks (byte flips, random header bytes, truncations, offsets past the
 * payload) and checks that the GPU's verdict equals the CPU's, also when
 * only the docID or only the tf section is requested.
 *
 * Without a CUDA driver or device prints
 *	cuda decode: skipped (no CUDA device: <detail>)
 * and exits 0, unless GPUIR_TEST_REQUIRE_GPU=1 is set (then it fails).
 * Otherwise prints "cuda decode: N passed, N failed", exit 1 on failure.
 * Usage: test_cuda_decode [--quick | --sanitize]  (run sizes: test_size.h).
 *
 *-------------------------------------------------------------------------
 */
#include "../src/gpuircodec.h"
#include "../cuda/gpuir_cuda.h"
#include "cuda_decode_kernel.h"
#include "test_util.h"
#include "test_size.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a batch of encoded blocks, as the GPU launcher takes them */
typedef struct Batch
{
	uint8_t    *payload;
	size_t		payload_bytes;
	size_t		cap;
	uint32_t   *offsets;
	uint32_t   *bytes;			/* bytes available to each block */
	uint32_t   *prev;
	uint32_t	nblocks;
	uint32_t	maxblocks;
} Batch;

static void *
xmalloc(size_t n)
{
	void	   *p = calloc(1, n ? n : 1);

	if (p == NULL)
	{
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

static void
batch_init(Batch *b, uint32_t maxblocks)
{
	b->cap = (size_t) maxblocks * (GPUIR_BLOCK_MAX_BYTES + 4) + 64;
	b->payload = xmalloc(b->cap);
	b->payload_bytes = 0;
	b->offsets = xmalloc(maxblocks * sizeof(uint32_t));
	b->bytes = xmalloc(maxblocks * sizeof(uint32_t));
	b->prev = xmalloc(maxblocks * sizeof(uint32_t));
	b->nblocks = 0;
	b->maxblocks = maxblocks;
}

static void
batch_free(Batch *b)
{
	free(b->payload);
	free(b->offsets);
	free(b->bytes);
	free(b->prev);
}

/*
 * Encode n postings as the next block of the batch, after pad (0..3) junk
 * bytes so that some blocks start unaligned.  Returns the block index.
 */
static uint32_t
batch_add(Batch *b, const uint32_t *docids, const uint32_t *tfs, int n,
		  uint32_t prev, int pad)
{
	uint32_t	i = b->nblocks++;
	size_t		len;

	for (int k = 0; k < pad; k++)
		b->payload[b->payload_bytes++] = (uint8_t) rnd();
	len = GpuirCodecEncode(docids, tfs, n, prev, b->payload + b->payload_bytes);
	b->offsets[i] = (uint32_t) b->payload_bytes;
	b->bytes[i] = (uint32_t) len;
	b->prev[i] = prev;
	b->payload_bytes += len;
	return i;
}

/*
 * Random postings after prev: n (1..128) requested, returns how many fit
 * below 2^32-1 (0 if none).  Gap widths, outliers and tf skew vary.
 */
static int
random_postings(uint32_t prev, int n, uint32_t *docids, uint32_t *tfs)
{
	int64_t		cur = (prev == GPUIR_FIRST_PREV_DOCID) ? -1 : (int64_t) prev;
	int			maxgapbits = rnd() % 33;
	int			tfmode = rnd() % 4;

	for (int i = 0; i < n; i++)
	{
		uint32_t	g = maxgapbits ? rnd() >> (32 - maxgapbits) : 0;

		if (rnd() % 10 == 0)
			g = rnd() >> (rnd() % 32);	/* outlier: an exception */
		cur += (int64_t) g + 1;
		if (cur >= (int64_t) UINT32_MAX)
			return i;
		docids[i] = (uint32_t) cur;
		switch (tfmode)
		{
			case 0:
				tfs[i] = 1;
				break;
			case 1:
				tfs[i] = 1 + rnd() % 3;
				break;
			case 2:
				tfs[i] = 1 + ((rnd() % 8 == 0) ? rnd() % 5000 : rnd() % 3);
				break;
			default:
				tfs[i] = (rnd() % 50 == 0) ? 1 + rnd() % UINT32_MAX : 1 + rnd() % 4000;
				break;
		}
	}
	return n;
}

/*
 * Decode the batch on the GPU (docids/tfs requested per the flags; want_tfs
 * = 2: the tfs read one by one, 3: only each block's first tf,
 * gpuir_cuda_decode_tf_single) and
 * compare block by block with GpuirCodecDecode on the same bytes; each
 * block is one check.  use_bytes = 0 passes block_bytes = NULL (each block
 * bounded by the payload end only).  Returns the number of corrupt blocks
 * per the CPU.
 */
static int
run_batch(const Batch *b, int want_docids, int want_tfs, int use_bytes,
		  const char *label)
{
	size_t		npost = (size_t) b->nblocks * GPUIR_BLOCK_SIZE;
	uint32_t   *gd = want_docids ? xmalloc(npost * sizeof(uint32_t)) : NULL;
	uint32_t   *gt = want_tfs ? xmalloc(npost * sizeof(uint32_t)) : NULL;
	int32_t    *gc = xmalloc(b->nblocks * sizeof(int32_t));
	int			ncorrupt = 0;
	char		what[256];
	gpuir_cuda_status st;

	/* poison outputs: the GPU must overwrite every slot */
	if (gd)
		memset(gd, 0xA5, npost * sizeof(uint32_t));
	if (gt)
		memset(gt, 0xA5, npost * sizeof(uint32_t));
	gpuir_cuda_decode_tf_single(want_tfs >= 2 ? want_tfs - 1 : 0);
	st = gpuir_cuda_decode_blocks_host(b->payload, b->payload_bytes, b->offsets,
									   use_bytes ? b->bytes : NULL, b->prev,
									   b->nblocks, gd, gt, gc, NULL);
	gpuir_cuda_decode_tf_single(0);
	if (st != GPUIR_CUDA_OK && st != GPUIR_CUDA_CORRUPT)
	{
		snprintf(what, sizeof(what), "%s: decode failed: %s (%s)", label,
				 gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
		check(0, what);
		goto out;
	}

	for (uint32_t i = 0; i < b->nblocks; i++)
	{
		uint32_t	cd[GPUIR_BLOCK_SIZE],
					ct[GPUIR_BLOCK_SIZE];
		uint32_t	off = b->offsets[i];
		size_t		len = (off <= b->payload_bytes) ? b->payload_bytes - off : 0;
		int			r;
		int			ok = 1;

		if (use_bytes && b->bytes[i] < len)
			len = b->bytes[i];
		r = GpuirCodecDecode(len ? b->payload + off : b->payload, len, b->prev[i],
							 want_docids ? cd : NULL, want_tfs ? ct : NULL);
		if (r < 0)
		{
			r = GPUIR_CUDA_BLOCK_CORRUPT;
			ncorrupt++;
		}
		if (gc[i] != r)
			ok = 0;
		for (int k = 0; ok && k < GPUIR_BLOCK_SIZE; k++)
		{
			size_t		j = (size_t) i * GPUIR_BLOCK_SIZE + k;
			int			live = (r > 0 && k < r);

			if (gd && gd[j] != (live ? cd[k] : 0))
				ok = 0;
			if (gt && gt[j] != ((live && (want_tfs != 3 || k == 0)) ? ct[k] : 0))
				ok = 0;
		}
		if (!ok)
		{
			snprintf(what, sizeof(what),
					 "%s: block %u (offset %u, bytes %zu, prev %u): gpu count %d, cpu %d",
					 label, i, off, len, b->prev[i], (int) gc[i], r);
			check(0, what);
		}
		else
			passed++;
	}
	snprintf(what, sizeof(what), "%s: status %s with %d corrupt blocks", label,
			 gpuir_cuda_status_string(st), ncorrupt);
	check((ncorrupt > 0) == (st == GPUIR_CUDA_CORRUPT), what);

out:
	free(gd);
	free(gt);
	free(gc);
	return ncorrupt;
}

/* hand-picked edge cases: single postings at both ends, full blocks, huge gaps and tf */
static void
test_edge_cases(void)
{
	Batch		b;
	uint32_t	d[GPUIR_BLOCK_SIZE],
				t[GPUIR_BLOCK_SIZE];

	batch_init(&b, 16);
	d[0] = 0;
	t[0] = 1;
	batch_add(&b, d, t, 1, GPUIR_FIRST_PREV_DOCID, 0);
	d[0] = UINT32_MAX - 1;
	t[0] = UINT32_MAX;
	batch_add(&b, d, t, 1, GPUIR_FIRST_PREV_DOCID, 0);
	d[0] = 1;
	d[1] = UINT32_MAX - 1;
	t[0] = 7;
	t[1] = 65536;
	batch_add(&b, d, t, 2, GPUIR_FIRST_PREV_DOCID, 1);
	d[0] = UINT32_MAX - 2;
	d[1] = UINT32_MAX - 1;
	batch_add(&b, d, t, 2, 0, 2);
	for (int i = 0; i < GPUIR_BLOCK_SIZE; i++)
	{
		d[i] = 1000 + i;
		t[i] = 1;
	}
	batch_add(&b, d, t, GPUIR_BLOCK_SIZE, 999, 0);	/* bg = 0, bt = 0 */
	for (int i = 0; i < GPUIR_BLOCK_SIZE; i++)
	{
		d[i] = (uint32_t) i * 33554431u;	/* gaps of 2^25 - 2 */
		t[i] = (i % 17 == 0) ? 1000 + 37 * i : 1 + i % 3;
	}
	t[5] = UINT32_MAX - 1;
	batch_add(&b, d, t, GPUIR_BLOCK_SIZE, GPUIR_FIRST_PREV_DOCID, 3);
	for (int i = 0; i < GPUIR_BLOCK_SIZE; i++)
	{
		d[i] = 5 + 2 * i;
		t[i] = (i == 127) ? 1u << 31 : 2;	/* exception at the last position */
	}
	d[0] = 4;
	batch_add(&b, d, t, GPUIR_BLOCK_SIZE, 3, 0);	/* first gap 0 */
	for (int i = 0; i < GPUIR_BLOCK_SIZE; i++)
	{
		d[i] = (uint32_t) (33554432u * (uint32_t) i + (rnd() & 0xFFFFFF));	/* w near 25 */
		t[i] = 1 + rnd();
	}
	batch_add(&b, d, t, GPUIR_BLOCK_SIZE, GPUIR_FIRST_PREV_DOCID, 1);
	run_batch(&b, 1, 1, 1, "edge cases");
	run_batch(&b, 1, 1, 0, "edge cases, no block_bytes");
	run_batch(&b, 1, 2, 1, "edge cases, tfs one by one");
	batch_free(&b);
}

/*
 * The batch again with the blocks that pass the host's gate decoded as a
 * list's (gpuir_cuda_decode_listed), as the search kernels decode them:
 * every form of run_batch with block_bytes (the gate needs each block's
 * length), and some blocks must have taken that path
 */
static void
run_listed(const Batch *b, const char *name)
{
	static const struct
	{
		int			docids;
		int			tfs;
		const char *form;
	}			forms[] = {
		{1, 1, ""}, {1, 0, ", docIDs only"}, {0, 1, ", tfs only"},
		{1, 2, ", tfs one by one"}, {1, 3, ", first tf alone"}, {0, 2, ", tfs only, one by one"},
	};
	char		label[128];

	gpuir_cuda_decode_listed(1);
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
	{
		snprintf(label, sizeof(label), "%s, listed%s", name, forms[i].form);
		run_batch(b, forms[i].docids, forms[i].tfs, 1, label);
	}
	snprintf(label, sizeof(label), "%s, listed: some blocks decoded as a list's", name);
	check(gpuir_cuda_decode_listed_count() > 0, label);
	gpuir_cuda_decode_listed(0);
}

/* random posting lists, several blocks each, chained through prev docIDs */
static void
test_random_lists(uint32_t nblocks)
{
	Batch		b;
	uint32_t	d[GPUIR_BLOCK_SIZE],
				t[GPUIR_BLOCK_SIZE];

	batch_init(&b, nblocks);
	while (b.nblocks < nblocks)
	{
		uint32_t	prev = GPUIR_FIRST_PREV_DOCID;
		int			listblocks = 1 + rnd() % 8;

		for (int k = 0; k < listblocks && b.nblocks < nblocks; k++)
		{
			int			want = (rnd() % 3 == 0) ? GPUIR_BLOCK_SIZE : 1 + rnd() % GPUIR_BLOCK_SIZE;
			int			n = random_postings(prev, want, d, t);

			if (n == 0)
				break;			/* docID space exhausted: list ends */
			batch_add(&b, d, t, n, prev, (rnd() % 8 == 0) ? 1 + rnd() % 3 : 0);
			prev = d[n - 1];
		}
	}
	if (run_batch(&b, 1, 1, 1, "random lists") != 0)
		check(0, "random lists: valid blocks reported corrupt by the CPU");
	run_batch(&b, 1, 0, 1, "random lists, docIDs only");
	run_batch(&b, 0, 1, 1, "random lists, tfs only");
	run_batch(&b, 1, 2, 1, "random lists, tfs one by one");
	run_batch(&b, 1, 3, 1, "random lists, first tf alone");
	run_batch(&b, 0, 2, 1, "random lists, tfs only, one by one");
	/* as the search kernels decode a list's blocks, their headers checked on the host */
	run_listed(&b, "random lists");
	batch_free(&b);
}

/* corrupted blocks: the GPU's verdict and values must equal the CPU's */
static void
test_corruption(uint32_t nblocks)
{
	Batch		b;
	uint32_t	d[GPUIR_BLOCK_SIZE],
				t[GPUIR_BLOCK_SIZE];
	int			ncorrupt;
	char		what[128];

	batch_init(&b, nblocks);
	while (b.nblocks < nblocks)
	{
		int			n = random_postings(GPUIR_FIRST_PREV_DOCID, 1 + rnd() % GPUIR_BLOCK_SIZE, d, t);
		uint32_t	i;
		uint8_t    *p;

		if (n == 0)
			continue;
		i = batch_add(&b, d, t, n, GPUIR_FIRST_PREV_DOCID, (rnd() % 4 == 0) ? 1 + rnd() % 3 : 0);
		p = b.payload + b.offsets[i];
		switch (rnd() % 6)
		{
			case 0:				/* one to three byte flips anywhere */
				for (int k = 1 + rnd() % 3; k > 0; k--)
					p[rnd() % b.bytes[i]] ^= (uint8_t) (1 + rnd() % 255);
				break;
			case 1:				/* a random header byte */
				p[rnd() % 8] = (uint8_t) rnd();
				break;
			case 2:				/* truncation */
				b.bytes[i] = rnd() % b.bytes[i];
				break;
			case 3:				/* an exception position or high-bits byte */
				if (b.bytes[i] > 8)
					p[8 + rnd() % (b.bytes[i] - 8)] = (uint8_t) rnd();
				break;
			case 4:				/* offset past the payload, or at its end */
				b.offsets[i] = (uint32_t) (b.cap + rnd() % 1000);
				break;
			default:			/* prev docID that makes docIDs overflow */
				b.prev[i] = UINT32_MAX - 1 - rnd() % 64;
				break;
		}
	}
	ncorrupt = run_batch(&b, 1, 1, 1, "corruption");
	snprintf(what, sizeof(what), "corruption: only %d of %u blocks corrupt", ncorrupt, b.nblocks);
	check(ncorrupt > (int) b.nblocks / 3, what);
	run_batch(&b, 1, 0, 1, "corruption, docIDs only");
	run_batch(&b, 0, 1, 1, "corruption, tfs only");
	run_batch(&b, 1, 2, 1, "corruption, tfs one by one");
	run_batch(&b, 1, 3, 1, "corruption, first tf alone");
	run_batch(&b, 1, 1, 0, "corruption, no block_bytes");
	/*
	 * the blocks whose header the host lets onto the device (sound, giving
	 * their bytes' length) decoded as a list's: the rest of their checks
	 * (exception positions, docIDs, tfs) must still give the CPU's verdict
	 */
	run_listed(&b, "corruption");
	batch_free(&b);
}

/* append a hand-made block: 8 header bytes, then nwords little-endian words */
static void
raw_block(Batch *b, uint32_t prev, const uint8_t *hdr, const uint32_t *words, int nwords)
{
	uint32_t	i = b->nblocks++;
	uint8_t    *p = b->payload + b->payload_bytes;

	memcpy(p, hdr, 8);
	for (int k = 0; k < nwords; k++)
		for (int j = 0; j < 4; j++)
			p[8 + 4 * k + j] = (uint8_t) (words[k] >> (8 * j));
	b->offsets[i] = (uint32_t) b->payload_bytes;
	b->bytes[i] = (uint32_t) (8 + 4 * nwords);
	b->prev[i] = prev;
	b->payload_bytes += 8 + 4 * (size_t) nwords;
}

/*
 * Hand-made corrupt blocks, one per rule of the validator (random flips
 * reach some of them only rarely), plus a valid block at the docID limit.
 */
static void
test_handmade(void)
{
	static const struct
	{
		uint8_t		hdr[8];
		uint32_t	prev;
		uint32_t	words[8];
		int			nwords;
		int			corrupt;
		const char *what;
	}			cases[] = {
		/* n=1, tf section w=32: tf - 1 = 0xFFFFFFFF */
		{{0, 0, 0, 0, 32, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0xFFFFFFFFu}, 1, 1, "tf - 1 = 2^32-1 packed"},
		/* n=2, tf section w=32: tf - 1 = 0xFFFFFFFF at the second posting (read alone, the first is sound) */
		{{1, 0, 0, 0, 32, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0, 0xFFFFFFFFu}, 2, 1, "tf - 1 = 2^32-1 at the second posting"},
		/* tf w=31 + exception high bit 1 at position 0: 0xFFFFFFFF */
		{{0, 0, 0, 0, 31, 1, 1, 0}, GPUIR_FIRST_PREV_DOCID, {0x7FFFFFFFu, 0, 1}, 3, 1, "tf - 1 = 2^32-1 patched"},
		/* gap 0xFFFFFFFF after docID[-1] = -1: docID 2^32-1 */
		{{0, 32, 0, 0, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0xFFFFFFFFu}, 1, 1, "docID 2^32-1"},
		/* gap 0xFFFFFFFE: docID 2^32-2, the largest valid one */
		{{0, 32, 0, 0, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0xFFFFFFFEu}, 1, 0, "docID 2^32-2 is valid"},
		/* docID overflow within the block after a large prev */
		{{1, 1, 0, 0, 0, 0, 0, 0}, 0xFFFFFFFDu, {0}, 1, 1, "docID overflow in block"},
		/* n=2, one gap exception at position 2 (>= n) */
		{{1, 1, 1, 1, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0, 2, 1}, 3, 1, "exception position >= n"},
		/* n=3, exception positions 1, 1 */
		{{2, 1, 2, 1, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0, 0x0101, 3}, 3, 1, "duplicate exception position"},
		/* n=3, exception positions 2, 1 */
		{{2, 1, 2, 1, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0, 0x0102, 3}, 3, 1, "decreasing exception positions"},
		/* tf exception position >= n */
		{{1, 0, 0, 0, 1, 1, 1, 0}, GPUIR_FIRST_PREV_DOCID, {0, 5, 1}, 3, 1, "tf exception position >= n"},
		{{0, 1, 2, 1, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0}, 8, 1, "e > n"},
		{{0, 20, 1, 13, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0}, 8, 1, "w + h > 32"},
		{{0, 1, 1, 0, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0}, 8, 1, "h = 0 with exceptions"},
		{{0, 1, 0, 3, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0}, 8, 1, "h != 0 without exceptions"},
		{{0, 33, 0, 0, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0}, 8, 1, "w = 33"},
		{{0, 0, 0, 0, 33, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0}, 8, 1, "tf w = 33"},
		{{200, 0, 0, 0, 0, 0, 0, 0}, GPUIR_FIRST_PREV_DOCID, {0}, 8, 1, "n > 128"},
		{{0, 0, 0, 0, 0, 0, 0, 9}, GPUIR_FIRST_PREV_DOCID, {0}, 8, 1, "reserved byte"},
	};
	const int	ncases = (int) (sizeof(cases) / sizeof(cases[0]));
	Batch		b;
	int			expected = 0;
	char		what[160];

	batch_init(&b, ncases);
	for (int c = 0; c < ncases; c++)
	{
		uint8_t    *p = b.payload + b.payload_bytes;
		size_t		len = 8 + 4 * (size_t) cases[c].nwords;
		uint32_t	d[GPUIR_BLOCK_SIZE],
					t[GPUIR_BLOCK_SIZE];
		int			r;

		raw_block(&b, cases[c].prev, cases[c].hdr, cases[c].words, cases[c].nwords);
		r = GpuirCodecDecode(p, len, cases[c].prev, d, t);
		expected += cases[c].corrupt;
		snprintf(what, sizeof(what), "handmade: CPU verdict on \"%s\"", cases[c].what);
		check((r == GPUIR_CODEC_CORRUPT) == cases[c].corrupt, what);
	}
	snprintf(what, sizeof(what), "handmade: %d corrupt blocks expected", expected);
	check(run_batch(&b, 1, 1, 1, "handmade") == expected, what);
	run_batch(&b, 1, 0, 1, "handmade, docIDs only");
	run_batch(&b, 0, 1, 1, "handmade, tfs only");
	run_batch(&b, 1, 2, 1, "handmade, tfs one by one");
	run_batch(&b, 1, 3, 1, "handmade, first tf alone");
	batch_free(&b);
}

/* the last block truncated by the end of the payload (block_bytes NULL) */
static void
test_payload_end(void)
{
	Batch		b;
	uint32_t	d[GPUIR_BLOCK_SIZE],
				t[GPUIR_BLOCK_SIZE];

	batch_init(&b, 64);
	for (int k = 0; k < 64; k++)
	{
		int			n = random_postings(GPUIR_FIRST_PREV_DOCID, 1 + rnd() % GPUIR_BLOCK_SIZE, d, t);

		if (n > 0)
			batch_add(&b, d, t, n, GPUIR_FIRST_PREV_DOCID, 0);
	}
	for (int cut = 1; cut <= 12 && cut <= (int) b.bytes[b.nblocks - 1]; cut++)
	{
		Batch		c = b;

		c.payload_bytes = b.payload_bytes - (size_t) cut;
		if (run_batch(&c, 1, 1, 0, "payload end") != 1)
			check(0, "payload end: the truncated last block is not the only corrupt one");
	}
	batch_free(&b);
}

/* argument checking of the launchers */
static void
test_arguments(void)
{
	uint8_t		payload[16] = {0};
	uint32_t	off = 0,
				prev = 0;
	int32_t		count = 5;

	check(gpuir_cuda_decode_blocks(NULL, 0, NULL, NULL, NULL, 0, NULL, NULL, NULL,
								   NULL, NULL) == GPUIR_CUDA_OK,
		  "zero blocks is a no-op");
	check(gpuir_cuda_decode_blocks(NULL, 16, &off, NULL, &prev, 1, NULL, NULL, &count,
								   NULL, NULL) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "NULL payload is rejected");
	check(gpuir_cuda_decode_blocks_host(payload, 16, &off, NULL, &prev, 1, NULL, NULL,
										NULL, NULL) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "NULL counts is rejected");
	/* eight zero bytes are a valid block: one posting, gap 0, tf - 1 = 0 */
	{
		uint32_t	d[GPUIR_BLOCK_SIZE],
					t[GPUIR_BLOCK_SIZE];

		check(gpuir_cuda_decode_blocks_host(payload, 16, &off, NULL, &prev, 1, d, t,
											&count, NULL) == GPUIR_CUDA_OK &&
			  count == 1 && d[0] == 1 && t[0] == 1 && d[1] == 0 && t[127] == 0,
			  "zero header decodes to one posting");
		payload[7] = 1;			/* reserved byte must be 0 */
		check(gpuir_cuda_decode_blocks_host(payload, 16, &off, NULL, &prev, 1, d, t,
											&count, NULL) == GPUIR_CUDA_CORRUPT &&
			  count == GPUIR_CUDA_BLOCK_CORRUPT && d[0] == 0 && t[0] == 0,
			  "nonzero reserved byte is corrupt");
	}
}

int
main(int argc, char **argv)
{
	int			ndev = 0;
	gpuir_cuda_status st = gpuir_cuda_device_count(&ndev);
	const char *require = getenv("GPUIR_TEST_REQUIRE_GPU");
	char		name[256];
	size_t		mem = 0;
	int			major = 0,
				minor = 0;

	test_size_args(argc, argv);
	if (st != GPUIR_CUDA_OK)
	{
		int			must = (require != NULL && strcmp(require, "1") == 0);

		if (st == GPUIR_CUDA_NO_DEVICE && !must)
		{
			printf("cuda decode: skipped (no CUDA device: %s)\n",
				   gpuir_cuda_last_error_detail());
			return 0;
		}
		printf("cuda decode: device discovery failed: %s (%s)\n",
			   gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
		return 1;
	}
	st = gpuir_cuda_device_info(0, name, sizeof(name), &mem, &major, &minor);
	if (st != GPUIR_CUDA_OK)
	{
		printf("cuda decode: device info failed: %s (%s)\n",
			   gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
		return 1;
	}
	printf("cuda decode: device 0 of %d: %s, compute capability %d.%d, %zu MiB\n",
		   ndev, name, major, minor, mem >> 20);

	rnd_seed(0x9E3779B97F4A7C15ULL);
	test_arguments();
	test_edge_cases();
	test_handmade();
	test_random_lists(sized(200000, 4000, 500));
	test_corruption(sized(50000, 2000, 200));
	test_payload_end();

	printf("cuda decode: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
