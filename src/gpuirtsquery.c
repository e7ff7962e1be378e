/*-------------------------------------------------------------------------
 *
 * gpuirtsquery.c
 *	  tsquery in, BM25 out: the rows of a gpuir index's table that match a
 *	  tsquery, exactly those to_tsvector(cfg, column) @@ tsquery holds (cfg:
 *	  the index's text search configuration; over several columns, their
 *	  tsvectors concatenated), ranked by BM25 over the query's positive
 *	  lexemes.
 *
 * A tsquery's lexemes are used as they are: they were normalised when the
 * tsquery was made, so to_tsquery and its kin should be called with the
 * index's configuration.  A lexeme is positive when an even number of !
 * (NOT) operators stand above it.  A row's score is the BM25 sum over the
 * distinct positive lexemes it holds, each counted once however often the
 * query repeats it; a prefix a:* stands for every indexed lexeme that
 * begins with a (GpuirQueryPrepare expands it through the dictionaries, at
 * most GPUIR_MAX_QUERY_TERMS lexemes); a lexeme inside a phrase adds its
 * BM25 for all its occurrences in the row, not only those in the phrase.
 * Negative lexemes add nothing.
 *
 * Evaluation.  The query is monotone in its positive lexemes and
 * antitone in its negative ones, so it matches a row holding none of its
 * positive lexemes iff it is true with every lexeme absent; such queries
 * (!a, !a | b) raise 0A000, and every other matching row holds a positive
 * lexeme.  The engine therefore runs over the positive lexemes: in AND mode
 * when each of them is required (reached from the root through & and <N>
 * only, and not a prefix), else in the caller's mode (or, wand, bmw), and
 * offers candidates best first; a row that does not match is dropped before
 * it enters the top-k heap (GpuirQueryInput's filter), so the heap's k-th
 * score stays a valid threshold for WAND and BMW and the top-k is exact.
 * The match is decided by PostgreSQL itself: ts_match_vq (@@) of
 * to_tsvector_byid over the row's indexed value, so NOT, phrases with their
 * distances, weights and prefixes mean what they mean for GIN.  Queries the
 * posting lists decide alone skip that recheck: only | over lexemes and
 * prefixes (a row matches iff it holds one), or only & over lexemes (AND
 * mode), none with a weight restriction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/index.h"
#include "executor/executor.h"
#include "tsearch/ts_type.h"
#include "tsearch/ts_utils.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "gpuir.h"

struct GpuirTsQueryPlan
{
	GpuirQueryInput in;			/* the positive lexemes, and the recheck */
	GpuirMode	mode;
	bool		empty;			/* no lexeme at all: no rows */
	/* the recheck (ts_recheck), its executor state made when first needed */
	TSQuery		query;
	Relation	index;
	Oid			cfg;
	MemoryContext cxt;
	IndexInfo  *ii;
	EState	   *estate;
};

/* what a walk over the query's items found */
typedef struct TsWalk
{
	TSQuery		query;
	GpuirQueryWord *words;		/* the positive lexemes */
	int			nwords;
	bool		conjunctive;	/* every positive lexeme required */
	bool		has_not;
	bool		has_phrase;
	bool		has_and;
	bool		has_or;
	bool		has_weight;
	bool		has_prefix;
} TsWalk;

/*
 * ts_walk: the operands under item; nots: the ! above it; and_path: only
 * & and <N> lie between it and the root
 */
static void
ts_walk(TsWalk *w, QueryItem *item, int nots, bool and_path)
{
	check_stack_depth();
	if (item->type == QI_VAL)
	{
		QueryOperand *op = &item->qoperand;

		if (op->weight != 0)
			w->has_weight = true;
		if (op->prefix)
			w->has_prefix = true;
		if (nots % 2 == 0)
		{
			GpuirQueryWord *word = &w->words[w->nwords++];

			word->lexeme = GETOPERAND(w->query) + op->distance;
			word->len = op->length;
			word->prefix = op->prefix;
			if (!and_path || op->prefix)
				w->conjunctive = false;
		}
		return;
	}
	switch (item->qoperator.oper)
	{
		case OP_NOT:
			w->has_not = true;
			ts_walk(w, item + 1, nots + 1, false);
			return;
		case OP_AND:
			w->has_and = true;
			break;
		case OP_PHRASE:
			w->has_phrase = true;
			break;
		case OP_OR:
			w->has_or = true;
			and_path = false;
			break;
		default:
			elog(ERROR, "unrecognized tsquery operator: %d", item->qoperator.oper);
	}
	ts_walk(w, item + 1, nots, and_path);
	ts_walk(w, item + item->qoperator.left, nots, and_path);
}

/* every lexeme absent: the callback of the "matches rows without a positive lexeme" test */
static TSTernaryValue
all_absent(void *arg, QueryOperand *val, ExecPhraseData *data)
{
	return TS_NO;
}

/* the tsquery as its text, for messages */
static char *
tsquery_text(TSQuery query)
{
	return DatumGetCString(DirectFunctionCall1(tsqueryout, PointerGetDatum(query)));
}

/*
 * ts_recheck: GpuirRowFilter of a plan: does the visible heap row in slot
 * match the tsquery?  to_tsvector_byid of the row's indexed value with the
 * index's configuration (of an index over several columns: each non-NULL
 * column's, concatenated in column order with tsvector's ||, as
 * to_tsvector(cfg, a) || to_tsvector(cfg, b)), then ts_match_vq, in
 * per-row memory.
 */
static bool
ts_recheck(void *arg, TupleTableSlot *slot)
{
	GpuirTsQueryPlan *p = arg;
	ExprContext *econtext;
	MemoryContext old;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	Datum		vector = (Datum) 0;
	bool		match;

	if (p->estate == NULL)
	{
		old = MemoryContextSwitchTo(p->cxt);
		p->ii = BuildIndexInfo(p->index);
		p->estate = CreateExecutorState();
		MemoryContextSwitchTo(old);
	}
	econtext = GetPerTupleExprContext(p->estate);
	ResetExprContext(econtext);
	econtext->ecxt_scantuple = slot;
	old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
	FormIndexDatum(p->ii, slot, p->estate, values, isnull);
	/* several columns: their tsvectors concatenated, NULL ones left out */
	for (int i = 0; i < p->ii->ii_NumIndexKeyAttrs; i++)
	{
		Datum		v;

		if (isnull[i])
			continue;
		v = DirectFunctionCall2(to_tsvector_byid, ObjectIdGetDatum(p->cfg), values[i]);
		vector = vector == (Datum) 0 ? v : DirectFunctionCall2(tsvector_concat, vector, v);
	}
	match = vector != (Datum) 0 &&
		DatumGetBool(DirectFunctionCall2(ts_match_vq, vector, PointerGetDatum(p->query)));
	MemoryContextSwitchTo(old);
	return match;
}

/*
 * GpuirTsQueryPlanMake: how to answer query on index (see the file's
 * comment): its positive lexemes, the row filter when the lists alone do
 * not decide a match, and the engine's mode (AND when every positive lexeme
 * is required, else mode, which must be or, wand or bmw).  The plan refers
 * to query, which must live as long; allocated in CurrentMemoryContext.
 * Raises 22023 for another mode and 0A000 for a query that matches rows
 * holding none of its positive lexemes.  An empty query (only stopwords)
 * gives a plan with no lexeme: GpuirTsQueryPlanInput is NULL, no rows match.
 */
GpuirTsQueryPlan *
GpuirTsQueryPlanMake(TSQuery query, Relation index, GpuirMode mode, const char *modename)
{
	GpuirTsQueryPlan *p = palloc0(sizeof(GpuirTsQueryPlan));
	TsWalk		w;
	GpuirMetaPageData meta;

	if (mode != GPUIR_MODE_OR && mode != GPUIR_MODE_WAND && mode != GPUIR_MODE_BMW)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("gpuir mode \"%s\" does not apply to a tsquery", modename),
				 errdetail("A tsquery's operators say which lexemes a row must hold; the mode picks the algorithm for its | (OR) parts."),
				 errhint("Pass or, wand or bmw, and write & between lexemes that a row must hold.")));
	p->query = query;
	p->index = index;
	p->cxt = CurrentMemoryContext;
	p->mode = mode;
	if (query->size == 0)
	{
		p->empty = true;
		return p;
	}

	memset(&w, 0, sizeof(w));
	w.query = query;
	w.words = palloc(sizeof(GpuirQueryWord) * query->size);
	w.conjunctive = true;
	ts_walk(&w, GETQUERY(query), 0, true);
	if (TS_execute(GETQUERY(query), NULL, TS_EXEC_EMPTY, all_absent))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuir cannot rank the tsquery %s: it matches rows that hold none of its lexemes",
						tsquery_text(query)),
				 errdetail("gpuir ranks the rows that hold at least one lexeme not negated by !; this query is also true of rows without any."),
				 errhint("Add a lexeme every row must hold (a & !b rather than !b), or filter with @@ over a GIN index.")));

	p->in.words = w.words;
	p->in.nwords = w.nwords;
	if (w.conjunctive)
		p->mode = GPUIR_MODE_AND;
	if (!((!w.has_not && !w.has_phrase && !w.has_and && !w.has_weight) ||
		  (!w.has_not && !w.has_phrase && !w.has_or && !w.has_weight && !w.has_prefix)))
	{
		GpuirReadMeta(index, &meta);
		p->cfg = meta.cfg_id;
		p->in.filter = ts_recheck;
		p->in.filter_arg = p;
	}
	return p;
}

/* GpuirTsQueryPlanInput: the plan's GpuirQueryInput, NULL when no row can match */
const GpuirQueryInput *
GpuirTsQueryPlanInput(const GpuirTsQueryPlan *p, GpuirMode *mode)
{
	*mode = p->mode;
	return p->empty ? NULL : &p->in;
}

/* GpuirTsQueryPlanEnd: release the recheck's executor state */
void
GpuirTsQueryPlanEnd(GpuirTsQueryPlan *p)
{
	if (p->estate != NULL)
		FreeExecutorState(p->estate);
	p->estate = NULL;
	p->ii = NULL;
}

/*
 * GpuirTsQueryKey: the score sources' key of a tsquery (gpuirremember.c
 * matches a scan to its <@> calls by the query's bytes): a NUL byte, which
 * no text holds (so no text query has the same key), then the tsquery's
 * bytes.  palloc'd; *len receives its length.
 */
char *
GpuirTsQueryKey(TSQuery query, int *len)
{
	int			n = VARSIZE(query) - VARHDRSZ;
	char	   *key = palloc(n + 1);

	key[0] = '\0';
	memcpy(key + 1, VARDATA(query), n);
	*len = n + 1;
	return key;
}

/*
 * GpuirTextAsTsquery: a text query as gpuir ranks it, as a tsquery: its
 * distinct lexemes under configuration cfg ORed ('a' | 'b'), built with
 * tsquery's own input function from quoted lexemes (so they are not
 * normalised twice); an empty tsquery when it has none.  For ts_headline.
 */
TSQuery
GpuirTextAsTsquery(Oid cfg, const char *text, int len)
{
	GpuirDocTerms terms;
	StringInfoData buf;

	GpuirTokenize(cfg, text, len, &terms);
	if (terms.nterms == 0)
	{
		TSQuery		empty = palloc0(HDRSIZETQ);

		SET_VARSIZE(empty, HDRSIZETQ);
		empty->size = 0;
		return empty;
	}
	initStringInfo(&buf);
	for (int t = 0; t < terms.nterms; t++)
	{
		if (t > 0)
			appendStringInfoString(&buf, " | ");
		appendStringInfoChar(&buf, '\'');
		for (int i = 0; i < terms.terms[t].len; i++)
		{
			char		c = terms.terms[t].lexeme[i];

			if (c == '\'' || c == '\\')
				appendStringInfoChar(&buf, '\\');
			appendStringInfoChar(&buf, c);
		}
		appendStringInfoChar(&buf, '\'');
	}
	return DatumGetTSQuery(DirectFunctionCall1(tsqueryin, CStringGetDatum(buf.data)));
}
