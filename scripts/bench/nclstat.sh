#!/usr/bin/env bash
# scripts/bench/nclstat.sh: nclstat beside bpftrace, in one run, per call.
#
# Workload: `ncclrank bench CALLS`, a loop of ncclAllReduce calls into the
# test double of libnccl.so.2 (tests/fixtures/libnccl.c), which returns at
# once: what is left is the cost of the probes. Peer: bpftrace counting the
# same calls with a uprobe (count only), and with a uprobe and a uretprobe
# (what nclstat needs for rc, latency and hangs). Writes the nclstat section
# of docs/PERFORMANCE.md. Run as root:
#
#   scripts/bench/nclstat.sh            # REPS=5
#
# Environment: REPS (default 5), CALLS (calls per workload run, default
# 100000), OUT (default docs/PERFORMANCE.md), NCLSTAT (default
# build/nclstat), BUILD (default build), BPFTRACE (default bpftrace).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-5}
CALLS=${CALLS:-100000}
BUILD=${BUILD:-$BENCH_ROOT/build}
NCLSTAT=${NCLSTAT:-$BUILD/nclstat}
NCCL_DIR=$BUILD/tests/nccl
DOUBLE=$NCCL_DIR/libnccl.so.2
RANKS=$NCCL_DIR/ncclrank

bench_init
[ -x "$RANKS" ] && [ -e "$DOUBLE" ] || bench_die "$RANKS or $DOUBLE not built (make)"
bench_needs --time "$NCLSTAT"

N=$(rel "$NCLSTAT")
D=$(rel "$DOUBLE")
R=$(rel "$RANKS")

# ---- the workload: calls per second ----
calls_rate() {
	LD_LIBRARY_PATH=$NCCL_DIR "$RANKS" bench "$CALLS" | awk '/^calls_per_sec/ { print $2 }'
}
WORKLOAD="LD_LIBRARY_PATH=$(rel "$NCCL_DIR") $R bench $CALLS"

# ---- modes ----
NMARK="Ctrl-C to end."	# nclstat, stderr, after attach
BMARK="Attaching"	# bpftrace, stdout
BT_ENTRY="uprobe:$DOUBLE:ncclAllReduce { @calls = count(); }"
BT_BOTH="$BT_ENTRY uretprobe:$DOUBLE:ncclAllReduce { @rets = count(); }"
ovh_mode nclstat "nclstat (table)" "$N --lib $D -C" \
	stderr "$NMARK" stdbuf -oL "$NCLSTAT" --lib "$DOUBLE" -C
ovh_mode nclstat-json "nclstat (--json)" "$N --lib $D -j" \
	stderr "$NMARK" stdbuf -oL "$NCLSTAT" --lib "$DOUBLE" -j
ovh_mode nclstat-noret "nclstat --no-return" "$N --lib $D -C --no-return" \
	stderr "$NMARK" stdbuf -oL "$NCLSTAT" --lib "$DOUBLE" -C --no-return
ovh_mode bt-entry "bpftrace uprobe count" "bpftrace -e 'uprobe:$D:ncclAllReduce { @calls = count(); }'" \
	stdout "$BMARK" stdbuf -oL "$BPFTRACE" -e "$BT_ENTRY"
ovh_mode bt-both "bpftrace uprobe + uretprobe count" \
	"bpftrace -e '... uprobe ... uretprobe:$D:ncclAllReduce { @rets = count(); }'" \
	stdout "$BMARK" stdbuf -oL "$BPFTRACE" -e "$BT_BOTH"
declare -A PROBES=(
	[nclstat]="entry + return" [nclstat-json]="entry + return" [nclstat-noret]="entry"
	[bt-entry]="entry" [bt-both]="entry + return")

# lifecycle: exec to attached, and to exit after one 100 ms interval
bench_mode l-nclstat  stderr "$NMARK" stdbuf -oL "$NCLSTAT" --lib "$DOUBLE" -C -n 1 -i 100ms
bench_mode l-bpftrace stdout "$BMARK" stdbuf -oL "$BPFTRACE" -e "$BT_BOTH interval:ms:100 { exit(); }"

# wait_probed: bpftrace prints its "Attaching" line before it attaches
# (here a uprobe takes seconds): wait until a short loop of calls is
# slowed by probes, so that the measured run is the probed one
wait_probed() {
	local i r
	for ((i = 0; i < 300; i++)); do
		r=$(LD_LIBRARY_PATH=$NCCL_DIR "$RANKS" bench 2000 | awk '/^calls_per_sec/ { print $2 }')
		[ -n "$r" ] && [ "$r" -lt 5000000 ] && return 0
		sleep 0.1
	done
	bench_die "the probes never slowed the calls"
}

# stop_mode: SIGINT, and SIGTERM if it is still there after 10 s (a
# bpftrace interrupted while it attaches may miss the SIGINT)
stop_mode() {
	local i
	kill -INT "$BENCH_PID" 2>/dev/null
	for ((i = 0; i < 100; i++)); do
		kill -0 "$BENCH_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$BENCH_PID" 2>/dev/null
	bench_wait || true
}

# run_overhead and run_bpf_cost of lib.sh: wait_probed between start and
# workload, stop_mode to end a mode
BENCH_ARMED=wait_probed
BENCH_STOP=stop_mode
BENCH_RATIO_DECIMALS=6
BENCH_UNIT=calls/s

# ---- run ----
bench_log "REPS=$REPS CALLS=$CALLS"
LIFE_MODES=(l-nclstat l-bpftrace)
run_modes "$REPS" calls_rate "$CALLS" "" call
mkdir -p "$BENCH_TMP/rss"
for ((r = 1; r <= REPS; r++)); do
	peak_rss_kib "$NCLSTAT" --lib "$DOUBLE" -C -n 1 -i 100ms >>"$BENCH_TMP/rss/nclstat"
	peak_rss_kib "$BPFTRACE" -e "$BT_BOTH interval:ms:100 { exit(); }" >>"$BENCH_TMP/rss/bpftrace"
done

# ---- per-call cost, per pair: 1/with - 1/bare, in microseconds ----
pair_cost() {
	paste "$BENCH_TMP/ovh/$1.bare" "$BENCH_TMP/ovh/$1.tool" |
		awk '$1 > 0 && $2 > 0 { printf "%.3f\n", 1e6 / $2 - 1e6 / $1 }'
}
for m in "${OVH_MODES[@]}"; do
	pair_cost "$m" >"$BENCH_TMP/ovh/$m.cost"
done
cost() { median <"$BENCH_TMP/ovh/$1.cost"; }
cost_spread() { spread 2 <"$BENCH_TMP/ovh/$1.cost"; }

# ---- report ----
bench_report nclstat
{
	echo "Peer: bpftrace $(bpftrace_version) counting the same calls"
	echo "(\`@calls = count()\` on a uprobe, and with a uretprobe as well). No other tool traces NCCL"
	echo "calls from outside the process (NCCL's own profiler and Inspector plugins must be loaded"
	echo "at start)."
	echo
	echo "Machine: $BENCH_NPROC CPUs ($BENCH_CPU), kernel $BENCH_KERNEL, $BENCH_OS; run $BENCH_DATE,"
	echo "load average at start $BENCH_LOAD; tracing BPF programs of others loaded: $BENCH_FOREIGN_START at"
	echo "start, $foreign_end at the end. **A shared 2-core VM**: other engineers' builds and tests ran at"
	echo "the same time, so single figures swing; medians of REPS=$REPS interleaved pairs, min-max shown."
	md_h3 "Cost per call: \`$WORKLOAD\`"
	echo "The workload is a loop of \`ncclAllReduce\` calls into the test double of libnccl.so.2, which"
	echo "returns at once (bare: tens of millions of calls/s), so the difference is the cost of the probes"
	echo "on each call: cost = 1/(calls/s with the tool) - 1/(bare calls/s), per pair. With a real"
	echo "NCCL, calls cost microseconds themselves and training loops make thousands, not millions,"
	echo "per second."
	echo
	md_header "tool" "command" "probes per call" "bare calls/s" "with tool calls/s" "cost per call (us)" "min-max (us)"
	for m in "${OVH_MODES[@]}"; do
		md_row "${OVH_LABEL[$m]}" "\`${OVH_CMD[$m]}\`" "${PROBES[$m]}" "$(fmt "$(ovh_median "$m" bare)" 0)" \
			"$(fmt "$(ovh_median "$m" tool)" 0)" "**$(fmt "$(cost "$m")" 2)**" "$(cost_spread "$m")"
	done
	echo
	echo "Ratios of the per-call costs (target: nclstat within 10% of bpftrace's count-only cost):"
	echo
	md_header "comparison" "ratio"
	md_row "nclstat (entry + return) / bpftrace uprobe + uretprobe count" "**$(ratio "$(cost nclstat)" "$(cost bt-both)")**"
	md_row "nclstat --no-return (entry) / bpftrace uprobe count" "**$(ratio "$(cost nclstat-noret)" "$(cost bt-entry)")**"
	md_row "nclstat (entry + return) / bpftrace uprobe count" "$(ratio "$(cost nclstat)" "$(cost bt-entry)")"
	echo
	if [ -n "$have_cost" ]; then
		echo "BPF run time per call (kernel.bpf_stats_enabled; the programs only, without the uprobe"
		echo "trap around them), median of REPS:"
		echo
		md_header "tool" "BPF ns per call"
		for m in "${OVH_MODES[@]}"; do
			md_row "${OVH_LABEL[$m]}" "$(fmt "$(cost_median "$m" perop)" 0)"
		done
		echo
	fi
	echo "### Start-up and memory"
	echo
	echo "exec to ready: nclstat's \"Ctrl-C to end.\" line comes after every probe is attached;"
	echo "bpftrace prints \"Attaching 1 probe...\" before it attaches (here a uprobe took seconds more),"
	echo "so exec to exit, after one 100 ms interval, is the figure to compare."
	echo
	md_header "tool" "command" "exec to ready line (ms)" "exec to exit (ms)" "peak RSS (MiB)"
	md_row "nclstat" "\`$N --lib $D -C -n 1 -i 100ms\`" "$(fmt "$(life_median_ms l-nclstat ready)" 0)" \
		"$(fmt "$(life_median_ms l-nclstat exit)" 0)" "$(kib_to_mib "$(median <"$BENCH_TMP/rss/nclstat")")"
	md_row "bpftrace" "\`bpftrace -e '... interval:ms:100 { exit(); }'\`" \
		"$(fmt "$(life_median_ms l-bpftrace ready)" 0)" "$(fmt "$(life_median_ms l-bpftrace exit)" 0)" \
		"$(kib_to_mib "$(median <"$BENCH_TMP/rss/bpftrace")")"
	echo
	echo "nclstat's exit waits for the kernel to detach its uprobes (38 links) one after the other: each"
	echo "detach waits for an RCU tasks-trace and an SRCU grace period, under a kernel mutex, so"
	echo "exiting takes seconds on a loaded VM (the output is complete before). Fewer links would"
	echo "need the kernel's uprobe_multi links (6.6+), which libbpf 1.1 cannot create."
	echo
	echo "Reproduce: \`scripts/bench/nclstat.sh\` (as root, after \`make\`)."
} >>"$body"
md_section "$OUT" nclstat "$body"
cat "$body"
