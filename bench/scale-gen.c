/*
 * bench/scale-gen.c: rows of text for a large table, resampled from real
 * paragraphs so that words co-occur as in real text (used by bench/sql-scale).
 *
 *	scale-gen PARAGRAPHS ROWS NPARTS PART [SEED]
 *
 * PARAGRAPHS: one paragraph per line, in COPY text format (as COPY ... TO
 * writes it).  Writes to standard output, in COPY text format, the rows
 * "id<TAB>body" for id = PART, PART + NPARTS, ... below ROWS, so that NPARTS
 * processes with PART = 0 .. NPARTS - 1 write every row once.  Row id is
 * paragraph id mod n (n paragraphs: neighbouring ids come from one
 * article, as in the crawl), each of its words (runs of non-space bytes)
 * kept with probability 0.9 and otherwise replaced by a word drawn
 * uniformly from all the words of the file (so by their frequency), so
 * that the n paragraphs, cycled over millions of rows, do not repeat
 * exactly; row lengths are the paragraphs'.  The same ROWS and SEED give
 * the same rows whatever NPARTS.  Words are copied whole, so COPY escapes
 * (which hold no space) stay valid.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct
{
	uint64_t	off;
	uint32_t	len;
} Span;

/* a paragraph: its words, words[first .. first + n) */
typedef struct
{
	uint64_t	first;
	uint32_t	n;
} Para;

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t	z = (*x += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

static void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (p == NULL)
	{
		fprintf(stderr, "scale-gen: out of memory\n");
		exit(1);
	}
	return p;
}

int
main(int argc, char **argv)
{
	FILE	   *f;
	char	   *text = NULL;
	size_t		len = 0,
				cap = 0,
				got;
	Para	   *paras = NULL;
	Span	   *words = NULL;
	size_t		npara = 0,
				nwords = 0,
				cpara = 0,
				cwords = 0;
	uint64_t	rows,
				nparts,
				part,
				seed;
	static char out[1 << 20];

	if (argc < 5)
	{
		fprintf(stderr, "usage: scale-gen PARAGRAPHS ROWS NPARTS PART [SEED]\n");
		return 2;
	}
	rows = strtoull(argv[2], NULL, 10);
	nparts = strtoull(argv[3], NULL, 10);
	part = strtoull(argv[4], NULL, 10);
	seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 1;
	if (nparts == 0 || part >= nparts)
	{
		fprintf(stderr, "scale-gen: PART must be below NPARTS\n");
		return 2;
	}
	if ((f = fopen(argv[1], "rb")) == NULL)
	{
		perror(argv[1]);
		return 1;
	}
	for (;;)
	{
		if (len == cap)
		{
			cap = cap ? cap * 2 : (64u << 20);
			text = xrealloc(text, cap);
		}
		got = fread(text + len, 1, cap - len, f);
		if (got == 0)
			break;
		len += got;
	}
	fclose(f);

	/* paragraphs (lines) and words (runs of bytes other than space) */
	for (size_t i = 0; i < len;)
	{
		size_t		end = i;

		while (end < len && text[end] != '\n')
			end++;
		if (end > i)
		{
			if (npara == cpara)
				paras = xrealloc(paras, (cpara = cpara ? cpara * 2 : 65536) * sizeof(Para));
			paras[npara].first = nwords;
			for (size_t w = i; w < end;)
			{
				size_t		we;

				while (w < end && text[w] == ' ')
					w++;
				we = w;
				while (we < end && text[we] != ' ')
					we++;
				if (we > w)
				{
					if (nwords == cwords)
						words = xrealloc(words, (cwords = cwords ? cwords * 2 : 1048576) * sizeof(Span));
					words[nwords].off = w;
					words[nwords].len = (uint32_t) (we - w);
					nwords++;
				}
				w = we;
			}
			paras[npara].n = (uint32_t) (nwords - paras[npara].first);
			npara++;
		}
		i = end + 1;
	}
	if (npara == 0 || nwords == 0)
	{
		fprintf(stderr, "scale-gen: %s holds no words\n", argv[1]);
		return 1;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 22);

	for (uint64_t id = part; id < rows; id += nparts)
	{
		const Para *p = &paras[id % npara];
		uint64_t	rng = seed * 0x100000001B3ULL ^ id;
		size_t		o = (size_t) snprintf(out, sizeof(out), "%llu\t", (unsigned long long) id);

		for (uint32_t i = 0; i < p->n; i++)
		{
			const Span *wd = &words[p->first + i];
			const char *src = text + wd->off;
			size_t		n = wd->len;

			if (splitmix64(&rng) % 10 == 0)
			{
				const Span *r = &words[splitmix64(&rng) % nwords];

				src = text + r->off;
				n = r->len;
			}
			if (o + n + 2 >= sizeof(out))
				break;			/* a paragraph over 1 MB: cut */
			if (i > 0)
				out[o++] = ' ';
			memcpy(out + o, src, n);
			o += n;
		}
		out[o++] = '\n';
		fwrite(out, 1, o, stdout);
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
