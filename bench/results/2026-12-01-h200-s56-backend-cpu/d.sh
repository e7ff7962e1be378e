#!/bin/bash
# s56 call 4 (carry .device/p3): server and all 1.22 M paragraphs loaded (this tree's gpuir.so); equiv over all
# 50,000 queries; then gpu-check ab: base 2ee2ed7 against this tree, cpu / gpu / auto, and / or / bmw at 64 clients
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=/tmp/llog scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -3 $O/load.out
GPUIR_CHECK_QUERIES=0 GPUIR_CHECK_LOG=/tmp/elog timeout 200 scripts/gpu-check equiv > $O/equiv.out 2>&1; echo "equiv rc=$? $(el) s"; grep -A7 "^mode" $O/equiv.out
GPUIR_CHECK_AB_LIBS="base=/tmp/var/gpuir-base.so new=/tmp/var/gpuir-new.so" \
GPUIR_CHECK_AB_VARIANTS="cpu:-c gpuir.device=cpu;gpu:-c gpuir.device=gpu;auto:-c gpuir.device=auto" \
GPUIR_CHECK_AB_MODES="and or bmw" GPUIR_CHECK_AB_CLIENTS=64 GPUIR_CHECK_AB_ROUNDS=${ROUNDS:-2} \
GPUIR_CHECK_LOG=/tmp/alog timeout 330 scripts/gpu-check ab > /tmp/ab.out 2>&1; echo "ab rc=$? $(el) s"
cp /tmp/alog/ab.txt /tmp/alog/ab-medians.txt $O/ 2>/dev/null; cat $O/ab-medians.txt
grep -i "error\|fatal" /tmp/gpuir-work/postgres.log 2>/dev/null | grep -v "canceling\|terminating connection\|administrator command" | head -5
