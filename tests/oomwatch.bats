#!/usr/bin/env bats
# oomwatch: the command-line contract; real memcg OOM kills in a v1 memory
# cgroup with a 64 MiB limit (the victim, its cgroup and limit against what
# the test set up and the kernel's own log); alerts before the kill; a
# 600 MiB mapping; --check exit codes; cgroup v2 (and v1) reading on fake
# cgroup trees (OOMWATCH_SYSROOT).

bats_require_minimum_version 1.5.0
load lib

MEMCG_ROOT=/sys/fs/cgroup/memory
LIMIT=67108864

teardown() {
	aiscope_teardown
}

need_memcg_v1() {
	need_root
	[ -e "$MEMCG_ROOT/memory.limit_in_bytes" ] || skip "no v1 memory controller"
}

# make_memcg NAME [LIMIT]: v1 memory cgroup with a limit (default 64 MiB)
# and no swap; sets CG and CG_REL
make_memcg() {
	local limit=${2:-$LIMIT}
	CG_REL=/aiscope-oomw-$$-$1
	CG=$MEMCG_ROOT$CG_REL
	make_cgroup "$CG"
	echo "$limit" > "$CG/memory.limit_in_bytes"
	# no swap in the way of the kill (where the kernel accounts it)
	echo 0 > "$CG/memory.swappiness" 2>/dev/null || true
	[ ! -e "$CG/memory.memsw.limit_in_bytes" ] || echo "$limit" > "$CG/memory.memsw.limit_in_bytes"
}

# jq: an RFC 3339 "ts" with nanoseconds -> ns since the epoch
JQ_NS='def ns: (.[0:19] + "Z" | fromdateiso8601) * 1000000000 + (.[20:29] | tonumber);'

# hog_in NAME CGROUP ARGS...: memhog ARGS... started inside CGROUP, then
# told to go; sets HOG_PID
hog_in() {
	local name=$1 cg=$2
	shift 2
	start_hog "$name" "$@"
	move_to_cgroup "$cg" "$HOG_PID"
	kill -USR1 "$HOG_PID"
}

# start_hog NAME ARGS...: memhog waiting for SIGUSR1; sets HOG_PID
start_hog() {
	local name=$1
	shift
	start_ready "$name" "$HELPERS/memhog" "$@"
	HOG_PID=$READY_PID
}

# the kernel's own line for a kill of pid $1: "anon-rss:NkB" -> N
dmesg_anon_kb() {
	dmesg 2>/dev/null | grep "Killed process $1 (" | tail -1 | sed -n 's/.*anon-rss:\([0-9]*\)kB.*/\1/p'
}

# ---- contract ----

@test "oomwatch --help lists the shared and own options, examples and exit codes" {
	check_help oomwatch "${SHARED_OPTS[@]}" --warn --crit --psi-warn --psi-crit --alloc-min \
		--check
	[[ "$output" == *"--check: 0 ok, 3 warn, 4 crit"* ]]
	check_usage_version oomwatch
}

@test "oomwatch usage errors exit 2 with one line on stderr and nothing on stdout" {
	local bad=(
		"--bogus" "--warn 0" "--warn 101" "--warn x" "--crit 50" "--warn 90 --crit 80"
		"--psi-warn 50 --psi-crit 20" "--psi-crit 0" "--alloc-min x" "--alloc-min -1"
		"-s pct" "--check -s nope" "--check -d 1" "--check -n 2" "--check --list-probes"
		"5" "-c /nonexistent" "-p 999999999" "--probe-mode foo" "-i 0"
	)
	check_usage_errors oomwatch "${bad[@]}"
}

@test "oomwatch --metric-label refuses the label names its own series have" {
	check_own_metric_labels oomwatch scope syscall event
}

@test "oomwatch without privileges exits 77; --check needs none" {
	check_no_privilege oomwatch
	# --check only reads cgroup files: any status but 1, 2 or 77
	run "${AS_NOBODY[@]}" "$NOBODY_BIN" --check -j
	[[ "$status" =~ ^(0|3|4)$ ]]
	echo "$output" | tail -1 | jq -e '.type == "summary" and .exit_reason == "check"'
}

@test "oomwatch --list-probes: mark_victim chosen, oom_kill_process optional, per mechanism" {
	run "$BIN/oomwatch" --list-probes
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^mark_victim +tp_btf +mark_victim +chosen'
	echo "$output" | grep -E '^oom_kill_process +fentry'
	# the allocation syscalls' own tracepoints, not a program on every syscall
	echo "$output" | grep -E '^mmap +tracepoint +syscalls/sys_enter_mmap +chosen'
	echo "$output" | grep -E '^mremap +tracepoint +syscalls/sys_enter_mremap +chosen'
	echo "$output" | grep -E '^brk +tracepoint +syscalls/sys_enter_brk +chosen'
	echo "$output" | grep -E '^brk_exit +tracepoint +syscalls/sys_exit_brk +chosen'
	echo "$output" | grep -E '^sys_enter +tp_btf +sys_enter +excluded: per-syscall tracepoints chosen'
	echo "$output" | grep -E '^sys_exit +tp_btf +sys_exit +excluded: per-syscall tracepoints chosen'
	# without tracepoints: the raw pair, tp_btf first
	run "$BIN/oomwatch" --list-probes --probe-mode tp_btf,raw_tp
	[ "$status" -eq 0 ]
	echo "$output" | grep -E '^mmap +tracepoint +syscalls/sys_enter_mmap +excluded: excluded by --probe-mode'
	echo "$output" | grep -E '^sys_enter +tp_btf +sys_enter +chosen'
	echo "$output" | grep -E '^sys_exit +tp_btf +sys_exit +chosen'
	run "$BIN/oomwatch" --list-probes --probe-mode tracepoint -j
	[ "$status" -eq 0 ]
	echo "$output" | jq -e -s 'map(select(.hook == "mark_victim" and .status == "chosen")) |
		length == 1 and .[0].mechanism == "tracepoint"'
	# no usable victim hook: 77, naming what was tried
	run "$BIN/oomwatch" --probe-mode kprobe -d 1
	[ "$status" -eq 77 ]
	[[ "$output" == *"mark_victim"*"tp_btf:mark_victim"*"tracepoint:oom/mark_victim"* ]]
}

# ---- real OOM kills ----

@test "oomwatch: a memcg OOM kill in a 64 MiB v1 cgroup, with a warning before it" {
	need_memcg_v1
	make_memcg tpbtf
	start_tool ow oomwatch -j -i 100ms
	# 1 MiB every 100 ms: the 100 ms polls see it cross 85% well before the kill
	start_hog hog grow 1024 100
	move_to_cgroup "$CG" "$HOG_PID"
	kill -USR1 "$HOG_PID"
	local rc=0
	wait "$HOG_PID" || rc=$?
	[ "$rc" -eq 137 ]	# SIGKILL: the OOM killer
	wait_for "$BATS_TEST_TMPDIR/ow.out" '"event":"oom_kill"' 5
	sleep 0.3
	stop_tool "$TOOL_PID"
	local out=$BATS_TEST_TMPDIR/ow.out
	all_json "$out"
	# exactly one kill in our cgroup, and it is our process
	[ "$(jq -s --arg cg "$CG_REL" 'map(select(.event == "oom_kill" and .memcg == $cg)) | length' "$out")" -eq 1 ]
	[ "$(jq -s --argjson p "$HOG_PID" 'map(select(.event == "oom_kill" and .pid == $p)) | length' "$out")" -eq 1 ]
	local kill
	kill=$(jq -c --argjson p "$HOG_PID" 'select(.event == "oom_kill" and .pid == $p)' "$out")
	echo "$kill"
	echo "$kill" | jq -e --arg cg "$CG_REL" --argjson lim "$LIMIT" '
		.comm == "memhog" and .cgroup == $cg and .memcg == $cg and .limit_bytes == $lim and
		.scope == "memcg" and .scope_source == "stack" and .uid == 0 and .oom_score_adj == 0 and
		.usage_bytes <= $lim and .usage_bytes >= $lim - 4194304 and
		.anon_rss_bytes > 60 * 1048576 and .total_vm_bytes >= .anon_rss_bytes and
		.trigger_pid == .pid and .trigger_comm == "memhog" and .source == "tp_btf"'
	# the kernel's log of the same kill
	local kb
	kb=$(dmesg_anon_kb "$HOG_PID")
	[ -z "$kb" ] || echo "$kill" | jq -e --argjson b "$((kb * 1024))" '.anon_rss_bytes == $b'
	# a warning for that cgroup before the kill, with the figures behind it
	jq -s --arg cg "$CG_REL" --argjson lim "$LIMIT" '
		(map(.event == "oom_kill" and .memcg == $cg) | index(true)) as $k |
		[.[0:$k][] | select(.event == "alert" and .cgroup == $cg and
			(.level == "warn" or .level == "crit") and (.reason | contains("working_set")) and
			.limit_bytes == $lim and .working_set_ratio >= 0.85 and .cgroup_version == 1)] | length >= 1' "$out" |
		grep -qx true
	# and the kill shows in memory.oom_control afterwards: an oom_kill alert
	jq -e -s --arg cg "$CG_REL" 'map(select(.event == "alert" and .cgroup == $cg and
		(.reason | contains("oom_kill")) and .oom_kills == 1 and .level == "crit")) | length == 1' "$out"
}

@test "oomwatch: the kill through raw_tp and classic tracepoints, filtered by -c" {
	need_memcg_v1
	local mode
	for mode in raw_tp tracepoint; do
		make_memcg "$mode"
		start_tool "ow-$mode" oomwatch -j -c "$CG" --probe-mode "$mode" --alloc-min 0
		start_hog "hog-$mode" grow 4096 20
		move_to_cgroup "$CG" "$HOG_PID"
		kill -USR1 "$HOG_PID"
		wait "$HOG_PID" || true
		wait_for "$BATS_TEST_TMPDIR/ow-$mode.out" '"event":"oom_kill"' 5
		sleep 0.3
		stop_tool "$TOOL_PID"
		all_json "$BATS_TEST_TMPDIR/ow-$mode.out"
		[ "$(grep -c '"event":"oom_kill"' "$BATS_TEST_TMPDIR/ow-$mode.out")" -eq 1 ]
		jq -e -s --argjson p "$HOG_PID" --arg cg "$CG_REL" --argjson lim "$LIMIT" --arg m "$mode" '
			map(select(.event == "oom_kill")) | .[0] | .pid == $p and .comm == "memhog" and
			.cgroup == $cg and .limit_bytes == $lim and .scope == "memcg" and .source == $m' \
			"$BATS_TEST_TMPDIR/ow-$mode.out"
	done
}

# ---- allocations ----

@test "oomwatch: a 600 MiB mapping is reported with its process; --alloc-min 1G leaves it out" {
	need_root
	start_tool big oomwatch -j --alloc-min 1G -i 10s
	local big_pid=$TOOL_PID
	start_tool ow oomwatch -j -i 10s
	start_hog hog mmap 614400
	kill -USR1 "$HOG_PID"
	wait_for "$BATS_TEST_TMPDIR/hog.out" '^mapped'
	wait_for "$BATS_TEST_TMPDIR/ow.out" "\"pid\":$HOG_PID," 5
	stop_tool "$TOOL_PID"
	stop_tool "$big_pid"
	all_json "$BATS_TEST_TMPDIR/ow.out"
	jq -e -s --argjson p "$HOG_PID" 'map(select(.event == "alloc" and .pid == $p)) |
		length == 1 and .[0].comm == "memhog" and .[0].syscall == "mmap" and
		.[0].size_bytes == 629145600 and .[0].prot == "---" and .[0].anonymous and
		.[0].level == "warn" and (.[0].cgroup | type) == "string"' "$BATS_TEST_TMPDIR/ow.out"
	# (the hog's: another process of the host may map 1 GiB meanwhile)
	all_json "$BATS_TEST_TMPDIR/big.out"
	jq -e -s --argjson p "$HOG_PID" 'map(select(.event == "alloc" and .pid == $p)) | length == 0' \
		"$BATS_TEST_TMPDIR/big.out"
}

@test "oomwatch: mmap, mremap and brk growth of 600 MiB, through each mechanism" {
	need_root
	local mode sys n probes
	# default: the per-syscall tracepoints, the other hooks tp_btf
	for mode in default tp_btf raw_tp tracepoint; do
		if [ "$mode" = default ]; then
			probes=mixed
			start_tool "ow-$mode" oomwatch -j -i 10s
		else
			probes=$mode
			start_tool "ow-$mode" oomwatch -j -i 10s --probe-mode "$mode"
		fi
		n=0
		for sys in "mmap 614400" "mremap 102400 716800" "brk 614400"; do
			n=$((n + 1))
			# shellcheck disable=SC2086
			start_hog "hog-$mode-$n" $sys
			kill -USR1 "$HOG_PID"
			wait_for "$BATS_TEST_TMPDIR/hog-$mode-$n.out" '^\(mapped\|remapped\|brk\) '
			wait_for "$BATS_TEST_TMPDIR/ow-$mode.out" "\"pid\":$HOG_PID," 5
			eval "pid_$n=$HOG_PID"
		done
		stop_tool "$TOOL_PID"
		all_json "$BATS_TEST_TMPDIR/ow-$mode.out"
		# shellcheck disable=SC2154
		jq -e -s --argjson a "$pid_1" --argjson b "$pid_2" --argjson c "$pid_3" '
			[map(select(.event == "alloc" and (.pid == $a or .pid == $b or .pid == $c)))[] |
			 [.pid, .syscall, .size_bytes, .comm]] ==
			[[$a, "mmap", 629145600, "memhog"], [$b, "mremap", 629145600, "memhog"],
			 [$c, "brk", 629145600, "memhog"]]' "$BATS_TEST_TMPDIR/ow-$mode.out"
		tail -1 "$BATS_TEST_TMPDIR/ow-$mode.out" | jq -e --arg m "$probes" '.probes == $m'
	done
}

# ---- --check ----

@test "oomwatch: an allocation row shows a hostile comm sanitised, on its own line" {
	need_root
	hostile_exe "$HELPERS/memhog"
	start_tool ow oomwatch -i 10s
	start_ready hog "$HOSTILE_EXE" mmap 614400
	HOG_PID=$READY_PID
	kill -USR1 "$HOG_PID"
	wait_for "$BATS_TEST_TMPDIR/hog.out" '^mapped'
	wait_for "$BATS_TEST_TMPDIR/ow.out" " $HOG_PID " 5
	stop_tool "$TOOL_PID"
	grep -a " $HOG_PID " "$BATS_TEST_TMPDIR/ow.out" | cat -v
	check_sanitised "$BATS_TEST_TMPDIR/ow.out"
	grep -qE "^alloc +[a-z]+ +$HOG_PID h\?x\?\[31m\?\?z " "$BATS_TEST_TMPDIR/ow.out"
}

@test "oomwatch --check on a v1 cgroup above --warn exits 3, above --crit 4, below 0" {
	need_memcg_v1
	make_memcg check
	start_hog hog grow 1024 1 57344		# 56 MiB of 64: 87.5%
	move_to_cgroup "$CG" "$HOG_PID"
	kill -USR1 "$HOG_PID"
	wait_for "$BATS_TEST_TMPDIR/hog.out" '^at 57344$' 20
	run "$BIN/oomwatch" --check -c "$CG" -j
	[ "$status" -eq 3 ]
	local usage
	usage=$(cat "$CG/memory.usage_in_bytes")
	echo "$output" | jq -e -s --arg cg "$CG_REL" --argjson lim "$LIMIT" --argjson u "$usage" '
		map(select(.type == "sample")) | length == 1 and .[0].cgroup == $cg and
		.[0].level == "warn" and .[0].limit_bytes == $lim and
		(.[0].usage_bytes - $u | fabs) < 1048576 and .[0].working_set_ratio >= 0.85 and
		.[0].working_set_ratio < 0.95'
	echo "$output" | tail -1 | jq -e '.type == "summary" and .level == "warn" and .exit_code == 3'
	run "$BIN/oomwatch" --check -c "$CG" --warn 50 --crit 80
	[ "$status" -eq 4 ]
	[[ "${lines[0]}" == LEVEL*CGROUP*WS* ]]
	[[ "${lines[1]}" == crit*"$CG_REL"* ]]
	run "$BIN/oomwatch" --check -c "$CG" --warn 95 --crit 99
	[ "$status" -eq 0 ]
}

# ---- fake cgroup trees: fake_v2 and fake_v2_cg are in tests/lib.bash ----

@test "oomwatch --check reads cgroup v2 files (fake tree): figures, containers, exit codes" {
	local t=$BATS_TEST_TMPDIR/v2
	fake_v2 "$t"
	run env OOMWATCH_SYSROOT=$t "$BIN/oomwatch" --check -j
	[ "$status" -eq 4 ]
	echo "$output" > "$BATS_TEST_TMPDIR/check.json"
	all_json "$BATS_TEST_TMPDIR/check.json"
	# 996147200 - 52428800 = 943718400 of 1073741824: 87.89%
	jq -e -s --arg id "$FAKE_WARN" 'map(select(.type == "sample" and .container_id == $id)) |
		length == 1 and .[0].level == "warn" and .[0].runtime == "docker" and
		.[0].cgroup_version == 2 and .[0].usage_bytes == 996147200 and
		.[0].inactive_file_bytes == 52428800 and .[0].working_set_bytes == 943718400 and
		.[0].limit_bytes == 1073741824 and .[0].working_set_ratio == 0.8789 and
		.[0].limit_hits == 3 and .[0].oom_kills == 0 and .[0].psi_full_avg10_ratio == 0' \
		"$BATS_TEST_TMPDIR/check.json"
	jq -e -s --arg id "$FAKE_CRIT" --arg ok "$FAKE_OK" '
		(map(select(.container_id == $id)) | .[0].level == "crit" and .[0].working_set_ratio == 0.9902) and
		(map(select(.container_id == $ok)) | .[0].level == "ok")' "$BATS_TEST_TMPDIR/check.json"
	tail -1 "$BATS_TEST_TMPDIR/check.json" | jq -e '.type == "summary" and .level == "crit" and
		.exit_code == 4 and .cgroups == 3 and .warn == 1 and .crit == 1'
	# the sort: highest working set first
	run env OOMWATCH_SYSROOT=$t "$BIN/oomwatch" --check
	[ "$status" -eq 4 ]
	[[ "${lines[1]}" == crit*"docker-$FAKE_CRIT.scope"*99.0* ]]
	[[ "${lines[2]}" == warn*"docker-$FAKE_WARN.scope"*87.9* ]]
	# the critical one gone: 3; then pressure makes the ok one crit again
	rm -r "$t/sys/fs/cgroup/system.slice/docker-$FAKE_CRIT.scope"
	run env OOMWATCH_SYSROOT=$t "$BIN/oomwatch" --check
	[ "$status" -eq 3 ]
	rm -r "$t/sys/fs/cgroup/system.slice/docker-$FAKE_WARN.scope"
	run env OOMWATCH_SYSROOT=$t "$BIN/oomwatch" --check
	[ "$status" -eq 0 ]
	printf 'some avg10=70.00 avg60=0.00 avg300=0.00 total=9\nfull avg10=45.50 avg60=0.00 avg300=0.00 total=9\n' \
		> "$t/sys/fs/cgroup/system.slice/docker-$FAKE_OK.scope/memory.pressure"
	run env OOMWATCH_SYSROOT=$t "$BIN/oomwatch" --check -j
	[ "$status" -eq 4 ]
	echo "$output" | jq -e -s 'map(select(.type == "sample")) | .[0].psi_full_avg10_ratio == 0.455 and
		.[0].psi_some_avg10_ratio == 0.7 and .[0].level == "crit"'
	# unprivileged: the same answer
	if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null; then
		nobody_copy "$BIN/oomwatch"
		cp -r "$t" "${NOBODY_BIN%/*}/root"
		chmod -R a+rX "${NOBODY_BIN%/*}"
		run env OOMWATCH_SYSROOT="${NOBODY_BIN%/*}/root" "${AS_NOBODY[@]}" "$NOBODY_BIN" --check
		[ "$status" -eq 4 ]
	fi
}

@test "oomwatch --check reads cgroup v1 files (fake tree), host pressure counts" {
	local t=$BATS_TEST_TMPDIR/v1 d
	mkdir -p "$t/proc/self" "$t/proc/pressure" "$t/sys/fs/cgroup/memory/job"
	echo "35 25 0:31 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:9 - cgroup cgroup rw,memory" \
		> "$t/proc/self/mountinfo"
	printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n' \
		> "$t/proc/pressure/memory"
	d=$t/sys/fs/cgroup/memory/job
	echo 9000 > "$t/sys/fs/cgroup/memory/memory.usage_in_bytes"
	echo 60000000 > "$d/memory.usage_in_bytes"
	echo "$LIMIT" > "$d/memory.limit_in_bytes"
	printf 'cache 0\ninactive_file 1\ntotal_inactive_file 2000000\n' > "$d/memory.stat"
	echo 5 > "$d/memory.failcnt"
	printf 'oom_kill_disable 0\nunder_oom 0\noom_kill 2\n' > "$d/memory.oom_control"
	run env OOMWATCH_SYSROOT=$t "$BIN/oomwatch" --check -j
	# 58000000 / 67108864 = 86.43%
	[ "$status" -eq 3 ]
	echo "$output" | jq -e -s 'map(select(.type == "sample")) | length == 1 and
		.[0].cgroup == "/job" and .[0].cgroup_version == 1 and .[0].working_set_bytes == 58000000 and
		.[0].working_set_ratio == 0.8643 and .[0].limit_hits == 5 and .[0].oom_kills == 2 and
		.[0].ooms == null and .[0].psi_full_avg10_ratio == null'
	printf 'some avg10=50.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=12.00 avg60=0.00 avg300=0.00 total=0\n' \
		> "$t/proc/pressure/memory"
	echo 1000 > "$d/memory.usage_in_bytes"
	run env OOMWATCH_SYSROOT=$t "$BIN/oomwatch" --check -j
	[ "$status" -eq 3 ]
	echo "$output" | tail -1 | jq -e '.host_level == "warn" and .host_psi_full_avg10_ratio == 0.12'
}

@test "oomwatch alerts on a fake v2 tree: working set levels, memory.events deltas, pressure" {
	need_root
	local t=$BATS_TEST_TMPDIR/v2 d
	fake_v2 "$t"
	d=$t/sys/fs/cgroup/system.slice/docker-$FAKE_OK.scope
	export OOMWATCH_SYSROOT=$t
	start_tool ow oomwatch -j -i 100ms --alloc-min 0
	unset OOMWATCH_SYSROOT
	local out=$BATS_TEST_TMPDIR/ow.out
	# the two cgroups above a level say so at once
	wait_for "$out" "$FAKE_CRIT" 5
	wait_for "$out" "$FAKE_WARN" 5
	sleep 0.3
	# the ok one: 4 limit hits and a kill, then its working set at 96%
	printf 'low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 0\n' > "$d/memory.events"
	wait_for "$out" "\"container_id\":\"$FAKE_OK\"" 5
	sleep 0.3
	echo 1030792151 > "$d/memory.current"
	wait_for "$out" '"reason":"working_set".*'"$FAKE_OK" 5
	# the host under pressure
	printf 'some avg10=80.00 avg60=0.00 avg300=0.00 total=9\nfull avg10=50.00 avg60=0.00 avg300=0.00 total=9\n' \
		> "$t/proc/pressure/memory"
	wait_for "$out" 'host_pressure' 5
	sleep 0.3
	stop_tool "$TOOL_PID"
	all_json "$out"
	jq -e -s --arg id "$FAKE_CRIT" 'map(select(.event == "alert" and .container_id == $id)) |
		length == 1 and .[0].level == "crit" and .[0].reason == "working_set"' "$out"
	jq -e -s --arg id "$FAKE_WARN" 'map(select(.event == "alert" and .container_id == $id)) |
		length == 1 and .[0].level == "warn" and .[0].working_set_bytes == 943718400' "$out"
	jq -e -s --arg id "$FAKE_OK" 'map(select(.event == "alert" and .container_id == $id)) |
		length == 2 and
		(.[0].reason == "limit_hit,oom,oom_kill" and .[0].level == "crit" and .[0].limit_hits == 4 and
		 .[0].ooms == 1 and .[0].oom_kills == 1) and
		(.[1].reason == "working_set" and .[1].level == "crit" and .[1].limit_hits == 0 and
		 .[1].working_set_ratio == 0.96)' "$out"
	jq -e -s 'map(select(.reason == "host_pressure")) | length == 1 and .[0].level == "crit" and
		.[0].psi_full_avg10_ratio == 0.5 and .[0].cgroup == null' "$out"
	tail -1 "$out" | jq -e '.type == "summary" and .alerts == 5 and .oom_kills == 0 and .cgroups == 3'
}

@test "oomwatch: every kill at 10 MiB/s to full speed, in 64 and 256 MiB cgroups made after it started, has an alert before it" {
	need_memcg_v1
	# default settings: --warn 85, --crit 95, polled every second
	start_tool ow oomwatch -j --alloc-min 0
	local out=$BATS_TEST_TMPDIR/ow.out rates=(10 100 1024 0) limit rate rc n=0
	for limit in 67108864 268435456; do
		for rate in "${rates[@]}"; do
			# made now, after oomwatch started; a GiB to touch: killed
			make_memcg "r$rate-$limit" "$limit"
			hog_in "hog$n" "$CG" rate "$rate" 1024
			rc=0
			wait "$HOG_PID" || rc=$?
			[ "$rc" -eq 137 ]
			echo "$CG_REL $rate $HOG_PID" >> "$BATS_TEST_TMPDIR/runs"
			n=$((n + 1))
		done
	done
	sleep 1.5
	stop_tool "$TOOL_PID"
	all_json "$out"
	cat "$BATS_TEST_TMPDIR/runs"
	# per run: its kill, the alerts naming its cgroup before the kill line,
	# the first one's signal and its lead on the kill
	local cg pid
	while read -r cg rate pid; do
		jq -s -r --arg cg "$cg" --argjson p "$pid" --arg rate "$rate" "$JQ_NS"'
			(map(.event == "oom_kill" and .pid == $p) | index(true)) as $k |
			[.[0:$k][] | select(.event == "alert" and .cgroup == $cg)] as $a |
			(if $k then .[$k].ts | ns else 0 end) as $kt |
			"\($cg) rate=\($rate) kills=\(map(select(.event == "oom_kill" and .memcg == $cg)) | length)" +
			" alerts_before=\($a | length) first=\($a[0].signal // "none")/\($a[0].level // "-")" +
			" lead_ms=\(if $a[0] then ($kt - ($a[0].ts | ns)) / 1e6 | floor else "-" end)" +
			" by_signal=\([$a | group_by(.signal)[] | "\(.[0].signal):\(($kt - (.[0].ts | ns)) / 1e6 | floor)"] | join(","))"' \
			"$out" | tee -a "$BATS_TEST_TMPDIR/figures"
	done < "$BATS_TEST_TMPDIR/runs"
	cp "$BATS_TEST_TMPDIR/figures" "${OOMWATCH_FIGURES:-/dev/null}" 2>/dev/null || true
	# a run without an alert before its kill: every record naming its cgroup
	awk '/ alerts_before=0 / {print $1}' "$BATS_TEST_TMPDIR/figures" | while read -r cg; do
		grep -F "\"$cg\"" "$out" || true
	done
	cat "$BATS_TEST_TMPDIR/ow.err"
	# one kill per run, each with an alert for its cgroup before it
	[ "$(grep -c ' kills=1 ' "$BATS_TEST_TMPDIR/figures")" -eq 8 ]
	# the reclaim hook, where it is chosen, saw the limits reached
	if probe_chosen memcg_reclaim; then
		tail -1 "$out" | jq -e '.type == "summary" and .memcg_reclaims > 0'
	fi
	! grep -q 'alerts_before=0 ' "$BATS_TEST_TMPDIR/figures" || false
	# and across the stream: no kill in a test cgroup without an alert before it
	jq -e -s --arg pre "/aiscope-oomw-$$-" '
		. as $all | [range(length) | . as $i | $all[$i] |
			select(.event == "oom_kill" and (.memcg | startswith($pre))) | .memcg as $cg |
			select([$all[0:$i][] | select(.event == "alert" and .cgroup == $cg)] | length == 0)] |
		length == 0' "$out"
}

@test "oomwatch: a cgroup made and OOM-killed while oomwatch could not look has an alert before its kill, its counters counted from its birth" {
	need_memcg_v1
	start_tool ow oomwatch -j
	local out=$BATS_TEST_TMPDIR/ow.out rc=0
	# stopped, oomwatch reads nothing: the cgroup's first reading comes
	# after its kill, with the kill already in its counters
	kill -STOP "$TOOL_PID"
	make_memcg born 67108864
	hog_in hog "$CG" rate 0 1024
	wait "$HOG_PID" || rc=$?
	[ "$rc" -eq 137 ]
	kill -CONT "$TOOL_PID"
	sleep 1.5
	stop_tool "$TOOL_PID"
	all_json "$out"
	grep -F "\"$CG_REL\"" "$out"
	# the kill, and before it one alert for the cgroup that has the kill
	# in its deltas (counted from 0, not taken as the base); none after
	jq -e -s --arg cg "$CG_REL" --argjson p "$HOG_PID" '
		(map(.event == "oom_kill" and .pid == $p) | index(true)) as $k |
		[.[] | select(.event == "alert" and .cgroup == $cg and .oom_kills > 0)] as $all |
		[.[0:$k][] | select(.event == "alert" and .cgroup == $cg)] as $a |
		$k != null and ($a | length) >= 1 and ($all | length) == 1 and
		$a[-1].oom_kills == 1 and $a[-1].level == "crit" and
		($a[-1].reason | split(",") | index("oom_kill")) != null' "$out"
}

# probe_chosen HOOK: oomwatch --list-probes has HOOK chosen here
probe_chosen() {
	"$BIN/oomwatch" --list-probes 2>/dev/null |
		awk -v h="$1" '/^[^ ]/ { in_h = $1 == h } in_h && / chosen$/ { f = 1 } END { exit !f }'
}

@test "oomwatch: memcg reclaim warns as anonymous memory takes over a 64 MiB cgroup full of page cache, which alone raises nothing" {
	need_memcg_v1
	probe_chosen memcg_reclaim || skip "no memcg reclaim hook here"
	local f=$BATS_TEST_TMPDIR/cache.dat out=$BATS_TEST_TMPDIR/ow.out rc=0 pc
	# 128 MiB on disk, out of the cache: read inside the cgroup, charged to it
	"$HELPERS/pagecache" create "$f" 32768
	"$HELPERS/pagecache" drop "$f"
	# polled every 10 s: the alerts come from the kernel signals alone
	start_tool ow oomwatch -j -i 10s --alloc-min 0
	make_memcg cache
	start_ready pc "$HELPERS/pagecache" serve "$f"
	pc=$READY_PID
	move_to_cgroup "$CG" "$pc"
	kill -USR1 "$pc"
	wait_for "$BATS_TEST_TMPDIR/pc.out" '^read ' 20
	# the cgroup at its limit on page cache: its thresholds crossed, its
	# reclaim seen, no alert
	grep -E '^(total_)?inactive_file |^rss ' "$CG/memory.stat"
	sleep 1
	[ "$(jq -s --arg cg "$CG_REL" 'map(select(.event == "alert" and .cgroup == $cg)) | length' "$out")" -eq 0 ]
	# then anonymous memory at 100 MiB/s: the usage stays at the limit (the
	# cache gives way), the thresholds see nothing new; reclaim does
	hog_in hog "$CG" rate 100 1024
	wait "$HOG_PID" || rc=$?
	[ "$rc" -eq 137 ]
	sleep 0.5
	stop_tool "$TOOL_PID"
	all_json "$out"
	jq -c --arg cg "$CG_REL" 'select(.cgroup == $cg or .memcg == $cg) |
		{ts, event, level, reason, signal, working_set_ratio, pid}' "$out"
	jq -e -s --arg cg "$CG_REL" --argjson p "$HOG_PID" "$JQ_NS"'
		(map(.event == "oom_kill" and .pid == $p and .memcg == $cg) | index(true)) as $k |
		[.[0:$k][] | select(.event == "alert" and .cgroup == $cg)] as $a |
		$k != null and ($a | length) >= 1 and $a[0].signal == "memcg_reclaim" and
		$a[0].reason == "working_set" and $a[0].working_set_ratio >= 0.85 and
		((.[$k].ts | ns) > ($a[0].ts | ns))' "$out"
	tail -1 "$out" | jq -e '.type == "summary" and .memcg_reclaims > 0'
}

@test "oomwatch: a cgroup held at 50% raises no alert; --check and the stream agree on the levels of 50, 90 and 97%" {
	need_memcg_v1
	local half ninety top out=$BATS_TEST_TMPDIR/ow.out lim=268435456
	start_tool ow oomwatch -j -i 200ms --alloc-min 0
	# 128, 230 and 248 MiB of 256, touched, held
	make_memcg half "$lim"
	half=$CG_REL
	hog_in h50 "$CG" grow 1024 2 131072
	make_memcg ninety "$lim"
	ninety=$CG_REL
	hog_in h90 "$CG" grow 1024 2 235520
	make_memcg top "$lim"
	top=$CG_REL
	hog_in h97 "$CG" grow 1024 2 253952
	wait_for "$BATS_TEST_TMPDIR/h50.out" '^at 131072$' 10
	wait_for "$BATS_TEST_TMPDIR/h90.out" '^at 235520$' 10
	wait_for "$BATS_TEST_TMPDIR/h97.out" '^at 253952$' 10
	# held for a few polls
	sleep 2
	run "$BIN/oomwatch" --check -j
	echo "$output" > "$BATS_TEST_TMPDIR/check.out"
	sleep 0.5
	stop_tool "$TOOL_PID"
	all_json "$out"
	# the steady one: no alert at all
	[ "$(jq -s --arg cg "$half" 'map(select(.event == "alert" and .cgroup == $cg)) | length' "$out")" -eq 0 ]
	# the level the stream holds (its last alert's, ok without one) is --check's
	local cg want got
	for cg in "$half" "$ninety" "$top"; do
		got=$(jq -s -r --arg cg "$cg" '[.[] | select(.event == "alert" and .cgroup == $cg)] |
			if length == 0 then "ok" else .[-1].level end' "$out")
		want=$(jq -s -r --arg cg "$cg" '[.[] | select(.type == "sample" and .cgroup == $cg)] |
			if length == 0 then "ok" else .[0].level end' "$BATS_TEST_TMPDIR/check.out")
		echo "$cg stream=$got check=$want"
		[ "$got" = "$want" ]
	done
	[ "$(jq -s -r --arg cg "$ninety" '.[] | select(.type == "sample" and .cgroup == $cg) | .level' "$BATS_TEST_TMPDIR/check.out")" = warn ]
	[ "$(jq -s -r --arg cg "$top" '.[] | select(.type == "sample" and .cgroup == $cg) | .level' "$BATS_TEST_TMPDIR/check.out")" = crit ]
	# the crossings came from the kernel's thresholds, not a poll
	jq -e -s --arg cg "$top" 'map(select(.event == "alert" and .cgroup == $cg)) |
		map(.signal) | index("threshold") != null' "$out"
}

@test "oomwatch leaves no cgroup behind" {
	need_memcg_v1
	! ls -d "$MEMCG_ROOT"/aiscope-oomw-* 2>/dev/null || false
}
