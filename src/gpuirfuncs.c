/*-------------------------------------------------------------------------
 *
 * gpuirfuncs.c
 *	  SQL-callable functions of gpuir: gpuir_search, gpuir_merge,
 *	  gpuir_index_info, gpuir_last_query_stats and the <@> operator's
 *	  function.  Their SQL contracts are in sql/gpuir--*.sql and README.md.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "gpuir.h"

/* check that indexoid is an index, raising 42809 otherwise; returns its table */
static Oid
gpuir_index_table(Oid indexoid)
{
	char		relkind = get_rel_relkind(indexoid);

	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("relation with OID %u does not exist", indexoid)));
	if (relkind == RELKIND_PARTITIONED_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("\"%s\" is a partitioned index", get_rel_name(indexoid)),
				 errdetail("Its rows are in its partitions' indexes, and a ctid alone does not say which partition holds a row."),
				 errhint("Query the partitioned table with ORDER BY column <@> query LIMIT k (scored with the statistics of all partitions), or pass a partition's index.")));
	if (relkind != RELKIND_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a gpuir index", get_rel_name(indexoid)),
				 errhint("Pass an index created with USING gpuir.")));
	return IndexGetRelation(indexoid, false);
}

/*
 * search_args: validate k (22023 unless 1..GPUIR_MAX_K) and the mode name
 * (22023 when unknown) of gpuir_search and gpuir_search_batch
 */
static GpuirMode
search_args(int32 k, text *modetext)
{
	if (k <= 0 || k > GPUIR_MAX_K)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("k must be between 1 and %d, got %d", GPUIR_MAX_K, k)));
	return GpuirParseMode(text_to_cstring(modetext));
}

/*
 * check_read_access: may the current user read what fname reveals of the
 * index's table heapoid (its rows' ctids and scores, or statistics of its
 * text)?  Requires SELECT on the table or on every indexed column, as
 * pg_stats does, raising 42501 otherwise; and, since these functions bypass
 * the planner that adds row-level security quals, refuses a table whose
 * policies apply to the user (42501, with a hint naming the ORDER BY form,
 * which the planner filters by the policies).  Checked before any lock is
 * taken on the table.
 */
static void
check_read_access(const char *fname, Oid indexoid, Oid heapoid)
{
	if (pg_class_aclcheck(heapoid, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
	{
		/* else SELECT on every indexed column (none an expression) will do */
		HeapTuple	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
		bool		columns_ok = false;

		if (HeapTupleIsValid(tup))
		{
			Form_pg_index ind = (Form_pg_index) GETSTRUCT(tup);

			columns_ok = ind->indnkeyatts >= 1;
			for (int i = 0; i < ind->indnkeyatts && columns_ok; i++)
				columns_ok = ind->indkey.values[i] != InvalidAttrNumber &&
					pg_attribute_aclcheck(heapoid, ind->indkey.values[i], GetUserId(),
										  ACL_SELECT) == ACLCHECK_OK;
			ReleaseSysCache(tup);
		}
		if (!columns_ok)
			aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_TABLE, get_rel_name(heapoid));
	}
	if (check_enable_rls(heapoid, InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s cannot apply the row-level security policies of table \"%s\"",
						fname, get_rel_name(heapoid)),
				 errhint("Query the table instead: SELECT ... FROM %s ORDER BY column <@> 'query' LIMIT k returns only the rows its policies let you see.",
						 get_rel_name(heapoid))));
}

/*
 * open_search: check the caller's access for fname (check_read_access),
 * lock the index's table, then the index (42809 unless gpuir)
 */
static void
open_search(const char *fname, Oid indexoid, Relation *heap, Relation *index)
{
	Oid			heapoid = gpuir_index_table(indexoid);

	check_read_access(fname, indexoid, heapoid);
	*heap = table_open(heapoid, AccessShareLock);
	*index = GpuirOpenIndex(indexoid, AccessShareLock);
}

static void
close_search(Relation heap, Relation index)
{
	relation_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
}

/*
 * put_results: one row (ctid, score) per result, preceded by query_no when
 * query_no > 0 (gpuir_search_batch); ctid is the visible row version's
 */
static void
put_results(ReturnSetInfo *rsinfo, const GpuirResult *results, int n, int query_no)
{
	for (int i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};
		ItemPointer tid = palloc(sizeof(ItemPointerData));
		int			c = 0;

		*tid = results[i].heap_tid;
		if (query_no > 0)
			values[c++] = Int32GetDatum(query_no);
		values[c++] = PointerGetDatum(tid);
		values[c++] = Float4GetDatum(results[i].score);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * A ctid filter (gpuir_search's filter argument): the visible row versions
 * a result may be, sorted, and the filter of the query input it restricts
 * (a tsquery's recheck), applied after it.
 */
typedef struct CtidFilter
{
	ItemPointerData *tids;
	int			ntids;
	GpuirRowFilter next;
	void	   *next_arg;
} CtidFilter;

static int
tid_cmp(const void *a, const void *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b);
}

/* ctid_filter: GpuirRowFilter: is the visible row in slot one of the filter's? */
static bool
ctid_filter(void *arg, TupleTableSlot *slot)
{
	CtidFilter *f = arg;

	if (bsearch(&slot->tts_tid, f->tids, f->ntids, sizeof(ItemPointerData), tid_cmp) == NULL)
		return false;
	return f->next == NULL || f->next(f->next_arg, slot);
}

/*
 * search_put: answer in (NULL: a query no row can match) with GpuirSearch,
 * restricted to the rows whose ctids ctids holds when it is not NULL (NULL
 * elements ignored), count the scan and its rows, and put them into rsinfo
 */
static void
search_put(ReturnSetInfo *rsinfo, Relation heap, Relation index,
		   const GpuirQueryInput *in, int k, GpuirMode mode, ArrayType *ctids)
{
	GpuirResult *results = NULL;
	int			n = 0;
	GpuirQueryInput filtered;
	CtidFilter	f;

	if (in != NULL && ctids != NULL)
	{
		Datum	   *elems;
		bool	   *nulls;
		int			nelems;

		if (ARR_NDIM(ctids) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("filter must be a one-dimensional array of ctids")));
		deconstruct_array(ctids, TIDOID, sizeof(ItemPointerData), false, TYPALIGN_SHORT,
						  &elems, &nulls, &nelems);
		f.tids = palloc(sizeof(ItemPointerData) * Max(nelems, 1));
		f.ntids = 0;
		for (int i = 0; i < nelems; i++)
			if (!nulls[i])
				f.tids[f.ntids++] = *(ItemPointer) DatumGetPointer(elems[i]);
		qsort(f.tids, f.ntids, sizeof(ItemPointerData), tid_cmp);
		f.next = in->filter;
		f.next_arg = in->filter_arg;
		filtered = *in;
		filtered.filter = ctid_filter;
		filtered.filter_arg = &f;
		in = f.ntids > 0 ? &filtered : NULL;
	}
	if (in != NULL)
		n = GpuirSearch(index, heap, GetActiveSnapshot(), in, k, mode, &results);
	pgstat_count_index_scan(index);
	pgstat_count_index_tuples(index, n);
	put_results(rsinfo, results, n, 0);
}

/*
 * search_batch_put: answer ins[0..nq) (NULL entries: queries no row can
 * match) with GpuirSearchBatch, one request per distinct mode of modes[],
 * count one scan per query, and put the rows of query i as query_no pos[i]
 */
static void
search_batch_put(ReturnSetInfo *rsinfo, Relation heap, Relation index,
				 const GpuirQueryInput **ins, const GpuirMode *modes, const int *pos,
				 int nq, int k)
{
	GpuirResult **results = palloc0(sizeof(GpuirResult *) * Max(nq, 1));
	int		   *counts = palloc0(sizeof(int) * Max(nq, 1));
	GpuirQueryInput *group = palloc(sizeof(GpuirQueryInput) * Max(nq, 1));
	int		   *member = palloc(sizeof(int) * Max(nq, 1));
	bool	   *done = palloc0(sizeof(bool) * Max(nq, 1));

	for (int first = 0; first < nq; first++)
	{
		GpuirResult **gres;
		int		   *gcounts;
		int			ng = 0;

		if (done[first])
			continue;
		for (int i = first; i < nq; i++)
			if (!done[i] && modes[i] == modes[first])
			{
				done[i] = true;
				if (ins[i] == NULL)
					continue;
				group[ng] = *ins[i];
				member[ng++] = i;
			}
		if (ng == 0)
			continue;
		gres = palloc(sizeof(GpuirResult *) * ng);
		gcounts = palloc(sizeof(int) * ng);
		GpuirSearchBatch(index, heap, GetActiveSnapshot(), group, ng, k, modes[first],
						 gres, gcounts);
		for (int g = 0; g < ng; g++)
		{
			results[member[g]] = gres[g];
			counts[member[g]] = gcounts[g];
		}
	}
	for (int q = 0; q < nq; q++)
	{
		CHECK_FOR_INTERRUPTS();
		pgstat_count_index_scan(index);
		pgstat_count_index_tuples(index, counts[q]);
		put_results(rsinfo, results[q], counts[q], pos[q]);
	}
}

/*
 * batch_elements: the non-NULL elements of a one-dimensional array of
 * element type elemtype (22023 for more dimensions); *pos receives each
 * one's 1-based position.  Returns their number.
 */
static int
batch_elements(ArrayType *arr, Oid elemtype, Datum **elems, int **pos)
{
	Datum	   *all;
	bool	   *nulls;
	int			nall;
	int			n = 0;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("queries must be a one-dimensional array")));
	deconstruct_array(arr, elemtype, -1, false, TYPALIGN_INT, &all, &nulls, &nall);
	*elems = palloc(sizeof(Datum) * Max(nall, 1));
	*pos = palloc(sizeof(int) * Max(nall, 1));
	for (int i = 0; i < nall; i++)
	{
		if (nulls[i])
			continue;
		(*elems)[n] = all[i];
		(*pos)[n++] = i + 1;
	}
	return n;
}

PG_FUNCTION_INFO_V1(gpuir_search);

/*
 * gpuir_search(index regclass, query text, k integer, mode text)
 *		RETURNS TABLE (ctid tid, score real)
 *
 * The k (1..100000) visible rows of the index's table with the highest BM25
 * score for query (a bag of words: each distinct lexeme of it under the
 * index's configuration, ORed, as plainto_tsquery's would be ANDed), best
 * first, ties by ctid.  mode: and, or, wand, bmw, and_or (GpuirSearch in
 * gpuirquery.c routes; gpuirengine.c has the algorithms and sources).
 * ctid is the visible row version's.  Counts one scan of the index and its
 * rows in pg_stat_user_indexes (idx_scan, idx_tup_read; gpuir_search_batch:
 * one scan per query).
 * gpuir_search(index, query, k, mode, filter tid[]): the same among the rows
 * whose ctid (visible version) filter holds, exact at any selectivity: the
 * engine's candidates are checked against the sorted array (binary search)
 * before they enter the top-k heap, so the k best rows that pass come back
 * (a very selective filter makes BMW visit about what OR does).  Errors: 22023 for k or mode, 42809 for
 * a relation that is not a gpuir index, 42501 without SELECT on the table or
 * the indexed column, or under row-level security (check_read_access).
 */
Datum
gpuir_search(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	text	   *query = PG_GETARG_TEXT_PP(1);
	int32		k = PG_GETARG_INT32(2);
	GpuirMode	mode = search_args(k, PG_GETARG_TEXT_PP(3));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	heap;
	Relation	index;
	GpuirQueryInput in;

	InitMaterializedSRF(fcinfo, 0);
	open_search("gpuir_search", indexoid, &heap, &index);
	GpuirQueryInputText(&in, VARDATA_ANY(query), VARSIZE_ANY_EXHDR(query));
	search_put(rsinfo, heap, index, &in, k, mode, PG_NARGS() > 4 ? PG_GETARG_ARRAYTYPE_P(4) : NULL);
	close_search(heap, index);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(gpuir_search_tsquery);

/*
 * gpuir_search(index regclass, query tsquery, k integer, mode text)
 *		RETURNS TABLE (ctid tid, score real)
 *
 * The k best of the visible rows that match query as
 * to_tsvector(cfg, column) @@ query does (cfg: the index's text search
 * configuration; &, |, !, phrases <-> and <N>, prefixes :*, weights), by
 * BM25 over the query's positive lexemes (gpuirtsquery.c), best first, ties
 * by ctid.  mode (or, wand, bmw) is the algorithm for the query's |
 * parts; a query whose positive lexemes are all required runs as AND.  An
 * empty query (only stopwords) returns no rows.  Errors as the text form,
 * and: 22023 for mode and or and_or, 0A000 for a query true of rows that
 * hold none of its positive lexemes (!a), 54000 when prefixes expand past
 * 1024 lexemes.
 */
Datum
gpuir_search_tsquery(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	TSQuery		query = PG_GETARG_TSQUERY(1);
	int32		k = PG_GETARG_INT32(2);
	text	   *modetext = PG_GETARG_TEXT_PP(3);
	GpuirMode	mode = search_args(k, modetext);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	heap;
	Relation	index;
	GpuirTsQueryPlan *plan;
	const GpuirQueryInput *in;

	InitMaterializedSRF(fcinfo, 0);
	open_search("gpuir_search", indexoid, &heap, &index);
	plan = GpuirTsQueryPlanMake(query, index, mode, text_to_cstring(modetext));
	in = GpuirTsQueryPlanInput(plan, &mode);
	search_put(rsinfo, heap, index, in, k, mode, PG_NARGS() > 4 ? PG_GETARG_ARRAYTYPE_P(4) : NULL);
	GpuirTsQueryPlanEnd(plan);
	close_search(heap, index);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(gpuir_search_batch);

/*
 * gpuir_search_batch(index regclass, queries text[], k integer, mode text)
 *		RETURNS TABLE (query_no integer, ctid tid, score real)
 *
 * gpuir_search for every element of queries (query_no is its 1-based
 * position; NULL elements give no rows), answered as one request to the GPU
 * service when it runs (Ding et al. 2009, section 5; Huang et al. 2017:
 * batches of queries per launch), else by the CPU engine.  Rows come per
 * query, best first.  Errors as gpuir_search, and 22023 for a
 * multidimensional array.
 */
Datum
gpuir_search_batch(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
	int32		k = PG_GETARG_INT32(2);
	GpuirMode	mode = search_args(k, PG_GETARG_TEXT_PP(3));
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	heap;
	Relation	index;
	Datum	   *elems;
	int		   *pos;
	int			nq;
	GpuirQueryInput *ins;
	const GpuirQueryInput **inp;
	GpuirMode  *modes;

	InitMaterializedSRF(fcinfo, 0);
	nq = batch_elements(arr, TEXTOID, &elems, &pos);
	ins = palloc(sizeof(GpuirQueryInput) * Max(nq, 1));
	inp = palloc(sizeof(GpuirQueryInput *) * Max(nq, 1));
	modes = palloc(sizeof(GpuirMode) * Max(nq, 1));
	for (int i = 0; i < nq; i++)
	{
		text	   *t = DatumGetTextPP(elems[i]);

		GpuirQueryInputText(&ins[i], VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
		inp[i] = &ins[i];
		modes[i] = mode;
	}
	open_search("gpuir_search_batch", indexoid, &heap, &index);
	search_batch_put(rsinfo, heap, index, inp, modes, pos, nq, k);
	close_search(heap, index);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(gpuir_search_batch_tsquery);

/*
 * gpuir_search_batch(index regclass, queries tsquery[], k integer, mode text)
 *		RETURNS TABLE (query_no integer, ctid tid, score real)
 *
 * gpuir_search(index, tsquery, k, mode) for every element of queries, as
 * gpuir_search_batch's text form (one request per engine mode: queries
 * whose positive lexemes are all required run as AND).  Errors as both.
 */
Datum
gpuir_search_batch_tsquery(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ArrayType  *arr = PG_GETARG_ARRAYTYPE_P(1);
	int32		k = PG_GETARG_INT32(2);
	text	   *modetext = PG_GETARG_TEXT_PP(3);
	GpuirMode	mode = search_args(k, modetext);
	char	   *modename = text_to_cstring(modetext);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	heap;
	Relation	index;
	Datum	   *elems;
	int		   *pos;
	int			nq;
	GpuirTsQueryPlan **plans;
	const GpuirQueryInput **inp;
	GpuirMode  *modes;

	InitMaterializedSRF(fcinfo, 0);
	nq = batch_elements(arr, TSQUERYOID, &elems, &pos);
	plans = palloc(sizeof(GpuirTsQueryPlan *) * Max(nq, 1));
	inp = palloc(sizeof(GpuirQueryInput *) * Max(nq, 1));
	modes = palloc(sizeof(GpuirMode) * Max(nq, 1));
	open_search("gpuir_search_batch", indexoid, &heap, &index);
	for (int i = 0; i < nq; i++)
	{
		plans[i] = GpuirTsQueryPlanMake(DatumGetTSQuery(elems[i]), index, mode, modename);
		inp[i] = GpuirTsQueryPlanInput(plans[i], &modes[i]);
	}
	search_batch_put(rsinfo, heap, index, inp, modes, pos, nq, k);
	for (int i = 0; i < nq; i++)
		GpuirTsQueryPlanEnd(plans[i]);
	close_search(heap, index);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(gpuir_query_terms);

/*
 * gpuir_query_terms(index regclass, query text)
 *		RETURNS TABLE (lexeme text, df bigint, idf real)
 *
 * How gpuir sees a query: its distinct lexemes under the index's text search
 * configuration, in the order scores are summed, with their global document
 * frequency and BM25 idf (ln(1 + (N - df + 0.5) / (df + 0.5))).  The sum of
 * df is the number of postings the query's lists hold (what gpuir.device =
 * auto compares with gpuir.gpu_min_postings).  Errors: 42809, 42501
 * (check_read_access).
 */
Datum
gpuir_query_terms(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	text	   *query = PG_GETARG_TEXT_PP(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Relation	heap;
	Relation	index;
	char	  **lexemes;
	int64	   *dfs;
	float4	   *idfs;
	int			n;

	InitMaterializedSRF(fcinfo, 0);
	open_search("gpuir_query_terms", indexoid, &heap, &index);
	n = GpuirQueryTerms(index, heap, VARDATA_ANY(query), VARSIZE_ANY_EXHDR(query),
						&lexemes, &dfs, &idfs);
	for (int i = 0; i < n; i++)
	{
		Datum		values[3];
		bool		nulls[3] = {false, false, false};

		values[0] = CStringGetTextDatum(lexemes[i]);
		values[1] = Int64GetDatum(dfs[i]);
		values[2] = Float4GetDatum(idfs[i]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	close_search(heap, index);
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(gpuir_merge);

/*
 * gpuir_merge(index regclass) RETURNS void
 *
 * Fold the insert buffer and every segment into one segment, dropping rows
 * VACUUM removed, then compact (gpuircompact.c: move the new segment down
 * and truncate the reusable free pages at the end).
 * Needs ownership of the index; takes RowExclusiveLock on it and waits for
 * the merge lock (held by other merges and VACUUM): queries and inserts go
 * on meanwhile.  Errors: 42809, 42501, 55000 during
 * recovery.
 */
Datum
gpuir_merge(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	index;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("recovery is in progress"),
				 errhint("gpuir indexes cannot be merged during recovery.")));
	(void) gpuir_index_table(indexoid);
	if (!gpuir_ownercheck(indexoid))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX, get_rel_name(indexoid));
	index = GpuirOpenIndex(indexoid, RowExclusiveLock);
	GpuirMerge(index, GPUIR_POLICY_FULL, true);
	GpuirCompact(index, false);
	relation_close(index, RowExclusiveLock);
	PG_RETURN_VOID();
}

typedef struct InfoState
{
	int64		live;
	int64		deleted;
} InfoState;

static void
info_record(const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
			uint64 offset, void *arg)
{
	InfoState  *st = arg;

	if (rec->flags & GPUIR_REC_DELETED)
		st->deleted++;
	else
		st->live++;
}

PG_FUNCTION_INFO_V1(gpuir_index_info);

/*
 * gpuir_index_info(index regclass) RETURNS record (docs, deleted_docs, terms,
 * postings, segments, buffer_docs, pages, bytes_per_posting, free_pages,
 * segment_maps)
 *
 * docs: N, the live indexed rows; deleted_docs: rows VACUUM removed that a
 * merge has not dropped yet; terms: dictionary entries summed over segments;
 * postings: postings stored in segments; buffer_docs: live rows in the
 * insert buffer; pages: index pages; bytes_per_posting: bytes of compressed
 * blocks and block headers per segment posting (NULL without postings);
 * free_pages: pages of replaced segments on the free space map, which later
 * merges reuse (pgstatindex's deleted_pages); segment_maps: segments with
 * a stream in pieces, on the extents their map page lists (src/README,
 * "Segment maps").  The last two are not in 0.1.0's definition, whose eight
 * columns are returned alone.
 */
Datum
gpuir_index_info(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Relation	heap;
	Relation	index;
	GpuirMetaPageData meta;
	TupleDesc	tupdesc;
	Datum		values[10];
	bool		nulls[10] = {false};
	int32		maps = 0;
	InfoState	st = {0, 0};
	int64		terms = 0,
				postings = 0,
				deleted = 0,
				bytes = 0;
	char	   *bufdata;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	open_search("gpuir_index_info", indexoid, &heap, &index);
	bufdata = GpuirBufferSnapshot(index, &meta, NULL);
	GpuirBufferForEach(index, bufdata, meta.buf_nbytes, info_record, &st);
	for (uint32 s = 0; s < meta.nsegments; s++)
	{
		terms += meta.segments[s].nterms;
		postings += meta.segments[s].npostings;
		deleted += meta.segments[s].ndeleted;
		bytes += meta.segments[s].streams[GPUIR_S_PAYLOAD].nbytes +
			meta.segments[s].streams[GPUIR_S_BLOCKDIR].nbytes;
		maps += meta.segments[s].map != 0;
	}
	values[0] = Int64GetDatum((int64) meta.ndocs);
	values[1] = Int64GetDatum(deleted + st.deleted);
	values[2] = Int64GetDatum(terms);
	values[3] = Int64GetDatum(postings);
	values[4] = Int32GetDatum((int32) meta.nsegments);
	values[5] = Int64GetDatum(st.live);
	values[6] = Int64GetDatum((int64) RelationGetNumberOfBlocks(index));
	if (postings > 0)
		values[7] = Float8GetDatum((double) bytes / (double) postings);
	else
		nulls[7] = true;
	if (tupdesc->natts > 8)
	{
		uint64		free_pages;

		GpuirFreePages(index, &free_pages, NULL);
		values[8] = Int64GetDatum((int64) free_pages);
	}
	if (tupdesc->natts > 9)
		values[9] = Int32GetDatum(maps);
	close_search(heap, index);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

PG_FUNCTION_INFO_V1(gpuir_last_query_stats);

/*
 * gpuir_last_query_stats() RETURNS record (blocks_decoded, blocks_skipped,
 * docs_scored): work counters of this session's last gpuir query (function
 * or index scan).  blocks_skipped counts blocks passed over by their header
 * without decoding.
 */
Datum
gpuir_last_query_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[3];
	bool		nulls[3] = {false, false, false};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum(GpuirLastQueryStats.blocks_decoded);
	values[1] = Int64GetDatum(GpuirLastQueryStats.blocks_skipped);
	values[2] = Int64GetDatum(GpuirLastQueryStats.docs_scored);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * order_value: the <@> value of the row whose indexed text is doc (as the
 * executor passed it, not detoasted), for the query whose score-source key
 * is key[0..keylen) (GpuirScoreOf), or 0A000
 */
static float8
order_value(Datum doc, const char *key, int keylen)
{
	float4		score;

	if (key != NULL && GpuirScoreOf(key, keylen, doc, &score))
		return -(float8) score;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("the <@> value of this row is not known: no gpuir index scan of this query returned it"),
			 errhint("Use <@> as ORDER BY column <@> query on a column with a gpuir index (its value in the select list is the score of that scan), or call gpuir_search() for scores.")));
	return 0;
}

PG_FUNCTION_INFO_V1(gpuir_bm25_order);

/*
 * gpuir_bm25_order(doc text, query text) RETURNS float8, the function of the
 * <@> operator: minus the BM25 score of doc for query.  The score needs the
 * collection statistics of a gpuir index (N, avgdl, df), so it is the score
 * that the open gpuir index scan of this query which returned the row
 * computed (GpuirScoreOf: each scan's own statistics, whatever the plan);
 * a NULL doc gives NULL.  Raises 0A000 for a row no such scan returned
 * (the operator evaluated outside ORDER BY column <@> query on a gpuir
 * index) or one that two scans with different statistics could have
 * returned.
 */
Datum
gpuir_bm25_order(PG_FUNCTION_ARGS)
{
	text	   *query;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		(void) order_value(PG_GETARG_DATUM(0), NULL, -1);
	query = PG_GETARG_TEXT_PP(1);
	PG_RETURN_FLOAT8(order_value(PG_GETARG_DATUM(0), VARDATA_ANY(query),
								 VARSIZE_ANY_EXHDR(query)));
}

PG_FUNCTION_INFO_V1(gpuir_bm25_order_tsquery);

/*
 * gpuir_bm25_order_tsquery(doc text, query tsquery) RETURNS float8: the
 * <@> operator of a tsquery, as gpuir_bm25_order (the score of the open
 * gpuir index scan of this tsquery that returned the row: BM25 over the
 * query's positive lexemes, gpuirtsquery.c).
 */
Datum
gpuir_bm25_order_tsquery(PG_FUNCTION_ARGS)
{
	char	   *key;
	int			keylen;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (PG_ARGISNULL(1))
		(void) order_value(PG_GETARG_DATUM(0), NULL, -1);
	key = GpuirTsQueryKey(PG_GETARG_TSQUERY(1), &keylen);
	PG_RETURN_FLOAT8(order_value(PG_GETARG_DATUM(0), key, keylen));
}

/*
 * headline: ts_headline_byid_opt(cfg, doc, query, options) with cfg the
 * text search configuration of indexoid's gpuir index (42809 for another
 * relation); query is tsq, or when NULL the text query textq as gpuir ranks
 * it (GpuirTextAsTsquery)
 */
static Datum
headline(Oid indexoid, text *doc, TSQuery tsq, text *textq, text *options)
{
	Relation	index = GpuirOpenIndex(indexoid, AccessShareLock);
	GpuirMetaPageData meta;

	GpuirReadMeta(index, &meta);
	relation_close(index, AccessShareLock);
	if (tsq == NULL)
		tsq = GpuirTextAsTsquery(meta.cfg_id, VARDATA_ANY(textq), VARSIZE_ANY_EXHDR(textq));
	return DirectFunctionCall4(ts_headline_byid_opt, ObjectIdGetDatum(meta.cfg_id),
							   PointerGetDatum(doc), PointerGetDatum(tsq),
							   PointerGetDatum(options));
}

PG_FUNCTION_INFO_V1(gpuir_headline_tsquery);

/*
 * gpuir_headline(index regclass, doc text, query tsquery, options text)
 *		RETURNS text
 *
 * PostgreSQL's ts_headline of doc for query with the index's text search
 * configuration, so that the words gpuir matched are the ones highlighted;
 * options as ts_headline's (StartSel, StopSel, MaxWords, MinWords,
 * MaxFragments, ...).  Errors: 42809 unless a gpuir index; ts_headline's
 * own for bad options.
 */
Datum
gpuir_headline_tsquery(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(headline(PG_GETARG_OID(0), PG_GETARG_TEXT_PP(1), PG_GETARG_TSQUERY(2),
							 NULL, PG_GETARG_TEXT_PP(3)));
}

PG_FUNCTION_INFO_V1(gpuir_headline);

/*
 * gpuir_headline(index regclass, doc text, query text, options text)
 *		RETURNS text
 *
 * gpuir_headline for a text query (a bag of words): every lexeme of it
 * that the ranking counted is highlighted (GpuirTextAsTsquery).
 */
Datum
gpuir_headline(PG_FUNCTION_ARGS)
{
	PG_RETURN_DATUM(headline(PG_GETARG_OID(0), PG_GETARG_TEXT_PP(1), NULL,
							 PG_GETARG_TEXT_PP(2), PG_GETARG_TEXT_PP(3)));
}
