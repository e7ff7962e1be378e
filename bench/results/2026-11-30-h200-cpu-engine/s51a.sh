#!/bin/bash
# s51 call A: engine_bench with the production CPU engine (--cpu-engine 16) beside the GPU:
# PostgreSQL's server headers from the source tarball (configure + generated headers only),
# engine_bench with the kernels, then TREC 2005 + MQ 2009 over 1.2 M generated documents and
# the generated log over 40 M; every checked query against the exact reference.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O; t0=$(date +%s); el() { echo $(( $(date +%s) - t0 )); }
E=$PWD/.device/engine
if [ ! -f /tmp/pgsrc/ok ]; then
  rm -rf /tmp/pgsrc; mkdir -p /tmp/pgsrc; tar xf .device/data/postgresql-15_*.orig.tar.* -C /tmp/pgsrc
  (cd /tmp/pgsrc/postgresql-15.* && ./configure --without-readline --without-icu --without-zlib -q &&
   make -s -C src/backend generated-headers) > $O/pg-headers.log 2>&1 || { tail -30 $O/pg-headers.log; exit 1; }
  touch /tmp/pgsrc/ok
fi
INC=$(echo /tmp/pgsrc/postgresql-15.*/src/include); echo "headers $(el) s"
make -f bench/engine.mk -j16 PG_INCLUDEDIR_SERVER=$INC build/engine_bench > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
grep -i warning $O/build.log | head; echo "built $(el) s"
C=(--threads 16 --k1 0.9 --b 0.4 --check 20 --min-time 0.5 --max-time 1 --copy-mib 256 --cpu-engine 16 --cpu-seconds 2)
timeout 200 build/engine_bench "${C[@]}" --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz \
  --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz --docs 1200549 --max-queries 4000 \
  --batches 1,16,64,1000 --k 10,1000 --modes and,or,bmw --out $O/w1m.tsv --cpu-out $O/w1m-cpu.tsv > $O/w1m.txt 2>&1
echo "w1m rc=$? $(el) s"; grep -E "exactness|MISMATCH|ERROR" $O/w1m.txt | head
timeout 330 build/engine_bench "${C[@]}" --synthetic 1000000 --docs 40000000 --max-queries 2000 \
  --batches 1,1000 --k 10,1000 --modes or,bmw,and --out $O/gen.tsv --cpu-out $O/gen-cpu.tsv > $O/gen.txt 2>&1
echo "gen rc=$? $(el) s"; grep -E "exactness|MISMATCH|ERROR" $O/gen.txt | head
sed -n '/^GPU \/ production/,$p' $O/w1m.txt $O/gen.txt
