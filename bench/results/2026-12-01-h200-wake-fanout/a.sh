#!/bin/bash
# s53a (SQL call 1 of 4): PostgreSQL 15 and gpuir built, part AA, the TREC 2005 log and the PostgreSQL
# tarball kept in /tmp/data; the kernel tests' quick runs; bench/sampler.c built into /tmp/sampler.so
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
cp .device/data/* /tmp/data/
GPUIR_DATA=/tmp/data GPUIR_CHECK_LOG=$O scripts/gpu-check build > $O/build.out 2>&1; echo "build rc=$? $(el) s"; tail -2 $O/build.out
gcc -O2 -Wall -Wextra -shared -fPIC -o /tmp/sampler.so bench/sampler.c && chmod 755 /tmp/sampler.so && echo "sampler built"
[ -n "${NOKTEST:-}" ] && exit 0
make -f bench/engine.mk -j16 build/test_cuda_search > $O/kbuild.log 2>&1 || tail -20 $O/kbuild.log
timeout 100 build/test_cuda_search --quick > $O/test-quick.txt 2>&1; echo "test_cuda_search --quick rc=$? $(el) s"; grep -E "batch rule|waves|passed|FAIL" $O/test-quick.txt | tail -6
