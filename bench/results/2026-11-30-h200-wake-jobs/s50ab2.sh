#!/bin/bash
# s50 A/B through SQL, 64 clients, pgbench -M prepared, 4 s a point, all 1.22 M paragraphs loaded:
# search jobs 2 (HEAD) against 4 (/tmp/var/gpuir-j*.so, installed in turn, server restarted), each with
# gpuir.wake_threads 0 and 2, bmw and or, ROUNDS rounds; the CPU engine once a round beside them; each GPU
# point's stage means and the GPU's mean utilization (nvidia-smi, 100 ms samples); then gpuir.batch_window
# 0.05 and 0.1 ms on the last variant.  Usage: s50ab2.sh ROUNDS "VARIANTS"
set -uo pipefail; O=${OUT:-/tmp/out}; R=${1:-2}; VS=${2:-"j2 j4"}; mkdir -p $O
PG=${PGBIN:-/opt/pg15/bin}; LIB=$($PG/pg_config --pkglibdir)
q() { su pg -c "$PG/psql -X -h /tmp -p 5499 -d gpuir -At -c \"$1\""; }
nq=$(q "SELECT max(qid) FROM queries")
for m in bmw or and; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'%s'"'"');\n' $nq $m > /tmp/ab-$m.sql; chmod 644 /tmp/ab-$m.sql
done
qps() { su pg -c "PGOPTIONS='-c gpuir.device=$1' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c ${3:-64} -j 16 -T ${4:-${AB_SECONDS:-4}} -f /tmp/ab-$2.sql gpuir" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
setg() { q "ALTER SYSTEM SET gpuir.$1 = $2" > /dev/null; q "SELECT pg_reload_conf()" > /dev/null; sleep 1; }
use() {
  cp /tmp/var/gpuir-$1.so $LIB/gpuir.so.new && mv -f $LIB/gpuir.so.new $LIB/gpuir.so	# a new inode: the running server keeps its mapping
  su pg -c "$PG/pg_ctl -D /tmp/gpuir-pgdata -l /tmp/gpuir-work/postgres.log -m fast -w restart" > /dev/null
  for _ in $(seq 1 100); do [ "$(q "SELECT bool_and(memory IS NOT NULL AND worker_pid IS NOT NULL) FROM gpuir_status()" 2>/dev/null)" = t ] && break; sleep 0.2; done
  qps gpu bmw 16 2 > /dev/null
}
ST="SELECT string_agg(stage || '=' || events || ':' || total_ms, ' ' ORDER BY stage) FROM gpuir_gpu_stages()"
means() { awk -v x="$1" -v y="$2" 'BEGIN { n = split(x, a, " "); split(y, b, " ");
  for (i = 1; i <= n; i++) { split(a[i], p, "[=:]"); split(b[i], qq, "[=:]"); e = qq[2] - p[2]; if (e > 0) printf "%s %.1f (%d)  ", p[1], (qq[3] - p[3]) * 1000 / e, e } }'; }
point() {	# point LABEL MODE: a GPU point with stage means and utilization
  local s0 s1 g u
  s0=$(q "$ST"); nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 100 > /tmp/util.txt 2>/dev/null & local np=$!
  g=$(qps gpu $2); kill $np 2>/dev/null; wait $np 2>/dev/null; s1=$(q "$ST")
  u=$(awk 'NR > 5 && NR < 36 { s += $1; n++ } END { printf "%.0f", n ? s / n : -1 }' /tmp/util.txt)
  printf '%-28s %-4s gpu %8.0f cpu %8.0f gpu/cpu %5.2f util %3s%%  %s\n' "$1" $2 $g ${cpu[$2]} $(awk -v a=$g -v b=${cpu[$2]} 'BEGIN{print a/b}') $u "$(means "$s0" "$s1")"
}
declare -A cpu
for r in $(seq 1 $R); do
  for v in $VS; do
    use $v
    for m in bmw or; do
      cpu[$m]=$(qps cpu $m)
      for w in 0 2; do setg wake_threads $w; point "round $r $v wake $w" $m; done
    done
  done
done | tee $O/ab2.txt
v=${VS##* }
{ setg wake_threads 0
  for m in bmw or; do cpu[$m]=$(qps cpu $m); done
  for bw in 0.05 0.1; do setg batch_window $bw; for m in bmw or; do point "$v wake 0 batch_window $bw" $m; done; done
  setg batch_window 0; } | tee -a $O/ab2.txt
