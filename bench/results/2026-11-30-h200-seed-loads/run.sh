#!/bin/bash
# s45 call 5: the seed kernel's passes with 8 loads in flight a thread (new) against HEAD (a-main): generated and real logs, or/bmw, k 10 and 1000, batches 1, 16, 1000; then test_cuda_search --quick and the sanitizers on --sanitize
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
GBATCHES=1,16,1000 GKS=10,1000 GMODES=or,bmw GLIMIT=300 ROUNDS=1 MODES=or,bmw KS=10,1000 BATCHES=1,16,1000 TESTS=0 bash .device/multi.sh > $O/multi.out 2>&1
tail -30 $O/multi.out
GBATCHES=1,16,1000 GKS=10,1000 GMODES=or,bmw GLIMIT=300 bash .device/gen.sh > $O/gen.out 2>&1; tail -14 $O/gen.out
echo "benchmarks $(el) s"
CUDA_LINK=(-L/usr/local/cuda/lib64 -lcudart_static -lrt -lpthread -ldl -lstdc++ -lm)
gcc -O2 -Wall -Wextra -ffp-contract=off -Isrc -Icuda -o build/test_cuda_search test/test_cuda_search.c src/gpuircodec.c src/gpuirlist.c cuda/gpuir_cuda_status.c cuda/gpuir_cuda_window.c build/engine_obj/*.o "${CUDA_LINK[@]}" || echo "TEST BUILD FAILED"
( timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 build/test_cuda_search --sanitize > $O/racecheck.log 2>&1; echo "racecheck rc=$? $(el) s" >> $O/san.txt
  timeout 90 compute-sanitizer --tool synccheck --error-exitcode 1 build/test_cuda_search --sanitize > $O/synccheck.log 2>&1; echo "synccheck rc=$? $(el) s" >> $O/san.txt
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 build/test_cuda_search --sanitize > $O/memcheck.log 2>&1; echo "memcheck rc=$? $(el) s" >> $O/san.txt ) &
GPUIR_TEST_REQUIRE_GPU=1 timeout 150 build/test_cuda_search --quick > $O/search.log 2>&1; echo "search quick rc=$? $(tail -n 1 $O/search.log) $(el) s"
wait
cat $O/san.txt
for f in $O/*check.log; do echo "$(basename $f): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed' $f | tail -2 | tr '\n' ' ')"; done
echo total $(el) s
cd $O && tar czf all.tgz multi.tgz *.out *.log *.txt gen-* 2>/dev/null; rm -f *.log gen-* multi.tgz; ls
