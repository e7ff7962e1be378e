#!/bin/bash
# s50: dcache_plan without per-batch allocations (flat first-block tables, keys once) against eb238a0:
# TREC 2005 over 1.2 M generated documents (batches 1, 16, 64) and over 40 M (1, 16, 1000), or/bmw k 10,
# interleaved (old, new, old, new), every checked query against the CPU reference; traced plan stage at 16
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O; t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
E=$PWD/.device/engine; D=/tmp/old; rm -rf $D; mkdir -p $D; tar xf .device/var/eb238a0.tar -C $D
(cd $D && make -f bench/engine.mk -j8 build/engine_bench > $O/build-old.log 2>&1) &
make -f bench/engine.mk -j8 build/engine_bench > $O/build-new.log 2>&1 || { tail $O/build-new.log; exit 1; }
wait; [ -x $D/build/engine_bench ] || { tail $O/build-old.log; exit 1; }; echo "built $(el) s"
C=(--threads 16 --k1 0.9 --b 0.4 --k 10 --modes or,bmw --check 20 --min-time 0.5 --max-time 1 --copy-mib 64 --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz)
for r in 1 2; do for v in old new; do b=build/engine_bench; [ $v = old ] && b=$D/build/engine_bench
  timeout 60 $b "${C[@]}" --docs 1200549 --max-queries 4000 --batches 1,16,64 --out $O/w1m-$v-$r.tsv > $O/w1m-$v-$r.txt 2>&1; echo "w1m $v $r rc=$? $(el) s"
done; done
for v in old new; do b=build/engine_bench; [ $v = old ] && b=$D/build/engine_bench
  timeout 80 $b "${C[@]}" --docs 40000000 --max-queries 2000 --batches 1,16,1000 --out $O/w40m-$v.tsv > $O/w40m-$v.txt 2>&1; echo "w40m $v rc=$? $(el) s"
done
grep -h "exactness" $O/*.txt | sort | uniq -c
python3 - $O <<'PY'
import csv,glob,sys
o=sys.argv[1]; best={}
for f in glob.glob(o+'/*.tsv'):
    n=f.split('/')[-1].split('-'); c=n[0]; v=n[1]
    for r in csv.DictReader(open(f),delimiter='\t'):
        k=(c,r['mode'],r['batch']); best.setdefault(k,{}); best[k][v]=max(best[k].get(v,0),float(r['queries_per_s']))
for k in sorted(best): print(*k, '%.0f %.0f %.3f' % (best[k]['old'], best[k]['new'], best[k]['new']/best[k]['old']))
PY
cd $O && tar czf all.tgz *.txt *.tsv; ls | head -2
