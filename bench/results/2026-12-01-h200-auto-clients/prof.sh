#!/bin/bash
# s54 profile (from s53's): the server restarted with bench/sampler.c preloaded; pgbench -M prepared points
# ("DEVICE MODE CLIENTS" in PROF_POINTS), each under bench/host-cpu (3 s inside 5 s); each point's
# backends' samples kept apart; then the server stopped (the worker writes its samples) and restarted
# plain; bench/sampler-report of each point, with host-cpu's backend us/tx
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - T0 )); }
PG=/opt/pg15/bin; D=/tmp/gpuir-pgdata; S=/tmp/samples; L=/tmp/gpuir-work/postgres.log
q() { su pg -c "$PG/psql -X -h /tmp -p 5499 -d gpuir -At -c \"$1\""; }
nq=$(q "SELECT max(qid) FROM queries")
for m in bmw or and; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'%s'"'"');\n' $nq $m > /tmp/p-$m.sql; chmod 644 /tmp/p-$m.sql
done
rm -rf $S; mkdir -p $S; chown pg $S
su pg -c "$PG/pg_ctl -D $D -m fast stop" > /dev/null
su pg -c "LD_PRELOAD=/tmp/sampler.so GPUIR_SAMPLER_DIR=$S GPUIR_SAMPLER_US=${PROF_US:-1000} $PG/pg_ctl -D $D -l $L -w start" > /dev/null
sleep 2
# warm the list cache, the session caches and auto's model (PROF_WARM: "DEVICE MODE CLIENTS SECONDS")
su pg -c "PGOPTIONS='-c gpuir.device=gpu' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c 16 -j 16 -T 3 -f /tmp/p-bmw.sql gpuir" > /dev/null 2>&1
if [ -n "${PROF_WARM:-}" ]; then set -- $PROF_WARM
  su pg -c "PGOPTIONS='-c gpuir.device=$1' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c $3 -j 16 -T $4 -f /tmp/p-$2.sql gpuir" 2>&1 | grep "^tps"; fi
sleep 1; mkdir -p $S/warm; mv $S/*.txt $S/warm/ 2>/dev/null
echo "warm $(el) s"
for pt in ${PROF_POINTS:-gpu-bmw-64 gpu-or-64 cpu-bmw-64 gpu-and-16 cpu-and-16}; do
  set -- ${pt//-/ }; dev=$1; m=$2; c=$3; tag=$dev-$m-$c
  bench/host-cpu --from 1.5 --for 3 --label "$tag: " -- su pg -c "PGOPTIONS='-c gpuir.device=$dev' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c $c -j 16 -T 5 -f /tmp/p-$m.sql gpuir" 2>&1 | grep -v "^\(transaction type\|scaling\|query mode\|number of\|latency\|initial\|pgbench\|maximum\|duration\|tps\)" > $O/hostcpu-$tag.txt
  sleep 1; mkdir -p $S/$tag; mv $S/*.txt $S/$tag/ 2>/dev/null
  cat $O/hostcpu-$tag.txt
done
su pg -c "$PG/pg_ctl -D $D -m fast stop" > /dev/null; sleep 1
mkdir -p $S/stop; mv $S/*.txt $S/stop/ 2>/dev/null
su pg -c "$PG/pg_ctl -D $D -l $L -w start" > /dev/null
echo "points done $(el) s"
for dd in $S/*/; do
  tag=$(basename $dd); f=$O/hostcpu-$tag.txt; args=()
  if [ -f $f ]; then
    b=$(awk '$1 == "backend" { print $6 + $7 }' $f); w=$(awk '$1 == "gpuir" && $2 == "worker" { print $7 + $8 }' $f)
    [ -n "$b" ] && args+=(--us-per-tx backend=$b); [ -n "$w" ] && args+=(--us-per-tx "gpuir worker=$w")
  fi
  python3 bench/sampler-report $dd --top 45 "${args[@]}" > $O/prof-$tag.txt 2>&1
done
echo "reports $(el) s"
for pt in ${PROF_POINTS:-gpu-bmw-64 cpu-bmw-64}; do echo "== $pt"; sed -n '1,30p' $O/prof-$pt.txt; done
echo "== worker (stop)"; grep -A25 "gpuir worker" $O/prof-stop.txt | head -28
