/*-------------------------------------------------------------------------
 *
 * gpu.c
 *	  engine_bench: the GPU part (steps 1 and 5 to 8 of the header of
 *	  bench/engine_bench.c): the device and its copy bandwidth, the upload,
 *	  the exactness check against the CPU reference, the timing grid and
 *	  its report (table and TSV); also the query logs' statistics.
 *
 *-------------------------------------------------------------------------
 */
#include "engine.h"

#ifdef ENGINE_BENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- query statistics and batches ---------- */

typedef struct LogStats
{
	double		mean_terms;
	double		mean_present;
	double		mean_postings;
	double		mean_bytes;
	uint64_t	no_match_or;	/* queries with no present term */
	uint64_t	absent_terms;	/* in the vocabulary but never generated */
} LogStats;

static void
log_stats(const QLog *l, const Segment *s, LogStats *st)
{
	uint64_t	terms = 0,
				present = 0,
				post = 0,
				bytes = 0;

	memset(st, 0, sizeof(*st));
	for (uint32_t q = 0; q < l->nq; q++)
	{
		uint32_t	np = 0;

		for (uint32_t i = l->qoff[q]; i < l->qoff[q + 1]; i++)
		{
			uint32_t	v = l->qterm[i];

			terms++;
			if (v != NO_TERM && s->npost[v] > 0)
			{
				np++;
				post += s->npost[v];
				bytes += s->tbytes[v];
			}
			else if (v != NO_TERM)
				st->absent_terms++;
		}
		present += np;
		if (np == 0)
			st->no_match_or++;
	}
	if (l->nq > 0)
	{
		st->mean_terms = (double) terms / l->nq;
		st->mean_present = (double) present / l->nq;
		st->mean_postings = (double) post / l->nq;
		st->mean_bytes = (double) bytes / l->nq;
	}
}

void
print_query_stats(const QLog *logs, int nlogs, const Segment *s)
{
	for (int i = 0; i < nlogs; i++)
	{
		LogStats	ls;

		log_stats(&logs[i], s, &ls);
		printf("queries %s: %u queries (%" PRIu64 " lines; dropped %" PRIu64 " without lexeme, %"
			   PRIu64 " over %d lexemes), %.2f terms/query, %.2f with a list; %" PRIu64
			   " lexemes not in the vocabulary, %" PRIu64 " never generated; %" PRIu64
			   " queries with no list; per query %.2f M postings, %.2f MB of blocks\n",
			   logs[i].name, logs[i].nq, logs[i].lines, logs[i].dropped_empty,
			   logs[i].dropped_long, MAX_QUERY_TERMS, ls.mean_terms, ls.mean_present,
			   logs[i].not_in_vocab, ls.absent_terms, ls.no_match_or, ls.mean_postings / 1e6,
			   ls.mean_bytes / 1e6);
	}
}

typedef struct Batch
{
	gpuir_cuda_query *q;
	gpuir_cuda_term *t;
	uint32_t	nq;
	uint32_t	nt;
	uint32_t	qcap;
	uint64_t	tcap;
	uint64_t	postings;
	uint64_t	blocks;
	uint64_t	bytes;
	uint32_t   *docids;
	float	   *scores;
	uint32_t   *counts;
	size_t		outcap;
} Batch;

/* queries start, start + 1, ... (mod nq) of l, B of them, as one batch */
static void
batch_make(Batch *b, const QLog *l, const Segment *s, uint64_t start, uint32_t B, uint32_t k,
		   int mode)
{
	b->nq = 0;
	b->nt = 0;
	b->postings = 0;
	b->blocks = 0;
	b->bytes = 0;
	if (B > b->qcap)
	{
		b->qcap = B;
		b->q = xrealloc(b->q, sizeof(gpuir_cuda_query) * B);
	}
	for (uint32_t i = 0; i < B; i++)
	{
		uint32_t	qi = (uint32_t) ((start + i) % l->nq);
		uint32_t	n = l->qoff[qi + 1] - l->qoff[qi];
		gpuir_cuda_query *q = &b->q[b->nq++];

		if (b->nt + n > b->tcap)
		{
			b->tcap = b->tcap * 2 + n + 1024;
			b->t = xrealloc(b->t, sizeof(gpuir_cuda_term) * b->tcap);
		}
		q->first_term = b->nt;
		q->nterms = n;
		q->k = k;
		q->mode = mode;
		for (uint32_t j = 0; j < n; j++)
		{
			uint32_t	v = l->qterm[l->qoff[qi] + j];
			gpuir_cuda_term *t = &b->t[b->nt++];

			if (v == NO_TERM || s->npost[v] == 0)
			{
				t->first_block = 0;
				t->nblocks = 0;
				t->npostings = 0;
				t->idf = s->idf_absent;
				continue;
			}
			t->first_block = s->first_block[v];
			t->nblocks = seg_nblocks(s, v);
			t->npostings = s->npost[v];
			t->idf = s->idf[v];
			b->postings += t->npostings;
			b->blocks += t->nblocks;
			b->bytes += s->tbytes[v];
		}
	}
	if ((size_t) B * k > b->outcap)
	{
		b->outcap = (size_t) B * k;
		b->docids = xrealloc(b->docids, sizeof(uint32_t) * b->outcap);
		b->scores = xrealloc(b->scores, sizeof(float) * b->outcap);
	}
	b->counts = xrealloc(b->counts, sizeof(uint32_t) * (b->qcap ? b->qcap : 1));
}

static void
batch_free(Batch *b)
{
	free(b->q);
	free(b->t);
	free(b->docids);
	free(b->scores);
	free(b->counts);
	memset(b, 0, sizeof(*b));
}

/* ---------- device ---------- */

/*
 * set while check_config searches: the batch rule off, so that the check's
 * BMW queries run the BMW kernels whatever its batch's size (a check batch
 * of 50 queries over a small corpus fills fewer waves than the rule's
 * limit and would run as OR, leaving the timed batches' BMW unchecked);
 * the rule's OR output is OR's, which OR's check covers.  Set by the main
 * thread between jobs; the device threads read it after the job barrier.
 */
static int checking_bmw_kernels = 0;

#ifdef ENGINE_BENCH_HAVE_CUDA
/* --maxscore-share and --maxscore-dense, -1 for the library's defaults (set in each device thread) */
static int64_t maxscore_share = -1;
static int64_t maxscore_dense = -1;
static int64_t bmw_batch_waves = -1,
			bmw_batch_total = -1;
static int64_t decode_budget = -1;	/* --decode-budget */
static int64_t decode_cache = -1;	/* --decode-cache */

/* device-to-device cudaMemcpy bandwidth; returns 0 or prints why not */
static int
measure_copy(GpuInfo *g, size_t bytes, int reps)
{
	void	   *a = NULL,
			   *b = NULL;
	cudaEvent_t e0 = NULL,
				e1 = NULL;
	float		ms = 0;
	cudaError_t e;

	if ((e = cudaMalloc(&a, bytes)) != cudaSuccess ||
		(e = cudaMalloc(&b, bytes)) != cudaSuccess ||
		(e = cudaMemset(a, 1, bytes)) != cudaSuccess ||
		(e = cudaMemset(b, 0, bytes)) != cudaSuccess ||
		(e = cudaEventCreate(&e0)) != cudaSuccess ||
		(e = cudaEventCreate(&e1)) != cudaSuccess ||
		(e = cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice)) != cudaSuccess ||
		(e = cudaEventRecord(e0, 0)) != cudaSuccess)
		goto fail;
	for (int i = 0; i < reps; i++)
		if ((e = cudaMemcpyAsync(i % 2 ? a : b, i % 2 ? b : a, bytes, cudaMemcpyDeviceToDevice,
								 0)) != cudaSuccess)
			goto fail;
	if ((e = cudaEventRecord(e1, 0)) != cudaSuccess ||
		(e = cudaEventSynchronize(e1)) != cudaSuccess ||
		(e = cudaEventElapsedTime(&ms, e0, e1)) != cudaSuccess)
		goto fail;
	g->copy_one = (double) bytes * reps / (ms * 1e-3) / 1e9;
	g->copy_rw = 2.0 * g->copy_one;
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	cudaFree(a);
	cudaFree(b);
	return 0;
fail:
	printf("copy bandwidth: not measured (%s: %s)\n", cudaGetErrorName(e), cudaGetErrorString(e));
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	if (a)
		cudaFree(a);
	if (b)
		cudaFree(b);
	(void) cudaGetLastError();
	return -1;
}

static void
gpu_mem_line(const char *when)
{
	size_t		fr = 0,
				tot = 0;

	if (cudaMemGetInfo(&fr, &tot) == cudaSuccess)
		printf("GPU memory %s: %.2f GB used of %.2f GB\n", when, gb(tot - fr), gb(tot));
}
#endif

int
probe_device(const Options *o, GpuInfo *g, char *nodev, size_t nodevlen)
{
	int			ndev = 0;
	int			have_gpu;
	gpuir_cuda_status st;

	memset(g, 0, sizeof(*g));
	st = gpuir_cuda_device_count(&ndev);
	have_gpu = (st == GPUIR_CUDA_OK && ndev > 0);
	if (have_gpu)
		st = gpuir_cuda_device_info(0, g->name, sizeof(g->name), &g->mem, &g->major, &g->minor);
	if (!have_gpu || st != GPUIR_CUDA_OK)
	{
		if (st == GPUIR_CUDA_NO_DEVICE && gpuir_cuda_last_error_detail()[0] != '\0')
			snprintf(nodev, nodevlen, "%s", gpuir_cuda_last_error_detail());
		else
			snprintf(nodev, nodevlen, "%s%s%s", gpuir_cuda_status_string(st),
					 gpuir_cuda_last_error_detail()[0] ? ": " : "",
					 gpuir_cuda_last_error_detail());
		snprintf(g->name, sizeof(g->name), "none");
		return 0;
	}
	printf("device: %s (device 0 of %d), compute capability %d.%d, %.2f GB\n", g->name, ndev,
		   g->major, g->minor, gb(g->mem));
#ifdef ENGINE_BENCH_HAVE_CUDA
	maxscore_share = o->maxscore;
	maxscore_dense = o->maxscore_dense;
	bmw_batch_waves = o->bmw_batch_waves;
	bmw_batch_total = o->bmw_batch_total;
	decode_budget = o->decode_budget;
	decode_cache = o->decode_cache;
	if (o->copy_mib > 0 && measure_copy(g, (size_t) o->copy_mib << 20, 10) == 0)
		printf("copy bandwidth: device-to-device cudaMemcpy of %u MiB x 10: %.1f GB/s counting "
			   "bytes read + bytes written (2 x bytes / time; the %%copy columns use it), "
			   "%.1f GB/s counting bytes copied / time\n", o->copy_mib, g->copy_rw, g->copy_one);
#else
	(void) o;
#endif
	return 1;
}

/* ---------- several devices (--devices N) ---------- */

/*
 * A batch is split over the devices in contiguous query ranges (query q to
 * device q * N / B), as the GPU service spreads whole requests over its
 * devices: every device holds the whole segment and runs its share at the
 * same time.  Device 0's share runs in the calling thread, device d's
 * (d >= 1) in a host thread of its own that made d its current device (the
 * CUDA layer's workspace is per thread, so each device keeps its own).
 */
typedef struct DevJob
{
	const gpuir_cuda_segment *dev;
	const gpuir_cuda_scoring *sc;
	const gpuir_cuda_query *q;
	uint32_t	nq;
	const gpuir_cuda_term *t;
	uint64_t	nt;
	uint32_t	kmax;
	uint32_t   *docids;
	float	   *scores;
	uint32_t   *counts;
	gpuir_cuda_search_stats *stats;	/* or NULL */
	gpuir_cuda_status rc;
} DevJob;

static int	ndevices = 1;
static int	split_docs = 0;		/* --split docs */
static gpuir_cuda_segment devsegs[ENGINE_MAX_DEVICES];	/* [0] unused: the caller's */
static gpuir_cuda_segment windows[ENGINE_MAX_DEVICES];	/* --split docs: device d's window */
static uint32_t *part_docids[ENGINE_MAX_DEVICES];	/* --split docs: each device's rows */
static float *part_scores[ENGINE_MAX_DEVICES];
static uint32_t *part_counts[ENGINE_MAX_DEVICES];
static size_t part_cap = 0;		/* rows x kmax the part buffers hold */
static uint32_t part_rows = 0;	/* queries they hold */
static DevJob jobs[ENGINE_MAX_DEVICES];
/* lists each device's searches found decoded and decoded (gpuir_cuda_search_take_decode_counts) */
static uint64_t dc_found[ENGINE_MAX_DEVICES];
static uint64_t dc_decoded[ENGINE_MAX_DEVICES];
static pthread_t threads[ENGINE_MAX_DEVICES];
static pthread_barrier_t job_start,
			job_done;

static gpuir_cuda_status
run_job(DevJob *j)
{
#ifdef ENGINE_BENCH_HAVE_CUDA
	if (maxscore_share >= 0 || maxscore_dense >= 0)
		gpuir_cuda_search_set_maxscore(maxscore_share >= 0 ? (uint32_t) maxscore_share
									   : GPUIR_CUDA_MAXSCORE_SHARE,
									   maxscore_dense >= 0 ? (uint32_t) maxscore_dense
									   : GPUIR_CUDA_MAXSCORE_DENSE);
	if (checking_bmw_kernels)
		gpuir_cuda_search_set_bmw_batch(0, 0);
	else if (bmw_batch_waves >= 0)
		gpuir_cuda_search_set_bmw_batch((uint64_t) bmw_batch_waves, (uint64_t) bmw_batch_total);
	else
		gpuir_cuda_search_set_bmw_batch(GPUIR_CUDA_BMW_BATCH_WAVES, GPUIR_CUDA_BMW_BATCH_TOTAL);
	if (decode_budget >= 0)
		gpuir_cuda_search_set_decode_budget((uint32_t) decode_budget);
	if (decode_cache >= 0)
		gpuir_cuda_search_set_decode_cache((uint32_t) decode_cache);
#endif
	if (j->nq == 0)
	{
		if (j->stats != NULL)
			memset(j->stats, 0, sizeof(*j->stats));
		return GPUIR_CUDA_OK;
	}
#ifdef ENGINE_BENCH_HAVE_CUDA
	if (j->stats != NULL)
		return gpuir_cuda_search_batch_debug(j->dev, j->sc, j->q, j->nq, j->t, j->nt, j->kmax,
											 j->docids, j->scores, j->counts, NULL, j->stats);
#endif
	if (j->stats != NULL)
		memset(j->stats, 0, sizeof(*j->stats));
	return gpuir_cuda_search_batch(j->dev, j->sc, j->q, j->nq, j->t, j->nt, j->kmax,
								   j->docids, j->scores, j->counts, NULL);
}

/* take_decode_counts: add the calling thread's decode counts to device d's */
static void
take_decode_counts(int d)
{
#ifdef ENGINE_BENCH_HAVE_CUDA
	uint64_t	found,
				decoded;

	gpuir_cuda_search_take_decode_counts(&found, &decoded);
	dc_found[d] += found;
	dc_decoded[d] += decoded;
#else
	(void) d;
#endif
}

/* the host thread of device d (arg): its share of every batch */
static void *
device_thread(void *arg)
{
	int			d = (int) (intptr_t) arg;

	if (gpuir_cuda_set_device(d) != GPUIR_CUDA_OK)
		die("engine_bench: device %d: %s", d, gpuir_cuda_last_error_detail());
	for (;;)
	{
		/* the thread lives until the program exits */
		pthread_barrier_wait(&job_start);
		jobs[d].rc = run_job(&jobs[d]);
		take_decode_counts(d);
		pthread_barrier_wait(&job_done);
	}
	return NULL;
}

/* part_reserve: part buffers for nq queries of kmax results on every device */
static void
part_reserve(uint32_t nq, uint32_t kmax)
{
	size_t		n = (size_t) nq * kmax;

	if (n > part_cap || nq > part_rows)
	{
		for (int d = 0; d < ndevices; d++)
		{
			free(part_docids[d]);
			free(part_scores[d]);
			free(part_counts[d]);
			part_docids[d] = xmalloc(sizeof(uint32_t) * n);
			part_scores[d] = xmalloc(sizeof(float) * n);
			part_counts[d] = xmalloc(sizeof(uint32_t) * nq);
		}
		part_cap = n;
		part_rows = nq;
	}
}

/*
 * search_split: one batch over every device; the first failure's status
 * (OK when all succeeded), stats summed when asked.  --split queries (the
 * default): device d runs queries [nq * d / N, nq * (d + 1) / N).  --split
 * docs: every device runs every query on its docID window
 * (gpuir_cuda_segment_window: tiles [T * d / N, T * (d + 1) / N)) and the
 * host merges each query's N ranked parts (gpuir_cuda_topk_merge; its time
 * is in the call's).
 */
static gpuir_cuda_status
search_split(const gpuir_cuda_segment *dev0, const gpuir_cuda_scoring *sc,
			 const gpuir_cuda_query *q, uint32_t nq, const gpuir_cuda_term *t, uint64_t nt,
			 uint32_t kmax, uint32_t *docids, float *scores, uint32_t *counts,
			 gpuir_cuda_search_stats *stats)
{
	gpuir_cuda_search_stats part[ENGINE_MAX_DEVICES];
	gpuir_cuda_status rc = GPUIR_CUDA_OK;

	if (split_docs)
		part_reserve(nq, kmax);
	for (int d = 0; d < ndevices; d++)
	{
		uint32_t	lo = split_docs ? 0 : (uint32_t) ((uint64_t) nq * d / ndevices);
		uint32_t	hi = split_docs ? nq : (uint32_t) ((uint64_t) nq * (d + 1) / ndevices);
		DevJob	   *j = &jobs[d];

		j->dev = split_docs ? &windows[d] : d == 0 ? dev0 : &devsegs[d];
		j->sc = sc;
		j->q = q + lo;
		j->nq = hi - lo;
		j->t = t;				/* first_term indexes the whole array */
		j->nt = nt;
		j->kmax = kmax;
		j->docids = split_docs ? part_docids[d] : docids + (size_t) lo * kmax;
		j->scores = split_docs ? part_scores[d] : scores + (size_t) lo * kmax;
		j->counts = split_docs ? part_counts[d] : counts + lo;
		j->stats = stats != NULL ? &part[d] : NULL;
	}
	pthread_barrier_wait(&job_start);
	jobs[0].rc = run_job(&jobs[0]);
	pthread_barrier_wait(&job_done);
	if (stats != NULL)
		memset(stats, 0, sizeof(*stats));
	for (int d = 0; d < ndevices; d++)
	{
		if (jobs[d].rc != GPUIR_CUDA_OK && rc == GPUIR_CUDA_OK)
			rc = jobs[d].rc;
		if (stats != NULL)
		{
			stats->blocks_decoded += part[d].blocks_decoded;
			stats->tiles_pruned += part[d].tiles_pruned;
			stats->bmw_queries += part[d].bmw_queries;
			stats->maxscore_queries += part[d].maxscore_queries;
			stats->spilled_queries += part[d].spilled_queries;
			stats->partial_queries += part[d].partial_queries;
			stats->tile_keys += part[d].tile_keys;
			stats->fused_queries += part[d].fused_queries;
		}
	}
	if (split_docs && rc == GPUIR_CUDA_OK)
		for (uint32_t qi = 0; qi < nq && rc == GPUIR_CUDA_OK; qi++)
		{
			const uint32_t *pd[ENGINE_MAX_DEVICES];
			const float *ps[ENGINE_MAX_DEVICES];
			uint32_t	pc[ENGINE_MAX_DEVICES];

			for (int d = 0; d < ndevices; d++)
			{
				pd[d] = part_docids[d] + (size_t) qi * kmax;
				ps[d] = part_scores[d] + (size_t) qi * kmax;
				pc[d] = part_counts[d][qi];
			}
			rc = gpuir_cuda_topk_merge((uint32_t) ndevices, pd, ps, pc, q[qi].k,
									   docids + (size_t) qi * kmax,
									   scores + (size_t) qi * kmax, &counts[qi]);
			/* a search zeroes the row up to kmax: so does the split */
			for (uint32_t i = q[qi].k; i < kmax; i++)
			{
				docids[(size_t) qi * kmax + i] = 0;
				scores[(size_t) qi * kmax + i] = 0.0f;
			}
		}
	return rc;
}

/* gpuir_cuda_segment_upload of s on one device (current), timed; 0, or 1 after saying why not */
static int
upload_one(const Segment *s, int d, gpuir_cuda_segment *dev)
{
	double		t0 = now_s();
	gpuir_cuda_status st;

	st = gpuir_cuda_segment_upload(s->payload, s->payload_bytes, s->block_last, s->block_offset,
								   s->impact_tf, s->impact_dl, s->nblocks, s->doclen, NULL,
								   NULL, 0.0f, s->ndocs, dev);
	if (st != GPUIR_CUDA_OK)
	{
		printf("engine_bench: segment upload to device %d failed: %s (%s)\n", d,
			   gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
		return 1;
	}
	printf("upload to device %d: %.2f s (%.2f GB of payload, directory and doclen)\n", d,
		   now_s() - t0,
		   gb(s->payload_bytes + (uint64_t) s->nblocks * 24 + (uint64_t) s->ndocs * 4));
#ifdef ENGINE_BENCH_HAVE_CUDA
	gpu_mem_line("after upload");
#endif
	return 0;
}

int
upload_segment(const Segment *s, const Options *o, gpuir_cuda_segment *dev)
{
	int			count = 0;

	if (o->devices > 1 &&
		(gpuir_cuda_device_count(&count) != GPUIR_CUDA_OK || count < o->devices))
	{
		printf("engine_bench: --devices %d, but %d device%s visible\n", o->devices, count,
			   count == 1 ? " is" : "s are");
		return 1;
	}
	for (int d = o->devices - 1; d >= 0; d--)
	{
		if (gpuir_cuda_set_device(d) != GPUIR_CUDA_OK)
		{
			printf("engine_bench: device %d: %s\n", d, gpuir_cuda_last_error_detail());
			return 1;
		}
		if (upload_one(s, d, d == 0 ? dev : &devsegs[d]) != 0)
			return 1;
	}
	/* device 0 is current again in this thread */
	ndevices = o->devices;
	split_docs = o->split_docs;
	for (int d = 0; d < ndevices; d++)
		if (gpuir_cuda_segment_window(d == 0 ? dev : &devsegs[d], (uint32_t) d, (uint32_t) ndevices,
									  &windows[d]) != GPUIR_CUDA_OK)
			die("engine_bench: gpuir_cuda_segment_window failed");
	if (ndevices > 1)
	{
		pthread_barrier_init(&job_start, NULL, (unsigned) ndevices);
		pthread_barrier_init(&job_done, NULL, (unsigned) ndevices);
		for (int d = 1; d < ndevices; d++)
			if (pthread_create(&threads[d], NULL, device_thread, (void *) (intptr_t) d) != 0)
				die("engine_bench: pthread_create failed");
		printf("devices: %d, each batch split over them %s\n", ndevices,
			   split_docs ? "by docID windows (every device runs every query on its "
			   "window, the host merges each query's top-k)"
			   : "in contiguous query ranges");
	}
	return 0;
}

/* ---------- exactness and timing ---------- */

/*
 * the search call: the debug variant (block counters) where it exists;
 * split over the devices with --devices
 */
static gpuir_cuda_status
search(const gpuir_cuda_segment *dev, const Segment *s, Batch *b, uint32_t kmax,
	   gpuir_cuda_search_stats *stats)
{
	if (ndevices > 1)
		return search_split(dev, &s->sc, b->q, b->nq, b->t, b->nt, kmax, b->docids, b->scores,
							b->counts, stats);
	{
		DevJob		j = {dev, &s->sc, b->q, b->nq, b->t, b->nt, kmax, b->docids, b->scores,
		b->counts, stats, GPUIR_CUDA_OK};
		gpuir_cuda_status rc = run_job(&j);

		take_decode_counts(0);
		return rc;
	}
}

/* the exactness check of one (log, mode, k); returns the mismatching queries */
static uint64_t
check_config(const gpuir_cuda_segment *dev, const Segment *s, const QLog *l, const LogRef *r,
			 int mode, uint32_t k, Batch *b, int *gpu_error)
{
	gpuir_cuda_search_stats st;
	gpuir_cuda_status rc;
	uint64_t	bad = 0;
	int			am = (mode == GPUIR_CUDA_MODE_AND);
	int			printed = 0;
	double		t0;

	if (r->n == 0)
		return 0;
	batch_make(b, l, s, 0, r->n, k, mode);
	memset(b->docids, 0xA5, sizeof(uint32_t) * (size_t) r->n * k);
	memset(b->scores, 0xA5, sizeof(float) * (size_t) r->n * k);
	t0 = now_s();
	checking_bmw_kernels = 1;
	rc = search(dev, s, b, k, &st);
	checking_bmw_kernels = 0;
	if (rc != GPUIR_CUDA_OK)
	{
		printf("check %s %s k=%u: GPU search failed: %s (%s)\n", l->name, mode_names[mode], k,
			   gpuir_cuda_status_string(rc), gpuir_cuda_last_error_detail());
		*gpu_error = 1;
		return r->n;
	}
	for (uint32_t q = 0; q < r->n; q++)
	{
		uint32_t	want = logref_count(r, am, q, k);
		const Res  *ref = r->res[am][q];
		const uint32_t *gd = b->docids + (size_t) q * k;
		const float *gs = b->scores + (size_t) q * k;
		int			where = logref_diff(r, am, q, k, b->counts[q], gd, gs);

		/* and the slots past the count zeroed */
		for (uint32_t i = want; where == -1 && i < k; i++)
			if (gd[i] != 0 || gs[i] != 0.0f)
				where = (int) i;
		if (where == -1)
			continue;
		bad++;
		if (printed++ < 5)
		{
			if (where == -2)
				printf("MISMATCH %s %s k=%u query %s: GPU %u results, CPU %u\n", l->name,
					   mode_names[mode], k, l->qid[q], b->counts[q], want);
			else
				printf("MISMATCH %s %s k=%u query %s rank %d: GPU (%u, %.9g), CPU (%u, %.9g)\n",
					   l->name, mode_names[mode], k, l->qid[q], where, gd[where],
					   (double) gs[where], where < (int) want ? ref[where].doc : 0,
					   where < (int) want ? (double) ref[where].score : 0.0);
		}
	}
	printf("check %-12s %-3s k=%-4u %u queries: %s; %.1f ms; blocks decoded %" PRIu64
		   " (of %" PRIu64 " in the lists)",
		   l->name, mode_names[mode], k, r->n, bad ? "MISMATCH" : "exact", (now_s() - t0) * 1e3,
		   st.blocks_decoded, b->blocks);
	if (mode == GPUIR_CUDA_MODE_BMW)
		printf("; BMW queries (batch rule off) %" PRIu64 " (%" PRIu64 " from their essential lists), tiles pruned %" PRIu64 " of %" PRIu64,
			   st.bmw_queries, st.maxscore_queries, st.tiles_pruned,
			   (uint64_t) r->n * ((s->ndocs + GPUIR_CUDA_TILE_DOCS - 1) / GPUIR_CUDA_TILE_DOCS));
	if (st.spilled_queries > 0)
		printf("; %" PRIu64 " searched again (short candidate region spilled)",
			   st.spilled_queries);
	if (bad)
		printf("; %" PRIu64 " of %u queries differ", bad, r->n);
	printf("\n");
	fflush(stdout);
	return bad;
}

/*
 * decode_cache_counts: the lists the searches so far found decoded by an
 * earlier search of their job and decoded, over every device
 */
static void
decode_cache_counts(uint64_t *found, uint64_t *decoded)
{
	*found = *decoded = 0;
	for (int d = 0; d < ndevices; d++)
	{
		*found += dc_found[d];
		*decoded += dc_decoded[d];
	}
}

/*
 * one timed configuration; its note gives the share of the decoded lists
 * that the timed searches found decoded by an earlier one
 */
static void
run_config(const gpuir_cuda_segment *dev, const Segment *s, const QLog *l, Row *row,
		   const Options *o, double prev_rate, Batch *b)
{
	uint64_t	pos = 0;
	double		elapsed = 0,
				last = 0;
	gpuir_cuda_status rc;
	uint32_t	B = row->B;
	uint64_t	found0,
				decoded0,
				found,
				decoded;

	/* estimate one batch from the previous batch size's postings/s */
	batch_make(b, l, s, 0, B, row->k, row->mode);
	if (prev_rate > 0 && b->postings / prev_rate > o->max_batch_s)
	{
		snprintf(row->note, sizeof(row->note),
				 "skipped: one batch estimated at %.1f s (> --max-batch-s %.3g)",
				 b->postings / prev_rate, o->max_batch_s);
		return;
	}
	/* warm-up */
	batch_make(b, l, s, 0, B < 16 ? B : 16, row->k, row->mode);
	rc = search(dev, s, b, row->k, NULL);
	if (rc != GPUIR_CUDA_OK)
	{
		snprintf(row->note, sizeof(row->note), "error: %s (%s)", gpuir_cuda_status_string(rc),
				 gpuir_cuda_last_error_detail());
		return;
	}
	decode_cache_counts(&found0, &decoded0);
	for (;;)
	{
		double		t0;

		batch_make(b, l, s, pos, B, row->k, row->mode);
		t0 = now_s();
		rc = search(dev, s, b, row->k, NULL);
		last = now_s() - t0;
		if (rc != GPUIR_CUDA_OK)
		{
			snprintf(row->note, sizeof(row->note), "error: %s (%s)",
					 gpuir_cuda_status_string(rc), gpuir_cuda_last_error_detail());
			row->ran = 0;
			return;
		}
		elapsed += last;
		row->ran = 1;
		row->batches++;
		row->queries += B;
		row->postings += b->postings;
		row->bytes += b->bytes;
		for (uint32_t i = 0; i < B; i++)
			row->results += b->counts[i];
		pos = (pos + B) % l->nq;
		if (elapsed >= o->min_time || elapsed + last > o->max_time)
			break;
	}
	row->secs = elapsed;
	decode_cache_counts(&found, &decoded);
	found -= found0;
	decoded -= decoded0;
	if (found + decoded > 0)
		snprintf(row->note, sizeof(row->note), "decoded lists reused: %.1f%% of %" PRIu64,
				 100.0 * found / (found + decoded), found + decoded);
}

static void
print_row_header(void)
{
	printf("%-14s %-4s %5s %6s %8s %7s %7s %10s %10s %9s %7s %6s %7s %6s %7s  %s\n",
		   "log", "mode", "k", "B", "queries", "batches", "secs", "queries/s", "batch_ms",
		   "Mpost/s", "GB/s", "%copy", "+dl", "BMW/OR", "results", "note");
}

static double
row_bmw_ratio(const Row *rows, int nrows, const Row *r)
{
	if (r->mode != GPUIR_CUDA_MODE_BMW || !r->ran)
		return 0;
	for (int i = 0; i < nrows; i++)
	{
		const Row  *x = &rows[i];

		if (x->log == r->log && x->mode == GPUIR_CUDA_MODE_OR && x->k == r->k &&
			x->B == r->B && x->ran && x->secs > 0 && r->secs > 0)
			return (r->queries / r->secs) / (x->queries / x->secs);
	}
	return 0;
}

static void
print_row(const Row *r, const QLog *logs, const GpuInfo *g, double ratio)
{
	char		rat[16] = "";

	if (ratio > 0)
		snprintf(rat, sizeof(rat), "%.2f", ratio);
	if (!r->ran)
	{
		printf("%-14s %-4s %5u %6u %8s %7s %7s %10s %10s %9s %7s %6s %7s %6s %7s  %s\n",
			   logs[r->log].name, mode_names[r->mode], r->k, r->B, "-", "-", "-", "-", "-", "-",
			   "-", "-", "-", "-", "-", r->note);
		return;
	}
	printf("%-14s %-4s %5u %6u %8" PRIu64 " %7" PRIu64 " %7.3f %10.1f %10.3f %9.0f %7.1f %6.1f "
		   "%7.1f %6s %7.1f  %s\n",
		   logs[r->log].name, mode_names[r->mode], r->k, r->B, r->queries, r->batches, r->secs,
		   r->queries / r->secs, r->secs / r->batches * 1e3, r->postings / 1e6 / r->secs,
		   gb(r->bytes) / r->secs,
		   g->copy_rw > 0 ? 100.0 * gb(r->bytes) / r->secs / g->copy_rw : 0.0,
		   gb(r->bytes + 4 * r->postings) / r->secs, rat,
		   (double) r->results / r->queries, r->note);
	fflush(stdout);
}

int
check_exactness(const gpuir_cuda_segment *dev, const Segment *s, const QLog *logs, int nlogs,
				const LogRef *refs, const Options *o)
{
	uint64_t	bad = 0,
				checked = 0;
	int			gpu_error = 0;
	Batch		batch;

	memset(&batch, 0, sizeof(batch));
	for (int li = 0; li < nlogs; li++)
		for (int m = 0; m < o->nmodes; m++)
			for (int ki = 0; ki < o->nks; ki++)
			{
				bad += check_config(dev, s, &logs[li], &refs[li], o->modes[m], o->ks[ki], &batch,
									&gpu_error);
				checked += refs[li].n;
			}
	print_exactness("exactness", checked, bad);
	batch_free(&batch);
	return (bad || gpu_error) ? 1 : 0;
}

Row *
timing_grid(const gpuir_cuda_segment *dev, const Segment *s, const QLog *logs, int nlogs,
			const Options *o, const GpuInfo *g, int *nrows, int *failed)
{
	int			nconf = nlogs * o->nmodes * o->nks * o->nbatches;
	Row		   *rows = xcalloc((size_t) nconf, sizeof(Row));
	Batch		batch;

	memset(&batch, 0, sizeof(batch));
	*nrows = 0;
	printf("\ntiming grid: %d configurations; about %.0f s to %.0f s of search time "
		   "(--min-time %.3g, --max-time %.3g per configuration, but a configuration runs at "
		   "least one batch: one large batch can take up to --max-batch-s %.3g s; those "
		   "estimated above it are skipped), plus one warm-up batch of <= 16 queries each\n",
		   nconf, nconf * o->min_time, nconf * o->max_time, o->min_time, o->max_time,
		   o->max_batch_s);
	printf("(GB/s: compressed block bytes of the query terms' lists per second; %%copy: "
		   "of the copy r+w bandwidth %.1f GB/s; +dl: also 4 bytes of doclen per posting)\n",
		   g->copy_rw);
	print_row_header();
	for (int li = 0; li < nlogs; li++)
	{
		if (logs[li].nq == 0)
			continue;
		for (int m = 0; m < o->nmodes; m++)
			for (int ki = 0; ki < o->nks; ki++)
			{
				double		rate = 0;

				for (int bi = 0; bi < o->nbatches; bi++)
				{
					Row		   *r = &rows[(*nrows)++];

					r->log = li;
					r->mode = o->modes[m];
					r->k = o->ks[ki];
					r->B = o->batches[bi];
					run_config(dev, s, &logs[li], r, o, rate, &batch);
					if (r->ran && r->secs > 0)
						rate = r->postings / r->secs;
					print_row(r, logs, g, row_bmw_ratio(rows, *nrows, r));
					if (!r->ran && strncmp(r->note, "error", 5) == 0)
						*failed = 1;
				}
			}
	}
	batch_free(&batch);
	return rows;
}

/* BMW against OR: queries/s of each BMW row and of the OR row of its log, k and B */
void
print_bmw_summary(const Row *rows, int nrows, const QLog *logs)
{
	int			header = 0;

	for (int i = 0; i < nrows; i++)
	{
		double		ratio = row_bmw_ratio(rows, nrows, &rows[i]);

		if (ratio <= 0)
			continue;
		if (!header++)
			printf("\nBMW vs OR (queries/s):\n%-14s %5s %6s %12s %12s %8s\n", "log", "k", "B",
				   "OR", "BMW", "BMW/OR");
		for (int j = 0; j < nrows; j++)
			if (rows[j].mode == GPUIR_CUDA_MODE_OR && rows[j].log == rows[i].log &&
				rows[j].k == rows[i].k && rows[j].B == rows[i].B)
				printf("%-14s %5u %6u %12.1f %12.1f %8.2f\n", logs[rows[i].log].name,
					   rows[i].k, rows[i].B, rows[j].queries / rows[j].secs,
					   rows[i].queries / rows[i].secs, ratio);
	}
}

/* ---------- report ---------- */

void
write_tsv(const char *path, const Row *rows, int nrows, const QLog *logs, const GpuInfo *g,
		  const Segment *s)
{
	FILE	   *f = fopen(path, "w");

	if (f == NULL)
	{
		printf("cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "log\tmode\tk\tbatch\tqueries\tbatches\tseconds\tqueries_per_s\tbatch_ms\t"
			"postings\tpostings_per_s\tpayload_bytes\tpayload_GBps\tpct_copy_rw\t"
			"pct_copy_bytes\tpayload_dl_GBps\tbmw_over_or\tmean_results\tnote\tdevice\t"
			"copy_rw_GBps\tcopy_bytes_GBps\tdocs\ttotal_postings\tsegment_payload_bytes\n");
	for (int i = 0; i < nrows; i++)
	{
		const Row  *r = &rows[i];
		double		ratio = row_bmw_ratio(rows, nrows, r);

		if (r->ran)
		{
			double		bw = gb(r->bytes) / r->secs;

			fprintf(f, "%s\t%s\t%u\t%u\t%" PRIu64 "\t%" PRIu64 "\t%.6f\t%.3f\t%.6f\t%" PRIu64
					"\t%.6g\t%" PRIu64 "\t%.4f\t%.3f\t%.3f\t%.4f\t",
					logs[r->log].name, mode_names[r->mode], r->k, r->B, r->queries, r->batches,
					r->secs, r->queries / r->secs, r->secs / r->batches * 1e3, r->postings,
					r->postings / r->secs, r->bytes, bw,
					g->copy_rw > 0 ? 100.0 * bw / g->copy_rw : 0.0,
					g->copy_one > 0 ? 100.0 * bw / g->copy_one : 0.0,
					gb(r->bytes + 4 * r->postings) / r->secs);
			if (ratio > 0)
				fprintf(f, "%.4f", ratio);
			fprintf(f, "\t%.3f\t%s\t", (double) r->results / r->queries, r->note);
		}
		else
		{
			/* the 14 measurement columns empty */
			fprintf(f, "%s\t%s\t%u\t%u\t", logs[r->log].name, mode_names[r->mode], r->k, r->B);
			for (int c = 0; c < 14; c++)
				fputc('\t', f);
			fprintf(f, "%s\t", r->note);
		}
		fprintf(f, "%s\t%.2f\t%.2f\t%u\t%" PRIu64 "\t%" PRIu64 "\n", g->name, g->copy_rw,
				g->copy_one, s->ndocs, s->npostings, s->payload_bytes);
	}
	fclose(f);
	printf("wrote %s (%d rows)\n", path, nrows);
}

