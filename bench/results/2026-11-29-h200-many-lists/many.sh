#!/bin/bash
# test_cuda_search with the many-lists transit test: quick run, then memcheck --quick
T0=$(date +%s)
scripts/gpu-check build > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build $(( $(date +%s) - T0 ))
make -s PG_CONFIG=/opt/pg15/bin/pg_config test/test_cuda_search > $OUT/make-test.log 2>&1 || { tail -30 $OUT/make-test.log; exit 1; }
GPUIR_TEST_REQUIRE_GPU=1 timeout 200 stdbuf -oL test/test_cuda_search --quick > $OUT/quick.log 2>&1; echo "quick rc $? at $(( $(date +%s) - T0 ))"
grep -E "many lists|passed|FAIL" $OUT/quick.log | tail -12
GPUIR_TEST_REQUIRE_GPU=1 timeout 250 compute-sanitizer --tool memcheck --error-exitcode 1 test/test_cuda_search --quick > $OUT/memcheck2.log 2>&1; echo "memcheck rc $? at $(( $(date +%s) - T0 ))"
grep -E "many lists|passed|FAIL|ERROR SUMMARY" $OUT/memcheck2.log | tail -8
echo end $(( $(date +%s) - T0 ))
