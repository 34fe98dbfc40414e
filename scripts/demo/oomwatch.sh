# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B.

# ---- oomwatch: OOM kills and the warnings before them ---------------------

# the demo's own memory cgroup: 64 MiB, v1 memory controller or cgroup v2
_oomwatch_memcg() {
	local v1=/sys/fs/cgroup/memory v2=/sys/fs/cgroup
	if [ -e "$v1/memory.limit_in_bytes" ]; then
		OW_CG=$v1/aiscope-demo-$$
		mkdir -p "$OW_CG"
		echo 64M > "$OW_CG/memory.limit_in_bytes"
	elif grep -qw memory "$v2/cgroup.controllers" 2>/dev/null; then
		echo +memory > "$v2/cgroup.subtree_control"
		OW_CG=$v2/aiscope-demo-$$
		mkdir -p "$OW_CG"
		echo 64M > "$OW_CG/memory.max"
	else
		return 1
	fi
}

_oomwatch_cleanup() {
	[ -n "${OW_CG:-}" ] && [ -d "$OW_CG" ] && { rmdir "$OW_CG" 2>/dev/null || { sleep 0.5; rmdir "$OW_CG"; }; }
	OW_CG=
}

demo_oomwatch() {
	local hog ow

	header "oomwatch: OOM kills with their context, and the warnings before them"
	if ! _oomwatch_memcg; then
		echo "No memory cgroup controller here (v1 memory or cgroup v2 +memory): skipped."
		return 0
	fi
	echo "Workload: tests/helpers/memhog in a memory cgroup with a 64 MiB limit ($OW_CG),"
	echo "growing 1 MiB every 100 ms, touching every page, until the OOM killer takes it."

	header "oomwatch polling every 200 ms (-i), only that cgroup (-c), with times (-T)"
	echo "\$ $B/oomwatch -c $OW_CG -T -i 200ms"
	"$B/oomwatch" -c "$OW_CG" -T -i 200ms > "$tmp/ow.out" 2> "$tmp/ow.err" &
	ow=$!
	for _ in $(seq 50); do grep -q Tracing "$tmp/ow.err" && break; sleep 0.1; done
	start_bg memhog '^ready [0-9]+' "$B/tests/helpers/memhog" grow 1024 100
	hog=$BG_PID
	echo "$hog" > "$OW_CG/cgroup.procs"
	kill -USR1 "$hog"
	wait "$hog" 2>/dev/null || true
	sleep 0.5
	kill -INT "$ow"
	wait "$ow" || true
	cat "$tmp/ow.out" "$tmp/ow.err"
	bg_pids=()
	_oomwatch_cleanup

	header "A 600 MiB mapping (PROT_NONE: nothing used) reported with its process, as JSON"
	"$B/oomwatch" -j --alloc-min 512M -d 3s > "$tmp/ow.json" 2> "$tmp/ow.err" &
	ow=$!
	for _ in $(seq 50); do grep -q Tracing "$tmp/ow.err" && break; sleep 0.1; done
	start_bg mapper '^ready [0-9]+' "$B/tests/helpers/memhog" mmap 614400
	kill -USR1 "$BG_PID"
	wait "$ow" || true
	show_sh "jq -c 'select(.event==\"alloc\") | {pid, comm, syscall, size_bytes, prot, memcg, limit_bytes, headroom_bytes}' $tmp/ow.json"
	stop_bg

	header "--check: one scan of every memory cgroup; exit 0 ok, 3 warn, 4 crit"
	show_sh "$B/oomwatch --check -r 5; echo \"exit status \$?\" | sed 's/status [34]\$/& (a cgroup is at a level)/'"
}
