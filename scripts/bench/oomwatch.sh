#!/usr/bin/env bash
# scripts/bench/oomwatch.sh: oomwatch beside libbpf-tools oomkill, and the
# cost of polling a thousand memory cgroups every second (their kernel
# signals armed at the default settings), with and without Prometheus
# metrics.
#
# oomkill (Debian package libbpf-tools) hooks oom_kill_process with a kprobe
# only; where the kernel has no kprobes it cannot attach, and this records
# its own words for why, and how long it took to fail. Writes the oomwatch
# section of docs/PERFORMANCE.md. Run as root:
#
#   scripts/bench/oomwatch.sh           # REPS=5, 3 polling windows of 20 s
#
# Environment: REPS (lifecycle repetitions, default 5), STRACE_S (seconds
# of strace -c at the default settings, default 10), NCG (cgroups made
# for the polling runs, default 1000), WINDOWS (polling windows, default 3),
# WINDOW_S (seconds each, default 20), SETTLE_S (seconds before each window,
# default 40: the kernel signals of a thousand cgroups take some 30 s to
# register here), OUT (default docs/PERFORMANCE.md),
# OOMWATCH (default build/oomwatch), OOMKILL (default: oomkill on PATH or
# /usr/sbin/oomkill).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-5}
NCG=${NCG:-1000}
WINDOWS=${WINDOWS:-3}
WINDOW_S=${WINDOW_S:-20}
SETTLE_S=${SETTLE_S:-40}
OOMWATCH=${OOMWATCH:-$BENCH_ROOT/build/oomwatch}
OOMKILL=${OOMKILL:-$(command -v oomkill || echo /usr/sbin/oomkill)}
MEMCG=/sys/fs/cgroup/memory

bench_init
need_time
need_built "$OOMWATCH"
[ -e "$MEMCG/memory.limit_in_bytes" ] || bench_die "no v1 memory controller at $MEMCG"
cd "$BENCH_ROOT" || exit 1
O=$(rel "$OOMWATCH")
HZ=$(getconf CLK_TCK)

# ---- the cgroups: made here, removed on any exit ----
PARENT=$MEMCG/aiscope-bench-$$
remove_cgroups() {
	[ -d "$PARENT" ] || return 0
	local d
	for d in "$PARENT"/c*; do [ -d "$d" ] && rmdir "$d"; done
	rmdir "$PARENT"
}
trap 'remove_cgroups; bench_cleanup' EXIT

# ---- oomkill: can it attach here? ----
OK_STATUS=absent
OK_WHY="not installed (apt-get install libbpf-tools)"
if [ -x "$OOMKILL" ]; then
	out=$BENCH_TMP/oomkill.err
	timeout 10 "$OOMKILL" >/dev/null 2>"$out"
	rc=$?
	if [ "$rc" = 124 ]; then
		OK_STATUS=attached
		OK_WHY="attached (ran until the 10 s timeout)"
	else
		OK_STATUS="exit $rc"
		OK_WHY=$(grep -v '^$' "$out" | head -3 | tr '\n' ' ' | sed 's/ *$//; s/|/\\|/g')
	fi
	bench_log "oomkill: $OK_STATUS: $OK_WHY"
fi

# ---- lifecycle: exec -> attached -> exit ----
bench_mode ow-kills stderr "Tracing" "$OOMWATCH" --alloc-min 0 -d 100ms
bench_mode ow-all stderr "Tracing" "$OOMWATCH" -d 100ms
bench_mode ow-json stderr "Tracing" "$OOMWATCH" -j -d 100ms
declare -A LIFE_CMD=(
	[ow-kills]="$O --alloc-min 0 -d 100ms"
	[ow-all]="$O -d 100ms"
	[ow-json]="$O -j -d 100ms"
)
run_lifecycle "$REPS" ow-kills ow-all ow-json
# oomkill ends by itself here, failing: exec -> exit, no ready marker
mkdir -p "$BENCH_TMP/okl"
if [ -x "$OOMKILL" ] && [ "$OK_STATUS" != attached ]; then
	for ((r = 1; r <= REPS; r++)); do
		t0=$EPOCHREALTIME
		"$OOMKILL" >/dev/null 2>&1
		us_since "$t0" >>"$BENCH_TMP/okl/exit"
	done
fi

# ---- peak RSS ----
mkdir -p "$BENCH_TMP/rss"
for ((r = 1; r <= 3; r++)); do
	peak_rss_kib "$OOMWATCH" --alloc-min 0 -d 100ms >>"$BENCH_TMP/rss/kills"
	peak_rss_kib "$OOMWATCH" -d 100ms >>"$BENCH_TMP/rss/all"
	peak_rss_kib "$OOMWATCH" -d 100ms --buffer-size 256K >>"$BENCH_TMP/rss/small"
	[ -x "$OOMKILL" ] && peak_rss_kib "$OOMKILL" >>"$BENCH_TMP/rss/oomkill"
done

# ---- polling cost: NCG memory cgroups, each with a limit ----
mkdir "$PARENT" || bench_die "cannot make $PARENT"
for ((i = 1; i <= NCG; i++)); do
	mkdir "$PARENT/c$i" && echo 1G >"$PARENT/c$i/memory.limit_in_bytes"
done
bench_log "made $NCG memory cgroups under $PARENT"

# cpu_ticks PID: utime + stime, clock ticks
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# poll_window CMD...: runs it, waits SETTLE_S (start-up, first scan, and
# the kernel signals' registration: the kernel waits for an RCU grace
# period in each v1 threshold's), then measures its CPU time over WINDOW_S
# seconds; prints the share of one CPU (%). The share over the settling
# time (from 2 s on) goes to $BENCH_TMP/poll/settle.
poll_window() {
	local pid a b s0
	"$@" >/dev/null 2>"$BENCH_TMP/poll.err" &
	pid=$!
	sleep 2
	s0=$(cpu_ticks "$pid")
	sleep $((SETTLE_S - 2))
	a=$(cpu_ticks "$pid")
	awk -v a="$s0" -v b="$a" -v hz="$HZ" -v s="$((SETTLE_S - 2))" \
		'BEGIN { printf "%.3f\n", (b - a) / hz / s * 100 }' >"$BENCH_TMP/poll/settle"
	sleep "$WINDOW_S"
	b=$(cpu_ticks "$pid")
	kill -INT "$pid"
	wait "$pid"
	awk -v a="$a" -v b="$b" -v hz="$HZ" -v s="$WINDOW_S" 'BEGIN { printf "%.3f\n", (b - a) / hz / s * 100 }'
}

mkdir -p "$BENCH_TMP/poll"
for ((w = 1; w <= WINDOWS; w++)); do
	# the default settings: every cgroup's kernel signals armed (v1: two
	# usage thresholds and oom_control each), the allocation hooks on
	poll_window "$OOMWATCH" >>"$BENCH_TMP/poll/default"
	cat "$BENCH_TMP/poll/settle" >>"$BENCH_TMP/poll/default-settle"
	ARMED=$(sed -n 's/.*, \([0-9]*\) kernel signals armed.*/\1/p' "$BENCH_TMP/poll.err" | tail -1)
	poll_window "$OOMWATCH" --alloc-min 0 -i 1s -c "$PARENT" >>"$BENCH_TMP/poll/sub"
	poll_window "$OOMWATCH" --alloc-min 0 -i 1s >>"$BENCH_TMP/poll/host"
	# metrics: every limited cgroup's usage, memory.stat and failcnt each
	# poll, the registry rebuilt and the file written
	poll_window "$OOMWATCH" --alloc-min 0 -i 1s -c "$PARENT" --prometheus "$BENCH_TMP/poll/m.prom" \
		>>"$BENCH_TMP/poll/msub"
	poll_window "$OOMWATCH" --alloc-min 0 -i 1s --prometheus "$BENCH_TMP/poll/m.prom" >>"$BENCH_TMP/poll/mhost"
	poll_window "$OOMWATCH" --alloc-min 0 -i 5s --prometheus "$BENCH_TMP/poll/m.prom" >>"$BENCH_TMP/poll/m5"
	bench_log "polling window $w/$WINDOWS: defaults $(tail -1 "$BENCH_TMP/poll/default")% ($ARMED signals armed), $(tail -1 "$BENCH_TMP/poll/sub")% (only the $NCG), $(tail -1 "$BENCH_TMP/poll/host")% (every memory cgroup); metrics: $(tail -1 "$BENCH_TMP/poll/msub")%, $(tail -1 "$BENCH_TMP/poll/mhost")%, $(tail -1 "$BENCH_TMP/poll/m5")% at 5 s"
done
# where the loop's time goes at the default settings: its syscalls over
# STRACE_S seconds after the settling time (strace slows it; the counts
# are what matter)
STRACE_S=${STRACE_S:-10}
PREADS= SYSCALLS=
if command -v strace >/dev/null; then
	"$OOMWATCH" >/dev/null 2>"$BENCH_TMP/strace.err" &
	pid=$!
	sleep "$SETTLE_S"
	timeout -s INT "$STRACE_S" strace -c -f -p "$pid" -o "$BENCH_TMP/strace.txt" 2>/dev/null
	kill -INT "$pid"
	wait "$pid"
	# "% time, seconds, usecs/call, calls, [errors,] syscall"
	PREADS=$(awk '$NF == "pread64" { print $4 }' "$BENCH_TMP/strace.txt")
	SYSCALLS=$(awk '$NF == "total" { print $4 }' "$BENCH_TMP/strace.txt")
	ST_WATCHED=$(sed -n 's/.*polling \([0-9]*\) memory cgroups.*/\1/p' "$BENCH_TMP/strace.err" | tail -1)
	bench_log "strace -c over ${STRACE_S} s: ${PREADS:-?} pread64 of ${SYSCALLS:-?} syscalls, ${ST_WATCHED:-?} cgroups"
fi
M_BYTES=$(stat -c %s "$BENCH_TMP/poll/m.prom")
M_SERIES=$(grep -c '^aiscope_oomwatch_' "$BENCH_TMP/poll/m.prom")
WATCHED=$(sed -n 's/.*polling \([0-9]*\) memory cgroups.*/\1/p' "$BENCH_TMP/poll.err" | tail -1)
# one cgroup near its limit: memory.stat and failcnt are read too
"$OOMWATCH" --check -c "$PARENT/c1" -j >/dev/null 2>&1
CHECK_T0=$EPOCHREALTIME
"$OOMWATCH" --check -c "$PARENT" -j >/dev/null 2>&1
CHECK_MS=$(awk -v u="$(us_since "$CHECK_T0")" 'BEGIN { printf "%.1f\n", u / 1000 }')
CHECK_RSS=$(peak_rss_kib "$OOMWATCH" --check -c "$PARENT" -j)
# the DaemonSet's command (its --listen as a file: the same registry)
DS_RSS=$(peak_rss_kib "$OOMWATCH" -i 5s -j --alloc-min 0 --prometheus "$BENCH_TMP/poll/ds.prom" -d 12s)
remove_cgroups

# ---- report ----
# poll_row RUN COMMAND KEY: the table row of the CPU shares of run KEY's windows
poll_row() {
	md_row "$1" "\`$2\`" "**$(median <"$BENCH_TMP/poll/$3")**" "$(spread 3 <"$BENCH_TMP/poll/$3")"
}
body=$BENCH_TMP/body.md
{
	echo "## oomwatch"
	echo
	echo "Peer: libbpf-tools \`oomkill\` (Debian package \`libbpf-tools\`)."
	echo
	echo "Machine: $BENCH_NPROC CPUs (${BENCH_CPU%% *}), kernel $BENCH_KERNEL, $BENCH_OS; run $BENCH_DATE,"
	echo "load average at start $BENCH_LOAD; a shared 2-core VM (other engineers' builds and tests ran"
	echo "at the same time), so every figure is a median and noisy."
	md_h3 "libbpf-tools oomkill here"
	echo "\`$(rel "$OOMKILL")\`: **$OK_STATUS**: \`$OK_WHY\`."
	echo "oomkill hooks \`oom_kill_process\` with a kprobe only; this kernel has no kprobes"
	echo "(CONFIG_KPROBES off) and no tracefs kprobe_events to fall back to, so it cannot report a"
	echo "single kill here. oomwatch's victim hook is the \`oom:mark_victim\` tracepoint (tp_btf here),"
	echo "and \`oom_kill_process\` only adds context where fentry or a kprobe works."
	md_h3 "Lifecycle: exec -> attached -> exit"
	echo "*attached*: the \"Tracing OOM kills ...\" line on stderr (printed after attach and the first"
	echo "scan of the memory cgroups); *exit*: wait() returns. oomkill never attaches here: its"
	echo "exec -> exit is the time it takes to fail. Medians of REPS=$REPS."
	echo
	md_header tool command "exec->attached (ms)" "exec->exit (ms)" "exit - 100 ms (ms)"
	for m in ow-kills ow-all ow-json; do
		rdy=$(life_median_ms "$m" ready)
		ext=$(life_median_ms "$m" exit)
		md_row oomwatch "\`${LIFE_CMD[$m]}\`" "$(fmt "$rdy" 1)" "$(fmt "$ext" 1)" \
			"$(fmt "$(awk -v e="$ext" 'BEGIN { print e - 100 }')" 1)"
	done
	if [ -s "$BENCH_TMP/okl/exit" ]; then
		okx=$(awk '{ print $1 / 1000 }' "$BENCH_TMP/okl/exit" | median)
		md_row "libbpf-tools oomkill" "\`$(rel "$OOMKILL")\`" "never (fails)" "$(fmt "$okx" 1)" "-"
	fi
	md_h3 "Syscall overhead of the allocation hooks"
	echo "In [Syscall overhead](#syscall-overhead), beside ipcsnoop and socketsnoop and the floor of"
	echo "each hook set (\`scripts/bench/syscall-overhead.sh\`)."
	md_h3 "Peak RSS"
	echo "getrusage's ru_maxrss, \`/usr/bin/time -f %M\`, median of 3. The pages of the ring buffer"
	echo "(8 MiB by default, as in every aiscope tool) count in it; kills and allocations need far less."
	echo
	md_header tool command "peak RSS (MiB)"
	md_row oomwatch "\`$O --alloc-min 0 -d 100ms\`" "$(kib_to_mib "$(median <"$BENCH_TMP/rss/kills")")"
	md_row oomwatch "\`$O -d 100ms\`" "$(kib_to_mib "$(median <"$BENCH_TMP/rss/all")")"
	md_row "oomwatch, a small ring buffer" "\`$O -d 100ms --buffer-size 256K\`" \
		"$(kib_to_mib "$(median <"$BENCH_TMP/rss/small")")"
	[ -s "$BENCH_TMP/rss/oomkill" ] &&
		md_row "libbpf-tools oomkill (until it fails)" "\`$(rel "$OOMKILL")\`" "$(kib_to_mib "$(median <"$BENCH_TMP/rss/oomkill")")"
	md_row "oomwatch --check, $NCG cgroups" "\`$O --check -c <parent> -j\`" "$(kib_to_mib "$CHECK_RSS")"
	md_h3 "Polling cost: $NCG memory cgroups at 1 s"
	echo "$NCG v1 memory cgroups made for the run, each with a 1 GiB limit (so each one's usage is"
	echo "read every interval: the costlier case), far below it. oomwatch's CPU time (utime + stime"
	echo "from /proc/PID/stat, all its threads) over $WINDOWS windows of ${WINDOW_S} s each, after ${SETTLE_S} s of start-up, as a"
	echo "share of one CPU. *only the $NCG*: \`-c <parent>\`; *every memory cgroup*: the host's"
	echo "others too ($WATCHED in all at the end; other engineers' jobs come and go, each in a"
	echo "cgroup of its own, which inotify adds as they appear)."
	echo
	md_header run command "CPU (% of one CPU), median" "min-max"
	poll_row "default settings, every memory cgroup" "$O" default
	poll_row "only the $NCG" "$O --alloc-min 0 -i 1s -c <parent>" sub
	poll_row "every memory cgroup" "$O --alloc-min 0 -i 1s" host
	poll_row "only the $NCG, metrics" "$O --alloc-min 0 -i 1s -c <parent> --prometheus FILE" msub
	poll_row "every memory cgroup, metrics" "$O --alloc-min 0 -i 1s --prometheus FILE" mhost
	poll_row "every memory cgroup, metrics at 5 s" "$O --alloc-min 0 -i 5s --prometheus FILE" m5
	echo
	echo "With metrics, every cgroup with a limit has its usage, memory.stat (the expensive file: the"
	echo "kernel formats some 70 counters) and memory.failcnt read at every poll, so that each exported"
	echo "figure is that poll's; the gauges are set anew and the file rewritten each time: $M_SERIES"
	echo "aiscope_oomwatch_ samples, $M_BYTES bytes at the end of the last run (a metric keeps 1000"
	echo "label sets, then an overflow series)."
	echo
	echo "At the default settings each cgroup's kernel signals are armed ($ARMED at the end of the"
	echo "last run: v1 usage thresholds at --warn and --crit for each limited cgroup, memory.oom_control"
	echo "for each): they cost nothing while no usage crosses a threshold. Registering them does: the"
	echo "kernel waits for an RCU grace period in each v1 threshold registration, so a thread of"
	echo "oomwatch registers them (the fullest cgroups first, new ones before the rest) while the"
	echo "loop runs and polls; over its first $((SETTLE_S - 2)) s (from 2 s on) oomwatch at the default settings used"
	echo "$(median <"$BENCH_TMP/poll/default-settle")% of one CPU."
	echo
	if [ -n "$PREADS" ] && [ -n "$ST_WATCHED" ]; then
		echo "What the loop spends it on, at the default settings (\`strace -c -f\` for ${STRACE_S} s after the settling"
		echo "time; strace slows it, the counts are what matter): $PREADS \`pread64\` calls of $SYSCALLS"
		echo "syscalls, $(awk -v p="$PREADS" -v s="$STRACE_S" -v n="$ST_WATCHED" 'BEGIN { printf "%.2f", p / s / n }') per watched cgroup per interval ($ST_WATCHED watched): each limited"
		echo "cgroup's usage (for the levels and the growth projection) and its limit every 10th interval."
		echo "A cold cgroup's memory.oom_control (v1; memory.events in v2) is read only when its eventfd"
		echo "fired or a kill named the cgroup, as nothing else moves its counters (it was read at every"
		echo "interval, twice the reads); the rest is the event loop's epoll_wait and the timer."
		echo
	fi
	echo "Peak RSS of the DaemonSet's command with the $NCG (\`$O -i 5s -j --alloc-min 0\`, metrics to a"
	echo "file for its --listen, 12 s): $(kib_to_mib "$DS_RSS") MiB."
	echo
	echo "One \`--check\` scan of the $NCG (every file of each, memory.stat included): $CHECK_MS ms."
	md_h3 "Targets"
	dmed=$(median <"$BENCH_TMP/poll/default")
	if cmp_le "$dmed" 1; then m="**met**"; else m="**not met**"; fi
	echo "- $NCG cgroups at the default settings (signals armed, 1 s polls) at most 1% of one CPU:"
	echo "  $dmed%: $m."
	med=$(median <"$BENCH_TMP/poll/host")
	if cmp_le "$med" 1; then m="**met**"; else m="**not met**"; fi
	echo "- Polling $NCG cgroups at 1 s under 1% of one CPU: $med% with every memory cgroup of the"
	echo "  host: $m. With --prometheus: $(median <"$BENCH_TMP/poll/mhost")% at 1 s, $(median <"$BENCH_TMP/poll/m5")% at 5 s (the DaemonSet's"
	echo "  interval)."
	md_h3 "Reproduce"
	echo "As root, after \`make\`: \`scripts/bench/oomwatch.sh\` (about $(((WINDOWS * (WINDOW_S + SETTLE_S + 1) * 6 + SETTLE_S + STRACE_S) / 60 + 3)) minutes). NCG, WINDOWS,"
	echo "WINDOW_S, SETTLE_S and REPS change the cgroups made, the polling windows and the lifecycle"
	echo "repetitions. It makes its cgroups under $MEMCG/aiscope-bench-PID and removes them"
	echo "(also when interrupted). It rewrites this section only."
} >"$body"

md_section "$OUT" oomwatch "$body"
bench_log "wrote the oomwatch section of $(rel "$OUT")"
cat "$body"
