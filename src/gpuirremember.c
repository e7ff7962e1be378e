/*-------------------------------------------------------------------------
 *
 * gpuirremember.c
 *	  The scoring context of this backend's last gpuir index scan, which
 *	  the <@> function uses to give the score of the rows the scan returns.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "gpuirengine.h"

/*
 * The scoring context of the last index scan of this backend (query text,
 * configuration, BM25 constants and idf of each query term), kept in
 * TopMemoryContext so that the <@> operator can give the score of the rows
 * that scan returns (GpuirRememberedScore).
 */
typedef struct RememberedScoring
{
	char	   *query;
	int			querylen;
	Oid			cfg_id;
	GpuirScoring sc;
	int			nterms;
	char	  **lexemes;
	uint16	   *lens;
	float4	   *idf;
} RememberedScoring;



static RememberedScoring *remembered = NULL;

/*
 * GpuirRememberScoring: keep q's scoring context (query text, configuration,
 * BM25 constants, idf per term) for GpuirRememberedScore.
 */
void
GpuirRememberScoring(const GpuirQuery *q, const char *query, int querylen)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	RememberedScoring *r;

	if (remembered)
	{
		for (int t = 0; t < remembered->nterms; t++)
			pfree(remembered->lexemes[t]);
		pfree(remembered->query);
		if (remembered->nterms > 0)
		{
			pfree(remembered->lexemes);
			pfree(remembered->lens);
			pfree(remembered->idf);
		}
		pfree(remembered);
		remembered = NULL;
	}
	r = palloc0(sizeof(RememberedScoring));
	r->query = palloc(Max(querylen, 1));
	memcpy(r->query, query, querylen);
	r->querylen = querylen;
	r->cfg_id = q->meta.cfg_id;
	r->sc = q->sc;
	r->nterms = q->nterms;
	if (q->nterms > 0)
	{
		r->lexemes = palloc(sizeof(char *) * q->nterms);
		r->lens = palloc(sizeof(uint16) * q->nterms);
		r->idf = palloc(sizeof(float4) * q->nterms);
	}
	for (int t = 0; t < q->nterms; t++)
	{
		r->lexemes[t] = palloc(Max(q->terms[t].len, 1));
		memcpy(r->lexemes[t], q->terms[t].lexeme, q->terms[t].len);
		r->lens[t] = q->terms[t].len;
		r->idf[t] = q->terms[t].idf;
	}
	remembered = r;
	MemoryContextSwitchTo(old);
}

/*
 * GpuirRememberedScore: the BM25 score of document doc for query with the
 * statistics of this backend's last gpuir index scan, if that scan ran the
 * same query text (returns false otherwise).  The document is tokenized
 * again, so the value is exact for any row, with the same float32 formula
 * and term order as the engine.
 */
bool
GpuirRememberedScore(const char *query, int querylen, const char *doc, int doclen,
					 float4 *score)
{
	GpuirDocTerms dt;
	float4		s = 0.0f;
	int			j = 0;

	if (remembered == NULL || remembered->querylen != querylen ||
		memcmp(remembered->query, query, querylen) != 0)
		return false;
	GpuirTokenize(remembered->cfg_id, doc, doclen, &dt);
	for (int t = 0; t < remembered->nterms && j < dt.nterms;)
	{
		int			c = GpuirLexemeCmp(remembered->lexemes[t], remembered->lens[t],
									   dt.terms[j].lexeme, dt.terms[j].len);

		if (c == 0)
		{
			s += GpuirBM25(remembered->idf[t], dt.terms[j].tf, dt.dl, &remembered->sc);
			t++;
			j++;
		}
		else if (c < 0)
			t++;
		else
			j++;
	}
	*score = s;
	return true;
}

