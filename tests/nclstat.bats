#!/usr/bin/env bats
# nclstat: the command-line contract, and end-to-end checks against calls
# whose every argument the test chose: the real libnccl.so.2 (NULL
# communicator: rc 4, the probes still fire) when present, and the test
# double of libnccl.so.2 (tests/fixtures/libnccl.c) that completes calls,
# driven by tests/fixtures/ncclrank.c (four ranks, known sequences).

bats_require_minimum_version 1.5.0
load lib

NCCL_DIR=$AISCOPE_BUILD/tests/nccl
DOUBLE=$NCCL_DIR/libnccl.so.2
# the double whose communicators nclstat cannot read (FAKE_NCCL_OPAQUE)
OPAQUE_DIR=$AISCOPE_BUILD/tests/nccl-opaque
RANKS=$NCCL_DIR/ncclrank

teardown() {
	aiscope_teardown
}

# the real library, or skip
real_nccl() {
	local f
	for f in /usr/local/cuda/lib/libnccl.so.2 /usr/local/cuda*/lib*/libnccl.so.2 \
		/usr/local/cuda*/targets/*/lib/libnccl.so.2; do
		[ -e "$f" ] && { REAL_NCCL=$f; return 0; }
	done
	f=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 .*x86-64|libnccl\.so\.2 .*AArch64/ {print $NF; exit}')
	[ -n "$f" ] && [ -e "$f" ] && { REAL_NCCL=$f; return 0; }
	skip "no real libnccl.so.2 on this machine"
}

# start_ranks NAME ARGS...: ncclrank run ARGS against the double (the one
# in $NCCL_LIBDIR if set); waits for "ready"; sets RANKS_PID and RANK_PID[r]
start_ranks() {
	local name=$1 r
	shift
	start_bg "$name" env LD_LIBRARY_PATH="${NCCL_LIBDIR:-$NCCL_DIR}" "$RANKS" run "$@"
	RANKS_PID=$BG_PID
	wait_for "$BATS_TEST_TMPDIR/$name.out" '^ready'
	RANK_PID=()
	for r in 0 1 2 3; do
		RANK_PID[r]=$(awk -v r="$r" '$1 == "rank" && $2 == r {print $4}' "$BATS_TEST_TMPDIR/$name.out")
	done
}

# finish_ranks: the held ranks go on (one interval for the tool to see them
# held first), end, and the tool stops; its lines checked against the schemas
finish_ranks() {
	local r
	for r in 0 1 2 3; do wait_for "$BATS_TEST_TMPDIR/r.out" "^holding $r " 30; done
	sleep 0.7
	kill -USR1 "${RANK_PID[@]}"
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
}

# ---- contract ----

@test "nclstat --help lists the shared options and ends with examples" {
	check_help nclstat "${SHARED_OPTS[@]}" --lib --events --hang --busbw --no-return --usage --version
}

@test "nclstat --usage and --version" {
	check_usage_version nclstat
}

@test "nclstat usage errors exit 2 with one line on stderr and nothing on stdout" {
	local bad=(
		"--bogus" "-p" "-p abc" "-p 999999999" "-i 0" "-d -1" "-n 0" "-s nope" "--hang 0"
		"--hang x" "--lib /nonexistent" "--lib /etc/passwd" "--lib /bin/true" "--lib="
		"-e --busbw" "1 2 3" "--probe-mode foo" "-c /nonexistent" "-e --listen 127.0.0.1:0"
		"--ras localhost" "--ras :28028" "--ras host:port" "--ras host:99999" "--ras []:1"
		"--ras-every 0" "--ras-every 500ms" "--ras-every x"
	)
	mapfile -t -O "${#bad[@]}" bad < <(not_regular_args --lib --btf)
	check_usage_errors nclstat "${bad[@]}"
}

@test "nclstat --metric-label refuses the label names its own series have" {
	check_own_metric_labels nclstat op
}

@test "nclstat without privileges exits 77 and says what is missing" {
	check_no_privilege nclstat
}

@test "nclstat --list-probes shows the kernel hooks and each NCCL function of --lib" {
	run "$BIN/nclstat" --list-probes --lib "$DOUBLE"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == HOOK*MECHANISM*TARGET*STATUS ]]
	echo "$output" | grep -E "^sched_process_exit +(tp_btf|raw_tp|tracepoint) .*chosen"
	for f in ncclAllReduce ncclReduce ncclCommInitRank ncclCommInitRankConfig ncclGroupEnd \
		ncclSend ncclRecv ncclCommSplit ncclCommDestroy ncclCommUserRank ncclCommShrink \
		ncclCommInitRankScalable; do
		echo "$output" | grep -E "^$f +uprobe +.*libnccl\.so\.2\+0x[0-9a-f]+ +chosen"
	done
	# the double exports ncclX as a weak alias of pncclX: one address
	off=$(echo "$output" | awk '$1 == "ncclAllReduce" {sub(/.*\+/, "", $3); print $3}')
	[ "$off" = "0x$(nm -D "$DOUBLE" | awk '$3 == "pncclAllReduce" {sub(/^0+/, "", $1); print $1}')" ]
	run "$BIN/nclstat" --list-probes --lib "$DOUBLE" -j
	[ "$status" -eq 0 ]
	echo "$output" > "$BATS_TEST_TMPDIR/plan"
	all_json "$BATS_TEST_TMPDIR/plan"
	[ "$(jq -s '[.[] | select(.mechanism == "uprobe" and .status == "chosen")] | length' "$BATS_TEST_TMPDIR/plan")" -eq 21 ]
	jq -e -s 'all(.[]; .type == "probe" and .tool == "nclstat" and has("hook") and
		has("mechanism") and has("target") and has("reason") and has("symbol"))' "$BATS_TEST_TMPDIR/plan"
}

# ---- every decoded argument equals what was passed ----

# check_args LIB LD_PATH: ncclrank args (sentinel arguments, NULL
# communicator) under nclstat -e --lib LIB; every field of every call line
# equals the tool's event, the 7th and 8th arguments (on the x86-64 stack)
# and ncclCommInitRank's 128-byte id passed by value included
check_args() {
	local lib=$1 ldpath=$2 calls
	start_tool e nclstat -e -j --lib "$lib"
	LD_LIBRARY_PATH=$ldpath "$RANKS" args > "$BATS_TEST_TMPDIR/args.out"
	sleep 0.5
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/e.out"
	calls=$(grep -c '^call ' "$BATS_TEST_TMPDIR/args.out")
	[ "$calls" -eq 12 ]
	# an init that made a communicator is named by NCCL's commHash read from
	# it; one that failed by nclstat's hash of the id in its arguments
	awk '$1 == "call" {
		ok = $0 ~ / rc=0( |$)/
		o = "{"; for (i = 2; i <= NF; i++) { n = index($i, "="); k = substr($i, 1, n - 1); v = substr($i, n + 1)
			if (k == "comm") k = "communicator_handle"
			if (k == "op") k = "nccl_op"
			if (k == "datatype") k = "datatype_id"
			if ((k == "id_hash" && ok) || (k == "comm_hash" && !ok)) continue
			if (k == "id_hash" || k == "comm_hash") k = "communicator_id"
			if (k == "root_or_peer" && v == -1) v = "null"
			if (v ~ /^0x/ || k == "nccl_op" || (k == "redop" && v != "null")) v = "\"" v "\""
			o = o (o == "{" ? "" : ",") "\"" k "\":" v }
		print o "}" }' "$BATS_TEST_TMPDIR/args.out" > "$BATS_TEST_TMPDIR/want.json"
	jq -n -e --slurpfile w "$BATS_TEST_TMPDIR/want.json" --slurpfile o "$BATS_TEST_TMPDIR/e.out" '
		def redop: {"0":"sum","1":"prod","2":"max","3":"min","4":"avg"}[. // "x" | tostring];
		[$o[] | select(.type == "event" and .event == "call" and .nccl_op != "destroy")] as $ev |
		($ev | length) == ($w | length) and
		all(range(0; $w | length); . as $i | $w[$i] as $x | $ev[$i] as $e |
			(all($x | to_entries[] | select(.key != "redop"); .value == $e[.key]) and
			 (($x.redop | redop) == $e.redop)) or
			(("want " + ($x | tojson) + " got " + ($e | tojson)) | debug | false))'
	# the events name the caller
	jq -e -s 'all(.[] | select(.type == "event"); .comm == "ncclrank" and .pid > 0 and .tid > 0)' \
		"$BATS_TEST_TMPDIR/e.out"
}

@test "nclstat --list-probes shows a library of a hostile file name sanitised" {
	local lib=$BATS_TEST_TMPDIR/$HOSTILE_NAME.so
	cp "$DOUBLE" "$lib"
	"$BIN/nclstat" --list-probes --lib "$lib" > "$BATS_TEST_TMPDIR/plan"
	cat -v "$BATS_TEST_TMPDIR/plan"
	check_sanitised "$BATS_TEST_TMPDIR/plan"
	grep -qE "^ncclAllReduce +uprobe +$(printf '%s' "$BATS_TEST_TMPDIR/$HOSTILE_SHOWN" | sed 's/[][?.]/\\&/g')\.so\+0x[0-9a-f]+ +chosen" \
		"$BATS_TEST_TMPDIR/plan"
}

@test "nclstat decodes every argument of calls into the real libnccl.so.2 (rc 4 with a NULL communicator)" {
	need_root
	real_nccl
	check_args "$REAL_NCCL" "$(dirname "$REAL_NCCL")"
	# NULL communicator: ncclInvalidArgument; init without a GPU fails too
	jq -e -s '[.[] | select(.type == "event" and .event == "call")] |
		all(.[] | select(.nccl_op | startswith("init_rank") | not); .rc == 4) and
		any(.[]; .nccl_op == "init_rank" and .rc != 0) and
		any(.[]; .nccl_op == "init_rank_scalable" and .rc != 0)' \
		"$BATS_TEST_TMPDIR/e.out"
}

# where GNU objdump's disassembly of FUNC in LIB loads the int it stores
# through its second argument: mov DISP(%reg),%eNN then, within three
# instructions, mov %eNN,(%reg) (an independent reading of the code)
objdump_int_load() {
	local lib=$1 fn=$2 start
	start=$(nm -D --defined-only "$lib" | awk -v f="$fn" '$3 == f {print $1; exit}')
	[ -n "$start" ] || return 1
	objdump -d --no-show-raw-insn --start-address=0x"$start" \
		--stop-address=$(printf '0x%x' $((0x$start + 2048))) "$lib" | awk '
		match($0, /mov +0x[0-9a-f]+\(%r[0-9a-z]+\),%(e[a-z][a-z]|r[0-9]+d)$/) {
			split(substr($0, RSTART), a, /[ (),]+/); disp = a[2]; reg = a[4]; left = 3; next }
		left && --left >= 0 && $0 ~ ("mov +" reg ",\\(%r[0-9a-z]+\\)$") { print disp; exit }'
}

@test "nclstat reads the communicator layout of the real libnccl.so.2 from its code, as objdump reads it" {
	need_root
	real_nccl
	command -v objdump > /dev/null || skip "no objdump (binutils)"
	local rank nranks
	rank=$(objdump_int_load "$REAL_NCCL" ncclCommUserRank)
	nranks=$(objdump_int_load "$REAL_NCCL" ncclCommCount)
	echo "objdump: rank at $rank, nRanks at $nranks"
	[ -n "$rank" ] && [ $((nranks)) -eq $((rank + 4)) ]
	run timeout 10 "$BIN/nclstat" -j -d 0.3s --lib "$REAL_NCCL"
	echo "$output" | grep -F "nclstat: communicators read at $(printf '0x%x' $((rank - 8))) (commHash, rank, nRanks) as NCCL $(strings "$REAL_NCCL" | sed -n 's/^NCCL version \([^ ]*\)$/\1/p' | head -1) keeps them"
}

@test "nclstat decodes every argument of calls into the test double" {
	need_root
	check_args "$DOUBLE" "$NCCL_DIR"
}

@test "the test double's ABI was checked against the real nccl.h" {
	ls /usr/local/cuda*/include/nccl.h > /dev/null 2>&1 || skip "no real nccl.h on this machine"
	# built only where the header is: its static asserts passed
	[ -e "$NCCL_DIR/nccl_abi_check.o" ]
}

# ---- four ranks against the double: exact statistics ----

@test "nclstat: calls, bytes and message size statistics per rank and op equal what four ranks did" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out main
	start_tool s nclstat -j -i 60s --lib "$DOUBLE"
	start_ranks r -r 4 -i 4
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	all_json "$out"
	ncl_check_truth "$BATS_TEST_TMPDIR/r.out" "$out"
	main=$(awk '$1 == "comm_hash" {print $2}' "$BATS_TEST_TMPDIR/r.out")
	# AllReduce: 1024 and 3000 float32 alternating: sizes 4096, 12000, 4096, 12000
	jq -e -s --arg h "$main" '[.[] | select(.row == "op" and .nccl_op == "allreduce" and .communicator_id == $h)] |
		length == 4 and all(.calls == 4 and .bytes == 32192 and .size_mean_bytes == 8048 and
			.size_stddev_bytes == 3952 and .size_p50_bytes == 4096 and .size_p99_bytes == 12000 and
			.size_max_bytes == 12000 and .size_exact and .datatypes == {"float32": 4} and
			.redops == ["sum"] and .nranks == 4 and .errors == 0 and .latency_avg_ns > 0 and
			((.busbw_estimate_bytes_per_sec - .bytes_per_sec * 1.5) | fabs) < 0.01) and
		([.[].rank] | sort) == [0, 1, 2, 3]' "$out"
	jq -e -s --arg h "$main" '[.[] | select(.row == "op" and .communicator_id == $h)] |
		(map(select(.nccl_op == "reducescatter")) | all(.datatypes == {"int32": 4} and .redops == ["max"] and
			.size_stddev_bytes == 0 and ((.busbw_estimate_bytes_per_sec - .bytes_per_sec * 3) | fabs) < 0.01)) and
		(map(select(.nccl_op == "reduce")) | all(.datatypes == {"float64": 4} and .redops == ["prod"])) and
		(map(select(.nccl_op == "allgather")) | all(.datatypes == {"bfloat16": 4} and .redops == [])) and
		(map(select(.nccl_op == "send" or .nccl_op == "recv")) | length == 8 and all(.datatypes == {"int64": 4}))' "$out"
	# each rank's process, its rank in the communicator, and the calls outside collectives
	jq -e -s '[.[] | select(.row == "op")] as $r |
		($r | map(select(.nccl_op == "groupend")) | length == 4 and all(.calls == 4 and .communicator_handle == null)) and
		($r | map(select(.nccl_op == "init_rank")) | length == 4 and all(.calls == 1 and .errors == 0)) and
		($r | map(select(.nccl_op == "split")) | all(.calls == 1)) and
		($r | map(select(.nccl_op == "destroy")) | all(.calls == 2))' "$out"
	for r in 0 1 2 3; do
		jq -e -s --arg h "$main" --argjson p "${RANK_PID[r]}" --argjson r "$r" \
			'[.[] | select(.row == "op" and .communicator_id == $h and .pid == $p)] | length == 7 and all(.rank == $r)' "$out"
	done
	# the split communicators: two of two ranks each, joined across processes
	jq -e -s '[.[] | select(.row == "communicator" and .created_by == "split")] |
		length == 2 and all(.local_ranks == 2 and .skew_ops == 0 and .seq_max == 4)' "$out"
	jq -e -s --arg h "$main" '[.[] | select(.row == "communicator" and .communicator_id == $h)] |
		length == 1 and .[0].local_ranks == 4 and .[0].nranks == 4 and .[0].seq_min == 20 and
		.[0].skew_ops == 0 and .[0].lagging_rank == null and .[0].created_by == "init_rank"' "$out"
	# every rank's identity read from its communicator, the library's version named
	jq -e -s '[.[] | select(.row == "communicator")] | length == 3 and
		all(.nccl_version == "2.28.9+double" and all(.ranks[]; .identity == "memory"))' "$out"
	grep -q 'communicators read at 0x3050 (commHash, rank, nRanks) as NCCL 2.28.9+double keeps them' \
		"$BATS_TEST_TMPDIR/s.err"
	jq -e -s '.[-1].type == "summary" and .[-1].calls == 160 and .[-1].bytes == 264960 and
		.[-1].errors == 0 and .[-1].hangs == 0 and .[-1].lost_events == 0' "$out"
}

# ---- a lagging rank and a hung call ----

@test "nclstat: rank skew names the lagging rank and its last op; a hung call is reported" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out prom=$BATS_TEST_TMPDIR/n.prom main
	start_tool s nclstat -j -i 300ms --hang 1s --lib "$DOUBLE" --prometheus "$prom"
	# rank 1 stops before iteration 1 (after 5 collectives); rank 2's 10th call
	# on its communicator (ReduceScatter of iteration 1) blocks; every rank
	# holds before destroying its communicators
	FAKE_NCCL_HANG=2:10 start_ranks r -r 4 -i 4 -l 1:1 -b
	wait_for "$BATS_TEST_TMPDIR/r.out" '^holding 0 ' 30
	wait_for "$BATS_TEST_TMPDIR/r.out" '^holding 3 ' 30
	wait_for "$BATS_TEST_TMPDIR/r.out" '^lagging 1 ' 30
	# the interval that reports the hang sees every rank where it stopped
	wait_for "$out" '"event":"hang"' 30
	main=$(awk '$1 == "comm_hash" {print $2}' "$BATS_TEST_TMPDIR/r.out")
	jq -e -s --arg h "$main" --argjson lag "${RANK_PID[1]}" '
		[.[] | select(.row == "communicator" and .communicator_id == $h and .hung_calls == 1)] | last |
		.local_ranks == 4 and .seq_max == 20 and .seq_min == 5 and .skew_ops == 15 and
		.lagging_rank == 1 and .lagging_pid == $lag and .lagging_tid == $lag and
		.lagging_last_op == "reduce" and .lagging_last_count == 100 and
		.lagging_last_datatype == "float64" and
		([.ranks[] | {rank, op_seq}] == [{"rank":0,"op_seq":20},{"rank":1,"op_seq":5},
			{"rank":2,"op_seq":8},{"rank":3,"op_seq":20}])' "$out"
	jq -e -s --arg h "$main" --argjson p "${RANK_PID[2]}" '
		[.[] | select(.type == "event" and .event == "hang")] | length == 1 and
		(.[0] | .pid == $p and .tid == $p and .nccl_op == "reducescatter" and .count == 512 and
			.datatype == "int32" and .bytes == 2048 and .redop == "max" and .communicator_id == $h and
			.rank == 2 and .nranks == 4 and .rc == null and .latency_ns == null and
			.waiting_ns >= 1000000000)' "$out"
	# the host gauges of --prometheus, one interval later
	sleep 0.7
	grep -x 'aiscope_nclstat_hung_calls 1' "$prom"
	grep -x 'aiscope_nclstat_rank_skew_ops 15' "$prom"
	# each local rank's progress in the job's communicator, as the JSON's
	# ranks have it: rank 1 behind at 5, the hung rank 2 at 8
	local r seq
	for r in 0:20 1:5 2:8 3:20; do
		seq=${r#*:} r=${r%:*}
		grep -x "aiscope_nclstat_rank_op_seq{host=\"$(uname -n)\",communicator_id=\"$main\",rank=\"$r\",nranks=\"4\",pid=\"${RANK_PID[r]}\",comm=\"ncclrank\"} $seq" "$prom"
		grep -E "^aiscope_nclstat_rank_last_enqueue_timestamp_seconds\{host=\"[^\"]*\",communicator_id=\"$main\",rank=\"$r\",.*\} 1[0-9]{9}(\.[0-9]+)?\$" "$prom"
	done
	# release the hung call and the lagging rank, then every rank
	kill -USR2 "${RANK_PID[2]}"
	kill -USR1 "${RANK_PID[1]}"
	wait_for "$BATS_TEST_TMPDIR/r.out" '^holding 1 ' 30
	wait_for "$BATS_TEST_TMPDIR/r.out" '^holding 2 ' 30
	kill -USR1 "${RANK_PID[@]}"
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	sleep 0.5
	stop_tool "$TOOL_PID"
	all_json "$out"
	# the hung call counted once, when it returned; nothing lost
	ncl_check_truth "$BATS_TEST_TMPDIR/r.out" "$out"
	jq -e -s '.[-1].type == "summary" and .[-1].hangs == 1 and .[-1].calls == 160' "$out"
	# after the hang ended, no interval reports it
	jq -e -s '[.[] | select(.row == "communicator")] | last | .hung_calls == 0' "$out"
	# the counters of --prometheus add up to the driver's calls and bytes
	grep -x 'aiscope_nclstat_hung_calls 0' "$prom"
	grep -E '^aiscope_nclstat_calls_total\{.*op="allreduce"\} 32$' "$prom"
	grep -E '^aiscope_nclstat_issued_bytes_total\{.*op="allreduce"\} 129280$' "$prom"
	grep -E '^aiscope_nclstat_issued_bytes_total\{.*op="reducescatter"\} 32768$' "$prom"
	grep -E '^aiscope_nclstat_enqueue_latency_seconds_count\{.*op="groupend"\} 16$' "$prom"
	# allreduce's message sizes: 16 of 32 bytes (the split communicator's
	# float16 x 16), 8 of 4096 (float32 x 1024) and 8 of 12000 (x 3000)
	for b in 63:16 4095:16 8191:24 16383:32 '\+Inf:32'; do
		grep -E "^aiscope_nclstat_message_size_bytes_bucket\{.*op=\"allreduce\",le=\"${b%:*}\"\} ${b#*:}\$" "$prom"
	done
	grep -E '^aiscope_nclstat_message_size_bytes_sum\{.*op="allreduce"\} 129280$' "$prom"
	if command -v promtool > /dev/null; then promtool check metrics < "$prom"; fi
}

@test "nclstat: per collective, the rank that arrives last and by how much; the ranks a collective waits for" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out main
	start_tool s nclstat -j -i 300ms --hang 1s --lib "$DOUBLE"
	# blocking collectives (FAKE_NCCL_SYNC): every collective of the main
	# communicator waits for all four ranks, and rank 2 enters each 30 ms
	# after the others; rank 1 stops before iteration 2 (after 10)
	FAKE_NCCL_SYNC=1 start_ranks r -r 4 -i 4 -d 2:30000 -l 1:2 -b
	wait_for "$BATS_TEST_TMPDIR/r.out" '^lagging 1 ' 30
	main=$(awk '$1 == "comm_hash" {print $2}' "$BATS_TEST_TMPDIR/r.out")
	# the others wait in collective 11 for rank 1 (rank 2 arrives 30 ms late)
	wait_for "$out" '"waiting_ranks":\[1\]' 30
	jq -e -s --arg h "$main" --argjson p1 "${RANK_PID[1]}" '[.[] | select(.row == "communicator" and .communicator_id == $h and
		.waiting_ranks != null)] | last | .waiting_seq == 11 and .waiting_ranks == [1] and
		.waiting_ns >= 1000000000 and .waiting_pids == [$p1] and .arrival_aligned' "$out"
	kill -USR1 "${RANK_PID[1]}"
	finish_ranks
	jq -c --arg h "$main" 'select(.row == "communicator" and .communicator_id == $h) |
		{arrival_seqs, arrival_skew_p50_ns, arrival_skew_max_ns, straggler_rank,
		 straggler_last_arrivals, waiting_seq, waiting_ranks}' "$out"
	# 20 collectives paired, each once; rank 2 came last to every one of
	# them but collective 11 (rank 1, 1 s behind the first, less rank 2's
	# 30 ms behind the one before it) and was behind
	# the one before it by its 30 ms (less the others' wake-up from the last
	# collective, which it left first; plus sleep granularity: 25 to 40 ms)
	jq -e -s --arg h "$main" --argjson p2 "${RANK_PID[2]}" '
		[.[] | select(.row == "communicator" and .communicator_id == $h)] |
		(map(.arrival_seqs) | add) == 20 and
		(map(.ranks[] | select(.rank == 2) | .last_arrivals) | add) == 19 and
		(map(.ranks[] | select(.rank == 1) | .last_arrivals) | add) == 1 and
		(map(.ranks[] | select(.rank == 0 or .rank == 3) | .last_arrivals) | add) == 0 and
		(map(.ranks[] | select(.rank == 1) | .lag_ns) | add) >= 1000000000 - 40000000 and
		(map(.ranks[] | select(.rank == 2) | .lag_ns) | add) >= 19 * 25000000 and
		(map(.ranks[] | select(.rank == 2) | .lag_ns) | add) < 19 * 40000000 and
		([.[] | select(.arrival_seqs > 0 and .straggler_rank == 2)] | length > 0) and
		all(.[] | select(.straggler_rank == 2); .straggler_pid == $p2)' "$out"
	# the skew of a collective rank 2 alone was late to: 25 to 40 ms
	jq -e -s --arg h "$main" '[.[] | select(.row == "communicator" and .communicator_id == $h and
		.arrival_seqs > 0 and .straggler_rank == 2 and .straggler_last_arrivals == .arrival_seqs)] |
		length > 0 and all(.arrival_skew_p50_ns >= 25000000 and .arrival_skew_p50_ns < 40000000)' "$out"
	# the split communicators (ranks not known to nclstat: paired by process):
	# each of their 4 collectives once, in each of the two
	jq -e -s '[.[] | select(.row == "communicator" and .created_by == "split")] |
		group_by(.communicator_id) | length == 2 and
		all(map(.arrival_seqs) | add == 4)' "$out"
	jq -e -s '.[-1].type == "summary" and .[-1].arrivals_expired == 0 and .[-1].lost_events == 0' "$out"
}

@test "nclstat started after a rank is stuck inside NCCL: the call found on its stack, a hang after --hang, gone once it returns" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out r main split0
	# rank 2 blocks in its 10th call (ReduceScatter); the others finish and
	# hold outside NCCL, their stacks with old NCCL return addresses on them
	FAKE_NCCL_HANG=2:10 start_ranks r -r 4 -i 4 -b
	for r in 0 1 3; do wait_for "$BATS_TEST_TMPDIR/r.out" "^holding $r " 30; done
	sleep 0.3
	# the table marks it: entered before nclstat started; its communicator
	# found on the stack, read: NCCL's commHash and the rank
	main=$(awk '$1 == "comm_hash" {print $2}' "$BATS_TEST_TMPDIR/r.out")
	run timeout 10 "$BIN/nclstat" -i 500ms --hang 1s -d 1.7s --lib "$DOUBLE"
	echo "$output"
	echo "$output" | grep -E "^ +${RANK_PID[2]} +${RANK_PID[2]} ncclrank +reducescatter\* +- +- +$(printf %016x "$main") +2 "
	# and no other thread: the holding ranks are not inside NCCL
	[ -z "$(echo "$output" | grep -E '^ +[0-9]+ +[0-9]+ .*[a-z]\* ' |
		grep -vE "^ +${RANK_PID[2]} +${RANK_PID[2]} ncclrank +reducescatter\* ")" ]
	start_tool s nclstat -j -i 300ms --hang 1s --lib "$DOUBLE"
	wait_for "$out" '"event":"hang"' 30
	sleep 0.7
	jq -e -s --argjson p "${RANK_PID[2]}" --arg h "$main" '[.[] | select(.type == "event" and .event == "hang")] |
		length == 1 and (.[0] | .pid == $p and .tid == $p and .nccl_op == "reducescatter" and
		.found_by == "stack" and .count == null and .communicator_id == $h and .rank == 2 and
		.nranks == 4 and .identity == "memory" and .communicator_handle != null and
		.waiting_ns >= 1000000000)' "$out"
	# its communicator is named with rank 2 in it; so are the idle ranks of
	# it and of the split ones (found in their memory at start), from the
	# first interval on
	jq -e -s --argjson p "${RANK_PID[2]}" --arg h "$main" '[.[] | select(.row == "communicator" and
		.communicator_id == $h)] | length > 0 and all(.nranks == 4 and .created_by == "seen" and
		.nccl_version == "2.28.9+double" and any(.ranks[]; .rank == 2 and .pid == $p and
		.identity == "memory") and ([.ranks[].rank] | sort) == [0, 1, 2, 3])' "$out"
	split0=$(awk '$1 == "split_comm_hash" && $2 == 0 {print $3}' "$BATS_TEST_TMPDIR/r.out")
	jq -e -s --arg h "$split0" --argjson p0 "${RANK_PID[0]}" --argjson p2 "${RANK_PID[2]}" '
		[.[] | select(.row == "communicator" and .seq == 1)] as $first |
		($first | map(.communicator_id) | unique | length) == 3 and
		($first[] | select(.communicator_id == $h) | [.ranks[].pid] | sort) == ([$p0, $p2] | sort)' "$out"
	# released, the call returns; rank 2's later calls go through the probes
	kill -USR2 "${RANK_PID[2]}"
	finish_ranks
	jq -e -s --argjson p "${RANK_PID[2]}" '.[-1].type == "summary" and .[-1].hangs == 1 and
		([.[] | select(.row == "op" and .pid == $p and .nccl_op == "reducescatter") | .calls] |
		 add) == 2' "$out"
}

@test "nclstat started in the middle of a job: its communicators named from their memory, the straggler and the rank a collective waits for" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out main
	# blocking collectives; rank 2 enters each of the main communicator's
	# 30 ms after the others; rank 1 stops before iteration 16
	FAKE_NCCL_SYNC=1 start_ranks r -r 4 -i 30 -d 2:30000 -l 1:16 -b
	main=$(awk '$1 == "comm_hash" {print $2}' "$BATS_TEST_TMPDIR/r.out")
	# nclstat starts some iterations in: no call that made a communicator seen
	sleep 0.8
	start_tool s nclstat -j -i 300ms --hang 1s --lib "$DOUBLE"
	wait_for "$BATS_TEST_TMPDIR/r.out" '^lagging 1 ' 30
	wait_for "$out" '"waiting_ranks":\[1\]' 30
	jq -e -s --arg h "$main" '[.[] | select(.row == "communicator" and .communicator_id == $h)] |
		length > 0 and all(.created_by == "seen" and .nranks == 4 and .local_ranks == 4 and
		.nccl_version == "2.28.9+double" and ([.ranks[].rank] | sort) == [0, 1, 2, 3] and
		all(.ranks[]; .identity == "memory"))' "$out"
	# every collective paired is rank 2's, 20-60 ms behind the rank before it
	jq -e -s --arg h "$main" --argjson p2 "${RANK_PID[2]}" '[.[] | select(.row == "communicator" and
		.communicator_id == $h and .arrival_seqs > 0)] | length > 0 and
		all(.straggler_rank == 2 and .straggler_pid == $p2 and
		.straggler_last_arrivals == .arrival_seqs and
		.straggler_lag_ns >= 20000000 * .arrival_seqs and .straggler_lag_ns <= 60000000 * .arrival_seqs)' "$out" ||
		{ jq -c --arg h "$main" 'select(.row == "communicator" and .communicator_id == $h) |
			{seq, arrival_seqs, straggler_rank, straggler_lag_ns, waiting_ranks,
			 ranks: [.ranks[] | {rank, op_seq, last_arrivals, lag_ns}]}' "$out"; false; }
	jq -e -s --arg h "$main" --argjson p1 "${RANK_PID[1]}" '[.[] | select(.row == "communicator" and
		.communicator_id == $h and .waiting_ranks != null)] | last |
		.waiting_ranks == [1] and .waiting_pids == [$p1] and .waiting_ns >= 1000000000' "$out"
	kill -USR1 "${RANK_PID[1]}"
	finish_ranks
}

# scalable_shrink FROM: the communicators of -S -k named as FROM says
# ("memory": NCCL's commHash read from them; "arguments": nclstat's hash of
# the unique id and of the excluded ranks, from the calls' arguments)
scalable_shrink() {
	local out=$BATS_TEST_TMPDIR/s.out main shr from=$1
	start_tool s nclstat -j -i 300ms --lib "${NCCL_LIBDIR:-$NCCL_DIR}/libnccl.so.2"
	# the main communicator made with ncclCommInitRankScalable; then ranks
	# 0-2 shrink it without rank 3 and make one AllReduce on the new one
	start_ranks r -r 4 -i 1 -S -k -b
	finish_ranks
	if [ "$from" = memory ]; then
		main=$(awk '$1 == "comm_hash" {print $2}' "$BATS_TEST_TMPDIR/r.out")
		shr=$(awk '$1 == "shrink_comm_hash" {print $2}' "$BATS_TEST_TMPDIR/r.out")
	else
		main=$(awk '$1 == "id_hash" {print $2}' "$BATS_TEST_TMPDIR/r.out")
		shr=$(awk '$1 == "shrink_hash" {print $2}' "$BATS_TEST_TMPDIR/r.out")
	fi
	jq -e -s --arg h "$main" --arg f "$from" '[.[] | select(.row == "communicator" and .communicator_id == $h)] |
		length > 0 and all(.created_by == "init_rank_scalable" and .nranks == 4 and
		.local_ranks == 4 and ([.ranks[].rank] | sort) == [0, 1, 2, 3] and
		all(.ranks[]; .identity == $f))' "$out"
	# the shrunk one: 3 ranks numbered 0-2, each rank's AllReduce of 32 bytes
	jq -e -s --arg h "$shr" --argjson p0 "${RANK_PID[0]}" --argjson p1 "${RANK_PID[1]}" \
		--argjson p2 "${RANK_PID[2]}" '
		[.[] | select(.row == "communicator" and .communicator_id == $h)] |
		length > 0 and all(.created_by == "shrink" and .nranks == 3 and .local_ranks == 3 and
		([.ranks[] | {rank, pid}] | sort_by(.rank)) ==
			[{"rank":0,"pid":$p0},{"rank":1,"pid":$p1},{"rank":2,"pid":$p2}])' "$out"
	jq -e -s --arg h "$shr" '[.[] | select(.row == "op" and .communicator_id == $h and
		.nccl_op == "allreduce")] | (map(.calls) | add) == 3 and (map(.bytes) | add) == 96' "$out"
	jq -e -s '[.[] | select(.row == "op" and .nccl_op == "shrink")] | (map(.calls) | add) == 3 and
		all(.errors == 0)' "$out"
}

@test "nclstat: communicators of ncclCommInitRankScalable and ncclCommShrink named, with their ranks and size" {
	need_root
	scalable_shrink memory
}

@test "nclstat: a library whose communicators it cannot read: their identity from the calls that made them" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out
	NCCL_LIBDIR=$OPAQUE_DIR scalable_shrink arguments
	grep -q "communicators not read (no known accessor code)" "$BATS_TEST_TMPDIR/s.err"
	jq -e -s 'all(.[] | select(.row == "communicator"); .nccl_version == null)' "$out"
	# the statistics of every rank and op, joined by the unique id's hash
	out=$BATS_TEST_TMPDIR/s2.out
	start_tool s2 nclstat -j -i 60s --lib "$OPAQUE_DIR/libnccl.so.2"
	NCCL_LIBDIR=$OPAQUE_DIR start_ranks r2 -r 4 -i 4
	wait_for "$BATS_TEST_TMPDIR/r2.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	all_json "$out"
	ncl_check_truth "$BATS_TEST_TMPDIR/r2.out" "$out" arguments
}

# ---- NCCL's RAS service (a stand-in: RAS runs inside a NCCL job, which
# needs GPUs; tests/helpers/fakeras speaks its protocol and answers with a
# document in NCCL 2.28's JSON format) ----

@test "nclstat --ras: every communicator NCCL's RAS gathered, on every host: ranks, collectives, the rank behind, the missing ones" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out doc=$BATS_TEST_DIRNAME/fixtures/ras/status.json port
	start_bg ras "$AISCOPE_BUILD/tests/helpers/fakeras" "$BATS_TEST_TMPDIR/port" "$doc"
	wait_for "$BATS_TEST_TMPDIR/port" '^[0-9]'
	port=$(cat "$BATS_TEST_TMPDIR/port")
	timeout 10 "$BIN/nclstat" -j -i 500ms -d 2.6s --ras "127.0.0.1:$port" --ras-every 1s --lib "$DOUBLE" \
		> "$out" 2> "$BATS_TEST_TMPDIR/s.err"
	all_json "$out"
	grep -q "NCCL RAS at 127.0.0.1:$port answers" "$BATS_TEST_TMPDIR/s.err"
	# the handshake of NCCL's own client, then one document per query
	[ "$(grep -c '^cmd ' "$BATS_TEST_TMPDIR/ras.out")" -ge 8 ]
	[ "$(grep '^cmd ' "$BATS_TEST_TMPDIR/ras.out" | head -4 | tr '\n' '|')" = \
		"cmd CLIENT PROTOCOL 2|cmd TIMEOUT 5|cmd SET FORMAT json|cmd STATUS|" ]
	n=$(grep -c '^status ' "$BATS_TEST_TMPDIR/ras.out")
	[ "$n" -ge 2 ]
	jq -e -s --argjson n "$n" '.[-1].type == "summary" and .[-1].ras_answers == $n' "$out"
	# each answer printed once, exactly as the document says (its sums per rank)
	jq -e -s --slurpfile d "$doc" '[.[] | select(.row == "ras_communicator")] as $r |
		($r | length) >= 2 and ($r | length) % 2 == 0 and
		all($r[]; .nccl_version == "2.28.9") and
		all($r[]; . as $x | $d[0].communicators[] | select(.hash == $x.communicator_id) |
			$x.nranks == .size and
			($x.ranks | map({rank, host, pid, collectives})) ==
				(.ranks | map({rank, host, pid, collectives: (.collective_counts | add)})) and
			($x.missing_ranks | map({rank, host, pid, unresponsive, considered_dead})) ==
				(.missing_ranks | map({rank, host, pid} + .status)))' "$out"
	jq -e -s '[.[] | select(.row == "ras_communicator" and .communicator_id == "0xe9d8dab70e220282")] |
		all(.behind_rank == 1 and .behind_pid == 4101 and .behind_host == "node-a" and
		    .collectives_min == 138 and .collectives_max == 142 and
		    (.ranks[] | select(.rank == 3) | .abort_flag and .async_error == 5))' "$out"
	jq -e -s '[.[] | select(.row == "ras_communicator" and .communicator_id == "0x22aed1920f46c5b5")] |
		all(.behind_rank == null and .ranks[0].destroy_flag)' "$out"
	# the table names the rank behind and the one missing
	run timeout 10 "$BIN/nclstat" -i 500ms -d 1.2s --ras "127.0.0.1:$port" --lib "$DOUBLE"
	echo "$output" | grep -E '^  e9d8dab70e220282 4 ranks, 3 answered, 1 missing; rank 1 \(pid 4101 on node-a\) behind: 138 collectives against 142; rank 2 \(pid 7299 on node-b\) unresponsive$'
}

@test "nclstat --ras: a NCCL without RAS's JSON (before 2.28.7) said once; nothing listening said nothing" {
	need_root
	local port
	start_bg ras "$AISCOPE_BUILD/tests/helpers/fakeras" "$BATS_TEST_TMPDIR/port" \
		"$BATS_TEST_DIRNAME/fixtures/ras/status.json" text
	wait_for "$BATS_TEST_TMPDIR/port" '^[0-9]'
	port=$(cat "$BATS_TEST_TMPDIR/port")
	timeout 10 "$BIN/nclstat" -j -i 400ms -d 2.1s --ras "127.0.0.1:$port" --ras-every 1s --lib "$DOUBLE" \
		> "$BATS_TEST_TMPDIR/s.out" 2> "$BATS_TEST_TMPDIR/s.err"
	[ "$(grep -c "NCCL RAS at 127.0.0.1:$port does not answer in JSON (NCCL before 2.28.7)" "$BATS_TEST_TMPDIR/s.err")" -eq 1 ]
	[ -z "$(grep ras_communicator "$BATS_TEST_TMPDIR/s.out")" ]
	jq -e -s '.[-1].ras_answers == 0' "$BATS_TEST_TMPDIR/s.out"
	# a port nobody listens on (the port of the stand-in, stopped)
	kill "$BG_PID"
	wait "$BG_PID" 2> /dev/null || true
	timeout 10 "$BIN/nclstat" -j -i 400ms -d 1s --ras "127.0.0.1:$port" --lib "$DOUBLE" \
		> "$BATS_TEST_TMPDIR/s2.out" 2> "$BATS_TEST_TMPDIR/s2.err"
	[ -z "$(grep -i ras "$BATS_TEST_TMPDIR/s2.err")" ]
	jq -e -s '.[-1].ras_answers == 0' "$BATS_TEST_TMPDIR/s2.out"
}

@test "nclstat: a rank killed inside a call leaves no hang and no communicator behind" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out n
	start_tool s nclstat -j -i 300ms --hang 500ms --lib "$DOUBLE"
	FAKE_NCCL_HANG=2:3 start_ranks r -r 4 -i 2 -b
	wait_for "$out" '"event":"hang"' 30
	kill -KILL "${RANK_PID[2]}"
	n=$(wc -l < "$out")
	sleep 1.2
	# the intervals after the kill: rank 2 is gone from the communicator
	tail -n +$((n + 1)) "$out" > "$BATS_TEST_TMPDIR/after"
	kill -USR1 "${RANK_PID[0]}" "${RANK_PID[1]}" "${RANK_PID[3]}"
	stop_tool "$TOOL_PID"
	jq -e -s --argjson p "${RANK_PID[2]}" '[.[] | select(.row == "communicator")] | length > 0 and
		(last | all(.ranks[]; .pid != $p)) and all(.hung_calls == 0)' "$BATS_TEST_TMPDIR/after"
}

# ---- latency ----

@test "nclstat: ncclGroupEnd latency covers the time spent in it" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out
	start_tool s nclstat -j -i 60s --lib "$DOUBLE"
	FAKE_NCCL_GROUPEND_US=20000 start_ranks r -r 2 -i 5
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	# each ncclGroupEnd slept 20 ms; collectives took microseconds
	jq -e -s '[.[] | select(.row == "op" and .nccl_op == "groupend")] | length == 2 and
		all(.calls == 5 and .latency_avg_ns >= 20000000 and .latency_p50_ns >= 18750000 and
			.latency_max_ns < 1000000000)' "$out"
	jq -e -s '[.[] | select(.row == "op" and .nccl_op == "allreduce")] | all(.latency_max_ns < 20000000)' "$out"
}

# ---- modes ----

@test "nclstat --no-return: calls and bytes exact, no rc or latency" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out
	start_tool s nclstat -j -i 60s --no-return --lib "$DOUBLE"
	start_ranks r -r 4 -i 3
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	ncl_check_truth "$BATS_TEST_TMPDIR/r.out" "$out"
	jq -e -s '[.[] | select(.row == "op" and .nccl_op == "allreduce")] | length == 8 and
		all(.latency_avg_ns == null and .errors == null)' "$out"
	# communicators still come from the init return probes
	jq -e -s '[.[] | select(.row == "op" and .nccl_op == "reduce")] | all(.rank != null and .nranks == 4)' "$out"
}

@test "nclstat finds libnccl in a process started after it" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out
	start_tool s nclstat -j -i 60s
	start_ranks r -r 4 -i 2 -w
	# this library: other checkouts' tests may run ranks of their own
	wait_for "$BATS_TEST_TMPDIR/s.err" "probing 21 NCCL functions in $(realpath "$DOUBLE")\$" 20
	kill -USR1 "${RANK_PID[@]}"
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	ncl_check_truth "$BATS_TEST_TMPDIR/r.out" "$out"
}

@test "nclstat -p keeps only the chosen rank" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out
	start_ranks r -r 4 -i 2 -w
	start_tool s nclstat -j -i 60s -p "${RANK_PID[3]}" --lib "$DOUBLE"
	kill -USR1 "${RANK_PID[@]}"
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	jq -e -s --argjson p "${RANK_PID[3]}" '[.[] | select(.row == "op")] |
		length == 12 and all(.pid == $p)' "$out"
	jq -e -s '[.[] | select(.row == "communicator")] | all(.local_ranks == 1)' "$out"
}

@test "nclstat --lib on an executable with NCCL linked in statically" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out
	start_tool s nclstat -j -i 60s --lib "$HELPERS/ncclstatic"
	start_bg r "$HELPERS/ncclstatic" run -r 4 -i 4
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	all_json "$out"
	ncl_check_truth "$BATS_TEST_TMPDIR/r.out" "$out"
}

@test "nclstat finds an executable with NCCL linked in, started after it" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out r
	start_tool s nclstat -j -i 60s
	start_bg r "$HELPERS/ncclstatic" run -r 4 -i 3 -w
	wait_for "$BATS_TEST_TMPDIR/r.out" '^ready'
	wait_for "$BATS_TEST_TMPDIR/s.err" "probing 21 NCCL functions in $(realpath "$HELPERS/ncclstatic")\$" 20
	for r in $(awk '$1 == "rank" {print $4}' "$BATS_TEST_TMPDIR/r.out"); do
		kill -USR1 "$r"
	done
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	ncl_check_truth "$BATS_TEST_TMPDIR/r.out" "$out"
}

@test "nclstat --hold: an executable with NCCL linked in, its ranks calling at once, every call from init on" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out
	# a copy: an inode no probe is on before the program runs
	cp "$HELPERS/ncclstatic" "$BATS_TEST_TMPDIR/ncclstatic"
	start_tool s nclstat -j -i 60s --hold --comm ncclstatic
	timeout 30 "$BATS_TEST_TMPDIR/ncclstatic" run -r 4 -i 4 > "$BATS_TEST_TMPDIR/r.out"
	grep -q '^all done, 0 failed' "$BATS_TEST_TMPDIR/r.out"
	stop_tool "$TOOL_PID"
	all_json "$out"
	ncl_check_truth "$BATS_TEST_TMPDIR/r.out" "$out"
	# stopped at its exec (the ranks are its forks), continued
	jq -e -s '.[-1] | .type == "summary" and .held >= 1 and .hold_max_ns > 0 and
		.hold_max_ns < 1000000000' "$out"
}

@test "nclstat -e table: one line per call with the decoded arguments" {
	need_root
	start_tool e nclstat -e --lib "$DOUBLE"
	LD_LIBRARY_PATH=$NCCL_DIR "$RANKS" run -r 1 -i 1 > "$BATS_TEST_TMPDIR/r.out"
	sleep 0.5
	stop_tool "$TOOL_PID"
	[[ "$(head -1 "$BATS_TEST_TMPDIR/e.out")" == *PID*TID*COMM*OP*COUNT*DTYPE*BYTES*REDOP*PEER*COMM_HASH*RANK*NRANKS*RC*"LAT(us)"* ]]
	grep -E ' allreduce +1024 f32 +4096 sum +- +[0-9a-f]{16} +0 +1 +0 ' "$BATS_TEST_TMPDIR/e.out"
	grep -E ' reduce +100 f64 +800 prod +0 ' "$BATS_TEST_TMPDIR/e.out"
	grep -E ' init_rank +- +- +- +- +- +[0-9a-f]{16} +0 +1 +0 ' "$BATS_TEST_TMPDIR/e.out"
}

@test "nclstat -e table: a hostile comm sanitised, on its own line" {
	need_root
	hostile_exe "$RANKS"
	start_tool e nclstat -e --lib "$DOUBLE"
	LD_LIBRARY_PATH=$NCCL_DIR "$HOSTILE_EXE" run -r 1 -i 1 > "$BATS_TEST_TMPDIR/r.out"
	sleep 0.5
	stop_tool "$TOOL_PID"
	cat -v "$BATS_TEST_TMPDIR/e.out"
	check_sanitised "$BATS_TEST_TMPDIR/e.out"
	grep -qE '^ +[0-9]+ +[0-9]+ h\?x\?\[31m\?\?z +allreduce ' "$BATS_TEST_TMPDIR/e.out"
}

@test "nclstat table: communicators, ops and the summary line" {
	need_root
	start_tool s nclstat -i 60s -C --busbw --lib "$DOUBLE"
	start_ranks r -r 4 -i 2
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	grep -E '^# [0-9T:.-]+Z interval=' "$BATS_TEST_TMPDIR/s.out"
	grep -E '^COMM_HASH +NRANKS +LOCAL +SEQ_MIN +SEQ_MAX +SKEW +LAG_RANK' "$BATS_TEST_TMPDIR/s.out"
	grep -E "^$(awk '$1 == "comm_hash" {h = substr($2, 3); while (length(h) < 16) h = "0" h; print h}' \
		"$BATS_TEST_TMPDIR/r.out") +4 +4 +10 +10 +0 " "$BATS_TEST_TMPDIR/s.out"
	grep -E 'PID +COMM +CONTAINER +COMM_HASH +RANK +OP +CALLS/s .*BUSBW_EST\(MiB/s\)' "$BATS_TEST_TMPDIR/s.out"
	grep -E '^# summary: 88 calls, 132480 bytes issued, 0 errors, 0 hangs' "$BATS_TEST_TMPDIR/s.out"
}

# ---- uprobe_multi links, and single uprobes as the fallback ----

@test "nclstat exits within 0.3 s of the end of -d and of SIGINT" {
	need_root
	need_uprobe_multi
	run "$BIN/nclstat" --list-probes --lib "$DOUBLE"
	[[ "$output" == *"chosen: uprobe_multi link"* ]]
	ms=$(wall_ms "$BIN/nclstat" -d 1s --lib "$DOUBLE")
	echo "-d 1s: exec to exit $ms ms"
	grep -q 'probing 21 NCCL functions' "$BATS_TEST_TMPDIR/wall.err"
	[ "$ms" -le 1300 ]
	start_tool s nclstat --lib "$DOUBLE"
	[ "$(link_fds "$TOOL_PID" "u(ret)?probe_multi")" -gt 0 ]
	sigint_ms "$TOOL_PID"
	echo "SIGINT to exit $SIGINT_MS ms"
	[ "$SIGINT_MS" -le 300 ]
}

@test "single uprobes (AISCOPE_TEST_SINGLE_UPROBES=1): the same calls and bytes counted" {
	need_root
	export AISCOPE_TEST_SINGLE_UPROBES=1
	run "$BIN/nclstat" --list-probes --lib "$DOUBLE"
	echo "$output" | grep -E "^ncclAllReduce +uprobe +.*libnccl\.so\.2\+0x[0-9a-f]+ +chosen: single uprobes"
	# a single uprobe's perf event can take seconds to open while others close theirs
	start_bg s "$BIN/nclstat" -i 60s -C --lib "$DOUBLE"
	TOOL_PID=$BG_PID
	wait_for "$BATS_TEST_TMPDIR/s.err" Tracing 120
	[ "$(link_fds "$TOOL_PID" "u(ret)?probe_multi")" -eq 0 ]
	[ "$(perf_fds "$TOOL_PID")" -gt 0 ]
	start_ranks r -r 4 -i 2
	wait_for "$BATS_TEST_TMPDIR/r.out" '^all done, 0 failed' 30
	stop_tool "$TOOL_PID"
	grep -E '^# summary: 88 calls, 132480 bytes issued, 0 errors, 0 hangs' "$BATS_TEST_TMPDIR/s.out"
}
