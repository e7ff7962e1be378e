#!/bin/bash
# auto at 1 client: what it routes where, 304k paragraphs
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
P="/opt/pg15/bin/psql -h /tmp -p 5499 -d gpuir"
nq=$(su pg -c "$P -At -c 'SELECT max(qid) FROM queries'")
for mode in and bmw; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'%s'"'"');\n' $nq $mode > /tmp/p-$mode.sql; chmod 644 /tmp/p-$mode.sql
done
R="SELECT mode, sum(routed_cpu) rc, sum(routed_gpu) rg FROM gpuir_route() WHERE k = '<=100' GROUP BY mode ORDER BY mode"
for pt in "cpu and" "gpu and" "auto and" "auto and" "cpu and" "auto bmw" "cpu bmw" "gpu bmw" "auto bmw"; do
  set -- $pt
  su pg -c "$P -At -F ' ' -c \"$R\"" | tr '\n' ';'; echo
  printf '%s: ' "$pt"; su pg -c "PGOPTIONS='-c gpuir.device=$1' /opt/pg15/bin/pgbench -n -h /tmp -p 5499 -c 1 -j 1 -T 4 -f /tmp/p-$2.sql gpuir" 2>&1 | grep "^tps"
done
su pg -c "$P -c \"SELECT * FROM gpuir_route() WHERE k = '<=100' AND mode IN ('and','pruned') ORDER BY mode, postings_from\"" | cut -c1-150
echo end $(( $(date +%s) - T0 ))
