#!/usr/bin/env bash
# scripts/bench/socketsnoop.sh: socketsnoop beside its peers, in one run, as ratios.
#
# Workload: tests/helpers/rrloop, a loopback TCP request/response loop of
# 64-byte messages (client and echo server, both pinned to one CPU by
# default). Peers: bpftrace with scripts/bench/socketsnoop-like.bt (bytes and
# calls on the same sock_send_length/sock_recv_length tracepoints) and
# libbpf-tools tcplife (for -e); libbpf-tools tcptop and tcpconnect are tried
# and their failure recorded (kprobe-only). Writes the socketsnoop section of
# docs/PERFORMANCE.md. Run as root, after make:
#
#   scripts/bench/socketsnoop.sh            # REPS=5
#
# Environment: REPS (default 5), MS (workload length per run, default 1500),
# PIN_CPU (default 0; empty: unpinned), OUT (default docs/PERFORMANCE.md),
# SOCKETSNOOP (default build/socketsnoop), BPFTRACE (default bpftrace).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

REPS=${REPS:-5}
MS=${MS:-1500}
PIN_CPU=${PIN_CPU-0}
SS=${SOCKETSNOOP:-$BENCH_ROOT/build/socketsnoop}
RR=$BENCH_ROOT/build/tests/helpers/rrloop
BT=$BENCH_ROOT/scripts/bench/socketsnoop-like.bt
TCPLIFE=$(command -v tcplife || echo /usr/sbin/tcplife)

bench_init
bench_needs --time "$SS" "$RR"
S=$(rel "$SS")
B=$(rel "$BT")

bench_pin
rr_ops() { "${PIN[@]}" "$RR" "$MS" 64; }
WORKLOAD="${PIN[*]}${PIN_CPU:+ }$(rel "$RR") $MS 64"

SMARK="Ctrl-C to end."		# socketsnoop, stderr, after attach
BMARK="Attaching"		# bpftrace, stdout
LMARK="PID"			# tcplife, stdout: its header after attach

ovh_mode socketsnoop "socketsnoop (table)" "$S -C >/dev/null" \
	stderr "$SMARK" stdbuf -oL "$SS" -C
ovh_mode socketsnoop-json "socketsnoop (--json)" "$S -j >/dev/null" \
	stderr "$SMARK" stdbuf -oL "$SS" -j
ovh_mode socketsnoop-e "socketsnoop -e (--json)" "$S -e -j >/dev/null" \
	stderr "$SMARK" stdbuf -oL "$SS" -e -j
ovh_mode bpftrace "bpftrace socketsnoop-like.bt" "bpftrace $B 1000 >/dev/null" \
	stdout "$BMARK" stdbuf -oL "$BPFTRACE" "$BT" 1000
if [ -x "$TCPLIFE" ]; then
	ovh_mode tcplife "libbpf-tools tcplife" "tcplife >/dev/null" \
		stdout "$LMARK" stdbuf -oL "$TCPLIFE"
fi

# the kprobe-only peers: what they say here
peer_try() {
	local bin out
	bin=$(command -v "$1" || echo "/usr/sbin/$1")
	[ -x "$bin" ] || { echo "not installed (apt-get install libbpf-tools)"; return; }
	out=$(timeout 5 "$bin" "${@:2}" 2>&1 >/dev/null)
	if grep -qE 'failed to (create|attach)' <<<"$out"; then
		grep -m1 -E 'failed to create' <<<"$out" || grep -m1 -E 'failed to attach' <<<"$out"
	else
		echo "ran (attached)"
	fi
}
tcptop_says=$(peer_try tcptop -C 1 1)
tcpconnect_says=$(peer_try tcpconnect)

probe_mode=$("$SS" -C -n 1 -i 1ms 2>&1 >/dev/null | sed -n 's/.*flows (\(.*\))\.\.\..*/\1/p')
plan=$("$SS" --list-probes | awk '/chosen/ && /^(send|recv|inet_sock_set_state) / { print $1 "=" $2 }' | paste -sd' ')
bench_log "socketsnoop attaches with: ${probe_mode:-?} ($plan); REPS=$REPS MS=$MS"
bench_log "overhead: ${#OVH_MODES[@]} modes x $REPS pairs"
run_overhead "$REPS" rr_ops "${OVH_MODES[@]}"

bench_mode l-socketsnoop stderr "$SMARK" stdbuf -oL "$SS" -C -n 1 -i 1ms
bench_mode l-bpftrace    stdout "$BMARK" stdbuf -oL timeout -s INT 1 "$BPFTRACE" "$BT" 1
run_lifecycle 3 l-socketsnoop
mkdir -p "$BENCH_TMP/rss"
for ((r = 0; r < 3; r++)); do
	peak_rss_kib "$SS" -C -n 1 -i 1ms >>"$BENCH_TMP/rss/short"
	peak_rss_kib "$SS" -j -e -d 3s >>"$BENCH_TMP/rss/load" &
	"${PIN[@]}" "$RR" 2500 64 >/dev/null
	wait
done
rss_mib() { kib_to_mib "$(median <"$BENCH_TMP/rss/$1")"; }

# ---- report ----
ss_ratio=$(ovh_median socketsnoop ratio)
sj_ratio=$(ovh_median socketsnoop-json ratio)
se_ratio=$(ovh_median socketsnoop-e ratio)
bt_ratio=$(ovh_median bpftrace ratio)
bench_report socketsnoop
{
	echo "Peers: bpftrace $(bpftrace_version) with"
	echo "[\`scripts/bench/socketsnoop-like.bt\`](../scripts/bench/socketsnoop-like.bt) (bytes and calls per"
	echo "process and protocol on the same \`sock_send_length\`/\`sock_recv_length\` tracepoints; the classic"
	echo "tracepoint has no ports, so its key is coarser than socketsnoop's 4-tuple) and, beside \`-e\`,"
	echo "libbpf-tools \`tcplife\` (tracepoint \`sock:inet_sock_set_state\`)."
	echo "libbpf-tools \`tcptop\` and \`tcpconnect\` cannot attach on this kernel: they are kprobe-only"
	echo "(\`tcp_sendmsg\`, \`tcp_cleanup_rbuf\`; \`tcp_v4_connect\`, \`tcp_v6_connect\`) and this kernel has no"
	echo "kprobes (CONFIG_KPROBES off). What they print here:"
	echo
	echo "- \`tcptop -C 1 1\`: \`$tcptop_says\`"
	echo "- \`tcpconnect\`: \`$tcpconnect_says\`"
	echo
	echo "Machine: $BENCH_NPROC CPUs ($BENCH_CPU), kernel $BENCH_KERNEL, $BENCH_OS; run $BENCH_DATE,"
	echo "load average at start $BENCH_LOAD; tracing BPF programs of others loaded: $BENCH_FOREIGN_START at"
	echo "start, $foreign_end at the end. **Measured on a shared 2-core VM** (other engineers' builds and"
	echo "tests ran at the same time): ratios come from interleaved pairs so that drift cancels, but the"
	echo "min-max shows the noise. socketsnoop attached with \`${probe_mode:-?}\` ($plan)."
	md_h3 "Overhead: \`$WORKLOAD\`"
	echo "A loopback TCP request/response loop of 64-byte messages (send, then wait for the echo), so"
	echo "every round trip is two sends and two receives, each a tracepoint hit. Pairs, interleaved: for"
	echo "each repetition and each tool, the workload bare, then with the tool attached; ratio = round"
	echo "trips/s with the tool / round trips/s of its bare run (1.000: no cost). Medians of REPS=$REPS."
	echo
	md_ovh_table "bare round trips/s" "with tool"
	md_h3 "Startup and memory"
	echo "- exec -> attached (\"Tracing TCP/UDP flows ... Ctrl-C to end.\" on stderr), median of 3:"
	echo "  $(fmt "$(life_median_ms l-socketsnoop ready)" 1) ms; exec -> exit of \`$S -C -n 1 -i 1ms\`:"
	echo "  $(fmt "$(life_median_ms l-socketsnoop exit)" 1) ms."
	echo "- Peak RSS (\`/usr/bin/time -f %M\`): $(rss_mib short) MiB for \`$S -C -n 1 -i 1ms\`,"
	echo "  $(rss_mib load) MiB for \`$S -j -e -d 3s\` while the workload runs."
	md_h3 "Targets"
	met() { if "$@"; then echo "**met**"; else echo "**not met**"; fi; }
	echo "- Default mode under 5% of throughput: ratio $(fmt "$ss_ratio" 3) (table), $(fmt "$sj_ratio" 3) (--json):" \
		"$(met awk -v a="$ss_ratio" -v b="$sj_ratio" 'BEGIN { exit !(a >= 0.95 && b >= 0.95) }')."
	echo "- No more than the bpftrace equivalent: socketsnoop $(fmt "$ss_ratio" 3) vs bpftrace $(fmt "$bt_ratio" 3):" \
		"$(met cmp_le "$bt_ratio" "$ss_ratio")."
	echo "- \`-e\` (not a target): $(fmt "$se_ratio" 3)."
	md_h3 "Reproduce"
	echo "As root, after \`make\`: \`scripts/bench/socketsnoop.sh\` (about 2 minutes; REPS, MS and PIN_CPU"
	echo "change the repetitions, the length of one workload run and the CPU it is pinned to). It rewrites"
	echo "this section only. Needs \`bpftrace\`, \`/usr/bin/time\` (time) and, for the peers' rows,"
	echo "\`libbpf-tools\`."
} >>"$body"

md_section "$OUT" socketsnoop "$body"
bench_log "wrote the socketsnoop section of $(rel "$OUT")"
cat "$body"
