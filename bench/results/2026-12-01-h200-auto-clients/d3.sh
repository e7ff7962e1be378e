#!/bin/bash
# s55 third machine, call 4 (carry .device/p3): server and all 1.22 M paragraphs loaded (this tree's
# gpuir.so); s55/ab-auto.sh (cpu, gpu, auto) at k = 10 with one client, then at k = 1000 with 64 and 16
# clients, one round each; then bench/sampler profiles of gpu and auto or at 64 clients (s55/prof.sh)
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p3/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=/tmp/llog scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"; tail -3 $O/load.out
K=10 ROUNDS=0 LOW=1 VS="cpu gpu auto" OUT=/tmp/one bash s55/ab-auto.sh > /dev/null 2>&1; echo "one client rc=$? $(el) s"
K=1000 ROUNDS=1 CLIENTS=64 LOW=16 VS="cpu gpu auto" OUT=/tmp/k1000 bash s55/ab-auto.sh > /dev/null 2>&1; echo "k1000 rc=$? $(el) s"
cp /tmp/one/auto16.txt $O/k10-auto1.txt; cp /tmp/k1000/auto64.txt $O/k1000-auto64.txt; cp /tmp/k1000/auto16.txt $O/k1000-auto16.txt
cat $O/k10-auto1.txt $O/k1000-auto64.txt $O/k1000-auto16.txt
gcc -O2 -Wall -Wextra -shared -fPIC -o /tmp/sampler.so bench/sampler.c && chmod 755 /tmp/sampler.so
PROF_POINTS="gpu-or-64 auto-or-64" OUT=/tmp/prof bash s55/prof.sh > /tmp/prof.out 2>&1; echo "prof rc=$? $(el) s"
for f in hostcpu-gpu-or-64.txt hostcpu-auto-or-64.txt prof-gpu-or-64.txt prof-auto-or-64.txt; do cp /tmp/prof/$f $O/; done
cat $O/hostcpu-*.txt
grep -i "error\|fatal" /tmp/gpuir-work/postgres.log 2>/dev/null | grep -v "canceling\|terminating connection\|administrator command" | head -5
