#!/bin/bash
# s55 checks with the default settings (this tree's gpuir.so): equiv on CHECK_QUERIES queries (and, or, bmw
# at k 10 and 1000, GPU against the CPU engine), then the worker killed under pgbench
set -uo pipefail; O=${OUT:-/tmp/out}; T0=$(date +%s)
export GPUIR_DATA=/tmp/data GPUIR_CHECK_QUERIES=${CHECK_QUERIES:-3000}
GPUIR_CHECK_LOG=/tmp/clog timeout 400 scripts/gpu-check equiv pgbench > $O/checks.out 2>&1; echo "checks rc=$? $(( $(date +%s) - T0 )) s"
grep -iE "mismatch|error|pass|fail|ok" $O/checks.out | tail -15
