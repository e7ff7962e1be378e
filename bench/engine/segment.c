/*-------------------------------------------------------------------------
 *
 * segment.c
 *	  engine_bench: ONE segment of the generated corpus, its lists encoded
 *	  by the list encoder of src/gpuirlist.c (GpuirListEncodeBlock, the
 *	  code src/gpuirsegment.c writes an index's segments with), in parallel
 *	  over ranges of lists; step 3 of the header of bench/engine_bench.c.
 *
 *-------------------------------------------------------------------------
 */
#include "engine.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

GPUIR_STATIC_ASSERT(GPUIR_CUDA_BLOCK_IMPACTS == GPUIR_BLOCK_IMPACTS,
					"the uploaded impacts are the block headers'");

typedef struct BuildThread
{
	uint32_t	v0,
				v1;				/* list order positions [v0, v1) */
	uint8_t    *buf;			/* the blocks of those lists, in that order */
	uint64_t	len,
				cap;
	uint64_t	base;			/* where buf goes in the payload */
	uint64_t	refused;		/* lists the encoder did not encode whole */
	uint64_t	bad;			/* blocks that failed GpuirListCheckEncoded */
	const char *why;			/* what the first of those was */
} BuildThread;

typedef struct BuildCtx
{
	Segment    *s;
	const Corpus *c;
	const uint32_t *lorder;		/* list order: terms by lexeme */
	const uint64_t *lstart;		/* [V + 1] postings before list position i */
	BuildThread *th;
	double		k1,
				b,
				avgdl;
	int			verify;
} BuildCtx;

/*
 * encode_list: term v's list into t's buffer, block by block through the
 * list encoder; its block directory entries (block_last, block_offset and
 * the impacts) are those of the headers the encoder fills.  The encoder
 * starts each list at PAYLOAD offset 0, so a header's payload_off counts
 * from the list's start in the buffer: block_offset gets the offset in the
 * buffer, which copy_worker rebases to the payload.  (A buffer offset past
 * 4 GB means a payload past 4 GB, which build_segment refuses before any
 * offset is used.)
 */
static void
encode_list(const BuildCtx *x, BuildThread *t, uint32_t v)
{
	Segment    *s = x->s;
	const Corpus *c = x->c;
	const uint32_t *docs = c->inv_doc + c->start[v];
	const uint32_t *tfs = c->inv_tf + c->start[v];
	uint32_t	n = s->npost[v];
	uint32_t	fb = s->first_block[v];
	uint64_t	list_off = t->len;
	GpuirListEncoder e;
	GpuirDictEntry de;

	GpuirListEncoderInit(&e, x->k1, x->b, x->avgdl, 0);
	for (uint32_t blk = 0; blk < s->nblk[v]; blk++)
	{
		const uint32_t *bd = docs + (size_t) blk * GPUIR_BLOCK_SIZE;
		const uint32_t *bt = tfs + (size_t) blk * GPUIR_BLOCK_SIZE;
		int			m = GpuirListBlockPostings(n, blk);
		uint32_t	b = fb + blk;
		uint32_t	dls[GPUIR_BLOCK_SIZE];
		uint32_t	prev = e.prev_docid;
		GpuirBlockHeader bh;
		uint8_t    *out;
		size_t		len;

		if (t->len + GPUIR_BLOCK_MAX_BYTES > t->cap)
		{
			t->cap = t->cap + t->cap / 2 + GPUIR_BLOCK_MAX_BYTES;
			t->buf = xrealloc(t->buf, t->cap);
		}
		for (int k = 0; k < m; k++)
			dls[k] = c->doclen[bd[k]];
		out = t->buf + t->len;
		len = GpuirListEncodeBlock(&e, bd, bt, dls, m, &bh, out);
		if (len == 0)
			break;				/* counted below: the list is short */
		t->len += len;
		s->block_last[b] = bh.last_docid;
		s->block_offset[b] = (uint32_t) (list_off + bh.payload_off);
		for (int i = 0; i < GPUIR_BLOCK_IMPACTS; i++)
		{
			s->impact_tf[(size_t) GPUIR_BLOCK_IMPACTS * b + i] = bh.impact_tf[i];
			s->impact_dl[(size_t) GPUIR_BLOCK_IMPACTS * b + i] = bh.impact_dl[i];
		}
		if (x->verify)
		{
			const char *why = GpuirListCheckEncoded(out, len, prev, &bh, bd, bt, dls, m);

			if (why != NULL && t->bad++ == 0)
				t->why = why;
		}
	}
	GpuirListEncoderFinish(&e, &de);
	if (de.npostings != n || de.nblocks != s->nblk[v])
		t->refused++;
}

/* the first list position whose postings start at or after target */
static uint32_t
list_at(const BuildCtx *x, uint64_t target)
{
	uint32_t	lo = 0,
				hi = x->c->V;

	while (lo < hi)
	{
		uint32_t	mid = lo + (hi - lo) / 2;

		if (x->lstart[mid] < target)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* thread tid encodes the lists of about 1 / nt of the postings */
static void
build_worker(void *arg, int tid, int nt)
{
	BuildCtx   *x = arg;
	const Corpus *c = x->c;
	BuildThread *t = &x->th[tid];
	uint64_t	P = c->npostings;

	/* v1 is the next thread's v0: computed the same way */
	t->v0 = (tid == 0) ? 0 : list_at(x, split_at(P, tid, nt));
	t->v1 = (tid == nt - 1) ? c->V : list_at(x, split_at(P, tid + 1, nt));
	if (t->v1 < t->v0)
		t->v1 = t->v0;
	t->cap = (x->lstart[t->v1] - x->lstart[t->v0]) * 2 + GPUIR_BLOCK_MAX_BYTES;
	t->buf = xmalloc(t->cap);
	t->len = 0;
	t->refused = 0;
	t->bad = 0;
	t->why = NULL;
	for (uint32_t i = t->v0; i < t->v1; i++)
		encode_list(x, t, x->lorder[i]);
}


#define SUM_PARTS	256			/* checksum slices: fixed, so --threads does not matter */

typedef struct SumCtx
{
	const Segment *s;
	uint64_t	part[SUM_PARTS];
} SumCtx;

static inline uint64_t
mix64(uint64_t h, uint64_t x)
{
	h ^= x + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
	return h * 0xBF58476D1CE4E5B9ULL;
}

/* hashes of the payload's slices tid, tid + nt, ... (8-byte words) */
static void
sum_worker(void *arg, int tid, int nt)
{
	SumCtx	   *x = arg;
	uint64_t	n = x->s->payload_bytes / 8;

	for (int p = tid; p < SUM_PARTS; p += nt)
	{
		uint64_t	h = 0;

		for (uint64_t i = split_at(n, p, SUM_PARTS); i < split_at(n, p + 1, SUM_PARTS); i++)
		{
			uint64_t	w;

			memcpy(&w, x->s->payload + 8 * i, 8);
			h = mix64(h, w);
		}
		x->part[p] = h;
	}
}

/*
 * segment_checksum: a fingerprint of the segment (payload, block directory,
 * doc lengths), the same for the same --docs and --seed whatever --threads
 */
static uint64_t
segment_checksum(const Segment *s, int nthreads)
{
	SumCtx	   *x = xcalloc(1, sizeof(SumCtx));
	uint64_t	h = mix64(0, s->payload_bytes);

	x->s = s;
	par_run(nthreads < SUM_PARTS ? nthreads : SUM_PARTS, sum_worker, x);
	for (int p = 0; p < SUM_PARTS; p++)
		h = mix64(h, x->part[p]);
	free(x);
	for (uint64_t i = s->payload_bytes / 8 * 8; i < s->payload_bytes; i++)
		h = mix64(h, s->payload[i]);
	for (uint32_t b = 0; b < s->nblocks; b++)
		h = mix64(h, ((uint64_t) s->block_last[b] << 32) ^ s->block_offset[b] ^
				  ((uint64_t) s->impact_tf[2 * b] << 8) ^ ((uint64_t) s->impact_dl[2 * b] << 40) ^
				  ((uint64_t) s->impact_tf[2 * b + 1] << 20) ^ s->impact_dl[2 * b + 1]);
	for (uint32_t d = 0; d < s->ndocs; d++)
		h = mix64(h, s->doclen[d]);
	return h;
}

static void
copy_worker(void *arg, int tid, int nt)
{
	BuildCtx   *x = arg;
	Segment    *s = x->s;
	BuildThread *t = &x->th[tid];
	uint32_t	b0,
				b1;

	(void) nt;
	if (t->v0 >= t->v1)
	{
		free(t->buf);
		t->buf = NULL;
		return;
	}
	memcpy(s->payload + t->base, t->buf, t->len);
	free(t->buf);
	t->buf = NULL;
	b0 = s->first_block[x->lorder[t->v0]];
	b1 = (t->v1 < x->c->V) ? s->first_block[x->lorder[t->v1]] : s->nblocks;
	for (uint32_t b = b0; b < b1; b++)
		s->block_offset[b] += (uint32_t) t->base;
}

static int
lex_order_cmp(const void *a, const void *b, void *arg)
{
	const Vocab *v = arg;
	uint32_t	x = *(const uint32_t *) a;
	uint32_t	y = *(const uint32_t *) b;

	return lexeme_cmp(v->lex[x], v->len[x], v->lex[y], v->len[y]);
}

/* a query term's idf (an absent term's is the largest: df 0) */
static float
term_idf(const Segment *s, uint32_t v)
{
	return v == NO_TERM || s->npost[v] == 0 ? s->idf_absent : s->idf[v];
}

void
order_query_terms(QLog *logs, int nlogs, const Segment *s)
{
	for (int li = 0; li < nlogs; li++)
		for (uint32_t q = 0; q < logs[li].nq; q++)
		{
			uint32_t   *t = logs[li].qterm + logs[li].qoff[q];
			uint32_t	n = logs[li].qoff[q + 1] - logs[li].qoff[q];

			/* stable insertion sort by idf descending: ties keep lexeme order */
			for (uint32_t i = 1; i < n; i++)
			{
				uint32_t	v = t[i];
				float		idf = term_idf(s, v);
				uint32_t	j = i;

				for (; j > 0 && term_idf(s, t[j - 1]) < idf; j--)
					t[j] = t[j - 1];
				t[j] = v;
			}
		}
}

/* list_order: the terms 0 .. V-1 by lexeme (dictionary order), malloc'd */
static uint32_t *
list_order(const Vocab *voc, uint32_t V)
{
	uint32_t   *lorder = xmalloc(sizeof(uint32_t) * (V ? V : 1));

	for (uint32_t v = 0; v < V; v++)
		lorder[v] = v;
	qsort_r(lorder, V, sizeof(uint32_t), lex_order_cmp, (void *) voc);
	return lorder;
}

void
build_segment(Segment *s, const Corpus *c, const Vocab *voc, const Options *o)
{
	BuildCtx	x;
	uint32_t   *lorder = list_order(voc, c->V);	/* as the index writes the lists; kept in s */
	uint64_t   *lstart = xmalloc(sizeof(uint64_t) * ((size_t) c->V + 1));
	uint64_t	nb = 0,
				total = 0,
				refused = 0,
				bad = 0;
	const char *why = NULL;
	double		t0 = now_s(),
				t1;
	const double N = (double) c->ndocs;

	memset(s, 0, sizeof(*s));
	s->ndocs = c->ndocs;
	s->npostings = c->npostings;
	s->V = c->V;
	s->doclen = c->doclen;
	s->sc.k1 = o->k1;
	s->sc.b = o->b;
	s->sc.avgdl = (float) ((double) c->total_dl / N);
	s->avgdl_build = (double) c->total_dl / N;
	if (s->avgdl_build < 1.0)
		s->avgdl_build = 1.0;

	s->first_block = xmalloc(sizeof(uint32_t) * c->V);
	s->nblk = xmalloc(sizeof(uint32_t) * c->V);
	s->npost = xmalloc(sizeof(uint32_t) * c->V);
	s->idf = xmalloc(sizeof(float) * c->V);
	s->tbytes = xcalloc(c->V, sizeof(uint64_t));
	lstart[0] = 0;
	for (uint32_t i = 0; i < c->V; i++)
	{
		uint32_t	v = lorder[i];
		uint64_t	df = c->start[v + 1] - c->start[v];

		s->first_block[v] = (uint32_t) nb;
		s->nblk[v] = GpuirListBlocks((uint32_t) df);
		s->npost[v] = (uint32_t) df;
		/* GpuirIdf (src/gpuirutils.c): in double, float32 result */
		s->idf[v] = (float) log(1.0 + (N - (double) df + 0.5) / ((double) df + 0.5));
		nb += s->nblk[v];
		lstart[i + 1] = lstart[i] + df;
		if (nb >= UINT32_MAX)
			die("more than 2^32 - 1 blocks: use a smaller --docs");
	}
	s->idf_absent = (float) log(1.0 + (N + 0.5) / 0.5);
	s->nblocks = (uint32_t) nb;
	s->block_last = xmalloc(sizeof(uint32_t) * (nb ? nb : 1));
	s->block_offset = xmalloc(sizeof(uint32_t) * (nb + 1));
	s->impact_tf = xmalloc(sizeof(uint32_t) * GPUIR_CUDA_BLOCK_IMPACTS * (nb ? nb : 1));
	s->impact_dl = xmalloc(sizeof(uint32_t) * GPUIR_CUDA_BLOCK_IMPACTS * (nb ? nb : 1));

	memset(&x, 0, sizeof(x));
	x.s = s;
	x.c = c;
	x.lorder = lorder;
	x.lstart = lstart;
	x.th = xcalloc((size_t) o->threads, sizeof(BuildThread));
	x.k1 = (double) o->k1;
	x.b = (double) o->b;
	x.avgdl = s->avgdl_build;
	x.verify = o->verify;
	par_run(o->threads, build_worker, &x);
	for (int t = 0; t < o->threads; t++)
	{
		x.th[t].base = total;
		total += x.th[t].len;
		refused += x.th[t].refused;
		bad += x.th[t].bad;
		if (why == NULL)
			why = x.th[t].why;
	}
	if (total > UINT32_MAX)
		die("the segment's payload would take %" PRIu64 " bytes, more than UINT32_MAX "
			"(%u; block offsets are 32-bit): use a smaller --docs, e.g. --docs %" PRIu64,
			total, UINT32_MAX,
			(uint64_t) ((double) c->ndocs * (double) UINT32_MAX / (double) total * 0.95));
	if (refused > 0)
		die("%" PRIu64 " lists refused by the list encoder (GpuirListEncodeBlock)", refused);
	if (bad > 0)
		die("%" PRIu64 " blocks failed GpuirListCheckEncoded, the first: %s", bad, why);
	s->payload_bytes = total;
	s->payload = big_alloc(total);
	par_run(o->threads, copy_worker, &x);
	s->block_offset[nb] = (uint32_t) total;
	for (uint32_t v = 0; v < c->V; v++)
	{
		uint32_t	fb = s->first_block[v];
		uint32_t	n = seg_nblocks(s, v);

		if (n > 0)
			s->tbytes[v] = (uint64_t) s->block_offset[fb + n] - s->block_offset[fb];
	}
	t1 = now_s();
	printf("segment: checksum %016" PRIx64 " (depends on --docs and --seed only)\n",
		   segment_checksum(s, o->threads));
	printf("segment: %u blocks, payload %" PRIu64 " bytes (%.2f GB, %.3f bytes/posting, "
		   "%.2f%% of the 4 GiB offset limit), built in %.2f s on %d threads%s\n",
		   s->nblocks, total, gb(total), c->npostings ? (double) total / c->npostings : 0.0,
		   100.0 * total / 4294967296.0, t1 - t0, o->threads,
		   o->verify ? " (every block decoded back and compared)" : "");
	printf("segment: block directory %.2f GB (block_last, block_offset, 2 impacts), doclen %.2f GB;"
		   " scoring k1 %.3g, b %.3g, avgdl %.4f, N %u\n",
		   gb((uint64_t) nb * 4 * (2 + 2 * GPUIR_CUDA_BLOCK_IMPACTS)),
		   gb((uint64_t) c->ndocs * 4), (double) s->sc.k1, (double) s->sc.b,
		   (double) s->sc.avgdl, s->ndocs);
	free(x.th);
	s->lorder = lorder;
	free(lstart);
	fflush(stdout);
}
