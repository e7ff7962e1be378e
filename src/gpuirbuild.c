/*-------------------------------------------------------------------------
 *
 * gpuirbuild.c
 *	  CREATE INDEX for gpuir (ambuild) and the init fork of unlogged
 *	  indexes (ambuildempty).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "catalog/pg_ts_config.h"
#include "commands/progress.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/smgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

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

typedef struct GpuirBuildState
{
	GpuirBuilder *builder;
	Oid			cfg_id;
	MemoryContext tmpcxt;		/* reset after every tuple */
	double		indtuples;
	int64		scanned;		/* rows seen, for progress */
} GpuirBuildState;

static void
gpuir_build_callback(Relation index, ItemPointer tid, Datum *values,
					 bool *isnull, bool tupleIsAlive, void *state)
{
	GpuirBuildState *bs = state;
	MemoryContext old;
	GpuirDocTerms doc;
	text	   *t;

	if ((++bs->scanned % 1024) == 0)
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, bs->scanned);
	if (isnull[0])
		return;					/* NULL documents are not indexed */
	old = MemoryContextSwitchTo(bs->tmpcxt);
	t = DatumGetTextPP(values[0]);
	GpuirTokenize(bs->cfg_id, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t), &doc);
	GpuirBuilderAddTerms(bs->builder, tid, &doc);
	if (doc.nterms > 0)
		bs->indtuples += 1;
	MemoryContextSwitchTo(old);
	MemoryContextReset(bs->tmpcxt);
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
 * configuration, build one segment in memory and write it (src/README).
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

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data", RelationGetRelationName(index));

	init_metapage(index, MAIN_FORKNUM);
	GpuirReadMeta(index, &meta);
	record_config_dependency(index, meta.cfg_id);

	bs.builder = GpuirBuilderCreate();
	GpuirBuilderReportProgress(bs.builder);
	bs.cfg_id = meta.cfg_id;
	bs.indtuples = 0;
	bs.scanned = 0;
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_SCAN);
	pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_TOTAL,
								 (int64) Max(heap->rd_rel->reltuples, 0));
	bs.tmpcxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir build tuple",
									  ALLOCSET_DEFAULT_SIZES);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   gpuir_build_callback, &bs, NULL);

	have = GpuirBuilderWrite(bs.builder, index, 1, meta.k1, meta.b, NULL, &seg);
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
