#!/bin/bash
# s55 third machine, call 5: the server of call 4; bench/sampler profiles of gpu and auto or at 64 clients
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
gcc -O2 -Wall -Wextra -shared -fPIC -o /tmp/sampler.so bench/sampler.c && chmod 755 /tmp/sampler.so
PROF_POINTS="gpu-or-64 auto-or-64" OUT=/tmp/prof bash s55/prof.sh > /tmp/prof.out 2>&1; echo "prof rc=$? $(( $(date +%s) - T0 )) s"
for f in hostcpu-gpu-or-64.txt hostcpu-auto-or-64.txt prof-gpu-or-64.txt prof-auto-or-64.txt; do cp /tmp/prof/$f $O/; done
cat $O/hostcpu-*.txt
