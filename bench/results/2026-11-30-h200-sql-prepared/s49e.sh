#!/bin/bash
# s49 SQL grid, call 4: rtt with pgbench's prepared protocol, then with gpuir.decoded_lists_memory = 0 (1 and 64 clients)
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - T0 )); }
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4
su pg -c "/opt/pg15/bin/pg_ctl -D /tmp/gpuir-pgdata status" > /dev/null || { echo "server restarted"; su pg -c "/opt/pg15/bin/pg_ctl -D /tmp/gpuir-pgdata -l /tmp/gpuir-work/postgres.log -w start" > /dev/null; sleep 2; }
for p in prepared; do
  mkdir -p $O/rtt-$p; GPUIR_CHECK_LOG=$O/rtt-$p GPUIR_CHECK_PROTOCOL=$p scripts/gpu-check rtt status > $O/rtt-$p.out 2>&1
  echo "== rtt $p rc=$? $(el) s"; cut -c1-70 $O/rtt-$p/rtt.txt
done
su pg -c "/opt/pg15/bin/psql -X -h /tmp -p 5499 -d gpuir -c \"ALTER SYSTEM SET gpuir.decoded_lists_memory = 0\" -c \"SELECT pg_reload_conf()\"" > /dev/null; sleep 1
mkdir -p $O/rtt-dl0; GPUIR_CHECK_LOG=$O/rtt-dl0 GPUIR_CHECK_PROTOCOL=prepared GPUIR_CHECK_RTT_CLIENTS="1 64" scripts/gpu-check rtt status > $O/rtt-dl0.out 2>&1
echo "== rtt prepared, decoded_lists_memory 0, rc=$? $(el) s"; cut -c1-70 $O/rtt-dl0/rtt.txt
grep -h "decoded" $O/rtt-*/status* 2>/dev/null | head
cd $O && tar czf all.tgz *.out rtt-* *.txt *.log 2>/dev/null; ls
