#!/usr/bin/env bash
# scripts/bench/gpulaunch.sh: gpulaunch beside bpftrace, in one run, as costs per call.
#
# Workload: tests/cuda/cudacall calls cudaLaunchKernel of Debian's real
# libcudart 11.8 (scripts/fixtures.sh) in a loop: the error path (no GPU),
# so that the probes' cost is all there is to see. Modes: bare, gpulaunch
# (default: entry probes, counts in the kernel), gpulaunch --latency
# (return probes too), and bpftrace counting the calls of the same symbol
# with a uprobe (count only). Writes the gpulaunch section of
# docs/PERFORMANCE.md. Run as root:
#
#   scripts/bench/gpulaunch.sh            # REPS=5
#   REPS=3 CALLS=100000 scripts/bench/gpulaunch.sh
#
# Environment: REPS (repetitions, default 5), CALLS (launches per workload
# run, default 200000), OUT (default docs/PERFORMANCE.md), GPULAUNCH
# (default build/gpulaunch), BPFTRACE (default bpftrace).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-5}
CALLS=${CALLS:-200000}
GPULAUNCH=${GPULAUNCH:-$BENCH_ROOT/build/gpulaunch}
CUDACALL=$BENCH_ROOT/build/tests/cuda/cudacall

bench_init
bench_needs --time "$GPULAUNCH" "$CUDACALL"
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
scripts/fixtures.sh "$BENCH_ROOT/build/fixtures" || true
FIX=$BENCH_ROOT/build/fixtures/$arch/lib
[ -e "$FIX/libcudart.so.11.0" ] || bench_die "no Debian libcudart 11.8 fixture (scripts/fixtures.sh)"
LIB=$(readlink -f "$FIX/libcudart.so.11.0")

G=$(rel "$GPULAUNCH")
L=$(rel "$LIB")

# ---- the workload: one figure, calls/sec ----
launch_rate() {
	LD_LIBRARY_PATH=$FIX "$CUDACALL" --rt "$LIB" "loop:$CALLS" |
		jq -r 'select(.api == "loop") | .calls_per_sec'
}
WORKLOAD="build/tests/cuda/cudacall --rt $L loop:$CALLS"

# ---- modes: attached to the library by path, before the workload starts ----
GMARK="Ctrl-C to end."		# gpulaunch, stderr, after attach
# bpftrace prints "Attaching N probes..." before it attaches, and a SIGINT
# that comes while it attaches is lost (it then runs until killed): its
# BEGIN probe runs once every probe is attached
BMARK="gl-bench-ready"
BT_PROG="BEGIN { printf(\"$BMARK\\n\"); } uprobe:$LIB:cudaLaunchKernel { @[pid] = count(); }"
ovh_mode bpftrace "bpftrace uprobe count" \
	"bpftrace -e 'BEGIN { printf(\"$BMARK\\n\"); } uprobe:$L:cudaLaunchKernel { @[pid] = count(); }'" \
	stdout "$BMARK" stdbuf -oL "$BPFTRACE" -e "$BT_PROG"
ovh_mode gpulaunch "gpulaunch (default)" "$G -C --lib $L >/dev/null" \
	stderr "$GMARK" stdbuf -oL "$GPULAUNCH" -C --lib "$LIB"
ovh_mode gpulaunch-latency "gpulaunch --latency" "$G -C --latency --lib $L >/dev/null" \
	stderr "$GMARK" stdbuf -oL "$GPULAUNCH" -C --latency --lib "$LIB"
ovh_mode gpulaunch-events "gpulaunch -e -j" "$G -e -j --lib $L >/dev/null" \
	stderr "$GMARK" stdbuf -oL "$GPULAUNCH" -e -j --lib "$LIB"

bench_mode l-gpulaunch stderr "$GMARK" stdbuf -oL "$GPULAUNCH" -C -n 1 -i 1ms --lib "$LIB"
bench_mode l-bpftrace  stdout "$BMARK" stdbuf -oL "$BPFTRACE" -e "$BT_PROG interval:ms:1 { exit(); }"
LIFE_MODES=(l-gpulaunch l-bpftrace)
declare -A LIFE_CMD=(
	[l-gpulaunch]="$G -C -n 1 -i 1ms --lib $L"
	[l-bpftrace]="bpftrace -e '... interval:ms:1 { exit(); }'")

# ---- run ----
bench_log "REPS=$REPS CALLS=$CALLS"
run_modes "$REPS" launch_rate "$CALLS" launch call

mkdir -p "$BENCH_TMP/rss"
for ((r = 1; r <= REPS; r++)); do
	peak_rss_kib "$GPULAUNCH" -C -n 1 -i 1ms --lib "$LIB" >>"$BENCH_TMP/rss/gpulaunch"
	peak_rss_kib "$BPFTRACE" -e "$BT_PROG interval:ms:1 { exit(); }" >>"$BENCH_TMP/rss/bpftrace"
done
rss_mib() { kib_to_mib "$(median <"$BENCH_TMP/rss/$1")"; }

# ---- report ----
# added cost per call, microseconds: 1/rate with the tool - 1/rate bare, per pair
added_us() {
	paste "$BENCH_TMP/ovh/$1.bare" "$BENCH_TMP/ovh/$1.tool" |
		awk '{ printf "%.4f\n", 1e6 / $2 - 1e6 / $1 }' | median
}
added_spread() {
	paste "$BENCH_TMP/ovh/$1.bare" "$BENCH_TMP/ovh/$1.tool" |
		awk '{ printf "%.4f\n", 1e6 / $2 - 1e6 / $1 }' | spread 3
}
bt_us=$(added_us bpftrace)
gl_us=$(added_us gpulaunch)
bench_report gpulaunch
{
	echo "Peer: bpftrace $(bpftrace_version) with one uprobe on the same symbol that counts calls per"
	echo "process (\`@[pid] = count()\`), the cheapest thing a uprobe can do. No libbpf-tools tool traces CUDA."
	echo "Workload: \`$WORKLOAD\`, a loop of \`cudaLaunchKernel\` (grid 4,2,1, block"
	echo "256,1,1, 1024 B shared memory) into Debian's real libcudart 11.8 on a host without a GPU:"
	echo "every call takes the error path (cudaErrorNoDevice) in well under a microsecond, so what"
	echo "the probes cost is most of what is measured. Every tool attaches to the library by path"
	echo "before the workload starts."
	echo
	echo "Machine: a shared $BENCH_NPROC-CPU VM ($BENCH_CPU), kernel $BENCH_KERNEL, $BENCH_OS; run"
	echo "$BENCH_DATE, load average at start $BENCH_LOAD (other engineers' builds and tests ran at the"
	echo "same time: see the min-max); tracing BPF programs of others loaded: $BENCH_FOREIGN_START at"
	echo "start, $foreign_end at the end. Medians of REPS=$REPS."
	md_h3 "Cost per call"
	echo "Pairs, interleaved: for each repetition and each tool, the workload bare, then with the tool"
	echo "attached. *added per call*: 1/calls-per-second with the tool minus the same of its bare run,"
	echo "in microseconds (the uprobe trap, the BPF programs, and for return probes the second trap)."
	echo
	md_header tool command "bare calls/s" "with tool calls/s" "added per call (us)" "min-max (us)" "vs bpftrace"
	for m in "${OVH_MODES[@]}"; do
		a=$(added_us "$m")
		md_row "${OVH_LABEL[$m]}" "\`${OVH_CMD[$m]}\`" "$(fmt "$(ovh_median "$m" bare)" 0)" \
			"$(fmt "$(ovh_median "$m" tool)" 0)" "**$(fmt "$a" 3)**" "$(added_spread "$m")" \
			"$(ratio "$a" "$bt_us" 2)"
	done
	md_h3 "BPF run time per call"
	echo "The tools' own BPF programs as the kernel counts them with \`kernel.bpf_stats_enabled=1\`,"
	echo "during one more workload run per repetition: all programs' run time divided by the calls"
	echo "(the trap into the kernel is not in it)."
	echo
	if [ -n "$have_cost" ]; then
		md_header tool "BPF ns per call"
		for m in "${OVH_MODES[@]}"; do
			md_row "${OVH_LABEL[$m]}" "$(fmt "$(cost_median "$m" perop)" 0)"
		done
	else
		echo "Not measured: bpftool is missing."
	fi
	md_h3 "Lifecycle and memory"
	echo "One interval of 1 ms, then exit. *attached*: gpulaunch's \"Tracing CUDA launches ... Ctrl-C to"
	echo "end.\" on stderr, after attach; bpftrace's line from its BEGIN probe, which runs once its"
	echo "probes are attached (its \"Attaching 2 probes...\" comes before). Peak RSS:"
	echo "\`/usr/bin/time -f %M\` of the same runs."
	echo
	md_header tool command "exec->attached (ms)" "exec->exit (ms)" "peak RSS (MiB)"
	md_row gpulaunch "\`${LIFE_CMD[l-gpulaunch]}\`" "$(fmt "$(life_median_ms l-gpulaunch ready)" 1)" \
		"$(fmt "$(life_median_ms l-gpulaunch exit)" 1)" "$(rss_mib gpulaunch)"
	md_row bpftrace "\`${LIFE_CMD[l-bpftrace]}\`" "$(fmt "$(life_median_ms l-bpftrace ready)" 1)" \
		"$(fmt "$(life_median_ms l-bpftrace exit)" 1)" "$(rss_mib bpftrace)"
	md_h3 "Target"
	met() { if "$@"; then echo "**met**"; else echo "**not met**"; fi; }
	lim=$(awk -v b="$bt_us" 'BEGIN { print b * 1.10 }')
	echo "- Default mode within 10% of bpftrace's count-only cost per call: gpulaunch"
	echo "  $(fmt "$gl_us" 3) us vs bpftrace $(fmt "$bt_us" 3) us per call (ratio $(ratio "$gl_us" "$bt_us" 2)):" \
		"$(met cmp_le "$gl_us" "$lim")."
	echo "  \`--latency\` and \`-e\` add a return probe, a second trap per call: about twice the cost."
	md_h3 "Reproduce"
	echo "As root, after \`make\`: \`scripts/bench/gpulaunch.sh\` (about 2 minutes on 2 CPUs; REPS and"
	echo "CALLS change the repetitions and the loop length). It fetches the fixture libraries"
	echo "(\`scripts/fixtures.sh\`) and rewrites this section only. Needs \`bpftrace\`, \`jq\` and"
	echo "\`/usr/bin/time\` (time)."
} >>"$body"

md_section "$OUT" gpulaunch "$body"
bench_log "wrote the gpulaunch section of $(rel "$OUT")"
cat "$body"
