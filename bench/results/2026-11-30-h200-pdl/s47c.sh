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
CUDA_LINK=(-L/usr/local/cuda/lib64 -lcudart_static -lrt -lpthread -ldl -lstdc++ -lm)
gcc -O2 -Wall -Wextra -ffp-contract=off -Isrc -Icuda -o build/test_cuda_search test/test_cuda_search.c src/gpuircodec.c src/gpuirlist.c cuda/gpuir_cuda_status.c cuda/gpuir_cuda_window.c build/engine_obj/*.o "${CUDA_LINK[@]}" || echo "TEST BUILD FAILED"
cp build/test_cuda_search /tmp/tcs
( timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 /tmp/tcs --sanitize > $O/racecheck.log 2>&1; echo "racecheck rc=$? $(el) s" >> $O/san.txt
  timeout 90 compute-sanitizer --tool synccheck --error-exitcode 1 /tmp/tcs --sanitize > $O/synccheck.log 2>&1; echo "synccheck rc=$? $(el) s" >> $O/san.txt
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/tcs --sanitize > $O/memcheck.log 2>&1; echo "memcheck rc=$? $(el) s" >> $O/san.txt ) &
GPUIR_TEST_REQUIRE_GPU=1 timeout $(( 580 - $(el) )) /tmp/tcs > $O/search.log 2>&1; echo "search full rc=$? $(tail -n 1 $O/search.log) $(el) s"
grep -E "FAIL" $O/search.log | cut -c1-220 | head -12
wait
cat $O/san.txt
for f in $O/*check.log; do echo "$(basename $f): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed' $f | tail -2 | tr '\n' ' ')"; done
echo total $(el) s
cd $O && tar czf all.tgz multi.tgz *.out *.log *.txt gen-* 2>/dev/null; rm -f *.log gen-* multi.tgz *.txt; ls
