/*
 * fuzz_roundtrip.c: libFuzzer target for encode -> decode of gpuir posting
 * blocks.
 *
 * Input: 4 bytes little-endian prev docID (0xFFFFFFFF = a list's first
 * block), then per posting 10 bytes: gap bit width selector, tf bit width
 * selector (each mod 33), 4 bytes gap, 4 bytes tf-1 (both little-endian,
 * masked to their width).  At most 128 postings; the list stops before a
 * docID would reach 0xFFFFFFFF, and tf-1 = 0xFFFFFFFF is clamped.  The
 * postings are encoded, checked (length, header, decode of every variant,
 * GpuirCodecTf) and re-encoded to the same bytes.
 */
#include "fuzz_common.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t
masked(uint32_t v, int w)
{
	return w >= 32 ? v : (v & (((uint32_t) 1 << w) - 1));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t	prev;
	int64_t		cur;
	int			n = 0;
	uint32_t	docids[GPUIR_BLOCK_SIZE];
	uint32_t	tfs[GPUIR_BLOCK_SIZE];
	uint8_t    *enc;
	uint8_t    *exact;
	uint8_t    *again;
	size_t		len,
				againlen;

	if (size < 4)
		return 0;
	prev = fuzz_load32(data);
	cur = (prev == GPUIR_FIRST_PREV_DOCID) ? -1 : (int64_t) prev;
	data += 4;
	size -= 4;
	while (n < GPUIR_BLOCK_SIZE && size >= 10)
	{
		uint32_t	gap = masked(fuzz_load32(data + 2), data[0] % 33);
		uint32_t	tfm1 = masked(fuzz_load32(data + 6), data[1] % 33);

		if (cur + (int64_t) gap + 1 >= (int64_t) GPUIR_FIRST_PREV_DOCID)
			break;
		cur += (int64_t) gap + 1;
		docids[n] = (uint32_t) cur;
		tfs[n] = (tfm1 == UINT32_MAX) ? UINT32_MAX : tfm1 + 1;
		n++;
		data += 10;
		size -= 10;
	}
	if (n == 0)
		return 0;
	fuzz_check_postings(n, prev, docids, tfs);

	enc = malloc(GPUIR_BLOCK_MAX_BYTES);
	len = GpuirCodecEncode(docids, tfs, n, prev, enc);
	FUZZ_CHECK(len >= GPUIR_BLOCK_HEADER && len <= GPUIR_BLOCK_MAX_BYTES);
	exact = malloc(len);
	memcpy(exact, enc, len);
	fuzz_check_block(exact, len, n, prev, docids, tfs);

	again = malloc(GPUIR_BLOCK_MAX_BYTES);
	againlen = GpuirCodecEncode(docids, tfs, n, prev, again);
	FUZZ_CHECK(againlen == len && memcmp(again, exact, len) == 0);

	free(again);
	free(exact);
	free(enc);
	return 0;
}
