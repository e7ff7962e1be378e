/*-------------------------------------------------------------------------
 *
 * gpuirvacuum.c
 *	  VACUUM for gpuir: ambulkdelete marks the docIDs of dead heap tuples in
 *	  each segment's deleted bitmap (and flags dead insert buffer records),
 *	  and subtracts them from N, total dl and each term's df, so that scores
 *	  stay those of a freshly built index; merges then drop them.
 *
 * A deleted docID must never be returned again: VACUUM lets the heap reuse
 * its TID for another row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/vacuum.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "gpuir.h"

typedef struct VacState
{
	IndexBulkDeleteCallback callback;
	void	   *callback_state;
	char	   *data;			/* buffer bytes, modified in place */
	uint64		ndeleted;		/* entries marked by this VACUUM */
	bool		pending;		/* the metapage says vacuum_pending */
	uint64		live;			/* live documents seen (segments + buffer) */
	uint64		live_dl;		/* their total dl */
} VacState;

/*
 * set_pending_locked: set the metapage's vacuum_pending (one WAL record),
 * metabuf exclusively locked by the caller, before this VACUUM's first
 * write of a deleted mark or df: its statistics are rewritten only at its
 * end, so a crash in between leaves them lagging the marks, and the mark
 * tells gpuir_verify (and the next VACUUM rewrites them and clears it)
 */
static void
set_pending_locked(Relation index, Buffer metabuf, VacState *vs)
{
	if (vs->pending)
		return;
	if (!GpuirPageGetMeta(BufferGetPage(metabuf))->vacuum_pending)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Page		page = GenericXLogRegisterBuffer(state, metabuf, 0);

		GpuirSetMetaLower(page);	/* a field added after the first format */
		GpuirPageGetMeta(page)->vacuum_pending = 1;
		GenericXLogFinish(state);
	}
	vs->pending = true;
}

/* set_pending: set_pending_locked, taking the metapage lock for it */
static void
set_pending(Relation index, VacState *vs)
{
	Buffer		metabuf;

	if (vs->pending)
		return;
	metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	GpuirCheckPage(index, BufferGetPage(metabuf), GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	set_pending_locked(index, metabuf, vs);
	UnlockReleaseBuffer(metabuf);
}

/*
 * vacuum_df: set df of every term of seg to its postings whose document is
 * not deleted in del (the whole bitmap): recomputed, not decremented, so a
 * VACUUM that crashed between its WAL records is repaired by the next one.
 */
static void
vacuum_df(Relation index, const GpuirSegmentData *seg, uint32 segno, const uint8 *del)
{
	GpuirStream dstream = seg->streams[GPUIR_S_DICT];
	char	   *olddict = GpuirStreamReadAll(index, seg, GPUIR_S_DICT);
	GpuirDictEntry *dict = palloc_extended(Max(dstream.nbytes, 1), MCXT_ALLOC_HUGE);
	GpuirBlockHeader *dir = (GpuirBlockHeader *) GpuirStreamReadAll(index, seg, GPUIR_S_BLOCKDIR);

	memcpy(dict, olddict, dstream.nbytes);
	for (uint32 t = 0; t < seg->nterms; t++)
	{
		GpuirDictEntry *de = &dict[t];
		GpuirListCursor c;
		uint32		gone = 0;

		CHECK_FOR_INTERRUPTS();
		GpuirListOpen(&c, index, seg, segno, de, dir, NULL);
		for (uint32 i = 0; i < c.nblocks; i++)
		{
			int			n;

			/* per block: a list may hold every document of the segment */
			CHECK_FOR_INTERRUPTS();
			n = GpuirListDecode(&c, i, false);
			for (int j = 0; j < n; j++)
				if (del[c.docs[j] / 8] & (1 << (c.docs[j] % 8)))
					gone++;
		}
		GpuirListClose(&c);
		/* gone <= npostings: the list's docIDs are distinct */
		de->df = de->npostings - gone;
	}
	GpuirUpdateStreamChanged(index, seg, GPUIR_S_DICT, olddict, (char *) dict);
	pfree(olddict);
	pfree(dict);
	pfree(dir);
}

/*
 * vacuum_segment: mark the dead documents of one segment in its deleted
 * bitmap and count its live documents and their dl into vs.  The df of its
 * terms is recomputed when this VACUUM deleted something or when the
 * segment's deleted count disagrees with the bitmap (a VACUUM interrupted by
 * a crash).  Returns the number of deleted documents in the bitmap.
 */
static uint32
vacuum_segment(Relation index, const GpuirSegmentData *seg, uint32 segno, VacState *vs)
{
	ItemPointerData *tids = (ItemPointerData *) GpuirStreamReadAll(index, seg, GPUIR_S_TIDS);
	uint32	   *dls = (uint32 *) GpuirStreamReadAll(index, seg, GPUIR_S_DOCLENS);
	GpuirStream bstream = seg->streams[GPUIR_S_DELETED];
	char	   *olddel = GpuirStreamReadAll(index, seg, GPUIR_S_DELETED);
	uint8	   *del = palloc_extended(Max(bstream.nbytes, 1), MCXT_ALLOC_HUGE);
	uint32		ndel = 0;
	uint32		marked = 0;

	/* vacuum_df indexes the dictionary by nterms and the block directory by nblocks */
	if (bstream.nbytes != ((uint64) seg->ndocs + 7) / 8 ||
		seg->streams[GPUIR_S_TIDS].nbytes != (uint64) seg->ndocs * sizeof(ItemPointerData) ||
		seg->streams[GPUIR_S_DOCLENS].nbytes != (uint64) seg->ndocs * sizeof(uint32) ||
		seg->streams[GPUIR_S_DICT].nbytes != (uint64) seg->nterms * sizeof(GpuirDictEntry) ||
		seg->streams[GPUIR_S_BLOCKDIR].nbytes != (uint64) seg->nblocks * sizeof(GpuirBlockHeader))
		GpuirCorrupt(index, "segment stream sizes do not match the segment directory");
	memcpy(del, olddel, bstream.nbytes);
	for (uint32 d = 0; d < seg->ndocs; d++)
	{
		if ((d & 4095) == 0)
			gpuir_vacuum_delay_point();
		if (!(del[d / 8] & (1 << (d % 8))) &&
			vs->callback(&tids[d], vs->callback_state))
		{
			del[d / 8] |= 1 << (d % 8);
			marked++;
		}
		if (del[d / 8] & (1 << (d % 8)))
			ndel++;
		else
		{
			vs->live++;
			vs->live_dl += dls[d];
		}
	}
	if (marked > 0 || ndel != seg->ndeleted)
		set_pending(index, vs);
	if (marked > 0)
		GpuirUpdateStreamChanged(index, seg, GPUIR_S_DELETED, olddel, (char *) del);
	if (marked > 0 || ndel != seg->ndeleted)
		vacuum_df(index, seg, segno, del);
	vs->ndeleted += marked;
	pfree(tids);
	pfree(dls);
	pfree(olddel);
	pfree(del);
	return ndel;
}

static void
vacuum_record(const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
			  uint64 offset, void *arg)
{
	VacState   *vs = arg;

	if (rec->flags & GPUIR_REC_DELETED)
		return;
	if (vs->callback((ItemPointer) &rec->tid, vs->callback_state))
	{
		vs->data[offset + GPUIR_REC_FLAGS_OFF] |= GPUIR_REC_DELETED;
		vs->ndeleted++;
	}
	else
	{
		vs->live++;
		vs->live_dl += rec->dl;
	}
}

/*
 * gpuirbulkdelete: mark every index entry whose heap TID the callback
 * reports dead.  Holds the merge lock throughout, so that no merge copies a
 * segment or the buffer while deletions are being marked in it.  Segments
 * are walked without the metapage lock; the buffer under the exclusive
 * metapage lock, which also covers the statistics update.
 */
IndexBulkDeleteResult *
gpuirbulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				IndexBulkDeleteCallback callback, void *callback_state)
{
	Relation	index = info->index;
	MemoryContext cxt;
	MemoryContext old;
	GpuirMetaPageData meta;
	uint32		seg_ndel[GPUIR_MAX_SEGMENTS];
	uint32		nseg;
	VacState	vs;
	Buffer		metabuf;
	Page		metapage;
	GpuirBufferView *view;
	Buffer		lanebufs[GPUIR_INSERT_LANES];
	char	   *olddata;

	/* the result outlives the working memory context */
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir vacuum", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	memset(&vs, 0, sizeof(vs));
	vs.callback = callback;
	vs.callback_state = callback_state;

	GpuirLockMerge(index);
	GpuirReadMeta(index, &meta);
	nseg = meta.nsegments;
	for (uint32 s = 0; s < nseg; s++)
		seg_ndel[s] = vacuum_segment(index, &meta.segments[s], (uint32) s, &vs);

	/*
	 * the insert buffer (the metapage's chain and every lane) and the
	 * statistics, under the metapage lock and the lanes' header locks
	 */
	metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	metapage = BufferGetPage(metabuf);
	GpuirCheckPage(index, metapage, GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	memcpy(&meta, GpuirPageGetMeta(metapage), sizeof(meta));
	view = palloc(sizeof(GpuirBufferView));
	GpuirBufferReadAll(index, &meta, view, true, lanebufs);
	vs.data = view->data;
	olddata = palloc_extended(Max(view->nbytes, 1), MCXT_ALLOC_HUGE);
	memcpy(olddata, vs.data, view->nbytes);
	GpuirBufferForEach(index, vs.data, view->nbytes, vacuum_record, &vs);

	/* write back the chain pages whose records got a deleted flag */
	for (int p = 0; p < view->nparts; p++)
	{
		GpuirBufferPart *part = &view->parts[p];
		uint64		nlive = part->ld.chain.nbytes - part->skip;
		char	   *newfull;

		if (memcmp(olddata + part->off, vs.data + part->off, nlive) == 0)
			continue;
		set_pending_locked(index, metabuf, &vs);
		newfull = palloc_extended(Max(part->ld.chain.nbytes, 1), MCXT_ALLOC_HUGE);
		memcpy(newfull, part->full, part->ld.chain.nbytes);
		memcpy(newfull + part->skip, vs.data + part->off, nlive);
		for (uint64 i = 0; i < GpuirBufferPages(part->ld.chain.head_off, part->ld.chain.nbytes); i++)
		{
			uint64		lo;
			uint32		pageoff;
			uint32		n = GpuirBufferSpan(part->ld.chain.head_off, part->ld.chain.nbytes,
											i, &lo, &pageoff);

			if (memcmp(part->full + lo, newfull + lo, n) != 0)
			{
				GenericXLogState *state = GenericXLogStart(index);
				Buffer		buf = ReadBuffer(index, part->pages[i]);
				Page		page;

				LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
				page = GenericXLogRegisterBuffer(state, buf, 0);
				memcpy(PageGetContents(page) + pageoff, newfull + lo, n);
				GenericXLogFinish(state);
				UnlockReleaseBuffer(buf);
			}
		}
		pfree(newfull);
	}

	/*
	 * N, total dl and each segment's deleted count are recomputed from what
	 * is marked, not decremented: idempotent, so a VACUUM interrupted by a
	 * crash between its WAL records is repaired by the next one.  N is the
	 * metapage's base plus what the lanes added (their counters only grow):
	 * the base becomes the live count minus the lanes' sums (modulo 2^64).
	 */
	{
		GpuirMetaPage cur = GpuirPageGetMeta(metapage);
		bool		changed = cur->ndocs + view->docs_added != vs.live ||
			cur->total_dl + view->dl_added != vs.live_dl;

		for (uint32 s = 0; s < cur->nsegments && s < nseg; s++)
			changed |= cur->segments[s].ndeleted != seg_ndel[s];
		if (changed || cur->vacuum_pending)
		{
			GenericXLogState *state = GenericXLogStart(index);
			Page		page = GenericXLogRegisterBuffer(state, metabuf, 0);
			GpuirMetaPage m = GpuirPageGetMeta(page);

			GpuirSetMetaLower(page);	/* vacuum_pending: added after the first format */
			for (uint32 s = 0; s < m->nsegments && s < nseg; s++)
				m->segments[s].ndeleted = seg_ndel[s];
			m->ndocs = vs.live - view->docs_added;
			m->total_dl = vs.live_dl - view->dl_added;
			m->vacuum_pending = 0;	/* the statistics match the marks again */
			m->generation++;
			GenericXLogFinish(state);
		}
	}
	for (int i = 0; i < GPUIR_INSERT_LANES; i++)
		if (BufferIsValid(lanebufs[i]))
			UnlockReleaseBuffer(lanebufs[i]);
	UnlockReleaseBuffer(metabuf);
	GpuirUnlockMerge(index);

	stats->tuples_removed += vs.ndeleted;
	stats->num_index_tuples = (double) vs.live;
	stats->num_pages = RelationGetNumberOfBlocks(index);

	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return stats;
}

static bool
never_dead(ItemPointer itemptr, void *state)
{
	return false;
}

/*
 * gpuirvacuumcleanup: report statistics (num_pages; pages_deleted: pages in
 * the free space map, pages_free: those of them reusable now;
 * num_index_tuples = N).  When VACUUM found nothing to
 * delete, the same pass runs with no dead tuple, which only rewrites
 * statistics that disagree with the deleted bitmaps (left so by a crash in
 * the middle of an earlier VACUUM).  Then, when the merge policy asks for it
 * (GpuirMergeWanted: deleted documents, small segments, a non-empty insert
 * buffer), merges run (waiting for a running one), in rounds while
 * segments keep many deleted documents, each followed by compaction
 * (gpuircompact.c): segments move down and free pages at the end of the
 * index are truncated (GpuirMergeVacuum).
 */
IndexBulkDeleteResult *
gpuirvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	uint64		free_pages;
	uint64		reusable_pages;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = gpuirbulkdelete(info, NULL, never_dead, NULL);
	GpuirMergeVacuum(info->index);
	GpuirFreePages(info->index, &free_pages, &reusable_pages);
	stats->pages_deleted = (BlockNumber) Min(free_pages, MaxBlockNumber);
	stats->pages_free = (BlockNumber) Min(reusable_pages, MaxBlockNumber);
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	stats->estimated_count = false;
	return stats;
}
