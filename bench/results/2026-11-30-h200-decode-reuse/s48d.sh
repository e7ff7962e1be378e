#!/bin/bash
# s48 call 4: decoded-list reuse, second-chance ring (working tree, "new") against the FIFO ring (07cbf98, fifo.tar) and main (a-main.tar);
# quick kernel test first; then one OR query's stage times (traced build) with reuse
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
E=$PWD/.device/engine
make -f bench/engine.mk -j16 build/test_cuda_search > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
timeout 120 build/test_cuda_search --quick > $O/quick.log 2>&1; echo "quick rc=$? $(tail -1 $O/quick.log) $(el) s"
grep -E "FAIL" $O/quick.log | head -20
timeout 150 env AB_ROUNDS=1 bench/gpu-variants .device/var/a-main.tar .device/var/fifo.tar -- --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16,1000 --k 10 --modes or,bmw --check 50 --min-time 1 --max-time 2 --copy-mib 256 > $O/multi.out 2>&1
tail -14 $O/multi.out; echo "real logs $(el) s"
grep -h "decoded lists reused" $O/new-1.txt | head -14
mkdir -p $O/gen; timeout 150 env OUT=$O/gen AB_ROUNDS=1 bench/gpu-variants .device/var/a-main.tar .device/var/fifo.tar -- --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16,1000 --k 10 --modes or,bmw --check 20 --min-time 1 --max-time 2 --copy-mib 256 > $O/gen.out 2>&1; tail -8 $O/gen.out
grep -h "decoded lists reused" $O/gen/new-1.txt $O/gen/fifo-1.txt | head -14
echo "gen $(el) s"
make -f bench/engine.mk TRACE=1 -j16 > $O/build-trace.log 2>&1 || echo "TRACE BUILD FAILED"
GPUIR_SEARCH_TRACE_NQ=1 timeout 100 build/engine_bench_trace --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --k 10 --modes or --check 20 --min-time 1 --max-time 2 --copy-mib 256 --batches 1 --out $O/gen-trace1.tsv > $O/gen-trace1.txt 2> $O/trace1.txt; echo "trace1 $(el) s"
grep -E "^synthetic|exactness" $O/gen-trace1.txt; grep "^trace" $O/trace1.txt
echo total $(el) s
cd $O && tar czf all.tgz *.out *.txt *.log *.tsv gen 2>/dev/null; ls
