/*
 * pgshim.h: the few PostgreSQL backend services that gpuir's page readers
 * use, emulated in one process so that a libFuzzer target can run the real
 * readers (src/gpuirutils.c, gpuirbuffer.c, gpuirlistread.c, gpuirengine.c,
 * gpuirmerge.c, gpuirverify.c)
 * on an index image held in memory (test/fuzz/pgshim.c says what each one
 * does and why it is faithful enough).  Compiled with -DPGSHIM_ENGINE it
 * also emulates what a build writes, so that engine_bench can build an
 * index with the production code and run the production CPU engine on it
 * (bench/engine/cpu_image.c).
 */
#ifndef GPUIR_PGSHIM_H
#define GPUIR_PGSHIM_H

#include "postgres.h"

#include "utils/rel.h"

/*
 * shim_begin: make the image data[0..size) (padded with zeros to whole
 * pages) the index relation's main fork, and a table of heap_nblocks blocks
 * its heap.  Every tuple of the heap is visible except those whose offset
 * number is a multiple of 7 (so the readers' invisible-row paths run too).
 */
extern void shim_begin(const uint8_t *data, size_t size, BlockNumber heap_nblocks);

/*
 * shim_options_from_meta: the index's options (k1, b) become its
 * metapage's, as shim_begin sets them; PGSHIM_ENGINE calls it after
 * building an index into an empty image (shim_begin(NULL, 0, n))
 */
extern void shim_options_from_meta(void);

/*
 * shim_end: free every allocation made since shim_begin (PGSHIM_ENGINE:
 * those of the top context; the engine's image lives until the process ends)
 */
extern void shim_end(void);

extern Relation shim_index;
extern Relation shim_heap;

/* the last error raised (ereport at ERROR or above) */
extern int	shim_error_code;
extern char shim_error_msg[1024];
extern const char *shim_error_where;	/* "file:line" of its ereport */

/* abort with a message: something the readers must never do happened */
extern void shim_fail(const char *fmt,...) pg_attribute_printf(1, 2) pg_attribute_noreturn();

#endif
