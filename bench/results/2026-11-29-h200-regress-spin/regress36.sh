#!/bin/bash
# the pg_regress suite with gpuir.device = gpu after the worker's spin and busy = 2 (0b1a8b8)
T0=$(date +%s)
scripts/gpu-check build server > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+server $(( $(date +%s) - T0 ))
timeout $(( 290 - $(date +%s) + T0 )) scripts/gpu-check regress > $OUT/regress-step.log 2>&1; echo "regress rc $? at $(( $(date +%s) - T0 ))"
grep -E "tests passed|FAILED|failed" $OUT/regress-step.log | head -5
su pg -c "/opt/pg15/bin/psql -X -At -h /tmp -p 5499 -d postgres -c 'SELECT device, gpu_queries, cpu_queries, fallbacks, errors FROM gpuir_status()'" 2>&1 | tail -2
echo end $(( $(date +%s) - T0 ))
