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
for B in 1000 1; do
  SKIP=1; [ $B = 1 ] && SKIP=40
  timeout 150 ncu --clock-control none --kernel-name-base function --kernel-name regex:gpuir_search_tile --launch-skip $SKIP --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section InstructionStats --section SpeedOfLight --section Occupancy \
    --metrics smsp__inst_executed.sum,gpu__time_duration.sum \
    -o $O/tile$B -f \
    build/engine_bench "${COMMON[@]}" --batches $B --k 10 --modes or --check 0 --selfcheck 0 --min-time 0 --max-time 0.2 --copy-mib 16 --no-verify > $O/ncu-run$B.txt 2>&1 || tail -20 $O/ncu-run$B.txt
  echo "ncu B$B done $(el) s"
  ncu -i $O/tile$B.ncu-rep --page details --csv > $O/details$B.csv 2>&1 || true
  ncu -i $O/tile$B.ncu-rep --page source --csv --print-source cuda > $O/src-cuda$B.csv 2> $O/src-err$B.txt || echo "cuda source page failed: $(head -3 $O/src-err$B.txt)"
  ncu -i $O/tile$B.ncu-rep --page source --csv --print-source sass > $O/src-sass$B.csv 2>> $O/src-err$B.txt || echo "sass source page failed: $(tail -3 $O/src-err$B.txt)"
  ls -la $O/src-*$B.csv; head -c 600 $O/src-cuda$B.csv; echo
  grep -E "Duration|Warp Cycles Per Issued|inst_executed" $O/details$B.csv | cut -c1-160 | head
  rm -f $O/tile$B.ncu-rep
done
echo total $(el) s
cd $O && gzip -f src-sass*.csv 2>/dev/null; ls -la $O
