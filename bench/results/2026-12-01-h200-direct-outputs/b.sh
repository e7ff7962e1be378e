#!/bin/bash
# s54 call 2 (carry .device/p2, .device/engine, .device/var): the part kept in /tmp/data; the base tree's
# gpuir.so built against the installed PostgreSQL (/tmp/var/gpuir-base.so); engine_bench, this tree against
# the base (bench/gpu-variants), TREC 2005 over 1,200,549 generated documents (the paragraphs' term and
# length distributions), and/or/bmw, k 10 and 1000, batches 1, 16, 64, 1000, two rounds
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O /tmp/data /tmp/var
export PATH=/usr/local/cuda/bin:$PATH
el() { echo $(( $(date +%s) - T0 )); }
cp .device/p*/* /tmp/data/; cp .device/var/base.tar /tmp/var/base.tar
rm -rf /tmp/base; mkdir -p /tmp/base && tar xf /tmp/var/base.tar -C /tmp/base
(cd /tmp/base && make -j16 PG_CONFIG=/opt/pg15/bin/pg_config > /tmp/base-build.log 2>&1) && cp /tmp/base/gpuir.so /tmp/var/gpuir-base.so && echo "base gpuir.so built $(el) s" || tail -20 /tmp/base-build.log
E=$PWD/.device/engine
cd /tmp/eng; timeout 330 env OUT=/tmp/v1 AB_ROUNDS=2 bench/gpu-variants /tmp/var/base.tar -- --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --docs 1200549 --threads 16 --max-queries 4000 --k1 0.9 --b 0.4 --k 10,1000 --modes or,bmw,and --check 20 --min-time 0.5 --max-time 1 --copy-mib 256 --batches 1,16,64,1000 > $O/v1.out 2>&1; echo "v1 rc=$? $(el) s"
cp /tmp/v1/variants.txt $O/v1-variants.txt; grep -hE "exactness|MISMATCH|ERROR" /tmp/v1/*.txt | sort | uniq -c | head; cat $O/v1-variants.txt
