/*-------------------------------------------------------------------------
 *
 * gpuircache.c
 *	  The GPU service's list cache: the posting data of recently used
 *	  segments, resident in device memory under the budget of
 *	  gpuir.device_memory (Wang et al., ICPADS 2017: a GPU list cache under
 *	  a memory budget, LRU replacement; Ding et al. 2009, section 5: the
 *	  index stays in GPU memory and queries are shipped to it).
 *
 * On a miss, a segment's PAYLOAD, BLOCKDIR and DOCLENS streams are read
 * from the index pages through the buffer manager (ReadBufferWithoutRelcache:
 * the worker has no database connection; the backends hold AccessShareLock
 * on the index while they wait, so the relfilenode stays valid), every
 * block header is checked (GpuirListCheckHeader, the CPU reader's rules),
 * the block directory is turned into the structure of arrays the kernels
 * take, and the segment is uploaded.  Entries are keyed by GpuirCacheKey
 * (gpuirworker_int.h: why a key names the same bytes for as long as it is
 * used).  Least recently used entries are freed until a new segment fits
 * the budget; stale entries (dropped or merged segments) age out the same
 * way.  A segment larger than the whole budget is searched from its lists
 * (Wang et al. 2017, the GPU holding part of the index): its per-document
 * arrays (doclen, priors) stay resident as a "skeleton" entry, and the
 * lists of each run come from the device, where the entry keeps the lists
 * its policy chooses (GreedyDual-Size-Frequency, gpuirlistcachepolicy.h,
 * within the budget that whole segments leave), or are read from the
 * pages and travel with the run (GpuirCacheTransit; cuda/gpuir_transit.cu
 * copies them into one segment that the ordinary kernels search).  Only a
 * segment whose document arrays alone exceed the budget is refused; its
 * requests fail, so that their backends use the CPU.
 *
 * Also here: the syntax of gpuir.device_memory (GpuirParseDeviceMemory),
 * used by its GUC check hook too, and the budget it gives on a card.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "utils/memutils.h"

#include "utils/hsearch.h"

#include "gpuirlistcachepolicy.h"
#include "gpuirprune.h"
#include "gpuirworker_int.h"

/* gpuir.pruned_lists */
bool		gpuir_pruned_lists = false;

/*
 * Pruned lists (gpuirprune.h): a list of at least GPUIR_PRUNE_MIN_POSTINGS
 * postings that a query of mode or/bmw and at most GPUIR_PRUNE_MAX_K
 * candidates (gpuirquery.c's 2k + 16 for k <= 100) sends while it is not
 * kept whole may be kept as its GPUIR_PRUNE_SHARE-th of highest impact.
 */
#define GPUIR_PRUNE_MIN_POSTINGS	8192
#ifndef GPUIR_PRUNE_SHARE		/* -DGPUIR_PRUNE_SHARE=N: another share, to measure */
#define GPUIR_PRUNE_SHARE			8
#endif
#define GPUIR_PRUNE_MAX_K			216

/* the postings of the pruned list of a list of n postings */
static inline uint32
prune_want(uint32 n)
{
	return Max(n / GPUIR_PRUNE_SHARE, 1);
}

/*
 * The lists kept on the device for one partial entry (a segment larger
 * than the budget), with the use counts of every list its runs used, in
 * items[0 .. nitems) (the policy's items), found by first block.
 */
typedef struct GpuirPartial
{
	MemoryContext cxt;
	HTAB	   *index;			/* (first block, pruned) -> GpuirPartialSlot */
	GpuirLcPolicy policy;		/* resident lists and their bytes */
	GpuirLcItem *items;			/* [cap] */
	int32	   *heap;			/* [cap] */
	gpuir_cuda_list *kept;		/* [cap]: the device copy of a resident item */
	GpuirPruneRest *rest;		/* [cap]: of a pruned item, what it left out */
	int32		nitems;
	int32		cap;
	uint32	   *doclen;			/* [ndocs]: the segment's document lengths
								 * (ranking the postings of pruned lists) */
	uint32		ndocs;
} GpuirPartial;

/* an item's key: a list's first block, and whether it is its pruned list */
typedef struct GpuirPartialKey
{
	uint32		first_block;
	uint32		pruned;
} GpuirPartialKey;

typedef struct GpuirPartialSlot
{
	GpuirPartialKey key;
	int32		item;
} GpuirPartialSlot;

/* the transit of this worker (cuda/gpuir_transit.cu), made when first used */
static gpuir_cuda_transit *transit = NULL;
static gpuir_cuda_segment transit_seg[GPUIR_CUDA_TRANSIT_SLOTS];	/* each slot's assembly */

static MemoryContext cache_cxt;	/* cache entries */
static dlist_head cache_lru = DLIST_STATIC_INIT(cache_lru);
static uint64 cache_bytes = 0;	/* device bytes held by cache entries */
static uint64 cache_budget = 0;

/* ---------- the budget ---------- */

/*
 * GpuirParseDeviceMemory: parse a value of gpuir.device_memory into *dm:
 * an amount ("4GB", "512 MB", "1.5GB", "100kB", "1024B"; units B, kB, MB,
 * GB, TB in any case, K/M/G/T alone too, powers of 1024) or a share of the
 * card's memory ("50%").  Returns false, with the reason in why, for
 * anything else (a bare number is rejected as ambiguous), for shares not
 * above 0% or above GPUIR_MAX_DEVICE_MEMORY_SHARE, and for amounts below
 * GPUIR_MIN_DEVICE_MEMORY bytes.  Needs no device: the check hook of the
 * GUC calls it at SET time, the worker again with the card's memory.
 */
bool
GpuirParseDeviceMemory(const char *value, GpuirDeviceMemory *dm, char *why, size_t whylen)
{
	const char *p = value;
	double		num = 0.0;
	bool		digits = false;

	if (p == NULL)
	{
		snprintf(why, whylen, "it is not set");
		return false;
	}
	while (isspace((unsigned char) *p))
		p++;
	while (isdigit((unsigned char) *p))
	{
		num = num * 10.0 + (*p++ - '0');
		digits = true;
	}
	if (*p == '.')
	{
		double		f = 0.1;

		p++;
		while (isdigit((unsigned char) *p))
		{
			num += (*p++ - '0') * f;
			f /= 10.0;
			digits = true;
		}
	}
	if (!digits)
	{
		snprintf(why, whylen, "it does not start with a number");
		return false;
	}
	while (isspace((unsigned char) *p))
		p++;

	if (*p == '%')
	{
		p++;
		while (isspace((unsigned char) *p))
			p++;
		if (*p != '\0')
		{
			snprintf(why, whylen, "unexpected text after \"%%\"");
			return false;
		}
		if (num <= 0.0 || num > GPUIR_MAX_DEVICE_MEMORY_SHARE)
		{
			snprintf(why, whylen, "a share must be above 0%% and at most %d%%",
					 GPUIR_MAX_DEVICE_MEMORY_SHARE);
			return false;
		}
		dm->share = true;
		dm->value = num;
	}
	else
	{
		char		unit[4];
		int			n = 0;
		double		mult;

		while (isalpha((unsigned char) *p) && n < 3)
			unit[n++] = *p++;
		unit[n] = '\0';
		while (isspace((unsigned char) *p))
			p++;
		if (*p != '\0')
		{
			snprintf(why, whylen, "unexpected text after the amount");
			return false;
		}
		if (n == 0)
		{
			snprintf(why, whylen, "an amount needs a unit (B, kB, MB, GB or TB)");
			return false;
		}
		if (pg_strcasecmp(unit, "B") == 0)
			mult = 1.0;
		else if (pg_strcasecmp(unit, "kB") == 0 || pg_strcasecmp(unit, "k") == 0)
			mult = 1024.0;
		else if (pg_strcasecmp(unit, "MB") == 0 || pg_strcasecmp(unit, "M") == 0)
			mult = 1024.0 * 1024.0;
		else if (pg_strcasecmp(unit, "GB") == 0 || pg_strcasecmp(unit, "G") == 0)
			mult = 1024.0 * 1024.0 * 1024.0;
		else if (pg_strcasecmp(unit, "TB") == 0 || pg_strcasecmp(unit, "T") == 0)
			mult = 1024.0 * 1024.0 * 1024.0 * 1024.0;
		else
		{
			snprintf(why, whylen, "unknown unit \"%s\" (use B, kB, MB, GB or TB)", unit);
			return false;
		}
		if (num * mult < GPUIR_MIN_DEVICE_MEMORY)
		{
			snprintf(why, whylen, "the budget would be 0 bytes");
			return false;
		}
		dm->share = false;
		dm->value = num * mult;
	}
	return true;
}

/*
 * device_memory_budget: the bytes gpuir.device_memory's value gives on a
 * card of total bytes (an amount above total is clamped to total); false,
 * with the reason in why, when the value does not parse or gives 0 bytes.
 */
static bool
device_memory_budget(const char *value, uint64 total, uint64 *budget,
					 char *why, size_t whylen)
{
	GpuirDeviceMemory dm;
	double		bytes;

	if (!GpuirParseDeviceMemory(value, &dm, why, whylen))
		return false;
	bytes = dm.share ? (double) total * (dm.value / 100.0) : dm.value;
	if (bytes > (double) total)
		bytes = (double) total;
	if (bytes < 1.0)
	{
		snprintf(why, whylen, "the budget would be 0 bytes");
		return false;
	}
	*budget = (uint64) bytes;
	return true;
}

/*
 * GpuirCacheSetBudget: the list cache's budget on a card of device_total
 * bytes, from gpuir.device_memory (LOG and GPUIR_DEFAULT_DEVICE_MEMORY when
 * it gives no budget on this card).  Returns it.
 */
uint64
GpuirCacheSetBudget(uint64 device_total)
{
	char		why[128];
	uint64		budget;

	if (!device_memory_budget(gpuir_device_memory, device_total, &budget, why, sizeof(why)))
	{
		char		why2[128];

		ereport(LOG,
				(errmsg("invalid value for parameter \"gpuir.device_memory\": \"%s\"",
						gpuir_device_memory ? gpuir_device_memory : ""),
				 errdetail("%s", why),
				 errhint("Use an amount such as '4GB' or a share such as '50%%'; %s is used.",
						 GPUIR_DEFAULT_DEVICE_MEMORY)));
		if (!device_memory_budget(GPUIR_DEFAULT_DEVICE_MEMORY, device_total, &budget,
								  why2, sizeof(why2)))
			budget = 0;			/* a card of less than 2 bytes */
	}
	cache_budget = budget;
	return budget;
}

/* ---------- entries ---------- */

/* GpuirCacheInit: the memory context of the cache entries (worker startup) */
void
GpuirCacheInit(void)
{
	cache_cxt = AllocSetContextCreate(TopMemoryContext, "gpuir list cache",
									  ALLOCSET_SMALL_SIZES);
}

static void
cache_publish(void)
{
	pg_atomic_write_u64(&GpuirWorkerDevice->bytes_cached, cache_bytes);
}

/* cache_remove: free one entry's device arrays and forget it */
static void
cache_remove(GpuirCacheEntry *e)
{
	gpuir_cuda_status st;

	dlist_delete(&e->lru);
	cache_bytes -= e->bytes;
	st = gpuir_cuda_segment_free(&e->dev);
	if (e->partial != NULL)
	{
		for (int32 i = 0; i < e->partial->nitems; i++)
			gpuir_cuda_list_free(transit, &e->partial->kept[i]);
		MemoryContextDelete(e->partial->cxt);
	}
	pfree(e->tids);
	pfree(e);
	cache_publish();
	if (st != GPUIR_CUDA_OK)
	{
		char		buf[192];

		snprintf(buf, sizeof(buf), "freeing a cached segment: %s", gpuir_cuda_status_string(st));
		GpuirWorkerNoteFailure(buf);
	}
}

/* cache_evict_all: free every entry except keep (may be NULL) */
static void
cache_evict_all(GpuirCacheEntry *keep)
{
	dlist_mutable_iter it;

	dlist_foreach_modify(it, &cache_lru)
	{
		GpuirCacheEntry *e = dlist_container(GpuirCacheEntry, lru, it.cur);

		if (e != keep)
			cache_remove(e);
	}
	/* the freed lists' memory back to the device: an allocation failed */
	gpuir_cuda_transit_trim(transit);
}

/*
 * GpuirCacheEvictOthers: free every entry except keep (resident), to make
 * room for a search's workspace; false, freeing nothing, when there is no
 * other entry.
 */
bool
GpuirCacheEvictOthers(GpuirCacheEntry *keep)
{
	if (dlist_is_empty(&cache_lru) ||
		dlist_head_node(&cache_lru) == dlist_tail_node(&cache_lru))
		return false;
	cache_evict_all(keep);
	return true;
}

/* cache_find: the entry for key, or NULL; the LRU order is left as it is */
static GpuirCacheEntry *
cache_find(const GpuirCacheKey *key)
{
	dlist_iter	it;

	dlist_foreach(it, &cache_lru)
	{
		GpuirCacheEntry *e = dlist_container(GpuirCacheEntry, lru, it.cur);

		if (memcmp(&e->key, key, sizeof(GpuirCacheKey)) == 0)
			return e;
	}
	return NULL;
}

/*
 * GpuirCacheTids: the host copy of the TIDS stream (docID -> heap TID,
 * [key->ndocs]) of the resident segment of key, or NULL when none is
 * resident; the LRU order is left as it is
 */
const ItemPointerData *
GpuirCacheTids(const GpuirCacheKey *key)
{
	GpuirCacheEntry *e = cache_find(key);

	return e != NULL ? e->tids : NULL;
}

/* cache_lookup: the entry for key, moved to the front, or NULL */
static GpuirCacheEntry *
cache_lookup(const GpuirCacheKey *key)
{
	GpuirCacheEntry *e = cache_find(key);

	if (e != NULL)
		dlist_move_head(&cache_lru, &e->lru);
	return e;
}

/*
 * segment_device_bytes: device bytes gpuir_cuda_segment_upload allocates
 * for seg, with its lists or (lists false) a partial entry's skeleton: the
 * document arrays and block_offset[0] alone
 */
static uint64
segment_device_bytes(const GpuirSegmentData *seg, bool lists)
{
	uint64		nb = lists ? seg->nblocks : 0;

	return (lists ? (uint64) seg->streams[GPUIR_S_PAYLOAD].nbytes : 0) +
		nb * sizeof(uint32) +	/* block_last */
		(nb + 1) * sizeof(uint32) +	/* block_offset */
		2 * nb * GPUIR_CUDA_BLOCK_IMPACTS * sizeof(uint32) +	/* impacts */
		(uint64) seg->ndocs * (sizeof(uint32) + 1) +	/* doclen, doclen_code */
		(uint64) seg->streams[GPUIR_S_PRIORS].nbytes;	/* prior (0 or ndocs floats) */
}

/*
 * partial_create: the (empty) list store of a new partial entry, with a
 * copy of its segment's document lengths doclen[0 .. ndocs)
 */
static GpuirPartial *
partial_create(const uint32 *doclen, uint32 ndocs)
{
	MemoryContext cxt = AllocSetContextCreate(cache_cxt, "gpuir kept lists",
											  ALLOCSET_DEFAULT_SIZES);
	GpuirPartial *p = MemoryContextAllocZero(cxt, sizeof(GpuirPartial));
	HASHCTL		ctl;

	p->cxt = cxt;
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(GpuirPartialKey);
	ctl.entrysize = sizeof(GpuirPartialSlot);
	ctl.hcxt = cxt;
	p->index = hash_create("gpuir kept lists", 1024, &ctl,
						   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	p->cap = 1024;
	p->items = MemoryContextAlloc(cxt, sizeof(GpuirLcItem) * p->cap);
	p->heap = MemoryContextAlloc(cxt, sizeof(int32) * p->cap);
	p->kept = MemoryContextAllocZero(cxt, sizeof(gpuir_cuda_list) * p->cap);
	p->rest = MemoryContextAllocZero(cxt, sizeof(GpuirPruneRest) * p->cap);
	gpuir_lc_init(&p->policy, p->heap);
	p->doclen = MemoryContextAllocExtended(cxt, Max((Size) ndocs * sizeof(uint32), 1),
										   MCXT_ALLOC_HUGE);
	memcpy(p->doclen, doclen, (Size) ndocs * sizeof(uint32));
	p->ndocs = ndocs;
	return p;
}

/* partial_find: the item of the list at first_block (its pruned list: pruned), or -1 */
static int32
partial_find(GpuirPartial *p, uint32 first_block, bool pruned)
{
	GpuirPartialKey key = {first_block, pruned ? 1 : 0};
	GpuirPartialSlot *slot = hash_search(p->index, &key, HASH_FIND, NULL);

	return slot != NULL ? slot->item : -1;
}

/* partial_item: partial_find, the item made when new */
static int32
partial_item(GpuirPartial *p, uint32 first_block, bool pruned)
{
	GpuirPartialKey key = {first_block, pruned ? 1 : 0};
	GpuirPartialSlot *slot;
	int32		found = partial_find(p, first_block, pruned);

	if (found >= 0)
		return found;
	if (p->nitems == p->cap)
	{
		int32		cap = p->cap * 2;

		if (cap > (int32) (MaxAllocSize / sizeof(GpuirPruneRest)))
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("gpuir: too many lists used from one segment on the device")));
		p->items = repalloc(p->items, sizeof(GpuirLcItem) * cap);
		p->heap = repalloc(p->heap, sizeof(int32) * cap);
		p->kept = repalloc(p->kept, sizeof(gpuir_cuda_list) * cap);
		memset(p->kept + p->cap, 0, sizeof(gpuir_cuda_list) * (cap - p->cap));
		p->rest = repalloc(p->rest, sizeof(GpuirPruneRest) * cap);
		p->policy.heap = p->heap;
		p->cap = cap;
	}
	slot = hash_search(p->index, &key, HASH_ENTER, NULL);
	slot->item = p->nitems;
	gpuir_lc_new_item(&p->items[p->nitems], 0);	/* its size is set when first read */
	return p->nitems++;
}

/* ---------- loading a segment ---------- */

/*
 * read_pages: bytes [off, off + len) of a stream of a segment with tag,
 * on extents e, into dst (GpuirCacheReadStream's page loop and checks:
 * see there)
 */
static void
read_pages(const GpuirRelFile *node, bool permanent, uint32 tag, const GpuirStreamExtents *e,
		   uint64 off, uint64 len, char *dst)
{
	uint64		end = off + len;

	for (uint64 p = off / GPUIR_PAGE_DATA; p * GPUIR_PAGE_DATA < end; p++)
	{
		BlockNumber blkno = GpuirExtentsBlock(e, p);
		uint64		pstart = p * GPUIR_PAGE_DATA;
		uint64		from = Max(pstart, off);
		uint64		to = Min(pstart + GPUIR_PAGE_DATA, end);
		Buffer		buf;
		Page		page;
		const char *bad = NULL;
		uint16		flags = 0;

		CHECK_FOR_INTERRUPTS();
		if (!BlockNumberIsValid(blkno))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuir index %u/%u/%u: a stream's page %llu is past its extents",
							GPUIR_RELFILE_SPC(*node), GPUIR_RELFILE_DB(*node), GPUIR_RELFILE_REL(*node),
							(unsigned long long) p)));
		/* held only while the page comes in and is pinned (see above) */
		GpuirServiceTruncationLock(false);
		buf = ReadBufferWithoutRelcache(*node, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL, permanent);
		GpuirServiceTruncationUnlock();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) ||
			PageGetSpecialSize(page) != MAXALIGN(sizeof(GpuirPageOpaqueData)))
			bad = "unexpected page";
		else
		{
			GpuirPageOpaque opaque = GpuirPageGetOpaque(page);

			flags = opaque->flags;
			if (opaque->page_id != GPUIR_PAGE_ID || opaque->flags != GPUIR_PAGE_STREAM)
				bad = "page of the wrong type";
			else if (opaque->next != tag && opaque->next != GPUIR_UNTAGGED)
				bad = "page of another segment (reused after its request was given up, or corrupt)";
			else
				memcpy(dst + (from - off), PageGetContents(page) + (from - pstart), to - from);
		}
		UnlockReleaseBuffer(buf);
		if (bad != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuir index %u/%u/%u: %s (type %u) at block %u",
							GPUIR_RELFILE_SPC(*node), GPUIR_RELFILE_DB(*node), GPUIR_RELFILE_REL(*node),
							bad, flags, blkno)));
	}
}

/* the map page the worker read last: its segment (file, generation) and contents */
static struct
{
	bool		valid;
	GpuirRelFile node;
	uint64		generation;
	BlockNumber map;
	GpuirSegmentMapData data;
}			last_map;

/*
 * GpuirCacheReadStream: copy bytes [off, off + len) of a segment stream (on
 * consecutive pages from its start, or on the extents its segment's map
 * page lists, GPUIR_PAGE_DATA bytes per page; src/README, "Segments" and
 * "Segment maps") of the index with relfilenode node into dst.
 * Each page is pinned and share-locked only while it is checked
 * (GpuirCheckPage's checks) and copied; errors are raised after the page
 * is released.  The range lies inside the stream (the caller checks it).
 * Raises ERRCODE_INDEX_CORRUPTED for a page that is not a stream page of
 * seg, and the buffer manager's errors for unreadable blocks.  A stream
 * page carries its segment's tag (GpuirCheckStreamTag): one with another
 * segment's tag is corrupt, or was reused by a later merge, which is
 * possible once the backend that sent the request has given it up and no
 * longer holds back the reuse of the replaced segment's pages (src/README,
 * "Free space map").  For the same reason each page is brought in and
 * pinned under GpuirServiceTruncationLock (its contract says why), and its
 * content lock taken after that lock is released.
 */
void
GpuirCacheReadStream(const GpuirRelFile *node, bool permanent, const GpuirSegmentData *seg,
					 GpuirStreamKind kind, uint64 off, uint64 len, char *dst)
{
	uint32		tag = GpuirSegmentTag(seg->generation);
	GpuirStreamExtents e;

	Assert(off + len <= seg->streams[kind].nbytes);
	if (seg->map == 0)
		GpuirStreamContiguous(&seg->streams[kind], &e);
	else
	{
		/*
		 * a segment's map page never changes; a compaction that moves some
		 * of the segment's pages writes a new one on a page the segment
		 * never used (gpuircompact.c, move_part): so the one kept is taken
		 * for the same relation file, generation and map page when it also
		 * agrees with seg's directory entry (a file number reused by a new
		 * index could meet the same generation)
		 */
		if (!last_map.valid || last_map.generation != seg->generation ||
			last_map.map != seg->map ||
			memcmp(&last_map.node, node, sizeof(GpuirRelFile)) != 0 ||
			GpuirSegmentMapCheck(seg, &last_map.data) != NULL)
		{
			GpuirStreamExtents m;
			const char *why;

			last_map.valid = false;
			m.n = 1;
			m.ext[0].start = seg->map;
			m.ext[0].npages = 1;
			read_pages(node, permanent, tag, &m, 0, sizeof(GpuirSegmentMapData),
					   (char *) &last_map.data);
			if ((why = GpuirSegmentMapCheck(seg, &last_map.data)) != NULL)
				ereport(ERROR,
						(errcode(ERRCODE_INDEX_CORRUPTED),
						 errmsg("gpuir index %u/%u/%u: %s (map page %u)",
								GPUIR_RELFILE_SPC(*node), GPUIR_RELFILE_DB(*node),
								GPUIR_RELFILE_REL(*node), why, seg->map)));
			last_map.node = *node;
			last_map.generation = seg->generation;
			last_map.map = seg->map;
			last_map.valid = true;
		}
		e.n = (int) last_map.data.nextents[kind];
		memcpy(e.ext, last_map.data.ext[kind], sizeof(GpuirExtent) * e.n);
	}
	read_pages(node, permanent, tag, &e, off, len, dst);
}

/* read_stream_range: GpuirCacheReadStream, for batch b (which then closes its files) */
static void
read_stream_range(GpuirBatch *b, const GpuirRelFile *node, bool permanent,
				  const GpuirSegmentData *seg, GpuirStreamKind kind, uint64 off,
				  uint64 len, char *dst)
{
	b->read_pages = true;
	GpuirCacheReadStream(node, permanent, seg, kind, off, len, dst);
}

/* read_stream: copy a whole segment stream into dst (read_stream_range) */
static void
read_stream(GpuirBatch *b, const GpuirRelFile *node, bool permanent,
			const GpuirSegmentData *seg, GpuirStreamKind kind, char *dst)
{
	read_stream_range(b, node, permanent, seg, kind, 0, seg->streams[kind].nbytes, dst);
}

/* a segment's host copies, structure of arrays (src/README, "Segments") */
typedef struct GpuirSegmentHost
{
	char	   *payload;		/* [payload_bytes] */
	uint32	   *block_last;		/* [nblocks] */
	uint32	   *block_offset;	/* [nblocks + 1] */
	uint32	   *impact_tf;		/* [nblocks * GPUIR_BLOCK_IMPACTS] */
	uint32	   *impact_dl;		/* [nblocks * GPUIR_BLOCK_IMPACTS] */
	uint32	   *doclen;			/* [ndocs] */
	float4	   *prior;			/* [ndocs], or NULL: no priors */
	ItemPointerData *tids;		/* [ndocs]: kept on the host (GpuirCacheTids) */
} GpuirSegmentHost;

/*
 * corrupt_block: raise XX002 for block blkno of a segment of t's index:
 * why (a block header a check refused, whole segment or list in transit,
 * or a list's length that disagrees with another list starting there)
 */
static void
corrupt_block(const GpuirTaken *t, uint32 blkno, const char *why)
pg_attribute_noreturn();

static void
corrupt_block(const GpuirTaken *t, uint32 blkno, const char *why)
{
	const GpuirRelFile *node = &t->hdr.node;

	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gpuir index %u/%u/%u: block %u of a segment: %s",
					GPUIR_RELFILE_SPC(*node), GPUIR_RELFILE_DB(*node), GPUIR_RELFILE_REL(*node),
					blkno, why)));
	pg_unreachable();
}

/*
 * load_segment: read segment seg of t's index into h (when not whole, its
 * per-document arrays only: doclen, priors and TIDs, and no block), in the
 * current memory context, checking every block header with GpuirListCheckHeader (the
 * rules of the CPU reader; the end of a block is the next block's offset,
 * or the PAYLOAD stream's length).  The stream sizes match the segment's
 * counts (checked by the caller).  Raises the ERRORs of read_stream, and
 * ERRCODE_INDEX_CORRUPTED for a bad header or a prior outside 0 ..
 * prior_max (GpuirPriorsInRange).
 */
static void
load_segment(GpuirBatch *b, const GpuirTaken *t, const GpuirSegmentData *seg,
			 bool whole, GpuirSegmentHost *h)
{
	const GpuirRelFile *node = &t->hdr.node;
	uint32		nblocks = whole ? seg->nblocks : 0;
	uint32		ndocs = seg->ndocs;
	uint32		payload_bytes = whole ? seg->streams[GPUIR_S_PAYLOAD].nbytes : 0;
	Size		nimpacts = (Size) nblocks * GPUIR_BLOCK_IMPACTS;
	GpuirBlockHeader *dir = NULL;

	h->payload = palloc_extended(Max(payload_bytes, 1), MCXT_ALLOC_HUGE);
	if (whole)
	{
		read_stream(b, node, t->hdr.permanent, seg, GPUIR_S_PAYLOAD, h->payload);
		dir = palloc_extended(Max((Size) nblocks * sizeof(GpuirBlockHeader), 1), MCXT_ALLOC_HUGE);
		read_stream(b, node, t->hdr.permanent, seg, GPUIR_S_BLOCKDIR, (char *) dir);
	}
	h->doclen = palloc_extended(Max((Size) ndocs * sizeof(uint32), 1), MCXT_ALLOC_HUGE);
	read_stream(b, node, t->hdr.permanent, seg, GPUIR_S_DOCLENS, (char *) h->doclen);
	h->tids = palloc_extended(Max((Size) ndocs * sizeof(ItemPointerData), 1), MCXT_ALLOC_HUGE);
	read_stream(b, node, t->hdr.permanent, seg, GPUIR_S_TIDS, (char *) h->tids);
	h->prior = NULL;
	if (seg->streams[GPUIR_S_PRIORS].nbytes > 0)
	{
		/* checked here, before the cache evicts anything for the segment */
		h->prior = palloc_extended((Size) ndocs * sizeof(float4), MCXT_ALLOC_HUGE);
		read_stream(b, node, t->hdr.permanent, seg, GPUIR_S_PRIORS, (char *) h->prior);
		if (!GpuirPriorsInRange(seg, h->prior))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuir index %u/%u/%u: a segment prior is negative, not finite or above the segment's largest",
							GPUIR_RELFILE_SPC(*node), GPUIR_RELFILE_DB(*node), GPUIR_RELFILE_REL(*node))));
	}

	h->block_last = palloc_extended(Max((Size) nblocks * sizeof(uint32), 1), MCXT_ALLOC_HUGE);
	h->block_offset = palloc_extended(((Size) nblocks + 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	h->impact_tf = palloc_extended(Max(nimpacts * sizeof(uint32), 1), MCXT_ALLOC_HUGE);
	h->impact_dl = palloc_extended(Max(nimpacts * sizeof(uint32), 1), MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < nblocks; i++)
	{
		uint32		end = (i + 1 < nblocks) ? dir[i + 1].payload_off : payload_bytes;
		const char *why = GpuirListCheckHeader(&dir[i], NULL, end, ndocs);

		if (why != NULL)
			corrupt_block(t, i, why);
		h->block_last[i] = dir[i].last_docid;
		h->block_offset[i] = dir[i].payload_off;
		for (int j = 0; j < GPUIR_BLOCK_IMPACTS; j++)
		{
			h->impact_tf[(Size) i * GPUIR_BLOCK_IMPACTS + j] = dir[i].impact_tf[j];
			h->impact_dl[(Size) i * GPUIR_BLOCK_IMPACTS + j] = dir[i].impact_dl[j];
		}
	}
	h->block_offset[nblocks] = payload_bytes;
	if (dir != NULL)
		pfree(dir);
}

/*
 * upload: gpuir_cuda_segment_upload of h into e->dev (or the failure
 * gpuir.debug_gpu_fault makes up)
 */
static gpuir_cuda_status
upload(const GpuirSegmentHost *h, const GpuirSegmentData *seg, bool whole, GpuirCacheEntry *e)
{
	gpuir_cuda_status st;

	if (gpuir_debug_gpu_fault == GPUIR_FAULT_UPLOAD_OOM)
		return GPUIR_CUDA_OOM;
	if (gpuir_debug_gpu_fault == GPUIR_FAULT_UPLOAD_ERROR)
		return GPUIR_CUDA_ERROR;
	st = gpuir_cuda_segment_upload((const uint8_t *) h->payload,
								   whole ? seg->streams[GPUIR_S_PAYLOAD].nbytes : 0,
								   h->block_last, h->block_offset,
								   whole ? h->impact_tf : NULL, whole ? h->impact_dl : NULL,
								   whole ? seg->nblocks : 0, h->doclen, NULL, h->prior,
								   seg->prior_max, seg->ndocs, &e->dev);
	if (gpuir_debug_gpu_fault == GPUIR_FAULT_EXIT_UPLOAD)
	{
		/* as if killed with the segment on the device and the batch taken */
		ereport(LOG,
				(errmsg("gpuir: worker exits while uploading a segment (gpuir.debug_gpu_fault)")));
		proc_exit(1);
	}
	return st;
}

/*
 * GpuirCacheGet: the resident segment for key (the request's segment seg
 * of index t->hdr.node), uploading it on a miss; for a segment larger than
 * the budget (its device arrays do not fit it), a partial entry: its document arrays
 * resident, its lists searched through GpuirCacheTransit.  Returns NULL
 * with the reason in why when that cannot be made resident (document
 * arrays larger than the budget, CUDA failure).  Raises ERRORs of page reads, corrupt block
 * directories and palloc; nothing is left allocated on the device then.
 * The host copies live in a child of the current memory context (the
 * run's) and are freed right after the upload.
 */
GpuirCacheEntry *
GpuirCacheGet(GpuirBatch *b, const GpuirCacheKey *key, const GpuirTaken *t,
			  const GpuirSegmentData *seg, char *why, size_t whylen)
{
	GpuirCacheEntry *e;
	uint64		bytes;
	MemoryContext load_cxt;
	MemoryContext old;
	GpuirSegmentHost h;
	gpuir_cuda_status st;
	bool		whole;

	e = cache_lookup(key);
	if (e != NULL)
	{
		pg_atomic_fetch_add_u64(&GpuirWorkerDevice->cache_hits, 1);
		return e;
	}

	/* the host copies are sized by the counts: a stream of another size would overflow them */
	if (seg->streams[GPUIR_S_BLOCKDIR].nbytes != (uint64) seg->nblocks * sizeof(GpuirBlockHeader) ||
		seg->streams[GPUIR_S_DOCLENS].nbytes != (uint64) seg->ndocs * sizeof(uint32) ||
		seg->streams[GPUIR_S_TIDS].nbytes != (uint64) seg->ndocs * sizeof(ItemPointerData) ||
		GpuirPriorsSizeCheck(seg) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuir index %u/%u/%u: segment stream sizes do not match the segment directory",
						GPUIR_RELFILE_SPC(t->hdr.node), GPUIR_RELFILE_DB(t->hdr.node), GPUIR_RELFILE_REL(t->hdr.node))));
	whole = segment_device_bytes(seg, true) <= cache_budget;
	bytes = segment_device_bytes(seg, whole);
	if (bytes > cache_budget)
	{
		snprintf(why, whylen, "segment's document lengths larger than gpuir.device_memory");
		return NULL;
	}
	pg_atomic_fetch_add_u64(&GpuirWorkerDevice->cache_misses, 1);

	load_cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir segment load",
									 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(load_cxt);
	load_segment(b, t, seg, whole, &h);
	MemoryContextSwitchTo(old);

	/* allocated before the upload, so no palloc failure can leak device memory */
	e = MemoryContextAllocZero(cache_cxt, sizeof(GpuirCacheEntry));
	e->key = *key;
	e->bytes = bytes;
	e->tids = MemoryContextAllocExtended(cache_cxt,
										 Max((Size) seg->ndocs * sizeof(ItemPointerData), 1),
										 MCXT_ALLOC_HUGE);
	memcpy(e->tids, h.tids, (Size) seg->ndocs * sizeof(ItemPointerData));
	if (!whole)
		e->partial = partial_create(h.doclen, seg->ndocs);

	/* least recently used first, until the segment fits the budget */
	while (cache_bytes + bytes > cache_budget && !dlist_is_empty(&cache_lru))
		cache_remove(dlist_container(GpuirCacheEntry, lru, dlist_tail_node(&cache_lru)));

	st = upload(&h, seg, whole, e);
	if (st == GPUIR_CUDA_OOM && !dlist_is_empty(&cache_lru))
	{
		cache_evict_all(NULL);
		st = upload(&h, seg, whole, e);
	}
	MemoryContextDelete(load_cxt);
	if (st != GPUIR_CUDA_OK)
	{
		if (e->partial != NULL)
			MemoryContextDelete(e->partial->cxt);
		pfree(e->tids);
		pfree(e);
		GpuirWorkerCudaFailure(b, "segment upload", st, why, whylen);
		return NULL;
	}
	GpuirWorkerCudaSuccess();
	dlist_push_head(&cache_lru, &e->lru);
	cache_bytes += bytes;
	cache_publish();
	return e;
}

/* ---------- lists in transit ---------- */

/* one distinct list of a run (a list and its pruned list are two) */
typedef struct TransitList
{
	uint32		first_block;	/* in the segment */
	bool		pruned;			/* the list's pruned list, kept here */
	bool		prunable;		/* a query that may read a pruned list sent it */
	uint32		nblocks;		/* its blocks (of the pruned list: those) */
	uint32		npostings;
	int32		item;			/* in the entry's GpuirPartial */
	uint64		stage_off;		/* a miss: its image's offset in the staging buffer */
	uint32		payload_off;	/* a miss: its first block's payload offset */
	uint32		payload_bytes;
	GpuirBlockHeader *dir;		/* a miss: its block headers */
} TransitList;

static int
transit_list_cmp(const void *a, const void *b)
{
	const TransitList *x = a;
	const TransitList *y = b;

	if (x->first_block != y->first_block)
		return (x->first_block > y->first_block) - (x->first_block < y->first_block);
	return (int) x->pruned - (int) y->pruned;
}

/*
 * transit_read_headers: the block headers of list l of seg into l->dir
 * (checked as the CPU reader checks them: GpuirListCheckHeader with the
 * list's previous block), and its payload extent
 */
static void
transit_read_headers(GpuirBatch *b, const GpuirTaken *t, const GpuirSegmentData *seg,
					 TransitList *l)
{
	const GpuirRelFile *node = &t->hdr.node;
	uint32		payload_total = seg->streams[GPUIR_S_PAYLOAD].nbytes;
	bool		more = (uint64) l->first_block + l->nblocks < seg->nblocks;
	uint32		nread = l->nblocks + (more ? 1 : 0);
	uint32		end;

	if ((uint64) l->first_block + l->nblocks > seg->nblocks ||
		seg->streams[GPUIR_S_BLOCKDIR].nbytes != (uint64) seg->nblocks * sizeof(GpuirBlockHeader))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuir index %u/%u/%u: a list's blocks lie outside its segment",
						GPUIR_RELFILE_SPC(*node), GPUIR_RELFILE_DB(*node), GPUIR_RELFILE_REL(*node))));
	l->dir = palloc_extended((Size) nread * sizeof(GpuirBlockHeader), MCXT_ALLOC_HUGE);
	read_stream_range(b, node, t->hdr.permanent, seg, GPUIR_S_BLOCKDIR,
					  (uint64) l->first_block * sizeof(GpuirBlockHeader),
					  (uint64) nread * sizeof(GpuirBlockHeader), (char *) l->dir);
	end = more ? l->dir[l->nblocks].payload_off : payload_total;
	for (uint32 i = 0; i < l->nblocks; i++)
	{
		uint32		bend = (i + 1 < l->nblocks) ? l->dir[i + 1].payload_off : end;
		const char *why = GpuirListCheckHeader(&l->dir[i], i > 0 ? &l->dir[i - 1] : NULL,
											   bend, seg->ndocs);

		if (why == NULL && bend > payload_total)
			why = "block extends past the segment's payload";
		if (why != NULL)
			corrupt_block(t, l->first_block + i, why);
	}
	l->payload_off = l->dir[0].payload_off;
	l->payload_bytes = end - l->payload_off;
}

/*
 * transit_write_blocks: the block arrays of list l's image (gpuir_cuda.h,
 * "lists in transit") at dst, from l->dir; its payload goes at
 * dst + gpuir_cuda_list_image_payload(l->nblocks)
 */
static void
transit_write_blocks(const TransitList *l, uint32 *dst)
{
	uint32		n = l->nblocks;
	uint32	   *offsets = dst + gpuir_cuda_list_image_offsets(n);
	uint32	   *tf = dst + gpuir_cuda_list_image_tf(n);
	uint32	   *dl = dst + gpuir_cuda_list_image_dl(n);

	for (uint32 i = 0; i < n; i++)
	{
		dst[i] = l->dir[i].last_docid;
		offsets[i] = l->dir[i].payload_off - l->payload_off;
		for (int j = 0; j < GPUIR_BLOCK_IMPACTS; j++)
		{
			tf[(Size) i * GPUIR_BLOCK_IMPACTS + j] = l->dir[i].impact_tf[j];
			dl[(Size) i * GPUIR_BLOCK_IMPACTS + j] = l->dir[i].impact_dl[j];
		}
	}
	offsets[n] = l->payload_bytes;
}

/*
 * transit_stage: the images of the run's misses (tl[i] with a dir) at
 * their stage_off in the staging (stage bytes in all): their block arrays
 * here, their payloads copied from the pages by the list readers and this
 * worker together (gpuirreader.c) where they can and the run sends at
 * least GPUIR_READ_CHUNK bytes, else by this worker into the transit's own
 * staging buffer.  Returns the host memory to
 * upload from (NULL: the transit's staging buffer), or sets *failed (a
 * CUDA status, GPUIR_CUDA_OK otherwise); *written receives the memory the
 * images are in (the readers' staging or the transit's).  Raises the
 * ERRORs of page reads.
 */
static const char *
transit_stage(GpuirBatch *b, const GpuirTaken *t, const GpuirSegmentData *seg,
			  const TransitList *tl, uint32 nd, uint64 stage, gpuir_cuda_status *failed,
			  const char **written)
{
	uint32		ntasks = 0;
	uint32		k = 0;
	char	   *host = NULL;
	GpuirReadTask *tasks = NULL;
	bool		readers;
	gpuir_cuda_status st;

	*failed = GPUIR_CUDA_OK;
	*written = NULL;
	for (uint32 i = 0; i < nd; i++)
		if (tl[i].dir != NULL)
			ntasks += (tl[i].payload_bytes + GPUIR_READ_CHUNK - 1) / GPUIR_READ_CHUNK;

	/* the last upload has read the staging (the readers' or the transit's) */
	if ((st = gpuir_cuda_transit_sync(transit)) != GPUIR_CUDA_OK)
	{
		*failed = st;
		return NULL;
	}

	/*
	 * less than one task's worth is copied here: waking the readers costs
	 * more (H200, 304k paragraphs at a 10% budget, about 5 kB a batch:
	 * transit_read 18 us alone, 55 us with 4 readers)
	 */
	readers = stage >= GPUIR_READ_CHUNK && GpuirReadersBegin(stage, ntasks, &host, &tasks);
	if (!readers &&
		(st = gpuir_cuda_transit_staging(transit, stage, (void **) &host)) != GPUIR_CUDA_OK)
	{
		*failed = st;
		return NULL;
	}
	*written = host;
	for (uint32 i = 0; i < nd; i++)
	{
		uint64		dst;

		if (tl[i].dir == NULL)
			continue;
		transit_write_blocks(&tl[i], (uint32 *) (host + tl[i].stage_off));
		dst = tl[i].stage_off + sizeof(uint32) *
			(uint64) gpuir_cuda_list_image_payload(tl[i].nblocks);
		if (!readers)
		{
			read_stream_range(b, &t->hdr.node, t->hdr.permanent, seg, GPUIR_S_PAYLOAD,
							  tl[i].payload_off, tl[i].payload_bytes, host + dst);
			continue;
		}
		for (uint32 done = 0; done < tl[i].payload_bytes; done += GPUIR_READ_CHUNK)
		{
			tasks[k].src_off = (uint64) tl[i].payload_off + done;
			tasks[k].dst_off = dst + done;
			tasks[k].len = Min(GPUIR_READ_CHUNK, tl[i].payload_bytes - done);
			k++;
		}
	}
	if (!readers)
		return NULL;
	Assert(k == ntasks);
	GpuirReadersRun(&t->hdr.node, t->hdr.permanent, seg, ntasks);
	return host;
}

/*
 * transit_check_lengths: every block of the run's misses (tl[i] with a dir)
 * against its extent in the images staged at images (transit_stage's
 * *written), as the CPU reader checks it (GpuirListCheckLengths): a block
 * whose header is unsound or gives another length than its extent is
 * refused there, and the kernels take a block's layout from its header
 * unchecked (gpuir_cuda.h, list images).  Raises as a corrupt header does
 * in transit_read_headers (corrupt_block).
 */
static void
transit_check_lengths(const GpuirTaken *t, const TransitList *tl, uint32 nd, const char *images)
{
	for (uint32 i = 0; i < nd; i++)
	{
		const char *why;
		uint32		bad;

		if (tl[i].dir == NULL)
			continue;
		why = GpuirListCheckLengths((const uint8 *) images + tl[i].stage_off +
									sizeof(uint32) * (uint64) gpuir_cuda_list_image_payload(tl[i].nblocks),
									tl[i].dir, tl[i].nblocks,
									tl[i].payload_off + tl[i].payload_bytes, &bad);
		if (why != NULL)
			corrupt_block(t, tl[i].first_block + bad, why);
	}
}

/* ---------- pruned lists ---------- */

/*
 * prune_terms: which terms of the run's queries read a pruned list kept in
 * p (pitem[i]: its item, else -1 as the caller set it): the lists of at least GPUIR_PRUNE_MIN_POSTINGS postings not
 * kept whole, of the queries that may (mode or/bmw, at most
 * GPUIR_PRUNE_MAX_K candidates, every idf positive, a segment without
 * priors, gpuir.pruned_lists on); rests[q] receives the sum of the rest
 * bounds of query q's pruned lists, rounded up to a float (0: none); a
 * term of such a query whose list has no pruned list kept is marked in
 * prunable[i].
 */
static void
prune_terms(GpuirPartial *p, const GpuirCacheEntry *e, const gpuir_cuda_query *queries,
			uint32 nq, const gpuir_cuda_term *terms, const gpuir_cuda_scoring *sc,
			int32 *pitem, bool *prunable, float *rests)
{
	if (!gpuir_pruned_lists || e->dev.prior != NULL)
		return;
	for (uint32 qi = 0; qi < nq; qi++)
	{
		const gpuir_cuda_query *qq = &queries[qi];
		bool		may = qq->mode != GPUIR_CUDA_MODE_AND && qq->k <= GPUIR_PRUNE_MAX_K;
		double		rest = 0.0;

		for (uint32 i = qq->first_term; may && i < qq->first_term + qq->nterms; i++)
			if (terms[i].nblocks > 0 && !(terms[i].idf > 0.0f))
				may = false;
		if (!may)
			continue;
		for (uint32 i = qq->first_term; i < qq->first_term + qq->nterms; i++)
		{
			int32		whole,
						pr;

			if (terms[i].nblocks == 0 || terms[i].npostings < GPUIR_PRUNE_MIN_POSTINGS)
				continue;
			whole = partial_find(p, terms[i].first_block, false);
			if (whole >= 0 && p->items[whole].heap >= 0)
				continue;
			pr = partial_find(p, terms[i].first_block, true);
			if (pr >= 0 && p->items[pr].heap >= 0)
			{
				pitem[i] = pr;
				rest += GpuirPruneRestBound(&p->rest[pr], terms[i].idf, sc->k1, sc->b,
											sc->avgdl);
			}
			else
				prunable[i] = true;
		}
		if (rest > 0.0)
			rests[qi] = nextafterf((float) rest, INFINITY);
	}
}

/*
 * prune_build: the image of the pruned list of list l (a miss of this run,
 * whose image lies at image in host memory, its headers checked): every
 * block decoded (the readers' checks, GpuirListDecodeBlock), the postings
 * of highest BM25 tf part kept (GpuirPruneSelect, one in
 * GPUIR_PRUNE_SHARE), re-encoded (GpuirPruneEncode) and laid out as a list
 * image.  Returns it (16-byte aligned, palloc'd: free *mem), its bytes,
 * blocks, payload bytes and what it left out.  Raises ERRCODE_INDEX_CORRUPTED
 * for a block that does not decode.
 */
static char *
prune_build(GpuirPartial *p, const TransitList *l, const char *image,
			const gpuir_cuda_scoring *sc, char **mem, uint64 *bytes, uint32 *nblocks,
			uint32 *payload_bytes, GpuirPruneRest *rest)
{
	uint32		n = l->npostings;
	uint32		want = prune_want(n);
	uint32	   *docs = palloc_extended(sizeof(uint32) * (Size) n, MCXT_ALLOC_HUGE);
	uint32	   *tfs = palloc_extended(sizeof(uint32) * (Size) n, MCXT_ALLOC_HUGE);
	uint32	   *dls = palloc_extended(sizeof(uint32) * (Size) n, MCXT_ALLOC_HUGE);
	uint8	   *keep = palloc_extended(n, MCXT_ALLOC_HUGE);
	float	   *scratch = palloc_extended(sizeof(float) * 2 * (Size) n, MCXT_ALLOC_HUGE);
	uint32		(*pairs)[2] = palloc_extended(sizeof(uint32[2]) * (Size) n, MCXT_ALLOC_HUGE);
	uint32		pb = GpuirListBlocks(want);
	GpuirBlockHeader *dir = palloc_extended(sizeof(GpuirBlockHeader) * (Size) pb, MCXT_ALLOC_HUGE);
	uint8	   *payload = palloc_extended((Size) pb * GPUIR_BLOCK_MAX_BYTES, MCXT_ALLOC_HUGE);
	const uint8 *enc = (const uint8 *) image +
		sizeof(uint32) * gpuir_cuda_list_image_payload(l->nblocks);
	uint32		pos = 0;
	uint32		pbytes;
	TransitList pl;
	char	   *img;

	if (GpuirListBlocks(n) != l->nblocks)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuir: a list of %u postings has %u blocks", n, l->nblocks)));
	for (uint32 blk = 0; blk < l->nblocks; blk++)
	{
		uint32		from = l->dir[blk].payload_off - l->payload_off;
		uint32		to = blk + 1 < l->nblocks ?
			l->dir[blk + 1].payload_off - l->payload_off : l->payload_bytes;
		int			expect = GpuirListBlockPostings(n, blk);
		const char *why;

		why = GpuirListDecodeBlock(enc + from, to - from,
								   blk > 0 ? l->dir[blk - 1].last_docid : GPUIR_FIRST_PREV_DOCID,
								   &l->dir[blk], expect, docs + pos, tfs + pos, 0);
		if (why != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuir: block %u of a segment: %s", l->first_block + blk, why)));
		pos += expect;
	}
	for (uint32 i = 0; i < n; i++)
	{
		if (docs[i] >= p->ndocs)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuir: docID %u past the end of a segment of %u documents",
							docs[i], p->ndocs)));
		dls[i] = p->doclen[docs[i]];
	}
	(void) GpuirPruneSelect(tfs, dls, n, want, sc->k1, sc->b, sc->avgdl, keep, rest, scratch,
							pairs);
	pbytes = GpuirPruneEncode(docs, tfs, dls, keep, n, sc->k1, sc->b, sc->avgdl, dir, payload,
							  &pb);
	if (pbytes == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuir: the postings of a list at block %u of a segment are not in docID order",
						l->first_block)));
	memset(&pl, 0, sizeof(pl));
	pl.nblocks = pb;
	pl.dir = dir;
	pl.payload_off = 0;
	pl.payload_bytes = pbytes;
	*bytes = gpuir_cuda_list_image_bytes(pb, pbytes);
	*nblocks = pb;
	*payload_bytes = pbytes;
	*mem = palloc_extended(*bytes + 16, MCXT_ALLOC_HUGE);
	img = (char *) TYPEALIGN(16, *mem);
	transit_write_blocks(&pl, (uint32 *) img);
	memcpy(img + sizeof(uint32) * gpuir_cuda_list_image_payload(pb), payload, pbytes);
	pfree(docs);
	pfree(tfs);
	pfree(dls);
	pfree(keep);
	pfree(scratch);
	pfree(pairs);
	pfree(dir);
	pfree(payload);
	return img;
}

/*
 * prune_admit: one more use, by a query that could have read its pruned
 * list, of list l, a miss of this run that did not stay on the device
 * (its image at image in host memory): its pruned list's item is touched,
 * and at the first, second, fourth ... such use built (prune_build) and
 * offered to the policy, as an item whose miss moves the whole list
 * (gpuirlistcachepolicy.h); when admitted, it is uploaded and kept, and
 * the lists it displaces are freed (the run's segment is assembled
 * already).  Returns the CUDA status of the upload (GPUIR_CUDA_OK when
 * nothing was uploaded).
 */
static gpuir_cuda_status
prune_admit(GpuirPartial *p, const TransitList *l, const char *image,
			const gpuir_cuda_scoring *sc, uint64 room)
{
	int32		pr = partial_item(p, l->first_block, true);
	GpuirLcItem *it;
	uint64		uses;
	char	   *mem;
	char	   *img;
	uint64		bytes;
	uint32		nblocks;
	uint32		payload_bytes;
	GpuirPruneRest rest;
	int32	   *victims;
	int32		nvictims;
	gpuir_cuda_list src;
	const uint32 *dev_base;
	gpuir_cuda_status st;

	it = &p->items[pr];
	if (it->heap >= 0)
		return GPUIR_CUDA_OK;
	gpuir_lc_touch(&p->policy, p->items, pr);
	uses = (uint64) it->freq;
	if ((uses & (uses - 1)) != 0)
		return GPUIR_CUDA_OK;

	img = prune_build(p, l, image, sc, &mem, &bytes, &nblocks, &payload_bytes, &rest);
	it = &p->items[pr];
	it->size = bytes;
	it->miss = gpuir_cuda_list_image_bytes(l->nblocks, l->payload_bytes);
	victims = palloc(sizeof(int32) * (Size) p->cap);
	if (!gpuir_lc_admit(&p->policy, p->items, pr, room, victims, &nvictims))
	{
		pfree(victims);
		pfree(mem);
		return GPUIR_CUDA_OK;
	}
	for (int32 v = 0; v < nvictims; v++)
		gpuir_cuda_list_free(transit, &p->kept[victims[v]]);
	pfree(victims);
	p->rest[pr] = rest;
	st = gpuir_cuda_transit_upload(transit, img, bytes, &dev_base);
	if (st == GPUIR_CUDA_OK)
	{
		src.base = dev_base;
		src.nblocks = nblocks;
		src.payload_bytes = payload_bytes;
		st = gpuir_cuda_list_keep(transit, &src, &p->kept[pr]);
	}
	if (st == GPUIR_CUDA_OK)
		st = gpuir_cuda_transit_sync(transit);	/* the upload has read img */
	if (st != GPUIR_CUDA_OK)
	{
		gpuir_cuda_list_free(transit, &p->kept[pr]);	/* zeroed when not kept */
		gpuir_lc_remove(&p->policy, p->items, pr);
	}
	pfree(mem);
	return st;
}

/*
 * GpuirCacheTransit: the segment to search for a run over partial entry e
 * (segment seg of t's index), whose query terms are terms[0 .. nterms):
 * each distinct list of the run is either kept on the device already or
 * read from the pages (its headers checked) into a page-locked staging
 * (transit_stage: the list readers' or the transit's) and uploaded with
 * the run; the list cache's policy
 * (gpuirlistcachepolicy.h) then decides which of those stay, within the
 * budget whole segments leave, evicting lists of lower priority; and the
 * lists are copied into one segment on the device
 * (gpuir_cuda_transit_assemble) in assembly slot slot, which no search may
 * read any more (the worker's job: a search in flight on one job reads its
 * own slot).  The terms' first blocks are rewritten to that segment's.
 * A term of one of the run's queries (queries[0 .. nq), whose terms those
 * are) may read its list's pruned list instead (gpuirprune.h; prune_terms
 * says which): rests[q] then receives the bound of what query q's pruned
 * lists left out (sc: the BM25 constants), else stays 0; and a pruned list
 * may be kept for a list sent (prune_admit).
 * Returns it (valid until the next call with the same slot), or NULL with
 * the reason in why on a CUDA failure.  Raises the ERRORs of page reads
 * and corrupt block headers.  In the current memory context (the run's).
 */
const gpuir_cuda_segment *
GpuirCacheTransit(GpuirBatch *b, GpuirCacheEntry *e, const GpuirTaken *t,
				  const GpuirSegmentData *seg, const gpuir_cuda_query *queries, uint32 nq,
				  gpuir_cuda_term *terms, uint64 nterms, const gpuir_cuda_scoring *sc,
				  float *rests, int slot, char *why, size_t whylen)
{
	GpuirPartial *p = e->partial;
	TransitList *tl;
	gpuir_cuda_list *lists;
	uint32	   *tfirst;
	int32	   *drop;
	int32		ndrop = 0;
	int32		nvictims;
	uint32		nd = 0;
	uint64		stage = 0;
	uint64		others;
	uint64		room;
	const char *host;
	const char *written;
	int32	   *pitem;
	bool	   *prunable;
	const uint32 *dev_base = NULL;
	gpuir_cuda_status st;
	uint64		shipped = 0;
	uint64		hits = 0;
	TimestampTz t_start = GetCurrentTimestamp();
	TimestampTz t_read;

	Assert(p != NULL);
	if (transit == NULL)
	{
		st = gpuir_cuda_transit_create(&transit);
		if (st != GPUIR_CUDA_OK)
			goto cuda_fail;
	}

	/* the terms that read a pruned list */
	pitem = palloc_extended(Max(sizeof(int32) * (Size) nterms, 1), MCXT_ALLOC_HUGE);
	prunable = palloc_extended(Max(sizeof(bool) * (Size) nterms, 1),
							   MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (uint64 i = 0; i < nterms; i++)
		pitem[i] = -1;
	prune_terms(p, e, queries, nq, terms, sc, pitem, prunable, rests);

	/* the run's distinct lists, by first block (a list before its pruned list) */
	tl = palloc_extended(Max(sizeof(TransitList) * (Size) nterms, 1), MCXT_ALLOC_HUGE);
	for (uint64 i = 0; i < nterms; i++)
		if (terms[i].nblocks > 0)
		{
			tl[nd].first_block = terms[i].first_block;
			tl[nd].pruned = pitem[i] >= 0;
			tl[nd].prunable = prunable[i];
			tl[nd].npostings = terms[i].npostings;
			tl[nd].dir = NULL;
			tl[nd].item = pitem[i];
			tl[nd].nblocks = pitem[i] >= 0 ? p->kept[pitem[i]].nblocks : terms[i].nblocks;
			nd++;
		}
	qsort(tl, nd, sizeof(TransitList), transit_list_cmp);
	{
		uint32		w = 0;

		for (uint32 i = 0; i < nd; i++)
		{
			if (w > 0 && tl[w - 1].first_block == tl[i].first_block &&
				tl[w - 1].pruned == tl[i].pruned)
			{
				tl[w - 1].prunable |= tl[i].prunable;
				if (tl[w - 1].nblocks != tl[i].nblocks ||
					tl[w - 1].npostings != tl[i].npostings)
					corrupt_block(t, tl[i].first_block,
								  "two lists of different lengths start there");
				continue;
			}
			tl[w++] = tl[i];
		}
		nd = w;
	}

	/* the misses: headers first (their sizes), then their images in the staging buffer */
	for (uint32 i = 0; i < nd; i++)
	{
		if (tl[i].pruned)
			continue;			/* kept (prune_terms) */
		tl[i].item = partial_item(p, tl[i].first_block, false);
		if (p->items[tl[i].item].heap >= 0)
		{
			/*
			 * kept: found by its first block, so a term that gives it
			 * another block count (two dictionary entries on one first
			 * block) would read past it or stop inside it; refused before
			 * anything is read or sent
			 */
			if (p->kept[tl[i].item].nblocks != tl[i].nblocks)
				corrupt_block(t, tl[i].first_block,
							  "its list's block count differs from the list kept from there");
			continue;
		}
		transit_read_headers(b, t, seg, &tl[i]);
		tl[i].stage_off = stage;
		stage += gpuir_cuda_list_image_bytes(tl[i].nblocks, tl[i].payload_bytes);
	}
	host = transit_stage(b, t, seg, tl, nd, stage, &st, &written);
	if (st == GPUIR_CUDA_OK)
		transit_check_lengths(t, tl, nd, written);
	t_read = GetCurrentTimestamp();
	GpuirServiceStage(GPUIR_STAGE_TRANSIT_READ, t_start, t_read);
	if (st != GPUIR_CUDA_OK ||
		(st = gpuir_cuda_transit_upload(transit, host, stage, &dev_base)) != GPUIR_CUDA_OK)
		goto cuda_fail;
	shipped = stage;

	/* where each list is now, the uses counted, and which misses stay */
	lists = palloc_extended(Max(sizeof(gpuir_cuda_list) * (Size) nd, 1), MCXT_ALLOC_HUGE);
	drop = palloc_extended(Max(sizeof(int32) * (Size) p->cap, 1), MCXT_ALLOC_HUGE);
	/* before any admission: an error between admissions and frees would strand victims */
	tfirst = palloc_extended(Max(sizeof(uint32) * (Size) nd, 1), MCXT_ALLOC_HUGE);
	others = cache_bytes - p->policy.bytes;	/* e->bytes is its skeleton's and p's lists' */
	room = cache_budget > others ? cache_budget - others : 0;

	/*
	 * Every list's use is counted before any miss is admitted: a kept list
	 * later in the run's order must not be evicted by an earlier admission
	 * at its old priority (and shipped again by the next run).
	 */
	for (uint32 i = 0; i < nd; i++)
	{
		if (tl[i].dir == NULL)
		{
			lists[i] = p->kept[tl[i].item];
			hits++;
		}
		else
		{
			lists[i].base = dev_base + tl[i].stage_off / 4;
			lists[i].nblocks = tl[i].nblocks;
			lists[i].payload_bytes = tl[i].payload_bytes;
			p->items[tl[i].item].size = gpuir_cuda_list_image_bytes(tl[i].nblocks,
																	tl[i].payload_bytes);
		}
		gpuir_lc_touch(&p->policy, p->items, tl[i].item);
	}
	for (uint32 i = 0; i < nd; i++)
	{
		if (tl[i].dir == NULL)
			continue;

		/*
		 * The victims' copies are freed after the assembly (this run may
		 * read them): drop[] collects them, with room for every list ever
		 * resident in this run (at most p->cap).
		 */
		if (gpuir_lc_admit(&p->policy, p->items, tl[i].item, room, drop + ndrop, &nvictims))
		{
			ndrop += nvictims;
			st = gpuir_cuda_list_keep(transit, &lists[i], &p->kept[tl[i].item]);
			if (st != GPUIR_CUDA_OK)
				gpuir_lc_remove(&p->policy, p->items, tl[i].item);
		}
	}

	/* one segment of the run's lists; the terms name its blocks */
	{
		uint32		fb = 0;

		for (uint32 i = 0; i < nd; i++)
		{
			tfirst[i] = fb;
			fb += tl[i].nblocks;
		}
	}
	for (uint64 i = 0; i < nterms; i++)
	{
		uint32		lo = 0,
					hi = nd;

		if (terms[i].nblocks == 0)
		{
			terms[i].first_block = 0;
			continue;
		}
		while (lo < hi)
		{
			uint32		mid = lo + (hi - lo) / 2;

			if (tl[mid].first_block < terms[i].first_block ||
				(tl[mid].first_block == terms[i].first_block && !tl[mid].pruned && pitem[i] >= 0))
				lo = mid + 1;
			else
				hi = mid;
		}
		Assert(lo < nd && tl[lo].first_block == terms[i].first_block &&
			   tl[lo].pruned == (pitem[i] >= 0));
		terms[i].first_block = tfirst[lo];
		if (pitem[i] >= 0)
		{
			terms[i].nblocks = tl[lo].nblocks;
			terms[i].npostings = prune_want(terms[i].npostings);
		}
	}
	st = gpuir_cuda_transit_assemble(transit, (uint32) slot, &e->dev, lists, nd, &transit_seg[slot]);
	for (int32 v = 0; v < ndrop; v++)
		gpuir_cuda_list_free(transit, &p->kept[drop[v]]);

	/* pruned lists for the lists sent that did not stay */
	for (uint32 i = 0; i < nd && st == GPUIR_CUDA_OK; i++)
		if (tl[i].dir != NULL && tl[i].prunable && p->items[tl[i].item].heap < 0)
			st = prune_admit(p, &tl[i], written + tl[i].stage_off, sc, room);

	/* the entry's bytes follow its kept lists */
	cache_bytes -= e->bytes;
	e->bytes = segment_device_bytes(seg, false) + p->policy.bytes;
	cache_bytes += e->bytes;
	cache_publish();
	pg_atomic_fetch_add_u64(&GpuirWorkerDevice->bytes_shipped, shipped);
	pg_atomic_fetch_add_u64(&GpuirWorkerDevice->list_hits, hits);
	GpuirServiceStage(GPUIR_STAGE_TRANSIT_SEND, t_read, GetCurrentTimestamp());
	if (st != GPUIR_CUDA_OK)
		goto cuda_fail;
	return &transit_seg[slot];

cuda_fail:
	GpuirWorkerCudaFailure(b, "lists in transit", st, why, whylen);
	return NULL;
}
