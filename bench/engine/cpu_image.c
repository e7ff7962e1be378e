/*-------------------------------------------------------------------------
 *
 * cpu_image.c
 *	  engine_bench: the production CPU engine on an index image.  The index
 *	  is built by the production segment writer, as a parallel CREATE
 *	  INDEX's leader writes one (src/gpuirbuild.c: GpuirWriteEmptyIndex,
 *	  GpuirListsMergeDocs, GpuirListsMerge, GpuirListsWrite,
 *	  GpuirStoreBuiltSegments), into the buffers of test/fuzz/pgshim.c
 *	  compiled with -DPGSHIM_ENGINE (pages in this process's memory, no WAL,
 *	  every row visible); queries run through GpuirSearch, the entry point
 *	  of gpuir_search (src/gpuirquery.c, src/gpuirengine.c: AND, OR and
 *	  Block-Max WAND with the session caches at their defaults).  Interface:
 *	  cpu_image.h.
 *
 *	  This is the one file of engine_bench compiled against PostgreSQL's
 *	  server headers; bench/engine.mk links it, the shim and the src/ files
 *	  into one object whose only global symbols are cpu_image_build and
 *	  cpu_image_search, so that they do not meet engine_bench's own copies
 *	  of src/gpuirlist.c and src/gpuircodec.c.
 *
 *	  What differs from a server: the buffer manager (a page is a pointer,
 *	  no buffer mapping lookup, pin or content lock) and the table (a heap
 *	  fetch is a bounds check), both cheaper than PostgreSQL's; the query
 *	  text is split at spaces instead of parsed (the logs are tokenized).
 *	  The engine's own work is the server's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <setjmp.h>

#include "utils/memutils.h"
#include "utils/rel.h"

#include "gpuir.h"
#include "pgshim.h"

#include "cpu_image.h"

#undef snprintf

/* heap TIDs: document d is the row (d / TIDS_PER_BLOCK, d % TIDS_PER_BLOCK + 1) */
#define TIDS_PER_BLOCK	200		/* <= MaxHeapTuplesPerPage */
#define DOC_CHUNK		65536	/* documents a doc source call gives */

static uint32 image_ndocs;

static inline void
doc_tid(uint32 d, ItemPointer tid)
{
	ItemPointerSet(tid, d / TIDS_PER_BLOCK, (OffsetNumber) (d % TIDS_PER_BLOCK + 1));
}

static inline uint32
tid_doc(const ItemPointerData *tid)
{
	return ItemPointerGetBlockNumberNoCheck(tid) * TIDS_PER_BLOCK +
		ItemPointerGetOffsetNumberNoCheck(tid) - 1;
}

/* the documents, in TID (= docID) order, for GpuirListsMergeDocs */
typedef struct DocFeed
{
	uint32		ndocs;
	const uint32 *doclen;
	uint32		next;
	ItemPointerData *tids;
	uint32		mapped;			/* docIDs the writer gave back so far */
	bool		renumbered;		/* one of them was not the document's own */
} DocFeed;

static uint32
docs_next(void *arg, const ItemPointerData **tids, const uint32 **dls, const float4 **priors)
{
	DocFeed    *f = arg;
	uint32		n = Min((uint32) DOC_CHUNK, f->ndocs - f->next);

	for (uint32 i = 0; i < n; i++)
		doc_tid(f->next + i, &f->tids[i]);
	*tids = f->tids;
	*dls = f->doclen + f->next;
	*priors = NULL;
	f->next += n;
	return n;
}

static void
docs_map(void *arg, const uint32 *docids, uint32 n)
{
	DocFeed    *f = arg;

	for (uint32 i = 0; i < n; i++)
		if (docids[i] != f->mapped + i)
			f->renumbered = true;
	f->mapped += n;
}

/* the lists, for GpuirListsMerge: each posting with its document's length */
typedef struct ListFeed
{
	CpuImageNext next;
	void	   *arg;
	const uint32 *doclen;
	GpuirPostingDl *buf;
	uint64		cap;
} ListFeed;

static bool
lists_next(void *arg, const char **lexeme, uint16 *len, GpuirPostingDl **list, uint64 *n)
{
	ListFeed   *f = arg;
	CpuImageList l;

	if (!f->next(f->arg, &l))
		return false;
	if (l.n > f->cap)
	{
		if (f->buf)
			pfree(f->buf);
		f->cap = Max(l.n, 2 * f->cap);
		f->buf = palloc_extended(sizeof(GpuirPostingDl) * f->cap, MCXT_ALLOC_HUGE);
	}
	for (uint64 i = 0; i < l.n; i++)
	{
		f->buf[i].doc = l.doc[i];
		f->buf[i].tf = l.tf[i];
		f->buf[i].dl = f->doclen[l.doc[i]];
	}
	*lexeme = l.lexeme;
	*len = l.len;
	*list = f->buf;
	*n = l.n;
	return true;
}

int
cpu_image_build(uint32_t ndocs, const uint32_t *doclen, float k1, float b,
				uint32_t max_segment_docs, CpuImageNext next, void *arg, CpuImageInfo *info,
				char *err, size_t errlen)
{
	sigjmp_buf	jb;
	GpuirMetaPageData opts;
	GpuirMetaPageData meta;
	GpuirPieces pieces;
	GpuirLists *ls[GPUIR_MAX_BUILD_PIECES];
	GpuirSegmentData segs[GPUIR_MAX_BUILD_PIECES];
	DocFeed		docs;
	ListFeed	lists;
	GpuirDocSource dsrc;
	GpuirListSource lsrc;
	uint64		total_dl = 0;

	shim_begin(NULL, 0, ndocs / TIDS_PER_BLOCK + 1);
	memset(&docs, 0, sizeof(docs));
	memset(&lists, 0, sizeof(lists));
	PG_exception_stack = &jb;
	if (sigsetjmp(jb, 0) != 0)
	{
		PG_exception_stack = NULL;
		snprintf(err, errlen, "%s (at %s)", shim_error_msg, shim_error_where);
		return -1;
	}

	/* the metapage: no text search configuration is read (the shim's catalogs say yes) */
	memset(&opts, 0, sizeof(opts));
	opts.cfg_id = 1;
	opts.k1 = k1;
	opts.b = b;
	GpuirIndexWeights(shim_index, opts.weights);
	GpuirWriteEmptyIndex(shim_index, &opts);

	/* the segments: the documents, then the lists, then the pages */
	GpuirPiecesInit(&pieces, ndocs, max_segment_docs, GPUIR_MAX_BUILD_PIECES, false);
	for (int q = 0; q < pieces.n; q++)
		ls[q] = GpuirListsBegin(k1, b, 0, NULL);
	docs.ndocs = ndocs;
	docs.doclen = doclen;
	docs.tids = palloc(sizeof(ItemPointerData) * DOC_CHUNK);
	dsrc.ndocs = ndocs;
	dsrc.next = docs_next;
	dsrc.map = docs_map;
	dsrc.arg = &docs;
	if (GpuirListsMergeDocs(ls, &pieces, shim_index, &dsrc, 1, false, &total_dl) != ndocs ||
		docs.mapped != ndocs || docs.renumbered)
		elog(ERROR, "the segment writer did not number the documents in TID order");
	lists.next = next;
	lists.arg = arg;
	lists.doclen = doclen;
	lsrc.next = lists_next;
	lsrc.arg = &lists;
	GpuirListsMerge(ls, &pieces, shim_index, &lsrc, 1, NULL);
	for (int q = 0; q < pieces.n; q++)
		GpuirListsWrite(ls[q], shim_index, 1 + q, false, &segs[q]);
	GpuirStoreBuiltSegments(shim_index, segs, pieces.n, total_dl);
	shim_options_from_meta();

	/* what a query reads first: the metapage, checked */
	GpuirReadMeta(shim_index, &meta);
	PG_exception_stack = NULL;
	info->pages = RelationGetNumberOfBlocks(shim_index);
	info->nsegments = (int) meta.nsegments;
	info->ndocs = meta.ndocs;
	info->nterms = 0;
	info->npostings = 0;
	for (int q = 0; q < pieces.n; q++)
	{
		info->nterms = Max(info->nterms, segs[q].nterms);
		info->npostings += segs[q].npostings;
	}
	image_ndocs = ndocs;
	pfree(docs.tids);
	if (lists.buf)
		pfree(lists.buf);
	return 0;
}

int
cpu_image_search(const char *query, int len, int mode, uint32_t k,
				 uint32_t *docs, float *scores, char *err, size_t errlen)
{
	static const GpuirMode modes[] = {GPUIR_MODE_AND, GPUIR_MODE_OR, GPUIR_MODE_BMW};
	sigjmp_buf	jb;
	MemoryContext cxt;
	MemoryContext old;
	volatile int n = -1;
	GpuirQueryInput in;
	GpuirResult *res;

	if (mode < 0 || mode > 2 || k < 1 || k > GPUIR_MAX_K)
	{
		snprintf(err, errlen, "cpu_image_search: mode %d or k %u out of range", mode, k);
		return -1;
	}
	cxt = AllocSetContextCreate(TopMemoryContext, "cpu_image_search", ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(cxt);
	GpuirQueryInputText(&in, query, len);
	PG_exception_stack = &jb;
	if (sigsetjmp(jb, 0) == 0)
	{
		n = GpuirSearch(shim_index, shim_heap, NULL, &in, (int) k, modes[mode], &res);
		for (int i = 0; i < n; i++)
		{
			docs[i] = tid_doc(&res[i].heap_tid);
			scores[i] = res[i].score;
			if (docs[i] >= image_ndocs)
				elog(ERROR, "GpuirSearch returned a TID of no document");
		}
	}
	else
	{
		snprintf(err, errlen, "%s (at %s)", shim_error_msg, shim_error_where);
		n = -1;
	}
	PG_exception_stack = NULL;
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return n;
}
