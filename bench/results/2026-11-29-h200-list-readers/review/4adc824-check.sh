#!/bin/bash
export GPUIR_CHECK_QUERIES=300 GPUIR_CHECK_SECONDS=3 GPUIR_CHECK_WARM=2 GPUIR_CHECK_RTT_CLIENTS="64"
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build $(( $(date +%s) - T0 ))
GPUIR_CHECK_LOG=/tmp/ck-small GPUIR_CHECK_BUDGETS="10" GPUIR_CHECK_LIST_READERS="0 4" scripts/gpu-check budget > $OUT/budget-304k.log 2>&1
grep -E "^(or|bmw|mode)" $OUT/budget-304k.log; echo small $(( $(date +%s) - T0 ))
SCALE_ROWS=10000000 SCALE_PARTS=12 bench/sql-scale gen index > $OUT/scale.log 2>&1 || tail -5 $OUT/scale.log
echo scale $(( $(date +%s) - T0 ))
GPUIR_CHECK_INDEX=big_idx GPUIR_CHECK_BUDGETS="10" GPUIR_CHECK_LIST_READERS="4" scripts/gpu-check budget > $OUT/budget-10m.log 2>&1
grep -E "^(or|bmw|mode)" $OUT/budget-10m.log; ps ax | grep -c "[l]ist reader"
GPUIR_CHECK_INDEX=big_idx timeout 100 scripts/gpu-check equiv status > $OUT/equiv.log 2>&1
grep -A7 "^mode" $OUT/equiv.log; grep -E "fallbacks|errors" $OUT/equiv.log
echo end $(( $(date +%s) - T0 ))
