/*
 * codec_bench: time of the posting block decoder (src/gpuircodec.c) by list
 * density, in ns and (under callgrind) instructions a posting.
 *
 *   cc -O2 -Wall -Wextra -o build/codec_bench bench/codec_bench.c src/gpuircodec.c
 *   build/codec_bench [-safe] [rounds]      (default 200 rounds)
 *
 * For each density p (a docID is in the list with probability p, over 2^20
 * documents; tf - 1 geometric with mean 0.5, one posting in 200 with a tf
 * up to 1,000), the list is encoded block by block and every block decoded
 * rounds times: docIDs and tfs (what a term-at-a-time pass and a merge
 * read), and docIDs alone (what a document-at-a-time cursor decodes; its
 * tfs are read one at a time).  Each block is decoded from a buffer with
 * GPUIR_CODEC_SLOP readable bytes after it (GpuirCodecDecodePadded, the
 * query cursors' call) and, with -safe, from an exact-size copy
 * (GpuirCodecDecode).  Every round's output is checked against the input.
 */
#include "../src/gpuircodec.h"
#include "../test/test_util.h"	/* rnd(): the tests' xorshift64 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NDOCS (1u << 20)

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

typedef struct Block
{
	uint8_t    *bytes;			/* len + GPUIR_CODEC_SLOP bytes */
	size_t		len;
	uint32_t	prev;
	int			n;
	uint32_t	docs[GPUIR_BLOCK_SIZE];
	uint32_t	tfs[GPUIR_BLOCK_SIZE];
} Block;

int
main(int argc, char **argv)
{
	static const double dens[] = {0.5, 0.2, 0.05, 0.01, 0.001};
	int			rounds = 200;
	int			safe = 0;
	double		all_ns[2] = {0, 0};
	uint64_t	all_postings = 0;

	for (int a = 1; a < argc; a++)
	{
		if (strcmp(argv[a], "-safe") == 0)
			safe = 1;
		else
			rounds = atoi(argv[a]);
	}
	printf("%-8s %9s %8s %12s %12s\n", "density", "postings", "bytes/p",
		   "ns/p d+tf", "ns/p docIDs");
	for (size_t di = 0; di < sizeof(dens) / sizeof(dens[0]); di++)
	{
		Block	   *blocks = NULL;
		int			nblocks = 0;
		uint64_t	postings = 0,
					bytes = 0;
		uint32_t	docs[GPUIR_BLOCK_SIZE],
					tfs[GPUIR_BLOCK_SIZE];
		int			n = 0;
		uint32_t	prev = GPUIR_FIRST_PREV_DOCID;
		double		ns[2];
		uint32_t	threshold = (uint32_t) (dens[di] * 4294967295.0);

		for (uint32_t d = 0; d <= NDOCS; d++)
		{
			if (d < NDOCS && rnd() < threshold)
			{
				uint32_t	tf = 1;

				while (rnd() & 1 && (rnd() % 3) == 0)
					tf++;
				if (rnd() % 200 == 0)
					tf += rnd() % 1000;
				docs[n] = d;
				tfs[n++] = tf;
			}
			if (n == GPUIR_BLOCK_SIZE || (d == NDOCS && n > 0))
			{
				Block	   *b;
				uint8_t		out[GPUIR_BLOCK_MAX_BYTES];

				blocks = realloc(blocks, sizeof(Block) * (nblocks + 1));
				b = &blocks[nblocks++];
				b->len = GpuirCodecEncode(docs, tfs, n, prev, out);
				b->bytes = calloc(1, b->len + GPUIR_CODEC_SLOP);
				memcpy(b->bytes, out, b->len);
				b->prev = prev;
				b->n = n;
				memcpy(b->docs, docs, sizeof(uint32_t) * n);
				memcpy(b->tfs, tfs, sizeof(uint32_t) * n);
				postings += n;
				bytes += b->len;
				prev = docs[n - 1];
				n = 0;
			}
		}
		for (int withtf = 1; withtf >= 0; withtf--)
		{
			double		t0 = now_ns();

			for (int r = 0; r < rounds; r++)
				for (int i = 0; i < nblocks; i++)
				{
					Block	   *b = &blocks[i];
					int			got;

					if (safe)
					{
						uint8_t		exact[GPUIR_BLOCK_MAX_BYTES];

						memcpy(exact, b->bytes, b->len);
						got = GpuirCodecDecode(exact, b->len, b->prev, docs,
											   withtf ? tfs : NULL);
					}
					else
						got = GpuirCodecDecodePadded(b->bytes, b->len, b->prev, docs,
													 withtf ? tfs : NULL);
					if (got != b->n || docs[got - 1] != b->docs[got - 1] ||
						(r == 0 && (memcmp(docs, b->docs, sizeof(uint32_t) * got) != 0 ||
									(withtf && memcmp(tfs, b->tfs, sizeof(uint32_t) * got) != 0))))
					{
						fprintf(stderr, "block %d of density %g decodes wrong\n", i, dens[di]);
						return 1;
					}
				}
			ns[withtf ? 0 : 1] = now_ns() - t0;
		}
		printf("%-8g %9llu %8.2f %12.3f %12.3f\n", dens[di], (unsigned long long) postings,
			   (double) bytes / postings, ns[0] / rounds / postings,
			   ns[1] / rounds / postings);
		all_ns[0] += ns[0];
		all_ns[1] += ns[1];
		all_postings += postings;
		for (int i = 0; i < nblocks; i++)
			free(blocks[i].bytes);
		free(blocks);
	}
	printf("%-8s %9llu %8s %12.3f %12.3f\n", "all", (unsigned long long) all_postings, "",
		   all_ns[0] / rounds / all_postings, all_ns[1] / rounds / all_postings);
	return 0;
}
