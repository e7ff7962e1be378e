#!/bin/bash
# s53d (SQL call 4 of 4): part AD; server and all 1.22 M paragraphs loaded; then s53/prof.sh
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=$O scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -3 $O/load.out
for s in ${AFTER_LOAD:-s53/prof.sh}; do bash $s; done
