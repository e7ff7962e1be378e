/*-------------------------------------------------------------------------
 *
 * gpuirfree.c
 *	  The free space map of a gpuir index: runs of pages of segments that a
 *	  merge replaced, kept on the free space map page (block 1), and reused
 *	  by later merges once no snapshot can still read them.
 *
 * A query copies the segment directory from the metapage and then reads the
 * segments' pages, so a replaced segment's pages stay readable until every
 * query that copied the old directory has ended.  Two tests tell that no
 * such query is left; an extent is reusable when either holds:
 *
 *	- the horizon: as for nbtree's deleted pages (nbtree README, "Placing
 *	  deleted pages in the FSM"), a merge stamps the pages it frees with the
 *	  next full transaction ID, safexid; every reader took its snapshot before
 *	  copying the metapage, so its xmin is at most safexid, and once safexid
 *	  precedes the oldest transaction ID any backend of any database may
 *	  still consider running (GetOldestNonRemovableTransactionId(NULL), the
 *	  horizon of shared relations) no such reader is left.  The horizon is
 *	  computed anew each time (free_horizon), not taken from the GlobalVis
 *	  bounds of this backend's last snapshot: VACUUM, which compacts after
 *	  its merge, took its snapshot before that merge freed anything, and
 *	  with those bounds saw no page freed since as reusable;
 *	- no other lockers: every reader holds a lock on the index relation from
 *	  before it copies the metapage until its transaction ends, so when no
 *	  other backend holds any lock on the index (GetLockConflicts against
 *	  AccessExclusiveLock, which takes nothing) no other backend can be
 *	  reading pages freed by an earlier merge.  This backend is not reading
 *	  either: merges run from aminsert, VACUUM and gpuir_merge(), never inside
 *	  a search, and a search reads everything it needs before it returns.
 *	  Without this test a single session's extents would wait for the next
 *	  transaction ID to be assigned (one UPDATE statement would never reuse
 *	  the pages its own merges freed).
 *  Hot standby readers are not covered by the
 * primary's horizon (unless hot_standby_feedback is on) and generic WAL has
 * no recovery conflict record: stream pages carry their segment's tag, and a
 * standby query that meets a reused page is cancelled as a recovery conflict
 * (gpuirutils.c, GpuirCheckStreamTag).
 *
 * Only merges and compaction (gpuircompact.c: relocations, truncation)
 * change the map, all under the merge lock (gpuirmerge.c): a merge or a
 * relocation reads the map (GpuirReadFreeMap), takes a working copy
 * (GpuirFreeListInit), allocates
 * its streams from it (GpuirFreeListAllocate), adds the extents of the segments
 * it replaces (GpuirFreeListAddSegment) and stores the result in the same
 * WAL record that swaps the segment directory on the metapage
 * (GpuirFreeListStore).  A crash
 * before the swap leaves the map as it was: pages the merge took are still
 * free; pages it appended to the relation are lost until REINDEX.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "storage/procarray.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/wait_event.h"

#include "gpuir.h"

/* GpuirFreeWaitReusable polls the horizon this often */
#define GPUIR_FREE_WAIT_MS 10

/* whether no other backend holds a lock of any mode on index */
static bool
no_other_lockers(Relation index)
{
	LOCKTAG		tag;
	int			n;

	SET_LOCKTAG_RELATION(tag, index->rd_lockInfo.lockRelId.dbId,
						 index->rd_lockInfo.lockRelId.relId);
	(void) GetLockConflicts(&tag, AccessExclusiveLock, &n);
	return n == 0;
}

/*
 * free_horizon: the oldest transaction ID that a backend may still see as
 * running, as a full transaction ID (file header): extents freed before it
 * are reusable
 */
static FullTransactionId
free_horizon(void)
{
	TransactionId xid = GetOldestNonRemovableTransactionId(NULL);
	FullTransactionId next = ReadNextFullTransactionId();
	uint32		epoch = EpochFromFullTransactionId(next);

	/* the horizon is at most next, at most 2^31 transaction IDs before it */
	if (xid > XidFromFullTransactionId(next))
		epoch--;
	return FullTransactionIdFromEpochAndXid(epoch, xid);
}

/*
 * GpuirReadFreeMap: copy the free space map of index into *fm under a share
 * lock; raises ERRCODE_INDEX_CORRUPTED when block 1 is not a free space map
 * page or its extent count is out of range.  Merges and compaction read it
 * under the merge lock, which keeps every other writer of the map out until
 * they store it back; without that lock the copy is only a count.
 */
void
GpuirReadFreeMap(Relation index, GpuirFreeMapData *fm)
{
	GpuirCopyPageContents(index, GPUIR_FREEMAP_BLKNO, GPUIR_PAGE_FREEMAP, fm,
						  sizeof(GpuirFreeMapData));
	if (fm->nfree > GPUIR_MAX_FREE_EXTENTS)
		GpuirCorrupt(index, "free space map extent count out of range");
}

/*
 * GpuirSetFreeMapLower: set pd_lower of a free space map page to the end of
 * its extents, so that a full-page image leaves out the unused rest
 */
void
GpuirSetFreeMapLower(Page page)
{
	GpuirFreeMapData *fm = GpuirPageGetFreeMap(page);

	((PageHeader) page)->pd_lower =
		((char *) &fm->free[fm->nfree]) - (char *) page;
}

/*
 * append_joined: append extent e to fl (which has room, extents in order of
 * start), reusable or not; a reusable one that continues the last extent,
 * also reusable, joins it (a reusable extent's safexid is then
 * FirstNormalFullTransactionId: no reader left)
 */
static void
append_joined(GpuirFreeList *fl, const GpuirFreeExtent *e, bool reusable)
{
	GpuirFreeExtent *prev = fl->n > 0 ? &fl->ext[fl->n - 1] : NULL;

	if (reusable && prev != NULL && fl->reusable[fl->n - 1] &&
		(uint64) prev->start + prev->npages == e->start &&
		(uint64) prev->npages + e->npages <= PG_UINT32_MAX)
	{
		prev->npages += e->npages;
		return;
	}
	fl->ext[fl->n] = *e;
	if (reusable)
		fl->ext[fl->n].safexid = FirstNormalFullTransactionId;
	fl->reusable[fl->n] = reusable;
	fl->n++;
}

/*
 * GpuirFreeListInit: the working copy of the free space map fm of index,
 * with the extents reusable now marked (file header).  A reusable extent
 * stays reusable (no reader can come back to its pages), so its safexid
 * becomes FirstNormalFullTransactionId, and adjacent reusable extents are
 * joined into one run: extents freed at different times are kept apart on
 * the free space map page until they are all reusable (GpuirFreeListStore).
 */
void
GpuirFreeListInit(GpuirFreeList *fl, Relation index, const GpuirFreeMapData *fm)
{
	bool		alone = fm->nfree > 0 && no_other_lockers(index);
	FullTransactionId horizon = InvalidFullTransactionId;

	if (fm->nfree > 0 && !alone)
		horizon = free_horizon();
	fl->n = 0;
	fl->dropped_pages = 0;
	for (uint32 i = 0; i < fm->nfree && i < GPUIR_MAX_FREE_EXTENTS; i++)
		append_joined(fl, &fm->free[i],
					  alone || FullTransactionIdPrecedes(fm->free[i].safexid, horizon));
}

/*
 * take_extent: npages consecutive reusable pages from the start of the
 * lowest reusable extent that holds them or, with smallest, the smallest
 * such extent (the lowest of equal ones), removed from the list;
 * InvalidBlockNumber when none is large enough
 */
static BlockNumber
take_extent(GpuirFreeList *fl, uint32 npages, bool smallest)
{
	int			best = -1;

	for (int i = 0; i < fl->n; i++)
	{
		const GpuirFreeExtent *e = &fl->ext[i];

		if (!fl->reusable[i] || e->npages < npages)
			continue;
		if (best < 0 ||
			(smallest && e->npages < fl->ext[best].npages) ||
			((!smallest || e->npages == fl->ext[best].npages) &&
			 e->start < fl->ext[best].start))
			best = i;
	}
	if (best < 0)
		return InvalidBlockNumber;
	fl->ext[best].start += npages;
	fl->ext[best].npages -= npages;
	return fl->ext[best].start - npages;
}

/*
 * GpuirFreeListTake: npages consecutive reusable pages (first fit, lowest
 * block first, so that the index fills from its start: compaction), removed
 * from the list; InvalidBlockNumber when no reusable extent is large enough.
 */
BlockNumber
GpuirFreeListTake(GpuirFreeList *fl, uint32 npages)
{
	return take_extent(fl, npages, false);
}

/*
 * GpuirFreeListTakeBestFit: as GpuirFreeListTake, from the smallest
 * reusable extent that holds npages (the lowest of equal ones).  A merge
 * places its new segment so (write_segment), keeping the large holes for
 * the large streams: with the lowest extent first, the streams of small
 * merges cut up the hole a later rewrite's payload needed, and the rewrite
 * extended the index although the free pages would have held it
 * (bench/results/2026-11-27-cpu-2core-soak-wait.md).  Compaction keeps
 * GpuirFreeListTake: it moves segments toward the start.
 */
BlockNumber
GpuirFreeListTakeBestFit(GpuirFreeList *fl, uint32 npages)
{
	return take_extent(fl, npages, true);
}

/*
 * GpuirFreeListAllocate: npages consecutive free pages of index for a
 * stream or a segment: the lowest reusable extent of fl that holds them
 * (GpuirFreeListTake; fl may be NULL), else pages at the end, starting in
 * the reusable extent of fl that ends index, if there is one, and going on
 * into pages the index is extended by.  Without the latter, a segment too
 * large for every extent would leave the free pages at the end below it,
 * where compaction (gpuircompact.c) cannot truncate them.  New pages are
 * zeroed, allocated under the relation extension lock (every extension of
 * a gpuir index takes it) so that they follow each other.  Returns the
 * first page.
 */
BlockNumber
GpuirFreeListAllocate(GpuirFreeList *fl, Relation index, uint32 npages)
{
	BlockNumber nblocks;
	BlockNumber start = fl ? GpuirFreeListTake(fl, npages) : InvalidBlockNumber;

	if (BlockNumberIsValid(start))
		return start;
	LockRelationForExtension(index, ExclusiveLock);
	nblocks = RelationGetNumberOfBlocks(index);
	start = nblocks;
	for (int i = 0; fl != NULL && i < fl->n; i++)
	{
		GpuirFreeExtent *e = &fl->ext[i];

		/* smaller than npages, or GpuirFreeListTake would have taken it */
		if (fl->reusable[i] && e->npages > 0 && (uint64) e->start + e->npages == nblocks)
		{
			start = e->start;
			e->npages = 0;
			break;
		}
	}
	for (BlockNumber b = nblocks; b < (uint64) start + npages; b++)
	{
		Buffer		buf = ReadBuffer(index, P_NEW);

		if (BufferGetBlockNumber(buf) != b)
			elog(ERROR, "gpuir index \"%s\" was extended by another backend",
				 RelationGetRelationName(index));
		ReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
	}
	UnlockRelationForExtension(index, ExclusiveLock);
	return start;
}

/*
 * The smallest piece of a reusable extent that GpuirFreeListAllocateExtents
 * cuts a stream into: smaller holes are left to whole small streams (a
 * segment's deleted bitmap is one page), so that a stream is not strewn
 * over pages one by one.
 */
#define GPUIR_MIN_PIECE_PAGES	4

/*
 * GpuirFreeListAllocateExtents: npages free pages of index for one stream,
 * as extents (out), taken from fl (NULL: none, a new index):
 *	- one reusable extent that holds them all: the smallest such (best fit,
 *	  GpuirFreeListTakeBestFit), or with lowest the lowest (compaction);
 *	- else pieces of reusable extents of at least GPUIR_MIN_PIECE_PAGES
 *	  pages, when together they hold npages in at most
 *	  GPUIR_STREAM_MAX_EXTENTS: whole extents, the largest first (the lowest
 *	  first with lowest), until one holds the rest, which is taken from the
 *	  smallest (lowest) that does.  A stream that fits in no hole still fills
 *	  holes: without pieces, a soaked index kept 8-12% of its pages free in
 *	  holes smaller than each stream of the segments merges wrote, while
 *	  those merges extended the file (bench/results, the soaks);
 *	- else, with extend, the pieces that there are and the rest at the end
 *	  (GpuirFreeListAllocate) as the last extent.
 * Only extents that end at or below limit count (InvalidBlockNumber: all).
 * Returns false, taking nothing, when !extend and the reusable pages do not
 * hold npages.
 */
bool
GpuirFreeListAllocateExtents(GpuirFreeList *fl, Relation index, uint32 npages, bool lowest,
							 BlockNumber limit, bool extend, GpuirStreamExtents *out)
{
	int			pick[GPUIR_STREAM_MAX_EXTENTS];
	uint32		take[GPUIR_STREAM_MAX_EXTENTS];
	int			npick = 0;
	uint32		rest = npages;

	out->n = 0;
	if (npages == 0)
		return true;
	while (fl != NULL && npick < GPUIR_STREAM_MAX_EXTENTS)
	{
		int			fit = -1;		/* takes the rest */
		int			big = -1;		/* else taken whole */

		for (int i = 0; i < fl->n; i++)
		{
			const GpuirFreeExtent *e = &fl->ext[i];
			bool		used = false;

			if (!fl->reusable[i] || e->npages == 0 ||
				(uint64) e->start + e->npages > (uint64) limit)
				continue;
			for (int j = 0; j < npick; j++)
				used |= (pick[j] == i);
			if (used)
				continue;
			if (e->npages >= rest)
			{
				if (fit < 0 ||
					(lowest ? e->start < fl->ext[fit].start
					 : (e->npages < fl->ext[fit].npages ||
						(e->npages == fl->ext[fit].npages && e->start < fl->ext[fit].start))))
					fit = i;
			}
			else if (e->npages >= GPUIR_MIN_PIECE_PAGES &&
					 (big < 0 ||
					  (lowest ? e->start < fl->ext[big].start
					   : e->npages > fl->ext[big].npages)))
				big = i;
		}
		if (fit >= 0)
		{
			pick[npick] = fit;
			take[npick++] = rest;
			rest = 0;
			break;
		}
		if (big < 0 || npick == GPUIR_STREAM_MAX_EXTENTS - 1)
			break;
		pick[npick] = big;
		take[npick++] = fl->ext[big].npages;
		rest -= fl->ext[big].npages;
	}
	if (rest > 0 && !extend)
		return false;
	for (int j = 0; j < npick; j++)
	{
		GpuirFreeExtent *e = &fl->ext[pick[j]];

		out->ext[j].start = e->start;
		out->ext[j].npages = take[j];
		e->start += take[j];
		e->npages -= take[j];
	}
	out->n = npick;
	if (rest > 0)
	{
		/* the loop left room for this last extent */
		out->ext[out->n].start = GpuirFreeListAllocate(fl, index, rest);
		out->ext[out->n].npages = rest;
		out->n++;
	}
	return true;
}

/* GpuirFreeListAddSegment: free the pages of a segment (lay: its streams and map page) as of safexid */
void
GpuirFreeListAddSegment(GpuirFreeList *fl, const GpuirSegmentLayout *lay,
						FullTransactionId safexid)
{
	for (int s = 0; s <= GPUIR_NSTREAMS; s++)
	{
		GpuirStreamExtents map;
		const GpuirStreamExtents *e = &map;

		if (s < GPUIR_NSTREAMS)
			e = &lay->streams[s];
		else
		{
			map.n = lay->map != 0 ? 1 : 0;
			map.ext[0].start = lay->map;
			map.ext[0].npages = 1;
		}
		for (int i = 0; i < e->n; i++)
		{
			Assert(fl->n < lengthof(fl->ext));
			fl->ext[fl->n].start = e->ext[i].start;
			fl->ext[fl->n].npages = e->ext[i].npages;
			fl->ext[fl->n].safexid = safexid;
			fl->reusable[fl->n] = false;
			fl->n++;
		}
	}
}

/*
 * GpuirFreeListHoldOut: take the pages of [start, start + npages) out of
 * fl's extents, so that no allocation from fl takes them (an extent that
 * holds them in its middle is split); each piece taken out is appended to
 * held with its safexid and reusable flag, for GpuirFreeListReturn.  Returns
 * false when either list is full (fl then partly changed: for plans on a
 * copy).
 */
bool
GpuirFreeListHoldOut(GpuirFreeList *fl, BlockNumber start, uint32 npages, GpuirFreeList *held)
{
	uint64		end = (uint64) start + npages;
	int			n = fl->n;

	for (int i = 0; i < n; i++)
	{
		GpuirFreeExtent *e = &fl->ext[i];
		uint64		eend = (uint64) e->start + e->npages;
		uint64		a = Max((uint64) e->start, (uint64) start);
		uint64		b = Min(eend, end);

		if (e->npages == 0 || a >= b)
			continue;
		if (held->n == (int) lengthof(held->ext) ||
			(eend > b && fl->n == (int) lengthof(fl->ext)))
			return false;
		held->ext[held->n] = *e;
		held->ext[held->n].start = (BlockNumber) a;
		held->ext[held->n].npages = (uint32) (b - a);
		held->reusable[held->n++] = fl->reusable[i];
		if (eend > b)
		{
			/* the part after the hole goes last */
			fl->ext[fl->n] = *e;
			fl->ext[fl->n].start = (BlockNumber) b;
			fl->ext[fl->n].npages = (uint32) (eend - b);
			fl->reusable[fl->n++] = fl->reusable[i];
		}
		e->npages = (uint32) (a - e->start);
	}
	return true;
}

/*
 * GpuirFreeListReturn: put the extents GpuirFreeListHoldOut took out of fl
 * (held) back, as they were; false, adding nothing, when fl has no room
 */
bool
GpuirFreeListReturn(GpuirFreeList *fl, const GpuirFreeList *held)
{
	if (fl->n + held->n > (int) lengthof(fl->ext))
		return false;
	for (int i = 0; i < held->n; i++)
	{
		fl->ext[fl->n] = held->ext[i];
		fl->reusable[fl->n++] = held->reusable[i];
	}
	return true;
}

/*
 * GpuirFreeListAddReusable: free the pages[0..n) (sorted here; runs of
 * consecutive ones become one extent each), reusable at once, as
 * GpuirFreeListInit marks extents whose readers are gone
 * (FirstNormalFullTransactionId).  For pages no reader can come back to:
 * an insert lane's old chain pages, which are read only under the lane
 * header's lock (gpuircompact.c).  Returns false, adding nothing, when the
 * list has no room for the runs.
 */
bool
GpuirFreeListAddReusable(GpuirFreeList *fl, BlockNumber *pages, int n)
{
	int			runs = 0;

	qsort(pages, n, sizeof(BlockNumber), GpuirUint32Cmp);
	for (int i = 0; i < n; i++)
		if (i == 0 || pages[i] != pages[i - 1] + 1)
			runs++;
	if (fl->n + runs > (int) lengthof(fl->ext))
		return false;
	for (int i = 0; i < n; i++)
	{
		if (i > 0 && pages[i] == pages[i - 1] + 1)
		{
			fl->ext[fl->n - 1].npages++;
			continue;
		}
		fl->ext[fl->n].start = pages[i];
		fl->ext[fl->n].npages = 1;
		fl->ext[fl->n].safexid = FirstNormalFullTransactionId;
		fl->reusable[fl->n] = true;
		fl->n++;
	}
	return true;
}

/* an extent and whether it is reusable, for GpuirFreeListPlanFree */
typedef struct ExtentFlag
{
	GpuirFreeExtent e;
	bool		reusable;
} ExtentFlag;

static int
extent_flag_cmp(const void *a, const void *b)
{
	BlockNumber x = ((const ExtentFlag *) a)->e.start;
	BlockNumber y = ((const ExtentFlag *) b)->e.start;

	return (x > y) - (x < y);
}

/*
 * GpuirFreeListPlanFree: for plans on a copy of a free list, never stored:
 * the pages of a segment (lay) freed as if no reader were left, and the
 * list sorted by start with adjacent reusable extents joined
 * (append_joined), as GpuirFreeListInit joins them once the map holds them
 * and they are reusable (compaction's make_room asks what a move would
 * free next to the holes).  Returns false, adding nothing, when the list
 * has no room for the segment's extents.
 */
bool
GpuirFreeListPlanFree(GpuirFreeList *fl, const GpuirSegmentLayout *lay)
{
	ExtentFlag *a;
	int			n = 0;
	int			add = lay->map != 0 ? 1 : 0;

	for (int k = 0; k < GPUIR_NSTREAMS; k++)
		add += lay->streams[k].n;
	if (fl->n + add > (int) lengthof(fl->ext))
		return false;
	a = palloc(sizeof(ExtentFlag) * (fl->n + add));
	for (int i = 0; i < fl->n; i++)
		if (fl->ext[i].npages > 0)
		{
			a[n].e = fl->ext[i];
			a[n++].reusable = fl->reusable[i];
		}
	for (int k = 0; k <= GPUIR_NSTREAMS; k++)
	{
		int			ne = k < GPUIR_NSTREAMS ? lay->streams[k].n : (lay->map != 0 ? 1 : 0);

		for (int i = 0; i < ne; i++)
		{
			a[n].e.start = k < GPUIR_NSTREAMS ? lay->streams[k].ext[i].start : lay->map;
			a[n].e.npages = k < GPUIR_NSTREAMS ? lay->streams[k].ext[i].npages : 1;
			a[n].e.safexid = FirstNormalFullTransactionId;
			a[n++].reusable = true;
		}
	}
	qsort(a, n, sizeof(ExtentFlag), extent_flag_cmp);
	fl->n = 0;
	for (int i = 0; i < n; i++)
		append_joined(fl, &a[i].e, a[i].reusable);
	pfree(a);
	return true;
}

static int
extent_cmp_start(const void *a, const void *b)
{
	const GpuirFreeExtent *x = a;
	const GpuirFreeExtent *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

static int
extent_cmp_size_desc(const void *a, const void *b)
{
	const GpuirFreeExtent *x = a;
	const GpuirFreeExtent *y = b;

	return (x->npages < y->npages) - (x->npages > y->npages);
}

/*
 * GpuirFreeListStore: write the working list into fm (on the caller's
 * WAL-registered free space map page, or a scratch copy): empty extents dropped, adjacent ones with the
 * same safexid coalesced (others stay apart: joined, a reusable run would
 * wait for the later safexid, and a large run freed long ago would not be
 * reused while a small piece beside it was freed by every merge), and,
 * when more than GPUIR_MAX_FREE_EXTENTS remain, the smallest left out (their
 * pages are lost until REINDEX; counted in fl->dropped_pages).
 */
void
GpuirFreeListStore(GpuirFreeList *fl, GpuirFreeMapData *fm)
{
	GpuirFreeExtent *e = fl->ext;
	int			n = 0;

	for (int i = 0; i < fl->n; i++)
		if (e[i].npages > 0)
			e[n++] = e[i];
	qsort(e, n, sizeof(GpuirFreeExtent), extent_cmp_start);
	if (n > 0)
	{
		int			m = 0;

		for (int i = 1; i < n; i++)
		{
			if ((uint64) e[m].start + e[m].npages == e[i].start &&
				FullTransactionIdEquals(e[m].safexid, e[i].safexid) &&
				(uint64) e[m].npages + e[i].npages <= PG_UINT32_MAX)
				e[m].npages += e[i].npages;
			else
				e[++m] = e[i];
		}
		n = m + 1;
	}
	if (n > GPUIR_MAX_FREE_EXTENTS)
	{
		qsort(e, n, sizeof(GpuirFreeExtent), extent_cmp_size_desc);
		for (int i = GPUIR_MAX_FREE_EXTENTS; i < n; i++)
			fl->dropped_pages += e[i].npages;
		n = GPUIR_MAX_FREE_EXTENTS;
		qsort(e, n, sizeof(GpuirFreeExtent), extent_cmp_start);
	}
	fm->nfree = n;
	memcpy(fm->free, e, sizeof(GpuirFreeExtent) * n);
	fl->n = 0;
}

/*
 * GpuirFreeListReportDropped: the DEBUG1 line for the pages of extents that
 * GpuirFreeListStore left out of a full free space map (lost until REINDEX),
 * once fl has been stored on the page
 */
void
GpuirFreeListReportDropped(Relation index, const GpuirFreeList *fl)
{
	if (fl->dropped_pages > 0)
		ereport(DEBUG1,
				(errmsg("gpuir index \"%s\": free space map full, %llu pages left out",
						RelationGetRelationName(index),
						(unsigned long long) fl->dropped_pages)));
}

/*
 * GpuirFreeListPages: the pages of fl's extents (*all) and of those
 * reusable now (*reusable)
 */
void
GpuirFreeListPages(const GpuirFreeList *fl, uint64 *all, uint64 *reusable)
{
	*all = 0;
	*reusable = 0;
	for (int i = 0; i < fl->n; i++)
	{
		*all += fl->ext[i].npages;
		if (fl->reusable[i])
			*reusable += fl->ext[i].npages;
	}
}

/*
 * GpuirFreePages: the pages in the free space map of index (*all) and those
 * of them a merge could reuse now (*reusable; NULL: not asked, so neither
 * the lock manager nor the horizon is consulted: gpuir_index_info)
 */
void
GpuirFreePages(Relation index, uint64 *all, uint64 *reusable)
{
	GpuirFreeMapData *fm = palloc(sizeof(GpuirFreeMapData));

	GpuirReadFreeMap(index, fm);
	if (reusable == NULL)
	{
		*all = 0;
		for (uint32 i = 0; i < fm->nfree && i < GPUIR_MAX_FREE_EXTENTS; i++)
			*all += fm->free[i].npages;
	}
	else
	{
		GpuirFreeList *fl = palloc(sizeof(GpuirFreeList));

		GpuirFreeListInit(fl, index, fm);
		GpuirFreeListPages(fl, all, reusable);
		pfree(fl);
	}
	pfree(fm);
}

/*
 * GpuirFreeWaitReusable: wait until every extent on the free space map of
 * index is reusable (file header), polling every GPUIR_FREE_WAIT_MS, for at
 * most max_ms milliseconds; returns whether they are.  The pages a merge
 * has just freed are reusable a few milliseconds later under a steady load
 * (once the queries that copied the directory before the merge have ended
 * and a later transaction ID has been assigned); with no writes, no ID is
 * assigned and only max_ms ends the wait.  The caller holds no merge lock
 * (merges and inserts go on meanwhile; what it waited for may be taken by
 * then) and is VACUUM, whose own snapshot does not hold the horizon back.
 */
bool
GpuirFreeWaitReusable(Relation index, int max_ms)
{
	GpuirFreeMapData *fm = palloc(sizeof(GpuirFreeMapData));
	FullTransactionId upto = FirstNormalFullTransactionId;
	bool		reusable = true;

	GpuirReadFreeMap(index, fm);
	for (uint32 i = 0; i < fm->nfree; i++)
		if (FullTransactionIdFollows(fm->free[i].safexid, upto))
			upto = fm->free[i].safexid;
	pfree(fm);
	for (int waited = 0;; waited += GPUIR_FREE_WAIT_MS)
	{
		if (FullTransactionIdPrecedes(upto, free_horizon()) || no_other_lockers(index))
			break;
		if (waited >= max_ms)
		{
			reusable = false;
			break;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 GPUIR_FREE_WAIT_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return reusable;
}
