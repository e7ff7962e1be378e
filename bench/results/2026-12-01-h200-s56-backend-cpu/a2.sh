#!/bin/bash
# s56 second machine, call 1 (carry .device/data): PostgreSQL 15 and gpuir (this tree) built and installed (the
# .so kept as /tmp/var/gpuir-new.so); a cluster with the GPU service and the pg_regress suite with gpuir.device = gpu
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data /tmp/var
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
cp .device/data/* /tmp/data/
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/blog scripts/gpu-check build > $O/build.out 2>&1; echo "build rc=$? $(el) s"; tail -2 $O/build.out
cp $(/opt/pg15/bin/pg_config --pkglibdir)/gpuir.so /tmp/var/gpuir-new.so
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/rlog timeout 300 scripts/gpu-check server regress > $O/regress.out 2>&1; echo "regress rc=$? $(el) s"
grep -E "tests passed|failed|FAILED|gpu_queries" -A2 $O/regress.out | head -12
