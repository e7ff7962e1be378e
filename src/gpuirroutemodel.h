/*-------------------------------------------------------------------------
 *
 * gpuirroutemodel.h
 *	  The arithmetic of gpuir.device = auto's cost model as pure functions
 *	  (plain C, no PostgreSQL headers): the class of a query's postings and
 *	  of the load it runs under, the running means and the choice of a
 *	  device with its exploration.  src/gpuirroute.c keeps the cells in the GPU
 *	  service's shared memory and calls these; test/test_route.c checks
 *	  them with simulated device costs.  The model itself is described at
 *	  the top of gpuirroute.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_ROUTE_MODEL_H
#define GPUIR_ROUTE_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#define GPUIR_ROUTE_EWMA			16	/* a new time weighs 1/16 */
#define GPUIR_ROUTE_MIN_SAMPLES		4	/* a device with fewer in a cell is tried first */
#define GPUIR_ROUTE_EXPLORE			64	/* one query in this many tries the other device */
#define GPUIR_ROUTE_EXPLORE_FAR		1024	/* ... when its mean is GPUIR_ROUTE_FAR times higher */
#define GPUIR_ROUTE_FAR				3.0
#define GPUIR_ROUTE_TRUSTED			64	/* ... and the other device's mean rests on this
										 * many times or more */
#define GPUIR_ROUTE_SATURATED		1.0	/* backends in a search per core past which the
										 * cores are oversubscribed */
#define GPUIR_ROUTE_SPILL_COST		2.0	/* CPU time at most this many times a GPU
										 * query's backend CPU time to spill */
#define GPUIR_ROUTE_BUCKETS			40	/* postings classes: floor(log2(postings + 1)) */
#define GPUIR_ROUTE_CLAMP			8.0	/* a time counts at most this many times the mean */

#define GPUIR_ROUTE_CLIENTS_WINDOW_US	10000	/* a backend whose last gpuir search
												 * began this recently is a client */
#define GPUIR_ROUTE_CLIENTS_EVERY_US	1000	/* the clients are counted at most
												 * this often */

/* load classes (gpuir_route_load) */
#define GPUIR_ROUTE_LIGHT			0	/* at most a quarter of the cores searching */
#define GPUIR_ROUTE_BUSY			1	/* up to GPUIR_ROUTE_SATURATED a core */
#define GPUIR_ROUTE_OVERSUBSCRIBED	2	/* more */
#define GPUIR_ROUTE_LOADS			3

/* what a cell knows: the means (microseconds) and how many times fed each */
typedef struct GpuirRouteMeans
{
	float		cpu_us;			/* CPU engine: its CPU time */
	float		gpu_us;			/* GPU: the request's wall time */
	float		gpu_cpu_us;		/* GPU: the backend's CPU time meanwhile */
	uint32_t	cpu_samples;
	uint32_t	gpu_samples;
	uint32_t	gpu_cpu_samples;
} GpuirRouteMeans;

/*
 * gpuir_route_bucket: the postings class of a query whose lists hold
 * postings postings, floor(log2(postings + 1)), at most
 * GPUIR_ROUTE_BUCKETS - 1
 */
static inline int
gpuir_route_bucket(uint64_t postings)
{
	int			b = 0;

	while (b < GPUIR_ROUTE_BUCKETS - 1 && (postings + 1) >> (b + 1) != 0)
		b++;
	return b;
}

/*
 * gpuir_route_fold: a mean fed n times so far, after one more time us: the
 * time itself first, then the average of the times while n < EWMA, then an
 * exponentially weighted mean (a new time weighs 1 / GPUIR_ROUTE_EWMA).
 * From GPUIR_ROUTE_MIN_SAMPLES times on, a time counts at most
 * GPUIR_ROUTE_CLAMP times the mean: a run preempted on oversubscribed
 * cores can take a thousand times its work in CPU time as the clock reads
 * it in the device machine's sandbox, and one such time would lift the
 * mean by some 60 times the work, while a real change of cost still moves
 * the mean by up to (CLAMP - 1) / EWMA of itself a query.  (A cell whose
 * first times were such is what gpuir_route_least is for.)
 */
static inline float
gpuir_route_fold(float mean, uint32_t n, double us)
{
	uint32_t	w = (n + 1 < GPUIR_ROUTE_EWMA) ? n + 1 : GPUIR_ROUTE_EWMA;

	if (n == 0)
		return (float) us;
	if (n >= GPUIR_ROUTE_MIN_SAMPLES && us > GPUIR_ROUTE_CLAMP * mean)
		us = GPUIR_ROUTE_CLAMP * mean;
	return mean + ((float) us - mean) / (float) w;
}

/*
 * gpuir_route_load: the load class of a query that starts with active
 * backends in a gpuir search (itself included) and clients backends that
 * began one within the last GPUIR_ROUTE_CLIENTS_WINDOW_US, on ncores
 * cores: GPUIR_ROUTE_OVERSUBSCRIBED past GPUIR_ROUTE_SATURATED backends
 * searching a core, or past clients_per_core clients a core (0: that test
 * off); GPUIR_ROUTE_LIGHT up to a quarter of the cores searching (at least
 * one backend: a single client); GPUIR_ROUTE_BUSY in between.  A GPU
 * request's wall time depends on it (a lone request waits for the worker
 * to wake and runs alone; under load it waits in the queue and shares a
 * batch), so each class keeps means of its own.
 *
 * Why the clients too: the backends searching count those that wait for a
 * GPU answer and not those in the statement around a search, so the count
 * follows the routing.  With 64 clients of AND queries on 16 cores, about
 * four in five of the longer queries began with at most 16 backends in a
 * search (H200, the model's table in
 * bench/results/2026-12-01-h200-direct-outputs/rtt-16-64-route.txt): the
 * busy class, which routes by wall time, kept them on the CPU engine, and
 * auto ran 0.84x the CPU engine alone.  Where many had gone to the GPU,
 * their waits made the class oversubscribed, which routes by the cores'
 * cost and kept sending the longer ones there: 1.11-1.12x on another
 * machine of the same kind.  The clients do not depend on where their
 * queries go.
 */
static inline int
gpuir_route_load(uint32_t active, uint32_t clients, double ncores, double clients_per_core)
{
	double		light = ncores / 4.0 > 1.0 ? ncores / 4.0 : 1.0;

	if ((double) active > GPUIR_ROUTE_SATURATED * ncores ||
		(clients_per_core > 0 && (double) clients > clients_per_core * ncores))
		return GPUIR_ROUTE_OVERSUBSCRIBED;
	return (double) active <= light ? GPUIR_ROUTE_LIGHT : GPUIR_ROUTE_BUSY;
}

/*
 * gpuir_route_recent: is a search that began at began (microseconds of a
 * monotonic clock; 0: none yet) recent at now, within
 * GPUIR_ROUTE_CLIENTS_WINDOW_US either way (another backend may have read
 * the clock after this one)?
 */
static inline bool
gpuir_route_recent(int64_t began, int64_t now)
{
	return began != 0 && now - began <= GPUIR_ROUTE_CLIENTS_WINDOW_US &&
		began - now <= GPUIR_ROUTE_CLIENTS_WINDOW_US;
}

/*
 * gpuir_route_clients_due: is a count of the clients due at now, the last
 * one claimed at claimed (both microseconds of a monotonic clock; 0: none
 * yet)?  Once GPUIR_ROUTE_CLIENTS_EVERY_US have passed, or when the claim
 * lies further ahead than the window (a clock that is not the same one).
 */
static inline bool
gpuir_route_clients_due(int64_t claimed, int64_t now)
{
	return now - claimed >= GPUIR_ROUTE_CLIENTS_EVERY_US ||
		claimed - now > GPUIR_ROUTE_CLIENTS_WINDOW_US;
}

/*
 * The published count of the clients: the count and the millisecond it was
 * made, in one 64-bit word (read and written whole, so never a count with
 * another count's time): the milliseconds above GPUIR_ROUTE_COUNT_BITS,
 * the count (at most 2^20 - 1) below.
 */
#define GPUIR_ROUTE_COUNT_BITS		20
#define GPUIR_ROUTE_COUNT_MAX		((1u << GPUIR_ROUTE_COUNT_BITS) - 1)

static inline uint64_t
gpuir_route_clients_pack(int64_t now, uint32_t clients)
{
	return ((uint64_t) (now / 1000) << GPUIR_ROUTE_COUNT_BITS) |
		(clients < GPUIR_ROUTE_COUNT_MAX ? clients : GPUIR_ROUTE_COUNT_MAX);
}

/*
 * gpuir_route_clients_unpack: the count in word (gpuir_route_clients_pack)
 * when it was made within GPUIR_ROUTE_CLIENTS_WINDOW_US of now either way
 * (and the millisecond its time was cut to), else 0: no search that began
 * since then counted again, so none began for that long (a search that
 * begins recounts once a count is GPUIR_ROUTE_CLIENTS_EVERY_US old); 0 for
 * word 0 (none yet)
 */
static inline uint32_t
gpuir_route_clients_unpack(uint64_t word, int64_t now)
{
	int64_t		at = (int64_t) (word >> GPUIR_ROUTE_COUNT_BITS) * 1000;

	if (word == 0 || now - at > GPUIR_ROUTE_CLIENTS_WINDOW_US + 1000 ||
		at - now > GPUIR_ROUTE_CLIENTS_WINDOW_US)
		return 0;
	return (uint32_t) (word & GPUIR_ROUTE_COUNT_MAX);
}

/*
 * gpuir_route_least: the least of n load classes' means of one measure
 * (mean[i] fed samples[i] times) among those fed GPUIR_ROUTE_MIN_SAMPLES
 * times or more; fallback when none was.  With oversubscribed cores the
 * router compares what a query costs the cores, and a CPU time read
 * there counts the run's preemptions too (rarely, but without bound, and
 * a cell whose CPU mean a few such runs lifted sent its short queries to
 * the GPU until slow explorations brought it down: 3,000 queries of 1-14
 * postings, H200, bench/results/2026-11-29-h200-auto-learns.md); the work
 * itself does not grow with the load, and where the cores are free the
 * clock reads it.
 */
static inline float
gpuir_route_least(const float *mean, const uint32_t *samples, int n, float fallback)
{
	float		least = fallback;
	bool		found = false;

	for (int i = 0; i < n; i++)
		if (samples[i] >= GPUIR_ROUTE_MIN_SAMPLES && (!found || mean[i] < least))
		{
			least = mean[i];
			found = true;
		}
	return least;
}

/*
 * gpuir_route_choose: the device the cell's means choose for a query
 * (true: the GPU) and, in *every, how often the other device is tried
 * instead (gpuir_route_explore; 0 when the choice takes a device's first
 * samples): a device with fewer than GPUIR_ROUTE_MIN_SAMPLES times, the GPU
 * first; with oversubscribed cores and a GPU_CPU mean, the device that
 * costs the cores less (CPU against GPU_CPU); else the one that answers
 * first (CPU against GPU).  The other device is tried once in
 * GPUIR_ROUTE_EXPLORE queries, once in GPUIR_ROUTE_EXPLORE_FAR when its
 * mean is more than GPUIR_ROUTE_FAR times the chosen one's and rests on
 * GPUIR_ROUTE_TRUSTED times or more: a mean of a few times may be a few
 * unlucky ones (a cell of one client's load whose GPU means a 64-client
 * run's first queries had lifted 25-70 fold, explored once in 1,024, kept
 * 1-client OR queries on the CPU at 0.62x the GPU's q/s for 12 s: H200,
 * bench/results/2026-11-30-h200-auto-ramp.md).  "Far" compares the
 * measures the choice compared: with oversubscribed cores, CPU against
 * GPU_CPU.  (Against the GPU's wall time, which the queue stretches to
 * 0.4-3.6 ms at 64 clients, the long OR classes, CPU 0.3-0.8 ms against
 * 25-55 us of GPU_CPU, were not far, and 1.4-1.6% of their queries ran on
 * the CPU engine: by the model's own means about 4 us of the 121 us of
 * backend CPU that a transaction of auto OR cost at 64 clients, against
 * 90 us with the GPU alone; H200, bench/results/2026-12-01-h200-auto-clients.md.)
 */
static inline bool
gpuir_route_choose(const GpuirRouteMeans *m, bool cores_full, uint32_t *every)
{
	bool		gpu;
	bool		far;
	bool		by_cores;
	float		g;				/* the GPU's measure: GPU_CPU by the cores, else GPU */
	uint32_t	gn;

	*every = 0;
	if (m->gpu_samples < GPUIR_ROUTE_MIN_SAMPLES)
		return true;
	if (m->cpu_samples < GPUIR_ROUTE_MIN_SAMPLES)
		return false;
	by_cores = cores_full && m->gpu_cpu_samples > 0;
	g = by_cores ? m->gpu_cpu_us : m->gpu_us;
	gn = by_cores ? m->gpu_cpu_samples : m->gpu_samples;
	gpu = g < m->cpu_us;
	far = gpu ? (m->cpu_us > GPUIR_ROUTE_FAR * g && m->cpu_samples >= GPUIR_ROUTE_TRUSTED)
		: (g > GPUIR_ROUTE_FAR * m->cpu_us && gn >= GPUIR_ROUTE_TRUSTED);
	*every = far ? GPUIR_ROUTE_EXPLORE_FAR : GPUIR_ROUTE_EXPLORE;
	return gpu;
}

/*
 * gpuir_route_same_load: does a time measured over a query that began in
 * load class begin and ended in class end (gpuir_route_load at each) feed
 * the means of begin's cells?  Only when the class held: a query that
 * began while few backends searched and ended among many (the first
 * queries of a pgbench run of 64 clients: they start one by one) waited
 * in the queue the others filled, and its GPU round trip, 25-70 times a
 * lone one's, lifted the light class's means until one client's queries
 * went to the slower device (bench/results/2026-11-30-h200-auto-ramp.md).
 */
static inline bool
gpuir_route_same_load(int begin, int end)
{
	return begin == end;
}

/*
 * gpuir_route_spill: with oversubscribed cores, should a query for which
 * gpuir_route_choose picked the GPU (gpu) take a free CPU slot instead?
 * Yes when the cell's CPU time is below the GPU request's wall time (on a
 * core of its own the CPU engine answers first) and below
 * GPUIR_ROUTE_SPILL_COST times the GPU query's CPU time (it costs the
 * cores little more: spilling the long OR queries, whose CPU time is
 * 2-4 times the GPU's, took the cores the GPU queries needed).  The caller
 * reserves the slot (gpuir.auto_cpu_slots bounds the backends in a CPU
 * engine run, so that the GPU service's worker and the backends of GPU
 * queries keep cores) and keeps the GPU when none is free.
 */
static inline bool
gpuir_route_spill(const GpuirRouteMeans *m, bool cores_full, bool gpu)
{
	return cores_full && gpu &&
		m->cpu_samples >= GPUIR_ROUTE_MIN_SAMPLES &&
		m->gpu_samples >= GPUIR_ROUTE_MIN_SAMPLES &&
		m->gpu_cpu_samples > 0 &&
		m->cpu_us < m->gpu_us &&
		m->cpu_us < GPUIR_ROUTE_SPILL_COST * m->gpu_cpu_us;
}

/*
 * gpuir_route_explore: the device for the cell's decision number decision
 * (a counter of the cell's choices by the means): the chosen one, or the
 * other once every every decisions
 */
static inline bool
gpuir_route_explore(bool gpu, uint32_t every, uint64_t decision)
{
	if (every > 0 && decision % every == every - 1)
		return !gpu;
	return gpu;
}

#endif							/* GPUIR_ROUTE_MODEL_H */
