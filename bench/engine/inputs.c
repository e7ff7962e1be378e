/*-------------------------------------------------------------------------
 *
 * inputs.c
 *	  engine_bench: the options, and the inputs they name: the vocabulary
 *	  (lexeme, cf), the document length histogram and the query logs, read
 *	  from files or made up by --synthetic.  The formats are in the header
 *	  of bench/engine_bench.c.
 *
 *-------------------------------------------------------------------------
 */
#include "engine.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------- options ---------- */

const char *const mode_names[3] = {"and", "or", "bmw"};

static void
usage(void)
{
	printf("usage: engine_bench (--vocab FILE --doclen FILE --queries FILE [--queries FILE ...]\n"
		   "                     | --synthetic V)\n"
		   "         [--docs N (40000000)] [--seed S (1)] [--threads T (cores)]\n"
		   "         [--batches 1,10,100,1000,10000] [--k 10,1000] [--modes and,or,bmw]\n"
		   "         [--max-queries M (0: all)] [--check Q (50)] [--selfcheck Q (3)]\n"
		   "         [--out FILE.tsv] [--k1 0.9] [--b 0.4] [--min-time 1] [--max-time 3]\n"
		   "         [--max-batch-s 10] [--copy-mib 1024] [--no-verify] [--devices 1]\n"
		   "         [--maxscore-share N] [--maxscore-dense N] [--decode-budget N]\n"
		   "         [--bmw-batch W,T] [--decode-cache BLOCKS]\n"
		   "         [--split queries|docs] [--resample DOCS]\n"
		   "         [--cpu-engine P] [--cpu-seconds 3] [--cpu-out FILE.tsv]\n"
		   "         [--cpu-segment-docs N] [--cpu-flip-score]\n"
		   "vocab: lexeme<TAB>df<TAB>cf; doclen: dl<TAB>count; queries: qid<TAB>lex lex ...;\n"
		   "docs (--resample): one document a line, lexeme:tf lexeme:tf ...\n"
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

void
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
	o->maxscore = -1;
	o->maxscore_dense = -1;
	o->bmw_batch_waves = o->bmw_batch_total = -1;
	o->decode_budget = -1;
	o->decode_cache = -1;
	o->verify = 1;
	o->devices = 1;
	o->cpu_seconds = 3.0;

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
		if (strcmp(arg, "--cpu-flip-score") == 0)
		{
			o->cpu_flip_score = 1;
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
		else if (strcmp(name, "--resample") == 0)
			o->resample = val;
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
		else if (strcmp(name, "--maxscore-share") == 0)
			o->maxscore = (int64_t) parse_u64(name, val);
		else if (strcmp(name, "--maxscore-dense") == 0)
			o->maxscore_dense = (int64_t) parse_u64(name, val);
		else if (strcmp(name, "--bmw-batch") == 0)
		{
			const char *comma = strchr(val, ',');
			char	   *q;

			if (comma == NULL)
				die("--bmw-batch wants W,T: waves of tiles, postings a batch");
			q = xstrndup(val, (size_t) (comma - val));
			o->bmw_batch_waves = (int64_t) parse_u64(name, q);
			o->bmw_batch_total = (int64_t) parse_u64(name, comma + 1);
			free(q);
		}
		else if (strcmp(name, "--decode-budget") == 0)
			o->decode_budget = (int64_t) parse_u64(name, val);
		else if (strcmp(name, "--decode-cache") == 0)
			o->decode_cache = (int64_t) parse_u64(name, val);
		else if (strcmp(name, "--devices") == 0)
			o->devices = (int) parse_u64(name, val);
		else if (strcmp(name, "--cpu-engine") == 0)
		{
			uint64_t	p = parse_u64(name, val);

			if (p > 1024)
				die("--cpu-engine must be 0 .. 1024 processes");
			o->cpu_engine = (int) p;
		}
		else if (strcmp(name, "--cpu-segment-docs") == 0)
			o->cpu_segment_docs = (uint32_t) parse_u64(name, val);
		else if (strcmp(name, "--cpu-seconds") == 0)
			o->cpu_seconds = parse_double(name, val);
		else if (strcmp(name, "--cpu-out") == 0)
			o->cpu_out = val;
		else if (strcmp(name, "--split") == 0)
		{
			if (strcmp(val, "docs") == 0)
				o->split_docs = 1;
			else if (strcmp(val, "queries") == 0)
				o->split_docs = 0;
			else
				die("--split: queries or docs");
		}
		else
			die("unknown option %s (--help for usage)", name);
	}
	if (o->resample != NULL && o->synthetic != 0)
		die("--resample needs --vocab (its lexemes), not --synthetic");
	if (o->synthetic == 0 && (o->vocab == NULL || o->doclen == NULL || o->nqueries == 0))
		die("need --vocab, --doclen and at least one --queries (or --synthetic V); --help for usage");
	if (o->docs < 1 || o->docs > 0xFFFFFFFEu)
		die("--docs must be 1 .. 4294967294");
	if (o->threads < 1 || o->threads > 1024)
		die("--threads must be 1 .. 1024");
	if (!(o->cpu_seconds > 0))
		die("--cpu-seconds must be > 0");
	if (o->devices < 1 || o->devices > ENGINE_MAX_DEVICES)
		die("--devices must be 1 .. %d", ENGINE_MAX_DEVICES);
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

/* ---------- real documents to resample (--resample) ---------- */

/*
 * source_read: the documents of path, one a line, "lexeme:tf lexeme:tf ..."
 * (the lexeme is what precedes the line's token's last ':'; written by
 * bench/compare --export-engine-inputs from the tsvector column, so
 * lexemes are escaped as vocab.tsv's are and compare equal to them).
 * Lexemes not in the vocabulary are skipped and counted; a line left
 * empty is not a document.
 */
void
source_read(Source *s, const Vocab *v, const char *path)
{
	Input		in;
	char	   *line = NULL;
	size_t		lcap = 0;
	ssize_t		n;
	uint64_t	cap = 1 << 20,
				np = 0,
				total = 0;
	uint32_t	dcap = 1 << 16;

	memset(s, 0, sizeof(*s));
	s->off = xmalloc(sizeof(uint64_t) * ((size_t) dcap + 1));
	s->term = xmalloc(sizeof(uint32_t) * cap);
	s->tf = xmalloc(sizeof(uint32_t) * cap);
	s->off[0] = 0;
	input_open(&in, path);
	while ((n = getline(&line, &lcap, in.f)) >= 0)
	{
		char	   *p = line;
		uint64_t	dl = 0;

		chomp(line, n);
		while (*p != '\0')
		{
			char	   *tok = p,
					   *colon;
			const char *end;
			uint64_t	tf;
			uint32_t	t;

			while (*p != '\0' && *p != ' ')
				p++;
			if (*p == ' ')
				*p++ = '\0';
			colon = strrchr(tok, ':');
			if (tok[0] == '\0')
				continue;
			if (colon == NULL || colon == tok ||
				!parse_field_u64(colon + 1, &end, &tf) || *end != '\0' || tf < 1 ||
				tf > UINT32_MAX)
				die("%s: document %u: bad token '%s' (want lexeme:tf)", path, s->n + 1, tok);
			t = vocab_find(v, tok, (size_t) (colon - tok));
			if (t == NO_TERM)
			{
				s->unknown++;
				continue;
			}
			if (np == cap)
			{
				cap *= 2;
				s->term = xrealloc(s->term, sizeof(uint32_t) * cap);
				s->tf = xrealloc(s->tf, sizeof(uint32_t) * cap);
			}
			s->term[np] = t;
			s->tf[np] = (uint32_t) tf;
			np++;
			dl += tf;
		}
		if (np == s->off[s->n])
			continue;			/* nothing known on the line */
		if (dl > UINT32_MAX)
			die("%s: document %u: length over 2^32", path, s->n + 1);
		if (s->n == dcap)
		{
			dcap *= 2;
			s->off = xrealloc(s->off, sizeof(uint64_t) * ((size_t) dcap + 1));
		}
		s->off[++s->n] = np;
		total += dl;
		if (dl > s->max_dl)
			s->max_dl = (uint32_t) dl;
	}
	free(line);
	input_close(&in);
	if (s->n == 0)
		die("%s: no document with a lexeme of the vocabulary", path);
	s->mean_dl = (double) total / s->n;
	printf("resample source %s: %u documents, %" PRIu64 " postings, mean dl %.2f, max dl %u; "
		   "%" PRIu64 " lexemes not in the vocabulary skipped\n",
		   path, s->n, np, s->mean_dl, s->max_dl, s->unknown);
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

/* ---------- all inputs ---------- */

void
read_inputs(const Options *o, Vocab *v, DocLen *h, QLog **logs, int *nlogs)
{
	if (o->synthetic)
	{
		*logs = xcalloc(1, sizeof(QLog));
		*nlogs = 1;
		synthetic_inputs(v, h, &(*logs)[0], o->synthetic, o->seed, o->max_queries);
		return;
	}
	vocab_read(v, o->vocab);
	doclen_read(h, o->doclen);
	*nlogs = o->nqueries;
	*logs = xcalloc((size_t) *nlogs, sizeof(QLog));
	for (int i = 0; i < *nlogs; i++)
		qlog_read(&(*logs)[i], v, o->queries[i], o->max_queries);
}
