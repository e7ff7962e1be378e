/*-------------------------------------------------------------------------
 *
 * test_decode_cache.cu
 *	  The bookkeeping of the decoded lists a search job keeps between its
 *	  searches (cuda/gpuir_decode_cache.cuh: the ring of blocks, the keys,
 *	  the lists a batch pins, and dcache_plan, which places a batch's
 *	  lists), run on the host (no GPU needed: the area's allocations and
 *	  blocks are simulated).
 *
 * Random batches of lists (keys drawn from a small set, so that lists
 * repeat; 1 to a third of the area's blocks each) are planned as
 * plan_decode plans them: a list found is used where it is, one not found
 * is given room (dcache_add) and "decoded": the simulated area's blocks get
 * the list's number.  Checked after every batch and every step:
 *	- a list found holds, in every one of its blocks, its own number (no
 *	  later list was given those blocks);
 *	- the lists one batch uses never overlap (they are read at once);
 *	- a list given room lies inside the area;
 *	- the lists' slots, keys and blocks agree (every list's key leads back
 *	  to its slot, its first block's start bit is set and names it, no
 *	  other start bit is set), no two lists overlap, and the blocks held
 *	  are their sum;
 *	- a list asked for with BMW's arrays is not found when it was decoded
 *	  without them.
 * And: a list no larger than the area always gets room in a batch of one
 * list; a list larger than the area never does; a list found since it
 * was decoded gets a second chance (the ring goes past it and evicts the
 * next one), and is evicted when the ring comes round again; room behind
 * marks that a walk wraps over is found.
 *
 * dcache_plan (test_plan, after a simulation of its helper's review):
 * 180,000 random batches, their decode simulated on a shadow of the area;
 * every place inside the area, every term reading its own list's blocks,
 * every list kept intact, no term left to the tiles but by the budget and
 * key rules, failures only from allocations, an area that keeps lists
 * never grown past the reuse capacity; and an area whose growth failed
 * keeps its size as a ceiling.  The area's four arrays lie end to end in
 * its bytes.
 *
 * Prints "decode cache: N passed, N failed", exit 1 on failure.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include <cuda_runtime.h>

/*
 * The area's allocations are simulated (no GPU): an allocation fails when
 * larger than fake_limit bytes or, with fake_fail_pct, at random; a
 * returned area is a token address, never read
 */
static size_t fake_limit = SIZE_MAX;
static uint32_t fake_fail_pct = 0;
static uint32_t next_u32(uint32_t n);
static char fake_token[64];
static int	fake_allocs;

static cudaError_t
fake_malloc(void **p, size_t n)
{
	if (n > fake_limit || (fake_fail_pct > 0 && next_u32(100) < fake_fail_pct))
	{
		*p = NULL;
		return cudaErrorMemoryAllocation;
	}
	*p = fake_token + (++fake_allocs % 32);
	return cudaSuccess;
}

static cudaError_t
fake_free(void *p)
{
	(void) p;
	return cudaSuccess;
}
#define cudaMalloc(p, n) fake_malloc((void **) (p), (n))
#define cudaFree(p) fake_free(p)

#include "gpuir_decode_cache.cuh"
#include "test_util.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint32_t
next_u32(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t) (rng % n);
}

static GpuirDecodeKey
key_of(uint32_t list)
{
	GpuirDecodeKey k;

	memset(&k, 0, sizeof(k));
	k.seg = 1 + list % 3;
	k.first_block = list;
	return k;
}

/* the maps agree, entries lie in the area and do not overlap */
static void
check_maps(const GpuirDecodeCache *c, const char *what)
{
	std::vector<std::pair<uint32_t, uint32_t>> lists;	/* first, blocks */
	uint64_t	end = 0,
				held = 0;
	size_t		live = 0;
	bool		ok = true;

	for (uint32_t e = 0; e < c->entries.size(); e++)
	{
		const GpuirDecodeEntry &x = c->entries[e];
		auto		w = c->where.find(x.key);

		if (x.nblocks == 0)
			continue;
		live++;
		held += x.nblocks;
		ok = ok && w != c->where.end() && w->second == e &&
			(uint64_t) x.first + x.nblocks <= c->cap;
		ok = ok && (c->starts[x.first >> 6] >> (x.first & 63) & 1) && c->owner[x.first] == e;
		lists.push_back({x.first, x.nblocks});
	}
	std::sort(lists.begin(), lists.end());
	for (const auto &l : lists)
	{
		ok = ok && l.first >= end;
		end = (uint64_t) l.first + l.second;
	}
	ok = ok && live == c->where.size() && live + c->free_slots.size() == c->entries.size();
	{
		/* no start bit but the lists' (each list's is set: checked above) */
		size_t		bits = 0;

		for (uint32_t w = 0; w < (c->cap + 63) / 64; w++)
			bits += (size_t) __builtin_popcountll(c->starts[w]);
		ok = ok && bits == live;
	}
	check(ok && held == c->held, what);
}

/* ---------- dcache_plan over simulated batches ---------- */

/* the simulated area: which list (key number) each block holds, with BMW's arrays or not */
struct Shadow
{
	const void *dev = NULL;
	uint32_t	cap = 0;
	std::vector<int64_t> id;
	std::vector<char> bmw;
};

static std::unordered_map<GpuirDecodeKey, int64_t, GpuirDecodeKeyHash, GpuirDecodeKeyEq> key_ids;

static int64_t
key_id(const GpuirDecodeKey &k)
{
	auto		it = key_ids.find(k);
	int64_t		n = (int64_t) key_ids.size();

	if (it != key_ids.end())
		return it->second;
	key_ids[k] = n;
	return n;
}

/* a query of the simulated batch: its mode and terms[first, first + n) */
struct SimQuery
{
	int			mode;
	uint32_t	first;
	uint32_t	n;
};

/*
 * plan_terms_left: the OR and BMW terms that the plan must leave to the
 * tiles, whatever the area: past the budget, or naming a list the batch
 * took under another key (dcache_plan's rules without the area)
 */
static uint64_t
plan_terms_left(const std::vector<uint32_t> &seq, const std::vector<gpuir_cuda_term> &terms,
				const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc, uint32_t budget)
{
	std::unordered_map<uint32_t, GpuirDecodeKey> taken;
	uint64_t	used = 0,
				left = 0;

	for (uint32_t j : seq)
	{
		const gpuir_cuda_term *t = &terms[j];
		GpuirDecodeKey k;

		if (t->nblocks == 0)
			continue;
		k = dcache_key(seg, sc, t);
		if (taken.count(t->first_block) > 0)
		{
			left += !GpuirDecodeKeyEq()(taken[t->first_block], k);
			continue;
		}
		if (t->nblocks > budget - used)
		{
			left++;
			continue;
		}
		used += t->nblocks;
		taken.emplace(t->first_block, k);
	}
	return left;
}

/*
 * plan_one: dcache_plan of one simulated batch, its decode simulated
 * (the shadow's blocks get the decoded lists' key numbers), then checked:
 * every place inside the area, every term reading its own key's blocks
 * (with BMW's arrays when the batch has BMW queries), every entry of the
 * area holding its key's blocks, no more terms left to the tiles than
 * the budget and the key rule leave, and an area grown to keep lists no
 * larger than the reuse capacity.  Returns false for an allocation
 * failure (the plan's OOM).
 */
static bool
plan_one(GpuirDecodeCache *c, Shadow *sh, const gpuir_cuda_segment *seg,
		 const gpuir_cuda_scoring *sc, const std::vector<SimQuery> &qs,
		 const std::vector<gpuir_cuda_term> &terms, uint32_t budget, uint32_t cache_blocks,
		 long batch)
{
	const uint32_t nterms = (uint32_t) terms.size();
	std::vector<uint32_t> seq,
				dec_off(nterms + 1),
				list_term(nterms + 1),
				list_first(nterms + 2),
				list_dst(nterms + 1);
	GpuirDecodeOut out = {dec_off.data(), list_term.data(), list_first.data(), list_dst.data(), 0, 0};
	uint64_t	found;
	bool		bmw = false,
				ok = true;
	uint64_t	left = 0;
	gpuir_cuda_status st;
	char		what[200];

	for (const SimQuery &q : qs)
		if (q.mode != 0)		/* 0: AND */
		{
			bmw = bmw || q.mode == 2;
			for (uint32_t j = q.first; j < q.first + q.n; j++)
				seq.push_back(j);
		}
	if (seq.empty())
		return true;
	st = dcache_plan(c, seg, sc, terms.data(), nterms, seq.data(), (uint32_t) seq.size(), bmw,
					 budget, cache_blocks, &out, &found);
	if (st != GPUIR_CUDA_OK)
	{
		snprintf(what, sizeof(what), "plan %ld: a failure is an allocation's (%d)", batch, (int) st);
		check(st == GPUIR_CUDA_OOM && c->dev == NULL && c->cap == 0, what);
		dcache_clear(c);		/* as search_start does */
		return false;
	}
	if (c->dev != sh->dev || c->cap != sh->cap)
	{
		/* an area grown to keep lists (held) stays within the reuse capacity */
		snprintf(what, sizeof(what), "plan %ld: an area of %u blocks keeping %llu, capacity %u",
				 batch, c->cap, (unsigned long long) c->held, cache_blocks);
		check(c->held == 0 || c->cap <= cache_blocks, what);
		sh->dev = c->dev;
		sh->cap = c->cap;
		sh->id.assign(c->cap, -1);
		sh->bmw.assign(c->cap, 0);
	}
	/* the decode kernel */
	for (uint32_t l = 0; l < out.nlists; l++)
	{
		const gpuir_cuda_term *t = &terms[list_term[l]];
		const int64_t id = key_id(dcache_key(seg, sc, t));

		ok = ok && list_first[l + 1] - list_first[l] == t->nblocks &&
			(uint64_t) list_dst[l] + t->nblocks <= c->cap;
		for (uint32_t i = 0; ok && i < t->nblocks; i++)
		{
			sh->id[list_dst[l] + i] = id;
			sh->bmw[list_dst[l] + i] = bmw;
		}
	}
	snprintf(what, sizeof(what), "plan %ld: every list decoded inside the area of %u blocks",
			 batch, c->cap);
	check(ok, what);
	if (!ok)
		return true;
	/* the tiles' reads */
	for (uint32_t j = 0; j < nterms; j++)
	{
		const gpuir_cuda_term *t = &terms[j];
		int64_t		id;

		if (dec_off[j] == GPUIR_NOT_DECODED)
			continue;
		id = key_id(dcache_key(seg, sc, t));
		ok = ok && (uint64_t) dec_off[j] + t->nblocks <= c->cap;
		for (uint32_t i = 0; ok && i < t->nblocks; i++)
			ok = sh->id[dec_off[j] + i] == id && (!bmw || sh->bmw[dec_off[j] + i]);
	}
	snprintf(what, sizeof(what), "plan %ld: every term reads its own list", batch);
	check(ok, what);
	/* the lists kept */
	for (const GpuirDecodeEntry &x : c->entries)
	{
		const int64_t id = key_id(x.key);

		for (uint32_t i = 0; ok && i < x.nblocks; i++)
			ok = sh->id[x.first + i] == id && (!x.bmw || sh->bmw[x.first + i]);
	}
	snprintf(what, sizeof(what), "plan %ld: every list kept holds its blocks", batch);
	check(ok, what);
	for (uint32_t j : seq)
		left += terms[j].nblocks > 0 && dec_off[j] == GPUIR_NOT_DECODED;
	snprintf(what, sizeof(what), "plan %ld: %llu terms left to the tiles, the rules leave %llu",
			 batch, (unsigned long long) left,
			 (unsigned long long) plan_terms_left(seq, terms, seg, sc, budget));
	check(left == plan_terms_left(seq, terms, seg, sc, budget), what);
	return true;
}

/*
 * test_plan: jobs of 60 random batches each over a segment of up to 50
 * lists of up to 1, 6, 20 or 100 blocks: queries of AND, OR and BMW, terms
 * repeated, some with another idf, absent ones, some naming a prefix of a
 * list (another block count, the same first block); budgets from 1 block
 * to the default, reuse capacities from none to the default, changing
 * within a job, as do the segment's upload number and k1; in a third of
 * the jobs allocations fail at random.  Also: a job whose larger area
 * cannot be had keeps its smaller one as a ceiling (allocations stop
 * failing every batch).
 */
static void
test_plan(void)
{
	const uint32_t budgets[] = {1, 3, 7, 26, 40, 100, GPUIR_CUDA_DECODE_BUDGET};
	const uint32_t caches[] = {0, 1, 5, 40, 100, 300, GPUIR_CUDA_DECODE_BUDGET};
	const uint32_t maxnb[] = {1, 6, 20, 100};
	long		batches = 0,
				ooms = 0;

	for (int job = 0; job < 3000; job++)
	{
		GpuirDecodeCache c;
		Shadow		sh;
		std::vector<uint32_t> lfirst,
					lblocks;
		std::vector<float> lidf;
		const uint32_t nlists = 1 + next_u32(50);
		const uint32_t mx = maxnb[next_u32(4)];
		uint32_t	fb = 0,
					budget = budgets[next_u32(7)],
					cache_blocks = caches[next_u32(7)];
		gpuir_cuda_segment seg;
		gpuir_cuda_scoring sc = {1.2f, 0.75f, 400.0f, 0.0f};

		memset(&seg, 0, sizeof(seg));
		seg.decode_id = 1;
		for (uint32_t l = 0; l < nlists; l++)
		{
			const uint32_t nb = 1 + next_u32(mx);

			lfirst.push_back(fb);
			lblocks.push_back(nb);
			lidf.push_back(0.5f + (float) next_u32(100) / 10.0f);
			fb += nb;
		}
		fake_fail_pct = (next_u32(3) == 0) ? 30 : 0;
		for (long b = 0; b < 60; b++)
		{
			std::vector<SimQuery> qs;
			std::vector<gpuir_cuda_term> terms;
			const uint32_t nq = 1 + next_u32(next_u32(4) == 0 ? 40 : 5);

			if (next_u32(10) == 0)
				budget = budgets[next_u32(7)];
			if (next_u32(10) == 0)
				cache_blocks = caches[next_u32(7)];
			if (next_u32(20) == 0)
				seg.decode_id = next_u32(4);
			if (next_u32(20) == 0)
				sc.k1 = 1.0f + (float) next_u32(3) * 0.25f;
			for (uint32_t q = 0; q < nq; q++)
			{
				const uint32_t m = next_u32(10);
				SimQuery	sq = {m < 2 ? 0 : (m < 5 ? 2 : 1), (uint32_t) terms.size(), 1 + next_u32(6)};

				for (uint32_t j = 0; j < sq.n; j++)
				{
					const uint32_t l = next_u32(1 + next_u32(nlists));
					gpuir_cuda_term t = {lfirst[l], lblocks[l], lblocks[l] * 128, lidf[l]};

					if (next_u32(30) == 0)
						t.idf *= 1.25f;
					if (next_u32(40) == 0)
						t = {0, 0, 0, 1.5f};
					if (t.nblocks > 1 && next_u32(10) == 0)
					{
						t.nblocks = 1 + next_u32(t.nblocks);	/* a prefix */
						t.npostings = t.nblocks * 128;
					}
					terms.push_back(t);
				}
				qs.push_back(sq);
			}
			batches++;
			ooms += !plan_one(&c, &sh, &seg, &sc, qs, terms, budget, cache_blocks,
							  (long) job * 60 + b);
		}
		(void) dcache_release(&c);
	}
	printf("decode cache: dcache_plan over %ld simulated batches (%ld failed allocations)\n",
		   batches, ooms);

	/* a ceiling: the larger area fails once, the job stays at the smaller */
	{
		GpuirDecodeCache c;
		Shadow		sh;
		gpuir_cuda_segment seg;
		gpuir_cuda_scoring sc = {1.2f, 0.75f, 400.0f, 0.0f};
		std::vector<gpuir_cuda_term> terms;
		std::vector<SimQuery> qs;
		int			allocs;

		memset(&seg, 0, sizeof(seg));
		seg.decode_id = 7;
		fake_fail_pct = 0;
		fake_limit = (size_t) 100000 * GPUIR_CUDA_DECODED_BLOCK_BYTES;	/* the minimum, 65536, fits */
		for (uint32_t l = 0; l < 4; l++)
			terms.push_back({l * 30000, 30000, 30000 * 128, 2.0f});
		qs.push_back({1, 0, 2});	/* lists 0 and 1: 60,000 blocks */
		plan_one(&c, &sh, &seg, &sc, qs, terms, GPUIR_CUDA_DECODE_BUDGET, GPUIR_CUDA_DECODE_BUDGET, -1);
		check(c.cap == 65536, "ceiling: the first area is the smallest one");
		qs[0] = {1, 2, 2};		/* lists 2 and 3: growth wanted, 98,304 fails, 60,000 given */
		plan_one(&c, &sh, &seg, &sc, qs, terms, GPUIR_CUDA_DECODE_BUDGET, GPUIR_CUDA_DECODE_BUDGET, -2);
		check(c.ceiling == c.cap && c.cap < 98304, "ceiling: the area that could be had");
		allocs = fake_allocs;
		qs[0] = {1, 0, 2};
		plan_one(&c, &sh, &seg, &sc, qs, terms, GPUIR_CUDA_DECODE_BUDGET, GPUIR_CUDA_DECODE_BUDGET, -3);
		check(fake_allocs == allocs, "ceiling: no allocation for the next batch");
		fake_limit = SIZE_MAX;
		(void) dcache_release(&c);
	}
}

int
main(void)
{
	const uint32_t caps[] = {1, 7, 40, 300};
	char		what[200];

	for (uint32_t ci = 0; ci < sizeof(caps) / sizeof(caps[0]); ci++)
	{
		const uint32_t cap = caps[ci];
		const uint32_t nkeys = 24;
		GpuirDecodeCache c;
		std::vector<int64_t> area(cap, -1);	/* the list each block holds */
		std::vector<uint32_t> size(nkeys);
		std::vector<bool> bmw_of(nkeys, false);
		uint64_t	found = 0,
					given = 0,
					refused = 0;

		dcache_set_cap(&c, cap);	/* no area (dev NULL): the blocks are simulated */
		for (uint32_t k = 0; k < nkeys; k++)
			size[k] = 1 + next_u32(cap / 3 + 1);
		for (int batch = 0; batch < 4000; batch++)
		{
			const uint32_t nlists = 1 + next_u32(5);
			const bool	bmw = next_u32(4) == 0;
			std::vector<std::pair<uint32_t, uint32_t>> used;	/* first, blocks */

			if (next_u32(50) == 0)
				dcache_clear(&c);
			c.batch++;
			for (uint32_t i = 0; i < nlists; i++)
			{
				const uint32_t list = next_u32(nkeys);
				const GpuirDecodeKey key = key_of(list);
				const bool	taken = [&]() {
					for (const auto &u : used)
						if (area[u.first] == (int64_t) list)
							return true;
					return false;
				}();
				uint32_t	at;

				if (taken)
					continue;	/* plan_decode takes a list once a batch */
				at = dcache_find(&c, key, bmw);
				if (at != UINT32_MAX)
				{
					bool		intact = true;

					for (uint32_t j = 0; j < size[list]; j++)
						intact = intact && at + j < cap && area[at + j] == (int64_t) list;
					snprintf(what, sizeof(what), "cap %u, batch %d: list %u found at %u intact",
							 cap, batch, list, at);
					check(intact, what);
					snprintf(what, sizeof(what), "cap %u, batch %d: list %u found with BMW's arrays",
							 cap, batch, list);
					check(!bmw || bmw_of[list], what);
					found++;
				}
				else
				{
					at = dcache_add(&c, key, size[list], bmw);
					if (at == UINT32_MAX)
					{
						refused++;
						continue;	/* its tiles decode it */
					}
					snprintf(what, sizeof(what), "cap %u, batch %d: list %u given [%u, %u)",
							 cap, batch, list, at, at + size[list]);
					check((uint64_t) at + size[list] <= cap, what);
					for (uint32_t j = 0; j < size[list] && at + j < cap; j++)
						area[at + j] = list;
					bmw_of[list] = bmw;
					given++;
				}
				for (const auto &u : used)
				{
					snprintf(what, sizeof(what),
							 "cap %u, batch %d: list %u at [%u, %u) overlaps [%u, %u) of the same batch",
							 cap, batch, list, at, at + size[list], u.first, u.first + u.second);
					check(at + size[list] <= u.first || u.first + u.second <= at, what);
				}
				used.push_back({at, size[list]});
			}
			/* every list the batch used is still where it was given */
			for (const auto &u : used)
			{
				const int64_t list = area[u.first];
				bool		intact = list >= 0 && size[list] == u.second;

				for (uint32_t j = 0; intact && j < u.second; j++)
					intact = area[u.first + j] == list;
				snprintf(what, sizeof(what), "cap %u, batch %d: the batch's list at %u intact",
						 cap, batch, u.first);
				check(intact, what);
			}
			snprintf(what, sizeof(what), "cap %u, batch %d: maps agree", cap, batch);
			check_maps(&c, what);
		}
		printf("decode cache: area of %u blocks: %llu lists found, %llu decoded, %llu left to the tiles\n",
			   cap, (unsigned long long) found, (unsigned long long) given,
			   (unsigned long long) refused);
		snprintf(what, sizeof(what), "cap %u: lists found and decoded", cap);
		check(found > 0 && given > 0 && c.hits == found && c.misses == given, what);

		/* one list alone: room when it fits the area, none when it does not */
		c.batch++;
		snprintf(what, sizeof(what), "cap %u: a list of the area's size gets room", cap);
		check(dcache_add(&c, key_of(1000), cap, false) == 0, what);
		c.batch++;
		snprintf(what, sizeof(what), "cap %u: a list larger than the area gets none", cap);
		check(dcache_add(&c, key_of(1001), cap + 1, false) == UINT32_MAX, what);
		snprintf(what, sizeof(what), "cap %u: after both", cap);
		check_maps(&c, what);
	}
	{
		/* the second chance: A, B, C of 3 blocks in 10; A found; D evicts B, not A */
		GpuirDecodeCache c;

		dcache_set_cap(&c, 10);
		for (uint32_t l = 0; l < 3; l++)
		{
			c.batch++;
			check(dcache_add(&c, key_of(l), 3, false) == 3 * l, "second chance: A, B, C placed");
		}
		c.batch++;
		check(dcache_find(&c, key_of(0), false) == 0, "second chance: A found");
		c.batch++;
		check(dcache_add(&c, key_of(3), 3, false) == 3, "second chance: D takes B's blocks");
		c.batch++;
		check(dcache_find(&c, key_of(1), false) == UINT32_MAX, "second chance: B evicted");
		check(dcache_find(&c, key_of(2), false) == 6, "second chance: C kept");
		c.batch++;
		/* C found again (referenced), A's mark cleared: E goes past C, wraps, takes A's */
		check(dcache_add(&c, key_of(4), 3, false) == 0, "second chance: E takes A's blocks");
		check(dcache_find(&c, key_of(0), false) == UINT32_MAX, "second chance: A evicted after its chance");
		check_maps(&c, "second chance: maps agree");
	}
	{
		/*
		 * room behind marks a walk wraps over (found by a helper's
		 * exhaustive search over areas of up to 9 blocks): 7 blocks, 0 and
		 * 1 free, 2 and 3 pinned by the batch, 4, 5 and 6 found by an
		 * earlier batch (marked), the ring at 2: 3 blocks fit at 4 once the
		 * marks are cleared
		 */
		GpuirDecodeCache c;

		dcache_set_cap(&c, 7);
		c.batch++;
		for (uint32_t l = 0; l < 7; l++)
			check(dcache_add(&c, key_of(10 + l), 1, false) == l, "room behind marks: seven lists");
		c.batch++;
		for (uint32_t l = 4; l < 7; l++)
			check(dcache_find(&c, key_of(10 + l), false) == l, "room behind marks: 4-6 found");
		c.batch++;
		check(dcache_find(&c, key_of(10), true) == UINT32_MAX &&
			  dcache_find(&c, key_of(11), true) == UINT32_MAX, "room behind marks: 0 and 1 dropped");
		check(dcache_find(&c, key_of(12), false) == 2 && dcache_find(&c, key_of(13), false) == 3,
			  "room behind marks: 2 and 3 pinned");
		c.head = 2;
		check(dcache_add(&c, key_of(20), 3, false) == 4, "room behind marks: 3 blocks at 4");
		check_maps(&c, "room behind marks: maps agree");
	}
	{
		/* dcache_plan's tables of first blocks: growth, a new generation, its wrap */
		GpuirFirstBlocks fb;
		bool		ok = true;

		fb.reset(3);
		for (uint32_t i = 0; i < 3; i++)
			ok = ok && fb.insert(i * 4096, i) && !fb.insert(i * 4096, 99);
		ok = ok && fb.find(4096) != NULL && *fb.find(4096) == 1 && fb.find(1) == NULL;
		fb.reset(1000);			/* grown: empty */
		ok = ok && fb.slots.size() >= 2000 && fb.find(4096) == NULL;
		for (uint32_t i = 0; i < 1000; i++)
			ok = ok && fb.insert(i * 7 + 1, i);
		for (uint32_t i = 0; i < 1000; i++)
			ok = ok && fb.find(i * 7 + 1) != NULL && *fb.find(i * 7 + 1) == i;
		/* the next generation wraps to 1, the one the lists above were inserted in */
		fb.gen = UINT32_MAX;
		fb.reset(1000);
		ok = ok && fb.gen == 1 && fb.find(1) == NULL && fb.find(8) == NULL && fb.insert(8, 5) &&
			*fb.find(8) == 5;
		/* a plain new generation (no growth, no wrap) forgets the last one's lists */
		fb.reset(3);
		ok = ok && fb.gen == 2 && fb.find(8) == NULL && fb.insert(8, 6) && *fb.find(8) == 6;
		check(ok, "first-block tables: insert, find, growth, generations and their wrap");
	}
	test_plan();

	/* the area's arrays (dcache_arrays): in order, end to end, inside its bytes */
	for (uint32_t cap : {1u, 40u, 65536u, (uint32_t) GPUIR_CUDA_DECODE_BUDGET})
	{
		GpuirDecodeCache c;
		GpuirDecodeArrays a;
		const size_t bytes = (size_t) cap * GPUIR_CUDA_DECODED_BLOCK_BYTES;

		a = dcache_arrays(&c);
		check(a.doc == NULL && a.score == NULL && a.ub == NULL && a.top == NULL,
			  "arrays: none without an area");
		c.dev = (uint8_t *) (uintptr_t) 0x10000;	/* a token address, never read */
		c.cap = cap;
		a = dcache_arrays(&c);
		snprintf(what, sizeof(what), "arrays of an area of %u blocks: docIDs, contributions, "
				 "bounds, seeds end to end in its %zu bytes", cap, bytes);
		check((uint8_t *) a.doc == c.dev &&
			  (uint8_t *) a.score == (uint8_t *) (a.doc + (size_t) cap * GPUIR_CUDA_BLOCK_SIZE / 4) &&
			  (uint8_t *) a.ub == (uint8_t *) (a.score + (size_t) cap * GPUIR_CUDA_BLOCK_SIZE / 4) &&
			  a.top == a.ub + cap && (uint8_t *) (a.top + cap) == c.dev + bytes, what);
		c.dev = NULL;
		c.cap = 0;
	}
	printf("decode cache: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
