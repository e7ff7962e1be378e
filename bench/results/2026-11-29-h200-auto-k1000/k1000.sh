#!/bin/bash
# session 34: auto at k = 1000 (cpu, gpu, auto; 1, 16, 64 clients; three rounds a point), 304k paragraphs; gpuir_status's auto columns
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
GPUIR_CHECK_SECONDS=3 GPUIR_CHECK_RTT_ROUNDS=3 GPUIR_CHECK_RTT_K="1000" timeout $(( 570 - $(date +%s) + T0 )) scripts/gpu-check rtt > $OUT/rtt.log 2>&1
cp /tmp/gpuir-gpu-check/route.txt /tmp/gpuir-gpu-check/rtt.txt $OUT/ 2>/dev/null
grep -E "^(mode|and|or|bmw) " $OUT/rtt.log | cut -c1-160; tail -8 $OUT/route.txt; echo end $(( $(date +%s) - T0 ))
