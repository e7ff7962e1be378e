#!/bin/bash
# s52b (SQL call 2 of 6, with an engine A/B): part AB kept in /tmp/data; BMW's batch rule by waves of
# tiles (gpuir_cuda_search_set_bmw_batch(W, T), on by default at 3, 4 M) against off (0,0) and 4
# waves, one binary, over 1.2 M (batches 1, 16, 32, 64) and 40 M (1, 16) documents; the kernel test
# --quick first
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data; t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
cp .device/p2/* /tmp/data/
make -f bench/engine.mk -j16 build/engine_bench build/test_cuda_search > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "built $(el) s"
timeout 80 build/test_cuda_search --quick > $O/test-quick.txt 2>&1; echo "test --quick rc=$? $(el) s"; grep -E "batch limits|passed" $O/test-quick.txt | tail -3
E=$PWD/.device/engine; U=$PWD/.device/unseen/queries-unseen.tsv.gz
C=(--threads 16 --k1 0.9 --b 0.4 --check 20 --copy-mib 64 --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --k 10,1000 --modes or,bmw --min-time 0.4 --max-time 0.8)
for v in off w3 w4; do case $v in off) a=0,0;; w3) a=3,4194304;; w4) a=4,4194304;; esac
  timeout 70 build/engine_bench "${C[@]}" --bmw-batch $a --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz \
    --queries $U --docs 1200549 --max-queries 3000 --batches 1,16,32,64 --out $O/w1m-$v.tsv > $O/w1m-$v.txt 2>&1; echo "w1m $v rc=$? $(el) s"; done
for v in off w3; do case $v in off) a=0,0;; w3) a=3,4194304;; esac
  timeout 90 build/engine_bench "${C[@]}" --bmw-batch $a --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz \
    --queries $U --docs 40000000 --max-queries 1500 --batches 1,16 --out $O/w40m-$v.tsv > $O/w40m-$v.txt 2>&1; echo "w40m $v rc=$? $(el) s"; done
grep -h "exactness\|MISMATCH" $O/w*.txt | sort | uniq -c
python3 - $O <<'PY'
import csv,glob,sys,collections
o=sys.argv[1]; q=collections.defaultdict(dict)
for f in sorted(glob.glob(o+'/w*-*.tsv')):
    c,v=f.split('/')[-1][:-4].split('-')
    for r in csv.DictReader(open(f),delimiter='\t'):
        q[(c,r['log'].replace('queries-',''),r['k'],r['batch'])][(v,r['mode'])]=float(r['queries_per_s'])
print("corpus log k B | bmw/or off w3 w4 | bmw q/s w3/off w4/off")
for k in sorted(q, key=lambda x:(x[0],x[1],int(x[2]),int(x[3]))):
    d=q[k]; vs=[v for v in ('off','w3','w4') if (v,'bmw') in d]
    print(*k, '|', ' '.join('%.2f'%(d[(v,'bmw')]/d[(v,'or')]) for v in vs), '|', ' '.join('%.3f'%(d[(v,'bmw')]/d[('off','bmw')]) for v in vs[1:]))
PY
(cd $O && tar czf engine.tgz w*.tsv w*.txt test-quick.txt && rm -f w*.tsv w*.txt)
