#!/bin/bash
# s50: the search stage of the SQL grid's batches, in engine_bench: TREC 2005 queries over a generated corpus
# the size of all 1.22 M paragraphs (1,200,549 documents, the paragraphs' term and length distributions),
# batches of 1 and 16, or/bmw k 10, untraced, then traced (host stages and CUDA events per call)
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
E=$PWD/.device/engine
(make -f bench/engine.mk -j8 build/engine_bench > $O/build.log 2>&1 || echo "BUILD FAILED") &
(make -f bench/engine.mk TRACE=1 -j8 > $O/build-trace.log 2>&1 || echo "TRACE BUILD FAILED") &
wait; echo "built $(el) s"
R=(--vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --docs 1200549 --threads 16 --max-queries 4000 --k1 0.9 --b 0.4 --k 10 --modes or,bmw,and --check 20 --min-time 1 --max-time 2 --copy-mib 256)
timeout 120 build/engine_bench "${R[@]}" --batches 1,16,64 --out $O/plain.tsv > $O/plain.txt 2>&1; echo "plain $(el) s"
for nq in 1 16; do
GPUIR_SEARCH_TRACE_NQ=$nq timeout 120 build/engine_bench_trace "${R[@]}" --batches $nq --out $O/trace$nq.tsv > $O/trace$nq.txt 2> $O/stages$nq.txt; echo "trace $nq $(el) s"
done
grep -hE "exactness|MISMATCH|postings per query|documents" $O/*.txt | sort | uniq -c | head
echo "== plain"; cut -f2,3,4,8,9 $O/plain.tsv
for nq in 1 16; do echo "== stages $nq"; grep "^trace" $O/stages$nq.txt; done
cd $O && tar czf all.tgz *.txt *.tsv; ls
