#!/bin/bash
# s51: a query log the repository had never seen (log.txt: 223 queries written for this run,
# tokenized by bench/compare --query-log unseen=log.txt --export-engine-inputs over part AA),
# engine_bench over 40 M and 1.2 M generated documents with the production CPU engine on 16
# processes beside the GPU; first the kernel test (--quick) of this tree
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
make -f bench/engine.mk -j16 PG_INCLUDEDIR_SERVER=$INC build/engine_bench build/test_cuda_search > $O/build.log 2>&1 || { tail -30 $O/build.log; exit 1; }
echo "built $(el) s"
timeout 100 build/test_cuda_search --quick > $O/test-quick.txt 2>&1; echo "test --quick rc=$? $(el) s"; tail -1 $O/test-quick.txt
C=(--threads 16 --k1 0.9 --b 0.4 --check 50 --min-time 0.5 --max-time 1 --copy-mib 256 --cpu-engine 16 --cpu-seconds 2
   --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries .device/unseen/queries-unseen.tsv.gz --k 10,1000 --modes and,or,bmw)
timeout 240 build/engine_bench "${C[@]}" --docs 40000000 --batches 1,16,1000 --out $O/u40m.tsv --cpu-out $O/u40m-cpu.tsv > $O/u40m.txt 2>&1
echo "u40m rc=$? $(el) s"
timeout 90 build/engine_bench "${C[@]}" --docs 1200549 --batches 1,16,64,1000 --out $O/u1m.tsv --cpu-out $O/u1m-cpu.tsv > $O/u1m.txt 2>&1
echo "u1m rc=$? $(el) s"
grep -h -E "exactness|MISMATCH|ERROR" $O/u*.txt | sort | uniq -c
for f in u40m u1m; do sed -n '/^GPU \/ production/,/^wrote/p' $O/$f.txt; sed -n '/^BMW vs OR/,/^$/p' $O/$f.txt; done
