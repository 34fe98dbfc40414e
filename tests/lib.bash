# Shared helpers for the bats suites. Load with: load lib
#
# Every suite runs the tools from $AISCOPE_BUILD (set by tests/run.sh,
# default build/), keeps its files in $BATS_TEST_TMPDIR, and ends whatever
# it started in teardown (aiscope_teardown).

AISCOPE_BUILD=${AISCOPE_BUILD:-$(cd "$BATS_TEST_DIRNAME/.." && pwd)/build}
BIN=$AISCOPE_BUILD
# build/aiscope runs the tools of this tree (installed, it finds them in
# ../libexec/aiscope: cmd/aiscope.c)
export AISCOPE_LIBEXECDIR=$AISCOPE_BUILD
HELPERS=$AISCOPE_BUILD/tests/helpers
TEST_PIDS=()
TEST_CGROUPS=()
TEST_DIRS=()

need_root() {
	[ "$(id -u)" -eq 0 ] || skip "needs root"
}

# need_no_kprobes: skips the test on a kernel with kprobes (where an
# impossible --probe-mode needs a kernel without them)
need_no_kprobes() {
	if grep -q '^kprobe ' /proc/kallsyms 2>/dev/null && [ -e /sys/bus/event_source/devices/kprobe ]; then
		skip "this kernel has kprobes"
	fi
}

# run_exit_77 COMMAND ARGS...: bats' run of it; it must exit 77 with one
# line, in $output
run_exit_77() {
	run "$@"
	[ "$status" -eq 77 ]
	[ "${#lines[@]}" -eq 1 ]
}

# nobody_copy PROGRAM: copies PROGRAM to a world-readable directory (the
# checkout may sit under one that nobody cannot enter); sets NOBODY_BIN.
# Call it in the test's own shell, so that teardown removes the copy.
nobody_copy() {
	local dir
	dir=$(mktemp -d /tmp/aiscope-nobody.XXXXXX)
	chmod 755 "$dir"
	cp "$1" "$dir/"
	TEST_DIRS+=("$dir")
	NOBODY_BIN=$dir/${1##*/}
}

# the prefix that runs a command as uid/gid 65534 without capabilities
AS_NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)

# ---- the command-line contract (CONTRACT section 2), one helper a rule;
# each fails the test that calls it when the tool breaks the rule ----

# the options of lib/opts.c that every interval tool's --help lists
SHARED_OPTS=(--pid --tid --cgroup --container --uid --comm --json --interval --duration
	--count --timestamp --noclear --rows --sort --wide --buffer-size --btf
	--list-probes --probe-mode --verbose)

# check_help TOOL OPTION...: --help exits 0, names every OPTION, and has
# the EXAMPLES and the exit status sections
check_help() {
	local tool=$1 opt
	shift
	run "$BIN/$tool" --help
	[ "$status" -eq 0 ]
	for opt in "$@"; do
		[[ "$output" == *"$opt"* ]] || { echo "missing $opt"; false; }
	done
	[[ "$output" == *EXAMPLES:* ]]
	[[ "$output" == *"Exit status"* ]]
}

# check_usage_version TOOL: --usage and --version exit 0 with their lines;
# --version names the libbpf linked in, the one scripts/libbpf.sh pins
check_usage_version() {
	local pinned
	run "$BIN/$1" --usage
	[ "$status" -eq 0 ]
	[[ "$output" == "Usage: $1"* ]]
	run "$BIN/$1" --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^$1\ [0-9]+\.[0-9]+\.[0-9]+ ]]
	pinned=$("$BATS_TEST_DIRNAME/../scripts/libbpf.sh" version | sed 's/^\([0-9]*\.[0-9]*\).*/\1/')
	[[ "$output" == *" (aiscope, libbpf v$pinned)" ]]
}

# check_usage_errors TOOL ARGS...: each ARGS (one word-split string) exits
# 2 at once (within 10 s: a FIFO argument once blocked for ever) with one
# line on stderr that starts with the tool's name (not the path it was
# started by), and nothing on stdout
check_usage_errors() {
	local tool=$1 args rc
	shift
	for args in "$@"; do
		# shellcheck disable=SC2086
		timeout -k 1 10 "$BIN/$tool" $args < /dev/null > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" && {
			echo "'$args' succeeded"; false; }
		rc=$?
		[ "$rc" -eq 2 ] || { echo "'$args' exited $rc"; cat "$BATS_TEST_TMPDIR/err"; false; }
		[ "$(wc -l < "$BATS_TEST_TMPDIR/err")" -eq 1 ] || {
			echo "'$args' printed:"; cat "$BATS_TEST_TMPDIR/err"; false; }
		[[ "$(cat "$BATS_TEST_TMPDIR/err")" == "$tool: "* ]] || {
			echo "'$args' does not start with '$tool: ':"; cat "$BATS_TEST_TMPDIR/err"; false; }
		[ ! -s "$BATS_TEST_TMPDIR/out" ] || { echo "'$args' wrote to stdout"; false; }
	done
}

# declared_metric_labels TOOL: the label names of TOOL's metric families,
# one a line, as its source and lib's declare them (AISCOPE_METRIC_LABELS
# tables, AISCOPE_CGROUP_LABEL_NAMES' names) and lib/prom writes (le,
# overflow)
declared_metric_labels() {
	local src=$BATS_TEST_DIRNAME/..
	{
		cat "$src/tools/$1.c" "$src/lib/metrics.c" | grep 'AISCOPE_METRIC_LABELS('
		grep '^#define AISCOPE_CGROUP_LABEL_NAMES' "$src/lib/metrics.h"
		echo '"le" "overflow"'
	} | grep -o '"[a-z_]*"' | tr -d '"' | sort -u
}

# check_own_metric_labels TOOL OWN...: --metric-label k=NAME with every name
# of declared_metric_labels (which must hold the OWN labels the test knows
# the tool's series have) is a usage error: exit 2, one line, the name; then a
# run with --prometheus registers every family (exit 0)
check_own_metric_labels() {
	local tool=$1 name names
	shift
	names=$(declared_metric_labels "$tool")
	for name in "$@" cgroup container_id namespace pod container tool kind; do
		grep -qx "$name" <<< "$names" || { echo "$name not declared for $tool"; false; }
	done
	for name in $names; do
		check_usage_errors "$tool" "--metric-label k=$name --prometheus $BATS_TEST_TMPDIR/p -n 1"
		[ "$(cat "$BATS_TEST_TMPDIR/err")" = \
		  "$tool: invalid --metric-label 'k=$name': '$name' is a label of aiscope's own" ]
	done
	[ ! -e "$BATS_TEST_TMPDIR/p" ]
	# and every family registers with its declared table (one that is not
	# exits 1 at start); -d, not -n: oomwatch's records are events, and a
	# quiet host may have none
	run timeout 30 "$BIN/$tool" --prometheus "$BATS_TEST_TMPDIR/p" -i 200ms -d 700ms
	[ "$status" -eq 0 ] || { echo "$output"; false; }
	grep -q "^aiscope_build_info{tool=\"$tool\"" "$BATS_TEST_TMPDIR/p"
}

# not_regular_files: a FIFO, a directory and a device, as arguments of
# options that take an input file (sets FIFO)
not_regular_files() {
	FIFO=$BATS_TEST_TMPDIR/fifo
	[ -p "$FIFO" ] || mkfifo "$FIFO"
	printf '%s\n' "$FIFO" "$BATS_TEST_TMPDIR" /dev/null /dev/zero
}

# not_regular_args OPTION...: "OPTION FILE" for each of not_regular_files
# and each OPTION, one a line: the usage errors of options that take a
# regular file
not_regular_args() {
	local f o
	for f in $(not_regular_files); do
		for o in "$@"; do
			echo "$o $f"
		done
	done
}

# check_no_privilege TOOL [ARGS...]: as nobody without capabilities, each
# ARGS (default "-d 1") exits 77 with one line naming CAP_BPF; with -j the
# error is also the last stdout line. Leaves the copy in NOBODY_BIN.
check_no_privilege() {
	local tool=$1 args
	shift
	[ $# -gt 0 ] || set -- "-d 1"
	need_root
	command -v setpriv > /dev/null || skip "setpriv missing"
	nobody_copy "$BIN/$tool"
	for args in "$@"; do
		# shellcheck disable=SC2086
		run "${AS_NOBODY[@]}" "$NOBODY_BIN" $args
		[ "$status" -eq 77 ]
		[[ "$output" == *"CAP_BPF"* ]]
		[ "${#lines[@]}" -eq 1 ]
	done
	run "${AS_NOBODY[@]}" "$NOBODY_BIN" -j -d 1
	[ "$status" -eq 77 ]
	echo "$output" | grep '^{' | tail -1 | jq -e '.type == "error" and .exit_code == 77'
}

# check_signals TOOL [ARGS...]: SIGINT and SIGTERM end a table run with its
# "# summary:" line, and a -j run (with ARGS) with a summary record whose
# exit_reason is "signal"
check_signals() {
	local tool=$1 sig
	shift
	for sig in INT TERM; do
		start_tool s "$tool" -C
		sleep 0.3
		stop_tool "$TOOL_PID" "$sig"
		grep -q '^# summary: ' "$BATS_TEST_TMPDIR/s.out"
		start_tool j "$tool" -j "$@"
		stop_tool "$TOOL_PID" "$sig"
		jq -e -s '.[-1].type == "summary" and .[-1].exit_reason == "signal"' "$BATS_TEST_TMPDIR/j.out"
	done
}

# check_head_exit TOOL: "TOOL -j | head -1" ends within a second of head's
# exit (EPIPE), after the first 1 s interval
check_head_exit() {
	local start end
	start=$(date +%s%N)
	# -d 29s only makes the command line unique for pgrep
	run timeout 10 bash -c "'$BIN/$1' -j -d 29s 2>/dev/null | head -1"
	end=$(date +%s%N)
	[ "$status" -eq 0 ]
	echo "$output" | jq -e '.type == "sample"'
	# one 1 s interval until the first line, then at most a second
	[ $(((end - start) / 1000000)) -lt 2500 ]
	! pgrep -f "$BIN/$1 -j -d 29s" > /dev/null
}

# wait_for FILE PATTERN [SECONDS]: until FILE has a line matching PATTERN
wait_for() {
	local file=$1 pattern=$2 limit=${3:-10} i=0
	while ! grep -q -- "$pattern" "$file" 2>/dev/null; do
		sleep 0.05
		i=$((i + 1))
		if [ $i -ge $((limit * 20)) ]; then
			echo "timed out waiting for '$pattern' in $file:" >&2
			cat "$file" >&2
			return 1
		fi
	done
}

# metrics_url ERRFILE: the URL the tool said it serves
metrics_url() {
	sed -n 's|^.*: serving metrics at \(http://[^ ]*\)$|\1|p' "$1" | head -1
}

# wait_http URL [SECONDS [PID]]: until URL answers 200; fails at once when
# PID (the server) has exited
wait_http() {
	local i
	for i in $(seq $((${2:-30} * 10))); do
		curl -sf -o /dev/null -m 2 "$1" && return 0
		if [ -n "${3:-}" ] && proc_gone "$3"; then
			echo "no answer from $1: the server (PID $3) exited" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "no answer from $1" >&2
	return 1
}

# start_server NAME PATH SECONDS CMD...: starts a server (start_bg NAME) on
# a free port, {PORT} in CMD's arguments replaced by it, and waits until
# http://127.0.0.1:PORT/PATH answers; sets SERVER_PORT. A server that exits
# before it answers (another process took the port after free_port found it
# free) is tried again on another port, twice at most; its stderr is shown.
start_server() {
	local name=$1 path=$2 limit=$3 try a mark='{PORT}'
	local -a cmd
	shift 3
	for try in 1 2 3; do
		SERVER_PORT=$(free_port)
		cmd=()
		for a in "$@"; do
			cmd+=("${a//"$mark"/$SERVER_PORT}")
		done
		start_bg "$name" "${cmd[@]}"
		wait_http "http://127.0.0.1:$SERVER_PORT/$path" "$limit" "$BG_PID" && return 0
		echo "$name (try $try, port $SERVER_PORT), its stderr:" >&2
		cat "$BATS_TEST_TMPDIR/$name.err" >&2
		proc_gone "$BG_PID" || return 1
	done
	return 1
}

# start_prometheus NAME...: a Prometheus server (start_server prom) that
# scrapes every second what each tool started as NAME (start_bg, start_tool)
# serves: the URL its "serving metrics at" line on NAME.err gives; sets
# SERVER_PORT and PROM_API (its HTTP API's base URL)
start_prometheus() {
	local name url targets=
	command -v prometheus > /dev/null || skip "prometheus is not installed"
	for name; do
		wait_for "$BATS_TEST_TMPDIR/$name.err" 'serving metrics at' 30
		url=$(metrics_url "$BATS_TEST_TMPDIR/$name.err")
		[ -n "$url" ] || return 1
		url=${url#http://}
		targets+="${targets:+, }'${url%/metrics}'"
	done
	cat > "$BATS_TEST_TMPDIR/prometheus.yml" <<-EOF
	global:
	  scrape_interval: 1s
	  evaluation_interval: 1s
	scrape_configs:
	  - job_name: aiscope
	    static_configs:
	      - targets: [$targets]
	EOF
	! command -v promtool > /dev/null || promtool check config "$BATS_TEST_TMPDIR/prometheus.yml" > /dev/null
	start_server prom -/ready 60 prometheus --config.file="$BATS_TEST_TMPDIR/prometheus.yml" \
		--storage.tsdb.path="$BATS_TEST_TMPDIR/tsdb" --web.listen-address="127.0.0.1:{PORT}" \
		--log.level=warn || return 1
	PROM_API=http://127.0.0.1:$SERVER_PORT/api/v1
}

# npm_locked SRC NAME MARK: the npm packages of SRC (a folder of the tree with
# package.json and its package-lock.json) under $AISCOPE_BUILD/npm/NAME,
# installed once with npm ci (again when the lock changes; MARK, a path
# below node_modules, says they are there); sets NPM_MODULES
npm_locked() {
	local src=$BATS_TEST_DIRNAME/../$1 d=$AISCOPE_BUILD/npm/$2
	command -v node > /dev/null && command -v npm > /dev/null ||
		skip "node and npm are not installed (scripts/deps.sh installs them)"
	if ! cmp -s "$src/package-lock.json" "$d/package-lock.json" || [ ! -e "$d/node_modules/$3" ]; then
		rm -rf "$d"
		mkdir -p "$d"
		cp "$src/package.json" "$src/package-lock.json" "$d/"
		(cd "$d" && timeout 600 npm ci --no-audit --no-fund --loglevel=error) || {
			rm -rf "$d"
			echo "npm ci failed: the npm registry is needed once to install $1's packages" >&2
			return 1
		}
	fi
	NPM_MODULES=$d/node_modules
}

# free_port: a TCP port nothing listens on now
free_port() {
	local p i
	for i in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		ss -Htln "sport = :$p" | grep -q . || { echo "$p"; return 0; }
	done
	return 1
}

# start_bg NAME CMD...: runs CMD in the background with stdout in
# $BATS_TEST_TMPDIR/NAME.out and stderr in NAME.err; sets BG_PID
start_bg() {
	local name=$1
	shift
	# Emptied here, not by the child's redirections: a name used twice in a
	# test would otherwise still show the last run's "Tracing" line to
	# wait_for, and a signal sent before the new tool blocks it is lost.
	: > "$BATS_TEST_TMPDIR/$name.out"
	: > "$BATS_TEST_TMPDIR/$name.err"
	"$@" >> "$BATS_TEST_TMPDIR/$name.out" 2>> "$BATS_TEST_TMPDIR/$name.err" &
	BG_PID=$!
	TEST_PIDS+=("$BG_PID")
}

# start_ready NAME CMD...: start_bg, then waits for the helper's
# "ready PID" line; sets READY_PID
start_ready() {
	start_bg "$@"
	wait_for "$BATS_TEST_TMPDIR/$1.out" '^ready'
	READY_PID=$(awk '/^ready/ {print $2}' "$BATS_TEST_TMPDIR/$1.out")
}

# start_contend NAME THREADS CPU SPIN_MS: sets CONTEND_PID
start_contend() {
	local name=$1
	shift
	start_ready "$name" "$HELPERS/contend" "$@"
	CONTEND_PID=$READY_PID
}

# contend_round NAME PID N: starts round N and waits for its end
contend_round() {
	kill -USR1 "$2"
	wait_for "$BATS_TEST_TMPDIR/$1.out" "^done $3$" 30
}

# start_tool NAME TOOL ARGS...: starts a tool and waits until it is attached
# (its "Tracing" line on stderr); sets TOOL_PID
start_tool() {
	local name=$1 tool=$2
	shift 2
	start_bg "$name" "$BIN/$tool" "$@"
	TOOL_PID=$BG_PID
	case " $* " in
	*" -j "* | *" --json "*) schema_check "$BATS_TEST_TMPDIR/$name.out" ;;
	esac
	wait_for "$BATS_TEST_TMPDIR/$name.err" 'Tracing'
}

# stop_tool PID [SIGNAL]: signals the tool and returns its exit status
stop_tool() {
	local rc=0 i
	kill -"${2:-INT}" "$1"
	# a tool that ignores the signal is a failure, not a hung suite
	for ((i = 0; i < 300; i++)); do
		proc_gone "$1" && break
		sleep 0.1
	done
	if ! proc_gone "$1"; then
		echo "stop_tool: PID $1 still runs 30 s after SIG${2:-INT}" >&2
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		return 124
	fi
	wait "$1" || rc=$?
	return $rc
}

# wall_ms CMD...: runs CMD (stdout and stderr to $BATS_TEST_TMPDIR/wall.out
# and wall.err), then prints its wall time from exec to exit in ms; fails
# when CMD does
wall_ms() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" > "$BATS_TEST_TMPDIR/wall.out" 2> "$BATS_TEST_TMPDIR/wall.err" || return
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}

# sigint_ms PID: sends SIGINT to PID, a child of this shell (start_bg),
# and sets SIGINT_MS to the ms until wait returns (no polling: its forks
# would add their own time on a loaded host); killed after 30 s. Not to be
# called in $(...), whose subshell cannot wait for this shell's child.
sigint_ms() {
	local t0 t1 guard
	( sleep 30; kill -KILL "$1" ) > /dev/null 2>&1 &
	guard=$!
	t0=$(date +%s%N)
	kill -INT "$1"
	wait "$1" 2>/dev/null
	t1=$(date +%s%N)
	kill "$guard" 2>/dev/null
	SIGINT_MS=$(((t1 - t0) / 1000000))
}

# link_fds PID TYPES: how many BPF links of TYPES (an ERE of fdinfo's link_type:
# uprobe_multi, perf_event, raw_tracepoint...) PID holds
link_fds() {
	grep -lxE "link_type:[[:space:]]*($2)" /proc/"$1"/fdinfo/* 2>/dev/null | wc -l
}

# perf_fds PID: how many perf event fds PID holds (a single uprobe is one)
perf_fds() {
	find /proc/"$1"/fd -lname 'anon_inode:\[perf_event\]' 2>/dev/null | wc -l
}

# need_uprobe_multi: skips unless the kernel has uprobe_multi links (its BTF
# has their link type), so that a tool that does not use them fails
need_uprobe_multi() {
	bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null |
		grep -q "STRUCT 'bpf_uprobe_multi_link'" || skip "no uprobe_multi links in this kernel"
}

# proc_gone PID: the process exited (a zombie not yet reaped counts as gone)
proc_gone() {
	local st
	st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 0
	[ -z "$st" ] || [ "$st" = Z ]
}

# sum_task_field PID FILE REGEX FIELD: sums a per-thread figure over
# /proc/PID/task: FIELD of the line of each thread's FILE that REGEX matches
sum_task_field() {
	cat /proc/"$1"/task/*/"$2" | awk -v re="$3" -v f="$4" '$0 ~ re {s += $f} END {printf "%.0f\n", s}'
}

# the kernel's run_delay (ns), nonvoluntary switches and migrations of PID
sum_run_delay() {
	sum_task_field "$1" schedstat '' 2
}

sum_nivcsw() {
	sum_task_field "$1" status '^nonvoluntary_ctxt_switches' 2
}

sum_migrations() {
	sum_task_field "$1" sched '^se.nr_migrations' 3
}

# contend_measured NAME: two rounds of contend NAME ($CONTEND_PID), with the
# kernel's figures around them: sets RUN_DELAY, the run_delay delta (ns),
# and NIVCSW, the nonvoluntary_ctxt_switches delta
contend_measured() {
	local before nb
	before=$(sum_run_delay "$CONTEND_PID")
	nb=$(sum_nivcsw "$CONTEND_PID")
	contend_round "$1" "$CONTEND_PID" 1
	contend_round "$1" "$CONTEND_PID" 2
	RUN_DELAY=$(($(sum_run_delay "$CONTEND_PID") - before))
	NIVCSW=$(($(sum_nivcsw "$CONTEND_PID") - nb))
}

# within PCT A B: |A - B| <= PCT% of B
within() {
	awk -v p="$1" -v a="$2" -v b="$3" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		if (b == 0 ? a != 0 : d > b * p / 100) {
			printf "%s is not within %s%% of %s\n", a, p, b > "/dev/stderr"; exit 1 }
	}'
}

# ---- hostile names ----

# A comm with a newline, ESC (a colour escape), a raw C1 byte (0x9b, CSI)
# and a byte that is not UTF-8: HOSTILE_NAME. hostile_exe TARGET: a link of
# that name to the executable TARGET in the test's directory, HOSTILE_EXE;
# run through it, a process is named after the link (exec takes the comm
# from the path it was given), whatever the program does.
HOSTILE_NAME=$'h\nx\e[31m\x9b\xffz'
# what every table shows for it (lib/text), and what JSON holds
HOSTILE_SHOWN='h?x?[31m??z'
HOSTILE_JSON=$'h\nx\e[31m\ufffd\ufffdz'
hostile_exe() {
	HOSTILE_EXE=$BATS_TEST_TMPDIR/$HOSTILE_NAME
	ln -sfn "$1" "$HOSTILE_EXE"
}

# check_sanitised FILE: the table in FILE shows the hostile name as
# HOSTILE_SHOWN, on a row of its own, and holds none of its bytes raw (no
# ESC, no C1 byte, nothing that is not UTF-8)
check_sanitised() {
	if ! grep -qF -- "$HOSTILE_SHOWN" "$1"; then
		echo "no '$HOSTILE_SHOWN' in $1:" >&2
		cat -v "$1" >&2
		return 1
	fi
	# a raw C1 byte is no UTF-8 either: iconv finds it
	if LC_ALL=C grep -q $'\e' "$1"; then
		echo "raw ESC in $1:" >&2
		cat -v "$1" >&2
		return 1
	fi
	iconv -f UTF-8 -t UTF-8 "$1" > /dev/null || { echo "$1 is not UTF-8" >&2; return 1; }
}

# map_id PID NAME: the id of the BPF map NAME that process PID holds (by its
# fds: another checkout's tool on this host has maps of the same names)
map_id() {
	local f m
	for f in /proc/"$1"/fdinfo/*; do
		m=$(awk '/^map_id:/ {print $2}' "$f" 2>/dev/null)
		[ -n "$m" ] || continue
		bpftool map show id "$m" | grep -q " name $2 " && { echo "$m"; return 0; }
	done
	return 1
}

# map_entries PID NAME: how many entries the BPF map NAME of process PID
# holds (fails when PID has no such map)
map_entries() {
	local id
	id=$(map_id "$1" "$2")
	[ -n "$id" ] || return 1
	bpftool map dump id "$id" | grep -c '"key"' || true
}

# every line of FILE is valid JSON (and, at teardown, valid against its
# tool's schema: schema_check)
all_json() {
	local n
	n=$(wc -l < "$1")
	[ "$n" -gt 0 ] || { echo "no output in $1" >&2; return 1; }
	jq -e -c . "$1" > /dev/null || { echo "invalid JSON in $1:" >&2; cat "$1" >&2; return 1; }
	[ "$(jq -c . "$1" | wc -l)" -eq "$n" ] || { echo "not one object per line" >&2; return 1; }
	schema_check "$1"
}

# ---- the JSON Schemas (docs/schema/): every --json line a test gets from a
# tool, through all_json or start_tool ... -j, is checked with ajv
# (tests/schema/validate.js) when the test ends, and an invalid line fails
# the test that produced it ----

SCHEMA_TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
SCHEMA_NPM=$AISCOPE_BUILD/npm/schema-check
SCHEMA_FILES=()

# schema_check FILE: FILE holds a tool's --json lines, to check at teardown
schema_check() {
	SCHEMA_FILES+=("$1")
}

# bats' run, and then the same check of what a tool printed with -j or
# --json: `run "$BIN/TOOL" ... -j` (also through $BIN/aiscope TOOL) keeps
# its output's JSON lines (those that start with "{": stderr, merged into
# $output unless --separate-stderr, is plain text) for schema_check
if declare -F run > /dev/null && ! declare -F bats_run_unchecked > /dev/null; then
	eval "$(declare -f run | sed '1s/^run /bats_run_unchecked /')"
	run() {
		local rc=0
		bats_run_unchecked "$@" || rc=$?
		schema_run_output "$@"
		return $rc
	}
fi

# schema_run_output RUN-ARGS...: the JSON lines of $output, for the check
# at teardown, when RUN-ARGS ran one of the tools with -j or --json
schema_run_output() {
	local a json=0 f
	while [ $# -gt 0 ]; do
		case $1 in
		'!' | -[0-9]* | --keep-empty-lines | --separate-stderr) shift ;;
		--) shift; break ;;
		*) break ;;
		esac
	done
	[ $# -gt 0 ] && [[ $1 == "$BIN"/* ]] || return 0
	for a in "$@"; do
		case $a in -j | --json) json=1 ;; esac
	done
	[ $json = 1 ] || return 0
	f=$(mktemp "$BATS_TEST_TMPDIR/run-json.XXXXXX") || return 0
	printf '%s\n' "$output" | grep '^{' > "$f" || true
	schema_check "$f"
}

# schema_install: ajv, as tests/schema/package-lock.json pins it, in
# $SCHEMA_NPM (scripts/deps.sh installs it; this is for a build directory
# made without it). Fails without npm or the registry.
schema_install() {
	local lock=$SCHEMA_TOP/tests/schema/package-lock.json
	if [ -e "$SCHEMA_NPM/node_modules/ajv/package.json" ] && cmp -s "$lock" "$SCHEMA_NPM/package-lock.json"; then
		return 0
	fi
	command -v npm > /dev/null || return 1
	mkdir -p "$SCHEMA_NPM" || return 1
	# one install at a time: suites may run side by side
	flock "$SCHEMA_NPM.lock" sh -c '
		cmp -s "$1/package-lock.json" "$2/package-lock.json" && [ -e "$2/node_modules/ajv/package.json" ] && exit 0
		cp "$1/package.json" "$1/package-lock.json" "$2/" &&
		cd "$2" && timeout 600 npm ci --no-audit --no-fund --loglevel=error' sh "$SCHEMA_TOP/tests/schema" "$SCHEMA_NPM"
}

# schema_validate FILE...: every line valid against its tool's schema; the
# invalid ones, and why, on stderr
schema_validate() {
	local out rc=0
	out=$(NODE_PATH=$SCHEMA_NPM/node_modules node "$SCHEMA_TOP/tests/schema/validate.js" \
		"$SCHEMA_TOP/docs/schema" "$@" 2>&1) || rc=$?
	[ $rc -eq 0 ] || echo "$out" >&2
	return $rc
}

# the check of the files a test named; without node and npm (a host that
# cannot install ajv) only tests/schema.bats reports it
schema_teardown() {
	local f files=()
	[ ${#SCHEMA_FILES[@]} -gt 0 ] || return 0
	# each once: start_tool and all_json may name the same file
	while IFS= read -r -d '' f; do
		[ -s "$f" ] && files+=("$f")
	done < <(printf '%s\0' "${SCHEMA_FILES[@]}" | sort -z -u)
	SCHEMA_FILES=()
	[ ${#files[@]} -gt 0 ] || return 0
	if ! schema_install; then
		command -v npm > /dev/null && { echo "cannot install ajv (tests/schema) into $SCHEMA_NPM" >&2; return 1; }
		return 0
	fi
	schema_validate "${files[@]}" || { echo "lines not valid against docs/schema/ (above)" >&2; return 1; }
}

# make_cgroup DIR: creates a cgroup directory, removed in teardown
make_cgroup() {
	mkdir -p "$1"
	TEST_CGROUPS+=("$1")
}

# move_to_cgroup DIR PID: the whole process, thread by thread for v1
move_to_cgroup() {
	local t
	if [ -e "$1/cgroup.threads" ] || [ "$(stat -f -c %T "$1")" = cgroup2fs ]; then
		echo "$2" > "$1/cgroup.procs"
	else
		for t in /proc/"$2"/task/*; do
			echo "${t##*/}" > "$1/tasks"
		done
	fi
}

# the Debian CUDA fixture libraries' directory (scripts/fixtures.sh)
fixture_dir() {
	local arch
	arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
	echo "$AISCOPE_BUILD/fixtures/$arch/lib"
}

# need_debian: the Debian libcudart 11.8 and libcuda 535 fixtures; sets FIX
need_debian() {
	FIX=$(fixture_dir)
	[ -e "$FIX/libcudart.so.11.0" ] && [ -e "$FIX/libcuda.so.1" ] ||
		skip "no Debian CUDA fixtures (scripts/fixtures.sh)"
}

# the CUDA 13 runtime, and the nvcc-built test kernels (tests/cuda/kern.cu)
CUDA13=${CUDA13_LIB:-/usr/local/cuda/lib64/libcudart.so.13}

need_cuda13() {
	[ -e "$CUDA13" ] || skip "no CUDA 13 runtime at $CUDA13"
}

need_nvcc_kernels() {
	[ -x "$AISCOPE_BUILD/tests/cuda/kern_shared" ] || skip "no nvcc: kernels not built"
	need_cuda13
}

# cgroup2_root: the first cgroup2 mount point (the unified hierarchy);
# fails when there is none
cgroup2_root() {
	awk '$3 == "cgroup2" {print $2; found = 1; exit} END {exit !found}' /proc/mounts
}

random_hex64() {
	od -An -N32 -tx1 /dev/urandom | tr -d ' \n'
}

# disk_dir: a new directory on a file system with a real page cache
# (tmpfs and ramfs pages never leave memory), removed by the teardown;
# sets DISK_DIR
disk_dir() {
	local base t name=${BATS_TEST_FILENAME##*/}
	for base in "$BATS_TEST_TMPDIR" /var/tmp "$BATS_TEST_DIRNAME/.."; do
		t=$(stat -f -c %T "$base" 2>/dev/null) || continue
		case $t in tmpfs|ramfs|overlayfs|nfs*|fuse*) continue ;; esac
		DISK_DIR=$(mktemp -d "$base/aiscope-${name%.bats}.XXXXXX") || continue
		TEST_DIRS+=("$DISK_DIR")
		return 0
	done
	skip "no disk file system for the test file"
}

# make_docker_cgroup: the cgroup of a fake docker container, made under the
# cgroup2 mount (the test skipped where there is none) and removed by the
# teardown: sets CG_ROOT (the mount), CID (its 64-hex id) and CG (its path)
make_docker_cgroup() {
	CG_ROOT=$(cgroup2_root) || skip "no cgroup2 mount"
	CID=$(random_hex64)
	CG=$CG_ROOT/docker-$CID.scope
	make_cgroup "$CG"
}

# make_test_cgroup NAME: likewise a cgroup NAME-PID of this test's own:
# sets CG_ROOT and CG
make_test_cgroup() {
	CG_ROOT=$(cgroup2_root) || skip "no cgroup2 mount"
	CG=$CG_ROOT/$1-$$
	make_cgroup "$CG"
}

aiscope_teardown() {
	local p d root i
	for p in "${TEST_PIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${TEST_PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	# children before their parents: the reverse of creation
	for ((i = ${#TEST_CGROUPS[@]} - 1; i >= 0; i--)); do
		d=${TEST_CGROUPS[i]}
		[ -d "$d" ] || continue
		root=${d%/*}
		while read -r p; do
			echo "$p" > "$root/cgroup.procs" 2>/dev/null
		done < "$d/cgroup.procs"
		rmdir "$d" 2>/dev/null || sleep 0.2
		rmdir "$d" 2>/dev/null
	done
	for d in "${TEST_DIRS[@]}"; do
		rm -rf "$d"
	done
	TEST_PIDS=()
	TEST_CGROUPS=()
	TEST_DIRS=()
	schema_teardown
}

# ---- fake cgroup trees: v2 reading without a v2 memory controller (oomwatch
# reads them under OOMWATCH_SYSROOT) ----

# fake_v2 DIR: a cgroup2 host at DIR/sys/fs/cgroup with three containers,
# FAKE_OK (10% of its limit), FAKE_WARN (87.89% working set) and FAKE_CRIT
# (99.02%)
fake_v2() {
	local t=$1
	mkdir -p "$t/proc/self" "$t/proc/pressure" "$t/sys/fs/cgroup/system.slice"
	echo "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate" \
		> "$t/proc/self/mountinfo"
	printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n' \
		> "$t/proc/pressure/memory"
	echo "cpu memory" > "$t/sys/fs/cgroup/cgroup.controllers"
	FAKE_OK=$(random_hex64) FAKE_WARN=$(random_hex64) FAKE_CRIT=$(random_hex64)
	# name current max inactive_file
	fake_v2_cg "$t" "docker-$FAKE_OK.scope" 104857600 1073741824 0
	fake_v2_cg "$t" "docker-$FAKE_WARN.scope" 996147200 1073741824 52428800
	fake_v2_cg "$t" "docker-$FAKE_CRIT.scope" 1063256064 1073741824 0
}

# fake_v2_cg DIR NAME CURRENT MAX INACTIVE_FILE [MAX_EVENTS OOMS OOM_KILLS
# PSI_AVG10]: a cgroup's files under DIR's system.slice, made or rewritten;
# memory.events and memory.pressure default to max 3, no OOM, no pressure
fake_v2_cg() {
	local d=$1/sys/fs/cgroup/system.slice/$2 psi=${9:-0.00}
	mkdir -p "$d"
	echo "$3" > "$d/memory.current"
	echo "$4" > "$d/memory.max"
	printf 'anon %s\nfile 0\nactive_file 0\ninactive_file %s\n' "$3" "$5" > "$d/memory.stat"
	printf 'low 0\nhigh 0\nmax %s\noom %s\noom_kill %s\noom_group_kill 0\n' "${6:-3}" "${7:-0}" "${8:-0}" \
		> "$d/memory.events"
	printf 'some avg10=%s avg60=0.00 avg300=0.00 total=0\nfull avg10=%s avg60=0.00 avg300=0.00 total=0\n' \
		"$psi" "$psi" > "$d/memory.pressure"
}

# ncl_truth_json DRVOUT [arguments]: ncclrank's truth lines as JSON objects,
# each with the communicator_id the tool must report for it: NCCL's commHash
# read from the communicator, or with "arguments" (a library nclstat cannot
# read) its own hash of the unique id
ncl_truth_json() {
	awk -v from="${2:-memory}" '
	from == "memory" && $1 == "comm_hash" { main = $2 }
	from == "memory" && $1 == "split_comm_hash" { sh[$2] = $3 }
	from == "arguments" && $1 == "id_hash" { main = $2 }
	from == "arguments" && $1 == "split_hash" { sh[$2] = $3 }
	$1 == "truth" {
		for (i = 2; i <= NF; i++) { n = index($i, "="); v[substr($i, 1, n - 1)] = substr($i, n + 1) }
		h = v["comm"] == "main" ? main : sh[v["rank"] % 2]
		printf "{\"rank\":%d,\"pid\":%d,\"comm\":\"%s\",\"op\":\"%s\",\"calls\":%d,\"bytes\":%d,\"hash\":\"%s\"}\n",
			v["rank"], v["pid"], v["comm"], v["op"], v["calls"], v["bytes"], h
	}' "$1"
}

# ncl_check_truth DRVOUT TOOLOUT [arguments]: for every (rank, communicator,
# op) the driver did, the tool's calls and bytes summed over its intervals
# are exactly the driver's
ncl_check_truth() {
	ncl_truth_json "$1" "${3:-memory}" > "$BATS_TEST_TMPDIR/truth.json"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/truth.json")" -eq 32 ]
	jq -n -e --slurpfile t "$BATS_TEST_TMPDIR/truth.json" --slurpfile o "$2" '
		[$o[] | select(.type == "sample" and .row == "op")] as $rows |
		all($t[]; . as $x |
			[$rows[] | select(.pid == $x.pid and .nccl_op == $x.op and .communicator_id == $x.hash)] as $m |
			(($m | map(.calls) | add) == $x.calls and ($m | map(.bytes) | add) == $x.bytes) or
			(("mismatch: " + ($x | tojson) + " tool: " + ($m | map({calls, bytes}) | tojson)) | debug | false))'
}

# make_sysroot: a sysfs and driver tree for numaplace (AISCOPE_SYSROOT=$R):
# GPU 0 at 0000:3b:00.0 on node 1, GPU 1 at
# 0000:af:00.0 on node 0, uverbs0 (mlx5_0) at 0000:17:00.0 on node 0
make_sysroot() {
	R=$(realpath "$BATS_TEST_TMPDIR")/root
	mkdir -p "$R/dev/infiniband" "$R/proc/driver/nvidia/gpus/0000:3b:00.0" \
		"$R/proc/driver/nvidia/gpus/0000:af:00.0" "$R/sys/bus/pci/devices/0000:3b:00.0" \
		"$R/sys/bus/pci/devices/0000:af:00.0" "$R/sys/devices/pci0000:00/0000:17:00.0" \
		"$R/sys/class/infiniband_verbs/uverbs0"
	: > "$R/dev/nvidia0"
	: > "$R/dev/nvidia1"
	: > "$R/dev/nvidiactl"
	: > "$R/dev/infiniband/uverbs0"
	printf 'Model: A\nDevice Minor: 0\n' > "$R/proc/driver/nvidia/gpus/0000:3b:00.0/information"
	printf 'Model: A\nDevice Minor: 1\n' > "$R/proc/driver/nvidia/gpus/0000:af:00.0/information"
	echo 1 > "$R/sys/bus/pci/devices/0000:3b:00.0/numa_node"
	echo 0 > "$R/sys/bus/pci/devices/0000:af:00.0/numa_node"
	echo 0 > "$R/sys/devices/pci0000:00/0000:17:00.0/numa_node"
	echo mlx5_0 > "$R/sys/class/infiniband_verbs/uverbs0/ibdev"
	ln -s ../../../devices/pci0000:00/0000:17:00.0 "$R/sys/class/infiniband_verbs/uverbs0/device"
}
