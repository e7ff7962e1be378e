#!/bin/bash
# session 33 call 1: a935cdd's transit test on the GPU (quick + racecheck), then one client
# of `or`: latency by length (threshold) and what auto routes per cell at one client
T0=$(date +%s)
scripts/gpu-check build > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build $(( $(date +%s) - T0 ))
make -s PG_CONFIG=/opt/pg15/bin/pg_config test/test_cuda_search 2>&1 | tail -3
s=$(date +%s); GPUIR_TEST_REQUIRE_GPU=1 test/test_cuda_search --quick > $OUT/quick.log 2>&1; echo "quick rc=$? $(( $(date +%s) - s )) s: $(tail -1 $OUT/quick.log)"
grep -i "transit" $OUT/quick.log | tail -5
s=$(date +%s); timeout 200 compute-sanitizer --tool racecheck --error-exitcode 1 test/test_cuda_search --sanitize > $OUT/racecheck.log 2>&1
echo "racecheck rc=$? $(( $(date +%s) - s )) s"; grep -v "^cuda search: .* ok\|passed:" $OUT/racecheck.log | tail -5
scripts/gpu-check server load threshold > $OUT/load.log 2>&1 || { tail -30 $OUT/load.log; exit 1; }
echo load+threshold $(( $(date +%s) - T0 )); cat $OUT/threshold.txt
P="/opt/pg15/bin/psql -h /tmp -p 5499 -d gpuir"
nq=$(su pg -c "$P -At -c 'SELECT max(qid) FROM queries'")
printf '\\set r random(1, %s)\nSELECT count(*) FROM gpuir_search('"'"'wiki_idx'"'"', (SELECT query FROM queries WHERE qid = :r LIMIT 1), 10, '"'"'or'"'"');\n' $nq > /tmp/p-or.sql; chmod 644 /tmp/p-or.sql
R="SELECT postings_from, round(cpu_mean_us::numeric,1) cpu, cpu_samples nc, round(gpu_mean_us::numeric,1) gpu, gpu_samples ng, round(gpu_cpu_mean_us::numeric,1) gcpu, routed_cpu rc, routed_gpu rg FROM gpuir_route() WHERE k = '<=100' AND mode = 'or' ORDER BY postings_from"
for pt in cpu gpu auto cpu gpu auto; do
  printf '%s: ' "$pt"; su pg -c "PGOPTIONS='-c gpuir.device=$pt' /opt/pg15/bin/pgbench -n -h /tmp -p 5499 -c 1 -j 1 -T 4 -f /tmp/p-or.sql gpuir" 2>&1 | grep -E "^tps|latency average" | tr '\n' ' '; echo
  su pg -c "$P -At -F ' ' -c \"$R\"" > $OUT/route-$pt-$(date +%s).txt
done
su pg -c "$P -c \"$R\""
echo end $(( $(date +%s) - T0 ))
