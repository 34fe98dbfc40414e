# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# rdmasnoop inside the test VMs: real verbs traffic over Soft-RoCE
# (rdma_rxe on a dummy Ethernet device) between two ibv_rc_pingpong processes
# told their message size and count (-s, -n): the tool's work requests,
# bytes, completions, peer QPs and registered memory against what they were
# told and what they print. The RDMA user space is the building host's
# rdma-core on x86, bookworm's arm64 packages on arm64 (scripts/vm/fetch.sh,
# run-matrix.sh).
# Sourced by tests/vm/run.sh (busybox sh; see lib.sh).
# vm-rdma
# vm-tools: rdmasnoop topograph socketsnoop ipcsnoop

RS=/opt/aiscope/bin/rdmasnoop
RS_SKIP=
RS_GID=
RS_SIZE=4096
RS_ITERS=64
RS_RX=100	# receives each side posts (-r: with fewer iterations, never more)

# rxe0 on an Ethernet device of its own (dummy0, 10.77.0.1: rxe refuses
# lo; packets between QPs of one rxe device loop back inside it), and the
# GID index of that address (RoCEv2, IPv4-mapped)
rs_setup() {
	if [ -f /opt/aiscope/rdma.missing ]; then
		RS_SKIP=$(cat /opt/aiscope/rdma.missing)
		return
	fi
	for m in $(cat /opt/aiscope/modules/order 2>/dev/null); do
		case $m in dummy) set -- numdummies=1 ;; *) set -- ;; esac
		insmod "/opt/aiscope/modules/$m.ko" "$@" 2>&1 | sed "s/^/# insmod $m: /"
	done
	ip link set lo up
	ip addr add 10.77.0.1/24 dev dummy0 2>&1 | sed 's/^/# ip addr: /'
	ip link set dummy0 up 2>&1 | sed 's/^/# ip link: /'
	rs_link_add && return
	RS_SKIP="no rxe0 with the GID of 10.77.0.1"
	ls /sys/class/infiniband 2>&1 | sed 's/^/# infiniband: /'
	dmesg | grep -i -e rxe -e rdma | tail -5 | sed 's/^/# dmesg: /'
}

# rs_link_add: rxe0 on dummy0, RS_GID its GID index of 10.77.0.1; fails
# when that GID does not come
rs_link_add() {
	RS_GID=
	rdma link add rxe0 type rxe netdev dummy0 2>&1 | sed 's/^/# rdma link add: /'
	# the GID table fills in from the device's addresses, not at once
	for i in 1 2 3 4 5 6 7 8 9 10; do
		for g in /sys/class/infiniband/rxe0/ports/1/gids/*; do
			case $(cat "$g" 2>/dev/null) in
			0000:0000:0000:0000:0000:ffff:0a4d:0001) RS_GID=${g##*/}; break ;;
			esac
		done
		[ -n "$RS_GID" ] && return 0
		sleep 0.5
	done
	return 1
}
rs_setup
echo "# rdmasnoop: ${RS_SKIP:-rxe0 on dummy0, GID index $RS_GID}"

# the plan on this kernel (its JSON checked on the host), and without an
# RDMA device one line and exit 77
t_plan() {
	$RS --list-probes > "$T/plan" 2>&1 || { cat "$T/plan"; fail "--list-probes exited $?"; }
	cat "$T/plan"
	grep -q '^provider .*ops.post_send *chosen' "$T/plan" || fail "no provider plan"
	$RS --list-probes -j > "$T/plan.j" || fail "--list-probes -j exited $?"
	json_ok "$T/plan.j"
	if [ -z "$(ls /sys/class/infiniband 2>/dev/null)" ]; then
		exits_77 "$T/none" "no RDMA device" $RS -d 1
		grep -q "^rdmasnoop: no RDMA device on this host" "$T/none" || fail "not the one line"
	fi
}

# rs_sums FILE WHO KEY:VALUE...: each KEY summed over FILE's rows is VALUE
rs_sums() {
	_f=$1 _who=$2
	shift 2
	for kv; do
		got=$(jsum "${kv%%:*}" < "$_f")
		[ "$got" = "${kv#*:}" ] || { cat "$_f"; fail "$_who ${kv%%:*}: $got, not ${kv#*:}"; }
	done
}

# hex QPN of a pingpong's "local address" or "remote address" line, as decimal
rs_qpn() {
	printf '%d' "$(cat "$1".out "$1".err | sed -n "s/.*$2 address:.*QPN \(0x[0-9a-f]*\),.*/\1/p" | head -1)"
}

# rs_opener NAME: a first process opens rxe0 and stays (a pingpong server
# waiting for a client that never comes), until the tool started as NAME has
# probed rxe's provider from its open: an opener that exits at once
# (ibv_devinfo) may be gone before the tool reads its maps under TCG, and
# the next opener's first calls would then come before the attach
rs_opener() {
	bg opener ibv_rc_pingpong -d rxe0 -g "$RS_GID" -p 18601
	_op=$BG
	wait_for "$T/$1.err" "provider " 30 || {
		kill "$_op"; cat "$T/opener.err"; ls -l /dev/infiniband /sys/class/infiniband_verbs
		fail "the provider of rxe0 was not probed"; }
	grep "provider " "$T/$1.err"
	kill "$_op"
	wait "$_op" 2> /dev/null
}

# rs_rc_pair [-p PORT]: an ibv_rc_pingpong server (SRV) and client (CLI)
# moving RS_ITERS messages of RS_SIZE bytes each way, RS_RX receives posted
# on each side; both must succeed
rs_rc_pair() {
	bg srv ibv_rc_pingpong -d rxe0 -g "$RS_GID" -s $RS_SIZE -n $RS_ITERS -r $RS_RX "$@"
	SRV=$BG
	case " $* " in *" -p "*) _port=$(echo " $* " | sed 's/.* -p \([0-9]*\) .*/\1/') ;; *) _port=18515 ;; esac
	rs_listening "$_port" || { cat "$T/srv.out" "$T/srv.err"; fail "the server does not listen on $_port"; }
	bg cli ibv_rc_pingpong -d rxe0 -g "$RS_GID" -s $RS_SIZE -n $RS_ITERS -r $RS_RX "$@" 127.0.0.1
	CLI=$BG
	wait "$CLI" || { cat "$T/cli.out" "$T/cli.err"; fail "the client failed"; }
	wait "$SRV" || { cat "$T/srv.out" "$T/srv.err"; fail "the server failed"; }
}

# the tool, told the provider by a first opener (rs_opener), then a
# server and a client moving RS_ITERS messages of RS_SIZE bytes each way
t_rc() {
	[ -z "$RS_SKIP" ] || skip_test "$RS_SKIP"
	# the device comes while the tools run (--wait-device: a DaemonSet's
	# node whose driver loads after it)
	rdma link delete rxe0 || fail "cannot delete rxe0"
	[ -z "$(ls /sys/class/infiniband)" ] || fail "an RDMA device left: $(ls /sys/class/infiniband)"
	start_tool rc $RS -j -v -i 30 --wait-device
	TOOL_JSON=$TOOL_PID
	grep "no RDMA device" "$T/rc.err"
	grep -q "^rdmasnoop: no RDMA device on this host yet" "$T/rc.err" || fail "--wait-device said nothing"
	# the table too, beside it: shown in the log, its totals checked
	start_tool rct $RS -C -i 30 --prometheus "$T/rs.prom" --wait-device
	TOOL_TABLE=$TOOL_PID
	# and -e: connections, registrations
	start_tool rce $RS -e -j --wait-device
	TOOL_EVENTS=$TOOL_PID
	rs_link_add || fail "rxe0 did not come back with its GID"
	rs_opener rc
	rs_rc_pair
	cat "$T/cli.out" "$T/cli.err"
	sleep 0.5
	stop_tool "$TOOL_EVENTS" || fail "rdmasnoop -e exited $?: $(cat "$T/rce.err")"
	stop_tool "$TOOL_TABLE" || fail "rdmasnoop (table) exited $?: $(cat "$T/rct.err")"
	stop_tool "$TOOL_JSON" || fail "rdmasnoop exited $?: $(cat "$T/rc.err")"
	cat "$T/rct.out" "$T/rct.err"
	grep -q "^rdmasnoop: $((2 * RS_ITERS)) work requests, $((2 * RS_ITERS * RS_SIZE)) bytes, " "$T/rct.err" ||
		fail "the table run's totals"
	# its metrics: the same requests and bytes, by opcode
	for kv in work_requests_total:send:$((2 * RS_ITERS)) posted_bytes_total:send:$((2 * RS_ITERS * RS_SIZE)) \
		completions_total:recv:$((2 * RS_ITERS)) completed_bytes_total:recv:$((2 * RS_ITERS * RS_SIZE)); do
		m=${kv%%:*} rest=${kv#*:}
		got=$(awk -v m="aiscope_rdmasnoop_$m{" -v op="opcode=\"${rest%%:*}\"" \
			'index($0, m) == 1 && index($0, op) { s += $NF } END { printf "%.0f", s }' "$T/rs.prom")
		[ "$got" = "${rest#*:}" ] || { grep "aiscope_rdmasnoop_$m" "$T/rs.prom"; fail "metric $m ${rest%%:*}: $got"; }
	done
	json_ok "$T/rc.out"
	grep -e "cannot" -e "failed" "$T/rc.err"
	cq=$(rs_qpn "$T/cli" local)
	sq=$(rs_qpn "$T/srv" local)
	[ "$sq" -gt 0 ] || fail "no QPN in the server's output"
	[ "$(rs_qpn "$T/cli" remote)" = "$sq" ] || fail "the client's remote QPN is not the server's"
	echo "client pid $CLI qpn $cq, server pid $SRV qpn $sq"
	bytes=$((RS_SIZE * RS_ITERS))
	for side in "$CLI $cq $SRV $sq" "$SRV $sq $CLI $cq"; do
		set -- $side
		jsel "$T/rc.out" '"type":"sample"' '"row":"qp"' "\"pid\":$1," > "$T/qp"
		cat "$T/qp"
		rs_sums "$T/qp" "pid $1" send_wrs:$RS_ITERS send_bytes:$bytes send_completions:$RS_ITERS \
			recv_completions:$RS_ITERS recv_bytes:$bytes latency_count:$RS_ITERS latency_unmatched:0 \
			recv_wrs:$RS_RX recv_posted_bytes:$((RS_RX * RS_SIZE)) \
			write_wrs:0 read_wrs:0 atomic_wrs:0 errors:0
		[ "$(jval qpn < "$T/qp" | sort -u)" = "$2" ] || fail "pid $1: QPN not $2"
		[ "$(jval peer_qpn < "$T/qp" | sort -u)" = "$4" ] || fail "pid $1: peer QPN not $4"
		[ "$(jval peer_pid < "$T/qp" | sort -u)" = "$3" ] || fail "pid $1: peer pid not $3"
		[ "$(jval transport < "$T/qp" | sort -u)" = rc ] || fail "pid $1: transport not rc"
		[ "$(jval device < "$T/qp" | sort -u)" = rxe0 ] || fail "pid $1: device not rxe0"
		[ "$(jval peer_gid < "$T/qp" | sort -u)" = "::ffff:10.77.0.1" ] || fail "pid $1: peer GID"
		jsel "$T/rc.out" '"type":"sample"' '"row":"process"' "\"pid\":$1," > "$T/proc"
		[ "$(jsum mr_regs < "$T/proc")" = 1 ] || fail "pid $1: not one memory region"
		[ "$(jsum mr_reg_bytes < "$T/proc")" = $RS_SIZE ] || fail "pid $1: region not $RS_SIZE bytes"
		jsel "$T/rce.out" '"event":"connect"' "\"pid\":$1," > "$T/ev"
		cat "$T/ev"
		[ "$(jval peer_qpn < "$T/ev" | sort -u)" = "$4" ] || fail "pid $1: -e connect peer QPN"
		[ "$(jval qpn < "$T/ev" | sort -u)" = "$2" ] || fail "pid $1: -e connect QPN"
		[ "$(jsel "$T/rce.out" '"event":"reg_mr"' "\"pid\":$1," | jval bytes)" = $RS_SIZE ] ||
			fail "pid $1: -e reg_mr"
		[ "$(jsel "$T/rce.out" '"event":"dereg_mr"' "\"pid\":$1," | jval bytes)" = $RS_SIZE ] ||
			fail "pid $1: -e dereg_mr"
		[ "$(jsel "$T/rce.out" '"event":"open"' "\"pid\":$1," | jval device)" = rxe0 ] ||
			fail "pid $1: -e open"
		jsel "$T/rc.out" '"type":"edge"' '"kind":"rdma"' "/$2->" > "$T/edge"
		[ "$(jsum bytes < "$T/edge")" = $bytes ] || { cat "$T/edge"; fail "pid $1: edge bytes"; }
		# its source: the QP's own address, as the peer names it (the
		# GID of the index the pingpong chose, -g)
		grep -q "\"src\":{[^}]*\"endpoint\":\"::ffff:10.77.0.1/$2\"}" "$T/edge" ||
			{ cat "$T/edge"; fail "pid $1: edge source endpoint not ::ffff:10.77.0.1/$2"; }
	done
	grep '"type":"summary"' "$T/rc.out" > "$T/sum"
	cat "$T/sum"
	grep -q '"attach_failures":0,' "$T/sum" || fail "probes not attached"
	grep -q '"lost_events":0,' "$T/sum" || fail "events lost"
}

# UD: each send names its peer (address handle, remote QPN); receives
# complete with the 40-byte GRH in front of the payload
t_ud() {
	[ -z "$RS_SKIP" ] || skip_test "$RS_SKIP"
	size=512
	start_tool ud $RS -j -v -i 30
	rs_opener ud
	bg srv ibv_ud_pingpong -d rxe0 -g "$RS_GID" -s $size -n $RS_ITERS -r $RS_RX
	SRV=$BG
	rs_listening 18515 || { cat "$T/srv.out" "$T/srv.err"; fail "the server does not listen on 18515"; }
	bg cli ibv_ud_pingpong -d rxe0 -g "$RS_GID" -s $size -n $RS_ITERS -r $RS_RX 127.0.0.1
	CLI=$BG
	wait "$CLI" || { cat "$T/cli.out" "$T/cli.err"; fail "the client failed"; }
	wait "$SRV" || { cat "$T/srv.out" "$T/srv.err"; fail "the server failed"; }
	cat "$T/cli.out" "$T/cli.err"
	sleep 0.5
	stop_tool "$TOOL_PID" || fail "rdmasnoop exited $?: $(cat "$T/ud.err")"
	json_ok "$T/ud.out"
	cq=$(rs_qpn "$T/cli" local)
	sq=$(rs_qpn "$T/srv" local)
	[ "$sq" -gt 0 ] || fail "no QPN in the server's output"
	echo "client pid $CLI qpn $cq, server pid $SRV qpn $sq"
	for side in "$CLI $cq $sq" "$SRV $sq $cq"; do
		set -- $side
		jsel "$T/ud.out" '"type":"sample"' '"row":"qp"' "\"pid\":$1," > "$T/qp"
		cat "$T/qp"
		rs_sums "$T/qp" "pid $1" send_wrs:$RS_ITERS send_bytes:$((size * RS_ITERS)) \
			send_completions:$RS_ITERS recv_completions:$RS_ITERS \
			recv_bytes:$(((size + 40) * RS_ITERS)) recv_wrs:$RS_RX \
			recv_posted_bytes:$(((size + 40) * RS_RX)) latency_count:$RS_ITERS latency_unmatched:0 \
			peer_unknown:0 errors:0
		[ "$(jval qpn < "$T/qp" | sort -u)" = "$2" ] || fail "pid $1: QPN not $2"
		[ "$(jval peer_qpn < "$T/qp" | sort -u)" = "$3" ] || fail "pid $1: peer QPN not $3"
		[ "$(jval transport < "$T/qp" | sort -u)" = ud ] || fail "pid $1: transport not ud"
		[ "$(jval peer_gid < "$T/qp" | sort -u)" = "::ffff:10.77.0.1" ] || fail "pid $1: peer GID"
	done
	grep '"type":"summary"' "$T/ud.out"
}

# rxe0's packets sent so far (its hw_counters), or empty
rs_sent() {
	cat /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts 2> /dev/null
}

# the QPN of PID's queue pair on rxe0 as the kernel lists it (rdma resource)
rs_kqpn() {
	rdma resource show qp link rxe0/1 2> /dev/null |
		awk -v p="$1" '{ q = ""; pid = ""
			for (i = 1; i < NF; i++) { if ($i == "lqpn") q = $(i + 1); if ($i == "pid") pid = $(i + 1) }
			if (pid == p) print q }'
}

# UD traffic already flowing when the tool starts: the address handles were
# made before it, so each send's peer is its QPN alone, every one counted in
# peer_unknown, never the address of another handle
t_ud_late() {
	[ -z "$RS_SKIP" ] || skip_test "$RS_SKIP"
	# (a first run that failed left its pair running)
	pkill -f 'ibv_ud_pingpong .*-p 18602' 2> /dev/null && sleep 0.5
	bg srv ibv_ud_pingpong -d rxe0 -g "$RS_GID" -s 512 -n 100000000 -r $RS_RX -p 18602 -e
	SRV=$BG
	rs_listening 18602 || { cat "$T/srv.out" "$T/srv.err"; fail "the server does not listen on 18602"; }
	bg cli ibv_ud_pingpong -d rxe0 -g "$RS_GID" -s 512 -n 100000000 -r $RS_RX -p 18602 -e 127.0.0.1
	CLI=$BG
	# (-e: they sleep on completion events, not a busy poll that would
	# leave the emulated CPUs to nothing else); both sides send only once
	# their handles exist
	_i=0
	_s0=$(rs_sent)
	while :; do
		sleep 0.5
		_i=$((_i + 1))
		[ -n "$_s0" ] && [ "$(rs_sent)" -gt $((_s0 + 20)) ] && break
		[ -z "$_s0" ] && [ $_i -ge 6 ] && break
		[ $_i -lt 60 ] || { kill "$CLI" "$SRV"; cat "$T"/cli.* "$T"/srv.*; fail "no UD traffic"; }
	done
	echo "rxe0 sent_pkts before the tool: $(rs_sent)"
	start_tool late $RS -j -v -i 1
	# the running pair is traced once a new process opens rxe0
	rs_opener late
	sleep 2
	stop_tool "$TOOL_PID" || fail "rdmasnoop exited $?: $(cat "$T/late.err")"
	# (their stdout, buffered, is lost to the kill: the kernel's list)
	rdma resource show qp link rxe0/1
	cq=$(rs_kqpn "$CLI")
	sq=$(rs_kqpn "$SRV")
	kill "$CLI" "$SRV"
	wait "$CLI" "$SRV" 2> /dev/null
	json_ok "$T/late.out"
	echo "client pid $CLI qpn $cq, server pid $SRV qpn $sq"
	[ -n "$cq" ] && [ -n "$sq" ] || fail "no QPN of the pair in the kernel's list"
	for side in "$CLI $cq $sq" "$SRV $sq $cq"; do
		set -- $side
		jsel "$T/late.out" '"type":"sample"' '"row":"qp"' "\"pid\":$1," > "$T/qp"
		tail -2 "$T/qp"
		sends=$(jsum send_wrs < "$T/qp")
		unknown=$(jsum peer_unknown < "$T/qp")
		echo "pid $1: send_wrs $sends, peer_unknown $unknown"
		[ "$sends" -gt 0 ] || fail "pid $1: no sends seen"
		[ "$unknown" = "$sends" ] || fail "pid $1: peer_unknown $unknown, not every send ($sends)"
		[ "$(jval qpn < "$T/qp" | sort -u)" = "$2" ] || fail "pid $1: QPN not $2"
		[ "$(jval peer_qpn < "$T/qp" | sort -u | grep -vx null)" = "$3" ] || fail "pid $1: peer QPN not $3"
		[ "$(jval peer_gid < "$T/qp" | sort -u)" = null ] || fail "pid $1: a peer GID without its handle"
		[ "$(jval peer_lid < "$T/qp" | sort -u)" = null ] || fail "pid $1: a peer LID without its handle"
	done
}

# --hold: no first opener; the server is the first process to open rxe0
# in the tool's run, and posts its receives as soon as its open returns,
# before a tool without --hold has probed the provider: held, every one of
# them is counted, both sides exact
t_hold() {
	[ -z "$RS_SKIP" ] || skip_test "$RS_SKIP"
	start_tool hold $RS -j -v -i 30 --hold --comm ibv_rc_pingpong
	rs_rc_pair -p 18603
	sleep 0.5
	stop_tool "$TOOL_PID" || fail "rdmasnoop exited $?: $(cat "$T/hold.err")"
	grep "provider " "$T/hold.err"
	json_ok "$T/hold.out"
	for pid in $SRV $CLI; do
		jsel "$T/hold.out" '"type":"sample"' '"row":"qp"' "\"pid\":$pid," > "$T/qp"
		rs_sums "$T/qp" "pid $pid" recv_wrs:$RS_RX recv_posted_bytes:$((RS_RX * RS_SIZE)) send_wrs:$RS_ITERS \
			send_bytes:$((RS_ITERS * RS_SIZE)) recv_completions:$RS_ITERS send_completions:$RS_ITERS \
			latency_count:$RS_ITERS errors:0
	done
	grep '"type":"summary"' "$T/hold.out" > "$T/sum"
	cat "$T/sum"
	held=$(jval held < "$T/sum")
	echo "held $held, longest $(jval hold_max_ns < "$T/sum") ns"
	[ "$held" -ge 2 ] || fail "the two openers were not held: $held"
	[ "$(jval holds_skipped < "$T/sum")" = 0 ] || fail "openers not held"
	[ "$(jval hold_max_ns < "$T/sum")" -gt 0 ] || fail "no hold time"
	[ "$(jval device_opens < "$T/sum")" -ge 2 ] || fail "the opens not seen"
}

# topograph's live capture with --with rdmasnoop: an RC pair's two queue
# pairs are two rdma edges, each from one pingpong process to the other
# (both on this host: joined by the peer's GID and QPN), with the bytes
# and sends each side posted
t_topo() {
	[ -z "$RS_SKIP" ] || skip_test "$RS_SKIP"
	start_tool topo /opt/aiscope/bin/topograph -j -d 600 --with rdmasnoop --comm ibv_rc_pingpong
	# the provider, learned from a first open (the pair's sends come
	# after their connection, long after; its receives are not edges)
	bg opener ibv_rc_pingpong -d rxe0 -g "$RS_GID" -p 18604
	sleep 3
	kill "$BG"
	rs_rc_pair -p 18605
	sleep 0.5
	stop_tool "$TOOL_PID" || fail "topograph exited $?: $(cat "$T/topo.err")"
	json_ok "$T/topo.out"
	jsel "$T/topo.out" '"type":"edge"' '"kind":"rdma"' > "$T/edges"
	cat "$T/edges"
	[ "$(wc -l < "$T/edges")" -eq 2 ] || fail "not two rdma edges"
	cq=$(rs_qpn "$T/cli" local)
	sq=$(rs_qpn "$T/srv" local)
	for pair in "$CLI $SRV $cq $sq" "$SRV $CLI $sq $cq"; do
		set -- $pair
		e=$(grep "\"src\":{[^}]*\"pid\":$1," "$T/edges")
		[ -n "$e" ] || fail "no rdma edge from pid $1"
		[ "$(echo "$e" | sed -n 's/.*"dst":{[^}]*"pid":\([0-9]*\),.*/\1/p')" = "$2" ] ||
			fail "the edge from $1 does not end at $2"
		[ "$(echo "$e" | jval bytes)" = $((RS_SIZE * RS_ITERS)) ] || fail "edge $1->$2: bytes"
		[ "$(echo "$e" | jval msgs)" = $RS_ITERS ] || fail "edge $1->$2: msgs"
		echo "$e" | grep -q "\"channel\":\"rxe0:1/$3->::ffff:10.77.0.1/$4\"" ||
			fail "edge $1->$2: channel not rxe0:1/$3->::ffff:10.77.0.1/$4"
	done
}

# rs_listening PORT: wait (10 s at most) until a TCP socket listens on
# PORT (a pingpong or perftest server: its device is open, its receives
# posted)
rs_listening() {
	_hex=$(printf ':%04X ' "$1")
	for _i in $(seq 100); do
		grep -q "$_hex[0-9A-F:]* 0A " /proc/net/tcp /proc/net/tcp6 2> /dev/null && return 0
		sleep 0.1
	done
	return 1
}

# rs_perf PROG PORT ARGS...: a perftest server and client (SRV, CLI; their
# output in $T/srv.PORT.* and $T/cli.PORT.*) on rxe0's GID of 10.77.0.1,
# their connection exchanged over TCP on PORT, 64 requests in flight at
# most (-t: rdmasnoop times 64 signaled ones per QP); both must succeed
rs_perf() {
	_p=$1 _port=$2
	shift 2
	bg "srv.$_port" "$_p" -d rxe0 -x "$RS_GID" -p "$_port" -F -t 64 "$@"
	SRV=$BG
	rs_listening "$_port" || { kill "$SRV"; cat "$T/srv.$_port".*; fail "$_p: the server does not listen on $_port"; }
	bg "cli.$_port" "$_p" -d rxe0 -x "$RS_GID" -p "$_port" -F -t 64 "$@" 127.0.0.1
	CLI=$BG
	wait "$CLI" || { cat "$T/cli.$_port".* "$T/srv.$_port".*; fail "$_p: the client failed"; }
	wait "$SRV" || { cat "$T/srv.$_port".*; fail "$_p: the server failed"; }
}

# perftest's QPN of a side's "local address" or "remote address" line
rs_perf_qpn() {
	printf '%d' "$(sed -n "s/.*$2 address:.*QPN \(0x[0-9a-f]*\) .*/\1/p" "$1".out | head -1)"
}

# rs_perf_check PORT CLI SRV OP SIZE QMOD TRANSPORT: the client's QP row of
# the perftest run on PORT (PT_N requests of SIZE bytes, every QMOD-th
# signaled) against what it was told, its own count and its peer, the
# server's with nothing posted but the receives of a send test
rs_perf_check() {
	_pt=$1 CLI=$2 SRV=$3 _op=$4 _sz=$5 _q=$6 _tr=$7
	grep -e '#bytes' -A1 -e 'address:' "$T/cli.$_pt.out"
	# perftest's own: "#bytes #iterations ..." and its line of figures
	[ "$(awk '/#bytes/ { getline; print $1, $2; exit }' "$T/cli.$_pt.out")" = "$_sz $PT_N" ] ||
		fail "$_op: perftest did not move $PT_N x $_sz bytes"
	cq=$(rs_perf_qpn "$T/cli.$_pt" local)
	sq=$(rs_perf_qpn "$T/srv.$_pt" local)
	[ "$(rs_perf_qpn "$T/cli.$_pt" remote)" = "$sq" ] || fail "$_op: the client's remote QPN is not the server's"
	jsel "$T/pt.out" '"type":"sample"' '"row":"qp"' "\"pid\":$CLI," > "$T/qp"
	cat "$T/qp"
	_c=$((PT_N / _q))
	rs_sums "$T/qp" "$_op client" ${_op}_wrs:$PT_N ${_op}_bytes:$((PT_N * _sz)) ${_op}_completions:$_c completions:$_c \
		wrs:$PT_N latency_count:$_c latency_unmatched:0 errors:0 truncated:0
	[ "$(jval qpn < "$T/qp" | sort -u)" = "$cq" ] || fail "$_op: client QPN not $cq"
	[ "$(jval peer_qpn < "$T/qp" | sort -u)" = "$sq" ] || fail "$_op: peer QPN not $sq"
	[ "$(jval peer_pid < "$T/qp" | sort -u)" = "$SRV" ] || fail "$_op: peer pid not $SRV"
	[ "$(jval transport < "$T/qp" | sort -u)" = "$_tr" ] || fail "$_op: transport not $_tr"
	jsel "$T/pt.out" '"type":"sample"' '"row":"qp"' "\"pid\":$SRV," > "$T/sqp"
	cat "$T/sqp"
	if [ "$_op" = send ]; then
		rs_sums "$T/sqp" "$_op server" recv_completions:$PT_N recv_bytes:$((PT_N * _sz)) wrs:0 errors:0
	else
		# the passive side of a one-sided operation posts nothing
		[ "$(jsum wrs < "$T/sqp")" = 0 ] || fail "$_op: the server posted requests"
	fi
}

# perftest's bandwidth programs, one opcode each: sends over RC and UC
# (the server's receives), RDMA writes, RDMA reads, fetch-and-adds and
# compare-and-swaps over RC; every request, byte and completion exact, and
# every signaled request's completion timed though perftest gives all of
# one QP's the same wr_id
PT_N=200
t_perftest() {
	[ -z "$RS_SKIP" ] || skip_test "$RS_SKIP"
	command -v ib_write_bw > /dev/null || skip_test "no perftest in this image (Debian's perftest: make deps)"
	# one run of the tool over the six pairs, each pair told apart by
	# its processes
	start_tool pt $RS -j -v -i 60 --hold
	port=18620
	: > "$T/runs"
	for run in "ib_send_bw send 8192 1 RC" "ib_send_bw send 4096 5 UC" "ib_write_bw write 8192 10 RC" \
		"ib_read_bw read 8192 1 RC" "ib_atomic_bw atomic 8 20 RC -A FETCH_AND_ADD" \
		"ib_atomic_bw atomic 8 1 RC -A CMP_AND_SWAP"; do
		set -- $run
		port=$((port + 1))
		prog=$1 op=$2 size=$3 qmod=$4 conn=$5
		shift 5
		[ "$op" = atomic ] || set -- "$@" -s "$size"
		rs_perf "$prog" $port -n $PT_N -Q "$qmod" -c "$conn" "$@"
		echo "$port $CLI $SRV $op $size $qmod $(echo "$conn" | tr A-Z a-z) $prog -c $conn $*" >> "$T/runs"
	done
	sleep 0.5
	stop_tool "$TOOL_PID" || fail "rdmasnoop exited $?: $(cat "$T/pt.err")"
	json_ok "$T/pt.out"
	while read -r port cli srv op size qmod tr what; do
		echo "# $what: $PT_N requests of $size bytes, every ${qmod}th signaled"
		rs_perf_check "$port" "$cli" "$srv" "$op" "$size" "$qmod" "$tr"
	done < "$T/runs"
	grep '"type":"summary"' "$T/pt.out" > "$T/sum"
	grep -q '"lost_events":0,' "$T/sum" || fail "events lost"
	grep -q '"completions_unread":0,' "$T/sum" || fail "completions unread"
}

# rs_tally QPN KEY: rsverbs' own count
rs_tally() {
	awk -v q="$1" -v k="$2" '$1 == "tally" && $2 == q && $3 == k { print $4 }' "$T/rv.out"
}

# The project's own verbs program (tests/rdma/rsverbs.c), for what
# Debian's programs do not post: sends and RDMA writes with immediate
# data, chains of requests (one of 20: rdmasnoop reads 16 per call and
# counts the call truncated), completions polled 18 at a time (2 of each
# call unread, counted; the send completions after them still timed), and
# RDMA writes with a wrong key, whose completions fail (a remote access
# error, then flushes; all flushed where 5.10's rxe never answers them). Each of its two QPs' requests, completions, errors
# by status and timed completions against its own count; -e's cq_error
# events too.
RV_SIZE=4096
RV_K=5	# writes with a wrong key
t_verbs() {
	[ -z "$RS_SKIP" ] || skip_test "$RS_SKIP"
	[ -x /opt/aiscope/helpers/rsverbs ] ||
		skip_test "no rsverbs in this image: it was not built (build/vm/ARCH-build.log says why)"
	start_tool vt $RS -j -v -i 30 --hold --comm rsverbs
	TOOL_JSON=$TOOL_PID
	start_tool ve $RS -j -e --comm rsverbs
	TOOL_EVENTS=$TOOL_PID
	bg rv /opt/aiscope/helpers/rsverbs -d rxe0 -g "$RS_GID" -n 64 -s $RV_SIZE -k $RV_K
	wait "$BG" || { cat "$T/rv.out" "$T/rv.err"; fail "rsverbs failed"; }
	pid=$BG
	sleep 0.5
	stop_tool "$TOOL_EVENTS" || fail "rdmasnoop -e exited $?: $(cat "$T/ve.err")"
	stop_tool "$TOOL_JSON" || fail "rdmasnoop exited $?: $(cat "$T/vt.err")"
	cat "$T/rv.out"
	json_ok "$T/vt.out"
	set -- $(sed -n 's/^qps //p' "$T/rv.out")
	qa=$1 qb=$2
	[ -n "$qb" ] || fail "rsverbs named no QPs"
	grep "^wrong key" "$T/rv.out"
	[ "$(rs_tally "$qa" other_status)" = 0 ] || fail "rsverbs met a status it does not name"
	# A: the sender; its 4 requests past the 16th of its chain of 20 unseen
	pa=$(rs_tally "$qa" past16_wrs)
	[ "$pa" -gt 0 ] || fail "no request past the 16th of a call"
	jsel "$T/vt.out" '"type":"sample"' '"row":"qp"' "\"pid\":$pid," ",\"qpn\":$qa," > "$T/qa"
	errs=0
	for st in wr_flush_err rem_access_err rem_inv_req_err rem_op_err retry_exc_err; do
		errs=$((errs + $(rs_tally "$qa" $st)))
	done
	# every write with the wrong key ends in an error (which, the kernel's
	# rxe decides: rem_access_err then wr_flush_err, or all flushed)
	[ "$errs" = $RV_K ] || fail "$errs failed completions, not the $RV_K writes with a wrong key"
	# its completions past the 16th of a poll call are unseen; the
	# next ones seen are timed all the same
	ua=$(rs_tally "$qa" past16_send_completions)
	sc=$(($(rs_tally "$qa" send_completions) - ua)) wc=$(rs_tally "$qa" write_completions)
	rs_sums "$T/qa" "QP $qa (A)" send_wrs:$(($(rs_tally "$qa" send_wrs) - pa)) \
		send_bytes:$(($(rs_tally "$qa" send_bytes) - pa * RV_SIZE)) \
		write_wrs:$(rs_tally "$qa" write_wrs) write_bytes:$(rs_tally "$qa" write_bytes) \
		send_completions:$sc write_completions:$wc recv_wrs:0 recv_completions:0 \
		truncated:$(rs_tally "$qa" past16_calls) \
		rem_access_err:$(rs_tally "$qa" rem_access_err) wr_flush_err:$(rs_tally "$qa" wr_flush_err) \
		retry_exc_err:$(rs_tally "$qa" retry_exc_err) \
		errors:$errs latency_count:$((sc + wc - pa)) latency_unmatched:$pa
	# B: the receiver; its 4 receives past the 16th of its chain unseen
	pb=$(rs_tally "$qb" past16_wrs)
	jsel "$T/vt.out" '"type":"sample"' '"row":"qp"' "\"pid\":$pid," ",\"qpn\":$qb," > "$T/qb"
	ub=$(rs_tally "$qb" past16_recv_completions)
	[ $((ua + ub)) -gt 0 ] || fail "no completion past the 16th of a poll call"
	echo "completions past the 16th of a poll call: $ua sends, $ub receives"
	rs_sums "$T/qb" "QP $qb (B)" recv_wrs:$(($(rs_tally "$qb" recv_wrs) - pb)) \
		recv_posted_bytes:$(($(rs_tally "$qb" recv_posted_bytes) - pb * RV_SIZE)) \
		recv_completions:$(($(rs_tally "$qb" recv_completions) - ub)) \
		recv_bytes:$(($(rs_tally "$qb" recv_bytes) - $(rs_tally "$qb" past16_recv_bytes))) \
		truncated:$(rs_tally "$qb" past16_calls) wrs:0 \
		errors:$(($(rs_tally "$qb" wr_flush_err) + $(rs_tally "$qb" rem_access_err)))
	[ "$(jval peer_qpn < "$T/qa" | sort -u)" = "$qb" ] || fail "A's peer QPN not $qb"
	[ "$(jval peer_pid < "$T/qa" | sort -u)" = "$pid" ] || fail "A's peer pid not its own process"
	grep '"type":"summary"' "$T/vt.out" > "$T/sum"
	cat "$T/sum"
	[ "$(jval completions_unread < "$T/sum")" = $((ua + ub)) ] ||
		fail "completions_unread not $((ua + ub)), the completions rsverbs polled past the 16th of a call"
	# -e: one cq_error event per failed completion, with its status
	for st in rem_access_err wr_flush_err retry_exc_err; do
		got=$(jsel "$T/ve.out" '"event":"cq_error"' "\"qpn\":$qa," "\"status\":\"$st\"" | wc -l)
		[ "$got" = "$(rs_tally "$qa" $st)" ] || fail "-e: $got cq_error events $st, not $(rs_tally "$qa" $st)"
	done
}

# median of the numbers on stdin
rs_median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# rs_bench_run MODE PORT: one ibv_rc_pingpong pair, RS_BENCH_ITERS round
# trips of 4096 bytes, busy polling as NCCL does; MODE bare, or table or
# json with rdmasnoop (--hold: the first opener's calls counted too) whose
# work requests must be the pair's exactly. The client's usec/iter is
# added to $T/bench.MODE.
rs_bench_run() {
	case $1 in
	table) start_tool b $RS -C -i 60 --hold --comm ibv_rc_pingpong ;;
	json) start_tool b $RS -j -i 60 --hold --comm ibv_rc_pingpong ;;
	esac
	ibv_rc_pingpong -d rxe0 -g "$RS_GID" -s 4096 -n "$RS_BENCH_ITERS" -p "$2" > "$T/bsrv.out" 2>&1 &
	_srv=$!
	sleep 1
	ibv_rc_pingpong -d rxe0 -g "$RS_GID" -s 4096 -n "$RS_BENCH_ITERS" -p "$2" 127.0.0.1 > "$T/bcli.out" 2>&1 ||
		{ cat "$T/bcli.out"; fail "the bench client failed ($1)"; }
	wait "$_srv" || { cat "$T/bsrv.out"; fail "the bench server failed ($1)"; }
	if [ "$1" != bare ]; then
		stop_tool "$TOOL_PID" || fail "rdmasnoop ($1) exited $?: $(cat "$T/b.err")"
		case $1 in
		table) grep -q "^rdmasnoop: $((2 * RS_BENCH_ITERS)) work requests, " "$T/b.err" ;;
		json) [ "$(grep '"type":"summary"' "$T/b.out" | jval wrs)" = $((2 * RS_BENCH_ITERS)) ] ;;
		esac || { cat "$T/b.err"; fail "rdmasnoop ($1) did not count the pair's $((2 * RS_BENCH_ITERS)) sends"; }
	fi
	_v=$(sed -n 's/.* iters in .* seconds = \([0-9.]*\) usec\/iter.*/\1/p' "$T/bcli.out")
	[ -n "$_v" ] || fail "no usec/iter from the client ($1): $(cat "$T/bcli.out")"
	echo "$_v" >> "$T/bench.$1"
	echo "$1: $_v usec/iter"
}

# The tool's cost, side by side (a benchmark: it reports, its figures are
# not checked; the full depth only): the pair's own usec/iter, bare and
# with rdmasnoop (table; JSON), RS_BENCH_REPS runs of each, interleaved;
# medians, and each traced run's sends counted exactly. Emulated (TCG):
# the ratio, not the microseconds, is the figure.
RS_BENCH_ITERS=300
RS_BENCH_REPS=5
t_overhead() {
	[ -z "$RS_SKIP" ] || skip_test "$RS_SKIP"
	port=18610
	for i in $(seq 1 $RS_BENCH_REPS); do
		for mode in bare table json; do
			port=$((port + 1))
			rs_bench_run $mode $port
		done
	done
	bare=$(rs_median < "$T/bench.bare")
	for mode in bare table json; do
		m=$(rs_median < "$T/bench.$mode")
		echo "rdmasnoop overhead, ibv_rc_pingpong 4096 B x $RS_BENCH_ITERS, $RS_BENCH_REPS runs: $mode median $m usec/iter" \
			"($(awk -v m="$m" -v b="$bare" 'BEGIN { printf "%.3f", m / b }') of bare; runs: $(tr '\n' ' ' < "$T/bench.$mode"))"
	done
}

run_test "rdmasnoop --list-probes, and exit 77 without an RDMA device" 60 t_plan
run_test "rdmasnoop: ibv_rc_pingpong over Soft-RoCE, requests, bytes, completions and peers exact" 180 t_rc
run_test "rdmasnoop: ibv_ud_pingpong over Soft-RoCE, sends, receives with their GRH, peers from address handles" 180 t_ud
run_test "rdmasnoop: UD traffic from before its start: each send's peer the QPN alone, counted in peer_unknown" 180 t_ud_late
run_test "topograph --with rdmasnoop: an RC pair's two rdma edges, process to process, bytes and sends exact" 180 t_topo
run_test "rdmasnoop: perftest's ib_send_bw (RC, UC), ib_write_bw, ib_read_bw, ib_atomic_bw (FAA, CAS): each opcode's requests, bytes, completions and their latency exact" 300 t_perftest
run_test "rdmasnoop: its own verbs program: sends and writes with immediate data, a chain past 16, 18 completions a poll, writes with a wrong key failing; every QP's requests, completions and errors by status exact" 180 t_verbs
run_test "rdmasnoop --hold: the first opener of the run held until its provider is probed, its first receives counted, both sides exact" 180 t_hold
if [ "$DEPTH" = default ]; then
	NOT_RUN=$((NOT_RUN + 1))
	echo "# not run at the default depth (a benchmark): rdmasnoop overhead beside a bare ibv_rc_pingpong"
else
	run_test "rdmasnoop overhead beside a bare ibv_rc_pingpong (medians of 5; each traced run's sends exact)" 240 t_overhead
fi
