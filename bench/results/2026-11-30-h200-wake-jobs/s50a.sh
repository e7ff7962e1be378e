#!/bin/bash
# s50 call 1: verify f7ea260/f9eb6a3 (session 49's review mends, never run on a GPU): kernel checks
# (full test + racecheck/synccheck/memcheck), then the generated log, or/bmw k 10 and 1000, against c7537de
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
mkdir -p $O/kc; OUT=$O/kc GPUIR_RACECHECK_S=380 bench/gpu-kernel-checks 380 > $O/kc.out 2>&1; echo "kernel checks rc=$? $(el) s"; tail -8 $O/kc.out
mkdir -p $O/gen; timeout 150 env OUT=$O/gen AB_ROUNDS=1 bench/gpu-variants .device/var/c7537de.tar -- --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16,1000 --k 10,1000 --modes or,bmw --check 20 --min-time 1 --max-time 2 --copy-mib 256 > $O/gen.out 2>&1; echo "gen rc=$? $(el) s"; tail -14 $O/gen.out
grep -h "decoded lists" $O/gen/new-1.txt | head -4
cd $O && tar czf all.tgz kc gen *.out 2>/dev/null; ls
