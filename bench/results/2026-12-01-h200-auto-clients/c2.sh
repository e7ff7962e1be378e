#!/bin/bash
# s55 second machine, calls 2 and 3 (carry .device/p2, then .device/p4): the part kept
set -uo pipefail; mkdir -p /tmp/data; cp .device/p*/* /tmp/data/; ls /tmp/data | wc -l
