#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The test runner inside the VMs (busybox sh), started by tests/vm/init:
# sources lib.sh, then every tool's test file here (tests/vm/TOOL.sh), and
# prints TAP: "ok N - name", "not ok N - name", "ok N - name # skip why",
# with "#" diagnostics. Exits 1 when a test failed.
dir=$(dirname "$0")
. "$dir/lib.sh"
echo "# kernel $(uname -r) $(uname -m), $(nproc) CPUs; $(cat /proc/cmdline)"
for f in "$dir"/*.sh; do
	case ${f##*/} in run.sh|lib.sh) continue ;; esac
	echo "# ---- ${f##*/}"
	. "$f"
done
echo "1..$N"
[ "$FAILED" -eq 0 ]
