/*-------------------------------------------------------------------------
 *
 * gpuirshmem.c
 *	  The GPU service's shared memory and the backend side of its protocol:
 *	  registration of the background worker at shared_preload_libraries
 *	  time, request submission and waiting, counters, gpuir_status().
 *
 * Only the worker touches CUDA (ARCHITECTURE.md decision 1); a backend only
 * writes a request into shared memory and waits on its slot's semaphore.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/pmsignal.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "gpuirdicthints.h"
#include "gpuirservice.h"

GpuirServiceShared *GpuirService = NULL;
pg_atomic_uint64 *GpuirDictHints = NULL;

/* GpuirServiceTruncationLock's LWLock; NULL without the GPU service */
static LWLock *truncation_lock = NULL;
#define GPUIR_TRUNCATION_TRANCHE "gpuir truncation"

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* bytes of the header and slots; the slots' request areas follow */
static Size
slots_size(void)
{
	return MAXALIGN(add_size(offsetof(GpuirServiceShared, slots),
							 mul_size(MaxBackends, sizeof(GpuirServiceSlot))));
}

static Size
service_size(void)
{
	return add_size(slots_size(), mul_size(MaxBackends, GPUIR_SLOT_AREA));
}

/* GpuirServiceSlotArea: the request area of slot slotno (GPUIR_SLOT_AREA bytes) */
char *
GpuirServiceSlotArea(int slotno)
{
	Assert(slotno >= 0 && slotno < GpuirService->nslots);
	return (char *) GpuirService + slots_size() + (Size) slotno * GPUIR_SLOT_AREA;
}

static void
gpuir_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(service_size());
	RequestAddinShmemSpace(mul_size(GPUIR_DICT_HINTS, sizeof(pg_atomic_uint64)));
	RequestNamedLWLockTranche(GPUIR_TRUNCATION_TRANCHE, 1);
}

static void
gpuir_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	truncation_lock = &GetNamedLWLockTranche(GPUIR_TRUNCATION_TRANCHE)->lock;
	GpuirDictHints = ShmemInitStruct("gpuir dictionary hints",
									 mul_size(GPUIR_DICT_HINTS, sizeof(pg_atomic_uint64)), &found);
	if (!found)
		for (int i = 0; i < GPUIR_DICT_HINTS; i++)
			pg_atomic_init_u64(&GpuirDictHints[i], 0);
	GpuirService = ShmemInitStruct("gpuir gpu service", service_size(), &found);
	if (!found)
	{
		memset(GpuirService, 0, service_size());
		SpinLockInit(&GpuirService->mutex);
		for (int d = 0; d < GPUIR_MAX_DEVICES; d++)
		{
			GpuirServiceDevice *dev = &GpuirService->devices[d];

			dev->device_state = GPUIR_DEVSTATE_STARTING;
			pg_atomic_init_u32(&dev->busy, GPUIR_WORKER_ASLEEP);
			pg_atomic_init_u64(&dev->bytes_cached, 0);
			pg_atomic_init_u64(&dev->cache_hits, 0);
			pg_atomic_init_u64(&dev->list_hits, 0);
			pg_atomic_init_u64(&dev->bytes_shipped, 0);
			pg_atomic_init_u64(&dev->cache_misses, 0);
			pg_atomic_init_u64(&dev->batches, 0);
			pg_atomic_init_u64(&dev->batched_queries, 0);
			pg_atomic_init_u64(&dev->queries, 0);
			pg_atomic_init_u64(&dev->errors, 0);
			pg_atomic_init_u64(&dev->searched_again, 0);
			pg_atomic_init_u64(&dev->decoded_found, 0);
			pg_atomic_init_u64(&dev->decoded_lists, 0);
			GpuirReaderJobInit(&dev->readers);
		}
		pg_atomic_init_u64(&GpuirService->cpu_queries, 0);
		pg_atomic_init_u64(&GpuirService->fallbacks, 0);
		pg_atomic_init_u64(&GpuirService->pruned_decided, 0);
		pg_atomic_init_u64(&GpuirService->pruned_refused, 0);
		for (int i = 0; i < GPUIR_NSTAGES; i++)
		{
			pg_atomic_init_u64(&GpuirService->stage_us[i], 0);
			pg_atomic_init_u64(&GpuirService->stage_n[i], 0);
		}
		pg_atomic_init_u32(&GpuirService->active, 0);
		pg_atomic_init_u32(&GpuirService->cpu_running, 0);
		GpuirRouteInit();
		GpuirService->nslots = MaxBackends;
		for (int i = 0; i < MaxBackends; i++)
		{
			SpinLockInit(&GpuirService->slots[i].mutex);
			pg_atomic_init_u64(&GpuirService->slots[i].search_began, 0);
			if (sem_init(&GpuirService->slots[i].done, 1, 0) != 0)
				elog(FATAL, "gpuir: sem_init of a GPU service slot failed: %m");
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * GpuirServiceTruncationLock: keep the GPU service's page reads and the
 * truncation of an index apart.  The worker reads a request's segment pages
 * without a lock on the index, also after the request's backend has given
 * it up (gpuircache.c), when nothing holds back the reuse of those pages
 * any more: a page read between the truncation's drop of the buffers past
 * the new end and the cut of the file would leave a buffer past the end,
 * which the next extension of the index reports as "unexpected data beyond
 * EOF" until the buffer is evicted.  So the worker holds this lock shared
 * while ReadBuffer brings one page in and pins it (truncate false), and a
 * truncation holds it exclusively around RelationTruncate (truncate true),
 * whose drop of the buffers waits for a pin: a page read before the cut is
 * dropped, one read after it fails as beyond the end of the file, and the
 * worker fails that run (its requests' backends fall back to the CPU
 * engine).  The worker takes the page's content lock only after releasing
 * this one: the truncating backend holds the relation extension lock, for
 * which an inserter holding a content lock may wait (no cycle of waits;
 * the pages a truncation drops are free, and nobody else locks them).
 * Without the GPU service (gpuir not in shared_preload_libraries) there is
 * no worker and this does nothing.
 */
void
GpuirServiceTruncationLock(bool truncate)
{
	if (truncation_lock != NULL)
		LWLockAcquire(truncation_lock, truncate ? LW_EXCLUSIVE : LW_SHARED);
}

/* GpuirServiceTruncationUnlock: release GpuirServiceTruncationLock's lock */
void
GpuirServiceTruncationUnlock(void)
{
	if (truncation_lock != NULL)
		LWLockRelease(truncation_lock);
}

/*
 * GpuirServiceWorkerInit: *w, a background worker of gpuir's with shared
 * memory access (no database), started once the server is consistent:
 * function (in this library), its type and name (bgw_type, bgw_name), its
 * argument, and its restart time (seconds, or BGW_NEVER_RESTART)
 */
void
GpuirServiceWorkerInit(BackgroundWorker *w, const char *function, const char *type,
					   const char *name, Datum arg, int restart)
{
	memset(w, 0, sizeof(*w));
	w->bgw_flags = BGWORKER_SHMEM_ACCESS;
	w->bgw_start_time = BgWorkerStart_ConsistentState;
	w->bgw_restart_time = restart;
	snprintf(w->bgw_library_name, BGW_MAXLEN, "gpuir");
	snprintf(w->bgw_function_name, BGW_MAXLEN, "%s", function);
	snprintf(w->bgw_name, BGW_MAXLEN, "%s", name);
	snprintf(w->bgw_type, BGW_MAXLEN, "%s", type);
	w->bgw_main_arg = arg;
}

/*
 * GpuirServiceRegisterWorker: register the worker of device index
 * (GpuirService->devices[index]), "gpuir gpu service index", restarted 5 s
 * after it exits with status 1 or crashes.  Device 0's is registered at
 * shared_preload_libraries time (dynamic false); it registers the others
 * (dynamic true) once it knows how many devices gpuir.devices gives.
 * Returns false when no background worker slot was left (dynamic only).
 */
bool
GpuirServiceRegisterWorker(int index, bool dynamic)
{
	BackgroundWorker worker;
	char		name[BGW_MAXLEN];

	snprintf(name, sizeof(name), "gpuir gpu service %d", index);
	GpuirServiceWorkerInit(&worker, "GpuirWorkerMain", "gpuir gpu service", name,
						   Int32GetDatum(index), 5);
	if (!dynamic)
	{
		RegisterBackgroundWorker(&worker);
		return true;
	}
	return RegisterDynamicBackgroundWorker(&worker, NULL);
}

/*
 * GpuirServiceInit: called by _PG_init while shared_preload_libraries are
 * loaded: reserve the shared memory and register device 0's worker.
 */
void
GpuirServiceInit(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = gpuir_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = gpuir_shmem_startup;

	(void) GpuirServiceRegisterWorker(0, false);
}

/*
 * GpuirParseDevices: parse a value of gpuir.devices: 'all' (or empty) sets
 * *all; else a comma-separated list of distinct CUDA device numbers, at
 * most GPUIR_MAX_DEVICES, into ordinals[0 .. *n).  False with the reason
 * in why for anything else.
 */
bool
GpuirParseDevices(const char *value, bool *all, int *ordinals, int *n,
				  char *why, size_t whylen)
{
	const char *p = value ? value : "";

	*all = false;
	*n = 0;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '\0' || pg_strcasecmp(p, "all") == 0)
	{
		*all = true;
		return true;
	}
	for (;;)
	{
		char	   *end;
		long		v;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
		{
			snprintf(why, whylen, "expected a device number at \"%s\"", p);
			return false;
		}
		errno = 0;
		v = strtol(p, &end, 10);
		if (errno != 0 || v > 1023)
		{
			snprintf(why, whylen, "device number out of range at \"%s\"", p);
			return false;
		}
		for (int i = 0; i < *n; i++)
			if (ordinals[i] == (int) v)
			{
				snprintf(why, whylen, "device %ld is listed twice", v);
				return false;
			}
		if (*n == GPUIR_MAX_DEVICES)
		{
			snprintf(why, whylen, "more than %d devices", GPUIR_MAX_DEVICES);
			return false;
		}
		ordinals[(*n)++] = (int) v;
		p = end;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			return true;
		if (*p != ',')
		{
			snprintf(why, whylen, "expected a comma at \"%s\"", p);
			return false;
		}
		p++;
	}
}

/* device_up: does device d's worker run and serve requests?  (mutex held) */
static inline bool
device_up(const GpuirServiceDevice *d)
{
	return d->worker_pid != 0 && d->worker_latch != NULL &&
		d->device_state == GPUIR_DEVSTATE_READY;
}

/*
 * wake_workers: set the latch of one worker that serves requests: the first
 * idle one (asleep, or polling in idle_spin) in device order (so that under
 * light load one device answers everything, with its context and caches
 * warm, and the next device joins only while the first is busy), else the
 * first busy one; with all, of
 * every one.  A busy worker looks at the slots again when its batch is
 * done, so a request is never left for a sleeping worker while another
 * runs.
 */
static void
wake_workers(bool all)
{
	Latch	   *latches[GPUIR_MAX_DEVICES];
	int			nl = 0;
	Latch	   *busy = NULL;
	Latch	   *idle = NULL;

	SpinLockAcquire(&GpuirService->mutex);
	for (int i = 0; i < GpuirService->ndevices; i++)
	{
		GpuirServiceDevice *d = &GpuirService->devices[i];

		if (!device_up(d))
			continue;
		if (all)
			latches[nl++] = d->worker_latch;
		else if (pg_atomic_read_u32(&d->busy) != GPUIR_WORKER_BUSY)	/* asleep or polling */
		{
			idle = d->worker_latch;
			break;
		}
		else if (busy == NULL)
			busy = d->worker_latch;
	}
	SpinLockRelease(&GpuirService->mutex);
	if (!all)
		latches[nl++] = idle != NULL ? idle : busy;
	for (int i = 0; i < nl; i++)
		if (latches[i] != NULL)
			SetLatch(latches[i]);
}

/* devices_up_locked: how many devices' workers serve requests (mutex held) */
static int
devices_up_locked(void)
{
	int			n = 0;

	for (int d = 0; d < GpuirService->ndevices; d++)
		n += device_up(&GpuirService->devices[d]) ? 1 : 0;
	return n;
}

/* GpuirServiceDevicesUp: how many devices' workers serve requests now */
int
GpuirServiceDevicesUp(void)
{
	int			n;

	if (GpuirService == NULL)
		return 0;
	SpinLockAcquire(&GpuirService->mutex);
	n = devices_up_locked();
	SpinLockRelease(&GpuirService->mutex);
	return n;
}

/* is a worker running with a usable GPU? */
bool
GpuirServiceReady(void)
{
	if (GpuirService == NULL || GpuirBackendSlot() < 0 ||
		GpuirBackendSlot() >= (int) GpuirService->nslots)
		return false;
	return GpuirServiceDevicesUp() > 0;
}

/*
 * GpuirServiceCount: count one query answered by the GPU or the CPU (the
 * GPU's are counted per device by the workers, gpuir_status's gpu_queries)
 */
void
GpuirServiceCount(bool gpu, bool fallback)
{
	if (GpuirService == NULL)
		return;
	if (!gpu)
		pg_atomic_fetch_add_u64(&GpuirService->cpu_queries, 1);
	if (fallback)
		pg_atomic_fetch_add_u64(&GpuirService->fallbacks, 1);
}

/*
 * GpuirServiceCountPruned: count one query the GPU searched over pruned
 * lists (gpuirprune.h): decided there, or refused (answered by the CPU)
 */
void
GpuirServiceCountPruned(bool decided)
{
	if (GpuirService == NULL)
		return;
	pg_atomic_fetch_add_u64(decided ? &GpuirService->pruned_decided : &GpuirService->pruned_refused, 1);
}

/*
 * GpuirServiceStage: add one event of stage, from..to, to the service's
 * stage times (gpuir_gpu_stages)
 */
void
GpuirServiceStage(GpuirStage stage, TimestampTz from, TimestampTz to)
{
	GpuirServiceStageAdd(stage, to > from ? (uint64) (to - from) : 0, 1);
}

/*
 * GpuirServiceStageAdd: add events events of stage, us microseconds in all
 * (the worker sums its requests' queue stage over a batch: two atomic adds
 * a batch on the counters' cache line, which every backend's round trip
 * writes too, rather than two a request)
 */
void
GpuirServiceStageAdd(GpuirStage stage, uint64 us, uint64 events)
{
	if (GpuirService == NULL || events == 0)
		return;
	pg_atomic_fetch_add_u64(&GpuirService->stage_us[stage], us);
	pg_atomic_fetch_add_u64(&GpuirService->stage_n[stage], events);
}

/*
 * GpuirServiceRequestArea: memory for a request of size bytes: the
 * backend's slot area when the request fits and the worker does not hold
 * the area (*seg = NULL), else a new DSM segment (*seg).  NULL when no DSM
 * segment is left.  The caller detaches *seg when it is not NULL.
 */
GpuirRequest *
GpuirServiceRequestArea(Size size, dsm_segment **seg)
{
	*seg = NULL;
	if (size <= GPUIR_SLOT_AREA && GpuirServiceReady())
	{
		int			slotno = GpuirBackendSlot();
		GpuirServiceSlot *slot = &GpuirService->slots[slotno];
		bool		busy;

		/*
		 * Workers raise area_holds only when they take a part of a READY
		 * request of this slot, and this backend has none READY now: a 0
		 * read stays 0 while the request is written.
		 */
		SpinLockAcquire(&slot->mutex);
		busy = slot->area_holds > 0;
		SpinLockRelease(&slot->mutex);
		if (!busy)
			return (GpuirRequest *) GpuirServiceSlotArea(slotno);
	}
	*seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	return *seg != NULL ? (GpuirRequest *) dsm_segment_address(*seg) : NULL;
}

/*
 * take_wakes: with the slot's mutex held, the other backends' slots the
 * worker left for this backend to wake (gpuir.wake_fanout), when the slot
 * holds request id answered; they are taken once.  Returns how many were
 * copied into wake.
 */
static int
take_wakes(GpuirServiceSlot *slot, uint64 id, sem_t **wake)
{
	int			n = 0;

	if (slot->req_id == id && slot->state == GPUIR_SLOT_DONE)
	{
		n = Min(slot->nwake, GPUIR_WAKE_FANOUT_MAX);
		memcpy(wake, slot->wake, sizeof(sem_t *) * n);
		slot->nwake = 0;
	}
	return n;
}

/*
 * withdraw: give request id up.  The slot is no longer waiting, so that a
 * worker that answers it later stores no wake-ups in it (it wakes that
 * batch's other backends itself); if some part is not taken yet, take the
 * request back: no worker takes another, and the answers of the parts
 * taken are ignored (their workers find the slot IDLE); if the answer came
 * already, wake the backends it left for this one.
 */
static void
withdraw(GpuirServiceSlot *slot, uint64 id)
{
	sem_t	   *wake[GPUIR_WAKE_FANOUT_MAX];
	int			nwake;

	SpinLockAcquire(&slot->mutex);
	if (slot->req_id == id)
		slot->waiting = false;	/* a later answer stores no wake-ups here */
	if (slot->req_id == id && slot->state == GPUIR_SLOT_READY)
		slot->state = GPUIR_SLOT_IDLE;
	nwake = take_wakes(slot, id, wake);
	SpinLockRelease(&slot->mutex);
	/* answered after all (an interrupt raced the answer): the chain goes on */
	for (int i = 0; i < nwake; i++)
		GpuirServiceWake(wake[i]);
}

/* the request this backend waits for (GpuirServiceRun), for wait_exit */
static GpuirServiceSlot *wait_slot = NULL;
static uint64 wait_id = 0;

/*
 * wait_exit: before_shmem_exit callback: a backend that leaves while it
 * waits for the GPU service (FATAL, postmaster death: no PG_CATCH runs)
 * withdraws its request, so that an answer stores no wake-ups for it and
 * the backends one left are woken
 */
static void
wait_exit(int code, Datum arg)
{
	if (wait_slot != NULL && wait_id != 0)
		withdraw(wait_slot, wait_id);
	wait_slot = NULL;
	wait_id = 0;
}

/* wait_begin: this backend waits for request id of slot (wait_exit's) */
static void
wait_begin(GpuirServiceSlot *slot, uint64 id)
{
	static bool registered = false;

	if (!registered)
	{
		before_shmem_exit(wait_exit, (Datum) 0);
		registered = true;
	}
	wait_slot = slot;
	wait_id = id;
}

/*
 * parts_served: are the workers holding parts of the slot's request (owner
 * given, copied under the slot's mutex) running, and, while some part is
 * not taken, is there a worker to take it?
 */
static bool
parts_served(const int8 *owner, int nparts, bool untaken)
{
	bool		ok = true;

	SpinLockAcquire(&GpuirService->mutex);
	for (int p = 0; p < nparts && ok; p++)
		if (owner[p] >= 0)
			ok = owner[p] < GpuirService->ndevices &&
				device_up(&GpuirService->devices[owner[p]]);
	if (ok && untaken)
		ok = devices_up_locked() > 0;
	SpinLockRelease(&GpuirService->mutex);
	return ok;
}

/*
 * wait_done: sleep on the slot's done semaphore until a worker (or another
 * backend of the batch, gpuir.wake_fanout) posts it, 10 ms pass on the
 * monotonic clock (sem_clockwait; sem_timedwait's wall clock without it), or
 * a signal arrives: glibc's timed semaphore wait returns EINTR after a
 * signal handler even under SA_RESTART, so a query cancel,
 * statement_timeout or termination ends it and the caller's
 * CHECK_FOR_INTERRUPTS acts; one that lands between that check and the
 * wait, or a wait that a signal did not end, lasts the 10 ms.  Exits, as
 * WL_EXIT_ON_PM_DEATH does, when the postmaster has died.
 *
 * The backend does not sleep on its latch here: a latch set is a kill(),
 * and the wait an epoll_wait and a read of the signal's descriptor, where
 * a semaphore (a futex: PostgreSQL's own LWLock waits sleep on one,
 * PGSemaphore) is one system call on each side, and none for a post that
 * comes before the wait.  A post the backend no longer waits for (an
 * answer after a timeout, a wake-up chain that ran late) leaves the count
 * up: the next wait returns at once, and the caller's loop looks at the
 * slot and waits again; GpuirServiceRun drains the count at each submit.
 */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 30))
#define GPUIR_HAVE_SEM_CLOCKWAIT 1
#define GPUIR_WAIT_CLOCK CLOCK_MONOTONIC
#else
#define GPUIR_WAIT_CLOCK CLOCK_REALTIME
#endif

static void
wait_done(GpuirServiceSlot *slot)
{
	struct timespec deadline;

	if (INTERRUPTS_PENDING_CONDITION() && INTERRUPTS_CAN_BE_PROCESSED())
		return;					/* the caller's CHECK_FOR_INTERRUPTS acts now */
	clock_gettime(GPUIR_WAIT_CLOCK, &deadline);
	deadline.tv_nsec += 10 * 1000 * 1000L;
	if (deadline.tv_nsec >= 1000 * 1000 * 1000L)
	{
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000 * 1000 * 1000L;
	}
	pgstat_report_wait_start(PG_WAIT_EXTENSION);
#ifdef GPUIR_HAVE_SEM_CLOCKWAIT
	(void) sem_clockwait(&slot->done, CLOCK_MONOTONIC, &deadline);	/* 0, EINTR or ETIMEDOUT */
#else
	(void) sem_timedwait(&slot->done, &deadline);
#endif
	pgstat_report_wait_end();
	if (!PostmasterIsAlive())
		proc_exit(1);
}

/*
 * GpuirServiceRun: hand the request at req (in seg, or in the slot's area
 * when seg is NULL: GpuirServiceRequestArea) to the worker and wait for its
 * answer.  Returns true when the worker answered it (req->status
 * GPUIR_REQ_OK, results in the segment); false, with the reason in why, when
 * the worker is absent or died, did not answer within gpuir.gpu_timeout, or
 * failed: the caller then uses the CPU engine.  Query cancel and
 * statement_timeout interrupt the wait with the usual ERROR.
 */
bool
GpuirServiceRun(dsm_segment *seg, GpuirRequest *req, char *why, Size whylen)
{
	GpuirServiceSlot *slot;
	TimestampTz start = GetCurrentTimestamp();
	TimestampTz answered = 0;
	uint64		id;
	bool		done = false;

	if (!GpuirServiceReady())
	{
		snprintf(why, whylen, "the gpu service is not running");
		return false;
	}
	slot = &GpuirService->slots[GpuirBackendSlot()];
	req->status = GPUIR_REQ_PENDING;
	pg_write_barrier();
	/* posts of requests before this one (wait_done) */
	while (sem_trywait(&slot->done) == 0)
		;

	Assert(req->nparts >= 1 && req->nparts <= GPUIR_MAX_DEVICES);
	SpinLockAcquire(&slot->mutex);
	id = ++slot->req_id;
	slot->handle = seg != NULL ? dsm_segment_handle(seg) : DSM_HANDLE_INVALID;
	slot->nqueries = req->nqueries;
	slot->submitted = start;
	slot->answered = 0;			/* set by the worker that answers it */
	slot->nparts = (int) req->nparts;
	slot->parts_taken = 0;
	slot->parts_done = 0;
	slot->parts_failed = 0;
	memset(slot->part_owner, -1, sizeof(slot->part_owner));
	slot->nwake = 0;
	slot->waiting = true;
	slot->state = GPUIR_SLOT_READY;
	SpinLockRelease(&slot->mutex);

	/* a request in parts: every device may take one */
	wake_workers(req->nparts > 1);

	wait_begin(slot, id);
	PG_TRY();
	{
		for (int waits = 0;; waits++)
		{
			int			state;
			int			nparts;
			bool		untaken;
			int8		owner[GPUIR_MAX_DEVICES];
			sem_t	   *wake[GPUIR_WAKE_FANOUT_MAX];
			int			nwake;

			SpinLockAcquire(&slot->mutex);
			state = slot->state;
			nparts = slot->nparts;
			untaken = slot->parts_taken < slot->nparts;
			memcpy(owner, slot->part_owner, sizeof(owner));
			done = slot->req_id == id && state == GPUIR_SLOT_DONE;
			if (done)
				answered = slot->answered;
			nwake = take_wakes(slot, id, wake);
			SpinLockRelease(&slot->mutex);
			if (done)
			{
				/* the backends of the same batch this one wakes, before its own work */
				for (int i = 0; i < nwake; i++)
					GpuirServiceWake(wake[i]);
				break;
			}

			/* the workers holding its parts, and one for the parts left */
			if (!parts_served(owner, nparts, untaken))
			{
				snprintf(why, whylen, "the gpu service stopped");
				break;
			}
			/* not taken after a wait: the woken worker may have gone, wake them all */
			if (waits > 0 && state == GPUIR_SLOT_READY)
				wake_workers(true);
			if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), gpuir_gpu_timeout))
			{
				snprintf(why, whylen, "the gpu service did not answer within gpuir.gpu_timeout (%d ms)",
						 gpuir_gpu_timeout);
				break;
			}
			wait_done(slot);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		wait_id = 0;
		withdraw(slot, id);
		PG_RE_THROW();
	}
	PG_END_TRY();
	wait_id = 0;

	if (!done)
	{
		withdraw(slot, id);
		return false;
	}
	pg_read_barrier();
	if (req->status != GPUIR_REQ_OK)
	{
		snprintf(why, whylen, "the gpu service failed: %s",
				 req->status == GPUIR_REQ_FAILED ? req->detail : "no answer");
		return false;
	}
	{
		static uint32 wake_tick = 0;
		TimestampTz now = GetCurrentTimestamp();

		GpuirServiceStage(GPUIR_STAGE_ROUND_TRIP, start, now);
		/* one request in GPUIR_WAKE_SAMPLE: two more atomic adds on a shared line */
		if (answered != 0 && wake_tick++ % GPUIR_WAKE_SAMPLE == 0)
			GpuirServiceStage(GPUIR_STAGE_WAKE, answered, now);
	}
	return true;
}

PG_FUNCTION_INFO_V1(gpuir_status);

#define GPUIR_STATUS_COLS	29

/*
 * gpuir_status() RETURNS SETOF record: the GPU service's state, one row per
 * device of gpuir.devices (one row before the service has looked, and one
 * when no GPU is usable):
 *	device_id			CUDA device number (NULL before the service has looked,
 *						and when it found no device to use)
 *	device				GPU name, or "none" with the reason
 *	memory				bytes of GPU memory (NULL without a usable GPU)
 *	compute_capability	"9.0" (NULL without a usable GPU)
 *	worker_pid			the device's worker (NULL when it is not running)
 *	budget, bytes_cached	the device's list cache budget and use, in bytes
 *	cache_hits, cache_misses	segment lookups served from / uploaded to it
 *	list_hits, bytes_shipped	segments larger than the budget, searched
 *						from their lists: lists found kept on the device,
 *						and bytes of lists that travelled with a batch
 *	batches, mean_batch_size	batches it ran and their mean number of queries
 *	gpu_queries			queries it answered (a query split over the devices
 *						counts on the device that answered its first part)
 *	cpu_queries, fallbacks	service-wide, the same on every row: queries
 *							answered by the CPU engine (the fallbacks
 *							included), and queries meant for the GPU that the
 *							CPU answered (a failure, a timeout, no device)
 *	errors				requests it answered as failed
 *	last_error			its worker's last failure, or NULL
 * and, service-wide (the same on every row), the state of the queue and of
 * gpuir.device = auto's cost model (gpuirroute.c; gpuir_route() shows its
 * cells):
 *	queue_depth			requests submitted and not yet taken by a worker now
 *	backends_searching	backends in a gpuir search now, on either device
 *						(what auto's load classes count)
 *	auto_to_cpu, auto_to_gpu	queries auto sent to each device
 *	auto_predicted_us, auto_observed_us	over the queries auto sent by its
 *						means, the mean of the model's time for the device
 *						chosen and of the time the query then took, in the
 *						measure compared (CPU engine: CPU time; GPU: wall
 *						time, or the backend's CPU time with oversubscribed
 *						cores); NULL before any
 *	pruned_decided, pruned_refused	queries the GPU searched over pruned
 *						lists (gpuirprune.h) whose top-k those decided,
 *						and those that the CPU engine then answered
 * and, per device again:
 *	searched_again		queries with k >= 100 that it answered with a second
 *						search because their tiles emitted more candidates
 *						than the room the first reserved (the score
 *						histogram did not raise their threshold soon
 *						enough; gpuir_cuda_search_set_short_room); a query
 *						split over the devices counts on each device whose
 *						part was searched again, unlike gpu_queries
 *	decoded_found, decoded_lists	lists of or and bmw queries that its
 *						searches found decoded by an earlier search of
 *						the same segment (kept in each search job's area,
 *						cuda/gpuir_decode_cache.cuh), and lists they
 *						decoded
 * Without gpuir in shared_preload_libraries, one row says so, every counter
 * 0.
 */
Datum
gpuir_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		values[GPUIR_STATUS_COLS];
	bool		nulls[GPUIR_STATUS_COLS];
	int			ndevices;
	int64		queue_depth = 0;
	GpuirRouteTotalsData route;

	InitMaterializedSRF(fcinfo, 0);
	if (GpuirService == NULL)
	{
		memset(nulls, 0, sizeof(nulls));
		values[1] = CStringGetTextDatum("none (gpuir is not in shared_preload_libraries)");
		for (int i = 2; i < GPUIR_STATUS_COLS; i++)
			values[i] = Int64GetDatum(0);
		nulls[0] = nulls[2] = nulls[3] = nulls[4] = nulls[17] = true;
		values[12] = Float8GetDatum(0.0);
		values[19] = Int32GetDatum(0);
		nulls[22] = nulls[23] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
		return (Datum) 0;
	}

	SpinLockAcquire(&GpuirService->mutex);
	ndevices = GpuirService->ndevices;
	SpinLockRelease(&GpuirService->mutex);

	/* the service-wide columns */
	for (int i = 0; i < GpuirService->nslots; i++)
	{
		GpuirServiceSlot *slot = &GpuirService->slots[i];

		SpinLockAcquire(&slot->mutex);
		if (slot->state == GPUIR_SLOT_READY)
			queue_depth++;
		SpinLockRelease(&slot->mutex);
	}
	GpuirRouteTotals(&route);

	for (int d = 0; d < Max(ndevices, 1); d++)
	{
		GpuirServiceDevice *dev = &GpuirService->devices[d];
		int			state;
		int			ordinal;
		char		name[sizeof(dev->device_name)];
		char		err[sizeof(dev->last_error)];
		uint64		mem,
					budget,
					batches,
					batched;
		int			ccmaj,
					ccmin;
		pid_t		pid;

		/* copy under the spinlock, build datums (which may palloc) after it */
		SpinLockAcquire(&GpuirService->mutex);
		state = dev->device_state;
		ordinal = dev->ordinal;
		memcpy(name, dev->device_name, sizeof(name));
		memcpy(err, dev->last_error, sizeof(err));
		mem = dev->device_memory;
		budget = dev->budget;
		ccmaj = dev->cc_major;
		ccmin = dev->cc_minor;
		pid = dev->worker_pid;
		SpinLockRelease(&GpuirService->mutex);
		name[sizeof(name) - 1] = '\0';
		err[sizeof(err) - 1] = '\0';

		memset(nulls, 0, sizeof(nulls));
		if (ndevices > 0 && ordinal >= 0)
			values[0] = Int32GetDatum(ordinal);
		else
			nulls[0] = true;
		if (state == GPUIR_DEVSTATE_READY)
		{
			values[1] = CStringGetTextDatum(name);
			values[2] = Int64GetDatum((int64) mem);
			values[3] = CStringGetTextDatum(psprintf("%d.%d", ccmaj, ccmin));
		}
		else
		{
			values[1] = CStringGetTextDatum(state == GPUIR_DEVSTATE_NONE
											? psprintf("none (%s)", err)
											: "none (the gpu service is starting)");
			nulls[2] = nulls[3] = true;
		}
		if (pid != 0)
			values[4] = Int32GetDatum(pid);
		else
			nulls[4] = true;
		values[5] = Int64GetDatum((int64) budget);
		batches = pg_atomic_read_u64(&dev->batches);
		batched = pg_atomic_read_u64(&dev->batched_queries);
		values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->bytes_cached));
		values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->cache_hits));
		values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->cache_misses));
		values[9] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->list_hits));
		values[10] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->bytes_shipped));
		values[11] = Int64GetDatum((int64) batches);
		values[12] = Float8GetDatum(batches ? (double) batched / batches : 0.0);
		values[13] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->queries));
		values[14] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->cpu_queries));
		values[15] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->fallbacks));
		values[16] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->errors));
		if (err[0] != '\0')
			values[17] = CStringGetTextDatum(err);
		else
			nulls[17] = true;
		values[18] = Int64GetDatum(queue_depth);
		values[19] = Int32GetDatum((int32) pg_atomic_read_u32(&GpuirService->active));
		values[20] = Int64GetDatum((int64) route.to_cpu);
		values[21] = Int64GetDatum((int64) route.to_gpu);
		values[22] = Float8GetDatum(route.predicted_us);
		values[23] = Float8GetDatum(route.observed_us);
		nulls[22] = nulls[23] = (route.compared == 0);
		values[24] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->pruned_decided));
		values[25] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->pruned_refused));
		values[26] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->searched_again));
		values[27] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->decoded_found));
		values[28] = Int64GetDatum((int64) pg_atomic_read_u64(&dev->decoded_lists));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(gpuir_gpu_stages);

/*
 * gpuir_gpu_stages() RETURNS SETOF record (stage text, events bigint,
 * total_ms float8, mean_us float8): the time the GPU service's requests
 * spent in each stage since the server started, to see where a GPU query's
 * round trip goes (bench/README.md, "The request path"):
 *	queue		per request: submitted until the worker took it
 *	window		per batch: first request taken until the batch ran
 *				(gpuir.batch_window under load)
 *	prepare		per batch: requests mapped and validated
 *	cache		per run (one segment): list cache lookup, with the reads
 *				and the upload of a segment that was not resident
 *	search		per run: gpuir_cuda_search_batch (staging, copies,
 *				kernels, synchronisation)
 *	answer		per batch: results written into the requests, backends
 *				woken
 *	round_trip	per request answered, measured by the backend: submitted
 *				until it saw the answer
 *	transit_read	per run of a segment larger than the budget (part of
 *				cache): the missed lists' block headers and payloads read
 *				from the pages into the staging (with the list readers)
 *	transit_send	the same runs (part of cache): the upload, the cache's
 *				admissions and evictions, the kept copies, the assembly
 *	worker_cpu	per query answered: the CPU time of the worker's process
 *				(its threads too) since the batch it answered before,
 *				its polling while batches are in flight and its spin
 *				before sleeping included: what the GPU's queries cost a
 *				core of the host, which the backends' share
 *	wake		per request answered, measured by the backend (one request
 *				in GPUIR_WAKE_SAMPLE of each): from the worker's answer (when it
 *				began answering the request's batch) until the backend saw it (woken by the worker or, with
 *				gpuir.wake_fanout, by another backend of the batch, and the
 *				wait for a core); part of round_trip
 * Times are wall clock (microsecond resolution) except worker_cpu's.  Without gpuir in
 * shared_preload_libraries every row has 0 events.
 */
Datum
gpuir_gpu_stages(PG_FUNCTION_ARGS)
{
	static const char *const names[GPUIR_NSTAGES] = {
		"queue", "window", "prepare", "cache", "search", "answer", "round_trip",
		"transit_read", "transit_send", "worker_cpu", "wake"
	};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	for (int i = 0; i < GPUIR_NSTAGES; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};
		uint64		us = 0,
					n = 0;

		if (GpuirService != NULL)
		{
			us = pg_atomic_read_u64(&GpuirService->stage_us[i]);
			n = pg_atomic_read_u64(&GpuirService->stage_n[i]);
		}
		values[0] = CStringGetTextDatum(names[i]);
		values[1] = Int64GetDatum((int64) n);
		values[2] = Float8GetDatum((double) us / 1000.0);
		if (n > 0)
			values[3] = Float8GetDatum((double) us / (double) n);
		else
			nulls[3] = true;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
