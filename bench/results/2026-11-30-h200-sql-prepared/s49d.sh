#!/bin/bash
# s49 SQL grid, call 3 of 4: part AD; server, the 1.22 M paragraphs, equiv (2,000 queries), then
# rtt (1/16/64 clients, cpu/gpu/auto, 4 s a point) with pgbench's simple protocol (s49e.sh: prepared)
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4
GPUIR_CHECK_LOG=$O scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -4 $O/load.out
GPUIR_CHECK_LOG=$O GPUIR_CHECK_QUERIES=2000 scripts/gpu-check equiv > $O/equiv.out 2>&1; echo "equiv rc=$? $(el) s"; grep -iE "mismatch|^ *(and|or|bmw)" $O/equiv.out | head -12
for p in simple; do
  mkdir -p $O/rtt-$p; GPUIR_CHECK_LOG=$O/rtt-$p GPUIR_CHECK_PROTOCOL=$p scripts/gpu-check rtt status > $O/rtt-$p.out 2>&1
  echo "== rtt $p rc=$? $(el) s"; cut -c1-70 $O/rtt-$p/rtt.txt
done
cd $O && tar czf all.tgz *.out rtt-* *.log 2>/dev/null; ls
