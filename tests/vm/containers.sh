# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Real containers inside the test VMs (issue #23): Debian's runc (the
# host's in x86 guests, bookworm's arm64 one fetched by scripts/vm/fetch.sh
# in arm64 guests), packed by scripts/vm/mkinitramfs.sh with its libraries,
# runs a static helper from a
# root filesystem the test makes, on cgroup v2 (the test hosts have v1
# memory). Its bundle's config.json is runc spec's, edited here with awk
# (no jq in the VM); --no-pivot, as an initramfs root cannot pivot_root.
# The tools' identity blocks are checked against runc's own account (runc
# state, /proc/PID/cgroup, the cgroup's files) and the helpers' exact
# numbers. Sourced by tests/vm/run.sh (busybox sh; lib.sh).
# vm-tools: socketsnoop oomwatch
# vm-runc

SS=/opt/aiscope/bin/socketsnoop
OW=/opt/aiscope/bin/oomwatch
CG2=/sys/fs/cgroup
# the containers made, kept outside $T (run_test empties it) so that the
# runner deletes them after a test that failed half-way
CTRLIST=/tmp/containers-ids

ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up 2>/dev/null

# runc_ready: runc runs here on cgroup v2, else a skip that says why
runc_ready() {
	[ -x /usr/sbin/runc ] || skip_test "$(cat /opt/aiscope/runc.missing 2>/dev/null || echo "no runc in the initramfs")"
	runc --version > "$T/runc.version" 2>&1 ||
		skip_test "runc does not run here: $(head -1 "$T/runc.version")"
	head -1 "$T/runc.version"
	[ -e "$CG2/cgroup.controllers" ] || skip_test "no cgroup2 at $CG2"
	mkdir -p /run
}

# hex_id: a 64-digit id, as the runtimes make them
hex_id() {
	od -An -tx1 -N32 /dev/urandom | tr -d ' \n'
}

# runc_bundle DIR ID MEMORY ANNOTATIONS ARGV...: an OCI bundle in DIR whose
# root holds netpair and memhog, running ARGV in cgroup /ID with the host's
# network namespace (its loopback), the ANNOTATIONS (JSON members) and,
# unless MEMORY is empty, a memory (and memory+swap) limit of MEMORY bytes:
# runc spec's config.json edited line by line (its layout: tabs, one
# member a line)
runc_bundle() {
	_b=$1 _id=$2 _mem=$3 _ann=$4
	shift 4
	rm -rf "$_b"
	mkdir -p "$_b/rootfs" || fail "mkdir $_b"
	cp "$H/netpair" "$H/memhog" "$_b/rootfs/"
	(cd "$_b" && runc spec) || fail "runc spec failed"
	_args=$(printf '"%s", ' "$@")
	awk -v id="$_id" -v mem="$_mem" -v ann="$_ann" -v args="${_args%, }" '
		{ l[++n] = $0 }
		END {
			for (i = 1; i <= n; i++) {
				s = l[i]
				# the network namespace entry: three lines
				if (l[i + 1] ~ /^\t+"type": "network"$/) { i += 2; continue }
				if (s ~ /^\t"ociVersion": /) { print s; print "\t\"annotations\": {" ann "},"; continue }
				if (s ~ /^\t\t"terminal": true,$/) { print "\t\t\"terminal\": false,"; continue }
				if (s ~ /^\t\t"args": \[$/) {
					print "\t\t\"args\": [" args "],"
					while (l[i] !~ /^\t\t\],$/) i++
					continue
				}
				print s
				if (s ~ /^\t"linux": \{$/) print "\t\t\"cgroupsPath\": \"/" id "\","
				if (s ~ /^\t\t"resources": \{$/ && mem != "")
					print "\t\t\t\"memory\": {\"limit\": " mem ", \"swap\": " mem "},"
			}
		}' "$_b/config.json" > "$_b/c.json" || fail "cannot edit config.json"
	mv "$_b/c.json" "$_b/config.json"
	grep -q '"type": "network"' "$_b/config.json" && fail "the network namespace is still in config.json"
	grep -q "\"cgroupsPath\": \"/$_id\"" "$_b/config.json" || fail "no cgroupsPath in config.json"
	grep -q '"terminal": false' "$_b/config.json" || fail "terminal not set off in config.json"
}

# state_of ID: runc state ID into $T/state, its fields checked against the
# bundle: sets CPID (the container's first process, pid on the host)
state_of() {
	runc state "$1" > "$T/state" 2>&1 || fail "runc state $1: $(cat "$T/state")"
	cat "$T/state"
	echo
	CPID=$(sed -n 's/^ *"pid": \([0-9]*\),$/\1/p' "$T/state")
	[ -n "$CPID" ] && [ "$CPID" -gt 0 ] || fail "no pid in runc state"
	grep -q "^ *\"id\": \"$1\",\$" "$T/state" || fail "runc state: not container $1"
	grep -q '^ *"status": "running",$' "$T/state" || fail "runc state: not running"
	# the cgroup its process is in: cgroupsPath, the only (v2) line
	echo "/proc/$CPID/cgroup: $(cat "/proc/$CPID/cgroup")"
	[ "$(cat "/proc/$CPID/cgroup")" = "0::/$1" ] || fail "/proc/$CPID/cgroup is not 0::/$1"
}

# state_ann KEY: the annotation KEY in runc state's account ($T/state)
state_ann() {
	sed -n "s/^ *\"$1\": \"\\([^\"]*\\)\",\\{0,1\\}\$/\\1/p" "$T/state"
}

# ctr_fields FILE ID KEY=VALUE...: every line of FILE carries container ID
# with KEY=VALUE for each (strings), or the test fails
ctr_fields() {
	_f=$1 _id=$2
	shift 2
	_n=$(wc -l < "$_f")
	[ "$_n" -gt 0 ] || fail "no line of container $_id"
	for _kv in "container_id=$_id" "$@"; do
		_k=${_kv%%=*} _v=${_kv#*=}
		_got=$(jval "$_k" < "$_f" | sort | uniq -c | sed 's/^ *//')
		[ "$_got" = "$_n $_v" ] || fail "$_k of the $_n lines: $(echo "$_got" | tr '\n' ' '), not $_v"
	done
}

cleanup_ctrs() {
	[ -s "$CTRLIST" ] || return 0
	for _c in $(cat "$CTRLIST"); do
		runc delete -f "$_c" > /dev/null 2>&1
		rmdir "$CG2/$_c" 2>/dev/null
	done
	: > "$CTRLIST"
	rm -rf /tmp/bundle-*
}

# runc run of netpair in a container: 123456 bytes in 7 sends, 1000 back in
# 1, over the host's loopback; socketsnoop names both ends' flows
t_runc_net() {
	runc_ready
	id=$(hex_id)
	b=/tmp/bundle-net
	echo "$id" >> "$CTRLIST"
	runc_bundle "$b" "$id" "" '"io.kubernetes.pod.name": "burst-1", "io.kubernetes.pod.namespace": "perf", "io.kubernetes.container.name": "sender"' \
		/netpair tcp4 -n 123456 -m 7 -k 1000 -l 1 -W /go
	start_tool s $SS -j -i 300ms
	# runc run: create, start, wait, delete; the client waits for /go
	# shellcheck disable=SC2217 # (bg's command reads it)
	bg runc runc run --no-pivot --bundle "$b" "$id" < /dev/null
	RUNC_PID=$BG
	i=0
	until runc state "$id" 2>/dev/null | grep -q '"status": "running"'; do
		kill -0 "$RUNC_PID" 2>/dev/null || { wait "$RUNC_PID"; fail "runc run exited $?: $(cat "$T/runc.err")"; }
		i=$((i + 1))
		[ $i -lt 300 ] || fail "the container did not run in 30 s"
		sleep 0.1
	done
	state_of "$id"
	for k in io.kubernetes.pod.name io.kubernetes.pod.namespace io.kubernetes.container.name; do
		echo "runc state: $k=$(state_ann "$k")"
	done
	[ "$(state_ann io.kubernetes.pod.name)" = burst-1 ] || fail "runc state: pod name"
	: > "$b/rootfs/go"
	wait "$RUNC_PID"
	rc=$?
	cat "$T/runc.out" "$T/runc.err"
	[ $rc -eq 0 ] || fail "runc run exited $rc"
	[ ! -e "/run/runc/$id" ] || fail "/run/runc/$id is still there"
	grep -q '^client_result rx_bytes=1000 ' "$T/runc.out" || fail "netpair's client did not get 1000 bytes"
	grep -q '^server_result rx_bytes=123456 ' "$T/runc.out" || fail "netpair's server did not get 123456 bytes"
	sleep 0.7
	stop_tool "$TOOL_PID" || fail "socketsnoop exited $?: $(cat "$T/s.err")"
	json_ok "$T/s.out"
	jsel "$T/s.out" '"type":"sample"' "\"container_id\":\"$id\"" > "$T/rows"
	cat "$T/rows"
	# each end's bytes, summed over the intervals, as netpair counted them
	for c in "ss-client 123456 1000" "ss-server 1000 123456"; do
		# shellcheck disable=SC2086
		set -- $c
		jsel "$T/rows" "\"comm\":\"$1\"" > "$T/r"
		got="$1 $(jsum tx_bytes < "$T/r") $(jsum rx_bytes < "$T/r")"
		echo "$got (netpair: $c)"
		[ "$got" = "$c" ] || fail "$1's bytes"
	done
	# the server is the container's first process: runc's pid
	[ "$(jsel "$T/rows" '"comm":"ss-server"' | jval pid | sort -u)" = "$CPID" ] ||
		fail "ss-server's pid is not runc's $CPID"
	ctr_fields "$T/rows" "$id" runtime=runc "container_name=$id" cgroup="/$id" \
		"pod_name=$(state_ann io.kubernetes.pod.name)" \
		"pod_namespace=$(state_ann io.kubernetes.pod.namespace)" \
		"k8s_container=$(state_ann io.kubernetes.container.name)"
	rm -rf "$b"
}

# runc run -d of memhog forks 3 64 under a 32 MiB memory.max: its three
# children OOM-killed as the container starts, each kill named
t_runc_oom() {
	runc_ready
	grep -qw memory "$CG2/cgroup.controllers" || skip_test "no memory controller in cgroup2"
	echo +memory > "$CG2/cgroup.subtree_control" || fail "cannot enable +memory"
	echo +pids > "$CG2/cgroup.subtree_control" 2>/dev/null
	id=$(hex_id)
	b=/tmp/bundle-oom
	lim=33554432
	echo "$id" >> "$CTRLIST"
	runc_bundle "$b" "$id" $lim '"io.kubernetes.pod.name": "loader-0", "io.kubernetes.pod.namespace": "train", "io.kubernetes.container.name": "hog"' \
		/memhog forks 3 64
	start_tool o $OW -j -i 100ms
	# runc -d passes its stdout on: memhog's lines
	runc run -d --no-pivot --bundle "$b" "$id" < /dev/null > "$T/hog" 2>&1 ||
		fail "runc run -d exited $?: $(cat "$T/hog")"
	state_of "$id"
	[ "$(cat "$CG2/$id/memory.max")" = $lim ] || fail "memory.max of /$id: $(cat "$CG2/$id/memory.max")"
	wait_for "$T/hog" '^reaped 3$' 60 || fail "memhog did not reap its 3 children"
	cat "$T/hog"
	# the memory cgroup's own count and memhog's: three kills
	cat "$CG2/$id/memory.events"
	kc=$(sed -n 's/^oom_kill //p' "$CG2/$id/memory.events")
	[ "$kc" = 3 ] || fail "memory.events oom_kill $kc, not 3"
	[ "$(grep -c '^child [0-9]* killed 9$' "$T/hog")" -eq 3 ] || fail "memhog did not see 3 children killed"
	i=0
	while [ "$(grep -c '"event":"oom_kill"' "$T/o.out")" -lt 3 ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	sleep 0.3
	stop_tool "$TOOL_PID" || fail "oomwatch exited $?: $(cat "$T/o.err")"
	for k in io.kubernetes.pod.name io.kubernetes.pod.namespace io.kubernetes.container.name; do
		echo "runc state: $k=$(state_ann "$k")"
	done
	runc delete -f "$id" || fail "runc delete -f $id exited $?"
	[ ! -e "$CG2/$id" ] || fail "cgroup /$id is still there after runc delete"
	json_ok "$T/o.out"
	jsel "$T/o.out" '"event":"oom_kill"' > "$T/kills"
	cat "$T/kills"
	[ "$(wc -l < "$T/kills")" -eq "$kc" ] || fail "$(wc -l < "$T/kills") kill events, the cgroup counted $kc"
	# the three children, not memhog itself (the container's first process)
	[ "$(jval pid < "$T/kills" | sort -u | wc -l)" -eq 3 ] || fail "not 3 distinct victims"
	! jval pid < "$T/kills" | grep -qx "$CPID" || fail "memhog itself ($CPID) was killed"
	ctr_fields "$T/kills" "$id" comm=memhog runtime=runc "container_name=$id" cgroup="/$id" memcg="/$id" \
		limit_bytes=$lim \
		"pod_name=$(state_ann io.kubernetes.pod.name)" \
		"pod_namespace=$(state_ann io.kubernetes.pod.namespace)" \
		"k8s_container=$(state_ann io.kubernetes.container.name)"
	rm -rf "$b"
}

run_test "containers: runc run of netpair on the host's loopback: socketsnoop's bytes exact, named as runc state says" 120 t_runc_net
cleanup_ctrs
run_test "containers: runc, 3 processes OOM-killed under a 32 MiB memory.max: each kill named, as memory.events counts" 120 t_runc_oom
cleanup_ctrs
