/*-------------------------------------------------------------------------
 *
 * util.c
 *	  engine_bench: allocation, errors, clocks and threads.
 *
 *-------------------------------------------------------------------------
 */
#include "engine.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

void
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

void *
xmalloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
		die("out of memory (%zu bytes)", n);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void	   *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		die("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *
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
void *
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

char *
xstrndup(const char *s, size_t n)
{
	char	   *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

double
gb(uint64_t bytes)
{
	return (double) bytes / 1e9;
}

/* peak resident set size in GB, from /proc/self/status (0 if unknown) */
double
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
int
lexeme_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int			r = memcmp(a, b, alen < blen ? alen : blen);

	if (r != 0)
		return r;
	return (alen > blen) - (alen < blen);
}

/* ---------- threads ---------- */

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

void
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
