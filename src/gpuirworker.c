/*-------------------------------------------------------------------------
 *
 * gpuirworker.c
 *	  The GPU service background worker "gpuir gpu service": the only
 *	  process that touches CUDA (ARCHITECTURE.md, decision 1).  It probes
 *	  the device, gathers the requests of all backends into batches, keeps
 *	  the posting data of recently used segments resident in device memory
 *	  (the list cache, gpuircache.c) and answers each request with its
 *	  top-k.
 *
 * The protocol and the shared structures are in gpuirservice.h, the
 * worker's private ones in gpuirworker_int.h.  Outline:
 *
 *	devices		one worker per device of gpuir.devices, each with its own
 *				CUDA context, streams, workspace and list cache; its
 *				argument is the device's index in GpuirService->devices.
 *				Device 0's worker is registered at preload; it counts the
 *				visible devices, resolves gpuir.devices into
 *				GpuirService->devices and registers the others' workers
 *				(dynamic background workers, restarted like it).  All
 *				workers take requests from the same slots: a request goes
 *				to the first device free to take it, so whole queries are
 *				spread over the devices by their load; a request in parts
 *				(one long query, gpuir.gpu_split_postings) is taken one
 *				part per worker, each part a docID window of the segments
 *				(README, "Several GPUs").
 *	startup		publish worker_pid and worker_latch, answer the slots its
 *				predecessor on this device left TAKEN, probe the device;
 *				without a usable device set device_state NONE, LOG once and
 *				idle (exiting would make the postmaster restart the worker
 *				in a loop); else compute the list cache's budget from
 *				gpuir.device_memory and set device_state READY.
 *	batching	as soon as the worker is free, the READY slots are marked
 *				TAKEN, up to gpuir.max_batch queries (a single larger
 *				request still forms a batch on its own): continuous
 *				batching, the batch is what arrived while the last one
 *				ran.  Under load (fewer queries ready than the last batch
 *				held) READY slots arriving within gpuir.batch_window ms
 *				may join (Huang et al. 2017 and Wang et al. 2017: batches
 *				of queries per launch; the scan of the slots starts where
 *				the last full batch stopped, so no backend starves).
 *				With nothing to do it polls the slots for
 *				gpuir.worker_spin us while few backends search, then
 *				sleeps on its latch (idle_spin).
 *	requests	each request is mapped (its slot's area, which the worker
 *				holds until it answers, or its DSM segment), its header
 *				and arrays are validated and copied to local memory
 *				(gpuirrequest.c); a request that fails here is answered
 *				FAILED and the backend uses the CPU engine.
 *	stages		the time of each stage (queue, window, prepare, cache,
 *				search, answer) is added to shared counters that
 *				gpuir_gpu_stages() shows.
 *	list cache	a segment's PAYLOAD, BLOCKDIR and DOCLENS streams are read
 *				from the index pages, checked and uploaded, and stay
 *				resident under the budget, least recently used first out
 *				(gpuircache.c).  A segment larger than the whole budget is
 *				not admitted and its requests fail, so that their backends
 *				use the CPU.  The backend filters deleted rows and
 *				visibility itself.
 *	search		items (query, segment) of all requests of the batch that
 *				use the same resident segment with the same BM25 constants
 *				go to one gpuir_cuda_search_batch call.
 *	answer		status and detail are written, then (write barrier) the
 *				slot is set DONE under its mutex if its request id is still
 *				the one taken, and the backend is woken (its slot's
 *				done semaphore posted); with gpuir.wake_fanout, while
 *				few backends run the CPU engine, only the first of a
 *				batch, the woken backends waking the others
 *				(answer_chained).
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

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/bufmgr.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/smgr.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "gpuirworker_int.h"

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

/* one (request, segment) pair with work for the GPU */
typedef struct GpuirUnit
{
	GpuirCacheKey key;
	gpuir_cuda_scoring sc;
	int			part;			/* docID window part of nparts of the segment */
	int			nparts;
	int			t;				/* index in batch->taken */
	int			s;				/* segment of the request */
} GpuirUnit;

/* ---------- worker state ---------- */

/*
 * Batches in flight (double buffering): with two search jobs (each a
 * workspace and a CUDA stream, gpuir_cuda.h), a batch whose items all go to
 * one search call is started on a free job and answered once the device
 * has finished it, while the worker gathers, prepares and starts the next
 * batch on the other job: the host's work for one batch and the kernels of
 * two overlap.  A batch of several runs, or of another segment than the
 * one in flight, first waits for the batches in flight and then runs as
 * before, one run at a time.  Without jobs (they could not be made) every
 * batch runs that way.
 */
#define GPUIR_JOBS				2
StaticAssertDecl(GPUIR_JOBS <= GPUIR_CUDA_TRANSIT_SLOTS,
				 "a job's search reads the transit's assembly slot of its number");

/* the in-flight search of a batch (GpuirBatch.flight) */
typedef struct GpuirFlight
{
	GpuirUnit  *units;			/* the batch's one run */
	int			nunits;
	struct GpuirRunArrays *ra;
	TimestampTz started;
} GpuirFlight;

static MemoryContext batch_cxts[GPUIR_JOBS];	/* a batch's, reset after it is answered */
static MemoryContext run_cxt;	/* reset after every run */
static gpuir_cuda_search_job *jobs[GPUIR_JOBS];	/* NULL: no pipelining */
static GpuirBatch *inflight[GPUIR_JOBS];	/* the batch started on each job */
static ResourceOwner worker_owner;	/* buffer pins of page reads */

static int	my_index = 0;		/* this worker's device: GpuirService->devices[my_index] */
GpuirServiceDevice *GpuirWorkerDevice = NULL;	/* &GpuirService->devices[my_index] */
static GpuirBatch *current_batch = NULL;	/* for the exit callback */
static int	scan_start = 0;		/* first slot of the next scan */
static int	device_errors = 0;	/* consecutive GPUIR_CUDA_ERROR failures */

static struct
{
	char		msg[160];
	TimestampTz at;
}			log_memory[GPUIR_LOG_MEMORY];
static int	log_next = 0;

/* ---------- failures (gpuirworker_int.h) ---------- */

/*
 * GpuirWorkerNoteFailure: record msg as the service's last_error
 * (gpuir_status) and LOG it, at most once per GPUIR_LOG_INTERVAL_MS for the
 * same text.
 */
void
GpuirWorkerNoteFailure(const char *msg)
{
	TimestampTz now = GetCurrentTimestamp();
	int			i;

	SpinLockAcquire(&GpuirService->mutex);
	strlcpy(GpuirWorkerDevice->last_error, msg, sizeof(GpuirWorkerDevice->last_error));
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
	ereport(LOG, (errmsg("gpuir gpu service %d: %s", my_index, msg)));
}

/* vfail: mark t FAILED with the first reason given; false if it already was */
static bool vfail(GpuirTaken *t, const char *fmt, va_list ap) pg_attribute_printf(2, 0);
static void apply_decoded_lists_memory(void);

static bool
vfail(GpuirTaken *t, const char *fmt, va_list ap)
{
	if (t->failed)
		return false;
	t->failed = true;
	vsnprintf(t->detail, sizeof(t->detail), fmt, ap);
	return true;
}

/* GpuirWorkerFail: mark t FAILED with the first reason given (printf-style) */
void
GpuirWorkerFail(GpuirTaken *t, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	(void) vfail(t, fmt, ap);
	va_end(ap);
}

/*
 * GpuirWorkerCudaFailure: describe a failed gpuir_cuda_* call as "what:
 * status: runtime detail" into buf, note it (last_error, rate-limited LOG)
 * and track device health: GPUIR_CUDA_NO_DEVICE, or GPUIR_CUDA_ERROR
 * GPUIR_MAX_DEVICE_ERRORS times in a row, asks for a restart once the batch
 * is answered.
 */
/*
 * describe_cuda: "what: status: runtime detail" of a failed gpuir_cuda_*
 * call into buf; the runtime's detail only for the statuses that set it
 * (for the others it may be an earlier call's)
 */
static void
describe_cuda(char *buf, size_t buflen, const char *what, gpuir_cuda_status st)
{
	const char *rt = gpuir_cuda_last_error_detail();

	if (rt != NULL && rt[0] != '\0' &&
		(st == GPUIR_CUDA_NO_DEVICE || st == GPUIR_CUDA_ERROR || st == GPUIR_CUDA_OOM))
		snprintf(buf, buflen, "%s: %s: %s", what, gpuir_cuda_status_string(st), rt);
	else
		snprintf(buf, buflen, "%s: %s", what, gpuir_cuda_status_string(st));
}

void
GpuirWorkerCudaFailure(GpuirBatch *b, const char *what, gpuir_cuda_status st,
					   char *buf, size_t buflen)
{
	describe_cuda(buf, buflen, what, st);
	GpuirWorkerNoteFailure(buf);

	if (st == GPUIR_CUDA_NO_DEVICE)
		b->restart = true;
	else if (st == GPUIR_CUDA_ERROR && ++device_errors >= GPUIR_MAX_DEVICE_ERRORS)
		b->restart = true;
}

/* GpuirWorkerCudaSuccess: a gpuir_cuda_* call succeeded, the device works */
void
GpuirWorkerCudaSuccess(void)
{
	device_errors = 0;
}

/*
 * GpuirWorkerErrorCleanup: release what an ERROR inside ReadBuffer may leave
 * behind (cf. bgwriter.c) in a process of the GPU service (a worker or a
 * list reader) that goes on after catching it: LWLocks, a condition
 * variable sleep, a buffer I/O, buffer locks, and the pins of owner
 */
void
GpuirWorkerErrorCleanup(ResourceOwner owner)
{
	LWLockReleaseAll();
	ConditionVariableCancelSleep();
	pgstat_report_wait_end();
	gpuir_abort_buffer_io();
	UnlockBuffers();
	if (owner != NULL)
		ResourceOwnerRelease(owner, RESOURCE_RELEASE_BEFORE_LOCKS, false, false);
}

/*
 * GpuirWorkerCatchError: in a PG_CATCH block, undo what an ERROR left and
 * return its message (noted as a failure)
 */
void
GpuirWorkerCatchError(char *buf, size_t buflen)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(TopMemoryContext);	/* the copy is freed below */
	edata = CopyErrorData();
	FlushErrorState();
	GpuirWorkerErrorCleanup(worker_owner);

	strlcpy(buf, edata->message ? edata->message : "unknown error", buflen);
	GpuirWorkerNoteFailure(buf);
	FreeErrorData(edata);
}

/*
 * GpuirWorkerReject: fail t for a malformed request (a bug on the backend
 * side, or a segment that is not a request): the reason also goes to
 * last_error and the log (rate-limited).
 */
void
GpuirWorkerReject(GpuirTaken *t, const char *fmt,...)
{
	va_list		ap;
	bool		first;

	va_start(ap, fmt);
	first = vfail(t, fmt, ap);
	va_end(ap);
	if (first)
		GpuirWorkerNoteFailure(t->detail);
}

/*
 * GpuirWorkerReleaseArea: give the slot's area back to its backend, once t
 * is answered or found withdrawn: the worker writes nothing there any more
 */
void
GpuirWorkerReleaseArea(GpuirTaken *t)
{
	GpuirServiceSlot *slot = &GpuirService->slots[t->slotno];

	if (!t->in_area)
		return;
	SpinLockAcquire(&slot->mutex);
	Assert(slot->area_holds > 0);
	if (slot->area_holds > 0)
		slot->area_holds--;
	SpinLockRelease(&slot->mutex);
	t->in_area = false;
	t->base = NULL;
}

/* ---------- exit ---------- */

/*
 * answer_mark: answer a taken part of a request once.  Under the slot's
 * mutex, if the slot still holds the request id taken and was not
 * withdrawn: count the part done (and failed; the first failed part writes
 * the detail), and when it is the last part, write the request's status (OK
 * unless a part failed) and, after a write barrier (of the status, which
 * the backend reads without the mutex), set the slot DONE and, while the
 * backend still waits for it (slot->waiting: it did not give the request
 * up), store wake[0..nwake) in the slot (other slots' done semaphores,
 * which the backend posts once it sees its answer, gpuir.wake_fanout; under
 * the mutex).  Returns the slot's done semaphore, for the caller to post
 * (GpuirServiceWake), when this part set the slot DONE for a waiting
 * backend; else NULL (nothing stored).  now is the answer's time (the
 * slot's answered, where the wake stage begins): the caller's one reading
 * for its whole batch.  When the last part's worker could not map the
 * request, the status stays PENDING, which the backend reads as "no
 * answer" and falls back.  Raises no ERROR.
 */
static sem_t *
answer_mark(GpuirTaken *t, sem_t *const *wake, int nwake, TimestampTz now)
{
	GpuirServiceSlot *slot = &GpuirService->slots[t->slotno];
	GpuirRequest *req = (GpuirRequest *) t->base;
	sem_t	   *done = NULL;

	Assert(nwake >= 0 && nwake <= GPUIR_WAKE_FANOUT_MAX);
	if (t->answered)
		return NULL;
	t->answered = true;
	SpinLockAcquire(&slot->mutex);
	if (slot->req_id == t->req_id &&
		(slot->state == GPUIR_SLOT_TAKEN || slot->state == GPUIR_SLOT_READY))
	{
		slot->part_owner[t->part] = -1;
		if (t->failed)
		{
			if (slot->parts_failed++ == 0 && req != NULL)
				memcpy(req->detail, t->detail, sizeof(req->detail));
		}
		if (++slot->parts_done == slot->nparts)
		{
			if (req != NULL)
			{
				req->status = slot->parts_failed > 0 ? GPUIR_REQ_FAILED : GPUIR_REQ_OK;
				pg_write_barrier();
			}
			slot->state = GPUIR_SLOT_DONE;
			slot->answered = now;
			/* a backend that gave the request up gets no wake-up and no list */
			if (slot->waiting)
			{
				if (nwake > 0)
					memcpy(slot->wake, wake, sizeof(sem_t *) * nwake);
				slot->nwake = nwake;
				done = &slot->done;
			}
		}
	}
	SpinLockRelease(&slot->mutex);
	if (t->failed)
		pg_atomic_fetch_add_u64(&GpuirWorkerDevice->errors, 1);
	else if (t->base != NULL && t->part == 0)
		pg_atomic_fetch_add_u64(&GpuirWorkerDevice->queries, t->nqueries);
	GpuirWorkerReleaseArea(t);	/* the backend may write the area again */
	return done;
}

/* answer_detach: unmap t's request (a DSM segment; dsm_detach reports at WARNING) */
static void
answer_detach(GpuirTaken *t)
{
	if (t->seg != NULL)
	{
		dsm_detach(t->seg);
		t->seg = NULL;
		t->base = NULL;
	}
}

/*
 * answer: answer_mark at time now, and wake the backend when the request
 * is answered.  With detach, unmaps the request.  Raises no ERROR.
 */
static void
answer(GpuirTaken *t, bool detach, TimestampTz now)
{
	sem_t	   *done = answer_mark(t, NULL, 0, now);

	if (done != NULL)
		GpuirServiceWake(done);
	if (detach)
		answer_detach(t);
}

/*
 * worker_exit: before_shmem_exit callback (runs on proc_exit, FATAL, and
 * postmaster death; DSM mappings are still attached at that point).  Drops
 * what an interrupted page read may hold, answers the unanswered requests
 * of the batch being gathered or run and of the batches in flight FAILED,
 * and unpublishes the worker so that backends stop submitting and fall
 * back.  Device memory goes with the process.
 */
static void
worker_exit(int code, Datum arg)
{
	LWLockReleaseAll();
	gpuir_abort_buffer_io();
	UnlockBuffers();
	if (worker_owner != NULL)
		ResourceOwnerRelease(worker_owner, RESOURCE_RELEASE_BEFORE_LOCKS, false, false);

	for (int j = -1; j < GPUIR_JOBS; j++)
	{
		GpuirBatch *b = j < 0 ? current_batch : inflight[j];

		if (b == NULL)
			continue;
		for (int i = 0; i < b->ntaken; i++)
		{
			GpuirTaken *t = &b->taken[i];

			GpuirWorkerFail(t, "the gpu service is shutting down");
			answer(t, false, GetCurrentTimestamp());
		}
	}
	current_batch = NULL;
	for (int j = 0; j < GPUIR_JOBS; j++)
		inflight[j] = NULL;

	SpinLockAcquire(&GpuirService->mutex);
	GpuirWorkerDevice->worker_pid = 0;
	GpuirWorkerDevice->worker_latch = NULL;
	GpuirWorkerDevice->device_state = GPUIR_DEVSTATE_STARTING;
	SpinLockRelease(&GpuirService->mutex);
	GpuirReadersStop();			/* they see worker_pid changed */
	pg_atomic_write_u64(&GpuirWorkerDevice->bytes_cached, 0);
	pg_atomic_write_u32(&GpuirWorkerDevice->busy, GPUIR_WORKER_ASLEEP);
}

/* ---------- startup ---------- */

/*
 * probe_device: make this worker's device current and publish what was
 * found: device facts, the budget and READY, or NONE with the reason in
 * last_error (LOG once).  Returns whether the device is usable.
 */
static bool
probe_device(void)
{
	GpuirServiceDevice *dev = GpuirWorkerDevice;
	gpuir_cuda_status st;
	char		name[sizeof(dev->device_name)];
	size_t		mem = 0;
	int			cc_major = 0,
				cc_minor = 0;
	char		reason[256];
	uint64		budget;
	int			ordinal;

	SpinLockAcquire(&GpuirService->mutex);
	ordinal = dev->ordinal;
	memcpy(reason, dev->last_error, sizeof(reason));
	SpinLockRelease(&GpuirService->mutex);

	name[0] = '\0';
	if (dev->device_state == GPUIR_DEVSTATE_NONE)
		st = GPUIR_CUDA_NO_DEVICE;	/* device 0's worker found none: reason set */
	else
	{
		reason[0] = '\0';
		st = gpuir_cuda_set_device(ordinal);
		if (st == GPUIR_CUDA_OK)
			st = gpuir_cuda_device_info(ordinal, name, sizeof(name), &mem, &cc_major, &cc_minor);
		if (st != GPUIR_CUDA_OK)
		{
			char		what[32];

			snprintf(what, sizeof(what), "device %d", ordinal);
			describe_cuda(reason, sizeof(reason), what, st);
		}
		else if (cc_major * 10 + cc_minor < GPUIR_MIN_CC)
			snprintf(reason, sizeof(reason),
					 "%s has compute capability %d.%d, gpuir needs %d.%d or later",
					 name, cc_major, cc_minor, GPUIR_MIN_CC / 10, GPUIR_MIN_CC % 10);
	}

	if (reason[0] != '\0')
	{
		SpinLockAcquire(&GpuirService->mutex);
		dev->device_state = GPUIR_DEVSTATE_NONE;
		strlcpy(dev->last_error, reason, sizeof(dev->last_error));
		SpinLockRelease(&GpuirService->mutex);
		ereport(LOG,
				(errmsg("gpuir gpu service %d: no usable GPU (%s): it serves no queries",
						my_index, reason)));
		return false;
	}

	budget = GpuirCacheSetBudget((uint64) mem);
	apply_decoded_lists_memory();

	/* the search jobs of batches in flight; without them, one batch at a time */
	for (int j = 0; j < GPUIR_JOBS; j++)
		if (jobs[j] == NULL && gpuir_cuda_search_job_create(&jobs[j]) != GPUIR_CUDA_OK)
		{
			for (int k = 0; k < GPUIR_JOBS; k++)
			{
				gpuir_cuda_search_job_free(jobs[k]);
				jobs[k] = NULL;
			}
			ereport(LOG,
					(errmsg("gpuir gpu service %d: no search jobs (%s): one batch at a time",
							my_index, gpuir_cuda_last_error_detail())));
			break;
		}

	SpinLockAcquire(&GpuirService->mutex);
	strlcpy(dev->device_name, name, sizeof(dev->device_name));
	dev->device_memory = (uint64) mem;
	dev->cc_major = cc_major;
	dev->cc_minor = cc_minor;
	dev->budget = budget;
	dev->last_error[0] = '\0';
	dev->device_state = GPUIR_DEVSTATE_READY;
	SpinLockRelease(&GpuirService->mutex);

	ereport(LOG,
			(errmsg("gpuir gpu service %d: using device %d, %s (compute capability %d.%d, %llu MB), list cache budget %llu MB",
					my_index, ordinal, name, cc_major, cc_minor,
					(unsigned long long) (mem >> 20),
					(unsigned long long) (budget >> 20))));
	return true;
}

/*
 * resolve_devices: device 0's worker, at every start: count the visible
 * devices, turn gpuir.devices into GpuirService->devices[0 .. ndevices)
 * (ordinals; 'all' is every visible device up to GPUIR_MAX_DEVICES) and
 * register the workers of devices 1 .. ndevices - 1 that were not
 * registered yet (a restart of this worker registers none again: they
 * stay registered and restart on their own).  A listed device that is not
 * there is NONE with the reason and gets no worker; the others serve.
 * Without a usable GPU, ndevices is 1 and device 0 is NONE with the
 * reason: queries run on the CPU.
 */
static void
resolve_devices(void)
{
	int			count = 0;
	bool		all;
	int			ordinals[GPUIR_MAX_DEVICES];
	int			n = 0;
	char		reason[256];
	gpuir_cuda_status st;

	reason[0] = '\0';
	st = gpuir_cuda_device_count(&count);
	if (st != GPUIR_CUDA_OK)
		describe_cuda(reason, sizeof(reason), "device count", st);
	else if (!GpuirParseDevices(gpuir_devices, &all, ordinals, &n, reason, sizeof(reason)))
		;						/* the check hook accepted it: not reached */
	else if (all)
	{
		n = Min(count, GPUIR_MAX_DEVICES);
		for (int i = 0; i < n; i++)
			ordinals[i] = i;
	}
	if (reason[0] != '\0' || n < 1)
	{
		if (reason[0] == '\0')
			snprintf(reason, sizeof(reason), "no device");
		n = 1;
		ordinals[0] = -1;		/* none: gpuir_status shows device_id NULL */
	}

	SpinLockAcquire(&GpuirService->mutex);
	for (int i = 0; i < n; i++)
	{
		GpuirServiceDevice *dev = &GpuirService->devices[i];

		dev->ordinal = ordinals[i];
		/* a listed device that is not there: no worker, the others serve */
		if (reason[0] == '\0' && ordinals[i] >= count)
		{
			dev->device_state = GPUIR_DEVSTATE_NONE;
			snprintf(dev->last_error, sizeof(dev->last_error),
					 "gpuir.devices names device %d, and %d device%s visible",
					 ordinals[i], count, count == 1 ? " is" : "s are");
		}
	}
	GpuirService->devices[0].registered = true;
	if (reason[0] != '\0')
	{
		GpuirService->devices[0].device_state = GPUIR_DEVSTATE_NONE;
		strlcpy(GpuirService->devices[0].last_error, reason,
				sizeof(GpuirService->devices[0].last_error));
	}
	GpuirService->ndevices = n;
	SpinLockRelease(&GpuirService->mutex);

	for (int i = 1; i < n; i++)
	{
		bool		registered;

		if (ordinals[i] >= count)
			continue;
		SpinLockAcquire(&GpuirService->mutex);
		registered = GpuirService->devices[i].registered;
		GpuirService->devices[i].registered = true;
		SpinLockRelease(&GpuirService->mutex);
		if (!registered && !GpuirServiceRegisterWorker(i, true))
		{
			SpinLockAcquire(&GpuirService->mutex);
			GpuirService->devices[i].registered = false;
			GpuirService->devices[i].device_state = GPUIR_DEVSTATE_NONE;
			snprintf(GpuirService->devices[i].last_error,
					 sizeof(GpuirService->devices[i].last_error),
					 "no background worker slot left for its worker (max_worker_processes)");
			SpinLockRelease(&GpuirService->mutex);
			ereport(LOG,
					(errmsg("gpuir gpu service: could not start the worker of device %d", ordinals[i]),
					 errhint("Raise max_worker_processes.")));
		}
	}
}

/* ---------- runs: one resident segment, one set of BM25 constants ---------- */

/*
 * unit_cmp: order units by segment key, then constants, then docID window,
 * then request and segment
 */
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
	if (ua->nparts != ub->nparts)
		return ua->nparts < ub->nparts ? -1 : 1;
	if (ua->part != ub->part)
		return ua->part < ub->part ? -1 : 1;
	if (ua->t != ub->t)
		return ua->t < ub->t ? -1 : 1;
	return (ua->s > ub->s) - (ua->s < ub->s);
}

/* the arrays of one gpuir_cuda_search_batch call */
typedef struct GpuirRunArrays
{
	uint32		nq;				/* queries (items with work) */
	uint64		nterms;
	uint32		kmax;			/* largest k: the output row length */
	gpuir_cuda_query *queries;	/* [nq] */
	gpuir_cuda_term *terms;		/* [nterms] */
	uint32	   *out_docids;		/* [nq * kmax] */
	float	   *out_scores;		/* [nq * kmax] */
	uint32	   *out_counts;		/* [nq] */
	float	   *rests;			/* [nq]: GpuirRequest's rests (0: exact) */
} GpuirRunArrays;

/*
 * run_count: what the live (not failed) requests of units[0 .. n) ask: the
 * sizes of ra, and in *t0 and *seg0 the first live request and its
 * segment (NULL when there is none).
 */
static void
run_count(GpuirBatch *b, const GpuirUnit *units, int n, GpuirRunArrays *ra,
		  GpuirTaken **t0, const GpuirSegmentData **seg0)
{
	ra->nq = 0;
	ra->nterms = 0;
	ra->kmax = 1;
	*t0 = NULL;
	*seg0 = NULL;
	for (int u = 0; u < n; u++)
	{
		GpuirTaken *t = &b->taken[units[u].t];
		int			s = units[u].s;

		if (t->failed)
			continue;
		if (*t0 == NULL)
		{
			*t0 = t;
			*seg0 = &t->segs[s];
		}
		for (uint32 q = 0; q < t->hdr.nqueries; q++)
		{
			uint64		idx = (uint64) q * t->hdr.nsegments + s;

			if (t->skip[idx])
				continue;
			ra->nq++;
			ra->nterms += t->items[idx].nterms;
			ra->kmax = Max(ra->kmax, t->items[idx].k);
		}
	}
}

/* run_fill: allocate ra's arrays and fill its queries and terms from the live items */
static void
run_fill(GpuirBatch *b, const GpuirUnit *units, int n, GpuirRunArrays *ra)
{
	uint32		qi = 0;
	uint32		ti = 0;

	ra->queries = palloc_extended(sizeof(gpuir_cuda_query) * (Size) ra->nq, MCXT_ALLOC_HUGE);
	ra->terms = palloc_extended(Max(sizeof(gpuir_cuda_term) * (Size) ra->nterms, 1),
								MCXT_ALLOC_HUGE);
	ra->out_docids = palloc_extended(sizeof(uint32) * (Size) ra->nq * ra->kmax, MCXT_ALLOC_HUGE);
	ra->out_scores = palloc_extended(sizeof(float) * (Size) ra->nq * ra->kmax, MCXT_ALLOC_HUGE);
	ra->out_counts = palloc_extended(sizeof(uint32) * (Size) ra->nq, MCXT_ALLOC_HUGE);
	ra->rests = palloc_extended(sizeof(float) * (Size) ra->nq,
								MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);

	StaticAssertStmt(sizeof(GpuirReqTerm) == sizeof(gpuir_cuda_term),
					 "GpuirReqTerm must have gpuir_cuda_term's layout");
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
			ra->queries[qi].first_term = ti;
			ra->queries[qi].nterms = it->nterms;
			ra->queries[qi].k = it->k;
			ra->queries[qi].mode = it->mode;
			for (uint32 i = 0; i < it->nterms; i++)
			{
				const GpuirReqTerm *rt = &t->terms[it->first_term + i];

				ra->terms[ti].first_block = rt->first_block;
				ra->terms[ti].nblocks = rt->nblocks;
				ra->terms[ti].npostings = rt->npostings;
				ra->terms[ti].idf = rt->idf;
				ti++;
			}
			qi++;
		}
	}
}

/*
 * answer_tids: the heap TIDs of docids[0 .. count), from tids[ndocs], into
 * t's TIDs of item pidx, and count at its ntids; none when a docID is out
 * of range (the backend refuses the answer then).  Only the TIDs the
 * backend wants (GpuirReqItem.tids, its k): a random read each here, on
 * the worker's serial path.
 */
static void
answer_tids(GpuirTaken *t, uint64 pidx, const uint32 *docids, uint32 count,
			const ItemPointerData *tids, uint32 ndocs)
{
	const GpuirRequest *h = &t->hdr;
	ItemPointerData *out = (ItemPointerData *) (t->base + h->tids_off) + pidx * h->kmax;

	for (uint32 i = 0; i < count; i++)
	{
		if (docids[i] >= ndocs)
			return;
		out[i] = tids[docids[i]];
	}
	memcpy(t->base + h->ntids_off + pidx * sizeof(uint32), &count, sizeof(uint32));
}

/*
 * run_answer: the results of ra, into each live request's part: at [(part
 * * nitems + item) * kmax ...), the count at counts[part * nitems + item];
 * for a request of one part, the heap TIDs of the item's first results
 * beside them from the host copy of the segment's TIDS stream
 * (GpuirCacheTids), when it is still resident, and their number at
 * ntids[item] (the backend reads no index page for those)
 */
static void
run_answer(GpuirBatch *b, const GpuirUnit *units, int n, const GpuirRunArrays *ra)
{
	uint32		qi = 0;
	const ItemPointerData *tids = n > 0 ? GpuirCacheTids(&units[0].key) : NULL;

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
			uint64		pidx;
			uint32		count;

			if (t->skip[idx])
				continue;
			count = Min(ra->out_counts[qi], t->items[idx].k);
			pidx = (uint64) t->part * h->nqueries * h->nsegments + idx;
			memcpy(t->base + h->docids_off + pidx * h->kmax * sizeof(uint32),
				   &ra->out_docids[(Size) qi * ra->kmax], count * sizeof(uint32));
			memcpy(t->base + h->scores_off + pidx * h->kmax * sizeof(float4),
				   &ra->out_scores[(Size) qi * ra->kmax], count * sizeof(float4));
			memcpy(t->base + h->counts_off + pidx * sizeof(uint32), &count, sizeof(uint32));
			memcpy(t->base + h->rests_off + pidx * sizeof(float4), &ra->rests[qi], sizeof(float4));
			if (tids != NULL && h->nparts == 1)
				answer_tids(t, pidx, &ra->out_docids[(Size) qi * ra->kmax],
							Min(count, t->items[idx].tids), tids, units[u].key.ndocs);
			qi++;
		}
	}
}

/*
 * run_kernels: gpuir_cuda_search_batch of ra over segment seg (resident, or
 * assembled from lists in transit), or over docID window part of nparts of it (or the failure
 * gpuir.debug_gpu_fault makes up)
 */
static gpuir_cuda_status
run_kernels(const gpuir_cuda_segment *seg, const GpuirUnit *u, GpuirRunArrays *ra)
{
	gpuir_cuda_segment win = *seg;

	if (gpuir_debug_gpu_fault == GPUIR_FAULT_SEARCH_ERROR)
		return GPUIR_CUDA_ERROR;
	if (u->nparts > 1)
	{
		gpuir_cuda_status st = gpuir_cuda_segment_window(seg, (uint32) u->part,
														 (uint32) u->nparts, &win);

		if (st != GPUIR_CUDA_OK)
			return st;
	}
	return gpuir_cuda_search_batch(&win, &u->sc, ra->queries, ra->nq, ra->terms,
								   (uint32) ra->nterms, ra->kmax, ra->out_docids,
								   ra->out_scores, ra->out_counts, NULL);
}

/*
 * run_prepare: the arrays ra of the live items of units[0 .. n) (same
 * segment key, constants and window), filled, and their segment made
 * resident (the cache stage), in *segp the segment to search (the entry's,
 * or for a segment larger than the budget the one GpuirCacheTransit
 * assembles from its lists in assembly slot slot, ra's terms then naming
 * its blocks); *resident receives when it was.  Returns the cache entry; NULL when there is nothing to search (ra->nq = 0, why
 * empty) or on a failure (why says it; the caller fails the run).
 */
static GpuirCacheEntry *
run_prepare(GpuirBatch *b, const GpuirUnit *units, int n, GpuirRunArrays *ra, int slot,
			const gpuir_cuda_segment **segp, TimestampTz *resident, char *why, size_t whylen)
{
	GpuirTaken *t0;
	const GpuirSegmentData *seg0;
	GpuirCacheEntry *e;
	TimestampTz t_start;

	why[0] = '\0';
	run_count(b, units, n, ra, &t0, &seg0);
	if (ra->nq == 0)
		return NULL;
	if (ra->nterms > PG_UINT32_MAX)
	{
		snprintf(why, whylen, "batch has too many terms");
		return NULL;
	}
	t_start = GetCurrentTimestamp();
	e = GpuirCacheGet(b, &units[0].key, t0, seg0, why, whylen);
	if (e != NULL)
	{
		run_fill(b, units, n, ra);
		*segp = &e->dev;
		if (e->partial != NULL)
		{
			/* a segment larger than the budget: its lists, kept or in transit */
			*segp = GpuirCacheTransit(b, e, t0, seg0, ra->queries, ra->nq, ra->terms, ra->nterms,
									  &units[0].sc, ra->rests, slot, why, whylen);
			if (*segp == NULL)
				e = NULL;
		}
	}
	*resident = GetCurrentTimestamp();
	GpuirServiceStage(GPUIR_STAGE_CACHE, t_start, *resident);
	return e;
}

/*
 * apply_decoded_lists_memory: gpuir.decoded_lists_memory to this worker's
 * searches (its thread's, so every search job's it starts)
 */
static void
apply_decoded_lists_memory(void)
{
	uint64		blocks = ((uint64) gpuir_decoded_lists_memory << 20) / GPUIR_CUDA_DECODED_BLOCK_BYTES;

	gpuir_cuda_search_set_decode_cache((uint32) Min(blocks, (uint64) PG_UINT32_MAX));
}

/*
 * reload_settings: after a SIGHUP, the configuration file read again and
 * gpuir.decoded_lists_memory applied.  Called when the worker wakes and
 * before each batch it gathers: under steady load its batch loop never
 * returns to the latch, and a reload (gpuir.max_batch, gpuir.wake_fanout,
 * ...) would otherwise wait until the load paused.  Batches in flight are
 * answered (and searched again, when a short candidate room spilled) under
 * the new settings; their results are the same.
 */
static void
reload_settings(void)
{
	if (!ConfigReloadPending)
		return;
	ConfigReloadPending = false;
	ProcessConfigFile(PGC_SIGHUP);
	apply_decoded_lists_memory();
}

/*
 * note_search_counts: after a search of status st, add the queries it
 * searched again (gpuir_cuda_search_take_searched_again) to the device's
 * count, and the lists it found decoded and decoded
 * (gpuir_cuda_search_take_decode_counts) to the device's
 */
static void
note_search_counts(gpuir_cuda_status st)
{
	uint64		n = gpuir_cuda_search_take_searched_again();
	uint64_t	found,
				decoded;

	if (st == GPUIR_CUDA_OK && n > 0)
		pg_atomic_fetch_add_u64(&GpuirWorkerDevice->searched_again, n);
	/* and the lists found decoded and decoded, whatever the outcome */
	gpuir_cuda_search_take_decode_counts(&found, &decoded);
	if (found > 0)
		pg_atomic_fetch_add_u64(&GpuirWorkerDevice->decoded_found, found);
	if (decoded > 0)
		pg_atomic_fetch_add_u64(&GpuirWorkerDevice->decoded_lists, decoded);
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
	GpuirRunArrays ra;
	GpuirCacheEntry *e;
	const gpuir_cuda_segment *seg = NULL;
	gpuir_cuda_status st;
	TimestampTz t_start,
				t_end;
	char		why[sizeof(((GpuirRequest *) NULL)->detail)];

	/* no search is in flight (run_batch): any assembly slot is free */
	e = run_prepare(b, units, n, &ra, 0, &seg, &t_start, why, sizeof(why));
	if (e == NULL)
	{
		if (why[0] != '\0')
			goto fail;
		return;
	}
	st = run_kernels(seg, &units[0], &ra);
	/*
	 * out of memory: give the search workspace back, make room beside the
	 * segment and try once more
	 */
	if (st == GPUIR_CUDA_OOM)
	{
		(void) gpuir_cuda_workspace_release();
		for (int j = 0; j < GPUIR_JOBS; j++)
			if (jobs[j] != NULL && inflight[j] == NULL)
				(void) gpuir_cuda_search_job_release(jobs[j]);
		(void) GpuirCacheEvictOthers(e);
		st = run_kernels(seg, &units[0], &ra);
	}
	note_search_counts(st);
	t_end = GetCurrentTimestamp();
	GpuirServiceStage(GPUIR_STAGE_SEARCH, t_start, t_end);
	if (st != GPUIR_CUDA_OK)
	{
		GpuirWorkerCudaFailure(b, "search", st, why, sizeof(why));
		goto fail;
	}
	GpuirWorkerCudaSuccess();
	run_answer(b, units, n, &ra);
	b->answer_us += GetCurrentTimestamp() - t_end;
	return;

fail:
	for (int u = 0; u < n; u++)
		GpuirWorkerFail(&b->taken[units[u].t], "%s", why);
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

		GpuirWorkerCatchError(msg, sizeof(msg));
		for (int u = 0; u < n; u++)
			GpuirWorkerFail(&b->taken[units[u].t], "%s", msg);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextReset(run_cxt);
}

/*
 * batch_units: validate the batch's requests and list their (request,
 * segment) pairs with work, sorted by segment key and BM25 constants (so
 * that runs of the same segment follow each other and it stays resident
 * between them); *nunits receives their number.  In the current memory
 * context (the batch's).
 */
static GpuirUnit *
batch_units(GpuirBatch *b, int *nunits_out)
{
	GpuirUnit  *units;
	int			nunits = 0;
	int			maxunits = 0;

	TimestampTz t_start = GetCurrentTimestamp();

	for (int i = 0; i < b->ntaken; i++)
		GpuirRequestPrepare(&b->taken[i]);
	GpuirServiceStage(GPUIR_STAGE_PREPARE, t_start, GetCurrentTimestamp());

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
			u->key.priors_start = seg->streams[GPUIR_S_PRIORS].start;
			u->key.tids_start = seg->streams[GPUIR_S_TIDS].start;
			u->key.payload_bytes = seg->streams[GPUIR_S_PAYLOAD].nbytes;
			u->key.nblocks = seg->nblocks;
			u->key.ndocs = seg->ndocs;
			u->sc.k1 = h->k1;
			u->sc.b = h->b;
			u->sc.avgdl = h->avgdl;
			u->sc.prior_weight = h->prior_weight;
			u->part = t->part;
			u->nparts = t->nparts;
			u->t = i;
			u->s = (int) s;
			nunits++;
		}
	}
	if (nunits > 1)
		qsort(units, nunits, sizeof(GpuirUnit), unit_cmp);
	*nunits_out = nunits;
	return units;
}

/* run_end: the end of the run of units that starts at first (same key, constants and window) */
static int
run_end(const GpuirUnit *units, int nunits, int first)
{
	int			end = first + 1;

	while (end < nunits &&
		   memcmp(&units[first].key, &units[end].key, sizeof(GpuirCacheKey)) == 0 &&
		   memcmp(&units[first].sc, &units[end].sc, sizeof(gpuir_cuda_scoring)) == 0 &&
		   units[first].part == units[end].part && units[first].nparts == units[end].nparts)
		end++;
	return end;
}

/*
 * answer_chained: answer every request of the batch so that the worker wakes
 * only fanout backends (a wake-up was a kill() of about 2 us on the GPU
 * machine when backends waited on their latches, a third of the worker's CPU
 * in a batch of 16 before this; a futex wake now).  The batch's requests
 * form a tree by their index i in b->taken: the worker wakes the backends
 * of requests 0..fanout-1, and request i's backend, once it sees its
 * answer, wakes those of requests fanout * (i + 1) .. fanout * (i + 1) +
 * fanout - 1 (GpuirServiceRun), so the wake-ups spread over the backends'
 * cores.  Requests are marked from the last to the first, so a backend is
 * set DONE only after every request it is to wake: one that wakes early (its
 * wait's timeout) finds them answered.  A request that this call does not
 * set DONE for a waiting backend (answered before, given up by its backend,
 * or parts still running elsewhere) takes no list, and the worker wakes its
 * children itself.  A backend that gives its request up after the answer
 * came (cancel, timeout, exit) wakes them in withdraw.  Only a backend that
 * dies without proc_exit leaves its children to their 10 ms wait timeout.
 * batch_answer uses the tree only while fewer than a quarter of the
 * processors run the CPU engine (GpuirRouteCpuRunsFew): on
 * cores that CPU engine runs fill, a woken backend waits for a core before
 * it wakes the next ones, and under auto with and queries the tree cost
 * 11-12% of the q/s at 64 clients
 * (bench/results/2026-12-01-h200-wake-fanout.md).  Raises no ERROR.
 */
static void
answer_chained(GpuirBatch *b, int fanout, TimestampTz now)
{
	for (int i = b->ntaken - 1; i >= 0; i--)
	{
		sem_t	   *wake[GPUIR_WAKE_FANOUT_MAX];
		int			nwake = 0;
		int			first = fanout * (i + 1);

		for (int c = first; c < first + fanout && c < b->ntaken; c++)
			if (b->taken[c].done_wake != NULL)
				wake[nwake++] = b->taken[c].done_wake;
		b->taken[i].done_wake = answer_mark(&b->taken[i], wake, nwake, now);
		if (b->taken[i].done_wake == NULL)
			for (int w = 0; w < nwake; w++)
				GpuirServiceWake(wake[w]);
	}
	for (int i = 0; i < fanout && i < b->ntaken; i++)
		if (b->taken[i].done_wake != NULL)
			GpuirServiceWake(b->taken[i].done_wake);
	for (int i = 0; i < b->ntaken; i++)
		answer_detach(&b->taken[i]);
}

/*
 * batch_answer: answer every request of the batch and count it, and the
 * worker's CPU time since the batch answered before among its queries
 * (the worker_cpu stage)
 */
static void
batch_answer(GpuirBatch *b)
{
	static double cpu_mark = -1.0;
	TimestampTz t_start;
	double		cpu_now;

	/* the next batch opens files afresh: no descriptor of a dropped relation lingers */
	if (b->read_pages)
		gpuir_smgr_close_all();

	if (gpuir_debug_gpu_fault == GPUIR_FAULT_SLOW_ANSWER)
		pg_usleep(200 * 1000L);
	t_start = GetCurrentTimestamp();
	if (gpuir_wake_fanout > 0 && b->ntaken > gpuir_wake_fanout && GpuirRouteCpuRunsFew())
		answer_chained(b, Min(gpuir_wake_fanout, GPUIR_WAKE_FANOUT_MAX), t_start);
	else
		for (int i = 0; i < b->ntaken; i++)
			answer(&b->taken[i], true, t_start);
	/*
	 * the answer stage: the worker's wake-ups (not those the tree leaves to
	 * the backends) and the runs' result copies
	 */
	GpuirServiceStage(GPUIR_STAGE_ANSWER, t_start - b->answer_us, GetCurrentTimestamp());

	pg_atomic_fetch_add_u64(&GpuirWorkerDevice->batches, 1);
	pg_atomic_fetch_add_u64(&GpuirWorkerDevice->batched_queries, b->nqueries);
	cpu_now = GpuirRouteCpuTime();
	if (cpu_mark >= 0.0 && cpu_now > cpu_mark)
		GpuirServiceStageAdd(GPUIR_STAGE_WORKER_CPU, (uint64) (cpu_now - cpu_mark), b->nqueries);
	cpu_mark = cpu_now;
}

/*
 * run_batch_units: run each run of units[0 .. nunits) in turn
 * (run_search_guarded), then answer the batch
 */
static void
run_batch_units(GpuirBatch *b, GpuirUnit *units, int nunits)
{
	for (int first = 0; first < nunits;)
	{
		int			end = run_end(units, nunits, first);

		run_search_guarded(b, &units[first], end - first);
		first = end;
	}
	batch_answer(b);
}

/* what flight_start did */
typedef enum GpuirFlightStart
{
	FLIGHT_STARTED,				/* the search is on the device */
	FLIGHT_FAILED,				/* nothing to search, or the run's requests
								 * failed: answer the batch */
	FLIGHT_SYNC					/* not started: run the batch the usual way */
} GpuirFlightStart;

/*
 * flight_start: start the one run units[0 .. nunits) of b on job j
 * (gpuir_cuda_search_start) over its resident segment (run_prepare: loaded
 * when missing).  The run's arrays live in the batch's memory (the current
 * context).  A failure to start on the device (out of memory, a CUDA
 * error) leaves the run to the synchronous path, which handles it.
 */
static GpuirFlightStart
flight_start(GpuirBatch *b, GpuirUnit *units, int nunits, int j)
{
	volatile GpuirFlightStart result = FLIGHT_SYNC;
	MemoryContext cxt = CurrentMemoryContext;

	PG_TRY();
	{
		GpuirRunArrays *ra = palloc(sizeof(GpuirRunArrays));
		GpuirCacheEntry *e;
		const gpuir_cuda_segment *seg = NULL;
		TimestampTz resident = 0;
		char		why[sizeof(((GpuirRequest *) NULL)->detail)];

		/* job j's slot: its last search has been answered (job j is free) */
		e = run_prepare(b, units, nunits, ra, j, &seg, &resident, why, sizeof(why));
		if (e == NULL)
		{
			/* nothing to search, or the run failed: answer the batch */
			if (why[0] != '\0')
				for (int u = 0; u < nunits; u++)
					GpuirWorkerFail(&b->taken[units[u].t], "%s", why);
			result = FLIGHT_FAILED;
		}
		else if (gpuir_debug_gpu_fault != GPUIR_FAULT_SEARCH_ERROR &&
				 gpuir_cuda_search_start(jobs[j], seg, &units[0].sc, ra->queries, ra->nq,
										 ra->terms, (uint32) ra->nterms,
										 ra->kmax) == GPUIR_CUDA_OK)
		{
			b->flight = palloc(sizeof(GpuirFlight));
			b->flight->units = units;
			b->flight->nunits = nunits;
			b->flight->ra = ra;
			b->flight->started = resident;
			result = FLIGHT_STARTED;
		}
	}
	PG_CATCH();
	{
		char		msg[sizeof(((GpuirRequest *) NULL)->detail)];

		GpuirWorkerCatchError(msg, sizeof(msg));
		for (int u = 0; u < nunits; u++)
			GpuirWorkerFail(&b->taken[units[u].t], "%s", msg);
		result = FLIGHT_FAILED;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(cxt);
	return result;
}

/*
 * flight_end: wait for the search of the batch in flight on job j, write
 * its results (or fail its requests), answer the batch and free its memory
 */
static void
flight_end(int j)
{
	GpuirBatch *b = inflight[j];
	GpuirFlight *f = b->flight;
	gpuir_cuda_status st;
	TimestampTz t_end;
	char		why[sizeof(((GpuirRequest *) NULL)->detail)];

	st = gpuir_cuda_search_finish(jobs[j], f->ra->out_docids, f->ra->out_scores,
								  f->ra->out_counts);
	note_search_counts(st);
	t_end = GetCurrentTimestamp();
	GpuirServiceStage(GPUIR_STAGE_SEARCH, f->started, t_end);
	if (st != GPUIR_CUDA_OK)
	{
		GpuirWorkerCudaFailure(b, "search", st, why, sizeof(why));
		for (int u = 0; u < f->nunits; u++)
			GpuirWorkerFail(&b->taken[f->units[u].t], "%s", why);
	}
	else
	{
		GpuirWorkerCudaSuccess();
		run_answer(b, f->units, f->nunits, f->ra);
		b->answer_us += GetCurrentTimestamp() - t_end;
	}
	batch_answer(b);
	inflight[j] = NULL;
	if (b->restart)
	{
		ereport(LOG,
				(errmsg("gpuir gpu service %d: restarting after device failures", my_index)));
		proc_exit(1);
	}
	MemoryContextReset(batch_cxts[j]);
}

/* flights_end: wait for and answer every batch in flight */
static void
flights_end(void)
{
	for (int j = 0; j < GPUIR_JOBS; j++)
		if (inflight[j] != NULL)
			flight_end(j);
}

/*
 * run_batch: run batch b, taken into batch_cxts[j] (the current context):
 * started on job j and left in flight when it is one run over the segment
 * of any other batch in flight (none of its parts a docID window; a
 * segment larger than the budget is assembled in job j's slot of the
 * transit, so that the next batch's lists are read, sent and assembled
 * while the device searches this one's); else,
 * once the batches in flight are answered, run by runs and answered.
 * Returns true when b is left in flight.
 */
static bool
run_batch(GpuirBatch *b, int j)
{
	GpuirUnit  *units;
	int			nunits;

	units = batch_units(b, &nunits);
	if (nunits == 0)
	{
		batch_answer(b);		/* every request failed, or has no possible result */
		return false;
	}
	if (jobs[j] != NULL && run_end(units, nunits, 0) == nunits &&
		units[0].nparts == 1)
	{
		bool		same = true;

		for (int o = 0; o < GPUIR_JOBS; o++)
			if (inflight[o] != NULL &&
				memcmp(&inflight[o]->flight->units[0].key, &units[0].key,
					   sizeof(GpuirCacheKey)) != 0)
				same = false;
		if (!same)
			flights_end();		/* its segment may have to make room */
		switch (flight_start(b, units, nunits, j))
		{
			case FLIGHT_STARTED:
				inflight[j] = b;
				return true;
			case FLIGHT_FAILED:
				batch_answer(b);
				return false;
			case FLIGHT_SYNC:
				break;
		}
	}
	flights_end();
	run_batch_units(b, units, nunits);
	return false;
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
		TimestampTz submitted = 0;

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
		if (slot->state == GPUIR_SLOT_READY && slot->parts_taken < slot->nparts)
		{
			if (b->ntaken > 0 && b->nqueries + slot->nqueries > (uint64) gpuir_max_batch)
				full = true;
			else
			{
				/* the next part; the last one makes the request TAKEN */
				t->part = slot->parts_taken++;
				t->nparts = slot->nparts;
				slot->part_owner[t->part] = (int8) my_index;
				if (slot->parts_taken == slot->nparts)
					slot->state = GPUIR_SLOT_TAKEN;
				t->slotno = idx;
				t->req_id = slot->req_id;
				t->handle = slot->handle;
				t->nqueries = slot->nqueries;
				t->in_area = (slot->handle == DSM_HANDLE_INVALID);
				if (t->in_area)
					slot->area_holds++;
				submitted = slot->submitted;
				b->ntaken++;
				b->nqueries += t->nqueries;
			}
		}
		SpinLockRelease(&slot->mutex);
		if (submitted != 0)
		{
			TimestampTz now = GetCurrentTimestamp();

			/* the queue stage, added once the batch is gathered */
			b->queue_us += now > submitted ? (uint64) (now - submitted) : 0;
			if (b->first_take == 0)
				b->first_take = now;
		}

		if (full || b->nqueries >= (uint64) gpuir_max_batch)
		{
			scan_start = full ? idx : (idx + 1) % nslots;
			return true;
		}
	}
	return false;
}

/* any_ready: is a slot READY (an unlocked peek, as take_ready's)? */
static bool
any_ready(void)
{
	for (int i = 0; i < GpuirService->nslots; i++)
		if (*((volatile int *) &GpuirService->slots[i].state) == GPUIR_SLOT_READY)
			return true;
	return false;
}

/*
 * idle_spin: before the worker sleeps with nothing to do, poll the slots
 * for up to gpuir.worker_spin microseconds, while the backends in a gpuir
 * search are a light load (GpuirRouteLoadNow: at most a quarter of the
 * online processors, and no more clients than gpuir.auto_clients_per_core
 * a processor, as auto's router counts them): one
 * client's next request then comes within the statement's round trip, and
 * a sleeping worker takes a latch wake to start it (the queue stage of a
 * lone request, 11.4 us on an H200: bench/results/2026-11-29-h200-s36.md).
 * Under load the worker seldom runs out of work, and the cores belong to
 * the backends.  Meanwhile its device is GPUIR_WORKER_POLLING: idle to
 * the backends' wake_workers, which set this worker's latch (no signal: it
 * is not sleeping) rather than wake another device's.  Returns true when a
 * request became READY (the device BUSY again); otherwise the caller sets
 * it ASLEEP before it sleeps.
 */
static bool
idle_spin(void)
{
	TimestampTz deadline;

	if (gpuir_worker_spin <= 0 || GpuirRouteLoadNow() != GPUIR_ROUTE_LIGHT)
		return false;
	pg_atomic_write_u32(&GpuirWorkerDevice->busy, GPUIR_WORKER_POLLING);
	deadline = GetCurrentTimestamp() + gpuir_worker_spin;
	do
	{
		for (int i = 0; i < 32; i++)
		{
			if (any_ready())
			{
				pg_atomic_write_u32(&GpuirWorkerDevice->busy, GPUIR_WORKER_BUSY);
				return true;
			}
			pg_spin_delay();
		}
		CHECK_FOR_INTERRUPTS();
	} while (GetCurrentTimestamp() < deadline);
	return false;
}

/*
 * gather_batch: take what is READY now (continuous batching: the worker is
 * free, so the batch runs at once with what has arrived).  Under load, when
 * fewer queries are ready than the last batch held (its backends are
 * likely about to send their next ones), it waits up to gpuir.batch_window
 * ms for more, polling the slots every 20 us, while there is room.
 * Returns false when nothing was taken.  The batch is current_batch from
 * the first take, so that an exit during the window answers it.
 */
static bool
gather_batch(GpuirBatch *b)
{
	static uint64 last_nqueries = 0;
	TimestampTz deadline;
	bool		full;

	full = take_ready(b);
	if (b->ntaken == 0)
		return false;
	if (!full && gpuir_batch_window > 0 && b->nqueries < last_nqueries)
	{
		deadline = b->first_take + (TimestampTz) (gpuir_batch_window * 1000.0);
		while (b->nqueries < last_nqueries && GetCurrentTimestamp() < deadline)
		{
			pg_usleep(20);
			CHECK_FOR_INTERRUPTS();
			if (take_ready(b))
				break;
		}
	}
	last_nqueries = b->nqueries;
	GpuirServiceStageAdd(GPUIR_STAGE_QUEUE, b->queue_us, b->ntaken);
	GpuirServiceStage(GPUIR_STAGE_WINDOW, b->first_take, GetCurrentTimestamp());
	return true;
}

/* ---------- main ---------- */

/*
 * GpuirWorkerMain: entry point of the background worker "gpuir gpu
 * service N" (GpuirServiceRegisterWorker: BGWORKER_SHMEM_ACCESS, no
 * database connection), arg the index N of its device in
 * GpuirService->devices.  Never returns: exits on SIGTERM (die), on
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
	GpuirCacheInit();
	for (int j = 0; j < GPUIR_JOBS; j++)
		batch_cxts[j] = AllocSetContextCreate(TopMemoryContext, "gpuir batch",
											  ALLOCSET_DEFAULT_SIZES);
	/* not a child of a batch's context: resetting a context deletes its children */
	run_cxt = AllocSetContextCreate(TopMemoryContext, "gpuir run", ALLOCSET_DEFAULT_SIZES);

	my_index = DatumGetInt32(arg);
	if (my_index < 0 || my_index >= GPUIR_MAX_DEVICES)
		ereport(ERROR,
				(errmsg("gpuir gpu service started for device %d, outside 0 .. %d",
						my_index, GPUIR_MAX_DEVICES - 1)));
	GpuirWorkerDevice = &GpuirService->devices[my_index];
	before_shmem_exit(worker_exit, (Datum) 0);

	SpinLockAcquire(&GpuirService->mutex);
	GpuirWorkerDevice->worker_pid = MyProcPid;
	GpuirWorkerDevice->worker_latch = MyLatch;
	GpuirWorkerDevice->device_state = GPUIR_DEVSTATE_STARTING;
	SpinLockRelease(&GpuirService->mutex);

	/*
	 * parts this device's earlier worker took but did not answer: answered
	 * failed (a last part leaves the status PENDING: no answer)
	 */
	for (int i = 0; i < GpuirService->nslots; i++)
	{
		GpuirServiceSlot *slot = &GpuirService->slots[i];
		bool		wake = false;

		SpinLockAcquire(&slot->mutex);
		for (int p = 0; p < GPUIR_MAX_DEVICES; p++)
		{
			if (slot->part_owner[p] != my_index)
				continue;
			slot->part_owner[p] = -1;

			/*
			 * area_holds is left as it is: whether that part held the area
			 * is not known any more, and a hold too many only sends the
			 * backend's requests through DSM segments
			 */
			if (slot->state == GPUIR_SLOT_TAKEN || slot->state == GPUIR_SLOT_READY)
			{
				slot->parts_failed++;
				if (++slot->parts_done == slot->nparts)
				{
					slot->state = GPUIR_SLOT_DONE;
					wake = true;
				}
			}
		}
		SpinLockRelease(&slot->mutex);
		if (wake)
			GpuirServiceWake(&slot->done);
	}

	if (my_index == 0)
		resolve_devices();
	(void) probe_device();

	for (;;)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 1000L, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		reload_settings();

		/* without a device, this worker takes nothing */
		if (GpuirWorkerDevice->device_state != GPUIR_DEVSTATE_READY)
			continue;

		/* busy while it loops over batches: backends wake an idle device first */
		pg_atomic_write_u32(&GpuirWorkerDevice->busy, GPUIR_WORKER_BUSY);
		for (;;)
		{
			GpuirBatch *b;
			MemoryContext old;
			int			j = -1;
			bool		any_inflight = false;

			/* answer the batches the device has finished */
			for (int o = 0; o < GPUIR_JOBS; o++)
				if (inflight[o] != NULL && gpuir_cuda_search_done(jobs[o]))
					flight_end(o);
			for (int o = 0; o < GPUIR_JOBS; o++)
			{
				if (inflight[o] != NULL)
					any_inflight = true;
				else if (j < 0)
					j = o;
			}
			if (j < 0 || (any_inflight && !any_ready()))
			{
				/* both jobs busy, or nothing new: poll the device and the slots */
				pg_spin_delay();
				CHECK_FOR_INTERRUPTS();
				continue;
			}

			/* a reload under load, before the next batch reads the settings */
			reload_settings();
			old = MemoryContextSwitchTo(batch_cxts[j]);
			b = palloc0(sizeof(GpuirBatch));
			b->capacity = 16;
			b->taken = palloc(sizeof(GpuirTaken) * b->capacity);
			current_batch = b;
			if (!gather_batch(b))
			{
				current_batch = NULL;
				MemoryContextSwitchTo(old);
				MemoryContextReset(batch_cxts[j]);
				if (any_inflight)
				{
					/* nothing new: poll the slots and the device */
					pg_spin_delay();
					CHECK_FOR_INTERRUPTS();
					continue;
				}
				/* idle: a while polling (GPUIR_WORKER_POLLING) before the latch */
				if (idle_spin())
					continue;
				pg_atomic_write_u32(&GpuirWorkerDevice->busy, GPUIR_WORKER_ASLEEP);
				/* a request set READY while we were still BUSY: its backend set our latch */
				break;
			}
			if (run_batch(b, j))
			{
				/* in flight: answered by flight_end */
				current_batch = NULL;
				MemoryContextSwitchTo(old);
				continue;
			}
			current_batch = NULL;
			MemoryContextSwitchTo(old);
			if (b->restart)
			{
				ereport(LOG,
						(errmsg("gpuir gpu service %d: restarting after device failures", my_index)));
				proc_exit(1);
			}
			MemoryContextReset(batch_cxts[j]);
			CHECK_FOR_INTERRUPTS();
		}
	}
}
