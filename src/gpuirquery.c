/*-------------------------------------------------------------------------
 *
 * gpuirquery.c
 *	  The search entry points (GpuirSearch, GpuirSearchBatch,
 *	  GpuirQueryTerms): a query is prepared by the CPU engine
 *	  (gpuirengine.c), routed to the GPU service or the CPU engine
 *	  (gpuir.device; auto: gpuirroute.c's cost model), and the GPU's per-segment
 *	  candidates are merged into an exact top-k here, or the CPU answers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "gpuirengine.h"
#include "gpuirprune.h"
#include "gpuirservice.h"
#include "../cuda/gpuir_cuda.h"

/* ---------- the GPU path ---------- */

/* candidates asked of the GPU per segment: room for invisible rows */
static uint32
gpu_k(int k)
{
	return (uint32) Min(GPUIR_CUDA_MAX_K, 2 * k + 16);
}

/* query_postings: the postings q's lists hold, over all segments */
static uint64
query_postings(const GpuirQuery *q)
{
	uint64		postings = 0;

	for (uint32 i = 0; i < q->meta.nsegments * q->nterms; i++)
		postings += q->entries[i].npostings;
	return postings;
}

/*
 * gpu_wanted: should q go to the GPU service?  gpuir.device = cpu never;
 * gpu whenever the service runs; auto as the cost model says
 * (gpuirroute.c: the device expected to answer first, from the times of
 * recent queries of the same class on each).  k above GPUIR_CUDA_MAX_K, a
 * page after a cursor (GpuirQueryInput.after) and temporary indexes (local
 * buffers the worker cannot read) stay on the CPU.  *pred receives auto's
 * prediction for the device chosen (what -1: none).
 */
static bool
gpu_wanted(GpuirQuery *q, GpuirMode mode, GpuirRoutePrediction *pred)
{
	pred->what = -1;
	if (gpuir_device == GPUIR_DEVICE_CPU || !q->ready || q->meta.nsegments == 0 ||
		q->k > GPUIR_CUDA_MAX_K || q->after_set || RelationUsesLocalBuffers(q->index))
		return false;
	if (gpuir_device == GPUIR_DEVICE_AUTO)
		return GpuirServiceReady() && GpuirRouteToGpu(mode, q->k, query_postings(q), pred);
	return true;
}

static void
gpu_describe(GpuirQuery *q, GpuirMode mode, GpuirGpuQuery *g)
{
	float4	   *idf = palloc(sizeof(float4) * q->nterms);

	for (int t = 0; t < q->nterms; t++)
		idf[t] = q->terms[t].idf;
	memset(g, 0, sizeof(*g));
	g->nterms = q->nterms;
	g->idf = idf;
	g->entries = q->entries;
	g->k = gpu_k(q->k);
	g->tids_wanted = (uint32) q->k;
	/* and_or's disjunction, when needed, runs on the CPU (run_queries) */
	if (mode == GPUIR_MODE_AND || mode == GPUIR_MODE_AND_OR)
		g->mode = GPUIR_CUDA_MODE_AND;
	else if (mode == GPUIR_MODE_OR)
		g->mode = GPUIR_CUDA_MODE_OR;
	else
		g->mode = GPUIR_CUDA_MODE_BMW;	/* wand and bmw: block-max pruning */
}

/*
 * gpu_merge: the top-k of q from the GPU's per-segment candidates (checked
 * against the deleted bitmaps and the snapshot by GpuirQueryConsider) and the insert
 * buffer.  Returns false when the result may not be exact: a segment whose
 * candidates were cut at g->k could hold a better visible document than the
 * k-th result (src/README, "GPU service"), or a segment searched over
 * pruned lists (g->rests[s] > 0; gpuirprune.h) whose candidates, rescored
 * here over the whole lists (GpuirQueryScoreDocs), do not decide the top-k
 * (GpuirPruneDecides: a document it did not return may still reach it).
 */
static bool
gpu_merge(GpuirQuery *q, GpuirGpuQuery *g, GpuirMode mode)
{
	float4		cut_score[GPUIR_MAX_SEGMENTS];
	ItemPointerData cut_tid[GPUIR_MAX_SEGMENTS];
	bool		cut[GPUIR_MAX_SEGMENTS];
	bool		pruned = false;
	bool		tids_open;

	GpuirQueryResetTopk(q);
	for (uint32 s = 0; s < q->meta.nsegments; s++)
	{
		cut[s] = false;
		if (g->rests[s] > 0.0f)
		{
			GpuirQueryScoreDocs(q, (int) s, &g->docids[s * g->k], (int) g->counts[s]);
			continue;
		}
		q->seg = &q->meta.segments[s];
		tids_open = false;
		GpuirStreamReaderInit(&q->del, q->index, q->seg, GPUIR_S_DELETED);
		for (uint32 i = 0; i < g->counts[s]; i++)
		{
			uint32		doc = g->docids[s * g->k + i];
			float4		score = g->scores[s * g->k + i];
			ItemPointerData tid;

			GpuirQueryTick(q);
			if (doc >= q->seg->ndocs)
				elog(ERROR, "gpuir gpu service returned docID %u of a segment of %u documents",
					 doc, q->seg->ndocs);

			/*
			 * The candidates come best first.  Once k are kept, one that
			 * scores below the k-th, and every later one, would fail
			 * GpuirQueryConsider's first test (the k-th only rises), so
			 * their TIDs, a page read each past those the worker gave
			 * (GpuirGpuSearch), are not read.  The segment's
			 * cut test below needs none of them: its last candidate scores
			 * below the final k-th too, so it cannot rank above it.
			 */
			if (GpuirQueryFull(q) && score < q->kth.score)
				break;
			if (i < g->ntids[s])
				tid = g->tids[s * g->k + i];
			else
			{
				if (!tids_open)
					GpuirStreamReaderInit(&q->tids, q->index, q->seg, GPUIR_S_TIDS);
				tids_open = true;
				GpuirStreamRead(&q->tids, doc * sizeof(ItemPointerData), &tid, sizeof(tid));
			}
			GpuirQueryConsider(q, &tid, score, doc, true);
			if (i + 1 == g->k)
			{
				cut[s] = true;
				cut_score[s] = score;
				cut_tid[s] = tid;
			}
		}
		if (tids_open)
			GpuirStreamReaderEnd(&q->tids);
		GpuirStreamReaderEnd(&q->del);
	}
	GpuirQueryRunBuffer(q, g->mode == GPUIR_CUDA_MODE_AND ? GPUIR_MODE_AND : GPUIR_MODE_OR);
	/* the tests below take the exact k-th */
	GpuirQuerySettle(q);

	for (uint32 s = 0; s < q->meta.nsegments; s++)
	{
		if (cut[s] && (!GpuirQueryFull(q) ||
					   GpuirResultBetter(cut_score[s], &cut_tid[s],
										 q->kth.score, &q->kth.tid)))
			return false;
		if (g->rests[s] > 0.0f)
		{
			pruned = true;
			if (!GpuirPruneDecides(GpuirQueryFull(q), GpuirQueryThreshold(q),
								   g->counts[s] == g->k ? g->scores[s * g->k + g->k - 1] : 0.0f,
								   (double) g->rests[s], GPUIR_BOUND_SLACK))
			{
				GpuirServiceCountPruned(false);
				return false;
			}
		}
	}
	if (pruned)
		GpuirServiceCountPruned(true);
	return true;
}

/*
 * run_cpu_observed: answer q on the CPU engine, counted among the CPU
 * engine's runs (auto's CPU slots) and, under gpuir.device = auto, its CPU
 * time folded into auto's cost model (which learns from the queries it
 * routes; pred: gpu_wanted's, compared with the time).  Both exist only
 * with the GPU service; without it, or under another device setting, no
 * clock is read.
 */
static void
run_cpu_observed(GpuirQuery *q, GpuirMode mode, const GpuirRoutePrediction *pred)
{
	double		cpu0 = 0;
	bool		observe = GpuirService != NULL && gpuir_device == GPUIR_DEVICE_AUTO;

	if (GpuirService == NULL)
	{
		GpuirQueryRunCpu(q, mode);
		return;
	}
	if (observe)
		cpu0 = GpuirRouteCpuTime();
	GpuirRouteCpuBegin();
	GpuirQueryRunCpu(q, mode);
	GpuirRouteCpuEnd();
	GpuirServiceCount(false, false);
	if (observe)
		GpuirRouteObserve(mode, q->k, query_postings(q), GPUIR_ROUTE_CPU,
						  GpuirRouteCpuTime() - cpu0, pred);
}

/*
 * same_request: may prepared queries a and b travel in one request to the
 * GPU service?  A request carries one segment directory and one N and
 * avgdl (the first query's, GpuirGpuSearch), and each query of a batch read
 * the metapage itself (GpuirQueryPrepare): a merge, compaction or VACUUM
 * between two of them (a new generation) changes the segments under the
 * same numbers, and inserts N and avgdl.
 */
static bool
same_request(const GpuirQuery *a, const GpuirQuery *b)
{
	return a->meta.generation == b->meta.generation &&
		a->meta.nsegments == b->meta.nsegments &&
		a->sc.N == b->sc.N && a->sc.avgdl == b->sc.avgdl &&
		a->sc.k1 == b->sc.k1 && a->sc.b == b->sc.b;
}

/*
 * run_queries_counted: answer the prepared queries qs[0..n) of one index, those the
 * GPU should take in one request to the GPU service, the others and every
 * fallback on the CPU.  A query the GPU should take whose metapage differs
 * from the request's first (same_request: the index changed while the
 * batch was prepared) is answered by the CPU.  A fallback is logged once
 * per request.
 */
static void
run_queries_counted(GpuirQuery **qs, int n, GpuirMode mode)
{
	GpuirGpuQuery *g = palloc0(sizeof(GpuirGpuQuery) * Max(n, 1));
	GpuirQuery **gq = palloc(sizeof(GpuirQuery *) * Max(n, 1));
	GpuirRoutePrediction *gpred = palloc(sizeof(GpuirRoutePrediction) * Max(n, 1));	/* auto's, of gq */
	int			ng = 0;
	bool		sent = false;
	bool		answered = false;
	bool		observe = gpuir_device == GPUIR_DEVICE_AUTO;
	TimestampTz t0 = 0;
	double		cpu0 = 0;

	/* a query the CPU answers uses gpred[ng] only until the next one is routed */
	for (int i = 0; i < n; i++)
	{
		if (gpu_wanted(qs[i], mode, &gpred[ng]) && (ng == 0 || same_request(gq[0], qs[i])))
		{
			gpu_describe(qs[i], mode, &g[ng]);
			gq[ng++] = qs[i];
		}
		else if (qs[i]->ready)
			run_cpu_observed(qs[i], mode, &gpred[ng]);
	}
	if (ng == 0)
		return;
	if (observe)
	{
		t0 = GetCurrentTimestamp();
		cpu0 = GpuirRouteCpuTime();
	}

	if (GpuirServiceReady())
	{
		char		why[256];

		sent = true;
		answered = GpuirGpuSearch(gq[0]->index, &gq[0]->meta, &gq[0]->sc, g, ng,
								  why, sizeof(why));
		if (!answered)
			ereport(LOG,
					(errmsg("gpuir: %d queries answered by the CPU: %s", ng, why)));
	}
	else if (gpuir_device == GPUIR_DEVICE_GPU && GpuirService != NULL)
	{
		/* while the worker is away (no GPU, restarting), once per 10 s per session */
		static TimestampTz last_logged = 0;
		TimestampTz now = GetCurrentTimestamp();

		if (TimestampDifferenceExceeds(last_logged, now, 10000))
		{
			last_logged = now;
			ereport(LOG,
					(errmsg("gpuir: %d queries answered by the CPU: the gpu service is not ready", ng),
					 errdetail("Further such messages of this session are suppressed for 10 seconds.")));
		}
	}

	for (int i = 0; i < ng; i++)
	{
		GpuirQuery *q = gq[i];

		if (answered && gpu_merge(q, &g[i], mode))
		{
			/* and_or: the disjunction when the conjunction is short */
			if (mode == GPUIR_MODE_AND_OR && !GpuirQueryFull(q))
				GpuirQueryRunAll(q, GPUIR_MODE_BMW);
			GpuirServiceCount(true, false);
			GpuirLastQueryStats.gpu_queries++;
		}
		else
		{
			GpuirQueryRunCpu(q, mode);
			GpuirServiceCount(false, GpuirService != NULL);
		}
	}

	/*
	 * under auto, the cost model's GPU times of each query sent to the
	 * service: the request's share, the merges and any fallback (what
	 * choosing the GPU cost), in wall time and in this backend's CPU time
	 */
	if (sent && observe)
	{
		double		us = (double) (GetCurrentTimestamp() - t0) / ng;
		double		cpu_us = (GpuirRouteCpuTime() - cpu0) / ng;

		for (int i = 0; i < ng; i++)
		{
			uint64		postings = query_postings(gq[i]);

			GpuirRouteObserve(mode, gq[i]->k, postings, GPUIR_ROUTE_GPU, us, &gpred[i]);
			GpuirRouteObserve(mode, gq[i]->k, postings, GPUIR_ROUTE_GPU_CPU, cpu_us, &gpred[i]);
		}
	}
}

/*
 * run_queries: run_queries_counted, the backend counted among those in a
 * gpuir search meanwhile (auto's measure of the cores' load)
 */
static void
run_queries(GpuirQuery **qs, int n, GpuirMode mode)
{
	GpuirRouteActiveBegin();
	PG_TRY();
	{
		run_queries_counted(qs, n, mode);
		/* an invisible row among a deferred top-k: that query again, checked */
		for (int i = 0; i < n; i++)
		{
			CHECK_FOR_INTERRUPTS();
			if (!GpuirQueryCheckVisible(qs[i]))
				GpuirQueryRunCpu(qs[i], mode);
		}
	}
	PG_FINALLY();
	{
		GpuirRouteActiveEnd();
	}
	PG_END_TRY();
}

/*
 * GpuirSearch: the top-k documents of index for in (GpuirQueryInput: a bag
 * of words, or a tsquery's words with its row filter), best first (score
 * descending, heap TID ascending), visible to snapshot, not deleted and
 * passing in's filter.  The score is BM25 over the query's distinct
 * lexemes.  k is 1..GPUIR_MAX_K.  Returns the number of results (0..k) and
 * *results, palloc'd in the caller's memory context.  Runs on the GPU
 * service or the CPU engine (gpuir.device; same results).  Fills
 * GpuirLastQueryStats (the CPU engine's work, and whether the GPU answered).
 * Raises ERRCODE_INDEX_CORRUPTED on corrupt pages and 54000 for more than
 * GPUIR_MAX_QUERY_TERMS distinct query lexemes (prefixes expanded).
 */
int
GpuirSearch(Relation index, Relation heap, Snapshot snapshot,
			const GpuirQueryInput *in, int k, GpuirMode mode,
			GpuirResult **results)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(caller, "gpuir query", ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	GpuirQuery	q;
	GpuirQuery *qp = &q;
	int			n;

	memset(&GpuirLastQueryStats, 0, sizeof(GpuirLastQueryStats));
	GpuirQueryPrepare(&q, index, heap, snapshot, in, k);
	run_queries(&qp, 1, mode);
	n = GpuirQueryFinish(&q, caller, results);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return n;
}

/*
 * GPUIR_BATCH_CHUNK: queries of a batch prepared and run together.  Each
 * prepared query holds its metapage copy, a table fetch and a slot (about
 * 8 kB), so a batch runs in chunks: memory stays bounded for any batch
 * size (200,000 queries at once needed 1.5 GB, past palloc's 1 GB limit).
 * A chunk is one request to the GPU service (which takes a request of more
 * than gpuir.max_batch queries into a batch of its own).
 */
#ifndef GPUIR_BATCH_CHUNK		/* -DGPUIR_BATCH_CHUNK=N: another size, to measure */
#define GPUIR_BATCH_CHUNK 4096
#endif

/*
 * GpuirSearchBatch: GpuirSearch for the queries in[0..nq) of one index,
 * sent to the GPU service as one request per GPUIR_BATCH_CHUNK queries (the
 * service batches it with the requests of other backends).  results[i] and
 * counts[i] receive query i's answer, palloc'd in the caller's memory
 * context.
 */
void
GpuirSearchBatch(Relation index, Relation heap, Snapshot snapshot,
				 const GpuirQueryInput *in, int nq, int k, GpuirMode mode,
				 GpuirResult **results, int *counts)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(caller, "gpuir query batch",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	int			chunk = Min(Max(nq, 1), GPUIR_BATCH_CHUNK);
	GpuirQuery *qs = palloc(sizeof(GpuirQuery) * chunk);	/* GpuirQueryPrepare fills each */
	GpuirQuery **qp = palloc(sizeof(GpuirQuery *) * chunk);
	MemoryContext run = AllocSetContextCreate(cxt, "gpuir query batch chunk",
											  ALLOCSET_DEFAULT_SIZES);

	for (int i = 0; i < chunk; i++)
		qp[i] = &qs[i];
	memset(&GpuirLastQueryStats, 0, sizeof(GpuirLastQueryStats));
	for (int c0 = 0; c0 < nq; c0 += chunk)
	{
		int			n = Min(chunk, nq - c0);

		MemoryContextSwitchTo(run);
		for (int i = 0; i < n; i++)
		{
			CHECK_FOR_INTERRUPTS();
			GpuirQueryPrepare(&qs[i], index, heap, snapshot, &in[c0 + i], k);
		}
		run_queries(qp, n, mode);
		for (int i = 0; i < n; i++)
		{
			/* each one fetches its rows from the table: a batch's can take long */
			CHECK_FOR_INTERRUPTS();
			counts[c0 + i] = GpuirQueryFinish(&qs[i], caller, &results[c0 + i]);
		}
		MemoryContextSwitchTo(cxt);
		MemoryContextReset(run);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/*
 * GpuirQueryTerms: the distinct lexemes of query for index, in term order,
 * with their global df (all segments and the insert buffer, rows removed by
 * VACUUM excluded) and idf; *lexemes, *dfs and *idfs are palloc'd in the
 * caller's memory context.  Returns the number of lexemes.
 */
int
GpuirQueryTerms(Relation index, Relation heap, const char *query, int querylen,
				char ***lexemes, int64 **dfs, float4 **idfs)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(caller, "gpuir query terms",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	GpuirQuery	q;
	GpuirQueryInput in;
	int			n;

	GpuirQueryInputText(&in, query, querylen);
	GpuirQueryPrepare(&q, index, heap, GetActiveSnapshot(), &in, 1);
	n = q.nterms;
	*lexemes = MemoryContextAlloc(caller, sizeof(char *) * Max(n, 1));
	*dfs = MemoryContextAlloc(caller, sizeof(int64) * Max(n, 1));
	*idfs = MemoryContextAlloc(caller, sizeof(float4) * Max(n, 1));
	for (int t = 0; t < n; t++)
	{
		(*lexemes)[t] = MemoryContextAlloc(caller, q.terms[t].len + 1);
		memcpy((*lexemes)[t], q.terms[t].lexeme, q.terms[t].len);
		(*lexemes)[t][q.terms[t].len] = '\0';
		(*dfs)[t] = (int64) q.terms[t].df;
		(*idfs)[t] = q.terms[t].idf;
	}
	if (q.ready)
	{
		table_index_fetch_end(q.fetch);
		ExecDropSingleTupleTableSlot(q.slot);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return n;
}
