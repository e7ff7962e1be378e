#!/bin/bash
# s53 rep: the profile reports again (into $OUT: the first call's files were too many), and one
# 64-client gpu bmw / or point with gpuir_gpu_stages' means around it (server plain)
set -uo pipefail; O=${OUT:-/tmp/out}; mkdir -p $O; S=/tmp/samples; PG=/opt/pg15/bin
for dd in $S/*/; do
  tag=$(basename $dd); f=/tmp/out-hostcpu-$tag.txt; args=()
  python3 bench/sampler-report $dd --top 60 > $O/prof-$tag.txt 2>&1
done
q() { su pg -c "$PG/psql -X -h /tmp -p 5499 -d gpuir -At -c \"$1\""; }
ST="SELECT string_agg(stage || '=' || events || ':' || total_ms, ' ' ORDER BY stage) FROM gpuir_gpu_stages()"
means() { awk -v x="$1" -v y="$2" 'BEGIN { n = split(x, a, " "); split(y, b, " ");
  for (i = 1; i <= n; i++) { split(a[i], p, "[=:]"); split(b[i], qq, "[=:]"); e = qq[2] - p[2]; if (e > 0) printf "%s %.1f (%d)  ", p[1], (qq[3] - p[3]) * 1000 / e, e } }'; }
su pg -c "PGOPTIONS='-c gpuir.device=gpu' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c 16 -j 16 -T 2 -f /tmp/p-bmw.sql gpuir" > /dev/null 2>&1
for m in bmw or; do
  s0=$(q "$ST"); b0=$(q "SELECT batches, gpu_queries FROM gpuir_status()")
  t=$(su pg -c "PGOPTIONS='-c gpuir.device=gpu' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c 64 -j 16 -T 4 -f /tmp/p-$m.sql gpuir" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  s1=$(q "$ST"); b1=$(q "SELECT batches, gpu_queries FROM gpuir_status()")
  echo "gpu $m 64: tps $t  batches|queries $b0 -> $b1"; echo "  $(means "$s0" "$s1")"
done | tee $O/stages.txt
