#!/bin/bash
# s57 second machine, call 6: the server of call 5 (the new build); bench/sampler profiles of gpu and cpu bmw at
# 64 clients
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_PROFILE_POINTS="gpu-bmw-64 cpu-bmw-64" GPUIR_CHECK_LOG=/tmp/plog timeout 200 scripts/gpu-check profile > /tmp/prof.out 2>&1; echo "profile rc=$? $(( $(date +%s) - T0 )) s"
for f in profile-gpu-bmw-64.txt profile-cpu-bmw-64.txt hostcpu-gpu-bmw-64.txt hostcpu-cpu-bmw-64.txt; do cp /tmp/plog/$f $O/ 2>/dev/null; done
cat $O/hostcpu-*.txt; sed -n 1,12p $O/profile-gpu-bmw-64.txt; grep -E "GpuirStreamRead|gpu_merge|index_lookup|GpuirQueryCheckVisible|GpuirGpuSearch|gpuir_search$" $O/profile-gpu-bmw-64.txt | head
