#!/bin/bash
# s55 call 2 (carry .device/p2, .device/var): the part kept; the base tree's (8cd5f06) gpuir.so built
# (/tmp/var/gpuir-base.so) beside compute-sanitizer racecheck over the kernel test's --sanitize subset
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data /tmp/var
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p2/* /tmp/data/; cp .device/var/base.tar /tmp/var/base.tar
rm -rf /tmp/base; mkdir -p /tmp/base && tar xf /tmp/var/base.tar -C /tmp/base
(cd /tmp/base && make -j8 PG_CONFIG=/opt/pg15/bin/pg_config > /tmp/base-build.log 2>&1) && cp /tmp/base/gpuir.so /tmp/var/gpuir-base.so && echo "base gpuir.so built $(el) s" || tail -20 /tmp/base-build.log
timeout 330 compute-sanitizer --tool racecheck /tmp/tcs --sanitize > /tmp/racecheck.log 2>&1; echo "racecheck rc=$? $(el) s"; tail -3 /tmp/racecheck.log; tail -c 3000 /tmp/racecheck.log > $O/racecheck.txt
