#!/bin/bash
# s49: host CPU by process kind during 64-client pgbench points with prepared statements (304k paragraphs), GPU and CPU engine
T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data; cp .device/data/* /tmp/data/
export GPUIR_DATA=/tmp/data
GPUIR_CHECK_LOG=$O scripts/gpu-check build server load > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 )) s
nq=$(su pg -c "/opt/pg15/bin/psql -h /tmp -p 5499 -At -d gpuir -c 'SELECT max(qid) FROM queries'")
for mode in or and bmw; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'%s'"'"');\n' $nq $mode > /tmp/p-$mode.sql; chmod 644 /tmp/p-$mode.sql
done
for pt in "gpu or 64 prepared" "cpu or 64 prepared" "gpu bmw 64 prepared" "cpu bmw 64 prepared" "gpu or 64 simple" "gpu or 16 prepared" "gpu or 1 prepared"; do
  set -- $pt
  su pg -c "PGOPTIONS='-c gpuir.device=$1' /opt/pg15/bin/pgbench -n -M $4 -h /tmp -p 5499 -c 16 -j 16 -T 1 -f /tmp/p-$2.sql gpuir" > /dev/null 2>&1
  bench/host-cpu --from 1.5 --for 3 --label "$pt: " -- su pg -c "PGOPTIONS='-c gpuir.device=$1' /opt/pg15/bin/pgbench -n -M $4 -h /tmp -p 5499 -c $3 -j $(( $3 < 16 ? $3 : 16 )) -T 5 -f /tmp/p-$2.sql gpuir" | grep -v "^\(transaction type\|scaling\|query mode\|number of\|latency\|initial\|pgbench\|maximum\|duration\)"
done
echo end $(( $(date +%s) - T0 )) s
