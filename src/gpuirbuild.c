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
#include "storage/condition_variable.h"
#include "storage/sharedfileset.h"
#include "storage/shm_mq.h"
#include "storage/smgr.h"
#include "storage/spin.h"
#include "utils/builtins.h"
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

/*
 * check_prior_column: an index INCLUDEs at most one column, its document
 * prior, of a type GpuirRowPrior reads; raises 0A000 for more than one and
 * 42804 (datatype_mismatch) for another type
 */
static void
check_prior_column(Relation index)
{
	int			nkey = IndexRelationGetNumberOfKeyAttributes(index);
	int			natts = IndexRelationGetNumberOfAttributes(index);
	Form_pg_attribute att;

	if (natts == nkey)
		return;
	if (natts > nkey + 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("gpuir index \"%s\" INCLUDEs %d columns", RelationGetRelationName(index),
						natts - nkey),
				 errdetail("A gpuir index INCLUDEs at most one column: the document prior."),
				 errhint("INCLUDE one numeric column; to combine several, INCLUDE a generated column that computes the prior.")));
	att = TupleDescAttr(RelationGetDescr(index), nkey);
	if (!GpuirPriorTypeOk(att->atttypid))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("the INCLUDE column \"%s\" of gpuir index \"%s\" is of type %s, not a number",
						NameStr(att->attname), RelationGetRelationName(index),
						format_type_be(att->atttypid)),
				 errdetail("A gpuir index's INCLUDE column is its document prior: smallint, integer, bigint, real, double precision or numeric."),
				 errhint("INCLUDE a numeric column, or index the text column as a key column.")));
}

/*
 * index_options: what an empty index's metapage holds of its options (the
 * reloptions, the text search configuration, the weights and the prior
 * column, checked), for GpuirFillMetaPage
 */
static void
index_options(Relation index, GpuirMetaPageData *opts)
{
	GpuirOptions *o = (GpuirOptions *) index->rd_options;

	memset(opts, 0, sizeof(GpuirMetaPageData));
	opts->cfg_id = GpuirResolveConfig(index);
	opts->k1 = o ? o->k1 : GPUIR_DEFAULT_K1;
	opts->b = o ? o->b : GPUIR_DEFAULT_B;
	GpuirIndexWeights(index, opts->weights);
	check_prior_column(index);
	opts->has_prior = IndexRelationGetNumberOfAttributes(index) >
		IndexRelationGetNumberOfKeyAttributes(index);
	opts->prior_weight = o ? (float4) o->prior_weight : (float4) GPUIR_DEFAULT_PRIOR_WEIGHT;
}

/*
 * Parallel build.  With max_parallel_maintenance_workers > 0 and a table
 * large enough (plan_create_index_workers, as for btree), CREATE INDEX and
 * REINDEX scan the table in parallel (a parallel table scan, as
 * _bt_begin_parallel).  Every participant, the leader too, tokenizes the
 * rows of the blocks it gets and inverts them in a segment builder of its
 * own (its share of maintenance_work_mem; past it, sorted runs in temporary
 * files).  Then, so that the index is the same as a serial build's:
 *
 *   1. documents: each worker sends the leader its documents in heap TID
 *      order through a message queue, in chunks; the leader merges them
 *      with its own by TID as they come (GpuirListsMergeDocs: the merged
 *      TIDs and lengths go to temporary files, so its memory does not grow
 *      with the rows), which gives every participant's docID map, written
 *      for each worker to a file of a SharedFileSet (stage MAPS; avgdl
 *      known);
 *   2. lists: every participant writes its lists (GpuirBuilderExport*:
 *      dictionary order), docIDs mapped to the segment's and each posting
 *      with its document's length, to a file of its own, with a sparse index
 *      (the lexeme and position of a list every 8 kB); the leader cuts the
 *      dictionary into as many ranges as participants at lexemes of its own
 *      index, by its lists' bytes (stage RANGES);
 *   3. ranges: participant r merges the r-th range of every participant's
 *      lists (by lexeme, then docID) and encodes it (GpuirListsMerge) into
 *      files of its own;
 *   4. the leader appends the ranges in order, rebasing their offsets
 *      (GpuirListsAppend), and writes the segment's pages.
 *
 * What stays serial is the merge of the documents, the appending and the
 * writing of the pages.  Each worker's messages to the leader: MSG_HEAD,
 * MSG_DOCS until every document is sent (TIDs, then lengths, then the
 * document priors unless they are all 0), MSG_WRITTEN
 * once its lists file is complete, MSG_ENCODED with its range's sizes.
 */
#define PARALLEL_KEY_GPUIR_SHARED	UINT64CONST(0xA000000000000001)
#define PARALLEL_KEY_GPUIR_QUEUES	UINT64CONST(0xA000000000000002)
#define PARALLEL_KEY_GPUIR_SPLITS	UINT64CONST(0xA000000000000003)
#define GPUIR_BUILD_QUEUE_SIZE		(1024 * 1024)
#define SPLIT_KEY_MAX		2048	/* bytes of a range's first lexeme kept (a prefix still cuts) */
#define SPLIT_SLOT			MAXALIGN(sizeof(uint16) + SPLIT_KEY_MAX)
#define LIST_INDEX_EVERY	8192	/* a lists file's sparse index: an entry per this many bytes */

/* the stages the leader announces (GpuirParallelShared.stage) */
#define STAGE_SCAN		0
#define STAGE_MAPS		1		/* docID maps written, avgdl set */
#define STAGE_RANGES	2		/* every lists file written, ranges cut */

/* what the leader and the workers share (the parallel scan's state follows) */
typedef struct GpuirParallelShared
{
	Oid			heaprelid;
	Oid			indexrelid;
	Oid			cfg_id;
	uint16		weights[INDEX_MAX_KEYS];	/* the metapage's */
	bool		isconcurrent;
	float4		k1;				/* the metapage's BM25 parameters */
	float4		b;
	Size		worker_mem;		/* each worker builder's memory limit, bytes */
	SharedFileSet fileset;		/* docID maps, lists, encoded ranges */
	ConditionVariable cv;		/* broadcast when stage advances */
	slock_t		mutex;
	int			stage;			/* STAGE_*, under mutex */
	int			nranges;		/* participants: the leader and the workers launched */
	double		avgdl;			/* the documents', from STAGE_MAPS */
	GpuirPieces pieces;			/* the segments the documents go to, from STAGE_MAPS */
	double		reltuples;		/* the workers' heap tuples, summed */
	pg_atomic_uint64 rows_scanned;	/* the workers' rows so far, for progress */
	pg_atomic_uint64 lists_done;	/* participants' lists merged, for progress */
} GpuirParallelShared;

#define ParallelTableScanFromGpuirShared(shared) \
	(ParallelTableScanDesc) ((char *) (shared) + BUFFERALIGN(sizeof(GpuirParallelShared)))

#define MSG_HEAD	1
#define MSG_DOCS	2
#define MSG_WRITTEN	3
#define MSG_ENCODED	4
#define MSG_DOCS_MAX	65536	/* documents per MSG_DOCS */

typedef struct MsgHead
{
	uint32		kind;			/* MSG_HEAD */
	uint32		ndocs;
	uint32		nterms;
	uint32		nruns;			/* sorted runs its builder spilled */
} MsgHead;

typedef struct MsgDocs
{
	uint32		kind;			/* MSG_DOCS; count TIDs, then count lengths, */
	uint32		count;
	uint32		priors;			/* then, when 1, count priors (0: all 0) */
} MsgDocs;

typedef struct MsgEncoded
{
	uint32		kind;			/* MSG_ENCODED (MSG_WRITTEN: kind alone) */
	GpuirListsInfo info[GPUIR_MAX_BUILD_PIECES];	/* its range of each piece's lists */
} MsgEncoded;

/* a list in a lists file: the lexeme's bytes, then count GpuirPostingDl */
typedef struct FileList
{
	uint32		count;
	uint16		len;
} FileList;

/* an entry of a lists file's sparse index: a list's position, its lexeme's bytes follow */
typedef struct FileIndexEntry
{
	int64		offset;			/* BufFileTell's */
	int32		fileno;
	uint16		len;
} FileIndexEntry;

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
	/* the workers' sorted runs (a parallel build's leader); the segments written */
	int			worker_runs;
	uint32		max_docs;		/* the max_segment_docs reloption */
	int			nsegs;
	GpuirSegmentData segs[GPUIR_MAX_BUILD_PIECES];
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
	{
		doc.prior = GpuirRowPrior(index, values, isnull);
		GpuirBuilderAddTerms(bs->builder, tid, &doc);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(bs->tmpcxt);
}

/* msg_send: one message to the leader */
static void
msg_send(shm_mq_handle *mq, const void *data, Size nbytes)
{
	if (shm_mq_send(mq, nbytes, data, false, true) != SHM_MQ_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("gpuir parallel build: the leader stopped reading")));
}

/*
 * The files of the build's SharedFileSet, by kind and participant: 'm' a
 * worker's docID map, 'l' a participant's lists and 'x' their sparse index,
 * and an encoded range's streams in GpuirListsBegin's order: 'd' DICT, 'e'
 * LEXEMES, 'b' BLOCKDIR, 'p' PAYLOAD, one of each for every piece (segment
 * to be written): number RANGE_FILE_ID.
 */
#define RANGE_FILE_KIND(k)	("debp"[(k)])
#define RANGE_FILE_ID(sh, j, piece)	((piece) * (sh)->nranges + (j))

/* file_name: the name of a file of the build's SharedFileSet: kind and participant */
static void
file_name(char *buf, char kind, int j)
{
	snprintf(buf, MAXPGPATH, "gpuir.%c%d", kind, j);
}

static BufFile *
file_create(GpuirParallelShared *sh, char kind, int j)
{
	char		name[MAXPGPATH];

	file_name(name, kind, j);
	return BufFileCreateFileSet(&sh->fileset.fs, name);
}

static BufFile *
file_open(GpuirParallelShared *sh, char kind, int j)
{
	char		name[MAXPGPATH];

	file_name(name, kind, j);
	return BufFileOpenFileSet(&sh->fileset.fs, name, O_RDONLY, false);
}

/* set_stage: announce a stage (the leader) */
static void
set_stage(GpuirParallelShared *sh, int stage)
{
	SpinLockAcquire(&sh->mutex);
	sh->stage = stage;
	SpinLockRelease(&sh->mutex);
	ConditionVariableBroadcast(&sh->cv);
}

/* wait_stage: wait until the leader has announced stage (a worker) */
static void
wait_stage(GpuirParallelShared *sh, int stage)
{
	ConditionVariablePrepareToSleep(&sh->cv);
	for (;;)
	{
		int			now;

		SpinLockAcquire(&sh->mutex);
		now = sh->stage;
		SpinLockRelease(&sh->mutex);
		if (now >= stage)
			break;
		ConditionVariableSleep(&sh->cv, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
}

/* a participant's lists file being written, and its sparse index */
typedef struct ListsWriter
{
	BufFile    *file;
	BufFile    *index;
	uint64		bytes;			/* written so far */
	uint64		indexed;		/* bytes at the last index entry */
	uint32		nlists;
	/* the leader's own: its index entries, kept for cutting the ranges */
	bool		keep;
	struct
	{
		uint64		bytes;		/* the list's position in the file */
		char	   *lexeme;
		uint16		len;
	}		   *entry;
	int			nentries;
	uint64		cap;
} ListsWriter;

/*
 * write_lists: participant j's lists (its builder's export, after
 * GpuirBuilderExportBegin) to its lists file, docID i mapped to map[i] with
 * dl[i]; ends the export.  With w->keep the index entries stay in w.
 */
static void
write_lists(GpuirBuilder *b, GpuirParallelShared *sh, int j, const uint32 *map,
			const uint32 *dl, ListsWriter *w)
{
	const char *lexeme;
	uint16		len;
	GpuirPosting *list;
	uint64		n;
	GpuirPostingDl *out = NULL;
	uint64		out_cap = 0;

	w->file = file_create(sh, 'l', j);
	w->index = file_create(sh, 'x', j);
	while (GpuirBuilderExportNext(b, &lexeme, &len, &list, &n))
	{
		FileList	fl;

		CHECK_FOR_INTERRUPTS();
		memset(&fl, 0, sizeof(fl));	/* no uninitialized padding in the file */
		fl.count = (uint32) n;
		fl.len = len;
		if (w->nlists == 0 || w->bytes - w->indexed >= LIST_INDEX_EVERY)
		{
			FileIndexEntry e;
			off_t		off;
			int			fileno;

			BufFileTell(w->file, &fileno, &off);
			memset(&e, 0, sizeof(e));
			e.offset = (int64) off;
			e.fileno = fileno;
			e.len = len;
			gpuir_buffile_write(w->index, &e, sizeof(e));
			gpuir_buffile_write(w->index, lexeme, len);
			w->indexed = w->bytes;
			if (w->keep)
			{
				w->entry = GpuirGrow(w->entry, sizeof(*w->entry), &w->cap,
									 (uint64) w->nentries + 1, 0);
				w->entry[w->nentries].bytes = w->bytes;
				w->entry[w->nentries].lexeme = pnstrdup(lexeme, len);
				w->entry[w->nentries].len = len;
				w->nentries++;
			}
		}
		out = GpuirGrow(out, sizeof(GpuirPostingDl), &out_cap, n, 0);
		for (uint64 i = 0; i < n; i++)
		{
			out[i].doc = map[list[i].doc];
			out[i].tf = list[i].tf;
			out[i].dl = dl[list[i].doc];
		}
		gpuir_buffile_write(w->file, &fl, sizeof(fl));
		gpuir_buffile_write(w->file, lexeme, len);
		gpuir_buffile_write(w->file, out, sizeof(GpuirPostingDl) * n);
		w->bytes += sizeof(fl) + len + sizeof(GpuirPostingDl) * n;
		w->nlists++;
	}
	GpuirBuilderExportEnd(b);
	if (out)
		pfree(out);
	/* complete: readers may open them */
	BufFileClose(w->file);
	BufFileClose(w->index);
	w->file = w->index = NULL;
}

/* split_key: the first lexeme of range r (r >= 1) */
static void
split_key(const char *splits, int r, const char **lex, uint16 *len)
{
	const char *slot = splits + (Size) (r - 1) * SPLIT_SLOT;

	memcpy(len, slot, sizeof(uint16));
	*lex = slot + sizeof(uint16);
}

/*
 * cut_ranges: the first lexemes of ranges 1 .. nranges - 1, chosen among
 * the leader's index entries so that its lists' bytes split evenly (its
 * share of the table is a sample of the whole), into splits
 */
static void
cut_ranges(const ListsWriter *w, int nranges, char *splits)
{
	int			e = 0;

	for (int r = 1; r < nranges; r++)
	{
		uint64		at = w->bytes * r / nranges;
		char	   *slot = splits + (Size) (r - 1) * SPLIT_SLOT;
		uint16		len;

		while (e + 1 < w->nentries && w->entry[e].bytes < at)
			e++;
		if (w->nentries == 0)
			len = 0;			/* no list: every range but the last is empty */
		else
			len = Min(w->entry[e].len, SPLIT_KEY_MAX);
		memcpy(slot, &len, sizeof(uint16));
		if (len > 0)
			memcpy(slot + sizeof(uint16), w->entry[e].lexeme, len);
	}
}

/* one participant's lists of one range, read from its lists file (a GpuirListSource) */
typedef struct RangeReader
{
	BufFile    *file;
	bool		bounded;		/* hi is the next range's first lexeme; else to the end */
	const char *hi;
	uint16		hilen;
	bool		pending;		/* the range's first list, read while seeking */
	bool		done;
	char	   *lexeme;
	uint64		lexeme_cap;
	uint16		len;
	GpuirPostingDl *list;
	uint64		cap;
	uint64		n;
} RangeReader;

/* range_read: the file's next list into rr; false at its end */
static bool
range_read(RangeReader *rr)
{
	FileList	fl;
	size_t		got = BufFileRead(rr->file, &fl, sizeof(fl));

	if (got == 0)
		return false;
	if (got != sizeof(fl))
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read a gpuir parallel build's lists file: read %zu of %zu bytes",
						got, sizeof(fl))));
	rr->lexeme = GpuirGrow(rr->lexeme, 1, &rr->lexeme_cap, (uint64) fl.len + 1, 0);
	gpuir_buffile_read(rr->file, rr->lexeme, fl.len);
	rr->len = fl.len;
	rr->list = GpuirGrow(rr->list, sizeof(GpuirPostingDl), &rr->cap, fl.count, 0);
	gpuir_buffile_read(rr->file, rr->list, sizeof(GpuirPostingDl) * (Size) fl.count);
	rr->n = fl.count;
	return true;
}

/* range_next: GpuirListSource.next of a RangeReader */
static bool
range_next(void *arg, const char **lexeme, uint16 *len, GpuirPostingDl **list, uint64 *n)
{
	RangeReader *rr = arg;

	if (rr->done)
		return false;
	if (rr->pending)
		rr->pending = false;
	else if (!range_read(rr))
	{
		rr->done = true;
		return false;
	}
	if (rr->bounded && GpuirLexemeCmp(rr->lexeme, rr->len, rr->hi, rr->hilen) >= 0)
	{
		rr->done = true;
		return false;
	}
	*lexeme = rr->lexeme;
	*len = rr->len;
	*list = rr->list;
	*n = rr->n;
	return true;
}

/*
 * range_open: participant j's lists of range r: its lists file, from the
 * last index entry whose lexeme is below the range's first lexeme on,
 * skipping the lists before the range
 */
static void
range_open(GpuirParallelShared *sh, const char *splits, int j, int r, RangeReader *rr)
{
	memset(rr, 0, sizeof(RangeReader));
	rr->file = file_open(sh, 'l', j);
	if (r + 1 < sh->nranges)
	{
		rr->bounded = true;
		split_key(splits, r + 1, &rr->hi, &rr->hilen);
	}
	if (r > 0)
	{
		const char *lo;
		uint16		lolen;
		BufFile    *index = file_open(sh, 'x', j);
		FileIndexEntry e;
		int64		seek_off = 0;
		int			seek_fileno = 0;
		char	   *lex = palloc(PG_UINT16_MAX + 1);	/* an entry's lexeme */

		split_key(splits, r, &lo, &lolen);
		/* entries are in dictionary order: the last below lo */
		while (BufFileRead(index, &e, sizeof(e)) == sizeof(e))
		{
			CHECK_FOR_INTERRUPTS();
			gpuir_buffile_read(index, lex, e.len);
			if (GpuirLexemeCmp(lex, e.len, lo, lolen) >= 0)
				break;
			seek_off = e.offset;
			seek_fileno = e.fileno;
		}
		pfree(lex);
		BufFileClose(index);
		if (BufFileSeek(rr->file, seek_fileno, (off_t) seek_off, SEEK_SET) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not seek in a gpuir parallel build's lists file")));
		for (;;)
		{
			if (!range_read(rr))
			{
				rr->done = true;
				break;
			}
			if (GpuirLexemeCmp(rr->lexeme, rr->len, lo, lolen) >= 0)
			{
				rr->pending = true;
				break;
			}
		}
	}
}

/*
 * encode_range: merge and encode range r of every participant's lists into
 * ls[0 .. sh->pieces.n), a piece's postings in each (stage RANGES announced)
 */
static void
encode_range(GpuirParallelShared *sh, const char *splits, int r, Relation index, GpuirLists **ls)
{
	int			n = sh->nranges;
	RangeReader *rr = palloc(sizeof(RangeReader) * n);
	GpuirListSource *src = palloc(sizeof(GpuirListSource) * n);

	for (int j = 0; j < n; j++)
	{
		range_open(sh, splits, j, r, &rr[j]);
		src[j].next = range_next;
		src[j].arg = &rr[j];
	}
	GpuirListsMerge(ls, &sh->pieces, index, src, n, &sh->lists_done);
	for (int j = 0; j < n; j++)
	{
		BufFileClose(rr[j].file);
		if (rr[j].lexeme)
			pfree(rr[j].lexeme);
		if (rr[j].list)
			pfree(rr[j].list);
	}
	pfree(rr);
	pfree(src);
}

/* gpuir_parallel_build_main: a parallel worker of CREATE INDEX */
PGDLLEXPORT void gpuir_parallel_build_main(dsm_segment *seg, shm_toc *toc);

void
gpuir_parallel_build_main(dsm_segment *seg, shm_toc *toc)
{
	GpuirParallelShared *shared = shm_toc_lookup(toc, PARALLEL_KEY_GPUIR_SHARED, false);
	char	   *queues = shm_toc_lookup(toc, PARALLEL_KEY_GPUIR_QUEUES, false);
	const char *splits = shm_toc_lookup(toc, PARALLEL_KEY_GPUIR_SPLITS, false);
	shm_mq	   *mq = (shm_mq *) (queues + (Size) ParallelWorkerNumber * GPUIR_BUILD_QUEUE_SIZE);
	int			me = ParallelWorkerNumber + 1;	/* participant and range: the leader is 0 */
	LOCKMODE	heap_lock = shared->isconcurrent ? ShareUpdateExclusiveLock : ShareLock;
	LOCKMODE	index_lock = shared->isconcurrent ? RowExclusiveLock : AccessExclusiveLock;
	shm_mq_handle *to_leader;
	Relation	heap;
	Relation	index;
	IndexInfo  *indexInfo;
	GpuirBuildState bs;
	TableScanDesc scan;
	double		reltuples;
	ItemPointerData *tids;
	uint32	   *dls;
	float4	   *priors;
	uint32	   *map;
	uint32		ndocs;
	MsgHead		head;
	StringInfoData msg;
	uint32		kind = MSG_WRITTEN;
	ListsWriter w;
	BufFile    *f;
	BufFile    *range_files[GPUIR_LISTS_NSTREAMS];
	GpuirLists *ls[GPUIR_MAX_BUILD_PIECES];
	MsgEncoded	enc;

	shm_mq_set_sender(mq, MyProc);
	to_leader = shm_mq_attach(mq, seg, NULL);
	SharedFileSetAttach(&shared->fileset, seg);
	memset(&bs, 0, sizeof(bs));
	bs.is_worker = true;
	bs.shared_scanned = &shared->rows_scanned;
	bs.builder = GpuirBuilderCreate();
	GpuirBuilderSetMemoryLimit(bs.builder, shared->worker_mem, true);
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
	SpinLockAcquire(&shared->mutex);
	shared->reltuples += reltuples;
	SpinLockRelease(&shared->mutex);

	/* 1. the documents to the leader */
	ndocs = GpuirBuilderExportBegin(bs.builder, index, &tids, &dls, &priors);
	head.kind = MSG_HEAD;
	head.ndocs = ndocs;
	head.nterms = GpuirBuilderNumTerms(bs.builder);
	head.nruns = (uint32) GpuirBuilderRuns(bs.builder);
	msg_send(to_leader, &head, sizeof(head));
	initStringInfo(&msg);
	for (uint32 d = 0; d < ndocs; d += MSG_DOCS_MAX)
	{
		MsgDocs		md = {MSG_DOCS, Min(MSG_DOCS_MAX, ndocs - d), priors != NULL};

		CHECK_FOR_INTERRUPTS();
		resetStringInfo(&msg);
		appendBinaryStringInfo(&msg, (char *) &md, sizeof(md));
		appendBinaryStringInfo(&msg, (char *) (tids + d), sizeof(ItemPointerData) * md.count);
		appendBinaryStringInfo(&msg, (char *) (dls + d), sizeof(uint32) * md.count);
		if (priors != NULL)
			appendBinaryStringInfo(&msg, (char *) (priors + d), sizeof(float4) * md.count);
		msg_send(to_leader, msg.data, msg.len);
	}
	pfree(msg.data);
	pfree(tids);
	if (priors != NULL)
		pfree(priors);

	/* 2. its docID map from the leader; its lists to its file */
	wait_stage(shared, STAGE_MAPS);
	map = palloc_extended(sizeof(uint32) * Max(ndocs, 1), MCXT_ALLOC_HUGE);
	f = file_open(shared, 'm', me);
	gpuir_buffile_read(f, map, sizeof(uint32) * (Size) ndocs);
	BufFileClose(f);
	memset(&w, 0, sizeof(w));
	write_lists(bs.builder, shared, me, map, dls, &w);
	pfree(map);
	pfree(dls);
	GpuirBuilderFree(bs.builder);
	msg_send(to_leader, &kind, sizeof(kind));

	/* 3. its range, encoded */
	wait_stage(shared, STAGE_RANGES);
	for (int q = 0; q < shared->pieces.n; q++)
	{
		for (int k = 0; k < GPUIR_LISTS_NSTREAMS; k++)
			range_files[k] = file_create(shared, RANGE_FILE_KIND(k), RANGE_FILE_ID(shared, me, q));
		ls[q] = GpuirListsBegin(shared->k1, shared->b, shared->avgdl, range_files);
	}
	encode_range(shared, splits, me, index, ls);
	memset(&enc, 0, sizeof(enc));
	enc.kind = MSG_ENCODED;
	for (int q = 0; q < shared->pieces.n; q++)
	{
		GpuirListsSave(ls[q]);
		enc.info[q] = *GpuirListsGetInfo(ls[q]);
	}
	msg_send(to_leader, &enc, sizeof(enc));

	index_close(index, index_lock);
	table_close(heap, heap_lock);
}

/* msg_recv: the next message of a worker's queue (valid until the next) */
static const char *
msg_recv(shm_mq_handle *mq, Size *nbytes)
{
	void	   *data;

	if (shm_mq_receive(mq, nbytes, &data, false) != SHM_MQ_SUCCESS)
	{
		/* the worker is gone: its own error first, if it sent one */
		CHECK_FOR_INTERRUPTS();
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("gpuir parallel build: a parallel worker exited before its part was done")));
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

/* a worker's documents as the leader reads them: a GpuirDocSource */
typedef struct QueueDocs
{
	shm_mq_handle *mq;
	uint32		left;			/* documents still to come */
	ItemPointerData *tids;		/* the current chunk, aligned copies */
	uint32	   *dls;
	float4	   *priors;
	BufFile    *map;			/* its docID map, for the worker */
} QueueDocs;

/* queue_head: a worker's MSG_HEAD */
static MsgHead
queue_head(shm_mq_handle *mq)
{
	Size		nbytes;
	const char *p = msg_recv(mq, &nbytes);
	MsgHead		head;

	if (nbytes != sizeof(head))
		bad_message();
	memcpy(&head, p, sizeof(head));
	if (head.kind != MSG_HEAD)
		bad_message();
	return head;
}

/* queue_docs_next: GpuirDocSource.next of a QueueDocs (a MSG_DOCS) */
static uint32
queue_docs_next(void *arg, const ItemPointerData **tids, const uint32 **dls,
				const float4 **priors)
{
	QueueDocs  *q = arg;
	Size		nbytes;
	const char *p;
	MsgDocs		md;

	if (q->left == 0)
		return 0;
	p = msg_recv(q->mq, &nbytes);
	if (nbytes < sizeof(md))
		bad_message();
	memcpy(&md, p, sizeof(md));
	if (md.kind != MSG_DOCS || md.count == 0 || md.count > Min(q->left, MSG_DOCS_MAX) ||
		md.priors > 1 ||
		nbytes != sizeof(md) + (sizeof(ItemPointerData) + sizeof(uint32) +
								(md.priors ? sizeof(float4) : 0)) * (Size) md.count)
		bad_message();
	p += sizeof(md);
	memcpy(q->tids, p, sizeof(ItemPointerData) * md.count);
	p += sizeof(ItemPointerData) * md.count;
	memcpy(q->dls, p, sizeof(uint32) * md.count);
	p += sizeof(uint32) * md.count;
	if (md.priors)
		memcpy(q->priors, p, sizeof(float4) * md.count);
	q->left -= md.count;
	*tids = q->tids;
	*dls = q->dls;
	*priors = md.priors ? q->priors : NULL;
	return md.count;
}

/* queue_docs_map: GpuirDocSource.map of a QueueDocs: to the worker's map file */
static void
queue_docs_map(void *arg, const uint32 *docids, uint32 n)
{
	QueueDocs  *q = arg;

	gpuir_buffile_write(q->map, docids, sizeof(uint32) * n);
}

/* the leader's own documents (its builder's export), one chunk, and its map */
typedef struct OwnDocs
{
	const ItemPointerData *tids;
	const uint32 *dls;
	const float4 *priors;		/* NULL: all 0 */
	uint32		ndocs;
	bool		given;
	uint32	   *map;
	uint32		nmap;
} OwnDocs;

static uint32
own_docs_next(void *arg, const ItemPointerData **tids, const uint32 **dls,
			  const float4 **priors)
{
	OwnDocs    *o = arg;

	if (o->given)
		return 0;
	o->given = true;
	*tids = o->tids;
	*dls = o->dls;
	*priors = o->priors;
	return o->ndocs;
}

static void
own_docs_map(void *arg, const uint32 *docids, uint32 n)
{
	OwnDocs    *o = arg;

	memcpy(o->map + o->nmap, docids, sizeof(uint32) * n);
	o->nmap += n;
}

/* msg_expect: the next message of a worker's queue, of kind and nbytes */
static const char *
msg_expect(shm_mq_handle *mq, uint32 kind, Size nbytes)
{
	Size		got;
	const char *p = msg_recv(mq, &got);
	uint32		k;

	if (got != nbytes)
		bad_message();
	memcpy(&k, p, sizeof(k));
	if (k != kind)
		bad_message();
	return p;
}

/* report_lists: the lists merged so far, as CREATE INDEX progress */
static void
report_lists(GpuirParallelShared *sh)
{
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE,
								 (int64) pg_atomic_read_u64(&sh->lists_done));
}

/*
 * build_parallel: a parallel build with nworkers requested, writing the
 * segments (bs->nsegs, bs->segs, bs->total_dl); the leader's own part of the
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
	char	   *splits;
	shm_mq_handle **mqs;
	TableScanDesc scan;
	double		reltuples;
	GpuirDocSource *src;
	QueueDocs  *qd;
	OwnDocs		own;
	ItemPointerData *tids;
	uint32	   *dls;
	float4	   *priors;
	uint64		ndocs;
	uint64		lists_total = 0;
	int			nlaunched;
	int			nsrc;
	Size		share;
	ListsWriter w;
	GpuirLists *ls[GPUIR_MAX_BUILD_PIECES];
	GpuirPieces *pieces;
	instr_time	t0,
				t_scan,
				t_docs,
				t_lists,
				t_ranges,
				t_end;

	INSTR_TIME_SET_CURRENT(t0);
	EnterParallelMode();
	pcxt = CreateParallelContext("gpuir", "gpuir_parallel_build_main", nworkers);
	snapshot = indexInfo->ii_Concurrent ? RegisterSnapshot(GetTransactionSnapshot()) : SnapshotAny;
	est_shared = BUFFERALIGN(sizeof(GpuirParallelShared)) + table_parallelscan_estimate(heap, snapshot);
	shm_toc_estimate_chunk(&pcxt->estimator, est_shared);
	shm_toc_estimate_chunk(&pcxt->estimator, (Size) GPUIR_BUILD_QUEUE_SIZE * nworkers);
	shm_toc_estimate_chunk(&pcxt->estimator, (Size) SPLIT_SLOT * nworkers);
	shm_toc_estimate_keys(&pcxt->estimator, 3);
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
	shared->k1 = meta->k1;
	shared->b = meta->b;
	shared->worker_mem = share;
	SharedFileSetInit(&shared->fileset, pcxt->seg);
	ConditionVariableInit(&shared->cv);
	SpinLockInit(&shared->mutex);
	shared->stage = STAGE_SCAN;
	shared->nranges = 0;
	shared->avgdl = 0;
	shared->reltuples = 0;
	pg_atomic_init_u64(&shared->rows_scanned, 0);
	pg_atomic_init_u64(&shared->lists_done, 0);
	table_parallelscan_initialize(heap, ParallelTableScanFromGpuirShared(shared), snapshot);
	shm_toc_insert(pcxt->toc, PARALLEL_KEY_GPUIR_SHARED, shared);
	queues = shm_toc_allocate(pcxt->toc, (Size) GPUIR_BUILD_QUEUE_SIZE * nworkers);
	shm_toc_insert(pcxt->toc, PARALLEL_KEY_GPUIR_QUEUES, queues);
	splits = shm_toc_allocate(pcxt->toc, (Size) SPLIT_SLOT * nworkers);
	shm_toc_insert(pcxt->toc, PARALLEL_KEY_GPUIR_SPLITS, splits);
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
	nsrc = nlaunched + 1;
	shared->nranges = nsrc;		/* read by the workers after STAGE_RANGES */
	for (int i = 0; i < nlaunched; i++)
		shm_mq_set_handle(mqs[i], pcxt->worker[i].bgwhandle);
	bs->shared_scanned = &shared->rows_scanned;
	ereport(DEBUG1,
			(errmsg_internal("gpuir: building index \"%s\" with parallel workers",
							 RelationGetRelationName(index)),
			 errdetail_internal("%d of %d workers launched.", nlaunched, nworkers)));

	/* the leader's part of the scan, into its own builder */
	GpuirBuilderSetMemoryLimit(bs->builder, share, true);
	scan = table_beginscan_parallel(heap, ParallelTableScanFromGpuirShared(shared));
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   gpuir_build_callback, bs, scan);
	INSTR_TIME_SET_CURRENT(t_scan);

	/* 1. every participant's documents, merged; the workers' docID maps */
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_SORT);
	src = palloc0(sizeof(GpuirDocSource) * nsrc);
	qd = palloc0(sizeof(QueueDocs) * nsrc);
	memset(&own, 0, sizeof(own));
	own.ndocs = GpuirBuilderExportBegin(bs->builder, index, &tids, &dls, &priors);
	own.tids = tids;
	own.dls = dls;
	own.priors = priors;
	own.map = palloc_extended(sizeof(uint32) * Max(own.ndocs, 1), MCXT_ALLOC_HUGE);
	src[0].ndocs = own.ndocs;
	src[0].next = own_docs_next;
	src[0].arg = &own;
	src[0].map = own_docs_map;
	lists_total = GpuirBuilderNumTerms(bs->builder);
	for (int i = 1; i < nsrc; i++)
	{
		MsgHead		head = queue_head(mqs[i - 1]);

		bs->worker_runs += (int) head.nruns;
		lists_total += head.nterms;
		qd[i].mq = mqs[i - 1];
		qd[i].left = head.ndocs;
		qd[i].tids = palloc(sizeof(ItemPointerData) * MSG_DOCS_MAX);
		qd[i].dls = palloc(sizeof(uint32) * MSG_DOCS_MAX);
		qd[i].priors = palloc(sizeof(float4) * MSG_DOCS_MAX);
		qd[i].map = file_create(shared, 'm', i);
		src[i].ndocs = head.ndocs;
		src[i].next = queue_docs_next;
		src[i].arg = &qd[i];
		src[i].map = queue_docs_map;
	}
	/* the segments: ranges of at most max_segment_docs documents */
	ndocs = 0;
	for (int i = 0; i < nsrc; i++)
		ndocs += src[i].ndocs;
	pieces = &shared->pieces;	/* read by the workers after STAGE_MAPS */
	GpuirPiecesInit(pieces, ndocs, bs->max_docs, GPUIR_MAX_BUILD_PIECES, false);
	for (int q = 0; q < pieces->n; q++)
		ls[q] = GpuirListsBegin(meta->k1, meta->b, 0, NULL);
	ndocs = GpuirListsMergeDocs(ls, pieces, index, src, nsrc, meta->has_prior, &bs->total_dl);
	shared->avgdl = GpuirListsAvgdl(ls[0]);
	for (int i = 1; i < nsrc; i++)
	{
		BufFileClose(qd[i].map);
		pfree(qd[i].tids);
		pfree(qd[i].dls);
		pfree(qd[i].priors);
	}
	pfree(tids);
	if (priors != NULL)
		pfree(priors);
	set_stage(shared, STAGE_MAPS);
	INSTR_TIME_SET_CURRENT(t_docs);

	/* 2. the leader's lists to its file; the ranges cut once every file is written */
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_ENCODE);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL, (int64) lists_total);
	memset(&w, 0, sizeof(w));
	w.keep = true;
	write_lists(bs->builder, shared, 0, own.map, dls, &w);
	pfree(own.map);
	pfree(dls);
	cut_ranges(&w, nsrc, splits);
	for (int i = 0; i < nlaunched; i++)
		(void) msg_expect(mqs[i], MSG_WRITTEN, sizeof(uint32));
	set_stage(shared, STAGE_RANGES);
	INSTR_TIME_SET_CURRENT(t_lists);

	/* 3. range 0 here, then the workers' ranges after it */
	encode_range(shared, splits, 0, index, ls);
	report_lists(shared);
	for (int i = 0; i < nlaunched; i++)
	{
		MsgEncoded	enc;
		BufFile    *in[GPUIR_LISTS_NSTREAMS];

		memcpy(&enc, msg_expect(mqs[i], MSG_ENCODED, sizeof(MsgEncoded)), sizeof(enc));
		for (int q = 0; q < pieces->n; q++)
		{
			for (int k = 0; k < GPUIR_LISTS_NSTREAMS; k++)
				in[k] = file_open(shared, RANGE_FILE_KIND(k), RANGE_FILE_ID(shared, i + 1, q));
			GpuirListsAppend(ls[q], in, &enc.info[q]);
			for (int k = 0; k < GPUIR_LISTS_NSTREAMS; k++)
				BufFileClose(in[k]);
		}
		report_lists(shared);
	}
	INSTR_TIME_SET_CURRENT(t_ranges);

	/* 4. the pages */
	bs->nsegs = ndocs > 0 ? pieces->n : 0;
	for (int q = 0; q < pieces->n; q++)
	{
		if (ndocs > 0)
			GpuirListsWrite(ls[q], index, 1 + q, true, &bs->segs[q]);
		else
			GpuirListsDiscard(ls[q]);
	}
	INSTR_TIME_SET_CURRENT(t_end);

	WaitForParallelWorkersToFinish(pcxt);
	reltuples += shared->reltuples;
	bs->shared_scanned = NULL;	/* with the shared memory */
	if (IsMVCCSnapshot(snapshot))
		UnregisterSnapshot(snapshot);
	DestroyParallelContext(pcxt);
	ExitParallelMode();

	INSTR_TIME_SUBTRACT(t_end, t_ranges);
	INSTR_TIME_SUBTRACT(t_ranges, t_lists);
	INSTR_TIME_SUBTRACT(t_lists, t_docs);
	INSTR_TIME_SUBTRACT(t_docs, t_scan);
	INSTR_TIME_SUBTRACT(t_scan, t0);
	ereport(DEBUG2,
			(errmsg_internal("gpuir: parallel build of \"%s\": leader's scan %.3f s, documents merged %.3f s, "
							 "lists written %.3f s, ranges encoded and appended %.3f s, pages written %.3f s",
							 RelationGetRelationName(index), INSTR_TIME_GET_DOUBLE(t_scan),
							 INSTR_TIME_GET_DOUBLE(t_docs), INSTR_TIME_GET_DOUBLE(t_lists),
							 INSTR_TIME_GET_DOUBLE(t_ranges), INSTR_TIME_GET_DOUBLE(t_end))));
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
 * configuration and write its segments (src/README: one, or ranges of at
 * most max_segment_docs documents): serially with one
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
	uint64		ndocs = 0;
	Size		budget = (Size) maintenance_work_mem * 1024;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));

	index_options(index, &meta);
	GpuirWriteEmptyIndex(index, &meta);
	GpuirReadMeta(index, &meta);
	record_config_dependency(index, meta.cfg_id);

	memset(&bs, 0, sizeof(bs));
	bs.builder = GpuirBuilderCreate();
	GpuirBuilderReportProgress(bs.builder);
	/* maintenance_work_mem bounds the postings held (a parallel build shares it) */
	GpuirBuilderSetMemoryLimit(bs.builder, budget, true);
	bs.cfg_id = meta.cfg_id;
	memcpy(bs.weights, meta.weights, sizeof(bs.weights));
	bs.natts = IndexRelationGetNumberOfKeyAttributes(index);
	bs.max_docs = GpuirMaxSegmentDocs(index);
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
	if (reltuples < 0)
	{
		reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
										   gpuir_build_callback, &bs, NULL);
		bs.nsegs = GpuirBuilderWrite(bs.builder, index, 1, meta.k1, meta.b, NULL,
									 bs.max_docs, GPUIR_MAX_BUILD_PIECES, false, bs.segs);
		bs.total_dl = GpuirBuilderTotalDl(bs.builder);
	}
	if (GpuirBuilderRuns(bs.builder) + bs.worker_runs > 0)
		ereport(DEBUG1,
				(errmsg_internal("gpuir: index \"%s\" built from %d sorted runs of postings in temporary files",
								 RelationGetRelationName(index),
								 GpuirBuilderRuns(bs.builder) + bs.worker_runs),
				 errdetail_internal("maintenance_work_mem is %d kB.", maintenance_work_mem)));
	if (bs.nsegs > 0)
		ndocs = GpuirStoreBuiltSegments(index, bs.segs, bs.nsegs, bs.total_dl);
	GpuirBuilderFree(bs.builder);
	MemoryContextDelete(bs.tmpcxt);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	/* the documents indexed: every row with an indexed lexeme */
	result->index_tuples = (double) ndocs;
	return result;
}

/* gpuirbuildempty: the metapage and free space map of an empty index in the init fork */
void
gpuirbuildempty(Relation index)
{
	Page		page = (Page) palloc(BLCKSZ);
	GpuirMetaPageData opts;

	index_options(index, &opts);
	for (BlockNumber blkno = GPUIR_METAPAGE_BLKNO; blkno < GPUIR_FIRST_DATA_BLKNO; blkno++)
	{
		if (blkno == GPUIR_METAPAGE_BLKNO)
			GpuirFillMetaPage(page, &opts);
		else
			GpuirFillFreeMapPage(page);
		PageSetChecksumInplace(page, blkno);
		smgrextend(RelationGetSmgr(index), INIT_FORKNUM, blkno, (char *) page, true);
		log_newpage(&GpuirSmgrFile(index), INIT_FORKNUM, blkno, page, true);
	}
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
	pfree(page);
}
