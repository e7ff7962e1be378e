#!/bin/bash
# s51 call C: the co-occurrence corpus (the part AA paragraphs resampled, --resample) over 40 M documents,
# TREC 2005 and MQ 2009, the production
# CPU engine on 16 processes beside the GPU: its BMW pruning next to the GPU's (builds as s51a.sh when fresh)
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
INC=$(echo /tmp/pgsrc/postgresql-15.*/src/include)
make -f bench/engine.mk -j16 PG_INCLUDEDIR_SERVER=$INC build/engine_bench > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "built $(el) s"
C=(--threads 16 --k1 0.9 --b 0.4 --check 20 --min-time 0.5 --max-time 1 --copy-mib 256 --cpu-engine 16 --cpu-seconds 2)
timeout 420 build/engine_bench "${C[@]}" --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz \
  --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz --resample .device/cooc/docs.tsv.gz --docs 40000000 --max-queries 2000 \
  --batches 1,16,1000 --k 10,1000 --modes and,or,bmw --out $O/r40m.tsv --cpu-out $O/r40m-cpu.tsv > $O/r40m.txt 2>&1
echo "r40m rc=$? $(el) s"; grep -E "exactness|MISMATCH|ERROR" $O/r40m.txt | head
sed -n '/^GPU \/ production/,$p' $O/r40m.txt
sed -n '/^BMW vs OR/,/^$/p' $O/r40m.txt; grep -A14 '^cpu engine: the production CPU engine' $O/r40m.txt
