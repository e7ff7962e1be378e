/*-------------------------------------------------------------------------
 *
 * test_list_cache.c
 *	  Tests of the device list cache's policy (src/gpuirlistcachepolicy.h,
 *	  GreedyDual-Size-Frequency) with simulated workloads and a simulated
 *	  device cost (bytes moved per miss): no GPU and no server needed.
 *	  - the heap and the byte count stay consistent over random admissions,
 *	    touches and removals, and the resident bytes never exceed the room;
 *	  - a Zipf workload over lists of very different sizes, the room 10% of
 *	    the lists' bytes: the bytes moved by misses are below LRU's and
 *	    within 1.6x of a static oracle that knows the true frequencies;
 *	  - after the popularity changes, the cache follows: over the last
 *	    stretch, again within 1.6x of the oracle of the new frequencies;
 *	  - a list larger than the room is never admitted;
 *	  - a pruned list (its miss moves its whole list) outranks a list of
 *	    its own size used as often, and displaces it.
 *
 * Usage: test_list_cache.  Prints one summary line; exit status 1 on a
 * failure.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuirlistcachepolicy.h"
#include "test_util.h"

#define NITEMS		4000

static GpuirLcItem items[NITEMS];
static int32_t heap[NITEMS];
static int32_t victims[NITEMS];
static uint64_t sizes[NITEMS];
static double zipf_cdf[NITEMS];
static int32_t rank_of[NITEMS];	/* popularity rank -> item */

static double
cost(uint64_t size)
{
	return GPUIR_LC_FIXED_BYTES + (double) size;
}

/* heap order, positions and the byte count */
static bool
consistent(const GpuirLcPolicy *p)
{
	uint64_t	bytes = 0;

	for (int32_t k = 0; k < p->nheap; k++)
	{
		int32_t		i = p->heap[k];

		if (items[i].heap != k)
			return false;
		if (k > 0 && items[p->heap[(k - 1) / 2]].h > items[i].h)
			return false;
		bytes += items[i].size;
	}
	return bytes == p->bytes;
}

static void
setup_sizes(void)
{
	/* log-uniform between 1 kB and 4 MB: short and long lists */
	for (int i = 0; i < NITEMS; i++)
		sizes[i] = (uint64_t) (1024.0 * pow(4096.0, (double) (rnd() % 100000) / 100000.0));
}

static void
setup_zipf(double s)
{
	double		sum = 0.0;

	for (int r = 0; r < NITEMS; r++)
		sum += 1.0 / pow(r + 1, s);
	for (int r = 0; r < NITEMS; r++)
		zipf_cdf[r] = (r > 0 ? zipf_cdf[r - 1] : 0.0) + 1.0 / pow(r + 1, s) / sum;
	for (int r = 0; r < NITEMS; r++)
		rank_of[r] = r;
	/* popularity independent of size */
	for (int r = NITEMS - 1; r > 0; r--)
	{
		int			j = (int) (rnd() % (uint32_t) (r + 1));
		int32_t		t = rank_of[r];

		rank_of[r] = rank_of[j];
		rank_of[j] = t;
	}
}

static int32_t
draw(void)
{
	double		u = (double) rnd() / 4294967296.0;
	int			lo = 0,
				hi = NITEMS - 1;

	while (lo < hi)
	{
		int			mid = (lo + hi) / 2;

		if (zipf_cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return rank_of[lo];
}

static const double *oracle_key;

/* item order by oracle_key, highest first */
static int
key_desc(const void *a, const void *b)
{
	double		x = oracle_key[*(const int32_t *) a];
	double		y = oracle_key[*(const int32_t *) b];

	return (x < y) - (x > y);
}

/* the static oracle: greedy by probability * cost / size within room; its expected cost a use */
static double
oracle_cost(uint64_t room)
{
	static int32_t order[NITEMS];
	static double key[NITEMS];
	static double prob[NITEMS];
	static bool in[NITEMS];
	uint64_t	used = 0;
	double		expect = 0.0;

	for (int r = 0; r < NITEMS; r++)
		prob[rank_of[r]] = zipf_cdf[r] - (r > 0 ? zipf_cdf[r - 1] : 0.0);
	for (int i = 0; i < NITEMS; i++)
	{
		order[i] = i;
		key[i] = prob[i] * cost(sizes[i]) / (double) sizes[i];
		in[i] = false;
	}
	oracle_key = key;
	qsort(order, NITEMS, sizeof(int32_t), key_desc);
	for (int k = 0; k < NITEMS; k++)
		if (used + sizes[order[k]] <= room)
		{
			used += sizes[order[k]];
			in[order[k]] = true;
		}
	for (int i = 0; i < NITEMS; i++)
		if (!in[i])
			expect += prob[i] * cost(sizes[i]);
	return expect;
}

/* LRU by bytes, for comparison: a stamp per item, evict the oldest */
static uint64_t lru_stamp[NITEMS];
static bool lru_in[NITEMS];
static uint64_t lru_bytes;

static double
lru_use(int32_t i, uint64_t room, uint64_t now)
{
	double		c = 0.0;

	if (!lru_in[i])
	{
		c = cost(sizes[i]);
		if (sizes[i] <= room)
		{
			while (lru_bytes + sizes[i] > room)
			{
				int32_t		old = -1;

				for (int j = 0; j < NITEMS; j++)
					if (lru_in[j] && (old < 0 || lru_stamp[j] < lru_stamp[old]))
						old = j;
				lru_in[old] = false;
				lru_bytes -= sizes[old];
			}
			lru_in[i] = true;
			lru_bytes += sizes[i];
		}
	}
	lru_stamp[i] = now;
	return c;
}

/* one use under GDSF; returns the simulated cost of a miss (0 on a hit) */
static double
gdsf_use(GpuirLcPolicy *p, int32_t i, uint64_t room, bool *ok)
{
	int32_t		nv;
	bool		resident = items[i].heap >= 0;

	gpuir_lc_touch(p, items, i);
	if (resident)
		return 0.0;
	if (gpuir_lc_admit(p, items, i, room, victims, &nv))
	{
		for (int32_t k = 0; k < nv; k++)
			if (items[victims[k]].heap != -1)
				*ok = false;
	}
	if (p->bytes > room)
		*ok = false;
	return cost(items[i].size);
}

static void
test_random_ops(void)
{
	GpuirLcPolicy p;
	bool		ok = true;
	uint64_t	room = 0;

	gpuir_lc_init(&p, heap);
	for (int i = 0; i < NITEMS; i++)
	{
		gpuir_lc_new_item(&items[i], sizes[i]);
		room += sizes[i];
	}
	room /= 20;
	for (int n = 0; n < 200000; n++)
	{
		int32_t		i = (int32_t) (rnd() % NITEMS);
		uint32_t	op = rnd() % 10;

		if (op == 0)
			gpuir_lc_remove(&p, items, i);
		else
			(void) gdsf_use(&p, i, room, &ok);
		if (n % 997 == 0 && !consistent(&p))
			ok = false;
	}
	check(ok && consistent(&p), "heap and bytes consistent over random operations, within room");
}

static void
test_zipf(void)
{
	GpuirLcPolicy p;
	uint64_t	total = 0,
				room;
	double		gdsf = 0.0,
				lru = 0.0,
				late = 0.0,
				oracle;
	bool		ok = true;
	char		what[200];
	const int	n = 200000;

	for (int i = 0; i < NITEMS; i++)
	{
		gpuir_lc_new_item(&items[i], sizes[i]);
		total += sizes[i];
		lru_in[i] = false;
	}
	lru_bytes = 0;
	room = total / 10;
	gpuir_lc_init(&p, heap);
	setup_zipf(1.0);
	oracle = oracle_cost(room);
	for (int k = 0; k < n; k++)
	{
		int32_t		i = draw();
		double		g = gdsf_use(&p, i, room, &ok);
		double		l = lru_use(i, room, (uint64_t) k + 1);

		if (k >= n / 2)
		{
			gdsf += g;
			lru += l;
		}
	}
	gdsf /= n / 2;
	lru /= n / 2;
	snprintf(what, sizeof(what), "zipf, room 10%%: GDSF %.0f bytes a use below LRU %.0f", gdsf, lru);
	check(ok && gdsf < lru, what);
	snprintf(what, sizeof(what), "zipf, room 10%%: GDSF %.0f within 1.6x of the oracle %.0f",
			 gdsf, oracle);
	check(gdsf <= 1.6 * oracle, what);

	/* the popularity changes: the cache must follow */
	setup_zipf(1.0);
	oracle = oracle_cost(room);
	for (int k = 0; k < n; k++)
	{
		double		g = gdsf_use(&p, draw(), room, &ok);

		if (k >= n / 2)
			late += g;
	}
	late /= n / 2;
	snprintf(what, sizeof(what), "after a change of popularity: GDSF %.0f within 1.6x of the oracle %.0f",
			 late, oracle);
	check(ok && late <= 1.6 * oracle, what);
}

static void
test_too_large(void)
{
	GpuirLcPolicy p;
	int32_t		nv;

	gpuir_lc_init(&p, heap);
	gpuir_lc_new_item(&items[0], 1000);
	gpuir_lc_new_item(&items[1], 5000);
	gpuir_lc_touch(&p, items, 0);
	check(gpuir_lc_admit(&p, items, 0, 4096, victims, &nv) && nv == 0, "a list that fits is admitted");
	for (int k = 0; k < 100; k++)
		gpuir_lc_touch(&p, items, 1);
	check(!gpuir_lc_admit(&p, items, 1, 4096, victims, &nv) && nv == 0 && items[0].heap == 0 &&
		  p.bytes == 1000, "a list larger than the room is not admitted and evicts nothing");
	gpuir_lc_new_item(&items[2], 3500);
	gpuir_lc_touch(&p, items, 2);
	check(!gpuir_lc_admit(&p, items, 2, 4096, victims, &nv) && p.bytes == 1000,
		  "a list no more used than the resident one it would evict stays out");
	gpuir_lc_touch(&p, items, 2);
	gpuir_lc_touch(&p, items, 2);
	check(gpuir_lc_admit(&p, items, 2, 4096, victims, &nv) && nv == 1 && victims[0] == 0 &&
		  items[0].heap == -1 && p.bytes == 3500 && p.L > 0.0,
		  "a list used more evicts it, and L rises to its priority");
}

static void
test_pruned_miss(void)
{
	GpuirLcPolicy p;
	int32_t		nv;

	gpuir_lc_init(&p, heap);
	gpuir_lc_new_item(&items[0], 2000);
	gpuir_lc_touch(&p, items, 0);
	check(gpuir_lc_admit(&p, items, 0, 3000, victims, &nv) && nv == 0, "a list fits the room");
	gpuir_lc_new_item(&items[1], 2000);
	gpuir_lc_touch(&p, items, 1);
	check(!gpuir_lc_admit(&p, items, 1, 3000, victims, &nv) && items[0].heap >= 0,
		  "an equal list used as often does not displace it");
	items[1].miss = 16000;		/* a pruned list: a miss ships the whole list */
	check(gpuir_lc_priority(&p, &items[1]) > gpuir_lc_priority(&p, &items[0]),
		  "a pruned list's priority counts the whole list its miss ships");
	check(gpuir_lc_admit(&p, items, 1, 3000, victims, &nv) && nv == 1 && victims[0] == 0 &&
		  p.bytes == 2000, "a pruned list displaces a list of its size used as often");
}

int
main(void)
{
	setup_sizes();
	test_random_ops();
	test_zipf();
	test_too_large();
	test_pruned_miss();
	printf("list cache: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
