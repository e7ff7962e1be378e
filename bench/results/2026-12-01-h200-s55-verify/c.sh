#!/bin/bash
# s55 call 3 (carry .device/p4): the part kept
set -uo pipefail; mkdir -p /tmp/data; cp .device/p4/* /tmp/data/; ls /tmp/data | wc -l
