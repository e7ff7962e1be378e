/*-------------------------------------------------------------------------
 *
 * gpuirwake.c
 *	  Waking the backends a GPU service worker has answered, from threads
 *	  beside the worker's loop
 *
 * A backend waiting for the GPU service sleeps on its latch; the worker
 * answers a request (its slot DONE, gpuirworker.c's answer) and sets that
 * latch.  Setting the latch of a sleeping process is a signal (SIGURG), and
 * the kill() that sends it costs the worker a few microseconds of system
 * time: with 64 clients an H200's worker spent about 80 us of every batch
 * of 17 requests on them (bench/results/2026-11-30-h200-sql-prepared),
 * while the device waited for its next batch.
 *
 * With gpuir.wake_threads > 0 and a batch of more than two answered
 * requests, the worker sets the first latch itself and hands the others
 * to that many threads of its own process (one mutex and a condition
 * variable a batch), and goes on to its next batch while they set them.  SetLatch is safe there: PostgreSQL calls it from signal
 * handlers, so it touches only the latch (in shared memory) and MyProcPid,
 * and sends kill(); the threads call nothing else of PostgreSQL, allocate
 * nothing, and block every signal, so that PostgreSQL's handlers run on the
 * worker's own thread.  A latch is set at most once too often (a backend
 * that withdrew its request, or a PGPROC reused): latches allow spurious
 * wake-ups, and a backend's wait loop looks at its slot after each.
 *
 * The worker sets the latches left in the queue itself when it exits
 * (GpuirWakeDrain), and whenever the threads cannot take them (a full
 * queue, a thread that failed to start): a backend is never left without
 * its wake-up.
 *
 * Copyright (c) 2026, gpuir authors
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <pthread.h>
#include <signal.h>

#include "storage/latch.h"

#include "gpuirworker_int.h"

/* gpuir.wake_threads */
int			gpuir_wake_threads = 2;

/* latches handed to the threads: a ring under wake_mutex */
#define WAKE_RING		4096
#define WAKE_PENDING	256

static pthread_mutex_t wake_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake_cond = PTHREAD_COND_INITIALIZER;
static Latch *wake_ring[WAKE_RING];
static uint32 wake_head;		/* next to set (under wake_mutex) */
static uint32 wake_tail;		/* next free (under wake_mutex) */
static int	wake_started;		/* threads running (worker's thread only) */
static bool wake_failed;		/* a thread failed to start: do not try again */

/* the batch's latches, gathered by the worker's thread before one hand-over */
static Latch *pending[WAKE_PENDING];
static int	npending;

/* wake_thread: set the latches handed over, one at a time, for good */
static void *
wake_thread(void *arg)
{
	for (;;)
	{
		Latch	   *latch;

		pthread_mutex_lock(&wake_mutex);
		while (wake_head == wake_tail)
			pthread_cond_wait(&wake_cond, &wake_mutex);
		latch = wake_ring[wake_head % WAKE_RING];
		wake_head++;
		pthread_mutex_unlock(&wake_mutex);
		SetLatch(latch);
	}
	return NULL;
}

/*
 * start_threads: make gpuir.wake_threads threads run (never fewer than are
 * running: a thread left idle costs nothing).  Every signal is blocked in
 * them.  A thread that fails to start is reported at LOG once, and the
 * worker sets the latches itself from then on.
 */
static void
start_threads(void)
{
	sigset_t	all,
				old;

	if (wake_failed || wake_started >= gpuir_wake_threads)
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	while (wake_started < gpuir_wake_threads)
	{
		pthread_t	th;
		int			rc = pthread_create(&th, NULL, wake_thread, NULL);

		if (rc != 0)
		{
			wake_failed = true;
			ereport(LOG,
					(errmsg("gpuir gpu service could not start a wake thread: %s", strerror(rc)),
					 errdetail("The worker sets its backends' latches itself.")));
			break;
		}
		pthread_detach(th);
		wake_started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * GpuirWakeLatch: have latch set once the batch's answers are handed over
 * (GpuirWakeFlush); set at once when gpuir.wake_threads is 0 or no thread
 * runs
 */
void
GpuirWakeLatch(Latch *latch)
{
	if (gpuir_wake_threads <= 0 || wake_failed)
	{
		SetLatch(latch);
		return;
	}
	if (npending == WAKE_PENDING)
		GpuirWakeFlush();
	pending[npending++] = latch;
}

/*
 * GpuirWakeFlush: set the latches gathered since the last call.  Two or
 * fewer are set here: waking a thread costs the worker about what a latch
 * does, and a thread would add its own wake-up to the backend's wait (one
 * client's round trip).  Of more, the first is set here and the others are
 * handed to the threads (started the first time) with one lock and one
 * signal of the condition variable; what does not fit the ring is set here
 * too.
 */
void
GpuirWakeFlush(void)
{
	int			n = npending;
	int			handed = 1;

	if (n == 0)
		return;
	npending = 0;
	if (n > 2)
		start_threads();
	if (n > 2 && wake_started > 0)
	{
		pthread_mutex_lock(&wake_mutex);
		while (handed < n && wake_tail - wake_head < WAKE_RING)
			wake_ring[wake_tail++ % WAKE_RING] = pending[handed++];
		pthread_mutex_unlock(&wake_mutex);
		pthread_cond_broadcast(&wake_cond);
		SetLatch(pending[0]);
		for (int i = handed; i < n; i++)
			SetLatch(pending[i]);
	}
	else
		for (int i = 0; i < n; i++)
			SetLatch(pending[i]);
}

/*
 * GpuirWakeDrain: set every latch not yet set, here (the worker exits, and
 * its threads with it)
 */
void
GpuirWakeDrain(void)
{
	for (int i = 0; i < npending; i++)
		SetLatch(pending[i]);
	npending = 0;
	if (wake_started == 0)
		return;
	pthread_mutex_lock(&wake_mutex);
	while (wake_head != wake_tail)
	{
		Latch	   *latch = wake_ring[wake_head++ % WAKE_RING];

		SetLatch(latch);
	}
	pthread_mutex_unlock(&wake_mutex);
}
