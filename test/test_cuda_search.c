/*-------------------------------------------------------------------------
 *
 * test_cuda_search.c
 *	  Standalone test of the GPU batched top-k search (cuda/gpuir_search.cu)
 *	  against a CPU reference (no PostgreSQL).
 *
 * Builds random segments with the index's list encoder (src/gpuirlist.h):
 * lists of skewed lengths
 * (1 to about 100k postings, some clustered in a docID window, some through
 * the tile boundaries), tf from 1 to thousands, doc lengths 1..2000 with
 * many repeated values and lists of tf 1 (so that exact score ties are
 * common), some deleted docIDs.  Uploads each with gpuir_cuda_segment_upload
 * and runs random batches (1..8 terms, terms shared and repeated across
 * queries, absent terms, overlapping term ranges, k in {1, 10, 100, 1000},
 * modes AND, OR and BMW) through gpuir_cuda_search_batch.  The reference
 * decodes every list with GpuirCodecDecode, sums the same float32 BM25
 * expression as GpuirBM25 (src/gpuir.h) in the query's term order, and
 * keeps the top k by score descending, docID ascending; GPU and CPU must
 * agree exactly: counts, docIDs, score bits (and zeroed slots past the
 * count).  Also checks argument validation and corruption verdicts, and
 * prints informational throughput figures for large batches.
 *
 * BMW (block-max pruning) is checked like OR on every segment (mixed
 * batches and BMW-only batches, k from 1 to 1000), including a segment with
 * skewed tf and dl (rare long-tf postings, rare short documents) where the
 * block-max bounds prune; each block gets the two impacts the index's
 * encoder computes.  On the large segments the
 * same batch runs as OR and as BMW through gpuir_cuda_search_batch_debug:
 * the outputs must be identical, BMW must decode no more blocks than OR,
 * and the decoded blocks, pruned tiles and both
 * throughputs are printed.  The library's BMW batch rule (a batch whose
 * tiles fill few waves runs its BMW queries as OR) is off for these checks,
 * so that every BMW query may prune; test_bmw_vs_or checks the rule's
 * limits, and a mixed batch and small BMW calls run under its defaults
 * too.  Batches of OR (and BMW run as OR) queries with kmax 100 run with
 * their final selections made in the tile kernel and in the final kernel
 * (test_fused_selections).  A segment uploaded without impacts and queries
 * with a negative idf must fall back to OR (same results).  Decode budgets
 * of 0, 3 and 40 blocks make the tiles decode some or all of the OR and
 * BMW lists themselves (gpuir_cuda_search_set_decode_budget): same
 * results; corrupt blocks must be found on both paths.  Lists decoded by
 * one search are reused by the next ones of the thread when nothing they
 * depend on changed, and decoded again when something did (idf, k1, a new
 * upload, BMW's bounds; test_decode_cache).  A segment of
 * 2.2 M docIDs makes top-1000 queries select in two levels (partial
 * selections, then the final one).
 *
 * Without a CUDA driver or device prints
 *	cuda search: skipped (no CUDA device: <detail>)
 * and exits 0, unless GPUIR_TEST_REQUIRE_GPU=1 is set (then it fails).
 * Otherwise prints "cuda search: N passed, N failed", exit 1 on failure.
 * Usage: test_cuda_search [--quick | --sanitize]  (run sizes: test_size.h).
 *
 *-------------------------------------------------------------------------
 */
#include "../src/gpuircodec.h"
#include "../src/gpuirlist.h"
#include "../cuda/gpuir_cuda.h"
#include "test_util.h"
#include "test_size.h"
#include "ref_topk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HOT_TERMS	8			/* the longest lists, picked often */

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

static void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
	{
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

/* uniform double in [0, 1) */
static double
urand(void)
{
	return (double) rnd() / 4294967296.0;
}

/* ---------- segments ---------- */

typedef struct SegSpec
{
	const char *name;
	uint32_t	ndocs;
	uint32_t	nterms;
	uint32_t	maxlen;			/* longest list (hot terms) */
	int			deleted;		/* mark about 2% of docIDs deleted */
	int			ties;			/* tie-heavy: tf mostly 1, dl from 3 values */
	int			skew;			/* BMW-friendly: rare high tf, rare short docs */
	int			priors;			/* static document priors (seg_priors) */
} SegSpec;

typedef struct TestSeg
{
	SegSpec		spec;
	uint32_t	ndocs;
	uint32_t	nterms;
	/* per term */
	uint32_t   *first_block;
	uint32_t   *nblocks;
	uint32_t   *npostings;
	float	   *idf;
	uint32_t  **docs;			/* decoded with GpuirCodecDecode */
	uint32_t  **tfs;
	/* the segment's arrays, as gpuir_cuda_segment_upload takes them */
	uint8_t    *payload;
	size_t		payload_bytes;
	size_t		payload_cap;
	uint32_t   *block_last;
	uint32_t   *block_offset;	/* nblocks + 1 */
	uint32_t   *impact_tf;
	uint32_t   *impact_dl;
	uint32_t	nblocks_total;
	uint32_t	blocks_cap;
	uint32_t   *doclen;
	uint8_t    *deleted;		/* NULL: none */
	float	   *prior;			/* NULL: none */
	float		prior_max;
	uint64_t	total_postings;
	gpuir_cuda_segment dev;
} TestSeg;

static inline int
is_deleted(const TestSeg *s, uint32_t d)
{
	return s->deleted != NULL && (s->deleted[d >> 3] >> (d & 7)) & 1;
}

/*
 * encode one list (docs strictly increasing) as blocks of 128 with the
 * index's list encoder (src/gpuirlist.h): the same payload, last docIDs and
 * block-max impacts as CREATE INDEX writes
 */
static void
seg_add_list(TestSeg *s, uint32_t t, const uint32_t *docs, const uint32_t *tfs, uint32_t n)
{
	GpuirListEncoder e;
	GpuirDictEntry de;

	/* payload offsets are relative to the list's start (a segment may pass 4 GB) */
	GpuirListEncoderInit(&e, 1.2, 0.75, 500.0, 0);
	s->first_block[t] = s->nblocks_total;
	for (uint32_t i = 0; i < n; i += GPUIR_BLOCK_SIZE)
	{
		int			m = (n - i < GPUIR_BLOCK_SIZE) ? (int) (n - i) : GPUIR_BLOCK_SIZE;
		uint32_t	b = s->nblocks_total++;
		uint32_t	dls[GPUIR_BLOCK_SIZE];
		uint64_t	base = s->payload_bytes - e.payload_off;
		GpuirBlockHeader bh;
		size_t		len;

		if (b + 2 > s->blocks_cap)
		{
			s->blocks_cap = s->blocks_cap * 2 + 1024;
			s->block_last = xrealloc(s->block_last, s->blocks_cap * sizeof(uint32_t));
			s->block_offset = xrealloc(s->block_offset, s->blocks_cap * sizeof(uint32_t));
			s->impact_tf = xrealloc(s->impact_tf, 2 * s->blocks_cap * sizeof(uint32_t));
			s->impact_dl = xrealloc(s->impact_dl, 2 * s->blocks_cap * sizeof(uint32_t));
		}
		if (s->payload_bytes + GPUIR_BLOCK_MAX_BYTES > s->payload_cap)
		{
			s->payload_cap = s->payload_cap * 2 + (1 << 20);
			s->payload = xrealloc(s->payload, s->payload_cap);
		}
		for (int k = 0; k < m; k++)
			dls[k] = s->doclen[docs[i + k]];
		len = GpuirListEncodeBlock(&e, docs + i, tfs + i, dls, m, &bh,
								   s->payload + s->payload_bytes);
		if (len == 0)
		{
			fprintf(stderr, "list encoder refused a block of term %u\n", t);
			exit(1);
		}
		s->block_offset[b] = (uint32_t) (base + bh.payload_off);
		s->payload_bytes += len;
		s->block_last[b] = bh.last_docid;
		for (int k = 0; k < GPUIR_BLOCK_IMPACTS; k++)
		{
			s->impact_tf[2 * b + k] = bh.impact_tf[k];
			s->impact_dl[2 * b + k] = bh.impact_dl[k];
		}
	}
	GpuirListEncoderFinish(&e, &de);
	s->npostings[t] = de.npostings;
	s->nblocks[t] = de.nblocks;
}

/* a tf drawn by the term's tf mode */
static uint32_t
random_tf(int mode)
{
	switch (mode)
	{
		case 0:
			return 1;
		case 1:
			return 1 + ((rnd() % 8 == 0) ? rnd() % 3 : 0);
		case 2:
			return 1 + rnd() % 3;
		case 3:
			return 1 + ((rnd() % 4 == 0) ? rnd() % 50 : rnd() % 3);
		case 5:
			return 1 + ((rnd() % 400 == 0) ? rnd() % 60 : 0);
		default:
			return 1 + ((rnd() % 20 == 0) ? rnd() % 5000 : rnd() % 4);
	}
}

/*
 * seg_priors: static priors for s's documents: half 0, some from three
 * common values (ties after the weight), some uniform in [0, 8), and one in
 * twenty in [8, 48), larger than most BM25 sums, so that the prior decides
 * many rankings and the bounds must carry it (prior_max); the largest is
 * the segment's prior_max
 */
static void
seg_priors(TestSeg *s)
{
	static const float common_prior[] = {0.5f, 1.0f, 2.0f};

	s->prior = xmalloc((size_t) s->ndocs * sizeof(float));
	s->prior_max = 0.0f;
	for (uint32_t d = 0; d < s->ndocs; d++)
	{
		const uint32_t r = rnd() % 20;
		float		p;

		if (r < 10)
			p = 0.0f;
		else if (r < 16)
			p = common_prior[rnd() % 3];
		else if (r < 19)
			p = (float) (urand() * 8.0);
		else
			p = (float) (8.0 + urand() * 40.0);
		s->prior[d] = p;
		if (p > s->prior_max)
			s->prior_max = p;
	}
}

/*
 * seg_build: a random segment after spec (doc lengths, deletions, every
 * term's list by its length, tf and docID-window modes), its lists decoded
 * back for the CPU reference (seg_upload sends it to the device).  Long
 * because it reads as one recipe, step after step, each a few lines; no
 * step is used elsewhere.
 */
static void
seg_build(TestSeg *s, const SegSpec *spec)
{
	const uint32_t N = spec->ndocs;
	uint32_t   *mark = xmalloc(((size_t) N + 31) / 32 * sizeof(uint32_t) + 8);
	uint32_t   *docs = xmalloc((size_t) N * sizeof(uint32_t));
	uint32_t   *tfs = xmalloc((size_t) N * sizeof(uint32_t));
	static const uint32_t common_dl[] = {8, 16, 100, 10, 20, 30, 50};

	memset(s, 0, sizeof(*s));
	s->spec = *spec;
	s->ndocs = N;
	s->nterms = spec->nterms;
	s->first_block = xmalloc(s->nterms * sizeof(uint32_t));
	s->nblocks = xmalloc(s->nterms * sizeof(uint32_t));
	s->npostings = xmalloc(s->nterms * sizeof(uint32_t));
	s->idf = xmalloc(s->nterms * sizeof(float));
	s->docs = xmalloc(s->nterms * sizeof(uint32_t *));
	s->tfs = xmalloc(s->nterms * sizeof(uint32_t *));
	s->doclen = xmalloc((size_t) N * sizeof(uint32_t));
	for (uint32_t d = 0; d < N; d++)
	{
		if (spec->ties)
			s->doclen[d] = (rnd() % 4) ? common_dl[rnd() % 3] : 1 + rnd() % 2000;
		else if (spec->skew)
			s->doclen[d] = (rnd() % 500 == 0) ? 1 + rnd() % 10 : 200 + rnd() % 1800;
		else
			s->doclen[d] = (rnd() % 3 == 0) ? common_dl[rnd() % 7] : 1 + rnd() % 2000;
	}
	if (spec->deleted)
	{
		s->deleted = xmalloc(((size_t) N + 7) / 8);
		for (uint32_t d = 0; d < N; d++)
			if (rnd() % 50 == 0)
				s->deleted[d >> 3] |= (uint8_t) (1 << (d & 7));
	}
	if (spec->priors)
		seg_priors(s);

	for (uint32_t t = 0; t < s->nterms; t++)
	{
		int64_t		p;
		uint32_t	wlo = 0,
					wlen = N,
					n = 0;
		int			tfmode = (int) (spec->ties ? rnd() % 2 : (spec->skew ? 5 : rnd() % 5));

		/* length: hot terms long, the rest log-uniform in 1 .. maxlen */
		if (t < HOT_TERMS)
			p = (int64_t) (spec->maxlen / (1 + t / 2)) - (int64_t) (rnd() % 1000);
		else
			p = (int64_t) exp(urand() * log((double) spec->maxlen));
		if (t == 3)
			p = N;				/* every docID */
		if (p < 1)
			p = 1;
		if (p > (int64_t) N)
			p = N;
		/* a quarter of the lists clustered in a window of the docID space */
		if (t != 2 && rnd() % 4 == 0 && p < (int64_t) N)
		{
			uint64_t	w = (uint64_t) p * (1 + rnd() % 4);

			wlen = (uint32_t) (w < N ? w : N);
			wlo = rnd() % (N - wlen + 1);
		}
		/* p distinct docIDs of the window, by marking */
		if (p * 2 <= (int64_t) wlen)
		{
			int64_t		got = 0;

			while (got < p)
			{
				uint32_t	d = wlo + rnd() % wlen;

				if (!((mark[d >> 5] >> (d & 31)) & 1))
				{
					mark[d >> 5] |= 1u << (d & 31);
					got++;
				}
			}
		}
		else
		{
			int64_t		drop = (int64_t) wlen - p;

			for (uint32_t d = wlo; d < wlo + wlen; d++)
				mark[d >> 5] |= 1u << (d & 31);
			while (drop > 0)
			{
				uint32_t	d = wlo + rnd() % wlen;

				if ((mark[d >> 5] >> (d & 31)) & 1)
				{
					mark[d >> 5] &= ~(1u << (d & 31));
					drop--;
				}
			}
		}
		if (t == 2)
		{
			/* the ends of the docID space and the tile boundaries */
			static const uint32_t special[] = {0, 1, 8190, 8191, 8192, 8193, 16383, 16384};

			for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
				if (special[i] < N)
					mark[special[i] >> 5] |= 1u << (special[i] & 31);
			mark[(N - 1) >> 5] |= 1u << ((N - 1) & 31);
		}
		for (uint32_t d = wlo & ~31u; d < wlo + wlen; d += 32)
		{
			uint32_t	v = mark[d >> 5];

			mark[d >> 5] = 0;
			while (v)
			{
				int			bit = __builtin_ctz(v);

				v &= v - 1;
				docs[n] = d + bit;
				tfs[n] = random_tf(tfmode);
				n++;
			}
		}
		seg_add_list(s, t, docs, tfs, n);
		s->total_postings += n;
		s->idf[t] = logf(1.0f + ((float) N - (float) n + 0.5f) / ((float) n + 0.5f));
		/* keep the generated postings to check the decoder against */
		s->docs[t] = xmalloc(n * sizeof(uint32_t));
		s->tfs[t] = xmalloc(n * sizeof(uint32_t));
		memcpy(s->docs[t], docs, n * sizeof(uint32_t));
		memcpy(s->tfs[t], tfs, n * sizeof(uint32_t));
	}
	s->block_offset[s->nblocks_total] = (uint32_t) s->payload_bytes;

	/* the reference reads the lists back through the CPU decoder */
	{
		int			ok = 1;

		for (uint32_t t = 0; t < s->nterms && ok; t++)
		{
			uint32_t	prev = GPUIR_FIRST_PREV_DOCID;

			for (uint32_t b = 0; b < s->nblocks[t]; b++)
			{
				uint32_t	bi = s->first_block[t] + b;
				uint32_t	cd[GPUIR_BLOCK_SIZE],
							ct[GPUIR_BLOCK_SIZE];
				int			r = GpuirCodecDecode(s->payload + s->block_offset[bi],
												 s->block_offset[bi + 1] - s->block_offset[bi],
												 prev, cd, ct);
				uint32_t	base = b * GPUIR_BLOCK_SIZE;

				if (r < 1 || memcmp(cd, s->docs[t] + base, r * sizeof(uint32_t)) != 0 ||
					memcmp(ct, s->tfs[t] + base, r * sizeof(uint32_t)) != 0)
				{
					ok = 0;
					break;
				}
				memcpy(s->docs[t] + base, cd, r * sizeof(uint32_t));
				memcpy(s->tfs[t] + base, ct, r * sizeof(uint32_t));
				prev = cd[r - 1];
			}
		}
		check(ok, "segment lists round-trip through GpuirCodecDecode");
	}
	free(mark);
	free(docs);
	free(tfs);
}

static gpuir_cuda_status
seg_upload(TestSeg *s)
{
	return gpuir_cuda_segment_upload(s->payload, s->payload_bytes, s->block_last,
									 s->block_offset, s->impact_tf, s->impact_dl,
									 s->nblocks_total, s->doclen, s->deleted, s->prior,
									 s->prior_max, s->ndocs, &s->dev);
}

/* seg_tiles: the tiles of GPUIR_CUDA_TILE_DOCS docIDs that s's docIDs fill */
static uint64_t
seg_tiles(const TestSeg *s)
{
	return ((uint64_t) s->ndocs + GPUIR_CUDA_TILE_DOCS - 1) / GPUIR_CUDA_TILE_DOCS;
}

static void
seg_free(TestSeg *s)
{
	gpuir_cuda_segment_free(&s->dev);
	for (uint32_t t = 0; t < s->nterms; t++)
	{
		free(s->docs[t]);
		free(s->tfs[t]);
	}
	free(s->docs);
	free(s->tfs);
	free(s->first_block);
	free(s->nblocks);
	free(s->npostings);
	free(s->idf);
	free(s->payload);
	free(s->block_last);
	free(s->block_offset);
	free(s->impact_tf);
	free(s->impact_dl);
	free(s->doclen);
	free(s->deleted);
	free(s->prior);
}

/* ---------- batches ---------- */

typedef struct Batch
{
	gpuir_cuda_query *q;
	uint32_t	nq;
	gpuir_cuda_term *t;
	int32_t    *src;			/* segment term of t[i], -1 when absent */
	uint32_t	nt;
	uint32_t	tcap;
	uint32_t	kmax;
	uint64_t	postings;		/* sum of the queries' list lengths */
} Batch;

typedef struct BatchSpec
{
	const char *name;
	uint32_t	nq;
	uint32_t	minterms;
	uint32_t	maxterms;
	int			mode;			/* -1: random */
	uint32_t	k;				/* 0: random of 1, 10, 100, 1000 (<= kmax) */
	uint32_t	kmax;
	int			extras;			/* absent terms, empty queries, shared slices, repeats */
	int			hot;			/* every term list 3 (every docID) or one other
								 * long list of the query's (0 or 1): the AND
								 * holds that list's documents */
	int			sweep;			/* the batch's i-th term is list i mod nterms */
} BatchSpec;

static void
batch_add_term(Batch *b, const TestSeg *s, int32_t src)
{
	gpuir_cuda_term *t;

	if (b->nt == b->tcap)
	{
		b->tcap = b->tcap * 2 + 64;
		b->t = xrealloc(b->t, b->tcap * sizeof(gpuir_cuda_term));
		b->src = xrealloc(b->src, b->tcap * sizeof(int32_t));
	}
	t = &b->t[b->nt];
	b->src[b->nt++] = src;
	if (src < 0)
	{
		t->first_block = 0;
		t->nblocks = 0;
		t->npostings = 0;
		t->idf = 1.5f;
		return;
	}
	t->first_block = s->first_block[src];
	t->nblocks = s->nblocks[src];
	t->npostings = s->npostings[src];
	t->idf = s->idf[src];
}

static void
batch_make(Batch *b, const TestSeg *s, const BatchSpec *bs)
{
	static const uint32_t ks[] = {1, 10, 100, 1000};

	memset(b, 0, sizeof(*b));
	b->nq = bs->nq;
	b->kmax = bs->kmax;
	b->q = xmalloc(bs->nq * sizeof(gpuir_cuda_query));
	for (uint32_t i = 0; i < bs->nq; i++)
	{
		gpuir_cuda_query *q = &b->q[i];
		uint32_t	k = bs->k;

		while (k == 0 || k > bs->kmax)
			k = (rnd() % 5 == 0) ? 1 + rnd() % GPUIR_CUDA_MAX_K : ks[rnd() % 4];
		q->k = k;
		q->mode = (bs->mode >= 0) ? bs->mode : (int32_t) (rnd() % 3);
		if (bs->extras && i > 0 && rnd() % 8 == 0)
		{
			/* the previous query's terms again (overlapping term ranges) */
			q->first_term = b->q[i - 1].first_term;
			q->nterms = b->q[i - 1].nterms;
		}
		else if (bs->extras && rnd() % 50 == 0)
		{
			q->first_term = b->nt;
			q->nterms = 0;
		}
		else
		{
			uint32_t	nt = bs->minterms + rnd() % (bs->maxterms - bs->minterms + 1);
			int32_t		hot = bs->hot ? (int32_t) (rnd() % 2) : 0;

			q->first_term = b->nt;
			q->nterms = nt;
			for (uint32_t j = 0; j < nt; j++)
			{
				int32_t		src;

				if (bs->sweep)
					src = (int32_t) (b->nt % s->nterms);
				else if (bs->extras && rnd() % 25 == 0)
					src = -1;
				else if (bs->extras && j > 0 && rnd() % 30 == 0)
					src = b->src[b->nt - 1];	/* the same list twice */
				else if (bs->hot && s->nterms > 3)
					src = (rnd() % 2 == 0) ? 3 : hot;
				else if (rnd() % 2 == 0)
					src = (int32_t) (rnd() % (s->nterms < HOT_TERMS ? s->nterms : HOT_TERMS));
				else
					src = (int32_t) (rnd() % s->nterms);
				batch_add_term(b, s, src);
			}
		}
		for (uint32_t j = 0; j < q->nterms; j++)
			b->postings += b->t[q->first_term + j].npostings;
	}
}

static void
batch_free(Batch *b)
{
	free(b->q);
	free(b->t);
	free(b->src);
}

/* ---------- CPU reference ---------- */

typedef struct Ref
{
	float	   *acc;
	uint32_t   *cnt;
	uint32_t   *touched;
	Res		   *heap;
} Ref;

static void
ref_init(Ref *r, uint32_t ndocs)
{
	r->acc = xmalloc((size_t) ndocs * sizeof(float));
	r->cnt = xmalloc((size_t) ndocs * sizeof(uint32_t));
	r->touched = xmalloc((size_t) ndocs * sizeof(uint32_t));
	r->heap = xmalloc(GPUIR_CUDA_MAX_K * sizeof(Res));
}

static void
ref_free(Ref *r)
{
	free(r->acc);
	free(r->cnt);
	free(r->touched);
	free(r->heap);
}

/*
 * The top k of query q: every list's postings in the query's term order,
 * each document's score a float32 sum from 0.0f, plus its prior weighted
 * (in a segment with priors); AND keeps documents in
 * every list, OR (and BMW) those in any; deleted docIDs never qualify.
 */
static uint32_t
ref_query(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const Batch *b,
		  const gpuir_cuda_query *q, Res *out)
{
	uint32_t	ntouched = 0,
				n = 0;
	int			and_mode = (q->mode == GPUIR_CUDA_MODE_AND);

	for (uint32_t j = 0; j < q->nterms; j++)
	{
		int32_t		src = b->src[q->first_term + j];
		float		idf = b->t[q->first_term + j].idf;

		if (src < 0)
		{
			if (and_mode)
				break;			/* an absent term: nothing qualifies */
			continue;
		}
		for (uint32_t i = 0; i < s->npostings[src]; i++)
		{
			uint32_t	d = s->docs[src][i];

			if (r->cnt[d] == 0)
			{
				r->touched[ntouched++] = d;
				r->acc[d] = 0.0f;
			}
			r->acc[d] = r->acc[d] + bm25(idf, s->tfs[src][i], s->doclen[d], sc);
			r->cnt[d]++;
		}
	}
	for (uint32_t i = 0; i < ntouched; i++)
	{
		uint32_t	d = r->touched[i];

		if ((!and_mode || r->cnt[d] == q->nterms) && !is_deleted(s, d))
		{
			Res			x = {r->acc[d], d};

			/* the prior after the BM25 sum: w * prior rounded, then added */
			if (s->prior != NULL)
			{
				float		pw = sc->prior_weight * s->prior[d];

				x.score = r->acc[d] + pw;
			}

			heap_offer(r->heap, &n, q->k, x);
		}
		r->cnt[d] = 0;
	}
	memcpy(out, r->heap, n * sizeof(Res));
	qsort(out, n, sizeof(Res), res_cmp);
	return n;
}

/* ---------- running batches ---------- */

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct Out
{
	uint32_t   *docids;
	float	   *scores;
	uint32_t   *counts;
} Out;

static void
out_alloc(Out *o, const Batch *b)
{
	size_t		n = (size_t) b->nq * b->kmax;

	o->docids = xmalloc(n * sizeof(uint32_t));
	o->scores = xmalloc(n * sizeof(float));
	o->counts = xmalloc(b->nq * sizeof(uint32_t));
	/* poison: the GPU must write every slot */
	memset(o->docids, 0xA5, n * sizeof(uint32_t));
	memset(o->scores, 0xA5, n * sizeof(float));
	memset(o->counts, 0xA5, b->nq * sizeof(uint32_t));
}

static void
out_free(Out *o)
{
	free(o->docids);
	free(o->scores);
	free(o->counts);
}

static gpuir_cuda_status
run_gpu(const TestSeg *s, const gpuir_cuda_scoring *sc, const Batch *b, Out *o)
{
	return gpuir_cuda_search_batch(&s->dev, sc, b->q, b->nq, b->t, b->nt, b->kmax,
								   o->docids, o->scores, o->counts, NULL);
}

/* compare every query of the batch with the reference; one check each */
static void
compare_batch(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const Batch *b,
			  const Out *o, const char *label)
{
	Res		   *want = xmalloc(GPUIR_CUDA_MAX_K * sizeof(Res));
	char		what[512];

	for (uint32_t i = 0; i < b->nq; i++)
	{
		const gpuir_cuda_query *q = &b->q[i];
		uint32_t	n = ref_query(r, s, sc, b, q, want);
		const uint32_t *gd = o->docids + (size_t) i * b->kmax;
		const float *gs = o->scores + (size_t) i * b->kmax;
		int			bad = -1;

		if (o->counts[i] != n)
			bad = -2;
		for (uint32_t j = 0; bad == -1 && j < b->kmax; j++)
		{
			if (j < n)
			{
				if (gd[j] != want[j].doc || memcmp(&gs[j], &want[j].score, sizeof(float)) != 0)
					bad = (int) j;
			}
			else if (gd[j] != 0 || gs[j] != 0.0f)
				bad = (int) j;
		}
		if (bad == -1)
		{
			passed++;
			continue;
		}
		if (bad == -2)
			snprintf(what, sizeof(what),
					 "%s/%s: query %u (mode %d, k %u, %u terms): gpu count %u, cpu %u",
					 s->spec.name, label, i, (int) q->mode, q->k, q->nterms,
					 o->counts[i], n);
		else
			snprintf(what, sizeof(what),
					 "%s/%s: query %u (mode %d, k %u, %u terms): rank %d: gpu (%u, %.9g), cpu (%u, %.9g)",
					 s->spec.name, label, i, (int) q->mode, q->k, q->nterms, bad,
					 gd[bad], (double) gs[bad], bad < (int) n ? want[bad].doc : 0,
					 bad < (int) n ? (double) want[bad].score : 0.0);
		check(0, what);
	}
	free(want);
}

/* make, run and check one batch; with timing, run it twice and report the second */
static void
test_batch(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs,
		   int timing)
{
	Batch		b;
	Out			o;
	gpuir_cuda_status st;
	char		what[256];
	double		t0,
				t1;

	batch_make(&b, s, bs);
	out_alloc(&o, &b);
	t0 = now_s();
	st = run_gpu(s, sc, &b, &o);
	t1 = now_s();
	if (st == GPUIR_CUDA_OK && timing)
	{
		t0 = now_s();
		st = run_gpu(s, sc, &b, &o);
		t1 = now_s();
	}
	snprintf(what, sizeof(what), "%s/%s: search status %s (%s)", s->spec.name, bs->name,
			 gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
	check(st == GPUIR_CUDA_OK, what);
	if (st == GPUIR_CUDA_OK)
	{
		if (timing)
			printf("cuda search: throughput %s on %s (%u docs): %u queries, %.1f M postings in %.2f ms: %.0f queries/s, %.0f M postings/s\n",
				   bs->name, s->spec.name, s->ndocs, b.nq, b.postings / 1e6,
				   (t1 - t0) * 1e3, b.nq / (t1 - t0), b.postings / 1e6 / (t1 - t0));
		compare_batch(r, s, sc, &b, &o, bs->name);
		if (bs->hot && s->ndocs >= 20000)
		{
			uint32_t	nonempty = 0;

			for (uint32_t i = 0; i < b.nq; i++)
				nonempty += (o.counts[i] > 0);
			snprintf(what, sizeof(what), "%s/%s: %u of %u queries found documents",
					 s->spec.name, bs->name, nonempty, b.nq);
			check(nonempty > b.nq / 2, what);
		}
	}
	out_free(&o);
	batch_free(&b);
}

/* ---------- BMW against OR ---------- */

/* run with statistics (also a warm-up), then once more timed without */
static gpuir_cuda_status
run_stats_timed(const TestSeg *s, const gpuir_cuda_scoring *sc, const Batch *b, Out *o,
				gpuir_cuda_search_stats *stats, double *secs)
{
	gpuir_cuda_status st;
	double		t0;

	st = gpuir_cuda_search_batch_debug(&s->dev, sc, b->q, b->nq, b->t, b->nt, b->kmax,
									   o->docids, o->scores, o->counts, NULL, stats);
	if (st != GPUIR_CUDA_OK)
		return st;
	t0 = now_s();
	st = run_gpu(s, sc, b, o);
	*secs = now_s() - t0;
	return st;
}

/*
 * One batch (bs->mode OR) run as OR, then with every query switched to BMW
 * and no density limit (gpuir_cuda_search_set_maxscore's dense 0, so that
 * no query of dense lists runs as OR): identical outputs, BMW checked
 * against the CPU reference, BMW decoding no more blocks than OR; prints
 * the pruning and both throughputs.
 */
static void
test_bmw_vs_or(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs)
{
	Batch		b;
	Out			oo,
				ob;
	gpuir_cuda_search_stats so,
				sb;
	double		tor = 0,
				tbmw = 0;
	gpuir_cuda_status st;
	char		what[256];
	const uint64_t ntiles = seg_tiles(s);
	size_t		n;

	batch_make(&b, s, bs);
	n = (size_t) b.nq * b.kmax;
	out_alloc(&oo, &b);
	out_alloc(&ob, &b);
	/* both decode their lists: no list kept from an earlier search */
	gpuir_cuda_search_set_decode_cache(0);
	st = run_stats_timed(s, sc, &b, &oo, &so, &tor);
	snprintf(what, sizeof(what), "%s/%s as OR: status %s (%s)", s->spec.name, bs->name,
			 gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
	check(st == GPUIR_CUDA_OK, what);
	for (uint32_t i = 0; i < b.nq; i++)
		if (b.q[i].mode == GPUIR_CUDA_MODE_OR)
			b.q[i].mode = GPUIR_CUDA_MODE_BMW;
	if (st == GPUIR_CUDA_OK)
	{
		gpuir_cuda_search_set_maxscore(GPUIR_CUDA_MAXSCORE_SHARE, 0);
		st = run_stats_timed(s, sc, &b, &ob, &sb, &tbmw);
		gpuir_cuda_search_set_maxscore(GPUIR_CUDA_MAXSCORE_SHARE, GPUIR_CUDA_MAXSCORE_DENSE);
		snprintf(what, sizeof(what), "%s/%s as BMW: status %s (%s)", s->spec.name, bs->name,
				 gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
		check(st == GPUIR_CUDA_OK, what);
	}
	if (st == GPUIR_CUDA_OK)
	{
		snprintf(what, sizeof(what), "%s/%s: BMW output identical to OR", s->spec.name,
				 bs->name);
		check(memcmp(oo.counts, ob.counts, b.nq * sizeof(uint32_t)) == 0 &&
			  memcmp(oo.docids, ob.docids, n * sizeof(uint32_t)) == 0 &&
			  memcmp(oo.scores, ob.scores, n * sizeof(float)) == 0, what);
		compare_batch(r, s, sc, &b, &ob, bs->name);
		snprintf(what, sizeof(what), "%s/%s: BMW decodes at most OR's blocks (%llu vs %llu)",
				 s->spec.name, bs->name, (unsigned long long) sb.blocks_decoded,
				 (unsigned long long) so.blocks_decoded);
		check(sb.blocks_decoded <= so.blocks_decoded && so.bmw_queries == 0, what);
		snprintf(what, sizeof(what), "%s/%s: every query ran as BMW (%llu of %u)",
				 s->spec.name, bs->name, (unsigned long long) sb.bmw_queries, b.nq);
		check(sb.bmw_queries == b.nq, what);
	}
	if (st == GPUIR_CUDA_OK)
	{
		Out			om;
		gpuir_cuda_search_stats sm;
		double		tm = 0;

		out_alloc(&om, &b);

		/*
		 * the batch rule (a tile of the segment for each BMW query, against
		 * waves of the tile kernel's resident blocks): limits no batch
		 * reaches, so every query runs as OR; no limit of waves (0: the
		 * rule is off); a limit of one posting a batch, which every batch
		 * reaches; then one wave more than the batch's tiles fill (OR),
		 * and exactly as many as they fill (BMW; with a batch of less than
		 * a wave that is 0, the rule off, BMW too); then a limit of
		 * postings at the batch's own (reached: BMW) and one above it (OR)
		 */
		{
			static const char *const how[7] = {
				"below the batch limits", "without a limit of waves",
				"past the batch's postings", "a wave below its limit",
				"at its limit of waves", "at its limit of postings",
				"a posting below its limit"
			};
			const uint32_t grid = gpuir_cuda_search_tile_blocks();
			const uint64_t waves = (uint64_t) b.nq * ntiles / grid;

			for (int lim = 0; lim < 7 && st == GPUIR_CUDA_OK; lim++)
			{
				bool		as_or = (lim == 0 || lim == 3 || lim == 6);

				gpuir_cuda_search_set_maxscore(GPUIR_CUDA_MAXSCORE_SHARE, 0);
				if (lim == 0)
					gpuir_cuda_search_set_bmw_batch(UINT64_MAX, UINT64_MAX);
				else if (lim == 1)
					gpuir_cuda_search_set_bmw_batch(0, UINT64_MAX);
				else if (lim == 2)
					gpuir_cuda_search_set_bmw_batch(UINT64_MAX, 1);
				else if (lim <= 4)
					gpuir_cuda_search_set_bmw_batch(lim == 3 ? waves + 1 : waves, UINT64_MAX);
				else
					gpuir_cuda_search_set_bmw_batch(UINT64_MAX, lim == 5 ? b.postings : b.postings + 1);
				st = run_stats_timed(s, sc, &b, &om, &sm, &tm);
				gpuir_cuda_search_set_bmw_batch(0, 0);
				gpuir_cuda_search_set_maxscore(GPUIR_CUDA_MAXSCORE_SHARE, GPUIR_CUDA_MAXSCORE_DENSE);
				snprintf(what, sizeof(what), "%s/%s as BMW, a batch %s (%llu waves of %u tile blocks, %llu postings): status %s (%s), %llu BMW queries of %u, output identical to OR",
						 s->spec.name, bs->name, how[lim], (unsigned long long) waves, grid,
						 (unsigned long long) b.postings,
						 gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail(),
						 (unsigned long long) sm.bmw_queries, b.nq);
				check(st == GPUIR_CUDA_OK && sm.bmw_queries == (as_or ? 0 : b.nq) &&
					  memcmp(oo.counts, om.counts, b.nq * sizeof(uint32_t)) == 0 &&
					  memcmp(oo.docids, om.docids, n * sizeof(uint32_t)) == 0 &&
					  memcmp(oo.scores, om.scores, n * sizeof(float)) == 0, what);
			}
		}
		out_free(&om);
	}
	if (st == GPUIR_CUDA_OK)
	{
		printf("cuda search: BMW vs OR, %s on %s (%u docs, %u queries): blocks decoded OR %llu, BMW %llu (%.1f%%); tiles pruned %llu of %llu; %llu queries from their essential lists; OR %.2f ms (%.0f queries/s), BMW %.2f ms (%.0f queries/s): %.2fx\n",
			   bs->name, s->spec.name, s->ndocs, b.nq,
			   (unsigned long long) so.blocks_decoded, (unsigned long long) sb.blocks_decoded,
			   so.blocks_decoded ? 100.0 * sb.blocks_decoded / so.blocks_decoded : 0.0,
			   (unsigned long long) sb.tiles_pruned, (unsigned long long) (ntiles * b.nq),
			   (unsigned long long) sb.maxscore_queries,
			   tor * 1e3, b.nq / tor, tbmw * 1e3, b.nq / tbmw, tor / tbmw);
	}
	gpuir_cuda_search_set_decode_cache(GPUIR_CUDA_DECODE_BUDGET);
	out_free(&oo);
	out_free(&ob);
	batch_free(&b);
}

/* BMW queries answered from their essential lists, over the whole run */
static uint64_t maxscore_total;

/*
 * run_debug_checked: batch b with debug statistics into *st (the caller's
 * settings in force), its status checked and, when OK, every query
 * compared with the reference under label; returns the status
 */
static gpuir_cuda_status
run_debug_checked(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const Batch *b,
				  gpuir_cuda_search_stats *st, const char *label)
{
	char		what[256];
	gpuir_cuda_status rc;
	Out			o;

	out_alloc(&o, b);
	rc = gpuir_cuda_search_batch_debug(&s->dev, sc, b->q, b->nq, b->t, b->nt, b->kmax,
									   o.docids, o.scores, o.counts, NULL, st);
	snprintf(what, sizeof(what), "%s/%s: search status %s (%s)", s->spec.name, label,
			 gpuir_cuda_status_string(rc), gpuir_cuda_last_error_detail());
	check(rc == GPUIR_CUDA_OK, what);
	if (rc == GPUIR_CUDA_OK)
		compare_batch(r, s, sc, b, &o, label);
	out_free(&o);
	return rc;
}

/*
 * A batch of BMW queries with the MaxScore kernel taking every query whose
 * seed is above 0 or that has one term (share 1, no density limit), then
 * those the defaults give it (share 1, queries with dense lists run as OR),
 * then only the queries of one term (every other query counted dense, so
 * answered as OR), then none (share 0: the tiles with block-max bounds):
 * each checked against the reference; the queries it answered are added
 * to maxscore_total (main checks that some were).  With share 1, the
 * queries of one term whose route is fixed are checked to take it: a list
 * of at most tiles x k postings fits its candidate region, so MaxScore
 * answers it; one of fewer than k blocks (seed 0: every block reaches it)
 * whose blocks' min(k, 128) keys each, bounded by its postings, exceed the
 * region goes to the tiles (gpuir_search_seed_kernel).
 */
static void
test_bmw_maxscore(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs)
{
	static const uint32_t shares[] = {1, GPUIR_CUDA_MAXSCORE_SHARE, 1, 0};
	static const uint32_t denses[] = {0, GPUIR_CUDA_MAXSCORE_DENSE, UINT32_MAX, 0};
	Batch		b;
	char		what[256];
	const uint64_t ntiles = seg_tiles(s);
	uint32_t	n1 = 0,			/* queries of one term */
				must_ms = 0,	/* of them, those MaxScore must answer with share 1 */
				must_tiles = 0;	/* those the tiles must answer */

	batch_make(&b, s, bs);
	for (uint32_t q = 0; q < b.nq; q++)
	{
		const gpuir_cuda_term *t = &b.t[b.q[q].first_term];
		const uint64_t k = b.q[q].k;
		const uint64_t tk = ntiles * k;	/* the tiles' keys at most */

		if (b.q[q].nterms != 1)
			continue;
		n1++;
		if (b.q[q].mode != GPUIR_CUDA_MODE_BMW || t->nblocks == 0 || !(t->idf >= 0.0f))
			continue;			/* no document can qualify, or it runs as OR */
		if (t->npostings <= tk)
			must_ms++;
		else if (t->nblocks < k)
		{
			/* every block counts; its keys: min(k, 128) each, its postings at most */
			const uint64_t keys = (uint64_t) t->nblocks * (k < 128 ? k : 128);

			if ((keys < t->npostings ? keys : t->npostings) > tk)
				must_tiles++;
		}
	}
	for (size_t i = 0; i < sizeof(shares) / sizeof(shares[0]); i++)
	{
		gpuir_cuda_search_stats st;
		gpuir_cuda_status rc;
		char		label[128];

		snprintf(label, sizeof(label), "%s, MaxScore share %u dense %u", bs->name, shares[i],
				 denses[i]);
		gpuir_cuda_search_set_maxscore(shares[i], denses[i]);
		rc = run_debug_checked(r, s, sc, &b, &st, label);
		gpuir_cuda_search_set_maxscore(GPUIR_CUDA_MAXSCORE_SHARE, GPUIR_CUDA_MAXSCORE_DENSE);
		if (rc == GPUIR_CUDA_OK)
		{
			snprintf(what, sizeof(what), "%s/%s: no MaxScore query with share 0 (%llu)",
					 s->spec.name, label, (unsigned long long) st.maxscore_queries);
			check(shares[i] != 0 || st.maxscore_queries == 0, what);
			snprintf(what, sizeof(what),
					 "%s/%s: only queries of one term ran as BMW (%llu, %u of one term)",
					 s->spec.name, label, (unsigned long long) st.bmw_queries, n1);
			check(denses[i] != UINT32_MAX || st.bmw_queries <= n1, what);
			snprintf(what, sizeof(what),
					 "%s/%s: queries of one term on their route (%llu from their essential lists; at least %u, at most %u)",
					 s->spec.name, label, (unsigned long long) st.maxscore_queries, must_ms,
					 b.nq - must_tiles);
			check(shares[i] != 1 ||
				  (st.maxscore_queries >= must_ms && st.maxscore_queries <= b.nq - must_tiles),
				  what);
			if (shares[i] != 0)
				maxscore_total += st.maxscore_queries;
			printf("cuda search: %s on %s: %llu of %u queries from their essential lists (one term: %u must, %u must not)\n",
				   label, s->spec.name, (unsigned long long) st.maxscore_queries, b.nq, must_ms,
				   must_tiles);
		}
	}
	batch_free(&b);
}

/* queries searched again after their short candidate region spilled, over the run */
static uint64_t spilled_total;

/*
 * A batch run with short candidate regions of one tile's k keys
 * (gpuir_cuda_search_set_short_room(1)), so that the OR queries with k >=
 * GPUIR_CUDA_HIST_MIN_K whose tiles emit more spill and are searched again
 * with their full regions, then of three tiles' keys (regions the
 * histogram's threshold keeps partly filled), then with no short region
 * (0): each checked against the reference; no query spills with 0, at
 * most those with k >= GPUIR_CUDA_HIST_MIN_K that are not AND otherwise (a
 * BMW query may run as OR), and the thread's count
 * (gpuir_cuda_search_take_searched_again, what the GPU service reports)
 * is the statistics'.  Those that spilled are added to spilled_total
 * (main checks that some did).
 */
static void
test_short_room(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs)
{
	static const uint32_t rooms[] = {1, 3, 0};
	Batch		b;
	char		what[256];
	uint32_t	eligible = 0;

	batch_make(&b, s, bs);
	for (uint32_t q = 0; q < b.nq; q++)
		eligible += (b.q[q].mode != GPUIR_CUDA_MODE_AND && b.q[q].k >= GPUIR_CUDA_HIST_MIN_K);
	for (size_t i = 0; i < sizeof(rooms) / sizeof(rooms[0]); i++)
	{
		gpuir_cuda_search_stats st;
		gpuir_cuda_status rc;
		char		label[128];

		snprintf(label, sizeof(label), "%s, short room %u", bs->name, rooms[i]);
		(void) gpuir_cuda_search_take_searched_again();
		gpuir_cuda_search_set_short_room(rooms[i]);
		rc = run_debug_checked(r, s, sc, &b, &st, label);
		gpuir_cuda_search_set_short_room(GPUIR_CUDA_SHORT_ROOM_AUTO);
		if (rc == GPUIR_CUDA_OK)
		{
			const uint64_t again = gpuir_cuda_search_take_searched_again();

			snprintf(what, sizeof(what),
					 "%s/%s: the thread's count of queries searched again (%llu) is the batch's",
					 s->spec.name, label, (unsigned long long) again);
			check(again == st.spilled_queries, what);
			snprintf(what, sizeof(what), "%s/%s: %llu queries spilled (at most %u)",
					 s->spec.name, label, (unsigned long long) st.spilled_queries,
					 rooms[i] == 0 ? 0 : eligible);
			check(st.spilled_queries <= (rooms[i] == 0 ? 0 : eligible), what);
			if (rooms[i] != 0)
				spilled_total += st.spilled_queries;
			printf("cuda search: %s on %s: %llu of %u queries spilled\n", label, s->spec.name,
				   (unsigned long long) st.spilled_queries, b.nq);
		}
	}
	batch_free(&b);
}

/*
 * BMW falls back to OR (same results, no query counted as BMW) on a segment
 * uploaded without impacts, and for queries with a negative idf.
 */
static void
test_bmw_fallback(Ref *r, TestSeg *s, const gpuir_cuda_scoring *sc)
{
	BatchSpec	bs = {"BMW fallback", sized(60, 20, 5), 1, 6, GPUIR_CUDA_MODE_BMW, 0,
	GPUIR_CUDA_MAX_K, 1, 0, 0};
	TestSeg		noimp = *s;
	Batch		b;
	Out			o;
	gpuir_cuda_search_stats st_;
	gpuir_cuda_status st;

	st = gpuir_cuda_segment_upload(s->payload, s->payload_bytes, s->block_last, s->block_offset,
								   NULL, NULL, s->nblocks_total, s->doclen, s->deleted,
								   s->prior, s->prior_max, s->ndocs, &noimp.dev);
	check(st == GPUIR_CUDA_OK, "BMW fallback: upload without impacts");
	if (st != GPUIR_CUDA_OK)
		return;
	batch_make(&b, s, &bs);
	out_alloc(&o, &b);
	st = gpuir_cuda_search_batch_debug(&noimp.dev, sc, b.q, b.nq, b.t, b.nt, b.kmax,
									   o.docids, o.scores, o.counts, NULL, &st_);
	check(st == GPUIR_CUDA_OK && st_.bmw_queries == 0,
		  "BMW fallback: no impacts runs OR");
	if (st == GPUIR_CUDA_OK)
		compare_batch(r, &noimp, sc, &b, &o, "BMW without impacts");
	out_free(&o);
	gpuir_cuda_segment_free(&noimp.dev);

	/* a negative idf in every other query's terms */
	out_alloc(&o, &b);
	for (uint32_t i = 0; i < b.nq; i += 2)
		if (b.q[i].nterms > 0)
			b.t[b.q[i].first_term].idf = -b.t[b.q[i].first_term].idf - 0.5f;
	st = gpuir_cuda_search_batch_debug(&s->dev, sc, b.q, b.nq, b.t, b.nt, b.kmax,
									   o.docids, o.scores, o.counts, NULL, &st_);
	check(st == GPUIR_CUDA_OK && st_.bmw_queries < b.nq,
		  "BMW fallback: negative idf runs OR");
	if (st == GPUIR_CUDA_OK)
		compare_batch(r, s, sc, &b, &o, "BMW negative idf");
	out_free(&o);
	batch_free(&b);
}

/* ---------- corruption and arguments ---------- */

/* search one query over term t of s; returns the status */
static gpuir_cuda_status
search_one(const TestSeg *s, const gpuir_cuda_scoring *sc, uint32_t t, int mode, uint32_t k)
{
	gpuir_cuda_term term = {s->first_block[t], s->nblocks[t], s->npostings[t], s->idf[t]};
	gpuir_cuda_query q = {0, 1, k, mode};
	uint32_t   *d = xmalloc(k * sizeof(uint32_t));
	float	   *sco = xmalloc(k * sizeof(float));
	uint32_t	cnt;
	gpuir_cuda_status st;

	st = gpuir_cuda_search_batch(&s->dev, sc, &q, 1, &term, 1, k, d, sco, &cnt, NULL);
	free(d);
	free(sco);
	return st;
}

/*
 * corrupt_with_gap: s's arrays with n zero bytes inserted before block
 * from (its offset and every later one moved by n), uploaded: the upload
 * must succeed, a query over term t must get GPUIR_CUDA_CORRUPT in every
 * mode and one over term other (unless UINT32_MAX) be answered; s's
 * arrays are then restored, its device copy freed (name: the case)
 */
static void
corrupt_with_gap(TestSeg *s, const gpuir_cuda_scoring *sc, uint32_t from, uint32_t n,
				 uint32_t t, uint32_t other, const char *name)
{
	const uint32_t cut = s->block_offset[from];
	uint8_t    *saved_payload = s->payload;
	const size_t saved_bytes = s->payload_bytes;
	uint8_t    *gapped = xmalloc(saved_bytes + n);
	char		what[160];
	gpuir_cuda_status st;

	memcpy(gapped, saved_payload, cut);
	memset(gapped + cut, 0, n);
	memcpy(gapped + cut + n, saved_payload + cut, saved_bytes - cut);
	for (uint32_t i = from; i <= s->nblocks_total; i++)
		s->block_offset[i] += n;
	s->payload = gapped;
	s->payload_bytes = saved_bytes + n;
	st = seg_upload(s);
	snprintf(what, sizeof(what), "corruption (%s): upload %s", name, gpuir_cuda_status_string(st));
	check(st == GPUIR_CUDA_OK, what);
	if (st == GPUIR_CUDA_OK)
	{
		for (int mode = 0; mode < 3; mode++)
		{
			st = search_one(s, sc, t, mode, 10);
			snprintf(what, sizeof(what), "corruption (%s), mode %d: status %s", name, mode,
					 gpuir_cuda_status_string(st));
			check(st == GPUIR_CUDA_CORRUPT, what);
		}
		if (other != UINT32_MAX)
		{
			st = search_one(s, sc, other, GPUIR_CUDA_MODE_OR, 10);
			snprintf(what, sizeof(what), "corruption (%s): another list: status %s", name,
					 gpuir_cuda_status_string(st));
			check(st == GPUIR_CUDA_OK, what);
		}
	}
	gpuir_cuda_segment_free(&s->dev);
	for (uint32_t i = from; i <= s->nblocks_total; i++)
		s->block_offset[i] -= n;
	s->payload = saved_payload;
	s->payload_bytes = saved_bytes;
	free(gapped);
}

/*
 * Corrupt a copy of the segment's arrays in several ways: each must give
 * GPUIR_CUDA_CORRUPT for a query over the damaged list, and a query over
 * another list must still be answered.
 */
static void
test_corruption(TestSeg *s, const gpuir_cuda_scoring *sc)
{
	uint32_t	t = 0;
	uint32_t	other;
	char		what[160];

	/* a list of at least 3 blocks */
	while (t < s->nterms && s->nblocks[t] < 3)
		t++;
	if (t == s->nterms)
	{
		check(0, "corruption: no list of 3 blocks");
		return;
	}
	other = (t + 1) % s->nterms;
	gpuir_cuda_segment_free(&s->dev);
	for (int c = 0; c < 5; c++)
	{
		uint32_t	b = s->first_block[t] + 1;
		uint32_t	lastb = s->first_block[t] + s->nblocks[t] - 1;
		uint8_t		saved_byte = s->payload[s->block_offset[b] + 7];
		uint32_t	saved_last = s->block_last[b];
		uint32_t	saved_lastb = s->block_last[lastb];
		uint8_t		saved_n = s->payload[s->block_offset[b]];
		const char *name;
		gpuir_cuda_status st;

		switch (c)
		{
			case 0:
				name = "reserved header byte";
				s->payload[s->block_offset[b] + 7] = 1;
				break;
			case 1:
				name = "block_last not the decoded last docID";
				s->block_last[b] = saved_last + 1 < s->block_last[b + 1] ? saved_last + 1 : saved_last - 1;
				break;
			case 2:
				name = "block_last not increasing";
				s->block_last[b] = s->block_last[b - 1];
				break;
			case 3:
				name = "block_last beyond ndocs";
				s->block_last[lastb] = s->ndocs;
				break;
			default:
				name = "block with 127 postings inside a list";
				s->payload[s->block_offset[b]] = (uint8_t) (saved_n - 1);
				break;
		}
		st = seg_upload(s);
		snprintf(what, sizeof(what), "corruption (%s): upload %s", name,
				 gpuir_cuda_status_string(st));
		check(st == GPUIR_CUDA_OK, what);
		if (st == GPUIR_CUDA_OK)
		{
			/*
			 * OR: found by the decode kernel, and with a decode budget of 0 by
			 * the tiles; BMW (mode 2) only with the list decoded once (its
			 * tiles may skip the damaged block).  A header whose length
			 * GpuirCodecBlockBytes refuses (the reserved byte) is found
			 * before them, by the upload's directory checks.
			 */
			for (int budget = 0; budget < 2; budget++)
			{
				gpuir_cuda_search_set_decode_budget(budget ? GPUIR_CUDA_DECODE_BUDGET : 0);
				for (int mode = 0; mode < (budget ? 3 : 2); mode++)
				{
					st = search_one(s, sc, t, mode, 10);
					snprintf(what, sizeof(what), "corruption (%s), mode %d, decode budget %s: status %s",
							 name, mode, budget ? "default" : "0", gpuir_cuda_status_string(st));
					check(st == GPUIR_CUDA_CORRUPT, what);
				}
			}
			st = search_one(s, sc, other, GPUIR_CUDA_MODE_OR, 10);
			snprintf(what, sizeof(what), "corruption (%s): another list: status %s", name,
					 gpuir_cuda_status_string(st));
			check(st == GPUIR_CUDA_OK, what);
		}
		gpuir_cuda_segment_free(&s->dev);
		s->payload[s->block_offset[b] + 7] = saved_byte;
		s->payload[s->block_offset[b]] = saved_n;
		s->block_last[b] = saved_last;
		s->block_last[lastb] = saved_lastb;
	}
	/* block offsets out of order: refused by the upload */
	{
		uint32_t	b = s->first_block[t] + 1;
		uint32_t	saved = s->block_offset[b];
		gpuir_cuda_status st;

		s->block_offset[b] = s->block_offset[b + 1] + 4;
		st = seg_upload(s);
		check(st == GPUIR_CUDA_CORRUPT, "corruption: decreasing block offsets refused by upload");
		check(s->dev.payload == NULL, "corruption: failed upload leaves the segment zeroed");
		s->block_offset[b] = saved;
	}

	/*
	 * A block shorter than its extent (4 bytes inserted after it): the CPU
	 * reader refuses it (GpuirListDecodeBlock: "block length differs from
	 * the block directory's"), so the upload's directory checks count it
	 * bad and a query over its list gets GPUIR_CUDA_CORRUPT in every mode
	 * (the kernels alone would decode it); another list is still answered
	 */
	corrupt_with_gap(s, sc, s->first_block[t] + 2, 4, t, other,
					 "block shorter than its extent");

	/*
	 * Every block 2 bytes past a 4-byte boundary (2 bytes before the
	 * payload's first block), each extent still its block's length: the
	 * kernels read a list's blocks in whole words
	 * (gpuir_warp_decode_listed_block), so the upload's directory checks
	 * count every such block bad and a query gets GPUIR_CUDA_CORRUPT in
	 * every mode (every list: none is answered)
	 */
	corrupt_with_gap(s, sc, 0, 2, t, UINT32_MAX, "blocks not 4-byte aligned");
	check(seg_upload(s) == GPUIR_CUDA_OK, "corruption: segment restored");
}

static void
test_arguments(TestSeg *s, const gpuir_cuda_scoring *sc)
{
	gpuir_cuda_term term = {s->first_block[0], s->nblocks[0], s->npostings[0], s->idf[0]};
	gpuir_cuda_query q = {0, 1, 10, GPUIR_CUDA_MODE_OR};
	uint32_t	d[GPUIR_CUDA_MAX_K];
	float		sco[GPUIR_CUDA_MAX_K];
	uint32_t	cnt = 7;
	gpuir_cuda_segment dev;
	gpuir_cuda_scoring bad;

#define SEARCH(seg_, sc_, q_, nq_, t_, nt_, kmax_, d_, s_, c_) \
	gpuir_cuda_search_batch(seg_, sc_, q_, nq_, t_, nt_, kmax_, d_, s_, c_, NULL)

	check(SEARCH(NULL, NULL, NULL, 0, NULL, 0, 0, NULL, NULL, NULL) == GPUIR_CUDA_OK,
		  "args: zero queries is a no-op");
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_OK && cnt <= 10,
		  "args: a valid query");
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 0, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: kmax 0");
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, GPUIR_CUDA_MAX_K + 1, d, sco, &cnt) ==
		  GPUIR_CUDA_INVALID_ARGUMENT, "args: kmax above GPUIR_CUDA_MAX_K");
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 5, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: k above kmax");
	q.k = 0;
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: k 0");
	q.k = 10;
	q.mode = 7;
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: bad mode");
	q.mode = GPUIR_CUDA_MODE_AND;
	q.nterms = 2;
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: query terms past the term array");
	q.nterms = 1;
	check(SEARCH(&s->dev, sc, &q, 1, NULL, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: NULL terms");
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 10, d, sco, NULL) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: NULL out_counts");
	check(SEARCH(NULL, sc, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: NULL segment");
	term.first_block = s->nblocks_total - term.nblocks + 1;
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: list past the segment's blocks");
	term.first_block = s->first_block[0];
	term.npostings = term.nblocks * GPUIR_BLOCK_SIZE + 1;
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: npostings beyond nblocks");
	term.npostings = 0;
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: blocks without postings");
	term.npostings = s->npostings[0];
	term.idf = NAN;
	check(SEARCH(&s->dev, sc, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: NaN idf");
	term.idf = s->idf[0];
	bad = *sc;
	bad.avgdl = 0.0f;
	check(SEARCH(&s->dev, &bad, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: avgdl 0");
	bad = *sc;
	bad.b = 1.5f;
	check(SEARCH(&s->dev, &bad, &q, 1, &term, 1, 10, d, sco, &cnt) == GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: b above 1");
	/* absent term: AND gives nothing, OR of absent terms gives nothing */
	{
		gpuir_cuda_term two[2] = {term, {0, 0, 0, 2.0f}};
		gpuir_cuda_query qq[2] = {{0, 2, 10, GPUIR_CUDA_MODE_AND}, {1, 1, 10, GPUIR_CUDA_MODE_OR}};
		uint32_t	c2[2] = {9, 9};

		check(SEARCH(&s->dev, sc, qq, 2, two, 2, 10, d, sco, c2) == GPUIR_CUDA_OK &&
			  c2[0] == 0 && c2[1] == 0, "args: absent terms give no results");
	}
	/*
	 * rows are kmax wide, zeros past each count, whether the plan left the
	 * query out (no document can qualify) or a selection wrote its row:
	 * the outputs come from a pinned buffer that earlier batches used, the
	 * caller's arrays hold other bytes before
	 */
	{
		gpuir_cuda_term two[2] = {term, {0, 0, 0, 2.0f}};
		gpuir_cuda_query qq[3] = {{0, 1, 3, GPUIR_CUDA_MODE_OR}, {0, 2, 10, GPUIR_CUDA_MODE_AND},
								  {1, 1, 10, GPUIR_CUDA_MODE_OR}};
		uint32_t	c3[3] = {9, 9, 9};
		bool		zeros = true;

		memset(d, 0xab, sizeof(uint32_t) * 30);
		memset(sco, 0xab, sizeof(float) * 30);
		check(SEARCH(&s->dev, sc, qq, 3, two, 2, 10, d, sco, c3) == GPUIR_CUDA_OK &&
			  c3[0] <= 3 && c3[1] == 0 && c3[2] == 0,
			  "args: a batch with queries left out");
		for (uint32_t q3 = 0; q3 < 3; q3++)
			for (uint32_t i = (q3 == 0 ? c3[0] : 0); i < 10; i++)
				zeros = zeros && d[q3 * 10 + i] == 0 && sco[q3 * 10 + i] == 0.0f;
		check(zeros, "args: slots past each count are 0");
	}
#undef SEARCH

	/* upload / free */
	check(gpuir_cuda_segment_upload(s->payload, s->payload_bytes, s->block_last, s->block_offset,
									s->impact_tf, s->impact_dl, s->nblocks_total, s->doclen,
									s->deleted, NULL, 0.0f, s->ndocs, NULL) ==
		  GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: upload to NULL");
	check(gpuir_cuda_segment_upload(s->payload, s->payload_bytes, s->block_last, s->block_offset,
									s->impact_tf, NULL, s->nblocks_total, s->doclen,
									s->deleted, NULL, 0.0f, s->ndocs, &dev) ==
		  GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: one impact array");
	check(gpuir_cuda_segment_upload(s->payload, s->payload_bytes, s->block_last, s->block_offset,
									NULL, NULL, s->nblocks_total, NULL,
									s->deleted, NULL, 0.0f, s->ndocs, &dev) ==
		  GPUIR_CUDA_INVALID_ARGUMENT,
		  "args: no doclen");
	check(gpuir_cuda_segment_free(NULL) == GPUIR_CUDA_OK, "args: free NULL");
	check(gpuir_cuda_segment_upload(s->payload, s->payload_bytes, s->block_last, s->block_offset,
									NULL, NULL, s->nblocks_total, s->doclen,
									NULL, NULL, 0.0f, s->ndocs, &dev) == GPUIR_CUDA_OK &&
		  dev.impact_tf == NULL && dev.deleted == NULL,
		  "args: upload without impacts and deletions");
	check(gpuir_cuda_segment_free(&dev) == GPUIR_CUDA_OK && dev.payload == NULL &&
		  gpuir_cuda_segment_free(&dev) == GPUIR_CUDA_OK, "args: free twice");
	/* priors: each must lie in 0 .. prior_max, the weight be finite and >= 0 */
	{
		float	   *pr = xmalloc((size_t) s->ndocs * sizeof(float));
		gpuir_cuda_scoring badw = *sc;
		static const float bad_prior[] = {-1.0f, NAN, 2.5f};

		for (uint32_t i = 0; i < s->ndocs; i++)
			pr[i] = (i % 3 == 0) ? 0.0f : 2.0f;
#define UPLOAD_PRIORS(pmax) \
		gpuir_cuda_segment_upload(s->payload, s->payload_bytes, s->block_last, s->block_offset, \
								  s->impact_tf, s->impact_dl, s->nblocks_total, s->doclen, \
								  s->deleted, pr, (pmax), s->ndocs, &dev)
		check(UPLOAD_PRIORS(2.0f) == GPUIR_CUDA_OK && dev.prior != NULL && dev.prior_max == 2.0f,
			  "args: upload with priors");
		badw.prior_weight = -0.5f;
		check(gpuir_cuda_search_batch(&dev, &badw, &q, 1, &term, 1, 10, d, sco, &cnt, NULL) ==
			  GPUIR_CUDA_INVALID_ARGUMENT, "args: negative prior weight");
		badw.prior_weight = INFINITY;
		check(gpuir_cuda_search_batch(&dev, &badw, &q, 1, &term, 1, 10, d, sco, &cnt, NULL) ==
			  GPUIR_CUDA_INVALID_ARGUMENT, "args: infinite prior weight");
		gpuir_cuda_segment_free(&dev);
		check(UPLOAD_PRIORS(1.0f) == GPUIR_CUDA_CORRUPT && dev.prior == NULL,
			  "args: a prior above prior_max");
		check(UPLOAD_PRIORS(-1.0f) == GPUIR_CUDA_CORRUPT, "args: negative prior_max");
		check(UPLOAD_PRIORS(NAN) == GPUIR_CUDA_CORRUPT, "args: NaN prior_max");
		for (size_t i = 0; i < sizeof(bad_prior) / sizeof(bad_prior[0]); i++)
		{
			pr[s->ndocs - 1] = bad_prior[i];
			check(UPLOAD_PRIORS(2.0f) == GPUIR_CUDA_CORRUPT, "args: a negative, NaN or too large prior");
		}
#undef UPLOAD_PRIORS
		free(pr);
	}
	/* an empty segment */
	{
		uint32_t	off0 = 0;
		gpuir_cuda_term none = {0, 0, 0, 1.0f};
		gpuir_cuda_query qe = {0, 1, 10, GPUIR_CUDA_MODE_OR};

		check(gpuir_cuda_segment_upload(NULL, 0, NULL, &off0, NULL, NULL, 0, NULL, NULL, NULL,
										0.0f, 0, &dev) == GPUIR_CUDA_OK,
			  "args: upload an empty segment");
		cnt = 9;
		check(gpuir_cuda_search_batch(&dev, sc, &qe, 1, &none, 1, 10, d, sco, &cnt, NULL) ==
			  GPUIR_CUDA_OK && cnt == 0, "args: search an empty segment");
		gpuir_cuda_segment_free(&dev);
	}
}

/*
 * test_windows: a batch searched whole and in nparts docID windows
 * (gpuir_cuda_segment_window), the windows' top-k merged
 * (gpuir_cuda_topk_merge): identical counts, docIDs and score bits, every
 * window's results inside its docIDs, and as many parts as tiles and more
 * (empty windows) too; with 3 and 64 parts the windows are searched with
 * short candidate rooms of one tile's keys (queries with k >= 100 spill
 * and are searched again).
 */
static void
test_windows(const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs)
{
	static const uint32_t parts[] = {2, 3, 7, 64};
	Batch		b;
	Out			whole;
	gpuir_cuda_status st;
	char		what[256];

	batch_make(&b, s, bs);
	out_alloc(&whole, &b);
	st = run_gpu(s, sc, &b, &whole);
	snprintf(what, sizeof(what), "%s/windows: whole search %s", s->spec.name,
			 gpuir_cuda_status_string(st));
	check(st == GPUIR_CUDA_OK, what);
	for (size_t pi = 0; pi < sizeof(parts) / sizeof(parts[0]) && st == GPUIR_CUDA_OK; pi++)
	{
		uint32_t	np = parts[pi];
		Out		   *po = xmalloc(np * sizeof(Out));
		gpuir_cuda_segment *win = xmalloc(np * sizeof(gpuir_cuda_segment));
		uint32_t   *md = xmalloc((size_t) b.kmax * sizeof(uint32_t));
		float	   *ms = xmalloc((size_t) b.kmax * sizeof(float));
		const uint32_t **pd = xmalloc(np * sizeof(uint32_t *));
		const float **ps = xmalloc(np * sizeof(float *));
		uint32_t   *pc = xmalloc(np * sizeof(uint32_t));
		int			ok = 1;
		int			inside = 1;
		const bool	short_rooms = (pi % 2 == 1);

		gpuir_cuda_search_set_short_room(short_rooms ? 1 : GPUIR_CUDA_SHORT_ROOM_AUTO);
		for (uint32_t p = 0; p < np && ok; p++)
		{
			Out			o;

			ok = gpuir_cuda_segment_window(&s->dev, p, np, &win[p]) == GPUIR_CUDA_OK;
			out_alloc(&o, &b);
			po[p] = o;
			if (ok)
				ok = gpuir_cuda_search_batch(&win[p], sc, b.q, b.nq, b.t, b.nt, b.kmax,
											 o.docids, o.scores, o.counts, NULL) == GPUIR_CUDA_OK;
			for (uint32_t q = 0; ok && q < b.nq; q++)
				for (uint32_t i = 0; i < o.counts[q]; i++)
				{
					uint32_t	d = o.docids[(size_t) q * b.kmax + i];

					if (d < win[p].tile_first * GPUIR_CUDA_TILE_DOCS ||
						d >= win[p].tile_end * GPUIR_CUDA_TILE_DOCS)
						inside = 0;
				}
		}
		for (uint32_t q = 0; ok && q < b.nq; q++)
		{
			uint32_t	k = b.q[q].k;
			uint32_t	n = 0;

			for (uint32_t p = 0; p < np; p++)
			{
				pd[p] = po[p].docids + (size_t) q * b.kmax;
				ps[p] = po[p].scores + (size_t) q * b.kmax;
				pc[p] = po[p].counts[q];
			}
			ok = gpuir_cuda_topk_merge(np, pd, ps, pc, k, md, ms, &n) == GPUIR_CUDA_OK &&
				n == whole.counts[q] &&
				memcmp(md, whole.docids + (size_t) q * b.kmax, k * sizeof(uint32_t)) == 0 &&
				memcmp(ms, whole.scores + (size_t) q * b.kmax, k * sizeof(float)) == 0;
		}
		gpuir_cuda_search_set_short_room(GPUIR_CUDA_SHORT_ROOM_AUTO);
		snprintf(what, sizeof(what), "%s/windows: %u parts%s, merged = whole (%u queries)",
				 s->spec.name, np, short_rooms ? " (short rooms)" : "", b.nq);
		check(ok, what);
		snprintf(what, sizeof(what), "%s/windows: %u parts, results inside their windows",
				 s->spec.name, np);
		check(inside, what);
		for (uint32_t p = 0; p < np; p++)
			out_free(&po[p]);
		free(po);
		free(win);
		free(md);
		free(ms);
		free(pd);
		free(ps);
		free(pc);
	}
	out_free(&whole);
	batch_free(&b);
}

/* ---------- main ---------- */

/*
 * Small calls: the first queries of batch bs sent one at a time, then three
 * at a time, each call checked against the reference.  A call of at most
 * four queries with work launches its kernels after the first as
 * programmatic dependent launches (gpuir_search.cu, SearchLauncher), each
 * waiting in gpuir_pdl_start for the one before; the batches of the other
 * tests are larger, so this is where that path meets the reference for
 * every mode (racecheck cannot see a missing wait between kernels).
 */
static void
test_small_calls(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs)
{
	static const uint32_t per_call[] = {1, 3};
	Batch		b;
	gpuir_cuda_search_stats st;
	char		label[128];

	batch_make(&b, s, bs);
	for (size_t c = 0; c < sizeof(per_call) / sizeof(per_call[0]); c++)
	{
		const uint32_t n = b.nq < sized(24, 12, 4) ? b.nq : sized(24, 12, 4);

		for (uint32_t i = 0; i < n; i += per_call[c])
		{
			Batch		part = b;	/* the same terms; queries [i, i + per_call) */

			part.q = b.q + i;
			part.nq = (n - i < per_call[c]) ? n - i : per_call[c];
			snprintf(label, sizeof(label), "%s, %u a call, from query %u", bs->name,
					 per_call[c], i);
			run_debug_checked(r, s, sc, &part, &st, label);
		}
	}
	batch_free(&b);
}

/*
 * check_fused: the batch of bs, with debug statistics (run_debug_checked:
 * its status and its results against the reference), and whether the tile
 * kernel made final selections (fused: some; else none), so that the other
 * checks of test_fused_selections cannot pass on the final kernel alone
 */
static void
check_fused(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs,
			bool fused)
{
	Batch		b;
	gpuir_cuda_search_stats st;
	char		what[256];

	batch_make(&b, s, bs);
	if (run_debug_checked(r, s, sc, &b, &st, bs->name) == GPUIR_CUDA_OK)
	{
		snprintf(what, sizeof(what), "%s/%s: %llu of %u queries selected in the tile kernel",
				 s->spec.name, bs->name, (unsigned long long) st.fused_queries, b.nq);
		check(fused ? st.fused_queries > 0 : st.fused_queries == 0, what);
	}
	batch_free(&b);
}

/*
 * The tile kernel's final selections (gpuir_cuda_search_set_fused_waves):
 * batches that may have them (or: OR queries, bmw: BMW queries run as OR
 * by a batch rule that always cuts; kmax <= 256, no partial selection on
 * these segments) with the selections there whatever their waves, then
 * never there, in one call (test_batch: without statistics, the path
 * production runs) and in small calls, and with short rooms of one tile
 * (most k = 100 queries spill and are searched again), each checked
 * against the reference; with statistics, that selections were made
 * there, or none (check_fused); last, BMW queries under BMW's rules (no
 * batch rule, decode budget 0) with their selections in the tile kernel.
 * Restores the fused-waves default, the decode budget and
 * main's BMW batch rule (0, 0: off).
 */
static void
test_fused_selections(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc,
					  const BatchSpec *or, const BatchSpec *bmw)
{
	static const uint32_t waves[] = {UINT32_MAX, 0};
	const BatchSpec *specs[] = {or, bmw};
	char		name[128];

	gpuir_cuda_search_set_bmw_batch(UINT64_MAX, UINT64_MAX);	/* BMW as OR */
	for (size_t w = 0; w < sizeof(waves) / sizeof(waves[0]); w++)
		for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++)
		{
			BatchSpec	b = *specs[i];

			snprintf(name, sizeof(name), "%s, selections %s the tile kernel", specs[i]->name,
					 waves[w] ? "in" : "not in");
			b.name = name;
			gpuir_cuda_search_set_fused_waves(waves[w]);
			test_batch(r, s, sc, &b, 0);
			test_small_calls(r, s, sc, &b);
			check_fused(r, s, sc, &b, waves[w] != 0);
		}
	{
		BatchSpec	b = *or;

		snprintf(name, sizeof(name), "%s, selections in the tile kernel, short room 1", or->name);
		b.name = name;
		gpuir_cuda_search_set_fused_waves(UINT32_MAX);
		gpuir_cuda_search_set_short_room(1);
		test_batch(r, s, sc, &b, 0);
		check_fused(r, s, sc, &b, true);
		gpuir_cuda_search_set_short_room(GPUIR_CUDA_SHORT_ROOM_AUTO);
	}
	{
		BatchSpec	b = *bmw;

		/*
		 * BMW queries under their own rules (no batch rule, no lists decoded
		 * once: the tile items' block-max bounds tested against the running
		 * thresholds) with the selections in the tile kernel, which the rule
		 * allows.  These segments' bounds are flat and prune few tiles or
		 * none (seen: 0 on every segment, H200), so this covers the
		 * thresholds' path beside the selections, not pruned tiles
		 */
		snprintf(name, sizeof(name), "%s, BMW rules, selections in the tile kernel", bmw->name);
		b.name = name;
		gpuir_cuda_search_set_bmw_batch(0, 0);
		gpuir_cuda_search_set_decode_budget(0);
		gpuir_cuda_search_set_fused_waves(UINT32_MAX);
		test_batch(r, s, sc, &b, 0);
		check_fused(r, s, sc, &b, true);
		gpuir_cuda_search_set_decode_budget(GPUIR_CUDA_DECODE_BUDGET);
	}
	gpuir_cuda_search_set_fused_waves(GPUIR_CUDA_FUSED_WAVES);
	gpuir_cuda_search_set_bmw_batch(0, 0);
}

/*
 * Searches in flight (gpuir_cuda_search_start / _done / _finish): batch a
 * started on one job and batch b on another, both pending at once (the
 * kernels of both on the device together), finished in the other order;
 * a second start on a job with a search pending is refused; a job is
 * reused after its finish (with short candidate rooms, so that queries
 * spill and its finish searches them again), and a start of no query
 * leaves nothing pending.
 * Every result against the CPU reference.
 */
static void
test_jobs_in_flight(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc,
					const BatchSpec *a_spec, const BatchSpec *b_spec)
{
	gpuir_cuda_search_job *job[2] = {NULL, NULL};
	Batch		a,
				b;
	Out			oa,
				ob;
	char		what[256];
	gpuir_cuda_status st;

	check(gpuir_cuda_search_job_create(&job[0]) == GPUIR_CUDA_OK &&
		  gpuir_cuda_search_job_create(&job[1]) == GPUIR_CUDA_OK, "jobs: create two");
	if (job[0] == NULL || job[1] == NULL)
	{
		gpuir_cuda_search_job_free(job[0]);
		gpuir_cuda_search_job_free(job[1]);
		return;
	}
	batch_make(&a, s, a_spec);
	batch_make(&b, s, b_spec);
	out_alloc(&oa, &a);
	out_alloc(&ob, &b);

	st = gpuir_cuda_search_start(job[0], &s->dev, sc, a.q, a.nq, a.t, a.nt, a.kmax);
	snprintf(what, sizeof(what), "%s/jobs: start a (%s)", s->spec.name, gpuir_cuda_status_string(st));
	check(st == GPUIR_CUDA_OK, what);
	st = gpuir_cuda_search_start(job[1], &s->dev, sc, b.q, b.nq, b.t, b.nt, b.kmax);
	snprintf(what, sizeof(what), "%s/jobs: start b while a is pending (%s)", s->spec.name,
			 gpuir_cuda_status_string(st));
	check(st == GPUIR_CUDA_OK, what);
	check(gpuir_cuda_search_start(job[0], &s->dev, sc, a.q, a.nq, a.t, a.nt, a.kmax) ==
		  GPUIR_CUDA_INVALID_ARGUMENT, "jobs: a second start on a pending job is refused");

	st = gpuir_cuda_search_finish(job[1], ob.docids, ob.scores, ob.counts);
	snprintf(what, sizeof(what), "%s/jobs: finish b (%s)", s->spec.name, gpuir_cuda_status_string(st));
	check(st == GPUIR_CUDA_OK, what);
	if (st == GPUIR_CUDA_OK)
		compare_batch(r, s, sc, &b, &ob, "jobs: b, finished first");
	st = gpuir_cuda_search_finish(job[0], oa.docids, oa.scores, oa.counts);
	snprintf(what, sizeof(what), "%s/jobs: finish a (%s)", s->spec.name, gpuir_cuda_status_string(st));
	check(st == GPUIR_CUDA_OK, what);
	if (st == GPUIR_CUDA_OK)
		compare_batch(r, s, sc, &a, &oa, "jobs: a, finished second");
	check(gpuir_cuda_search_done(job[0]) && gpuir_cuda_search_done(job[1]),
		  "jobs: nothing pending after the finishes");

	/*
	 * job 1 again, now with batch a and short candidate rooms of one tile's
	 * keys, so that its queries with k >= 100 whose tiles emit more spill and
	 * are searched again inside the finish; then a start of no query
	 */
	out_free(&oa);
	out_alloc(&oa, &a);
	gpuir_cuda_search_set_short_room(1);
	st = gpuir_cuda_search_start(job[1], &s->dev, sc, a.q, a.nq, a.t, a.nt, a.kmax);
	if (st == GPUIR_CUDA_OK)
		st = gpuir_cuda_search_finish(job[1], oa.docids, oa.scores, oa.counts);
	gpuir_cuda_search_set_short_room(GPUIR_CUDA_SHORT_ROOM_AUTO);
	snprintf(what, sizeof(what), "%s/jobs: a on the reused job, short rooms (%s)", s->spec.name,
			 gpuir_cuda_status_string(st));
	check(st == GPUIR_CUDA_OK, what);
	if (st == GPUIR_CUDA_OK)
		compare_batch(r, s, sc, &a, &oa, "jobs: a on the reused job, short rooms");
	check(gpuir_cuda_search_start(job[0], &s->dev, sc, a.q, 0, a.t, a.nt, a.kmax) == GPUIR_CUDA_OK &&
		  gpuir_cuda_search_done(job[0]) &&
		  gpuir_cuda_search_finish(job[0], oa.docids, oa.scores, oa.counts) == GPUIR_CUDA_OK,
		  "jobs: a start of no query leaves nothing pending");

	out_free(&oa);
	out_free(&ob);
	batch_free(&a);
	batch_free(&b);
	gpuir_cuda_search_job_free(job[0]);
	gpuir_cuda_search_job_free(job[1]);
}

/*
 * The lists of OR and BMW queries past the decode budget are decoded by
 * the tiles that read them: with a budget of 0 (every list), 3 and 40
 * blocks (some lists each way) the batches must still equal the CPU
 * reference.
 */
static void
test_decode_budget(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc,
				   const BatchSpec *mixed, const BatchSpec *bmw)
{
	const uint32_t budgets[] = {0, 3, 40};

	for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++)
	{
		BatchSpec	m = *mixed,
					w = *bmw;
		char		nm[96],
					nw[96];

		snprintf(nm, sizeof(nm), "%s, decode budget %u", mixed->name, budgets[i]);
		snprintf(nw, sizeof(nw), "%s, decode budget %u", bmw->name, budgets[i]);
		m.name = nm;
		w.name = nw;
		gpuir_cuda_search_set_decode_budget(budgets[i]);
		test_batch(r, s, sc, &m, 0);
		test_batch(r, s, sc, &w, 0);
	}
	gpuir_cuda_search_set_decode_budget(GPUIR_CUDA_DECODE_BUDGET);
}

/*
 * run_cached: batch b through run_debug_checked under label (every query
 * against the reference), then checks that it decoded some blocks and
 * lists (fresh) or none (every list found decoded by an earlier search of
 * the thread's job: cuda/gpuir_decode_cache.cuh), as its statistics and
 * gpuir_cuda_search_take_decode_counts say
 */
static void
run_cached(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const Batch *b,
		   int fresh, const char *label)
{
	gpuir_cuda_search_stats st;
	char		what[256];
	uint64_t	found,
				decoded;

	gpuir_cuda_search_take_decode_counts(&found, &decoded);	/* from 0 */
	if (run_debug_checked(r, s, sc, b, &st, label) != GPUIR_CUDA_OK)
		return;
	snprintf(what, sizeof(what), "%s/%s: %llu blocks decoded, expected %s", s->spec.name, label,
			 (unsigned long long) st.blocks_decoded, fresh ? "some" : "none");
	check(fresh ? st.blocks_decoded > 0 : st.blocks_decoded == 0, what);
	gpuir_cuda_search_take_decode_counts(&found, &decoded);
	snprintf(what, sizeof(what), "%s/%s: lists found decoded %llu, decoded %llu", s->spec.name,
			 label, (unsigned long long) found, (unsigned long long) decoded);
	check(fresh ? decoded > 0 : (decoded == 0 && found > 0), what);
}

/*
 * batch_of_short_lists: into *b, up to 4 OR queries (k 10) of one term
 * each, the terms from *next on whose lists hold 1 to 6 blocks, at most
 * max_blocks in all; *next moves past the terms looked at.  Returns
 * whether it made a query.
 */
static int
batch_of_short_lists(Batch *b, const TestSeg *s, uint32_t *next, uint32_t max_blocks)
{
	uint32_t	blocks = 0;

	memset(b, 0, sizeof(*b));
	b->kmax = 10;
	b->q = xmalloc(4 * sizeof(gpuir_cuda_query));
	while (b->nq < 4 && *next < s->nterms)
	{
		const uint32_t t = (*next)++;
		gpuir_cuda_query *q;

		if (s->nblocks[t] == 0 || s->nblocks[t] > 6 || blocks + s->nblocks[t] > max_blocks)
			continue;
		q = &b->q[b->nq++];
		q->first_term = b->nt;
		q->nterms = 1;
		q->k = 10;
		q->mode = GPUIR_CUDA_MODE_OR;
		batch_add_term(b, s, (int32_t) t);
		b->postings += s->npostings[t];
		blocks += s->nblocks[t];
	}
	if (b->nq == 0)
		batch_free(b);
	return b->nq > 0;
}

/*
 * The decoded lists a job keeps between its searches
 * (cuda/gpuir_decode_cache.cuh), from a released workspace: an OR batch
 * decodes its lists, and run again decodes none; with every idf scaled,
 * with k1 changed, or after the segment is uploaded again (same arrays, a
 * new upload), they are decoded again; the same batch as BMW decodes them
 * again (its bounds and seeds were not computed), then none; with a decode
 * budget and a reuse capacity of 40 blocks (an area of 40), three batches
 * of short lists, one after another, twice round, evict each other's
 * lists, each run again finding all of its own; with reuse off, a search
 * decodes its lists every time.  Every result against the CPU reference
 * (under the scaled idfs and changed k1 where those are used).
 */
static void
test_decode_cache(Ref *r, TestSeg *s, const gpuir_cuda_scoring *sc)
{
	const BatchSpec or_spec = {"decode cache, OR", sized(60, 20, 8), 1, 6, GPUIR_CUDA_MODE_OR, 0,
	GPUIR_CUDA_MAX_K, 0, 0, 0};
	gpuir_cuda_scoring sc2 = *sc;
	Batch		b,
				small[3];
	gpuir_cuda_status st;

	gpuir_cuda_workspace_release();
	batch_make(&b, s, &or_spec);
	if (b.postings == 0)
	{
		batch_free(&b);
		return;					/* no list to decode */
	}
	run_cached(r, s, sc, &b, 1, "decode cache: first search");
	run_cached(r, s, sc, &b, 0, "decode cache: same batch again");
	for (uint32_t i = 0; i < b.nt; i++)
		b.t[i].idf *= 1.25f;
	run_cached(r, s, sc, &b, 1, "decode cache: every idf scaled");
	run_cached(r, s, sc, &b, 0, "decode cache: scaled again");
	sc2.k1 = sc->k1 + 0.25f;
	run_cached(r, s, &sc2, &b, 1, "decode cache: k1 changed");
	run_cached(r, s, &sc2, &b, 0, "decode cache: k1 changed, again");
	gpuir_cuda_segment_free(&s->dev);
	st = seg_upload(s);
	check(st == GPUIR_CUDA_OK, "decode cache: segment uploaded again");
	if (st != GPUIR_CUDA_OK)
	{
		batch_free(&b);
		return;
	}
	run_cached(r, s, sc, &b, 1, "decode cache: segment uploaded again");
	for (uint32_t i = 0; i < b.nq; i++)
		b.q[i].mode = GPUIR_CUDA_MODE_BMW;
	if (s->impact_tf != NULL)
	{
		/* every BMW query keeps the tiles' or MaxScore's path: no dense rule */
		gpuir_cuda_search_set_maxscore(GPUIR_CUDA_MAXSCORE_SHARE, 0);
		run_cached(r, s, sc, &b, 1, "decode cache: as BMW");
		run_cached(r, s, sc, &b, 0, "decode cache: as BMW again");
		gpuir_cuda_search_set_maxscore(GPUIR_CUDA_MAXSCORE_SHARE, GPUIR_CUDA_MAXSCORE_DENSE);
	}
	for (uint32_t i = 0; i < b.nq; i++)
		b.q[i].mode = GPUIR_CUDA_MODE_OR;
	gpuir_cuda_search_set_decode_cache(0);
	run_cached(r, s, sc, &b, 1, "decode cache off");
	run_cached(r, s, sc, &b, 1, "decode cache off, again");
	gpuir_cuda_search_set_decode_cache(GPUIR_CUDA_DECODE_BUDGET);

	/*
	 * an area of 40 blocks and three batches of other short lists, 26
	 * blocks at most each: each batch run twice (the second finds every
	 * list), one after another, twice round, so that each evicts lists of
	 * the one before (the ring goes past the lists found, once)
	 */
	gpuir_cuda_workspace_release();
	gpuir_cuda_search_set_decode_budget(40);
	gpuir_cuda_search_set_decode_cache(40);
	{
		uint32_t	next = 0;
		int			nsmall = 0;

		while (nsmall < 3 && batch_of_short_lists(&small[nsmall], s, &next, 26))
			nsmall++;
		for (int round = 0; round < 2; round++)
			for (int i = 0; i < nsmall; i++)
			{
				gpuir_cuda_search_stats st_;
				char		label[96];

				snprintf(label, sizeof(label), "decode cache of 40 blocks, round %d, batch %d",
						 round, i);
				if (round == 0)
					run_cached(r, s, sc, &small[i], 1, label);
				else
					run_debug_checked(r, s, sc, &small[i], &st_, label);
				snprintf(label, sizeof(label), "decode cache of 40 blocks, round %d, batch %d again",
						 round, i);
				run_cached(r, s, sc, &small[i], 0, label);
			}
		for (int i = 0; i < nsmall; i++)
			batch_free(&small[i]);
	}
	gpuir_cuda_search_set_decode_budget(GPUIR_CUDA_DECODE_BUDGET);
	gpuir_cuda_search_set_decode_cache(GPUIR_CUDA_DECODE_BUDGET);
	gpuir_cuda_workspace_release();
	batch_free(&b);
}

/* timing: 1 BMW against OR, 2 also the plain throughput batches */
/*
 * test_transit: the batch searched from its lists (gpuir_cuda.h, "lists in
 * transit"), as the GPU service searches a segment larger than its budget:
 * the segment's document arrays resident alone (no blocks), the batch's
 * distinct lists written as list images into the transit's staging buffer
 * in descending order of first block (so the assembled segment's order is
 * not the segment's), every other one also kept in an allocation of its own
 * (gpuir_cuda_list_keep) and taken from there, the terms renumbered to the
 * assembled blocks; the results must equal the reference's.  Three
 * times, in assembly slots 0, 1, 0, so that the third assembly reuses (and
 * grows) the first one's buffers; the second uploads the images from
 * memory of the caller's, page-locked with gpuir_cuda_host_register (as
 * the GPU service's list readers' staging), and is followed by a search of
 * the first round's segment in slot 0 again, which the second's upload,
 * keeps, frees and assembly must have left intact.  Returns the most lists
 * a round assembled.
 */
static uint32_t
test_transit(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs)
{
	uint32_t	most = 0;
	gpuir_cuda_transit *tr = NULL;
	gpuir_cuda_segment skel;
	gpuir_cuda_segment seg0;	/* round 0's assembly (slot 0) */
	Batch		b0;				/* and its batch, until round 1 has assembled */
	int			have0 = 0;
	gpuir_cuda_status st;
	char		what[256];

	st = gpuir_cuda_transit_create(&tr);
	check(st == GPUIR_CUDA_OK, "transit: create");
	if (st != GPUIR_CUDA_OK)
		return 0;
	st = gpuir_cuda_segment_upload(NULL, 0, NULL, NULL, NULL, NULL, 0, s->doclen, s->deleted,
								   s->prior, s->prior_max, s->ndocs, &skel);
	check(st == GPUIR_CUDA_OK, "transit: the document arrays alone");
	for (int round = 0; round < 3 && st == GPUIR_CUDA_OK; round++)
	{
		Batch		b;
		Out			o;
		int32_t    *terms = xmalloc(s->nterms * sizeof(int32_t));	/* segment term -> list */
		uint32_t   *order = xmalloc(s->nterms * sizeof(uint32_t));
		gpuir_cuda_list *lists = xmalloc(s->nterms * sizeof(gpuir_cuda_list));
		gpuir_cuda_list *kept = xmalloc(s->nterms * sizeof(gpuir_cuda_list));
		uint32_t   *first = xmalloc(s->nterms * sizeof(uint32_t));
		uint64_t	stage = 0;
		uint32_t	nl = 0;
		char	   *host = NULL;
		const uint32_t *dev = NULL;
		char	   *ext = NULL;
		gpuir_cuda_segment seg;

		batch_make(&b, s, bs);
		for (uint32_t t = 0; t < s->nterms; t++)
			terms[t] = -1;
		/* distinct lists, highest first block first */
		for (uint32_t t = s->nterms; t-- > 0;)
			for (uint32_t i = 0; i < b.nt; i++)
				if (b.src[i] == (int32_t) t && s->nblocks[t] > 0 && terms[t] < 0)
				{
					terms[t] = (int32_t) nl;
					order[nl++] = t;
				}
		for (uint32_t l = 0; l < nl; l++)
		{
			const uint32_t t = order[l];
			const uint32_t f = s->first_block[t];
			const uint32_t n = s->nblocks[t];

			lists[l].nblocks = n;
			lists[l].payload_bytes = s->block_offset[f + n] - s->block_offset[f];
			first[l] = (uint32_t) stage;
			stage += gpuir_cuda_list_image_bytes(n, lists[l].payload_bytes);
		}
		st = gpuir_cuda_transit_staging(tr, stage, (void **) &host);
		check(st == GPUIR_CUDA_OK, "transit: staging");
		if (st != GPUIR_CUDA_OK)
			break;
		for (uint32_t l = 0; l < nl; l++)
		{
			const uint32_t t = order[l];
			const uint32_t f = s->first_block[t];
			const uint32_t n = s->nblocks[t];
			uint32_t   *img = (uint32_t *) (host + first[l]);

			for (uint32_t i = 0; i < n; i++)
			{
				img[i] = s->block_last[f + i];
				img[gpuir_cuda_list_image_offsets(n) + i] = s->block_offset[f + i] - s->block_offset[f];
				for (int j = 0; j < GPUIR_CUDA_BLOCK_IMPACTS; j++)
				{
					img[gpuir_cuda_list_image_tf(n) + (size_t) i * GPUIR_CUDA_BLOCK_IMPACTS + j] =
						s->impact_tf[(size_t) (f + i) * GPUIR_CUDA_BLOCK_IMPACTS + j];
					img[gpuir_cuda_list_image_dl(n) + (size_t) i * GPUIR_CUDA_BLOCK_IMPACTS + j] =
						s->impact_dl[(size_t) (f + i) * GPUIR_CUDA_BLOCK_IMPACTS + j];
				}
			}
			img[gpuir_cuda_list_image_offsets(n) + n] = lists[l].payload_bytes;
			memcpy(img + gpuir_cuda_list_image_payload(n), s->payload + s->block_offset[f],
				   lists[l].payload_bytes);
		}
		if (round != 1)
			st = gpuir_cuda_transit_upload(tr, NULL, stage, &dev);
		else
		{
			/* the second round from the caller's memory, page-locked as the workers' list readers' */
			const size_t extsz = (stage / 4096 + 1) * 4096;

			if (posix_memalign((void **) &ext, 4096, extsz) != 0)
			{
				fprintf(stderr, "out of memory\n");
				exit(2);
			}
			memcpy(ext, host, stage);
			st = gpuir_cuda_host_register(ext, extsz);
			check(st == GPUIR_CUDA_OK, "transit: register the caller's host memory");
			memset(host, 0xa5, stage);	/* not read any more */
			if (st == GPUIR_CUDA_OK)
				st = gpuir_cuda_transit_upload(tr, ext, stage, &dev);
		}
		check(st == GPUIR_CUDA_OK, "transit: upload");
		for (uint32_t l = 0; l < nl && st == GPUIR_CUDA_OK; l++)
		{
			lists[l].base = dev + first[l] / 4;
			memset(&kept[l], 0, sizeof(kept[l]));
			if (l % 2 == 1)
			{
				st = gpuir_cuda_list_keep(tr, &lists[l], &kept[l]);
				lists[l] = kept[l];
			}
		}
		check(st == GPUIR_CUDA_OK, "transit: keep every other list");
		/* the terms name the assembled blocks */
		{
			uint32_t	fb = 0;

			for (uint32_t l = 0; l < nl; l++)
			{
				first[l] = fb;
				fb += lists[l].nblocks;
			}
			for (uint32_t i = 0; i < b.nt; i++)
				if (b.src[i] >= 0 && b.t[i].nblocks > 0)
					b.t[i].first_block = first[terms[b.src[i]]];
		}
		if (st == GPUIR_CUDA_OK)
			st = gpuir_cuda_transit_assemble(tr, (uint32_t) round % GPUIR_CUDA_TRANSIT_SLOTS,
											 &skel, lists, nl, &seg);
		snprintf(what, sizeof(what), "%s/transit %d: assemble %u lists (%s)", s->spec.name, round,
				 nl, gpuir_cuda_status_string(st));
		check(st == GPUIR_CUDA_OK, what);
		if (st == GPUIR_CUDA_OK && nl > most)
			most = nl;
		if (st == GPUIR_CUDA_OK)
		{
			out_alloc(&o, &b);
			st = gpuir_cuda_search_batch(&seg, sc, b.q, b.nq, b.t, b.nt, b.kmax, o.docids,
										 o.scores, o.counts, NULL);
			snprintf(what, sizeof(what), "%s/transit %d: search (%s)", s->spec.name, round,
					 gpuir_cuda_status_string(st));
			check(st == GPUIR_CUDA_OK, what);
			if (st == GPUIR_CUDA_OK)
				compare_batch(r, s, sc, &b, &o, "transit");
			out_free(&o);
		}

		/*
		 * slot 0's segment stays searchable while slot 1 is assembled (the
		 * worker searches one job's slot while it assembles the other's)
		 */
		if (have0 && st == GPUIR_CUDA_OK)
		{
			out_alloc(&o, &b0);
			st = gpuir_cuda_search_batch(&seg0, sc, b0.q, b0.nq, b0.t, b0.nt, b0.kmax, o.docids,
										 o.scores, o.counts, NULL);
			snprintf(what, sizeof(what), "%s/transit: slot 0 searched after slot 1 was assembled (%s)",
					 s->spec.name, gpuir_cuda_status_string(st));
			check(st == GPUIR_CUDA_OK, what);
			if (st == GPUIR_CUDA_OK)
				compare_batch(r, s, sc, &b0, &o, "transit slot 0 after slot 1");
			out_free(&o);
		}
		if (have0)
		{
			batch_free(&b0);
			have0 = 0;
		}
		for (uint32_t l = 0; l < nl; l++)
			if (l % 2 == 1)
				gpuir_cuda_list_free(tr, &kept[l]);
		if (ext != NULL)
		{
			check(gpuir_cuda_transit_sync(tr) == GPUIR_CUDA_OK, "transit: sync");
			gpuir_cuda_host_unregister(ext);
			free(ext);
		}
		free(terms);
		free(order);
		free(lists);
		free(kept);
		free(first);
		if (round == 0 && st == GPUIR_CUDA_OK)
		{
			b0 = b;				/* searched again after round 1's assembly */
			seg0 = seg;
			have0 = 1;
		}
		else
			batch_free(&b);
	}
	if (have0)
		batch_free(&b0);
	gpuir_cuda_segment_free(&skel);
	gpuir_cuda_transit_trim(tr);	/* the pool's freed lists back to the device */
	gpuir_cuda_transit_free(tr);
	return most;
}

/*
 * test_transit_many: a batch of more distinct lists than a grid's y
 * dimension holds (65,535), whose assembly copies them in launches of
 * 65,535 lists each (gpuir_cuda_transit_assemble); a segment of 70,000
 * short lists, queries of 8 consecutive lists (modes mixed, k = 10)
 * covering every one, the results equal to the reference's (test_transit)
 */
static void
test_transit_many(const gpuir_cuda_scoring *sc)
{
	/* name, ndocs, nterms, maxlen, deleted, ties, skew, priors */
	const SegSpec spec = {"many lists", 20000, 70000, 64, 1, 0, 0, 0};
	BatchSpec	sweep = {"8 consecutive lists", 70000 / 8, 8, 8, -1, 10, 10, 0, 0, 1};
	TestSeg		s;
	Ref			r;
	gpuir_cuda_status st;

	seg_build(&s, &spec);
	st = seg_upload(&s);
	check(st == GPUIR_CUDA_OK, "many lists: upload");
	if (st == GPUIR_CUDA_OK)
	{
		uint32_t	nl;
		char		what[128];

		ref_init(&r, s.ndocs);
		nl = test_transit(&r, &s, sc, &sweep);
		snprintf(what, sizeof(what), "many lists: %u lists in one assembly (more than 65,535)", nl);
		check(nl > 65535, what);
		printf("cuda search: %s, %u queries a round against the reference\n", what, sweep.nq);
		ref_free(&r);
	}
	seg_free(&s);
}

static void
test_segment(const SegSpec *spec, const gpuir_cuda_scoring *sc, int timing, int corrupt,
			 int args)
{
	TestSeg		s;
	Ref			r;
	gpuir_cuda_status st;
	char		what[256];
	const uint32_t scale = sized(1, 8, 40);
	BatchSpec	mixed = {"mixed", 400 / scale, 1, 8, -1, 0, GPUIR_CUDA_MAX_K, 1, 0, 0};
	BatchSpec	kmax100 = {"kmax 100", 200 / scale, 1, 5, -1, 0, 100, 1, 0, 0};
	BatchSpec	single = {"one or two terms, k 1000", 100 / scale, 1, 2, GPUIR_CUDA_MODE_OR,
	1000, 1000, 0, 0, 0};
	BatchSpec	and_long = {"AND of 2..8", 100 / scale, 2, 8, GPUIR_CUDA_MODE_AND, 0, 1000, 0, 0, 0};

	/*
	 * more terms than the AND kernel keeps tfs of (GPUIR_AND_TF_ROWS): the
	 * later ones are probed again; two long lists, repeated, so that
	 * documents hold every term
	 */
	BatchSpec	and_many = {"AND of 9..16 hot terms", 100 / scale, 9, 16, GPUIR_CUDA_MODE_AND,
	0, 1000, 0, 1, 0};
	BatchSpec	bmw_mixed = {"BMW of 1..8", 200 / scale, 1, 8, GPUIR_CUDA_MODE_BMW, 0, 1000, 1, 0, 0};
	BatchSpec	bmw_k1000 = {"BMW one or two terms, k 1000", 100 / scale, 1, 2,
	GPUIR_CUDA_MODE_BMW, 1000, 1000, 0, 0, 0};
	BatchSpec	bmw_k1 = {"BMW k 1", 100 / scale, 1, 4, GPUIR_CUDA_MODE_BMW, 1, 1, 1, 0, 0};
	BatchSpec	or100 = {"OR of 1..8, kmax 100", 200 / scale, 1, 8, GPUIR_CUDA_MODE_OR, 0, 100, 1, 0, 0};
	BatchSpec	bmw100 = {"BMW of 1..8, kmax 100", 200 / scale, 1, 8, GPUIR_CUDA_MODE_BMW, 0, 100, 1,
	0, 0};

	seg_build(&s, spec);
	st = seg_upload(&s);
	snprintf(what, sizeof(what), "%s: upload %s (%s)", spec->name, gpuir_cuda_status_string(st),
			 gpuir_cuda_last_error_detail());
	check(st == GPUIR_CUDA_OK, what);
	if (st != GPUIR_CUDA_OK)
	{
		seg_free(&s);
		return;
	}
	ref_init(&r, s.ndocs);
	if (args)
		test_arguments(&s, sc);
	test_batch(&r, &s, sc, &mixed, 0);
	test_batch(&r, &s, sc, &kmax100, 0);
	test_batch(&r, &s, sc, &single, 0);
	test_batch(&r, &s, sc, &and_long, 0);
	test_batch(&r, &s, sc, &and_many, 0);
	test_batch(&r, &s, sc, &bmw_mixed, 0);
	test_batch(&r, &s, sc, &bmw_k1000, 0);
	test_batch(&r, &s, sc, &bmw_k1, 0);
	test_bmw_maxscore(&r, &s, sc, &bmw_mixed);
	test_bmw_maxscore(&r, &s, sc, &bmw_k1000);
	test_bmw_maxscore(&r, &s, sc, &bmw_k1);
	test_short_room(&r, &s, sc, &mixed);
	test_short_room(&r, &s, sc, &single);
	test_short_room(&r, &s, sc, &bmw_mixed);	/* BMW queries of dense lists run as OR */
	if (args)
		test_bmw_fallback(&r, &s, sc);
	test_windows(&s, sc, &mixed);
	test_decode_budget(&r, &s, sc, &mixed, &bmw_mixed);
	test_jobs_in_flight(&r, &s, sc, &mixed, &bmw_mixed);
	test_small_calls(&r, &s, sc, &mixed);
	test_small_calls(&r, &s, sc, &and_long);
	test_small_calls(&r, &s, sc, &bmw_mixed);

	/*
	 * The library's default BMW batch rule (main turns it off, so that the
	 * other checks' BMW queries may prune): a batch of mixed modes, and
	 * small calls of BMW queries with kmax 100, which it runs as OR where
	 * their tiles fill few waves, and whose final selections the tile
	 * kernel then makes, against the reference
	 */
	gpuir_cuda_search_set_bmw_batch(GPUIR_CUDA_BMW_BATCH_WAVES, GPUIR_CUDA_BMW_BATCH_TOTAL);
	{
		BatchSpec	m = mixed;

		m.name = "mixed, default BMW batch rule";
		test_batch(&r, &s, sc, &m, 0);
		m = bmw_mixed;
		m.name = "BMW of 1..8, kmax 100, default BMW batch rule";
		m.kmax = 100;
		test_small_calls(&r, &s, sc, &m);
	}
	gpuir_cuda_search_set_bmw_batch(0, 0);
	test_fused_selections(&r, &s, sc, &or100, &bmw100);
	test_transit(&r, &s, sc, &mixed);
	test_transit(&r, &s, sc, &bmw_mixed);
	test_decode_cache(&r, &s, sc);
	if (timing)
	{
		BatchSpec	or10 = {"OR k=10, 2-4 terms", sized(2000, 200, 200), 2, 4,
		GPUIR_CUDA_MODE_OR, 10, 10, 0, 0, 0};
		BatchSpec	or1000 = {"OR k=1000, 2-4 terms", sized(1000, 100, 100), 2, 4,
		GPUIR_CUDA_MODE_OR, 1000, 1000, 0, 0, 0};
		BatchSpec	and10 = {"AND k=10, 2-4 terms", sized(2000, 200, 200), 2, 4,
		GPUIR_CUDA_MODE_AND, 10, 10, 0, 0, 0};

		BatchSpec	or10_1 = {"k=10, 1-2 terms", sized(2000, 200, 200), 1, 2,
		GPUIR_CUDA_MODE_OR, 10, 10, 0, 0, 0};

		if (timing > 1)
		{
			test_batch(&r, &s, sc, &or10, 1);
			test_batch(&r, &s, sc, &or1000, 1);
			test_batch(&r, &s, sc, &and10, 1);
		}
		or10.name = "k=10, 2-4 terms";
		or1000.name = "k=1000, 2-4 terms";
		test_bmw_vs_or(&r, &s, sc, &or10);
		test_bmw_vs_or(&r, &s, sc, &or1000);
		test_bmw_vs_or(&r, &s, sc, &or10_1);
	}
	if (corrupt)
		test_corruption(&s, sc);
	ref_free(&r);
	seg_free(&s);
}

/*
 * run_full_regions: batch bs made into *b and run with full candidate
 * regions (no short rooms) through run_debug_checked, its statistics into
 * *st; returns the status (the caller frees *b)
 */
static gpuir_cuda_status
run_full_regions(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs,
				 Batch *b, gpuir_cuda_search_stats *st)
{
	gpuir_cuda_status rc;

	batch_make(b, s, bs);
	gpuir_cuda_search_set_short_room(0);
	rc = run_debug_checked(r, s, sc, b, st, bs->name);
	gpuir_cuda_search_set_short_room(GPUIR_CUDA_SHORT_ROOM_AUTO);
	return rc;
}

/*
 * test_two_levels: batch bs with full candidate regions checked against
 * the reference with debug statistics, which must count some query
 * selected in two levels
 */
static void
test_two_levels(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc, const BatchSpec *bs)
{
	Batch		b;
	gpuir_cuda_search_stats st;
	char		what[256];

	if (run_full_regions(r, s, sc, bs, &b, &st) == GPUIR_CUDA_OK)
	{
		snprintf(what, sizeof(what), "%s/%s: some query selected in two levels (%llu of %u)",
				 s->spec.name, bs->name, (unsigned long long) st.partial_queries, b.nq);
		check(st.partial_queries > 0, what);
		printf("cuda search: %s on %s: %llu of %u queries selected in two levels\n", bs->name,
			   s->spec.name, (unsigned long long) st.partial_queries, b.nq);
	}
	batch_free(&b);
}

/*
 * test_hist_raise: top-1000 OR queries of the segment's longest lists
 * (every tile holds more than k matches) with full candidate regions,
 * checked against the reference: on its own k-th best alone a tile barely
 * raises a query's threshold at such k, and nearly every tile would emit
 * k keys; the score histogram (gpuir_tile_hist_raise) raises it as the
 * query's tiles finish, so the tiles must emit fewer than half of tiles x
 * k keys a query (35-39% on an H200: the tiles running before any
 * finished emit k each, and these lists' scores repeat, so the bucket
 * holding a query's k-th best holds many more)
 */
static void
test_hist_raise(Ref *r, const TestSeg *s, const gpuir_cuda_scoring *sc)
{
	const BatchSpec bs = {"histogram: OR of 1..2 long lists, k 1000", 40, 1, 2,
	GPUIR_CUDA_MODE_OR, 1000, 1000, 0, 1, 0};
	Batch		b;
	gpuir_cuda_search_stats st;
	char		what[256];

	if (run_full_regions(r, s, sc, &bs, &b, &st) == GPUIR_CUDA_OK)
	{
		const uint64_t most = seg_tiles(s) * bs.k * b.nq;

		snprintf(what, sizeof(what), "%s/%s: the tiles emitted %llu keys, under half of %llu",
				 s->spec.name, bs.name, (unsigned long long) st.tile_keys,
				 (unsigned long long) most);
		check(st.tile_keys < most / 2, what);
		printf("cuda search: %s on %s: the tiles emitted %llu keys of at most %llu\n", bs.name,
			   s->spec.name, (unsigned long long) st.tile_keys, (unsigned long long) most);
	}
	batch_free(&b);
}

/*
 * test_partial: a segment of more than 2 M docIDs (over 128 tiles) where
 * top-1000 queries of one or two long lists leave more than 64,000
 * candidates, and top-250 queries of its longest lists more than 16,384,
 * so that the final selection runs in two levels
 * (gpuir_search_partial_kernel: 32 slices, then the final kernel over
 * 32 x k; test_two_levels shows that it did for top-250); OR and BMW,
 * checked against the reference like every batch; and test_hist_raise.
 * Only in full runs (the reference scores millions of postings).
 */
static void
test_partial(const gpuir_cuda_scoring *sc)
{
	const SegSpec spec = {"partial", 2200000, 12, 2200000, 1, 0, 0, 0};
	BatchSpec	or_k1000 = {"partial: OR of 1..2, k 1000", 60, 1, 2, GPUIR_CUDA_MODE_OR,
	1000, 1000, 0, 0, 0};
	BatchSpec	bmw_k1000 = {"partial: BMW of 1..2, k 1000", 60, 1, 2, GPUIR_CUDA_MODE_BMW,
	1000, 1000, 0, 0, 0};
	/*
	 * two queries of the longest lists, whose 135 tiles all start at once
	 * (before a threshold is set) and mostly emit 250 keys: more than the
	 * 16,384 from which a query with k < 256 selects in two levels
	 */
	BatchSpec	or_k250 = {"partial: OR of 1..2 long lists, k 250", 2, 1, 2, GPUIR_CUDA_MODE_OR,
	250, 250, 0, 1, 0};
	TestSeg		s;
	Ref			r;
	gpuir_cuda_status st;

	seg_build(&s, &spec);
	st = seg_upload(&s);
	check(st == GPUIR_CUDA_OK, "partial: upload");
	if (st == GPUIR_CUDA_OK)
	{
		ref_init(&r, s.ndocs);
		test_batch(&r, &s, sc, &or_k1000, 0);
		test_batch(&r, &s, sc, &bmw_k1000, 0);
		test_two_levels(&r, &s, sc, &or_k250);
		test_hist_raise(&r, &s, sc);
		test_bmw_maxscore(&r, &s, sc, &bmw_k1000);
		test_short_room(&r, &s, sc, &or_k1000);
		ref_free(&r);
	}
	seg_free(&s);
}

int
main(int argc, char **argv)
{
	int			ndev = 0;
	gpuir_cuda_status st;
	const char *require = getenv("GPUIR_TEST_REQUIRE_GPU");
	char		name[256];
	size_t		mem = 0;
	int			major = 0,
				minor = 0;
	gpuir_cuda_scoring sc = {1.2f, 0.75f, 0.0f, 0.0f};

	test_size_args(argc, argv);
	/*
	 * every BMW query may prune, whatever the library's defaults
	 * (test_bmw_vs_or tests the limits: the batch rule with limits of its own)
	 */
	gpuir_cuda_search_set_bmw_batch(0, 0);
	st = gpuir_cuda_device_count(&ndev);
	if (st != GPUIR_CUDA_OK)
	{
		int			must = (require != NULL && strcmp(require, "1") == 0);

		if (st == GPUIR_CUDA_NO_DEVICE && !must)
		{
			printf("cuda search: skipped (no CUDA device: %s)\n",
				   gpuir_cuda_last_error_detail());
			return 0;
		}
		printf("cuda search: device discovery failed: %s (%s)\n",
			   gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
		return 1;
	}
	st = gpuir_cuda_device_info(0, name, sizeof(name), &mem, &major, &minor);
	if (st != GPUIR_CUDA_OK)
	{
		printf("cuda search: device info failed: %s (%s)\n",
			   gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
		return 1;
	}
	printf("cuda search: device 0 of %d: %s, compute capability %d.%d, %zu MiB\n",
		   ndev, name, major, minor, mem >> 20);

	rnd_seed(0xD1B54A32D192ED03ULL);
	{
		/* name, ndocs, nterms, maxlen, deleted, ties, skew, priors */
		const SegSpec big = {"big", sized(1000000, 60000, 20000), sized(1200, 150, 50),
		sized(100000, 20000, 6666), 1, 0, 0, 0};
		const SegSpec ties = {"ties", sized(200000, 20000, 6666), sized(500, 100, 33),
		sized(50000, 10000, 3333), 0, 1, 0, 0};
		const SegSpec skew = {"skew", sized(1000000, 60000, 20000), sized(400, 100, 33),
		sized(200000, 20000, 6666), 1, 0, 1, 0};
		const SegSpec skew_priors = {"skew, priors", sized(1000000, 60000, 20000), sized(400, 100, 33),
		sized(200000, 20000, 6666), 1, 0, 1, 1};
		const SegSpec ties_priors = {"ties, priors", sized(200000, 20000, 6666), sized(500, 100, 33),
		sized(50000, 10000, 3333), 1, 1, 0, 1};
		static const uint32_t edge_ndocs[] = {1, 100, 8191, 8192, 8193, 16383, 16384, 16385, 20000};

		for (size_t i = 0; i < sizeof(edge_ndocs) / sizeof(edge_ndocs[0]); i++)
		{
			char		nm[32];
			SegSpec		e = {nm, edge_ndocs[i], 24, edge_ndocs[i], (int) (i % 2), (int) (i % 3 == 0),
			(int) (i % 3 == 1), (int) (i % 4 == 3)};

			if (test_size == TEST_SANITIZE && i % 2 == 1)
				continue;		/* --sanitize: every other size */
			snprintf(nm, sizeof(nm), "edge %u%s", edge_ndocs[i], e.priors ? ", priors" : "");
			sc.avgdl = 400.0f + (float) i;
			sc.prior_weight = 0.7f;
			test_segment(&e, &sc, 0, 0, i == 2);
		}
		sc.avgdl = 731.25f;
		test_segment(&ties, &sc, 0, 1, 0);
		sc.k1 = 0.9f;
		sc.b = 0.4f;
		sc.avgdl = 1000.5f;
		test_segment(&big, &sc, sized(2, 2, 0), 0, 0);
		sc.k1 = 1.2f;
		sc.b = 0.75f;
		sc.avgdl = 1100.0f;
		test_segment(&skew, &sc, sized(1, 1, 0), 0, 0);
		/* document priors: a weight that makes them matter, then one of 1 */
		sc.prior_weight = 0.3f;
		test_segment(&skew_priors, &sc, sized(1, 1, 0), 0, 0);
		sc.prior_weight = 1.0f;
		sc.avgdl = 731.25f;
		test_segment(&ties_priors, &sc, 0, 0, 0);
		if (test_size == TEST_FULL)
			test_partial(&sc);
		if (test_size != TEST_SANITIZE)
			test_transit_many(&sc);	/* not under racecheck: 70,000 lists' blocks */
	}

	/* the essential-list kernel must have answered some BMW queries */
	{
		char		what[128];

		snprintf(what, sizeof(what), "BMW queries answered from their essential lists: %llu",
				 (unsigned long long) maxscore_total);
		check(maxscore_total > 0, what);
		snprintf(what, sizeof(what), "queries searched again after a spill: %llu",
				 (unsigned long long) spilled_total);
		check(spilled_total > 0, what);
	}
	printf("cuda search: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
