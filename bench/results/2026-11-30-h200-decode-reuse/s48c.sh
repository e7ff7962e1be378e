#!/bin/bash
# s48 call 3: decoded-list cache with the restart for large batches: k = 10 benchmarks against main, then the full kernel checks
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
E=$PWD/.device/engine
timeout 80 env AB_ROUNDS=1 bench/gpu-variants .device/var/a-main.tar -- --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 16,1000 --k 10 --modes or,bmw --check 50 --min-time 1 --max-time 2 --copy-mib 256 > $O/multi.out 2>&1
tail -14 $O/multi.out; echo "real logs $(el) s"
mkdir -p $O/gen; timeout 70 env OUT=$O/gen AB_ROUNDS=1 bench/gpu-variants .device/var/a-main.tar -- --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,1000 --k 10 --modes or,bmw --check 20 --min-time 1 --max-time 2 --copy-mib 256 > $O/gen.out 2>&1; tail -8 $O/gen.out
grep -h "decoded lists reused" $O/gen/new-1.txt | head -8
echo "gen $(el) s"
bench/gpu-kernel-checks $(( 560 - $(el) ))
echo total $(el) s
cd $O && tar czf all.tgz *.out *.txt *.log gen 2>/dev/null; ls
