# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B.

# ---- numaplace: NUMA placement, and GPU/NIC affinity ----------------------

# a GPU's sysfs and driver tree under $tmp/root: nvidia0 at 0000:3b:00.0 on
# node 1 (the demo host has no GPU, and maybe one node: AISCOPE_SYSROOT
# points the tool's device lookups there, as tests/numaplace.bats does)
_numaplace_root() {
	NP_ROOT=$tmp/root
	mkdir -p "$NP_ROOT/dev" "$NP_ROOT/proc/driver/nvidia/gpus/0000:3b:00.0" \
		"$NP_ROOT/sys/bus/pci/devices/0000:3b:00.0"
	: > "$NP_ROOT/dev/nvidia0"
	printf 'Model: demo\nDevice Minor: 0\n' > "$NP_ROOT/proc/driver/nvidia/gpus/0000:3b:00.0/information"
	echo 1 > "$NP_ROOT/sys/bus/pci/devices/0000:3b:00.0/numa_node"
}

demo_numaplace() {
	local pid nodes

	header "numaplace: on which NUMA nodes processes run and keep their memory, and their devices'"
	nodes=$(cat /sys/devices/system/node/online 2>/dev/null || echo 0)
	echo "This host's nodes: $nodes."
	_numaplace_root
	echo "Workload: tests/helpers/numabind: pinned to node 0's CPUs, 64 MiB bound to node 0,"
	echo "spinning, with $NP_ROOT/dev/nvidia0 open: a GPU whose sysfs says node 1."
	start_bg numabind '^ready [0-9]+' bash -c 'exec 3< "$1"; exec "$2" 0 0 64' _ \
		"$NP_ROOT/dev/nvidia0" "$B/tests/helpers/numabind"
	pid=$BG_PID

	header "Its placement every second for 3 s (-p), appended (-C): CPU and memory on node 0, GPU on node 1: REMOTE"
	show env AISCOPE_SYSROOT="$NP_ROOT" "$B/numaplace" -p "$pid" -C -d 3s

	header "The host's busiest processes, one 2 s interval, by CPU time"
	show "$B/numaplace" -C -n 1 -i 2s -r 5

	header "JSON lines (-j), the flagged processes with the figures, through jq"
	show_sh "AISCOPE_SYSROOT=$NP_ROOT $B/numaplace -p $pid -j -n 1 | jq -c 'select(.remote == true) | {pid, comm, cpu_nodes, mem_bytes, devices}'"

	stop_bg
}
