/*-------------------------------------------------------------------------
 *
 * gpuir_cuda_window.c
 *	  DocID windows of a resident segment, to split one search over several
 *	  devices, and the merge of the windows' top-k (plain C: linked with
 *	  and without nvcc).
 *
 * A window is a range of the search kernels' tiles (GPUIR_CUDA_TILE_DOCS
 * docIDs each): a search of a window runs the same kernels on fewer tiles
 * and returns the top-k among the window's docIDs.  The windows of one
 * segment are disjoint, so the top-k of the union of their results is the
 * top-k of the whole segment: each result is scored in full in its window
 * (every list's postings of a docID are in that docID's tile), and every
 * document of the true top-k is in the top-k of its own window.  This is
 * the docID-range partitioning of Huang et al. 2017 (several GPUs, one
 * query).
 *
 *-------------------------------------------------------------------------
 */
#include "gpuir_cuda_internal.h"

#include <string.h>

/* gpuir_cuda_segment_window: part part of nparts of seg's tiles; see gpuir_cuda.h */
gpuir_cuda_status
gpuir_cuda_segment_window(const gpuir_cuda_segment *seg, uint32_t part, uint32_t nparts,
						  gpuir_cuda_segment *out)
{
	uint64_t	first,
				end;

	if (seg == NULL || out == NULL || nparts == 0 || part >= nparts)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	first = seg->windowed ? seg->tile_first : 0;
	end = seg->windowed ? seg->tile_end
		: ((uint64_t) seg->ndocs + GPUIR_CUDA_TILE_DOCS - 1) / GPUIR_CUDA_TILE_DOCS;
	*out = *seg;
	out->windowed = 1;
	out->tile_first = (uint32_t) (first + (end - first) * part / nparts);
	out->tile_end = (uint32_t) (first + (end - first) * (part + 1) / nparts);
	return GPUIR_CUDA_OK;
}

/* gpuir_cuda_topk_merge: the k best of the parts' ranked results; see gpuir_cuda.h */
gpuir_cuda_status
gpuir_cuda_topk_merge(uint32_t nparts, const uint32_t *const *docids, const float *const *scores,
					  const uint32_t *counts, uint32_t k, uint32_t *out_docids,
					  float *out_scores, uint32_t *out_count)
{
	uint32_t	pos[64];
	uint32_t	n = 0;

	if (docids == NULL || scores == NULL || counts == NULL || out_docids == NULL ||
		out_scores == NULL || out_count == NULL || nparts == 0 || nparts > 64 || k == 0)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	memset(pos, 0, sizeof(pos));
	/* a k-way merge of nparts (few) ranked lists: the best head each time */
	while (n < k)
	{
		int			best = -1;

		for (uint32_t p = 0; p < nparts; p++)
		{
			float		s,
						bs;

			if (pos[p] >= counts[p])
				continue;
			if (best < 0)
			{
				best = (int) p;
				continue;
			}
			s = scores[p][pos[p]];
			bs = scores[best][pos[best]];
			if (s > bs || (s == bs && docids[p][pos[p]] < docids[best][pos[best]]))
				best = (int) p;
		}
		if (best < 0)
			break;
		out_docids[n] = docids[best][pos[best]];
		out_scores[n] = scores[best][pos[best]];
		pos[best]++;
		n++;
	}
	*out_count = n;
	for (uint32_t i = n; i < k; i++)
	{
		out_docids[i] = 0;
		out_scores[i] = 0.0f;
	}
	return GPUIR_CUDA_OK;
}
