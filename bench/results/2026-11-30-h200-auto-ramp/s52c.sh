#!/bin/bash
# s52c (SQL calls 2 and 3 of 6): the carried part (.device/p2, then .device/p4) kept in /tmp/data
set -uo pipefail; mkdir -p /tmp/data; cp .device/p*/* /tmp/data/; ls -la /tmp/data; ls /opt/pg15/bin/pg_config
