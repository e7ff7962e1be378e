#!/bin/bash
# s55 second machine, call 1 (carry .device/data): PostgreSQL 15 and gpuir (this tree) built and installed
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data /tmp/var
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
cp .device/data/* /tmp/data/
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/blog scripts/gpu-check build > $O/build.out 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"; tail -2 $O/build.out
