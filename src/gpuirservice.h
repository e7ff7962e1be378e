/*-------------------------------------------------------------------------
 *
 * gpuirservice.h
 *	  The GPU service: shared memory of the background workers that own the
 *	  GPUs (one per device), the per-backend request slots, and the layout of a request in its
 *	  dynamic shared memory segment.
 *
 * Protocol (src/README, "GPU service"):
 *	1. A backend writes a request (segments, queries, terms with idf and list
 *	   locations, k, the number of parts) into its slot's area when it fits
 *	   and no worker holds the area, else into a DSM segment it creates (its
 *	   handle in the slot), sets the slot READY and sets the latch of the
 *	   first idle device's worker (of every worker for a request in parts).
 *	2. Each device's worker gathers READY slots of all backends (up to
 *	   gpuir.max_batch queries; it runs a batch as soon as it is free, with
 *	   what has arrived: gpuir.batch_window only bounds a wait under load),
 *	   takes one part of each (the slot is TAKEN once every part is), maps
 *	   the requests, makes the segments' posting data resident on its GPU
 *	   (reading the index pages itself through the buffer manager), runs the
 *	   batch, writes each part's top-k into the request, and, with the last
 *	   part answered, marks the slot DONE (if the request id is still the
 *	   slot's) and posts the slot's done semaphore.  With gpuir.wake_fanout
 *	   N > 0, while few backends run the CPU engine, the worker posts only
 *	   the first N of a batch: each slot it marks DONE holds up to N
 *	   semaphores of the batch's other backends, which its backend posts
 *	   when it sees its answer (a tree of wake-ups on the backends' cores).
 *	3. The backend waits on its slot's semaphore (gpuirshmem.c, wait_done),
 *	   honouring query cancel and statement_timeout, posts the semaphores
 *	   its slot holds (also when it gives the request up after its answer
 *	   came), merges the parts' top-k; it falls back to the CPU engine when
 *	   the workers are absent, die, time out or report a failure.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIRSERVICE_H
#define GPUIRSERVICE_H

#include "postgres.h"

#include <semaphore.h>

#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "storage/condition_variable.h"
#include "storage/dsm.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/timestamp.h"

#include "gpuir.h"
#include "gpuirroutemodel.h"

/* gpuir.device */
typedef enum GpuirDeviceChoice
{
	GPUIR_DEVICE_AUTO,
	GPUIR_DEVICE_GPU,
	GPUIR_DEVICE_CPU
} GpuirDeviceChoice;

/*
 * gpuir.device = auto: queries whose posting lists hold fewer than
 * gpuir.gpu_min_postings postings stay on the CPU; the others go to the
 * device the cost model (gpuirroute.c) expects to answer first.  A GPU
 * request's round trip is at least about 0.1 ms (H100, 2026-11-25,
 * bench/results/2026-11-25-h100-request-path.md), which the CPU engine
 * beats on lists of a few thousand postings.
 */
#define GPUIR_DEFAULT_GPU_MIN_POSTINGS	2000

/*
 * gpuir.gpu_split_postings: a single query whose lists hold at least this
 * many postings is split over every device of the GPU service (docID
 * windows), when there are several.  engine_bench on two H200s (40 M
 * generated documents, bench/results/2026-11-26-h200x2-devices.md): one
 * query of 0.7-1.7 M postings answers 1.6x (k = 10) to 2.7x (k = 1000)
 * faster split; a request's fixed cost (launches, copies: about 60 us) is
 * paid once per part, so short queries stay whole.
 */
#define GPUIR_DEFAULT_GPU_SPLIT_POSTINGS	100000

extern int	gpuir_device;
extern int	gpuir_max_batch;
extern double gpuir_batch_window;
extern int	gpuir_worker_spin;
extern int	gpuir_wake_fanout;
extern int	gpuir_decoded_lists_memory;	/* MB, gpuir.decoded_lists_memory */
extern char *gpuir_device_memory;
extern int	gpuir_gpu_min_postings;
extern int	gpuir_auto_cpu_slots;
extern double gpuir_auto_clients_per_core;
extern int	gpuir_gpu_timeout;
extern char *gpuir_devices;
extern int	gpuir_gpu_split_postings;

/*
 * gpuir.debug_gpu_fault: a failure the GPU service's worker makes up, to
 * test that the backends answer on the CPU (gpu-check's faults step):
 *	upload_oom		every segment upload fails as out of device memory
 *	upload_error	every segment upload fails as a failed copy (CUDA error)
 *	search_error	every search on the device fails (CUDA error; after
 *					GPUIR_MAX_DEVICE_ERRORS in a row the worker restarts)
 *	exit_upload		the worker exits while a segment is being uploaded
 *	slow_answer		the worker answers each batch 200 ms late (a backend's
 *					cancel or statement_timeout must end its wait, which
 *					scripts/gpu-check cancel times)
 * none (the default) makes up nothing.
 */
typedef enum GpuirFault
{
	GPUIR_FAULT_NONE,
	GPUIR_FAULT_UPLOAD_OOM,
	GPUIR_FAULT_UPLOAD_ERROR,
	GPUIR_FAULT_SEARCH_ERROR,
	GPUIR_FAULT_EXIT_UPLOAD,
	GPUIR_FAULT_SLOW_ANSWER
} GpuirFault;

extern int	gpuir_debug_gpu_fault;

/* the worker's view of the device */
typedef enum GpuirDeviceState
{
	GPUIR_DEVSTATE_STARTING = 0,	/* worker not started or probing */
	GPUIR_DEVSTATE_NONE,		/* no usable GPU: everything runs on the CPU */
	GPUIR_DEVSTATE_READY		/* the worker serves requests */
} GpuirDeviceState;

/*
 * gpuir.devices: the GPUs the service uses.  Each one is driven by a worker
 * process of its own ("gpuir gpu service N"): its own CUDA context,
 * streams, workspace and list cache (the gpuir.device_memory budget applies
 * per device).  All workers take requests from the same slots, so a request
 * goes to whichever device is free first (gpuirshmem.c, "Several GPUs").
 */
#define GPUIR_MAX_DEVICES		16

/* largest gpuir.wake_fanout: backends one answered backend wakes */
#define GPUIR_WAKE_FANOUT_MAX	4
/*
 * the tree of wake-ups only while fewer than this share of the online
 * processors run the CPU engine (GpuirRouteCpuRunsFew)
 */
#define GPUIR_WAKE_CPU_SHARE	0.25

/* slot states */
#define GPUIR_SLOT_IDLE		0
#define GPUIR_SLOT_READY	1	/* submitted, waiting for the worker */
#define GPUIR_SLOT_TAKEN	2	/* in the worker's current batch */
#define GPUIR_SLOT_DONE		3	/* answered (see the request's status) */

/*
 * A request is answered in nparts parts (1, or one per device for a long
 * query: gpuir.gpu_split_postings): part p searches docID window p of nparts
 * of every segment (gpuir_cuda_segment_window) and writes its own results;
 * each part is taken by one worker, and the request is DONE when every part
 * is answered.  The backend merges the parts' top-k.
 */
typedef struct GpuirServiceSlot
{
	slock_t		mutex;			/* protects the fields below */
	int			state;			/* READY until every part is taken */
	uint64		req_id;			/* bumped by the backend for every request */
	dsm_handle	handle;			/* the request's DSM segment, or
								 * DSM_HANDLE_INVALID: in the slot's area */
	sem_t		done;			/* posted when the request is answered
								 * (GpuirServiceWake): the backend waits on
								 * it, not on its latch (gpuirshmem.c) */
	uint32		nqueries;		/* queries in the request (for batching) */
	int			area_holds;		/* parts of a request in the slot's area that
								 * workers hold (+1 when taken, -1 when
								 * answered): the backend writes the area only
								 * at 0 */
	TimestampTz submitted;		/* when the request was set READY */
	TimestampTz answered;		/* when the worker began answering the batch
								 * that set it DONE */
	int			nparts;			/* parts of the request */
	int			parts_taken;	/* parts taken so far (the next one to take) */
	int			parts_done;		/* parts answered */
	int			parts_failed;	/* of those, failed */
	int8		part_owner[GPUIR_MAX_DEVICES];	/* device (index in
												 * GpuirService->devices)
												 * holding part p; -1 when
												 * none does */
	bool		waiting;		/* the backend waits for request req_id's
								 * answer: set at submit, cleared when it
								 * gives the request up (withdraw, also at
								 * exit) */
	int			nwake;			/* with state DONE: other backends' slots */
	sem_t	   *wake[GPUIR_WAKE_FANOUT_MAX];	/* answered in the same batch,
												 * whose done this backend posts
												 * when it sees its answer
												 * (gpuir.wake_fanout) */
	pg_atomic_uint64 search_began;	/* (not under mutex) when the slot's
									 * backend last began a gpuir search
									 * (microseconds of route_now's
									 * monotonic clock; 0: never), for
									 * auto's count of clients */
} GpuirServiceSlot;

/*
 * Every slot has an area of GPUIR_SLOT_AREA bytes in the service's shared
 * memory for a request that fits (a few queries with small k: no DSM
 * segment is created and attached per request); larger requests travel in
 * a DSM segment of their own.  A query at k = 10 (36 candidates a segment)
 * takes 636 bytes a segment and 16 a term in each: 48 kB holds one of 8
 * terms on an index of the directory's 64 segments, of 150 on 16.
 */
#define GPUIR_SLOT_AREA		(48 * 1024)

/*
 * Stages of a GPU request whose time the service adds up (gpuir_gpu_stages):
 * the worker's, per request or per batch, and the backend's round trip.
 */
/* the backends time the wake stage of one request in this many */
#define GPUIR_WAKE_SAMPLE	8

typedef enum GpuirStage
{
	GPUIR_STAGE_QUEUE,			/* request: READY until taken by the worker */
	GPUIR_STAGE_WINDOW,			/* batch: first take until the batch runs */
	GPUIR_STAGE_PREPARE,		/* batch: requests mapped and validated */
	GPUIR_STAGE_CACHE,			/* run: list cache lookups (and uploads) */
	GPUIR_STAGE_SEARCH,			/* run: gpuir_cuda_search_batch (staging,
								 * copies, kernels, synchronisation) */
	GPUIR_STAGE_ANSWER,			/* batch: results written, backends woken */
	GPUIR_STAGE_ROUND_TRIP,		/* request, backend: submit until answered */
	GPUIR_STAGE_TRANSIT_READ,	/* run, part of CACHE: missed lists read */
	GPUIR_STAGE_TRANSIT_SEND,	/* run, part of CACHE: lists uploaded, kept,
								 * assembled */
	GPUIR_STAGE_WORKER_CPU,		/* query answered: the worker's CPU time since
								 * the batch answered before */
	GPUIR_STAGE_WAKE,			/* request, backend: answered by the worker
								 * until the backend saw it (one request in
								 * GPUIR_WAKE_SAMPLE) */
	GPUIR_NSTAGES
} GpuirStage;

/* gpuir.device = auto's cost model (gpuirroute.c): one cell */
#define GPUIR_ROUTE_CPU			0	/* CPU engine: its CPU time */
#define GPUIR_ROUTE_GPU			1	/* GPU: the request's wall time */
#define GPUIR_ROUTE_GPU_CPU		2	/* GPU: the backend's CPU time meanwhile */
#define GPUIR_ROUTE_MEASURES	3	/* the means above */
#define GPUIR_ROUTE_DEVICES		2	/* CPU, GPU */
#define GPUIR_ROUTE_MODES		3	/* and, or, pruned (wand, bmw) */
#define GPUIR_ROUTE_KCLASSES	2	/* k <= 100, k > 100 */

typedef struct GpuirRouteCell
{
	pg_atomic_uint32 mean_us[GPUIR_ROUTE_MEASURES];	/* float4 bits: mean of each GPUIR_ROUTE_* */
	pg_atomic_uint32 samples[GPUIR_ROUTE_MEASURES];	/* times folded into each mean */
	pg_atomic_uint64 routed[GPUIR_ROUTE_DEVICES];		/* queries auto sent to each device */
	pg_atomic_uint64 decisions;		/* choices by the means (exploration) */
} GpuirRouteCell;


/*
 * The list readers of one device's worker (gpuirreader.c): background
 * workers that copy the pages of lists in transit into the worker's
 * staging segment beside it.  A job is published through claim: the
 * worker closes it (a new epoch, next task GPUIR_READ_CLOSED), writes the
 * fields below, then opens it (next task 0); a reader claims task i by
 * moving claim from (its epoch, i) to (its epoch, i + 1), so fields read
 * before a successful claim are that epoch's.
 */
#define GPUIR_READ_CLOSED		PG_UINT32_MAX
#define GPUIR_MAX_LIST_READERS	32

typedef struct GpuirReaderJob
{
	ConditionVariable work_cv;	/* readers wait here for a job */
	ConditionVariable done_cv;	/* the worker waits here for its end */
	pg_atomic_uint64 claim;		/* epoch << 32 | next task to take */
	pg_atomic_uint32 done;		/* tasks of the epoch finished (a hint) */
	pg_atomic_uint32 active;	/* readers taking tasks now */
	int			nwanted;		/* readers numbered from this one on exit */
	dsm_handle	staging;		/* the worker's staging segment */
	uint32		ntasks;
	GpuirRelFile node;			/* whose PAYLOAD stream the tasks copy */
	bool		permanent;
	GpuirSegmentData seg;
	slock_t		mutex;			/* protects the error below */
	int			sqlerrcode;		/* 0, or the first task's error */
	char		error[256];
} GpuirReaderJob;

/* what a device's worker is doing (GpuirServiceDevice.busy) */
typedef enum GpuirWorkerState
{
	GPUIR_WORKER_ASLEEP = 0,	/* on its latch, or not started */
	GPUIR_WORKER_BUSY = 1,		/* running batches */
	GPUIR_WORKER_POLLING = 2	/* polling the slots with nothing to do
								 * (idle_spin): idle to wake_workers */
} GpuirWorkerState;

/* one device of the service and its worker; the fields up to the counters under GpuirService->mutex */
typedef struct GpuirServiceDevice
{
	int			ordinal;		/* CUDA device number */
	bool		registered;		/* its worker was registered (device 0's is static) */
	pid_t		worker_pid;		/* 0 when its worker does not run */
	Latch	   *worker_latch;
	int			device_state;	/* GpuirDeviceState */
	char		device_name[96];
	uint64		device_memory;	/* bytes of global memory */
	int			cc_major;
	int			cc_minor;
	uint64		budget;			/* bytes its list cache may use */
	char		last_error[256];
	/* counters */
	pg_atomic_uint32 busy;		/* GpuirWorkerState of its worker */
	pg_atomic_uint64 bytes_cached;
	pg_atomic_uint64 cache_hits;	/* segment lookups served from the GPU */
	pg_atomic_uint64 cache_misses;	/* segment uploads */
	pg_atomic_uint64 list_hits;	/* lists of partial segments found kept */
	pg_atomic_uint64 bytes_shipped;	/* bytes of lists sent with a batch */
	pg_atomic_uint64 batches;
	pg_atomic_uint64 batched_queries;
	pg_atomic_uint64 queries;	/* queries it answered */
	pg_atomic_uint64 errors;	/* requests it answered FAILED */
	pg_atomic_uint64 searched_again;	/* queries its searches answered with a
										 * second search (a short candidate
										 * room spilled) */
	pg_atomic_uint64 decoded_found;	/* lists its searches found decoded by an
									 * earlier search (cuda/gpuir_decode_cache.cuh) */
	pg_atomic_uint64 decoded_lists;	/* lists its searches decoded */
	GpuirReaderJob readers;		/* its list readers (gpuirreader.c) */
} GpuirServiceDevice;

typedef struct GpuirServiceShared
{
	slock_t		mutex;			/* protects ndevices and the devices' fields
								 * up to their counters */
	int			ndevices;		/* devices[0 .. ndevices) are in use: set by
								 * device 0's worker once it has looked
								 * (at least 1, the first one NONE when
								 * there is no usable GPU); 0 before */
	GpuirServiceDevice devices[GPUIR_MAX_DEVICES];
	/* service-wide counters, kept by the backends */
	pg_atomic_uint64 cpu_queries;	/* answered by the CPU engine */
	pg_atomic_uint64 fallbacks;	/* meant for the GPU, answered by the CPU */
	pg_atomic_uint64 pruned_decided;	/* queries answered over pruned lists */
	pg_atomic_uint64 pruned_refused;	/* ... whose pruned lists did not decide */
	pg_atomic_uint64 stage_us[GPUIR_NSTAGES];	/* microseconds per stage */
	pg_atomic_uint64 stage_n[GPUIR_NSTAGES];	/* events per stage */
	pg_atomic_uint32 active;	/* backends in a gpuir search now (either device) */
	pg_atomic_uint32 cpu_running;	/* backends in a CPU engine run now */
	pg_atomic_uint64 clients_claim;	/* when a backend last took on counting
									 * auto's clients (monotonic us) */
	pg_atomic_uint64 clients_word;	/* the last count and its time
									 * (gpuir_route_clients_pack): the slots
									 * whose search_began was recent */
	/* auto's predictions against what its routed queries then took */
	pg_atomic_uint64 route_compared;	/* queries compared */
	pg_atomic_uint64 route_predicted_ns;	/* the predictions' sum */
	pg_atomic_uint64 route_observed_ns;	/* the observed times' sum */
	/* the auto cost model: load class x mode class x k class x postings class */
	GpuirRouteCell route[GPUIR_ROUTE_LOADS][GPUIR_ROUTE_MODES][GPUIR_ROUTE_KCLASSES][GPUIR_ROUTE_BUCKETS];
	int			nslots;
	GpuirServiceSlot slots[FLEXIBLE_ARRAY_MEMBER];
} GpuirServiceShared;

/* NULL unless gpuir is in shared_preload_libraries */
extern GpuirServiceShared *GpuirService;

/* ---------- a request in its DSM segment ---------- */

#define GPUIR_REQ_MAGIC		0x47505251	/* "GPRQ" */

/* request status, written by the worker */
#define GPUIR_REQ_PENDING	0
#define GPUIR_REQ_OK		1
#define GPUIR_REQ_FAILED	2

/* one (query, segment) pair: the terms of the query in that segment */
typedef struct GpuirReqItem
{
	uint32		first_term;		/* into the term array */
	uint32		nterms;
	uint32		k;				/* results wanted, <= kmax */
	int32		mode;			/* gpuir_cuda_mode */
	uint32		tids;			/* heap TIDs wanted, of the first results */
} GpuirReqItem;

/* one term of one item: same layout as gpuir_cuda_term */
typedef struct GpuirReqTerm
{
	uint32		first_block;
	uint32		nblocks;
	uint32		npostings;
	float4		idf;
} GpuirReqTerm;

/*
 * The request header.  It is followed, at the offsets it gives (bytes from
 * the header), by GpuirSegmentData[nsegments], GpuirReqItem[nqueries *
 * nsegments] (item q * nsegments + s), GpuirReqTerm[nterms], and the results
 * of each part p (0 .. nparts): uint32 docids[nparts * nitems * kmax], float4
 * scores[same], uint32 counts[nparts * nitems] (part p's results of item
 * i at [(p * nitems + i) * kmax, ... + counts[p * nitems + i])) and float4
 * rests[nparts * nitems]: 0 when the item's scores are exact, else the item
 * ran over pruned lists (gpuirprune.h), its scores are partial, and a
 * document it did not return scores at most its last score (0 when it
 * returned fewer than k) plus this bound; then ItemPointerData
 * tids[nparts * nitems * kmax], beside the docIDs, the heap TIDs of the
 * item's first results (GpuirReqItem.tids of them at most) from the
 * worker's host copy of the segment's TIDS stream, and uint32
 * ntids[nparts * nitems]: how many were given (the backend reads the
 * others' from the index).
 */
typedef struct GpuirRequest
{
	uint32		magic;
	uint32		nsegments;
	uint32		nqueries;
	uint32		nterms;
	uint32		kmax;
	GpuirRelFile node;			/* the index's relation file */
	bool		permanent;		/* RELPERSISTENCE_PERMANENT (buffer reads) */
	float4		k1;
	float4		b;
	float4		avgdl;
	float4		prior_weight;	/* the index's prior_weight; 0 without a prior
								 * column (src/README, "Document priors") */
	uint32		segs_off;
	uint32		items_off;
	uint32		terms_off;
	uint32		docids_off;
	uint32		scores_off;
	uint32		counts_off;
	uint32		rests_off;
	uint32		tids_off;
	uint32		ntids_off;
	uint32		nparts;			/* 1 .. GPUIR_MAX_DEVICES: docID windows */
	int32		status;			/* GPUIR_REQ_*, of the whole request */
	char		detail[128];	/* why the worker failed */
} GpuirRequest;

#define GpuirReqSegments(r)	((GpuirSegmentData *) ((char *) (r) + (r)->segs_off))
#define GpuirReqItems(r)	((GpuirReqItem *) ((char *) (r) + (r)->items_off))
#define GpuirReqTerms(r)	((GpuirReqTerm *) ((char *) (r) + (r)->terms_off))
#define GpuirReqDocids(r)	((uint32 *) ((char *) (r) + (r)->docids_off))
#define GpuirReqScores(r)	((float4 *) ((char *) (r) + (r)->scores_off))
#define GpuirReqCounts(r)	((uint32 *) ((char *) (r) + (r)->counts_off))
#define GpuirReqRests(r)	((float4 *) ((char *) (r) + (r)->rests_off))
#define GpuirReqTids(r)		((ItemPointerData *) ((char *) (r) + (r)->tids_off))
#define GpuirReqNtids(r)	((uint32 *) ((char *) (r) + (r)->ntids_off))

/*
 * GpuirServiceWake: wake the backend waiting on a slot's done semaphore (a
 * futex wake when it sleeps, an atomic add when it does not yet)
 */
static inline void
GpuirServiceWake(sem_t *done)
{
	(void) sem_post(done);
}

/* gpuirshmem.c */
extern void GpuirServiceInit(void);
extern void GpuirServiceWorkerInit(BackgroundWorker *w, const char *function,
								   const char *type, const char *name, Datum arg,
								   int restart);
extern bool GpuirServiceRegisterWorker(int index, bool dynamic);
extern bool GpuirServiceReady(void);
extern int	GpuirServiceDevicesUp(void);
extern char *GpuirServiceSlotArea(int slotno);
extern GpuirRequest *GpuirServiceRequestArea(Size size, dsm_segment **seg);
extern bool GpuirServiceRun(dsm_segment *seg, GpuirRequest *req, char *why, Size whylen);
extern void GpuirServiceCount(bool gpu, bool fallback);
extern void GpuirServiceCountPruned(bool decided);
extern void GpuirServiceStage(GpuirStage stage, TimestampTz from, TimestampTz to);
extern void GpuirServiceStageAdd(GpuirStage stage, uint64 us, uint64 events);
extern void GpuirServiceTruncationLock(bool truncate);
extern void GpuirServiceTruncationUnlock(void);

/*
 * gpuirclient.c: the backend side of the GPU service, one query's part of a
 * request and its answer
 */
typedef struct GpuirGpuQuery
{
	int			nterms;
	const float4 *idf;			/* [nterms], in the query's term order */
	const GpuirDictEntry *entries;	/* [nsegments * nterms]; npostings 0: absent */
	uint32		k;				/* candidates wanted per segment */
	int32		mode;			/* gpuir_cuda_mode: AND, OR or BMW */
	uint32	   *counts;			/* out: [nsegments] */
	uint32	   *docids;			/* out: [nsegments * k] */
	float4	   *scores;			/* out: [nsegments * k] */
	float4	   *rests;			/* out: [nsegments]: GpuirRequest's rests (0:
								 * exact; else partial scores, rescored by the
								 * caller, and the bound of the rest) */
	uint32		tids_wanted;	/* heap TIDs wanted of each segment's first
								 * candidates (the caller's k: those it
								 * reads unless rows are invisible) */
	ItemPointerData *tids;		/* out: [nsegments * k]: the heap TIDs of
								 * segment s's first ntids[s] candidates */
	uint32	   *ntids;			/* out: [nsegments]: TIDs the worker gave
								 * (read the others from the index) */
} GpuirGpuQuery;

extern bool GpuirGpuSearch(Relation index, const GpuirMetaPageData *meta,
						   const GpuirScoring *sc, GpuirGpuQuery *qs, int nq,
						   char *why, Size whylen);

/* gpuirworker.c */
extern PGDLLEXPORT void GpuirWorkerMain(Datum arg);

/* gpuircache.c */
extern bool gpuir_pruned_lists;

/* gpuirreader.c */
extern int	gpuir_list_readers;
extern PGDLLEXPORT void GpuirReaderMain(Datum arg);
extern void GpuirReaderJobInit(GpuirReaderJob *job);

/* gpuirroute.c */
/*
 * auto's prediction for one query (GpuirRouteToGpu): the measure its choice
 * compared (GPUIR_ROUTE_CPU, _GPU, _GPU_CPU; -1: no mean chose) and the
 * cell's mean of it, in microseconds
 */
typedef struct GpuirRoutePrediction
{
	int			what;
	float4		us;
} GpuirRoutePrediction;

/* what gpuir_status() shows of auto's routing (GpuirRouteTotals) */
typedef struct GpuirRouteTotalsData
{
	uint64		to_cpu;			/* queries auto sent to each device */
	uint64		to_gpu;
	uint64		compared;		/* queries whose prediction was compared */
	double		predicted_us;	/* their mean prediction */
	double		observed_us;	/* and what they took, in the same measure */
} GpuirRouteTotalsData;

extern void GpuirRouteInit(void);
extern bool GpuirRouteToGpu(GpuirMode mode, int k, uint64 postings, GpuirRoutePrediction *pred);
extern void GpuirRouteObserve(GpuirMode mode, int k, uint64 postings, int what, double us,
							  const GpuirRoutePrediction *pred);
extern void GpuirRouteTotals(GpuirRouteTotalsData *totals);
extern double GpuirRouteCpuTime(void);
extern int	GpuirRouteLoadNow(void);
extern bool GpuirRouteCpuRunsFew(void);
extern void GpuirRouteActiveBegin(void);
extern void GpuirRouteActiveEnd(void);
extern void GpuirRouteCpuBegin(void);
extern void GpuirRouteCpuEnd(void);

/*
 * gpuircache.c: the syntax of gpuir.device_memory, shared by its check hook
 * (gpuir.c) and the worker, which turns it into bytes once it knows the
 * card's memory
 */
typedef struct GpuirDeviceMemory
{
	bool		share;			/* a share of the card's memory, else an amount */
	double		value;			/* percent, or bytes */
} GpuirDeviceMemory;

extern bool GpuirParseDeviceMemory(const char *value, GpuirDeviceMemory *dm,
								   char *why, size_t whylen);

/*
 * gpuirshmem.c: the syntax of gpuir.devices ('all', or a list of CUDA
 * device numbers such as '0,2'), shared by its check hook and device 0's
 * worker.  *all is set for 'all' (and ''), else ordinals[0 .. *n) holds
 * the list.
 */
extern bool GpuirParseDevices(const char *value, bool *all, int *ordinals, int *n,
							  char *why, size_t whylen);

#endif							/* GPUIRSERVICE_H */
