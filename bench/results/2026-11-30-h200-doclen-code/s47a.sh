#!/bin/bash
# s47 call 1 (planned): wip-doclen-code (one-byte length codes) against main (a-main: git archive of main into .device/var/a-main.tar first); real logs and generated; then test_cuda_search full + sanitizers
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
ROUNDS=1 MODES=and,or,bmw KS=10,1000 BATCHES=1,1000 TESTS=0 bash .device/multi.sh > $O/multi.out 2>&1
tail -28 $O/multi.out
echo "multi $(el) s"
GBATCHES=1,16,1000 GKS=10,1000 GMODES=or,bmw GLIMIT=300 bash .device/gen.sh > $O/gen.out 2>&1; tail -14 $O/gen.out
echo "benchmarks $(el) s"
CUDA_LINK=(-L/usr/local/cuda/lib64 -lcudart_static -lrt -lpthread -ldl -lstdc++ -lm)
gcc -O2 -Wall -Wextra -ffp-contract=off -Isrc -Icuda -o build/test_cuda_search test/test_cuda_search.c src/gpuircodec.c src/gpuirlist.c cuda/gpuir_cuda_status.c cuda/gpuir_cuda_window.c build/engine_obj/*.o "${CUDA_LINK[@]}" || echo "TEST BUILD FAILED"
cp build/test_cuda_search /tmp/tcs
( timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 /tmp/tcs --sanitize > $O/racecheck.log 2>&1; echo "racecheck rc=$? $(el) s" >> $O/san.txt
  timeout 90 compute-sanitizer --tool synccheck --error-exitcode 1 /tmp/tcs --sanitize > $O/synccheck.log 2>&1; echo "synccheck rc=$? $(el) s" >> $O/san.txt
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/tcs --sanitize > $O/memcheck.log 2>&1; echo "memcheck rc=$? $(el) s" >> $O/san.txt ) &
GPUIR_TEST_REQUIRE_GPU=1 timeout $(( 575 - $(el) )) /tmp/tcs > $O/search.log 2>&1; echo "search full rc=$? $(tail -n 1 $O/search.log) $(el) s"
grep -E "two levels|emitted|FAIL" $O/search.log | cut -c1-220 | head -12
wait
cat $O/san.txt
for f in $O/*check.log; do echo "$(basename $f): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed' $f | tail -2 | tr '\n' ' ')"; done
echo total $(el) s
cd $O && tar czf all.tgz multi.tgz *.out *.log *.txt gen-* 2>/dev/null; rm -f *.log gen-* multi.tgz *.txt; ls
