# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B.

# ---- cachestat: page-cache hits, misses and dirties ------------------------

# cachestat_rounds PID SIGNAL...: one signal to the loader each second, in
# the background, while the tool shown next runs
cachestat_rounds() {
	local pid=$1 s
	shift
	( for s in "$@"; do sleep 1; kill -"$s" "$pid" 2>/dev/null; done ) &
}

demo_cachestat() {
	local pid dir file

	header "cachestat: page-cache hits, misses and dirtied pages (is the cache serving reads?)"
	dir=$(mktemp -d /var/tmp/aiscope-demo.XXXXXX)
	file=$dir/model.ckpt
	echo "Workload: tests/helpers/pagecache: a 32 MiB file $file (on $(stat -f -c %T "$dir")),"
	echo "its pages evicted (posix_fadvise DONTNEED), held open by a loader that reads it"
	echo "whole on SIGUSR1 and rewrites it on SIGUSR2."
	"$B/tests/helpers/pagecache" create "$file" 8192 > /dev/null
	"$B/tests/helpers/pagecache" drop "$file"
	start_bg pagecache '^ready [0-9]+' "$B/tests/helpers/pagecache" serve "$file"
	pid=$BG_PID
	echo "the loader is PID $pid"

	header "The attach plan's access mode (function hooks, or tracepoints where they cannot attach)"
	show_sh "$B/cachestat --list-probes | grep -e '^access mode' -e chosen"

	header "Host view, bcc's columns, 4 s: a cold read (misses), a warm read (hits), a rewrite (dirties)"
	cachestat_rounds "$pid" USR1 USR1 USR2
	show "$B/cachestat" -d 4s

	header "Which file is read from disk (--by file), 3 s, after evicting it again"
	"$B/tests/helpers/pagecache" drop "$file"
	cachestat_rounds "$pid" USR1
	show "$B/cachestat" --by file -r 5 -C -d 3s

	header "Per process as JSON lines (-j) through jq, 2 s of warm reads"
	cachestat_rounds "$pid" USR1
	show_sh "$B/cachestat --by pid -p $pid -j -d 2s | jq -c 'select(.type==\"sample\" and .row==\"pid\" and .accesses > 0) | {pid, comm, accesses, hits, misses, hit_ratio}'"

	header "CPU last-level-cache misses (--llc): hardware counters, exit 77 where there are none"
	show_sh "$B/cachestat --llc -r 5 -C -d 2s; rc=\$?; echo \"exit status \$rc\"; [ \$rc -eq 0 ] || [ \$rc -eq 77 ]"

	stop_bg
	rm -rf "$dir"
}
