#!/usr/bin/env bash
# scripts/bench/numaplace.sh: numaplace beside its nearest peer, in one run,
# as ratios.
#
# No packaged tool shows CPU time per NUMA node per process from the
# scheduler; the peer is bpftrace with scripts/bench/numaplace-like.bt (the
# same sched_switch accounting per process and CPU, which a node sum is made
# of), and schedlat, the sibling on the same hook. The workload is the
# scheduler's worst case for both: perf bench sched pipe, a context switch
# per operation. Writes the numaplace section of docs/PERFORMANCE.md. Run
# as root:
#
#   scripts/bench/numaplace.sh           # REPS=5
#
# Environment: REPS (repetitions, default 5), LOOPS (perf bench sched pipe
# loops; default: calibrated for about 1.5 s a bare run), PIN_CPU (CPU both
# workload processes are pinned to, default 0; empty: unpinned), OUT (default
# docs/PERFORMANCE.md), NUMAPLACE (default build/numaplace), SCHEDLAT
# (default build/schedlat), BPFTRACE (default bpftrace).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-5}
LOOPS=${LOOPS:-}
PIN_CPU=${PIN_CPU-0}
NUMAPLACE=${NUMAPLACE:-$BENCH_ROOT/build/numaplace}
SCHEDLAT=${SCHEDLAT:-$BENCH_ROOT/build/schedlat}
BT=$BENCH_ROOT/scripts/bench/numaplace-like.bt

bench_init
need perf linux-perf
bench_needs --time "$NUMAPLACE" "$SCHEDLAT"

N=$(rel "$NUMAPLACE")
S=$(rel "$SCHEDLAT")
B=$(rel "$BT")

bench_pin
if [ -z "$LOOPS" ]; then
	LOOPS=50000
	ops=$(pipe_ops)
	[[ $ops =~ ^[0-9]+$ ]] || bench_die "perf bench sched pipe gave no ops/sec"
	LOOPS=$(( (ops * 3 / 2 + 9999) / 10000 * 10000 ))
fi
WORKLOAD="${PIN[*]}${PIN_CPU:+ }perf bench sched pipe -l $LOOPS"

NMARK="Ctrl-C to end."	# numaplace and schedlat, stderr, after attach
BMARK="Attaching"	# bpftrace, stdout

ovh_mode numaplace "numaplace (table)" "$N -C >/dev/null" \
	stderr "$NMARK" stdbuf -oL "$NUMAPLACE" -C
ovh_mode numaplace-json "numaplace (--json)" "$N -j >/dev/null" \
	stderr "$NMARK" stdbuf -oL "$NUMAPLACE" -j
ovh_mode schedlat "schedlat (table)" "$S -C >/dev/null" \
	stderr "$NMARK" stdbuf -oL "$SCHEDLAT" -C
ovh_mode bpftrace "bpftrace numaplace-like.bt" "bpftrace $B 1000 0 >/dev/null" \
	stdout "$BMARK" stdbuf -oL "$BPFTRACE" "$BT" 1000 0

bench_mode l-numaplace-1s stderr "$NMARK" stdbuf -oL "$NUMAPLACE" -C -n 1 -i 1s
bench_mode l-bpftrace-1s  stdout "$BMARK" stdbuf -oL "$BPFTRACE" "$BT" 1000 1
LIFE_MODES=(l-numaplace-1s l-bpftrace-1s)
declare -A LIFE_TOOL=([l-numaplace-1s]=numaplace [l-bpftrace-1s]=bpftrace)
declare -A LIFE_CMD=([l-numaplace-1s]="$N -C -n 1 -i 1s" [l-bpftrace-1s]="bpftrace $B 1000 1")

probe_mode=$("$NUMAPLACE" -C -n 1 -i 1ms 2>&1 >/dev/null | sed -n 's/.*placement (\(.*\))\.\.\..*/\1/p')
bench_log "numaplace attaches with: ${probe_mode:-?}; REPS=$REPS LOOPS=$LOOPS"

run_modes "$REPS" pipe_ops "$LOOPS" "switch" event

mkdir -p "$BENCH_TMP/rss"
for ((r = 1; r <= REPS; r++)); do
	peak_rss_kib "$NUMAPLACE" -C -n 1 -i 1s >>"$BENCH_TMP/rss/numaplace"
	peak_rss_kib "$BPFTRACE" "$BT" 1000 1 >>"$BENCH_TMP/rss/bpftrace"
done
rss_mib() { kib_to_mib "$(median <"$BENCH_TMP/rss/$1")"; }

bench_report numaplace
{
	echo "Peers: bpftrace $(bpftrace_version) with [\`scripts/bench/numaplace-like.bt\`](../scripts/bench/numaplace-like.bt)"
	echo "(on-CPU time per process and CPU from the classic \`sched_switch\` tracepoint: what numaplace"
	echo "sums per node; no packaged tool reports NUMA placement from the scheduler), and schedlat, the"
	echo "sibling on the same hook. numaplace's other hooks (NUMA balancing, page migration) do not"
	echo "fire in this workload; its per-interval work (numa_maps and fd scans of the rows shown, a"
	echo "flush program run on each CPU) is in the ratio."
	echo
	echo "Machine: $BENCH_NPROC CPUs ($BENCH_CPU), kernel $BENCH_KERNEL, $BENCH_OS; run $BENCH_DATE,"
	echo "load average at start $BENCH_LOAD; tracing BPF programs of others loaded: $BENCH_FOREIGN_START at"
	echo "start, $foreign_end at the end. numaplace attached with \`${probe_mode:-?}\`."
	echo "Medians of REPS=$REPS; other work on the machine during the run adds noise (see the min-max)."
	md_h3 "Overhead: \`$WORKLOAD\`"
	echo "Pairs, interleaved: for each repetition and each tool, the workload bare, then with the tool"
	echo "attached; ratio = ops/sec with the tool / ops/sec of its bare run (1.000: no cost)."
	echo
	md_ovh_table "bare ops/s" "with tool ops/s"
	md_h3 "BPF cost per event"
	echo "Run time of each tool's own BPF programs (\`kernel.bpf_stats_enabled=1\`) during one more"
	echo "workload run per repetition, per \`sched_switch\` run and per workload loop."
	echo
	if [ -n "$have_cost" ]; then
		md_header tool "sched_switch (ns/event)" "all programs (ns/loop)"
		for m in "${OVH_MODES[@]}"; do
			md_row "${OVH_LABEL[$m]}" "$(fmt "$(cost_median "$m" switch)" 0)" "$(fmt "$(cost_median "$m" perop)" 0)"
		done
	else
		echo "Not measured: bpftool is missing."
	fi
	md_h3 "Lifecycle and peak RSS"
	echo "One 1 s interval, then exit; *attached*: the ready line read; peak RSS: getrusage's ru_maxrss."
	echo
	md_header tool command "exec->attached (ms)" "exec->exit (ms)" "peak RSS (MiB)"
	for m in "${LIFE_MODES[@]}"; do
		md_row "${LIFE_TOOL[$m]}" "\`${LIFE_CMD[$m]}\`" "$(fmt "$(life_median_ms "$m" ready)" 1)" \
			"$(fmt "$(life_median_ms "$m" exit)" 1)" "$(rss_mib "${LIFE_TOOL[$m]}")"
	done
	md_h3 "Reproduce"
	echo "As root, after \`make\`: \`scripts/bench/numaplace.sh\` (REPS, LOOPS, PIN_CPU as in schedlat's)."
	echo "Needs \`perf\` (linux-perf), \`bpftrace\`, \`/usr/bin/time\` (time). It rewrites this section only."
} >>"$body"

md_section "$OUT" numaplace "$body"
bench_log "wrote the numaplace section of $(rel "$OUT")"
cat "$body"
