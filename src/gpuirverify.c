/*-------------------------------------------------------------------------
 *
 * gpuirverify.c
 *	  gpuir_verify(index regclass): check the on-disk structure of a gpuir
 *	  index (src/README) and raise ERRCODE_INDEX_CORRUPTED, with the
 *	  location, at the first problem found.  Modelled on contrib/amcheck's
 *	  bt_index_check (verify_nbtree.c): a read-only walk of every structure
 *	  the index references, under locks that do not block readers.
 *
 * What is checked, in order:
 *
 *	metapage	page header and special space, magic, version, segment count
 *	buffer		the insert buffer chains (the metapage's and each lane's):
 *				gpuir buffer pages inside the relation, committed tail and
 *				byte count, record count, lane consumed positions on record
 *				boundaries; every record well formed (GpuirBufferForEach),
 *				sum of tf = dl, TIDs
 *	segments	per segment: stream sizes against the segment directory
 *				(tids 6 * ndocs, doclens 4 * ndocs, deleted ceil(ndocs / 8),
 *				dict 32 * nterms, blockdir 24 * nblocks); every stream page's
 *				header, special space (page_id, type) and pd_lower; no page
 *				used twice; TIDs strictly increasing (docIDs are assigned in
 *				TID order) and inside the heap; the dictionary sorted strictly
 *				by (bytes, length), lexemes inside the lexeme stream, lists
 *				contiguous; each list's blocks decode (GpuirCodecDecode) to
 *				the expected count with docIDs strictly increasing within and
 *				across blocks, < ndocs, the last one the header's; block
 *				impacts bound every posting; list max tf / min dl exact; the
 *				tf of a document summed over lists equals its dl
 *	free space	extents inside the index, sorted, apart, and on pages no
 *				segment or buffer page uses; stream pages carry their
 *				segment's tag
 *	TIDs		no heap TID has two live entries (segments and buffer)
 *	accounting	dictionary npostings = decoded postings, df = npostings minus
 *				the postings of deleted docs; segment ndeleted = population
 *				of the deleted bitmap; N = live documents of the segments and
 *				the buffer, total dl = their dl sum
 *
 * Concurrency: AccessShareLock on the heap and the index, like
 * bt_index_check, so queries and writers keep running.  Segments are
 * immutable and their pages are reused only once no snapshot can read them
 * (gpuirfree.c; this function's own snapshot holds them), and the buffer is
 * copied under the metapage share lock together with the metapage, so the
 * structural checks are exact under concurrent writes.  The accounting
 * checks are not: VACUUM updates bitmaps, df and the metapage one after the
 * other.  They are therefore reported only when no writer can have run:
 * on a primary, when a conditional ShareLock on the index was granted (it
 * conflicts with inserts, VACUUM and merges; verification never waits for
 * it, writers that arrive meanwhile wait for verification); on a standby,
 * when WAL replay did not advance during the check.  Otherwise a mismatch
 * is reported as a NOTICE that the accounting checks were skipped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "gpuir.h"

/* owners of index blocks, to find a page used by two structures */
#define OWN_FREE	0
#define OWN_META	1
#define OWN_STREAM	2
#define OWN_BUFFER	3
#define OWN_FREEMAP	4
#define OWN_LANE	5

static const char *const stream_names[GPUIR_NSTREAMS] = {
	"dict", "lexemes", "blockdir", "payload", "tids", "doclens", "deleted", "priors"
};

typedef struct VerifyState
{
	Relation	index;
	bool		has_prior;		/* the metapage's: an INCLUDE column */
	Relation	heap;
	BlockNumber index_nblocks;
	BlockNumber heap_nblocks;
	uint8	   *owner;			/* OWN_* per index block */
	char	   *acct_error;		/* first accounting mismatch, deferred */
	uint64		live_docs;		/* live documents seen: segments + buffer */
	uint64		live_dl;
	uint64		lanes_docs_added;	/* sums over the lane headers */
	uint64		lanes_dl_added;
	uint32		seg;			/* segment being checked, for messages */
	MemoryContext cxt;			/* holds live_tids */
	ItemPointerData *live_tids; /* heap TIDs of live entries, to find duplicates */
	uint64		nlive_tids;
	uint64		live_tids_cap;
} VerifyState;

/* raise ERRCODE_INDEX_CORRUPTED about vs->index with a formatted location */
static void
verify_error(VerifyState *vs, const char *fmt,...)
pg_attribute_printf(2, 3) pg_attribute_noreturn();

static void
verify_error(VerifyState *vs, const char *fmt,...)
{
	StringInfoData msg;

	initStringInfo(&msg);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&msg, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&msg, needed);
	}
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gpuir index \"%s\" is corrupted: %s",
					RelationGetRelationName(vs->index), msg.data),
			 errhint("REINDEX the index.")));
	pg_unreachable();
}

/* remember the first accounting mismatch (reported at the end, see above) */
static void
verify_acct(VerifyState *vs, const char *fmt,...)
pg_attribute_printf(2, 3);

static void
verify_acct(VerifyState *vs, const char *fmt,...)
{
	StringInfoData msg;
	MemoryContext old;

	if (vs->acct_error != NULL)
		return;
	old = MemoryContextSwitchTo(TopTransactionContext);
	initStringInfo(&msg);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&msg, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&msg, needed);
	}
	vs->acct_error = msg.data;
	MemoryContextSwitchTo(old);
}

/* claim index block blkno for a structure; a block claimed twice is corrupt */
static void
claim_block(VerifyState *vs, BlockNumber blkno, uint8 what, const char *where)
{
	if (blkno >= vs->index_nblocks)
		verify_error(vs, "%s: block %u is past the end of the index (%u blocks)",
					 where, blkno, vs->index_nblocks);
	if (vs->owner[blkno] != OWN_FREE)
		verify_error(vs, "%s: block %u is also used by another structure", where, blkno);
	vs->owner[blkno] = what;
}

/* check a heap TID: inside the heap (block < heap blocks, offset 1..max) */
static void
check_tid(VerifyState *vs, const ItemPointerData *tid, const char *where, uint64 id)
{
	BlockNumber blk = ItemPointerGetBlockNumberNoCheck(tid);
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	if (blk >= vs->heap_nblocks || off < FirstOffsetNumber || off > MaxHeapTuplesPerPage)
		verify_error(vs, "%s %llu: heap TID (%u,%u) is outside the heap (%u blocks)",
					 where, (unsigned long long) id, blk, off, vs->heap_nblocks);
}

static int
tid_qsort_cmp_arg(const void *a, const void *b, void *arg)
{
	return GpuirTidCmp((const ItemPointerData *) a, (const ItemPointerData *) b);
}

/* remember the heap TID of a live index entry (see verify_no_duplicates) */
static void
add_live_tid(VerifyState *vs, const ItemPointerData *tid)
{
	if (vs->nlive_tids == vs->live_tids_cap)
	{
		vs->live_tids_cap = Max(vs->live_tids_cap * 2, 1024);
		vs->live_tids = vs->live_tids
			? repalloc_huge(vs->live_tids, sizeof(ItemPointerData) * vs->live_tids_cap)
			: MemoryContextAllocHuge(vs->cxt, sizeof(ItemPointerData) * vs->live_tids_cap);
	}
	vs->live_tids[vs->nlive_tids++] = *tid;
}

/*
 * verify_no_duplicates: no heap TID has two live entries (in two segments, or
 * a segment and the insert buffer, or twice in the buffer).  A query would
 * return such a row twice.  A deleted entry may share its TID with a live one:
 * VACUUM marks an entry before the heap can reuse its TID, and the buffer
 * copy is taken before the segments' bitmaps are read, so a reused TID is
 * never seen live twice.
 */
static void
verify_no_duplicates(VerifyState *vs)
{
	if (vs->nlive_tids < 2)
		return;
	qsort_interruptible(vs->live_tids, vs->nlive_tids, sizeof(ItemPointerData),
						tid_qsort_cmp_arg, NULL);
	for (uint64 i = 1; i < vs->nlive_tids; i++)
		if (GpuirTidCmp(&vs->live_tids[i - 1], &vs->live_tids[i]) == 0)
			verify_error(vs, "heap TID (%u,%u) has two live index entries",
						 ItemPointerGetBlockNumberNoCheck(&vs->live_tids[i]),
						 ItemPointerGetOffsetNumberNoCheck(&vs->live_tids[i]));
}

/* ---------- metapage and insert buffer ---------- */

typedef struct BufState
{
	VerifyState *vs;
	uint32		nrec;
	bool		live;			/* records not folded into a segment yet */
} BufState;

static void
verify_record(const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
			  uint64 offset, void *arg)
{
	BufState   *bs = arg;
	VerifyState *vs = bs->vs;
	uint64		sumtf = 0;

	if (rec->flags & ~(GPUIR_REC_DELETED | GPUIR_REC_PRIOR))
		verify_error(vs, "insert buffer record at byte %llu has unknown flags 0x%02x",
					 (unsigned long long) offset, rec->flags);
	if ((rec->flags & GPUIR_REC_PRIOR) && !vs->has_prior)
		verify_error(vs, "insert buffer record at byte %llu has a prior, the index has no prior column",
					 (unsigned long long) offset);
	for (int i = 0; i < doc->nterms; i++)
	{
		if (doc->terms[i].len == 0)
			verify_error(vs, "insert buffer record at byte %llu: term %d is empty",
						 (unsigned long long) offset, i);
		if (i > 0 && GpuirLexemeCmp(doc->terms[i - 1].lexeme, doc->terms[i - 1].len,
									doc->terms[i].lexeme, doc->terms[i].len) >= 0)
			verify_error(vs, "insert buffer record at byte %llu: terms %d and %d are not in lexeme order",
						 (unsigned long long) offset, i - 1, i);
		sumtf += doc->terms[i].tf;
	}
	/* every emitted lexeme counts once in dl and once in some tf */
	if (sumtf != rec->dl)
		verify_error(vs, "insert buffer record at byte %llu: dl %u differs from its summed tf %llu",
					 (unsigned long long) offset, rec->dl, (unsigned long long) sumtf);
	if (!(rec->flags & GPUIR_REC_DELETED) && bs->live)
	{
		/* deleted records may point past a heap truncated by VACUUM */
		check_tid(vs, &rec->tid, "insert buffer record at byte", offset);
		add_live_tid(vs, &rec->tid);
		vs->live_docs++;
		vs->live_dl += rec->dl;
	}
	bs->nrec++;
}

/*
 * verify_chain: walk an insert buffer chain (the metapage's own or a lane's),
 * claim its pages, check them and its committed end; returns its committed
 * bytes.  The caller holds the lock of the page describing the chain (errors
 * release it with the transaction's other locks).
 */
static char *
verify_chain(VerifyState *vs, const GpuirChain *c, const char *what)
{
	Relation	index = vs->index;
	uint64		nbytes = c->nbytes;
	uint64		npages;
	BlockNumber blk = c->head;
	char	   *data;

	if (c->head_off >= GPUIR_PAGE_DATA)
		verify_error(vs, "%s starts at byte %u of its head page, which holds %u",
					 what, c->head_off, (unsigned) GPUIR_PAGE_DATA);
	npages = GpuirBufferPages(c->head_off, nbytes);
	/* the metapage and the free space map (checked before: >= 2 blocks) hold no chain */
	if (npages > vs->index_nblocks - GPUIR_FIRST_DATA_BLKNO)
		verify_error(vs, "%s: %llu committed bytes need %llu pages, the index has %u blocks",
					 what, (unsigned long long) nbytes, (unsigned long long) npages,
					 vs->index_nblocks);
	if (nbytes == 0 && (c->tail != c->head || c->tail_used != c->head_off))
		verify_error(vs, "%s is empty but its tail is block %u with %u bytes (head %u at byte %u)",
					 what, c->tail, c->tail_used, c->head, c->head_off);
	data = palloc_extended(Max(nbytes, 1), MCXT_ALLOC_HUGE);
	for (uint64 i = 0; i < npages; i++)
	{
		Buffer		buf;
		Page		bpage;
		uint64		lo;
		uint32		pageoff;
		uint32		n = GpuirBufferSpan(c->head_off, nbytes, i, &lo, &pageoff);

		CHECK_FOR_INTERRUPTS();
		if (!BlockNumberIsValid(blk))
			verify_error(vs, "%s ends after %llu pages, its %llu committed bytes need %llu",
						 what, (unsigned long long) i, (unsigned long long) nbytes,
						 (unsigned long long) npages);
		claim_block(vs, blk, OWN_BUFFER, what);
		buf = ReadBuffer(index, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		bpage = BufferGetPage(buf);
		GpuirCheckPage(index, bpage, blk, GPUIR_PAGE_BUFFER);
		if (((PageHeader) bpage)->pd_lower < MAXALIGN(SizeOfPageHeaderData) + pageoff + n)
			verify_error(vs, "%s: block %u has pd_lower %u, below its %u committed bytes",
						 what, blk, ((PageHeader) bpage)->pd_lower, pageoff + n);
		memcpy(data + lo, PageGetContents(bpage) + pageoff, n);
		if (i + 1 == npages && (blk != c->tail || pageoff + n != c->tail_used))
			verify_error(vs, "%s: committed end is block %u with %u bytes, its header says block %u with %u bytes",
						 what, blk, pageoff + n, c->tail, c->tail_used);
		blk = GpuirPageGetOpaque(bpage)->next;
		UnlockReleaseBuffer(buf);
	}
	return data;
}

/* check the records of data[0..nbytes) of a chain; returns how many */
static uint32
verify_records(VerifyState *vs, const char *data, uint64 nbytes, bool live)
{
	BufState	bs;

	bs.vs = vs;
	bs.nrec = 0;
	bs.live = live;
	GpuirBufferForEach(vs->index, data, nbytes, verify_record, &bs);
	return bs.nrec;
}

/*
 * verify_meta_and_buffer: copy the metapage into *meta and the free space
 * map into *fm (read under the metapage's share lock, so that both come
 * from one moment: a merge changes them under its exclusive lock) and check
 * the metapage, then the insert buffer (the metapage's own chain and every
 * lane), read under the same share lock.  Bytes of a lane before its
 * consumed position are folded into segments already: checked, not counted
 * as live.
 */
static void
verify_meta_and_buffer(VerifyState *vs, GpuirMetaPageData *meta, GpuirFreeMapData *fm)
{
	Relation	index = vs->index;
	Buffer		metabuf;
	Page		page;
	char	   *data;
	GpuirChain	c;
	uint32		nrec;

	if (vs->index_nblocks == 0)
		verify_error(vs, "the index has no metapage (0 blocks)");
	claim_block(vs, GPUIR_METAPAGE_BLKNO, OWN_META, "metapage");
	metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(metabuf);
	GpuirCheckPage(index, page, GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	memcpy(meta, GpuirPageGetMeta(page), sizeof(GpuirMetaPageData));
	vs->has_prior = meta->has_prior != 0;
	if (meta->magic != GPUIR_MAGIC)
		verify_error(vs, "metapage (block 0) has magic 0x%08x, expected 0x%08x",
					 meta->magic, GPUIR_MAGIC);
	if (!GpuirVersionReadable(meta->version))
		verify_error(vs, "metapage (block 0) has version %u, expected %u to %u",
					 meta->version, GPUIR_MIN_VERSION, GPUIR_VERSION);
	if (meta->nsegments > GPUIR_MAX_SEGMENTS)
		verify_error(vs, "metapage (block 0) lists %u segments, at most %d allowed",
					 meta->nsegments, GPUIR_MAX_SEGMENTS);
	/* the free space map (block 1) of this version, under the metapage's lock */
	if (vs->index_nblocks < GPUIR_FIRST_DATA_BLKNO)
		verify_error(vs, "the index has no free space map page (%u blocks)", vs->index_nblocks);
	claim_block(vs, GPUIR_FREEMAP_BLKNO, OWN_META, "free space map page");
	GpuirCopyPageContents(index, GPUIR_FREEMAP_BLKNO, GPUIR_PAGE_FREEMAP, fm,
						  sizeof(GpuirFreeMapData));

	/* the metapage's own chain (written before lanes existed) */
	GpuirMetaGetChain(meta, &c);
	data = verify_chain(vs, &c, "insert buffer (metapage chain)");
	nrec = verify_records(vs, data, c.nbytes, true);
	if (nrec != c.ndocs)
		verify_error(vs, "insert buffer (metapage chain) holds %u records, metapage says %u",
					 nrec, c.ndocs);
	pfree(data);

	/* the lanes */
	vs->lanes_docs_added = 0;
	vs->lanes_dl_added = 0;
	for (int i = 0; i < GPUIR_INSERT_LANES; i++)
	{
		BlockNumber blk = meta->lane_page[i];
		GpuirLaneData ld;
		Buffer		lanebuf;
		char		what[48];
		uint64		skip;
		uint32		skip_recs;

		if (blk == 0)
		{
			if (meta->lane_consumed[i] != 0 || meta->lane_consumed_rec[i] != 0)
				verify_error(vs, "insert lane %d has no header page but a consumed position", i);
			continue;
		}
		snprintf(what, sizeof(what), "insert lane %d", i);
		claim_block(vs, blk, OWN_LANE, what);
		lanebuf = ReadBuffer(index, blk);
		LockBuffer(lanebuf, BUFFER_LOCK_SHARE);
		GpuirCheckPage(index, BufferGetPage(lanebuf), blk, GPUIR_PAGE_LANE);
		memcpy(&ld, GpuirPageGetLane(BufferGetPage(lanebuf)), sizeof(ld));
		data = verify_chain(vs, &ld.chain, what);
		UnlockReleaseBuffer(lanebuf);
		/* a lane starts where it was consumed and is trimmed up to it at most */
		if (meta->lane_consumed[i] < ld.start_pos ||
			meta->lane_consumed[i] - ld.start_pos > ld.chain.nbytes ||
			meta->lane_consumed_rec[i] < ld.start_rec ||
			meta->lane_consumed_rec[i] - ld.start_rec > ld.chain.ndocs)
			verify_error(vs, "%s: consumed position %llu (record %llu) is outside its chain [%llu, %llu) (records from %llu, %u)",
						 what, (unsigned long long) meta->lane_consumed[i],
						 (unsigned long long) meta->lane_consumed_rec[i],
						 (unsigned long long) ld.start_pos,
						 (unsigned long long) (ld.start_pos + ld.chain.nbytes),
						 (unsigned long long) ld.start_rec, ld.chain.ndocs);
		skip = meta->lane_consumed[i] - ld.start_pos;
		skip_recs = (uint32) (meta->lane_consumed_rec[i] - ld.start_rec);
		nrec = verify_records(vs, data, skip, false);
		if (nrec != skip_recs)
			verify_error(vs, "%s: its consumed bytes hold %u records, the metapage says %u",
						 what, nrec, skip_recs);
		nrec += verify_records(vs, data + skip, ld.chain.nbytes - skip, true);
		if (nrec != ld.chain.ndocs)
			verify_error(vs, "%s holds %u records, its header says %u", what, nrec, ld.chain.ndocs);
		vs->lanes_docs_added += ld.docs_added;
		vs->lanes_dl_added += ld.dl_added;
		pfree(data);
	}
	UnlockReleaseBuffer(metabuf);
	if (!(meta->k1 >= GPUIR_MIN_K1 && meta->k1 <= GPUIR_MAX_K1) ||
		!(meta->b >= GPUIR_MIN_B && meta->b <= GPUIR_MAX_B))
		verify_error(vs, "metapage (block 0) has k1 %g and b %g, outside [%g, %g] and [%g, %g]",
					 meta->k1, meta->b, GPUIR_MIN_K1, GPUIR_MAX_K1, GPUIR_MIN_B, GPUIR_MAX_B);
	if (!SearchSysCacheExists1(TSCONFIGOID, ObjectIdGetDatum(meta->cfg_id)))
		verify_error(vs, "metapage (block 0) names text search configuration %u, which does not exist",
					 meta->cfg_id);
}

/* ---------- segments ---------- */

/*
 * check the pages of one stream of nbytes on extents e (a segment map page:
 * where names it): type, page_id, tag, pd_lower; claim them
 */
static void
verify_stream_pages(VerifyState *vs, const GpuirSegmentData *seg, const char *where,
					const GpuirStreamExtents *e, uint32 nbytes)
{
	uint32		tag = GpuirSegmentTag(seg->generation);
	uint32		npages = (uint32) GpuirPagesFor(nbytes);

	if (npages == 0)
		return;
	for (int i = 0; i < e->n; i++)
		if (!BlockNumberIsValid(e->ext[i].start) || e->ext[i].start < GPUIR_FIRST_DATA_BLKNO ||
			(uint64) e->ext[i].start + e->ext[i].npages > vs->index_nblocks)
			verify_error(vs, "%s: pages [%u, %llu) are outside the index (%u blocks)",
						 where, e->ext[i].start,
						 (unsigned long long) e->ext[i].start + e->ext[i].npages,
						 vs->index_nblocks);
	for (uint32 p = 0; p < npages; p++)
	{
		BlockNumber blk = GpuirExtentsBlock(e, p);
		uint32		len = Min(GPUIR_PAGE_DATA, nbytes - p * GPUIR_PAGE_DATA);
		Buffer		buf;
		Page		page;
		GpuirPageOpaque opaque;
		LocationIndex lower;
		bool		ok;
		uint16		flags = 0,
					page_id = 0;
		uint32		found = 0;

		CHECK_FOR_INTERRUPTS();
		claim_block(vs, blk, OWN_STREAM, where);
		buf = ReadBuffer(vs->index, blk);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		ok = !PageIsNew(page) &&
			PageGetSpecialSize(page) == MAXALIGN(sizeof(GpuirPageOpaqueData));
		lower = ((PageHeader) page)->pd_lower;
		if (ok)
		{
			opaque = GpuirPageGetOpaque(page);
			flags = opaque->flags;
			page_id = opaque->page_id;
			found = opaque->next;
		}
		UnlockReleaseBuffer(buf);
		if (!ok)
			verify_error(vs, "%s: block %u is not a gpuir page (new page or bad special space)",
						 where, blk);
		if (page_id != GPUIR_PAGE_ID || flags != GPUIR_PAGE_STREAM)
			verify_error(vs, "%s: block %u has page_id 0x%04x and type %u, expected 0x%04x and type %u",
						 where, blk, page_id, flags, GPUIR_PAGE_ID, GPUIR_PAGE_STREAM);
		if (found != tag && found != GPUIR_UNTAGGED)
			verify_error(vs, "%s: block %u carries segment tag %u, expected %u",
						 where, blk, found, tag);
		if (lower != MAXALIGN(SizeOfPageHeaderData) + len)
			verify_error(vs, "%s: block %u has pd_lower %u, expected %u for %u bytes",
						 where, blk, lower, (unsigned) (MAXALIGN(SizeOfPageHeaderData) + len), len);
	}
}

/*
 * verify_list: the list of term t (dictionary entry de) of the segment
 * being verified, through the one list reader (GpuirListOpen's and
 * GpuirListDecode's checks raise XX002 as verify_error does): every posting
 * under one of its block's impacts, the dictionary's max tf, min dl and df.
 * Adds each posting's tf to sumtf[docID]; returns the list's postings.
 */
static uint32
verify_list(VerifyState *vs, const GpuirSegmentData *seg, uint32 t, const GpuirDictEntry *de,
			const GpuirBlockHeader *dir, const uint32 *dls, const uint8 *del,
			const char *lex, uint64 *sumtf)
{
	uint32		s = vs->seg;
	GpuirListCursor c;
	uint32		count = 0;
	uint32		live = 0;
	uint32		max_tf = 0;
	uint32		min_dl = PG_UINT32_MAX;

	GpuirListOpen(&c, vs->index, seg, s, de, dir, NULL);
	for (uint32 i = 0; i < c.nblocks; i++)
	{
		const GpuirBlockHeader *bh = &c.dir[i];
		int			n = GpuirListDecode(&c, i, true);

		for (int j = 0; j < n; j++)
		{
			uint32		d = c.docs[j];
			uint32		tf = c.tfs[j];
			bool		bounded = false;

			/* d < ndocs and increasing: the reader's header and decode checks */
			for (int m = 0; m < GPUIR_BLOCK_IMPACTS; m++)
				if (bh->impact_tf[m] >= tf && bh->impact_dl[m] <= dls[d])
					bounded = true;
			if (!bounded)
				verify_error(vs, "segment %u, term %u, block %u, docID %u: (tf %u, dl %u) is above the block's impacts (%u, %u) and (%u, %u)",
							 s, t, de->first_block + i, d, tf, dls[d], bh->impact_tf[0],
							 bh->impact_dl[0], bh->impact_tf[1], bh->impact_dl[1]);
			max_tf = Max(max_tf, tf);
			min_dl = Min(min_dl, dls[d]);
			sumtf[d] += tf;
			if (!(del[d / 8] & (1 << (d % 8))))
				live++;
		}
		count += n;
	}
	GpuirListClose(&c);
	if (max_tf != de->max_tf || min_dl != de->min_dl)
		verify_error(vs, "segment %u, term %u (\"%.*s\"): list max tf %u and min dl %u, the dictionary says %u and %u",
					 s, t, (int) de->lexeme_len, lex + de->lexeme_off,
					 max_tf, min_dl, de->max_tf, de->min_dl);
	if (live != de->df)
		verify_acct(vs, "segment %u, term %u (\"%.*s\"): df is %u, the list has %u postings of live documents",
					s, t, (int) de->lexeme_len, lex + de->lexeme_off, de->df, live);
	return count;
}

static void
verify_segment(VerifyState *vs, const GpuirSegmentData *seg)
{
	Relation	index = vs->index;
	uint32		s = vs->seg;
	ItemPointerData *tids;
	uint32	   *dls;
	uint8	   *del;
	GpuirDictEntry *dict;
	char	   *lex;
	GpuirBlockHeader *dir;
	uint32		payload_len = seg->streams[GPUIR_S_PAYLOAD].nbytes;
	uint32		lex_len = seg->streams[GPUIR_S_LEXEMES].nbytes;
	uint64	   *sumtf;
	uint32		ndeleted = 0;
	uint64		npostings = 0;
	uint32		next_block = 0;
	uint32		next_lex = 0;
	const char *why;
	GpuirSegmentLayout lay;
	char		where[64];

	/* stream sizes against the segment directory */
	{
		const struct
		{
			int			kind;
			uint64		expect;
		}			sizes[] = {
			{GPUIR_S_TIDS, (uint64) seg->ndocs * sizeof(ItemPointerData)},
			{GPUIR_S_DOCLENS, (uint64) seg->ndocs * sizeof(uint32)},
			{GPUIR_S_DELETED, ((uint64) seg->ndocs + 7) / 8},
			{GPUIR_S_DICT, (uint64) seg->nterms * sizeof(GpuirDictEntry)},
			{GPUIR_S_BLOCKDIR, (uint64) seg->nblocks * sizeof(GpuirBlockHeader)},
		};

		for (size_t i = 0; i < lengthof(sizes); i++)
			if (seg->streams[sizes[i].kind].nbytes != sizes[i].expect)
				verify_error(vs, "segment %u: %s stream has %u bytes, expected %llu (ndocs %u, nterms %u, nblocks %u)",
							 s, stream_names[sizes[i].kind],
							 seg->streams[sizes[i].kind].nbytes,
							 (unsigned long long) sizes[i].expect,
							 seg->ndocs, seg->nterms, seg->nblocks);
	}
	if ((why = GpuirPriorsSizeCheck(seg)) != NULL)
		verify_error(vs, "segment %u: %s (priors stream %u bytes, ndocs %u, largest prior %g)",
					 s, why, seg->streams[GPUIR_S_PRIORS].nbytes, seg->ndocs, seg->prior_max);
	if (seg->streams[GPUIR_S_PRIORS].nbytes != 0 && !vs->has_prior)
		verify_error(vs, "segment %u: a priors stream in an index without a prior column", s);
	if (seg->ndocs == 0)
		verify_error(vs, "segment %u has no documents", s);
	if (seg->ndeleted > seg->ndocs)
		verify_error(vs, "segment %u: %u deleted documents of %u", s, seg->ndeleted, seg->ndocs);
	/* where its pages are: its map page is read and checked (GpuirSegmentMapCheck) */
	GpuirSegmentLayoutOf(index, seg, &lay);
	if (seg->map != 0)
	{
		GpuirStreamExtents m;
		GpuirSegmentMapRetired *retired = palloc(sizeof(GpuirSegmentMapRetired));

		/* and its retired extents: in order, none under one of its pages */
		GpuirSegmentRetiredOf(index, seg, &lay, retired);
		m.n = 1;
		m.ext[0].start = seg->map;
		m.ext[0].npages = 1;
		snprintf(where, sizeof(where), "segment %u, map page", s);
		verify_stream_pages(vs, seg, where, &m, GpuirSegmentMapBytes(retired));
		pfree(retired);
	}
	for (int k = 0; k < GPUIR_NSTREAMS; k++)
	{
		snprintf(where, sizeof(where), "segment %u, %s stream", s, stream_names[k]);
		verify_stream_pages(vs, seg, where, &lay.streams[k], seg->streams[k].nbytes);
	}

	tids = (ItemPointerData *) GpuirStreamReadAll(index, seg, GPUIR_S_TIDS);
	dls = (uint32 *) GpuirStreamReadAll(index, seg, GPUIR_S_DOCLENS);
	del = (uint8 *) GpuirStreamReadAll(index, seg, GPUIR_S_DELETED);
	dict = (GpuirDictEntry *) GpuirStreamReadAll(index, seg, GPUIR_S_DICT);
	lex = GpuirStreamReadAll(index, seg, GPUIR_S_LEXEMES);
	dir = (GpuirBlockHeader *) GpuirStreamReadAll(index, seg, GPUIR_S_BLOCKDIR);
	sumtf = palloc_extended(sizeof(uint64) * seg->ndocs, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);

	/* documents: TID order, inside the heap, dl > 0; the deleted bitmap */
	for (uint32 d = 0; d < seg->ndocs; d++)
	{
		bool		deleted = (del[d / 8] & (1 << (d % 8))) != 0;

		if ((d & 4095) == 0)
			CHECK_FOR_INTERRUPTS();
		if (d > 0 && GpuirTidCmp(&tids[d - 1], &tids[d]) >= 0)
			verify_error(vs, "segment %u, docID %u: heap TID (%u,%u) does not follow docID %u's (%u,%u)",
						 s, d, ItemPointerGetBlockNumberNoCheck(&tids[d]),
						 ItemPointerGetOffsetNumberNoCheck(&tids[d]), d - 1,
						 ItemPointerGetBlockNumberNoCheck(&tids[d - 1]),
						 ItemPointerGetOffsetNumberNoCheck(&tids[d - 1]));
		if (dls[d] == 0)
			verify_error(vs, "segment %u, docID %u: dl is 0", s, d);
		if (deleted)
			ndeleted++;
		else
		{
			/* a deleted document's TID may be past a heap truncated by VACUUM */
			char		where[48];

			snprintf(where, sizeof(where), "segment %u, docID", s);
			check_tid(vs, &tids[d], where, d);
			add_live_tid(vs, &tids[d]);
			vs->live_docs++;
			vs->live_dl += dls[d];
		}
	}
	/* priors: each valid, the largest prior_max (it bounds every score) */
	if (seg->streams[GPUIR_S_PRIORS].nbytes != 0)
	{
		float4	   *pri = (float4 *) GpuirStreamReadAll(index, seg, GPUIR_S_PRIORS);
		float4		max = 0.0f;

		for (uint32 d = 0; d < seg->ndocs; d++)
		{
			if (!GpuirPriorValid(pri[d]))
				verify_error(vs, "segment %u, docID %u: prior %g is negative or not finite", s, d, pri[d]);
			max = Max(max, pri[d]);
		}
		if (max != seg->prior_max)
			verify_error(vs, "segment %u: largest prior is %g, the segment directory says %g",
						 s, max, seg->prior_max);
		pfree(pri);
	}
	if (seg->ndocs % 8 != 0 && (del[seg->ndocs / 8] >> (seg->ndocs % 8)) != 0)
		verify_error(vs, "segment %u: deleted bitmap has bits set past docID %u",
					 s, seg->ndocs - 1);
	if (ndeleted != seg->ndeleted)
		verify_acct(vs, "segment %u: ndeleted is %u, the deleted bitmap has %u bits set",
					s, seg->ndeleted, ndeleted);

	/* the dictionary and the posting lists */
	for (uint32 t = 0; t < seg->nterms; t++)
	{
		GpuirDictEntry *de = &dict[t];

		CHECK_FOR_INTERRUPTS();
		if (de->lexeme_len == 0 || (uint64) de->lexeme_off + de->lexeme_len > lex_len)
			verify_error(vs, "segment %u, term %u: lexeme [%u, +%u) is outside the lexeme stream (%u bytes)",
						 s, t, de->lexeme_off, de->lexeme_len, lex_len);
		if (de->lexeme_off != next_lex)
			verify_error(vs, "segment %u, term %u: lexeme at byte %u, expected %u (lexemes in dictionary order)",
						 s, t, de->lexeme_off, next_lex);
		next_lex += de->lexeme_len;
		if (t > 0 && GpuirLexemeCmp(lex + dict[t - 1].lexeme_off, dict[t - 1].lexeme_len,
									lex + de->lexeme_off, de->lexeme_len) >= 0)
			verify_error(vs, "segment %u, term %u (\"%.*s\"): not after term %u (\"%.*s\")",
						 s, t, (int) de->lexeme_len, lex + de->lexeme_off, t - 1,
						 (int) dict[t - 1].lexeme_len, lex + dict[t - 1].lexeme_off);
		if (de->npostings == 0 ||
			de->nblocks != GpuirListBlocks(de->npostings) ||
			de->first_block != next_block ||
			(uint64) de->first_block + de->nblocks > seg->nblocks)
			verify_error(vs, "segment %u, term %u (\"%.*s\"): blocks [%u, +%u) for %u postings, expected [%u, +%u) in %u blocks",
						 s, t, (int) de->lexeme_len, lex + de->lexeme_off,
						 de->first_block, de->nblocks, de->npostings, next_block,
						 GpuirListBlocks(de->npostings), seg->nblocks);
		next_block += de->nblocks;

		npostings += verify_list(vs, seg, t, de, dir, dls, del, lex, sumtf);
	}
	if (seg->nblocks > 0 && dir[0].payload_off != 0)
		verify_error(vs, "segment %u: the first block is at byte %u of the payload stream (%u bytes), expected 0",
					 s, dir[0].payload_off, payload_len);
	if (next_block != seg->nblocks)
		verify_error(vs, "segment %u: the dictionary's lists use %u blocks, the segment has %u",
					 s, next_block, seg->nblocks);
	if (next_lex != lex_len)
		verify_error(vs, "segment %u: the dictionary's lexemes use %u bytes, the lexeme stream has %u",
					 s, next_lex, lex_len);
	if (npostings != seg->npostings)
		verify_error(vs, "segment %u: %llu postings decoded, the segment directory says %llu",
					 s, (unsigned long long) npostings, (unsigned long long) seg->npostings);
	for (uint32 d = 0; d < seg->ndocs; d++)
		if (sumtf[d] != dls[d])
			verify_error(vs, "segment %u, docID %u: dl %u differs from its tf summed over the lists, %llu",
						 s, d, dls[d], (unsigned long long) sumtf[d]);
}

/* ---------- free space map ---------- */

/*
 * verify_free_space_map: the extents are inside the index, sorted, not
 * adjacent unless their safexids differ (GpuirFreeListStore coalesces the
 * others), and share no page with each
 * other, the segments or the insert buffer (claim_block)
 */
static void
verify_free_space_map(VerifyState *vs, const GpuirFreeMapData *fm)
{
	if (fm->nfree > GPUIR_MAX_FREE_EXTENTS)
		verify_error(vs, "free space map (block 1) lists %u free extents, at most %d allowed",
					 fm->nfree, GPUIR_MAX_FREE_EXTENTS);
	for (uint32 i = 0; i < fm->nfree; i++)
	{
		const GpuirFreeExtent *e = &fm->free[i];

		if (e->npages == 0 || e->start < GPUIR_FIRST_DATA_BLKNO ||
			(uint64) e->start + e->npages > vs->index_nblocks)
			verify_error(vs, "free space map extent %u: pages [%u, %llu) are outside the index (%u blocks)",
						 i, e->start, (unsigned long long) e->start + e->npages, vs->index_nblocks);
		if (i > 0 && ((uint64) fm->free[i - 1].start + fm->free[i - 1].npages > e->start ||
					  ((uint64) fm->free[i - 1].start + fm->free[i - 1].npages == e->start &&
					   FullTransactionIdEquals(fm->free[i - 1].safexid, e->safexid))))
			verify_error(vs, "free space map extents %u and %u overlap, are out of order, or are adjacent with the same safexid",
						 i - 1, i);
		for (uint32 p = 0; p < e->npages; p++)
		{
			if ((p % 65536) == 0)
				CHECK_FOR_INTERRUPTS();
			claim_block(vs, e->start + p, OWN_FREEMAP, "free space map");
		}
	}
}

/* ---------- entry points ---------- */

/*
 * GpuirVerify: every check of gpuir_verify on index, whose table is heap,
 * without taking locks (the caller holds at least AccessShareLock on both).
 * Raises ERRCODE_INDEX_CORRUPTED at the first structural problem; returns
 * the first accounting mismatch (palloc'd in TopTransactionContext; the
 * caller decides whether the index was quiet enough to report it), or NULL;
 * *vacuum_pending says whether the metapage's vacuum_pending was set (the
 * statistics may lag the deleted marks: a VACUUM runs, or was interrupted
 * by a crash and the next one repairs them).
 * Also the entry point of the page reader fuzz target (test/fuzz).
 */
char *
GpuirVerify(Relation index, Relation heap, bool *vacuum_pending)
{
	VerifyState vs;
	GpuirMetaPageData meta;
	GpuirFreeMapData fm;
	MemoryContext cxt;
	MemoryContext old;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir verify", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	memset(&vs, 0, sizeof(vs));
	vs.index = index;
	vs.heap = heap;
	vs.cxt = cxt;
	vs.index_nblocks = RelationGetNumberOfBlocks(index);
	vs.heap_nblocks = RelationGetNumberOfBlocks(heap);
	vs.owner = palloc0(Max(vs.index_nblocks, 1));

	verify_meta_and_buffer(&vs, &meta, &fm);
	*vacuum_pending = meta.vacuum_pending != 0;
	for (uint32 s = 0; s < meta.nsegments; s++)
	{
		MemoryContext segcxt = AllocSetContextCreate(cxt, "gpuir verify segment",
													 ALLOCSET_DEFAULT_SIZES);

		MemoryContextSwitchTo(segcxt);
		vs.seg = s;
		verify_segment(&vs, &meta.segments[s]);
		MemoryContextSwitchTo(cxt);
		MemoryContextDelete(segcxt);
	}
	verify_free_space_map(&vs, &fm);
	verify_no_duplicates(&vs);
	if (vs.live_docs != meta.ndocs + vs.lanes_docs_added)
		verify_acct(&vs, "N is %llu, the segments and the insert buffer hold %llu live documents",
					(unsigned long long) (meta.ndocs + vs.lanes_docs_added),
					(unsigned long long) vs.live_docs);
	if (vs.live_dl != meta.total_dl + vs.lanes_dl_added)
		verify_acct(&vs, "total dl is %llu, the live documents' dl sum to %llu",
					(unsigned long long) (meta.total_dl + vs.lanes_dl_added),
					(unsigned long long) vs.live_dl);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return vs.acct_error;
}

PG_FUNCTION_INFO_V1(gpuir_verify);

/*
 * gpuir_verify(index regclass) RETURNS void
 *
 * Contract, after contrib/amcheck's bt_index_check(regclass): returns
 * nothing when the index is consistent; raises ERRCODE_INDEX_CORRUPTED
 * (XX002) with the location (block, segment, term, block index, docID) of
 * the first problem otherwise.  Read-only; takes AccessShareLock on the
 * table, then the index, so it runs alongside queries and writers; the
 * accounting checks need a quiet index (file header).  Works on a hot
 * standby.  Errors: 42809 when the relation is not a gpuir index, 0A000 for
 * an invalid index or another session's temporary index.  Executable by
 * superusers only unless granted (like amcheck's functions).
 */
Datum
gpuir_verify(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Oid			heapoid;
	Relation	heap = NULL;
	Relation	index;
	char	   *acct_error;
	bool		vacuum_pending;
	bool		quiet;
	bool		sharelock = false;
	XLogRecPtr	replay_start = InvalidXLogRecPtr;

	/* like amcheck: lock the table before the index, to avoid deadlocks */
	heapoid = IndexGetRelation(indexoid, true);
	if (OidIsValid(heapoid))
		heap = table_open(heapoid, AccessShareLock);
	index = GpuirOpenIndex(indexoid, AccessShareLock);	/* 42809 unless gpuir */
	if (heap == NULL || heapoid != IndexGetRelation(indexoid, false))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("could not open parent table of index \"%s\"",
						RelationGetRelationName(index))));
	if (RELATION_IS_OTHER_TEMP(index))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary tables of other sessions"),
				 errdetail("Index \"%s\" is associated with temporary relation.",
						   RelationGetRelationName(index))));
	if (!index->rd_index->indisvalid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot check index \"%s\"", RelationGetRelationName(index)),
				 errdetail("Index is not valid.")));

	if (RecoveryInProgress())
		replay_start = GetXLogReplayRecPtr(NULL);
	else
		sharelock = ConditionalLockRelation(index, ShareLock);

	acct_error = GpuirVerify(index, heap, &vacuum_pending);

	quiet = sharelock ||
		(RecoveryInProgress() && GetXLogReplayRecPtr(NULL) == replay_start);
	if (acct_error != NULL && vacuum_pending)
		ereport(NOTICE,
				(errmsg("gpuir index \"%s\": accounting checks skipped, a VACUUM has not finished rewriting its statistics",
						RelationGetRelationName(index)),
				 errdetail("%s.", acct_error),
				 errhint("A VACUUM interrupted by a crash leaves the counts behind the deleted marks until the next VACUUM of the table rewrites them.")));
	else if (acct_error != NULL)
	{
		if (quiet)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuir index \"%s\" is corrupted: %s",
							RelationGetRelationName(index), acct_error),
					 errhint("REINDEX the index.")));
		ereport(NOTICE,
				(errmsg("gpuir index \"%s\": accounting checks skipped, the index changed during verification",
						RelationGetRelationName(index))));
	}

	if (sharelock)
		UnlockRelation(index, ShareLock);
	relation_close(index, AccessShareLock);
	table_close(heap, AccessShareLock);
	PG_RETURN_VOID();
}
