#!/bin/bash
# session 34: 5a0ddae's pruned path (run_docs) against the CPU engine at a 10% budget, gpuir.pruned_lists on
T0=$(date +%s)
L=/tmp/gpuir-gpu-check
st() { echo "$1" | su pg -c "/opt/pg15/bin/psql -X -h /tmp -p 5499 -d gpuir"; }
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
st "ALTER SYSTEM SET gpuir.pruned_lists = on;"
GPUIR_CHECK_BUDGETS="10" GPUIR_CHECK_RTT_CLIENTS="64" timeout 100 scripts/gpu-check budget > $OUT/budget-on.log 2>&1; tail -4 $OUT/budget-on.log | cut -c1-200
st "SHOW gpuir.pruned_lists;"
timeout $(( 560 - $(date +%s) + T0 )) scripts/gpu-check equiv > $OUT/equiv.log 2>&1; cat $L/equivalence.txt
st "SELECT gpu_queries, cpu_queries, fallbacks, errors, pruned_decided, pruned_refused, last_error FROM gpuir_status();"
grep -c "ERROR" $L/postgres.log; grep "ERROR" $L/postgres.log | sort | uniq -c | sort -rn | head -5
echo end $(( $(date +%s) - T0 ))
