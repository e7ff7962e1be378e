/*-------------------------------------------------------------------------
 *
 * gpuirengine.h
 *	  The CPU query engine's state, shared by the engine (gpuirengine.c)
 *	  and the search entry points with GPU routing (gpuirquery.c).
 *	  Private to src/.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIRENGINE_H
#define GPUIRENGINE_H

#include "access/relscan.h"
#include "executor/tuptable.h"
#include "miscadmin.h"

#include "gpuir.h"

/*
 * a query term: a distinct lexeme of the query; GpuirQuery.terms holds them
 * in lexeme order until order_terms (the end of GpuirQueryPrepare), in term
 * order after
 */
typedef struct QTerm
{
	char	   *lexeme;
	uint16		len;
	uint64		df;				/* global: all segments + buffer */
	float4		idf;
} QTerm;

/* a document of the insert buffer that holds at least one query term */
typedef struct BufDoc
{
	ItemPointerData tid;
	uint32		dl;
	float4		prior;			/* the record's (0 without) */
	uint32	   *tfs;			/* per query term, 0 when absent */
	int			nmatch;
} BufDoc;

/*
 * One query being answered: its terms with global df and idf, the metapage
 * and insert buffer as of its start, every segment's dictionary entries of
 * its terms, and the top-k.
 */
typedef struct GpuirQuery
{
	Relation	index;
	Relation	heap;
	Snapshot	snapshot;
	IndexFetchTableData *fetch;
	TupleTableSlot *slot;
	bool		heap_vm;		/* a heap table and an MVCC snapshot: the
								 * final check may trust its visibility map
								 * (fetch_all_visible) */
	Buffer		vmbuf;			/* the visibility map page it read last */
	GpuirScoring sc;
	/* the length norm of bounds, k1 ((1 - b) + b dl / avgdl) = norm_a + norm_b dl */
	double		norm_a;
	double		norm_b;
	QTerm	   *terms;
	int			nterms;
	GpuirMetaPageData meta;
	GpuirDictEntry *entries;	/* [segment * nterms + term], npostings 0 = absent */
	const GpuirBlockHeader **dirs;	/* [segment * nterms + term]: a short
									 * list's headers kept by the session
									 * (gpuirengine.c), NULL: the cursor
									 * reads them */
	uint64		dirs_epoch;		/* dirs hold while the session's cache is
								 * at this epoch */
	BufDoc	   *bufdocs;
	int			nbufdocs;
	int			bufcap;
	/*
	 * The top-k (GpuirQueryConsider).  Below GPUIR_SELECT_MIN_K a heap of k,
	 * topk[0] the worst kept; from it an array of 2k cut to its best k by
	 * selection when it fills (q->select), O(1) a candidate amortised where a
	 * heap of 1000 costs a sift-down of ten levels.  Either way, once k
	 * results are kept (GpuirQueryFull: nheap stays at k or above from then
	 * on until the top-k is emptied), kth is the worst of the best k at the
	 * last update: in a heap the k-th best, in the array a lower bound of it
	 * (the cut's), which prunes less but never drops a document of the top-k.
	 * nheap may exceed k in the array: GpuirQuerySettle cuts it to the
	 * exact top-k (kth then the exact k-th), which every reader of the
	 * results or of the exact k-th calls first.
	 */
	GpuirResult *topk;
	int			nheap;			/* entries in topk */
	int			k;
	bool		select;			/* topk is the array of 2k */
	GpuirResult kth;			/* set once GpuirQueryFull */
	/* per-segment readers */
	GpuirSegmentData *seg;
	GpuirStreamReader tids;
	GpuirStreamReader dls;
	struct DocLens *lens;		/* the segment's session copy (gpuirengine.c;
								 * doclens_norms adds its norms), NULL: read
								 * the dls and tids streams */
	GpuirStreamReader del;
	GpuirStreamReader pri;		/* the segment's PRIORS without q->lens */
	double		prior_bound;	/* the largest a prior of the segment adds
								 * (GpuirPriorScore of its prior_max); 0:
								 * no priors.  pri is open when it is not 0
								 * and lens is NULL */
	const uint32 *score_docs;	/* GpuirQueryScoreDocs's docIDs (ascending),
								 * which run_mode then scores, or NULL */
	int			nscore_docs;
	uint64		iterations;
	GpuirRowFilter filter;		/* GpuirQueryInput's, NULL: none */
	void	   *filter_arg;
	bool		defer_visibility;	/* snapshot checks of the final top-k only */
	bool		visible_by_caller;	/* no snapshot check: the caller's (GpuirQueryInput) */
	bool		after_set;		/* GpuirQueryInput's after: only results */
	float4		after_score;	/* ranked after (after_score, after_tid) */
	ItemPointerData after_tid;
	bool		ready;			/* prepared, and something may match */
} GpuirQuery;

/*
 * is (score a, tid a) a better result than b? (score desc, then TID asc,
 * GpuirTidCmp: inline, as this runs for every heap step and sort
 * comparison, and equal scores are common)
 */
static inline bool
GpuirResultBetter(float4 sa, ItemPointer ta, float4 sb, ItemPointer tb)
{
	if (sa != sb)
		return sa > sb;
	return GpuirTidCmp(ta, tb) < 0;
}

/* GpuirQueryFull: are k results kept (so q->kth is a threshold)? */
static inline bool
GpuirQueryFull(const GpuirQuery *q)
{
	return q->nheap >= q->k;
}

/* GpuirQueryThreshold: the score a candidate must reach (0 while the top-k is not full) */
static inline float4
GpuirQueryThreshold(const GpuirQuery *q)
{
	return GpuirQueryFull(q) ? q->kth.score : 0.0f;
}

/*
 * called once per iteration of every document-at-a-time loop (term at a time
 * checks for interrupts once a block instead): honours query cancel
 */
static inline void
GpuirQueryTick(GpuirQuery *q)
{
	if ((++q->iterations & 1023) == 0)
		CHECK_FOR_INTERRUPTS();
}

/* gpuirengine.c (each function's comment is at its definition) */
extern void GpuirQueryPrepare(GpuirQuery *q, Relation index, Relation heap, Snapshot snapshot,
							  const GpuirQueryInput *in, int k);
extern void GpuirQueryRunCpu(GpuirQuery *q, GpuirMode mode);
extern void GpuirQueryRunAll(GpuirQuery *q, GpuirMode mode);
extern void GpuirQueryRunBuffer(GpuirQuery *q, GpuirMode mode);
extern void GpuirQueryScoreDocs(GpuirQuery *q, int s, const uint32 *docs, int n);
extern void GpuirQueryConsider(GpuirQuery *q, ItemPointer tid, float4 score, uint32 segdoc,
							   bool check_deleted);
extern void GpuirQuerySettle(GpuirQuery *q);
extern void GpuirQueryResetTopk(GpuirQuery *q);
extern bool GpuirQueryCheckVisible(GpuirQuery *q);
extern int	GpuirQueryFinish(GpuirQuery *q, MemoryContext target, GpuirResult **results);


#endif							/* GPUIRENGINE_H */
