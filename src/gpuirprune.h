/*-------------------------------------------------------------------------
 *
 * gpuirprune.h
 *	  Pruned posting lists: the high-impact part of a long list, which the
 *	  GPU keeps where the whole list does not fit its budget, with a bound
 *	  on the postings it leaves out (Wang et al., ICPADS 2017, section IV:
 *	  the GPU caches the pruned part of long lists and the CPU makes sure
 *	  of the top-k; static index pruning by impact, Carmel et al., SIGIR
 *	  2001).
 *
 * A list's postings are ranked by their BM25 tf part
 *
 *	w(tf, dl) = tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))
 *
 * (the term's idf multiplies every posting alike), and the pruned list
 * holds the `want` postings of largest w (ties at the cut: the first in
 * docID order), re-encoded as an ordinary list (gpuirlist.h), so that the
 * kernels search it as they search any list.  The postings left out are
 * summarised by a few (tf, dl) pairs that dominate each of them (tf no
 * smaller, dl no larger: GpuirCodecBlockImpacts, as a block's impacts are),
 * so that for any idf > 0, k1, b and avgdl no left-out posting contributes
 * more than GpuirPruneRestBound.
 *
 * A top-k computed with pruned lists is then exact when it can be shown to
 * be (GpuirPruneDecides, the check of the backend that asked): every
 * document outside the candidates scored at most the last candidate's
 * partial score, and can gain at most the sum of the rest bounds of the
 * pruned lists, so when that sum stays below the k-th exact score of the
 * candidates (rescored over the whole lists), no such document can enter
 * the top-k.
 *
 * Pure C (stdint only), shared by the GPU worker (src/gpuircache.c) and
 * test/test_prune.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIRPRUNE_H
#define GPUIRPRUNE_H

#include <stdbool.h>
#include <stdint.h>

#include "gpuirlist.h"

/* (tf, dl) pairs that bound the postings a pruned list leaves out */
#define GPUIR_PRUNE_REST_PAIRS	8

typedef struct GpuirPruneRest
{
	int			npairs;			/* 0: nothing left out */
	uint32_t	tf[GPUIR_PRUNE_REST_PAIRS];
	uint32_t	dl[GPUIR_PRUNE_REST_PAIRS];
} GpuirPruneRest;

/*
 * GpuirPruneSelect: which of a list's n postings (tfs[i] >= 1, dls[i] their
 * documents' lengths, in docID order) a pruned list of want (1 .. n)
 * postings keeps: keep[i] = 1 for the want postings of largest w (the
 * first in docID order among equal w at the cut), 0 for the others; *rest
 * receives pairs that dominate every posting left out.  k1, b and avgdl
 * (> 0) rank the postings; the rest bound holds for any constants.
 * scratch has room for 2n floats and pairs for n (tf, dl) pairs.  Returns
 * the postings kept (want).
 */
extern uint32_t GpuirPruneSelect(const uint32_t *tfs, const uint32_t *dls, uint32_t n,
								 uint32_t want, double k1, double b, double avgdl,
								 uint8_t *keep, GpuirPruneRest *rest, float *scratch,
								 uint32_t (*pairs)[2]);

/*
 * GpuirPruneEncode: the postings docs/tfs/dls[0 .. n) with keep[i] set (at
 * least one), in docID order, encoded as an ordinary list (gpuirlist.h):
 * block headers in dir[0 .. *nblocks) (payload offsets from 0; room for
 * GpuirListBlocks(kept) headers), blocks at payload (room for that many
 * times GPUIR_BLOCK_MAX_BYTES).  Returns the payload bytes, or 0 when the
 * encoder refuses the postings (docIDs not increasing: a corrupt list).
 */
extern uint32_t GpuirPruneEncode(const uint32_t *docs, const uint32_t *tfs, const uint32_t *dls,
								 const uint8_t *keep, uint32_t n, double k1, double b,
								 double avgdl, GpuirBlockHeader *dir, uint8_t *payload,
								 uint32_t *nblocks);

/* GpuirPruneTfPart: w(tf, dl) above, in double */
static inline double
GpuirPruneTfPart(uint32_t tf, uint32_t dl, double k1, double b, double avgdl)
{
	return (double) tf * (k1 + 1.0) / ((double) tf + k1 * ((1.0 - b) + b * ((double) dl / avgdl)));
}

/*
 * GpuirPruneRestBound: the most a posting left out of a pruned list can add
 * to a score: max over the rest's pairs of idf * w(tf, dl), in double (0
 * when nothing was left out).  Callers compare sums of it, with the other
 * terms of a bound, after GPUIR_BOUND_SLACK (gpuir.h) as for block-max
 * bounds.
 */
static inline double
GpuirPruneRestBound(const GpuirPruneRest *r, double idf, double k1, double b, double avgdl)
{
	double		best = 0.0;

	for (int i = 0; i < r->npairs; i++)
	{
		double		w = idf * GpuirPruneTfPart(r->tf[i], r->dl[i], k1, b, avgdl);

		if (w > best)
			best = w;
	}
	return best;
}

/*
 * GpuirPruneDecides: whether a top-k computed from pruned lists is exact:
 * nheap_full (the k best candidates found), kth the k-th best exact score
 * among them (rescored over the whole lists), last_partial the partial
 * score of the last candidate when the search cut its candidates (0 when
 * every document it scored was returned), rest the sum of the rest bounds
 * of the pruned lists the search used.  A document outside the candidates
 * then scores at most last_partial + rest; the top-k is decided when that,
 * with the slack of float sums, stays strictly below kth.
 */
static inline bool
GpuirPruneDecides(bool nheap_full, float kth, float last_partial, double rest, double slack)
{
	return nheap_full && ((double) last_partial + rest) * slack < (double) kth;
}

#endif							/* GPUIRPRUNE_H */
