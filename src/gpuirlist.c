/*-------------------------------------------------------------------------
 *
 * gpuirlist.c
 *	  Encoder and reader checks of gpuir posting lists (gpuirlist.h).
 *
 * Pure C: linked into the backend, test/, bench/ and the fuzz targets.
 *
 *-------------------------------------------------------------------------
 */
#include "gpuirlist.h"

#include <string.h>

void
GpuirListEncoderInit(GpuirListEncoder *e, double k1, double b, double avgdl,
					 uint32_t payload_off)
{
	e->k1 = k1;
	e->b = b;
	e->avgdl = avgdl > 0.0 ? avgdl : 1.0;
	e->payload_off = payload_off;
	e->prev_docid = GPUIR_FIRST_PREV_DOCID;
	e->npostings = 0;
	e->nblocks = 0;
	e->max_tf = 0;
	e->min_dl = UINT32_MAX;
}

size_t
GpuirListEncodeBlock(GpuirListEncoder *e, const uint32_t *docs, const uint32_t *tfs,
					 const uint32_t *dls, int n, GpuirBlockHeader *bh, uint8_t *out)
{
	uint32_t	pairs[GPUIR_BLOCK_SIZE][2];
	uint32_t	prev = e->prev_docid;
	size_t		len;
	int			m;

	if (n < 1 || n > GPUIR_BLOCK_SIZE ||
		(e->npostings % GPUIR_BLOCK_SIZE) != 0)	/* a short block ended the list */
		return 0;
	for (int j = 0; j < n; j++)
	{
		/* strictly increasing, wrapping from GPUIR_FIRST_PREV_DOCID for the first */
		if ((uint32_t) (docs[j] - prev - 1) >= (uint32_t) (GPUIR_FIRST_PREV_DOCID - prev - 1) ||
			tfs[j] == 0)
			return 0;
		prev = docs[j];
		pairs[j][0] = tfs[j];
		pairs[j][1] = dls[j];
	}
	len = GpuirCodecEncode(docs, tfs, n, e->prev_docid, out);
	if ((uint64_t) e->payload_off + len > UINT32_MAX)
		return 0;

	/* the block's impacts; a frontier shorter than GPUIR_BLOCK_IMPACTS repeats its last pair */
	m = GpuirCodecBlockImpacts(pairs, n, GPUIR_BLOCK_IMPACTS, e->k1, e->b, e->avgdl);
	if (m < 1 || m > GPUIR_BLOCK_IMPACTS)
		return 0;
	for (int i = 0; i < GPUIR_BLOCK_IMPACTS; i++)
	{
		int			p = i < m ? i : m - 1;

		bh->impact_tf[i] = pairs[p][0];
		bh->impact_dl[i] = pairs[p][1];
	}
	for (int j = 0; j < n; j++)
	{
		if (tfs[j] > e->max_tf)
			e->max_tf = tfs[j];
		if (dls[j] < e->min_dl)
			e->min_dl = dls[j];
	}
	bh->last_docid = docs[n - 1];
	bh->payload_off = e->payload_off;
	e->payload_off += (uint32_t) len;
	e->prev_docid = docs[n - 1];
	e->npostings += (uint32_t) n;
	e->nblocks++;
	return len;
}

void
GpuirListEncoderFinish(const GpuirListEncoder *e, GpuirDictEntry *de)
{
	de->df = e->npostings;
	de->npostings = e->npostings;
	de->nblocks = e->nblocks;
	de->max_tf = e->max_tf;
	de->min_dl = e->min_dl;
}

const char *
GpuirListCheckEncoded(const uint8_t *out, size_t len, uint32_t prev_docid,
					  const GpuirBlockHeader *bh, const uint32_t *docs,
					  const uint32_t *tfs, const uint32_t *dls, int n)
{
	uint32_t	d[GPUIR_BLOCK_SIZE];
	uint32_t	t[GPUIR_BLOCK_SIZE];
	const char *why;

	if (len % 4 != 0 || len > GPUIR_BLOCK_MAX_BYTES)
		return "block length is not a multiple of 4 within the maximum";
	why = GpuirListDecodeBlock(out, (uint32_t) len, prev_docid, bh, n, d, t, 0);
	if (why != NULL)
		return why;
	for (int j = 0; j < n; j++)
	{
		int			bounded = 0;

		if (d[j] != docs[j] || t[j] != tfs[j] || GpuirCodecTf(out, j) != tfs[j])
			return "a decoded posting differs from the one encoded";
		for (int i = 0; i < GPUIR_BLOCK_IMPACTS; i++)
			bounded |= bh->impact_tf[i] >= tfs[j] && bh->impact_dl[i] <= dls[j];
		if (!bounded)
			return "a posting is above the block's impacts";
	}
	return NULL;
}

const char *
GpuirListCheckEntry(const GpuirDictEntry *de, uint32_t seg_nblocks)
{
	if (de->npostings == 0)
		return "dictionary entry has no postings";
	if (de->nblocks != GpuirListBlocks(de->npostings))
		return "dictionary entry's block count does not match its postings";
	if ((uint64_t) de->first_block + de->nblocks > seg_nblocks)
		return "dictionary entry's blocks are outside the block directory";
	return NULL;
}

const char *
GpuirListCheckHeader(const GpuirBlockHeader *bh, const GpuirBlockHeader *prev,
					 uint32_t end, uint32_t ndocs)
{
	if (bh->payload_off % 4 != 0 || end % 4 != 0 || bh->payload_off > end ||
		end - bh->payload_off < GPUIR_BLOCK_HEADER ||
		end - bh->payload_off > GPUIR_BLOCK_MAX_BYTES)
		return "block directory offsets out of range";
	if (bh->last_docid >= ndocs)
		return "block last docID is not below the segment's document count";
	if (prev != NULL && bh->last_docid <= prev->last_docid)
		return "block last docIDs are not increasing";
	return NULL;
}

/* block_length: NULL when the header of the block at enc gives its extent's length len */
static const char *
block_length(const uint8_t *enc, uint32_t len)
{
	if (GpuirCodecBlockBytes(enc, len) != (long) len)
		return "block length differs from the block directory's";
	return NULL;
}

const char *
GpuirListDecodeBlock(const uint8_t *enc, uint32_t len, uint32_t prev_docid,
					 const GpuirBlockHeader *bh, int expect, uint32_t *docs, uint32_t *tfs,
					 int padded)
{
	const char *why;
	int			n;

	/* the padded decoder checks the length itself: the header read once */
	if (!padded && (why = block_length(enc, len)) != NULL)
		return why;
	n = padded ? GpuirCodecDecodePadded(enc, len, prev_docid, docs, tfs) :
		GpuirCodecDecode(enc, len, prev_docid, docs, tfs);
	if (n < 0 && padded && (why = block_length(enc, len)) != NULL)
		return why;
	if (n < 0 || (tfs == NULL && GpuirCodecCheckTf(enc) != GPUIR_CODEC_OK))
		return "posting block does not decode";
	if (n != expect)
		return "posting block holds another number of postings than its list";
	if (docs[n - 1] != bh->last_docid)
		return "posting block's last docID differs from its header";
	return NULL;
}

const char *
GpuirListCheckLengths(const uint8_t *payload, const GpuirBlockHeader *dir, uint32_t nblocks,
					  uint32_t end, uint32_t *bad)
{
	for (uint32_t i = 0; i < nblocks; i++)
	{
		uint32_t	off = dir[i].payload_off - dir[0].payload_off;
		uint32_t	len = ((i + 1 < nblocks) ? dir[i + 1].payload_off : end) - dir[i].payload_off;
		const char *why = block_length(payload + off, len);

		if (why != NULL)
		{
			*bad = i;
			return why;
		}
	}
	return NULL;
}
