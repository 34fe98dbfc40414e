# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# ipcsnoop inside the test VMs: the end-to-end subset of tests/ipcsnoop.bats
# (ipcload's truth against the tool's samples) on each hook path the kernel
# has: function hooks (fexit) where they attach, tp_btf and raw_tp sys_exit,
# classic tracepoints. On these 6.1 kernels sock_send_length does not exist
# yet, so without fexit unix sockets go through the syscall path.
# Sourced by tests/vm/run.sh (busybox sh; see lib.sh).

IS=/opt/aiscope/bin/ipcsnoop

# the plan, recorded in the log; the syscall path is always chosen
t_ipc_plan() {
	$IS --list-probes > "$T/plan" 2>&1 || { cat "$T/plan"; fail "--list-probes exited $?"; }
	cat "$T/plan"
	case $(plan_chosen sys_exit "$T/plan") in
	tp_btf|raw_tp|tracepoint) ;;
	*) fail "no sys_exit hook" ;;
	esac
	# where tp_btf and raw_tp programs run preemptibly (the trial of
	# lib/kfeatures.c), the syscall hooks take the classic tracepoint
	if grep -q 'preemptible here' "$T/plan"; then
		echo "tp_btf and raw_tp run preemptibly here: the classic tracepoints chosen"
		for h in sys_enter sys_exit; do
			[ "$(plan_chosen $h "$T/plan")" = tracepoint ] || fail "$h: not the classic tracepoint"
		done
	else
		echo "tp_btf and raw_tp do not run preemptibly here"
	fi
	$IS --list-probes -j > "$T/plan.j" || fail "--list-probes -j exited $?"
	json_ok "$T/plan.j"
	[ "$(jsel "$T/plan.j" '"type":"probe"' '"tool":"ipcsnoop"' | wc -l)" -eq 28 ] || fail "not 28 probe records"
}

# ipc_workload DIR: every mechanism once, truth lines in $T/truth
ipc_workload() {
	L=$H/ipcload
	{
		$L pipe 40 3000 &&
		$L fifo "$1/f.fifo" 2 25 1500 &&
		$L unix-stream "$1/s.sock" 2 30 2000 &&
		$L unix-dgram "$1/d.sock" 2 20 300 &&
		$L unix-sendto "$1/u.sock" 2 15 200 &&
		$L unix-sendto @aiscope-vm-sendto 2 6 64 &&
		$L unix-seqpacket 15 700 &&
		$L msq 2 12 256 &&
		$L mq /aiscope-vm 2 8 128 &&
		$L eventfd 9 &&
		$L shm 65536 &&
		$L posix-shm /aiscope-vm 8192
	} > "$T/truth" || fail "ipcload failed"
}

# sample_sum KIND CHANNEL KEY: KEY summed over the samples of that channel
sample_sum() {
	jsel "$T/s.out" '"type":"sample"' "\"kind\":\"$1\"" "\"channel\":\"$2\"" | jsum "$3"
}

# check_channels: per channel, the samples' totals equal the truth's
check_channels() {
	awk '$1 == "truth" && $2 != "shm" { print $2, $3 }' "$T/truth" | sort -u > "$T/chans"
	[ -s "$T/chans" ] || fail "no truth"
	while read -r kind ch; do
		wb=$(awk -v k="$kind" -v c="$ch" '$2 == k && $3 == c && $4 == "write" { s += $8 } END { print s + 0 }' "$T/truth")
		wm=$(awk -v k="$kind" -v c="$ch" '$2 == k && $3 == c && $4 == "write" { s += $7 } END { print s + 0 }' "$T/truth")
		wn=$(awk -v k="$kind" -v c="$ch" '$2 == k && $3 == c && $4 == "write" { n++ } END { print n + 0 }' "$T/truth")
		rb=$(awk -v k="$kind" -v c="$ch" '$2 == k && $3 == c && $4 == "read" { s += $8 } END { print s + 0 }' "$T/truth")
		rm=$(awk -v k="$kind" -v c="$ch" '$2 == k && $3 == c && $4 == "read" { s += $7 } END { print s + 0 }' "$T/truth")
		rn=$(awk -v k="$kind" -v c="$ch" '$2 == k && $3 == c && $4 == "read" { n++ } END { print n + 0 }' "$T/truth")
		got="$(sample_sum "$kind" "$ch" bytes) $(sample_sum "$kind" "$ch" msgs) $(sample_sum "$kind" "$ch" writers)"
		got="$got $(sample_sum "$kind" "$ch" read_bytes) $(sample_sum "$kind" "$ch" read_msgs) $(sample_sum "$kind" "$ch" readers)"
		want="$wb $wm $wn $rb $rm $rn"
		echo "$kind $ch: bytes msgs writers read_bytes read_msgs readers: truth $want, ipcsnoop $got"
		[ "$got" = "$want" ] || fail "$kind $ch"
	done < "$T/chans"
}

# check_pairs DIR: each connection of the unix server, in each direction,
# has exactly its two ends
check_pairs() {
	s=$1/s.sock
	srv=$(awk -v s="$s" '$3 == s && $6 == "ipc-srv" { print $5; exit }' "$T/truth")
	for c in ipc-cli1 ipc-cli2; do
		p=$(awk -v s="$s" -v c="$c" '$3 == s && $6 == c { print $5; exit }' "$T/truth")
		n=$(jsel "$T/s.out" '"type":"sample"' "\"channel\":\"$s\"" "\"writer_pid\":$p," "\"reader_pid\":$srv," | wc -l)
		m=$(jsel "$T/s.out" '"type":"sample"' "\"channel\":\"$s\"" "\"writer_pid\":$srv," "\"reader_pid\":$p," | wc -l)
		echo "$c ($p) -> server ($srv): $n sample(s); server -> $c: $m"
		[ "$n" -eq 1 ] && [ "$m" -eq 1 ] || fail "connection of $c"
	done
}

check_shm() {
	for ch in $(awk '$2 == "shm" { print $3 }' "$T/truth" | sort -u); do
		a=$(sample_sum shm "$ch" attaches)
		d=$(sample_sum shm "$ch" detaches)
		echo "$ch: attaches $a, detaches $d (truth 2, 2)"
		[ "$a" -eq 2 ] && [ "$d" -eq 2 ] || fail "shm $ch"
	done
}

# exact MODE: every mechanism through the hooks MODE allows
t_ipc_exact() {
	mode=$1
	d=/tmp/ipcvm
	rm -rf "$d"
	mkdir -p "$d"
	# POSIX shared memory lives on a tmpfs at /dev/shm (shm_open)
	if ! grep -q ' /dev/shm tmpfs' /proc/mounts; then
		mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm || fail "cannot mount /dev/shm"
	fi
	echo 1 > /proc/sys/kernel/bpf_stats_enabled 2>/dev/null
	start_tool s $IS -j -i 60 --probe-mode "$mode"
	ipc_workload "$d"
	# the runs the kernel skipped because the program was running on that
	# CPU already (bpf_prog_info.recursion_misses): on 7.2 the syscall
	# tracepoints run tp_btf and raw_tp programs preemptibly, and a task
	# entering sys_exit while another's run is preempted on that CPU is
	# not seen (the classic tracepoint's perf path is not preempted)
	$H/bpfprogs > "$T/progs"
	sed 's/^/bpf: /' "$T/progs"
	awk '$8 > 0 { printf "the kernel skipped %s runs of %s (recursion_misses)\n", $8, $4 }' "$T/progs"
	stop_tool "$TOOL_PID" || fail "ipcsnoop exited $?: $(cat "$T/s.err")"
	json_ok "$T/s.out"
	last=$(tail -1 "$T/s.out")
	echo "summary: $last"
	jsel "$T/s.out" '"type":"lost"'
	$IS --list-probes > "$T/plan" 2>&1
	skipped_where_preemptible "$T/progs" "$last" "$T/plan"
	skipped_runs_retry "$T/progs" "$last"
	case $last in *'"type":"summary"'*'"lost_events":0,'*) ;; *) fail "summary: $last" ;; esac
	$IS --list-probes --probe-mode "$mode" | grep chosen
	check_channels
	check_pairs "$d"
	check_shm
}

# the function hooks really are the ones used when fexit is allowed
t_ipc_fexit_plan() {
	$IS --list-probes --probe-mode fentry,tp_btf,raw_tp,tracepoint > "$T/plan" 2>&1
	cat "$T/plan"
	n=$(grep -c ' fexit .*chosen' "$T/plan")
	[ "$n" -gt 0 ] || skip_test "no fexit hook attaches on this kernel"
	for h in pipe_write pipe_read unix_send unix_recv msgsnd msgrcv mq_timedsend mq_timedreceive; do
		awk -v h="$h" '/^[^ ]/ { cur = ($1 == h); if (cur && $2 == "fexit" && $4 ~ /^chosen/) ok = 1; next }
			cur && $1 == "fexit" && $3 ~ /^chosen/ { ok = 1 } END { exit !ok }' "$T/plan" ||
			fail "$h: no fexit chosen"
	done
}

run_test "ipcsnoop --list-probes: a plan with the syscall path" 120 t_ipc_plan
run_test "ipcsnoop fexit hooks chosen where the kernel has them" 120 t_ipc_fexit_plan
for m in fentry,tp_btf tp_btf raw_tp tracepoint; do
	run_in ipc-exact "ipcsnoop $m: every mechanism exact (bytes, messages, writers, readers)" 240 t_ipc_exact $m
done
