#!/bin/bash
# s57 second machine, call 5 (carry .device/p3): server and all 1.22 M paragraphs loaded (this tree's gpuir.so);
# equiv over 10,000 queries (ctids and score bits, GPU against the CPU); gpu-check ab, base a504e8a against this
# tree, cpu and gpu, bmw and or at 64 clients, three rounds
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/; ls /tmp/data
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=/tmp/llog scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -3 $O/load.out
GPUIR_CHECK_QUERIES=10000 GPUIR_CHECK_LOG=/tmp/elog timeout 150 scripts/gpu-check equiv > $O/equiv.out 2>&1; echo "equiv rc=$? $(el) s"; grep -A7 "^mode" $O/equiv.out
GPUIR_CHECK_AB_LIBS="base=/tmp/var/gpuir-base.so new=/tmp/var/gpuir-new.so" \
GPUIR_CHECK_AB_VARIANTS="cpu:-c gpuir.device=cpu;gpu:-c gpuir.device=gpu" \
GPUIR_CHECK_AB_MODES="bmw or" GPUIR_CHECK_AB_CLIENTS=64 GPUIR_CHECK_AB_ROUNDS=${ROUNDS:-3} \
GPUIR_CHECK_LOG=/tmp/alog timeout 280 scripts/gpu-check ab > /tmp/ab.out 2>&1; echo "ab rc=$? $(el) s"
cp /tmp/alog/ab.txt /tmp/alog/ab-medians.txt $O/ 2>/dev/null; cat $O/ab-medians.txt
awk '{ for (i = 1; i <= NF; i++) if ($i == "wake" || $i == "round_trip" || $i == "queue" || $i == "worker_cpu") printf "%s %s %s %s  ", $2, $3, $i, $(i+1); print "" }' $O/ab.txt | grep gpu | head -12
grep -i "error\|fatal\|panic" /tmp/gpuir-work/postgres.log 2>/dev/null | grep -v "canceling\|terminating connection\|administrator command" | head -5
