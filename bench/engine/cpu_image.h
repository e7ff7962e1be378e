/*-------------------------------------------------------------------------
 *
 * cpu_image.h
 *	  engine_bench: the production CPU engine on an index image (the
 *	  interface of bench/engine/cpu_image.c, in plain C types: that file is
 *	  compiled against PostgreSQL's server headers, the rest of engine_bench
 *	  is not).  bench/engine/cpu_engine.c drives it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ENGINE_BENCH_CPU_IMAGE_H
#define ENGINE_BENCH_CPU_IMAGE_H

#include <stddef.h>
#include <stdint.h>

/* one posting list of the corpus: docIDs ascending, each with its tf */
typedef struct CpuImageList
{
	const char *lexeme;
	uint16_t	len;
	const uint32_t *doc;
	const uint32_t *tf;
	uint64_t	n;
} CpuImageList;

/* the corpus's lists in dictionary order (byte order, then length); 0 after the last */
typedef int (*CpuImageNext) (void *arg, CpuImageList *out);

/* what the build wrote */
typedef struct CpuImageInfo
{
	uint64_t	pages;			/* the index's 8 kB pages */
	int			nsegments;
	uint64_t	ndocs;
	uint64_t	nterms;
	uint64_t	npostings;
} CpuImageInfo;

/* the modes of cpu_image_search (GpuirMode's AND, OR, BMW) */
#define CPU_IMAGE_AND	0
#define CPU_IMAGE_OR	1
#define CPU_IMAGE_BMW	2

/*
 * cpu_image_build: the index of a corpus of ndocs documents (document d of
 * length doclen[d] >= 1, a row of the heap in docID order), whose lists
 * next gives, built by the production code into this process's image, as a
 * parallel CREATE INDEX's leader writes it: BM25 k1 and b, ceil(ndocs /
 * max_segment_docs) segments of about equal size (the reloption
 * max_segment_docs; 0: one segment), but at most 16, as CREATE INDEX
 * writes (GpuirPiecesInit): past 16 x max_segment_docs documents each of
 * the 16 holds more.  Returns 0, or -1
 * with the error in err.  Call once.
 */
extern int	cpu_image_build(uint32_t ndocs, const uint32_t *doclen, float k1, float b,
							uint32_t max_segment_docs, CpuImageNext next, void *arg,
							CpuImageInfo *info, char *err, size_t errlen);

/*
 * cpu_image_search: the top-k of query (lexemes separated by spaces, as the
 * index stores them; len bytes) in mode (CPU_IMAGE_*), by GpuirSearch on
 * the image built (cpu_image_build first): n <= k results (the return
 * value, or -1 with the error in err), best first (score descending,
 * docID ascending), their docIDs in docs[0..n) and scores in
 * scores[0..n); docs and scores hold k entries
 */
extern int	cpu_image_search(const char *query, int len, int mode, uint32_t k,
							 uint32_t *docs, float *scores, char *err, size_t errlen);

#endif							/* ENGINE_BENCH_CPU_IMAGE_H */
