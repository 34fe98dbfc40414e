# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# schedlat inside the test VMs: the end-to-end subset of tests/schedlat.bats
# against the kernel's own figures, for each attach mechanism the kernel has.
# Sourced by tests/vm/run.sh (busybox sh; see lib.sh).

SL=/opt/aiscope/bin/schedlat
HOOKS="sched_wakeup sched_wakeup_new sched_switch sched_migrate_task sched_process_exit"

# the plan: every hook has one chosen mechanism, recorded in the log
t_list_probes() {
	$SL --list-probes > "$T/plan" 2>&1 || { cat "$T/plan"; fail "--list-probes exited $?"; }
	cat "$T/plan"
	chosen=
	for h in $HOOKS; do
		m=$(awk -v h="$h" '/^[^ ]/ { cur = ($1 == h); if (cur && $4 == "chosen") print $2; next }
			cur && $3 == "chosen" { print $1 }' "$T/plan")
		case $m in
		tp_btf|raw_tp|tracepoint|fentry|kprobe) chosen="$chosen $h=$m" ;;
		*) fail "hook $h: no chosen mechanism ('$m')" ;;
		esac
	done
	echo "mechanisms:$chosen"
	$SL --list-probes -j > "$T/plan.j" || fail "--list-probes -j exited $?"
	json_ok "$T/plan.j"
	[ "$(jsel "$T/plan.j" '"type":"probe"' '"tool":"schedlat"' | wc -l)" -eq 25 ] || fail "not 25 probe records"
	[ "$(jsel "$T/plan.j" '"status":"chosen"' | wc -l)" -eq 5 ] || fail "not 5 chosen"
	# every mechanism can be forced, and then is the one chosen for all hooks
	for mode in tp_btf raw_tp tracepoint; do
		$SL --list-probes --probe-mode $mode > "$T/plan.$mode" || fail "--probe-mode $mode exited $?"
		n=$(grep -c " $mode .*chosen" "$T/plan.$mode")
		[ "$n" -eq 5 ] || { cat "$T/plan.$mode"; fail "--probe-mode $mode: $n hooks chose it"; }
	done
}

# wait MODE: 4 threads pinned to CPU 0 contend for two rounds; the tool's
# total wait for the process equals the run_delay delta within 10%. The
# preemption figures are kept in /tmp/preempt.MODE for t_preempt.
t_wait() {
	mode=$1
	rm -f "/tmp/preempt.$mode"
	start_contend w 4 0 250
	start_tool s $SL -j -p "$CONTEND_PID" --probe-mode "$mode"
	before=$(sum_run_delay "$CONTEND_PID")
	nb=$(sum_nivcsw "$CONTEND_PID")
	contend_round w "$CONTEND_PID" 1
	contend_round w "$CONTEND_PID" 2
	after=$(sum_run_delay "$CONTEND_PID")
	na=$(sum_nivcsw "$CONTEND_PID")
	stop_tool "$TOOL_PID" || fail "schedlat exited $?: $(cat "$T/s.err")"
	json_ok "$T/s.out"
	truth=$((after - before))
	tool=$(jsel "$T/s.out" '"type":"sample"' '"row":"pid"' | jsum wait_ns)
	host=$(jsel "$T/s.out" '"type":"sample"' '"row":"host"' | jsum wait_ns)
	pre=$(jsel "$T/s.out" '"type":"sample"' '"row":"pid"' | jsum preemptions)
	echo "mode $mode: run_delay delta $truth ns, schedlat $tool ns (host line $host ns)"
	echo "$pre $((na - nb))" > "/tmp/preempt.$mode"
	[ "$truth" -gt 500000000 ] || fail "the workload did not contend (run_delay delta $truth ns)"
	within 10 "$tool" "$truth" || fail "wait"
	others=$(jsel "$T/s.out" '"type":"sample"' '"row":"pid"' | jval pid | grep -vcx "$CONTEND_PID")
	[ "$others" -eq 0 ] || fail "$others rows of other processes"
	[ "$host" = "$tool" ] || fail "the host line ($host) is not the sum of the rows ($tool)"
	last=$(tail -1 "$T/s.out")
	case $last in *'"type":"summary"'*) ;; *) fail "the last line is not a summary: $last" ;; esac
	probes=$(echo "$last" | jval probes)
	case $mode,$probes in
	"$probes,$probes"|fentry,kprobe,mixed|fentry,kprobe,kprobe|fentry,kprobe,fentry) ;;
	*) fail "summary probes: $probes (mode $mode)" ;;
	esac
	[ "$(echo "$last" | jval exit_reason)" = signal ] || fail "summary exit_reason: $last"
}

# preempt MODE: the preemptions of t_wait MODE equal the delta of
# nonvoluntary_ctxt_switches within 5%
t_preempt() {
	[ -s "/tmp/preempt.$1" ] || fail "no measurement: the wait test of $1 did not get that far"
	read -r pre truth < "/tmp/preempt.$1"
	echo "mode $1: nonvoluntary_ctxt_switches delta $truth, schedlat preemptions $pre"
	[ "$truth" -gt 20 ] || fail "too few preemptions to compare"
	within 5 "$pre" "$truth" || fail "preemptions"
}

t_migrations() {
	[ "$(nproc)" -ge 2 ] || skip_test "needs two CPUs"
	start_contend w 2 -1 1000
	start_tool s $SL -j -p "$CONTEND_PID"
	before=$(sum_migrations "$CONTEND_PID")
	contend_round w "$CONTEND_PID" 1
	after=$(sum_migrations "$CONTEND_PID")
	stop_tool "$TOOL_PID" || fail "schedlat exited $?"
	json_ok "$T/s.out"
	tool=$(jsel "$T/s.out" '"type":"sample"' '"row":"pid"' | jsum migrations)
	echo "se.nr_migrations delta $((after - before)), schedlat $tool"
	[ $((after - before)) -gt 50 ] || fail "too few migrations"
	within 5 "$tool" "$((after - before))" || fail "migrations"
}

# --min streams each long wait of the process; -n stops after N
t_min() {
	start_contend w 4 0 300
	# its threads, all made before "ready": the truth for the holders
	ls /proc/"$CONTEND_PID"/task > "$T/tids"
	# the tools wake for each event: on the workers' CPU they would be
	# the ones holding it (x86-6.1 under TCG: 30 of 68 waits)
	pin=
	[ "$(nproc)" -ge 2 ] && pin="taskset -c 1"
	start_tool s $pin $SL -j --min 2ms -p "$CONTEND_PID"
	stream=$TOOL_PID
	start_tool n $pin $SL -j --min 2ms -p "$CONTEND_PID" -n 3
	counted=$TOOL_PID
	contend_round w "$CONTEND_PID" 1
	wait "$counted" || fail "schedlat -n 3 exited $?"
	stop_tool "$stream" || fail "schedlat exited $?"
	json_ok "$T/s.out"
	jsel "$T/s.out" '"type":"event"' > "$T/ev"
	n=$(wc -l < "$T/ev")
	echo "$n events over 2 ms"
	[ "$n" -gt 10 ] || fail "only $n events"
	[ "$(grep -c '"event":"wait"' "$T/ev")" -eq "$n" ] || fail "events not of type wait"
	short=$(jval wait_ns < "$T/ev" | awk '$1 < 2000000' | wc -l)
	[ "$short" -eq 0 ] || fail "$short events under 2 ms"
	others=$(jval pid < "$T/ev" | grep -vcx "$CONTEND_PID")
	[ "$others" -eq 0 ] || fail "$others events of other processes"
	# the workers (contend-w) wait on CPU 0; the main thread (contend) may
	# also wait over 2 ms on the other, emulated CPU, where the shell runs
	w=$(jval comm < "$T/ev" | grep -cx contend-w)
	m=$(jval comm < "$T/ev" | grep -cx contend)
	echo "$w of the workers, $m of the main thread"
	[ $((w + m)) -eq "$n" ] || { jval comm < "$T/ev" | sort | uniq -c; fail "events of other threads"; }
	[ "$w" -gt 10 ] || fail "only $w events of the workers"
	# the CPU was held by the other workers
	grep '"comm":"contend-w"' "$T/ev" > "$T/wev"
	held=$(jval prev_pid < "$T/wev" | grep -cx "$CONTEND_PID")
	echo "$held of $w waits of the workers held by a sibling worker"
	# exact whatever held the CPU: the holder's pid and comm are one task's
	jval prev_pid < "$T/wev" > "$T/held.pid"
	jval prev_comm < "$T/wev" > "$T/held.comm"
	awk 'NR == FNR { p[FNR] = $0; next } { print p[FNR], $0 }' "$T/held.pid" "$T/held.comm" > "$T/held"
	[ "$(wc -l < "$T/held")" -eq "$w" ] || fail "waits of the workers without prev_pid or prev_comm"
	awk -v p="$CONTEND_PID" '$1 != p { print "  held by", $2, "(" $1 ")" }' "$T/held" | sort | uniq -c
	bad=$(awk -v p="$CONTEND_PID" '($1 == p) != ($2 == "contend-w" || $2 == "contend")' "$T/held" | wc -l)
	[ "$bad" -eq 0 ] || fail "$bad waits whose prev_pid and prev_comm are not one task"
	# the holder is another thread than the one that waited, and a sibling
	# holder is one of the process's own threads (how many waits a sibling
	# held is the scheduler's: kernel threads take their share, 28 to 32 of
	# 68 to rcu_preempt in one CI run of x86-6.1)
	jval tid < "$T/wev" > "$T/w.tid"
	jval prev_tid < "$T/wev" > "$T/held.tid"
	self=$(awk 'NR == FNR { t[FNR] = $0; next } t[FNR] == $0' "$T/w.tid" "$T/held.tid" | wc -l)
	[ "$self" -eq 0 ] || fail "$self waits held by the waiting thread itself"
	strange=$(awk -v p="$CONTEND_PID" 'FILENAME == ARGV[1] { own[$1] = 1; next }
		FILENAME == ARGV[2] { pid[FNR] = $1; next }
		pid[FNR] == p && !($1 in own)' "$T/tids" "$T/held.pid" "$T/held.tid" | wc -l)
	[ "$strange" -eq 0 ] || fail "$strange waits held by a thread of the process that is none of its threads"
	[ "$held" -ge 1 ] || fail "no wait held by a sibling worker"
	[ "$(jsel "$T/n.out" '"type":"event"' | wc -l)" -eq 3 ] || fail "-n 3 did not print 3 events"
	last=$(tail -1 "$T/n.out")
	case $last in *'"type":"summary"'*'"events":3,'*'"exit_reason":"count"'*) ;;
	*) fail "-n 3 summary: $last" ;; esac
}

# function_hooks MODE: true when every hook can use one of MODE's mechanisms
function_hooks() {
	$SL --list-probes --probe-mode "$1" > "$T/plan.$1" 2>&1
	[ "$(grep -cE " (fentry|kprobe) .*chosen" "$T/plan.$1")" -eq 5 ]
}

# the function-hook path: fentry where the kernel can attach it, kprobes for
# the rest, then kprobes alone; the same wait and preemption checks as the
# tracepoints. Where a mode cannot cover every hook (fentry alone: the
# compiler made finish_task_switch a .isra clone, which BTF does not
# describe; arm64 6.1 has no fentry trampolines), forcing it exits 77 naming
# every candidate tried.
t_function_hooks() {
	mode=$1
	if function_hooks "$mode"; then
		cat "$T/plan.$mode"
		t_wait "$mode"
		return
	fi
	cat "$T/plan.$mode"
	exits_77 "$T/o" "--probe-mode $mode" $SL --probe-mode "$mode" -d 1
	[ "$(wc -l < "$T/o")" -eq 1 ] || fail "not one line"
	grep -q "tried tp_btf:.* (excluded by --probe-mode), raw_tp:.* (excluded by --probe-mode), tracepoint:.* (excluded by --probe-mode), fentry:.* (.*), kprobe:" "$T/o" ||
		fail "the line does not name the candidates"
	[ "$mode" = fentry ] || fail "--probe-mode $mode cannot cover every hook on this kernel"
	echo "fentry alone cannot cover every hook here: exit 77 as it should"
}

# a 4 KiB ring buffer with --min 1ns overflows under a context-switch storm,
# and the tool says so; on a kernel with larger pages (arm64-16k) the buffer
# is one page, 16 KiB: a 4 KiB ring buffer cannot be created there
t_lost() {
	echo "page size $(page_size)"
	# all on one CPU: cross-CPU wakeups are slow under emulation, and a
	# reader sharing the CPU with the storm cannot keep up with it
	start_tool s taskset -c 0 $SL -j --min 1ns --buffer-size 4K
	taskset -c 0 "$H/pingpong" 20000 || fail "pingpong failed"
	sleep 1.2
	stop_tool "$TOOL_PID" || fail "schedlat exited $?"
	json_ok "$T/s.out"
	last=$(tail -1 "$T/s.out")
	lost=$(echo "$last" | jval lost_events)
	events=$(echo "$last" | jval events)
	echo "events $events, lost $lost"
	case $last in *'"type":"summary"'*) ;; *) fail "no summary: $last" ;; esac
	sum=$(jsel "$T/s.out" '"type":"lost"' | jsum lost_events)
	[ "$sum" = "${lost:-0}" ] || fail "lost records add up to $sum, the summary says $lost"
	# a page of 16 KiB holds four times what the test sizes for: it ran
	# (a 4 KiB ring buffer would not even be created), and what it lost,
	# if anything, is reported as on 4 KiB pages
	if [ "$(page_size)" -gt 4096 ] && [ "${lost:-0}" -eq 0 ]; then
		[ "${events:-0}" -gt 0 ] || fail "no events"
		return 0
	fi
	[ "${lost:-0}" -gt 0 ] || fail "no lost events reported"
	grep -q 'lost .* events .*--buffer-size' "$T/s.err" || { cat "$T/s.err"; fail "no warning on stderr"; }
}

run_test "schedlat --list-probes: a mechanism for every hook" 120 t_list_probes
for m in tp_btf raw_tp tracepoint; do
	run_in sl-wait "schedlat $m: wait vs run_delay" 180 t_wait $m
	run_in sl-preempt "schedlat $m: preemptions vs nonvoluntary_ctxt_switches" 10 t_preempt $m
done
run_test "schedlat migrations vs se.nr_migrations" 120 t_migrations
run_test "schedlat --min streams each long wait, -n stops" 120 t_min
run_in sl-wait "schedlat fentry alone: every hook, or exit 77 naming the candidates" 120 t_function_hooks fentry
for m in fentry,kprobe kprobe; do
	run_in sl-wait "schedlat $m: wait vs run_delay" 180 t_function_hooks $m
	run_in sl-preempt "schedlat $m: preemptions vs nonvoluntary_ctxt_switches" 10 t_preempt $m
done
run_test "schedlat reports lost events (--min 1ns --buffer-size 4K, pingpong)" 180 t_lost
