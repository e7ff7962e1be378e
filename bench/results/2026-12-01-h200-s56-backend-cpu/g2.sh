#!/bin/bash
# s56 second machine, call 7: the server of call 4 (this tree); gpu-check ab of cpu, gpu and auto, bmw / or / and
# at 64 clients, ROUNDS (2) rounds, auto's split beside each auto point
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_AB_VARIANTS="cpu:-c gpuir.device=cpu;gpu:-c gpuir.device=gpu;auto:-c gpuir.device=auto" \
GPUIR_CHECK_AB_MODES="bmw or and" GPUIR_CHECK_AB_CLIENTS=64 GPUIR_CHECK_AB_ROUNDS=${ROUNDS:-2} \
GPUIR_CHECK_LOG=/tmp/glog timeout 300 scripts/gpu-check ab > /tmp/g.out 2>&1; echo "ab rc=$? $(( $(date +%s) - T0 )) s"
cp /tmp/glog/ab.txt $O/auto64.txt; cp /tmp/glog/ab-medians.txt $O/auto64-medians.txt; cat $O/auto64-medians.txt
