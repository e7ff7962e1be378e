#!/bin/bash
# 5488e58 on the GPU: readers started, budget at 10% on the 304k table, equiv, a reader killed
export GPUIR_CHECK_QUERIES=300 GPUIR_CHECK_SECONDS=3 GPUIR_CHECK_WARM=2 GPUIR_CHECK_RTT_CLIENTS="16 64"
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build $(( $(date +%s) - T0 ))
GPUIR_CHECK_BUDGETS="10" GPUIR_CHECK_LIST_READERS="0 4" scripts/gpu-check budget > $OUT/budget.log 2>&1
grep -E "^(or|bmw|mode)" $OUT/budget.log
ps ax | grep "list reader" | grep -v grep
kill -TERM $(pgrep -f "gpuir list reader 0.1"); sleep 1
GPUIR_CHECK_LIST_READERS=4 timeout 150 scripts/gpu-check equiv status > $OUT/equiv.log 2>&1
grep -A7 "^mode" $OUT/equiv.log; grep -E "fallbacks|errors" $OUT/equiv.log
ps ax | grep "list reader" | grep -v grep
grep -hiE "ERROR|reader|staging" /tmp/gpuir-gpu-check/postgres.log | grep -v "administrator command" | tail -6
echo end $(( $(date +%s) - T0 ))
