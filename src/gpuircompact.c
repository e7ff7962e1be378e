/*-------------------------------------------------------------------------
 *
 * gpuircompact.c
 *	  Compaction: moving segments toward the start of a gpuir index and
 *	  truncating the free pages that end it, so that the file shrinks after
 *	  merges.
 *
 * A merge that rewrites a segment must keep the old copy readable until
 * its swap, so rewriting a large segment appends what of its new copy the
 * reusable free extents cannot hold (GpuirBuilderWrite) to the end of the
 * index; the old copy's pages go to the free space map and the file keeps
 * its peak size.  VACUUM and
 * gpuir_merge() then compact (GpuirCompact), and so does an insert's merge
 * that replaced segments (GpuirCompactLocked, without waiting):
 *
 *	1. relocation: while the highest page in use belongs to a segment
 *	   that has pages under other pages in use (a merge placed its streams
 *	   in holes and what they could not hold at the end), only its pages
 *	   above those move (move_part), into reusable free extents below them,
 *	   under the same generation with a new map page, when that frees at
 *	   least GPUIR_COMPACT_MIN_PAGES at the end; else, while the highest
 *	   page in use belongs to a segment whose
 *	   pages fit into the reusable free extents (gpuirfree.c) below the run
 *	   of free pages at the end (whole streams, else in pieces: a segment
 *	   map) so that that run grows by at least a quarter of the segment's
 *	   pages,
 *	   the segment's streams are copied there, byte for byte, under a new
 *	   generation (so a new tag on every page, and the GPU's list cache sees
 *	   a new segment), and the directory entry is swapped in one WAL record
 *	   that frees the old pages, exactly as a merge's swap does; when the
 *	   reusable extents below the end cannot hold that segment, once a
 *	   compaction another, smaller segment is moved instead if its old
 *	   pages, joined to the holes beside them, would make room for it
 *	   (make_room);
 *	2. truncation: the run of reusable free pages at the end is truncated.
 *	   No reader of this primary can read a reusable page (gpuirfree.c: no
 *	   query that copied a directory listing it is left), so unlike a heap
 *	   truncation (lazy_truncate_heap) this needs no AccessExclusiveLock,
 *	   which an index that 16 clients query is never without: it holds the
 *	   merge lock, which keeps every other writer of the free space map out,
 *	   the metapage exclusively and the relation extension lock, which every
 *	   extension of a gpuir index takes (inserts' buffer pages, merges' new
 *	   pages).  An index of RELSEG_SIZE blocks (1 GB) or more is truncated
 *	   under a conditional AccessExclusiveLock, as a heap is: md.c's file
 *	   handles in other backends count blocks from their last open segment
 *	   file until they process the invalidation, at their next relation
 *	   lock.  For a hot standby, whose readers the primary's horizon does
 *	   not cover, an AccessExclusiveLock is WAL-logged
 *	   (LogAccessExclusiveLock) without being taken here: the standby takes
 *	   it on replay, before the truncation, so its queries of the index are
 *	   cancelled as for a heap truncation.  The free space map forgets the
 *	   extents first (that record is flushed), then RelationTruncate logs
 *	   and truncates: a crash in between leaves the pages at the end unused
 *	   until REINDEX, never listed free beyond the end of the file.  Pages
 *	   a relocation has just freed are not reusable yet: VACUUM waits a
 *	   little for them (GpuirCompact), else the next compaction cuts them,
 *	   if no merge has taken them by then.
 *
 * When the highest page in use is a page of an insert lane's chain, step 1
 * moves the lane's whole chain instead (relocate_top_lane: the pages are
 * copied to the lowest reusable free pages under the lane header's lock and
 * the old ones are reusable at once).  Lane header pages are never moved:
 * one at the end stops the truncation there (they are created with the
 * lanes, on the first inserts after a build, just after its segments).
 * Both steps run under the merge lock and only when they have something to
 * do.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/generic_xlog.h"
#include "access/transam.h"
#include "access/xlog.h"
#include "catalog/storage.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/standby.h"
#include "utils/rel.h"

#include "gpuir.h"
#include "gpuirservice.h"

/* relocate a segment only when the free run at the end grows by at least this */
#define GPUIR_COMPACT_MIN_PAGES		16
/* truncate only this many free pages or more */
#define GPUIR_TRUNCATE_MIN_PAGES	16
/* AccessExclusiveLock attempts for an index of RELSEG_SIZE blocks or more: every 50 ms for at most 1 s */
#define GPUIR_TRUNCATE_LOCK_WAIT_MS		50
#define GPUIR_TRUNCATE_LOCK_TRIES		20
/* VACUUM's compaction waits at most this long for freed pages to become reusable, this many times */
#define GPUIR_COMPACT_WAIT_MS			500
#define GPUIR_COMPACT_WAITS				2

static void compact_locked(Relation index, bool wait);

/*
 * free_tail_start: the first block of the run of free pages that ends an
 * index of nblocks blocks (nblocks when its last page is in use), given its
 * free extents ext[0..n) sorted by start and coalesced (as the free space
 * map keeps them); with reusable non-NULL only extents reusable now count.
 */
static BlockNumber
free_tail_start(const GpuirFreeExtent *ext, int n, const bool *reusable,
				BlockNumber nblocks)
{
	BlockNumber end = nblocks;

	for (int i = n - 1; i >= 0; i--)
	{
		if (ext[i].npages == 0 || (reusable && !reusable[i]))
			continue;
		if ((uint64) ext[i].start + ext[i].npages != end)
			break;
		end = ext[i].start;
	}
	return end;
}

/* the segment of meta (lays: their layouts) that has a stream or map page at blkno, or -1 */
static int
segment_at(const GpuirMetaPageData *meta, const GpuirSegmentLayout *lays, BlockNumber blkno)
{
	for (uint32 s = 0; s < meta->nsegments; s++)
	{
		if (lays[s].map != 0 && lays[s].map == blkno)
			return (int) s;
		for (int k = 0; k < GPUIR_NSTREAMS; k++)
			for (int i = 0; i < lays[s].streams[k].n; i++)
			{
				const GpuirExtent *e = &lays[s].streams[k].ext[i];

				if (blkno >= e->start && (uint64) blkno < (uint64) e->start + e->npages)
					return (int) s;
			}
	}
	return -1;
}

/* segment_below: whether the segment laid out as lay has a page below cut */
static bool
segment_below(const GpuirSegmentLayout *lay, BlockNumber cut)
{
	if (lay->map != 0 && lay->map < cut)
		return true;
	for (int k = 0; k < GPUIR_NSTREAMS; k++)
		for (int i = 0; i < lay->streams[k].n; i++)
			if (lay->streams[k].ext[i].start < cut)
				return true;
	return false;
}

/*
 * place_segment: allocate from fl the pages of a copy of a segment laid out
 * as lay, below limit (GpuirFreeListAllocateExtents, lowest first, into
 * *to; a map page when a stream is in pieces); with extend what the free
 * pages below limit cannot hold goes at the end, else false is returned
 * when they cannot (fl then partly taken: for plans on a copy)
 */
static bool
place_segment(GpuirFreeList *fl, Relation index, const GpuirSegmentData *seg,
			  BlockNumber limit, bool extend, GpuirSegmentLayout *to)
{
	bool		pieces = false;

	to->map = 0;
	for (int k = 0; k < GPUIR_NSTREAMS; k++)
	{
		if (!GpuirFreeListAllocateExtents(fl, index, (uint32) GpuirStreamPages(&seg->streams[k]),
										  true, limit, extend, &to->streams[k]))
			return false;
		pieces |= to->streams[k].n > 1;
	}
	if (pieces)
	{
		GpuirStreamExtents m;

		if (!GpuirFreeListAllocateExtents(fl, index, 1, true, limit, extend, &m))
			return false;
		to->map = m.ext[0].start;
	}
	return true;
}

/*
 * relocate_top_lane: when the highest page in use, top = tail - 1, is a page
 * of an insert lane's chain, move the lane's whole chain (its spare pages
 * after the committed tail included, so that the lane keeps the pages its
 * appends reuse) to the lowest reusable free pages, if the run of free pages
 * that ends the index grows; returns whether it did.  fl is the working
 * copy of the free space map (the caller's, from before; the merge lock,
 * which the caller holds, keeps every other writer of the map out).
 *
 * Every reader of a chain holds its lane header's lock while it reads the
 * chain's pages (GpuirBufferReadAll, gpuir_verify; a hot standby's replay of
 * the swap waits for the lock as well), and appends hold it exclusively: so
 * once the lane header points at the copy, no one can read the old pages,
 * which are freed reusable at once.  The metapage is held exclusively, as
 * for a truncation, so that gpuir_verify sees the free space map and the
 * chain of one moment; lock order: metapage, lane header, its chain's pages,
 * the free space map page.
 */
static bool
relocate_top_lane(Relation index, GpuirFreeList *fl,
				  BlockNumber tail, BlockNumber nblocks)
{
	BlockNumber top = tail - 1;
	Buffer		metabuf;
	Buffer		lanebuf = InvalidBuffer;
	GpuirMetaPage m;
	BlockNumber *pages = NULL;
	BlockNumber *to;
	BlockNumber *old;
	int			npages = 0;
	int			tail_idx = -1;
	int			lane = -1;
	GpuirFreeList *sim;
	GpuirFreeMapData *scratch;
	BlockNumber newtail;
	bool		done = false;

	/*
	 * the page's type first, so that the lanes' chains are walked under the
	 * metapage's lock only when top is an insert buffer page (one stays on
	 * its lane's chain while the merge lock is held: only merges' trims
	 * splice chain pages, and appends only add them)
	 */
	{
		Buffer		buf = ReadBuffer(index, top);
		Page		page;
		uint16		type = 0;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!PageIsNew(page) &&
			PageGetSpecialSize(page) == MAXALIGN(sizeof(GpuirPageOpaqueData)) &&
			GpuirPageGetOpaque(page)->page_id == GPUIR_PAGE_ID)
			type = GpuirPageGetOpaque(page)->flags;
		UnlockReleaseBuffer(buf);
		if (type != GPUIR_PAGE_BUFFER)
		{
			ereport(DEBUG2,
					(errmsg("gpuir index \"%s\": nothing moved: page %u, the last in use, is %s",
							RelationGetRelationName(index), top,
							type == GPUIR_PAGE_LANE ? "an insert lane's header" :
							"no segment's and no insert buffer page (one a crashed merge left)")));
			return false;
		}
	}

	metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	GpuirCheckPage(index, BufferGetPage(metabuf), GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META);
	m = GpuirPageGetMeta(BufferGetPage(metabuf));
	for (int i = 0; i < GPUIR_INSERT_LANES && lane < 0; i++)
	{
		BlockNumber blk = m->lane_page[i];

		if (blk == 0)
			continue;
		if (!GpuirDataBlock(blk, nblocks))
			GpuirCorrupt(index, "insert lane header is outside the index");
		lanebuf = ReadBuffer(index, blk);
		LockBuffer(lanebuf, BUFFER_LOCK_EXCLUSIVE);
		GpuirCheckPage(index, BufferGetPage(lanebuf), blk, GPUIR_PAGE_LANE);
		npages = GpuirChainAllPages(index, &GpuirPageGetLane(BufferGetPage(lanebuf))->chain,
									&pages, &tail_idx);
		for (int j = 0; j < npages && lane < 0; j++)
			if (pages[j] == top)
				lane = i;
		if (lane < 0)
		{
			pfree(pages);
			UnlockReleaseBuffer(lanebuf);
		}
	}
	if (lane < 0)
	{
		ereport(DEBUG2,
				(errmsg("gpuir index \"%s\": nothing moved: page %u, the last in use, an insert buffer page on no lane's chain (one a crashed append or merge left, or the buffer of an index written before lanes existed)",
						RelationGetRelationName(index), top)));
		UnlockReleaseBuffer(metabuf);
		return false;
	}

	/* where the copy would go: the lowest reusable pages, one by one */
	sim = palloc(sizeof(GpuirFreeList));
	scratch = palloc(sizeof(GpuirFreeMapData));
	to = palloc(sizeof(BlockNumber) * npages);
	old = palloc(sizeof(BlockNumber) * npages);
	*sim = *fl;
	for (int j = 0; j < npages; j++)
	{
		to[j] = GpuirFreeListTake(sim, 1);
		if (!BlockNumberIsValid(to[j]))
		{
			ereport(DEBUG2,
					(errmsg("gpuir index \"%s\": nothing moved: the %d pages of insert lane %d, which ends the index, have no reusable free pages to go to",
							RelationGetRelationName(index), npages, lane)));
			goto out;
		}
	}
	memcpy(old, pages, sizeof(BlockNumber) * npages);
	if (!GpuirFreeListAddReusable(sim, old, npages))
	{
		ereport(DEBUG2,
				(errmsg("gpuir index \"%s\": nothing moved: the free space map has no room for the pages of insert lane %d",
						RelationGetRelationName(index), lane)));
		goto out;
	}
	GpuirFreeListStore(sim, scratch);
	newtail = free_tail_start(scratch->free, (int) scratch->nfree, NULL, nblocks);
	if (newtail >= tail)
	{
		ereport(DEBUG2,
				(errmsg("gpuir index \"%s\": nothing moved: moving insert lane %d (%d pages) would free no page at the end",
						RelationGetRelationName(index), lane, npages)));
		goto out;
	}

	/* the copy, then the swap: lane header and free space map, one record */
	GpuirChainCopy(index, pages, to, npages);
	{
		Buffer		fmbuf = ReadBuffer(index, GPUIR_FREEMAP_BLKNO);
		GenericXLogState *state;
		Page		fmpage;
		GpuirLaneData *ld;

		LockBuffer(fmbuf, BUFFER_LOCK_EXCLUSIVE);
		GpuirCheckPage(index, BufferGetPage(fmbuf), GPUIR_FREEMAP_BLKNO, GPUIR_PAGE_FREEMAP);
		state = GenericXLogStart(index);
		ld = GpuirPageGetLane(GenericXLogRegisterBuffer(state, lanebuf, 0));
		fmpage = GenericXLogRegisterBuffer(state, fmbuf, 0);
		ld->chain.head = to[0];
		ld->chain.tail = to[tail_idx];
		/* the map is still the one fl was read from: the merge lock keeps other writers out */
		memcpy(GpuirPageGetFreeMap(fmpage), scratch, sizeof(GpuirFreeMapData));
		GpuirSetFreeMapLower(fmpage);
		GenericXLogFinish(state);
		UnlockReleaseBuffer(fmbuf);
	}
	ereport(DEBUG1,
			(errmsg("gpuir index \"%s\": moved the %d pages of an insert lane toward the start: the last %u of %u pages are free",
					RelationGetRelationName(index), npages, nblocks - newtail, nblocks)));
	GpuirFreeListReportDropped(index, sim);
	done = true;
out:
	UnlockReleaseBuffer(lanebuf);
	UnlockReleaseBuffer(metabuf);
	pfree(pages);
	pfree(to);
	pfree(old);
	pfree(sim);
	pfree(scratch);
	return done;
}

/*
 * swap_segment: put moved in place of segment s of meta (the caller's copy
 * of the directory) and free the pages it left, lay (as of now: every
 * reader of the old directory has an xmin <= the next transaction ID), in
 * one WAL record with the free space map fl (the one read under the merge
 * lock, which the caller holds, less the pages moved's copy took), as a
 * merge's swap does.  fl is stored: not to be used again.
 */
static void
swap_segment(Relation index, const GpuirMetaPageData *meta, int s,
			 const GpuirSegmentData *moved, const GpuirSegmentLayout *lay, GpuirFreeList *fl)
{
	const GpuirSegmentData *seg = &meta->segments[s];
	Buffer		metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	Buffer		fmbuf = ReadBuffer(index, GPUIR_FREEMAP_BLKNO);
	GenericXLogState *state;
	Page		metapage;
	Page		fmpage;
	GpuirMetaPage m;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	LockBuffer(fmbuf, BUFFER_LOCK_EXCLUSIVE);
	m = GpuirPageGetMeta(BufferGetPage(metabuf));
	/* the merge lock keeps merges and VACUUM out: nothing else changes segments */
	if (m->generation != meta->generation || m->nsegments != meta->nsegments ||
		memcmp(&m->segments[s], seg, sizeof(GpuirSegmentData)) != 0)
		elog(ERROR, "gpuir index \"%s\" changed during compaction",
			 RelationGetRelationName(index));
	GpuirCheckPage(index, BufferGetPage(fmbuf), GPUIR_FREEMAP_BLKNO, GPUIR_PAGE_FREEMAP);
	state = GenericXLogStart(index);
	metapage = GenericXLogRegisterBuffer(state, metabuf, 0);
	fmpage = GenericXLogRegisterBuffer(state, fmbuf, 0);
	m = GpuirPageGetMeta(metapage);
	m->segments[s] = *moved;
	if (moved->map != 0)
		m->version = GPUIR_VERSION;
	/* every reader of the old directory has an xmin <= this */
	GpuirFreeListAddSegment(fl, lay, ReadNextFullTransactionId());
	GpuirFreeListStore(fl, GpuirPageGetFreeMap(fmpage));
	GpuirSetFreeMapLower(fmpage);
	m->generation++;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(fmbuf);
	UnlockReleaseBuffer(metabuf);
	GpuirFreeListReportDropped(index, fl);
}

/*
 * move_segment: copy the streams of segment s of meta (the caller's copy of
 * the directory; lay: where its pages are) to pages of fl below limit
 * (place_segment: the lowest reusable extent that holds each stream, else
 * pieces of them, else the end) under a new generation, hence a new tag on
 * every page, and swap the directory entry in one WAL record that frees
 * the old pages as of now, as a merge's swap does.  The caller holds the
 * merge lock.
 */
static void
move_segment(Relation index, const GpuirMetaPageData *meta, int s, const GpuirSegmentLayout *lay,
			 GpuirFreeList *fl, BlockNumber limit)
{
	const GpuirSegmentData *seg = &meta->segments[s];
	GpuirSegmentData moved;
	GpuirSegmentLayout to;

	/* the copy: the same bytes under a new generation, hence a new tag */
	moved = *seg;
	moved.generation = meta->generation + 1;
	moved.map = 0;
	(void) place_segment(fl, index, seg, limit, true, &to);
	for (int k = 0; k < GPUIR_NSTREAMS; k++)
	{
		char	   *data;

		if (seg->streams[k].nbytes == 0)
			continue;
		data = GpuirStreamReadAll(index, seg, (GpuirStreamKind) k);
		GpuirWriteStreamPages(index, data, seg->streams[k].nbytes,
							  GpuirSegmentTag(moved.generation), &to.streams[k], 0);
		moved.streams[k].start = to.streams[k].ext[0].start;
		pfree(data);
	}
	if (to.map != 0)
		GpuirWriteSegmentMap(index, &moved, &to, to.map, NULL);

	swap_segment(index, meta, s, &moved, lay, fl);
}

/* extents_append: add [start, start + npages) after e's last extent (joined to it when they touch); false when e is full */
static bool
extents_append(GpuirStreamExtents *e, BlockNumber start, uint32 npages)
{
	if (e->n > 0 && (uint64) e->ext[e->n - 1].start + e->ext[e->n - 1].npages == start)
	{
		e->ext[e->n - 1].npages += npages;
		return true;
	}
	if (e->n == GPUIR_STREAM_MAX_EXTENTS)
		return false;
	e->ext[e->n].start = start;
	e->ext[e->n].npages = npages;
	e->n++;
	return true;
}

/*
 * part_cut: the lowest block c <= tail such that every page in [c, tail) is
 * free (fl, reusable or not) or one of the pages of the segment laid out
 * as lay
 */
static BlockNumber
part_cut(const GpuirFreeList *fl, const GpuirSegmentLayout *lay, BlockNumber tail)
{
	BlockNumber c = tail;
	bool		lower;

	do
	{
		lower = false;
		for (int i = 0; i < fl->n; i++)
			if (fl->ext[i].npages > 0 && fl->ext[i].start < c &&
				(uint64) fl->ext[i].start + fl->ext[i].npages >= c)
			{
				c = fl->ext[i].start;
				lower = true;
			}
		if (lay->map != 0 && lay->map + 1 == c)
		{
			c = lay->map;
			lower = true;
		}
		for (int k = 0; k < GPUIR_NSTREAMS; k++)
			for (int i = 0; i < lay->streams[k].n; i++)
			{
				const GpuirExtent *e = &lay->streams[k].ext[i];

				if (e->start < c && (uint64) e->start + e->npages >= c)
				{
					c = e->start;
					lower = true;
				}
			}
	} while (lower);
	return c;
}

/* retired_add: add [start, start + npages) to r (kept sorted and coalesced); false when r is full */
static bool
retired_add(GpuirSegmentMapRetired *r, BlockNumber start, uint32 npages)
{
	uint32		i = 0;
	uint64		end = (uint64) start + npages;

	while (i < r->n && (uint64) r->ext[i].start + r->ext[i].npages < start)
		i++;
	/* r->ext[i..] end at or after start: join those that touch */
	if (i < r->n && r->ext[i].start <= end)
	{
		uint32		j = i;
		uint64		s = Min((uint64) r->ext[i].start, (uint64) start);

		while (j < r->n && r->ext[j].start <= end)
		{
			end = Max(end, (uint64) r->ext[j].start + r->ext[j].npages);
			j++;
		}
		r->ext[i].start = (BlockNumber) s;
		r->ext[i].npages = (uint32) (end - s);
		memmove(&r->ext[i + 1], &r->ext[j], sizeof(GpuirExtent) * (r->n - j));
		r->n -= j - i - 1;
		return true;
	}
	if (r->n == GPUIR_MAP_MAX_RETIRED)
		return false;
	memmove(&r->ext[i + 1], &r->ext[i], sizeof(GpuirExtent) * (r->n - i));
	r->ext[i].start = start;
	r->ext[i].npages = npages;
	r->n++;
	return true;
}

/*
 * move_part: when segment s of meta (lay: where its pages are; the caller's
 * copy of the directory) has pages below cut, the start of the run of its
 * pages and free ones that ends the index at tail (part_cut), move only
 * its pages at or above cut: each to reusable free pages below cut (lowest
 * first, in pieces of at least 4 pages: GpuirFreeListAllocateExtents),
 * byte for byte under the same generation and tag, and write a new map
 * page that lists where every stream now is and retires the pages left
 * (the moved ones and the old map page: GpuirSegmentMapRetired).  The
 * segment's data do not change, so its generation does not either: the GPU's
 * list cache and the sessions' caches keep their copies (those keyed by a
 * stream's first page too make new ones when that page moved).
 * The new map page is on a page this segment never used, so that a cached
 * map (keyed by generation and map page: GpuirSegmentLayoutCached, the
 * GPU worker's) is never taken for it, and no page goes where the segment
 * was before, so that a reader of an earlier map (on a hot standby, or the
 * GPU worker for a request given up) finds there the page it expects or
 * another segment's tag, as after a merge.  The directory entry is swapped
 * as a whole move's (swap_segment).  Returns false, moving nothing, when
 * the pages do not fit below cut (free pages that the segment retired do
 * not count), a stream would need more than GPUIR_STREAM_MAX_EXTENTS
 * extents or the map page more than GPUIR_MAP_MAX_RETIRED retired ones:
 * the caller then tries the whole move.
 */
static bool
move_part(Relation index, const GpuirMetaPageData *meta, int s, const GpuirSegmentLayout *lay,
		  GpuirFreeList *fl, BlockNumber cut, BlockNumber tail, BlockNumber nblocks)
{
	const GpuirSegmentData *seg = &meta->segments[s];
	uint32		tag = GpuirSegmentTag(seg->generation);
	GpuirSegmentMapRetired *retired = palloc(sizeof(GpuirSegmentMapRetired));
	GpuirFreeList *sim = palloc(sizeof(GpuirFreeList));
	GpuirFreeList *held = palloc(sizeof(GpuirFreeList));
	GpuirSegmentLayout *to = palloc0(sizeof(GpuirSegmentLayout));
	GpuirSegmentLayout *gone = palloc0(sizeof(GpuirSegmentLayout));
	GpuirSegmentData moved;
	GpuirStreamExtents m;
	uint64		moved_pages = 0;
	const char *why = NULL;
	bool		done = false;

	/* where the pages go: below cut, none on a page the segment retired */
	GpuirSegmentRetiredOf(index, seg, lay, retired);
	*sim = *fl;
	held->n = 0;
	for (uint32 i = 0; i < retired->n && why == NULL; i++)
		if (!GpuirFreeListHoldOut(sim, retired->ext[i].start, retired->ext[i].npages, held))
			why = "the free space map has no room to set its retired pages apart";
	gone->map = lay->map;
	for (int k = 0; k < GPUIR_NSTREAMS && why == NULL; k++)
	{
		for (int i = 0; i < lay->streams[k].n && why == NULL; i++)
		{
			const GpuirExtent *e = &lay->streams[k].ext[i];
			uint64		end = (uint64) e->start + e->npages;
			GpuirStreamExtents pieces;

			if (e->start < cut &&
				!extents_append(&to->streams[k], e->start, (uint32) (Min(end, (uint64) cut) - e->start)))
				why = "a stream would be on too many extents";
			if (why != NULL || end <= cut)
				continue;
			/* its pages from cut on: gone extents are apart, as many as lay's */
			{
				BlockNumber a = Max(e->start, cut);
				uint32		n = (uint32) (end - a);

				(void) extents_append(&gone->streams[k], a, n);
				if (!GpuirFreeListAllocateExtents(sim, NULL, n, true, cut, false, &pieces))
					why = "the reusable free pages below them do not hold them";
				for (int j = 0; j < pieces.n && why == NULL; j++)
					if (!extents_append(&to->streams[k], pieces.ext[j].start, pieces.ext[j].npages))
						why = "a stream would be on too many extents";
				moved_pages += n;
			}
		}
	}
	if (why == NULL && !GpuirFreeListAllocateExtents(sim, NULL, 1, true, cut, false, &m))
		why = "no reusable free page below them holds a new map page";
	for (int k = 0; k < GPUIR_NSTREAMS && why == NULL; k++)
		for (int i = 0; i < gone->streams[k].n && why == NULL; i++)
			if (!retired_add(retired, gone->streams[k].ext[i].start, gone->streams[k].ext[i].npages))
				why = "its map page has no room for more retired extents";
	if (why == NULL && lay->map != 0 && !retired_add(retired, lay->map, 1))
		why = "its map page has no room for more retired extents";
	/* the retired free pages back as they were, and room for the pages the move frees */
	if (why == NULL &&
		(sim->n + held->n + GPUIR_NSTREAMS * GPUIR_STREAM_MAX_EXTENTS + 1 > (int) lengthof(sim->ext) ||
		 !GpuirFreeListReturn(sim, held)))
		why = "the free space map has no room to set its retired pages apart";
	if (why != NULL)
	{
		ereport(DEBUG2,
				(errmsg("gpuir index \"%s\": not moving the pages of a segment of %llu pages in the last %u pages alone: %s",
						RelationGetRelationName(index), (unsigned long long) GpuirSegmentPages(seg),
						nblocks - cut, why)));
		goto out;
	}
	/* the copy: the pages from cut on, the same bytes and tag on their new pages */
	moved = *seg;
	for (int k = 0; k < GPUIR_NSTREAMS; k++)
	{
		GpuirStreamReader r;
		uint64		page = 0;	/* the stream's page of lay's extent i */

		if (gone->streams[k].n == 0)
			continue;
		GpuirStreamReaderInit(&r, index, seg, (GpuirStreamKind) k);
		for (int i = 0; i < lay->streams[k].n; i++)
		{
			const GpuirExtent *e = &lay->streams[k].ext[i];
			uint64		end = (uint64) e->start + e->npages;

			if (end > cut)
			{
				uint64		first = page + (Max(e->start, cut) - e->start);
				uint64		off = first * GPUIR_PAGE_DATA;
				uint64		len = Min((end - Max(e->start, cut)) * GPUIR_PAGE_DATA,
									  (uint64) seg->streams[k].nbytes - off);
				char	   *data = palloc_extended(len, MCXT_ALLOC_HUGE);

				GpuirStreamRead(&r, (uint32) off, data, (uint32) len);
				GpuirWriteStreamPages(index, data, (uint32) len, tag, &to->streams[k], first);
				pfree(data);
			}
			page += e->npages;
		}
		GpuirStreamReaderEnd(&r);
	}
	for (int k = 0; k < GPUIR_NSTREAMS; k++)
		if (to->streams[k].n > 0)
			moved.streams[k].start = to->streams[k].ext[0].start;
	to->map = m.ext[0].start;
	GpuirWriteSegmentMap(index, &moved, to, to->map, retired);

	swap_segment(index, meta, s, &moved, gone, sim);
	ereport(DEBUG1,
			(errmsg("gpuir index \"%s\": moved the last %llu pages of a segment of %llu pages toward the start: the last %u of %u pages are free",
					RelationGetRelationName(index), (unsigned long long) moved_pages,
					(unsigned long long) GpuirSegmentPages(seg), nblocks - cut, nblocks)));
	done = true;
out:
	pfree(retired);
	pfree(sim);
	pfree(held);
	pfree(to);
	pfree(gone);
	return done;
}

/*
 * room_after_moving: whether, once segment x of meta (lays: the segments'
 * layouts) has moved to reusable free pages of fl below tail (where
 * move_segment would put it) and its old pages are reusable, the reusable
 * extents below tail hold segment top (place_segment, as relocate_top
 * takes them); sim is scratch space
 */
static bool
room_after_moving(const GpuirMetaPageData *meta, const GpuirSegmentLayout *lays,
				  const GpuirFreeList *fl, int x, int top, BlockNumber tail, GpuirFreeList *sim)
{
	GpuirSegmentLayout to;

	*sim = *fl;
	if (!place_segment(sim, NULL, &meta->segments[x], tail, false, &to) ||
		!GpuirFreeListPlanFree(sim, &lays[x]))
		return false;
	return place_segment(sim, NULL, &meta->segments[top], tail, false, &to);
}

/*
 * make_room: when the reusable free extents below tail cannot hold segment
 * top, which holds the highest page in use, move the smallest other segment
 * (at most as large as top) whose move, into reusable free pages below
 * tail, frees pages next to holes so that top's streams would all fit
 * (room_after_moving); returns whether it moved one.  The free space
 * fragments under constant load: a merge places each stream in the
 * smallest hole that holds it, and small segments end up between the holes
 * that a full segment's largest stream would need together (a 30-minute
 * soak ended with 2,117 free pages, 13% of the index, in holes smaller than
 * every stream of the last segment; segment maps now let streams fill
 * holes in pieces of at least 4 pages).  The moved segment's old pages become
 * reusable once no query can read them: VACUUM's compaction waits for that
 * and then moves top; without waiting, a later compaction does.
 */
static bool
make_room(Relation index, const GpuirMetaPageData *meta, const GpuirSegmentLayout *lays,
		  GpuirFreeList *fl, int top, BlockNumber tail)
{
	GpuirFreeList *sim = palloc(sizeof(GpuirFreeList));
	const uint64 toppages = GpuirSegmentPages(&meta->segments[top]);
	int			best = -1;
	uint64		bestpages = 0;

	for (uint32 x = 0; x < meta->nsegments; x++)
	{
		uint64		xpages = GpuirSegmentPages(&meta->segments[x]);

		if ((int) x == top || xpages == 0 || xpages > toppages ||
			(best >= 0 && xpages >= bestpages))
			continue;
		if (room_after_moving(meta, lays, fl, (int) x, top, tail, sim))
		{
			best = (int) x;
			bestpages = xpages;
		}
	}
	pfree(sim);
	if (best < 0)
		return false;
	move_segment(index, meta, best, &lays[best], fl, tail);
	ereport(DEBUG1,
			(errmsg("gpuir index \"%s\": moved a segment of %llu pages to make room for the last one (%llu pages)",
					RelationGetRelationName(index), (unsigned long long) bestpages,
					(unsigned long long) toppages)));
	return true;
}

/*
 * relocate_top: move the segment holding the highest page in use to
 * reusable free pages lower down, if that grows the free run at the end
 * enough (file header), or the insert lane whose chain holds it
 * (relocate_top_lane), or, when the reusable extents below the free run
 * at the end cannot hold that segment and *may_make_room, another segment
 * whose move makes
 * room for it (make_room; *may_make_room is then cleared); returns whether
 * it moved anything.  The caller holds the merge lock.
 */
static bool
relocate_top(Relation index, bool *may_make_room)
{
	GpuirMetaPageData *meta = palloc(sizeof(GpuirMetaPageData));
	GpuirFreeMapData *fm = palloc(sizeof(GpuirFreeMapData));
	GpuirFreeMapData *scratch = palloc(sizeof(GpuirFreeMapData));
	GpuirFreeList *fl = palloc(sizeof(GpuirFreeList));
	GpuirFreeList *sim = palloc(sizeof(GpuirFreeList));
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BlockNumber tail;
	BlockNumber newtail;
	GpuirSegmentData seg;
	GpuirSegmentLayout *lays;
	GpuirSegmentLayout to;
	uint64		segpages = 0;
	BlockNumber cut;
	int			s;
	bool		done = false;

	GpuirReadMeta(index, meta);
	GpuirReadFreeMap(index, fm);
	GpuirFreeListInit(fl, index, fm);
	lays = palloc(sizeof(GpuirSegmentLayout) * Max(meta->nsegments, 1));
	for (uint32 i = 0; i < meta->nsegments; i++)
		GpuirSegmentLayoutOf(index, &meta->segments[i], &lays[i]);
	tail = free_tail_start(fl->ext, fl->n, NULL, nblocks);
	s = (tail > GPUIR_FIRST_DATA_BLKNO) ? segment_at(meta, lays, tail - 1) : -1;
	if (s < 0)
	{
		/* an insert buffer page, most likely */
		if (tail > GPUIR_FIRST_DATA_BLKNO)
			done = relocate_top_lane(index, fl, tail, nblocks);
		goto out;
	}
	seg = meta->segments[s];

	/*
	 * a segment some of whose pages are under other pages in use: only the
	 * pages above those move (move_part), when that frees enough
	 */
	cut = part_cut(fl, &lays[s], tail);
	if (segment_below(&lays[s], cut) && tail - cut >= GPUIR_COMPACT_MIN_PAGES)
	{
		if (move_part(index, meta, s, &lays[s], fl, cut, tail, nblocks))
		{
			done = true;
			goto out;
		}
		/* fl is as it was: the whole move may still go */
	}

	/* where the copy would go: every page in reusable pages below the tail, none appended */
	*sim = *fl;
	segpages = GpuirSegmentPages(&seg);
	if (!place_segment(sim, NULL, &seg, tail, false, &to))
	{
		uint64		all;
		uint64		reusable;

		if (*may_make_room && make_room(index, meta, lays, fl, s, tail))
		{
			*may_make_room = false;
			done = true;
			goto out;
		}
		GpuirFreeListPages(fl, &all, &reusable);
		ereport(DEBUG2,
				(errmsg("gpuir index \"%s\": no segment moved: the reusable free pages below the end do not hold the last segment (%llu pages; %llu of %llu free pages reusable)%s",
						RelationGetRelationName(index), (unsigned long long) segpages,
						(unsigned long long) reusable, (unsigned long long) all,
						*may_make_room ? ", and moving no other segment would make room" : "")));
		goto out;
	}
	GpuirFreeListAddSegment(sim, &lays[s], InvalidFullTransactionId);
	GpuirFreeListStore(sim, scratch);
	newtail = free_tail_start(scratch->free, (int) scratch->nfree, NULL, nblocks);
	if (newtail >= tail ||
		tail - newtail < Max((uint64) GPUIR_COMPACT_MIN_PAGES, segpages / 4))
	{
		ereport(DEBUG2,
				(errmsg("gpuir index \"%s\": no segment moved: moving the last segment (%llu pages) would free %u pages at the end",
						RelationGetRelationName(index), (unsigned long long) segpages,
						newtail < tail ? tail - newtail : 0)));
		goto out;
	}

	move_segment(index, meta, s, &lays[s], fl, tail);
	ereport(DEBUG1,
			(errmsg("gpuir index \"%s\": moved a segment of %llu pages toward the start: the last %u of %u pages are free",
					RelationGetRelationName(index), (unsigned long long) segpages,
					nblocks - newtail, nblocks)));
	done = true;
out:
	pfree(lays);
	pfree(meta);
	pfree(fm);
	pfree(scratch);
	pfree(fl);
	pfree(sim);
	return done;
}

/*
 * cut_free_tail: the truncation itself (file header): the free space map
 * *fm without the reusable free pages (fl's, from GpuirFreeListInit of
 * *fm) that end the index, then RelationTruncate.  With exclusive the
 * caller holds an AccessExclusiveLock on the index, which was WAL-logged
 * when taken; else one is WAL-logged for hot standbys here, and the
 * transaction has an ID already (LogAccessExclusiveLockPrepare).
 */
static void
cut_free_tail(Relation index, const GpuirFreeMapData *fm, const GpuirFreeList *fl,
			  bool exclusive)
{
	Buffer		metabuf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	BlockNumber nblocks;
	BlockNumber tail;

	/*
	 * The metapage exclusively (no query copies it meanwhile, and
	 * gpuir_verify, which reads the free space map and the insert buffer
	 * under its share lock, sees the map and the file from one moment),
	 * then the relation extension lock, which every extension of the index
	 * takes (lane_lock takes them in this order too): no page is added
	 * while the end is cut
	 */
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	LockRelationForExtension(index, ExclusiveLock);
	nblocks = RelationGetNumberOfBlocks(index);
	tail = free_tail_start(fl->ext, fl->n, fl->reusable, nblocks);
	if (tail >= GPUIR_FIRST_DATA_BLKNO && nblocks - tail >= GPUIR_TRUNCATE_MIN_PAGES)
	{
		Buffer		fmbuf = ReadBuffer(index, GPUIR_FREEMAP_BLKNO);
		GenericXLogState *state;
		Page		fmpage;
		GpuirFreeMapData *f;
		XLogRecPtr	lsn;
		uint32		n = 0;

		/*
		 * a hot standby's readers are not covered by this primary's horizon:
		 * they are cancelled as for a heap truncation, by the
		 * AccessExclusiveLock that the standby takes on replay (this
		 * primary's readers need no lock: none can read these pages)
		 */
		if (!exclusive && XLogStandbyInfoActive() && RelationNeedsWAL(index))
			LogAccessExclusiveLock(MyDatabaseId, RelationGetRelid(index));
		LockBuffer(fmbuf, BUFFER_LOCK_EXCLUSIVE);
		GpuirCheckPage(index, BufferGetPage(fmbuf), GPUIR_FREEMAP_BLKNO, GPUIR_PAGE_FREEMAP);
		/* the map is still *fm: the merge lock keeps every other writer out */
		state = GenericXLogStart(index);
		fmpage = GenericXLogRegisterBuffer(state, fmbuf, 0);
		f = GpuirPageGetFreeMap(fmpage);
		for (uint32 i = 0; i < fm->nfree; i++)
			if (fm->free[i].start < tail)
				f->free[n++] = fm->free[i];
		f->nfree = n;
		GpuirSetFreeMapLower(fmpage);
		lsn = GenericXLogFinish(state);
		UnlockReleaseBuffer(fmbuf);
		/* the map must not list pages past the end if the truncation survives a crash */
		XLogFlush(lsn);
		/* the GPU service's worker reads no page meanwhile (GpuirServiceTruncationLock) */
		GpuirServiceTruncationLock(true);
		RelationTruncate(index, tail);
		GpuirServiceTruncationUnlock();
		ereport(DEBUG1,
				(errmsg("gpuir index \"%s\": truncated from %u to %u pages",
						RelationGetRelationName(index), nblocks, tail)));
	}
	UnlockRelationForExtension(index, ExclusiveLock);
	UnlockReleaseBuffer(metabuf);
}

/*
 * lock_exclusive_briefly: take an AccessExclusiveLock on index
 * conditionally, every GPUIR_TRUNCATE_LOCK_WAIT_MS, at most
 * GPUIR_TRUNCATE_LOCK_TRIES times (as lazy_truncate_heap); false when the
 * index stayed in use
 */
static bool
lock_exclusive_briefly(Relation index)
{
	for (int tries = 1; !ConditionalLockRelation(index, AccessExclusiveLock); tries++)
	{
		if (tries >= GPUIR_TRUNCATE_LOCK_TRIES)
		{
			ereport(DEBUG1,
					(errmsg("gpuir index \"%s\": free pages at the end not truncated, the index is in use",
							RelationGetRelationName(index))));
			return false;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 GPUIR_TRUNCATE_LOCK_WAIT_MS, WAIT_EVENT_VACUUM_TRUNCATE);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return true;
}

/*
 * truncate_free_tail: truncate the reusable free pages that end the index
 * (file header).  The caller holds the merge lock.
 */
static void
truncate_free_tail(Relation index)
{
	GpuirFreeMapData *fm;
	GpuirFreeList *fl;
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BlockNumber tail;

	/* a scan of this backend still open on the index (a cursor) may hold pins */
	if (index->rd_refcnt > 1)
		return;
	fm = palloc(sizeof(GpuirFreeMapData));
	fl = palloc(sizeof(GpuirFreeList));
	GpuirReadFreeMap(index, fm);
	GpuirFreeListInit(fl, index, fm);
	tail = free_tail_start(fl->ext, fl->n, fl->reusable, nblocks);
	if (tail < nblocks)
		ereport(DEBUG2,
				(errmsg("gpuir index \"%s\": %u reusable free pages end it, %u free ones",
						RelationGetRelationName(index), nblocks - tail,
						nblocks - free_tail_start(fl->ext, fl->n, NULL, nblocks))));
	if (tail >= GPUIR_FIRST_DATA_BLKNO && nblocks - tail >= GPUIR_TRUNCATE_MIN_PAGES)
	{
		if (nblocks < RELSEG_SIZE)
		{
			if (XLogStandbyInfoActive() && RelationNeedsWAL(index))
				LogAccessExclusiveLockPrepare();	/* a transaction ID, before any lock */
			cut_free_tail(index, fm, fl, false);
		}

		/*
		 * an index of a whole segment file (RELSEG_SIZE blocks) or more:
		 * another backend's file handles may count blocks from a later file
		 * than the one the truncation ends in (md.c takes the files before
		 * its last open one to be full) until it processes the invalidation,
		 * when it next takes a relation lock, so the truncation waits for a
		 * moment without any, as a heap's does
		 */
		else if (lock_exclusive_briefly(index))
		{
			cut_free_tail(index, fm, fl, true);
			/* as lazy_truncate_heap: not needed until the end of the transaction */
			UnlockRelation(index, AccessExclusiveLock);
		}
	}
	pfree(fl);
	pfree(fm);
}

/*
 * GpuirCompact: relocate segments toward the start of index and truncate
 * the free pages that end it (file header).  It waits for the merge lock,
 * which merges hold while they write and VACUUM while it marks deleted
 * documents (under 16 clients' inserts some merge holds it most of the
 * time, so a compaction that skipped when it was taken would hardly ever
 * run).  With wait (VACUUM), when free pages that are not reusable yet are
 * left after the relocations (those of VACUUM's merge, or of the merge it
 * waited for: the holes the last segment can move to; those of the
 * relocations: the pages that end the index), it lets the merge lock go,
 * waits for them (GpuirFreeWaitReusable, at most GPUIR_COMPACT_WAIT_MS) and
 * tries again, twice at most; gpuir_merge() does not wait (its statement's
 * snapshot holds the horizon back).  What it did is logged at DEBUG1, why
 * it did nothing at DEBUG2.
 */
void
GpuirCompact(Relation index, bool wait)
{
	GpuirLockMerge(index);
	compact_locked(index, wait);
	GpuirUnlockMerge(index);
}

/*
 * GpuirCompactLocked: GpuirCompact without waiting, for a caller that holds
 * the merge lock: an insert's merge that rewrote segments (gpuirmerge.c).
 * Between autovacuums, inserts' merges rewrite the segments a VACUUM left
 * with many deleted documents, a few at a time, and their new copies often
 * go to the end of the index; compacting after each such merge moves them
 * down into the pages earlier merges freed and truncates the end, instead
 * of leaving the file at its peak until the next VACUUM.  Pages this merge
 * has just freed are not reusable yet: a later compaction takes them.
 */
void
GpuirCompactLocked(Relation index)
{
	compact_locked(index, false);
}

/* the body of GpuirCompact, under the merge lock (dropped and retaken while it waits) */
static void
compact_locked(Relation index, bool wait)
{
	int			waits = wait ? GPUIR_COMPACT_WAITS : 0;
	bool		may_make_room = true;	/* once a compaction (make_room) */

	for (;;)
	{
		uint64		free_pages;
		uint64		reusable_pages;	/* of free_pages */

		for (int i = 0; i < GPUIR_MAX_SEGMENTS; i++)
		{
			CHECK_FOR_INTERRUPTS();
			if (!relocate_top(index, &may_make_room))
				break;
		}
		if (waits-- == 0)
			break;
		GpuirFreePages(index, &free_pages, &reusable_pages);
		if (reusable_pages == free_pages)
			break;
		GpuirUnlockMerge(index);
		if (!GpuirFreeWaitReusable(index, GPUIR_COMPACT_WAIT_MS))
			ereport(DEBUG2,
					(errmsg("gpuir index \"%s\": free pages still not reusable after %d ms (%llu were not when the wait began)",
							RelationGetRelationName(index), GPUIR_COMPACT_WAIT_MS,
							(unsigned long long) (free_pages - reusable_pages))));
		GpuirLockMerge(index);
	}
	truncate_free_tail(index);
}
