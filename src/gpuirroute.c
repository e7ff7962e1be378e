/*-------------------------------------------------------------------------
 *
 * gpuirroute.c
 *	  gpuir.device = auto: the cost model that sends each query to the
 *	  device expected to answer it first (Ding, He, Yan, Suel, WWW 2009,
 *	  section 9: CPU and GPU together, by cost; Huang et al. 2017:
 *	  load-balanced dispatch).
 *
 * The model is a table in the GPU service's shared memory, one cell per
 * (load class, mode class, k class, postings class):
 *	load class		the backends in a gpuir search when the query's search
 *					began (itself included) against the online processors:
 *					light (at most a quarter of them, at least 1), busy (up to
 *					GPUIR_ROUTE_SATURATED a processor), oversubscribed (more,
 *					or more clients, backends that began a search in the last
 *					10 ms, than gpuir.auto_clients_per_core a processor:
 *					gpuir_route_load).  A GPU request's wall time depends on
 *					it: a lone request waits for the worker to wake and runs
 *					in a batch of its own, one under load waits in the queue
 *					and shares a batch.  With one table for every load, means
 *					last fed by 64 clients (or, 2,047 postings: GPU 5.9 ms,
 *					CPU 0.13 ms) decided for one client, and the other way
 *					round (bench/results/2026-11-29-h200-auto-one-client.md);
 *	mode class		and (and, and_or), or, pruned (wand, bmw)
 *	k class			k <= 100, k > 100
 *	postings class	floor(log2(postings + 1)) of the postings the query's
 *					lists hold, 0 .. GPUIR_ROUTE_BUCKETS - 1
 * Each cell keeps exponentially weighted means (weight 1/GPUIR_ROUTE_EWMA)
 * of what the queries auto routed of that class cost (only those: with
 * gpuir.device = gpu the worker is never idle between one client's
 * requests, and one such query's wall time was half what the same class
 * cost when auto sent it to the GPU now and then, whose means that
 * underestimated; H200, bench/results/2026-11-29-h200-auto-learns.md):
 *	CPU		the CPU time of the CPU engine's run (the backend's own processor
 *			time: what it used, not how long it waited, where the clock
 *			counts so; in the device machine's sandbox a run preempted on
 *			oversubscribed cores counted its wait too, see below);
 *	GPU		the wall time of a GPU request as the backend saw it: the round
 *			trip (queueing and batching included), the candidates' merge and
 *			any fallback, divided among the request's queries;
 *	GPU_CPU	the backend's CPU time over the same span: what a GPU query
 *			costs the cores.
 * A query's times feed its cells only when the load class it began in
 * still holds when it ends (gpuir_route_same_load): the first queries of a
 * run of 64 clients begin while few backends search and wait in the queue
 * the others fill, and fed the light class GPU round trips 25-70 times a
 * lone one's (H200, bench/results/2026-11-30-h200-auto-ramp.md).
 *
 * The choice, for a query of a cell where both devices have samples:
 *	- the cores are oversubscribed (load class oversubscribed: by the
 *	  backends searching, or by the clients, which unlike the first do not
 *	  depend on where the queries went, gpuir_route_load): the device that
 *	  costs the cores less, CPU against GPU_CPU (each the least of the
 *	  query class's means over the load classes: preemptions lift a CPU
 *	  time read on oversubscribed cores, gpuir_route_least), whatever
 *	  gpuir.gpu_min_postings says and however many backends wait for the
 *	  GPU service.  Every query waits for a core then, the GPU service's
 *	  worker too, so the cores' time is what throughput follows: long OR
 *	  and BMW queries go to the GPU, short AND ones stay on the CPU, and
 *	  both devices work.  (Measured on an H100 with 16 cores and 64 pgbench
 *	  clients: by the wall times alone most queries went to the CPU, whose
 *	  CPU times stay low while the GPU round trips it slows down grow, for
 *	  half the GPU's throughput: bench/results/2026-11-25-h100-request-path.md.
 *	  A cap of 2 waiting backends per core, past which queries went to the
 *	  CPU, sent a quarter of the long OR queries there, whose cores the
 *	  worker then lacked: auto/best 0.62 with it, 0.85 without,
 *	  bench/results/2026-11-26-h100-router.md.  Oversubscribed at 1.5
 *	  backends a core, with 64 clients the count crossed the mark back and
 *	  forth, and below it a query went by wall times, where a GPU round
 *	  trip under load loses to the CPU run that then slows it: auto/best
 *	  0.78 on or and 0.76 on bmw; at 1.0, 0.96 and 1.05, and 0.98 on and
 *	  (1.23 before), H200, bench/results/2026-11-27-h200-sql-rtt.md.)
 *	  But a query so sent to the GPU whose cell's CPU time is below the GPU
 *	  request's wall time and below GPUIR_ROUTE_SPILL_COST times GPU_CPU
 *	  goes to the CPU engine instead while fewer than
 *	  gpuir.auto_cpu_slots backends run it (GpuirService->cpu_running; a
 *	  slot is reserved atomically before the query runs): on a free core
 *	  the CPU answers it first at little more cost to the cores, and the
 *	  bound keeps cores for the worker and the GPU queries' backends,
 *	  which the unbounded spill of the cap above took.  Both devices then
 *	  work at once.  (GPU alone with 64 clients leaves 11-13% of 16 cores
 *	  idle, the backends waiting for the service; the spill fills them:
 *	  H200, bench/results/2026-11-28-h200-router-spill.md.)
 *	- otherwise the device with the lower time, CPU against GPU: the answer
 *	  that comes first.
 * A device with fewer than GPUIR_ROUTE_MIN_SAMPLES samples in the cell is
 * tried first, and one query in GPUIR_ROUTE_EXPLORE of a cell goes to the
 * other device (one in GPUIR_ROUTE_EXPLORE_FAR when its mean is more than
 * GPUIR_ROUTE_FAR times higher and rests on GPUIR_ROUTE_TRUSTED samples: a
 * long query on the slow device costs many fast ones, but a mean of a few
 * samples may be a few unlucky ones), so that both means stay current.
 * Queries whose lists hold fewer than gpuir.gpu_min_postings postings
 * stay on the CPU.  Results are the same on either device, so routing
 * affects speed only.  The cells are read and written without locks: a
 * lost update of a mean costs nothing.
 * gpuir_route() shows the table.  The arithmetic (classes, means, the
 * choice and its exploration) is in gpuirroutemodel.h, as pure functions
 * that test/test_route.c checks with simulated device costs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <time.h>
#include <unistd.h>

#include "fmgr.h"
#include "funcapi.h"
#include "portability/instr_time.h"
#include "storage/ipc.h"
#include "utils/builtins.h"

#include "gpuirroutemodel.h"
#include "gpuirservice.h"

/* the load class of this backend's current search (GpuirRouteActiveBegin) */
static int	route_load = GPUIR_ROUTE_LIGHT;

/* online_cores: the online processors, read once */
static double
online_cores(void)
{
	static double ncores = 0;

	if (ncores <= 0)
		ncores = Max(1, (double) sysconf(_SC_NPROCESSORS_ONLN));
	return ncores;
}

/* route_mode_class: a mode's class: and (and, and_or), or, pruned (wand, bmw) */
static int
route_mode_class(GpuirMode mode)
{
	if (mode == GPUIR_MODE_AND || mode == GPUIR_MODE_AND_OR)
		return 0;
	return mode == GPUIR_MODE_OR ? 1 : 2;
}

/* route_cell_in: the cell of a query of this mode, k and postings in load class load */
static GpuirRouteCell *
route_cell_in(int load, GpuirMode mode, int k, uint64 postings)
{
	return &GpuirService->route[load][route_mode_class(mode)][k > 100 ? 1 : 0]
		[gpuir_route_bucket(postings)];
}

/*
 * route_cell: the cell of a query of this backend's current search (its
 * load class), or NULL without the GPU service
 */
static GpuirRouteCell *
route_cell(GpuirMode mode, int k, uint64 postings)
{
	if (GpuirService == NULL)
		return NULL;
	return route_cell_in(route_load, mode, k, postings);
}

static float4
read_mean(pg_atomic_uint32 *v)
{
	uint32		bits = pg_atomic_read_u32(v);
	float4		f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}

static void
write_mean(pg_atomic_uint32 *v, float4 f)
{
	uint32		bits;

	memcpy(&bits, &f, sizeof(bits));
	pg_atomic_write_u32(v, bits);
}

/* does this backend hold one of the CPU slots (GpuirService->cpu_running)? */
static bool cpu_slot_held = false;

/*
 * cpu_slot_limit: the most backends in a CPU engine run at once that a
 * spill may make (gpuir.auto_cpu_slots; -1: half the online processors,
 * at least 1: of 0, 8 and 12 on 16 cores, the one whose worst cell was
 * best, bench/results/2026-11-28-h200-router-spill.md)
 */
static uint32
cpu_slot_limit(double ncores)
{
	if (gpuir_auto_cpu_slots >= 0)
		return (uint32) gpuir_auto_cpu_slots;
	return (uint32) Max(1, (int) ncores / 2);
}

/*
 * cpu_slot_take: reserve a CPU slot for a spilled query; false, reserving
 * nothing, when every slot is taken (counting the CPU engine runs that the
 * means chose)
 */
static bool
cpu_slot_take(double ncores)
{
	uint32		limit = cpu_slot_limit(ncores);

	Assert(!cpu_slot_held);
	if (limit == 0)
		return false;
	if (pg_atomic_fetch_add_u32(&GpuirService->cpu_running, 1) >= limit)
	{
		pg_atomic_fetch_sub_u32(&GpuirService->cpu_running, 1);
		return false;
	}
	cpu_slot_held = true;
	return true;
}

/*
 * GpuirRouteCpuBegin / End: this backend starts / ends a CPU engine run
 * (any device setting, while the GPU service exists): counted in
 * GpuirService->cpu_running, which bounds auto's spills to the CPU.  Begin
 * keeps a slot that GpuirRouteToGpu reserved; GpuirRouteActiveEnd ends a
 * run that an error cut short.
 */
void
GpuirRouteCpuBegin(void)
{
	if (GpuirService == NULL || cpu_slot_held)
		return;
	pg_atomic_fetch_add_u32(&GpuirService->cpu_running, 1);
	cpu_slot_held = true;
}

void
GpuirRouteCpuEnd(void)
{
	if (GpuirService == NULL || !cpu_slot_held)
		return;
	pg_atomic_fetch_sub_u32(&GpuirService->cpu_running, 1);
	cpu_slot_held = false;
}

/*
 * least_over_loads: gpuir_route_least of the means of what (GPUIR_ROUTE_*)
 * of a query's class in every load class; fallback when none has enough
 * samples
 */
static float
least_over_loads(GpuirMode mode, int k, uint64 postings, int what, float fallback)
{
	float		mean[GPUIR_ROUTE_LOADS];
	uint32		samples[GPUIR_ROUTE_LOADS];

	for (int l = 0; l < GPUIR_ROUTE_LOADS; l++)
	{
		GpuirRouteCell *c = route_cell_in(l, mode, k, postings);

		mean[l] = read_mean(&c->mean_us[what]);
		samples[l] = pg_atomic_read_u32(&c->samples[what]);
	}
	return gpuir_route_least(mean, samples, GPUIR_ROUTE_LOADS, fallback);
}

/*
 * GpuirRouteToGpu: should a query of this mode, k and postings go to the
 * GPU service under gpuir.device = auto?  The caller has checked that the
 * service can take it.  Counts the choice in the cell.  *pred receives the
 * prediction for the device chosen: the measure the choice compared
 * (GPUIR_ROUTE_CPU, or _GPU, or _GPU_CPU with oversubscribed cores) and the
 * mean it compared; what is -1 where no mean chose (too few samples, below
 * gpuir.gpu_min_postings).  Pass it to GpuirRouteObserve.
 */
bool
GpuirRouteToGpu(GpuirMode mode, int k, uint64 postings, GpuirRoutePrediction *pred)
{
	GpuirRouteCell *c = route_cell(mode, k, postings);
	GpuirRouteMeans m;
	uint32		every;
	bool		gpu;
	bool		cores_full = (route_load == GPUIR_ROUTE_OVERSUBSCRIBED);

	pred->what = -1;
	pred->us = 0;
	if (c == NULL)
		return false;
	if (!cores_full && postings < (uint64) gpuir_gpu_min_postings)
		return false;
	m.cpu_us = read_mean(&c->mean_us[GPUIR_ROUTE_CPU]);
	m.gpu_us = read_mean(&c->mean_us[GPUIR_ROUTE_GPU]);
	m.gpu_cpu_us = read_mean(&c->mean_us[GPUIR_ROUTE_GPU_CPU]);
	m.cpu_samples = pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_CPU]);
	m.gpu_samples = pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_GPU]);
	m.gpu_cpu_samples = pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_GPU_CPU]);
	if (cores_full)
	{
		/* the cores' cost: each measure's least over the load classes */
		m.cpu_us = least_over_loads(mode, k, postings, GPUIR_ROUTE_CPU, m.cpu_us);
		m.gpu_cpu_us = least_over_loads(mode, k, postings, GPUIR_ROUTE_GPU_CPU, m.gpu_cpu_us);
	}
	gpu = gpuir_route_choose(&m, cores_full, &every);
	if (gpuir_route_spill(&m, cores_full, gpu) && cpu_slot_take(online_cores()))
		gpu = false;			/* a core is free for the CPU engine, which
								 * answers first there */
	/* explore: now and then the other device, to keep its mean current */
	else if (every > 0)
		gpu = gpuir_route_explore(gpu, every, pg_atomic_fetch_add_u64(&c->decisions, 1));
	pg_atomic_fetch_add_u64(&c->routed[gpu ? GPUIR_ROUTE_GPU : GPUIR_ROUTE_CPU], 1);
	if (!gpu && m.cpu_samples >= GPUIR_ROUTE_MIN_SAMPLES)
	{
		pred->what = GPUIR_ROUTE_CPU;
		pred->us = m.cpu_us;
	}
	else if (gpu && m.gpu_samples >= GPUIR_ROUTE_MIN_SAMPLES)
	{
		bool		by_cores = cores_full && m.gpu_cpu_samples > 0;

		pred->what = by_cores ? GPUIR_ROUTE_GPU_CPU : GPUIR_ROUTE_GPU;
		pred->us = by_cores ? m.gpu_cpu_us : m.gpu_us;
	}
	return gpu;
}

/*
 * GpuirRouteObserve: a query of this mode, k and postings cost us
 * microseconds of what (GPUIR_ROUTE_CPU, _GPU or _GPU_CPU): fold it into
 * the cell's mean of that; where pred (GpuirRouteToGpu's, or NULL) was in
 * that measure, count the prediction against us for gpuir_status().  Call
 * it before GpuirRouteActiveEnd: a time is kept only when the load class
 * the search began in still holds (gpuir_route_same_load).
 */
void
GpuirRouteObserve(GpuirMode mode, int k, uint64 postings, int what, double us,
				  const GpuirRoutePrediction *pred)
{
	GpuirRouteCell *c = route_cell(mode, k, postings);
	uint32		n;
	float4		mean;

	if (c == NULL)
		return;
	/* a time over a change of load class feeds no cell */
	if (!gpuir_route_same_load(route_load, GpuirRouteLoadNow()))
		return;
	n = pg_atomic_read_u32(&c->samples[what]);
	mean = gpuir_route_fold(read_mean(&c->mean_us[what]), n, us);
	write_mean(&c->mean_us[what], mean);
	if (n < PG_UINT32_MAX)
		pg_atomic_write_u32(&c->samples[what], n + 1);
	if (pred != NULL && pred->what == what)
	{
		pg_atomic_fetch_add_u64(&GpuirService->route_compared, 1);
		pg_atomic_fetch_add_u64(&GpuirService->route_predicted_ns,
								(uint64) Max(0.0, pred->us * 1000.0));
		pg_atomic_fetch_add_u64(&GpuirService->route_observed_ns,
								(uint64) Max(0.0, us * 1000.0));
	}
}

/* the cells of the table */
#define GPUIR_ROUTE_CELLS \
	(GPUIR_ROUTE_LOADS * GPUIR_ROUTE_MODES * GPUIR_ROUTE_KCLASSES * GPUIR_ROUTE_BUCKETS)

/* where a cell lies in the table: load, mode and k classes, postings class */
typedef struct RouteCellAt
{
	int			load;
	int			mode;
	int			kclass;
	int			bucket;
} RouteCellAt;

/*
 * route_cell_at: cell i of the table, 0 .. GPUIR_ROUTE_CELLS - 1 (its
 * classes in *at when not NULL)
 */
static GpuirRouteCell *
route_cell_at(int i, RouteCellAt *at)
{
	int			b = i % GPUIR_ROUTE_BUCKETS;
	int			kc = (i / GPUIR_ROUTE_BUCKETS) % GPUIR_ROUTE_KCLASSES;
	int			m = (i / (GPUIR_ROUTE_BUCKETS * GPUIR_ROUTE_KCLASSES)) % GPUIR_ROUTE_MODES;
	int			l = i / (GPUIR_ROUTE_BUCKETS * GPUIR_ROUTE_KCLASSES * GPUIR_ROUTE_MODES);

	if (at != NULL)
	{
		at->load = l;
		at->mode = m;
		at->kclass = kc;
		at->bucket = b;
	}
	return &GpuirService->route[l][m][kc][b];
}

/* GpuirRouteInit: the empty model, at shared memory initialization */
void
GpuirRouteInit(void)
{
	pg_atomic_init_u64(&GpuirService->route_compared, 0);
	pg_atomic_init_u64(&GpuirService->route_predicted_ns, 0);
	pg_atomic_init_u64(&GpuirService->route_observed_ns, 0);
	pg_atomic_init_u64(&GpuirService->clients_claim, 0);
	pg_atomic_init_u64(&GpuirService->clients_word, 0);
	for (int i = 0; i < GPUIR_ROUTE_CELLS; i++)
	{
		GpuirRouteCell *c = route_cell_at(i, NULL);

		for (int d = 0; d < GPUIR_ROUTE_MEASURES; d++)
		{
			pg_atomic_init_u32(&c->mean_us[d], 0);
			pg_atomic_init_u32(&c->samples[d], 0);
		}
		for (int d = 0; d < GPUIR_ROUTE_DEVICES; d++)
			pg_atomic_init_u64(&c->routed[d], 0);
		pg_atomic_init_u64(&c->decisions, 0);
	}
}

/*
 * GpuirRouteTotals: the queries auto sent to each device, and the mean
 * prediction against the mean observed time of those compared (0 / 0 when
 * none was), since the server started
 */
void
GpuirRouteTotals(GpuirRouteTotalsData *totals)
{
	memset(totals, 0, sizeof(*totals));
	for (int i = 0; i < GPUIR_ROUTE_CELLS; i++)
	{
		GpuirRouteCell *c = route_cell_at(i, NULL);

		totals->to_cpu += pg_atomic_read_u64(&c->routed[GPUIR_ROUTE_CPU]);
		totals->to_gpu += pg_atomic_read_u64(&c->routed[GPUIR_ROUTE_GPU]);
	}
	totals->compared = pg_atomic_read_u64(&GpuirService->route_compared);
	if (totals->compared > 0)
	{
		totals->predicted_us = (double) pg_atomic_read_u64(&GpuirService->route_predicted_ns) /
			1000.0 / totals->compared;
		totals->observed_us = (double) pg_atomic_read_u64(&GpuirService->route_observed_ns) /
			1000.0 / totals->compared;
	}
}

/* GpuirRouteCpuTime: this process's CPU time in microseconds */
double
GpuirRouteCpuTime(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0.0;
	return (double) ts.tv_sec * 1e6 + (double) ts.tv_nsec / 1e3;
}

/* is this backend counted in GpuirService->active? */
static bool active_counted = false;

/* active_exit: a backend leaving in the middle of a search (FATAL) */
static void
active_exit(int code, Datum arg)
{
	GpuirRouteActiveEnd();
}

/*
 * route_now: microseconds of PostgreSQL's instrumentation clock (monotonic,
 * the same in every process; a wall clock set back would have frozen the
 * count of clients), never 0 (a slot's "never searched")
 */
static int64
route_now(void)
{
	instr_time	t;

	INSTR_TIME_SET_CURRENT(t);
	return (int64) INSTR_TIME_GET_MICROSEC(t) + 1;
}

/*
 * route_clients: the backends that began a gpuir search within
 * GPUIR_ROUTE_CLIENTS_WINDOW_US of now (gpuir_route_recent), as last
 * counted (0 when that count is older than the window).  With count, when
 * a count is due (gpuir_route_clients_due), the backend whose
 * compare-and-swap of clients_claim wins counts them over every slot
 * (MaxBackends of them, at most once a millisecond for the whole server)
 * and publishes the count with its time in one word; the others, and
 * readers meanwhile, take the word as it was.
 */
static uint32
route_clients(int64 now, bool count)
{
	uint64		claim = pg_atomic_read_u64(&GpuirService->clients_claim);

	if (count && gpuir_route_clients_due((int64) claim, now) &&
		pg_atomic_compare_exchange_u64(&GpuirService->clients_claim, &claim, (uint64) now))
	{
		uint32		n = 0;

		for (int i = 0; i < GpuirService->nslots; i++)
			if (gpuir_route_recent((int64) pg_atomic_read_u64(&GpuirService->slots[i].search_began), now))
				n++;
		pg_atomic_write_u64(&GpuirService->clients_word, gpuir_route_clients_pack(now, n));
		return n;
	}
	return gpuir_route_clients_unpack(pg_atomic_read_u64(&GpuirService->clients_word), now);
}

/*
 * GpuirRouteLoadNow: the load class (gpuir_route_load) of the backends in a
 * gpuir search now and the clients last counted; GPUIR_ROUTE_LIGHT without
 * the GPU service
 */
int
GpuirRouteLoadNow(void)
{
	if (GpuirService == NULL)
		return GPUIR_ROUTE_LIGHT;
	return gpuir_route_load(pg_atomic_read_u32(&GpuirService->active),
							route_clients(route_now(), false),
							online_cores(), gpuir_auto_clients_per_core);
}

/*
 * GpuirRouteCpuRunsFew: do fewer than GPUIR_WAKE_CPU_SHARE (a quarter) of
 * the online processors run the CPU engine now (GpuirService->cpu_running)?  The GPU service
 * spreads its wake-ups over the answered backends only then
 * (gpuir.wake_fanout): a woken backend that has to wait for a core delays
 * the backends it wakes in turn.  False without the GPU service.
 */
bool
GpuirRouteCpuRunsFew(void)
{
	if (GpuirService == NULL)
		return false;
	return pg_atomic_read_u32(&GpuirService->cpu_running) < GPUIR_WAKE_CPU_SHARE * online_cores();
}

/*
 * GpuirRouteActiveBegin / End: a backend enters / leaves a gpuir search.
 * Begin notes when in the backend's slot (auto's clients) and sets the
 * search's load class from the count, this backend included, and the
 * clients (route_clients).
 * End must follow Begin also on error; a backend that exits in between
 * (FATAL, which unwinds no try block) is uncounted by a before_shmem_exit
 * callback, so the count never keeps a backend that left.
 */
void
GpuirRouteActiveBegin(void)
{
	static bool callback = false;
	int64		now;
	int			slot;

	if (GpuirService == NULL || active_counted)
		return;
	if (!callback)
	{
		before_shmem_exit(active_exit, (Datum) 0);
		callback = true;
	}
	now = route_now();
	slot = GpuirBackendSlot();
	if (slot >= 0 && slot < GpuirService->nslots)
		pg_atomic_write_u64(&GpuirService->slots[slot].search_began, (uint64) now);
	route_load = gpuir_route_load(pg_atomic_fetch_add_u32(&GpuirService->active, 1) + 1,
								  route_clients(now, true), online_cores(),
								  gpuir_auto_clients_per_core);
	active_counted = true;
}

void
GpuirRouteActiveEnd(void)
{
	GpuirRouteCpuEnd();
	if (GpuirService == NULL || !active_counted)
		return;
	pg_atomic_fetch_sub_u32(&GpuirService->active, 1);
	active_counted = false;
}

PG_FUNCTION_INFO_V1(gpuir_route);

/*
 * gpuir_route() RETURNS SETOF record (load text, mode text, k text,
 * postings_from bigint, cpu_mean_us float8, cpu_samples bigint,
 * gpu_mean_us float8, gpu_samples bigint, gpu_cpu_mean_us float8,
 * routed_cpu bigint, routed_gpu bigint): the cells of gpuir.device =
 * auto's cost model that have seen a query: load class (light, busy,
 * oversubscribed), mode class (and, or, pruned), k class ('<=100',
 * '>100'), the least postings of the class (its postings reach up to
 * twice that), each device's mean time and samples, the backend's mean CPU
 * time of a GPU query, and the queries auto sent to each device.  No rows
 * without the GPU service.
 */
Datum
gpuir_route(PG_FUNCTION_ARGS)
{
	static const char *const loads[GPUIR_ROUTE_LOADS] = {"light", "busy", "oversubscribed"};
	static const char *const modes[GPUIR_ROUTE_MODES] = {"and", "or", "pruned"};
	static const char *const ks[GPUIR_ROUTE_KCLASSES] = {"<=100", ">100"};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (GpuirService == NULL)
		return (Datum) 0;
	for (int i = 0; i < GPUIR_ROUTE_CELLS; i++)
	{
		RouteCellAt at;
		GpuirRouteCell *c = route_cell_at(i, &at);
		Datum		values[11];
		bool		nulls[11] = {false};
		uint32		nc = pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_CPU]);
		uint32		ng = pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_GPU]);
		uint64		rc = pg_atomic_read_u64(&c->routed[GPUIR_ROUTE_CPU]);
		uint64		rg = pg_atomic_read_u64(&c->routed[GPUIR_ROUTE_GPU]);

		if (nc == 0 && ng == 0 && rc == 0 && rg == 0)
			continue;
		values[0] = CStringGetTextDatum(loads[at.load]);
		values[1] = CStringGetTextDatum(modes[at.mode]);
		values[2] = CStringGetTextDatum(ks[at.kclass]);
		values[3] = Int64GetDatum(at.bucket == 0 ? 0 : ((int64) 1 << at.bucket) - 1);
		values[4] = Float8GetDatum(read_mean(&c->mean_us[GPUIR_ROUTE_CPU]));
		nulls[4] = (nc == 0);
		values[5] = Int64GetDatum((int64) nc);
		values[6] = Float8GetDatum(read_mean(&c->mean_us[GPUIR_ROUTE_GPU]));
		nulls[6] = (ng == 0);
		values[7] = Int64GetDatum((int64) ng);
		values[8] = Float8GetDatum(read_mean(&c->mean_us[GPUIR_ROUTE_GPU_CPU]));
		nulls[8] = (pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_GPU_CPU]) == 0);
		values[9] = Int64GetDatum((int64) rc);
		values[10] = Int64GetDatum((int64) rg);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
