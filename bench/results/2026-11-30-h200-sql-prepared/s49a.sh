#!/bin/bash
# s49 call 1: verify c7537de (quick kernel test), the generated log (OR, k 10) against main (f6e2a6b),
# and real logs in batches of 1000 with the decoded-list area at its default and off (--decode-cache 0)
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
E=$PWD/.device/engine
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
make -f bench/engine.mk -j16 build/test_cuda_search build/engine_bench > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "built $(el) s"
timeout 70 build/test_cuda_search --quick > $O/quick.log 2>&1; echo "quick rc=$? $(tail -1 $O/quick.log) $(el) s"
grep -E "FAIL" $O/quick.log | head -20
mkdir -p $O/gen; timeout 90 env OUT=$O/gen AB_ROUNDS=1 bench/gpu-variants .device/var/a-main.tar -- --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16,1000 --k 10 --modes or,bmw --check 20 --min-time 1 --max-time 2 --copy-mib 256 > $O/gen.out 2>&1; tail -6 $O/gen.out
grep -h "decoded lists reused" $O/gen/new-1.txt | head -6
echo "gen $(el) s"
for log in trec05 mq09; do for dc in default 0; do
  a=""; [ $dc = 0 ] && a="--decode-cache 0"
  timeout 60 build/engine_bench --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-$log.tsv.gz --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,1000 --k 10 --modes or --check 20 --min-time 1 --max-time 2 --copy-mib 256 $a > $O/$log-dc$dc.txt 2>&1
  echo "== $log decode-cache $dc rc=$? $(el) s"; grep -E "^queries|exactness|reused|^ *or" $O/$log-dc$dc.txt | head -12
done; done
echo total $(el) s
cd $O && tar czf all.tgz *.out *.txt *.log gen 2>/dev/null; ls
