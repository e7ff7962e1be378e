#!/bin/bash
# s45 call 4: one query at a time: the batch's decode-once step against tiles that decode (--decode-budget 0), generated and real logs; ncu kernel durations of both on the generated log
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
make -f bench/engine.mk -j16 > $O/build.log 2>&1 || { echo BUILD FAILED; tail $O/build.log; exit 1; }
E=$PWD/.device/engine
G=(--synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --check 20 --min-time 1 --max-time 2 --copy-mib 256)
R=(--vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --check 50 --min-time 1 --max-time 2 --copy-mib 256)
for v in def b0; do
  X=(); [ $v = b0 ] && X=(--decode-budget 0)
  timeout 120 build/engine_bench "${G[@]}" --batches 1,16,1000 --k 10,1000 --modes or,bmw "${X[@]}" --out $O/gen-$v.tsv > $O/gen-$v.txt 2>&1 || echo "FAILED gen $v"
  grep -E 'exactness|MISMATCH' $O/gen-$v.txt | head -2; echo "gen $v $(el) s"
done
for v in def b0; do
  X=(); [ $v = b0 ] && X=(--decode-budget 0)
  timeout 100 build/engine_bench "${R[@]}" --batches 1,16 --k 10 --modes or,bmw "${X[@]}" --out $O/real-$v.tsv > $O/real-$v.txt 2>&1 || echo "FAILED real $v"
  grep -E 'exactness|MISMATCH' $O/real-$v.txt | head -2; echo "real $v $(el) s"
done
python3 - $O <<'PY'
import csv,sys
O=sys.argv[1]
for kind in ("gen","real"):
    r={}
    for v in ("def","b0"):
        try:
            for row in csv.DictReader(open(f"{O}/{kind}-{v}.tsv"),delimiter='\t'):
                r.setdefault((row['log'],row['mode'],row['k'],row['batch']),{})[v]=float(row['queries_per_s'])
        except FileNotFoundError: pass
    for k,v in sorted(r.items()):
        d=v.get('def',0); b=v.get('b0',0)
        print(kind,*k, f"{d:.0f} {b:.0f} {b/d if d else 0:.3f}", f"{1000/d if d else 0:.3f}ms {1000/b if b else 0:.3f}ms")
PY
for v in def b0; do
  X=(); [ $v = b0 ] && X=(--decode-budget 0)
  if [ $(el) -lt 330 ]; then
  timeout 120 bench/gpu-kernel-times --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1 --k 10 --modes or --check 0 --selfcheck 0 --no-verify --copy-mib 16 --min-time 0.05 --max-time 0.1 "${X[@]}" > $O/kt-$v.txt 2>&1 || echo "FAILED kt $v"
  echo "== kernel times $v"; grep -A12 "^kernel" $O/kt-$v.txt | head -12
  fi
done
echo total $(el) s
cd $O && tar czf all.tgz *.tsv *.txt 2>/dev/null; rm -f *.tsv build.log; ls
