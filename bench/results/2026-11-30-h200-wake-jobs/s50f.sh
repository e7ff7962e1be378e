#!/bin/bash
# s50 SQL round 2, call 4 of 4: part AD; server (HEAD build), all 1.22 M paragraphs, then s50ab2.sh
# (search jobs 2 against 4, wake threads 0 and 2, batch_window)
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4
GPUIR_CHECK_LOG=$O scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -3 $O/load.out | head -1
bash .device/s50ab2.sh 2 "j2 j4" > $O/ab2.out 2>&1; echo "ab2 rc=$? $(el) s"; cat $O/ab2.txt
grep -i "error\|fatal" /tmp/gpuir-work/postgres.log | grep -v "canceling\|terminating connection" | head -5
cd $O && tar czf all.tgz *.out *.txt 2>/dev/null; ls
