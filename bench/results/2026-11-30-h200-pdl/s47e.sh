#!/bin/bash
# s47 call 5: PDL for calls of <= 4 queries + one barrier for the tile's threshold and histogram (new) against 9661598 (a-main); full test + sanitizers
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
ROUNDS=1 MODES=and,or,bmw KS=10,1000 BATCHES=1,16 TESTS=0 bash .device/multi.sh > $O/multi.out 2>&1
tail -26 $O/multi.out
echo "multi $(el) s"
# the kernels' checks (these lines, as run, are now bench/gpu-kernel-checks; the full
# test's limit was 440 s less the time spent so far)
bench/gpu-kernel-checks $(( 440 - $(el) ))
echo total $(el) s
cd $O && tar czf all.tgz multi.tgz *.out *.log *.txt 2>/dev/null; rm -f *.log multi.tgz *.txt; ls
