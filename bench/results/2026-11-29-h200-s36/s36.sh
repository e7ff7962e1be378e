#!/bin/bash
# thirty-sixth session: the strict equivalence check (score bits), the regression suite with
# gpuir.device = gpu, then the round-trip grid (pgbench, k = 10, 1/16/64 clients) on 304k
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
timeout 120 scripts/gpu-check equiv > $OUT/equiv.log 2>&1; echo "equiv rc $? at $(( $(date +%s) - T0 ))"
grep -A8 "^mode" $OUT/equiv.log
timeout 150 scripts/gpu-check regress > $OUT/regress-step.log 2>&1; echo "regress rc $? at $(( $(date +%s) - T0 ))"
grep -E "tests passed|FAILED|failed" $OUT/regress-step.log | head -5
timeout $(( 580 - $(date +%s) + T0 )) scripts/gpu-check rtt > $OUT/rtt.log 2>&1; echo "rtt rc $? at $(( $(date +%s) - T0 ))"
grep -A12 "^mode" $OUT/rtt.log | cut -c1-90
grep -c ERROR /tmp/gpuir-gpu-check/postgres.log
echo end $(( $(date +%s) - T0 ))
