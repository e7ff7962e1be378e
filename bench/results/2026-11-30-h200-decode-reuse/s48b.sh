#!/bin/bash
# s48 call 2: the decoded-list cache (working tree) against main (a-main.tar): quick kernel test first,
# then real logs and the generated log through bench/gpu-variants, then the new tree without reuse
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
E=$PWD/.device/engine
make -f bench/engine.mk -j16 build/test_cuda_search > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
timeout 120 build/test_cuda_search --quick > $O/quick.log 2>&1; echo "quick rc=$? $(tail -1 $O/quick.log) $(el) s"
grep -E "FAIL" $O/quick.log | head -20
grep -E "cuda search: BMW vs OR" $O/quick.log | head -3
timeout 240 env AB_ROUNDS=1 bench/gpu-variants .device/var/a-main.tar -- --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16,1000 --k 10,1000 --modes or,bmw --check 50 --min-time 1 --max-time 2 --copy-mib 256 > $O/multi.out 2>&1
tail -28 $O/multi.out; echo "real logs $(el) s"
mkdir -p $O/gen; timeout 150 env OUT=$O/gen AB_ROUNDS=1 bench/gpu-variants .device/var/a-main.tar -- --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16,1000 --k 10,1000 --modes or,bmw --check 20 --min-time 1 --max-time 2 --copy-mib 256 > $O/gen.out 2>&1; tail -16 $O/gen.out
echo "gen $(el) s"
timeout 90 build/engine_bench --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16 --k 10 --modes or,bmw --check 20 --min-time 1 --max-time 2 --copy-mib 256 --decode-cache 0 > $O/gen-nocache.txt 2>&1
grep -E "^synthetic|exact|mismatch" $O/gen-nocache.txt | head -12
echo total $(el) s
cd $O && tar czf all.tgz *.out *.txt *.log gen 2>/dev/null; ls
