/*-------------------------------------------------------------------------
 *
 * cpu_image_stub.c
 *	  engine_bench built without PostgreSQL's server headers (no pg_config
 *	  found by bench/engine.mk): cpu_image.h's functions fail with the
 *	  reason, so that --cpu-engine stops and says what to install.
 *
 *-------------------------------------------------------------------------
 */
#include "cpu_image.h"

#include <stdio.h>

#define NO_IMAGE "engine_bench was built without PostgreSQL's server headers: install them " \
	"(e.g. postgresql-server-dev-15) or set PG_CONFIG, and rebuild with make -f bench/engine.mk"

int
cpu_image_build(uint32_t ndocs, const uint32_t *doclen, float k1, float b,
				CpuImageNext next, void *arg, CpuImageInfo *info, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", NO_IMAGE);
	return -1;
}

int
cpu_image_search(const char *query, int len, int mode, uint32_t k,
				 uint32_t *docs, float *scores, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s", NO_IMAGE);
	return -1;
}
