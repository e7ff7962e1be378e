/*-------------------------------------------------------------------------
 *
 * gpuir.h
 *	  Shared declarations of the gpuir index access method: BM25-ranked
 *	  full-text search over block-compressed posting lists.
 *
 * Ordered as: constants, on-disk structs, in-memory structs, helpers, AM
 * callbacks.  The on-disk format is documented in src/README.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_H
#define GPUIR_H

#include "postgres.h"

#include <float.h>

#include "access/amapi.h"
#include "access/genam.h"
#include "access/generic_xlog.h"
#include "access/itup.h"
#include "access/transam.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "port/atomics.h"
#include "storage/buffile.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "tsearch/ts_type.h"
#include "utils/relcache.h"
#include "utils/snapshot.h"

#include "gpuircompat.h"
#include "gpuircodec.h"
#include "gpuirlist.h"
#include "gpuirmergepolicy.h"

/* ---------- constants ---------- */

#define GPUIR_MAGIC				0x47505552	/* "GPUR" */
#define GPUIR_VERSION			4	/* 2: document priors (GPUIR_S_PRIORS); 3: the
									 * free space map on its own page, 64
									 * segments; 4: segment maps (streams in
									 * pieces) */
#define GPUIR_MIN_VERSION		3	/* read as well: a version 3 index has no
									 * segment map (every map 0); its first
									 * merge that writes one makes it 4 */
#define GpuirVersionReadable(v)	((v) >= GPUIR_MIN_VERSION && (v) <= GPUIR_VERSION)
#define GPUIR_PAGE_ID			0xFF86		/* in every page's special space */
#define GPUIR_METAPAGE_BLKNO	0
#define GPUIR_FREEMAP_BLKNO		1	/* the free space map (GpuirFreeMapData) */
#define GPUIR_FIRST_DATA_BLKNO	2	/* segments and insert buffer pages from here */

/* page types (GpuirPageOpaqueData.flags) */
#define GPUIR_PAGE_META			1
#define GPUIR_PAGE_STREAM		2	/* one page of a segment stream */
#define GPUIR_PAGE_BUFFER		3	/* one page of the insert buffer chain */
#define GPUIR_PAGE_LANE			4	/* header of an insert lane (GpuirLaneData) */
#define GPUIR_PAGE_FREEMAP		5	/* the free space map, block 1 */

#define GPUIR_MAX_SEGMENTS		64
#define GPUIR_MAX_BUILD_PIECES	16	/* segments CREATE INDEX writes at most (max_segment_docs) */
#define GPUIR_MAX_FREE_EXTENTS	480		/* free space map entries (GpuirFreeMapData) */
#define GPUIR_INSERT_LANES		8		/* insert buffer lanes (src/README) */
#define GPUIR_MAX_K				100000
#define GPUIR_MAX_QUERY_TERMS	1024
#define GPUIR_DOC_END			UINT32_MAX	/* cursor past its last docID */

/* index options: DEFAULT/MIN/MAX triples */
#define GPUIR_DEFAULT_K1		1.2
#define GPUIR_MIN_K1			0.0
#define GPUIR_MAX_K1			100.0
#define GPUIR_DEFAULT_B			0.75
#define GPUIR_MIN_B				0.0
#define GPUIR_MAX_B				1.0
#define GPUIR_MAX_WEIGHT		100		/* a column's BM25F weight: 1 .. this */
#define GPUIR_DEFAULT_PRIOR_WEIGHT	1.0	/* prior_weight: w of BM25 + w * prior */
#define GPUIR_MAX_PRIOR_WEIGHT		1000000.0

/* GUC gpuir.insert_buffer_limit, in kB */
#define GPUIR_DEFAULT_BUFFER_LIMIT	256
/* gpuir.doclength_cache: kB of document lengths a session keeps (1M documents = 4 MB) */
#define GPUIR_DEFAULT_DOCLENGTH_CACHE	(64 * 1024)
/* gpuir.taat_max_postings (bench/README.md, "Term at a time"): where exhaustive scoring costs less */
#define GPUIR_DEFAULT_TAAT_MAX_POSTINGS	100000
#define GPUIR_MIN_BUFFER_LIMIT		64
#define GPUIR_MAX_BUFFER_LIMIT		(1024 * 1024)

/*
 * GUC gpuir.device_memory, the GPU list cache's budget: a share of the
 * card's memory, above 0% and at most GPUIR_MAX_DEVICE_MEMORY_SHARE percent,
 * or an amount with a unit (B, kB, MB, GB, TB) of at least
 * GPUIR_MIN_DEVICE_MEMORY bytes, clamped to the card's memory
 * (GpuirParseDeviceMemory)
 */
#define GPUIR_DEFAULT_DEVICE_MEMORY	"50%"
#define GPUIR_MIN_DEVICE_MEMORY		1
#define GPUIR_MAX_DEVICE_MEMORY_SHARE	100

/*
 * Relative slack applied to upper bounds before pruning: float32 scores are
 * sums of rounded terms, so a bound computed in double is inflated by this
 * factor to stay >= any float32 score it bounds (src/README, "Exactness").
 */
#define GPUIR_BOUND_SLACK		1.0001

/* ---------- on-disk structs ---------- */

/* special space of every page: 8 bytes */
typedef struct GpuirPageOpaqueData
{
	BlockNumber next;			/* insert buffer: next page of the chain;
								 * stream page: its segment's tag */
	uint16		flags;			/* GPUIR_PAGE_* */
	uint16		page_id;		/* GPUIR_PAGE_ID */
} GpuirPageOpaqueData;

typedef GpuirPageOpaqueData *GpuirPageOpaque;

#define GpuirPageGetOpaque(page) ((GpuirPageOpaque) PageGetSpecialPointer(page))

/* bytes of payload in a stream or buffer page */
#define GPUIR_PAGE_DATA \
	(BLCKSZ - MAXALIGN(SizeOfPageHeaderData) - MAXALIGN(sizeof(GpuirPageOpaqueData)))

/* a byte stream on consecutive pages [start, start + ceil(nbytes / GPUIR_PAGE_DATA)) */
typedef struct GpuirStream
{
	BlockNumber start;
	uint32		nbytes;
} GpuirStream;

/* GpuirPagesFor: the pages nbytes of a stream occupy (GPUIR_PAGE_DATA bytes a page) */
static inline uint64
GpuirPagesFor(uint64 nbytes)
{
	return (nbytes + GPUIR_PAGE_DATA - 1) / GPUIR_PAGE_DATA;
}

/* GpuirStreamPages: the pages stream st occupies */
static inline uint64
GpuirStreamPages(const GpuirStream *st)
{
	return GpuirPagesFor(st->nbytes);
}

/* the streams of a segment */
typedef enum GpuirStreamKind
{
	GPUIR_S_DICT,				/* GpuirDictEntry[nterms], sorted by lexeme */
	GPUIR_S_LEXEMES,			/* the lexemes' bytes, referenced by the dictionary */
	GPUIR_S_BLOCKDIR,			/* GpuirBlockHeader[nblocks], list after list */
	GPUIR_S_PAYLOAD,			/* encoded blocks (gpuircodec.h), list after list */
	GPUIR_S_TIDS,				/* ItemPointerData[ndocs]: docID -> heap TID */
	GPUIR_S_DOCLENS,			/* uint32[ndocs]: docID -> dl */
	GPUIR_S_DELETED,			/* bitmap[ceil(ndocs / 8)]: docID deleted by VACUUM */
	GPUIR_S_PRIORS,				/* float4[ndocs]: docID -> prior; empty when
								 * every prior of the segment is 0 */
	GPUIR_NSTREAMS
} GpuirStreamKind;

/* one immutable segment: dense docIDs 0..ndocs-1 in heap TID order */
typedef struct GpuirSegmentData
{
	uint32		ndocs;
	uint32		ndeleted;
	uint32		nterms;
	uint32		nblocks;
	uint64		npostings;
	uint64		generation;		/* index generation that wrote it */
	float4		prior_max;		/* the largest prior of its documents (0 with
								 * an empty PRIORS stream) */
	BlockNumber map;			/* the segment map's page (GpuirSegmentMapData),
								 * 0: none, every stream on consecutive pages
								 * from its start */
	GpuirStream streams[GPUIR_NSTREAMS];	/* with a map, start is the first
											 * extent's */
} GpuirSegmentData;

/* GpuirSegmentPages: the pages of all of seg's streams, and its map page */
static inline uint64
GpuirSegmentPages(const GpuirSegmentData *seg)
{
	uint64		pages = seg->map != 0 ? 1 : 0;

	for (int k = 0; k < GPUIR_NSTREAMS; k++)
		pages += GpuirStreamPages(&seg->streams[k]);
	return pages;
}

/*
 * A run of pages [start, start + npages) of a stream.  A stream is on one
 * extent, from its start, unless its segment has a map: then on up to
 * GPUIR_STREAM_MAX_EXTENTS, its bytes in their order (src/README, "Segment
 * maps").
 */
typedef struct GpuirExtent
{
	BlockNumber start;
	uint32		npages;
} GpuirExtent;

#define GPUIR_STREAM_MAX_EXTENTS	16

/* the extents of one stream */
typedef struct GpuirStreamExtents
{
	int			n;
	GpuirExtent ext[GPUIR_STREAM_MAX_EXTENTS];
} GpuirStreamExtents;

/* the contents of a segment map page: each stream's extents */
typedef struct GpuirSegmentMapData
{
	uint32		nextents[GPUIR_NSTREAMS];
	GpuirExtent ext[GPUIR_NSTREAMS][GPUIR_STREAM_MAX_EXTENTS];
} GpuirSegmentMapData;

/*
 * The pages a segment has left (its retired extents), after
 * GpuirSegmentMapData on its map page when there are any: the extents a
 * compaction moved its pages from and its earlier map pages, sorted by
 * start and coalesced.  A segment never puts a page on one of them again,
 * so that a reader holding an earlier map finds there its own page or
 * another segment's tag, never another page of this segment (src/README,
 * "Segment maps").
 */
#define GPUIR_MAP_MAX_RETIRED	480
typedef struct GpuirSegmentMapRetired
{
	uint32		n;
	GpuirExtent ext[GPUIR_MAP_MAX_RETIRED];
} GpuirSegmentMapRetired;
StaticAssertDecl(sizeof(GpuirSegmentMapData) + sizeof(GpuirSegmentMapRetired) <= GPUIR_PAGE_DATA,
				 "a segment map and its retired extents must fit in one page");

/* GpuirSegmentMapBytes: the bytes on a map page with r (NULL: none) retired extents */
static inline uint32
GpuirSegmentMapBytes(const GpuirSegmentMapRetired *r)
{
	return (uint32) sizeof(GpuirSegmentMapData) +
		((r != NULL && r->n > 0) ?
		 (uint32) (offsetof(GpuirSegmentMapRetired, ext) + sizeof(GpuirExtent) * r->n) : 0);
}

/* where a segment's pages are: its map page (0: none) and each stream's extents */
typedef struct GpuirSegmentLayout
{
	BlockNumber map;
	GpuirStreamExtents streams[GPUIR_NSTREAMS];
} GpuirSegmentLayout;

/*
 * GpuirStreamContiguous: the extents of stream st of a segment without a map:
 * one from its start (none when it is empty)
 */
static inline void
GpuirStreamContiguous(const GpuirStream *st, GpuirStreamExtents *e)
{
	e->n = st->nbytes > 0 ? 1 : 0;
	e->ext[0].start = st->start;
	e->ext[0].npages = (uint32) GpuirStreamPages(st);
}

/* GpuirExtentsBlock: the block of page number page of a stream on extents e (inside it) */
static inline BlockNumber
GpuirExtentsBlock(const GpuirStreamExtents *e, uint64 page)
{
	if (likely(e->n == 1))
		return e->ext[0].start + (BlockNumber) page;
	for (int i = 0; i < e->n; i++)
	{
		if (page < e->ext[i].npages)
			return e->ext[i].start + (BlockNumber) page;
		page -= e->ext[i].npages;
	}
	return InvalidBlockNumber;
}

/* GpuirDictEntry, GpuirBlockHeader and GPUIR_BLOCK_IMPACTS: gpuirlist.h */

/*
 * A run of free pages [start, start + npages) in the free space map: pages
 * of segments replaced by a merge, reusable once safexid is older than every
 * snapshot (gpuirfree.c), as nbtree's deleted pages.
 */
typedef struct GpuirFreeExtent
{
	BlockNumber start;
	uint32		npages;
	FullTransactionId safexid;	/* next XID when the pages were freed */
} GpuirFreeExtent;

/*
 * The tag written in the special space of every page of a segment's streams
 * (GpuirPageOpaqueData.next): derived from the segment's generation, never
 * GPUIR_UNTAGGED (InvalidBlockNumber), which pages written before the free
 * space map existed carry.  A reader that finds another tag reads a page
 * that a merge has reused (src/README, "Free space map").
 */
#define GPUIR_UNTAGGED			InvalidBlockNumber

static inline uint32
GpuirSegmentTag(uint64 generation)
{
	return (uint32) (generation % (uint64) PG_UINT32_MAX);
}

/*
 * An insert buffer chain: records packed back to back on a chain of buffer
 * pages, from offset head_off of page head to the committed end, tail_used
 * bytes into page tail.
 */
typedef struct GpuirChain
{
	BlockNumber head;
	uint32		head_off;
	BlockNumber tail;
	uint32		tail_used;
	uint64		nbytes;			/* committed bytes from (head, head_off) */
	uint32		ndocs;			/* records in them (deleted ones too) */
	uint32		reserved;
} GpuirChain;

/*
 * An insert lane's header page.  Appends lock only their lane's header page,
 * so sessions on different lanes append at once.  Positions are counted from
 * the lane's creation: the chain starts at byte start_pos (record start_rec);
 * a merge folds a lane up to the position it stores in the metapage
 * (lane_consumed), and readers skip what lies before it.  N and total dl are
 * the metapage's base plus every lane's docs_added and dl_added.
 */
typedef struct GpuirLaneData
{
	GpuirChain	chain;
	uint64		start_pos;
	uint64		start_rec;
	uint64		docs_added;		/* documents ever appended to the lane */
	uint64		dl_added;		/* their dl */
} GpuirLaneData;

#define GpuirPageGetLane(page) ((GpuirLaneData *) PageGetContents(page))

/*
 * GpuirDataBlock: can block blk of an index of nblocks blocks hold a data
 * page (a stream, insert buffer or lane header page: past the metapage and
 * the free space map, inside the relation)?  GpuirIndexDataBlock asks the
 * same of an index without its size at hand.
 */
static inline bool
GpuirDataBlock(BlockNumber blk, BlockNumber nblocks)
{
	return blk >= GPUIR_FIRST_DATA_BLKNO && blk < nblocks;
}

/*
 * The metapage, block 0: the index's options and statistics, the segment
 * directory and the insert buffer's state.  A query copies it once
 * (GpuirReadMeta) and reads the segments it names.
 */
typedef struct GpuirMetaPageData
{
	uint32		magic;
	uint32		version;
	Oid			cfg_id;			/* text search configuration */
	float4		k1;
	float4		b;
	uint32		nsegments;
	uint64		ndocs;			/* N: live indexed documents, all segments + buffer */
	uint64		total_dl;		/* sum of dl over the same documents */
	uint64		generation;		/* bumped by every change of the index */
	/* insert buffer: a chain of pages holding GpuirBufferRecords */
	BlockNumber buf_head;		/* first page, or InvalidBlockNumber */
	BlockNumber buf_tail;		/* page holding the committed end */
	uint32		buf_tail_used;	/* committed bytes on buf_tail */
	uint32		buf_ndocs;		/* records in the buffer (deleted ones too) */
	uint64		buf_nbytes;		/* committed bytes in the chain */
	uint32		buf_head_off;	/* the buffer's first byte on buf_head */
	uint32		vacuum_pending;	/* a VACUUM began marking deleted documents and
								 * has not rewritten the statistics yet: after
								 * a crash, ndeleted, N, total dl and df may
								 * lag the deleted marks until the next VACUUM
								 * (gpuirvacuum.c) */
	/* insert lanes */
	BlockNumber lane_page[GPUIR_INSERT_LANES];	/* header pages, 0 = none yet */
	uint64		lane_consumed[GPUIR_INSERT_LANES];	/* position folded up to */
	uint64		lane_consumed_rec[GPUIR_INSERT_LANES];	/* records folded up to */
	uint16		weights[INDEX_MAX_KEYS];	/* each index column's BM25F weight,
											 * 1 .. GPUIR_MAX_WEIGHT; 0 reads as
											 * 1 (GpuirMetaWeight) */
	/* document priors: the prior_weight reloption at build */
	uint32		has_prior;		/* 1: the index INCLUDEs a prior column */
	float4		prior_weight;	/* w of score = BM25 + w * prior, >= 0 */
	GpuirSegmentData segments[GPUIR_MAX_SEGMENTS];
} GpuirMetaPageData;

StaticAssertDecl(sizeof(GpuirMetaPageData) <= GPUIR_PAGE_DATA,
				 "the gpuir metapage must fit a page");

/*
 * The free space map, block 1: extents of free pages, sorted by start
 * (gpuirfree.c).  Merges and compaction change it under the merge lock, in
 * the WAL record that changes the segment directory (truncation: alone);
 * VACUUM's page counts and gpuir_verify read it under its share lock.
 */
typedef struct GpuirFreeMapData
{
	uint32		nfree;			/* extents in free[] */
	uint32		reserved;
	GpuirFreeExtent free[GPUIR_MAX_FREE_EXTENTS];
} GpuirFreeMapData;

StaticAssertDecl(sizeof(GpuirFreeMapData) <= GPUIR_PAGE_DATA,
				 "the gpuir free space map must fit a page");

#define GpuirPageGetFreeMap(page) ((GpuirFreeMapData *) PageGetContents(page))

typedef GpuirMetaPageData *GpuirMetaPage;

#define GpuirPageGetMeta(page) ((GpuirMetaPage) PageGetContents(page))

/*
 * Insert buffer record header, followed by nterms entries of
 * { uint32 tf; uint16 len; char lexeme[len] } in lexeme order.  Records are
 * packed back to back and may span pages.
 */
typedef struct GpuirBufferRecord
{
	uint32		reclen;			/* bytes of the record, header included */
	uint8		flags;			/* GPUIR_REC_DELETED */
	uint8		reserved;
	ItemPointerData tid;
	uint32		dl;
	uint32		nterms;
} GpuirBufferRecord;

#define GPUIR_REC_HEADER		20	/* packed size of GpuirBufferRecord */

/*
 * The insert buffer's bytes start at offset buf_head_off of the head page and
 * continue page after page along the chain.  GpuirBufferPages: the pages
 * holding nbytes of them; GpuirBufferSpan: the part on the i-th page, its
 * offset *lo in the buffer and *pageoff on the page; returns its length.
 */
static inline uint64
GpuirBufferPages(uint32 head_off, uint64 nbytes)
{
	/* no wrap-around for any nbytes (a corrupt length): head_off < GPUIR_PAGE_DATA */
	return nbytes == 0 ? 0 : nbytes / GPUIR_PAGE_DATA +
		((uint64) head_off + nbytes % GPUIR_PAGE_DATA + GPUIR_PAGE_DATA - 1) / GPUIR_PAGE_DATA;
}

static inline uint32
GpuirBufferSpan(uint32 head_off, uint64 nbytes, uint64 i, uint64 *lo, uint32 *pageoff)
{
	*pageoff = (i == 0) ? head_off : 0;
	*lo = (i == 0) ? 0 : i * GPUIR_PAGE_DATA - head_off;
	return (uint32) Min((uint64) (GPUIR_PAGE_DATA - *pageoff), nbytes - *lo);
}
#define GPUIR_REC_FLAGS_OFF		4	/* offset of flags in the record */
#define GPUIR_REC_DELETED		0x01
#define GPUIR_REC_PRIOR			0x02	/* the header is followed by a float4
										 * prior (absent: the prior is 0) */

/* ---------- in-memory structs ---------- */

/* reloptions */
typedef struct GpuirOptions
{
	int32		vl_len_;
	int			text_config_offset;
	double		k1;				/* real reloptions are stored as double */
	double		b;
	int			weights_offset; /* the weights string, 0 when not set */
	int			max_segment_docs;	/* documents a segment holds at most; 0: no cap */
	double		prior_weight;	/* w of score = BM25 + w * prior */
} GpuirOptions;

/* max_segment_docs of index (its reloption; 0: no cap) */
extern uint32 GpuirMaxSegmentDocs(Relation index);

/* one distinct lexeme of a document or query with its tf */
typedef struct GpuirTerm
{
	char	   *lexeme;			/* not NUL-terminated */
	uint16		len;
	uint32		tf;
} GpuirTerm;

/* a tokenized document: distinct lexemes in lexeme order */
typedef struct GpuirDocTerms
{
	GpuirTerm  *terms;
	int			nterms;
	uint32		dl;				/* indexed tokens */
	float4		prior;			/* the row's prior (GpuirRowPrior), 0 without one */
} GpuirDocTerms;

typedef enum GpuirMode
{
	GPUIR_MODE_AND,
	GPUIR_MODE_OR,
	GPUIR_MODE_WAND,
	GPUIR_MODE_BMW,
	GPUIR_MODE_AND_OR
} GpuirMode;

/*
 * GpuirTidCmp: heap TIDs in ItemPointerCompare's order (block, then
 * offset), inline and without its validity assertions: the tie-break of
 * every result order (GpuirResultBetter) and gpuir_verify's checks of
 * possibly corrupt TIDs.  Returns < 0, 0 or > 0.
 */
static inline int
GpuirTidCmp(const ItemPointerData *a, const ItemPointerData *b)
{
	BlockNumber ba = ItemPointerGetBlockNumberNoCheck(a);
	BlockNumber bb = ItemPointerGetBlockNumberNoCheck(b);
	OffsetNumber oa = ItemPointerGetOffsetNumberNoCheck(a);
	OffsetNumber ob = ItemPointerGetOffsetNumberNoCheck(b);

	if (ba != bb)
		return ba < bb ? -1 : 1;
	return (oa > ob) - (oa < ob);
}

/* one result row of a top-k query */
typedef struct GpuirResult
{
	float4		score;
	ItemPointerData tid;		/* the index entry's TID (HOT chain root) */
	ItemPointerData heap_tid;	/* the visible tuple version's TID */
} GpuirResult;

/* counters of the last query in this backend (gpuir_last_query_stats) */
typedef struct GpuirQueryStats
{
	int64		blocks_decoded;
	int64		blocks_skipped;
	int64		docs_scored;
	int64		gpu_queries;	/* queries the GPU service answered */
} GpuirQueryStats;

extern GpuirQueryStats GpuirLastQueryStats;

/* BM25 scoring constants of one query */
typedef struct GpuirScoring
{
	float4		k1;
	float4		b;
	float4		avgdl;
	uint64		N;
} GpuirScoring;

/*
 * a byte-stream reader: it keeps the last page pinned, and a copy of the
 * last page it read twice (GpuirStreamRead; the copy's memory is taken on
 * the first such read, and returned by GpuirStreamReaderEnd)
 */
typedef struct GpuirStreamReader
{
	Relation	index;
	GpuirStream stream;
	GpuirStreamExtents ext;		/* where its pages are */
	uint32		tag;			/* GpuirSegmentTag of the stream's segment */
	Buffer		buf;
	BlockNumber blkno;			/* the pinned page */
	uint32		page_reads;		/* reads of the pinned page after the first */
	BlockNumber copy_blkno;		/* the page whose contents copy holds */
	char	   *copy;			/* GPUIR_PAGE_DATA bytes in cxt, or NULL */
	MemoryContext cxt;			/* CurrentMemoryContext of GpuirStreamReaderInit */
} GpuirStreamReader;

/*
 * A cursor over one term's posting list in one segment (gpuirlistread.c):
 * the list's block headers, checked when opened, and the block decoded
 * last.
 */
typedef struct GpuirListCursor
{
	Relation	index;
	uint32		segno;			/* segment number, for messages */
	uint32		first_block;	/* the list's first block in the segment */
	uint32		nblocks;
	uint32		npostings;
	GpuirBlockHeader *dir;		/* the list's block headers */
	bool		own_dir;		/* dir was palloc'd by the cursor */
	bool		has_tfs;		/* tfs[] holds the decoded block's tfs, else
								 * tfr reads them one at a time */
	uint32	   *ends;			/* payload end offset of each block */
	int64		decoded;		/* block held in docs/enc, or -1 */
	int			n;				/* postings in it */
	uint32		ndecoded;		/* blocks decoded so far */
	uint32		docs[GPUIR_BLOCK_SIZE];
	uint32		tfs[GPUIR_BLOCK_SIZE];
	/* the block's bytes, then GpuirCodecDecodePadded's slop */
	uint8		enc[GPUIR_BLOCK_MAX_BYTES + GPUIR_CODEC_SLOP];
	GpuirCodecTfReader tfr;		/* enc's tf section */
	GpuirStreamReader payload;
} GpuirListCursor;

/*
 * A merge's working copy of the free space map (gpuirfree.c): extents it may
 * take pages from (reusable, their safexid passed the horizon when the merge
 * started), extents still waiting for the horizon, and those it frees.
 */
/* the map's extents, and room for every page of 64 segments a merge may free */
#define GPUIR_FREE_LIST_EXTENTS \
	(GPUIR_MAX_FREE_EXTENTS + GPUIR_MAX_SEGMENTS * (GPUIR_NSTREAMS * GPUIR_STREAM_MAX_EXTENTS + 1))

typedef struct GpuirFreeList
{
	int			n;
	GpuirFreeExtent ext[GPUIR_FREE_LIST_EXTENTS];
	bool		reusable[GPUIR_FREE_LIST_EXTENTS];
	uint64		dropped_pages;	/* pages left out when the map overflowed */
} GpuirFreeList;

/* ---------- helpers ---------- */

/* gpuir.c */
extern int	gpuir_insert_buffer_limit;
extern int	gpuir_doclength_cache;
extern int	gpuir_taat_max_postings;
extern bool gpuir_debug_rescore;
extern int	gpuir_debug_dict_hint_skew;
extern bool gpuir_rank_under_rls;
extern bool GpuirIsGpuirIndex(Relation rel);
extern Relation GpuirOpenIndex(Oid indexoid, LOCKMODE lockmode);
extern GpuirMode GpuirParseMode(const char *mode);
extern const char *GpuirModeName(GpuirMode mode);

/* gpuirverify.c */
extern char *GpuirVerify(Relation index, Relation heap, bool *vacuum_pending);

/* gpuirutils.c */
extern bool GpuirRelationHolds(Relation rel, uint64 nblocks);
extern bool GpuirIndexDataBlock(Relation index, BlockNumber blk);
extern void GpuirInitPage(Page page, uint16 type);
extern void GpuirCorrupt(Relation index, const char *what) pg_attribute_noreturn();
extern void GpuirReadMeta(Relation index, GpuirMetaPageData *meta);
extern Buffer GpuirReadBuffer(Relation index, BlockNumber blkno);
extern void GpuirCheckMeta(Relation index, const GpuirMetaPageData *meta);
extern void GpuirCheckOptions(Relation index, const GpuirMetaPageData *meta);
extern void GpuirIndexWeights(Relation index, uint16 *weights);
extern void GpuirValidateWeights(const char *spec);
extern Buffer GpuirNewBuffer(Relation index);
extern void GpuirCheckPage(Relation index, Page page, BlockNumber blkno, uint16 type);
extern void GpuirCopyPageContents(Relation index, BlockNumber blkno, uint16 type, void *dst,
								  Size size);
extern void GpuirCheckStreamTag(Relation index, Page page, BlockNumber blkno, uint32 tag);
extern int	GpuirUint32Cmp(const void *a, const void *b);
extern int	GpuirTermsSortMerge(GpuirTerm *terms, int n, bool sum_tf);
extern GpuirStream GpuirWriteStream(Relation index, const char *data, uint32 nbytes,
									uint32 tag, BlockNumber start);
extern void GpuirWriteStreamPages(Relation index, const char *data, uint32 len, uint32 tag,
								  const GpuirStreamExtents *e, uint64 first_page);
extern const char *GpuirSegmentMapCheck(const GpuirSegmentData *seg,
										const GpuirSegmentMapData *map);
extern void GpuirSegmentLayoutFromMap(const GpuirSegmentData *seg,
									  const GpuirSegmentMapData *map,
									  GpuirSegmentLayout *lay);
extern void GpuirSegmentLayoutOf(Relation index, const GpuirSegmentData *seg,
								 GpuirSegmentLayout *lay);
extern void GpuirSegmentRetiredOf(Relation index, const GpuirSegmentData *seg,
								  const GpuirSegmentLayout *lay, GpuirSegmentMapRetired *r);
/* gpuirengine.c: GpuirSegmentLayoutOf through the session's cache */
extern const GpuirSegmentLayout *GpuirSegmentLayoutCached(Relation index,
														  const GpuirSegmentData *seg);
extern void GpuirWriteSegmentMap(Relation index, GpuirSegmentData *seg,
								 const GpuirSegmentLayout *lay, BlockNumber blkno,
								 const GpuirSegmentMapRetired *retired);
extern void GpuirUpdateStream(Relation index, const GpuirSegmentData *seg,
							  GpuirStreamKind kind, uint32 offset,
							  const char *data, uint32 nbytes);
extern void GpuirUpdateStreamChanged(Relation index, const GpuirSegmentData *seg,
									 GpuirStreamKind kind,
									 const char *olddata, const char *newdata);
extern void GpuirStreamReaderInit(GpuirStreamReader *r, Relation index,
								  const GpuirSegmentData *seg, GpuirStreamKind kind);
extern void GpuirStreamRead(GpuirStreamReader *r, uint32 offset, void *dst, uint32 len);
extern void GpuirStreamReaderEnd(GpuirStreamReader *r);
extern char *GpuirStreamReadAll(Relation index, const GpuirSegmentData *seg,
								GpuirStreamKind kind);
extern const char *GpuirPriorsSizeCheck(const GpuirSegmentData *seg);
extern float4 *GpuirSegmentPriors(Relation index, const GpuirSegmentData *seg);
extern bool GpuirPriorsInRange(const GpuirSegmentData *seg, const float4 *p);
extern void GpuirSetMetaLower(Page metapage);
extern void GpuirFillMetaPage(Page page, const GpuirMetaPageData *opts);
extern void GpuirFillFreeMapPage(Page page);
extern void GpuirWriteEmptyIndex(Relation index, const GpuirMetaPageData *opts);
extern uint64 GpuirStoreBuiltSegments(Relation index, const GpuirSegmentData *segs, int nsegs,
									  uint64 total_dl);
extern float4 GpuirIdf(uint64 N, uint64 df);
extern void *GpuirGrow(void *ptr, Size elemsize, uint64 *cap, uint64 need, uint64 max);

/*
 * GpuirLexemeCmp: byte order, then length (the dictionary's sort order).
 * Inline, with the first byte compared before memcmp: a query's terms are
 * compared with every lexeme of every insert buffer record it reads, and
 * most of those comparisons differ at the first byte.
 */
static inline int
GpuirLexemeCmp(const char *a, int alen, const char *b, int blen)
{
	int			r;

	if (alen > 0 && blen > 0 && a[0] != b[0])
		return (int) (unsigned char) a[0] - (int) (unsigned char) b[0];
	r = memcmp(a, b, Min(alen, blen));
	if (r != 0)
		return r;
	return (alen > blen) - (alen < blen);
}

/* gpuirlistread.c: the posting list cursor */
extern uint32 GpuirListDirLength(const GpuirSegmentData *seg, const GpuirDictEntry *de);
extern void GpuirListReadDir(Relation index, const GpuirSegmentData *seg,
							 const GpuirDictEntry *de, GpuirBlockHeader *dir);
extern void GpuirListOpen(GpuirListCursor *c, Relation index, const GpuirSegmentData *seg,
						  uint32 segno, const GpuirDictEntry *de,
						  const GpuirBlockHeader *segdir, const GpuirBlockHeader *listdir);
extern int	GpuirListDecode(GpuirListCursor *c, uint32 blk, bool with_tfs);
extern uint32 GpuirListSeek(const GpuirListCursor *c, uint32 from, uint32 target);
extern void GpuirListClose(GpuirListCursor *c);

/* the tf of posting i of the block c decoded last (GpuirCodecTfAt) */
static inline uint32
GpuirListTf(const GpuirListCursor *c, int i)
{
	return c->has_tfs ? c->tfs[i] : GpuirCodecTfAt(&c->tfr, i);
}

/* gpuirfree.c: the free space map */
extern void GpuirReadFreeMap(Relation index, GpuirFreeMapData *fm);
extern void GpuirSetFreeMapLower(Page page);
extern void GpuirFreeListInit(GpuirFreeList *fl, Relation index, const GpuirFreeMapData *fm);
extern BlockNumber GpuirFreeListTake(GpuirFreeList *fl, uint32 npages);
extern BlockNumber GpuirFreeListTakeBestFit(GpuirFreeList *fl, uint32 npages);
extern BlockNumber GpuirFreeListAllocate(GpuirFreeList *fl, Relation index, uint32 npages);
extern bool GpuirFreeListAllocateExtents(GpuirFreeList *fl, Relation index, uint32 npages,
										 bool lowest, BlockNumber limit, bool extend,
										 GpuirStreamExtents *out);
extern void GpuirFreeListAddSegment(GpuirFreeList *fl, const GpuirSegmentLayout *lay,
									FullTransactionId safexid);
extern bool GpuirFreeListAddReusable(GpuirFreeList *fl, BlockNumber *pages, int n);
extern bool GpuirFreeListHoldOut(GpuirFreeList *fl, BlockNumber start, uint32 npages,
								 GpuirFreeList *held);
extern bool GpuirFreeListReturn(GpuirFreeList *fl, const GpuirFreeList *held);
extern bool GpuirFreeListPlanFree(GpuirFreeList *fl, const GpuirSegmentLayout *lay);
extern void GpuirFreeListStore(GpuirFreeList *fl, GpuirFreeMapData *fm);
extern void GpuirFreeListReportDropped(Relation index, const GpuirFreeList *fl);
extern void GpuirFreeListPages(const GpuirFreeList *fl, uint64 *all, uint64 *reusable);
extern void GpuirFreePages(Relation index, uint64 *all, uint64 *reusable);
extern bool GpuirFreeWaitReusable(Relation index, int max_ms);

/* gpuircompact.c: relocating segments and truncating free pages at the end */
extern void GpuirCompact(Relation index, bool wait);
extern void GpuirCompactLocked(Relation index);

/* gpuirtokenize.c */
extern Oid	GpuirResolveConfig(Relation index);
extern void GpuirTokenize(Oid cfg_id, const char *text, int len, GpuirDocTerms *out);
extern bool GpuirTokenizeRow(Oid cfg_id, const uint16 *weights, int natts,
							 const Datum *values, const bool *isnull, GpuirDocTerms *out);
extern bool GpuirPriorTypeOk(Oid typid);
extern float4 GpuirRowPrior(Relation index, const Datum *values, const bool *isnull);

/*
 * GpuirPriorValid: is p a prior an index may hold (finite, >= 0: then every
 * score is >= 0 and a segment's largest prior bounds what any prior adds,
 * src/README "Document priors")?  GpuirRowPrior raises 22003 for a row
 * whose prior is not; a stored one that is not is corrupt.
 */
static inline bool
GpuirPriorValid(float4 p)
{
	return p >= 0.0f && p <= FLT_MAX;
}

/* the corruption message of a stored prior that fails GpuirPriorInSegment */
#define GPUIR_PRIOR_CORRUPT	"segment prior negative, not finite or above the segment's largest"

/*
 * GpuirPriorInSegment: does prior p of a document of seg lie in 0 ..
 * seg->prior_max (so that prior_max bounds what it adds; NaN does not)?  A
 * stored prior that does not is corrupt.
 */
static inline bool
GpuirPriorInSegment(const GpuirSegmentData *seg, float4 p)
{
	return p >= 0.0f && p <= seg->prior_max;
}

/* GpuirPriorWeightValid: is w a prior_weight (the reloption's range; NaN is not)? */
static inline bool
GpuirPriorWeightValid(float4 w)
{
	return w >= 0.0f && w <= GPUIR_MAX_PRIOR_WEIGHT;
}

/*
 * GpuirPriorScore: what a document's prior adds to its BM25 score,
 * weight * prior rounded to float4 (src/README, "Document priors"); every
 * engine (CPU, buffer, reference) adds it this way, after the BM25 sum
 */
static inline float4
GpuirPriorScore(float4 weight, float4 prior)
{
	return weight * prior;
}

/* GpuirMetaWeight: index column col's (0-based) BM25F weight */
static inline uint16
GpuirMetaWeight(const GpuirMetaPageData *meta, int col)
{
	return meta->weights[col] == 0 ? 1 : meta->weights[col];
}

/* GpuirMetaSameWeights: do two metapages give every column the same weight? */
static inline bool
GpuirMetaSameWeights(const GpuirMetaPageData *a, const GpuirMetaPageData *b)
{
	for (int i = 0; i < INDEX_MAX_KEYS; i++)
		if (GpuirMetaWeight(a, i) != GpuirMetaWeight(b, i))
			return false;
	return true;
}

/* gpuirsegment.c: builder of a segment (in memory, or spilling sorted runs) */
typedef struct GpuirBuilder GpuirBuilder;
extern GpuirBuilder *GpuirBuilderCreate(void);
extern void GpuirBuilderReportProgress(GpuirBuilder *b);
extern void GpuirBuilderSetMemoryLimit(GpuirBuilder *b, Size bytes, bool drop_between_runs);
extern int	GpuirBuilderRuns(GpuirBuilder *b);

/*
 * phases of CREATE INDEX (pg_stat_progress_create_index, gpuirbuildphasename),
 * after PROGRESS_CREATEIDX_SUBPHASE_INITIALIZE (1)
 */
#define GPUIR_BUILD_PHASE_SCAN		2	/* scanning table: tokenize, invert */
#define GPUIR_BUILD_PHASE_SORT		3	/* ordering documents, lexemes, postings */
#define GPUIR_BUILD_PHASE_ENCODE	4	/* compressing posting lists */
#define GPUIR_BUILD_PHASE_WRITE		5	/* writing the segment's pages */
extern uint32 GpuirBuilderAddDoc(GpuirBuilder *b, ItemPointer tid, uint32 dl, float4 prior);
extern void GpuirBuilderAddPosting(GpuirBuilder *b, const char *lexeme, int len,
								   uint32 doc, uint32 tf);
extern void GpuirBuilderAddTerms(GpuirBuilder *b, ItemPointer tid, const GpuirDocTerms *doc);
extern uint32 GpuirBuilderNumDocs(GpuirBuilder *b);
extern uint64 GpuirBuilderTotalDl(GpuirBuilder *b);

/*
 * How a build or merge cuts its documents (heap TID order, docIDs 0 .. N -
 * 1) into segments: n ranges of about equal size, the r-th docIDs
 * first[r] .. first[r + 1] - 1 (GpuirPiecesInit).
 */
typedef struct GpuirPieces
{
	int			n;
	uint32		first[GPUIR_MAX_SEGMENTS + 1];
} GpuirPieces;

extern void GpuirPiecesInit(GpuirPieces *p, uint64 ndocs, uint32 max_docs, int max_pieces,
							bool fill);
extern int	GpuirBuilderWrite(GpuirBuilder *b, Relation index, uint64 generation,
							  float4 k1, float4 bparam, GpuirFreeList *fl,
							  uint32 max_docs, int max_pieces, bool fill,
							  GpuirSegmentData *segs);
extern void GpuirBuilderFree(GpuirBuilder *b);

/* a posting of a list being built: docID, tf */
typedef struct GpuirPosting
{
	uint32		doc;
	uint32		tf;
} GpuirPosting;

extern uint32 GpuirBuilderNumTerms(GpuirBuilder *b);
extern uint32 GpuirBuilderExportBegin(GpuirBuilder *b, Relation index,
									  ItemPointerData **tids, uint32 **dls, float4 **priors);
extern bool GpuirBuilderExportNext(GpuirBuilder *b, const char **lexeme, uint16 *len,
								   GpuirPosting **list, uint64 *n);
extern void GpuirBuilderExportEnd(GpuirBuilder *b);

/* a posting of a merged list: segment docID, tf and the document's dl */
typedef struct GpuirPostingDl
{
	uint32		doc;
	uint32		tf;
	uint32		dl;
} GpuirPostingDl;

/*
 * A source of lists for GpuirListsMerge: next gives its next list in
 * dictionary order (lexeme, postings ascending by segment docID), valid
 * until the next call; false after the last.
 */
typedef struct GpuirListSource
{
	bool		(*next) (void *arg, const char **lexeme, uint16 *len,
						 GpuirPostingDl **list, uint64 *n);
	void	   *arg;
} GpuirListSource;

/*
 * Encoded lists (gpuirsegment.c): a segment's, or one range of its lexemes
 * that a parallel build's participant encoded (GpuirListsSave), appended
 * to the others in dictionary order by the leader (GpuirListsAppend).
 */
typedef struct GpuirLists GpuirLists;

typedef struct GpuirListsInfo
{
	uint32		nterms;
	uint32		nblocks;
	uint64		npostings;
	uint64		dict_bytes;		/* the streams' sizes */
	uint64		lexeme_bytes;
	uint64		blockdir_bytes;
	uint64		payload_bytes;
} GpuirListsInfo;

/*
 * A source of documents for GpuirListsMergeDocs: a builder export's
 * (GpuirBuilderExportBegin), ndocs in heap TID order.  next gives its next
 * chunk (the count, 0 after the last; valid until the next call); map
 * receives the segment docIDs of its next n documents, in its order; both
 * get arg.
 */
typedef struct GpuirDocSource
{
	uint64		ndocs;
	uint32		(*next) (void *arg, const ItemPointerData **tids, const uint32 **dls,
						 const float4 **priors);	/* priors NULL: all 0 */
	void		(*map) (void *arg, const uint32 *docids, uint32 n);
	void	   *arg;
} GpuirDocSource;

#define GPUIR_LISTS_NSTREAMS	4	/* DICT, LEXEMES, BLOCKDIR, PAYLOAD */

extern GpuirLists *GpuirListsBegin(float4 k1, float4 b, double avgdl, BufFile **files);
extern uint64 GpuirListsMergeDocs(GpuirLists **ls, const GpuirPieces *pieces, Relation index,
								  GpuirDocSource *src, int nsrc, bool with_priors,
								  uint64 *sum_dl);
extern double GpuirListsAvgdl(GpuirLists *ls);
extern void GpuirListsMerge(GpuirLists **ls, const GpuirPieces *pieces, Relation index,
							GpuirListSource *src, int nsrc, pg_atomic_uint64 *lists_done);
extern const GpuirListsInfo *GpuirListsGetInfo(GpuirLists *ls);
extern void GpuirListsSave(GpuirLists *ls);
extern void GpuirListsAppend(GpuirLists *ls, BufFile **in, const GpuirListsInfo *info);
extern void GpuirListsDiscard(GpuirLists *ls);
extern void GpuirListsWrite(GpuirLists *ls, Relation index, uint64 generation, bool on,
							GpuirSegmentData *seg);

/*
 * A copy of the insert buffer (gpuirbuffer.c): the live bytes of the
 * metapage's own chain (written before lanes existed; merges drain it) and
 * of every lane, back to back.  Each part remembers where its bytes came
 * from, for VACUUM's write-back and a merge's swap.
 */
typedef struct GpuirBufferPart
{
	int			lane;			/* -1: the metapage's chain */
	BlockNumber lane_page;
	GpuirLaneData ld;			/* the lane header (chain only, for -1) */
	char	   *full;			/* the chain's committed bytes */
	BlockNumber *pages;			/* its pages (GpuirBufferPages of them) */
	uint64		skip;			/* bytes before the lane's consumed position */
	uint32		skip_recs;
	uint64		off;			/* where its live bytes are in data */
} GpuirBufferPart;

typedef struct GpuirBufferView
{
	char	   *data;			/* live bytes of all parts, back to back */
	uint64		nbytes;
	uint32		ndocs;			/* live records */
	int			nparts;
	GpuirBufferPart parts[1 + GPUIR_INSERT_LANES];
	uint64		docs_added;		/* sums over the lanes */
	uint64		dl_added;
} GpuirBufferView;

/* gpuirbuffer.c: the insert buffer (records, chains, lanes) */
extern void GpuirBufferAppend(Relation index, ItemPointer tid, const GpuirDocTerms *doc);
extern char *GpuirBufferSnapshot(Relation index, GpuirMetaPageData *meta,
								 GpuirBufferView *view);
extern void GpuirBufferReadAll(Relation index, const GpuirMetaPageData *meta,
							   GpuirBufferView *view, bool exclusive, Buffer *lanebufs);
typedef void (*GpuirRecordFn) (const GpuirBufferRecord *rec, const GpuirDocTerms *doc,
							  uint64 offset, void *arg);
extern uint64 GpuirBufferedBytes(Relation index, const GpuirMetaPageData *meta);
extern void GpuirMetaGetChain(const GpuirMetaPageData *meta, GpuirChain *chain);
extern void GpuirMetaSetChain(GpuirMetaPageData *meta, const GpuirChain *chain);
extern int	GpuirChainRemovePrefix(Relation index, GenericXLogState *state, GpuirChain *c,
								   uint64 nbytes, uint32 nrecords, const BlockNumber *pages,
								   Buffer *locked);
extern void GpuirBufferTrimLane(Relation index, const GpuirBufferPart *part, uint64 consumed,
								uint64 consumed_rec);
extern int	GpuirChainAllPages(Relation index, const GpuirChain *c, BlockNumber **pages,
							   int *tail_idx);
extern void GpuirChainCopy(Relation index, const BlockNumber *from, const BlockNumber *to, int n);
extern void GpuirBufferForEach(Relation index, const char *data, uint64 nbytes,
							   GpuirRecordFn fn, void *arg);

/* gpuirmerge.c; who merges (GpuirMergePolicyKind) is in gpuirmergepolicy.h */
extern bool GpuirMerge(Relation index, GpuirMergePolicyKind kind, bool wait);
extern void GpuirMergeSegment(GpuirBuilder *b, Relation index, const GpuirSegmentData *seg,
							  uint32 segno);
extern bool GpuirMergeWanted(Relation index, const GpuirMetaPageData *meta);
extern int	GpuirMergeVacuum(Relation index);

/*
 * The merge lock: a heavyweight lock on the metapage's block number, held
 * by merges and VACUUM (not by readers or inserters), as GIN locks its
 * metapage for pending list cleanup.
 */
#define GpuirLockMerge(index)	LockPage((index), GPUIR_METAPAGE_BLKNO, ExclusiveLock)
#define GpuirConditionalLockMerge(index) \
	ConditionalLockPage((index), GPUIR_METAPAGE_BLKNO, ExclusiveLock)
#define GpuirUnlockMerge(index)	UnlockPage((index), GPUIR_METAPAGE_BLKNO, ExclusiveLock)

/* gpuirremember.c: score sources, the <@> values of index scans */
typedef struct GpuirScoreSource GpuirScoreSource;
extern GpuirScoreSource *GpuirScoreSourceCreate(void);
extern void GpuirScoreSourceSet(GpuirScoreSource *src, IndexScanDesc scan,
								const char *query, int querylen);
extern void GpuirScoreSourceReturned(GpuirScoreSource *src, const GpuirResult *results, int n);
extern void GpuirScoreSourcePage(GpuirScoreSource *src);
extern void GpuirScoreSourceEnd(GpuirScoreSource *src);
extern bool GpuirScoreOf(const char *query, int querylen, Datum doc, float4 *score);

/*
 * What a search ranks by (GpuirQueryInput): either text, a bag of words
 * tokenized with the index's configuration (each distinct lexeme counts
 * once: plainto_tsquery's words, ORed), or words[0..nwords), lexemes taken
 * as they are (a tsquery's positive ones, gpuirtsquery.c), a prefix word
 * standing for every indexed lexeme that begins with it.  filter, when set,
 * is a further condition each returned row must pass (a tsquery's NOT,
 * phrase and weight operators), called with filter_arg and the visible heap
 * row in slot; the score stays BM25 over the words.  after, when set, asks
 * for the results ranked after it only (score descending, index TID
 * ascending: the next page of an index scan that returned it last; CPU
 * engine).
 */
typedef struct GpuirQueryWord
{
	const char *lexeme;
	int			len;
	bool		prefix;			/* lexeme:* */
} GpuirQueryWord;

typedef bool (*GpuirRowFilter) (void *arg, TupleTableSlot *slot);

typedef struct GpuirQueryInput
{
	const char *text;			/* NULL: words */
	int			textlen;
	const GpuirQueryWord *words;
	int			nwords;
	GpuirRowFilter filter;		/* NULL: every row holding a word */
	void	   *filter_arg;
	const GpuirResult *after;	/* NULL: from the best */
	/*
	 * The caller fetches every result with its own snapshot and skips the
	 * invisible ones (an index scan's executor does), so the search checks
	 * no row's visibility when there is no row filter: its results are then
	 * the top-k of all live index entries, in the same order, of which the
	 * caller keeps the visible ones.  heap_tid is left invalid.
	 */
	bool		visible_by_caller;
} GpuirQueryInput;

/* GpuirQueryInputText: *in ranks by the bag of words text[0..len) */
static inline void
GpuirQueryInputText(GpuirQueryInput *in, const char *text, int len)
{
	memset(in, 0, sizeof(*in));
	in->text = text;
	in->textlen = len;
}

/*
 * What one index scan did, summed over its searches (a scan searches again
 * with a larger k, or for the next page) and its rescans: for EXPLAIN
 * ANALYZE (gpuirexplain.c).  The block and document counts are the CPU
 * engine's work; searches the GPU service answered are gpu_searches.
 */
typedef struct GpuirScanStats
{
	int			searches;
	int			gpu_searches;
	int			k;				/* of the last search */
	GpuirMode	mode;			/* of the last search */
	int64		blocks_decoded;
	int64		blocks_skipped;
	int64		docs_scored;
} GpuirScanStats;

/* gpuirscan.c: scan's stats; false when it is not a gpuir scan that searched */
extern bool GpuirScanGetStats(IndexScanDesc scan, GpuirScanStats *stats);
/* gpuirscan.c: _PG_init: the ExecutorStart hook that passes LIMITs to scans */
extern void GpuirScanInit(void);

/* gpuirexplain.c */
extern void GpuirExplainInit(void);
extern void GpuirExplainScanEnded(Relation index, const GpuirScanStats *stats);

/* operator strategies of gpuir operator classes: ORDER BY col <@> query */
#define GPUIR_STRATEGY_TEXT		1	/* <@> (text, text): a bag of words */
#define GPUIR_STRATEGY_TSQUERY	2	/* <@> (text, tsquery) */

/* gpuirtsquery.c: a tsquery's lexemes and row filter */
typedef struct GpuirTsQueryPlan GpuirTsQueryPlan;
extern GpuirTsQueryPlan *GpuirTsQueryPlanMake(TSQuery query, Relation index, GpuirMode mode,
											  const char *modename);
extern const GpuirQueryInput *GpuirTsQueryPlanInput(const GpuirTsQueryPlan *p, GpuirMode *mode);
extern void GpuirTsQueryPlanEnd(GpuirTsQueryPlan *p);
extern char *GpuirTsQueryKey(TSQuery query, int *len);
extern TSQuery GpuirTextAsTsquery(Oid cfg, const char *text, int len);

/* gpuirquery.c */
extern int	GpuirSearch(Relation index, Relation heap, Snapshot snapshot,
						const GpuirQueryInput *in, int k, GpuirMode mode,
						GpuirResult **results);
extern void GpuirSearchBatch(Relation index, Relation heap, Snapshot snapshot,
							 const GpuirQueryInput *in, int nq, int k, GpuirMode mode,
							 GpuirResult **results, int *counts);
extern int	GpuirQueryTerms(Relation index, Relation heap, const char *query, int querylen,
							char ***lexemes, int64 **dfs, float4 **idfs);


/*
 * GpuirBM25: the BM25 contribution of one term to one document, float32,
 * with the index's scoring constants: GpuirBM25Expr (gpuirlist.h), the
 * single CPU-side expression of the formula.
 */
static inline float4
GpuirBM25(float4 idf, uint32 tf, uint32 dl, const GpuirScoring *s)
{
	return GpuirBM25Expr(idf, tf, dl, s->k1, s->b, s->avgdl);
}

/*
 * GpuirBM25Bound: the same formula in double, for upper bounds: with tf the
 * largest and dl the smallest of a block or list, it bounds every document of
 * it since the formula grows with tf and falls with dl.  Callers multiply sums
 * of bounds by GPUIR_BOUND_SLACK before comparing with float32 scores.
 */
static inline double
GpuirBM25Bound(float4 idf, uint32 tf, uint32 dl, const GpuirScoring *s)
{
	double		tff = (double) tf;
	double		norm = (double) s->k1 * ((1.0 - s->b) + s->b * ((double) dl / s->avgdl));

	return (double) idf * (tff * (s->k1 + 1.0)) / (tff + norm);
}

/* ---------- AM callbacks ---------- */
extern char *gpuirbuildphasename(int64 phasenum);
extern IndexBuildResult *gpuirbuild(Relation heap, Relation index, IndexInfo *indexInfo);
extern void gpuirbuildempty(Relation index);
extern bool gpuirinsert(Relation index, Datum *values, bool *isnull, ItemPointer ht_ctid,
						Relation heapRel, IndexUniqueCheck checkUnique,
						bool indexUnchanged, IndexInfo *indexInfo);
extern IndexBulkDeleteResult *gpuirbulkdelete(IndexVacuumInfo *info,
											  IndexBulkDeleteResult *stats,
											  IndexBulkDeleteCallback callback,
											  void *callback_state);
extern IndexBulkDeleteResult *gpuirvacuumcleanup(IndexVacuumInfo *info,
												 IndexBulkDeleteResult *stats);
extern bytea *gpuiroptions(Datum reloptions, bool validate);
extern void gpuircostestimate(PlannerInfo *root, IndexPath *path, double loop_count,
							  Cost *indexStartupCost, Cost *indexTotalCost,
							  Selectivity *indexSelectivity, double *indexCorrelation,
							  double *indexPages);
extern bool gpuirvalidate(Oid opclassoid);
extern IndexScanDesc gpuirbeginscan(Relation index, int nkeys, int norderbys);
extern void gpuirrescan(IndexScanDesc scan, ScanKey scankey, int nscankeys,
						ScanKey orderbys, int norderbys);
extern bool gpuirgettuple(IndexScanDesc scan, ScanDirection dir);
extern void gpuirendscan(IndexScanDesc scan);

#endif							/* GPUIR_H */
