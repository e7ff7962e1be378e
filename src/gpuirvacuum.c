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
	uint64		ndeleted;
	uint64		dl_deleted;
	double		nlive;
} VacState;

/* decrease df of every term of seg by its postings among the newly deleted docs */
static void
vacuum_df(Relation index, const GpuirSegmentData *seg, const uint8 *newly)
{
	GpuirStream dstream = seg->streams[GPUIR_S_DICT];
	char	   *olddict = GpuirStreamReadAll(index, dstream);
	GpuirDictEntry *dict = palloc_extended(Max(dstream.nbytes, 1), MCXT_ALLOC_HUGE);
	GpuirBlockHeader *dir = (GpuirBlockHeader *) GpuirStreamReadAll(index, seg->streams[GPUIR_S_BLOCKDIR]);
	GpuirStreamReader payload;
	uint32		payload_len = seg->streams[GPUIR_S_PAYLOAD].nbytes;

	memcpy(dict, olddict, dstream.nbytes);
	GpuirStreamReaderInit(&payload, index, seg->streams[GPUIR_S_PAYLOAD]);
	for (uint32 t = 0; t < seg->nterms; t++)
	{
		GpuirDictEntry *de = &dict[t];
		uint32		prev = GPUIR_FIRST_PREV_DOCID;
		uint32		gone = 0;

		CHECK_FOR_INTERRUPTS();
		if ((uint64) de->first_block + de->nblocks > seg->nblocks)
			GpuirCorrupt(index, "dictionary entry out of range");
		for (uint32 i = de->first_block; i < de->first_block + de->nblocks; i++)
		{
			uint8		enc[GPUIR_BLOCK_MAX_BYTES];
			uint32		docs[GPUIR_BLOCK_SIZE];
			uint32		end = (i + 1 < seg->nblocks) ? dir[i + 1].payload_off : payload_len;
			int			n;

			if (dir[i].payload_off > end || end - dir[i].payload_off > GPUIR_BLOCK_MAX_BYTES)
				GpuirCorrupt(index, "block directory offsets out of range");
			GpuirStreamRead(&payload, dir[i].payload_off, enc, end - dir[i].payload_off);
			n = GpuirCodecDecode(enc, end - dir[i].payload_off, prev, docs, NULL);
			if (n < 0 || docs[n - 1] != dir[i].last_docid || docs[n - 1] >= seg->ndocs)
				GpuirCorrupt(index, "posting block does not decode");
			for (int j = 0; j < n; j++)
				if (newly[docs[j] / 8] & (1 << (docs[j] % 8)))
					gone++;
			prev = dir[i].last_docid;
		}
		if (gone > de->df)
			GpuirCorrupt(index, "term df lower than its deleted postings");
		de->df -= gone;
	}
	GpuirStreamReaderEnd(&payload);
	GpuirUpdateStreamChanged(index, dstream, olddict, (char *) dict);
	pfree(olddict);
	pfree(dict);
	pfree(dir);
}

/* mark the dead documents of one segment; returns how many */
static uint32
vacuum_segment(Relation index, const GpuirSegmentData *seg, VacState *vs)
{
	ItemPointerData *tids = (ItemPointerData *) GpuirStreamReadAll(index, seg->streams[GPUIR_S_TIDS]);
	uint32	   *dls = (uint32 *) GpuirStreamReadAll(index, seg->streams[GPUIR_S_DOCLENS]);
	GpuirStream bstream = seg->streams[GPUIR_S_DELETED];
	char	   *olddel = GpuirStreamReadAll(index, bstream);
	uint8	   *del = palloc_extended(Max(bstream.nbytes, 1), MCXT_ALLOC_HUGE);
	uint8	   *newly = palloc_extended(Max(bstream.nbytes, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	uint32		ndel = 0;

	if (bstream.nbytes != ((uint64) seg->ndocs + 7) / 8 ||
		seg->streams[GPUIR_S_TIDS].nbytes != (uint64) seg->ndocs * sizeof(ItemPointerData))
		GpuirCorrupt(index, "segment stream sizes do not match the segment directory");
	memcpy(del, olddel, bstream.nbytes);
	for (uint32 d = 0; d < seg->ndocs; d++)
	{
		if ((d & 4095) == 0)
			vacuum_delay_point();
		if (del[d / 8] & (1 << (d % 8)))
			continue;
		if (vs->callback(&tids[d], vs->callback_state))
		{
			del[d / 8] |= 1 << (d % 8);
			newly[d / 8] |= 1 << (d % 8);
			ndel++;
			vs->dl_deleted += dls[d];
		}
		else
			vs->nlive += 1;
	}
	if (ndel > 0)
	{
		GpuirUpdateStreamChanged(index, bstream, olddel, (char *) del);
		vacuum_df(index, seg, newly);
	}
	pfree(tids);
	pfree(dls);
	pfree(olddel);
	pfree(del);
	pfree(newly);
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
		vs->dl_deleted += rec->dl;
	}
	else
		vs->nlive += 1;
}

/*
 * gpuirbulkdelete: mark every index entry whose heap TID the callback
 * reports dead.  Segments are walked without the metapage lock (a merge
 * cannot run: it conflicts with VACUUM's RowExclusiveLock); the buffer under
 * the exclusive metapage lock, which also covers the statistics update.
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
	VacState	vs;
	Buffer		metabuf;
	Page		metapage;
	BlockNumber *pages;
	char	   *olddata;
	uint64		seg_total = 0;

	/* the result outlives the working memory context */
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir vacuum", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	memset(&vs, 0, sizeof(vs));
	vs.callback = callback;
	vs.callback_state = callback_state;

	GpuirReadMeta(index, &meta);
	for (uint32 s = 0; s < meta.nsegments; s++)
	{
		seg_ndel[s] = vacuum_segment(index, &meta.segments[s], &vs);
		seg_total += seg_ndel[s];
	}

	/* the insert buffer and the statistics, under the metapage lock */
	metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	metapage = BufferGetPage(metabuf);
	GpuirCheckPage(index, metapage, GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	memcpy(&meta, GpuirPageGetMeta(metapage), sizeof(meta));
	vs.data = GpuirBufferRead(index, &meta, &pages);
	olddata = palloc_extended(Max(meta.buf_nbytes, 1), MCXT_ALLOC_HUGE);
	memcpy(olddata, vs.data, meta.buf_nbytes);
	GpuirBufferForEach(index, vs.data, meta.buf_nbytes, vacuum_record, &vs);

	for (uint64 off = 0, i = 0; off < meta.buf_nbytes; off += GPUIR_PAGE_DATA, i++)
	{
		uint32		n = (uint32) Min(GPUIR_PAGE_DATA, meta.buf_nbytes - off);

		if (memcmp(olddata + off, vs.data + off, n) != 0)
		{
			GenericXLogState *state = GenericXLogStart(index);
			Buffer		buf = ReadBuffer(index, pages[i]);
			Page		page;

			LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
			page = GenericXLogRegisterBuffer(state, buf, 0);
			memcpy(PageGetContents(page), vs.data + off, n);
			GenericXLogFinish(state);
			UnlockReleaseBuffer(buf);
		}
	}

	if (seg_total + vs.ndeleted > 0)
	{
		GenericXLogState *state = GenericXLogStart(index);
		GpuirMetaPage m = GpuirPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));

		for (uint32 s = 0; s < m->nsegments && s < meta.nsegments; s++)
			m->segments[s].ndeleted += seg_ndel[s];
		m->ndocs -= Min(m->ndocs, seg_total + vs.ndeleted);
		m->total_dl -= Min(m->total_dl, vs.dl_deleted);
		m->generation++;
		GenericXLogFinish(state);
	}
	UnlockReleaseBuffer(metabuf);

	stats->tuples_removed += seg_total + vs.ndeleted;
	stats->num_index_tuples = vs.nlive;
	stats->num_pages = RelationGetNumberOfBlocks(index);

	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return stats;
}

/* gpuirvacuumcleanup: report statistics (num_pages, num_index_tuples = N) */
IndexBulkDeleteResult *
gpuirvacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	GpuirMetaPageData meta;

	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
	GpuirReadMeta(info->index, &meta);
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	stats->num_index_tuples = (double) meta.ndocs;
	stats->estimated_count = false;
	return stats;
}
