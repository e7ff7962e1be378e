#!/bin/bash
# s51 SQL, call 3 of 3: part AD; server, all 1.22 M paragraphs; the rtt grid with prepared
# statements, cpu / gpu / auto at 1, 16, 64 clients, and, or, bmw, k = 10 and 1000 (issue
# "CPU and GPU together": auto on the full table, where the GPU wins most cells)
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared GPUIR_CHECK_RTT_K="10 1000"
GPUIR_CHECK_LOG=$O scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -4 $O/load.out
GPUIR_CHECK_LOG=$O timeout 420 scripts/gpu-check rtt > $O/rtt.out 2>&1; echo "rtt rc=$? $(el) s"
cut -c1-75 $O/rtt.txt; cat $O/route.txt | tail -4
su pg -c "/opt/pg15/bin/psql -X -h /tmp -p 5499 -d gpuir -c 'SELECT gpu_queries, batches, mean_batch_size, errors, cpu_queries, fallbacks, auto_to_cpu, auto_to_gpu FROM gpuir_status()'" > $O/status.txt 2>&1; cat $O/status.txt
