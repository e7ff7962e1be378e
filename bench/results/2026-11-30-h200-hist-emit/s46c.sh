#!/bin/bash
# s46 call 3: ncu source counters of the tile kernel (OR k 10, 40 M generated docs), B1000 and B1, returned in one tar
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O; W=/tmp/w; rm -rf $W; mkdir -p $W
el() { echo $(( $(date +%s) - TSTART )); }
make -f bench/engine.mk -j16 NVCC_FLAGS="-O3 --std=c++17 --fmad=false -Xcompiler -fPIC,-fvisibility=hidden -lineinfo -gencode arch=compute_90,code=sm_90" > $W/build.log 2>&1 || { tail -30 $W/build.log; exit 1; }
echo "build $(el) s"
COMMON=(--synthetic 1000000 --docs 40000000 --threads 16 --max-queries 1000 --k1 0.9 --b 0.4)
for B in 1000 1; do
  SKIP=1; [ $B = 1 ] && SKIP=6
  timeout 150 ncu --clock-control none --kernel-name-base function --kernel-name regex:gpuir_search_tile --launch-skip $SKIP --launch-count 1 \
    --section SourceCounters --section WarpStateStats --section InstructionStats --section SpeedOfLight \
    --metrics smsp__inst_executed.sum,gpu__time_duration.sum \
    -o $W/tile$B -f \
    build/engine_bench "${COMMON[@]}" --batches $B --k 10 --modes or --check 0 --selfcheck 0 --min-time 0 --max-time 0.2 --copy-mib 16 --no-verify > $W/ncu-run$B.txt 2>&1 || tail -20 $W/ncu-run$B.txt
  echo "ncu B$B done $(el) s"
  ncu -i $W/tile$B.ncu-rep --page details --csv > $W/details$B.csv 2>&1 || true
  ncu -i $W/tile$B.ncu-rep --page source --csv --print-source cuda > $W/src-cuda$B.csv 2> $W/src-err$B.txt || echo "cuda source page failed"
  ncu -i $W/tile$B.ncu-rep --page source --csv --print-source sass > $W/src-sass$B.csv 2>> $W/src-err$B.txt || echo "sass source page failed"
  grep -E "Duration|inst_executed" $W/details$B.csv | cut -c1-50,190-300 | head -4
  rm -f $W/tile$B.ncu-rep
done
echo total $(el) s
cd $W && tar czf $O/prof.tgz * && ls -la $O
