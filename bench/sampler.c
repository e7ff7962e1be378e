/*
 * bench/sampler.c: a sampling CPU profiler for the PostgreSQL server's
 * processes, for machines without perf (the GPU machine has no perf, gdb or
 * strace).  Preloaded into the postmaster, it samples every process the
 * postmaster forks (backends, the gpuir worker) by the process's own CPU
 * time, and bench/sampler-report turns the samples into functions.
 *
 *   gcc -O2 -shared -fPIC -o /tmp/sampler.so bench/sampler.c
 *   LD_PRELOAD=/tmp/sampler.so GPUIR_SAMPLER_DIR=/tmp/samples \
 *       pg_ctl -D DATA -l LOG start
 *   ... the load ...; pg_ctl -D DATA stop   (processes write at exit)
 *   bench/sampler-report /tmp/samples
 *
 * How: ITIMER_PROF (the process's user + system CPU time) sends SIGPROF
 * every GPUIR_SAMPLER_US microseconds of CPU (default 1000); the handler
 * stores the interrupted instruction pointer and glibc's backtrace() of the
 * call stack (up to DEPTH frames, unwound through the signal frame by
 * .eh_frame, so code built without frame pointers unwinds too; the
 * handler's own two frames count among the DEPTH, so a deeper stack loses
 * its outermost frames, and the report's "total" undercounts those).  Timers are
 * not inherited by fork(), so a pthread_atfork child handler re-arms the
 * timer and empties the copy of the parent's samples.  At exit() a
 * destructor writes GPUIR_SAMPLER_DIR/PID.txt: the process's command line
 * (a PostgreSQL process's ps display), its executable mappings and one line
 * per sample.  A process that leaves by _exit() (quickdie, a crash) writes
 * nothing.
 *
 * Only processes of the program GPUIR_SAMPLER_PROGRAM (default "postgres",
 * the basename of /proc/self/exe) are sampled: a timer survives execve()
 * while the signal handler does not, so a sampled shell that execs the
 * server would be killed by SIGPROF before the new image's constructor
 * runs (pg_ctl starts the postmaster through sh -c exec).
 *
 * Caveats: backtrace() is not async-signal-safe; it is warmed up at load
 * (libgcc_s loaded) so that the handler does not dlopen, and a deadlock is
 * possible only if a sample lands inside the dynamic loader's lock (no
 * dlopen happens in a steady load).  SA_RESTART keeps most interrupted
 * system calls going; PostgreSQL retries the others (EINTR), as it does for
 * its own signals.  A sample costs a few microseconds: at the default rate
 * under 1% of the CPU it measures.  Samples beyond MAX_SAMPLES a process
 * are counted, not stored.  In a process with threads (the worker's CUDA
 * threads) two samples taken at once may race for one slot: one is lost.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define DEPTH		24
#define MAX_SAMPLES	50000

static void *frames[MAX_SAMPLES][DEPTH];
static void *rips[MAX_SAMPLES];
static unsigned char depths[MAX_SAMPLES];
static volatile sig_atomic_t nsamples;
static volatile sig_atomic_t dropped;
static long interval_us = 1000;
/* a copy: PostgreSQL's ps display overwrites the environment's strings */
static char out_dir[1024];

static void
on_sigprof(int sig, siginfo_t *si, void *ctx)
{
	int			saved = errno;
	int			i = nsamples;

	(void) sig;
	(void) si;
	if (i < MAX_SAMPLES)
	{
		ucontext_t *uc = ctx;

		rips[i] = (void *) uc->uc_mcontext.gregs[REG_RIP];
		depths[i] = (unsigned char) backtrace(frames[i], DEPTH);
		nsamples = i + 1;
	}
	else
		dropped = dropped + 1;
	errno = saved;
}

static void
arm(void)
{
	struct itimerval it;

	it.it_interval.tv_sec = interval_us / 1000000;
	it.it_interval.tv_usec = interval_us % 1000000;
	it.it_value = it.it_interval;
	setitimer(ITIMER_PROF, &it, NULL);
}

static void
after_fork_child(void)
{
	nsamples = 0;
	dropped = 0;
	arm();
}

__attribute__((constructor)) static void
sampler_start(void)
{
	struct sigaction sa;
	void	   *warm[4];
	const char *us = getenv("GPUIR_SAMPLER_US");
	const char *program = getenv("GPUIR_SAMPLER_PROGRAM");
	char		exe[4096];
	ssize_t		len;
	const char *base;
	const char *dir = getenv("GPUIR_SAMPLER_DIR");

	if (dir == NULL || dir[0] == '\0' || strlen(dir) >= sizeof(out_dir))
		return;
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[len > 0 ? len : 0] = '\0';
	base = strrchr(exe, '/') != NULL ? strrchr(exe, '/') + 1 : exe;
	if (strcmp(base, program != NULL && program[0] != '\0' ? program : "postgres") != 0)
		return;					/* not sampled, writes nothing */
	strcpy(out_dir, dir);
	if (us != NULL && atol(us) > 0)
		interval_us = atol(us);
	(void) backtrace(warm, 4);	/* loads libgcc_s now, not in the handler */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigprof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	pthread_atfork(NULL, NULL, after_fork_child);
	arm();
}

__attribute__((destructor)) static void
sampler_write(void)
{
	struct itimerval off;
	char		path[4096];
	char		line[8192];
	FILE	   *f;
	FILE	   *in;
	int			n;
	size_t		len;

	if (out_dir[0] == '\0')
		return;
	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_PROF, &off, NULL);
	n = nsamples;
	if (n == 0)
		return;
	snprintf(path, sizeof(path), "%s/%d.txt", out_dir, (int) getpid());
	f = fopen(path, "w");
	if (f == NULL)
		return;

	/* the ps display: PostgreSQL rewrites argv, which /proc shows */
	in = fopen("/proc/self/cmdline", "r");
	len = in != NULL ? fread(line, 1, sizeof(line) - 1, in) : 0;
	if (in != NULL)
		fclose(in);
	for (size_t j = 0; j < len; j++)
		if (line[j] == '\0' || line[j] == '\n')
			line[j] = ' ';
	line[len] = '\0';
	fprintf(f, "cmd %s\n", line);
	fprintf(f, "interval_us %ld\nsamples %d\ndropped %d\n", interval_us, n, (int) dropped);

	in = fopen("/proc/self/maps", "r");
	while (in != NULL && fgets(line, sizeof(line), in) != NULL)
		fprintf(f, "map %s", line);
	if (in != NULL)
		fclose(in);

	for (int i = 0; i < n; i++)
	{
		fprintf(f, "s %lx", (unsigned long) rips[i]);
		for (int d = 0; d < depths[i]; d++)
			fprintf(f, " %lx", (unsigned long) frames[i][d]);
		fputc('\n', f);
	}
	fclose(f);
}
