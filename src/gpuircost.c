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
 * index pages.
 *
 * The estimate leans towards the index on purpose: the only other plans for
 * ORDER BY col <@> query (a scan and a sort) would evaluate the operator for
 * every row, which only a gpuir index scan can do.  The selectivity (the
 * share of heap rows fetched) is that of the few hundred rows a top-k query
 * reads, and the heap access is costed as ordered (correlation 1), which the
 * rows of a top-k are not, but which keeps a scan and sort from looking
 * cheaper on small tables or with extra filters.  Even so, on a table of a
 * page or two a sequential scan and sort (a page at seq_page_cost, the
 * operator's COST for a few rows) came out below the heap page that
 * cost_index adds at random_page_cost, and that plan can only fail (the
 * <@> value is known to the gpuir scan that returned the row, 0A000): the
 * index's own costs give that first heap page back.
 */
void
gpuircostestimate(PlannerInfo *root, IndexPath *path, double loop_count,
				  Cost *indexStartupCost, Cost *indexTotalCost,
				  Selectivity *indexSelectivity, double *indexCorrelation,
				  double *indexPages)
{
	GenericCosts costs;
	double		tuples = Max(path->indexinfo->tuples, 1.0);
	double		spc_random_page_cost;

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

	*indexSelectivity = Min(1.0, 100.0 / tuples);
	*indexStartupCost = costs.numIndexPages * 0.01 * random_page_cost +
		100.0 * cpu_operator_cost;
	*indexTotalCost = *indexStartupCost + 100.0 * cpu_index_tuple_cost;
	get_tablespace_page_costs(path->indexinfo->rel->reltablespace, &spc_random_page_cost, NULL);
	*indexStartupCost -= spc_random_page_cost;
	*indexTotalCost -= spc_random_page_cost;
	*indexCorrelation = 1.0;
	*indexPages = costs.numIndexPages;
}
