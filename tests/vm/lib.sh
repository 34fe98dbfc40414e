# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Helpers for the tests that run inside the VMs (busybox sh: POSIX sh, busybox
# awk/grep/sed; no bash, jq or bats). Sourced by tests/vm/run.sh.
#
# A test is a shell function run by run_test in a subshell with its output
# in $T/log; it returns 0 (pass), 77 (skip: reason in $T/skip) or anything
# else (fail). Its log is printed as TAP diagnostics ("#   ...") either way,
# so the numbers compared are in the serial log. Processes it starts with
# bg are ended after it.

H=/opt/aiscope/helpers
T=/tmp/t
N=0
FAILED=0

# The kernel-log guard: what the kernel logs while a test runs is read
# after it (and cleared: busybox dmesg -c; all of it is kept in
# $KMSG_ALL), and a line that says a CPU was stuck or the kernel broke
# fails the test, with the lines from there in its diagnostics. The
# console shows only emergencies (printk level 1, tests/vm/init): an RCU
# stall or a hung task would otherwise pass unseen, and a soft lockup
# would show only as a test that timed out. A tool that can wedge a CPU is
# the worst bug it can have.
KMSG_ALL=/tmp/kmsg.all
KMSG_BAD='soft lockup|hard LOCKUP|self-detected stall|detected stall|rcu_(sched|preempt|bh) kthread starved|blocked for more than [0-9]+ seconds|BUG: |Oops|kernel BUG at|general protection fault|WARNING: CPU: [0-9]+ PID: [0-9]+ at '

# kmsg_take FILE: the kernel log since the last call, into FILE
kmsg_take() {
	dmesg -c > "$1" 2>/dev/null || dmesg > "$1"
	cat "$1" >> "$KMSG_ALL"
}

# kmsg_trouble FILE: the lines of FILE from the first bad one (40 at
# most); fails when there is none
kmsg_trouble() {
	_l=$(grep -nE "$KMSG_BAD" "$1" | head -1 | cut -d: -f1)
	[ -n "$_l" ] || return 1
	sed -n "${_l},$((_l + 39))p" "$1"
}

# what the boot logged is no test's
kmsg_take /tmp/kmsg.boot

# run_test NAME LIMIT_S FUNC [ARGS...]
run_test() {
	_name=$1 _lim=$2
	shift 2
	# aiscope.only=REGEX (VM_APPEND): the tests whose function matches
	# it, while working on one; the rest are not run, and said so
	if [ -n "$ONLY" ] && ! echo "$1" | grep -Eqx "$ONLY"; then
		NOT_RUN=$((NOT_RUN + 1)) _rc=2
		echo "# not run (aiscope.only=$ONLY): $_name"
		return 0
	fi
	_try=1 _first= _tstart=$(date +%s)
	while :; do
		run_once "$@"
		# 75: the kernel skipped runs of a program and the tool counted
		# them (skipped_runs_retry): exactness cannot be judged on that
		# run, so it is run again, twice at most, and said
		if [ $_rc -eq 75 ] && [ $_try -lt 3 ]; then
			echo "#   run $_try of this test: $(cat "$T/retry" 2>/dev/null); run again"
			_try=$((_try + 1))
			continue
		fi
		# a failure is run once more (VM_RERUN=0: never): these guests
		# are emulated on a shared machine, and a test whose timing
		# the host's load upset once must not fail the matrix; one that
		# fails twice fails, and one that passes the second time says
		# so on its line and the matrix counts it (run-matrix.sh), with
		# the first run's log above it
		case $_rc in 0|77|75) break ;; esac
		[ -z "$_first" ] && [ "$VM_RERUN" != 0 ] || break
		_first="exit $_rc after $(($(date +%s) - _tstart)) s"
		echo "#   FAILED on its first run ($_first): run once more"
		_try=1
	done
	[ $_rc -eq 75 ] && _rc=1
	N=$((N + 1))
	if [ $_rc -eq 0 ] && [ -n "$_first" ]; then
		echo "ok $N - $_name ($(($(date +%s) - _tstart)) s; passed on a second run, the first failed: $_first)"
	elif [ $_rc -eq 0 ]; then
		echo "ok $N - $_name ($(($(date +%s) - _t0)) s)"
	elif [ $_rc -eq 77 ]; then
		echo "ok $N - $_name # skip $(cat "$T/skip" 2>/dev/null)"
	else
		FAILED=$((FAILED + 1))
		echo "not ok $N - $_name (exit $_rc, $(($(date +%s) - _t0)) s)"
	fi
}

# run_once FUNC [ARGS...]: one run of a test, its exit status in _rc
run_once() {
	rm -rf "$T"
	mkdir -p "$T"
	: > "$T/pids"
	_t0=$(date +%s)
	( "$@" ) > "$T/log" 2>&1 &
	_tp=$!
	( sleep "$_lim"; echo "timed out after ${_lim}s" >> "$T/log"; kill -KILL "$_tp" ) 2>/dev/null &
	_wd=$!
	wait "$_tp"
	_rc=$?
	kill "$_wd" 2>/dev/null
	wait "$_wd" 2>/dev/null
	for _p in $(cat "$T/pids"); do kill -TERM "$_p" 2>/dev/null; done
	sleep 0.2
	for _p in $(cat "$T/pids"); do kill -KILL "$_p" 2>/dev/null; done
	# its log: the first 40 lines and the last 40 (a failure is said at
	# the end), what is between counted
	awk 'NR <= 40 {print "#   " $0; next} {tail[NR % 40] = $0}
	     END {if (NR > 80) print "#   (" NR - 80 " lines of its log left out)"
		  for (i = (NR > 80 ? NR - 39 : 41); i <= NR; i++) print "#   " tail[i % 40]}' "$T/log"
	# the JSON of the run that counts (retried runs' numbers would clash)
	[ $_rc -eq 75 ] || json_out $((N + 1))
	kmsg_take "$T/kmsg"
	if kmsg_trouble "$T/kmsg" > "$T/kmsg.bad"; then
		echo "#   FAIL: the kernel logged a stuck CPU or a fault while the test ran:"
		sed 's/^/#   kernel: /' "$T/kmsg.bad"
		[ $_rc -ne 0 ] && [ $_rc -ne 77 ] || _rc=1
	fi
}

# plan_chosen HOOK FILE: the mechanism chosen for HOOK in a --list-probes
# plan, on whichever of its rows
plan_chosen() {
	awk -v h="$1" '/^[^ ]/ {cur = $1; m = $2} /^ / {m = $1} cur == h && / chosen( as |$)/ {print m}' "$2"
}

# skipped_where_preemptible PROGS SUMMARY_LINE PLAN: where the kernel
# skipped runs (PROGS as below) of a mechanism that --probe-mode forced and
# that the tool's own plan (PLAN, its --list-probes without --probe-mode)
# passes over because its programs run preemptibly here, the loss must be
# counted; exactness cannot be judged on any run of it, so the test is a
# skip that says so. Else it returns (skipped_runs_retry next).
skipped_where_preemptible() {
	_k=$(awk '{ s += $8 } END { print s + 0 }' "$1")
	[ "$_k" -gt 0 ] && grep -q 'preemptible here' "$3" || return 0
	_l=$(echo "$2" | sed -n 's/.*"lost_events":\([0-9]*\).*/\1/p')
	[ "${_l:-0}" -ge "$_k" ] ||
		fail "the kernel skipped $_k runs, the tool reported ${_l:-no} lost events: $2"
	skip_test "its programs run preemptibly here: the kernel skipped $_k runs, reported as $_l lost events; without --probe-mode the classic tracepoint is chosen"
}

# skipped_runs_retry PROGS SUMMARY_LINE: where a preemptible hook made the
# kernel skip runs of a program (bpf_prog_info.recursion_misses in PROGS,
# $H/bpfprogs's lines taken before the tool ended: its run on this CPU was
# preempted, and another task's was not run), the tool must have counted
# them in its lost events (at least those: PROGS is read before the tool
# ends, so runs skipped after it count too); then the run is retried (exit
# 75), else a loss went unreported and the test fails. No skipped run:
# returns.
skipped_runs_retry() {
	_k=$(awk '{ s += $8 } END { print s + 0 }' "$1")
	[ "$_k" -gt 0 ] || return 0
	_l=$(echo "$2" | sed -n 's/.*"lost_events":\([0-9]*\).*/\1/p')
	[ "${_l:-0}" -ge "$_k" ] ||
		fail "the kernel skipped $_k runs, the tool reported ${_l:-no} lost events: $2"
	echo "the kernel skipped $_k runs (recursion_misses), reported as $_l lost events" > "$T/retry"
	exit 75
}

# The depth of this run: aiscope.depth= on the kernel command line
# (scripts/vm/run-matrix.sh: VM_DEPTH, VM_FULL). "full" runs every test;
# "default" runs, of each group of run_in tests (the same question asked
# through each mechanism the tool has for it, in the order of its plan),
# those up to the first that passes: the mechanism this kernel gives the
# tool by default. The rest are not run, counted in NOT_RUN and named in a
# diagnostic line, never reported as passed or skipped.
DEPTH=$(sed -n 's/.*aiscope\.depth=\([a-z]*\).*/\1/p' /proc/cmdline)
DEPTH=${DEPTH:-full}
VM_RERUN=$(sed -n 's/.*aiscope\.rerun=\([0-9]*\).*/\1/p' /proc/cmdline)
VM_RERUN=${VM_RERUN:-1}
ONLY=$(sed -n 's/.*aiscope\.only=\([^ ]*\).*/\1/p' /proc/cmdline)
NOT_RUN=0
PASSED_GROUPS=" "

# run_in GROUP NAME LIMIT FUNC [ARGS...]: run_test NAME ... as one of
# GROUP's mechanisms
run_in() {
	_g=$1
	shift
	case "$DEPTH:$PASSED_GROUPS" in
	"default:"*" $_g "*)
		NOT_RUN=$((NOT_RUN + 1))
		echo "# not run at the default depth (an earlier mechanism of $_g passed): $1"
		return 0 ;;
	esac
	run_test "$@"
	[ "$_rc" -eq 0 ] && PASSED_GROUPS="$PASSED_GROUPS$_g "
	return 0
}

# json_out NUM: the JSON lines the tools of test NUM wrote into $T, gzipped and
# in base64 on the console between markers with the archive's md5, for
# scripts/vm/run-matrix.sh to check against docs/schema/ on the host (no
# node here); the test's log is not among them (it may quote lines)
json_out() {
	for _f in "$T"/*; do
		[ "$_f" = "$T/log" ] || grep -h '^{"type":' "$_f" 2> /dev/null
	done > /tmp/t.json
	[ -s /tmp/t.json ] || return 0
	gzip -c /tmp/t.json > /tmp/t.json.gz
	echo "AISCOPE-VM-JSON-BEGIN $1 $(wc -l < /tmp/t.json)"
	base64 /tmp/t.json.gz | sed 's/^/AISCOPE-VM-J /'
	echo "AISCOPE-VM-JSON-END $1 $(md5sum < /tmp/t.json.gz | cut -d' ' -f1)"
	rm -f /tmp/t.json /tmp/t.json.gz
}

skip_test() {
	echo "$*" > "$T/skip"
	exit 77
}

fail() {
	echo "FAIL: $*"
	exit 1
}

# exits_77 OUT WHAT CMD...: runs CMD, a tool that cannot attach here, with
# its output in OUT and the log; fails unless it exited 77 (WHAT: the case)
exits_77() {
	_o=$1
	_w=$2
	shift 2
	"$@" > "$_o" 2>&1
	_rc=$?
	cat "$_o"
	[ $_rc -eq 77 ] || fail "$_w: exit $_rc, not 77"
}

# bg NAME CMD...: CMD in the background, stdout in $T/NAME.out, stderr in
# $T/NAME.err; sets BG
bg() {
	_n=$1
	shift
	"$@" > "$T/$_n.out" 2> "$T/$_n.err" &
	BG=$!
	echo "$BG" >> "$T/pids"
}

# wait_for FILE PATTERN [SECONDS]
wait_for() {
	_i=0
	while ! grep -q -- "$2" "$1" 2>/dev/null; do
		sleep 0.1
		_i=$((_i + 1))
		if [ $_i -ge $((${3:-30} * 10)) ]; then
			echo "timed out waiting for '$2' in $1:"
			cat "$1"
			return 1
		fi
	done
}

# start_ready NAME HELPER ARGS...: a helper that says "ready PID" once set
# up, started as NAME and waited for; sets READY_PID
start_ready() {
	_r=$1
	_p=$2
	shift 2
	bg "$_r" "$H/$_p" "$@"
	wait_for "$T/$_r.out" '^ready' || fail "$_p did not start"
	READY_PID=$(awk '/^ready/ {print $2}' "$T/$_r.out")
}

# start_contend NAME THREADS CPU SPIN_MS: sets CONTEND_PID
start_contend() {
	_c=$1
	shift
	start_ready "$_c" contend "$@"
	CONTEND_PID=$READY_PID
}

# contend_round NAME PID N: starts round N and waits for its end
contend_round() {
	kill -USR1 "$2"
	wait_for "$T/$1.out" "^done $3\$" 60 || fail "round $3 did not end"
}

# start_tool NAME TOOL ARGS...: starts a tool and waits until it is attached
# (its "Tracing" line on stderr); sets TOOL_PID. When it ends or hangs
# instead, its output and the end of its -v output (the verifier log) go to
# the test's log, and the test fails.
start_tool() {
	_n=$1
	shift
	bg "$_n" "$@"
	TOOL_PID=$BG
	_i=0
	while ! grep -q Tracing "$T/$_n.err" 2>/dev/null; do
		if ! kill -0 "$TOOL_PID" 2>/dev/null || [ $_i -ge 600 ]; then
			wait "$TOOL_PID"
			_rc=$?
			echo "$* did not attach (exit $_rc):"
			cat "$T/$_n.err" "$T/$_n.out"
			# a helper this kernel lacks (the tool tried the load and
			# says so in one line, exit 77): a skip naming it, so that
			# docs/KERNELS.md lists it among the tests that did not pass
			if [ $_rc -eq 77 ] && grep -q "this kernel's BPF lacks " "$T/$_n.err"; then
				skip_test "$(grep -m1 "this kernel's BPF lacks " "$T/$_n.err" | sed 's/^[a-z]*: //')"
			fi
			echo "---- the same with -v (last 40 lines):"
			timeout 60 "$@" -v -d 1 2>&1 | tail -40
			fail "$* did not attach"
		fi
		sleep 0.1
		_i=$((_i + 1))
	done
}

# stop_tool PID [SIGNAL]: signals the tool and returns its exit status
stop_tool() {
	kill -"${2:-INT}" "$1"
	wait "$1"
}

sum_run_delay() {
	cat /proc/"$1"/task/*/schedstat | awk '{s += $2} END {print s + 0}'
}

sum_nivcsw() {
	cat /proc/"$1"/task/*/status | awk '/^nonvoluntary_ctxt_switches/ {s += $2} END {print s + 0}'
}

sum_migrations() {
	cat /proc/"$1"/task/*/sched | awk '/^se.nr_migrations/ {s += $3} END {print s + 0}'
}

# within PCT A B: |A - B| <= PCT% of B
within() {
	awk -v p="$1" -v a="$2" -v b="$3" 'BEGIN {
		d = a - b; if (d < 0) d = -d
		if (b == 0 ? a != 0 : d > b * p / 100) {
			printf "%s is not within %s%% of %s\n", a, p, b; exit 1 }
	}'
}

# JSON lines (compact, as the tools print them), without jq:
# jsel FILE PATTERN...: the lines containing every PATTERN (fixed strings)
jsel() {
	_f=$1
	shift
	awk -v pats="$(printf '%s\001' "$@")" 'BEGIN { n = split(pats, p, "\001") - 1 }
		{ for (i = 1; i <= n; i++) if (index($0, p[i]) == 0) next; print }' "$_f"
}

# jval KEY: the value of KEY on each stdin line that has it (numbers, null,
# true/false, or strings without their quotes)
jval() {
	sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p" | sed 's/^"\(.*\)"$/\1/'
}

# jsum KEY: the sum of jval KEY over stdin
jsum() {
	jval "$1" | awk '{s += $1} END {printf "%.0f\n", s}'
}

# json_ok FILE: non-empty, and every line one object (a shallow check)
json_ok() {
	[ -s "$1" ] || fail "no output in $1"
	_bad=$(grep -cv '^{".*}$' "$1")
	[ "$_bad" -eq 0 ] || { grep -v '^{".*}$' "$1" | head -5; fail "$_bad lines of $1 are not JSON objects"; }
}

# page_size: the running kernel's page size in bytes (busybox has no
# getconf; every mapping's KernelPageSize is the base page size here)
page_size() {
	awk '/^KernelPageSize:/ { print $2 * 1024; exit }' /proc/self/smaps
}
