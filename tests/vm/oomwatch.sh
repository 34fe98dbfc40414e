# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# oomwatch inside the test VMs: cgroup v2 with the memory controller
# enabled (the test hosts have only v1 memory), a 64 MiB memory.max, real
# memcg OOM kills through each mechanism, the alert before the kill, and
# --check on the v2 files. Sourced by tests/vm/run.sh (busybox sh; lib.sh).

OW=/opt/aiscope/bin/oomwatch
CG2=/sys/fs/cgroup
LIMIT=67108864

# a v2 cgroup with a 64 MiB limit: sets CG (the directory) and CG_REL
v2_memcg() {
	[ -e "$CG2/cgroup.controllers" ] || skip_test "no cgroup2 at $CG2"
	grep -qw memory "$CG2/cgroup.controllers" || skip_test "no memory controller in cgroup2"
	echo +memory > "$CG2/cgroup.subtree_control" || fail "cannot enable +memory"
	CG_REL=/oomw-$1
	CG=$CG2$CG_REL
	mkdir -p "$CG" || fail "mkdir $CG"
	echo "$LIMIT" > "$CG/memory.max" || fail "cannot set memory.max"
	[ ! -e "$CG/memory.swap.max" ] || echo 0 > "$CG/memory.swap.max"
	echo "$CG" >> "$CGLIST"
}

# the cgroups made, kept outside $T (run_test empties it) so that the
# runner removes them after a test that failed half-way
CGLIST=/tmp/oomwatch-cgroups

cleanup_memcgs() {
	[ -s "$CGLIST" ] || return 0
	for d in $(cat "$CGLIST"); do
		[ -d "$d" ] || continue
		for p in $(cat "$d/cgroup.procs" 2>/dev/null); do
			kill -KILL "$p" 2>/dev/null
		done
		sleep 0.2
		rmdir "$d" 2>/dev/null || { sleep 0.5; rmdir "$d"; }
	done
	: > "$CGLIST"
}

# start_hog NAME ARGS...: memhog waiting for SIGUSR1; sets HOG_PID
start_hog() {
	_h=$1
	shift
	start_ready "$_h" memhog "$@"
	HOG_PID=$READY_PID
}

t_list_probes() {
	$OW --list-probes > "$T/plan" 2>&1 || { cat "$T/plan"; fail "--list-probes exited $?"; }
	cat "$T/plan"
	case $(plan_chosen mark_victim "$T/plan") in
	tp_btf|raw_tp|tracepoint) ;;
	*) fail "no victim hook" ;;
	esac
	# the layout this kernel's mark_victim has (6.1.y backports changed it)
	grep -q total_vm /sys/kernel/tracing/events/oom/mark_victim/format 2>/dev/null &&
		echo "mark_victim: task layout (comm, total_vm, rss, oom_score_adj)" ||
		echo "mark_victim: pid-only layout"
}

# kill MODE [GROW_KIB EVERY_MS]: a memcg OOM kill in the 64 MiB cgroup
t_kill() {
	mode=$1
	v2_memcg "$(echo "$mode" | tr , _)"
	start_tool o $OW -j -i 100ms --probe-mode "$mode" --alloc-min 0
	t_kill_run "$@"
}

# the same with BPF told of 1024 possible CPUs (the most the rss sum adds):
# the victim programs load with the loop's longest walk, and the sum stops
# at the kernel's nr_cpu_ids, or anon_rss_bytes would have the boot
# offset's garbage of CPUs that are not there (since 6.2, where the sum
# runs; before, the folded count alone)
t_kill_sum1024() {
	mode=$1
	v2_memcg "sum1024-$(echo "$mode" | tr , _)"
	export AISCOPE_TEST_CAP_SUM_CPUS=1024
	start_tool o $OW -j -i 100ms --probe-mode "$mode" --alloc-min 0
	t_kill_run "$@"
}

t_kill_run() {
	start_hog hog grow "${2:-1024}" "${3:-100}"
	echo "$HOG_PID" > "$CG/cgroup.procs" || fail "cannot move memhog"
	kill -USR1 "$HOG_PID"
	wait "$HOG_PID"
	rc=$?
	[ "$rc" -eq 137 ] || fail "memhog exited $rc, not killed"
	wait_for "$T/o.out" '"event":"oom_kill"' 10 || fail "no kill event"
	sleep 0.5
	stop_tool "$TOOL_PID" || fail "oomwatch exited $?: $(cat "$T/o.err")"
	cleanup_memcgs
	json_ok "$T/o.out"
	jsel "$T/o.out" '"event":"oom_kill"' > "$T/kill"
	cat "$T/kill"
	[ "$(wc -l < "$T/kill")" -eq 1 ] || fail "$(wc -l < "$T/kill") kill events, not 1"
	[ "$(jval pid < "$T/kill")" = "$HOG_PID" ] || fail "victim pid"
	[ "$(jval comm < "$T/kill")" = memhog ] || fail "victim comm"
	[ "$(jval cgroup < "$T/kill")" = "$CG_REL" ] || fail "victim cgroup"
	[ "$(jval memcg < "$T/kill")" = "$CG_REL" ] || fail "memcg"
	[ "$(jval limit_bytes < "$T/kill")" = "$LIMIT" ] || fail "limit"
	[ "$(jval scope < "$T/kill")" = memcg ] || fail "scope"
	src=$(jval scope_source < "$T/kill")
	case $mode in
	*fentry*|*kprobe*) [ "$src" = oom_kill_process ] || fail "scope_source $src, not oom_kill_process"
		[ "$(jval domain_bytes < "$T/kill")" != null ] || fail "no domain_bytes from oom_kill_process" ;;
	*) [ "$src" = stack ] || fail "scope_source $src" ;;
	esac
	# the kernel's log of it. Since 6.2 the counter is per CPU, and
	# oomwatch reports its exact sum (percpu_counter_sum), as 7.x's line
	# does; a line that prints the sum folded so far (get_mm_counter) is
	# up to a batch, max(32, 2 * CPUs) pages, per CPU apart from it.
	kb=$(dmesg | grep "Killed process $HOG_PID (" | tail -1 | sed -n 's/.*anon-rss:\([0-9]*\)kB.*/\1/p')
	ob=$(jval anon_rss_bytes < "$T/kill")
	ncpu=$(grep -c '^processor' /proc/cpuinfo)
	batch=$((2 * ncpu > 32 ? 2 * ncpu : 32))
	echo "kernel anon-rss ${kb}kB, oomwatch $ob bytes ($(( (ob - ${kb:-0} * 1024) / $(page_size) )) pages apart; at most $((ncpu * batch)) on $ncpu CPUs)"
	if [ -n "$kb" ]; then
		d=$((ob - kb * 1024))
		[ "$d" -ge 0 ] || d=$((-d))
		[ "$d" -le $((ncpu * batch * $(page_size))) ] || fail "anon_rss_bytes"
	fi
	# the alert before the kill (v2 files, the same cgroup)
	k=$(grep -n '"event":"oom_kill"' "$T/o.out" | cut -d: -f1)
	head -n "$k" "$T/o.out" > "$T/before"
	jsel "$T/before" '"event":"alert"' "\"cgroup\":\"$CG_REL\"" \
		'"cgroup_version":2' '"reason":"working_set' > "$T/alerts"
	cat "$T/alerts"
	[ -s "$T/alerts" ] || [ "${2:-1024}" -gt 1024 ] || fail "no alert before the kill"
}

# v2_memcg_lim NAME LIMIT: v2_memcg with another memory.max
v2_memcg_lim() {
	v2_memcg "$1"
	echo "$2" > "$CG/memory.max" || fail "cannot set memory.max $2"
}

# lead_by_signal KILL_TS < ALERTS: "signal:ms" of the first alert of each
# signal before the kill at KILL_TS (RFC 3339, the same day)
lead_by_signal() {
	awk -v kts="$1" '
		function sec(ts,  a, b) { split(ts, a, "T"); split(a[2], b, ":")
			return b[1] * 3600 + b[2] * 60 + substr(b[3], 1, length(b[3]) - 1) }
		{ s = $0; sub(/.*"signal":"/, "", s); sub(/".*/, "", s)
		  t = $0; sub(/.*"ts":"/, "", t); sub(/".*/, "", t)
		  if (!(s in first)) { first[s] = t; order[++n] = s } }
		END { for (i = 1; i <= n; i++)
			printf "%s%s:%d", (i > 1 ? "," : ""), order[i], (sec(kts) - sec(first[order[i]])) * 1000
		      print "" }'
}

# The kernel's v2 signals (memory.events, PSI, memcg reclaim) before the kill: memhog at
# 10 MiB/s, 100 MiB/s, 1 GiB/s and full speed in 64 and 256 MiB cgroups,
# each made after oomwatch (default settings) started (at the default
# depth 10 MiB/s into 64 MiB only); every kill must
# have an alert naming its cgroup before its line. Prints each run's
# first alert (its signal says which raised it).
t_rates() {
	$OW --list-probes > "$T/plan" 2>&1
	start_tool o $OW -j --alloc-min 0
	grep -q 'kernel signals armed' "$T/o.err" || fail "no signals line: $(cat "$T/o.err")"
	n=0
	for lim in 67108864 268435456; do
		for rate in 10 100 1024 0; do
			# 26 s of the test's 46: the slowest rate into the larger
			# cgroup, whose alert has the longest lead, is the full
			# depth's
			if [ "$DEPTH" = default ] && [ $rate = 10 ] && [ $lim = 268435456 ]; then
				echo "not run at the default depth: 10 MiB/s into 256 MiB"
				continue
			fi
			n=$((n + 1))
			v2_memcg_lim "r$rate-$lim" "$lim"
			start_hog "h$n" rate "$rate" 1024
			echo "$HOG_PID" > "$CG/cgroup.procs" || fail "cannot move memhog"
			kill -USR1 "$HOG_PID"
			wait "$HOG_PID"
			rc=$?
			[ "$rc" -eq 137 ] || fail "memhog at $rate MiB/s in $lim exited $rc, not killed"
			echo "$CG_REL $HOG_PID" >> "$T/runs"
		done
	done
	sleep 1.5
	stop_tool "$TOOL_PID" || fail "oomwatch exited $?: $(cat "$T/o.err")"
	json_ok "$T/o.out"
	bad=0
	while read -r cg pid; do
		k=$(grep -n '"event":"oom_kill"' "$T/o.out" | grep "\"pid\":$pid," | head -1 | cut -d: -f1)
		[ -n "$k" ] || fail "no kill line for $pid in $cg"
		head -n "$k" "$T/o.out" > "$T/before"
		jsel "$T/before" '"event":"alert"' "\"cgroup\":\"$cg\"" > "$T/alerts"
		kts=$(sed -n "${k}p" "$T/o.out" | jval ts)
		echo "$cg: $(wc -l < "$T/alerts") alerts before the kill; first: $(head -1 "$T/alerts" |
			jval signal)/$(head -1 "$T/alerts" | jval level) at $(head -1 "$T/alerts" | jval ts), kill at $kts;" \
			"lead_ms by signal: $(lead_by_signal "$kts" < "$T/alerts")"
		[ -s "$T/alerts" ] || bad=$((bad + 1))
	done < "$T/runs"
	cleanup_memcgs
	[ "$bad" -eq 0 ] || fail "$bad kills without an alert before them"
	# the reclaim hook, where one was chosen, saw the limits reached
	if [ -n "$(plan_chosen memcg_reclaim "$T/plan")" ]; then
		r=$(tail -1 "$T/o.out" | jval memcg_reclaims)
		echo "memcg reclaim events: $r"
		[ "${r:-0}" -gt 0 ] || fail "no memcg reclaim event"
	fi
}

# --check on the v2 files: 56 MiB of 64 is 87.5%: warn (3)
t_check() {
	v2_memcg check
	start_hog hog grow 1024 1 57344
	echo "$HOG_PID" > "$CG/cgroup.procs" || fail "cannot move memhog"
	kill -USR1 "$HOG_PID"
	wait_for "$T/hog.out" '^at 57344$' 60 || fail "memhog did not reach 56 MiB"
	$OW --check -j > "$T/c.out" 2> "$T/c.err"
	rc=$?
	cat "$T/c.out" "$T/c.err"
	kill -KILL "$HOG_PID"
	sleep 0.3
	cleanup_memcgs
	[ "$rc" -eq 3 ] || fail "--check exited $rc, not 3"
	jsel "$T/c.out" '"type":"sample"' "\"cgroup\":\"$CG_REL\"" '"level":"warn"' '"cgroup_version":2' \
		"\"limit_bytes\":$LIMIT" > "$T/row"
	[ "$(wc -l < "$T/row")" -eq 1 ] || fail "no warn row for $CG_REL"
}

# alloc MODE: mmap, mremap growth and brk growth of 300 MiB each (nothing
# touched), reported with their exact sizes
t_alloc() {
	mode=$1
	start_tool o $OW -j -i 10s --alloc-min 256M --probe-mode "$mode"
	n=0
	for sys in "mmap 307200" "mremap 102400 409600" "brk 307200"; do
		n=$((n + 1))
		# shellcheck disable=SC2086
		start_hog "h$n" $sys
		kill -USR1 "$HOG_PID"
		wait_for "$T/h$n.out" '^\(mapped\|remapped\|brk\) ' || fail "memhog $sys: $(cat "$T/h$n.err")"
		wait_for "$T/o.out" "\"pid\":$HOG_PID," 10 || fail "no event for memhog $sys"
		got=$(jsel "$T/o.out" '"event":"alloc"' "\"pid\":$HOG_PID,")
		echo "$got"
		[ "$(echo "$got" | jval syscall)" = "${sys%% *}" ] || fail "syscall of $sys"
		[ "$(echo "$got" | jval size_bytes)" = 314572800 ] || fail "size of $sys"
		[ "$(echo "$got" | jval comm)" = memhog ] || fail "comm of $sys"
	done
	stop_tool "$TOOL_PID" || fail "oomwatch exited $?"
	json_ok "$T/o.out"
	[ "$(tail -1 "$T/o.out" | jval probes)" = "$mode" ] || fail "summary probes: $(tail -1 "$T/o.out")"
}

run_test "oomwatch --list-probes" 60 t_list_probes
for m in tp_btf raw_tp tracepoint; do
	run_in oom-alloc "oomwatch $m: mmap, mremap and brk growth of 300 MiB" 120 t_alloc $m
done
for m in tp_btf raw_tp tracepoint; do
	run_in oom-kill "oomwatch $m: memcg OOM kill in a v2 64 MiB cgroup, alert first" 180 t_kill $m
	cleanup_memcgs
done
run_test "oomwatch tp_btf, BPF told of 1024 CPUs: the rss sum bounded by nr_cpu_ids, exact" 180 t_kill_sum1024 tp_btf
cleanup_memcgs
for m in fentry,kprobe kprobe; do
	run_in oom-context "oomwatch $m + oom_kill_process: memcg OOM kill, its context" 180 t_kill "$m,tp_btf,raw_tp,tracepoint" 4096 20
	cleanup_memcgs
done
run_test "oomwatch: v2 kills at 10 MiB/s to full speed in 64 and 256 MiB cgroups, each after an alert" 240 t_rates
cleanup_memcgs
run_test "oomwatch --check on cgroup v2 files: exit 3 above --warn" 180 t_check
cleanup_memcgs
