#!/bin/bash
# s48 call 1 (prepared in s47): three trees: main (a-main: git archive main -o .device/var/a-main.tar), wip-bank-rotate (git archive wip-bank-rotate -o .device/var/bank.tar), and the working tree on wip-tile-prefetch ("new"); carry .device/s48a.sh engine var; bench/gpu-variants builds the trees into /tmp
# then, for whichever wins: its full checks (this script runs them on "new" only)
set -uo pipefail
export TSTART=$(date +%s)
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - TSTART )); }
E=$PWD/.device/engine
timeout 300 env AB_ROUNDS=1 bench/gpu-variants .device/var/*.tar -- --vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,16,1000 --k 10,1000 --modes or,bmw --check 50 --min-time 1 --max-time 2 --copy-mib 256 > $O/multi.out 2>&1
tail -14 $O/multi.out; echo "real logs $(el) s"
mkdir -p $O/gen; timeout 150 env OUT=$O/gen AB_ROUNDS=1 bench/gpu-variants .device/var/*.tar -- --synthetic 1000000 --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches 1,1000 --k 10,1000 --modes or,bmw --check 20 --min-time 1 --max-time 2 --copy-mib 256 > $O/gen.out 2>&1; tail -10 $O/gen.out
echo "benchmarks $(el) s"
# shared-memory conflicts of the tile kernel, one launch each tree (OR k 10, batch 1000)
COMMON=(--synthetic 1000000 --docs 40000000 --threads 16 --max-queries 1000 --k1 0.9 --b 0.4 --batches 1000 --k 10 --modes or --check 0 --selfcheck 0 --min-time 0 --max-time 0.2 --copy-mib 16 --no-verify)
for n in $(cd .device/var && ls *.tar | sed "s/.tar$//") new; do
  d=/tmp/gpuir-variant-$n; [ $n = new ] && d=$PWD
  timeout 120 ncu --clock-control none --cache-control none --kernel-name-base function --kernel-name regex:gpuir_search_tile --launch-skip 1 --launch-count 1 \
    --metrics gpu__time_duration.sum,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_atom.sum \
    $d/build/engine_bench "${COMMON[@]}" > $O/ncu-$n.txt 2>&1
  echo "== ncu $n $(el) s"; grep -E "duration|inst_executed|wavefronts|conflicts" $O/ncu-$n.txt
done
: checks in call 2
echo total $(el) s
cd $O && tar czf all.tgz multi.tgz *.out *.txt *.log 2>/dev/null; rm -f *.log multi.tgz *.txt gen-*; ls
