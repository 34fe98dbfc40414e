#!/usr/bin/env bats
# ipcsnoop: the command-line contract, and end-to-end checks against the
# truth of tests/helpers/ipcload, which moves known bytes and message
# counts between known processes and prints them:
#	truth KIND CHANNEL write|read PID COMM MSGS BYTES

bats_require_minimum_version 1.5.0
load lib

teardown() {
	local rc=0
	aiscope_teardown || rc=$?
	rm -f /tmp/aiscope-ipc-$$*
	return $rc
}

LOAD() {
	"$HELPERS/ipcload" "$@" >> "$BATS_TEST_TMPDIR/truth"
}

# ---- contract ----

@test "ipcsnoop --help lists the shared options and ends with examples" {
	check_help ipcsnoop "${SHARED_OPTS[@]}" --events --kind --usage --version
}

@test "ipcsnoop --usage and --version" {
	check_usage_version ipcsnoop
}

@test "ipcsnoop usage errors exit 2 with one line on stderr and nothing on stdout" {
	local bad=(
		"--bogus" "--kind" "--kind foo" "--kind pipe,,x" "--kind ," "-s nope" "-p abc"
		"-p 999999999" "-i 0" "-n 0" "1 2 3" "--probe-mode foo" "-c /nonexistent"
		"--container zz" "--buffer-size 1" "-e -e -x" "-e --listen 127.0.0.1:0"
	)
	check_usage_errors ipcsnoop "${bad[@]}"
}

@test "ipcsnoop --metric-label refuses the label names its own series have" {
	check_own_metric_labels ipcsnoop kind
}

@test "ipcsnoop without privileges exits 77 and says what is missing" {
	check_no_privilege ipcsnoop
}

@test "ipcsnoop --list-probes: the syscall path, and the unix socket tracepoints" {
	run "$BIN/ipcsnoop" --list-probes
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == HOOK*MECHANISM*TARGET*STATUS ]]
	echo "$output" | grep -E '^sys_enter +(tp_btf|raw_tp|tracepoint|fexit) .*chosen|^ +(tp_btf|raw_tp|tracepoint) +sys_enter .*chosen'
	echo "$output" | grep -E 'sys_exit .*chosen'
	# every hook is listed with its candidates
	for h in sys_enter sys_exit unix_send unix_recv unix_dgram_send unix_dgram_recv unix_seqpacket_send \
		unix_seqpacket_recv pipe_write \
		pipe_read fifo_write fifo_read eventfd_write eventfd_read msgsnd msgrcv mq_timedsend \
		mq_timedreceive; do
		echo "$output" | grep -q "^$h " || { echo "no hook $h"; false; }
	done
	run "$BIN/ipcsnoop" --list-probes -j
	[ "$status" -eq 0 ]
	echo "$output" > "$BATS_TEST_TMPDIR/plan"
	all_json "$BATS_TEST_TMPDIR/plan"
	[ "$(jq -s 'length' "$BATS_TEST_TMPDIR/plan")" -eq 28 ]
	jq -e -s 'all(.[]; .type == "probe" and .tool == "ipcsnoop")' "$BATS_TEST_TMPDIR/plan"
	run "$BIN/ipcsnoop" --list-probes --probe-mode tracepoint
	[ "$status" -eq 0 ]
	[ "$(echo "$output" | grep -c ' tracepoint .*chosen')" -eq 2 ]
}

# ---- end to end: ipcload truth against the tool ----

# every_mechanism: the workload of the exactness tests
every_mechanism() {
	local d=/tmp/aiscope-ipc-$$
	LOAD pipe 40 3000
	LOAD fifo "$d.fifo" 2 25 1500
	LOAD unix-stream "$d.sock" 2 30 2000
	LOAD unix-dgram "$d.dgram" 2 20 300
	LOAD unix-sendto "$d.sendto" 2 15 200
	LOAD unix-sendto "@aiscope-ipc-$$-sendto" 2 6 64
	LOAD unix-seqpacket 15 700
	LOAD msq 2 12 256
	LOAD mq /aiscope-ipc-$$ 2 8 128
	LOAD eventfd 9
	LOAD shm 65536
	LOAD posix-shm /aiscope-ipc-$$ 8192
}

# check_truth OUT: the tool's edges and samples against $BATS_TEST_TMPDIR/truth
check_truth() {
	local out=$1 truth=$BATS_TEST_TMPDIR/truth
	all_json "$out"
	# writers: per (kind, channel, pid) the messages and bytes, exactly,
	# from the edges (shm has no edges: attaches are in the samples)
	awk '$1 == "truth" && $4 == "write" && $2 != "shm" {
		k = $2 " " $3 " " $5 " " $6; m[k] += $7; b[k] += $8 }
		END { for (k in m) print "w", k, m[k], b[k] }' "$truth" | sort > "$BATS_TEST_TMPDIR/want.w"
	jq -r -s '[.[] | select(.type == "edge")] | group_by([.kind, .channel, .src.pid])[] |
		"w \(.[0].kind) \(.[0].channel) \(.[0].src.pid) \(.[0].src.comm) \(map(.msgs) | add) \(map(.bytes) | add)"' \
		"$out" | grep -F -f <(awk '{print "w " $2 " " $3 " "}' "$BATS_TEST_TMPDIR/want.w" | sort -u) \
		| sort > "$BATS_TEST_TMPDIR/got.w" || true
	diff "$BATS_TEST_TMPDIR/want.w" "$BATS_TEST_TMPDIR/got.w"
	# readers: per (kind, channel) the read calls and bytes, and how many
	# (reader, connection) pairs; every reader named is a true one
	awk '$1 == "truth" && $4 == "read" && $2 != "shm" {
		k = $2 " " $3; m[k] += $7; b[k] += $8; n[k]++ }
		END { for (k in m) print "r", k, m[k], b[k], n[k] }' "$truth" | sort > "$BATS_TEST_TMPDIR/want.r"
	jq -r -s '[.[] | select(.type == "sample" and .kind != "shm")] | group_by([.kind, .channel])[] |
		"r \(.[0].kind) \(.[0].channel) \(map(.read_msgs) | add) \(map(.read_bytes) | add) \(map(.readers) | add)"' \
		"$out" | grep -F -f <(awk '{print "r " $2 " " $3 " "}' "$BATS_TEST_TMPDIR/want.r" | sort -u) \
		| sort > "$BATS_TEST_TMPDIR/got.r" || true
	diff "$BATS_TEST_TMPDIR/want.r" "$BATS_TEST_TMPDIR/got.r"
	# the sample totals per channel equal the edges'
	jq -e -s '([.[] | select(.type == "sample" and .kind != "shm") | .bytes] | add) ==
		([.[] | select(.type == "edge") | .bytes] | add)' "$out"
	# each edge's reader is one of the channel's true readers
	awk '$1 == "truth" && $4 == "read" {print $2 " " $3 " " $5}' "$truth" | sort -u > "$BATS_TEST_TMPDIR/readers"
	while read -r kind ch pid; do
		grep -qxF "$kind $ch $pid" "$BATS_TEST_TMPDIR/readers" || {
			echo "edge $kind $ch: reader $pid is not a reader of it"; false; }
	done < <(jq -r 'select(.type == "edge" and .dst.pid != null) | "\(.kind) \(.channel) \(.dst.pid)"' "$out" |
		grep -F -f <(cut -d' ' -f1,2 "$BATS_TEST_TMPDIR/readers" | sed 's/$/ /' | sort -u))
}

# a unix server with two clients: each connection and direction is its own
# channel with exactly its two ends
check_unix_pairs() {
	local out=$1 truth=$BATS_TEST_TMPDIR/truth sock=/tmp/aiscope-ipc-$$.sock srv c
	srv=$(awk -v s="$sock" '$3 == s && $6 == "ipc-srv" {print $5; exit}' "$truth")
	for c in 1 2; do
		c=$(awk -v s="$sock" -v n="ipc-cli$c" '$3 == s && $6 == n {print $5; exit}' "$truth")
		jq -e -s --arg s "$sock" --argjson c "$c" --argjson v "$srv" '
			([.[] | select(.type == "edge" and .channel == $s and .src.pid == $c)] |
				length == 1 and .[0].dst.pid == $v and .[0].read_bytes == .[0].bytes) and
			([.[] | select(.type == "edge" and .channel == $s and .src.pid == $v and .dst.pid == $c)] |
				length == 1 and .[0].read_bytes == .[0].bytes)' "$out"
	done
}

# SysV (shmat/shmdt) and POSIX (shm_open + mmap/munmap): two processes
# attach and detach each segment once
check_shm() {
	local out=$1 id n=0
	for id in $(awk '$2 == "shm" {print $3}' "$BATS_TEST_TMPDIR/truth" | sort -u); do
		jq -e -s --arg id "$id" '[.[] | select(.type == "sample" and .channel == $id)] |
			(map(.attaches) | add) == 2 and (map(.detaches) | add) == 2 and
			(map(.writers) | max) == 2 and all(.kind == "shm" and .bytes == 0)' "$out"
		n=$((n + 1))
	done
	[ "$n" -eq 2 ]
}

run_every_mechanism() {
	start_tool s ipcsnoop -j -i 60 "$@"
	every_mechanism
	stop_tool "$TOOL_PID"
	check_truth "$BATS_TEST_TMPDIR/s.out"
	check_unix_pairs "$BATS_TEST_TMPDIR/s.out"
	check_shm "$BATS_TEST_TMPDIR/s.out"
	tail -1 "$BATS_TEST_TMPDIR/s.out" | jq -e '.type == "summary" and .exit_reason == "signal" and .lost_events == 0'
}

@test "ipcsnoop counts every mechanism exactly: writers, readers, messages, bytes (default plan)" {
	need_root
	run_every_mechanism
}

@test "ipcsnoop counts every mechanism exactly on the raw_tp path" {
	need_root
	run_every_mechanism --probe-mode raw_tp
	tail -1 "$BATS_TEST_TMPDIR/s.out" | jq -e '.probes == "raw_tp"'
}

@test "ipcsnoop counts every mechanism exactly on classic tracepoints (unix sockets by syscalls)" {
	need_root
	run_every_mechanism --probe-mode tracepoint
	tail -1 "$BATS_TEST_TMPDIR/s.out" | jq -e '.probes == "tracepoint"'
}

@test "ipcsnoop table: one row per channel with writer and reader" {
	need_root
	start_tool s ipcsnoop -i 60
	LOAD pipe 10 1000
	stop_tool "$TOOL_PID"
	local ch w r
	ch=$(awk '$2 == "pipe" {print $3; exit}' "$BATS_TEST_TMPDIR/truth")
	w=$(awk '$4 == "write" {print $5; exit}' "$BATS_TEST_TMPDIR/truth")
	r=$(awk '$4 == "read" {print $5; exit}' "$BATS_TEST_TMPDIR/truth")
	grep -E '^ *KIND +CHANNEL +WRITER +READER +MSGS +BYTES +READ_BYTES$' "$BATS_TEST_TMPDIR/s.out"
	grep -E "^ *pipe +$(printf '%s' "$ch" | sed 's/[][]/\\&/g') +$w/ipc-w +$r/ipc-r +10 +10000 +10000$" \
		"$BATS_TEST_TMPDIR/s.out"
	grep -E '^# summary: [0-9]+ channels' "$BATS_TEST_TMPDIR/s.out"
}

# ---- filters ----

@test "ipcsnoop --kind keeps exactly the chosen kinds, still exact" {
	need_root
	start_tool s ipcsnoop -j -i 60 --kind pipe,msq
	LOAD pipe 20 500
	LOAD msq 1 10 100
	"$HELPERS/ipcload" fifo "/tmp/aiscope-ipc-$$.fifo" 1 5 100 > /dev/null
	"$HELPERS/ipcload" unix-seqpacket 5 100 > /dev/null
	"$HELPERS/ipcload" eventfd 3 > /dev/null
	stop_tool "$TOOL_PID"
	jq -e -s '[.[] | select(.type == "sample" or .type == "edge") | .kind] | unique == ["msq", "pipe"]' \
		"$BATS_TEST_TMPDIR/s.out"
	check_truth "$BATS_TEST_TMPDIR/s.out"
}

@test "ipcsnoop --comm keeps only that process's side of each channel" {
	need_root
	start_tool s ipcsnoop -j -i 60 --comm ipc-w
	LOAD pipe 12 100
	LOAD msq 1 4 64
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	# only ipc-w's writes: the readers (ipc-r...) are left out
	jq -e -s '[.[] | select(.type == "sample")] | length >= 2 and
		all(.writer_comm == "ipc-w" and .reader_pid == null and .readers == 0)' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s '([.[] | select(.type == "sample" and .kind == "pipe") | .bytes] | add) == 1200 and
		([.[] | select(.type == "sample" and .kind == "msq") | .msgs] | add) == 4' "$BATS_TEST_TMPDIR/s.out"
}

@test "ipcsnoop -c keeps exactly the channels of processes in a cgroup" {
	need_root
	make_test_cgroup aiscope-ipc
	start_tool s ipcsnoop -j -i 60 -c "$CG"
	sh -c 'echo $$ > "$1/cgroup.procs"; exec "$2" pipe 7 333' sh "$CG" "$HELPERS/ipcload" \
		>> "$BATS_TEST_TMPDIR/truth"
	"$HELPERS/ipcload" pipe 5 100 > "$BATS_TEST_TMPDIR/outside"
	stop_tool "$TOOL_PID"
	check_truth "$BATS_TEST_TMPDIR/s.out"
	jq -e -s '[.[] | select(.type == "sample")] | length == 1 and .[0].bytes == 2331' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s --arg c "/aiscope-ipc-$$" '[.[] | select(.type == "edge")] | length == 1 and
		.[0].src.cgroup == $c and .[0].dst.cgroup == $c' "$BATS_TEST_TMPDIR/s.out"
}

# ---- -e ----

@test "ipcsnoop -e streams each operation; -n stops after N" {
	need_root
	start_tool s ipcsnoop -j -e --kind pipe,mq
	LOAD pipe 17 256
	LOAD mq /aiscope-ipc-$$ 1 6 32
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	local w
	w=$(awk '$2 == "pipe" && $4 == "write" {print $5}' "$BATS_TEST_TMPDIR/truth")
	jq -e -s --argjson w "$w" '[.[] | select(.type == "event" and .pid == $w and .event == "write")] |
		length == 17 and all(.bytes == 256 and .kind == "pipe" and .comm == "ipc-w")' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s '[.[] | select(.type == "event" and .kind == "mq")] |
		([.[] | select(.event == "mq_send")] | length) == 6 and
		([.[] | select(.event == "mq_receive")] | length) == 6 and
		all(.channel == "/aiscope-ipc-'$$'" and .bytes == 32)' "$BATS_TEST_TMPDIR/s.out"
	# the edges still come at the end
	jq -e -s '[.[] | select(.type == "edge" and .kind == "pipe" and .bytes == 4352)] | length == 1' \
		"$BATS_TEST_TMPDIR/s.out"
	start_tool n ipcsnoop -j -e --kind pipe -n 3
	"$HELPERS/ipcload" pipe 10 10 > /dev/null
	wait "$TOOL_PID"
	[ "$(jq -s '[.[] | select(.type == "event")] | length' "$BATS_TEST_TMPDIR/n.out")" -eq 3 ]
	tail -1 "$BATS_TEST_TMPDIR/n.out" | jq -e '.type == "summary" and .exit_reason == "count" and .events == 3'
}

# ---- names that JSON must survive ----

@test "ipcsnoop JSON stays valid for FIFO paths and abstract unix names with odd bytes" {
	need_root
	local fifo abs
	fifo=$(printf '/tmp/aiscope-ipc-%s-a"b\nc\xff\\d' $$)
	abs=$(printf '@aiscope-%s "q"\x01\xfe' $$)
	start_tool s ipcsnoop -j -i 60 --kind fifo,unix
	"$HELPERS/ipcload" fifo "$fifo" 1 3 111 > /dev/null
	"$HELPERS/ipcload" unix-stream "$abs" 1 2 50 > /dev/null
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	# invalid UTF-8 becomes U+FFFD; quotes, newlines and control bytes survive
	local want_fifo want_abs
	want_fifo=$(printf '/tmp/aiscope-ipc-%s-a"b\nc\xef\xbf\xbd\\d' $$)
	want_abs=$(printf '@aiscope-%s "q"\x01\xef\xbf\xbd' $$)
	jq -e -s --arg f "$want_fifo" '[.[] | select(.type == "sample" and .kind == "fifo" and .channel == $f)] |
		length == 1 and .[0].bytes == 333 and .[0].read_bytes == 333' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s --arg a "$want_abs" '[.[] | select(.type == "edge" and .kind == "unix" and .channel == $a)] |
		length == 2 and (map(.bytes) | sort) == [50, 100]' "$BATS_TEST_TMPDIR/s.out"
}

# A FIFO 17 components deep (the first is cut: "..." and the 16 below
# it), one 16 deep (whole), one under 8 tmpfs mounts stacked on one
# directory (whole: the walk crosses them) and one under 9 (cut there: the
# FIFO's own name after "..."). All on tmpfs, whose inode numbers are not
# reused: on ext4 a FIFO could get the inode of the one before it, and so
# its channel.
@test "ipcsnoop FIFO paths: 16 components whole, deeper ones and 9 stacked mounts start with ..." {
	need_root
	local top=/tmp/aiscope-ipcdeep-$$ d16 d17 m8=/tmp/aiscope-ipcm8-$$ m9=/tmp/aiscope-ipcm9-$$ i
	d16=$top$(printf '/d%d' $(seq 2 14))
	d17=$top$(printf '/d%d' $(seq 2 15))
	mkdir -p "$top" "$m8" "$m9"
	start_tool s ipcsnoop -j -i 60 --kind fifo
	mount -t tmpfs aiscope-ipcdeep "$top"
	for i in $(seq 8); do mount -t tmpfs aiscope-ipcm8 "$m8"; done
	for i in $(seq 9); do mount -t tmpfs aiscope-ipcm9 "$m9"; done
	mkdir -p "$d16" "$d17"
	"$HELPERS/ipcload" fifo "$d16/f16" 1 2 100 > /dev/null
	"$HELPERS/ipcload" fifo "$d17/f17" 1 2 200 > /dev/null
	"$HELPERS/ipcload" fifo "$m8/f8" 1 2 300 > /dev/null
	"$HELPERS/ipcload" fifo "$m9/f9" 1 2 400 > /dev/null
	stop_tool "$TOOL_PID"
	umount "$top"
	for i in $(seq 8); do umount "$m8"; done
	for i in $(seq 9); do umount "$m9"; done
	rmdir "$top" "$m8" "$m9"
	all_json "$BATS_TEST_TMPDIR/s.out"
	jq -r -s '.[] | select(.type == "sample" and .kind == "fifo") | "\(.bytes) \(.channel)"' "$BATS_TEST_TMPDIR/s.out"
	jq -e -s --arg c16 "$d16/f16" --arg c17 "...${d17#/tmp}/f17" --arg c8 "$m8/f8" --arg c9 ".../f9" '
		def one($c; $b): [.[] | select(.type == "sample" and .kind == "fifo" and .channel == $c)] |
			length == 1 and .[0].bytes == $b and .[0].read_bytes == $b;
		one($c16; 200) and one($c17; 400) and one($c8; 600) and one($c9; 800)' "$BATS_TEST_TMPDIR/s.out"
}

@test "ipcsnoop table: a hostile comm and FIFO path sanitised, each row on its line" {
	need_root
	local fifo
	hostile_exe "$(command -v dd)"
	fifo=$BATS_TEST_TMPDIR/$HOSTILE_NAME.fifo
	mkfifo "$fifo"
	start_tool s ipcsnoop -i 60 -r 0
	"$HOSTILE_EXE" if=/dev/zero bs=4096 count=100 status=none | cat > /dev/null
	cat "$fifo" > /dev/null &
	"$HOSTILE_EXE" if=/dev/zero of="$fifo" bs=4096 count=10 status=none
	wait $!
	stop_tool "$TOOL_PID"
	grep -a 'h.x' "$BATS_TEST_TMPDIR/s.out" | cat -v
	check_sanitised "$BATS_TEST_TMPDIR/s.out"
	grep -qE "^pipe +pipe:\[[0-9]+\] +[0-9]+/h\?x\?\[31m\?\?z +[0-9]+/cat +100 +409600 +409600$" \
		"$BATS_TEST_TMPDIR/s.out"
	grep -qF "fifo    $BATS_TEST_TMPDIR/$HOSTILE_SHOWN.fifo" "$BATS_TEST_TMPDIR/s.out"
}

# pair_truth TRUTH: "CHANNEL WRITER READER BYTES READ_BYTES" per channel
pair_truth() {
	awk '$1 == "truth" && $4 == "write" { w[$3] = $5; b[$3] += $8 }
		$1 == "truth" && $4 == "read" { r[$3] = $5; rb[$3] += $8 }
		END { for (c in w) print c, w[c], r[c], b[c], rb[c] }' "$1" | sort
}

@test "ipcsnoop: 1500 unnamed unix socketpairs in one interval are 1500 channels, each exact" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out truth=$BATS_TEST_TMPDIR/truth
	start_tool s ipcsnoop -j -i 60 --kind unix
	"$HELPERS/ipcload" unix-pairs 1500 100 > "$truth"
	stop_tool "$TOOL_PID"
	all_json "$out"
	pair_truth "$truth" > "$BATS_TEST_TMPDIR/want"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/want")" -eq 1500 ]
	jq -r -s '[.[] | select(.type == "sample" and .writer_comm == "ipc-w")] | group_by(.channel)[] |
		"\(.[0].channel) \(.[0].writer_pid) \(.[0].reader_pid) \(map(.bytes) | add) \(map(.read_bytes) | add)"' \
		"$out" | sort > "$BATS_TEST_TMPDIR/got"
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
	jq -r 'select(.type == "edge" and .src.comm == "ipc-w") |
		"\(.channel) \(.src.pid) \(.dst.pid) \(.bytes) \(.read_bytes)"' "$out" | sort > "$BATS_TEST_TMPDIR/edges"
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/edges"
	tail -1 "$out" | jq -e '.type == "summary" and .lost_events == 0 and .name_map_full == 0'
}

@test "ipcsnoop: names the full name map could not take are counted; their channels stay apart, by inode" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out truth=$BATS_TEST_TMPDIR/truth dir=$BATS_TEST_TMPDIR/fifos
	mkdir "$dir"
	# a map of 64 names (hidden test knob) and 200 FIFOs in one interval:
	# the first 64 are named by path; each of the other 136 is refused
	# twice (its write and its read), and shown as fifo:[INO]
	AISCOPE_TEST_CAP_IPC_NAMES=64 start_tool s ipcsnoop -j -i 60 --comm ipc-w
	"$HELPERS/ipcload" fifos "$dir" 200 100 > "$truth"
	stop_tool "$TOOL_PID"
	all_json "$out"
	tail -1 "$out" | jq -e '.type == "summary" and .lost_events == 0 and .name_map_full == 272 and .channels == 200'
	grep -qx 'ipcsnoop: 272 operations found the channel name map (64 entries) full: their channels are shown by inode, not by name' \
		"$BATS_TEST_TMPDIR/s.err"
	jq -e -s '[.[] | select(.type == "edge")] | length == 200 and all(.bytes == 100 and .read_bytes == 100) and
		([.[].channel] | unique | length) == 200 and
		([.[] | select(.channel | startswith("fifo:["))] | length) == 136' "$out"
	# the text summary too
	AISCOPE_TEST_CAP_IPC_NAMES=64 start_tool t ipcsnoop -i 60 --comm ipc-w
	"$HELPERS/ipcload" fifos "$dir" 200 100 > "$truth"
	stop_tool "$TOOL_PID"
	grep -qE '^# summary: 200 channels, 200 msgs, 20000 bytes written, 0 lost events, 272 name map full, 0 rows and 0 names forgotten$' \
		"$BATS_TEST_TMPDIR/t.out"
	grep -q '272 operations found the channel name map' "$BATS_TEST_TMPDIR/t.err"
}

# pairs_in_cgroup DIR COUNT: ipcload unix-pairs COUNT 100 inside DIR
pairs_in_cgroup() {
	sh -c 'echo $$ > "$1/cgroup.procs"; exec "$2" unix-pairs "$3" 100' sh "$1" "$HELPERS/ipcload" "$2" \
		> "$BATS_TEST_TMPDIR/truth"
}

@test "ipcsnoop: the run's table and the name cache stay within their caps; what they forget is counted exactly" {
	need_root
	local out=$BATS_TEST_TMPDIR/s.out
	make_test_cgroup aiscope-ipccap
	# caps lowered (hidden test knobs): 100 rows, names for 20 channels more
	export AISCOPE_TEST_CAP_IPC_RUN_ROWS=100 AISCOPE_TEST_CAP_IPC_NAMES_SLACK=20
	# below them: 40 socketpairs, 80 rows, every edge exact, nothing forgotten
	start_tool s ipcsnoop -j -i 200ms --kind unix -c "$CG"
	pairs_in_cgroup "$CG" 40
	sleep 0.3
	stop_tool "$TOOL_PID"
	all_json "$out"
	pair_truth "$BATS_TEST_TMPDIR/truth" > "$BATS_TEST_TMPDIR/want"
	jq -r 'select(.type == "edge") | "\(.channel) \(.src.pid) \(.dst.pid) \(.bytes) \(.read_bytes)"' "$out" |
		sort > "$BATS_TEST_TMPDIR/edges"
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/edges"
	tail -1 "$out" | jq -e '.edge_rows == 80 and .edge_rows_dropped == 0 and .names_forgotten == 0 and .names_cached == 40'
	! grep -q 'forgotten' "$BATS_TEST_TMPDIR/s.err" || false
	# 300 socketpairs, 600 rows (one write, one read each), 300 names
	start_tool s ipcsnoop -j -i 200ms --kind unix -c "$CG"
	pairs_in_cgroup "$CG" 300
	sleep 0.3
	stop_tool "$TOOL_PID"
	all_json "$out"
	tail -1 "$out"
	tail -1 "$out" | jq -e '.edge_rows <= 100 and .edge_rows + .edge_rows_dropped == 600 and
		.names_forgotten > 0 and .names_forgotten + .names_cached == 300'
	grep -qE "^ipcsnoop: $(tail -1 "$out" | jq .edge_rows_dropped) \(channel, process\) rows idle longest were forgotten to keep the run's table at 100: left out of the edges$" \
		"$BATS_TEST_TMPDIR/s.err"
	grep -qE "^ipcsnoop: $(tail -1 "$out" | jq .names_forgotten) names of channels no row held any more were forgotten \(cache of 120\)$" \
		"$BATS_TEST_TMPDIR/s.err"
	# what the edges still show is exact
	jq -e -s '[.[] | select(.type == "edge")] | length > 0 and all(.bytes == 100 and .msgs == 1)' "$out"
}

@test "ipcsnoop JSON records carry every key of their type" {
	need_root
	start_tool s ipcsnoop -j -i 60 --kind pipe
	LOAD pipe 3 10
	stop_tool "$TOOL_PID"
	jq -e -s 'all(.[] | select(.type == "sample"); keys_unsorted as $k | ["type","tool","ts","schema","seq",
		"interval_ns","row","kind","channel","channel_key","writer_pid","writer_comm","reader_pid",
		"reader_comm","writers","readers","msgs","bytes","read_msgs","read_bytes","attaches",
		"detaches","size_bytes"] - $k == [] and
		(["pid","tid","comm","uid","cgroup_id","cgroup","container_id","runtime","pod_uid",
		  "container_name","container_image","pod_name","pod_namespace","k8s_container"] |
		 map("writer_" + .) + map("reader_" + .)) - $k == [])' "$BATS_TEST_TMPDIR/s.out"
	local ch
	ch=$(awk '$2 == "pipe" {print $3; exit}' "$BATS_TEST_TMPDIR/truth")
	jq -e -s --arg ch "$ch" '[.[] | select(.type == "edge" and .channel == $ch)] | length == 1 and all(keys_unsorted as $k |
		["type","tool","ts","kind","channel","channel_key","src","dst","bytes","msgs","read_bytes",
		"first_ts","last_ts","writers"] - $k == [] and
		["pid","comm","cgroup_id","cgroup","container_id","endpoint"] - (.src | keys) == [] and
		.src.endpoint == null and .bytes == 30 and .msgs == 3 and .read_bytes == 30)' \
		"$BATS_TEST_TMPDIR/s.out"
}

@test "ipcsnoop -e names each event's peer by its whole identity block, read from /proc while it lives" {
	need_root
	local hold=$BATS_TEST_TMPDIR/hold truth=$BATS_TEST_TMPDIR/truth pid ch path
	make_docker_cgroup
	start_tool s ipcsnoop -j -e --kind unix
	# a socketpair's writer and reader, both in the made container's cgroup,
	# held after their truth lines until the events are out
	IPCLOAD_HOLD=$hold bash -c 'echo $$ > "$1/cgroup.procs"; exec "$2" unix-seqpacket 3 100' \
		_ "$CG" "$HELPERS/ipcload" > "$truth" &
	pid=$!
	TEST_PIDS+=("$pid")
	wait_for "$truth" ' read '
	ch=$(awk '$4 == "read" {print $3}' "$truth")
	sleep 0.5
	path=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
	touch "$hold"
	wait "$pid"
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	[ "$path" = "${CG#"$CG_ROOT"}" ]
	jq -c --arg ch "$ch" 'select(.type == "event" and .channel == $ch) | [.event, .pid, .peer_pid, .peer_comm, .peer_cgroup, .peer_container_id]' \
		"$BATS_TEST_TMPDIR/s.out"
	# every event of the channel: its peer one of the two, named as /proc and
	# the truth name it
	jq -e -s --arg ch "$ch" --arg path "$path" --arg cid "$CID" --argjson cgid "$(stat -c %i "$CG")" \
		--argjson t "$(awk '{print "{\"pid\":" $5 ",\"comm\":\"" $6 "\"}"}' "$truth" | jq -s .)" '
		[.[] | select(.type == "event" and .channel == $ch)] | length == 6 and
		([.[] | select(.event == "send")] | length) == 3 and all(
		.peer_pid as $p | ($t | map(select(.pid == $p)) | length) == 1 and
		.peer_comm == ($t | map(select(.pid == $p))[0].comm) and .peer_tid == null and
		.peer_uid == 0 and .peer_cgroup_id == $cgid and .peer_cgroup == $path and
		.peer_container_id == $cid and .peer_runtime == "docker" and .peer_pod_uid == null and
		.peer_container_name == null and .peer_container_image == null and .peer_pod_name == null and
		.peer_pod_namespace == null and .peer_k8s_container == null)' "$BATS_TEST_TMPDIR/s.out"
}

@test "ipcsnoop SIGTERM prints the summary and exits 0; a closed pipe exits 0" {
	need_root
	start_tool s ipcsnoop -j
	stop_tool "$TOOL_PID" TERM
	tail -1 "$BATS_TEST_TMPDIR/s.out" | jq -e '.type == "summary" and .exit_reason == "signal"'
	run bash -c "'$BIN/ipcsnoop' -j -i 100ms | head -1"
	[ "$status" -eq 0 ]
}

@test "ipcsnoop channel samples carry the writer's and the reader's identity keys, each in its container" {
	need_root
	local d=/tmp/aiscope-ipc-$$ wcg wcid rcg rcid wpid rpid
	make_docker_cgroup
	wcg=$CG wcid=$CID
	make_docker_cgroup
	rcg=$CG rcid=$CID
	mkfifo "$d.idfifo"
	start_tool s ipcsnoop -j -i 60 --kind fifo
	# each moves itself into its container's cgroup before it opens the FIFO
	bash -c 'echo $$ > "$1/cgroup.procs"; cat /proc/$$/cgroup > "$3"; exec dd if="$2" of=/dev/null bs=4096 status=none' \
		_ "$rcg" "$d.idfifo" "$BATS_TEST_TMPDIR/r.cg" &
	rpid=$!
	TEST_PIDS+=("$rpid")
	bash -c 'echo $$ > "$1/cgroup.procs"; cat /proc/$$/cgroup > "$3"; exec dd if=/dev/zero of="$2" bs=4096 count=16 status=none' \
		_ "$wcg" "$d.idfifo" "$BATS_TEST_TMPDIR/w.cg" &
	wpid=$!
	wait "$wpid"
	wait "$rpid"
	stop_tool "$TOOL_PID"
	rm -f "$d.idfifo"
	all_json "$BATS_TEST_TMPDIR/s.out"
	# the paths as /proc/PID/cgroup said them while they ran: the ones made
	local wpath rpath
	wpath=$(sed -n 's/^0:://p' "$BATS_TEST_TMPDIR/w.cg")
	rpath=$(sed -n 's/^0:://p' "$BATS_TEST_TMPDIR/r.cg")
	[ "$wpath" = "${wcg#"$CG_ROOT"}" ]
	[ "$rpath" = "${rcg#"$CG_ROOT"}" ]
	jq -e -s --arg ch "$d.idfifo" --argjson wpid "$wpid" --argjson rpid "$rpid" \
		--arg wcid "$wcid" --arg rcid "$rcid" --arg wpath "$wpath" --arg rpath "$rpath" \
		--argjson wcgid "$(stat -c %i "$wcg")" --argjson rcgid "$(stat -c %i "$rcg")" '
		[.[] | select(.type == "sample" and .channel == $ch)] | length == 1 and all(
		.writer_pid == $wpid and .writer_tid == null and .writer_comm == "dd" and .writer_uid == 0 and
		.writer_cgroup_id == $wcgid and .writer_cgroup == $wpath and .writer_container_id == $wcid and
		.writer_runtime == "docker" and .writer_pod_uid == null and .writer_container_name == null and
		.writer_container_image == null and .writer_pod_name == null and .writer_pod_namespace == null and
		.writer_k8s_container == null and
		.reader_pid == $rpid and .reader_tid == null and .reader_comm == "dd" and .reader_uid == 0 and
		.reader_cgroup_id == $rcgid and .reader_cgroup == $rpath and .reader_container_id == $rcid and
		.reader_runtime == "docker" and .reader_pod_uid == null and .reader_container_name == null and
		.reader_k8s_container == null and .bytes == 65536 and .read_bytes == 65536)' \
		"$BATS_TEST_TMPDIR/s.out"
	# the same as the edge's sides
	jq -e -s --arg ch "$d.idfifo" '[.[] | select(.type == "sample" and .channel == $ch)][0] as $s |
		[.[] | select(.type == "edge" and .channel == $ch)] | length == 1 and all(
		.src.cgroup == $s.writer_cgroup and .src.container_id == $s.writer_container_id and
		.dst.cgroup == $s.reader_cgroup and .dst.container_id == $s.reader_container_id)' \
		"$BATS_TEST_TMPDIR/s.out"
}
