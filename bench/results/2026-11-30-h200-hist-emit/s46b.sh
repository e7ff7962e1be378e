#!/bin/bash
# s46 call 2: where a tile's time goes. 40 M generated docs, OR k 10: (1) timing B1 / B1000;
# (2) per-kernel durations of one query at a time (gpu-kernel-times); (3) ncu source counters
# (instructions executed + warp stall samples per source line) of one tile launch at B1000 and at B1
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
make -f bench/engine.mk -j16 NVCC_FLAGS="-O3 --std=c++17 --fmad=false -Xcompiler -fPIC,-fvisibility=hidden -lineinfo -gencode arch=compute_90,code=sm_90" > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $(el) s"; ncu --version | tail -1
COMMON=(--synthetic 1000000 --docs 40000000 --threads 16 --max-queries 1000 --k1 0.9 --b 0.4)
timeout 90 build/engine_bench "${COMMON[@]}" --batches 1,1000 --k 10 --modes or --check 10 --min-time 1 --max-time 2 --copy-mib 64 --out $O/engine.tsv > $O/engine.txt 2>&1 || tail -30 $O/engine.txt
grep -E "exactness|per query" $O/engine.txt; tail -4 $O/engine.txt
echo "timing $(el) s"
OUT=$O timeout 150 bench/gpu-kernel-times "${COMMON[@]}" --batches 1 --k 10 --modes or --check 0 --selfcheck 0 --no-verify --copy-mib 16 --min-time 4 --max-time 5 > $O/kernels-b1.txt 2>&1; cat $O/kernels-b1.txt | tail -8
echo "kernel times $(el) s"
# (3) then the ncu source-counter loop that s46c.sh holds (the same loop, --launch-skip 40 at
# B1): its files did not come back from this call (too many), so s46c.sh ran it again and
# returned them in one tar; its copy is left out here
echo total $(el) s
ls -la $O
