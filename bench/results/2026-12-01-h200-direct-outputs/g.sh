#!/bin/bash
# s54 profile session, call 4 (carry .device/p3): all 1.22 M paragraphs loaded; cpu / auto `and` at 64
# clients, two rounds each (4 s), then the profile (s54/prof.sh) of cpu-and-64 and auto-and-64
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data; cp .device/p3/* /tmp/data/
el() { echo $(( $(date +%s) - T0 )); }
export GPUIR_DATA=/tmp/data GPUIR_CHECK_SECONDS=4 GPUIR_CHECK_PROTOCOL=prepared
GPUIR_CHECK_LOG=/tmp/llog scripts/gpu-check server load > $O/load.out 2>&1; echo "load rc=$? $(el) s"
PG=/opt/pg15/bin; q() { su pg -c "$PG/psql -X -h /tmp -p 5499 -d gpuir -At -c \"$1\""; }
nq=$(q "SELECT max(qid) FROM queries")
printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'and'"'"');\n' $nq > /tmp/ab-and.sql; chmod 644 /tmp/ab-and.sql
qps() { su pg -c "PGOPTIONS='-c gpuir.device=$1' $PG/pgbench -n -M prepared -h /tmp -p 5499 -c 64 -j 16 -T ${2:-4} -f /tmp/ab-and.sql gpuir" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p'; }
qps auto 6 > /dev/null
for r in 1 2; do for d in cpu auto; do echo "round $r and 64 clients $d $(qps $d)"; done; done | tee $O/and64.txt
q "SELECT queue_depth, auto_to_cpu, auto_to_gpu FROM gpuir_status()"
PROF_WARM="auto and 64 4" PROF_POINTS="cpu-and-64 auto-and-64" bash s54/prof.sh; echo "prof $(el) s"
