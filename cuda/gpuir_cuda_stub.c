/*-------------------------------------------------------------------------
 *
 * gpuir_cuda_stub.c
 *	  The gpuir CUDA interface for builds without nvcc: every device entry
 *	  point reports GPUIR_CUDA_NO_DEVICE, so src/ falls back to the CPU.
 *
 * Link either this file or the objects of cuda/ .cu files, never both (they define
 * the same symbols); gpuir_cuda_status.c is linked in both cases.
 *
 *-------------------------------------------------------------------------
 */
#include "gpuir_cuda_internal.h"

#include <string.h>

/* record why there is no device and report it */
static gpuir_cuda_status
no_device(void)
{
	gpuir_cuda_set_detail("gpuir", "built without CUDA support (nvcc was not found)");
	return GPUIR_CUDA_NO_DEVICE;
}

/* gpuir_cuda_device_count: *n = 0, GPUIR_CUDA_NO_DEVICE (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_device_count(int *n)
{
	if (n == NULL)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	*n = 0;
	return no_device();
}

/* gpuir_cuda_device_info: always GPUIR_CUDA_NO_DEVICE (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_device_info(int dev, char *name, size_t namelen, size_t *total_mem,
					   int *cc_major, int *cc_minor)
{
	(void) dev;
	(void) total_mem;
	(void) cc_major;
	(void) cc_minor;
	if (name != NULL && namelen > 0)
		name[0] = '\0';
	return no_device();
}

/* gpuir_cuda_set_device: always GPUIR_CUDA_NO_DEVICE (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_set_device(int dev)
{
	(void) dev;
	return no_device();
}

/* gpuir_cuda_segment_upload: always GPUIR_CUDA_NO_DEVICE (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_segment_upload(const uint8_t *payload, uint64_t payload_bytes,
						  const uint32_t *block_last, const uint32_t *block_offset,
						  const uint32_t *impact_tf, const uint32_t *impact_dl,
						  uint32_t nblocks, const uint32_t *doclen, const uint8_t *deleted,
						  const float *prior, float prior_max, uint32_t ndocs,
						  gpuir_cuda_segment *dev)
{
	(void) prior;
	(void) prior_max;
	(void) payload;
	(void) payload_bytes;
	(void) block_last;
	(void) block_offset;
	(void) impact_tf;
	(void) impact_dl;
	(void) nblocks;
	(void) doclen;
	(void) deleted;
	(void) ndocs;
	if (dev != NULL)
		memset(dev, 0, sizeof(*dev));
	return no_device();
}

/* gpuir_cuda_segment_free: nothing was ever allocated; zeroes *dev */
gpuir_cuda_status
gpuir_cuda_segment_free(gpuir_cuda_segment *dev)
{
	if (dev != NULL)
		memset(dev, 0, sizeof(*dev));
	return GPUIR_CUDA_OK;
}

/* gpuir_cuda_search_batch: always GPUIR_CUDA_NO_DEVICE (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_search_batch(const gpuir_cuda_segment *seg, const gpuir_cuda_scoring *sc,
						const gpuir_cuda_query *queries, uint32_t nqueries,
						const gpuir_cuda_term *terms, uint32_t nterms, uint32_t kmax,
						uint32_t *out_docids, float *out_scores, uint32_t *out_counts,
						void *stream)
{
	(void) seg;
	(void) sc;
	(void) queries;
	(void) terms;
	(void) nterms;
	(void) kmax;
	(void) out_docids;
	(void) out_scores;
	(void) out_counts;
	(void) stream;
	if (nqueries == 0)
		return GPUIR_CUDA_OK;
	return no_device();
}

/* gpuir_cuda_workspace_release: there is no workspace */
gpuir_cuda_status
gpuir_cuda_workspace_release(void)
{
	return GPUIR_CUDA_OK;
}

/* gpuir_cuda_search_take_searched_again: no search ever runs */
uint64_t
gpuir_cuda_search_take_searched_again(void)
{
	return 0;
}

/* gpuir_cuda_search_set_decode_cache: no search ever runs */
void
gpuir_cuda_search_set_decode_cache(uint32_t blocks)
{
	(void) blocks;
}

/* gpuir_cuda_search_take_decode_counts: no search ever runs */
void
gpuir_cuda_search_take_decode_counts(uint64_t *found, uint64_t *decoded)
{
	*found = 0;
	*decoded = 0;
}

/* gpuir_cuda_search_job_create: always GPUIR_CUDA_NO_DEVICE (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_search_job_create(gpuir_cuda_search_job **job)
{
	if (job != NULL)
		*job = NULL;
	return no_device();
}

/* gpuir_cuda_search_job_free: no job is ever made */
void
gpuir_cuda_search_job_free(gpuir_cuda_search_job *job)
{
	(void) job;
}

/* gpuir_cuda_search_job_release: always GPUIR_CUDA_NO_DEVICE (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_search_job_release(gpuir_cuda_search_job *job)
{
	(void) job;
	return no_device();
}

/* gpuir_cuda_search_start: always GPUIR_CUDA_NO_DEVICE (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_search_start(gpuir_cuda_search_job *job, const gpuir_cuda_segment *seg,
						const gpuir_cuda_scoring *sc, const gpuir_cuda_query *queries,
						uint32_t nqueries, const gpuir_cuda_term *terms, uint32_t nterms,
						uint32_t kmax)
{
	(void) job;
	(void) seg;
	(void) sc;
	(void) queries;
	(void) nqueries;
	(void) terms;
	(void) nterms;
	(void) kmax;
	return no_device();
}

/* gpuir_cuda_search_done: nothing is ever pending */
bool
gpuir_cuda_search_done(const gpuir_cuda_search_job *job)
{
	(void) job;
	return true;
}

/* gpuir_cuda_search_finish: always GPUIR_CUDA_NO_DEVICE (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_search_finish(gpuir_cuda_search_job *job, uint32_t *out_docids, float *out_scores,
						 uint32_t *out_counts)
{
	(void) job;
	(void) out_docids;
	(void) out_scores;
	(void) out_counts;
	return no_device();
}

/* lists in transit: nothing is ever made (see gpuir_cuda.h) */
gpuir_cuda_status
gpuir_cuda_transit_create(gpuir_cuda_transit **tr)
{
	if (tr != NULL)
		*tr = NULL;
	return no_device();
}

void
gpuir_cuda_transit_free(gpuir_cuda_transit *tr)
{
	(void) tr;
}

gpuir_cuda_status
gpuir_cuda_transit_staging(gpuir_cuda_transit *tr, uint64_t bytes, void **host)
{
	(void) tr;
	(void) bytes;
	if (host != NULL)
		*host = NULL;
	return no_device();
}

gpuir_cuda_status
gpuir_cuda_transit_upload(gpuir_cuda_transit *tr, const void *host, uint64_t bytes,
						  const uint32_t **dev_base)
{
	(void) tr;
	(void) host;
	(void) bytes;
	if (dev_base != NULL)
		*dev_base = NULL;
	return no_device();
}

gpuir_cuda_status
gpuir_cuda_transit_sync(gpuir_cuda_transit *tr)
{
	(void) tr;
	return no_device();
}

gpuir_cuda_status
gpuir_cuda_host_register(void *p, uint64_t bytes)
{
	(void) p;
	(void) bytes;
	return no_device();
}

void
gpuir_cuda_host_unregister(void *p)
{
	(void) p;
}

gpuir_cuda_status
gpuir_cuda_list_keep(gpuir_cuda_transit *tr, const gpuir_cuda_list *src, gpuir_cuda_list *out)
{
	(void) tr;
	(void) src;
	if (out != NULL)
		memset(out, 0, sizeof(*out));
	return no_device();
}

void
gpuir_cuda_transit_trim(gpuir_cuda_transit *tr)
{
	(void) tr;
}

void
gpuir_cuda_list_free(gpuir_cuda_transit *tr, gpuir_cuda_list *l)
{
	(void) tr;
	if (l != NULL)
		memset(l, 0, sizeof(*l));
}

gpuir_cuda_status
gpuir_cuda_transit_assemble(gpuir_cuda_transit *tr, uint32_t slot,
							const gpuir_cuda_segment *skeleton,
							const gpuir_cuda_list *lists, uint32_t nlists,
							gpuir_cuda_segment *out)
{
	(void) tr;
	(void) slot;
	(void) skeleton;
	(void) lists;
	(void) nlists;
	if (out != NULL)
		memset(out, 0, sizeof(*out));
	return no_device();
}
