#!/bin/bash
# s54 call 3 (carry .device/p4): the part kept in /tmp/data; compute-sanitizer racecheck over the kernel
# test's --sanitize subset (the tile kernel's selections over its accumulators); engine_bench this tree
# against the base over 40 M generated documents (or, bmw; k 10 and 1000; batches 1 and 1000), one round
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data; cp .device/p*/* /tmp/data/
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
timeout 300 compute-sanitizer --tool racecheck /tmp/tcs --sanitize > /tmp/racecheck.log 2>&1; echo "racecheck rc=$? $(el) s"; tail -3 /tmp/racecheck.log; tail -c 3000 /tmp/racecheck.log > $O/racecheck.txt
cd /tmp/eng; timeout 240 env OUT=/tmp/v2 AB_ROUNDS=1 bench/gpu-variants /tmp/var/base.tar -- --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,1000 --k 10,1000 --modes or,bmw --check 20 --min-time 0.5 --max-time 1 --copy-mib 256 > $O/v2.out 2>&1; echo "v2 rc=$? $(el) s"
cp /tmp/v2/variants.txt $O/v2-variants.txt; grep -hE "exactness|MISMATCH|ERROR" /tmp/v2/*.txt | sort | uniq -c | head; cat $O/v2-variants.txt
