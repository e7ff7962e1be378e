#!/bin/bash
# s56 second machine, call 5: the server of call 4; gpu-check ab, base 329052a against this tree, cpu and gpu,
# bmw and or at 64 clients, ROUNDS (3) rounds; then bench/sampler profiles of gpu and cpu bmw at 64 clients
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - T0 )); }
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_AB_LIBS="base=/tmp/var/gpuir-base.so new=/tmp/var/gpuir-new.so" \
GPUIR_CHECK_AB_VARIANTS="cpu:-c gpuir.device=cpu;gpu:-c gpuir.device=gpu" \
GPUIR_CHECK_AB_MODES="bmw or" GPUIR_CHECK_AB_CLIENTS=64 GPUIR_CHECK_AB_ROUNDS=${ROUNDS:-3} \
GPUIR_CHECK_LOG=/tmp/alog timeout 300 scripts/gpu-check ab > /tmp/ab.out 2>&1; echo "ab rc=$? $(el) s"
cp /tmp/alog/ab.txt /tmp/alog/ab-medians.txt $O/ 2>/dev/null; cat $O/ab-medians.txt
awk '{ for (i = 1; i <= NF; i++) if ($i == "wake" || $i == "round_trip" || $i == "queue" || $i == "worker_cpu") printf "%s %s %s %s  ", $2, $3, $i, $(i+1); print "" }' $O/ab.txt | grep gpu
GPUIR_CHECK_PROFILE_POINTS="gpu-bmw-64 cpu-bmw-64" GPUIR_CHECK_LOG=/tmp/plog timeout 200 scripts/gpu-check profile > /tmp/prof.out 2>&1; echo "profile rc=$? $(el) s"
for f in profile-gpu-bmw-64.txt profile-cpu-bmw-64.txt hostcpu-gpu-bmw-64.txt hostcpu-cpu-bmw-64.txt; do cp /tmp/plog/$f $O/ 2>/dev/null; done
cat $O/hostcpu-*.txt; sed -n 1,25p $O/profile-gpu-bmw-64.txt
