/*-------------------------------------------------------------------------
 *
 * gpuircost.c
 *	  Cost estimation of gpuir index scans (amcostestimate).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "optimizer/optimizer.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"

#include "gpuir.h"

/*
 * gpuircostestimate: a gpuir index is only useful for ORDER BY col <@> query;
 * without that clause the path is priced out.  With it, the top-k is computed
 * at the start of the scan (startup = total), touching a small share of the
 * index pages, and at most a few thousand rows are expected out.
 */
void
gpuircostestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				  Cost *indexStartupCost, Cost *indexTotalCost,
				  Selectivity *indexSelectivity, double *indexCorrelation,
				  double *indexPages)
{
	GenericCosts costs;
	double		tuples = Max(path->indexinfo->tuples, 1.0);

	if (path->indexorderbys == NIL)
	{
		*indexStartupCost = 1.0e10;
		*indexTotalCost = 1.0e10;
		*indexSelectivity = 0.0;
		*indexCorrelation = 0.0;
		*indexPages = 0;
		return;
	}

	MemSet(&costs, 0, sizeof(costs));
	genericcostestimate(root, path, loop_count, &costs);

	*indexSelectivity = Min(1.0, 1000.0 / tuples);
	*indexStartupCost = costs.numIndexPages * 0.01 * random_page_cost +
		1000.0 * cpu_operator_cost;
	*indexTotalCost = *indexStartupCost + 1000.0 * cpu_index_tuple_cost;
	*indexCorrelation = 0.0;
	*indexPages = costs.numIndexPages;
}
