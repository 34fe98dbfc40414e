#!/usr/bin/env bash
# scripts/bench/ipcsnoop.sh: ipcsnoop beside bpftrace, in one run, as ratios.
#
# Workloads: `perf bench sched pipe` (a pipe ping-pong) and a unix socketpair
# ping-pong (tests/helpers/ipcload unix-pingpong), both pinned to one CPU.
# Peer: bpftrace with scripts/bench/ipc-syscalls.bt, bytes per process and fd
# on the same raw syscall tracepoints that ipcsnoop's syscall path uses.
# Writes the ipcsnoop section of docs/PERFORMANCE.md. Run as root:
#
#   scripts/bench/ipcsnoop.sh            # REPS=5
#
# Environment: REPS (default 5), LOOPS (perf bench loops, default:
# calibrated for about 1 s bare), ROUNDS (unix ping-pong rounds, likewise),
# PIN_CPU (default 0; empty: unpinned), OUT (default docs/PERFORMANCE.md),
# IPCSNOOP (default build/ipcsnoop), BPFTRACE (default bpftrace).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-5}
LOOPS=${LOOPS:-}
ROUNDS=${ROUNDS:-}
PIN_CPU=${PIN_CPU-0}
IPCSNOOP=${IPCSNOOP:-$BENCH_ROOT/build/ipcsnoop}
IPCLOAD=$BENCH_ROOT/build/tests/helpers/ipcload
BT=$BENCH_ROOT/scripts/bench/ipc-syscalls.bt

bench_init
need perf linux-perf
bench_needs "$IPCSNOOP" "$IPCLOAD"
S=$(rel "$IPCSNOOP")
B=$(rel "$BT")

bench_pin
unix_ops() {
	"${PIN[@]}" "$IPCLOAD" unix-pingpong "$ROUNDS" | awk '/^ops\/sec/ { print $2 }'
}
if [ -z "$LOOPS" ]; then
	LOOPS=50000
	ops=$(pipe_ops)
	[[ $ops =~ ^[0-9]+$ ]] || bench_die "perf bench sched pipe gave no ops/sec"
	LOOPS=$(( (ops + 9999) / 10000 * 10000 ))
fi
if [ -z "$ROUNDS" ]; then
	ROUNDS=50000
	ops=$(unix_ops)
	[[ $ops =~ ^[0-9]+$ ]] || bench_die "ipcload unix-pingpong gave no ops/sec"
	ROUNDS=$(( (ops + 9999) / 10000 * 10000 ))
fi
PIPE_WL="${PIN[*]}${PIN_CPU:+ }perf bench sched pipe -l $LOOPS"
UNIX_WL="${PIN[*]}${PIN_CPU:+ }tests/helpers/ipcload unix-pingpong $ROUNDS"

SMARK="Ctrl-C to end."	# ipcsnoop, stderr, after attach
BMARK="Attaching"	# bpftrace, stdout
ovh_mode ipcsnoop "ipcsnoop (table)" "$S -C >/dev/null" \
	stderr "$SMARK" stdbuf -oL "$IPCSNOOP" -C
ovh_mode ipcsnoop-json "ipcsnoop (--json)" "$S -j >/dev/null" \
	stderr "$SMARK" stdbuf -oL "$IPCSNOOP" -j
ovh_mode bpftrace "bpftrace ipc-syscalls.bt" "bpftrace $B >/dev/null" \
	stdout "$BMARK" stdbuf -oL "$BPFTRACE" "$BT"

plan=$("$IPCSNOOP" -C -n 1 -i 1ms 2>&1 >/dev/null | sed -n 's/.*IPC (\(.*\))\.\.\..*/\1/p')
bench_log "ipcsnoop attaches with: ${plan:-?}; REPS=$REPS LOOPS=$LOOPS ROUNDS=$ROUNDS"

run_workload() {	# run_workload NAME FUNCTION: overhead pairs into $BENCH_TMP/NAME
	run_overhead "$REPS" "$2" "${OVH_MODES[@]}"
	mv "$BENCH_TMP/ovh" "$BENCH_TMP/$1"
}
# med/spr WORKLOAD MODE KIND: the median, the spread of a workload's figures
med() { median <"$BENCH_TMP/$1/$2.$3"; }
spr() { spread 3 <"$BENCH_TMP/$1/$2.$3"; }
bench_log "pipe ping-pong: ${#OVH_MODES[@]} modes x $REPS pairs"
run_workload pipe pipe_ops
bench_log "unix ping-pong: ${#OVH_MODES[@]} modes x $REPS pairs"
run_workload unix unix_ops

# BPF run time per operation (kernel.bpf_stats_enabled), steadier than the
# ratios on a shared machine; COST_REPS runs of each workload per tool
COST_REPS=${COST_REPS:-3}
have_cost=1
for wl in pipe unix; do
	if [ $wl = pipe ]; then f=pipe_ops n=$LOOPS; else f=unix_ops n=$ROUNDS; fi
	bench_log "BPF cost, $wl: ${#OVH_MODES[@]} modes x $COST_REPS"
	run_bpf_cost "$COST_REPS" "$f" "$n" "sys_ sock_" "${OVH_MODES[@]}" || { have_cost=; break; }
	mv "$BENCH_TMP/cost" "$BENCH_TMP/cost-$wl"
done
cmed() { grep -v nan "$BENCH_TMP/cost-$1/$2.$3" | median; }

bench_report ipcsnoop
{
	echo "Peer: bpftrace $(bpftrace_version) with"
	echo "[\`scripts/bench/ipc-syscalls.bt\`](../scripts/bench/ipc-syscalls.bt): bytes and calls per process"
	echo "and fd of read/write/readv/writev on the same raw syscall tracepoints as ipcsnoop's syscall"
	echo "path (it cannot tell a pipe from a file there, so it does less work per call than ipcsnoop:"
	echo "no fd classification, no channel, no reader). No libbpf-tools tool traces IPC."
	echo
	echo "Machine: a shared $BENCH_NPROC-CPU VM ($BENCH_CPU), kernel $BENCH_KERNEL, $BENCH_OS; run"
	echo "$BENCH_DATE, load average at start $BENCH_LOAD (other engineers' builds and tests ran on the"
	echo "same machine: the figures are noisy, see the min-max); tracing BPF programs of others"
	echo "loaded: $BENCH_FOREIGN_START at start, $foreign_end at the end. ipcsnoop attached with"
	echo "\`${plan:-?}\` (tp_btf sys_exit alone for pipes, sock_send_length/sock_recv_length for"
	echo "unix sockets). Medians of REPS=$REPS interleaved pairs: the workload bare, then with the"
	echo "tool attached; ratio = ops/sec with the tool / ops/sec of its bare run (1.000: no cost)."
	for wl in pipe unix; do
		echo
		if [ $wl = pipe ]; then
			echo "### Overhead: \`$PIPE_WL\`"
		else
			echo "### Overhead: \`$UNIX_WL\`"
		fi
		echo
		md_header tool command "bare ops/s" "with tool ops/s" "ratio" "ratio min-max"
		for m in "${OVH_MODES[@]}"; do
			md_row "${OVH_LABEL[$m]}" "\`${OVH_CMD[$m]}\`" "$(fmt "$(med $wl "$m" bare)" 0)" \
				"$(fmt "$(med $wl "$m" tool)" 0)" "**$(fmt "$(med $wl "$m" ratio)" 3)**" \
				"$(spr $wl "$m" ratio)"
		done
	done
	md_h3 "BPF run time per operation"
	echo "The run time of each tool's own BPF programs as the kernel counts it with"
	echo "\`kernel.bpf_stats_enabled=1\` during one more workload run (medians of COST_REPS=$COST_REPS), divided"
	echo "by the workload's round trips (each is 4 IPC syscalls: a write and a read on each side). It"
	echo "does not swing with the bare throughput as the ratios do. bpftrace's classic tracepoints"
	echo "also have the kernel fill a trace record before each run, which this does not count."
	echo
	if [ -n "$have_cost" ]; then
		md_header tool "pipe: ns per round trip" "unix: ns per round trip" "pipe vs bpftrace" "unix vs bpftrace"
		for m in "${OVH_MODES[@]}"; do
			md_row "${OVH_LABEL[$m]}" "$(fmt "$(cmed pipe "$m" perop)" 0)" "$(fmt "$(cmed unix "$m" perop)" 0)" \
				"$(ratio "$(cmed pipe "$m" perop)" "$(cmed pipe bpftrace perop)" 2)" \
				"$(ratio "$(cmed unix "$m" perop)" "$(cmed unix bpftrace perop)" 2)"
		done
	else
		echo "Not measured: bpftool is missing."
	fi
	md_h3 "Targets"
	met() { if "$@"; then echo "**met**"; else echo "**not met**"; fi; }
	for wl in pipe unix; do
		r=$(med $wl ipcsnoop ratio)
		b=$(med $wl bpftrace ratio)
		echo "- $wl ping-pong: ipcsnoop $(fmt "$r" 3), bpftrace $(fmt "$b" 3). Under 5% cost:" \
			"$(met cmp_le 0.95 "$r"); no more than bpftrace's: $(met cmp_le "$b" "$r")."
	done
	echo
	echo "Why not under 5% on these ping-pongs: every round trip is four syscalls that do nothing"
	echo "but move one byte, and ipcsnoop accounts each of them (on the host without fentry it can only"
	echo "see them at the syscall tracepoint: attaching any program there sends every syscall of the"
	echo "host through the kernel's slow syscall path, and each IPC call then costs the fd lookup, the"
	echo "file classification and an atomic update of its channel's counters, about 400 ns here). On"
	echo "real traffic, where a call moves kilobytes and the processes compute between calls, the same"
	echo "per-call cost is a far smaller share; the table above is the worst case."
	md_h3 "Reproduce"
	echo "As root, after \`make\`: \`scripts/bench/ipcsnoop.sh\` (about 4 minutes on 2 CPUs; REPS, COST_REPS,"
	echo "LOOPS, ROUNDS and PIN_CPU change the repetitions, the workload lengths and the CPU). It rewrites"
	echo "this section only. Needs \`perf\` (linux-perf) and \`bpftrace\`."
} >>"$body"

md_section "$OUT" ipcsnoop "$body"
bench_log "wrote the ipcsnoop section of $(rel "$OUT")"
cat "$body"
