/*-------------------------------------------------------------------------
 *
 * gpuirscan.c
 *	  Index scans of gpuir: ORDER BY col <@> 'query' LIMIT k.
 *
 * The executor does not tell an index scan its LIMIT, so an ExecutorStart
 * hook finds each gpuir scan whose parent is a Limit node and which has no
 * filter of its own (every row it returns counts towards the LIMIT), and
 * notes count + offset as the scan's first k (limit_hints: keyed by the
 * scan node's ORDER BY key array, which the executor passes to amrescan;
 * forgotten when the query's executor state goes).  Any other scan computes
 * the top GPUIR_SCAN_INITIAL_K.  A scan asked for more rows than its k
 * computes the top k * GPUIR_SCAN_GROWTH (10, 100, 1000, ...: a top-k costs
 * far less than k times a top-1) and returns the results after those
 * already returned (same snapshot, same total order, so the earlier results
 * are a prefix).  The hint only saves restarts: the rows are the same.  The
 * ORDER BY argument is text (a bag of words, operator strategy 1) or a
 * tsquery (strategy 2: only its matching rows, gpuirtsquery.c).  Only
 * documents holding at least one query term are returned.  Past
 * GPUIR_MAX_K (a selective filter above the scan), it goes on in pages of
 * GPUIR_MAX_K: each one the top GPUIR_MAX_K of the results ranked after the
 * last one returned (GpuirQueryInput.after), so the scan returns every
 * matching row, best first, with memory bounded by a page.  The scan's
 * score source (gpuirremember.c) lets the <@> operator give each returned
 * row the score this scan computed for it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "nodes/nodeFuncs.h"
#include "pgstat.h"
#include "utils/float.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"

#include "gpuir.h"

#define GPUIR_SCAN_INITIAL_K	10
#define GPUIR_SCAN_GROWTH		10

typedef struct GpuirScanOpaqueData
{
	MemoryContext cxt;			/* holds results */
	GpuirScoreSource *src;		/* the <@> values of the returned rows */
	GpuirResult *results;
	int			nresults;
	int			next;			/* next result to return */
	int			k;				/* k of the last computation, 0 = none */
	int			first_k;		/* k of the first computation */
	bool		exhausted;		/* fewer than k results: no more exist */
	GpuirScanStats stats;		/* over every search and rescan (EXPLAIN) */
} GpuirScanOpaqueData;

typedef GpuirScanOpaqueData *GpuirScanOpaque;

/* ---------- LIMIT hints ---------- */

/* a gpuir scan node under a Limit: its ORDER BY keys and the rows the Limit takes */
typedef struct LimitHint
{
	ScanKey		orderbys;		/* the IndexScanState's iss_OrderByKeys */
	int			k;
	struct LimitHint *next;
} LimitHint;

static LimitHint *limit_hints = NULL;
static ExecutorStart_hook_type prev_ExecutorStart_hook = NULL;

/* limit_hints_forget: the executor state of hints' query goes (memory context callback) */
static void
limit_hints_forget(void *arg)
{
	for (LimitHint **h = &limit_hints; *h != NULL;)
	{
		if ((*h)->orderbys == (ScanKey) arg)
			*h = (*h)->next;	/* the entry's memory goes with the context */
		else
			h = &(*h)->next;
	}
}

/*
 * limit_value: the value of a Limit node's count or offset expression expr
 * (state e), computed as the executor will when it is a constant or a
 * query parameter; -1 when it is NULL, negative or something else (a
 * subquery's value is not computed ahead of the executor)
 */
static int64
limit_value(Node *expr, ExprState *e, ExprContext *econtext)
{
	bool		isnull;
	Datum		v;

	if (expr == NULL)
		return 0;
	if (e == NULL || econtext == NULL ||
		!(IsA(expr, Const) || (IsA(expr, Param) && ((Param *) expr)->paramkind == PARAM_EXTERN)))
		return -1;
	v = ExecEvalExprSwitchContext(e, econtext, &isnull);
	if (isnull || DatumGetInt64(v) < 0)
		return -1;
	return DatumGetInt64(v);
}

/* find_limited_scans: note a hint for each gpuir scan directly under a Limit in ps */
static bool
find_limited_scans(PlanState *ps, void *context)
{
	EState	   *estate = (EState *) context;

	if (ps == NULL)
		return false;
	if (IsA(ps, LimitState) && outerPlanState(ps) != NULL &&
		IsA(outerPlanState(ps), IndexScanState))
	{
		LimitState *ls = (LimitState *) ps;
		IndexScanState *is = (IndexScanState *) outerPlanState(ps);
		Limit	   *plan = (Limit *) ls->ps.plan;
		int64		count = limit_value(plan->limitCount, ls->limitCount, ls->ps.ps_ExprContext);
		int64		offset = limit_value(plan->limitOffset, ls->limitOffset, ls->ps.ps_ExprContext);

		if (ls->limitCount != NULL && count > 0 && offset >= 0 &&
			is->iss_NumOrderByKeys > 0 && is->ss.ps.plan->qual == NIL &&
			is->iss_RelationDesc != NULL && GpuirIsGpuirIndex(is->iss_RelationDesc))
		{
			MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
			LimitHint  *h = palloc(sizeof(LimitHint));
			MemoryContextCallback *cb = palloc(sizeof(MemoryContextCallback));

			h->orderbys = is->iss_OrderByKeys;
			h->k = (int) Min(Min(count, (int64) GPUIR_MAX_K) + Min(offset, (int64) GPUIR_MAX_K),
							 (int64) GPUIR_MAX_K);
			h->next = limit_hints;
			limit_hints = h;
			cb->func = limit_hints_forget;
			cb->arg = h->orderbys;
			MemoryContextRegisterResetCallback(estate->es_query_cxt, cb);
			MemoryContextSwitchTo(old);
		}
	}
	return planstate_tree_walker(ps, find_limited_scans, context);
}

/* limit_hints_executor_start: ExecutorStart hook */
static void
limit_hints_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (prev_ExecutorStart_hook)
		prev_ExecutorStart_hook(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) == 0 && queryDesc->planstate != NULL)
		(void) find_limited_scans(queryDesc->planstate, queryDesc->estate);
}

/* GpuirScanInit: _PG_init: install the ExecutorStart hook of LIMIT hints */
void
GpuirScanInit(void)
{
	prev_ExecutorStart_hook = ExecutorStart_hook;
	ExecutorStart_hook = limit_hints_executor_start;
}

/* limit_hint: the first k for a scan given orderbys by amrescan */
static int
limit_hint(ScanKey orderbys)
{
	for (LimitHint *h = limit_hints; h != NULL; h = h->next)
		if (h->orderbys == orderbys)
			return h->k;
	return GPUIR_SCAN_INITIAL_K;
}

IndexScanDesc
gpuirbeginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	GpuirScanOpaque so = palloc0(sizeof(GpuirScanOpaqueData));

	so->cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir scan",
									ALLOCSET_DEFAULT_SIZES);
	so->src = GpuirScoreSourceCreate();
	so->first_k = GPUIR_SCAN_INITIAL_K;
	scan->opaque = so;
	/* the AM provides the ORDER BY value arrays */
	scan->xs_orderbyvals = palloc0(sizeof(Datum) * Max(norderbys, 1));
	scan->xs_orderbynulls = palloc(sizeof(bool) * Max(norderbys, 1));
	for (int i = 0; i < Max(norderbys, 1); i++)
		scan->xs_orderbynulls[i] = true;
	return scan;
}

void
gpuirrescan(IndexScanDesc scan, ScanKey scankey, int nscankeys,
			ScanKey orderbys, int norderbys)
{
	GpuirScanOpaque so = (GpuirScanOpaque) scan->opaque;

	if (orderbys && scan->numberOfOrderBys > 0)
		memmove(scan->orderByData, orderbys, scan->numberOfOrderBys * sizeof(ScanKeyData));
	so->first_k = orderbys ? limit_hint(orderbys) : GPUIR_SCAN_INITIAL_K;
	MemoryContextReset(so->cxt);
	GpuirScoreSourceEnd(so->src);	/* until the next query's first computation */
	so->results = NULL;
	so->nresults = 0;
	so->next = 0;
	so->k = 0;
	so->exhausted = false;
}

/*
 * gpuirgettuple: the next row in BM25 order.  Raises 0A000 for a scan
 * without an ORDER BY col <@> query clause.
 */
bool
gpuirgettuple(IndexScanDesc scan, ScanDirection dir)
{
	GpuirScanOpaque so = (GpuirScanOpaque) scan->opaque;
	GpuirResult *r;

	if (scan->numberOfOrderBys == 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuir index scans need ORDER BY column <@> query")));
	if (scan->orderByData[0].sk_flags & SK_ISNULL)
		return false;

	if (so->next >= so->nresults && !so->exhausted)
	{
		Datum		arg = scan->orderByData[0].sk_argument;
		int			k = so->k == 0 ? so->first_k :
			(int) Min((int64) so->k * GPUIR_SCAN_GROWTH, GPUIR_MAX_K);
		GpuirResult last;
		bool		page = false;
		MemoryContext old;
		GpuirQueryInput textin;
		GpuirQueryInput scan_in;	/* in, as this scan searches it */
		const GpuirQueryInput *in;
		GpuirMode	mode = GPUIR_MODE_BMW;
		GpuirTsQueryPlan *plan = NULL;
		const char *key;
		int			keylen;

		/* GPUIR_MAX_K results returned: the next page, after the last one */
		if (so->k == GPUIR_MAX_K)
		{
			Assert(so->nresults == GPUIR_MAX_K);
			last = so->results[so->nresults - 1];
			page = true;
			GpuirScoreSourcePage(so->src);	/* before the results go */
			so->next = 0;
			CHECK_FOR_INTERRUPTS();
		}
		MemoryContextReset(so->cxt);
		old = MemoryContextSwitchTo(so->cxt);
		if (scan->orderByData[0].sk_strategy == GPUIR_STRATEGY_TSQUERY)
		{
			TSQuery		query = DatumGetTSQuery(arg);

			plan = GpuirTsQueryPlanMake(query, scan->indexRelation, mode, "bmw");
			in = GpuirTsQueryPlanInput(plan, &mode);
			key = GpuirTsQueryKey(query, &keylen);
		}
		else
		{
			text	   *query = DatumGetTextPP(arg);

			GpuirQueryInputText(&textin, VARDATA_ANY(query), VARSIZE_ANY_EXHDR(query));
			in = &textin;
			key = VARDATA_ANY(query);
			keylen = VARSIZE_ANY_EXHDR(query);
		}
		if (so->k == 0)
		{
			if (!gpuir_rank_under_rls &&
				check_enable_rls(RelationGetRelid(scan->heapRelation), InvalidOid, true) == RLS_ENABLED)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("gpuir does not rank table \"%s\" under its row-level security policies",
								RelationGetRelationName(scan->heapRelation)),
						 errdetail("gpuir.rank_under_rls is off: BM25 scores use statistics of all rows, including those the policies hide.")));
			pgstat_count_index_scan(scan->indexRelation);	/* rows: index_getnext_tid */
			/* a restart returns the same rows first: the source keeps what it hashed */
			GpuirScoreSourceSet(so->src, scan, key, keylen);
		}
		if (in != NULL)
		{
			/*
			 * The executor fetches every returned row with the scan's snapshot
			 * and skips invisible ones: the search need not fetch them too.
			 * Every search of the scan (restarts, pages) ranks all live
			 * entries, so a restart's results start with those returned.
			 */
			scan_in = *in;
			scan_in.visible_by_caller = true;
			if (page)
				scan_in.after = &last;
			in = &scan_in;
		}
		so->nresults = in == NULL ? 0 :
			GpuirSearch(scan->indexRelation, scan->heapRelation, scan->xs_snapshot,
						in, k, mode, &so->results);
		if (plan != NULL)
			GpuirTsQueryPlanEnd(plan);
		MemoryContextSwitchTo(old);
		/* a page must start after the last row of the one before, or the scan would loop */
		if (page && so->nresults > 0 &&
			!(so->results[0].score < last.score ||
			  (so->results[0].score == last.score &&
			   ItemPointerCompare(&so->results[0].tid, &last.tid) > 0)))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("gpuir index scan of \"%s\": a page of results does not follow the previous page",
							RelationGetRelationName(scan->indexRelation))));
		if (in != NULL)
		{
#if PG_VERSION_NUM >= 180000
			/* EXPLAIN ANALYZE's "Index Searches" */
			if (scan->instrument != NULL)
				scan->instrument->nsearches++;
#endif
			so->stats.searches++;
			so->stats.gpu_searches += (int) GpuirLastQueryStats.gpu_queries;
			so->stats.k = k;
			so->stats.mode = mode;
			so->stats.blocks_decoded += GpuirLastQueryStats.blocks_decoded;
			so->stats.blocks_skipped += GpuirLastQueryStats.blocks_skipped;
			so->stats.docs_scored += GpuirLastQueryStats.docs_scored;
		}
		so->k = k;
		so->exhausted = so->nresults < k;
	}
	if (so->next >= so->nresults)
		return false;

	r = &so->results[so->next++];
	GpuirScoreSourceReturned(so->src, so->results, so->next);
	scan->xs_heaptid = r->tid;
	scan->xs_recheck = false;
	scan->xs_recheckorderby = false;
	scan->xs_orderbyvals[0] = Float8GetDatum(-(float8) r->score);
	scan->xs_orderbynulls[0] = false;
	return true;
}

/*
 * GpuirScanGetStats: what the gpuir index scan scan did (GpuirScanStats);
 * false when scan is not one, or has not searched
 */
bool
GpuirScanGetStats(IndexScanDesc scan, GpuirScanStats *stats)
{
	GpuirScanOpaque so;

	if (scan == NULL || scan->opaque == NULL || !GpuirIsGpuirIndex(scan->indexRelation))
		return false;
	so = (GpuirScanOpaque) scan->opaque;
	*stats = so->stats;
	return stats->searches > 0;
}

void
gpuirendscan(IndexScanDesc scan)
{
	GpuirScanOpaque so = (GpuirScanOpaque) scan->opaque;

	GpuirExplainScanEnded(scan->indexRelation, &so->stats);
	GpuirScoreSourceEnd(so->src);	/* it stays listed until the scan's memory goes */
	MemoryContextDelete(so->cxt);
	pfree(so);
	scan->opaque = NULL;
}
