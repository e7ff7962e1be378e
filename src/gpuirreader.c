/*-------------------------------------------------------------------------
 *
 * gpuirreader.c
 *	  The list readers of the GPU service: background workers that copy
 *	  the pages of lists in transit beside the worker.
 *
 * A segment larger than the device budget is searched from its lists, and
 * the lists a run does not find kept on the device travel with it
 * (gpuircache.c, GpuirCacheTransit).  Copying their pages out of the buffer
 * pool is what bounds such runs when the worker does it alone: on an H200
 * with 10 M rows at a 10% budget, 1.9 ms of each 64-client batch against a
 * search of 0.3-0.5 ms (bench/results/2026-11-29-h200-budget-10m.md).  So
 * the worker splits the payload copies of a run into tasks (at most
 * GPUIR_READ_CHUNK bytes each) and takes them together with up to
 * gpuir.list_readers reader processes, which it starts the first time it
 * needs them (dynamic background workers "gpuir list reader", counted
 * against max_worker_processes; where none can be started, the worker
 * copies alone, as before).
 *
 * Staging.  The tasks and the bytes they copy live in a DSM segment of the
 * worker's (the staging segment: a GpuirStagingHeader, the tasks, then the
 * list images at a page boundary), which the worker page-locks with
 * gpuir_cuda_host_register so that the upload is a DMA copy straight from
 * it, and grows (a new segment) when a run needs more.  The worker writes
 * each image's block arrays itself, from the block headers it has read and
 * checked; the tasks copy the payloads.
 *
 * A job (GpuirReaderJob in the device's shared memory, gpuirservice.h says
 * how a job is published and a task claimed).  Every task is copied with
 * GpuirCacheReadStream, the worker's own page reader (its checks, its
 * truncation lock).  An ERROR in a task is caught where it happens and
 * kept (the first one), and the worker raises it once every task of the
 * job is finished: a task still copying must never write into the staging
 * of a later job.  If a reader exits while tasks are unfinished, the
 * worker copies those itself (a copy done twice writes the same bytes).
 * Readers exit when their worker is gone, when gpuir.list_readers drops
 * below their number, or on SIGTERM; the worker starts them again when it
 * needs them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/smgr.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "gpuircompat.h"
#include "gpuirworker_int.h"

/* gpuir.list_readers */
int			gpuir_list_readers = 4;

/* the staging segment's first bytes */
typedef struct GpuirStagingHeader
{
	uint32		ntasks_cap;		/* GpuirReadTask[ntasks_cap] follow */
	uint64		staging_off;	/* the images' offset in the segment */
	uint64		staging_cap;	/* their room */
} GpuirStagingHeader;

#define STAGING_TASKS(hdr)	((GpuirReadTask *) ((char *) (hdr) + MAXALIGN(sizeof(GpuirStagingHeader))))
#define STAGING_BYTES(hdr)	((char *) (hdr) + (hdr)->staging_off)

/* ---------- the worker's side ---------- */

static dsm_segment *staging_seg;	/* NULL until a job needs one */
static GpuirStagingHeader *staging_hdr;
static bool staging_locked;		/* page-locked for the device */
static BackgroundWorkerHandle *reader_handles[GPUIR_MAX_LIST_READERS];
static bool readers_refused;	/* a registration failed: no more are tried */
static bool staging_refused;	/* no staging segment could be made: the
								 * worker copies alone from then on */

/* GpuirReaderJobInit: a device's job at shared memory initialization */
void
GpuirReaderJobInit(GpuirReaderJob *job)
{
	ConditionVariableInit(&job->work_cv);
	ConditionVariableInit(&job->done_cv);
	pg_atomic_init_u64(&job->claim, GPUIR_READ_CLOSED);
	pg_atomic_init_u32(&job->done, 0);
	pg_atomic_init_u32(&job->active, 0);
	SpinLockInit(&job->mutex);
	job->staging = DSM_HANDLE_INVALID;
}

/* this worker's job */
static GpuirReaderJob *
my_job(void)
{
	return &GpuirWorkerDevice->readers;
}

/*
 * start_readers: make readers 0 .. gpuir.list_readers - 1 run (those not
 * started yet, or that have exited; the handles of readers that exited are
 * forgotten, those past a lowered gpuir.list_readers exit between jobs);
 * returns how many run or are starting
 */
static int
start_readers(void)
{
	int			device = (int) (GpuirWorkerDevice - GpuirService->devices);
	int			running = 0;

	for (int i = 0; i < GPUIR_MAX_LIST_READERS; i++)
	{
		BackgroundWorker worker;
		char		name[BGW_MAXLEN];
		pid_t		pid;
		bool		ok;
		MemoryContext old;

		if (reader_handles[i] != NULL &&
			GetBackgroundWorkerPid(reader_handles[i], &pid) == BGWH_STOPPED)
		{
			pfree(reader_handles[i]);
			reader_handles[i] = NULL;
		}
		if (i >= gpuir_list_readers)
			continue;
		if (reader_handles[i] != NULL)
		{
			running++;
			continue;
		}
		if (readers_refused)
			continue;
		snprintf(name, sizeof(name), "gpuir list reader %d.%d", device, i);
		GpuirServiceWorkerInit(&worker, "GpuirReaderMain", "gpuir list reader", name,
							   Int32GetDatum(device * GPUIR_MAX_LIST_READERS + i),
							   BGW_NEVER_RESTART);
		old = MemoryContextSwitchTo(TopMemoryContext);
		ok = RegisterDynamicBackgroundWorker(&worker, &reader_handles[i]);
		MemoryContextSwitchTo(old);
		if (!ok)
		{
			/* no slot left: copy with those there are, and say so once */
			ereport(LOG,
					(errmsg("gpuir gpu service could start only %d of %d list readers", running,
							gpuir_list_readers),
					 errhint("Raise max_worker_processes, or lower gpuir.list_readers.")));
			readers_refused = true;
			continue;
		}
		running++;
	}
	return running;
}

/*
 * staging_create: a DSM segment of size bytes, or NULL with a LOG line (the
 * worker then copies the lists alone)
 */
static dsm_segment *
staging_create(Size size)
{
	dsm_segment *volatile seg = NULL;
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		seg = dsm_create(size, DSM_CREATE_NULL_IF_MAXSEGMENTS);
		if (seg == NULL)
			ereport(LOG,
					(errmsg("gpuir gpu service could not make a staging segment of %zu bytes for its list readers: too many dynamic shared memory segments",
							size)));
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(old);
		edata = CopyErrorData();
		FlushErrorState();
		ereport(LOG,
				(errmsg("gpuir gpu service could not make a staging segment of %zu bytes for its list readers: %s",
						size, edata->message)));
		FreeErrorData(edata);
		seg = NULL;
	}
	PG_END_TRY();
	return seg;
}

/*
 * staging_make: a staging segment with room for bytes of images and ntasks
 * tasks (the former one, if any, given up: the caller has waited for the
 * uploads that read it).  False, with a LOG line, when the segment cannot
 * be made (the worker then copies into its own staging buffer).
 */
static bool
staging_make(uint64 bytes, uint32 ntasks)
{
	uint64		cap = Max(bytes, (uint64) 16 * 1024 * 1024);
	uint32		tcap = Max(ntasks, 1024);
	uint64		off;
	dsm_segment *seg;

	if (staging_hdr != NULL)
	{
		cap = Max(cap, staging_hdr->staging_cap * 2);
		tcap = Max(tcap, staging_hdr->ntasks_cap * 2);
	}
	off = TYPEALIGN(8192, MAXALIGN(sizeof(GpuirStagingHeader)) + (uint64) tcap * sizeof(GpuirReadTask));
	if (staging_seg != NULL)
	{
		if (staging_locked)
			gpuir_cuda_host_unregister(staging_hdr);
		dsm_detach(staging_seg);
		staging_seg = NULL;
		staging_hdr = NULL;
		staging_locked = false;
	}
	if ((seg = staging_create(off + cap)) == NULL)
	{
		staging_refused = true;
		return false;
	}
	dsm_pin_mapping(seg);
	staging_seg = seg;
	staging_hdr = dsm_segment_address(seg);
	staging_hdr->ntasks_cap = tcap;
	staging_hdr->staging_off = off;
	staging_hdr->staging_cap = cap;

	/* page-locked, the upload is a DMA copy from it; else a staged one */
	staging_locked = gpuir_cuda_host_register(staging_hdr, off + cap) == GPUIR_CUDA_OK;
	if (!staging_locked)
		ereport(LOG,
				(errmsg("gpuir gpu service could not page-lock its list readers' staging segment; uploads from it are slower")));
	my_job()->staging = dsm_segment_handle(seg);
	return true;
}

/*
 * GpuirReadersBegin: for a run whose lists in transit take bytes of images
 * and ntasks payload copies, the staging to write them into (*staging,
 * 16-byte aligned and page-locked where the device allows) and the tasks
 * to fill (*tasks[0 .. ntasks), then GpuirReadersRun).  False when the
 * list readers are off (gpuir.list_readers = 0), none can be started, or
 * no staging segment could be made (then never again: the LOG said why):
 * the caller copies alone.  The uploads
 * from the former staging must have finished (gpuir_cuda_transit_sync).
 */
bool
GpuirReadersBegin(uint64 bytes, uint32 ntasks, char **staging, GpuirReadTask **tasks)
{
	if (gpuir_list_readers <= 0 || staging_refused)
		return false;
	my_job()->nwanted = gpuir_list_readers;
	if (start_readers() == 0)
		return false;
	if ((staging_hdr == NULL || staging_hdr->staging_cap < bytes ||
		 staging_hdr->ntasks_cap < ntasks) && !staging_make(bytes, ntasks))
		return false;
	*staging = STAGING_BYTES(staging_hdr);
	*tasks = STAGING_TASKS(staging_hdr);
	for (uint32 i = 0; i < ntasks; i++)
		pg_atomic_init_u32(&(*tasks)[i].finished, 0);
	return true;
}

/*
 * do_task: copy task i of the job (its node, seg) into staging; an ERROR is
 * kept in the job (the first one) and the task counted finished all the
 * same.  owner: the pins' resource owner (for the cleanup after an ERROR).
 */
static void
do_task(GpuirReaderJob *job, GpuirReadTask *task, char *staging, const GpuirRelFile *node,
		bool permanent, const GpuirSegmentData *seg, uint32 ntasks, ResourceOwner owner)
{
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		GpuirCacheReadStream(node, permanent, seg, GPUIR_S_PAYLOAD, task->src_off, task->len,
							 staging + task->dst_off);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(old);
		edata = CopyErrorData();
		FlushErrorState();
		GpuirWorkerErrorCleanup(owner);
		SpinLockAcquire(&job->mutex);
		if (job->sqlerrcode == 0)
		{
			job->sqlerrcode = edata->sqlerrcode ? edata->sqlerrcode : ERRCODE_INTERNAL_ERROR;
			strlcpy(job->error, edata->message ? edata->message : "unknown error",
					sizeof(job->error));
		}
		SpinLockRelease(&job->mutex);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	pg_write_barrier();
	pg_atomic_write_u32(&task->finished, 1);
	if (pg_atomic_add_fetch_u32(&job->done, 1) >= ntasks)
		ConditionVariableBroadcast(&job->done_cv);
}

/*
 * take_tasks: claim and copy tasks of epoch until none is left (another
 * epoch, or all claimed); the caller has read the job's fields after seeing
 * the epoch open, so a successful claim makes them this epoch's
 */
static void
take_tasks(GpuirReaderJob *job, uint32 epoch, GpuirReadTask *tasks, char *staging,
		   const GpuirRelFile *node, bool permanent, const GpuirSegmentData *seg,
		   uint32 ntasks, ResourceOwner owner)
{
	for (;;)
	{
		uint64		c = pg_atomic_read_u64(&job->claim);
		uint32		i = (uint32) c;

		if ((uint32) (c >> 32) != epoch || i >= ntasks)
			return;
		if (!pg_atomic_compare_exchange_u64(&job->claim, &c, c + 1))
			continue;
		do_task(job, &tasks[i], staging, node, permanent, seg, ntasks, owner);
	}
}

/* reader_gone: whether one of this worker's readers has exited */
static bool
reader_gone(void)
{
	for (int r = 0; r < GPUIR_MAX_LIST_READERS; r++)
	{
		pid_t		pid;

		if (reader_handles[r] != NULL &&
			GetBackgroundWorkerPid(reader_handles[r], &pid) == BGWH_STOPPED)
			return true;
	}
	return false;
}

/*
 * GpuirReadersRun: copy the ntasks tasks GpuirReadersBegin gave out of the
 * PAYLOAD stream of segment seg of the index with relfilenode node, with
 * the readers; returns once every task is finished.  Raises the first
 * task's ERROR then (ERRCODE_INDEX_CORRUPTED for a bad page, the buffer
 * manager's errors), and the worker's interrupts.
 */
void
GpuirReadersRun(const GpuirRelFile *node, bool permanent, const GpuirSegmentData *seg,
				uint32 ntasks)
{
	GpuirReaderJob *job = my_job();
	GpuirReadTask *tasks = STAGING_TASKS(staging_hdr);
	char	   *staging = STAGING_BYTES(staging_hdr);
	uint32		epoch;

	/*
	 * closed under a new epoch (after the last one of any worker of this
	 * device, so that no reader takes it for one it has seen): no reader
	 * claims while the fields change
	 */
	epoch = (uint32) (pg_atomic_read_u64(&job->claim) >> 32) + 1;
	pg_atomic_write_u64(&job->claim, ((uint64) epoch << 32) | GPUIR_READ_CLOSED);
	job->ntasks = ntasks;
	job->node = *node;
	job->permanent = permanent;
	job->seg = *seg;
	job->sqlerrcode = 0;
	job->error[0] = '\0';
	pg_atomic_write_u32(&job->done, 0);
	pg_write_barrier();
	pg_atomic_write_u64(&job->claim, (uint64) epoch << 32);
	ConditionVariableBroadcast(&job->work_cv);

	/* the worker takes tasks too, then waits for the readers' */
	take_tasks(job, epoch, tasks, staging, node, permanent, seg, ntasks, CurrentResourceOwner);
	for (;;)
	{
		uint32		i = 0;

		while (i < ntasks && pg_atomic_read_u32(&tasks[i].finished) != 0)
			i++;
		if (i == ntasks)
			break;
		if (ConditionVariableTimedSleep(&job->done_cv, 100, PG_WAIT_EXTENSION) &&
			reader_gone())
		{
			/*
			 * A reader that exited may have left a task it claimed
			 * unfinished.  No more claims, the readers still in the job
			 * finish theirs and leave, and the worker copies what is left.
			 */
			/* a full barrier: a reader counted active after it has claimed */
			(void) pg_atomic_exchange_u64(&job->claim, ((uint64) epoch << 32) | GPUIR_READ_CLOSED);
			while (pg_atomic_read_u32(&job->active) > 0)
			{
				(void) ConditionVariableTimedSleep(&job->done_cv, 10, PG_WAIT_EXTENSION);
				CHECK_FOR_INTERRUPTS();
			}
			for (uint32 j = i; j < ntasks; j++)
				if (pg_atomic_read_u32(&tasks[j].finished) == 0)
					do_task(job, &tasks[j], staging, node, permanent, seg, ntasks,
							CurrentResourceOwner);
		}
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
	pg_read_barrier();
	if (job->sqlerrcode != 0)
		ereport(ERROR,
				(errcode(job->sqlerrcode),
				 errmsg("%s", job->error)));
}

/* GpuirReadersStop: the worker exits; its readers follow */
void
GpuirReadersStop(void)
{
	GpuirReaderJob *job = my_job();
	uint32		epoch = (uint32) (pg_atomic_read_u64(&job->claim) >> 32) + 1;

	pg_atomic_write_u64(&job->claim, ((uint64) epoch << 32) | GPUIR_READ_CLOSED);
	ConditionVariableBroadcast(&job->work_cv);
}

/* ---------- a reader ---------- */

static GpuirReaderJob *reader_job;
static bool reader_in_job;		/* counted in reader_job->active */

/* reader_exit: before_shmem_exit callback: a reader leaving mid-job is not active in it */
static void
reader_exit(int code, Datum arg)
{
	if (reader_in_job)
	{
		reader_in_job = false;
		pg_atomic_fetch_sub_u32(&reader_job->active, 1);
		ConditionVariableBroadcast(&reader_job->done_cv);
	}
}

/*
 * GpuirReaderMain: the main function of list reader arg % GPUIR_MAX_LIST_READERS
 * of device arg / GPUIR_MAX_LIST_READERS: waits for jobs of the worker that
 * started it and takes their tasks, until that worker is gone or
 * gpuir.list_readers drops below its number
 */
void
GpuirReaderMain(Datum arg)
{
	int			device = DatumGetInt32(arg) / GPUIR_MAX_LIST_READERS;
	int			me = DatumGetInt32(arg) % GPUIR_MAX_LIST_READERS;
	GpuirReaderJob *job;
	pid_t		worker;
	uint32		seen = 0;
	dsm_segment *seg = NULL;
	dsm_handle	attached = DSM_HANDLE_INVALID;
	ResourceOwner owner;

	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	if (GpuirService == NULL || device < 0 || device >= GPUIR_MAX_DEVICES)
		proc_exit(0);
	owner = ResourceOwnerCreate(NULL, "gpuir list reader");
	CurrentResourceOwner = owner;
	job = &GpuirService->devices[device].readers;
	reader_job = job;
	before_shmem_exit(reader_exit, (Datum) 0);
	SpinLockAcquire(&GpuirService->mutex);
	worker = GpuirService->devices[device].worker_pid;
	SpinLockRelease(&GpuirService->mutex);

	for (;;)
	{
		uint64		c;
		uint32		epoch;
		uint32		ntasks;
		GpuirRelFile node;
		bool		permanent;
		GpuirSegmentData segdata;
		dsm_handle	handle;

		CHECK_FOR_INTERRUPTS();
		if (worker == 0 || GpuirService->devices[device].worker_pid != worker ||
			me >= job->nwanted)
			break;
		c = pg_atomic_read_u64(&job->claim);
		epoch = (uint32) (c >> 32);
		if (epoch == seen || (uint32) c == GPUIR_READ_CLOSED)
		{
			/* prepared before the check above was made again: no wake-up is lost */
			(void) ConditionVariableTimedSleep(&job->work_cv, 1000, PG_WAIT_EXTENSION);
			continue;
		}
		ConditionVariableCancelSleep();
		seen = epoch;
		pg_read_barrier();
		ntasks = job->ntasks;
		node = job->node;
		permanent = job->permanent;
		segdata = job->seg;
		handle = job->staging;
		pg_read_barrier();
		if (pg_atomic_read_u64(&job->claim) >> 32 != epoch)
			continue;
		if (handle != attached)
		{
			/*
			 * the staging of this epoch stays until its tasks are finished,
			 * so none can be taken before it is mapped
			 */
			if (seg != NULL)
				dsm_detach(seg);
			seg = dsm_attach(handle);
			attached = handle;
			if (seg == NULL)
			{
				/* given up meanwhile: the worker has moved on */
				attached = DSM_HANDLE_INVALID;
				continue;
			}
			dsm_pin_mapping(seg);
		}
		{
			GpuirStagingHeader *hdr = dsm_segment_address(seg);

			pg_atomic_fetch_add_u32(&job->active, 1);
			reader_in_job = true;
			take_tasks(job, epoch, STAGING_TASKS(hdr), STAGING_BYTES(hdr), &node, permanent,
					   &segdata, ntasks, owner);
			reader_in_job = false;
			pg_atomic_fetch_sub_u32(&job->active, 1);
			ConditionVariableBroadcast(&job->done_cv);
		}
		/* no descriptor of a dropped relation lingers */
		gpuir_smgr_close_all();
	}
	ConditionVariableCancelSleep();
	proc_exit(0);
}
