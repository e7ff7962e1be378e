#!/bin/bash
# s52a: BMW's batch rule by the batch's mean postings a query (gpuir_cuda_search_set_bmw_batch),
# A/B in one binary: off (0,0) against mean < 65,536 with totals under 4 M and under 1 M; and the
# stage times of BMW and OR in batches of 16 over 1.2 M documents and one query at a time over 40 M
# (build/engine_bench_trace). Kernel test --quick first (the rule's checks).
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O; t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
(make -f bench/engine.mk -j12 build/engine_bench build/test_cuda_search > $O/build.log 2>&1 || echo "BUILD FAILED") &
(make -f bench/engine.mk TRACE=1 -j4 > $O/build-trace.log 2>&1 || echo "TRACE BUILD FAILED") &
wait; echo "built $(el) s"
timeout 80 build/test_cuda_search --quick > $O/test-quick.txt 2>&1; echo "test --quick rc=$? $(el) s"; grep -E "batch limits|passed" $O/test-quick.txt | tail -3
E=$PWD/.device/engine; U=$PWD/.device/unseen/queries-unseen.tsv.gz
C=(--threads 16 --k1 0.9 --b 0.4 --check 20 --copy-mib 64 --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz)
# stage times
GPUIR_SEARCH_TRACE_NQ=16 timeout 60 build/engine_bench_trace "${C[@]}" --k 10 --modes or,bmw --min-time 1 --max-time 2 \
  --queries $E/queries-trec05.tsv.gz --docs 1200549 --max-queries 3000 --batches 16 --bmw-batch 0,0 \
  --out $O/t1m.tsv > $O/t1m.txt 2> $O/t1m-stages.txt; echo "trace 1.2M B16 rc=$? $(el) s"
GPUIR_SEARCH_TRACE_NQ=1 timeout 80 build/engine_bench_trace "${C[@]}" --k 10 --modes or,bmw --min-time 1 --max-time 2 \
  --queries $E/queries-trec05.tsv.gz --docs 40000000 --max-queries 1500 --batches 1 --bmw-batch 0,0 \
  --out $O/t40m.tsv > $O/t40m.txt 2> $O/t40m-stages.txt; echo "trace 40M B1 rc=$? $(el) s"
for f in t1m t40m; do echo "== $f"; grep "^trace" $O/$f-stages.txt | grep -v "host caller\|host outputs\|layout"; done
# the rule, A/B
A="--k 10,1000 --modes or,bmw --min-time 0.4 --max-time 0.8"
for v in off m4m m1m; do case $v in off) a=0,0;; m4m) a=65536,4194304;; m1m) a=65536,1048576;; esac
  timeout 70 build/engine_bench "${C[@]}" $A --bmw-batch $a --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz \
    --queries $U --docs 1200549 --max-queries 3000 --batches 1,16,64,1000 --out $O/w1m-$v.tsv > $O/w1m-$v.txt 2>&1; echo "w1m $v rc=$? $(el) s"; done
for v in off m4m m1m; do case $v in off) a=0,0;; m4m) a=65536,4194304;; m1m) a=65536,1048576;; esac
  timeout 90 build/engine_bench "${C[@]}" $A --bmw-batch $a --queries $E/queries-trec05.tsv.gz \
    --queries $U --docs 40000000 --max-queries 1500 --batches 1,16 --out $O/w40m-$v.tsv > $O/w40m-$v.txt 2>&1; echo "w40m $v rc=$? $(el) s"; done
grep -h "exactness\|MISMATCH" $O/w*.txt $O/t*.txt | sort | uniq -c
python3 - $O <<'PY'
import csv,glob,sys,collections
o=sys.argv[1]; q=collections.defaultdict(dict)
for f in sorted(glob.glob(o+'/w*-*.tsv')):
    c,v=f.split('/')[-1][:-4].split('-')
    for r in csv.DictReader(open(f),delimiter='\t'):
        q[(c,r['log'].replace('queries-',''),r['k'],r['batch'])][(v,r['mode'])]=float(r['queries_per_s'])
print("corpus log k B | bmw/or off m4m m1m | bmw q/s m4m/off m1m/off | or q/s m4m/off m1m/off")
for k in sorted(q, key=lambda x:(x[0],x[1],int(x[2]),int(x[3]))):
    d=q[k]
    try: print(*k, '| %.2f %.2f %.2f | %.3f %.3f | %.3f %.3f' % tuple([d[(v,'bmw')]/d[(v,'or')] for v in ('off','m4m','m1m')]+[d[(v,'bmw')]/d[('off','bmw')] for v in ('m4m','m1m')]+[d[(v,'or')]/d[('off','or')] for v in ('m4m','m1m')]))
    except KeyError: pass
PY
cd $O && tar czf all.tgz *.txt *.tsv && rm -f *.tsv; ls
