#!/bin/bash
# s49 call: generated log, or/bmw at k = 1000 (and 10), batches 1/16/1000, with the decoded-list area at its default and off
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
export PATH=/usr/local/cuda/bin:$PATH
make -f bench/engine.mk -j16 build/engine_bench > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
for r in 1; do for dc in default 0; do
  a=""; [ $dc = 0 ] && a="--decode-cache 0"
  timeout 120 build/engine_bench --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16,1000 --k 10,1000 --modes or,bmw --check 20 --min-time 1 --max-time 2 --copy-mib 256 $a > $O/gen-dc$dc-$r.txt 2>&1
  echo "== round $r decode-cache $dc rc=$? $(( $(date +%s) - T0 )) s"; grep -E "exactness" $O/gen-dc$dc-$r.txt; grep -E "^synthetic" $O/gen-dc$dc-$r.txt | cut -c1-130
done; done
cd $O && tar czf all.tgz *.txt *.log; ls
