#!/bin/bash
# s56 call 3 (carry .device/p4): the part kept
set -uo pipefail; mkdir -p /tmp/data; cp .device/p*/* /tmp/data/; ls /tmp/data | wc -l
