#!/bin/bash
# s48 call 6: after the review (growth on the lists a batch does not find, reuse gated on the batch's distinct lists, restart keeps):
# quick kernel test, then the generated log (OR, k 10) and the real logs in batches of 1000 against main
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
E=$PWD/.device/engine
make -f bench/engine.mk -j16 build/test_cuda_search > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
timeout 70 build/test_cuda_search --quick > $O/quick.log 2>&1; echo "quick rc=$? $(tail -1 $O/quick.log) $(el) s"
grep -E "FAIL" $O/quick.log | head -20
mkdir -p $O/gen; timeout 80 env OUT=$O/gen AB_ROUNDS=1 bench/gpu-variants .device/var/a-main.tar -- --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16,1000 --k 10 --modes or --check 20 --min-time 1 --max-time 2 --copy-mib 256 > $O/gen.out 2>&1; tail -4 $O/gen.out
grep -h "decoded lists reused" $O/gen/new-1.txt | head -4
echo "gen $(el) s"
timeout 50 build/engine_bench --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1000 --k 10 --modes or --check 20 --min-time 1 --max-time 2 --copy-mib 256 > $O/trec-1000.txt 2>&1; grep -E "^queries|exactness" $O/trec-1000.txt
echo total $(el) s
cd $O && tar czf all.tgz *.out *.txt *.log gen 2>/dev/null; ls
