#!/bin/bash
# session 33: auto, 16 and 64 clients, three rounds a point, 304k paragraphs
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
GPUIR_CHECK_SECONDS=3 GPUIR_CHECK_RTT_ROUNDS=3 GPUIR_CHECK_RTT_CLIENTS="16 64" timeout $(( 395 - $(date +%s) + T0 )) scripts/gpu-check rtt > $OUT/rtt.log 2>&1
grep -E "^(mode|and|or|bmw) " $OUT/rtt.log | cut -c1-150; echo end $(( $(date +%s) - T0 ))
