/*-------------------------------------------------------------------------
 *
 * cpu_image_stub.c
 *	  engine_bench built without PostgreSQL 15's server headers (bench/engine.mk
 *	  found none, or another version's): cpu_image.h's functions fail with
 *	  the reason, so that --cpu-engine stops and says what to install.
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_image.h"

#include <stdio.h>

#define NO_IMAGE "engine_bench was built without PostgreSQL 15's server headers: install them " \
	"(postgresql-server-dev-15) or set PG_CONFIG or PG_INCLUDEDIR_SERVER, and rebuild with " \
	"make -f bench/engine.mk"

int
cpu_image_build(uint32_t ndocs, const uint32_t *doclen, float k1, float b,
				uint32_t max_segment_docs, CpuImageNext next, void *arg, CpuImageInfo *info,
				char *err, size_t errlen)
{
	(void) ndocs, (void) doclen, (void) k1, (void) b, (void) max_segment_docs, (void) next;
	(void) arg, (void) info;
	snprintf(err, errlen, "%s", NO_IMAGE);
	return -1;
}

int
cpu_image_search(const char *query, int len, int mode, uint32_t k,
				 uint32_t *docs, float *scores, char *err, size_t errlen)
{
	(void) query, (void) len, (void) mode, (void) k, (void) docs, (void) scores;
	snprintf(err, errlen, "%s", NO_IMAGE);
	return -1;
}
