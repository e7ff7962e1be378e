#!/bin/bash
# s53 checks with the default settings: equiv on CHECK_QUERIES queries, then the worker killed under pgbench
set -uo pipefail; O=${OUT:-/tmp/out}; T0=$(date +%s)
export GPUIR_DATA=/tmp/data GPUIR_CHECK_QUERIES=${CHECK_QUERIES:-3000}
GPUIR_CHECK_LOG=$O timeout 200 scripts/gpu-check equiv pgbench > $O/checks.out 2>&1; echo "checks rc=$? $(( $(date +%s) - T0 )) s"
grep -iE "mismatch|error|pass|fail|ok" $O/checks.out | tail -15
