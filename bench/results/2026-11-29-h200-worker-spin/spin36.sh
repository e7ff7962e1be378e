#!/bin/bash
# gpuir.worker_spin: one client's round trip with the worker sleeping at once (0) and polling 200 us (the default)
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
P="su pg -c"
for spin in 0 200; do
  $P "/opt/pg15/bin/psql -X -q -h /tmp -p 5499 -d gpuir -c 'ALTER SYSTEM SET gpuir.worker_spin = $spin' -c 'SELECT pg_reload_conf()'" > /dev/null
  sleep 1
  $P "/opt/pg15/bin/psql -X -At -h /tmp -p 5499 -d gpuir -c 'SHOW gpuir.worker_spin'"
  GPUIR_CHECK_SECONDS=3 GPUIR_CHECK_RTT_ROUNDS=3 GPUIR_CHECK_RTT_CLIENTS=1 timeout 200 scripts/gpu-check rtt > $OUT/rtt-spin$spin.log 2>&1; echo "spin $spin rc $? at $(( $(date +%s) - T0 ))"
  grep -A3 "^mode" $OUT/rtt-spin$spin.log | sed 's/rounds cpu.*;//' | cut -c1-230
done
echo end $(( $(date +%s) - T0 ))
