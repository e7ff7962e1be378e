/*-------------------------------------------------------------------------
 *
 * test_list.c
 *	  Standalone test of the posting-list module (src/gpuirlist.[ch]; no
 *	  PostgreSQL): lists of random lengths are built with the encoder, then
 *	  read back block by block with the readers' checks exactly as
 *	  src/gpuirlistread.c does (GpuirListCheckEntry, GpuirListCheckHeader,
 *	  GpuirListDecodeBlock), and every posting, header, impact and
 *	  dictionary count is compared with what went in.  Damaged lists
 *	  (headers, entries, flipped bytes) must be reported, never read out of
 *	  bounds.  Prints "N passed, N failed".
 *
 *-------------------------------------------------------------------------
 */
#include "../src/gpuirlist.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POSTINGS	5000

/* a list built with the encoder */
typedef struct List
{
	uint32_t	n;
	uint32_t	docs[MAX_POSTINGS];
	uint32_t	tfs[MAX_POSTINGS];
	uint32_t	dls[MAX_POSTINGS];
	GpuirBlockHeader dir[MAX_POSTINGS / GPUIR_BLOCK_SIZE + 2];
	uint8_t		payload[(MAX_POSTINGS / GPUIR_BLOCK_SIZE + 2) * GPUIR_BLOCK_MAX_BYTES];
	uint32_t	payload_len;
	GpuirDictEntry de;
} List;

static List list;

/* random postings: n docIDs below ndocs, skewed tfs and dls */
static void
make_postings(uint32_t n, uint32_t ndocs)
{
	uint32_t	d = rnd() % (ndocs / (n + 1) + 1);

	list.n = n;
	for (uint32_t i = 0; i < n; i++)
	{
		list.docs[i] = d;
		d += 1 + rnd() % (ndocs / (n + 1) + 1);
		list.tfs[i] = (rnd() % 8 == 0) ? 1 + rnd() % 5000 : 1 + rnd() % 3;
		list.dls[i] = 1 + rnd() % ((rnd() % 4 == 0) ? 100000 : 300);
	}
}

/* encode list.docs into dir/payload/de; returns 1 when every block was accepted */
static int
encode_list(void)
{
	GpuirListEncoder e;

	GpuirListEncoderInit(&e, 1.2, 0.75, 150.0, 0);
	list.payload_len = 0;
	memset(&list.de, 0, sizeof(list.de));
	for (uint32_t i = 0, b = 0; i < list.n; i += GPUIR_BLOCK_SIZE, b++)
	{
		int			m = (int) (list.n - i < GPUIR_BLOCK_SIZE ? list.n - i : GPUIR_BLOCK_SIZE);
		uint32_t	prev = e.prev_docid;
		size_t		len = GpuirListEncodeBlock(&e, list.docs + i, list.tfs + i, list.dls + i, m,
											   &list.dir[b], list.payload + list.payload_len);

		if (len == 0 || list.dir[b].payload_off != list.payload_len)
			return 0;
		if (GpuirListCheckEncoded(list.payload + list.payload_len, len, prev, &list.dir[b],
								  list.docs + i, list.tfs + i, list.dls + i, m) != NULL)
			return 0;
		list.payload_len += (uint32_t) len;
	}
	GpuirListEncoderFinish(&e, &list.de);
	list.de.first_block = 0;
	return 1;
}

/*
 * read_list: read the list back as the backend's cursor does; returns NULL
 * when it reads exactly what went in, else the first problem.
 */
static const char *
read_list(uint32_t ndocs)
{
	const char *why = GpuirListCheckEntry(&list.de, list.de.nblocks);
	uint32_t	got = 0;
	uint32_t	max_tf = 0,
				min_dl = UINT32_MAX;

	if (why != NULL)
		return why;
	for (uint32_t b = 0; b < list.de.nblocks; b++)
	{
		uint32_t	end = b + 1 < list.de.nblocks ? list.dir[b + 1].payload_off : list.payload_len;
		uint32_t	docs[GPUIR_BLOCK_SIZE],
					tfs[GPUIR_BLOCK_SIZE];
		int			expect = GpuirListBlockPostings(list.de.npostings, b);

		why = GpuirListCheckHeader(&list.dir[b], b > 0 ? &list.dir[b - 1] : NULL, end, ndocs);
		if (why != NULL)
			return why;
		why = GpuirListDecodeBlock(list.payload + list.dir[b].payload_off,
								   end - list.dir[b].payload_off,
								   b > 0 ? list.dir[b - 1].last_docid : GPUIR_FIRST_PREV_DOCID,
								   &list.dir[b], expect, docs, tfs, 0);
		if (why != NULL)
			return why;
		for (int j = 0; j < expect; j++, got++)
		{
			int			bounded = 0;

			if (got >= list.n || docs[j] != list.docs[got] || tfs[j] != list.tfs[got])
				return "a posting differs";
			for (int m = 0; m < GPUIR_BLOCK_IMPACTS; m++)
				bounded |= list.dir[b].impact_tf[m] >= tfs[j] &&
					list.dir[b].impact_dl[m] <= list.dls[got];
			if (!bounded)
				return "a posting is above its block's impacts";
			max_tf = tfs[j] > max_tf ? tfs[j] : max_tf;
			min_dl = list.dls[got] < min_dl ? list.dls[got] : min_dl;
		}
	}
	if (got != list.n || list.de.npostings != list.n || list.de.df != list.n)
		return "posting count differs";
	if (max_tf != list.de.max_tf || min_dl != list.de.min_dl)
		return "list max tf or min dl differs";
	return NULL;
}

static void
test_roundtrip(void)
{
	static const uint32_t lengths[] = {1, 2, 127, 128, 129, 255, 256, 257, 1000, MAX_POSTINGS};

	for (int r = 0; r < 200; r++)
	{
		uint32_t	n = r < 10 ? lengths[r] : 1 + rnd() % MAX_POSTINGS;
		uint32_t	ndocs = n + rnd() % (r % 2 ? 100 : 10000000);
		const char *why;

		make_postings(n, ndocs);
		check(encode_list(), "encoder accepts a sorted list");
		why = read_list(list.docs[n - 1] + 1);
		check(why == NULL, why ? why : "");
		check(list.de.nblocks == GpuirListBlocks(n), "nblocks = ceil(n / 128)");
	}
}

/* the encoder refuses what would make a list unreadable */
static void
test_encoder_rules(void)
{
	GpuirListEncoder e;
	GpuirBlockHeader bh;
	uint8_t		out[GPUIR_BLOCK_MAX_BYTES];
	uint32_t	docs[3] = {5, 5, 9},
				tfs[3] = {1, 1, 1},
				dls[3] = {10, 10, 10};

	GpuirListEncoderInit(&e, 1.2, 0.75, 10.0, 0);
	check(GpuirListEncodeBlock(&e, docs, tfs, dls, 3, &bh, out) == 0, "duplicate docID refused");
	docs[1] = 7;
	tfs[2] = 0;
	check(GpuirListEncodeBlock(&e, docs, tfs, dls, 3, &bh, out) == 0, "tf 0 refused");
	tfs[2] = 1;
	docs[2] = UINT32_MAX;
	check(GpuirListEncodeBlock(&e, docs, tfs, dls, 3, &bh, out) == 0, "docID 2^32-1 refused");
	docs[2] = 9;
	check(GpuirListEncodeBlock(&e, docs, tfs, dls, 3, &bh, out) > 0, "valid block accepted");
	check(GpuirListEncodeBlock(&e, docs, tfs, dls, 3, &bh, out) == 0,
		  "no block after a short one, nor docIDs that do not follow the last block");
	GpuirListEncoderInit(&e, 1.2, 0.75, 10.0, UINT32_MAX - 8);
	check(GpuirListEncodeBlock(&e, docs, tfs, dls, 3, &bh, out) == 0, "4 GB payload offset refused");
}

/* every damage to a list is reported by the readers' checks */
static void
test_damage(void)
{
	int			caught = 0,
				total = 0;

	for (int r = 0; r < 300; r++)
	{
		uint32_t	n = 1 + rnd() % 600;
		uint32_t	ndocs;
		int			kind = r % 6;
		const char *why;

		make_postings(n, n + rnd() % 100000);
		ndocs = list.docs[n - 1] + 1;
		if (!encode_list())
		{
			check(0, "encoder accepts a sorted list");
			continue;
		}
		switch (kind)
		{
			case 0:				/* a header's last docID */
				list.dir[rnd() % list.de.nblocks].last_docid += 1 + rnd() % 3;
				break;
			case 1:				/* a header's offset */
				list.dir[rnd() % list.de.nblocks].payload_off += 4 * (1 + rnd() % 4);
				break;
			case 2:				/* the entry's counts */
				list.de.npostings += (rnd() % 2) ? GPUIR_BLOCK_SIZE : 1;
				break;
			case 3:				/* a byte of a block's own header (n - 1, widths, reserved) */
				{
					uint32_t	b = rnd() % list.de.nblocks;

					list.payload[list.dir[b].payload_off + rnd() % GPUIR_BLOCK_HEADER] ^=
						(uint8_t) (1 + rnd() % 255);
				}
				break;
			case 4:				/* the end of the payload */
				list.payload_len -= 4;
				break;
			default:			/* a docID at or past the segment's count */
				ndocs = list.docs[n - 1];
				break;
		}
		why = read_list(ndocs);
		total++;
		/* a flipped header byte may still describe a valid block (it then decodes to other postings) */
		if (why != NULL)
			caught++;
		else
			check(kind == 3, "damage other than a header byte is reported");
	}
	check(caught * 10 >= total * 9, "at least 90% of damaged lists are reported");

	/* a block's payload that ends off a 32-bit word (the GPU copies whole words) */
	make_postings(300, 50000);
	if (encode_list())
	{
		const uint32_t ndocs = list.docs[list.n - 1] + 1;
		const uint32_t end = list.dir[1].payload_off;

		check(GpuirListCheckHeader(&list.dir[0], NULL, end, ndocs) == NULL,
			  "a block ending on a 4-byte boundary passes");
		check(GpuirListCheckHeader(&list.dir[0], NULL, end - 2, ndocs) != NULL,
			  "a block ending off a 4-byte boundary is reported");
	}
	else
		check(0, "encoder accepts a sorted list");
}

/*
 * GpuirListCheckLengths: a list as encoded passes; 4 bytes inserted after
 * a block (its extent grows, later offsets move) name that block, also
 * when the list starts past the payload's first byte and for its last
 * block (the end moved); so does an extent 4 bytes shorter than the
 * block's header says (the next block's offset, or the end, moved back)
 */
static void
test_lengths(void)
{
	static uint8_t padded[sizeof(list.payload) + 8];
	GpuirBlockHeader dir[MAX_POSTINGS / GPUIR_BLOCK_SIZE + 2];
	uint32_t	bad;

	for (int r = 0; r < 50; r++)
	{
		uint32_t	nb,
					b,
					cut;

		make_postings(1 + rnd() % 2000, 3000000);
		if (!encode_list())
		{
			check(0, "encoder accepts a sorted list");
			continue;
		}
		nb = list.de.nblocks;
		check(GpuirListCheckLengths(list.payload, list.dir, nb, list.payload_len, &bad) == NULL,
			  "an encoded list's blocks have their extents' lengths");
		if (nb > 1)
			check(GpuirListCheckLengths(list.payload + list.dir[1].payload_off, list.dir + 1,
										nb - 1, list.payload_len, &bad) == NULL,
				  "a list's blocks from its second on pass too");

		/* 4 bytes after block b */
		b = rnd() % nb;
		cut = (b + 1 < nb) ? list.dir[b + 1].payload_off : list.payload_len;
		memcpy(padded, list.payload, cut);
		memset(padded + cut, 0, 4);
		memcpy(padded + cut + 4, list.payload + cut, list.payload_len - cut);
		memcpy(dir, list.dir, sizeof(GpuirBlockHeader) * nb);
		for (uint32_t i = b + 1; i < nb; i++)
			dir[i].payload_off += 4;
		check(GpuirListCheckLengths(padded, dir, nb, list.payload_len + 4, &bad) != NULL &&
			  bad == b, "a block shorter than its extent is named");
		if (b > 0)
			check(GpuirListCheckLengths(padded + dir[1].payload_off, dir + 1, nb - 1,
										list.payload_len + 4, &bad) != NULL && bad == b - 1,
				  "a block shorter than its extent is named in a list starting later");

		/* block b's extent 4 bytes short of its header: the next offset or the end moved */
		memcpy(dir, list.dir, sizeof(GpuirBlockHeader) * nb);
		if (b + 1 < nb)
			dir[b + 1].payload_off -= 4;
		check(GpuirListCheckLengths(list.payload, dir, nb,
									list.payload_len - (b + 1 < nb ? 0 : 4), &bad) != NULL &&
			  bad == b, "a block longer than its extent is named");
	}
}

int
main(void)
{
	test_roundtrip();
	test_encoder_rules();
	test_damage();
	test_lengths();
	printf("list: %d passed, %d failed\n", passed, failed);
	return failed != 0;
}
