#!/usr/bin/env bats
# schedlat: the command-line contract and end-to-end checks against the
# kernel's own figures (/proc/PID/task/*/schedstat, status, sched).

bats_require_minimum_version 1.5.0
load lib

teardown() {
	aiscope_teardown
}

# ---- contract ----

@test "schedlat --help lists the shared options and ends with examples" {
	check_help schedlat "${SHARED_OPTS[@]}" --by --hist --min --usage --version
}

@test "schedlat --usage and --version" {
	check_usage_version schedlat
	run "$BIN/schedlat" -V
	[ "$status" -eq 0 ]
}

@test "schedlat usage errors exit 2 with one line on stderr and nothing on stdout" {
	local bad=(
		"--bogus" "-p" "-p abc" "-p 1,,2" "-p 0" "-p 999999999" "-t 999999999"
		"-i 0" "-i 5x" "-d -1" "-n 0" "-r x" "--by foo" "-s nope" "-c /nonexistent"
		"-c /tmp" "--container zz" "--container abcd" "--buffer-size 1" "--buffer-size 2G"
		"--min 0" "--min 1ms -H" "--min 1ms --by tid" "1 2 3" "--probe-mode foo"
		"-u no_such_user_here" "--btf /nonexistent" "--comm="
		"--min 1ms --listen 127.0.0.1:0" "-i 1ns" "-i 999us" "0.0009"
	)
	mapfile -t -O "${#bad[@]}" bad < <(not_regular_args --btf)
	check_usage_errors schedlat "${bad[@]}"
}

@test "schedlat --metric-label refuses the label names its own series have" {
	check_own_metric_labels schedlat le
}

@test "schedlat without privileges exits 77 and says what is missing" {
	check_no_privilege schedlat
}

@test "schedlat --list-probes shows the plan, unprivileged too" {
	run "$BIN/schedlat" --list-probes
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == HOOK*MECHANISM*TARGET*STATUS ]]
	for hook in sched_wakeup sched_wakeup_new sched_switch sched_migrate_task sched_process_exit; do
		echo "$output" | grep -E "^$hook +(tp_btf|raw_tp|tracepoint) .*chosen"
	done
	if command -v setpriv > /dev/null && [ "$(id -u)" -eq 0 ]; then
		nobody_copy "$BIN/schedlat"
		run "${AS_NOBODY[@]}" "$NOBODY_BIN" --list-probes
		[ "$status" -eq 0 ]
	fi
}

@test "schedlat --list-probes --json: one probe record per candidate" {
	run "$BIN/schedlat" --list-probes -j
	[ "$status" -eq 0 ]
	echo "$output" > "$BATS_TEST_TMPDIR/plan"
	all_json "$BATS_TEST_TMPDIR/plan"
	[ "$(jq -s 'length' "$BATS_TEST_TMPDIR/plan")" -eq 25 ]
	[ "$(jq -s '[.[] | select(.status == "chosen")] | length' "$BATS_TEST_TMPDIR/plan")" -eq 5 ]
	jq -e -s 'all(.[]; .type == "probe" and .tool == "schedlat" and has("hook") and
		has("mechanism") and has("target") and has("reason") and has("symbol") and has("ts"))' "$BATS_TEST_TMPDIR/plan"
}

@test "schedlat --probe-mode picks the mechanism; an impossible one exits 77 naming the candidates" {
	for mode in tp_btf raw_tp tracepoint; do
		run "$BIN/schedlat" --list-probes --probe-mode "$mode"
		[ "$status" -eq 0 ]
		[ "$(echo "$output" | grep -c " $mode .*chosen")" -eq 5 ]
	done
	need_root
	# this host has neither fentry (EPERM) nor kprobes
	need_no_kprobes
	run_exit_77 "$BIN/schedlat" --probe-mode fentry,kprobe -d 1
	[[ "$output" == *"no way to attach sched_wakeup on this kernel: tried tp_btf:sched_wakeup (excluded by --probe-mode), raw_tp:sched_wakeup (excluded by --probe-mode), tracepoint:sched/sched_wakeup (excluded by --probe-mode), fentry:ttwu_do_activate ("*"), kprobe:ttwu_do_activate (kprobes not supported)"* ]]
}

# ---- end to end: run-queue wait against /proc/PID/task/*/schedstat ----

# check_wait MODE: 4 threads pinned to one CPU contend for two rounds; the
# tool's total wait for the process equals the run_delay delta within 10%,
# and its preemptions equal the delta of nonvoluntary_ctxt_switches.
check_wait() {
	local mode=$1 truth tool pre
	start_contend w 4 0 250
	start_tool s schedlat -j -p "$CONTEND_PID" --probe-mode "$mode"
	contend_measured w
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	truth=$RUN_DELAY
	tool=$(jq -s '[.[] | select(.type == "sample" and .row == "pid") | .wait_ns] | add' "$BATS_TEST_TMPDIR/s.out")
	echo "mode $mode: run_delay delta $truth ns, schedlat $tool ns"
	[ "$truth" -gt 500000000 ]	# the workload really contended
	within 10 "$tool" "$truth"
	pre=$(jq -s '[.[] | select(.type == "sample" and .row == "pid") | .preemptions] | add' "$BATS_TEST_TMPDIR/s.out")
	echo "nivcsw delta $NIVCSW, schedlat preemptions $pre"
	within 5 "$pre" "$NIVCSW"
	# only the filtered process is reported, and the host line sums it
	jq -e -s --argjson p "$CONTEND_PID" 'all(.[] | select(.type == "sample" and .row == "pid"); .pid == $p)' \
		"$BATS_TEST_TMPDIR/s.out"
	jq -e -s '([.[] | select(.type == "sample" and .row == "host") | .wait_ns] | add) ==
		([.[] | select(.type == "sample" and .row == "pid") | .wait_ns] | add)' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s --arg m "$mode" '.[-1].type == "summary" and .[-1].probes == $m and .[-1].exit_reason == "signal"' \
		"$BATS_TEST_TMPDIR/s.out"
}

@test "schedlat wait agrees with schedstat run_delay (tp_btf)" {
	need_root
	check_wait tp_btf
}

@test "schedlat wait agrees with schedstat run_delay (raw_tp)" {
	need_root
	check_wait raw_tp
}

@test "schedlat wait agrees with schedstat run_delay (classic tracepoint)" {
	need_root
	check_wait tracepoint
}

@test "schedlat migrations agree with se.nr_migrations" {
	need_root
	[ "$(nproc)" -ge 2 ] || skip "needs two CPUs"
	local before after tool
	start_contend w 2 -1 300
	start_tool s schedlat -j -p "$CONTEND_PID"
	before=$(sum_migrations "$CONTEND_PID")
	contend_round w "$CONTEND_PID" 1
	after=$(sum_migrations "$CONTEND_PID")
	stop_tool "$TOOL_PID"
	tool=$(jq -s '[.[] | select(.type == "sample" and .row == "pid") | .migrations] | add' "$BATS_TEST_TMPDIR/s.out")
	echo "nr_migrations delta $((after - before)), schedlat $tool"
	[ $((after - before)) -gt 100 ]
	within 5 "$tool" "$((after - before))"
}

@test "schedlat -t and --comm keep exactly the chosen threads" {
	need_root
	local tid
	start_contend w 3 0 100
	tid=$(ls /proc/"$CONTEND_PID"/task | grep -v "^$CONTEND_PID$" | head -1)
	start_tool s schedlat -j --by tid -t "$tid"
	start_tool c schedlat -j --by tid --comm contend-w
	contend_round w "$CONTEND_PID" 1
	stop_tool "$TOOL_PID"
	stop_tool "${TEST_PIDS[1]}"
	jq -e -s --argjson t "$tid" '[.[] | select(.type == "sample" and .row == "tid")] |
		length > 0 and all(.tid == $t)' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s --argjson p "$CONTEND_PID" '[.[] | select(.type == "sample" and .row == "tid")] |
		length >= 3 and all(.comm == "contend-w" and .pid == $p)' "$BATS_TEST_TMPDIR/c.out"
}

@test "schedlat -u keeps only that user's tasks" {
	need_root
	command -v setpriv > /dev/null || skip "setpriv missing"
	local nobody
	nobody_copy "$HELPERS/contend"
	start_ready w "${AS_NOBODY[@]}" "$NOBODY_BIN" 2 0 100
	nobody=$READY_PID
	start_contend r 2 0 100
	start_tool s schedlat -j -u 65534
	contend_round w "$nobody" 1
	contend_round r "$CONTEND_PID" 1
	stop_tool "$TOOL_PID"
	jq -e -s --argjson p "$nobody" '[.[] | select(.type == "sample" and .row == "pid")] |
		length > 0 and all(.uid == 65534) and any(.pid == $p)' "$BATS_TEST_TMPDIR/s.out"
}

# ---- cgroups and containers ----

# check_cgroup_filter DIR ARGS...: a contending process in DIR and one
# outside; the tool run with ARGS reports only the one inside.
check_cgroup_filter() {
	local dir=$1 inside outside
	shift
	start_contend in 2 0 150
	inside=$CONTEND_PID
	move_to_cgroup "$dir" "$inside"
	start_contend out 2 0 150
	outside=$CONTEND_PID
	start_tool s schedlat -j "$@"
	contend_round in "$inside" 1
	contend_round out "$outside" 1
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	jq -e -s --argjson p "$inside" '[.[] | select(.type == "sample" and .row == "pid")] |
		length > 0 and all(.pid == $p)' "$BATS_TEST_TMPDIR/s.out"
}

@test "schedlat -c keeps exactly the tasks of a v2 cgroup and below" {
	need_root
	local root
	root=$(cgroup2_root) || skip "no cgroup2 mount"
	make_cgroup "$root/aiscope-test-$$"
	make_cgroup "$root/aiscope-test-$$/child"
	check_cgroup_filter "$root/aiscope-test-$$/child" -c "$root/aiscope-test-$$"
	jq -e -s --arg c "/aiscope-test-$$/child" '[.[] | select(.type == "sample" and .row == "pid")] |
		all(.cgroup == $c)' "$BATS_TEST_TMPDIR/s.out"
}

@test "schedlat -c works with a v1 controller's cgroup on hybrid hosts" {
	need_root
	[ -d /sys/fs/cgroup/cpu ] && [ "$(stat -f -c %T /sys/fs/cgroup/cpu)" = cgroupfs ] || skip "no v1 cpu controller"
	make_cgroup "/sys/fs/cgroup/cpu/aiscope-test-$$"
	check_cgroup_filter "/sys/fs/cgroup/cpu/aiscope-test-$$" -c "/sys/fs/cgroup/cpu/aiscope-test-$$"
}

@test "schedlat --container keeps one fake docker container and names it" {
	need_root
	make_docker_cgroup
	check_cgroup_filter "$CG" --container "${CID:0:12}"
	jq -e -s --arg id "$CID" '[.[] | select(.type == "sample" and .row == "pid")] |
		all(.container_id == $id and .runtime == "docker")' "$BATS_TEST_TMPDIR/s.out"
	# --by container: one row for it, the same total wait as its process
	run "$BIN/schedlat" -j --by container --container "${CID:0:8}" -d 0.3
	[ "$status" -eq 0 ]
}

@test "schedlat --by container groups a container's processes into one row" {
	need_root
	local a b
	make_docker_cgroup
	start_contend a 2 0 150
	a=$CONTEND_PID
	start_contend b 2 0 150
	b=$CONTEND_PID
	move_to_cgroup "$CG" "$a"
	move_to_cgroup "$CG" "$b"
	start_tool s schedlat -j --by container
	start_tool p schedlat -j -p "$a,$b"
	local before after
	before=$(($(sum_run_delay "$a") + $(sum_run_delay "$b")))
	contend_round a "$a" 1
	contend_round b "$b" 1
	after=$(($(sum_run_delay "$a") + $(sum_run_delay "$b")))
	stop_tool "$TOOL_PID"
	stop_tool "${TEST_PIDS[2]}"
	jq -e -s --arg id "$CID" '[.[] | select(.type == "sample" and .container_id == $id)] |
		length > 0 and all(.row == "container" and .runtime == "docker" and .pid == null)' \
		"$BATS_TEST_TMPDIR/s.out"
	# the container's row holds both processes' waits: the kernel's run_delay
	within 10 "$(jq -s --arg id "$CID" '[.[] | select(.type == "sample" and .container_id == $id) | .wait_ns] | add' "$BATS_TEST_TMPDIR/s.out")" \
		"$((after - before))"
	within 10 "$(jq -s '[.[] | select(.type == "sample" and .row == "pid") | .wait_ns] | add' "$BATS_TEST_TMPDIR/p.out")" \
		"$((after - before))"
}

# ---- output and lifetime ----

@test "schedlat JSON records carry every key of their type" {
	need_root
	run --separate-stderr "$BIN/schedlat" -j -i 200ms -n 2
	[ "$status" -eq 0 ]
	echo "$output" > "$BATS_TEST_TMPDIR/o"
	all_json "$BATS_TEST_TMPDIR/o"
	jq -e -s 'all(.[] | select(.type == "sample"); [has("type","tool","ts","schema","seq","interval_ns","row","pid","tid",
		"comm","uid","cgroup_id","cgroup","container_id","runtime","pod_uid","container_name",
		"container_image","pod_name","pod_namespace","k8s_container","runs","wait_ns","avg_ns",
		"p50_ns","p99_ns","max_ns","preemptions","migrations")] | all)' "$BATS_TEST_TMPDIR/o"
	jq -e -s 'all(.[]; .ts | test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{9}Z$"))' "$BATS_TEST_TMPDIR/o"
	jq -e -s '[.[] | select(.type == "sample" and .row == "host") | .seq] == [1, 2]' "$BATS_TEST_TMPDIR/o"
	jq -e -s '.[-1] | .type == "summary" and .exit_reason == "count" and .intervals == 2 and
		has("duration_ns") and has("events") and has("lost_events") and .lost_events == 0 and
		.container_meta_evicted == 0 and .cgroup_events_lost == 0 and .cgroup_paths_evicted == 0' "$BATS_TEST_TMPDIR/o"
	# the timestamps are now, not boot-relative
	jq -e -s --argjson now "$(date +%s)" '.[0].ts | sub("\\.[0-9]+Z$"; "Z") | fromdate | . > $now - 60 and . < $now + 60' "$BATS_TEST_TMPDIR/o"
}

@test "schedlat -H: histogram buckets add up to the runs" {
	need_root
	start_contend w 2 0 100
	start_tool s schedlat -j -H -p "$CONTEND_PID"
	contend_round w "$CONTEND_PID" 1
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	jq -e -s '[.[] | select(.type == "hist")] | length > 0 and
		all(.name == "runq_latency" and .unit == "ns" and ([.buckets[].count] | add // 0) == .count)' \
		"$BATS_TEST_TMPDIR/s.out"
	jq -e -s '[.[] | select(.type == "hist") | .count] | add > 0' "$BATS_TEST_TMPDIR/s.out"
	# buckets are contiguous powers of two, empty middle buckets included
	jq -e -s '[.[] | select(.type == "hist" and .count > 0)][0].buckets as $b |
		all(range(1; $b | length); $b[.].min == $b[. - 1].max + 1)' "$BATS_TEST_TMPDIR/s.out"
	run "$BIN/schedlat" -H -d 0.5
	[ "$status" -eq 0 ]
	[[ "$output" == *"usecs"*"distribution"* ]]
}

@test "schedlat tables and -H blocks show a hostile comm sanitised, on its own line" {
	need_root
	hostile_exe "$(command -v dd)"
	start_bg w "$HOSTILE_EXE" if=/dev/zero of=/dev/null bs=512 count=100000000
	local p=$BG_PID args n=0
	for args in "--by pid" "--by tid" "-H --by pid" "-H --by tid"; do
		n=$((n + 1))
		# shellcheck disable=SC2086 # the options' words
		start_tool t$n schedlat -C -i 300ms -p "$p" $args
		sleep 1
		stop_tool "$TOOL_PID"
		echo "schedlat $args:"
		cat -v "$BATS_TEST_TMPDIR/t$n.out"
		check_sanitised "$BATS_TEST_TMPDIR/t$n.out"
	done
	# the -H block's title: "pid = P <comm>  runs=..." on one line
	grep -qE "^pid = $p $(printf '%s' "$HOSTILE_SHOWN" | sed 's/[][?]/\\&/g')  runs=" "$BATS_TEST_TMPDIR/t3.out"
	# JSON keeps the bytes (escaped; the byte that is no UTF-8 as U+FFFD)
	start_tool j schedlat -j -i 300ms -p "$p"
	sleep 1
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/j.out"
	jq -e -s --arg c "$HOSTILE_JSON" '[.[] | select(.type == "sample" and .row == "pid")] |
		length > 0 and all(.comm == $c)' "$BATS_TEST_TMPDIR/j.out"
	kill "$p"
}

@test "schedlat --min streams each long wait of the process, -n stops after N" {
	need_root
	# 6 workers on CPU 0 for 1 s: on a loaded host other tasks share CPU 0
	# too, and 4 for 300 ms gave waits that no other worker ended (the
	# other tasks ran before each; the full sanitized run here)
	start_contend w 6 0 1000
	local stream
	start_tool s schedlat -j --min 2ms -p "$CONTEND_PID"
	stream=$TOOL_PID
	start_tool n schedlat -j --min 2ms -p "$CONTEND_PID" -n 3
	contend_round w "$CONTEND_PID" 1
	wait "$TOOL_PID"
	stop_tool "$stream"
	all_json "$BATS_TEST_TMPDIR/s.out"
	jq -e -s --argjson p "$CONTEND_PID" '[.[] | select(.type == "event")] | length > 5 and
		all(.event == "wait" and .wait_ns >= 2000000 and .pid == $p and (.comm | startswith("contend")) and
		    has("prev_pid") and has("prev_comm") and has("cpu"))' "$BATS_TEST_TMPDIR/s.out"
	# the CPU was held by the other workers
	jq -e -s --argjson p "$CONTEND_PID" 'any(.[] | select(.type == "event");
		.prev_pid == $p and .prev_comm == "contend-w" and .prev_tid != .tid)' "$BATS_TEST_TMPDIR/s.out"
	[ "$(jq -s '[.[] | select(.type == "event")] | length' "$BATS_TEST_TMPDIR/n.out")" -eq 3 ]
	jq -e -s '.[-1].type == "summary" and .[-1].exit_reason == "count" and .[-1].events == 3' "$BATS_TEST_TMPDIR/n.out"
}

@test "schedlat SIGINT and SIGTERM print the summary and exit 0" {
	need_root
	check_signals schedlat
}

@test "schedlat -j | head -1 exits within a second of head" {
	need_root
	check_head_exit schedlat
}

@test "schedlat --duration ends on time with a summary; tables append blocks when not a terminal" {
	need_root
	local start end
	start=$(date +%s%N)
	run "$BIN/schedlat" -d 1.2 -i 500ms
	end=$(date +%s%N)
	[ "$status" -eq 0 ]
	[ $(((end - start) / 1000000)) -lt 2200 ]
	[ "$(echo "$output" | grep -c '^# 20[0-9-]*T[0-9:.]*Z interval=')" -eq 3 ]
	[[ "$output" != *$'\033'* ]]
	echo "$output" | grep -q '^    PID COMM  *CONTAINER  *RUNS  *AVG(us)  *P50(us)  *P99(us)  *MAX(us)  *WAIT(ms) PREEMPT   MIGR$'
	echo "$output" | grep -q '^ *\[host\]'
	echo "$output" | grep -q '^# summary: '
}

@test "schedlat forgets exited tasks: its per-task map stays small" {
	need_root
	command -v bpftool > /dev/null || skip "bpftool missing"
	local n
	start_tool s schedlat -C -i 10s
	# 300 short-lived processes, each woken at least once
	local kids=()
	for i in $(seq 300); do
		/bin/sleep 0.001 &
		kids+=($!)
	done
	wait "${kids[@]}"
	n=$(map_entries "$TOOL_PID" enqueued)
	echo "entries left in enqueued: $n"
	[ "$n" -lt 60 ]
	stop_tool "$TOOL_PID"
}

@test "schedlat reports lost events instead of hiding them" {
	need_root
	# a 4 KiB ring buffer holds about 40 waits: a context-switch storm
	# streamed with --min 1ns overflows it
	start_tool s schedlat -j --min 1ns --buffer-size 4K
	"$HELPERS/pingpong" 100000
	sleep 1.2
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	jq -e -s '.[-1].type == "summary" and .[-1].lost_events > 0' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s '([.[] | select(.type == "lost") | .lost_events] | add) == .[-1].lost_events' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s 'all(.[] | select(.type == "lost"); .lost_events == .ringbuf_full + .map_full + .recursion_misses + .cgroup_events_lost)' \
		"$BATS_TEST_TMPDIR/s.out"
	grep -q 'lost .* events .*--buffer-size' "$BATS_TEST_TMPDIR/s.err"
}

# header_ms FILE ERE: the interval of each block header matching ERE (the
# part before "interval="), in ms; a header shows its interval as measured
header_ms() {
	grep -aoE "$2interval=[0-9.]+(ms|s)" "$1" | sed 's/.*interval=//' |
		awk '/ms$/ { print $0 + 0; next } { print ($0 + 0) * 1000 }'
}

@test "schedlat on a terminal redraws each interval in place; -C appends" {
	need_root
	command -v script > /dev/null || skip "script(1) missing"
	# -d counts from before the BPF load: -d 3 leaves whole 1 s intervals
	# even when the start takes a second or two (a loaded host, ASan), where
	# -d 1.5 could leave only the last, partial one. Each header shows its
	# interval as measured (998ms for a tick that woke late), so a whole
	# interval is one within a quarter of -i 1s
	script -qfec "$BIN/schedlat -d 3" /dev/null > "$BATS_TEST_TMPDIR/tty" 2>&1
	header_ms "$BATS_TEST_TMPDIR/tty" $'\033\\[H\033\\[2Jschedlat  [0-9:]+  '
	[ "$(grep -ac $'\033\\[H\033\\[2J' "$BATS_TEST_TMPDIR/tty")" -ge 2 ]
	header_ms "$BATS_TEST_TMPDIR/tty" $'\033\\[H\033\\[2Jschedlat  [0-9:]+  ' |
		awk '$1 >= 750 && $1 <= 1250 { n++ } END { exit !(n >= 1) }'
	script -qfec "$BIN/schedlat -C -d 3" /dev/null > "$BATS_TEST_TMPDIR/tty" 2>&1
	! grep -q $'\033\\[2J' "$BATS_TEST_TMPDIR/tty" || false
	header_ms "$BATS_TEST_TMPDIR/tty" '^# 20[0-9T:.-]+Z '
	[ "$(header_ms "$BATS_TEST_TMPDIR/tty" '^# 20[0-9T:.-]+Z ' | wc -l)" -ge 2 ]
	header_ms "$BATS_TEST_TMPDIR/tty" '^# 20[0-9T:.-]+Z ' |
		awk '$1 >= 750 && $1 <= 1250 { n++ } END { exit !(n >= 1) }'
}

@test "schedlat -s sorts the rows of every interval" {
	need_root
	start_contend w 3 0 200
	for key in runs max; do
		start_tool s schedlat -j -s "$key" -i 300ms
		contend_round w "$CONTEND_PID" "$([ $key = runs ] && echo 1 || echo 2)"
		stop_tool "$TOOL_PID"
		field=$([ $key = runs ] && echo runs || echo max_ns)
		jq -e -s --arg f "$field" 'map(select(.type == "sample" and .row == "pid")) | group_by(.seq) |
			all(map(.[$f]) as $v | $v == ($v | sort | reverse))' "$BATS_TEST_TMPDIR/s.out"
	done
}

@test "schedlat --btf takes an external BTF file; a broken one is a usage error" {
	need_root
	run --separate-stderr "$BIN/schedlat" --btf /sys/kernel/btf/vmlinux -j -n 1 -i 200ms
	[ "$status" -eq 0 ]
	echo "$output" | tail -1 | jq -e '.type == "summary"'
	head -c 4096 /dev/urandom > "$BATS_TEST_TMPDIR/bad.btf"
	run "$BIN/schedlat" --btf "$BATS_TEST_TMPDIR/bad.btf" -d 1
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"cannot parse BTF file"* ]]
}

@test "schedlat tests leave no cgroup behind" {
	local left
	left=$(find /sys/fs/cgroup -maxdepth 3 -type d -name 'aiscope-test-*' 2>/dev/null | head -5)
	[ -z "$left" ] || { echo "left behind: $left"; false; }
}
