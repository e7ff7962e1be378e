#!/bin/bash
# auto against cpu and gpu after the CPU engine's decoder and buffer hints: 16 and 64 clients,
# three rounds a point (medians), 3 s each, k = 10 (as 2026-11-29-h200-auto-learns)
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
GPUIR_CHECK_SECONDS=3 GPUIR_CHECK_RTT_ROUNDS=3 GPUIR_CHECK_RTT_CLIENTS="16 64" timeout $(( 585 - $(date +%s) + T0 )) scripts/gpu-check rtt > $OUT/rtt.log 2>&1; echo "rtt rc $? at $(( $(date +%s) - T0 ))"
grep -A7 "^mode" $OUT/rtt.log | cut -c1-100
echo end $(( $(date +%s) - T0 ))
