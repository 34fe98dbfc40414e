#!/usr/bin/env bats
# topograph: the command-line contract; the exact graph of hand-written
# JSON-lines captures (tests/fixtures/topograph/); the live capture through
# stand-in tools; and, end to end, the graph of a known topology
# (tests/helpers/topostages) traced by the real socketsnoop and ipcsnoop;
# and the process lifecycle its own BPF side traces (tests/helpers/lifecycle).

bats_require_minimum_version 1.5.0
load lib

FIX=$BATS_TEST_DIRNAME/fixtures/topograph
TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
NPM_DIR=${AISCOPE_NPM_DIR:-$TOP/build/npm}

teardown() {
	aiscope_teardown
	xhost_teardown
}

# json FILE... -> $BATS_TEST_TMPDIR/g.json (topograph -j), checked by jq
graph_json() {
	"$BIN/topograph" -j "$@" > "$BATS_TEST_TMPDIR/g.json" 2> "$BATS_TEST_TMPDIR/g.err" || {
		cat "$BATS_TEST_TMPDIR/g.err"; return 1; }
	all_json "$BATS_TEST_TMPDIR/g.json"
}

# jg FILTER: jq -r over the graph's lines, slurped
jg() {
	jq -r -s "$1" "$BATS_TEST_TMPDIR/g.json"
}

# ---- contract ----

@test "topograph --help lists its options and ends with examples" {
	run "$BIN/topograph" --help
	[ "$status" -eq 0 ]
	for opt in --pid --tid --cgroup --container --uid --comm --json --dot --mermaid --duration \
		--with --tree --wide --verbose --hot --runq --backlog --list-probes --probe-mode --prometheus --range --html --max-skew \
		--usage --version; do
		[[ "$output" == *"$opt"* ]] || { echo "missing $opt"; false; }
	done
	# its BPF side streams nothing and needs no interval
	for opt in --btf --buffer-size --interval; do
		[[ "$output" != *"$opt"* ]] || { echo "unexpected $opt"; false; }
	done
	[[ "$output" == *EXAMPLES:* ]]
	[[ "$output" == *"Exit status"* ]]
}

@test "topograph --usage and --version" {
	check_usage_version topograph
}

@test "topograph usage errors exit 2 with one line on stderr and nothing on stdout" {
	local f=$FIX/pipeline.jsonl
	local bad=(
		"--bogus" "-p" "-p abc" "-p 0" "-p 1,,2" "-t 0" "--hot 0" "--hot 101" "--hot x"
		"--runq 0" "--runq 5x" "--backlog x" "--backlog 0" "--with foo" "--with schedlat,bar" "--with ,"
		"-j --dot $f" "--dot --mermaid $f" "-d 0" "-d -1"
		"--comm=" "-u no_such_user_here" "/nonexistent/file"
		"$f /nonexistent/file" "-t 1 $f" "-c /tmp $f" "-d 1 $f" "--with schedlat $f" "/tmp"
		"-p 999999999 -d 1" "-c /nonexistent -d 1" "--probe-mode foo" "--probe-mode tp_btf $f"
		"--list-probes $f" "--container abcd -d 1"
		"--prometheus" "--prometheus=" "--prometheus localhost:9090" "--prometheus https://p:9090"
		"--prometheus http://" "--prometheus http://:9090" "--prometheus http://p:0" "--prometheus http://p:70000"
		"--prometheus http://p:9x" "--prometheus http://[::1" "--prometheus http://p/a?b"
		"--prometheus http://p $f" "--prometheus http://p -d 1" "--prometheus http://p --with schedlat"
		"--prometheus http://p --list-probes" "--prometheus http://p --range 0" "--prometheus http://p --range x"
		"--range 1h $f" "--html" "--html= $f" "--html /nonexistent/dir/g.html $f" "--max-skew x $f" "--max-skew=" 
	)
	check_usage_errors topograph "${bad[@]}"
}

# each run bounded in time and memory: on a tool that reads /dev/zero to the
# end, the test fails instead of the machine
# end to end (an ASan build reserves terabytes of address space: time only)
asan_build() {
	grep -q __asan_init "$BIN/topograph" 2>/dev/null
}
bounded() {
	local lim='ulimit -v 1000000;'
	! asan_build || lim=
	run --separate-stderr timeout 20 bash -c "$lim"' exec "$@"' bounded "$@"
}

@test "a FILE that is no capture (/dev/zero, /dev/null, a device) is refused with one line, exit 2; a FIFO is read" {
	local f
	for f in /dev/zero /dev/null /dev/urandom; do
		bounded "$BIN/topograph" -j "$f"
		[ "$status" -eq 2 ] || { echo "$f: exit $status"; false; }
		[ "$stderr" = "topograph: '$f' is not a regular file or a FIFO: expected the --json lines of the tools" ]
		[ -z "$output" ]
	done
	# a FIFO a capture is written into is one (and '-', a pipe)
	mkfifo "$BATS_TEST_TMPDIR/in"
	cat "$FIX/pipeline.jsonl" > "$BATS_TEST_TMPDIR/in" &
	bounded "$BIN/topograph" -j "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | grep -c '"type":"edge"')" -eq 4 ]
	bounded bash -c "cat '$FIX/pipeline.jsonl' | '$BIN/topograph' -j -"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | grep -c '"type":"edge"')" -eq 4 ]
}

@test "a line longer than 1 MiB ends the read with one line, exit 1: stdin from /dev/zero, a file of no newline" {
	bounded bash -c "'$BIN/topograph' < /dev/zero"
	[ "$status" -eq 1 ]
	[ "$stderr" = "topograph: <stdin>:1: a line longer than 1 MiB: not the --json lines of an aiscope tool" ]
	# the lines before it are read; the long one is line 3
	{ head -n 2 "$FIX/pipeline.jsonl"; head -c $((1 << 20)) /dev/zero | tr '\0' x; echo; } \
		> "$BATS_TEST_TMPDIR/long.jsonl"
	bounded "$BIN/topograph" -j "$BATS_TEST_TMPDIR/long.jsonl"
	[ "$status" -eq 1 ]
	[ "$stderr" = "topograph: $BATS_TEST_TMPDIR/long.jsonl:3: a line longer than 1 MiB: not the --json lines of an aiscope tool" ]
	printf '%s\n' "$output" | jq -e '.type == "error" and .exit_code == 1'
	# one byte less is a line (a bad one: skipped and counted)
	{ head -c $(((1 << 20) - 1)) /dev/zero | tr '\0' x; echo; } > "$BATS_TEST_TMPDIR/long.jsonl"
	bounded "$BIN/topograph" -j "$BATS_TEST_TMPDIR/long.jsonl"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" | jq -e 'select(.type == "summary") | .bad_lines == 1 and .lines == 1'
}

@test "sums near 2^64 are held at 2^64 - 1 and said so, never wrapped" {
	local max=18446744073709551615 half=9223372036854775808 in=$BATS_TEST_TMPDIR/big.jsonl
	local side='"src":{"pid":1,"comm":"a"},"dst":{"pid":2,"comm":"b"}'
	{
		echo '{"type":"edge","tool":"socketsnoop","kind":"tcp","channel":"c1",'"$side"',"bytes":'$half',"msgs":'$max',"read_bytes":'$half'}'
		echo '{"type":"edge","tool":"socketsnoop","kind":"tcp","channel":"c1",'"$side"',"bytes":'$half',"msgs":1,"read_bytes":'$half'}'
		echo '{"type":"edge","tool":"socketsnoop","kind":"tcp","channel":"c2",'"$side"',"bytes":'$half',"msgs":1,"read_bytes":0}'
		echo '{"type":"summary","tool":"socketsnoop","lost_events":'$max'}'
		echo '{"type":"summary","tool":"ipcsnoop","lost_events":3}'
	} > "$in"
	run --separate-stderr "$BIN/topograph" -j "$in"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/g.json"
	# jq rounds such numbers: the raw text
	grep '"type":"edge"' "$BATS_TEST_TMPDIR/g.json" | grep -q '"channel":"c1".*"bytes":'$max',"msgs":'$max',"read_bytes":'$max
	grep '"type":"edge"' "$BATS_TEST_TMPDIR/g.json" | grep -q '"channel":"c2".*"bytes":'$half',"msgs":1,"read_bytes":0'
	grep '"type":"summary"' "$BATS_TEST_TMPDIR/g.json" | grep -q '"bytes":'$max',.*"lost_events":'$max','
	grep '"type":"node"' "$BATS_TEST_TMPDIR/g.json" | grep -q '"pid":1,.*"tx_bytes":'$max',"rx_bytes":0'
	# c1's bytes, msgs and read bytes, the total, pid 1's tx, pid 2's rx, the lost events
	[ "$stderr" = "topograph: 7 sums passed 2^64 - 1 and were held at $max: the input's counters are out of range" ]
	# the table says it too
	run --separate-stderr "$BIN/topograph" "$in"
	[ "$status" -eq 0 ]
	[[ "$output" == *"2 nodes, 2 edges, $max bytes"* ]]
	[[ "$stderr" == *"topograph: 7 sums passed 2^64 - 1"* ]]
}

@test "topograph without socketsnoop and ipcsnoop exits 77 naming them" {
	local dir=$BATS_TEST_TMPDIR/alone
	mkdir -p "$dir"
	cp "$BIN/topograph" "$dir/"
	run_exit_77 env PATH=/usr/bin:/bin "$dir/topograph" -d 1
	[[ "$output" == *"socketsnoop, ipcsnoop not found"* ]]
	run env PATH=/usr/bin:/bin "$dir/topograph" -j -d 1 --with schedlat
	[ "$status" -eq 77 ]
	[[ "$output" == *"socketsnoop, ipcsnoop, schedlat not found"* ]]
	echo "$output" | grep '^{' | tail -1 | jq -e '.type == "error" and .exit_code == 77'
}

@test "topograph --with rdmasnoop on a host without an RDMA device exits 77 with rdmasnoop's one line, nothing left running" {
	need_root
	[ -z "$(ls -A /sys/class/infiniband 2>/dev/null)" ] || skip "this host has RDMA devices"
	run --separate-stderr "$BIN/topograph" -d 5 --with rdmasnoop
	echo "$stderr"
	[ "$status" -eq 77 ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "${stderr_lines[0]}" == "topograph: rdmasnoop: no RDMA device on this host "* ]]
	# its children (this build's) are gone with it
	! pgrep -f "^$BIN/(socketsnoop|ipcsnoop|rdmasnoop) --json"
}

# ---- the exact graph of known lines ----

@test "pipeline capture: exactly its nodes and edges, with their bytes" {
	graph_json "$FIX/pipeline.jsonl"
	# the three processes: schedlat's bystander (no edge) is no node
	[ "$(jg '[.[] | select(.type=="node") | "\(.id) \(.kind) \(.pid) \(.comm)"] | join(",")')" = \
		"n1 process 100 producer,n2 process 101 transformer,n3 process 102 consumer" ]
	# edges sorted by bytes, each exact
	[ "$(jg '[.[] | select(.type=="edge") | "\(.id) \(.kind) \(.src.pid)>\(.dst.pid) \(.bytes) \(.msgs) \(.read_bytes) \(.channel)"] | join(",")')" = \
		"e1 fifo 100>101 1048576 256 1048576 /tmp/topo.fifo,e2 tcp 101>102 1048576 128 1048576 127.0.0.1:41000->127.0.0.1:5000,e3 unix 102>100 100 4 100 /tmp/topo.sock,e4 tcp 102>101 8 1 8 127.0.0.1:5000->127.0.0.1:41000" ]
	# a side keeps the keys of docs/edges.md, flows their endpoints
	[ "$(jg '[.[] | select(.id=="e2") | .src.endpoint, .dst.endpoint, (.src | keys | join(" "))] | join(",")')" = \
		"127.0.0.1:41000,127.0.0.1:5000,cgroup cgroup_id comm container_id container_image container_name endpoint host k8s_container pid pod_name pod_namespace pod_uid runtime tid uid" ]
	[ "$(jg '.[] | select(.id=="e1") | .src.endpoint')" = null ]
	# rate over the tools' 2 s capture; share; unread
	[ "$(jg '.[] | select(.id=="e1") | "\(.rate_bytes_per_sec) \(.unread_bytes) \(.source) \(.src_id)>\(.dst_id)"')" = \
		"524288 0 ipcsnoop n1>n2" ]
	[ "$(jg '[.[] | select(.type=="node") | "\(.pid):\(.tx_bytes)/\(.rx_bytes)"] | join(",")')" = \
		"100:1048576/100,101:1048576/1048584,102:108/1048576" ]
	# schedlat: the worst interval's p99, all intervals' wait and runs
	[ "$(jg '.[] | select(.pid==101 and .type=="node") | "\(.runq_p99_ns) \(.runq_wait_ns) \(.runq_runs)"')" = \
		"45000000 500000000 22" ]
	[ "$(jg '.[] | select(.type=="summary") | "\(.nodes) \(.edges) \(.bytes) \(.duration_ns) \(.bad_lines) \(.lost_events) \(.exit_reason)"')" = \
		"3 4 2097260 2000000000 0 0 input" ]
}

@test "pipeline capture: the starved stage and the hot edges are the bottlenecks" {
	graph_json "$FIX/pipeline.jsonl"
	[ "$(jg '[.[] | select(.type=="bottleneck") | "\(.rule) \(.node) \(.edge)"] | join(",")')" = \
		"hot_edge null e1,hot_edge null e2,runq n2 e1" ]
	[ "$(jg '[.[] | select(.type=="node" and (.bottlenecks | length) > 0) | .comm] | join(",")')" = transformer ]
	# the evidence says what made it one
	jg '.[] | select(.rule=="runq") | .evidence' | grep -F '101/transformer waits for a CPU: run-queue p99 45.0 ms (>= 10.0 ms)'
	jg '.[] | select(.rule=="runq") | .evidence' | grep -F 'fifo 100/producer -> 101/transformer (/tmp/topo.fifo), 50.0% of the bytes'
	jg '.[] | select(.edge=="e1" and .rule=="hot_edge") | .evidence' | grep -F 'carries 1048576 of 2097260 bytes (50.0% >= 25%)'
	# thresholds move the verdicts
	graph_json --runq 50ms --hot 60 "$FIX/pipeline.jsonl"
	[ "$(jg '[.[] | select(.type=="bottleneck")] | length')" -eq 0 ]
}

@test "rdmasnoop's capture: its rdma edges between two local processes, both ways" {
	# tests/fixtures/topograph/rdma.jsonl: rdmasnoop -j around two
	# ibv_rc_pingpong (-s 4096 -n 64) over Soft-RoCE, in the x86 6.12 VM
	graph_json "$FIX/rdma.jsonl"
	[ "$(jg '[.[] | select(.type=="node") | "\(.kind) \(.pid) \(.comm)"] | join(",")')" = \
		"process 298 ibv_rc_pingpong,process 300 ibv_rc_pingpong" ]
	[ "$(jg '[.[] | select(.type=="edge") | "\(.kind) \(.src_id)>\(.dst_id) \(.bytes) \(.msgs) \(.channel)"] | join(",")')" = \
		"rdma n1>n2 262144 64 rxe0:1/17->::ffff:10.77.0.1/18,rdma n2>n1 262144 64 rxe0:1/18->::ffff:10.77.0.1/17" ]
}

@test "mixed capture: containers, endpoints, an unseen reader, sums, lag, backlog, NCCL, CUDA" {
	graph_json "$FIX/mixed.jsonl"
	[ "$(jg '[.[] | select(.type=="node") | "\(.id) \(.kind) \(.pid) \(.endpoint // .channel) \(.container_id // "-" | .[0:6])"] | join(",")')" = \
		"n1 process 201 null -,n2 process 202 null -,n3 process 203 null -,n4 unseen null /tmp/orphan.fifo -,n5 process 200 null c0ffee,n6 process 300 null c0ffee,n7 process 301 null c0ffee,n8 endpoint null 10.0.0.9:29500 -" ]
	# the comm with a quote, a backslash, a newline and U+00E9, intact
	[ "$(jg '.[] | select(.type=="node" and .pid==201) | .comm | @json')" = '"we\"ird\\x\né"' ]
	# the same edge in two lines adds up; read_bytes too
	[ "$(jg '.[] | select(.type=="edge" and .kind=="pipe") | "\(.bytes) \(.msgs) \(.read_bytes) \(.unread_bytes)"')" = \
		"3001000 301 1001000 2000000" ]
	# a reader never seen: read_bytes null, no unread figure
	[ "$(jg '.[] | select(.type=="edge" and .kind=="fifo") | "\(.dst_id) \(.read_bytes) \(.unread_bytes)"')" = "n4 null null" ]
	[ "$(jg '[.[] | select(.type=="edge") | "\(.src_id)>\(.dst_id) \(.bytes)"] | join(",")')" = \
		"n5>n8 5000000,n1>n2 3001000,n3>n4 4096,n8>n5 3000,n6>n7 512" ]
	[ "$(jg '.[] | select(.type=="edge" and .kind=="unix") | .readers')" = 1 ]
	# rate over the span of the transfers (no summary line): 4 s
	[ "$(jg '.[] | select(.type=="edge" and .src_id=="n5") | .rate_bytes_per_sec')" = 1250000 ]
	# NCCL: the samples' calls (9 and 4, the event not counted twice) and
	# the op sequence numbers of nclstat's comm row
	[ "$(jg '.[] | select(.type=="node" and .pid==300) | .nccl[0] | "\(.communicator_id) \(.rank) \(.nranks) \(.calls) \(.op_seq) \(.last_op)"')" = \
		"0x9e3779b97f4a7c15 0 2 9 9 allreduce" ]
	[ "$(jg '.[] | select(.type=="node" and .pid==300) | .cuda_launches')" = 250 ]
	[ "$(jg '[.[] | select(.type=="bottleneck") | "\(.rule) \(.node) \(.edge) \(.value)"] | join(",")')" = \
		"hot_edge null e1 62.4,hot_edge null e2 37.5,nccl_lag n7 null 5,reader_behind n2 e2 2000000" ]
	jg '.[] | select(.rule=="nccl_lag") | .evidence' |
		grep -F 'rank 1 (301/rank1) of communicator 0x9e3779b97f4a7c15 lags: op sequence 4 against 9 of rank 0 (300/rank0); its last op allgather'
	jg '.[] | select(.rule=="reader_behind") | .evidence' |
		grep -F '3001000 bytes written, 1001000 read: the backlog grew by 2000000 bytes'
	# bad lines: skipped, counted, named on stderr; lost events reported
	[ "$(jg '.[] | select(.type=="summary") | "\(.bad_lines) \(.lost_events) \(.lines)"')" = "2 7 16" ]
	grep -F 'mixed.jsonl:4: skipped' "$BATS_TEST_TMPDIR/g.err"
	grep -F 'mixed.jsonl:8: skipped: not an aiscope record' "$BATS_TEST_TMPDIR/g.err"
}

@test "NCCL without nclstat's comm rows: the calls of each rank" {
	grep -v '"row":"comm"' "$FIX/mixed.jsonl" > "$BATS_TEST_TMPDIR/nocomm.jsonl"
	graph_json "$BATS_TEST_TMPDIR/nocomm.jsonl"
	[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="nccl_lag") | "\(.node) \(.value)"] | join(",")')" = "n7 5" ]
	jg '.[] | select(.rule=="nccl_lag") | .evidence' |
		grep -F 'lags: calls 4 against 9 of rank 0 (300/rank0); its last op allreduce'
	# 2 calls behind lags, 1 does not
	sed -e '/"pid":301/s/"calls":4/"calls":7/' "$BATS_TEST_TMPDIR/nocomm.jsonl" > "$BATS_TEST_TMPDIR/n7.jsonl"
	graph_json "$BATS_TEST_TMPDIR/n7.jsonl"
	[ "$(jg '[.[] | select(.rule=="nccl_lag") | .value] | join(",")')" = 2 ]
	sed -e '/"pid":301/s/"calls":4/"calls":8/' "$BATS_TEST_TMPDIR/nocomm.jsonl" > "$BATS_TEST_TMPDIR/n8.jsonl"
	graph_json "$BATS_TEST_TMPDIR/n8.jsonl"
	[ "$(jg '[.[] | select(.rule=="nccl_lag")] | length')" -eq 0 ]
}

@test "stdin, '-' and several files give the same graph; captures add up" {
	local a b
	graph_json "$FIX/pipeline.jsonl"
	a=$(jq -c 'del(.ts)' "$BATS_TEST_TMPDIR/g.json")
	b=$("$BIN/topograph" -j < "$FIX/pipeline.jsonl" | jq -c 'del(.ts)')
	[ "$a" = "$b" ]
	b=$(cat "$FIX/pipeline.jsonl" | "$BIN/topograph" -j - | jq -c 'del(.ts)')
	[ "$a" = "$b" ]
	# two captures of the same processes: every edge counts twice
	graph_json "$FIX/pipeline.jsonl" - < "$FIX/pipeline.jsonl"
	[ "$(jg '[.[] | select(.type=="edge") | "\(.bytes) \(.msgs)"] | join(",")')" = \
		"2097152 512,2097152 256,200 8,16 2" ]
	# topograph's own lines read back give the same graph
	"$BIN/topograph" -j "$FIX/mixed.jsonl" 2>/dev/null > "$BATS_TEST_TMPDIR/own.jsonl"
	a=$(grep -v '"type":"summary"' "$BATS_TEST_TMPDIR/own.jsonl" | jq -c 'del(.ts)')
	b=$("$BIN/topograph" -j "$BATS_TEST_TMPDIR/own.jsonl" | grep -v '"type":"summary"' | jq -c 'del(.ts)')
	[ "$a" = "$b" ]
}

@test "reading a pipe: Ctrl-C reads on to the end, a second one stops with the graph so far" {
	local w in=$BATS_TEST_TMPDIR/in
	mkfifo "$in"
	# the first SIGINT is the one a terminal sends the whole pipeline: the
	# tool before topograph prints its edges, then ends
	start_bg pipe "$BIN/topograph" -j "$in"
	exec {w}>"$in"
	head -n 9 "$FIX/pipeline.jsonl" >&$w
	sleep 0.3
	kill -INT "$BG_PID"
	sleep 0.3
	tail -n +10 "$FIX/pipeline.jsonl" >&$w
	exec {w}>&-
	wait "$BG_PID"
	cp "$BATS_TEST_TMPDIR/pipe.out" "$BATS_TEST_TMPDIR/g.json"
	all_json "$BATS_TEST_TMPDIR/g.json"
	[ "$(jg '[.[] | select(.type=="edge")] | length')" -eq 4 ]
	[ "$(jg '.[] | select(.type=="summary") | .exit_reason')" = input ]
	# a second one: the graph of the lines read so far (one edge), exit 0
	start_bg pipe2 "$BIN/topograph" -j "$in"
	exec {w}>"$in"
	head -n 9 "$FIX/pipeline.jsonl" >&$w
	sleep 0.3
	kill -INT "$BG_PID"
	sleep 0.2
	kill -INT "$BG_PID"
	wait "$BG_PID"
	exec {w}>&-
	cp "$BATS_TEST_TMPDIR/pipe2.out" "$BATS_TEST_TMPDIR/g.json"
	all_json "$BATS_TEST_TMPDIR/g.json"
	[ "$(jg '[.[] | select(.type=="edge") | .channel] | join(",")')" = "127.0.0.1:41000->127.0.0.1:5000" ]
	[ "$(jg '.[] | select(.type=="summary") | .exit_reason')" = signal ]
}

@test "filters on files keep the edges with a matching end" {
	graph_json -p 202 "$FIX/mixed.jsonl"
	[ "$(jg '[.[] | select(.type=="edge") | .channel] | join(",")')" = "pipe:[12345]" ]
	[ "$(jg '.[] | select(.type=="summary") | .filtered_edges')" = 4 ]
	graph_json --container c0ffee "$FIX/mixed.jsonl"
	[ "$(jg '[.[] | select(.type=="edge") | "\(.src_id)>\(.dst_id)"] | join(",")')" = "n1>n4,n4>n1,n2>n3" ]
	graph_json --comm trainer -u 0 "$FIX/mixed.jsonl"
	[ "$(jg '[.[] | select(.type=="edge") | .bytes] | join(",")')" = "5000000,3000" ]
	graph_json --comm nobody-here "$FIX/mixed.jsonl"
	[ "$(jg '[.[] | select(.type=="edge")] | length')" -eq 0 ]
}

# ---- the views ----

@test "-p takes as many pids as every tool (1024), not 64" {
	local many
	many=$(seq -s, 1000 1068),202
	graph_json -p "$many" "$FIX/mixed.jsonl"
	[ "$(jg '[.[] | select(.type=="edge") | .channel] | join(",")')" = "pipe:[12345]" ]
	run "$BIN/topograph" -p "$(seq -s, 1 1025)" "$FIX/mixed.jsonl"
	[ "$status" -eq 2 ]
	[[ "$output" == "topograph: too many pids (at most 1024): "* ]]
}

@test "terminal view: nodes grouped by container, edges by bytes, bottlenecks with evidence" {
	run "$BIN/topograph" "$FIX/mixed.jsonl"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/t.txt"
	[ "$(grep -E '^\[' "$BATS_TEST_TMPDIR/t.txt" | tr '\n' ' ')" = \
		"[host] [container c0ffee012345] [external] " ]
	# BYTES (4th column of EDGES) in decreasing order
	awk '/^EDGES/ { on = 1; getline; next } /^$/ { on = 0 } on { print $4 }' "$BATS_TEST_TMPDIR/t.txt" \
		> "$BATS_TEST_TMPDIR/bytes"
	[ "$(tr '\n' ' ' < "$BATS_TEST_TMPDIR/bytes")" = "5000000 3001000 4096 3000 512 " ]
	grep -E '^  reader behind .*202/slowreader' "$BATS_TEST_TMPDIR/t.txt"
	grep -E '^  NCCL lag +rank 1 \(301/rank1\)' "$BATS_TEST_TMPDIR/t.txt"
	# the newline in a comm cannot break a line
	grep -F '201/we"ird\x?é' "$BATS_TEST_TMPDIR/t.txt"
	! grep -q '^é' "$BATS_TEST_TMPDIR/t.txt" || false
	grep -F 'no run-queue data' "$BATS_TEST_TMPDIR/t.txt"
	# an empty capture says so
	run "$BIN/topograph" < /dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"no edges"* ]]
}

@test "an ASan and UBSan build (CFLAGS=-fsanitize=address,undefined) reports no leak and no undefined behaviour at exit" {
	asan_build || skip "$BIN/topograph is not built with -fsanitize=address"
	local in o
	# every rule's evidence, and an empty graph (no edge to sort)
	for in in "$FIX/mixed.jsonl" "$FIX/pipeline.jsonl" /dev/null; do
		for o in "" -j --dot --mermaid --tree; do
			run --separate-stderr env ASAN_OPTIONS=detect_leaks=1 \
				UBSAN_OPTIONS=print_stacktrace=1 "$BIN/topograph" $o < "$in"
			[ "$status" -eq 0 ] || { echo "$o < $in: $stderr"; false; }
			[[ "$stderr" != *"runtime error"* && "$stderr" != *Sanitizer* ]] ||
				{ echo "$o < $in: $stderr"; false; }
		done
	done
}

@test "--dot: dot -Tsvg accepts it; width by bytes, colour by kind, clusters" {
	command -v dot > /dev/null || skip "graphviz (dot) is not installed"
	local f
	for f in pipeline mixed; do
		"$BIN/topograph" --dot "$FIX/$f.jsonl" > "$BATS_TEST_TMPDIR/$f.dot" 2>/dev/null
		dot -Tsvg "$BATS_TEST_TMPDIR/$f.dot" > "$BATS_TEST_TMPDIR/$f.svg" 2> "$BATS_TEST_TMPDIR/dot.err"
		[ ! -s "$BATS_TEST_TMPDIR/dot.err" ] || { cat "$BATS_TEST_TMPDIR/dot.err"; false; }
		grep -q '<svg' "$BATS_TEST_TMPDIR/$f.svg"
	done
	f=$BATS_TEST_TMPDIR/mixed.dot
	grep -F 'n5 -> n8 [label="tcp 4.8 MiB"' "$f" | grep -F 'color="#1f77b4", penwidth=8.00'
	grep -F 'n1 -> n2 [label="pipe 2.9 MiB"' "$f" | grep -F 'color="#2ca02c", penwidth=5.20'
	grep -F 'n6 -> n7 [label="unix 512 B"' "$f" | grep -F 'color="#ff7f0e", penwidth=1.00'
	grep -F 'subgraph cluster_1' "$f"
	grep -F 'n1 [label="201 we\"ird\\x?é"]' "$f"
	# the flagged nodes are outlined
	grep -F 'n2 [label="202 slowreader", color="#d62728"' "$f"
	# the svg has every node and edge
	[ "$(grep -c 'class="node"' "$BATS_TEST_TMPDIR/mixed.svg")" -eq 8 ]
	[ "$(grep -c 'class="edge"' "$BATS_TEST_TMPDIR/mixed.svg")" -eq 5 ]
}

# hostile names for the Mermaid and DOT writers
hostile_capture() {
	local comm
	for comm in 'a"b' '<b>x</b>' '#1;&amp' 'end' 'x|y-->z' "semi;colon" 'back\slash' "tab	t"; do
		jq -cn --arg c "$comm" '{type:"edge",tool:"ipcsnoop",ts:"2026-11-29T11:00:00Z",kind:"unix",
			channel:("@" + $c), src:{pid:7,comm:$c}, dst:{pid:8,comm:("r" + $c)}, bytes:10,
			msgs:1, read_bytes:10, first_ts:null, last_ts:null}'
	done
	# raw bytes that are not UTF-8 (a reader of the JSON may pass them on)
	printf '{"type":"edge","tool":"ipcsnoop","kind":"pipe","channel":"pipe:[9]","src":{"pid":9,"comm":"bad\xff\xc3("},"dst":{"pid":10,"comm":"\xed\xa0\x80x"},"bytes":5,"msgs":1,"read_bytes":5}\n'
}

@test "--mermaid: the text passes a strict grammar check, hostile names too" {
	local f
	hostile_capture > "$BATS_TEST_TMPDIR/hostile.jsonl"
	for f in "$FIX/pipeline.jsonl" "$FIX/mixed.jsonl" "$BATS_TEST_TMPDIR/hostile.jsonl"; do
		"$BIN/topograph" --mermaid "$f" > "$BATS_TEST_TMPDIR/m.mmd"
		awk -f "$BATS_TEST_DIRNAME/helpers/mermaid-check.awk" "$BATS_TEST_TMPDIR/m.mmd"
	done
	# the checker itself rejects what Mermaid rejects
	printf 'flowchart LR\n  n1["a"b"]\n' > "$BATS_TEST_TMPDIR/bad.mmd"
	run awk -f "$BATS_TEST_DIRNAME/helpers/mermaid-check.awk" "$BATS_TEST_TMPDIR/bad.mmd"
	[ "$status" -eq 1 ]
	printf 'flowchart LR\n  n1["a"]\n  n1 -->|"x"| n2\n' > "$BATS_TEST_TMPDIR/bad.mmd"
	run awk -f "$BATS_TEST_DIRNAME/helpers/mermaid-check.awk" "$BATS_TEST_TMPDIR/bad.mmd"
	[ "$status" -eq 1 ]
	"$BIN/topograph" --mermaid "$FIX/mixed.jsonl" > "$BATS_TEST_TMPDIR/m.mmd"
	grep -F 'n1["201 we#quot;ird\x?é"]' "$BATS_TEST_TMPDIR/m.mmd"
	grep -F '  subgraph c1["container c0ffee' "$BATS_TEST_TMPDIR/m.mmd"
	grep -Fx '  n5 -->|"tcp 4.8 MiB"| n8' "$BATS_TEST_TMPDIR/m.mmd"
	grep -Fx '  linkStyle 0 stroke:#1f77b4,stroke-width:8.0px' "$BATS_TEST_TMPDIR/m.mmd"
	grep -Fx '  class n2 bottleneck' "$BATS_TEST_TMPDIR/m.mmd"
}

@test "--mermaid: Mermaid's own parser accepts it (npm mermaid under jsdom)" {
	command -v node > /dev/null || skip "node is not installed"
	[ -d "$NPM_DIR/node_modules/mermaid" ] && [ -d "$NPM_DIR/node_modules/jsdom" ] ||
		skip "mermaid and jsdom are not in $NPM_DIR (scripts/deps.sh installs them when npm is there)"
	local f
	hostile_capture > "$BATS_TEST_TMPDIR/hostile.jsonl"
	for f in "$FIX/pipeline.jsonl" "$FIX/mixed.jsonl" "$BATS_TEST_TMPDIR/hostile.jsonl"; do
		"$BIN/topograph" --mermaid "$f" > "$BATS_TEST_TMPDIR/m.mmd"
		run node "$BATS_TEST_DIRNAME/helpers/mermaid-parse.mjs" "$NPM_DIR" "$BATS_TEST_TMPDIR/m.mmd"
		[ "$status" -eq 0 ] || { echo "$output"; cat "$BATS_TEST_TMPDIR/m.mmd"; false; }
		[ "$output" = "parsed: flowchart-v2" ]
	done
	printf 'flowchart LR\n  n1["a"b"]\n' > "$BATS_TEST_TMPDIR/bad.mmd"
	run node "$BATS_TEST_DIRNAME/helpers/mermaid-parse.mjs" "$NPM_DIR" "$BATS_TEST_TMPDIR/bad.mmd"
	[ "$status" -eq 1 ]
}

@test "hostile names give valid JSON and DOT" {
	hostile_capture > "$BATS_TEST_TMPDIR/hostile.jsonl"
	graph_json "$BATS_TEST_TMPDIR/hostile.jsonl"
	[ "$(jg '[.[] | select(.type=="edge")] | length')" -eq 9 ]
	# invalid UTF-8 comes out as U+FFFD in JSON, '?' in DOT and Mermaid
	[ "$(jg '.[] | select(.type=="node" and .pid==9) | .comm')" = "bad$(printf '\xef\xbf\xbd\xef\xbf\xbd')(" ]
	"$BIN/topograph" --mermaid "$BATS_TEST_TMPDIR/hostile.jsonl" | grep -F '["9 bad??("]'
	"$BIN/topograph" --dot "$BATS_TEST_TMPDIR/hostile.jsonl" | grep -F '[label="10 ???x"]'
	# the latest name of a process wins
	[ "$(jg '.[] | select(.type=="node" and .pid==7) | .comm')" = "tab	t" ]
	[ "$(jg '[.[] | select(.type=="edge" and .src.pid==7) | .src.comm] | unique | length')" -eq 1 ]
	command -v dot > /dev/null || skip "graphviz (dot) is not installed"
	"$BIN/topograph" --dot "$BATS_TEST_TMPDIR/hostile.jsonl" | dot -Tsvg > /dev/null 2> "$BATS_TEST_TMPDIR/dot.err"
	[ ! -s "$BATS_TEST_TMPDIR/dot.err" ] || { cat "$BATS_TEST_TMPDIR/dot.err"; false; }
}

# html_check PAGE: what the page holds (helpers/html-check.py) against the
# graph of g.json: every node and edge, by id, with its pid, ends, kind,
# channel and bytes; no script, nothing loaded from elsewhere
html_check() {
	python3 "$BATS_TEST_DIRNAME/helpers/html-check.py" "$1" > "$BATS_TEST_TMPDIR/h.json"
	jq -e -s '.[0] as $h | .[1:] as $g |
		$h.scripts == 0 and $h.external == [] and
		([$h.nodes[] | {id, pid}] | sort) ==
			([$g[] | select(.type == "node") | {id, pid: (if .kind == "process" then .pid else null end)}] | sort) and
		([$h.edges[] | {src, dst, kind, bytes, channel}] | sort) ==
			([$g[] | select(.type == "edge") | {src: .src_id, dst: .dst_id, kind, bytes, channel}] | sort) and
		all($h.nodes[]; .title | length > 0) and all($h.edges[]; .title | length > 0)' \
		"$BATS_TEST_TMPDIR/h.json" "$BATS_TEST_TMPDIR/g.json" ||
		{ jq -c . "$BATS_TEST_TMPDIR/h.json" | head -c 3000; false; }
}

@test "--html FILE: one self-contained page, every node and edge of the graph, hostile names inert; headless Chromium draws it" {
	command -v python3 > /dev/null || skip "python3 is not installed"
	local page=$BATS_TEST_TMPDIR/g.html f chrome=
	hostile_capture > "$BATS_TEST_TMPDIR/hostile.jsonl"
	for f in "$FIX/pipeline.jsonl" "$FIX/mixed.jsonl" "$BATS_TEST_TMPDIR/hostile.jsonl"; do
		graph_json --html "$page" "$f"
		html_check "$page"
		# the names are text: no element but the page's own
		jq -e '.elements | keys - ["body", "defs", "g", "h1", "h2", "head", "html", "li", "marker",
			"meta", "p", "path", "rect", "style", "svg", "table", "td", "text", "th", "title", "tr",
			"ul", "b"] == []' "$BATS_TEST_TMPDIR/h.json"
	done
	# the page's title and summary give the graph's size
	graph_json --html "$page" "$FIX/pipeline.jsonl"
	grep -F "<title>topograph: $(jg '.[] | select(.type=="summary") | "\(.nodes) nodes, \(.edges) edges"')</title>" "$page"
	for f in chromium-headless-shell chromium; do
		command -v "$f" > /dev/null && { chrome=$f; break; }
	done
	[ -n "$chrome" ] || skip "no headless Chromium (chromium-headless-shell)"
	# the DOM Chromium builds from the page: the same nodes and edges
	timeout 60 "$chrome" --headless --no-sandbox --disable-gpu --dump-dom "file://$page" \
		> "$BATS_TEST_TMPDIR/dom.html" 2> "$BATS_TEST_TMPDIR/chrome.err" ||
		{ cat "$BATS_TEST_TMPDIR/chrome.err"; false; }
	html_check "$BATS_TEST_TMPDIR/dom.html"
	# drawn: its screenshot holds far more than an empty page's
	printf '<!DOCTYPE html><html><body></body></html>\n' > "$BATS_TEST_TMPDIR/blank.html"
	for f in g blank; do
		timeout 60 "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,800 \
			--screenshot="$BATS_TEST_TMPDIR/$f.png" "file://$BATS_TEST_TMPDIR/$f.html" 2> "$BATS_TEST_TMPDIR/chrome.err" ||
			{ cat "$BATS_TEST_TMPDIR/chrome.err"; false; }
		[ -s "$BATS_TEST_TMPDIR/$f.png" ]
	done
	echo "screenshots: graph $(stat -c %s "$BATS_TEST_TMPDIR/g.png") bytes, empty page $(stat -c %s "$BATS_TEST_TMPDIR/blank.png")"
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/g.png")" -gt $((4 * $(stat -c %s "$BATS_TEST_TMPDIR/blank.png"))) ]
}

@test "a closed pipe ends topograph quietly with 0" {
	# 3000 edges, the fixture's first with its source pid 101 made 1001..4000:
	# thousands of output lines, of which head reads one
	EDGE=$(grep -m 1 '"type":"edge"' "$FIX/pipeline.jsonl") awk 'BEGIN {
		for (i = 1; i <= 3000; i++) {
			l = ENVIRON["EDGE"]
			sub(/"pid":101,/, "\"pid\":" (i + 1000) ",", l)
			print l
		}
	}' > "$BATS_TEST_TMPDIR/big.jsonl"
	[ "$(grep -c '"pid":1001,' "$BATS_TEST_TMPDIR/big.jsonl")" -eq 1 ]
	[ "$(sort -u "$BATS_TEST_TMPDIR/big.jsonl" | wc -l)" -eq 3000 ]
	# its whole output is far more than a pipe holds: head's close is felt
	[ "$("$BIN/topograph" -j "$BATS_TEST_TMPDIR/big.jsonl" | wc -c)" -gt $((16 * 65536)) ]
	run bash -o pipefail -c "'$BIN/topograph' -j '$BATS_TEST_TMPDIR/big.jsonl' | head -1 > /dev/null"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

# ---- live capture, with stand-ins for the tools ----

# stub NAME: a stand-in tool in $STUBS that records its arguments, says
# "Tracing" and prints LINES_<NAME> (a file), then waits for SIGINT or ends
# after --duration; STUB_FAIL=NAME makes that one fail with a usage error
make_stubs() {
	STUBS=$BATS_TEST_TMPDIR/stubs
	mkdir -p "$STUBS"
	cp "$BIN/topograph" "$STUBS/"
	local t
	for t in socketsnoop ipcsnoop schedlat; do
		cat > "$STUBS/$t" <<-EOF
		#!/bin/bash
		echo "\$*" > "$STUBS/$t.args"
		if [ "\${STUB_FAIL:-}" = $t ] || [ "\${STUB_FAIL:-}" = all ]; then
			echo "$t: no such container 'abcd'" >&2
			exit 2
		fi
		# its own pipe to topograph, as ipcsnoop would see it: left out
		self='{"type":"edge","tool":"$t","kind":"pipe","channel":"pipe:[1]","src":{"pid":'\$\$',"comm":"$t"},"dst":{"pid":'\$PPID',"comm":"topograph"},"bytes":99,"msgs":1,"read_bytes":99}'
		trap 'grep -v "^#" "$STUBS/$t.lines" 2>/dev/null; echo "\$self"; exit 0' INT TERM
		echo "Tracing $t... Ctrl-C to end." >&2
		echo "$t: a warning after tracing" >&2
		if [[ " \$* " == *" --duration "* ]]; then
			sleep "\${STUB_SLEEP:-0.2}" & wait \$!
			grep -v "^#" "$STUBS/$t.lines" 2>/dev/null
			echo "\$self"
			exit 0
		fi
		while :; do sleep 0.05; done
		EOF
		chmod +x "$STUBS/$t"
	done
	grep '"tool":"socketsnoop"' "$FIX/pipeline.jsonl" > "$STUBS/socketsnoop.lines"
	grep '"tool":"ipcsnoop"' "$FIX/pipeline.jsonl" > "$STUBS/ipcsnoop.lines"
	grep '"tool":"schedlat"' "$FIX/pipeline.jsonl" > "$STUBS/schedlat.lines"
}

@test "live: runs the tools next to its binary with --json, -d and the filters" {
	need_root
	make_stubs
	# the filters are its BPF side's too: the container must exist
	make_docker_cgroup
	run --separate-stderr env PATH=/usr/bin:/bin "$STUBS/topograph" -j -d 1 -p $$ --comm x \
		-u 0 --container "${CID:0:12}" --with schedlat
	[ "$status" -eq 0 ] || { echo "$stderr"; false; }
	for t in socketsnoop ipcsnoop schedlat; do
		[ "$(cat "$STUBS/$t.args")" = "--json --duration 1 --pid $$ --container ${CID:0:12} --uid 0 --comm x" ]
	done
	printf '%s\n' "$output" > "$BATS_TEST_TMPDIR/g.json"
	all_json "$BATS_TEST_TMPDIR/g.json"
	# the graph of the fixture, run-queue data included
	[ "$(jg '[.[] | select(.type=="edge") | "\(.kind) \(.src.pid)>\(.dst.pid) \(.bytes)"] | join(",")')" = \
		"fifo 100>101 1048576,tcp 101>102 1048576,unix 102>100 100,tcp 102>101 8" ]
	[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="runq") | .node] | join(",")')" = n2 ]
	[ "$(jg '.[] | select(.type=="summary") | "\(.exit_reason) \(.sources | keys | join(" ")) \(.filtered_edges)"')" = \
		"duration ipcsnoop schedlat socketsnoop 3" ]
	# one line says all are tracing; the tools' later warnings pass through
	[[ "$stderr" == *"Tracing the communication graph with socketsnoop, ipcsnoop, schedlat for 1."* ]]
	[[ "$stderr" == *"socketsnoop: a warning after tracing"* ]]
}

@test "live: the tools are found in PATH too" {
	make_stubs
	mkdir -p "$BATS_TEST_TMPDIR/bin2"
	mv "$STUBS/topograph" "$BATS_TEST_TMPDIR/bin2/"
	run --separate-stderr env PATH="$STUBS:/usr/bin:/bin" "$BATS_TEST_TMPDIR/bin2/topograph" -j -d 1 -v
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | grep -c '"type":"edge"')" -eq 4 ]
	# -v: the commands, and the tools' own lines
	[[ "$stderr" == *"topograph: running $STUBS/socketsnoop --json --duration 1"* ]]
	[[ "$stderr" == *"Tracing ipcsnoop... Ctrl-C to end."* ]]
}

@test "live: Ctrl-C (SIGINT) stops the tools, which print their edges: graph, exit 0" {
	make_stubs
	# the stubs run until signalled (STUB_SLEEP=60: by default they end
	# 0.2 s after their "Tracing" line, and a Ctrl-C that came after that
	# found the capture over, topograph's signals unblocked: killed, 130)
	start_bg live env STUB_SLEEP=60 PATH=/usr/bin:/bin "$STUBS/topograph" -j -d 60s
	# without -d, stdin decides; with it, a live capture until Ctrl-C
	wait_for "$BATS_TEST_TMPDIR/live.err" 'Tracing the communication graph'
	stop_tool "$BG_PID" INT
	all_json "$BATS_TEST_TMPDIR/live.out"
	[ "$(grep -c '"type":"edge"' "$BATS_TEST_TMPDIR/live.out")" -eq 4 ]
	jq -e 'select(.type=="summary") | .exit_reason == "signal"' "$BATS_TEST_TMPDIR/live.out"
}

@test "live: a closed stdout (EPIPE) ends the capture at once, and the tools with it" {
	need_root
	make_stubs
	local start end
	start=$(date +%s%N)
	# the tools would run 30 s; the reader of topograph's output is gone at once
	run timeout 20 bash -o pipefail -c \
		"env STUB_SLEEP=30 PATH=/usr/bin:/bin '$STUBS/topograph' -j -d 29s 2>/dev/null | true"
	end=$(date +%s%N)
	[ "$status" -eq 0 ]
	[ $(((end - start) / 1000000)) -lt 5000 ]
	! pgrep -f "$STUBS/topograph -j -d 29s" > /dev/null || false
	sleep 0.5
	! pgrep -f "$STUBS/socketsnoop --json --duration 29s" > /dev/null || false
	! pgrep -f "$STUBS/ipcsnoop --json --duration 29s" > /dev/null || false
}

@test "live: a tool that cannot run gives its one line and its exit code" {
	make_stubs
	# both fail alike: the line of the first to fail is printed, once
	run env STUB_FAIL=all PATH=/usr/bin:/bin "$STUBS/topograph" -d 1
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" =~ ^topograph:\ (socketsnoop|ipcsnoop):\ no\ such\ container\ \'abcd\'$ ]]
	# one fails: the other is stopped quietly
	run env STUB_FAIL=ipcsnoop STUB_SLEEP=30 PATH=/usr/bin:/bin timeout 20 "$STUBS/topograph" -j -d 30
	[ "$status" -eq 2 ]
	[[ "$output" == *"topograph: ipcsnoop: no such container 'abcd'"* ]]
	echo "$output" | grep '^{' | tail -1 | jq -e '.type == "error" and .exit_code == 2'
}

@test "across hosts: two halves of a flow seen further apart in time than --max-skew are never joined; the graph is marked partial" {
	local out
	# one flow a->b, its halves at given times on each host
	half() {	# HOST FIRST LAST
		if [ "$1" = a ]; then
			printf '{"type":"edge","tool":"socketsnoop","host":"h-a","kind":"tcp","channel":"10.0.0.1:40000->10.0.0.2:29500","src":{"pid":101,"comm":"rank","endpoint":"10.0.0.1:40000"},"dst":{"pid":null,"endpoint":"10.0.0.2:29500"},"bytes":4096,"msgs":2,"read_bytes":null,"first_ts":"%s","last_ts":"%s"}\n' "$2" "$3"
		else
			printf '{"type":"edge","tool":"socketsnoop","host":"h-b","kind":"tcp","channel":"10.0.0.1:40000->10.0.0.2:29500","src":{"pid":null,"endpoint":"10.0.0.1:40000"},"dst":{"pid":100,"comm":"rank","endpoint":"10.0.0.2:29500"},"bytes":4096,"msgs":3,"read_bytes":4096,"first_ts":"%s","last_ts":"%s"}\n' "$2" "$3"
		fi
	}
	# b's clock 3 s ahead: one flow, joined
	{ half a 2026-12-01T10:00:00Z 2026-12-01T10:00:01Z; half b 2026-12-01T10:00:03Z 2026-12-01T10:00:04Z; } > "$BATS_TEST_TMPDIR/skew.jsonl"
	graph_json "$BATS_TEST_TMPDIR/skew.jsonl"
	[ "$(jg '.[] | select(.type=="summary") | "\(.edges) \(.joined_flows) \(.unjoined_time_flows) \(.partial)"')" = "1 1 0 false" ]
	# captures an hour apart (the port used again): two halves, not one edge
	{ half a 2026-12-01T10:00:00Z 2026-12-01T10:00:01Z; half b 2026-12-01T11:00:00Z 2026-12-01T11:00:01Z; } > "$BATS_TEST_TMPDIR/apart.jsonl"
	graph_json "$BATS_TEST_TMPDIR/apart.jsonl"
	[ "$(jg '.[] | select(.type=="summary") | "\(.edges) \(.joined_flows) \(.unjoined_time_flows) \(.partial)"')" = "2 0 1 true" ]
	[ "$(jg '[.[] | select(.type=="edge") | "\(.src.host)/\(.src.pid // .src.endpoint)>\(.dst.host)/\(.dst.pid // .dst.endpoint)"] | join(",")')" = \
		"h-a/101>null/10.0.0.2:29500,null/10.0.0.1:40000>h-b/100" ]
	grep -Fx 'topograph: a partial graph: 1 flows not joined across hosts, their two hosts saw them more than 10s apart (captures of different moments, or clocks further apart than --max-skew)' "$BATS_TEST_TMPDIR/g.err"
	# the clocks said to differ by up to 2 h: joined again; 1 s: b's 3 s ahead is too far
	graph_json --max-skew 2h "$BATS_TEST_TMPDIR/apart.jsonl"
	[ "$(jg '.[] | select(.type=="summary") | "\(.edges) \(.joined_flows) \(.partial)"')" = "1 1 false" ]
	graph_json --max-skew 1s "$BATS_TEST_TMPDIR/skew.jsonl"
	[ "$(jg '.[] | select(.type=="summary") | "\(.edges) \(.joined_flows) \(.unjoined_time_flows)"')" = "2 0 1" ]
	grep -F 'more than 1s apart' "$BATS_TEST_TMPDIR/g.err"
	run "$BIN/topograph" --max-skew x "$BATS_TEST_TMPDIR/skew.jsonl"
	[ "$status" -eq 2 ] && [ "$output" = "topograph: invalid --max-skew 'x': expected a duration such as 500ms or 10s" ]
}

@test "--prometheus: a server that answers garbage, an HTTP error or the API's own error: one line each, exit 1, no graph" {
	command -v python3 > /dev/null || skip "python3 is not installed"
	local d=$BATS_TEST_TMPDIR/www
	mkdir -p "$d/ok/api/v1" "$d/err/api/v1" "$d/bad/api/v1"
	# a web server's files: /PREFIX/api/v1/query answers what the file holds
	printf 'not json at all\n' > "$d/bad/api/v1/query"
	printf '{"status":"error","errorType":"bad_data","error":"parse error at char 5: unexpected end of input"}\n' > "$d/err/api/v1/query"
	start_server www / 30 python3 -m http.server --bind 127.0.0.1 --directory "$d" '{PORT}'
	run --separate-stderr "$BIN/topograph" -j --prometheus "http://127.0.0.1:$SERVER_PORT/bad"
	echo "$output $stderr"
	[ "$status" -eq 1 ] && [ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "topograph: Prometheus at 127.0.0.1:$SERVER_PORT answered HTTP 200, not its API's JSON: "* ]]
	# with -j, the error record alone on stdout
	[ "$(jq -r '"\(.type) \(.exit_code)"' <<< "$output")" = "error 1" ]
	run "$BIN/topograph" --prometheus "http://127.0.0.1:$SERVER_PORT/err"
	echo "$output"
	[ "$status" -eq 1 ] && [ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "topograph: Prometheus at 127.0.0.1:$SERVER_PORT refused the query last_over_time("*"): HTTP 200, parse error at char 5: unexpected end of input" ]]
	# no such path: the server's 404 page is no API answer either
	run "$BIN/topograph" --prometheus "http://127.0.0.1:$SERVER_PORT/none"
	echo "$output"
	[ "$status" -eq 1 ] && [[ "$output" == *"answered HTTP 404, not its API's JSON"* ]]
}

# ---- end to end: nclstat's own records of a lagging rank ----

@test "end to end: nclstat's capture of the NCCL test double: the lagging rank is flagged" {
	need_root
	local nccl=$BIN/tests/nccl r p out=$BATS_TEST_TMPDIR/ncl.jsonl
	[ -x "$BIN/nclstat" ] && [ -x "$nccl/ncclrank" ] && [ -e "$nccl/libnccl.so.2" ] ||
		skip "needs nclstat and its NCCL test double (tests/nccl) in $BIN"
	start_tool ncl nclstat -j -i 300ms --lib "$nccl/libnccl.so.2"
	local ncl_pid=$TOOL_PID
	# four ranks; rank 1 stops after its first iteration, the others hold
	start_bg ranks env LD_LIBRARY_PATH="$nccl" "$nccl/ncclrank" run -r 4 -i 4 -l 1:1 -b
	wait_for "$BATS_TEST_TMPDIR/ranks.out" '^lagging 1 ' 30
	wait_for "$BATS_TEST_TMPDIR/ranks.out" '^holding 3 ' 30
	sleep 1		# an interval that sees every rank where it stopped
	stop_tool "$ncl_pid" INT
	cp "$BATS_TEST_TMPDIR/ncl.out" "$out"
	# the ranks' pids, and a ring of unix edges between them (the test
	# double has no bootstrap sockets): the ranks become nodes
	for r in 0 1 2 3; do
		p[r]=$(awk -v r="$r" '($1 == "rank" || $1 == "holding" || $1 == "lagging") && $2 == r { print $4; exit }' \
			"$BATS_TEST_TMPDIR/ranks.out")
	done
	TEST_PIDS+=("${p[@]}")	# the held ranks end in teardown too
	for r in 0 1 2 3; do
		printf '{"type":"edge","tool":"ipcsnoop","kind":"unix","channel":"@ring-%d","src":{"pid":%d,"comm":"ncclrank"},"dst":{"pid":%d,"comm":"ncclrank"},"bytes":4096,"msgs":4,"read_bytes":4096}\n' \
			"$r" "${p[r]}" "${p[(r + 1) % 4]}"
	done > "$BATS_TEST_TMPDIR/ring.jsonl"
	graph_json "$BATS_TEST_TMPDIR/ring.jsonl" "$out"
	[ "$(jg '[.[] | select(.type=="node") | "\(.pid) \(.nccl | map(select(.nranks == 4))[0].rank)"] | join(",")')" = \
		"${p[0]} 0,${p[1]} 1,${p[2]} 2,${p[3]} 3" ]
	# rank 1 is the one, with nclstat's op sequence numbers as evidence
	[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="nccl_lag") | .node] | join(",")')" = n2 ]
	[ "$(jg '.[] | select(.type=="node" and .id=="n2") | .pid')" = "${p[1]}" ]
	jg '.[] | select(.rule=="nccl_lag") | .evidence' | grep -E "^rank 1 \\(${p[1]}/ncclrank\\) of communicator 0x[0-9a-f]+ lags: op sequence [0-9]+ against [0-9]+ of rank [023] \\([0-9]+/ncclrank\\); its last op reduce$"
}

# numaplace's capture on the sysfs tree of make_sysroot (tests/lib.bash):
# FAR has GPU 0 (node 1) open, NEAR GPU 1 (node 0), LONE GPU 0 and no edge;
# this host's CPUs and memory are node 0's
numa_capture() {
	make_sysroot
	start_bg far bash -c 'exec 3< "$1/dev/nvidia0"; exec sleep 60' _ "$R"
	FAR=$BG_PID
	start_bg near bash -c 'exec 3< "$1/dev/nvidia1"; exec sleep 60' _ "$R"
	NEAR=$BG_PID
	start_bg lone bash -c 'exec 3< "$1/dev/nvidia0"; exec sleep 60' _ "$R"
	LONE=$BG_PID
	sleep 0.3
	env AISCOPE_SYSROOT="$R" "$BIN/numaplace" -j -p "$FAR,$NEAR,$LONE" -i 300ms -n 2 \
		> "$BATS_TEST_TMPDIR/numa.jsonl"
	printf '{"type":"edge","tool":"ipcsnoop","kind":"unix","channel":"@feed","src":{"pid":%d,"comm":"sleep"},"dst":{"pid":%d,"comm":"sleep"},"bytes":4096,"msgs":4,"read_bytes":4096}\n' \
		"$NEAR" "$FAR" > "$BATS_TEST_TMPDIR/feed.jsonl"
}

@test "numaplace's capture: a process far from its GPU is flagged numa_remote with numaplace's figures; one near is not; one far without an edge is still a node" {
	need_root
	numa_capture
	graph_json "$BATS_TEST_TMPDIR/feed.jsonl" "$BATS_TEST_TMPDIR/numa.jsonl"
	# FAR and LONE flagged, NEAR not; LONE a node without an edge
	[ "$(jg '[.[] | select(.type=="node") | "\(.pid) \(.bottlenecks | join("+"))"] | sort | join(",")')" = \
		"$(printf '%s\n' "$FAR numa_remote" "$NEAR " "$LONE numa_remote" | sort | paste -sd,)" ]
	[ "$(jg '[.[] | select(.type=="node" and .pid=='"$LONE"') | .tx_bytes + .rx_bytes] | .[0]')" = 0 ]
	# each node's numa block is numaplace's last row of it, exactly
	local p
	for p in "$FAR" "$NEAR" "$LONE"; do
		jq -e -n --slurpfile g "$BATS_TEST_TMPDIR/g.json" --slurpfile r "$BATS_TEST_TMPDIR/numa.jsonl" --argjson p "$p" '
			([$r[] | select(.type=="sample" and .row=="pid" and .pid==$p)]) as $rows |
			($rows | last) as $last |
			($g[] | select(.type=="node" and .pid==$p) | .numa) ==
			{intervals: ($rows | length), remote_intervals: ($rows | map(select(.remote)) | length),
			 cpu_node: $last.cpu_node, mem_node: $last.mem_node,
			 devices: ($last.devices | map(del(.kind, .pci))), devices_left_out: 0}'
	done
	# numaplace saw 2 intervals, both REMOTE for FAR: memory all on node 0,
	# none on the GPU's node 1; sleep had no CPU time
	[ "$(jq -s '[.[] | select(.type=="sample" and .pid=='"$FAR"' and .remote)] | length' "$BATS_TEST_TMPDIR/numa.jsonl")" = 2 ]
	[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="numa_remote") | .evidence | select(startswith("'"$FAR"'/"))] | .[0]')" = \
		"$FAR/sleep is far from nvidia0 on node 1: CPU time not measured; memory mostly on node 0, 0.0% of it on node 1; REMOTE in 2 of 2 intervals" ]
	[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="numa_remote") | "\(.value) \(.threshold) \(.unit) \(.edge != null)"] | sort | join(",")')" = \
		"0 0.5 ratio false,0 0.5 ratio true" ]
	# the table names the flag and the evidence
	run -0 "$BIN/topograph" "$BATS_TEST_TMPDIR/feed.jsonl" "$BATS_TEST_TMPDIR/numa.jsonl"
	echo "$output"
	echo "$output" | grep -E "^ *n[0-9]+ +$FAR +- +sleep .* numa$"
	echo "$output" | grep -F "$LONE/sleep is far from nvidia0 on node 1"
	# the lagging NCCL rank of the mixed capture (pid 301) with FAR's rows:
	# its lag's evidence says it is far from its GPU
	jq -c 'select(.type=="sample" and .row=="pid" and .pid=='"$FAR"') | .pid = 301 | del(.host)' \
		"$BATS_TEST_TMPDIR/numa.jsonl" > "$BATS_TEST_TMPDIR/numa301.jsonl"
	graph_json "$FIX/mixed.jsonl" "$BATS_TEST_TMPDIR/numa301.jsonl"
	jg '.[] | select(.rule=="nccl_lag") | .evidence' | grep -E '^rank 1 \(301/rank1\) .*; on its host: .*far from nvidia0 on node 1 \(NUMA\)$'
	[ "$(jg '.[] | select(.type=="node" and .pid==301) | .bottlenecks | join(",")')" = nccl_lag,numa_remote ]
}

@test "live --with numaplace: the filters passed, the process far from its GPU flagged on its node" {
	need_root
	[ -x "$BIN/numaplace" ] || skip "numaplace is not built"
	make_sysroot
	local fifo=$BATS_TEST_TMPDIR/feed.fifo
	mkfifo "$fifo" "$fifo.go"
	# FAR (GPU 0, node 1) writes 65536 bytes into the FIFO, NEAR (GPU 1,
	# node 0) reads them, both builtins of their shells, then they sleep
	start_bg far bash -c 'exec 3< "$1/dev/nvidia0"; read -r < "$2.go"; printf "%065536d" 0 > "$2"; exec sleep 60' _ "$R" "$fifo"
	local far=$BG_PID
	start_bg near bash -c 'exec 3< "$1/dev/nvidia1" 4< "$2"; read -r -N 65536 x <&4; echo "read ${#x}"; exec sleep 60' _ "$R" "$fifo"
	local near=$BG_PID
	export AISCOPE_SYSROOT=$R	# for numaplace, run by topograph
	start_tool topo topograph -j -d 120s --with numaplace -p "$far,$near"
	echo go > "$fifo.go"
	wait_for "$BATS_TEST_TMPDIR/near.out" '^read 65536$' 30
	sleep 1.5	# a numaplace interval after the bytes
	stop_tool "$TOOL_PID" INT
	cp "$BATS_TEST_TMPDIR/topo.out" "$BATS_TEST_TMPDIR/g.json"
	all_json "$BATS_TEST_TMPDIR/g.json"
	[ "$(jg '[.[] | select(.type=="edge") | "\(.kind) \(.src.pid)>\(.dst.pid) \(.bytes)"] | join(",")')" = "fifo $far>$near 65536" ]
	[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="numa_remote") | .node] | join(",")')" = \
		"$(jg '.[] | select(.type=="node" and .pid=='"$far"') | .id')" ]
	jg '.[] | select(.type=="node" and .pid=='"$far"') | .numa' |
		jq -e '.remote_intervals >= 1 and .devices == [{"name":"nvidia0","node":1,"cpu_local_ratio":.devices[0].cpu_local_ratio,"mem_local_ratio":0,"remote":true}] and
			(.devices[0].cpu_local_ratio == null or .devices[0].cpu_local_ratio == 0)'
	jg '.[] | select(.type=="node" and .pid=='"$near"') | .numa' |
		jq -e '.remote_intervals == 0 and .devices == [{"name":"nvidia1","node":0,"cpu_local_ratio":.devices[0].cpu_local_ratio,"mem_local_ratio":1,"remote":false}]'
}

# ---- end to end: the real tools on a known topology ----

need_tools() {
	local t missing=
	for t in socketsnoop ipcsnoop schedlat; do
		[ -x "$BIN/$t" ] || missing+=" $t"
	done
	[ -z "$missing" ] || skip "needs$missing in $BIN (not built on this branch yet)"
}

# the topology: producer -FIFO-> transformer -TCP-> consumer, the consumer's
# ack back over TCP, and the consumer's side channel to the producer over a
# unix socket; the transformer pinned to CPU 0 with busy loops there (and
# nice 10), the others on CPU 1 as SCHED_FIFO tasks: on a loaded host (load
# average 11 to 14 on the 2 CPUs here, a VM and another suite beside it,
# the tools under ASan) CPU 1's run queue starved them too (run-queue p99
# 1.1 s for both at nice 0, and 1.0 s at nice -10), where only the
# transformer is to be the starved stage
E2E_BYTES=2097152
E2E_CHUNK=4096
E2E_SIDE_MSGS=4
E2E_SIDE_SIZE=25

run_topology() {
	local dir=$BATS_TEST_TMPDIR/topo
	mkdir -p "$dir"
	start_bg stages "$HELPERS/topostages" "$dir" $E2E_BYTES $E2E_CHUNK $E2E_SIDE_MSGS \
		$E2E_SIDE_SIZE 0 10 1
	STAGES_PID=$BG_PID
	wait_for "$BATS_TEST_TMPDIR/stages.out" '^ready'
	read -r _ PRODUCER TRANSFORMER CONSUMER _ PORT < "$BATS_TEST_TMPDIR/stages.out"
	chrt -f -p 1 "$PRODUCER"
	chrt -f -p 1 "$CONSUMER"
	start_contend spin 4 0 4000
	start_tool topo topograph -j -d 120s --with schedlat --runq 50ms \
		-p "$PRODUCER,$TRANSFORMER,$CONSUMER" "$@"
	kill -USR1 "$CONTEND_PID"
	sleep 0.2
	kill -USR1 "$STAGES_PID"
	wait_for "$BATS_TEST_TMPDIR/stages.out" '^done' 60
	sleep 1.2	# a last schedlat interval
	stop_tool "$TOOL_PID" INT
	cp "$BATS_TEST_TMPDIR/topo.out" "$BATS_TEST_TMPDIR/g.json"
	all_json "$BATS_TEST_TMPDIR/g.json"
}

@test "end to end: the test topology's exact nodes, edges and bytes; the starved stage flagged" {
	need_root
	need_tools
	run_topology
	cat "$BATS_TEST_TMPDIR/stages.out"
	local writes sends
	writes=$(awk '/^producer/ { sub("writes=", "", $2); print $2 }' "$BATS_TEST_TMPDIR/stages.out")
	sends=$(awk '/^transformer/ { sub("sends=", "", $3); print $3 }' "$BATS_TEST_TMPDIR/stages.out")
	[ "$(jg '[.[] | select(.type=="node") | "\(.kind) \(.pid) \(.comm)"] | sort | join(",")')" = \
		"$(printf '%s\n' "process $PRODUCER producer" "process $TRANSFORMER transformer" \
			"process $CONSUMER consumer" | sort | paste -sd,)" ]
	[ "$(jg '[.[] | select(.type=="edge") | "\(.kind) \(.src.comm)>\(.dst.comm) \(.bytes) \(.msgs)"] | join(",")')" = \
		"fifo producer>transformer $E2E_BYTES $writes,tcp transformer>consumer $E2E_BYTES $sends,unix consumer>producer $((E2E_SIDE_MSGS * E2E_SIDE_SIZE)) $E2E_SIDE_MSGS,tcp consumer>transformer 8 1" ]
	# every byte was read: no backlog
	[ "$(jg '[.[] | select(.type=="edge") | "\(.read_bytes == .bytes) \(.unread_bytes)"] | unique | join(",")')" = "true 0" ]
	[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="reader_behind")] | length')" -eq 0 ]
	[ "$(jg '.[] | select(.type=="edge" and .kind=="fifo") | .channel')" = "$BATS_TEST_TMPDIR/topo/topo.fifo" ]
	[ "$(jg '.[] | select(.type=="edge" and .kind=="unix") | .channel')" = "$BATS_TEST_TMPDIR/topo/topo.sock" ]
	[ "$(jg '.[] | select(.type=="edge" and .kind=="tcp" and .src.comm=="transformer") | .dst.endpoint')" = "127.0.0.1:$PORT" ]
	# the starved stage, and only it, is flagged for its run queue
	jg '.[] | select(.type=="node") | "\(.id) \(.comm) \(.runq_p99_ns) \(.runq_runs)"'
	[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="runq") | .node] | join(",")')" = \
		"$(jg '.[] | select(.type=="node" and .comm=="transformer") | .id')" ]
}

@test "end to end: the live graph as DOT and Mermaid" {
	need_root
	need_tools
	command -v dot > /dev/null || skip "graphviz (dot) is not installed"
	run_topology
	"$BIN/topograph" --dot "$BATS_TEST_TMPDIR/g.json" > "$BATS_TEST_TMPDIR/g.dot"
	dot -Tsvg "$BATS_TEST_TMPDIR/g.dot" > "$BATS_TEST_TMPDIR/g.svg"
	[ "$(grep -c 'class="edge"' "$BATS_TEST_TMPDIR/g.svg")" -eq 4 ]
	"$BIN/topograph" --mermaid "$BATS_TEST_TMPDIR/g.json" > "$BATS_TEST_TMPDIR/g.mmd"
	awk -f "$BATS_TEST_DIRNAME/helpers/mermaid-check.awk" "$BATS_TEST_TMPDIR/g.mmd"
	grep -Fx '  class n2 bottleneck' "$BATS_TEST_TMPDIR/g.mmd" ||
		grep -E '^  class n[0-9]+ bottleneck$' "$BATS_TEST_TMPDIR/g.mmd"
}

# ---- its own BPF side: the process lifecycle ----

@test "topograph --list-probes: fork, exec and exit, tp_btf first; --probe-mode picks; none possible exits 77" {
	run "$BIN/topograph" --list-probes
	[ "$status" -eq 0 ]
	for h in fork exec exit; do
		echo "$output" | grep -E "^sched_process_$h +tp_btf +sched_process_$h +chosen$"
		echo "$output" | grep -E "^ +raw_tp +sched_process_$h +available$"
		echo "$output" | grep -E "^ +tracepoint +sched/sched_process_$h +available$"
	done
	run "$BIN/topograph" --list-probes -j
	[ "$status" -eq 0 ]
	echo "$output" > "$BATS_TEST_TMPDIR/plan"
	all_json "$BATS_TEST_TMPDIR/plan"
	[ "$(jq -s '[.[] | select(.type == "probe" and .tool == "topograph")] | length' "$BATS_TEST_TMPDIR/plan")" -eq 9 ]
	[ "$(jq -s -r '[.[] | select(.status == "chosen") | .mechanism] | unique | join(",")' "$BATS_TEST_TMPDIR/plan")" = tp_btf ]
	for mode in raw_tp tracepoint; do
		run "$BIN/topograph" --list-probes --probe-mode "$mode"
		[ "$status" -eq 0 ]
		[ "$(echo "$output" | grep -c " $mode .*chosen$")" -eq 3 ]
	done
	need_root
	run_exit_77 "$BIN/topograph" --probe-mode fentry,kprobe -d 1
	[[ "$output" == "topograph: no way to attach sched_process_fork on this kernel: tried tp_btf:sched_process_fork (excluded by --probe-mode), raw_tp:sched_process_fork (excluded by --probe-mode), tracepoint:sched/sched_process_fork (excluded by --probe-mode)" ]]
}

@test "topograph without the privilege to load BPF exits 77 with one line" {
	need_root
	nobody_copy "$BIN/topograph"
	cp "$BIN/socketsnoop" "$BIN/ipcsnoop" "${NOBODY_BIN%/*}/"
	run_exit_77 "${AS_NOBODY[@]}" "$NOBODY_BIN" -d 1
	[[ "$output" == *"CAP_BPF"* ]]
	run "${AS_NOBODY[@]}" "$NOBODY_BIN" -j -d 1
	[ "$status" -eq 77 ]
	echo "$output" | grep '^{' | tail -1 | jq -e '.type == "error" and .exit_code == 77'
}

# "2026-12-01T18:49:57.283058336Z" -> ns
ts_ns() {
	local s=$1 frac
	frac=${s#*.}
	frac=${frac%Z}
	echo "$(date -u -d "${s%%.*}Z" +%s)${frac}"
}

# the capture: topograph -j -d 120s ARGS... until lifecycle (ARGS of the
# helper after --) has printed its line; sets LC (its line, as words)
lifecycle_capture() {
	local targs=() name=$1
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		targs+=("$1")
		shift
	done
	shift
	start_tool topo topograph -j -d 120s "${targs[@]}"
	start_bg "$name" "$HELPERS/lifecycle" "$@"
	wait_for "$BATS_TEST_TMPDIR/$name.out" "^$1 " 30
	read -r -a LC < "$BATS_TEST_TMPDIR/$name.out"
	stop_tool "$TOOL_PID" INT
	cp "$BATS_TEST_TMPDIR/topo.out" "$BATS_TEST_TMPDIR/g.json"
	all_json "$BATS_TEST_TMPDIR/g.json"
}

@test "live lifecycle: a child that wrote into a pipe and exited 3: pid, ppid, comm, status, lifetime" {
	need_root
	lifecycle_capture lc -- pipe 65536 3
	# pipe PARENT GRANDPARENT CHILD T0 T1 READ STATUS
	local parent=${LC[1]} grand=${LC[2]} child=${LC[3]} t0=${LC[4]} t1=${LC[5]}
	[ "${LC[6]}" -eq 65536 ] && [ "${LC[7]}" -eq $((3 << 8)) ]
	[ "$(jg ".[] | select(.type==\"node\" and .pid==$child) | \"\(.ppid) \(.comm) \(.exit_code) \(.exit_signal) \(.core_dumped) \(.execs)\"")" = \
		"$parent lcwriter 3 null false 0" ]
	# forked after T0 and reaped before T1 (both taken by the helper); the
	# boot clock's conversion to realtime is good to well under 1 ms
	local started exited
	started=$(ts_ns "$(jg ".[] | select(.type==\"node\" and .pid==$child) | .started_ts")")
	exited=$(ts_ns "$(jg ".[] | select(.type==\"node\" and .pid==$child) | .exited_ts")")
	echo "t0 $t0 started $started exited $exited t1 $t1"
	[ "$started" -ge $((t0 - 1000000)) ] && [ "$started" -le "$exited" ] && [ "$exited" -le $((t1 + 1000000)) ]
	# its parent: the helper, exec'd by this test's shell in the capture
	[ "$(jg ".[] | select(.type==\"node\" and .pid==$parent) | \"\(.ppid) \(.comm) \(.exited_ts) \(.execs)\"")" = \
		"$grand lifecycle null 1" ]
	[ "$(jg ".[] | select(.type==\"node\" and .pid==$child) | .parent_id")" = \
		"$(jg ".[] | select(.type==\"node\" and .pid==$parent) | .id")" ]
	# the bytes, exact, and the failed stage with its evidence
	[ "$(jg ".[] | select(.type==\"edge\" and .src.pid==$child) | \"\(.kind) \(.dst.pid) \(.bytes) \(.read_bytes)\"")" = \
		"pipe $parent 65536 65536" ]
	[ "$(jg "[.[] | select(.type==\"bottleneck\" and .rule==\"exit_failed\" and .node==\"$(jg ".[] | select(.type==\"node\" and .pid==$child) | .id")\") | \"\(.value) \(.unit)\"] | join(\",\")")" = \
		"3 exit_code" ]
	jg '.[] | select(.rule=="exit_failed") | .evidence' | grep -E "^$child/lcwriter exited with code 3 at [0-9T:.-]+Z, [0-9.]+ s after its fork$"
	[ "$(jg '.[] | select(.type=="summary") | .processes_traced > 0 and .lost_events == 0')" = true ]
	# topograph's own lines read back: the same lifecycle, and --tree from them
	graph_json --tree "$BATS_TEST_TMPDIR/topo.out"
	[ "$(jg ".[] | select(.type==\"node\" and .pid==$child) | \"\(.ppid) \(.exit_code) \(.execs) \(.started_ts != null)\"")" = \
		"$parent 3 0 true" ]
	[ "$(jg "[.[] | select(.type==\"spawn\" and .pid==$child) | .ppid] | join(\",\")")" = "$parent" ]
}

@test "live lifecycle: a process gone with its cgroup keeps its cgroup and container" {
	need_root
	make_docker_cgroup
	# the helper joins it, its child writes and exits, then it leaves the
	# cgroup and removes it, as a container runtime does after a job: the
	# tools resolve cgroup ids to paths when they end, too late
	lifecycle_capture lc -- pipe 4096 0 "$CG"
	[ ! -d "$CG" ]
	local child=${LC[3]}
	[ "$(jg ".[] | select(.type==\"node\" and .pid==$child) | \"\(.cgroup) \(.container_id) \(.runtime) \(.exit_code)\"")" = \
		"/docker-$CID.scope $CID docker 0" ]
	# the edge's side says the same
	[ "$(jg ".[] | select(.type==\"edge\" and .src.pid==$child) | \"\(.src.container_id) \(.bytes)\"")" = "$CID 4096" ]
	# a clean exit is no bottleneck
	local id
	id=$(jg ".[] | select(.type==\"node\" and .pid==$child) | .id")
	[ "$(jg "[.[] | select(.type==\"bottleneck\" and .node==\"$id\")] | length")" -eq 0 ]
	[ "$(jg ".[] | select(.type==\"node\" and .pid==$child) | .bottlenecks | length")" -eq 0 ]
}

@test "live lifecycle --tree: N execs counted N; a respawned crashing worker is flagged restarted" {
	need_root
	start_tool topo topograph -j -d 120s --tree
	start_bg ex "$HELPERS/lifecycle" execs 5
	start_bg rs "$HELPERS/lifecycle" respawn 3 2
	wait_for "$BATS_TEST_TMPDIR/ex.out" '^execs ' 30
	wait_for "$BATS_TEST_TMPDIR/rs.out" '^respawn ' 30
	stop_tool "$TOOL_PID" INT
	cp "$BATS_TEST_TMPDIR/topo.out" "$BATS_TEST_TMPDIR/g.json"
	all_json "$BATS_TEST_TMPDIR/g.json"
	local ex rs
	read -r -a ex < "$BATS_TEST_TMPDIR/ex.out"	# execs PARENT CHILD N
	read -r -a rs < "$BATS_TEST_TMPDIR/rs.out"	# respawn PARENT PID PID PID
	# the exec chain: 5 execs of the same file, 4 of them again
	[ "$(jg ".[] | select(.type==\"node\" and .pid==${ex[2]}) | \"\(.ppid) \(.execs) \(.reexecs) \(.exec_filename) \(.exit_code)\"")" = \
		"${ex[1]} 5 4 $(readlink -f "$HELPERS/lifecycle") 0" ]
	# --tree: a spawn link from the helper to it
	[ "$(jg "[.[] | select(.type==\"spawn\" and .pid==${ex[2]}) | \"\(.ppid) \(.parent_id)\"] | join(\",\")")" = \
		"${ex[1]} $(jg ".[] | select(.type==\"node\" and .pid==${ex[1]}) | .id")" ]
	# the workers: each failed; the second and third replaced failed ones
	local w id
	for w in 2 3 4; do
		id=$(jg ".[] | select(.type==\"node\" and .pid==${rs[w]}) | .id")
		[ "$(jg ".[] | select(.type==\"node\" and .pid==${rs[w]}) | \"\(.ppid) \(.comm) \(.exit_code)\"")" = \
			"${rs[1]} lcworker 2" ]
		[ "$(jg "[.[] | select(.type==\"bottleneck\" and .node==\"$id\") | \"\(.rule) \(.value)\"] | join(\",\")")" = \
			"$([ $w -eq 2 ] && echo "exit_failed 2" || echo "exit_failed 2,restarted $((w - 2))")" ]
	done
	jg '.[] | select(.rule=="restarted") | .evidence' |
		grep -F "${rs[4]}/lcworker was respawned by its parent ${rs[1]}: 2 earlier lcworker failed during the capture, the last ${rs[3]} with exit code 2 at"
	# the views draw the spawn links
	"$BIN/topograph" --tree --mermaid "$BATS_TEST_TMPDIR/g.json" > "$BATS_TEST_TMPDIR/g.mmd"
	awk -f "$BATS_TEST_DIRNAME/helpers/mermaid-check.awk" "$BATS_TEST_TMPDIR/g.mmd"
	grep -E "^  n[0-9]+ -\.->\|\"spawn\"\| $(jg ".[] | select(.type==\"node\" and .pid==${ex[2]}) | .id")$" "$BATS_TEST_TMPDIR/g.mmd"
	"$BIN/topograph" --tree --dot "$BATS_TEST_TMPDIR/g.json" > "$BATS_TEST_TMPDIR/g.dot"
	grep -F "label=\"spawn\", style=dashed" "$BATS_TEST_TMPDIR/g.dot"
	"$BIN/topograph" --tree "$BATS_TEST_TMPDIR/g.json" | grep -E "^  n[0-9]+ ${ex[1]}/lifecycle -> n[0-9]+ ${ex[2]}/lifecycle "
}

@test "live lifecycle: -c keeps the cgroup's processes and leaves out the others" {
	need_root
	make_test_cgroup aiscope-topo
	start_tool topo topograph -j -d 120s --tree -c "$CG"
	start_bg out "$HELPERS/lifecycle" execs 3
	start_bg in "$HELPERS/lifecycle" pipe 1000 3 "$CG"
	wait_for "$BATS_TEST_TMPDIR/out.out" '^execs ' 30
	wait_for "$BATS_TEST_TMPDIR/in.out" '^pipe ' 30
	stop_tool "$TOOL_PID" INT
	cp "$BATS_TEST_TMPDIR/topo.out" "$BATS_TEST_TMPDIR/g.json"
	all_json "$BATS_TEST_TMPDIR/g.json"
	local in out
	read -r -a in < "$BATS_TEST_TMPDIR/in.out"
	read -r -a out < "$BATS_TEST_TMPDIR/out.out"
	# the child forked inside it is there, with its status
	[ "$(jg ".[] | select(.type==\"node\" and .pid==${in[3]}) | \"\(.ppid) \(.exit_code)\"")" = "${in[1]} 3" ]
	# the processes outside it are not, nor anything but the cgroup's
	[ "$(jg "[.[] | select(.type==\"node\" and (.pid==${out[1]} or .pid==${out[2]}))] | length")" -eq 0 ]
	[ "$(jg '[.[] | select(.type=="node" and .execs != null) | .cgroup] | unique | join(",")')" = "/${CG##*/}" ]
	# the helper (alive, its parent from /proc) -> its child, as a dotted
	# Mermaid link that Mermaid's own parser takes, where it is installed
	"$BIN/topograph" --tree --mermaid "$BATS_TEST_TMPDIR/g.json" > "$BATS_TEST_TMPDIR/g.mmd"
	awk -f "$BATS_TEST_DIRNAME/helpers/mermaid-check.awk" "$BATS_TEST_TMPDIR/g.mmd"
	grep -Fx "  $(jg ".[] | select(.type==\"node\" and .pid==${in[1]}) | .id") -.->|\"spawn\"| $(jg ".[] | select(.type==\"node\" and .pid==${in[3]}) | .id")" \
		"$BATS_TEST_TMPDIR/g.mmd"
	if command -v node > /dev/null && [ -d "$NPM_DIR/node_modules/mermaid" ] && [ -d "$NPM_DIR/node_modules/jsdom" ]; then
		run node "$BATS_TEST_DIRNAME/helpers/mermaid-parse.mjs" "$NPM_DIR" "$BATS_TEST_TMPDIR/g.mmd"
		[ "$output" = "parsed: flowchart-v2" ] || { echo "$output"; cat "$BATS_TEST_TMPDIR/g.mmd"; false; }
	fi
}

@test "live lifecycle: raw_tp and classic tracepoints see the same lives (threads are no processes)" {
	need_root
	local mode child parent
	for mode in raw_tp tracepoint; do
		lifecycle_capture lc --probe-mode "$mode" -- pipe 3000 3
		parent=${LC[1]} child=${LC[3]}
		[ "$(jg ".[] | select(.type==\"node\" and .pid==$child) | \"\(.ppid) \(.comm) \(.exit_code) \(.execs) \(.started_ts != null)\"")" = \
			"$parent lcwriter 3 0 true" ]
		[ "$(jg ".[] | select(.type==\"node\" and .pid==$parent) | \"\(.execs) \(.exec_filename)\"")" = \
			"1 $HELPERS/lifecycle" ]
	done
	# the classic fork tracepoint does not tell a thread from a process:
	# contend's three threads must not become processes
	start_tool topo topograph -j -d 120s --tree --probe-mode tracepoint
	start_contend spin 3 0 10
	local tids
	tids=$(ls "/proc/$CONTEND_PID/task" | grep -vx "$CONTEND_PID" | paste -sd,)
	[ -n "$tids" ]
	stop_tool "$TOOL_PID" INT
	cp "$BATS_TEST_TMPDIR/topo.out" "$BATS_TEST_TMPDIR/g.json"
	[ "$(jg "[.[] | select(.type==\"node\" and .pid==$CONTEND_PID) | .comm] | join(\",\")")" = contend ]
	[ "$(jg "[.[] | select(.type==\"node\" and (.pid as \$p | [$tids] | index(\$p)))] | length")" -eq 0 ]
}

@test "live lifecycle: a full map loses the processes beyond 8192, counted per event and reported" {
	need_root
	make_test_cgroup aiscope-topo-full
	start_tool topo topograph -j -d 300s -c "$CG"
	# the helper joins the cgroup, then is exec'd (its record, the first),
	# then forks 8300 children that exec and exit: 8191 fit
	start_bg loop bash -c "echo \$\$ > $CG/cgroup.procs && exec $HELPERS/lifecycle loop 8300"
	wait_for "$BATS_TEST_TMPDIR/loop.out" '^loop ' 120
	stop_tool "$TOOL_PID" INT
	cp "$BATS_TEST_TMPDIR/topo.out" "$BATS_TEST_TMPDIR/g.json"
	all_json "$BATS_TEST_TMPDIR/g.json"
	# 109 children without a record, each lost at its fork, exec and exit
	[ "$(jg '.[] | select(.type=="summary") | "\(.processes_traced) \(.lost_events)"')" = "8192 327" ]
	[ "$(jg '[.[] | select(.type=="lost") | "\(.lost_events) \(.map_full) \(.ringbuf_full)"] | join(",")')" = "327 327 0" ]
	grep -F 'topograph: lost 327 events (ring buffer full: 0, map full: 327)' "$BATS_TEST_TMPDIR/topo.err"
}

# ---- the graph across hosts ----

# two hosts whose processes share pids, a communicator of four ranks over
# both (rank 1 on host b behind), a loopback flow on each that must stay
# apart, and a flow from a to b seen by both
xhost_fixture() {
	local h pid
	for h in a b; do
		printf '{"type":"sample","tool":"nclstat","host":"h-%s","row":"communicator","communicator_id":"0xc0ffee","nranks":4,"ranks":[{"pid":100,"rank":%d,"op_seq":%d,"last_op":"allreduce"},{"pid":101,"rank":%d,"op_seq":%d,"last_op":"allreduce"}]}\n' \
			"$h" "$([ $h = a ] && echo 0 || echo 2)" 40 "$([ $h = a ] && echo 3 || echo 1)" \
			"$([ $h = a ] && echo 40 || echo 7)"
		printf '{"type":"edge","tool":"socketsnoop","host":"h-%s","kind":"tcp","channel":"127.0.0.1:7000->127.0.0.1:7001","src":{"pid":100,"comm":"rank","endpoint":"127.0.0.1:7000"},"dst":{"pid":null,"endpoint":"127.0.0.1:7001"},"bytes":10,"msgs":1,"read_bytes":null}\n' "$h"
		printf '{"type":"edge","tool":"socketsnoop","host":"h-%s","kind":"tcp","channel":"127.0.0.1:7000->127.0.0.1:7001","src":{"pid":null,"endpoint":"127.0.0.1:7000"},"dst":{"pid":101,"comm":"rank","endpoint":"127.0.0.1:7001"},"bytes":10,"msgs":1,"read_bytes":10}\n' "$h"
	done > "$BATS_TEST_TMPDIR/x.jsonl"
	cat >> "$BATS_TEST_TMPDIR/x.jsonl" <<'EOT'
{"type":"edge","tool":"socketsnoop","host":"h-a","kind":"tcp","channel":"10.0.0.1:40000->10.0.0.2:29500","src":{"pid":101,"comm":"rank","endpoint":"10.0.0.1:40000"},"dst":{"pid":null,"endpoint":"10.0.0.2:29500"},"bytes":4096,"msgs":2,"read_bytes":null}
{"type":"edge","tool":"socketsnoop","host":"h-b","kind":"tcp","channel":"10.0.0.1:40000->10.0.0.2:29500","src":{"pid":null,"endpoint":"10.0.0.1:40000"},"dst":{"pid":100,"comm":"rank","endpoint":"10.0.0.2:29500"},"bytes":4000,"msgs":3,"read_bytes":4000}
EOT
}

@test "across hosts, RDMA: a queue pair's edge to GID/QPN ends at the process of the host that names that queue pair its own; an address two processes claim stays an endpoint, counted" {
	local e='"type":"edge","tool":"rdmasnoop","kind":"rdma","read_bytes":null,"first_ts":"2026-12-07T10:00:00Z","last_ts":"2026-12-07T10:00:05Z"'
	{
		# h-a's rank: QP 17 to h-b's QP 33, QP 19 to fe80::d/44
		echo "{$e,\"host\":\"h-a\",\"channel\":\"mlx5_0:1/17->fe80::b/33\",\"src\":{\"pid\":100,\"comm\":\"rank\",\"endpoint\":\"fe80::a/17\"},\"dst\":{\"pid\":null,\"endpoint\":\"fe80::b/33\"},\"bytes\":8192,\"msgs\":2}"
		echo "{$e,\"host\":\"h-a\",\"channel\":\"mlx5_0:1/19->fe80::d/44\",\"src\":{\"pid\":100,\"comm\":\"rank\",\"endpoint\":\"fe80::a/19\"},\"dst\":{\"pid\":null,\"endpoint\":\"fe80::d/44\"},\"bytes\":100,\"msgs\":1}"
		# h-b's rank: QP 33 back to QP 17
		echo "{$e,\"host\":\"h-b\",\"channel\":\"mlx5_0:1/33->fe80::a/17\",\"src\":{\"pid\":200,\"comm\":\"rank\",\"endpoint\":\"fe80::b/33\"},\"dst\":{\"pid\":null,\"endpoint\":\"fe80::a/17\"},\"bytes\":4096,\"msgs\":1}"
		# two processes of h-c that both say they are fe80::d/44
		for p in 300 301; do
			echo "{$e,\"host\":\"h-c\",\"channel\":\"mlx5_0:1/44->fe80::e/$p\",\"src\":{\"pid\":$p,\"comm\":\"rank\",\"endpoint\":\"fe80::d/44\"},\"dst\":{\"pid\":null,\"endpoint\":\"fe80::e/$p\"},\"bytes\":10,\"msgs\":1}"
		done
	} > "$BATS_TEST_TMPDIR/r.jsonl"
	graph_json "$BATS_TEST_TMPDIR/r.jsonl"
	jg '.[] | select(.type=="edge") | "\(.channel) \(.src.host)/\(.src.pid) > \(.dst.host)/\(.dst.pid // .dst.endpoint) \(.bytes) \(.msgs)"'
	[ "$(jg '[.[] | select(.type=="edge") | "\(.channel) \(.src.host)/\(.src.pid)>\(.dst.host)/\(.dst.pid // .dst.endpoint) \(.bytes) \(.msgs)"] | join(",")')" = \
		"mlx5_0:1/17->fe80::b/33 h-a/100>h-b/200 8192 2,mlx5_0:1/33->fe80::a/17 h-b/200>h-a/100 4096 1,mlx5_0:1/19->fe80::d/44 h-a/100>null/fe80::d/44 100 1,mlx5_0:1/44->fe80::e/300 h-c/300>null/fe80::e/300 10 1,mlx5_0:1/44->fe80::e/301 h-c/301>null/fe80::e/301 10 1" ]
	[ "$(jg '.[] | select(.type=="summary") | "\(.joined_flows) \(.unjoined_ambiguous_flows) \(.unjoined_local_flows)"')" = "2 1 0" ]
	# no endpoint node is left for the two queue pairs that were joined
	[ "$(jg '[.[] | select(.type=="node" and .kind=="endpoint") | .endpoint] | sort | join(",")')" = \
		"fe80::d/44,fe80::e/300,fe80::e/301" ]
}

@test "across hosts, RDMA at a cluster's scale: 2 x 10000 queue pairs' edges each joined to its peer's process, in seconds" {
	# h-a's QP q (pid 100 + q % 8) and h-b's QP q (pid 200 + q % 8) talk
	awk -v n=10000 'BEGIN {
		e = "\"type\":\"edge\",\"tool\":\"rdmasnoop\",\"kind\":\"rdma\",\"read_bytes\":null,\"first_ts\":\"2026-12-07T10:00:00Z\",\"last_ts\":\"2026-12-07T10:00:05Z\""
		for (q = 0; q < n; q++) {
			a = "fe80::a/" (q + 1000); b = "fe80::b/" (q + 30000)
			printf "{%s,\"host\":\"h-a\",\"channel\":\"mlx5_0:1/%d->%s\",\"src\":{\"pid\":%d,\"comm\":\"rank\",\"endpoint\":\"%s\"},\"dst\":{\"pid\":null,\"endpoint\":\"%s\"},\"bytes\":4096,\"msgs\":1}\n", e, q + 1000, b, 100 + q % 8, a, b
			printf "{%s,\"host\":\"h-b\",\"channel\":\"mlx5_0:1/%d->%s\",\"src\":{\"pid\":%d,\"comm\":\"rank\",\"endpoint\":\"%s\"},\"dst\":{\"pid\":null,\"endpoint\":\"%s\"},\"bytes\":2048,\"msgs\":1}\n", e, q + 30000, a, 200 + q % 8, b, a
		} }' > "$BATS_TEST_TMPDIR/r.jsonl"
	local t0=$SECONDS
	graph_json "$BATS_TEST_TMPDIR/r.jsonl"
	echo "topograph joined 20000 rdma edges in $((SECONDS - t0)) s"
	[ $((SECONDS - t0)) -lt 30 ]
	[ "$(jg '.[] | select(.type=="summary") | "\(.edges) \(.joined_flows) \(.unjoined_ambiguous_flows) \(.unjoined_time_flows)"')" = "20000 20000 0 0" ]
	# every edge process to process, each QP's to its peer's process
	[ "$(jg '[.[] | select(.type=="node" and .kind=="endpoint")] | length')" = 0 ]
	[ "$(jg '[.[] | select(.type=="edge") | select((.src.host == "h-a" and .dst.pid != .src.pid + 100) or (.src.host == "h-b" and .dst.pid != .src.pid - 100) or .src.host == .dst.host)] | length')" = 0 ]
	[ "$(jg '[.[] | select(.type=="edge" and .src.host=="h-a") | .bytes] | add')" = $((10000 * 4096)) ]
	[ "$(jg '[.[] | select(.type=="edge" and .src.host=="h-b") | .bytes] | add')" = $((10000 * 2048)) ]
}

@test "across hosts: pids of two hosts are two processes; a flow seen by both is one edge; loopback stays apart; the lagging rank named with its host" {
	xhost_fixture
	graph_json "$BATS_TEST_TMPDIR/x.jsonl"
	[ "$(jg '[.[] | select(.type=="node") | "\(.id) \(.kind) \(.node_host) \(.pid // .endpoint)"] | join(",")')" = \
		"n1 process h-a 100,n2 process h-a 101,n3 process h-b 100,n4 process h-b 101,n5 endpoint h-a 127.0.0.1:7000,n6 endpoint h-a 127.0.0.1:7001,n7 endpoint h-b 127.0.0.1:7000,n8 endpoint h-b 127.0.0.1:7001" ]
	# the flow: the sender's bytes, the reader's reads, between the hosts
	[ "$(jg '[.[] | select(.type=="edge") | "\(.src_id)>\(.dst_id) \(.src.host)>\(.dst.host) \(.bytes) \(.msgs) \(.read_bytes)"] | join(",")')" = \
		"n2>n3 h-a>h-b 4096 2 4000,n1>n6 h-a>h-a 10 1 null,n3>n8 h-b>h-b 10 1 null,n5>n2 h-a>h-a 10 1 10,n7>n4 h-b>h-b 10 1 10" ]
	[ "$(jg '.[] | select(.type=="summary") | "\(.hosts | join(" ")) \(.joined_flows) \(.unjoined_local_flows) \(.unjoined_ambiguous_flows)"')" = \
		"h-a h-b 1 2 0" ]
	grep -q '^topograph: 2 flows not joined across hosts: 2 of a loopback or link-local address, 0 matched on several hosts$' \
		"$BATS_TEST_TMPDIR/g.err"
	# rank 1 (pid 101 on h-b) of the communicator across both hosts
	[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="nccl_lag") | .node] | join(",")')" = n4 ]
	[ "$(jg '.[] | select(.rule=="nccl_lag") | .evidence')" = \
		"rank 1 (101/rank@h-b) of communicator 0xc0ffee lags: op sequence 7 against 40 of rank 0 (100/rank@h-a); its last op allreduce" ]
	# with schedlat's and cachestat's rows of the hosts, the evidence of
	# the lagging rank's own host (not those of pid 101 on h-a)
	{
		cat "$BATS_TEST_TMPDIR/x.jsonl"
		for h in a:1000000:7 b:12000000:500; do
			IFS=: read -r h p99 miss <<< "$h"
			printf '{"type":"sample","tool":"schedlat","host":"h-%s","row":"pid","pid":101,"comm":"rank","p99_ns":%s,"wait_ns":5,"runs":9}\n' "$h" "$p99"
			printf '{"type":"sample","tool":"cachestat","host":"h-%s","row":"pid","pid":101,"comm":"rank","misses":%s,"hits":20}\n' "$h" "$miss"
			printf '{"type":"sample","tool":"cachestat","host":"h-%s","row":"pid","pid":101,"comm":"rank","misses":1,"hits":null}\n' "$h"
		done
	} > "$BATS_TEST_TMPDIR/xe.jsonl"
	graph_json "$BATS_TEST_TMPDIR/xe.jsonl"
	[ "$(jg '.[] | select(.rule=="nccl_lag") | .evidence')" = \
		"rank 1 (101/rank@h-b) of communicator 0xc0ffee lags: op sequence 7 against 40 of rank 0 (100/rank@h-a); its last op allreduce; on h-b: run-queue p99 12.0 ms, page-cache misses 501, hits 20" ]
	graph_json "$BATS_TEST_TMPDIR/x.jsonl"
	# the table, DOT and Mermaid name the hosts
	run "$BIN/topograph" "$BATS_TEST_TMPDIR/x.jsonl"
	[[ "$output" == *"[host h-a]"*"[host h-b]"* ]]
	[[ "$output" == *"101/rank@h-a"*"100/rank@h-b"* ]]
	run "$BIN/topograph" --dot "$BATS_TEST_TMPDIR/x.jsonl"
	[[ "$output" == *'n4 [label="101 rank\non h-b\nnccl rank 1/4"'* ]]
	run "$BIN/topograph" --mermaid "$BATS_TEST_TMPDIR/x.jsonl"
	[[ "$output" == *"on h-b"* ]]
	# topograph's own lines read back give the same graph
	"$BIN/topograph" -j "$BATS_TEST_TMPDIR/x.jsonl" 2>/dev/null | grep -v '"type":"summary"' |
		jq -c 'del(.ts)' > "$BATS_TEST_TMPDIR/own1"
	"$BIN/topograph" -j "$BATS_TEST_TMPDIR/x.jsonl" 2>/dev/null > "$BATS_TEST_TMPDIR/own.jsonl"
	"$BIN/topograph" -j "$BATS_TEST_TMPDIR/own.jsonl" 2>/dev/null | grep -v '"type":"summary"' |
		jq -c 'del(.ts)' > "$BATS_TEST_TMPDIR/own2"
	diff "$BATS_TEST_TMPDIR/own1" "$BATS_TEST_TMPDIR/own2"
}

# three hosts: network namespaces, each with its own UTS name and cgroup,
# joined by veth pairs on 10.231.0.0/24; removed by xhost_teardown
XH= XCG=
xhost_teardown() {
	local h
	[ -n "$XH" ] || return 0
	for h in a b c; do
		ip netns del "$XH$h" 2>/dev/null
	done
}

# on HOST CMD...: CMD in HOST's cgroup, network namespace and UTS name
on() {
	local h=$1
	shift
	sh -c 'echo $$ > "$1/cgroup.procs"; n=$2 ns=$3; shift 3
		exec nsenter --net="/run/netns/$ns" unshare --uts sh -c "hostname \$0; exec \"\$@\"" "$n" "$@"' \
		sh "$XCG$h" "xh-$h" "$XH$h" "$@"
}

xhost_link() {	# HOST1 ADDR1 HOST2 ADDR2 N
	ip link add "${XH}v$5a" netns "$XH$1" type veth peer name "${XH}v$5b" netns "$XH$3"
	ip -n "$XH$1" addr add "$2/30" dev "${XH}v$5a"
	ip -n "$XH$1" link set "${XH}v$5a" up
	ip -n "$XH$3" addr add "$4/30" dev "${XH}v$5b"
	ip -n "$XH$3" link set "${XH}v$5b" up
}

# xhost_setup: three hosts a, b, c as network namespaces joined by veth
# links, each with a cgroup at the root (a parent of them could not be
# removed at once: the namespaces' sockets keep their cgroups dying for
# seconds after, and a dying child makes its parent busy)
xhost_setup() {
	need_root
	command -v ip nsenter unshare > /dev/null || skip "needs ip, nsenter and unshare"
	local root h
	root=$(cgroup2_root) || skip "no cgroup2 mount"
	XH=xh$$
	XCG=$root/aiscope-$XH-
	for h in a b c; do
		ip netns add "$XH$h" || skip "cannot make network namespaces"
		ip -n "$XH$h" link set lo up
		make_cgroup "$XCG$h"
	done
	xhost_link a 10.231.0.1 b 10.231.0.2 1
	xhost_link b 10.231.0.5 c 10.231.0.6 2
	xhost_link a 10.231.0.9 c 10.231.0.10 3
}

# xhost_traffic: b serves a and c, c serves a; each answers a hundredth of
# what came
xhost_traffic() {
	start_bg srvb on b "$HELPERS/xhostnet" serve 5000 2
	start_bg srvc on c "$HELPERS/xhostnet" serve 5001 1
	wait_for "$BATS_TEST_TMPDIR/srvb.out" '^listening'
	wait_for "$BATS_TEST_TMPDIR/srvc.out" '^listening'
	on a "$HELPERS/xhostnet" send 10.231.0.2 5000 100000 > "$BATS_TEST_TMPDIR/a1"
	on c "$HELPERS/xhostnet" send 10.231.0.5 5000 200000 > "$BATS_TEST_TMPDIR/c1"
	on a "$HELPERS/xhostnet" send 10.231.0.10 5001 300000 > "$BATS_TEST_TMPDIR/a2"
}

# xhost_check [HOST:PID...]: g.json is the graph of xhost_traffic, exact per
# host, with the processes HOST:PID as nodes besides (NCCL ranks)
xhost_check() {
	cat "$BATS_TEST_TMPDIR"/a1 "$BATS_TEST_TMPDIR"/c1 "$BATS_TEST_TMPDIR"/a2 "$BATS_TEST_TMPDIR"/srv?.out
	# the truth: each client's pid and ports, each server's
	pid() { sed -n 's/.*pid=\([0-9]*\).*/\1/p' "$1" | head -1; }
	local a1 a2 c1 sb sc f
	a1=$(pid "$BATS_TEST_TMPDIR/a1") a2=$(pid "$BATS_TEST_TMPDIR/a2") c1=$(pid "$BATS_TEST_TMPDIR/c1")
	sb=$(pid "$BATS_TEST_TMPDIR/srvb.out") sc=$(pid "$BATS_TEST_TMPDIR/srvc.out")
	set -- "a:$a1" "a:$a2" "b:$sb" "c:$sc" "c:$c1" "$@"
	jg '.[] | select(.type=="node" or .type=="edge") | "\(.type) \(.node_host // "") \(.kind) \(.pid // "") \(.src.host // "")/\(.src.pid // "")>\(.dst.host // "")/\(.dst.pid // "") \(.bytes // "") \(.read_bytes) \(.channel // .endpoint // "")"'
	# every node a process on its host, nothing left as an endpoint
	[ "$(jg '[.[] | select(.type=="node") | "\(.node_host) \(.kind) \(.pid)"] | join(",")')" = \
		"$(printf '%s\n' "$@" | sort -t: -k1,1 -k2,2n | sed 's/^\(.\):/xh-\1 process /' | paste -sd,)" ]
	# six edges, each a flow's one direction, exact bytes, read in full
	ep() { sed -n "s/.*$2=\([^ ]*\).*/\1/p" "$BATS_TEST_TMPDIR/$1"; }
	[ "$(jg '[.[] | select(.type=="edge") | "\(.kind) \(.src.host)/\(.src.pid)>\(.dst.host)/\(.dst.pid) \(.bytes) \(.read_bytes) \(.channel)"] | join(",")')" = \
		"tcp xh-a/$a2>xh-c/$sc 300000 300000 $(ep a2 local)->$(ep a2 peer),tcp xh-c/$c1>xh-b/$sb 200000 200000 $(ep c1 local)->$(ep c1 peer),tcp xh-a/$a1>xh-b/$sb 100000 100000 $(ep a1 local)->$(ep a1 peer),tcp xh-c/$sc>xh-a/$a2 3000 3000 $(ep a2 peer)->$(ep a2 local),tcp xh-b/$sb>xh-c/$c1 2000 2000 $(ep c1 peer)->$(ep c1 local),tcp xh-b/$sb>xh-a/$a1 1000 1000 $(ep a1 peer)->$(ep a1 local)" ]
	jg '.[] | select(.type=="summary")'
	[ "$(jg '.[] | select(.type=="summary") | "\(.nodes) \(.edges) \(.bytes) \(.hosts | join(" ")) \(.joined_flows) \(.unjoined_local_flows)"')" = \
		"$# 6 606000 xh-a xh-b xh-c 6 0" ]
	for f in a1 c1 a2; do
		grep -q " rx=$(( $(ep $f tx) / 100 ))\$" "$BATS_TEST_TMPDIR/$f"
	done
}

@test "across hosts, end to end: three network namespaces' socketsnoop captures make one graph, exact per host" {
	local h
	xhost_setup
	for h in a b c; do
		start_bg "ss$h" on "$h" "$BIN/socketsnoop" -j -d 6 -c "$XCG$h"
	done
	for h in a b c; do
		wait_for "$BATS_TEST_TMPDIR/ss$h.err" Tracing 30
	done
	xhost_traffic
	for h in a b c; do
		wait_for "$BATS_TEST_TMPDIR/ss$h.out" '"type":"summary"' 30
		jq -e -s --arg h "xh-$h" 'all(.[]; .host == $h)' "$BATS_TEST_TMPDIR/ss$h.out"
	done
	graph_json "$BATS_TEST_TMPDIR"/ssa.out "$BATS_TEST_TMPDIR"/ssb.out "$BATS_TEST_TMPDIR"/ssc.out
	xhost_check
}

@test "across hosts from Prometheus: three hosts' flows and a job's ranks, scraped by a real Prometheus: the graph exact, the lagging rank named with its host and what its host's schedlat and cachestat say" {
	local nccl=$BIN/tests/nccl h r i p ev t misses hits host
	command -v prometheus > /dev/null || skip "prometheus is not installed"
	[ -x "$BIN/nclstat" ] && [ -x "$nccl/ncclrank" ] && [ -e "$nccl/libnccl.so.2" ] ||
		skip "needs nclstat and its NCCL test double (tests/nccl) in $BIN"
	xhost_setup
	disk_dir
	"$HELPERS/pagecache" create "$DISK_DIR/f" 200 > /dev/null
	# each host's socketsnoop and nclstat under its host name, for its
	# host's cgroup; host b's schedlat and cachestat too
	for h in a b c; do
		for t in socketsnoop nclstat; do
			start_bg "$t$h" unshare --uts sh -c 'hostname "$0"; exec "$@"' "xh-$h" \
				"$BIN/$t" -i 300ms -c "$XCG$h" --listen 127.0.0.1:0 \
				$([ "$t" = nclstat ] && echo --lib "$nccl/libnccl.so.2")
		done
	done
	for t in schedlat cachestat; do
		start_bg "${t}b" unshare --uts sh -c 'hostname "$0"; exec "$@"' xh-b \
			"$BIN/$t" -j -i 300ms -c "${XCG}b" --listen 127.0.0.1:0
	done
	for t in socketsnoopa nclstata socketsnoopb nclstatb schedlatb cachestatb socketsnoopc nclstatc; do
		wait_for "$BATS_TEST_TMPDIR/$t.err" 'Tracing' 30
	done
	start_prometheus socketsnoopa nclstata socketsnoopb nclstatb schedlatb cachestatb socketsnoopc nclstatc
	# a job of four ranks, waiting before their first call: 0 on host a,
	# 2 on host b, 1 and 3 on host c; rank 2 stops before its second
	# iteration, the others run their four and hold
	start_bg ranks env LD_LIBRARY_PATH="$nccl" "$nccl/ncclrank" run -r 4 -i 4 -l 2:1 -w -b
	for r in 0 1 2 3; do
		wait_for "$BATS_TEST_TMPDIR/ranks.out" "^rank $r pid " 30
		p[r]=$(awk -v r="$r" '$1 == "rank" && $2 == r { print $4; exit }' "$BATS_TEST_TMPDIR/ranks.out")
		TEST_PIDS+=("${p[r]}")
		host[r]=$(echo a c b c | cut -d' ' -f$((r + 1)))
		move_to_cgroup "$XCG${host[r]}" "${p[r]}"
	done
	kill -USR1 "${p[@]}"
	# host b also reads a file not in the page cache: 200 pages missed
	sh -c "echo \$\$ > '${XCG}b/cgroup.procs'; '$HELPERS/pagecache' drop '$DISK_DIR/f' > /dev/null; cat '$DISK_DIR/f' > /dev/null"
	# and the flows between the hosts, of known bytes
	xhost_traffic
	wait_for "$BATS_TEST_TMPDIR/ranks.out" '^lagging 2 ' 30
	for r in 0 1 3; do
		wait_for "$BATS_TEST_TMPDIR/ranks.out" "^holding $r " 30
	done
	# until a scrape of each host has its flows' and its ranks' last figures
	sleep 1
	for i in $(seq 60); do
		graph_json --prometheus "http://127.0.0.1:$SERVER_PORT" --range 10m
		[ "$(jg '.[] | select(.type=="summary") | "\(.edges) \(.bytes) \(.joined_flows)"')" = "6 606000 6" ] &&
			[ "$(jg '[.[] | select(.type=="bottleneck" and .rule=="nccl_lag")] | length')" = 1 ] &&
			[ "$(jg '[.[] | select(.type=="node") | .nccl[]? | select(.nranks == 4)] | length')" = 4 ] &&
			[[ "$(jg '.[] | select(.rule=="nccl_lag") | .evidence')" == *"run-queue p99"*"page-cache misses"* ]] && break
		sleep 0.5
	done
	cat "$BATS_TEST_TMPDIR/g.err" "$BATS_TEST_TMPDIR/ranks.out"
	# the flows exact between the hosts' processes; the ranks nodes too
	xhost_check "${host[0]}:${p[0]}" "${host[1]}:${p[1]}" "${host[2]}:${p[2]}" "${host[3]}:${p[3]}"
	# each rank on its host, in the job's communicator of four
	[ "$(jg '[.[] | select(.type=="node" and .nccl != null) | "\(.node_host) \(.pid) \(.nccl | map(select(.nranks == 4))[0].rank)"] | sort | join(",")')" = \
		"$(for r in 0 1 2 3; do echo "xh-${host[r]} ${p[r]} $r"; done | sort | paste -sd,)" ]
	# rank 2 is the one, with its host, against a rank ahead of it
	ev=$(jg '.[] | select(.type=="bottleneck" and .rule=="nccl_lag") | .node')
	[ "$(jg ".[] | select(.type==\"node\" and .id==\"$ev\") | \"\(.node_host) \(.pid)\"")" = "xh-b ${p[2]}" ]
	ev=$(jg '.[] | select(.rule=="nccl_lag") | .evidence')
	echo "$ev"
	[[ "$ev" =~ ^rank\ 2\ \(${p[2]}/ncclrank@xh-b\)\ of\ communicator\ 0x[0-9a-f]+\ lags:\ op\ sequence\ ([0-9]+)\ against\ ([0-9]+)\ of\ rank\ [013]\ \([0-9]+/ncclrank@xh-[ac]\)\;\ its\ last\ op\ unknown\;\ on\ xh-b:\ run-queue\ p99\ [0-9]+\.[0-9]\ ms\ \(host-wide\),\ page-cache\ misses\ ([0-9]+),\ hits\ ([0-9]+)\ \(host-wide\)$ ]]
	# the sequence numbers: rank 2 stopped after its first iteration (5
	# collectives on the job's communicator), the others ran all four
	[ "${BASH_REMATCH[1]}" -eq 5 ] && [ "${BASH_REMATCH[2]}" -eq 20 ]
	# host b's page cache: what its cachestat's lines counted (its file's
	# 200 pages missed at least)
	misses=${BASH_REMATCH[3]} hits=${BASH_REMATCH[4]}
	echo "host b: misses $misses, hits $hits; cachestat's lines: $(jq -s -c '[[.[] | select(.type == "sample") | .misses] | add, [.[] | select(.type == "sample") | .hits] | add]' "$BATS_TEST_TMPDIR/cachestatb.out")"
	[ "$misses" -ge 200 ]
	[ "$misses" -eq "$(jq -s '[.[] | select(.type == "sample") | .misses] | add' "$BATS_TEST_TMPDIR/cachestatb.out")" ]
	[ "$hits" -eq "$(jq -s '[.[] | select(.type == "sample") | .hits // 0] | add' "$BATS_TEST_TMPDIR/cachestatb.out")" ]
	# a URL it cannot use, a server that does not answer: one line each
	run "$BIN/topograph" --prometheus "https://127.0.0.1:$SERVER_PORT"
	[ "$status" -eq 2 ] && [[ "$output" == *"https is not supported"* ]]
	run "$BIN/topograph" --prometheus "http://127.0.0.1:$(free_port)"
	[ "$status" -eq 1 ] && [[ "$output" == *"cannot query Prometheus"* ]]
}
