#!/bin/bash
# s55 call 4 (carry .device/p3): server and all 1.22 M paragraphs loaded (this tree's gpuir.so); the checks
# (equiv over all 50,000 queries, the worker killed under pgbench); then base against new at 64 clients
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=/tmp/llog scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -3 $O/load.out
CHECK_QUERIES=0 bash s55/checks.sh; echo "checks rc=$? $(el) s"
ROUNDS=2 bash s55/ab.sh; echo "ab rc=$? $(el) s"
grep -i "error\|fatal" /tmp/gpuir-work/postgres.log 2>/dev/null | grep -v "canceling\|terminating connection" | head -5
