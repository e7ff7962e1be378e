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
 * way.  A segment larger than the whole budget is not admitted and its
 * requests fail, so that their backends use the CPU.
 *
 * Also here: the syntax of gpuir.device_memory (GpuirParseDeviceMemory),
 * used by its GUC check hook too, and the budget it gives on a card.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "utils/memutils.h"

#include "gpuirworker_int.h"

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

/* cache_lookup: the entry for key, moved to the front, or NULL */
static GpuirCacheEntry *
cache_lookup(const GpuirCacheKey *key)
{
	dlist_iter	it;

	dlist_foreach(it, &cache_lru)
	{
		GpuirCacheEntry *e = dlist_container(GpuirCacheEntry, lru, it.cur);

		if (memcmp(&e->key, key, sizeof(GpuirCacheKey)) == 0)
		{
			dlist_move_head(&cache_lru, &e->lru);
			return e;
		}
	}
	return NULL;
}

/* segment_device_bytes: device bytes gpuir_cuda_segment_upload allocates */
static uint64
segment_device_bytes(const GpuirSegmentData *seg)
{
	uint64		nb = seg->nblocks;

	return (uint64) seg->streams[GPUIR_S_PAYLOAD].nbytes +
		nb * sizeof(uint32) +	/* block_last */
		(nb + 1) * sizeof(uint32) +	/* block_offset */
		2 * nb * GPUIR_CUDA_BLOCK_IMPACTS * sizeof(uint32) +	/* impacts */
		(uint64) seg->ndocs * sizeof(uint32) +	/* doclen */
		(uint64) seg->streams[GPUIR_S_PRIORS].nbytes;	/* prior (0 or ndocs floats) */
}

/* ---------- loading a segment ---------- */

/*
 * read_stream: copy a whole segment stream (nbytes from page start, on
 * consecutive pages, GPUIR_PAGE_DATA bytes per page; src/README,
 * "Segments") of the index with relfilenode node into dst.  Each page is
 * pinned and share-locked only while it is checked (GpuirCheckPage's
 * checks) and copied; errors are raised after the page is released.
 * dst holds the stream's nbytes (GpuirCacheGet checks the sizes against the
 * segment's counts before allocating).  Raises ERRCODE_INDEX_CORRUPTED for
 * a page that is not a stream page of seg, and the buffer manager's errors
 * for unreadable blocks.  A stream page carries its segment's tag
 * (GpuirCheckStreamTag): one with another segment's tag is corrupt, or was
 * reused by a later merge, which is possible once the backend that sent
 * the request has given it up and no longer holds back the reuse of the
 * replaced segment's pages (src/README, "Free space map").
 */
static void
read_stream(GpuirBatch *b, const GpuirRelFile *node, bool permanent,
			const GpuirSegmentData *seg, GpuirStreamKind kind, char *dst)
{
	GpuirStream stream = seg->streams[kind];
	uint32		tag = GpuirSegmentTag(seg->generation);
	uint32		npages = (uint32) GpuirStreamPages(&stream);

	b->read_pages = true;
	for (uint32 p = 0; p < npages; p++)
	{
		BlockNumber blkno = stream.start + p;
		uint32		off = p * (uint32) GPUIR_PAGE_DATA;
		uint32		len = Min((uint32) GPUIR_PAGE_DATA, stream.nbytes - off);
		Buffer		buf;
		Page		page;
		const char *bad = NULL;
		uint16		flags = 0;

		CHECK_FOR_INTERRUPTS();
		buf = ReadBufferWithoutRelcache(*node, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL, permanent);
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
				memcpy(dst + off, PageGetContents(page), len);
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
} GpuirSegmentHost;

/*
 * load_segment: read segment seg of t's index into h, in the current memory
 * context, checking every block header with GpuirListCheckHeader (the
 * rules of the CPU reader; the end of a block is the next block's offset,
 * or the PAYLOAD stream's length).  The stream sizes match the segment's
 * counts (checked by the caller).  Raises the ERRORs of read_stream, and
 * ERRCODE_INDEX_CORRUPTED for a bad header or a prior outside 0 ..
 * prior_max (GpuirPriorsInRange).
 */
static void
load_segment(GpuirBatch *b, const GpuirTaken *t, const GpuirSegmentData *seg,
			 GpuirSegmentHost *h)
{
	const GpuirRelFile *node = &t->hdr.node;
	uint32		nblocks = seg->nblocks;
	uint32		ndocs = seg->ndocs;
	uint32		payload_bytes = seg->streams[GPUIR_S_PAYLOAD].nbytes;
	Size		nimpacts = (Size) nblocks * GPUIR_BLOCK_IMPACTS;
	GpuirBlockHeader *dir;

	h->payload = palloc_extended(Max(payload_bytes, 1), MCXT_ALLOC_HUGE);
	read_stream(b, node, t->hdr.permanent, seg, GPUIR_S_PAYLOAD, h->payload);
	dir = palloc_extended(Max((Size) nblocks * sizeof(GpuirBlockHeader), 1), MCXT_ALLOC_HUGE);
	read_stream(b, node, t->hdr.permanent, seg, GPUIR_S_BLOCKDIR, (char *) dir);
	h->doclen = palloc_extended(Max((Size) ndocs * sizeof(uint32), 1), MCXT_ALLOC_HUGE);
	read_stream(b, node, t->hdr.permanent, seg, GPUIR_S_DOCLENS, (char *) h->doclen);
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
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuir index %u/%u/%u: block %u of a segment: %s",
							GPUIR_RELFILE_SPC(*node), GPUIR_RELFILE_DB(*node), GPUIR_RELFILE_REL(*node), i, why)));
		h->block_last[i] = dir[i].last_docid;
		h->block_offset[i] = dir[i].payload_off;
		for (int j = 0; j < GPUIR_BLOCK_IMPACTS; j++)
		{
			h->impact_tf[(Size) i * GPUIR_BLOCK_IMPACTS + j] = dir[i].impact_tf[j];
			h->impact_dl[(Size) i * GPUIR_BLOCK_IMPACTS + j] = dir[i].impact_dl[j];
		}
	}
	h->block_offset[nblocks] = payload_bytes;
	pfree(dir);
}

/*
 * upload: gpuir_cuda_segment_upload of h into e->dev (or the failure
 * gpuir.debug_gpu_fault makes up)
 */
static gpuir_cuda_status
upload(const GpuirSegmentHost *h, const GpuirSegmentData *seg, GpuirCacheEntry *e)
{
	gpuir_cuda_status st;

	if (gpuir_debug_gpu_fault == GPUIR_FAULT_UPLOAD_OOM)
		return GPUIR_CUDA_OOM;
	if (gpuir_debug_gpu_fault == GPUIR_FAULT_UPLOAD_ERROR)
		return GPUIR_CUDA_ERROR;
	st = gpuir_cuda_segment_upload((const uint8_t *) h->payload,
								   seg->streams[GPUIR_S_PAYLOAD].nbytes,
								   h->block_last, h->block_offset, h->impact_tf, h->impact_dl,
								   seg->nblocks, h->doclen, NULL, h->prior, seg->prior_max,
								   seg->ndocs, &e->dev);
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
 * of index t->hdr.node), uploading it on a miss.  Returns NULL with the
 * reason in why when the segment cannot be made resident (larger than the
 * budget, CUDA failure).  Raises ERRORs of page reads, corrupt block
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

	e = cache_lookup(key);
	if (e != NULL)
	{
		pg_atomic_fetch_add_u64(&GpuirWorkerDevice->cache_hits, 1);
		return e;
	}

	/* the host copies are sized by the counts: a stream of another size would overflow them */
	if (seg->streams[GPUIR_S_BLOCKDIR].nbytes != (uint64) seg->nblocks * sizeof(GpuirBlockHeader) ||
		seg->streams[GPUIR_S_DOCLENS].nbytes != (uint64) seg->ndocs * sizeof(uint32) ||
		GpuirPriorsSizeCheck(seg) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuir index %u/%u/%u: segment stream sizes do not match the segment directory",
						GPUIR_RELFILE_SPC(t->hdr.node), GPUIR_RELFILE_DB(t->hdr.node), GPUIR_RELFILE_REL(t->hdr.node))));
	bytes = segment_device_bytes(seg);
	if (bytes > cache_budget)
	{
		snprintf(why, whylen, "segment larger than gpuir.device_memory");
		return NULL;
	}
	pg_atomic_fetch_add_u64(&GpuirWorkerDevice->cache_misses, 1);

	load_cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir segment load",
									 ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(load_cxt);
	load_segment(b, t, seg, &h);
	MemoryContextSwitchTo(old);

	/* allocated before the upload, so no palloc failure can leak device memory */
	e = MemoryContextAllocZero(cache_cxt, sizeof(GpuirCacheEntry));
	e->key = *key;
	e->bytes = bytes;

	/* least recently used first, until the segment fits the budget */
	while (cache_bytes + bytes > cache_budget && !dlist_is_empty(&cache_lru))
		cache_remove(dlist_container(GpuirCacheEntry, lru, dlist_tail_node(&cache_lru)));

	st = upload(&h, seg, e);
	if (st == GPUIR_CUDA_OOM && !dlist_is_empty(&cache_lru))
	{
		cache_evict_all(NULL);
		st = upload(&h, seg, e);
	}
	MemoryContextDelete(load_cxt);
	if (st != GPUIR_CUDA_OK)
	{
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
