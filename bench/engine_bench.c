/*-------------------------------------------------------------------------
 *
 * engine_bench.c
 *	  Engine-level benchmark of gpuir's GPU query engine (cuda/) at Gov2
 *	  scale, without PostgreSQL: a GENERATED corpus of tens of millions of
 *	  documents, one segment built exactly as the index builds it, and real
 *	  query logs run through gpuir_cuda_search_batch, checked for exactness
 *	  against a CPU reference.
 *
 * Build (from the repository root):	make -f bench/engine.mk
 * (nvcc found: the kernels, the .cu files of cuda/, are compiled with the
 * main Makefile's NVCC flags and the CUDA runtime is linked statically;
 * without nvcc the program links cuda/gpuir_cuda_stub.c and stops after
 * the CPU part.)
 *
 * Usage:
 *	build/engine_bench --vocab VOCAB --doclen DOCLEN --queries LOG [--queries LOG2 ...]
 *		[--docs 40000000] [--seed 1] [--threads NCORES]
 *		[--batches 1,10,100,1000,10000] [--k 10,1000] [--modes and,or,bmw]
 *		[--max-queries 0] [--check 50] [--selfcheck 3] [--out results.tsv]
 *		[--k1 0.9] [--b 0.4] [--min-time 1] [--max-time 3] [--max-batch-s 10]
 *		[--copy-mib 1024] [--no-verify]
 *	build/engine_bench --synthetic 100000 --docs 200000	 (self-contained test input)
 *
 * Inputs (a file name ending in .gz is read through "gzip -dc"; "-" is stdin):
 *	--vocab		lines "lexeme<TAB>df<TAB>cf" (cf = total occurrences), e.g. the
 *				output of PostgreSQL's ts_stat over the real Wikipedia 2015
 *				paragraphs.  Only lexeme and cf are used (the file's df is
 *				not: dfs come from the generated corpus).  Lines whose df or
 *				cf is not a number (a header) are skipped; cf = 0 lines too.
 *	--doclen	lines "dl<TAB>count": histogram of document lengths in tokens
 *				(dl = sum of tf).  dl = 0 entries are dropped: the index does
 *				not index a document without a lexeme, so every generated
 *				document has dl >= 1 and N (for idf) = --docs.
 *	--queries	lines "qid<TAB>lex lex lex" (already tokenized), repeatable,
 *				one per query log; the log is named after the file.  As the
 *				engine's tokenizer does (GpuirTokenize), a query's lexemes are
 *				deduplicated and put in lexeme order (byte order, then
 *				length): that is the order its scores are summed in.  A lexeme
 *				missing from the vocabulary, or never drawn by the generator,
 *				is an absent term (an AND query holding one returns nothing).
 *				Lines with no lexeme, or more than 1024, are dropped (counted).
 *	--synthetic V	instead of the three files: a Zipf(1) vocabulary of V terms,
 *				a log-normal paragraph-like length histogram (5..300 tokens,
 *				mean about 32) and one log of 2000 queries (1..5 terms, ranks
 *				log-uniform).  For testing the program only.
 *
 * What it does:
 *	1. Device: name, memory, and the card's copy bandwidth measured in this
 *	   run: a device-to-device cudaMemcpy of --copy-mib MiB (default 1 GiB),
 *	   one warm-up then 10 timed copies (cudaEvent).  Reported both as
 *	   (bytes read + bytes written) / time ("copy r+w", the figure DRAM
 *	   bandwidth is quoted in; the %copy columns use it) and as bytes
 *	   copied / time.
 *	2. Corpus (GENERATED, not real documents): --docs documents; document d
 *	   draws its length dl from the doclen histogram, then dl tokens i.i.d.
 *	   from the unigram distribution given by cf (alias tables, Vose's
 *	   method: the 65536 most frequent terms in a small cache-resident table
 *	   picked with their total probability, the rest in a second table).
 *	   Its postings are its distinct terms with tf = occurrences.  Random
 *	   numbers: xoshiro256** seeded per chunk of 4096 documents from --seed
 *	   (splitmix64), so the corpus depends on --seed and --docs only, not on
 *	   --threads.  Generated in parallel by pthreads over contiguous docID
 *	   ranges, then inverted to posting lists in docID order (per-thread
 *	   per-term counts, prefix sums over terms and threads, scatter).  Only
 *	   terms that occur get a list.  Note that i.i.d. tokens have no
 *	   burstiness: a term's generated df is higher, and its tfs lower, than
 *	   in real text of the same cf.  Prints totals and a loud warning when
 *	   postings < 1e9.
 *	3. Segment: ONE segment as src/gpuirsegment.c writes it and
 *	   test/test_cuda_search.c builds it: lists in dictionary (lexeme)
 *	   order, blocks of 128 postings encoded with GpuirCodecEncode,
 *	   block_last, block_offset (+ final payload_bytes entry), two impacts
 *	   (tf, dl) per block computed like the index's block_impacts() (the
 *	   Pareto frontier of (tf, dl), reduced to 2 by merging the neighbours
 *	   that raise the BM25 tf part least at the build's avgdl), the doclen
 *	   array, no deletions.  Built in parallel over term ranges; every block
 *	   is decoded back with GpuirCodecDecode and compared with the
 *	   generated postings (--no-verify skips it).  The payload must stay
 *	   <= UINT32_MAX bytes (32-bit offsets): otherwise the program stops
 *	   and suggests a --docs that fits.  Scoring as the engine's: N = docs
 *	   (all have dl > 0), avgdl = (float) (total dl / N), idf = GpuirIdf:
 *	   (float) ln(1 + (N - df + 0.5) / (df + 0.5)) computed in double.
 *	4. Self-check on the CPU (no GPU needed): for the first --selfcheck
 *	   queries of each log, the parallel CPU reference (below) against a
 *	   plain one (whole lists decoded, test_cuda_search.c's ref_query), AND
 *	   and OR.  Without a CUDA device the program then prints
 *	   "engine_bench: no CUDA device (<detail>), GPU part skipped" and exits
 *	   0 (1 if the self-check failed).
 *	5. Upload with gpuir_cuda_segment_upload (timed).
 *	6. Exactness: for each (log, mode, k), the first --check queries in one
 *	   batch through gpuir_cuda_search_batch_debug, compared with the exact
 *	   CPU top-k: lists decoded with GpuirCodecDecode, float32 BM25 (the
 *	   GpuirBM25 expression, compiled with -ffp-contract=off) summed from
 *	   0.0f in the query's term order, ties by docID ascending; AND = docs
 *	   holding every term, OR and BMW = docs holding any.  Counts, docIDs,
 *	   score bits and the zeroed slots past the count must match.  The
 *	   reference runs in parallel over docID ranges of 65536 (one top-k
 *	   heap per thread, merged); it is computed once per query at the
 *	   largest k (the smaller k's top is its prefix) and its speed is
 *	   printed.  The debug call also gives blocks decoded and, for BMW,
 *	   tiles and 64-docID sub-ranges pruned.  Any mismatch: exit status 1.
 *	7. Timing grid: for each log, mode, k and batch size B, the log's
 *	   queries in consecutive batches of B (wrapping around the log when B
 *	   exceeds it), after one untimed warm-up batch of min(B, 16) queries.
 *	   Batches run until --min-time seconds of search time are reached, or
 *	   until the next batch would pass --max-time (at least one batch).  A
 *	   configuration whose single batch is estimated (from the postings/s of
 *	   the previous batch size of the same log, mode and k) at more than
 *	   --max-batch-s seconds is skipped with the reason; so is one whose
 *	   call fails (e.g. GPUIR_CUDA_OOM), with the status.  Time counted: the
 *	   gpuir_cuda_search_batch calls only (each one synchronous: it
 *	   allocates its workspace, uploads the queries, runs the kernels and
 *	   copies the results back), not building the batch arrays.
 *	   Reported per row: queries/s, mean batch latency (ms), postings/s
 *	   (postings = sum over queries of their terms' list lengths: what an
 *	   exhaustive evaluation must consider), payload GB/s (compressed bytes
 *	   of the query terms' posting blocks, block_offset[last + 1] -
 *	   block_offset[first], per query and term; GB = 1e9 bytes) and its %
 *	   of the copy r+w bandwidth; "+dl GB/s" adds 4 bytes of doclen per
 *	   posting (what OR reads; an upper bound for AND and BMW, which read dl
 *	   only for scored documents); the block directory and impacts are not
 *	   counted.  BMW rows show BMW queries/s over OR queries/s of the same
 *	   log, k and B (also summarised after the grid).
 *	8. Output: one table row per (log, mode, k, B) on stdout, and with --out
 *	   a TSV file of the same rows with a header row (the device, copy
 *	   bandwidths and corpus totals repeated in every row).
 *
 * Limits found in cuda/gpuir_search.cu (tiles of 8192 docIDs: 4883 tiles
 * at 40M docs): a query's candidate region is min(ntiles * k, its
 * postings) 8-byte keys, and a chunk holds at most 32M keys (256 MiB), so
 * at k = 1000 a long OR query takes up to 4.9M keys and a chunk holds
 * about 6 such queries; a batch of B then runs as ceil(B / 6) chunks of
 * four launches each, and the final selection is one thread block per
 * query over up to 4.9M candidates.  BMW adds 8 bytes per (query, tile)
 * (390 MB at B = 10000).  The outputs are B * kmax docIDs and scores (80 MB
 * at B = 10000, k = 1000).  Everything fits an 80 GB card next to a 3-4 GB
 * segment.  Measured on an H100 (40M docs, --synthetic 1000000, 1.18e9
 * postings, 1.86 GB payload): k = 1000 runs 10 to 40 times slower than
 * k = 10 for OR (the per-tile and final top-1000 selections, not the
 * postings, dominate), so the default --max-batch-s skips B = 10000 at
 * k = 1000 there.
 *
 * BMW on a GENERATED corpus: tokens i.i.d. by cf give nearly every block
 * the same (tf, dl) impacts (tf mostly 1, dl from one histogram), so the
 * block-max bounds are flat and BMW prunes little (on the synthetic run
 * above: 145 of 244150 tiles at k = 10, BMW/OR 0.88 to 1.0).  Real text is
 * bursty, so BMW/OR here is a pessimistic figure for real text.
 *
 *-------------------------------------------------------------------------
 */
#define _GNU_SOURCE
#include "../src/gpuircodec.h"
#include "../cuda/gpuir_cuda.h"
#include "../test/ref_topk.h"

#ifdef ENGINE_BENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#define GEN_CHUNK		4096		/* documents per random stream */
#define HEAD_TERMS		65536		/* terms of the cache-resident alias table */
#define REF_RANGE		65536		/* docIDs per work item of the CPU reference */
#define MAX_QUERY_TERMS	1024		/* GPUIR_MAX_QUERY_TERMS of src/gpuir.h */
#define NO_TERM			UINT32_MAX	/* query term not in the vocabulary */
#define MAX_LIST		16

/* ---------- utilities ---------- */

static void
die(const char *fmt,...)
{
	va_list		ap;

	fflush(stdout);
	fprintf(stderr, "engine_bench: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static void *
xmalloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
		die("out of memory (%zu bytes)", n);
	return p;
}

static void *
xcalloc(size_t n, size_t size)
{
	void	   *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

static void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		die("out of memory (%zu bytes)", n);
	return p;
}

/*
 * big_alloc: a large array, 2 MiB aligned and marked for transparent huge
 * pages (fewer page faults when the threads first touch it); free()
 * releases it.
 */
static void *
big_alloc(size_t n)
{
	size_t		sz = (n + ((size_t) 2 << 20) - 1) & ~(((size_t) 2 << 20) - 1);
	void	   *p;

	if (sz == 0)
		sz = (size_t) 2 << 20;
	p = aligned_alloc((size_t) 2 << 20, sz);
	if (p == NULL)
		die("out of memory (%zu bytes)", n);
#ifdef MADV_HUGEPAGE
	(void) madvise(p, sz, MADV_HUGEPAGE);
#endif
	return p;
}

static char *
xstrndup(const char *s, size_t n)
{
	char	   *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double
gb(uint64_t bytes)
{
	return (double) bytes / 1e9;
}

/* peak resident set size in GB, from /proc/self/status (0 if unknown) */
static double
peak_rss_gb(void)
{
	FILE	   *f = fopen("/proc/self/status", "r");
	char		line[256];
	double		r = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			r = strtod(line + 6, NULL) * 1024.0 / 1e9;
	fclose(f);
	return r;
}

/* the lexeme order of GpuirLexemeCmp (src/gpuirutils.c): bytes, then length */
static int
lexeme_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int			r = memcmp(a, b, alen < blen ? alen : blen);

	if (r != 0)
		return r;
	return (alen > blen) - (alen < blen);
}

/* ---------- threads ---------- */

typedef void (*ParFn) (void *arg, int tid, int nthreads);

typedef struct ParArg
{
	ParFn		fn;
	void	   *arg;
	int			tid;
	int			n;
} ParArg;

static void *
par_tramp(void *p)
{
	ParArg	   *a = p;

	a->fn(a->arg, a->tid, a->n);
	return NULL;
}

/* run fn(arg, tid, n) for tid 0..n-1 on n threads (tid 0 on the caller) */
static void
par_run(int n, ParFn fn, void *arg)
{
	pthread_t  *th = xmalloc(sizeof(pthread_t) * n);
	ParArg	   *a = xmalloc(sizeof(ParArg) * n);

	for (int i = 0; i < n; i++)
	{
		a[i].fn = fn;
		a[i].arg = arg;
		a[i].tid = i;
		a[i].n = n;
	}
	for (int i = 1; i < n; i++)
		if (pthread_create(&th[i], NULL, par_tramp, &a[i]) != 0)
			die("pthread_create failed");
	par_tramp(&a[0]);
	for (int i = 1; i < n; i++)
		pthread_join(th[i], NULL);
	free(th);
	free(a);
}

static inline uint64_t
split_at(uint64_t n, int i, int parts)
{
	return (uint64_t) ((unsigned __int128) n * (unsigned) i / (unsigned) parts);
}

/* ---------- random numbers: splitmix64 seeding xoshiro256** ---------- */

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

static void
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

/* ---------- alias tables (Vose) ---------- */

typedef struct AliasEnt
{
	uint32_t	prob;			/* keep the column when the coin < prob */
	uint32_t	alias;
} AliasEnt;

typedef struct Alias
{
	uint32_t	n;
	AliasEnt   *e;
} Alias;

static void
alias_build(Alias *a, const double *w, uint32_t n)
{
	double		total = 0;
	double	   *p = xmalloc(sizeof(double) * (n ? n : 1));
	uint32_t   *small = xmalloc(sizeof(uint32_t) * (n ? n : 1));
	uint32_t   *large = xmalloc(sizeof(uint32_t) * (n ? n : 1));
	uint32_t	ns = 0,
				nl = 0;

	a->n = n;
	a->e = xmalloc(sizeof(AliasEnt) * (n ? n : 1));
	for (uint32_t i = 0; i < n; i++)
		total += w[i];
	for (uint32_t i = 0; i < n; i++)
	{
		p[i] = w[i] * n / total;
		if (p[i] < 1.0)
			small[ns++] = i;
		else
			large[nl++] = i;
	}
	while (ns > 0 && nl > 0)
	{
		uint32_t	s = small[--ns];
		uint32_t	l = large[nl - 1];

		a->e[s].prob = (uint32_t) (p[s] * 4294967296.0);
		a->e[s].alias = l;
		p[l] = (p[l] + p[s]) - 1.0;
		if (p[l] < 1.0)
		{
			nl--;
			small[ns++] = l;
		}
	}
	while (nl > 0)
	{
		uint32_t	l = large[--nl];

		a->e[l].prob = UINT32_MAX;
		a->e[l].alias = l;
	}
	while (ns > 0)				/* rounding leftovers */
	{
		uint32_t	s = small[--ns];

		a->e[s].prob = UINT32_MAX;
		a->e[s].alias = s;
	}
	free(p);
	free(small);
	free(large);
}

static inline uint32_t
alias_draw(const Alias *a, uint64_t r)
{
	uint32_t	col = (uint32_t) (((r >> 32) * (uint64_t) a->n) >> 32);

	return ((uint32_t) r < a->e[col].prob) ? col : a->e[col].alias;
}

/* ---------- options ---------- */

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
} Options;

static const char *const mode_names[] = {"and", "or", "bmw"};

static void
usage(void)
{
	printf("usage: engine_bench (--vocab FILE --doclen FILE --queries FILE [--queries FILE ...]\n"
		   "                     | --synthetic V)\n"
		   "         [--docs N (40000000)] [--seed S (1)] [--threads T (cores)]\n"
		   "         [--batches 1,10,100,1000,10000] [--k 10,1000] [--modes and,or,bmw]\n"
		   "         [--max-queries M (0: all)] [--check Q (50)] [--selfcheck Q (3)]\n"
		   "         [--out FILE.tsv] [--k1 0.9] [--b 0.4] [--min-time 1] [--max-time 3]\n"
		   "         [--max-batch-s 10] [--copy-mib 1024] [--no-verify]\n"
		   "vocab: lexeme<TAB>df<TAB>cf; doclen: dl<TAB>count; queries: qid<TAB>lex lex ...\n"
		   "(.gz files are read through gzip -dc).  See the header of bench/engine_bench.c.\n");
}

static uint64_t
parse_u64(const char *opt, const char *s)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(s, &end);		/* accepts 4e7 */
	if (errno != 0 || end == s || *end != '\0' || v < 0 || v > 1.8e19 || v != floor(v))
		die("bad value for %s: '%s'", opt, s);
	return (uint64_t) v;
}

static double
parse_double(const char *opt, const char *s)
{
	char	   *end;
	double		v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v))
		die("bad value for %s: '%s'", opt, s);
	return v;
}

static int
parse_list(const char *opt, const char *s, uint32_t *out)
{
	int			n = 0;
	char	   *copy = xstrndup(s, strlen(s));
	char	   *save = NULL;

	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		uint64_t	v = parse_u64(opt, tok);

		if (n == MAX_LIST)
			die("%s: at most %d values", opt, MAX_LIST);
		if (v < 1 || v > UINT32_MAX)
			die("%s: value out of range: %s", opt, tok);
		out[n++] = (uint32_t) v;
	}
	free(copy);
	if (n == 0)
		die("%s: empty list", opt);
	return n;
}

static void
parse_options(Options *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	o->docs = 40000000;
	o->seed = 1;
	o->threads = (int) sysconf(_SC_NPROCESSORS_ONLN);
	if (o->threads < 1)
		o->threads = 1;
	o->nbatches = parse_list("--batches", "1,10,100,1000,10000", o->batches);
	o->nks = parse_list("--k", "10,1000", o->ks);
	o->nmodes = 3;
	o->modes[0] = GPUIR_CUDA_MODE_AND;
	o->modes[1] = GPUIR_CUDA_MODE_OR;
	o->modes[2] = GPUIR_CUDA_MODE_BMW;
	o->check = 50;
	o->selfcheck = 3;
	o->k1 = 0.9f;
	o->b = 0.4f;
	o->min_time = 1.0;
	o->max_time = 3.0;
	o->max_batch_s = 10.0;
	o->copy_mib = 1024;
	o->verify = 1;

	for (int i = 1; i < argc; i++)
	{
		char		name[64];
		const char *val = NULL;
		const char *arg = argv[i];
		const char *eq;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
		{
			usage();
			exit(0);
		}
		if (strcmp(arg, "--no-verify") == 0)
		{
			o->verify = 0;
			continue;
		}
		if (strncmp(arg, "--", 2) != 0)
			die("unexpected argument '%s' (--help for usage)", arg);
		eq = strchr(arg, '=');
		if (eq != NULL)
		{
			snprintf(name, sizeof(name), "%.*s", (int) (eq - arg), arg);
			val = eq + 1;
		}
		else
		{
			snprintf(name, sizeof(name), "%s", arg);
			if (i + 1 >= argc)
				die("%s needs a value", arg);
			val = argv[++i];
		}
		if (strcmp(name, "--vocab") == 0)
			o->vocab = val;
		else if (strcmp(name, "--doclen") == 0)
			o->doclen = val;
		else if (strcmp(name, "--queries") == 0)
		{
			if (o->nqueries == MAX_LIST)
				die("at most %d --queries", MAX_LIST);
			o->queries[o->nqueries++] = val;
		}
		else if (strcmp(name, "--synthetic") == 0)
			o->synthetic = (uint32_t) parse_u64(name, val);
		else if (strcmp(name, "--docs") == 0)
			o->docs = parse_u64(name, val);
		else if (strcmp(name, "--seed") == 0)
			o->seed = parse_u64(name, val);
		else if (strcmp(name, "--threads") == 0)
			o->threads = (int) parse_u64(name, val);
		else if (strcmp(name, "--batches") == 0)
			o->nbatches = parse_list(name, val, o->batches);
		else if (strcmp(name, "--k") == 0)
			o->nks = parse_list(name, val, o->ks);
		else if (strcmp(name, "--modes") == 0)
		{
			char	   *copy = xstrndup(val, strlen(val));
			char	   *save = NULL;

			o->nmodes = 0;
			for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			{
				int			m = -1;

				for (int j = 0; j < 3; j++)
					if (strcmp(tok, mode_names[j]) == 0)
						m = j;
				if (m < 0 || o->nmodes == 3)
					die("--modes: expected a list of and, or, bmw: '%s'", val);
				o->modes[o->nmodes++] = m;
			}
			free(copy);
			if (o->nmodes == 0)
				die("--modes: empty list");
		}
		else if (strcmp(name, "--max-queries") == 0)
			o->max_queries = (uint32_t) parse_u64(name, val);
		else if (strcmp(name, "--check") == 0)
			o->check = (uint32_t) parse_u64(name, val);
		else if (strcmp(name, "--selfcheck") == 0)
			o->selfcheck = (uint32_t) parse_u64(name, val);
		else if (strcmp(name, "--out") == 0)
			o->out = val;
		else if (strcmp(name, "--k1") == 0)
			o->k1 = (float) parse_double(name, val);
		else if (strcmp(name, "--b") == 0)
			o->b = (float) parse_double(name, val);
		else if (strcmp(name, "--min-time") == 0)
			o->min_time = parse_double(name, val);
		else if (strcmp(name, "--max-time") == 0)
			o->max_time = parse_double(name, val);
		else if (strcmp(name, "--max-batch-s") == 0)
			o->max_batch_s = parse_double(name, val);
		else if (strcmp(name, "--copy-mib") == 0)
			o->copy_mib = (uint32_t) parse_u64(name, val);
		else
			die("unknown option %s (--help for usage)", name);
	}
	if (o->synthetic == 0 && (o->vocab == NULL || o->doclen == NULL || o->nqueries == 0))
		die("need --vocab, --doclen and at least one --queries (or --synthetic V); --help for usage");
	if (o->docs < 1 || o->docs > 0xFFFFFFFEu)
		die("--docs must be 1 .. 4294967294");
	if (o->threads < 1 || o->threads > 1024)
		die("--threads must be 1 .. 1024");
	for (int i = 0; i < o->nks; i++)
		if (o->ks[i] > GPUIR_CUDA_MAX_K)
			die("--k: at most %d (GPUIR_CUDA_MAX_K)", GPUIR_CUDA_MAX_K);
	if (!(o->k1 >= 0 && o->b >= 0 && o->b <= 1))
		die("need k1 >= 0 and 0 <= b <= 1");
	if (o->max_time < o->min_time)
		o->max_time = o->min_time;
}

/* ---------- input files ---------- */

typedef struct Input
{
	FILE	   *f;
	int			is_pipe;
	const char *path;
} Input;

static void
input_open(Input *in, const char *path)
{
	size_t		len = strlen(path);

	in->path = path;
	in->is_pipe = 0;
	if (strcmp(path, "-") == 0)
		in->f = stdin;
	else if (len > 3 && strcmp(path + len - 3, ".gz") == 0)
	{
		char	   *cmd;

		if (strchr(path, '\'') != NULL)
			die("%s: a .gz path must not contain a single quote", path);
		cmd = xmalloc(len + 32);
		snprintf(cmd, len + 32, "gzip -dc -- '%s'", path);
		in->f = popen(cmd, "r");
		in->is_pipe = 1;
		free(cmd);
	}
	else
		in->f = fopen(path, "r");
	if (in->f == NULL)
		die("cannot open %s: %s", path, strerror(errno));
}

static void
input_close(Input *in)
{
	if (in->is_pipe)
	{
		int			rc = pclose(in->f);

		if (rc != 0)
			die("%s: gzip -dc failed (status %d)", in->path, rc);
	}
	else if (in->f != stdin)
		fclose(in->f);
}

/* strip a trailing newline / carriage return; returns the new length */
static size_t
chomp(char *line, ssize_t n)
{
	while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
		line[--n] = '\0';
	return (size_t) n;
}

static int
parse_field_u64(const char *s, const char **end, uint64_t *v)
{
	char	   *e;

	if (*s < '0' || *s > '9')
		return 0;
	errno = 0;
	*v = strtoull(s, &e, 10);
	if (errno != 0)
		return 0;
	*end = e;
	return 1;
}

/* ---------- vocabulary ---------- */

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

static uint64_t
hash_str(const char *s, size_t n)
{
	uint64_t	h = 1469598103934665603ULL;

	for (size_t i = 0; i < n; i++)
	{
		h ^= (unsigned char) s[i];
		h *= 1099511628211ULL;
	}
	return h ^ (h >> 29);
}

/* the term of lexeme s[0..n), or NO_TERM */
static uint32_t
vocab_find(const Vocab *v, const char *s, size_t n)
{
	for (uint64_t h = hash_str(s, n) & v->hmask;; h = (h + 1) & v->hmask)
	{
		uint32_t	t = v->hash[h];

		if (t == 0)
			return NO_TERM;
		t--;
		if (v->len[t] == n && memcmp(v->lex[t], s, n) == 0)
			return t;
	}
}

static void
vocab_index(Vocab *v)
{
	uint64_t	cap = 16;

	while (cap < 2 * (uint64_t) v->n + 16)
		cap *= 2;
	v->hmask = cap - 1;
	v->hash = xcalloc(cap, sizeof(uint32_t));
	for (uint32_t t = 0; t < v->n; t++)
	{
		uint64_t	h = hash_str(v->lex[t], v->len[t]) & v->hmask;

		while (v->hash[h] != 0)
			h = (h + 1) & v->hmask;
		v->hash[h] = t + 1;
	}
}

static void
vocab_add(Vocab *v, const char *s, size_t n, uint64_t cf)
{
	if (v->n == v->cap)
	{
		v->cap = v->cap ? v->cap * 2 : 1024;
		v->lex = xrealloc(v->lex, sizeof(char *) * v->cap);
		v->len = xrealloc(v->len, sizeof(uint32_t) * v->cap);
		v->cf = xrealloc(v->cf, sizeof(uint64_t) * v->cap);
	}
	v->lex[v->n] = xstrndup(s, n);
	v->len[v->n] = (uint32_t) n;
	v->cf[v->n] = cf;
	v->total_cf += cf;
	v->n++;
}

static void
vocab_read(Vocab *v, const char *path)
{
	Input		in;
	char	   *line = NULL;
	size_t		lcap = 0;
	ssize_t		r;
	uint64_t	bad = 0,
				zero = 0,
				dup = 0;
	Vocab		tmp;

	memset(v, 0, sizeof(*v));
	input_open(&in, path);
	while ((r = getline(&line, &lcap, in.f)) >= 0)
	{
		size_t		n = chomp(line, r);
		char	   *tab = memchr(line, '\t', n);
		const char *p;
		uint64_t	df,
					cf;

		if (tab == NULL || tab == line ||
			!parse_field_u64(tab + 1, &p, &df) || *p != '\t' ||
			!parse_field_u64(p + 1, &p, &cf) || *p != '\0')
		{
			if (n > 0 && bad++ < 3)
				fprintf(stderr, "engine_bench: %s: skipping line '%.60s'\n", path, line);
			continue;
		}
		(void) df;
		if (cf == 0)
		{
			zero++;
			continue;
		}
		vocab_add(v, line, (size_t) (tab - line), cf);
	}
	free(line);
	input_close(&in);
	if (v->n == 0)
		die("%s: no vocabulary entry", path);
	if (v->n >= UINT32_MAX - 1)
		die("%s: too many lexemes", path);
	/* drop duplicate lexemes (first kept) */
	vocab_index(v);
	memset(&tmp, 0, sizeof(tmp));
	for (uint32_t t = 0; t < v->n; t++)
		if (vocab_find(v, v->lex[t], v->len[t]) != t)
			dup++;
	if (dup > 0)
	{
		for (uint32_t t = 0; t < v->n; t++)
		{
			if (vocab_find(v, v->lex[t], v->len[t]) == t)
				vocab_add(&tmp, v->lex[t], v->len[t], v->cf[t]);
			free(v->lex[t]);
		}
		free(v->lex);
		free(v->len);
		free(v->cf);
		free(v->hash);
		*v = tmp;
		vocab_index(v);
	}
	printf("vocab: %s: %u lexemes, %" PRIu64 " tokens (sum of cf)", path, v->n, v->total_cf);
	if (bad || zero || dup)
		printf("; skipped %" PRIu64 " malformed lines, %" PRIu64 " with cf 0, %" PRIu64
			   " duplicates", bad, zero, dup);
	printf("\n");
}

/* ---------- document length histogram ---------- */

typedef struct DocLen
{
	uint32_t	n;
	uint32_t   *dl;
	double	   *count;
	uint32_t	max_dl;
	double		mean;
} DocLen;

static void
doclen_finish(DocLen *h, const char *what)
{
	double		docs = 0,
				toks = 0;

	if (h->n == 0)
		die("%s: no document length with dl > 0", what);
	h->max_dl = 0;
	for (uint32_t i = 0; i < h->n; i++)
	{
		docs += h->count[i];
		toks += h->count[i] * h->dl[i];
		if (h->dl[i] > h->max_dl)
			h->max_dl = h->dl[i];
	}
	h->mean = toks / docs;
}

static void
doclen_read(DocLen *h, const char *path)
{
	Input		in;
	char	   *line = NULL;
	size_t		lcap = 0,
				cap = 0;
	ssize_t		r;
	uint64_t	bad = 0,
				zero_docs = 0;

	memset(h, 0, sizeof(*h));
	input_open(&in, path);
	while ((r = getline(&line, &lcap, in.f)) >= 0)
	{
		size_t		n = chomp(line, r);
		const char *p;
		uint64_t	dl,
					cnt;

		if (!parse_field_u64(line, &p, &dl) || *p != '\t' ||
			!parse_field_u64(p + 1, &p, &cnt) || *p != '\0' || dl > 100000000)
		{
			if (n > 0 && bad++ < 3)
				fprintf(stderr, "engine_bench: %s: skipping line '%.60s'\n", path, line);
			continue;
		}
		if (dl == 0)
		{
			zero_docs += cnt;
			continue;
		}
		if (cnt == 0)
			continue;
		if (h->n == cap)
		{
			cap = cap ? cap * 2 : 1024;
			h->dl = xrealloc(h->dl, sizeof(uint32_t) * cap);
			h->count = xrealloc(h->count, sizeof(double) * cap);
		}
		h->dl[h->n] = (uint32_t) dl;
		h->count[h->n] = (double) cnt;
		h->n++;
	}
	free(line);
	input_close(&in);
	doclen_finish(h, path);
	printf("doclen: %s: %u lengths, 1..%u tokens, mean %.2f", path, h->n, h->max_dl, h->mean);
	if (zero_docs)
		printf("; dropped %" PRIu64 " documents of dl 0 (not indexed)", zero_docs);
	if (bad)
		printf("; skipped %" PRIu64 " malformed lines", bad);
	printf("\n");
}

/* ---------- query logs ---------- */

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

typedef struct Tok
{
	const char *s;
	size_t		n;
} Tok;

static int
tok_cmp(const void *a, const void *b)
{
	const Tok  *x = a;
	const Tok  *y = b;

	return lexeme_cmp(x->s, x->n, y->s, y->n);
}

static char *
log_name(const char *path)
{
	const char *base = strrchr(path, '/');
	char	   *name;
	size_t		n;
	static const char *const exts[] = {".gz", ".tsv", ".txt"};

	base = base ? base + 1 : path;
	name = xstrndup(base, strlen(base));
	n = strlen(name);
	for (int i = 0; i < 3; i++)
	{
		size_t		el = strlen(exts[i]);

		if (n > el && strcmp(name + n - el, exts[i]) == 0)
			name[n -= el] = '\0';
	}
	return name;
}

/* add one query: its lexemes toks[0..nt), deduplicated and in lexeme order */
static void
qlog_add(QLog *l, const Vocab *v, const char *qid, Tok *toks, uint32_t nt, uint32_t max_queries)
{
	uint32_t	m = 0;

	if (max_queries > 0 && l->nq >= max_queries)
		return;
	qsort(toks, nt, sizeof(Tok), tok_cmp);
	for (uint32_t i = 0; i < nt; i++)
		if (m == 0 || tok_cmp(&toks[m - 1], &toks[i]) != 0)
			toks[m++] = toks[i];
	if (m == 0)
	{
		l->dropped_empty++;
		return;
	}
	if (m > MAX_QUERY_TERMS)
	{
		l->dropped_long++;
		return;
	}
	if (l->nq + 1 >= l->cap)
	{
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->qid = xrealloc(l->qid, sizeof(char *) * l->cap);
		l->qoff = xrealloc(l->qoff, sizeof(uint32_t) * (l->cap + 1));
	}
	if (l->nq == 0)
		l->qoff[0] = 0;
	if (l->qoff[l->nq] + m > l->nterm_cap)
	{
		l->nterm_cap = l->nterm_cap * 2 + m + 1024;
		l->qterm = xrealloc(l->qterm, sizeof(uint32_t) * l->nterm_cap);
	}
	for (uint32_t i = 0; i < m; i++)
	{
		uint32_t	t = vocab_find(v, toks[i].s, toks[i].n);

		if (t == NO_TERM)
			l->not_in_vocab++;
		l->qterm[l->qoff[l->nq] + i] = t;
	}
	l->qid[l->nq] = xstrndup(qid, strlen(qid));
	l->qoff[l->nq + 1] = l->qoff[l->nq] + m;
	l->nq++;
}

static void
qlog_read(QLog *l, const Vocab *v, const char *path, uint32_t max_queries)
{
	Input		in;
	char	   *line = NULL;
	size_t		lcap = 0,
				tcap = 0;
	ssize_t		r;
	Tok		   *toks = NULL;
	uint64_t	bad = 0;

	memset(l, 0, sizeof(*l));
	l->name = log_name(path);
	input_open(&in, path);
	while ((r = getline(&line, &lcap, in.f)) >= 0)
	{
		size_t		n = chomp(line, r);
		char	   *tab = memchr(line, '\t', n);
		uint32_t	nt = 0;
		char	   *p;

		if (n == 0)
			continue;
		l->lines++;
		if (tab == NULL)
		{
			if (bad++ < 3)
				fprintf(stderr, "engine_bench: %s: no TAB in line '%.60s'\n", path, line);
			l->dropped_empty++;
			continue;
		}
		*tab = '\0';
		p = tab + 1;
		for (;;)
		{
			char	   *s;

			while (*p == ' ' || *p == '\t')
				p++;
			if (*p == '\0')
				break;
			s = p;
			while (*p != '\0' && *p != ' ' && *p != '\t')
				p++;
			if (nt == tcap)
			{
				tcap = tcap ? tcap * 2 : 64;
				toks = xrealloc(toks, sizeof(Tok) * tcap);
			}
			toks[nt].s = s;
			toks[nt].n = (size_t) (p - s);
			nt++;
		}
		qlog_add(l, v, line, toks, nt, max_queries);
	}
	free(line);
	free(toks);
	input_close(&in);
}

/* ---------- synthetic inputs (--synthetic V) ---------- */

static void
synthetic_inputs(Vocab *v, DocLen *h, QLog *l, uint32_t V, uint64_t seed, uint32_t max_queries)
{
	Rng			r;
	char		buf[64];
	double		hv = 0;
	const uint32_t nq = 2000;

	memset(v, 0, sizeof(*v));
	memset(h, 0, sizeof(*h));
	memset(l, 0, sizeof(*l));
	/* Zipf(1): cf(rank) = C / rank, C such that the total is about 1e9 */
	for (uint32_t i = 1; i <= V; i++)
		hv += 1.0 / i;
	for (uint32_t i = 1; i <= V; i++)
	{
		uint64_t	cf = (uint64_t) llround(1e9 / hv / i);
		int			n = snprintf(buf, sizeof(buf), "w%u", i);

		vocab_add(v, buf, (size_t) n, cf ? cf : 1);
	}
	vocab_index(v);
	/* log-normal lengths, median 28, sigma 0.55, 5..300 tokens */
	h->dl = xmalloc(sizeof(uint32_t) * 296);
	h->count = xmalloc(sizeof(double) * 296);
	for (uint32_t dl = 5; dl <= 300; dl++)
	{
		double		z = (log((double) dl) - log(28.0)) / 0.55;

		h->dl[h->n] = dl;
		h->count[h->n] = floor(1e6 * exp(-0.5 * z * z) / dl) + 1;
		h->n++;
	}
	doclen_finish(h, "synthetic");
	/* queries: 1..5 terms, ranks log-uniform in 1..V */
	l->name = xstrndup("synthetic", 9);
	rng_seed(&r, seed ^ 0x5EED5EEDULL, 0xFFFFFFFFULL);
	for (uint32_t q = 0; q < nq; q++)
	{
		Tok			toks[8];
		char		words[8][16];
		uint32_t	nt = 1 + (uint32_t) (rng_next(&r) % 4) + (rng_next(&r) % 8 == 0);
		char		qid[16];

		for (uint32_t j = 0; j < nt; j++)
		{
			uint32_t	rank = (uint32_t) floor(exp(rng_double(&r) * log((double) V))) + 1;

			if (rank > V)
				rank = V;
			toks[j].n = (size_t) snprintf(words[j], sizeof(words[j]), "w%u", rank);
			toks[j].s = words[j];
		}
		snprintf(qid, sizeof(qid), "s%u", q);
		l->lines++;
		qlog_add(l, v, qid, toks, nt, max_queries);
	}
	printf("synthetic inputs: Zipf(1) vocabulary of %u terms, log-normal doc lengths 5..300 "
		   "(mean %.2f), %u queries of 1..5 terms\n", V, h->mean, l->nq);
}

/* ---------- corpus generation and inversion ---------- */

typedef struct GenThread
{
	uint32_t	d0,
				d1;				/* documents [d0, d1) */
	uint32_t   *fterm;			/* forward postings: term, tf */
	uint32_t   *ftf;
	uint64_t	np,
				cap;
	uint32_t   *cnt;			/* [V] documents holding the term; then cursor */
	uint64_t	tokens;
} GenThread;

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

typedef struct GenCtx
{
	Corpus	   *c;
	GenThread  *th;
	uint64_t	seed;
	uint32_t	nchunks;
	Alias		dl_alias;
	const uint32_t *dl_val;
	uint32_t	max_dl;
	double		mean_dl;
	Alias		head,
				tail;
	uint32_t   *head_term;
	uint32_t   *tail_term;
	uint64_t	head_thr;		/* (r >> 11) < head_thr: draw from the head */
} GenCtx;

static void
gen_worker(void *arg, int tid, int nt)
{
	GenCtx	   *g = arg;
	Corpus	   *c = g->c;
	GenThread  *t = &g->th[tid];
	uint32_t	ch0 = (uint32_t) split_at(g->nchunks, tid, nt);
	uint32_t	ch1 = (uint32_t) split_at(g->nchunks, tid + 1, nt);
	uint32_t   *tfc = xcalloc(c->V, sizeof(uint32_t));
	uint32_t   *dist = xmalloc(sizeof(uint32_t) * ((size_t) g->max_dl + 1));

	t->d0 = (uint32_t) ((uint64_t) ch0 * GEN_CHUNK < c->ndocs ? (uint64_t) ch0 * GEN_CHUNK : c->ndocs);
	t->d1 = (uint32_t) ((uint64_t) ch1 * GEN_CHUNK < c->ndocs ? (uint64_t) ch1 * GEN_CHUNK : c->ndocs);
	t->cnt = xcalloc(c->V, sizeof(uint32_t));
	t->cap = (uint64_t) ((t->d1 - t->d0) * g->mean_dl) + 4096;
	t->fterm = big_alloc(sizeof(uint32_t) * t->cap);
	t->ftf = big_alloc(sizeof(uint32_t) * t->cap);
	t->np = 0;
	t->tokens = 0;
	for (uint32_t ch = ch0; ch < ch1; ch++)
	{
		Rng			r;
		uint32_t	da = (uint32_t) ((uint64_t) ch * GEN_CHUNK);
		uint32_t	db = (uint32_t) ((uint64_t) da + GEN_CHUNK < c->ndocs ? da + GEN_CHUNK : c->ndocs);

		rng_seed(&r, g->seed, ch);
		for (uint32_t d = da; d < db; d++)
		{
			uint32_t	dl = g->dl_val[alias_draw(&g->dl_alias, rng_next(&r))];
			uint32_t	nd = 0;

			for (uint32_t i = 0; i < dl; i++)
			{
				uint64_t	r1 = rng_next(&r);
				uint32_t	v;

				if ((r1 >> 11) < g->head_thr)
					v = g->head_term[alias_draw(&g->head, rng_next(&r))];
				else
					v = g->tail_term[alias_draw(&g->tail, rng_next(&r))];
				if (tfc[v]++ == 0)
					dist[nd++] = v;
			}
			if (t->np + nd > t->cap)
			{
				t->cap = t->cap + t->cap / 4 + nd + (1 << 20);
				t->fterm = xrealloc(t->fterm, sizeof(uint32_t) * t->cap);
				t->ftf = xrealloc(t->ftf, sizeof(uint32_t) * t->cap);
			}
			for (uint32_t j = 0; j < nd; j++)
			{
				uint32_t	v = dist[j];

				t->fterm[t->np] = v;
				t->ftf[t->np] = tfc[v];
				t->np++;
				tfc[v] = 0;
				t->cnt[v]++;
			}
			c->doclen[d] = dl;
			c->docnp[d] = nd;
			t->tokens += dl;
		}
	}
	free(tfc);
	free(dist);
}

typedef struct InvCtx
{
	Corpus	   *c;
	GenThread  *th;
	int			ngen;
	uint32_t   *df;
} InvCtx;

/* per term: df, and each thread's count turned into its cursor (exclusive prefix) */
static void
inv_count_worker(void *arg, int tid, int nt)
{
	InvCtx	   *x = arg;
	uint32_t	v0 = (uint32_t) split_at(x->c->V, tid, nt);
	uint32_t	v1 = (uint32_t) split_at(x->c->V, tid + 1, nt);

	for (uint32_t v = v0; v < v1; v++)
	{
		uint64_t	s = 0;

		for (int t = 0; t < x->ngen; t++)
		{
			uint32_t	n = x->th[t].cnt[v];

			x->th[t].cnt[v] = (uint32_t) s;
			s += n;
		}
		if (s > UINT32_MAX)
			die("a term is in more than 2^32 documents");
		x->df[v] = (uint32_t) s;
	}
}

/* scatter generator thread tid's postings into the lists (docIDs ascending) */
static void
inv_scatter_worker(void *arg, int tid, int nt)
{
	InvCtx	   *x = arg;
	Corpus	   *c = x->c;
	GenThread  *t = &x->th[tid];
	uint64_t	p = 0;

	(void) nt;
	for (uint32_t d = t->d0; d < t->d1; d++)
	{
		for (uint32_t j = 0; j < c->docnp[d]; j++, p++)
		{
			uint32_t	v = t->fterm[p];
			uint64_t	pos = c->start[v] + t->cnt[v]++;

			c->inv_doc[pos] = d;
			c->inv_tf[pos] = t->ftf[p];
		}
	}
	free(t->fterm);
	free(t->ftf);
	free(t->cnt);
	t->fterm = t->ftf = t->cnt = NULL;
}

typedef struct InvCheck
{
	const Corpus *c;
	uint64_t	bad[1024];
	uint64_t	seen[1024];
} InvCheck;

/*
 * thread tid checks the documents of its docID range [d0, d1): for every
 * list, the part inside the range (found by binary search) is strictly
 * increasing with tf >= 1; per document, the number of postings and the
 * sum of tf must be the generated distinct terms and dl (sums kept for the
 * range only, so no atomics)
 */
static void
inv_check_worker(void *arg, int tid, int nt)
{
	InvCheck   *x = arg;
	const Corpus *c = x->c;
	uint32_t	d0 = (uint32_t) split_at(c->ndocs, tid, nt);
	uint32_t	d1 = (uint32_t) split_at(c->ndocs, tid + 1, nt);
	uint64_t   *sum = xcalloc((size_t) (d1 - d0) + 1, sizeof(uint64_t));
	uint64_t	bad = 0,
				seen = 0;

	for (uint32_t v = 0; v < c->V; v++)
	{
		uint64_t	lo = c->start[v],
					hi = c->start[v + 1];

		while (lo < hi)
		{
			uint64_t	mid = lo + (hi - lo) / 2;

			if (c->inv_doc[mid] < d0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (uint64_t p = lo; p < c->start[v + 1] && c->inv_doc[p] < d1; p++)
		{
			uint32_t	d = c->inv_doc[p];

			seen++;
			if ((p > c->start[v] && d <= c->inv_doc[p - 1]) || c->inv_tf[p] == 0)
				bad++;
			else
				sum[d - d0] += (1ULL << 32) | c->inv_tf[p];
		}
	}
	for (uint32_t d = d0; d < d1; d++)
		if ((sum[d - d0] >> 32) != c->docnp[d] || (uint32_t) sum[d - d0] != c->doclen[d])
			bad++;
	free(sum);
	x->bad[tid] = bad;
	x->seen[tid] = seen;
}

/*
 * check the inversion: every list strictly increasing, every posting seen
 * by exactly one docID range (so below ndocs), and each document with
 * docnp[d] postings whose tfs sum to its dl
 */
static void
check_inversion(const Corpus *c, int nthreads)
{
	InvCheck   *x = xcalloc(1, sizeof(InvCheck));
	uint64_t	bad = 0,
				seen = 0;
	double		t0 = now_s();

	x->c = c;
	par_run(nthreads, inv_check_worker, x);
	for (int t = 0; t < nthreads; t++)
	{
		bad += x->bad[t];
		seen += x->seen[t];
	}
	free(x);
	if (bad || seen != c->npostings)
		die("inversion check failed: %" PRIu64 " bad postings or documents, %" PRIu64
			" postings seen of %" PRIu64, bad, seen, c->npostings);
	printf("invert: checked (lists strictly increasing; per document, postings and sum of tf "
		   "= generated distinct terms and dl) in %.2f s\n", now_s() - t0);
}

static int
u64_desc_idx_cmp(const void *a, const void *b, void *arg)
{
	const uint64_t *cf = arg;
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	if (cf[x] != cf[y])
		return cf[x] < cf[y] ? 1 : -1;
	return (x > y) - (x < y);
}

static void
generate_corpus(Corpus *c, const Vocab *v, const DocLen *h, uint32_t ndocs, uint64_t seed,
				int nthreads, int verify)
{
	GenCtx		g;
	InvCtx		x;
	uint32_t   *order;
	double	   *w;
	uint32_t	H = v->n < HEAD_TERMS ? v->n : HEAD_TERMS;
	double		head_cf = 0,
				t0,
				t1,
				t2,
				ts;
	uint64_t	tokens = 0;

	memset(c, 0, sizeof(*c));
	memset(&g, 0, sizeof(g));
	c->ndocs = ndocs;
	c->V = v->n;
	c->doclen = big_alloc(sizeof(uint32_t) * (size_t) ndocs);
	c->docnp = big_alloc(sizeof(uint32_t) * (size_t) ndocs);

	/* alias tables: lengths, the H most frequent terms, the rest */
	alias_build(&g.dl_alias, h->count, h->n);
	g.dl_val = h->dl;
	g.max_dl = h->max_dl;
	g.mean_dl = h->mean;
	order = xmalloc(sizeof(uint32_t) * v->n);
	for (uint32_t i = 0; i < v->n; i++)
		order[i] = i;
	qsort_r(order, v->n, sizeof(uint32_t), u64_desc_idx_cmp, v->cf);
	w = xmalloc(sizeof(double) * v->n);
	for (uint32_t i = 0; i < v->n; i++)
		w[i] = (double) v->cf[order[i]];
	for (uint32_t i = 0; i < H; i++)
		head_cf += w[i];
	g.head_term = order;
	g.tail_term = order + H;
	alias_build(&g.head, w, H);
	alias_build(&g.tail, w + H, v->n - H);
	free(w);
	g.head_thr = (H == v->n) ? (1ULL << 53) :
		(uint64_t) (head_cf / (double) v->total_cf * 9007199254740992.0);
	g.c = c;
	g.seed = seed;
	g.nchunks = (uint32_t) (((uint64_t) ndocs + GEN_CHUNK - 1) / GEN_CHUNK);
	g.th = xcalloc((size_t) nthreads, sizeof(GenThread));

	printf("generate: %u documents on %d threads (dl from the histogram, tokens i.i.d. by cf; "
		   "the %u most frequent terms hold %.1f%% of the tokens)...\n",
		   ndocs, nthreads, H, 100.0 * head_cf / (double) v->total_cf);
	fflush(stdout);
	t0 = now_s();
	par_run(nthreads, gen_worker, &g);
	t1 = now_s();
	for (int t = 0; t < nthreads; t++)
	{
		tokens += g.th[t].tokens;
		c->npostings += g.th[t].np;
	}
	c->total_dl = tokens;

	/* invert: df and cursors, list starts, scatter */
	x.c = c;
	x.th = g.th;
	x.ngen = nthreads;
	x.df = xmalloc(sizeof(uint32_t) * v->n);
	par_run(nthreads, inv_count_worker, &x);
	c->start = xmalloc(sizeof(uint64_t) * ((size_t) v->n + 1));
	c->start[0] = 0;
	for (uint32_t t = 0; t < v->n; t++)
	{
		c->start[t + 1] = c->start[t] + x.df[t];
		if (x.df[t] > 0)
		{
			c->nlists++;
			if (x.df[t] > c->max_df)
				c->max_df = x.df[t];
		}
	}
	if (c->start[v->n] != c->npostings)
		die("internal error: inversion counts %" PRIu64 " postings, generation %" PRIu64,
			c->start[v->n], c->npostings);
	c->inv_doc = big_alloc(sizeof(uint32_t) * c->npostings);
	c->inv_tf = big_alloc(sizeof(uint32_t) * c->npostings);
	ts = now_s();
	par_run(nthreads, inv_scatter_worker, &x);
	t2 = now_s();
	free(x.df);
	free(g.th);
	free(g.dl_alias.e);
	free(g.head.e);
	free(g.tail.e);

	printf("generate: %.2f s (%.0f docs/s, %.1f M tokens/s); invert: %.2f s (scatter %.2f s)\n",
		   t1 - t0, ndocs / (t1 - t0), tokens / 1e6 / (t1 - t0), t2 - t1, t2 - ts);
	printf("corpus (GENERATED): %u docs, %" PRIu64 " tokens (mean dl %.2f), %" PRIu64
		   " postings (%.2f per doc), %u terms with a list (of %u), longest list %u\n",
		   ndocs, tokens, (double) tokens / ndocs, c->npostings,
		   (double) c->npostings / ndocs, c->nlists, v->n, c->max_df);
	if (verify)
		check_inversion(c, nthreads);
	/* fidelity: generated against expected occurrences of a few terms */
	printf("generate: cf generated / expected (tokens x cf / total cf):");
	for (uint32_t i = 0; i < v->n; i = (i == 0) ? 9 : i * 10 + 9)
	{
		uint32_t	t = order[i];
		uint64_t	occ = 0;
		double		want = (double) tokens * v->cf[t] / (double) v->total_cf;

		for (uint64_t p = c->start[t]; p < c->start[t + 1]; p++)
			occ += c->inv_tf[p];
		printf(" rank %u: %" PRIu64 " / %.0f;", i + 1, occ, want);
	}
	printf("\n");
	free(order);
	if (c->npostings < 1000000000ULL)
		printf("\n*** WARNING: %" PRIu64 " postings, fewer than 1e9: this is not Gov2 scale "
			   "(raise --docs) ***\n\n", c->npostings);
	fflush(stdout);
}

/* ---------- the segment ---------- */

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

/*
 * block_impacts: the block's GPUIR_CUDA_BLOCK_IMPACTS impacts, as the index
 * computes them (GpuirCodecBlockImpacts, called by src/gpuirsegment.c);
 * a short frontier repeats its last pair.
 */
static void
block_impacts(const uint32_t *tfs, const uint32_t *dls, int n, double k1, double b,
			  double avgdl, uint32_t *itf, uint32_t *idl)
{
	uint32_t	pairs[GPUIR_BLOCK_SIZE][2];
	int			m;

	for (int i = 0; i < n; i++)
	{
		pairs[i][0] = tfs[i];
		pairs[i][1] = dls[i];
	}
	m = GpuirCodecBlockImpacts(pairs, n, GPUIR_CUDA_BLOCK_IMPACTS, k1, b, avgdl);
	for (int i = 0; i < GPUIR_CUDA_BLOCK_IMPACTS; i++)
	{
		int			p = (i < m) ? i : (m > 0 ? m - 1 : 0);	/* m >= 1 when n >= 1 */

		itf[i] = pairs[p][0];
		idl[i] = pairs[p][1];
	}
}

typedef struct BuildThread
{
	uint32_t	v0,
				v1;				/* list order positions [v0, v1) */
	uint8_t    *buf;
	uint64_t	len,
				cap;
	uint64_t	base;
	uint64_t	bad;			/* blocks that did not decode back */
} BuildThread;

typedef struct BuildCtx
{
	Segment    *s;
	const Corpus *c;
	const uint32_t *lorder;		/* list order: terms by lexeme */
	const uint64_t *lstart;		/* [V + 1] postings before list position i */
	BuildThread *th;
	double		k1,
				b,
				avgdl;
	int			verify;
} BuildCtx;

static void
build_worker(void *arg, int tid, int nt)
{
	BuildCtx   *x = arg;
	Segment    *s = x->s;
	const Corpus *c = x->c;
	BuildThread *t = &x->th[tid];
	uint64_t	P = c->npostings;
	uint32_t	lo = 0,
				hi = c->V;
	uint64_t	target = split_at(P, tid, nt);

	/* first list position whose postings start at or after tid's share */
	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (x->lstart[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	t->v0 = (tid == 0) ? 0 : lo;
	/* v1 is the next thread's v0: computed the same way */
	target = split_at(P, tid + 1, nt);
	lo = 0;
	hi = c->V;
	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (x->lstart[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	t->v1 = (tid == nt - 1) ? c->V : lo;
	if (t->v1 < t->v0)
		t->v1 = t->v0;
	t->cap = (x->lstart[t->v1] - x->lstart[t->v0]) * 2 + GPUIR_BLOCK_MAX_BYTES;
	t->buf = xmalloc(t->cap);
	t->len = 0;
	t->bad = 0;
	for (uint32_t i = t->v0; i < t->v1; i++)
	{
		uint32_t	v = x->lorder[i];
		uint64_t	n = c->start[v + 1] - c->start[v];
		const uint32_t *docs = c->inv_doc + c->start[v];
		const uint32_t *tfs = c->inv_tf + c->start[v];
		uint32_t	prev = GPUIR_FIRST_PREV_DOCID;
		uint32_t	fb = s->first_block[v];

		for (uint64_t j = 0; j < n; j += GPUIR_BLOCK_SIZE)
		{
			int			m = (n - j < GPUIR_BLOCK_SIZE) ? (int) (n - j) : GPUIR_BLOCK_SIZE;
			uint32_t	b = fb + (uint32_t) (j / GPUIR_BLOCK_SIZE);
			uint32_t	dls[GPUIR_BLOCK_SIZE];
			uint64_t	off = t->len;
			size_t		enc;

			if (t->len + GPUIR_BLOCK_MAX_BYTES > t->cap)
			{
				t->cap = t->cap + t->cap / 2 + GPUIR_BLOCK_MAX_BYTES;
				t->buf = xrealloc(t->buf, t->cap);
			}
			enc = GpuirCodecEncode(docs + j, tfs + j, m, prev, t->buf + off);
			t->len += enc;
			s->block_offset[b] = (uint32_t) off;	/* local; rebased below */
			s->block_last[b] = docs[j + m - 1];
			for (int k = 0; k < m; k++)
				dls[k] = c->doclen[docs[j + k]];
			block_impacts(tfs + j, dls, m, x->k1, x->b, x->avgdl,
						  &s->impact_tf[(size_t) GPUIR_CUDA_BLOCK_IMPACTS * b],
						  &s->impact_dl[(size_t) GPUIR_CUDA_BLOCK_IMPACTS * b]);
			if (x->verify)
			{
				uint32_t	dd[GPUIR_BLOCK_SIZE],
							tt[GPUIR_BLOCK_SIZE];
				int			r = GpuirCodecDecode(t->buf + off, enc, prev, dd, tt);

				if (r != m || memcmp(dd, docs + j, sizeof(uint32_t) * m) != 0 ||
					memcmp(tt, tfs + j, sizeof(uint32_t) * m) != 0)
					t->bad++;
			}
			prev = docs[j + m - 1];
		}
	}
}

#define SUM_PARTS	256			/* checksum slices: fixed, so --threads does not matter */

typedef struct SumCtx
{
	const Segment *s;
	uint64_t	part[SUM_PARTS];
} SumCtx;

static inline uint64_t
mix64(uint64_t h, uint64_t x)
{
	h ^= x + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
	return h * 0xBF58476D1CE4E5B9ULL;
}

/* hashes of the payload's slices tid, tid + nt, ... (8-byte words) */
static void
sum_worker(void *arg, int tid, int nt)
{
	SumCtx	   *x = arg;
	uint64_t	n = x->s->payload_bytes / 8;

	for (int p = tid; p < SUM_PARTS; p += nt)
	{
		uint64_t	h = 0;

		for (uint64_t i = split_at(n, p, SUM_PARTS); i < split_at(n, p + 1, SUM_PARTS); i++)
		{
			uint64_t	w;

			memcpy(&w, x->s->payload + 8 * i, 8);
			h = mix64(h, w);
		}
		x->part[p] = h;
	}
}

/*
 * segment_checksum: a fingerprint of the segment (payload, block directory,
 * doc lengths), the same for the same --docs and --seed whatever --threads
 */
static uint64_t
segment_checksum(const Segment *s, int nthreads)
{
	SumCtx	   *x = xcalloc(1, sizeof(SumCtx));
	uint64_t	h = mix64(0, s->payload_bytes);

	x->s = s;
	par_run(nthreads < SUM_PARTS ? nthreads : SUM_PARTS, sum_worker, x);
	for (int p = 0; p < SUM_PARTS; p++)
		h = mix64(h, x->part[p]);
	free(x);
	for (uint64_t i = s->payload_bytes / 8 * 8; i < s->payload_bytes; i++)
		h = mix64(h, s->payload[i]);
	for (uint32_t b = 0; b < s->nblocks; b++)
		h = mix64(h, ((uint64_t) s->block_last[b] << 32) ^ s->block_offset[b] ^
				  ((uint64_t) s->impact_tf[2 * b] << 8) ^ ((uint64_t) s->impact_dl[2 * b] << 40) ^
				  ((uint64_t) s->impact_tf[2 * b + 1] << 20) ^ s->impact_dl[2 * b + 1]);
	for (uint32_t d = 0; d < s->ndocs; d++)
		h = mix64(h, s->doclen[d]);
	return h;
}

static void
copy_worker(void *arg, int tid, int nt)
{
	BuildCtx   *x = arg;
	Segment    *s = x->s;
	BuildThread *t = &x->th[tid];
	uint32_t	b0,
				b1;

	(void) nt;
	if (t->v0 >= t->v1)
	{
		free(t->buf);
		t->buf = NULL;
		return;
	}
	memcpy(s->payload + t->base, t->buf, t->len);
	free(t->buf);
	t->buf = NULL;
	b0 = s->first_block[x->lorder[t->v0]];
	b1 = (t->v1 < x->c->V) ? s->first_block[x->lorder[t->v1]] : s->nblocks;
	for (uint32_t b = b0; b < b1; b++)
		s->block_offset[b] += (uint32_t) t->base;
}

static int
lex_order_cmp(const void *a, const void *b, void *arg)
{
	const Vocab *v = arg;
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return lexeme_cmp(v->lex[x], v->len[x], v->lex[y], v->len[y]);
}

static void
build_segment(Segment *s, Corpus *c, const Vocab *voc, const Options *o)
{
	BuildCtx	x;
	uint32_t   *lorder = xmalloc(sizeof(uint32_t) * c->V);
	uint64_t   *lstart = xmalloc(sizeof(uint64_t) * ((size_t) c->V + 1));
	uint64_t	nb = 0,
				total = 0,
				bad = 0;
	double		t0 = now_s(),
				t1;
	const double N = (double) c->ndocs;

	memset(s, 0, sizeof(*s));
	s->ndocs = c->ndocs;
	s->npostings = c->npostings;
	s->V = c->V;
	s->doclen = c->doclen;
	s->sc.k1 = o->k1;
	s->sc.b = o->b;
	s->sc.avgdl = (float) ((double) c->total_dl / N);
	s->avgdl_build = (double) c->total_dl / N;
	if (s->avgdl_build < 1.0)
		s->avgdl_build = 1.0;

	/* dictionary order: lists by lexeme, as the index writes them */
	for (uint32_t v = 0; v < c->V; v++)
		lorder[v] = v;
	qsort_r(lorder, c->V, sizeof(uint32_t), lex_order_cmp, (void *) voc);
	s->first_block = xmalloc(sizeof(uint32_t) * c->V);
	s->nblk = xmalloc(sizeof(uint32_t) * c->V);
	s->npost = xmalloc(sizeof(uint32_t) * c->V);
	s->idf = xmalloc(sizeof(float) * c->V);
	s->tbytes = xcalloc(c->V, sizeof(uint64_t));
	lstart[0] = 0;
	for (uint32_t i = 0; i < c->V; i++)
	{
		uint32_t	v = lorder[i];
		uint64_t	df = c->start[v + 1] - c->start[v];

		s->first_block[v] = (uint32_t) nb;
		s->nblk[v] = (uint32_t) ((df + GPUIR_BLOCK_SIZE - 1) / GPUIR_BLOCK_SIZE);
		s->npost[v] = (uint32_t) df;
		/* GpuirIdf (src/gpuirutils.c): in double, float32 result */
		s->idf[v] = (float) log(1.0 + (N - (double) df + 0.5) / ((double) df + 0.5));
		nb += (df + GPUIR_BLOCK_SIZE - 1) / GPUIR_BLOCK_SIZE;
		lstart[i + 1] = lstart[i] + df;
		if (nb >= UINT32_MAX)
			die("more than 2^32 - 1 blocks: use a smaller --docs");
	}
	s->idf_absent = (float) log(1.0 + (N + 0.5) / 0.5);
	s->nblocks = (uint32_t) nb;
	s->block_last = xmalloc(sizeof(uint32_t) * (nb ? nb : 1));
	s->block_offset = xmalloc(sizeof(uint32_t) * (nb + 1));
	s->impact_tf = xmalloc(sizeof(uint32_t) * GPUIR_CUDA_BLOCK_IMPACTS * (nb ? nb : 1));
	s->impact_dl = xmalloc(sizeof(uint32_t) * GPUIR_CUDA_BLOCK_IMPACTS * (nb ? nb : 1));

	memset(&x, 0, sizeof(x));
	x.s = s;
	x.c = c;
	x.lorder = lorder;
	x.lstart = lstart;
	x.th = xcalloc((size_t) o->threads, sizeof(BuildThread));
	x.k1 = (double) o->k1;
	x.b = (double) o->b;
	x.avgdl = s->avgdl_build;
	x.verify = o->verify;
	par_run(o->threads, build_worker, &x);
	for (int t = 0; t < o->threads; t++)
	{
		x.th[t].base = total;
		total += x.th[t].len;
		bad += x.th[t].bad;
	}
	if (total > UINT32_MAX)
		die("the segment's payload would take %" PRIu64 " bytes, more than UINT32_MAX "
			"(%u; block offsets are 32-bit): use a smaller --docs, e.g. --docs %" PRIu64,
			total, UINT32_MAX,
			(uint64_t) ((double) c->ndocs * (double) UINT32_MAX / (double) total * 0.95));
	if (bad > 0)
		die("%" PRIu64 " blocks did not decode back to their postings (GpuirCodecDecode)", bad);
	s->payload_bytes = total;
	s->payload = big_alloc(total);
	par_run(o->threads, copy_worker, &x);
	s->block_offset[nb] = (uint32_t) total;
	for (uint32_t v = 0; v < c->V; v++)
	{
		uint32_t	fb = s->first_block[v];
		uint32_t	n = seg_nblocks(s, v);

		if (n > 0)
			s->tbytes[v] = (uint64_t) s->block_offset[fb + n] - s->block_offset[fb];
	}
	t1 = now_s();
	printf("segment: checksum %016" PRIx64 " (depends on --docs and --seed only)\n",
		   segment_checksum(s, o->threads));
	printf("segment: %u blocks, payload %" PRIu64 " bytes (%.2f GB, %.3f bytes/posting, "
		   "%.2f%% of the 4 GiB offset limit), built in %.2f s on %d threads%s\n",
		   s->nblocks, total, gb(total), c->npostings ? (double) total / c->npostings : 0.0,
		   100.0 * total / 4294967296.0, t1 - t0, o->threads,
		   o->verify ? " (every block decoded back and compared)" : "");
	printf("segment: block directory %.2f GB (block_last, block_offset, 2 impacts), doclen %.2f GB;"
		   " scoring k1 %.3g, b %.3g, avgdl %.4f, N %u\n",
		   gb((uint64_t) nb * 4 * (2 + 2 * GPUIR_CUDA_BLOCK_IMPACTS)),
		   gb((uint64_t) c->ndocs * 4), (double) s->sc.k1, (double) s->sc.b,
		   (double) s->sc.avgdl, s->ndocs);
	free(x.th);
	free(lorder);
	free(lstart);
	fflush(stdout);
}

/* ---------- CPU reference ---------- */

/* one query for the reference: its terms (all present for AND) */
typedef struct RefJob
{
	const Segment *s;
	const uint32_t *terms;		/* vocabulary terms with a list, query order */
	uint32_t	nt;
	int			and_mode;
	uint32_t	k;
	atomic_uint next;
	uint32_t	nranges;
	Res		  **heaps;
	uint32_t   *nheap;
	atomic_int	corrupt;
} RefJob;

static void
ref_worker(void *arg, int tid, int nt)
{
	RefJob	   *j = arg;
	const Segment *s = j->s;
	float	   *acc = xmalloc(sizeof(float) * REF_RANGE);
	uint16_t   *cnt = xcalloc(REF_RANGE, sizeof(uint16_t));
	Res		   *heap = xmalloc(sizeof(Res) * j->k);
	uint32_t	nh = 0;
	uint32_t	r;

	(void) nt;
	while ((r = atomic_fetch_add(&j->next, 1)) < j->nranges)
	{
		uint32_t	lo = r * REF_RANGE;
		uint32_t	hi = (uint64_t) lo + REF_RANGE < s->ndocs ? lo + REF_RANGE : s->ndocs;
		int			any = 0;

		for (uint32_t q = 0; q < j->nt; q++)
		{
			uint32_t	v = j->terms[q];
			uint32_t	fb = s->first_block[v];
			uint32_t	nb = seg_nblocks(s, v);
			uint32_t	a = 0,
						z = nb;
			float		idf = s->idf[v];
			int			hit = 0;

			/* first block whose last docID >= lo */
			while (a < z)
			{
				uint32_t	mid = a + (z - a) / 2;

				if (s->block_last[fb + mid] < lo)
					a = mid + 1;
				else
					z = mid;
			}
			for (uint32_t b = a; b < nb; b++)
			{
				uint32_t	dd[GPUIR_BLOCK_SIZE],
							tt[GPUIR_BLOCK_SIZE];
				uint32_t	bi = fb + b;
				uint32_t	prev = b == 0 ? GPUIR_FIRST_PREV_DOCID : s->block_last[bi - 1];
				int			n = GpuirCodecDecode(s->payload + s->block_offset[bi],
												 s->block_offset[bi + 1] - s->block_offset[bi],
												 prev, dd, tt);

				if (n < 1)
				{
					atomic_store(&j->corrupt, 1);
					break;
				}
				for (int i = 0; i < n; i++)
				{
					uint32_t	d = dd[i];

					if (d < lo)
						continue;
					if (d >= hi)
						break;
					if (cnt[d - lo] == 0)
						acc[d - lo] = 0.0f;
					acc[d - lo] = acc[d - lo] + bm25(idf, tt[i], s->doclen[d], &s->sc);
					cnt[d - lo]++;
					hit = 1;
				}
				if (s->block_last[bi] >= hi - 1)
					break;
			}
			any |= hit;
			if (j->and_mode && !hit)
				break;			/* no document of the range holds every term */
		}
		if (!any)
			continue;
		for (uint32_t i = 0; i < hi - lo; i++)
		{
			if (cnt[i] == 0)
				continue;
			if (!j->and_mode || cnt[i] == j->nt)
			{
				Res			x = {acc[i], lo + i};

				heap_offer(heap, &nh, j->k, x);
			}
			cnt[i] = 0;
		}
	}
	j->heaps[tid] = heap;
	j->nheap[tid] = nh;
	free(acc);
	free(cnt);
}

/* the query's terms that have a list; returns -1 when AND cannot match */
static int
present_terms(const Segment *s, const uint32_t *qt, uint32_t nt, int and_mode, uint32_t *out)
{
	int			n = 0;

	for (uint32_t i = 0; i < nt; i++)
	{
		if (qt[i] == NO_TERM || s->npost[qt[i]] == 0)
		{
			if (and_mode)
				return -1;
			continue;
		}
		out[n++] = qt[i];
	}
	return n;
}

/* exact top k (score desc, docID asc) of a query, parallel over docID ranges */
static uint32_t
ref_parallel(const Segment *s, const uint32_t *qt, uint32_t nt, int and_mode, uint32_t k,
			 int nthreads, Res *out)
{
	uint32_t	terms[MAX_QUERY_TERMS];
	int			np = present_terms(s, qt, nt, and_mode, terms);
	RefJob		j;
	Res		   *all;
	uint32_t	nall = 0;

	if (np <= 0 || s->ndocs == 0)
		return 0;
	memset(&j, 0, sizeof(j));
	j.s = s;
	j.terms = terms;
	j.nt = (uint32_t) np;
	j.and_mode = and_mode;
	j.k = k;
	atomic_init(&j.next, 0);
	atomic_init(&j.corrupt, 0);
	j.nranges = (uint32_t) (((uint64_t) s->ndocs + REF_RANGE - 1) / REF_RANGE);
	j.heaps = xcalloc((size_t) nthreads, sizeof(Res *));
	j.nheap = xcalloc((size_t) nthreads, sizeof(uint32_t));
	par_run(nthreads, ref_worker, &j);
	if (atomic_load(&j.corrupt))
		die("CPU reference: a posting block did not decode");
	all = xmalloc(sizeof(Res) * (size_t) k * nthreads);
	for (int t = 0; t < nthreads; t++)
	{
		memcpy(all + nall, j.heaps[t], sizeof(Res) * j.nheap[t]);
		nall += j.nheap[t];
		free(j.heaps[t]);
	}
	qsort(all, nall, sizeof(Res), res_cmp);
	if (nall > k)
		nall = k;
	memcpy(out, all, sizeof(Res) * nall);
	free(all);
	free(j.heaps);
	free(j.nheap);
	return nall;
}

/*
 * The plain reference of test/test_cuda_search.c (ref_query): whole lists
 * decoded in query term order, touched documents, one heap.
 */
typedef struct PlainRef
{
	float	   *acc;
	uint32_t   *cnt;
	uint32_t   *touched;
	Res		   *heap;
} PlainRef;

static uint32_t
ref_plain(PlainRef *r, const Segment *s, const uint32_t *qt, uint32_t nt, int and_mode,
		  uint32_t k, Res *out)
{
	uint32_t	terms[MAX_QUERY_TERMS];
	int			np = present_terms(s, qt, nt, and_mode, terms);
	uint32_t	ntouched = 0,
				n = 0;

	if (np <= 0)
		return 0;
	for (int q = 0; q < np; q++)
	{
		uint32_t	v = terms[q];
		uint32_t	fb = s->first_block[v];
		uint32_t	prev = GPUIR_FIRST_PREV_DOCID;

		for (uint32_t b = 0; b < seg_nblocks(s, v); b++)
		{
			uint32_t	dd[GPUIR_BLOCK_SIZE],
						tt[GPUIR_BLOCK_SIZE];
			uint32_t	bi = fb + b;
			int			m = GpuirCodecDecode(s->payload + s->block_offset[bi],
											 s->block_offset[bi + 1] - s->block_offset[bi],
											 prev, dd, tt);

			if (m < 1)
				die("plain reference: a posting block did not decode");
			for (int i = 0; i < m; i++)
			{
				uint32_t	d = dd[i];

				if (r->cnt[d] == 0)
				{
					r->touched[ntouched++] = d;
					r->acc[d] = 0.0f;
				}
				r->acc[d] = r->acc[d] + bm25(s->idf[v], tt[i], s->doclen[d], &s->sc);
				r->cnt[d]++;
			}
			prev = dd[m - 1];
		}
	}
	for (uint32_t i = 0; i < ntouched; i++)
	{
		uint32_t	d = r->touched[i];

		if (!and_mode || r->cnt[d] == (uint32_t) np)
		{
			Res			x = {r->acc[d], d};

			heap_offer(r->heap, &n, k, x);
		}
		r->cnt[d] = 0;
	}
	memcpy(out, r->heap, sizeof(Res) * n);
	qsort(out, n, sizeof(Res), res_cmp);
	return n;
}

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

/* ---------- CPU self-check (no GPU needed) ---------- */

static int
selfcheck(const QLog *logs, int nlogs, const Segment *s, const Options *o, uint32_t kref)
{
	PlainRef	pr;
	Res		   *a = xmalloc(sizeof(Res) * kref);
	Res		   *b = xmalloc(sizeof(Res) * kref);
	int			bad = 0,
				n = 0;
	double		t0 = now_s();

	if (o->selfcheck == 0)
		return 0;
	pr.acc = xmalloc(sizeof(float) * s->ndocs);
	pr.cnt = xcalloc(s->ndocs, sizeof(uint32_t));
	pr.touched = xmalloc(sizeof(uint32_t) * s->ndocs);
	pr.heap = xmalloc(sizeof(Res) * kref);
	for (int li = 0; li < nlogs; li++)
	{
		const QLog *l = &logs[li];

		for (uint32_t q = 0; q < l->nq && q < o->selfcheck; q++)
		{
			for (int am = 0; am < 2; am++)
			{
				const uint32_t *qt = l->qterm + l->qoff[q];
				uint32_t	nt = l->qoff[q + 1] - l->qoff[q];
				uint32_t	na = ref_parallel(s, qt, nt, am, kref, o->threads, a);
				uint32_t	nb = ref_plain(&pr, s, qt, nt, am, kref, b);

				n++;
				if (na != nb || memcmp(a, b, sizeof(Res) * na) != 0)
				{
					bad++;
					printf("SELF-CHECK MISMATCH: log %s query %s (%s): parallel %u results, "
						   "plain %u\n", l->name, l->qid[q], am ? "and" : "or", na, nb);
				}
			}
		}
	}
	printf("self-check: parallel CPU reference = plain CPU reference (top %u, AND and OR) on %d "
		   "queries: %s (%.2f s)\n", kref, n, bad ? "FAILED" : "ok", now_s() - t0);
	free(pr.acc);
	free(pr.cnt);
	free(pr.touched);
	free(pr.heap);
	free(a);
	free(b);
	return bad;
}

/* ---------- GPU part ---------- */

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

#ifdef ENGINE_BENCH_HAVE_CUDA
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

/* the search call: the debug variant (block counters) where it exists */
static gpuir_cuda_status
search(const gpuir_cuda_segment *dev, const Segment *s, Batch *b, uint32_t kmax,
	   gpuir_cuda_search_stats *stats)
{
#ifdef ENGINE_BENCH_HAVE_CUDA
	if (stats != NULL)
		return gpuir_cuda_search_batch_debug(dev, &s->sc, b->q, b->nq, b->t, b->nt, kmax,
											 b->docids, b->scores, b->counts, NULL, stats);
#endif
	if (stats != NULL)
		memset(stats, 0, sizeof(*stats));
	return gpuir_cuda_search_batch(dev, &s->sc, b->q, b->nq, b->t, b->nt, kmax,
								   b->docids, b->scores, b->counts, NULL);
}

/* reference top lists of the first --check queries of one log */
typedef struct LogRef
{
	uint32_t	n;
	Res		  **res[2];			/* [and_mode][query] */
	uint32_t   *cnt[2];
} LogRef;

static void
logref_compute(LogRef *r, const QLog *l, const Segment *s, const Options *o, uint32_t kref,
			   const int need[2])
{
	r->n = l->nq < o->check ? l->nq : o->check;
	for (int am = 0; am < 2; am++)
	{
		double		t0 = now_s();
		uint64_t	post = 0;

		r->res[am] = xcalloc(r->n ? r->n : 1, sizeof(Res *));
		r->cnt[am] = xcalloc(r->n ? r->n : 1, sizeof(uint32_t));
		if (!need[am])
			continue;
		for (uint32_t q = 0; q < r->n; q++)
		{
			const uint32_t *qt = l->qterm + l->qoff[q];
			uint32_t	nt = l->qoff[q + 1] - l->qoff[q];

			for (uint32_t i = 0; i < nt; i++)
				if (qt[i] != NO_TERM)
					post += s->npost[qt[i]];
			r->res[am][q] = xmalloc(sizeof(Res) * kref);
			r->cnt[am][q] = ref_parallel(s, qt, nt, am, kref, o->threads, r->res[am][q]);
		}
		if (r->n > 0)
			printf("CPU reference, %s %s: %u queries, top %u, %.2f s (%.1f queries/s, "
				   "%.0f M postings/s on %d threads)\n", l->name, am ? "AND" : "OR",
				   r->n, kref, now_s() - t0, r->n / (now_s() - t0),
				   post / 1e6 / (now_s() - t0), o->threads);
	}
	fflush(stdout);
}

static void
logref_free(LogRef *r)
{
	for (int am = 0; am < 2; am++)
	{
		for (uint32_t q = 0; q < r->n; q++)
			free(r->res[am] ? r->res[am][q] : NULL);
		free(r->res[am]);
		free(r->cnt[am]);
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
	rc = search(dev, s, b, k, &st);
	if (rc != GPUIR_CUDA_OK)
	{
		printf("check %s %s k=%u: GPU search failed: %s (%s)\n", l->name, mode_names[mode], k,
			   gpuir_cuda_status_string(rc), gpuir_cuda_last_error_detail());
		*gpu_error = 1;
		return r->n;
	}
	for (uint32_t q = 0; q < r->n; q++)
	{
		uint32_t	want = r->cnt[am][q] < k ? r->cnt[am][q] : k;
		const Res  *ref = r->res[am][q];
		const uint32_t *gd = b->docids + (size_t) q * k;
		const float *gs = b->scores + (size_t) q * k;
		int			where = -1;

		if (b->counts[q] != want)
			where = -2;
		for (uint32_t i = 0; where == -1 && i < k; i++)
		{
			if (i < want)
			{
				if (gd[i] != ref[i].doc || memcmp(&gs[i], &ref[i].score, sizeof(float)) != 0)
					where = (int) i;
			}
			else if (gd[i] != 0 || gs[i] != 0.0f)
				where = (int) i;
		}
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
		printf("; BMW queries %" PRIu64 ", tiles pruned %" PRIu64 " of %" PRIu64
			   ", sub-ranges pruned %" PRIu64, st.bmw_queries, st.tiles_pruned,
			   (uint64_t) r->n * ((s->ndocs + 8191) / 8192), st.subranges_pruned);
	if (bad)
		printf("; %" PRIu64 " of %u queries differ", bad, r->n);
	printf("\n");
	fflush(stdout);
	return bad;
}

/* one timed configuration */
static void
run_config(const gpuir_cuda_segment *dev, const Segment *s, const QLog *l, Row *row,
		   const Options *o, double prev_rate, Batch *b)
{
	uint64_t	pos = 0;
	double		elapsed = 0,
				last = 0;
	gpuir_cuda_status rc;
	uint32_t	B = row->B;

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

static void
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

/* ---------- main ---------- */

int
main(int argc, char **argv)
{
	Options		o;
	Vocab		voc;
	DocLen		hist;
	QLog	   *logs;
	int			nlogs;
	Corpus		c;
	Segment		s;
	GpuInfo		g;
	int			ndev = 0;
	int			have_gpu;
	char		nodev[512] = "";
	gpuir_cuda_status st;
	uint32_t	kref = 0;
	int			failed = 0;
	double		t_start = now_s();
	gpuir_cuda_segment dev;
	Batch		batch;
	Row		   *rows;
	int			nrows = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(&o, argc, argv);
	memset(&g, 0, sizeof(g));
	memset(&batch, 0, sizeof(batch));
	for (int i = 0; i < o.nks; i++)
		if (o.ks[i] > kref)
			kref = o.ks[i];

	printf("engine_bench: GENERATED corpus of %" PRIu64 " documents, seed %" PRIu64
		   ", %d threads, k1 %.3g, b %.3g\n", o.docs, o.seed, o.threads, (double) o.k1,
		   (double) o.b);

	/* device: first, so the copy bandwidth is measured on an idle card */
	st = gpuir_cuda_device_count(&ndev);
	have_gpu = (st == GPUIR_CUDA_OK && ndev > 0);
	if (have_gpu)
		st = gpuir_cuda_device_info(0, g.name, sizeof(g.name), &g.mem, &g.major, &g.minor);
	if (!have_gpu || st != GPUIR_CUDA_OK)
	{
		if (st == GPUIR_CUDA_NO_DEVICE && gpuir_cuda_last_error_detail()[0] != '\0')
			snprintf(nodev, sizeof(nodev), "%s", gpuir_cuda_last_error_detail());
		else
			snprintf(nodev, sizeof(nodev), "%s%s%s", gpuir_cuda_status_string(st),
					 gpuir_cuda_last_error_detail()[0] ? ": " : "",
					 gpuir_cuda_last_error_detail());
		have_gpu = 0;
		snprintf(g.name, sizeof(g.name), "none");
	}
	else
	{
		printf("device: %s (device 0 of %d), compute capability %d.%d, %.2f GB\n", g.name, ndev,
			   g.major, g.minor, gb(g.mem));
#ifdef ENGINE_BENCH_HAVE_CUDA
		if (o.copy_mib > 0 && measure_copy(&g, (size_t) o.copy_mib << 20, 10) == 0)
			printf("copy bandwidth: device-to-device cudaMemcpy of %u MiB x 10: %.1f GB/s counting "
				   "bytes read + bytes written (2 x bytes / time; the %%copy columns use it), "
				   "%.1f GB/s counting bytes copied / time\n", o.copy_mib, g.copy_rw, g.copy_one);
#endif
	}

	/* inputs */
	if (o.synthetic)
	{
		logs = xcalloc(1, sizeof(QLog));
		nlogs = 1;
		synthetic_inputs(&voc, &hist, &logs[0], o.synthetic, o.seed, o.max_queries);
	}
	else
	{
		vocab_read(&voc, o.vocab);
		doclen_read(&hist, o.doclen);
		nlogs = o.nqueries;
		logs = xcalloc((size_t) nlogs, sizeof(QLog));
		for (int i = 0; i < nlogs; i++)
			qlog_read(&logs[i], &voc, o.queries[i], o.max_queries);
	}

	/* corpus, segment */
	generate_corpus(&c, &voc, &hist, (uint32_t) o.docs, o.seed, o.threads, o.verify);
	build_segment(&s, &c, &voc, &o);
	free(c.inv_doc);
	free(c.inv_tf);
	c.inv_doc = c.inv_tf = NULL;

	for (int i = 0; i < nlogs; i++)
	{
		LogStats	ls;

		log_stats(&logs[i], &s, &ls);
		printf("queries %s: %u queries (%" PRIu64 " lines; dropped %" PRIu64 " without lexeme, %"
			   PRIu64 " over %d lexemes), %.2f terms/query, %.2f with a list; %" PRIu64
			   " lexemes not in the vocabulary, %" PRIu64 " never generated; %" PRIu64
			   " queries with no list; per query %.2f M postings, %.2f MB of blocks\n",
			   logs[i].name, logs[i].nq, logs[i].lines, logs[i].dropped_empty,
			   logs[i].dropped_long, MAX_QUERY_TERMS, ls.mean_terms, ls.mean_present,
			   logs[i].not_in_vocab, ls.absent_terms, ls.no_match_or, ls.mean_postings / 1e6,
			   ls.mean_bytes / 1e6);
	}
	printf("host memory: peak RSS %.2f GB; setup %.1f s\n", peak_rss_gb(), now_s() - t_start);

	if (selfcheck(logs, nlogs, &s, &o, kref) != 0)
		failed = 1;

	if (!have_gpu)
	{
		printf("engine_bench: no CUDA device (%s), GPU part skipped\n", nodev);
		return failed;
	}

	/* upload */
	{
		double		t0 = now_s();

		st = gpuir_cuda_segment_upload(s.payload, s.payload_bytes, s.block_last, s.block_offset,
									   s.impact_tf, s.impact_dl, s.nblocks, s.doclen, NULL,
									   s.ndocs, &dev);
		if (st != GPUIR_CUDA_OK)
		{
			printf("engine_bench: segment upload failed: %s (%s)\n",
				   gpuir_cuda_status_string(st), gpuir_cuda_last_error_detail());
			return 1;
		}
		printf("upload: %.2f s (%.2f GB of payload, directory and doclen)\n", now_s() - t0,
			   gb(s.payload_bytes + (uint64_t) s.nblocks * 24 + (uint64_t) s.ndocs * 4));
#ifdef ENGINE_BENCH_HAVE_CUDA
		gpu_mem_line("after upload");
#endif
	}

	/* exactness */
	if (o.check > 0)
	{
		uint64_t	bad = 0;
		int			gpu_error = 0;
		int			need[2] = {0, 0};

		for (int m = 0; m < o.nmodes; m++)
			need[o.modes[m] == GPUIR_CUDA_MODE_AND] = 1;
		for (int li = 0; li < nlogs; li++)
		{
			LogRef		r;

			memset(&r, 0, sizeof(r));
			logref_compute(&r, &logs[li], &s, &o, kref, need);
			for (int m = 0; m < o.nmodes; m++)
				for (int ki = 0; ki < o.nks; ki++)
					bad += check_config(&dev, &s, &logs[li], &r, o.modes[m], o.ks[ki], &batch,
										&gpu_error);
			logref_free(&r);
		}
		printf("exactness: %s (%" PRIu64 " mismatching query results)\n",
			   bad ? "FAILED" : "every checked query identical to the CPU reference "
			   "(docIDs and score bits)", bad);
		if (bad || gpu_error)
			failed = 1;
	}

	/* timing grid */
	{
		int			nconf = nlogs * o.nmodes * o.nks * o.nbatches;

		rows = xcalloc((size_t) nconf, sizeof(Row));
		printf("\ntiming grid: %d configurations; about %.0f s to %.0f s of search time "
			   "(--min-time %.3g, --max-time %.3g per configuration, but a configuration runs at "
			   "least one batch: one large batch can take up to --max-batch-s %.3g s; those "
			   "estimated above it are skipped), plus one warm-up batch of <= 16 queries each\n",
			   nconf, nconf * o.min_time, nconf * o.max_time, o.min_time, o.max_time,
			   o.max_batch_s);
		printf("(GB/s: compressed block bytes of the query terms' lists per second; %%copy: "
			   "of the copy r+w bandwidth %.1f GB/s; +dl: also 4 bytes of doclen per posting)\n",
			   g.copy_rw);
		print_row_header();
		for (int li = 0; li < nlogs; li++)
		{
			if (logs[li].nq == 0)
				continue;
			for (int m = 0; m < o.nmodes; m++)
				for (int ki = 0; ki < o.nks; ki++)
				{
					double		rate = 0;

					for (int bi = 0; bi < o.nbatches; bi++)
					{
						Row		   *r = &rows[nrows++];

						r->log = li;
						r->mode = o.modes[m];
						r->k = o.ks[ki];
						r->B = o.batches[bi];
						run_config(&dev, &s, &logs[li], r, &o, rate, &batch);
						if (r->ran && r->secs > 0)
							rate = r->postings / r->secs;
						print_row(r, logs, &g, row_bmw_ratio(rows, nrows, r));
						if (!r->ran && strncmp(r->note, "error", 5) == 0)
							failed = 1;
					}
				}
		}
	}

	/* BMW against OR */
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

	if (o.out != NULL)
		write_tsv(o.out, rows, nrows, logs, &g, &s);
	gpuir_cuda_segment_free(&dev);
	printf("engine_bench: done in %.1f s%s\n", now_s() - t_start,
		   failed ? " (FAILED: see MISMATCH / error lines)" : "");
	free(rows);
	batch_free(&batch);
	return failed;
}
