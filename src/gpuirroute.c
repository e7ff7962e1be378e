/*-------------------------------------------------------------------------
 *
 * gpuirroute.c
 *	  gpuir.device = auto: the cost model that sends each query to the
 *	  device expected to answer it first (Ding, He, Yan, Suel, WWW 2009,
 *	  section 9: CPU and GPU together, by cost; Huang et al. 2017:
 *	  load-balanced dispatch).
 *
 * The model is a table in the GPU service's shared memory, one cell per
 * (mode class, k class, postings class):
 *	mode class		and (and, and_or), or, pruned (wand, bmw)
 *	k class			k <= 100, k > 100
 *	postings class	floor(log2(postings + 1)) of the postings the query's
 *					lists hold, 0 .. GPUIR_ROUTE_BUCKETS - 1
 * Each cell keeps, per device, an exponentially weighted mean (weight
 * 1/GPUIR_ROUTE_EWMA) of the wall time of the queries of that class that
 * the device answered, as the backend saw it: the CPU engine's run, or the
 * GPU request's round trip (queueing and batching included) and the
 * candidates' merge, divided among the request's queries.  Both means
 * therefore follow the load: a longer GPU queue or busier cores make that
 * device's times grow, and the traffic moves to the other, so that under
 * load both devices work at once.
 *
 * A query goes to the device whose mean is lower.  A device with fewer
 * than GPUIR_ROUTE_MIN_SAMPLES samples in the cell is tried first, and
 * one query in GPUIR_ROUTE_EXPLORE of a cell goes to the other device, so
 * that both means stay current.  Queries whose lists hold fewer than
 * gpuir.gpu_min_postings postings stay on the CPU.  Results are the same on
 * either device, so routing affects speed only.  The cells are read and
 * written without locks: a lost update of a mean costs nothing.
 * gpuir_route() shows the table.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"

#include "gpuirservice.h"

#define GPUIR_ROUTE_EWMA			16	/* a new time weighs 1/16 */
#define GPUIR_ROUTE_MIN_SAMPLES		4
#define GPUIR_ROUTE_EXPLORE			32

/* route_cell: the cell of a query, or NULL without the GPU service */
static GpuirRouteCell *
route_cell(GpuirMode mode, int k, uint64 postings)
{
	int			m,
				b = 0;

	if (GpuirService == NULL)
		return NULL;
	if (mode == GPUIR_MODE_AND || mode == GPUIR_MODE_AND_OR)
		m = 0;
	else if (mode == GPUIR_MODE_OR)
		m = 1;
	else
		m = 2;
	while (b < GPUIR_ROUTE_BUCKETS - 1 && (postings + 1) >> (b + 1) != 0)
		b++;
	return &GpuirService->route[m][k > 100 ? 1 : 0][b];
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

/*
 * GpuirRouteToGpu: should a query of this mode, k and postings go to the
 * GPU service under gpuir.device = auto?  The caller has checked that the
 * service can take it.  Counts the choice in the cell.
 */
bool
GpuirRouteToGpu(GpuirMode mode, int k, uint64 postings)
{
	GpuirRouteCell *c = route_cell(mode, k, postings);
	uint32		ncpu,
				ngpu;
	bool		gpu;

	if (c == NULL || postings < (uint64) gpuir_gpu_min_postings)
		return false;
	ncpu = pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_CPU]);
	ngpu = pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_GPU]);
	if (ngpu < GPUIR_ROUTE_MIN_SAMPLES)
		gpu = true;
	else if (ncpu < GPUIR_ROUTE_MIN_SAMPLES)
		gpu = false;
	else
	{
		gpu = read_mean(&c->mean_us[GPUIR_ROUTE_GPU]) < read_mean(&c->mean_us[GPUIR_ROUTE_CPU]);
		/* explore: now and then the other device, to keep its mean current */
		if (pg_atomic_fetch_add_u64(&c->decisions, 1) % GPUIR_ROUTE_EXPLORE == 0)
			gpu = !gpu;
	}
	pg_atomic_fetch_add_u64(&c->routed[gpu ? GPUIR_ROUTE_GPU : GPUIR_ROUTE_CPU], 1);
	return gpu;
}

/*
 * GpuirRouteObserve: a query of this mode, k and postings took us
 * microseconds on the device (GPUIR_ROUTE_CPU or _GPU): fold it into the
 * cell's mean for that device.
 */
void
GpuirRouteObserve(GpuirMode mode, int k, uint64 postings, int device, double us)
{
	GpuirRouteCell *c = route_cell(mode, k, postings);
	uint32		n;
	float4		mean;

	if (c == NULL)
		return;
	n = pg_atomic_read_u32(&c->samples[device]);
	mean = read_mean(&c->mean_us[device]);
	if (n == 0)
		mean = (float4) us;
	else
		mean += ((float4) us - mean) / (float4) Min(n + 1, GPUIR_ROUTE_EWMA);
	write_mean(&c->mean_us[device], mean);
	if (n < PG_UINT32_MAX)
		pg_atomic_write_u32(&c->samples[device], n + 1);
}

PG_FUNCTION_INFO_V1(gpuir_route);

/*
 * gpuir_route() RETURNS SETOF record (mode text, k text, postings_from
 * bigint, cpu_mean_us float8, cpu_samples bigint, gpu_mean_us float8,
 * gpu_samples bigint, routed_cpu bigint, routed_gpu bigint): the cells of
 * gpuir.device = auto's cost model that have seen a query: mode class
 * (and, or, pruned), k class ('<=100', '>100'), the least postings of the
 * class (its postings reach up to twice that), each device's mean time and
 * samples, and the queries auto sent to each.  No rows without the GPU
 * service.
 */
Datum
gpuir_route(PG_FUNCTION_ARGS)
{
	static const char *const modes[3] = {"and", "or", "pruned"};
	static const char *const ks[2] = {"<=100", ">100"};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	if (GpuirService == NULL)
		return (Datum) 0;
	for (int m = 0; m < 3; m++)
		for (int kc = 0; kc < 2; kc++)
			for (int b = 0; b < GPUIR_ROUTE_BUCKETS; b++)
			{
				GpuirRouteCell *c = &GpuirService->route[m][kc][b];
				Datum		values[9];
				bool		nulls[9] = {false};
				uint32		nc = pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_CPU]);
				uint32		ng = pg_atomic_read_u32(&c->samples[GPUIR_ROUTE_GPU]);
				uint64		rc = pg_atomic_read_u64(&c->routed[GPUIR_ROUTE_CPU]);
				uint64		rg = pg_atomic_read_u64(&c->routed[GPUIR_ROUTE_GPU]);

				if (nc == 0 && ng == 0 && rc == 0 && rg == 0)
					continue;
				values[0] = CStringGetTextDatum(modes[m]);
				values[1] = CStringGetTextDatum(ks[kc]);
				values[2] = Int64GetDatum(b == 0 ? 0 : ((int64) 1 << b) - 1);
				values[3] = Float8GetDatum(read_mean(&c->mean_us[GPUIR_ROUTE_CPU]));
				nulls[3] = (nc == 0);
				values[4] = Int64GetDatum((int64) nc);
				values[5] = Float8GetDatum(read_mean(&c->mean_us[GPUIR_ROUTE_GPU]));
				nulls[5] = (ng == 0);
				values[6] = Int64GetDatum((int64) ng);
				values[7] = Int64GetDatum((int64) rc);
				values[8] = Int64GetDatum((int64) rg);
				tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
			}
	return (Datum) 0;
}
