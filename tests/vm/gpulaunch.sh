# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# gpulaunch inside the test VMs: uprobes on a static executable that
# carries its own CUDA runtime and driver (tests/helpers/cudastatic: the
# doubles of tests/cuda/double/ with the exact C ABI, linked in), so that
# no shared library or dynamic loader is needed. The real CUDA libraries
# are not carried: they need glibc's loader and libraries in the image, and
# the hosts' tests cover them (tests/gpulaunch.bats). What this adds: each
# kernel's uprobes and BPF (6.1+: cookies, sleepable uprobes, bpf_find_vma;
# 5.10: none of them, the API told by the probed address), and on arm64 the
# argument decoding of the AAPCS64 (dim3 in two registers, the ninth
# argument of cuLaunchKernel on the stack).
# Sourced by tests/vm/run.sh (busybox sh; see lib.sh).

GL=/opt/aiscope/bin/gpulaunch
CS=$H/cudastatic
OPS="launch launch cu_launch reg getkernel launch13 malloc:4096 malloc:8192 free memcpy:1:100 memcpy:2:50 a2a:12:5 batch:3 sync_us:100000"

# run_static NAME ARGS...: cudastatic waits, gpulaunch ARGS starts and finds
# it in /proc, cudastatic makes its calls; the tool's JSON in $T/NAME.out
run_static() {
	_rs=$1	# not _n: bg and start_tool use that one
	shift
	bg cs "$CS" --wait $OPS
	wait_for "$T/cs.out" '^ready' || fail "cudastatic did not start"
	CS_PID=$(awk '/^ready/ {print $2}' "$T/cs.out")
	start_tool "$_rs" $GL -j -i 10 -p "$CS_PID" "$@"
	kill -USR1 "$CS_PID"
	wait_for "$T/cs.out" 'cudaStreamSynchronize' 30 || fail "cudastatic did not finish"
	sleep 0.5
	stop_tool "$TOOL_PID" || fail "gpulaunch exited $?: $(cat "$T/$_rs.err")"
	json_ok "$T/$_rs.out"
	grep '"type":"sample"' "$T/$_rs.out" | sed 's/.*"kernel"/"kernel"/' | cut -c1-200
}

# kernel_launches FILE KERNEL LAYER: launches of that kernel and layer
kernel_launches() {
	jsel "$1" '"type":"sample"' "\"kernel\":\"$2\"" "\"layer\":\"$3\"" | jsum launches
}

t_list_probes() {
	bg cs "$CS" --wait launch
	wait_for "$T/cs.out" '^ready' || fail "cudastatic did not start"
	pid=$(awk '/^ready/ {print $2}' "$T/cs.out")
	$GL --list-probes -p "$pid" > "$T/plan" 2>&1 || { cat "$T/plan"; fail "--list-probes exited $?"; }
	cat "$T/plan"
	[ -n "$(plan_chosen exec "$T/plan")" ] || fail "no mechanism for the exec hook"
	grep -Eq "^api +(cookie|address-map) .*chosen" "$T/plan" || fail "no API identification"
	for s in cudaLaunchKernel __cudaLaunchKernel cuLaunchKernel __cudaRegisterFunction; do
		grep -q "^executable .*cudastatic:$s chosen" "$T/plan" || fail "$s not planned"
	done
}

# launches counted once each (a runtime launch calls the driver), names from
# registration, the handle map and the executable's symbols
t_counts() {
	run_static g $1
	n=$(kernel_launches "$T/g.out" 'vecAdd(float*, float*, float*, int)' runtime)
	r=$(kernel_launches "$T/g.out" 'reduceSum(float*, int)' runtime)
	d=$(kernel_launches "$T/g.out" '[unnamed CUfunction]' driver)
	all=$(jsel "$T/g.out" '"type":"sample"' | jsum launches)
	echo "mode '$1': vecAdd $n, reduceSum $r, direct driver $d, all $all"
	[ "$n" -eq 3 ] || fail "vecAdd: $n launches, not 3"
	[ "$r" -eq 1 ] || fail "reduceSum: $r launches, not 1"
	[ "$d" -eq 1 ] || fail "direct driver launches: $d, not 1"
	[ "$all" -eq 5 ] || fail "$all launches in all, not 5"
	# scanned before its calls (-p): no call of unknown API
	grep '"type":"summary"' "$T/g.out" | grep -Eq '"unscanned_calls":(0|null)[,}]' ||
		fail "calls not scanned: $(grep '"type":"summary"' "$T/g.out")"
	if [ "$1" = --latency ]; then
		e=$(jsel "$T/g.out" '"type":"sample"' | jsum errors)
		[ "$e" -eq 0 ] || fail "$e errors"
	fi
}

# -e: every decoded field equals what cudastatic passed
t_events() {
	run_static e -e
	n=$(jsel "$T/e.out" '"type":"event"' | wc -l)
	[ "$n" -eq 5 ] || fail "$n events, not 5"
	ok=$(jsel "$T/e.out" '"type":"event"' '"grid":[4,2,1]' '"block":[256,1,1]' \
		'"shared_mem_bytes":1024' '"stream":"0x1234"' '"rc":0' | wc -l)
	[ "$ok" -eq 5 ] || fail "$ok of 5 events decoded as passed"
	d=$(jsel "$T/e.out" '"type":"event"' '"api":"cuLaunchKernel"' '"layer":"driver"' | wc -l)
	[ "$d" -eq 1 ] || fail "$d direct driver events"
}

t_mem() {
	run_static m --mem
	line=$(jsel "$T/m.out" '"row":"mem"' '"alloc_calls":2')
	echo "$line"
	[ -n "$line" ] || fail "no mem record with 2 allocations"
	for kv in '"alloc_bytes":12288' '"alloc_failures":0' '"free_calls":1' '"free_bytes":8192' \
		'"copy_h2d_bytes":100' '"copy_d2h_bytes":50' '"copy_d2d_calls":1' '"copy_d2d_bytes":60' \
		'"copy_default_calls":1' '"copy_default_bytes":30' '"sync_calls":1'; do
		echo "$line" | grep -q "$kv" || fail "mem: no $kv"
	done
	out=$(jsel "$T/m.out" '"row":"mem"' | tail -n 1 | jval outstanding_bytes)
	[ "$out" -eq 4096 ] || fail "outstanding $out, not 4096"
	w=$(jsel "$T/m.out" '"row":"mem"' | jsum sync_wait_ns)
	[ "$w" -ge 100000000 ] || fail "sync wait $w ns < 100 ms"
}

# a process that starts after the tool and launches at once, before user
# space has scanned it: every launch told by its API all the same (5.10:
# from the task's VMA cache, not guessed; elsewhere attach cookies). Its
# three runtime launches and its one direct driver launch exact, the
# runtime's nested driver launches told apart by the caller's file offset
# in the runtime's part of the executable (bpf_find_vma, or 5.10's VMA
# cache), whether or not user space has scanned it yet
t_late() {
	am=$($GL --list-probes --lib "$CS" 2>&1 | grep -c '^api .*address-map .*chosen')
	# -u: never scanned (the hidden test knob; no rescan either), so that
	# the BPF side's own lookups for a process not scanned are what runs
	if [ "$1" = -u ]; then
		start_tool l env AISCOPE_TEST_NO_EXEC_SCAN=1 $GL -j -i 10 --rescan 0 --lib "$CS"
	else
		start_tool l $GL -j -i 10 --lib "$CS"
	fi
	"$CS" launch launch cu_launch launch13 > "$T/cs.out" 2>&1 || fail "cudastatic failed: $(cat "$T/cs.out")"
	sleep 0.5
	stop_tool "$TOOL_PID" || fail "gpulaunch exited $?: $(cat "$T/l.err")"
	json_ok "$T/l.out"
	rt=$(jsel "$T/l.out" '"type":"sample"' '"layer":"runtime"' | jsum launches)
	all=$(jsel "$T/l.out" '"type":"sample"' | jsum launches)
	sum=$(grep '"type":"summary"' "$T/l.out")
	echo "address map: $am; runtime launches $rt, all $all; $(echo "$sum" | grep -o '"unscanned_calls":[0-9a-z]*')"
	[ "$rt" -eq 3 ] || fail "$rt runtime launches, not 3"
	echo "$sum" | grep -Eq '"unscanned_calls":(0|null)[,}]' || fail "calls not told: $sum"
	[ "$all" -eq 4 ] || fail "$all launches, not 4 (address map: $am)"
}

# --hold: a copy of cudastatic (an inode nothing probes yet, no --lib),
# stopped at its exec until its probes are attached: every launch from the
# first instruction of main on, then continued (bpf_send_signal)
t_hold() {
	mkdir -p "$T/bin"
	cp "$CS" "$T/bin/cudastatic"
	start_tool h $GL -j -i 10 --hold --comm cudastatic
	"$T/bin/cudastatic" launch launch cu_launch > "$T/cs.out" 2>&1 || fail "cudastatic failed: $(cat "$T/cs.out")"
	sleep 0.5
	stop_tool "$TOOL_PID" || fail "gpulaunch exited $?: $(cat "$T/h.err")"
	json_ok "$T/h.out"
	all=$(jsel "$T/h.out" '"type":"sample"' | jsum launches)
	sum=$(grep '"type":"summary"' "$T/h.out")
	echo "launches $all; $(echo "$sum" | grep -o '"held":[0-9]*,"hold_max_ns":[0-9]*')"
	[ "$all" -eq 3 ] || fail "$all launches, not 3"
	echo "$sum" | grep -q '"held":1,' || fail "held: $sum"
}

run_test "gpulaunch --list-probes finds a static runtime in an executable" 120 t_list_probes
run_test "gpulaunch: launches counted once, names (entry probes)" 180 t_counts ""
run_test "gpulaunch --latency: launches counted once, no errors" 180 t_counts --latency
run_test "gpulaunch -e: each launch decoded as passed" 180 t_events
run_test "gpulaunch --mem: allocations, frees, copies, syncs" 180 t_mem
run_test "gpulaunch: a process that launches before its scan, every launch told" 180 t_late
run_test "gpulaunch: a process never scanned, every launch told, nested ones once" 180 t_late -u
run_test "gpulaunch --hold: a new static executable stopped at exec until attached, every launch" 120 t_hold
