#!/bin/bash
# device: tile kernel (OR, generated log, k 10, batch 1000) timing + ncu, 40M docs
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
t0=$(date +%s)
make -f bench/engine.mk -j16 NVCC_FLAGS="-O3 --std=c++17 --fmad=false -Xcompiler -fPIC,-fvisibility=hidden -lineinfo -gencode arch=compute_90,code=sm_90" > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
COMMON=(--synthetic 1000000 --docs 40000000 --threads 16 --max-queries 1000 --k1 0.9 --b 0.4)
timeout 60 build/engine_bench "${COMMON[@]}" --batches 1000 --k 10 --modes or --check 10 --min-time 0.5 --max-time 1 --copy-mib 256 --out $O/engine.tsv > $O/engine.txt 2>&1 || tail -30 $O/engine.txt
tail -6 $O/engine.txt
echo "timing done $(( $(date +%s) - t0 )) s"
timeout 150 ncu --clock-control none --kernel-name-base function --kernel-name regex:gpuir_search_tile --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats \
  --section MemoryWorkloadAnalysis --section LaunchStats \
  --metrics smsp__inst_executed.sum,dram__bytes_read.sum,lts__t_bytes.sum \
  -o $O/or -f \
  build/engine_bench "${COMMON[@]}" --batches 1000 --k 10 --modes or --check 0 --selfcheck 0 --min-time 0 --max-time 0 --copy-mib 16 --no-verify > $O/ncu-run.txt 2>&1 || tail -20 $O/ncu-run.txt
echo "ncu done $(( $(date +%s) - t0 )) s"
ncu -i $O/or.ncu-rep --page details --csv > $O/details.csv 2>&1 || true
rm -f $O/or.ncu-rep
grep -E "Duration|Warp Cycles Per Issued|Achieved Occupancy|Issued Ipc|DRAM Throughput|Registers Per|inst_executed|dram__bytes|Memory Throughput|Compute \(SM\)" $O/details.csv | cut -c1-200 | head -30
