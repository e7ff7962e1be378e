/*
 * pgshim.c: a one-process stand-in for the PostgreSQL backend services that
 * gpuir's page readers call, so that test/fuzz/fuzz_pages.c can run the real
 * readers (compiled from src/ unchanged) on an index image in memory.
 *
 * What is emulated, and how closely:
 *
 *	buffers		ReadBuffer returns a local buffer (negative Buffer number) whose
 *				block is its own malloc'd copy of the image's page, so
 *				AddressSanitizer catches a read past any single page.  Like
 *				bufmgr.c it first checks the page header as
 *				PageIsVerifiedExtended does (sane pd_lower/pd_upper/pd_special
 *				and flags, or all zeros) and raises ERRCODE_DATA_CORRUPTED
 *				otherwise: such a page never reaches gpuir in a server.  A
 *				block number past the end of the relation (or P_NEW) is a
 *				finding: the readers must range-check first (md.c would fail
 *				with an unrelated error, and P_NEW would extend the index).
 *				ReadRecentBuffer never finds a buffer (each read is a
 *				fresh copy), so GpuirReadBuffer's hints always miss.
 *	errors		ereport/elog at ERROR record the SQLSTATE and message and
 *				siglongjmp to PG_exception_stack, as elog.c does; lower
 *				levels are dropped.
 *	memory		palloc and friends are malloc'd chunks on their context's
 *				list, all freed by shim_end (as deleting the query's memory
 *				context would); sizes are checked like mcxt.c (invalid sizes
 *				raise XX000).
 *	table AM	index fetches see every tuple except those at offsets that
 *				are multiples of 7 (so invisible rows are exercised).
 *	catalogs	every syscache lookup succeeds; no recovery is in progress.
 *
 * Writers (generic WAL, extension, merges) and the GPU service are not
 * emulated: calling them aborts.
 *
 * Compiled with -DPGSHIM_ENGINE (engine_bench's production CPU engine,
 * bench/engine/cpu_image.c), some of that changes: a build's writes are
 * emulated (P_NEW extends the index by a zeroed page, generic WAL writes
 * the registered pages in place, temporary files are memory, and
 * src/gpuirfree.c is linked for a new index's page allocation); every
 * memory context is its own (AllocSetContextCreate, MemoryContextReset and
 * MemoryContextDelete free as mcxt.c does) and allocations are not
 * capped; dynahash is a real table, so the engine's session caches work
 * as in a backend; the GUCs take their defaults; every row is visible.
 */
#include "postgres.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "access/generic_xlog.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/visibilitymap.h"
#include "access/xlog.h"
#include "access/xlogrecovery.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "catalog/pg_inherits.h"
#include "catalog/partition.h"
#include "common/hashfn.h"
#include "executor/tuptable.h"
#include "lib/stringinfo.h"
#include "commands/tablespace.h"
#include "storage/buffile.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/smgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "gpuir.h"
#include "gpuirdicthints.h"
#include "gpuirservice.h"
#include "pgshim.h"

/* port.h maps these to PostgreSQL's own implementations: use libc's here */
#undef vsnprintf
#undef snprintf
#undef fprintf
#undef vfprintf
#undef qsort

/* ---------- failures ---------- */

void
shim_fail(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "fuzz_pages: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n");
	abort();
}

/* ---------- memory ---------- */

/*
 * Every palloc'd chunk is malloc'd and kept on its context's list, so that
 * deleting or resetting a context frees its chunks (PGSHIM_ENGINE: each
 * AllocSetContextCreate makes a context of its own, as aset.c does; the
 * fuzzer's build has one context, freed whole by shim_end).
 */
typedef struct Chunk
{
	struct Chunk *prev;
	struct Chunk *next;
	size_t		size;
	struct ShimContext *cxt;	/* the owning context (the four fields keep the
								 * user data 16-byte aligned) */
} Chunk;

typedef struct ShimContext
{
	MemoryContextData base;		/* parent, firstchild, prevchild, nextchild */
	Chunk		head;			/* its chunks */
} ShimContext;

static ShimContext shim_context = {.head = {&shim_context.head, &shim_context.head, 0, NULL}};

#ifndef PGSHIM_ENGINE
/* a request larger than this from an image of a few pages is unbounded */
#define SHIM_ALLOC_LIMIT ((size_t) 256 * 1024 * 1024)
#endif

static void *
chunk_alloc_in(MemoryContext cxt, size_t size, bool zero, bool huge)
{
	ShimContext *sc = (ShimContext *) cxt;
	Chunk	   *c;

	if (huge ? !AllocHugeSizeIsValid(size) : !AllocSizeIsValid(size))
	{
		/* FUZZ_PAGES_ABORT_ALLOC=1: abort here, to see the caller's stack */
		if (getenv("FUZZ_PAGES_ABORT_ALLOC"))
			shim_fail("invalid memory alloc request size %zu", size);
		elog(ERROR, "invalid memory alloc request size %zu", size);
	}
#ifdef SHIM_ALLOC_LIMIT
	if (size > SHIM_ALLOC_LIMIT)
		shim_fail("allocation of %zu bytes, not bounded by the index size", size);
#endif
	c = malloc(sizeof(Chunk) + (size ? size : 1));
	if (c == NULL)
		shim_fail("out of memory");
	if (zero)
		memset(c + 1, 0, size);
	c->size = size;
	c->cxt = sc;
	c->next = sc->head.next;
	c->prev = &sc->head;
	sc->head.next->prev = c;
	sc->head.next = c;
	return c + 1;
}

static void *
chunk_alloc(size_t size, bool zero, bool huge)
{
	return chunk_alloc_in(CurrentMemoryContext, size, zero, huge);
}

static void
chunk_free(void *p)
{
	Chunk	   *c = (Chunk *) p - 1;

	c->prev->next = c->next;
	c->next->prev = c->prev;
	free(c);
}

static void *
chunk_realloc(void *p, size_t size, bool huge)
{
	Chunk	   *c = (Chunk *) p - 1;
	void	   *n = chunk_alloc_in(&c->cxt->base, size, false, huge);

	memcpy(n, p, Min(c->size, size));
	chunk_free(p);
	return n;
}

/* free every chunk of sc */
static void
context_free_chunks(ShimContext *sc)
{
	while (sc->head.next != &sc->head)
		chunk_free(sc->head.next + 1);
}

MemoryContext CurrentMemoryContext = &shim_context.base;
MemoryContext TopMemoryContext = &shim_context.base;
MemoryContext TopTransactionContext = &shim_context.base;

void *
palloc(Size size)
{
	return chunk_alloc(size, false, false);
}

void *
palloc0(Size size)
{
	return chunk_alloc(size, true, false);
}

void *
palloc_extended(Size size, int flags)
{
	return chunk_alloc(size, (flags & MCXT_ALLOC_ZERO) != 0, (flags & MCXT_ALLOC_HUGE) != 0);
}

void
pfree(void *pointer)
{
	chunk_free(pointer);
}

char *
pstrdup(const char *in)
{
	size_t		len = strlen(in) + 1;
	char	   *out = chunk_alloc(len, false, false);

	memcpy(out, in, len);
	return out;
}

void *
repalloc(void *pointer, Size size)
{
	return chunk_realloc(pointer, size, false);
}

void *
repalloc_huge(void *pointer, Size size)
{
	return chunk_realloc(pointer, size, true);
}

void *
MemoryContextAlloc(MemoryContext context, Size size)
{
	return chunk_alloc_in(context, size, false, false);
}

void *
MemoryContextAllocHuge(MemoryContext context, Size size)
{
	return chunk_alloc_in(context, size, false, true);
}

void *
MemoryContextAllocZero(MemoryContext context, Size size)
{
	return chunk_alloc_in(context, size, true, false);
}

void *
MemoryContextAllocExtended(MemoryContext context, Size size, int flags)
{
	return chunk_alloc_in(context, size, (flags & MCXT_ALLOC_ZERO) != 0,
						  (flags & MCXT_ALLOC_HUGE) != 0);
}

char *
psprintf(const char *fmt,...)
{
	char		buf[1024];
	va_list		ap;
	char	   *out;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	out = palloc(strlen(buf) + 1);
	strcpy(out, buf);
	return out;
}

#ifdef PGSHIM_ENGINE

MemoryContext
AllocSetContextCreateInternal(MemoryContext parent, const char *name,
							  Size minContextSize, Size initBlockSize, Size maxBlockSize)
{
	ShimContext *sc = calloc(1, sizeof(ShimContext));

	if (sc == NULL)
		shim_fail("out of memory");
	sc->head.next = sc->head.prev = &sc->head;
	sc->base.name = name;
	sc->base.parent = parent;
	sc->base.nextchild = parent->firstchild;
	if (parent->firstchild)
		parent->firstchild->prevchild = &sc->base;
	parent->firstchild = &sc->base;
	return &sc->base;
}

/* MemoryContextReset: free the context's chunks and delete its children, as mcxt.c */
void
MemoryContextReset(MemoryContext context)
{
	while (context->firstchild != NULL)
		MemoryContextDelete(context->firstchild);
	context_free_chunks((ShimContext *) context);
}

void
MemoryContextDelete(MemoryContext context)
{
	/* mcxt.c asserts both */
	if (context == &shim_context.base || context == CurrentMemoryContext)
		shim_fail("MemoryContextDelete of the top or the current context");
	MemoryContextReset(context);
	if (context->prevchild)
		context->prevchild->nextchild = context->nextchild;
	else
		context->parent->firstchild = context->nextchild;
	if (context->nextchild)
		context->nextchild->prevchild = context->prevchild;
	free(context);
}

#else

MemoryContext
AllocSetContextCreateInternal(MemoryContext parent, const char *name,
							  Size minContextSize, Size initBlockSize, Size maxBlockSize)
{
	return &shim_context.base;
}

void
MemoryContextDelete(MemoryContext context)
{
	/* the chunks are freed by shim_end */
}

void
MemoryContextReset(MemoryContext context)
{
	/* the chunks are freed by shim_end */
}

#endif

/* the shim's contexts do not count their bytes: a builder's limit then counts its postings alone */
Size
MemoryContextMemAllocated(MemoryContext context, bool recurse)
{
	return 0;
}

/* ---------- errors ---------- */

sigjmp_buf *PG_exception_stack = NULL;
ErrorContextCallback *error_context_stack = NULL;
int			shim_error_code;
char		shim_error_msg[1024];
const char *shim_error_where;
static char shim_where_buf[256];
static int	shim_elevel;

bool
errstart(int elevel, const char *domain)
{
	if (elevel < ERROR)
		return false;
	shim_elevel = elevel;
	shim_error_code = ERRCODE_INTERNAL_ERROR;	/* elog.c's default for ERROR */
	shim_error_msg[0] = '\0';
	return true;
}

bool
errstart_cold(int elevel, const char *domain)
{
	return errstart(elevel, domain);
}

int
errcode(int sqlerrcode)
{
	shim_error_code = sqlerrcode;
	return 0;
}

static void
set_message(const char *fmt, va_list ap)
{
	vsnprintf(shim_error_msg, sizeof(shim_error_msg), fmt, ap);
}

int
errmsg(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	set_message(fmt, ap);
	va_end(ap);
	return 0;
}

int
errmsg_internal(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	set_message(fmt, ap);
	va_end(ap);
	return 0;
}

int
errdetail(const char *fmt,...)
{
	return 0;
}

int
errhint(const char *fmt,...)
{
	return 0;
}

void
errfinish(const char *filename, int lineno, const char *funcname)
{
	snprintf(shim_where_buf, sizeof(shim_where_buf), "%s:%d", filename, lineno);
	shim_error_where = shim_where_buf;
	if (shim_elevel > ERROR)
		shim_fail("FATAL or PANIC at %s: %s", shim_where_buf, shim_error_msg);
	if (PG_exception_stack == NULL)
		shim_fail("error outside a try block at %s: %s", shim_where_buf, shim_error_msg);
	siglongjmp(*PG_exception_stack, 1);
}

/* PG_RE_THROW (PG_FINALLY blocks), as elog.c: back to the enclosing try block */
void
pg_re_throw(void)
{
	if (PG_exception_stack == NULL)
		shim_fail("re-throw outside a try block: %s", shim_error_msg);
	siglongjmp(*PG_exception_stack, 1);
}

/* ---------- interrupts, recovery, catalogs ---------- */

volatile sig_atomic_t InterruptPending = false;
BackendId	MyBackendId = 1;
TransactionId CheckXidAlive = InvalidTransactionId;
bool		bsysscan = false;

void
ProcessInterrupts(void)
{
}

/* no invalidation messages arrive in the fuzzer: a callback is never called */
void
CacheRegisterRelcacheCallback(RelcacheCallbackFunction func, Datum arg)
{
}

/* a segment builder's memory limit: PostgreSQL's default, 64MB */
int			maintenance_work_mem = 65536;

#ifdef PGSHIM_ENGINE

/*
 * Temporary files, in memory: the lists of a build (GpuirListsBegin) are
 * written to them and read back when the segment is written.
 */
struct BufFile
{
	char	   *data;
	size_t		len;
	size_t		cap;
	size_t		pos;
};

BufFile *
BufFileCreateTemp(bool interXact)
{
	BufFile    *f = calloc(1, sizeof(BufFile));

	if (f == NULL)
		shim_fail("out of memory");
	return f;
}

void
BufFileClose(BufFile *file)
{
	free(file->data);
	free(file);
}

size_t
BufFileRead(BufFile *file, void *ptr, size_t size)
{
	size_t		n = file->pos < file->len ? Min(size, file->len - file->pos) : 0;

	memcpy(ptr, file->data + file->pos, n);
	file->pos += n;
	return n;
}

void
BufFileWrite(BufFile *file, void *ptr, size_t size)
{
	if (file->pos + size > file->cap)
	{
		size_t		cap = Max(file->pos + size, file->cap * 2 + 65536);

		file->data = realloc(file->data, cap);
		if (file->data == NULL)
			shim_fail("out of memory");
		file->cap = cap;
	}
	memcpy(file->data + file->pos, ptr, size);
	file->pos += size;
	file->len = Max(file->len, file->pos);
}

int
BufFileSeek(BufFile *file, int fileno, off_t offset, int whence)
{
	off_t		at = whence == SEEK_SET ? offset
		: whence == SEEK_CUR ? (off_t) file->pos + offset : (off_t) file->len + offset;

	if (fileno != 0 || at < 0 || (size_t) at > file->len)
		return EOF;
	file->pos = (size_t) at;
	return 0;
}

void
PrepareTempTablespaces(void)
{
}

#else

/*
 * Temporary files: a segment builder spills to them past its memory limit
 * (maintenance_work_mem), which the page fuzzer's small indexes never
 * reach.
 */

BufFile *
BufFileCreateTemp(bool interXact)
{
	shim_fail("BufFileCreateTemp: no temporary files in the fuzz shim");
	return NULL;
}

void
BufFileClose(BufFile *file)
{
	shim_fail("BufFileClose: no temporary files in the fuzz shim");
}

size_t
BufFileRead(BufFile *file, void *ptr, size_t size)
{
	shim_fail("BufFileRead: no temporary files in the fuzz shim");
	return 0;
}

void
BufFileWrite(BufFile *file, void *ptr, size_t size)
{
	shim_fail("BufFileWrite: no temporary files in the fuzz shim");
}

int
BufFileSeek(BufFile *file, int fileno, off_t offset, int whence)
{
	shim_fail("BufFileSeek: no temporary files in the fuzz shim");
	return -1;
}

void
PrepareTempTablespaces(void)
{
	shim_fail("PrepareTempTablespaces: no temporary files in the fuzz shim");
}

#endif

int
errcode_for_file_access(void)
{
	return 0;
}

bool
RecoveryInProgress(void)
{
	return false;
}

XLogRecPtr
GetXLogReplayRecPtr(TimeLineID *replayTLI)
{
	return InvalidXLogRecPtr;
}

bool
SearchSysCacheExists(int cacheId, Datum key1, Datum key2, Datum key3, Datum key4)
{
	return true;
}

/* names for messages (GpuirCheckOptions' hint) */
char *
get_namespace_name(Oid nspid)
{
	return psprintf("namespace%u", nspid);
}

const char *
quote_qualified_identifier(const char *qualifier, const char *ident)
{
	return psprintf("%s.%s", qualifier ? qualifier : "", ident);
}

Snapshot
GetActiveSnapshot(void)
{
	return NULL;
}

TimestampTz
GetCurrentTimestamp(void)
{
	return 0;
}

bool
TimestampDifferenceExceeds(TimestampTz start_time, TimestampTz stop_time, int msec)
{
	return false;
}

/* ---------- the relations and their buffers ---------- */

static RelationData index_rel;
static RelationData heap_rel;
static FormData_pg_class index_class;
static FormData_pg_class heap_class;
Relation	shim_index = &index_rel;
Relation	shim_heap = &heap_rel;

static BlockNumber index_nblocks;
static BlockNumber heap_nblocks;
static char **pages;			/* one malloc'd copy per index block */

char	   *BufferBlocks = NULL;	/* no shared buffers: all are local */
Block	   *LocalBufferBlockPointers = NULL;

BlockNumber
RelationGetNumberOfBlocksInFork(Relation relation, ForkNumber forkNum)
{
	if (forkNum != MAIN_FORKNUM)
		shim_fail("size of fork %d asked", (int) forkNum);
	return relation == shim_index ? index_nblocks : heap_nblocks;
}

/* partitions: the shim's index is not a partition, so none of these is reached */
List *
get_partition_ancestors(Oid relid)
{
	shim_fail("partition ancestors asked");
	return NIL;
}

List *
find_all_inheritors(Oid parentrelId, LOCKMODE lockmode, List **numparents)
{
	shim_fail("inheritors asked");
	return NIL;
}

char
get_rel_relkind(Oid relid)
{
	shim_fail("relkind asked");
	return '\0';
}

/* smgr: no cached size, so that every size check asks RelationGetNumberOfBlocksInFork */
static SMgrRelationData shim_smgr;

SMgrRelation
smgropen(RelFileNode rnode, BackendId backend)
{
	for (int f = 0; f <= MAX_FORKNUM; f++)
		shim_smgr.smgr_cached_nblocks[f] = InvalidBlockNumber;
	return &shim_smgr;
}

void
smgrsetowner(SMgrRelation *owner, SMgrRelation reln)
{
	*owner = reln;
}

/* PageIsVerifiedExtended without checksums: a sane header, or all zeros */
static bool
page_verified(const char *page)
{
	const PageHeaderData *p = (const PageHeaderData *) page;

	if (!PageIsNew((Page) page) &&
		(p->pd_flags & ~PD_VALID_FLAG_BITS) == 0 &&
		p->pd_lower <= p->pd_upper &&
		p->pd_upper <= p->pd_special &&
		p->pd_special <= BLCKSZ &&
		p->pd_special == MAXALIGN(p->pd_special))
		return true;
	for (int i = 0; i < BLCKSZ; i++)
		if (page[i] != 0)
			return false;
	return true;
}

#ifdef PGSHIM_ENGINE
static BlockNumber pages_cap;

/* extend the index by a zeroed page, as P_NEW does; returns its block */
static BlockNumber
extend_index(void)
{
	if (index_nblocks == pages_cap)
	{
		pages_cap = Max(pages_cap * 2, 1024);
		pages = realloc(pages, sizeof(char *) * pages_cap);
		if (pages == NULL)
			shim_fail("out of memory");
		LocalBufferBlockPointers = (Block *) pages;
	}
	pages[index_nblocks] = calloc(1, BLCKSZ);
	if (pages[index_nblocks] == NULL)
		shim_fail("out of memory");
	return index_nblocks++;
}
#endif

Buffer
ReadBufferExtended(Relation reln, ForkNumber forkNum, BlockNumber blockNum,
				   ReadBufferMode mode, BufferAccessStrategy strategy)
{
#ifdef PGSHIM_ENGINE
	/* the writes of a build: new pages, and pages zeroed for a stream */
	if (reln == shim_index && forkNum == MAIN_FORKNUM && blockNum == P_NEW && mode == RBM_NORMAL)
		return -((Buffer) extend_index() + 1);
	if (reln == shim_index && forkNum == MAIN_FORKNUM && mode == RBM_ZERO_AND_LOCK &&
		blockNum < index_nblocks)
	{
		memset(pages[blockNum], 0, BLCKSZ);
		return -((Buffer) blockNum + 1);
	}
#endif
	if (reln != shim_index || forkNum != MAIN_FORKNUM || mode != RBM_NORMAL)
		shim_fail("ReadBufferExtended of another relation, fork or mode");
	if (blockNum >= index_nblocks)
		shim_fail("ReadBuffer of block %u, past the end of the index (%u blocks)",
				  blockNum, index_nblocks);
	if (!page_verified(pages[blockNum]))
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid page in block %u of relation fuzz", blockNum)));
	return -((Buffer) blockNum + 1);
}

Buffer
ReadBuffer(Relation reln, BlockNumber blockNum)
{
	return ReadBufferExtended(reln, MAIN_FORKNUM, blockNum, RBM_NORMAL, NULL);
}

/* no buffer is ever still valid: each read is a fresh copy (GpuirReadBuffer's hints miss) */
bool
ReadRecentBuffer(RelFileNode rnode, ForkNumber forkNum, BlockNumber blockNum,
				 Buffer recent_buffer)
{
	return false;
}

/* reached only after a hinted read, which never happens here */
void
pgstat_assoc_relation(Relation rel)
{
	shim_fail("pgstat_assoc_relation");
}

static BlockNumber
buffer_block(Buffer buffer)
{
	if (buffer >= 0 || (BlockNumber) (-buffer - 1) >= index_nblocks)
		shim_fail("invalid buffer %d", buffer);
	return (BlockNumber) (-buffer - 1);
}

BlockNumber
BufferGetBlockNumber(Buffer buffer)
{
	return buffer_block(buffer);
}

void
LockBuffer(Buffer buffer, int mode)
{
#ifndef PGSHIM_ENGINE
	if (mode == BUFFER_LOCK_EXCLUSIVE)
		shim_fail("exclusive lock on block %u: a reader does not write", buffer_block(buffer));
#endif
	buffer_block(buffer);
}

/* an exclusive lock (inserts only) */
bool
ConditionalLockBuffer(Buffer buffer)
{
	shim_fail("exclusive lock on block %u: a reader does not write", buffer_block(buffer));
	return false;
}

/* CREATE INDEX progress (segment builders of CREATE INDEX only) */
void
pgstat_progress_update_param(int index, int64 val)
{
	shim_fail("progress reported: the readers build no index");
}

void
ReleaseBuffer(Buffer buffer)
{
	buffer_block(buffer);
}

void
UnlockReleaseBuffer(Buffer buffer)
{
	buffer_block(buffer);
}

/* ---------- the table AM: index fetches ---------- */

static IndexFetchTableData *
fetch_begin(Relation rel)
{
	IndexFetchTableData *scan = palloc0(sizeof(IndexFetchTableData));

	scan->rel = rel;
	return scan;
}

static void
fetch_reset(IndexFetchTableData *scan)
{
}

static void
fetch_end(IndexFetchTableData *scan)
{
}

static bool
fetch_tuple(IndexFetchTableData *scan, ItemPointer tid, Snapshot snapshot,
			TupleTableSlot *slot, bool *call_again, bool *all_dead)
{
	BlockNumber blk = ItemPointerGetBlockNumberNoCheck(tid);
	OffsetNumber off = ItemPointerGetOffsetNumberNoCheck(tid);

	/* heapam would read this block: it must exist */
	if (blk >= heap_nblocks)
		shim_fail("heap fetch of (%u,%u), past the end of the table (%u blocks)",
				  blk, off, heap_nblocks);
	*call_again = false;
	if (all_dead)
		*all_dead = false;
#ifndef PGSHIM_ENGINE
	if (off % 7 == 0)
		return false;
#endif
	slot->tts_tid = *tid;
	return true;
}

static void
slot_clear(TupleTableSlot *slot)
{
}

static const TupleTableSlotOps shim_slot_ops = {
	.base_slot_size = sizeof(TupleTableSlot),
	.clear = slot_clear,
};

static TableAmRoutine shim_tableam;

TupleTableSlot *
table_slot_create(Relation rel, List **reglist)
{
	TupleTableSlot *slot = palloc0(sizeof(TupleTableSlot));
	const TupleTableSlotOps *ops = &shim_slot_ops;

	/* tts_ops is const after MakeTupleTableSlot, which sets it like this */
	memcpy((void *) &slot->tts_ops, &ops, sizeof(ops));
	return slot;
}

void
ExecDropSingleTupleTableSlot(TupleTableSlot *slot)
{
}

/*
 * The table is not heapam's (its rd_tableam is the shim's), so queries
 * fetch every row through fetch_tuple and never ask the visibility map
 */
static const TableAmRoutine shim_heapam;

const TableAmRoutine *
GetHeapamTableAmRoutine(void)
{
	return &shim_heapam;
}

uint8
visibilitymap_get_status(Relation rel, BlockNumber heapBlk, Buffer *vmbuf)
{
	return 0;
}

/* ---------- setup ---------- */

/* the index's reloptions (shim_begin) */
static GpuirOptions index_options;

void
shim_begin(const uint8_t *data, size_t size, BlockNumber nheap)
{
	if (shim_heap->rd_tableam == NULL)
	{
		shim_tableam.type = T_TableAmRoutine;
		shim_tableam.index_fetch_begin = fetch_begin;
		shim_tableam.index_fetch_reset = fetch_reset;
		shim_tableam.index_fetch_end = fetch_end;
		shim_tableam.index_fetch_tuple = fetch_tuple;
		strcpy(NameStr(index_class.relname), "fuzz_gpuir");
		index_class.relpersistence = RELPERSISTENCE_PERMANENT;
		index_class.relkind = RELKIND_INDEX;
		strcpy(NameStr(heap_class.relname), "fuzz_table");
		heap_class.relpersistence = RELPERSISTENCE_PERMANENT;
		heap_class.relkind = RELKIND_RELATION;
		index_rel.rd_rel = &index_class;
		index_rel.rd_refcnt = 1;
		heap_rel.rd_rel = &heap_class;
		heap_rel.rd_refcnt = 1;
		heap_rel.rd_tableam = &shim_tableam;
	}
	index_nblocks = (BlockNumber) ((size + BLCKSZ - 1) / BLCKSZ);
	heap_nblocks = nheap;
	pages = malloc(sizeof(char *) * Max(index_nblocks, 1));
#ifdef PGSHIM_ENGINE
	pages_cap = Max(index_nblocks, 1);
#endif
	for (BlockNumber b = 0; b < index_nblocks; b++)
	{
		size_t		off = (size_t) b * BLCKSZ;
		size_t		n = Min((size_t) BLCKSZ, size - off);

		pages[b] = malloc(BLCKSZ);
		memcpy(pages[b], data + off, n);
		memset(pages[b] + n, 0, BLCKSZ - n);
	}
	LocalBufferBlockPointers = (Block *) pages;
	CurrentMemoryContext = &shim_context.base;
	PG_exception_stack = NULL;

	/*
	 * the index's options are those its metapage was built with (the
	 * readers are under test, not ALTER INDEX: GpuirCheckOptions passes)
	 */
	shim_options_from_meta();
}

void
shim_options_from_meta(void)
{
	index_rel.rd_options = NULL;
	if (index_nblocks > 0)
	{
		index_options.k1 = GpuirPageGetMeta(pages[0])->k1;
		index_options.b = GpuirPageGetMeta(pages[0])->b;
		index_rel.rd_options = (bytea *) &index_options;
	}
}

void
shim_end(void)
{
	context_free_chunks(&shim_context);
	for (BlockNumber b = 0; b < index_nblocks; b++)
		free(pages[b]);
	free(pages);
	pages = NULL;
	LocalBufferBlockPointers = NULL;
	index_nblocks = 0;
}

/* ---------- small library functions ---------- */

int32
ItemPointerCompare(ItemPointer arg1, ItemPointer arg2)
{
	BlockNumber b1 = ItemPointerGetBlockNumberNoCheck(arg1);
	BlockNumber b2 = ItemPointerGetBlockNumberNoCheck(arg2);
	OffsetNumber o1 = ItemPointerGetOffsetNumberNoCheck(arg1);
	OffsetNumber o2 = ItemPointerGetOffsetNumberNoCheck(arg2);

	if (b1 != b2)
		return b1 < b2 ? -1 : 1;
	if (o1 != o2)
		return o1 < o2 ? -1 : 1;
	return 0;
}

bool
ItemPointerEquals(ItemPointer pointer1, ItemPointer pointer2)
{
	return ItemPointerCompare(pointer1, pointer2) == 0;
}

void
pg_qsort(void *base, size_t nel, size_t elsize, int (*cmp) (const void *, const void *))
{
	qsort(base, nel, elsize, cmp);
}

void
qsort_interruptible(void *base, size_t nel, size_t elsize, qsort_arg_comparator cmp, void *arg)
{
	qsort_r(base, nel, elsize, cmp, arg);
}

void
qsort_arg(void *base, size_t nel, size_t elsize, qsort_arg_comparator cmp, void *arg)
{
	qsort_r(base, nel, elsize, cmp, arg);
}

int
pg_snprintf(char *str, size_t count, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(str, count, fmt, ap);
	va_end(ap);
	return n;
}

#ifdef PGSHIM_ENGINE

/*
 * Dynahash for the engine's session caches (HASH_BLOBS keys): chained
 * buckets, doubled past two entries a bucket, the table and its entries
 * in the table's context (HASH_CONTEXT's, else the current one), so that
 * resetting that context drops the table as dynahash's would be.
 */
typedef struct ShimHashNode
{
	struct ShimHashNode *next;
	uint32		hash;
} ShimHashNode;

/* a node's entry (key first), MAXALIGNed after it */
#define HASH_ENTRY(node) ((void *) ((char *) (node) + MAXALIGN(sizeof(ShimHashNode))))

typedef struct ShimHtab
{
	Size		keysize;
	Size		entrysize;
	MemoryContext cxt;
	ShimHashNode **buckets;
	uint32		nbuckets;		/* a power of two */
	long		count;
} ShimHtab;

HTAB *
hash_create(const char *tabname, long nelem, const HASHCTL *info, int flags)
{
	MemoryContext cxt = (flags & HASH_CONTEXT) ? info->hcxt : CurrentMemoryContext;
	ShimHtab   *t = MemoryContextAllocZero(cxt, sizeof(ShimHtab));

	if (!(flags & HASH_BLOBS))
		shim_fail("hash_create of %s: only HASH_BLOBS keys are emulated", tabname);
	t->keysize = info->keysize;
	t->entrysize = info->entrysize;
	t->cxt = cxt;
	t->nbuckets = 64;
	t->buckets = MemoryContextAllocZero(cxt, sizeof(ShimHashNode *) * t->nbuckets);
	return (HTAB *) t;
}

static void
htab_grow(ShimHtab *t)
{
	uint32		n = t->nbuckets * 2;
	ShimHashNode **b = MemoryContextAllocZero(t->cxt, sizeof(ShimHashNode *) * n);

	for (uint32 i = 0; i < t->nbuckets; i++)
		while (t->buckets[i] != NULL)
		{
			ShimHashNode *e = t->buckets[i];

			t->buckets[i] = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	pfree(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

void *
hash_search(HTAB *hashp, const void *keyPtr, HASHACTION action, bool *foundPtr)
{
	ShimHtab   *t = (ShimHtab *) hashp;
	uint32		h = hash_bytes(keyPtr, (int) t->keysize);
	ShimHashNode **at = &t->buckets[h & (t->nbuckets - 1)];
	ShimHashNode *e;

	for (; *at != NULL; at = &(*at)->next)
		if ((*at)->hash == h && memcmp(HASH_ENTRY(*at), keyPtr, t->keysize) == 0)
			break;
	e = *at;
	if (foundPtr)
		*foundPtr = e != NULL;
	switch (action)
	{
		case HASH_FIND:
			return e ? HASH_ENTRY(e) : NULL;
		case HASH_ENTER:
		case HASH_ENTER_NULL:
			if (e != NULL)
				return HASH_ENTRY(e);
			/* not zeroed past the key, as dynahash's entries are not */
			e = MemoryContextAlloc(t->cxt, MAXALIGN(sizeof(ShimHashNode)) + t->entrysize);
			e->hash = h;
			memcpy(HASH_ENTRY(e), keyPtr, t->keysize);
			e->next = t->buckets[h & (t->nbuckets - 1)];
			t->buckets[h & (t->nbuckets - 1)] = e;
			if (++t->count > 2 * (long) t->nbuckets)
				htab_grow(t);
			return HASH_ENTRY(e);
		case HASH_REMOVE:
			if (e == NULL)
				return NULL;
			*at = e->next;
			t->count--;
			/* dynahash keeps the removed entry's memory until the next HASH_ENTER */
			return HASH_ENTRY(e);
	}
	return NULL;
}

long
hash_get_num_entries(HTAB *hashp)
{
	return ((ShimHtab *) hashp)->count;
}

#else

/*
 * Dynahash, as the engine's dictionary probe cache uses it: a table that
 * keeps nothing (every HASH_ENTER makes a fresh zeroed entry from this
 * input's chunks, found = false), so that nothing the engine keeps across
 * queries outlives shim_end's freeing of the chunks.  The table is
 * malloc'd, not a chunk: it stays valid across inputs.
 */
typedef struct ShimHtab
{
	Size		keysize;
	Size		entrysize;
} ShimHtab;

HTAB *
hash_create(const char *tabname, long nelem, const HASHCTL *info, int flags)
{
	ShimHtab   *t = malloc(sizeof(ShimHtab));	/* one per process start: never freed */

	t->keysize = info->keysize;
	t->entrysize = info->entrysize;
	return (HTAB *) t;
}

void *
hash_search(HTAB *hashp, const void *keyPtr, HASHACTION action, bool *foundPtr)
{
	if (foundPtr)
		*foundPtr = false;
	if (action != HASH_ENTER)
		return NULL;
	{
		ShimHtab   *t = (ShimHtab *) hashp;
		void	   *e = chunk_alloc(t->entrysize, true, false);

		memcpy(e, keyPtr, t->keysize);
		return e;
	}
}

long
hash_get_num_entries(HTAB *hashp)
{
	return 0;
}

#endif

/* FNV-1a: not PostgreSQL's hash_bytes, but the same contract (the builder's hash table) */
uint32
hash_bytes(const unsigned char *k, int keylen)
{
	uint32		h = 2166136261u;

	for (int i = 0; i < keylen; i++)
		h = (h ^ k[i]) * 16777619u;
	return h;
}

/* 64-bit FNV-1a from seed: not PostgreSQL's hash_bytes_extended, but its contract */
uint64
hash_bytes_extended(const unsigned char *k, int keylen, uint64 seed)
{
	uint64		h = UINT64CONST(14695981039346656037) ^ seed;

	for (int i = 0; i < keylen; i++)
		h = (h ^ k[i]) * UINT64CONST(1099511628211);
	return h;
}

void
initStringInfo(StringInfo str)
{
	str->maxlen = 1024;
	str->data = palloc(str->maxlen);
	str->len = 0;
	str->data[0] = '\0';
	str->cursor = 0;
}

int
appendStringInfoVA(StringInfo str, const char *fmt, va_list args)
{
	int			avail = str->maxlen - str->len;
	int			n;

	if (avail < 16)
		return 32;
	n = vsnprintf(str->data + str->len, avail, fmt, args);
	if (n >= 0 && n < avail)
	{
		str->len += n;
		return 0;
	}
	str->data[str->len] = '\0';
	return n + 1;
}

void
enlargeStringInfo(StringInfo str, int needed)
{
	int			newlen = str->maxlen;

	needed += str->len + 1;
	if (needed <= str->maxlen)
		return;
	while (needed > newlen)
		newlen *= 2;
	str->data = repalloc(str->data, newlen);
	str->maxlen = newlen;
}

/* ---------- the tokenizer ---------- */

/*
 * GpuirTokenize (src/gpuirtokenize.c runs the text search parser and
 * dictionaries, which need the catalogs): words separated by spaces are the
 * lexemes, distinct, sorted, with tf.  The fuzzer's seeds were built with
 * the 'simple' configuration, which does the same to their lowercase ASCII
 * words; engine_bench's query logs are tokenized already.
 */
void
GpuirTokenize(Oid cfg_id, const char *text, int len, GpuirDocTerms *out)
{
	GpuirTerm  *t = palloc(sizeof(GpuirTerm) * (len / 2 + 1));
	int			n = 0;
	int			i = 0;

	out->dl = 0;
	out->prior = 0.0f;			/* as GpuirTokenize: a row's prior is GpuirRowPrior's */
	while (i < len)
	{
		int			start;

		while (i < len && text[i] == ' ')
			i++;
		start = i;
		while (i < len && text[i] != ' ')
			i++;
		if (i > start)
		{
			t[n].lexeme = (char *) text + start;
			t[n].len = i - start;
			t[n].tf = 1;
			n++;
			out->dl++;
		}
	}
	out->nterms = GpuirTermsSortMerge(t, n, true);
	out->terms = t;
}

/* ---------- not emulated: writers, locks, catalogs, the GPU service ---------- */

int			gpuir_device = GPUIR_DEVICE_CPU;
int			gpuir_gpu_min_postings = 0;
#ifdef PGSHIM_ENGINE
/* the production engine: the GUCs' defaults (src/gpuir.c) */
int			gpuir_doclength_cache = GPUIR_DEFAULT_DOCLENGTH_CACHE;
int			gpuir_taat_max_postings = GPUIR_DEFAULT_TAAT_MAX_POSTINGS;
#else
int			gpuir_doclength_cache = 0;	/* the page readers read every length from pages */
int			gpuir_taat_max_postings = 0;	/* document at a time (run_taat needs the lengths' copy) */
#endif
bool		gpuir_debug_rescore = false;	/* no check of the rescoring */
int			gpuir_debug_dict_hint_skew = 0;
GpuirServiceShared *GpuirService = NULL;
pg_atomic_uint64 *GpuirDictHints = NULL;	/* no shared memory: no hints */

#define NOT_EMULATED(what) shim_fail("%s called: not emulated for the page readers", what)

#ifdef PGSHIM_ENGINE

/*
 * The writes of a build (PGSHIM_ENGINE): a registered buffer's page is
 * written in place (nothing to log, no crash to recover from); the
 * relation extension lock has no other backend to exclude.
 */
static int	generic_xlog_state;

GenericXLogState *
GenericXLogStart(Relation relation)
{
	return (GenericXLogState *) &generic_xlog_state;
}

Page
GenericXLogRegisterBuffer(GenericXLogState *state, Buffer buffer, int flags)
{
	return BufferGetPage(buffer);
}

XLogRecPtr
GenericXLogFinish(GenericXLogState *state)
{
	return InvalidXLogRecPtr;
}

void
LockRelationForExtension(Relation relation, LOCKMODE lockmode)
{
}

void
UnlockRelationForExtension(Relation relation, LOCKMODE lockmode)
{
}

/* bufpage.c's PageInit */
void
PageInit(Page page, Size pageSize, Size specialSize)
{
	PageHeader	p = (PageHeader) page;

	specialSize = MAXALIGN(specialSize);
	memset(p, 0, pageSize);
	p->pd_flags = 0;
	p->pd_lower = SizeOfPageHeaderData;
	p->pd_upper = pageSize - specialSize;
	p->pd_special = pageSize - specialSize;
	PageSetPageSizeAndVersion(page, pageSize, PG_PAGE_LAYOUT_VERSION);
}

/* src/gpuirfree.c's other callers (VACUUM, page reuse): never reached by a build */
struct Latch *MyLatch = NULL;

VirtualTransactionId *
GetLockConflicts(const LOCKTAG *locktag, LOCKMODE lockmode, int *countp)
{
	NOT_EMULATED("GetLockConflicts");
}

TransactionId
GetOldestNonRemovableTransactionId(Relation rel)
{
	NOT_EMULATED("GetOldestNonRemovableTransactionId");
}

int
WaitLatch(Latch *latch, int wakeEvents, long timeout, uint32 wait_event_info)
{
	NOT_EMULATED("WaitLatch");
}

void
ResetLatch(Latch *latch)
{
	NOT_EMULATED("ResetLatch");
}

#else

GenericXLogState *
GenericXLogStart(Relation relation)
{
	NOT_EMULATED("GenericXLogStart");
}

Page
GenericXLogRegisterBuffer(GenericXLogState *state, Buffer buffer, int flags)
{
	NOT_EMULATED("GenericXLogRegisterBuffer");
}

XLogRecPtr
GenericXLogFinish(GenericXLogState *state)
{
	NOT_EMULATED("GenericXLogFinish");
}

void
LockRelationForExtension(Relation relation, LOCKMODE lockmode)
{
	NOT_EMULATED("LockRelationForExtension");
}

void
UnlockRelationForExtension(Relation relation, LOCKMODE lockmode)
{
	NOT_EMULATED("UnlockRelationForExtension");
}

void
PageInit(Page page, Size pageSize, Size specialSize)
{
	NOT_EMULATED("PageInit");
}

#endif

bool
ConditionalLockRelation(Relation relation, LOCKMODE lockmode)
{
	NOT_EMULATED("ConditionalLockRelation");
}

void
UnlockRelation(Relation relation, LOCKMODE lockmode)
{
	NOT_EMULATED("UnlockRelation");
}

Oid
IndexGetRelation(Oid indexId, bool missing_ok)
{
	NOT_EMULATED("IndexGetRelation");
}

Relation
table_open(Oid relationId, LOCKMODE lockmode)
{
	NOT_EMULATED("table_open");
}

void
table_close(Relation relation, LOCKMODE lockmode)
{
	NOT_EMULATED("table_close");
}

void
relation_close(Relation relation, LOCKMODE lockmode)
{
	NOT_EMULATED("relation_close");
}

#ifndef PGSHIM_ENGINE			/* PGSHIM_ENGINE links src/gpuirfree.c */

BlockNumber
GpuirFreeListAllocate(GpuirFreeList *fl, Relation index, uint32 npages)
{
	NOT_EMULATED("GpuirFreeListAllocate");
}

BlockNumber
GpuirFreeListTakeBestFit(GpuirFreeList *fl, uint32 npages)
{
	NOT_EMULATED("GpuirFreeListTakeBestFit");
}

bool
GpuirFreeListAllocateExtents(GpuirFreeList *fl, Relation index, uint32 npages, bool lowest,
							 BlockNumber limit, bool extend, GpuirStreamExtents *out)
{
	NOT_EMULATED("GpuirFreeListAllocateExtents");
}

void
GpuirReadFreeMap(Relation index, GpuirFreeMapData *fm)
{
	NOT_EMULATED("GpuirReadFreeMap");
}

void
GpuirSetFreeMapLower(Page page)
{
	NOT_EMULATED("GpuirSetFreeMapLower");
}

void
GpuirFreeListInit(GpuirFreeList *fl, Relation index, const GpuirFreeMapData *fm)
{
	NOT_EMULATED("GpuirFreeListInit");
}

void
GpuirFreeListPages(const GpuirFreeList *fl, uint64 *all, uint64 *reusable)
{
	NOT_EMULATED("GpuirFreeListPages");
}

void
GpuirFreeListReportDropped(Relation index, const GpuirFreeList *fl)
{
	NOT_EMULATED("GpuirFreeListReportDropped");
}

#endif

void
GpuirCompactLocked(Relation index)
{
	NOT_EMULATED("GpuirCompactLocked");
}

void
GpuirCompact(Relation index, bool wait)
{
	NOT_EMULATED("GpuirCompact");
}

uint32
GpuirMaxSegmentDocs(Relation index)
{
	NOT_EMULATED("GpuirMaxSegmentDocs");
}

#ifndef PGSHIM_ENGINE
void
GpuirFreeListAddSegment(GpuirFreeList *fl, const GpuirSegmentLayout *lay, FullTransactionId safexid)
{
	NOT_EMULATED("GpuirFreeListAddSegment");
}

void
GpuirFreeListStore(GpuirFreeList *fl, GpuirFreeMapData *fm)
{
	NOT_EMULATED("GpuirFreeListStore");
}

#endif

FullTransactionId
ReadNextFullTransactionId(void)
{
	NOT_EMULATED("ReadNextFullTransactionId");
}

bool
ConditionalLockPage(Relation relation, BlockNumber blkno, LOCKMODE lockmode)
{
	NOT_EMULATED("ConditionalLockPage");
}

void
LockPage(Relation relation, BlockNumber blkno, LOCKMODE lockmode)
{
	NOT_EMULATED("LockPage");
}

void
UnlockPage(Relation relation, BlockNumber blkno, LOCKMODE lockmode)
{
	NOT_EMULATED("UnlockPage");
}

Relation
GpuirOpenIndex(Oid indexoid, LOCKMODE lockmode)
{
	NOT_EMULATED("GpuirOpenIndex");
}

bool
GpuirServiceReady(void)
{
	return false;
}

/* auto's cost model (gpuirroute.c): no GPU service, nothing to learn */
bool
GpuirRouteToGpu(GpuirMode mode, int k, uint64 postings, GpuirRoutePrediction *pred)
{
	pred->what = -1;
	pred->us = 0;
	return false;
}

void
GpuirRouteObserve(GpuirMode mode, int k, uint64 postings, int what, double us,
				  const GpuirRoutePrediction *pred)
{
}

double
GpuirRouteCpuTime(void)
{
	return 0.0;
}

void
GpuirRouteActiveBegin(void)
{
}

void
GpuirRouteActiveEnd(void)
{
}

void
GpuirRouteCpuBegin(void)
{
}

void
GpuirRouteCpuEnd(void)
{
}

void
GpuirServiceCount(bool gpu, bool fallback)
{
}

void
GpuirServiceCountPruned(bool decided)
{
}

bool
GpuirGpuSearch(Relation index, const GpuirMetaPageData *meta,
			   const GpuirScoring *sc, GpuirGpuQuery *qs, int nq,
			   char *why, Size whylen)
{
	NOT_EMULATED("GpuirGpuSearch");
}
