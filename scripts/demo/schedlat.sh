# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B.

# ---- schedlat: run-queue latency ----------------------------------------
demo_schedlat() {
	local pid

	header "schedlat: run-queue latency (time spent runnable, waiting for a CPU)"
	echo "Workload: tests/helpers/contend: 4 threads pinned to CPU 0, each spinning"
	echo "200 ms per round, round after round, so they keep preempting each other."
	# 60 rounds of ~200 ms outlast the steps below; it is killed at the end.
	start_bg contend '^ready [0-9]+' "$B/tests/helpers/contend" 4 0 200 60
	pid=$BG_PID
	echo "contend is PID $pid"

	header "Per-process table every second for 3 s, only PID $pid (-p), appended (-C)"
	show "$B/schedlat" -p "$pid" -C -d 3s

	header "Log2 histogram of its run-queue waits, 2 s (-H), like bcc's runqlat"
	show "$B/schedlat" -p "$pid" -H -C -d 2s

	header "Each wait over 5 ms as it happens, with the task that held the CPU (--min), first 5 (-n)"
	show "$B/schedlat" -p "$pid" --min 5ms -n 5 -d 5s

	header "JSON lines (-j) for one interval, through jq"
	show_sh "$B/schedlat -p $pid -j -n 1 | jq -c 'select(.type==\"sample\") | {by, pid, comm, runs, p99_ms: (.p99_ns/1e6), wait_ms: (.wait_ns/1e6), preemptions}'"

	stop_bg
}
