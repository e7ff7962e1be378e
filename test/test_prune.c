/*-------------------------------------------------------------------------
 *
 * test_prune.c
 *	  Tests of pruned posting lists (src/gpuirprune.h): no GPU and no
 *	  server needed.
 *	  - GpuirPruneSelect keeps exactly want postings, none of smaller BM25
 *	    tf part than one left out, ties at the cut in docID order, and its
 *	    rest pairs dominate every posting left out;
 *	  - GpuirPruneEncode's list decodes (GpuirListDecodeBlock, the readers'
 *	    checks) to the kept postings;
 *	  - the whole protocol against an exact reference: random collections
 *	    with Zipf-like tfs, queries of 1 to 5 terms, long lists pruned to an
 *	    eighth; the "device" ranks documents by their partial scores over
 *	    the lists it holds (float sums in term order, ties by docID) and
 *	    returns 2k + 16 candidates; the candidates are rescored over the
 *	    whole lists; wherever GpuirPruneDecides says the top-k is decided it
 *	    must equal the exact top-k (docIDs and score bits), and it must say
 *	    so for a good share of the queries.
 *
 * Usage: test_prune.  Prints one summary line; exit status 1 on a failure.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuirprune.h"
#include "test_util.h"

#define SLACK		1.0001		/* GPUIR_BOUND_SLACK of gpuir.h */
#define K1			1.2
#define B			0.75

static double
w_of(uint32_t tf, uint32_t dl, double avgdl)
{
	return (float) ((double) tf * (K1 + 1.0) / ((double) tf + K1 * ((1.0 - B) + B * ((double) dl / avgdl))));
}

/* a tf drawn from a Zipf-like law: mostly 1 */
static uint32_t
rnd_tf(void)
{
	uint32_t	r = rnd() % 1000;

	if (r < 700)
		return 1;
	if (r < 880)
		return 2;
	if (r < 950)
		return 3 + rnd() % 3;
	return 6 + rnd() % 40;
}

static void
test_select(void)
{
	for (int round = 0; round < 300; round++)
	{
		uint32_t	n = 1 + rnd() % (round < 100 ? 50 : 5000);
		uint32_t	want = 1 + rnd() % n;
		double		avgdl = 20 + rnd() % 200;
		uint32_t   *tfs = malloc(sizeof(uint32_t) * n);
		uint32_t   *dls = malloc(sizeof(uint32_t) * n);
		uint32_t   *docs = malloc(sizeof(uint32_t) * n);
		uint8_t    *keep = malloc(n);
		float	   *scratch = malloc(sizeof(float) * 2 * n);
		uint32_t	(*pairs)[2] = malloc(sizeof(uint32_t[2]) * n);
		GpuirBlockHeader *dir = malloc(sizeof(GpuirBlockHeader) * GpuirListBlocks(n));
		uint8_t    *payload = malloc((size_t) GpuirListBlocks(n) * GPUIR_BLOCK_MAX_BYTES);
		GpuirPruneRest rest;
		uint32_t	kept;
		uint32_t	nk = 0;
		double		min_kept = 1e300;
		double		max_left = -1;
		int			ties_ok = 1;
		int			dominated = 1;
		uint32_t	d = 0;
		uint32_t	nblocks;
		uint32_t	bytes;
		uint32_t	prev = GPUIR_FIRST_PREV_DOCID;
		uint32_t	got = 0;
		int			decoded_ok = 1;

		for (uint32_t i = 0; i < n; i++)
		{
			d += 1 + rnd() % 50;
			docs[i] = d;
			tfs[i] = (round % 3 == 0) ? 1 + rnd() % 2 : rnd_tf();	/* many ties */
			dls[i] = (round % 3 == 0) ? 10 + rnd() % 3 : tfs[i] + rnd() % 500;
		}
		kept = GpuirPruneSelect(tfs, dls, n, want, K1, B, avgdl, keep, &rest, scratch, pairs);
		for (uint32_t i = 0; i < n; i++)
		{
			double		w = w_of(tfs[i], dls[i], avgdl);

			if (keep[i])
			{
				nk++;
				if (w < min_kept)
					min_kept = w;
			}
			else if (w > max_left)
				max_left = w;
		}
		/* ties at the cut: no kept posting of the cut's w after a left-out one */
		for (uint32_t i = 0, seen_left = 0; i < n; i++)
		{
			double		w = w_of(tfs[i], dls[i], avgdl);

			if (w == min_kept && !keep[i])
				seen_left = 1;
			if (w == min_kept && keep[i] && seen_left)
				ties_ok = 0;
		}
		for (uint32_t i = 0; i < n; i++)
		{
			int			any = 0;

			if (keep[i])
				continue;
			for (int j = 0; j < rest.npairs; j++)
				if (rest.tf[j] >= tfs[i] && rest.dl[j] <= dls[i])
					any = 1;
			if (!any)
				dominated = 0;
		}
		check(kept == want && nk == want, "GpuirPruneSelect keeps want postings");
		check(max_left <= min_kept, "no posting left out ranks above a kept one");
		check(ties_ok, "ties at the cut are kept in docID order");
		check(dominated, "the rest pairs dominate every posting left out");
		check((rest.npairs == 0) == (want == n) && rest.npairs <= GPUIR_PRUNE_REST_PAIRS,
			  "rest pairs only when postings are left out");

		/* the pruned list decodes to the kept postings */
		bytes = GpuirPruneEncode(docs, tfs, dls, keep, n, K1, B, avgdl, dir, payload, &nblocks);
		check(bytes > 0 && nblocks == GpuirListBlocks(want), "GpuirPruneEncode encodes");
		for (uint32_t blk = 0, i = 0; bytes > 0 && blk < nblocks; blk++)
		{
			uint32_t	out_docs[GPUIR_BLOCK_SIZE];
			uint32_t	out_tfs[GPUIR_BLOCK_SIZE];
			uint32_t	end = blk + 1 < nblocks ? dir[blk + 1].payload_off : bytes;
			int			expect = GpuirListBlockPostings(want, blk);
			const char *why = GpuirListCheckHeader(&dir[blk], blk > 0 ? &dir[blk - 1] : NULL,
												   end, d + 1);

			if (why == NULL)
				why = GpuirListDecodeBlock(payload + dir[blk].payload_off,
										   end - dir[blk].payload_off, prev, &dir[blk],
										   expect, out_docs, out_tfs, 0);
			if (why != NULL)
			{
				decoded_ok = 0;
				break;
			}
			for (int j = 0; j < expect; j++)
			{
				while (i < n && !keep[i])
					i++;
				if (i >= n || out_docs[j] != docs[i] || out_tfs[j] != tfs[i])
					decoded_ok = 0;
				i++;
				got++;
			}
			prev = dir[blk].last_docid;
		}
		check(decoded_ok && got == want, "the pruned list decodes to the kept postings");
		free(tfs);
		free(dls);
		free(docs);
		free(keep);
		free(scratch);
		free(pairs);
		free(dir);
		free(payload);
	}
}

/* ---------- the protocol against an exact reference ---------- */

#define NDOCS		20000
#define NTERMS		40
#define MAXQT		5

typedef struct
{
	uint32_t	n;
	uint32_t   *docs;
	uint32_t   *tfs;
	uint8_t    *keep;			/* NULL: not pruned */
	GpuirPruneRest rest;
	float		idf;
} List;

static uint32_t dl[NDOCS];
static List lists[NTERMS];

typedef struct
{
	uint32_t	doc;
	float		score;
} Hit;

static int
hit_cmp(const void *a, const void *b)
{
	const Hit  *x = a;
	const Hit  *y = b;

	if (x->score != y->score)
		return x->score < y->score ? 1 : -1;
	return (x->doc > y->doc) - (x->doc < y->doc);
}

static float
bm25(float idf, uint32_t tf, uint32_t d, float avgdl)
{
	return GpuirBM25Expr(idf, tf, dl[d], (float) K1, (float) B, avgdl);
}

/* tf of doc in list l, 0 if absent (pruned_only: in its pruned part only) */
static uint32_t
tf_in(const List *l, uint32_t doc, int pruned_only)
{
	uint32_t	lo = 0,
				hi = l->n;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (l->docs[mid] < doc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == l->n || l->docs[lo] != doc)
		return 0;
	if (pruned_only && l->keep != NULL && !l->keep[lo])
		return 0;
	return l->tfs[lo];
}

/* scores of every document over the query's lists (float sums in term order) */
static int
score_all(const int *qt, int nq, int partial, float avgdl, Hit *out)
{
	static float acc[NDOCS];
	static uint8_t hit[NDOCS];
	int			n = 0;

	memset(acc, 0, sizeof(acc));
	memset(hit, 0, sizeof(hit));
	for (uint32_t d = 0; d < NDOCS; d++)
		for (int t = 0; t < nq; t++)
		{
			uint32_t	tf = tf_in(&lists[qt[t]], d, partial);

			if (tf > 0)
			{
				acc[d] += bm25(lists[qt[t]].idf, tf, d, avgdl);
				hit[d] = 1;
			}
		}
	for (uint32_t d = 0; d < NDOCS; d++)
		if (hit[d])
		{
			out[n].doc = d;
			out[n].score = acc[d];
			n++;
		}
	qsort(out, n, sizeof(Hit), hit_cmp);
	return n;
}

static void
test_protocol(void)
{
	static Hit exact[NDOCS];
	static Hit part[NDOCS];
	double		total_dl = 0;
	float		avgdl;
	int			decided = 0;
	int			queries = 0;
	int			wrong = 0;

	for (uint32_t d = 0; d < NDOCS; d++)
	{
		dl[d] = 5 + rnd() % 300;
		total_dl += dl[d];
	}
	avgdl = (float) (total_dl / NDOCS);
	for (int t = 0; t < NTERMS; t++)
	{
		List	   *l = &lists[t];
		/* lengths from 10 to about half the documents */
		uint32_t	n = (uint32_t) (10 * pow(1000.0, (double) (rnd() % 1000) / 1000.0));
		float	   *scratch;
		uint32_t	(*pairs)[2];
		uint32_t   *dls;
		uint32_t	c = 0;

		if (n > NDOCS / 2)
			n = NDOCS / 2;
		l->docs = malloc(sizeof(uint32_t) * NDOCS);
		l->tfs = malloc(sizeof(uint32_t) * NDOCS);
		for (uint32_t d = 0; d < NDOCS; d++)
			if (rnd() % NDOCS < n)
			{
				l->docs[c] = d;
				l->tfs[c] = rnd_tf();
				c++;
			}
		if (c == 0)
		{
			l->docs[0] = rnd() % NDOCS;
			l->tfs[0] = 1;
			c = 1;
		}
		l->n = c;
		l->idf = (float) log(1.0 + (NDOCS - c + 0.5) / (c + 0.5));
		l->keep = NULL;
		l->rest.npairs = 0;
		if (c < 1000)
			continue;			/* short lists stay whole */
		l->keep = malloc(c);
		scratch = malloc(sizeof(float) * 2 * c);
		pairs = malloc(sizeof(uint32_t[2]) * c);
		dls = malloc(sizeof(uint32_t) * c);
		for (uint32_t i = 0; i < c; i++)
			dls[i] = dl[l->docs[i]];
		GpuirPruneSelect(l->tfs, dls, c, c / 8, K1, B, avgdl, l->keep, &l->rest, scratch, pairs);
		free(scratch);
		free(pairs);
		free(dls);
	}

	for (int qi = 0; qi < 1500; qi++)
	{
		int			qt[MAXQT];
		int			nq = 1 + rnd() % MAXQT;
		int			k = (qi % 3 == 0) ? 1 : (qi % 3 == 1) ? 10 : 100;
		int			kc = 2 * k + 16;
		int			ne,
					np,
					nc;
		double		rest = 0;
		int			any_pruned = 0;
		Hit			cand[2 * 100 + 16];
		float		last_partial;

		for (int t = 0; t < nq; t++)
		{
			qt[t] = rnd() % NTERMS;
			if (lists[qt[t]].keep != NULL)
			{
				rest += GpuirPruneRestBound(&lists[qt[t]].rest, lists[qt[t]].idf, K1, B, avgdl);
				any_pruned = 1;
			}
		}
		if (!any_pruned)
			continue;
		queries++;
		ne = score_all(qt, nq, 0, avgdl, exact);
		np = score_all(qt, nq, 1, avgdl, part);
		/* the device's candidates, rescored over the whole lists */
		nc = np < kc ? np : kc;
		last_partial = np > kc ? part[kc - 1].score : 0.0f;
		for (int i = 0; i < nc; i++)
		{
			float		s = 0.0f;

			for (int t = 0; t < nq; t++)
			{
				uint32_t	tf = tf_in(&lists[qt[t]], part[i].doc, 0);

				if (tf > 0)
					s += bm25(lists[qt[t]].idf, tf, part[i].doc, avgdl);
			}
			cand[i].doc = part[i].doc;
			cand[i].score = s;
		}
		qsort(cand, nc, sizeof(Hit), hit_cmp);
		if (GpuirPruneDecides(nc >= k, nc >= k ? cand[k - 1].score : 0.0f, last_partial,
							  rest, SLACK))
		{
			decided++;
			if (ne < k)
				wrong++;
			else
				for (int i = 0; i < k; i++)
					if (cand[i].doc != exact[i].doc ||
						memcmp(&cand[i].score, &exact[i].score, sizeof(float)) != 0)
					{
						wrong++;
						break;
					}
		}
	}
	check(wrong == 0, "every top-k GpuirPruneDecides accepts is the exact one");
	check(queries > 500 && decided > queries / 10,
		  "the pruned lists decide a share of the queries");
	printf("protocol: %d queries with pruned lists, %d decided (%.0f%%), %d wrong\n",
		   queries, decided, 100.0 * decided / (queries > 0 ? queries : 1), wrong);
	for (int t = 0; t < NTERMS; t++)
	{
		free(lists[t].docs);
		free(lists[t].tfs);
		free(lists[t].keep);
	}
}

int
main(void)
{
	test_select();
	test_protocol();
	printf("test_prune: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
