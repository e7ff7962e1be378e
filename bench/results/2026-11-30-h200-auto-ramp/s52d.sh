#!/bin/bash
# s52d (SQL call 4 of 6): part AD; server and all 1.22 M paragraphs loaded; the rtt grid at k = 10 with
# 64 clients, three rounds (cpu / gpu / auto in turn, medians), prepared statements
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/; ls /tmp/data
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=$O scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -4 $O/load.out
GPUIR_CHECK_RTT_K=10 GPUIR_CHECK_RTT_CLIENTS=64 GPUIR_CHECK_RTT_ROUNDS=3 GPUIR_CHECK_LOG=$O timeout 300 scripts/gpu-check rtt > $O/rtt.out 2>&1; echo "rtt rc=$? $(el) s"
cut -c1-300 $O/rtt.txt; tail -3 $O/route.txt
