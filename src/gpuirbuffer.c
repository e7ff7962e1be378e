/*-------------------------------------------------------------------------
 *
 * gpuirbuffer.c
 *	  The insert buffer of gpuir: one record per inserted document (its
 *	  distinct lexemes with tf) on chains of pages, one chain per insert
 *	  lane plus the metapage's own chain (written before lanes existed, never
 *	  appended to).  Queries read it along with the segments, merges fold it
 *	  into a segment (gpuirmerge.c), VACUUM marks its records deleted.
 *
 * Concurrency: an append locks only its lane's header page (exclusively),
 * then the lane's chain pages in chain order; it holds the metapage lock
 * only to find the lane's header page, or to create it.  Readers hold the
 * metapage lock (share; exclusive for VACUUM) while they read the chains,
 * and lock each lane header in turn.  Lock order: metapage, lane headers in
 * lane order, a header before its chain's pages.  A merge folds the bytes
 * committed when it read the buffer: its swap marks every lane consumed up
 * to them in the metapage (lane_consumed) and drops them from the
 * metapage's own chain, then it trims them off each lane's chain.  Appends
 * go on meanwhile.
 *
 * Crash safety: an append writes its bytes after the committed end of its
 * lane's chain, page by page (one generic WAL record per page), and only its
 * last WAL record advances the committed end in the lane header, together
 * with the lane's docs_added and dl_added: a torn append is invisible and
 * later appends overwrite it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "gpuir.h"

/* serialize a tokenized document as a buffer record (palloc'd) */
static char *
record_build(ItemPointer tid, const GpuirDocTerms *doc, uint32 *len)
{
	uint64		size = GPUIR_REC_HEADER;
	char	   *rec;
	char	   *p;
	uint8		flags = doc->prior != 0.0f ? GPUIR_REC_PRIOR : 0;

	if (flags & GPUIR_REC_PRIOR)
		size += sizeof(float4);
	for (int i = 0; i < doc->nterms; i++)
		size += 6 + doc->terms[i].len;
	if (size > MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("document has too many distinct lexemes for a gpuir insert buffer record")));
	rec = palloc(size);
	p = rec;
	{
		uint32		reclen = (uint32) size;

		memcpy(p, &reclen, 4);
	}
	memcpy(p + 4, &flags, 1);
	p[5] = 0;
	memcpy(p + 6, tid, sizeof(ItemPointerData));
	memcpy(p + 12, &doc->dl, 4);
	memcpy(p + 16, &doc->nterms, 4);
	p += GPUIR_REC_HEADER;
	if (flags & GPUIR_REC_PRIOR)
	{
		memcpy(p, &doc->prior, sizeof(float4));
		p += sizeof(float4);
	}
	for (int i = 0; i < doc->nterms; i++)
	{
		memcpy(p, &doc->terms[i].tf, 4);
		memcpy(p + 4, &doc->terms[i].len, 2);
		memcpy(p + 6, doc->terms[i].lexeme, doc->terms[i].len);
		p += 6 + doc->terms[i].len;
	}
	*len = (uint32) size;
	return rec;
}

/*
 * lane_append: append rec[0..len) to the chain of the lane whose header page
 * lanebuf the caller holds exclusively, and account the document (dl) in the
 * lane's docs_added and dl_added.  Only the last piece's WAL record moves
 * the committed end (in the lane header).
 */
static void
lane_append(Relation index, Buffer lanebuf, const char *rec, uint32 len, uint32 dl)
{
	GpuirLaneData *lane = GpuirPageGetLane(BufferGetPage(lanebuf));
	BlockNumber blk = lane->chain.tail;
	uint32		used = lane->chain.tail_used;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	uint32		done = 0;

	/* existing chain pages are below nblocks (see GpuirChainRead) */
	if (BlockNumberIsValid(blk) && !GpuirDataBlock(blk, nblocks))
		GpuirCorrupt(index, "insert buffer tail is outside the index");

	while (done < len)
	{
		GenericXLogState *state = GenericXLogStart(index);
		GpuirLaneData *wl = NULL;
		Buffer		cur;
		Buffer		prev = InvalidBuffer;
		Page		page;
		uint32		n;

		if (!BlockNumberIsValid(blk))
		{
			/* empty chain: the first page becomes the head */
			cur = GpuirNewBuffer(index);
			page = GenericXLogRegisterBuffer(state, cur, GENERIC_XLOG_FULL_IMAGE);
			GpuirInitPage(page, GPUIR_PAGE_BUFFER);
			wl = GpuirPageGetLane(GenericXLogRegisterBuffer(state, lanebuf, 0));
			wl->chain.head = BufferGetBlockNumber(cur);
			wl->chain.head_off = 0;
			used = 0;
		}
		else if (used >= GPUIR_PAGE_DATA)
		{
			/* tail page full: reuse its successor (left by a merge or crash) or extend */
			Page		prevpage;
			BlockNumber next;

			prev = ReadBuffer(index, blk);
			LockBuffer(prev, BUFFER_LOCK_EXCLUSIVE);
			GpuirCheckPage(index, BufferGetPage(prev), blk, GPUIR_PAGE_BUFFER);
			next = GpuirPageGetOpaque(BufferGetPage(prev))->next;
			/* a page this append added has no successor: only old ones do */
			if (BlockNumberIsValid(next) && !GpuirDataBlock(next, nblocks))
				GpuirCorrupt(index, "insert buffer chain leaves the index");
			if (BlockNumberIsValid(next))
			{
				cur = ReadBuffer(index, next);
				LockBuffer(cur, BUFFER_LOCK_EXCLUSIVE);
				GpuirCheckPage(index, BufferGetPage(cur), next, GPUIR_PAGE_BUFFER);
				page = GenericXLogRegisterBuffer(state, cur, 0);
				UnlockReleaseBuffer(prev);
				prev = InvalidBuffer;
			}
			else
			{
				cur = GpuirNewBuffer(index);
				page = GenericXLogRegisterBuffer(state, cur, GENERIC_XLOG_FULL_IMAGE);
				GpuirInitPage(page, GPUIR_PAGE_BUFFER);
				prevpage = GenericXLogRegisterBuffer(state, prev, 0);
				GpuirPageGetOpaque(prevpage)->next = BufferGetBlockNumber(cur);
			}
			used = 0;
		}
		else
		{
			cur = ReadBuffer(index, blk);
			LockBuffer(cur, BUFFER_LOCK_EXCLUSIVE);
			GpuirCheckPage(index, BufferGetPage(cur), blk, GPUIR_PAGE_BUFFER);
			page = GenericXLogRegisterBuffer(state, cur, 0);
		}
		blk = BufferGetBlockNumber(cur);

		n = Min(GPUIR_PAGE_DATA - used, len - done);
		memcpy(PageGetContents(page) + used, rec + done, n);
		used += n;
		done += n;
		((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + used;

		if (done == len)
		{
			/* the last piece commits the record */
			if (wl == NULL)
				wl = GpuirPageGetLane(GenericXLogRegisterBuffer(state, lanebuf, 0));
			wl->chain.tail = blk;
			wl->chain.tail_used = used;
			wl->chain.nbytes += len;
			wl->chain.ndocs++;
			wl->docs_added++;
			wl->dl_added += dl;
		}
		GenericXLogFinish(state);
		UnlockReleaseBuffer(cur);
		if (BufferIsValid(prev))
			UnlockReleaseBuffer(prev);
	}
}

/*
 * lane_lock: the header page of insert lane i, exclusively locked; created
 * (under the metapage's exclusive lock, with the metapage's pointer to it in
 * the same WAL record) on the lane's first use.
 */
static Buffer
lane_lock(Relation index, int i)
{
	Buffer		metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	BlockNumber blk;
	Buffer		lanebuf;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	GpuirCheckPage(index, BufferGetPage(metabuf), GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	blk = GpuirPageGetMeta(BufferGetPage(metabuf))->lane_page[i];
	if (blk == 0)
	{
		LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		blk = GpuirPageGetMeta(BufferGetPage(metabuf))->lane_page[i];
		if (blk == 0)
		{
			GenericXLogState *state = GenericXLogStart(index);
			Page		metapage;
			Page		page;
			GpuirLaneData *ld;

			lanebuf = GpuirNewBuffer(index);
			page = GenericXLogRegisterBuffer(state, lanebuf, GENERIC_XLOG_FULL_IMAGE);
			GpuirInitPage(page, GPUIR_PAGE_LANE);
			ld = GpuirPageGetLane(page);
			memset(ld, 0, sizeof(GpuirLaneData));
			ld->chain.head = InvalidBlockNumber;
			ld->chain.tail = InvalidBlockNumber;
			/* the lane starts where the metapage says it was consumed (0) */
			ld->start_pos = GpuirPageGetMeta(BufferGetPage(metabuf))->lane_consumed[i];
			ld->start_rec = GpuirPageGetMeta(BufferGetPage(metabuf))->lane_consumed_rec[i];
			((PageHeader) page)->pd_lower += sizeof(GpuirLaneData);
			metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
			GpuirPageGetMeta(metapage)->lane_page[i] = BufferGetBlockNumber(lanebuf);
			GpuirSetMetaLower(metapage);
			GenericXLogFinish(state);
			UnlockReleaseBuffer(metabuf);
			return lanebuf;
		}
	}
	UnlockReleaseBuffer(metabuf);
	if (!GpuirIndexDataBlock(index, blk))
		GpuirCorrupt(index, "insert lane header is outside the index");
	lanebuf = ReadBuffer(index, blk);
	LockBuffer(lanebuf, BUFFER_LOCK_EXCLUSIVE);
	GpuirCheckPage(index, BufferGetPage(lanebuf), blk, GPUIR_PAGE_LANE);
	return lanebuf;
}

/*
 * lane_try_lock: the header page of the first existing insert lane, in lane
 * order, that can be locked exclusively without waiting; InvalidBuffer when
 * every existing lane is busy (or none exists yet).
 */
static Buffer
lane_try_lock(Relation index)
{
	Buffer		metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	BlockNumber lanes[GPUIR_INSERT_LANES];
	BlockNumber nblocks;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	GpuirCheckPage(index, BufferGetPage(metabuf), GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	memcpy(lanes, GpuirPageGetMeta(BufferGetPage(metabuf))->lane_page, sizeof(lanes));
	UnlockReleaseBuffer(metabuf);
	nblocks = RelationGetNumberOfBlocks(index);
	for (int i = 0; i < GPUIR_INSERT_LANES; i++)
	{
		Buffer		lanebuf;

		if (lanes[i] == 0)
			continue;
		if (!GpuirDataBlock(lanes[i], nblocks))
			GpuirCorrupt(index, "insert lane header is outside the index");
		lanebuf = ReadBuffer(index, lanes[i]);
		if (ConditionalLockBuffer(lanebuf))
		{
			GpuirCheckPage(index, BufferGetPage(lanebuf), lanes[i], GPUIR_PAGE_LANE);
			return lanebuf;
		}
		ReleaseBuffer(lanebuf);
	}
	return InvalidBuffer;
}

/*
 * GpuirBufferAppend: append doc, the tokenized row at heap TID tid, to an
 * insert lane: the first existing lane, in lane order, that is free now,
 * so that inserts one after another keep to the same lane (and its pages)
 * whatever backend makes them; when every lane is busy, this backend's own
 * (backend number mod GPUIR_INSERT_LANES), created on first use, waiting
 * for it: sessions inserting at once spread over the lanes and append in
 * parallel.
 */
void
GpuirBufferAppend(Relation index, ItemPointer tid, const GpuirDocTerms *doc)
{
	char	   *rec;
	uint32		len;
	Buffer		lanebuf;

	rec = record_build(tid, doc, &len);
	lanebuf = lane_try_lock(index);
	if (!BufferIsValid(lanebuf))
		lanebuf = lane_lock(index, (GpuirBackendSlot() + 1) % GPUIR_INSERT_LANES);
	lane_append(index, lanebuf, rec, len, doc->dl);
	UnlockReleaseBuffer(lanebuf);
}

/*
 * GpuirBufferedBytes: the committed bytes of the insert buffer's chains
 * (every lane's and the metapage's own; meta is a copy of the metapage),
 * bytes a merge consumed but has not trimmed yet included.  Read without
 * locks: a hint for the merge triggers (a lane header is pinned, its byte
 * count read as one aligned 8-byte load).
 */
uint64
GpuirBufferedBytes(Relation index, const GpuirMetaPageData *meta)
{
	uint64		total = meta->buf_nbytes;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);

	for (int i = 0; i < GPUIR_INSERT_LANES; i++)
	{
		Buffer		buf;
		Page		page;

		if (meta->lane_page[i] == 0 || meta->lane_page[i] >= nblocks)
			continue;
		buf = ReadBuffer(index, meta->lane_page[i]);
		page = BufferGetPage(buf);
		if (!PageIsNew(page) && PageGetSpecialSize(page) == MAXALIGN(sizeof(GpuirPageOpaqueData)) &&
			GpuirPageGetOpaque(page)->flags == GPUIR_PAGE_LANE)
			total += ((volatile GpuirLaneData *) GpuirPageGetLane(page))->chain.nbytes;
		ReleaseBuffer(buf);
	}
	return total;
}

/* the metapage's own chain (buf_* fields) as a GpuirChain, and back */
void
GpuirMetaGetChain(const GpuirMetaPageData *meta, GpuirChain *chain)
{
	chain->head = meta->buf_head;
	chain->head_off = meta->buf_head_off;
	chain->tail = meta->buf_tail;
	chain->tail_used = meta->buf_tail_used;
	chain->nbytes = meta->buf_nbytes;
	chain->ndocs = meta->buf_ndocs;
	chain->reserved = 0;
}

void
GpuirMetaSetChain(GpuirMetaPageData *meta, const GpuirChain *chain)
{
	meta->buf_head = chain->head;
	meta->buf_head_off = chain->head_off;
	meta->buf_tail = chain->tail;
	meta->buf_tail_used = chain->tail_used;
	meta->buf_nbytes = chain->nbytes;
	meta->buf_ndocs = chain->ndocs;
}

/*
 * GpuirChainRead: the committed bytes of an insert buffer chain
 * (chain->nbytes of them from offset head_off of the head page, palloc'd).
 * The caller holds the lock of the page that holds the chain's description
 * (metapage or lane header), so that no append or merge changes it
 * meanwhile.  When pages is not NULL, *pages receives the block numbers of
 * the chain's pages holding them (GpuirBufferPages of them, see
 * GpuirBufferSpan).
 */
static char *
GpuirChainRead(Relation index, const GpuirChain *chain, BlockNumber **pages)
{
	uint64		nbytes = chain->nbytes;
	uint32		head_off = chain->head_off;
	char	   *data;
	BlockNumber blk = chain->head;
	uint64		npages;

	/*
	 * The chain's pages existed when its end was committed, and the caller's
	 * lock keeps appends out: every block of it is inside the index
	 * (GpuirRelationHolds: no system call).  Checked before allocating and
	 * reading, so that a corrupt length or next pointer gives
	 * ERRCODE_INDEX_CORRUPTED, not a huge allocation or a read past the end
	 * of the relation.
	 */
	if (head_off >= GPUIR_PAGE_DATA)
		GpuirCorrupt(index, "insert buffer head offset out of range");
	npages = GpuirBufferPages(head_off, nbytes);
	/* the metapage and the free space map hold no chain */
	if (!GpuirRelationHolds(index, (uint64) GPUIR_FIRST_DATA_BLKNO + npages))
		GpuirCorrupt(index, "insert buffer chain is longer than the index");
	data = palloc_extended(Max(nbytes, 1), MCXT_ALLOC_HUGE);
	if (pages)
		*pages = palloc_extended(sizeof(BlockNumber) * Max(npages, 1), MCXT_ALLOC_HUGE);
	for (uint64 i = 0; i < npages; i++)
	{
		Buffer		buf;
		Page		page;
		uint64		lo;
		uint32		pageoff;
		uint32		n = GpuirBufferSpan(head_off, nbytes, i, &lo, &pageoff);

		if (!BlockNumberIsValid(blk))
			GpuirCorrupt(index, "insert buffer chain is shorter than its length");
		if (!GpuirIndexDataBlock(index, blk))
			GpuirCorrupt(index, "insert buffer chain leaves the index");
		buf = ReadBuffer(index, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		GpuirCheckPage(index, page, blk, GPUIR_PAGE_BUFFER);
		/*
		 * Appends leave pd_lower past the bytes they wrote; below them, the
		 * next generic WAL write of the page (an append, VACUUM) would zero
		 * committed bytes (the pd_lower..pd_upper hole)
		 */
		if (((PageHeader) page)->pd_lower < MAXALIGN(SizeOfPageHeaderData) + pageoff + n)
			GpuirCorrupt(index, "insert buffer page ends before its committed bytes");
		memcpy(data + lo, PageGetContents(page) + pageoff, n);
		if (pages)
			(*pages)[i] = blk;
		blk = GpuirPageGetOpaque(page)->next;
		UnlockReleaseBuffer(buf);
	}
	return data;
}

/* count the records of data[0..nbytes) (for a lane's consumed prefix) */
static void
count_record(const GpuirBufferRecord *rec, const GpuirDocTerms *doc, uint64 offset, void *arg)
{
	(*(uint32 *) arg)++;
}

/*
 * GpuirBufferReadAll: read the insert buffer into view: the metapage's own
 * chain, then every lane's live bytes (after its consumed position).  The
 * caller holds the metapage lock (share, or exclusive for VACUUM) and meta
 * is the metapage as read under it.  With exclusive, the lanes' header pages
 * stay exclusively locked and are returned in lanebufs[GPUIR_INSERT_LANES]
 * (InvalidBuffer for absent lanes) for the caller to write and release;
 * otherwise each is share-locked only while it is read.
 */
void
GpuirBufferReadAll(Relation index, const GpuirMetaPageData *meta,
				   GpuirBufferView *view, bool exclusive, Buffer *lanebufs)
{
	uint64		total = 0;

	memset(view, 0, sizeof(GpuirBufferView));
	for (int i = -1; i < GPUIR_INSERT_LANES; i++)
	{
		GpuirBufferPart *part = &view->parts[view->nparts];
		Buffer		lanebuf = InvalidBuffer;

		if (i >= 0)
		{
			if (lanebufs)
				lanebufs[i] = InvalidBuffer;
			if (meta->lane_page[i] == 0)
				continue;
			if (!GpuirIndexDataBlock(index, meta->lane_page[i]))
				GpuirCorrupt(index, "insert lane header is outside the index");
			lanebuf = ReadBuffer(index, meta->lane_page[i]);
			LockBuffer(lanebuf, exclusive ? BUFFER_LOCK_EXCLUSIVE : BUFFER_LOCK_SHARE);
			GpuirCheckPage(index, BufferGetPage(lanebuf), meta->lane_page[i], GPUIR_PAGE_LANE);
			memcpy(&part->ld, GpuirPageGetLane(BufferGetPage(lanebuf)), sizeof(GpuirLaneData));
			part->lane_page = meta->lane_page[i];
		}
		else
		{
			memset(&part->ld, 0, sizeof(GpuirLaneData));
			GpuirMetaGetChain(meta, &part->ld.chain);
			part->lane_page = InvalidBlockNumber;
		}
		part->lane = i;
		part->full = GpuirChainRead(index, &part->ld.chain, &part->pages);
		part->skip = 0;
		part->skip_recs = 0;
		if (i >= 0)
		{
			uint64		consumed = meta->lane_consumed[i];

			/* a lane starts where it was consumed and is trimmed up to it at most */
			if (consumed < part->ld.start_pos ||
				consumed - part->ld.start_pos > part->ld.chain.nbytes ||
				meta->lane_consumed_rec[i] < part->ld.start_rec ||
				meta->lane_consumed_rec[i] - part->ld.start_rec > part->ld.chain.ndocs)
				GpuirCorrupt(index, "insert lane consumed position outside its chain");
			part->skip = consumed - part->ld.start_pos;
			part->skip_recs = (uint32) (meta->lane_consumed_rec[i] - part->ld.start_rec);
			view->docs_added += part->ld.docs_added;
			view->dl_added += part->ld.dl_added;
			if (exclusive)
				lanebufs[i] = lanebuf;
			else
				UnlockReleaseBuffer(lanebuf);
		}
		part->off = total;
		total += part->ld.chain.nbytes - part->skip;
		view->ndocs += part->ld.chain.ndocs - part->skip_recs;
		view->nparts++;
	}
	view->nbytes = total;
	view->data = palloc_extended(Max(total, 1), MCXT_ALLOC_HUGE);
	for (int p = 0; p < view->nparts; p++)
	{
		GpuirBufferPart *part = &view->parts[p];
		uint32		n = 0;

		memcpy(view->data + part->off, part->full + part->skip, part->ld.chain.nbytes - part->skip);
		/* the skipped prefix ends on a record boundary: it holds skip_recs records */
		if (part->skip > 0)
		{
			GpuirBufferForEach(index, part->full, part->skip, count_record, &n);
			if (n != part->skip_recs)
				GpuirCorrupt(index, "insert lane consumed position is not on a record boundary");
		}
	}
}

/*
 * GpuirBufferSnapshot: copy the metapage into *meta and the insert buffer's
 * live bytes (returned, palloc'd) under one share lock of the metapage, so
 * both describe the same state.  In the copy, buf_nbytes and buf_ndocs count
 * the whole buffer (all lanes) and N and total dl include what the lanes
 * added, as queries need them.  view (may be NULL) receives the parts.
 */
char *
GpuirBufferSnapshot(Relation index, GpuirMetaPageData *meta, GpuirBufferView *view)
{
	Buffer		metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	Page		page;
	GpuirBufferView local;

	if (view == NULL)
		view = &local;
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(metabuf);
	GpuirCheckPage(index, page, GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	memcpy(meta, GpuirPageGetMeta(page), sizeof(GpuirMetaPageData));
	if (meta->magic != GPUIR_MAGIC || !GpuirVersionReadable(meta->version) ||
		meta->nsegments > GPUIR_MAX_SEGMENTS)
	{
		UnlockReleaseBuffer(metabuf);
		GpuirCheckMeta(index, meta);	/* raises the error that fits */
		GpuirCorrupt(index, "bad metapage magic, version or segment count");
	}
	GpuirBufferReadAll(index, meta, view, false, NULL);
	UnlockReleaseBuffer(metabuf);
	GpuirCheckMeta(index, meta);	/* the rest of it, without the lock */
	meta->buf_nbytes = view->nbytes;
	meta->buf_ndocs = view->ndocs;
	meta->ndocs += view->docs_added;
	meta->total_dl += view->dl_added;
	return view->data;
}

/*
 * GpuirBufferForEach: call fn for every record of the buffer bytes
 * data[0..nbytes), deleted ones included, with its terms decoded (lexemes
 * point into data).  Raises ERRCODE_INDEX_CORRUPTED on a malformed record.
 */
void
GpuirBufferForEach(Relation index, const char *data, uint64 nbytes,
				   GpuirRecordFn fn, void *arg)
{
	uint64		off = 0;
	GpuirDocTerms doc;
	int			cap = 0;

	doc.terms = NULL;
	while (off < nbytes)
	{
		GpuirBufferRecord rec;
		const char *p;
		const char *end;

		CHECK_FOR_INTERRUPTS();
		if (nbytes - off < GPUIR_REC_HEADER)
			GpuirCorrupt(index, "truncated insert buffer record");
		memcpy(&rec.reclen, data + off, 4);
		rec.flags = (uint8) data[off + 4];
		memcpy(&rec.tid, data + off + 6, sizeof(ItemPointerData));
		memcpy(&rec.dl, data + off + 12, 4);
		memcpy(&rec.nterms, data + off + 16, 4);
		if (rec.reclen < GPUIR_REC_HEADER || rec.reclen > nbytes - off ||
			rec.nterms > (rec.reclen - GPUIR_REC_HEADER) / 6 || rec.nterms == 0)
			GpuirCorrupt(index, "malformed insert buffer record");
		if ((int) rec.nterms > cap)
		{
			cap = Max(rec.nterms, 64);
			doc.terms = doc.terms ? repalloc(doc.terms, sizeof(GpuirTerm) * cap)
				: palloc(sizeof(GpuirTerm) * cap);
		}
		p = data + off + GPUIR_REC_HEADER;
		end = data + off + rec.reclen;
		doc.prior = 0.0f;
		if (rec.flags & GPUIR_REC_PRIOR)
		{
			if (end - p < (ptrdiff_t) sizeof(float4))
				GpuirCorrupt(index, "malformed insert buffer record");
			memcpy(&doc.prior, p, sizeof(float4));
			if (!GpuirPriorValid(doc.prior))
				GpuirCorrupt(index, "insert buffer record with a negative or non-finite prior");
			p += sizeof(float4);
		}
		for (uint32 i = 0; i < rec.nterms; i++)
		{
			GpuirTerm  *t = &doc.terms[i];

			if (end - p < 6)
				GpuirCorrupt(index, "malformed insert buffer record");
			memcpy(&t->tf, p, 4);
			memcpy(&t->len, p + 4, 2);
			if (end - p - 6 < t->len || t->tf == 0 || t->len == 0)
				GpuirCorrupt(index, "malformed insert buffer record");
			t->lexeme = (char *) p + 6;
			p += 6 + t->len;
		}
		doc.nterms = rec.nterms;
		doc.dl = rec.dl;
		fn(&rec, &doc, off, arg);
		off += rec.reclen;
	}
	if (doc.terms)
		pfree(doc.terms);
}

/*
 * GpuirChainRemovePrefix: drop the first nbytes bytes, nrecords records, of the
 * insert buffer chain *c (a copy of the description held by a page the
 * caller has registered in state, under its exclusive lock); records
 * appended since stay.  pages are the chain's pages that held the dropped
 * bytes (GpuirChainRead).  Pages left wholly behind are spliced in after the
 * committed tail, where appends reuse them.  Returns the number of buffer
 * pages it registered in state, locked, in locked[] (to release after
 * GenericXLogFinish).
 */
int
GpuirChainRemovePrefix(Relation index, GenericXLogState *state, GpuirChain *c,
					   uint64 nbytes, uint32 nrecords, const BlockNumber *pages,
					   Buffer *locked)
{
	uint64		pos = (uint64) c->head_off + nbytes;
	uint64		npages = GpuirPagesFor(pos);
	uint64		first = pos / GPUIR_PAGE_DATA;	/* index of the new head page */
	BlockNumber newhead;

	if (nbytes == 0)
		return 0;
	c->nbytes -= nbytes;
	c->ndocs -= nrecords;
	if (c->nbytes == 0)
	{
		/* nothing was appended meanwhile: the whole chain is reused */
		c->tail = c->head;
		c->tail_used = 0;
		c->head_off = 0;
		return 0;
	}
	if (first < npages)
		newhead = pages[first];
	else
	{
		/* the dropped bytes end on a page boundary: the head is the next page */
		Buffer		last = ReadBuffer(index, pages[npages - 1]);

		LockBuffer(last, BUFFER_LOCK_SHARE);
		GpuirCheckPage(index, BufferGetPage(last), pages[npages - 1], GPUIR_PAGE_BUFFER);
		newhead = GpuirPageGetOpaque(BufferGetPage(last))->next;
		UnlockReleaseBuffer(last);
		if (!GpuirIndexDataBlock(index, newhead))
			GpuirCorrupt(index, "insert buffer chain leaves the index");
	}
	if (first > 0)
	{
		/* splice pages[0 .. first - 1] in after the tail, before its spare successors */
		Buffer		lastbuf = ReadBuffer(index, pages[first - 1]);
		Buffer		tailbuf = ReadBuffer(index, c->tail);
		Page		lastpage;
		Page		tailpage;

		LockBuffer(lastbuf, BUFFER_LOCK_EXCLUSIVE);
		LockBuffer(tailbuf, BUFFER_LOCK_EXCLUSIVE);
		GpuirCheckPage(index, BufferGetPage(lastbuf), pages[first - 1], GPUIR_PAGE_BUFFER);
		GpuirCheckPage(index, BufferGetPage(tailbuf), c->tail, GPUIR_PAGE_BUFFER);
		lastpage = GenericXLogRegisterBuffer(state, lastbuf, 0);
		tailpage = GenericXLogRegisterBuffer(state, tailbuf, 0);
		GpuirPageGetOpaque(lastpage)->next = GpuirPageGetOpaque(tailpage)->next;
		GpuirPageGetOpaque(tailpage)->next = pages[0];
		locked[0] = lastbuf;
		locked[1] = tailbuf;
	}
	c->head = newhead;
	c->head_off = (uint32) (pos % GPUIR_PAGE_DATA);
	return first > 0 ? 2 : 0;
}

/*
 * GpuirChainAllPages: the block numbers of every page of chain c, in chain
 * order from its head, the spare pages after its committed tail included
 * (pages a merge's trim spliced there, or a failed append linked), into
 * *pages (palloc'd); returns how many (0 for a chain that has no page yet)
 * and the index of the tail page among them in *tail_idx.  The caller holds
 * the lock of the page holding c (a lane header), so that no append or
 * trim changes the chain meanwhile.
 */
int
GpuirChainAllPages(Relation index, const GpuirChain *c, BlockNumber **pages,
				   int *tail_idx)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BlockNumber blk = c->head;
	int			n = 0;
	int			cap = 16;

	*pages = palloc(sizeof(BlockNumber) * cap);
	*tail_idx = -1;
	while (BlockNumberIsValid(blk))
	{
		Buffer		buf;

		CHECK_FOR_INTERRUPTS();
		/* the metapage and the free space map hold no chain: fewer pages than blocks */
		if (!GpuirDataBlock(blk, nblocks) || (BlockNumber) n >= nblocks)
			GpuirCorrupt(index, "insert buffer chain leaves the index or loops");
		if (n == cap)
		{
			cap *= 2;
			*pages = repalloc_huge(*pages, sizeof(BlockNumber) * cap);
		}
		if (blk == c->tail)
			*tail_idx = n;
		(*pages)[n++] = blk;
		buf = ReadBuffer(index, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		GpuirCheckPage(index, BufferGetPage(buf), blk, GPUIR_PAGE_BUFFER);
		blk = GpuirPageGetOpaque(BufferGetPage(buf))->next;
		UnlockReleaseBuffer(buf);
	}
	if (n > 0 && *tail_idx < 0)
		GpuirCorrupt(index, "insert buffer tail is not on its chain");
	return n;
}

/*
 * GpuirChainCopy: copy the chain pages from[0..n) (in chain order) to the
 * free pages to[0..n): each new page gets the bytes its original holds (up
 * to its pd_lower: committed bytes and any a failed append left) and links
 * to the next (the last to none).  Full-page WAL images,
 * MAX_GENERIC_XLOG_PAGES pages per record.  The pages to[] are free (taken
 * from reusable extents of the free space map: no one else reads or locks
 * them), so the copy is invisible until the caller points the chain's
 * description at to[] (compaction's lane move, gpuircompact.c); a crash
 * before that leaves them free.  The caller holds the lock of the page
 * describing the chain, exclusively.
 */
void
GpuirChainCopy(Relation index, const BlockNumber *from, const BlockNumber *to, int n)
{
	for (int i = 0; i < n; i += MAX_GENERIC_XLOG_PAGES)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Buffer		bufs[MAX_GENERIC_XLOG_PAGES];
		int			nb = Min(n - i, MAX_GENERIC_XLOG_PAGES);

		CHECK_FOR_INTERRUPTS();
		for (int j = 0; j < nb; j++)
		{
			Buffer		src = ReadBuffer(index, from[i + j]);
			Page		srcpage;
			Page		page;
			uint16		lower;

			LockBuffer(src, BUFFER_LOCK_SHARE);
			srcpage = BufferGetPage(src);
			GpuirCheckPage(index, srcpage, from[i + j], GPUIR_PAGE_BUFFER);
			lower = ((PageHeader) srcpage)->pd_lower;
			if (lower < MAXALIGN(SizeOfPageHeaderData) ||
				lower > MAXALIGN(SizeOfPageHeaderData) + GPUIR_PAGE_DATA)
				GpuirCorrupt(index, "insert buffer page has a bad pd_lower");
			bufs[j] = ReadBuffer(index, to[i + j]);
			LockBuffer(bufs[j], BUFFER_LOCK_EXCLUSIVE);
			page = GenericXLogRegisterBuffer(state, bufs[j], GENERIC_XLOG_FULL_IMAGE);
			GpuirInitPage(page, GPUIR_PAGE_BUFFER);
			memcpy(PageGetContents(page), PageGetContents(srcpage),
				   lower - MAXALIGN(SizeOfPageHeaderData));
			((PageHeader) page)->pd_lower = lower;
			GpuirPageGetOpaque(page)->next = (i + j + 1 < n) ? to[i + j + 1] : InvalidBlockNumber;
			UnlockReleaseBuffer(src);
		}
		GenericXLogFinish(state);
		for (int j = 0; j < nb; j++)
			UnlockReleaseBuffer(bufs[j]);
	}
}

/*
 * GpuirBufferTrimLane: after a merge's swap that consumed lane part->lane
 * up to consumed (the end of the bytes the merge read), drop them from the
 * lane's chain (one WAL record: the lane header and two chain pages).  Readers skip consumed bytes anyway
 * (lane_consumed), so a crash before this only leaves them to the next
 * merge, which trims everything before the consumed position.
 */
void
GpuirBufferTrimLane(Relation index, const GpuirBufferPart *part, uint64 consumed,
					uint64 consumed_rec)
{
	Buffer		lanebuf = ReadBuffer(index, part->lane_page);
	GpuirLaneData *ld;
	GenericXLogState *state;
	Buffer		locked[2];
	int			nlocked;
	GpuirChain	c;
	uint64		nbytes;
	uint32		nrecs;

	LockBuffer(lanebuf, BUFFER_LOCK_EXCLUSIVE);
	GpuirCheckPage(index, BufferGetPage(lanebuf), part->lane_page, GPUIR_PAGE_LANE);
	ld = GpuirPageGetLane(BufferGetPage(lanebuf));
	if (consumed == ld->start_pos)
	{
		UnlockReleaseBuffer(lanebuf);
		return;
	}
	/* the merge lock kept other trims out: the lane still starts where it was read */
	if (ld->start_pos != part->ld.start_pos || ld->chain.head != part->ld.chain.head ||
		ld->chain.head_off != part->ld.chain.head_off || consumed < ld->start_pos ||
		consumed - ld->start_pos > part->ld.chain.nbytes)
		elog(ERROR, "gpuir index \"%s\": insert lane changed during a merge",
			 RelationGetRelationName(index));
	nbytes = consumed - ld->start_pos;
	nrecs = (uint32) (consumed_rec - ld->start_rec);
	if (nbytes > 0)
	{
		state = GenericXLogStart(index);
		ld = GpuirPageGetLane(GenericXLogRegisterBuffer(state, lanebuf, 0));
		c = ld->chain;
		nlocked = GpuirChainRemovePrefix(index, state, &c, nbytes, nrecs, part->pages, locked);
		ld->chain = c;
		ld->start_pos = consumed;
		ld->start_rec = consumed_rec;
		GenericXLogFinish(state);
		for (int i = 0; i < nlocked; i++)
			UnlockReleaseBuffer(locked[i]);
	}
	UnlockReleaseBuffer(lanebuf);
}
