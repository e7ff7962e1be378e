#!/bin/bash
# s56 second machine, call 4 (carry .device/p3): server and all 1.22 M paragraphs loaded (this tree's gpuir.so);
# gpu-check cancel (the semaphore wait under statement_timeout and pg_cancel_backend), equiv over all 50,000
# queries, pgbench with the worker killed
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=/tmp/llog scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -3 $O/load.out
GPUIR_CHECK_LOG=/tmp/clog timeout 120 scripts/gpu-check cancel > $O/cancel.out 2>&1; echo "cancel rc=$? $(el) s"; tail -5 $O/cancel.out
GPUIR_CHECK_QUERIES=0 GPUIR_CHECK_LOG=/tmp/elog timeout 220 scripts/gpu-check equiv pgbench > $O/equiv.out 2>&1; echo "equiv pgbench rc=$? $(el) s"
grep -A7 "^mode" $O/equiv.out; grep -E "number of (transactions|failed)|tps" $O/equiv.out
grep -i "error\|fatal\|panic" /tmp/gpuir-work/postgres.log 2>/dev/null | grep -v "canceling\|terminating connection\|administrator command" | head -5
