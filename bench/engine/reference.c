/*-------------------------------------------------------------------------
 *
 * reference.c
 *	  engine_bench: the exact CPU top-k the GPU results are checked against
 *	  (parallel over docID ranges), the plain one of
 *	  test/test_cuda_search.c it is self-checked against, and the
 *	  reference lists of the exactness check; steps 4 and 6 of the header
 *	  of bench/engine_bench.c.  Scores are the engine's BM25 expression
 *	  (GpuirBM25Expr through seg_bm25) summed from 0.0f in the query's term
 *	  order; ties by docID ascending (Res and the heap of test/ref_topk.h).
 *
 *-------------------------------------------------------------------------
 */
#include "engine.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REF_RANGE		65536		/* docIDs per work item of the CPU reference */

/* one query for the reference: its terms (all present for AND) */
typedef struct RefJob
{
	const Segment *s;
	const uint32_t *terms;		/* vocabulary terms with a list, query order */
	uint32_t	nt;
	int			and_mode;
	uint32_t	k;
	atomic_uint next;
	uint32_t	nranges;
	Res		  **heaps;
	uint32_t   *nheap;
	atomic_int	corrupt;
} RefJob;

static void
ref_worker(void *arg, int tid, int nt)
{
	RefJob	   *j = arg;
	const Segment *s = j->s;
	float	   *acc = xmalloc(sizeof(float) * REF_RANGE);
	uint16_t   *cnt = xcalloc(REF_RANGE, sizeof(uint16_t));
	Res		   *heap = xmalloc(sizeof(Res) * j->k);
	uint32_t	nh = 0;
	uint32_t	r;

	(void) nt;
	while ((r = atomic_fetch_add(&j->next, 1)) < j->nranges)
	{
		uint32_t	lo = r * REF_RANGE;
		uint32_t	hi = (uint64_t) lo + REF_RANGE < s->ndocs ? lo + REF_RANGE : s->ndocs;
		int			any = 0;

		for (uint32_t q = 0; q < j->nt; q++)
		{
			uint32_t	v = j->terms[q];
			uint32_t	fb = s->first_block[v];
			uint32_t	nb = seg_nblocks(s, v);
			uint32_t	a = 0,
						z = nb;
			float		idf = s->idf[v];
			int			hit = 0;

			/* first block whose last docID >= lo */
			while (a < z)
			{
				uint32_t	mid = a + (z - a) / 2;

				if (s->block_last[fb + mid] < lo)
					a = mid + 1;
				else
					z = mid;
			}
			for (uint32_t b = a; b < nb; b++)
			{
				uint32_t	dd[GPUIR_BLOCK_SIZE],
							tt[GPUIR_BLOCK_SIZE];
				uint32_t	bi = fb + b;
				uint32_t	prev = b == 0 ? GPUIR_FIRST_PREV_DOCID : s->block_last[bi - 1];
				int			n = GpuirCodecDecode(s->payload + s->block_offset[bi],
												 s->block_offset[bi + 1] - s->block_offset[bi],
												 prev, dd, tt);

				if (n < 1)
				{
					atomic_store(&j->corrupt, 1);
					break;
				}
				for (int i = 0; i < n; i++)
				{
					uint32_t	d = dd[i];

					if (d < lo)
						continue;
					if (d >= hi)
						break;
					if (cnt[d - lo] == 0)
						acc[d - lo] = 0.0f;
					acc[d - lo] = acc[d - lo] + seg_bm25(s, idf, tt[i], s->doclen[d]);
					cnt[d - lo]++;
					hit = 1;
				}
				if (s->block_last[bi] >= hi - 1)
					break;
			}
			any |= hit;
			if (j->and_mode && !hit)
				break;			/* no document of the range holds every term */
		}
		if (!any)
			continue;
		for (uint32_t i = 0; i < hi - lo; i++)
		{
			if (cnt[i] == 0)
				continue;
			if (!j->and_mode || cnt[i] == j->nt)
			{
				Res			x = {acc[i], lo + i};

				heap_offer(heap, &nh, j->k, x);
			}
			cnt[i] = 0;
		}
	}
	j->heaps[tid] = heap;
	j->nheap[tid] = nh;
	free(acc);
	free(cnt);
}

/* the query's terms that have a list; returns -1 when AND cannot match */
static int
present_terms(const Segment *s, const uint32_t *qt, uint32_t nt, int and_mode, uint32_t *out)
{
	int			n = 0;

	for (uint32_t i = 0; i < nt; i++)
	{
		if (qt[i] == NO_TERM || s->npost[qt[i]] == 0)
		{
			if (and_mode)
				return -1;
			continue;
		}
		out[n++] = qt[i];
	}
	return n;
}

/* exact top k (score desc, docID asc) of a query, parallel over docID ranges */
static uint32_t
ref_parallel(const Segment *s, const uint32_t *qt, uint32_t nt, int and_mode, uint32_t k,
			 int nthreads, Res *out)
{
	uint32_t	terms[MAX_QUERY_TERMS];
	int			np = present_terms(s, qt, nt, and_mode, terms);
	RefJob		j;
	Res		   *all;
	uint32_t	nall = 0;

	if (np <= 0 || s->ndocs == 0)
		return 0;
	memset(&j, 0, sizeof(j));
	j.s = s;
	j.terms = terms;
	j.nt = (uint32_t) np;
	j.and_mode = and_mode;
	j.k = k;
	atomic_init(&j.next, 0);
	atomic_init(&j.corrupt, 0);
	j.nranges = (uint32_t) (((uint64_t) s->ndocs + REF_RANGE - 1) / REF_RANGE);
	j.heaps = xcalloc((size_t) nthreads, sizeof(Res *));
	j.nheap = xcalloc((size_t) nthreads, sizeof(uint32_t));
	par_run(nthreads, ref_worker, &j);
	if (atomic_load(&j.corrupt))
		die("CPU reference: a posting block did not decode");
	all = xmalloc(sizeof(Res) * (size_t) k * nthreads);
	for (int t = 0; t < nthreads; t++)
	{
		memcpy(all + nall, j.heaps[t], sizeof(Res) * j.nheap[t]);
		nall += j.nheap[t];
		free(j.heaps[t]);
	}
	qsort(all, nall, sizeof(Res), res_cmp);
	if (nall > k)
		nall = k;
	memcpy(out, all, sizeof(Res) * nall);
	free(all);
	free(j.heaps);
	free(j.nheap);
	return nall;
}

/*
 * The plain reference of test/test_cuda_search.c (ref_query): whole lists
 * decoded in query term order, touched documents, one heap.
 */
typedef struct PlainRef
{
	float	   *acc;
	uint32_t   *cnt;
	uint32_t   *touched;
	Res		   *heap;
} PlainRef;

static uint32_t
ref_plain(PlainRef *r, const Segment *s, const uint32_t *qt, uint32_t nt, int and_mode,
		  uint32_t k, Res *out)
{
	uint32_t	terms[MAX_QUERY_TERMS];
	int			np = present_terms(s, qt, nt, and_mode, terms);
	uint32_t	ntouched = 0,
				n = 0;

	if (np <= 0)
		return 0;
	for (int q = 0; q < np; q++)
	{
		uint32_t	v = terms[q];
		uint32_t	fb = s->first_block[v];
		uint32_t	prev = GPUIR_FIRST_PREV_DOCID;

		for (uint32_t b = 0; b < seg_nblocks(s, v); b++)
		{
			uint32_t	dd[GPUIR_BLOCK_SIZE],
						tt[GPUIR_BLOCK_SIZE];
			uint32_t	bi = fb + b;
			int			m = GpuirCodecDecode(s->payload + s->block_offset[bi],
											 s->block_offset[bi + 1] - s->block_offset[bi],
											 prev, dd, tt);

			if (m < 1)
				die("plain reference: a posting block did not decode");
			for (int i = 0; i < m; i++)
			{
				uint32_t	d = dd[i];

				if (r->cnt[d] == 0)
				{
					r->touched[ntouched++] = d;
					r->acc[d] = 0.0f;
				}
				r->acc[d] = r->acc[d] + seg_bm25(s, s->idf[v], tt[i], s->doclen[d]);
				r->cnt[d]++;
			}
			prev = dd[m - 1];
		}
	}
	for (uint32_t i = 0; i < ntouched; i++)
	{
		uint32_t	d = r->touched[i];

		if (!and_mode || r->cnt[d] == (uint32_t) np)
		{
			Res			x = {r->acc[d], d};

			heap_offer(r->heap, &n, k, x);
		}
		r->cnt[d] = 0;
	}
	memcpy(out, r->heap, sizeof(Res) * n);
	qsort(out, n, sizeof(Res), res_cmp);
	return n;
}

/* ---------- CPU self-check (no GPU needed) ---------- */

int
selfcheck(const QLog *logs, int nlogs, const Segment *s, const Options *o, uint32_t kref)
{
	PlainRef	pr;
	Res		   *a = xmalloc(sizeof(Res) * kref);
	Res		   *b = xmalloc(sizeof(Res) * kref);
	int			bad = 0,
				n = 0;
	double		t0 = now_s();

	if (o->selfcheck == 0)
		return 0;
	pr.acc = xmalloc(sizeof(float) * s->ndocs);
	pr.cnt = xcalloc(s->ndocs, sizeof(uint32_t));
	pr.touched = xmalloc(sizeof(uint32_t) * s->ndocs);
	pr.heap = xmalloc(sizeof(Res) * kref);
	for (int li = 0; li < nlogs; li++)
	{
		const QLog *l = &logs[li];

		for (uint32_t q = 0; q < l->nq && q < o->selfcheck; q++)
		{
			for (int am = 0; am < 2; am++)
			{
				const uint32_t *qt = l->qterm + l->qoff[q];
				uint32_t	nt = l->qoff[q + 1] - l->qoff[q];
				uint32_t	na = ref_parallel(s, qt, nt, am, kref, o->threads, a);
				uint32_t	nb = ref_plain(&pr, s, qt, nt, am, kref, b);

				n++;
				if (na != nb || memcmp(a, b, sizeof(Res) * na) != 0)
				{
					bad++;
					printf("SELF-CHECK MISMATCH: log %s query %s (%s): parallel %u results, "
						   "plain %u\n", l->name, l->qid[q], am ? "and" : "or", na, nb);
				}
			}
		}
	}
	printf("self-check: parallel CPU reference = plain CPU reference (top %u, AND and OR) on %d "
		   "queries: %s (%.2f s)\n", kref, n, bad ? "FAILED" : "ok", now_s() - t0);
	free(pr.acc);
	free(pr.cnt);
	free(pr.touched);
	free(pr.heap);
	free(a);
	free(b);
	return bad;
}

/* ---------- reference lists of the exactness check ---------- */

void
logref_compute(LogRef *r, const QLog *l, const Segment *s, const Options *o, uint32_t kref,
			   const int need[2])
{
	r->n = l->nq < o->check ? l->nq : o->check;
	for (int am = 0; am < 2; am++)
	{
		double		t0 = now_s();
		uint64_t	post = 0;

		r->res[am] = xcalloc(r->n ? r->n : 1, sizeof(Res *));
		r->cnt[am] = xcalloc(r->n ? r->n : 1, sizeof(uint32_t));
		if (!need[am])
			continue;
		for (uint32_t q = 0; q < r->n; q++)
		{
			const uint32_t *qt = l->qterm + l->qoff[q];
			uint32_t	nt = l->qoff[q + 1] - l->qoff[q];

			for (uint32_t i = 0; i < nt; i++)
				if (qt[i] != NO_TERM)
					post += s->npost[qt[i]];
			r->res[am][q] = xmalloc(sizeof(Res) * kref);
			r->cnt[am][q] = ref_parallel(s, qt, nt, am, kref, o->threads, r->res[am][q]);
		}
		if (r->n > 0)
			printf("CPU reference, %s %s: %u queries, top %u, %.2f s (%.1f queries/s, "
				   "%.0f M postings/s on %d threads)\n", l->name, am ? "AND" : "OR",
				   r->n, kref, now_s() - t0, r->n / (now_s() - t0),
				   post / 1e6 / (now_s() - t0), o->threads);
	}
	fflush(stdout);
}

LogRef *
logrefs_compute(const QLog *logs, int nlogs, const Segment *s, const Options *o, uint32_t kref)
{
	LogRef	   *refs = xcalloc(nlogs > 0 ? (size_t) nlogs : 1, sizeof(LogRef));
	int			need[2] = {0, 0};

	/* AND's reference for AND; OR's for OR and BMW (the same top-k) */
	for (int m = 0; m < o->nmodes; m++)
		need[o->modes[m] == GPUIR_CUDA_MODE_AND] = 1;
	for (int li = 0; li < nlogs; li++)
		logref_compute(&refs[li], &logs[li], s, o, kref, need);
	return refs;
}

void
logrefs_free(LogRef *refs, int nlogs)
{
	if (refs == NULL)
		return;
	for (int li = 0; li < nlogs; li++)
		logref_free(&refs[li]);
	free(refs);
}

void
print_exactness(const char *who, uint64_t checked, uint64_t bad)
{
	if (bad)
		printf("%s: FAILED (%" PRIu64 " of %" PRIu64 " checked query results mismatching)\n",
			   who, bad, checked);
	else if (checked == 0)
		printf("%s: no query checked (--check 0)\n", who);
	else
		printf("%s: every checked query identical to the CPU reference (docIDs and score bits) "
			   "(%" PRIu64 " query results checked, 0 mismatching)\n", who, checked);
	fflush(stdout);
}

int
logref_diff(const LogRef *r, int am, uint32_t q, uint32_t k, uint32_t count,
			const uint32_t *docs, const float *scores)
{
	const Res  *ref = r->res[am][q];

	if (count != logref_count(r, am, q, k))
		return -2;
	for (uint32_t i = 0; i < count; i++)
		if (docs[i] != ref[i].doc || memcmp(&scores[i], &ref[i].score, sizeof(float)) != 0)
			return (int) i;
	return -1;
}

void
logref_free(LogRef *r)
{
	for (int am = 0; am < 2; am++)
	{
		for (uint32_t q = 0; q < r->n; q++)
			free(r->res[am] ? r->res[am][q] : NULL);
		free(r->res[am]);
		free(r->cnt[am]);
	}
}

