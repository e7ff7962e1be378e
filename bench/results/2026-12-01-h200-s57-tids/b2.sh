#!/bin/bash
# s57 second machine, calls 2-4 (carry one of .device/p1, p2, p4): the part kept in /tmp/data
set -uo pipefail; mkdir -p /tmp/data; cp .device/p*/* /tmp/data/; ls /tmp/data
