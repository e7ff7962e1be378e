/*
 * fuzz_codec.c: libFuzzer target for the gpuir posting block decoder.
 *
 * Input: 4 bytes little-endian prev docID (0xFFFFFFFF = a list's first
 * block), then the block bytes.  The decoder must never read outside the
 * block nor accept a block whose postings break the list invariants; a block
 * it accepts must survive encode -> decode unchanged, and the encoder must
 * not produce a longer block than the input (it picks the smallest layout).
 * GpuirCodecTf must stay inside any block GpuirCodecBlockBytes accepts.
 * Any violation aborts.
 */
#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t	prev;
	const uint8_t *in;
	size_t		len;
	uint8_t    *copy;
	long		total;
	int			n,
				nd,
				nt;
	uint32_t	docids[GPUIR_BLOCK_SIZE];
	uint32_t	tfs[GPUIR_BLOCK_SIZE];
	uint32_t	d2[GPUIR_BLOCK_SIZE];
	uint32_t	t2[GPUIR_BLOCK_SIZE];
	uint8_t    *enc;
	size_t		enclen;

	if (size < 4)
		return 0;
	prev = fuzz_load32(data);
	len = size - 4;
	/* own heap copy of exactly len bytes: ASan catches any read past it */
	copy = malloc(len ? len : 1);
	if (len)
		memcpy(copy, data + 4, len);
	in = copy;

	total = GpuirCodecBlockBytes(in, len);
	FUZZ_CHECK(total == GPUIR_CODEC_CORRUPT ||
			   (total >= GPUIR_BLOCK_HEADER && (size_t) total <= len &&
				total % 4 == 0 && total <= GPUIR_BLOCK_MAX_BYTES));

	n = GpuirCodecDecode(in, len, prev, docids, tfs);
	nd = GpuirCodecDecode(in, len, prev, d2, NULL);
	nt = GpuirCodecDecode(in, len, prev, NULL, t2);
	FUZZ_CHECK(n == GPUIR_CODEC_CORRUPT || (n >= 1 && n <= GPUIR_BLOCK_SIZE));
	{
		/*
		 * the query cursors' decoder, given GPUIR_CODEC_SLOP bytes after the
		 * block (ASan catches a read past them), answers the same where the
		 * header's length is the length given, and rejects the bytes
		 * otherwise (it takes exactly one block); given the header's length,
		 * it decodes what the plain decoder decodes
		 */
		int			exact = total >= 0 && (size_t) total == len;
		uint8_t    *pad = malloc(len + GPUIR_CODEC_SLOP);
		uint32_t	d3[GPUIR_BLOCK_SIZE];
		uint32_t	t3[GPUIR_BLOCK_SIZE];

		if (len)
			memcpy(pad, in, len);
		memset(pad + len, 0xA5, GPUIR_CODEC_SLOP);
		FUZZ_CHECK(GpuirCodecDecodePadded(pad, len, prev, d3, t3) ==
				   (exact ? n : GPUIR_CODEC_CORRUPT));
		if (exact && n > 0)
			FUZZ_CHECK(memcmp(d3, docids, n * sizeof(uint32_t)) == 0 &&
					   memcmp(t3, tfs, n * sizeof(uint32_t)) == 0);
		FUZZ_CHECK(GpuirCodecDecodePadded(pad, len, prev, d3, NULL) ==
				   (exact ? nd : GPUIR_CODEC_CORRUPT));
		FUZZ_CHECK(GpuirCodecDecodePadded(pad, len, prev, NULL, t3) ==
				   (exact ? nt : GPUIR_CODEC_CORRUPT));
		if (total >= 0)
		{
			FUZZ_CHECK(GpuirCodecDecodePadded(pad, (size_t) total, prev, d3, t3) == n);
			if (n > 0)
				FUZZ_CHECK(memcmp(d3, docids, n * sizeof(uint32_t)) == 0 &&
						   memcmp(t3, tfs, n * sizeof(uint32_t)) == 0);
		}
		free(pad);
	}
	if (total < 0)
	{
		FUZZ_CHECK(n == GPUIR_CODEC_CORRUPT && nd == GPUIR_CODEC_CORRUPT &&
				   nt == GPUIR_CODEC_CORRUPT);
		FUZZ_CHECK(GpuirCodecDecode(in, len, prev, NULL, NULL) == GPUIR_CODEC_CORRUPT);
		free(copy);
		return 0;
	}
	FUZZ_CHECK(GpuirCodecDecode(in, len, prev, NULL, NULL) == in[0] + 1);
	{
		/*
		 * The query path (gpuirengine.c) decodes only the docIDs, then reads
		 * tfs with GpuirCodecTf: on a block that passed GpuirCodecBlockBytes,
		 * that must stay inside the block's own bytes even when the tf section
		 * is corrupt (value unchecked then), and match a tf-section decode.
		 */
		uint8_t    *own = malloc((size_t) total);

		memcpy(own, in, (size_t) total);
		for (int i = 0; i < in[0] + 1; i++)
		{
			uint32_t	tf = GpuirCodecTf(own, i);

			if (nt > 0)
				FUZZ_CHECK(tf == t2[i]);
		}
		free(own);
	}
	if (n < 0)
	{
		/* the full decode fails iff one of the sections fails */
		FUZZ_CHECK(nd < 0 || nt < 0);
		free(copy);
		return 0;
	}
	FUZZ_CHECK(nd == n && nt == n);
	FUZZ_CHECK(n == in[0] + 1);
	fuzz_check_postings(n, prev, docids, tfs);
	FUZZ_CHECK(memcmp(d2, docids, n * sizeof(uint32_t)) == 0);
	FUZZ_CHECK(memcmp(t2, tfs, n * sizeof(uint32_t)) == 0);
	for (int i = 0; i < n; i++)
		FUZZ_CHECK(GpuirCodecTf(in, i) == tfs[i]);
	/* decoding only the block's own bytes gives the same result */
	FUZZ_CHECK(GpuirCodecDecode(in, (size_t) total, prev, d2, t2) == n);
	FUZZ_CHECK(memcmp(d2, docids, n * sizeof(uint32_t)) == 0);
	FUZZ_CHECK(memcmp(t2, tfs, n * sizeof(uint32_t)) == 0);

	/* round trip: re-encode into a worst-case-sized heap buffer */
	enc = malloc(GPUIR_BLOCK_MAX_BYTES);
	enclen = GpuirCodecEncode(docids, tfs, n, prev, enc);
	FUZZ_CHECK(enclen <= (size_t) total);	/* the encoder's layout is minimal */
	{
		uint8_t    *exact = malloc(enclen);
		uint8_t    *again = malloc(GPUIR_BLOCK_MAX_BYTES);
		size_t		againlen;

		memcpy(exact, enc, enclen);
		fuzz_check_block(exact, enclen, n, prev, docids, tfs);
		/* the encoding is canonical: same postings, same bytes */
		againlen = GpuirCodecEncode(docids, tfs, n, prev, again);
		FUZZ_CHECK(againlen == enclen && memcmp(again, exact, enclen) == 0);
		free(again);
		free(exact);
	}
	free(enc);
	free(copy);
	return 0;
}
