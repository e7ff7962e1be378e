/*-------------------------------------------------------------------------
 *
 * gpuir_decode_cache.cuh
 *	  The decoded lists a search job keeps between its searches (host side
 *	  of gpuir_search.cu; the decode kernel writes them, the tile, seed and
 *	  MaxScore kernels read them as GpuirDecoded).
 *
 * A batch's OR and BMW lists are decoded once into an area of the device
 * (gpuir_search_decode_kernel: per posting its docID and BM25 contribution,
 * per block BMW's bound and seed).  Those arrays depend only on the
 * segment's arrays, its docID window, the list (its first block, block and
 * posting counts), the term's idf and the scoring constants, all of which
 * are fixed for a search; the lists of a query log repeat (its frequent
 * terms are in most queries, and they hold most of its postings: list
 * caching, Baeza-Yates et al., "The impact of caching on search engines",
 * SIGIR 2007, section 5).  So the area is kept by the job, and a list
 * found there under the same key is not decoded again.  For the 40 M
 * document generated log of bench/engine_bench, decoding was 40% of one
 * query's device time (bench/results/2026-11-30-h200-stage-times.md).
 *
 * Keys.  A segment upload gets a number of its own
 * (gpuir_cuda_segment.decode_id, never reused in the process; 0, as in an
 * assembled segment of lists in transit, takes no part): a freed segment's
 * lists can never match, and a segment's device arrays never change once
 * uploaded.  The key also holds the window, the list, and the bits of idf,
 * k1, b, avgdl and the prior weight, so a change of the index's statistics
 * (idf, avgdl) misses.  A list decoded without BMW's bounds (a batch
 * without BMW queries) misses for a batch that needs them.
 *
 * Room.  The area holds cap blocks; a list takes consecutive blocks, given
 * out round a ring with a second chance (CLOCK; Corbato 1968, as in
 * operating systems' page replacement): a new list takes the blocks after
 * the last one given, evicting the lists there, but goes past those the
 * batch being planned uses (pinned: batch == the current batch) and
 * those found since they were decoded or last passed (referenced), whose
 * mark it clears: a list that later searches keep finding stays, where a
 * plain ring (FIFO) evicted the frequent lists as often as the rare ones
 * (the generated log one query at a time: 19% of its lists found with
 * FIFO).  When a list finds no room (the lists the batch found lie across
 * the ring), dcache_plan empties the area and plans the batch again from
 * block 0, keeping its lists.  The area grows rather than evict, by half
 * at least, to hold the lists kept and those a new batch does not find (up
 * to the capacity set by gpuir_cuda_search_set_decode_cache, and below the
 * size at which an allocation once failed; past it only for a batch whose
 * own lists need more, up to the decode budget, which then plans without
 * reuse), by a new allocation, which drops every list: a few times
 * in a job's life.  A search that fails (a corrupt block, a launch or copy
 * error) drops every list too: its decode may not have written them.
 *
 * The job's stream orders everything: a search's decode writes before its
 * kernels read, and a later search's decode overwrites an evicted list
 * only after the earlier search has finished (a job runs one search at a
 * time; gpuir_cuda_search_batch is synchronous).  Jobs do not share lists.
 *
 * Layout of the device area of cap blocks: docIDs [cap * 32] uint4, then
 * contributions [cap * 32] float4, bounds [cap] float, seeds [cap] float
 * (GpuirDecoded).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_DECODE_CACHE_CUH
#define GPUIR_DECODE_CACHE_CUH

#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gpuir_cuda_internal.cuh"

/* the smallest area allocated, in blocks (64 MiB) */
#define GPUIR_DECODED_MIN_BLOCKS	((uint32_t) 1 << 16)

/* what a decoded list's arrays depend on (no padding: compared as bytes) */
struct GpuirDecodeKey
{
	uint64_t	seg;			/* gpuir_cuda_segment.decode_id */
	uint32_t	windowed;
	uint32_t	tile_first;
	uint32_t	tile_end;
	uint32_t	first_block;
	uint32_t	nblocks;
	uint32_t	npostings;
	uint32_t	idf;			/* float bits, as the next four */
	uint32_t	k1;
	uint32_t	b;
	uint32_t	avgdl;
	uint32_t	prior_weight;
	uint32_t	zero;			/* 0: the struct's size a multiple of 8 */
};
static_assert(sizeof(GpuirDecodeKey) == 56, "GpuirDecodeKey: 7 words, no padding");

/* the key's seven 64-bit words, each mixed in (multiply and xor-shift) */
struct GpuirDecodeKeyHash
{
	size_t operator()(const GpuirDecodeKey &k) const
	{
		uint64_t	w[sizeof(GpuirDecodeKey) / 8];
		uint64_t	h = 0x9E3779B97F4A7C15ull;

		memcpy(w, &k, sizeof(w));
		for (size_t i = 0; i < sizeof(w) / 8; i++)
		{
			h = (h ^ w[i]) * 0xBF58476D1CE4E5B9ull;
			h ^= h >> 31;
		}
		return (size_t) h;
	}
};

struct GpuirDecodeKeyEq
{
	bool operator()(const GpuirDecodeKey &a, const GpuirDecodeKey &b) const
	{
		return memcmp(&a, &b, sizeof(a)) == 0;
	}
};

/*
 * A set of lists of one batch, known by their first blocks, with a value
 * each: open addressing (Fibonacci hashing, linear probing) in slots kept
 * from batch to batch, emptied in O(1) by a new generation.  dcache_plan's
 * three of them cost no allocation once grown: with std::unordered_set and
 * _map (a node allocated a list) and each key computed twice, a batch of
 * 16 queries planned in 7.7 us, 4.1 us without (2026-11-30).
 */
struct GpuirFirstBlocks
{
	struct Slot
	{
		uint32_t	gen;		/* == gen: taken in this generation */
		uint32_t	first_block;
		uint32_t	value;
	};
	std::vector<Slot> slots;	/* a power of two */
	uint32_t	gen = 0;
	uint32_t	shift = 32;		/* 32 - log2(slots) */

	/* reset: empty, with room for n lists (at most half the slots taken) */
	void reset(size_t n)
	{
		size_t		want = 16;
		uint32_t	bits = 4;

		while (want < 2 * n)
		{
			want <<= 1;
			bits++;
		}
		if (want > slots.size())
		{
			slots.assign(want, Slot{0, 0, 0});
			gen = 0;
			shift = 32 - bits;
		}
		if (++gen == 0)
		{
			std::fill(slots.begin(), slots.end(), Slot{0, 0, 0});
			gen = 1;
		}
	}

	/* find: the value of the list at first_block, NULL when absent */
	uint32_t   *find(uint32_t first_block)
	{
		const size_t mask = slots.size() - 1;

		for (size_t i = (first_block * 2654435769u) >> shift;; i = (i + 1) & mask)
		{
			if (slots[i].gen != gen)
				return NULL;
			if (slots[i].first_block == first_block)
				return &slots[i].value;
		}
	}

	/* insert: add the list at first_block with value; false when present (unchanged) */
	bool		insert(uint32_t first_block, uint32_t value)
	{
		const size_t mask = slots.size() - 1;

		for (size_t i = (first_block * 2654435769u) >> shift;; i = (i + 1) & mask)
		{
			if (slots[i].gen != gen)
			{
				slots[i] = Slot{gen, first_block, value};
				return true;
			}
			if (slots[i].first_block == first_block)
				return false;
		}
	}
};

/* a list in the area */
struct GpuirDecodeEntry
{
	uint32_t	first;			/* its first block in the area */
	uint32_t	nblocks;		/* 0: a free slot */
	bool		bmw;			/* its bounds and seeds were computed */
	bool		referenced;		/* found since decoded or last passed */
	uint64_t	batch;			/* the last batch that used it */
	GpuirDecodeKey key;
};

struct GpuirDecodeCache
{
	uint8_t    *dev = nullptr;	/* the area, cap blocks (layout above) */
	uint32_t	cap = 0;
	uint32_t	head = 0;		/* the ring's next block */
	uint64_t	held = 0;		/* blocks of the lists in it */
	uint64_t	batch = 0;		/* the batch being planned */
	uint32_t	ceiling = UINT32_MAX;	/* blocks: the area an allocation could
										 * not exceed (a larger one failed) */
	/*
	 * the lists: entries (slots, reused), a bit for each block where a
	 * list starts (starts) and that list's slot there (owner, read only
	 * at such a block), the slot of each key in where.  Flat arrays, so
	 * that the ring's walks read words of bits in order rather than chase
	 * a tree's nodes (a std::map of 15,000 lists made a batch of 1000
	 * real-log queries plan in 4-8 ms) or every block of a long list
	 */
	std::vector<GpuirDecodeEntry> entries;
	std::vector<uint32_t> free_slots;
	std::vector<uint64_t> starts;	/* [(cap + 63) / 64] */
	std::vector<uint32_t> owner;	/* [cap] */
	std::unordered_map<GpuirDecodeKey, uint32_t, GpuirDecodeKeyHash, GpuirDecodeKeyEq> where;
	/*
	 * dcache_plan's scratch, kept so that a batch does not allocate it
	 * again (where above takes a node for each list newly decoded): each
	 * term's key (seq's order), the lists seen and taken by its first pass,
	 * and those placed (first block -> index into placed: term, place)
	 */
	std::vector<GpuirDecodeKey> plan_keys;
	GpuirFirstBlocks plan_listed;
	GpuirFirstBlocks plan_taken;
	GpuirFirstBlocks plan_lists;
	std::vector<std::pair<uint32_t, uint32_t>> plan_placed;
	/* lists found and given room since the job's creation (dcache_plan's found, tests) */
	uint64_t	hits = 0;
	uint64_t	misses = 0;
};

/* the area's arrays (layout above) */
struct GpuirDecodeArrays
{
	uint4	   *doc;			/* [cap * 32]: 128 docIDs a block */
	float4	   *score;			/* [cap * 32]: their BM25 contributions */
	float	   *ub;				/* [cap]: BMW's block bounds */
	float	   *top;			/* [cap]: BMW's block seeds */
};

/* dcache_arrays: the arrays of c's area (every one NULL when it has none) */
static inline GpuirDecodeArrays
dcache_arrays(const GpuirDecodeCache *c)
{
	GpuirDecodeArrays a = {NULL, NULL, NULL, NULL};

	if (c->dev != NULL)
	{
		const size_t cap = c->cap;

		a.doc = (uint4 *) c->dev;
		a.score = (float4 *) (c->dev + cap * GPUIR_CUDA_BLOCK_SIZE * 4);
		a.ub = (float *) (c->dev + cap * GPUIR_CUDA_BLOCK_SIZE * 8);
		a.top = a.ub + cap;
	}
	return a;
}

/* dcache_key: the key of term t's list in a search of seg with sc */
static inline GpuirDecodeKey
dcache_key(const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc, const gpuir_cuda_term *t)
{
	GpuirDecodeKey k;

	memset(&k, 0, sizeof(k));
	k.seg = seg->decode_id;
	k.windowed = seg->windowed;
	k.tile_first = seg->windowed ? seg->tile_first : 0;
	k.tile_end = seg->windowed ? seg->tile_end : 0;
	k.first_block = t->first_block;
	k.nblocks = t->nblocks;
	k.npostings = t->npostings;
	memcpy(&k.idf, &t->idf, 4);
	memcpy(&k.k1, &sc->k1, 4);
	memcpy(&k.b, &sc->b, 4);
	memcpy(&k.avgdl, &sc->avgdl, 4);
	memcpy(&k.prior_weight, &sc->prior_weight, 4);
	return k;
}

/* dcache_clear: drop every list (the area stays) */
static inline void
dcache_clear(GpuirDecodeCache *c)
{
	c->entries.clear();
	c->free_slots.clear();
	c->where.clear();
	std::fill(c->starts.begin(), c->starts.end(), 0);
	c->head = 0;
	c->held = 0;
}

/* dcache_next_start: the first block in [b, lim) where a list starts, or lim */
static inline uint32_t
dcache_next_start(const GpuirDecodeCache *c, uint32_t b, uint32_t lim)
{
	while (b < lim)
	{
		const uint64_t w = c->starts[b >> 6] >> (b & 63);

		if (w != 0)
			return std::min(lim, b + (uint32_t) __builtin_ctzll(w));
		b = (b | 63) + 1;
	}
	return lim;
}

/* dcache_drop: free slot e (its list leaves the area) */
static inline void
dcache_drop(GpuirDecodeCache *c, uint32_t e)
{
	GpuirDecodeEntry &x = c->entries[e];

	c->held -= x.nblocks;
	c->where.erase(x.key);
	c->starts[x.first >> 6] &= ~((uint64_t) 1 << (x.first & 63));
	x.nblocks = 0;
	c->free_slots.push_back(e);
}

/*
 * dcache_set_cap: the area's size in blocks (owner sized to it, every
 * list dropped); dcache_reserve's, and the host test's with no area
 */
static inline void
dcache_set_cap(GpuirDecodeCache *c, uint32_t cap)
{
	c->cap = 0;
	c->owner.assign(cap, UINT32_MAX);	/* (may throw: cap stays 0) */
	c->starts.assign(((size_t) cap + 63) / 64, 0);
	dcache_clear(c);
	c->cap = cap;
}

/*
 * dcache_reserve: make the area hold want blocks, or at least need (<=
 * want) when want cannot be had (need then becomes the ceiling): when it
 * holds fewer than want, free it and allocate (every list dropped).  No search of the job may be
 * running.  On failure the area is freed (cap 0).
 */
static inline gpuir_cuda_status
dcache_reserve(GpuirDecodeCache *c, uint32_t want, uint32_t need)
{
	gpuir_cuda_status st = GPUIR_CUDA_OK;

	want = std::max(want, need);
	if (c->dev != NULL && want <= c->cap)
		return GPUIR_CUDA_OK;
	dcache_clear(c);
	gpuir_cuda_ignore_error(gpuir_cuda_free(c->dev, GPUIR_CUDA_MEM_DEVICE));
	c->dev = NULL;
	c->cap = 0;
	for (uint32_t n : {want, need})
	{
		if (n == 0)
			continue;
		st = gpuir_cuda_check(cudaMalloc((void **) &c->dev, (size_t) n * GPUIR_CUDA_DECODED_BLOCK_BYTES));
		if (st == GPUIR_CUDA_OK)
		{
			dcache_set_cap(c, n);
			if (n < want)
				c->ceiling = n;	/* want failed: do not ask again each batch */
			return GPUIR_CUDA_OK;
		}
		c->dev = NULL;
		if (n == need)
			break;
	}
	return st;
}

/* dcache_has: is the list of key in the area (with BMW's arrays if bmw)?  No side effect. */
static inline bool
dcache_has(const GpuirDecodeCache *c, const GpuirDecodeKey &key, bool bmw)
{
	auto		it = c->where.find(key);

	return it != c->where.end() && (!bmw || c->entries[it->second].bmw);
}

/* dcache_release: free the area and drop every list */
static inline gpuir_cuda_status
dcache_release(GpuirDecodeCache *c)
{
	gpuir_cuda_status st = GPUIR_CUDA_OK;

	dcache_clear(c);
	if (c->dev != NULL)
		st = gpuir_cuda_check(gpuir_cuda_free(c->dev, GPUIR_CUDA_MEM_DEVICE));
	c->dev = NULL;
	c->cap = 0;
	std::vector<uint32_t>().swap(c->owner);
	std::vector<uint64_t>().swap(c->starts);
	return st;
}

/*
 * dcache_find: the first block of the list of key in the area, pinned for
 * the current batch, or UINT32_MAX when it is not there (or is there
 * without the BMW arrays that bmw asks for: dropped then)
 */
static inline uint32_t
dcache_find(GpuirDecodeCache *c, const GpuirDecodeKey &key, bool bmw)
{
	auto		it = c->where.find(key);

	if (it == c->where.end())
		return UINT32_MAX;
	GpuirDecodeEntry &e = c->entries[it->second];

	if (bmw && !e.bmw)
	{
		dcache_drop(c, it->second);
		return UINT32_MAX;
	}
	e.batch = c->batch;
	e.referenced = true;
	c->hits++;
	return e.first;
}

/*
 * dcache_add: n consecutive blocks for the list of key, decoded by the
 * current batch (bmw: with its bounds and seeds), pinned for it: the first
 * block, or UINT32_MAX when the area has no such room outside the lists
 * the batch uses.  Evicts the lists in the blocks it takes; goes past the
 * pinned and the referenced ones (clearing the referenced ones' marks,
 * but for those the batch itself found).  Two laps of the ring at most;
 * then, should it find no room, every mark is cleared (a mark in the part
 * of the ring a walk wraps over is never passed, so room behind it can
 * stay hidden) and it walks two laps again, past the pinned lists alone:
 * it finds any room the batch's lists leave.
 */
static inline uint32_t
dcache_add(GpuirDecodeCache *c, const GpuirDecodeKey &key, uint32_t n, bool bmw)
{
	uint32_t	pos = c->head;
	uint64_t	walked = 0;
	bool		marks_cleared = false;

	if (n == 0 || n > c->cap)
		return UINT32_MAX;
	for (;;)
	{
		if (walked > 2 * (uint64_t) c->cap)
		{
			if (marks_cleared)
				break;
			for (GpuirDecodeEntry &x : c->entries)
				if (x.nblocks > 0 && x.batch != c->batch)
					x.referenced = false;
			marks_cleared = true;
			walked = 0;
			pos = c->head;
		}
		uint32_t	skip = 0,
					e;

		if ((uint64_t) pos + n > c->cap)
		{
			walked += c->cap - pos;
			pos = 0;
		}
		/*
		 * the lists overlapping [pos, pos + n), each once (b: where one
		 * starts): the end of the last to pass.  No list starts before pos
		 * and reaches it: pos is 0, or the end of the last list given room
		 * (whose place no list overlapped, and none has been given since),
		 * or the end of a list kept (which no list overlaps).
		 */
		for (uint32_t b = dcache_next_start(c, pos, pos + n); b < pos + n;)
		{
			const GpuirDecodeEntry &x = c->entries[c->owner[b]];

			if (x.batch == c->batch || x.referenced)
				skip = x.first + x.nblocks;	/* go past it */
			b = dcache_next_start(c, std::max(b + 1, x.first + x.nblocks), pos + n);
		}
		if (skip > 0)
		{
			/* a second chance for the referenced lists passed (not the pinned) */
			for (uint32_t b = dcache_next_start(c, pos, skip); b < skip;)
			{
				GpuirDecodeEntry &x = c->entries[c->owner[b]];

				if (x.batch != c->batch)
					x.referenced = false;
				b = dcache_next_start(c, std::max(b + 1, x.first + x.nblocks), skip);
			}
			walked += skip - pos;
			pos = skip;
			continue;
		}
		for (uint32_t b = dcache_next_start(c, pos, pos + n); b < pos + n;)
		{
			const uint32_t e = c->owner[b];
			const uint32_t end = c->entries[e].first + c->entries[e].nblocks;

			dcache_drop(c, e);
			b = dcache_next_start(c, std::max(b + 1, end), pos + n);
		}
		if (c->free_slots.empty())
		{
			e = (uint32_t) c->entries.size();
			c->entries.push_back(GpuirDecodeEntry());
		}
		else
		{
			e = c->free_slots.back();
			c->free_slots.pop_back();
		}
		c->entries[e] = GpuirDecodeEntry{pos, n, bmw, false, c->batch, key};
		c->where[key] = e;
		c->owner[pos] = e;
		c->starts[pos >> 6] |= (uint64_t) 1 << (pos & 63);
		c->head = pos + n;
		c->held += n;
		c->misses++;
		return pos;
	}
	return UINT32_MAX;
}

/* where dcache_plan puts a batch's plan (arrays the caller allocated) */
struct GpuirDecodeOut
{
	uint32_t   *dec_off;		/* [nterms]: a term's list's first block in the
								 * area, GPUIR_NOT_DECODED when not decoded once */
	uint32_t   *list_term;		/* [lists]: a term of each list the batch decodes */
	uint32_t   *list_first;		/* [lists + 1]: prefix sums of their blocks */
	uint32_t   *list_dst;		/* [lists]: each one's first block in the area */
	uint32_t	nlists;
	uint32_t	dec_blocks;		/* blocks of the lists the terms read there */
};

/* a term whose list is not in the area (GpuirDecoded.off) */
#define GPUIR_NOT_DECODED	UINT32_MAX

/*
 * dcache_plan: the lists of a batch's OR and BMW queries decoded once, in
 * the job's area c: seq[0 .. n) are their terms (indexes into terms[0 ..
 * nterms)) in query order, repeats included; bmw: the batch has BMW
 * queries (bounds and seeds needed); budget: the blocks a batch takes at
 * most (> 0); cache_blocks: the reuse capacity (0: none kept).
 *
 * A list is known by its first block; the terms that name it with the
 * same key (dcache_key: idf and the rest) read it from the area, a term
 * naming it with another key is left to its tiles.  Lists are taken in
 * seq's order until the budget is spent, each found in the area (decoded
 * by an earlier search of the job) or given room there and decoded by
 * this batch; the terms of the lists past the budget are left to the
 * tiles that read them.
 *
 * Reuse (lists found, and kept: the ring) unless the segment has no
 * decode_id, cache_blocks is 0, the batch's lists (repeats counted) are 8
 * times the capacity (thousands of long queries: the generated log's
 * batches of 1000) or its distinct lists (taken or past the budget)
 * exceed it: their lookups and the ring's evictions (about a microsecond
 * a list) would cost more than the few lists found save (real logs in
 * batches of 1000: 0.95x with them, 2026-11-30).  Without reuse every
 * list taken is placed from block 0 and none is kept.  The capacity is
 * cache_blocks, below c->ceiling: the area grows past it only to hold one
 * batch's lists (up to the budget), and such a batch plans without reuse.
 *
 * The area grows, first, to hold the lists kept and those of the batch it
 * does not hold (with reuse: it grows rather than evict while below the
 * capacity), or the batch's lists (without); growing drops every list, a
 * few times in a job's life.  When a list finds no room (the lists the
 * batch found lie across the ring), the area is emptied and the plan made
 * again, every list decoded by this batch from block 0 (and kept): tiles
 * decoding lists for want of room cost more than decoding again (on the
 * real logs in batches of 1000, 0.81-0.96x, 2026-11-30).
 *
 * Output in *out (nlists 0 and every dec_off GPUIR_NOT_DECODED when
 * nothing is decoded once); *found: the lists found in the area.  Returns
 * GPUIR_CUDA_OK, or the status of a failed allocation of the area (OOM).
 */
static inline gpuir_cuda_status
dcache_plan(GpuirDecodeCache *c, const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc,
			const gpuir_cuda_term *terms, uint32_t nterms, const uint32_t *seq, uint32_t n,
			bool bmw, uint32_t budget, uint32_t cache_blocks, GpuirDecodeOut *out,
			uint64_t *found)
{
	uint64_t	all = 0;		/* blocks of the batch's lists, with repeats */
	uint32_t	nblocks = 0;
	gpuir_cuda_status st;

	for (uint32_t i = 0; i < nterms; i++)
		out->dec_off[i] = GPUIR_NOT_DECODED;
	out->list_first[0] = 0;
	out->nlists = 0;
	out->dec_blocks = 0;
	*found = 0;
	for (uint32_t i = 0; i < n; i++)
		all += terms[seq[i]].nblocks;
	if (all == 0 || budget == 0)
		return GPUIR_CUDA_OK;
	c->batch++;
	/* each term's key, computed once */
	c->plan_keys.resize(n);
	for (uint32_t i = 0; i < n; i++)
		if (terms[seq[i]].nblocks > 0)
			c->plan_keys[i] = dcache_key(seg, sc, &terms[seq[i]]);

	const uint64_t limit = std::min(cache_blocks, c->ceiling);	/* the reuse capacity */
	bool		reuse = cache_blocks > 0 && seg->decode_id != 0 && all <= 8 * limit;
	uint64_t	dist_all = 0,	/* blocks of the batch's distinct lists */
				dist = 0,		/* of those, taken as the loop below takes them */
				fresh = 0;		/* of those, not found in the area */

	if (reuse)
	{
		/* first blocks: any list (plan_listed), those the loop below takes (plan_taken) */
		c->plan_listed.reset(n);
		c->plan_taken.reset(n);
		for (uint32_t i = 0; i < n; i++)
		{
			const gpuir_cuda_term *t = &terms[seq[i]];

			if (t->nblocks == 0)
				continue;
			if (c->plan_listed.insert(t->first_block, 0))
				dist_all += t->nblocks;
			if (t->nblocks > budget - dist || !c->plan_taken.insert(t->first_block, 0))
				continue;		/* as the loop below: taken once, within the budget */
			dist += t->nblocks;
			if (!dcache_has(c, c->plan_keys[i], bmw))
				fresh += t->nblocks;
		}
		reuse = dist_all <= limit;
	}
	if (!reuse)
		dcache_clear(c);
	{
		/*
		 * the batch's lists: with reuse its distinct lists taken (dist <=
		 * limit); without, at most all (repeats counted) and the budget
		 */
		const uint64_t need = reuse ? dist : std::min(all, (uint64_t) budget);
		/* with reuse, the lists kept and those it does not find, up to the capacity */
		const uint64_t target = reuse ? std::min(limit, c->held + fresh) : need;

		if (c->dev == NULL || c->cap < target)
		{
			const uint64_t want = std::max({target, (uint64_t) c->cap + c->cap / 2,
											(uint64_t) GPUIR_DECODED_MIN_BLOCKS});
			const uint64_t most = reuse ? limit
				: std::min((uint64_t) budget, (uint64_t) c->ceiling);

			/*
			 * at least the batch's lists, should the larger area not be
			 * had (which then stays the ceiling of the job's area)
			 */
			if ((st = dcache_reserve(c, (uint32_t) std::min(want, most), (uint32_t) need)) !=
				GPUIR_CUDA_OK)
				return st;
		}
	}

	const uint64_t hits0 = c->hits,
				misses0 = c->misses;

	for (int pass = 0; pass < 2; pass++)
	{
		bool		no_room = false;

		/* the lists the batch has taken: first block -> plan_placed's (term, place) */
		c->plan_lists.reset(n);
		c->plan_placed.clear();
		for (uint32_t i = 0; i < n && !no_room; i++)
		{
			const uint32_t j = seq[i];
			const gpuir_cuda_term *t = &terms[j];
			const uint32_t *placed;
			uint32_t	at;

			if (t->nblocks == 0)
				continue;

			const GpuirDecodeKey &key = c->plan_keys[i];

			if ((placed = c->plan_lists.find(t->first_block)) != NULL)
			{
				const std::pair<uint32_t, uint32_t> &pl = c->plan_placed[*placed];

				/* a list the batch has taken: the same, or the tiles decode it */
				if (GpuirDecodeKeyEq()(c->plan_keys[pl.first], key))
					out->dec_off[j] = pl.second;
				continue;
			}
			if (t->nblocks > budget - nblocks)
				continue;		/* over the budget: its tiles decode it */
			at = reuse ? dcache_find(c, key, bmw) : UINT32_MAX;
			if (at == UINT32_MAX)
			{
				at = reuse ? dcache_add(c, key, t->nblocks, bmw) : nblocks;
				if (at == UINT32_MAX)
				{
					no_room = true;
					break;
				}
				out->list_term[out->nlists] = j;
				out->list_dst[out->nlists] = at;
				out->list_first[out->nlists + 1] = out->list_first[out->nlists] + t->nblocks;
				out->nlists++;
			}
			c->plan_lists.insert(t->first_block, (uint32_t) c->plan_placed.size());
			c->plan_placed.emplace_back(i, at);
			out->dec_off[j] = at;
			nblocks += t->nblocks;
		}
		if (!no_room)
			break;
		/* again from an empty area, every list from block 0 (it holds dist blocks) */
		dcache_clear(c);
		c->hits = hits0;
		c->misses = misses0;
		for (uint32_t i = 0; i < nterms; i++)
			out->dec_off[i] = GPUIR_NOT_DECODED;
		out->nlists = 0;
		nblocks = 0;
	}
	out->dec_blocks = nblocks;
	*found = c->hits - hits0;
	return GPUIR_CUDA_OK;
}

#endif							/* GPUIR_DECODE_CACHE_CUH */
