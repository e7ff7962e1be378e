/*-------------------------------------------------------------------------
 *
 * gpuir_search_trace.cuh
 *	  Stage times of gpuir_cuda_search_batch, for the latency of small
 *	  batches (issue "GPU engine": where one query's call goes).  Compiled
 *	  only with -DGPUIR_SEARCH_TRACE (bench/engine.mk TRACE=1 builds
 *	  build/engine_bench_trace that way); production builds define the
 *	  hooks of gpuir_search.cu as nothing.
 *
 * For each call of GPUIR_SEARCH_TRACE_NQ queries (environment, default 1)
 * it records host timestamps at the stages of search_start (from just
 * after its arguments' validation) and search_finish and CUDA events on the
 * call's stream between the copies and kernels, and at exit prints, per
 * (mode of the first query, kmax), the calls traced and each stage's
 * median and mean in microseconds, to stderr.  The events cost the host a
 * few microseconds a call and the stream a little, and an event between
 * two kernels probably keeps the second from starting early as a
 * programmatic dependent launch (SearchLauncher): read the traced stages
 * as those of kernels launched in turn.  Compare the traced build's batch times with an
 * untraced build's in the same run.  The record is global and unlocked
 * and holds one pending call: one thread's calls, one job at a time
 * (engine_bench on one device; not the worker's two jobs in flight).  A
 * search again of spilled queries (search_again) is traced as a call of
 * its own, its time outside the first call's total; a call that fails is
 * not counted (the next call's start drops its record).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_SEARCH_TRACE_CUH
#define GPUIR_SEARCH_TRACE_CUH

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#define GPUIR_TRACE_MAX_EVENTS 16

struct GpuirTraceCall
{
	bool		on;				/* this call is traced */
	int			key;			/* mode * 10000 + kmax */
	double		h0;				/* search_start's entry */
	std::vector<std::pair<std::string, double>> host;	/* stage, end time */
	cudaEvent_t ev[GPUIR_TRACE_MAX_EVENTS];
	const char *evname[GPUIR_TRACE_MAX_EVENTS];
	int			nev;
};

struct GpuirTrace
{
	bool		init = false;
	uint32_t	nq = 1;
	cudaEvent_t pool[GPUIR_TRACE_MAX_EVENTS];
	GpuirTraceCall call;
	/* key -> stage -> samples (us) */
	std::map<int, std::map<std::string, std::vector<double>>> samples;
	std::map<int, std::vector<std::string>> order;	/* stages in first-seen order */
};

static GpuirTrace gpuir_trace;

static double
gpuir_trace_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static void
gpuir_trace_add(int key, const std::string &stage, double us)
{
	std::vector<std::string> &o = gpuir_trace.order[key];

	if (std::find(o.begin(), o.end(), stage) == o.end())
		o.push_back(stage);
	gpuir_trace.samples[key][stage].push_back(us);
}

static void
gpuir_trace_report(void)
{
	for (auto &kv : gpuir_trace.samples)
	{
		const int	key = kv.first;

		fprintf(stderr, "trace: mode %d k %d, batches of %u queries: %zu calls\n",
				key / 10000, key % 10000, gpuir_trace.nq, kv.second["total"].size());
		for (const std::string &stage : gpuir_trace.order[key])
		{
			std::vector<double> v = kv.second[stage];
			double		sum = 0;

			std::sort(v.begin(), v.end());
			for (double x : v)
				sum += x;
			fprintf(stderr, "trace:   %-28s median %8.1f us  mean %8.1f us  (%zu)\n",
					stage.c_str(), v[v.size() / 2], sum / v.size(), v.size());
		}
	}
}

/* search_start's entry: trace this call? */
static void
gpuir_trace_start(uint32_t nqueries, const gpuir_cuda_query *queries, uint32_t kmax)
{
	GpuirTraceCall *c = &gpuir_trace.call;

	if (!gpuir_trace.init)
	{
		const char *e = getenv("GPUIR_SEARCH_TRACE_NQ");

		gpuir_trace.init = true;
		if (e != NULL)
			gpuir_trace.nq = (uint32_t) atoi(e);
		for (int i = 0; i < GPUIR_TRACE_MAX_EVENTS; i++)
			cudaEventCreate(&gpuir_trace.pool[i]);
		atexit(gpuir_trace_report);
	}
	c->on = (nqueries == gpuir_trace.nq && nqueries > 0);
	if (!c->on)
		return;
	c->key = queries[0].mode * 10000 + (int) kmax;
	c->host.clear();
	c->nev = 0;
	c->h0 = gpuir_trace_now_us();
}

/* a host stage of the traced call ends now */
static void
gpuir_trace_host(const char *stage)
{
	if (gpuir_trace.call.on)
		gpuir_trace.call.host.emplace_back(std::string("host ") + stage, gpuir_trace_now_us());
}

/* a device stage ends here on stream s (the first event marks the start) */
static void
gpuir_trace_event(const char *stage, cudaStream_t s)
{
	GpuirTraceCall *c = &gpuir_trace.call;

	if (!c->on || c->nev >= GPUIR_TRACE_MAX_EVENTS)
		return;
	c->ev[c->nev] = gpuir_trace.pool[c->nev];
	c->evname[c->nev] = stage;
	cudaEventRecord(c->ev[c->nev], s);
	c->nev++;
}

/* search_finish's end: record the call's stages (the stream is idle) */
static void
gpuir_trace_finish(void)
{
	GpuirTraceCall *c = &gpuir_trace.call;
	double		prev = c->h0;

	if (!c->on)
		return;
	c->on = false;
	for (auto &h : c->host)
	{
		gpuir_trace_add(c->key, h.first, h.second - prev);
		prev = h.second;
	}
	gpuir_trace_add(c->key, "total", prev - c->h0);
	for (int i = 1; i < c->nev; i++)
	{
		float		ms = 0;

		if (cudaEventElapsedTime(&ms, c->ev[i - 1], c->ev[i]) == cudaSuccess)
			gpuir_trace_add(c->key, std::string("gpu ") + c->evname[i], ms * 1e3);
	}
	if (c->nev > 1)
	{
		float		ms = 0;

		if (cudaEventElapsedTime(&ms, c->ev[0], c->ev[c->nev - 1]) == cudaSuccess)
			gpuir_trace_add(c->key, "gpu all", ms * 1e3);
	}
	(void) cudaGetLastError();
}

#define GPUIR_TRACE_START(nq, q, k)	gpuir_trace_start(nq, q, k)
#define GPUIR_TRACE_HOST(stage)		gpuir_trace_host(stage)
#define GPUIR_TRACE_EVENT(stage, s)	gpuir_trace_event(stage, s)
#define GPUIR_TRACE_FINISH()		gpuir_trace_finish()

#endif							/* GPUIR_SEARCH_TRACE_CUH */
