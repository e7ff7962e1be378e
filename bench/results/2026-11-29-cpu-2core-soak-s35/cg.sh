#!/bin/bash
# cg.sh IDX PASSES: instructions in GpuirSearch over PASSES calls of bench_latency_ms(IDX) (3 passes of 200 queries each)
set -e
D=/tmp/soak35/cgdata; IDX=$1; N=$2
PGB=/usr/lib/postgresql/15/bin
if [ ! -d $D ]; then cp -a /tmp/soak35/copy $D; touch $D/postgresql.conf; rm -f $D/postmaster.pid; chown -R postgres $D; fi
sql=""; for i in $(seq 1 $N); do sql="$sql SELECT bench_latency_ms('$IDX');"; done
out=/tmp/soak35/cg.$IDX.$N.out
echo "$sql" | tr ';' '\n' | sed 's/$/;/' | grep SELECT > /tmp/soak35/cg.sql
cd /tmp && runuser -u postgres -- valgrind --tool=callgrind --toggle-collect=GpuirSearch --callgrind-out-file=$out \
  $PGB/postgres --single -D $D -c shared_buffers=1GB -c jit=off -c autovacuum=off postgres < /tmp/soak35/cg.sql 2>/tmp/soak35/cg.$IDX.$N.err | grep -v "^$" | tail -3
grep -E "^summary|^totals" $out
