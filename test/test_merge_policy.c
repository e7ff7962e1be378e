/*-------------------------------------------------------------------------
 *
 * test_merge_policy.c
 *	  The merge policy (src/gpuirmergepolicy.h): hand-made directories for
 *	  each rule, then simulated workloads (inserts, deletes, VACUUM, with
 *	  and without max_segment_docs) that check what the policy promises:
 *	  few segments, each document rewritten O(log N) times, deleted
 *	  documents rewritten away, capped rewrites within about the cap.
 *
 *	  The simulation writes a merge's documents as GpuirMerge does: the
 *	  live documents of the folded segments plus the buffer, as
 *	  ceil(D / cap) segments (gpuir_merge_pieces: of the cap each but the
 *	  last, or of about equal size for a full merge), clamped
 *	  to the directory's free entries; a full directory makes the merge a
 *	  full one.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpuirmergepolicy.h"
#include "test_util.h"

#define MAXSEG	GPUIR_MERGE_POLICY_MAX_SEGMENTS

typedef struct Sim
{
	GpuirMergeSegCounts seg[MAXSEG];
	uint64_t	orig[MAXSEG];	/* test_soak: live documents of the first rows */
	uint32_t	n;
	uint64_t	buf;			/* documents in the insert buffer */
	uint64_t	buf_orig;		/* of them, of the first rows (test_soak) */
	uint32_t	cap;			/* max_segment_docs */
	bool		build_cap;		/* merges cap at gpuir_merge_cap, as GpuirMerge */
	uint64_t	inserted;		/* documents ever inserted */
	uint64_t	rewritten;		/* live documents of folded segments, summed over merges */
	uint64_t	full_merges;	/* merges made full by a full directory */
	uint64_t	max_capped_rewrite;	/* most live docs of full segments one capped merge folded */
	uint64_t	max_single;		/* largest live count of a full segment folded */
	uint64_t	max_merged;		/* most live docs one capped merge wrote */
	uint64_t	not_subset;		/* inserts' merges whose fold without rewrites
								 * was not a subset of the one with them */
} Sim;

static uint64_t
sim_live(const Sim *sim)
{
	uint64_t	live = sim->buf;

	for (uint32_t s = 0; s < sim->n; s++)
		live += gpuir_merge_live(&sim->seg[s]);
	return live;
}

/* the fresh build's segments (CREATE INDEX writes at most this many, GPUIR_MAX_BUILD_PIECES) */
#define BUILD_PIECES	16

/* one merge of kind at sim->cap (sim_merge) */
static void
sim_merge_at(Sim *sim, GpuirMergePolicyKind kind)
{
	bool		fold[MAXSEG];
	uint32_t	keep = 0,
				pieces = 1;
	uint64_t	docs = sim->buf,
				orig = sim->buf_orig,
				capped = 0,
				single = 0;

	if (sim->n >= MAXSEG)
	{
		kind = GPUIR_POLICY_FULL;
		sim->full_merges++;
	}
	gpuir_merge_choose(sim->seg, sim->n, sim->buf, kind, sim->cap, true, fold);
	if (kind == GPUIR_POLICY_INSERT)
	{
		/* what GpuirMerge runs while the rewrites wait must be a subset */
		bool		fold_now[MAXSEG];

		gpuir_merge_choose(sim->seg, sim->n, sim->buf, kind, sim->cap, false, fold_now);
		for (uint32_t s = 0; s < sim->n; s++)
			if (fold_now[s] && !fold[s])
			{
				sim->not_subset++;
				break;
			}
	}
	for (uint32_t s = 0; s < sim->n; s++)
	{
		const uint64_t live = gpuir_merge_live(&sim->seg[s]);

		if (!fold[s])
		{
			sim->orig[keep] = sim->orig[s];
			sim->seg[keep++] = sim->seg[s];
			continue;
		}
		docs += live;
		orig += sim->orig[s];
		sim->rewritten += live;
		/*
		 * a full segment (at least 3 cap / 4 live) is folded only for
		 * deletions: what the cap bounds (tier merges fold segments below it)
		 */
		if (gpuir_merge_is_full(&sim->seg[s], sim->cap))
		{
			capped += live;
			single = (live > single) ? live : single;
		}
	}
	if (sim->cap > 0 && kind != GPUIR_POLICY_FULL)
	{
		sim->max_capped_rewrite = (capped > sim->max_capped_rewrite) ? capped
			: sim->max_capped_rewrite;
		sim->max_single = (single > sim->max_single) ? single : sim->max_single;
		sim->max_merged = (docs > sim->max_merged) ? docs : sim->max_merged;
	}
	sim->n = keep;
	sim->buf = 0;
	sim->buf_orig = 0;
	if (docs == 0)
		return;
	/* as GpuirBuilderWrite cuts them: full pieces but the last, except for a full merge */
	{
		uint32_t	first[MAXSEG + 1];

		pieces = gpuir_merge_pieces(docs, sim->cap, MAXSEG - sim->n, kind != GPUIR_POLICY_FULL, first);
		for (uint32_t r = 0; r < pieces; r++)
		{
			sim->seg[sim->n + r].ndocs = first[r + 1] - first[r];
			/* the first rows' documents spread evenly over the pieces */
			sim->orig[sim->n + r] = orig * first[r + 1] / docs - orig * first[r] / docs;
		}
	}
	for (uint32_t r = 0; r < pieces; r++)
		sim->seg[sim->n + r].ndeleted = 0;
	sim->n += pieces;
}

/* one merge of kind, as GpuirMerge does it (with build_cap, at gpuir_merge_cap's cap) */
static void
sim_merge(Sim *sim, GpuirMergePolicyKind kind)
{
	const uint32_t user_cap = sim->cap;

	if (sim->build_cap)
		sim->cap = gpuir_merge_cap(user_cap, sim_live(sim), BUILD_PIECES);
	sim_merge_at(sim, kind);
	sim->cap = user_cap;
}

/*
 * VACUUM's merges, as GpuirMergeVacuum runs them: one VACUUM merge, then
 * further rounds while some segment has so many deleted documents that the
 * policy would rewrite it and the round before lowered the deleted
 * documents, at most MAXSEG rounds; returns how many
 */
static int
sim_vacuum(Sim *sim)
{
	int			rounds = 0;
	uint64_t	before;

	do
	{
		before = gpuir_merge_deleted(sim->seg, sim->n);
		sim_merge(sim, GPUIR_POLICY_VACUUM);
		rounds++;
	} while (gpuir_merge_vacuum_again(sim->seg, sim->n, before, rounds, MAXSEG));
	return rounds;
}

/*
 * delete one live document, uniformly among the live ones (segments and
 * buffer), or with first_rows among those of the first rows (test_soak)
 */
static void
sim_delete(Sim *sim, bool first_rows)
{
	uint64_t	buf = first_rows ? sim->buf_orig : sim->buf,
				live = buf,
				pick;

	for (uint32_t s = 0; s < sim->n; s++)
		live += first_rows ? sim->orig[s] : gpuir_merge_live(&sim->seg[s]);
	if (live == 0)
		return;
	pick = ((uint64_t) rnd() << 32 | rnd()) % live;
	if (pick < buf)
	{
		sim->buf--;				/* the buffer's deleted records are dropped by the merge */
		if (first_rows)
			sim->buf_orig--;
		return;
	}
	pick -= buf;
	for (uint32_t s = 0; s < sim->n; s++)
	{
		const uint64_t l = first_rows ? sim->orig[s] : gpuir_merge_live(&sim->seg[s]);

		if (pick < l)
		{
			sim->seg[s].ndeleted++;
			if (first_rows)
				sim->orig[s]--;
			return;
		}
		pick -= l;
	}
}

static void
set_segs(Sim *sim, const uint32_t *ndocs, const uint32_t *ndeleted, uint32_t n)
{
	memset(sim, 0, sizeof(*sim));
	for (uint32_t s = 0; s < n; s++)
	{
		sim->seg[s].ndocs = ndocs[s];
		sim->seg[s].ndeleted = ndeleted ? ndeleted[s] : 0;
	}
	sim->n = n;
}

static void
test_rules(void)
{
	Sim			sim;
	bool		fold[MAXSEG];
	char		what[160];

	check(gpuir_merge_tier(0) == 0 && gpuir_merge_tier(7) == 0 && gpuir_merge_tier(8) == 1 &&
		  gpuir_merge_tier(63) == 1 && gpuir_merge_tier(64) == 2, "tier is floor(log8)");

	/* tier merge: 7 segments of the buffer's tier fold with it, another tier's do not */
	{
		const uint32_t d[] = {100, 120, 90, 80, 110, 70, 65, 5000};

		set_segs(&sim, d, NULL, 8);
		check(gpuir_merge_choose(sim.seg, 8, 100, GPUIR_POLICY_INSERT, 0, true, fold) == 7 &&
			  !fold[7], "7 segments of the buffer's tier fold with it");
		check(gpuir_merge_choose(sim.seg, 6, 100, GPUIR_POLICY_INSERT, 0, true, fold) == 0,
			  "6 segments of the buffer's tier do not fold");
		check(gpuir_merge_choose(sim.seg, 8, 7, GPUIR_POLICY_INSERT, 0, true, fold) == 0,
			  "a buffer of another tier folds none");
		check(gpuir_merge_choose(sim.seg, 8, 0, GPUIR_POLICY_FULL, 0, true, fold) == 8,
			  "a full merge folds every segment");
		sim.seg[7].ndeleted = 1000;
		check(gpuir_merge_choose(sim.seg, 8, 100, GPUIR_POLICY_INSERT, 0, true, fold) == 8,
			  "a deletion rewrite folds the tier's segments with it");
		check(gpuir_merge_choose(sim.seg, 8, 100, GPUIR_POLICY_INSERT, 0, false, fold) == 7 &&
			  !fold[7], "without rewrites the tier merge runs and the deleted segment waits");
	}

	/* deletions: 15% rewrites a segment, and every smaller one folds with it */
	{
		const uint32_t d[] = {10000, 5000, 6000, 20000};
		const uint32_t x[] = {1500, 0, 0, 2999};

		set_segs(&sim, d, x, 4);
		check(gpuir_merge_choose(sim.seg, 4, 0, GPUIR_POLICY_INSERT, 0, true, fold) == 3 &&
			  fold[0] && fold[1] && fold[2] && !fold[3],
			  "15% deleted is rewritten with the smaller segments; 14.99% is not");
		check(gpuir_merge_choose(sim.seg, 4, 0, GPUIR_POLICY_INSERT, 0, false, fold) == 0,
			  "without rewrites the deleted segment waits");
		check(gpuir_merge_choose(sim.seg, 4, 0, GPUIR_POLICY_FULL, 0, false, fold) == 4,
			  "a full merge folds everything without rewrites too");
		check(gpuir_merge_wanted_segments(sim.seg, 4), "VACUUM wants a merge at 15% deleted");
		sim.seg[0].ndeleted = 1499;
		check(!gpuir_merge_wanted_segments(sim.seg, 4), "no merge wanted below 15% deleted");
	}

	/* VACUUM folds segments below 1/8 of the largest; it is wanted when two are */
	{
		const uint32_t d[] = {80000, 9999, 10001, 500, 40000};

		set_segs(&sim, d, NULL, 5);
		check(gpuir_merge_wanted_segments(sim.seg, 5), "two small segments want a merge");
		check(gpuir_merge_choose(sim.seg, 5, 0, GPUIR_POLICY_VACUUM, 0, true, fold) == 2 &&
			  fold[1] && fold[3] && !fold[2] && !fold[0] && !fold[4],
			  "VACUUM folds the segments below 1/8 of the largest");
		check(gpuir_merge_choose(sim.seg, 5, 0, GPUIR_POLICY_INSERT, 0, true, fold) == 0,
			  "an insert's merge does not fold small segments");
		check(gpuir_merge_choose(sim.seg, 5, 0, GPUIR_POLICY_VACUUM, 0, false, fold) == 0,
			  "without rewrites VACUUM's small segments wait");
		sim.seg[3].ndocs = 20000;
		check(!gpuir_merge_wanted_segments(sim.seg, 5), "one small segment wants no merge");
	}

	/*
	 * capped: the tier merge and its cascade are bounded apart from the
	 * deletion rewrites, so the merge without rewrites folds a subset (a
	 * review's case: a bound shared with the rewrites left two of the tier
	 * out with them and took them without, so the rewrite could not wait)
	 */
	{
		const uint32_t cap = 25000;
		const uint32_t d[] = {24000, 1000, 1000, 1000, 1000, 1000, 1000, 1000};
		const uint32_t x[] = {4000, 0, 0, 0, 0, 0, 0, 0};
		bool		fold_now[MAXSEG];
		bool		subset = true;
		uint32_t	n,
					n_now;

		set_segs(&sim, d, x, 8);
		n = gpuir_merge_choose(sim.seg, 8, 1000, GPUIR_POLICY_INSERT, cap, true, fold);
		n_now = gpuir_merge_choose(sim.seg, 8, 1000, GPUIR_POLICY_INSERT, cap, false, fold_now);
		for (uint32_t s = 0; s < 8; s++)
			subset = subset && (!fold_now[s] || fold[s]);
		snprintf(what, sizeof(what),
				 "capped: with rewrites %u folded, without %u, a subset and without the rewrite",
				 n, n_now);
		check(n == 8 && n_now == 7 && !fold_now[0] && subset, what);
	}

	/*
	 * capped: a merge that cascades fills to the cap, the largest first (the
	 * tiers alone take the buffer, the seven of 800 and two of 6,400: 19,200)
	 */
	{
		const uint32_t cap = 25000;
		const uint32_t d[] = {6400, 6400, 6400, 6400, 6400, 6400, 6400,
			800, 800, 800, 800, 800, 800, 800, 20000};
		uint64_t	merged = 800;
		uint32_t	n,
					n800 = 0,
					n6400 = 0;

		set_segs(&sim, d, NULL, 15);
		n = gpuir_merge_choose(sim.seg, 15, 800, GPUIR_POLICY_INSERT, cap, true, fold);
		for (uint32_t s = 0; s < 15; s++)
			if (fold[s])
			{
				merged += sim.seg[s].ndocs;
				n800 += sim.seg[s].ndocs == 800;
				n6400 += sim.seg[s].ndocs == 6400;
			}
		snprintf(what, sizeof(what),
				 "capped: a cascade fills to the cap (%u folded: %u of 6,400, %u of 800; %llu documents)",
				 n, n6400, n800, (unsigned long long) merged);
		check(n == 9 && n6400 == 3 && n800 == 6 && merged == 24800 && !fold[14], what);
	}

	/* capped: pieces of the cap but the last for merges, equal ones for a build */
	{
		uint32_t	first[MAXSEG + 1];
		uint32_t	k = gpuir_merge_pieces(25100, 25000, MAXSEG, true, first);

		check(k == 2 && first[1] == 25000 && first[2] == 25100,
			  "a merge of 25,100 documents cuts 25,000 and 100");
		k = gpuir_merge_pieces(25100, 25000, MAXSEG, false, first);
		check(k == 2 && first[1] == 12550 && first[2] == 25100,
			  "a build of 25,100 documents cuts two of 12,550");
		k = gpuir_merge_pieces(100000, 25000, 2, true, first);
		check(k == 2 && first[1] == 50000 && first[2] == 100000,
			  "clamped pieces are of equal size");
		k = gpuir_merge_pieces(500, 0, MAXSEG, true, first);
		check(k == 1 && first[0] == 0 && first[1] == 500, "no cap: one piece");
	}

	/* capped: full segments stay out of tier merges; deletion rewrites within the cap */
	{
		const uint32_t cap = 1000;
		const uint32_t d[] = {900, 900, 1000, 400, 300};
		const uint32_t x[] = {500, 300, 200, 0, 0};
		uint32_t	n;

		set_segs(&sim, d, x, 5);
		check(gpuir_merge_is_full(&sim.seg[2], cap) && !gpuir_merge_is_full(&sim.seg[0], cap),
			  "a segment with at least 3 cap / 4 live documents is full");
		n = gpuir_merge_choose(sim.seg, 5, 0, GPUIR_POLICY_INSERT, cap, true, fold);
		snprintf(what, sizeof(what),
				 "capped rewrite: the most deleted first, within the cap (%u folded: %d%d%d%d%d)",
				 n, fold[0], fold[1], fold[2], fold[3], fold[4]);
		/*
		 * by deleted share: 0 (400 live) leaves 600 of the budget, 1 (600)
		 * takes it all, 2 waits; 3 and 4 are smaller than a rewritten one
		 * but no budget is left
		 */
		check(fold[0] && fold[1] && !fold[2] && !fold[3] && !fold[4] && n == 2, what);
		check(gpuir_merge_choose(sim.seg, 5, 0, GPUIR_POLICY_INSERT, cap, false, fold) == 0,
			  "capped: without rewrites every deleted segment waits");
	}
}

/*
 * A workload: steps of a batch of inserts (the buffer folded past
 * buf_limit documents), deletes at del_per_1000 of the inserted documents,
 * and a VACUUM every vacuum_every batches (a merge when it wants one).
 */
static void
test_workload(const char *name, uint64_t steps, uint32_t batch, uint32_t buf_limit,
			  uint32_t del_per_1000, uint32_t vacuum_every, uint32_t cap)
{
	Sim			sim;
	uint32_t	max_n = 0;
	uint64_t	n_sum = 0;		/* segments summed over the last third's steps */
	uint64_t	merges = 0;
	uint64_t	vac_merges = 0;
	bool		live_ok = true,
				deleted_ok = true;
	char		what[240];

	memset(&sim, 0, sizeof(sim));
	sim.cap = cap;
	rnd_seed(0x5eed0000 + cap + del_per_1000);
	for (uint64_t step = 1; step <= steps; step++)
	{
		uint64_t	deletes = (uint64_t) batch * del_per_1000 / 1000;

		sim.buf += batch;
		sim.inserted += batch;
		for (uint64_t i = 0; i < deletes; i++)
			sim_delete(&sim, false);
		if (sim.buf >= buf_limit)
		{
			const uint64_t live = sim_live(&sim);

			sim_merge(&sim, GPUIR_POLICY_INSERT);
			merges++;
			live_ok = live_ok && sim_live(&sim) == live;
		}
		if (vacuum_every > 0 && step % vacuum_every == 0 &&
			(gpuir_merge_wanted_segments(sim.seg, sim.n) || sim.buf > 0))
		{
			const uint64_t live = sim_live(&sim);

			sim_vacuum(&sim);
			vac_merges++;
			live_ok = live_ok && sim_live(&sim) == live;
			/* VACUUM's merges (in rounds under a cap) leave no segment at 15% deleted */
			for (uint32_t s = 0; s < sim.n; s++)
				deleted_ok = deleted_ok && !gpuir_merge_too_many_deleted(&sim.seg[s]);
		}
		max_n = (sim.n > max_n) ? sim.n : max_n;
		if (step > steps - steps / 3)
			n_sum += sim.n;
	}

	snprintf(what, sizeof(what), "%s: merges keep every live document", name);
	check(live_ok, what);
	snprintf(what, sizeof(what),
			 "%s: an insert's merge without rewrites folds a subset of its segments (%llu merges not)",
			 name, (unsigned long long) sim.not_subset);
	check(sim.not_subset == 0, what);
	snprintf(what, sizeof(what), "%s: no segment at 15%% deleted after VACUUM's merges", name);
	check(deleted_ok, what);
	snprintf(what, sizeof(what), "%s: at most %u segments (never a full directory: %llu forced)",
			 name, max_n, (unsigned long long) sim.full_merges);
	check(sim.full_merges == 0 && max_n < MAXSEG, what);
	if (cap == 0)
	{
		/* tiers above the buffer's: log8(inserted / buf_limit) + 1, each under 8 segments */
		const int	tiers = gpuir_merge_tier(sim.inserted / buf_limit) + 2;
		const double amp = (double) sim.rewritten / (double) sim.inserted;

		snprintf(what, sizeof(what), "%s: %u segments at most, within 7 a tier over %d tiers",
				 name, max_n, tiers);
		check(max_n <= (uint32_t) (7 * tiers + 2), what);
		if (vacuum_every == 0)
		{
			snprintf(what, sizeof(what),
					 "%s: each document rewritten %.2f times on average, at most the %d tiers",
					 name, amp, tiers);
			check(amp <= (double) tiers, what);
		}
	}
	else
	{
		/* a capped merge folds full segments within the cap (or one of them) */
		const uint64_t bound = (sim.max_single > cap) ? sim.max_single : cap;

		snprintf(what, sizeof(what),
				 "%s: a capped merge folds at most %llu live documents of full segments (%llu seen)",
				 name, (unsigned long long) bound, (unsigned long long) sim.max_capped_rewrite);
		check(sim.max_capped_rewrite <= bound, what);
		/*
		 * and writes at most about twice the cap in all: the rewrites within
		 * it, the buffer with the tier merge and its cascade within it too
		 */
		snprintf(what, sizeof(what),
				 "%s: a capped merge writes at most %llu live documents (%llu seen)",
				 name, (unsigned long long) (bound + cap), (unsigned long long) sim.max_merged);
		check(sim.max_merged <= bound + cap, what);
		/* and the deleted documents do not pile up: below 2x the threshold overall */
		{
			uint64_t	docs = 0,
						del = 0;

			for (uint32_t s = 0; s < sim.n; s++)
			{
				docs += sim.seg[s].ndocs;
				del += sim.seg[s].ndeleted;
			}
			snprintf(what, sizeof(what), "%s: %llu of %llu documents deleted at the end",
					 name, (unsigned long long) del, (unsigned long long) docs);
			check(del * 100 < docs * 2 * GPUIR_MERGE_DELETES_PCT, what);
		}
	}
	printf("merge policy: %s: %llu inserted, %llu merges + %llu VACUUM merges, at most %u "
		   "segments (%.1f on average in the last third), %.2f rewrites a document\n", name,
		   (unsigned long long) sim.inserted, (unsigned long long) merges,
		   (unsigned long long) vac_merges, max_n, (double) n_sum / (double) (steps / 3),
		   (double) sim.rewritten / (double) sim.inserted);
}

/*
 * The soak of bench/writes (issue "Scale"): a table of 200,000 rows built
 * with capped segments (ceil(200,000 / cap), under CREATE INDEX's 16 at
 * the caps tested), then 1.25 M writes: 40% inserts of new rows, 30%
 * updates and 30% deletes of a random id among the first rows
 * (a miss once it is deleted; an update re-inserts it), the buffer folded
 * at 800 documents, and a VACUUM merge whenever the dead rows pass
 * autovacuum's default threshold (20% of the live rows + 50); the index
 * learns of the rows deleted since the last VACUUM only then (its
 * bulk delete), so inserts' merges in between see none.  The first rows are
 * the only ones deleted, so the segments holding them are the ones
 * rewritten.  Checks the segment count against what the fresh index's
 * documents need at the cap, and prints the index's size against a fresh
 * build's (at most BUILD_PIECES segments, as REINDEX writes) by a size model
 * (model_pages; free pages not counted).
 */
/*
 * A segment's size in pages as a function of its documents (deleted ones
 * included), fitted to the merges of bench/writes' soak of 2026-11-29
 * (Wikipedia paragraphs, 8 kB pages): 76 pages at 800 documents, 276 at
 * 6,000, about 610 at 25,000; the growth is that of the vocabulary (Heaps'
 * law), as every segment repeats the dictionary entry, lexeme and block
 * header of each of its terms.
 */
static double
model_pages(uint64_t docs)
{
	return docs == 0 ? 0.0 : 76.0 * pow((double) docs / 800.0, 0.6);
}

/*
 * the modelled size of sim's segments against a fresh build of live
 * documents (REINDEX: ceil(live / cap) segments, at most BUILD_PIECES)
 */
static double
model_ratio(const Sim *sim, uint64_t live)
{
	uint64_t	k = (sim->cap > 0 && live > sim->cap) ? (live + sim->cap - 1) / sim->cap : 1;

	if (k > BUILD_PIECES)
		k = BUILD_PIECES;
	double		pages = 0.0;

	for (uint32_t s = 0; s < sim->n; s++)
		pages += model_pages(sim->seg[s].ndocs);
	return pages / ((double) k * model_pages(live / k));
}

static void
test_soak(uint32_t cap, bool build_cap, double max_avg)
{
	Sim			sim;
	const uint64_t first_rows = 200000;
	const uint64_t steps = 12500;
	uint64_t	orig_live = first_rows,
				live = first_rows,
				dead = 0,
				n_sum = 0;
	double		avg,
				ratio_max = 0.0,
				ratio_sum = 0.0;
	bool		deleted_ok = true;
	int			rounds,
				max_rounds = 0;
	char		what[200];

	memset(&sim, 0, sizeof(sim));
	sim.cap = cap;
	sim.build_cap = build_cap;
	rnd_seed(0x50a4);
	/* CREATE INDEX: ceil(first_rows / cap) pieces, as a full merge cuts them */
	sim.buf = sim.buf_orig = first_rows;
	sim_merge(&sim, GPUIR_POLICY_FULL);
	for (uint64_t step = 1; step <= steps; step++)
	{
		for (int w = 0; w < 100; w++)
		{
			const uint32_t what_w = rnd() % 20;

			if (what_w < 8)
			{
				sim.buf++;
				sim.inserted++;
				live++;
			}
			else if (rnd() % first_rows < orig_live)
			{
				/* the index learns of the dead row at the next VACUUM */
				dead++;
				if (what_w < 14)
				{
					sim.buf++;	/* the update's new version */
					sim.buf_orig++;
					sim.inserted++;
				}
				else
					orig_live--;
			}
			if (sim.buf >= 800)
				sim_merge(&sim, GPUIR_POLICY_INSERT);
		}
		if (dead > live / 5 + 50)
		{
			for (uint64_t d = 0; d < dead; d++)
				sim_delete(&sim, true);
			live = sim_live(&sim);
			rounds = sim_vacuum(&sim);
			max_rounds = (rounds > max_rounds) ? rounds : max_rounds;
			for (uint32_t s = 0; s < sim.n; s++)
				deleted_ok = deleted_ok && !gpuir_merge_too_many_deleted(&sim.seg[s]);
			dead = 0;
		}
		/* the size against a fresh build of the rows the index holds (bench/writes' N) */
		if (step > steps / 10)
		{
			const double r = model_ratio(&sim, sim_live(&sim) - sim.buf);

			ratio_max = (r > ratio_max) ? r : ratio_max;
			if (step > steps - steps / 3)
				ratio_sum += r;
		}
		if (step > steps - steps / 3)
			n_sum += sim.n;
	}
	avg = (double) n_sum / (double) (steps / 3);
	/* the final VACUUM (bench/writes' before it times the queries) */
	for (uint64_t d = 0; d < dead; d++)
		sim_delete(&sim, true);
	rounds = sim_vacuum(&sim);
	max_rounds = (rounds > max_rounds) ? rounds : max_rounds;
	for (uint32_t s = 0; s < sim.n; s++)
		deleted_ok = deleted_ok && !gpuir_merge_too_many_deleted(&sim.seg[s]);
	snprintf(what, sizeof(what),
			 "soak, cap %u%s: no segment at 15%% deleted after VACUUM's merges (at most %d rounds)",
			 cap, build_cap ? "" : " alone", max_rounds);
	check(deleted_ok, what);
	snprintf(what, sizeof(what),
			 "soak, cap %u%s: %.1f segments on average in the last third (at most %.1f; "
			 "%llu live documents need %llu at the cap, a fresh build has %llu)", cap,
			 build_cap ? "" : " alone", avg, max_avg, (unsigned long long) live,
			 (unsigned long long) ((live + cap - 1) / cap),
			 (unsigned long long) ((live + cap - 1) / cap < BUILD_PIECES ? (live + cap - 1) / cap : BUILD_PIECES));
	check(avg <= max_avg && sim.full_merges == 0, what);
	printf("merge policy: %s, %.2f rewrites a document inserted; modelled size against a fresh "
		   "build %.2fx at most after the first tenth, %.2fx on average in the last third; "
		   "after the final VACUUM %u segments, %llu of %llu documents deleted\n", what,
		   (double) sim.rewritten / (double) sim.inserted, ratio_max,
		   ratio_sum / (double) (steps / 3), sim.n, (unsigned long long) gpuir_merge_deleted(sim.seg, sim.n),
		   (unsigned long long) (sim_live(&sim) + gpuir_merge_deleted(sim.seg, sim.n)));
}

int
main(void)
{
	test_rules();
	/* inserts only, no VACUUM: the tiers (with the cascade, at most 7 segments a tier) */
	test_workload("inserts", 20000, 50, 1000, 0, 0, 0);
	/* inserts only, VACUUM (autovacuum's insert threshold) every 40 batches */
	test_workload("inserts, VACUUM", 20000, 50, 1000, 0, 40, 0);
	/* mixed load: 20% of the inserted documents deleted again, VACUUM every 40 batches */
	test_workload("mixed", 20000, 50, 1000, 200, 40, 0);
	/* the same under max_segment_docs = 66,000 (500,000 documents: 8-16 full segments) */
	test_workload("mixed, cap 66000", 10000, 50, 1000, 200, 40, 66000);
	/* a cap of an eighth of a 200,000-row table: 12-40 full segments (64-entry directory) */
	test_workload("mixed, cap 25000", 10000, 50, 1000, 200, 40, 25000);
	/* heavy deletes, a small buffer */
	test_workload("heavy deletes", 20000, 20, 200, 600, 10, 0);
	/*
	 * bench/writes' soak at the cap it runs with: 30.9 segments on average
	 * (32.5 before merges filled to the cap and cut full pieces; segments of
	 * 0.65 cap when C / 2 was full)
	 */
	test_soak(25000, false, 31.5);
	/*
	 * the same with merges at the build's cap once N > 16 cap
	 * (gpuir_merge_cap), as GpuirMerge: 26.0 segments on average in the last
	 * third, 19 after the final VACUUM (a fresh build: 16); the modelled
	 * size 1.13x a fresh build's on average there, against 1.25x at the cap
	 * alone
	 */
	test_soak(25000, true, 26.5);
	printf("merge policy: %d passed, %d failed\n", passed, failed);
	return failed > 0;
}
