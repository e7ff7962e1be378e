#!/bin/bash
# session 34: pruned lists at a 10% budget (304k paragraphs): q/s with gpuir.pruned_lists on and off
# (16, 64 clients), equivalence against the CPU engine at 10% with them on, the status counters
# (run when gpuir.pruned_lists defaulted to on; now off: set it on before the first budget step to repeat this)
T0=$(date +%s)
L=/tmp/gpuir-gpu-check
st() { echo "$1" | su pg -c "/opt/pg15/bin/psql -X -h /tmp -p 5499 -d gpuir"; }
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
make -s PG_CONFIG=/opt/pg15/bin/pg_config test/test_prune >/dev/null && test/test_prune | tail -2
GPUIR_CHECK_BUDGETS="10" GPUIR_CHECK_RTT_CLIENTS="16 64" timeout 150 scripts/gpu-check budget > $OUT/budget-on.log 2>&1; tail -7 $OUT/budget-on.log | cut -c1-220
st "SELECT gpu_queries, cpu_queries, fallbacks, errors, pruned_decided, pruned_refused, list_hits, bytes_shipped, bytes_cached, last_error FROM gpuir_status();"
echo equiv $(( $(date +%s) - T0 ))
timeout 150 scripts/gpu-check equiv > $OUT/equiv.log 2>&1; cat $L/equivalence.txt
st "SELECT gpu_queries, cpu_queries, fallbacks, errors, pruned_decided, pruned_refused, last_error FROM gpuir_status();"
st "ALTER SYSTEM SET gpuir.pruned_lists = off;"
echo off $(( $(date +%s) - T0 ))
GPUIR_CHECK_BUDGETS="10" GPUIR_CHECK_RTT_CLIENTS="16 64" timeout $(( 580 - $(date +%s) + T0 )) scripts/gpu-check budget > $OUT/budget-off.log 2>&1; tail -5 $OUT/budget-off.log | cut -c1-220
st "SELECT gpu_queries, fallbacks, errors, pruned_decided, pruned_refused FROM gpuir_status();"
cp $L/*.txt $OUT/ 2>/dev/null; grep -h -i "gpuir\|error" $L/*.log 2>/dev/null | grep -v "^$" | tail -40 > $OUT/serverlog-tail.txt
echo end $(( $(date +%s) - T0 ))
