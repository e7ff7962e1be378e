#!/bin/bash
# s55 auto at k = 10 through SQL (pgbench -M prepared, AB_SECONDS (4) s a point, all 1.22 M paragraphs
# loaded, this tree's gpuir.so; K (10) the k): per mode and client count, in turn, the CPU engine, the GPU, auto with
# the clients test off (gpuir.auto_clients_per_core = 0: the rule before), auto as built (2) and auto
# without spills (gpuir.auto_cpu_slots = 0); ROUNDS (3) rounds at CLIENTS (64), then LOW (16) once;
# after each auto point the queries it sent to each device (gpuir_status's auto_to_cpu / auto_to_gpu)
set -uo pipefail; O=${OUT:-/tmp/out}; R=${ROUNDS:-3}; mkdir -p $O
PG=/opt/pg15/bin
q() { su pg -c "$PG/psql -X -h /tmp -p 5499 -d gpuir -At -c \"$1\""; }
nq=$(q "SELECT max(qid) FROM queries")
for m in bmw or and; do
  printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), %s, '"'"'%s'"'"');\n' $nq ${K:-10} $m > /tmp/aa-$m.sql; chmod 644 /tmp/aa-$m.sql
done
declare -A opt=( [cpu]="-c gpuir.device=cpu" [gpu]="-c gpuir.device=gpu" [auto0]="-c gpuir.device=auto -c gpuir.auto_clients_per_core=0"
  [auto]="-c gpuir.device=auto" [autos0]="-c gpuir.device=auto -c gpuir.auto_cpu_slots=0" )
VS=${VS:-"cpu gpu auto0 auto autos0"}
split() { q "SELECT auto_to_cpu || ' ' || auto_to_gpu FROM gpuir_status() LIMIT 1"; }
point() {	# point ROUND MODE CLIENTS VARIANT
  local a b t
  a=$(split)
  t=$(su pg -c "PGOPTIONS='${opt[$4]}' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c $3 -j 16 -T ${AB_SECONDS:-4} -f /tmp/aa-$2.sql gpuir" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  b=$(split)
  printf '%-7s %-4s %2s %-7s %9.0f' "$1" $2 $3 $4 "${t:-0}"
  case $4 in auto*) set -- $a $b; printf '   to cpu %8d  to gpu %8d' $(( $3 - $1 )) $(( $4 - $2 ));; esac
  echo
}
for r in $(seq 1 $R); do
  for m in and or bmw; do for v in $VS; do point "round$r" $m ${CLIENTS:-64} $v; done; done
done | tee $O/auto64.txt
[ "${LOW:-16}" != 0 ] && for m in and or bmw; do for v in $VS; do point low $m ${LOW:-16} $v; done; done | tee $O/auto16.txt
q "SELECT * FROM gpuir_route() ORDER BY load, mode, k, postings_from" > $O/route.txt
# medians per mode and variant at CLIENTS, and each against the better of cpu and gpu
python3 - $O/auto64.txt <<'PY' | tee $O/auto64-medians.txt
import sys, statistics, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if f and f[0].startswith('round'):
        v[(f[1], f[3])].append(float(f[4]))
for m in ('and', 'or', 'bmw'):
    med = {k: statistics.median(v[(m, k)]) for k in ('cpu', 'gpu', 'auto0', 'auto', 'autos0') if v[(m, k)]}
    best = max(med.get('cpu', 0), med.get('gpu', 0)) or 1
    print('%-4s median q/s ' % m + '  '.join('%s %.0f (%.2f)' % (k, x, x / best) for k, x in med.items()))
PY
