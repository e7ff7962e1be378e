#!/bin/bash
# cgrun.sh TAG: callgrind runs of 1 and 2 bench_latency_ms passes on docs_gpuir and docs_fresh
# (../2026-11-29-cpu-2core-soak-callgrind/cg.sh, copied to /tmp/soak/cg.sh); per-query inclusive
# costs by function, soaked and fresh, printed by sum.sh TAG
TAG=$1
for idx in docs_gpuir docs_fresh; do for n in 1 2; do
  bash /tmp/soak/cg.sh $idx $n >/dev/null 2>&1
  callgrind_annotate --inclusive=yes --threshold=100 /tmp/soak/cg.$idx.$n.out > /tmp/soak/$TAG.$idx.$n.txt 2>/dev/null
done; done
bash "$(dirname "$0")/sum.sh" "$TAG"
