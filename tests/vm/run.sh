#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The test runner inside the VMs (busybox sh), started by tests/vm/init:
# sources lib.sh, then every tool's test file here (tests/vm/TOOL.sh), and
# prints TAP: "ok N - name", "not ok N - name", "ok N - name # skip why",
# with "#" diagnostics. Exits 1 when a test failed.
dir=$(dirname "$0")
. "$dir/lib.sh"
echo "# kernel $(uname -r) $(uname -m), $(nproc) CPUs, $(page_size)-byte pages, depth $DEPTH; $(cat /proc/cmdline)"
# another architecture's packages (runc, rdma-core: scripts/vm/mkinitramfs.sh
# root_libs_in): their own ldconfig makes the loader cache
if [ -x /sbin/ldconfig ]; then
	/sbin/ldconfig 2>&1 | sed 's/^/# ldconfig: /'
fi
# the preemption model (BPF programs run under migrate_disable only can be
# preempted under full and lazy preemption: recursion misses, see ipcsnoop.sh)
echo "# preemption: $(cat /sys/kernel/debug/sched/preempt 2>/dev/null || echo unknown) ($(grep -m1 -oE 'Dynamic Preempt: [a-z]+' /tmp/kmsg.boot 2>/dev/null || echo 'no Dynamic Preempt line'))"
# each tool's default plan, for docs/KERNELS.md (scripts/vm/kernels-md.sh):
# "AISCOPE-PLAN TOOL HOOK MECHANISM TARGET STATUS" for every candidate
for t in /opt/aiscope/bin/*; do
	"$t" --list-probes -j 2>/dev/null | awk -v tool="${t##*/}" '
		function v(k,  r) { r = $0; if (!sub(".*\"" k "\":\"", "", r)) return "-"; sub(/".*/, "", r); return r }
		/"type":"probe"/ { print "AISCOPE-PLAN", tool, v("hook"), v("mechanism"), v("target"), v("status") }'
done
# the kernel-log guard of lib.sh sees what it is for: a soft lockup line
# written to /dev/kmsg (at a level the console does not show) is found,
# and the log read is clean after it
t_kmsg_guard() {
	kmsg_take "$T/k0"
	echo "<4>watchdog: BUG: soft lockup - CPU#0 stuck for 23s! [aiscope-guard-test:1]" > /dev/kmsg ||
		fail "cannot write /dev/kmsg"
	kmsg_take "$T/k1"
	kmsg_trouble "$T/k1" > /dev/null || fail "the guard did not see the line written: $(cat "$T/k1")"
	kmsg_take "$T/k2"
	if kmsg_trouble "$T/k2"; then fail "the kernel log was not cleared"; fi
	echo "seen: $(kmsg_trouble "$T/k1" | head -1)"
}
run_test "kernel-log guard: a soft lockup line in the kernel log is seen" 30 t_kmsg_guard
for f in "$dir"/*.sh; do
	case ${f##*/} in run.sh|lib.sh) continue ;; esac
	echo "# ---- ${f##*/}"
	. "$f"
done
# nothing left behind once every tool has exited: no process holds a BPF
# program, link or map, and no kprobe or uprobe event stays in tracefs
# (libbpf adds legacy ones where the kernel has no perf kprobe PMU)
t_nothing_attached() {
	sleep 1
	left=0
	for fd in /proc/[0-9]*/fd/*; do
		case $(readlink "$fd" 2>/dev/null) in
		anon_inode:bpf-prog|anon_inode:bpf-link|anon_inode:bpf_link|anon_inode:bpf-map)
			p=${fd#/proc/}
			p=${p%%/*}
			echo "pid $p ($(cat /proc/$p/comm 2>/dev/null)) holds $(readlink "$fd")"
			left=$((left + 1)) ;;
		esac
	done
	for f in /sys/kernel/tracing/kprobe_events /sys/kernel/tracing/uprobe_events; do
		[ -r "$f" ] || continue
		n=$(grep -c . "$f")
		echo "$f: $n events"
		[ "$n" -eq 0 ] || { head -5 "$f"; left=$((left + n)); }
	done
	[ $left -eq 0 ] || fail "$left BPF objects or probe events left after the tools exited"
}
run_test "nothing attached after the tools exit (BPF fds, kprobe and uprobe events)" 60 t_nothing_attached
echo "# depth $DEPTH: $N tests run, $NOT_RUN not run (mechanisms after the first that passed)"
echo "AISCOPE-DEPTH $DEPTH $NOT_RUN"
echo "1..$N"
[ "$FAILED" -eq 0 ]
