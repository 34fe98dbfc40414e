#!/usr/bin/env bats
# numaplace: the command-line contract; on this host (one NUMA node) a
# pinned spinner's CPU time against its utime+stime, a helper's memory per
# node against its numa_maps, the one-node note; GPU and RDMA affinity on a
# sysfs tree the test builds (AISCOPE_SYSROOT): a process with a GPU on
# node 1 and everything else on node 0 is flagged REMOTE with the figures.
# Two real nodes (placement, migrate_pages) are tests/vm/numaplace.sh's.

bats_require_minimum_version 1.5.0
load lib

teardown() {
	aiscope_teardown
}

# ---- contract ----

@test "numaplace --help lists the shared and own options, examples and exit codes" {
	check_help numaplace "${SHARED_OPTS[@]}" --by --prometheus --listen
	check_usage_version numaplace
}

@test "numaplace usage errors exit 2 with one line on stderr and nothing on stdout" {
	local bad=(
		"--bogus" "-p abc" "-p 0" "-p 999999999" "-i 0" "--by foo" "--by cgroup" "-s nope"
		"-c /nonexistent" "1 2 3" "--probe-mode foo" "-n 0" "--btf /nonexistent"
	)
	check_usage_errors numaplace "${bad[@]}"
}

@test "numaplace --metric-label refuses the label names its own series have" {
	check_own_metric_labels numaplace node kind
}

@test "numaplace without privileges exits 77 and says what is missing" {
	check_no_privilege numaplace
}

@test "numaplace --list-probes: sched_switch chosen, the NUMA tracepoints listed" {
	run "$BIN/numaplace" --list-probes
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == HOOK*MECHANISM*TARGET*STATUS ]]
	echo "$output" | grep -E '^sched_switch +(tp_btf|raw_tp|tracepoint) .*chosen'
	for hook in sched_move_numa sched_swap_numa sched_stick_numa mm_migrate_pages; do
		echo "$output" | grep -E "^$hook +tracepoint "
	done
	run "$BIN/numaplace" --list-probes -j
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | jq -s '[.[] | select(.type == "probe")] | length')" -eq 7 ]
}

# ---- against the truth ----

@test "numaplace: a pinned spinner's CPU time equals the kernel's sum_exec_runtime, all on its CPU's node" {
	need_root
	local node pid truth tool
	node=$(basename "$(dirname "$(ls -d /sys/devices/system/node/node*/cpu0 | head -1)")")
	node=${node#node}
	start_tool s numaplace -j -i 1
	# spins 2 s on CPU 0, then sleeps: all its time is inside the tool's
	# run, and the kernel's count of it (/proc/PID/schedstat: on-CPU ns)
	# no longer grows
	start_bg spin taskset -c 0 bash -c 'e=$((SECONDS + 2)); while [ $SECONDS -lt $e ]; do :; done
		echo "ran $$"; exec sleep 30'
	wait_for "$BATS_TEST_TMPDIR/spin.out" '^ran' 20
	sleep 1.2
	read -r _ pid < "$BATS_TEST_TMPDIR/spin.out"
	read -r truth _ < "/proc/$pid/schedstat"
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	tool=$(jq -s --argjson p "$pid" '[.[] | select(.type == "sample" and .row == "pid" and .pid == $p) | .cpu_ns] | add' "$BATS_TEST_TMPDIR/s.out")
	echo "pid $pid: tool $tool ns, schedstat $truth ns"
	# it ran (this machine's CPUs are shared: not all of the 2 s)
	[ "$truth" -ge 200000000 ]
	within 2 "$tool" "$truth"
	jq -e -s --argjson n "$node" --argjson p "$pid" '[.[] | select(.type == "sample" and .pid == $p and .cpu_ns > 0)] |
		length > 0 and all(.cpu_node == $n and ([.cpu_nodes[] | select(.node == $n) | .ratio] == [1]) and .remote == false)' \
		"$BATS_TEST_TMPDIR/s.out"
	# the host row is the sum of the rows (-r 0 is not needed: -j shows all)
	jq -e -s '[.[] | select(.type == "sample")] | group_by(.seq) | all(
		(map(select(.row == "host")) | .[0].cpu_ns) == (map(select(.row == "pid")) | map(.cpu_ns) | add // 0))' \
		"$BATS_TEST_TMPDIR/s.out"
}

@test "numaplace: memory per node equals numa_maps; a -p process that sleeps still has its row" {
	need_root
	local pid truth
	start_ready nb "$HELPERS/numabind" 0 0 32
	pid=$READY_PID
	kill -STOP "$pid"
	run -0 "$BIN/numaplace" -j -p "$pid" -i 300ms -n 2
	truth=$(awk '{ kb = 0
		for (i = 1; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { sub(/.*=/, "", $i); kb = $i }
		for (i = 1; i <= NF; i++) if ($i ~ /^N0=/) { v = $i; sub(/.*=/, "", v); s += v * kb * 1024 } }
		END { printf "%.0f\n", s }' "/proc/$pid/numa_maps")
	kill -CONT "$pid"
	echo "numa_maps node 0: $truth bytes"
	[ "$truth" -ge $((32 << 20)) ]
	echo "$output" | grep '^{' > "$BATS_TEST_TMPDIR/m.out"
	jq -e -s --argjson t "$truth" '[.[] | select(.type == "sample" and .row == "pid")] |
		length == 2 and all(.mem_bytes == $t and .mem_node == 0 and .mem_nodes[0].bytes == $t and
		.cpu_ns == 0 and .cpu_node == null and .comm == "numabind")' "$BATS_TEST_TMPDIR/m.out"
}

@test "numaplace on a one-node host says so on stderr and still shows placement" {
	need_root
	[ "$(cat /sys/devices/system/node/online)" = 0 ] || skip "this host has nodes $(cat /sys/devices/system/node/online)"
	run --separate-stderr -0 "$BIN/numaplace" -i 300ms -n 1
	[[ "$stderr" == *"numaplace: this host has one NUMA node (node0)"* ]]
	[[ "${lines[1]}" == *PID*COMM*CPU_NODES*MEM_NODES*DEVICES*FLAG* ]]
	[[ "${lines[2]}" == *"[host]"*"0:100%"* ]]
}

@test "numaplace: a process with a GPU on node 1 and CPUs and memory on node 0 is REMOTE, with the figures" {
	need_root
	make_sysroot
	start_bg far bash -c 'exec 3< "$1/dev/nvidia0" 4< "$1/dev/nvidiactl" 5< "$1/dev/infiniband/uverbs0"; exec sleep 60' _ "$R"
	local far=$BG_PID
	start_bg near bash -c 'exec 3< "$1/dev/nvidia1"; exec sleep 60' _ "$R"
	local near=$BG_PID
	sleep 0.3
	run -0 env AISCOPE_SYSROOT="$R" "$BIN/numaplace" -j -p "$far,$near" -i 300ms -n 1
	echo "$output" | grep '^{' > "$BATS_TEST_TMPDIR/d.out"
	cat "$BATS_TEST_TMPDIR/d.out"
	jq -e -s --argjson p "$far" '[.[] | select(.type == "sample" and .pid == $p)][0] |
		.remote == true and (.devices | length) == 2 and
		.devices[0] == {"kind":"gpu","name":"nvidia0","pci":"0000:3b:00.0","node":1,"cpu_local_ratio":null,"mem_local_ratio":0,"remote":true} and
		.devices[1] == {"kind":"rdma","name":"mlx5_0","pci":"0000:17:00.0","node":0,"cpu_local_ratio":null,"mem_local_ratio":1,"remote":false}' \
		"$BATS_TEST_TMPDIR/d.out"
	jq -e -s --argjson p "$near" '[.[] | select(.type == "sample" and .pid == $p)][0] |
		.remote == false and .devices == [{"kind":"gpu","name":"nvidia1","pci":"0000:af:00.0","node":0,"cpu_local_ratio":null,"mem_local_ratio":1,"remote":false}]' \
		"$BATS_TEST_TMPDIR/d.out"
	# the table: devices at their nodes, the flag
	run -0 env AISCOPE_SYSROOT="$R" "$BIN/numaplace" -p "$far" -i 300ms -n 1
	echo "$output" | grep -E "^ *$far .*nvidia0@1,mlx5_0@0 +REMOTE$"
	# without the knob the tree is not looked at
	run -0 "$BIN/numaplace" -j -p "$far" -i 300ms -n 1
	echo "$output" | grep '^{' | jq -e -s '[.[] | select(.type == "sample" and .row == "pid")][0] | .devices == [] and .remote == false'
}

@test "numaplace: SIGINT and SIGTERM end with a summary, -j | head exits at once" {
	need_root
	check_signals numaplace
	check_head_exit numaplace
}
