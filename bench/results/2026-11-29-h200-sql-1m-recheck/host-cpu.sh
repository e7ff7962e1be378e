#!/bin/bash
# host CPU by process kind during pgbench points (304k paragraphs), GPU and CPU engine
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 )); which perf || echo "no perf"
nq=$(su pg -c "/opt/pg15/bin/psql -h /tmp -p 5499 -At -d gpuir -c 'SELECT max(qid) FROM queries'")
for mode in or and bmw; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'%s'"'"');\n' $nq $mode > /tmp/p-$mode.sql; chmod 644 /tmp/p-$mode.sql
done
cat /tmp/p-or.sql
for pt in "gpu or 64" "cpu or 64" "gpu and 64" "cpu and 64" "gpu or 16" "cpu or 16" "gpu bmw 64" "cpu bmw 64" "gpu or 1"; do
  set -- $pt
  su pg -c "PGOPTIONS='-c gpuir.device=$1' /opt/pg15/bin/pgbench -n -h /tmp -p 5499 -c 16 -j 16 -T 1 -f /tmp/p-$2.sql gpuir" > /dev/null 2>&1
  bench/host-cpu --from 1.5 --for 3 --label "$pt: " -- su pg -c "PGOPTIONS='-c gpuir.device=$1' /opt/pg15/bin/pgbench -n -h /tmp -p 5499 -c $3 -j $(( $3 < 16 ? $3 : 16 )) -T 5 -f /tmp/p-$2.sql gpuir" | grep -v "^\(transaction type\|scaling\|query mode\|number of\|latency\|initial\|pgbench\|maximum\|duration\)"
done
echo end $(( $(date +%s) - T0 ))
