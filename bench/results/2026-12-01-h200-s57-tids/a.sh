#!/bin/bash
# s57 call 1 (carry .device/pg): PostgreSQL 15 and gpuir (this tree) built and installed; the kernel test
# (--quick) with memcheck over --sanitize; the pg_regress suite through the GPU service; gpuir.so back as base
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data /tmp/var
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
cp .device/pg/* /tmp/data/
rm -rf /tmp/eng; mkdir -p /tmp/eng; tar cf - --exclude=./.device . | tar xf - -C /tmp/eng
(GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/blog scripts/gpu-check build > /tmp/build.out 2>&1; echo "build rc=$? $(el) s" > /tmp/build.rc) &
BP=$!
(cd /tmp/eng && make -f bench/engine.mk -j12 build/test_cuda_search > /tmp/kbuild.log 2>&1) || tail -20 /tmp/kbuild.log
echo "kernel test built $(el) s"
T=/tmp/tcs; cp /tmp/eng/build/test_cuda_search $T
(compute-sanitizer --tool memcheck $T --sanitize > /tmp/memcheck.log 2>&1; echo "memcheck rc=$?" >> /tmp/memcheck.log) &
SP=$!
timeout 220 $T --quick > /tmp/test-quick.txt 2>&1; echo "test --quick rc=$? $(el) s"; grep -E "FAIL|fused|pruned" /tmp/test-quick.txt | head -12; tail -1 /tmp/test-quick.txt
wait $BP; cat /tmp/build.rc; tail -2 /tmp/build.out
cp $(/opt/pg15/bin/pg_config --pkglibdir)/gpuir.so $O/gpuir-base.so && echo "gpuir.so kept $(el) s"
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/rlog timeout 240 scripts/gpu-check server regress > /tmp/regress.out 2>&1; echo "regress rc=$? $(el) s"
grep -E "tests passed|failed|FAILED" /tmp/regress.out | head; grep -A3 "gpu_queries" /tmp/regress.out | head -4
wait $SP; grep -hE "SUMMARY|rc=|passed" /tmp/memcheck.log; tail -c 1500 /tmp/memcheck.log > $O/memcheck.txt
grep -E "FAIL|fused|pruned|passed" /tmp/test-quick.txt | tail -30 > $O/test-quick.txt
tail -c 3000 /tmp/regress.out > $O/regress.txt
echo "done $(el) s"
