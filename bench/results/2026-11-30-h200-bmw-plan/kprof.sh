#!/bin/bash
# device: per-kernel durations (ncu, gpu__time_duration) of one batch per config, generated log, 40 M docs
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
t0=$(date +%s)
make -f bench/engine.mk -j16 > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
COMMON=(--synthetic 1000000 --docs 40000000 --threads 16 --max-queries 1000 --k1 0.9 --b 0.4 --check 0 --selfcheck 0 --min-time 0 --max-time 0 --copy-mib 16 --no-verify ${KEXTRA:-})
for cfg in ${KCFGS:-or:10:1 bmw:10:1 or:10:1000 bmw:10:1000 or:1000:1000 bmw:1000:1000}; do
  IFS=: read m k b <<< "$cfg"
  timeout 120 ncu --clock-control none --csv --page raw --print-units base --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum \
    build/engine_bench "${COMMON[@]}" --batches $b --k $k --modes $m > $O/kp-$m-$k-$b.csv 2> $O/kp-$m-$k-$b.err || { echo "FAILED $cfg"; tail -5 $O/kp-$m-$k-$b.err; }
  echo "$cfg done $(( $(date +%s) - t0 )) s"
done
python3 - $O <<'PY'
import csv,sys,glob,os,io
O=sys.argv[1]
for f in sorted(glob.glob(f"{O}/kp-*.csv")):
    lines=[l for l in open(f) if l.startswith('"')]
    if not lines: print(f, "no rows"); continue
    rows=list(csv.DictReader(io.StringIO("".join(lines))))
    rows=[r for r in rows if r.get('Kernel Name') and r['Kernel Name']!='']
    # units row
    rows=[r for r in rows if r.get('ID','').isdigit()]
    # last batch: from the last decode kernel (or the last seed/and) on
    idx=[i for i,r in enumerate(rows) if 'decode_kernel' in r['Kernel Name'] and 'search' in r['Kernel Name']]
    start=idx[-1] if idx else 0
    print("==", os.path.basename(f), "kernels total", len(rows), "last batch from", start)
    tot=0
    for r in rows[start:]:
        d=float(r['gpu__time_duration.sum']); tot+=d
        print(f"  {r['Kernel Name'][:60]:60s} grid {r.get('Grid Size',''):>16s} {d/1000:10.1f} us  inst {float(r['smsp__inst_executed.sum'])/1e6:10.2f} M  dram {float(r['dram__bytes_read.sum'])/1e6:9.1f} MB")
    print(f"  sum {tot/1000:.1f} us")
PY
