#!/usr/bin/env bash
# scripts/bench/topograph.sh: what topograph itself costs, in one run.
#
# A live capture costs what socketsnoop and ipcsnoop cost (their own
# sections), plus topograph's process lifecycle hooks (measured by
# scripts/bench/topograph-lifecycle.sh), plus topograph reading their JSON
# lines. So:
#   1. reading: captures of 10000 and 100000 edge lines (awk-made), topograph
#      -j beside jq selecting the same edge lines (a JSON reader doing less:
#      no graph), interleaved, REPS times; wall time, lines/s, peak RSS;
#   2. start-up, when socketsnoop and ipcsnoop are built: exec -> "Tracing"
#      of topograph -d 2 beside each tool alone, interleaved.
# Writes the topograph section of docs/PERFORMANCE.md. Run as root:
#
#   scripts/bench/topograph.sh           # REPS=5
#
# Environment: REPS (default 5), OUT (default docs/PERFORMANCE.md), BIN
# (default build/), JQ (default jq).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-5}
BIN=${BIN:-$BENCH_ROOT/build}
JQ=${JQ:-jq}
SIZES=(10000 100000)

bench_init
need "$BIN/topograph"
command -v "$JQ" >/dev/null || bench_die "jq is needed (the reading peer)"

# capture N: N ipcsnoop edge lines between 5000 writers and 5000 readers,
# each on its own pipe (N edges, 10000 nodes), like docs/edges.md
capture() {
	awk -v n="$1" 'BEGIN {
		for (i = 0; i < n; i++) {
			s = 10000 + i % 5000; d = 20000 + (i * 7) % 5000
			printf "{\"type\":\"edge\",\"tool\":\"ipcsnoop\",\"ts\":\"2026-11-29T11:20:02.000000000Z\",\"kind\":\"pipe\",\"channel\":\"pipe:[%d]\",", i
			printf "\"src\":{\"pid\":%d,\"tid\":null,\"comm\":\"writer\",\"uid\":0,\"cgroup_id\":1,\"cgroup\":\"/\",\"container_id\":null,\"runtime\":null,\"pod_uid\":null,\"endpoint\":null},", s
			printf "\"dst\":{\"pid\":%d,\"tid\":null,\"comm\":\"reader\",\"uid\":0,\"cgroup_id\":1,\"cgroup\":\"/\",\"container_id\":null,\"runtime\":null,\"pod_uid\":null,\"endpoint\":null},", d
			printf "\"bytes\":%d,\"msgs\":%d,\"read_bytes\":%d,\"first_ts\":\"2026-11-29T11:20:00.050000000Z\",\"last_ts\":\"2026-11-29T11:20:01.800000000Z\"}\n", 4096 * (i % 97 + 1), i % 97 + 1, 4096 * (i % 97 + 1)
		}
	}'
}

# secs CMD...: wall seconds of CMD (stdout to /dev/null)
secs() {
	local t0=$EPOCHREALTIME
	"$@" >/dev/null 2>&1
	awk -v us="$(us_since "$t0")" 'BEGIN { printf "%.4f\n", us / 1e6 }'
}

body=$BENCH_TMP/section.md
{
	echo "## topograph"
	echo
	echo "A live capture costs what socketsnoop and ipcsnoop (and the tools of \`--with\`) cost, in their"
	echo "own sections, plus topograph's process lifecycle hooks (\`scripts/bench/topograph-lifecycle.sh\`,"
	echo "figures in topograph(8) OVERHEAD), plus topograph reading their JSON lines."
	echo
	echo "Machine: $BENCH_NPROC CPUs ($(echo "$BENCH_CPU" | cut -d" " -f1-2)), kernel $BENCH_KERNEL, $BENCH_OS; run $BENCH_DATE,"
	echo "load average at start $BENCH_LOAD. A shared 2-core VM: other work adds noise (see the min-max)."
	md_h3 "Reading a capture"
	echo "\`topograph -j FILE > /dev/null\` (parse, merge into the graph, bottlenecks, print) beside"
	echo "\`jq -c 'select(.type==\"edge\")' FILE > /dev/null\` (parse and select only), on the same file,"
	echo "interleaved; medians of $REPS, wall time."
	echo
	md_header "edge lines" "file (MB)" "topograph (s)" "min-max" "jq (s)" "topograph lines/s" "topograph / jq" "peak RSS topograph (MiB)" "peak RSS jq (MiB)"
} >"$body"

for n in "${SIZES[@]}"; do
	f=$BENCH_TMP/cap.$n.jsonl
	capture "$n" >"$f"
	: >"$BENCH_TMP/t.$n"
	: >"$BENCH_TMP/j.$n"
	for ((r = 1; r <= REPS; r++)); do
		secs "$BIN/topograph" -j "$f" >>"$BENCH_TMP/t.$n"
		secs "$JQ" -c 'select(.type=="edge")' "$f" >>"$BENCH_TMP/j.$n"
		bench_log "read $n lines, rep $r/$REPS: topograph $(tail -n 1 "$BENCH_TMP/t.$n") s, jq $(tail -n 1 "$BENCH_TMP/j.$n") s"
	done
	t=$(median <"$BENCH_TMP/t.$n")
	j=$(median <"$BENCH_TMP/j.$n")
	md_row "$n" "$(awk -v b="$(stat -c %s "$f")" 'BEGIN { printf "%.1f", b / 1e6 }')" "$(fmt "$t" 3)" \
		"$(spread 3 <"$BENCH_TMP/t.$n")" "$(fmt "$j" 3)" \
		"$(awk -v n="$n" -v t="$t" 'BEGIN { printf "%.0f", n / t }')" "$(ratio "$t" "$j" 2)" \
		"$(kib_to_mib "$(peak_rss_kib "$BIN/topograph" -j "$f")")" \
		"$(kib_to_mib "$(peak_rss_kib "$JQ" -c 'select(.type=="edge")' "$f")")" >>"$body"
done

{
	md_h3 "Start-up of a live capture"
} >>"$body"
if [ -x "$BIN/socketsnoop" ] && [ -x "$BIN/ipcsnoop" ]; then
	bench_mode topograph stderr "Tracing the communication graph" "$BIN/topograph" -j -d 2
	bench_mode socketsnoop stderr "Tracing" "$BIN/socketsnoop" -j -d 2
	bench_mode ipcsnoop stderr "Tracing" "$BIN/ipcsnoop" -j -d 2
	run_lifecycle "$REPS" topograph socketsnoop ipcsnoop
	{
		echo "Exec to attached (the \"Tracing\" line; topograph's when both tools have said theirs), and"
		echo "exec to exit with \`-d 2\`; the tools started alone, interleaved with topograph running both;"
		echo "medians of $REPS."
		echo
		md_header "run" "exec -> attached (ms)" "exec -> exit (ms)"
		for m in topograph socketsnoop ipcsnoop; do
			md_row "\`$(bench_cmd_text "$m" | sed "s|$BENCH_ROOT/||g")\`" \
				"$(fmt "$(life_median_ms "$m" ready)" 1)" "$(fmt "$(life_median_ms "$m" exit)" 1)"
		done
	} >>"$body"
else
	missing=
	for t in socketsnoop ipcsnoop; do
		[ -x "$BIN/$t" ] || missing+=" $t"
	done
	echo "Not measured: not built in \`${BIN#"$BENCH_ROOT"/}\`:$missing." >>"$body"
fi
{
	md_h3 "Reproduce"
	echo "\`scripts/bench/topograph.sh\` (as root; REPS=$REPS) writes this section only."
} >>"$body"

md_section "$OUT" topograph "$body"
bench_log "wrote the topograph section of $OUT"
