/*-------------------------------------------------------------------------
 *
 * gpuirscan.c
 *	  Index scans of gpuir: ORDER BY col <@> 'query' LIMIT k.
 *
 * The executor does not tell the index its LIMIT, so the scan computes the
 * top GPUIR_SCAN_INITIAL_K with Block-Max WAND and, when the executor asks
 * for more, recomputes with GPUIR_SCAN_GROWTH times the k (10, 100, 1000,
 * ...: the common LIMITs take one or two restarts, and a top-k costs far
 * less than k times a top-1) and returns the results after those
 * already returned (same snapshot, same total order, so the earlier results
 * are a prefix).  The ORDER BY argument is text (a bag of words,
 * operator strategy 1) or a tsquery (strategy 2: only its matching rows,
 * gpuirtsquery.c).  Only documents holding at least one query term are
 * returned.  Past GPUIR_MAX_K (a selective filter above the scan), it goes
 * on in pages of GPUIR_MAX_K: each one the top GPUIR_MAX_K of the results
 * ranked after the last one returned (GpuirQueryInput.after), so the scan
 * returns every matching row, best first, with memory bounded by a page.
 * The scan's score source
 * (gpuirremember.c) lets the <@> operator give each returned row the score
 * this scan computed for it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relscan.h"
#include "miscadmin.h"
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
	bool		exhausted;		/* fewer than k results: no more exist */
	GpuirScanStats stats;		/* over every search and rescan (EXPLAIN) */
} GpuirScanOpaqueData;

typedef GpuirScanOpaqueData *GpuirScanOpaque;

IndexScanDesc
gpuirbeginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	GpuirScanOpaque so = palloc0(sizeof(GpuirScanOpaqueData));

	so->cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir scan",
									ALLOCSET_DEFAULT_SIZES);
	so->src = GpuirScoreSourceCreate();
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
		int			k = so->k == 0 ? GPUIR_SCAN_INITIAL_K :
			(int) Min((int64) so->k * GPUIR_SCAN_GROWTH, GPUIR_MAX_K);
		GpuirResult last;
		bool		page = false;
		MemoryContext old;
		GpuirQueryInput textin;
		GpuirQueryInput paged;
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
			GpuirScoreSourceSet(so->src, scan->indexRelation, scan->heapRelation,
								scan->xs_snapshot, key, keylen);
		}
		if (in != NULL && page)
		{
			paged = *in;
			paged.after = &last;
			in = &paged;
		}
		so->nresults = in == NULL ? 0 :
			GpuirSearch(scan->indexRelation, scan->heapRelation, scan->xs_snapshot,
						in, k, mode, &so->results);
		if (plan != NULL)
			GpuirTsQueryPlanEnd(plan);
		MemoryContextSwitchTo(old);
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
