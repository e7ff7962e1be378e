/*-------------------------------------------------------------------------
 *
 * gpuirmerge.c
 *	  Merging: fold the insert buffer (and, for a full merge, every segment)
 *	  into one new immutable segment, dropping documents VACUUM deleted.
 *
 * Locking: the merge holds ExclusiveLock on the index relation, which
 * conflicts with the RowExclusiveLock of inserters and VACUUM but not with
 * the AccessShareLock of readers; readers keep their metapage snapshot, and
 * the pages of replaced segments are not reused (src/README), so a query
 * that started before the swap finishes on the old segments.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "gpuir.h"

#define NO_DOC	PG_UINT32_MAX

/* add the live documents and postings of one segment to the builder */
static void
merge_segment(GpuirBuilder *b, Relation index, const GpuirSegmentData *seg)
{
	ItemPointerData *tids = (ItemPointerData *) GpuirStreamReadAll(index, seg->streams[GPUIR_S_TIDS]);
	uint32	   *dls = (uint32 *) GpuirStreamReadAll(index, seg->streams[GPUIR_S_DOCLENS]);
	uint8	   *del = (uint8 *) GpuirStreamReadAll(index, seg->streams[GPUIR_S_DELETED]);
	GpuirDictEntry *dict = (GpuirDictEntry *) GpuirStreamReadAll(index, seg->streams[GPUIR_S_DICT]);
	char	   *lex = GpuirStreamReadAll(index, seg->streams[GPUIR_S_LEXEMES]);
	GpuirBlockHeader *dir = (GpuirBlockHeader *) GpuirStreamReadAll(index, seg->streams[GPUIR_S_BLOCKDIR]);
	uint8	   *payload = (uint8 *) GpuirStreamReadAll(index, seg->streams[GPUIR_S_PAYLOAD]);
	uint32		payload_len = seg->streams[GPUIR_S_PAYLOAD].nbytes;
	uint32	   *map = palloc_extended(sizeof(uint32) * Max(seg->ndocs, 1), MCXT_ALLOC_HUGE);

	if (seg->streams[GPUIR_S_TIDS].nbytes != (uint64) seg->ndocs * sizeof(ItemPointerData) ||
		seg->streams[GPUIR_S_DOCLENS].nbytes != (uint64) seg->ndocs * sizeof(uint32) ||
		seg->streams[GPUIR_S_DELETED].nbytes != ((uint64) seg->ndocs + 7) / 8 ||
		seg->streams[GPUIR_S_DICT].nbytes != (uint64) seg->nterms * sizeof(GpuirDictEntry) ||
		seg->streams[GPUIR_S_BLOCKDIR].nbytes != (uint64) seg->nblocks * sizeof(GpuirBlockHeader))
		GpuirCorrupt(index, "segment stream sizes do not match the segment directory");

	for (uint32 d = 0; d < seg->ndocs; d++)
	{
		if ((d % 65536) == 0)
			CHECK_FOR_INTERRUPTS();
		map[d] = (del[d / 8] & (1 << (d % 8))) ? NO_DOC
			: GpuirBuilderAddDoc(b, &tids[d], dls[d]);
	}

	for (uint32 t = 0; t < seg->nterms; t++)
	{
		GpuirDictEntry *de = &dict[t];
		uint32		prev = GPUIR_FIRST_PREV_DOCID;

		CHECK_FOR_INTERRUPTS();
		if ((uint64) de->lexeme_off + de->lexeme_len > seg->streams[GPUIR_S_LEXEMES].nbytes ||
			(uint64) de->first_block + de->nblocks > seg->nblocks)
			GpuirCorrupt(index, "dictionary entry out of range");
		for (uint32 i = de->first_block; i < de->first_block + de->nblocks; i++)
		{
			uint32		docs[GPUIR_BLOCK_SIZE];
			uint32		tfs[GPUIR_BLOCK_SIZE];
			uint32		end = (i + 1 < seg->nblocks) ? dir[i + 1].payload_off : payload_len;
			int			n;

			/* per block: a list may hold every document of the segment */
			CHECK_FOR_INTERRUPTS();
			if (dir[i].payload_off > end || end > payload_len)
				GpuirCorrupt(index, "block directory offsets out of range");
			n = GpuirCodecDecode(payload + dir[i].payload_off, end - dir[i].payload_off,
								 prev, docs, tfs);
			if (n < 0 || docs[n - 1] != dir[i].last_docid || docs[n - 1] >= seg->ndocs)
				GpuirCorrupt(index, "posting block does not decode");
			for (int j = 0; j < n; j++)
				if (map[docs[j]] != NO_DOC)
					GpuirBuilderAddPosting(b, lex + de->lexeme_off, de->lexeme_len,
										   map[docs[j]], tfs[j]);
			prev = dir[i].last_docid;
		}
	}
	pfree(tids);
	pfree(dls);
	pfree(del);
	pfree(dict);
	pfree(lex);
	pfree(dir);
	pfree(payload);
	pfree(map);
}

static void
merge_record(const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
			 uint64 offset, void *arg)
{
	if (!(rec->flags & GPUIR_REC_DELETED))
		GpuirBuilderAddTerms((GpuirBuilder *) arg, (ItemPointer) &rec->tid, doc);
}

/*
 * Tiered merge policy: a segment's tier is floor(log_F(live docs)) with F =
 * GPUIR_MERGE_FACTOR.  When the insert buffer is folded into a new segment
 * and its tier already holds F - 1 segments, those are folded into the new
 * segment too, which lands one tier higher (as in Lucene's tiered and
 * log-byte-size policies): the number of segments stays logarithmic in the
 * number of documents, and each document is rewritten O(log N) times.
 */
#define GPUIR_MERGE_FACTOR	8

static int
merge_tier(uint64 docs)
{
	int			tier = 0;

	while (docs >= GPUIR_MERGE_FACTOR)
	{
		docs /= GPUIR_MERGE_FACTOR;
		tier++;
	}
	return tier;
}

/*
 * choose_segments: which segments a merge folds (fold[s]), by the tiered
 * policy above, or all of them for a full merge; returns how many.
 */
static uint32
choose_segments(const GpuirMetaPageData *meta, bool full, bool *fold)
{
	int			tier = merge_tier(meta->buf_ndocs);
	uint32		same = 0;
	uint32		n = 0;

	for (uint32 s = 0; s < meta->nsegments; s++)
		if (merge_tier(meta->segments[s].ndocs - meta->segments[s].ndeleted) == tier)
			same++;
	for (uint32 s = 0; s < meta->nsegments; s++)
	{
		fold[s] = full ||
			(same + 1 >= GPUIR_MERGE_FACTOR &&
			 merge_tier(meta->segments[s].ndocs - meta->segments[s].ndeleted) == tier);
		n += fold[s];
	}
	return n;
}

/*
 * GpuirMerge: fold the insert buffer into a new segment, with the segments
 * the tiered policy picks; with full (or when the segment directory is full)
 * fold every segment.  Waits for the
 * index's ExclusiveLock when wait, else gives up (returns false) when another
 * session holds a conflicting lock.  N, total dl and df do not change: the
 * documents VACUUM removed were already subtracted.
 */
bool
GpuirMerge(Relation index, bool full, bool wait)
{
	MemoryContext cxt;
	MemoryContext old;
	GpuirMetaPageData meta;
	GpuirSegmentData seg;
	GpuirBuilder *b;
	char	   *bufdata;
	bool		fold[GPUIR_MAX_SEGMENTS];
	bool		have;

	if (wait)
		LockRelation(index, ExclusiveLock);
	else if (!ConditionalLockRelation(index, ExclusiveLock))
		return false;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir merge", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);

	bufdata = GpuirBufferSnapshot(index, &meta);
	if (meta.nsegments >= GPUIR_MAX_SEGMENTS)
		full = true;
	(void) choose_segments(&meta, full, fold);

	b = GpuirBuilderCreate();
	for (uint32 s = 0; s < meta.nsegments; s++)
		if (fold[s])
			merge_segment(b, index, &meta.segments[s]);
	GpuirBufferForEach(index, bufdata, meta.buf_nbytes, merge_record, b);
	have = GpuirBuilderWrite(b, index, meta.generation + 1, meta.k1, meta.b, &seg);

	/* swap the segment directory and empty the buffer, keeping its pages */
	{
		Buffer		metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
		GenericXLogState *state;
		GpuirMetaPage m;

		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		m = GpuirPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
		if (m->generation != meta.generation)
			elog(ERROR, "gpuir index \"%s\" changed during a merge",
				 RelationGetRelationName(index));
		m->nsegments = 0;
		for (uint32 s = 0; s < meta.nsegments; s++)
			if (!fold[s])
				m->segments[m->nsegments++] = meta.segments[s];
		if (have)
			m->segments[m->nsegments++] = seg;
		m->buf_tail = m->buf_head;
		m->buf_tail_used = 0;
		m->buf_nbytes = 0;
		m->buf_ndocs = 0;
		m->generation++;
		GenericXLogFinish(state);
		UnlockReleaseBuffer(metabuf);
	}

	GpuirBuilderFree(b);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	UnlockRelation(index, ExclusiveLock);
	return true;
}
