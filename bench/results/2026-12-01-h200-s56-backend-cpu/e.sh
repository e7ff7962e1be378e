#!/bin/bash
# s56 call 5: the server of call 4 (this tree's gpuir.so); gpu-check ab of gpuir.wake_fanout 0 / 1 / 2 / 4 on
# the GPU, or and bmw at 64 clients, with the stages (wake: the worker's answer until the backend saw it)
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_AB_VARIANTS="f0:-c gpuir.device=gpu -c gpuir.wake_fanout=0;f1:-c gpuir.device=gpu -c gpuir.wake_fanout=1;f2:-c gpuir.device=gpu;f4:-c gpuir.device=gpu -c gpuir.wake_fanout=4" \
GPUIR_CHECK_AB_MODES="bmw or" GPUIR_CHECK_AB_CLIENTS=64 GPUIR_CHECK_AB_ROUNDS=${ROUNDS:-2} \
GPUIR_CHECK_LOG=/tmp/flog timeout 300 scripts/gpu-check ab > /tmp/fan.out 2>&1; echo "ab rc=$? $(( $(date +%s) - T0 )) s"
cp /tmp/flog/ab.txt $O/fanout.txt; cp /tmp/flog/ab-medians.txt $O/fanout-medians.txt; cat $O/fanout-medians.txt
awk '{ for (i = 1; i <= NF; i++) if ($i == "wake" || $i == "round_trip" || $i == "queue") printf "%s %s %s  ", $3, $i, $(i+1); print "" }' $O/fanout.txt
