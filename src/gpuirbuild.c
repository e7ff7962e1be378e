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
#include "miscadmin.h"
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

typedef struct GpuirBuildState
{
	GpuirBuilder *builder;
	Oid			cfg_id;
	MemoryContext tmpcxt;		/* reset after every tuple */
	double		indtuples;
} GpuirBuildState;

static void
gpuir_build_callback(Relation index, ItemPointer tid, Datum *values,
					 bool *isnull, bool tupleIsAlive, void *state)
{
	GpuirBuildState *bs = state;
	MemoryContext old;
	GpuirDocTerms doc;
	text	   *t;

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

	GpuirInitMetapage(index, MAIN_FORKNUM);
	GpuirReadMeta(index, &meta);
	record_config_dependency(index, meta.cfg_id);

	bs.builder = GpuirBuilderCreate();
	bs.cfg_id = meta.cfg_id;
	bs.indtuples = 0;
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

	GpuirFillMetapage(index, page);
	PageSetChecksumInplace(page, GPUIR_METAPAGE_BLKNO);
	smgrwrite(RelationGetSmgr(index), INIT_FORKNUM, GPUIR_METAPAGE_BLKNO,
			  (char *) page, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
				GPUIR_METAPAGE_BLKNO, page, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}
