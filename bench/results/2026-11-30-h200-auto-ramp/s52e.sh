#!/bin/bash
# s52e (SQL calls 5 and 6 of 6): the rtt grid, clients and k from RTT_CLIENTS / RTT_K, rounds from RTT_ROUNDS
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_RTT_K="$RTT_K" GPUIR_CHECK_RTT_CLIENTS="$RTT_CLIENTS" GPUIR_CHECK_RTT_ROUNDS=$RTT_ROUNDS GPUIR_CHECK_LOG=$O timeout 560 scripts/gpu-check rtt > $O/rtt.out 2>&1; echo "rtt rc=$? $(( $(date +%s) - T0 )) s"
cut -c1-300 $O/rtt.txt; tail -3 $O/route.txt
su pg -c "/opt/pg15/bin/psql -X -h /tmp -p 5499 -d gpuir -c 'SELECT gpu_queries, batches, mean_batch_size, errors, cpu_queries, fallbacks, auto_to_cpu, auto_to_gpu FROM gpuir_status()'" > $O/status.txt 2>&1; cat $O/status.txt
