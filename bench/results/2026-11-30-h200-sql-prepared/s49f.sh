#!/bin/bash
# s49 SQL grid, call 5: 64 clients, prepared protocol, three rounds in turn (medians), decoded lists at the default again
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
su pg -c "/opt/pg15/bin/psql -X -h /tmp -p 5499 -d gpuir -c \"ALTER SYSTEM RESET gpuir.decoded_lists_memory\" -c \"SELECT pg_reload_conf()\"" > /dev/null; sleep 1
mkdir -p $O/rtt-p64; GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_LOG=$O/rtt-p64 GPUIR_CHECK_PROTOCOL=prepared GPUIR_CHECK_RTT_CLIENTS="64" GPUIR_CHECK_RTT_ROUNDS=3 scripts/gpu-check rtt status > $O/rtt-p64.out 2>&1
echo "== rtt prepared 64 clients x3 rc=$? $(( $(date +%s) - T0 )) s"; cut -c1-160 $O/rtt-p64/rtt.txt
cd $O && tar czf all.tgz rtt-p64*; ls
