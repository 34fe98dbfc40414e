#!/usr/bin/env bats
# rdmasnoop: the command-line contract on a host without RDMA (these test
# hosts: no rdma_rxe, no device): one clear line and exit 77, --list-probes
# still works. Where a test needs a device to get past that check, a mount
# namespace shows an empty directory under /sys/class/infiniband (named
# "fake0": nothing is traced through it; it only lets the tool load its BPF
# programs and attach to libibverbs). Real verbs traffic, exact against what
# ibv_rc_pingpong was told to move, is tests/vm/rdmasnoop.sh (Soft-RoCE in
# the VM kernels, which have the rdma_rxe module).

bats_require_minimum_version 1.5.0
load lib

teardown() {
	aiscope_teardown
}

# with_fake_device CMD...: CMD in a mount namespace whose /sys/class has an
# (empty) RDMA device directory
with_fake_device() {
	unshare -m sh -c 'mount -t tmpfs none /sys/class && mkdir -p /sys/class/infiniband/fake0 &&
		exec "$@"' sh "$@"
}

no_rdma_here() {
	[ -z "$(ls -A /sys/class/infiniband 2>/dev/null)" ] || skip "this host has RDMA devices"
}

@test "rdmasnoop --help lists the shared and own options and ends with examples" {
	check_help rdmasnoop "${SHARED_OPTS[@]}" --events --rescan --wait-device --hold --usage --version
}

@test "rdmasnoop --usage and --version" {
	check_usage_version rdmasnoop
}

@test "rdmasnoop usage errors exit 2 with one line on stderr and nothing on stdout" {
	check_usage_errors rdmasnoop "--bogus" "-p" "-p abc" "-p 999999999" "-i 0" "-d -1" \
		"-n 0" "-r x" "-s nope" "--rescan 5x" "--rescan -1" "1 2 3" "--probe-mode foo" \
		"--buffer-size 1" "--lib /x"
}

@test "rdmasnoop on a host without RDMA devices: one line naming what is missing, exit 77" {
	no_rdma_here
	run -77 "$BIN/rdmasnoop" -d 1
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "rdmasnoop: no RDMA device on this host (/sys/class/infiniband is empty or absent)"* ]]
	run -77 --separate-stderr "$BIN/rdmasnoop" -j -d 1
	[ "${#lines[@]}" -eq 1 ]
	echo "$output" | jq -e '.type == "error" and .tool == "rdmasnoop" and .exit_code == 77'
	[[ "$stderr" == *"no RDMA device"* ]]
}

@test "rdmasnoop --wait-device on a host without RDMA devices: one line on stderr, runs to its end with a summary" {
	need_root
	no_rdma_here
	run -0 --separate-stderr "$BIN/rdmasnoop" --wait-device -j -d 1
	echo "$stderr"
	[ "${stderr_lines[0]}" = "rdmasnoop: no RDMA device on this host yet (/sys/class/infiniband): tracing the processes that open one once it appears" ]
	[ "$(grep -c "no RDMA device" <<< "$stderr")" -eq 1 ]
	echo "$output" > "$BATS_TEST_TMPDIR/out"
	all_json "$BATS_TEST_TMPDIR/out"
	jq -e -s 'map(select(.type == "summary")) | length == 1 and
		.[0].exit_reason == "duration" and .[0].wrs == 0 and .[0].attach_failures == 0' "$BATS_TEST_TMPDIR/out"
	run -0 "$BIN/rdmasnoop" --wait-device --list-probes
}

@test "rdmasnoop --hold: a program started while it runs is stopped at exec until scanned, then continued; none without --hold" {
	need_root
	no_rdma_here
	local n
	start_tool h rdmasnoop --hold --wait-device -j -d 4 --comm sleep
	sleep 0.5
	# each sleep stopped (its exec, its loader's libraries) and continued:
	# it ends, with its own status
	for n in 1 2 3; do
		timeout 10 sleep 0.1
	done
	wait "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/h.out"
	tail -1 "$BATS_TEST_TMPDIR/h.out"
	jq -e -s '.[-1] | .type == "summary" and .held >= 3 and .hold_max_ns > 0 and
		.hold_max_ns < 1000000000 and .holds_skipped == 0' "$BATS_TEST_TMPDIR/h.out"
	start_tool n rdmasnoop --wait-device -j -d 2 --comm sleep
	sleep 0.5
	timeout 10 sleep 0.1
	wait "$TOOL_PID"
	jq -e -s '.[-1] | .held == 0 and .hold_max_ns == 0 and .holds_skipped == 0' "$BATS_TEST_TMPDIR/n.out"
}

@test "rdmasnoop without privileges exits 77 and says what is missing" {
	need_root
	command -v unshare > /dev/null || skip "unshare missing"
	command -v setpriv > /dev/null || skip "setpriv missing"
	nobody_copy "$BIN/rdmasnoop"
	run with_fake_device "${AS_NOBODY[@]}" "$NOBODY_BIN" -d 1
	[ "$status" -eq 77 ]
	[[ "$output" == *"CAP_BPF"* ]]
	[ "${#lines[@]}" -eq 1 ]
}

@test "rdmasnoop --list-probes: libibverbs' functions, the provider's ops, the devices; JSON too" {
	run -0 "$BIN/rdmasnoop" --list-probes
	[[ "${lines[0]}" == HOOK*MECHANISM*TARGET*STATUS ]]
	echo "$output" | grep -E '^exec +(tp_btf|raw_tp|tracepoint) .*chosen'
	echo "$output" | grep -E '^provider +uprobe +<provider>:ops.post_send +chosen'
	echo "$output" | grep -E '^provider +uprobe +<provider>:ops.poll_cq +chosen'
	echo "$output" | grep -E '^provider +uprobe +<provider>:ops.post_srq_recv +unavailable'
	if [ -z "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
		echo "$output" | grep -E '^device +uprobe +/sys/class/infiniband +unavailable: no RDMA device'
	fi
	# the loader cache's libibverbs, where rdma-core is installed
	lib=$(ldconfig -p | awk '$1 == "libibverbs.so.1" { print $NF; exit }')
	if [ -n "$lib" ]; then
		for s in "ibv_open_device (return)" ibv_modify_qp "ibv_reg_mr (return)" \
			"ibv_reg_mr_iova2 (return)" ibv_dereg_mr ibv_create_ah ibv_destroy_ah; do
			echo "$output" | grep -F "$lib:$s chosen" || { echo "$s not chosen"; false; }
		done
	fi
	"$BIN/rdmasnoop" --list-probes -j > "$BATS_TEST_TMPDIR/plan"
	all_json "$BATS_TEST_TMPDIR/plan"
	jq -e -s 'all(.[]; .type == "probe" and .tool == "rdmasnoop" and has("hook") and
		has("target") and has("status") and has("reason"))' "$BATS_TEST_TMPDIR/plan"
}

@test "rdmasnoop loads and attaches (a device directory faked), ends with a valid summary" {
	need_root
	command -v unshare > /dev/null || skip "unshare missing"
	no_rdma_here
	with_fake_device "$BIN/rdmasnoop" -j -d 1 > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" ||
		{ cat "$BATS_TEST_TMPDIR/err"; false; }
	all_json "$BATS_TEST_TMPDIR/out"
	jq -e -s 'map(select(.type == "summary")) | length == 1 and .[0].exit_reason == "duration" and
		.[0].wrs == 0 and .[0].providers == 0 and .[0].attach_failures == 0' "$BATS_TEST_TMPDIR/out"
	with_fake_device "$BIN/rdmasnoop" -d 1 -C > "$BATS_TEST_TMPDIR/table" 2> "$BATS_TEST_TMPDIR/err"
	grep -E '^ +PID COMM +DEV:PORT +QPN T +PEER\(GID/QPN\) +WRS' "$BATS_TEST_TMPDIR/table"
	grep -E 'work requests, 0 bytes, 0 completions, 0 errors, 0 providers, 0 lost events' \
		"$BATS_TEST_TMPDIR/err"
	# metrics: the build info at least (no traffic: no series of its own yet)
	with_fake_device "$BIN/rdmasnoop" -i 400ms -d 1 --prometheus "$BATS_TEST_TMPDIR/m.prom" \
		> /dev/null 2> "$BATS_TEST_TMPDIR/err"
	grep -q '^aiscope_build_info{tool="rdmasnoop"' "$BATS_TEST_TMPDIR/m.prom"
	if command -v promtool > /dev/null; then
		promtool check metrics < "$BATS_TEST_TMPDIR/m.prom"
	fi
}
