/*-------------------------------------------------------------------------
 *
 * gpuirmergepolicy.h
 *	  Which segments a merge folds, as pure functions (plain C, no
 *	  PostgreSQL headers) over each segment's document counts: the tiered
 *	  policy with deletion rewrites, VACUUM's small segments and capped
 *	  segments described below.  src/gpuirmerge.c calls them with the
 *	  metapage's segment directory; test/test_merge_policy.c checks them on
 *	  simulated workloads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_MERGE_POLICY_H
#define GPUIR_MERGE_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/*
 * Tiered merge policy: a segment's tier is floor(log_F(live docs)) with F =
 * GPUIR_MERGE_FACTOR.  When the insert buffer is folded into a new segment
 * and its tier already holds F - 1 segments, those are folded into the new
 * segment too, which lands one tier higher, and so on while the new
 * segment's tier holds F - 1 others that are not full (as in Lucene's
 * tiered and log-byte-size policies): the number of segments stays
 * logarithmic in the number of documents, and each document is rewritten
 * O(log N) times by inserts' merges (test/test_merge_policy: about 2 in an
 * insert-only load of 1 M documents in buffers of 1,000).
 *
 * Deletions: a segment in which at least GPUIR_MERGE_DELETES_PCT percent of
 * the documents are deleted is folded by the next merge whatever its tier
 * (Lucene's TieredMergePolicy.deletesPctAllowed), so that deleted documents
 * cost at most that share of a segment's space and query work; VACUUM
 * starts that merge (GpuirMergeWanted), and merges again while a segment
 * has that many (GpuirMergeVacuum's rounds: under a cap, below, one merge
 * rewrites only the cap's worth).  Every segment smaller than the one
 * rewritten is folded with it: they cost little beside it, and every
 * segment repeats the dictionary and block headers of the terms it shares
 * with the others.  "The next merge" unless the caller says rewrites must
 * wait (gpuir_merge_choose's rewrites: the pages they need are not yet
 * reusable); then a later one.
 *
 * Small segments: a VACUUM merge also folds every segment with fewer than
 * 1/GPUIR_MERGE_FACTOR of the largest segment's live documents (VACUUM
 * starts the merge when there are two of them), so that between VACUUMs the
 * small segments that inserts' merges leave behind cost their dictionaries
 * once.  A segment thus folded is rewritten at most once per VACUUM while it
 * stays below that bound.
 *
 * Capped segments (the max_segment_docs reloption; Lucene's
 * TieredMergePolicy.maxMergedSegmentMB): C below is the merge's cap,
 * gpuir_merge_cap's larger of the reloption and a sixteenth of the index's
 * documents (the size CREATE INDEX writes past 16 segments).  A merge
 * writes its documents as
 * ceil(D / C) segments, each a range of heap TIDs (GpuirBuilderWrite), of
 * C documents each but the last (CREATE INDEX and a full merge: of about
 * equal size; gpuir_merge_pieces).  A segment with at least
 * 3C / 4 live documents is full: tier merges leave it alone, and a deletion
 * rewrite folds with it only the segments smaller than it that are not
 * full.  (At C / 2, Lucene's bound, a merge of between C and 2C documents
 * wrote two segments that were full at once and from then on rewritten
 * only for their deletions, which shrank them: in test_merge_policy's
 * soak-like load the segments averaged 0.65C, 32 of them for 530,000
 * documents at C = 25,000 where 3C / 4 keeps 28.)  A merge rewrites segments for their deletions, the most deleted
 * first, only while their live documents stay within C (at least one): the
 * rest wait for the next merge (with uniform deletions, the segments of
 * one build cross the threshold together); the smaller segments folded
 * with them, and VACUUM's small ones, also only while the merge stays
 * within C, and the tier merge and its cascade (below) fold the buffer and
 * their segments, each below 3C / 4, only while those stay within C (a
 * budget of their own; a merge that cascades fills that budget with the
 * segments below 3C / 4 of any tier, the largest first).  So no merge writes much more than about 2C
 * documents (a full merge, gpuir_merge() or a full directory, excepted; a
 * single deletion rewrite of more than C live documents may pass it), and
 * a merge needs about that many documents' pages free beside the index,
 * where an uncapped index rewriting its one large segment needs a whole
 * copy.  The price: every segment repeats the dictionary
 * entry, lexeme and block header of each of its terms (about 65 bytes a
 * term), which a heavy-tailed vocabulary makes large beside small segments'
 * postings, and a query reads every segment (a dictionary lookup and a
 * top-k pass each).
 */
#define GPUIR_MERGE_FACTOR			8
#define GPUIR_MERGE_DELETES_PCT		15
#define GPUIR_MERGE_POLICY_MAX_SEGMENTS 64	/* = GPUIR_MAX_SEGMENTS (gpuirmerge.c checks) */

/* what the policy reads of a segment (GpuirSegmentData's counts) */
typedef struct GpuirMergeSegCounts
{
	uint32_t	ndocs;			/* documents written, deleted ones included */
	uint32_t	ndeleted;		/* of them deleted */
} GpuirMergeSegCounts;

/* which merge, GpuirMerge's kind: the policy differs */
typedef enum GpuirMergePolicyKind
{
	GPUIR_POLICY_INSERT,		/* an insert whose buffer passed its limit */
	GPUIR_POLICY_VACUUM,		/* VACUUM's (GpuirMergeWanted) */
	GPUIR_POLICY_FULL			/* gpuir_merge() or a full directory: every segment */
} GpuirMergePolicyKind;

/* a segment's tier: floor(log_F(docs)) */
static inline int
gpuir_merge_tier(uint64_t docs)
{
	int			tier = 0;

	while (docs >= GPUIR_MERGE_FACTOR)
	{
		docs /= GPUIR_MERGE_FACTOR;
		tier++;
	}
	return tier;
}

/* whether at least GPUIR_MERGE_DELETES_PCT percent of seg's documents are deleted */
static inline bool
gpuir_merge_too_many_deleted(const GpuirMergeSegCounts *seg)
{
	return seg->ndeleted > 0 &&
		(uint64_t) seg->ndeleted * 100 >= (uint64_t) seg->ndocs * GPUIR_MERGE_DELETES_PCT;
}

static inline uint64_t
gpuir_merge_live(const GpuirMergeSegCounts *seg)
{
	return seg->ndocs - (seg->ndeleted < seg->ndocs ? seg->ndeleted : seg->ndocs);
}

/* whether seg is full (above): tier merges leave it; cap 0: none is */
static inline bool
gpuir_merge_is_full(const GpuirMergeSegCounts *seg, uint32_t cap)
{
	return cap > 0 && gpuir_merge_live(seg) * 4 >= (uint64_t) cap * 3;
}

/* whether a tier merge at tier folds seg: its tier, and not full */
static inline bool
gpuir_merge_in_tier(const GpuirMergeSegCounts *seg, int tier, uint32_t cap)
{
	return gpuir_merge_tier(gpuir_merge_live(seg)) == tier && !gpuir_merge_is_full(seg, cap);
}

/* whether seg is small beside the largest of segs[0 .. n) (see above) */
static inline bool
gpuir_merge_is_small(const GpuirMergeSegCounts *segs, uint32_t n, const GpuirMergeSegCounts *seg)
{
	uint64_t	largest = 0;

	for (uint32_t s = 0; s < n; s++)
		if (gpuir_merge_live(&segs[s]) > largest)
			largest = gpuir_merge_live(&segs[s]);
	return gpuir_merge_live(seg) * GPUIR_MERGE_FACTOR < largest;
}

/*
 * gpuir_merge_fold_tier: fold into the merge (fold[s]) the segments of
 * segs[0 .. n) at tier (any tier when tier < 0) that it does not fold yet
 * and that are not full, the largest first, under a cap only while *tiered
 * (the live documents of the buffer and of the segments the tier merge and
 * its cascade took) stays within it, adding their live documents to
 * *result and *tiered; returns how many it folded
 */
static inline uint32_t
gpuir_merge_fold_tier(const GpuirMergeSegCounts *segs, uint32_t n, int tier, uint32_t cap,
					  bool *fold, uint64_t *result, uint64_t *tiered)
{
	uint32_t	added = 0;

	for (;;)
	{
		int			best = -1;

		for (uint32_t s = 0; s < n; s++)
		{
			const GpuirMergeSegCounts *seg = &segs[s];

			if (fold[s] ||
				(tier >= 0 ? !gpuir_merge_in_tier(seg, tier, cap) : gpuir_merge_is_full(seg, cap)) ||
				(cap > 0 && *tiered + gpuir_merge_live(seg) > cap))
				continue;
			if (best < 0 || gpuir_merge_live(seg) > gpuir_merge_live(&segs[best]))
				best = (int) s;
		}
		if (best < 0)
			return added;
		fold[best] = true;
		added++;
		*result += gpuir_merge_live(&segs[best]);
		*tiered += gpuir_merge_live(&segs[best]);
	}
}

/*
 * gpuir_merge_choose: which of the segments segs[0 .. n) (n at most
 * GPUIR_MERGE_POLICY_MAX_SEGMENTS) a merge of kind folds with an insert
 * buffer of buf_ndocs documents (fold[s]), by the policy above with
 * segments capped at cap documents (0: no cap), or all of them for a full
 * merge; returns how many.  With rewrites false the deletion rewrites and
 * VACUUM's small segments wait for a later merge (tier merges and their
 * cascade still run): GpuirMerge asks for that while the pages such a
 * rewrite would need are free but not yet reusable (gpuirmerge.c).
 */
static inline uint32_t
gpuir_merge_choose(const GpuirMergeSegCounts *segs, uint32_t n, uint64_t buf_ndocs,
				   GpuirMergePolicyKind kind, uint32_t cap, bool rewrites, bool *fold)
{
	const int	tier = gpuir_merge_tier(buf_ndocs);
	uint32_t	same = 0;
	uint32_t	nfold = 0;
	uint64_t	result = buf_ndocs;	/* live docs of the merged segment */
	uint64_t	tiered = buf_ndocs;	/* of them, the buffer's and the tier
									 * merge's and cascade's (under a cap: what
									 * the cap bounds for them) */
	uint64_t	rewrite = 0;	/* live docs of the largest segment rewritten for deletions */
	uint64_t	budget = cap;	/* live docs the deletion rewrites, the smaller
								 * segments folded with them and VACUUM's small
								 * ones may still take (cap) */
	bool		deleted[GPUIR_MERGE_POLICY_MAX_SEGMENTS];	/* rewritten for its deletions */
	bool		before_tier[GPUIR_MERGE_POLICY_MAX_SEGMENTS];	/* fold before the tier merge */
	bool		cascaded = false;	/* the cascade folded something */

	/*
	 * the segments rewritten for their deletions: all of them, or under a
	 * cap the most deleted first while their live documents stay within it
	 * (at least one); the others wait for the next merge
	 */
	for (uint32_t s = 0; s < n; s++)
		deleted[s] = gpuir_merge_too_many_deleted(&segs[s]) && cap == 0 && rewrites;
	for (;;)
	{
		int			best = -1;

		for (uint32_t s = 0; cap > 0 && rewrites && s < n; s++)
		{
			const GpuirMergeSegCounts *seg = &segs[s];

			if (deleted[s] || !gpuir_merge_too_many_deleted(seg) ||
				(gpuir_merge_live(seg) > budget && budget < cap))
				continue;
			if (best < 0 ||
				(uint64_t) seg->ndeleted * segs[best].ndocs >
				(uint64_t) segs[best].ndeleted * seg->ndocs)
				best = (int) s;
		}
		if (best < 0)
			break;
		deleted[best] = true;
		budget -= (budget < gpuir_merge_live(&segs[best])) ? budget
			: gpuir_merge_live(&segs[best]);
	}

	for (uint32_t s = 0; s < n; s++)
	{
		const GpuirMergeSegCounts *seg = &segs[s];

		if (gpuir_merge_in_tier(seg, tier, cap))
			same++;
		if (deleted[s] && gpuir_merge_live(seg) > rewrite)
			rewrite = gpuir_merge_live(seg);
	}
	for (uint32_t s = 0; s < n; s++)
	{
		const GpuirMergeSegCounts *seg = &segs[s];
		bool		extra;		/* smaller than a rewritten one, or small (VACUUM) */

		extra = (gpuir_merge_live(seg) < rewrite && !gpuir_merge_is_full(seg, cap)) ||
			(kind == GPUIR_POLICY_VACUUM && rewrites && gpuir_merge_is_small(segs, n, seg));
		/* under a cap, only while the merge stays within it */
		if (extra && cap > 0 && !deleted[s])
		{
			extra = gpuir_merge_live(seg) <= budget;
			if (extra)
				budget -= gpuir_merge_live(seg);
		}
		fold[s] = kind == GPUIR_POLICY_FULL || deleted[s] || extra;
		nfold += fold[s];
		if (fold[s])
			result += gpuir_merge_live(seg);
	}
	/*
	 * the tier merge: under a cap, only while the buffer and the tier's
	 * segments stay within it, whatever the deletion rewrites took (their
	 * own budget): so the merge without rewrites folds the same tier
	 * segments or fewer, a subset that GpuirMerge can run while the
	 * rewrites wait (choose_segments)
	 */
	memcpy(before_tier, fold, sizeof(bool) * n);
	if (same + 1 >= GPUIR_MERGE_FACTOR)
		nfold += gpuir_merge_fold_tier(segs, n, tier, cap, fold, &result, &tiered);

	/*
	 * The cascade: while the merged segment's tier holds F - 1 other
	 * segments that are not full, they fold into it too (it lands a tier
	 * higher), as a log merge policy merges every level that fills up;
	 * without it the segments one tier above the buffer's, and those a
	 * VACUUM merge writes, would only ever be folded by a full merge
	 * (a full directory).  Under a cap, only while the buffer and the
	 * segments of the tier merge and cascade stay within it (Lucene's
	 * maxMergedSegmentMB bounds every merge; the deletion rewrites have a
	 * budget of their own), at the tier of those alone: the segments of a
	 * tier are below 3 cap / 4 each, so a sum below cap / 4 takes at least
	 * one; the others wait for a later cascade.  Without that bound one
	 * cascade at cap 25,000 folded 142,000 documents (test_merge_policy),
	 * and a 16-client soak grew the index by such merges' whole output.
	 */
	for (;;)
	{
		const int	t = gpuir_merge_tier(cap > 0 ? tiered : result);
		uint32_t	c = 0;
		uint32_t	added;

		for (uint32_t s = 0; s < n; s++)
			c += !fold[s] && gpuir_merge_in_tier(&segs[s], t, cap);
		if (c + 1 < GPUIR_MERGE_FACTOR)
			break;
		added = gpuir_merge_fold_tier(segs, n, t, cap, fold, &result, &tiered);
		if (added == 0)
			break;
		nfold += added;
		cascaded = true;
	}

	/*
	 * Filling to the cap: under a cap, a merge that cascades folds instead
	 * the segments that are not full, the largest first, while the buffer
	 * and they stay within the cap, whatever their tier.  The tiers alone
	 * write segments of a few whole segments of the tier below (with an
	 * insert buffer of 800 documents and C = 25,000: 6,400, then a cascade of
	 * three of those, 19,200, which is full, so nothing folds it again), where
	 * the fill reaches about C (24,800: the buffer, three of 6,400 and six of
	 * 800).  test_merge_policy's soak: 30.9 segments against 32.5 on average in
	 * the last third, for 22 that the live documents need.
	 */
	if (cascaded && cap > 0)
	{
		memcpy(fold, before_tier, sizeof(bool) * n);
		tiered = buf_ndocs;
		gpuir_merge_fold_tier(segs, n, -1, cap, fold, &result, &tiered);
		/* the count, of the folds undone and made again */
		nfold = 0;
		for (uint32_t s = 0; s < n; s++)
			nfold += fold[s];
	}
	return nfold;
}

/*
 * gpuir_merge_cap: the cap on a segment's documents that merges apply in
 * an index of ndocs live documents whose max_segment_docs is cap (0: no
 * cap): the larger of cap and ceil(ndocs / build_pieces), the size of the
 * segments CREATE INDEX and REINDEX write when the cap would ask for more
 * than build_pieces (GPUIR_MAX_BUILD_PIECES) of them.  So merges may
 * rebuild the segments a fresh build has rather than keep more, smaller
 * ones: a 30-minute soak at cap 25,000 ended with 29 segments against a
 * fresh REINDEX's 16 of 32,941 documents, and their dictionaries made most
 * of its excess size (1.37x: 1.37 M dictionary entries against 1.00 M).
 * One merge still rewrites at most about that many documents, a sixteenth
 * of the index's, beside it.
 */
static inline uint32_t
gpuir_merge_cap(uint32_t cap, uint64_t ndocs, uint32_t build_pieces)
{
	uint64_t	share;

	if (cap == 0 || build_pieces == 0)
		return cap;
	share = (ndocs + build_pieces - 1) / build_pieces;
	return share > cap ? (uint32_t) (share < UINT32_MAX ? share : UINT32_MAX) : cap;
}

/*
 * gpuir_merge_pieces: the cut of ndocs documents (in heap TID order) into
 * segments of at most cap documents each (0: no cap) and at most
 * max_pieces (at least 1): the r-th holds first[r] .. first[r + 1] - 1 of
 * them (first has room for max_pieces + 1 entries); returns how many.
 * ceil(ndocs / cap) of them (clamped to max_pieces), of about equal size,
 * or with fill (a merge that is not a full one) of cap documents each but
 * the last, which takes the rest: a merge of a little over C documents
 * writes one segment of C and a small one that a later merge folds, not two
 * of C / 2 that tier merges leave alone once near 3C / 4.  When clamped,
 * always of about equal size (each above the cap).
 */
static inline uint32_t
gpuir_merge_pieces(uint64_t ndocs, uint32_t cap, uint32_t max_pieces, bool fill, uint32_t *first)
{
	uint64_t	k = 1;

	if (cap > 0 && ndocs > cap)
		k = (ndocs + cap - 1) / cap;
	if (max_pieces < 1)
		max_pieces = 1;
	if (k > max_pieces)
	{
		k = max_pieces;
		fill = false;
	}
	for (uint64_t r = 0; r <= k; r++)
		first[r] = (uint32_t) (fill ? (r < k ? r * cap : ndocs) : ndocs * r / k);
	return (uint32_t) k;
}

/* the deleted documents segs[0 .. n) hold */
static inline uint64_t
gpuir_merge_deleted(const GpuirMergeSegCounts *segs, uint32_t n)
{
	uint64_t	deleted = 0;

	for (uint32_t s = 0; s < n; s++)
		deleted += segs[s].ndeleted;
	return deleted;
}

/*
 * gpuir_merge_rewrites_wanted: some segment of segs[0 .. n) has so many
 * deleted documents that the policy would rewrite it (VACUUM's further
 * merge rounds, GpuirMergeVacuum)
 */
static inline bool
gpuir_merge_rewrites_wanted(const GpuirMergeSegCounts *segs, uint32_t n)
{
	for (uint32_t s = 0; s < n; s++)
		if (gpuir_merge_too_many_deleted(&segs[s]))
			return true;
	return false;
}

/*
 * gpuir_merge_vacuum_again: whether VACUUM merges once more after its
 * rounds-th round (GpuirMergeVacuum; test_merge_policy's sim_vacuum): while
 * some segment of segs[0 .. n), the directory after that round, has so many
 * deleted documents that the policy would rewrite it, the round lowered the
 * deleted documents the segments hold (from before), and fewer than
 * max_rounds rounds ran
 */
static inline bool
gpuir_merge_vacuum_again(const GpuirMergeSegCounts *segs, uint32_t n, uint64_t before,
						 int rounds, int max_rounds)
{
	return rounds < max_rounds && gpuir_merge_rewrites_wanted(segs, n) &&
		gpuir_merge_deleted(segs, n) < before;
}

/*
 * gpuir_merge_wanted_segments: the segments' part of GpuirMergeWanted: some
 * segment has so many deleted documents that the policy would rewrite it,
 * or two segments are small beside the largest
 */
static inline bool
gpuir_merge_wanted_segments(const GpuirMergeSegCounts *segs, uint32_t n)
{
	uint32_t	small = 0;

	if (gpuir_merge_rewrites_wanted(segs, n))
		return true;
	for (uint32_t s = 0; s < n; s++)
		small += gpuir_merge_is_small(segs, n, &segs[s]);
	return small >= 2;
}

#endif							/* GPUIR_MERGE_POLICY_H */
