/*-------------------------------------------------------------------------
 *
 * gpuirsegment.c
 *	  In-memory builder of an immutable segment: collects documents and
 *	  postings (from CREATE INDEX, the insert buffer or older segments),
 *	  assigns dense docIDs in heap TID order, sorts the dictionary, encodes
 *	  the posting lists in blocks of 128 and writes the segment's streams.
 *
 * Postings are held in memory (12 bytes each while collecting, 20 while
 * sorted) within the builder's memory limit (GpuirBuilderSetMemoryLimit:
 * CREATE INDEX and merges pass maintenance_work_mem), which also counts
 * the documents and terms the builder holds; past it the postings go to
 * sorted runs in temporary files, which the write reads back term by term,
 * and the encoded blocks go to a temporary file before their pages are
 * written.  What stays in memory grows with documents (about 10 bytes each
 * while collecting, 18-28 more when ordered), distinct lexemes and blocks
 * (24 bytes per 128 postings), not with postings; see src/README "Limits".
 * A parallel build merges its participants' exports (GpuirLists*:
 * documents by TID, lists by lexeme range, every stream in a file;
 * gpuirbuild.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

#include "commands/progress.h"
#include "commands/tablespace.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "portability/instr_time.h"
#include "storage/buffile.h"
#include "storage/itemptr.h"
#include "utils/memutils.h"

#include "gpuir.h"

typedef struct LexKey
{
	const char *s;
	uint16		len;
} LexKey;

typedef struct TermEntry
{
	LexKey		key;
	uint32		termid;
	uint32		hash;
	char		status;
} TermEntry;

#define SH_PREFIX termhash
#define SH_ELEMENT_TYPE TermEntry
#define SH_KEY_TYPE LexKey
#define SH_KEY key
#define SH_HASH_KEY(tb, k) hash_bytes((const unsigned char *) (k).s, (k).len)
#define SH_EQUAL(tb, a, b) ((a).len == (b).len && memcmp((a).s, (b).s, (a).len) == 0)
#define SH_SCOPE static inline
#define SH_STORE_HASH
#define SH_GET_HASH(tb, a) a->hash
#define SH_DECLARE
#define SH_DEFINE
#include "lib/simplehash.h"

/* a run's chunk: a term's postings in arrival order follow (GpuirPosting each) */
typedef struct RunChunk
{
	uint32		termid;			/* RUN_END after the last chunk */
	uint32		count;
} RunChunk;

#define RUN_END		PG_UINT32_MAX

/*
 * The lists of a builder in dictionary order (list_begin, list_next,
 * list_end): from the postings held in memory, sorted by term once, or read
 * back from the sorted runs term by term.
 */
typedef struct ListIter
{
	uint32		t;				/* the next term, in dictionary order */
	/* held: the t-th term's postings are post[start[t] .. start[t + 1]) */
	uint64	   *start;
	GpuirPosting *post;
	/* runs: each run's next chunk, and the list read back */
	RunChunk   *head;
	GpuirPosting *list;
	uint64		cap;
} ListIter;

struct GpuirBuilder
{
	MemoryContext cxt;
	termhash_hash *terms;
	LexKey	   *lex;			/* termid -> lexeme */
	uint32		nterms;
	uint32		term_cap;
	char	   *lex_arena;		/* the lexemes' copies, packed (lexeme_copy) */
	Size		lex_arena_left;
	ItemPointerData *tids;		/* builder doc index -> heap TID */
	uint32	   *dls;
	float4	   *priors;			/* builder doc index -> prior; NULL while
								 * every prior is 0 */
	uint64		prior_cap;
	uint32		ndocs;
	uint32		doc_cap;
	uint64		total_dl;
	uint32	   *p_term;			/* postings, in arrival order */
	uint32	   *p_doc;
	uint32	   *p_tf;
	uint64		np;
	uint64		p_cap;
	bool		progress;		/* report to pg_stat_progress_create_index */
	/* spilling (GpuirBuilderSetMemoryLimit) */
	Size		mem_limit;		/* GpuirBuilderSetMemoryLimit's bytes; 0: none */
	bool		drop_between_runs;	/* ... and its drop_between_runs */
	uint64		spill_at;		/* postings held before a run is written; 0: never */
	BufFile   **runs;			/* sorted runs, one temporary file each */
	/* spill_run's scratch, kept from one spill to the next (freed with the held postings) */
	uint64	   *s_count;		/* per term: postings held */
	uint64	   *s_at;			/* per term: its place in s_post */
	uint32	   *s_present;		/* the terms present, in dictionary order */
	uint64		s_term_cap;
	GpuirPosting *s_post;		/* the postings ordered by term */
	uint64		s_post_cap;
	int			nruns;
	int			runs_cap;
	/* GpuirBuilderWrite, GpuirBuilderExport*: documents and terms ordered */
	uint32	   *docorder;		/* docID -> builder doc index (TID order) */
	uint32	   *newdoc;			/* builder doc index -> docID */
	uint32	   *termorder;		/* dictionary position -> builder term id */
	uint32	   *newterm;		/* builder term id -> dictionary position */
	ListIter	it;
};

/*
 * Memory per posting while it is held: 12 bytes collecting (term, doc, tf)
 * and 8 more when the postings are sorted by term (a run's, or the write's).
 */
#define BYTES_PER_HELD_POSTING	(3 * sizeof(uint32) + sizeof(GpuirPosting))

/*
 * memory per term that a spill allocates beside the postings (s_count,
 * s_at, s_present)
 */
#define BYTES_PER_SPILL_TERM	(2 * sizeof(uint64) + sizeof(uint32))

/*
 * The postings held get at least this part of the memory limit, whatever
 * the documents and terms take (they are not spilled): runs never shrink
 * to nothing, at the price of going past the limit.
 */
#define MIN_HELD_SHARE			4

/* the memory limit is checked again every this many postings */
#define LIMIT_CHECK_EVERY		65536

/*
 * release_freed: give the memory that malloc holds free back to the system.
 * glibc raises its mmap threshold whenever a large mmap'd block is freed, so
 * that later arrays (up to 32 MB) come from the heap, and what they leave
 * when they are freed stays resident (1.2 M rows, maintenance_work_mem
 * 128MB, one worker: the two processes held 161 MB with their limits kept
 * when every spill allocated and freed its arrays).  So a spill's arrays are
 * kept from one spill to the next, and this is called where the builder
 * frees its large arrays for good, at the end of the scan.
 */
static inline void
release_freed(void)
{
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

/*
 * drop_pages: the whole pages of p[0 .. bytes) are not needed until written
 * again: give them back to the system (Linux: they read as zeros after),
 * so that a builder between spills holds only the postings it has.  The
 * pages are then faulted in again as the arrays fill (about a sixth of a
 * merge's time, little beside a build's tokenizing).
 */
static void
drop_pages(void *p, Size bytes)
{
#if defined(__linux__) && defined(MADV_DONTNEED)
	uintptr_t	page = (uintptr_t) sysconf(_SC_PAGESIZE);
	uintptr_t	start = ((uintptr_t) p + page - 1) & ~(page - 1);
	uintptr_t	end = ((uintptr_t) p + bytes) & ~(page - 1);

	if (p != NULL && end > start)
		(void) madvise((void *) start, end - start, MADV_DONTNEED);
#endif
}

static void spill_run(GpuirBuilder *b);
static void update_spill_at(GpuirBuilder *b);
static void free_held(GpuirBuilder *b);

/* a growable byte buffer for one stream */
typedef struct ByteBuf
{
	char	   *data;
	uint64		len;
	uint64		cap;
	/* with spill: the bytes before data[0] are in file, flushed bytes of them */
	BufFile    *spill;
	uint64		flushed;
} ByteBuf;

/* bb_reset: bb emptied, its spill file closed and its memory freed */
static void
bb_reset(ByteBuf *bb)
{
	if (bb->spill != NULL)
		BufFileClose(bb->spill);
	if (bb->data != NULL)
		pfree(bb->data);
	memset(bb, 0, sizeof(*bb));
}

/* bb_size: the stream's length so far, flushed bytes included */
static inline uint64
bb_size(const ByteBuf *bb)
{
	return bb->flushed + bb->len;
}

/* bb_flush: with spill, move what data holds to the file (past 1 MB) */
static void
bb_flush(ByteBuf *bb, bool force)
{
	if (bb->spill == NULL || bb->len == 0 || (!force && bb->len < 1024 * 1024))
		return;
	gpuir_buffile_write(bb->spill, bb->data, bb->len);
	bb->flushed += bb->len;
	bb->len = 0;
}

static void
bb_append(ByteBuf *bb, const void *src, uint64 n)
{
	if (bb->len + n > bb->cap)
	{
		uint64		cap = Max(bb->cap * 2, Max(bb->len + n, 8192));

		bb->data = bb->data ? repalloc_huge(bb->data, cap)
			: palloc_extended(cap, MCXT_ALLOC_HUGE);
		bb->cap = cap;
	}
	memcpy(bb->data + bb->len, src, n);
	bb->len += n;
}

/*
 * lexeme_copy: a copy of lexeme[0..len) in the builder's memory, packed
 * with the others in chunks of LEX_ARENA_CHUNK bytes.  A palloc'd copy of
 * each cost its length rounded up to a power of 2 plus a chunk header (24
 * bytes for the usual lexeme of up to 8 on PostgreSQL 15), beside the hash
 * entry and lex slot every term has: with 1.2 M paragraphs, one worker and
 * maintenance_work_mem 64MB, the build's peak went from 110-112 MB to 100
 * MB and its runs from 71 to 68, the index the same.  The copies live as
 * long as the builder's context; none is freed alone.  Call in b->cxt.
 */
#define LEX_ARENA_CHUNK		8192

static char *
lexeme_copy(GpuirBuilder *b, const char *lexeme, int len)
{
	Size		need = Max(len, 1);
	char	   *copy;

	if (need > LEX_ARENA_CHUNK / 8)
		copy = palloc(need);	/* a rare long one: alone */
	else
	{
		if (need > b->lex_arena_left)
		{
			b->lex_arena = palloc(LEX_ARENA_CHUNK);
			b->lex_arena_left = LEX_ARENA_CHUNK;
		}
		copy = b->lex_arena;
		b->lex_arena += need;
		b->lex_arena_left -= need;
	}
	memcpy(copy, lexeme, len);
	return copy;
}

/* GpuirBuilderCreate: an empty builder in its own memory context */
GpuirBuilder *
GpuirBuilderCreate(void)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "gpuir segment builder",
											  ALLOCSET_DEFAULT_SIZES);
	GpuirBuilder *b = MemoryContextAllocZero(cxt, sizeof(GpuirBuilder));

	b->cxt = cxt;
	b->terms = termhash_create(cxt, 1024, NULL);
	return b;
}

/*
 * GpuirBuilderReportProgress: GpuirBuilderWrite reports its phases and
 * work done to the CREATE INDEX progress of this backend (gpuirbuild only:
 * merges run inside other commands, whose progress fields must stay theirs)
 */
void
GpuirBuilderReportProgress(GpuirBuilder *b)
{
	b->progress = true;
}

/* report: set CREATE INDEX progress parameter param to value, if on */
static inline void
report(bool on, int param, int64 value)
{
	if (on)
		pgstat_progress_update_param(param, value);
}

/* progress: report for builder b, if it reports */
static inline void
progress(const GpuirBuilder *b, int param, int64 value)
{
	report(b->progress, param, value);
}

/*
 * GpuirBuilderSetMemoryLimit: use at most about bytes of memory in all:
 * what the builder's memory context holds (documents, terms, postings) and
 * what a spill adds; past that, the postings held go to a sorted run in a
 * temporary file (and GpuirBuilderWrite or the export reads them back).
 * Documents and terms stay in memory: when they leave the postings less
 * than 1 / MIN_HELD_SHARE of bytes, the postings keep that much and the
 * builder goes past bytes.  0: no limit.  With drop_between_runs, the
 * posting arrays' pages go back to the system after each spill
 * (drop_pages): a parallel build's participants, whose spills do not
 * coincide, then hold less together (1.2 M rows, one worker, 128MB: 123 MB
 * at most against 146 MB), at the cost of faulting the pages in again.
 */
void
GpuirBuilderSetMemoryLimit(GpuirBuilder *b, Size bytes, bool drop_between_runs)
{
	b->mem_limit = bytes;
	b->drop_between_runs = drop_between_runs;
	update_spill_at(b);
}

/*
 * update_spill_at: the postings that may be held before a spill: the
 * memory limit less what the builder's context holds besides the posting
 * arrays (its documents, terms and hash table, measured) and what a spill
 * allocates per term, at BYTES_PER_HELD_POSTING each (tuplesort likewise
 * counts what it holds against work_mem)
 */
static void
update_spill_at(GpuirBuilder *b)
{
	/* the arrays BYTES_PER_HELD_POSTING and BYTES_PER_SPILL_TERM stand for */
	Size		held = (Size) b->p_cap * 3 * sizeof(uint32) +
		(Size) b->s_post_cap * sizeof(GpuirPosting) +
		(Size) b->s_term_cap * BYTES_PER_SPILL_TERM;
	Size		other = MemoryContextMemAllocated(b->cxt, true);
	Size		budget;

	if (b->mem_limit == 0)
	{
		b->spill_at = 0;
		return;
	}
	/* a spill's per-term arrays: those it has (grown by doubling), or will need */
	other = (other > held ? other - held : 0) +
		(Size) Max(b->nterms, b->s_term_cap) * BYTES_PER_SPILL_TERM;
	budget = b->mem_limit > other ? b->mem_limit - other : 0;
	budget = Max(budget, b->mem_limit / MIN_HELD_SHARE);
	b->spill_at = Max(budget / BYTES_PER_HELD_POSTING, 1024);
}

/* GpuirBuilderRuns: how many sorted runs went to temporary files so far */
int
GpuirBuilderRuns(GpuirBuilder *b)
{
	return b->nruns;
}

void
GpuirBuilderFree(GpuirBuilder *b)
{
	for (int r = 0; r < b->nruns; r++)
		if (b->runs[r] != NULL)
			BufFileClose(b->runs[r]);
	MemoryContextDelete(b->cxt);
}

uint32
GpuirBuilderNumDocs(GpuirBuilder *b)
{
	return b->ndocs;
}

uint64
GpuirBuilderTotalDl(GpuirBuilder *b)
{
	return b->total_dl;
}

/*
 * GpuirBuilderAddDoc: register a document (heap TID, dl, prior: 0 or as
 * GpuirRowPrior gives it); returns its builder-local index for
 * GpuirBuilderAddPosting.
 */
uint32
GpuirBuilderAddDoc(GpuirBuilder *b, ItemPointer tid, uint32 dl, float4 prior)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	uint64		cap = b->doc_cap;

	if (b->ndocs >= GPUIR_DOC_END - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a gpuir segment holds at most %u documents", GPUIR_DOC_END - 1)));
	b->tids = GpuirGrow(b->tids, sizeof(ItemPointerData), &cap, (uint64) b->ndocs + 1, 0);
	cap = b->doc_cap;
	b->dls = GpuirGrow(b->dls, sizeof(uint32), &cap, (uint64) b->ndocs + 1, 0);
	b->doc_cap = (uint32) Min(cap, PG_UINT32_MAX);
	b->tids[b->ndocs] = *tid;
	b->dls[b->ndocs] = dl;
	b->total_dl += dl;
	if (prior != 0.0f || b->priors != NULL)
	{
		uint64		had = b->priors != NULL ? b->prior_cap : 0;

		/* the first prior other than 0: the documents before it have 0 */
		b->priors = GpuirGrow(b->priors, sizeof(float4), &b->prior_cap,
							  (uint64) b->ndocs + 1, 0);
		if (had == 0)
			memset(b->priors, 0, sizeof(float4) * b->ndocs);
		b->priors[b->ndocs] = prior;
	}
	MemoryContextSwitchTo(old);
	return b->ndocs++;
}

/* GpuirBuilderAddPosting: posting (lexeme, doc, tf) for a registered doc */
void
GpuirBuilderAddPosting(GpuirBuilder *b, const char *lexeme, int len,
					   uint32 doc, uint32 tf)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	LexKey		key = {lexeme, (uint16) len};
	TermEntry  *e;
	bool		found;

	e = termhash_insert(b->terms, key, &found);
	if (!found)
	{
		uint64		cap = b->term_cap;

		e->key.s = lexeme_copy(b, lexeme, len);
		e->key.len = (uint16) len;
		e->termid = b->nterms;
		b->lex = GpuirGrow(b->lex, sizeof(LexKey), &cap, (uint64) b->nterms + 1, 0);
		b->term_cap = (uint32) cap;
		b->lex[b->nterms++] = e->key;
	}
	if (b->np + 1 > b->p_cap)
	{
		uint64		cap = b->p_cap;

		b->p_term = GpuirGrow(b->p_term, sizeof(uint32), &cap, b->np + 1, b->spill_at);
		cap = b->p_cap;
		b->p_doc = GpuirGrow(b->p_doc, sizeof(uint32), &cap, b->np + 1, b->spill_at);
		cap = b->p_cap;
		b->p_tf = GpuirGrow(b->p_tf, sizeof(uint32), &cap, b->np + 1, b->spill_at);
		b->p_cap = cap;
	}
	b->p_term[b->np] = e->termid;
	b->p_doc[b->np] = doc;
	b->p_tf[b->np] = tf;
	b->np++;
	/* documents and terms grow as postings come: they leave less room */
	if (b->spill_at > 0 && (b->np % LIMIT_CHECK_EVERY) == 0)
		update_spill_at(b);
	if (b->spill_at > 0 && b->np >= b->spill_at)
		spill_run(b);
	MemoryContextSwitchTo(old);
}

/* GpuirBuilderAddTerms: a tokenized document with all its postings */
void
GpuirBuilderAddTerms(GpuirBuilder *b, ItemPointer tid, const GpuirDocTerms *doc)
{
	uint32		d;

	if (doc->nterms == 0)
		return;					/* no indexed token: not indexed, not counted */
	d = GpuirBuilderAddDoc(b, tid, doc->dl, doc->prior);
	for (int i = 0; i < doc->nterms; i++)
		GpuirBuilderAddPosting(b, doc->terms[i].lexeme, doc->terms[i].len, d,
							   doc->terms[i].tf);
}

/*
 * Query cancel: the loops of GpuirBuilderWrite below that grow with the
 * number of documents or postings call CHECK_FOR_INTERRUPTS at least once
 * per GPUIR_INTERRUPT_EVERY iterations (or per posting block), and the sorts
 * whose size grows with the data are qsort_interruptible, so that a cancel
 * or statement_timeout ends a CREATE INDEX or merge within milliseconds.
 */
#define GPUIR_INTERRUPT_EVERY	65536

/* sort support: qsort_arg comparators */
static int
doc_tid_cmp(const void *a, const void *b, void *arg)
{
	ItemPointerData *tids = arg;

	return ItemPointerCompare(&tids[*(const uint32 *) a], &tids[*(const uint32 *) b]);
}

static int
term_lex_cmp(const void *a, const void *b, void *arg)
{
	LexKey	   *lex = arg;
	const LexKey *la = &lex[*(const uint32 *) a];
	const LexKey *lb = &lex[*(const uint32 *) b];

	return GpuirLexemeCmp(la->s, la->len, lb->s, lb->len);
}

static int
doctf_cmp(const void *a, const void *b, void *arg)
{
	uint32		da = ((const GpuirPosting *) a)->doc;
	uint32		db = ((const GpuirPosting *) b)->doc;

	return (da > db) - (da < db);
}

static void
stream_too_large(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("gpuir segment stream exceeds 4 GB"),
			 errhint("Split the table or index fewer rows per index.")));
}

static void
check_stream_size(ByteBuf *bb)
{
	if (bb_size(bb) >= PG_UINT32_MAX)
		stream_too_large();
}

/*
 * The encoded lists of a segment, or of a range of its lexemes
 * (GpuirLists*, GpuirBuilderWrite): the DICT, LEXEMES, BLOCKDIR and PAYLOAD
 * streams, each in memory or spilled to a file (GpuirListsBegin spills all
 * four; GpuirBuilderWrite the PAYLOAD); offsets in them (lexeme_off,
 * first_block, payload_off) count from the range's start.
 */
struct GpuirLists
{
	ByteBuf		bb[GPUIR_NSTREAMS];
	float4		k1;
	float4		b;
	double		avgdl;
	uint64		ndocs;			/* GpuirListsMergeDocs's documents */
	float4		prior_max;		/* their largest prior (0: no PRIORS stream) */
	GpuirListsInfo info;
};

/* the segment streams of GpuirListsBegin's files, in their order */
static const int lists_stream[GPUIR_LISTS_NSTREAMS] = {
	GPUIR_S_DICT, GPUIR_S_LEXEMES, GPUIR_S_BLOCKDIR, GPUIR_S_PAYLOAD
};

/*
 * encode_list: encode the postings of lexeme lk (docIDs ascending) as ls's
 * next term with the list encoder (gpuirlist.h): either list[0..n) with the
 * dl of docID d at dl_by_docid[d], or listdl[0..n) with their own dl;
 * docID d is written as d - doc_base (doc_base: the segment's first
 * document among those the docIDs number).  Raises 54000 past a stream's 4
 * GB and ERRCODE_INDEX_CORRUPTED for a docID twice in a list (a corrupt
 * merge input).
 */
static void
encode_list(GpuirLists *ls, Relation index, const LexKey *lk, const GpuirPosting *list,
			const uint32 *dl_by_docid, uint32 doc_base, const GpuirPostingDl *listdl, uint64 n)
{
	GpuirDictEntry de;
	GpuirListEncoder enc;
	ByteBuf    *bb = ls->bb;

	if (ls->info.nterms == PG_UINT32_MAX - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a gpuir segment holds at most %u terms", PG_UINT32_MAX - 1)));
	memset(&de, 0, sizeof(de));
	de.lexeme_off = (uint32) bb_size(&bb[GPUIR_S_LEXEMES]);
	de.lexeme_len = lk->len;
	de.first_block = ls->info.nblocks;
	bb_append(&bb[GPUIR_S_LEXEMES], lk->s, lk->len);

	GpuirListEncoderInit(&enc, ls->k1, ls->b, ls->avgdl, (uint32) bb_size(&bb[GPUIR_S_PAYLOAD]));
	for (uint64 i = 0; i < n; i += GPUIR_BLOCK_SIZE)
	{
		int			cnt = (int) Min(GPUIR_BLOCK_SIZE, n - i);
		uint32		docs[GPUIR_BLOCK_SIZE];
		uint32		tfs[GPUIR_BLOCK_SIZE];
		uint32		dls[GPUIR_BLOCK_SIZE];
		uint8		out[GPUIR_BLOCK_MAX_BYTES];
		uint32		prev PG_USED_FOR_ASSERTS_ONLY = enc.prev_docid;
		GpuirBlockHeader bh;
		size_t		len;

		CHECK_FOR_INTERRUPTS();
		if (listdl)
			for (int j = 0; j < cnt; j++)
			{
				docs[j] = listdl[i + j].doc - doc_base;
				tfs[j] = listdl[i + j].tf;
				dls[j] = listdl[i + j].dl;
			}
		else
			for (int j = 0; j < cnt; j++)
			{
				docs[j] = list[i + j].doc - doc_base;
				tfs[j] = list[i + j].tf;
				dls[j] = dl_by_docid[list[i + j].doc];
			}
		len = GpuirListEncodeBlock(&enc, docs, tfs, dls, cnt, &bh, out);
		if (len == 0)
		{
			/* the payload stream's 4 GB, else a docID twice (a corrupt merge input) */
			if (bb_size(&bb[GPUIR_S_PAYLOAD]) + GPUIR_BLOCK_MAX_BYTES > PG_UINT32_MAX)
				stream_too_large();
			GpuirCorrupt(index, "a posting list has a duplicate docID");
		}
		/* GIN-style self-check: what was written decodes to what was given */
		Assert(GpuirListCheckEncoded(out, len, prev, &bh, docs, tfs, dls, cnt) == NULL);
		bb_append(&bb[GPUIR_S_PAYLOAD], out, len);
		bb_append(&bb[GPUIR_S_BLOCKDIR], &bh, sizeof(bh));
		ls->info.nblocks++;
	}
	GpuirListEncoderFinish(&enc, &de);
	check_stream_size(&bb[GPUIR_S_PAYLOAD]);
	bb_append(&bb[GPUIR_S_DICT], &de, sizeof(de));
	for (int k = 0; k < GPUIR_LISTS_NSTREAMS; k++)
		bb_flush(&bb[lists_stream[k]], false);
	ls->info.npostings += n;
	ls->info.nterms++;
}

/*
 * encode_pieces: encode_list of lexeme lk's postings (list with
 * dl_by_docid, or listdl; docIDs ascending, numbered across the pieces)
 * into ls[r] for each piece r of pieces that holds some of them, rebased to
 * the piece's first document; a piece without any gets no entry.
 */
static void
encode_pieces(GpuirLists **ls, const GpuirPieces *pieces, Relation index, const LexKey *lk,
			  const GpuirPosting *list, const uint32 *dl_by_docid,
			  const GpuirPostingDl *listdl, uint64 n)
{
	uint64		i = 0;

	for (int r = 0; r < pieces->n && i < n; r++)
	{
		uint64		j = i;

		while (j < n && (list ? list[j].doc : listdl[j].doc) < pieces->first[r + 1])
			j++;
		if (j > i)
			encode_list(ls[r], index, lk, list ? list + i : NULL, dl_by_docid, pieces->first[r],
						listdl ? listdl + i : NULL, j - i);
		i = j;
	}
}

/*
 * spill_run: write the postings held as one sorted run to a temporary file
 * of its own (the terms present, in dictionary order: a RunChunk each, then
 * its postings in arrival order, builder doc indexes; RUN_END last), then
 * hold none.  Runs thus list every term in the order GpuirBuilderWrite
 * encodes them, and each is read once, front to back.
 */
static void
spill_run(GpuirBuilder *b)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	uint64	   *count;
	uint64	   *at;
	uint32	   *present;
	uint32		npresent = 0;
	GpuirPosting *post;
	BufFile    *f;
	RunChunk	end = {RUN_END, 0};
	uint64		off = 0;

	/* the scratch, grown when terms or postings outgrow it (its contents are not kept) */
	if (b->nterms > b->s_term_cap)
	{
		uint64		cap = b->s_term_cap;

		b->s_count = GpuirGrow(b->s_count, sizeof(uint64), &cap, b->nterms, 0);
		cap = b->s_term_cap;
		b->s_at = GpuirGrow(b->s_at, sizeof(uint64), &cap, b->nterms, 0);
		cap = b->s_term_cap;
		b->s_present = GpuirGrow(b->s_present, sizeof(uint32), &cap, b->nterms, 0);
		b->s_term_cap = cap;
	}
	if (b->np > b->s_post_cap)
	{
		if (b->s_post != NULL)
			pfree(b->s_post);
		b->s_post = palloc_extended(sizeof(GpuirPosting) * b->np, MCXT_ALLOC_HUGE);
		b->s_post_cap = b->np;
	}
	count = b->s_count;
	at = b->s_at;
	present = b->s_present;
	post = b->s_post;
	memset(count, 0, sizeof(uint64) * b->nterms);
	for (uint64 i = 0; i < b->np; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		count[b->p_term[i]]++;
	}
	for (uint32 t = 0; t < b->nterms; t++)
		if (count[t] > 0)
			present[npresent++] = t;
	qsort_interruptible(present, npresent, sizeof(uint32), term_lex_cmp, b->lex);
	for (uint32 i = 0; i < npresent; i++)
	{
		at[present[i]] = off;
		off += count[present[i]];
	}
	/* a stable counting sort by term: each term's postings stay in arrival order */
	for (uint64 i = 0; i < b->np; i++)
	{
		uint64		k = at[b->p_term[i]]++;

		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		post[k].doc = b->p_doc[i];
		post[k].tf = b->p_tf[i];
	}

	if (b->nruns == 0)
		PrepareTempTablespaces();	/* temp_tablespaces, as tuplesort does */
	f = BufFileCreateTemp(false);
	off = 0;
	for (uint32 i = 0; i < npresent; i++)
	{
		RunChunk	ch = {present[i], (uint32) count[present[i]]};

		CHECK_FOR_INTERRUPTS();
		gpuir_buffile_write(f, &ch, sizeof(ch));
		gpuir_buffile_write(f, post + off, sizeof(GpuirPosting) * ch.count);
		off += ch.count;
	}
	gpuir_buffile_write(f, &end, sizeof(end));
	if (BufFileSeek(f, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind a temporary file of the gpuir segment builder")));
	if (b->nruns == b->runs_cap)
	{
		b->runs_cap = Max(b->runs_cap * 2, 8);
		b->runs = b->runs ? repalloc(b->runs, sizeof(BufFile *) * b->runs_cap)
			: palloc(sizeof(BufFile *) * b->runs_cap);
	}
	b->runs[b->nruns++] = f;
	b->np = 0;
	/*
	 * arrays larger than the documents and terms now leave room for: cut to
	 * size in place (the documents and terms only grow, so this happens at
	 * most spills, a little each time: freeing and growing them again would
	 * copy them every time)
	 */
	update_spill_at(b);
	if (b->p_cap > b->spill_at)
	{
		b->p_term = repalloc_huge(b->p_term, sizeof(uint32) * b->spill_at);
		b->p_doc = repalloc_huge(b->p_doc, sizeof(uint32) * b->spill_at);
		b->p_tf = repalloc_huge(b->p_tf, sizeof(uint32) * b->spill_at);
		b->p_cap = b->spill_at;
	}
	if (b->s_post_cap > b->spill_at)
	{
		b->s_post = repalloc_huge(b->s_post, sizeof(GpuirPosting) * b->spill_at);
		b->s_post_cap = b->spill_at;
	}
	/* the arrays are filled again from the start: until then their pages need not stay */
	if (b->drop_between_runs)
	{
		drop_pages(b->p_term, sizeof(uint32) * b->p_cap);
		drop_pages(b->p_doc, sizeof(uint32) * b->p_cap);
		drop_pages(b->p_tf, sizeof(uint32) * b->p_cap);
		drop_pages(b->s_post, sizeof(GpuirPosting) * b->s_post_cap);
	}
	MemoryContextSwitchTo(old);
}

/* rows of pages that write_stream writes per read of its temporary file */
#define WRITE_CHUNK_BYTES	(64 * GPUIR_PAGE_DATA)

/*
 * write_stream: bb's bytes to the pages of extents e (GpuirWriteStreamPages);
 * a stream spilled to a temporary file is read back and written in pieces
 * of whole pages.
 */
static GpuirStream
write_stream(Relation index, ByteBuf *bb, uint32 tag, const GpuirStreamExtents *e)
{
	GpuirStream s;
	char	   *chunk;
	uint64		total;

	if (bb->spill == NULL)
	{
		GpuirWriteStreamPages(index, bb->data, (uint32) bb->len, tag, e, 0);
		s.start = bb->len > 0 ? e->ext[0].start : InvalidBlockNumber;
		s.nbytes = (uint32) bb->len;
		return s;
	}
	bb_flush(bb, true);
	total = bb->flushed;
	if (BufFileSeek(bb->spill, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind a temporary file of the gpuir segment builder")));
	chunk = palloc(WRITE_CHUNK_BYTES);
	for (uint64 done = 0; done < total; done += WRITE_CHUNK_BYTES)
	{
		uint32		n = (uint32) Min(WRITE_CHUNK_BYTES, total - done);

		gpuir_buffile_read(bb->spill, chunk, n);
		GpuirWriteStreamPages(index, chunk, n, tag, e, done / GPUIR_PAGE_DATA);
	}
	pfree(chunk);
	BufFileClose(bb->spill);
	bb->spill = NULL;
	s.start = total > 0 ? e->ext[0].start : InvalidBlockNumber;
	s.nbytes = (uint32) total;
	return s;
}

/* free_held: drop the arrays of the postings held (in arrival order) and spill_run's scratch */
static void
free_held(GpuirBuilder *b)
{
	if (b->p_term != NULL)
	{
		pfree(b->p_term);
		pfree(b->p_doc);
		pfree(b->p_tf);
	}
	b->p_term = b->p_doc = b->p_tf = NULL;
	b->p_cap = 0;
	if (b->s_count != NULL)
	{
		pfree(b->s_count);
		pfree(b->s_at);
		pfree(b->s_present);
	}
	b->s_count = b->s_at = NULL;
	b->s_present = NULL;
	b->s_term_cap = 0;
	if (b->s_post != NULL)
		pfree(b->s_post);
	b->s_post = NULL;
	b->s_post_cap = 0;
}

/* tid_twice: raise ERRCODE_INDEX_CORRUPTED for a TID that is indexed twice */
static void
tid_twice(Relation index, const ItemPointerData *tid)
{
	GpuirCorrupt(index, psprintf("heap TID (%u,%u) is indexed twice",
								 ItemPointerGetBlockNumberNoCheck(tid),
								 ItemPointerGetOffsetNumberNoCheck(tid)));
}

/*
 * order_docs: docIDs in heap TID order (b->docorder, b->newdoc), so that
 * ties broken by docID are ties broken by TID.  A heap scan never gives a
 * TID twice, nor do the live entries of a sound index (VACUUM marks a TID's
 * entry before the heap reuses it): for a merge, a duplicate means a corrupt
 * index.
 */
static void
order_docs(GpuirBuilder *b, Relation index)
{
	b->docorder = palloc_extended(sizeof(uint32) * Max(b->ndocs, 1), MCXT_ALLOC_HUGE);
	b->newdoc = palloc_extended(sizeof(uint32) * Max(b->ndocs, 1), MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < b->ndocs; i++)
		b->docorder[i] = i;
	qsort_interruptible(b->docorder, b->ndocs, sizeof(uint32), doc_tid_cmp, b->tids);
	for (uint32 i = 0; i < b->ndocs; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		b->newdoc[b->docorder[i]] = i;
		if (i > 0 && ItemPointerCompare(&b->tids[b->docorder[i]], &b->tids[b->docorder[i - 1]]) == 0)
			tid_twice(index, &b->tids[b->docorder[i]]);
	}
}

/* order_terms: the dictionary order of the terms (b->termorder, b->newterm) */
static void
order_terms(GpuirBuilder *b)
{
	b->termorder = palloc_extended(sizeof(uint32) * Max(b->nterms, 1), MCXT_ALLOC_HUGE);
	b->newterm = palloc_extended(sizeof(uint32) * Max(b->nterms, 1), MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < b->nterms; i++)
		b->termorder[i] = i;
	qsort_interruptible(b->termorder, b->nterms, sizeof(uint32), term_lex_cmp, b->lex);
	for (uint32 i = 0; i < b->nterms; i++)
		b->newterm[b->termorder[i]] = i;
}

/*
 * held_by_term: sort the postings held in memory (no run was spilled) by
 * term, with a counting sort, into it->post / it->start, each list in docID
 * order where the documents' postings arrived together; frees the
 * arrival-order arrays.
 */
static void
held_by_term(GpuirBuilder *b)
{
	ListIter   *it = &b->it;
	uint64	   *start;
	GpuirPosting *post;
	uint64	   *fill;
	bool		by_doc = true;	/* postings arrived grouped by builder doc, ascending */

	start = palloc_extended(sizeof(uint64) * ((uint64) b->nterms + 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (uint64 i = 0; i < b->np; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		start[b->newterm[b->p_term[i]] + 1]++;
		if (i > 0 && b->p_doc[i] < b->p_doc[i - 1])
			by_doc = false;
	}
	for (uint32 t = 0; t < b->nterms; t++)
		start[t + 1] += start[t];
	post = palloc_extended(sizeof(GpuirPosting) * Max(b->np, 1), MCXT_ALLOC_HUGE);
	fill = palloc_extended(sizeof(uint64) * Max(b->nterms, 1), MCXT_ALLOC_HUGE);
	memcpy(fill, start, sizeof(uint64) * b->nterms);
	if (by_doc)
	{
		/*
		 * Each document's postings arrived together (CREATE INDEX, the
		 * insert buffer): taking the documents in docID order fills every
		 * list in docID order, sorted as it is written, whatever order the
		 * documents arrived in.
		 */
		uint64	   *dstart = palloc_extended(sizeof(uint64) * ((uint64) b->ndocs + 1),
											 MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
		uint64		since_check = 0;

		for (uint64 i = 0; i < b->np; i++)
		{
			if ((i % GPUIR_INTERRUPT_EVERY) == 0)
				CHECK_FOR_INTERRUPTS();
			dstart[b->p_doc[i] + 1]++;
		}
		for (uint32 d = 0; d < b->ndocs; d++)
			dstart[d + 1] += dstart[d];
		for (uint32 i = 0; i < b->ndocs; i++)
		{
			uint32		d = b->docorder[i];

			/* every GPUIR_INTERRUPT_EVERY postings: a long document counts its length */
			since_check += dstart[d + 1] - dstart[d] + 1;
			if (since_check >= GPUIR_INTERRUPT_EVERY)
			{
				CHECK_FOR_INTERRUPTS();
				since_check = 0;
			}
			for (uint64 p = dstart[d]; p < dstart[d + 1]; p++)
			{
				uint64		at = fill[b->newterm[b->p_term[p]]]++;

				post[at].doc = i;
				post[at].tf = b->p_tf[p];
			}
		}
		pfree(dstart);
	}
	else
	{
		/* in arrival order: list_next sorts each list that needs it */
		for (uint64 i = 0; i < b->np; i++)
		{
			uint64		at = fill[b->newterm[b->p_term[i]]]++;

			if ((i % GPUIR_INTERRUPT_EVERY) == 0)
				CHECK_FOR_INTERRUPTS();
			post[at].doc = b->newdoc[b->p_doc[i]];
			post[at].tf = b->p_tf[i];
		}
	}
	pfree(fill);
	/* the arrival-order postings are no longer needed */
	free_held(b);
	it->start = start;
	it->post = post;
}

/*
 * spill_held: with sorted runs, the postings held go to one more run and
 * their arrays are freed before the documents are ordered, so that the
 * ordering's arrays (8 bytes a document, 10 more for an export) never sit
 * beside a full memory limit of postings
 */
static void
spill_held(GpuirBuilder *b)
{
	if (b->nruns == 0)
		return;
	if (b->np > 0)
		spill_run(b);
	free_held(b);
	release_freed();
}

/* list_begin: the lists from the first term on (spill_held, order_docs, order_terms done) */
static void
list_begin(GpuirBuilder *b)
{
	ListIter   *it = &b->it;

	memset(it, 0, sizeof(ListIter));
	if (b->nruns == 0)
	{
		held_by_term(b);
		return;
	}
	/* spill_held, before the documents were ordered, wrote the last run */
	Assert(b->np == 0 && b->p_term == NULL);
	it->head = palloc(sizeof(RunChunk) * b->nruns);
	for (int r = 0; r < b->nruns; r++)
		gpuir_buffile_read(b->runs[r], &it->head[r], sizeof(RunChunk));
}

/*
 * list_next: the next term's lexeme and postings (new docIDs, ascending),
 * valid until the next call; false after the last term.
 */
static bool
list_next(GpuirBuilder *b, const LexKey **lk, GpuirPosting **list, uint64 *n)
{
	ListIter   *it = &b->it;
	uint32		t = it->t;
	GpuirPosting *l;
	uint64		cnt = 0;
	bool		sorted = true;

	if (t >= b->nterms)
		return false;
	it->t++;
	*lk = &b->lex[b->termorder[t]];
	if (b->nruns == 0)
	{
		l = it->post + it->start[t];
		cnt = it->start[t + 1] - it->start[t];
	}
	else
	{
		/* the term's chunks, in run order: arrival order */
		for (int r = 0; r < b->nruns; r++)
		{
			if (it->head[r].termid != b->termorder[t])
				continue;
			it->list = GpuirGrow(it->list, sizeof(GpuirPosting), &it->cap,
								 cnt + it->head[r].count, 0);
			gpuir_buffile_read(b->runs[r], it->list + cnt, sizeof(GpuirPosting) * it->head[r].count);
			cnt += it->head[r].count;
			gpuir_buffile_read(b->runs[r], &it->head[r], sizeof(RunChunk));
		}
		l = it->list;
		for (uint64 i = 0; i < cnt; i++)
		{
			if ((i % GPUIR_INTERRUPT_EVERY) == 0)
				CHECK_FOR_INTERRUPTS();
			l[i].doc = b->newdoc[l[i].doc];
		}
	}
	/* out of docID order when postings did not arrive by document (merges) */
	for (uint64 i = 1; i < cnt && sorted; i++)
		sorted = l[i - 1].doc < l[i].doc;
	if (!sorted)
		qsort_interruptible(l, cnt, sizeof(GpuirPosting), doctf_cmp, NULL);
	*list = l;
	*n = cnt;
	return true;
}

/* list_end: after the last term; checks and closes the runs */
static void
list_end(GpuirBuilder *b)
{
	ListIter   *it = &b->it;

	for (int r = 0; r < b->nruns; r++)
	{
		if (it->head[r].termid != RUN_END)
			elog(ERROR, "gpuir segment builder: sorted run %d holds a term past the dictionary", r);
		BufFileClose(b->runs[r]);
		b->runs[r] = NULL;
	}
	if (it->list)
		pfree(it->list);
	if (it->head)
		pfree(it->head);
	if (it->start)
		pfree(it->start);
	if (it->post)
		pfree(it->post);
	memset(it, 0, sizeof(ListIter));
}

/*
 * write_segment: the segment's last streams (an all-clear deleted bitmap)
 * and its pages, tagged with generation: the streams bb[] follow each other
 * in one run of pages, the smallest reusable extent of the free space map
 * fl that holds them all (fl NULL: new pages); when none does, each
 * stream, the largest first, takes the smallest reusable extent that holds
 * it, else pieces of reusable extents and, for what they cannot hold, pages
 * at the end (GpuirFreeListAllocateExtents); a segment with a stream in
 * pieces gets a map page (src/README, "Segment maps").  Measured under a
 * 16-client soak (2-core machine, max_segment_docs 66000): placing
 * segments only whole left 36% of the index's pages free in holes smaller
 * than the segments while each rewrite extended the file
 * (bench/results/2026-11-27-cpu-2core-soak30-capped.md).  Compaction
 * (gpuircompact.c) moves streams down one by one.  Fills *seg; reports its
 * phase and pages when on.
 */
static void
write_segment(Relation index, uint64 generation, GpuirFreeList *fl, ByteBuf *bb,
			  uint32 ndocs, uint32 nterms, uint32 nblocks, uint64 npostings, bool on,
			  GpuirSegmentData *seg)
{
	uint64		npages = 0;
	uint64		written = 0;
	uint64		nbitmap = ((uint64) ndocs + 7) / 8;
	char	   *zeros = palloc_extended(Max(nbitmap, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	BlockNumber at;
	GpuirSegmentLayout lay;		/* n = 0: placed at the end when written */
	bool		pieces = false;

	bb_append(&bb[GPUIR_S_DELETED], zeros, nbitmap);
	pfree(zeros);
	memset(seg, 0, sizeof(GpuirSegmentData));
	seg->ndocs = ndocs;
	seg->nterms = nterms;
	seg->nblocks = nblocks;
	seg->npostings = npostings;
	seg->generation = generation;
	for (int s = 0; s < GPUIR_NSTREAMS; s++)
	{
		check_stream_size(&bb[s]);
		npages += GpuirPagesFor(bb_size(&bb[s]));
	}
	/*
	 * One run of pages for the whole segment (8 streams of at most 4 GB): a
	 * reusable extent that holds it, or new pages (a new index); else each
	 * stream its own (below), so that holes smaller than the segment are used
	 * rather than the index extended by the whole segment.
	 */
	Assert(npages <= PG_UINT32_MAX);
	at = npages == 0 ? InvalidBlockNumber
		: fl != NULL ? GpuirFreeListTakeBestFit(fl, (uint32) npages)
		: GpuirFreeListAllocate(NULL, index, (uint32) npages);
	/*
	 * Else the streams take the smallest reusable extent that holds them,
	 * or pieces of reusable extents (GpuirFreeListAllocateExtents), the
	 * largest stream first, so that the small ones do not cut up the holes
	 * the payload needs; what they cannot hold goes at the end, the last
	 * extent of a stream in pieces, a whole stream in stream order below.
	 */
	lay.map = 0;
	for (int s = 0; s < GPUIR_NSTREAMS; s++)
		lay.streams[s].n = 0;
	if (BlockNumberIsValid(at))
	{
		for (int s = 0; s < GPUIR_NSTREAMS; s++)
		{
			uint64		pages = GpuirPagesFor(bb_size(&bb[s]));

			lay.streams[s].n = pages > 0 ? 1 : 0;
			lay.streams[s].ext[0].start = at;
			lay.streams[s].ext[0].npages = (uint32) pages;
			at += pages;
		}
	}
	else if (fl != NULL)
	{
		bool		placed[GPUIR_NSTREAMS] = {false};

		for (int i = 0; i < GPUIR_NSTREAMS; i++)
		{
			int			largest = -1;
			uint32		pages;
			GpuirStreamExtents *e;

			for (int s = 0; s < GPUIR_NSTREAMS; s++)
				if (!placed[s] && (largest < 0 || bb_size(&bb[s]) > bb_size(&bb[largest])))
					largest = s;
			placed[largest] = true;
			pages = (uint32) GpuirPagesFor(bb_size(&bb[largest]));
			e = &lay.streams[largest];
			if (pages > 0)
				(void) GpuirFreeListAllocateExtents(fl, index, pages, false, InvalidBlockNumber,
													true, e);
			pieces |= e->n > 1;
		}
		if (pieces)
		{
			GpuirStreamExtents m;

			(void) GpuirFreeListAllocateExtents(fl, index, 1, false, InvalidBlockNumber, true, &m);
			lay.map = m.ext[0].start;
		}
	}
	report(on, PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_WRITE);
	report(on, PROGRESS_SCAN_BLOCKS_TOTAL, (int64) npages);
	report(on, PROGRESS_SCAN_BLOCKS_DONE, 0);
	for (int s = 0; s < GPUIR_NSTREAMS; s++)
	{
		uint64		pages = GpuirPagesFor(bb_size(&bb[s]));

		if (lay.streams[s].n == 0 && pages > 0)
		{
			lay.streams[s].n = 1;
			lay.streams[s].ext[0].start = GpuirFreeListAllocate(fl, index, (uint32) pages);
			lay.streams[s].ext[0].npages = (uint32) pages;
		}
		seg->streams[s] = write_stream(index, &bb[s], GpuirSegmentTag(generation), &lay.streams[s]);
		written += pages;
		report(on, PROGRESS_SCAN_BLOCKS_DONE, (int64) written);
		if (bb[s].data)
			pfree(bb[s].data);
	}
	if (lay.map != 0)
		GpuirWriteSegmentMap(index, seg, &lay, lay.map, NULL);
}

/*
 * GpuirPiecesInit: the cut of ndocs documents into segments of at most
 * max_docs each (0: no cap) and at most max_pieces (at least 1):
 * ceil(ndocs / max_docs) ranges, clamped, of about equal size, or with fill
 * of max_docs each but the last (gpuir_merge_pieces, gpuirmergepolicy.h,
 * which says why merges cut so); each holds a document when ndocs > 0.
 */
void
GpuirPiecesInit(GpuirPieces *p, uint64 ndocs, uint32 max_docs, int max_pieces, bool fill)
{
	p->n = (int) gpuir_merge_pieces(ndocs, max_docs,
									(uint32) Min(Max(max_pieces, 1), GPUIR_MAX_SEGMENTS),
									fill, p->first);
}

/*
 * append_priors: the PRIORS stream of the segment of docIDs first .. end - 1
 * (to bb; nothing when all their priors are 0); returns their largest prior
 */
static float4
append_priors(GpuirBuilder *b, ByteBuf *bb, uint32 first, uint32 end)
{
	float4		max = 0.0f;

	if (b->priors == NULL)
		return 0.0f;
	for (uint32 i = first; i < end; i++)
		max = Max(max, b->priors[b->docorder[i]]);
	if (max == 0.0f)
		return 0.0f;
	for (uint32 i = first; i < end; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		bb_append(bb, &b->priors[b->docorder[i]], sizeof(float4));
	}
	return max;
}

/*
 * GpuirBuilderWrite: encode everything collected and write it as new
 * segments of index (write_segment: one run of pages each, from fl):
 * GpuirPiecesInit(documents, max_docs, max_pieces, fill) of them, each a
 * range of the documents in heap TID order, the r-th with
 * generation generation + r; fills segs[0 ..] and returns how many (0 when
 * the builder holds no document).  DocIDs are assigned in heap TID order,
 * so ties broken by docID are ties broken by TID, within a segment and
 * (every segment holding a TID range) across them.  Raises 54000 when a
 * stream would exceed 4 GB.
 */
int
GpuirBuilderWrite(GpuirBuilder *b, Relation index, uint64 generation,
				  float4 k1, float4 bparam, GpuirFreeList *fl,
				  uint32 max_docs, int max_pieces, bool fill, GpuirSegmentData *segs)
{
	MemoryContext old;
	GpuirLists *ls;
	GpuirLists *lsp[GPUIR_MAX_SEGMENTS];	/* &ls[r], as encode_pieces takes them */
	uint32	   *dl_by_docid;
	GpuirPieces p;
	const LexKey *lk;
	GpuirPosting *list;
	uint64		n;
	float4		prior_max;

	if (b->ndocs == 0)
		return 0;
	old = MemoryContextSwitchTo(b->cxt);
	GpuirPiecesInit(&p, b->ndocs, max_docs, max_pieces, fill);
	ls = palloc0(sizeof(GpuirLists) * p.n);
	for (int r = 0; r < p.n; r++)
	{
		ls[r].k1 = k1;
		ls[r].b = bparam;
		/* the whole build's: what a single segment's impacts would use */
		ls[r].avgdl = Max((double) b->total_dl / b->ndocs, 1.0);
		lsp[r] = &ls[r];
	}
	progress(b, PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_SORT);
	spill_held(b);
	order_docs(b, index);
	order_terms(b);

	/* lengths by docID, so that encoding reads each posting's with one lookup */
	dl_by_docid = palloc_extended(sizeof(uint32) * b->ndocs, MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < b->ndocs; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		dl_by_docid[i] = b->dls[b->docorder[i]];
	}

	/* encode the posting lists: held in memory, or read back from the runs */
	if (b->nruns > 0)
		for (int r = 0; r < p.n; r++)
			ls[r].bb[GPUIR_S_PAYLOAD].spill = BufFileCreateTemp(false);
	list_begin(b);
	progress(b, PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_ENCODE);
	progress(b, PROGRESS_CREATEIDX_TUPLES_TOTAL, b->nterms);
	for (uint32 t = 0; list_next(b, &lk, &list, &n); t++)
	{
		CHECK_FOR_INTERRUPTS();
		if ((t % 1024) == 0)
			progress(b, PROGRESS_CREATEIDX_TUPLES_DONE, t);
		encode_pieces(lsp, &p, index, lk, list, dl_by_docid, NULL, n);
	}
	list_end(b);
	pfree(dl_by_docid);

	/* docID -> TID, dl */
	for (int r = 0; r < p.n; r++)
	{
		for (uint32 i = p.first[r]; i < p.first[r + 1]; i++)
		{
			if ((i % GPUIR_INTERRUPT_EVERY) == 0)
				CHECK_FOR_INTERRUPTS();
			bb_append(&ls[r].bb[GPUIR_S_TIDS], &b->tids[b->docorder[i]], sizeof(ItemPointerData));
			bb_append(&ls[r].bb[GPUIR_S_DOCLENS], &b->dls[b->docorder[i]], sizeof(uint32));
		}
		prior_max = append_priors(b, &ls[r].bb[GPUIR_S_PRIORS], p.first[r], p.first[r + 1]);
		write_segment(index, generation + r, fl, ls[r].bb, p.first[r + 1] - p.first[r],
					  ls[r].info.nterms, ls[r].info.nblocks, ls[r].info.npostings,
					  b->progress, &segs[r]);
		segs[r].prior_max = prior_max;
	}
	pfree(ls);
	MemoryContextSwitchTo(old);
	return p.n;
}

/*
 * GpuirBuilderExportBegin: what the builder collected, in the order of a
 * segment, for a parallel build (each participant's export): returns the
 * number of documents and sets *tids, *dls and *priors to them in heap TID
 * order (their docIDs are their positions; palloc'd copies, the caller's to
 * free; *priors NULL when every prior is 0).  GpuirBuilderExportNext then gives each term's list in dictionary
 * order, and GpuirBuilderExportEnd ends.  Raises
 * ERRCODE_INDEX_CORRUPTED for a TID added twice.
 */
uint32
GpuirBuilderExportBegin(GpuirBuilder *b, Relation index, ItemPointerData **tids, uint32 **dls,
						float4 **priors)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	ItemPointerData *t;
	uint32	   *d;
	float4	   *p = NULL;

	spill_held(b);
	t = palloc_extended(sizeof(ItemPointerData) * Max(b->ndocs, 1), MCXT_ALLOC_HUGE);
	d = palloc_extended(sizeof(uint32) * Max(b->ndocs, 1), MCXT_ALLOC_HUGE);
	if (b->priors != NULL)
		p = palloc_extended(sizeof(float4) * Max(b->ndocs, 1), MCXT_ALLOC_HUGE);
	order_docs(b, index);
	order_terms(b);
	for (uint32 i = 0; i < b->ndocs; i++)
	{
		t[i] = b->tids[b->docorder[i]];
		d[i] = b->dls[b->docorder[i]];
		if (p != NULL)
			p[i] = b->priors[b->docorder[i]];
	}
	list_begin(b);
	MemoryContextSwitchTo(old);
	*tids = t;
	*dls = d;
	*priors = p;
	return b->ndocs;
}

/*
 * GpuirBuilderExportNext: the next term in dictionary order: its lexeme
 * (len bytes) and its postings (docIDs the positions of
 * GpuirBuilderExportBegin's arrays, ascending), valid until the next call;
 * false after the last term.
 */
bool
GpuirBuilderExportNext(GpuirBuilder *b, const char **lexeme, uint16 *len,
					   GpuirPosting **list, uint64 *n)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	const LexKey *lk;
	bool		more = list_next(b, &lk, list, n);

	MemoryContextSwitchTo(old);
	if (more)
	{
		*lexeme = lk->s;
		*len = lk->len;
	}
	return more;
}

/* GpuirBuilderExportEnd: after GpuirBuilderExportNext's last term */
void
GpuirBuilderExportEnd(GpuirBuilder *b)
{
	list_end(b);
}

/* GpuirBuilderNumTerms: the distinct lexemes collected */
uint32
GpuirBuilderNumTerms(GpuirBuilder *b)
{
	return b->nterms;
}

/* tid_less: a < b */
static inline bool
tid_less(const ItemPointerData *a, const ItemPointerData *b)
{
	return ItemPointerCompare((ItemPointer) a, (ItemPointer) b) < 0;
}

/* a GpuirDocSource being read by GpuirListsMergeDocs: its current chunk, its map buffer */
typedef struct DocCursor
{
	const ItemPointerData *tids;
	const uint32 *dls;
	const float4 *priors;		/* NULL: the chunk's priors are 0 */
	uint32		n;
	uint32		pos;
	bool		done;
	uint32	   *map;			/* segment docIDs of its documents, not yet given */
	uint32		nmap;
} DocCursor;

#define MAP_CHUNK	65536

/* cursor_ready: the cursor's next document is at pos (a new chunk read if needed); false at the end */
static bool
cursor_ready(GpuirDocSource *src, DocCursor *c)
{
	while (!c->done && c->pos == c->n)
	{
		c->n = src->next(src->arg, &c->tids, &c->dls, &c->priors);
		c->pos = 0;
		c->done = c->n == 0;
	}
	return !c->done;
}

static void
cursor_map_flush(GpuirDocSource *src, DocCursor *c)
{
	if (c->nmap > 0)
		src->map(src->arg, c->map, c->nmap);
	c->nmap = 0;
}

/*
 * merge_priors: the priors of n documents (p NULL: all 0) appended to ls's
 * PRIORS stream, its prior_max raised; a prior that is negative, not finite
 * or past real's range (GpuirRowPrior lets none through) is an internal
 * error
 */
static void
merge_priors(GpuirLists *ls, const float4 *p, uint64 n)
{
	static const float4 zeros[256];
	ByteBuf    *bb = &ls->bb[GPUIR_S_PRIORS];

	if (p == NULL)
	{
		for (uint64 i = 0; i < n; i += lengthof(zeros))
			bb_append(bb, zeros, sizeof(float4) * Min(n - i, lengthof(zeros)));
	}
	else
	{
		for (uint64 i = 0; i < n; i++)
		{
			if (!GpuirPriorValid(p[i]))
				elog(ERROR, "gpuir build: a document prior of %g", (double) p[i]);
			ls->prior_max = Max(ls->prior_max, p[i]);
		}
		bb_append(bb, p, sizeof(float4) * n);
	}
	bb_flush(bb, false);
}

/*
 * GpuirListsMergeDocs: the documents of nsrc sources (builder exports,
 * each in heap TID order), merged by TID into the segment's docIDs and
 * written to the TIDS and DOCLENS streams of ls[r], r the piece of pieces
 * that holds them, and with with_priors (an index with a prior column) to
 * its PRIORS stream, left empty for a piece whose priors are all 0, and
 * ls[r]'s prior_max (in temporary files: memory does not grow with the
 * documents; pieces cuts the sources' documents, the sum of their ndocs);
 * each source's map callback receives the docIDs of its documents in its
 * order, numbered across the pieces (GpuirListsMerge rebases them).  Sets
 * every piece's avgdl (the whole's) and *sum_dl, and returns the number of
 * documents.  A parallel scan hands each participant ranges of blocks, so a
 * source's documents come in runs: each run is copied whole (cut where a
 * piece ends).  Raises ERRCODE_INDEX_CORRUPTED for a TID in two
 * sources and 54000 past GPUIR_DOC_END - 1 documents.
 */
uint64
GpuirListsMergeDocs(GpuirLists **ls, const GpuirPieces *pieces, Relation index,
					GpuirDocSource *src, int nsrc, bool with_priors, uint64 *sum_dl)
{
	DocCursor  *c = palloc0(sizeof(DocCursor) * nsrc);
	int			piece = 0;
	double		avgdl;
	uint64		ndocs = 0;
	uint64		o = 0;
	uint64		total = 0;
	ItemPointerData last;

	for (int s = 0; s < nsrc; s++)
	{
		ndocs += src[s].ndocs;
		c[s].map = palloc(sizeof(uint32) * MAP_CHUNK);
	}
	if (ndocs > GPUIR_DOC_END - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a gpuir segment holds at most %u documents", GPUIR_DOC_END - 1)));
	if (ndocs != pieces->first[pieces->n])
		elog(ERROR, "gpuir: the pieces of a build do not cut its %llu documents",
			 (unsigned long long) ndocs);
	for (int r = 0; r < pieces->n; r++)
	{
		ls[r]->bb[GPUIR_S_TIDS].spill = BufFileCreateTemp(false);
		ls[r]->bb[GPUIR_S_DOCLENS].spill = BufFileCreateTemp(false);
		if (with_priors)
			ls[r]->bb[GPUIR_S_PRIORS].spill = BufFileCreateTemp(false);
		ls[r]->prior_max = 0.0f;
	}
	ItemPointerSetInvalid(&last);

	/*
	 * take from the source with the least next TID while it stays below
	 * every other source's next
	 */
	for (;;)
	{
		int			best = -1;
		ItemPointerData limit;
		bool		have_limit = false;
		DocCursor  *b;
		uint32		start;

		CHECK_FOR_INTERRUPTS();
		for (int s = 0; s < nsrc; s++)
		{
			const ItemPointerData *h;

			if (!cursor_ready(&src[s], &c[s]))
				continue;
			h = &c[s].tids[c[s].pos];
			if (best < 0 || tid_less(h, &c[best].tids[c[best].pos]))
			{
				if (best >= 0)
				{
					limit = c[best].tids[c[best].pos];
					have_limit = true;
				}
				best = s;
			}
			else if (!have_limit || tid_less(h, &limit))
			{
				limit = *h;
				have_limit = true;
			}
		}
		if (best < 0)
			break;
		/* the run: best's documents below limit, within its chunk */
		b = &c[best];
		if (o > 0 && !tid_less(&last, &b->tids[b->pos]))
			tid_twice(index, &b->tids[b->pos]);
		start = b->pos;
		do
		{
			total += b->dls[b->pos];
			b->map[b->nmap++] = (uint32) o;
			if (b->nmap == MAP_CHUNK)
				cursor_map_flush(&src[best], b);
			o++;
			b->pos++;
		} while (b->pos < b->n && (!have_limit || tid_less(&b->tids[b->pos], &limit)));
		if (o > ndocs)
			elog(ERROR, "gpuir: a source of documents gave more than it announced");
		/* the run's documents o - (pos - start) .. o - 1, piece by piece */
		for (uint64 i = start, d = o - (b->pos - start); i < b->pos;)
		{
			uint64		take;
			ByteBuf    *tb;
			ByteBuf    *db;

			while (d >= pieces->first[piece + 1])
				piece++;
			take = Min(b->pos - i, pieces->first[piece + 1] - d);
			tb = &ls[piece]->bb[GPUIR_S_TIDS];
			db = &ls[piece]->bb[GPUIR_S_DOCLENS];
			bb_append(tb, &b->tids[i], sizeof(ItemPointerData) * take);
			bb_append(db, &b->dls[i], sizeof(uint32) * take);
			bb_flush(tb, false);
			bb_flush(db, false);
			if (with_priors)
				merge_priors(ls[piece], b->priors ? b->priors + i : NULL, take);
			i += take;
			d += take;
		}
		last = b->tids[b->pos - 1];
	}
	if (o != ndocs)
		elog(ERROR, "gpuir: the sources of documents gave %llu of the %llu they announced",
			 (unsigned long long) o, (unsigned long long) ndocs);
	for (int s = 0; s < nsrc; s++)
	{
		cursor_map_flush(&src[s], &c[s]);
		pfree(c[s].map);
	}
	pfree(c);
	avgdl = ndocs > 0 ? Max((double) total / ndocs, 1.0) : 1.0;
	for (int r = 0; r < pieces->n; r++)
	{
		ls[r]->ndocs = pieces->first[r + 1] - pieces->first[r];
		ls[r]->avgdl = avgdl;
		/* every prior 0: no PRIORS stream, as GpuirBuilderWrite writes none */
		if (ls[r]->prior_max == 0.0f)
			bb_reset(&ls[r]->bb[GPUIR_S_PRIORS]);
	}
	*sum_dl = total;
	return ndocs;
}

/*
 * GpuirListsBegin: an empty range of encoded lists, for BM25 parameters k1,
 * b and the segment's avgdl (which the block-max impacts depend on; 0 when
 * GpuirListsMergeDocs will set it, before any list is added).  Its
 * DICT, LEXEMES, BLOCKDIR and PAYLOAD streams go to files[0..3] (files the
 * caller opened for writing and gives away, for GpuirListsSave), or,
 * files NULL, to temporary files: memory does not grow with the lists.
 */
GpuirLists *
GpuirListsBegin(float4 k1, float4 b, double avgdl, BufFile **files)
{
	GpuirLists *ls = palloc0(sizeof(GpuirLists));

	ls->k1 = k1;
	ls->b = b;
	ls->avgdl = avgdl;
	for (int k = 0; k < GPUIR_LISTS_NSTREAMS; k++)
		ls->bb[lists_stream[k]].spill = files ? files[k] : BufFileCreateTemp(false);
	return ls;
}

/* GpuirListsAvgdl: the avgdl the lists are encoded with */
double
GpuirListsAvgdl(GpuirLists *ls)
{
	return ls->avgdl;
}

/* GpuirListsGetInfo: the range's terms, blocks, postings and stream sizes */
const GpuirListsInfo *
GpuirListsGetInfo(GpuirLists *ls)
{
	ls->info.dict_bytes = bb_size(&ls->bb[GPUIR_S_DICT]);
	ls->info.lexeme_bytes = bb_size(&ls->bb[GPUIR_S_LEXEMES]);
	ls->info.blockdir_bytes = bb_size(&ls->bb[GPUIR_S_BLOCKDIR]);
	ls->info.payload_bytes = bb_size(&ls->bb[GPUIR_S_PAYLOAD]);
	return &ls->info;
}

/*
 * GpuirListsMerge: the lists of nsrc sources (each in dictionary order,
 * postings ascending by segment docID; no docID in two sources), merged by
 * lexeme and, for a lexeme in several sources, by docID, and encoded into
 * ls[r] after what it holds, r the piece of pieces that holds the docIDs
 * (rebased to the piece's first).  lists_done, when not NULL, counts the
 * source lists taken (for progress).  Raises ERRCODE_INDEX_CORRUPTED for a docID
 * twice in a list and 54000 past 4 GB a stream.
 */
void
GpuirListsMerge(GpuirLists **ls, const GpuirPieces *pieces, Relation index,
				GpuirListSource *src, int nsrc, pg_atomic_uint64 *lists_done)
{
	bool	   *have = palloc(sizeof(bool) * nsrc);
	const char **lex = palloc(sizeof(char *) * nsrc);
	uint16	   *len = palloc(sizeof(uint16) * nsrc);
	GpuirPostingDl **list = palloc(sizeof(GpuirPostingDl *) * nsrc);
	uint64	   *cnt = palloc(sizeof(uint64) * nsrc);
	int		   *members = palloc(sizeof(int) * nsrc);
	uint64	   *pos = palloc(sizeof(uint64) * nsrc);
	uint32	   *heads = palloc(sizeof(uint32) * nsrc);
	GpuirPostingDl *out = NULL;
	uint64		out_cap = 0;
	uint64		taken = 0;

	for (int s = 0; s < nsrc; s++)
		have[s] = src[s].next(src[s].arg, &lex[s], &len[s], &list[s], &cnt[s]);
	for (;;)
	{
		int			nm = 0;
		uint64		total = 0;
		const GpuirPostingDl *merged;
		LexKey		lk;

		CHECK_FOR_INTERRUPTS();
		/* the sources whose next lexeme is the least */
		for (int s = 0; s < nsrc; s++)
		{
			int			c;

			if (!have[s])
				continue;
			c = nm == 0 ? -1 : GpuirLexemeCmp(lex[s], len[s], lex[members[0]], len[members[0]]);
			if (c < 0)
				nm = 0;
			if (c <= 0)
				members[nm++] = s;
		}
		if (nm == 0)
			break;
		for (int i = 0; i < nm; i++)
			total += cnt[members[i]];
		if (nm == 1)
			merged = list[members[0]];
		else
		{
			/*
			 * k-way, by runs: from the member with the least next docID
			 * while it stays below every other member's next (heads[i] is
			 * member i's, GPUIR_DOC_END once it is used up)
			 */
			uint64		o = 0;

			out = GpuirGrow(out, sizeof(GpuirPostingDl), &out_cap, total, 0);
			for (int i = 0; i < nm; i++)
			{
				pos[i] = 0;
				heads[i] = cnt[members[i]] > 0 ? list[members[i]][0].doc : GPUIR_DOC_END;
			}
			while (o < total)
			{
				int			best = 0;
				uint32		limit = GPUIR_DOC_END;
				const GpuirPostingDl *l;
				uint64		p;
				uint64		c;

				CHECK_FOR_INTERRUPTS();
				for (int i = 1; i < nm; i++)
				{
					if (heads[i] < heads[best])
					{
						limit = heads[best];
						best = i;
					}
					else if (heads[i] < limit)
						limit = heads[i];
				}
				l = list[members[best]];
				c = cnt[members[best]];
				p = pos[best];
				do
					out[o++] = l[p++];
				while (p < c && l[p].doc < limit);
				pos[best] = p;
				heads[best] = p < c ? l[p].doc : GPUIR_DOC_END;
			}
			merged = out;
		}
		lk.s = lex[members[0]];
		lk.len = len[members[0]];
		encode_pieces(ls, pieces, index, &lk, NULL, NULL, merged, total);
		for (int i = 0; i < nm; i++)
		{
			int			s = members[i];

			have[s] = src[s].next(src[s].arg, &lex[s], &len[s], &list[s], &cnt[s]);
		}
		taken += nm;
		if (lists_done && taken >= 1024)
		{
			pg_atomic_fetch_add_u64(lists_done, taken);
			taken = 0;
		}
	}
	if (lists_done)
		pg_atomic_fetch_add_u64(lists_done, taken);
	if (out)
		pfree(out);
	pfree(have);
	pfree(lex);
	pfree(len);
	pfree(list);
	pfree(cnt);
	pfree(members);
	pfree(pos);
	pfree(heads);
}

/*
 * GpuirListsSave: the range's four files (GpuirListsBegin's) flushed and
 * closed: the writer's part ends, and another process may open them.
 * GpuirListsGetInfo gives their sizes.
 */
void
GpuirListsSave(GpuirLists *ls)
{
	(void) GpuirListsGetInfo(ls);
	for (int k = 0; k < GPUIR_LISTS_NSTREAMS; k++)
	{
		ByteBuf    *bb = &ls->bb[lists_stream[k]];

		bb_flush(bb, true);
		BufFileClose(bb->spill);
		bb->spill = NULL;
	}
}

/*
 * GpuirListsAppend: a range GpuirListsSave wrote (its four files, opened for
 * reading at their start, in GpuirListsBegin's order; info its
 * GpuirListsGetInfo), appended to ls as the terms after ls's: its offsets
 * are rebased onto ls's streams.  The ranges' lexemes must follow each
 * other in dictionary order.  Raises 54000 past 4 GB a stream.
 */
void
GpuirListsAppend(GpuirLists *ls, BufFile **in, const GpuirListsInfo *info)
{
	ByteBuf    *bb = ls->bb;
	uint64		lexeme_base = bb_size(&bb[GPUIR_S_LEXEMES]);
	uint64		payload_base = bb_size(&bb[GPUIR_S_PAYLOAD]);
	uint32		block_base = ls->info.nblocks;
	/* each stream's bytes, and its record: chunks hold whole records */
	const uint64 bytes[GPUIR_LISTS_NSTREAMS] = {
		info->dict_bytes, info->lexeme_bytes, info->blockdir_bytes, info->payload_bytes
	};
	const Size	record[GPUIR_LISTS_NSTREAMS] = {
		sizeof(GpuirDictEntry), 1, sizeof(GpuirBlockHeader), 1
	};
	char	   *chunk = palloc(WRITE_CHUNK_BYTES);

	if (info->dict_bytes != (uint64) info->nterms * sizeof(GpuirDictEntry) ||
		info->blockdir_bytes != (uint64) info->nblocks * sizeof(GpuirBlockHeader))
		elog(ERROR, "gpuir: a range of encoded lists does not match its sizes");
	if (lexeme_base + info->lexeme_bytes > PG_UINT32_MAX ||
		payload_base + info->payload_bytes > PG_UINT32_MAX ||
		(uint64) block_base + info->nblocks > PG_UINT32_MAX ||
		(uint64) ls->info.nterms + info->nterms >= PG_UINT32_MAX)
		stream_too_large();
	for (int k = 0; k < GPUIR_LISTS_NSTREAMS; k++)
	{
		Size		step = WRITE_CHUNK_BYTES - WRITE_CHUNK_BYTES % record[k];

		for (uint64 done = 0; done < bytes[k]; done += step)
		{
			Size		n = (Size) Min(step, bytes[k] - done);

			CHECK_FOR_INTERRUPTS();
			gpuir_buffile_read(in[k], chunk, n);
			/* offsets into the range's streams become offsets into ls's */
			if (lists_stream[k] == GPUIR_S_DICT)
				for (GpuirDictEntry *de = (GpuirDictEntry *) chunk; (char *) de < chunk + n; de++)
				{
					de->lexeme_off += (uint32) lexeme_base;
					de->first_block += block_base;
				}
			else if (lists_stream[k] == GPUIR_S_BLOCKDIR)
				for (GpuirBlockHeader *bh = (GpuirBlockHeader *) chunk; (char *) bh < chunk + n; bh++)
					bh->payload_off += (uint32) payload_base;
			bb_append(&bb[lists_stream[k]], chunk, n);
			bb_flush(&bb[lists_stream[k]], false);
		}
	}
	pfree(chunk);
	ls->info.nterms += info->nterms;
	ls->info.nblocks += info->nblocks;
	ls->info.npostings += info->npostings;
}

/*
 * GpuirListsDiscard: free lists that are not written (a build that found no
 * document), their temporary files closed
 */
void
GpuirListsDiscard(GpuirLists *ls)
{
	for (int s = 0; s < GPUIR_NSTREAMS; s++)
		bb_reset(&ls->bb[s]);
	pfree(ls);
}

/*
 * GpuirListsWrite: the segment of the lists and the documents in ls
 * (GpuirListsMergeDocs, at least one document: else GpuirListsDiscard),
 * written as GpuirBuilderWrite writes one (new pages; write_segment, which
 * raises 54000 past 4 GB a stream); on: report CREATE INDEX progress; fills
 * *seg.  ls is freed, its temporary files closed.
 */
void
GpuirListsWrite(GpuirLists *ls, Relation index, uint64 generation, bool on,
				GpuirSegmentData *seg)
{
	write_segment(index, generation, NULL, ls->bb, (uint32) ls->ndocs, ls->info.nterms,
				  ls->info.nblocks, ls->info.npostings, on, seg);
	seg->prior_max = ls->prior_max;
	pfree(ls);
}
