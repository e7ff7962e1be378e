/*-------------------------------------------------------------------------
 *
 * engine_bench.c
 *	  Engine-level benchmark of gpuir's GPU query engine (cuda/) at Gov2
 *	  scale, without PostgreSQL: a GENERATED corpus of tens of millions of
 *	  documents, one segment built exactly as the index builds it, and real
 *	  query logs run through gpuir_cuda_search_batch, checked for exactness
 *	  against a CPU reference.
 *
 * Build (from the repository root):	make -f bench/engine.mk
 * (nvcc found: the kernels, the .cu files of cuda/, are compiled with the
 * main Makefile's NVCC flags and the CUDA runtime is linked statically;
 * without nvcc the program links cuda/gpuir_cuda_stub.c and stops after
 * the CPU part.)  This file holds main(); the parts it calls are in
 * bench/engine/, one file per job (engine.h lists them).
 *
 * Usage:
 *	build/engine_bench --vocab VOCAB --doclen DOCLEN --queries LOG [--queries LOG2 ...]
 *		[--docs 40000000] [--seed 1] [--threads NCORES]
 *		[--batches 1,10,100,1000,10000] [--k 10,1000] [--modes and,or,bmw]
 *		[--max-queries 0] [--check 50] [--selfcheck 3] [--out results.tsv]
 *		[--k1 0.9] [--b 0.4] [--min-time 1] [--max-time 3] [--max-batch-s 10]
 *		[--copy-mib 1024] [--no-verify] [--devices 1] [--split queries|docs]
 *		[--resample DOCS] [--maxscore-share N] [--maxscore-dense N]
 *		[--bmw-batch W,T] [--decode-budget N]
 *		[--decode-cache BLOCKS]
 *		[--cpu-engine P] [--cpu-seconds 3] [--cpu-out cpu.tsv] [--cpu-segment-docs N]
 *		[--cpu-flip-score]
 *	build/engine_bench --synthetic 100000 --docs 200000	 (self-contained test input)
 *
 * Inputs (a file name ending in .gz is read through "gzip -dc"; "-" is stdin):
 *	--vocab		lines "lexeme<TAB>df<TAB>cf" (cf = total occurrences), e.g. the
 *				output of PostgreSQL's ts_stat over the real Wikipedia 2015
 *				paragraphs.  Only lexeme and cf are used (the file's df is
 *				not: dfs come from the generated corpus).  Lines whose df or
 *				cf is not a number (a header) are skipped; cf = 0 lines too.
 *	--doclen	lines "dl<TAB>count": histogram of document lengths in tokens
 *				(dl = sum of tf).  dl = 0 entries are dropped: the index does
 *				not index a document without a lexeme, so every generated
 *				document has dl >= 1 and N (for idf) = --docs.
 *	--queries	lines "qid<TAB>lex lex lex" (already tokenized), repeatable,
 *				one per query log; the log is named after the file.  As the
 *				engine's tokenizer does (GpuirTokenize), a query's lexemes are
 *				deduplicated; once the corpus gives their idfs they are put in
 *				the engine's term order (order_terms of src/gpuirengine.c: idf
 *				descending, ties in lexeme order, byte order then length), the
 *				order its scores are summed in on the GPU and the CPU.  A lexeme
 *				missing from the vocabulary, or never drawn by the generator,
 *				is an absent term (an AND query holding one returns nothing).
 *				Lines with no lexeme, or more than 1024, are dropped (counted).
 *	--synthetic V	instead of the three files: a Zipf(1) vocabulary of V terms,
 *				a log-normal paragraph-like length histogram (5..300 tokens,
 *				mean about 32) and one log of 2000 queries (1..5 terms, ranks
 *				log-uniform).  For testing the program only.
 *	--resample DOCS	real documents instead of i.i.d. tokens (see step 2): lines
 *				"lexeme:tf lexeme:tf ..." in crawl order, lexemes as in the
 *				vocabulary (bench/compare --export-engine-inputs writes
 *				docs.tsv from the Wikipedia paragraphs).
 *	--maxscore-share N: when BMW queries are answered from their essential
 *				lists (gpuir_cuda_search_set_maxscore: essential lists
 *				holding at most 1/N of the postings; 0 never); the
 *				library's default without it.
 *	--maxscore-dense N: a BMW query of several terms whose lists hold more
 *				than a posting for every N documents of the window runs
 *				as OR (gpuir_cuda_search_set_maxscore's dense; 0: no such
 *				limit); the library's default without it.
 *	--bmw-batch W,T: a batch whose BMW queries fill fewer than W waves
 *				of the tile kernel's resident blocks (a tile of the
 *				window each) and hold fewer than T postings together
 *				runs them as OR (gpuir_cuda_search_set_bmw_batch; either
 *				0: never); the library's defaults without it.
 *	--decode-budget N: posting blocks a batch decodes once for its OR and
 *				BMW queries' lists (gpuir_cuda_search_set_decode_budget;
 *				0: none, every tile decodes the blocks it reads); the
 *				library's default without it.
 *	--cpu-engine P: also run the production CPU engine, the one a
 *				server's gpuir_search runs (bench/engine/cpu_engine.c), on P
 *				processes over the same corpus and queries: step 4b below.
 *				Needs PostgreSQL's server headers at build time (engine.mk).
 *	--cpu-seconds S: its time per (log, mode, k); --cpu-out FILE: its rows
 *				as TSV (log, mode, k, processes, queries, q/s, postings/s).
 *	--cpu-segment-docs N: its index in ceil(docs / N) segments of
 *				about equal size (the max_segment_docs reloption), but
 *				at most 16, as CREATE INDEX writes: past 16 N documents
 *				each holds more (default 0: one segment, as the GPU's).
 *	--cpu-flip-score: testing only: the lowest bit of the last score of
 *				every query the CPU engine's check compares is flipped
 *				first, so that the check must fail (make engine-cpu-check
 *				shows that it does).
 *	--decode-cache BLOCKS: posting blocks (1,032 device bytes each) in
 *				which the searches keep the lists they decoded for later
 *				searches (gpuir_cuda_search_set_decode_cache; 0: none);
 *				the library's default (the decode budget, 2 GiB) without
 *				it.  Each timed row's note gives the share of its lists
 *				found decoded.
 *
 * What it does:
 *	1. Device: name, memory, and the card's copy bandwidth measured in this
 *	   run: a device-to-device cudaMemcpy of --copy-mib MiB (default 1 GiB),
 *	   one warm-up then 10 timed copies (cudaEvent).  Reported both as
 *	   (bytes read + bytes written) / time ("copy r+w", the figure DRAM
 *	   bandwidth is quoted in; the %copy columns use it) and as bytes
 *	   copied / time.
 *	2. Corpus (GENERATED, not real documents): --docs documents; document d
 *	   draws its length dl from the doclen histogram, then dl tokens i.i.d.
 *	   from the unigram distribution given by cf (alias tables, Vose's
 *	   method: the 65536 most frequent terms in a small cache-resident table
 *	   picked with their total probability, the rest in a second table).
 *	   Its postings are its distinct terms with tf = occurrences.  Random
 *	   numbers: xoshiro256** seeded per chunk of 4096 documents from --seed
 *	   (splitmix64), so the corpus depends on --seed and --docs only, not on
 *	   --threads.  Generated in parallel by pthreads over contiguous docID
 *	   ranges, then inverted to posting lists in docID order (per-thread
 *	   per-term counts, prefix sums over terms and threads, scatter).  Only
 *	   terms that occur get a list.  Note that i.i.d. tokens have no
 *	   burstiness: a term's generated df is higher, and its tfs lower, than
 *	   in real text of the same cf, and terms never co-occur, so block-max
 *	   bounds are flat.  With --resample, document d is instead the real
 *	   document d mod n of the file (so docIDs follow the crawl order and
 *	   neighbouring documents share an article's terms), each distinct term
 *	   kept with its tf with probability 0.9 and otherwise replaced by as
 *	   many tokens drawn i.i.d. by cf (so that the n real documents, cycled
 *	   over tens of millions of docIDs, do not repeat exactly); lengths are
 *	   the real ones.  Prints totals and a loud warning when postings < 1e9.
 *	3. Segment: ONE segment as src/gpuirsegment.c writes it: lists in
 *	   dictionary (lexeme) order, each encoded by the list encoder of
 *	   src/gpuirlist.c (GpuirListEncodeBlock, the index's own code: blocks
 *	   of 128 postings through GpuirCodecEncode, and per block a header
 *	   with its last docID, payload offset and two impacts (tf, dl) from
 *	   GpuirCodecBlockImpacts: the Pareto frontier of (tf, dl), reduced to
 *	   2 by merging the neighbours that raise the BM25 tf part least at the
 *	   build's avgdl).  The uploaded block_last, block_offset (+ final
 *	   payload_bytes entry) and impacts are those headers'; then the doclen
 *	   array, no deletions.  Built in parallel over term ranges; every block
 *	   is checked with GpuirListCheckEncoded (decoded back and compared
 *	   with the generated postings, which its impacts must bound;
 *	   --no-verify skips it).  The payload must stay
 *	   <= UINT32_MAX bytes (32-bit offsets): otherwise the program stops
 *	   and suggests a --docs that fits.  Scoring as the engine's: N = docs
 *	   (all have dl > 0), avgdl = (float) (total dl / N), idf = GpuirIdf:
 *	   (float) ln(1 + (N - df + 0.5) / (df + 0.5)) computed in double.
 *	4. Self-check on the CPU (no GPU needed): for the first --selfcheck
 *	   queries of each log, the parallel CPU reference (below) against a
 *	   plain one (whole lists decoded, test_cuda_search.c's ref_query), AND
 *	   and OR.  Without a CUDA device the program then prints
 *	   "engine_bench: no CUDA device (<detail>), GPU part skipped" and exits
 *	   0 (1 if the self-check failed).
 *	4b. With --cpu-engine P: the production index of the same corpus, built
 *	   by the production segment writer (as a parallel CREATE INDEX's
 *	   leader writes one segment, or segments of at most
 *	   --cpu-segment-docs) into pages in this process's memory, and
 *	   the production CPU engine (GpuirSearch: AND, OR, BMW) on it: the
 *	   first --check queries of each (log, mode, k) checked against the
 *	   exact reference (as the GPU's are, step 6), then P processes forked
 *	   from this one (the backend code is not thread-safe) answering the
 *	   log's queries one at a time for --cpu-seconds.  After the GPU grid,
 *	   GPU / CPU engine q/s per batch size.  What differs from a server:
 *	   pages are plain memory (no buffer mapping, pins or locks) and a heap
 *	   fetch is a bounds check (every row visible), both in the CPU
 *	   engine's favour
 *	   (bench/engine/cpu_image.c).
 *	5. Upload with gpuir_cuda_segment_upload (timed), to each of the
 *	   --devices GPUs (default 1): with N > 1 every batch (the checks' too)
 *	   is split over the N devices in contiguous query ranges, run at the
 *	   same time from one host thread per device (bench/engine/gpu.c,
 *	   "several devices"), as the GPU service spreads requests; with
 *	   --split docs, every device runs every query of the batch on its
 *	   docID window instead (gpuir_cuda_segment_window) and the host
 *	   merges the windows' top-k (gpuir_cuda_topk_merge): one long query
 *	   on N devices.
 *	6. Exactness: for each (log, mode, k), the first --check queries in one
 *	   batch through gpuir_cuda_search_batch_debug, compared with the exact
 *	   CPU top-k: lists decoded with GpuirCodecDecode, float32 BM25 (the
 *	   engine's GpuirBM25Expr of src/gpuirlist.h, compiled with
 *	   -ffp-contract=off) summed from 0.0f in the query's term order, ties
 *	   by docID ascending; AND = docs holding every term, OR and BMW = docs
 *	   holding any.  Counts, docIDs, score bits and the zeroed slots past
 *	   the count must match.  The reference runs in parallel over docID
 *	   ranges of 65536 (one top-k heap per thread, merged); it is computed
 *	   once per query at the largest k (the smaller k's top is its prefix)
 *	   and its speed is printed.  The debug call also gives blocks decoded
 *	   and, for BMW, tiles pruned.  Any mismatch:
 *	   exit status 1.
 *	7. Timing grid: for each log, mode, k and batch size B, the log's
 *	   queries in consecutive batches of B (wrapping around the log when B
 *	   exceeds it), after one untimed warm-up batch of min(B, 16) queries.
 *	   Batches run until --min-time seconds of search time are reached, or
 *	   until the next batch would pass --max-time (at least one batch).  A
 *	   configuration whose single batch is estimated (from the postings/s of
 *	   the previous batch size of the same log, mode and k) at more than
 *	   --max-batch-s seconds is skipped with the reason; so is one whose
 *	   call fails (e.g. GPUIR_CUDA_OOM), with the status.  Time counted: the
 *	   gpuir_cuda_search_batch calls only (each one synchronous: it
 *	   allocates its workspace, uploads the queries, runs the kernels and
 *	   copies the results back), not building the batch arrays.
 *	   Reported per row: queries/s, mean batch latency (ms), postings/s
 *	   (postings = sum over queries of their terms' list lengths: what an
 *	   exhaustive evaluation must consider), payload GB/s (compressed bytes
 *	   of the query terms' posting blocks, block_offset[last + 1] -
 *	   block_offset[first], per query and term; GB = 1e9 bytes) and its %
 *	   of the copy r+w bandwidth; "+dl GB/s" adds 4 bytes of doclen per
 *	   posting (what OR reads; an upper bound for AND and BMW, which read dl
 *	   only for scored documents); the block directory and impacts are not
 *	   counted.  BMW rows show BMW queries/s over OR queries/s of the same
 *	   log, k and B (also summarised after the grid).
 *	8. Output: one table row per (log, mode, k, B) on stdout, and with --out
 *	   a TSV file of the same rows with a header row (the device, copy
 *	   bandwidths and corpus totals repeated in every row).
 *
 * Limits found in cuda/gpuir_search.cu (tiles of 16,384 docIDs: 2,442
 * tiles at 40M docs): a query's candidate region is min(ntiles * k, its
 * postings) 8-byte keys, and a chunk holds at most 32M keys (256 MiB), so
 * at k = 1000 a long OR query takes up to 2.4M keys and a chunk holds
 * about 13 such queries; a batch of B then runs as ceil(B / 13) chunks,
 * and the final selection of a query with many candidates runs in two
 * levels (32 slices, then the slices' k best).  The lists of the batch's
 * OR and BMW queries are decoded once into the workspace (8 bytes a
 * posting, at most GPUIR_CUDA_DECODE_BUDGET blocks: 2 GiB; the tiles
 * decode the rest).  The outputs are B * kmax docIDs
 * and scores (80 MB at B = 10000, k = 1000).  Everything fits an 80 GB
 * card next to a 3-4 GB segment.  Measured on an H100 with the kernels of
 * 2026-11-25 (40M docs, --synthetic 1000000, 1.18e9
 * postings, 1.86 GB payload): k = 1000 runs 10 to 40 times slower than
 * k = 10 for OR (the per-tile and final top-1000 selections, not the
 * postings, dominate), so the default --max-batch-s skips B = 10000 at
 * k = 1000 there.
 *
 * BMW on a GENERATED corpus: tokens i.i.d. by cf give nearly every block
 * the same (tf, dl) impacts (tf mostly 1, dl from one histogram), so the
 * block-max bounds are flat and BMW prunes little (on the synthetic run
 * above: 145 of 244150 tiles at k = 10, BMW/OR 0.88 to 1.0).  Real text is
 * bursty, so BMW/OR here is a pessimistic figure for real text.
 *
 *-------------------------------------------------------------------------
 */
#include "engine/engine.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int
main(int argc, char **argv)
{
	Options		o;
	Vocab		voc;
	DocLen		hist;
	QLog	   *logs;
	int			nlogs;
	Corpus		c;
	Source		src;
	Segment		s;
	GpuInfo		g;
	int			have_gpu;
	char		nodev[512] = "";
	uint32_t	kref = 0;
	int			failed = 0;
	double		t_start = now_s();
	gpuir_cuda_segment dev;
	Row		   *rows;
	int			nrows = 0;
	Row		   *cpu_rows = NULL;
	int			ncpu = 0;
	LogRef	   *refs = NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_options(&o, argc, argv);
	for (int i = 0; i < o.nks; i++)
		if (o.ks[i] > kref)
			kref = o.ks[i];

	printf("engine_bench: GENERATED corpus of %" PRIu64 " documents, seed %" PRIu64
		   ", %d threads, k1 %.3g, b %.3g\n", o.docs, o.seed, o.threads, (double) o.k1,
		   (double) o.b);

	/* device: first, so the copy bandwidth is measured on an idle card */
	have_gpu = probe_device(&o, &g, nodev, sizeof(nodev));

	/* inputs, corpus, segment */
	read_inputs(&o, &voc, &hist, &logs, &nlogs);
	if (o.resample != NULL)
		source_read(&src, &voc, o.resample);
	generate_corpus(&c, &voc, &hist, o.resample != NULL ? &src : NULL, (uint32_t) o.docs,
					o.seed, o.threads, o.verify);
	build_segment(&s, &c, &voc, &o);
	order_query_terms(logs, nlogs, &s);
	if (o.cpu_engine > 0)
		cpu_engine_build(&c, &voc, &s, &o);
	free(c.inv_doc);
	free(c.inv_tf);
	c.inv_doc = c.inv_tf = NULL;
	print_query_stats(logs, nlogs, &s);
	printf("host memory: peak RSS %.2f GB; setup %.1f s\n", peak_rss_gb(), now_s() - t_start);

	if (selfcheck(logs, nlogs, &s, &o, kref) != 0)
		failed = 1;
	/* the exact references, once for the CPU engine's check and the GPU's */
	if (o.cpu_engine > 0 || (have_gpu && o.check > 0))
		refs = logrefs_compute(logs, nlogs, &s, &o, kref);
	if (o.cpu_engine > 0)
	{
		cpu_rows = cpu_engine_grid(&s, logs, nlogs, refs, &voc, &o, &ncpu, &failed);
		if (o.cpu_out != NULL)
			write_cpu_tsv(o.cpu_out, cpu_rows, ncpu, logs, &o, &s);
	}

	if (!have_gpu)
	{
		printf("engine_bench: no CUDA device (%s), GPU part skipped\n", nodev);
		free(cpu_rows);
		logrefs_free(refs, nlogs);
		return failed;
	}

	if (upload_segment(&s, &o, &dev) != 0)
	{
		free(cpu_rows);
		logrefs_free(refs, nlogs);
		return 1;
	}
	if (o.check > 0 && check_exactness(&dev, &s, logs, nlogs, refs, &o) != 0)
		failed = 1;
	logrefs_free(refs, nlogs);
	rows = timing_grid(&dev, &s, logs, nlogs, &o, &g, &nrows, &failed);
	print_bmw_summary(rows, nrows, logs);
	if (o.cpu_engine > 0)
		print_cpu_summary(cpu_rows, ncpu, rows, nrows, logs, &o);
	if (o.out != NULL)
		write_tsv(o.out, rows, nrows, logs, &g, &s);
	gpuir_cuda_segment_free(&dev);
	printf("engine_bench: done in %.1f s%s\n", now_s() - t_start,
		   failed ? " (FAILED: see MISMATCH / error lines)" : "");
	free(rows);
	free(cpu_rows);
	return failed;
}
