#!/bin/bash
# s51: BMW's batch rule (a batch of short BMW queries runs them as OR, gpuir_cuda_search_set_bmw_batch)
# with 262,144 and 4,194,304 (the library's defaults when it ran; passed here since the defaults are 0)
# against no rule (--bmw-batch 0,0), same binary, interleaved: the kernel test first (--quick, with the
# rule's checks), then TREC 2005, MQ 2009 and the unseen log over 1.2 M generated documents (batches
# 1, 16, 64, 1000) and TREC 2005 and the unseen log over 40 M (1, 16, 1000); or and bmw, k 10 and 1000
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O; t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
make -f bench/engine.mk -j16 build/engine_bench build/test_cuda_search > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "built $(el) s"
timeout 80 build/test_cuda_search --quick > $O/test-quick.txt 2>&1; echo "test --quick rc=$? $(el) s"; grep -E "batch limits|passed" $O/test-quick.txt | tail -3
E=$PWD/.device/engine
C=(--threads 16 --k1 0.9 --b 0.4 --k 10,1000 --modes or,bmw --check 20 --min-time 0.4 --max-time 0.8 --copy-mib 64
   --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz)
for v in off rule; do a=(--bmw-batch 262144,4194304); [ $v = off ] && a=(--bmw-batch 0,0)
  timeout 70 build/engine_bench "${C[@]}" "${a[@]}" --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz \
    --queries .device/unseen/queries-unseen.tsv.gz --docs 1200549 --max-queries 3000 --batches 1,16,64,1000 \
    --out $O/w1m-$v.tsv > $O/w1m-$v.txt 2>&1; echo "w1m $v rc=$? $(el) s"; done
for v in off rule; do a=(--bmw-batch 262144,4194304); [ $v = off ] && a=(--bmw-batch 0,0)
  timeout 100 build/engine_bench "${C[@]}" "${a[@]}" --queries $E/queries-trec05.tsv.gz \
    --queries .device/unseen/queries-unseen.tsv.gz --docs 40000000 --max-queries 1500 --batches 1,16,1000 \
    --out $O/w40m-$v.tsv > $O/w40m-$v.txt 2>&1; echo "w40m $v rc=$? $(el) s"; done
grep -h "exactness" $O/w*.txt | sort | uniq -c
python3 - $O <<'PY'
import csv,glob,sys,collections
o=sys.argv[1]; q=collections.defaultdict(dict)
for f in sorted(glob.glob(o+'/w*-*.tsv')):
    c,v=f.split('/')[-1][:-4].split('-')
    for r in csv.DictReader(open(f),delimiter='\t'):
        q[(c,r['log'],r['k'],r['batch'])][(v,r['mode'])]=float(r['queries_per_s'])
print("corpus log k B | off: bmw/or | rule: bmw/or | rule/off bmw")
for k in sorted(q, key=lambda x:(x[0],x[1],int(x[2]),int(x[3]))):
    d=q[k]
    try: print(*k, '| %.2f | %.2f | %.3f' % (d[('off','bmw')]/d[('off','or')], d[('rule','bmw')]/d[('rule','or')], d[('rule','bmw')]/d[('off','bmw')]))
    except KeyError: pass
PY
