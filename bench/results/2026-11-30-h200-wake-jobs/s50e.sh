#!/bin/bash
# s50 SQL round 2, call 1 of 4: PostgreSQL 15 and gpuir built (HEAD: 2 search jobs), and a variant with
# 4 search jobs (GPUIR_JOBS and GPUIR_CUDA_TRANSIT_SLOTS 4) kept as /tmp/var/gpuir-j4.so; part AA kept in /tmp/data
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data /tmp/var
el() { echo $(( $(date +%s) - T0 )); }
cp .device/data/* /tmp/data/
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=$O scripts/gpu-check build > $O/build.out 2>&1; echo "build rc=$? $(el) s"; tail -2 $O/build.out
cp gpuir.so /tmp/var/gpuir-j2.so
rm -rf /tmp/j4 && mkdir /tmp/j4 && git ls-files -z | xargs -0 cp --parents -t /tmp/j4 && cd /tmp/j4 || exit 1
sed -i 's/^#define GPUIR_JOBS\t*2$/#define GPUIR_JOBS 4/' src/gpuirworker.c
sed -i 's/^#define GPUIR_CUDA_TRANSIT_SLOTS\t*2$/#define GPUIR_CUDA_TRANSIT_SLOTS 4/' cuda/gpuir_cuda.h
grep -n "define GPUIR_JOBS\|define GPUIR_CUDA_TRANSIT_SLOTS" src/gpuirworker.c cuda/gpuir_cuda.h
export PATH=/usr/local/cuda/bin:$PATH
make -j16 -s PG_CONFIG=/opt/pg15/bin/pg_config > $O/j4-build.log 2>&1; echo "j4 build rc=$? $(el) s"; tail -3 $O/j4-build.log
cp gpuir.so /tmp/var/gpuir-j4.so; ls -la /tmp/var
