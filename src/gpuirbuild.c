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
 * _bt_begin_parallel): each worker tokenizes the rows of the blocks it gets
 * and sends every tokenized document (heap TID, dl, lexemes with tf) to the
 * leader through a message queue of its own; the leader scans and tokenizes
 * too, and adds its own documents and the workers' to the one segment
 * builder, which assigns docIDs in heap TID order whatever the order of
 * arrival: the index is the same as a serial build's.  Tokenizing is most
 * of a build's time; the leader's own part (adding every document, then
 * sorting, encoding and writing the segment) is what more workers do not
 * shorten (bench/results/2026-11-26-h200-parbuild.md: 4.5x with 15).
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
	slock_t		mutex;
	double		reltuples;		/* the workers' heap tuples, summed */
	pg_atomic_uint64 rows_scanned;	/* the workers' rows so far, for progress */
} GpuirParallelShared;

#define ParallelTableScanFromGpuirShared(shared) \
	(ParallelTableScanDesc) ((char *) (shared) + BUFFERALIGN(sizeof(GpuirParallelShared)))

/* a tokenized document in a queue message: then per lexeme MsgTerm and its bytes */
typedef struct MsgDoc
{
	ItemPointerData tid;
	uint32		dl;
	uint32		nterms;
} MsgDoc;

typedef struct MsgTerm
{
	uint32		tf;
	uint16		len;
} MsgTerm;

typedef struct GpuirBuildState
{
	GpuirBuilder *builder;
	Oid			cfg_id;
	uint16		weights[INDEX_MAX_KEYS];	/* the metapage's (0 reads as 1) */
	int			natts;
	MemoryContext tmpcxt;		/* reset after every tuple */
	double		indtuples;
	int64		scanned;		/* rows seen, for progress */
	pg_atomic_uint64 *shared_scanned;	/* a parallel build's rows_scanned */
	/* the leader of a parallel build: the workers' queues */
	int			nqueues;
	shm_mq_handle **queues;
	bool	   *queue_done;
	/* a parallel worker: its queue to the leader */
	shm_mq_handle *to_leader;
	StringInfoData msg;
} GpuirBuildState;

/* add_doc: a tokenized document to the builder (the leader, or a serial build) */
static void
add_doc(GpuirBuildState *bs, ItemPointer tid, const GpuirDocTerms *doc)
{
	GpuirBuilderAddTerms(bs->builder, tid, doc);
	if (doc->nterms > 0)
		bs->indtuples += 1;
}

/*
 * drain_queues: add the documents waiting in the workers' queues; with
 * wait, until every worker has finished (its end message, or detached).
 * Returns true when every queue is done.
 */
static bool
drain_queues(GpuirBuildState *bs, bool wait)
{
	for (;;)
	{
		bool		all_done = true;
		bool		got = false;

		for (int i = 0; i < bs->nqueues; i++)
		{
			Size		nbytes;
			void	   *data;
			shm_mq_result res;

			if (bs->queue_done[i])
				continue;
			while ((res = shm_mq_receive(bs->queues[i], &nbytes, &data, true)) == SHM_MQ_SUCCESS)
			{
				const char *p = data;
				MsgDoc		md;
				GpuirDocTerms doc;
				MemoryContext old;

				got = true;
				if (nbytes == 0)
				{
					bs->queue_done[i] = true;	/* the worker's end message */
					break;
				}
				if (nbytes < sizeof(MsgDoc))
					elog(ERROR, "gpuir parallel build: a message of %zu bytes", nbytes);
				memcpy(&md, p, sizeof(MsgDoc));
				p += sizeof(MsgDoc);
				old = MemoryContextSwitchTo(bs->tmpcxt);
				doc.dl = md.dl;
				doc.nterms = (int) md.nterms;
				doc.terms = palloc(sizeof(GpuirTerm) * Max(md.nterms, 1));
				for (uint32 t = 0; t < md.nterms; t++)
				{
					MsgTerm		mt;

					if (p + sizeof(MsgTerm) > (const char *) data + nbytes)
						elog(ERROR, "gpuir parallel build: a truncated message");
					memcpy(&mt, p, sizeof(MsgTerm));
					p += sizeof(MsgTerm);
					if (p + mt.len > (const char *) data + nbytes)
						elog(ERROR, "gpuir parallel build: a truncated message");
					doc.terms[t].tf = mt.tf;
					doc.terms[t].len = mt.len;
					doc.terms[t].lexeme = (char *) p;	/* the builder copies it */
					p += mt.len;
				}
				add_doc(bs, &md.tid, &doc);
				MemoryContextSwitchTo(old);
				MemoryContextReset(bs->tmpcxt);
			}
			if (res == SHM_MQ_DETACHED)
				bs->queue_done[i] = true;	/* gone: its error, if any, comes with its exit */
			if (!bs->queue_done[i])
				all_done = false;
		}
		if (all_done || !wait)
			return all_done;
		if (!got)
		{
			(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1, PG_WAIT_EXTENSION);
			ResetLatch(MyLatch);
		}
		CHECK_FOR_INTERRUPTS();
	}
}

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
		if (bs->to_leader != NULL)
			pg_atomic_fetch_add_u64(bs->shared_scanned, 1024);
		else
			pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE,
										 bs->scanned + (bs->shared_scanned ?
														(int64) pg_atomic_read_u64(bs->shared_scanned) : 0));
	}
	if (bs->nqueues > 0)
		(void) drain_queues(bs, false);
	old = MemoryContextSwitchTo(bs->tmpcxt);
	if (!GpuirTokenizeRow(bs->cfg_id, bs->weights, bs->natts, values, isnull, &doc))
	{
		/* NULL documents (every column NULL) are not indexed */
		MemoryContextSwitchTo(old);
		return;
	}
	if (bs->to_leader == NULL)
		add_doc(bs, tid, &doc);
	else if (doc.nterms > 0)
	{
		MsgDoc		md;
		shm_mq_result res;

		/* a parallel worker: to the leader */
		resetStringInfo(&bs->msg);
		md.tid = *tid;
		md.dl = doc.dl;
		md.nterms = (uint32) doc.nterms;
		appendBinaryStringInfo(&bs->msg, (char *) &md, sizeof(md));
		for (int i = 0; i < doc.nterms; i++)
		{
			MsgTerm		mt;

			mt.tf = doc.terms[i].tf;
			mt.len = doc.terms[i].len;
			appendBinaryStringInfo(&bs->msg, (char *) &mt, sizeof(mt));
			appendBinaryStringInfo(&bs->msg, doc.terms[i].lexeme, doc.terms[i].len);
		}
		res = shm_mq_send(bs->to_leader, bs->msg.len, bs->msg.data, false, false);
		if (res != SHM_MQ_SUCCESS)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("gpuir parallel build: the leader stopped reading")));
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(bs->tmpcxt);
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
	Relation	heap;
	Relation	index;
	IndexInfo  *indexInfo;
	GpuirBuildState bs;
	TableScanDesc scan;
	double		reltuples;
	shm_mq_result res;

	shm_mq_set_sender(mq, MyProc);
	memset(&bs, 0, sizeof(bs));
	bs.to_leader = shm_mq_attach(mq, seg, NULL);
	bs.shared_scanned = &shared->rows_scanned;
	initStringInfo(&bs.msg);
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
	/* the end message, flushing what is still unsent */
	res = shm_mq_send(bs.to_leader, 0, NULL, false, true);
	if (res != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("gpuir parallel build: the leader stopped reading")));
	SpinLockAcquire(&shared->mutex);
	shared->reltuples += reltuples;
	SpinLockRelease(&shared->mutex);
	index_close(index, index_lock);
	table_close(heap, heap_lock);
}

/*
 * scan_parallel: the table scan of a parallel build with nworkers
 * requested; the leader's part of it fills bs.  Returns the table's
 * tuples, or -1 when no worker could be launched (nothing scanned: the
 * caller scans serially).
 */
static double
scan_parallel(Relation heap, Relation index, IndexInfo *indexInfo, GpuirBuildState *bs,
			  int nworkers)
{
	ParallelContext *pcxt;
	Snapshot	snapshot;
	Size		est_shared;
	GpuirParallelShared *shared;
	char	   *queues;
	TableScanDesc scan;
	double		reltuples;

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
	shared = shm_toc_allocate(pcxt->toc, est_shared);
	shared->heaprelid = RelationGetRelid(heap);
	shared->indexrelid = RelationGetRelid(index);
	shared->cfg_id = bs->cfg_id;
	memcpy(shared->weights, bs->weights, sizeof(shared->weights));
	shared->isconcurrent = indexInfo->ii_Concurrent;
	SpinLockInit(&shared->mutex);
	shared->reltuples = 0;
	pg_atomic_init_u64(&shared->rows_scanned, 0);
	table_parallelscan_initialize(heap, ParallelTableScanFromGpuirShared(shared), snapshot);
	shm_toc_insert(pcxt->toc, PARALLEL_KEY_GPUIR_SHARED, shared);
	queues = shm_toc_allocate(pcxt->toc, (Size) GPUIR_BUILD_QUEUE_SIZE * nworkers);
	shm_toc_insert(pcxt->toc, PARALLEL_KEY_GPUIR_QUEUES, queues);
	bs->queues = palloc(sizeof(shm_mq_handle *) * nworkers);
	bs->queue_done = palloc0(sizeof(bool) * nworkers);
	for (int i = 0; i < nworkers; i++)
	{
		shm_mq	   *mq = shm_mq_create(queues + (Size) i * GPUIR_BUILD_QUEUE_SIZE,
									   GPUIR_BUILD_QUEUE_SIZE);

		shm_mq_set_receiver(mq, MyProc);
		bs->queues[i] = shm_mq_attach(mq, pcxt->seg, NULL);
	}
	LaunchParallelWorkers(pcxt);
	if (pcxt->nworkers_launched == 0)
	{
		WaitForParallelWorkersToFinish(pcxt);
		if (IsMVCCSnapshot(snapshot))
			UnregisterSnapshot(snapshot);
		DestroyParallelContext(pcxt);
		ExitParallelMode();
		bs->queues = NULL;
		return -1;
	}
	bs->nqueues = pcxt->nworkers_launched;
	bs->shared_scanned = &shared->rows_scanned;
	for (int i = 0; i < bs->nqueues; i++)
		shm_mq_set_handle(bs->queues[i], pcxt->worker[i].bgwhandle);
	ereport(DEBUG1,
			(errmsg_internal("gpuir: building index \"%s\" with parallel workers",
							 RelationGetRelationName(index)),
			 errdetail_internal("%d of %d workers launched.", pcxt->nworkers_launched, nworkers)));

	/* the leader's part of the scan, draining the queues as it goes */
	scan = table_beginscan_parallel(heap, ParallelTableScanFromGpuirShared(shared));
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   gpuir_build_callback, bs, scan);
	(void) drain_queues(bs, true);
	WaitForParallelWorkersToFinish(pcxt);
	reltuples += shared->reltuples;
	bs->nqueues = 0;
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
 * configuration (in parallel when max_parallel_maintenance_workers allows:
 * scan_parallel), build one segment in memory and write it (src/README).
 * Raises 42704 for an unknown text_config.
 */
IndexBuildResult *
gpuirbuild(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	GpuirBuildState bs;
	GpuirMetaPageData meta;
	GpuirSegmentData seg;
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
	/* the leader holds every posting: maintenance_work_mem bounds them */
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
		{
			/* the workers' queues come out of the same budget */
			GpuirBuilderSetMemoryLimit(bs.builder,
									   budget - Min(budget / 2, (Size) nworkers * GPUIR_BUILD_QUEUE_SIZE));
			reltuples = scan_parallel(heap, index, indexInfo, &bs, nworkers);
		}
	}
	if (reltuples < 0)
		reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
										   gpuir_build_callback, &bs, NULL);

	have = GpuirBuilderWrite(bs.builder, index, 1, meta.k1, meta.b, NULL, &seg);
	if (GpuirBuilderRuns(bs.builder) > 0)
		ereport(DEBUG1,
				(errmsg_internal("gpuir: index \"%s\" built from %d sorted runs of postings in temporary files",
								 RelationGetRelationName(index), GpuirBuilderRuns(bs.builder)),
				 errdetail_internal("maintenance_work_mem is %d kB.", maintenance_work_mem)));
	if (have)
	{
		Buffer		buf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
		GenericXLogState *state;
		GpuirMetaPage m;

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		state = GenericXLogStart(index);
		m = GpuirPageGetMeta(GenericXLogRegisterBuffer(state, buf, 0));
		m->segments[0] = seg;
		m->nsegments = 1;
		m->ndocs = seg.ndocs;
		m->total_dl = GpuirBuilderTotalDl(bs.builder);
		m->generation = 1;
		GenericXLogFinish(state);
		UnlockReleaseBuffer(buf);
	}
	GpuirBuilderFree(bs.builder);
	MemoryContextDelete(bs.tmpcxt);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = bs.indtuples;
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
