/*-------------------------------------------------------------------------
 *
 * gpuirtokenize.c
 *	  Tokenizing documents and queries with PostgreSQL's text search: the
 *	  parser and dictionaries of a text search configuration (regconfig).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>
#include <math.h>

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "tsearch/ts_cache.h"
#include "tsearch/ts_utils.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/regproc.h"
#include "utils/varlena.h"

#include "gpuir.h"

/*
 * GpuirResolveConfig: the text search configuration named by the index's
 * text_config option, or default_text_search_config.  Raises 42704
 * (undefined_object) for an unknown configuration.  From PostgreSQL 17 on,
 * CREATE INDEX and REINDEX run with search_path = pg_catalog, pg_temp, so an
 * unqualified name finds only the built-in configurations: the error then
 * says to schema-qualify it.
 */
Oid
GpuirResolveConfig(Relation index)
{
	GpuirOptions *opts = (GpuirOptions *) index->rd_options;

	if (opts && opts->text_config_offset != 0)
	{
		char	   *name = (char *) opts + opts->text_config_offset;
		List	   *names = gpuir_qualified_name_list(name);
		Oid			cfg = get_ts_config_oid(names, true);

		if (!OidIsValid(cfg))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_OBJECT),
					 errmsg("text search configuration \"%s\" does not exist", name),
					 list_length(names) == 1 ?
					 errhint("CREATE INDEX and REINDEX look names up with search_path = pg_catalog, pg_temp on PostgreSQL 17 and later: schema-qualify the configuration, e.g. text_config = 'public.%s'.", name) : 0));
		return cfg;
	}
	return getTSCurrentConfig(true);
}

/*
 * GpuirTokenize: tokenize text[0..len) with configuration cfg_id into its
 * distinct lexemes, sorted, each with tf = occurrences of the lexeme after
 * the dictionaries; dl = number of lexemes emitted (stopwords excluded).
 * Unlike tsvector, tf and dl are not capped (tsvector keeps at most 256
 * positions per lexeme).  Result allocated in the current memory context.
 */
void
GpuirTokenize(Oid cfg_id, const char *text, int len, GpuirDocTerms *out)
{
	ParsedText	prs;

	prs.lenwords = Min(len / 6 + 2, (int) (MaxAllocSize / sizeof(ParsedWord) / 2));
	prs.curwords = 0;
	prs.pos = 0;
	prs.words = palloc(sizeof(ParsedWord) * prs.lenwords);
	parsetext(cfg_id, &prs, (char *) text, len);

	out->dl = prs.curwords;
	out->prior = 0.0f;
	out->terms = palloc(sizeof(GpuirTerm) * Max(prs.curwords, 1));
	for (int i = 0; i < prs.curwords; i++)
	{
		out->terms[i].lexeme = prs.words[i].word;
		out->terms[i].len = prs.words[i].len;
		out->terms[i].tf = 1;
	}
	/* tf = the occurrences: each lexeme's 1s summed */
	out->nterms = GpuirTermsSortMerge(out->terms, prs.curwords, true);
}

/*
 * GpuirTokenizeRow: a row of an index over natts text columns (values,
 * isnull: the index's columns, as FormIndexDatum or the build's callback
 * give them) as one document, scored as BM25F by Robertson, Zaragoza and
 * Taylor, "Simple BM25 extension to multiple weighted fields" (CIKM 2004,
 * s.4): a column of weight w counts as if its text stood w times in one
 * document, so a lexeme's tf = sum over columns of w * tf in that column
 * and dl = sum of w * dl, and BM25's saturation and length normalisation
 * apply once to these sums.  weights[i] is column i's weight (0 reads as
 * 1).  NULL columns add nothing; returns false when every column is NULL
 * (the row is not indexed).  Raises 54000 when a weighted tf or dl passes
 * 2^32 - 1.  With one column of weight 1 this is GpuirTokenize.
 */
bool
GpuirTokenizeRow(Oid cfg_id, const uint16 *weights, int natts,
				 const Datum *values, const bool *isnull, GpuirDocTerms *out)
{
	GpuirDocTerms cols[INDEX_MAX_KEYS];
	uint16		w[INDEX_MAX_KEYS];
	int			ncols = 0;
	int			nterms = 0;
	uint64		dl = 0;
	GpuirTerm  *all;
	int			n = 0;

	Assert(natts >= 1 && natts <= INDEX_MAX_KEYS);
	for (int i = 0; i < natts; i++)
	{
		text	   *t;

		if (isnull[i])
			continue;
		t = DatumGetTextPP(values[i]);
		GpuirTokenize(cfg_id, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &cols[ncols]);
		w[ncols] = weights[i] == 0 ? 1 : weights[i];
		dl += (uint64) w[ncols] * cols[ncols].dl;
		nterms += cols[ncols].nterms;
		ncols++;
	}
	if (ncols == 0)
		return false;
	if (dl > PG_UINT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("document too long for gpuir: its weighted length is %llu lexemes",
						(unsigned long long) dl),
				 errdetail("A gpuir document's length, each column's lexemes times its weight, is at most %u.",
						   PG_UINT32_MAX),
				 errhint("Lower the index's weights or index a shorter text.")));
	if (ncols == 1 && w[0] == 1)
	{
		*out = cols[0];
		return true;
	}

	/* every column's lexemes, tf weighted, sorted; then equal lexemes summed */
	all = palloc(sizeof(GpuirTerm) * Max(nterms, 1));
	for (int c = 0; c < ncols; c++)
		for (int i = 0; i < cols[c].nterms; i++)
		{
			all[n] = cols[c].terms[i];
			all[n].tf *= w[c];	/* tf <= dl, so w * tf <= the weighted dl */
			n++;
		}
	out->terms = all;
	out->nterms = GpuirTermsSortMerge(all, n, true);	/* a sum <= the weighted dl */
	out->dl = (uint32) dl;
	out->prior = 0.0f;
	return true;
}

/*
 * GpuirPriorTypeOk: may a column of type typid be an index's prior (its
 * INCLUDE column)?  Integers, real, double precision and numeric.
 */
bool
GpuirPriorTypeOk(Oid typid)
{
	return typid == INT2OID || typid == INT4OID || typid == INT8OID ||
		typid == FLOAT4OID || typid == FLOAT8OID || typid == NUMERICOID;
}

/*
 * GpuirRowPrior: the document prior of a row of index (values, isnull: all
 * the index's columns, keys then the INCLUDE column), rounded to float4: the
 * INCLUDE column's value (a numeric through double precision, as
 * numeric_float8 converts it), 0 when NULL or when the index has no INCLUDE
 * column.  Raises 22003 (numeric_value_out_of_range) for a negative, NaN or
 * infinite prior, or one past float4's range: priors are non-negative so
 * that every score is, and the bounds of WAND and Block-Max WAND hold
 * (src/README, "Document priors").
 */
float4
GpuirRowPrior(Relation index, const Datum *values, const bool *isnull)
{
	int			col = IndexRelationGetNumberOfKeyAttributes(index);
	Oid			typid;
	double		v;

	if (IndexRelationGetNumberOfAttributes(index) <= col || isnull[col])
		return 0.0f;
	typid = TupleDescAttr(RelationGetDescr(index), col)->atttypid;
	switch (typid)
	{
		case INT2OID:
			v = DatumGetInt16(values[col]);
			break;
		case INT4OID:
			v = DatumGetInt32(values[col]);
			break;
		case INT8OID:
			v = (double) DatumGetInt64(values[col]);
			break;
		case FLOAT4OID:
			v = DatumGetFloat4(values[col]);
			break;
		case FLOAT8OID:
			v = DatumGetFloat8(values[col]);
			break;
		case NUMERICOID:
			v = DatumGetFloat8(DirectFunctionCall1(numeric_float8, values[col]));
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("the INCLUDE column of gpuir index \"%s\" is not a number",
							RelationGetRelationName(index))));
	}
	if (!(v >= 0.0 && v <= FLT_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("document prior %g of gpuir index \"%s\" is out of range", v,
						RelationGetRelationName(index)),
				 errdetail("A document prior (the index's INCLUDE column) must be a finite number >= 0 within the range of real."),
				 errhint("Shift or rescale the column's values, or leave a row's prior NULL (read as 0).")));
	return (float4) v;
}
