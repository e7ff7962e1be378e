#!/bin/bash
# s46 call 5: histogram counted in the emit loop and read from the threshold bucket up, one kth-bin scan (raking; warp scans in the seed kernel), partial floor back at 16,384; against HEAD efdb7c1 (a-main); then test_cuda_search full + sanitizers
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
ROUNDS=1 MODES=and,or,bmw KS=10,1000 BATCHES=1,1000 TESTS=0 bash .device/multi.sh > $O/multi.out 2>&1
tail -28 $O/multi.out
echo "multi $(el) s"
GBATCHES=1,16,1000 GKS=10,1000 GMODES=or,bmw GLIMIT=300 bash .device/gen.sh > $O/gen.out 2>&1; tail -14 $O/gen.out
echo "benchmarks $(el) s"
# the kernels' checks (these lines, as run, are now bench/gpu-kernel-checks; the full
# test's limit was 575 s less the time spent so far)
bench/gpu-kernel-checks $(( 575 - $(el) ))
echo total $(el) s
cd $O && tar czf all.tgz multi.tgz *.out *.log *.txt gen-* 2>/dev/null; rm -f *.log gen-* multi.tgz *.txt; ls
