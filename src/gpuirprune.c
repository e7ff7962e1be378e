/*-------------------------------------------------------------------------
 *
 * gpuirprune.c
 *	  Choosing the postings of a pruned posting list and bounding the rest
 *	  (gpuirprune.h says what they are for).
 *
 *-------------------------------------------------------------------------
 */
#include <stddef.h>

#include "gpuirlist.h"
#include "gpuirprune.h"

/* the BM25 tf part of a posting, in float (it only ranks postings) */
static float
tf_part(uint32_t tf, uint32_t dl, double k1, double b, double avgdl)
{
	return (float) GpuirPruneTfPart(tf, dl, k1, b, avgdl);
}

/*
 * select_kth: the value of rank r (0-based, descending) of v[0 .. n),
 * which it reorders (Hoare's selection, middle pivot)
 */
static float
select_kth(float *v, int64_t n, int64_t r)
{
	int64_t		lo = 0,
				hi = n - 1;

	while (lo < hi)
	{
		float		pivot = v[lo + (hi - lo) / 2];
		int64_t		i = lo,
					j = hi;

		while (i <= j)
		{
			while (v[i] > pivot)
				i++;
			while (v[j] < pivot)
				j--;
			if (i <= j)
			{
				float		t = v[i];

				v[i++] = v[j];
				v[j--] = t;
			}
		}
		/* v[lo .. j] >= pivot, v[i .. hi] <= pivot, those between == pivot */
		if (r <= j)
			hi = j;
		else if (r >= i)
			lo = i;
		else
			return pivot;
	}
	return v[lo];
}

uint32_t
GpuirPruneSelect(const uint32_t *tfs, const uint32_t *dls, uint32_t n, uint32_t want,
				 double k1, double b, double avgdl, uint8_t *keep, GpuirPruneRest *rest,
				 float *scratch, uint32_t (*pairs)[2])
{
	float	   *w = scratch;	/* [n]: each posting's tf part */
	float	   *sel = scratch + n;	/* [n]: the same, reordered by the selection */
	float		cut;
	uint32_t	above = 0;
	uint32_t	at_cut;
	uint32_t	kept = 0;
	uint32_t	nrest = 0;

	if (want > n)
		want = n;
	for (uint32_t i = 0; i < n; i++)
	{
		w[i] = tf_part(tfs[i], dls[i], k1, b, avgdl);
		sel[i] = w[i];
	}
	cut = want > 0 ? select_kth(sel, (int64_t) n, (int64_t) want - 1) : 0.0f;

	/* every posting above the cut, then those at it in docID order */
	for (uint32_t i = 0; i < n; i++)
		if (want > 0 && w[i] > cut)
			above++;
	at_cut = want - above;
	for (uint32_t i = 0; i < n; i++)
	{
		keep[i] = 0;
		if (want > 0 && w[i] > cut)
			keep[i] = 1;
		else if (want > 0 && w[i] == cut && at_cut > 0)
		{
			keep[i] = 1;
			at_cut--;
		}
		if (keep[i])
			kept++;
		else
		{
			pairs[nrest][0] = tfs[i];
			pairs[nrest][1] = dls[i];
			nrest++;
		}
	}
	rest->npairs = 0;
	if (nrest > 0)
	{
		rest->npairs = GpuirCodecBlockImpacts(pairs, (int) nrest, GPUIR_PRUNE_REST_PAIRS,
											  k1, b, avgdl);
		for (int i = 0; i < rest->npairs; i++)
		{
			rest->tf[i] = pairs[i][0];
			rest->dl[i] = pairs[i][1];
		}
	}
	return kept;
}

uint32_t
GpuirPruneEncode(const uint32_t *docs, const uint32_t *tfs, const uint32_t *dls,
				 const uint8_t *keep, uint32_t n, double k1, double b, double avgdl,
				 GpuirBlockHeader *dir, uint8_t *payload, uint32_t *nblocks)
{
	GpuirListEncoder e;
	uint32_t	bd[GPUIR_BLOCK_SIZE];
	uint32_t	bt[GPUIR_BLOCK_SIZE];
	uint32_t	bl[GPUIR_BLOCK_SIZE];
	uint32_t	off = 0;
	int			m = 0;

	*nblocks = 0;
	GpuirListEncoderInit(&e, k1, b, avgdl, 0);
	for (uint32_t i = 0; i <= n; i++)
	{
		if (m == GPUIR_BLOCK_SIZE || (i == n && m > 0))
		{
			size_t		len = GpuirListEncodeBlock(&e, bd, bt, bl, m, &dir[*nblocks],
												   payload + off);

			if (len == 0)
				return 0;
			off += (uint32_t) len;
			(*nblocks)++;
			m = 0;
		}
		if (i < n && keep[i])
		{
			bd[m] = docs[i];
			bt[m] = tfs[i];
			bl[m] = dls[i];
			m++;
		}
	}
	return off;
}
