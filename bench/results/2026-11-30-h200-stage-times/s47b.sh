#!/bin/bash
# s47 call 2: stage times of small batches (build/engine_bench_trace) beside the untraced build, generated log and TREC 2005
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
E=$PWD/.device/engine
(make -f bench/engine.mk -j8 > $O/build.log 2>&1 || echo "BUILD FAILED") &
(make -f bench/engine.mk TRACE=1 -j8 > $O/build-trace.log 2>&1 || echo "TRACE BUILD FAILED") &
wait; echo "built $(el) s"
G=(--synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --k 10,1000 --modes or,bmw,and --check 20 --min-time 1 --max-time 2 --copy-mib 256)
timeout 150 build/engine_bench "${G[@]}" --batches 1,16 --out $O/gen-plain.tsv > $O/gen-plain.txt 2>&1; echo "plain $(el) s"
GPUIR_SEARCH_TRACE_NQ=1 timeout 150 build/engine_bench_trace "${G[@]}" --batches 1 --out $O/gen-trace1.tsv > $O/gen-trace1.txt 2> $O/trace1.txt; echo "trace1 $(el) s"
GPUIR_SEARCH_TRACE_NQ=16 timeout 150 build/engine_bench_trace "${G[@]}" --batches 16 --out $O/gen-trace16.tsv > $O/gen-trace16.txt 2> $O/trace16.txt; echo "trace16 $(el) s"
R=(--vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1 --k 10,1000 --modes or,bmw,and --check 20 --min-time 1 --max-time 2 --copy-mib 256)
GPUIR_SEARCH_TRACE_NQ=1 timeout 150 build/engine_bench_trace "${R[@]}" --out $O/trec-trace1.tsv > $O/trec-trace1.txt 2> $O/trec-trace1-stages.txt; echo "trec trace $(el) s"
grep -hE "exactness|MISMATCH" $O/*.txt | sort | uniq -c
for f in gen-plain gen-trace1 gen-trace16 trec-trace1; do echo "== $f"; cut -f2,3,4,8,9 $O/$f.tsv; done
for f in trace1 trace16 trec-trace1-stages; do echo "== $f"; grep "^trace" $O/$f.txt; done
cd $O && tar czf all.tgz *.txt *.tsv && rm -f *.tsv *.txt *.log; ls
