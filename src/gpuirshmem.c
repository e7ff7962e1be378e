/*-------------------------------------------------------------------------
 *
 * gpuirshmem.c
 *	  The GPU service's shared memory and the backend side of its protocol:
 *	  registration of the background worker at shared_preload_libraries
 *	  time, request submission and waiting, counters, gpuir_status().
 *
 * Only the worker touches CUDA (ARCHITECTURE.md decision 1); a backend only
 * writes a request into shared memory and waits on its latch.
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
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "gpuirservice.h"

GpuirServiceShared *GpuirService = NULL;

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
}

static void
gpuir_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	GpuirService = ShmemInitStruct("gpuir gpu service", service_size(), &found);
	if (!found)
	{
		memset(GpuirService, 0, service_size());
		SpinLockInit(&GpuirService->mutex);
		GpuirService->device_state = GPUIR_DEVSTATE_STARTING;
		pg_atomic_init_u64(&GpuirService->bytes_cached, 0);
		pg_atomic_init_u64(&GpuirService->cache_hits, 0);
		pg_atomic_init_u64(&GpuirService->cache_misses, 0);
		pg_atomic_init_u64(&GpuirService->batches, 0);
		pg_atomic_init_u64(&GpuirService->batched_queries, 0);
		pg_atomic_init_u64(&GpuirService->gpu_queries, 0);
		pg_atomic_init_u64(&GpuirService->cpu_queries, 0);
		pg_atomic_init_u64(&GpuirService->fallbacks, 0);
		pg_atomic_init_u64(&GpuirService->errors, 0);
		for (int i = 0; i < GPUIR_NSTAGES; i++)
		{
			pg_atomic_init_u64(&GpuirService->stage_us[i], 0);
			pg_atomic_init_u64(&GpuirService->stage_n[i], 0);
		}
		pg_atomic_init_u32(&GpuirService->active, 0);
		pg_atomic_init_u32(&GpuirService->gpu_active, 0);
		for (int m = 0; m < GPUIR_ROUTE_MODES; m++)
			for (int kc = 0; kc < GPUIR_ROUTE_KCLASSES; kc++)
				for (int b = 0; b < GPUIR_ROUTE_BUCKETS; b++)
				{
					GpuirRouteCell *c = &GpuirService->route[m][kc][b];

					for (int d = 0; d < GPUIR_ROUTE_MEASURES; d++)
					{
						pg_atomic_init_u32(&c->mean_us[d], 0);
						pg_atomic_init_u32(&c->samples[d], 0);
					}
					for (int d = 0; d < GPUIR_ROUTE_DEVICES; d++)
						pg_atomic_init_u64(&c->routed[d], 0);
					pg_atomic_init_u64(&c->decisions, 0);
				}
		GpuirService->nslots = MaxBackends;
		for (int i = 0; i < MaxBackends; i++)
			SpinLockInit(&GpuirService->slots[i].mutex);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * GpuirServiceInit: called by _PG_init while shared_preload_libraries are
 * loaded: reserve the shared memory and register the worker "gpuir gpu
 * service" (restarted 5 s after a crash).
 */
void
GpuirServiceInit(void)
{
	BackgroundWorker worker;

	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = gpuir_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = gpuir_shmem_startup;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "gpuir");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "GpuirWorkerMain");
	snprintf(worker.bgw_name, BGW_MAXLEN, "gpuir gpu service");
	snprintf(worker.bgw_type, BGW_MAXLEN, "gpuir gpu service");
	RegisterBackgroundWorker(&worker);
}

/* is a worker running with a usable GPU? */
bool
GpuirServiceReady(void)
{
	bool		ready;

	if (GpuirService == NULL || GpuirBackendSlot() < 0 ||
		GpuirBackendSlot() >= (int) GpuirService->nslots)
		return false;
	SpinLockAcquire(&GpuirService->mutex);
	ready = GpuirService->worker_pid != 0 && GpuirService->worker_latch != NULL &&
		GpuirService->device_state == GPUIR_DEVSTATE_READY;
	SpinLockRelease(&GpuirService->mutex);
	return ready;
}

/* GpuirServiceCount: count one query answered by the GPU or the CPU */
void
GpuirServiceCount(bool gpu, bool fallback)
{
	if (GpuirService == NULL)
		return;
	pg_atomic_fetch_add_u64(gpu ? &GpuirService->gpu_queries : &GpuirService->cpu_queries, 1);
	if (fallback)
		pg_atomic_fetch_add_u64(&GpuirService->fallbacks, 1);
}

/*
 * GpuirServiceStage: add one event of stage, from..to, to the service's
 * stage times (gpuir_gpu_stages)
 */
void
GpuirServiceStage(GpuirStage stage, TimestampTz from, TimestampTz to)
{
	if (GpuirService == NULL)
		return;
	pg_atomic_fetch_add_u64(&GpuirService->stage_us[stage], to > from ? (uint64) (to - from) : 0);
	pg_atomic_fetch_add_u64(&GpuirService->stage_n[stage], 1);
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
		 * The worker sets area_busy only when it takes a READY request of
		 * this slot, and this backend has none READY now: a false read
		 * stays false while the request is written.
		 */
		SpinLockAcquire(&slot->mutex);
		busy = slot->area_busy;
		SpinLockRelease(&slot->mutex);
		if (!busy)
			return (GpuirRequest *) GpuirServiceSlotArea(slotno);
	}
	*seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
	return *seg != NULL ? (GpuirRequest *) dsm_segment_address(*seg) : NULL;
}

/* take the request back if the worker has not taken it yet */
static void
withdraw(GpuirServiceSlot *slot, uint64 id)
{
	SpinLockAcquire(&slot->mutex);
	if (slot->req_id == id && slot->state == GPUIR_SLOT_READY)
		slot->state = GPUIR_SLOT_IDLE;
	SpinLockRelease(&slot->mutex);
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
	Latch	   *worker_latch;
	TimestampTz start = GetCurrentTimestamp();
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

	SpinLockAcquire(&slot->mutex);
	id = ++slot->req_id;
	slot->handle = seg != NULL ? dsm_segment_handle(seg) : DSM_HANDLE_INVALID;
	slot->latch = MyLatch;
	slot->nqueries = req->nqueries;
	slot->submitted = start;
	slot->state = GPUIR_SLOT_READY;
	SpinLockRelease(&slot->mutex);

	SpinLockAcquire(&GpuirService->mutex);
	worker_latch = GpuirService->worker_latch;
	SpinLockRelease(&GpuirService->mutex);
	if (worker_latch)
		SetLatch(worker_latch);

	PG_TRY();
	{
		for (;;)
		{
			pid_t		pid;
			int			state;

			SpinLockAcquire(&slot->mutex);
			done = slot->req_id == id && slot->state == GPUIR_SLOT_DONE;
			SpinLockRelease(&slot->mutex);
			if (done)
				break;

			SpinLockAcquire(&GpuirService->mutex);
			pid = GpuirService->worker_pid;
			state = GpuirService->device_state;
			SpinLockRelease(&GpuirService->mutex);
			if (pid == 0 || state != GPUIR_DEVSTATE_READY)
			{
				snprintf(why, whylen, "the gpu service stopped");
				break;
			}
			if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), gpuir_gpu_timeout))
			{
				snprintf(why, whylen, "the gpu service did not answer within gpuir.gpu_timeout (%d ms)",
						 gpuir_gpu_timeout);
				break;
			}
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							 10, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
			CHECK_FOR_INTERRUPTS();
		}
	}
	PG_CATCH();
	{
		withdraw(slot, id);
		PG_RE_THROW();
	}
	PG_END_TRY();

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
		pg_atomic_fetch_add_u64(&GpuirService->errors, 1);
		return false;
	}
	GpuirServiceStage(GPUIR_STAGE_ROUND_TRIP, start, GetCurrentTimestamp());
	return true;
}

PG_FUNCTION_INFO_V1(gpuir_status);

/*
 * gpuir_status() RETURNS record: the GPU service's state.
 *	device				GPU name, or "none" with the reason
 *	memory				bytes of GPU memory (NULL without a GPU)
 *	compute_capability	"9.0" (NULL without a GPU)
 *	worker_pid			the worker's pid (NULL when it is not running)
 *	budget, bytes_cached	the list cache's budget and use, in bytes
 *	cache_hits, cache_misses	segment lookups served from / uploaded to the GPU
 *	batches, mean_batch_size	batches run and their mean number of queries
 *	gpu_queries, cpu_queries	queries answered on each device (cpu counts
 *							the fallbacks too)
 *	fallbacks, errors		queries meant for the GPU answered by the CPU;
 *							failed GPU requests
 *	last_error				the worker's last failure, or NULL
 * Without gpuir in shared_preload_libraries, device says so and every
 * counter is 0.
 */
Datum
gpuir_status(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	Datum		values[15];
	bool		nulls[15];
	uint64		batches,
				batched;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	memset(nulls, 0, sizeof(nulls));
	if (GpuirService == NULL)
	{
		values[0] = CStringGetTextDatum("none (gpuir is not in shared_preload_libraries)");
		for (int i = 1; i < 15; i++)
			values[i] = Int64GetDatum(0);
		nulls[1] = nulls[2] = nulls[3] = nulls[14] = true;
		values[9] = Float8GetDatum(0.0);
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
	}

	/* copy under the spinlock, build datums (which may palloc) after it */
	{
		int			state;
		char		name[sizeof(GpuirService->device_name)];
		char		err[sizeof(GpuirService->last_error)];
		uint64		mem,
					budget;
		int			ccmaj,
					ccmin;
		pid_t		pid;

		SpinLockAcquire(&GpuirService->mutex);
		state = GpuirService->device_state;
		memcpy(name, GpuirService->device_name, sizeof(name));
		memcpy(err, GpuirService->last_error, sizeof(err));
		mem = GpuirService->device_memory;
		budget = GpuirService->budget;
		ccmaj = GpuirService->cc_major;
		ccmin = GpuirService->cc_minor;
		pid = GpuirService->worker_pid;
		SpinLockRelease(&GpuirService->mutex);
		name[sizeof(name) - 1] = '\0';
		err[sizeof(err) - 1] = '\0';

		if (state == GPUIR_DEVSTATE_READY)
		{
			values[0] = CStringGetTextDatum(name);
			values[1] = Int64GetDatum((int64) mem);
			values[2] = CStringGetTextDatum(psprintf("%d.%d", ccmaj, ccmin));
		}
		else
		{
			values[0] = CStringGetTextDatum(state == GPUIR_DEVSTATE_NONE
											? psprintf("none (%s)", err)
											: "none (the gpu service is starting)");
			nulls[1] = nulls[2] = true;
		}
		if (pid != 0)
			values[3] = Int32GetDatum(pid);
		else
			nulls[3] = true;
		values[4] = Int64GetDatum((int64) budget);
		if (err[0] != '\0')
			values[14] = CStringGetTextDatum(err);
		else
			nulls[14] = true;
	}

	batches = pg_atomic_read_u64(&GpuirService->batches);
	batched = pg_atomic_read_u64(&GpuirService->batched_queries);
	values[5] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->bytes_cached));
	values[6] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->cache_hits));
	values[7] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->cache_misses));
	values[8] = Int64GetDatum((int64) batches);
	values[9] = Float8GetDatum(batches ? (double) batched / batches : 0.0);
	values[10] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->gpu_queries));
	values[11] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->cpu_queries));
	values[12] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->fallbacks));
	values[13] = Int64GetDatum((int64) pg_atomic_read_u64(&GpuirService->errors));
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
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
 * Times are wall clock (microsecond resolution).  Without gpuir in
 * shared_preload_libraries every row has 0 events.
 */
Datum
gpuir_gpu_stages(PG_FUNCTION_ARGS)
{
	static const char *const names[GPUIR_NSTAGES] = {
		"queue", "window", "prepare", "cache", "search", "answer", "round_trip"
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
