#!/bin/bash
# s51: the search plan's arrays kept by the job between searches (no malloc/free per batch):
# the kernel test (--quick) and compute-sanitizer memcheck over --quick, then engine_bench
# exactness and q/s against the tree before (.device/var/before.tar), 1.2 M TREC 2005 documents
# (batches 1, 16, 64) and the generated log over 4 M (k 10 and 1000: searches again included)
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
D=/tmp/before; rm -rf $D; mkdir -p $D; tar xf .device/var/before.tar -C $D
(cd $D && make -f bench/engine.mk -j8 build/engine_bench > $O/build-before.log 2>&1) &
make -f bench/engine.mk -j8 build/engine_bench build/test_cuda_search > $O/build.log 2>&1 || { tail $O/build.log; exit 1; }
wait; echo "built $(el) s"
timeout 120 build/test_cuda_search --quick > $O/test-quick.txt 2>&1; echo "test --quick rc=$? $(el) s"; tail -2 $O/test-quick.txt
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 build/test_cuda_search --quick > $O/memcheck.txt 2>&1; echo "memcheck rc=$? $(el) s"; tail -3 $O/memcheck.txt
E=$PWD/.device/engine
C=(--threads 16 --k1 0.9 --b 0.4 --k 10 --modes or,bmw,and --check 50 --min-time 0.5 --max-time 1 --copy-mib 64 --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --docs 1200549 --max-queries 4000 --batches 1,16,64)
for r in 1 2; do for v in before new; do b=build/engine_bench; [ $v = before ] && b=$D/build/engine_bench
  timeout 60 $b "${C[@]}" --out $O/w1m-$v-$r.tsv > $O/w1m-$v-$r.txt 2>&1; echo "w1m $v $r rc=$? $(el) s"; done; done
timeout 90 build/engine_bench --synthetic 200000 --docs 4000000 --threads 16 --max-queries 2000 --batches 1,1000 --k 10,1000 --modes or,bmw,and --check 50 --min-time 0.3 --max-time 0.5 --copy-mib 64 --out $O/gen4m.tsv > $O/gen4m.txt 2>&1; echo "gen4m rc=$? $(el) s"
grep -h "exactness" $O/*.txt | sort | uniq -c
python3 - $O <<'PY'
import csv,glob,sys
o=sys.argv[1]; best={}
for f in glob.glob(o+'/w1m-*.tsv'):
    v=f.split('/')[-1].split('-')[1]
    for r in csv.DictReader(open(f),delimiter='\t'):
        k=(r['mode'],r['batch']); best.setdefault(k,{}); best[k][v]=max(best[k].get(v,0),float(r['queries_per_s']))
for k in sorted(best): print(*k, '%.0f %.0f %.3f' % (best[k]['before'], best[k]['new'], best[k]['new']/best[k]['before']))
PY
