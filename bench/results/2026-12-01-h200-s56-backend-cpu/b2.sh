#!/bin/bash
# s56 second machine, call 2 (carry .device/p2, .device/var): the part kept; the base build's (329052a, this
# session's start) gpuir.so at /tmp/var/gpuir-base.so
set -uo pipefail; T0=$(date +%s); mkdir -p /tmp/data /tmp/var; cp .device/p2/* /tmp/data/; ls /tmp/data | wc -l
rm -rf /tmp/base; mkdir -p /tmp/base && tar xzf .device/var/base.tar.gz -C /tmp/base &&
(cd /tmp/base && make -j16 PG_CONFIG=/opt/pg15/bin/pg_config > /tmp/base-build.log 2>&1) && cp /tmp/base/gpuir.so /tmp/var/gpuir-base.so &&
echo "base gpuir.so built $(( $(date +%s) - T0 )) s" || tail -5 /tmp/base-build.log
