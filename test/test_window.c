/*-------------------------------------------------------------------------
 *
 * test_window.c
 *	  Tests of the docID windows that split one search over several GPUs
 *	  (cuda/gpuir_cuda_window.c, host code: no GPU needed):
 *	  gpuir_cuda_segment_window cuts a segment's tiles into nparts
 *	  disjoint ranges that cover them all, also when nested and when there
 *	  are more parts than tiles; gpuir_cuda_topk_merge gives the k best of
 *	  ranked parts exactly as sorting their union does (ties by docID), with
 *	  the slots past the count zeroed.  The kernels' side (a window's search
 *	  returns that window's top-k) is test_cuda_search's test_windows.
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "gpuir_cuda.h"
#include "test_util.h"
#include "ref_topk.h"

static void
test_segment_window(void)
{
	static const uint32_t ndocs[] = {0, 1, 8191, 8192, 8193, 100000, 40000000};
	static const uint32_t parts[] = {1, 2, 3, 7, 16, 64};
	char		what[160];

	for (size_t i = 0; i < sizeof(ndocs) / sizeof(ndocs[0]); i++)
	{
		gpuir_cuda_segment seg;
		uint32_t	ntiles = (uint32_t) (((uint64_t) ndocs[i] + GPUIR_CUDA_TILE_DOCS - 1) /
										 GPUIR_CUDA_TILE_DOCS);

		memset(&seg, 0, sizeof(seg));
		seg.ndocs = ndocs[i];
		for (size_t j = 0; j < sizeof(parts) / sizeof(parts[0]); j++)
		{
			uint32_t	np = parts[j];
			uint32_t	next = 0;
			int			ok = 1;
			uint32_t	maxw = 0,
						minw = UINT32_MAX;

			for (uint32_t p = 0; p < np; p++)
			{
				gpuir_cuda_segment w;

				ok &= gpuir_cuda_segment_window(&seg, p, np, &w) == GPUIR_CUDA_OK;
				ok &= w.windowed == 1 && w.tile_first == next && w.tile_end >= w.tile_first;
				ok &= w.ndocs == seg.ndocs;	/* the arrays and sizes are seg's */
				next = w.tile_end;
				maxw = w.tile_end - w.tile_first > maxw ? w.tile_end - w.tile_first : maxw;
				minw = w.tile_end - w.tile_first < minw ? w.tile_end - w.tile_first : minw;
				/* a window of a window: its parts stay inside it */
				if (np == 2)
				{
					gpuir_cuda_segment a,
								b;

					ok &= gpuir_cuda_segment_window(&w, 0, 2, &a) == GPUIR_CUDA_OK &&
						gpuir_cuda_segment_window(&w, 1, 2, &b) == GPUIR_CUDA_OK;
					ok &= a.tile_first == w.tile_first && a.tile_end == b.tile_first &&
						b.tile_end == w.tile_end;
				}
			}
			ok &= next == ntiles;	/* the parts cover every tile, in order */
			ok &= ntiles == 0 || maxw - minw <= 1;	/* as equal as tiles allow */
			snprintf(what, sizeof(what), "window: %u docs (%u tiles) in %u parts", ndocs[i],
					 ntiles, np);
			check(ok, what);
		}
		{
			gpuir_cuda_segment w;

			check(gpuir_cuda_segment_window(&seg, 2, 2, &w) == GPUIR_CUDA_INVALID_ARGUMENT &&
				  gpuir_cuda_segment_window(&seg, 0, 0, &w) == GPUIR_CUDA_INVALID_ARGUMENT &&
				  gpuir_cuda_segment_window(NULL, 0, 1, &w) == GPUIR_CUDA_INVALID_ARGUMENT &&
				  gpuir_cuda_segment_window(&seg, 0, 1, NULL) == GPUIR_CUDA_INVALID_ARGUMENT,
				  "window: bad arguments");
		}
	}
}

/* one merge: nparts ranked parts of random results against sorting their union */
static int
merge_once(uint32_t nparts, uint32_t k, int ties)
{
	Res		   *all = malloc(sizeof(Res) * nparts * k + 1);
	uint32_t   *d[64];
	float	   *s[64];
	uint32_t	c[64];
	uint32_t	n = 0,
				outn = 12345;
	uint32_t   *od = malloc(sizeof(uint32_t) * k);
	float	   *os = malloc(sizeof(float) * k);
	int			ok = 1;

	for (uint32_t p = 0; p < nparts; p++)
	{
		Res		   *part = malloc(sizeof(Res) * k + 1);

		c[p] = rnd() % (k + 1);
		for (uint32_t i = 0; i < c[p]; i++)
		{
			/* disjoint docIDs per part (part p holds docIDs = p mod nparts) */
			part[i].doc = (rnd() % 100000) * nparts + p;
			part[i].score = ties ? (float) (rnd() % 4) : (float) (rnd() % 100000) / 7.0f;
		}
		qsort(part, c[p], sizeof(Res), res_cmp);
		/* a part holds distinct docIDs: drop repeats */
		{
			uint32_t	m = 0;

			for (uint32_t i = 0; i < c[p]; i++)
			{
				int			dup = 0;

				for (uint32_t j = 0; j < m && !dup; j++)
					dup = part[j].doc == part[i].doc;
				if (!dup)
					part[m++] = part[i];
			}
			c[p] = m;
		}
		d[p] = malloc(sizeof(uint32_t) * k + 4);
		s[p] = malloc(sizeof(float) * k + 4);
		for (uint32_t i = 0; i < c[p]; i++)
		{
			d[p][i] = part[i].doc;
			s[p][i] = part[i].score;
			all[n++] = part[i];
		}
		free(part);
	}
	qsort(all, n, sizeof(Res), res_cmp);
	memset(od, 0xA5, sizeof(uint32_t) * k);
	memset(os, 0xA5, sizeof(float) * k);
	ok &= gpuir_cuda_topk_merge(nparts, (const uint32_t *const *) d, (const float *const *) s,
								c, k, od, os, &outn) == GPUIR_CUDA_OK;
	ok &= outn == (n < k ? n : k);
	for (uint32_t i = 0; ok && i < k; i++)
	{
		if (i < outn)
			ok &= od[i] == all[i].doc && memcmp(&os[i], &all[i].score, sizeof(float)) == 0;
		else
			ok &= od[i] == 0 && os[i] == 0.0f;
	}
	for (uint32_t p = 0; p < nparts; p++)
	{
		free(d[p]);
		free(s[p]);
	}
	free(all);
	free(od);
	free(os);
	return ok;
}

static void
test_topk_merge(void)
{
	static const uint32_t parts[] = {1, 2, 3, 8, 64};
	static const uint32_t ks[] = {1, 10, 100, 1000};
	char		what[160];

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		for (size_t j = 0; j < sizeof(ks) / sizeof(ks[0]); j++)
			for (int ties = 0; ties < 2; ties++)
			{
				int			ok = 1;

				for (int rep = 0; rep < 20; rep++)
					ok &= merge_once(parts[i], ks[j], ties);
				snprintf(what, sizeof(what), "merge: %u parts, k %u%s = sorted union", parts[i],
						 ks[j], ties ? ", many ties" : "");
				check(ok, what);
			}
	{
		uint32_t	d0[1] = {5},
					od[2],
					n;
		float		s0[1] = {1.0f},
					os[2];
		const uint32_t *d[1] = {d0};
		const float *s[1] = {s0};
		uint32_t	c[1] = {1};

		check(gpuir_cuda_topk_merge(0, d, s, c, 2, od, os, &n) == GPUIR_CUDA_INVALID_ARGUMENT &&
			  gpuir_cuda_topk_merge(65, d, s, c, 2, od, os, &n) == GPUIR_CUDA_INVALID_ARGUMENT &&
			  gpuir_cuda_topk_merge(1, d, s, c, 0, od, os, &n) == GPUIR_CUDA_INVALID_ARGUMENT &&
			  gpuir_cuda_topk_merge(1, NULL, s, c, 2, od, os, &n) == GPUIR_CUDA_INVALID_ARGUMENT &&
			  gpuir_cuda_topk_merge(1, d, s, c, 2, od, os, NULL) == GPUIR_CUDA_INVALID_ARGUMENT,
			  "merge: bad arguments");
	}
}

int
main(void)
{
	rnd_seed(0x5EED0F0DDBA11ULL);
	test_segment_window();
	test_topk_merge();
	printf("window: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
