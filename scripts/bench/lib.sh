# shellcheck shell=bash
# scripts/bench/lib.sh: helpers shared by every tool's benchmark.
#
# Source it from scripts/bench/<tool>.sh (bash 5: uses $EPOCHREALTIME).
# Benchmarks report, they do not pass or fail: see spec/TESTING.md.
#
#   bench_init                       temp dir, root check, machine facts
#   bench_needs [--time] PATH...     stdbuf, $BPFTRACE (and /usr/bin/time), PATHs
#                                    built; then cd to the tree (rel: paths as shown)
#   bench_pin                        PIN, the taskset prefix of $PIN_CPU
#   bench_kill_wait SIG PID...       signal them all, then wait for each
#   bench_foreign_progs              tracing BPF programs loaded by others
#   median / ratio / fmt             numbers (stdin / args)
#   bench_mode NAME STREAM MARKER CMD...
#                                    register a way to run a tool: STREAM (stdout
#                                    or stderr) carries MARKER once it is attached
#   bench_start NAME / bench_stop / bench_wait
#                                    run a registered mode in the background until
#                                    its marker shows (at most BENCH_READY_TIMEOUT
#                                    s, default 30); times in BENCH_T_*
#   ovh_mode NAME LABEL SHOWN STREAM MARKER CMD...
#                                    bench_mode, added to OVH_MODES with its label
#                                    and command as the report shows them
#   run_overhead REPS WORKLOAD NAME...
#                                    interleaved pairs (bare, tool) per mode
#   run_modes REPS WORKLOAD OPS CLASSES WHAT
#                                    run_overhead and run_bpf_cost of OVH_MODES,
#                                    run_lifecycle of LIFE_MODES
#   run_lifecycle REPS NAME...       exec -> attached -> exit of self-ending modes
#   run_bpf_cost REPS WORKLOAD OPS CLASSES NAME...
#                                    BPF run time per event of each mode's programs
#                                    (kernel.bpf_stats_enabled), by program-name class
#   peak_rss_kib CMD...              peak RSS (KiB) of CMD, /usr/bin/time %M
#   vmhwm_kib PID                    VmHWM (KiB) of a running process
#   md_row / md_header / md_h3       markdown table lines, a subsection's title
#   bpftrace_version                 the peer's version, for the report
#   bench_report NAME                body: the report's file, begun with its title;
#                                    foreign_end: bench_foreign_progs at the end
#   md_ovh_table BARE WITH           the overhead table of OVH_MODES
#   md_section FILE NAME BODYFILE    replace (or append) the section NAME of FILE,
#                                    between <!-- bench:NAME:begin/end --> markers

# shellcheck disable=SC2034
BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# where the report goes, and the peer every tool is measured beside
OUT=${OUT:-$BENCH_ROOT/docs/PERFORMANCE.md}
BPFTRACE=${BPFTRACE:-bpftrace}

# BENCH_TAG: the scripts that are no side-by-side benchmark (soak, sscap) say so
bench_log() { printf '[%s] %s\n' "${BENCH_TAG:-bench}" "$*" >&2; }
bench_die() { printf '[%s] error: %s\n' "${BENCH_TAG:-bench}" "$*" >&2; exit 1; }

bench_need_root() { [ "$(id -u)" = 0 ] || bench_die "run as root (BPF programs are loaded)"; }

# shellcheck disable=SC2034 # BENCH_* facts are for the scripts that source this
bench_init() {
	bench_need_root
	[ -n "${EPOCHREALTIME:-}" ] || bench_die "bash 5 is needed (EPOCHREALTIME)"
	BENCH_TMP=$(mktemp -d /tmp/aiscope-bench.XXXXXX)
	trap 'bench_cleanup' EXIT
	trap 'exit 130' INT TERM
	BENCH_NPROC=$(nproc)
	BENCH_KERNEL=$(uname -r)
	BENCH_DATE=$(date -u +%Y-%m-%dT%H:%MZ)
	BENCH_CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
	BENCH_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
	BENCH_OS=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
	BENCH_FOREIGN_START=$(bench_foreign_progs)
}

# bench_foreign_progs: tracing BPF programs loaded by others (kprobe,
# tracepoint, raw_tracepoint, tracing, perf_event): they tax the workload
# of every mode alike and shrink the differences; "?" without bpftool
bench_foreign_progs() {
	command -v bpftool >/dev/null || { echo "?"; return; }
	bpftool prog show 2>/dev/null |
		grep -cE '^[0-9]+: (kprobe|tracepoint|raw_tracepoint|tracing|perf_event) '
}

bench_cleanup() {
	[ -n "${BENCH_STATS_SAVED:-}" ] && echo "$BENCH_STATS_SAVED" >/proc/sys/kernel/bpf_stats_enabled
	[ -n "${BENCH_PID:-}" ] && kill -INT "$BENCH_PID" 2>/dev/null && wait "$BENCH_PID" 2>/dev/null
	[ -n "${BENCH_LOAD_PID:-}" ] && kill "$BENCH_LOAD_PID" 2>/dev/null
	[ -n "${BENCH_TMP:-}" ] && rm -rf "$BENCH_TMP"
}

# bench_outdir NAME: OUTDIR, made, for runs whose files are kept (default a
# new /tmp/aiscope-NAME.XXXXXX)
bench_outdir() {
	OUTDIR=${OUTDIR:-$(mktemp -d "/tmp/aiscope-$1.XXXXXX")}
	mkdir -p "$OUTDIR" || bench_die "cannot make $OUTDIR"
}

# bench_unit_args TOOL: the options of TOOL's systemd unit (deploy/systemd),
# less --prometheus (the runs give their own)
bench_unit_args() {
	local unit=$BENCH_ROOT/deploy/systemd/aiscope-$1.service line
	[ -r "$unit" ] || bench_die "no unit $unit"
	# ExecStart=/usr/local/sbin/aiscope TOOL OPTION...
	line=$(sed -n "s/^ExecStart=[^ ]*\/aiscope $1 //p" "$unit")
	[ -n "$line" ] || bench_die "$unit: no ExecStart=.../aiscope $1"
	printf '%s\n' "${line% --prometheus *}"
}

# need CMD [PACKAGE]: fail with a hint when a command is missing
need() {
	command -v "$1" >/dev/null || bench_die "$1 not found (apt-get install ${2:-$1})"
}

need_time() { [ -x /usr/bin/time ] || bench_die "/usr/bin/time not found (apt-get install time)"; }

# bench_libbpf: $arch (x86, arm64: the build's name for this machine) and
# $libbpf, the libbpf the build pinned for it (BUILD's), for benchmarks that
# build a BPF object of their own
bench_libbpf() {
	case $(uname -m) in
	x86_64) arch=x86 ;;
	aarch64) arch=arm64 ;;
	*) bench_die "no build for $(uname -m)" ;;
	esac
	libbpf=$BUILD/libbpf/$arch
	[ -e "$libbpf/lib/libbpf.a" ] || bench_die "$libbpf/lib/libbpf.a not built (make)"
	need clang clang
}

# need_built PATH...: each one executable, as make builds it
need_built() {
	local p
	for p in "$@"; do
		[ -x "$p" ] || bench_die "$p not built (make)"
	done
}

# bench_needs [--time] PATH...: what a benchmark beside bpftrace needs:
# stdbuf (every mode's marker is read line by line), /usr/bin/time with
# --time (peak_rss_kib), PATH... built, $BPFTRACE (default bpftrace); then
# the tree is the working directory, as the report's commands are run
bench_needs() {
	need stdbuf coreutils
	[ "${1:-}" = --time ] && shift && need_time
	need_built "$@"
	need "$BPFTRACE" bpftrace
	cd "$BENCH_ROOT" || exit 1
}

# rel PATH: a path as the report shows it, from the top of the tree
rel() { local p=${1#"$BENCH_ROOT"/}; printf '%s' "$p"; }

# bench_pin: PIN, the workload's prefix that pins it to $PIN_CPU (none
# when PIN_CPU is empty)
bench_pin() {
	PIN=()
	if [ -n "${PIN_CPU:-}" ]; then PIN=(taskset -c "$PIN_CPU"); fi
}

# pipe_ops: ops/sec of `perf bench sched pipe -l $LOOPS`, pinned by PIN
pipe_ops() {
	"${PIN[@]}" perf bench sched pipe -l "$LOOPS" 2>/dev/null | awk '/ops\/sec/ { print $1 }'
}

# bench_kill_wait SIG PID...: signal every one first (they end side by
# side), then wait for each
bench_kill_wait() {
	local sig=$1 p
	shift
	for p in "$@"; do
		kill "-$sig" "$p" 2>/dev/null
	done
	for p in "$@"; do
		wait "$p" 2>/dev/null
	done
}

# ---- numbers ----

# median of the numbers on stdin (one per line; blank lines ignored)
median() {
	sort -g | awk 'NF { v[n++] = $1 } END {
		if (!n) { print "nan"; exit }
		if (n % 2) print v[(n - 1) / 2]; else printf "%.6g\n", (v[n/2 - 1] + v[n/2]) / 2 }'
}

# min and max of the numbers on stdin, "MIN-MAX"
spread() {
	sort -g | awk -v d="${1:-3}" 'NF { v[n++] = $1 } END {
		if (!n) { print "-"; exit }
		printf "%.*f-%.*f\n", d, v[0], d, v[n-1] }'
}

# ratio A B [DECIMALS]: A/B
ratio() { awk -v a="$1" -v b="$2" -v d="${3:-3}" 'BEGIN { if (b == 0 || a == "nan" || b == "nan") print "nan"; else printf "%.*f\n", d, a / b }'; }

# fmt X [DECIMALS]: fixed-point
fmt() { awk -v a="$1" -v d="${2:-1}" 'BEGIN { if (a == "nan") print "nan"; else printf "%.*f\n", d, a }'; }

# us_since T0 [T1]: microseconds between two $EPOCHREALTIME values
us_since() {
	local t0=${1/./} t1=${2:-$EPOCHREALTIME}
	t1=${t1/./}
	echo $(( 10#$t1 - 10#$t0 ))
}

# cmp_le A B: true when A <= B (floats)
cmp_le() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b) }'; }

# ---- tool modes ----

declare -gA BENCH_STREAM BENCH_MARKER BENCH_CMD

# bench_mode NAME STREAM MARKER CMD...: STREAM is stdout or stderr; the
# other stream goes to /dev/null, and the marker stream is drained to
# /dev/null once MARKER (a substring) has shown.
bench_mode() {
	local name=$1 stream=$2 marker=$3
	shift 3
	case $stream in stdout|stderr) ;; *) bench_die "bench_mode $name: stream must be stdout or stderr" ;; esac
	BENCH_STREAM[$name]=$stream
	BENCH_MARKER[$name]=$marker
	BENCH_CMD[$name]=$(printf '%q ' "$@")
}

bench_cmd_text() { printf '%s' "${BENCH_CMD[$1]% }"; }

# ovh_mode NAME LABEL SHOWN STREAM MARKER CMD...: bench_mode NAME STREAM
# MARKER CMD..., appended to OVH_MODES (the modes run_overhead measures,
# in the report's order), with OVH_LABEL[NAME]=LABEL and the command as
# the report shows it, OVH_CMD[NAME]=SHOWN
declare -ga OVH_MODES=()
declare -gA OVH_LABEL=() OVH_CMD=()
ovh_mode() {
	local name=$1
	OVH_MODES+=("$name")
	OVH_LABEL[$name]=$2
	OVH_CMD[$name]=$3
	shift 3
	bench_mode "$name" "$@"
}

# bench_start NAME: start it, return once its marker shows (or it failed).
# Sets BENCH_PID, BENCH_T_EXEC (EPOCHREALTIME just before the fork) and
# BENCH_T_READY (when the marker line was read).
bench_start() {
	local name=$1 fifo line fd
	[ -n "${BENCH_CMD[$name]:-}" ] || bench_die "unknown mode $name"
	fifo=$BENCH_TMP/fifo.$name.$RANDOM
	mkfifo "$fifo"
	BENCH_T_READY=
	BENCH_T_EXEC=$EPOCHREALTIME
	if [ "${BENCH_STREAM[$name]}" = stderr ]; then
		eval "exec ${BENCH_CMD[$name]}" >/dev/null 2>"$fifo" &
	else
		eval "exec ${BENCH_CMD[$name]}" >"$fifo" 2>/dev/null &
	fi
	BENCH_PID=$!
	exec {fd}<"$fifo"
	while IFS= read -r -t "${BENCH_READY_TIMEOUT:-30}" line <&"$fd"; do
		if [[ $line == *"${BENCH_MARKER[$name]}"* ]]; then
			BENCH_T_READY=$EPOCHREALTIME
			break
		fi
	done
	# keep the pipe drained so that the tool never blocks on it
	cat <&"$fd" >/dev/null &
	BENCH_DRAIN_PID=$!
	exec {fd}<&-
	rm -f "$fifo"
	if [ -z "$BENCH_T_READY" ]; then
		kill -INT "$BENCH_PID" 2>/dev/null
		wait "$BENCH_PID"
		wait "$BENCH_DRAIN_PID" 2>/dev/null
		bench_log "$name: exited before its ready marker: $(bench_cmd_text "$name")"
		BENCH_PID=
		return 1
	fi
}

# bench_wait: wait for the started tool to end by itself; BENCH_T_EXIT
bench_wait() {
	local rc=0
	wait "$BENCH_PID" || rc=$?
	BENCH_T_EXIT=$EPOCHREALTIME
	wait "$BENCH_DRAIN_PID" 2>/dev/null
	BENCH_PID=
	return $rc
}

# bench_stop: SIGINT (Ctrl-C) the started tool and wait for it
bench_stop() {
	kill -INT "$BENCH_PID" 2>/dev/null
	bench_wait || true
}

# What run_overhead and run_bpf_cost do around the measured workload:
# BENCH_ARMED, a command run once the mode is started (default none: its
# marker says it is attached), BENCH_STOP the one that ends it (default
# bench_stop); BENCH_RATIO_DECIMALS (default 4); BENCH_UNIT, the
# workload figure's unit in the log
bench_armed() { [ -z "${BENCH_ARMED:-}" ] || "$BENCH_ARMED"; }
bench_end() { "${BENCH_STOP:-bench_stop}"; }

# ---- measurements ----

# run_overhead REPS WORKLOAD NAME...: WORKLOAD is a command (function) that
# prints one throughput figure. For each repetition and each NAME, in
# turn: WORKLOAD bare, then WORKLOAD with NAME attached; the pair gives
# one ratio, so that drift between repetitions cancels. Results, one
# value a line, in $BENCH_TMP/ovh/NAME.{bare,tool,ratio}.
run_overhead() {
	local reps=$1 workload=$2 r name bare tool
	shift 2
	mkdir -p "$BENCH_TMP/ovh"
	for ((r = 1; r <= reps; r++)); do
		for name in "$@"; do
			bare=$($workload)
			bench_start "$name" || bench_die "$name did not start"
			bench_armed
			tool=$($workload)
			bench_end
			echo "$bare" >>"$BENCH_TMP/ovh/$name.bare"
			echo "$tool" >>"$BENCH_TMP/ovh/$name.tool"
			ratio "$tool" "$bare" "${BENCH_RATIO_DECIMALS:-4}" >>"$BENCH_TMP/ovh/$name.ratio"
			bench_log "overhead rep $r/$reps $name: bare $bare, with tool $tool${BENCH_UNIT:+ $BENCH_UNIT}"
		done
	done
}

# ovh_median NAME KIND: median of bare, tool or ratio
ovh_median() { median <"$BENCH_TMP/ovh/$1.$2"; }
ovh_spread() { spread "${3:-3}" <"$BENCH_TMP/ovh/$1.$2"; }

# run_lifecycle REPS NAME...: the modes must end by themselves. Results in
# $BENCH_TMP/life/NAME.{ready,exit} (microseconds since exec).
run_lifecycle() {
	local reps=$1 r name
	shift
	mkdir -p "$BENCH_TMP/life"
	for ((r = 1; r <= reps; r++)); do
		for name in "$@"; do
			bench_start "$name" || bench_die "$name did not start"
			bench_wait || bench_log "$name: exit status $?"
			us_since "$BENCH_T_EXEC" "$BENCH_T_READY" >>"$BENCH_TMP/life/$name.ready"
			us_since "$BENCH_T_EXEC" "$BENCH_T_EXIT" >>"$BENCH_TMP/life/$name.exit"
		done
	done
}

# life_median_ms NAME ready|exit
life_median_ms() { awk '{ print $1 / 1000 }' "$BENCH_TMP/life/$1.$2" | median; }

# bpf_prog_costs PID: "NAME RUN_CNT RUN_TIME_NS" for each BPF program PID
# holds (run_* count only while kernel.bpf_stats_enabled is 1)
bpf_prog_costs() {
	local id
	awk '/^prog_id:/ { print $2 }' /proc/"$1"/fdinfo/* 2>/dev/null | sort -un | while read -r id; do
		bpftool prog show id "$id" 2>/dev/null | awk 'NR == 1 {
			for (i = 1; i < NF; i++) {
				if ($i == "name") n = $(i + 1)
				if ($i == "run_time_ns") t = $(i + 1)
				if ($i == "run_cnt") c = $(i + 1)
			}
			print n, c + 0, t + 0 }'
	done
}

# run_bpf_cost REPS WORKLOAD OPS CLASSES NAME...: for each repetition and
# mode: start it, turn kernel.bpf_stats_enabled on, run WORKLOAD once (OPS
# operations), read the run time of the mode's programs, turn stats off,
# stop it. CLASSES: space-separated substrings of program names (e.g.
# "switch wakeup"); for each, ns per event of the programs whose name holds
# it, in $BENCH_TMP/cost/NAME.CLASS; all programs' run time per workload
# operation in $BENCH_TMP/cost/NAME.perop. Separate from run_overhead: the
# stats themselves cost a little on every program run.
run_bpf_cost() {
	local reps=$1 workload=$2 ops=$3 classes=$4 r name c costs
	shift 4
	command -v bpftool >/dev/null || { bench_log "no bpftool: BPF cost not measured"; return 1; }
	mkdir -p "$BENCH_TMP/cost"
	BENCH_STATS_SAVED=$(cat /proc/sys/kernel/bpf_stats_enabled)
	for ((r = 1; r <= reps; r++)); do
		for name in "$@"; do
			bench_start "$name" || bench_die "$name did not start"
			bench_armed
			echo 1 >/proc/sys/kernel/bpf_stats_enabled
			$workload >/dev/null
			costs=$(bpf_prog_costs "$BENCH_PID")
			echo "$BENCH_STATS_SAVED" >/proc/sys/kernel/bpf_stats_enabled
			bench_end
			for c in $classes; do
				awk -v c="$c" 'index($1, c) { n += $2; t += $3 }
					END { if (n) printf "%.1f\n", t / n; else print "nan" }' \
					<<<"$costs" >>"$BENCH_TMP/cost/$name.$c"
			done
			awk -v o="$ops" '{ t += $3 } END { printf "%.1f\n", t / o }' <<<"$costs" \
				>>"$BENCH_TMP/cost/$name.perop"
		done
		bench_log "bpf cost rep $r/$reps done"
	done
	BENCH_STATS_SAVED=
}

# run_modes REPS WORKLOAD OPS CLASSES WHAT: run_overhead and run_bpf_cost
# (OPS operations a WORKLOAD, per WHAT in the log) of OVH_MODES, then
# run_lifecycle of LIFE_MODES; have_cost is empty when the BPF cost could
# not be measured
run_modes() {
	local reps=$1 workload=$2 ops=$3 classes=$4 what=$5
	bench_log "overhead: ${#OVH_MODES[@]} modes x $reps pairs"
	run_overhead "$reps" "$workload" "${OVH_MODES[@]}"
	bench_log "BPF cost per $what: ${#OVH_MODES[@]} modes x $reps"
	have_cost=1
	run_bpf_cost "$reps" "$workload" "$ops" "$classes" "${OVH_MODES[@]}" || have_cost=
	bench_log "lifecycle: ${#LIFE_MODES[@]} modes x $reps"
	run_lifecycle "$reps" "${LIFE_MODES[@]}"
}

# cost_median NAME CLASS|perop
cost_median() { grep -v nan "$BENCH_TMP/cost/$1.$2" | median; }

# peak_rss_kib CMD...: peak RSS of CMD (its output to /dev/null), in KiB,
# from getrusage's ru_maxrss as /usr/bin/time -f %M reports it
peak_rss_kib() {
	local out=$BENCH_TMP/rss.$RANDOM
	/usr/bin/time -f %M -o "$out" "$@" >/dev/null 2>&1 || true
	tail -n 1 "$out"
	rm -f "$out"
}

# vmhwm_kib PID: peak RSS so far of a running process
vmhwm_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }

# kib_to_mib KIB
kib_to_mib() { awk -v k="$1" 'BEGIN { if (k == "nan") print "nan"; else printf "%.1f\n", k / 1024 }'; }

# ---- markdown ----

# md_row CELL...: one table row
md_row() {
	local c line="|"
	for c in "$@"; do line+=" $c |"; done
	printf '%s\n' "$line"
}

# md_header CELL...: header row and its separator
md_header() {
	local c sep="|"
	md_row "$@"
	for c in "$@"; do sep+="---|"; done
	printf '%s\n' "$sep"
}

# md_h3 TITLE: a subsection's title, a blank line either side
md_h3() { printf '\n### %s\n\n' "$1"; }

# bench_report NAME: body, the file of the report's section, begun with its
# "## NAME" title; foreign_end, the others' tracing programs now, at the end
# of the run (the report's machine facts)
# shellcheck disable=SC2034
bench_report() {
	foreign_end=$(bench_foreign_progs)
	body=$BENCH_TMP/section.md
	printf '## %s\n\n' "$1" >"$body"
}

# md_ovh_table BARE WITH: run_overhead's table of OVH_MODES, with the names
# of the bare and the with-tool figures in its header
md_ovh_table() {
	local m
	md_header tool command "$1" "$2" "ratio" "ratio min-max"
	for m in "${OVH_MODES[@]}"; do
		md_row "${OVH_LABEL[$m]}" "\`${OVH_CMD[$m]}\`" "$(fmt "$(ovh_median "$m" bare)" 0)" \
			"$(fmt "$(ovh_median "$m" tool)" 0)" "**$(fmt "$(ovh_median "$m" ratio)" 3)**" \
			"$(ovh_spread "$m" ratio)"
	done
}

bpftrace_version() { "$BPFTRACE" --version 2>/dev/null | awk '{ print $2 }'; }

# md_section FILE NAME BODYFILE: replace the text between
# <!-- bench:NAME:begin --> and <!-- bench:NAME:end --> in FILE with
# BODYFILE, or append the section when FILE lacks it. Other sections,
# and the text outside the markers, are kept.
md_section() {
	local file=$1 name=$2 body=$3 begin end tmp
	begin="<!-- bench:$name:begin -->"
	end="<!-- bench:$name:end -->"
	tmp=$file.tmp.$$
	mkdir -p "$(dirname "$file")"
	if [ ! -f "$file" ]; then
		cat >"$file" <<-'EOF'
		# Performance

		Side-by-side benchmarks of each aiscope tool against its nearest existing peer, on the
		same workload in the same run, written by `scripts/bench/<tool>.sh` (run as root). They
		report, they do not pass or fail (spec/TESTING.md, Benchmarks). Each section below is
		rewritten by its own script between its markers; text outside the markers is kept.
		EOF
	fi
	if grep -qF "$begin" "$file"; then
		awk -v b="$begin" -v e="$end" -v f="$body" '
			$0 == b { print; while ((getline l < f) > 0) print l; skip = 1; next }
			$0 == e { skip = 0 }
			!skip' "$file" >"$tmp"
	else
		{ cat "$file"; printf '\n%s\n' "$begin"; cat "$body"; printf '%s\n' "$end"; } >"$tmp"
	fi
	mv "$tmp" "$file"
}
