#!/bin/bash
# the session's CPU-engine changes against the GPU: gpu-check equiv (and/or/bmw x k = 10, 1000)
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
timeout $(( 570 - $(date +%s) + T0 )) scripts/gpu-check equiv > $OUT/equiv.log 2>&1; echo rc $?
grep -A8 "^mode" $OUT/equiv.log
grep -c ERROR /tmp/gpuir-gpu-check/postgres.log
echo end $(( $(date +%s) - T0 ))
