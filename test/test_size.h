/*-------------------------------------------------------------------------
 *
 * test_size.h
 *	  The run sizes of the kernel tests (test_cuda_decode.c,
 *	  test_cuda_search.c), chosen by their one argument:
 *		(none)		full: every batch and segment at its size
 *		--quick		small segments and batches, for compute-sanitizer
 *					memcheck
 *		--sanitize	smaller still, every kernel path on a few queries, for
 *					compute-sanitizer racecheck and synccheck (racecheck
 *					slows the kernels' shared-memory accesses by orders of
 *					magnitude: --quick did not finish in 150 s on an H200,
 *					--sanitize takes about 2 minutes there)
 *
 *-------------------------------------------------------------------------
 */
#ifndef TEST_SIZE_H
#define TEST_SIZE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum TestSize
{
	TEST_FULL,
	TEST_QUICK,
	TEST_SANITIZE
} TestSize;

static TestSize test_size = TEST_FULL;

/* test_size_args: test_size from the program's arguments; exits 2 on others */
static inline void
test_size_args(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--quick") == 0)
		test_size = TEST_QUICK;
	else if (argc > 1 && strcmp(argv[1], "--sanitize") == 0)
		test_size = TEST_SANITIZE;
	else if (argc > 1)
	{
		fprintf(stderr, "usage: %s [--quick | --sanitize]\n", argv[0]);
		exit(2);
	}
}

/* sized: full, quick or sanitize, as the run's size is */
static inline uint32_t
sized(uint32_t full, uint32_t quick, uint32_t sanitize)
{
	return test_size == TEST_SANITIZE ? sanitize : test_size == TEST_QUICK ? quick : full;
}

#endif							/* TEST_SIZE_H */
