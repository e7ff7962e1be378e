/*-------------------------------------------------------------------------
 *
 * gpuirsegment.c
 *	  In-memory builder of an immutable segment: collects documents and
 *	  postings (from CREATE INDEX, the insert buffer or older segments),
 *	  assigns dense docIDs in heap TID order, sorts the dictionary, encodes
 *	  the posting lists in blocks of 128 and writes the segment's streams.
 *
 * Postings are held in memory (12 bytes each while collecting, 20 while
 * sorted) up to the builder's memory limit (GpuirBuilderSetMemoryLimit:
 * CREATE INDEX and merges pass maintenance_work_mem); past it they go to
 * sorted runs in temporary files, which the write reads back term by term,
 * and the encoded blocks go to a temporary file before their pages are
 * written.  What stays in memory grows with documents (about 32 bytes each), distinct
 * lexemes and blocks (24 bytes per 128 postings), not with postings; see
 * src/README "Limits".
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/progress.h"
#include "commands/tablespace.h"
#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
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

struct GpuirBuilder
{
	MemoryContext cxt;
	termhash_hash *terms;
	LexKey	   *lex;			/* termid -> lexeme */
	uint32		nterms;
	uint32		term_cap;
	ItemPointerData *tids;		/* builder doc index -> heap TID */
	uint32	   *dls;
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
	uint64		spill_at;		/* postings held before a run is written; 0: never */
	BufFile   **runs;			/* sorted runs, one temporary file each */
	int			nruns;
	int			runs_cap;
};

/*
 * Memory per posting while it is held: 12 bytes collecting (term, doc, tf)
 * and 8 more when the postings are sorted by term (a run's, or the write's).
 */
#define BYTES_PER_HELD_POSTING	20

/* a run's chunk: a term's postings in arrival order follow (DocTf each) */
typedef struct RunChunk
{
	uint32		termid;			/* RUN_END after the last chunk */
	uint32		count;
} RunChunk;

#define RUN_END		PG_UINT32_MAX

static void spill_run(GpuirBuilder *b);

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

static void *
grow(void *ptr, Size elemsize, uint64 *cap, uint64 need, uint64 max)
{
	uint64		ncap;

	if (need <= *cap)
		return ptr;
	ncap = Max(*cap * 2, Max(need, 1024));
	if (max > 0 && ncap > max)
		ncap = Max(max, need);
	if (ncap * elemsize > MaxAllocHugeSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuir segment builder ran out of addressable memory")));
	*cap = ncap;
	return ptr ? repalloc_huge(ptr, ncap * elemsize)
		: palloc_extended(ncap * elemsize, MCXT_ALLOC_HUGE);
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

/* progress: set CREATE INDEX progress parameter param to value, if b reports */
static inline void
progress(const GpuirBuilder *b, int param, int64 value)
{
	if (b->progress)
		pgstat_progress_update_param(param, value);
}

/*
 * GpuirBuilderSetMemoryLimit: hold at most about bytes of postings in
 * memory; past that, each batch of postings goes to a sorted run in a
 * temporary file (and GpuirBuilderWrite reads them back).  0: no limit.
 */
void
GpuirBuilderSetMemoryLimit(GpuirBuilder *b, Size bytes)
{
	b->spill_at = bytes == 0 ? 0 : Max(bytes / BYTES_PER_HELD_POSTING, 1024);
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
 * GpuirBuilderAddDoc: register a document (heap TID, dl); returns its
 * builder-local index for GpuirBuilderAddPosting.
 */
uint32
GpuirBuilderAddDoc(GpuirBuilder *b, ItemPointer tid, uint32 dl)
{
	MemoryContext old = MemoryContextSwitchTo(b->cxt);
	uint64		cap = b->doc_cap;

	if (b->ndocs >= GPUIR_DOC_END - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("a gpuir segment holds at most %u documents", GPUIR_DOC_END - 1)));
	b->tids = grow(b->tids, sizeof(ItemPointerData), &cap, (uint64) b->ndocs + 1, 0);
	cap = b->doc_cap;
	b->dls = grow(b->dls, sizeof(uint32), &cap, (uint64) b->ndocs + 1, 0);
	b->doc_cap = (uint32) Min(cap, PG_UINT32_MAX);
	b->tids[b->ndocs] = *tid;
	b->dls[b->ndocs] = dl;
	b->total_dl += dl;
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
		char	   *copy = palloc(Max(len, 1));

		memcpy(copy, lexeme, len);
		e->key.s = copy;
		e->key.len = (uint16) len;
		e->termid = b->nterms;
		b->lex = grow(b->lex, sizeof(LexKey), &cap, (uint64) b->nterms + 1, 0);
		b->term_cap = (uint32) cap;
		b->lex[b->nterms++] = e->key;
	}
	if (b->np + 1 > b->p_cap)
	{
		uint64		cap = b->p_cap;

		b->p_term = grow(b->p_term, sizeof(uint32), &cap, b->np + 1, b->spill_at);
		cap = b->p_cap;
		b->p_doc = grow(b->p_doc, sizeof(uint32), &cap, b->np + 1, b->spill_at);
		cap = b->p_cap;
		b->p_tf = grow(b->p_tf, sizeof(uint32), &cap, b->np + 1, b->spill_at);
		b->p_cap = cap;
	}
	b->p_term[b->np] = e->termid;
	b->p_doc[b->np] = doc;
	b->p_tf[b->np] = tf;
	b->np++;
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
	d = GpuirBuilderAddDoc(b, tid, doc->dl);
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

typedef struct DocTf
{
	uint32		doc;
	uint32		tf;
} DocTf;

static int
doctf_cmp(const void *a, const void *b, void *arg)
{
	uint32		da = ((const DocTf *) a)->doc;
	uint32		db = ((const DocTf *) b)->doc;

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
 * encode_list: encode the postings list[0..n) of lexeme lk (docIDs the new
 * ones; sorted here unless they are ascending already, as when each
 * document's postings arrived together; dl of docID d at dl_by_docid[d]) with the list encoder
 * (gpuirlist.h) into the DICT, LEXEMES, BLOCKDIR and PAYLOAD streams bb[];
 * *nblocks counts the blocks written so far.  Raises 54000 past a stream's
 * 4 GB and ERRCODE_INDEX_CORRUPTED for a docID twice in a list (a corrupt
 * merge input).
 */
static void
encode_list(Relation index, const LexKey *lk, DocTf *list, uint64 n,
			const uint32 *dl_by_docid, float4 k1, float4 bparam, double avgdl,
			ByteBuf *bb, uint32 *nblocks)
{
	GpuirDictEntry de;
	GpuirListEncoder enc;
	bool		sorted = true;

	for (uint64 i = 1; i < n && sorted; i++)
		sorted = list[i - 1].doc < list[i].doc;
	if (!sorted)
		qsort_interruptible(list, n, sizeof(DocTf), doctf_cmp, NULL);

	memset(&de, 0, sizeof(de));
	de.lexeme_off = (uint32) bb[GPUIR_S_LEXEMES].len;
	de.lexeme_len = lk->len;
	de.first_block = *nblocks;
	bb_append(&bb[GPUIR_S_LEXEMES], lk->s, lk->len);

	GpuirListEncoderInit(&enc, k1, bparam, avgdl, (uint32) bb_size(&bb[GPUIR_S_PAYLOAD]));
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
		for (int j = 0; j < cnt; j++)
		{
			docs[j] = list[i + j].doc;
			tfs[j] = list[i + j].tf;
			dls[j] = dl_by_docid[docs[j]];
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
		(*nblocks)++;
	}
	GpuirListEncoderFinish(&enc, &de);
	check_stream_size(&bb[GPUIR_S_PAYLOAD]);
	bb_append(&bb[GPUIR_S_DICT], &de, sizeof(de));
}

/*
 * encode_lists: encode every term's postings held in memory
 * (post[start[t] .. start[t+1]) for the t-th term in dictionary order,
 * termorder[t] its builder index; docIDs already the new ones) with
 * encode_list; returns the number of blocks.
 */
static uint32
encode_lists(GpuirBuilder *b, Relation index, const uint32 *termorder, const uint64 *start,
			 DocTf *post, const uint32 *dl_by_docid, float4 k1, float4 bparam, double avgdl,
			 ByteBuf *bb)
{
	uint32		nblocks = 0;

	progress(b, PROGRESS_CREATEIDX_TUPLES_TOTAL, b->nterms);
	for (uint32 t = 0; t < b->nterms; t++)
	{
		CHECK_FOR_INTERRUPTS();
		if ((t % 1024) == 0)
			progress(b, PROGRESS_CREATEIDX_TUPLES_DONE, t);
		encode_list(index, &b->lex[termorder[t]], post + start[t], start[t + 1] - start[t],
					dl_by_docid, k1, bparam, avgdl, bb, &nblocks);
	}

	return nblocks;
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
	DocTf	   *post;
	BufFile    *f;
	RunChunk	end = {RUN_END, 0};
	uint64		off = 0;

	count = palloc_extended(sizeof(uint64) * Max(b->nterms, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (uint64 i = 0; i < b->np; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		count[b->p_term[i]]++;
	}
	present = palloc_extended(sizeof(uint32) * Max(b->nterms, 1), MCXT_ALLOC_HUGE);
	for (uint32 t = 0; t < b->nterms; t++)
		if (count[t] > 0)
			present[npresent++] = t;
	qsort_interruptible(present, npresent, sizeof(uint32), term_lex_cmp, b->lex);
	at = palloc_extended(sizeof(uint64) * Max(b->nterms, 1), MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < npresent; i++)
	{
		at[present[i]] = off;
		off += count[present[i]];
	}
	/* a stable counting sort by term: each term's postings stay in arrival order */
	post = palloc_extended(sizeof(DocTf) * Max(b->np, 1), MCXT_ALLOC_HUGE);
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
		gpuir_buffile_write(f, post + off, sizeof(DocTf) * ch.count);
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
	pfree(count);
	pfree(present);
	pfree(at);
	pfree(post);
	MemoryContextSwitchTo(old);
}

/*
 * encode_runs: encode every term's postings read back from the sorted runs
 * (spill_run), in dictionary order (termorder, as for encode_lists), builder
 * doc indexes mapped to the new docIDs by newdoc; closes the runs and
 * returns the number of blocks; *npostings gets the postings encoded.
 */
static uint32
encode_runs(GpuirBuilder *b, Relation index, const uint32 *termorder, const uint32 *newdoc,
			const uint32 *dl_by_docid, float4 k1, float4 bparam, double avgdl,
			ByteBuf *bb, uint64 *npostings)
{
	RunChunk   *head = palloc(sizeof(RunChunk) * b->nruns);
	DocTf	   *list = NULL;
	uint64		cap = 0;
	uint32		nblocks = 0;

	*npostings = 0;
	for (int r = 0; r < b->nruns; r++)
		gpuir_buffile_read(b->runs[r], &head[r], sizeof(RunChunk));
	progress(b, PROGRESS_CREATEIDX_TUPLES_TOTAL, b->nterms);
	for (uint32 t = 0; t < b->nterms; t++)
	{
		uint64		n = 0;

		CHECK_FOR_INTERRUPTS();
		if ((t % 1024) == 0)
			progress(b, PROGRESS_CREATEIDX_TUPLES_DONE, t);
		/* the term's chunks, in run order: arrival order */
		for (int r = 0; r < b->nruns; r++)
		{
			if (head[r].termid != termorder[t])
				continue;
			list = grow(list, sizeof(DocTf), &cap, n + head[r].count, 0);
			gpuir_buffile_read(b->runs[r], list + n, sizeof(DocTf) * head[r].count);
			n += head[r].count;
			gpuir_buffile_read(b->runs[r], &head[r], sizeof(RunChunk));
		}
		for (uint64 i = 0; i < n; i++)
		{
			if ((i % GPUIR_INTERRUPT_EVERY) == 0)
				CHECK_FOR_INTERRUPTS();
			list[i].doc = newdoc[list[i].doc];
		}
		encode_list(index, &b->lex[termorder[t]], list, n, dl_by_docid, k1, bparam, avgdl,
					bb, &nblocks);
		bb_flush(&bb[GPUIR_S_PAYLOAD], false);
		*npostings += n;
	}
	for (int r = 0; r < b->nruns; r++)
	{
		if (head[r].termid != RUN_END)
			elog(ERROR, "gpuir segment builder: sorted run %d holds a term past the dictionary", r);
		BufFileClose(b->runs[r]);
		b->runs[r] = NULL;
	}
	if (list != NULL)
		pfree(list);
	pfree(head);
	return nblocks;
}

/* rows of pages that write_stream writes per read of its temporary file */
#define WRITE_CHUNK_BYTES	(64 * GPUIR_PAGE_DATA)

/*
 * write_stream: GpuirWriteStream of bb's bytes at start; a stream spilled to
 * a temporary file is read back and written in pieces of whole pages.
 */
static GpuirStream
write_stream(Relation index, ByteBuf *bb, uint32 tag, BlockNumber start)
{
	GpuirStream s;
	char	   *chunk;
	uint64		total;

	if (bb->spill == NULL)
		return GpuirWriteStream(index, bb->data, (uint32) bb->len, tag, start);
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
		(void) GpuirWriteStream(index, chunk, n, tag, start + (BlockNumber) (done / GPUIR_PAGE_DATA));
	}
	pfree(chunk);
	BufFileClose(bb->spill);
	bb->spill = NULL;
	s.start = total > 0 ? start : InvalidBlockNumber;
	s.nbytes = (uint32) total;
	return s;
}

/* free_held: drop the arrays of the postings held (in arrival order) */
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
}

/*
 * encode_held: encode the postings held in memory (no run was spilled):
 * a counting sort by term (termorder, newterm: dictionary order), each list
 * in docID order (newdoc, docorder: TID order), then encode_lists; frees
 * the arrival-order arrays.  Returns the number of blocks; *npostings gets
 * the postings encoded.
 */
static uint32
encode_held(GpuirBuilder *b, Relation index, const uint32 *docorder, const uint32 *newdoc,
			const uint32 *termorder, const uint32 *newterm, const uint32 *dl_by_docid,
			float4 k1, float4 bparam, double avgdl, ByteBuf *bb, uint64 *npostings)
{
	uint64	   *start;
	DocTf	   *post;
	bool		by_doc = true;	/* postings arrived grouped by builder doc, ascending */
	uint32		nblocks;

	/* counting sort of the postings by term */
	start = palloc_extended(sizeof(uint64) * (b->nterms + 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);
	for (uint64 i = 0; i < b->np; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		start[newterm[b->p_term[i]] + 1]++;
		if (i > 0 && b->p_doc[i] < b->p_doc[i - 1])
			by_doc = false;
	}
	for (uint32 t = 0; t < b->nterms; t++)
		start[t + 1] += start[t];
	post = palloc_extended(sizeof(DocTf) * Max(b->np, 1), MCXT_ALLOC_HUGE);
	{
		uint64	   *fill = palloc_extended(sizeof(uint64) * Max(b->nterms, 1), MCXT_ALLOC_HUGE);

		memcpy(fill, start, sizeof(uint64) * b->nterms);
		if (by_doc)
		{
			/*
			 * Each document's postings arrived together (CREATE INDEX, the
			 * insert buffer): taking the documents in docID order fills
			 * every list in docID order, sorted as it is written, whatever
			 * order the documents arrived in (a parallel build's workers
			 * interleave them).
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
				uint32		d = docorder[i];

				/* every GPUIR_INTERRUPT_EVERY postings: a long document counts its length */
				since_check += dstart[d + 1] - dstart[d] + 1;
				if (since_check >= GPUIR_INTERRUPT_EVERY)
				{
					CHECK_FOR_INTERRUPTS();
					since_check = 0;
				}
				for (uint64 p = dstart[d]; p < dstart[d + 1]; p++)
				{
					uint64		at = fill[newterm[b->p_term[p]]]++;

					post[at].doc = i;
					post[at].tf = b->p_tf[p];
				}
			}
			pfree(dstart);
		}
		else
		{
			/* in arrival order: encode_list sorts each list that needs it */
			for (uint64 i = 0; i < b->np; i++)
			{
				uint64		at = fill[newterm[b->p_term[i]]]++;

				if ((i % GPUIR_INTERRUPT_EVERY) == 0)
					CHECK_FOR_INTERRUPTS();
				post[at].doc = newdoc[b->p_doc[i]];
				post[at].tf = b->p_tf[i];
			}
		}
		pfree(fill);
	}
	/* the arrival-order postings are no longer needed */
	free_held(b);

	progress(b, PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_ENCODE);
	nblocks = encode_lists(b, index, termorder, start, post, dl_by_docid, k1, bparam, avgdl, bb);
	*npostings = start[b->nterms];
	pfree(start);
	pfree(post);
	return nblocks;
}


/*
 * GpuirBuilderWrite: encode everything collected and write it as a new
 * segment of index; fills *seg and returns true, or returns false when the
 * builder holds no document.  DocIDs are assigned in heap TID order, so ties
 * broken by docID are ties broken by TID.  The streams' pages carry the tag
 * of generation and follow each other in one run of pages allocated from
 * the free space map fl (GpuirFreeListAllocate: the lowest reusable extent
 * that holds them all, else at the end of the index; fl NULL: new pages).
 * A segment is thus never scattered over small holes, and compaction
 * (gpuircompact.c) moves it down in one piece.  Raises 54000 when a stream
 * would exceed 4 GB.
 */
bool
GpuirBuilderWrite(GpuirBuilder *b, Relation index, uint64 generation,
				  float4 k1, float4 bparam, GpuirFreeList *fl, GpuirSegmentData *seg)
{
	MemoryContext old;
	uint64		npages = 0;
	uint64		written = 0;
	BlockNumber at;
	uint32	   *docorder;
	uint32	   *newdoc;
	uint32	   *termorder;
	uint32	   *newterm;
	ByteBuf		bb[GPUIR_NSTREAMS];
	uint32		nblocks = 0;
	uint64		npostings = 0;
	double		avgdl;
	uint32	   *dl_by_docid;

	if (b->ndocs == 0)
		return false;
	avgdl = Max((double) b->total_dl / b->ndocs, 1.0);
	old = MemoryContextSwitchTo(b->cxt);
	memset(bb, 0, sizeof(bb));
	progress(b, PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_SORT);

	/* docIDs in TID order */
	docorder = palloc_extended(sizeof(uint32) * b->ndocs, MCXT_ALLOC_HUGE);
	newdoc = palloc_extended(sizeof(uint32) * b->ndocs, MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < b->ndocs; i++)
		docorder[i] = i;
	qsort_interruptible(docorder, b->ndocs, sizeof(uint32), doc_tid_cmp, b->tids);
	for (uint32 i = 0; i < b->ndocs; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		newdoc[docorder[i]] = i;
		/*
		 * A heap scan never gives a TID twice, nor do the live entries of a
		 * sound index (VACUUM marks a TID's entry before the heap reuses
		 * it): for a merge, a duplicate means a corrupt index.
		 */
		if (i > 0 && ItemPointerCompare(&b->tids[docorder[i]], &b->tids[docorder[i - 1]]) == 0)
			GpuirCorrupt(index, psprintf("heap TID (%u,%u) is indexed twice",
										 ItemPointerGetBlockNumberNoCheck(&b->tids[docorder[i]]),
										 ItemPointerGetOffsetNumberNoCheck(&b->tids[docorder[i]])));
	}

	/* dictionary order */
	termorder = palloc_extended(sizeof(uint32) * Max(b->nterms, 1), MCXT_ALLOC_HUGE);
	newterm = palloc_extended(sizeof(uint32) * Max(b->nterms, 1), MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < b->nterms; i++)
		termorder[i] = i;
	qsort_interruptible(termorder, b->nterms, sizeof(uint32), term_lex_cmp, b->lex);
	for (uint32 i = 0; i < b->nterms; i++)
		newterm[termorder[i]] = i;

	/* lengths by docID, so that encoding reads each posting's with one lookup */
	dl_by_docid = palloc_extended(sizeof(uint32) * b->ndocs, MCXT_ALLOC_HUGE);
	for (uint32 i = 0; i < b->ndocs; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		dl_by_docid[i] = b->dls[docorder[i]];
	}

	/* encode the posting lists: held in memory, or read back from the runs */
	if (b->nruns > 0)
	{
		if (b->np > 0)
			spill_run(b);
		free_held(b);
		bb[GPUIR_S_PAYLOAD].spill = BufFileCreateTemp(false);
		progress(b, PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_ENCODE);
		nblocks = encode_runs(b, index, termorder, newdoc, dl_by_docid, k1, bparam, avgdl,
							  bb, &npostings);
	}
	else
		nblocks = encode_held(b, index, docorder, newdoc, termorder, newterm, dl_by_docid,
							  k1, bparam, avgdl, bb, &npostings);
	pfree(dl_by_docid);

	/* docID -> TID, dl; an all-clear deleted bitmap */
	for (uint32 i = 0; i < b->ndocs; i++)
	{
		if ((i % GPUIR_INTERRUPT_EVERY) == 0)
			CHECK_FOR_INTERRUPTS();
		bb_append(&bb[GPUIR_S_TIDS], &b->tids[docorder[i]], sizeof(ItemPointerData));
		bb_append(&bb[GPUIR_S_DOCLENS], &b->dls[docorder[i]], sizeof(uint32));
	}
	{
		uint64		nbitmap = ((uint64) b->ndocs + 7) / 8;
		char	   *zeros = palloc_extended(nbitmap, MCXT_ALLOC_HUGE | MCXT_ALLOC_ZERO);

		bb_append(&bb[GPUIR_S_DELETED], zeros, nbitmap);
	}

	memset(seg, 0, sizeof(GpuirSegmentData));
	seg->ndocs = b->ndocs;
	seg->nterms = b->nterms;
	seg->nblocks = nblocks;
	seg->npostings = npostings;
	seg->generation = generation;
	for (int s = 0; s < GPUIR_NSTREAMS; s++)
	{
		check_stream_size(&bb[s]);
		npages += (bb_size(&bb[s]) + GPUIR_PAGE_DATA - 1) / GPUIR_PAGE_DATA;
	}
	/* one run of pages for the whole segment: 7 streams of at most 4 GB */
	Assert(npages <= PG_UINT32_MAX);
	at = npages > 0 ? GpuirFreeListAllocate(fl, index, (uint32) npages) : InvalidBlockNumber;
	progress(b, PROGRESS_CREATEIDX_SUBPHASE, GPUIR_BUILD_PHASE_WRITE);
	progress(b, PROGRESS_SCAN_BLOCKS_TOTAL, (int64) npages);
	progress(b, PROGRESS_SCAN_BLOCKS_DONE, 0);
	for (int s = 0; s < GPUIR_NSTREAMS; s++)
	{
		uint64		pages = (bb_size(&bb[s]) + GPUIR_PAGE_DATA - 1) / GPUIR_PAGE_DATA;

		seg->streams[s] = write_stream(index, &bb[s], GpuirSegmentTag(generation), at);
		at += pages;
		written += pages;
		progress(b, PROGRESS_SCAN_BLOCKS_DONE, (int64) written);
		if (bb[s].data)
			pfree(bb[s].data);
	}
	MemoryContextSwitchTo(old);
	return true;
}
