#!/usr/bin/env bash
# scripts/bench/startup.sh: exec to exit and peak RSS of every tool's
# shortest run (`TOOL -n 1 -i 1ms`: load, attach, one interval, detach,
# exit), beside libbpf-tools' runqlat doing the same (`runqlat 0 1`: a 0 s
# interval, once). Targets (issue 20): schedlat at most 20 ms and
# 8 MiB, every other tool within twice that. Medians of REPS runs, the
# tools interleaved so that the host's load falls on all alike. Writes the
# startup section of docs/PERFORMANCE.md. As root, after `make`:
#
#   scripts/bench/startup.sh
#
# Environment: REPS (default 11), OUT (default docs/PERFORMANCE.md), BUILD
# (default build), RUNQLAT (default: runqlat from libbpf-tools).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-11}
BUILD=${BUILD:-$BENCH_ROOT/build}
RUNQLAT=${RUNQLAT:-$(command -v runqlat || echo /usr/sbin/runqlat)}
TOOLS="schedlat socketsnoop ipcsnoop cachestat gpulaunch oomwatch nclstat numaplace"

bench_init
[ -x /usr/bin/time ] || bench_die "/usr/bin/time not found (apt-get install time)"
for t in $TOOLS; do
	[ -x "$BUILD/$t" ] || bench_die "$BUILD/$t not built (make)"
done
cd "$BENCH_ROOT" || exit 1

# one_run NAME CMD...: exec to exit (us) and peak RSS (KiB) of CMD, to
# $BENCH_TMP/NAME.{ms,kib}; a run that fails is logged and not counted
one_run() {
	local name=$1 t0 us
	shift
	t0=$EPOCHREALTIME
	if ! /usr/bin/time -o "$BENCH_TMP/rss" -f %M "$@" >/dev/null 2>"$BENCH_TMP/err"; then
		bench_log "$name: failed: $(head -c 300 "$BENCH_TMP/err")"
		return
	fi
	us=$(us_since "$t0")
	awk -v u="$us" 'BEGIN { printf "%.1f\n", u / 1000 }' >>"$BENCH_TMP/$name.ms"
	tail -n 1 "$BENCH_TMP/rss" >>"$BENCH_TMP/$name.kib"
}

have_runqlat=0
[ -x "$RUNQLAT" ] && have_runqlat=1
for ((r = 0; r < REPS; r++)); do
	for t in $TOOLS; do
		one_run "$t" "$BUILD/$t" -n 1 -i 1ms
	done
	[ "$have_runqlat" = 0 ] || one_run runqlat "$RUNQLAT" 0 1
done

# row NAME TARGET_MS TARGET_MIB: median ms, median MiB and the verdict
row() {
	local name=$1 ms mib verdict
	if [ ! -s "$BENCH_TMP/$name.ms" ]; then
		md_row "\`$name\`" "failed" "-" "-" "-"
		return
	fi
	ms=$(median <"$BENCH_TMP/$name.ms")
	mib=$(awk '{ print $1 / 1024 }' "$BENCH_TMP/$name.kib" | median)
	verdict=$(awk -v m="$ms" -v r="$mib" -v tm="$2" -v tr="$3" 'BEGIN {
		printf "%s, %s", (m <= tm ? "met" : "**not met**"), (r <= tr ? "met" : "**not met**") }')
	md_row "\`$name -n 1 -i 1ms\`" "$(fmt "$ms")" "$(fmt "$mib")" "$(wc -l <"$BENCH_TMP/$name.ms")" \
		"$2 ms, $3 MiB: $verdict"
}

body=$BENCH_TMP/body
{
	echo "## Start-up: exec to exit and peak RSS"
	echo
	echo "$BENCH_DATE, $BENCH_KERNEL, $BENCH_NPROC CPUs ($BENCH_CPU), load average $BENCH_LOAD"
	echo "at the start ($(cut -d' ' -f1-3 /proc/loadavg) at the end); $BENCH_FOREIGN_START tracing BPF programs of others"
	echo "loaded. Each tool's shortest run: load, attach, one 1 ms interval, detach, exit;"
	echo "medians of $REPS runs, the tools interleaved. Peak RSS from \`/usr/bin/time -f %M\`."
	echo
	md_header "command" "exec to exit (ms)" "peak RSS (MiB)" "runs" "target"
	for t in $TOOLS; do
		case $t in
		schedlat) row "$t" 20 8 ;;
		*) row "$t" 40 16 ;;
		esac
	done
	if [ "$have_runqlat" = 1 ] && [ -s "$BENCH_TMP/runqlat.ms" ]; then
		md_row "libbpf-tools \`runqlat 0 1\`" \
			"$(fmt "$(median <"$BENCH_TMP/runqlat.ms")")" \
			"$(fmt "$(awk '{ print $1 / 1024 }' "$BENCH_TMP/runqlat.kib" | median)")" \
			"$(wc -l <"$BENCH_TMP/runqlat.ms")" "-"
	fi
	echo
	echo "The wall times include waiting for a CPU: on a loaded host they say"
	echo "more about the host than about the tools (the load averages above)."
	echo
	echo "Reproduce: \`scripts/bench/startup.sh\` (as root, after \`make\`)."
} >"$body"
md_section "$OUT" startup "$body"
cat "$body"
