#!/bin/bash
# s55 call 1 (carry .device/data): PostgreSQL 15 and gpuir (this tree) built and installed (the .so kept as
# /tmp/var/gpuir-new.so); the kernel test (--quick) with memcheck and synccheck over its --sanitize subset
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data /tmp/var
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
cp .device/data/* /tmp/data/
rm -rf /tmp/eng; mkdir -p /tmp/eng; tar cf - --exclude=./.device . | tar xf - -C /tmp/eng	# gpu-check build cleans this tree
(GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/blog scripts/gpu-check build > $O/build.out 2>&1; echo "build rc=$? $(el) s" > /tmp/build.rc) &
BP=$!
(cd /tmp/eng && make -f bench/engine.mk -j16 build/test_cuda_search build/engine_bench > $O/kbuild.log 2>&1) || tail -20 $O/kbuild.log
echo "kernel test built $(el) s"
T=/tmp/tcs; cp /tmp/eng/build/test_cuda_search $T
(compute-sanitizer --tool memcheck $T --sanitize > /tmp/memcheck.log 2>&1; echo "memcheck rc=$?" >> /tmp/memcheck.log
 compute-sanitizer --tool synccheck $T --sanitize > /tmp/synccheck.log 2>&1; echo "synccheck rc=$?" >> /tmp/synccheck.log) &
SP=$!
timeout 150 $T --quick > $O/test-quick.txt 2>&1; echo "test --quick rc=$? $(el) s"; grep -E "FAIL" $O/test-quick.txt | head -5; tail -1 $O/test-quick.txt
wait $SP; grep -hE "SUMMARY|rc=|passed" /tmp/memcheck.log /tmp/synccheck.log; cat /tmp/memcheck.log /tmp/synccheck.log | tail -c 3000 > $O/sanitize.txt
wait $BP; cat /tmp/build.rc; tail -2 $O/build.out
cp $(/opt/pg15/bin/pg_config --pkglibdir)/gpuir.so /tmp/var/gpuir-new.so && echo "new .so kept $(el) s"
