# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# socketsnoop inside the test VMs: the end-to-end subset of
# tests/socketsnoop.bats (exact bytes and calls of tests/helpers/netpair),
# for each attach path the kernel has: fexit on tcp_sendmsg & co (where
# trampolines work and, for recvmsg and accept, bpf_get_func_ret exists),
# the sock_send_length/sock_recv_length tracepoints where the kernel has
# them (6.3+; before, forcing them must exit 77), and kprobe/kretprobe on
# the same functions (every kernel here has kprobes).
# Sourced by tests/vm/run.sh (busybox sh; see lib.sh).

SS=/opt/aiscope/bin/socketsnoop

# the initramfs brings no interface up: loopback is the tests' network
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up 2>/dev/null

# kv FILE WORD KEY: KEY=value on the line starting with WORD
kv() {
	awk -v w="$2" -v k="$3" '$1 == w { for (i = 2; i <= NF; i++) {
		n = index($i, "="); if (substr($i, 1, n - 1) == k) print substr($i, n + 1) } }' "$1"
}


# no_send_path [PROBE_MODE]: on a kernel with neither trampolines nor
# sock_send_length nor kprobes socketsnoop cannot see sends: it must exit
# 77 naming each candidate and why; the test is then a skip that says so
no_send_path() {
	set -- ${1:+--probe-mode "$1"}
	$SS --list-probes "$@" > "$T/plan0" 2>&1
	[ -z "$(plan_chosen send "$T/plan0")" ] || return 0
	cat "$T/plan0"
	exits_77 "$T/o0" "no send hook" $SS "$@" -d 1
	grep -q "no way to attach send on this kernel: tried fexit:tcp_sendmsg (.*), tp_btf:sock_send_length (.*), raw_tp:sock_send_length (.*), kretprobe:tcp_sendmsg (.*)" "$T/o0" ||
		fail "the message does not name the candidates"
	skip_test "no send hook on this kernel (no fexit trampolines, no sock_send_length before 6.3, no kprobes): exit 77 as documented"
}

t_list_probes() {
	no_send_path
	$SS --list-probes > "$T/plan" 2>&1 || { cat "$T/plan"; fail "--list-probes exited $?"; }
	cat "$T/plan"
	for h in send recv inet_sock_set_state; do
		m=$(plan_chosen $h "$T/plan")
		echo "$h: $m"
		[ -n "$m" ] || fail "hook $h: nothing chosen"
	done
	$SS --list-probes -j > "$T/plan.j" || fail "--list-probes -j exited $?"
	json_ok "$T/plan.j"
}

# flow FILE PID SPORT DPORT: "tx_bytes tx_calls rx_bytes rx_calls" summed
flow() {
	jsel "$1" '"type":"sample"' "\"pid\":$2," "\"sport\":$3," "\"dport\":$4," > "$T/f"
	echo "$(jsum tx_bytes < "$T/f") $(jsum tx_calls < "$T/f") $(jsum rx_bytes < "$T/f") $(jsum rx_calls < "$T/f")"
}

# peers FILE PID SPORT DPORT PEER: the peer_pid of each of the flow's rows
# ($T/f), but null in an interval before the first in which the other end's
# flow has a row: the peer is joined by the mirrored flow, and until the
# server has read or sent anything (an emulated guest may be that slow to
# accept) no process owns the other end, so null is the truth there
peers() {
	_first=$(jsel "$1" '"type":"sample"' "\"pid\":$5," "\"sport\":$4," "\"dport\":$3," | head -1 | jval ts)
	awk -v first="$_first" '{ ts = $0; sub(/.*"ts":"?/, "", ts); sub(/[",}].*/, "", ts)
		p = $0; sub(/.*"peer_pid":/, "", p); sub(/[,}].*/, "", p)
		if (p == "null" && (first == "" || ts < first)) next
		print p }' "$T/f"
}

# expect FILE PID SPORT DPORT "TX TXC RX RXC" PEER
expect() {
	got=$(flow "$1" "$2" "$3" "$4")
	echo "flow pid $2 $3->$4: $got (expected $5), peers: $(jval peer_pid < "$T/f" | sort -u | tr '\n' ' ')"
	[ "$got" = "$5" ] || fail "flow $2 $3->$4"
	[ "$(peers "$1" "$2" "$3" "$4" "$6" | sort -u)" = "$6" ] || fail "peer of $2 is not $6"
}

# pair MODE PROBE_MODE: exact bytes and calls each way, peers joined
t_pair() {
	mode=$1 pm=$2
	case $mode in udp*) n=24000 ;; *) n=120000 ;; esac
	start_tool s $SS -j -i 300ms --probe-mode "$pm"
	"$H/netpair" "$mode" -n $n -m 40 -k 6000 -l 3 > "$T/np" || fail "netpair failed"
	cat "$T/np"
	sleep 0.7
	stop_tool "$TOOL_PID" || fail "socketsnoop exited $?"
	json_ok "$T/s.out"
	sp=$(kv "$T/np" server pid); spt=$(kv "$T/np" server ports)
	cp=$(kv "$T/np" client pid); cpt=$(kv "$T/np" client port)
	expect "$T/s.out" "$cp" "$cpt" "$spt" "$n 40 6000 $(kv "$T/np" client_result rx_calls)" "$sp"
	expect "$T/s.out" "$sp" "$spt" "$cpt" "6000 3 $n $(kv "$T/np" server_result rx_calls)" "$cp"
	last=$(tail -1 "$T/s.out")
	case $last in *'"type":"summary"'*'"lost_events":0,'*) ;; *) fail "summary: $last" ;; esac
	echo "probes: $(echo "$last" | jval probes)"
	[ "$(jsel "$T/s.out" '"type":"edge"' "\"pid\":$cp," "\"bytes\":$n," | wc -l)" -ge 1 ] || fail "no edge of $n bytes"
}

# unconnected UDP: each datagram's real peer
t_unconnected() {
	start_tool s $SS -j -i 300ms --probe-mode "$1"
	"$H/netpair" udpu4 -p 3 -n 3000 -m 10 -k 800 -l 2 > "$T/np" || fail "netpair failed"
	cat "$T/np"
	sleep 0.7
	stop_tool "$TOOL_PID" || fail "socketsnoop exited $?"
	json_ok "$T/s.out"
	sp=$(kv "$T/np" server pid); cp=$(kv "$T/np" client pid); cpt=$(kv "$T/np" client port)
	for p in $(kv "$T/np" server ports | tr , ' '); do
		expect "$T/s.out" "$cp" "$cpt" "$p" "3000 10 800 2" "$sp"
		expect "$T/s.out" "$sp" "$p" "$cpt" "800 2 3000 10" "$cp"
	done
}

# -e: connect, accept, close with duration and bytes each way
t_events() {
	start_tool s $SS -j -e --probe-mode "$1"
	"$H/netpair" tcp4 -n 50000 -m 25 -k 3000 -l 3 -w 300 > "$T/np" || fail "netpair failed"
	cat "$T/np"
	sleep 0.7
	stop_tool "$TOOL_PID" || fail "socketsnoop exited $?"
	json_ok "$T/s.out"
	sp=$(kv "$T/np" server pid); cp=$(kv "$T/np" client pid)
	dur=$(kv "$T/np" client_result duration_ns)
	jsel "$T/s.out" '"type":"event"' "\"pid\":$cp," > "$T/c"
	jsel "$T/s.out" '"type":"event"' "\"pid\":$sp," > "$T/sv"
	cat "$T/c" "$T/sv" | cut -c1-60
	[ "$(grep -c '"event":"connect"' "$T/c")" -eq 1 ] || fail "connect events"
	[ "$(grep -c '"event":"accept"' "$T/sv")" -eq 1 ] || fail "accept events"
	grep '"event":"close"' "$T/c" > "$T/cc"
	[ "$(wc -l < "$T/cc")" -eq 1 ] || fail "client close events"
	got="$(jval tx_bytes < "$T/cc") $(jval tx_calls < "$T/cc") $(jval rx_bytes < "$T/cc")"
	d=$(jval duration_ns < "$T/cc")
	echo "client close: $got, duration $d ns, lived $dur ns"
	[ "$got" = "50000 25 3000" ] || fail "client close bytes"
	[ "$d" -ge 300000000 ] && [ "$d" -le "$dur" ] || fail "duration $d not within [300 ms, $dur]"
	grep '"event":"close"' "$T/sv" > "$T/sc"
	got="$(jval tx_bytes < "$T/sc") $(jval rx_bytes < "$T/sc")"
	[ "$got" = "3000 50000" ] || fail "server close bytes: $got"
}

# tracepoint path: where the kernel has sock_send_length, the same checks;
# where it has not (before 6.3), forcing it exits 77 naming the candidates
t_tracepoints() {
	$SS --list-probes --probe-mode tp_btf,raw_tp,tracepoint > "$T/plan" 2>&1
	if [ -n "$(plan_chosen send "$T/plan")" ]; then
		t_pair tcp4 tp_btf,raw_tp,tracepoint
		return
	fi
	$SS --probe-mode tp_btf,raw_tp,tracepoint -d 1 > "$T/o" 2>&1
	rc=$?
	cat "$T/o"
	[ $rc -eq 77 ] || fail "exited $rc, not 77"
	grep -q "no way to attach send on this kernel: tried fexit:tcp_sendmsg (excluded by --probe-mode), tp_btf:sock_send_length (.*), raw_tp:sock_send_length (.*)" "$T/o" ||
		fail "the message does not name the candidates"
	# the lifecycle tracepoints are there all the same
	[ -n "$(plan_chosen inet_sock_set_state "$T/plan")" ] || fail "no inet_sock_set_state"
	echo "no sock_send_length on this kernel: exit 77 as it should"
}

# the function path: fexit where trampolines (and bpf_get_func_ret) serve
# send and receive, else the kernel's other function hooks, kretprobes
# (arm64 before trampolines, 5.10 without the helper); FUNC_MODE is the
# --probe-mode that picks it. Neither: socketsnoop must exit 77.
func_mode() {
	FUNC_MODE=fentry,tracepoint
	$SS --list-probes --probe-mode $FUNC_MODE > "$T/plan" 2>&1
	[ "$(plan_chosen send "$T/plan")" = fexit ] && [ "$(plan_chosen recv "$T/plan")" = fexit ] && return
	FUNC_MODE=kprobe,tracepoint
	$SS --list-probes --probe-mode $FUNC_MODE > "$T/plan" 2>&1
	[ "$(plan_chosen send "$T/plan")" = kretprobe ] && return
	cat "$T/plan"
	$SS --probe-mode fentry,kprobe,tracepoint -d 1 > "$T/o" 2>&1
	[ $? -eq 77 ] || fail "no function hook, yet no exit 77"
	skip_test "no fexit trampolines and no kprobes on this kernel"
}

# t_func TEST [ARG]: TEST [ARG] FUNC_MODE
t_func() {
	_test=$1
	shift
	func_mode
	echo "function hooks: --probe-mode $FUNC_MODE"
	"$_test" "$@" "$FUNC_MODE"
}

# the kretprobe path, where kprobes work (else it must exit 77 naming them)
t_kret() {
	$SS --list-probes --probe-mode kprobe,tracepoint > "$T/plan" 2>&1
	if [ "$(plan_chosen send "$T/plan")" != kretprobe ]; then
		cat "$T/plan"
		exits_77 "$T/o" "no kretprobe" $SS --probe-mode kprobe,tracepoint -d 1
		grep -q "no way to attach send on this kernel: .*kretprobe:tcp_sendmsg (" "$T/o" ||
			fail "the message does not name the kretprobe"
		skip_test "no kprobes on this kernel"
	fi
	for h in recv send_entry recv_entry; do
		[ -n "$(plan_chosen $h "$T/plan")" ] || { cat "$T/plan"; fail "kprobe plan: nothing chosen for $h"; }
	done
	"$@"
}

run_test "socketsnoop --list-probes: a mechanism for send, recv, state" 120 t_list_probes
for m in tcp4 tcp6 udp4 udp6; do
	run_in ss-$m "socketsnoop function hooks $m: exact bytes, calls, peers" 120 t_func t_pair $m
done
run_in ss-unconnected "socketsnoop function hooks unconnected UDP: real peers" 120 t_func t_unconnected
run_in ss-events "socketsnoop function hooks -e: connect, accept, close" 120 t_func t_events
for m in tcp4 udp6; do
	run_in ss-$m "socketsnoop kretprobe $m: exact bytes, calls, peers" 120 t_kret t_pair $m kprobe,tracepoint
done
run_in ss-unconnected "socketsnoop kretprobe unconnected UDP: real peers" 120 t_kret t_unconnected kprobe,tracepoint
run_in ss-events "socketsnoop kretprobe -e: connect, accept, close" 120 t_kret t_events kprobe,tracepoint
run_test "socketsnoop tracepoint path (or exit 77 before 6.3)" 120 t_tracepoints
t_events_default() {
	no_send_path "$1"
	t_events "$1"
}
run_test "socketsnoop default plan -e: connect, accept, close" 120 t_events_default tp_btf,raw_tp,tracepoint,fentry,kprobe
