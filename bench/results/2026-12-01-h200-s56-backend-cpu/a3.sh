#!/bin/bash
# s56 third machine (carry .device/data): the final tree built and installed, the pg_regress suite with
# gpuir.device = gpu through the GPU service
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name --format=csv,noheader
cp .device/data/* /tmp/data/
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/blog scripts/gpu-check build > $O/build.out 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $O/build.out
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/rlog timeout 240 scripts/gpu-check server regress > $O/regress.out 2>&1; echo "regress rc=$? $(( $(date +%s) - T0 )) s"
grep -E "tests passed|failed|FAILED" $O/regress.out | head; grep -A3 "gpu_queries" $O/regress.out | head -4
