#!/usr/bin/env bash
# scripts/bench/socketsnoop-cap.sh: socketsnoop driven past its run's flow
# table cap quickly, to show the bound by design: RSS at the cap, and the
# flows forgotten counted in the summary and on stderr. A benchmark, not a
# timed test (spec/TESTING.md); the soak's 10 flows a second take about two
# hours to fill the table.
#
# socketsnoop runs with its unit's options (deploy/systemd); one process
# sends one UDP datagram to each of FLOWS (address, port) pairs on loopback
# (127.0.0.1 to 127.0.0.N, ports 1024 to 65023), RATE a second: each a new
# flow. The kernel's per-interval flow map holds 8192 flows an interval, so
# RATE times the interval (15 s) stays under it: nothing is lost there, the
# run's table is what fills. VmRSS every SAMPLE seconds, then SIGINT: the
# peak RSS of the whole run (edge lines at exit included), the summary's
# flows and edge_flows_evicted, and the stderr line.
#
#   nice -n 10 scripts/bench/socketsnoop-cap.sh          # 120000 flows
#   FLOWS=200000 RATE=500 scripts/bench/socketsnoop-cap.sh
#
# Environment: FLOWS (default 120000), RATE (flows a second, default 450),
# SAMPLE (default 10), BIN (default build/), OUTDIR (default a new
# /tmp/aiscope-sscap.XXXXXX, kept).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
BENCH_TAG=sscap
FLOWS=${FLOWS:-120000}
RATE=${RATE:-450}
SAMPLE=${SAMPLE:-10}
BIN=${BIN:-$BENCH_ROOT/build}

bench_need_root
need python3
need_built "$BIN/socketsnoop"
need_time
bench_outdir sscap

args=$(bench_unit_args socketsnoop) && [ -n "$args" ] || exit 1

SS_PID='' DRV_PID='' tool=''
cleanup() {
	[ -n "$DRV_PID" ] && kill "$DRV_PID" 2>/dev/null
	[ -n "$tool" ] && kill -INT "$tool" 2>/dev/null
	wait 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2086 # the unit's words
/usr/bin/time -f %M -o "$OUTDIR/peak_kib" "$BIN/socketsnoop" $args \
	--prometheus "$OUTDIR/socketsnoop.prom" >"$OUTDIR/socketsnoop.json" \
	2>"$OUTDIR/socketsnoop.err" &
SS_PID=$!
# the tool itself, under time(1)
for _ in $(seq 50); do
	tool=$(pgrep -P "$SS_PID" -x socketsnoop) && break
	sleep 0.1
done
[ -n "$tool" ] || bench_die "socketsnoop did not start: $(head -c 300 "$OUTDIR/socketsnoop.err")"
for _ in $(seq 100); do
	grep -q 'Ctrl-C' "$OUTDIR/socketsnoop.err" && break
	sleep 0.1
done

python3 - "$FLOWS" "$RATE" <<'EOF' >"$OUTDIR/driver.log" 2>&1 &
import socket, sys, time

flows, rate = int(sys.argv[1]), int(sys.argv[2])
ports = 64000
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
t0 = time.monotonic()
for i in range(flows):
    addr = "127.0.0.%d" % (1 + i // ports)
    try:
        s.sendto(b"x", (addr, 1024 + i % ports))
    except OSError:
        pass  # ICMP port unreachable of an earlier datagram, reported here
    if i % rate == rate - 1:
        left = t0 + (i + 1) / rate - time.monotonic()
        if left > 0:
            time.sleep(left)
print("sent", flows, "in", round(time.monotonic() - t0, 1), "s", flush=True)
EOF
DRV_PID=$!

CSV=$OUTDIR/rss.csv
echo "elapsed_s,rss_kib" >"$CSV"
bench_log "socketsnoop $args; $FLOWS flows at $RATE/s; samples in $CSV"
start=$SECONDS
while kill -0 "$DRV_PID" 2>/dev/null; do
	echo "$((SECONDS - start)),$(awk '/^VmRSS:/ { print $2 }' "/proc/$tool/status")" >>"$CSV"
	sleep "$SAMPLE"
done
DRV_PID=
# one more interval: the last flows reach the run's table
sleep 16
rss_end=$(awk '/^VmRSS:/ { print $2 }' "/proc/$tool/status")
echo "$((SECONDS - start)),$rss_end" >>"$CSV"
t0=$(date +%s.%N)
# time(1) ignores SIGINT while it waits: the tool gets it
kill -INT "$tool"
wait "$SS_PID"
rc=$?
tool=
t1=$(date +%s.%N)

cat "$OUTDIR/driver.log" >&2
summary=$(grep '"type":"summary"' "$OUTDIR/socketsnoop.json" | tail -1)
printf 'flows sent %s at %s/s; socketsnoop exit %s in %.1f s after SIGINT\n' "$FLOWS" "$RATE" "$rc" \
	"$(echo "$t1 - $t0" | bc)"
printf 'RSS before SIGINT %s KiB; peak (exit included) %s KiB\n' "$rss_end" "$(cat "$OUTDIR/peak_kib")"
printf 'summary: flows %s, edge_flows_evicted %s, lost %s\n' \
	"$(jq -r '.flows' <<<"$summary")" "$(jq -r '.edge_flows_evicted' <<<"$summary")" \
	"$(jq -c "with_entries(select(.key | test(\"lost\")))" <<<"$summary")"
printf 'stderr: %s\n' "$(grep -i 'forgotten' "$OUTDIR/socketsnoop.err" | head -3)"
printf 'edge lines: %s\n' "$(grep -c '"type":"edge"' "$OUTDIR/socketsnoop.json")"
bench_log "kept: $OUTDIR"
