# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# numaplace inside the test VMs, which scripts/vm/run-matrix.sh boots with
# two NUMA nodes (numa_args: CPU 0 and half the memory on node 0, CPU 1 and
# the other half on node 1). A helper (tests/helpers/numabind) pinned to
# node 0 with its memory bound to node 1, then moved to node 0 with
# migrate_pages(2): the tool's CPU time per node, memory per node and pages
# migrated against the kernel's own figures (/proc/PID/stat,
# /proc/PID/numa_maps, /proc/vmstat). On x86, Soft-RoCE on a NIC of node 1
# (t_np_nic). Sourced by tests/vm/run.sh (busybox sh; see lib.sh).
# vm-rdma

NP=/opt/aiscope/bin/numaplace
NP_MIB=64

# np_two_nodes: skips the test on a guest without two nodes
np_two_nodes() {
	[ "$(cat /sys/devices/system/node/online 2>/dev/null)" = 0-1 ] ||
		skip_test "the guest has nodes '$(cat /sys/devices/system/node/online 2>/dev/null)', not 0-1"
}

# np_truth PID NODE: bytes of PID on NODE in its numa_maps
np_truth() {
	awk -v n="N$2=" '{
		kb = 0
		for (i = 1; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { sub(/.*=/, "", $i); kb = $i }
		for (i = 1; i <= NF; i++) if (index($i, n) == 1) { v = $i; sub(/.*=/, "", v); s += v * kb * 1024 }
	} END { printf "%.0f\n", s }' "/proc/$1/numa_maps"
}

# np_node KEY NODE VKEY: VKEY of NODE in the array KEY of each stdin line
np_node() {
	sed -n "s/.*\"$1\":\[\([^]]*\)\].*/\1/p" | tr '}' '\n' |
		sed -n "s/.*\"node\":$2,\"$3\":\([0-9]*\).*/\1/p"
}

t_np_plan() {
	np_two_nodes
	$NP --list-probes > "$T/plan" 2>&1 || { cat "$T/plan"; fail "--list-probes exited $?"; }
	cat "$T/plan"
	[ -n "$(plan_chosen sched_switch "$T/plan")" ] || fail "no mechanism for sched_switch"
	[ -n "$(plan_chosen mm_migrate_pages "$T/plan")" ] || fail "no mechanism for mm_migrate_pages"
}

# placement: started after the tool attached and stopped before it ends,
# the helper's CPU time is all on node 0 and equals the kernel's
# sum_exec_runtime (/proc/PID/schedstat); its memory on each node equals
# numa_maps'
t_np_place() {
	np_two_nodes
	start_tool p $NP -j -i 1
	start_ready nb numabind 0 1 $NP_MIB
	pid=$READY_PID
	sleep 3
	kill -STOP "$pid"
	sleep 1.2
	read -r truth _ < "/proc/$pid/schedstat"
	truth1=$(np_truth "$pid" 1)
	truth0=$(np_truth "$pid" 0)
	stop_tool "$TOOL_PID" || fail "numaplace exited $?: $(cat "$T/p.err")"
	kill -CONT "$pid"
	json_ok "$T/p.out"
	grep -q 'one NUMA node' "$T/p.err" && fail "the tool says one node: $(cat "$T/p.err")"
	jsel "$T/p.out" '"row":"pid"' "\"pid\":$pid," > "$T/rows"
	n0=$(np_node cpu_nodes 0 cpu_ns < "$T/rows" | awk '{s += $1} END {printf "%.0f\n", s}')
	n1=$(np_node cpu_nodes 1 cpu_ns < "$T/rows" | awk '{s += $1} END {printf "%.0f\n", s}')
	# (jval takes a key's last match: cpu_ns is also each node's key)
	all=$(($(jsum cpu_unknown_node_ns < "$T/rows") + n0 + n1))
	echo "cpu: node0 $n0 ns, node1 $n1 ns, all $all ns; the kernel's sum_exec_runtime $truth ns"
	[ "$truth" -gt 500000000 ] || fail "the helper hardly ran"
	[ "$n1" -eq 0 ] || fail "CPU time on node 1 ($n1 ns) of a task pinned to node 0"
	[ "$n0" -eq "$all" ] || fail "node 0's CPU time is not all of it"
	within 2 "$all" "$truth" || fail "CPU time"
	[ "$(tail -1 "$T/rows" | jval cpu_node)" = 0 ] || fail "cpu_node is not 0"
	m1=$(tail -1 "$T/rows" | np_node mem_nodes 1 bytes)
	m0=$(tail -1 "$T/rows" | np_node mem_nodes 0 bytes)
	echo "memory: node1 tool $m1 numa_maps $truth1, node0 tool $m0 numa_maps $truth0 (bound: $((NP_MIB << 20)))"
	[ "$truth1" -ge $((NP_MIB << 20)) ] || fail "the helper's memory is not on node 1"
	[ "$m1" = "$truth1" ] || fail "node 1 memory"
	[ "$m0" = "$truth0" ] || fail "node 0 memory"
	[ "$(tail -1 "$T/rows" | jval mem_node)" = 1 ] || fail "mem_node is not 1"
}

# migration: the pages migrate_pages(2) moved, as numa_maps and vmstat see it
t_np_migrate() {
	np_two_nodes
	bal=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null)
	# NUMA balancing would move pages too: this test counts one move
	[ -n "$bal" ] && echo 0 > /proc/sys/kernel/numa_balancing
	start_ready nb numabind 0 1 $NP_MIB
	pid=$READY_PID
	page=$(awk '/^ready/ {print $3}' "$T/nb.out")
	start_tool m $NP -j -p "$pid" -i 1
	b1=$(np_truth "$pid" 1)
	v0=$(awk '$1 == "pgmigrate_success" {print $2}' /proc/vmstat)
	kill -USR1 "$pid"
	wait_for "$T/nb.out" '^migrated' 60 || fail "no migration"
	a1=$(np_truth "$pid" 1)
	a0=$(np_truth "$pid" 0)
	v1=$(awk '$1 == "pgmigrate_success" {print $2}' /proc/vmstat)
	sleep 1.2
	stop_tool "$TOOL_PID" || fail "numaplace exited $?: $(cat "$T/m.err")"
	[ -n "$bal" ] && echo "$bal" > /proc/sys/kernel/numa_balancing
	json_ok "$T/m.out"
	moved=$(((b1 - a1) / page))
	tool=$(jsel "$T/m.out" '"type":"sample"' '"row":"pid"' | jsum pages_migrated)
	host=$(jsel "$T/m.out" '"type":"sample"' '"row":"host"' | jsum pages_migrated)
	vm=$(jsel "$T/m.out" '"type":"sample"' '"row":"host"' | jsum pgmigrate_success)
	echo "migrate_pages: $(grep '^migrated' "$T/nb.out"); numa_maps node1 $b1 -> $a1 bytes ($moved pages of $page bytes), node0 now $a0"
	echo "tool: $tool pages (host row $host), vmstat pgmigrate_success +$((v1 - v0)) (tool's host rows +$vm)"
	[ "$moved" -ge $(((NP_MIB << 20) / page)) ] || fail "the helper's pages did not move"
	[ "$tool" -eq "$moved" ] || fail "pages_migrated $tool, numa_maps says $moved"
	[ "$((v1 - v0))" -ge "$tool" ] || fail "vmstat counted fewer ($((v1 - v0)))"
	[ "$vm" -ge "$tool" ] || fail "the host rows' pgmigrate_success ($vm) is below the tool's pages"
	m0=$(jsel "$T/m.out" '"row":"pid"' | tail -1 | np_node mem_nodes 0 bytes)
	[ "$m0" -ge $((NP_MIB << 20)) ] || fail "node 0 memory after the move: $m0"
}

# NUMA balancing: pages placed on node 1, then unbound, written over and
# over from node 0: the kernel's hinting faults move them to node 0 in the
# helper's context. The rows' pages migrated add up to the host's
# numa_pages_migrated (the helper's nearly all of them: at least the pages
# that left node 1), and the hinting faults it reports from /proc/vmstat
# are there.
t_np_balance() {
	np_two_nodes
	bal=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null)
	[ -n "$bal" ] || skip_test "no /proc/sys/kernel/numa_balancing (CONFIG_NUMA_BALANCING off)"
	echo 1 > /proc/sys/kernel/numa_balancing
	start_tool b $NP -j -i 1
	start_ready nb numabind 0 1 $NP_MIB touch
	pid=$READY_PID
	page=$(awk '/^ready/ {print $3}' "$T/nb.out")
	b1=$(np_truth "$pid" 1)
	i=0
	while [ $i -lt 60 ] && [ "$(np_truth "$pid" 1)" -gt $((b1 / 2)) ]; do
		sleep 1
		i=$((i + 1))
	done
	a1=$(np_truth "$pid" 1)
	kill -STOP "$pid"
	sleep 1.2
	stop_tool "$TOOL_PID" || fail "numaplace exited $?: $(cat "$T/b.err")"
	kill -CONT "$pid"
	echo "$bal" > /proc/sys/kernel/numa_balancing
	json_ok "$T/b.out"
	tool=$(jsel "$T/b.out" '"type":"sample"' '"row":"pid"' "\"pid\":$pid," | jsum pages_migrated)
	others=$(jsel "$T/b.out" '"type":"sample"' '"row":"pid"' | grep -v "\"pid\":$pid," | jsum pages_migrated)
	vm=$(jsel "$T/b.out" '"type":"sample"' '"row":"host"' | jsum numa_pages_migrated)
	faults=$(jsel "$T/b.out" '"type":"sample"' '"row":"host"' | jsum numa_hint_faults)
	moves=$(jsel "$T/b.out" '"type":"sample"' '"row":"pid"' "\"pid\":$pid," | jsum numa_moves)
	echo "numa_maps node1: $b1 -> $a1 bytes after $i s (pages of $page bytes)"
	echo "tool: helper $tool pages migrated (other rows $others), $moves task moves; vmstat numa_pages_migrated +$vm, numa_hint_faults +$faults"
	[ "$a1" -le $((b1 / 2)) ] || skip_test "NUMA balancing moved less than half the pages in 60 s ($b1 -> $a1 bytes on node 1)"
	[ "$tool" -ge $(((b1 - a1) / page)) ] || fail "the tool counts fewer pages ($tool) than left node 1 ($(((b1 - a1) / page)))"
	[ "$((tool + others))" -eq "$vm" ] || fail "the rows' pages_migrated ($tool + $others) is not vmstat's numa_pages_migrated ($vm)"
	[ "$faults" -gt 0 ] || fail "no NUMA hinting faults in the host rows"
}

# np_nic_pci: the e1000 NIC's PCI address (scripts/vm/run-matrix.sh's
# nic_args: x86 guests have one behind an expander bridge of node 1)
np_nic_pci() {
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x8086 ] && [ "$(cat "$d/device")" = 0x100e ] && echo "${d##*/}"
	done | head -1
}

# np_holder NAME CPU_NODE MEM_NODE DEV: numabind (4 MiB) with DEV open
np_holder() {
	bg "$1" sh -c "exec 3< $4; exec $H/numabind $2 $3 4"
	wait_for "$T/$1.out" '^ready' || fail "numabind did not start: $(cat "$T/$1.err")"
	READY_PID=$(awk '/^ready/ {print $2}' "$T/$1.out")
}

# np_dev PID: the devices of PID's last row in $T/nic.out
np_dev() {
	jsel "$T/nic.out" '"row":"pid"' "\"pid\":$1," | tail -1 | sed -n 's/.*"devices":\[\([^]]*\)\].*/\1/p'
}

# a NIC's node, where the kernel has it from the firmware: Soft-RoCE
# (rxe1) on the guest's e1000, which sits on node 1, held open by a helper
# pinned to node 0 with its memory there (REMOTE) and one on node 1 (not):
# the device's PCI address and node are the NIC's in sysfs (rxe has no
# device of its own), the shares of CPU time and memory on node 1 those of
# the pins and of numa_maps
t_np_nic() {
	np_two_nodes
	pci=$(np_nic_pci)
	if [ -z "$pci" ]; then
		[ "$(uname -m)" = aarch64 ] &&
			skip_test "qemu's arm64 virt machine places no PCI device on a node for a kernel booted without firmware (device tree)"
		fail "no e1000 NIC (scripts/vm/run-matrix.sh nic_args)"
	fi
	node=$(cat "/sys/bus/pci/devices/$pci/numa_node")
	echo "e1000 at $pci, node $node"
	[ "$node" = 1 ] || fail "the NIC is on node $node, not 1 (qemu's pxb numa_node=1)"
	[ -f /opt/aiscope/rdma.missing ] && skip_test "no RDMA user space here: $(cat /opt/aiscope/rdma.missing)"
	# e1000 and Soft-RoCE's modules, in their load order (those loaded
	# already refuse again, harmlessly; brd and dummy are the tests' own
	# with their parameters: tests/vm/cachestat.sh, rdmasnoop.sh)
	for m in $(cat /opt/aiscope/modules/order 2>/dev/null); do
		case $m in brd|dummy) continue ;; esac
		[ -d "/sys/module/$m" ] || insmod "/opt/aiscope/modules/$m.ko" 2>&1 | sed "s/^/# insmod $m: /"
	done
	nd=$(ls "/sys/bus/pci/devices/$pci/net" 2>/dev/null | head -1)
	[ -n "$nd" ] || fail "no network device on $pci (e1000 not loaded: tests/vm/numaplace.modules)"
	ip link set "$nd" up
	rdma link add rxe1 type rxe netdev "$nd" 2>&1 | sed 's/^/# rdma link add: /'
	# the test in a subshell: rxe1 goes whatever it ends with (rdmasnoop's
	# tests count the devices)
	( np_nic_check "$pci" ); rc=$?
	rdma link delete rxe1 2>&1 | sed 's/^/# rdma link delete: /'
	ip link set "$nd" down
	[ $rc -eq 0 ] || exit $rc
}

np_nic_check() {
	uv=
	for u in /sys/class/infiniband_verbs/uverbs*; do
		[ "$(cat "$u/ibdev" 2>/dev/null)" = rxe1 ] && uv=${u##*/}
	done
	[ -n "$uv" ] || fail "no verbs device of rxe1: $(ls /sys/class/infiniband_verbs 2>&1)"
	if [ -e "/sys/class/infiniband_verbs/$uv/device" ]; then
		echo "$uv (rxe1) has a parent device: $(readlink "/sys/class/infiniband_verbs/$uv/device")"
	else
		echo "$uv (rxe1) has no device of its own: placed by its NIC"
	fi
	np_holder far 0 0 "/dev/infiniband/$uv"
	far=$READY_PID
	np_holder near 1 1 "/dev/infiniband/$uv"
	near=$READY_PID
	$NP -j -p "$far,$near" -i 1 -n 2 > "$T/nic.out" 2> "$T/nic.err" || fail "numaplace exited $?: $(cat "$T/nic.err")"
	json_ok "$T/nic.out"
	t1=$(np_truth "$far" 1) t0=$(np_truth "$far" 0)
	kill "$far" "$near"
	fd=$(np_dev "$far") nd=$(np_dev "$near")
	echo "far ($far): $fd (numa_maps: node0 $t0, node1 $t1 bytes)"
	echo "near ($near): $nd"
	head="{\"kind\":\"rdma\",\"name\":\"rxe1\",\"pci\":\"$1\",\"node\":1,\"cpu_local_ratio\":"
	case $fd in "$head"*",\"remote\":true}") ;; *) fail "far: $fd" ;; esac
	case $nd in "$head"*",\"remote\":false}") ;; *) fail "near: $nd" ;; esac
	# all CPU time where each is pinned: none on node 1, all of it
	awk -v f="$(echo "$fd" | jval cpu_local_ratio)" -v n="$(echo "$nd" | jval cpu_local_ratio)" \
		'BEGIN { exit !(f == 0 && n == 1) }' || fail "CPU time on node 1: far's not 0 or near's not 1"
	# far's memory on node 1: what numa_maps says, to the 4 digits printed
	m=$(echo "$fd" | jval mem_local_ratio)
	awk -v m="$m" -v t="$(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.6f", a / (a + b) }')" \
		'BEGIN { d = m - t; if (d < 0) d = -d; if (d > 0.001 || m >= 0.5) { printf "mem_local_ratio %s, numa_maps %s\n", m, t; exit 1 } }' ||
		fail "far's memory on the NIC's node"
	[ "$(jsel "$T/nic.out" '"row":"pid"' "\"pid\":$far," | tail -1 | jval remote | tail -1)" = true ] || fail "far is not flagged remote"
}

run_test "numaplace --list-probes on a two-node guest" 60 t_np_plan
run_test "numaplace: CPU time on the pinned node vs sum_exec_runtime, memory per node vs numa_maps" 120 t_np_place
run_test "numaplace: pages moved by migrate_pages(2) vs numa_maps and /proc/vmstat" 120 t_np_migrate
run_test "numaplace: pages NUMA balancing moved vs /proc/vmstat numa_pages_migrated" 150 t_np_balance
run_test "numaplace: Soft-RoCE on a NIC of node 1: its node and PCI address from the NIC, a far holder REMOTE, a near one not" 120 t_np_nic
