#!/bin/bash
# A/B of double-buffered partial runs: the tree's code against .device/old's, one server, one table
export GPUIR_CHECK_QUERIES=500 GPUIR_CHECK_SECONDS=3 GPUIR_CHECK_WARM=2 GPUIR_CHECK_RTT_CLIENTS="16 64"
T0=$(date +%s); PGC=/opt/pg15/bin/pg_config
mkdir -p /tmp/newsrc
for f in $(cd .device/old && find . -type f); do mkdir -p /tmp/newsrc/$(dirname $f); cp $f /tmp/newsrc/$f; cp .device/old/$f $f; done
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build-old $(( $(date +%s) - T0 ))
SCALE_ROWS=10000000 SCALE_PARTS=12 bench/sql-scale gen index > $OUT/scale.log 2>&1 || tail -20 $OUT/scale.log
echo scale $(( $(date +%s) - T0 ))
GPUIR_CHECK_LOG=/tmp/ck-old GPUIR_CHECK_INDEX=big_idx GPUIR_CHECK_BUDGETS="10" GPUIR_CHECK_LIST_READERS="4" scripts/gpu-check budget > $OUT/budget-old.log 2>&1
grep -E "^(or|bmw|mode)" $OUT/budget-old.log; echo budget-old $(( $(date +%s) - T0 ))
for f in $(cd /tmp/newsrc && find . -type f); do cp /tmp/newsrc/$f $f; done
(make -s PG_CONFIG=$PGC clean && make -s -j16 PG_CONFIG=$PGC && make -s PG_CONFIG=$PGC install) > $OUT/rebuild.log 2>&1 || { tail -20 $OUT/rebuild.log; exit 1; }
echo rebuild $(( $(date +%s) - T0 ))
GPUIR_CHECK_LOG=/tmp/ck-new GPUIR_CHECK_INDEX=big_idx GPUIR_CHECK_BUDGETS="10" GPUIR_CHECK_LIST_READERS="4" scripts/gpu-check budget > $OUT/budget-new.log 2>&1
grep -E "^(or|bmw|mode)" $OUT/budget-new.log; echo budget-new $(( $(date +%s) - T0 ))
GPUIR_CHECK_LOG=/tmp/ck-new GPUIR_CHECK_INDEX=big_idx timeout 120 scripts/gpu-check equiv status > $OUT/equiv.log 2>&1
grep -A7 "^mode" $OUT/equiv.log; grep -E "fallbacks|errors" $OUT/equiv.log
make -s PG_CONFIG=$PGC test/test_cuda_search > $OUT/tcs-build.log 2>&1
GPUIR_TEST_REQUIRE_GPU=1 timeout 60 test/test_cuda_search --quick > $OUT/tcs.txt 2>&1; tail -1 $OUT/tcs.txt
grep -i "FAIL" $OUT/tcs.txt | head -5
GPUIR_TEST_REQUIRE_GPU=1 timeout 120 compute-sanitizer --tool memcheck test/test_cuda_search --quick > $OUT/memcheck.txt 2>&1; tail -3 $OUT/memcheck.txt
grep -hiE "ERROR|FATAL|reader|staging" /tmp/ck-new/postgres.log | tail -8
echo end $(( $(date +%s) - T0 ))
