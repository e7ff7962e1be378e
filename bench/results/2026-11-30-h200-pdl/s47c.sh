#!/bin/bash
# s47 call 3: programmatic dependent launch + zeros staged with the inputs' copy (new) against 9661598 (a-main); then test_cuda_search full + sanitizers
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
(make -f bench/engine.mk TRACE=1 -j4 > $O/build-trace.log 2>&1 || echo "TRACE BUILD FAILED") &
ROUNDS=1 MODES=and,or,bmw KS=10,1000 BATCHES=1,16 TESTS=0 bash .device/multi.sh > $O/multi.out 2>&1
wait
tail -26 $O/multi.out
echo "multi $(el) s"
GBATCHES=1,16,1000 GKS=10 GMODES=or,bmw,and GLIMIT=300 bash .device/gen.sh > $O/gen.out 2>&1; tail -12 $O/gen.out
echo "benchmarks $(el) s"
G=(--synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --k 10 --modes or,and --check 20 --min-time 1 --max-time 2 --copy-mib 256 --batches 1)
GPUIR_SEARCH_TRACE_NQ=1 timeout 100 build/engine_bench_trace "${G[@]}" > $O/gen-trace1.txt 2> $O/trace1.txt; echo "trace1 $(el) s"; grep -E "exactness|MISMATCH" $O/gen-trace1.txt | head -3; grep "^trace" $O/trace1.txt
# the kernels' checks (these lines, as run, are now bench/gpu-kernel-checks; the full
# test's limit was 580 s less the time spent so far)
bench/gpu-kernel-checks $(( 580 - $(el) ))
echo total $(el) s
cd $O && tar czf all.tgz multi.tgz *.out *.log *.txt gen-* 2>/dev/null; rm -f *.log gen-* multi.tgz *.txt; ls
