/*-------------------------------------------------------------------------
 *
 * gpuirtokenize.c
 *	  Tokenizing documents and queries with PostgreSQL's text search: the
 *	  parser and dictionaries of a text search configuration (regconfig).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "tsearch/ts_cache.h"
#include "tsearch/ts_utils.h"
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

static int
parsedword_cmp(const void *a, const void *b)
{
	const ParsedWord *wa = a;
	const ParsedWord *wb = b;

	return GpuirLexemeCmp(wa->word, wa->len, wb->word, wb->len);
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
	int			n = 0;

	prs.lenwords = Min(len / 6 + 2, (int) (MaxAllocSize / sizeof(ParsedWord) / 2));
	prs.curwords = 0;
	prs.pos = 0;
	prs.words = palloc(sizeof(ParsedWord) * prs.lenwords);
	parsetext(cfg_id, &prs, (char *) text, len);

	out->dl = prs.curwords;
	out->terms = palloc(sizeof(GpuirTerm) * Max(prs.curwords, 1));
	if (prs.curwords > 0)
	{
		qsort(prs.words, prs.curwords, sizeof(ParsedWord), parsedword_cmp);
		for (int i = 0; i < prs.curwords; i++)
		{
			ParsedWord *w = &prs.words[i];

			if (n > 0 &&
				GpuirLexemeCmp(out->terms[n - 1].lexeme, out->terms[n - 1].len,
							   w->word, w->len) == 0)
				out->terms[n - 1].tf++;
			else
			{
				out->terms[n].lexeme = w->word;
				out->terms[n].len = w->len;
				out->terms[n].tf = 1;
				n++;
			}
		}
	}
	out->nterms = n;
}
