#!/bin/bash
# s53e (one call, part AA only: 304 k paragraphs): build, server, load; then gpuir.wake_fanout 0 against 2
# (the tree only while fewer than a quarter of the cores run the CPU engine) under auto (and, or, bmw)
# and gpu (bmw), 64 clients, 3 s a point, one round
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data
el() { echo $(( $(date +%s) - T0 )); }
cp .device/data/* /tmp/data/
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=3 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=$O scripts/gpu-check build server load > $O/load.out 2>&1; echo "build+load rc=$? $(el) s"; tail -2 $O/load.out
PG=/opt/pg15/bin; q() { su pg -c "$PG/psql -X -h /tmp -p 5499 -d gpuir -At -c \"$1\""; }
nq=$(q "SELECT max(qid) FROM queries")
for m in bmw or and; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'%s'"'"');\n' $nq $m > /tmp/ab-$m.sql; chmod 644 /tmp/ab-$m.sql
done
su pg -c "PGOPTIONS='-c gpuir.device=gpu' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c 16 -j 16 -T 2 -f /tmp/ab-bmw.sql gpuir" > /dev/null 2>&1
for pt in auto-and auto-or auto-bmw gpu-bmw; do d=${pt%-*}; m=${pt#*-}
  for f in 0 2; do q "ALTER SYSTEM SET gpuir.wake_fanout = $f" >/dev/null; q "SELECT pg_reload_conf()" >/dev/null; sleep 0.5
    t=$(su pg -c "PGOPTIONS='-c gpuir.device=$d' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c 64 -j 16 -T 3 -f /tmp/ab-$m.sql gpuir" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
    echo "$d $m 64 fanout $f: $t"; done; done | tee $O/rule.txt
echo "done $(el) s"
