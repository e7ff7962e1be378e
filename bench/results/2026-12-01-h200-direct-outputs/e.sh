#!/bin/bash
# s54 call 5: the server of call 4; base against new at 16 and 1 clients (s54/ab.sh PART=low, leaves new),
# then s54/checks.sh on new
set -uo pipefail; T0=$(date +%s); O=${OUT:-/tmp/out}; mkdir -p $O
el() { echo $(( $(date +%s) - T0 )); }
PART=low bash s54/ab.sh; echo "ablow rc=$? $(el) s"
bash s54/checks.sh; echo "checks rc=$? $(el) s"
grep -i "error\|fatal" /tmp/gpuir-work/postgres.log 2>/dev/null | grep -v "canceling\|terminating connection" | head -5
