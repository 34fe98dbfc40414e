#!/usr/bin/env bash
# scripts/bench/schedlat.sh: schedlat beside its peers, in one run, as ratios.
#
# Peers: libbpf-tools runqlat (Debian package libbpf-tools) and bpftrace with
# scripts/bench/runqlat-like.bt (bpftrace's runqlat.bt needs kernel headers).
# Writes the schedlat section of docs/PERFORMANCE.md. Run as root:
#
#   scripts/bench/schedlat.sh            # REPS=5
#   REPS=3 LOOPS=100000 scripts/bench/schedlat.sh
#
# Environment: REPS (repetitions, default 5), LOOPS (perf bench sched pipe
# loops; default: calibrated for about 1.5 s a bare run), PIN_CPU (CPU both workload
# processes are pinned to, default 0; empty: unpinned), LOAD_SECS (length of the
# RSS-under-load runs, default 5), OUT (default docs/PERFORMANCE.md),
# SCHEDLAT (default build/schedlat), RUNQLAT (default: runqlat on PATH or
# /usr/sbin/runqlat), BPFTRACE (default bpftrace).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-5}
LOOPS=${LOOPS:-}
PIN_CPU=${PIN_CPU-0}
LOAD_SECS=${LOAD_SECS:-5}
SCHEDLAT=${SCHEDLAT:-$BENCH_ROOT/build/schedlat}
RUNQLAT=${RUNQLAT:-$(command -v runqlat || echo /usr/sbin/runqlat)}
BT=$BENCH_ROOT/scripts/bench/runqlat-like.bt

bench_init
need perf linux-perf
[ -x "$RUNQLAT" ] || bench_die "runqlat not found (apt-get install libbpf-tools)"
bench_needs --time "$SCHEDLAT"

# paths as the doc shows them
S=$(rel "$SCHEDLAT")
B=$(rel "$BT")

# ---- the workload: one figure, ops/sec ----
# Pinned to one CPU by default: every operation is then a wakeup and a
# context switch on that CPU (the most sched events per op), and the
# figure is stable; unpinned on a 2-vCPU VM it swings between cross-CPU
# wakeups (IPI-bound, ~5x slower) and same-CPU runs from one run to the next.
bench_pin
if [ -z "$LOOPS" ]; then
	LOOPS=50000
	ops=$(pipe_ops)
	[[ $ops =~ ^[0-9]+$ ]] || bench_die "perf bench sched pipe gave no ops/sec"
	LOOPS=$(( (ops * 3 / 2 + 9999) / 10000 * 10000 ))
fi
WORKLOAD="${PIN[*]}${PIN_CPU:+ }perf bench sched pipe -l $LOOPS"

# ---- modes ----
# Every tool runs under `stdbuf -oL` so that a marker on stdout (runqlat's)
# is seen when it is printed, and all three pay the same extra exec.
SMARK="Ctrl-C to end."			# schedlat, stderr, after attach
RMARK="Tracing run queue latency"	# runqlat, stdout, after attach
BMARK="Attaching"			# bpftrace, stdout (not stderr), "Attaching N probes..."

# overhead: tools left running, output to /dev/null, stopped with SIGINT
ovh_mode schedlat "schedlat (table)" "$S -C >/dev/null" \
	stderr "$SMARK" stdbuf -oL "$SCHEDLAT" -C
ovh_mode schedlat-json "schedlat (--json)" "$S -j >/dev/null" \
	stderr "$SMARK" stdbuf -oL "$SCHEDLAT" -j
ovh_mode runqlat "libbpf-tools runqlat" "runqlat 1 >/dev/null" \
	stdout "$RMARK" stdbuf -oL "$RUNQLAT" 1
ovh_mode bpftrace "bpftrace runqlat-like.bt" "bpftrace $B 1000 0 >/dev/null" \
	stdout "$BMARK" stdbuf -oL "$BPFTRACE" "$BT" 1000 0

# lifecycle: one interval, then exit by themselves
bench_mode l-schedlat-short stderr "$SMARK" stdbuf -oL "$SCHEDLAT" -C -n 1 -i 1ms
bench_mode l-runqlat-short  stdout "$RMARK" stdbuf -oL "$RUNQLAT" 0 1
bench_mode l-bpftrace-short stdout "$BMARK" stdbuf -oL "$BPFTRACE" "$BT" 1 1
bench_mode l-schedlat-1s    stderr "$SMARK" stdbuf -oL "$SCHEDLAT" -C -n 1 -i 1s
bench_mode l-runqlat-1s     stdout "$RMARK" stdbuf -oL "$RUNQLAT" 1 1
bench_mode l-bpftrace-1s    stdout "$BMARK" stdbuf -oL "$BPFTRACE" "$BT" 1000 1
LIFE_MODES=(l-schedlat-short l-runqlat-short l-bpftrace-short l-schedlat-1s l-runqlat-1s l-bpftrace-1s)
declare -A LIFE_TOOL=(
	[l-schedlat-short]=schedlat [l-runqlat-short]=runqlat [l-bpftrace-short]=bpftrace
	[l-schedlat-1s]=schedlat [l-runqlat-1s]=runqlat [l-bpftrace-1s]=bpftrace)
declare -A LIFE_CMD=(
	[l-schedlat-short]="$S -C -n 1 -i 1ms" [l-runqlat-short]="runqlat 0 1"
	[l-bpftrace-short]="bpftrace $B 1 1"
	[l-schedlat-1s]="$S -C -n 1 -i 1s" [l-runqlat-1s]="runqlat 1 1"
	[l-bpftrace-1s]="bpftrace $B 1000 1")
declare -A LIFE_IVAL_MS=(
	[l-schedlat-short]=1 [l-runqlat-short]=0 [l-bpftrace-short]=1
	[l-schedlat-1s]=1000 [l-runqlat-1s]=1000 [l-bpftrace-1s]=1000)

# ---- run ----
probe_mode=$("$SCHEDLAT" -C -n 1 -i 1ms 2>&1 >/dev/null | sed -n 's/.*latency (\(.*\))\.\.\..*/\1/p')
bench_log "schedlat attaches with: ${probe_mode:-?}; REPS=$REPS LOOPS=$LOOPS"

run_modes "$REPS" pipe_ops "$LOOPS" "switch wakeup" event

# peak RSS: the short runs (idle machine), REPS times each
mkdir -p "$BENCH_TMP/rss"
bench_log "peak RSS, short runs"
for ((r = 1; r <= REPS; r++)); do
	peak_rss_kib "$SCHEDLAT" -C -n 1 -i 1ms >>"$BENCH_TMP/rss/short-schedlat"
	peak_rss_kib "$RUNQLAT" 0 1 >>"$BENCH_TMP/rss/short-runqlat"
	peak_rss_kib "$BPFTRACE" "$BT" 1 1 >>"$BENCH_TMP/rss/short-bpftrace"
done

# peak RSS of LOAD_SECS runs while perf bench sched pipe runs
load_start() {
	set -m
	perf bench sched pipe -l 1000000000 >/dev/null 2>&1 &
	BENCH_LOAD_PID=$!
	set +m
}
load_stop() { kill -- "-$BENCH_LOAD_PID" 2>/dev/null; wait "$BENCH_LOAD_PID" 2>/dev/null; BENCH_LOAD_PID=; }
declare -A LOAD_CMD=(
	[schedlat]="$S -C -d ${LOAD_SECS}s" [schedlat-json]="$S -j -d ${LOAD_SECS}s"
	[runqlat]="runqlat 1 $LOAD_SECS" [bpftrace]="bpftrace $B 1000 $LOAD_SECS")
bench_log "peak RSS, ${LOAD_SECS} s runs under load"
for ((r = 1; r <= REPS; r++)); do
	load_start
	peak_rss_kib "$SCHEDLAT" -C -d "${LOAD_SECS}s" >>"$BENCH_TMP/rss/load-schedlat"
	peak_rss_kib "$SCHEDLAT" -j -d "${LOAD_SECS}s" >>"$BENCH_TMP/rss/load-schedlat-json"
	peak_rss_kib "$RUNQLAT" 1 "$LOAD_SECS" >>"$BENCH_TMP/rss/load-runqlat"
	peak_rss_kib "$BPFTRACE" "$BT" 1000 "$LOAD_SECS" >>"$BENCH_TMP/rss/load-bpftrace"
	load_stop
	bench_log "rss rep $r/$REPS done"
done
rss_mib() { kib_to_mib "$(median <"$BENCH_TMP/rss/$1")"; }

# ---- report ----
declare -A NET
rq_ratio=$(ovh_median runqlat ratio)
sl_ratio=$(ovh_median schedlat ratio)
sj_ratio=$(ovh_median schedlat-json ratio)
bench_report schedlat
{
	echo "Peers: libbpf-tools \`runqlat\` (Debian package \`libbpf-tools\`) and bpftrace $(bpftrace_version)"
	echo "with [\`scripts/bench/runqlat-like.bt\`](../scripts/bench/runqlat-like.bt), the same logic as"
	echo "bpftrace's \`runqlat.bt\` on the classic \`sched_wakeup\`, \`sched_wakeup_new\` and \`sched_switch\`"
	echo "tracepoints (the packaged \`runqlat.bt\` includes kernel headers that are not installed here)."
	echo
	echo "Machine: $BENCH_NPROC CPUs ($BENCH_CPU), kernel $BENCH_KERNEL, $BENCH_OS; run $BENCH_DATE,"
	echo "load average at start $BENCH_LOAD; tracing BPF programs of others loaded: $BENCH_FOREIGN_START at"
	echo "start, $foreign_end at the end. schedlat attached with \`${probe_mode:-?}\`."
	echo "Medians of REPS=$REPS; other work on the machine during the run adds noise (see the min-max)."
	md_h3 "Overhead: \`$WORKLOAD\`"
	echo "Pairs, interleaved: for each repetition and each tool, the workload bare, then with the tool"
	echo "attached; ratio = ops/sec with the tool / ops/sec of its bare run (1.000: no cost)."
	echo
	md_ovh_table "bare ops/s" "with tool ops/s"
	md_h3 "BPF cost per event"
	echo "The run time of each tool's own BPF programs as the kernel counts it with"
	echo "\`kernel.bpf_stats_enabled=1\` during one more workload run per repetition (separate runs: the"
	echo "stats cost a little themselves). It does not swing with the bare throughput as the ratio"
	echo "does, so it is the steadier comparison on a shared machine. ns/loop: all the tool's"
	echo "programs' run time divided by the workload's loops. For bpftrace's classic tracepoints the kernel"
	echo "also fills a trace record before each run, which this does not count (the ratio does)."
	echo
	if [ -n "$have_cost" ]; then
		md_header tool "sched_switch (ns/event)" "sched_wakeup* (ns/event)" "all programs (ns/loop)" "switch vs runqlat"
		rq_sw=$(cost_median runqlat switch)
		for m in "${OVH_MODES[@]}"; do
			sw=$(cost_median "$m" switch)
			md_row "${OVH_LABEL[$m]}" "$(fmt "$sw" 0)" "$(fmt "$(cost_median "$m" wakeup)" 0)" \
				"$(fmt "$(cost_median "$m" perop)" 0)" "$(ratio "$sw" "$rq_sw" 2)"
		done
	else
		echo "Not measured: bpftool is missing."
	fi
	md_h3 "Lifecycle: exec -> attached -> exit"
	echo "One interval, then the tool exits by itself. *attached*: when the ready line is read"
	echo "(schedlat: \"Tracing run-queue latency ... Ctrl-C to end.\" on stderr, printed after attach;"
	echo "runqlat: \"Tracing run queue latency...\" on stdout; bpftrace: \"Attaching N probes...\" on"
	echo "stdout). *exit*: when wait() returns. *exit - interval*: exec -> exit less the nominal"
	echo "interval, i.e. load + attach + report + detach + exit. runqlat takes whole seconds only"
	echo "(\`runqlat 0.1 1\` parses as \`0 1\`), so its short run is \`runqlat 0 1\`. Every command runs"
	echo "under \`stdbuf -oL\` (for runqlat's stdout marker), so each includes the same extra exec."
	echo
	md_header tool command "exec->attached (ms)" "exec->exit (ms)" "exit - interval (ms)" "vs runqlat"
	for m in "${LIFE_MODES[@]}"; do
		rdy=$(life_median_ms "$m" ready)
		ext=$(life_median_ms "$m" exit)
		net=$(awk -v e="$ext" -v i="${LIFE_IVAL_MS[$m]}" 'BEGIN { print e - i }')
		peer=l-runqlat-${m##*-}
		pnet=$(awk -v e="$(life_median_ms "$peer" exit)" -v i="${LIFE_IVAL_MS[$peer]}" 'BEGIN { print e - i }')
		NET[$m]=$net
		md_row "${LIFE_TOOL[$m]}" "\`${LIFE_CMD[$m]}\`" "$(fmt "$rdy" 1)" "$(fmt "$ext" 1)" \
			"$(fmt "$net" 1)" "$(ratio "$net" "$pnet" 2)"
	done
	md_h3 "Peak RSS"
	echo "getrusage's ru_maxrss of the tool process, as \`/usr/bin/time -f %M\` reports it (no stdbuf);"
	echo "\"under load\": a ${LOAD_SECS} s run while \`perf bench sched pipe\` runs."
	echo
	md_header tool run command "peak RSS (MiB)"
	md_row schedlat short "\`${LIFE_CMD[l-schedlat-short]}\`" "$(rss_mib short-schedlat)"
	md_row runqlat short "\`${LIFE_CMD[l-runqlat-short]}\`" "$(rss_mib short-runqlat)"
	md_row bpftrace short "\`${LIFE_CMD[l-bpftrace-short]}\`" "$(rss_mib short-bpftrace)"
	md_row schedlat "${LOAD_SECS} s, under load" "\`${LOAD_CMD[schedlat]}\`" "$(rss_mib load-schedlat)"
	md_row "schedlat --json" "${LOAD_SECS} s, under load" "\`${LOAD_CMD[schedlat-json]}\`" "$(rss_mib load-schedlat-json)"
	md_row runqlat "${LOAD_SECS} s, under load" "\`${LOAD_CMD[runqlat]}\`" "$(rss_mib load-runqlat)"
	md_row bpftrace "${LOAD_SECS} s, under load" "\`${LOAD_CMD[bpftrace]}\`" "$(rss_mib load-bpftrace)"
	md_h3 "Targets"
	met() { if "$@"; then echo "**met**"; else echo "**not met**"; fi; }
	ovh_target() { cmp_le "$rq_ratio" "$sl_ratio" && cmp_le "$rq_ratio" "$sj_ratio"; }
	echo "- Overhead no worse than runqlat's: schedlat ratio $(fmt "$sl_ratio" 3) (table),"
	echo "  $(fmt "$sj_ratio" 3) (--json) vs runqlat $(fmt "$rq_ratio" 3):" \
		"$(met ovh_target)."
	[ -n "$have_cost" ] && echo "  BPF run time per sched_switch: schedlat $(fmt "$(cost_median schedlat switch)" 0) ns" \
		"vs runqlat $(fmt "$(cost_median runqlat switch)" 0) ns."
	echo "- Lifecycle at most half of runqlat's (exit - interval, short runs): schedlat" \
		"$(fmt "${NET[l-schedlat-short]}" 1) ms vs runqlat $(fmt "${NET[l-runqlat-short]}" 1) ms:" \
		"$(met cmp_le "${NET[l-schedlat-short]}" "$(awk -v r="${NET[l-runqlat-short]}" 'BEGIN { print r / 2 }')")"
	echo "  (1 s runs: $(fmt "${NET[l-schedlat-1s]}" 1) ms vs $(fmt "${NET[l-runqlat-1s]}" 1) ms)."
	smax=$(cat "$BENCH_TMP"/rss/short-schedlat "$BENCH_TMP"/rss/load-schedlat "$BENCH_TMP"/rss/load-schedlat-json | sort -g | tail -n 1)
	echo "- Peak RSS under 8 MiB: schedlat at most $(kib_to_mib "$smax") MiB over all its runs:" \
		"$(met awk -v k="$smax" 'BEGIN { exit !(k < 8192) }')."
	md_h3 "Reproduce"
	echo "As root, after \`make\`: \`scripts/bench/schedlat.sh\` (4-5 minutes on 2 CPUs; REPS, LOOPS, PIN_CPU"
	echo "and LOAD_SECS change the repetitions, the workload length (default: calibrated to about 1.5 s bare),"
	echo "the CPU the workload is pinned to (empty: unpinned) and the RSS run length). It rewrites"
	echo "this section only. Needs \`perf\` (linux-perf), \`runqlat\` (libbpf-tools), \`bpftrace\`,"
	echo "\`/usr/bin/time\` (time). Exact commands: the tables above; the workload is"
	echo "\`$WORKLOAD\` (two processes${PIN_CPU:+, both on CPU $PIN_CPU}) and ops/sec is read from its output."
} >>"$body"

md_section "$OUT" schedlat "$body"
bench_log "wrote the schedlat section of $(rel "$OUT")"
cat "$body"
