#!/bin/bash
# s46 call 6: AND only, 2 interleaved rounds (a-main = efdb7c1, new), best of two: is AND's 2-6% drop in calls 4-5 (one round, a-main first) the order or the change?
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p $O
ROUNDS=2 MODES=and KS=10,1000 BATCHES=1,1000 TESTS=0 bash .device/multi.sh > $O/multi.out 2>&1
tail -12 $O/multi.out
