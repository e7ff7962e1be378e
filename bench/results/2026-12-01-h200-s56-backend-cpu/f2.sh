#!/bin/bash
# s56 second machine, call 6: the server of call 4 (this tree's gpuir.so installed back by ab); gpu-check ab of
# the CPU engine and the GPU with gpuir.wake_fanout 0 / 2 (default) / 4, bmw and or at 64 clients, ROUNDS (3) rounds
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_AB_VARIANTS="cpu:-c gpuir.device=cpu;gpu:-c gpuir.device=gpu;f0:-c gpuir.device=gpu -c gpuir.wake_fanout=0;f4:-c gpuir.device=gpu -c gpuir.wake_fanout=4" \
GPUIR_CHECK_AB_MODES="bmw or" GPUIR_CHECK_AB_CLIENTS=64 GPUIR_CHECK_AB_ROUNDS=${ROUNDS:-3} \
GPUIR_CHECK_LOG=/tmp/flog timeout 300 scripts/gpu-check ab > /tmp/fan.out 2>&1; echo "ab rc=$? $(( $(date +%s) - T0 )) s"
cp /tmp/flog/ab.txt $O/fanout.txt; cp /tmp/flog/ab-medians.txt $O/fanout-medians.txt; cat $O/fanout-medians.txt
awk '{ for (i = 1; i <= NF; i++) if ($i == "wake" || $i == "round_trip" || $i == "queue" || $i == "answer") printf "%s %s %s  ", $3, $i, $(i+1); print "" }' $O/fanout.txt | grep -v "^cpu"
