/*-------------------------------------------------------------------------
 *
 * gpuirworker.c
 *	  The GPU service background worker "gpuir gpu service": the only
 *	  process that touches CUDA (ARCHITECTURE.md, decision 1).  It probes
 *	  the device, gathers the requests of all backends into batches, keeps
 *	  the posting data of recently used segments resident in device memory
 *	  (the list cache) and answers each request with its top-k.
 *
 * The protocol and the shared structures are in gpuirservice.h.  Outline:
 *
 *	startup		publish worker_pid and worker_latch, answer slots an earlier
 *				worker left TAKEN, probe device 0; without a usable device
 *				set device_state NONE, LOG once and idle (exiting would make
 *				the postmaster restart the worker in a loop); else compute
 *				the list cache's budget from gpuir.device_memory and set
 *				device_state READY.
 *	batching	READY slots are marked TAKEN, up to gpuir.max_batch queries
 *				(a single larger request still forms a batch on its own);
 *				while there is room, READY slots arriving within
 *				gpuir.batch_window ms join the batch (Huang et al. 2017
 *				and Wang et al. 2017: batches of queries per launch; the
 *				scan of the slots starts where the last full batch
 *				stopped, so no backend starves).
 *	requests	each request's DSM segment is attached, its header and
 *				arrays are validated and copied to local memory (the
 *				worker never trusts an offset or count it has not checked
 *				against the mapping's length); a request that fails here is
 *				answered FAILED and the backend uses the CPU engine.
 *	list cache	a segment's PAYLOAD, BLOCKDIR and DOCLENS streams are read
 *				from the index pages through the buffer manager
 *				(ReadBufferWithoutRelcache: the worker has no database
 *				connection; the backends hold AccessShareLock on the index
 *				while they wait, so the relfilenode stays valid), the block
 *				directory is turned into the structure of arrays the kernels
 *				take, and the segment is uploaded (Wang et al., ICPADS
 *				2017: a GPU list cache under a memory budget; Ding et al.
 *				2009, section 5: the index stays in GPU memory and queries
 *				are shipped to it).  Entries are keyed by relfilenode,
 *				segment generation and the segment's stream locations and
 *				sizes (segment pages are never rewritten, except the
 *				DELETED bitmap and dictionary df which are not uploaded:
 *				the backend filters deleted rows and visibility itself).
 *				Least recently used entries are freed until a new segment
 *				fits the budget; stale entries (dropped or merged segments)
 *				age out the same way.  A segment larger than the whole
 *				budget is not admitted and its requests fail, so that their
 *				backends use the CPU.
 *	search		items (query, segment) of all requests of the batch that
 *				use the same resident segment with the same BM25 constants
 *				go to one gpuir_cuda_search_batch call.
 *	answer		status and detail are written, then (write barrier) the
 *				slot is set DONE under its mutex if its request id is still
 *				the one taken, and the backend's latch is set.
 *
 * Error handling.  Everything that may raise a PostgreSQL ERROR (DSM
 * attach, page reads, palloc) runs inside PG_TRY blocks that turn the error
 * into a FAILED answer for the requests concerned; no ERROR is raised while
 * a buffer content lock or pin is held by this code, and none can be raised
 * inside a gpuir_cuda_* call (they return status codes), so no longjmp
 * crosses CUDA.  A CUDA failure fails the requests concerned; out of device
 * memory empties the cache and retries once; GPUIR_CUDA_NO_DEVICE, or
 * GPUIR_CUDA_ERROR three times in a row (a sticky CUDA error poisons the
 * context for good), makes the worker exit with status 1 after answering
 * its batch, so that the postmaster restarts it with a fresh context.  On
 * any exit a before_shmem_exit callback answers the taken requests FAILED
 * and unpublishes the worker, so that backends fall back at once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "lib/ilist.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/bufmgr.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/smgr.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "gpuirservice.h"
#include "cuda/gpuir_cuda.h"

/*
 * Lowest compute capability the kernels run on: the Makefile builds sm_90
 * code and compute_75 PTX (NVCC_FLAGS); keep the two in step.
 */
#define GPUIR_MIN_CC			75

/* consecutive GPUIR_CUDA_ERROR failures after which the worker restarts */
#define GPUIR_MAX_DEVICE_ERRORS	3

/* a failure message is logged at most once per this many ms */
#define GPUIR_LOG_INTERVAL_MS	60000
#define GPUIR_LOG_MEMORY		8

/* ---------- the list cache ---------- */

/*
 * A cached segment's identity.  Zeroed before being filled (padding
 * included), so keys compare with memcmp.  Segment pages are never reused
 * for other data while the relfilenode lives, so equal keys mean equal
 * PAYLOAD, BLOCKDIR and DOCLENS bytes.
 */
typedef struct GpuirCacheKey
{
	RelFileNode node;
	uint64		generation;
	BlockNumber payload_start;
	BlockNumber blockdir_start;
	BlockNumber doclens_start;
	uint32		payload_bytes;
	uint32		nblocks;
	uint32		ndocs;
} GpuirCacheKey;

typedef struct GpuirCacheEntry
{
	dlist_node	lru;			/* in cache_lru, most recently used first */
	GpuirCacheKey key;
	gpuir_cuda_segment dev;		/* device arrays */
	uint64		bytes;			/* device bytes of the arrays */
} GpuirCacheEntry;

/* ---------- a batch ---------- */

/* one request taken from a slot */
typedef struct GpuirTaken
{
	/* copied from the slot under its mutex */
	int			slotno;
	uint64		req_id;
	dsm_handle	handle;
	uint32		nqueries;

	bool		answered;		/* slot answered (or found withdrawn) */
	dsm_segment *seg;			/* mapping (pinned: no resource owner) */
	char	   *base;			/* the request in the mapping, or NULL */

	/* validated local copies */
	GpuirRequest hdr;
	GpuirSegmentData *segs;		/* [nsegments] */
	GpuirReqItem *items;		/* [nqueries * nsegments] */
	GpuirReqTerm *terms;		/* [nterms] */
	bool	   *skip;			/* [nitems]: item has no possible result */

	bool		failed;
	char		detail[sizeof(((GpuirRequest *) NULL)->detail)];
} GpuirTaken;

typedef struct GpuirBatch
{
	GpuirTaken *taken;
	int			ntaken;
	int			capacity;
	uint64		nqueries;		/* sum of the taken requests' nqueries */
	bool		read_pages;		/* index pages were read (smgr files opened) */
	bool		restart;		/* the device failed: restart after answering */
} GpuirBatch;

/* one (request, segment) pair with work for the GPU */
typedef struct GpuirUnit
{
	GpuirCacheKey key;
	gpuir_cuda_scoring sc;
	int			t;				/* index in batch->taken */
	int			s;				/* segment of the request */
} GpuirUnit;

/* ---------- worker state ---------- */

static MemoryContext cache_cxt;	/* cache entries */
static MemoryContext batch_cxt;	/* reset after every batch */
static MemoryContext run_cxt;	/* reset after every run */
static ResourceOwner worker_owner;	/* buffer pins of page reads */

static dlist_head cache_lru = DLIST_STATIC_INIT(cache_lru);
static uint64 cache_bytes = 0;	/* device bytes held by cache entries */
static uint64 cache_budget = 0;

static GpuirBatch *current_batch = NULL;	/* for the exit callback */
static int	scan_start = 0;		/* first slot of the next scan */
static int	device_errors = 0;	/* consecutive GPUIR_CUDA_ERROR failures */

static struct
{
	char		msg[160];
	TimestampTz at;
}			log_memory[GPUIR_LOG_MEMORY];
static int	log_next = 0;

/* ---------- small helpers ---------- */

/*
 * note_failure: record msg as the service's last_error (gpuir_status) and
 * LOG it, at most once per GPUIR_LOG_INTERVAL_MS for the same text.
 */
static void
note_failure(const char *msg)
{
	TimestampTz now = GetCurrentTimestamp();
	int			i;

	SpinLockAcquire(&GpuirService->mutex);
	strlcpy(GpuirService->last_error, msg, sizeof(GpuirService->last_error));
	SpinLockRelease(&GpuirService->mutex);

	for (i = 0; i < GPUIR_LOG_MEMORY; i++)
	{
		if (log_memory[i].at != 0 && strncmp(log_memory[i].msg, msg, sizeof(log_memory[i].msg) - 1) == 0)
		{
			if (!TimestampDifferenceExceeds(log_memory[i].at, now, GPUIR_LOG_INTERVAL_MS))
				return;
			break;
		}
	}
	if (i == GPUIR_LOG_MEMORY)
	{
		i = log_next;
		log_next = (log_next + 1) % GPUIR_LOG_MEMORY;
		strlcpy(log_memory[i].msg, msg, sizeof(log_memory[i].msg));
	}
	log_memory[i].at = now;
	ereport(LOG, (errmsg("gpuir gpu service: %s", msg)));
}

/* vfail: mark t FAILED with the first reason given; false if it already was */
static bool
vfail(GpuirTaken *t, const char *fmt, va_list ap)
{
	if (t->failed)
		return false;
	t->failed = true;
	vsnprintf(t->detail, sizeof(t->detail), fmt, ap);
	return true;
}

/* fail_request: mark t FAILED with the first reason given (printf-style) */
static void fail_request(GpuirTaken *t, const char *fmt,...) pg_attribute_printf(2, 3);

static void
fail_request(GpuirTaken *t, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	(void) vfail(t, fmt, ap);
	va_end(ap);
}

/*
 * cuda_failure: describe a failed gpuir_cuda_* call as "what: status:
 * runtime detail" into buf, note it (last_error, rate-limited LOG) and
 * track device health: GPUIR_CUDA_NO_DEVICE, or GPUIR_CUDA_ERROR
 * GPUIR_MAX_DEVICE_ERRORS times in a row, asks for a restart once the batch
 * is answered.
 */
static void
cuda_failure(GpuirBatch *b, const char *what, gpuir_cuda_status st,
			 char *buf, size_t buflen)
{
	const char *rt = gpuir_cuda_last_error_detail();

	if (rt != NULL && rt[0] != '\0' &&
		(st == GPUIR_CUDA_NO_DEVICE || st == GPUIR_CUDA_ERROR || st == GPUIR_CUDA_OOM))
		snprintf(buf, buflen, "%s: %s: %s", what, gpuir_cuda_status_string(st), rt);
	else
		snprintf(buf, buflen, "%s: %s", what, gpuir_cuda_status_string(st));
	note_failure(buf);

	if (st == GPUIR_CUDA_NO_DEVICE)
		b->restart = true;
	else if (st == GPUIR_CUDA_ERROR && ++device_errors >= GPUIR_MAX_DEVICE_ERRORS)
		b->restart = true;
}

/* catch_error: in a PG_CATCH block, undo what an ERROR left and return its message */
static void
catch_error(char *buf, size_t buflen)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(batch_cxt);
	edata = CopyErrorData();
	FlushErrorState();

	/* what an ERROR inside ReadBuffer may leave behind (cf. bgwriter.c) */
	LWLockReleaseAll();
	ConditionVariableCancelSleep();
	pgstat_report_wait_end();
	AbortBufferIO();
	UnlockBuffers();
	ResourceOwnerRelease(worker_owner, RESOURCE_RELEASE_BEFORE_LOCKS, false, false);

	strlcpy(buf, edata->message ? edata->message : "unknown error", buflen);
	note_failure(buf);
	FreeErrorData(edata);
}

/*
 * reject: fail t for a malformed request (a bug on the backend side, or a
 * segment that is not a request): the reason also goes to last_error and
 * the log (rate-limited).
 */
static void reject(GpuirTaken *t, const char *fmt,...) pg_attribute_printf(2, 3);

static void
reject(GpuirTaken *t, const char *fmt,...)
{
	va_list		ap;
	bool		first;

	va_start(ap, fmt);
	first = vfail(t, fmt, ap);
	va_end(ap);
	if (first)
		note_failure(t->detail);
}

/* ---------- device memory budget ---------- */

/*
 * parse_device_memory: the list cache budget for gpuir.device_memory
 * ("4GB", "512 MB", "1.5GB", "100kB", "1024B", "50%"; units B, kB, MB, GB,
 * TB in any case, K/M/G/T alone too, powers of 1024; a share is of total,
 * the card's bytes).  Returns false, with the reason in why, for anything
 * else (a bare number is rejected as ambiguous), for zero and for shares
 * above 100%.  An amount above total is clamped to total.
 */
static bool
parse_device_memory(const char *value, uint64 total, uint64 *budget,
					char *why, size_t whylen)
{
	const char *p = value;
	double		num = 0.0;
	bool		digits = false;
	double		bytes;

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
		if (num <= 0.0 || num > 100.0)
		{
			snprintf(why, whylen, "a share must be above 0%% and at most 100%%");
			return false;
		}
		bytes = (double) total * (num / 100.0);
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
		bytes = num * mult;
	}

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

/* ---------- exit ---------- */

/*
 * answer: answer a taken request once: write its status (OK unless failed)
 * and detail, then, after a write barrier, set its slot DONE if the slot
 * still holds the request id taken, and set the backend's latch.  With
 * detach, unmaps the request.  Raises no ERROR (dsm_detach reports at
 * WARNING).  A request never attached keeps the status PENDING, which the
 * backend reads as "no answer" and falls back.
 */
static void
answer(GpuirTaken *t, bool detach)
{
	GpuirServiceSlot *slot = &GpuirService->slots[t->slotno];
	Latch	   *latch = NULL;

	if (t->answered)
		return;
	t->answered = true;
	if (t->base != NULL)
	{
		GpuirRequest *req = (GpuirRequest *) t->base;

		if (t->failed)
			memcpy(req->detail, t->detail, sizeof(req->detail));
		req->status = t->failed ? GPUIR_REQ_FAILED : GPUIR_REQ_OK;
		pg_write_barrier();
	}
	SpinLockAcquire(&slot->mutex);
	if (slot->req_id == t->req_id && slot->state == GPUIR_SLOT_TAKEN)
	{
		slot->state = GPUIR_SLOT_DONE;
		latch = slot->latch;
	}
	SpinLockRelease(&slot->mutex);
	if (latch != NULL)
		SetLatch(latch);
	if (detach && t->seg != NULL)
	{
		dsm_detach(t->seg);
		t->seg = NULL;
		t->base = NULL;
	}
}

/*
 * worker_exit: before_shmem_exit callback (runs on proc_exit, FATAL, and
 * postmaster death; DSM mappings are still attached at that point).  Drops
 * what an interrupted page read may hold, answers the current batch's
 * unanswered requests FAILED, and unpublishes the worker so that backends
 * stop submitting and fall back.  Device memory goes with the process.
 */
static void
worker_exit(int code, Datum arg)
{
	LWLockReleaseAll();
	AbortBufferIO();
	UnlockBuffers();
	if (worker_owner != NULL)
		ResourceOwnerRelease(worker_owner, RESOURCE_RELEASE_BEFORE_LOCKS, false, false);

	if (current_batch != NULL)
	{
		for (int i = 0; i < current_batch->ntaken; i++)
		{
			GpuirTaken *t = &current_batch->taken[i];

			fail_request(t, "the gpu service is shutting down");
			answer(t, false);
		}
		current_batch = NULL;
	}

	SpinLockAcquire(&GpuirService->mutex);
	GpuirService->worker_pid = 0;
	GpuirService->worker_latch = NULL;
	GpuirService->device_state = GPUIR_DEVSTATE_STARTING;
	SpinLockRelease(&GpuirService->mutex);
	pg_atomic_write_u64(&GpuirService->bytes_cached, 0);
}

/* ---------- startup ---------- */

/*
 * probe_device: look at device 0 and publish what was found: device facts,
 * the budget and READY, or NONE with the reason in last_error (LOG once).
 * Returns whether the device is usable.
 */
static bool
probe_device(void)
{
	gpuir_cuda_status st;
	int			n = 0;
	char		name[sizeof(GpuirService->device_name)];
	size_t		mem = 0;
	int			cc_major = 0,
				cc_minor = 0;
	char		reason[256];
	char		why[128];
	uint64		budget;

	name[0] = '\0';
	st = gpuir_cuda_device_count(&n);
	if (st == GPUIR_CUDA_OK && n < 1)
		st = GPUIR_CUDA_NO_DEVICE;
	if (st == GPUIR_CUDA_OK)
		st = gpuir_cuda_device_info(0, name, sizeof(name), &mem, &cc_major, &cc_minor);
	if (st != GPUIR_CUDA_OK)
	{
		const char *rt = gpuir_cuda_last_error_detail();

		if (rt != NULL && rt[0] != '\0')
			snprintf(reason, sizeof(reason), "%s: %s", gpuir_cuda_status_string(st), rt);
		else
			snprintf(reason, sizeof(reason), "%s", gpuir_cuda_status_string(st));
	}
	else if (cc_major * 10 + cc_minor < GPUIR_MIN_CC)
		snprintf(reason, sizeof(reason),
				 "%s has compute capability %d.%d, gpuir needs %d.%d or later",
				 name, cc_major, cc_minor, GPUIR_MIN_CC / 10, GPUIR_MIN_CC % 10);
	else
		reason[0] = '\0';

	if (reason[0] != '\0')
	{
		SpinLockAcquire(&GpuirService->mutex);
		GpuirService->device_state = GPUIR_DEVSTATE_NONE;
		strlcpy(GpuirService->last_error, reason, sizeof(GpuirService->last_error));
		SpinLockRelease(&GpuirService->mutex);
		ereport(LOG,
				(errmsg("gpuir gpu service: no usable GPU (%s), queries run on the CPU",
						reason)));
		return false;
	}

	if (!parse_device_memory(gpuir_device_memory, (uint64) mem, &budget, why, sizeof(why)))
	{
		ereport(LOG,
				(errmsg("invalid value for parameter \"gpuir.device_memory\": \"%s\"",
						gpuir_device_memory ? gpuir_device_memory : ""),
				 errdetail("%s", why),
				 errhint("Use an amount such as '4GB' or a share such as '50%%'; 50%% is used.")));
		budget = (uint64) mem / 2;
	}
	cache_budget = budget;

	SpinLockAcquire(&GpuirService->mutex);
	strlcpy(GpuirService->device_name, name, sizeof(GpuirService->device_name));
	GpuirService->device_memory = (uint64) mem;
	GpuirService->cc_major = cc_major;
	GpuirService->cc_minor = cc_minor;
	GpuirService->budget = budget;
	GpuirService->last_error[0] = '\0';
	GpuirService->device_state = GPUIR_DEVSTATE_READY;
	SpinLockRelease(&GpuirService->mutex);

	ereport(LOG,
			(errmsg("gpuir gpu service: using %s (compute capability %d.%d, %llu MB), list cache budget %llu MB",
					name, cc_major, cc_minor,
					(unsigned long long) (mem >> 20),
					(unsigned long long) (budget >> 20))));
	return true;
}

/* ---------- the list cache ---------- */

static void
cache_publish(void)
{
	pg_atomic_write_u64(&GpuirService->bytes_cached, cache_bytes);
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
		note_failure(buf);
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
		(uint64) seg->ndocs * sizeof(uint32);	/* doclen */
}

/*
 * read_stream: copy a whole segment stream (nbytes from page start, on
 * consecutive pages, GPUIR_PAGE_DATA bytes per page; src/README,
 * "Segments") of the index with relfilenode node into dst.  Each page is
 * pinned and share-locked only while it is checked (GpuirCheckPage's
 * checks) and copied; errors are raised after the page is released.
 * dst holds the stream's nbytes (cache_get checks the sizes against the
 * segment's counts before allocating).  Raises ERRCODE_INDEX_CORRUPTED for
 * a page that is not a stream page of seg (its tag, GpuirCheckStreamTag),
 * and the buffer manager's errors for unreadable blocks.
 */
static void
read_stream(GpuirBatch *b, const RelFileNode *node, bool permanent,
			const GpuirSegmentData *seg, GpuirStreamKind kind, char *dst)
{
	GpuirStream stream = seg->streams[kind];
	uint32		tag = GpuirSegmentTag(seg->generation);
	uint32		npages = (uint32) (((uint64) stream.nbytes + GPUIR_PAGE_DATA - 1) / GPUIR_PAGE_DATA);

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
							node->spcNode, node->dbNode, node->relNode,
							bad, flags, blkno)));
	}
}

/*
 * cache_get: the resident segment for key (the request's segment seg of
 * index t->hdr.node), uploading it on a miss.  Returns NULL with the reason
 * in why when the segment cannot be made resident (larger than the budget,
 * CUDA failure).  Raises ERRORs of page reads, corrupt block directories
 * and palloc; nothing is left allocated on the device then.
 *
 * Wang et al. 2017 (list caching under a budget, LRU replacement); the
 * host copies live in run_cxt and are freed right after the upload.
 */
static GpuirCacheEntry *
cache_get(GpuirBatch *b, const GpuirCacheKey *key, const GpuirTaken *t,
		  const GpuirSegmentData *seg, char *why, size_t whylen)
{
	GpuirCacheEntry *e;
	uint64		bytes;
	uint32		nblocks = seg->nblocks;
	uint32		ndocs = seg->ndocs;
	uint32		payload_bytes = seg->streams[GPUIR_S_PAYLOAD].nbytes;
	MemoryContext load_cxt;
	MemoryContext old;
	char	   *payload;
	GpuirBlockHeader *dir;
	uint32	   *block_last;
	uint32	   *block_offset;
	uint32	   *impact_tf;
	uint32	   *impact_dl;
	uint32	   *doclen;
	gpuir_cuda_status st;

	e = cache_lookup(key);
	if (e != NULL)
	{
		pg_atomic_fetch_add_u64(&GpuirService->cache_hits, 1);
		return e;
	}

	/* the host copies below are sized by the counts: a stream of another size would overflow them */
	if (seg->streams[GPUIR_S_BLOCKDIR].nbytes != (uint64) nblocks * sizeof(GpuirBlockHeader) ||
		seg->streams[GPUIR_S_DOCLENS].nbytes != (uint64) ndocs * sizeof(uint32))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuir index %u/%u/%u: segment stream sizes do not match the segment directory",
						t->hdr.node.spcNode, t->hdr.node.dbNode, t->hdr.node.relNode)));
	bytes = segment_device_bytes(seg);
	if (bytes > cache_budget)
	{
		snprintf(why, whylen, "segment larger than gpuir.device_memory");
		return NULL;
	}
	pg_atomic_fetch_add_u64(&GpuirService->cache_misses, 1);

	/* host copies, structure of arrays (src/README, "Segments") */
	load_cxt = AllocSetContextCreate(run_cxt, "gpuir segment load", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(load_cxt);
	payload = palloc_extended(Max(payload_bytes, 1), MCXT_ALLOC_HUGE);
	read_stream(b, &t->hdr.node, t->hdr.permanent, seg, GPUIR_S_PAYLOAD, payload);
	dir = palloc_extended(Max((Size) nblocks * sizeof(GpuirBlockHeader), 1), MCXT_ALLOC_HUGE);
	read_stream(b, &t->hdr.node, t->hdr.permanent, seg, GPUIR_S_BLOCKDIR, (char *) dir);
	doclen = palloc_extended(Max((Size) ndocs * sizeof(uint32), 1), MCXT_ALLOC_HUGE);
	read_stream(b, &t->hdr.node, t->hdr.permanent, seg, GPUIR_S_DOCLENS, (char *) doclen);

	block_last = palloc_extended(Max((Size) nblocks * sizeof(uint32), 1), MCXT_ALLOC_HUGE);
	block_offset = palloc_extended(((Size) nblocks + 1) * sizeof(uint32), MCXT_ALLOC_HUGE);
	impact_tf = palloc_extended(Max((Size) nblocks * GPUIR_CUDA_BLOCK_IMPACTS * sizeof(uint32), 1),
								MCXT_ALLOC_HUGE);
	impact_dl = palloc_extended(Max((Size) nblocks * GPUIR_CUDA_BLOCK_IMPACTS * sizeof(uint32), 1),
								MCXT_ALLOC_HUGE);
	StaticAssertStmt(GPUIR_BLOCK_IMPACTS == GPUIR_CUDA_BLOCK_IMPACTS,
					 "impacts per block differ between src/ and cuda/");
	for (uint32 i = 0; i < nblocks; i++)
	{
		if (dir[i].payload_off > payload_bytes ||
			(i > 0 && dir[i].payload_off < dir[i - 1].payload_off))
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("gpuir index %u/%u/%u: block %u of a segment has payload offset %u out of order or past %u bytes",
							t->hdr.node.spcNode, t->hdr.node.dbNode, t->hdr.node.relNode,
							i, dir[i].payload_off, payload_bytes)));
		block_last[i] = dir[i].last_docid;
		block_offset[i] = dir[i].payload_off;
		for (int j = 0; j < GPUIR_BLOCK_IMPACTS; j++)
		{
			impact_tf[(Size) i * GPUIR_CUDA_BLOCK_IMPACTS + j] = dir[i].impact_tf[j];
			impact_dl[(Size) i * GPUIR_CUDA_BLOCK_IMPACTS + j] = dir[i].impact_dl[j];
		}
	}
	block_offset[nblocks] = payload_bytes;
	pfree(dir);
	MemoryContextSwitchTo(old);

	/* allocated before the upload, so no palloc failure can leak device memory */
	e = MemoryContextAllocZero(cache_cxt, sizeof(GpuirCacheEntry));
	e->key = *key;
	e->bytes = bytes;

	/* least recently used first, until the segment fits the budget */
	while (cache_bytes + bytes > cache_budget && !dlist_is_empty(&cache_lru))
		cache_remove(dlist_container(GpuirCacheEntry, lru, dlist_tail_node(&cache_lru)));

	st = gpuir_cuda_segment_upload((const uint8_t *) payload, payload_bytes,
								   block_last, block_offset, impact_tf, impact_dl,
								   nblocks, doclen, NULL, ndocs, &e->dev);
	if (st == GPUIR_CUDA_OOM && !dlist_is_empty(&cache_lru))
	{
		cache_evict_all(NULL);
		st = gpuir_cuda_segment_upload((const uint8_t *) payload, payload_bytes,
									   block_last, block_offset, impact_tf, impact_dl,
									   nblocks, doclen, NULL, ndocs, &e->dev);
	}
	MemoryContextDelete(load_cxt);
	if (st != GPUIR_CUDA_OK)
	{
		pfree(e);
		cuda_failure(b, "segment upload", st, why, whylen);
		return NULL;
	}
	device_errors = 0;
	dlist_push_head(&cache_lru, &e->lru);
	cache_bytes += bytes;
	cache_publish();
	return e;
}

/* ---------- requests ---------- */

/* range_ok: count elements of elsize bytes at off lie after the header, inside size */
static bool
range_ok(uint64 off, uint64 count, uint64 elsize, uint64 size)
{
	return off >= sizeof(GpuirRequest) && off <= size && count * elsize <= size - off;
}

/* stream_ok: a stream of a segment lies on existing block numbers past the metapage */
static bool
stream_ok(GpuirStream s)
{
	uint64		npages = ((uint64) s.nbytes + GPUIR_PAGE_DATA - 1) / GPUIR_PAGE_DATA;

	if (npages == 0)
		return true;
	return s.start != InvalidBlockNumber && s.start > GPUIR_METAPAGE_BLKNO &&
		(uint64) s.start + npages - 1 <= MaxBlockNumber;
}

/*
 * prepare_request: attach t's DSM segment and validate the request: header
 * (magic, counts, kmax <= GPUIR_CUDA_MAX_K, BM25 constants), every array
 * inside the mapping, items (term ranges, k, mode), terms (block ranges
 * inside their segment's nblocks, nblocks = ceil(npostings / 128), finite
 * idf) and the streams of the segments that have work.  Copies header,
 * segments, items and terms into batch_cxt, marks the items with no
 * possible result in t->skip and zeroes every item's count in the request.
 * A problem fails t (detail set); ERRORs (dsm_attach, palloc) propagate to
 * the caller's PG_TRY.
 */
static void
prepare_request(GpuirTaken *t)
{
	GpuirServiceSlot *slot = &GpuirService->slots[t->slotno];
	GpuirRequest *h = &t->hdr;
	bool		ours;
	Size		size;
	uint64		nitems;

	/* a withdrawn request needs no answer, and its handle may be gone */
	SpinLockAcquire(&slot->mutex);
	ours = slot->req_id == t->req_id && slot->state == GPUIR_SLOT_TAKEN;
	SpinLockRelease(&slot->mutex);
	if (!ours)
	{
		t->answered = true;
		t->failed = true;
		return;
	}

	t->seg = dsm_attach(t->handle);
	if (t->seg == NULL)
	{
		/* the backend gave up and destroyed the segment */
		fail_request(t, "request withdrawn");
		return;
	}
	dsm_pin_mapping(t->seg);	/* detached explicitly, never by a resource owner */
	t->base = dsm_segment_address(t->seg);
	size = dsm_segment_map_length(t->seg);

	if (size < sizeof(GpuirRequest))
	{
		t->base = NULL;			/* not a request: write nothing into it */
		reject(t, "request segment too small");
		return;
	}
	memcpy(h, t->base, sizeof(GpuirRequest));
	if (h->magic != GPUIR_REQ_MAGIC)
	{
		t->base = NULL;
		reject(t, "bad request magic");
		return;
	}
	nitems = (uint64) h->nqueries * h->nsegments;
	if (h->nsegments > GPUIR_MAX_SEGMENTS)
	{
		reject(t, "bad request: %u segments", h->nsegments);
		return;
	}
	if (h->kmax < 1 || h->kmax > GPUIR_CUDA_MAX_K)
	{
		reject(t, "bad request: kmax %u out of range", h->kmax);
		return;
	}
	if (!isfinite(h->k1) || h->k1 < 0.0f || !isfinite(h->b) || h->b < 0.0f || h->b > 1.0f ||
		!isfinite(h->avgdl) || h->avgdl <= 0.0f)
	{
		reject(t, "bad request: BM25 constants k1 %g, b %g, avgdl %g",
				h->k1, h->b, h->avgdl);
		return;
	}
	if (!range_ok(h->segs_off, h->nsegments, sizeof(GpuirSegmentData), size) ||
		!range_ok(h->items_off, nitems, sizeof(GpuirReqItem), size) ||
		!range_ok(h->terms_off, h->nterms, sizeof(GpuirReqTerm), size) ||
		!range_ok(h->docids_off, nitems * h->kmax, sizeof(uint32), size) ||
		!range_ok(h->scores_off, nitems * h->kmax, sizeof(float4), size))
	{
		reject(t, "bad request: an array lies outside its %zu-byte segment", size);
		return;
	}

	t->segs = palloc(Max(sizeof(GpuirSegmentData) * h->nsegments, 1));
	memcpy(t->segs, t->base + h->segs_off, sizeof(GpuirSegmentData) * h->nsegments);
	t->items = palloc_extended(Max(sizeof(GpuirReqItem) * nitems, 1), MCXT_ALLOC_HUGE);
	memcpy(t->items, t->base + h->items_off, sizeof(GpuirReqItem) * nitems);
	t->terms = palloc_extended(Max(sizeof(GpuirReqTerm) * (Size) h->nterms, 1), MCXT_ALLOC_HUGE);
	memcpy(t->terms, t->base + h->terms_off, sizeof(GpuirReqTerm) * (Size) h->nterms);
	t->skip = palloc_extended(Max(nitems, 1), MCXT_ALLOC_HUGE);

	for (uint32 s = 0; s < h->nsegments; s++)
	{
		const GpuirSegmentData *seg = &t->segs[s];
		bool		used = false;

		for (uint32 q = 0; q < h->nqueries; q++)
		{
			uint64		idx = (uint64) q * h->nsegments + s;
			const GpuirReqItem *it = &t->items[idx];
			uint32		absent = 0;

			if ((uint64) it->first_term + it->nterms > h->nterms)
			{
				reject(t, "bad request: item %llu has terms past %u",
						(unsigned long long) idx, h->nterms);
				return;
			}
			if (it->k > h->kmax)
			{
				reject(t, "bad request: item %llu has k %u above kmax %u",
						(unsigned long long) idx, it->k, h->kmax);
				return;
			}
			if (it->mode != GPUIR_CUDA_MODE_AND && it->mode != GPUIR_CUDA_MODE_OR &&
				it->mode != GPUIR_CUDA_MODE_BMW)
			{
				reject(t, "bad request: item %llu has mode %d",
						(unsigned long long) idx, it->mode);
				return;
			}
			for (uint32 i = 0; i < it->nterms; i++)
			{
				const GpuirReqTerm *term = &t->terms[it->first_term + i];

				if ((uint64) term->first_block + term->nblocks > seg->nblocks ||
					term->nblocks != (term->npostings + (uint64) GPUIR_CUDA_BLOCK_SIZE - 1) / GPUIR_CUDA_BLOCK_SIZE ||
					!isfinite(term->idf))
				{
					reject(t, "bad request: term %u of item %llu does not fit segment %u",
							i, (unsigned long long) idx, s);
					return;
				}
				if (term->nblocks == 0)
					absent++;
			}

			/*
			 * Items the kernel would answer with no document anyway (no
			 * term, k = 0, an AND with an absent term, all terms absent)
			 * are not sent; their segment need not be resident for them.
			 */
			t->skip[idx] = it->k == 0 || it->nterms == 0 || absent == it->nterms ||
				(it->mode == GPUIR_CUDA_MODE_AND && absent > 0);
			if (!t->skip[idx])
				used = true;
		}
		if (used &&
			((uint64) seg->streams[GPUIR_S_BLOCKDIR].nbytes != (uint64) seg->nblocks * sizeof(GpuirBlockHeader) ||
			 (uint64) seg->streams[GPUIR_S_DOCLENS].nbytes != (uint64) seg->ndocs * sizeof(uint32) ||
			 seg->ndocs > 0xFFFFFFFEu ||
			 !stream_ok(seg->streams[GPUIR_S_PAYLOAD]) ||
			 !stream_ok(seg->streams[GPUIR_S_BLOCKDIR]) ||
			 !stream_ok(seg->streams[GPUIR_S_DOCLENS])))
		{
			reject(t, "bad request: segment %u has inconsistent streams", s);
			return;
		}
	}

	/* every item starts with no result */
	for (uint64 idx = 0; idx < nitems; idx++)
	{
		uint32		zero = 0;

		memcpy(t->base + h->items_off + idx * sizeof(GpuirReqItem) + offsetof(GpuirReqItem, count),
			   &zero, sizeof(uint32));
	}
}

/* prepare_request_guarded: prepare_request, an ERROR failing only t */
static void
prepare_request_guarded(GpuirTaken *t)
{
	PG_TRY();
	{
		prepare_request(t);
	}
	PG_CATCH();
	{
		char		msg[sizeof(t->detail)];

		catch_error(msg, sizeof(msg));
		fail_request(t, "%s", msg);
	}
	PG_END_TRY();
}

/* ---------- runs: one resident segment, one set of BM25 constants ---------- */

/* unit_cmp: order units by segment key, then constants, then request and segment */
static int
unit_cmp(const void *a, const void *b)
{
	const GpuirUnit *ua = a;
	const GpuirUnit *ub = b;
	int			r;

	r = memcmp(&ua->key, &ub->key, sizeof(GpuirCacheKey));
	if (r != 0)
		return r;
	r = memcmp(&ua->sc, &ub->sc, sizeof(gpuir_cuda_scoring));
	if (r != 0)
		return r;
	if (ua->t != ub->t)
		return ua->t < ub->t ? -1 : 1;
	return (ua->s > ub->s) - (ua->s < ub->s);
}

/*
 * run_search: the items of units[0 .. n) (same segment key, same BM25
 * constants) of the requests not yet failed, in one gpuir_cuda_search_batch
 * call over the resident segment (Huang et al. 2017: batches of queries
 * per launch).  Writes counts, docIDs and scores into the requests;
 * fails every request of the run when the segment cannot be made resident
 * or the search fails.  ERRORs propagate to run_search_guarded.
 */
static void
run_search(GpuirBatch *b, GpuirUnit *units, int n)
{
	GpuirTaken *t0 = NULL;
	const GpuirSegmentData *seg0 = NULL;
	uint32		nq = 0;
	uint64		nterms = 0;
	uint32		kmax = 1;
	gpuir_cuda_query *queries;
	gpuir_cuda_term *terms;
	uint32	   *out_docids;
	float	   *out_scores;
	uint32	   *out_counts;
	GpuirCacheEntry *e;
	gpuir_cuda_status st;
	char		why[sizeof(((GpuirRequest *) NULL)->detail)];
	uint32		qi;
	uint32		ti;

	/* what the live requests ask */
	for (int u = 0; u < n; u++)
	{
		GpuirTaken *t = &b->taken[units[u].t];
		int			s = units[u].s;

		if (t->failed)
			continue;
		if (t0 == NULL)
		{
			t0 = t;
			seg0 = &t->segs[s];
		}
		for (uint32 q = 0; q < t->hdr.nqueries; q++)
		{
			uint64		idx = (uint64) q * t->hdr.nsegments + s;

			if (t->skip[idx])
				continue;
			nq++;
			nterms += t->items[idx].nterms;
			kmax = Max(kmax, t->items[idx].k);
		}
	}
	if (nq == 0)
		return;
	if (nterms > PG_UINT32_MAX)
	{
		snprintf(why, sizeof(why), "batch has too many terms");
		goto fail;
	}

	e = cache_get(b, &units[0].key, t0, seg0, why, sizeof(why));
	if (e == NULL)
		goto fail;

	queries = palloc_extended(sizeof(gpuir_cuda_query) * (Size) nq, MCXT_ALLOC_HUGE);
	terms = palloc_extended(Max(sizeof(gpuir_cuda_term) * (Size) nterms, 1), MCXT_ALLOC_HUGE);
	out_docids = palloc_extended(sizeof(uint32) * (Size) nq * kmax, MCXT_ALLOC_HUGE);
	out_scores = palloc_extended(sizeof(float) * (Size) nq * kmax, MCXT_ALLOC_HUGE);
	out_counts = palloc_extended(sizeof(uint32) * (Size) nq, MCXT_ALLOC_HUGE);

	StaticAssertStmt(sizeof(GpuirReqTerm) == sizeof(gpuir_cuda_term),
					 "GpuirReqTerm must have gpuir_cuda_term's layout");
	qi = 0;
	ti = 0;
	for (int u = 0; u < n; u++)
	{
		GpuirTaken *t = &b->taken[units[u].t];
		int			s = units[u].s;

		if (t->failed)
			continue;
		for (uint32 q = 0; q < t->hdr.nqueries; q++)
		{
			uint64		idx = (uint64) q * t->hdr.nsegments + s;
			const GpuirReqItem *it = &t->items[idx];

			if (t->skip[idx])
				continue;
			queries[qi].first_term = ti;
			queries[qi].nterms = it->nterms;
			queries[qi].k = it->k;
			queries[qi].mode = it->mode;
			for (uint32 i = 0; i < it->nterms; i++)
			{
				const GpuirReqTerm *rt = &t->terms[it->first_term + i];

				terms[ti].first_block = rt->first_block;
				terms[ti].nblocks = rt->nblocks;
				terms[ti].npostings = rt->npostings;
				terms[ti].idf = rt->idf;
				ti++;
			}
			qi++;
		}
	}

	st = gpuir_cuda_search_batch(&e->dev, &units[0].sc, queries, nq, terms, (uint32) nterms,
								 kmax, out_docids, out_scores, out_counts, NULL);
	if (st == GPUIR_CUDA_OOM && dlist_head_node(&cache_lru) != dlist_tail_node(&cache_lru))
	{
		/* make room for the search's workspace and try once more */
		cache_evict_all(e);
		st = gpuir_cuda_search_batch(&e->dev, &units[0].sc, queries, nq, terms, (uint32) nterms,
									 kmax, out_docids, out_scores, out_counts, NULL);
	}
	if (st != GPUIR_CUDA_OK)
	{
		cuda_failure(b, "search", st, why, sizeof(why));
		goto fail;
	}
	device_errors = 0;

	/* the results, into each request at [item * kmax ...) */
	qi = 0;
	for (int u = 0; u < n; u++)
	{
		GpuirTaken *t = &b->taken[units[u].t];
		const GpuirRequest *h = &t->hdr;
		int			s = units[u].s;

		if (t->failed)
			continue;
		for (uint32 q = 0; q < h->nqueries; q++)
		{
			uint64		idx = (uint64) q * h->nsegments + s;
			uint32		count;

			if (t->skip[idx])
				continue;
			count = Min(out_counts[qi], t->items[idx].k);
			memcpy(t->base + h->docids_off + idx * h->kmax * sizeof(uint32),
				   &out_docids[(Size) qi * kmax], count * sizeof(uint32));
			memcpy(t->base + h->scores_off + idx * h->kmax * sizeof(float4),
				   &out_scores[(Size) qi * kmax], count * sizeof(float4));
			memcpy(t->base + h->items_off + idx * sizeof(GpuirReqItem) + offsetof(GpuirReqItem, count),
				   &count, sizeof(uint32));
			qi++;
		}
	}
	return;

fail:
	for (int u = 0; u < n; u++)
		fail_request(&b->taken[units[u].t], "%s", why);
}

/* run_search_guarded: run_search, an ERROR failing the run's requests */
static void
run_search_guarded(GpuirBatch *b, GpuirUnit *units, int n)
{
	MemoryContext old = MemoryContextSwitchTo(run_cxt);

	PG_TRY();
	{
		run_search(b, units, n);
	}
	PG_CATCH();
	{
		char		msg[sizeof(((GpuirRequest *) NULL)->detail)];

		catch_error(msg, sizeof(msg));
		for (int u = 0; u < n; u++)
			fail_request(&b->taken[units[u].t], "%s", msg);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextReset(run_cxt);
}

/*
 * run_batch: validate the batch's requests, group their (request, segment)
 * pairs by segment key and BM25 constants (sorted, so that runs of the same
 * segment follow each other and it stays resident between them), run each
 * group, then answer every request and count the batch.
 */
static void
run_batch(GpuirBatch *b)
{
	GpuirUnit  *units;
	int			nunits = 0;
	int			maxunits = 0;

	for (int i = 0; i < b->ntaken; i++)
		prepare_request_guarded(&b->taken[i]);

	for (int i = 0; i < b->ntaken; i++)
		if (!b->taken[i].failed)
			maxunits += b->taken[i].hdr.nsegments;
	units = palloc(sizeof(GpuirUnit) * Max(maxunits, 1));
	for (int i = 0; i < b->ntaken; i++)
	{
		GpuirTaken *t = &b->taken[i];
		const GpuirRequest *h = &t->hdr;

		if (t->failed)
			continue;
		for (uint32 s = 0; s < h->nsegments; s++)
		{
			const GpuirSegmentData *seg = &t->segs[s];
			GpuirUnit  *u = &units[nunits];
			bool		work = false;

			for (uint32 q = 0; q < h->nqueries && !work; q++)
				work = !t->skip[(uint64) q * h->nsegments + s];
			if (!work)
				continue;
			memset(u, 0, sizeof(GpuirUnit));
			u->key.node = h->node;
			u->key.generation = seg->generation;
			u->key.payload_start = seg->streams[GPUIR_S_PAYLOAD].start;
			u->key.blockdir_start = seg->streams[GPUIR_S_BLOCKDIR].start;
			u->key.doclens_start = seg->streams[GPUIR_S_DOCLENS].start;
			u->key.payload_bytes = seg->streams[GPUIR_S_PAYLOAD].nbytes;
			u->key.nblocks = seg->nblocks;
			u->key.ndocs = seg->ndocs;
			u->sc.k1 = h->k1;
			u->sc.b = h->b;
			u->sc.avgdl = h->avgdl;
			u->t = i;
			u->s = (int) s;
			nunits++;
		}
	}
	if (nunits > 1)
		qsort(units, nunits, sizeof(GpuirUnit), unit_cmp);

	for (int first = 0; first < nunits;)
	{
		int			end = first + 1;

		/* a run: same key and constants (the request and segment may differ) */
		while (end < nunits &&
			   memcmp(&units[first].key, &units[end].key, sizeof(GpuirCacheKey)) == 0 &&
			   memcmp(&units[first].sc, &units[end].sc, sizeof(gpuir_cuda_scoring)) == 0)
			end++;
		run_search_guarded(b, &units[first], end - first);
		first = end;
	}

	/* the next batch opens files afresh: no descriptor of a dropped relation lingers */
	if (b->read_pages)
		smgrcloseall();

	for (int i = 0; i < b->ntaken; i++)
		answer(&b->taken[i], true);

	pg_atomic_fetch_add_u64(&GpuirService->batches, 1);
	pg_atomic_fetch_add_u64(&GpuirService->batched_queries, b->nqueries);
}

/* ---------- gathering ---------- */

/*
 * take_ready: mark READY slots TAKEN into b, starting at scan_start, while
 * the batch holds fewer than gpuir.max_batch queries (the first request is
 * always taken).  A request that does not fit stops the scan and is the
 * first one looked at next time.  Returns true when b is full.
 */
static bool
take_ready(GpuirBatch *b)
{
	int			nslots = GpuirService->nslots;

	for (int i = 0; i < nslots; i++)
	{
		int			idx = (scan_start + i) % nslots;
		GpuirServiceSlot *slot = &GpuirService->slots[idx];
		GpuirTaken *t;
		bool		full = false;

		/* unlocked peek; the state is checked again under the mutex */
		if (*((volatile int *) &slot->state) != GPUIR_SLOT_READY)
			continue;

		if (b->ntaken == b->capacity)
		{
			b->capacity *= 2;
			b->taken = repalloc(b->taken, sizeof(GpuirTaken) * b->capacity);
		}
		t = &b->taken[b->ntaken];
		memset(t, 0, sizeof(GpuirTaken));

		SpinLockAcquire(&slot->mutex);
		if (slot->state == GPUIR_SLOT_READY)
		{
			if (b->ntaken > 0 && b->nqueries + slot->nqueries > (uint64) gpuir_max_batch)
				full = true;
			else
			{
				slot->state = GPUIR_SLOT_TAKEN;
				t->slotno = idx;
				t->req_id = slot->req_id;
				t->handle = slot->handle;
				t->nqueries = slot->nqueries;
				b->ntaken++;
				b->nqueries += t->nqueries;
			}
		}
		SpinLockRelease(&slot->mutex);

		if (full || b->nqueries >= (uint64) gpuir_max_batch)
		{
			scan_start = full ? idx : (idx + 1) % nslots;
			return true;
		}
	}
	return false;
}

/*
 * gather_batch: take what is READY now and, while there is room, what
 * arrives within gpuir.batch_window ms (waiting on the worker's latch,
 * which backends set when they submit).  Returns false when nothing was
 * taken.  The batch is current_batch from the first take, so that an exit
 * during the window answers it.
 */
static bool
gather_batch(GpuirBatch *b)
{
	TimestampTz deadline;
	bool		full;

	full = take_ready(b);
	if (b->ntaken == 0)
		return false;
	if (full || gpuir_batch_window <= 0)
		return true;

	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), gpuir_batch_window);
	for (;;)
	{
		long		ms = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);

		if (ms <= 0)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (take_ready(b))
			break;
	}
	return true;
}

/* ---------- main ---------- */

/*
 * GpuirWorkerMain: entry point of the background worker "gpuir gpu
 * service" (registered by GpuirServiceInit with BGWORKER_SHMEM_ACCESS, no
 * database connection).  Never returns: exits on SIGTERM (die), on
 * postmaster death, or with status 1 after a device failure so that the
 * postmaster restarts it with a fresh CUDA context.
 */
void
GpuirWorkerMain(Datum arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (GpuirService == NULL)
		ereport(ERROR,
				(errmsg("gpuir gpu service started without its shared memory"),
				 errhint("Add gpuir to shared_preload_libraries.")));

	CurrentResourceOwner = ResourceOwnerCreate(NULL, "gpuir gpu service");
	worker_owner = CurrentResourceOwner;
	cache_cxt = AllocSetContextCreate(TopMemoryContext, "gpuir list cache",
									  ALLOCSET_SMALL_SIZES);
	batch_cxt = AllocSetContextCreate(TopMemoryContext, "gpuir batch",
									  ALLOCSET_DEFAULT_SIZES);
	/* not a child of batch_cxt: resetting a context deletes its children */
	run_cxt = AllocSetContextCreate(TopMemoryContext, "gpuir run", ALLOCSET_DEFAULT_SIZES);

	before_shmem_exit(worker_exit, (Datum) 0);

	SpinLockAcquire(&GpuirService->mutex);
	GpuirService->worker_pid = MyProcPid;
	GpuirService->worker_latch = MyLatch;
	GpuirService->device_state = GPUIR_DEVSTATE_STARTING;
	SpinLockRelease(&GpuirService->mutex);

	/* requests an earlier worker took but did not answer: no answer (PENDING) */
	for (int i = 0; i < GpuirService->nslots; i++)
	{
		GpuirServiceSlot *slot = &GpuirService->slots[i];
		Latch	   *latch = NULL;

		SpinLockAcquire(&slot->mutex);
		if (slot->state == GPUIR_SLOT_TAKEN)
		{
			slot->state = GPUIR_SLOT_DONE;
			latch = slot->latch;
		}
		SpinLockRelease(&slot->mutex);
		if (latch != NULL)
			SetLatch(latch);
	}

	(void) probe_device();

	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/* without a device, backends do not submit (they see NONE) */
		if (GpuirService->device_state != GPUIR_DEVSTATE_READY)
			continue;

		for (;;)
		{
			MemoryContext old = MemoryContextSwitchTo(batch_cxt);
			GpuirBatch *b = palloc0(sizeof(GpuirBatch));
			bool		restart;

			b->capacity = 16;
			b->taken = palloc(sizeof(GpuirTaken) * b->capacity);
			current_batch = b;
			if (!gather_batch(b))
			{
				current_batch = NULL;
				MemoryContextSwitchTo(old);
				MemoryContextReset(batch_cxt);
				break;
			}
			run_batch(b);
			restart = b->restart;
			current_batch = NULL;
			MemoryContextSwitchTo(old);
			MemoryContextReset(batch_cxt);

			if (restart)
			{
				ereport(LOG,
						(errmsg("gpuir gpu service: restarting after device failures")));
				proc_exit(1);
			}
			CHECK_FOR_INTERRUPTS();
		}
	}
}
