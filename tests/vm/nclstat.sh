# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# nclstat inside the test VMs: the end-to-end subset of tests/nclstat.bats on
# x86_64 and arm64 (where the ABI differs: arm64 passes the 128-byte
# ncclUniqueId by reference and has eight argument registers). The VMs have
# no dynamic loader, so the calls go to ncclstatic, ncclrank with the test
# double of libnccl linked in, and nclstat probes that executable (--lib).
# Each mechanism of the process-exit hook is exercised by a rank killed
# inside a call. Sourced by tests/vm/run.sh (busybox sh; see lib.sh).

NS=/opt/aiscope/bin/nclstat
DRV=$H/ncclstatic

# the value of KEY=VALUE in a "call ..." line
cval() {
	echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# every argument of every call, stack and register ones, equals the event
t_args() {
	start_tool e $NS -e -j --lib "$DRV"
	"$DRV" args > "$T/args" || fail "ncclstatic args failed"
	sleep 0.5
	stop_tool "$TOOL_PID" || fail "nclstat exited $?"
	json_ok "$T/e.out"
	n=0
	while read -r line; do
		op=$(cval "$line" op)
		ev=$(jsel "$T/e.out" '"event":"call"' "\"nccl_op\":\"$op\"")
		[ "$(echo "$ev" | grep -c .)" -eq 1 ] || fail "$op: not one event: $ev"
		rc=$(cval "$line" rc)
		[ "$(echo "$ev" | jval rc)" = "$rc" ] || fail "$op: rc $(echo "$ev" | jval rc), want $rc"
		if [ "$op" = init_rank ] || [ "$op" = init_rank_scalable ]; then
			for k in nranks rank; do
				[ "$(echo "$ev" | jval $k)" = "$(cval "$line" $k)" ] || fail "$op: $k: $ev"
			done
			# made: NCCL's commHash read from it; failed: the id's hash
			want=$(cval "$line" id_hash)
			[ "$rc" = 0 ] && want=$(cval "$line" comm_hash)
			[ "$(echo "$ev" | jval communicator_id)" = "$want" ] ||
				fail "$op: communicator_id $(echo "$ev" | jval communicator_id), want $want"
		else
			[ "$(echo "$ev" | jval count)" = "$(cval "$line" count)" ] || fail "$op: count: $ev"
			[ "$(echo "$ev" | jval datatype_id)" = "$(cval "$line" datatype)" ] || fail "$op: datatype: $ev"
			[ "$(echo "$ev" | jval stream)" = "$(cval "$line" stream)" ] || fail "$op: stream: $ev"
			[ "$(echo "$ev" | jval communicator_handle)" = 0x0 ] || fail "$op: communicator_handle: $ev"
			p=$(cval "$line" root_or_peer)
			[ "$p" = -1 ] && p=null
			[ "$(echo "$ev" | jval root_or_peer)" = "$p" ] || fail "$op: root_or_peer: $ev"
		fi
		n=$((n + 1))
	done <<EOF
$(grep '^call ' "$T/args")
EOF
	echo "$n calls decoded exactly"
	[ "$n" -eq 12 ] || fail "$n calls, not 12"
}

# truth DRVOUT TOOLOUT: calls and bytes per rank, communicator and op; the
# communicators named by NCCL's commHash, read from them (the executable's
# layout decoded on this architecture)
truth() {
	main=$(awk '$1 == "comm_hash" {print $2}' "$1")
	n=0
	while read -r line; do
		pid=$(cval "$line" pid)
		op=$(cval "$line" op)
		if [ "$(cval "$line" comm)" = main ]; then
			h=$main
		else
			h=$(awk -v c=$(($(cval "$line" rank) % 2)) '$1 == "split_comm_hash" && $2 == c {print $3}' "$1")
		fi
		rows=$(jsel "$2" '"row":"op"' "\"pid\":$pid," "\"nccl_op\":\"$op\"" "\"communicator_id\":\"$h\"")
		calls=$(echo "$rows" | jsum calls)
		bytes=$(echo "$rows" | jsum bytes)
		[ "$calls" = "$(cval "$line" calls)" ] && [ "$bytes" = "$(cval "$line" bytes)" ] ||
			fail "$line: nclstat calls=$calls bytes=$bytes"
		n=$((n + 1))
	done <<EOF
$(grep '^truth ' "$1")
EOF
	echo "$n (rank, communicator, op) exact"
	[ "$n" -eq 32 ] || fail "$n truth lines, not 32"
}

t_ranks() {
	start_tool s $NS -j -i 60s --lib "$DRV"
	"$DRV" run -r 4 -i 4 > "$T/r.out" || fail "ncclstatic run failed"
	stop_tool "$TOOL_PID" || fail "nclstat exited $?"
	json_ok "$T/s.out"
	truth "$T/r.out" "$T/s.out"
	grep -q 'communicators read at 0x[0-9a-f]* (commHash, rank, nRanks) as NCCL 2.28.9+double' "$T/s.err" ||
		{ cat "$T/s.err"; fail "the layout of the communicators not read"; }
	main=$(awk '$1 == "comm_hash" {print $2}' "$T/r.out")
	[ "$(jsel "$T/s.out" '"row":"communicator"' "\"communicator_id\":\"$main\"" | grep -c '"identity":"memory"')" -ge 1 ] ||
		fail "the main communicator's identity not read from memory"
	ar=$(jsel "$T/s.out" '"row":"op"' '"nccl_op":"allreduce"' "\"communicator_id\":\"$main\"")
	[ "$(echo "$ar" | grep -c '"size_mean_bytes":8048.000,"size_stddev_bytes":3952.000,"size_p50_bytes":4096,"size_p99_bytes":12000,')" -eq 4 ] ||
		{ echo "$ar"; fail "allreduce size statistics"; }
}

# lag and hang: rank 1 stops before iteration 1, rank 2's 10th call hangs
t_skew() {
	start_tool s $NS -j -i 500ms --hang 1s --lib "$DRV"
	bg r env FAKE_NCCL_HANG=2:10 "$DRV" run -r 4 -i 4 -l 1:1 -b
	wait_for "$T/s.out" '"event":"hang"' 60 || fail "no hang reported"
	# the event streams when the call passes --hang; the communicator's
	# row with it comes at the end of that interval
	wait_for "$T/s.out" '"hung_calls":1' 60 || fail "no communicator row with the hung call"
	main=$(awk '$1 == "comm_hash" {print $2}' "$T/r.out")
	p1=$(awk '$1 == "rank" && $2 == 1 {print $4}' "$T/r.out")
	p2=$(awk '$1 == "rank" && $2 == 2 {print $4}' "$T/r.out")
	c=$(jsel "$T/s.out" '"row":"communicator"' "\"communicator_id\":\"$main\"" '"hung_calls":1' | tail -1)
	echo "$c"
	for kv in '"skew_ops":15,' '"lagging_rank":1,' "\"lagging_pid\":$p1," '"lagging_last_op":"reduce",' \
		'"lagging_last_count":100,' '"seq_min":5,' '"seq_max":20,'; do
		case $c in *"$kv"*) ;; *) fail "comm row lacks $kv" ;; esac
	done
	h=$(jsel "$T/s.out" '"event":"hang"')
	echo "$h"
	for kv in "\"pid\":$p2," '"nccl_op":"reducescatter",' '"count":512,' '"datatype":"int32",' \
		"\"communicator_id\":\"$main\"" '"rank":2,' '"nranks":4,'; do
		case $h in *"$kv"*) ;; *) fail "hang event lacks $kv" ;; esac
	done
	kill -USR2 "$p2"
	kill -USR1 "$p1"
	sleep 1
	for p in $(awk '$1 == "rank" {print $4}' "$T/r.out"); do kill -USR1 "$p"; done
	wait_for "$T/r.out" '^all done, 0 failed' 60 || fail "the ranks did not end"
	sleep 1
	stop_tool "$TOOL_PID" || fail "nclstat exited $?"
	truth "$T/r.out" "$T/s.out"
}

# kill MODE: a rank killed inside a hung call; the exit hook (attached with
# MODE) drops the call: no interval after reports it
t_kill() {
	$NS --list-probes --probe-mode "$1" --lib "$DRV" > "$T/plan" 2>&1
	grep -q "^sched_process_exit .*chosen\|^ .* $1 .*chosen" "$T/plan" ||
		{ cat "$T/plan"; skip_test "no $1 for sched_process_exit on this kernel"; }
	start_tool s $NS -j -i 300ms --hang 500ms --probe-mode "$1" --lib "$DRV"
	bg r env FAKE_NCCL_HANG=2:3 "$DRV" run -r 4 -i 1 -b
	wait_for "$T/s.out" '"event":"hang"' 60 || fail "no hang reported"
	p2=$(awk '$1 == "rank" && $2 == 2 {print $4}' "$T/r.out")
	kill -KILL "$p2"
	n=$(wc -l < "$T/s.out")
	sleep 1.5
	stop_tool "$TOOL_PID" || fail "nclstat exited $?"
	tail -n +$((n + 1)) "$T/s.out" > "$T/after"
	last=$(jsel "$T/after" '"row":"communicator"' '"created_by":"init_rank"' | tail -1)
	echo "$last"
	[ -n "$last" ] || fail "no interval after the kill"
	case $last in *'"hung_calls":0,'*) ;; *) fail "the killed rank's call is still reported" ;; esac
	case $last in *"\"pid\":$p2,"*) fail "the killed rank is still registered" ;; esac
	case $(tail -1 "$T/s.out") in *"\"probes\":\"$1\""*) ;; *) fail "summary probes: $(tail -1 "$T/s.out")" ;; esac
}

# the stack of a uprobe program is its task's own (bpf/uprobe_stack.bpf.h):
# three processes on CPU 0 run one uprobe program with 136 bytes of stack
# and a spin in it, plain and sleepable (a fault before the spin); with the
# tail-call guard no run finds its stack changed. The unguarded counts are
# printed: above 0 where the kernel gives uprobe programs a per-CPU private
# stack and preempts them (x86 7.x); they check nothing, so only the full
# depth runs them (half of the test's time).
t_privstack() {
	variants='-g "-s -g"'
	[ "$DEPTH" = default ] || variants='"" -s -g "-s -g"'
	eval "set -- $variants"
	[ "$DEPTH" = full ] || echo "the unguarded runs (their counts, no check) are the full depth's"
	for f in "$@"; do
		"$H/privstack" $f -p 3 -n 100 -l 100000 > "$T/ps" 2>&1
		rc=$?
		echo "privstack $f: $(cat "$T/ps")"
		# no sleepable uprobes before 6.0: those variants say so
		case "$rc:$f" in 77:*-s*) continue ;; esac
		[ $rc -eq 0 ] || fail "privstack $f exited $rc"
		case $f in
		*-g*) [ "$(cat "$T/ps")" = "runs 300 corrupt 0" ] ||
			fail "guarded ($f): $(cat "$T/ps"), want runs 300 corrupt 0" ;;
		*) grep -q '^runs 300 corrupt [0-9]*$' "$T/ps" || fail "privstack $f: $(cat "$T/ps")" ;;
		esac
	done
}

run_test "uprobe programs keep their own stack under preemption (tail-call guard)" 180 t_privstack
run_test "nclstat decodes every argument (registers, stack, the id by value)" 120 t_args
run_test "nclstat: calls, bytes and sizes of four ranks exact" 180 t_ranks
run_test "nclstat: rank skew, the lagging rank and a hung call" 180 t_skew
for m in tp_btf raw_tp tracepoint fentry kprobe; do
	run_in ncl-kill "nclstat $m exit hook: a rank killed in a call leaves nothing" 120 t_kill $m
done
