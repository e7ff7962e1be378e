/*-------------------------------------------------------------------------
 *
 * gpuir_decode.cuh
 *	  Warp-wide device routine that decodes one gpuir posting block
 *	  (src/gpuircodec.h format) with the 32 lanes of a warp, for the search
 *	  kernels (gpuir_search.cu), where each warp of a thread block decodes
 *	  its own blocks, and for the unit test's decode kernel
 *	  (test/cuda_decode_kernel.cu).
 *
 * The algorithm is block-wise PForDelta decoding on the GPU (Ding, He, Yan,
 * Suel, WWW 2009, section 6.2): every value sits at a fixed bit offset, so
 * lane l unpacks postings 4l .. 4l + 3 of the d-gap and tf sections
 * independently; lane l also unpacks the high bits of exceptions 4l .. 4l
 * + 3 and scatters them to their positions in the warp's patch (128 words
 * of shared memory), from which each lane ORs its postings' in; and a
 * warp-wide prefix sum (shuffles) of gap + 1, seeded with the previous
 * block's last docID, yields the docIDs.  Blocks therefore decode
 * independently, with no barrier between warps (only __syncwarp around
 * the warp's own patch): a thread block's warps decode different blocks
 * at the same time.  Since a tf sits
 * at a fixed bit offset too, one posting's tf can be read alone
 * (gpuir_block_tf), after a decode of the block's docIDs that checked its
 * tf section: the AND kernel reads only the tfs of the postings it finds.
 *
 * This is a device re-implementation of GpuirCodecBlockBytes and
 * GpuirCodecDecode (src/gpuircodec.c): the format's constants and the
 * section header's field rules (GpuirCodecSectionSound) come from
 * src/gpuircodec.h, the other checks are written again here to the same
 * rules (the block inside the bytes available, exception positions
 * strictly increasing and < n, docIDs below 0xFFFFFFFF, tf - 1 below
 * 0xFFFFFFFF).  test/test_cuda_decode.c checks, on random and corrupted
 * blocks, that both decoders give the same postings and the same
 * corruption verdict.  The search kernels decode a list's blocks, whose
 * directory entries and headers the host checked when it put them on the
 * device, with gpuir_warp_decode_listed_block: the header's checks are not
 * made again there (the AND kernel ran 1.14x faster without them on an
 * H200: bench/results/2026-11-30-h200-listed-blocks.md), the rest are.
 * The fully checked gpuir_warp_decode_block, and the unaligned (ALIGNED
 * false) forms of the helpers below, serve only test/test_cuda_decode.c,
 * for blocks the host's checks would refuse; that test compares both
 * decoders with the CPU's GpuirCodecDecode.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPUIR_DECODE_CUH
#define GPUIR_DECODE_CUH

#include <stddef.h>
#include <stdint.h>

#include "gpuir_cuda_internal.h"

/*
 * One warp per block, GPUIR_DECODE_PER_LANE consecutive postings per lane.
 * The format's limits are src/gpuircodec.h's: GPUIR_BLOCK_HEADER,
 * GPUIR_BLOCK_MAX_BYTES, GPUIR_FIRST_PREV_DOCID.
 */
#define GPUIR_DECODE_PER_LANE	(GPUIR_BLOCK_SIZE / 32)
#define GPUIR_PATCH_ALIGN		16		/* a warp's patch: one uint4 a lane */

static_assert(GPUIR_DECODE_PER_LANE == 4, "a lane's postings are one uint4 of a warp's patch");
static_assert(GPUIR_BLOCK_SIZE == 32 * GPUIR_DECODE_PER_LANE,
			  "a block's postings divide evenly among a warp's lanes");

/* where one section (d-gap or tf) of a validated block lies */
struct GpuirSectionLayout
{
	int			w;				/* bit width of packed values */
	int			e;				/* number of exceptions */
	int			h;				/* bit width of an exception's high part */
	uint32_t	word;			/* first word of the packed values */
	uint32_t	pos_byte;		/* first byte of the exception positions */
	uint32_t	high_word;		/* first word of the exceptions' high bits */
	uint32_t	bytes;			/* length of the section in bytes */
};

/* layout of a validated block; offsets are relative to the block start */
struct GpuirBlockLayout
{
	int			n;				/* postings, 1..128 */
	uint32_t	total_bytes;	/* encoded length, a multiple of 4 */
	GpuirSectionLayout gap;
	GpuirSectionLayout tf;
};

/*
 * gpuir_section_layout: fill *s for a section of n postings whose header is
 * (w, e, h) and whose bytes start at byte off of its block (a multiple of
 * 4), with no check: the header is a sound one (GpuirCodecSectionSound,
 * src/gpuircodec.h).
 */
__host__ __device__ static inline void
gpuir_section_layout(uint32_t off, int n, int w, int e, int h, GpuirSectionLayout *s)
{
	const uint32_t packed = 4 * (((uint32_t) n * w + 31) / 32);
	const uint32_t padded = ((uint32_t) e + 3) & ~3u;
	const uint32_t high = 4 * (((uint32_t) e * h + 31) / 32);

	s->w = w;
	s->e = e;
	s->h = h;
	s->word = off / 4;
	s->pos_byte = off + packed;
	s->high_word = (off + packed + padded) / 4;
	s->bytes = packed + padded + high;
}

/*
 * gpuir_block_layout_of: the layout of a block whose 8 header bytes hdr
 * are sound (gpuir_block_layout checks them; for a list's block on the
 * device, GpuirCodecBlockBytes did on the host: the segment upload's
 * directory checks and the list images' writer, gpuir_cuda.h), computed
 * with no check.
 */
__host__ __device__ static inline void
gpuir_block_layout_of(const uint8_t *hdr, GpuirBlockLayout *l)
{
	const int	n = hdr[0] + 1;

	l->n = n;
	gpuir_section_layout(GPUIR_BLOCK_HEADER, n, hdr[1], hdr[2], hdr[3], &l->gap);
	gpuir_section_layout(GPUIR_BLOCK_HEADER + l->gap.bytes, n, hdr[4], hdr[5], hdr[6], &l->tf);
	l->total_bytes = GPUIR_BLOCK_HEADER + l->gap.bytes + l->tf.bytes;
}

/*
 * gpuir_block_layout: validate the 8 header bytes hdr of a block with
 * avail bytes available and compute its layout, as GpuirCodecBlockBytes
 * does (its sections each inside avail is the same as their sum: the
 * sizes are small and not negative).  Returns false for a corrupt header.
 */
__host__ __device__ static inline bool
gpuir_block_layout(const uint8_t *hdr, size_t avail, GpuirBlockLayout *l)
{
	const int	n = hdr[0] + 1;

	if (avail < GPUIR_BLOCK_HEADER || n > GPUIR_BLOCK_SIZE || hdr[7] != 0 ||
		!GpuirCodecSectionSound(n, hdr[1], hdr[2], hdr[3]) ||
		!GpuirCodecSectionSound(n, hdr[4], hdr[5], hdr[6]))
		return false;
	gpuir_block_layout_of(hdr, l);
	return l->total_bytes <= avail;
}

/*
 * gpuir_load_word: 32-bit little-endian word k of in; a word load when
 * ALIGNED (in is 4-byte aligned), byte loads otherwise.  The callers pick
 * ALIGNED once per block (gpuir_warp_decode_block by the block's address;
 * gpuir_warp_decode_listed_block always, its blocks being aligned), so an
 * aligned block runs no byte-load code at all.
 */
template <bool ALIGNED>
__device__ static inline uint32_t
gpuir_load_word(const uint8_t *__restrict__ in, uint32_t k)
{
	if (ALIGNED)
		return __ldg(reinterpret_cast<const uint32_t *>(in) + k);
	return (uint32_t) in[4 * k] | ((uint32_t) in[4 * k + 1] << 8) |
		((uint32_t) in[4 * k + 2] << 16) | ((uint32_t) in[4 * k + 3] << 24);
}

/*
 * gpuir_unpack: value i of width w (0..32) of the LSB-first packed words
 * starting at word `word` of the block in; reads the word holding its
 * first bit (none when w = 0) and, if the value straddles, the next one
 * (both inside the section for a validated block).  No branch: the loads
 * are predicated and the value is a funnel shift under a mask.
 */
template <bool ALIGNED>
__device__ static inline uint32_t
gpuir_unpack(const uint8_t *__restrict__ in, uint32_t word, uint32_t i, int w)
{
	const uint32_t bit = i * (uint32_t) w;
	const uint32_t wi = word + (bit >> 5);
	const uint32_t off = bit & 31;
	const uint32_t lo = (w > 0) ? gpuir_load_word<ALIGNED>(in, wi) : 0;
	const uint32_t hi = (off + (uint32_t) w > 32) ? gpuir_load_word<ALIGNED>(in, wi + 1) : 0;

	return __funnelshift_r(lo, hi, off) & (uint32_t) ((1ull << w) - 1);
}

/*
 * How a lane unpacks its four values of a section (gpuir_lane_unpack4):
 * GPUIR_UNPACK_WORDS loads the words holding them once (fewer
 * instructions: the tile and decode kernels, whose batches ran 2-5% faster
 * in engine_bench on an H200); GPUIR_UNPACK_VALUES loads one or two words
 * per value (the AND kernel, held to 40 registers a thread, which spilled
 * more and ran 4-6% slower with WORDS).  Both give the same values.
 */
enum GpuirUnpack
{
	GPUIR_UNPACK_WORDS,
	GPUIR_UNPACK_VALUES
};

/*
 * gpuir_lane_unpack4: values first .. first + 3 of width w (0..32) of the
 * LSB-first packed words starting at word `word` of the block in, for the
 * calling lane: vals[r] = value first + r when first + r < count, 0
 * otherwise (values 0 .. count - 1 lie inside a validated section).  The
 * lane's values are consecutive bits: for w <= 16 (uniform in the warp)
 * with GPUIR_UNPACK_WORDS, they lie in at most three consecutive words,
 * each loaded once and only if it holds one of those bits (so never past
 * the section), and each value is a funnel shift of two of them.  Wider
 * values, and every value with GPUIR_UNPACK_VALUES, are read one at a time
 * (gpuir_unpack).
 */
template <bool ALIGNED, GpuirUnpack UNPACK>
__device__ static inline void
gpuir_lane_unpack4(const uint8_t *__restrict__ in, uint32_t word, uint32_t first,
				   uint32_t count, int w, uint32_t vals[GPUIR_DECODE_PER_LANE])
{
	if (UNPACK == GPUIR_UNPACK_WORDS && w <= 16)
	{
		const uint32_t cnt = (first >= count) ? 0 : min(count - first,
														 (uint32_t) GPUIR_DECODE_PER_LANE);
		const uint32_t bit = first * (uint32_t) w;
		const uint32_t wi = word + (bit >> 5);
		const uint32_t off = bit & 31;
		const uint32_t need = off + cnt * (uint32_t) w;	/* bits from word wi's first */
		const uint32_t x0 = (need > off) ? gpuir_load_word<ALIGNED>(in, wi) : 0;
		const uint32_t x1 = (need > 32) ? gpuir_load_word<ALIGNED>(in, wi + 1) : 0;
		const uint32_t x2 = (need > 64) ? gpuir_load_word<ALIGNED>(in, wi + 2) : 0;
		const uint32_t mask = (1u << w) - 1;	/* w <= 16 */

#pragma unroll
		for (uint32_t r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		{
			/*
			 * value r: bits s .. s + w - 1 of x2:x1:x0 (s + w <= 95); from
			 * s >= 64 on they all lie in x2, the pair's low word
			 */
			const uint32_t s = off + r * (uint32_t) w;
			const uint32_t lo = (s < 32) ? x0 : (s < 64) ? x1 : x2;
			const uint32_t hi = (s < 32) ? x1 : x2;

			vals[r] = (r < cnt) ? (__funnelshift_r(lo, hi, s) & mask) : 0;
		}
		return;
	}
#pragma unroll
	for (uint32_t r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		vals[r] = (first + r < count) ? gpuir_unpack<ALIGNED>(in, word, first + r, w) : 0;
}

/*
 * gpuir_warp_positions: check the exception positions of section s of a
 * validated block of n postings (strictly increasing and < n), with the
 * calling warp: word l of them (positions 4 l .. 4 l + 3, one byte each,
 * padded to whole words; bytes past e are ignored) is read by lane l and
 * left in *posw.  Each lane compares its four bytes at once (SIMD byte
 * compares) with n and with their successors (the next lane's first byte
 * after its fourth).  Returns false (in every lane) when they are not
 * sound.
 */
template <bool ALIGNED>
__device__ static inline bool
gpuir_warp_positions(const uint8_t *__restrict__ in, const GpuirSectionLayout &s, int n,
					 uint32_t *posw)
{
	const uint32_t lane = threadIdx.x & 31;
	const uint32_t e = (uint32_t) s.e;
	const uint32_t first = 4 * lane;	/* my first exception */
	uint32_t	w = 0,
				succ,
				live,
				pair;

	if (first < e)
		w = gpuir_load_word<ALIGNED>(in, s.pos_byte / 4 + lane);	/* pos_byte % 4 == 0 */

	/* byte r of succ: the position after my r-th (the next lane's first after my fourth) */
	succ = __funnelshift_r(w, __shfl_down_sync(0xFFFFFFFFu, w, 1), 8);
	/* the bytes that are exceptions (j < e), and those with a successor (j + 1 < e) */
	live = (first + 4 <= e) ? 0xFFFFFFFFu : (first < e) ? (1u << (8 * (e - first))) - 1 : 0;
	pair = (first + 5 <= e) ? 0xFFFFFFFFu : (first + 1 < e) ? (1u << (8 * (e - first - 1))) - 1 : 0;
	*posw = w;
	return !__any_sync(0xFFFFFFFFu,
					   ((__vcmpgeu4(w, (uint32_t) n * 0x01010101u) & live) |
						(__vcmpgeu4(w, succ) & pair)) != 0);
}

/*
 * gpuir_warp_section: the values of section s of a validated block of n
 * postings for the calling lane, vals[r] = value 4 * lane + r (0 past n),
 * exceptions patched (vals |= high_j << w).  The e <= 128 exception
 * positions (one byte each, padded to whole words) sit in the warp's
 * registers, word l in lane l (gpuir_warp_positions), so lane l holds
 * exceptions 4 l .. 4 l + 3: it unpacks their high bits and scatters them
 * to patch[position] (patch: the calling warp's GPUIR_BLOCK_SIZE words of
 * shared memory, zeroed first), and each lane then ORs patch[4 lane ..
 * 4 lane + 3] into its values.  No lane searches for its exceptions, and
 * the warp's lanes share the work of a block's exceptions evenly.  Returns
 * false (in every lane) when the positions are not strictly increasing or
 * reach n.
 */
template <bool ALIGNED, GpuirUnpack UNPACK>
__device__ static inline bool
gpuir_warp_section(const uint8_t *__restrict__ in, const GpuirSectionLayout &s,
				   int n, uint32_t vals[GPUIR_DECODE_PER_LANE], uint32_t *patch)
{
	const uint32_t lane = threadIdx.x & 31;
	const uint32_t e = (uint32_t) s.e;
	const uint32_t first = GPUIR_DECODE_PER_LANE * lane;	/* my first posting */
	uint32_t	posw;

	gpuir_lane_unpack4<ALIGNED, UNPACK>(in, s.word, first, (uint32_t) n, s.w, vals);
	if (e == 0)
		return true;			/* uniform */
	if (!gpuir_warp_positions<ALIGNED>(in, s, n, &posw))
		return false;

	/* positions are now distinct and < n <= GPUIR_BLOCK_SIZE */
	__syncwarp();				/* every lane is done with the patch's last use */
	reinterpret_cast<uint4 *>(patch)[lane] = make_uint4(0, 0, 0, 0);
	__syncwarp();
	if constexpr (UNPACK == GPUIR_UNPACK_WORDS)
	{
		uint32_t	high[GPUIR_DECODE_PER_LANE];

		gpuir_lane_unpack4<ALIGNED, UNPACK>(in, s.high_word, first, e, s.h, high);
#pragma unroll
		for (uint32_t r = 0; r < GPUIR_DECODE_PER_LANE; r++)
			if (first + r < e)
				patch[(posw >> (8 * r)) & 0xFF] = high[r] << s.w;
	}
	else
	{
		/* each high part loaded where it is stored: fewer live registers */
#pragma unroll
		for (uint32_t r = 0; r < GPUIR_DECODE_PER_LANE; r++)
			if (first + r < e)
				patch[(posw >> (8 * r)) & 0xFF] =
					gpuir_unpack<ALIGNED>(in, s.high_word, first + r, s.h) << s.w;
	}
	__syncwarp();
	{
		const uint4 hv = reinterpret_cast<const uint4 *>(patch)[lane];

		vals[0] |= hv.x;
		vals[1] |= hv.y;
		vals[2] |= hv.z;
		vals[3] |= hv.w;
	}
	return true;
}

/*
 * gpuir_section_value: value i (< n) of section s of a validated block
 * whose exception positions were checked (gpuir_warp_positions), read by
 * one thread without unpacking the rest: the packed low bits, and the high
 * bits of the exception at position i if there is one (binary search over
 * the position bytes).
 */
template <bool ALIGNED>
__device__ static inline uint32_t
gpuir_section_value(const uint8_t *__restrict__ in, const GpuirSectionLayout &s, uint32_t i)
{
	uint32_t	v = gpuir_unpack<ALIGNED>(in, s.word, i, s.w);
	uint32_t	lo = 0,
				hi = (uint32_t) s.e;

	while (lo < hi)
	{
		const uint32_t mid = (lo + hi) / 2;

		if (in[s.pos_byte + mid] < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < (uint32_t) s.e && in[s.pos_byte + lo] == i)
		v |= gpuir_unpack<ALIGNED>(in, s.high_word, lo, s.h) << s.w;
	return v;
}

/*
 * gpuir_block_tf: the tf of posting i (< l.n) of the block at in, whose
 * layout l came from gpuir_warp_decode_block or
 * gpuir_warp_decode_listed_block (which checked the tf section as
 * GpuirCodecCheckTf does), read by the calling thread alone;
 * false when the stored tf - 1 is 0xFFFFFFFF (that check has then already
 * called the block corrupt: a second line of defence).  LISTED: the
 * block is a listed block (gpuir_warp_decode_listed_block), 4-byte aligned.
 */
template <bool LISTED = false>
__device__ static inline bool
gpuir_block_tf(const uint8_t *__restrict__ in, const GpuirBlockLayout &l, uint32_t i,
			   uint32_t *tf)
{
	const uint32_t v = (LISTED || (reinterpret_cast<uintptr_t>(in) & 3) == 0)
		? gpuir_section_value<true>(in, l.tf, i)
		: gpuir_section_value<false>(in, l.tf, i);

	*tf = v + 1;
	return v != 0xFFFFFFFFu;
}

/* the 8 header bytes of the block at in, read by every lane */
template <bool ALIGNED>
__device__ static inline void
gpuir_block_header(const uint8_t *__restrict__ in, uint8_t hdr[GPUIR_BLOCK_HEADER])
{
	for (int k = 0; k < 2; k++)
	{
		uint32_t	w = gpuir_load_word<ALIGNED>(in, k);

		for (int b = 0; b < 4; b++)
			hdr[4 * k + b] = (uint8_t) (w >> (8 * b));
	}
}

/*
 * gpuir_warp_decode_sections: the sections of the block at in, an aligned
 * (ALIGNED) or any address, whose header is sound and gives layout l
 * (gpuir_warp_decode_block's work after the header; arguments and result
 * as there, the outputs zeroed by the caller)
 */
template <bool ALIGNED, GpuirUnpack UNPACK>
__device__ static inline int
gpuir_warp_decode_sections(const uint8_t *__restrict__ in, const GpuirBlockLayout &l,
						   uint32_t prev, bool want_docids, bool want_tfs,
						   uint32_t docid[GPUIR_DECODE_PER_LANE],
						   uint32_t tf[GPUIR_DECODE_PER_LANE], uint32_t *patch, bool single_tfs)
{
	const uint32_t lane = threadIdx.x & 31;
	const int	n = l.n;
	bool		bad = false;

	if (want_docids)
	{
		uint32_t	gap[GPUIR_DECODE_PER_LANE],
					sum[GPUIR_DECODE_PER_LANE],
					total = 0,
					incl,
					base,
					before;

		if (!gpuir_warp_section<ALIGNED, UNPACK>(in, l.gap, n, gap, patch))
			return GPUIR_CUDA_BLOCK_CORRUPT;

		/*
		 * docID = prev + prefix sum of gap + 1, modulo 2^32: within the lane,
		 * then across lanes.  A docID past 0xFFFFFFFE in exact arithmetic
		 * shows here as 0xFFFFFFFF or as a docID not above the one before
		 * it (each step adds 1 .. 2^32), and docIDs before the first such
		 * one are exact; so these two checks give the CPU decoder's verdict
		 * (GpuirCodecDecode: every docID below 0xFFFFFFFF).
		 */
#pragma unroll
		for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		{
			if ((int) (GPUIR_DECODE_PER_LANE * lane + r) < n)
				total += gap[r] + 1;
			sum[r] = total;
		}
		incl = total;
		for (int o = 1; o < 32; o <<= 1)
		{
			const uint32_t v = __shfl_up_sync(0xFFFFFFFFu, incl, o);

			if (lane >= (uint32_t) o)
				incl += v;
		}
		base = prev + (incl - total);	/* prev = 0xFFFFFFFF: -1 */
#pragma unroll
		for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
			docid[r] = base + sum[r];
		/* the docID before my first: the previous lane's last, or prev */
		before = __shfl_up_sync(0xFFFFFFFFu, docid[GPUIR_DECODE_PER_LANE - 1], 1);
		if (lane == 0)
			before = prev;
#pragma unroll
		for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		{
			const uint32_t i = GPUIR_DECODE_PER_LANE * lane + r;

			if ((int) i < n)
				bad |= docid[r] == GPUIR_FIRST_PREV_DOCID ||
					((i > 0 || prev != GPUIR_FIRST_PREV_DOCID) && docid[r] <= before);
			else
				docid[r] = 0;
			before = docid[r];
		}
	}
	/*
	 * The tf section: unpacked and checked when the tfs are wanted.  When
	 * the caller will read single tfs instead (gpuir_block_tf; single_tfs),
	 * it is checked as the CPU reader checks a block it decodes without its
	 * tfs (GpuirCodecCheckTf): every value where one can reach 0xFFFFFFFF
	 * (w + h >= 32: tfs of 2^31 and more, never in a real index), else the
	 * exception positions.
	 */
	if (want_tfs || (single_tfs && l.tf.w + l.tf.h >= 32))
	{
		uint32_t	v[GPUIR_DECODE_PER_LANE];

		if (!gpuir_warp_section<ALIGNED, UNPACK>(in, l.tf, n, v, patch))
			bad = true;
		else
#pragma unroll
			for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
				if ((int) (GPUIR_DECODE_PER_LANE * lane + r) < n)
				{
					bad |= (v[r] == 0xFFFFFFFFu);
					if (want_tfs)
						tf[r] = v[r] + 1;
				}
	}
	else if (single_tfs && l.tf.e > 0)
	{
		uint32_t	posw;

		if (!gpuir_warp_positions<ALIGNED>(in, l.tf, n, &posw))
			bad = true;
	}
	if (__any_sync(0xFFFFFFFFu, bad))
	{
#pragma unroll
		for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
			docid[r] = tf[r] = 0;
		return GPUIR_CUDA_BLOCK_CORRUPT;
	}
	return n;
}

/*
 * gpuir_warp_decode_block: decode one posting block with the 32 lanes of
 * the calling warp (every lane must call it, with the same arguments, and
 * the whole warp must be converged), checking it all as the CPU reader
 * does, its header included (gpuir_warp_decode_listed_block trusts a
 * header checked on the host).  Ding et al. 2009, section 6.2.
 *
 * Inputs:
 *	in[0..avail)	the block's bytes in global memory (read only within
 *					the validated encoded length, so never past avail)
 *	prev			docID[-1]: the previous block's last docID, or
 *					GPUIR_FIRST_PREV_DOCID for a list's first block
 *	want_docids, want_tfs	which sections to decode and validate (as
 *					passing NULL docids/tfs to GpuirCodecDecode)
 *	patch			the calling warp's GPUIR_BLOCK_SIZE words of shared
 *					memory, 16-byte aligned (GPUIR_PATCH_ALIGN), where
 *					the exceptions are scattered (gpuir_warp_section);
 *					its contents are scratch
 *	layout			NULL, or where the block's layout goes; with
 *					want_tfs false the tf section is then checked too,
 *					as GpuirCodecCheckTf checks it (the verdict stays the
 *					CPU reader's), so that single tfs may be read with
 *					gpuir_block_tf
 *	UNPACK			how each lane unpacks its values (GpuirUnpack)
 * Outputs (per lane l): docid[r] and tf[r] of posting 4 l + r when it is
 * below the count, 0 otherwise (and in every lane for a corrupt block).
 * Returns (the same in every lane) the posting count 1..128, or
 * GPUIR_CUDA_BLOCK_CORRUPT.
 */
template <GpuirUnpack UNPACK = GPUIR_UNPACK_WORDS>
__device__ static inline int
gpuir_warp_decode_block(const uint8_t *__restrict__ in, size_t avail, uint32_t prev,
						bool want_docids, bool want_tfs,
						uint32_t docid[GPUIR_DECODE_PER_LANE], uint32_t tf[GPUIR_DECODE_PER_LANE],
						uint32_t *patch, GpuirBlockLayout *layout = NULL)
{
	/* uniform: the same address in every lane */
	const bool	aligned = (reinterpret_cast<uintptr_t>(in) & 3) == 0;
	uint8_t		hdr[GPUIR_BLOCK_HEADER];
	GpuirBlockLayout l;

#pragma unroll
	for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		docid[r] = tf[r] = 0;
	if (avail < GPUIR_BLOCK_HEADER)
		return GPUIR_CUDA_BLOCK_CORRUPT;
	if (aligned)
		gpuir_block_header<true>(in, hdr);
	else
		gpuir_block_header<false>(in, hdr);
	/* uniform: every lane sees the same header */
	if (!gpuir_block_layout(hdr, avail, &l))
		return GPUIR_CUDA_BLOCK_CORRUPT;
	if (layout != NULL)
		*layout = l;
	if (aligned)
		return gpuir_warp_decode_sections<true, UNPACK>(in, l, prev, want_docids, want_tfs,
														docid, tf, patch, layout != NULL);
	return gpuir_warp_decode_sections<false, UNPACK>(in, l, prev, want_docids, want_tfs,
													 docid, tf, patch, layout != NULL);
}

/*
 * gpuir_warp_decode_listed_block: gpuir_warp_decode_block for a block of a
 * list on the device (a segment's or a list image's), whose header the
 * host found sound with its extent's length when it wrote the block there
 * (GpuirCodecBlockBytes: gpuir_cuda_segment_upload's directory checks,
 * the list images' writer; gpuir_cuda.h) and which starts 4-byte aligned:
 * the layout is taken from the header unchecked, and every word is read
 * whole.  The rest (exception positions, docIDs, tfs) is checked as there.
 * On a block that is not such a block the result is undefined, out of
 * bounds reads and writes included (a count of n - 1 up to 255 places
 * exceptions past the warp's 128-word patch): the host's checks are this
 * routine's precondition, not a defence in depth.
 */
template <GpuirUnpack UNPACK = GPUIR_UNPACK_WORDS>
__device__ static inline int
gpuir_warp_decode_listed_block(const uint8_t *__restrict__ in, uint32_t prev,
							   bool want_docids, bool want_tfs,
							   uint32_t docid[GPUIR_DECODE_PER_LANE],
							   uint32_t tf[GPUIR_DECODE_PER_LANE], uint32_t *patch,
							   GpuirBlockLayout *layout = NULL)
{
	uint8_t		hdr[GPUIR_BLOCK_HEADER];
	GpuirBlockLayout l;

#pragma unroll
	for (int r = 0; r < GPUIR_DECODE_PER_LANE; r++)
		docid[r] = tf[r] = 0;
	gpuir_block_header<true>(in, hdr);
	gpuir_block_layout_of(hdr, &l);
	if (layout != NULL)
		*layout = l;
	return gpuir_warp_decode_sections<true, UNPACK>(in, l, prev, want_docids, want_tfs,
													docid, tf, patch, layout != NULL);
}

#endif							/* GPUIR_DECODE_CUH */
