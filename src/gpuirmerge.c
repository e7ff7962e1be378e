/*-------------------------------------------------------------------------
 *
 * gpuirmerge.c
 *	  Merging: fold the insert buffer (and, for a full merge, every segment)
 *	  into new immutable segments (one, or ranges of at most max_segment_docs
 *	  documents), dropping documents VACUUM deleted.
 *
 * Locking: merges are serialised with each other and with VACUUM by the
 * merge lock, a heavyweight lock on the metapage's block number (as GIN's
 * pending list cleanup does), which neither readers nor inserters take.  A
 * merge folds the buffer bytes committed when it starts; inserts append
 * after them meanwhile, and the swap removes only the folded prefix.
 * Readers keep their metapage snapshot: the pages of replaced segments go
 * to the free space map, reusable only once no snapshot can read them
 * (gpuirfree.c), so a query that started before the swap finishes on the
 * old segments.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "gpuir.h"

#define NO_DOC	PG_UINT32_MAX

/*
 * GpuirMergeSegment: add the live documents (not in the deleted bitmap) of
 * segment seg (number segno of the directory, for messages) and their
 * postings to the builder.  Reads every stream of the segment, the lists
 * through the list cursor (gpuirlistread.c); raises ERRCODE_INDEX_CORRUPTED
 * when they do not match the segment directory or a block does not decode.
 */
void
GpuirMergeSegment(GpuirBuilder *b, Relation index, const GpuirSegmentData *seg, uint32 segno)
{
	ItemPointerData *tids = (ItemPointerData *) GpuirStreamReadAll(index, seg, GPUIR_S_TIDS);
	uint32	   *dls = (uint32 *) GpuirStreamReadAll(index, seg, GPUIR_S_DOCLENS);
	uint8	   *del = (uint8 *) GpuirStreamReadAll(index, seg, GPUIR_S_DELETED);
	GpuirDictEntry *dict = (GpuirDictEntry *) GpuirStreamReadAll(index, seg, GPUIR_S_DICT);
	char	   *lex = GpuirStreamReadAll(index, seg, GPUIR_S_LEXEMES);
	GpuirBlockHeader *dir = (GpuirBlockHeader *) GpuirStreamReadAll(index, seg, GPUIR_S_BLOCKDIR);
	float4	   *priors = GpuirSegmentPriors(index, seg);	/* NULL: all 0 */
	uint32	   *map;

	/* the streams were read, so they fit the index: ndocs is bounded now */
	if (seg->streams[GPUIR_S_TIDS].nbytes != (uint64) seg->ndocs * sizeof(ItemPointerData) ||
		seg->streams[GPUIR_S_DOCLENS].nbytes != (uint64) seg->ndocs * sizeof(uint32) ||
		seg->streams[GPUIR_S_DELETED].nbytes != ((uint64) seg->ndocs + 7) / 8 ||
		seg->streams[GPUIR_S_DICT].nbytes != (uint64) seg->nterms * sizeof(GpuirDictEntry) ||
		seg->streams[GPUIR_S_BLOCKDIR].nbytes != (uint64) seg->nblocks * sizeof(GpuirBlockHeader))
		GpuirCorrupt(index, "segment stream sizes do not match the segment directory");
	map = palloc_extended(sizeof(uint32) * Max(seg->ndocs, 1), MCXT_ALLOC_HUGE);

	for (uint32 d = 0; d < seg->ndocs; d++)
	{
		if ((d % 65536) == 0)
			CHECK_FOR_INTERRUPTS();
		map[d] = (del[d / 8] & (1 << (d % 8))) ? NO_DOC
			: GpuirBuilderAddDoc(b, &tids[d], dls[d], priors ? priors[d] : 0.0f);
	}

	for (uint32 t = 0; t < seg->nterms; t++)
	{
		GpuirDictEntry *de = &dict[t];
		GpuirListCursor c;

		CHECK_FOR_INTERRUPTS();
		if ((uint64) de->lexeme_off + de->lexeme_len > seg->streams[GPUIR_S_LEXEMES].nbytes)
			GpuirCorrupt(index, "dictionary entry's lexeme out of range");
		GpuirListOpen(&c, index, seg, segno, de, dir, NULL);
		for (uint32 i = 0; i < c.nblocks; i++)
		{
			int			n;

			/* per block: a list may hold every document of the segment */
			CHECK_FOR_INTERRUPTS();
			n = GpuirListDecode(&c, i, true);
			for (int j = 0; j < n; j++)
				if (map[c.docs[j]] != NO_DOC)
					GpuirBuilderAddPosting(b, lex + de->lexeme_off, de->lexeme_len,
										   map[c.docs[j]], c.tfs[j]);
		}
		GpuirListClose(&c);
	}
	pfree(tids);
	pfree(dls);
	pfree(del);
	pfree(dict);
	pfree(lex);
	pfree(dir);
	pfree(map);
	if (priors)
		pfree(priors);
}

static void
merge_record(const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
			 uint64 offset, void *arg)
{
	if (!(rec->flags & GPUIR_REC_DELETED))
		GpuirBuilderAddTerms((GpuirBuilder *) arg, (ItemPointer) &rec->tid, doc);
}

/* the merge policy: gpuirmergepolicy.h */
StaticAssertDecl(GPUIR_MERGE_POLICY_MAX_SEGMENTS == GPUIR_MAX_SEGMENTS,
				 "the policy's directory size is the metapage's");

/* the policy's view of meta's segment directory (its first n entries) */
static uint32
policy_counts(const GpuirMetaPageData *meta, GpuirMergeSegCounts *counts)
{
	const uint32 n = Min(meta->nsegments, (uint32) GPUIR_MAX_SEGMENTS);

	for (uint32 s = 0; s < n; s++)
	{
		counts[s].ndocs = meta->segments[s].ndocs;
		counts[s].ndeleted = meta->segments[s].ndeleted;
	}
	return n;
}

/*
 * merge_pages: about how many pages the segments a merge folds (fold[s])
 * take once written again: each one's pages times its live share
 */
static uint64
merge_pages(const GpuirMetaPageData *meta, const bool *fold)
{
	double		pages = 0.0;

	for (uint32 s = 0; s < meta->nsegments; s++)
	{
		const GpuirSegmentData *seg = &meta->segments[s];

		if (!fold[s] || seg->ndocs == 0)
			continue;
		pages += (double) GpuirSegmentPages(seg) *
			(seg->ndocs - Min(seg->ndeleted, seg->ndocs)) / seg->ndocs;
	}
	return (uint64) pages;
}

/*
 * choose_segments: which segments a merge of kind folds (fold[s]), by the
 * policy (gpuir_merge_choose) with segments capped at cap documents (0: no
 * cap), or all of them for a full merge; returns how many.  The merge's
 * free space map holds free_pages, of which reusable_pages are reusable
 * now.  An insert's merge whose segments (their pages times their live
 * share) the reusable pages cannot hold but all the free ones could leaves
 * its deletion rewrites to a later merge (*waited), when the policy
 * without them folds a strict subset of the segments (its tier merges and
 * their cascade still run): the pages not yet reusable belong to segments
 * a merge replaced, readable until every snapshot older than that merge
 * has ended (gpuirfree.c), and the rewrites written now would extend the
 * index by their size.  The next insert's merge, about every second under
 * load, asks again.  Measured in a 16-client soak (2-core machine,
 * max_segment_docs 66000): the inserts' merges 12-37 ms after a large
 * rewrite found 719-758 of about 3,000 free pages reusable, and the
 * rewrites they left were written 3-5 s later into reusable pages; before,
 * such a rewrite extended the index by 864 pages.  VACUUM's and full
 * merges never wait, so a snapshot held for long (which keeps the pages
 * from being reused) delays a rewrite only until the next VACUUM.
 */
static uint32
choose_segments(const GpuirMetaPageData *meta, GpuirMergePolicyKind kind, uint32 cap,
				uint64 free_pages, uint64 reusable_pages, bool *fold, bool *waited)
{
	GpuirMergeSegCounts counts[GPUIR_MAX_SEGMENTS] = {{0}};
	const uint32 n = policy_counts(meta, counts);
	uint32		nfold = gpuir_merge_choose(counts, n, meta->buf_ndocs, kind, cap, true, fold);
	uint64		need;
	bool		fold_now[GPUIR_MAX_SEGMENTS];
	uint32		nfold_now;

	*waited = false;
	if (kind != GPUIR_POLICY_INSERT)
		return nfold;
	need = merge_pages(meta, fold);
	if (need <= reusable_pages || need > free_pages)
		return nfold;
	nfold_now = gpuir_merge_choose(counts, n, meta->buf_ndocs, kind, cap, false, fold_now);
	if (nfold_now >= nfold)
		return nfold;
	for (uint32 s = 0; s < n; s++)
		if (fold_now[s] && !fold[s])
			return nfold;		/* not a subset: the merge would fold others */
	memcpy(fold, fold_now, sizeof(bool) * n);
	*waited = true;
	return nfold_now;
}

/*
 * GpuirMergeWanted: whether VACUUM should merge index (meta: a copy of its
 * metapage): some segment has so many deleted documents that the merge
 * policy would rewrite it, two segments are small beside the largest, or
 * the insert buffer holds anything (every query reads the whole buffer; GIN's
 * VACUUM flushes its pending list likewise).
 */
bool
GpuirMergeWanted(Relation index, const GpuirMetaPageData *meta)
{
	GpuirMergeSegCounts counts[GPUIR_MAX_SEGMENTS];
	const uint32 n = policy_counts(meta, counts);

	if (gpuir_merge_wanted_segments(counts, n))
		return true;
	return GpuirBufferedBytes(index, meta) > 0;
}

/*
 * GpuirMergeVacuum: VACUUM's merges and compaction (gpuirvacuumcleanup, after
 * the deleted documents are marked).  When the policy asks for a merge
 * (GpuirMergeWanted) a VACUUM merge runs, waiting for the merge lock (under
 * 16 clients' inserts some insert's merge holds it most of the time: a
 * VACUUM that skipped its merge then left every rewrite to inserts'
 * merges), and compaction after it (GpuirCompact: the new segments move
 * down into free pages, the free pages that end the index are truncated).
 * Then further rounds of both while gpuir_merge_vacuum_again says so: some
 * segment still has so many deleted documents that the policy would
 * rewrite it, the round before lowered the deleted documents the segments
 * hold, and fewer than GPUIR_MAX_SEGMENTS rounds ran.  Under max_segment_docs
 * one merge rewrites about the cap's worth of live documents, so an
 * autovacuum that found 16% of the rows dead used to leave most of the
 * segments it marked to inserts' merges over the next minutes, the index
 * keeping the dead rows' space and query work meanwhile (bench/writes
 * soak); in rounds, each merge writes into the pages the round before
 * freed once compaction has waited for them to become reusable, so the
 * file grows by about one round's output, not by all of them.  Afterwards
 * no segment has GPUIR_MERGE_DELETES_PCT or more deleted documents, unless
 * the rounds stopped early (GPUIR_MAX_SEGMENTS of them, or one that lowered
 * nothing).  Returns the rounds of merges run (0: none).
 */
int
GpuirMergeVacuum(Relation index)
{
	GpuirMetaPageData meta;
	GpuirMergeSegCounts counts[GPUIR_MAX_SEGMENTS];
	uint32		n;
	int			rounds = 0;

	GpuirReadMeta(index, &meta);
	if (GpuirMergeWanted(index, &meta))
	{
		uint64		first;
		uint64		before;

		n = policy_counts(&meta, counts);
		first = gpuir_merge_deleted(counts, n);
		do
		{
			CHECK_FOR_INTERRUPTS();
			before = gpuir_merge_deleted(counts, n);
			GpuirMerge(index, GPUIR_POLICY_VACUUM, true);
			rounds++;
			GpuirCompact(index, true);
			GpuirReadMeta(index, &meta);
			n = policy_counts(&meta, counts);
		} while (gpuir_merge_vacuum_again(counts, n, before, rounds, GPUIR_MAX_SEGMENTS));
		ereport(DEBUG1,
				(errmsg_internal("gpuir index \"%s\": VACUUM merged in %d rounds, %llu of %llu deleted documents left in %u segments",
								 RelationGetRelationName(index), rounds,
								 (unsigned long long) gpuir_merge_deleted(counts, n),
								 (unsigned long long) first,
								 meta.nsegments)));
	}
	else
		GpuirCompact(index, true);
	return rounds;
}

/*
 * GpuirMerge: fold the insert buffer into a new segment, with the segments
 * the policy picks for a merge of kind (gpuirmergepolicy.h); a full merge
 * (also any merge when the segment directory is full) folds every segment.  Waits for the
 * merge lock when wait, else gives up (returns false) when another merge or
 * a VACUUM holds it.  Inserts and queries run on meanwhile.  N, total dl
 * and df do not change: the documents VACUUM removed were already
 * subtracted.
 */
bool
GpuirMerge(Relation index, GpuirMergePolicyKind kind, bool wait)
{
	MemoryContext cxt;
	MemoryContext old;
	GpuirMetaPageData meta;
	GpuirSegmentData segs[GPUIR_MAX_SEGMENTS];
	int			nnew;
	uint32		nfold;
	uint32		cap = GpuirMaxSegmentDocs(index);
	BlockNumber nblocks_before;
	uint64		folded_docs = 0;
	uint64		written_pages = 0;
	uint64		free_pages;		/* in the free space map at the start */
	uint64		reusable_pages; /* of them reusable now */
	bool		waited;			/* rewrites left for a later merge */
	GpuirBuilder *b;
	GpuirFreeMapData *fm;
	GpuirFreeList *fl;
	GpuirBufferView *view;
	char	   *bufdata;
	bool		fold[GPUIR_MAX_SEGMENTS];
	GpuirSegmentLayout *folded;
	bool		maps = false;
	uint64		consumed[GPUIR_INSERT_LANES];
	uint64		consumed_rec[GPUIR_INSERT_LANES];

	if (wait)
		GpuirLockMerge(index);
	else if (!GpuirConditionalLockMerge(index))
		return false;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir merge", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);

	view = palloc(sizeof(GpuirBufferView));
	bufdata = GpuirBufferSnapshot(index, &meta, view);
	if (meta.nsegments >= GPUIR_MAX_SEGMENTS)
		kind = GPUIR_POLICY_FULL;
	fm = palloc(sizeof(GpuirFreeMapData));
	GpuirReadFreeMap(index, fm);
	fl = palloc(sizeof(GpuirFreeList));
	GpuirFreeListInit(fl, index, fm);
	GpuirFreeListPages(fl, &free_pages, &reusable_pages);
	/* the build's cap at this size (gpuir_merge_cap) */
	cap = gpuir_merge_cap(cap, meta.ndocs, GPUIR_MAX_BUILD_PIECES);
	nfold = choose_segments(&meta, kind, cap, free_pages, reusable_pages, fold, &waited);

	b = GpuirBuilderCreate();
	/* as CREATE INDEX: maintenance_work_mem bounds the postings held */
	GpuirBuilderSetMemoryLimit(b, (Size) maintenance_work_mem * 1024, false);
	for (uint32 s = 0; s < meta.nsegments; s++)
		if (fold[s])
			GpuirMergeSegment(b, index, &meta.segments[s], (uint32) s);
	GpuirBufferForEach(index, bufdata, meta.buf_nbytes, merge_record, b);
	/* as many segments as the cap asks for, and the directory holds */
	nblocks_before = RelationGetNumberOfBlocks(index);
	nnew = GpuirBuilderWrite(b, index, meta.generation + 1, meta.k1, meta.b, fl, cap,
							 GPUIR_MAX_SEGMENTS - (int) (meta.nsegments - nfold),
							 kind != GPUIR_POLICY_FULL, segs);
	/* where the folded segments' pages are (their map pages read before the swap's locks) */
	folded = palloc(sizeof(GpuirSegmentLayout) * Max(meta.nsegments, 1));
	for (uint32 s = 0; s < meta.nsegments; s++)
		if (fold[s])
			GpuirSegmentLayoutOf(index, &meta.segments[s], &folded[s]);
	for (int r = 0; r < nnew; r++)
		maps |= segs[r].map != 0;

	/*
	 * The swap: replace the folded segments by the new one, mark every lane
	 * consumed up to what was read, drop the folded bytes of the metapage's
	 * own chain, free the replaced segments' pages; one WAL record (the
	 * metapage, the free space map and at most two chain pages).
	 */
	{
		Buffer		metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
		Buffer		fmbuf = ReadBuffer(index, GPUIR_FREEMAP_BLKNO);
		GenericXLogState *state;
		Page		metapage;
		Page		fmpage;
		GpuirMetaPage m;
		FullTransactionId safexid;
		Buffer		locked[2];
		int			nlocked = 0;
		const GpuirBufferPart *legacy = &view->parts[0];

		LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
		m = GpuirPageGetMeta(BufferGetPage(metabuf));
		/* only appends can have run (the merge lock keeps merges and VACUUM out) */
		if (m->nsegments != meta.nsegments ||
			memcmp(m->segments, meta.segments, sizeof(GpuirSegmentData) * meta.nsegments) != 0 ||
			memcmp(m->lane_consumed, meta.lane_consumed, sizeof(meta.lane_consumed)) != 0 ||
			m->buf_head != legacy->ld.chain.head || m->buf_head_off != legacy->ld.chain.head_off ||
			m->buf_nbytes < legacy->ld.chain.nbytes || m->buf_ndocs < legacy->ld.chain.ndocs)
			elog(ERROR, "gpuir index \"%s\" changed during a merge",
				 RelationGetRelationName(index));
		LockBuffer(fmbuf, BUFFER_LOCK_EXCLUSIVE);
		GpuirCheckPage(index, BufferGetPage(fmbuf), GPUIR_FREEMAP_BLKNO, GPUIR_PAGE_FREEMAP);
		state = GenericXLogStart(index);
		metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
		fmpage = GenericXLogRegisterBuffer(state, fmbuf, 0);
		m = GpuirPageGetMeta(metapage);
		/* every reader of the old directory has an xmin <= this */
		safexid = ReadNextFullTransactionId();
		m->nsegments = 0;
		for (uint32 s = 0; s < meta.nsegments; s++)
		{
			if (!fold[s])
				m->segments[m->nsegments++] = meta.segments[s];
			else
				GpuirFreeListAddSegment(fl, &folded[s], safexid);
		}
		/* a version 3 index that gets its first segment map */
		if (maps)
			m->version = GPUIR_VERSION;
		for (int r = 0; r < nnew; r++)
			m->segments[m->nsegments++] = segs[r];
		for (int p = 1; p < view->nparts; p++)
		{
			const GpuirBufferPart *part = &view->parts[p];

			consumed[part->lane] = part->ld.start_pos + part->ld.chain.nbytes;
			consumed_rec[part->lane] = part->ld.start_rec + part->ld.chain.ndocs;
			m->lane_consumed[part->lane] = consumed[part->lane];
			m->lane_consumed_rec[part->lane] = consumed_rec[part->lane];
		}
		if (legacy->ld.chain.nbytes > 0)
		{
			GpuirChain	c;

			GpuirMetaGetChain(m, &c);
			nlocked = GpuirChainRemovePrefix(index, state, &c, legacy->ld.chain.nbytes,
										  legacy->ld.chain.ndocs, legacy->pages, locked);
			GpuirMetaSetChain(m, &c);
		}
		GpuirFreeListStore(fl, GpuirPageGetFreeMap(fmpage));
		GpuirSetFreeMapLower(fmpage);
		GpuirSetMetaLower(metapage);
		m->generation += Max(nnew, 1);	/* the new segments' are generation + 1 .. */
		GenericXLogFinish(state);
		for (int i = 0; i < nlocked; i++)
			UnlockReleaseBuffer(locked[i]);
		UnlockReleaseBuffer(fmbuf);
		UnlockReleaseBuffer(metabuf);
	}
	/* drop the consumed bytes from the lanes (readers already skip them) */
	for (int p = 1; p < view->nparts; p++)
		GpuirBufferTrimLane(index, &view->parts[p], consumed[view->parts[p].lane],
				  consumed_rec[view->parts[p].lane]);
	GpuirFreeListReportDropped(index, fl);
	if (GpuirBuilderRuns(b) > 0)
		ereport(DEBUG1,
				(errmsg_internal("gpuir: merge of index \"%s\" read %d sorted runs of postings from temporary files",
								 RelationGetRelationName(index), GpuirBuilderRuns(b))));
	/* what the merge did to the file (bench/writes soak's size steps); DEBUG2: one per merge */
	for (uint32 s = 0; s < meta.nsegments; s++)
		if (fold[s])
			folded_docs += meta.segments[s].ndocs;
	for (int r = 0; r < nnew; r++)
		written_pages += GpuirSegmentPages(&segs[r]);
	ereport(DEBUG2,
			(errmsg_internal("gpuir: merge of index \"%s\" folded %u of %u segments (%llu documents) and %llu buffered documents into %d segments of %llu pages (%llu of %llu free pages reusable%s); the index grew from %u to %u pages",
							 RelationGetRelationName(index), nfold, meta.nsegments,
							 (unsigned long long) folded_docs,
							 (unsigned long long) meta.buf_ndocs, nnew,
							 (unsigned long long) written_pages,
							 (unsigned long long) reusable_pages,
							 (unsigned long long) free_pages,
							 waited ? "; rewrites wait for them" : "",
							 nblocks_before,
							 RelationGetNumberOfBlocks(index))));

	GpuirBuilderFree(b);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	/* an insert's merge that replaced segments: move down and truncate (GpuirCompactLocked) */
	if (kind == GPUIR_POLICY_INSERT && nfold > 0)
		GpuirCompactLocked(index);
	GpuirUnlockMerge(index);
	return true;
}
