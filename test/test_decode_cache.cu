/*-------------------------------------------------------------------------
 *
 * test_decode_cache.cu
 *	  The bookkeeping of the decoded lists a search job keeps between its
 *	  searches (cuda/gpuir_decode_cache.cuh: the ring of blocks, the keys,
 *	  the lists a batch pins), run on the host (no GPU needed: no area is
 *	  allocated, the blocks are simulated).
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
 *	- the two maps agree (every entry's key leads back to it), no two
 *	  entries overlap, and the blocks held are their sum;
 *	- a list asked for with BMW's arrays is not found when it was decoded
 *	  without them.
 * And: a list no larger than the area always gets room in a batch of one
 * list; a list larger than the area never does; a list found since it
 * was decoded gets a second chance (the ring goes past it and evicts the
 * next one), and is evicted when the ring comes round again.
 *
 * Prints "decode cache: N passed, N failed", exit 1 on failure.
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

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
	uint64_t	end = 0,
				held = 0;
	bool		ok = c->at.size() == c->where.size();

	for (const auto &e : c->at)
	{
		held += e.second.nblocks;
		auto		w = c->where.find(e.second.key);

		ok = ok && w != c->where.end() && w->second == e.first;
		ok = ok && e.first >= end && (uint64_t) e.first + e.second.nblocks <= c->cap;
		end = (uint64_t) e.first + e.second.nblocks;
	}
	check(ok && held == c->held, what);
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

		c.cap = cap;			/* no area (dev NULL): the blocks are simulated */
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

		c.cap = 10;
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
	printf("decode cache: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
