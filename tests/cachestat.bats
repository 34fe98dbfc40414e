#!/usr/bin/env bats
# cachestat: the command-line contract, and end-to-end checks against a
# file whose page-cache state the test sets itself (tests/helpers/pagecache:
# its own pages evicted with posix_fadvise, residency read back with
# mincore(2) and cachestat(2)).

bats_require_minimum_version 1.5.0
load lib

PAGES=2048	# the test file: 8 MiB with 4 KiB pages

teardown() {
	aiscope_teardown
}

# ---- contract ----

@test "cachestat --help lists the shared options and ends with examples" {
	check_help cachestat "${SHARED_OPTS[@]}" --by --llc --usage --version
}

@test "cachestat --usage and --version" {
	check_usage_version cachestat
}

@test "cachestat usage errors exit 2 with one line on stderr and nothing on stdout" {
	local bad=(
		"--bogus" "-p" "-p abc" "-p 999999999" "-i 0" "-i 5x" "-d -1" "-n 0" "--by foo"
		"--by" "-s nope" "-s p99" "-c /nonexistent" "--container zz" "--buffer-size 1"
		"1 2 3" "--probe-mode foo" "--llc --by pid" "--llc -s hits" "--btf /nonexistent"
		"--llc --listen 127.0.0.1:0"
	)
	check_usage_errors cachestat "${bad[@]}"
}

@test "cachestat --metric-label refuses the label names its own series have" {
	check_own_metric_labels cachestat kind
}

@test "cachestat without privileges exits 77 and says what is missing" {
	check_no_privilege cachestat "-d 1" "--by file -d 1" "--llc -d 1"
}

@test "cachestat --list-probes shows the plan and the access mode" {
	run "$BIN/cachestat" --list-probes
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == HOOK*MECHANISM*TARGET*STATUS ]]
	for hook in page_added page_dirtied; do
		echo "$output" | awk -v h="$hook" '/^[^ ]/ { cur = ($1 == h) } cur && / chosen$/ { n++ } END { exit n != 1 }'
	done
	echo "$output" | grep -E '^access mode: (function|tracepoint|none) \('
	# the access hooks of one mode only
	if echo "$output" | grep -q '^access mode: tracepoint'; then
		echo "$output" | grep -E '^read_pages +(tp_btf|raw_tp|tracepoint) .*chosen'
		! echo "$output" | grep -E '^page_accessed .*chosen' || false
	fi
	run "$BIN/cachestat" --list-probes -j
	[ "$status" -eq 0 ]
	echo "$output" > "$BATS_TEST_TMPDIR/plan"
	all_json "$BATS_TEST_TMPDIR/plan"
	[ "$(jq -s '[.[] | select(.type == "probe")] | length' "$BATS_TEST_TMPDIR/plan")" -eq 33 ]
	jq -e -s '[.[] | select(.type == "mode")] | length == 1 and
		(.[0].access_mode | IN("function", "tracepoint", "none"))' "$BATS_TEST_TMPDIR/plan"
	jq -e -s 'all(.[] | select(.type == "probe"); has("hook") and has("mechanism") and
		has("target") and has("status") and has("reason"))' "$BATS_TEST_TMPDIR/plan"
}

@test "cachestat --probe-mode picks the mechanism; an impossible one exits 77 naming the candidates" {
	for mode in tp_btf raw_tp tracepoint; do
		run "$BIN/cachestat" --list-probes --probe-mode "$mode"
		[ "$status" -eq 0 ]
		echo "$output" | grep -E "^page_added .*|^ +$mode +.*mm_filemap_add_to_page_cache +chosen"
		[ "$(echo "$output" | grep -c " $mode .*chosen")" -ge 2 ]
	done
	need_root
	need_no_kprobes
	run_exit_77 "$BIN/cachestat" --probe-mode fentry,kprobe -d 1
	[[ "$output" == *"no way to attach page_added on this kernel: tried fentry:filemap_add_folio ("*"), fentry:add_to_page_cache_lru ("*"), tp_btf:mm_filemap_add_to_page_cache (excluded by --probe-mode)"*"kprobe:filemap_add_folio (kprobes not supported)"* ]]
}

@test "cachestat --llc: hardware counters, or exit 77 with one line where the machine has none" {
	need_root
	run "$BIN/cachestat" --llc -d 1 -j
	if [ "$status" -eq 77 ]; then
		[ "$(echo "$output" | grep -vc '^{')" -eq 1 ]
		[[ "$output" == *"--llc: this machine has no hardware cache counters"* ]]
		echo "$output" | grep '^{' | tail -1 | jq -e '.type == "error" and .exit_code == 77'
		return
	fi
	[ "$status" -eq 0 ]
	echo "$output" | grep '^{' > "$BATS_TEST_TMPDIR/llc"
	all_json "$BATS_TEST_TMPDIR/llc"
	jq -e -s '.[-1].type == "summary" and .[-1].llc_references > 0' "$BATS_TEST_TMPDIR/llc"
}

# ---- end to end: a file of $PAGES pages on a disk file system ----

# start_serve: the test file, its pages evicted, held open by a reader;
# sets FILE and SERVE_PID
start_serve() {
	disk_dir
	FILE=$DISK_DIR/model.ckpt
	"$HELPERS/pagecache" create "$FILE" "$PAGES" > /dev/null
	start_ready serve "$HELPERS/pagecache" serve "$FILE"
	SERVE_PID=$READY_PID
}

drop_file() {
	run "$HELPERS/pagecache" drop "$FILE"
	[ "$status" -eq 0 ]
	[ "$output" = "resident 0" ] || { echo "the file's pages were not evicted: $output"; false; }
}

# round SIGNAL WORD N: one read (USR1) or rewrite (USR2) of the whole file
round() {
	kill -"$1" "$SERVE_PID"
	wait_for "$BATS_TEST_TMPDIR/serve.out" "^$2 $3 "
}

# sum FILE JQ_FILTER KEY: the sum of KEY over the sample lines selected
sum() {
	jq -s "[.[] | select(.type == \"sample\") | select($2) | .$3 // 0] | add // 0" "$1"
}

# resident pages by mincore and cachestat(2) (-1: no such syscall)
resident() {
	"$HELPERS/pagecache" resident "$FILE"
}

# one tool run per round and view: --by pid and --by file, both at once
run_round() {
	local sig=$1 word=$2 n=$3 mode=$4
	start_tool p$n cachestat -j --by pid --probe-mode "$mode"
	local p=$TOOL_PID
	start_tool f$n cachestat -j --by file --probe-mode "$mode"
	round "$sig" "$word" "$n"
	stop_tool "$TOOL_PID"
	stop_tool "$p"
	all_json "$BATS_TEST_TMPDIR/p$n.out"
	all_json "$BATS_TEST_TMPDIR/f$n.out"
}

# check_file MODE: read the cold file, read it again, rewrite it; the
# misses, hits and dirties of the reading process and of the file against
# the pages the test evicted, read and wrote, and the kernel's residency
check_file() {
	local mode=$1 me fsel r1 r2 misses hits dirties
	start_serve
	drop_file
	me=".pid == $SERVE_PID"
	fsel=".row == \"file\" and .file == \"$FILE\""

	# 1. cold: every page read from disk, attributed to the reader and the file
	run_round USR1 read 1 "$mode"
	r1=$(resident)
	echo "after the cold read: $r1"
	# the read loaded the file (a sanity check of the setup, not of the
	# tool: DAMON reclaims cold pages within seconds here, 128 of 2048
	# between the read and this look once, so it is not held to 5%); the
	# misses below are every page read from disk, whatever was reclaimed
	[ "$(echo "$r1" | awk '{print $2}')" -ge $((PAGES * 3 / 4)) ]
	case $r1 in *"cachestat -1") ;; *) within 1 "$(echo "$r1" | awk '{print $4}')" "$(echo "$r1" | awk '{print $2}')" ;; esac
	misses=$(sum "$BATS_TEST_TMPDIR/p1.out" ".row == \"pid\" and $me" misses)
	hits=$(sum "$BATS_TEST_TMPDIR/p1.out" ".row == \"pid\" and $me" hits)
	echo "mode $mode cold read of $PAGES pages: pid misses $misses, hits $hits"
	within 5 "$misses" "$PAGES"
	[ "$hits" -le $((PAGES * 5 / 100)) ]
	misses=$(sum "$BATS_TEST_TMPDIR/f1.out" "$fsel" misses)
	echo "file misses $misses"
	within 5 "$misses" "$PAGES"
	jq -e -s --arg f "$FILE" --argjson p "$SERVE_PID" --argjson size $((PAGES * 4096)) \
		'[.[] | select(.type == "sample" and .row == "file" and .file == $f)] | length > 0 and
		all(.size_bytes == $size and .pid == $p and .comm == "pagecache" and (.inode | type) == "number")' \
		"$BATS_TEST_TMPDIR/f1.out"
	# the host line counts at least the reader's misses
	[ "$(sum "$BATS_TEST_TMPDIR/p1.out" '.row == "host"' misses)" -ge "$misses" ]

	# 2. warm: every page a hit, but for those that reclaim took back
	# meanwhile (the machine is shared)
	r2=$(resident | awk '{print $2}')
	run_round USR1 read 2 "$mode"
	hits=$(sum "$BATS_TEST_TMPDIR/p2.out" ".row == \"pid\" and $me" hits)
	misses=$(sum "$BATS_TEST_TMPDIR/p2.out" ".row == \"pid\" and $me" misses)
	echo "mode $mode warm read ($r2 pages resident before): pid hits $hits, misses $misses"
	within 5 "$hits" "$PAGES"
	[ "$misses" -le $((PAGES - r2 + PAGES / 100)) ]
	hits=$(sum "$BATS_TEST_TMPDIR/f2.out" "$fsel" hits)
	echo "file hits $hits"
	within 5 "$hits" "$PAGES"
	jq -e -s '[.[] | select(.type == "sample" and .row == "pid" and .hits > 0)] |
		all(.hit_ratio > 0 and .hit_ratio <= 1)' "$BATS_TEST_TMPDIR/p2.out"

	# 3. rewrite and fsync: every page dirtied once
	run_round USR2 wrote 1 "$mode"
	dirties=$(sum "$BATS_TEST_TMPDIR/f1.out" "$fsel" dirties)
	echo "mode $mode rewrite of $PAGES pages: file dirties $dirties"
	# (classic tracepoints too: the writeback record names no folio size,
	# the pages the kernel accounted for it are read at the inode's
	# writeback_mark_inode_dirty)
	within 5 "$dirties" "$PAGES"
	within 5 "$(sum "$BATS_TEST_TMPDIR/p1.out" ".row == \"pid\" and $me" dirties)" "$PAGES"
	jq -e -s --arg m "$mode" '.[-1] | .type == "summary" and .probes == $m and
		.access_mode == "tracepoint" and .exit_reason == "signal"' "$BATS_TEST_TMPDIR/p1.out"
}

@test "cachestat misses, hits and dirties of a file and its reader (tp_btf)" {
	need_root
	check_file tp_btf
}

@test "cachestat misses, hits and dirties of a file and its reader (raw_tp)" {
	need_root
	check_file raw_tp
}

@test "cachestat misses, hits and dirties of a file and its reader (classic tracepoints)" {
	need_root
	check_file tracepoint
}

# warm_read_exact MODE: one read of the whole file in 128 KiB preads (32
# pages: of order-0 folios a batch of 31 and one of the last page alone),
# every page resident right before and right after it (DAMON reclaims
# cold pages within seconds here: a round that lost some is done again):
# the reader's accesses are the file's pages exactly, hits and misses too
warm_read_exact() {
	local mode=$1 try before after hits acc misses out
	for ((try = 1; try <= 5; try++)); do
		READS=$((READS + 1))
		round USR1 read "$READS"	# warm it
		before=$(resident | awk '{print $2}')
		READS=$((READS + 1))
		start_tool w$READS cachestat -j --by pid --probe-mode "$mode"
		round USR1 read "$READS"
		after=$(resident | awk '{print $2}')
		stop_tool "$TOOL_PID"
		echo "mode $mode try $try: $before pages resident before, $after after"
		[ "$before" -eq "$PAGES" ] && [ "$after" -eq "$PAGES" ] && break
	done
	[ "$try" -le 5 ] || skip "reclaim took pages of the file in every try"
	out=$BATS_TEST_TMPDIR/w$READS.out
	all_json "$out"
	acc=$(sum "$out" ".row == \"pid\" and .pid == $SERVE_PID" accesses)
	hits=$(sum "$out" ".row == \"pid\" and .pid == $SERVE_PID" hits)
	misses=$(sum "$out" ".row == \"pid\" and .pid == $SERVE_PID" misses)
	echo "mode $mode warm read of $PAGES pages: accesses $acc, hits $hits, misses $misses"
	[ "$acc" -eq "$PAGES" ]
	# a page reclaimed during the read and read back is a miss: the
	# accesses are exact whatever reclaim did, and hits are the rest
	[ $((hits + misses)) -eq "$PAGES" ]
}

@test "cachestat counts a read's last page once when its last batch is that page alone" {
	need_root
	disk_dir
	FILE=$DISK_DIR/small-folios
	# written a page per write(2): order-0 folios (the helper's 128 KiB
	# writes make large ones, whose 32 pages fit in one batch), kept cached
	dd if=/dev/zero of="$FILE" bs=4096 count="$PAGES" conv=fsync status=none
	# on one CPU: the read in progress is remembered per CPU, and a read
	# that moves to another CPU between two batches counts the rest again
	# (bpf/cachestat.bpf.c: the price of no hash update per read)
	start_ready serve taskset -c 0 "$HELPERS/pagecache" serve "$FILE"
	SERVE_PID=$READY_PID
	READS=0
	warm_read_exact tp_btf
	warm_read_exact raw_tp
	warm_read_exact tracepoint
}

@test "cachestat --by pid and --by file: a hostile comm and file name sanitised, on their rows" {
	need_root
	disk_dir
	FILE=$DISK_DIR/$HOSTILE_NAME
	dd if=/dev/zero of="$FILE" bs=4096 count=64 conv=fsync status=none
	# reads for 3 s: an interval's row takes the comm of its first access,
	# and before exec the child's was its shell's
	hostile_exe "$HELPERS/pagecache"
	start_tool p cachestat --by pid -i 1s -r 0
	local p=$TOOL_PID
	start_tool f cachestat --by file -i 1s -r 0
	"$HOSTILE_EXE" loop "$FILE" 4096 3 > /dev/null
	stop_tool "$TOOL_PID"
	stop_tool "$p"
	grep -a 'h.x' "$BATS_TEST_TMPDIR/p.out" "$BATS_TEST_TMPDIR/f.out" | cat -v
	check_sanitised "$BATS_TEST_TMPDIR/p.out"
	grep -qE "^ *[0-9]+ h\?x\?\[31m\?\?z " "$BATS_TEST_TMPDIR/p.out"
	check_sanitised "$BATS_TEST_TMPDIR/f.out"
	grep -qF "$DISK_DIR/$HOSTILE_SHOWN" "$BATS_TEST_TMPDIR/f.out"
}

@test "cachestat host view: bcc's columns, one line per interval, meminfo buffers and cache" {
	need_root
	run --separate-stderr "$BIN/cachestat" -i 300ms -n 3
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "      HITS     MISSES    DIRTIES    HIT% BUFFERS(MiB) CACHED(MiB)" ]
	[ "$(echo "$output" | grep -cE '^ +[0-9-]+ +[0-9]+ +[0-9]+ +[0-9.-]+ +[0-9]+\.[0-9] +[0-9]+\.[0-9]$')" -eq 3 ]
	echo "$output" | tail -1 | grep -q '^# summary: .* access mode '
	run --separate-stderr "$BIN/cachestat" -j -i 300ms -n 2
	[ "$status" -eq 0 ]
	echo "$output" > "$BATS_TEST_TMPDIR/o"
	all_json "$BATS_TEST_TMPDIR/o"
	# Cached of /proc/meminfo, which moves a little between the two reads
	jq -e -s --argjson c "$(awk '/^Cached:/ {print $2 * 1024}' /proc/meminfo)" \
		'[.[] | select(.type == "sample")] | length == 2 and
		all(.row == "host" and .buffers_bytes >= 0 and (.cached_bytes - $c | fabs) < $c / 2)' \
		"$BATS_TEST_TMPDIR/o"
}

@test "cachestat JSON records carry every key of their type" {
	need_root
	for by in host pid file container; do
		run --separate-stderr "$BIN/cachestat" -j --by "$by" -i 200ms -n 2
		[ "$status" -eq 0 ]
		echo "$output" > "$BATS_TEST_TMPDIR/o"
		all_json "$BATS_TEST_TMPDIR/o"
		jq -e -s 'all(.[] | select(.type == "sample"); [has("type","tool","ts","seq","interval_ns",
			"row","pid","comm","uid","cgroup_id","cgroup","container_id","runtime","pod_uid","file",
			"inode","dev","size_bytes","hits","accesses","misses","dirties","hit_ratio","miss_bytes",
			"added_pages","write_added_pages","buffer_dirties","buffers_bytes","cached_bytes")] | all)' "$BATS_TEST_TMPDIR/o"
		jq -e -s '[.[] | select(.type == "sample" and .row == "host") | .seq] == [1, 2]' "$BATS_TEST_TMPDIR/o"
		jq -e -s '.[-1] | .type == "summary" and .exit_reason == "count" and .intervals == 2 and
			(.access_mode | IN("function", "tracepoint", "none")) and .page_size_bytes > 0 and
			has("hits") and has("misses") and has("dirties") and .lost_events == 0' "$BATS_TEST_TMPDIR/o"
	done
}

@test "cachestat --by container: a fake docker container's reads in one row; --container keeps only it" {
	need_root
	make_docker_cgroup
	start_serve
	move_to_cgroup "$CG" "$SERVE_PID"
	drop_file
	start_tool c cachestat -j --by container
	local by=$TOOL_PID
	start_tool k cachestat -j --container "${CID:0:12}"
	round USR1 read 1
	stop_tool "$TOOL_PID"
	stop_tool "$by"
	all_json "$BATS_TEST_TMPDIR/c.out"
	jq -e -s --arg id "$CID" '[.[] | select(.type == "sample" and .container_id == $id)] |
		length > 0 and all(.row == "container" and .runtime == "docker" and .pid == null)' \
		"$BATS_TEST_TMPDIR/c.out"
	local misses
	misses=$(sum "$BATS_TEST_TMPDIR/c.out" ".container_id == \"$CID\"" misses)
	echo "container misses $misses"
	within 5 "$misses" "$PAGES"
	# the filter: the host line of the filtered run is the container alone
	misses=$(sum "$BATS_TEST_TMPDIR/k.out" '.row == "host"' misses)
	echo "--container host misses $misses"
	within 5 "$misses" "$PAGES"
	echo "--by container table:"
	run "$BIN/cachestat" --by container -n 1 -i 200ms
	[ "$status" -eq 0 ]
	echo "$output" | grep -q '^ *CONTAINER  *RUNTIME  *POD  *ACCESSES  *HITS  *MISSES  *MISS(MiB)  *DIRTIES  *HIT%$'
}

@test "cachestat -p keeps only that process" {
	need_root
	start_serve
	drop_file
	start_tool s cachestat -j --by pid -p "$SERVE_PID"
	round USR1 read 1
	# other processes read files meanwhile
	cat /etc/passwd /etc/group > /dev/null
	stop_tool "$TOOL_PID"
	jq -e -s --argjson p "$SERVE_PID" '[.[] | select(.type == "sample" and .row == "pid")] |
		length > 0 and all(.pid == $p)' "$BATS_TEST_TMPDIR/s.out"
	within 5 "$(sum "$BATS_TEST_TMPDIR/s.out" '.row == "host"' misses)" "$PAGES"
}

@test "cachestat --by file tables show the path and size; -s sorts every interval" {
	need_root
	start_serve
	drop_file
	start_tool t cachestat --by file -i 300ms --wide
	round USR1 read 1
	sleep 0.4
	stop_tool "$TOOL_PID"
	grep -q '^FILE  *SIZE(MiB)  *ACCESSES  *HITS  *MISSES  *MISS(MiB)  *DIRTIES  *HIT%$' "$BATS_TEST_TMPDIR/t.out"
	grep -qE "^$FILE +8\.0 +[0-9]+ +[0-9]+ +[0-9]+ " "$BATS_TEST_TMPDIR/t.out"
	for key in misses accesses dirties hits; do
		start_tool s cachestat -j --by pid -s "$key" -i 300ms
		round USR1 read $(( $(grep -c '^read ' "$BATS_TEST_TMPDIR/serve.out") + 1 ))
		stop_tool "$TOOL_PID"
		field=$([ $key = accesses ] && echo accesses || echo "$key")
		jq -e -s --arg f "$field" 'map(select(.type == "sample" and .row == "pid")) | group_by(.seq) |
			all(map(.[$f]) as $v | $v == ($v | sort | reverse))' "$BATS_TEST_TMPDIR/s.out"
	done
}

@test "cachestat SIGINT and SIGTERM print the summary and exit 0" {
	need_root
	check_signals cachestat --by file
	# started with SIGINT ignored, as a shell without job control starts
	# "cachestat &": Ctrl-C semantics all the same
	start_bg i sh -c "trap '' INT; exec '$BIN/cachestat' -j"
	wait_for "$BATS_TEST_TMPDIR/i.err" Tracing
	stop_tool "$BG_PID" INT
	jq -e -s '.[-1].type == "summary" and .[-1].exit_reason == "signal"' "$BATS_TEST_TMPDIR/i.out"
}

@test "cachestat -j | head -1 exits within a second of head" {
	need_root
	check_head_exit cachestat
}

@test "cachestat --by pid on a terminal redraws each interval in place; -C appends" {
	need_root
	command -v script > /dev/null || skip "script(1) missing"
	script -qfec "$BIN/cachestat --by pid -d 1.5" /dev/null > "$BATS_TEST_TMPDIR/tty" 2>&1
	[ "$(grep -c $'\033\\[H\033\\[2J' "$BATS_TEST_TMPDIR/tty")" -ge 2 ]
	script -qfec "$BIN/cachestat --by pid -C -d 1.5" /dev/null > "$BATS_TEST_TMPDIR/tty" 2>&1
	! grep -q $'\033\\[2J' "$BATS_TEST_TMPDIR/tty" || false
	grep -q '^# 20.*interval=1s' "$BATS_TEST_TMPDIR/tty"
}

@test "cachestat rows are drained every interval: its map does not grow" {
	need_root
	command -v bpftool > /dev/null || skip "bpftool missing"
	local n
	start_tool s cachestat --by file -C -i 300ms
	# 300 files read once each
	disk_dir
	for i in $(seq 300); do echo "$i" > "$DISK_DIR/f$i"; done
	cat "$DISK_DIR"/f* > /dev/null
	sleep 1
	n=$(map_entries "$TOOL_PID" rows)
	echo "entries left in rows: $n"
	[ "$n" -lt 100 ]
	stop_tool "$TOOL_PID"
}

@test "cachestat tests leave no cgroup behind" {
	local left
	[ ! -e /run/docker.sock ] || skip "docker runs here: its scopes are not ours"
	left=$(find /sys/fs/cgroup -maxdepth 3 -type d -name 'docker-*.scope' 2>/dev/null | head -5)
	[ -z "$left" ] || { echo "left behind: $left"; false; }
}
