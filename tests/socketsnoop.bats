#!/usr/bin/env bats
# socketsnoop: the command-line contract and end-to-end checks against
# traffic whose every byte and call the test itself made (tests/helpers/netpair).

bats_require_minimum_version 1.5.0
load lib

teardown() {
	aiscope_teardown
}

# ---- contract ----

@test "socketsnoop --help lists the shared options and ends with examples" {
	check_help socketsnoop "${SHARED_OPTS[@]}" \
		--events --io --port --proto --ipv4 --ipv6 --idle --usage --version
}

@test "socketsnoop --usage and --version" {
	check_usage_version socketsnoop
}

@test "socketsnoop usage errors exit 2 with one line on stderr and nothing on stdout" {
	local bad=(
		"--bogus" "-P" "-P 0" "-P 70000" "-P x" "-P 80,,81" "--proto sctp" "--proto"
		"-4 -6" "--idle 0" "--idle x" "-s nope" "-p abc" "-p 999999999" "-i 0" "-n 0"
		"1 2 3" "--probe-mode foo" "-c /nonexistent" "--container zz" "--buffer-size 1"
		"-e --listen 127.0.0.1:0" "--io --listen 127.0.0.1:0"
	)
	check_usage_errors socketsnoop "${bad[@]}"
}

@test "socketsnoop --metric-label refuses the label names its own series have" {
	check_own_metric_labels socketsnoop direction proto
}

@test "socketsnoop without privileges exits 77 and says what is missing" {
	check_no_privilege socketsnoop
}

# chosen HOOK: the mechanism chosen for HOOK in the plan in $output
chosen() {
	echo "$output" | awk -v h="$1" '/^[^ ]/ {cur = $1; m = $2} /^ / {m = $1} cur == h && / chosen$/ {print m}'
}

@test "socketsnoop --list-probes: data and lifecycle hooks on tracepoints here" {
	run "$BIN/socketsnoop" --list-probes
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == HOOK*MECHANISM*TARGET*STATUS ]]
	[[ "$(chosen send)" =~ ^(fexit|tp_btf|raw_tp)$ ]]
	[[ "$(chosen recv)" =~ ^(fexit|tp_btf|raw_tp)$ ]]
	[[ "$(chosen inet_sock_set_state)" =~ ^(tp_btf|raw_tp|tracepoint)$ ]]
	[ "$(chosen udp_peer_sendto)" = tracepoint ]
	run "$BIN/socketsnoop" --list-probes --probe-mode raw_tp,tracepoint
	[ "$status" -eq 0 ]
	[ "$(chosen send)" = raw_tp ]
	[ "$(chosen inet_sock_set_state)" = raw_tp ]
	run "$BIN/socketsnoop" --list-probes -j
	[ "$status" -eq 0 ]
	echo "$output" > "$BATS_TEST_TMPDIR/plan"
	all_json "$BATS_TEST_TMPDIR/plan"
}

@test "socketsnoop --probe-mode fentry exits 77 here naming the candidates" {
	need_root
	# this host has no working fentry (EPERM)
	run "$BIN/socketsnoop" --list-probes --probe-mode fentry
	echo "$output" | grep -E '^send +fexit .*chosen' && skip "fentry works on this kernel"
	run_exit_77 "$BIN/socketsnoop" --probe-mode fentry -d 1
	[[ "$output" == *"no way to attach send on this kernel: tried fexit:tcp_sendmsg ("*"tp_btf:sock_send_length (excluded by --probe-mode)"* ]]
}

# ---- end to end ----

# start_ss ARGS...: socketsnoop attached, its output in s.out and s.err. The
# files of an earlier run in the same test go first: the wait for its
# "Tracing" line must not see the old one.
start_ss() {
	rm -f "$BATS_TEST_TMPDIR/s.out" "$BATS_TEST_TMPDIR/s.err"
	start_tool s socketsnoop "$@"
}

# kv FILE WORD KEY: the value of KEY=... on the line starting with WORD
kv() {
	awk -v w="$2" -v k="$3" '$1 == w { for (i = 2; i <= NF; i++) {
		n = index($i, "="); if (substr($i, 1, n - 1) == k) print substr($i, n + 1) } }' "$1"
}

# pair NAME MODE ARGS...: runs netpair to its end; sets SPID SPORT CPID CPORT
pair() {
	local name=$1
	shift
	"$HELPERS/netpair" "$@" > "$BATS_TEST_TMPDIR/$name.np"
	read_pair "$name"
}

# read_pair NAME: from NAME.np (pair) or NAME.out (start_bg)
read_pair() {
	local f=$BATS_TEST_TMPDIR/$1.np
	[ -e "$f" ] || f=$BATS_TEST_TMPDIR/$1.out
	SPID=$(kv "$f" server pid)
	SPORT=$(kv "$f" server ports)
	CPID=$(kv "$f" client pid)
	CPORT=$(kv "$f" client port)
}

# fsum FIELD PID SPORT DPORT: FIELD summed over the samples of one flow
fsum() {
	jq -s --arg f "$1" --argjson p "$2" --argjson s "$3" --argjson d "$4" \
		'[.[] | select(.type == "sample" and .pid == $p and .sport == $s and .dport == $d) | .[$f]] | add // 0' \
		"$BATS_TEST_TMPDIR/s.out"
}

# expect_flow PID SPORT DPORT TX TXC RX RXC PEER: exact sums, every sample joined
expect_flow() {
	local got
	got="$(fsum tx_bytes "$1" "$2" "$3") $(fsum tx_calls "$1" "$2" "$3") $(fsum rx_bytes "$1" "$2" "$3") $(fsum rx_calls "$1" "$2" "$3")"
	echo "flow pid $1 $2->$3: tx rx = $got, expected $4 $5 $6 $7"
	[ "$got" = "$4 $5 $6 $7" ]
	jq -e -s --argjson p "$1" --argjson s "$2" --argjson d "$3" --argjson peer "$8" \
		'[.[] | select(.type == "sample" and .pid == $p and .sport == $s and .dport == $d)] |
		length > 0 and all(.peer_pid == $peer)' "$BATS_TEST_TMPDIR/s.out"
}

# expect_edge SRC DST BYTES MSGS READ
expect_edge() {
	jq -e -s --argjson s "$1" --argjson d "$2" --argjson b "$3" --argjson m "$4" --argjson r "$5" \
		'[.[] | select(.type == "edge" and .src.pid == $s and .dst.pid == $d)] |
		length == 1 and .[0].bytes == $b and .[0].msgs == $m and .[0].read_bytes == $r' \
		"$BATS_TEST_TMPDIR/s.out" || {
		echo "edge $1 -> $2: expected $3 bytes, $4 msgs, $5 read"
		jq -c --argjson s "$1" 'select(.type == "edge" and .src.pid == $s)' "$BATS_TEST_TMPDIR/s.out"
		false
	}
}

stop_and_check_json() {
	sleep 0.4
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	jq -e -s '.[-1].type == "summary" and .[-1].exit_reason == "signal" and .[-1].lost_events == 0' \
		"$BATS_TEST_TMPDIR/s.out"
}

# check_pair MODE PROBE_MODE: N bytes in M calls one way, K in L back
check_pair() {
	local mode=$1 pm=$2 n=120000 m=40 k=6000 l=3 fam=ipv4 addr=127.0.0.1 proto crx srx
	case $mode in *6) fam=ipv6 addr=::1 ;; esac
	case $mode in udp*) proto=udp n=24000 ;; *) proto=tcp ;; esac
	start_ss -j -i 200ms --probe-mode "$pm"
	pair p "$mode" -n $n -m $m -k $k -l $l
	stop_and_check_json
	crx=$(kv "$BATS_TEST_TMPDIR/p.np" client_result rx_calls)
	srx=$(kv "$BATS_TEST_TMPDIR/p.np" server_result rx_calls)
	expect_flow "$CPID" "$CPORT" "$SPORT" $n $m $k "$crx" "$SPID"
	expect_flow "$SPID" "$SPORT" "$CPORT" $k $l $n "$srx" "$CPID"
	# one flow per process, with the right names, protocol and family
	jq -e -s --argjson c "$CPID" --argjson s "$SPID" --arg p "$proto" --arg f "$fam" --arg a "$addr" \
		'[.[] | select(.type == "sample" and (.pid == $c or .pid == $s))] |
		all(.proto == $p and .family == $f and .saddr == $a and .daddr == $a and
		    .comm == (if .pid == $c then "ss-client" else "ss-server" end) and .peer_comm ==
		    (if .pid == $c then "ss-server" else "ss-client" end)) and
		([.[] | [.pid, .sport, .dport]] | unique | length) == 2' "$BATS_TEST_TMPDIR/s.out"
	expect_edge "$CPID" "$SPID" $n $m $n
	expect_edge "$SPID" "$CPID" $k $l $k
}

@test "socketsnoop TCP over IPv4: exact bytes and calls each way, ports, pids, peers, edges" {
	need_root
	check_pair tcp4 tp_btf,tracepoint
}

@test "socketsnoop TCP over IPv6: exact bytes and calls each way, ports, pids, peers, edges" {
	need_root
	check_pair tcp6 tp_btf,tracepoint
}

@test "socketsnoop connected UDP over IPv4 and IPv6: exact datagrams, peers, edges" {
	need_root
	check_pair udp4 tp_btf,tracepoint
	aiscope_teardown || true
	check_pair udp6 tp_btf,tracepoint
}

@test "socketsnoop raw_tp path: the same exact figures" {
	need_root
	check_pair tcp4 raw_tp,tracepoint
	jq -e -s '.[-1].probes | test("raw_tp|mixed")' "$BATS_TEST_TMPDIR/s.out"
	aiscope_teardown || true
	check_pair udp6 raw_tp,tracepoint
}

# check_unconnected MODE: one client socket sendto 3 server sockets
check_unconnected() {
	local mode=$1 p
	start_ss -j -i 200ms
	pair p "$mode" -p 3 -n 3000 -m 10 -k 800 -l 2
	stop_and_check_json
	for p in ${SPORT//,/ }; do
		expect_flow "$CPID" "$CPORT" "$p" 3000 10 800 2 "$SPID"
		expect_flow "$SPID" "$p" "$CPORT" 800 2 3000 10 "$CPID"
	done
	jq -e -s --argjson c "$CPID" '[.[] | select(.type == "sample" and .pid == $c) | .dport] |
		unique | length == 3' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s --argjson c "$CPID" --argjson s "$SPID" '[.[] | select(.type == "edge" and
		.src.pid == $c and .dst.pid == $s)] | length == 3 and all(.bytes == 3000 and .msgs == 10)' \
		"$BATS_TEST_TMPDIR/s.out"
}

@test "socketsnoop unconnected UDP: each datagram's real peer, v4 and v6" {
	need_root
	check_unconnected udpu4
	aiscope_teardown || true
	check_unconnected udpu6
}

@test "socketsnoop -e: connect, accept and close with latency, duration and bytes each way" {
	need_root
	local f=$BATS_TEST_TMPDIR/s.out dur crx
	start_ss -j -e
	pair p tcp4 -n 50000 -m 25 -k 3000 -l 3 -w 300
	stop_and_check_json
	dur=$(kv "$BATS_TEST_TMPDIR/p.np" client_result duration_ns)
	crx=$(kv "$BATS_TEST_TMPDIR/p.np" client_result rx_calls)
	echo "client lived $dur ns"
	jq -c 'select(.type == "event")' "$f" | grep ss- || true
	jq -e -s --argjson c "$CPID" --argjson cp "$CPORT" --argjson sp "$SPORT" \
		'[.[] | select(.type == "event" and .event == "connect" and .pid == $c)] | length == 1 and
		.[0].sport == $cp and .[0].dport == $sp and .[0].latency_ns > 0 and .[0].latency_ns < 300000000' "$f"
	jq -e -s --argjson s "$SPID" --argjson c "$CPID" --argjson cp "$CPORT" \
		'[.[] | select(.type == "event" and .event == "accept" and .pid == $s)] | length == 1 and
		.[0].dport == $cp and .[0].comm == "ss-server" and .[0].peer_pid == $c' "$f"
	# the client's socket: 300 ms held, then the bytes; never longer than it lived
	jq -e -s --argjson c "$CPID" --argjson d "$dur" --argjson rxc "$crx" --argjson s "$SPID" \
		'[.[] | select(.type == "event" and .event == "close" and .pid == $c)] | length == 1 and
		.[0].tx_bytes == 50000 and .[0].tx_calls == 25 and .[0].rx_bytes == 3000 and
		.[0].rx_calls == $rxc and .[0].duration_ns >= 300000000 and .[0].duration_ns <= $d and
		.[0].peer_pid == $s and .[0].comm == "ss-client"' "$f"
	jq -e -s --argjson s "$SPID" --argjson d "$dur" \
		'[.[] | select(.type == "event" and .event == "close" and .pid == $s)] | length == 1 and
		.[0].tx_bytes == 3000 and .[0].tx_calls == 3 and .[0].rx_bytes == 50000 and
		.[0].duration_ns > 0 and .[0].duration_ns <= $d' "$f"
}

@test "socketsnoop -e: UDP sockets first seen, closed with their totals, idle ones expire" {
	need_root
	local f=$BATS_TEST_TMPDIR/s.out dur
	start_ss -j -e --idle 300ms -i 100ms
	pair p udp6 -n 4000 -m 8 -k 1000 -l 2
	sleep 1
	stop_and_check_json
	dur=$(kv "$BATS_TEST_TMPDIR/p.np" client_result duration_ns)
	jq -e -s --argjson c "$CPID" --argjson s "$SPID" \
		'[.[] | select(.type == "event" and .event == "first_seen" and (.pid == $c or .pid == $s))] |
		length == 2 and all(.proto == "udp" and .family == "ipv6")' "$f"
	# the client closes its socket; the server's dies with it at exit: idle
	jq -e -s --argjson c "$CPID" --argjson d "$dur" \
		'[.[] | select(.type == "event" and .event == "close" and .pid == $c)] | length == 1 and
		.[0].tx_bytes == 4000 and .[0].tx_calls == 8 and .[0].rx_bytes == 1000 and
		.[0].rx_calls == 2 and .[0].duration_ns <= $d' "$f"
	jq -e -s --argjson s "$SPID" \
		'[.[] | select(.type == "event" and .event == "idle" and .pid == $s)] | length == 1 and
		.[0].rx_bytes == 4000 and .[0].tx_bytes == 1000' "$f"
}

@test "socketsnoop: kernel state stays bounded over many short connections" {
	need_root
	local f=$BATS_TEST_TMPDIR/s.out
	start_ss -j -e -i 200ms
	pair p many4 -x 1500
	stop_and_check_json
	# every connection seen and closed, on both sides
	jq -e -s --argjson s "$SPID" '
		([.[] | select(.type == "event" and .event == "close" and .pid == $s)] | length) == 1500 and
		([.[] | select(.type == "event" and .event == "accept" and .pid == $s)] | length) == 1500' "$f" || {
		jq -s -c --argjson s "$SPID" '[.[] | select(.type == "event" and .pid == $s) | .event] | group_by(.) | map([.[0], length])' "$f"
		false
	}
	CPID=$(jq -s --argjson s "$SPID" '[.[] | select(.type == "event" and .event == "connect" and .comm == "ss-server" and .pid != $s) | .pid] | unique | .[0]' "$f")
	jq -e -s --argjson c "$CPID" '[.[] | select(.type == "event" and .event == "close" and .pid == $c)] | length == 1500' "$f"
	# what the kernel still holds at the end: not the 3000 sockets
	jq -e -s '.[-1].kernel_sockets < 200 and .[-1].kernel_flows == 0' "$f" || {
		tail -1 "$f"; false; }
}

# many_flows N CAP: N short connections of one client and one server (2N
# flows, both ends named ss-np), the run's flow table lowered to CAP
# flows (hidden test knob); checks the summary against the truth
many_flows() {
	local n=$1 cap=$2 f=$BATS_TEST_TMPDIR/s.out kept
	AISCOPE_TEST_CAP_SS_RUN_FLOWS=$cap start_ss -j -i 200ms --comm ss-np
	pair p many4 -x "$n" -C ss-np -S ss-np
	stop_and_check_json
	# each flow kept sent 10 bytes: its own edge, the only one with its
	# pid as src and its channel
	kept=$(jq -s '[.[] | select(.type == "edge" and .src.pid != null)] | length' "$f")
	echo "$((2 * n)) flows, table of $cap: $kept in the edges; $(tail -1 "$f")"
	[ "$kept" -le "$cap" ]
	jq -e -s --argjson f $((2 * n)) --argjson k "$kept" '.[-1] | .flows == $f and .edge_flows_evicted == $f - $k' "$f"
	jq -e -s '[.[] | select(.type == "edge")] | all(.bytes == 10 and .msgs == 1)' "$f"
	KEPT=$kept
}

@test "socketsnoop: the run's flow table stays within its cap; the flows it forgets are counted exactly" {
	need_root
	# below the cap: every flow in the edges, exact, nothing forgotten
	many_flows 40 100
	[ "$KEPT" -eq 80 ]
	jq -e -s '[.[] | select(.type == "edge")] | length == 80 and all(.read_bytes == 10)' "$BATS_TEST_TMPDIR/s.out"
	! grep -q 'forgotten' "$BATS_TEST_TMPDIR/s.err" || false
	# 400 flows through a table of 100
	aiscope_teardown || true
	many_flows 200 100
	[ "$KEPT" -gt 0 ]
	grep -qx "socketsnoop: $((400 - KEPT)) flows idle longest were forgotten to keep the run's flow table at 100: left out of the edge lines" \
		"$BATS_TEST_TMPDIR/s.err"
}

@test "socketsnoop: an idle or closed flow leaves the table" {
	need_root
	local f=$BATS_TEST_TMPDIR/s.out last
	start_ss -j -i 100ms
	pair p tcp4 -n 1000 -m 2
	sleep 1
	stop_and_check_json
	last=$(jq -s --argjson c "$CPID" '[.[] | select(.type == "sample" and .pid == $c) | .seq] | max' "$f")
	echo "the flow's last interval: $last"
	[ "$last" != null ]
	# later intervals passed without it
	jq -e -s --argjson l "$last" '.[-1].intervals > $l + 3' "$f"
}

# ---- filters: each keeps exactly its flows ----

# three workloads: tcp4 (P1), udp6 (P2), unconnected udp4 to 2 peers (P3)
three_pairs() {
	pair a tcp4 -n 2000 -m 4 -C ss-filt
	A=("$SPID" "$CPID")
	APORT=$SPORT
	pair b udp6 -n 2000 -m 4
	B=("$SPID" "$CPID")
	pair c udpu4 -n 2000 -m 4 -p 2
	C=("$SPID" "$CPID")
}

# flows_are true|false WHY PID...: whether each PID has samples; WHY (a
# printf format of the PID) says what is wrong when one does not
flows_are() {
	local want=$1 why=$2 p
	shift 2
	for p in "$@"; do
		jq -e -s --argjson p "$p" --argjson want "$want" \
			'any(.[]; .type == "sample" and .pid == $p) == $want' "$BATS_TEST_TMPDIR/s.out" > /dev/null ||
			{ printf "$why\n" "$p"; return 1; }
	done
}

# has PID...: each has samples; lacks PID...: none has
has() {
	flows_are true "no flow of pid %s" "$@"
}

lacks() {
	flows_are false "pid %s should be left out" "$@"
}

# every sample satisfies a jq condition
all_rows() {
	jq -e -s "[.[] | select(.type == \"sample\")] | all($1)" "$BATS_TEST_TMPDIR/s.out"
}

@test "socketsnoop -P, --proto, -4, -6 and --comm keep exactly their flows" {
	need_root
	start_ss -j -i 200ms -P 1
	three_pairs
	stop_and_check_json
	lacks "${A[@]}" "${B[@]}" "${C[@]}"
	aiscope_teardown || true

	start_ss -j -i 200ms --proto udp
	three_pairs
	stop_and_check_json
	has "${B[@]}" "${C[@]}"
	lacks "${A[@]}"
	all_rows '.proto == "udp"'
	aiscope_teardown || true

	start_ss -j -i 200ms --proto tcp
	three_pairs
	stop_and_check_json
	has "${A[@]}"
	lacks "${B[@]}" "${C[@]}"
	all_rows '.proto == "tcp"'
	aiscope_teardown || true

	start_ss -j -i 200ms -4
	three_pairs
	stop_and_check_json
	has "${A[@]}" "${C[@]}"
	lacks "${B[@]}"
	all_rows '.family == "ipv4"'
	aiscope_teardown || true

	start_ss -j -i 200ms -6
	three_pairs
	stop_and_check_json
	has "${B[@]}"
	lacks "${A[@]}" "${C[@]}"
	all_rows '.family == "ipv6"'
	aiscope_teardown || true

	start_ss -j -i 200ms --comm ss-filt
	three_pairs
	stop_and_check_json
	has "${A[1]}"
	lacks "${A[0]}" "${B[@]}" "${C[@]}"
	all_rows '.comm == "ss-filt"'
}

# held_netpair PROTO: netpair np, 3000 bytes in 3 messages over PROTO,
# its server up (np.out) but held until release_netpair, which waits for
# both ends' results; sets SPID and SPORT, the server's
held_netpair() {
	NP_GO=$BATS_TEST_TMPDIR/np.go
	rm -f "$NP_GO"
	start_bg np "$HELPERS/netpair" "$1" -n 3000 -m 3 -W "$NP_GO"
	wait_for "$BATS_TEST_TMPDIR/np.out" '^server'
	SPID=$(kv "$BATS_TEST_TMPDIR/np.out" server pid)
	SPORT=$(kv "$BATS_TEST_TMPDIR/np.out" server ports)
}

release_netpair() {
	touch "$NP_GO"
	wait_for "$BATS_TEST_TMPDIR/np.out" '^server_result'
}

@test "socketsnoop -P keeps the flows of one port, either end" {
	need_root
	held_netpair tcp4
	start_ss -j -i 200ms -P "$SPORT,1"
	release_netpair
	pair b tcp6 -n 2000 -m 4
	B=("$SPID" "$CPID")
	read_pair np
	stop_and_check_json
	has "$SPID" "$CPID"
	lacks "${B[@]}"
	all_rows ".sport == $SPORT or .dport == $SPORT"
	expect_flow "$CPID" "$CPORT" "$SPORT" 3000 3 4096 "$(kv "$BATS_TEST_TMPDIR/np.out" client_result rx_calls)" "$SPID"
}

@test "socketsnoop -p keeps one process" {
	need_root
	held_netpair tcp4
	start_ss -j -i 200ms -p "$SPID"
	release_netpair
	read_pair np
	stop_and_check_json
	has "$SPID"
	lacks "$CPID"
	all_rows ".pid == $SPID"
	expect_flow "$SPID" "$SPORT" "$CPORT" 4096 2 3000 "$(kv "$BATS_TEST_TMPDIR/np.out" server_result rx_calls)" null
}

# the pair in the container is kept, one outside is left out
in_container_check() {
	local s c
	read_pair np
	s=$SPID c=$CPID
	pair b tcp4 -n 1000 -m 1
	B=("$SPID" "$CPID")
	stop_and_check_json
	has "$s" "$c"
	lacks "${B[@]}"
}

@test "socketsnoop --container and -c keep the processes of a fake docker container" {
	need_root
	local f=$BATS_TEST_TMPDIR/s.out
	make_docker_cgroup
	held_netpair udp4
	move_to_cgroup "$CG" "$SPID"
	start_ss -j -i 200ms --container "${CID:0:12}"
	release_netpair
	in_container_check
	all_rows ".container_id == \"$CID\" and .runtime == \"docker\""
	# the same with -c on the directory
	aiscope_teardown || true
	make_cgroup "$CG"
	held_netpair udp4
	move_to_cgroup "$CG" "$SPID"
	start_ss -j -i 200ms -c "$CG"
	release_netpair
	in_container_check
	all_rows ".container_id == \"$CID\""
}

# ---- output ----

@test "socketsnoop JSON stays valid for a comm with quotes, a newline and a non-UTF-8 byte" {
	need_root
	local f=$BATS_TEST_TMPDIR/s.out
	start_ss -j -e -i 200ms
	pair p tcp4 -n 1000 -m 2 -C 'q"x\nz\xff'
	stop_and_check_json
	jq -e -s --argjson c "$CPID" '[.[] | select(.pid == $c)] | length > 0 and
		all(.comm == "q\"x\nz\ufffd")' "$f"
	jq -e -s --argjson c "$CPID" '[.[] | select(.type == "edge" and .src.pid == $c)] |
		length == 1 and .[0].src.comm == "q\"x\nz\ufffd"' "$f"
	jq -e -s --argjson c "$CPID" '[.[] | select(.type == "event" and .peer_pid == $c)] |
		length > 0 and all(.peer_comm == "q\"x\nz\ufffd")' "$f"
	# the table keeps one line per row
	start_tool t socketsnoop -i 200ms -C
	pair q tcp4 -n 1000 -m 2 -C 'q"x\nz\xff'
	sleep 0.4
	stop_tool "$TOOL_PID"
	grep -E "^ *$CPID q\"x\?z" "$BATS_TEST_TMPDIR/t.out"
	grep -q '^# summary:' "$BATS_TEST_TMPDIR/t.out"
}

@test "socketsnoop table: a hostile comm sanitised, on its own line" {
	need_root
	start_tool t socketsnoop -i 200ms -C -r 0
	pair q tcp4 -n 1000 -m 2 -C 'h\nx\x1b[31m\x9b\xffz'
	sleep 0.4
	stop_tool "$TOOL_PID"
	grep -a "^ *$CPID " "$BATS_TEST_TMPDIR/t.out" | cat -v
	check_sanitised "$BATS_TEST_TMPDIR/t.out"
	grep -qE "^ *$CPID h\?x\?\[31m\?\?z " "$BATS_TEST_TMPDIR/t.out"
}

@test "socketsnoop --io streams one event per call, -n stops after N" {
	need_root
	local f=$BATS_TEST_TMPDIR/s.out
	start_ss -j --io --proto tcp
	pair p tcp4 -n 4000 -m 8 -k 1000 -l 1
	stop_and_check_json
	jq -e -s --argjson c "$CPID" '[.[] | select(.type == "event" and .event == "send" and .pid == $c)] |
		length == 8 and (map(.bytes) | add) == 4000 and all(.tid == $c)' "$f"
	jq -e -s --argjson s "$SPID" '[.[] | select(.type == "event" and .event == "recv" and .pid == $s) |
		.bytes] | add == 4000' "$f"
	aiscope_teardown || true
	start_tool n socketsnoop -j --io -n 3 --comm ss-client
	pair p tcp4 -n 4000 -m 8
	wait "$TOOL_PID"
	[ "$(jq -s '[.[] | select(.type == "event")] | length' "$BATS_TEST_TMPDIR/n.out")" -eq 3 ]
	jq -e -s '.[-1].type == "summary" and .[-1].exit_reason == "count"' "$BATS_TEST_TMPDIR/n.out"
}

@test "socketsnoop table: a block per interval with the flow and its peer" {
	need_root
	start_tool t socketsnoop -i 200ms -C -T
	pair p tcp6 -n 2048 -m 2 -k 1024 -l 1
	sleep 0.4
	stop_tool "$TOOL_PID"
	grep -E '^# [0-9T:.-]+Z interval=' "$BATS_TEST_TMPDIR/t.out"
	grep -E '^TIME +PID COMM +CONTAINER +PROTO LADDR:LPORT +RADDR:RPORT +TX\(KiB\) +RX\(KiB\) +TX_CALLS +RX_CALLS +PEER_PID PEER_COMM' "$BATS_TEST_TMPDIR/t.out"
	grep -E "^[0-9:]+ +$CPID ss-client +- +tcp +\[::1\]:$CPORT +\[::1\]:$SPORT +2\.0 +1\.0 +2 +[0-9]+ +$SPID ss-server" "$BATS_TEST_TMPDIR/t.out"
}
