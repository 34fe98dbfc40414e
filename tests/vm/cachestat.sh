# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# cachestat inside the test VMs: the end-to-end subset of tests/cachestat.bats
# (misses, hits and dirties of a file and its reader against the pages the
# test evicted, read and wrote) in both access modes: function hooks
# (fentry, kprobe) and tracepoints. Sourced by tests/vm/run.sh (busybox sh;
# see lib.sh).
#
# The VM's root is an initramfs (tmpfs, whose pages never leave memory), so
# the file lives on ext2 on a RAM block device: the kernel modules brd and
# ext4, and those they need, come from the kernel's own package
# (tests/vm/cachestat.modules; scripts/vm/run-matrix.sh packs them with
# their load order in /opt/aiscope/modules/order).

CS=/opt/aiscope/bin/cachestat
CS_DISK=/mnt/aiscope-disk
CS_PAGES=2048
CS_SKIP=

# the disk: ext2 on /dev/ram0, once for every test here; what failed goes
# to the log (and the tests fail: the image should have what they need)
cs_setup() {
	_mods=$(cat /opt/aiscope/modules/order 2>/dev/null)
	echo "# cachestat modules: $(echo $_mods)"
	for m in $_mods; do
		[ -f "/opt/aiscope/modules/$m.ko" ] || { CS_SKIP="no $m.ko in the image"; return; }
	done
	for m in $_mods; do
		case $m in brd) set -- rd_nr=1 rd_size=65536 ;; *) set -- ;; esac
		insmod "/opt/aiscope/modules/$m.ko" "$@" 2>&1 | sed "s/^/# insmod $m: /"
	done
	[ -b /dev/ram0 ] || mknod /dev/ram0 b 1 0
	mke2fs /dev/ram0 2>&1 | tail -2 | sed 's/^/# mke2fs: /'
	mkdir -p "$CS_DISK"
	if ! mount -t ext2 /dev/ram0 "$CS_DISK" 2>&1 | sed 's/^/# mount: /'; then :; fi
	grep -q " $CS_DISK " /proc/mounts && return
	CS_SKIP="cannot mount ext2 on /dev/ram0"
	grep -e ext2 -e ext4 /proc/filesystems | sed 's/^/# filesystems: /'
	dmesg | tail -5 | sed 's/^/# dmesg: /'
}
cs_setup
echo "# cachestat disk: ${CS_SKIP:-ext2 on /dev/ram0 at $CS_DISK}"

# the plan: insertions and dirties always chosen; one access mode
t_cs_plan() {
	$CS --list-probes > "$T/plan" 2>&1 || { cat "$T/plan"; fail "--list-probes exited $?"; }
	cat "$T/plan"
	for h in page_added page_dirtied; do
		n=$(awk -v h="$h" '/^[^ ]/ { cur = ($1 == h) } cur && / chosen$/ { n++ } END { print n + 0 }' "$T/plan")
		[ "$n" -eq 1 ] || fail "hook $h: $n chosen candidates"
	done
	grep -q '^access mode: function ' "$T/plan" || fail "function hooks are not the access mode here"
	$CS --list-probes --probe-mode tp_btf > "$T/plan.tp" 2>&1 || fail "--probe-mode tp_btf exited $?"
	grep '^access mode' "$T/plan.tp"
	$CS --list-probes -j > "$T/plan.j" || fail "--list-probes -j exited $?"
	json_ok "$T/plan.j"
	[ "$(jsel "$T/plan.j" '"type":"mode"' | wc -l)" -eq 1 ] || fail "not one mode record"
}

# cs_round SIG WORD N: one read (USR1) or rewrite (USR2) by the loader
cs_round() {
	kill -"$1" "$SERVE"
	wait_for "$T/serve.out" "^$2 $3 " 60 || fail "round $2 $3 did not end"
}

# cs_run NAME MODE SIG WORD N: the tool (--by pid and --by file) around one round
cs_run() {
	start_tool "p$1" $CS -j --by pid --probe-mode "$2"
	p=$TOOL_PID
	start_tool "f$1" $CS -j --by file --probe-mode "$2"
	cs_round "$3" "$4" "$5"
	stop_tool "$TOOL_PID" || fail "cachestat --by file exited $?"
	stop_tool "$p" || fail "cachestat --by pid exited $?"
	json_ok "$T/p$1.out"
	json_ok "$T/f$1.out"
}

# cs_pid NAME KEY / cs_file NAME KEY: the sum of KEY over the reader's rows,
# over the file's rows
cs_pid() {
	jsel "$T/p$1.out" '"type":"sample"' '"row":"pid"' "\"pid\":$SERVE," | jsum "$2"
}
cs_file() {
	jsel "$T/f$1.out" '"type":"sample"' '"row":"file"' "\"file\":\"$FILE\"" | jsum "$2"
}

# t_cs_file MODE: cold read, warm read, rewrite of a file of CS_PAGES pages
t_cs_file() {
	mode=$1
	[ -z "$CS_SKIP" ] || fail "no disk for the test file: $CS_SKIP"
	$CS --list-probes --probe-mode "$mode" > "$T/plan" 2>&1
	if ! grep -q 'page_added' "$T/plan" || [ "$(grep -c ' chosen$' "$T/plan")" -lt 2 ]; then
		cat "$T/plan"
		fail "--probe-mode $mode: no plan"
	fi
	access=$(sed -n 's/^access mode: \([a-z]*\) .*/\1/p' "$T/plan")
	echo "mode $mode: access mode $access"
	FILE=$CS_DISK/model-$mode.ckpt
	"$H/pagecache" create "$FILE" "$CS_PAGES" > /dev/null || fail "cannot create $FILE"
	r=$("$H/pagecache" drop "$FILE")
	[ "$r" = "resident 0" ] || fail "the file's pages were not evicted: $r"
	bg serve "$H/pagecache" serve "$FILE"
	wait_for "$T/serve.out" '^ready' || fail "pagecache serve did not start"
	SERVE=$(awk '/^ready/ {print $2}' "$T/serve.out")

	# 1. cold
	cs_run 1 "$mode" USR1 read 1
	echo "after the cold read: $("$H/pagecache" resident "$FILE")"
	misses=$(cs_pid 1 misses)
	fmisses=$(cs_file 1 misses)
	echo "cold read of $CS_PAGES pages: pid misses $misses, file misses $fmisses, pid hits $(cs_pid 1 hits)"
	within 5 "$misses" "$CS_PAGES" || fail "pid misses"
	within 5 "$fmisses" "$CS_PAGES" || fail "file misses"
	size=$(jsel "$T/f1.out" '"row":"file"' "\"file\":\"$FILE\"" | jval size_bytes | sort -u)
	# pages of this kernel's size (16 KiB on arm64-16k): the helper wrote
	# CS_PAGES of them, and cachestat must count and size them so
	[ "$size" = $((CS_PAGES * $(page_size))) ] || fail "file size '$size', not $CS_PAGES pages of $(page_size) bytes"

	# 2. warm
	cs_run 2 "$mode" USR1 read 2
	hits=$(cs_pid 2 hits)
	misses=$(cs_pid 2 misses)
	echo "warm read: pid hits $hits, misses $misses; file hits $(cs_file 2 hits)"
	[ "$misses" -le $((CS_PAGES / 100)) ] || fail "warm misses"
	if [ "$access" = none ]; then
		# no access hook on this kernel in this mode: hits are unknown
		# (and a warm read makes no row at all: nothing is inserted)
		[ "$(grep -c '"hits":[0-9]' "$T/p2.out")" -eq 0 ] || fail "hits are not null without an access hook"
		tail -1 "$T/p2.out" | grep -q '"type":"summary".*"hits":null' || fail "summary hits are not null"
	else
		within 5 "$hits" "$CS_PAGES" || fail "pid hits"
		within 5 "$(cs_file 2 hits)" "$CS_PAGES" || fail "file hits"
	fi

	# 3. rewrite and fsync
	cs_run 3 "$mode" USR2 wrote 1
	dirties=$(cs_file 3 dirties)
	echo "rewrite of $CS_PAGES pages: file dirties $dirties, pid dirties $(cs_pid 3 dirties)"
	within 5 "$dirties" "$CS_PAGES" || fail "file dirties"
	within 5 "$(cs_pid 3 dirties)" "$CS_PAGES" || fail "pid dirties"
	last=$(tail -1 "$T/p3.out")
	case $last in *'"type":"summary"'*) ;; *) fail "the last line is not a summary: $last" ;; esac
	[ "$(echo "$last" | jval access_mode)" = "$access" ] || fail "summary access_mode: $last"
	echo "summary probes $(echo "$last" | jval probes), access_mode $access"
	kill "$SERVE"
	rm -f "$FILE"
}

# function hooks that cannot cover a hook here (fentry alone on arm64 6.1)
# must exit 77 naming the candidates
t_cs_function() {
	mode=$1
	$CS --list-probes --probe-mode "$mode" > "$T/plan.$mode" 2>&1
	if grep -q '^page_added' "$T/plan.$mode" &&
		[ "$(grep -cE ' (fentry|kprobe) .* chosen$' "$T/plan.$mode")" -ge 2 ]; then
		t_cs_file "$mode"
		return
	fi
	cat "$T/plan.$mode"
	exits_77 "$T/o" "--probe-mode $mode" $CS --probe-mode "$mode" -d 1
	grep -q "no way to attach .* tried fentry:" "$T/o" || fail "the line does not name the candidates"
	[ "$mode" = fentry ] || fail "--probe-mode $mode cannot cover every hook on this kernel"
	echo "fentry alone cannot cover every hook here: exit 77 as it should"
}

run_test "cachestat --list-probes: function hooks chosen, one access mode" 120 t_cs_plan
run_in cs-function "cachestat fentry: misses, hits, dirties of a file and its reader" 240 t_cs_function fentry
run_in cs-function "cachestat kprobe: misses, hits, dirties of a file and its reader" 240 t_cs_function kprobe
run_in cs-file "cachestat tp_btf: misses, dirties (hits where the access tracepoints exist)" 240 t_cs_file tp_btf
run_in cs-file "cachestat tracepoint: misses, dirties (hits where the access tracepoints exist)" 240 t_cs_file tracepoint
