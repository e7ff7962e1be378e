/*
 * fuzz_pages.c: libFuzzer target for gpuir's page readers.
 *
 * Input: a packed index image, the relation's main fork (block 0 the
 * metapage), at most FUZZ_MAX_BLOCKS pages, each packed as
 *
 *	uint16 head (little-endian), then head bytes: the page's first bytes;
 *	uint16 tail, then tail bytes: the page's last bytes;
 *
 * with zeros in between (head + tail above BLCKSZ is clamped; a truncated
 * page ends the image).  gpuir pages hold their contents below pd_lower and
 * their special space at the end, and the hole between is zero (PageInit;
 * GenericXLogFinish zeroes it), so real images pack without loss and
 * mutations land on the bytes that matter rather than on the hole.  The
 * seeds are real indexes packed by test/fuzz/make_page_seeds; the heap has
 * FUZZ_HEAP_BLOCKS blocks.
 *
 * The real readers, compiled from src/ unchanged, run on it through
 * test/fuzz/pgshim.c (buffers, errors, memory, table AM):
 *
 *	1. GpuirVerify, the walk of gpuir_verify(): metapage, insert buffer
 *	   chains and records, every segment's streams, free space map;
 *	2. GpuirSearch for every query of queries[] in every mode (AND, OR,
 *	   WAND, BMW, AND-then-OR), k = 10: metapage, buffer snapshot and
 *	   records, dictionary lookups, block directories, payload decoding,
 *	   deleted bitmaps, TIDs, doc lengths;
 *	3. GpuirMergeSegment, a merge's reader, on every segment of the
 *	   metapage: every stream, every list decoded into a segment builder.
 *
 * Invariants (any violation aborts, and libFuzzer keeps the input):
 *	- no crash, no AddressSanitizer or UndefinedBehaviorSanitizer report,
 *	  no read of a block past the end of the index (pgshim.c);
 *	- every error is ERRCODE_INDEX_CORRUPTED, 55000 for a metapage of an
 *	  older on-disk version, or ERRCODE_DATA_CORRUPTED from
 *	  the buffer manager's own page header check;
 *	- when GpuirVerify accepts the image (no error, no accounting
 *	  mismatch), every query succeeds and OR, WAND and BMW return the same
 *	  rows with the same scores (block-max bounds that verify accepted
 *	  really bound, so pruning is exact), and every segment merges, with
 *	  its ndocs - ndeleted live documents.
 */
#include "postgres.h"

#include <setjmp.h>

#include "utils/rel.h"

#include "gpuir.h"
#include "pgshim.h"

#undef fprintf					/* port.h's pg_fprintf is backend code */

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_HEAP_BLOCKS 64
#define FUZZ_K 10
/* the largest image a run reads (libFuzzer's -max_len may allow more) */
#define FUZZ_MAX_BLOCKS 64

/* words of make_page_seeds' vocabulary (and one it never uses: "zebra") */
static const char *const queries[] = {
	"river",
	"river stone",
	"stone cloud apple",
	"lamp garden river cloud",
	"zebra",
	"zebra river",
	"moon moon window",
	"apple bread candle door eagle forest",
};

static const GpuirMode modes[] = {
	GPUIR_MODE_OR, GPUIR_MODE_WAND, GPUIR_MODE_BMW, GPUIR_MODE_AND, GPUIR_MODE_AND_OR
};

#define NMODES ((int) (sizeof(modes) / sizeof(modes[0])))

/* elog.c's unpack_sql_state, which is backend code */
static const char *
sqlstate(int code)
{
	static char buf[6];

	for (int i = 0; i < 5; i++)
	{
		buf[i] = PGUNSIXBIT(code);
		code >>= 6;
	}
	buf[5] = '\0';
	return buf;
}

/*
 * an error from a reader must say the index (or a page) is corrupt, or
 * (GpuirCheckMeta, 55000) that its metapage is of an older on-disk version
 */
static void
check_error(const char *what)
{
	if (shim_error_code != ERRCODE_INDEX_CORRUPTED &&
		shim_error_code != ERRCODE_DATA_CORRUPTED &&
		!(shim_error_code == ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE &&
		  strstr(shim_error_msg, "has on-disk format version") != NULL))
		shim_fail("%s raised SQLSTATE %s, not XX002 or XX001, at %s: %s",
				  what, sqlstate(shim_error_code), shim_error_where,
				  shim_error_msg);
}

/* GpuirVerify; true when it accepted the image, else *why says why not */
static bool
run_verify(const char **why)
{
	sigjmp_buf	jb;
	char	   *volatile acct = NULL;
	bool		pending;

	PG_exception_stack = &jb;
	if (sigsetjmp(jb, 0) == 0)
		acct = GpuirVerify(shim_index, shim_heap, &pending);
	else
	{
		PG_exception_stack = NULL;
		check_error("GpuirVerify");
		*why = shim_error_msg;
		return false;
	}
	PG_exception_stack = NULL;
	*why = acct;
	return acct == NULL;
}

/* GpuirSearch; -1 after an error (checked) */
static int
run_query(const char *query, GpuirMode mode, bool verified, GpuirResult **res)
{
	sigjmp_buf	jb;
	volatile int n = -1;
	GpuirQueryInput in;

	GpuirQueryInputText(&in, query, (int) strlen(query));
	PG_exception_stack = &jb;
	if (sigsetjmp(jb, 0) == 0)
		n = GpuirSearch(shim_index, shim_heap, NULL, &in, FUZZ_K, mode, res);
	else
	{
		check_error("GpuirSearch");
		if (verified)
			shim_fail("gpuir_verify accepted the index but query \"%s\" (mode %d) failed at %s: %s",
					  query, (int) mode, shim_error_where, shim_error_msg);
	}
	PG_exception_stack = NULL;
	return n;
}

/* GpuirMergeSegment on every segment (errors checked) */
static void
run_merge_reads(bool verified)
{
	sigjmp_buf	jb;
	GpuirMetaPageData meta;

	PG_exception_stack = &jb;
	if (sigsetjmp(jb, 0) != 0)
	{
		PG_exception_stack = NULL;
		check_error("GpuirReadMeta");
		if (verified)
			shim_fail("gpuir_verify accepted the index but GpuirReadMeta failed at %s: %s",
					  shim_error_where, shim_error_msg);
		return;
	}
	GpuirReadMeta(shim_index, &meta);
	/* volatile: read again after a longjmp out of the loop's body */
	for (volatile uint32 s = 0; s < meta.nsegments; s++)
	{
		const GpuirSegmentData *seg = &meta.segments[s];

		if (sigsetjmp(jb, 0) == 0)
		{
			GpuirBuilder *b = GpuirBuilderCreate();

			GpuirMergeSegment(b, shim_index, seg, s);
			if (verified && GpuirBuilderNumDocs(b) != seg->ndocs - seg->ndeleted)
				shim_fail("segment %u: merged %u live documents, its directory says %u - %u",
						  s, GpuirBuilderNumDocs(b), seg->ndocs, seg->ndeleted);
		}
		else
		{
			check_error("GpuirMergeSegment");
			if (verified)
				shim_fail("gpuir_verify accepted the index but merging segment %u failed at %s: %s",
						  s, shim_error_where, shim_error_msg);
		}
	}
	PG_exception_stack = NULL;
}

static void
compare_results(const char *query, int mode, int n0, GpuirResult *r0, int n, GpuirResult *r)
{
	if (n != n0)
		shim_fail("query \"%s\": mode %d returned %d rows, OR %d", query, mode, n, n0);
	for (int i = 0; i < n; i++)
		if (memcmp(&r[i].score, &r0[i].score, sizeof(float4)) != 0 ||
			!ItemPointerEquals(&r[i].tid, &r0[i].tid))
			shim_fail("query \"%s\": mode %d row %d is (%u,%u) %.9g, OR has (%u,%u) %.9g",
					  query, mode, i,
					  ItemPointerGetBlockNumberNoCheck(&r[i].tid),
					  ItemPointerGetOffsetNumberNoCheck(&r[i].tid), r[i].score,
					  ItemPointerGetBlockNumberNoCheck(&r0[i].tid),
					  ItemPointerGetOffsetNumberNoCheck(&r0[i].tid), r0[i].score);
}

/* the image packed in data[0..size), into image[]; returns its size */
static size_t
unpack_image(const uint8_t *data, size_t size, uint8_t *image)
{
	size_t		pos = 0;
	size_t		nblocks = 0;

	while (nblocks < FUZZ_MAX_BLOCKS && pos + 2 <= size)
	{
		uint8_t    *page = image + nblocks * BLCKSZ;
		size_t		head = data[pos] | (data[pos + 1] << 8);
		size_t		tail;

		pos += 2;
		head = Min(head, Min((size_t) BLCKSZ, size - pos));
		memset(page, 0, BLCKSZ);
		memcpy(page, data + pos, head);
		pos += head;
		nblocks++;
		if (pos + 2 > size)
			break;
		tail = data[pos] | (data[pos + 1] << 8);
		pos += 2;
		tail = Min(tail, Min((size_t) BLCKSZ - head, size - pos));
		memcpy(page + BLCKSZ - tail, data + pos, tail);
		pos += tail;
	}
	return nblocks * BLCKSZ;
}

/*
 * FUZZ_PAGES_VERBOSE=1 in the environment: print what each input did (to
 * see that the seeds pass gpuir_verify and that the queries find rows)
 */
static int	verbose = -1;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool		verified;
	const char *why;
	static uint8_t *image;
	size_t		imagesize;

	if (verbose < 0)
		verbose = getenv("FUZZ_PAGES_VERBOSE") != NULL;
	if (image == NULL)
		image = malloc((size_t) FUZZ_MAX_BLOCKS * BLCKSZ);
	imagesize = unpack_image(data, size, image);
	if (imagesize == 0)
		return 0;
	shim_begin(image, imagesize, FUZZ_HEAP_BLOCKS);
	verified = run_verify(&why);
	if (verbose)
		fprintf(stderr, "%zu pages: gpuir_verify %s%s\n", imagesize / BLCKSZ,
				verified ? "passed" : "failed: ", verified ? "" : why);
	for (int q = 0; q < (int) lengthof(queries); q++)
	{
		GpuirResult *res[NMODES];
		int			n[NMODES];

		for (int m = 0; m < NMODES; m++)
			n[m] = run_query(queries[q], modes[m], verified, &res[m]);
		if (verbose)
			fprintf(stderr, "  \"%s\": rows and %s, %d %d %d %d %d\n", queries[q],
					"OR WAND BMW AND AND-then-OR", n[0], n[1], n[2], n[3], n[4]);
		/* OR, WAND and BMW must agree on a verified index */
		if (verified)
			for (int m = 1; m <= 2; m++)
				compare_results(queries[q], (int) modes[m], n[0], res[0], n[m], res[m]);
	}
	run_merge_reads(verified);
	shim_end();
	return 0;
}
