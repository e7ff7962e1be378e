#!/bin/bash
# device: the issue's generated log at 40 M documents for every built variant (/tmp/var/*) and new, after multi.sh built them
# One round of bench/gpu-variants over the generated log, kept as run (new
# device calls use bench/gpu-variants with --synthetic arguments).
set -uo pipefail
O=${OUT:-/tmp/out}; mkdir -p $O
t0=$(date +%s)
ARGS=(--synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches ${GBATCHES:-1,1000} --k ${GKS:-10,1000} --modes ${GMODES:-or,bmw,and} --check 20 --min-time 1 --max-time 2 --copy-mib 256 ${GEXTRA:-})
names=(); for d in /tmp/var/*; do names+=($(basename $d)); done; names+=(new)
for n in "${names[@]}"; do
  if [ $(( $(date +%s) - ${TSTART:-$t0} )) -gt ${GLIMIT:-470} ]; then echo "skip gen $n (time)"; continue; fi
  d=/tmp/var/$n; [ $n = new ] && d=$PWD
  timeout 150 $d/build/engine_bench "${ARGS[@]}" --out $O/gen-$n.tsv > $O/gen-$n.txt 2>&1 || { echo "FAILED gen $n"; tail -5 $O/gen-$n.txt; }
  grep -E 'exactness|MISMATCH' $O/gen-$n.txt | head -3
  echo "gen $n done $(( $(date +%s) - t0 )) s"
done
python3 - $O "${names[@]}" <<'PY'
import csv,sys,os
O=sys.argv[1]; names=sys.argv[2:]
r={}
for n in names:
    f=f"{O}/gen-{n}.tsv"
    if not os.path.exists(f): continue
    for row in csv.DictReader(open(f),delimiter='\t'):
        r.setdefault((row['mode'],row['k'],row['batch']),{})[n]=(float(row['queries_per_s']),float(row['batch_ms']))
print("mode k batch "+" ".join(f"{n}_qps {n}_ms" for n in names)+" "+" ".join(f"{n}/{names[0]}" for n in names[1:]))
for k,v in sorted(r.items()):
    b=v.get(names[0],(0,0))
    print(*k, " ".join(f"{v.get(n,(0,0))[0]:.0f} {v.get(n,(0,0))[1]:.3f}" for n in names), " ".join(f"{v.get(n,(0,0))[0]/b[0]:.3f}" if b[0] else "-" for n in names[1:]))
PY
