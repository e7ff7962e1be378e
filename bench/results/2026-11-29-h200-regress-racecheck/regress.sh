#!/bin/bash
# the pg_regress suite with gpuir.device = gpu (the new batch test on the GPU), then racecheck of test_cuda_search --sanitize
T0=$(date +%s)
scripts/gpu-check build server > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+server $(( $(date +%s) - T0 ))
timeout 200 scripts/gpu-check regress > $OUT/regress-step.log 2>&1; echo "regress rc $? at $(( $(date +%s) - T0 ))"
grep -E "batch|tests passed|FAILED|failed" $OUT/regress-step.log | head; tail -4 $OUT/regress-step.log
make -s PG_CONFIG=/opt/pg15/bin/pg_config test/test_cuda_search > /dev/null 2>&1
GPUIR_TEST_REQUIRE_GPU=1 timeout $(( 560 - $(date +%s) + T0 )) compute-sanitizer --tool racecheck --error-exitcode 1 test/test_cuda_search --sanitize > $OUT/racecheck.log 2>&1; echo "racecheck rc $? at $(( $(date +%s) - T0 ))"
grep -E "passed|FAIL|RACECHECK SUMMARY|ERROR SUMMARY" $OUT/racecheck.log | tail -5
echo end $(( $(date +%s) - T0 ))
