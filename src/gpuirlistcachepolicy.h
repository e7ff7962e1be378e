/*-------------------------------------------------------------------------
 *
 * gpuirlistcachepolicy.h
 *	  Which posting lists of a segment larger than the device budget stay on
 *	  the device: GreedyDual-Size-Frequency (Cherkasova, HP Labs
 *	  HPL-98-69R1, 1998; Cao & Irani, USITS 1997 for GreedyDual-Size), the
 *	  "frequency x benefit / size" admission and eviction that Wang et al.
 *	  (ICPADS 2017, section IV) ask of a GPU list cache.  Pure C, no
 *	  PostgreSQL headers: src/gpuircache.c keeps the lists and calls these;
 *	  test/test_list_cache.c checks them with simulated workloads.
 *
 * Each list i (an item) has a size (device bytes of its image), a use count
 * freq and, while resident, a priority
 *
 *	H(i) = L + freq(i) * cost(i) / size(i),  cost(i) = GPUIR_LC_FIXED_BYTES + miss(i)
 *
 * where cost is what a miss costs in bytes moved (the list's bytes read
 * from the buffer pool and copied to the device, miss(i), plus a fixed
 * cost per list for its page reads and its place in the batch, expressed
 * in bytes; miss(i) is size(i), except for a pruned list, gpuirprune.h,
 * whose miss ships its whole list), and
 * L, the inflation, is the priority of the last list evicted: lists used
 * long ago fall below the new ones without their counts being aged.
 * A list not resident is admitted when it fits the room left, or when the
 * resident lists of lower priority that must leave to make room (lowest
 * first) all have a priority below its own; otherwise it travels with the
 * batch and stays out.  Use counts are kept for lists that are not
 * resident too (the caller's table), so that a list becomes resident once
 * it is used often enough.
 *
 * The resident lists are a binary min-heap on H, held in an array of item
 * indices the caller allocates (one slot per item).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_LIST_CACHE_POLICY_H
#define GPUIR_LIST_CACHE_POLICY_H

#include <stdbool.h>
#include <stdint.h>

/* a miss's fixed cost, in bytes moved: about a page read and a descriptor */
#define GPUIR_LC_FIXED_BYTES		8192.0

typedef struct GpuirLcItem
{
	uint64_t	size;			/* device bytes of the list's image, > 0 */
	uint64_t	miss;			/* bytes a miss moves; 0: size */
	double		freq;			/* uses so far */
	double		h;				/* priority while resident */
	int32_t		heap;			/* place in the heap, -1 when not resident */
} GpuirLcItem;

typedef struct GpuirLcPolicy
{
	double		L;				/* inflation: priority of the last evicted */
	uint64_t	bytes;			/* resident bytes */
	int32_t		nheap;			/* resident lists */
	int32_t    *heap;			/* [items]: item indices, min-heap on h */
} GpuirLcPolicy;

static inline void
gpuir_lc_init(GpuirLcPolicy *p, int32_t *heap)
{
	p->L = 0.0;
	p->bytes = 0;
	p->nheap = 0;
	p->heap = heap;
}

/* gpuir_lc_new_item: a list seen for the first time */
static inline void
gpuir_lc_new_item(GpuirLcItem *it, uint64_t size)
{
	it->size = size > 0 ? size : 1;
	it->miss = 0;
	it->freq = 0.0;
	it->h = 0.0;
	it->heap = -1;
}

/* gpuir_lc_priority: H of item it, now */
static inline double
gpuir_lc_priority(const GpuirLcPolicy *p, const GpuirLcItem *it)
{
	double		miss = (double) (it->miss > 0 ? it->miss : it->size);

	return p->L + it->freq * (GPUIR_LC_FIXED_BYTES + miss) / (double) it->size;
}

static inline void
gpuir_lc_swap(GpuirLcPolicy *p, GpuirLcItem *items, int32_t a, int32_t b)
{
	int32_t		t = p->heap[a];

	p->heap[a] = p->heap[b];
	p->heap[b] = t;
	items[p->heap[a]].heap = a;
	items[p->heap[b]].heap = b;
}

static inline void
gpuir_lc_sift_up(GpuirLcPolicy *p, GpuirLcItem *items, int32_t pos)
{
	while (pos > 0)
	{
		int32_t		up = (pos - 1) / 2;

		if (items[p->heap[up]].h <= items[p->heap[pos]].h)
			break;
		gpuir_lc_swap(p, items, up, pos);
		pos = up;
	}
}

static inline void
gpuir_lc_sift_down(GpuirLcPolicy *p, GpuirLcItem *items, int32_t pos)
{
	for (;;)
	{
		int32_t		l = 2 * pos + 1;
		int32_t		m = pos;

		if (l < p->nheap && items[p->heap[l]].h < items[p->heap[m]].h)
			m = l;
		if (l + 1 < p->nheap && items[p->heap[l + 1]].h < items[p->heap[m]].h)
			m = l + 1;
		if (m == pos)
			break;
		gpuir_lc_swap(p, items, m, pos);
		pos = m;
	}
}

static inline void
gpuir_lc_insert(GpuirLcPolicy *p, GpuirLcItem *items, int32_t i)
{
	items[i].heap = p->nheap;
	p->heap[p->nheap++] = i;
	p->bytes += items[i].size;
	gpuir_lc_sift_up(p, items, items[i].heap);
}

/* gpuir_lc_remove: item i leaves the resident set (evicted, or dropped by the caller) */
static inline void
gpuir_lc_remove(GpuirLcPolicy *p, GpuirLcItem *items, int32_t i)
{
	int32_t		pos = items[i].heap;

	if (pos < 0)
		return;
	p->bytes -= items[i].size;
	p->nheap--;
	if (pos != p->nheap)
	{
		p->heap[pos] = p->heap[p->nheap];
		items[p->heap[pos]].heap = pos;
		gpuir_lc_sift_down(p, items, pos);
		gpuir_lc_sift_up(p, items, pos);
	}
	items[i].heap = -1;
}

/* gpuir_lc_touch: one more use of item i (resident or not) */
static inline void
gpuir_lc_touch(GpuirLcPolicy *p, GpuirLcItem *items, int32_t i)
{
	items[i].freq += 1.0;
	if (items[i].heap >= 0)
	{
		items[i].h = gpuir_lc_priority(p, &items[i]);
		gpuir_lc_sift_down(p, items, items[i].heap);
	}
}

/*
 * gpuir_lc_admit: whether item i (not resident, just touched) becomes
 * resident within room bytes.  When it does, the lists that make room for
 * it are taken out of the heap and written to victims[0 .. *nvictims)
 * (lowest priority first; victims has room for every resident item), L
 * rises to the last one's priority, and i is in the heap.  When it does
 * not, nothing changes and *nvictims = 0.
 */
static inline bool
gpuir_lc_admit(GpuirLcPolicy *p, GpuirLcItem *items, int32_t i, uint64_t room,
			   int32_t *victims, int32_t *nvictims)
{
	double		h = gpuir_lc_priority(p, &items[i]);
	int32_t		n = 0;

	*nvictims = 0;
	if (items[i].heap >= 0 || items[i].size > room)
		return false;
	/* the lowest first, while they are below i and there is no room yet */
	while (p->bytes + items[i].size > room && p->nheap > 0)
	{
		int32_t		v = p->heap[0];

		if (items[v].h >= h)
			break;
		victims[n++] = v;
		gpuir_lc_remove(p, items, v);
	}
	if (p->bytes + items[i].size > room)
	{
		/* no room at i's priority: put them back */
		for (int32_t k = 0; k < n; k++)
			gpuir_lc_insert(p, items, victims[k]);
		return false;
	}
	for (int32_t k = 0; k < n; k++)
		if (items[victims[k]].h > p->L)
			p->L = items[victims[k]].h;
	items[i].h = gpuir_lc_priority(p, &items[i]);
	gpuir_lc_insert(p, items, i);
	*nvictims = n;
	return true;
}

#endif							/* GPUIR_LIST_CACHE_POLICY_H */
