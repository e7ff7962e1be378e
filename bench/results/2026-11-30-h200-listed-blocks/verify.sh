#!/bin/bash
# s45 call 3: listed blocks: test_cuda_search full + test_cuda_decode full + sanitizers on both (--sanitize), gpu-check build server regress load equiv, then the generated log (a-main, new)
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
id pg >/dev/null 2>&1 || useradd -m pg
for f in .device/var/*.tar; do [ -f "$f" ] || continue; n=$(basename $f .tar); rm -rf /tmp/var/$n; mkdir -p /tmp/var/$n; tar xf $f -C /tmp/var/$n; (cd /tmp/var/$n && make -f bench/engine.mk -j6 > $O/build-$n.log 2>&1 || echo "BUILD FAILED $n") & done
make -f bench/engine.mk -j10 > $O/build-new.log 2>&1 || { echo "BUILD FAILED new"; tail -20 $O/build-new.log; }
CUDA_LINK=(-L/usr/local/cuda/lib64 -lcudart_static -lrt -lpthread -ldl -lstdc++ -lm)
nvcc -O3 --std=c++17 --fmad=false -gencode arch=compute_90,code=sm_90 -Isrc -Icuda -c test/cuda_decode_kernel.cu -o build/cuda_decode_kernel.o &&
gcc -O2 -Wall -Wextra -Isrc -Icuda -o build/test_cuda_decode test/test_cuda_decode.c src/gpuircodec.c cuda/gpuir_cuda_status.c build/cuda_decode_kernel.o build/engine_obj/*.o "${CUDA_LINK[@]}" &&
gcc -O2 -Wall -Wextra -ffp-contract=off -Isrc -Icuda -o build/test_cuda_search test/test_cuda_search.c src/gpuircodec.c src/gpuirlist.c cuda/gpuir_cuda_status.c cuda/gpuir_cuda_window.c build/engine_obj/*.o "${CUDA_LINK[@]}" || echo "TEST BUILD FAILED"
cp build/test_cuda_search /tmp/tcs; cp build/test_cuda_decode /tmp/tcd; cp build/engine_bench /tmp/engine_bench_new
wait
echo "built $(el) s"
( for t in tcs tcd; do
  timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 /tmp/$t --sanitize > $O/racecheck-$t.log 2>&1; echo "racecheck $t rc=$? $(el) s" >> $O/san.txt
  timeout 90 compute-sanitizer --tool synccheck --error-exitcode 1 /tmp/$t --sanitize > $O/synccheck-$t.log 2>&1; echo "synccheck $t rc=$? $(el) s" >> $O/san.txt
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/$t --sanitize > $O/memcheck-$t.log 2>&1; echo "memcheck $t rc=$? $(el) s" >> $O/san.txt
  done ) &
( GPUIR_TEST_REQUIRE_GPU=1 timeout 300 /tmp/tcs > $O/search-full.log 2>&1; echo "search full rc=$? $(tail -n 1 $O/search-full.log) $(el) s" > $O/full.txt
  GPUIR_TEST_REQUIRE_GPU=1 timeout 80 /tmp/tcd > $O/decode-full.log 2>&1; echo "decode full rc=$? $(tail -n 1 $O/decode-full.log) $(el) s" >> $O/full.txt ) &
GPUIR_DATA=$PWD/.device/data GPUIR_CHECK_LOG=$O/check GPUIR_CHECK_QUERIES=300 timeout 330 scripts/gpu-check build server regress load equiv > $O/check.out 2>&1; echo "gpu-check rc=$? $(el) s"
grep -E "tests passed|FAILED|^and |^or |^bmw |mismatch" $O/check.out
wait
cat $O/full.txt $O/san.txt
grep -i fail $O/search-full.log $O/decode-full.log | grep -v " 0 failed" | cut -c1-200 | head
for f in $O/*check-*.log; do echo "$(basename $f): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|passed' $f | tail -2 | tr '\n' ' ')"; done
mkdir -p build; cp /tmp/engine_bench_new build/engine_bench
GLIMIT=${GLIMIT:-480} GMODES=or,bmw,and GKS=10,1000 GBATCHES=1,1000 bash .device/gen.sh 2>&1 | tee $O/gen.out | tail -14
echo total $(el) s
cd $O && tar czf all.tgz *.log *.txt *.out check gen-* 2>/dev/null; rm -rf check *.log gen-*; ls $O
