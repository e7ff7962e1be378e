#!/bin/bash
# s50 SQL, call 3 of 4: part AD; server, all 1.22 M paragraphs, equiv (2,000 queries), then the A/B of
# gpuir.wake_threads at 64 clients (s50ab.sh)
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4
GPUIR_CHECK_LOG=$O scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -4 $O/load.out
GPUIR_CHECK_LOG=$O GPUIR_CHECK_QUERIES=2000 scripts/gpu-check equiv > $O/equiv.out 2>&1; echo "equiv rc=$? $(el) s"; grep -iE "mismatch|^ *(and|or|bmw)" $O/equiv.out | head -12
bash .device/s50ab.sh 2 "2 0" > $O/ab.out 2>&1; echo "ab rc=$? $(el) s"; cat $O/ab.txt; cut -c1-110 $O/host-cpu.txt
su pg -c "/opt/pg15/bin/psql -X -h /tmp -p 5499 -d gpuir -c 'SELECT * FROM gpuir_status()'" > $O/status.txt 2>&1
grep -i "wake thread\|error\|fatal" $O/*.log 2>/dev/null | head -5
cd $O && tar czf all.tgz *.out *.txt 2>/dev/null; ls
