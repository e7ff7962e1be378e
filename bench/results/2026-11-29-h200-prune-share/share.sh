#!/bin/bash
# pruned lists at a 10% budget: the share kept 1/8 (the default) against 1/4 and 1/2, same call
T0=$(date +%s)
scripts/gpu-check build server load > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
echo build+load $(( $(date +%s) - T0 ))
for share in 8 4 2; do
	if [ $share != 8 ]; then
		touch src/gpuircache.c
		make -s PG_CONFIG=/opt/pg15/bin/pg_config PG_CPPFLAGS=-DGPUIR_PRUNE_SHARE=$share > $OUT/make-$share.log 2>&1 &&
			make -s PG_CONFIG=/opt/pg15/bin/pg_config install >> $OUT/make-$share.log 2>&1 || { tail -20 $OUT/make-$share.log; exit 1; }
	fi
	left=$(( 585 - $(date +%s) + T0 ))
	[ $left -lt 60 ] && { echo "share $share: no time left"; break; }
	timeout $left scripts/gpu-check pruned > $OUT/pruned-$share.log 2>&1; echo "share 1/$share rc $? at $(( $(date +%s) - T0 ))"
	grep -A7 "^mode" $OUT/pruned-$share.log | head -8; grep "queries that read pruned" $OUT/pruned-$share.log
done
grep -c ERROR /tmp/gpuir-gpu-check/postgres.log
echo end $(( $(date +%s) - T0 ))
