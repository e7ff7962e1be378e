/*-------------------------------------------------------------------------
 *
 * gpuirbuild.c
 *	  CREATE INDEX for gpuir (ambuild) and the init fork of unlogged
 *	  indexes (ambuildempty).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_ts_config.h"
#include "commands/progress.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "storage/shm_mq.h"
#include "storage/smgr.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "gpuir.h"

/*
 * record_config_dependency: make the index depend on its text search
 * configuration (as an expression index depends on the functions it calls),
 * so that DROP TEXT SEARCH CONFIGURATION fails (2BP01) or, with CASCADE,
 * drops the index, instead of leaving an index that names a configuration
 * that no longer exists.  REINDEX replaces the earlier record.
 */
static void
record_config_dependency(Relation index, Oid cfg_id)
{
	ObjectAddress myself;
	ObjectAddress cfg;

	ObjectAddressSet(myself, RelationRelationId, RelationGetRelid(index));
	ObjectAddressSet(cfg, TSConfigRelationId, cfg_id);
	deleteDependencyRecordsForClass(RelationRelationId, RelationGetRelid(index),
									TSConfigRelationId, DEPENDENCY_NORMAL);
	recordDependencyOn(&myself, &cfg, DEPENDENCY_NORMAL);
}

/* fill_metapage: an empty index's metapage, options from the reloptions */
static void
fill_metapage(Relation index, Page page)
{
	GpuirOptions *opts = (GpuirOptions *) index->rd_options;
	GpuirMetaPageData *meta;

	GpuirInitPage(page, GPUIR_PAGE_META);
	meta = GpuirPageGetMeta(page);
	memset(meta, 0, sizeof(GpuirMetaPageData));
	meta->magic = GPUIR_MAGIC;
	meta->version = GPUIR_VERSION;
	meta->cfg_id = GpuirResolveConfig(index);
	meta->k1 = opts ? opts->k1 : GPUIR_DEFAULT_K1;
	meta->b = opts ? opts->b : GPUIR_DEFAULT_B;
	meta->buf_head = InvalidBlockNumber;
	meta->buf_tail = InvalidBlockNumber;
	GpuirIndexWeights(index, meta->weights);
	GpuirSetMetaLower(page);
}

/* init_metapage: write the metapage of an empty index to forknum, WAL-logged */
static void
init_metapage(Relation index, ForkNumber forknum)
{
	Buffer		buf;
	GenericXLogState *state;
	Page		page;

	buf = ReadBufferExtended(index, forknum, P_NEW, RBM_NORMAL, NULL);
	Assert(BufferGetBlockNumber(buf) == GPUIR_METAPAGE_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
	fill_metapage(index, page);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}

/*
 * Parallel build.  With max_parallel_maintenance_workers > 0 and a table
 * large enough (plan_create_index_workers, as for btree), CREATE INDEX and
 * REINDEX scan the table in parallel (a parallel table scan, as
 * _bt_begin_parallel).  Every participant, the leader too, tokenizes the
 * rows of the blocks it gets and inverts them in a segment builder of its
 * own (its share of maintenance_work_mem; past it, sorted runs in temporary
 * files).  When its scan ends, a worker exports its builder through a
 * message queue to the leader: a header, its documents in heap TID order,
 * then its posting lists in dictionary order (GpuirBuilderExport*).  The
 * leader merges its own export and the workers' into the one segment
 * (GpuirWriteMerged: documents by TID, lists by lexeme then docID), so the
 * index is the same as a serial build's.  What stays serial is the merge,
 * the encoding and the writing of the pages.
 */
#define PARALLEL_KEY_GPUIR_SHARED	UINT64CONST(0xA000000000000001)
#define PARALLEL_KEY_GPUIR_QUEUES	UINT64CONST(0xA000000000000002)
#define GPUIR_BUILD_QUEUE_SIZE		(1024 * 1024)

/* what the leader and the workers share (the parallel scan's state follows) */
typedef struct GpuirParallelShared
{
	Oid			heaprelid;
	Oid			indexrelid;
	Oid			cfg_id;
	uint16		weights[INDEX_MAX_KEYS];	/* the metapage's */
	bool		isconcurrent;
	Size		worker_mem;		/* each worker builder's memory limit, bytes */
	slock_t		mutex;
	double		reltuples;		/* the workers' heap tuples, summed */
	pg_atomic_uint64 rows_scanned;	/* the workers' rows so far, for progress */
} GpuirParallelShared;

#define ParallelTableScanFromGpuirShared(shared) \
	(ParallelTableScanDesc) ((char *) (shared) + BUFFERALIGN(sizeof(GpuirParallelShared)))

/*
 * A worker's export, message by message: MSG_HEAD, then MSG_DOCS until
 * every document is sent (TIDs, then lengths), then one or more MSG_LIST
 * per term in dictionary order (a long list in parts, all but the last
 * with more set), then an empty message.
 */
#define MSG_HEAD	1
#define MSG_DOCS	2
#define MSG_LIST	3
#define MSG_DOCS_MAX	65536	/* documents per MSG_DOCS */
#define MSG_LIST_MAX	8192	/* postings per MSG_LIST (64 kB) */

typedef struct MsgHead
{
	uint32		kind;			/* MSG_HEAD */
	uint32		ndocs;
	uint32		nterms;
	uint32		nruns;			/* sorted runs its builder spilled */
} MsgHead;

typedef struct MsgDocs
{
	uint32		kind;			/* MSG_DOCS; count TIDs, then count lengths */
	uint32		count;
} MsgDocs;

typedef struct MsgList
{
	uint32		kind;			/* MSG_LIST; the lexeme's bytes, then count GpuirPosting */
	uint16		len;
	bool		more;			/* a part of the same list follows */
	uint32		count;
} MsgList;

typedef struct GpuirBuildState
{
	GpuirBuilder *builder;
	Oid			cfg_id;
	uint16		weights[INDEX_MAX_KEYS];	/* the metapage's (0 reads as 1) */
	int			natts;
	MemoryContext tmpcxt;		/* reset after every tuple */
	int64		scanned;		/* rows seen, for progress */
	bool		is_worker;		/* a parallel worker: progress goes to shared_scanned */
	pg_atomic_uint64 *shared_scanned;	/* a parallel build's rows_scanned */
	/* a parallel build's leader: the workers' sorted runs, the segment it wrote */
	int			worker_runs;
	bool		have;
	GpuirSegmentData seg;
	uint64		total_dl;
} GpuirBuildState;

static void
gpuir_build_callback(Relation index, ItemPointer tid, Datum *values,
					 bool *isnull, bool tupleIsAlive, void *state)
{
	GpuirBuildState *bs = state;
	MemoryContext old;
	GpuirDocTerms doc;

	if ((++bs->scanned % 1024) == 0)
	{
		/* the leader reports the rows of every process; a worker adds its own */
		if (bs->is_worker)
			pg_atomic_fetch_add_u64(bs->shared_scanned, 1024);
		else
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE,
										 bs->scanned + (bs->shared_scanned ?
														(int64) pg_atomic_read_u64(bs->shared_scanned) : 0));
	}
	old = MemoryContextSwitchTo(bs->tmpcxt);
	/* NULL documents (every column NULL) are not indexed */
	if (GpuirTokenizeRow(bs->cfg_id, bs->weights, bs->natts, values, isnull, &doc))
		GpuirBuilderAddTerms(bs->builder, tid, &doc);
	MemoryContextSwitchTo(old);
	MemoryContextReset(bs->tmpcxt);
}

/* msg_send: one message to the leader (the empty one, the last, flushed) */
static void
msg_send(shm_mq_handle *mq, const void *data, Size nbytes)
{
	if (shm_mq_send(mq, nbytes, data, false, nbytes == 0) != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("gpuir parallel build: the leader stopped reading")));
}

/* export_to_leader: a worker's builder, exported through mq (MSG_*) */
static void
export_to_leader(GpuirBuilder *b, Relation index, shm_mq_handle *mq)
{
	ItemPointerData *tids;
	uint32	   *dls;
	uint32		ndocs = GpuirBuilderExportBegin(b, index, &tids, &dls);
	MsgHead		head = {MSG_HEAD, ndocs, GpuirBuilderNumTerms(b), (uint32) GpuirBuilderRuns(b)};
	StringInfoData msg;
	const char *lexeme;
	uint16		len;
	GpuirPosting *list;
	uint64		n;

	initStringInfo(&msg);
	msg_send(mq, &head, sizeof(head));
	for (uint32 d = 0; d < ndocs; d += MSG_DOCS_MAX)
	{
		MsgDocs		md = {MSG_DOCS, Min(MSG_DOCS_MAX, ndocs - d)};

		CHECK_FOR_INTERRUPTS();
		resetStringInfo(&msg);
		appendBinaryStringInfo(&msg, (char *) &md, sizeof(md));
		appendBinaryStringInfo(&msg, (char *) (tids + d), sizeof(ItemPointerData) * md.count);
		appendBinaryStringInfo(&msg, (char *) (dls + d), sizeof(uint32) * md.count);
		msg_send(mq, msg.data, msg.len);
	}
	pfree(tids);
	pfree(dls);
	while (GpuirBuilderExportNext(b, &lexeme, &len, &list, &n))
	{
		uint64		i = 0;

		do
		{
			MsgList		ml = {MSG_LIST, len, n - i > MSG_LIST_MAX, (uint32) Min(MSG_LIST_MAX, n - i)};

			CHECK_FOR_INTERRUPTS();
			resetStringInfo(&msg);
			appendBinaryStringInfo(&msg, (char *) &ml, sizeof(ml));
			appendBinaryStringInfo(&msg, lexeme, len);
			appendBinaryStringInfo(&msg, (char *) (list + i), sizeof(GpuirPosting) * ml.count);
			msg_send(mq, msg.data, msg.len);
			i += ml.count;
		} while (i < n);
	}
	GpuirBuilderExportEnd(b);
	msg_send(mq, NULL, 0);			/* the end */
	pfree(msg.data);
}

/* gpuir_parallel_build_main: a parallel worker of CREATE INDEX */
PGDLLEXPORT void gpuir_parallel_build_main(dsm_segment *seg, shm_toc *toc);

void
gpuir_parallel_build_main(dsm_segment *seg, shm_toc *toc)
{
	GpuirParallelShared *shared = shm_toc_lookup(toc, PARALLEL_KEY_GPUIR_SHARED, false);
	char	   *queues = shm_toc_lookup(toc, PARALLEL_KEY_GPUIR_QUEUES, false);
	shm_mq	   *mq = (shm_mq *) (queues + (Size) ParallelWorkerNumber * GPUIR_BUILD_QUEUE_SIZE);
	LOCKMODE	heap_lock = shared->isconcurrent ? ShareUpdateExclusiveLock : ShareLock;
	LOCKMODE	index_lock = shared->isconcurrent ? RowExclusiveLock : AccessExclusiveLock;
	shm_mq_handle *to_leader;
	Relation	heap;
	Relation	index;
	IndexInfo  *indexInfo;
	GpuirBuildState bs;
	TableScanDesc scan;
	double		reltuples;

	shm_mq_set_sender(mq, MyProc);
	to_leader = shm_mq_attach(mq, seg, NULL);
	memset(&bs, 0, sizeof(bs));
	bs.is_worker = true;
	bs.shared_scanned = &shared->rows_scanned;
	bs.builder = GpuirBuilderCreate();
	GpuirBuilderSetMemoryLimit(bs.builder, shared->worker_mem);
	bs.cfg_id = shared->cfg_id;
	memcpy(bs.weights, shared->weights, sizeof(bs.weights));
	bs.tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir build tuple",
									  ALLOCSET_DEFAULT_SIZES);
	heap = table_open(shared->heaprelid, heap_lock);
	index = index_open(shared->indexrelid, index_lock);
	indexInfo = BuildIndexInfo(index);
	indexInfo->ii_Concurrent = shared->isconcurrent;
	bs.natts = IndexRelationGetNumberOfKeyAttributes(index);
	scan = table_beginscan_parallel(heap, ParallelTableScanFromGpuirShared(shared));
	reltuples = table_index_build_scan(heap, index, indexInfo, true, false,
									   gpuir_build_callback, &bs, scan);
	export_to_leader(bs.builder, index, to_leader);
	GpuirBuilderFree(bs.builder);
	SpinLockAcquire(&shared->mutex);
	shared->reltuples += reltuples;
	SpinLockRelease(&shared->mutex);
	index_close(index, index_lock);
	table_close(heap, heap_lock);
}

/* a worker's export as read by the leader: a GpuirSegmentSource */
typedef struct QueueSource
{
	shm_mq_handle *mq;
	GpuirPosting *list;			/* the current list, all its parts */
	uint64		cap;
	char	   *lexeme;
	Size		lexeme_cap;
} QueueSource;

/* msg_recv: the next message of a worker's queue (valid until the next) */
static const char *
msg_recv(QueueSource *q, Size *nbytes)
{
	void	   *data;

	if (shm_mq_receive(q->mq, nbytes, &data, false) != SHM_MQ_SUCCESS)
	{
		/* the worker is gone: its own error first, if it sent one */
		CHECK_FOR_INTERRUPTS();
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("gpuir parallel build: a parallel worker exited before sending its postings")));
	}
	return data;
}

static void
bad_message(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_INTERNAL_ERROR),
			 errmsg("gpuir parallel build: a malformed message from a parallel worker")));
}

/* queue_next: GpuirSegmentSource.next of a QueueSource */
static bool
queue_next(void *arg, const char **lexeme, uint16 *len, GpuirPosting **list, uint64 *n)
{
	QueueSource *q = arg;
	uint64		have = 0;
	MsgList		ml;

	do
	{
		Size		nbytes;
		const char *p = msg_recv(q, &nbytes);

		if (nbytes == 0 && have == 0)
			return false;		/* the end */
		if (nbytes < sizeof(ml))
			bad_message();
		memcpy(&ml, p, sizeof(ml));
		if (ml.kind != MSG_LIST ||
			nbytes != sizeof(ml) + ml.len + sizeof(GpuirPosting) * (Size) ml.count)
			bad_message();
		if (have == 0)
		{
			if ((Size) ml.len + 1 > q->lexeme_cap)
			{
				q->lexeme_cap = Max((Size) ml.len + 1, 64);
				q->lexeme = q->lexeme ? repalloc(q->lexeme, q->lexeme_cap) : palloc(q->lexeme_cap);
			}
			memcpy(q->lexeme, p + sizeof(ml), ml.len);
			*len = ml.len;
		}
		if (have + ml.count > q->cap)
		{
			q->cap = Max(have + ml.count, q->cap * 2);
			q->list = q->list ? repalloc_huge(q->list, sizeof(GpuirPosting) * q->cap)
				: palloc_extended(sizeof(GpuirPosting) * q->cap, MCXT_ALLOC_HUGE);
		}
		memcpy(q->list + have, p + sizeof(ml) + ml.len, sizeof(GpuirPosting) * (Size) ml.count);
		have += ml.count;
	} while (ml.more);
	*lexeme = q->lexeme;
	*list = q->list;
	*n = have;
	return true;
}

/* builder_next: GpuirSegmentSource.next of the leader's own builder */
static bool
builder_next(void *arg, const char **lexeme, uint16 *len, GpuirPosting **list, uint64 *n)
{
	return GpuirBuilderExportNext((GpuirBuilder *) arg, lexeme, len, list, n);
}

/* queue_source: read a worker's header and documents into src; returns its runs */
static int
queue_source(QueueSource *q, GpuirSegmentSource *src)
{
	Size		nbytes;
	const char *p = msg_recv(q, &nbytes);
	MsgHead		head;
	ItemPointerData *tids;
	uint32	   *dls;
	uint32		got = 0;

	if (nbytes != sizeof(head))
		bad_message();
	memcpy(&head, p, sizeof(head));
	if (head.kind != MSG_HEAD)
		bad_message();
	tids = palloc_extended(sizeof(ItemPointerData) * Max(head.ndocs, 1), MCXT_ALLOC_HUGE);
	dls = palloc_extended(sizeof(uint32) * Max(head.ndocs, 1), MCXT_ALLOC_HUGE);
	while (got < head.ndocs)
	{
		MsgDocs		md;

		CHECK_FOR_INTERRUPTS();
		p = msg_recv(q, &nbytes);
		if (nbytes < sizeof(md))
			bad_message();
		memcpy(&md, p, sizeof(md));
		if (md.kind != MSG_DOCS || md.count > head.ndocs - got ||
			nbytes != sizeof(md) + (sizeof(ItemPointerData) + sizeof(uint32)) * (Size) md.count)
			bad_message();
		memcpy(tids + got, p + sizeof(md), sizeof(ItemPointerData) * md.count);
		memcpy(dls + got, p + sizeof(md) + sizeof(ItemPointerData) * md.count,
			   sizeof(uint32) * md.count);
		got += md.count;
	}
	src->ndocs = head.ndocs;
	src->tids = tids;
	src->dls = dls;
	src->nterms = head.nterms;
	src->next = queue_next;
	src->arg = q;
	return (int) head.nruns;
}

/*
 * build_parallel: a parallel build with nworkers requested, writing the
 * segment (bs->have, bs->seg, bs->total_dl); the leader's own part of the
 * scan goes to bs->builder.  Returns the table's tuples, or -1 when no
 * worker could be launched (nothing scanned: the caller builds serially).
 */
static double
build_parallel(Relation heap, Relation index, IndexInfo *indexInfo, GpuirBuildState *bs,
			   int nworkers, Size budget, const GpuirMetaPageData *meta)
{
	ParallelContext *pcxt;
	Snapshot	snapshot;
	Size		est_shared;
	GpuirParallelShared *shared;
	char	   *queues;
	shm_mq_handle **mqs;
	TableScanDesc scan;
	double		reltuples;
	GpuirSegmentSource *src;
	QueueSource *qs;
	ItemPointerData *tids;
	uint32	   *dls;
	int			nlaunched;
	Size		share;
	instr_time	t0,
				t_scan,
				t_export,
				t_docs;

	INSTR_TIME_SET_CURRENT(t0);
	EnterParallelMode();
	pcxt = CreateParallelContext("gpuir", "gpuir_parallel_build_main", nworkers);
	snapshot = indexInfo->ii_Concurrent ? RegisterSnapshot(GetTransactionSnapshot()) : SnapshotAny;
	est_shared = BUFFERALIGN(sizeof(GpuirParallelShared)) + table_parallelscan_estimate(heap, snapshot);
	shm_toc_estimate_chunk(&pcxt->estimator, est_shared);
	shm_toc_estimate_chunk(&pcxt->estimator, (Size) GPUIR_BUILD_QUEUE_SIZE * nworkers);
	shm_toc_estimate_keys(&pcxt->estimator, 2);
	InitializeParallelDSM(pcxt);
	if (pcxt->seg == NULL)
	{
		/* no dynamic shared memory */
		if (IsMVCCSnapshot(snapshot))
			UnregisterSnapshot(snapshot);
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		return -1;
	}
	/* the queues come out of the budget, the rest is shared by every participant */
	budget -= Min(budget / 2, (Size) nworkers * GPUIR_BUILD_QUEUE_SIZE);
	share = budget / (nworkers + 1);
	shared = shm_toc_allocate(pcxt->toc, est_shared);
	shared->heaprelid = RelationGetRelid(heap);
	shared->indexrelid = RelationGetRelid(index);
	shared->cfg_id = bs->cfg_id;
	memcpy(shared->weights, bs->weights, sizeof(shared->weights));
	shared->isconcurrent = indexInfo->ii_Concurrent;
	shared->worker_mem = share;
	SpinLockInit(&shared->mutex);
	shared->reltuples = 0;
	pg_atomic_init_u64(&shared->rows_scanned, 0);
	table_parallelscan_initialize(heap, ParallelTableScanFromGpuirShared(shared), snapshot);
	shm_toc_insert(pcxt->toc, PARALLEL_KEY_GPUIR_SHARED, shared);
	queues = shm_toc_allocate(pcxt->toc, (Size) GPUIR_BUILD_QUEUE_SIZE * nworkers);
	shm_toc_insert(pcxt->toc, PARALLEL_KEY_GPUIR_QUEUES, queues);
	mqs = palloc(sizeof(shm_mq_handle *) * nworkers);
	for (int i = 0; i < nworkers; i++)
	{
		shm_mq	   *mq = shm_mq_create(queues + (Size) i * GPUIR_BUILD_QUEUE_SIZE,
									   GPUIR_BUILD_QUEUE_SIZE);

		shm_mq_set_receiver(mq, MyProc);
		mqs[i] = shm_mq_attach(mq, pcxt->seg, NULL);
	}
	LaunchParallelWorkers(pcxt);
	nlaunched = pcxt->nworkers_launched;
	if (nlaunched == 0)
	{
		WaitForParallelWorkersToFinish(pcxt);
		if (IsMVCCSnapshot(snapshot))
			UnregisterSnapshot(snapshot);
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		return -1;
	}
	for (int i = 0; i < nlaunched; i++)
		shm_mq_set_handle(mqs[i], pcxt->worker[i].bgwhandle);
	bs->shared_scanned = &shared->rows_scanned;
	ereport(DEBUG1,
			(errmsg_internal("gpuir: building index \"%s\" with parallel workers",
							 RelationGetRelationName(index)),
			 errdetail_internal("%d of %d workers launched.", nlaunched, nworkers)));

	/* the leader's part of the scan, into its own builder */
	GpuirBuilderSetMemoryLimit(bs->builder, share);
	scan = table_beginscan_parallel(heap, ParallelTableScanFromGpuirShared(shared));
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   gpuir_build_callback, bs, scan);
	INSTR_TIME_SET_CURRENT(t_scan);

	/* every participant's export, merged into the segment */
	src = palloc0(sizeof(GpuirSegmentSource) * (nlaunched + 1));
	qs = palloc0(sizeof(QueueSource) * nlaunched);
	src[0].ndocs = GpuirBuilderExportBegin(bs->builder, index, &tids, &dls);
	src[0].tids = tids;
	src[0].dls = dls;
	src[0].nterms = GpuirBuilderNumTerms(bs->builder);
	src[0].next = builder_next;
	src[0].arg = bs->builder;
	INSTR_TIME_SET_CURRENT(t_export);
	for (int i = 0; i < nlaunched; i++)
	{
		qs[i].mq = mqs[i];
		bs->worker_runs += queue_source(&qs[i], &src[i + 1]);
	}
	INSTR_TIME_SET_CURRENT(t_docs);
	INSTR_TIME_SUBTRACT(t_docs, t_export);
	INSTR_TIME_SUBTRACT(t_export, t_scan);
	INSTR_TIME_SUBTRACT(t_scan, t0);
	/* the merge's own line follows with its phases (GpuirWriteMerged) */
	ereport(DEBUG2,
			(errmsg_internal("gpuir: parallel build of \"%s\": leader's scan %.3f s, its export %.3f s, "
							 "waiting for the workers' documents %.3f s",
							 RelationGetRelationName(index), INSTR_TIME_GET_DOUBLE(t_scan),
							 INSTR_TIME_GET_DOUBLE(t_export), INSTR_TIME_GET_DOUBLE(t_docs))));
	bs->have = GpuirWriteMerged(index, 1, meta->k1, meta->b, src, nlaunched + 1, true,
								&bs->seg, &bs->total_dl);
	GpuirBuilderExportEnd(bs->builder);

	WaitForParallelWorkersToFinish(pcxt);
	reltuples += shared->reltuples;
	bs->shared_scanned = NULL;	/* with the shared memory */
	if (IsMVCCSnapshot(snapshot))
		UnregisterSnapshot(snapshot);
	DestroyParallelContext(pcxt);
	ExitParallelMode();
	return reltuples;
}

/*
 * gpuirbuildphasename: the name of a CREATE INDEX phase of gpuir
 * (ambuildphasename), shown in pg_stat_progress_create_index.phase as
 * "building index: NAME".  Tuples done / total count rows while scanning the
 * table and lexemes while compressing; blocks done / total count heap blocks
 * while scanning and index pages while writing.
 */
char *
gpuirbuildphasename(int64 phasenum)
{
	switch (phasenum)
	{
		case PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE:
			return "initializing";
		case GPUIR_BUILD_PHASE_SCAN:
			return "scanning table";
		case GPUIR_BUILD_PHASE_SORT:
			return "sorting postings";
		case GPUIR_BUILD_PHASE_ENCODE:
			return "compressing posting lists";
		case GPUIR_BUILD_PHASE_WRITE:
			return "writing segment";
	}
	return NULL;
}

/*
 * gpuirbuild: tokenize every row of the heap with the index's text search
 * configuration and write one segment (src/README): serially with one
 * builder, or in parallel when max_parallel_maintenance_workers allows
 * (build_parallel: a builder per participant, merged by the leader).
 * Raises 42704 for an unknown text_config.
 */
IndexBuildResult *
gpuirbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	GpuirBuildState bs;
	GpuirMetaPageData meta;
	double		reltuples;
	bool		have;
	Size		budget = (Size) maintenance_work_mem * 1024;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));

	init_metapage(index, MAIN_FORKNUM);
	GpuirReadMeta(index, &meta);
	record_config_dependency(index, meta.cfg_id);

	memset(&bs, 0, sizeof(bs));
	bs.builder = GpuirBuilderCreate();
	GpuirBuilderReportProgress(bs.builder);
	/* maintenance_work_mem bounds the postings held (a parallel build shares it) */
	GpuirBuilderSetMemoryLimit(bs.builder, budget);
	bs.cfg_id = meta.cfg_id;
	memcpy(bs.weights, meta.weights, sizeof(bs.weights));
	bs.natts = IndexRelationGetNumberOfKeyAttributes(index);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_SCAN);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL,
								 (int64) Max(heap->rd_rel->reltuples, 0));
	bs.tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir build tuple",
									  ALLOCSET_DEFAULT_SIZES);
	reltuples = -1;
	if (IsUnderPostmaster && !IsParallelWorker() && !IsInParallelMode())
	{
		int			nworkers = plan_create_index_workers(RelationGetRelid(heap),
														 RelationGetRelid(index));

		if (nworkers > 0)
			reltuples = build_parallel(heap, index, indexInfo, &bs, nworkers, budget, &meta);
	}
	if (reltuples >= 0)
		have = bs.have;
	else
	{
		reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
										   gpuir_build_callback, &bs, NULL);
		have = GpuirBuilderWrite(bs.builder, index, 1, meta.k1, meta.b, NULL, &bs.seg);
		bs.total_dl = GpuirBuilderTotalDl(bs.builder);
	}
	if (GpuirBuilderRuns(bs.builder) + bs.worker_runs > 0)
		ereport(DEBUG1,
				(errmsg_internal("gpuir: index \"%s\" built from %d sorted runs of postings in temporary files",
								 RelationGetRelationName(index),
								 GpuirBuilderRuns(bs.builder) + bs.worker_runs),
				 errdetail_internal("maintenance_work_mem is %d kB.", maintenance_work_mem)));
	if (have)
	{
		Buffer		buf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
		GenericXLogState *state;
		GpuirMetaPage m;

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		m = GpuirPageGetMeta(GenericXLogRegisterBuffer(state, buf, 0));
		m->segments[0] = bs.seg;
		m->nsegments = 1;
		m->ndocs = bs.seg.ndocs;
		m->total_dl = bs.total_dl;
		m->generation = 1;
		GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
	}
	GpuirBuilderFree(bs.builder);
	MemoryContextDelete(bs.tmpcxt);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	/* the documents indexed: every row with an indexed lexeme */
	result->index_tuples = have ? bs.seg.ndocs : 0;
	return result;
}

/* gpuirbuildempty: the metapage of an empty index in the init fork */
void
gpuirbuildempty(Relation index)
{
	Page		page = (Page) palloc(BLCKSZ);

	fill_metapage(index, page);
	PageSetChecksumInplace(page, GPUIR_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, GPUIR_METAPAGE_BLKNO,
			  (char *) page, true);
	log_newpage(&GpuirSmgrFile(index), INIT_FORKNUM,
				GPUIR_METAPAGE_BLKNO, page, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}
