/*-------------------------------------------------------------------------
 *
 * gpuirquery.c
 *	  The CPU query engine: exact top-k BM25 by document-at-a-time
 *	  processing over cursors on the compressed posting blocks, with the
 *	  modes AND, OR (exhaustive), WAND, Block-Max WAND and AND-then-OR.
 *	  It is also the oracle the GPU engine is checked against.
 *
 * Sources:
 *	- Broder, Carmel, Herscovici, Soffer, Zien, "Efficient query evaluation
 *	  using a two-level retrieval process", CIKM 2003 (WAND, section 3).
 *	- Ding & Suel, "Faster top-k document retrieval using block-max
 *	  indexes", SIGIR 2011 (BMW, section 4, Algorithm 2).
 *	- Ding, He, Yan, Suel, WWW 2009, section 8.3 (AND, then OR when the
 *	  conjunction yields fewer than k results).
 *
 * Exactness: one float32 formula (GpuirBM25), each document's score summed
 * in the query's term order whatever the mode, bounds computed in double and
 * inflated by GPUIR_BOUND_SLACK, pruning only when a bound is strictly below
 * the k-th score, and a total order (score descending, heap TID ascending)
 * in the top-k heap: OR, WAND and BMW return the same rows and scores.
 * Candidates enter the heap only if not deleted by VACUUM and visible to the
 * snapshot, so k visible rows come back when dead entries exist.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/tableam.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "gpuir.h"
#include "gpuirservice.h"
#include "../cuda/gpuir_cuda.h"

GpuirQueryStats GpuirLastQueryStats;

/*
 * The scoring context of the last index scan of this backend (query text,
 * configuration, BM25 constants and idf of each query term), kept in
 * TopMemoryContext so that the <@> operator can give the score of the rows
 * that scan returns (GpuirRememberedScore).
 */
typedef struct RememberedScoring
{
	char	   *query;
	int			querylen;
	Oid			cfg_id;
	GpuirScoring sc;
	int			nterms;
	char	  **lexemes;
	uint16	   *lens;
	float4	   *idf;
} RememberedScoring;

static RememberedScoring *remembered = NULL;

/* a query term: a distinct lexeme of the query, in lexeme order */
typedef struct QTerm
{
	char	   *lexeme;
	uint16		len;
	uint64		df;				/* global: all segments + buffer */
	float4		idf;
} QTerm;

/* a cursor over one term's posting list in one segment */
typedef struct Cursor
{
	int			term;			/* index into GpuirQuery.terms */
	float4		idf;
	double		ub;				/* list-level score bound */
	uint32		npostings;
	int			nblocks;
	GpuirBlockHeader *dir;		/* the list's block headers */
	uint32	   *ends;			/* payload end offset of each block */
	double	   *bmax;			/* block-max score bound of each block */
	int			blk;			/* block of the current posting (nblocks: done) */
	int			sblk;			/* block reached by shallow moves (BMW) */
	int			decoded;		/* block held in docs/enc, or -1 */
	int			ndecoded;		/* blocks decoded so far */
	int			pos;
	int			n;
	bool		lazy;			/* in block blk, not decoded: doc is a lower bound */
	uint32		doc;			/* current docID or GPUIR_DOC_END */
	uint32		docs[GPUIR_BLOCK_SIZE];
	uint8		enc[GPUIR_BLOCK_MAX_BYTES];
	GpuirStreamReader payload;
} Cursor;

/* a document of the insert buffer that holds at least one query term */
typedef struct BufDoc
{
	ItemPointerData tid;
	uint32		dl;
	uint32	   *tfs;			/* per query term, 0 when absent */
	int			nmatch;
} BufDoc;

typedef struct GpuirQuery
{
	Relation	index;
	Relation	heap;
	Snapshot	snapshot;
	IndexFetchTableData *fetch;
	TupleTableSlot *slot;
	BlockNumber heap_nblocks;	/* the table's size after the buffer snapshot */
	GpuirScoring sc;
	QTerm	   *terms;
	int			nterms;
	GpuirMetaPageData meta;
	GpuirDictEntry *entries;	/* [segment * nterms + term], npostings 0 = absent */
	BufDoc	   *bufdocs;
	int			nbufdocs;
	int			bufcap;
	/* top-k heap: heap[0] is the worst kept result */
	GpuirResult *topk;
	int			nheap;
	int			k;
	/* per-segment readers */
	GpuirSegmentData *seg;
	GpuirStreamReader tids;
	GpuirStreamReader dls;
	GpuirStreamReader del;
	uint64		iterations;
	bool		ready;			/* prepared, and something may match */
} GpuirQuery;

/* ---------- top-k heap ---------- */

/* is (score a, tid a) a better result than b? (score desc, then TID asc) */
static inline bool
result_better(float4 sa, ItemPointer ta, float4 sb, ItemPointer tb)
{
	if (sa != sb)
		return sa > sb;
	return ItemPointerCompare(ta, tb) < 0;
}

static inline bool
heap_worse(const GpuirResult *a, const GpuirResult *b)
{
	return result_better(b->score, (ItemPointer) &b->tid, a->score, (ItemPointer) &a->tid);
}

static void
heap_sift_down(GpuirResult *h, int n, int i)
{
	for (;;)
	{
		int			l = 2 * i + 1;
		int			worst = i;
		GpuirResult tmp;

		if (l < n && heap_worse(&h[l], &h[worst]))
			worst = l;
		if (l + 1 < n && heap_worse(&h[l + 1], &h[worst]))
			worst = l + 1;
		if (worst == i)
			return;
		tmp = h[i];
		h[i] = h[worst];
		h[worst] = tmp;
		i = worst;
	}
}

static void
heap_push(GpuirQuery *q, const GpuirResult *r)
{
	if (q->nheap < q->k)
	{
		int			i = q->nheap++;

		q->topk[i] = *r;
		while (i > 0 && heap_worse(&q->topk[i], &q->topk[(i - 1) / 2]))
		{
			GpuirResult tmp = q->topk[i];

			q->topk[i] = q->topk[(i - 1) / 2];
			q->topk[(i - 1) / 2] = tmp;
			i = (i - 1) / 2;
		}
	}
	else
	{
		q->topk[0] = *r;
		heap_sift_down(q->topk, q->nheap, 0);
	}
}

/* the score a candidate must reach to be considered (0 while the heap is not full) */
static inline float4
threshold(GpuirQuery *q)
{
	return q->nheap < q->k ? 0.0f : q->topk[0].score;
}

/* may a document whose score is at most bound still enter the top-k? */
static inline bool
bound_passes(GpuirQuery *q, double bound)
{
	return bound * GPUIR_BOUND_SLACK >= (double) threshold(q);
}

/*
 * consider: offer a scored candidate; it enters the heap when it beats the
 * worst kept result, is not marked deleted (from_segment: look segdoc up in
 * the segment's deleted bitmap; buffer documents were filtered already) and
 * is visible to the query's snapshot.
 */
static void
consider(GpuirQuery *q, ItemPointer tid, float4 score, uint32 segdoc, bool from_segment)
{
	GpuirResult r;
	bool		call_again = false;
	bool		all_dead = false;
	ItemPointerData fetch_tid;

	if (q->nheap == q->k &&
		!result_better(score, tid, q->topk[0].score, &q->topk[0].tid))
		return;
	if (from_segment)
	{
		uint8		byte;

		GpuirStreamRead(&q->del, segdoc / 8, &byte, 1);
		if (byte & (1 << (segdoc % 8)))
			return;
	}
	/*
	 * A live entry's TID is inside the table (VACUUM marks an entry before
	 * the table can be truncated, and the table is locked): a TID from a
	 * corrupt page must not reach the table AM.
	 */
	if (ItemPointerGetBlockNumberNoCheck(tid) >= q->heap_nblocks ||
		ItemPointerGetOffsetNumberNoCheck(tid) < FirstOffsetNumber)
		GpuirCorrupt(q->index, "heap TID outside the table");
	fetch_tid = *tid;
	if (!table_index_fetch_tuple(q->fetch, &fetch_tid, q->snapshot, q->slot,
								 &call_again, &all_dead))
		return;
	r.score = score;
	r.tid = *tid;
	r.heap_tid = q->slot->tts_tid;
	ExecClearTuple(q->slot);
	heap_push(q, &r);
}

/* ---------- cursors ---------- */

static void
cursor_decode(GpuirQuery *q, Cursor *c, int blk)
{
	uint32		off = c->dir[blk].payload_off;
	uint32		len = c->ends[blk] - off;
	uint32		prev = blk > 0 ? c->dir[blk - 1].last_docid : GPUIR_FIRST_PREV_DOCID;
	int			expect = (blk < c->nblocks - 1) ? GPUIR_BLOCK_SIZE
		: (int) (c->npostings - (uint32) GPUIR_BLOCK_SIZE * (c->nblocks - 1));
	int			n;

	if (c->ends[blk] < off || len > GPUIR_BLOCK_MAX_BYTES)
		GpuirCorrupt(q->index, "block directory offsets out of range");
	GpuirStreamRead(&c->payload, off, c->enc, len);
	n = GpuirCodecDecode(c->enc, len, prev, c->docs, NULL);
	if (n != expect || GpuirCodecCheckTf(c->enc) != GPUIR_CODEC_OK ||
		c->docs[n - 1] != c->dir[blk].last_docid ||
		c->docs[n - 1] >= q->seg->ndocs)
		GpuirCorrupt(q->index, "posting block does not decode");
	c->decoded = blk;
	c->n = n;
	c->ndecoded++;
	GpuirLastQueryStats.blocks_decoded++;
}

/*
 * cursor_next_geq: move to the first posting with docID >= target, skipping
 * whole blocks by their last docID.  With lazy, a move into another block
 * does not decode it: the cursor's doc becomes target, a lower bound of its
 * real docID, until cursor_materialize (WAND and BMW only need docIDs when a
 * document may be scored, Ding & Suel 2011, section 4).
 */
static void
cursor_next_geq(GpuirQuery *q, Cursor *c, uint32 target, bool lazy)
{
	int			b = c->blk;
	int			lo,
				hi;

	if (c->doc >= target)
		return;
	if (c->dir[b].last_docid < target)
	{
		lo = b + 1;
		hi = c->nblocks;
		while (lo < hi)
		{
			int			mid = lo + (hi - lo) / 2;

			if (c->dir[mid].last_docid < target)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo >= c->nblocks)
		{
			c->blk = c->nblocks;
			c->lazy = false;
			c->doc = GPUIR_DOC_END;
			return;
		}
		b = lo;
	}
	c->blk = b;
	if (c->decoded != b)
	{
		if (lazy)
		{
			c->lazy = true;
			c->doc = target;
			return;
		}
		cursor_decode(q, c, b);
		c->pos = 0;
	}
	c->lazy = false;
	lo = c->pos;
	hi = c->n - 1;				/* docs[n-1] = last_docid >= target */
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (c->docs[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	c->pos = lo;
	c->doc = c->docs[lo];
}

/* cursor_materialize: decode a lazy cursor's block to find its real docID */
static void
cursor_materialize(GpuirQuery *q, Cursor *c)
{
	uint32		target = c->doc;

	if (!c->lazy)
		return;
	cursor_decode(q, c, c->blk);
	c->lazy = false;
	c->pos = 0;
	while (c->docs[c->pos] < target)	/* docs[n-1] = last_docid >= target */
		c->pos++;
	c->doc = c->docs[c->pos];
}

static void
cursor_next(GpuirQuery *q, Cursor *c)
{
	Assert(!c->lazy);
	if (c->doc == GPUIR_DOC_END)
		return;
	if (++c->pos < c->n)
	{
		c->doc = c->docs[c->pos];
		return;
	}
	if (c->blk + 1 >= c->nblocks)
	{
		c->blk = c->nblocks;
		c->doc = GPUIR_DOC_END;
		return;
	}
	c->blk++;
	cursor_decode(q, c, c->blk);
	c->pos = 0;
	c->doc = c->docs[0];
}

/*
 * cursor_block_bound: shallow move (Ding & Suel 2011, section 4): the
 * block-max bound of the block that would hold target, found from the block
 * headers without decoding; *last = that block's last docID.
 */
static double
cursor_block_bound(Cursor *c, uint32 target, uint32 *last)
{
	int			b = Max(c->sblk, c->blk);

	while (b < c->nblocks && c->dir[b].last_docid < target)
		b++;
	c->sblk = b;
	if (b >= c->nblocks)
	{
		*last = GPUIR_DOC_END - 1;
		return 0.0;
	}
	*last = c->dir[b].last_docid;
	return c->bmax[b];
}

static void
cursor_open(GpuirQuery *q, Cursor *c, int term, const GpuirDictEntry *de)
{
	GpuirStreamReader r;
	uint32		nread;

	if ((uint64) de->first_block + de->nblocks > q->seg->nblocks || de->nblocks == 0 ||
		(uint64) de->nblocks * GPUIR_BLOCK_SIZE < de->npostings ||
		(uint64) (de->nblocks - 1) * GPUIR_BLOCK_SIZE >= de->npostings)
		GpuirCorrupt(q->index, "dictionary entry out of range");
	c->term = term;
	c->idf = q->terms[term].idf;
	c->npostings = de->npostings;
	c->nblocks = de->nblocks;
	/* the list's headers plus the next one, whose offset ends the last block */
	nread = de->nblocks + ((de->first_block + de->nblocks < q->seg->nblocks) ? 1 : 0);
	c->dir = palloc(sizeof(GpuirBlockHeader) * nread);
	GpuirStreamReaderInit(&r, q->index, q->seg, GPUIR_S_BLOCKDIR);
	GpuirStreamRead(&r, de->first_block * sizeof(GpuirBlockHeader), c->dir,
					nread * sizeof(GpuirBlockHeader));
	GpuirStreamReaderEnd(&r);
	c->ends = palloc(sizeof(uint32) * c->nblocks);
	c->bmax = palloc(sizeof(double) * c->nblocks);
	for (int i = 0; i < c->nblocks; i++)
	{
		c->ends[i] = (i + 1 < (int) nread) ? c->dir[i + 1].payload_off
			: q->seg->streams[GPUIR_S_PAYLOAD].nbytes;
		c->bmax[i] = 0.0;
		for (int j = 0; j < GPUIR_BLOCK_IMPACTS; j++)
			c->bmax[i] = Max(c->bmax[i], GpuirBM25Bound(c->idf, c->dir[i].impact_tf[j],
														c->dir[i].impact_dl[j], &q->sc));
		/* the list bound is the largest block bound: tighter than (max tf, min dl) */
		c->ub = (i == 0) ? c->bmax[0] : Max(c->ub, c->bmax[i]);
		/*
		 * WAND and BMW skip blocks by these headers without decoding the
		 * blocks (whose decoding checks them again): a last docID at or past
		 * ndocs would end the list early or, as GPUIR_DOC_END, wrap the
		 * "next docID after this block" to 0 and stall the loop.
		 */
		if (i > 0 && c->dir[i].last_docid <= c->dir[i - 1].last_docid)
			GpuirCorrupt(q->index, "block last docIDs are not increasing");
		if (c->dir[i].last_docid >= q->seg->ndocs)
			GpuirCorrupt(q->index, "block last docID is not below the segment's document count");
	}
	GpuirStreamReaderInit(&c->payload, q->index, q->seg, GPUIR_S_PAYLOAD);
	c->blk = 0;
	c->sblk = 0;
	c->decoded = -1;
	c->ndecoded = 0;
	c->lazy = false;
	cursor_decode(q, c, 0);
	c->pos = 0;
	c->doc = c->docs[0];
}

static void
cursor_close(Cursor *c)
{
	int			reached = (c->doc == GPUIR_DOC_END) ? c->nblocks : c->blk + 1;

	/* blocks passed over by their headers alone */
	GpuirLastQueryStats.blocks_skipped += Max(reached - c->ndecoded, 0);
	GpuirStreamReaderEnd(&c->payload);
	pfree(c->dir);
	pfree(c->ends);
	pfree(c->bmax);
}

/* ---------- scoring within a segment ---------- */

/* called once per iteration of every mode's loop: honours query cancel */
static inline void
query_tick(GpuirQuery *q)
{
	if ((++q->iterations & 1023) == 0)
		CHECK_FOR_INTERRUPTS();
}

/* score doc over the cursors positioned on it, in term order */
static void
score_doc(GpuirQuery *q, Cursor **cur, int ncur, uint32 doc)
{
	uint32		dl;
	float4		score = 0.0f;
	ItemPointerData tid;

	GpuirStreamRead(&q->dls, doc * sizeof(uint32), &dl, sizeof(uint32));
	for (int i = 0; i < ncur; i++)
		if (cur[i]->doc == doc)
			score += GpuirBM25(cur[i]->idf, GpuirCodecTf(cur[i]->enc, cur[i]->pos), dl, &q->sc);
	GpuirLastQueryStats.docs_scored++;
	if (q->nheap == q->k && score < q->topk[0].score)
		return;
	GpuirStreamRead(&q->tids, doc * sizeof(ItemPointerData), &tid, sizeof(ItemPointerData));
	consider(q, &tid, score, doc, true);
}

static int
cursor_df_cmp(const void *a, const void *b)
{
	uint32		na = (*(Cursor *const *) a)->npostings;
	uint32		nb = (*(Cursor *const *) b)->npostings;

	return (na > nb) - (na < nb);
}

/* AND: every term; lists from shortest to longest, skipping by block last docIDs */
static void
run_and(GpuirQuery *q, Cursor **cur, int ncur)
{
	Cursor	  **ord = palloc(sizeof(Cursor *) * ncur);
	uint32		d;

	memcpy(ord, cur, sizeof(Cursor *) * ncur);
	qsort(ord, ncur, sizeof(Cursor *), cursor_df_cmp);
	d = ord[0]->doc;
	while (d != GPUIR_DOC_END)
	{
		int			i;

		query_tick(q);
		for (i = 1; i < ncur; i++)
		{
			cursor_next_geq(q, ord[i], d, false);
			if (ord[i]->doc != d)
				break;
		}
		if (i == ncur)
		{
			score_doc(q, cur, ncur, d);
			cursor_next(q, ord[0]);
		}
		else
		{
			if (ord[i]->doc == GPUIR_DOC_END)
				break;
			cursor_next_geq(q, ord[0], ord[i]->doc, false);
		}
		d = ord[0]->doc;
	}
	pfree(ord);
}

/* OR: exhaustive disjunctive scoring of every document of every list */
static void
run_or(GpuirQuery *q, Cursor **cur, int ncur)
{
	for (;;)
	{
		uint32		d = GPUIR_DOC_END;

		query_tick(q);
		for (int i = 0; i < ncur; i++)
			d = Min(d, cur[i]->doc);
		if (d == GPUIR_DOC_END)
			break;
		score_doc(q, cur, ncur, d);
		for (int i = 0; i < ncur; i++)
			if (cur[i]->doc == d)
				cursor_next(q, cur[i]);
	}
}

/* keep ord sorted by current docID (insertion sort: few terms, nearly sorted) */
static void
sort_by_doc(Cursor **ord, int n)
{
	for (int i = 1; i < n; i++)
	{
		Cursor	   *c = ord[i];
		int			j = i - 1;

		while (j >= 0 && ord[j]->doc > c->doc)
		{
			ord[j + 1] = ord[j];
			j--;
		}
		ord[j + 1] = c;
	}
}

/*
 * find the pivot (Broder et al. 2003): the first cursor in docID order at
 * which the summed list bounds may reach the threshold; -1 when none.
 */
static int
find_pivot(GpuirQuery *q, Cursor **ord, int n)
{
	double		acc = 0.0;

	for (int i = 0; i < n; i++)
	{
		if (ord[i]->doc == GPUIR_DOC_END)
			return -1;
		acc += ord[i]->ub;
		if (bound_passes(q, acc))
			return i;
	}
	return -1;
}

/*
 * cursor_next_lazy: the next posting; past the end of the decoded block the
 * cursor enters the next block lazily (doc = a lower bound, no decoding).
 */
static void
cursor_next_lazy(GpuirQuery *q, Cursor *c)
{
	Assert(!c->lazy);
	if (c->doc == GPUIR_DOC_END)
		return;
	if (c->pos + 1 < c->n)
	{
		c->doc = c->docs[++c->pos];
		return;
	}
	if (c->blk + 1 >= c->nblocks)
	{
		c->blk = c->nblocks;
		c->doc = GPUIR_DOC_END;
		return;
	}
	c->blk++;
	c->lazy = true;
	c->doc = c->dir[c->blk - 1].last_docid + 1;
}

/* score the pivot document and advance every cursor on it (lazily) */
static void
evaluate_pivot(GpuirQuery *q, Cursor **cur, int ncur, Cursor **ord, uint32 pd)
{
	score_doc(q, cur, ncur, pd);
	for (int i = 0; i < ncur && ord[i]->doc == pd; i++)
		cursor_next_lazy(q, ord[i]);
}

/*
 * materialize_group: decode the lazy cursors whose lower bound is pd (ord is
 * sorted, so they are a prefix); returns true when all of them really are on
 * pd, false when one moved past it (the caller re-sorts and loops).
 */
static bool
materialize_group(GpuirQuery *q, Cursor **ord, int n, uint32 pd)
{
	bool		all = true;

	for (int i = 0; i < n && ord[i]->doc == pd; i++)
	{
		cursor_materialize(q, ord[i]);
		if (ord[i]->doc != pd)
			all = false;
	}
	return all;
}

/*
 * run_wand: WAND (Broder et al. 2003, section 3.1) with list-level bounds,
 * or, with block_max, Block-Max WAND (Ding & Suel 2011, section 4,
 * Algorithm 2): after the pivot, the block-max bounds of the blocks holding
 * it (shallow moves over block headers) must reach the threshold too, else
 * every cursor of the pivot group jumps past the end of those blocks.
 */
static void
run_wand(GpuirQuery *q, Cursor **cur, int ncur, bool block_max)
{
	Cursor	  **ord = palloc(sizeof(Cursor *) * ncur);

	memcpy(ord, cur, sizeof(Cursor *) * ncur);
	for (;;)
	{
		int			p;
		uint32		pd;

		query_tick(q);
		sort_by_doc(ord, ncur);
		p = find_pivot(q, ord, ncur);
		if (p < 0)
			break;
		pd = ord[p]->doc;
		/* every cursor on the pivot document joins the pivot group */
		while (p + 1 < ncur && ord[p + 1]->doc == pd)
			p++;

		if (block_max)
		{
			double		bsum = 0.0;
			uint32		next = (p + 1 < ncur) ? ord[p + 1]->doc : GPUIR_DOC_END;

			for (int i = 0; i <= p; i++)
			{
				uint32		last;

				bsum += cursor_block_bound(ord[i], pd, &last);
				next = Min(next, last + 1);
			}
			if (!bound_passes(q, bsum))
			{
				/*
				 * No document before the end of the current blocks (nor
				 * before the next list's docID) can reach the threshold: skip
				 * past them without decoding.
				 */
				for (int i = 0; i <= p; i++)
					cursor_next_geq(q, ord[i], next, true);
				continue;
			}
		}

		if (ord[0]->doc == pd)
		{
			if (materialize_group(q, ord, ncur, pd))
				evaluate_pivot(q, cur, ncur, ord, pd);
		}
		else
		{
			/* move the cursors before the pivot up to it */
			for (int i = 0; i <= p && ord[i]->doc < pd; i++)
				cursor_next_geq(q, ord[i], pd, true);
		}
	}
	pfree(ord);
}

/* run the mode over segment s */
static void
run_segment(GpuirQuery *q, int s, GpuirMode mode)
{
	Cursor	   *cursors = palloc(sizeof(Cursor) * q->nterms);
	Cursor	  **cur = palloc(sizeof(Cursor *) * q->nterms);
	int			ncur = 0;

	q->seg = &q->meta.segments[s];
	for (int t = 0; t < q->nterms; t++)
	{
		GpuirDictEntry *de = &q->entries[s * q->nterms + t];

		if (de->npostings == 0)
		{
			if (mode == GPUIR_MODE_AND)
				goto done;		/* a missing term: no conjunctive match here */
			continue;
		}
		cursor_open(q, &cursors[ncur], t, de);
		cur[ncur] = &cursors[ncur];
		ncur++;
	}
	if (ncur == 0)
		goto done;

	GpuirStreamReaderInit(&q->tids, q->index, q->seg, GPUIR_S_TIDS);
	GpuirStreamReaderInit(&q->dls, q->index, q->seg, GPUIR_S_DOCLENS);
	GpuirStreamReaderInit(&q->del, q->index, q->seg, GPUIR_S_DELETED);
	switch (mode)
	{
		case GPUIR_MODE_AND:
			run_and(q, cur, ncur);
			break;
		case GPUIR_MODE_OR:
			run_or(q, cur, ncur);
			break;
		case GPUIR_MODE_WAND:
			run_wand(q, cur, ncur, false);
			break;
		case GPUIR_MODE_BMW:
		case GPUIR_MODE_AND_OR:
			run_wand(q, cur, ncur, true);
			break;
	}
	GpuirStreamReaderEnd(&q->tids);
	GpuirStreamReaderEnd(&q->dls);
	GpuirStreamReaderEnd(&q->del);
done:
	for (int i = 0; i < ncur; i++)
		cursor_close(cur[i]);
	pfree(cursors);
	pfree(cur);
}

/* ---------- the insert buffer ---------- */

static void
collect_bufdoc(const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
			   uint64 offset, void *arg)
{
	GpuirQuery	   *q = arg;
	BufDoc	   *bd;
	int			j = 0;

	if (rec->flags & GPUIR_REC_DELETED)
		return;
	if (q->nbufdocs == q->bufcap)
	{
		q->bufcap = Max(64, q->bufcap * 2);
		q->bufdocs = q->bufdocs ? repalloc(q->bufdocs, sizeof(BufDoc) * q->bufcap)
			: palloc(sizeof(BufDoc) * q->bufcap);
	}
	bd = &q->bufdocs[q->nbufdocs];
	bd->tfs = NULL;
	bd->nmatch = 0;
	/* merge the record's sorted lexemes with the sorted query terms */
	for (int t = 0; t < q->nterms && j < doc->nterms;)
	{
		int			c = GpuirLexemeCmp(q->terms[t].lexeme, q->terms[t].len,
									   doc->terms[j].lexeme, doc->terms[j].len);

		if (c == 0)
		{
			if (bd->tfs == NULL)
				bd->tfs = palloc0(sizeof(uint32) * q->nterms);
			bd->tfs[t] = doc->terms[j].tf;
			bd->nmatch++;
			q->terms[t].df++;
			t++;
			j++;
		}
		else if (c < 0)
			t++;
		else
			j++;
	}
	if (bd->nmatch > 0)
	{
		bd->tid = rec->tid;
		bd->dl = rec->dl;
		q->nbufdocs++;
	}
}

static void
run_buffer(GpuirQuery *q, GpuirMode mode)
{
	for (int i = 0; i < q->nbufdocs; i++)
	{
		BufDoc	   *bd = &q->bufdocs[i];
		float4		score = 0.0f;

		query_tick(q);
		if (mode == GPUIR_MODE_AND && bd->nmatch < q->nterms)
			continue;
		for (int t = 0; t < q->nterms; t++)
			if (bd->tfs[t] > 0)
				score += GpuirBM25(q->terms[t].idf, bd->tfs[t], bd->dl, &q->sc);
		GpuirLastQueryStats.docs_scored++;
		consider(q, &bd->tid, score, 0, false);
	}
}

/* ---------- the query ---------- */

/* look up every query term in segment s's dictionary (binary search) */
static void
lookup_terms(GpuirQuery *q, int s)
{
	GpuirSegmentData *seg = &q->meta.segments[s];
	GpuirStreamReader dict;
	GpuirStreamReader lex;
	char		buf[2048];

	if (seg->streams[GPUIR_S_DICT].nbytes != (uint64) seg->nterms * sizeof(GpuirDictEntry))
		GpuirCorrupt(q->index, "segment stream sizes do not match the segment directory");
	GpuirStreamReaderInit(&dict, q->index, seg, GPUIR_S_DICT);
	GpuirStreamReaderInit(&lex, q->index, seg, GPUIR_S_LEXEMES);
	for (int t = 0; t < q->nterms; t++)
	{
		GpuirDictEntry *out = &q->entries[s * q->nterms + t];
		int64		lo = 0,
					hi = (int64) seg->nterms - 1;

		memset(out, 0, sizeof(GpuirDictEntry));
		while (lo <= hi)
		{
			int64		mid = lo + (hi - lo) / 2;
			GpuirDictEntry de;
			int			c;

			GpuirStreamRead(&dict, mid * sizeof(GpuirDictEntry), &de, sizeof(de));
			if (de.lexeme_len > sizeof(buf))
				GpuirCorrupt(q->index, "dictionary lexeme too long");
			GpuirStreamRead(&lex, de.lexeme_off, buf, de.lexeme_len);
			c = GpuirLexemeCmp(q->terms[t].lexeme, q->terms[t].len, buf, de.lexeme_len);
			if (c == 0)
			{
				if (de.df > 0)
				{
					*out = de;
					q->terms[t].df += de.df;
				}
				break;
			}
			if (c < 0)
				hi = mid - 1;
			else
				lo = mid + 1;
		}
	}
	GpuirStreamReaderEnd(&dict);
	GpuirStreamReaderEnd(&lex);
}

/* keep the query's scoring context for GpuirRememberedScore */
static void
remember_scoring(GpuirQuery *q, const char *query, int querylen)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
	RememberedScoring *r;

	if (remembered)
	{
		for (int t = 0; t < remembered->nterms; t++)
			pfree(remembered->lexemes[t]);
		pfree(remembered->query);
		if (remembered->nterms > 0)
		{
			pfree(remembered->lexemes);
			pfree(remembered->lens);
			pfree(remembered->idf);
		}
		pfree(remembered);
		remembered = NULL;
	}
	r = palloc0(sizeof(RememberedScoring));
	r->query = palloc(Max(querylen, 1));
	memcpy(r->query, query, querylen);
	r->querylen = querylen;
	r->cfg_id = q->meta.cfg_id;
	r->sc = q->sc;
	r->nterms = q->nterms;
	if (q->nterms > 0)
	{
		r->lexemes = palloc(sizeof(char *) * q->nterms);
		r->lens = palloc(sizeof(uint16) * q->nterms);
		r->idf = palloc(sizeof(float4) * q->nterms);
	}
	for (int t = 0; t < q->nterms; t++)
	{
		r->lexemes[t] = palloc(Max(q->terms[t].len, 1));
		memcpy(r->lexemes[t], q->terms[t].lexeme, q->terms[t].len);
		r->lens[t] = q->terms[t].len;
		r->idf[t] = q->terms[t].idf;
	}
	remembered = r;
	MemoryContextSwitchTo(old);
}

/*
 * GpuirRememberedScore: the BM25 score of document doc for query with the
 * statistics of this backend's last gpuir index scan, if that scan ran the
 * same query text (returns false otherwise).  The document is tokenized
 * again, so the value is exact for any row, with the same float32 formula
 * and term order as the engine.
 */
bool
GpuirRememberedScore(const char *query, int querylen, const char *doc, int doclen,
					 float4 *score)
{
	GpuirDocTerms dt;
	float4		s = 0.0f;
	int			j = 0;

	if (remembered == NULL || remembered->querylen != querylen ||
		memcmp(remembered->query, query, querylen) != 0)
		return false;
	GpuirTokenize(remembered->cfg_id, doc, doclen, &dt);
	for (int t = 0; t < remembered->nterms && j < dt.nterms;)
	{
		int			c = GpuirLexemeCmp(remembered->lexemes[t], remembered->lens[t],
									   dt.terms[j].lexeme, dt.terms[j].len);

		if (c == 0)
		{
			s += GpuirBM25(remembered->idf[t], dt.terms[j].tf, dt.dl, &remembered->sc);
			t++;
			j++;
		}
		else if (c < 0)
			t++;
		else
			j++;
	}
	*score = s;
	return true;
}

static int
result_cmp(const void *a, const void *b)
{
	const GpuirResult *ra = a;
	const GpuirResult *rb = b;

	if (result_better(ra->score, (ItemPointer) &ra->tid, rb->score, (ItemPointer) &rb->tid))
		return -1;
	if (result_better(rb->score, (ItemPointer) &rb->tid, ra->score, (ItemPointer) &ra->tid))
		return 1;
	return 0;
}

static void
run_all(GpuirQuery *q, GpuirMode mode)
{
	q->nheap = 0;
	for (uint32 s = 0; s < q->meta.nsegments; s++)
		run_segment(q, s, mode);
	run_buffer(q, mode);
}

/* ---------- preparing, running and finishing a query ---------- */

/*
 * query_prepare: tokenize the query, take the metapage and insert buffer
 * snapshot, look the terms up in every segment and compute the global df
 * and idf.  Afterwards q->ready says whether anything can match.
 */
static void
query_prepare(GpuirQuery *q, Relation index, Relation heap, Snapshot snapshot,
			  const char *query, int querylen, int k)
{
	GpuirDocTerms qdoc;
	char	   *bufdata;

	memset(q, 0, sizeof(*q));
	q->index = index;
	q->heap = heap;
	q->snapshot = snapshot;
	q->k = k;

	bufdata = GpuirBufferSnapshot(index, &q->meta, NULL);
	GpuirTokenize(q->meta.cfg_id, query, querylen, &qdoc);
	if (qdoc.nterms > GPUIR_MAX_QUERY_TERMS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuir query has %d distinct lexemes, more than the limit of %d",
						qdoc.nterms, GPUIR_MAX_QUERY_TERMS)));
	q->nterms = qdoc.nterms;
	q->terms = palloc0(sizeof(QTerm) * Max(q->nterms, 1));
	for (int t = 0; t < q->nterms; t++)
	{
		q->terms[t].lexeme = qdoc.terms[t].lexeme;
		q->terms[t].len = qdoc.terms[t].len;
	}
	if (q->nterms == 0 || q->meta.ndocs == 0)
		return;

	/* global statistics: df over every segment and the buffer */
	GpuirBufferForEach(index, bufdata, q->meta.buf_nbytes, collect_bufdoc, q);

	/*
	 * q->bufdocs holds copies of what the query needs from the buffer:
	 * free the buffer's bytes now, not with the query, else a batch keeps a
	 * copy of the whole buffer per query (and a canceled batch spends its
	 * time returning that memory).
	 */
	pfree(bufdata);
	q->entries = palloc0(sizeof(GpuirDictEntry) * Max(q->meta.nsegments, 1) * q->nterms);
	for (uint32 s = 0; s < q->meta.nsegments; s++)
		lookup_terms(q, s);
	q->sc.k1 = q->meta.k1;
	q->sc.b = q->meta.b;
	q->sc.N = q->meta.ndocs;
	q->sc.avgdl = (float4) ((double) q->meta.total_dl / (double) q->meta.ndocs);
	for (int t = 0; t < q->nterms; t++)
		q->terms[t].idf = GpuirIdf(q->sc.N, Min(q->terms[t].df, q->sc.N));

	q->topk = palloc(sizeof(GpuirResult) * k);
	q->heap_nblocks = RelationGetNumberOfBlocks(heap);
	q->fetch = table_index_fetch_begin(heap);
	q->slot = table_slot_create(heap, NULL);
	q->ready = true;
}

/* query_run_cpu: the CPU engine */
static void
query_run_cpu(GpuirQuery *q, GpuirMode mode)
{
	if (mode == GPUIR_MODE_AND_OR)
	{
		run_all(q, GPUIR_MODE_AND);
		if (q->nheap < q->k)
			run_all(q, GPUIR_MODE_BMW);
	}
	else
		run_all(q, mode);
}

/*
 * query_finish: release the heap access and return the results, best
 * first, palloc'd in memory context target.
 */
static int
query_finish(GpuirQuery *q, MemoryContext target, GpuirResult **results)
{
	int			n = q->ready ? q->nheap : 0;

	if (q->ready)
	{
		table_index_fetch_end(q->fetch);
		ExecDropSingleTupleTableSlot(q->slot);
	}
	*results = MemoryContextAlloc(target, sizeof(GpuirResult) * Max(n, 1));
	if (n > 0)
	{
		memcpy(*results, q->topk, sizeof(GpuirResult) * n);
		qsort(*results, n, sizeof(GpuirResult), result_cmp);
	}
	return n;
}

/* ---------- the GPU path ---------- */

/* candidates asked of the GPU per segment: room for invisible rows */
static uint32
gpu_k(int k)
{
	return (uint32) Min(GPUIR_CUDA_MAX_K, 2 * k + 16);
}

/*
 * gpu_wanted: should q go to the GPU service?  gpuir.device = cpu never;
 * gpu whenever the service runs; auto when the query's posting lists hold
 * at least gpuir.gpu_min_postings postings, GPUIR_AUTO_PRUNED_FACTOR times
 * as many for wand and bmw (Huang et al. 2017: length-based CPU/GPU
 * assignment; the threshold is measured, see gpuirservice.h).  k above
 * GPUIR_CUDA_MAX_K and temporary indexes (local buffers the worker cannot
 * read) stay on the CPU.
 */
static bool
gpu_wanted(GpuirQuery *q, GpuirMode mode)
{
	if (gpuir_device == GPUIR_DEVICE_CPU || !q->ready || q->meta.nsegments == 0 ||
		q->k > GPUIR_CUDA_MAX_K || RelationUsesLocalBuffers(q->index))
		return false;
	if (gpuir_device == GPUIR_DEVICE_AUTO)
	{
		uint64		postings = 0;
		uint64		threshold = (uint64) gpuir_gpu_min_postings;

		if (mode == GPUIR_MODE_WAND || mode == GPUIR_MODE_BMW)
			threshold *= GPUIR_AUTO_PRUNED_FACTOR;
		for (uint32 i = 0; i < q->meta.nsegments * q->nterms; i++)
			postings += q->entries[i].npostings;
		if (postings < threshold)
			return false;
	}
	return true;
}

static void
gpu_describe(GpuirQuery *q, GpuirMode mode, GpuirGpuQuery *g)
{
	float4	   *idf = palloc(sizeof(float4) * q->nterms);

	for (int t = 0; t < q->nterms; t++)
		idf[t] = q->terms[t].idf;
	memset(g, 0, sizeof(*g));
	g->nterms = q->nterms;
	g->idf = idf;
	g->entries = q->entries;
	g->k = gpu_k(q->k);
	/* and_or's disjunction, when needed, runs on the CPU (run_queries) */
	if (mode == GPUIR_MODE_AND || mode == GPUIR_MODE_AND_OR)
		g->mode = GPUIR_CUDA_MODE_AND;
	else if (mode == GPUIR_MODE_OR)
		g->mode = GPUIR_CUDA_MODE_OR;
	else
		g->mode = GPUIR_CUDA_MODE_BMW;	/* wand and bmw: block-max pruning */
}

/*
 * gpu_merge: the top-k of q from the GPU's per-segment candidates (checked
 * against the deleted bitmaps and the snapshot by consider) and the insert
 * buffer.  Returns false when the result may not be exact: a segment whose
 * candidates were cut at g->k could hold a better visible document than the
 * k-th result (src/README, "GPU service").
 */
static bool
gpu_merge(GpuirQuery *q, GpuirGpuQuery *g, GpuirMode mode)
{
	float4		cut_score[GPUIR_MAX_SEGMENTS];
	ItemPointerData cut_tid[GPUIR_MAX_SEGMENTS];
	bool		cut[GPUIR_MAX_SEGMENTS];

	q->nheap = 0;
	for (uint32 s = 0; s < q->meta.nsegments; s++)
	{
		q->seg = &q->meta.segments[s];
		cut[s] = false;
		GpuirStreamReaderInit(&q->tids, q->index, q->seg, GPUIR_S_TIDS);
		GpuirStreamReaderInit(&q->del, q->index, q->seg, GPUIR_S_DELETED);
		for (uint32 i = 0; i < g->counts[s]; i++)
		{
			uint32		doc = g->docids[s * g->k + i];
			float4		score = g->scores[s * g->k + i];
			ItemPointerData tid;

			query_tick(q);
			if (doc >= q->seg->ndocs)
				elog(ERROR, "gpuir gpu service returned docID %u of a segment of %u documents",
					 doc, q->seg->ndocs);
			GpuirStreamRead(&q->tids, doc * sizeof(ItemPointerData), &tid, sizeof(tid));
			consider(q, &tid, score, doc, true);
			if (i + 1 == g->k)
			{
				cut[s] = true;
				cut_score[s] = score;
				cut_tid[s] = tid;
			}
		}
		GpuirStreamReaderEnd(&q->tids);
		GpuirStreamReaderEnd(&q->del);
	}
	run_buffer(q, g->mode == GPUIR_CUDA_MODE_AND ? GPUIR_MODE_AND : GPUIR_MODE_OR);

	for (uint32 s = 0; s < q->meta.nsegments; s++)
		if (cut[s] && (q->nheap < q->k ||
					   result_better(cut_score[s], &cut_tid[s],
									 q->topk[0].score, &q->topk[0].tid)))
			return false;
	return true;
}

/*
 * run_queries: answer the prepared queries qs[0..n) of one index, those the
 * GPU should take in one request to the GPU service, the others and every
 * fallback on the CPU.  A fallback is logged once per request.
 */
static void
run_queries(GpuirQuery **qs, int n, GpuirMode mode)
{
	GpuirGpuQuery *g = palloc0(sizeof(GpuirGpuQuery) * Max(n, 1));
	GpuirQuery **gq = palloc(sizeof(GpuirQuery *) * Max(n, 1));
	int			ng = 0;
	bool		answered = false;

	for (int i = 0; i < n; i++)
	{
		if (gpu_wanted(qs[i], mode))
		{
			gpu_describe(qs[i], mode, &g[ng]);
			gq[ng++] = qs[i];
		}
		else if (qs[i]->ready)
		{
			query_run_cpu(qs[i], mode);
			GpuirServiceCount(false, false);
		}
	}
	if (ng == 0)
		return;

	if (GpuirServiceReady())
	{
		char		why[256];

		answered = GpuirGpuSearch(gq[0]->index, &gq[0]->meta, &gq[0]->sc, g, ng,
								  why, sizeof(why));
		if (!answered)
			ereport(LOG,
					(errmsg("gpuir: %d queries answered by the CPU: %s", ng, why)));
	}
	else if (gpuir_device == GPUIR_DEVICE_GPU && GpuirService != NULL)
	{
		/* while the worker is away (no GPU, restarting), once per 10 s per session */
		static TimestampTz last_logged = 0;
		TimestampTz now = GetCurrentTimestamp();

		if (TimestampDifferenceExceeds(last_logged, now, 10000))
		{
			last_logged = now;
			ereport(LOG,
					(errmsg("gpuir: %d queries answered by the CPU: the gpu service is not ready", ng),
					 errdetail("Further such messages of this session are suppressed for 10 seconds.")));
		}
	}

	for (int i = 0; i < ng; i++)
	{
		GpuirQuery *q = gq[i];

		if (answered && gpu_merge(q, &g[i], mode))
		{
			/* and_or: the disjunction when the conjunction is short */
			if (mode == GPUIR_MODE_AND_OR && q->nheap < q->k)
				run_all(q, GPUIR_MODE_BMW);
			GpuirServiceCount(true, false);
		}
		else
		{
			query_run_cpu(q, mode);
			GpuirServiceCount(false, GpuirService != NULL);
		}
	}
}

/*
 * GpuirSearch: the top-k documents of index for query, best first (score
 * descending, heap TID ascending), visible to snapshot and not deleted.
 *
 * query[0..querylen) is tokenized with the index's text search
 * configuration; each distinct lexeme counts once.  k is 1..GPUIR_MAX_K.
 * Returns the number of results (0..k) and *results, palloc'd in the
 * caller's memory context.  Runs on the GPU service or the CPU engine
 * (gpuir.device; same results).  Fills GpuirLastQueryStats (CPU work
 * only); with remember, keeps the scoring context for GpuirRememberedScore.
 * Raises ERRCODE_INDEX_CORRUPTED on corrupt pages and 54000 for more than
 * GPUIR_MAX_QUERY_TERMS distinct query lexemes.
 */
int
GpuirSearch(Relation index, Relation heap, Snapshot snapshot,
			const char *query, int querylen, int k, GpuirMode mode,
			bool remember, GpuirResult **results)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(caller, "gpuir query", ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	GpuirQuery	q;
	GpuirQuery *qp = &q;
	int			n;

	memset(&GpuirLastQueryStats, 0, sizeof(GpuirLastQueryStats));
	query_prepare(&q, index, heap, snapshot, query, querylen, k);
	run_queries(&qp, 1, mode);
	if (remember)
		remember_scoring(&q, query, querylen);
	n = query_finish(&q, caller, results);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return n;
}

/*
 * GpuirSearchBatch: GpuirSearch for the queries texts[0..nq) of one index,
 * sent to the GPU service as one request (the service batches it with the
 * requests of other backends).  results[i] and counts[i] receive query i's
 * answer, palloc'd in the caller's memory context.
 */
void
GpuirSearchBatch(Relation index, Relation heap, Snapshot snapshot,
				 text **texts, int nq, int k, GpuirMode mode,
				 GpuirResult **results, int *counts)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(caller, "gpuir query batch",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	GpuirQuery *qs = palloc0(sizeof(GpuirQuery) * Max(nq, 1));
	GpuirQuery **qp = palloc(sizeof(GpuirQuery *) * Max(nq, 1));

	memset(&GpuirLastQueryStats, 0, sizeof(GpuirLastQueryStats));
	for (int i = 0; i < nq; i++)
	{
		CHECK_FOR_INTERRUPTS();
		query_prepare(&qs[i], index, heap, snapshot, VARDATA_ANY(texts[i]),
					  VARSIZE_ANY_EXHDR(texts[i]), k);
		qp[i] = &qs[i];
	}
	run_queries(qp, nq, mode);
	for (int i = 0; i < nq; i++)
		counts[i] = query_finish(&qs[i], caller, &results[i]);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
}

/*
 * GpuirQueryTerms: the distinct lexemes of query for index, in term order,
 * with their global df (all segments and the insert buffer, rows removed by
 * VACUUM excluded) and idf; *lexemes, *dfs and *idfs are palloc'd in the
 * caller's memory context.  Returns the number of lexemes.
 */
int
GpuirQueryTerms(Relation index, Relation heap, const char *query, int querylen,
				char ***lexemes, int64 **dfs, float4 **idfs)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt = AllocSetContextCreate(caller, "gpuir query terms",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	GpuirQuery	q;
	int			n;

	query_prepare(&q, index, heap, GetActiveSnapshot(), query, querylen, 1);
	n = q.nterms;
	*lexemes = MemoryContextAlloc(caller, sizeof(char *) * Max(n, 1));
	*dfs = MemoryContextAlloc(caller, sizeof(int64) * Max(n, 1));
	*idfs = MemoryContextAlloc(caller, sizeof(float4) * Max(n, 1));
	for (int t = 0; t < n; t++)
	{
		(*lexemes)[t] = MemoryContextAlloc(caller, q.terms[t].len + 1);
		memcpy((*lexemes)[t], q.terms[t].lexeme, q.terms[t].len);
		(*lexemes)[t][q.terms[t].len] = '\0';
		(*dfs)[t] = (int64) q.terms[t].df;
		(*idfs)[t] = q.terms[t].idf;
	}
	if (q.ready)
	{
		table_index_fetch_end(q.fetch);
		ExecDropSingleTupleTableSlot(q.slot);
	}
	MemoryContextSwitchTo(old);
	MemoryContextDelete(cxt);
	return n;
}
