#!/bin/bash
# s50: BMW's minimum postings (gpuir_cuda_search_set_bmw_min_postings; engine_bench --bmw-min-postings):
# the quick kernel test (with the new check), then BMW against OR at k 10 for several minimums on TREC 2005
# over 1.2 M generated documents, TREC 2005 and MQ 2009 over 40 M, and the generated log over 40 M
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
E=$PWD/.device/engine
make -f bench/engine.mk -j16 build/engine_bench build/test_cuda_search > $O/build.log 2>&1 || { tail -20 $O/build.log; exit 1; }
echo "built $(el) s"
timeout 90 build/test_cuda_search --quick > $O/quick.log 2>&1; echo "quick rc=$? $(tail -1 $O/quick.log) $(el) s"; grep -E "FAIL" $O/quick.log | head -5
C=(--threads 16 --k1 0.9 --b 0.4 --k 10 --check 20 --min-time 0.5 --max-time 1 --copy-mib 64)
run() { local name=$1 t=$2 modes=$3; shift 3
  timeout 100 build/engine_bench "${C[@]}" --modes $modes --bmw-min-postings $t --out $O/$name-$t.tsv "$@" > $O/$name-$t.txt 2>&1
  echo "== $name min $t rc=$? $(el) s $(grep -c MISMATCH $O/$name-$t.txt) mismatch lines"; }
for t in 0 65536 262144 1048576; do m=bmw; [ $t = 0 ] && m=or,bmw
  run w1m $t $m --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --docs 1200549 --max-queries 4000 --batches 1,16,64; done
for t in 0 262144 1048576; do m=bmw; [ $t = 0 ] && m=or,bmw
  run w40m $t $m --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz --docs 40000000 --max-queries 2000 --batches 1,16,1000; done
for t in 0 1048576; do m=bmw; [ $t = 0 ] && m=or,bmw
  run gen $t $m --synthetic 1000000 --docs 40000000 --max-queries 2000 --batches 1,16,1000; done
grep -h "exactness" $O/*.txt | sort | uniq -c
for f in $O/*.tsv; do echo "== $(basename $f)"; cut -f1,2,3,4,8 $f | tail -n +2; done
grep -h "per query" $O/w1m-0.txt $O/w40m-0.txt $O/gen-0.txt
cd $O && tar czf all.tgz *.txt *.tsv *.log; ls | head -3
