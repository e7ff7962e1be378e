/*-------------------------------------------------------------------------
 *
 * gpuirrequest.c
 *	  The GPU service worker's validation of a request (gpuirservice.h): the
 *	  request is mapped (its slot's area, or its DSM segment attached), its
 *	  header and arrays are validated and copied to local memory.  The worker never trusts an offset or
 *	  count it has not checked against the mapping's length; a request that
 *	  fails here is answered FAILED and the backend uses the CPU engine.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "storage/spin.h"

#include "gpuirworker_int.h"

/* range_ok: count elements of elsize bytes at off lie after the header, inside size */
static bool
range_ok(uint64 off, uint64 count, uint64 elsize, uint64 size)
{
	return off >= sizeof(GpuirRequest) && off <= size && count * elsize <= size - off;
}

/* stream_ok: a stream of a segment lies on existing block numbers past the metapage */
static bool
stream_ok(GpuirStream s)
{
	uint64		npages = GpuirStreamPages(&s);

	if (npages == 0)
		return true;
	return s.start != InvalidBlockNumber && s.start >= GPUIR_FIRST_DATA_BLKNO &&
		(uint64) s.start + npages - 1 <= MaxBlockNumber;
}

/*
 * attach_request: map t's request (the slot's area, or attach its DSM
 * segment) and copy its header into t->hdr.
 * False, with t answered (withdrawn) or failed, when there is no request
 * to validate.
 */
static bool
attach_request(GpuirTaken *t)
{
	GpuirServiceSlot *slot = &GpuirService->slots[t->slotno];
	bool		ours;

	/* a withdrawn request needs no answer, and its handle may be gone */
	SpinLockAcquire(&slot->mutex);
	ours = slot->req_id == t->req_id &&
		(slot->state == GPUIR_SLOT_TAKEN || slot->state == GPUIR_SLOT_READY);
	SpinLockRelease(&slot->mutex);
	if (!ours)
	{
		GpuirWorkerReleaseArea(t);
		t->answered = true;
		t->failed = true;
		return false;
	}

	if (t->in_area)
	{
		t->base = GpuirServiceSlotArea(t->slotno);
		t->size = GPUIR_SLOT_AREA;
	}
	else
	{
		t->seg = dsm_attach(t->handle);
		if (t->seg == NULL)
		{
			/* the backend gave up and destroyed the segment */
			GpuirWorkerFail(t, "request withdrawn");
			return false;
		}
		dsm_pin_mapping(t->seg);	/* detached explicitly, never by a resource owner */
		t->base = dsm_segment_address(t->seg);
		t->size = dsm_segment_map_length(t->seg);
		if (t->size < sizeof(GpuirRequest))
		{
			t->base = NULL;		/* not a request: write nothing into it */
			GpuirWorkerReject(t, "request segment too small");
			return false;
		}
	}
	memcpy(&t->hdr, t->base, sizeof(GpuirRequest));
	if (t->hdr.magic != GPUIR_REQ_MAGIC)
	{
		t->base = NULL;
		GpuirWorkerReject(t, "bad request magic");
		return false;
	}
	return true;
}

/*
 * check_header: the header's counts (kmax <= GPUIR_CUDA_MAX_K), BM25
 * constants and every array inside the size-byte mapping; false, t
 * failed, otherwise.
 */
static bool
check_header(GpuirTaken *t, Size size)
{
	const GpuirRequest *h = &t->hdr;
	uint64		nitems = (uint64) h->nqueries * h->nsegments;

	if (h->nsegments > GPUIR_MAX_SEGMENTS)
	{
		GpuirWorkerReject(t, "bad request: %u segments", h->nsegments);
		return false;
	}
	if (h->kmax < 1 || h->kmax > GPUIR_CUDA_MAX_K)
	{
		GpuirWorkerReject(t, "bad request: kmax %u out of range", h->kmax);
		return false;
	}
	if (h->nparts != (uint32) t->nparts || t->part < 0 || t->part >= t->nparts)
	{
		GpuirWorkerReject(t, "bad request: %u parts, part %d of %d taken",
						  h->nparts, t->part, t->nparts);
		return false;
	}
	if (!isfinite(h->k1) || h->k1 < 0.0f || !isfinite(h->b) || h->b < 0.0f || h->b > 1.0f ||
		!isfinite(h->avgdl) || h->avgdl <= 0.0f)
	{
		GpuirWorkerReject(t, "bad request: BM25 constants k1 %g, b %g, avgdl %g",
						  h->k1, h->b, h->avgdl);
		return false;
	}
	if (!GpuirPriorWeightValid(h->prior_weight))
	{
		GpuirWorkerReject(t, "bad request: prior weight %g", h->prior_weight);
		return false;
	}
	if (!range_ok(h->segs_off, h->nsegments, sizeof(GpuirSegmentData), size) ||
		!range_ok(h->items_off, nitems, sizeof(GpuirReqItem), size) ||
		!range_ok(h->terms_off, h->nterms, sizeof(GpuirReqTerm), size) ||
		!range_ok(h->docids_off, h->nparts * nitems * h->kmax, sizeof(uint32), size) ||
		!range_ok(h->scores_off, h->nparts * nitems * h->kmax, sizeof(float4), size) ||
		!range_ok(h->counts_off, h->nparts * nitems, sizeof(uint32), size) ||
		!range_ok(h->rests_off, h->nparts * nitems, sizeof(float4), size) ||
		!range_ok(h->tids_off, h->nparts * nitems * h->kmax, sizeof(ItemPointerData), size) ||
		!range_ok(h->ntids_off, h->nparts * nitems, sizeof(uint32), size))
	{
		GpuirWorkerReject(t, "bad request: an array lies outside its %zu-byte segment", size);
		return false;
	}
	return true;
}

/*
 * check_item: item idx of segment s: its term range, k and mode, and each
 * term's block range inside the segment's nblocks, nblocks =
 * GpuirListBlocks(npostings) and a finite idf.  Sets t->skip[idx] for an
 * item the kernel would answer with no document anyway (no term, k = 0,
 * an AND with an absent term, all terms absent): it is not sent, and its
 * segment need not be resident for it.  False, t failed, when the item is
 * malformed.
 */
static bool
check_item(GpuirTaken *t, uint32 s, uint64 idx)
{
	const GpuirRequest *h = &t->hdr;
	const GpuirSegmentData *seg = &t->segs[s];
	const GpuirReqItem *it = &t->items[idx];
	uint32		absent = 0;

	if ((uint64) it->first_term + it->nterms > h->nterms)
	{
		GpuirWorkerReject(t, "bad request: item %llu has terms past %u",
						  (unsigned long long) idx, h->nterms);
		return false;
	}
	if (it->k > h->kmax)
	{
		GpuirWorkerReject(t, "bad request: item %llu has k %u above kmax %u",
						  (unsigned long long) idx, it->k, h->kmax);
		return false;
	}
	if (it->mode != GPUIR_CUDA_MODE_AND && it->mode != GPUIR_CUDA_MODE_OR &&
		it->mode != GPUIR_CUDA_MODE_BMW)
	{
		GpuirWorkerReject(t, "bad request: item %llu has mode %d",
						  (unsigned long long) idx, it->mode);
		return false;
	}
	for (uint32 i = 0; i < it->nterms; i++)
	{
		const GpuirReqTerm *term = &t->terms[it->first_term + i];

		if ((uint64) term->first_block + term->nblocks > seg->nblocks ||
			term->nblocks != GpuirListBlocks(term->npostings) ||
			!isfinite(term->idf))
		{
			GpuirWorkerReject(t, "bad request: term %u of item %llu does not fit segment %u",
							  i, (unsigned long long) idx, s);
			return false;
		}
		if (term->nblocks == 0)
			absent++;
	}
	t->skip[idx] = it->k == 0 || it->nterms == 0 || absent == it->nterms ||
		(it->mode == GPUIR_CUDA_MODE_AND && absent > 0);
	return true;
}

/*
 * check_segment: the items of segment s (check_item) and, when one of them
 * has work, the segment's streams: sizes matching its counts, on existing
 * block numbers.  False, t failed, otherwise.
 */
static bool
check_segment(GpuirTaken *t, uint32 s)
{
	const GpuirRequest *h = &t->hdr;
	const GpuirSegmentData *seg = &t->segs[s];
	bool		used = false;

	for (uint32 q = 0; q < h->nqueries; q++)
	{
		uint64		idx = (uint64) q * h->nsegments + s;

		if (!check_item(t, s, idx))
			return false;
		if (!t->skip[idx])
			used = true;
	}
	if (used &&
		((uint64) seg->streams[GPUIR_S_BLOCKDIR].nbytes != (uint64) seg->nblocks * sizeof(GpuirBlockHeader) ||
		 (uint64) seg->streams[GPUIR_S_DOCLENS].nbytes != (uint64) seg->ndocs * sizeof(uint32) ||
		 seg->ndocs > 0xFFFFFFFEu ||
		 !stream_ok(seg->streams[GPUIR_S_PAYLOAD]) ||
		 !stream_ok(seg->streams[GPUIR_S_BLOCKDIR]) ||
		 !stream_ok(seg->streams[GPUIR_S_DOCLENS]) ||
		 (seg->map != 0 && (seg->map < GPUIR_FIRST_DATA_BLKNO || seg->map == InvalidBlockNumber))))
	{
		GpuirWorkerReject(t, "bad request: segment %u has inconsistent streams", s);
		return false;
	}
	return true;
}

/*
 * prepare_request: attach t's DSM segment and validate the request:
 * header, segments, items and terms (check_header, check_segment).  Copies
 * header, segments, items and terms into the current memory context (the
 * batch's), marks the items with no possible result in t->skip and zeroes
 * every item's count of t's part in the request.  A problem fails t (detail set);
 * ERRORs (dsm_attach, palloc) propagate to the caller's PG_TRY.
 */
static void
prepare_request(GpuirTaken *t)
{
	GpuirRequest *h = &t->hdr;
	uint64		nitems;

	if (!attach_request(t))
		return;
	if (!check_header(t, t->size))
		return;
	nitems = (uint64) h->nqueries * h->nsegments;

	t->segs = palloc(Max(sizeof(GpuirSegmentData) * h->nsegments, 1));
	memcpy(t->segs, t->base + h->segs_off, sizeof(GpuirSegmentData) * h->nsegments);
	t->items = palloc_extended(Max(sizeof(GpuirReqItem) * nitems, 1), MCXT_ALLOC_HUGE);
	memcpy(t->items, t->base + h->items_off, sizeof(GpuirReqItem) * nitems);
	t->terms = palloc_extended(Max(sizeof(GpuirReqTerm) * (Size) h->nterms, 1), MCXT_ALLOC_HUGE);
	memcpy(t->terms, t->base + h->terms_off, sizeof(GpuirReqTerm) * (Size) h->nterms);
	t->skip = palloc_extended(Max(nitems, 1), MCXT_ALLOC_HUGE);

	for (uint32 s = 0; s < h->nsegments; s++)
		if (!check_segment(t, s))
			return;

	/* every item of this part starts with no result (other parts are not ours) */
	memset(t->base + h->counts_off + (Size) t->part * nitems * sizeof(uint32), 0,
		   nitems * sizeof(uint32));
	memset(t->base + h->rests_off + (Size) t->part * nitems * sizeof(float4), 0,
		   nitems * sizeof(float4));
	memset(t->base + h->ntids_off + (Size) t->part * nitems * sizeof(uint32), 0,
		   nitems * sizeof(uint32));
}

/*
 * GpuirRequestPrepare: prepare_request, an ERROR failing only t (its
 * message becomes t's detail).
 */
void
GpuirRequestPrepare(GpuirTaken *t)
{
	PG_TRY();
	{
		prepare_request(t);
	}
	PG_CATCH();
	{
		char		msg[sizeof(t->detail)];

		GpuirWorkerCatchError(msg, sizeof(msg));
		GpuirWorkerFail(t, "%s", msg);
	}
	PG_END_TRY();
}
