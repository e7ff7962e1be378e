/*-------------------------------------------------------------------------
 *
 * gpuirclient.c
 *	  The backend's side of a GPU query: turn prepared queries (terms, idf,
 *	  each segment's dictionary entries) into a request for the GPU service
 *	  (in the backend's slot area, or a DSM segment when it does not fit),
 *	  hand it over, and copy the per-segment top-k candidates back.
 *
 * A long query (gpuir.gpu_split_postings) is answered in parts, one per
 * device: part p ranks docID window p of each segment
 * (gpuir_cuda_segment_window), and the parts' top-k are merged here
 * (gpuir_cuda_topk_merge) into each segment's top-k.
 *
 * The GPU ranks each segment's documents exactly like the CPU engine but
 * knows nothing of deletions or MVCC: gpuirquery.c checks every candidate
 * against the deleted bitmap and the snapshot, merges segments and the
 * insert buffer, and checks that the candidates sufficed (src/README, "GPU
 * service").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/dsm.h"
#include "utils/rel.h"

#include "gpuirservice.h"
#include "../cuda/gpuir_cuda.h"

/*
 * GpuirGpuSearch: rank the queries qs[0..nq) on the GPU, each over every
 * segment of meta.  For query q and segment s, the top qs[q].k (<=
 * GPUIR_CUDA_MAX_K) documents by score descending and docID ascending are
 * written to qs[q].docids/scores[s * k ..] with their number in
 * qs[q].counts[s] (arrays palloc'd here, in the current memory context),
 * and the heap TIDs of the first qs[q].ntids[s] of them (at most
 * qs[q].tids_wanted; none when the query was split in docID windows) at
 * qs[q].tids[s * k ..], from the GPU service's host copy of the segment's
 * TIDS stream, so that the caller reads no index page for them.
 * Returns false, with the reason in why, when the service could not answer;
 * nothing is written then.
 */
bool
GpuirGpuSearch(Relation index, const GpuirMetaPageData *meta,
			   const GpuirScoring *sc, GpuirGpuQuery *qs, int nq,
			   char *why, Size whylen)
{
	uint32		nseg = meta->nsegments;
	uint32		nitems = nseg * nq;
	uint32		nterms = 0;
	uint32		kmax = 1;
	Size		off;
	Size		size;
	dsm_segment *seg;
	GpuirRequest *req;
	GpuirReqItem *items;
	GpuirReqTerm *terms;
	uint32		t = 0;
	uint32		nparts = 1;
	bool		ok;

	for (int q = 0; q < nq; q++)
	{
		nterms += qs[q].nterms * nseg;
		kmax = Max(kmax, qs[q].k);
	}
	Assert(kmax <= GPUIR_CUDA_MAX_K);

	/*
	 * One long query: split over every device that serves, each searching
	 * its docID window of every segment (gpuir.gpu_split_postings; Huang et
	 * al. 2017, several GPUs for one query).  Several queries are not split:
	 * whole requests already spread over the devices.
	 */
	if (nq == 1 && gpuir_gpu_split_postings >= 0)
	{
		uint64		postings = 0;

		for (int i = 0; i < qs[0].nterms * (int) nseg; i++)
			postings += qs[0].entries[i].npostings;
		if (postings >= (uint64) gpuir_gpu_split_postings)
			nparts = (uint32) Max(Min(GpuirServiceDevicesUp(), GPUIR_MAX_DEVICES), 1);
	}

	/* layout */
	off = MAXALIGN(sizeof(GpuirRequest));
	size = off + MAXALIGN(sizeof(GpuirSegmentData) * nseg);
	size += MAXALIGN(sizeof(GpuirReqItem) * nitems);
	size += MAXALIGN(sizeof(GpuirReqTerm) * Max(nterms, 1));
	size += MAXALIGN(sizeof(uint32) * (Size) nparts * nitems * kmax);
	size += MAXALIGN(sizeof(float4) * (Size) nparts * nitems * kmax);
	size += MAXALIGN(sizeof(uint32) * (Size) nparts * nitems);
	size += MAXALIGN(sizeof(float4) * (Size) nparts * nitems);
	size += MAXALIGN(sizeof(ItemPointerData) * (Size) nparts * nitems * kmax);
	size += MAXALIGN(sizeof(uint32) * (Size) nparts * nitems);

	req = GpuirServiceRequestArea(size, &seg);
	if (req == NULL)
	{
		snprintf(why, whylen, "no dynamic shared memory segment is left for the request");
		return false;
	}
	memset(req, 0, sizeof(GpuirRequest));
	req->magic = GPUIR_REQ_MAGIC;
	req->nsegments = nseg;
	req->nqueries = nq;
	req->nterms = nterms;
	req->kmax = kmax;
	req->node = GpuirRelationFile(index);
	req->permanent = index->rd_rel->relpersistence == RELPERSISTENCE_PERMANENT;
	req->k1 = sc->k1;
	req->b = sc->b;
	req->avgdl = sc->avgdl;
	req->prior_weight = meta->has_prior ? meta->prior_weight : 0.0f;
	req->segs_off = off;
	off += MAXALIGN(sizeof(GpuirSegmentData) * nseg);
	req->items_off = off;
	off += MAXALIGN(sizeof(GpuirReqItem) * nitems);
	req->terms_off = off;
	off += MAXALIGN(sizeof(GpuirReqTerm) * Max(nterms, 1));
	req->nparts = nparts;
	req->docids_off = off;
	off += MAXALIGN(sizeof(uint32) * (Size) nparts * nitems * kmax);
	req->scores_off = off;
	off += MAXALIGN(sizeof(float4) * (Size) nparts * nitems * kmax);
	req->counts_off = off;
	off += MAXALIGN(sizeof(uint32) * (Size) nparts * nitems);
	req->rests_off = off;		/* zeroed by each part's worker (prepare_request) */
	off += MAXALIGN(sizeof(float4) * (Size) nparts * nitems);
	req->tids_off = off;
	off += MAXALIGN(sizeof(ItemPointerData) * (Size) nparts * nitems * kmax);
	req->ntids_off = off;		/* zeroed by each part's worker (prepare_request) */

	memcpy(GpuirReqSegments(req), meta->segments, sizeof(GpuirSegmentData) * nseg);
	items = GpuirReqItems(req);
	terms = GpuirReqTerms(req);
	for (int q = 0; q < nq; q++)
	{
		for (uint32 s = 0; s < nseg; s++)
		{
			GpuirReqItem *it = &items[q * nseg + s];

			it->first_term = t;
			it->nterms = qs[q].nterms;
			it->k = qs[q].k;
			it->mode = qs[q].mode;
			it->tids = Min(qs[q].tids_wanted, qs[q].k);
			/* the query's terms in its term order; absent ones have no blocks */
			for (int j = 0; j < qs[q].nterms; j++)
			{
				const GpuirDictEntry *de = &qs[q].entries[s * qs[q].nterms + j];

				terms[t].first_block = de->npostings ? de->first_block : 0;
				terms[t].nblocks = de->npostings ? de->nblocks : 0;
				terms[t].npostings = de->npostings;
				terms[t].idf = qs[q].idf[j];
				t++;
			}
		}
	}

	ok = GpuirServiceRun(seg, req, why, whylen);
	if (ok)
	{
		uint32	   *docids = GpuirReqDocids(req);
		float4	   *scores = GpuirReqScores(req);
		uint32	   *counts = GpuirReqCounts(req);
		float4	   *rests = GpuirReqRests(req);
		ItemPointerData *tids = GpuirReqTids(req);
		uint32	   *ntids = GpuirReqNtids(req);

		for (int q = 0; q < nq; q++)
		{
			qs[q].counts = palloc(sizeof(uint32) * Max(nseg, 1));
			qs[q].docids = palloc(sizeof(uint32) * Max(nseg * qs[q].k, 1));
			qs[q].scores = palloc(sizeof(float4) * Max(nseg * qs[q].k, 1));
			qs[q].rests = palloc0(sizeof(float4) * Max(nseg, 1));
			qs[q].tids = palloc(sizeof(ItemPointerData) * Max(nseg * qs[q].k, 1));
			qs[q].ntids = palloc0(sizeof(uint32) * Max(nseg, 1));
			for (uint32 s = 0; s < nseg; s++)
			{
				const uint32 *pd[GPUIR_MAX_DEVICES];
				const float *ps[GPUIR_MAX_DEVICES];
				uint32		pc[GPUIR_MAX_DEVICES];
				uint32		item = q * nseg + s;

				/* part p's ranked results of the item, cut to k */
				for (uint32 p = 0; p < nparts; p++)
				{
					Size		from = ((Size) p * nitems + item) * kmax;

					pd[p] = &docids[from];
					ps[p] = &scores[from];
					pc[p] = Min(counts[(Size) p * nitems + item], qs[q].k);
					/* the parts' merge keeps each part's cut: the largest rest bounds all */
					qs[q].rests[s] = Max(qs[q].rests[s], rests[(Size) p * nitems + item]);
				}
				if (nparts == 1)
				{
					qs[q].counts[s] = pc[0];
					memcpy(&qs[q].docids[s * qs[q].k], pd[0], sizeof(uint32) * pc[0]);
					memcpy(&qs[q].scores[s * qs[q].k], ps[0], sizeof(float4) * pc[0]);
					/* the worker's TIDs of the first results */
					qs[q].ntids[s] = Min(ntids[item], pc[0]);
					memcpy(&qs[q].tids[s * qs[q].k], &tids[(Size) item * kmax],
						   sizeof(ItemPointerData) * qs[q].ntids[s]);
				}
				else if (gpuir_cuda_topk_merge(nparts, pd, ps, pc, qs[q].k,
											   &qs[q].docids[s * qs[q].k],
											   &qs[q].scores[s * qs[q].k],
											   &qs[q].counts[s]) != GPUIR_CUDA_OK)
					elog(ERROR, "gpuir_cuda_topk_merge rejected %u parts of k %u",
						 nparts, qs[q].k);
			}
		}
	}
	if (seg != NULL)
		dsm_detach(seg);
	return ok;
}
