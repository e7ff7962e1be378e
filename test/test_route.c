/*-------------------------------------------------------------------------
 *
 * test_route.c
 *	  Tests of gpuir.device = auto's cost model (src/gpuirroutemodel.h, the
 *	  arithmetic src/gpuirroute.c applies to its shared-memory cells), with
 *	  simulated device costs: no GPU and no server needed.
 *	  - postings classes: floor(log2(postings + 1)), capped;
 *	  - the running means: the first time, then the average, then an
 *	    exponentially weighted mean that follows a change of cost; a spike
 *	    counted at most GPUIR_ROUTE_CLAMP times the mean;
 *	  - the choice: each device's first samples, the faster device by wall
 *	    time, by the cores' cost when they are oversubscribed (each mean the
 *	    least over the load classes), and the exploration of the other
 *	    device at its exact rates; the spill of a GPU query to a free CPU
 *	    slot with oversubscribed cores; the load classes' boundaries;
 *	  - a closed loop over many query classes: simulated CPU and GPU costs
 *	    fed back into the means, every class must send at least 95% of its
 *	    queries to the device that is cheaper for it, also after the costs
 *	    change;
 *	  - the load classes: two loads with different GPU costs alternating,
 *	    each with its own means, route right from each phase's start.
 *
 * Usage: test_route.  Prints one summary line; exit status 1 on a failure.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpuirroutemodel.h"
#include "test_util.h"

static void
test_bucket(void)
{
	char		what[128];
	static const struct
	{
		uint64_t	postings;
		int			bucket;
	}			cases[] = {
		{0, 0}, {1, 1}, {2, 1}, {3, 2}, {6, 2}, {7, 3}, {1023, 10}, {1024, 10},
		{UINT64_C(1) << 38, 38}, {UINT64_MAX - 1, GPUIR_ROUTE_BUCKETS - 1}, {UINT64_MAX, 0}
	};

	/* UINT64_MAX + 1 wraps to 0: class 0, as the server computes it */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		int			b = gpuir_route_bucket(cases[i].postings);

		snprintf(what, sizeof(what), "bucket of %llu postings: %d, want %d",
				 (unsigned long long) cases[i].postings, b, cases[i].bucket);
		check(b == cases[i].bucket, what);
	}
	for (uint64_t p = 1; p < 100000; p = p * 3 + 1)
		check(gpuir_route_bucket(p) == (int) floor(log2((double) p + 1.0)),
			  "bucket = floor(log2(postings + 1))");
}

static void
test_fold(void)
{
	float		m = 0.0f;
	char		what[128];

	/* first time, then the plain average while fewer than GPUIR_ROUTE_EWMA */
	m = gpuir_route_fold(m, 0, 100.0);
	check(m == 100.0f, "first time is the mean");
	m = gpuir_route_fold(m, 1, 200.0);
	check(m == 150.0f, "second time: the average");
	m = gpuir_route_fold(m, 2, 300.0);
	check(fabsf(m - 200.0f) < 1e-4f, "third time: the average");

	/* a spike counts at most GPUIR_ROUTE_CLAMP times the mean */
	m = gpuir_route_fold(200.0f, GPUIR_ROUTE_MIN_SAMPLES - 1, 5000.0);
	check(m == 200.0f + (5000.0f - 200.0f) / GPUIR_ROUTE_MIN_SAMPLES,
		  "below the minimum samples a time counts whole");
	m = 5.0f;
	m = gpuir_route_fold(m, 100, 5000.0);
	snprintf(what, sizeof(what), "a preempted run of 1000x the mean moves it by (CLAMP - 1) / EWMA: %.3f", m);
	check(fabsf(m - (float) (5.0 + 5.0 * (GPUIR_ROUTE_CLAMP - 1.0) / GPUIR_ROUTE_EWMA)) < 1e-4f, what);
	{
		/* rare spikes (one in 64 runs of 5 us takes 5 ms) keep the mean near the work */
		m = 5.0f;
		for (uint32_t n = 100; n < 10100; n++)
			m = gpuir_route_fold(m, n, n % 64 == 0 ? 5000.0 : 5.0);
		snprintf(what, sizeof(what), "one run in 64 preempted for 5 ms: mean %.2f us of 5 us runs", m);
		check(m < 8.0f, what);
	}

	/* a constant time is a fixed point */
	m = 50.0f;
	for (uint32_t n = 1; n < 1000; n++)
		m = gpuir_route_fold(m, n, 50.0);
	check(m == 50.0f, "a constant time stays the mean");

	/* a step: after k more times at the new cost, 1 - (15/16)^k of the way there */
	for (uint32_t n = 1000; n < 1016; n++)
		m = gpuir_route_fold(m, n, 150.0);
	snprintf(what, sizeof(what), "step 50 -> 150 after 16 times: mean %.2f", m);
	check(fabsf(m - (float) (150.0 - 100.0 * pow(15.0 / 16.0, 16))) < 0.01f, what);
	for (uint32_t n = 1016; n < 1200; n++)
		m = gpuir_route_fold(m, n, 150.0);
	check(fabsf(m - 150.0f) < 0.1f, "step 50 -> 150: the mean follows");
}

/* the share of n decisions, numbered from 0, that go to the GPU */
static double
gpu_share(const GpuirRouteMeans *m, bool cores_full, uint32_t n, uint32_t *every)
{
	uint32_t	g = 0;
	bool		gpu = gpuir_route_choose(m, cores_full, every);

	for (uint32_t d = 0; d < n; d++)
		g += gpuir_route_explore(gpu, *every, d);
	return (double) g / n;
}

static void
test_choose(void)
{
	GpuirRouteMeans m;
	uint32_t	every;
	bool		gpu;
	char		what[160];
	uint32_t	mark;

	/* first samples: the GPU first, then the CPU, no exploration counted */
	memset(&m, 0, sizeof(m));
	gpu = gpuir_route_choose(&m, false, &every);
	check(gpu && every == 0, "no samples: the GPU is tried");
	m.gpu_samples = GPUIR_ROUTE_MIN_SAMPLES - 1;
	gpu = gpuir_route_choose(&m, true, &every);
	check(gpu && every == 0, "too few GPU samples: the GPU is tried");
	m.gpu_samples = GPUIR_ROUTE_MIN_SAMPLES;
	m.gpu_us = 1e6f;
	gpu = gpuir_route_choose(&m, false, &every);
	check(!gpu && every == 0, "too few CPU samples: the CPU is tried");

	/* both sampled: the lower wall time, the other device 1 in 64 */
	m.cpu_samples = m.gpu_samples = 100;
	m.cpu_us = 100.0f;
	m.gpu_us = 50.0f;
	check(gpu_share(&m, false, 6400, &every) == 1.0 - 1.0 / 64, "GPU faster: 63 in 64 to the GPU");
	check(every == GPUIR_ROUTE_EXPLORE, "GPU faster by less than 3x: explore 1 in 64");
	m.gpu_us = 150.0f;
	check(gpu_share(&m, false, 6400, &every) == 1.0 / 64, "CPU faster: 1 in 64 to the GPU");

	/* far apart: the slow device 1 in 1024 */
	m.gpu_us = 1000.0f;
	check(gpu_share(&m, false, 10240, &every) == 10.0 / 10240, "GPU 10x slower: 1 in 1024");
	m.gpu_us = 10.0f;
	check(gpu_share(&m, false, 10240, &every) == 1.0 - 10.0 / 10240, "CPU 10x slower: 1 in 1024");

	/* far apart, but the slow device's mean rests on few samples: 1 in 64 */
	m.cpu_samples = GPUIR_ROUTE_TRUSTED - 1;
	check(gpu_share(&m, false, 6400, &every) == 1.0 - 1.0 / 64,
		  "CPU 10x slower on fewer than GPUIR_ROUTE_TRUSTED samples: 1 in 64");
	m.gpu_us = 1000.0f;
	check(gpu_share(&m, false, 10240, &every) == 10.0 / 10240,
		  "GPU 10x slower on enough samples, the CPU's few: 1 in 1024");
	m.gpu_samples = GPUIR_ROUTE_TRUSTED - 1;
	m.cpu_samples = 100;
	check(gpu_share(&m, false, 6400, &every) == 1.0 / 64,
		  "GPU 10x slower on fewer than GPUIR_ROUTE_TRUSTED samples: 1 in 64");
	m.gpu_samples = 100;

	/* oversubscribed cores: the device that costs the cores less, whatever the wall times */
	m.cpu_us = 100.0f;
	m.gpu_us = 500.0f;			/* a GPU round trip under load */
	m.gpu_cpu_us = 20.0f;		/* the backend's CPU time meanwhile */
	m.gpu_cpu_samples = 100;
	gpu = gpuir_route_choose(&m, true, &every);
	check(gpu, "cores full: GPU_CPU 20 us < CPU 100 us: the GPU, though its wall time is 500 us");
	gpu = gpuir_route_choose(&m, false, &every);
	check(!gpu, "cores free: by the wall times, the CPU");
	m.gpu_cpu_samples = 0;
	gpu = gpuir_route_choose(&m, true, &every);
	check(!gpu, "cores full but no GPU_CPU mean: by the wall times");
	m.gpu_cpu_samples = 100;
	m.gpu_cpu_us = 150.0f;
	gpu = gpuir_route_choose(&m, true, &every);
	check(!gpu, "cores full: GPU_CPU 150 us > CPU 100 us: the CPU");

	/*
	 * oversubscribed cores, exploration: "far" by the measures the choice
	 * compared, CPU against GPU_CPU (a long OR query on 64 clients: CPU
	 * 580 us, GPU round trip 3.5 ms in the queue, GPU_CPU 55 us)
	 */
	m.cpu_us = 580.0f;
	m.gpu_us = 3500.0f;
	m.gpu_cpu_us = 55.0f;
	gpu = gpuir_route_choose(&m, true, &every);
	check(gpu && every == GPUIR_ROUTE_EXPLORE_FAR,
		  "cores full: CPU 580 us > 3 x GPU_CPU 55 us: the GPU, the CPU tried 1 in 1024 (its wall time 3.5 ms does not count)");
	gpu = gpuir_route_choose(&m, false, &every);
	check(!gpu && every == GPUIR_ROUTE_EXPLORE_FAR,
		  "cores free: by the wall times the CPU, the GPU (6x its time) tried 1 in 1024");
	m.cpu_us = 120.0f;
	gpu = gpuir_route_choose(&m, true, &every);
	check(gpu && every == GPUIR_ROUTE_EXPLORE,
		  "cores full: CPU 120 us < 3 x GPU_CPU 55 us: the GPU, the CPU tried 1 in 64");
	m.cpu_us = 1.2f;
	m.gpu_cpu_us = 13.4f;
	gpu = gpuir_route_choose(&m, true, &every);
	check(!gpu && every == GPUIR_ROUTE_EXPLORE_FAR,
		  "cores full: GPU_CPU 13.4 us > 3 x CPU 1.2 us (no postings): the CPU, the GPU tried 1 in 1024");
	m.gpu_cpu_samples = GPUIR_ROUTE_TRUSTED - 1;
	gpu = gpuir_route_choose(&m, true, &every);
	check(!gpu && every == GPUIR_ROUTE_EXPLORE,
		  "the same with GPU_CPU on fewer than GPUIR_ROUTE_TRUSTED samples: 1 in 64");
	m.gpu_cpu_samples = 100;
	m.gpu_us = 500.0f;

	/*
	 * spill: cores full and the GPU chosen by the cores' cost, but the CPU
	 * answers before the GPU's round trip: a free CPU slot takes it
	 */
	m.gpu_cpu_us = 60.0f;
	m.cpu_us = 100.0f;
	m.gpu_us = 500.0f;
	gpu = gpuir_route_choose(&m, true, &every);
	check(gpu && gpuir_route_spill(&m, true, gpu),
		  "cores full, GPU by cores' cost (60 us), CPU 100 us < GPU round trip 500 us: spill to a free CPU slot");
	check(!gpuir_route_spill(&m, false, gpuir_route_choose(&m, false, &every)),
		  "cores free: no spill (the wall times decide)");
	m.gpu_cpu_us = 40.0f;
	check(!gpuir_route_spill(&m, true, gpuir_route_choose(&m, true, &every)),
		  "cores full, CPU 100 us > 2 x GPU query's CPU 40 us: no spill (it would cost the cores)");
	m.gpu_cpu_us = 60.0f;
	check(gpuir_route_spill(&m, true, gpuir_route_choose(&m, true, &every)),
		  "cores full, CPU 100 us < 2 x GPU query's CPU 60 us: spill");
	m.gpu_us = 80.0f;
	check(!gpuir_route_spill(&m, true, gpuir_route_choose(&m, true, &every)),
		  "cores full, GPU round trip 80 us < CPU 100 us: no spill");
	m.gpu_us = 500.0f;
	m.gpu_cpu_us = 150.0f;
	check(!gpuir_route_spill(&m, true, gpuir_route_choose(&m, true, &every)),
		  "cores full, the CPU chosen: nothing to spill");
	m.gpu_cpu_us = 20.0f;
	m.cpu_samples = GPUIR_ROUTE_MIN_SAMPLES - 1;
	check(!gpuir_route_spill(&m, true, true), "too few CPU samples: no spill");
	m.cpu_samples = 100;

	/* the cores' cost under oversubscription: the least mean over the load classes */
	{
		float		cpu[GPUIR_ROUTE_LOADS] = {4.6f, 4.8f, 74.0f};
		uint32_t	ncpu[GPUIR_ROUTE_LOADS] = {100, 100, 1162};
		float		gcpu[GPUIR_ROUTE_LOADS] = {0.0f, 0.0f, 14.5f};
		uint32_t	ngcpu[GPUIR_ROUTE_LOADS] = {0, 0, 4534};

		m.cpu_us = gpuir_route_least(cpu, ncpu, GPUIR_ROUTE_LOADS, cpu[2]);
		m.gpu_cpu_us = gpuir_route_least(gcpu, ngcpu, GPUIR_ROUTE_LOADS, gcpu[2]);
		m.gpu_us = 758.0f;
		m.cpu_samples = m.gpu_samples = m.gpu_cpu_samples = 1000;
		check(m.cpu_us == 4.6f && m.gpu_cpu_us == 14.5f,
			  "least over the loads: the light CPU mean, the only GPU_CPU mean");
		check(!gpuir_route_choose(&m, true, &every),
			  "1-2 posting AND, CPU 74 us when oversubscribed, 4.6 us light, GPU_CPU 14.5 us: the CPU");
		ncpu[0] = ncpu[1] = GPUIR_ROUTE_MIN_SAMPLES - 1;
		check(gpuir_route_least(cpu, ncpu, GPUIR_ROUTE_LOADS, cpu[2]) == 74.0f,
			  "classes with too few samples do not count");
		ncpu[2] = 0;
		check(gpuir_route_least(cpu, ncpu, GPUIR_ROUTE_LOADS, 9.0f) == 9.0f,
			  "none with enough samples: the fallback");
	}

	/* the load classes: the oversubscription mark, the light share */
	check(gpuir_route_load(16, 16, 16.0, 0.0) == GPUIR_ROUTE_BUSY,
		  "16 backends on 16 cores: busy, not oversubscribed");
	check(gpuir_route_load(17, 17, 16.0, 0.0) == GPUIR_ROUTE_OVERSUBSCRIBED,
		  "17 backends on 16 cores: oversubscribed");
	snprintf(what, sizeof(what), "mark at %.1f backends a core", GPUIR_ROUTE_SATURATED);
	mark = (uint32_t) (GPUIR_ROUTE_SATURATED * 2.0);
	check(gpuir_route_load(mark + 1, mark + 1, 2.0, 0.0) == GPUIR_ROUTE_OVERSUBSCRIBED &&
		  gpuir_route_load(mark, mark, 2.0, 0.0) != GPUIR_ROUTE_OVERSUBSCRIBED, what);
	check(gpuir_route_load(1, 1, 16.0, 0.0) == GPUIR_ROUTE_LIGHT &&
		  gpuir_route_load(4, 4, 16.0, 0.0) == GPUIR_ROUTE_LIGHT &&
		  gpuir_route_load(5, 5, 16.0, 0.0) == GPUIR_ROUTE_BUSY,
		  "16 cores: up to 4 backends light, 5 busy");
	check(gpuir_route_load(1, 1, 2.0, 0.0) == GPUIR_ROUTE_LIGHT &&
		  gpuir_route_load(2, 2, 2.0, 0.0) == GPUIR_ROUTE_BUSY,
		  "2 cores: one backend light (a single client), 2 busy");
	check(gpuir_route_load(1, 1, 1.0, 0.0) == GPUIR_ROUTE_LIGHT &&
		  gpuir_route_load(2, 2, 1.0, 0.0) == GPUIR_ROUTE_OVERSUBSCRIBED,
		  "1 core: one backend light, 2 oversubscribed");

	/* the clients: past clients_per_core a core, whatever the backends searching */
	check(gpuir_route_load(10, 33, 16.0, 2.0) == GPUIR_ROUTE_OVERSUBSCRIBED,
		  "33 clients on 16 cores at 2 a core, 10 searching: oversubscribed");
	check(gpuir_route_load(10, 32, 16.0, 2.0) == GPUIR_ROUTE_BUSY &&
		  gpuir_route_load(3, 32, 16.0, 2.0) == GPUIR_ROUTE_LIGHT,
		  "32 clients on 16 cores at 2 a core: the backends searching decide (busy, light)");
	check(gpuir_route_load(10, 64, 16.0, 0.0) == GPUIR_ROUTE_BUSY,
		  "clients_per_core 0: the clients do not count");
	check(gpuir_route_load(17, 1, 16.0, 2.0) == GPUIR_ROUTE_OVERSUBSCRIBED,
		  "17 searching on 16 cores: oversubscribed, whatever the clients");
	check(gpuir_route_load(1, 3, 1.0, 2.0) == GPUIR_ROUTE_OVERSUBSCRIBED &&
		  gpuir_route_load(1, 2, 1.0, 2.0) == GPUIR_ROUTE_LIGHT,
		  "1 core at 2 a core: 3 clients oversubscribed, 2 not");
	/* a client: a search begun within the window */
	check(!gpuir_route_recent(0, 5000000),
		  "no search yet (0): not a client");
	check(gpuir_route_recent(5000000 - GPUIR_ROUTE_CLIENTS_WINDOW_US, 5000000) &&
		  !gpuir_route_recent(5000000 - GPUIR_ROUTE_CLIENTS_WINDOW_US - 1, 5000000),
		  "a search begun up to the window ago: a client; one microsecond more: not");
	check(gpuir_route_recent(5000100, 5000000),
		  "a search begun after now (a clock read later): a client");
	check(!gpuir_route_recent(5000000 + 2 * GPUIR_ROUTE_CLIENTS_WINDOW_US, 5000000),
		  "a search begun further ahead than the window: not a client");

	/* the count: due once a millisecond, or after a claim far ahead */
	check(gpuir_route_clients_due(0, 5000000), "no count yet: due");
	check(!gpuir_route_clients_due(5000000 - GPUIR_ROUTE_CLIENTS_EVERY_US + 1, 5000000) &&
		  gpuir_route_clients_due(5000000 - GPUIR_ROUTE_CLIENTS_EVERY_US, 5000000),
		  "a count is due once GPUIR_ROUTE_CLIENTS_EVERY_US old");
	check(!gpuir_route_clients_due(5000100, 5000000) &&
		  gpuir_route_clients_due(5000000 + GPUIR_ROUTE_CLIENTS_WINDOW_US + 1, 5000000),
		  "a claim a little ahead (a clock read later): not due; further than the window: due");

	/* the published count: the count and its millisecond in one word */
	check(gpuir_route_clients_unpack(gpuir_route_clients_pack(5000000, 64), 5000000) == 64 &&
		  gpuir_route_clients_unpack(gpuir_route_clients_pack(5000000, 64), 5000000 + GPUIR_ROUTE_CLIENTS_WINDOW_US) == 64,
		  "64 clients counted now, read now and a window later: 64");
	check(gpuir_route_clients_unpack(gpuir_route_clients_pack(5000000, 64), 5000000 + GPUIR_ROUTE_CLIENTS_WINDOW_US + 1001) == 0,
		  "a count older than the window and its millisecond: 0 (no search began since)");
	check(gpuir_route_clients_unpack(gpuir_route_clients_pack(5000000 + 2 * GPUIR_ROUTE_CLIENTS_WINDOW_US, 64), 5000000) == 0,
		  "a count further ahead than the window: 0");
	check(gpuir_route_clients_unpack(0, 5000000) == 0, "no count yet: 0");
	check(gpuir_route_clients_unpack(gpuir_route_clients_pack(5000000, 5000000), 5000000) == GPUIR_ROUTE_COUNT_MAX,
		  "a count past the word's field: its largest value");
	check(gpuir_route_clients_unpack(gpuir_route_clients_pack((int64_t) 40 * 365 * 86400 * 1000000, 3),
									 (int64_t) 40 * 365 * 86400 * 1000000) == 3,
		  "forty years of uptime in the time field: the count kept");
}

/*
 * A closed loop: queries of random classes (postings 2^b), each routed by
 * the model of its class, each device's simulated cost fed back into that
 * class's mean with a little noise.  CPU: 0.05 us a posting (it grows with
 * the lists); GPU: 80 us fixed (the round trip) + 0.002 us a posting.  The
 * cheaper device of class b is the CPU below about 1,700 postings, the GPU
 * above; after a warm-up every class must send at least 95% of its
 * queries to its cheaper device.  Then the GPU becomes 4x slower (a loaded
 * service): the classes near the crossing must follow.
 */
typedef struct SimClass
{
	GpuirRouteMeans m;
	uint64_t	decisions;
	uint32_t	to_gpu,
				total;
} SimClass;

static double
sim_cost(bool gpu, uint64_t postings, double gpu_scale)
{
	double		noise = 0.9 + 0.2 * (rnd() % 1000) / 1000.0;

	return noise * (gpu ? gpu_scale * (80.0 + 0.002 * (double) postings)
					: 0.05 * (double) postings);
}

static void
sim_run(SimClass *cls, int nb, double gpu_scale, uint32_t nqueries, bool count)
{
	for (uint32_t q = 0; q < nqueries; q++)
	{
		int			b = 4 + (int) (rnd() % (uint32_t) (nb - 4));
		uint64_t	postings = (uint64_t) 1 << b;
		SimClass   *c = &cls[gpuir_route_bucket(postings)];
		uint32_t	every;
		bool		gpu = gpuir_route_choose(&c->m, false, &every);
		double		us;

		if (every > 0)
			gpu = gpuir_route_explore(gpu, every, c->decisions++);
		us = sim_cost(gpu, postings, gpu_scale);
		if (gpu)
		{
			c->m.gpu_us = gpuir_route_fold(c->m.gpu_us, c->m.gpu_samples, us);
			c->m.gpu_samples++;
		}
		else
		{
			c->m.cpu_us = gpuir_route_fold(c->m.cpu_us, c->m.cpu_samples, us);
			c->m.cpu_samples++;
		}
		if (count)
		{
			c->total++;
			c->to_gpu += gpu;
		}
	}
}

static void
sim_check(SimClass *cls, int nb, double gpu_scale, const char *phase)
{
	char		what[200];

	for (int b = 4; b < nb; b++)
	{
		SimClass   *c = &cls[b];
		uint64_t	postings = (uint64_t) 1 << b;
		double		cpu = 0.05 * (double) postings;
		double		gpu = gpu_scale * (80.0 + 0.002 * (double) postings);
		bool		gpu_cheaper = gpu < cpu;
		double		share = c->total ? (double) c->to_gpu / c->total : 0.0;
		double		right = gpu_cheaper ? share : 1.0 - share;
		uint32_t	total = c->total;

		c->to_gpu = c->total = 0;	/* the next phase counts afresh */
		/* classes within 25% of the crossing may go either way */
		if (fabs(gpu - cpu) < 0.25 * fmin(gpu, cpu))
			continue;
		snprintf(what, sizeof(what),
				 "%s: class of %llu postings (CPU %.0f us, GPU %.0f us): %.1f%% to the %s",
				 phase, (unsigned long long) postings, cpu, gpu, 100.0 * right,
				 gpu_cheaper ? "GPU" : "CPU");
		check(total > 0 && right >= 0.95, what);
	}
}

static void
test_closed_loop(void)
{
	enum
	{
	NB = 20};
	SimClass	cls[GPUIR_ROUTE_BUCKETS];

	memset(cls, 0, sizeof(cls));
	rnd_seed(12345);
	sim_run(cls, NB, 1.0, 20000, false);	/* warm-up */
	sim_run(cls, NB, 1.0, 200000, true);
	sim_check(cls, NB, 1.0, "steady");

	/* the GPU gets 4x slower: the classes must move within a few dozen queries each */
	sim_run(cls, NB, 4.0, 20000, false);
	sim_run(cls, NB, 4.0, 200000, true);
	sim_check(cls, NB, 4.0, "GPU 4x slower");
}

/*
 * Load classes: the same query classes under two loads that alternate
 * every 1,000 queries (a light one, GPU as above; a busy one whose GPU
 * wall time is 4x, the queue's wait), each load with its own means as
 * GpuirRouteToGpu keeps them.  Counted from the first query of each phase
 * after a warm-up of each, every class of each load must send 95% of its
 * queries to that load's cheaper device: no phase begins on means the
 * other load left.
 */
static void
test_load_classes(void)
{
	enum
	{
	NB = 20};
	static SimClass cls[2][GPUIR_ROUTE_BUCKETS];
	static const double gpu_scale[2] = {1.0, 4.0};

	memset(cls, 0, sizeof(cls));
	rnd_seed(54321);
	for (int l = 0; l < 2; l++)
		sim_run(cls[l], NB, gpu_scale[l], 20000, false);
	for (int phase = 0; phase < 200; phase++)
		sim_run(cls[phase % 2], NB, gpu_scale[phase % 2], 1000, true);
	sim_check(cls[0], NB, gpu_scale[0], "light load between busy phases");
	sim_check(cls[1], NB, gpu_scale[1], "busy load between light phases");
}

/*
 * A cell whose GPU mean a few unlucky times lifted tenfold (the first
 * queries of a 64-client run, measured in the light class): GPU 50 us,
 * CPU 200 us in truth, the GPU's mean 2,000 us on 20 samples.  The cell
 * must send 95% of its queries to the GPU again within 5,000 queries
 * (explored 1 in 64 while the GPU's mean rests on fewer than
 * GPUIR_ROUTE_TRUSTED samples, some 2,600 queries; 1 in 1,024 while the
 * mean is over 3x the CPU's would take some 22,000).  And
 * a time over a change of load class feeds no cell.
 */
static void
test_unlucky_mean(void)
{
	SimClass	c;
	uint32_t	q;
	char		what[160];

	memset(&c, 0, sizeof(c));
	rnd_seed(777);
	c.m.gpu_us = 2000.0f;
	c.m.gpu_samples = 20;
	c.m.cpu_us = 200.0f;
	c.m.cpu_samples = 1000;
	for (q = 0; q < 5000; q++)
	{
		uint32_t	every;
		bool		gpu = gpuir_route_choose(&c.m, false, &every);
		double		noise = 0.9 + 0.2 * (rnd() % 1000) / 1000.0;

		if (every > 0)
			gpu = gpuir_route_explore(gpu, every, c.decisions++);
		if (gpu)
		{
			c.m.gpu_us = gpuir_route_fold(c.m.gpu_us, c.m.gpu_samples, 50.0 * noise);
			c.m.gpu_samples++;
		}
		else
		{
			c.m.cpu_us = gpuir_route_fold(c.m.cpu_us, c.m.cpu_samples, 200.0 * noise);
			c.m.cpu_samples++;
		}
		if (q >= 4000)
		{
			c.total++;
			c.to_gpu += gpu;
		}
	}
	snprintf(what, sizeof(what),
			 "an unlucky GPU mean (2,000 us on 20 samples, 50 us in truth): %.1f%% of queries 4,000-5,000 to the GPU",
			 100.0 * c.to_gpu / c.total);
	check(c.to_gpu >= 0.95 * c.total, what);

	check(gpuir_route_same_load(GPUIR_ROUTE_LIGHT, GPUIR_ROUTE_LIGHT) &&
		  !gpuir_route_same_load(GPUIR_ROUTE_LIGHT, GPUIR_ROUTE_OVERSUBSCRIBED) &&
		  !gpuir_route_same_load(GPUIR_ROUTE_BUSY, GPUIR_ROUTE_LIGHT),
		  "a time feeds its cell only when the load class held");
}

int
main(void)
{
	test_bucket();
	test_fold();
	test_choose();
	test_closed_loop();
	test_load_classes();
	test_unlucky_mean();
	printf("route: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
