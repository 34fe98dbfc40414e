# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# topograph inside the test VMs: its own BPF side, the process lifecycle
# hooks of tests/topograph.bats (the lifecycle helper's truth: pids, parent,
# exit code, exec count) on each mechanism the kernel has. socketsnoop and
# ipcsnoop are stand-ins that only say they trace (socketsnoop cannot run on
# every kernel of the matrix, and their own tests are theirs), so the graph
# has no edges and --tree shows the processes.
# Sourced by tests/vm/run.sh (busybox sh; see lib.sh).

TG=/opt/aiscope/bin/topograph

t_topo_plan() {
	$TG --list-probes > "$T/plan" 2>&1 || { cat "$T/plan"; fail "--list-probes exited $?"; }
	cat "$T/plan"
	for h in fork exec exit; do
		case $(plan_chosen sched_process_$h "$T/plan") in
		tp_btf|raw_tp|tracepoint) ;;
		*) fail "no sched_process_$h hook" ;;
		esac
	done
	$TG --list-probes -j > "$T/plan.j" || fail "--list-probes -j exited $?"
	json_ok "$T/plan.j"
	[ "$(jsel "$T/plan.j" '"type":"probe"' '"tool":"topograph"' | wc -l)" -eq 9 ] || fail "not 9 probe records"
}

# topograph next to stand-ins of the tools it runs
topo_stubs() {
	mkdir -p "$T/bin"
	cp "$TG" "$T/bin/"
	for t in socketsnoop ipcsnoop; do
		printf '#!/bin/sh\ntrap "exit 0" INT TERM\necho "Tracing (a stand-in)" >&2\nwhile :; do sleep 1; done\n' \
			> "$T/bin/$t"
		chmod +x "$T/bin/$t"
	done
}

# node PID: topograph's node line of PID
node() {
	jsel "$T/g.out" '"type":"node"' "\"pid\":$1,"
}

t_topo_life() {
	mode=$1
	$TG --list-probes --probe-mode "$mode" > "$T/plan" 2>&1 || skip_test "no $mode here"
	grep -Eq " $mode +(sched/)?sched_process_fork +chosen$" "$T/plan" || skip_test "no $mode here"
	topo_stubs
	start_tool g "$T/bin/topograph" -j -d 120 --tree --probe-mode "$mode"
	bg lc "$H/lifecycle" pipe 3000 3
	bg ex "$H/lifecycle" execs 4
	wait_for "$T/lc.out" '^pipe ' || fail "lifecycle pipe"
	wait_for "$T/ex.out" '^execs ' || fail "lifecycle execs"
	$H/bpfprogs > "$T/progs"
	stop_tool "$TOOL_PID" || fail "topograph exited $?: $(cat "$T/g.err")"
	json_ok "$T/g.out"
	$TG --list-probes > "$T/plan.all" 2>&1
	skipped_where_preemptible "$T/progs" "$(jsel "$T/g.out" '"type":"summary"')" "$T/plan.all"
	skipped_runs_retry "$T/progs" "$(jsel "$T/g.out" '"type":"summary"')"
	read -r _ parent grand child _ _ got status < "$T/lc.out"
	read -r _ eparent echild n < "$T/ex.out"
	echo "truth: pipe parent $parent (of $grand) child $child read $got status $status; execs $eparent -> $echild x$n"
	node "$child"
	node "$echild"
	[ "$(node "$child" | jval ppid)" = "$parent" ] || fail "ppid of $child"
	[ "$(node "$child" | jval exit_code)" = 3 ] || fail "exit code of $child"
	[ "$(node "$child" | jval comm)" = lcwriter ] || fail "comm of $child"
	[ "$(node "$child" | jval execs)" = 0 ] || fail "execs of $child"
	[ "$(node "$parent" | jval ppid)" = "$grand" ] || fail "ppid of $parent"
	[ "$(node "$echild" | jval execs)" = "$n" ] || fail "execs of $echild"
	[ "$(node "$echild" | jval reexecs)" = $((n - 1)) ] || fail "reexecs of $echild"
	[ "$(node "$echild" | jval exit_code)" = 0 ] || fail "exit code of $echild"
	[ "$(jsel "$T/g.out" '"type":"spawn"' "\"ppid\":$eparent," "\"pid\":$echild," | wc -l)" -eq 1 ] ||
		fail "no spawn link $eparent -> $echild"
	[ "$(jsel "$T/g.out" '"type":"summary"' | jval lost_events)" = 0 ] || fail "lost events"
}

run_test "topograph --list-probes: the lifecycle hooks" 120 t_topo_plan
for m in tp_btf raw_tp tracepoint; do
	run_in topo-life "topograph $m: the lifecycle helper's pids, parents, exit code and execs" 180 t_topo_life $m
done
