/*-------------------------------------------------------------------------
 *
 * gpuir_cuda.h
 *	  Pure C interface between gpuir's PostgreSQL code (src/) and its CUDA
 *	  kernels (cuda/): status codes, device discovery, resident segments
 *	  and the batched top-k search.
 *
 * Rules of this boundary (ARCHITECTURE.md, decisions 1 and 2):
 *	- C only, stdint/stddef only (and src/gpuirlist.h, the pure C owner of
 *	  the posting-list format): no postgres.h, no CUDA headers, so that
 *	  src/ includes it with the ordinary PGXS compiler flags.
 *	- Nothing here pallocs, ereports, prints, longjmps or exits.  Every entry
 *	  point returns a gpuir_cuda_status; src/ turns a failure into ereport,
 *	  using gpuir_cuda_status_string() and gpuir_cuda_last_error_detail().
 *	- Only the GPU-service background worker may call these functions: the
 *	  first call creates a CUDA context in the calling process, and a CUDA
 *	  context does not survive fork().  The postmaster and ordinary backends
 *	  must not call them (probe in a forked child if startup needs facts).
 *	- A stream argument is a cudaStream_t passed as void * (NULL is the
 *	  default stream).  Calls use the calling thread's current device.
 *
 * The kernels follow Ding, He, Yan, Suel, "Using Graphics Processors for
 * High Performance IR Query Processing", WWW 2009 (cited per function).
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_CUDA_H
#define GPUIR_CUDA_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

/* the posting-list format (block size, block header, impacts per block) */
#include "../src/gpuirlist.h"

#ifdef __cplusplus
extern "C"
{
#endif

/*
 * GPUIR_CUDA_API marks the interface functions visible, so that the .cu
 * files can be compiled with -fvisibility=hidden (which keeps CUB's and
 * libcu++'s inline symbols out of the extension's dynamic symbol table).
 */
#if defined(__GNUC__)
#define GPUIR_CUDA_API __attribute__((visibility("default")))
#else
#define GPUIR_CUDA_API
#endif

/* postings per block (src/gpuircodec.h) */
#define GPUIR_CUDA_BLOCK_SIZE		GPUIR_BLOCK_SIZE

/*
 * Status of a host entry point.  Values are stable (they may be stored or
 * logged); new codes are appended.
 */
typedef enum gpuir_cuda_status
{
	GPUIR_CUDA_OK = 0,			/* success */
	GPUIR_CUDA_NO_DEVICE = 1,	/* no usable device: no driver (libcuda.so
								 * absent), driver too old for this
								 * runtime, no GPU, or all GPUs unavailable */
	GPUIR_CUDA_ERROR = 2,		/* any other CUDA runtime error (detail in
								 * gpuir_cuda_last_error_detail()) */
	GPUIR_CUDA_OOM = 3,			/* device (or pinned host) allocation failed */
	GPUIR_CUDA_CORRUPT = 4,		/* input data is not well formed (e.g. a
								 * posting block failed validation) */
	GPUIR_CUDA_INVALID_ARGUMENT = 5	/* bad argument (NULL pointer, count out
									 * of range, bad device number) */
} gpuir_cuda_status;

/*
 * gpuir_cuda_status_string: a static, lowercase, English description of a
 * status code ("no CUDA device", ...); never NULL, also for unknown codes.
 * Does not touch the CUDA runtime.
 */
extern GPUIR_CUDA_API const char *gpuir_cuda_status_string(gpuir_cuda_status status);

/*
 * gpuir_cuda_last_error_detail: the CUDA runtime error behind the last
 * GPUIR_CUDA_NO_DEVICE / _ERROR / _OOM returned to the calling thread, as
 * "cudaErrorName: description", or "" if there was none.  The string lives
 * in thread-local storage and is overwritten by the next failing call of
 * this thread.  Does not touch the CUDA runtime.
 */
extern GPUIR_CUDA_API const char *gpuir_cuda_last_error_detail(void);

/*
 * gpuir_cuda_device_count: number of CUDA devices visible to this process.
 *
 * Output: *n, >= 1 on success, set to 0 on any failure.
 * Returns GPUIR_CUDA_OK, GPUIR_CUDA_NO_DEVICE when there is no driver or no
 * GPU (safe without libcuda.so: the CUDA runtime is linked statically and
 * loads the driver lazily; a build without nvcc links cuda/gpuir_cuda_stub.c
 * and always returns this), GPUIR_CUDA_ERROR for other runtime errors,
 * GPUIR_CUDA_INVALID_ARGUMENT if n is NULL.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_device_count(int *n);

/*
 * gpuir_cuda_device_info: facts about device dev (0 .. count-1).
 *
 * Outputs (each may be NULL to skip it):
 *	name[namelen]	device name, NUL-terminated, truncated to namelen - 1
 *					bytes (namelen 0 writes nothing)
 *	*total_mem		global memory in bytes
 *	*cc_major, *cc_minor  compute capability (9.0 for an H100)
 * Returns GPUIR_CUDA_OK, GPUIR_CUDA_INVALID_ARGUMENT for a bad dev,
 * GPUIR_CUDA_NO_DEVICE or GPUIR_CUDA_ERROR.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_device_info(int dev, char *name, size_t namelen,
												size_t *total_mem,
												int *cc_major, int *cc_minor);

/*
 * gpuir_cuda_set_device: make device dev (0 .. count-1) the calling
 * thread's current device: every later call of this thread (uploads,
 * searches, the workspace) uses it.  Call it before any other call that
 * allocates; a process that never calls it uses device 0.
 * Returns GPUIR_CUDA_OK, GPUIR_CUDA_INVALID_ARGUMENT for a bad dev,
 * GPUIR_CUDA_NO_DEVICE or GPUIR_CUDA_ERROR.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_set_device(int dev);

/* ---------- batched top-k search (part 2: the GPU query engine) ---------- */

/*
 * BM25 constants of one index, as in src/ (GpuirScoring): every score is the
 * float32 expression idf * (tf * (k1 + 1)) / (tf + k1 * ((1 - b) + b * (dl /
 * avgdl))), summed over a query's terms in the query's term order, exactly as
 * GpuirBM25 and the CPU engine do (kernels are built with --fmad=false),
 * then, in a segment uploaded with priors, plus prior_weight * prior[d]
 * (see gpuir_cuda_segment).
 */
typedef struct gpuir_cuda_scoring
{
	float		k1;
	float		b;
	float		avgdl;
	float		prior_weight;	/* w of the document priors, >= 0 (read only
								 * in a segment uploaded with priors) */
} gpuir_cuda_scoring;

/*
 * A segment's posting data resident on the device (all pointers are device
 * pointers), structure of arrays as on disk (src/README, "Segments"):
 *	payload[payload_bytes]		encoded blocks (src/gpuircodec.h)
 *	block_last[nblocks]			last docID of each block
 *	block_offset[nblocks + 1]	payload offset of each block; the last entry
 *								is payload_bytes, so block b spans
 *								[block_offset[b], block_offset[b + 1])
 *	impact_tf, impact_dl[nblocks * GPUIR_CUDA_BLOCK_IMPACTS]
 *								the block's impacts (tf, dl) pairs, block-major:
 *								every posting of block b has tf <= impact_tf[i]
 *								and dl >= impact_dl[i] for some of its i
 *	doclen[ndocs]				dl of each docID
 *	doclen_code[ndocs]			the same in one byte: dl when below
 *								GPUIR_CUDA_DL_ESCAPE, else GPUIR_CUDA_DL_ESCAPE
 *								(then read doclen[d]); made by the upload.  The
 *								kernels gather a length per posting at a
 *								random docID: from this array a 32-byte
 *								sector serves 32 documents rather than 8, and
 *								the array (1 byte a document) mostly stays in
 *								L2 on 40 M documents
 *	deleted[(ndocs + 7) / 8]	bit d set: docID d is deleted; may be NULL
 *	prior[ndocs]				the static prior of each docID (0 ..
 *								prior_max), or NULL for a segment without
 *								priors; a document's score is then its
 *								BM25 sum plus prior_weight * prior[d],
 *								rounded to float after the product and
 *								after the sum (GpuirPriorScore of
 *								src/gpuir.h; Wang et al. 2017, eq. 3)
 *	prior_max					the largest prior (host value; 0 without
 *								priors): every score bound adds
 *								prior_weight * prior_max
 *
 * and, in host memory (malloc'd by the upload, freed with the segment), the
 * block directory's checks as prefix counts, so that a search checks each
 * list it uses in O(1) instead of walking its blocks on every call:
 *	h_bad[nblocks + 1]			h_bad[b]: blocks before b whose last docID is
 *								not below ndocs, whose offset is not a
 *								multiple of 4, whose extent is not 8 ..
 *								GPUIR_BLOCK_MAX_BYTES bytes, or whose header
 *								is unsound or gives another length than the
 *								extent (GpuirCodecBlockBytes: the CPU reader
 *								refuses such a block, GpuirListDecodeBlock)
 *	h_desc[nblocks + 1]			h_desc[b]: blocks b' < b, b' > 0, whose last
 *								docID is not above block b' - 1's
 * A list of blocks [f, f + n) passes when h_bad[f + n] == h_bad[f] and
 * h_desc[f + n] == h_desc[f + 1] (no descent inside the list).  A search
 * refuses a list that does not pass before any kernel runs, and its kernels
 * take these checks as made: they read a block's directory entry and header
 * unchecked (gpuir_warp_decode_listed_block, cuda/gpuir_decode.cuh).
 *
 * decode_id (host value) names the upload: gpuir_cuda_segment_upload gives
 * each segment a number never given before in the process, which the
 * searches' decoded lists are kept under (cuda/gpuir_decode_cache.cuh), so
 * the device arrays of a segment that has one must not change while it is
 * uploaded.  0 (a segment of lists in transit, or one built by hand) keeps
 * no decoded list between searches.
 */
#define GPUIR_CUDA_BLOCK_IMPACTS	GPUIR_BLOCK_IMPACTS	/* src/gpuirlist.h */
#define GPUIR_CUDA_DL_ESCAPE		255	/* gpuir_cuda_segment.doclen_code */

typedef struct gpuir_cuda_segment
{
	const uint8_t *payload;
	uint64_t	payload_bytes;
	const uint32_t *block_last;
	const uint32_t *block_offset;
	const uint32_t *impact_tf;
	const uint32_t *impact_dl;
	const uint32_t *doclen;
	const uint8_t *doclen_code;
	const uint8_t *deleted;
	const float *prior;
	float		prior_max;
	uint32_t	ndocs;
	uint32_t	nblocks;
	uint32_t   *h_bad;			/* host memory */
	uint32_t   *h_desc;			/* host memory */
	uint64_t	decode_id;		/* the upload's number, 0 for none (above) */
	/*
	 * docID window: when windowed, a search sees only the docIDs of tiles
	 * tile_first .. tile_end - 1 (GPUIR_CUDA_TILE_DOCS docIDs each); as
	 * uploaded (0), the whole segment.  Set by gpuir_cuda_segment_window.
	 */
	uint32_t	windowed;
	uint32_t	tile_first;
	uint32_t	tile_end;
} gpuir_cuda_segment;

/* docIDs per tile of the search kernels (cuda/gpuir_search.cu) */
#define GPUIR_CUDA_TILE_DOCS	16384

/*
 * posting blocks a search decodes once per batch at most (the lists of its
 * OR and BMW queries; 2^21 blocks: 2 GiB of docIDs and contributions)
 */
#define GPUIR_CUDA_DECODE_BUDGET	((uint32_t) 1 << 21)

/*
 * gpuir_cuda_segment_window: *out = *seg restricted to part part of nparts
 * equal docID ranges, cut at tile boundaries (part p gets tiles [T * p /
 * nparts, T * (p + 1) / nparts) of the segment's T): a search of *out
 * returns the top-k of the query among those docIDs only, so the top-k of
 * the union of every part's results (score descending, docID ascending) is
 * the search of the whole segment.  For splitting one long query over
 * several devices (each holds the segment and searches its part).  *out
 * shares seg's arrays (free only seg).  A part with no tile (more parts
 * than tiles) matches nothing.  Returns GPUIR_CUDA_OK, or
 * GPUIR_CUDA_INVALID_ARGUMENT for NULL pointers or part >= nparts.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_segment_window(const gpuir_cuda_segment *seg,
												   uint32_t part, uint32_t nparts,
												   gpuir_cuda_segment *out);

/*
 * gpuir_cuda_topk_merge: the top k of one query over nparts disjoint docID
 * windows (gpuir_cuda_segment_window): part p's results are docids[p][0 ..
 * counts[p]) and scores[p][..], each ranked (score descending, docID
 * ascending, as a search returns them).  Writes the k best of their union
 * in that order to out_docids[0 .. *out_count) and out_scores, *out_count =
 * min(k, sum of counts), and zeroes the slots up to k (as a search does).
 * Host code only (no device needed).  Returns GPUIR_CUDA_OK, or
 * GPUIR_CUDA_INVALID_ARGUMENT for NULL pointers, nparts 0 or above 64, or k
 * 0.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_topk_merge(uint32_t nparts,
											   const uint32_t *const *docids,
											   const float *const *scores,
											   const uint32_t *counts, uint32_t k,
											   uint32_t *out_docids, float *out_scores,
											   uint32_t *out_count);

/* one query term: its posting list in the segment (blocks first_block ..) */
typedef struct gpuir_cuda_term
{
	uint32_t	first_block;
	uint32_t	nblocks;
	uint32_t	npostings;		/* nblocks = ceil(npostings / 128) */
	float		idf;			/* computed by src/ from global N and df */
} gpuir_cuda_term;

typedef enum gpuir_cuda_mode
{
	GPUIR_CUDA_MODE_AND = 0,	/* documents holding every term of the query */
	GPUIR_CUDA_MODE_OR = 1,		/* documents holding any term (exhaustive) */
	GPUIR_CUDA_MODE_BMW = 2		/* same result as OR (docIDs, score bits,
								 * ties), with block-max pruning; runs as OR
								 * when the segment has no impacts, an idf
								 * is negative, or the batch's BMW queries
								 * fill few waves of tiles and hold few
								 * postings (gpuir_cuda_search_set_bmw_batch) */
} gpuir_cuda_mode;

/*
 * One query of a batch: its terms are terms[first_term .. first_term +
 * nterms) of the batch's term array, in the query's term order (the order
 * scores are summed in); k is 1 .. GPUIR_CUDA_MAX_K.  The result is the k
 * best non-deleted docIDs of the segment by score descending, ties broken by
 * docID ascending (fewer when fewer documents qualify).
 */
#define GPUIR_CUDA_MAX_K			1000

typedef struct gpuir_cuda_query
{
	uint32_t	first_term;
	uint32_t	nterms;
	uint32_t	k;
	int32_t		mode;			/* gpuir_cuda_mode */
} gpuir_cuda_query;

/*
 * gpuir_cuda_segment_upload: copy one segment's posting data to device
 * memory (cudaMalloc, one allocation per array; copies, and the kernel
 * that makes the one-byte length codes, on the legacy default stream, all
 * complete on the device before it returns, so that a search on any
 * stream may use the segment at once), filling *dev with the device
 * pointers and sizes.  The
 * segment then stays resident until gpuir_cuda_segment_free (the GPU
 * service's list cache; Ding et al. 2009, section 5: the index is kept in
 * GPU memory and queries are shipped to it).
 *
 * Inputs (host arrays; shapes and meaning as in gpuir_cuda_segment above):
 *	payload[payload_bytes]		the segment's PAYLOAD stream; payload_bytes
 *								at most UINT32_MAX (offsets are 32-bit)
 *	block_last[nblocks]			last docID of each block (BLOCKDIR)
 *	block_offset[nblocks + 1]	payload offset of each block, then
 *								payload_bytes; non-decreasing
 *	impact_tf, impact_dl[nblocks * GPUIR_CUDA_BLOCK_IMPACTS]  the blocks'
 *								impacts; both NULL to leave them out (the
 *								AND and OR kernels do not read them; BMW
 *								then runs as OR)
 *	nblocks						blocks of the segment (0 allowed; then the
 *								block arrays may be NULL)
 *	doclen[ndocs]				dl of each docID (required when ndocs > 0);
 *								the device holds it twice, as uploaded and
 *								as one-byte codes (5 bytes a document)
 *	deleted[(ndocs + 7) / 8]	VACUUM's bitmap (bit d % 8 of byte d / 8
 *								set: docID d deleted), or NULL for none
 *	prior[ndocs]				each docID's static prior, or NULL for none
 *								(the PRIORS stream, src/README)
 *	prior_max					the segment's largest prior (its directory's
 *								prior_max); ignored when prior is NULL
 *	ndocs						documents, 0 .. 0xFFFFFFFE
 * Output: *dev (device pointers, and the host prefix counts of the block
 * directory's checks; every field zeroed on failure).  A block that fails a
 * check (its last docID below ndocs, its extent of 8 to
 * GPUIR_BLOCK_MAX_BYTES bytes at an offset that is a multiple of 4, a sound
 * header whose length is that extent: GpuirCodecBlockBytes; docIDs
 * increasing within a list) does not fail the upload: the searches whose
 * lists hold it return GPUIR_CUDA_CORRUPT, the others are answered.
 * Returns GPUIR_CUDA_OK, GPUIR_CUDA_INVALID_ARGUMENT (NULL dev, a required
 * array NULL, only one impact array, payload_bytes or ndocs too large),
 * GPUIR_CUDA_CORRUPT (block_offset decreasing or its last entry not
 * payload_bytes; prior_max not finite or negative, a prior negative, NaN
 * or above prior_max: the bounds of BMW would not hold), GPUIR_CUDA_OOM, GPUIR_CUDA_NO_DEVICE or GPUIR_CUDA_ERROR.
 * Nothing stays allocated on failure.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_segment_upload(const uint8_t *payload,
												   uint64_t payload_bytes,
												   const uint32_t *block_last,
												   const uint32_t *block_offset,
												   const uint32_t *impact_tf,
												   const uint32_t *impact_dl,
												   uint32_t nblocks,
												   const uint32_t *doclen,
												   const uint8_t *deleted,
												   const float *prior,
												   float prior_max,
												   uint32_t ndocs,
												   gpuir_cuda_segment *dev);

/*
 * gpuir_cuda_segment_free: cudaFree every array of a segment filled by
 * gpuir_cuda_segment_upload (and free its host prefix counts) and zero *dev.  A zeroed (or already freed)
 * segment and NULL are no-ops.  Returns GPUIR_CUDA_OK, or the status of the
 * first failing cudaFree (the other arrays are still freed).
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_segment_free(gpuir_cuda_segment *dev);

/*
 * gpuir_cuda_search_batch: exact top-k of a batch of queries over one
 * resident segment: each query's k best non-deleted docIDs by score
 * descending, ties by docID ascending, scores bit-identical to the CPU
 * engine (src/gpuirengine.c) on the same segment.
 *
 * Algorithms (cuda/gpuir_search.cu has the details):
 *	OR		exhaustive score accumulation organised by docID range (Ding et
 *			al. 2009, section 8.3; Stanfill 1992, parallel inverted files
 *			with score accumulators): the docID space is cut into tiles of
 *			GPUIR_CUDA_TILE_DOCS docIDs; a thread block takes (query, tile)
 *			pairs from a counter, one at a time (a grid of about what the
 *			device holds at once), and for each decodes the blocks of each list that overlap the tile (found by
 *			binary search on block_last; one warp per block) and adds the
 *			terms' BM25 contributions, in the query's term order, to float
 *			accumulators in shared memory, visiting matched documents only.
 *	AND		Parallel Merge Find (Ding et al. 2009, sections 7 and 8.1),
 *			driven by the shortest list: one thread block per block of it,
 *			whose docIDs are the candidates; the longer lists are taken from
 *			shortest to longest, and of each only the blocks that hold a
 *			surviving candidate's docID (found by binary search on
 *			block_last) are decoded and intersected; a thread block stops
 *			when none survives.  The survivors are then scored in the
 *			query's term order.
 *	BMW		the OR result with block-max pruning (Ding & Suel, SIGIR 2011;
 *			on the GPU as Huang et al., ICA3PP 2017): per (query, tile) a
 *			bound from the blocks' impacts (GpuirBM25Bound in double, times
 *			GPUIR_BOUND_SLACK), tiles in docID order, and a per-query
 *			threshold in device memory (always a lower bound of the final
 *			k-th best score, raised by every tile that kept k documents)
 *			lets a tile be skipped when its bound is strictly below the
 *			threshold; the other tiles are scored as OR.  Before the tiles,
 *			each query's threshold is seeded from its lists' block maxima
 *			(Kane & Tompa, SIGIR 2018), and a query whose seed is above 0
 *			(or that has one term) is answered instead from its essential
 *			lists' blocks that can reach it (MaxScore, Turtle & Flood 1995,
 *			s3.2; gpuir_cuda_search_set_maxscore; a query of one term
 *			whose blocks reaching the seed might emit more than min(tiles
 *			x k, its postings) keys goes to the tiles).  A query of several
 *			terms whose lists hold more than one posting for every
 *			GPUIR_CUDA_MAXSCORE_DENSE docIDs of the window's tiles runs
 *			as OR: each tile overlaps many blocks of such lists, so its
 *			bound is near the lists' and rarely below the threshold, and
 *			full tiles cost less a posting than the lookups.  So do all
 *			the BMW queries of a batch whose tiles (each query's tiles
 *			of the window) fill fewer than the calling thread's waves
 *			(GPUIR_CUDA_BMW_BATCH_WAVES by default) of the tile
 *			kernel's resident blocks and whose lists hold fewer than its
 *			batch postings (GPUIR_CUDA_BMW_BATCH_TOTAL by default;
 *			gpuir_cuda_search_set_bmw_batch).  The output
 *			is exactly OR's.  Needs the segment's impact arrays and idf
 *			>= 0; otherwise the query runs as OR.  A block the directory
 *			checks refused (its header, length, offset or order:
 *			gpuir_cuda_segment_upload) fails every batch that uses its list,
 *			before any kernel runs; corruption inside a sound block (an
 *			exception position, a docID or tf out of range) is reported
 *			only if the block is decoded (every block of a list the batch
 *			decodes once; else those of the tiles not skipped), like the
 *			CPU engine's BMW.
 *	top-k	multi-level selection (Ding et al. 2009, section 8.3; Stanfill
 *			1992, data-parallel top-N): each tile (and each thread block
 *			of AND) keeps its k best
 *			documents at or above the query's running threshold (every
 *			mode keeps one) by a block-wide radix select on the 64-bit key
 *			(score, ~docID); for k >= 100 the tiles also count their
 *			candidates by score bucket in a histogram per query and raise
 *			the threshold to the highest bucket edge with k counted at or
 *			above it (the bucket counts of bucketSelect, Alabi et al.,
 *			ACM JEA 2012, kept across a query's tiles); a query with many
 *			candidates has them cut in 32 slices first, each reduced to
 *			its k best by its own thread block; then one thread block per
 *			query selects the k best and sorts them (cub::BlockRadixSort).
 *
 * Inputs:
 *	seg			resident segment (gpuir_cuda_segment_upload); device arrays
 *	sc			BM25 constants: k1 >= 0, 0 <= b <= 1, avgdl > 0, all finite;
 *				prior_weight finite and >= 0 when seg has priors
 *	queries[nqueries]	host array; query q's terms are terms[first_term ..
 *				first_term + nterms) (ranges may overlap between queries),
 *				1 <= k <= kmax, mode a gpuir_cuda_mode; a query with no term,
 *				an AND query with an absent term or an OR query whose terms
 *				are all absent returns 0 documents
 *	terms[nterms]	host array; a term is absent from the segment (nblocks =
 *				npostings = 0) or its list is blocks [first_block, first_block
 *				+ nblocks) of seg with nblocks = ceil(npostings / 128); idf
 *				finite
 *	kmax		1 .. GPUIR_CUDA_MAX_K: the output row length
 *	stream		cudaStream_t as void *, NULL = default stream
 * Outputs (host arrays): query q's results at out_docids[q * kmax + i] and
 * out_scores[q * kmax + i] for i < out_counts[q] (= min(k, documents that
 * qualify)), best first; slots past out_counts[q] are set to 0.
 *
 * The call is synchronous: it stages the query arrays in a pinned host
 * buffer, copies them into a device workspace with one asynchronous copy,
 * launches on stream (batches whose candidates would take more than 1
 * GiB run in several chunks; an OR query with k >= GPUIR_CUDA_HIST_MIN_K
 * reserves room for the k keys of some of its tiles, and one whose keys
 * spill is searched again before the call returns, see
 * gpuir_cuda_search_set_short_room; the lists of the batch's OR and BMW
 * queries are first decoded once into the job's decoded area, 8 bytes a
 * posting plus 8 a block, up to GPUIR_CUDA_DECODE_BUDGET blocks, about 2
 * GiB, where they stay for the job's later searches of the same segment,
 * which reuse them: the job's area grows to the reuse capacity, 2 GiB by
 * default, over its first searches, cuda/gpuir_decode_cache.cuh; the rest
 * is decoded by the tiles that read it), its last kernel writing the
 * results into the pinned buffer, which it reaches at the host's
 * addresses, when they take at most 32 KB (no copy back), else into the
 * workspace, copied back with one copy, and synchronizes.  The workspace and the
 * pinned buffer (and the decoded area) belong to the calling thread and
 * are kept between calls (grown when a call needs more, CUB's
 * temporary-storage pattern), so a call allocates no device or pinned
 * memory once they are large enough (host memory only for the decoded
 * area's map, a node for each list newly decoded, and when a query
 * spilled its short candidate room and is searched again: the workspace
 * is reserved for that search at the start);
 * gpuir_cuda_workspace_release frees them.  Every list a query uses is
 * checked like the CPU engine checks it: its block directory and block
 * headers on the host before the launch (the segment's prefix counts h_bad
 * and h_desc: last docIDs increasing and below ndocs, extents inside the
 * payload, 4-byte aligned, each header sound and giving its extent's
 * length), the rest of its blocks as they are decoded (exception
 * positions, docIDs and tfs in range, 128 postings except a list's last,
 * ending at its block_last).
 *
 * Returns GPUIR_CUDA_OK; GPUIR_CUDA_INVALID_ARGUMENT (NULL pointer with
 * nqueries > 0, kmax or a k out of range, a term or block range outside its
 * array, npostings not matching nblocks, a non-finite idf, bad constants or
 * mode, a bad prior_weight or prior_max on a segment with priors);
 * GPUIR_CUDA_CORRUPT when a list used by a query fails a check or a
 * posting block does not decode; GPUIR_CUDA_OOM, GPUIR_CUDA_NO_DEVICE,
 * GPUIR_CUDA_ERROR (a CUDA call, or a kernel's own consistency check, named
 * in gpuir_cuda_last_error_detail()).  On any failure the outputs are
 * undefined (a count may be past kmax).  nqueries = 0 returns
 * GPUIR_CUDA_OK at once.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_search_batch(const gpuir_cuda_segment *seg,
												 const gpuir_cuda_scoring *sc,
												 const gpuir_cuda_query *queries,
												 uint32_t nqueries,
												 const gpuir_cuda_term *terms,
												 uint32_t nterms,
												 uint32_t kmax,
												 uint32_t *out_docids,
												 float *out_scores,
												 uint32_t *out_counts,
												 void *stream);

/*
 * gpuir_cuda_workspace_release: free the calling thread's search workspace
 * (device arena and pinned host buffer, see gpuir_cuda_search_batch; also
 * the decoded lists kept between searches and the host arrays of its
 * plans); the next search allocates it again.  For a caller that needs the device
 * memory back (after GPUIR_CUDA_OOM) or is done searching.  Returns
 * GPUIR_CUDA_OK or the status of the first failing free.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_workspace_release(void);

/*
 * Searches in flight.  A search job owns a workspace (as the one of
 * gpuir_cuda_search_batch: a device arena and a pinned host buffer) and a
 * CUDA stream of its own (non-blocking), and holds at most one search
 * started and not finished; searches of different jobs run on the device
 * at the same time, so that a caller can start a batch while another one
 * computes (two jobs: double buffering).  The segment a pending search
 * reads must stay resident until it is finished.  Jobs belong to the
 * thread (and device) that made them.
 *
 * gpuir_cuda_search_job_create: a new job in *job (NULL on failure);
 * GPUIR_CUDA_OK, GPUIR_CUDA_OOM, GPUIR_CUDA_NO_DEVICE or GPUIR_CUDA_ERROR.
 * gpuir_cuda_search_job_free: waits for its pending search, if any, and
 * frees the job (NULL: nothing).
 * gpuir_cuda_search_job_release: frees the job's workspace (no search
 * pending, else GPUIR_CUDA_INVALID_ARGUMENT), as
 * gpuir_cuda_workspace_release does the default one's.
 * gpuir_cuda_search_start: gpuir_cuda_search_batch's search, with its
 * arguments and checks (but the outputs), enqueued on the job's stream;
 * returns once enqueued.  The query and term arrays are copied: the caller
 * may free them at once; the segment must stay resident (and *seg's host
 * arrays valid) until finish returns.  On GPUIR_CUDA_OK the search is
 * pending (unless nqueries = 0); on a failure nothing is.
 * GPUIR_CUDA_INVALID_ARGUMENT also when a search is pending already.
 * gpuir_cuda_search_done: true when the job has no pending search or its
 * pending search has finished on the device (or failed): finish will not
 * wait (unless a query spilled its candidate room and is searched again,
 * see gpuir_cuda_search_set_short_room).
 * gpuir_cuda_search_finish: waits for the pending search and writes its
 * outputs, with gpuir_cuda_search_batch's outputs and statuses; afterwards
 * nothing is pending.  GPUIR_CUDA_OK at once when nothing was pending.
 */
typedef struct gpuir_cuda_search_job gpuir_cuda_search_job;

extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_search_job_create(gpuir_cuda_search_job **job);
extern GPUIR_CUDA_API void gpuir_cuda_search_job_free(gpuir_cuda_search_job *job);
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_search_job_release(gpuir_cuda_search_job *job);
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_search_start(gpuir_cuda_search_job *job,
																const gpuir_cuda_segment *seg,
																const gpuir_cuda_scoring *sc,
																const gpuir_cuda_query *queries,
																uint32_t nqueries,
																const gpuir_cuda_term *terms,
																uint32_t nterms,
																uint32_t kmax);
extern GPUIR_CUDA_API bool gpuir_cuda_search_done(const gpuir_cuda_search_job *job);
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_search_finish(gpuir_cuda_search_job *job,
																 uint32_t *out_docids,
																 float *out_scores,
																 uint32_t *out_counts);

/* ---------- lists in transit: segments larger than the device budget ---------- */

/*
 * A segment whose posting data does not fit gpuir.device_memory is searched
 * from its lists (Wang et al., ICPADS 2017: the GPU holds part of the index;
 * Ding et al. 2009, section 5, ships queries to a resident index): its
 * per-document arrays (doclen, prior) stay resident as a segment uploaded
 * with no blocks (the skeleton), and a batch's lists come from the list
 * cache on the device or travel with the batch.  A list's arrays are one
 * "list image", 4-byte words, in this order:
 *
 *	block_last[n]			last docID of each block
 *	block_offset[n + 1]		payload offset of each block from the list's
 *							first, then payload_bytes (so 0 first)
 *	impact_tf[2n], impact_dl[2n]	the blocks' impacts (GPUIR_BLOCK_IMPACTS
 *							pairs a block, block-major)
 *	payload[payload_bytes]	the list's encoded blocks (a multiple of 4 bytes:
 *							blocks start 4-byte aligned, src/gpuirlist.h)
 *
 * gpuir_cuda_list_image_bytes gives its size (a multiple of 16, so that
 * images packed one after another stay aligned), gpuir_cuda_list_image_*
 * the word offsets of its parts.  The image's host writer must check the
 * blocks it copies from an index: their directory entries
 * (GpuirListCheckHeader with the previous block: last docIDs increasing and
 * below ndocs, offsets multiples of 4, extents 8 .. GPUIR_BLOCK_MAX_BYTES)
 * and headers (GpuirListCheckLengths: each sound, with its extent's
 * length), since the kernels read them unchecked (see h_bad above); blocks
 * it encodes itself (GpuirListEncodeBlock: a pruned list) meet those rules
 * as written.  The search's own directory check of a transit segment then
 * passes by construction.
 */
static inline uint64_t
gpuir_cuda_list_image_bytes(uint32_t nblocks, uint32_t payload_bytes)
{
	uint64_t	b = ((uint64_t) nblocks * (2 + 2 * GPUIR_CUDA_BLOCK_IMPACTS) + 1) * 4 +
		payload_bytes;

	return (b + 15) & ~(uint64_t) 15;
}
/* word offsets of block_offset, impact_tf, impact_dl and payload in an image */
#define gpuir_cuda_list_image_offsets(n)	((uint64_t) (n))
#define gpuir_cuda_list_image_tf(n)		((uint64_t) (n) * 2 + 1)
#define gpuir_cuda_list_image_dl(n)		((uint64_t) (n) * (2 + GPUIR_CUDA_BLOCK_IMPACTS) + 1)
#define gpuir_cuda_list_image_payload(n)	((uint64_t) (n) * (2 + 2 * GPUIR_CUDA_BLOCK_IMPACTS) + 1)

/* one list image on the device: at base, nblocks blocks, payload_bytes */
typedef struct gpuir_cuda_list
{
	const uint32_t *base;		/* device pointer, 16-byte aligned */
	uint32_t	nblocks;		/* >= 1 */
	uint32_t	payload_bytes;	/* multiple of 4 */
} gpuir_cuda_list;

/*
 * The transit: what a worker keeps to search segments from lists (a pinned
 * host staging buffer, its device copy, the arrays of the assembled
 * segment, a stream), grown when a call needs more and kept between calls
 * (CUB's temporary-storage pattern), so that a search allocates nothing
 * once they are large enough.  Belongs to the thread that made it.
 *
 * gpuir_cuda_transit_create: a new, empty transit in *tr; GPUIR_CUDA_OK,
 * GPUIR_CUDA_OOM, GPUIR_CUDA_NO_DEVICE or GPUIR_CUDA_ERROR.
 * gpuir_cuda_transit_free: waits for its stream and frees it (NULL: nothing);
 * the lists kept with it must have been freed first.
 * gpuir_cuda_transit_trim: waits for its stream and gives the device the
 * memory of freed kept lists that its pool keeps for later ones (after an
 * out-of-memory, so that other allocations can use it; NULL: nothing).
 *
 * gpuir_cuda_transit_staging: *host = a pinned host buffer of at least
 * bytes (its former contents are lost when it grows), where the caller
 * writes the list images of the lists that travel with the next search,
 * each at a multiple of 16 bytes.
 * gpuir_cuda_transit_upload: copies the first bytes of host (NULL: the
 * staging buffer; else host memory of the caller's, at best page-locked by
 * gpuir_cuda_host_register, 16-byte aligned) to the device
 * (asynchronously, on the transit's stream) and returns in *dev_base the
 * device address of its first byte: an image written at offset o is then
 * at dev_base + o / 4 (as gpuir_cuda_list.base).  That host memory must
 * not be written again before the next gpuir_cuda_transit_assemble,
 * gpuir_cuda_transit_staging or gpuir_cuda_transit_sync has returned.
 * gpuir_cuda_transit_sync: waits for the work queued on the transit's
 * stream (its uploads have then read their host memory).
 *
 * gpuir_cuda_list_keep: a copy of the image *src (on the device: in the
 * transit's device staging, or another kept list) in a device allocation of
 * its own (from the transit's memory pool, stream-ordered: no device-wide
 * synchronisation), in *out; GPUIR_CUDA_OK, GPUIR_CUDA_INVALID_ARGUMENT (a
 * NULL pointer, a list without blocks), GPUIR_CUDA_OOM when the device has
 * no room, GPUIR_CUDA_NO_DEVICE or GPUIR_CUDA_ERROR (then *out is zeroed).
 * Ordered after the transit's upload (same stream).  A kept list is read
 * only on the transit's stream (keep copies, assemblies).
 * gpuir_cuda_list_free: frees a kept list of transit tr once the work queued
 * on tr's stream is done (returns at once) and zeroes it; a zeroed list, or
 * tr NULL, is a no-op.
 *
 * gpuir_cuda_transit_assemble: the segment *out that a search reads, in
 * assembly slot slot (0 .. GPUIR_CUDA_TRANSIT_SLOTS - 1: a search of one
 * slot's segment may still run while the other's is assembled; the caller
 * makes sure that no search reads slot's former segment any more):
 * skeleton's per-document arrays (doclen, deleted, prior, prior_max, ndocs;
 * a segment uploaded with nblocks = 0) and the blocks of lists[0 ..
 * nlists), list i at blocks first_i = nblocks of the lists before it, in
 * that order: a query term whose list is lists[i] then names blocks
 * [first_i, first_i + lists[i].nblocks).  The lists are copied on the
 * device (one kernel; their block offsets rebased) into the slot's
 * arrays; the call returns when the copies are complete, so that a search
 * on any stream may read *out, which stays valid until the next assemble
 * in the same slot or the free of the transit.  *out's arrays belong to the transit (do
 * not pass it to gpuir_cuda_segment_free).  Returns GPUIR_CUDA_OK,
 * GPUIR_CUDA_INVALID_ARGUMENT (NULL pointers with nlists > 0, a list
 * without blocks, more than UINT32_MAX payload bytes or blocks in all),
 * GPUIR_CUDA_OOM, GPUIR_CUDA_NO_DEVICE or GPUIR_CUDA_ERROR.
 */
typedef struct gpuir_cuda_transit gpuir_cuda_transit;

#define GPUIR_CUDA_TRANSIT_SLOTS	2

extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_transit_create(gpuir_cuda_transit **tr);
extern GPUIR_CUDA_API void gpuir_cuda_transit_free(gpuir_cuda_transit *tr);
extern GPUIR_CUDA_API void gpuir_cuda_transit_trim(gpuir_cuda_transit *tr);
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_transit_staging(gpuir_cuda_transit *tr,
																   uint64_t bytes, void **host);
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_transit_upload(gpuir_cuda_transit *tr,
																  const void *host,
																  uint64_t bytes,
																  const uint32_t **dev_base);
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_transit_sync(gpuir_cuda_transit *tr);
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_list_keep(gpuir_cuda_transit *tr,
															 const gpuir_cuda_list *src,
															 gpuir_cuda_list *out);
extern GPUIR_CUDA_API void gpuir_cuda_list_free(gpuir_cuda_transit *tr, gpuir_cuda_list *l);
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_transit_assemble(gpuir_cuda_transit *tr,
																	uint32_t slot,
																	const gpuir_cuda_segment *skeleton,
																	const gpuir_cuda_list *lists,
																	uint32_t nlists,
																	gpuir_cuda_segment *out);

/*
 * gpuir_cuda_host_register: page-locks host memory [p, p + bytes) that the
 * caller allocated (a shared-memory segment that other processes write),
 * so that gpuir_cuda_transit_upload copies from it by DMA, asynchronously;
 * GPUIR_CUDA_OK, GPUIR_CUDA_INVALID_ARGUMENT (p NULL or bytes 0),
 * GPUIR_CUDA_NO_DEVICE or GPUIR_CUDA_ERROR (the memory stays usable,
 * unlocked).
 * gpuir_cuda_host_unregister: undoes it (before the memory is unmapped);
 * NULL is a no-op.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_host_register(void *p, uint64_t bytes);
extern GPUIR_CUDA_API void gpuir_cuda_host_unregister(void *p);

/*
 * Debugging and testing only (src/ does not call it): counters of one
 * gpuir_cuda_search_batch_debug call, to measure what BMW pruned.
 *	blocks_decoded		posting blocks decoded: those of the lists decoded
 *						once per batch (OR and BMW queries, within the
 *						decode budget) once each; those of lists past
 *						the budget once per tile that decodes them; AND's
 *						once per thread block that decodes them (its
 *						shortest list's block, the blocks probed, and
 *						those probed again for terms past the eighth)
 *	tiles_pruned		BMW (query, tile) pairs skipped whole by their bound
 *	bmw_queries			queries that ran as BMW (not fallen back to OR)
 *	maxscore_queries	BMW queries answered from their essential lists
 *						(gpuir_search_maxscore.cuh) instead of the tiles
 *	spilled_queries		queries whose short candidate region spilled and
 *						that were searched again with their full region
 *						(gpuir_cuda_search_set_short_room); blocks_decoded,
 *						tiles_pruned, partial_queries, tile_keys and
 *						fused_queries include that second search
 *	partial_queries		queries whose final top-k selection ran in two
 *						levels (32 partial selections of their candidates,
 *						then one over those results): those with more than
 *						64 x k and more than 16,384 candidates
 *	tile_keys			candidate keys the tiles wrote (each at most k a
 *						tile; fewer as the queries' thresholds rise)
 *	fused_queries		queries whose final top-k selection the tile
 *						kernel made (gpuir_cuda_search_set_fused_waves),
 *						the second search's included
 */
typedef struct gpuir_cuda_search_stats
{
	uint64_t	blocks_decoded;
	uint64_t	tiles_pruned;
	uint64_t	bmw_queries;
	uint64_t	maxscore_queries;
	uint64_t	spilled_queries;
	uint64_t	partial_queries;
	uint64_t	tile_keys;
	uint64_t	fused_queries;
} gpuir_cuda_search_stats;

/*
 * gpuir_cuda_search_batch_debug: gpuir_cuda_search_batch (same arguments,
 * results and statuses) that also fills *stats (when not NULL; zeroed
 * first, filled when the call returns GPUIR_CUDA_OK or GPUIR_CUDA_CORRUPT).
 * Counting costs global atomics: for tests and benchmarks, not for the GPU
 * service.  Not provided by the no-CUDA stub build.
 */
extern GPUIR_CUDA_API gpuir_cuda_status gpuir_cuda_search_batch_debug(const gpuir_cuda_segment *seg,
													   const gpuir_cuda_scoring *sc,
													   const gpuir_cuda_query *queries,
													   uint32_t nqueries,
													   const gpuir_cuda_term *terms,
													   uint32_t nterms,
													   uint32_t kmax,
													   uint32_t *out_docids,
													   float *out_scores,
													   uint32_t *out_counts,
													   void *stream,
													   gpuir_cuda_search_stats *stats);

/*
 * gpuir_cuda_search_set_decode_budget: testing and benchmarks only
 * (engine_bench --decode-budget): how many posting
 * blocks the calling thread's later searches decode once per batch for the
 * lists of their OR and BMW queries (GPUIR_CUDA_DECODE_BUDGET restores the
 * default; 0 decodes none that way); the lists past it are
 * decoded by every tile that reads them, the path the tests exercise with
 * a budget of 0 or a few blocks.  Not provided by the no-CUDA stub build.
 */
extern GPUIR_CUDA_API void gpuir_cuda_search_set_decode_budget(uint32_t blocks);

/* device bytes of a decoded block: 128 docIDs, 128 contributions, bound, seed */
#define GPUIR_CUDA_DECODED_BLOCK_BYTES	((size_t) GPUIR_CUDA_BLOCK_SIZE * 8 + 8)

/*
 * gpuir_cuda_search_set_decode_cache: the GPU service
 * (gpuir.decoded_lists_memory), engine_bench --decode-cache and the
 * tests: the posting blocks (GPUIR_CUDA_DECODED_BLOCK_BYTES, 1,032 device
 * bytes, each) in which the calling thread's later searches (its default job's,
 * and those of the jobs it starts) keep the lists they decode, each job
 * its own, for its later searches to reuse (same segment upload, window,
 * list, idf and constants: cuda/gpuir_decode_cache.cuh), a job's area
 * growing to hold up to blocks of them (a batch whose own lists need more,
 * up to the decode budget, gets an area that large and keeps none); 0:
 * none kept, each search decodes its lists again (as before 2026-11-30);
 * GPUIR_CUDA_DECODE_BUDGET (2 GiB) by default.  Same results either way.
 * A no-op in the no-CUDA stub build.
 */
extern GPUIR_CUDA_API void gpuir_cuda_search_set_decode_cache(uint32_t blocks);

/*
 * gpuir_cuda_search_set_maxscore: testing and benchmarks only: when the
 * calling thread's later searches answer a BMW query from its essential
 * lists (gpuir_search_maxscore.cuh) rather than with the tiles: when those
 * lists hold at most 1 / share of its postings (1: whenever its threshold
 * seed is above 0, or it has one term; 0: never); a BMW query of several
 * terms whose lists hold more than one posting for every dense docIDs of
 * the searched window's tiles runs as OR (0: no such limit).
 * GPUIR_CUDA_MAXSCORE_SHARE and GPUIR_CUDA_MAXSCORE_DENSE restore the
 * defaults.  Same results either way.  Not provided by the no-CUDA stub
 * build.
 */
#define GPUIR_CUDA_MAXSCORE_SHARE	1
#define GPUIR_CUDA_MAXSCORE_DENSE	16
extern GPUIR_CUDA_API void gpuir_cuda_search_set_maxscore(uint32_t share, uint32_t dense);

/*
 * gpuir_cuda_search_set_bmw_batch: testing and benchmarks only: a batch
 * whose BMW queries, given every tile of the window each as OR would, fill
 * fewer than waves waves of the tile kernel's resident thread blocks, and
 * whose lists hold fewer than batch_postings postings together, runs them
 * all as OR in the calling thread's later searches: BMW's seed and
 * MaxScore launches then cost the batch more than the tiles they spare,
 * and a batch mixing BMW and OR queries pays both paths' launches (a 0:
 * never).  GPUIR_CUDA_BMW_BATCH_WAVES and GPUIR_CUDA_BMW_BATCH_TOTAL
 * restore the defaults, 3 waves and 4 M postings.  On an H200 (3 tile
 * blocks on each of 132 SMs: 396 tiles a wave, 1,188 in 3) a batch of 16
 * over 1.2 M documents (1,184 tiles: just under) gained 22-26% at k = 10,
 * and one
 * query over 40 M (2,442 tiles) keeps BMW's 1.37x OR (2026-11-30;
 * bench/results/2026-11-30-h200-bmw-waves.md): the cut depends on the
 * window's tiles and the device's SMs.  Same results either way.
 * Not provided by the no-CUDA stub build.
 */
#define GPUIR_CUDA_BMW_BATCH_WAVES	3
#define GPUIR_CUDA_BMW_BATCH_TOTAL	4194304
extern GPUIR_CUDA_API void gpuir_cuda_search_set_bmw_batch(uint64_t waves,
														   uint64_t batch_postings);

/*
 * gpuir_cuda_search_set_fused_waves: testing only: the calling thread's
 * later searches make a chunk's final selections in the tile kernel (the
 * thread block that finished a query's last tile selects its k best, and
 * no final kernel runs) when its pairs (query, tile) fill fewer than waves
 * waves of the tile kernel's resident blocks
 * (gpuir_cuda_search_tile_blocks), every item of the chunk is a tile item
 * (OR or BMW, no AND), no query of the batch runs as BMW over lists decoded
 * once (the seed kernel's, which may hand queries to the MaxScore kernel:
 * then no chunk of the batch fuses), the batch's kmax is at most 256 and
 * no query of the chunk needs a partial selection; 0: never; UINT32_MAX:
 * whenever the rest holds.  GPUIR_CUDA_FUSED_WAVES restores the default: each pair then
 * costs a thread block a fence and an atomic, against one launch less
 * (H200, TREC 2005 over 1.2 M documents, OR at k = 10: batches of 16, 3
 * waves, +3%; of 64, 12 waves, -5%;
 * bench/results/2026-12-01-h200-direct-outputs.md).  Same results either
 * way.  Not provided by the no-CUDA stub build.
 */
#define GPUIR_CUDA_FUSED_WAVES	4
extern GPUIR_CUDA_API void gpuir_cuda_search_set_fused_waves(uint32_t waves);

/*
 * gpuir_cuda_search_tile_blocks: testing only: the tile kernel's thread
 * blocks resident at once on the calling thread's current device (a wave
 * of tiles, as gpuir_cuda_search_set_bmw_batch counts them); 1024 when the
 * device cannot say.  The first call on a device creates its CUDA context
 * (if none) and sets the tile kernel's shared-memory attribute, as a
 * search would; the answer is kept per thread and device.  Not provided
 * by the no-CUDA stub build.
 */
extern GPUIR_CUDA_API uint32_t gpuir_cuda_search_tile_blocks(void);

/*
 * gpuir_cuda_search_set_short_room: testing only: the candidate room, in
 * tiles of k keys, of the OR queries with k >= GPUIR_CUDA_HIST_MIN_K (and
 * the BMW queries that run as OR: several terms with dense lists, see
 * gpuir_cuda_search_set_maxscore) in the calling thread's searches started
 * later (0: each gets room for all its tiles' keys, no spill;
 * GPUIR_CUDA_SHORT_ROOM_AUTO restores the default: 64 tiles plus twice the
 * tiles each such query runs at once).  The tiles of such a query raise its
 * threshold from a histogram of all its candidates' scores, so they emit
 * few keys; a query whose keys do not fit spills and is searched again
 * with the room of all its tiles, before the call returns (a test sets 1
 * to make most spill).  Same results either way.  Not provided by the
 * no-CUDA stub build.
 */
#define GPUIR_CUDA_SHORT_ROOM_AUTO	UINT32_MAX
/*
 * the k from which the tiles raise a query's threshold from a histogram of
 * its candidates' scores (OR queries, and BMW queries the tiles answer),
 * and from which OR queries get short rooms
 */
#define GPUIR_CUDA_HIST_MIN_K		100
extern GPUIR_CUDA_API void gpuir_cuda_search_set_short_room(uint32_t tiles);

/*
 * gpuir_cuda_search_take_searched_again: the number of queries that the
 * calling thread's searches (gpuir_cuda_search_batch and _debug, and the
 * jobs' finishes) answered with a second search because their short
 * candidate room spilled (gpuir_cuda_search_set_short_room), since its
 * last call; it starts again from 0.  A window's search
 * (gpuir_cuda_segment_window) counts its own queries: a query split over
 * several windows counts once for each window whose search spilled.  The GPU service adds it to
 * gpuir_status()'s searched_again.  The no-CUDA stub build returns 0.
 */
extern GPUIR_CUDA_API uint64_t gpuir_cuda_search_take_searched_again(void);

/*
 * gpuir_cuda_search_take_decode_counts: the lists of OR and BMW queries
 * that the calling thread's searches (gpuir_cuda_search_batch and _debug,
 * and the jobs' starts, a search again included) found decoded by an
 * earlier search of their job (*found) and decoded (*decoded), since its
 * last call; both start again from 0 (cuda/gpuir_decode_cache.cuh).  The
 * GPU service adds them to gpuir_status()'s decoded_found and
 * decoded_lists.  The no-CUDA stub build gives 0 and 0.
 */
extern GPUIR_CUDA_API void gpuir_cuda_search_take_decode_counts(uint64_t *found, uint64_t *decoded);

#ifdef __cplusplus
}
#endif

#endif							/* GPUIR_CUDA_H */
