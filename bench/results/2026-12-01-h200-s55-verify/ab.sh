#!/bin/bash
# s55 A/B through SQL, pgbench -M prepared, AB_SECONDS (4) s a point, all 1.22 M paragraphs loaded:
# the base tree's gpuir.so against this tree's (/tmp/var/gpuir-{base,new}.so, installed in turn, the
# server restarted), bmw and or at 64 clients, ROUNDS (3) rounds, the CPU engine once a variant beside
# them; each GPU point's stage means (gpuir_gpu_stages); PART=low: 16 and 1 clients, one round.  Leaves the last.
set -uo pipefail; O=${OUT:-/tmp/out}; R=${ROUNDS:-3}; VS=${VARIANTS:-"base new"}; mkdir -p $O
PG=/opt/pg15/bin; LIB=$($PG/pg_config --pkglibdir)
q() { su pg -c "$PG/psql -X -h /tmp -p 5499 -d gpuir -At -c \"$1\""; }
nq=$(q "SELECT max(qid) FROM queries")
for m in bmw or and; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'%s'"'"');\n' $nq $m > /tmp/ab-$m.sql; chmod 644 /tmp/ab-$m.sql
done
qps() { su pg -c "PGOPTIONS='-c gpuir.device=$1' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c ${3:-64} -j 16 -T ${4:-${AB_SECONDS:-4}} -f /tmp/ab-$2.sql gpuir" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
use() {
  cp /tmp/var/gpuir-$1.so $LIB/gpuir.so.new && mv -f $LIB/gpuir.so.new $LIB/gpuir.so	# a new inode: the running server keeps its mapping
  su pg -c "$PG/pg_ctl -D /tmp/gpuir-pgdata -l /tmp/gpuir-work/postgres.log -m fast -w restart" > /dev/null
  for _ in $(seq 1 100); do [ "$(q "SELECT bool_and(memory IS NOT NULL AND worker_pid IS NOT NULL) FROM gpuir_status()" 2>/dev/null)" = t ] && break; sleep 0.2; done
  qps gpu bmw 16 2 > /dev/null
}
ST="SELECT string_agg(stage || '=' || events || ':' || total_ms, ' ' ORDER BY stage) FROM gpuir_gpu_stages()"
means() { awk -v x="$1" -v y="$2" 'BEGIN { n = split(x, a, " "); split(y, b, " ");
  for (i = 1; i <= n; i++) { split(a[i], p, "[=:]"); split(b[i], qq, "[=:]"); e = qq[2] - p[2]; if (e > 0) printf "%s %.1f (%d)  ", p[1], (qq[3] - p[3]) * 1000 / e, e } }'; }
point() {	# point LABEL MODE CLIENTS: a GPU point with its stage means
  local s0 s1 g
  s0=$(q "$ST"); g=$(qps gpu $2 $3); s1=$(q "$ST")
  printf '%-18s %-4s %2s clients gpu %8.0f cpu %8.0f gpu/cpu %5.2f  %s\n' "$1" $2 $3 $g ${cpu[$2]} $(awk -v a=$g -v b=${cpu[$2]} 'BEGIN{print a/b}') "$(means "$s0" "$s1")"
}
declare -A cpu
if [ "${PART:-64}" = 64 ]; then
for r in $(seq 1 $R); do
  for v in $VS; do
    use $v
    for m in bmw or; do cpu[$m]=$(qps cpu $m); point "round $r $v" $m 64; done
  done
done | tee $O/ab64.txt
else
for v in $VS; do
  use $v
  for c in 16 1; do for m in bmw or; do cpu[$m]=$(qps cpu $m $c); point "$v" $m $c; done; done
done | tee $O/ablow.txt
fi
