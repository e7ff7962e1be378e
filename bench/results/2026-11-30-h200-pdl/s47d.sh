#!/bin/bash
# s47 call 4: PDL + zeros staged (new) against 9661598 (a-main), two interleaved rounds, batches of 1 and 16
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
ROUNDS=2 MODES=and,or,bmw KS=10,1000 BATCHES=1,16 TESTS=0 bash .device/multi.sh > $O/multi.out 2>&1
tail -26 $O/multi.out
cd $O && ls
