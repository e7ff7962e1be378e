#!/bin/bash
# s50: the 4-job variant rebuilt from the whole tree (s50e's copy missed src/gpuirwake.c), then s50ab2.sh
# on the server s50f loaded (j2 against j4)
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
ls /tmp/gpuir-pgdata > /dev/null 2>&1 || { echo "no server: machine is fresh"; exit 3; }
rm -rf /tmp/j4 && mkdir /tmp/j4 && cp -r Makefile gpuir.control sql src cuda /tmp/j4/ && cd /tmp/j4 && rm -f src/*.o src/*.bc cuda/*.o cuda/*.bc || exit 1
sed -i 's/^#define GPUIR_JOBS\t*2$/#define GPUIR_JOBS 4/' src/gpuirworker.c
sed -i 's/^#define GPUIR_CUDA_TRANSIT_SLOTS\t*2$/#define GPUIR_CUDA_TRANSIT_SLOTS 4/' cuda/gpuir_cuda.h
export PATH=/usr/local/cuda/bin:$PATH
make -j16 -s PG_CONFIG=/opt/pg15/bin/pg_config > $O/j4-build.log 2>&1; echo "j4 build rc=$? $(( $(date +%s) - T0 )) s"; nm -D gpuir.so | grep -c gpuir_wake_threads
cp gpuir.so /tmp/var/gpuir-j4.so; cd - > /dev/null
bash .device/s50ab2.sh 1 "j2 j4" > $O/ab2.out 2>&1; echo "ab2 rc=$? $(( $(date +%s) - T0 )) s"; cat $O/ab2.txt
grep -i "error\|fatal" /tmp/gpuir-work/postgres.log | grep -v "canceling\|terminating connection" | tail -3
