#!/bin/bash
# s54 profile session, call 1 (carry .device/data): PostgreSQL 15 and gpuir built; bench/sampler.c built
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
export PATH=/usr/local/cuda/bin:$PATH
cp .device/data/* /tmp/data/
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=/tmp/blog scripts/gpu-check build > $O/build.out 2>&1; echo "build rc=$? $(( $(date +%s) - T0 )) s"; tail -1 $O/build.out
gcc -O2 -Wall -Wextra -shared -fPIC -o /tmp/sampler.so bench/sampler.c && chmod 755 /tmp/sampler.so && echo "sampler built"
