#!/usr/bin/env bash
# scripts/bench/topograph-lifecycle.sh: what topograph's own BPF side (the
# process fork, exec and exit hooks) costs the processes it watches.
#
# A loop of N fork + exec(/bin/true) + exit + wait (tests/helpers/lifecycle
# loop N), timed alone and while topograph traces, interleaved, REPS times.
# topograph runs with stand-ins for socketsnoop and ipcsnoop that only say
# they trace, so that the difference is its own hooks. Prints the medians,
# per iteration, what topograph recorded (every process of the loop must be
# there), and the run time of its BPF programs as the kernel counts it
# (kernel.bpf_stats_enabled=1, bpftool): the cost per hook, which the wall
# times of a shared machine blur. Run as root:
#
#   scripts/bench/topograph-lifecycle.sh        # N=2000 REPS=7, tp_btf and tracepoint
#
# Environment: N, REPS, MODES (default "tp_btf tracepoint"), BIN (default build/).
set -u -o pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$ROOT/build}
N=${N:-2000}
REPS=${REPS:-7}
MODES=${MODES:-tp_btf tracepoint}
LC=$BIN/tests/helpers/lifecycle
[ "$(id -u)" -eq 0 ] || { echo "run it as root" >&2; exit 1; }
[ -x "$BIN/topograph" ] && [ -x "$LC" ] || { echo "build first (make)" >&2; exit 1; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cp "$BIN/topograph" "$dir/"
for t in socketsnoop ipcsnoop; do
	cat > "$dir/$t" <<-'STUB'
	#!/bin/bash
	trap 'exit 0' INT TERM
	echo "Tracing (a stand-in)... Ctrl-C to end." >&2
	while :; do sleep 1; done
	STUB
	chmod +x "$dir/$t"
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

loop_ns() { "$LC" loop "$N" | awk '{ print $3 }'; }

stats=
command -v bpftool > /dev/null && [ -e /proc/sys/kernel/bpf_stats_enabled ] && stats=1
old_stats=$(cat /proc/sys/kernel/bpf_stats_enabled 2>/dev/null || echo 0)
trap 'rm -rf "$dir"; sysctl -qw kernel.bpf_stats_enabled="$old_stats" 2>/dev/null' EXIT

for mode in $MODES; do
	: > "$dir/base" && : > "$dir/with" && : > "$dir/recs" && : > "$dir/stats"
	for ((r = 0; r < REPS; r++)); do
		loop_ns >> "$dir/base"
		# emptied first: the last run's "Tracing" line must not start the loop
		: > "$dir/g.err"
		"$dir/topograph" -j -d 600 --tree --probe-mode "$mode" > "$dir/g.json" 2> "$dir/g.err" &
		pid=$!
		for ((i = 0; i < 200; i++)); do
			grep -q 'Tracing the communication graph' "$dir/g.err" && break
			sleep 0.05
		done
		[ -n "$stats" ] && sysctl -qw kernel.bpf_stats_enabled=1
		loop_ns >> "$dir/with"
		if [ -n "$stats" ]; then
			sysctl -qw kernel.bpf_stats_enabled="$old_stats"
			# its programs: those using its map "procs" (bpftool may
			# not know the programs' owners)
			maps=$(bpftool -j map show | jq -c '[.[] | select(.name == "procs") | .id]')
			bpftool -j prog show | jq -r --argjson m "$maps" '.[] |
				select(any(.map_ids[]?; . as $i | $m | index($i))) |
				"\(.name) \(.run_cnt // 0) \(.run_time_ns // 0)"' >> "$dir/stats"
		fi
		kill -INT "$pid"
		wait "$pid"
		# every process of the loop must be there: N nodes named "true"
		jq -r -s '"\([.[] | select(.type == "node" and .comm == "true" and .exit_code == 0)] | length)/\(.[-1].processes_traced) lost \(.[-1].lost_events)"' \
			"$dir/g.json" >> "$dir/recs"
	done
	b=$(median < "$dir/base")
	w=$(median < "$dir/with")
	awk -v m="$mode" -v n="$N" -v b="$b" -v w="$w" -v reps="$REPS" 'BEGIN {
		printf "%s: %d x (fork + exec + exit), median of %d: %.1f us alone, %.1f us traced: +%.2f us (%+.1f%%) per process\n",
			m, n, reps, b / n / 1e3, w / n / 1e3, (w - b) / n / 1e3, 100 * (w - b) / b }'
	echo "  loop processes seen/all processes recorded, per run: $(tr '\n' ';' < "$dir/recs")"
	echo "  alone (ns): $(tr '\n' ' ' < "$dir/base")"
	echo "  traced (ns): $(tr '\n' ' ' < "$dir/with")"
	# per program over all runs: events and ns per event (the loop's and
	# everything else the host ran meanwhile)
	[ -s "$dir/stats" ] && awk '{ c[$1] += $2; t[$1] += $3 }
		END { for (p in c) printf "  %s: %d runs, %.0f ns per run (bpf_stats)\n", p, c[p], c[p] ? t[p] / c[p] : 0 }' \
		"$dir/stats" | sort
done
