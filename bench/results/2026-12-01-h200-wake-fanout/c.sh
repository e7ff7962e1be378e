#!/bin/bash
# s53c (SQL calls 2 and 3 of 4): the carried part (.device/p2, then .device/p4) kept in /tmp/data
set -uo pipefail; mkdir -p /tmp/data; cp .device/p*/* /tmp/data/; ls /tmp/data; ls /opt/pg15/bin/pg_config
if [ -n "${KTEST:-}" ]; then
  export PATH=/usr/local/cuda/bin:$PATH; O=${OUT:-/tmp/out}; mkdir -p $O
  make -f bench/engine.mk -j16 build/test_cuda_search > $O/kbuild.log 2>&1 || tail -20 $O/kbuild.log
  timeout 100 build/test_cuda_search --quick > $O/test-quick.txt 2>&1; echo "test_cuda_search --quick rc=$?"; grep -E "rule|waves|passed|FAIL" $O/test-quick.txt | tail -6
fi
