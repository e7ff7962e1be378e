/*-------------------------------------------------------------------------
 *
 * gpuirexplain.c
 *	  EXPLAIN (ANALYZE) of gpuir index scans: under each "Index Scan using
 *	  <gpuir index>" node, the search's mode, k, where it ran and its work:
 *
 *	    gpuir: mode bmw, k 10, 1 search (0 on the GPU)
 *	    gpuir Work: 3 blocks decoded, 0 skipped, 25 documents scored
 *
 *	  (non-text formats: the properties "gpuir Mode", "gpuir k", "gpuir
 *	  Searches", "gpuir GPU Searches", "Blocks Decoded", "Blocks Skipped",
 *	  "Documents Scored").  A scan searches more than once when the
 *	  executor asks for more rows than the last k (k grows tenfold, then
 *	  pages of 100000) and once per rescan; the counts are summed, k and
 *	  mode are the last search's.  The block and document counts are the
 *	  CPU engine's work; searches the GPU service answered count only in the
 *	  GPU searches.
 *
 *	  PostgreSQL 18's explain_per_node_hook adds these lines under the node.
 *	  15 and 17 have no hook per node: there, in the text format, one line
 *	  per gpuir index scan follows the plan,
 *
 *	    gpuir index scan of ex_idx: mode bmw, k 10, 1 search (0 on the GPU);
 *	    3 blocks decoded, 0 skipped, 25 documents scored
 *
 *	  (one line), through ExplainOneQuery_hook: the scans record what they
 *	  did when they end (GpuirExplainScanEnded, at ExecutorEnd inside
 *	  ExplainOnePlan) into the innermost EXPLAIN running, which appends
 *	  the lines once the plan is printed.  Other formats get nothing there
 *	  (their document is closed by then).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/execnodes.h"
#include "utils/rel.h"

#include "gpuir.h"

#include "commands/explain.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#else
#include "executor/instrument.h"
#include "lib/stringinfo.h"
#include "tcop/tcopprot.h"
#endif

#if PG_VERSION_NUM >= 180000

static explain_per_node_hook_type prev_explain_per_node_hook = NULL;

/* explain_node: explain_per_node_hook: the lines of a gpuir index scan */
static void
explain_node(PlanState *planstate, List *ancestors, const char *relationship,
			 const char *plan_name, ExplainState *es)
{
	IndexScanState *iss;
	GpuirScanStats st;

	if (prev_explain_per_node_hook)
		prev_explain_per_node_hook(planstate, ancestors, relationship, plan_name, es);
	if (!es->analyze || !IsA(planstate, IndexScanState))
		return;
	iss = (IndexScanState *) planstate;
	if (!GpuirScanGetStats(iss->iss_ScanDesc, &st))
		return;				/* not a gpuir scan, or it did not search */
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyText("gpuir",
							psprintf("mode %s, k %d, %d search%s (%d on the GPU)",
									 GpuirModeName(st.mode), st.k, st.searches,
									 st.searches == 1 ? "" : "es", st.gpu_searches),
							es);
		ExplainPropertyText("gpuir Work",
							psprintf(INT64_FORMAT " blocks decoded, " INT64_FORMAT
									 " skipped, " INT64_FORMAT " documents scored",
									 st.blocks_decoded, st.blocks_skipped, st.docs_scored),
							es);
	}
	else
	{
		ExplainPropertyText("gpuir Mode", GpuirModeName(st.mode), es);
		ExplainPropertyInteger("gpuir k", NULL, st.k, es);
		ExplainPropertyInteger("gpuir Searches", NULL, st.searches, es);
		ExplainPropertyInteger("gpuir GPU Searches", NULL, st.gpu_searches, es);
		ExplainPropertyInteger("Blocks Decoded", NULL, st.blocks_decoded, es);
		ExplainPropertyInteger("Blocks Skipped", NULL, st.blocks_skipped, es);
		ExplainPropertyInteger("Documents Scored", NULL, st.docs_scored, es);
	}
}

#else							/* PG_VERSION_NUM < 180000 */

/* the scans an EXPLAIN ANALYZE ran, in the order they ended */
typedef struct ExplainScans
{
	struct ExplainScans *outer; /* an EXPLAIN running this one's query */
	MemoryContext cxt;
	StringInfoData lines;
} ExplainScans;

static ExplainOneQuery_hook_type prev_ExplainOneQuery_hook = NULL;
static ExplainScans *explain_scans = NULL;	/* the innermost EXPLAIN ANALYZE */

/* plan_and_explain: what ExplainOneQuery does without a hook (15; 17 exports it) */
static void
plan_and_explain(Query *query, int cursorOptions, IntoClause *into, ExplainState *es,
				 const char *queryString, ParamListInfo params, QueryEnvironment *queryEnv)
{
#if PG_VERSION_NUM >= 170000
	standard_ExplainOneQuery(query, cursorOptions, into, es, queryString, params, queryEnv);
#else
	PlannedStmt *plan;
	instr_time	planstart,
				planduration;
	BufferUsage bufusage_start,
				bufusage;

	if (es->buffers)
		bufusage_start = pgBufferUsage;
	INSTR_TIME_SET_CURRENT(planstart);
	plan = pg_plan_query(query, queryString, cursorOptions, params);
	INSTR_TIME_SET_CURRENT(planduration);
	INSTR_TIME_SUBTRACT(planduration, planstart);
	if (es->buffers)
	{
		memset(&bufusage, 0, sizeof(BufferUsage));
		BufferUsageAccumDiff(&bufusage, &pgBufferUsage, &bufusage_start);
	}
	ExplainOnePlan(plan, into, es, queryString, params, queryEnv,
				   &planduration, (es->buffers ? &bufusage : NULL));
#endif
}

/*
 * explain_one_query: ExplainOneQuery_hook: an EXPLAIN ANALYZE in the text
 * format collects the gpuir scans that end while it runs its query and
 * appends a line for each after the plan
 */
static void
explain_one_query(Query *query, int cursorOptions, IntoClause *into, ExplainState *es,
				  const char *queryString, ParamListInfo params, QueryEnvironment *queryEnv)
{
	ExplainScans scans;
	volatile bool collect = es->analyze && es->format == EXPLAIN_FORMAT_TEXT;

	if (collect)
	{
		scans.outer = explain_scans;
		scans.cxt = CurrentMemoryContext;
		initStringInfo(&scans.lines);
		explain_scans = &scans;
	}
	PG_TRY();
	{
		/* (ExplainOneQuery explains utility statements without calling the hook) */
		if (prev_ExplainOneQuery_hook)
			prev_ExplainOneQuery_hook(query, cursorOptions, into, es, queryString, params,
									  queryEnv);
		else
			plan_and_explain(query, cursorOptions, into, es, queryString, params, queryEnv);
	}
	PG_FINALLY();
	{
		if (collect)
			explain_scans = scans.outer;
	}
	PG_END_TRY();
	if (collect && scans.lines.len > 0)
		appendStringInfoString(es->str, scans.lines.data);
}
#endif

/*
 * GpuirExplainScanEnded: gpuirendscan: a scan of index that searched (stats)
 * ends; on 15 and 17, the innermost EXPLAIN ANALYZE running (if any)
 * records its line
 */
void
GpuirExplainScanEnded(Relation index, const GpuirScanStats *st)
{
#if PG_VERSION_NUM < 180000
	MemoryContext old;

	if (explain_scans == NULL || st->searches == 0)
		return;
	old = MemoryContextSwitchTo(explain_scans->cxt);
	appendStringInfo(&explain_scans->lines,
					 "gpuir index scan of %s: mode %s, k %d, %d search%s (%d on the GPU); "
					 INT64_FORMAT " blocks decoded, " INT64_FORMAT " skipped, " INT64_FORMAT
					 " documents scored\n",
					 RelationGetRelationName(index), GpuirModeName(st->mode), st->k,
					 st->searches, st->searches == 1 ? "" : "es", st->gpu_searches,
					 st->blocks_decoded, st->blocks_skipped, st->docs_scored);
	MemoryContextSwitchTo(old);
#else
	(void) index;
	(void) st;
#endif
}

/* GpuirExplainInit: _PG_init: install the EXPLAIN hook */
void
GpuirExplainInit(void)
{
#if PG_VERSION_NUM >= 180000
	prev_explain_per_node_hook = explain_per_node_hook;
	explain_per_node_hook = explain_node;
#else
	prev_ExplainOneQuery_hook = ExplainOneQuery_hook;
	ExplainOneQuery_hook = explain_one_query;
#endif
}
