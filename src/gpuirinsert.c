/*-------------------------------------------------------------------------
 *
 * gpuirinsert.c
 *	  aminsert for gpuir: tokenize the new row, append it to the insert
 *	  buffer (gpuirbuffer.c) and merge the buffer into a segment
 *	  (gpuirmerge.c) once it holds more than gpuir.insert_buffer_limit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"
#include "utils/rel.h"

#include "gpuir.h"

/*
 * gpuirinsert: tokenize the new row and append it to this backend's insert
 * lane (GpuirBufferAppend); merge the buffer into a segment once it holds
 * more than gpuir.insert_buffer_limit (left to a later insert while another
 * merge or a VACUUM runs).  An index over several columns indexes the row as
 * one document (GpuirTokenizeRow, with the weights the index was built
 * with); its INCLUDE column, if any, is the document's prior
 * (GpuirRowPrior).  NULL (every column NULL) and token-less documents are
 * not indexed.
 */
bool
gpuirinsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
			Relation heapRel, IndexUniqueCheck checkUnique,
			bool indexUnchanged, IndexInfo *indexInfo)
{
	MemoryContext cxt;
	MemoryContext old;
	GpuirMetaPageData meta;
	GpuirDocTerms doc;

	cxt = AllocSetContextCreate(CurrentMemoryContext, "gpuir insert",
								ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);

	GpuirReadMeta(index, &meta);
	if (GpuirTokenizeRow(meta.cfg_id, meta.weights, IndexRelationGetNumberOfKeyAttributes(index),
						 values, isnull, &doc) &&
		doc.nterms > 0)
	{
		doc.prior = GpuirRowPrior(index, values, isnull);
		GpuirBufferAppend(index, ht_ctid, &doc);
		/*
		 * meta may predate this backend's lane (created just now): the lane
		 * is counted from the next insert on.  A merge running elsewhere (or
		 * VACUUM) holds the merge lock: go on.
		 */
		if (GpuirBufferedBytes(index, &meta) > (uint64) gpuir_insert_buffer_limit * 1024)
			GpuirMerge(index, GPUIR_POLICY_INSERT, false);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return false;
}
