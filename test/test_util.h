/*-------------------------------------------------------------------------
 *
 * test_util.h
 *	  Helpers shared by the standalone C tests (test_codec.c,
 *	  test_cuda_decode.c): pass/fail counters and a deterministic
 *	  xorshift64 random number generator.  Each test program includes it
 *	  once, so the static state is per program.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>

/* checks passed and failed so far */
static int	passed,
			failed;

/* xorshift64 state; rnd_seed() picks another (non-zero) sequence */
static uint64_t rng_state = 88172645463325252ULL;

static inline void
rnd_seed(uint64_t seed)
{
	rng_state = seed ? seed : 88172645463325252ULL;
}

static inline uint32_t
rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t) rng_state;
}

/* count one check; print what failed (at most 20 messages) */
static inline void
check(int ok, const char *what)
{
	if (ok)
		passed++;
	else
	{
		if (failed < 20)
			fprintf(stderr, "FAIL: %s\n", what);
		failed++;
	}
}

#endif							/* TEST_UTIL_H */
