#!/bin/bash
# s50 SQL, call 2 of 4: parts AB and AC kept in /tmp/data
set -uo pipefail; mkdir -p /tmp/data; cp .device/p2/* .device/p4/* /tmp/data/; ls -la /tmp/data; ls /opt/pg15/bin/pg_config
