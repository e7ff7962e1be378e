#!/bin/bash
# device: engine_bench of several trees (.device/var/*.tar, and this tree as "new"), interleaved
# A near-copy of bench/gpu-variants (several trees, interleaved rounds, best
# q/s per cell against the first): kept as run; it differs in taking the real
# logs by default, a time limit per run, going on past a failed run, and the
# kernel tests (TESTS=1). New device calls use bench/gpu-variants, and
# bench/gpu-kernel-checks for the tests.
set -uo pipefail
export PATH=/usr/local/cuda/bin:$PATH
O=${OUT:-/tmp/out}; mkdir -p $O
E=$PWD/.device/engine
t0=$(date +%s)
ROUNDS=${ROUNDS:-2}
names=()
for f in .device/var/*.tar; do
  n=$(basename $f .tar); names+=($n)
  rm -rf /tmp/var/$n; mkdir -p /tmp/var/$n; tar xf $f -C /tmp/var/$n
  (cd /tmp/var/$n && make -f bench/engine.mk -j16 > $O/build-$n.log 2>&1 || echo "BUILD FAILED $n") &
done
make -f bench/engine.mk -j16 > $O/build-new.log 2>&1 || echo "BUILD FAILED new"
wait
names+=(new)
echo "built $(( $(date +%s) - t0 )) s"
ARGS=(--vocab $E/vocab.tsv.gz --doclen $E/doclen.tsv.gz --queries $E/queries-trec05.tsv.gz --queries $E/queries-mq09.tsv.gz --docs 40000000 --threads 16 --max-queries 2000 --k1 0.9 --b 0.4 --batches ${BATCHES:-1,1000} --k ${KS:-10} --modes ${MODES:-and,or,bmw} --check 50 --min-time 1 --max-time 2 --copy-mib 256)
for r in $(seq 1 $ROUNDS); do
  for n in "${names[@]}"; do
    d=/tmp/var/$n; [ $n = new ] && d=$PWD
    timeout 120 $d/build/engine_bench "${ARGS[@]}" --out $O/$n-$r.tsv > $O/$n-$r.txt 2>&1 || { echo "FAILED $n $r"; tail -5 $O/$n-$r.txt; }
    grep -E 'exactness|MISMATCH' $O/$n-$r.txt | head -3
    echo "$n round $r done $(( $(date +%s) - t0 )) s"
  done
done
python3 - $O "${names[@]}" > $O/multi.txt <<'PY'
import csv,sys,glob,collections
O=sys.argv[1]; names=sys.argv[2:]
best=collections.defaultdict(dict)
for n in names:
    for f in glob.glob(f"{O}/{n}-*.tsv"):
        for row in csv.DictReader(open(f),delimiter='\t'):
            key=(row['log'],row['mode'],row['k'],row.get('batch') or row.get('B'))
            q=float(row.get('queries_per_s') or row.get('qps') or 0)
            best[key][n]=max(best[key].get(n,0),q)
print("log mode k batch "+" ".join(names)+"  "+" ".join(f"{n}/{names[0]}" for n in names[1:]))
for key in sorted(best):
    v=best[key]; b=v.get(names[0],0)
    print(" ".join(key), " ".join(f"{v.get(n,0):.0f}" for n in names), " ".join(f"{v.get(n,0)/b:.3f}" if b else "-" for n in names[1:]))
PY
cat $O/multi.txt
if [ "${TESTS:-1}" = 1 ]; then
CUDA_LINK=(-L/usr/local/cuda/lib64 -lcudart_static -lrt -lpthread -ldl -lstdc++ -lm)
nvcc -O3 --std=c++17 --fmad=false -gencode arch=compute_90,code=sm_90 -Isrc -Icuda -c test/cuda_decode_kernel.cu -o build/cuda_decode_kernel.o &&
gcc -O2 -Wall -Wextra -Isrc -Icuda -o build/test_cuda_decode test/test_cuda_decode.c src/gpuircodec.c cuda/gpuir_cuda_status.c build/cuda_decode_kernel.o build/engine_obj/*.o "${CUDA_LINK[@]}" &&
gcc -O2 -Wall -Wextra -ffp-contract=off -Isrc -Icuda -o build/test_cuda_search test/test_cuda_search.c src/gpuircodec.c src/gpuirlist.c cuda/gpuir_cuda_status.c cuda/gpuir_cuda_window.c build/engine_obj/*.o "${CUDA_LINK[@]}" || echo "TEST BUILD FAILED"
GPUIR_TEST_REQUIRE_GPU=1 timeout 100 build/test_cuda_decode > $O/decode.log 2>&1; echo "decode rc=$? $(tail -n 1 $O/decode.log) $(( $(date +%s) - t0 )) s"; grep -i "fail" $O/decode.log | head -5
GPUIR_TEST_REQUIRE_GPU=1 timeout ${STIME:-150} build/test_cuda_search ${SARGS:---quick} > $O/search.log 2>&1; echo "search rc=$? $(tail -n 1 $O/search.log) $(( $(date +%s) - t0 )) s"; grep -i "fail" $O/search.log | grep -v " 0 failed" | head -5
fi
cd $O && tar czf multi.tgz *.tsv *.txt *.log 2>/dev/null && rm -f *.tsv *-[0-9].txt build-*.log
