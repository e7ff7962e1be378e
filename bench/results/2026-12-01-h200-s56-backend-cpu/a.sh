#!/bin/bash
# s56 call 1 (carry .device/data): PostgreSQL 15 and gpuir (this tree) built and installed; the kernel test
# (--quick) and memcheck over its --sanitize subset
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data /tmp/var
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
cp .device/data/* /tmp/data/
rm -rf /tmp/eng; mkdir -p /tmp/eng; tar cf - --exclude=./.device . | tar xf - -C /tmp/eng	# gpu-check build cleans this tree
(GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/blog scripts/gpu-check build > $O/build.out 2>&1; echo "build rc=$? $(el) s" > /tmp/build.rc) &
BP=$!
(cd /tmp/eng && make -f bench/engine.mk -j12 build/test_cuda_search build/engine_bench > $O/kbuild.log 2>&1) || tail -20 $O/kbuild.log
echo "kernel test built $(el) s"
T=/tmp/tcs; cp /tmp/eng/build/test_cuda_search $T
(compute-sanitizer --tool memcheck $T --sanitize > /tmp/memcheck.log 2>&1; echo "memcheck rc=$?" >> /tmp/memcheck.log) &
SP=$!
timeout 200 $T --quick > $O/test-quick.txt 2>&1; echo "test --quick rc=$? $(el) s"; grep -E "FAIL|fused" $O/test-quick.txt | head -8; tail -1 $O/test-quick.txt
wait $SP; grep -hE "SUMMARY|rc=|passed" /tmp/memcheck.log; tail -c 2000 /tmp/memcheck.log > $O/memcheck.txt
wait $BP; cat /tmp/build.rc; tail -2 $O/build.out
cp $(/opt/pg15/bin/pg_config --pkglibdir)/gpuir.so /tmp/var/gpuir-new.so && echo "new .so kept $(el) s"
