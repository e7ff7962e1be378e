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
 *	  PostgreSQL 18's explain_per_node_hook adds these lines.  Earlier
 *	  versions have no such hook: there gpuir_last_query_stats() gives the
 *	  work of the session's last search.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/execnodes.h"
#include "utils/rel.h"

#include "gpuir.h"

#if PG_VERSION_NUM >= 180000
#include "commands/explain.h"
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#endif

/* GpuirModeName: the SQL name of a query mode */
const char *
GpuirModeName(GpuirMode mode)
{
	switch (mode)
	{
		case GPUIR_MODE_AND:
			return "and";
		case GPUIR_MODE_OR:
			return "or";
		case GPUIR_MODE_WAND:
			return "wand";
		case GPUIR_MODE_BMW:
			return "bmw";
		case GPUIR_MODE_AND_OR:
			return "and_or";
	}
	return "?";
}

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
	if (iss->iss_RelationDesc == NULL || !GpuirIsGpuirIndex(iss->iss_RelationDesc) ||
		!GpuirScanGetStats(iss->iss_ScanDesc, &st))
		return;
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
#endif

/* GpuirExplainInit: _PG_init: install the EXPLAIN hook where there is one */
void
GpuirExplainInit(void)
{
#if PG_VERSION_NUM >= 180000
	prev_explain_per_node_hook = explain_per_node_hook;
	explain_per_node_hook = explain_node;
#endif
}
