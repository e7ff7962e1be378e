#!/bin/bash
# s50 A/B through SQL, 64 clients, pgbench -M prepared, 4 s a point, all 1.22 M paragraphs loaded:
# gpuir.wake_threads 2 against 0 (reloaded between), bmw and or, ROUNDS rounds in turn, the CPU engine
# once a round beside them; each GPU point's stage means (gpuir_gpu_stages); then bench/host-cpu at one
# point of each setting.  Usage: s50ab.sh ROUNDS "WAKE_THREADS ..."
set -uo pipefail; O=${OUT:-/tmp/out}; R=${1:-3}; WS=${2:-"2 0"}; mkdir -p $O
PG=${PGBIN:-/opt/pg15/bin}
q() { su pg -c "$PG/psql -X -h /tmp -p 5499 -d gpuir -At -c \"$1\""; }
nq=$(q "SELECT max(qid) FROM queries")
for m in bmw or and; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'%s'"'"');\n' $nq $m > /tmp/ab-$m.sql; chmod 644 /tmp/ab-$m.sql
done
qps() { su pg -c "PGOPTIONS='-c gpuir.device=$1' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c ${3:-64} -j 16 -T ${4:-${AB_SECONDS:-4}} -f /tmp/ab-$2.sql gpuir" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
setw() { q "ALTER SYSTEM SET gpuir.wake_threads = $1" > /dev/null; q "SELECT pg_reload_conf()" > /dev/null; sleep 1; }
ST="SELECT string_agg(stage || '=' || events || ':' || total_ms, ' ' ORDER BY stage) FROM gpuir_gpu_stages()"
means() { awk -v x="$1" -v y="$2" 'BEGIN { n = split(x, a, " "); split(y, b, " ");
  for (i = 1; i <= n; i++) { split(a[i], p, "[=:]"); split(b[i], qq, "[=:]"); e = qq[2] - p[2]; if (e > 0) printf "%s %.1f (%d)  ", p[1], (qq[3] - p[3]) * 1000 / e, e } }'; }
qps gpu bmw 16 2 > /dev/null
for r in $(seq 1 $R); do
  for m in bmw or; do
    c=$(qps cpu $m)
    for w in $WS; do
      setw $w; s0=$(q "$ST"); g=$(qps gpu $m); s1=$(q "$ST")
      printf 'round %s %-4s wake_threads %s  gpu %8.0f cpu %8.0f  gpu/cpu %5.2f  %s\n' $r $m $w $g $c $(awk -v a=$g -v b=$c 'BEGIN{print a/b}') "$(means "$s0" "$s1")"
    done
  done
done | tee $O/ab.txt
for w in $WS; do
  setw $w
  bench/host-cpu --from 1.5 --for 3 --label "gpu bmw 64 prepared wake_threads $w: " -- su pg -c "PGOPTIONS='-c gpuir.device=gpu' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c 64 -j 16 -T 5 -f /tmp/ab-bmw.sql gpuir" | grep -v "^\(transaction type\|scaling\|query mode\|number of\|latency\|initial\|pgbench\|maximum\|duration\)"
done | tee $O/host-cpu.txt
setw 2
