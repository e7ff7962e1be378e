/*-------------------------------------------------------------------------
 *
 * cpu_engine.c
 *	  engine_bench --cpu-engine P: the production CPU engine beside the GPU,
 *	  on the same corpus and queries (issue "GPU engine", item 7).
 *
 *	  1. Build: the corpus's lists, in dictionary order (the Segment's),
 *	     go through cpu_image.c to the production segment writer, which
 *	     writes a real index (one segment, or segments of at most
 *	     --cpu-segment-docs documents) into this process's memory.
 *	  2. Check, per (log, mode, k): the first --check queries of the log
 *	     through GpuirSearch (cpu_image_search), compared with the exact
 *	     reference of reference.c as the GPU's are (counts, docIDs and score
 *	     bits; ties by docID).  This also warms the engine's session caches
 *	     (document lengths, dictionary positions), as a server's backend
 *	     warms them on its first queries.
 *	  3. Time, per (log, mode, k): P processes forked from this one (the
 *	     engine's backend code is not thread-safe; a server runs a process a
 *	     client too), sharing the index's pages copy-on-write; each answers
 *	     one query at a time, taking the log's next query from a shared
 *	     counter (wrapping around the first --max-queries, or the whole
 *	     log), until --cpu-seconds have passed since all started together.
 *	     q/s = queries answered / (the last process's end - the start).
 *
 *-------------------------------------------------------------------------
 */
#include "engine.h"
#include "cpu_image.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* an absent query term (NO_TERM): a lexeme no vocabulary holds */
#define ABSENT_LEXEME "\x01"

/* ---------- build ---------- */

typedef struct ListIter
{
	const Corpus *c;
	const Vocab *voc;
	const uint32_t *lorder;
	uint32_t	i;
} ListIter;

static int
next_list(void *arg, CpuImageList *out)
{
	ListIter   *it = arg;

	while (it->i < it->c->V)
	{
		uint32_t	v = it->lorder[it->i++];
		uint64_t	a = it->c->start[v];
		uint64_t	z = it->c->start[v + 1];

		if (z == a)
			continue;
		if (it->voc->len[v] > UINT16_MAX)
			die("cpu engine: a lexeme of %u bytes", it->voc->len[v]);
		out->lexeme = it->voc->lex[v];
		out->len = (uint16_t) it->voc->len[v];
		out->doc = it->c->inv_doc + a;
		out->tf = it->c->inv_tf + a;
		out->n = z - a;
		return 1;
	}
	return 0;
}

void
cpu_engine_build(const Corpus *c, const Vocab *voc, const Segment *s, const Options *o)
{
	ListIter	it;
	CpuImageInfo info;
	char		err[1024];
	double		t0 = now_s();

	it.c = c;
	it.voc = voc;
	it.lorder = s->lorder;
	it.i = 0;
	if (cpu_image_build(c->ndocs, c->doclen, o->k1, o->b, o->cpu_segment_docs, next_list, &it,
						&info, err, sizeof(err)) != 0)
		die("cpu engine: the production build failed: %s", err);
	printf("cpu engine: the production index built in %.1f s (one process): %d segment%s, "
		   "%" PRIu64 " documents, %" PRIu64 " terms (the largest segment's), %" PRIu64
		   " postings, %" PRIu64 " pages (%.2f GB)\n", now_s() - t0, info.nsegments,
		   info.nsegments == 1 ? "" : "s", info.ndocs, info.nterms, info.npostings, info.pages,
		   gb(info.pages * 8192));
	if (info.ndocs != c->ndocs || info.npostings != c->npostings)
		die("cpu engine: the index holds %" PRIu64 " documents and %" PRIu64
			" postings, the corpus %u and %" PRIu64, info.ndocs, info.npostings,
			c->ndocs, c->npostings);
	fflush(stdout);
}

/* ---------- queries ---------- */

/* the queries of one log as text (lexemes separated by spaces) and their postings */
typedef struct QText
{
	char	  **text;
	int		   *len;
	uint64_t   *postings;
	uint32_t	n;
} QText;

static void
qtext_make(QText *t, const QLog *l, const Vocab *voc, const Segment *s)
{
	t->n = l->nq;
	t->text = xcalloc(t->n ? t->n : 1, sizeof(char *));
	t->len = xcalloc(t->n ? t->n : 1, sizeof(int));
	t->postings = xcalloc(t->n ? t->n : 1, sizeof(uint64_t));
	for (uint32_t q = 0; q < t->n; q++)
	{
		size_t		cap = 1,
					at = 0;

		for (uint32_t i = l->qoff[q]; i < l->qoff[q + 1]; i++)
			cap += (l->qterm[i] == NO_TERM ? 1 : voc->len[l->qterm[i]]) + 1;
		t->text[q] = xmalloc(cap);
		for (uint32_t i = l->qoff[q]; i < l->qoff[q + 1]; i++)
		{
			uint32_t	v = l->qterm[i];
			const char *lex = v == NO_TERM ? ABSENT_LEXEME : voc->lex[v];
			size_t		n = v == NO_TERM ? strlen(ABSENT_LEXEME) : voc->len[v];

			if (at > 0)
				t->text[q][at++] = ' ';
			memcpy(t->text[q] + at, lex, n);
			at += n;
			if (v != NO_TERM)
				t->postings[q] += s->npost[v];
		}
		t->text[q][at] = '\0';
		t->len[q] = (int) at;
	}
}

static void
qtext_free(QText *t)
{
	for (uint32_t q = 0; q < t->n; q++)
		free(t->text[q]);
	free(t->text);
	free(t->len);
	free(t->postings);
}

/* the mode of cpu_image_search for GPUIR_CUDA_MODE_* m */
static int
image_mode(int m)
{
	return m == GPUIR_CUDA_MODE_AND ? CPU_IMAGE_AND
		: m == GPUIR_CUDA_MODE_OR ? CPU_IMAGE_OR : CPU_IMAGE_BMW;
}

/* ---------- check ---------- */

/*
 * the first r->n queries against the reference; returns the mismatches
 * (with flip, each query's last score has its lowest bit flipped first:
 * --cpu-flip-score, which the check must catch)
 */
static uint64_t
check_config(const LogRef *r, const QLog *l, const QText *t, int m, uint32_t k, int flip,
			 int *error)
{
	const int	am = m == GPUIR_CUDA_MODE_AND;
	uint32_t   *docs = xmalloc(sizeof(uint32_t) * k);
	float	   *scores = xmalloc(sizeof(float) * k);
	uint64_t	bad = 0;
	char		err[1024];

	for (uint32_t q = 0; q < r->n; q++)
	{
		int			n = cpu_image_search(t->text[q], t->len[q], image_mode(m), k, docs, scores,
										 err, sizeof(err));
		int			where;

		if (n < 0)
		{
			printf("cpu engine: ERROR %s %s k=%u query %s: %s\n", l->name, mode_names[m], k,
				   l->qid[q], err);
			*error = 1;
			bad++;
			continue;
		}
		if (flip && n > 0)
		{
			uint32_t	bits;

			memcpy(&bits, &scores[n - 1], sizeof(bits));
			bits ^= 1;
			memcpy(&scores[n - 1], &bits, sizeof(bits));
		}
		where = logref_diff(r, am, q, k, (uint32_t) n, docs, scores);
		if (where == -1)
			continue;
		if (bad++ < 5)
		{
			printf("cpu engine: MISMATCH %s %s k=%u query %s: %d results, reference %u", l->name,
				   mode_names[m], k, l->qid[q], n, logref_count(r, am, q, k));
			if (where >= 0)
				printf("; first difference at %d: doc %u score %.9g, reference doc %u score %.9g",
					   where, docs[where], (double) scores[where], r->res[am][q][where].doc,
					   (double) r->res[am][q][where].score);
			printf("\n");
		}
	}
	free(docs);
	free(scores);
	return bad;
}

/* ---------- timing ---------- */

/* what the processes share (an anonymous shared mapping) */
typedef struct Shared
{
	atomic_uint_fast64_t next;	/* the next query to take */
	atomic_int	error;
	double		go;				/* now_s() of the start (CLOCK_MONOTONIC: one clock) */
	struct
	{
		uint64_t	queries;
		uint64_t	postings;
		uint64_t	results;
		double		end;
	}			proc[];
} Shared;

/* one process's share: queries until cpu_seconds have passed since go */
static void
worker(Shared *sh, int p, const QText *t, uint32_t nq, int m, uint32_t k, double secs,
	   int start_fd)
{
	uint32_t   *docs = xmalloc(sizeof(uint32_t) * k);
	float	   *scores = xmalloc(sizeof(float) * k);
	char		err[1024];
	char		c;

	if (read(start_fd, &c, 1) != 1)
		_exit(2);
	while (now_s() - sh->go < secs)
	{
		uint32_t	q = (uint32_t) (atomic_fetch_add(&sh->next, 1) % nq);
		int			n = cpu_image_search(t->text[q], t->len[q], image_mode(m), k, docs,
										 scores, err, sizeof(err));

		if (n < 0)
		{
			printf("cpu engine: ERROR in process %d, query %u: %s\n", p, q, err);
			atomic_store(&sh->error, 1);
			break;
		}
		sh->proc[p].queries++;
		sh->proc[p].postings += t->postings[q];
		sh->proc[p].results += (uint64_t) n;
	}
	sh->proc[p].end = now_s();
	fflush(stdout);
	_exit(0);
}

/* the timed run of one (log, mode, k) on o->cpu_engine processes, into r */
static void
time_config(Row *r, const QText *t, uint32_t nq, int m, uint32_t k, const Options *o,
			int *failed)
{
	const int	P = o->cpu_engine;
	size_t		bytes = sizeof(Shared) + sizeof(((Shared *) 0)->proc[0]) * (size_t) P;
	Shared	   *sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int			pipefd[2];
	pid_t	   *pids = xcalloc((size_t) P, sizeof(pid_t));
	double		last = 0;
	int			status;

	if (sh == MAP_FAILED || pipe(pipefd) != 0)
		die("cpu engine: mmap or pipe failed");
	memset(sh, 0, bytes);
	fflush(stdout);
	for (int p = 0; p < P; p++)
	{
		pids[p] = fork();
		if (pids[p] < 0)
			die("cpu engine: fork failed");
		if (pids[p] == 0)
		{
			close(pipefd[1]);
			worker(sh, p, t, nq, m, k, o->cpu_seconds, pipefd[0]);
		}
	}
	close(pipefd[0]);
	/* every process is waiting on the pipe: start them together */
	sh->go = now_s();
	for (int p = 0; p < P; p++)
		if (write(pipefd[1], "g", 1) != 1)
			die("cpu engine: cannot start the processes");
	close(pipefd[1]);
	for (int p = 0; p < P; p++)
		if (waitpid(pids[p], &status, 0) < 0 || !WIFEXITED(status) ||
			WEXITSTATUS(status) != 0)
			atomic_store(&sh->error, 1);
	memset(r, 0, sizeof(*r));
	r->mode = m;
	r->k = k;
	r->B = 1;
	for (int p = 0; p < P; p++)
	{
		r->queries += sh->proc[p].queries;
		r->postings += sh->proc[p].postings;
		r->results += sh->proc[p].results;
		if (sh->proc[p].end > last)
			last = sh->proc[p].end;
	}
	r->batches = r->queries;
	r->secs = last - sh->go;
	r->ran = r->queries > 0 && r->secs > 0;
	snprintf(r->note, sizeof(r->note), "production CPU engine, %d processes", P);
	if (atomic_load(&sh->error))
	{
		*failed = 1;
		r->ran = 0;
		snprintf(r->note, sizeof(r->note), "FAILED: a process stopped with an error");
	}
	munmap(sh, bytes);
	free(pids);
}

Row *
cpu_engine_grid(const Segment *s, const QLog *logs, int nlogs, const LogRef *refs,
				const Vocab *voc, const Options *o, int *nrows, int *failed)
{
	Row		   *rows = xcalloc((size_t) (nlogs * o->nmodes * o->nks) + 1, sizeof(Row));
	uint64_t	bad = 0,
				checked = 0;
	int			error = 0;

	*nrows = 0;
	printf("\ncpu engine: the production CPU engine (GpuirSearch), %d processes, %.3g s per "
		   "configuration\n", o->cpu_engine, o->cpu_seconds);
	printf("%-22s %-4s %5s %10s %10s %12s %14s %8s\n", "log", "mode", "k", "queries",
		   "seconds", "queries/s", "postings/s", "results");
	for (int li = 0; li < nlogs; li++)
	{
		const QLog *l = &logs[li];
		uint32_t	nq = o->max_queries && o->max_queries < l->nq ? o->max_queries : l->nq;
		QText		t;

		if (nq == 0)
			continue;
		qtext_make(&t, l, voc, s);
		for (int m = 0; m < o->nmodes; m++)
			for (int ki = 0; ki < o->nks; ki++)
			{
				Row		   *r = &rows[(*nrows)++];

				bad += check_config(&refs[li], l, &t, o->modes[m], o->ks[ki], o->cpu_flip_score,
									&error);
				checked += refs[li].n;
				time_config(r, &t, nq, o->modes[m], o->ks[ki], o, failed);
				r->log = li;
				if (r->ran)
					printf("%-22s %-4s %5u %10" PRIu64 " %10.3f %12.1f %14.4g %8.2f\n", l->name,
						   mode_names[r->mode], r->k, r->queries, r->secs, r->queries / r->secs,
						   r->postings / r->secs, (double) r->results / r->queries);
				else
					printf("%-22s %-4s %5u  %s\n", l->name, mode_names[r->mode], r->k, r->note);
				fflush(stdout);
			}
		qtext_free(&t);
	}
	print_exactness("cpu engine exactness", checked, bad);
	if (bad || error)
		*failed = 1;
	return rows;
}

/* ---------- report ---------- */

void
print_cpu_summary(const Row *cpu, int ncpu, const Row *gpu, int ngpu, const QLog *logs,
				  const Options *o)
{
	printf("\nGPU / production CPU engine (%d processes), queries/s, by GPU batch size:\n",
		   o->cpu_engine);
	for (int i = 0; i < ncpu; i++)
	{
		const Row  *c = &cpu[i];

		if (!c->ran)
			continue;
		printf("  %-22s %-4s k=%-5u cpu %10.1f q/s", logs[c->log].name, mode_names[c->mode],
			   c->k, c->queries / c->secs);
		for (int j = 0; j < ngpu; j++)
		{
			const Row  *g = &gpu[j];

			if (g->ran && g->log == c->log && g->mode == c->mode && g->k == c->k)
				printf("  B%u %.2fx", g->B, (g->queries / g->secs) / (c->queries / c->secs));
		}
		printf("\n");
	}
}

void
write_cpu_tsv(const char *path, const Row *rows, int nrows, const QLog *logs,
			  const Options *o, const Segment *s)
{
	FILE	   *f = fopen(path, "w");

	if (f == NULL)
	{
		printf("cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "log\tmode\tk\tprocesses\tqueries\tseconds\tqueries_per_s\tpostings\t"
			"postings_per_s\tmean_results\tnote\tdocs\ttotal_postings\n");
	for (int i = 0; i < nrows; i++)
	{
		const Row  *r = &rows[i];

		fprintf(f, "%s\t%s\t%u\t%d\t", logs[r->log].name, mode_names[r->mode], r->k,
				o->cpu_engine);
		if (r->ran)
			fprintf(f, "%" PRIu64 "\t%.6f\t%.3f\t%" PRIu64 "\t%.6g\t%.3f\t", r->queries, r->secs,
					r->queries / r->secs, r->postings, r->postings / r->secs,
					(double) r->results / r->queries);
		else
			fprintf(f, "\t\t\t\t\t\t");
		fprintf(f, "%s\t%u\t%" PRIu64 "\n", r->note, s->ndocs, s->npostings);
	}
	fclose(f);
}
