#!/bin/bash
# s55 second machine, call 4 (carry .device/p3): server and all 1.22 M paragraphs loaded; s55/ab-auto.sh
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=/tmp/llog scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $O/load.out
bash s55/ab-auto.sh; echo "ab-auto rc=$? $(( $(date +%s) - T0 )) s"
grep -i "error\|fatal" /tmp/gpuir-work/postgres.log 2>/dev/null | grep -v "canceling\|terminating connection\|administrator command" | head -5
