/*-------------------------------------------------------------------------
 *
 * gpuirinsert.c
 *	  aminsert for gpuir: the insert buffer, a chain of pages holding one
 *	  record per inserted document (its distinct lexemes with tf), which
 *	  queries read along with the segments and merges fold into a segment.
 *
 * Concurrency: appends and buffer reads hold the metapage lock (exclusive to
 * append, share to read) while touching buffer pages; lock order is always
 * metapage, then buffer pages in chain order.  A merge folds the bytes
 * committed when it started and, in its swap, moves the buffer's start past
 * them (buf_head, buf_head_off), so appends go on during merges.
 *
 * Crash safety: an append writes its bytes after the committed end, page by
 * page (one generic WAL record per page), and only its last WAL record
 * advances the committed end in the metapage, so a torn append is invisible
 * and later appends overwrite it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

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
	uint8		flags = 0;

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
 * buffer_append: append rec[0..len) to the insert buffer and account the
 * document (dl) in N and total dl.  Takes the metapage exclusively.
 */
static void
buffer_append(Relation index, const char *rec, uint32 len, uint32 dl)
{
	Buffer		metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	GpuirMetaPage m;
	BlockNumber blk;
	BlockNumber nblocks;
	uint32		used;
	uint32		done = 0;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	GpuirCheckPage(index, BufferGetPage(metabuf), GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	m = GpuirPageGetMeta(BufferGetPage(metabuf));
	blk = m->buf_tail;
	used = m->buf_tail_used;
	/* existing chain pages are below nblocks (see GpuirBufferRead) */
	nblocks = RelationGetNumberOfBlocks(index);
	if (BlockNumberIsValid(blk) && (blk == GPUIR_METAPAGE_BLKNO || blk >= nblocks))
		GpuirCorrupt(index, "insert buffer tail is outside the index");

	while (done < len)
	{
		GenericXLogState *state = GenericXLogStart(index);
		GpuirMetaPage wm = NULL;
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
			wm = GpuirPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
			wm->buf_head = BufferGetBlockNumber(cur);
			wm->buf_head_off = 0;
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
			if (BlockNumberIsValid(next) && (next == GPUIR_METAPAGE_BLKNO || next >= nblocks))
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
			if (wm == NULL)
				wm = GpuirPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
			wm->buf_tail = blk;
			wm->buf_tail_used = used;
			wm->buf_nbytes += len;
			wm->buf_ndocs++;
			wm->ndocs++;
			wm->total_dl += dl;
			wm->generation++;
		}
		GenericXLogFinish(state);
		UnlockReleaseBuffer(cur);
		if (BufferIsValid(prev))
			UnlockReleaseBuffer(prev);
	}
	UnlockReleaseBuffer(metabuf);
}

/*
 * gpuirinsert: tokenize the new row and append it to the insert buffer;
 * merge the buffer into a segment once it passes gpuir.insert_buffer_limit
 * (left to a later insert while another merge or a VACUUM runs).  NULL and token-less
 * documents are not indexed.
 */
bool
gpuirinsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
			Relation heapRel, IndexUniqueCheck checkUnique,
			bool indexUnchanged, IndexInfo *indexInfo)
{
	MemoryContext cxt;
	MemoryContext old;
	GpuirMetaPageData meta;
	GpuirDocTerms doc;
	text	   *t;
	char	   *rec;
	uint32		len;

	if (isnull[0])
		return false;
	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir insert",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);

	GpuirReadMeta(index, &meta);
	t = DatumGetTextPP(values[0]);
	GpuirTokenize(meta.cfg_id, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &doc);
	if (doc.nterms > 0)
	{
		rec = record_build(ht_ctid, &doc, &len);
		buffer_append(index, rec, len, doc.dl);
		/* a merge running elsewhere (or VACUUM) holds the merge lock: go on */
		if (meta.buf_nbytes + len > (uint64) gpuir_insert_buffer_limit * 1024)
			GpuirMerge(index, false, false);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return false;
}

/*
 * GpuirBufferRead: the committed bytes of the insert buffer described by
 * meta (meta->buf_nbytes of them from offset buf_head_off of the head page,
 * palloc'd).  The caller holds the metapage lock, share or exclusive, so
 * that no append or merge swap runs meanwhile.  When pages is not NULL,
 * *pages receives the block numbers of the chain's pages holding them
 * (GpuirBufferPages of them, see GpuirBufferSpan).
 */
char *
GpuirBufferRead(Relation index, const GpuirMetaPageData *meta, BlockNumber **pages)
{
	uint64		nbytes = meta->buf_nbytes;
	uint32		head_off = meta->buf_head_off;
	char	   *data;
	BlockNumber blk = meta->buf_head;
	uint64		npages;
	BlockNumber nblocks;

	/*
	 * The chain's pages existed when its end was committed, and the caller's
	 * metapage lock keeps appends out: every block of it is below nblocks.
	 * Checked before allocating and reading, so that a corrupt length or
	 * next pointer gives ERRCODE_INDEX_CORRUPTED, not a huge allocation or a
	 * read past the end of the relation.
	 */
	if (head_off >= GPUIR_PAGE_DATA)
		GpuirCorrupt(index, "insert buffer head offset out of range");
	npages = GpuirBufferPages(head_off, nbytes);	/* no overflow: nbytes < 2^64 - 2^13 or corrupt */
	nblocks = RelationGetNumberOfBlocks(index);
	if (npages > nblocks || nbytes > (uint64) nblocks * GPUIR_PAGE_DATA)
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
		if (blk == GPUIR_METAPAGE_BLKNO || blk >= nblocks)
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

/*
 * GpuirBufferSnapshot: copy the metapage into *meta and the insert buffer's
 * committed bytes (returned, palloc'd) under one share lock of the metapage,
 * so both describe the same state; *pages as in GpuirBufferRead.
 */
char *
GpuirBufferSnapshot(Relation index, GpuirMetaPageData *meta, BlockNumber **pages)
{
	Buffer		metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	Page		page;
	char	   *data;

	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(metabuf);
	GpuirCheckPage(index, page, GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	memcpy(meta, GpuirPageGetMeta(page), sizeof(GpuirMetaPageData));
	if (meta->magic != GPUIR_MAGIC || meta->version != GPUIR_VERSION ||
		meta->nsegments > GPUIR_MAX_SEGMENTS)
	{
		UnlockReleaseBuffer(metabuf);
		GpuirCorrupt(index, "bad metapage magic, version or segment count");
	}
	data = GpuirBufferRead(index, meta, pages);
	UnlockReleaseBuffer(metabuf);
	GpuirCheckMeta(index, meta);	/* the rest of it, without the lock */
	return data;
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
