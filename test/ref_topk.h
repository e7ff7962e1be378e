/*-------------------------------------------------------------------------
 *
 * ref_topk.h
 *	  The exact CPU reference top-k of test/test_cuda_search.c, its
 *	  oracle: the float32 BM25 expression (bm25; compile with
 *	  -ffp-contract=off so that it rounds like the engine and the kernels,
 *	  which are built with --fmad=false) and a bounded heap keeping the k
 *	  best results by score descending, docID ascending (the engine's total
 *	  order, src/README "Exactness").
 *
 * bm25 is deliberately an independent reference: it re-states the formula
 * instead of calling the engine's GpuirBM25Expr (src/gpuirlist.h), so that a
 * change to the engine's expression makes the tests fail rather than move
 * the oracle with it.  bench/engine_bench scores with GpuirBM25Expr, the
 * engine's own; it includes this header only for Res and the heap.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_REF_TOPK_H
#define GPUIR_REF_TOPK_H

#include <stdint.h>

#include "../cuda/gpuir_cuda.h"

/* GpuirBM25 of src/gpuir.h, the same float32 expression */
static inline float
bm25(float idf, uint32_t tf, uint32_t dl, const gpuir_cuda_scoring *s)
{
	float		tff = (float) tf;
	float		norm = s->k1 * ((1.0f - s->b) + s->b * ((float) dl / s->avgdl));

	return idf * (tff * (s->k1 + 1.0f)) / (tff + norm);
}

typedef struct Res
{
	float		score;
	uint32_t	doc;
} Res;

/* is a ranked before b? (score desc, docID asc) */
static inline int
res_better(const Res *a, const Res *b)
{
	if (a->score != b->score)
		return a->score > b->score;
	return a->doc < b->doc;
}

static inline int
res_cmp(const void *a, const void *b)
{
	return res_better(a, b) ? -1 : (res_better(b, a) ? 1 : 0);
}

/* offer r to the heap h of *n <= k results; heap[0] is the worst kept one */
static inline void
heap_offer(Res *h, uint32_t *n, uint32_t k, Res r)
{
	uint32_t	i;

	if (*n < k)
	{
		i = (*n)++;
		h[i] = r;
		while (i > 0 && res_better(&h[(i - 1) / 2], &h[i]))
		{
			Res			tmp = h[i];

			h[i] = h[(i - 1) / 2];
			h[(i - 1) / 2] = tmp;
			i = (i - 1) / 2;
		}
		return;
	}
	if (!res_better(&r, &h[0]))
		return;
	h[0] = r;
	i = 0;
	for (;;)
	{
		uint32_t	l = 2 * i + 1,
					w = i;
		Res			tmp;

		if (l < *n && res_better(&h[w], &h[l]))
			w = l;
		if (l + 1 < *n && res_better(&h[w], &h[l + 1]))
			w = l + 1;
		if (w == i)
			break;
		tmp = h[i];
		h[i] = h[w];
		h[w] = tmp;
		i = w;
	}
}

#endif							/* GPUIR_REF_TOPK_H */
