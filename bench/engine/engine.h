/*-------------------------------------------------------------------------
 *
 * engine.h
 *	  Private header of build/engine_bench (bench/engine_bench.c, whose
 *	  header documents the program): the types its parts share and their
 *	  entry points, one section per file of bench/engine/.
 *
 *	  util.c		allocation, errors, clocks, threads (par_run)
 *	  inputs.c		options; vocabulary, length histogram and query logs
 *					(files or --synthetic)
 *	  corpus.c		the generated corpus and its inversion to posting lists
 *	  segment.c		the segment, its lists encoded by the list encoder of
 *					src/gpuirlist.c, and its checksum
 *	  reference.c	the exact CPU top-k (parallel and plain) and the
 *					self-check
 *	  gpu.c			device, upload, exactness check, timing grid, report
 *	  cpu_engine.c	the production CPU engine (through cpu_image.c): its
 *					index of the corpus, exactness check and timing
 *
 * Include it first: it defines _GNU_SOURCE (qsort_r, getline, popen,
 * MADV_HUGEPAGE).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ENGINE_BENCH_ENGINE_H
#define ENGINE_BENCH_ENGINE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "../../src/gpuirlist.h"
#include "../../cuda/gpuir_cuda.h"
#include "../../test/ref_topk.h"	/* Res and the top-k heap only */

#include <stddef.h>
#include <stdint.h>

#define MAX_QUERY_TERMS	1024		/* GPUIR_MAX_QUERY_TERMS of src/gpuir.h */
#define NO_TERM			UINT32_MAX	/* query term not in the vocabulary */
#define MAX_LIST		16			/* values of a list option, --queries files */

/* ---------- util.c ---------- */

extern void die(const char *fmt,...) __attribute__((noreturn, format(printf, 1, 2)));
extern void *xmalloc(size_t n);
extern void *xcalloc(size_t n, size_t size);
extern void *xrealloc(void *p, size_t n);
extern void *big_alloc(size_t n);
extern char *xstrndup(const char *s, size_t n);
extern double now_s(void);
extern double gb(uint64_t bytes);
extern double peak_rss_gb(void);
extern int	lexeme_cmp(const char *a, size_t alen, const char *b, size_t blen);

typedef void (*ParFn) (void *arg, int tid, int nthreads);

/* run fn(arg, tid, n) for tid 0..n-1 on n threads (tid 0 on the caller) */
extern void par_run(int n, ParFn fn, void *arg);

/* the start of part i of n items cut into parts parts */
static inline uint64_t
split_at(uint64_t n, int i, int parts)
{
	return (uint64_t) ((unsigned __int128) n * (unsigned) i / (unsigned) parts);
}

/* random numbers: splitmix64 seeding xoshiro256** */
typedef struct Rng
{
	uint64_t	s[4];
} Rng;

static inline uint64_t
splitmix64(uint64_t *x)
{
	uint64_t	z = (*x += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static inline uint64_t
rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t
rng_next(Rng *r)
{
	uint64_t   *s = r->s;
	const uint64_t result = rotl64(s[1] * 5, 7) * 9;
	const uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return result;
}

static inline void
rng_seed(Rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t	x = seed ^ (stream * 0xD1B54A32D192ED03ULL);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static inline double
rng_double(Rng *r)
{
	return (double) (rng_next(r) >> 11) * 0x1.0p-53;
}

/* ---------- inputs.c ---------- */

#define ENGINE_MAX_DEVICES	16

typedef struct Options
{
	const char *vocab;
	const char *doclen;
	const char *queries[MAX_LIST];
	int			nqueries;
	uint32_t	synthetic;
	uint64_t	docs;
	uint64_t	seed;
	int			threads;
	uint32_t	batches[MAX_LIST];
	int			nbatches;
	uint32_t	ks[MAX_LIST];
	int			nks;
	int			modes[3];
	int			nmodes;
	uint32_t	max_queries;
	uint32_t	check;
	uint32_t	selfcheck;
	const char *out;
	float		k1;
	float		b;
	double		min_time;
	double		max_time;
	double		max_batch_s;
	uint32_t	copy_mib;
	int			verify;
	int			devices;		/* --devices: GPUs a batch is split over */
	int			split_docs;		/* --split docs: by docID windows, else by queries */
	const char *resample;		/* --resample: real documents to resample, or NULL */
	int64_t		maxscore;		/* --maxscore-share: gpuir_cuda_search_set_maxscore's
								 * share, -1 for the library's default */
	int64_t		maxscore_dense; /* --maxscore-dense: its dense, -1 for the default */
	int64_t		bmw_batch_waves;	/* --bmw-batch W,T: gpuir_cuda_search_set_bmw_batch's */
	int64_t		bmw_batch_total;	/* arguments, -1 for the defaults */
	int64_t		decode_budget;	/* --decode-budget: gpuir_cuda_search_set_decode_budget's
								 * blocks, -1 for the default */
	int64_t		decode_cache;	/* --decode-cache: gpuir_cuda_search_set_decode_cache's
								 * blocks, -1 for the default */
	int			cpu_engine;		/* --cpu-engine: processes of the production CPU
								 * engine (cpu_engine.c), 0: not run */
	double		cpu_seconds;	/* --cpu-seconds: its time per (log, mode, k) */
	uint32_t	cpu_segment_docs;	/* --cpu-segment-docs: its index's segment cap
									 * (max_segment_docs; 0: one segment) */
	const char *cpu_out;		/* --cpu-out: its rows as TSV, or NULL */
	int			cpu_flip_score; /* --cpu-flip-score: testing only (check_config) */
} Options;

/* names of the GPUIR_CUDA_MODE_* values */
extern const char *const mode_names[3];

typedef struct Vocab
{
	uint32_t	n;
	uint32_t	cap;
	char	  **lex;
	uint32_t   *len;
	uint64_t   *cf;
	uint64_t	total_cf;
	uint32_t   *hash;			/* open addressing: term + 1, 0 empty */
	uint64_t	hmask;
} Vocab;

typedef struct DocLen
{
	uint32_t	n;
	uint32_t   *dl;
	double	   *count;
	uint32_t	max_dl;
	double		mean;
} DocLen;

typedef struct QLog
{
	char	   *name;
	uint32_t	nq;
	uint32_t	cap;
	char	  **qid;
	uint32_t   *qoff;			/* [nq + 1] into qterm */
	uint32_t   *qterm;			/* vocabulary term, or NO_TERM */
	uint64_t	nterm_cap;
	uint64_t	lines;
	uint64_t	dropped_empty;
	uint64_t	dropped_long;
	uint64_t	not_in_vocab;	/* query terms (after dedup) not in the vocabulary */
} QLog;

/* the real documents of --resample: term and tf per document, in file order */
typedef struct Source
{
	uint32_t	n;				/* documents */
	uint64_t   *off;			/* [n + 1] into term, tf */
	uint32_t   *term;			/* vocabulary term */
	uint32_t   *tf;
	uint32_t	max_dl;			/* largest sum of tf of a document */
	double		mean_dl;
	uint64_t	unknown;		/* lexemes not in the vocabulary (skipped) */
} Source;

extern void parse_options(Options *o, int argc, char **argv);

/* the documents of --resample, lexemes looked up in v */
extern void source_read(Source *s, const Vocab *v, const char *path);

/* the vocabulary, length histogram and query logs of the options; *logs is malloc'd */
extern void read_inputs(const Options *o, Vocab *v, DocLen *h, QLog **logs, int *nlogs);

/* ---------- corpus.c ---------- */

typedef struct Corpus
{
	uint32_t	ndocs;
	uint32_t	V;
	uint32_t   *doclen;
	uint32_t   *docnp;			/* distinct terms per document */
	uint64_t	total_dl;
	uint64_t	npostings;
	uint64_t   *start;			/* [V + 1]: list of term v at [start[v], start[v+1]) */
	uint32_t   *inv_doc;
	uint32_t   *inv_tf;
	uint32_t	nlists;
	uint32_t	max_df;
} Corpus;

/*
 * generate_corpus: ndocs documents, tokens i.i.d. by cf and lengths from h,
 * or (src not NULL) the real documents of src in file order, cycled, each
 * distinct term kept with its tf with probability 0.9 and otherwise
 * replaced by as many i.i.d. tokens (RESAMPLE_KEEP in corpus.c)
 */
extern void generate_corpus(Corpus *c, const Vocab *v, const DocLen *h, const Source *src,
							uint32_t ndocs, uint64_t seed, int nthreads, int verify);

/* ---------- segment.c ---------- */

typedef struct Segment
{
	uint32_t	ndocs;
	uint32_t	nblocks;
	uint64_t	npostings;
	uint8_t    *payload;
	uint64_t	payload_bytes;
	uint32_t   *block_last;
	uint32_t   *block_offset;	/* nblocks + 1 */
	uint32_t   *impact_tf;
	uint32_t   *impact_dl;
	const uint32_t *doclen;
	/* per vocabulary term (absent: nblocks 0) */
	uint32_t	V;
	uint32_t   *first_block;	/* also defined for absent terms (list order) */
	uint32_t   *lorder;			/* the terms in list order, by lexeme (list_order) */
	uint32_t   *nblk;			/* blocks of the list, 0 for an absent term */
	uint32_t   *npost;
	float	   *idf;
	uint64_t   *tbytes;			/* compressed bytes of the list */
	float		idf_absent;
	gpuir_cuda_scoring sc;
	double		avgdl_build;
} Segment;

static inline uint32_t
seg_nblocks(const Segment *s, uint32_t v)
{
	return s->nblk[v];
}

/* the engine's BM25 (GpuirBM25Expr, src/gpuirlist.h) with the segment's constants */
static inline float
seg_bm25(const Segment *s, float idf, uint32_t tf, uint32_t dl)
{
	return GpuirBM25Expr(idf, tf, dl, s->sc.k1, s->sc.b, s->sc.avgdl);
}

extern void build_segment(Segment *s, const Corpus *c, const Vocab *voc, const Options *o);

/*
 * order_query_terms: each query's terms (in lexeme order) in the engine's
 * term order, idf descending, ties in lexeme order (order_terms of
 * src/gpuirengine.c), the order scores are summed in; absent terms first
 */
extern void order_query_terms(QLog *logs, int nlogs, const Segment *s);


/* ---------- reference.c ---------- */

/* reference top lists of the first --check queries of one log */
typedef struct LogRef
{
	uint32_t	n;
	Res		  **res[2];			/* [and_mode][query] */
	uint32_t   *cnt[2];
} LogRef;

/* returns the number of mismatching (query, mode) pairs; 0 when --selfcheck 0 */
extern int	selfcheck(const QLog *logs, int nlogs, const Segment *s, const Options *o,
					  uint32_t kref);
extern void logref_compute(LogRef *r, const QLog *l, const Segment *s, const Options *o,
						   uint32_t kref, const int need[2]);
extern void logref_free(LogRef *r);

/*
 * logrefs_compute: the references of logs[0..nlogs) (logref_compute; top
 * kref, the first --check queries of each), AND's where o runs AND, OR's
 * (which BMW's must equal too) where it runs OR or BMW: one array for every
 * check of the run (the GPU's and the CPU engine's); free with logrefs_free
 */
extern LogRef *logrefs_compute(const QLog *logs, int nlogs, const Segment *s, const Options *o,
							   uint32_t kref);
extern void logrefs_free(LogRef *refs, int nlogs);	/* refs may be NULL */

/*
 * print_exactness: the exactness line of a check named who ("exactness",
 * "cpu engine exactness"): checked query results (a query at a mode and k),
 * bad of them mismatching the reference
 */
extern void print_exactness(const char *who, uint64_t checked, uint64_t bad);

/* logref_count: the reference's number of results of query q (and_mode am) at k */
static inline uint32_t
logref_count(const LogRef *r, int am, uint32_t q, uint32_t k)
{
	return r->cnt[am][q] < k ? r->cnt[am][q] : k;
}

/*
 * logref_diff: where count results docs[0..count), scores[0..count) differ
 * from the reference's top-k of query q (and_mode am): -1 nowhere (the same
 * count, docIDs and score bits), -2 in the count, else the first rank that
 * differs
 */
extern int	logref_diff(const LogRef *r, int am, uint32_t q, uint32_t k, uint32_t count,
						const uint32_t *docs, const float *scores);

/* ---------- gpu.c ---------- */

typedef struct Row
{
	int			log;
	int			mode;
	uint32_t	k;
	uint32_t	B;
	int			ran;
	uint64_t	queries;
	uint64_t	batches;
	double		secs;
	uint64_t	postings;
	uint64_t	bytes;
	uint64_t	results;
	char		note[200];
} Row;

typedef struct GpuInfo
{
	char		name[256];
	size_t		mem;
	int			major,
				minor;
	double		copy_rw;		/* GB/s, (read + write) / time */
	double		copy_one;		/* GB/s, bytes copied / time */
} GpuInfo;

/*
 * probe_device: device 0's name and memory, and its copy bandwidth
 * (--copy-mib); returns 1 with a device, else 0 with the reason in nodev
 */
extern int	probe_device(const Options *o, GpuInfo *g, char *nodev, size_t nodevlen);
extern void print_query_stats(const QLog *logs, int nlogs, const Segment *s);
/*
 * upload_segment: the segment on each of the o->devices GPUs (device 0's
 * copy in *dev, the others kept in gpu.c), and one host thread per further
 * device; from then on every search splits its batch over the devices
 */
extern int	upload_segment(const Segment *s, const Options *o, gpuir_cuda_segment *dev);

/*
 * the exactness check of every (log, mode, k) against refs (logrefs_compute);
 * returns 1 on a mismatch or GPU error
 */
extern int	check_exactness(const gpuir_cuda_segment *dev, const Segment *s, const QLog *logs,
							int nlogs, const LogRef *refs, const Options *o);

/* the timing grid: returns its rows (*nrows); sets *failed on a failed call */
extern Row *timing_grid(const gpuir_cuda_segment *dev, const Segment *s, const QLog *logs,
						int nlogs, const Options *o, const GpuInfo *g, int *nrows, int *failed);
extern void print_bmw_summary(const Row *rows, int nrows, const QLog *logs);
extern void write_tsv(const char *path, const Row *rows, int nrows, const QLog *logs,
					  const GpuInfo *g, const Segment *s);

/* ---------- cpu_engine.c ---------- */

/*
 * cpu_engine_build: the production index of corpus c, its lists still
 * there, written in s's list order (cpu_image_build); dies on an error.
 * Call before cpu_engine_grid.
 */
extern void cpu_engine_build(const Corpus *c, const Vocab *voc, const Segment *s,
							 const Options *o);

/*
 * cpu_engine_grid: for each log, mode and k, the production CPU engine on
 * o->cpu_engine processes for o->cpu_seconds (one row each, B = 1: each
 * process answers one query at a time) after its exactness check against
 * refs (logrefs_compute); returns the rows (*nrows), sets *failed on a
 * mismatch or error
 */
extern Row *cpu_engine_grid(const Segment *s, const QLog *logs, int nlogs, const LogRef *refs,
							const Vocab *voc, const Options *o, int *nrows, int *failed);

/* print_cpu_summary: GPU / CPU engine per (log, mode, k) and GPU batch size */
extern void print_cpu_summary(const Row *cpu, int ncpu, const Row *gpu, int ngpu,
							  const QLog *logs, const Options *o);
/*
 * write_cpu_tsv: cpu_engine_grid's rows as TSV at path (one line a row: log,
 * mode, k, processes, queries, seconds, q/s, postings, postings/s, mean
 * results, note, the corpus's docs and postings); prints why when path
 * cannot be written
 */
extern void write_cpu_tsv(const char *path, const Row *rows, int nrows, const QLog *logs,
						  const Options *o, const Segment *s);

#endif							/* ENGINE_BENCH_ENGINE_H */
