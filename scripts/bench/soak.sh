#!/usr/bin/env bash
# scripts/bench/soak.sh: the long-lived tools under churn for a long time,
# their RSS sampled: is memory flat?  A benchmark, not a timed test: it
# reports, it does not pass or fail (spec/TESTING.md).
#
# Each tool runs as its systemd unit runs it (deploy/systemd/*.service: the
# same options, --json to a file and --prometheus into a temp directory)
# while a churn driver makes, every second, CHURN new short-lived processes,
# CHURN new TCP connections on loopback (each a new flow: new client port),
# CHURN new unix socket pairs, pipes and FIFOs (each a new channel), and one
# new cgroup (cgroup2 and the v1 memory hierarchy) with a process in it,
# removed once that process is gone; and every LIBCHURN seconds a new copy
# of the CUDA and NCCL test doubles (build/tests: libcudart, libcuda,
# libnccl, and the real libcudart.so.13 where /usr/local/cuda has it) in a
# new directory, loaded by cudacall and ncclrank started from there, then
# removed: each copy is a new file (inode) that gpulaunch and nclstat attach
# to, as on a host where jobs bring their own CUDA and NCCL, and drop once
# no process maps it. Every SAMPLE seconds the VmRSS of each
# tool is written to OUTDIR/rss.csv (elapsed_s,tool,rss_kib); at the end a
# table: RSS at start (first sample), at 10 minutes, at the end, its peak,
# and the growth per minute over the last half of the run.
#
#   nice -n 19 scripts/bench/soak.sh                     # 1 hour, every tool
#   DURATION=600 TOOLS="ipcsnoop socketsnoop" scripts/bench/soak.sh
#
# Environment: DURATION (seconds, default 3600), SAMPLE (seconds, default
# 30), CHURN (operations of each kind per second, default 5), TOOLS (default
# the units' tools), LIBCHURN (seconds between library copies, default 6; 0:
# none), BIN (the tools' directory, default build/; copy a build
# elsewhere to keep working on the tree meanwhile), OUTDIR (default a new
# /tmp/aiscope-soak.XXXXXX, kept).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"
BENCH_TAG=soak
DURATION=${DURATION:-3600}
SAMPLE=${SAMPLE:-30}
CHURN=${CHURN:-5}
TOOLS=${TOOLS:-schedlat cachestat ipcsnoop nclstat socketsnoop gpulaunch oomwatch numaplace}
LIBCHURN=${LIBCHURN:-6}
BIN=${BIN:-$BENCH_ROOT/build}

bench_need_root
need python3
bench_outdir soak

declare -A PID
cleanup() {
	[ -n "${CHURN_PID:-}" ] && kill "$CHURN_PID" 2>/dev/null && wait "$CHURN_PID" 2>/dev/null
	[ -n "${LIB_PID:-}" ] && kill "$LIB_PID" 2>/dev/null && wait "$LIB_PID" 2>/dev/null
	rm -rf "$OUTDIR"/lib.??????
	bench_kill_wait INT "${PID[@]}"
	PID=()
	# the churn driver's cgroups, should it have been stopped amid one
	# (its own only: another soak's driver may be running)
	[ -n "${CHURN_PID:-}" ] &&
		rmdir /sys/fs/cgroup/{unified,memory}/aiscope-soak-"$CHURN_PID"/c* \
			/sys/fs/cgroup/{unified,memory}/aiscope-soak-"$CHURN_PID" 2>/dev/null
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for t in $TOOLS; do
	need_built "$BIN/$t"
	# shellcheck disable=SC2046 # the unit's words
	"$BIN/$t" $(bench_unit_args "$t") --prometheus "$OUTDIR/$t.prom" \
		>"$OUTDIR/$t.json" 2>"$OUTDIR/$t.err" &
	PID[$t]=$!
done
sleep 5
for t in "${!PID[@]}"; do
	if ! kill -0 "${PID[$t]}" 2>/dev/null; then
		bench_log "$t did not start: $(head -c 300 "$OUTDIR/$t.err")"
		unset "PID[$t]"
	fi
done
[ ${#PID[@]} -gt 0 ] || bench_die "no tool started"

python3 - "$CHURN" "$OUTDIR" >"$OUTDIR/churn.log" 2>&1 <<'EOF' &
import os, socket, sys, time, threading

rate = int(sys.argv[1])
out = sys.argv[2]
v2 = "/sys/fs/cgroup/unified" if os.path.exists("/sys/fs/cgroup/unified/cgroup.procs") else "/sys/fs/cgroup"
v1 = "/sys/fs/cgroup/memory" if os.path.exists("/sys/fs/cgroup/memory/cgroup.procs") else None
roots = [os.path.join(r, "aiscope-soak-%d" % os.getpid()) for r in (v2, v1) if r]
for r in roots:
    os.makedirs(r, exist_ok=True)

srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(256)

def serve():
    while True:
        c, _ = srv.accept()
        try:
            c.sendall(c.recv(4096))
        except OSError:
            pass
        c.close()

threading.Thread(target=serve, daemon=True).start()
fifo = os.path.join(out, "churn.fifo")
if not os.path.exists(fifo):
    os.mkfifo(fifo)
n = 0
counts = {"procs": 0, "tcp": 0, "unix": 0, "pipes": 0, "cgroups": 0}
while True:
    t0 = time.monotonic()
    for _ in range(rate):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        counts["procs"] += 1
        c = socket.create_connection(srv.getsockname())
        c.sendall(b"x" * 512)
        c.recv(4096)
        c.close()
        counts["tcp"] += 1
        a, b = socket.socketpair()
        a.sendall(b"y" * 256)
        b.recv(4096)
        a.close(); b.close()
        counts["unix"] += 1
        r, w = os.pipe()
        os.write(w, b"z" * 128)
        os.read(r, 4096)
        os.close(r); os.close(w)
        counts["pipes"] += 1
    # one cgroup a second, a process in it that does some I/O, then removed
    cg = ["%s/c%d" % (r, n) for r in roots]
    n += 1
    for d in cg:
        os.mkdir(d)
    pid = os.fork()
    if pid == 0:
        for d in cg:
            with open(d + "/cgroup.procs", "w") as f:
                f.write("0")
        fd = os.open(fifo, os.O_RDWR)
        os.write(fd, b"q" * 64)
        os.read(fd, 64)
        os.close(fd)
        with open("/proc/self/stat") as f:
            f.read()
        os._exit(0)
    os.waitpid(pid, 0)
    for d in cg:
        for _ in range(50):
            try:
                os.rmdir(d)
                break
            except OSError:
                time.sleep(0.02)
    counts["cgroups"] += 1
    if n % 60 == 0:
        print(n, counts, flush=True)
    left = 1.0 - (time.monotonic() - t0)
    if left > 0:
        time.sleep(left)
EOF
CHURN_PID=$!

# libchurn: the library churn, one round every LIBCHURN seconds
libchurn() {
	local t=$BIN/tests n=0 d rt13=/usr/local/cuda/lib64/libcudart.so.13

	trap 'exit 0' TERM
	while :; do
		d=$(mktemp -d "$OUTDIR/lib.XXXXXX") || exit 1
		cp "$t/cuda/cudacall" "$t/cuda/double/libcudart.so.12" "$t/cuda/double/libcuda.so.1" \
			"$t/nccl/libnccl.so.2" "$t/nccl/ncclrank" "$d/" || exit 1
		LD_LIBRARY_PATH=$d "$d/cudacall" --rt "$d/libcudart.so.12" --drv "$d/libcuda.so.1" \
			reg getkernel launch launch >/dev/null 2>&1
		if [ -r "$rt13" ]; then
			cp "$rt13" "$d/libcudart.so.13"
			"$d/cudacall" --rt "$d/libcudart.so.13" launch13 launch13 >/dev/null 2>&1
		fi
		LD_LIBRARY_PATH=$d timeout 20 "$d/ncclrank" run -i 3 >/dev/null 2>&1
		rm -rf "$d"
		n=$((n + 1))
		echo "$n" >"$OUTDIR/libchurn.count"
		sleep "$LIBCHURN"
	done
}
if [ "$LIBCHURN" != 0 ]; then
	for f in cuda/cudacall cuda/double/libcudart.so.12 nccl/ncclrank nccl/libnccl.so.2; do
		[ -r "$BIN/tests/$f" ] || bench_die "$BIN/tests/$f not built (make), or LIBCHURN=0"
	done
	libchurn &
	LIB_PID=$!
fi

CSV=$OUTDIR/rss.csv
echo "elapsed_s,tool,rss_kib" >"$CSV"
bench_log "tools: ${!PID[*]}; churn $CHURN/s; ${DURATION}s; samples in $CSV"
start=$SECONDS
while :; do
	el=$((SECONDS - start))
	for t in "${!PID[@]}"; do
		rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/${PID[$t]}/status" 2>/dev/null)
		[ -n "$rss" ] && echo "$el,$t,$rss" >>"$CSV"
	done
	[ "$el" -ge "$DURATION" ] && break
	kill -0 "$CHURN_PID" 2>/dev/null || bench_die "the churn driver stopped: $(tail -3 "$OUTDIR/churn.log")"
	sleep "$SAMPLE"
done
cleanup
tail -1 "$OUTDIR/churn.log" >&2
[ "$LIBCHURN" != 0 ] && bench_log "library rounds: $(cat "$OUTDIR/libchurn.count" 2>/dev/null || echo 0)"

# start, 10 min, end, peak (KiB); growth (KiB/min) over the last half
printf '| tool | start KiB | 10 min KiB | end KiB | peak KiB | last half KiB/min |\n|---|---|---|---|---|---|\n'
awk -F, -v d="$DURATION" 'NR > 1 {
	t = $2; e = $1; r = $3
	if (!(t in first)) first[t] = r
	if (e <= 600) ten[t] = r
	last[t] = r; lastt[t] = e
	if (r > peak[t]) peak[t] = r
	if (e >= d / 2 && !(t in half)) { half[t] = r; halft[t] = e }
} END {
	for (t in first) {
		g = (lastt[t] > halft[t]) ? (last[t] - half[t]) * 60 / (lastt[t] - halft[t]) : 0
		printf "| %s | %d | %d | %d | %d | %.1f |\n", t, first[t], ten[t], last[t], peak[t], g
	}
}' "$CSV" | sort
bench_log "kept: $OUTDIR"
