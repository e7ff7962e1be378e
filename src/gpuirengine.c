/*-------------------------------------------------------------------------
 *
 * gpuirengine.c
 *	  The CPU query engine: exact top-k BM25 by document-at-a-time
 *	  processing over cursors on the compressed posting blocks, with the
 *	  modes AND, OR (exhaustive), WAND, Block-Max WAND and AND-then-OR.
 *	  It is also the oracle the GPU engine is checked against.  Routing to
 *	  the GPU service and merging its answers are gpuirquery.c's.
 *
 * Sources:
 *	- Broder, Carmel, Herscovici, Soffer, Zien, "Efficient query evaluation
 *	  using a two-level retrieval process", CIKM 2003 (WAND, section 3).
 *	- Ding & Suel, "Faster top-k document retrieval using block-max
 *	  indexes", SIGIR 2011 (BMW, section 4, Algorithm 2).
 *	- Ding, He, Yan, Suel, WWW 2009, section 8.3 (AND, then OR when the
 *	  conjunction yields fewer than k results).
 *	- Turtle & Flood, "Query evaluation: strategies and optimizations", IP&M
 *	  1995 (term-at-a-time evaluation into accumulators, section 3.1;
 *	  MaxScore's essential and non-essential lists, section 3.2): run_taat.
 *	- Hoare, "Algorithm 65: Find", CACM 1961 (selection): the cut of the
 *	  top-k of a large k and of TaatTopk (gpuirselect.h).
 *
 * Exactness: one float32 formula (GpuirBM25), each document's score summed
 * in the query's term order whatever the mode, then its document prior
 * added (GpuirPriorScore, in an index with a prior column), bounds computed
 * in double, including the segment's largest prior, and inflated by
 * GPUIR_BOUND_SLACK, pruning only when a bound is strictly below the k-th
 * score, and a total order (score descending, heap TID ascending) in the
 * top-k: OR, WAND, BMW and term at a time (used only in segments
 * without priors) return the same rows and scores.
 * Candidates enter the top-k only if not deleted by VACUUM and visible to the
 * snapshot (checked for the final top-k only when the query has no row
 * filter, and the query run again with a check per candidate should one of
 * them be invisible), so k visible rows come back when dead entries exist.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/relation.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "lib/qunique.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "port/pg_bitutils.h"
#include "common/hashfn.h"
#include "gpuirdicthints.h"
#include "gpuirengine.h"

GpuirQueryStats GpuirLastQueryStats;

/* a query's cursor over one term's posting list in one segment */
typedef struct Cursor
{
	int			term;			/* index into GpuirQuery.terms */
	float4		idf;
	double		ub;				/* list-level score bound */
	double	   *bmax;			/* block-max score bound of each block */
	int			blk;			/* block of the current posting (nblocks: done) */
	int			sblk;			/* block reached by shallow moves (BMW) */
	double		bcoef;			/* idf (k1 + 1): a bound is bcoef tf / (tf + norm) */
	uint32		tf;				/* score_doc: the tf of the document scored */
	int			pos;			/* posting in the decoded block */
	bool		lazy;			/* in block blk, not decoded: doc is a lower bound */
	uint32		doc;			/* current docID or GPUIR_DOC_END */
	GpuirListCursor list;		/* the list's headers and decoded block */
} Cursor;

/* ---------- top-k: a heap below GPUIR_SELECT_MIN_K, an array cut by selection from it ---------- */

/*
 * From this k the top-k is an array of 2k cut by selection (gpuirengine.h):
 * at k = 1000 the heap's sift-downs were 43% of a <@> LIMIT 1000 search's
 * instructions (callgrind, 455k rows).  Below it the heap, whose k-th is
 * exact after every candidate, keeps the tightest threshold for pruning.
 */
#define GPUIR_SELECT_MIN_K	128

static inline bool
heap_worse(const GpuirResult *a, const GpuirResult *b)
{
	return GpuirResultBetter(b->score, (ItemPointer) &b->tid, a->score, (ItemPointer) &a->tid);
}

static inline bool
result_better(void *arg, const GpuirResult *a, const GpuirResult *b)
{
	return GpuirResultBetter(a->score, (ItemPointer) &a->tid, b->score, (ItemPointer) &b->tid);
}

/* result_select(NULL, c, n, k): c's best k to c[0, k) (gpuirselect.h) */
#define SEL_NAME result_select
#define SEL_ELEMENT_TYPE GpuirResult
#define SEL_ARG_TYPE void *
#define SEL_BETTER(arg, a, b) result_better(arg, a, b)
#include "gpuirselect.h"

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
	if (q->nheap == q->k)
		q->kth = q->topk[0];
}

/* select_cut: cut the array to its best k; kth becomes the exact k-th of what was kept */
static void
select_cut(GpuirQuery *q)
{
	if (q->nheap <= q->k)
		return;
	result_select(NULL, q->topk, q->nheap, q->k);
	q->nheap = q->k;
	q->kth = q->topk[q->k - 1];
}

/*
 * select_push: append r; a full array (2k) is cut to its best k, and the
 * first k kept make the first threshold, their worst
 */
static void
select_push(GpuirQuery *q, const GpuirResult *r)
{
	q->topk[q->nheap++] = *r;
	if (q->nheap == 2 * q->k)
		select_cut(q);
	else if (q->nheap == q->k)
	{
		int			w = 0;

		for (int i = 1; i < q->k; i++)
			if (heap_worse(&q->topk[i], &q->topk[w]))
				w = i;
		q->kth = q->topk[w];
	}
}

/*
 * GpuirQuerySettle: cut q's top-k to its k best, so that topk[0, nheap)
 * are the exact top-k so far (unordered) and kth, when full, the exact
 * k-th.  Nothing to do for a heap.
 */
void
GpuirQuerySettle(GpuirQuery *q)
{
	if (q->select)
		select_cut(q);
}

/* GpuirQueryResetTopk: empty q's top-k */
void
GpuirQueryResetTopk(GpuirQuery *q)
{
	q->nheap = 0;
}

/*
 * may a document whose BM25 score is at most bound, and whose prior adds at
 * most prior (GpuirPriorScore), still enter the top-k?
 */
static inline bool
bound_prior_passes(GpuirQuery *q, double bound, double prior)
{
	return (bound + prior) * GPUIR_BOUND_SLACK >= (double) GpuirQueryThreshold(q);
}

/*
 * bound_prior_passes with the most any prior of the segment adds
 * (q->prior_bound)
 */
static inline bool
bound_passes(GpuirQuery *q, double bound)
{
	return bound_prior_passes(q, bound, q->prior_bound);
}

/*
 * fetch_visible: fetch the row of index entry tid (its HOT chain) into
 * q->slot with q's snapshot; true, with *heap_tid the visible version's
 * TID, when there is one.  The caller clears the slot.
 */
static bool
fetch_visible(GpuirQuery *q, ItemPointer tid, ItemPointer heap_tid)
{
	bool		call_again = false;
	bool		all_dead = false;
	ItemPointerData fetch_tid = *tid;

	if (!table_index_fetch_tuple(q->fetch, &fetch_tid, q->snapshot, q->slot,
								 &call_again, &all_dead))
		return false;
	*heap_tid = q->slot->tts_tid;
	return true;
}

/*
 * fetch_all_visible: the shortcut of an index-only scan (nodeIndexonlyscan.c)
 * for the final top-k's check.  For a heap table whose visibility map marks
 * tid's page all-visible, every tuple on the page is visible to every
 * snapshot, so the row of index entry tid is visible without reading its
 * tuple: true, with *heap_tid its line pointer (tid itself, or where a
 * redirect points: a HOT chain pruned to its live member, which on an
 * all-visible page is the only one).
 *
 * The bit is read first without a lock (no page read for a page that is
 * not all-visible), then again under the page's share lock, and only that
 * reading counts.  Unlike an index-only scan's, the entry's TID is not
 * held by a pin on an index page: a VACUUM that ends while q runs may free
 * the TID of a row deleted before q's snapshot, mark the page all-visible,
 * and an insert may then reuse the TID for a row q cannot see.  The bit is
 * set and cleared only under the page's exclusive lock (and replay clears
 * it before it changes the page), so under the share lock it describes the
 * page as read: the inserted row's page has it clear.  A change after q's
 * snapshot otherwise leaves the version q sees where its line pointer was
 * (q's xmin keeps it from being pruned).  False, and the caller fetches
 * the row (fetch_visible, which tests the tuple against the snapshot), for
 * another table AM or snapshot, a page not all-visible, or a line pointer
 * that is neither normal nor a redirect to a normal one.  Saves reading
 * the tuple's header and its visibility test (and the page's prune check)
 * for each of the top k.
 */
static bool
fetch_all_visible(GpuirQuery *q, ItemPointer tid, ItemPointer heap_tid)
{
	BlockNumber blk = ItemPointerGetBlockNumber(tid);
	OffsetNumber off = ItemPointerGetOffsetNumber(tid);
	Buffer		buf;
	Page		page;
	OffsetNumber maxoff;
	bool		found = false;

	if (!q->heap_vm || !VM_ALL_VISIBLE(q->heap, blk, &q->vmbuf))
		return false;
	buf = ReadBuffer(q->heap, blk);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	maxoff = PageGetMaxOffsetNumber(page);
	/* the reading that counts: under the lock (see above) */
	if (VM_ALL_VISIBLE(q->heap, blk, &q->vmbuf) &&
		off >= FirstOffsetNumber && off <= maxoff)
	{
		ItemId		lp = PageGetItemId(page, off);

		if (ItemIdIsRedirected(lp))
		{
			off = ItemIdGetRedirect(lp);
			lp = off >= FirstOffsetNumber && off <= maxoff ? PageGetItemId(page, off) : NULL;
		}
		if (lp != NULL && ItemIdIsNormal(lp))
		{
			ItemPointerSet(heap_tid, blk, off);
			found = true;
		}
	}
	UnlockReleaseBuffer(buf);
	return found;
}

/* may (score, tid) be returned by q? With an after cursor, only what ranks after it */
static inline bool
after_cursor_passes(const GpuirQuery *q, float4 score, ItemPointer tid)
{
	return !q->after_set ||
		GpuirResultBetter(q->after_score, (ItemPointer) &q->after_tid, score, tid);
}

/*
 * may q's current segment hold deleted documents?  Not when the metapage
 * that q read, after its MVCC snapshot was taken, counts none in it and no
 * VACUUM pending: VACUUM sets vacuum_pending before it marks a document
 * and clears it in the record that writes the new counts, so the bitmap
 * had no bit set then.  A VACUUM that marks documents later marks rows dead
 * to every snapshot (the final visibility check drops them:
 * fetch_visible, or fetch_all_visible, which takes a page's all-visible
 * bit only under its lock), and the heap reuses their TIDs only after it
 * has marked them, that is after q's snapshot: a row that reuses one is
 * invisible to it.  Other snapshots read the bitmap.
 * Saves a page read per candidate (the GPU path's ten) on segments without
 * deletions.
 */
static inline bool
segment_may_have_deleted(const GpuirQuery *q)
{
	return q->seg->ndeleted > 0 || q->meta.vacuum_pending ||
		q->snapshot == NULL || !IsMVCCSnapshot(q->snapshot);
}

/* is docID segdoc of q's current segment deleted? (its deletion bitmap) */
static inline bool
segdoc_deleted(GpuirQuery *q, uint32 segdoc)
{
	uint8		byte;

	if (!segment_may_have_deleted(q))
		return false;
	GpuirStreamRead(&q->del, segdoc / 8, &byte, 1);
	return (byte & (1 << (segdoc % 8))) != 0;
}

/*
 * GpuirQueryConsider: offer a scored candidate; it enters the top-k when it
 * beats kth (once k are kept), ranks after the query's after cursor (if
 * any), is not marked deleted (check_deleted: look segdoc up in the
 * segment's deleted bitmap; false where the caller filtered already: buffer
 * documents, and term at a time, which reads a window's bits at once), is
 * visible to the query's snapshot and passes the query's row
 * filter (a tsquery's operators).  The top-k holds only rows that pass, so
 * kth is a true threshold for WAND and BMW.
 *
 * Without a row filter the snapshot check is deferred (q->defer_visibility):
 * candidates enter the top-k unchecked and GpuirQueryCheckVisible checks the
 * final top-k only, k table fetches instead of one per candidate; or none
 * at all when the caller checks (q->visible_by_caller: an index scan).
 */
void
GpuirQueryConsider(GpuirQuery *q, ItemPointer tid, float4 score, uint32 segdoc, bool check_deleted)
{
	GpuirResult r;

	if (GpuirQueryFull(q) && !GpuirResultBetter(score, tid, q->kth.score, &q->kth.tid))
		return;
	/* the next page: only what ranks after the last result of the previous one */
	if (!after_cursor_passes(q, score, tid))
		return;
	if (check_deleted && segdoc_deleted(q, segdoc))
		return;
	/*
	 * A live entry's TID is inside the table (VACUUM marks an entry before
	 * the table can be truncated, and the table is locked): a TID from a
	 * corrupt page must not reach the table AM.
	 */
	if (!GpuirRelationHolds(q->heap, (uint64) ItemPointerGetBlockNumberNoCheck(tid) + 1) ||
		ItemPointerGetOffsetNumberNoCheck(tid) < FirstOffsetNumber)
		GpuirCorrupt(q->index, "heap TID outside the table");
	r.score = score;
	r.tid = *tid;
	ItemPointerSetInvalid(&r.heap_tid);	/* set by GpuirQueryCheckVisible */
	if (!q->defer_visibility)
	{
		bool		pass = fetch_visible(q, tid, &r.heap_tid) &&
			(q->filter == NULL || q->filter(q->filter_arg, q->slot));

		ExecClearTuple(q->slot);
		if (!pass)
			return;
	}
	if (q->select)
		select_push(q, &r);
	else
		heap_push(q, &r);
}

/*
 * GpuirQueryCheckVisible: check the kept results of a query that deferred
 * the snapshot check (GpuirQueryConsider) and set their heap_tid.  When
 * every one is visible, they are the top-k of the visible rows: every
 * document left out or pruned ranked below all of them.  When one is not
 * (a row deleted or updated, not yet vacuumed), the top-k's threshold was
 * too high to prune by, so q is reset to check each candidate as it comes
 * (the top-k emptied) and false is returned: the caller runs q again.
 * Nothing to check (true) for a query whose caller checks visibility.
 */
bool
GpuirQueryCheckVisible(GpuirQuery *q)
{
	if (!q->ready || !q->defer_visibility || q->visible_by_caller)
		return true;
	GpuirQuerySettle(q);
	for (int i = 0; i < q->nheap; i++)
	{
		bool		visible;

		if (fetch_all_visible(q, &q->topk[i].tid, &q->topk[i].heap_tid))
			continue;
		visible = fetch_visible(q, &q->topk[i].tid, &q->topk[i].heap_tid);
		ExecClearTuple(q->slot);
		if (!visible)
		{
			q->defer_visibility = false;
			GpuirQueryResetTopk(q);
			return false;
		}
	}
	return true;
}

/* ---------- cursors ---------- */

/*
 * The query's cursors move over a list's blocks (GpuirListCursor,
 * gpuirlistread.c, which checks and decodes them) document by document.
 */

/*
 * cursor_decode: decode block blk of c's list (the one reader's checks),
 * its tfs too with with_tfs (run_taat reads them all)
 */
static void
cursor_decode(Cursor *c, int blk, bool with_tfs)
{
	GpuirListDecode(&c->list, (uint32) blk, with_tfs);
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
	if (c->list.dir[b].last_docid < target)
	{
		b = (int) GpuirListSeek(&c->list, (uint32) b + 1, target);
		if (b >= (int) c->list.nblocks)
		{
			c->blk = c->list.nblocks;
			c->lazy = false;
			c->doc = GPUIR_DOC_END;
			return;
		}
	}
	c->blk = b;
	if (c->list.decoded != b)
	{
		if (lazy)
		{
			c->lazy = true;
			c->doc = target;
			return;
		}
		cursor_decode(c, b, false);
		c->pos = 0;
	}
	c->lazy = false;
	lo = c->pos;
	hi = c->list.n - 1;			/* docs[n-1] = last_docid >= target */
	if (c->list.docs[lo] >= target)
		hi = lo;
	else
	{
		/* gallop from pos (most moves are short), then search the last step */
		int			step = 1;

		while (lo + step < hi && c->list.docs[lo + step] < target)
		{
			lo += step;
			step <<= 1;
		}
		hi = Min(lo + step, hi);
		lo++;
	}
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (c->list.docs[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	c->pos = lo;
	c->doc = c->list.docs[lo];
}

/* cursor_materialize: decode a lazy cursor's block to find its real docID */
static void
cursor_materialize(GpuirQuery *q, Cursor *c)
{
	uint32		target = c->doc;

	if (!c->lazy)
		return;
	cursor_decode(c, c->blk, false);
	c->lazy = false;
	c->pos = 0;
	while (c->list.docs[c->pos] < target)	/* docs[n-1] = last_docid >= target */
		c->pos++;
	c->doc = c->list.docs[c->pos];
}

/*
 * cursor_next: the next posting.  Past the end of the decoded block the
 * cursor enters the next block: decoded at once, or with lazy (WAND, BMW)
 * not decoded, its doc a lower bound of the block's first docID until
 * cursor_materialize.
 */
static inline void
cursor_next(GpuirQuery *q, Cursor *c, bool lazy)
{
	Assert(!c->lazy);
	if (c->doc == GPUIR_DOC_END)
		return;
	if (c->pos + 1 < c->list.n)
	{
		c->doc = c->list.docs[++c->pos];
		return;
	}
	if (c->blk + 1 >= (int) c->list.nblocks)
	{
		c->blk = c->list.nblocks;
		c->doc = GPUIR_DOC_END;
		return;
	}
	c->blk++;
	if (lazy)
	{
		c->lazy = true;
		c->doc = c->list.dir[c->blk - 1].last_docid + 1;
		return;
	}
	cursor_decode(c, c->blk, false);
	c->pos = 0;
	c->doc = c->list.docs[0];
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

	while (b < (int) c->list.nblocks && c->list.dir[b].last_docid < target)
		b++;
	c->sblk = b;
	if (b >= (int) c->list.nblocks)
	{
		*last = GPUIR_DOC_END - 1;
		return 0.0;
	}
	*last = c->list.dir[b].last_docid;
	return c->bmax[b];
}

/* block_bound: the BM25 bound of block i of c's list, from its impacts */
static double
block_bound(GpuirQuery *q, Cursor *c, uint32 i)
{
	double		bound = 0.0;

	for (int j = 0; j < GPUIR_BLOCK_IMPACTS; j++)
		bound = Max(bound, GpuirBM25Bound(c->idf, c->list.dir[i].impact_tf[j],
										  c->list.dir[i].impact_dl[j], &q->sc));
	return bound;
}

static uint64 term_pos_epoch;	/* of the session's dictionary cache, below */

/*
 * cursor_open: a cursor on term's list de in the query's current segment
 * (number s), on its first posting, for mode's loop or, with taat,
 * run_taat's.  For run_wand (WAND, BMW, AND_OR) the block-max bound of every
 * block is computed from the headers with the query's N, avgdl and idf.
 * For run_or the first block's docIDs are decoded with it.  For run_wand
 * and run_and the first block is not decoded: the cursor is lazy on it with
 * doc 0, a lower bound (cursor_next_geq), so a list whose first blocks the
 * bounds or the other lists skip, or a segment whose lists' bounds cannot
 * reach the threshold at all, decodes nothing there.  For run_taat neither:
 * doc 0 is a lower bound too, and taat_list decodes a block when it first
 * adds from it, so a non-essential list (MaxScore) whose first block holds
 * no document an essential list touched decodes nothing there; in an index
 * of capped segments most lists are a block or two long.
 */
static void
cursor_open(GpuirQuery *q, Cursor *c, int s, int term, const GpuirDictEntry *de,
			GpuirMode mode, bool taat)
{
	bool		bounds = !taat && mode != GPUIR_MODE_OR && mode != GPUIR_MODE_AND;

	/* a short list's headers kept by the session, unless freed since the lookup */
	GpuirListOpen(&c->list, q->index, q->seg, (uint32) s, de, NULL,
				  q->dirs_epoch == term_pos_epoch ? q->dirs[s * q->nterms + term] : NULL);
	c->term = term;
	c->idf = q->terms[term].idf;
	c->bcoef = (double) c->idf * ((double) q->sc.k1 + 1.0);
	c->bmax = bounds ? palloc(sizeof(double) * c->list.nblocks) : NULL;
	c->ub = 0.0;
	for (uint32 i = 0; bounds && i < c->list.nblocks; i++)
	{
		c->bmax[i] = block_bound(q, c, i);
		/* the list bound is the largest block bound: tighter than (max tf, min dl) */
		c->ub = Max(c->ub, c->bmax[i]);
	}
	c->blk = 0;
	c->sblk = 0;
	c->pos = 0;
	c->lazy = !taat && mode != GPUIR_MODE_OR;
	if (c->lazy || taat)
	{
		c->doc = 0;				/* run_taat's: in block 0, not decoded */
		return;
	}
	cursor_decode(c, 0, false);
	c->doc = c->list.docs[0];
}

static void
cursor_close(Cursor *c)
{
	int			reached = (c->doc == GPUIR_DOC_END) ? (int) c->list.nblocks : c->blk + 1;

	/* blocks passed over by their headers alone */
	GpuirLastQueryStats.blocks_skipped += Max(reached - (int) c->list.ndecoded, 0);
	GpuirListClose(&c->list);
	if (c->bmax)
		pfree(c->bmax);
}

/* ---------- session caches ---------- */

/*
 * session_cache_reset: an empty hash table of a session cache (keysize-byte
 * keys compared as bytes, entrysize-byte entries) in *cxt, a child of
 * TopMemoryContext made when first needed and emptied otherwise, with
 * whatever the cache kept in it
 */
static HTAB *
session_cache_reset(MemoryContext *cxt, const char *name, Size keysize, Size entrysize)
{
	HASHCTL		ctl;

	if (*cxt == NULL)
		*cxt = AllocSetContextCreateInternal(TopMemoryContext, name,	/* name: a literal */
											 ALLOCSET_DEFAULT_SIZES);
	else
		MemoryContextReset(*cxt);
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = keysize;
	ctl.entrysize = entrysize;
	ctl.hcxt = *cxt;
	return hash_create(name, 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * The indexes whose contents a session cache holds (OIDs), so that a
 * relcache invalidation of one of them (DROP, REINDEX, TRUNCATE, VACUUM's
 * pg_class update, ALTER) marks the cache stale: its entries are taken
 * without reading the pages they came from, and a dropped index's
 * relfilenode must not meet them again.  Every path to a new relation file
 * sends such an invalidation (committed: to every backend, which takes it
 * when it next locks a relation, before it can open the file's new index;
 * aborted: to this backend at the abort), and a lost one (a full
 * invalidation queue) calls back with InvalidOid.  Past
 * CACHED_INDEXES_MAX indexes, any invalidation marks the cache stale.
 */
#define CACHED_INDEXES_MAX	16

typedef struct CachedIndexes
{
	Oid			oids[CACHED_INDEXES_MAX];
	int			n;
	bool		overflow;
	bool		stale;			/* the cache must be emptied before its next use */
} CachedIndexes;

static CachedIndexes term_pos_indexes;	/* term_pos's, below */
static CachedIndexes doclens_indexes;	/* doclens's, below */
static CachedIndexes layout_indexes;	/* layouts', below */

/* cached_indexes_check: an invalidation of relid (InvalidOid: of all) reached set */
static void
cached_indexes_check(CachedIndexes *set, Oid relid)
{
	if (!OidIsValid(relid) || set->overflow)
		set->stale = true;
	for (int i = 0; i < set->n && !set->stale; i++)
		set->stale = (set->oids[i] == relid);
}

/* cached_indexes_invalidate: relcache callback; each cache is emptied at its next use */
static void
cached_indexes_invalidate(Datum arg, Oid relid)
{
	cached_indexes_check(&term_pos_indexes, relid);
	cached_indexes_check(&doclens_indexes, relid);
	cached_indexes_check(&layout_indexes, relid);
}

/* cached_indexes_note: set's cache is about to hold contents of index indexoid */
static void
cached_indexes_note(CachedIndexes *set, Oid indexoid)
{
	for (int i = 0; i < set->n; i++)
		if (set->oids[i] == indexoid)
			return;
	if (set->n < CACHED_INDEXES_MAX)
		set->oids[set->n++] = indexoid;
	else
		set->overflow = true;
}

/* cached_indexes_clear: set's cache was emptied (registers the callback once) */
static void
cached_indexes_clear(CachedIndexes *set)
{
	static bool registered = false;

	if (!registered)
	{
		CacheRegisterRelcacheCallback(cached_indexes_invalidate, (Datum) 0);
		registered = true;
	}
	set->n = 0;
	set->overflow = false;
	set->stale = false;
}

/* ---------- segment layouts ---------- */

/*
 * The layouts (map page contents) of the segments in pieces that this
 * session read, keyed by the relation file, the segment's generation and
 * its map page, as the document lengths below (a generation is unique
 * within a relation file, and CachedIndexes empties the cache before a new
 * relation file can reuse a number): every stream reader of such a segment
 * needs its extents, a query opens several per segment, and a map page
 * never changes (a compaction that moves some of a segment's pages writes
 * a new one, on a block the segment never used: gpuircompact.c,
 * move_part).  At most LAYOUTS_MAX are kept;
 * past that the cache starts again.
 */
#define LAYOUTS_MAX		4096

typedef struct LayoutKey
{
	GpuirRelFile node;
	uint64		generation;
	BlockNumber map;
} LayoutKey;

typedef struct LayoutEntry
{
	LayoutKey	key;			/* hash key (zeroed padding) */
	GpuirSegmentLayout lay;
} LayoutEntry;

static HTAB *layouts = NULL;
static MemoryContext layouts_cxt = NULL;

/*
 * GpuirSegmentLayoutCached: GpuirSegmentLayoutOf(index, seg) (seg has a
 * map), from this session's cache when it holds it; the pointer is valid
 * until the next call
 */
const GpuirSegmentLayout *
GpuirSegmentLayoutCached(Relation index, const GpuirSegmentData *seg)
{
	LayoutKey	key;
	LayoutEntry *e;
	bool		found;

	Assert(seg->map != 0);
	if (layouts == NULL || layout_indexes.stale || hash_get_num_entries(layouts) >= LAYOUTS_MAX)
	{
		layouts = session_cache_reset(&layouts_cxt, "gpuir segment layouts",
									  sizeof(LayoutKey), sizeof(LayoutEntry));
		cached_indexes_clear(&layout_indexes);
	}
	memset(&key, 0, sizeof(key));
	key.node = GpuirRelationFile(index);
	key.generation = seg->generation;
	key.map = seg->map;
	e = hash_search(layouts, &key, HASH_FIND, NULL);
	if (e != NULL)
		return &e->lay;
	{
		GpuirSegmentLayout lay;

		/* read before the entry exists: an error leaves no half-made entry */
		GpuirSegmentLayoutOf(index, seg, &lay);
		cached_indexes_note(&layout_indexes, RelationGetRelid(index));
		e = hash_search(layouts, &key, HASH_ENTER, &found);
		e->lay = lay;
	}
	return &e->lay;
}

/* ---------- document lengths ---------- */

/*
 * The document lengths (and heap TIDs) of a segment, kept per session
 * (gpuir.doclength_cache).
 *
 * A query reads the length of every document it scores, and the heap TID
 * of every one that may enter its top-k; through the segment's streams
 * that is a buffer lookup, a lock and a page check per page visited, most
 * of a short query's time.  A segment's lengths and TIDs never change
 * (deletions go to its deleted bitmap; a merge writes a new segment with a
 * new generation), so a session keeps a copy of both once read (and a byte
 * of length code per document, below), keyed by the relation file, the
 * segment's generation, the lengths stream's first block and the number of
 * documents: a generation is unique within a relation file, and a relcache
 * invalidation of an index whose copies are kept empties the cache before
 * a new relation file can reuse that file's number (CachedIndexes).  A
 * visit thus finds its copy without reading a page (it read the first
 * lengths page's LSN before: one buffer lookup per segment and query, 3%
 * of a query's instructions on a 22-segment index).  Past the budget the
 * copies are dropped and the next ones made again.
 */
typedef struct DocLenKey
{
	GpuirRelFile node;
	uint64		generation;
	BlockNumber start;
	uint32		ndocs;
} DocLenKey;

struct DocLens
{
	DocLenKey	key;			/* hash key (zeroed padding) */
	uint32	   *dl;				/* ndocs lengths */
	uint8	   *dl_code;		/* ndocs length codes (dl_floor) */
	ItemPointerData *tids;		/* ndocs heap TIDs */
	float4	   *prior;			/* ndocs priors (GpuirSegmentPriors), NULL
								 * when the segment has none */
	/* run_taat's length norms (GpuirBM25Norm) for norm_sc's k1, b and avgdl */
	float4	   *norm;			/* ndocs, NULL until first computed */
	GpuirScoring norm_sc;
	uint64		stale_postings; /* scored from dl since norm went stale */
};
typedef struct DocLens DocLens;

/*
 * Length codes: one byte per document whose value dl_floor[code] is at most
 * its length (exact below 128, then steps of about 7%), so a score bound
 * from it is at least the score.  The codes of a segment take a quarter of
 * its lengths' bytes, so more of them stay in the processor's caches:
 * score_doc bounds a document by its code and reads its length only when
 * the bound reaches the top-k (run_wand prefetches the pivot's code while
 * its blocks decode).
 */
#define DL_CODES		256
#define DL_EXACT_CODES	128
static uint32 dl_floor[DL_CODES];

/* dl_floor_init: dl_floor[c] = c below DL_EXACT_CODES, then growing by ~7.3% a code */
static void
dl_floor_init(void)
{
	if (dl_floor[DL_CODES - 1] != 0)
		return;
	for (int c = 0; c < DL_CODES; c++)
		dl_floor[c] = c < DL_EXACT_CODES ? (uint32) c :
			Max(dl_floor[c - 1] + 1, (uint32) (DL_EXACT_CODES * pow(1.073, c - DL_EXACT_CODES + 1)));
}

/* dl_code: the largest code whose floor is at most dl */
static uint8
dl_code(uint32 dl)
{
	int			lo = 0,
				hi = DL_CODES - 1;

	if (dl < DL_EXACT_CODES)
		return (uint8) dl;
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (dl_floor[mid] <= dl)
			lo = mid;
		else
			hi = mid - 1;
	}
	return (uint8) lo;
}

static HTAB *doclens = NULL;
static MemoryContext doclens_cxt = NULL;
static uint64 doclens_bytes = 0;
static int	doclens_users = 0;	/* run_mode calls holding a copy */

/*
 * doclens_for: the kept lengths (and length codes) of q's current segment,
 * read now when new; NULL (read the stream) when the budget cannot hold
 * them.
 */
static DocLens *
doclens_for(GpuirQuery *q)
{
	const GpuirSegmentData *seg = q->seg;
	uint64		need = (uint64) seg->ndocs * (sizeof(uint32) + 1 + sizeof(ItemPointerData)) +
		seg->streams[GPUIR_S_PRIORS].nbytes;
	DocLenKey	key;
	DocLens    *d;
	bool		found;

	if (need == 0 || need > (uint64) gpuir_doclength_cache * 1024)
		return NULL;
	if (seg->streams[GPUIR_S_DOCLENS].nbytes != (uint64) seg->ndocs * sizeof(uint32) ||
		seg->streams[GPUIR_S_TIDS].nbytes != (uint64) seg->ndocs * sizeof(ItemPointerData))
		GpuirCorrupt(q->index, "segment streams of the wrong size for its documents");
	memset(&key, 0, sizeof(key));
	key.node = GpuirRelationFile(q->index);
	key.generation = seg->generation;
	key.start = seg->streams[GPUIR_S_DOCLENS].start;
	key.ndocs = seg->ndocs;
	if (doclens != NULL && !doclens_indexes.stale)
	{
		d = hash_search(doclens, &key, HASH_FIND, NULL);
		if (d != NULL)
			return d;
	}
	if (doclens == NULL || doclens_indexes.stale ||
		doclens_bytes + need > (uint64) gpuir_doclength_cache * 1024)
	{
		if (doclens_users > 0)
			return NULL;		/* a copy is in use: start afresh later */
		cached_indexes_clear(&doclens_indexes);
		doclens = session_cache_reset(&doclens_cxt, "gpuir document lengths",
									  sizeof(DocLenKey), sizeof(DocLens));
		doclens_bytes = 0;
	}
	cached_indexes_note(&doclens_indexes, RelationGetRelid(q->index));
	{
		MemoryContext old = MemoryContextSwitchTo(doclens_cxt);
		uint32	   *dl;
		uint8	   *code;
		ItemPointerData *tids;
		float4	   *prior;

		doclens_bytes += need;	/* counted first: a failed read's memory too */
		dl = (uint32 *) GpuirStreamReadAll(q->index, seg, GPUIR_S_DOCLENS);
		tids = (ItemPointerData *) GpuirStreamReadAll(q->index, seg, GPUIR_S_TIDS);
		prior = GpuirSegmentPriors(q->index, seg);
		code = palloc_extended(seg->ndocs, MCXT_ALLOC_HUGE);
		dl_floor_init();
		for (uint32 i = 0; i < seg->ndocs; i++)
			code[i] = dl_code(dl[i]);
		MemoryContextSwitchTo(old);
		d = hash_search(doclens, &key, HASH_ENTER, &found);
		d->dl = dl;
		d->dl_code = code;
		d->tids = tids;
		d->prior = prior;
		d->norm = NULL;
		d->stale_postings = 0;
	}
	return d;
}

/*
 * doclens_norms: the length norms of q's segment (q->lens) for q's scoring
 * constants, or NULL: score from the lengths.  avgdl changes with every
 * insert, and computing a segment's norms costs about what scoring as many
 * postings from their lengths costs, so they are computed once the postings
 * scored from lengths since they went stale (postings, this query's, added)
 * reach the segment's documents: at most twice the work of the better
 * choice, whatever the order of inserts and queries (rent or buy).  Their
 * memory counts in gpuir.doclength_cache; without room, NULL.
 */
static const float4 *
doclens_norms(GpuirQuery *q, uint64 postings)
{
	DocLens    *d = q->lens;		/* the session's copy: ours to update */
	const uint32 ndocs = q->seg->ndocs;

	if (d->norm != NULL && d->norm_sc.k1 == q->sc.k1 && d->norm_sc.b == q->sc.b &&
		d->norm_sc.avgdl == q->sc.avgdl)
		return d->norm;
	d->stale_postings += postings;
	if (d->stale_postings < ndocs)
		return NULL;
	if (d->norm == NULL)
	{
		uint64		need = (uint64) ndocs * sizeof(float4);

		if (doclens_bytes + need > (uint64) gpuir_doclength_cache * 1024)
			return NULL;		/* no room: from the lengths */
		doclens_bytes += need;
		d->norm = MemoryContextAllocExtended(doclens_cxt, need, MCXT_ALLOC_HUGE);
	}
	d->norm_sc.avgdl = -1.0f;	/* no query's: not valid until the loop ends */
	for (uint32 i = 0; i < ndocs; i++)
	{
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		d->norm[i] = GpuirBM25Norm(d->dl[i], q->sc.k1, q->sc.b, q->sc.avgdl);
	}
	d->norm_sc = q->sc;
	d->stale_postings = 0;
	return d->norm;
}

/*
 * doc_prior: what the prior of docID doc of q's segment adds to its score
 * (GpuirPriorScore; 0 in a segment without priors)
 */
static inline float4
doc_prior(GpuirQuery *q, uint32 doc)
{
	float4		p;

	if (q->prior_bound == 0.0)
		return 0.0f;
	if (q->lens != NULL)
		p = q->lens->prior[doc];	/* checked by GpuirSegmentPriors */
	else
	{
		GpuirStreamRead(&q->pri, doc * sizeof(float4), &p, sizeof(float4));
		if (!GpuirPriorInSegment(q->seg, p))
			GpuirCorrupt(q->index, GPUIR_PRIOR_CORRUPT);
	}
	return GpuirPriorScore(q->meta.prior_weight, p);
}

/* ---------- scoring within a segment ---------- */

/* score doc over the cursors positioned on it, in term order */
static void
score_doc(GpuirQuery *q, Cursor **cur, int ncur, uint32 doc)
{
	uint32		dl;
	uint32		sum_tf = 0;
	float4		score = 0.0f;
	float4		prior = 0.0f;	/* doc_prior's, once read */
	bool		have_prior = false;
	ItemPointerData tid;

	for (int i = 0; i < ncur; i++)
		if (cur[i]->doc == doc)
		{
			cur[i]->tf = GpuirListTf(&cur[i]->list, cur[i]->pos);
			sum_tf += cur[i]->tf;
		}
	GpuirLastQueryStats.docs_scored++;

	if (q->lens != NULL && unlikely(doc >= q->seg->ndocs))
		GpuirCorrupt(q->index, "docID past the end of its segment");

	/*
	 * With the top-k full, a bound at a lower bound of the length rejects
	 * most documents before their length is read (a random access): the
	 * length code's floor, and in any case the sum of the query terms' tfs
	 * (dl counts every lexeme occurrence, GpuirTokenize).  The bound is
	 * GpuirBM25Bound's formula with the query's constants taken out
	 * (bcoef, norm_a, norm_b): one division per term.
	 */
	if (GpuirQueryFull(q))
	{
		double		bound = 0.0;
		uint32		dl_low = sum_tf;
		double		norm;

		if (q->lens != NULL)
			dl_low = Max(dl_low, dl_floor[q->lens->dl_code[doc]]);
		norm = q->norm_a + q->norm_b * (double) dl_low;
		for (int i = 0; i < ncur; i++)
			if (cur[i]->doc == doc)
				bound += cur[i]->bcoef * (double) cur[i]->tf / ((double) cur[i]->tf + norm);
		/*
		 * the document's own prior when it is in memory (no random access),
		 * else the segment's largest
		 */
		if (q->lens != NULL)
		{
			prior = doc_prior(q, doc);
			have_prior = true;
		}
		if (!bound_prior_passes(q, bound, have_prior ? (double) prior : q->prior_bound))
			return;
	}
	if (q->lens != NULL)
		dl = q->lens->dl[doc];
	else
		GpuirStreamRead(&q->dls, doc * sizeof(uint32), &dl, sizeof(uint32));
	for (int i = 0; i < ncur; i++)
		if (cur[i]->doc == doc)
			score += GpuirBM25(cur[i]->idf, cur[i]->tf, dl, &q->sc);
	score += have_prior ? prior : doc_prior(q, doc);
	if (GpuirQueryFull(q) && score < q->kth.score)
		return;
	if (q->lens != NULL)
		tid = q->lens->tids[doc];
	else
		GpuirStreamRead(&q->tids, doc * sizeof(ItemPointerData), &tid, sizeof(ItemPointerData));
	GpuirQueryConsider(q, &tid, score, doc, true);
}

static int
cursor_df_cmp(const void *a, const void *b)
{
	uint32		na = (*(Cursor *const *) a)->list.npostings;
	uint32		nb = (*(Cursor *const *) b)->list.npostings;

	return (na > nb) - (na < nb);
}

/*
 * AND: every term; lists from shortest to longest, skipping by block last
 * docIDs.  The cursors open lazily (cursor_open): a longer list's block
 * that holds no candidate of the shorter ones is never decoded, its first
 * one included.
 */
static void
run_and(GpuirQuery *q, Cursor **cur, int ncur)
{
	Cursor	  **ord = palloc(sizeof(Cursor *) * ncur);
	uint32		d;

	memcpy(ord, cur, sizeof(Cursor *) * ncur);
	qsort(ord, ncur, sizeof(Cursor *), cursor_df_cmp);
	cursor_materialize(q, ord[0]);
	d = ord[0]->doc;
	while (d != GPUIR_DOC_END)
	{
		int			i;

		GpuirQueryTick(q);
		for (i = 1; i < ncur; i++)
		{
			cursor_next_geq(q, ord[i], d, false);
			cursor_materialize(q, ord[i]);	/* still on its lower bound: opened lazily */
			if (ord[i]->doc != d)
				break;
		}
		if (i == ncur)
		{
			score_doc(q, cur, ncur, d);
			cursor_next(q, ord[0], false);
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

		GpuirQueryTick(q);
		for (int i = 0; i < ncur; i++)
			d = Min(d, cur[i]->doc);
		if (d == GPUIR_DOC_END)
			break;
		score_doc(q, cur, ncur, d);
		for (int i = 0; i < ncur; i++)
			if (cur[i]->doc == d)
				cursor_next(q, cur[i], false);
	}
}

/*
 * TaatTopk: run_taat's candidates for a large k, by docID within the
 * segment (so that a candidate's TID is read only when a comparison needs
 * it), as the query's own top-k is kept for such a k (GpuirQueryConsider):
 * for k >= GPUIR_SELECT_MIN_K, when
 * the query may check visibility after selecting (q->defer_visibility), the
 * candidates that reach the threshold are appended to an array of 2k, and
 * a full array is cut to its best k by selection (Hoare's FIND, 1961): O(1)
 * a candidate amortised.  The threshold is the worst kept after the last
 * cut (a lower bound of the true k-th best, so nothing that may enter the
 * top-k is dropped); the best k go to GpuirQueryConsider as the segment
 * ends.  Candidates are ranked as GpuirResultBetter ranks results (score,
 * then TID), so the k kept are the top-k's k.
 */

typedef struct TaatCand
{
	float4		score;
	uint32		doc;			/* docID in the segment */
} TaatCand;

typedef struct TaatTopk
{
	TaatCand   *c;				/* [cap]: cap = 2k */
	int			n;
	int			k;
	float4		threshold;		/* c's worst after the last cut; -inf before */
	const ItemPointerData *tids;	/* the segment's TIDs by docID */
} TaatTopk;

static inline bool
cand_better(const TaatTopk *t, const TaatCand *a, const TaatCand *b)
{
	return GpuirResultBetter(a->score, (ItemPointer) &t->tids[a->doc],
							 b->score, (ItemPointer) &t->tids[b->doc]);
}

/* cand_select(t, c, n, k): c's best k (cand_better) to c[0, k) (gpuirselect.h) */
#define SEL_NAME cand_select
#define SEL_ELEMENT_TYPE TaatCand
#define SEL_ARG_TYPE const TaatTopk *
#define SEL_BETTER(t, a, b) cand_better(t, a, b)
#include "gpuirselect.h"

/* taat_cut: keep t's best k candidates; the threshold becomes the worst of them */
static void
taat_cut(TaatTopk *t)
{
	if (t->n <= t->k)
		return;
	cand_select(t, t->c, t->n, t->k);
	t->n = t->k;
	t->threshold = t->c[t->k - 1].score;
}

/*
 * taat_add: add the scores of postings [from, stop) of a decoded block (all
 * in the window at base) to their accumulators and mark their documents
 * seen; with marked_only (a non-essential list, run_taat), only to the
 * documents already marked.  use_norm: score from the kept length norms,
 * else from the lengths.  Both are constants at each call, so each loop is
 * compiled apart.
 */
static pg_attribute_always_inline void
taat_add(float4 *restrict acc, uint64 *restrict seen, uint32 base,
		 const uint32 *restrict docs, const uint32 *restrict tfs, int from, int stop,
		 float4 idf, bool marked_only, bool use_norm, const float4 *restrict norms,
		 const uint32 *restrict dls, const GpuirScoring *sc)
{
	const float4 k1 = sc->k1;
	const float4 b = sc->b;
	const float4 avgdl = sc->avgdl;

	for (int j = from; j < stop; j++)
	{
		uint32		d = docs[j];
		uint32		w = d - base;

		if (!marked_only)
			seen[w / 64] |= UINT64CONST(1) << (w % 64);
		else if ((seen[w / 64] & (UINT64CONST(1) << (w % 64))) == 0)
			continue;
		/* acc[w] is 0.0f when first touched: score_doc's sum starts at 0.0f */
		if (use_norm)
			acc[w] += GpuirBM25FromNorm(idf, tfs[j], norms[d], k1);
		else
			acc[w] += GpuirBM25Expr(idf, tfs[j], dls[d], k1, b, avgdl);
	}
}

/* run_taat's docID window: 256 KB of accumulators, in L2 */
#define TAAT_WINDOW		(1 << 16)

/* run_taat's window, kept for the session (TopMemoryContext, 272 KB) */
typedef struct TaatScratch
{
	float4		acc[TAAT_WINDOW];	/* a score per document of the window */
	uint64		seen[TAAT_WINDOW / 64]; /* the accumulators touched */
	uint8		del[TAAT_WINDOW / 8];	/* the touched words' deletion bits */
	bool		clean;			/* acc and seen all zero */
} TaatScratch;

static TaatScratch *taat_scratch = NULL;

/* what taat_list does with a list's postings in the window */
typedef enum TaatAction
{
	TAAT_ADD,					/* add their scores, marking their documents */
	TAAT_ADD_MARKED				/* add the scores of those of marked documents */
} TaatAction;

/* seen_any: is a document of the window in [a, b] (window offsets) marked? */
static inline bool
seen_any(const uint64 *seen, uint32 a, uint32 b)
{
	uint32		wa = a / 64,
				wb = b / 64;
	uint64		ma = ~UINT64CONST(0) << (a % 64);
	uint64		mb = ~UINT64CONST(0) >> (63 - b % 64);

	if (wa == wb)
		return (seen[wa] & ma & mb) != 0;
	if ((seen[wa] & ma) != 0)
		return true;
	for (uint32 w = wa + 1; w < wb; w++)
		if (seen[w] != 0)
			return true;
	return (seen[wb] & mb) != 0;
}

/*
 * taat_next_block: move c to its list's next block, undecoded, c->doc a
 * lower bound of its first docID; false (c at the end) after the last
 */
static inline bool
taat_next_block(Cursor *c)
{
	if (c->blk + 1 >= (int) c->list.nblocks)
	{
		c->blk = c->list.nblocks;
		c->doc = GPUIR_DOC_END;
		return false;
	}
	c->blk++;
	c->pos = 0;
	c->doc = c->list.dir[c->blk - 1].last_docid + 1;
	return true;
}

/*
 * taat_list: act on the postings of c's list in the window [base, end),
 * moving the cursor to its first posting at or past end; [*wlo, *whi)
 * grows to cover the words of seen it marks.  A non-essential list
 * (TAAT_ADD_MARKED) skips, undecoded, the blocks whose docID range in the
 * window holds no marked document.
 */
static pg_attribute_always_inline void
taat_list(GpuirQuery *q, Cursor *c, uint32 base, uint32 end, TaatAction action,
		  TaatScratch *ts, const float4 *norms, uint32 *wlo, uint32 *whi)
{
	GpuirListCursor *l = &c->list;
	const uint32 *dls = q->lens->dl;

	while (c->doc < end)
	{
		int			j;

		/*
		 * once a block: GpuirQueryTick's count (one a document in the
		 * other loops) would not reach its mark in a short query, and a
		 * batch of them would not see a cancel
		 */
		CHECK_FOR_INTERRUPTS();
		if (action == TAAT_ADD_MARKED)
		{
			/* the block's part in the window, clipped to the marked words */
			uint32		last = l->dir[c->blk].last_docid;
			uint32		a = Max(c->doc - base, *wlo * 64);
			uint32		b = Min(Min(last, end - 1) - base, *whi * 64 - 1);

			if (*wlo >= *whi || a > b || !seen_any(ts->seen, a, b))
			{
				if (last >= end)
				{
					/* c->doc stays a lower bound: the block's later postings */
					if (l->decoded == c->blk)
					{
						while (l->docs[c->pos] < end)
							c->pos++;
						c->doc = l->docs[c->pos];
					}
					else
						c->doc = end;
					break;
				}
				if (!taat_next_block(c))
					break;
				continue;
			}
		}
		if (l->decoded != c->blk)
		{
			cursor_decode(c, c->blk, true);
			/* entered past its first postings (the window before had none marked) */
			while (l->docs[c->pos] < c->doc)
				c->pos++;
		}
		Assert(l->has_tfs);
		{
			const uint32 *docs = l->docs;
			const int	n = l->n;

			/*
			 * a block's docIDs increase and its last is below ndocs
			 * (GpuirListCheckHeader at open, GpuirListDecodeBlock)
			 */
			j = n;
			if (docs[n - 1] >= end)
				for (j = c->pos; docs[j] < end; j++)
					;
			/* each call with constants: four loops, none testing per posting */
			if (action == TAAT_ADD && norms != NULL)
				taat_add(ts->acc, ts->seen, base, docs, l->tfs, c->pos, j, c->idf,
						 false, true, norms, dls, &q->sc);
			else if (action == TAAT_ADD)
				taat_add(ts->acc, ts->seen, base, docs, l->tfs, c->pos, j, c->idf,
						 false, false, norms, dls, &q->sc);
			else if (norms != NULL)
				taat_add(ts->acc, ts->seen, base, docs, l->tfs, c->pos, j, c->idf,
						 true, true, norms, dls, &q->sc);
			else
				taat_add(ts->acc, ts->seen, base, docs, l->tfs, c->pos, j, c->idf,
						 true, false, norms, dls, &q->sc);
		}
		if (j > c->pos && action != TAAT_ADD_MARKED)
		{
			*wlo = Min(*wlo, (l->docs[c->pos] - base) / 64);
			*whi = Max(*whi, (l->docs[j - 1] - base) / 64 + 1);
		}
		if (j < l->n)
		{
			c->pos = j;
			c->doc = l->docs[j];
			break;
		}
		if (!taat_next_block(c))
			break;
	}
}

/*
 * run_taat: exact disjunctive top-k, term at a time (TAAT) into score
 * accumulators (Turtle & Flood 1995, s3.1, term-at-a-time evaluation; the CPU side
 * of Ding et al. 2009's TAAT OR with per-document accumulators), over docID
 * windows of TAAT_WINDOW documents: in each window each list, in query term
 * order, adds its postings' scores to an accumulator per document, and the
 * documents touched are then offered in docID order.  A document's score is
 * the same float sum in the same term order as score_doc's (from 0.0f, one
 * GpuirBM25 per term), so the results are bit for bit those of run_or; the
 * work is a few operations a posting, without DAAT's per-document cursor
 * moves.  Once the top-k has a threshold, MaxScore's non-essential lists
 * (the last in term order) add only to documents an essential list
 * touched, and skip their blocks that hold none.  It reads every essential
 * posting, so run_segment takes it only where skipping has little to skip
 * (gpuir.taat_max_postings); it needs the segment's session copy of the
 * lengths (q->lens), and scores from its length norms when they are kept
 * for the query's constants (doclens_norms).  The accumulators and their
 * bitmap stay zero between calls (the offer clears what it reads; after an
 * error the next call zeroes them), the deletion bits of the documents a
 * window touched come in one read (so GpuirQueryConsider reads none), and a
 * large k collects its candidates in a TaatTopk.
 */
static void
run_taat(GpuirQuery *q, Cursor **cur, int ncur)
{
	TaatScratch *ts;
	float4	   *acc;
	uint64	   *seen;
	uint64		postings = 0;
	const float4 *norms;		/* NULL: score from the lengths */
	float4		thr;
	uint64		scored = 0;		/* docs_scored, added as the segment ends */
	const uint32 ndocs = q->seg->ndocs;
	TaatTopk	topk;
	TaatTopk   *t = NULL;		/* NULL: each candidate to GpuirQueryConsider */
	int			nonessential = 0;	/* the last lists in term order: MaxScore's */
	double	   *ub = NULL;		/* [ncur]: list bounds, once the split is needed */
	float4		theta;
	float4		split_theta = -INFINITY;	/* the threshold of the split */

	Assert(q->prior_bound == 0.0);	/* its bounds and sums are BM25's alone */

	/*
	 * Only with deferred snapshot checks (no row filter): then every
	 * candidate enters the top-k unchecked, so TaatTopk's cut, and the
	 * MaxScore threshold taken from it, bound the k-th best score; with a
	 * check per candidate a rejected one must not count, so each goes to
	 * GpuirQueryConsider
	 */
	if (q->k >= GPUIR_SELECT_MIN_K && q->defer_visibility)
	{
		t = &topk;
		t->k = q->k;
		t->n = 0;
		t->threshold = -INFINITY;
		t->tids = q->lens->tids;
		t->c = palloc(sizeof(TaatCand) * 2 * (Size) q->k);
	}
	if (taat_scratch == NULL)
	{
		taat_scratch = MemoryContextAllocZero(TopMemoryContext, sizeof(TaatScratch));
		taat_scratch->clean = true;
	}
	ts = taat_scratch;
	acc = ts->acc;
	seen = ts->seen;
	/* a query that ended in an error (a cancel, a corrupt page) left some set */
	if (!ts->clean)
	{
		memset(ts->seen, 0, sizeof(ts->seen));
		memset(ts->acc, 0, sizeof(ts->acc));
	}
	ts->clean = false;
	for (int i = 0; i < ncur; i++)
		postings += cur[i]->list.npostings;
	norms = doclens_norms(q, postings);
	for (;;)
	{
		uint32		base = GPUIR_DOC_END;
		uint32		end;
		uint32		wlo = TAAT_WINDOW / 64;	/* words of seen touched: [wlo, whi) */
		uint32		whi = 0;

		for (int i = 0; i < ncur; i++)
			base = Min(base, cur[i]->doc);
		if (base == GPUIR_DOC_END)
			break;
		base &= ~(uint32) 63;	/* whole bytes and words of the bitmaps */
		end = (base > GPUIR_DOC_END - TAAT_WINDOW) ? GPUIR_DOC_END : base + TAAT_WINDOW;

		/*
		 * MaxScore's split (Turtle & Flood 1995, section 3.2; Ding & Suel
		 * 2011, section 2), again when the threshold has risen: the last
		 * lists in term order (about those of smallest idf, order_terms)
		 * whose bounds sum below it are non-essential, as a document on
		 * them alone cannot enter the top-k.  They come after the essential
		 * ones in term order, so a document's sum keeps its order.  The
		 * threshold is the top-k's kth once it is full, and the TaatTopk's
		 * cut-off.
		 */
		theta = GpuirQueryFull(q) ? q->kth.score : -INFINITY;
		if (t != NULL)
			theta = Max(theta, t->threshold);
		if (theta > split_theta && theta > 0.0f)
		{
			double		sum = 0.0;

			split_theta = theta;
			if (ub == NULL)
			{
				ub = palloc(sizeof(double) * ncur);
				for (int i = 0; i < ncur; i++)
				{
					ub[i] = 0.0;
					for (uint32 b = 0; b < cur[i]->list.nblocks; b++)
						ub[i] = Max(ub[i], block_bound(q, cur[i], b));
				}
			}
			for (int i = ncur - 1; i >= 0; i--)
			{
				sum += ub[i];
				if (sum * GPUIR_BOUND_SLACK >= (double) theta)
					break;
				nonessential = ncur - i;
			}
			/* nothing left in the segment can enter the top-k */
			if (nonessential == ncur)
				break;
		}
		for (int i = 0; i < ncur; i++)
			taat_list(q, cur[i], base, end, i < ncur - nonessential ? TAAT_ADD : TAAT_ADD_MARKED,
					  ts, norms, &wlo, &whi);

		/* the deletion bits of the touched words' documents, in one read */
		if (wlo < whi)
		{
			uint32		from = wlo * 8;
			uint32		to = Min(whi * 8, (ndocs + 7) / 8 - base / 8);

			if (segment_may_have_deleted(q))
				GpuirStreamRead(&q->del, base / 8 + from, ts->del + from, to - from);
			else
				memset(ts->del + from, 0, to - from);
		}

		/*
		 * offer the window's documents in docID order, clearing as we go;
		 * thr is the top-k's kth score once it is full (GpuirQueryConsider
		 * decides ties), kept in a local as only Consider changes it
		 */
		thr = GpuirQueryFull(q) ? q->kth.score : -INFINITY;
		for (uint32 wi = wlo; wi < whi; wi++)
		{
			uint64		bits = seen[wi];

			seen[wi] = 0;
			while (bits != 0)
			{
				uint32		w = wi * 64 + (uint32) pg_rightmost_one_pos64(bits);
				uint32		d = base + w;
				float4		score = acc[w];

				acc[w] = 0.0f;
				bits &= bits - 1;
				scored++;
				if (score < thr || (ts->del[w / 8] & (1 << (w % 8))) != 0)
					continue;
				if (t == NULL)
				{
					GpuirQueryConsider(q, &q->lens->tids[d], score, d, false);
					if (GpuirQueryFull(q))
						thr = q->kth.score;
					continue;
				}
				/* GpuirQueryConsider's tests but the top-k's, which cut does */
				if (score < t->threshold || !after_cursor_passes(q, score, &q->lens->tids[d]))
					continue;
				t->c[t->n].score = score;
				t->c[t->n].doc = d;
				if (++t->n == 2 * t->k)
					taat_cut(t);
			}
		}
	}
	ts->clean = true;
	GpuirLastQueryStats.docs_scored += scored;
	if (ub != NULL)
		pfree(ub);
	if (t != NULL)
	{
		taat_cut(t);
		for (int i = 0; i < t->n; i++)
			GpuirQueryConsider(q, &q->lens->tids[t->c[i].doc], t->c[i].score,
							   t->c[i].doc, false);
		pfree(t->c);
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

/* score the pivot document and advance every cursor on it (lazily) */
static void
evaluate_pivot(GpuirQuery *q, Cursor **cur, int ncur, Cursor **ord, uint32 pd)
{
	score_doc(q, cur, ncur, pd);
	for (int i = 0; i < ncur && ord[i]->doc == pd; i++)
		cursor_next(q, ord[i], true);
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

		GpuirQueryTick(q);
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
			if (q->lens != NULL && pd < q->seg->ndocs)
				__builtin_prefetch(&q->lens->dl_code[pd]);	/* while the group decodes */
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

static void run_mode(GpuirQuery *q, Cursor **cur, int ncur, GpuirMode mode, bool taat,
					 DocLens *lens);
static void run_cursors(GpuirQuery *q, int s, GpuirMode mode, bool taat, DocLens *lens);

/*
 * open_cursors: a cursor in cursors[] on each list of segment s that q's
 * terms have, in term order (cursor_open, for mode or taat), cur[i]
 * pointing to the i-th; returns how many
 */
static int
open_cursors(GpuirQuery *q, int s, GpuirMode mode, bool taat, Cursor *cursors, Cursor **cur)
{
	int			n = 0;

	for (int t = 0; t < q->nterms; t++)
	{
		GpuirDictEntry *de = &q->entries[s * q->nterms + t];

		if (de->npostings == 0)
			continue;
		cursor_open(q, &cursors[n], s, t, de, mode, taat);
		cur[n] = &cursors[n];
		n++;
	}
	return n;
}

/* the largest a prior of seg adds to a score (GpuirPriorScore): 0 without priors */
static double
segment_prior_bound(GpuirQuery *q, const GpuirSegmentData *seg)
{
	return q->meta.has_prior ?
		(double) GpuirPriorScore(q->meta.prior_weight, seg->prior_max) : 0.0;
}

/*
 * run the mode over segment s: term at a time (run_taat) in modes or, wand
 * and bmw when the query's lists there hold at most gpuir.taat_max_postings
 * postings and the segment's lengths are in the session's copy; the mode's
 * own loop otherwise
 */
static void
run_segment(GpuirQuery *q, int s, GpuirMode mode)
{
	uint64		postings = 0;
	bool		taat;
	DocLens    *lens;

	q->seg = &q->meta.segments[s];
	for (int t = 0; t < q->nterms; t++)
	{
		uint32		n = q->entries[s * q->nterms + t].npostings;

		if (n == 0 && mode == GPUIR_MODE_AND)
			return;				/* a missing term: no conjunctive match here */
		postings += n;
	}
	if (postings == 0)
		return;
	lens = doclens_for(q);		/* q->lens while run_mode holds it */
	q->prior_bound = segment_prior_bound(q, q->seg);
	/* term at a time scores BM25 alone: segments without priors */
	taat = lens != NULL && q->prior_bound == 0.0 &&
		(mode == GPUIR_MODE_OR || mode == GPUIR_MODE_WAND || mode == GPUIR_MODE_BMW) &&
		postings <= (uint64) gpuir_taat_max_postings;

	run_cursors(q, s, mode, taat, lens);
}

/*
 * run_cursors: run_mode over the cursors of q's lists in segment s (the
 * current one, q->prior_bound set), opened here with the segment's
 * streams (the priors' too where lens, doclens_for's copy, has none), and
 * closed after
 */
static void
run_cursors(GpuirQuery *q, int s, GpuirMode mode, bool taat, DocLens *lens)
{
	bool		read_priors = q->prior_bound != 0.0 && lens == NULL;	/* doc_prior's stream */
	Cursor	   *cursors = palloc(sizeof(Cursor) * q->nterms);
	Cursor	  **cur = palloc(sizeof(Cursor *) * q->nterms);
	int			ncur = open_cursors(q, s, mode, taat, cursors, cur);

	GpuirStreamReaderInit(&q->tids, q->index, q->seg, GPUIR_S_TIDS);
	GpuirStreamReaderInit(&q->dls, q->index, q->seg, GPUIR_S_DOCLENS);
	GpuirStreamReaderInit(&q->del, q->index, q->seg, GPUIR_S_DELETED);
	if (read_priors)
		GpuirStreamReaderInit(&q->pri, q->index, q->seg, GPUIR_S_PRIORS);
	run_mode(q, cur, ncur, mode, taat, lens);
	GpuirStreamReaderEnd(&q->tids);
	GpuirStreamReaderEnd(&q->dls);
	GpuirStreamReaderEnd(&q->del);
	if (read_priors)
		GpuirStreamReaderEnd(&q->pri);
	q->prior_bound = 0.0;
	for (int i = 0; i < ncur; i++)
		cursor_close(cur[i]);
	pfree(cursors);
	pfree(cur);
}

/*
 * GpuirQueryScoreDocs: consider docIDs docs[0 .. n) of segment s (distinct,
 * any order; copied and sorted here) with their exact scores over q's
 * whole lists there, as the CPU engine scores them (score_doc: BM25 in term
 * order, the prior, the deleted bitmap), so that the top-k takes those that
 * belong in it.  For the candidates of a search the GPU ran over pruned
 * lists (gpuirprune.h), whose scores were partial: each list is walked
 * forward once, a block decoded only where a candidate falls in it
 * (checked without a GPU by gpuir.debug_rescore, rescore_check).  Raises
 * ERRCODE_INDEX_CORRUPTED for a docID past the segment's end, and the
 * list readers' errors.
 */
void
GpuirQueryScoreDocs(GpuirQuery *q, int s, const uint32 *docs, int n)
{
	uint32	   *sorted;

	if (n <= 0)
		return;
	sorted = palloc(sizeof(uint32) * n);
	memcpy(sorted, docs, sizeof(uint32) * n);
	qsort(sorted, n, sizeof(uint32), GpuirUint32Cmp);
	q->seg = &q->meta.segments[s];
	q->prior_bound = segment_prior_bound(q, q->seg);
	q->score_docs = sorted;
	q->nscore_docs = (int) qunique(sorted, n, sizeof(uint32), GpuirUint32Cmp);
	/* AND's cursors: lazy, no block bounds; absent terms have none */
	run_cursors(q, s, GPUIR_MODE_AND, false, doclens_for(q));
	q->score_docs = NULL;
	q->nscore_docs = 0;
	pfree(sorted);
}

/*
 * run_docs: score q->score_docs (ascending docIDs of the current segment)
 * over the cursors: each list walked forward once, a block decoded only
 * where a docID falls in it (GpuirQueryScoreDocs)
 */
static void
run_docs(GpuirQuery *q, Cursor **cur, int ncur)
{
	for (int i = 0; i < q->nscore_docs; i++)
	{
		uint32		d = q->score_docs[i];
		bool		any = false;

		if (d >= q->seg->ndocs)
			GpuirCorrupt(q->index, "docID past the end of its segment");
		GpuirQueryTick(q);
		for (int j = 0; j < ncur; j++)
		{
			cursor_next_geq(q, cur[j], d, false);
			cursor_materialize(q, cur[j]);
			any |= cur[j]->doc == d;
		}
		if (any)
			score_doc(q, cur, ncur, d);
	}
}

/*
 * run_mode: mode's loop over the cursors of the current segment, or
 * run_taat; the segment's copy of the lengths (lens, from doclens_for; may
 * be NULL) is q->lens and held meanwhile, and let go after, also on an
 * error
 */
static void
run_mode(GpuirQuery *q, Cursor **cur, int ncur, GpuirMode mode, bool taat, DocLens *lens)
{
	doclens_users++;
	q->lens = lens;
	PG_TRY();
	{
		if (q->score_docs != NULL)
			run_docs(q, cur, ncur);
		else if (taat)
			run_taat(q, cur, ncur);
		else if (mode == GPUIR_MODE_AND)
			run_and(q, cur, ncur);
		else if (mode == GPUIR_MODE_OR)
			run_or(q, cur, ncur);
		else
			run_wand(q, cur, ncur, mode != GPUIR_MODE_WAND);	/* bmw, and_or */
	}
	PG_FINALLY();
	{
		doclens_users--;
		q->lens = NULL;
	}
	PG_END_TRY();
}

/* ---------- the insert buffer ---------- */

/*
 * match_doc: intersect a buffer record's sorted lexemes with the query
 * terms[0..nterms), which must still be in lexeme order (it runs before
 * order_terms puts them in term order): each term the record holds gets df + 1 and, when tfs is
 * not NULL, its tf in (*tfs)[t] (the array palloc0'd at the first match).
 * Returns the number of terms matched.
 *
 * A merge that skips ahead in the query terms by galloping (doubling
 * steps, then a binary search: Bentley & Yao 1976): a record costs
 * O(m log(n / m)) comparisons for m of its lexemes against n terms, not
 * O(n + m), which matters for queries of hundreds of terms over a large
 * buffer (every query reads every record).
 */
static int
match_doc(QTerm *terms, int nterms, const GpuirDocTerms *doc, uint32 **tfs)
{
	int			nmatch = 0;
	int			t = 0;

	for (int j = 0; j < doc->nterms && t < nterms; j++)
	{
		const char *lex = doc->terms[j].lexeme;
		int			len = doc->terms[j].len;
		int			c = GpuirLexemeCmp(terms[t].lexeme, terms[t].len, lex, len);

		if (c < 0)
		{
			/* terms[t] < lex: the first term >= lex lies in (lo, hi] */
			int			lo = t,
						hi,
						step = 1;

			for (;;)
			{
				hi = lo + step;
				if (hi >= nterms)
				{
					hi = nterms;
					break;
				}
				c = GpuirLexemeCmp(terms[hi].lexeme, terms[hi].len, lex, len);
				if (c >= 0)
					break;
				lo = hi;
				step *= 2;
			}
			/* terms[lo] < lex, and terms[hi] >= lex unless hi = nterms */
			while (hi - lo > 1)
			{
				int			mid = lo + (hi - lo) / 2;

				if (GpuirLexemeCmp(terms[mid].lexeme, terms[mid].len, lex, len) < 0)
					lo = mid;
				else
					hi = mid;
			}
			t = hi;
			if (t == nterms)
				break;
			c = GpuirLexemeCmp(terms[t].lexeme, terms[t].len, lex, len);
		}
		if (c == 0)
		{
			if (tfs != NULL)
			{
				if (*tfs == NULL)
					*tfs = palloc0(sizeof(uint32) * nterms);
				(*tfs)[t] = doc->terms[j].tf;
			}
			nmatch++;
			terms[t].df++;
			t++;
		}
		/* c > 0: the record's lexeme is no query term */
	}
	return nmatch;
}

/* collect_bufdoc: keep a live buffer record holding a query term, with its tfs */
static void
collect_bufdoc(const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
			   uint64 offset, void *arg)
{
	GpuirQuery	   *q = arg;
	BufDoc	   *bd;

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
	bd->nmatch = match_doc(q->terms, q->nterms, doc, &bd->tfs);
	if (bd->nmatch > 0)
	{
		bd->tid = rec->tid;
		bd->dl = rec->dl;
		bd->prior = doc->prior;
		q->nbufdocs++;
	}
}

/*
 * GpuirQueryRunBuffer: score the insert buffer's documents that hold a query
 * term (collected by GpuirQueryPrepare) in mode's sense (AND: all terms)
 * and offer them to the top-k.
 */
void
GpuirQueryRunBuffer(GpuirQuery *q, GpuirMode mode)
{
	for (int i = 0; i < q->nbufdocs; i++)
	{
		BufDoc	   *bd = &q->bufdocs[i];
		float4		score = 0.0f;

		GpuirQueryTick(q);
		if (mode == GPUIR_MODE_AND && bd->nmatch < q->nterms)
			continue;
		for (int t = 0; t < q->nterms; t++)
			if (bd->tfs[t] > 0)
				score += GpuirBM25(q->terms[t].idf, bd->tfs[t], bd->dl, &q->sc);
		if (q->meta.has_prior)
			score += GpuirPriorScore(q->meta.prior_weight, bd->prior);
		GpuirLastQueryStats.docs_scored++;
		GpuirQueryConsider(q, &bd->tid, score, 0, false);
	}
}

/* ---------- the query ---------- */

/*
 * The probes of the dictionary's binary search, remembered per backend.
 *
 * A lookup in a dictionary of n entries probes about log2(n) entries (2
 * stream reads each: the entry and its lexeme), and the first probes are
 * the same for every lookup: entry n/2, then n/4 or 3n/4, and so on.  So
 * the lexemes of the first DICT_PROBE_LEVELS levels of that implicit
 * binary tree are kept per segment (node 1 the root, node i's children 2i
 * and 2i + 1), filled as lookups probe them; a lookup then reads the
 * index only for its last few probes, which lie close together.  A
 * segment's lexemes never change (a merge writes a new segment, with a new
 * generation), so entries need no invalidation; they are keyed by the
 * relation file, the generation and the streams' places, and a lookup that
 * used them checks its answer on the pages (entry lo - 1 sorts before the
 * lexeme, entry lo not), dropping the segment's entry and searching again
 * without it if not, so a stale entry (a relation file number reused) can
 * cost time but never a wrong answer.  At most DICT_PROBE_MAX_SEGMENTS
 * segments are kept; past that the cache starts empty again.
 */
#define DICT_PROBE_LEVELS		12
#define DICT_PROBE_NODES		(1 << DICT_PROBE_LEVELS)	/* node ids 1 .. 4095 */
#define DICT_PROBE_MAX_SEGMENTS	256

typedef struct DictProbeKey
{
	GpuirRelFile node;
	uint64		generation;
	BlockNumber dict_start;
	BlockNumber lex_start;
	uint32		nterms;
} DictProbeKey;

typedef struct DictProbes
{
	DictProbeKey key;			/* hash key (zeroed padding) */
	char	   *lexeme[DICT_PROBE_NODES];	/* NULL: not probed yet */
	uint16		len[DICT_PROBE_NODES];
} DictProbes;

static HTAB *dict_probes = NULL;
static MemoryContext dict_probes_cxt = NULL;

/* dict_key: the key of seg of index in the dictionary caches (zeroed padding) */
static void
dict_key(Relation index, const GpuirSegmentData *seg, DictProbeKey *key)
{
	memset(key, 0, sizeof(*key));
	key->node = GpuirRelationFile(index);
	key->generation = seg->generation;
	key->dict_start = seg->streams[GPUIR_S_DICT].start;
	key->lex_start = seg->streams[GPUIR_S_LEXEMES].start;
	key->nterms = seg->nterms;
}

/* dict_probes_for: the probes kept for the segment of key, made when new */
static DictProbes *
dict_probes_for(const DictProbeKey *key)
{
	DictProbes *p;
	bool		found;

	if (dict_probes == NULL || hash_get_num_entries(dict_probes) >= DICT_PROBE_MAX_SEGMENTS)
	{
		dict_probes = session_cache_reset(&dict_probes_cxt, "gpuir dictionary probes",
										  sizeof(DictProbeKey), sizeof(DictProbes));
	}
	p = hash_search(dict_probes, key, HASH_ENTER, &found);
	if (!found)
	{
		memset(p->lexeme, 0, sizeof(p->lexeme));
		memset(p->len, 0, sizeof(p->len));
	}
	return p;
}

/* dict_probes_drop: forget the probes of p's segment (they disagreed with its pages) */
static void
dict_probes_drop(DictProbes *p)
{
	DictProbeKey key = p->key;

	(void) hash_search(dict_probes, &key, HASH_REMOVE, NULL);
}

/* a segment's dictionary, read entry by entry (sorted by GpuirLexemeCmp) */
typedef struct DictReader
{
	Relation	index;
	uint32		nterms;
	DictProbeKey key;			/* the segment's key in the dictionary caches */
	DictProbes *probes;			/* the segment's kept probes; NULL once
								 * dropped */
	GpuirStreamReader dict;
	GpuirStreamReader lex;
	char		buf[2048];		/* the lexeme of the last entry read */
} DictReader;

/*
 * dict_open: a reader of seg's dictionary, with the segment's kept probes
 * (valid until the next dict_open, which may start the cache afresh: one
 * reader at a time)
 */
static void
dict_open(DictReader *d, Relation index, const GpuirSegmentData *seg)
{
	if (seg->streams[GPUIR_S_DICT].nbytes != (uint64) seg->nterms * sizeof(GpuirDictEntry))
		GpuirCorrupt(index, "segment stream sizes do not match the segment directory");
	d->index = index;
	d->nterms = seg->nterms;
	dict_key(index, seg, &d->key);
	d->probes = dict_probes_for(&d->key);
	GpuirStreamReaderInit(&d->dict, index, seg, GPUIR_S_DICT);
	GpuirStreamReaderInit(&d->lex, index, seg, GPUIR_S_LEXEMES);
}

static void
dict_close(DictReader *d)
{
	GpuirStreamReaderEnd(&d->dict);
	GpuirStreamReaderEnd(&d->lex);
}

/* dict_entry: entry i into *de, its lexeme into d->buf */
static void
dict_entry(DictReader *d, int64 i, GpuirDictEntry *de)
{
	GpuirStreamRead(&d->dict, i * sizeof(GpuirDictEntry), de, sizeof(*de));
	if (de->lexeme_len > sizeof(d->buf))
		GpuirCorrupt(d->index, "dictionary lexeme too long");
	GpuirStreamRead(&d->lex, de->lexeme_off, d->buf, de->lexeme_len);
}

/*
 * The last probes of a lookup lie close together: past the kept levels a
 * segment of 650,000 lexemes leaves about 160 entries, 5 kB of entries and
 * 1-2 kB of lexemes, where the per-entry search still made eight probes of
 * two stream reads each.  Once the range is at most DICT_RANGE_ENTRIES
 * entries whose lexemes hold at most DICT_RANGE_LEXEME_BYTES, it is read in
 * two stream reads and searched in memory (dict_range_search).
 */
#define DICT_RANGE_ENTRIES		256
#define DICT_RANGE_LEXEME_BYTES	16384

/*
 * dict_range_search: the first entry of [lo, hi) whose lexeme is >=
 * lexeme[0..len) (hi when none is), the range's entries and lexemes read at
 * once; -1 when its lexemes are not contiguous in entry order (as the
 * format writes them, gpuir_verify checks it) or hold more than
 * DICT_RANGE_LEXEME_BYTES: the caller then searches entry by entry.
 */
static int64
dict_range_search(DictReader *d, int64 lo, int64 hi, const char *lexeme, int len)
{
	GpuirDictEntry ents[DICT_RANGE_ENTRIES];
	char	   *lex;
	uint64		first,
				nbytes;
	int			n = (int) (hi - lo);
	int			a = 0,
				b = n;

	Assert(n >= 1 && n <= DICT_RANGE_ENTRIES);
	GpuirStreamRead(&d->dict, (uint32) (lo * sizeof(GpuirDictEntry)), ents,
					(uint32) (n * sizeof(GpuirDictEntry)));
	first = ents[0].lexeme_off;
	for (int i = 1; i < n; i++)
		if (ents[i].lexeme_off != ents[i - 1].lexeme_off + ents[i - 1].lexeme_len)
			return -1;
	nbytes = (uint64) ents[n - 1].lexeme_off + ents[n - 1].lexeme_len - first;
	if (nbytes > DICT_RANGE_LEXEME_BYTES)
		return -1;
	lex = palloc(Max(nbytes, 1));
	GpuirStreamRead(&d->lex, (uint32) first, lex, (uint32) nbytes);
	while (a < b)
	{
		int			mid = a + (b - a) / 2;

		if (GpuirLexemeCmp(lex + (ents[mid].lexeme_off - first), ents[mid].lexeme_len,
						   lexeme, len) < 0)
			a = mid + 1;
		else
			b = mid;
	}
	pfree(lex);
	return lo + a;
}

/*
 * dict_search: the first entry whose lexeme is >= lexeme[0..len), by binary
 * search, the first levels' probes taken from (and added to) probes when it
 * is not NULL; *used says whether any was taken from it.  A range past the
 * kept levels, or one small enough from the start, is searched in memory
 * (dict_range_search).
 */
static int64
dict_search(DictReader *d, const char *lexeme, int len, DictProbes *probes, bool *used)
{
	int64		lo = 0,
				hi = d->nterms;
	uint32		node = 1;
	bool		range_tried = false;
	GpuirDictEntry de;

	*used = false;
	while (lo < hi)
	{
		int64		mid = lo + (hi - lo) / 2;
		const char *lex;
		int			lexlen;

		if (!range_tried && hi - lo <= DICT_RANGE_ENTRIES &&
			(probes == NULL || node >= DICT_PROBE_NODES || probes->lexeme[node] == NULL))
		{
			int64		pos = dict_range_search(d, lo, hi, lexeme, len);

			if (pos >= 0)
				return pos;
			range_tried = true;
		}

		if (probes != NULL && node < DICT_PROBE_NODES && probes->lexeme[node] != NULL)
		{
			lex = probes->lexeme[node];
			lexlen = probes->len[node];
			*used = true;
		}
		else
		{
			dict_entry(d, mid, &de);
			lex = d->buf;
			lexlen = de.lexeme_len;
			if (probes != NULL && node < DICT_PROBE_NODES)
			{
				probes->lexeme[node] = MemoryContextAlloc(dict_probes_cxt, Max(lexlen, 1));
				memcpy(probes->lexeme[node], lex, lexlen);
				probes->len[node] = (uint16) lexlen;
			}
		}
		if (GpuirLexemeCmp(lex, lexlen, lexeme, len) < 0)
		{
			lo = mid + 1;
			node = node * 2 + 1;
		}
		else
		{
			hi = mid;
			node = node * 2;
		}
		if (node >= DICT_PROBE_NODES)
			node = DICT_PROBE_NODES;	/* past the kept levels */
	}
	return lo;
}

/*
 * dict_is_lower_bound: is lo (0 .. nterms) the first entry whose lexeme is
 * >= lexeme[0..len), checked on the pages: entry lo - 1 < lexeme <= entry
 * lo, where they exist?  *de and d->buf hold the last entry read (entry lo,
 * or lo - 1 when lo = nterms or the first test failed).
 */
static bool
dict_is_lower_bound(DictReader *d, int64 lo, const char *lexeme, int len, GpuirDictEntry *de)
{
	if (lo > 0)
	{
		dict_entry(d, lo - 1, de);
		if (GpuirLexemeCmp(d->buf, de->lexeme_len, lexeme, len) >= 0)
			return false;
	}
	if (lo < d->nterms)
	{
		dict_entry(d, lo, de);
		if (GpuirLexemeCmp(d->buf, de->lexeme_len, lexeme, len) < 0)
			return false;
	}
	return true;
}

/*
 * dict_lower_bound: the first entry whose lexeme is >= lexeme[0..len)
 * (nterms when none is), read into *de when there is one.  The first probes
 * come from the backend's probe cache; an answer that used it is checked on
 * the pages (dict_is_lower_bound).
 */
static int64
dict_lower_bound(DictReader *d, const char *lexeme, int len, GpuirDictEntry *de)
{
	bool		used;
	int64		lo = dict_search(d, lexeme, len, d->probes, &used);

	if (used)
	{
		if (dict_is_lower_bound(d, lo, lexeme, len, de))
			return lo;			/* *de holds entry lo (or lo - 1 when lo = nterms) */
		dict_probes_drop(d->probes);
		d->probes = NULL;
		lo = dict_search(d, lexeme, len, NULL, &used);
	}
	if (lo < d->nterms)
		dict_entry(d, lo, de);
	return lo;
}

/*
 * The dictionary positions of the lexemes looked up, remembered per backend.
 *
 * The probe cache above leaves a lookup about log2(n) - DICT_PROBE_LEVELS
 * probes and a check of its answer: a dozen stream reads on a dictionary
 * of a few hundred thousand lexemes, each a buffer lookup, lock and page
 * check.  Query logs repeat their words, so a backend keeps, per index
 * file and lexeme (up to TERM_POS_MAX_LEN bytes), one slot per segment
 * (the probes' key) that it was looked up in: the position of its entry and
 * the entry, or of the entry it would precede when the segment lacks it.
 * A query looks each of its lexemes up once (index_lookup) and finds the
 * slot of segment s at place s, where the last lookup left it, without
 * hashing: per segment and lexeme, the hash lookups of a 16-segment index
 * were 14% of a short `and` query's time
 * (bench/results/2026-11-28-cpu-2core-segment-costs.md).  Under the
 * metapage generation a slot was read in, a lookup takes it without
 * reading a page (the lookups of a 16-segment index were most of a short
 * query's instructions); under a later one it checks it on the pages
 * (term_pos_check: the entry holds the lexeme, or its neighbours bracket
 * it) and takes it, else searches.  An entry's df (live) changes only
 * under VACUUM's vacuum_pending, which it clears with a new generation;
 * the position never changes.  A relcache invalidation of a remembered
 * index empties the cache (CachedIndexes).  A lexeme the backend has no
 * slot for takes, before it searches, the position another backend found
 * (gpuirdicthints.h), checked on the pages like a slot of an earlier
 * generation; every search leaves its answer there.  At most
 * TERM_POS_MAX_SLOTS slots and lexemes; past that the cache starts empty, and a
 * lexeme's slots are dropped when it has TERM_POS_MAX_SEGS (those of
 * segments merged away accumulate).
 */
#define TERM_POS_MAX_LEN		48
#define TERM_POS_MAX_SLOTS		65536
#define TERM_POS_MAX_SEGS		(4 * GPUIR_MAX_SEGMENTS)
#define TERM_POS_DIR_BLOCKS		8
#define TERM_POS_MAX_DIR_BYTES	(4 * 1024 * 1024)

typedef struct TermPosKey
{
	GpuirRelFile node;
	uint16		len;
	char		lexeme[TERM_POS_MAX_LEN];
} TermPosKey;

/* a lexeme in one segment */
typedef struct TermPosSlot
{
	DictProbeKey seg;			/* the segment (dict_key) */
	int64		pos;			/* its entry's index in the dictionary, or
								 * where it would be (absent) */
	bool		present;
	uint64		meta_generation;	/* the metapage's generation when entry
									 * was read from the pages */
	GpuirDictEntry entry;		/* the entry then (present) */
	GpuirBlockHeader *dir;		/* its list's GpuirListDirLength headers, in
								 * term_pos_cxt (list_dir), or NULL */
	uint32		dir_len;		/* how many */
} TermPosSlot;

typedef struct TermPos
{
	TermPosKey	key;			/* hash key (zeroed past the lexeme) */
	uint32		nslots;
	uint32		maxslots;
	TermPosSlot *slots;			/* in term_pos_cxt */
} TermPos;

static HTAB *term_pos = NULL;
static MemoryContext term_pos_cxt = NULL;
static uint64 term_pos_nslots = 0;	/* slots of every lexeme */
static Size term_pos_dir_bytes = 0; /* their headers' bytes */

/*
 * Advanced whenever kept headers are freed (a reset, slot_drop_dir): a
 * query's pointers to them (GpuirQuery.dirs) hold while it is the one they
 * were taken under (GpuirQuery.dirs_epoch)
 */
static uint64 term_pos_epoch = 0;

/* term_pos_reset: an empty term_pos (made when first needed) */
static void
term_pos_reset(void)
{
	cached_indexes_clear(&term_pos_indexes);
	term_pos = session_cache_reset(&term_pos_cxt, "gpuir dictionary positions",
								   sizeof(TermPosKey), sizeof(TermPos));
	term_pos_nslots = 0;
	term_pos_dir_bytes = 0;
	term_pos_epoch++;
}

/*
 * term_pos_for: the remembered slots of lexeme[0..len) in index, made
 * (with none) when new; NULL when the lexeme is too long to be remembered
 */
static TermPos *
term_pos_for(Relation index, const char *lexeme, int len)
{
	TermPosKey	key;
	TermPos    *tp;

	if (len > TERM_POS_MAX_LEN)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.node = GpuirRelationFile(index);
	key.len = (uint16) len;
	memcpy(key.lexeme, lexeme, len);
	tp = hash_search(term_pos, &key, HASH_FIND, NULL);
	if (tp != NULL)
		return tp;
	cached_indexes_note(&term_pos_indexes, RelationGetRelid(index));
	tp = hash_search(term_pos, &key, HASH_ENTER, NULL);
	tp->nslots = 0;
	tp->maxslots = 0;
	tp->slots = NULL;
	return tp;
}

/* slot_drop_dir: forget ts's list headers */
static void
slot_drop_dir(TermPosSlot *ts)
{
	if (ts->dir == NULL)
		return;
	term_pos_dir_bytes -= sizeof(GpuirBlockHeader) * ts->dir_len;
	pfree(ts->dir);
	ts->dir = NULL;
	term_pos_epoch++;
}

/*
 * list_dir: the headers of the list of de (present in segment seg of
 * index, ts its slot or NULL) that a cursor reads (GpuirListDirLength),
 * kept in ts, when the list has at most TERM_POS_DIR_BLOCKS blocks: read
 * from the BLOCKDIR stream the first time.  NULL for a longer list,
 * without a slot, past TERM_POS_MAX_DIR_BYTES or for an entry that does not
 * pass GpuirListCheckEntry (GpuirListOpen then reads or reports it).  A
 * segment's headers never change, and a slot is its segment's.  The
 * pointer holds until term_pos_epoch advances.
 */
static const GpuirBlockHeader *
list_dir(Relation index, const GpuirSegmentData *seg, TermPosSlot *ts, const GpuirDictEntry *de)
{
	GpuirBlockHeader dir[TERM_POS_DIR_BLOCKS + 1];
	uint32		len;

	if (ts == NULL || de->nblocks > TERM_POS_DIR_BLOCKS ||
		GpuirListCheckEntry(de, seg->nblocks) != NULL)
		return NULL;
	len = GpuirListDirLength(seg, de);
	if (ts->dir == NULL)
	{
		if (term_pos_dir_bytes >= TERM_POS_MAX_DIR_BYTES)
			return NULL;
		GpuirListReadDir(index, seg, de, dir);
		ts->dir = MemoryContextAlloc(term_pos_cxt, sizeof(GpuirBlockHeader) * len);
		memcpy(ts->dir, dir, sizeof(GpuirBlockHeader) * len);
		ts->dir_len = len;
		term_pos_dir_bytes += sizeof(GpuirBlockHeader) * len;
	}
	return ts->dir;
}

/* slot_swap: exchange tp's slots i and j */
static void
slot_swap(TermPos *tp, uint32 i, uint32 j)
{
	TermPosSlot tmp = tp->slots[i];

	tp->slots[i] = tp->slots[j];
	tp->slots[j] = tmp;
}

/*
 * term_pos_slot: tp's slot of the segment of key, which is segment s of
 * the metapage's directory: slot s when it is that segment's, else found
 * by a scan and moved to place s (so that the next query finds it there at
 * once); when tp has none, NULL, or with create a new one (seg set, the
 * rest zero: meta_generation 0 is no generation)
 */
static TermPosSlot *
term_pos_slot(TermPos *tp, uint32 s, const DictProbeKey *key, bool create)
{
	uint32		j;

	if (s < tp->nslots && memcmp(&tp->slots[s].seg, key, sizeof(*key)) == 0)
		return &tp->slots[s];
	for (j = 0; j < tp->nslots; j++)
		if (memcmp(&tp->slots[j].seg, key, sizeof(*key)) == 0)
			break;
	if (j == tp->nslots)
	{
		if (!create)
			return NULL;
		if (tp->nslots == TERM_POS_MAX_SEGS)
		{
			/* mostly segments merged away: start again */
			for (j = 0; j < tp->nslots; j++)
				slot_drop_dir(&tp->slots[j]);
			term_pos_nslots -= tp->nslots;
			tp->nslots = 0;
		}
		if (tp->nslots == tp->maxslots)
		{
			uint32		n = Min(Max(tp->maxslots * 2, 16), TERM_POS_MAX_SEGS);

			tp->slots = tp->slots == NULL ?
				MemoryContextAlloc(term_pos_cxt, sizeof(TermPosSlot) * n) :
				repalloc(tp->slots, sizeof(TermPosSlot) * n);
			tp->maxslots = n;
		}
		j = tp->nslots++;
		term_pos_nslots++;
		memset(&tp->slots[j], 0, sizeof(TermPosSlot));
		tp->slots[j].seg = *key;
	}
	if (s < tp->nslots && s != j)
	{
		slot_swap(tp, s, j);
		j = s;
	}
	return &tp->slots[j];
}

/* what a remembered position says once checked on the pages */
typedef enum TermPosCheck
{
	TERM_POS_STALE,				/* it does not hold: search */
	TERM_POS_FOUND,				/* the entry is there, read into *de */
	TERM_POS_ABSENT				/* the neighbours bracket the lexeme */
} TermPosCheck;

/*
 * term_pos_check: check ts, the remembered position of lexeme[0..len) in
 * d's dictionary, on the pages.  A present lexeme's entry must hold it (2
 * stream reads); an absent one's position must still be its lower bound
 * (dict_is_lower_bound: at most 4 stream reads, against a dozen for the
 * search), with an entry other than the lexeme there.
 */
static TermPosCheck
term_pos_check(DictReader *d, const TermPosSlot *ts, const char *lexeme, int len,
			   GpuirDictEntry *de)
{
	if (ts->present)
	{
		if (ts->pos >= d->nterms)
			return TERM_POS_STALE;
		dict_entry(d, ts->pos, de);
		return GpuirLexemeCmp(d->buf, de->lexeme_len, lexeme, len) == 0 ?
			TERM_POS_FOUND : TERM_POS_STALE;
	}
	if (ts->pos > d->nterms || !dict_is_lower_bound(d, ts->pos, lexeme, len, de) ||
		(ts->pos < d->nterms && GpuirLexemeCmp(d->buf, de->lexeme_len, lexeme, len) == 0))
		return TERM_POS_STALE;
	return TERM_POS_ABSENT;
}

/*
 * dict_find: where lexeme[0..len) is in d's dictionary (segment key
 * segkey), or would be when absent (*pos), with its entry in *de when
 * FOUND: another backend's hint (gpuirdicthints.h) checked on the pages
 * like a remembered slot (term_pos_check), else a search
 * (dict_lower_bound), whose answer is left as the hint.  Never STALE.
 */
static TermPosCheck
dict_find(DictReader *d, const DictProbeKey *segkey, const char *lexeme, int len,
		  GpuirDictEntry *de, int64 *pos)
{
	uint64		hash = 0;
	bool		present;

	if (GpuirDictHints != NULL)
	{
		TermPosSlot hint;

		hash = hash_bytes_extended((const unsigned char *) lexeme, len,
								   hash_bytes_extended((const unsigned char *) segkey,
													   sizeof(*segkey), 0));
		if (GpuirDictHintGet(hash, &hint.pos, &hint.present))
		{
			TermPosCheck check;

			hint.pos += gpuir_debug_dict_hint_skew;
			check = term_pos_check(d, &hint, lexeme, len, de);
			if (check != TERM_POS_STALE)
			{
				*pos = hint.pos;
				return check;
			}
		}
	}
	*pos = dict_lower_bound(d, lexeme, len, de);
	present = *pos < d->nterms && GpuirLexemeCmp(d->buf, de->lexeme_len, lexeme, len) == 0;
	GpuirDictHintPut(hash, *pos, present);
	return present ? TERM_POS_FOUND : TERM_POS_ABSENT;
}

/*
 * segment_lookup: look terms[0..nterms) up in the dictionary of segment s
 * of index, whose metapage the caller read into meta, adding each one's df
 * to terms[t].df and, when entries is not NULL, putting its dictionary entry
 * in entries[t] (zeros when absent).  tps[t] holds what the backend
 * remembers of term t (term_pos_for; NULL: nothing), where this records
 * where each lexeme is, or would be when the segment lacks it (most of a
 * query's rarer words in most segments of a capped index), with the entry:
 * under the same metapage generation, and no VACUUM pending, the
 * remembered answer is taken as it is, since a segment never changes and
 * its df only by VACUUM, which sets vacuum_pending before it rewrites any
 * df and clears it with a new generation after (a VACUUM that failed in
 * between leaves it set); otherwise it is checked on the pages first
 * (term_pos_check).  Without a slot that holds, another backend's hint is
 * checked the same way (gpuirdicthints.h) before the dictionary is
 * searched.
 */
static void
segment_lookup(Relation index, const GpuirMetaPageData *meta, uint32 s,
			   QTerm *terms, int nterms, TermPos **tps, GpuirDictEntry *entries,
			   const GpuirBlockHeader **dirs)
{
	const GpuirSegmentData *seg = &meta->segments[s];
	uint64		meta_generation = meta->generation;
	bool		settled = !meta->vacuum_pending;
	DictReader	d;
	bool		opened = false;
	DictProbeKey segkey;

	dict_key(index, seg, &segkey);
	for (int t = 0; t < nterms; t++)
	{
		GpuirDictEntry de;
		TermPosSlot *ts = tps[t] ? term_pos_slot(tps[t], s, &segkey, false) : NULL;
		TermPosCheck check = TERM_POS_STALE;
		bool		found;

		if (entries != NULL)
			memset(&entries[t], 0, sizeof(GpuirDictEntry));
		if (ts != NULL && settled && ts->meta_generation == meta_generation)
		{
			check = ts->present ? TERM_POS_FOUND : TERM_POS_ABSENT;
			de = ts->entry;
		}
		else
		{
			if (!opened)
			{
				dict_open(&d, index, seg);
				opened = true;
			}
			if (ts != NULL)
				check = term_pos_check(&d, ts, terms[t].lexeme, terms[t].len, &de);
			if (check == TERM_POS_STALE)
			{
				int64		pos;

				check = dict_find(&d, &segkey, terms[t].lexeme, terms[t].len, &de, &pos);
				if (tps[t] != NULL && ts == NULL)
					ts = term_pos_slot(tps[t], s, &segkey, true);
				if (ts != NULL)
				{
					ts->pos = pos;
					ts->present = (check == TERM_POS_FOUND);
				}
			}
			if (ts != NULL)
			{
				ts->meta_generation = meta_generation;
				if (check == TERM_POS_FOUND &&
					(de.first_block != ts->entry.first_block ||
					 de.nblocks != ts->entry.nblocks || de.npostings != ts->entry.npostings))
					slot_drop_dir(ts);	/* not this list's (never, as segments
										 * do not change) */
				if (check == TERM_POS_FOUND)
					ts->entry = de;
			}
		}
		found = (check == TERM_POS_FOUND);
		if (found && de.df > 0)
		{
			if (entries != NULL)
				entries[t] = de;
			if (dirs != NULL)
				dirs[t] = list_dir(index, seg, ts, &de);
			terms[t].df += de.df;
		}
	}
	if (opened)
		dict_close(&d);
}

/*
 * index_lookup: segment_lookup of terms[0..nterms) in every segment of
 * index (metapage meta); entries and dirs (when not NULL) nsegments *
 * nterms, the segment's row of nterms after another, dirs short lists'
 * headers kept by the session (list_dir), which hold while term_pos_epoch
 * is *epoch; each lexeme's remembered slots are found once
 */
static void
index_lookup(Relation index, const GpuirMetaPageData *meta, QTerm *terms, int nterms,
			 GpuirDictEntry *entries, const GpuirBlockHeader **dirs, uint64 *epoch)
{
	TermPos   **tps = palloc(sizeof(TermPos *) * Max(nterms, 1));

	if (term_pos == NULL || term_pos_indexes.stale || term_pos_nslots >= TERM_POS_MAX_SLOTS ||
		hash_get_num_entries(term_pos) >= TERM_POS_MAX_SLOTS)
		term_pos_reset();
	if (epoch != NULL)
		*epoch = term_pos_epoch;	/* any header freed from here on voids dirs */
	for (int t = 0; t < nterms; t++)
		tps[t] = term_pos_for(index, terms[t].lexeme, terms[t].len);
	for (uint32 s = 0; s < meta->nsegments; s++)
		segment_lookup(index, meta, s, terms, nterms, tps,
					   entries != NULL ? &entries[s * nterms] : NULL,
					   dirs != NULL ? &dirs[s * nterms] : NULL);
	pfree(tps);
}

/* ---------- partitions: the statistics of the whole partitioned index ---------- */

typedef struct CountBuffer
{
	QTerm	   *terms;
	int			nterms;
} CountBuffer;

/* count_bufdoc: add a live insert buffer record's query terms to their df */
static void
count_bufdoc(const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
			 uint64 offset, void *arg)
{
	CountBuffer *cb = arg;

	if (!(rec->flags & GPUIR_REC_DELETED))
		(void) match_doc(cb->terms, cb->nterms, doc, NULL);
}

/*
 * partition_stats: when q's index is a partition of a partitioned gpuir
 * index, add to *ndocs, *total_dl and the terms' df what every other leaf
 * partition index of the topmost partitioned index holds, so that a query
 * through the parent scores each row as one unpartitioned table would
 * (N, avgdl and df over all partitions, whichever the query reads).  The
 * partitions' indexes must agree on k1, b, text_config and the column
 * weights (55000 if not).
 */
static void
partition_stats(GpuirQuery *q, uint64 *ndocs, uint64 *total_dl)
{
	List	   *ancestors;
	List	   *all;
	ListCell   *lc;
	QTerm	   *scratch;

	if (!q->index->rd_rel->relispartition)
		return;
	ancestors = get_partition_ancestors(RelationGetRelid(q->index));
	if (ancestors == NIL)
		return;
	all = find_all_inheritors(llast_oid(ancestors), AccessShareLock, NULL);
	scratch = palloc(sizeof(QTerm) * Max(q->nterms, 1));
	foreach(lc, all)
	{
		Oid			oid = lfirst_oid(lc);
		Relation	sib;
		GpuirMetaPageData meta;
		char	   *bufdata;
		CountBuffer cb;

		if (oid == RelationGetRelid(q->index) || get_rel_relkind(oid) != RELKIND_INDEX)
			continue;
		CHECK_FOR_INTERRUPTS();
		sib = GpuirOpenIndex(oid, AccessShareLock);
		bufdata = GpuirBufferSnapshot(sib, &meta, NULL);
		GpuirCheckOptions(sib, &meta);
		if (meta.k1 != q->meta.k1 || meta.b != q->meta.b || meta.cfg_id != q->meta.cfg_id ||
			!GpuirMetaSameWeights(&meta, &q->meta) || meta.has_prior != q->meta.has_prior ||
			(meta.has_prior && meta.prior_weight != q->meta.prior_weight))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("gpuir indexes \"%s\" and \"%s\" of one partitioned index differ in k1, b, text_config, weights or document prior",
							RelationGetRelationName(q->index), RelationGetRelationName(sib)),
					 errhint("Give every partition's index the same k1, b, text_config, weights, INCLUDE column and prior_weight (ALTER INDEX ... SET, then REINDEX).")));
		*ndocs += meta.ndocs;
		*total_dl += meta.total_dl;
		for (int t = 0; t < q->nterms; t++)
		{
			scratch[t] = q->terms[t];
			scratch[t].df = 0;
		}
		cb.terms = scratch;
		cb.nterms = q->nterms;
		GpuirBufferForEach(sib, bufdata, meta.buf_nbytes, count_bufdoc, &cb);
		pfree(bufdata);
		index_lookup(sib, &meta, scratch, q->nterms, NULL, NULL, NULL);
		for (int t = 0; t < q->nterms; t++)
			q->terms[t].df += scratch[t].df;
		relation_close(sib, AccessShareLock);
	}
	pfree(scratch);
}

/* result_cmp: GpuirResultBetter's order as one three-way comparison (scores are never NaN) */
static inline int
result_cmp(const GpuirResult *ra, const GpuirResult *rb)
{
	if (ra->score > rb->score)
		return -1;
	if (ra->score < rb->score)
		return 1;
	return GpuirTidCmp(&ra->tid, &rb->tid);
}

/* sort_results: results best first, result_cmp inlined (lib/sort_template.h) */
#define ST_SORT sort_results
#define ST_ELEMENT_TYPE GpuirResult
#define ST_COMPARE(a, b) result_cmp(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/*
 * segment_bound: the most q's lists in segment s add to a document's BM25
 * score: the sum of each list's bound at its largest tf and smallest dl
 * (its dictionary entry: no page read)
 */
static double
segment_bound(GpuirQuery *q, int s)
{
	double		bound = 0.0;

	for (int t = 0; t < q->nterms; t++)
	{
		const GpuirDictEntry *de = &q->entries[s * q->nterms + t];

		if (de->npostings > 0)
			bound += GpuirBM25Bound(q->terms[t].idf, de->max_tf, de->min_dl, &q->sc);
	}
	return bound;
}

/* a segment and its bounds, for GpuirQueryRunAll's order */
typedef struct SegmentOrder
{
	double		lists;			/* segment_bound */
	double		prior;			/* segment_prior_bound */
	uint32		s;
} SegmentOrder;

/* descending lists + prior, then ascending segment number */
static int
segment_order_cmp(const void *a, const void *b)
{
	const SegmentOrder *x = a;
	const SegmentOrder *y = b;
	double		bx = x->lists + x->prior;
	double		by = y->lists + y->prior;

	if (bx != by)
		return (bx > by) ? -1 : 1;
	return (x->s > y->s) - (x->s < y->s);
}

/*
 * rescore_check: gpuir.debug_rescore's check of a query that mode (or,
 * wand, bmw) has just answered: every document of every segment is scored
 * again through GpuirQueryScoreDocs (run_docs, the path that rescores the
 * candidates of a GPU search over pruned lists, which only a GPU otherwise
 * takes), the insert buffer as before; that top-k, an exhaustive
 * document-at-a-time reference, must hold the same TIDs and score bits.
 * Raises XX000 when it does not; q's top-k is left as the mode made it.
 */
static void
rescore_check(GpuirQuery *q, GpuirMode mode)
{
	int			n;
	GpuirResult *made;
	GpuirResult *want;
	GpuirResult *got;
	int			ngot;
	GpuirResult made_kth;

	GpuirQuerySettle(q);
	n = q->nheap;
	made_kth = q->kth;
	made = palloc(sizeof(GpuirResult) * Max(n, 1));
	want = palloc(sizeof(GpuirResult) * Max(n, 1));
	memcpy(made, q->topk, sizeof(GpuirResult) * n);
	memcpy(want, made, sizeof(GpuirResult) * n);
	sort_results(want, n);
	GpuirQueryResetTopk(q);
	for (uint32 s = 0; s < q->meta.nsegments; s++)
	{
		uint32		ndocs = q->meta.segments[s].ndocs;
		uint32	   *all = palloc_extended(sizeof(uint32) * Max(ndocs, 1), MCXT_ALLOC_HUGE);

		for (uint32 d = 0; d < ndocs; d++)
			all[d] = d;
		GpuirQueryScoreDocs(q, (int) s, all, (int) ndocs);
		pfree(all);
	}
	GpuirQueryRunBuffer(q, mode);
	GpuirQuerySettle(q);
	ngot = q->nheap;
	got = palloc(sizeof(GpuirResult) * Max(ngot, 1));
	memcpy(got, q->topk, sizeof(GpuirResult) * ngot);
	sort_results(got, ngot);
	for (int i = 0; i < Max(n, ngot); i++)
		if (i >= n || i >= ngot || got[i].score != want[i].score ||
			!ItemPointerEquals(&got[i].tid, &want[i].tid))
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("gpuir: rescoring every document gave another top-k than the search (gpuir.debug_rescore)"),
					 errdetail("Result %d of %d / %d: (%u,%u) %.9g against (%u,%u) %.9g.",
							   i + 1, ngot, n,
							   i < ngot ? ItemPointerGetBlockNumberNoCheck(&got[i].tid) : 0,
							   i < ngot ? ItemPointerGetOffsetNumberNoCheck(&got[i].tid) : 0,
							   i < ngot ? (double) got[i].score : 0.0,
							   i < n ? ItemPointerGetBlockNumberNoCheck(&want[i].tid) : 0,
							   i < n ? ItemPointerGetOffsetNumberNoCheck(&want[i].tid) : 0,
							   i < n ? (double) want[i].score : 0.0)));
	memcpy(q->topk, made, sizeof(GpuirResult) * n);
	q->nheap = n;
	q->kth = made_kth;
	pfree(made);
	pfree(want);
	pfree(got);
}

/*
 * GpuirQueryRunAll: the CPU engine in mode over every segment and the
 * buffer.  The pruning modes (AND, WAND, BMW) visit the segments in
 * descending order of their bound (segment_bound with the segment's
 * largest prior) and skip a segment whose bound cannot
 * reach the k-th score found so far, without opening its lists: the
 * segment-level form of WAND's list bound (Broder et al. 2003, section 3),
 * as the block-max bound is its block-level form.  The top-k is the same
 * in any order (one total order); the best segments first raise the
 * threshold before the small ones, which a capped index under writes holds
 * many of.  OR visits every segment: its document-at-a-time loop is the
 * exhaustive reference the others are checked against.
 */
void
GpuirQueryRunAll(GpuirQuery *q, GpuirMode mode)
{
	const uint32 nseg = q->meta.nsegments;

	GpuirQueryResetTopk(q);
	if (mode == GPUIR_MODE_OR || nseg <= 1)
	{
		for (uint32 s = 0; s < nseg; s++)
			run_segment(q, s, mode);
	}
	else
	{
		SegmentOrder *order = palloc(sizeof(SegmentOrder) * nseg);

		for (uint32 s = 0; s < nseg; s++)
		{
			order[s].s = s;
			order[s].lists = segment_bound(q, s);
			order[s].prior = segment_prior_bound(q, &q->meta.segments[s]);
		}
		qsort(order, nseg, sizeof(SegmentOrder), segment_order_cmp);
		for (uint32 i = 0; i < nseg; i++)
		{
			if (!bound_prior_passes(q, order[i].lists, order[i].prior))
			{
				/* its blocks are skipped unread */
				for (int t = 0; t < q->nterms; t++)
					GpuirLastQueryStats.blocks_skipped +=
						q->entries[order[i].s * q->nterms + t].nblocks;
				continue;
			}
			run_segment(q, order[i].s, mode);
		}
		pfree(order);
	}
	GpuirQueryRunBuffer(q, mode);
	if (gpuir_debug_rescore &&
		(mode == GPUIR_MODE_OR || mode == GPUIR_MODE_WAND || mode == GPUIR_MODE_BMW))
		rescore_check(q, mode);
}

/* ---------- query words: tokenized text, or lexemes with prefixes expanded ---------- */

/* a growing array of lexemes (pointers into memory that lives with the query) */
typedef struct LexemeSet
{
	GpuirTerm  *terms;			/* tf unused */
	int			n;
	int			cap;
	const GpuirQueryInput *in;
} LexemeSet;

/* lexeme_set_unique: sort set's lexemes and drop repeats */
static void
lexeme_set_unique(LexemeSet *set)
{
	set->n = GpuirTermsSortMerge(set->terms, set->n, false);
}

/*
 * too_many_lexemes: raise 54000 for a query of more than
 * GPUIR_MAX_QUERY_TERMS distinct lexemes (n of them, or at least n), naming
 * a prefix of the query if it has one
 */
static void
too_many_lexemes(const LexemeSet *set, bool at_least)
{
	const GpuirQueryWord *prefix = NULL;

	for (int w = 0; set->in->text == NULL && w < set->in->nwords; w++)
		if (set->in->words[w].prefix)
			prefix = &set->in->words[w];
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("gpuir query has %s%d distinct lexemes, more than the limit of %d",
					at_least ? "at least " : "", set->n, GPUIR_MAX_QUERY_TERMS),
			 prefix != NULL ?
			 errhint("A prefix such as \"%.*s:*\" stands for every indexed lexeme that begins with it: use longer prefixes.",
					 prefix->len, prefix->lexeme) : 0));
}

/*
 * lexeme_set_add: add lexeme[0..len) (copied when copy); repeats are
 * dropped now and then, so that the set stays within a few times the
 * limit, and more than GPUIR_MAX_QUERY_TERMS distinct lexemes raise 54000
 */
static void
lexeme_set_add(LexemeSet *set, const char *lexeme, int len, bool copy)
{
	if (set->n == set->cap)
	{
		lexeme_set_unique(set);
		if (set->n > GPUIR_MAX_QUERY_TERMS)
			too_many_lexemes(set, true);
		if (set->n * 2 >= set->cap)
		{
			set->cap = Max(64, set->cap * 2);
			set->terms = set->terms ? repalloc(set->terms, sizeof(GpuirTerm) * set->cap)
				: palloc(sizeof(GpuirTerm) * set->cap);
		}
	}
	if (copy)
	{
		char	   *c = palloc(Max(len, 1));

		memcpy(c, lexeme, len);
		lexeme = c;
	}
	set->terms[set->n].lexeme = (char *) lexeme;
	set->terms[set->n].len = len;
	set->terms[set->n].tf = 0;
	set->n++;
}

static inline bool
has_prefix(const char *lexeme, int len, const GpuirQueryWord *w)
{
	return len >= w->len && memcmp(lexeme, w->lexeme, w->len) == 0;
}

/* expand_segment: the lexemes of segment s that begin with w (df > 0) */
static void
expand_segment(GpuirQuery *q, int s, const GpuirQueryWord *w, LexemeSet *set)
{
	DictReader	d;
	GpuirDictEntry de;

	dict_open(&d, q->index, &q->meta.segments[s]);
	/* lexemes beginning with w follow the first entry >= w (byte order) */
	for (int64 i = dict_lower_bound(&d, w->lexeme, w->len, &de); i < d.nterms; i++)
	{
		GpuirQueryTick(q);
		dict_entry(&d, i, &de);
		if (!has_prefix(d.buf, de.lexeme_len, w))
			break;
		if (de.df > 0)
			lexeme_set_add(set, d.buf, de.lexeme_len, true);
	}
	dict_close(&d);
}

typedef struct ExpandBuffer
{
	const GpuirQueryInput *in;
	LexemeSet  *set;
} ExpandBuffer;

/* expand_bufdoc: the lexemes of a live insert buffer record that begin with a prefix word */
static void
expand_bufdoc(const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
			  uint64 offset, void *arg)
{
	ExpandBuffer *eb = arg;

	if (rec->flags & GPUIR_REC_DELETED)
		return;
	for (int w = 0; w < eb->in->nwords; w++)
	{
		const GpuirQueryWord *word = &eb->in->words[w];

		if (!word->prefix)
			continue;
		for (int j = 0; j < doc->nterms; j++)
			if (has_prefix(doc->terms[j].lexeme, doc->terms[j].len, word))
				lexeme_set_add(eb->set, doc->terms[j].lexeme, doc->terms[j].len, true);
	}
}

/*
 * query_words: the distinct lexemes of in, sorted, into q->terms: text
 * tokenized with the index's configuration, or the words as given with
 * each prefix expanded through every segment's dictionary and the insert
 * buffer (bufdata, the snapshot GpuirQueryPrepare took: every row visible
 * to the query's snapshot is in it or in a segment).
 */
static void
query_words(GpuirQuery *q, const GpuirQueryInput *in, const char *bufdata)
{
	LexemeSet	set = {0};

	set.in = in;

	if (in->text != NULL)
	{
		GpuirDocTerms qdoc;

		GpuirTokenize(q->meta.cfg_id, in->text, in->textlen, &qdoc);
		for (int t = 0; t < qdoc.nterms; t++)
			lexeme_set_add(&set, qdoc.terms[t].lexeme, qdoc.terms[t].len, false);
	}
	else
	{
		for (int w = 0; w < in->nwords; w++)
		{
			const GpuirQueryWord *word = &in->words[w];

			if (!word->prefix)
			{
				lexeme_set_add(&set, word->lexeme, word->len, false);
				continue;
			}
			for (uint32 s = 0; s < q->meta.nsegments; s++)
				expand_segment(q, s, word, &set);
		}
		for (int w = 0; w < in->nwords; w++)
			if (in->words[w].prefix)
			{
				ExpandBuffer eb = {in, &set};

				GpuirBufferForEach(q->index, bufdata, q->meta.buf_nbytes, expand_bufdoc, &eb);
				break;
			}
	}
	lexeme_set_unique(&set);
	if (set.n > GPUIR_MAX_QUERY_TERMS)
		too_many_lexemes(&set, false);
	q->nterms = set.n;
	q->terms = palloc0(sizeof(QTerm) * Max(q->nterms, 1));
	for (int t = 0; t < q->nterms; t++)
	{
		q->terms[t].lexeme = set.terms[t].lexeme;
		q->terms[t].len = set.terms[t].len;
	}
}

/* ---------- preparing, running and finishing a query ---------- */

/* order_terms' comparator (qsort_arg, arg the terms): idf descending, then index */
static int
order_terms_cmp(const void *a, const void *b, void *arg)
{
	const QTerm *terms = arg;
	int			x = *(const int *) a;
	int			y = *(const int *) b;

	if (terms[x].idf != terms[y].idf)
		return terms[x].idf > terms[y].idf ? -1 : 1;
	return x - y;
}

/* permute: reorder the n elements of size bytes at base so that element t is old perm[t] */
static void
permute(void *base, size_t size, const int *perm, int n, char *scratch)
{
	for (int t = 0; t < n; t++)
		memcpy(scratch + t * size, (char *) base + perm[t] * size, size);
	memcpy(base, scratch, n * size);
}

/*
 * order_terms: put q's terms (and their dictionary entries and buffer tfs)
 * in the term order, idf descending, ties in lexeme order.  Every mode, on
 * the CPU and on the GPU, sums a document's scores in this order, so that
 * run_taat's non-essential lists (MaxScore: those of smallest bound, about
 * the smallest idf) come last in it and are added after the essential ones.
 */
static void
order_terms(GpuirQuery *q)
{
	const int	n = q->nterms;
	int		   *perm;
	char	   *scratch;
	bool		same = true;

	if (n < 2)
		return;
	perm = palloc(sizeof(int) * n);
	for (int t = 0; t < n; t++)
		perm[t] = t;
	qsort_arg(perm, n, sizeof(int), order_terms_cmp, q->terms);
	for (int t = 0; t < n && same; t++)
		same = perm[t] == t;
	if (!same)
	{
		scratch = palloc(Max(sizeof(QTerm), sizeof(GpuirDictEntry)) * n);
		permute(q->terms, sizeof(QTerm), perm, n, scratch);
		for (uint32 s = 0; s < q->meta.nsegments; s++)
		{
			permute(&q->entries[s * n], sizeof(GpuirDictEntry), perm, n, scratch);
			permute(&q->dirs[s * n], sizeof(GpuirBlockHeader *), perm, n, scratch);
		}
		for (int i = 0; i < q->nbufdocs; i++)
			permute(q->bufdocs[i].tfs, sizeof(uint32), perm, n, scratch);
		pfree(scratch);
	}
	pfree(perm);
}

/*
 * GpuirQueryPrepare: take the metapage and insert buffer snapshot, find the
 * query's lexemes (query_words), look them up in every segment and compute
 * the global df and idf (of all partitions, for a partition's index:
 * partition_stats).  Afterwards q->ready says whether anything can
 * match.  Raises 54000 for more than GPUIR_MAX_QUERY_TERMS distinct
 * lexemes (prefixes expanded).
 */
void
GpuirQueryPrepare(GpuirQuery *q, Relation index, Relation heap, Snapshot snapshot,
				  const GpuirQueryInput *in, int k)
{
	char	   *bufdata;
	uint64		ndocs;
	uint64		total_dl;

	memset(q, 0, sizeof(*q));
	q->index = index;
	q->heap = heap;
	q->snapshot = snapshot;
	q->k = k;
	q->filter = in->filter;
	q->filter_arg = in->filter_arg;
	/* a row filter needs each candidate's row: checked as they come */
	q->defer_visibility = (in->filter == NULL);
	q->visible_by_caller = q->defer_visibility && in->visible_by_caller;
	if (in->after != NULL)
	{
		q->after_set = true;
		q->after_score = in->after->score;
		q->after_tid = in->after->tid;
	}

	bufdata = GpuirBufferSnapshot(index, &q->meta, NULL);
	GpuirCheckOptions(index, &q->meta);
	query_words(q, in, bufdata);
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
	q->dirs = palloc0(sizeof(GpuirBlockHeader *) * Max(q->meta.nsegments, 1) * q->nterms);
	index_lookup(index, &q->meta, q->terms, q->nterms, q->entries, q->dirs, &q->dirs_epoch);
	ndocs = q->meta.ndocs;
	total_dl = q->meta.total_dl;
	partition_stats(q, &ndocs, &total_dl);
	q->sc.k1 = q->meta.k1;
	q->sc.b = q->meta.b;
	q->sc.N = ndocs;
	q->sc.avgdl = (float4) ((double) total_dl / (double) ndocs);
	q->norm_a = (double) q->sc.k1 * (1.0 - q->sc.b);
	q->norm_b = (double) q->sc.k1 * q->sc.b / q->sc.avgdl;
	for (int t = 0; t < q->nterms; t++)
		q->terms[t].idf = GpuirIdf(q->sc.N, Min(q->terms[t].df, q->sc.N));
	order_terms(q);

	q->select = k >= GPUIR_SELECT_MIN_K;
	q->topk = palloc(sizeof(GpuirResult) * (q->select ? 2 * (Size) k : (Size) k));
	GpuirQueryResetTopk(q);
	q->fetch = table_index_fetch_begin(heap);
	q->slot = table_slot_create(heap, NULL);
	q->heap_vm = heap->rd_tableam == GetHeapamTableAmRoutine() &&
		snapshot != NULL && IsMVCCSnapshot(snapshot);
	q->vmbuf = InvalidBuffer;
	q->ready = true;
}

/* GpuirQueryRunCpu: the CPU engine */
void
GpuirQueryRunCpu(GpuirQuery *q, GpuirMode mode)
{
	if (mode == GPUIR_MODE_AND_OR)
	{
		GpuirQueryRunAll(q, GPUIR_MODE_AND);
		if (!GpuirQueryFull(q))
			GpuirQueryRunAll(q, GPUIR_MODE_BMW);
	}
	else
		GpuirQueryRunAll(q, mode);
}

/*
 * GpuirQueryFinish: release the heap access and return the results, best
 * first, palloc'd in memory context target.
 */
int
GpuirQueryFinish(GpuirQuery *q, MemoryContext target, GpuirResult **results)
{
	int			n;

	if (q->ready)
		GpuirQuerySettle(q);
	n = q->ready ? q->nheap : 0;
	if (q->ready)
	{
		table_index_fetch_end(q->fetch);
		ExecDropSingleTupleTableSlot(q->slot);
		if (BufferIsValid(q->vmbuf))
			ReleaseBuffer(q->vmbuf);
		q->vmbuf = InvalidBuffer;
	}
	*results = MemoryContextAlloc(target, sizeof(GpuirResult) * Max(n, 1));
	if (n > 0)
	{
		memcpy(*results, q->topk, sizeof(GpuirResult) * n);
		sort_results(*results, n);
	}
	return n;
}

