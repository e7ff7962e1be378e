#!/bin/bash
# s52a2 (SQL call 1 of 6): PostgreSQL 15 and gpuir built, part AA, the TREC 2005 log and the
# PostgreSQL tarball kept in /tmp/data
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
cp .device/data/* /tmp/data/ && ls /tmp/data
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=$O scripts/gpu-check build > $O/build.out 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"; tail -3 $O/build.out
