#!/bin/bash
# s49 SQL grid, call 2 of 3: parts AB and AC kept in /tmp/data
set -uo pipefail; mkdir -p /tmp/data; cp .device/p2/* .device/p4/* /tmp/data/ 2>/dev/null; true && ls -la /tmp/data; ls /opt/pg15/bin/pg_config
