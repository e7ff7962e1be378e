/*-------------------------------------------------------------------------
 *
 * corpus.c
 *	  engine_bench: the GENERATED corpus (lengths from the histogram,
 *	  tokens i.i.d. by cf through alias tables) and its inversion to
 *	  posting lists in docID order; step 2 of the header of
 *	  bench/engine_bench.c.
 *
 *-------------------------------------------------------------------------
 */
#include "engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEN_CHUNK		4096		/* documents per random stream */
#define RESAMPLE_KEEP	0.9			/* --resample: a source term is kept with this probability */
#define HEAD_TERMS		65536		/* terms of the cache-resident alias table */

/* ---------- alias tables (Vose) ---------- */

typedef struct AliasEnt
{
	uint32_t	prob;			/* keep the column when the coin < prob */
	uint32_t	alias;
} AliasEnt;

typedef struct Alias
{
	uint32_t	n;
	AliasEnt   *e;
} Alias;

static void
alias_build(Alias *a, const double *w, uint32_t n)
{
	double		total = 0;
	double	   *p = xmalloc(sizeof(double) * (n ? n : 1));
	uint32_t   *small = xmalloc(sizeof(uint32_t) * (n ? n : 1));
	uint32_t   *large = xmalloc(sizeof(uint32_t) * (n ? n : 1));
	uint32_t	ns = 0,
				nl = 0;

	a->n = n;
	a->e = xmalloc(sizeof(AliasEnt) * (n ? n : 1));
	for (uint32_t i = 0; i < n; i++)
		total += w[i];
	for (uint32_t i = 0; i < n; i++)
	{
		p[i] = w[i] * n / total;
		if (p[i] < 1.0)
			small[ns++] = i;
		else
			large[nl++] = i;
	}
	while (ns > 0 && nl > 0)
	{
		uint32_t	s = small[--ns];
		uint32_t	l = large[nl - 1];

		a->e[s].prob = (uint32_t) (p[s] * 4294967296.0);
		a->e[s].alias = l;
		p[l] = (p[l] + p[s]) - 1.0;
		if (p[l] < 1.0)
		{
			nl--;
			small[ns++] = l;
		}
	}
	while (nl > 0)
	{
		uint32_t	l = large[--nl];

		a->e[l].prob = UINT32_MAX;
		a->e[l].alias = l;
	}
	while (ns > 0)				/* rounding leftovers */
	{
		uint32_t	s = small[--ns];

		a->e[s].prob = UINT32_MAX;
		a->e[s].alias = s;
	}
	free(p);
	free(small);
	free(large);
}

static inline uint32_t
alias_draw(const Alias *a, uint64_t r)
{
	uint32_t	col = (uint32_t) (((r >> 32) * (uint64_t) a->n) >> 32);

	return ((uint32_t) r < a->e[col].prob) ? col : a->e[col].alias;
}

/* ---------- corpus generation and inversion ---------- */

typedef struct GenThread
{
	uint32_t	d0,
				d1;				/* documents [d0, d1) */
	uint32_t   *fterm;			/* forward postings: term, tf */
	uint32_t   *ftf;
	uint64_t	np,
				cap;
	uint32_t   *cnt;			/* [V] documents holding the term; then cursor */
	uint64_t	tokens;
} GenThread;

typedef struct GenCtx
{
	Corpus	   *c;
	GenThread  *th;
	uint64_t	seed;
	uint32_t	nchunks;
	Alias		dl_alias;
	const uint32_t *dl_val;
	uint32_t	max_dl;
	double		mean_dl;
	Alias		head,
				tail;
	uint32_t   *head_term;
	uint32_t   *tail_term;
	uint64_t	head_thr;		/* (r >> 11) < head_thr: draw from the head */
	const Source *src;			/* --resample: the real documents, or NULL */
	uint64_t	keep_thr;		/* (r >> 11) < keep_thr: keep a source term */
} GenCtx;

/* one token drawn i.i.d. by cf */
static inline uint32_t
draw_term(const GenCtx *g, Rng *r)
{
	uint64_t	r1 = rng_next(r);

	if ((r1 >> 11) < g->head_thr)
		return g->head_term[alias_draw(&g->head, rng_next(r))];
	return g->tail_term[alias_draw(&g->tail, rng_next(r))];
}

static void
gen_worker(void *arg, int tid, int nt)
{
	GenCtx	   *g = arg;
	Corpus	   *c = g->c;
	GenThread  *t = &g->th[tid];
	uint32_t	ch0 = (uint32_t) split_at(g->nchunks, tid, nt);
	uint32_t	ch1 = (uint32_t) split_at(g->nchunks, tid + 1, nt);
	uint32_t   *tfc = xcalloc(c->V, sizeof(uint32_t));
	uint32_t   *dist = xmalloc(sizeof(uint32_t) * ((size_t) g->max_dl + 1));

	t->d0 = (uint32_t) ((uint64_t) ch0 * GEN_CHUNK < c->ndocs ? (uint64_t) ch0 * GEN_CHUNK : c->ndocs);
	t->d1 = (uint32_t) ((uint64_t) ch1 * GEN_CHUNK < c->ndocs ? (uint64_t) ch1 * GEN_CHUNK : c->ndocs);
	t->cnt = xcalloc(c->V, sizeof(uint32_t));
	t->cap = (uint64_t) ((t->d1 - t->d0) * g->mean_dl) + 4096;
	t->fterm = big_alloc(sizeof(uint32_t) * t->cap);
	t->ftf = big_alloc(sizeof(uint32_t) * t->cap);
	t->np = 0;
	t->tokens = 0;
	for (uint32_t ch = ch0; ch < ch1; ch++)
	{
		Rng			r;
		uint32_t	da = (uint32_t) ((uint64_t) ch * GEN_CHUNK);
		uint32_t	db = (uint32_t) ((uint64_t) da + GEN_CHUNK < c->ndocs ? da + GEN_CHUNK : c->ndocs);

		rng_seed(&r, g->seed, ch);
		for (uint32_t d = da; d < db; d++)
		{
			uint32_t	dl = 0;
			uint32_t	nd = 0;

			if (g->src != NULL)
			{
				/* real document d mod n, in file (crawl) order, perturbed */
				const Source *s = g->src;
				const uint32_t sd = d % s->n;

				for (uint64_t p = s->off[sd]; p < s->off[sd + 1]; p++)
				{
					const uint32_t v = s->term[p];
					const uint32_t tf = s->tf[p];

					if ((rng_next(&r) >> 11) < g->keep_thr)
					{
						if (tfc[v] == 0)
							dist[nd++] = v;
						tfc[v] += tf;
					}
					else
						for (uint32_t i = 0; i < tf; i++)
						{
							uint32_t	w = draw_term(g, &r);

							if (tfc[w]++ == 0)
								dist[nd++] = w;
						}
					dl += tf;
				}
			}
			else
			{
				dl = g->dl_val[alias_draw(&g->dl_alias, rng_next(&r))];
				for (uint32_t i = 0; i < dl; i++)
				{
					uint32_t	v = draw_term(g, &r);

					if (tfc[v]++ == 0)
						dist[nd++] = v;
				}
			}
			if (t->np + nd > t->cap)
			{
				t->cap = t->cap + t->cap / 4 + nd + (1 << 20);
				t->fterm = xrealloc(t->fterm, sizeof(uint32_t) * t->cap);
				t->ftf = xrealloc(t->ftf, sizeof(uint32_t) * t->cap);
			}
			for (uint32_t j = 0; j < nd; j++)
			{
				uint32_t	v = dist[j];

				t->fterm[t->np] = v;
				t->ftf[t->np] = tfc[v];
				t->np++;
				tfc[v] = 0;
				t->cnt[v]++;
			}
			c->doclen[d] = dl;
			c->docnp[d] = nd;
			t->tokens += dl;
		}
	}
	free(tfc);
	free(dist);
}

typedef struct InvCtx
{
	Corpus	   *c;
	GenThread  *th;
	int			ngen;
	uint32_t   *df;
} InvCtx;

/* per term: df, and each thread's count turned into its cursor (exclusive prefix) */
static void
inv_count_worker(void *arg, int tid, int nt)
{
	InvCtx	   *x = arg;
	uint32_t	v0 = (uint32_t) split_at(x->c->V, tid, nt);
	uint32_t	v1 = (uint32_t) split_at(x->c->V, tid + 1, nt);

	for (uint32_t v = v0; v < v1; v++)
	{
		uint64_t	s = 0;

		for (int t = 0; t < x->ngen; t++)
		{
			uint32_t	n = x->th[t].cnt[v];

			x->th[t].cnt[v] = (uint32_t) s;
			s += n;
		}
		if (s > UINT32_MAX)
			die("a term is in more than 2^32 documents");
		x->df[v] = (uint32_t) s;
	}
}

/* scatter generator thread tid's postings into the lists (docIDs ascending) */
static void
inv_scatter_worker(void *arg, int tid, int nt)
{
	InvCtx	   *x = arg;
	Corpus	   *c = x->c;
	GenThread  *t = &x->th[tid];
	uint64_t	p = 0;

	(void) nt;
	for (uint32_t d = t->d0; d < t->d1; d++)
	{
		for (uint32_t j = 0; j < c->docnp[d]; j++, p++)
		{
			uint32_t	v = t->fterm[p];
			uint64_t	pos = c->start[v] + t->cnt[v]++;

			c->inv_doc[pos] = d;
			c->inv_tf[pos] = t->ftf[p];
		}
	}
	free(t->fterm);
	free(t->ftf);
	free(t->cnt);
	t->fterm = t->ftf = t->cnt = NULL;
}

typedef struct InvCheck
{
	const Corpus *c;
	uint64_t	bad[1024];
	uint64_t	seen[1024];
} InvCheck;

/*
 * thread tid checks the documents of its docID range [d0, d1): for every
 * list, the part inside the range (found by binary search) is strictly
 * increasing with tf >= 1; per document, the number of postings and the
 * sum of tf must be the generated distinct terms and dl (sums kept for the
 * range only, so no atomics)
 */
static void
inv_check_worker(void *arg, int tid, int nt)
{
	InvCheck   *x = arg;
	const Corpus *c = x->c;
	uint32_t	d0 = (uint32_t) split_at(c->ndocs, tid, nt);
	uint32_t	d1 = (uint32_t) split_at(c->ndocs, tid + 1, nt);
	uint64_t   *sum = xcalloc((size_t) (d1 - d0) + 1, sizeof(uint64_t));
	uint64_t	bad = 0,
				seen = 0;

	for (uint32_t v = 0; v < c->V; v++)
	{
		uint64_t	lo = c->start[v],
					hi = c->start[v + 1];

		while (lo < hi)
		{
			uint64_t	mid = lo + (hi - lo) / 2;

			if (c->inv_doc[mid] < d0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint64_t p = lo; p < c->start[v + 1] && c->inv_doc[p] < d1; p++)
		{
			uint32_t	d = c->inv_doc[p];

			seen++;
			if ((p > c->start[v] && d <= c->inv_doc[p - 1]) || c->inv_tf[p] == 0)
				bad++;
			else
				sum[d - d0] += (1ULL << 32) | c->inv_tf[p];
		}
	}
	for (uint32_t d = d0; d < d1; d++)
		if ((sum[d - d0] >> 32) != c->docnp[d] || (uint32_t) sum[d - d0] != c->doclen[d])
			bad++;
	free(sum);
	x->bad[tid] = bad;
	x->seen[tid] = seen;
}

/*
 * check the inversion: every list strictly increasing, every posting seen
 * by exactly one docID range (so below ndocs), and each document with
 * docnp[d] postings whose tfs sum to its dl
 */
static void
check_inversion(const Corpus *c, int nthreads)
{
	InvCheck   *x = xcalloc(1, sizeof(InvCheck));
	uint64_t	bad = 0,
				seen = 0;
	double		t0 = now_s();

	x->c = c;
	par_run(nthreads, inv_check_worker, x);
	for (int t = 0; t < nthreads; t++)
	{
		bad += x->bad[t];
		seen += x->seen[t];
	}
	free(x);
	if (bad || seen != c->npostings)
		die("inversion check failed: %" PRIu64 " bad postings or documents, %" PRIu64
			" postings seen of %" PRIu64, bad, seen, c->npostings);
	printf("invert: checked (lists strictly increasing; per document, postings and sum of tf "
		   "= generated distinct terms and dl) in %.2f s\n", now_s() - t0);
}

static int
u64_desc_idx_cmp(const void *a, const void *b, void *arg)
{
	const uint64_t *cf = arg;
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	if (cf[x] != cf[y])
		return cf[x] < cf[y] ? 1 : -1;
	return (x > y) - (x < y);
}

void
generate_corpus(Corpus *c, const Vocab *v, const DocLen *h, const Source *src, uint32_t ndocs,
				uint64_t seed, int nthreads, int verify)
{
	GenCtx		g;
	InvCtx		x;
	uint32_t   *order;
	double	   *w;
	uint32_t	H = v->n < HEAD_TERMS ? v->n : HEAD_TERMS;
	double		head_cf = 0,
				t0,
				t1,
				t2,
				ts;
	uint64_t	tokens = 0;

	memset(c, 0, sizeof(*c));
	memset(&g, 0, sizeof(g));
	c->ndocs = ndocs;
	c->V = v->n;
	c->doclen = big_alloc(sizeof(uint32_t) * (size_t) ndocs);
	c->docnp = big_alloc(sizeof(uint32_t) * (size_t) ndocs);

	/* alias tables: lengths, the H most frequent terms, the rest */
	alias_build(&g.dl_alias, h->count, h->n);
	g.dl_val = h->dl;
	g.max_dl = h->max_dl;
	g.mean_dl = h->mean;
	g.src = src;
	g.keep_thr = (uint64_t) (RESAMPLE_KEEP * 9007199254740992.0);
	if (src != NULL)
	{
		g.max_dl = src->max_dl;
		g.mean_dl = src->mean_dl;
	}
	order = xmalloc(sizeof(uint32_t) * v->n);
	for (uint32_t i = 0; i < v->n; i++)
		order[i] = i;
	qsort_r(order, v->n, sizeof(uint32_t), u64_desc_idx_cmp, v->cf);
	w = xmalloc(sizeof(double) * v->n);
	for (uint32_t i = 0; i < v->n; i++)
		w[i] = (double) v->cf[order[i]];
	for (uint32_t i = 0; i < H; i++)
		head_cf += w[i];
	g.head_term = order;
	g.tail_term = order + H;
	alias_build(&g.head, w, H);
	alias_build(&g.tail, w + H, v->n - H);
	free(w);
	g.head_thr = (H == v->n) ? (1ULL << 53) :
		(uint64_t) (head_cf / (double) v->total_cf * 9007199254740992.0);
	g.c = c;
	g.seed = seed;
	g.nchunks = (uint32_t) (((uint64_t) ndocs + GEN_CHUNK - 1) / GEN_CHUNK);
	g.th = xcalloc((size_t) nthreads, sizeof(GenThread));

	if (src != NULL)
		printf("generate: %u documents on %d threads, resampled: real document d mod %u in "
			   "file order, each term kept with probability %.2f, else replaced by i.i.d. "
			   "tokens...\n", ndocs, nthreads, src->n, RESAMPLE_KEEP);
	else
		printf("generate: %u documents on %d threads (dl from the histogram, tokens i.i.d. by cf; "
			   "the %u most frequent terms hold %.1f%% of the tokens)...\n",
			   ndocs, nthreads, H, 100.0 * head_cf / (double) v->total_cf);
	fflush(stdout);
	t0 = now_s();
	par_run(nthreads, gen_worker, &g);
	t1 = now_s();
	for (int t = 0; t < nthreads; t++)
	{
		tokens += g.th[t].tokens;
		c->npostings += g.th[t].np;
	}
	c->total_dl = tokens;

	/* invert: df and cursors, list starts, scatter */
	x.c = c;
	x.th = g.th;
	x.ngen = nthreads;
	x.df = xmalloc(sizeof(uint32_t) * v->n);
	par_run(nthreads, inv_count_worker, &x);
	c->start = xmalloc(sizeof(uint64_t) * ((size_t) v->n + 1));
	c->start[0] = 0;
	for (uint32_t t = 0; t < v->n; t++)
	{
		c->start[t + 1] = c->start[t] + x.df[t];
		if (x.df[t] > 0)
		{
			c->nlists++;
			if (x.df[t] > c->max_df)
				c->max_df = x.df[t];
		}
	}
	if (c->start[v->n] != c->npostings)
		die("internal error: inversion counts %" PRIu64 " postings, generation %" PRIu64,
			c->start[v->n], c->npostings);
	c->inv_doc = big_alloc(sizeof(uint32_t) * c->npostings);
	c->inv_tf = big_alloc(sizeof(uint32_t) * c->npostings);
	ts = now_s();
	par_run(nthreads, inv_scatter_worker, &x);
	t2 = now_s();
	free(x.df);
	free(g.th);
	free(g.dl_alias.e);
	free(g.head.e);
	free(g.tail.e);

	printf("generate: %.2f s (%.0f docs/s, %.1f M tokens/s); invert: %.2f s (scatter %.2f s)\n",
		   t1 - t0, ndocs / (t1 - t0), tokens / 1e6 / (t1 - t0), t2 - t1, t2 - ts);
	printf("corpus (GENERATED): %u docs, %" PRIu64 " tokens (mean dl %.2f), %" PRIu64
		   " postings (%.2f per doc), %u terms with a list (of %u), longest list %u\n",
		   ndocs, tokens, (double) tokens / ndocs, c->npostings,
		   (double) c->npostings / ndocs, c->nlists, v->n, c->max_df);
	if (verify)
		check_inversion(c, nthreads);
	/* fidelity: generated against expected occurrences of a few terms */
	printf("generate: cf generated / expected (tokens x cf / total cf):");
	for (uint32_t i = 0; i < v->n; i = (i == 0) ? 9 : i * 10 + 9)
	{
		uint32_t	t = order[i];
		uint64_t	occ = 0;
		double		want = (double) tokens * v->cf[t] / (double) v->total_cf;

		for (uint64_t p = c->start[t]; p < c->start[t + 1]; p++)
			occ += c->inv_tf[p];
		printf(" rank %u: %" PRIu64 " / %.0f;", i + 1, occ, want);
	}
	printf("\n");
	free(order);
	if (c->npostings < 1000000000ULL)
		printf("\n*** WARNING: %" PRIu64 " postings, fewer than 1e9: this is not Gov2 scale "
			   "(raise --docs) ***\n\n", c->npostings);
	fflush(stdout);
}
