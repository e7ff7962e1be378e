/*-------------------------------------------------------------------------
 *
 * gpuir_transit.cu
 *	  Lists in transit: the device side of searching a segment larger than
 *	  the device budget from its lists (contracts in gpuir_cuda.h, "lists in
 *	  transit").  A batch's lists are list images, some kept on the device
 *	  by the worker's list cache (gpuir_cuda_list_keep), the others staged
 *	  in pinned host memory and uploaded with the batch; one kernel copies
 *	  them into the block arrays of one segment, which the ordinary search
 *	  kernels then read (Wang et al., ICPADS 2017: a GPU that holds part of
 *	  the index).
 *
 *-------------------------------------------------------------------------
 */
#include <stdint.h>
#include <algorithm>
#include <stdlib.h>
#include <string.h>

#include "gpuir_cuda_internal.cuh"

/* one assembly slot of a transit: the segment it assembled last */
struct transit_slot
{
	uint32_t   *payload;		/* the assembled segment's arrays */
	size_t		payload_cap;	/* bytes */
	uint32_t   *blocks;			/* block_last | block_offset | impact_tf | impact_dl */
	size_t		blocks_cap;		/* blocks */
	uint32_t   *h_zero;			/* host zeros: the directory checks' prefix counts */
	uint64_t	h_zero_cap;		/* entries */
};

struct gpuir_cuda_transit
{
	cudaStream_t stream;
	cudaMemPool_t pool;			/* kept lists' memory: stream-ordered; NULL
								 * until made */
	void	   *host_stage;		/* pinned */
	size_t		host_cap;
	uint32_t   *dev_stage;
	size_t		dev_stage_cap;
	transit_slot out[GPUIR_CUDA_TRANSIT_SLOTS];	/* one assembled segment a slot */
	void	   *desc_host;		/* pinned: the kernel's list descriptors */
	size_t		desc_cap;		/* descriptors */
	void	   *desc_dev;
	size_t		desc_dev_cap;
};

/* one list of an assemble call, as the kernel reads it */
typedef struct transit_desc
{
	const uint32_t *src;		/* list image */
	uint32_t	nblocks;
	uint32_t	payload_words;
	uint32_t	first_block;	/* in the assembled segment */
	uint32_t	payload_word;	/* its first payload word there */
} transit_desc;

/* words a thread block copies per (list, chunk) */
#define TRANSIT_CHUNK_WORDS 4096

/*
 * transit_copy_kernel: thread block (x, y) copies chunk x (of
 * TRANSIT_CHUNK_WORDS words) of list y's payload, and its part of the
 * list's block arrays (blocks [x * TRANSIT_CHUNK_WORDS / 8, ...), about as
 * many words), rebasing block offsets by the list's place in the payload.
 * Blocks of y past the list's end return.  Block (0, 0) writes the final
 * block offset.
 */
__global__ void
transit_copy_kernel(const transit_desc *desc, uint32_t list0, uint32_t nblocks_all,
					uint32_t payload_bytes_all, uint32_t *payload, uint32_t *block_last,
					uint32_t *block_offset, uint32_t *impact_tf, uint32_t *impact_dl)
{
	const transit_desc d = desc[list0 + blockIdx.y];
	const uint32_t n = d.nblocks;
	const uint64_t w0 = (uint64_t) blockIdx.x * TRANSIT_CHUNK_WORDS;
	const uint64_t b0 = (uint64_t) blockIdx.x * (TRANSIT_CHUNK_WORDS / 8);

	if (blockIdx.x == 0 && blockIdx.y == 0 && list0 == 0 && threadIdx.x == 0)
		block_offset[nblocks_all] = payload_bytes_all;
	if (w0 < d.payload_words)
	{
		const uint32_t *src = d.src + gpuir_cuda_list_image_payload(n);
		const uint64_t w1 = min((uint64_t) d.payload_words, w0 + TRANSIT_CHUNK_WORDS);

		for (uint64_t w = w0 + threadIdx.x; w < w1; w += blockDim.x)
			payload[d.payload_word + w] = src[w];
	}
	if (b0 < n)
	{
		const uint64_t b1 = min((uint64_t) n, b0 + TRANSIT_CHUNK_WORDS / 8);
		const uint32_t base = d.payload_word * 4;

		for (uint64_t b = b0 + threadIdx.x; b < b1; b += blockDim.x)
		{
			const uint64_t o = d.first_block + b;

			block_last[o] = d.src[b];
			block_offset[o] = d.src[gpuir_cuda_list_image_offsets(n) + b] + base;
			for (int j = 0; j < GPUIR_CUDA_BLOCK_IMPACTS; j++)
			{
				impact_tf[o * GPUIR_CUDA_BLOCK_IMPACTS + j] =
					d.src[gpuir_cuda_list_image_tf(n) + b * GPUIR_CUDA_BLOCK_IMPACTS + j];
				impact_dl[o * GPUIR_CUDA_BLOCK_IMPACTS + j] =
					d.src[gpuir_cuda_list_image_dl(n) + b * GPUIR_CUDA_BLOCK_IMPACTS + j];
			}
		}
	}
}

extern "C" gpuir_cuda_status
gpuir_cuda_transit_create(gpuir_cuda_transit **tr)
{
	gpuir_cuda_transit *t;
	gpuir_cuda_status st;

	if (tr == NULL)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	*tr = NULL;
	t = (gpuir_cuda_transit *) calloc(1, sizeof(*t));
	if (t == NULL)
		return GPUIR_CUDA_OOM;
	st = gpuir_cuda_check(cudaStreamCreateWithFlags(&t->stream, cudaStreamNonBlocking));
	if (st != GPUIR_CUDA_OK)
	{
		free(t);
		return st;
	}

	/*
	 * The kept lists' memory pool: lists are admitted and evicted in most
	 * runs under a small budget, and cudaMalloc / cudaFree cost tens of
	 * microseconds each, cudaFree waiting for every stream of the device
	 * (the other search in flight too); stream-ordered allocations from a
	 * pool that keeps what is freed (no release threshold) cost neither.
	 * The pool holds at most the peak of the kept lists' bytes, which the
	 * list cache's budget bounds; after an out-of-memory the worker gives
	 * what it keeps unused back (gpuir_cuda_transit_trim).
	 */
	{
		cudaMemPoolProps props;
		uint64_t	keep = UINT64_MAX;
		int			dev = 0;

		memset(&props, 0, sizeof(props));
		st = gpuir_cuda_check(cudaGetDevice(&dev));
		if (st == GPUIR_CUDA_OK)
		{
			props.allocType = cudaMemAllocationTypePinned;
			props.handleTypes = cudaMemHandleTypeNone;
			props.location.type = cudaMemLocationTypeDevice;
			props.location.id = dev;
			st = gpuir_cuda_check(cudaMemPoolCreate(&t->pool, &props));
			if (st != GPUIR_CUDA_OK)
				t->pool = NULL;
		}
		if (st == GPUIR_CUDA_OK)
			st = gpuir_cuda_check(cudaMemPoolSetAttribute(t->pool, cudaMemPoolAttrReleaseThreshold,
														  &keep));
		if (st != GPUIR_CUDA_OK)
		{
			gpuir_cuda_transit_free(t);
			return st;
		}
	}
	*tr = t;
	return GPUIR_CUDA_OK;
}

extern "C" void
gpuir_cuda_transit_free(gpuir_cuda_transit *tr)
{
	void	   *host[] = {tr ? tr->host_stage : NULL, tr ? tr->desc_host : NULL};
	void	   *dev[] = {tr ? tr->dev_stage : NULL, tr ? tr->desc_dev : NULL};

	if (tr == NULL)
		return;
	gpuir_cuda_ignore_error(cudaStreamSynchronize(tr->stream));
	for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++)
		if (host[i] != NULL)
			gpuir_cuda_ignore_error(cudaFreeHost(host[i]));
	for (size_t i = 0; i < sizeof(dev) / sizeof(dev[0]); i++)
		if (dev[i] != NULL)
			gpuir_cuda_ignore_error(cudaFree(dev[i]));
	for (int s = 0; s < GPUIR_CUDA_TRANSIT_SLOTS; s++)
	{
		if (tr->out[s].payload != NULL)
			gpuir_cuda_ignore_error(cudaFree(tr->out[s].payload));
		if (tr->out[s].blocks != NULL)
			gpuir_cuda_ignore_error(cudaFree(tr->out[s].blocks));
		free(tr->out[s].h_zero);
	}
	/* its kept lists were freed before (contract): their frees are done now */
	if (tr->pool != NULL)
		gpuir_cuda_ignore_error(cudaMemPoolDestroy(tr->pool));
	gpuir_cuda_ignore_error(cudaStreamDestroy(tr->stream));
	free(tr);
}

extern "C" void
gpuir_cuda_transit_trim(gpuir_cuda_transit *tr)
{
	if (tr == NULL || tr->pool == NULL)
		return;
	/* the frees queued on the stream first, then what the pool keeps unused */
	gpuir_cuda_ignore_error(cudaStreamSynchronize(tr->stream));
	gpuir_cuda_ignore_error(cudaMemPoolTrimTo(tr->pool, 0));
}

extern "C" gpuir_cuda_status
gpuir_cuda_transit_staging(gpuir_cuda_transit *tr, uint64_t bytes, void **host)
{
	gpuir_cuda_status st;

	if (tr == NULL || host == NULL)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	*host = NULL;
	/* the previous search's upload may still read the buffer */
	if ((st = gpuir_cuda_check(cudaStreamSynchronize(tr->stream))) != GPUIR_CUDA_OK)
		return st;
	if ((st = gpuir_cuda_grow((void **) &tr->host_stage, &tr->host_cap, bytes > 0 ? bytes : 16,
							  1, 1024, GPUIR_CUDA_MEM_PINNED)) != GPUIR_CUDA_OK)
		return st;
	*host = tr->host_stage;
	return GPUIR_CUDA_OK;
}

extern "C" gpuir_cuda_status
gpuir_cuda_transit_upload(gpuir_cuda_transit *tr, const void *host, uint64_t bytes,
						  const uint32_t **dev_base)
{
	gpuir_cuda_status st;

	if (tr == NULL || dev_base == NULL || bytes % 16 != 0 ||
		(host == NULL && bytes > 0 && bytes > tr->host_cap) ||
		((uintptr_t) host) % 16 != 0)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	if (host == NULL)
		host = tr->host_stage;
	*dev_base = NULL;
	if ((st = gpuir_cuda_grow((void **) &tr->dev_stage, &tr->dev_stage_cap,
							  bytes / 4 + 4, 4, 1024, GPUIR_CUDA_MEM_DEVICE)) != GPUIR_CUDA_OK)
		return st;
	if (bytes > 0 &&
		(st = gpuir_cuda_check(cudaMemcpyAsync(tr->dev_stage, host, bytes,
											   cudaMemcpyHostToDevice, tr->stream))) != GPUIR_CUDA_OK)
		return st;
	*dev_base = tr->dev_stage;
	return GPUIR_CUDA_OK;
}

extern "C" gpuir_cuda_status
gpuir_cuda_transit_sync(gpuir_cuda_transit *tr)
{
	if (tr == NULL)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	return gpuir_cuda_check(cudaStreamSynchronize(tr->stream));
}

extern "C" gpuir_cuda_status
gpuir_cuda_host_register(void *p, uint64_t bytes)
{
	if (p == NULL || bytes == 0)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	return gpuir_cuda_check(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
}

extern "C" void
gpuir_cuda_host_unregister(void *p)
{
	if (p != NULL)
		gpuir_cuda_ignore_error(cudaHostUnregister(p));
}

extern "C" gpuir_cuda_status
gpuir_cuda_list_keep(gpuir_cuda_transit *tr, const gpuir_cuda_list *src, gpuir_cuda_list *out)
{
	void	   *p = NULL;
	uint64_t	bytes;
	gpuir_cuda_status st;

	if (out == NULL)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	memset(out, 0, sizeof(*out));
	if (tr == NULL || src == NULL || src->base == NULL || src->nblocks == 0)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	bytes = gpuir_cuda_list_image_bytes(src->nblocks, src->payload_bytes);
	if ((st = gpuir_cuda_check(cudaMallocFromPoolAsync(&p, bytes, tr->pool,
														tr->stream))) != GPUIR_CUDA_OK)
		return st;
	if ((st = gpuir_cuda_check(cudaMemcpyAsync(p, src->base, bytes, cudaMemcpyDeviceToDevice,
											   tr->stream))) != GPUIR_CUDA_OK)
	{
		gpuir_cuda_ignore_error(cudaFreeAsync(p, tr->stream));
		return st;
	}
	out->base = (const uint32_t *) p;
	out->nblocks = src->nblocks;
	out->payload_bytes = src->payload_bytes;
	return GPUIR_CUDA_OK;
}

extern "C" void
gpuir_cuda_list_free(gpuir_cuda_transit *tr, gpuir_cuda_list *l)
{
	if (tr == NULL || l == NULL || l->base == NULL)
		return;
	/* ordered after its readers: the keep copies and assemblies, all on this stream */
	gpuir_cuda_ignore_error(cudaFreeAsync((void *) l->base, tr->stream));
	memset(l, 0, sizeof(*l));
}

extern "C" gpuir_cuda_status
gpuir_cuda_transit_assemble(gpuir_cuda_transit *tr, uint32_t slot,
							const gpuir_cuda_segment *skeleton,
							const gpuir_cuda_list *lists, uint32_t nlists,
							gpuir_cuda_segment *out)
{
	uint64_t	nblocks = 0;
	uint64_t	words = 0;
	uint64_t	max_words = 0;
	transit_desc *desc;
	transit_slot *o;
	gpuir_cuda_status st;

	if (out != NULL)
		memset(out, 0, sizeof(*out));
	if (tr == NULL || skeleton == NULL || out == NULL || (nlists > 0 && lists == NULL) ||
		slot >= GPUIR_CUDA_TRANSIT_SLOTS)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	for (uint32_t i = 0; i < nlists; i++)
	{
		const uint64_t lw = std::max<uint64_t>(lists[i].payload_bytes / 4,
									(uint64_t) lists[i].nblocks * 8);

		if (lists[i].base == NULL || lists[i].nblocks == 0 || lists[i].payload_bytes % 4 != 0)
			return GPUIR_CUDA_INVALID_ARGUMENT;
		nblocks += lists[i].nblocks;
		words += lists[i].payload_bytes / 4;
		max_words = std::max<uint64_t>(max_words, lw);
	}
	if (nblocks >= UINT32_MAX || words * 4 > UINT32_MAX)
		return GPUIR_CUDA_INVALID_ARGUMENT;
	o = &tr->out[slot];

	/*
	 * the slot's arrays, grown when needed (no search reads them now: the
	 * caller's contract, and the last assembly ended with its stream idle)
	 */
	if ((st = gpuir_cuda_grow((void **) &o->payload, &o->payload_cap,
							  words * 4 + 4, 1, 1024, GPUIR_CUDA_MEM_DEVICE)) != GPUIR_CUDA_OK ||
		(st = gpuir_cuda_grow((void **) &o->blocks, &o->blocks_cap, nblocks + 1,
							  sizeof(uint32_t) * (2 + 2 * GPUIR_CUDA_BLOCK_IMPACTS),
							  1024, GPUIR_CUDA_MEM_DEVICE)) != GPUIR_CUDA_OK ||
		(st = gpuir_cuda_grow((void **) &tr->desc_host, &tr->desc_cap, nlists > 0 ? nlists : 1,
							  sizeof(transit_desc), 1024, GPUIR_CUDA_MEM_PINNED)) != GPUIR_CUDA_OK)
		return st;
	if ((st = gpuir_cuda_grow((void **) &tr->desc_dev, &tr->desc_dev_cap, tr->desc_cap,
							  sizeof(transit_desc), 1024, GPUIR_CUDA_MEM_DEVICE)) != GPUIR_CUDA_OK)
		return st;
	if (o->h_zero == NULL || o->h_zero_cap < nblocks + 1)
	{
		free(o->h_zero);
		o->h_zero_cap = 0;
		o->h_zero = (uint32_t *) calloc(o->blocks_cap + 1, sizeof(uint32_t));
		if (o->h_zero == NULL)
			return GPUIR_CUDA_OOM;
		o->h_zero_cap = o->blocks_cap + 1;
	}

	/* the descriptors */
	desc = (transit_desc *) tr->desc_host;
	{
		uint32_t	fb = 0;
		uint32_t	pw = 0;

		for (uint32_t i = 0; i < nlists; i++)
		{
			desc[i].src = lists[i].base;
			desc[i].nblocks = lists[i].nblocks;
			desc[i].payload_words = lists[i].payload_bytes / 4;
			desc[i].first_block = fb;
			desc[i].payload_word = pw;
			fb += lists[i].nblocks;
			pw += lists[i].payload_bytes / 4;
		}
	}

	{
		const uint64_t cap = o->blocks_cap;
		uint32_t   *block_last = o->blocks;
		uint32_t   *block_offset = block_last + cap;
		uint32_t   *impact_tf = block_offset + cap;
		uint32_t   *impact_dl = impact_tf + cap * GPUIR_CUDA_BLOCK_IMPACTS;

		if (nlists > 0)
		{
			const uint32_t chunks = (uint32_t) ((max_words + TRANSIT_CHUNK_WORDS - 1) / TRANSIT_CHUNK_WORDS);

			if ((st = gpuir_cuda_check(cudaMemcpyAsync(tr->desc_dev, desc,
													   sizeof(transit_desc) * nlists,
													   cudaMemcpyHostToDevice,
													   tr->stream))) != GPUIR_CUDA_OK)
				return st;
			for (uint32_t l0 = 0; l0 < nlists; l0 += 65535)
			{
				dim3		grid(chunks, (uint32_t) std::min<uint64_t>(65535u, nlists - l0));

				transit_copy_kernel<<<grid, 256, 0, tr->stream>>>((const transit_desc *) tr->desc_dev,
																  l0, (uint32_t) nblocks,
																  (uint32_t) (words * 4),
																  o->payload, block_last,
																  block_offset, impact_tf,
																  impact_dl);
				if ((st = gpuir_cuda_check(cudaGetLastError())) != GPUIR_CUDA_OK)
					return st;
			}
		}
		else if ((st = gpuir_cuda_check(cudaMemsetAsync(block_offset, 0, sizeof(uint32_t),
														tr->stream))) != GPUIR_CUDA_OK)
			return st;
		if ((st = gpuir_cuda_check(cudaStreamSynchronize(tr->stream))) != GPUIR_CUDA_OK)
			return st;

		*out = *skeleton;
		out->payload = (const uint8_t *) o->payload;
		out->payload_bytes = words * 4;
		out->block_last = block_last;
		out->block_offset = block_offset;
		out->impact_tf = impact_tf;
		out->impact_dl = impact_dl;
		out->nblocks = (uint32_t) nblocks;
		out->h_bad = o->h_zero;
		out->h_desc = o->h_zero;
		out->decode_id = 0;		/* its slot is rewritten: keep no decoded list */
		out->windowed = 0;
		out->tile_first = 0;
		out->tile_end = 0;
	}
	return GPUIR_CUDA_OK;
}
