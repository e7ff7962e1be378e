#!/bin/bash
# s51 SQL, call 2 of 3: parts AB and AC kept in /tmp/data
set -uo pipefail; mkdir -p /tmp/data; cp .device/p2/* .device/p4/* /tmp/data/; ls -la /tmp/data; ls /opt/pg15/bin/pg_config
