/*-------------------------------------------------------------------------
 *
 * gpuirlistread.c
 *	  The one reader of gpuir posting lists in the backend: a cursor over a
 *	  term's blocks in one segment (headers, skip to a docID, decode,
 *	  block-max impacts).  Query, merge, VACUUM and gpuir_verify read lists
 *	  through it, so that the same damage gets the same error everywhere:
 *	  ERRCODE_INDEX_CORRUPTED naming the segment, the list and the block.
 *
 * The rules are gpuirlist.h's (GpuirListCheckEntry, GpuirListCheckHeader,
 * GpuirListDecodeBlock), shared with the GPU worker's upload.  Every header
 * of the list is checked when the cursor opens, since WAND and BMW skip
 * blocks by their headers alone; a block's bytes are checked when it is
 * decoded.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"

#include "gpuir.h"

/* list_corrupt: raise ERRCODE_INDEX_CORRUPTED for block blk of c's list */
static void
list_corrupt(const GpuirListCursor *c, int64 blk, const char *what)
pg_attribute_noreturn();

static void
list_corrupt(const GpuirListCursor *c, int64 blk, const char *what)
{
	if (blk < 0)
		GpuirCorrupt(c->index, psprintf("segment %u, list at block %u: %s",
										c->segno, c->first_block, what));
	GpuirCorrupt(c->index, psprintf("segment %u, list at block %u, block %lld of %u: %s",
									c->segno, c->first_block, (long long) blk,
									c->nblocks, what));
}

/*
 * GpuirListDirLength: how many block headers a list's cursor reads, those
 * of its blocks and the next one (whose offset ends the last block) where
 * the segment has one; de must have passed GpuirListCheckEntry
 */
uint32
GpuirListDirLength(const GpuirSegmentData *seg, const GpuirDictEntry *de)
{
	return de->nblocks + ((de->first_block + de->nblocks < seg->nblocks) ? 1 : 0);
}

/*
 * GpuirListReadDir: read the GpuirListDirLength(seg, de) headers of de's
 * list in seg from the BLOCKDIR stream into dir; de must have passed
 * GpuirListCheckEntry (GpuirListOpen checks the headers)
 */
void
GpuirListReadDir(Relation index, const GpuirSegmentData *seg, const GpuirDictEntry *de,
				 GpuirBlockHeader *dir)
{
	GpuirStreamReader r;

	GpuirStreamReaderInit(&r, index, seg, GPUIR_S_BLOCKDIR);
	GpuirStreamRead(&r, de->first_block * sizeof(GpuirBlockHeader), dir,
					GpuirListDirLength(seg, de) * sizeof(GpuirBlockHeader));
	GpuirStreamReaderEnd(&r);
}

/*
 * GpuirListOpen: a cursor over the list of dictionary entry de in segment
 * seg (number segno of the metapage's directory, for messages).  segdir is
 * the segment's whole block directory when the caller has read it (merge,
 * VACUUM, gpuir_verify walk every list), listdir the list's own
 * GpuirListDirLength headers when the caller has them (a query, from the
 * session's cache of short lists' headers), else both NULL: the list's
 * headers are read from the BLOCKDIR stream.  Checks the entry and every
 * header (GpuirListCheckEntry, GpuirListCheckHeader); no block is decoded
 * yet.
 */
void
GpuirListOpen(GpuirListCursor *c, Relation index, const GpuirSegmentData *seg,
			  uint32 segno, const GpuirDictEntry *de, const GpuirBlockHeader *segdir,
			  const GpuirBlockHeader *listdir)
{
	uint32		payload_len = seg->streams[GPUIR_S_PAYLOAD].nbytes;
	uint32		nread;
	const char *why;

	c->index = index;
	c->segno = segno;
	c->first_block = de->first_block;
	c->nblocks = de->nblocks;
	c->npostings = de->npostings;
	why = GpuirListCheckEntry(de, seg->nblocks);
	if (why != NULL)
		list_corrupt(c, -1, why);

	/* the list's headers plus the next one, whose offset ends the last block */
	nread = GpuirListDirLength(seg, de);
	if (segdir != NULL)
	{
		c->dir = (GpuirBlockHeader *) segdir + de->first_block;
		c->own_dir = false;
	}
	else if (listdir != NULL)
	{
		c->dir = (GpuirBlockHeader *) listdir;
		c->own_dir = false;
	}
	else
	{
		c->dir = palloc(sizeof(GpuirBlockHeader) * nread);
		c->own_dir = true;
		GpuirListReadDir(index, seg, de, c->dir);
	}
	c->ends = palloc(sizeof(uint32) * c->nblocks);
	for (uint32 i = 0; i < c->nblocks; i++)
	{
		c->ends[i] = (i + 1 < nread) ? c->dir[i + 1].payload_off : payload_len;
		why = GpuirListCheckHeader(&c->dir[i], i > 0 ? &c->dir[i - 1] : NULL,
								   c->ends[i], seg->ndocs);
		if (why != NULL)
			list_corrupt(c, i, why);
	}
	GpuirStreamReaderInit(&c->payload, index, seg, GPUIR_S_PAYLOAD);
	c->decoded = -1;
	c->n = 0;
	c->ndecoded = 0;
	c->has_tfs = false;
}

/*
 * GpuirListDecode: decode block blk (0-based within the list) into c->docs,
 * and into c->tfs when with_tfs (else its tfs are read one at a time with
 * GpuirListTf); returns its number of postings.  The block's bytes stay in
 * c->enc, which has GPUIR_CODEC_SLOP bytes after them for
 * GpuirCodecDecodePadded.  A block already decoded is not decoded again.
 */
int
GpuirListDecode(GpuirListCursor *c, uint32 blk, bool with_tfs)
{
	uint32		off;
	uint32		len;
	const char *why;

	Assert(blk < c->nblocks);
	if (c->decoded == (int64) blk && (c->has_tfs || !with_tfs))
		return c->n;
	off = c->dir[blk].payload_off;
	len = c->ends[blk] - off;	/* checked by GpuirListOpen */
	GpuirStreamRead(&c->payload, off, c->enc, len);
	why = GpuirListDecodeBlock(c->enc, len,
							   blk > 0 ? c->dir[blk - 1].last_docid : GPUIR_FIRST_PREV_DOCID,
							   &c->dir[blk], GpuirListBlockPostings(c->npostings, blk),
							   c->docs, with_tfs ? c->tfs : NULL, 1);
	if (why != NULL)
		list_corrupt(c, blk, why);
	if (!with_tfs)
		GpuirCodecTfReaderInit(c->enc, &c->tfr);
	c->decoded = blk;
	c->has_tfs = with_tfs;
	c->n = GpuirListBlockPostings(c->npostings, blk);
	c->ndecoded++;
	return c->n;
}

/*
 * GpuirListSeek: the first block from block from on whose last docID is at
 * least target (binary search over the headers, no block decoded), or
 * nblocks when the list ends before target.
 */
uint32
GpuirListSeek(const GpuirListCursor *c, uint32 from, uint32 target)
{
	uint32		lo = from,
				hi = c->nblocks;

	while (lo < hi)
	{
		uint32		mid = lo + (hi - lo) / 2;

		if (c->dir[mid].last_docid < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* GpuirListClose: release the cursor's page and memory */
void
GpuirListClose(GpuirListCursor *c)
{
	GpuirStreamReaderEnd(&c->payload);
	if (c->own_dir)
		pfree(c->dir);
	pfree(c->ends);
	c->dir = NULL;
	c->ends = NULL;
}
