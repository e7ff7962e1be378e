/*-------------------------------------------------------------------------
 *
 * gpuirworker_int.h
 *	  Private declarations of the GPU service worker, shared by its files
 *	  only:
 *
 *	  gpuirworker.c		startup, the main loop, batching, runs and answers;
 *						failure reporting (note, fail, reject)
 *	  gpuirrequest.c	validation of a request (slot area or DSM segment)
 *	  gpuircache.c		the list cache: segments resident on the device,
 *						the budget of gpuir.device_memory
 *	  gpuirreader.c		the list readers: processes that copy the pages
 *						of lists in transit beside the worker
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIRWORKER_INT_H
#define GPUIRWORKER_INT_H

#include "postgres.h"

#include "lib/ilist.h"
#include "storage/dsm.h"
#include "utils/resowner.h"

#include "gpuirservice.h"
#include "../cuda/gpuir_cuda.h"

/*
 * A cached segment's identity.  Zeroed before being filled (padding
 * included), so keys compare with memcmp.  A key names one segment: its
 * generation is unique within the relation file (a merge or a whole
 * relocation writes its segment under the metapage's next generation; a
 * compaction that moves only some of a segment's pages keeps it, and the
 * segment gets a second key when a stream's first page moved, never a
 * start it had before: gpuircompact.c, move_part), and its
 * PAYLOAD, BLOCKDIR and DOCLENS streams never change once written (the
 * DELETED bitmap and dictionary df, which VACUUM updates, are not
 * uploaded).  So equal keys mean equal bytes while
 * the relfilenode lives, and a cached entry stays valid for as long as
 * requests name its key.  The segment's pages do not stay its own: once a
 * merge has replaced it and no snapshot can see it any more, they go to
 * the free space map and a later merge may reuse them for a new segment,
 * which has another generation, hence another key (src/README, "Free space
 * map").  The entry of a replaced segment is then never hit again and
 * ages out of the LRU list.
 */
typedef struct GpuirCacheKey
{
	GpuirRelFile node;
	uint64		generation;
	BlockNumber payload_start;
	BlockNumber blockdir_start;
	BlockNumber doclens_start;
	BlockNumber priors_start;	/* the resident copy holds the priors too */
	BlockNumber tids_start;		/* and the host copy the TIDs */
	uint32		payload_bytes;
	uint32		nblocks;
	uint32		ndocs;
} GpuirCacheKey;

typedef struct GpuirCacheEntry
{
	dlist_node	lru;			/* in the cache's LRU list, most recent first */
	GpuirCacheKey key;
	gpuir_cuda_segment dev;		/* device arrays (of a partial entry: the
								 * skeleton, doclen and priors, no blocks) */
	uint64		bytes;			/* device bytes of the arrays (and of the
								 * kept lists) */
	struct GpuirPartial *partial;	/* a segment larger than the budget: its
									 * lists kept on the device (gpuircache.c),
									 * or NULL for a whole segment */
	ItemPointerData *tids;		/* host copy of the TIDS stream [ndocs]
								 * (docID -> heap TID), written into the
								 * answers beside the docIDs */
} GpuirCacheEntry;

/* one request taken from a slot */
typedef struct GpuirTaken
{
	/* copied from the slot under its mutex */
	int			slotno;
	uint64		req_id;
	dsm_handle	handle;
	uint32		nqueries;

	int			part;			/* the part of the request taken (docID
								 * window part of nparts) */
	int			nparts;
	bool		in_area;		/* the request is in the slot's area, which
								 * the worker holds (area_holds) until it
								 * answers; else in the DSM segment handle */
	bool		answered;		/* slot answered (or found withdrawn) */
	sem_t	   *done_wake;		/* the backend's slot's done, when this
								 * answer set the slot DONE (answer_chained) */
	dsm_segment *seg;			/* mapping (pinned: no resource owner) */
	char	   *base;			/* the request (slot area or mapping), or NULL */
	Size		size;			/* bytes at base */

	/* validated local copies */
	GpuirRequest hdr;
	GpuirSegmentData *segs;		/* [nsegments] */
	GpuirReqItem *items;		/* [nqueries * nsegments] */
	GpuirReqTerm *terms;		/* [nterms] */
	bool	   *skip;			/* [nitems]: item has no possible result */

	bool		failed;
	char		detail[sizeof(((GpuirRequest *) NULL)->detail)];
} GpuirTaken;

/* a batch: the requests taken together */
typedef struct GpuirBatch
{
	GpuirTaken *taken;
	int			ntaken;
	int			capacity;
	uint64		nqueries;		/* sum of the taken requests' nqueries */
	bool		read_pages;		/* index pages were read (smgr files opened) */
	bool		restart;		/* the device failed: restart after answering */
	TimestampTz first_take;		/* when its first request was taken */
	uint64		queue_us;		/* its requests' queue stage times, summed */
	int64		answer_us;		/* time its runs spent writing results */
	struct GpuirFlight *flight; /* its search in flight (gpuirworker.c), or NULL */
} GpuirBatch;

/* gpuirworker.c: this worker's device (its counters, state and last error) */
extern GpuirServiceDevice *GpuirWorkerDevice;

/* gpuirworker.c: failures */
extern void GpuirWorkerNoteFailure(const char *msg);
extern void GpuirWorkerFail(GpuirTaken *t, const char *fmt,...) pg_attribute_printf(2, 3);
extern void GpuirWorkerReject(GpuirTaken *t, const char *fmt,...) pg_attribute_printf(2, 3);
extern void GpuirWorkerCudaFailure(GpuirBatch *b, const char *what, gpuir_cuda_status st,
								   char *buf, size_t buflen);
extern void GpuirWorkerCudaSuccess(void);
extern void GpuirWorkerCatchError(char *buf, size_t buflen);
extern void GpuirWorkerErrorCleanup(ResourceOwner owner);
extern void GpuirWorkerReleaseArea(GpuirTaken *t);

/* gpuirrequest.c */
extern void GpuirRequestPrepare(GpuirTaken *t);

/* gpuircache.c */
extern void GpuirCacheInit(void);
extern uint64 GpuirCacheSetBudget(uint64 device_total);
extern GpuirCacheEntry *GpuirCacheGet(GpuirBatch *b, const GpuirCacheKey *key,
									  const GpuirTaken *t, const GpuirSegmentData *seg,
									  char *why, size_t whylen);
extern bool GpuirCacheEvictOthers(GpuirCacheEntry *keep);
extern const ItemPointerData *GpuirCacheTids(const GpuirCacheKey *key);
extern const gpuir_cuda_segment *GpuirCacheTransit(GpuirBatch *b, GpuirCacheEntry *e,
												   const GpuirTaken *t,
												   const GpuirSegmentData *seg,
												   const gpuir_cuda_query *queries, uint32 nq,
												   gpuir_cuda_term *terms, uint64 nterms,
												   const gpuir_cuda_scoring *sc, float *rests,
												   int slot, char *why, size_t whylen);

extern void GpuirCacheReadStream(const GpuirRelFile *node, bool permanent,
								 const GpuirSegmentData *seg, GpuirStreamKind kind,
								 uint64 off, uint64 len, char *dst);

/*
 * gpuirreader.c: one task of a list readers' job, in the worker's staging
 * segment: copy bytes [src_off, src_off + len) of the job's PAYLOAD stream
 * to staging offset dst_off
 */
#define GPUIR_READ_CHUNK		(256 * 1024)	/* bytes a task copies at most: a
												 * long list is split over several */

typedef struct GpuirReadTask
{
	uint64		src_off;
	uint64		dst_off;
	uint32		len;
	pg_atomic_uint32 finished;	/* 1 once copied or failed */
} GpuirReadTask;

extern bool GpuirReadersBegin(uint64 bytes, uint32 ntasks, char **staging,
							  GpuirReadTask **tasks);
extern void GpuirReadersRun(const GpuirRelFile *node, bool permanent,
							const GpuirSegmentData *seg, uint32 ntasks);
extern void GpuirReadersStop(void);

#endif							/* GPUIRWORKER_INT_H */
