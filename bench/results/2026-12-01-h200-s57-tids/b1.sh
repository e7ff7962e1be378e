#!/bin/bash
# s57 second machine, call 1 (carry .device/pg, .device/var): PostgreSQL 15 and gpuir (this tree, ea83ca0+) built
# and installed, its gpuir.so kept as /tmp/var/gpuir-new.so beside the base (a504e8a) one; the pg_regress suite
# through the GPU service
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data /tmp/var
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
cp .device/pg/* /tmp/data/; cp .device/var/gpuir-base.so /tmp/var/
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/blog scripts/gpu-check build > /tmp/build.out 2>&1; echo "build rc=$? $(el) s"; tail -2 /tmp/build.out
cp $(/opt/pg15/bin/pg_config --pkglibdir)/gpuir.so /tmp/var/gpuir-new.so && echo "new .so kept"
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/rlog timeout 240 scripts/gpu-check server regress > /tmp/regress.out 2>&1; echo "regress rc=$? $(el) s"
grep -E "tests passed|failed|FAILED" /tmp/regress.out | head; grep -A3 "gpu_queries" /tmp/regress.out | head -4
tail -c 3000 /tmp/regress.out > $O/regress.txt
