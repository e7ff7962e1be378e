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
 * the ring), plan_decode empties the area and plans the batch again from
 * block 0, keeping its lists.  The area grows rather than evict, by half at least, to
 * hold the lists kept and those a new batch does not find (up to the
 * capacity set by gpuir_cuda_search_set_decode_cache, or the decode budget
 * when that is larger), by a new allocation, which drops every list: a
 * few times in a job's life.  A search that fails (a corrupt block, a launch or copy error)
 * drops every list too: its decode may not have written them.
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
#include <map>
#include <unordered_map>

#include "gpuir_cuda_internal.cuh"

/* device bytes of one decoded block (gpuir_cuda.h) */
#define GPUIR_DECODED_BLOCK_BYTES	GPUIR_CUDA_DECODED_BLOCK_BYTES

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

struct GpuirDecodeKeyHash
{
	size_t operator()(const GpuirDecodeKey &k) const
	{
		const unsigned char *p = (const unsigned char *) &k;
		uint64_t	h = 14695981039346656037ull;	/* FNV-1a */

		for (size_t i = 0; i < sizeof(k); i++)
			h = (h ^ p[i]) * 1099511628211ull;
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

/* a list in the area */
struct GpuirDecodeEntry
{
	uint32_t	nblocks;
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
	std::map<uint32_t, GpuirDecodeEntry> at;	/* by first block */
	std::unordered_map<GpuirDecodeKey, uint32_t, GpuirDecodeKeyHash, GpuirDecodeKeyEq> where;
	/* lists found and given room since the job's creation (tests) */
	uint64_t	hits = 0;
	uint64_t	misses = 0;
};

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
	c->at.clear();
	c->where.clear();
	c->head = 0;
	c->held = 0;
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
		if (n < need || n == 0)
			continue;
		st = gpuir_cuda_check(cudaMalloc((void **) &c->dev, (size_t) n * GPUIR_DECODED_BLOCK_BYTES));
		if (st == GPUIR_CUDA_OK)
		{
			c->cap = n;
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

	return it != c->where.end() && (!bmw || c->at.at(it->second).bmw);
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
	GpuirDecodeEntry &e = c->at.at(it->second);

	if (bmw && !e.bmw)
	{
		c->held -= e.nblocks;
		c->at.erase(it->second);
		c->where.erase(it);
		return UINT32_MAX;
	}
	e.batch = c->batch;
	e.referenced = true;
	c->hits++;
	return it->second;
}

/*
 * dcache_add: n consecutive blocks for the list of key, decoded by the
 * current batch (bmw: with its bounds and seeds), pinned for it: the first
 * block, or UINT32_MAX when the area has no such room outside the lists
 * the batch uses.  Evicts the lists in the blocks it takes; goes past the
 * pinned and the referenced ones (clearing the referenced ones' marks,
 * but for those the batch itself found).  Three laps of
 * the ring at most: after the first every mark it passed is clear.
 */
static inline uint32_t
dcache_add(GpuirDecodeCache *c, const GpuirDecodeKey &key, uint32_t n, bool bmw)
{
	uint32_t	pos = c->head;
	uint64_t	walked = 0;

	if (n == 0 || n > c->cap)
		return UINT32_MAX;
	while (walked <= 3 * (uint64_t) c->cap)
	{
		uint32_t	skip = 0;

		if ((uint64_t) pos + n > c->cap)
		{
			walked += c->cap - pos;
			pos = 0;
		}
		/* the lists overlapping [pos, pos + n) */
		auto		first = c->at.lower_bound(pos);

		if (first != c->at.begin())
		{
			auto		before = std::prev(first);

			if (before->first + before->second.nblocks > pos)
				first = before;
		}
		for (auto it = first; it != c->at.end() && it->first < pos + n; ++it)
			if (it->second.batch == c->batch || it->second.referenced)
				skip = it->first + it->second.nblocks;	/* go past it */
		if (skip > 0)
		{
			/* a second chance for the referenced lists passed (not the pinned) */
			for (auto it = first; it != c->at.end() && it->first < skip; ++it)
				if (it->second.batch != c->batch)
					it->second.referenced = false;
			walked += skip - pos;
			pos = skip;
			continue;
		}
		while (first != c->at.end() && first->first < pos + n)
		{
			c->held -= first->second.nblocks;
			c->where.erase(first->second.key);
			first = c->at.erase(first);
		}
		c->at[pos] = GpuirDecodeEntry{n, bmw, false, c->batch, key};
		c->where[key] = pos;
		c->head = pos + n;
		c->held += n;
		c->misses++;
		return pos;
	}
	return UINT32_MAX;
}

#endif							/* GPUIR_DECODE_CACHE_CUH */
