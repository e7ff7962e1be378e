/*-------------------------------------------------------------------------
 *
 * gpuirremember.c
 *	  Score sources: the rows each open gpuir index scan has returned and
 *	  their scores, which the <@> function uses to give a row the score
 *	  that the scan which returned it computed.
 *
 * The executor evaluates col <@> query in the select list (and as the
 * ORDER BY key it projects) from the row's column value and the query
 * alone, and does not pass on the index scan's ORDER BY values.  So every
 * open index scan keeps a score source: its query text and the results it
 * has returned, best first.  GpuirScoreOf finds the row among them by its
 * text: each returned row's indexed value is fetched once (through the
 * index's heap, following HOT chains, with the scan's snapshot; with
 * FormIndexDatum, so expression indexes work too) and kept as a 64-bit hash
 * with its score.  A row returned by one scan gets that scan's score; a row
 * no open scan of the query returned is not known; a text that scans with
 * different scores returned (identical documents in two indexes with other
 * statistics) is ambiguous.  Both raise errors rather than give a number
 * from another scan.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "lib/ilist.h"
#include "access/relscan.h"
#include "nodes/execnodes.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "gpuir.h"

/* a returned row: the hash of its indexed text and its score */
typedef struct ReturnedRow
{
	uint64		hash;			/* key */
	float4		score;
	bool		ambiguous;		/* rows of this hash with other scores */
} ReturnedRow;

struct GpuirScoreSource
{
	dlist_node	node;
	MemoryContextCallback cb;
	MemoryContext cxt;			/* what Set allocates (reset by each Set) */
	bool		set;			/* the fields below are valid */
	char	   *query;
	int			querylen;
	IndexScanDesc scan;			/* the scan, open while it runs */
	Relation	index;			/* its relations and snapshot */
	Relation	heap;
	Snapshot	snapshot;
	int			index_col;		/* the ORDER BY column's place in the index (0-based) */
	AttrNumber	heap_attno;		/* its table column; 0: an expression */
	const GpuirResult *results; /* [nreturned]: returned so far, the scan's */
	int			nreturned;
	int			nhashed;		/* results[0 .. nhashed) are in rows */
	HTAB	   *rows;			/* ReturnedRow by hash, in cxt */
	/* fetching a returned row's indexed value, in cxt, made when first needed */
	IndexInfo  *ii;
	EState	   *estate;
	TupleTableSlot *slot;
	IndexFetchTableData *fetch;
};

static dlist_head score_sources = DLIST_STATIC_INIT(score_sources);

static void hash_returned(GpuirScoreSource *src);

/* source_release: end the heap fetch state of src, if any */
static void
source_release(GpuirScoreSource *src)
{
	if (src->fetch != NULL)
		table_index_fetch_end(src->fetch);
	if (src->slot != NULL)
		ExecDropSingleTupleTableSlot(src->slot);
	if (src->estate != NULL)
		FreeExecutorState(src->estate);
	src->fetch = NULL;
	src->slot = NULL;
	src->estate = NULL;
	src->ii = NULL;
}

/* source_unlink: memory context callback, the scan's memory is going */
static void
source_unlink(void *arg)
{
	GpuirScoreSource *src = (GpuirScoreSource *) arg;

	dlist_delete(&src->node);
	/* no fetch state is left on error: its buffers and slots go with the transaction */
}

/*
 * GpuirScoreSourceCreate: a new score source in CurrentMemoryContext (the
 * scan's), on the backend's list until that context is reset or deleted.
 */
GpuirScoreSource *
GpuirScoreSourceCreate(void)
{
	GpuirScoreSource *src = palloc0(sizeof(GpuirScoreSource));

	src->cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir score source",
									 ALLOCSET_SMALL_SIZES);
	src->cb.func = source_unlink;
	src->cb.arg = src;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, &src->cb);
	dlist_push_head(&score_sources, &src->node);
	return src;
}

/*
 * GpuirScoreSourceSet: src is now index scan scan of query, with no row
 * returned yet.  The scan (its relations and snapshot) must stay valid
 * until the next Set or GpuirScoreSourceEnd.
 */
void
GpuirScoreSourceSet(GpuirScoreSource *src, IndexScanDesc scan, const char *query, int querylen)
{
	MemoryContext old;
	HASHCTL		ctl;

	source_release(src);
	MemoryContextReset(src->cxt);
	old = MemoryContextSwitchTo(src->cxt);
	src->query = palloc(Max(querylen, 1));
	memcpy(src->query, query, querylen);
	src->querylen = querylen;
	src->scan = scan;
	src->index = scan->indexRelation;
	src->heap = scan->heapRelation;
	src->snapshot = scan->xs_snapshot;
	/* the index column that ORDER BY col <@> query names */
	src->index_col = scan->numberOfOrderBys > 0 ? scan->orderByData[0].sk_attno - 1 : 0;
	Assert(src->index_col >= 0 && src->index_col < src->index->rd_index->indnkeyatts);
	src->heap_attno = src->heap->rd_tableam == GetHeapamTableAmRoutine() ?
		src->index->rd_index->indkey.values[src->index_col] : 0;
	src->results = NULL;
	src->nreturned = 0;
	src->nhashed = 0;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(uint64);
	ctl.entrysize = sizeof(ReturnedRow);
	ctl.hcxt = src->cxt;
	src->rows = hash_create("gpuir returned rows", 64, &ctl,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	src->set = true;
	MemoryContextSwitchTo(old);
}

/*
 * GpuirScoreSourceReturned: the scan has returned results[0 .. n) (best
 * first; n never shrinks between two GpuirScoreSourceSet: a restart of the
 * scan with a larger k returns the same rows first, so the rows hashed so
 * far stay right).  The array stays the scan's and must live until the
 * next call.
 */
void
GpuirScoreSourceReturned(GpuirScoreSource *src, const GpuirResult *results, int n)
{
	Assert(n >= src->nhashed);
	src->results = results;
	src->nreturned = n;
}

/*
 * GpuirScoreSourcePage: the scan goes on with a new page of results (the
 * ones ranked after those returned so far): the rows returned from the
 * current array are hashed now, while it still exists, and the next
 * GpuirScoreSourceReturned counts from the new array's start.
 */
void
GpuirScoreSourcePage(GpuirScoreSource *src)
{
	if (src->set && src->nhashed < src->nreturned)
		hash_returned(src);
	src->results = NULL;
	src->nreturned = 0;
	src->nhashed = 0;
}

/*
 * GpuirScoreSourceEnd: the scan ends, or is rescanned (its relations or
 * results go): src answers nothing until the next GpuirScoreSourceSet, and
 * its fetch state is released.
 */
void
GpuirScoreSourceEnd(GpuirScoreSource *src)
{
	source_release(src);
	src->set = false;
	src->results = NULL;
	src->nreturned = 0;
	src->nhashed = 0;
}

/* text_hash: the hash of a document's text */
static uint64
text_hash(const char *doc, int doclen)
{
	return hash_bytes_extended((const unsigned char *) doc, doclen, 0);
}

/*
 * hash_returned: put the rows src returned but has not hashed yet into
 * src->rows: fetch each one's indexed value (the HOT chain from its TID,
 * the scan's snapshot) and hash its text.
 */
static void
hash_returned(GpuirScoreSource *src)
{
	MemoryContext old = MemoryContextSwitchTo(src->cxt);

	if (src->fetch == NULL)
	{
		src->ii = BuildIndexInfo(src->index);
		src->estate = CreateExecutorState();
		src->slot = table_slot_create(src->heap, NULL);
		GetPerTupleExprContext(src->estate)->ecxt_scantuple = src->slot;
		src->fetch = table_index_fetch_begin(src->heap);
	}
	for (; src->nhashed < src->nreturned; src->nhashed++)
	{
		const GpuirResult *r = &src->results[src->nhashed];
		ItemPointerData tid = r->tid;
		bool		call_again = false;
		bool		all_dead = false;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];
		ReturnedRow *row;
		bool		found;
		uint64		h;

		if (!table_index_fetch_tuple(src->fetch, &tid, src->snapshot, src->slot,
									 &call_again, &all_dead))
			continue;			/* not visible (cannot happen for a returned row) */
		ResetPerTupleExprContext(src->estate);
		FormIndexDatum(src->ii, src->slot, src->estate, values, isnull);
		if (!isnull[src->index_col])
		{
			/* detoasted in the per-tuple memory, reset for every row */
			MemoryContext tmp = MemoryContextSwitchTo(GetPerTupleMemoryContext(src->estate));
			text	   *t = DatumGetTextPP(values[src->index_col]);

			h = text_hash(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
			MemoryContextSwitchTo(tmp);
			row = hash_search(src->rows, &h, HASH_ENTER, &found);
			if (!found)
			{
				row->score = r->score;
				row->ambiguous = false;
			}
			else if (row->score != r->score)
				row->ambiguous = true;
		}
		ExecClearTuple(src->slot);
	}
	MemoryContextSwitchTo(old);
}

/*
 * GpuirScoreOf: the score of the row whose indexed text is doc, as the open
 * gpuir index scan of query (same text) that returned it computed it.
 * Returns false when no open scan of this query returned a row with this
 * text.  Raises 0A000 when scans (or rows of one scan) with different
 * scores returned this text, so that a row never gets another scan's
 * score.
 */
/*
 * is_current_row: is doc (a Datum as the executor deformed it from its
 * scan slot, not detoasted) the indexed column of the row src's scan
 * returned last?  The executor fetched that row's visible version into
 * the scan's table fetch state: its TID is the scan's xs_heaptid and its
 * page stays pinned in the heap fetch's buffer, where the slot's columns
 * point.  So doc is that row's value exactly when it is the same pointer
 * as the column read from that tuple on the page (unlocked: a pinned
 * page's tuples do not move, and a line pointer in use stays).  Heap
 * tables and plain column indexes only; false in every other case.
 */
static bool
is_current_row(GpuirScoreSource *src, Datum doc)
{
	IndexFetchHeapData *hf;
	Buffer		buf;
	Page		page;
	OffsetNumber off;
	ItemId		lp;
	HeapTupleData tup;
	bool		isnull;
	Datum		value;

	if (src->heap_attno <= 0 || src->nreturned == 0 || src->scan->xs_heapfetch == NULL)
		return false;
	hf = (IndexFetchHeapData *) src->scan->xs_heapfetch;
	buf = hf->xs_cbuf;
	if (!BufferIsValid(buf) ||
		BufferGetBlockNumber(buf) != ItemPointerGetBlockNumber(&src->scan->xs_heaptid))
		return false;
	page = BufferGetPage(buf);
	off = ItemPointerGetOffsetNumber(&src->scan->xs_heaptid);
	if (off < FirstOffsetNumber || off > PageGetMaxOffsetNumber(page))
		return false;
	lp = PageGetItemId(page, off);
	if (!ItemIdIsNormal(lp))
		return false;
	tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
	tup.t_len = ItemIdGetLength(lp);
	tup.t_tableOid = RelationGetRelid(src->heap);
	tup.t_self = src->scan->xs_heaptid;
	value = heap_getattr(&tup, src->heap_attno, RelationGetDescr(src->heap), &isnull);
	return !isnull && DatumGetPointer(value) == DatumGetPointer(doc);
}

/*
 * GpuirScoreOf: the score of the row whose indexed text is doc (the Datum
 * the executor passed, not detoasted), as the open gpuir index scan of
 * query (same text) that returned it computed it.  The row a scan returned
 * last, in that scan's own projection, is recognised by its place on the
 * page (is_current_row); any other row by its text (a hash of each row the
 * scans returned, made when first needed).  Returns false when no open
 * scan of this query returned a row with this text.  Raises 0A000 when
 * scans (or rows of one scan) with different scores returned this text,
 * so that a row never gets another scan's score.
 */
bool
GpuirScoreOf(const char *query, int querylen, Datum doc, float4 *score)
{
	dlist_iter	it;
	bool		found = false;
	bool		ambiguous = false;
	text	   *t;
	uint64		h;

	dlist_foreach(it, &score_sources)
	{
		GpuirScoreSource *src = dlist_container(GpuirScoreSource, node, it.cur);

		if (src->set && src->querylen == querylen &&
			memcmp(src->query, query, querylen) == 0 && is_current_row(src, doc))
		{
			if (found && src->results[src->nreturned - 1].score != *score)
				ambiguous = true;
			*score = src->results[src->nreturned - 1].score;
			found = true;
		}
	}
	if (found && !ambiguous)
		return true;
	found = false;
	ambiguous = false;
	t = DatumGetTextPP(doc);
	h = text_hash(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));

	dlist_foreach(it, &score_sources)
	{
		GpuirScoreSource *src = dlist_container(GpuirScoreSource, node, it.cur);
		ReturnedRow *row;

		/* (rows of earlier pages are hashed even when none of this page is returned yet) */
		if (!src->set || src->querylen != querylen ||
			memcmp(src->query, query, querylen) != 0)
			continue;
		if (src->nhashed < src->nreturned)
			hash_returned(src);
		row = hash_search(src->rows, &h, HASH_FIND, NULL);
		if (row == NULL)
			continue;
		if (row->ambiguous || (found && row->score != *score))
			ambiguous = true;
		*score = row->score;
		found = true;
	}
	if (ambiguous)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the <@> value of a row is ambiguous: gpuir index scans of this query returned the same text with different scores"),
				 errhint("Identical documents in indexes with different statistics score differently; use gpuir_search() on each index for their scores.")));
	return found;
}
