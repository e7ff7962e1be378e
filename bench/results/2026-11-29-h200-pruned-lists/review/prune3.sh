#!/bin/bash
# review: gpu-check's pruned step on the reviewed code
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
timeout $(( 560 - $(date +%s) + T0 )) scripts/gpu-check pruned > $OUT/pruned.log 2>&1; echo rc $?
tail -12 $OUT/pruned.log
grep -c ERROR /tmp/gpuir-gpu-check/postgres.log
echo end $(( $(date +%s) - T0 ))
