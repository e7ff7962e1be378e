#!/bin/bash
# s53 A/B through SQL, pgbench -M prepared, 4 s a point, all 1.22 M paragraphs loaded: the setting GUC
# (default gpuir.wake_fanout) at each of VALUES (reloaded between) for bmw and or at 64 clients, ROUNDS
# rounds in turn, the CPU engine once a round beside them; each GPU point's stage means
# (gpuir_gpu_stages) and batches; then LOW_CLIENTS (default 16) clients, one round; DEFAULT set last
set -uo pipefail; O=${OUT:-/tmp/out}; R=${ROUNDS:-3}; FS=${VALUES:-${FANOUTS:-"0 2"}}; G=${GUC:-gpuir.wake_fanout}; mkdir -p $O
PG=/opt/pg15/bin
q() { su pg -c "$PG/psql -X -h /tmp -p 5499 -d gpuir -At -c \"$1\""; }
nq=$(q "SELECT max(qid) FROM queries")
for m in bmw or and; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'%s'"'"');\n' $nq $m > /tmp/ab-$m.sql; chmod 644 /tmp/ab-$m.sql
done
qps() { su pg -c "PGOPTIONS='-c gpuir.device=$1' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c ${3:-64} -j 16 -T ${4:-4} -f /tmp/ab-$2.sql gpuir" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
setf() { q "ALTER SYSTEM SET $G = $1" > /dev/null; q "SELECT pg_reload_conf()" > /dev/null; sleep 1; }
ST="SELECT string_agg(stage || '=' || events || ':' || total_ms, ' ' ORDER BY stage) FROM gpuir_gpu_stages()"
means() { awk -v x="$1" -v y="$2" 'BEGIN { n = split(x, a, " "); split(y, b, " ");
  for (i = 1; i <= n; i++) { split(a[i], p, "[=:]"); split(b[i], qq, "[=:]"); e = qq[2] - p[2]; if (e > 0) printf "%s %.1f (%d)  ", p[1], (qq[3] - p[3]) * 1000 / e, e } }'; }
qps gpu bmw 16 2 > /dev/null
point() { # fanout mode clients
  setf $1; s0=$(q "$ST"); g=$(qps gpu $2 $3); s1=$(q "$ST")
  printf '%-4s %2s clients  %s %s  gpu %8.0f  %s\n' $2 $3 $G $1 $g "$(means "$s0" "$s1")"
}
for r in $(seq 1 $R); do
  for m in bmw or; do
    c=$(qps cpu $m); printf 'round %s %-4s 64 clients  cpu %8.0f\n' $r $m $c
    for f in $FS; do point $f $m 64; done
  done
done | tee $O/ab64.txt
for lc in ${LOW_CLIENTS:-16}; do
  for m in bmw or and; do
    c=$(qps cpu $m $lc); printf '%-4s %2s clients  cpu %8.0f\n' $m $lc $c
    for f in $FS; do point $f $m $lc; done
  done
done | tee $O/ablow.txt
setf ${DEFAULT:-2}
