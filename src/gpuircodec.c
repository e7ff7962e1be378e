/*-------------------------------------------------------------------------
 *
 * gpuircodec.c
 *	  Encoder and decoder of gpuir posting blocks (layout in gpuircodec.h).
 *
 * Pure C: shared by the backend, test/test_codec.c and the CUDA host code.
 *
 *-------------------------------------------------------------------------
 */
#include "gpuircodec.h"

#include <stdlib.h>
#include <string.h>
/*
 * SSE2 for the d-gap prefix sums and tf + 1 where the compiler has it;
 * GPUIR_CODEC_NO_SIMD builds the scalar loops alone (test/test_codec_scalar
 * checks them as test_codec checks the SIMD ones)
 */
#if defined(__SSE2__) && !defined(GPUIR_CODEC_NO_SIMD)
#define GPUIR_CODEC_SSE2 1
#include <emmintrin.h>
#endif
/*
 * AVX2 unpackers on x86-64 with GCC or clang, compiled for AVX2 whatever
 * -march the server was built with and chosen at run time (unpack_avx2);
 * not with GPUIR_CODEC_NO_SIMD
 */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(GPUIR_CODEC_NO_SIMD)
#define GPUIR_CODEC_AVX2 1
#include <immintrin.h>
#endif

/* bytes of a section of n values of width w with e exceptions of width h */
static inline size_t
section_bytes(int n, int w, int e, int h)
{
	return 4 * (((size_t) n * w + 31) / 32) + (((size_t) e + 3) & ~(size_t) 3) +
		4 * (((size_t) e * h + 31) / 32);
}

static inline int
bit_width(uint32_t v)
{
	return v == 0 ? 0 : 32 - __builtin_clz(v);
}

static inline void
store32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
	p[2] = (uint8_t) (v >> 16);
	p[3] = (uint8_t) (v >> 24);
}

/* pack n values of w bits LSB-first into 32-bit words at out; returns bytes */
static size_t
pack_bits(const uint32_t *vals, int n, int w, uint8_t *out)
{
	size_t		nwords = ((size_t) n * w + 31) / 32;
	uint64_t	acc = 0;
	int			accbits = 0;
	size_t		word = 0;
	uint64_t	mask = (w == 32) ? 0xFFFFFFFFu : (((uint64_t) 1 << w) - 1);

	if (w == 0)
		return 0;
	for (int i = 0; i < n; i++)
	{
		acc |= ((uint64_t) vals[i] & mask) << accbits;
		accbits += w;
		if (accbits >= 32)
		{
			store32(out + 4 * word++, (uint32_t) acc);
			acc >>= 32;
			accbits -= 32;
		}
	}
	if (accbits > 0)
		store32(out + 4 * word++, (uint32_t) acc);
	return 4 * nwords;
}

/*
 * Encode one section: choose the width with the smallest encoded size,
 * write words, exception positions and exception high bits.  Writes the
 * three header bytes (w, e, h) to hdr[0..2].
 */
static size_t
encode_section(const uint32_t *vals, int n, uint8_t *hdr, uint8_t *out)
{
	int			hist[33] = {0};
	int			maxbw = 0;
	int			best_w = 0;
	size_t		best_size = (size_t) -1;
	int			gt = 0;			/* values wider than w */
	uint32_t	high[GPUIR_BLOCK_SIZE];
	uint8_t		pos[GPUIR_BLOCK_SIZE];
	int			e = 0;
	size_t		len;

	for (int i = 0; i < n; i++)
	{
		int			bw = bit_width(vals[i]);

		hist[bw]++;
		if (bw > maxbw)
			maxbw = bw;
	}
	/* walk w downward from maxbw, counting values wider than w */
	for (int w = maxbw; w >= 0; w--)
	{
		size_t		size;

		if (w < maxbw)
			gt += hist[w + 1];
		size = section_bytes(n, w, gt, gt ? maxbw - w : 0);
		if (size <= best_size)
		{
			best_size = size;
			best_w = w;
		}
	}

	for (int i = 0; i < n; i++)
	{
		if (best_w < 32 && (vals[i] >> best_w) != 0)
		{
			pos[e] = (uint8_t) i;
			high[e] = vals[i] >> best_w;
			e++;
		}
	}
	hdr[0] = (uint8_t) best_w;
	hdr[1] = (uint8_t) e;
	hdr[2] = (uint8_t) (e ? maxbw - best_w : 0);

	len = pack_bits(vals, n, best_w, out);
	if (e > 0)
	{
		size_t		padded = ((size_t) e + 3) & ~(size_t) 3;

		memcpy(out + len, pos, e);
		memset(out + len + e, 0, padded - e);
		len += padded;
		len += pack_bits(high, e, hdr[2], out + len);
	}
	return len;
}

size_t
GpuirCodecEncode(const uint32_t *docids, const uint32_t *tfs, int n,
				 uint32_t prev_docid, uint8_t *out)
{
	uint32_t	gaps[GPUIR_BLOCK_SIZE];
	uint32_t	tfm1[GPUIR_BLOCK_SIZE];
	uint32_t	prev = prev_docid;
	size_t		len = GPUIR_BLOCK_HEADER;

	for (int i = 0; i < n; i++)
	{
		gaps[i] = docids[i] - prev - 1;
		prev = docids[i];
		tfm1[i] = tfs[i] - 1;
	}
	out[0] = (uint8_t) (n - 1);
	out[7] = 0;
	len += encode_section(gaps, n, out + 1, out + len);
	len += encode_section(tfm1, n, out + 4, out + len);
	return len;
}

/*
 * Validate and measure one section starting at in[off]; returns its byte
 * length or GPUIR_CODEC_CORRUPT.
 */
static long
section_check(size_t len, size_t off, int n,
			  int w, int e, int h)
{
	size_t		size;

	if (!GpuirCodecSectionSound(n, w, e, h))
		return GPUIR_CODEC_CORRUPT;
	size = section_bytes(n, w, e, h);
	if (off > len || size > len - off)
		return GPUIR_CODEC_CORRUPT;
	return (long) size;
}

long
GpuirCodecBlockBytes(const uint8_t *in, size_t len)
{
	int			n;
	long		gsize,
				tsize;

	if (len < GPUIR_BLOCK_HEADER)
		return GPUIR_CODEC_CORRUPT;
	n = in[0] + 1;
	if (n > GPUIR_BLOCK_SIZE || in[7] != 0)
		return GPUIR_CODEC_CORRUPT;
	gsize = section_check(len, GPUIR_BLOCK_HEADER, n, in[1], in[2], in[3]);
	if (gsize < 0)
		return GPUIR_CODEC_CORRUPT;
	tsize = section_check(len, GPUIR_BLOCK_HEADER + gsize, n, in[4], in[5], in[6]);
	if (tsize < 0)
		return GPUIR_CODEC_CORRUPT;
	return GPUIR_BLOCK_HEADER + gsize + tsize;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/*
 * unpack_w<W>: groups of 8 values W bits wide (W bytes a group), with W a
 * constant, so each value is a load at a constant offset, a constant shift
 * and a mask (the scalar unpackers of Lemire & Boytsov, "Decoding billions
 * of integers per second through vectorization", 2015, section 4).  Every
 * load reads 8 bytes from value i's first byte: the caller passes only groups
 * whose loads stay inside readable bytes (UNPACK_REACH).
 */
#define UNPACK_ONE(W, i) \
	do { \
		uint64_t	v_; \
		memcpy(&v_, p + ((i) * (W)) / 8, 8); \
		o[i] = (uint32_t) ((v_ >> (((i) * (W)) % 8)) & (((uint64_t) 1 << (W)) - 1)); \
	} while (0)
#define UNPACK_FN(W) \
static void \
unpack_w##W(const uint8_t *words, int groups, uint32_t *vals) \
{ \
	for (int g = 0; g < groups; g++) \
	{ \
		const uint8_t *p = words + (size_t) g * (W); \
		uint32_t   *o = vals + 8 * g; \
		UNPACK_ONE(W, 0); UNPACK_ONE(W, 1); UNPACK_ONE(W, 2); UNPACK_ONE(W, 3); \
		UNPACK_ONE(W, 4); UNPACK_ONE(W, 5); UNPACK_ONE(W, 6); UNPACK_ONE(W, 7); \
	} \
}
UNPACK_FN(1) UNPACK_FN(2) UNPACK_FN(3) UNPACK_FN(4) UNPACK_FN(5) UNPACK_FN(6)
UNPACK_FN(7) UNPACK_FN(8) UNPACK_FN(9) UNPACK_FN(10) UNPACK_FN(11) UNPACK_FN(12)
UNPACK_FN(13) UNPACK_FN(14) UNPACK_FN(15) UNPACK_FN(16) UNPACK_FN(17) UNPACK_FN(18)
UNPACK_FN(19) UNPACK_FN(20) UNPACK_FN(21) UNPACK_FN(22) UNPACK_FN(23) UNPACK_FN(24)
UNPACK_FN(25) UNPACK_FN(26) UNPACK_FN(27) UNPACK_FN(28) UNPACK_FN(29) UNPACK_FN(30)
UNPACK_FN(31) UNPACK_FN(32)

static void (*const unpack_groups[33]) (const uint8_t *words, int groups, uint32_t *vals) = {
	NULL, unpack_w1, unpack_w2, unpack_w3, unpack_w4, unpack_w5, unpack_w6, unpack_w7,
	unpack_w8, unpack_w9, unpack_w10, unpack_w11, unpack_w12, unpack_w13, unpack_w14,
	unpack_w15, unpack_w16, unpack_w17, unpack_w18, unpack_w19, unpack_w20, unpack_w21,
	unpack_w22, unpack_w23, unpack_w24, unpack_w25, unpack_w26, unpack_w27, unpack_w28,
	unpack_w29, unpack_w30, unpack_w31, unpack_w32
};

/* the bytes from a group's start that its scalar loads reach: (7 w) / 8 + 8 */
#define UNPACK_REACH_SCALAR(w)	((size_t) (7 * (w)) / 8 + 8)

#ifdef GPUIR_CODEC_AVX2
/*
 * AVX2 unpacking of the values up to UNPACK_AVX2_MAX_W bits wide, 8 values
 * (one group, w bytes) an iteration: the 16 bytes from the group's start
 * and the 16 from its byte w / 2 (where value 4 starts) are the two
 * 128-bit lanes; one byte shuffle puts each value's 4 bytes into its 32-bit
 * lane (value j starts at byte (j w) / 8 at bit (j w) % 8, and with w <= 25
 * its bits lie within those 4 bytes), a shift by lane and a mask finish it.
 * The horizontal layout's counterpart of Lemire & Boytsov's SIMD unpackers
 * (section 5), as in Willhalm et al., "SIMD-scan" (VLDB 2009).  The
 * shuffles and shifts by width are compile-time tables.  Runs only where
 * the CPU has AVX2 (__builtin_cpu_supports, checked at each call: a load
 * and a test).
 */
#define UNPACK_AVX2_MAX_W	25
/* the bytes from a group's start that its AVX2 loads reach: w / 2 + 16 */
#define UNPACK_REACH_AVX2(w)	((size_t) (w) / 2 + 16)

/* byte k (0..3) of value j's 32-bit lane: its offset in j's 128-bit lane */
#define AVX2_SB(w, j, k)	((uint8_t) (((j) * (w)) / 8 - ((j) / 4) * ((w) / 2) + (k)))
#define AVX2_SV(w, j)		AVX2_SB(w, j, 0), AVX2_SB(w, j, 1), AVX2_SB(w, j, 2), AVX2_SB(w, j, 3)
#define AVX2_SHUF(w) \
	{ AVX2_SV(w, 0), AVX2_SV(w, 1), AVX2_SV(w, 2), AVX2_SV(w, 3), \
	  AVX2_SV(w, 4), AVX2_SV(w, 5), AVX2_SV(w, 6), AVX2_SV(w, 7) }
#define AVX2_SHIFT(w) \
	{ 0, (w) % 8, (2 * (w)) % 8, (3 * (w)) % 8, (4 * (w)) % 8, (5 * (w)) % 8, \
	  (6 * (w)) % 8, (7 * (w)) % 8 }
#define AVX2_ROWS(X) \
	X(0), X(1), X(2), X(3), X(4), X(5), X(6), X(7), X(8), X(9), X(10), X(11), X(12), \
	X(13), X(14), X(15), X(16), X(17), X(18), X(19), X(20), X(21), X(22), X(23), X(24), X(25)

static const uint8_t avx2_shuf[UNPACK_AVX2_MAX_W + 1][32] __attribute__((aligned(32))) = {
	AVX2_ROWS(AVX2_SHUF)
};
static const uint32_t avx2_shift[UNPACK_AVX2_MAX_W + 1][8] __attribute__((aligned(32))) = {
	AVX2_ROWS(AVX2_SHIFT)
};

__attribute__((target("avx2")))
static void
unpack_avx2(const uint8_t *words, int groups, uint32_t *vals, int w)
{
	const __m256i shuf = _mm256_load_si256((const __m256i *) avx2_shuf[w]);
	const __m256i shift = _mm256_load_si256((const __m256i *) avx2_shift[w]);
	const __m256i mask = _mm256_set1_epi32((int) ((1u << w) - 1));
	const size_t half = (size_t) w / 2;

	for (int g = 0; g < groups; g++)
	{
		const uint8_t *p = words + (size_t) g * w;
		__m256i		v;

		v = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *) p)),
									_mm_loadu_si128((const __m128i *) (p + half)), 1);
		v = _mm256_shuffle_epi8(v, shuf);
		v = _mm256_srlv_epi32(v, shift);
		_mm256_storeu_si256((__m256i *) (vals + 8 * g), _mm256_and_si256(v, mask));
	}
}

/* whether w bits wide values are unpacked with AVX2 here */
static inline int
use_avx2(int w)
{
	return w <= UNPACK_AVX2_MAX_W && __builtin_cpu_supports("avx2");
}
#endif							/* GPUIR_CODEC_AVX2 */

/* the first groups 8-value groups of words, w bits each, into vals */
static inline void
unpack_some(const uint8_t *words, int groups, uint32_t *vals, int w, int avx2)
{
#ifdef GPUIR_CODEC_AVX2
	if (avx2)
	{
		unpack_avx2(words, groups, vals, w);
		return;
	}
#endif
	(void) avx2;
	unpack_groups[w] (words, groups, vals);
}
#endif

/*
 * unpack: the n values (n <= GPUIR_BLOCK_SIZE) of a section's words, w bits
 * each, into vals.  On a little-endian machine (the format's byte order)
 * groups of 8 values are unpacked with wide unaligned loads (unpack_avx2 or
 * unpack_w<w>), which read up to UNPACK_REACH bytes from a group's start.
 * With padded, GPUIR_CODEC_SLOP readable bytes follow the words (whatever
 * comes after them in the block, then the caller's slop), and every group
 * is unpacked in place, the last one writing up to vals[8 ceil(n / 8) - 1].
 * Otherwise the groups whose loads stay inside the words are unpacked in
 * place and the rest from a zero-padded copy of the words' tail, the last
 * partial group into a scratch array.  Elsewhere, value by value
 * (GpuirCodecUnpackOne).
 */
static inline void
unpack(const uint8_t *words, int n, int w, uint32_t *vals, int padded)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const size_t wbytes = 4 * (((size_t) n * w + 31) / 32);
	int			avx2 = 0;
	size_t		reach;
	int			groups;
	int			i;

	if (w == 0)
	{
		memset(vals, 0, sizeof(uint32_t) * n);
		return;
	}
#ifdef GPUIR_CODEC_AVX2
	avx2 = use_avx2(w);
#endif
	/*
	 * padded: the last group starts at most (n - 1) w / 8 bytes in and
	 * reaches at most (7 w) / 8 + 8 bytes further (scalar), or w / 2 + 16
	 * (AVX2, w <= 25), so at most 6 w / 8 + 8 <= 32, or 3 w / 8 + 16 < 26,
	 * bytes after byte n w / 8 <= wbytes
	 */
	if (padded)
	{
		unpack_some(words, (n + 7) / 8, vals, w, avx2);
		return;
	}
	reach = UNPACK_REACH_SCALAR(w);
#ifdef GPUIR_CODEC_AVX2
	if (avx2 && UNPACK_REACH_AVX2(w) > reach)
		reach = UNPACK_REACH_AVX2(w);
#endif
	/* group g's loads end at g w + reach <= wbytes */
	groups = wbytes < reach ? 0 : (int) ((wbytes - reach) / (size_t) w + 1);
	if (groups > n / 8)
		groups = n / 8;
	unpack_some(words, groups, vals, w, avx2);
	i = 8 * groups;
	if (i < n)
	{
		/*
		 * fewer than reach (<= 36) bytes are left after group groups - 1's
		 * start + w, and a group reads at most reach bytes from its start:
		 * all inside tail
		 */
		const size_t first = (size_t) groups * w;
		const int	whole = (n - i) / 8;
		uint8_t		tail[128] = {0};
		uint32_t	last[8];

		memcpy(tail, words + first, wbytes - first);
		unpack_some(tail, whole, vals + i, w, avx2);
		i += 8 * whole;
		if (i < n)
		{
			unpack_some(tail + (size_t) whole * w, 1, last, w, avx2);
			memcpy(vals + i, last, sizeof(uint32_t) * (n - i));
		}
	}
#else
	(void) padded;
	for (int i = 0; i < n; i++)
		vals[i] = GpuirCodecUnpackOne(words, i, w);
#endif
}

/* unpack and patch one validated section into vals[0..n) */
static inline int
decode_section(const uint8_t *sec, int n, int w, int e, int h, uint32_t *vals, int padded)
{
	const uint8_t *pos = sec + 4 * (((size_t) n * w + 31) / 32);
	const uint8_t *high = pos + (((size_t) e + 3) & ~(size_t) 3);
	int			last = -1;

	unpack(sec, n, w, vals, padded);
	for (int j = 0; j < e; j++)
	{
		if (pos[j] >= n || (int) pos[j] <= last)
			return GPUIR_CODEC_CORRUPT;
		last = pos[j];
		vals[pos[j]] |= GpuirCodecUnpackOne(high, j, h) << w;
	}
	return GPUIR_CODEC_OK;
}

/*
 * gaps_to_docids: turn the n d-gaps (each docID minus its predecessor,
 * minus 1) in vals, each below 2^bits, into docIDs after prev_docid
 * (GPUIR_FIRST_PREV_DOCID: the first docID is its gap).
 * GPUIR_CODEC_CORRUPT when a docID would reach GPUIR_FIRST_PREV_DOCID.
 * When even n gaps of 2^bits - 1 cannot get there (the common case: a
 * segment's docIDs are far below 2^32 and gaps far below 2^32 / 128), the
 * 32-bit prefix sums (four at a time with SSE2: two shifted adds, then the
 * carry) cannot wrap; otherwise the gaps' sum is taken in 64 bits beside
 * them, so that when it passes they have not wrapped.
 */
static inline int
gaps_to_docids(uint32_t *vals, int n, uint32_t prev_docid, int bits)
{
	int64_t		start = (prev_docid == GPUIR_FIRST_PREV_DOCID) ? -1 : (int64_t) prev_docid;
	const int	checked = start + ((int64_t) n << bits) < (int64_t) GPUIR_FIRST_PREV_DOCID;
	uint64_t	gaps = 0;
	uint32_t	cur = prev_docid;	/* mod 2^32: FIRST_PREV + gap + 1 = gap */
	int			i = 0;

#ifdef GPUIR_CODEC_SSE2
	{
		const __m128i one = _mm_set1_epi32(1);
		const __m128i zero = _mm_setzero_si128();
		__m128i		carry = _mm_set1_epi32((int) cur);
		__m128i		sum = zero;

		for (; i + 4 <= n; i += 4)
		{
			__m128i		g = _mm_loadu_si128((const __m128i *) (vals + i));
			__m128i		v = _mm_add_epi32(g, one);

			if (!checked)
			{
				sum = _mm_add_epi64(sum, _mm_unpacklo_epi32(g, zero));
				sum = _mm_add_epi64(sum, _mm_unpackhi_epi32(g, zero));
			}
			v = _mm_add_epi32(v, _mm_slli_si128(v, 4));
			v = _mm_add_epi32(v, _mm_slli_si128(v, 8));
			v = _mm_add_epi32(v, carry);
			_mm_storeu_si128((__m128i *) (vals + i), v);
			carry = _mm_shuffle_epi32(v, 0xFF);
		}
		if (i > 0)
		{
			uint64_t	two[2];

			_mm_storeu_si128((__m128i *) two, sum);
			gaps = two[0] + two[1];
			cur = vals[i - 1];
		}
	}
#endif
	for (; i < n; i++)
	{
		gaps += vals[i];
		cur += vals[i] + 1;
		vals[i] = cur;
	}
	if (checked)
		return GPUIR_CODEC_OK;
	/* docIDs rise, so the last is checked for all (no 64-bit overflow) */
	if (start + (int64_t) gaps + n >= (int64_t) GPUIR_FIRST_PREV_DOCID)
		return GPUIR_CODEC_CORRUPT;
	return GPUIR_CODEC_OK;
}

/*
 * GpuirCodecDecode and GpuirCodecDecodePadded (padded: GPUIR_CODEC_SLOP
 * bytes after the block, which is exactly in[0..len))
 */
static inline int
decode_block(const uint8_t *in, size_t len, uint32_t prev_docid,
			 uint32_t *docids, uint32_t *tfs, int padded)
{
	long		total = GpuirCodecBlockBytes(in, len);
	int			n;
	const uint8_t *gsec;
	const uint8_t *tsec;

	if (total < 0 || (padded && (size_t) total != len))
		return GPUIR_CODEC_CORRUPT;
	n = in[0] + 1;
	gsec = in + GPUIR_BLOCK_HEADER;
	tsec = gsec + section_bytes(n, in[1], in[2], in[3]);

	if (docids)
	{
		/* a gap is below 2^(w + h) with exceptions (w + h <= 32), else 2^w */
		int			bits = in[1] + (in[2] > 0 ? in[3] : 0);

		if (decode_section(gsec, n, in[1], in[2], in[3], docids, padded) != GPUIR_CODEC_OK)
			return GPUIR_CODEC_CORRUPT;
		if (gaps_to_docids(docids, n, prev_docid, bits) != GPUIR_CODEC_OK)
			return GPUIR_CODEC_CORRUPT;
	}
	if (tfs)
	{
		uint32_t	wrapped = 0;
		int			i = 0;

		if (decode_section(tsec, n, in[4], in[5], in[6], tfs, padded) != GPUIR_CODEC_OK)
			return GPUIR_CODEC_CORRUPT;
#ifdef GPUIR_CODEC_SSE2
		for (; i + 4 <= n; i += 4)
			_mm_storeu_si128((__m128i *) (tfs + i),
							 _mm_add_epi32(_mm_loadu_si128((const __m128i *) (tfs + i)),
										   _mm_set1_epi32(1)));
#endif
		for (; i < n; i++)
			tfs[i] += 1;
		/* only a value of w + h >= 32 bits can have been UINT32_MAX */
		if (in[4] + in[6] >= 32)
		{
			for (int j = 0; j < n; j++)
				wrapped |= (tfs[j] == 0);
			if (wrapped)
				return GPUIR_CODEC_CORRUPT;
		}
	}
	return n;
}

int
GpuirCodecDecode(const uint8_t *in, size_t len, uint32_t prev_docid,
				 uint32_t *docids, uint32_t *tfs)
{
	return decode_block(in, len, prev_docid, docids, tfs, 0);
}

int
GpuirCodecDecodePadded(const uint8_t *in, size_t len, uint32_t prev_docid,
					   uint32_t *docids, uint32_t *tfs)
{
	return decode_block(in, len, prev_docid, docids, tfs, 1);
}
void
GpuirCodecTfReaderInit(const uint8_t *in, GpuirCodecTfReader *r)
{
	int			n = in[0] + 1;

	r->w = in[4];
	r->e = in[5];
	r->h = in[6];
	r->words = in + GPUIR_BLOCK_HEADER + section_bytes(n, in[1], in[2], in[3]);
	r->pos = r->words + 4 * (((size_t) n * r->w + 31) / 32);
	r->high = r->pos + (((size_t) r->e + 3) & ~(size_t) 3);
}

uint32_t
GpuirCodecTf(const uint8_t *in, int i)
{
	GpuirCodecTfReader r;

	GpuirCodecTfReaderInit(in, &r);
	return GpuirCodecTfAt(&r, i);
}

int
GpuirCodecCheckTf(const uint8_t *in)
{
	int			n = in[0] + 1;
	int			w = in[4],
				e = in[5],
				h = in[6];
	const uint8_t *tsec = in + GPUIR_BLOCK_HEADER + section_bytes(n, in[1], in[2], in[3]);
	const uint8_t *pos = tsec + 4 * (((size_t) n * w + 31) / 32);
	int			last = -1;

	for (int j = 0; j < e; j++)
	{
		if (pos[j] >= n || (int) pos[j] <= last)
			return GPUIR_CODEC_CORRUPT;
		last = pos[j];
	}
	if (w + h >= 32)
	{
		uint32_t	tfs[GPUIR_BLOCK_SIZE];

		if (decode_section(tsec, n, w, e, h, tfs, 0) != GPUIR_CODEC_OK)
			return GPUIR_CODEC_CORRUPT;
		for (int i = 0; i < n; i++)
			if (tfs[i] == UINT32_MAX)
				return GPUIR_CODEC_CORRUPT;
	}
	return GPUIR_CODEC_OK;
}


/* BM25 tf part, for choosing which impacts to merge (not a stored value) */
static double
tf_part(uint32_t tf, uint32_t dl, double k1, double b, double avgdl)
{
	return tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl));
}

/* tfs below this are reduced by a table in GpuirCodecBlockImpacts, not sorted */
#define IMPACT_SMALL_TF 32

static int
impact_cmp(const void *a, const void *b)
{
	const uint32_t *pa = a;
	const uint32_t *pb = b;

	/* tf descending, then dl ascending */
	if (pa[0] != pb[0])
		return (pa[0] < pb[0]) - (pa[0] > pb[0]);
	return (pa[1] > pb[1]) - (pa[1] < pb[1]);
}

int
GpuirCodecBlockImpacts(uint32_t (*pairs)[2], int n, int nimpacts,
					   double k1, double b, double avgdl)
{
	int			m = 0;
	int			nbig = 0;
	uint32_t	mindl = UINT32_MAX;
	uint32_t	small[IMPACT_SMALL_TF];

	/*
	 * The frontier is, for each tf from the highest down, the least dl at
	 * that tf if it is below every higher tf's.  The least dl of each small
	 * tf goes to small[] in one pass; only the pairs of larger tfs (few in
	 * text) are sorted (tf descending, dl ascending), moved to the front.
	 */
	for (int t = 0; t < IMPACT_SMALL_TF; t++)
		small[t] = UINT32_MAX;
	for (int i = 0; i < n; i++)
	{
		uint32_t	tf = pairs[i][0];

		if (tf < IMPACT_SMALL_TF)
		{
			if (pairs[i][1] < small[tf])
				small[tf] = pairs[i][1];
		}
		else
		{
			pairs[nbig][0] = tf;
			pairs[nbig][1] = pairs[i][1];
			nbig++;
		}
	}
	if (nbig > 1)
		qsort(pairs, nbig, sizeof(pairs[0]), impact_cmp);
	for (int i = 0; i < nbig; i++)
	{
		if (pairs[i][1] < mindl)
		{
			mindl = pairs[i][1];
			pairs[m][0] = pairs[i][0];
			pairs[m][1] = pairs[i][1];
			m++;
		}
	}
	/* at most one pair per small tf present: m stays within the n pairs */
	for (int t = IMPACT_SMALL_TF - 1; t >= 0; t--)
	{
		if (small[t] < mindl)
		{
			mindl = small[t];
			pairs[m][0] = (uint32_t) t;
			pairs[m][1] = small[t];
			m++;
		}
	}
	/* frontier: tf strictly decreasing, dl strictly decreasing */
	while (m > nimpacts)
	{
		int			best = 0;
		double		best_cost = 0;

		for (int i = 0; i + 1 < m; i++)
		{
			double		cost = tf_part(pairs[i][0], pairs[i + 1][1], k1, b, avgdl);

			if (i == 0 || cost < best_cost)
			{
				best = i;
				best_cost = cost;
			}
		}
		pairs[best][1] = pairs[best + 1][1];
		for (int i = best + 1; i + 1 < m; i++)
		{
			pairs[i][0] = pairs[i + 1][0];
			pairs[i][1] = pairs[i + 1][1];
		}
		m--;
	}
	return m;
}
