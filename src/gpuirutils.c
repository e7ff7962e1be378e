/*-------------------------------------------------------------------------
 *
 * gpuirutils.c
 *	  Page helpers of gpuir: page initialisation and checks, metapage reads
 *	  and checks, relation extension, segment streams (write, update, read),
 *	  BM25's idf, and the growth of the builders' arrays.
 *
 * Every page write goes through generic WAL (GenericXLogStart /
 * GenericXLogRegisterBuffer / GenericXLogFinish).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>

#include <math.h>

#include "access/generic_xlog.h"
#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "gpuir.h"

/* GpuirInitPage: initialise an empty gpuir page of the given type */
void
GpuirInitPage(Page page, uint16 type)
{
	GpuirPageOpaque opaque;

	PageInit(page, BLCKSZ, sizeof(GpuirPageOpaqueData));
	opaque = GpuirPageGetOpaque(page);
	opaque->next = InvalidBlockNumber;
	opaque->flags = type;
	opaque->page_id = GPUIR_PAGE_ID;
}

/* GpuirCorrupt: raise ERRCODE_INDEX_CORRUPTED about index */
void
GpuirCorrupt(Relation index, const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gpuir index \"%s\" is corrupted: %s",
					RelationGetRelationName(index), what),
			 errhint("REINDEX the index.")));
	pg_unreachable();
}

/*
 * GpuirCheckPage: check the special space of a page read from blkno; raises
 * ERRCODE_INDEX_CORRUPTED when it is not a gpuir page of the expected type.
 */
void
GpuirCheckPage(Relation index, Page page, BlockNumber blkno, uint16 type)
{
	GpuirPageOpaque opaque;

	if (PageIsNew(page) ||
		PageGetSpecialSize(page) != MAXALIGN(sizeof(GpuirPageOpaqueData)))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuir index \"%s\" contains unexpected page at block %u",
						RelationGetRelationName(index), blkno),
				 errhint("REINDEX the index.")));
	opaque = GpuirPageGetOpaque(page);
	if (opaque->page_id != GPUIR_PAGE_ID || opaque->flags != type)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("gpuir index \"%s\" has page of type %u at block %u, expected type %u",
						RelationGetRelationName(index), opaque->flags, blkno, type),
				 errhint("REINDEX the index.")));
}

/*
 * GpuirSetMetaLower: make pd_lower of a metapage cover the whole
 * GpuirMetaPageData: generic WAL takes the bytes between pd_lower and
 * pd_upper for a hole (zeros at redo), so a metapage whose pd_lower ended
 * earlier would lose the fields past it.
 */
void
GpuirSetMetaLower(Page metapage)
{
	((PageHeader) metapage)->pd_lower =
		((char *) GpuirPageGetMeta(metapage) + sizeof(GpuirMetaPageData)) - (char *) metapage;
}

/*
 * GpuirFillMetaPage: page becomes an empty index's metapage (no segment,
 * document or buffered row) holding opts' options: cfg_id, k1, b, weights,
 * has_prior and prior_weight (its other fields are not read)
 */
void
GpuirFillMetaPage(Page page, const GpuirMetaPageData *opts)
{
	GpuirMetaPageData *meta;

	GpuirInitPage(page, GPUIR_PAGE_META);
	meta = GpuirPageGetMeta(page);
	memset(meta, 0, sizeof(GpuirMetaPageData));
	meta->magic = GPUIR_MAGIC;
	meta->version = GPUIR_VERSION;
	meta->cfg_id = opts->cfg_id;
	meta->k1 = opts->k1;
	meta->b = opts->b;
	meta->buf_head = InvalidBlockNumber;
	meta->buf_tail = InvalidBlockNumber;
	memcpy(meta->weights, opts->weights, sizeof(meta->weights));
	meta->has_prior = opts->has_prior;
	meta->prior_weight = opts->prior_weight;
	GpuirSetMetaLower(page);
}

/* GpuirFillFreeMapPage: page becomes an empty free space map page */
void
GpuirFillFreeMapPage(Page page)
{
	GpuirInitPage(page, GPUIR_PAGE_FREEMAP);
	memset(GpuirPageGetFreeMap(page), 0, sizeof(GpuirFreeMapData));
	GpuirSetFreeMapLower(page);
}

/*
 * GpuirWriteEmptyIndex: the first two pages of a new index (its main fork
 * must be empty), WAL-logged: the metapage (GpuirFillMetaPage with opts)
 * and an empty free space map.  CREATE INDEX's first step (gpuirbuild.c,
 * which takes opts from the catalogs); bench/engine/cpu_image.c's too.
 */
void
GpuirWriteEmptyIndex(Relation index, const GpuirMetaPageData *opts)
{
	Buffer		buf;
	Buffer		fmbuf;
	GenericXLogState *state;

	buf = ReadBufferExtended(index, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
	Assert(BufferGetBlockNumber(buf) == GPUIR_METAPAGE_BLKNO);
	fmbuf = ReadBufferExtended(index, MAIN_FORKNUM, P_NEW, RBM_NORMAL, NULL);
	Assert(BufferGetBlockNumber(fmbuf) == GPUIR_FREEMAP_BLKNO);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	LockBuffer(fmbuf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	GpuirFillMetaPage(GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE), opts);
	GpuirFillFreeMapPage(GenericXLogRegisterBuffer(state, fmbuf, GENERIC_XLOG_FULL_IMAGE));
	GenericXLogFinish(state);
	UnlockReleaseBuffer(fmbuf);
	UnlockReleaseBuffer(buf);
}

/*
 * GpuirStoreBuiltSegments: a build's segments segs[0..nsegs) (generations
 * 1 .. nsegs: GpuirBuilderWrite's or GpuirListsWrite's, nsegs >= 1), their
 * documents and total_dl (the sum of their documents' lengths) into the
 * metapage of index, WAL-logged: the last step of CREATE INDEX.  Returns the
 * number of documents (the metapage's ndocs).
 */
uint64
GpuirStoreBuiltSegments(Relation index, const GpuirSegmentData *segs, int nsegs,
						uint64 total_dl)
{
	Buffer		buf = ReadBuffer(index, GPUIR_METAPAGE_BLKNO);
	GenericXLogState *state;
	GpuirMetaPage m;
	uint64		ndocs = 0;

	Assert(nsegs >= 1 && nsegs <= GPUIR_MAX_SEGMENTS);
	for (int r = 0; r < nsegs; r++)
		ndocs += segs[r].ndocs;
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	state = GenericXLogStart(index);
	m = GpuirPageGetMeta(GenericXLogRegisterBuffer(state, buf, 0));
	memcpy(m->segments, segs, sizeof(GpuirSegmentData) * nsegs);
	m->nsegments = nsegs;
	m->ndocs = ndocs;
	m->total_dl = total_dl;
	m->generation = nsegs;		/* the segments' generations are 1 .. nsegs */
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	return ndocs;
}

/*
 * The session's hints of where a recently read page of a gpuir index sits
 * in shared buffers, direct-mapped by block number and relation file: a
 * query reads the same few pages again and again (the metapage, the first
 * payload pages of its lists, the TID and length pages of its results), and
 * ReadRecentBuffer pins a page whose buffer still holds it without the
 * buffer mapping table's hash lookup and partition lock that ReadBuffer
 * takes (about 570 of its 670 instructions, callgrind).  A stale hint (the
 * buffer since reused, the relation rewritten) costs one failed check, then
 * ReadBuffer.  Relations in local buffers (temporary) are not hinted.
 */
#define GPUIR_RECENT_BUFFERS	4096

typedef struct GpuirRecentBuffer
{
	GpuirRelFile file;
	BlockNumber blkno;
	Buffer		buf;			/* InvalidBuffer: an empty slot */
} GpuirRecentBuffer;

static GpuirRecentBuffer recent_buffers[GPUIR_RECENT_BUFFERS];

/*
 * GpuirReadBuffer: ReadBuffer(index, blkno) for a block that exists (not
 * P_NEW), through the session's hints first.  The pgstat counters of the
 * index count a hinted read as ReadBuffer counts a hit.
 */
Buffer
GpuirReadBuffer(Relation index, BlockNumber blkno)
{
	GpuirRelFile file;
	GpuirRecentBuffer *h;
	Buffer		buf;

	Assert(blkno != P_NEW);
	if (RelationUsesLocalBuffers(index))
		return ReadBuffer(index, blkno);
	file = GpuirRelationFile(index);
	h = &recent_buffers[(blkno ^ (GPUIR_RELFILE_REL(file) * 0x9E3779B1u)) % GPUIR_RECENT_BUFFERS];
	if (h->buf != InvalidBuffer && h->blkno == blkno &&
		memcmp(&h->file, &file, sizeof(GpuirRelFile)) == 0 &&
		ReadRecentBuffer(file, MAIN_FORKNUM, blkno, h->buf))
	{
		pgstat_count_buffer_read(index);
		pgstat_count_buffer_hit(index);
		return h->buf;
	}
	buf = ReadBuffer(index, blkno);
	h->file = file;
	h->blkno = blkno;
	h->buf = buf;
	return buf;
}

/*
 * GpuirCopyPageContents: copy the first size bytes of the contents of block
 * blkno of index, a gpuir page of the given type (GpuirCheckPage), into dst
 * under a share lock
 */
void
GpuirCopyPageContents(Relation index, BlockNumber blkno, uint16 type, void *dst, Size size)
{
	Buffer		buf = GpuirReadBuffer(index, blkno);
	Page		page;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	GpuirCheckPage(index, page, blkno, type);
	memcpy(dst, PageGetContents(page), size);
	UnlockReleaseBuffer(buf);
}

/*
 * GpuirReadMeta: copy the metapage into *meta under a share lock; raises
 * ERRCODE_INDEX_CORRUPTED when it is not a gpuir metapage of this version.
 */
void
GpuirReadMeta(Relation index, GpuirMetaPageData *meta)
{
	GpuirCopyPageContents(index, GPUIR_METAPAGE_BLKNO, GPUIR_PAGE_META, meta,
						  sizeof(GpuirMetaPageData));
	GpuirCheckMeta(index, meta);
}

/*
 * GpuirCheckMeta: raise 55000 (object_not_in_prerequisite_state: REINDEX)
 * for a metapage of an older on-disk version, ERRCODE_INDEX_CORRUPTED unless
 * *meta (a copy of the metapage) has this version's magic, at most
 * GPUIR_MAX_SEGMENTS segments, k1, b and prior_weight in the ranges of the
 * index options, each segment's prior_max finite and >= 0 (0 and no priors
 * in an index without a prior column), and names an existing text
 * search configuration (a lookup of a missing one would fail with an
 * internal error).  Call it without buffer locks: it reads the catalog.
 */
void
GpuirCheckMeta(Relation index, const GpuirMetaPageData *meta)
{
	if (meta->magic == GPUIR_MAGIC && meta->version >= 1 && meta->version < GPUIR_MIN_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("gpuir index \"%s\" has on-disk format version %u, this gpuir reads versions %u to %u",
						RelationGetRelationName(index), meta->version, GPUIR_MIN_VERSION, GPUIR_VERSION),
				 errdetail("Version 2 added document priors to the segment directory; version 3 moved the free space map to a page of its own and doubled the segment directory."),
				 errhint("REINDEX the index.")));
	if (meta->magic != GPUIR_MAGIC || !GpuirVersionReadable(meta->version) ||
		meta->nsegments > GPUIR_MAX_SEGMENTS)
		GpuirCorrupt(index, "bad metapage magic, version or segment count");
	if (meta->buf_head_off >= GPUIR_PAGE_DATA)
		GpuirCorrupt(index, "metapage insert buffer head out of range");
	if (!(meta->k1 >= GPUIR_MIN_K1 && meta->k1 <= GPUIR_MAX_K1) ||
		!(meta->b >= GPUIR_MIN_B && meta->b <= GPUIR_MAX_B))
		GpuirCorrupt(index, "metapage k1 or b out of range");
	for (int i = 0; i < INDEX_MAX_KEYS; i++)
		if (meta->weights[i] > GPUIR_MAX_WEIGHT)
			GpuirCorrupt(index, "metapage column weight out of range");
	if (meta->has_prior > 1 ||
		!GpuirPriorWeightValid(meta->prior_weight))
		GpuirCorrupt(index, "metapage prior flag or prior_weight out of range");
	/* a NaN or negative prior_max would prune every document of its segment */
	for (uint32 s = 0; s < meta->nsegments; s++)
	{
		const GpuirSegmentData *seg = &meta->segments[s];

		if (!GpuirPriorValid(seg->prior_max) ||
			((seg->prior_max != 0.0f || seg->streams[GPUIR_S_PRIORS].nbytes != 0) && !meta->has_prior))
			GpuirCorrupt(index, "segment's largest prior out of range, or priors in an index without a prior column");
		if (seg->map != 0 && (meta->version < 4 || seg->map < GPUIR_FIRST_DATA_BLKNO ||
							  !BlockNumberIsValid(seg->map)))
			GpuirCorrupt(index, "segment map page out of range");
	}
	if (!SearchSysCacheExists1(TSCONFIGOID, ObjectIdGetDatum(meta->cfg_id)))
		GpuirCorrupt(index, "the metapage's text search configuration does not exist");
}

/* trim_blanks: s without its leading and trailing spaces and tabs (cut in place) */
static char *
trim_blanks(char *s)
{
	char	   *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	*end = '\0';
	return s;
}

/*
 * parse_weights: the weights option's text, spec, as a list of column
 * weights.  Syntax: items separated by commas, optionally inside braces;
 * each either a weight, for the columns in order ('2, 1'), or
 * name:weight, for the index column of that name ('{title:2, body:1}';
 * names as the index's columns are named, as \d shows them: a table
 * column's name; an expression's column is named after its function, or
 * expr); not both kinds in one list.  A weight is a
 * whole number from 1 to GPUIR_MAX_WEIGHT; columns not named weigh 1.
 * With index NULL, only the syntax is checked.  Raises 22023.
 */
static void
parse_weights(const char *spec, Relation index, uint16 *weights)
{
	char	   *buf = pstrdup(spec);
	char	   *p = trim_blanks(buf);
	size_t		len = strlen(p);
	int			natts = index ? IndexRelationGetNumberOfKeyAttributes(index) : INDEX_MAX_KEYS;
	int			pos = 0;
	int			named = -1;		/* unknown yet; 0: positions; 1: names */
	bool		seen[INDEX_MAX_KEYS] = {0};

	for (int i = 0; i < INDEX_MAX_KEYS; i++)
		weights[i] = 1;
	if (*p == '{')
	{
		if (len < 2 || p[len - 1] != '}')
			goto bad;
		p[len - 1] = '\0';
		p++;
	}
	for (;;)
	{
		char	   *comma = strchr(p, ',');
		char	   *colon;
		char	   *num;
		char	   *numend;
		long		w;
		int			col;

		if (comma != NULL)
			*comma = '\0';
		colon = strchr(p, ':');
		if (colon != NULL)
			*colon = '\0';
		num = trim_blanks(colon ? colon + 1 : p);
		if (colon != NULL)
		{
			char	   *name = trim_blanks(p);

			if (*name == '\0' || named == 0)
				goto bad;
			named = 1;
			col = -1;
			if (index != NULL)
			{
				for (int i = 0; i < natts; i++)
					if (strcmp(NameStr(TupleDescAttr(RelationGetDescr(index), i)->attname), name) == 0)
						col = i;
				if (col < 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("gpuir index \"%s\" has no column \"%s\" to weight",
									RelationGetRelationName(index), name),
							 errhint("Name the index's columns as \\d shows them (a table column's name; an expression's column is named after its function, or expr), or give the weights in column order: weights = '2, 1'.")));
			}
		}
		else
		{
			if (named == 1)
				goto bad;
			named = 0;
			col = pos;
			if (col >= natts)
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("gpuir weights \"%s\" list more weights than the index's %d columns",
								spec, natts)));
		}
		pos++;
		errno = 0;
		w = strtol(num, &numend, 10);
		if (numend == num || *numend != '\0' || errno != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid gpuir weight \"%s\"", num),
					 errdetail("A weight is a whole number from 1 to %d: a column of weight w counts as if its text stood w times in the document (BM25F, Robertson et al. 2004).",
							   GPUIR_MAX_WEIGHT)));
		if (w < 1 || w > GPUIR_MAX_WEIGHT)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("gpuir weight %ld is out of range", w),
					 errdetail("A weight is a whole number from 1 to %d.", GPUIR_MAX_WEIGHT)));
		if (col >= 0)
		{
			if (seen[col])
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("gpuir weights \"%s\" weight column \"%s\" twice", spec,
								NameStr(TupleDescAttr(RelationGetDescr(index), col)->attname))));
			seen[col] = true;
			weights[col] = (uint16) w;
		}
		if (comma == NULL)
			break;
		p = comma + 1;
	}
	pfree(buf);
	return;

bad:
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid gpuir weights \"%s\"", spec),
			 errhint("Write the weights in column order, weights = '2, 1', or by column name, weights = '{title:2, body:1}'.")));
}

/* GpuirValidateWeights: the weights option's validator (syntax only), 22023 */
void
GpuirValidateWeights(const char *spec)
{
	uint16		weights[INDEX_MAX_KEYS];

	if (spec != NULL)
		parse_weights(spec, NULL, weights);
}

/*
 * GpuirIndexWeights: the BM25F weight of each of index's columns
 * (weights[0 .. INDEX_MAX_KEYS), 1 past its columns) as its weights option
 * says, 1 each without it.  Raises 22023 for an option that does not fit
 * the index (an unknown column name, more weights than columns).  The
 * option is parsed once per relcache entry (kept in rd_amcache, which
 * ALTER INDEX ... SET clears with the entry it rebuilds), not per query.
 */
void
GpuirIndexWeights(Relation index, uint16 *weights)
{
	GpuirOptions *opts = (GpuirOptions *) index->rd_options;

	if (opts && opts->weights_offset != 0)
	{
		if (index->rd_amcache == NULL)
		{
			uint16	   *parsed = MemoryContextAlloc(index->rd_indexcxt,
													sizeof(uint16) * INDEX_MAX_KEYS);

			parse_weights((char *) opts + opts->weights_offset, index, parsed);
			index->rd_amcache = parsed;
		}
		memcpy(weights, index->rd_amcache, sizeof(uint16) * INDEX_MAX_KEYS);
	}
	else
		for (int i = 0; i < INDEX_MAX_KEYS; i++)
			weights[i] = 1;
}

/*
 * GpuirCheckOptions: raise 55000 (object_not_in_prerequisite_state) when the
 * index's k1, b, weights or (with a prior) prior_weight reloptions differ from the values it was built with (the
 * metapage's): ALTER INDEX ... SET changed them, and they take effect only
 * when REINDEX rebuilds the lists' impacts and the metapage.  A query must
 * not silently use other constants than its options say.
 */
void
GpuirCheckOptions(Relation index, const GpuirMetaPageData *meta)
{
	GpuirOptions *opts = (GpuirOptions *) index->rd_options;
	float4		k1 = opts ? (float4) opts->k1 : (float4) GPUIR_DEFAULT_K1;
	float4		b = opts ? (float4) opts->b : (float4) GPUIR_DEFAULT_B;
	float4		prior_weight = opts ? (float4) opts->prior_weight : (float4) GPUIR_DEFAULT_PRIOR_WEIGHT;

	uint16		weights[INDEX_MAX_KEYS];
	char	   *changed = NULL;

	GpuirIndexWeights(index, weights);
	/* past the index's columns both read 1 */
	for (int i = 0; i < INDEX_MAX_KEYS && changed == NULL; i++)
		if (weights[i] != GpuirMetaWeight(meta, i))
			changed = "The index's column weights differ from those it was built with.";
	if (changed == NULL && (k1 != meta->k1 || b != meta->b))
		changed = psprintf("The index was built with k1 = %g, b = %g; its options now say k1 = %g, b = %g.",
						   meta->k1, meta->b, k1, b);
	if (changed == NULL && meta->has_prior && prior_weight != meta->prior_weight)
		changed = psprintf("The index was built with prior_weight = %g; its options now say %g.",
						   meta->prior_weight, prior_weight);
	if (changed != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("options of gpuir index \"%s\" were changed after it was built",
						RelationGetRelationName(index)),
				 errdetail("%s", changed),
				 errhint("Run REINDEX INDEX %s to use the new options, or ALTER INDEX to set them back.",
						 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(index)),
													RelationGetRelationName(index)))));
}

/*
 * GpuirNewBuffer: extend the index by one page; returns it pinned and
 * exclusively locked.  Takes the relation extension lock unless the caller
 * holds it (it is a heavyweight lock, so re-acquiring is cheap).
 */
Buffer
GpuirNewBuffer(Relation index)
{
	Buffer		buf;

	LockRelationForExtension(index, ExclusiveLock);
	buf = ReadBuffer(index, P_NEW);
	UnlockRelationForExtension(index, ExclusiveLock);
	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	return buf;
}

/*
 * GpuirWriteStream: write data[0..nbytes) to the consecutive pages that
 * start at block start, which exist and are free (the caller allocated them:
 * GpuirFreeListAllocate), and return the stream.  Their old contents are
 * not read.  Every page carries tag, its segment's GpuirSegmentTag, and is
 * logged as a full image, four per WAL record.
 */
GpuirStream
GpuirWriteStream(Relation index, const char *data, uint32 nbytes, uint32 tag,
				 BlockNumber start)
{
	GpuirStream s;
	uint32		npages = (uint32) GpuirPagesFor(nbytes);

	s.start = npages > 0 ? start : InvalidBlockNumber;
	s.nbytes = nbytes;
	for (uint32 p = 0; p < npages; p += MAX_GENERIC_XLOG_PAGES)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Buffer		bufs[MAX_GENERIC_XLOG_PAGES];
		int			nb = Min(MAX_GENERIC_XLOG_PAGES, npages - p);

		CHECK_FOR_INTERRUPTS();
		for (int i = 0; i < nb; i++)
		{
			uint32		off = (p + i) * GPUIR_PAGE_DATA;
			uint32		len = Min(GPUIR_PAGE_DATA, nbytes - off);
			Page		page;

			/* a free page: no reader is left, its old contents are not needed */
			bufs[i] = ReadBufferExtended(index, MAIN_FORKNUM, start + p + i,
										 RBM_ZERO_AND_LOCK, NULL);
			page = GenericXLogRegisterBuffer(state, bufs[i], GENERIC_XLOG_FULL_IMAGE);
			GpuirInitPage(page, GPUIR_PAGE_STREAM);
			GpuirPageGetOpaque(page)->next = tag;
			memcpy(PageGetContents(page), data + off, len);
			((PageHeader) page)->pd_lower = MAXALIGN(SizeOfPageHeaderData) + len;
		}
		GenericXLogFinish(state);
		for (int i = 0; i < nb; i++)
			UnlockReleaseBuffer(bufs[i]);
	}
	return s;
}

/*
 * GpuirWriteStreamPages: write data[0..len) to the pages of a stream on
 * extents e from its page number first_page on (a stream written in pieces:
 * len is whole pages but for its last piece), as GpuirWriteStream writes
 * one extent.
 */
void
GpuirWriteStreamPages(Relation index, const char *data, uint32 len, uint32 tag,
					  const GpuirStreamExtents *e, uint64 first_page)
{
	uint64		page = first_page;
	uint32		done = 0;

	for (int i = 0; i < e->n && done < len; i++)
	{
		uint64		n;

		if (page >= e->ext[i].npages)
		{
			page -= e->ext[i].npages;
			continue;
		}
		n = Min((uint64) (e->ext[i].npages - page) * GPUIR_PAGE_DATA, (uint64) (len - done));
		(void) GpuirWriteStream(index, data + done, (uint32) n, tag,
								e->ext[i].start + (BlockNumber) page);
		done += (uint32) n;
		page = 0;
	}
	if (done < len)
		elog(ERROR, "gpuir stream write past its extents");
}

/*
 * GpuirSegmentMapCheck: NULL when map (the contents of seg's map page) is
 * consistent with seg's directory entry: each stream on 1 to
 * GPUIR_STREAM_MAX_EXTENTS extents (none when empty) of pages past the
 * free space map, which together hold exactly its pages, the first at the
 * stream's start; else what is wrong.  Pure: the GPU worker checks the map
 * pages it reads with it too.
 */
const char *
GpuirSegmentMapCheck(const GpuirSegmentData *seg, const GpuirSegmentMapData *map)
{
	for (int k = 0; k < GPUIR_NSTREAMS; k++)
	{
		uint64		pages = 0;
		uint32		n = map->nextents[k];

		if (n > GPUIR_STREAM_MAX_EXTENTS || (n == 0) != (seg->streams[k].nbytes == 0))
			return "segment map with a bad number of extents for a stream";
		for (uint32 i = 0; i < n; i++)
		{
			const GpuirExtent *e = &map->ext[k][i];

			if (e->npages == 0 || e->start < GPUIR_FIRST_DATA_BLKNO ||
				(uint64) e->start + e->npages - 1 > MaxBlockNumber)
				return "segment map extent out of range";
			pages += e->npages;
		}
		if (pages != GpuirStreamPages(&seg->streams[k]) ||
			(n > 0 && map->ext[k][0].start != seg->streams[k].start))
			return "segment map extents do not match their stream";
	}
	return NULL;
}

/* GpuirSegmentLayoutFromMap: seg's layout from its checked map page contents */
void
GpuirSegmentLayoutFromMap(const GpuirSegmentData *seg, const GpuirSegmentMapData *map,
						  GpuirSegmentLayout *lay)
{
	lay->map = seg->map;
	for (int k = 0; k < GPUIR_NSTREAMS; k++)
	{
		lay->streams[k].n = (int) map->nextents[k];
		memcpy(lay->streams[k].ext, map->ext[k], sizeof(GpuirExtent) * map->nextents[k]);
	}
}

/*
 * read_map_page: the contents of seg's map page (its type and tag checked;
 * raises ERRCODE_INDEX_CORRUPTED when either check fails): its extents
 * (*map, checked: GpuirSegmentMapCheck) and, with retired non-NULL, its
 * retired extents
 */
static void
read_map_page(Relation index, const GpuirSegmentData *seg, GpuirSegmentMapData *map,
			  GpuirSegmentMapRetired *retired)
{
	Buffer		buf;
	Page		page;
	const char *why;
	uint32		len;

	if (!GpuirIndexDataBlock(index, seg->map))
		GpuirCorrupt(index, "segment map page outside the index");
	buf = GpuirReadBuffer(index, seg->map);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	GpuirCheckPage(index, page, seg->map, GPUIR_PAGE_STREAM);
	GpuirCheckStreamTag(index, page, seg->map, GpuirSegmentTag(seg->generation));
	len = ((PageHeader) page)->pd_lower > MAXALIGN(SizeOfPageHeaderData) ?
		((PageHeader) page)->pd_lower - MAXALIGN(SizeOfPageHeaderData) : 0;
	memcpy(map, PageGetContents(page), sizeof(*map));
	if (retired != NULL)
	{
		retired->n = 0;
		if (len > sizeof(*map))
			memcpy(retired, PageGetContents(page) + sizeof(*map),
				   Min(len - sizeof(*map), sizeof(*retired)));
	}
	UnlockReleaseBuffer(buf);
	why = GpuirSegmentMapCheck(seg, map);
	if (why == NULL && retired != NULL &&
		(retired->n > GPUIR_MAP_MAX_RETIRED || len != GpuirSegmentMapBytes(retired)))
		why = "segment map page with a bad number of retired extents";
	if (why != NULL)
		GpuirCorrupt(index, why);
}

/*
 * GpuirSegmentLayoutOf: where seg's pages are.  Without a map, each stream
 * on one extent from its start; with one, its map page is read (its type
 * and tag checked) and checked (GpuirSegmentMapCheck); raises
 * ERRCODE_INDEX_CORRUPTED when either check fails.
 */
void
GpuirSegmentLayoutOf(Relation index, const GpuirSegmentData *seg, GpuirSegmentLayout *lay)
{
	GpuirSegmentMapData map;

	if (seg->map == 0)
	{
		lay->map = 0;
		for (int k = 0; k < GPUIR_NSTREAMS; k++)
			GpuirStreamContiguous(&seg->streams[k], &lay->streams[k]);
		return;
	}
	read_map_page(index, seg, &map, NULL);
	GpuirSegmentLayoutFromMap(seg, &map, lay);
}

/* whether extents [a, a + an) and [b, b + bn) share a page */
static inline bool
extents_overlap(BlockNumber a, uint32 an, BlockNumber b, uint32 bn)
{
	return (uint64) a < (uint64) b + bn && (uint64) b < (uint64) a + an;
}

/*
 * retired_corrupt: raise ERRCODE_INDEX_CORRUPTED (GpuirCorrupt) for retired
 * extent i, x, of the segment whose map page is map_blkno: what is wrong with it
 */
static void
retired_corrupt(Relation index, BlockNumber map_blkno, uint32 i, const GpuirExtent *x,
				const char *what)
{
	GpuirCorrupt(index, psprintf("segment map page %u: retired extent %u (%u pages at block %u) %s",
								 map_blkno, i, x->npages, x->start, what));
}

/*
 * GpuirSegmentRetiredOf: the retired extents of seg (*r; none without a
 * map), whose layout is lay, from its map page: sorted by start, apart, and
 * none under a page of lay; raises ERRCODE_INDEX_CORRUPTED otherwise, naming
 * the map page and the extent (and for the map page's own checks, as
 * GpuirSegmentLayoutOf).
 */
void
GpuirSegmentRetiredOf(Relation index, const GpuirSegmentData *seg,
					  const GpuirSegmentLayout *lay, GpuirSegmentMapRetired *r)
{
	GpuirSegmentMapData map;

	r->n = 0;
	if (seg->map == 0)
		return;
	read_map_page(index, seg, &map, r);
	for (uint32 i = 0; i < r->n; i++)
	{
		const GpuirExtent *x = &r->ext[i];

		if (x->npages == 0 || x->start < GPUIR_FIRST_DATA_BLKNO ||
			(i > 0 && (uint64) r->ext[i - 1].start + r->ext[i - 1].npages >= x->start))
			retired_corrupt(index, seg->map, i, x, "is empty, before the data pages, or not after the one before it");
		if (extents_overlap(x->start, x->npages, lay->map, 1))
			retired_corrupt(index, seg->map, i, x, "holds the map page itself");
		for (int k = 0; k < GPUIR_NSTREAMS; k++)
			for (int j = 0; j < lay->streams[k].n; j++)
				if (extents_overlap(x->start, x->npages, lay->streams[k].ext[j].start,
									lay->streams[k].ext[j].npages))
					retired_corrupt(index, seg->map, i, x, "holds a page of one of the segment's streams");
	}
}

/*
 * GpuirWriteSegmentMap: write the map page of seg, whose streams are on
 * lay's extents, at blkno (a free page the caller allocated), with the
 * retired extents *retired (NULL: none), and name it in seg.
 */
void
GpuirWriteSegmentMap(Relation index, GpuirSegmentData *seg, const GpuirSegmentLayout *lay,
					 BlockNumber blkno, const GpuirSegmentMapRetired *retired)
{
	/* the page's bytes: the map, then the retired extents */
	typedef struct MapPage
	{
		GpuirSegmentMapData map;
		GpuirSegmentMapRetired retired;
	} MapPage;
	MapPage    *page = palloc0(sizeof(MapPage));

	StaticAssertStmt(offsetof(MapPage, retired) == sizeof(GpuirSegmentMapData),
					 "the retired extents follow the map without padding");
	for (int k = 0; k < GPUIR_NSTREAMS; k++)
	{
		page->map.nextents[k] = (uint32) lay->streams[k].n;
		memcpy(page->map.ext[k], lay->streams[k].ext, sizeof(GpuirExtent) * lay->streams[k].n);
	}
	if (retired != NULL && retired->n > 0)
	{
		Assert(retired->n <= GPUIR_MAP_MAX_RETIRED);
		memcpy(&page->retired, retired,
			   GpuirSegmentMapBytes(retired) - sizeof(GpuirSegmentMapData));
	}
	(void) GpuirWriteStream(index, (const char *) page, GpuirSegmentMapBytes(retired),
							GpuirSegmentTag(seg->generation), blkno);
	pfree(page);
	seg->map = blkno;
}

/*
 * stream_extents: where stream kind of seg is (*e); a segment map is read
 * through the session's cache (GpuirSegmentLayoutCached), so a segment's
 * readers and in-place updates read its map page once
 */
static void
stream_extents(Relation index, const GpuirSegmentData *seg, GpuirStreamKind kind,
			   GpuirStreamExtents *e)
{
	if (seg->map != 0)
		*e = GpuirSegmentLayoutCached(index, seg)->streams[kind];
	else
		GpuirStreamContiguous(&seg->streams[kind], e);
}

/*
 * GpuirCheckStreamTag: raise an error unless the stream page at blkno (its
 * type already checked) belongs to the segment with tag.  Pages written
 * before the free space map existed are untagged and never reused, so they
 * pass.  On a hot standby a foreign page means that the primary reused the
 * pages of a segment this query's snapshot still lists: the query is
 * cancelled as in a recovery conflict.  On a primary it is corruption.
 */
void
GpuirCheckStreamTag(Relation index, Page page, BlockNumber blkno, uint32 tag)
{
	uint32		found = GpuirPageGetOpaque(page)->next;

	if (found == tag || found == GPUIR_UNTAGGED)
		return;
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("canceling statement due to conflict with recovery"),
				 errdetail("Block %u of gpuir index \"%s\" was reused by a merge on the primary after this query's snapshot.",
						   blkno, RelationGetRelationName(index)),
				 errhint("Run the query again, or turn on hot_standby_feedback.")));
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("gpuir index \"%s\" is corrupted: block %u belongs to segment tag %u, expected %u",
					RelationGetRelationName(index), blkno, found, tag),
			 errhint("REINDEX the index.")));
}

/*
 * GpuirUpdateStream: overwrite bytes [offset, offset + nbytes) of stream
 * kind of seg in place (deleted bitmaps, dictionary df), WAL-logged as
 * deltas.
 */
void
GpuirUpdateStream(Relation index, const GpuirSegmentData *seg, GpuirStreamKind kind,
				  uint32 offset, const char *data, uint32 nbytes)
{
	GpuirStream stream = seg->streams[kind];
	uint32		tag = GpuirSegmentTag(seg->generation);
	uint32		done = 0;
	GpuirStreamExtents ext;

	if ((uint64) offset + nbytes > stream.nbytes)
		elog(ERROR, "gpuir stream update out of range");
	stream_extents(index, seg, kind, &ext);
	while (done < nbytes)
	{
		GenericXLogState *state = GenericXLogStart(index);
		Buffer		bufs[MAX_GENERIC_XLOG_PAGES];
		int			nb = 0;

		while (nb < MAX_GENERIC_XLOG_PAGES && done < nbytes)
		{
			uint32		off = offset + done;
			BlockNumber blk = GpuirExtentsBlock(&ext, off / GPUIR_PAGE_DATA);
			uint32		pageoff = off % GPUIR_PAGE_DATA;
			uint32		len = Min(GPUIR_PAGE_DATA - pageoff, nbytes - done);
			Page		page;

			bufs[nb] = ReadBuffer(index, blk);
			LockBuffer(bufs[nb], BUFFER_LOCK_EXCLUSIVE);
			GpuirCheckPage(index, BufferGetPage(bufs[nb]), blk, GPUIR_PAGE_STREAM);
			GpuirCheckStreamTag(index, BufferGetPage(bufs[nb]), blk, tag);
			page = GenericXLogRegisterBuffer(state, bufs[nb], 0);
			memcpy(PageGetContents(page) + pageoff, data + done, len);
			done += len;
			nb++;
		}
		GenericXLogFinish(state);
		for (int i = 0; i < nb; i++)
			UnlockReleaseBuffer(bufs[i]);
	}
}

/*
 * GpuirRelationHolds: has rel (an index or its table, locked by the
 * caller) at least nblocks blocks of its main fork?  The size smgr last saw
 * (every smgrnblocks call keeps it) answers without a system call when it
 * is large enough: a relation shrinks only under an AccessExclusiveLock,
 * whose smgr invalidation reaches this backend when it locks the relation,
 * so under the caller's lock that size is never above the true one; when
 * it is too small (the relation grew since), the file is asked (an lseek).
 * The checks that a block number read from a page lies inside the relation
 * use it, so that a query pays no system call for them.
 */
bool
GpuirRelationHolds(Relation rel, uint64 nblocks)
{
	BlockNumber seen = RelationGetSmgr(rel)->smgr_cached_nblocks[MAIN_FORKNUM];

	if (seen != InvalidBlockNumber && nblocks <= seen)
		return true;
	return nblocks <= RelationGetNumberOfBlocks(rel);
}

/*
 * GpuirIndexDataBlock: GpuirDataBlock for block blk of index (locked by
 * the caller), its size from GpuirRelationHolds: no system call when the
 * size smgr last saw holds blk (InvalidBlockNumber never passes)
 */
bool
GpuirIndexDataBlock(Relation index, BlockNumber blk)
{
	return blk >= GPUIR_FIRST_DATA_BLKNO && GpuirRelationHolds(index, (uint64) blk + 1);
}

/*
 * GpuirStreamReaderInit: a reader of stream.  Raises ERRCODE_INDEX_CORRUPTED
 * when the stream's pages are not inside the index: a block number from a
 * corrupt segment directory must not reach ReadBuffer (past the end of the
 * relation, md.c fails with an unrelated SQLSTATE; InvalidBlockNumber is
 * P_NEW and would extend it).  The relation shrinks only by the reusable
 * free pages that end it (gpuircompact.c), which no segment a reader's
 * directory lists holds, so the check stays true while the reader is used.
 */
void
GpuirStreamReaderInit(GpuirStreamReader *r, Relation index,
					  const GpuirSegmentData *seg, GpuirStreamKind kind)
{
	GpuirStream stream = seg->streams[kind];

	stream_extents(index, seg, kind, &r->ext);
	for (int i = 0; i < r->ext.n; i++)
		if (!BlockNumberIsValid(r->ext.ext[i].start) ||
			r->ext.ext[i].start < GPUIR_FIRST_DATA_BLKNO ||
			!GpuirRelationHolds(index, (uint64) r->ext.ext[i].start + r->ext.ext[i].npages))
			GpuirCorrupt(index, "segment stream pages are outside the index");
	r->index = index;
	r->stream = stream;
	r->tag = GpuirSegmentTag(seg->generation);
	r->buf = InvalidBuffer;
	r->blkno = InvalidBlockNumber;
	r->page_reads = 0;
	r->copy_blkno = InvalidBlockNumber;
	r->copy = NULL;
	r->cxt = CurrentMemoryContext;
}

/*
 * GpuirStreamRead: copy bytes [offset, offset + len) of the stream to dst;
 * raises ERRCODE_INDEX_CORRUPTED for a read past the end.  A page's tag is
 * checked under a share lock whenever bytes are taken from the buffer: a
 * pin does not stop a merge from reusing the page once this backend's
 * snapshot is gone (the GPU worker) or on a standby.  The reader keeps the
 * last page pinned; when a read comes back to it a second time, the whole
 * page is copied (under the lock, after the checks) and later reads of
 * that page take their bytes from the copy, without a lock: the copy holds
 * the segment's bytes whatever happens to the page afterwards.  So
 * scattered reads (a binary search, the two neighbours a dictionary lookup
 * checks) cost one lock each, and dense ones (the doc lengths of the
 * documents a query scores) a memcpy.  (Copying on the first return cost
 * the dictionary lookups of a 16-segment index an 8 KB copy per pair of
 * neighbouring entries.)
 */
void
GpuirStreamRead(GpuirStreamReader *r, uint32 offset, void *dst, uint32 len)
{
	char	   *out = dst;

	if ((uint64) offset + len > r->stream.nbytes)
		GpuirCorrupt(r->index, "read past the end of a segment stream");
	while (len > 0)
	{
		BlockNumber blk = GpuirExtentsBlock(&r->ext, offset / GPUIR_PAGE_DATA);
		uint32		pageoff = offset % GPUIR_PAGE_DATA;
		uint32		n = Min(GPUIR_PAGE_DATA - pageoff, len);
		Page		page;
		bool		again = (r->blkno == blk);

		if (r->copy_blkno == blk)
		{
			memcpy(out, r->copy + pageoff, n);
			out += n;
			offset += n;
			len -= n;
			continue;
		}
		if (!again)
		{
			if (BufferIsValid(r->buf))
				ReleaseBuffer(r->buf);
			r->buf = GpuirReadBuffer(r->index, blk);
			r->blkno = blk;
			r->page_reads = 0;
		}
		LockBuffer(r->buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(r->buf);
		GpuirCheckPage(r->index, page, blk, GPUIR_PAGE_STREAM);
		GpuirCheckStreamTag(r->index, page, blk, r->tag);
		if (again && ++r->page_reads >= 2)
		{
			if (r->copy == NULL)
				r->copy = MemoryContextAlloc(r->cxt, GPUIR_PAGE_DATA);
			memcpy(r->copy, PageGetContents(page), GPUIR_PAGE_DATA);
			r->copy_blkno = blk;
		}
		memcpy(out, PageGetContents(page) + pageoff, n);
		LockBuffer(r->buf, BUFFER_LOCK_UNLOCK);
		out += n;
		offset += n;
		len -= n;
	}
}

void
GpuirStreamReaderEnd(GpuirStreamReader *r)
{
	if (BufferIsValid(r->buf))
		ReleaseBuffer(r->buf);
	r->buf = InvalidBuffer;
	r->blkno = InvalidBlockNumber;
	r->copy_blkno = InvalidBlockNumber;
	if (r->copy != NULL)
		pfree(r->copy);
	r->copy = NULL;
}

/* GpuirStreamReadAll: stream kind of seg, palloc'd in the current context */
char *
GpuirStreamReadAll(Relation index, const GpuirSegmentData *seg, GpuirStreamKind kind)
{
	GpuirStreamReader r;
	GpuirStream stream = seg->streams[kind];
	char	   *data;

	/* checks the stream's pages first: no allocation for a corrupt size */
	GpuirStreamReaderInit(&r, index, seg, kind);
	data = palloc_extended(Max(stream.nbytes, 1), MCXT_ALLOC_HUGE);
	for (uint32 off = 0; off < stream.nbytes; off += GPUIR_PAGE_DATA)
	{
		CHECK_FOR_INTERRUPTS();
		GpuirStreamRead(&r, off, data + off, Min(GPUIR_PAGE_DATA, stream.nbytes - off));
	}
	GpuirStreamReaderEnd(&r);
	return data;
}

/*
 * GpuirPriorsSizeCheck: NULL when seg's PRIORS stream has a valid size
 * (ndocs priors, or empty with prior_max 0), else what is wrong; the
 * stream's readers (GpuirSegmentPriors, the GPU service's segment load)
 * check it before they size a copy by it
 */
const char *
GpuirPriorsSizeCheck(const GpuirSegmentData *seg)
{
	if (seg->streams[GPUIR_S_PRIORS].nbytes == 0)
		return seg->prior_max != 0.0f ? "segment with a largest prior but no priors" : NULL;
	if (seg->streams[GPUIR_S_PRIORS].nbytes != (uint64) seg->ndocs * sizeof(float4))
		return "segment priors of the wrong size for its documents";
	return NULL;
}

/*
 * GpuirSegmentPriors: seg's PRIORS stream (docID -> prior), palloc'd in the
 * current context; NULL when it is empty (every prior 0).  Raises
 * ERRCODE_INDEX_CORRUPTED when its size is not ndocs priors or a prior is
 * negative, not finite or above the segment's prior_max (which bounds every
 * score in the WAND and Block-Max WAND loops).
 */
float4 *
GpuirSegmentPriors(Relation index, const GpuirSegmentData *seg)
{
	const char *why = GpuirPriorsSizeCheck(seg);
	float4	   *p;

	if (why != NULL)
		GpuirCorrupt(index, why);
	if (seg->streams[GPUIR_S_PRIORS].nbytes == 0)
		return NULL;
	p = (float4 *) GpuirStreamReadAll(index, seg, GPUIR_S_PRIORS);
	if (!GpuirPriorsInRange(seg, p))
		GpuirCorrupt(index, GPUIR_PRIOR_CORRUPT);
	return p;
}

/*
 * GpuirPriorsInRange: does every prior p[0 .. ndocs) of seg (its PRIORS
 * stream, read whole) lie in 0 .. prior_max, so that prior_max bounds what
 * any of them adds to a score?
 */
bool
GpuirPriorsInRange(const GpuirSegmentData *seg, const float4 *p)
{
	for (uint32 d = 0; d < seg->ndocs; d++)
		if (!GpuirPriorInSegment(seg, p[d]))
			return false;
	return true;
}

/*
 * GpuirGrow: array ptr (elements of elemsize bytes, *cap of them, NULL when
 * none yet) with room for need elements: as it is when it has, else
 * reallocated (in the current memory context when ptr is NULL, huge
 * allocations allowed) to twice its capacity, at least need and 1024
 * elements, but not past max when max > 0 (unless need is); *cap is set to
 * the new capacity.  Raises 54000 when the array would pass
 * MaxAllocHugeSize.
 */
void *
GpuirGrow(void *ptr, Size elemsize, uint64 *cap, uint64 need, uint64 max)
{
	uint64		ncap;

	if (need <= *cap)
		return ptr;
	ncap = Max(*cap * 2, Max(need, 1024));
	if (max > 0 && ncap > max)
		ncap = Max(max, need);
	if (ncap > MaxAllocHugeSize / elemsize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("gpuir ran out of addressable memory for an array of %llu elements of %zu bytes",
						(unsigned long long) ncap, (size_t) elemsize)));
	*cap = ncap;
	return ptr ? repalloc_huge(ptr, ncap * elemsize)
		: palloc_extended(ncap * elemsize, MCXT_ALLOC_HUGE);
}

/* GpuirIdf: ln(1 + (N - df + 0.5) / (df + 0.5)), computed in double, float32 result */
float4
GpuirIdf(uint64 N, uint64 df)
{
	return (float4) log(1.0 + ((double) N - (double) df + 0.5) / ((double) df + 0.5));
}

/*
 * GpuirUpdateStreamChanged: given the stream's whole old and new contents,
 * rewrite (WAL-logged) only the pages whose bytes differ.
 */
void
GpuirUpdateStreamChanged(Relation index, const GpuirSegmentData *seg, GpuirStreamKind kind,
						 const char *olddata, const char *newdata)
{
	GpuirStream stream = seg->streams[kind];

	for (uint32 off = 0; off < stream.nbytes; off += GPUIR_PAGE_DATA)
	{
		uint32		len = Min(GPUIR_PAGE_DATA, stream.nbytes - off);

		if (memcmp(olddata + off, newdata + off, len) != 0)
			GpuirUpdateStream(index, seg, kind, off, newdata + off, len);
	}
}

/* term_cmp: GpuirTerms in lexeme order */
static int
term_cmp(const void *a, const void *b)
{
	const GpuirTerm *ta = a;
	const GpuirTerm *tb = b;

	return GpuirLexemeCmp(ta->lexeme, ta->len, tb->lexeme, tb->len);
}

/*
 * GpuirTermsSortMerge: sort terms[0..n) in lexeme order (GpuirLexemeCmp)
 * and merge equal lexemes into the first of them, in place: with sum_tf
 * its tf becomes the sum of theirs (the caller keeps the sum in range),
 * else the repeats are dropped.  Returns the number of distinct lexemes,
 * now terms[0..return).
 */
int
GpuirTermsSortMerge(GpuirTerm *terms, int n, bool sum_tf)
{
	int			out = 0;

	if (n > 1)
		qsort(terms, n, sizeof(GpuirTerm), term_cmp);
	for (int i = 0; i < n; i++)
	{
		if (out > 0 && term_cmp(&terms[out - 1], &terms[i]) == 0)
		{
			if (sum_tf)
				terms[out - 1].tf += terms[i].tf;
		}
		else
			terms[out++] = terms[i];
	}
	return out;
}

/*
 * GpuirUint32Cmp: qsort's comparator of two uint32 (docIDs, block numbers),
 * ascending
 */
int
GpuirUint32Cmp(const void *a, const void *b)
{
	uint32		x = *(const uint32 *) a;
	uint32		y = *(const uint32 *) b;

	return (x > y) - (x < y);
}
