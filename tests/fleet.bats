#!/usr/bin/env bats
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Fleet scale: --prometheus and --listen against real consumers from
# Debian's packages (promtool, a Prometheus server, node_exporter's textfile
# collector), the figures compared with the tool's own JSON (exactly) and
# with the kernel's (/proc), and the deploy/ manifests against the
# Kubernetes API schema.

bats_require_minimum_version 1.5.0
load lib

TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

teardown() {
	aiscope_teardown
}

# ---- helpers ----

# the tools whose --help offers --prometheus
metrics_tools() {
	local f t
	for f in "$TOP"/tools/*.c "$TOP"/tools/*/; do
		t=${f%/}
		t=${t##*/}
		t=${t%.c}
		[ -x "$BIN/$t" ] || continue
		"$BIN/$t" --help 2>/dev/null | grep -q -- '--prometheus=FILE' && echo "$t"
	done
}

# prom_value FILE SERIES: the value of one sample line ("name{labels}")
prom_value() {
	awk -v k="$2" 'substr($0, 1, length(k) + 1) == k " " { print $NF; f = 1 } END { exit !f }' "$1"
}

# sec_to_ns DECIMAL: "1.5" -> 1500000000, exactly (no floating point)
sec_to_ns() {
	local s=$1 int frac
	int=${s%%.*}
	frac=
	[[ $s == *.* ]] && frac=${s#*.}
	frac=$(printf '%-9s' "$frac" | tr ' ' 0)
	echo $((10#$int * 1000000000 + 10#${frac:0:9}))
}


# a fake docker container on the cgroup2 hierarchy with a contending
# process (4 threads on CPU 0) in it: sets CID, CG and CONTEND_PID
start_container_workload() {
	make_docker_cgroup
	start_contend w 4 0 250
	move_to_cgroup "$CG" "$CONTEND_PID"
}

# where_not_who FILE [LABELS]: a metrics file's labels say where, never
# who (no pid, tid or comm label, nor LABELS, an extended regex of more
# names); promtool accepts it where it is installed
where_not_who() {
	! grep -Eq "(^|[{,])(pid|tid|comm${2:+|$2})=" "$1" || false
	if command -v promtool > /dev/null; then
		promtool check metrics < "$1"
	fi
}

# json_sum FILE KEY: KEY summed over the schedlat samples of container CID
json_sum() {
	jq -s --arg id "$CID" --arg k "$2" \
		'[.[] | select(.type == "sample" and .container_id == $id) | .[$k]] | add // 0' "$1"
}

# normalize: sample lines of aiscope_ metrics as "name{sorted labels} value"
# with the value as a number, so that two renderings can be compared
normalize() {
	grep '^aiscope_' | awk '{
		v = $NF; line = substr($0, 1, length($0) - length(v) - 1)
		name = line; labels = ""
		i = index(line, "{")
		if (i) { name = substr(line, 1, i - 1); labels = substr(line, i + 1, length(line) - i - 1) }
		n = split(labels, l, /",/)
		for (j = 1; j < n; j++) l[j] = l[j] "\""
		# node_exporter writes le="1.023e-06" for le="0.000001023"
		for (j = 1; j <= n; j++) if (l[j] ~ /^le="[0-9.e+-]+"$/) {
			x = substr(l[j], 5, length(l[j]) - 5); l[j] = sprintf("le=\"%.17g\"", x + 0) }
		# insertion sort of the labels
		for (j = 2; j <= n; j++) { x = l[j]; k = j - 1; while (k > 0 && l[k] > x) { l[k + 1] = l[k]; k-- }; l[k + 1] = x }
		s = ""
		for (j = 1; j <= n; j++) if (l[j] != "") s = s (s == "" ? "" : ",") l[j]
		printf "%s{%s} %.17g\n", name, s, v + 0
	}' | LC_ALL=C sort
}

# ---- the options ----

@test "tools that export metrics take --prometheus and --listen; bad values exit 2 with one line" {
	local t args bad long
	# names that cannot be written: a path past PATH_MAX with the temporary
	# suffix, a file name past NAME_MAX; a FILE that is a link or a FIFO
	long=$(printf 'x%.0s' $(seq 5000))
	mkfifo "$BATS_TEST_TMPDIR/fifo.prom"
	ln -s /etc/passwd "$BATS_TEST_TMPDIR/link.prom"
	# every aggregating tool
	for t in schedlat cachestat ipcsnoop socketsnoop nclstat gpulaunch oomwatch; do
		metrics_tools | grep -qx "$t" || { echo "$t does not offer --prometheus"; false; }
	done
	for t in $(metrics_tools); do
		"$BIN/$t" --help | grep -q -- '--listen=ADDR:PORT'
		bad=(
			"--prometheus /nonexistent/dir/x.prom" "--prometheus /tmp" "--prometheus /tmp/"
			"--prometheus=" "--listen abc" "--listen 127.0.0.1:70000" "--listen ::1:80"
			"--listen 256.1.1.1:80" "--listen=" "--prometheus $long"
			"--prometheus $BATS_TEST_TMPDIR/${long:0:250}" "--prometheus $BATS_TEST_TMPDIR/fifo.prom"
			"--prometheus $BATS_TEST_TMPDIR/link.prom" "-i 1ns --prometheus $BATS_TEST_TMPDIR/x.prom"
		)
		for args in "${bad[@]}"; do
			# shellcheck disable=SC2086
			timeout -k 1 10 "$BIN/$t" $args -d 1 > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/err" && {
				echo "$t '$args' succeeded"; false; }
			rc=$?
			[ "$rc" -eq 2 ] || { echo "$t '$args' exited $rc"; cat "$BATS_TEST_TMPDIR/err"; false; }
			[ "$(wc -l < "$BATS_TEST_TMPDIR/err")" -eq 1 ] || {
				echo "$t '$args' printed:"; cat "$BATS_TEST_TMPDIR/err"; false; }
			[ ! -s "$BATS_TEST_TMPDIR/out" ]
		done
	done
	# schedlat's streaming mode has no intervals to export
	run "$BIN/schedlat" --min 1ms --prometheus "$BATS_TEST_TMPDIR/x.prom"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--min"*"--prometheus"* ]]
	# a streaming tool with a poller exports it; its one-scan mode writes a
	# file but serves nobody
	metrics_tools | grep -qx oomwatch
	run "$BIN/oomwatch" --check --listen 127.0.0.1:0
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == *"--check"*"--listen"* ]]
}

@test "--prometheus never writes through a link another user planted; the file is new, 0644, renamed" {
	need_root
	local d victim f
	# a world-writable sticky directory (like /tmp) that nobody can plant in
	d=$(mktemp -d /tmp/aiscope-prom.XXXXXX)
	TEST_DIRS+=("$d")
	chmod 1777 "$d"
	victim=$BATS_TEST_TMPDIR/victim
	echo precious > "$victim"
	chmod 600 "$victim"
	f=$d/schedlat.prom
	# at the fixed temporary name main used (FILE.tmp, O_TRUNC, followed)
	"${AS_NOBODY[@]}" ln -s "$victim" "$f.tmp"
	# and at FILE itself: refused up front, nothing started
	"${AS_NOBODY[@]}" ln -s "$victim" "$d/other.prom"
	run "$BIN/schedlat" -d 1 --prometheus "$d/other.prom"
	[ "$status" -eq 2 ]
	[ "$output" = "schedlat: invalid --prometheus '$d/other.prom': is a symbolic link, not a regular file" ]
	umask 077
	run "$BIN/schedlat" -i 200ms -d 1 --prometheus "$f"
	umask 022
	[ "$status" -eq 0 ]
	[ "$(cat "$victim")" = precious ]
	[ -L "$f.tmp" ] && [ "$(readlink "$f.tmp")" = "$victim" ]
	[ -f "$f" ] && [ ! -L "$f" ]
	[ "$(stat -c '%a %U' "$f")" = "644 root" ]
	grep -q '^aiscope_build_info{tool="schedlat"' "$f"
	# no temporary file left: FILE, the two links
	[ "$(find "$d" -mindepth 1 | sort | tr '\n' ' ')" = "$d/other.prom $f $f.tmp " ]
}

@test "a port in use is a usage error naming the address" {
	need_root
	local url port
	start_tool a schedlat -i 500ms --listen 127.0.0.1:0
	url=$(metrics_url "$BATS_TEST_TMPDIR/a.err")
	port=${url##*:}
	port=${port%%/*}
	run "$BIN/schedlat" --listen "127.0.0.1:$port" -d 1
	[ "$status" -eq 2 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "$output" == "schedlat: cannot listen on '127.0.0.1:$port': Address already in use" ]]
	stop_tool "$TOOL_PID"
}

# ---- --prometheus FILE against the JSON and the kernel ----

@test "a metric at its series cap: every update folded into overflow counted in the metric, the summary and on stderr" {
	need_root
	local root f=$BATS_TEST_TMPDIR/cap.prom i holders truth
	root=$(cgroup2_root) || skip "no cgroup2 hierarchy"
	# four cgroups of our own that keep waking up: with the host's, more
	# label sets than the lowered cap of 3
	for i in 1 2 3 4; do
		make_cgroup "$root/aiscope-test-$$-$i"
		start_bg w$i sh -c 'while :; do sleep 0.01; done'
		move_to_cgroup "$root/aiscope-test-$$-$i" "$BG_PID"
	done
	AISCOPE_TEST_CAP_METRIC_SERIES=3 start_tool s schedlat -j --by cgroup -i 300ms --prometheus "$f"
	sleep 2
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	# the label sets that hold a series (the file has the last interval)
	holders=$(grep '^aiscope_schedlat_runs_total{' "$f" | grep -v 'overflow="true"' |
		sed 's/^aiscope_schedlat_runs_total{cgroup="\([^"]*\)".*/\1/' | jq -R . | jq -s -c .)
	[ "$(jq length <<<"$holders")" -eq 3 ]
	grep -q '^aiscope_schedlat_runs_total{cgroup="",container_id="",pod_uid="",namespace="",pod="",container="",overflow="true"} [1-9]' "$f"
	# the truth: every sample row of another label set went to the overflow
	# series of each of the four families
	truth=$(jq -s --argjson h "$holders" '[.[] | select(.type == "sample" and .row == "cgroup") |
		select((.cgroup // "") as $c | $h | index($c) | not)] | length * 4' "$BATS_TEST_TMPDIR/s.out")
	[ "$truth" -gt 0 ]
	[ "$(jq -s '.[-1] | select(.type == "summary") | .metrics_overflow' "$BATS_TEST_TMPDIR/s.out")" -eq "$truth" ]
	[ "$(prom_value "$f" 'aiscope_metric_overflow_total{tool="schedlat"}')" -eq "$truth" ]
	grep -q '^schedlat: metric aiscope_schedlat_[a-z_]* is at its 3 series, none idle for 600 s: [0-9]* updates of new label sets (cgroups, containers) went to its overflow="true" series$' \
		"$BATS_TEST_TMPDIR/s.err"
	# the default cap, 1000: nothing folded, nothing said
	run "$BIN/schedlat" -j --by cgroup -i 300ms -d 1 --prometheus "$f"
	[ "$status" -eq 0 ]
	[ "$(jq -s '.[-1].metrics_overflow' <<<"$(grep summary <<<"$output")")" -eq 0 ]
	[ "$(prom_value "$f" 'aiscope_metric_overflow_total{tool="schedlat"}')" -eq 0 ]
	! grep -q '^[^#].*overflow="true"' "$f" || false
}

@test "schedlat --prometheus: the file's series equal the JSON exactly and the kernel's run_delay" {
	need_root
	local f=$BATS_TEST_TMPDIR/tf/schedlat.prom cg sel n
	mkdir -p "$BATS_TEST_TMPDIR/tf"
	start_container_workload
	start_tool s schedlat -j --by cgroup --container "${CID:0:12}" --prometheus "$f"
	# complete from the start: build info and zero lost counters
	grep -q '^aiscope_build_info{tool="schedlat",version="[0-9.]*",kernel="'"$(uname -r)"'",host="'"$(uname -n)"'"} 1$' "$f"
	[ "$(prom_value "$f" 'aiscope_lost_events_total{tool="schedlat",kind="ringbuf_full"}')" = 0 ]
	[ "$(prom_value "$f" 'aiscope_lost_events_total{tool="schedlat",kind="recursion_misses"}')" = 0 ]
	contend_measured w
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	[ -z "$(compgen -G "$f.tmp*")" ]
	cg=$(jq -r -s --arg id "$CID" '[.[] | select(.type == "sample" and .container_id == $id)][0].cgroup' \
		"$BATS_TEST_TMPDIR/s.out")
	[[ "$cg" == */docker-$CID.scope ]]
	sel="{cgroup=\"$cg\",container_id=\"$CID\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\"}"
	cat "$f"
	# one cgroup passed the filter: one series per metric, exact totals
	[ "$(grep -c '^aiscope_schedlat_runs_total' "$f")" -eq 1 ]
	n=$(json_sum "$BATS_TEST_TMPDIR/s.out" runs)
	echo "runs: JSON $n, metric $(prom_value "$f" "aiscope_schedlat_runs_total$sel")"
	[ "$n" -gt 20 ]
	# the workload really contended
	[ "$(json_sum "$BATS_TEST_TMPDIR/s.out" wait_ns)" -gt 500000000 ]
	[ "$(prom_value "$f" "aiscope_schedlat_runs_total$sel")" -eq "$n" ]
	[ "$(prom_value "$f" "aiscope_schedlat_wait_seconds_count$sel")" -eq "$n" ]
	[ "$(prom_value "$f" "aiscope_schedlat_wait_seconds_bucket${sel%\}},le=\"+Inf\"}")" -eq "$n" ]
	[ "$(prom_value "$f" "aiscope_schedlat_preemptions_total$sel")" -eq \
		"$(json_sum "$BATS_TEST_TMPDIR/s.out" preemptions)" ]
	[ "$(prom_value "$f" "aiscope_schedlat_migrations_total$sel")" -eq \
		"$(json_sum "$BATS_TEST_TMPDIR/s.out" migrations)" ]
	[ "$(sec_to_ns "$(prom_value "$f" "aiscope_schedlat_wait_seconds_sum$sel")")" -eq \
		"$(json_sum "$BATS_TEST_TMPDIR/s.out" wait_ns)" ]
	# cumulative buckets: never decreasing, every power-of-two edge present
	[ "$(grep -c "^aiscope_schedlat_wait_seconds_bucket" "$f")" -eq 28 ]
	grep "^aiscope_schedlat_wait_seconds_bucket" "$f" | awk '$NF < prev { exit 1 } { prev = $NF }'
	# and the kernel's own figures
	echo "run_delay delta $RUN_DELAY ns, nivcsw delta $NIVCSW"
	within 10 "$(json_sum "$BATS_TEST_TMPDIR/s.out" wait_ns)" "$RUN_DELAY"
	within 5 "$(prom_value "$f" "aiscope_schedlat_preemptions_total$sel")" "$NIVCSW"
	where_not_who "$f"
}

# ---- --listen ----

@test "schedlat --listen serves /metrics on loopback, 404 elsewhere, and outlives bad clients" {
	need_root
	local url base port code i
	start_tool s schedlat --by cgroup -i 300ms --listen :0
	url=$(metrics_url "$BATS_TEST_TMPDIR/s.err")
	[[ "$url" =~ ^http://127\.0\.0\.1:[0-9]+/metrics$ ]]
	base=${url%/metrics}
	port=${base##*:}
	curl -sf -D "$BATS_TEST_TMPDIR/h" "$url" > "$BATS_TEST_TMPDIR/m1"
	grep -qi '^Content-Type: text/plain; version=0.0.4' "$BATS_TEST_TMPDIR/h"
	grep -q '^aiscope_build_info{tool="schedlat"' "$BATS_TEST_TMPDIR/m1"
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/")" = 404 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' "$base/metrics/x")" = 404 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url")" = 405 ]
	[ "$(curl -s -o /dev/null -w '%{http_code}' -I "$url")" = 200 ]
	# a client that says half a request and waits, one that speaks TLS,
	# one that sends a huge header: the scrape still answers at once
	exec 7<> "/dev/tcp/127.0.0.1/$port"
	printf 'GET /met' >&7
	exec 6<> "/dev/tcp/127.0.0.1/$port"
	printf '\x16\x03\x01\x02\x00\r\n\r\n' >&6
	read -r -t 5 code <&6
	[[ "$code" == "HTTP/1.1 400 "* ]]
	exec 6>&-
	exec 6<> "/dev/tcp/127.0.0.1/$port"
	{ printf 'GET /metrics HTTP/1.1\r\nX: '; head -c 20000 /dev/zero | tr '\0' a; } >&6
	read -r -t 5 code <&6
	[[ "$code" == "HTTP/1.1 431 "* ]]
	exec 6>&-
	# two intervals closed: the first one's figures are published
	for i in $(seq 100); do
		[ "$(grep -c 'interval=' "$BATS_TEST_TMPDIR/s.out")" -ge 2 ] && break
		sleep 0.1
	done
	curl -sf -m 3 "$url" > "$BATS_TEST_TMPDIR/m2"
	grep -q '^aiscope_schedlat_runs_total{' "$BATS_TEST_TMPDIR/m2" || { cat "$BATS_TEST_TMPDIR/m2"; cat "$BATS_TEST_TMPDIR/s.err"; false; }
	exec 7>&-
	kill -0 "$TOOL_PID"
	stop_tool "$TOOL_PID"
}

# The figures of docs/fleet.md and the man pages' --listen: 300 hostile
# connections (150 silent, 150 slowloris), each opened again as soon as the
# server closes it, while a well-behaved client scrapes 20 times.
@test "--listen under 300 silent and slow clients: every scrape answered whole, within a second" {
	need_root
	local url port i code t size len worst=0 ms
	start_tool s schedlat -i 300ms --listen 127.0.0.1:0
	url=$(metrics_url "$BATS_TEST_TMPDIR/s.err")
	port=${url##*:}
	port=${port%%/*}
	start_ready ab "$HELPERS/slowclients" "$port" 150 150 60
	sleep 2.5	# past the request deadline: evictions and timeouts under way
	for i in $(seq 20); do
		curl -s -m 10 -D "$BATS_TEST_TMPDIR/h$i" -o "$BATS_TEST_TMPDIR/m$i" \
			-w '%{http_code} %{time_total} %{size_download}\n' "$url" > "$BATS_TEST_TMPDIR/w$i" || true
		read -r code t size < "$BATS_TEST_TMPDIR/w$i"
		echo "scrape $i: $code in $t s, $size bytes"
		[ "$code" = 200 ]
		len=$(tr -d '\r' < "$BATS_TEST_TMPDIR/h$i" | sed -n 's/^Content-Length: //Ip')
		[ "$size" -eq "$len" ]
		[ "$(tail -c 1 "$BATS_TEST_TMPDIR/m$i" | od -An -c | tr -d ' ')" = '\n' ]
		grep -q '^aiscope_build_info{tool="schedlat"' "$BATS_TEST_TMPDIR/m$i"
		ms=$(awk -v t="$t" 'BEGIN { printf "%d", t * 1000 }')
		[ "$ms" -gt "$worst" ] && worst=$ms
		sleep 0.2
	done
	echo "worst scrape: $worst ms"
	[ "$worst" -lt 1000 ]
	kill "$READY_PID"
	wait_for "$BATS_TEST_TMPDIR/ab.out" '^seconds'
	cat "$BATS_TEST_TMPDIR/ab.out"
	# the hostile clients were turned out (evicted or timed out) and came back
	[ "$(awk '/^reopened/ {print $2}' "$BATS_TEST_TMPDIR/ab.out")" -gt 300 ]
	kill -0 "$TOOL_PID"
	stop_tool "$TOOL_PID"
}

# ---- promtool ----

@test "promtool check metrics accepts every tool's output" {
	need_root
	command -v promtool > /dev/null || skip "promtool (package prometheus) is not installed"
	local t f by rc checked=0
	for t in $(metrics_tools); do
		f=$BATS_TEST_TMPDIR/$t.prom
		rc=0
		"$BIN/$t" -i 400ms -d 1.5 --prometheus "$f" > /dev/null 2> "$BATS_TEST_TMPDIR/$t.err" || rc=$?
		if [ "$rc" -eq 77 ]; then
			# cannot run here (a hook or library this host lacks): said why
			echo "# $t: $(tail -1 "$BATS_TEST_TMPDIR/$t.err")"
			continue
		fi
		[ "$rc" -eq 0 ] || { echo "$t exited $rc"; cat "$BATS_TEST_TMPDIR/$t.err"; false; }
		grep -q "^aiscope_build_info{tool=\"$t\"" "$f"
		grep -q "^# TYPE aiscope_${t}_" "$f" || { echo "$t: no aiscope_${t}_ metric"; cat "$f"; false; }
		promtool check metrics < "$f" || { cat "$f"; false; }
		checked=$((checked + 1))
	done
	[ "$checked" -gt 0 ]
	# a streaming tool is among them (its poller's gauges)
	[ -s "$BATS_TEST_TMPDIR/oomwatch.prom" ]
	# schedlat's series are by cgroup whatever --by is
	for by in pid tid cgroup container host; do
		f=$BATS_TEST_TMPDIR/schedlat-$by.prom
		"$BIN/schedlat" --by "$by" -i 400ms -d 1.2 --prometheus "$f" > /dev/null
		promtool check metrics < "$f" || { cat "$f"; false; }
	done
	[ "$(grep -c '^aiscope_schedlat_runs_total' "$BATS_TEST_TMPDIR/schedlat-host.prom")" -eq 1 ]
	grep -q '^aiscope_schedlat_runs_total{cgroup="",container_id="",pod_uid="",namespace="",pod="",container=""} [1-9]' \
		"$BATS_TEST_TMPDIR/schedlat-host.prom"
}

# ---- a real Prometheus server ----

@test "a Prometheus server scrapes schedlat and its API returns the workload's figures" {
	need_root
	command -v prometheus > /dev/null || skip "prometheus is not installed"
	local api i want got pre wait
	start_container_workload
	start_tool s schedlat -j --by cgroup --container "${CID:0:12}" --listen 127.0.0.1:0
	start_prometheus s
	api=$PROM_API
	contend_measured w
	# the workload is idle now: wait for an interval to close, then for a
	# scrape that has it; the JSON's totals are final
	sleep 1.5
	q() {
		curl -sf "$api/query" --data-urlencode "query=$1" |
			jq -r '.data.result | if length == 1 then .[0].value[1] else "n=\(length)" end'
	}
	for i in $(seq 60); do
		want=$(json_sum "$BATS_TEST_TMPDIR/s.out" runs)
		got=$(q "aiscope_schedlat_runs_total{container_id=\"$CID\"}")
		[ "$got" = "$want" ] && break
		sleep 0.5
	done
	echo "runs: JSON $want, Prometheus $got"
	[ "$want" -gt 20 ]
	[ "$(json_sum "$BATS_TEST_TMPDIR/s.out" wait_ns)" -gt 500000000 ]
	[ "$got" = "$want" ]
	[ "$(q 'up{job="aiscope"}')" = 1 ]
	pre=$(json_sum "$BATS_TEST_TMPDIR/s.out" preemptions)
	[ "$(q "aiscope_schedlat_preemptions_total{container_id=\"$CID\"}")" = "$pre" ]
	[ "$(q "aiscope_schedlat_wait_seconds_count{container_id=\"$CID\"}")" = "$want" ]
	[ "$(q "aiscope_schedlat_wait_seconds_bucket{container_id=\"$CID\",le=\"+Inf\"}")" = "$want" ]
	wait=$(q "aiscope_schedlat_wait_seconds_sum{container_id=\"$CID\"} * 1e9")
	echo "wait: JSON $(json_sum "$BATS_TEST_TMPDIR/s.out" wait_ns) ns, Prometheus $wait, run_delay $RUN_DELAY"
	within 0.0001 "$wait" "$(json_sum "$BATS_TEST_TMPDIR/s.out" wait_ns)"
	within 10 "$wait" "$RUN_DELAY"
	within 5 "$pre" "$NIVCSW"
	# PromQL over the histogram works: the p50 lies between two edges
	got=$(q "histogram_quantile(0.5, sum by (le) (aiscope_schedlat_wait_seconds_bucket{container_id=\"$CID\"}))")
	awk -v v="$got" 'BEGIN { exit !(v > 0 && v < 68.8) }'
	[ "$(q 'aiscope_build_info{tool="schedlat"}')" = 1 ]
	stop_tool "$TOOL_PID"
}

# ---- node_exporter's textfile collector ----

@test "node_exporter's textfile collector serves the file's metrics unchanged" {
	need_root
	command -v prometheus-node-exporter > /dev/null || skip "prometheus-node-exporter is not installed"
	local dir=$BATS_TEST_TMPDIR/textfile nport url
	mkdir -p "$dir"
	start_container_workload
	start_tool s schedlat --by cgroup -i 300ms --prometheus "$dir/schedlat.prom"
	contend_round w "$CONTEND_PID" 1
	stop_tool "$TOOL_PID"
	start_server ne metrics 30 prometheus-node-exporter --collector.disable-defaults --collector.textfile \
		--collector.textfile.directory="$dir" --web.listen-address="127.0.0.1:{PORT}"
	nport=$SERVER_PORT
	url=http://127.0.0.1:$nport/metrics
	curl -sf "$url" > "$BATS_TEST_TMPDIR/ne.txt"
	grep -q '^node_textfile_scrape_error 0$' "$BATS_TEST_TMPDIR/ne.txt"
	grep -q "^node_textfile_mtime_seconds{file=\"$dir/schedlat.prom\"}" "$BATS_TEST_TMPDIR/ne.txt" ||
		grep -q '^node_textfile_mtime_seconds{file="schedlat.prom"}' "$BATS_TEST_TMPDIR/ne.txt"
	normalize < "$dir/schedlat.prom" > "$BATS_TEST_TMPDIR/want"
	normalize < "$BATS_TEST_TMPDIR/ne.txt" > "$BATS_TEST_TMPDIR/got"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/want")" -gt 30 ]
	grep -q "container_id=\"$CID\"" "$BATS_TEST_TMPDIR/got"
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
}

# ---- cachestat ----

# prom_sum FILE NAME LABEL_REGEX: a metric summed over its series whose
# labels match
prom_sum() {
	awk -v n="$2" -v re="$3" 'index($0, n "{") == 1 && $0 ~ re { s += $NF } END { printf "%.0f\n", s }' "$1"
}

@test "cachestat --prometheus: pages by cgroup equal the JSON exactly; a cold read in a container is its misses" {
	need_root
	local f=$BATS_TEST_TMPDIR/cachestat.prom pages=2048 file root pid k want got
	root=$(cgroup2_root) || skip "no cgroup2 mount"
	disk_dir
	file=$DISK_DIR/shard.bin
	"$HELPERS/pagecache" create "$file" "$pages" > /dev/null
	start_bg serve "$HELPERS/pagecache" serve "$file"
	wait_for "$BATS_TEST_TMPDIR/serve.out" '^ready'
	pid=$(awk '/^ready/ {print $2}' "$BATS_TEST_TMPDIR/serve.out")
	CID=$(random_hex64)
	make_cgroup "$root/docker-$CID.scope"
	move_to_cgroup "$root/docker-$CID.scope" "$pid"
	"$HELPERS/pagecache" drop "$file" | grep -qx 'resident 0'
	start_tool s cachestat -j --by pid -r 0 --prometheus "$f"
	kill -USR1 "$pid"
	wait_for "$BATS_TEST_TMPDIR/serve.out" '^read 1 '
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	cat "$f" | grep "container_id=\"$CID\""
	# every kind, summed over all series, equals the JSON rows' sum
	for k in hit:hits miss:misses dirty:dirties; do
		want=$(jq -s --arg k "${k#*:}" '[.[] | select(.type == "sample" and .row == "pid") | .[$k] // 0] | add // 0' \
			"$BATS_TEST_TMPDIR/s.out")
		got=$(prom_sum "$f" aiscope_cachestat_pages_total "kind=\"${k%:*}\"")
		echo "$k: JSON $want, metrics $got"
		[ "$got" -eq "$want" ]
	done
	# the container's series is the reader's: the pages it read cold
	want=$(jq -s --argjson p "$pid" '[.[] | select(.type == "sample" and .pid == $p) | .misses] | add' \
		"$BATS_TEST_TMPDIR/s.out")
	got=$(prom_value "$f" "aiscope_cachestat_pages_total{cgroup=\"/docker-$CID.scope\",container_id=\"$CID\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\",kind=\"miss\"}")
	echo "container misses: metric $got, JSON $want, pages read cold $pages"
	[ "$got" -eq "$want" ]
	within 5 "$got" "$pages"
	grep -Eq '^aiscope_cachestat_cached_bytes [0-9]+$' "$f"
	where_not_who "$f"
}

# ---- ipcsnoop ----

@test "ipcsnoop --prometheus: bytes by cgroup and kind equal the JSON exactly and a pipe's true size" {
	need_root
	local f=$BATS_TEST_TMPDIR/ipcsnoop.prom n=3000000 k want got sel
	make_docker_cgroup
	start_tool s ipcsnoop -j -r 0 --prometheus "$f"
	# a pipe in the container: exactly n bytes written and read
	sh -c "echo \$\$ > '$CG/cgroup.procs' && head -c $n /dev/zero | cat > /dev/null"
	sleep 0.5
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	grep "container_id=\"$CID\"" "$f"
	sel="{cgroup=\"/docker-$CID.scope\",container_id=\"$CID\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\",kind=\"pipe\"}"
	[ "$(prom_value "$f" "aiscope_ipcsnoop_sent_bytes_total$sel")" -eq "$n" ]
	[ "$(prom_value "$f" "aiscope_ipcsnoop_received_bytes_total$sel")" -eq "$n" ]
	# every figure, summed over all series, equals the JSON channels' sum
	for k in sent_bytes:bytes sent_messages:msgs received_bytes:read_bytes \
		received_messages:read_msgs shm_attaches:attaches shm_detaches:detaches; do
		want=$(jq -s --arg k "${k#*:}" '[.[] | select(.type == "sample") | .[$k] // 0] | add // 0' \
			"$BATS_TEST_TMPDIR/s.out")
		got=$(prom_sum "$f" "aiscope_ipcsnoop_${k%:*}_total" .)
		echo "${k%:*}: JSON $want, metrics $got"
		[ "$got" -eq "$want" ]
	done
	where_not_who "$f"
	run "$BIN/ipcsnoop" -e --prometheus "$f"
	[ "$status" -eq 2 ]
}

# ---- socketsnoop ----

@test "socketsnoop --prometheus: bytes and calls by cgroup, direction and protocol equal the JSON and what netpair moved" {
	need_root
	local f=$BATS_TEST_TMPDIR/socketsnoop.prom n=1000000 k=4096 key want got sel np crx srx
	make_docker_cgroup
	start_tool s socketsnoop -j -r 0 --prometheus "$f"
	# both ends in the container: the client sends n bytes in 100 calls,
	# the server answers k in 2
	np=$BATS_TEST_TMPDIR/np.out
	sh -c "echo \$\$ > '$CG/cgroup.procs' &&
		exec '$HELPERS/netpair' tcp4 -n $n -m 100 -k $k -l 2" > "$np"
	sleep 0.5
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	cat "$np"
	crx=$(sed -n 's/^client_result .*rx_calls=\([0-9]*\).*/\1/p' "$np")
	srx=$(sed -n 's/^server_result .*rx_calls=\([0-9]*\).*/\1/p' "$np")
	[ -n "$crx" ] && [ -n "$srx" ]
	grep "container_id=\"$CID\"" "$f"
	sel="cgroup=\"/docker-$CID.scope\",container_id=\"$CID\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\""
	[ "$(prom_value "$f" "aiscope_socketsnoop_bytes_total{$sel,direction=\"tx\",proto=\"tcp\"}")" -eq $((n + k)) ]
	[ "$(prom_value "$f" "aiscope_socketsnoop_bytes_total{$sel,direction=\"rx\",proto=\"tcp\"}")" -eq $((n + k)) ]
	[ "$(prom_value "$f" "aiscope_socketsnoop_calls_total{$sel,direction=\"tx\",proto=\"tcp\"}")" -eq 102 ]
	[ "$(prom_value "$f" "aiscope_socketsnoop_calls_total{$sel,direction=\"rx\",proto=\"tcp\"}")" -eq $((crx + srx)) ]
	! grep -q "container_id=\"$CID\".*proto=\"udp\"" "$f" || false
	# every figure, summed over all series, equals the JSON flows' sum
	for key in bytes:tx:tx_bytes bytes:rx:rx_bytes calls:tx:tx_calls calls:rx:rx_calls; do
		want=$(jq -s --arg k "${key##*:}" '[.[] | select(.type == "sample") | .[$k] // 0] | add // 0' \
			"$BATS_TEST_TMPDIR/s.out")
		sel=${key#*:}
		got=$(prom_sum "$f" "aiscope_socketsnoop_${key%%:*}_total" "direction=\"${sel%%:*}\"")
		echo "${key##*:}: JSON $want, metrics $got"
		[ "$got" -eq "$want" ]
	done
	where_not_who "$f" '[a-z]*addr|[a-z]*port'
	run "$BIN/socketsnoop" -e --prometheus "$f"
	[ "$status" -eq 2 ]
	run "$BIN/socketsnoop" --io --listen 127.0.0.1:0
	[ "$status" -eq 2 ]
}

# ---- edges (socketsnoop, ipcsnoop) ----

# edge_series FILE N: the series the first N edge lines of FILE (most bytes
# first, as the tool prints them) must be, one "name{labels} value" a line
edge_series() {
	jq -r -s --argjson n "$2" '
		def side(s; p): "\(p)_pid=\"\(s.pid // "")\",\(p)_comm=\"\(s.comm // "")\"," +
			"\(p)_container=\"\(s.k8s_container // s.container_name // "")\",\(p)_endpoint=\"\(s.endpoint // "")\"";
		[.[] | select(.type == "edge")][0:$n][] |
		"{host=\"\(.host)\",kind=\"\(.kind)\",channel=\"\(.channel)\",\(side(.src; "src")),\(side(.dst; "dst"))}" as $l |
		"aiscope_\(.tool)_edge_bytes_total\($l) \(.bytes)",
		"aiscope_\(.tool)_edge_messages_total\($l) \(.msgs)",
		if .read_bytes != null then "aiscope_\(.tool)_edge_read_bytes_total\($l) \(.read_bytes)" else empty end' \
		"$1" | LC_ALL=C sort
}

@test "socketsnoop --prometheus: the run's top edges by bytes are series equal to its edge lines and what netpair moved; the rest counted" {
	need_root
	local f=$BATS_TEST_TMPDIR/ss.prom np=$BATS_TEST_TMPDIR/np.out cli srv n=1000000 k=4096 nedges
	make_test_cgroup aiscope-edges
	# the series keep the 3 edges with the most bytes
	AISCOPE_TEST_CAP_EDGE_METRICS_TOP=3 start_tool s socketsnoop -j -r 0 -c "$CG" --prometheus "$f"
	# in the cgroup: one connection, n bytes in 100 calls one way and k in 2
	# back (2 edges), then 5 connections of 10 bytes each way (10 edges)
	sh -c "echo \$\$ > '$CG/cgroup.procs' && '$HELPERS/netpair' tcp4 -n $n -m 100 -k $k -l 2 &&
		exec '$HELPERS/netpair' many4 -x 5" > "$np"
	sleep 0.5
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	cat "$np"
	cli=$(sed -n 's/^client pid=\([0-9]*\).*/\1/p' "$np" | head -n 1)
	srv=$(sed -n 's/^server pid=\([0-9]*\).*/\1/p' "$np" | head -n 1)
	nedges=$(grep -c '"type":"edge"' "$BATS_TEST_TMPDIR/s.out")
	[ "$nedges" -eq 12 ]
	# the series are the first 3 edge lines, exactly
	diff <(grep '^aiscope_socketsnoop_edge_[a-z_]*_total{' "$f" | LC_ALL=C sort) <(edge_series "$BATS_TEST_TMPDIR/s.out" 3)
	[ "$(prom_value "$f" aiscope_socketsnoop_edges)" -eq 12 ]
	[ "$(prom_value "$f" aiscope_socketsnoop_edges_omitted)" -eq 9 ]
	# the biggest two: what netpair moved, between its two processes
	grep -E "^aiscope_socketsnoop_edge_bytes_total\{.*src_pid=\"$cli\",src_comm=\"ss-client\",.*dst_pid=\"$srv\",dst_comm=\"ss-server\",.*\} $n\$" "$f"
	grep -E "^aiscope_socketsnoop_edge_messages_total\{.*src_pid=\"$cli\",.*dst_pid=\"$srv\",.*\} 100\$" "$f"
	grep -E "^aiscope_socketsnoop_edge_read_bytes_total\{.*src_pid=\"$cli\",.*dst_pid=\"$srv\",.*\} $n\$" "$f"
	grep -E "^aiscope_socketsnoop_edge_bytes_total\{.*src_pid=\"$srv\",.*dst_pid=\"$cli\",.*\} $k\$" "$f"
	[ "$(grep -c '^aiscope_socketsnoop_edge_bytes_total{' "$f")" -eq 3 ]
	! command -v promtool > /dev/null || promtool check metrics < "$f"
}

@test "ipcsnoop --prometheus: a pipe's edge is a series equal to its edge line and the pipe's true size" {
	need_root
	local f=$BATS_TEST_TMPDIR/ipc.prom n=3000000
	make_test_cgroup aiscope-edges
	start_tool s ipcsnoop -j -r 0 -c "$CG" --prometheus "$f"
	sh -c "echo \$\$ > '$CG/cgroup.procs' && head -c $n /dev/zero | cat > /dev/null"
	sleep 0.5
	stop_tool "$TOOL_PID"
	all_json "$BATS_TEST_TMPDIR/s.out"
	[ "$(grep -c '"type":"edge"' "$BATS_TEST_TMPDIR/s.out")" -eq 1 ]
	diff <(grep '^aiscope_ipcsnoop_edge_[a-z_]*_total{' "$f" | LC_ALL=C sort) <(edge_series "$BATS_TEST_TMPDIR/s.out" 100)
	grep -E "^aiscope_ipcsnoop_edge_bytes_total\{.*kind=\"pipe\",.*src_comm=\"head\",.*dst_comm=\"cat\",.*\} $n\$" "$f"
	grep -E "^aiscope_ipcsnoop_edge_read_bytes_total\{.*kind=\"pipe\",.*\} $n\$" "$f"
	[ "$(prom_value "$f" aiscope_ipcsnoop_edges)" -eq 1 ]
	[ "$(prom_value "$f" aiscope_ipcsnoop_edges_omitted)" -eq 0 ]
	! command -v promtool > /dev/null || promtool check metrics < "$f"
}

# ---- oomwatch ----

MEMCG_ROOT=/sys/fs/cgroup/memory
MEMCG_LIMIT=67108864

# oom_memcg NAME: a v1 memory cgroup with a 64 MiB limit, as
# tests/oomwatch.bats makes them; sets CG and CG_REL
oom_memcg() {
	need_root
	[ -e "$MEMCG_ROOT/memory.limit_in_bytes" ] || skip "no v1 memory controller"
	CG_REL=/aiscope-oomw-$$-$1
	CG=$MEMCG_ROOT$CG_REL
	make_cgroup "$CG"
	echo "$MEMCG_LIMIT" > "$CG/memory.limit_in_bytes"
	# no swap in the way of the kill; no memsw limit either, so that the
	# memory limit is the one hit (memory.failcnt counts it)
	echo 0 > "$CG/memory.swappiness" 2>/dev/null || true
}

# hog_in_cg NAME ARGS...: memhog ARGS started in CG; sets HOG_PID
hog_in_cg() {
	local name=$1
	shift
	start_bg "$name" "$HELPERS/memhog" "$@"
	wait_for "$BATS_TEST_TMPDIR/$name.out" '^ready'
	HOG_PID=$(awk '/^ready/ {print $2}' "$BATS_TEST_TMPDIR/$name.out")
	move_to_cgroup "$CG" "$HOG_PID"
	kill -USR1 "$HOG_PID"
}

@test "oomwatch --prometheus: a memcg OOM kill in a 64 MiB v1 cgroup; gauges equal the alert's reading, counters the kernel's; kill counters at 0 before the kill" {
	local f=$BATS_TEST_TMPDIR/oomwatch.prom snap=$BATS_TEST_TMPDIR/alert.prom out alert ts mt sel rc i
	oom_memcg fleet
	out=$BATS_TEST_TMPDIR/ow.out
	start_tool ow oomwatch -j -i 1s -c "$CG" --prometheus "$f"
	# a 600 MiB mapping (nothing touched: nothing charged)
	hog_in_cg map mmap 614400
	local map=$HOG_PID
	wait_for "$out" "\"event\":\"alloc\".*\"pid\":$map," 5
	# 56 MiB of 64 (87.5%), held: a warning at one poll
	hog_in_cg hog1 grow 1024 1 57344
	local hog1=$HOG_PID
	wait_for "$BATS_TEST_TMPDIR/hog1.out" '^at 57344$' 20
	wait_for "$out" '"event":"alert".*"reason":"working_set"' 10
	# the file of that poll: written after it, before its lines were
	# flushed; the next one comes a second later
	cp -p "$f" "$snap"
	alert=$(grep '"event":"alert"' "$out" | grep '"reason":"working_set"' | head -1)
	echo "$alert"
	ts=$(date -d "$(echo "$alert" | jq -r .ts)" +%s%N)
	mt=$(stat -c %.9Y "$snap" | tr -d .)
	# (an mtime is stamped from the kernel's coarse clock: a tick early)
	echo "alert at $ts, file written $((mt - ts)) ns later"
	[ $((mt - ts)) -gt -20000000 ] && [ $((mt - ts)) -lt 500000000 ]
	cat "$snap"
	sel="{cgroup=\"$CG_REL\",container_id=\"\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\"}"
	echo "$alert" | jq -e --arg cg "$CG_REL" --argjson lim "$MEMCG_LIMIT" \
		'.level == "warn" and .cgroup == $cg and .limit_bytes == $lim and .working_set_bytes > 50000000'
	[ "$(prom_value "$snap" "aiscope_oomwatch_memory_limit_bytes$sel")" -eq "$MEMCG_LIMIT" ]
	[ "$(prom_value "$snap" "aiscope_oomwatch_memory_usage_bytes$sel")" -eq "$(echo "$alert" | jq .usage_bytes)" ]
	[ "$(prom_value "$snap" "aiscope_oomwatch_memory_working_set_bytes$sel")" -eq \
		"$(echo "$alert" | jq .working_set_bytes)" ]
	[ "$(prom_value "$snap" "aiscope_oomwatch_memory_alert_level$sel")" -eq 1 ]
	# the kill counters of the watched cgroup are there at 0 before its
	# first kill (so that rate() sees that kill), each scope
	local sc
	for sc in memcg global unknown; do
		[ "$(prom_value "$snap" "aiscope_oomwatch_oom_kills_total{cgroup=\"$CG_REL\",container_id=\"\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\",scope=\"$sc\"}")" -eq 0 ]
	done
	# and what the cgroup says now (the hog holds its 56 MiB) at the next
	# poll: the alert came from the usage threshold at 85%, while the hog
	# still grew
	sleep 1.2
	within 2 "$(prom_value "$f" "aiscope_oomwatch_memory_usage_bytes$sel")" "$(cat "$CG/memory.usage_in_bytes")"
	# 16 MiB more: the kernel kills the 56 MiB hog, the second one lives
	hog_in_cg hog2 grow 1024 1 16384
	rc=0
	wait "$hog1" || rc=$?
	[ "$rc" -eq 137 ]
	wait_for "$out" '"event":"oom_kill"' 5
	wait_for "$BATS_TEST_TMPDIR/hog2.out" '^at 16384$' 20
	# two polls after the kill; the hog left holds its 16 MiB
	sleep 2.5
	cp "$f" "$snap"
	cat "$snap"
	[ "$(prom_value "$snap" "aiscope_oomwatch_oom_kills_total{cgroup=\"$CG_REL\",container_id=\"\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\",scope=\"memcg\"}")" -eq 1 ]
	# the other scopes stay at 0
	[ "$(grep -c '^aiscope_oomwatch_oom_kills_total' "$snap")" -eq 3 ]
	[ "$(grep '^aiscope_oomwatch_oom_kills_total' "$snap" | grep -v 'scope="memcg"' | awk '{s += $2} END {print s}')" -eq 0 ]
	[ "$(prom_value "$snap" "aiscope_oomwatch_memory_limit_bytes$sel")" -eq "$MEMCG_LIMIT" ]
	# the kernel's own counters, as it counts them
	echo "failcnt $(cat "$CG/memory.failcnt"), $(grep oom_kill "$CG/memory.oom_control")"
	[ "$(cat "$CG/memory.failcnt")" -gt 0 ]
	[ "$(prom_value "$snap" "aiscope_oomwatch_memory_events_total${sel%\}},event=\"max\"}")" -eq "$(cat "$CG/memory.failcnt")" ]
	[ "$(prom_value "$snap" "aiscope_oomwatch_memory_events_total${sel%\}},event=\"oom_kill\"}")" -eq \
		"$(awk '$1 == "oom_kill" {print $2}' "$CG/memory.oom_control")" ]
	[ "$(awk '$1 == "oom_kill" {print $2}' "$CG/memory.oom_control")" -eq 1 ]
	# v1 has no "oom" count: no series rather than a made-up one
	! grep -q 'event="oom"' "$snap" || false
	# the level fell with the working set (16 of 64 MiB), which is this
	# poll's, at most the usage
	[ "$(prom_value "$snap" "aiscope_oomwatch_memory_alert_level$sel")" -eq 0 ]
	[ "$(prom_value "$snap" "aiscope_oomwatch_memory_working_set_bytes$sel")" -le \
		"$(prom_value "$snap" "aiscope_oomwatch_memory_usage_bytes$sel")" ]
	within 10 "$(prom_value "$snap" "aiscope_oomwatch_memory_usage_bytes$sel")" 16777216
	# the cgroup removed: its gauges and counters go at the next poll, the
	# kill stays
	kill "$HOG_PID" "$map"
	wait "$HOG_PID" || true
	wait "$map" || true
	rmdir "$CG"
	sleep 2.5
	stop_tool "$TOOL_PID"
	all_json "$out"
	cat "$f"
	[ -z "$(compgen -G "$f.tmp*")" ]
	! grep -q "^aiscope_oomwatch_memory_.*cgroup=\"$CG_REL\"" "$f" || false
	[ "$(prom_value "$f" "aiscope_oomwatch_oom_kills_total{cgroup=\"$CG_REL\",container_id=\"\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\",scope=\"memcg\"}")" -eq 1 ]
	jq -e -s --argjson p "$hog1" --arg cg "$CG_REL" \
		'map(select(.event == "oom_kill")) | length == 1 and .[0].pid == $p and .[0].memcg == $cg and .[0].scope == "memcg"' "$out"
	# the mapping: one allocation of its exact size, in its cgroup
	local acg
	acg=$(jq -r -s --argjson p "$map" 'map(select(.event == "alloc" and .pid == $p)) | .[0].cgroup' "$out")
	[ "$(jq -s 'map(select(.event == "alloc")) | length' "$out")" -eq 1 ]
	sel="{cgroup=\"$acg\",container_id=\"\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\",syscall=\"mmap\"}"
	[ "$(prom_value "$f" "aiscope_oomwatch_large_allocations_total$sel")" -eq 1 ]
	[ "$(prom_value "$f" "aiscope_oomwatch_large_allocation_bytes_total$sel")" -eq 629145600 ]
	# that cgroup's other syscalls, made at 0 with its first allocation
	local sys
	for sys in mremap brk; do
		[ "$(prom_value "$f" "aiscope_oomwatch_large_allocations_total${sel/mmap/$sys}")" -eq 0 ]
		[ "$(prom_value "$f" "aiscope_oomwatch_large_allocation_bytes_total${sel/mmap/$sys}")" -eq 0 ]
	done
	where_not_who "$f"
}

@test "oomwatch --listen: a scrape has every cgroup's gauges and memory.events exactly; a new value at the next poll" {
	need_root
	local t=$BATS_TEST_TMPDIR/v2 d c url m=$BATS_TEST_TMPDIR/m i ok warn crit
	# the three containers of fake_v2, with OOMs counted and the warn one
	# under pressure
	fake_v2 "$t"
	ok=$FAKE_OK warn=$FAKE_WARN crit=$FAKE_CRIT
	fake_v2_cg "$t" "docker-$ok.scope" 104857600 1073741824 0 3 2 1
	fake_v2_cg "$t" "docker-$warn.scope" 996147200 1073741824 52428800 3 2 1 12.50
	fake_v2_cg "$t" "docker-$crit.scope" 1063256064 1073741824 0 3 2 1
	OOMWATCH_SYSROOT=$t start_tool ow oomwatch -j -i 200ms --alloc-min 0 --listen 127.0.0.1:0
	url=$(metrics_url "$BATS_TEST_TMPDIR/ow.err")
	[[ "$url" =~ ^http://127\.0\.0\.1:[0-9]+/metrics$ ]]
	curl -sf "$url" > "$m"
	cat "$m"
	promtool_ok() { ! command -v promtool > /dev/null || promtool check metrics < "$1"; }
	promtool_ok "$m"
	for c in "$ok 104857600 104857600 0 0" "$warn 996147200 943718400 1 0.125" "$crit 1063256064 1063256064 2 0"; do
		set -- $c
		sel="{cgroup=\"/system.slice/docker-$1.scope\",container_id=\"$1\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\"}"
		[ "$(prom_value "$m" "aiscope_oomwatch_memory_usage_bytes$sel")" = "$2" ]
		[ "$(prom_value "$m" "aiscope_oomwatch_memory_working_set_bytes$sel")" = "$3" ]
		[ "$(prom_value "$m" "aiscope_oomwatch_memory_limit_bytes$sel")" = 1073741824 ]
		[ "$(prom_value "$m" "aiscope_oomwatch_memory_alert_level$sel")" = "$4" ]
		[ "$(prom_value "$m" "aiscope_oomwatch_psi_memory_full_avg10_ratio$sel")" = "$5" ]
		[ "$(prom_value "$m" "aiscope_oomwatch_memory_events_total${sel%\}},event=\"max\"}")" = 3 ]
		[ "$(prom_value "$m" "aiscope_oomwatch_memory_events_total${sel%\}},event=\"oom\"}")" = 2 ]
		[ "$(prom_value "$m" "aiscope_oomwatch_memory_events_total${sel%\}},event=\"oom_kill\"}")" = 1 ]
	done
	[ "$(grep -c '^aiscope_oomwatch_memory_limit_bytes{' "$m")" -eq 3 ]
	# the kernel counts on: the next scrapes say so
	d=$t/sys/fs/cgroup/system.slice/docker-$ok.scope
	printf 'low 0\nhigh 0\nmax 40\noom 5\noom_kill 4\noom_group_kill 0\n' > "$d/memory.events"
	sel="{cgroup=\"/system.slice/docker-$ok.scope\",container_id=\"$ok\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\",event=\"oom_kill\"}"
	for i in $(seq 50); do
		curl -sf "$url" > "$m"
		[ "$(prom_value "$m" "aiscope_oomwatch_memory_events_total$sel")" = 4 ] && break
		sleep 0.1
	done
	[ "$(prom_value "$m" "aiscope_oomwatch_memory_events_total$sel")" = 4 ]
	[ "$(prom_value "$m" "aiscope_oomwatch_memory_events_total${sel/oom_kill/max}")" = 40 ]
	[ "$(prom_value "$m" "aiscope_oomwatch_memory_events_total${sel/oom_kill/oom}")" = 5 ]
	promtool_ok "$m"
	# --check writes the same figures once
	run env OOMWATCH_SYSROOT="$t" "$BIN/oomwatch" --check --prometheus "$BATS_TEST_TMPDIR/check.prom"
	[ "$status" -eq 4 ]
	curl -sf "$url" > "$m"
	grep -E '^aiscope_oomwatch_(memory|psi)_' "$m" | sort > "$BATS_TEST_TMPDIR/scraped"
	grep -E '^aiscope_oomwatch_(memory|psi)_' "$BATS_TEST_TMPDIR/check.prom" | sort > "$BATS_TEST_TMPDIR/checked"
	# 3 cgroups: usage, working set, limit, level, pressure, 3 events
	[ "$(wc -l < "$BATS_TEST_TMPDIR/checked")" -eq 24 ]
	diff "$BATS_TEST_TMPDIR/scraped" "$BATS_TEST_TMPDIR/checked"
	stop_tool "$TOOL_PID"
}

# ---- gpulaunch ----

GL_CUDA=$AISCOPE_BUILD/tests/cuda
GL_DOUBLE=$GL_CUDA/double

# gl_truth FILE...: what the test programs called (their JSON lines), as
# gpulaunch counts it: an object of figures keyed "metric" or "metric:label"
gl_truth() {
	jq -s '[.[] | select(.api or .kernel)] |
		def layer: if .kernel or (.api | test("^(__)?cuda")) then "runtime" else "driver" end;
		def n: .launches // 1;
		def dir: if .kind != null then ["h2h", "h2d", "d2h", "d2d", "default"][.kind]
			else (.api | capture("cuMemcpy(?<a>[HD])to(?<b>[HD])") |
				(.a | ascii_downcase) + "2" + (.b | ascii_downcase)) end;
		[.[] | select(.grid)] as $l |
		[.[] | select(.api // "" | test("^(cudaMalloc|cuMemAlloc)"))] as $a |
		[.[] | select(.api // "" | test("^(cudaMemcpy|cuMemcpy)"))] as $c |
		[.[] | select(.api // "" | test("Synchronize$"))] as $s |
		([$a[] | select(.rc == 0)] | map({key: .ptr, value: .size}) | from_entries) as $live |
		{} +
		([("runtime", "driver") as $y | {("launches:" + $y): ([$l[] | select(layer == $y) | n] | add // 0),
			("launch_errors:" + $y): ([$l[] | select(layer == $y and .rc != 0) | n] | add // 0)}] | add) +
		([("h2h", "h2d", "d2h", "d2d", "default") as $d | {("copies:" + $d): ([$c[] | select(dir == $d)] | length),
			("copied_bytes:" + $d): ([$c[] | select(dir == $d) | .size] | add // 0)}] | add) +
		{allocations: ($a | length), allocation_failures: ([$a[] | select(.rc != 0)] | length),
		 allocated_bytes: ([$a[] | select(.rc == 0) | .size] | add // 0),
		 outstanding_bytes: (($live | to_entries | map(.value) | add // 0) -
			([.[] | select(.api == "cudaFree" and .rc == 0 and $live[.ptr] != null) | $live[.ptr]] | add // 0)),
		 syncs: ($s | length), sync_wait_min_ns: ([$s[] | .wait_us // 0] | add // 0 | . * 1000)}' "$@"
}

# gl_json FILE CGROUP RECORD KEY [LAYER]: KEY summed over the samples of
# CGROUP (launch samples of LAYER)
gl_json() {
	jq -s --arg cg "$2" --arg r "$3" --arg k "$4" --arg y "${5:-}" '[.[] | select(.type == "sample" and
		.row == $r and .cgroup == $cg and ($y == "" or .layer == $y)) | .[$k]] | add // 0' "$1"
}

# gl_check PROM JSON TRUTH SEL: every series of SEL (the labels of one
# cgroup) equals the JSON samples summed and what the programs called
gl_check() {
	local f=$1 j=$2 t=$3 sel=$4 cg y d want json got n
	cg=$(sed 's/^cgroup="\([^"]*\)".*/\1/' <<< "$sel")
	for y in runtime driver; do
		want=$(jq --arg y "$y" '.["launches:" + $y]' "$t")
		json=$(gl_json "$j" "$cg" launch launches "$y")
		got=$(prom_value "$f" "aiscope_gpulaunch_launches_total{$sel,layer=\"$y\"}" || echo 0)
		echo "launches $y: called $want, JSON $json, metric $got"
		[ "$want" -eq "$json" ]
		[ "$got" -eq "$want" ]
		[ "$want" -eq 0 ] && continue
		want=$(jq --arg y "$y" '.["launch_errors:" + $y]' "$t")
		json=$(gl_json "$j" "$cg" launch errors "$y")
		got=$(prom_value "$f" "aiscope_gpulaunch_launch_errors_total{$sel,layer=\"$y\"}")
		echo "launch errors $y: called $want, JSON $json, metric $got"
		[ "$want" -eq "$json" ]
		[ "$got" -eq "$want" ]
		# every launch returned: the histogram counts each once
		n=$(jq --arg y "$y" '.["launches:" + $y]' "$t")
		[ "$(gl_json "$j" "$cg" launch returns "$y")" -eq "$n" ]
		[ "$(prom_value "$f" "aiscope_gpulaunch_launch_latency_seconds_count{$sel,layer=\"$y\"}")" -eq "$n" ]
		[ "$(prom_value "$f" "aiscope_gpulaunch_launch_latency_seconds_bucket{$sel,layer=\"$y\",le=\"+Inf\"}")" -eq "$n" ]
		[ "$(sec_to_ns "$(prom_value "$f" "aiscope_gpulaunch_launch_latency_seconds_sum{$sel,layer=\"$y\"}")")" -gt 0 ]
	done
	for d in allocations:alloc_calls allocation_failures:alloc_failures allocated_bytes:alloc_bytes; do
		want=$(jq ".${d%:*}" "$t")
		json=$(gl_json "$j" "$cg" mem "${d#*:}")
		got=$(prom_value "$f" "aiscope_gpulaunch_${d%:*}_total{$sel}")
		echo "${d%:*}: called $want, JSON $json, metric $got"
		[ "$want" -eq "$json" ]
		[ "$got" -eq "$want" ]
	done
	# the gauge: the last interval's figure; the program still runs
	want=$(jq .outstanding_bytes "$t")
	json=$(jq -s --arg cg "$cg" '[.[] | select(.type == "sample" and .row == "mem" and .cgroup == $cg)] |
		(map(.seq) | max) as $s | [.[] | select(.seq == $s) | .outstanding_bytes] | add' "$j")
	got=$(prom_value "$f" "aiscope_gpulaunch_outstanding_bytes{$sel}")
	echo "outstanding: called $want, JSON $json, metric $got"
	[ "$want" -eq "$json" ]
	[ "$got" -eq "$want" ]
	for d in h2h h2d d2h d2d default; do
		for n in copies:calls copied_bytes:bytes; do
			want=$(jq --arg k "${n%:*}:$d" '.[$k]' "$t")
			json=$(gl_json "$j" "$cg" mem "copy_${d}_${n#*:}")
			got=$(prom_value "$f" "aiscope_gpulaunch_${n%:*}_total{$sel,direction=\"$d\"}" || echo 0)
			echo "${n%:*} $d: called $want, JSON $json, metric $got"
			[ "$want" -eq "$json" ]
			[ "$got" -eq "$want" ]
		done
	done
	want=$(jq .syncs "$t")
	json=$(gl_json "$j" "$cg" mem sync_calls)
	got=$(prom_value "$f" "aiscope_gpulaunch_sync_wait_seconds_count{$sel}" || echo 0)
	echo "syncs: called $want, JSON $json, metric $got"
	[ "$want" -eq "$json" ]
	[ "$got" -eq "$want" ]
	[ "$want" -gt 0 ] || return 0
	[ "$(prom_value "$f" "aiscope_gpulaunch_sync_wait_seconds_bucket{$sel,le=\"+Inf\"}")" -eq "$want" ]
	json=$(gl_json "$j" "$cg" mem sync_wait_ns)
	got=$(sec_to_ns "$(prom_value "$f" "aiscope_gpulaunch_sync_wait_seconds_sum{$sel}")")
	echo "sync wait: at least $(jq .sync_wait_min_ns "$t") ns, JSON $json, metric $got"
	[ "$got" -eq "$json" ]
	[ "$got" -ge "$(jq .sync_wait_min_ns "$t")" ]
	# cumulative buckets, never decreasing
	grep "^aiscope_gpulaunch_sync_wait_seconds_bucket{$sel" "$f" | awk '$NF < prev { exit 1 } { prev = $NF }'
	[ "$(grep -c "^aiscope_gpulaunch_sync_wait_seconds_bucket{$sel" "$f")" -eq 28 ]
}

# gl_run NAME LIBS... -- PROGRAM-ARGS...; -- PROGRAM-ARGS...: gpulaunch
# --latency --mem with --prometheus on LIBS while each program runs in a
# fake container (with a cgroup2 mount). A cudacall (GL_WAIT=done, the
# default) ends with its done op and a long sleep, so that it is alive at
# the last interval; with GL_WAIT=exit the program runs to its end. Sets
# GL_PROM, GL_SEL (the container's labels), GL_CG
gl_run() {
	local name=$1 root libs=() progs=() p i pids=() cgdir=
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do libs+=(--lib "$1"); shift; done
	GL_PROM=$BATS_TEST_TMPDIR/$name.prom
	root=$(cgroup2_root) || root=
	CID=
	if [ -n "$root" ]; then
		CID=$(random_hex64)
		cgdir=$root/docker-$CID.scope
		make_cgroup "$cgdir"
	fi
	# two intervals at least: the counters add each one's deltas
	start_tool "$name" gpulaunch -j -i 400ms -r 0 --latency --mem "${libs[@]}" --prometheus "$GL_PROM"
	i=0
	while [ $# -gt 0 ]; do
		shift
		progs=()
		while [ $# -gt 0 ] && [ "$1" != -- ]; do progs+=("$1"); shift; done
		[ "${GL_WAIT:-done}" = exit ] || progs+=(done sleep:60000)
		start_bg "$name-c$i" sh -c '[ -z "$1" ] || echo $$ > "$1/cgroup.procs"; shift; exec "$@"' \
			sh "$cgdir" "${progs[@]}"
		pids+=("$BG_PID")
		i=$((i + 1))
	done
	# each program's last call returned (and was printed); then the tool
	# stops while the programs still live
	for ((i = 0; i < ${#pids[@]}; i++)); do
		if [ "${GL_WAIT:-done}" = exit ]; then
			wait "${pids[i]}"
		else
			wait_for "$BATS_TEST_TMPDIR/$name-c$i.out" '^{"done":true}$' 30
		fi
	done
	# the end of the run spans an interval at least
	[ "${GL_WAIT:-done}" != exit ] || sleep 0.5
	stop_tool "$TOOL_PID"
	[ "${GL_WAIT:-done}" = exit ] || kill "${pids[@]}"
	all_json "$BATS_TEST_TMPDIR/$name.out"
	cat "$BATS_TEST_TMPDIR/$name"-c*.out
	gl_truth "$BATS_TEST_TMPDIR/$name"-c*.out > "$BATS_TEST_TMPDIR/$name.truth"
	cat "$BATS_TEST_TMPDIR/$name.truth"
	GL_CG=$(jq -r -s --argjson p "${pids[0]}" 'first(.[] | select(.type == "sample" and .pid == $p)) | .cgroup' \
		"$BATS_TEST_TMPDIR/$name.out")
	[ -z "$CID" ] || [ "$GL_CG" = "/docker-$CID.scope" ]
	GL_SEL="cgroup=\"$GL_CG\",container_id=\"$CID\",pod_uid=\"\",namespace=\"\",pod=\"\",container=\"\""
	grep -v '_bucket' "$GL_PROM"
}

@test "gpulaunch --prometheus: launches, latency, allocations, copies and syncs by cgroup equal the JSON and what the program called (doubles)" {
	need_root
	local D=$GL_DOUBLE
	gl_run g "$D/libcudart.so.12" "$D/libcuda.so.1" \
		-- env LD_LIBRARY_PATH="$D" "$GL_CUDA/cudacall" --rt "$D/libcudart.so.12" --drv "$D/libcuda.so.1" \
		launch launch reg getkernel getkernel cu_getfunc cu_launch malloc:4096 sleep:500 \
		malloc:10000 free malloc:0 cu_malloc:8192 memcpy:1:512 memcpy:1:100 memcpy:2:300 \
		memcpy:3:7 memcpy:0:11 memcpy:4:13 cu_htod:64 cu_dtoh:5 cu_dtod:9 sync_us:200000 \
		sync_us:3000 launch
	# the program called as intended: 7 launches, 4 of them runtime ones,
	# none failed; 4 allocations, one failed; 10 copies; 2 syncs
	jq -e '.["launches:runtime"] == 5 and .["launches:driver"] == 2 and
		.["launch_errors:runtime"] + .["launch_errors:driver"] == 0 and .allocations == 4 and
		.allocation_failures == 1 and .outstanding_bytes == 4096 + 8192 and .syncs == 2' \
		"$BATS_TEST_TMPDIR/g.truth"
	# the counters add every interval's deltas: the run spans several
	[ "$(jq -s '[.[] | select(.type == "sample") | .seq] | unique | length' "$BATS_TEST_TMPDIR/g.out")" -ge 2 ]
	gl_check "$GL_PROM" "$BATS_TEST_TMPDIR/g.out" "$BATS_TEST_TMPDIR/g.truth" "$GL_SEL"
	[ "$(prom_value "$GL_PROM" aiscope_gpulaunch_libraries)" -eq 2 ]
	[ "$(prom_value "$GL_PROM" aiscope_gpulaunch_libraries)" -eq \
		"$(jq -s '[.[] | select(.type == "summary")][0].libraries' "$BATS_TEST_TMPDIR/g.out")" ]
	# no label per process or per CUDA kernel (build_info's kernel= is the
	# host's kernel release, one value)
	! grep -v '^aiscope_build_info{' "$GL_PROM" | grep -Eq '(^|[{,])(pid|tid|comm|kernel|api)=' || false
	if command -v promtool > /dev/null; then
		promtool check metrics < "$GL_PROM"
	fi
}

@test "gpulaunch --prometheus: pinned, VMM held, mapped and reserved bytes, memsets and peer copies equal the JSON and the truth (tests/cuda/mem.cu, doubles)" {
	need_root
	[ -x "$GL_CUDA/mem_shared" ] || skip "no nvcc: mem_shared not built"
	local D=$GL_DOUBLE f=$BATS_TEST_TMPDIR/m.prom t=$BATS_TEST_TMPDIR/m.cmp k want got n
	start_tool m gpulaunch -j -i 400ms --mem --lib "$D/13/libcudart.so.13" --lib "$D/libcuda.so.1" \
		--prometheus "$f"
	# alive at the last interval: the gauges hold its bytes
	LD_LIBRARY_PATH=$D/13:$D start_bg c "$GL_CUDA/mem_shared" done sleep:60000
	wait_for "$BATS_TEST_TMPDIR/c.out" '^{"done":true}$' 30
	sleep 1
	stop_tool "$TOOL_PID"
	kill "$BG_PID"
	all_json "$BATS_TEST_TMPDIR/m.out"
	jq -n -c --slurpfile truth "$BATS_TEST_TMPDIR/c.out" --slurpfile got "$BATS_TEST_TMPDIR/m.out" \
		-f "$BATS_TEST_DIRNAME/cuda/mem-check.jq" > "$t"
	jq -c 'select(.want != .got)' "$t"
	jq -e -s 'length == 49 and all(.want == .got)' "$t"
	for k in outstanding_bytes pinned_outstanding_bytes vmm_outstanding_bytes vmm_mapped_bytes \
		vmm_reserved_bytes memset_calls:memsets memset_bytes:memset_bytes \
		'copy_peer_calls:copies' 'copy_peer_bytes:copied_bytes'; do
		want=$(jq --arg k "${k%%:*}" 'select(.key == $k) | .want' "$t")
		case $k in
		*:*) n=aiscope_gpulaunch_${k#*:}_total ;;
		*) n=aiscope_gpulaunch_$k ;;
		esac
		case $k in
		copy_peer_*) got=$(prom_sum "$f" "$n" 'direction="peer"') ;;
		*) got=$(prom_sum "$f" "$n" .) ;;
		esac
		echo "$k: truth $want, $n $got"
		[ "$want" -gt 0 ]
		[ "$got" -eq "$want" ]
	done
	if command -v promtool > /dev/null; then
		promtool check metrics < "$f"
	fi
}

@test "gpulaunch --prometheus with libcudart 11.8 and libcuda 535 (Debian): failed launches, allocations, copies and syncs equal the JSON and the calls" {
	need_root
	need_debian
	gl_run d "$FIX/libcudart.so.11.0" "$FIX/libcuda.so.1" \
		-- env LD_LIBRARY_PATH="$FIX" "$GL_CUDA/cudacall" --rt "$FIX/libcudart.so.11.0" \
		launch launch_ptsz launch_ex coop launch malloc:4096 malloc:65536 memcpy:1:512 \
		memcpy_async:2:256 sync_stream sync_device \
		-- "$GL_CUDA/cudacall" --drv "$FIX/libcuda.so.1" cu_launch cu_launch_ptsz sleep:500 \
		cu_launch_ex cu_malloc:64 cu_htod:8 cu_dtoh:16
	# no driver, no device: every runtime call fails (100), every driver
	# call too (3)
	jq -e '.["launches:runtime"] == 5 and .["launch_errors:runtime"] == 5 and
		.["launches:driver"] == 3 and .["launch_errors:driver"] == 3 and .allocations == 3 and
		.allocation_failures == 3 and .allocated_bytes == 0 and .syncs == 2' "$BATS_TEST_TMPDIR/d.truth"
	gl_check "$GL_PROM" "$BATS_TEST_TMPDIR/d.out" "$BATS_TEST_TMPDIR/d.truth" "$GL_SEL"
	if command -v promtool > /dev/null; then
		promtool check metrics < "$GL_PROM"
	fi
}

@test "gpulaunch --prometheus with nvcc <<<>>> launches (CUDA 13): launches and failed calls equal the JSON and the program's counts" {
	need_root
	need_nvcc_kernels
	GL_WAIT=exit gl_run k "$CUDA13" \
		-- env LD_LIBRARY_PATH="$(dirname "$CUDA13")" "$GL_CUDA/kern_shared" 5
	# no GPU: cudaErrorInsufficientDriver (35) for every launch and call
	jq -e '.["launches:runtime"] == 10 and .["launch_errors:runtime"] == 10 and
		.["launches:driver"] == 0 and .allocations == 1 and .allocation_failures == 1 and
		.["copied_bytes:h2d"] == 4096 and .["copied_bytes:d2h"] == 4096' "$BATS_TEST_TMPDIR/k.truth"
	gl_check "$GL_PROM" "$BATS_TEST_TMPDIR/k.out" "$BATS_TEST_TMPDIR/k.truth" "$GL_SEL"
}

@test "gpulaunch --prometheus: a cgroup's outstanding bytes read 0 once its process exited" {
	need_root
	local D=$GL_DOUBLE f=$BATS_TEST_TMPDIR/o.prom i got=
	start_tool o gpulaunch -j -i 300ms --mem --lib "$D/libcudart.so.12" --prometheus "$f"
	LD_LIBRARY_PATH=$D "$GL_CUDA/cudacall" --rt "$D/libcudart.so.12" malloc:777 sleep:700 > "$BATS_TEST_TMPDIR/c.out"
	jq -e -s 'length == 1 and .[0].rc == 0' "$BATS_TEST_TMPDIR/c.out"
	# the process exited: reported one last time, then its cgroup reads 0
	for i in $(seq 100); do
		grep -q '"row":"mem".*"outstanding_bytes":777' "$BATS_TEST_TMPDIR/o.out" &&
			got=$(prom_sum "$f" aiscope_gpulaunch_outstanding_bytes .) && [ "$got" = 0 ] && break
		sleep 0.1
	done
	stop_tool "$TOOL_PID"
	grep '"row":"mem"' "$BATS_TEST_TMPDIR/o.out" | jq -c '{seq, pid, outstanding_bytes}'
	grep outstanding_bytes "$f"
	[ "$got" = 0 ]
	# the last interval that had the process said 777, as the gauge did then
	[ "$(jq -s '[.[] | select(.row == "mem")] | .[-1].outstanding_bytes' "$BATS_TEST_TMPDIR/o.out")" -eq 777 ]
}

@test "gpulaunch: -e with --prometheus or --listen is a usage error" {
	run "$BIN/gpulaunch" -e --prometheus "$BATS_TEST_TMPDIR/x.prom"
	[ "$status" -eq 2 ]
	[[ "$output" == *"--prometheus"* ]]
	run "$BIN/gpulaunch" -e --listen 127.0.0.1:0
	[ "$status" -eq 2 ]
	[ ! -e "$BATS_TEST_TMPDIR/x.prom" ]
}

# ---- deploy/: the Kubernetes manifest and the image ----

# k8s_validator: installs deploy/validate's locked npm packages once under
# the build directory (again when the lock file changes); sets NODE_PATH
k8s_validator() {
	npm_locked deploy/validate k8s-validate kubernetes-models || return 1
	export NODE_PATH=$NPM_MODULES
}

# yaml_json FILE: the documents of FILE as JSON, one per line
yaml_json() {
	node -e 'const y = require("js-yaml"), fs = require("fs");
		for (const d of y.loadAll(fs.readFileSync(process.argv[1], "utf8")))
			if (d) console.log(JSON.stringify(d));' "$1"
}

@test "deploy/*.yaml is valid against the Kubernetes API schema, offline; typos are caught" {
	local f
	k8s_validator
	run node "$TOP/deploy/validate/validate.js" "$TOP"/deploy/*.yaml
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == *"DaemonSet aiscope: valid"* ]]
	# the check is not a no-op: a wrong type, a missing required field and
	# an unknown field are each rejected
	f=$BATS_TEST_TMPDIR/bad.yaml
	sed 's/containerPort: 9464/containerPort: "9464x"/' "$TOP/deploy/aiscope-daemonset.yaml" > "$f"
	run node "$TOP/deploy/validate/validate.js" "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == *"containerPort must be integer"* ]]
	sed '/^  selector:$/,/^      app.kubernetes.io\/name: aiscope$/d' "$TOP/deploy/aiscope-daemonset.yaml" > "$f"
	run node "$TOP/deploy/validate/validate.js" "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == *"spec must have required property selector"* ]]
	sed 's/hostPID: true/hostPid: true/' "$TOP/deploy/aiscope-daemonset.yaml" > "$f"
	run node "$TOP/deploy/validate/validate.js" "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == *"spec/template/spec/hostPid: unknown field"* ]]
}

@test "the DaemonSet asks for the privileges and mounts the tools need, and its commands parse" {
	local ds c tool args port i
	k8s_validator
	ds=$(yaml_json "$TOP/deploy/aiscope-daemonset.yaml" | jq -c 'select(.kind == "DaemonSet")')
	[ -n "$ds" ]
	echo "$ds" | jq -e '.spec.template.spec.hostPID == true
		and (.spec.template.spec.hostNetwork // false) == false
		and .spec.template.spec.automountServiceAccountToken == false
		and .spec.template.spec.priorityClassName == "system-node-critical"'
	# every volume is a host path, mounted read-only, and BTF and the cgroup
	# hierarchies are among them
	echo "$ds" | jq -e '[.spec.template.spec.volumes[].hostPath.path] as $p |
		($p | index("/sys/kernel/btf")) != null and ($p | index("/sys/fs/cgroup")) != null and
		all(.spec.template.spec.volumes[]; .hostPath != null)'
	echo "$ds" | jq -e 'all(.spec.template.spec.containers[].volumeMounts[]; .readOnly == true)'
	# no privileged container; every capability named, nothing else
	echo "$ds" | jq -e 'all(.spec.template.spec.containers[].securityContext;
		.privileged == false and .allowPrivilegeEscalation == false and
		.readOnlyRootFilesystem == true and .capabilities.drop == ["ALL"] and
		(.capabilities.add | sort) == (["BPF","PERFMON","SYS_RESOURCE","SYS_ADMIN","SYS_PTRACE","DAC_READ_SEARCH"] | sort))'
	echo "$ds" | jq -e 'all(.spec.template.spec.containers[]; .resources.limits.memory != null and
		.resources.limits.cpu != null and .resources.requests.memory != null)'
	# each container runs a tool of this tree with options it accepts, and
	# serves /metrics on the port its probes and annotation name
	for i in $(seq 0 $(($(echo "$ds" | jq '.spec.template.spec.containers | length') - 1))); do
		c=$(echo "$ds" | jq -c ".spec.template.spec.containers[$i]")
		[ "$(echo "$c" | jq -r '.command[0]')" = /usr/sbin/aiscope ]
		[ "$(echo "$c" | jq -r '.command | length')" -eq 2 ]
		tool=$(echo "$c" | jq -r '.command[1]')
		[ -f "$TOP/tools/$tool.c" ] || [ -d "$TOP/tools/$tool" ] || { echo "no tool $tool"; false; }
		[ "$(echo "$c" | jq -r .name)" = "$tool" ]
		mapfile -t args < <(echo "$c" | jq -r '.args[]')
		port=$(printf '%s\n' "${args[@]}" | grep -A1 -x -- --listen | tail -1)
		port=${port##*:}
		[ "$(echo "$c" | jq -r --arg n "m-$tool" '.ports[] | select(.name == $n) | .containerPort')" = "$port" ]
		echo "$c" | jq -e --arg n "m-$tool" '.livenessProbe.httpGet.path == "/metrics" and
			.livenessProbe.httpGet.port == $n and .readinessProbe.httpGet.port == $n'
		# the same arguments, on a free port, parse (and --list-probes exits 0)
		run "$BIN/aiscope" "$tool" "${args[@]/0.0.0.0:$port/127.0.0.1:0}" --list-probes
		echo "$output"
		[ "$status" -eq 0 ]
	done
}

@test "the PodMonitor is valid against the operator's CRD schema and scrapes exactly the DaemonSet's metrics ports" {
	local f=$BATS_TEST_TMPDIR/bad.yaml ds pm
	k8s_validator
	run node "$TOP/deploy/validate/validate.js" "$TOP/deploy/aiscope-podmonitor.yaml"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$TOP/deploy/aiscope-podmonitor.yaml: 1 PodMonitor aiscope: valid" ]
	# not a no-op: a bad duration, a missing selector and a misspelt field
	sed 's/interval: 15s/interval: 15 seconds/' "$TOP/deploy/aiscope-podmonitor.yaml" > "$f"
	run node "$TOP/deploy/validate/validate.js" "$f"
	echo "$output"
	[ "$status" -eq 1 ]
	[[ "$output" == *"interval must match pattern"* ]]
	sed '/^  selector:$/,/^      app.kubernetes.io\/name: aiscope$/d' "$TOP/deploy/aiscope-podmonitor.yaml" > "$f"
	run node "$TOP/deploy/validate/validate.js" "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == *"must have required property 'selector'"* || "$output" == *"must have required property selector"* ]]
	# (the operator's models declare spec's types inline, so validate.js
	# cannot look a field up in them: a misspelt optional field passes, a
	# misspelt required one is caught as missing)
	sed 's/podMetricsEndpoints:/podMetricEndpoints:/' "$TOP/deploy/aiscope-podmonitor.yaml" > "$f"
	run node "$TOP/deploy/validate/validate.js" "$f"
	[ "$status" -eq 1 ]
	[[ "$output" == *"data/spec must have required property podMetricsEndpoints"* ]]
	# it selects the DaemonSet's pods in its namespace, one endpoint per m-* port
	ds=$(yaml_json "$TOP/deploy/aiscope-daemonset.yaml" | jq -c 'select(.kind == "DaemonSet")')
	pm=$(yaml_json "$TOP/deploy/aiscope-podmonitor.yaml")
	[ "$(echo "$pm" | jq -c .spec.selector.matchLabels)" = "$(echo "$ds" | jq -c .spec.template.metadata.labels)" ]
	[ "$(echo "$pm" | jq -r '.spec.namespaceSelector.matchNames | join(",")')" = "$(echo "$ds" | jq -r .metadata.namespace)" ]
	diff <(echo "$ds" | jq -r '.spec.template.spec.containers[].ports[].name' | grep '^m-' | sort) \
		<(echo "$pm" | jq -r '.spec.podMetricsEndpoints[].port' | sort)
	[ "$(echo "$ds" | jq '[.spec.template.spec.containers[].ports[].name | select(startswith("m-"))] | length')" -ge 7 ]
	# with the labels deploy/prometheus.yml's job adds, on every endpoint
	echo "$pm" | jq -e 'all(.spec.podMetricsEndpoints[]; .path == "/metrics" and
		([.relabelings[] | {(.targetLabel): .sourceLabels[0]}] | add) ==
		{"node": "__meta_kubernetes_pod_node_name", "aiscope_tool": "__meta_kubernetes_pod_container_name"})'
	grep -A1 '__meta_kubernetes_pod_node_name' "$TOP/deploy/prometheus.yml" | grep -q 'target_label: node'
	grep -A1 '__meta_kubernetes_pod_container_name' "$TOP/deploy/prometheus.yml" | grep -q 'target_label: aiscope_tool'
}

@test "the image recipe builds every tool statically on Debian 12 and ships nothing else" {
	local f=$TOP/deploy/Dockerfile v
	grep -q '^FROM debian:bookworm AS build$' "$f"
	grep -q 'scripts/deps.sh --build' "$f"
	grep -q 'make -j"$(nproc)" static' "$f"
	grep -q '^FROM scratch$' "$f"
	grep -q '^COPY --from=build /out/ /$' "$f"
	# the image says what built it: the recipe, its version (the
	# DaemonSet's tag and the Makefile's), the repository and commit given
	grep -q 'org.opencontainers.image.description=".*built by deploy/Dockerfile' "$f"
	grep -q '^ARG SOURCE=$' "$f"
	grep -q 'org.opencontainers.image.source="${SOURCE}"' "$f"
	grep -q 'org.opencontainers.image.revision="${REVISION}"' "$f"
	v=$(printf 'v:\n\t@echo $(VERSION)\n' | make --no-print-directory -s -C "$TOP" -f Makefile -f - v)
	grep -q "org.opencontainers.image.version=\"$v\"" "$f"
	# every container's image is the locally built one, by a name no
	# runtime expands to docker.io (a short name would be)
	[ "$(sed -n 's/^ *image: //p' "$TOP/deploy/aiscope-daemonset.yaml" | sort -u)" = "localhost/aiscope:$v" ]
	grep -q "^#   podman build -f deploy/Dockerfile -t localhost/aiscope:$v \.$" "$f"
	# the build context leaves out build outputs and the kernel cache
	grep -qx 'build/' "$TOP/.dockerignore"
	# the static tools the image carries exist for every tool (make static)
	[ -x "$AISCOPE_BUILD/static/schedlat" ] || skip "make static has not run"
	file "$AISCOPE_BUILD/static/aiscope" | grep -q 'statically linked'
	for t in $(cd "$TOP/tools" && ls *.c | sed 's/\.c$//'); do
		[ -x "$AISCOPE_BUILD/static/$t" ] || { echo "no static $t"; false; }
		file "$AISCOPE_BUILD/static/$t" | grep -q 'statically linked'
	done
}

@test "deploy/prometheus.yml and the alerting rules pass promtool; the rules' unit tests pass" {
	command -v promtool > /dev/null || skip "promtool (package prometheus) is not installed"
	local f=$BATS_TEST_TMPDIR/prometheus.yml
	cd "$TOP/deploy"
	promtool check rules aiscope-rules.yml
	promtool test rules aiscope-rules.test.yml
	run promtool check config prometheus.yml
	echo "$output"
	if [ "$status" -ne 0 ] && [[ "$output" == *"field kubernetes_sd_configs not found"* ]]; then
		# Debian builds Prometheus without Kubernetes discovery: check the
		# rest (relabelling, rules) with a static target in its place
		sed '/^    kubernetes_sd_configs:$/,/^          names: \[aiscope\]$/c\
    static_configs:\
      - targets: ["127.0.0.1:9464"]' prometheus.yml > "$f"
		grep -q '^    static_configs:$' "$f"
		cp aiscope-rules.yml "$BATS_TEST_TMPDIR/"
		run promtool check config "$f"
		echo "$output"
	fi
	[ "$status" -eq 0 ]
	[[ "$output" == *"SUCCESS: 1 rule files found"* ]]
}

# ---- Grafana ----

@test "deploy/grafana: the dashboards are make grafana's from spec.json; panels well formed, provisioning files valid YAML" {
	local d f
	d=$BATS_TEST_TMPDIR/dash
	make -s -C "$TOP" grafana GRAFANA_OUT="$d" > /dev/null
	for f in "$TOP"/deploy/grafana/dashboards/*.json; do
		diff "$f" "$d/${f##*/}" || { echo "${f##*/}: not what make grafana writes"; false; }
	done
	[ "$(ls "$d" | wc -l)" -eq "$(ls "$TOP"/deploy/grafana/dashboards | wc -l)" ]
	[ "$(jq '.dashboards | length' "$TOP/deploy/grafana/spec.json")" -eq "$(ls "$d" | wc -l)" ]
	for f in "$TOP"/deploy/grafana/dashboards/*.json; do
		# unique uid and panel ids; every panel on the datasource variable,
		# inside the 24-column grid, with a unit and a query per target
		jq -e --arg f "${f##*/}" '
			(.uid | startswith("aiscope-")) and ($f == .uid + ".json") and .schemaVersion >= 36 and
			([.panels[].id] | length == (unique | length)) and
			([.templating.list[].name] == ["datasource", "instance"]) and
			all(.panels[]; .datasource.uid == "${datasource}" and .gridPos.x + .gridPos.w <= 24 and
				(.fieldConfig.defaults.unit | type == "string") and (.targets | length > 0) and
				all(.targets[]; (.expr | length > 0) and .datasource.uid == "${datasource}"))' "$f"
	done
	[ "$(cat "$TOP"/deploy/grafana/dashboards/*.json | jq -s '[.[].uid] | unique | length')" -eq "$(ls "$d" | wc -l)" ]
	for f in "$TOP"/deploy/grafana/provisioning/*/*.yaml; do
		python3 -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); assert d["apiVersion"] == 1' "$f"
	done
}

@test "deploy/grafana: every dashboard type-checks against Grafana's own Dashboard type (@grafana/schema, tsc); a wrong one does not" {
	local f
	npm_locked deploy/grafana/validate grafana-validate .bin/tsc
	"$TOP/deploy/grafana/validate/check.sh" "$NPM_MODULES" "$TOP"/deploy/grafana/dashboards/*.json
	# the check fails where Grafana's type says no: a tooltip mode that is
	# no number, a panel without its grid position's width, a field unknown
	jq '.graphTooltip = "shared"' "$TOP/deploy/grafana/dashboards/aiscope-overview.json" > "$BATS_TEST_TMPDIR/a.json"
	jq 'del(.panels[0].gridPos.w)' "$TOP/deploy/grafana/dashboards/aiscope-overview.json" > "$BATS_TEST_TMPDIR/b.json"
	jq '.refreshh = "30s"' "$TOP/deploy/grafana/dashboards/aiscope-overview.json" > "$BATS_TEST_TMPDIR/c.json"
	for f in a b c; do
		run "$TOP/deploy/grafana/validate/check.sh" "$NPM_MODULES" "$BATS_TEST_TMPDIR/$f.json"
		echo "$output"
		[ "$status" -ne 0 ] && [[ "$output" == *"error TS"* ]]
	done
}

# grafana_expr EXPR: a panel's query as Grafana sends it here: every host,
# a one-minute rate window
grafana_expr() {
	local e=$1
	e=${e//'$__rate_interval'/1m}
	e=${e//'$instance'/.*}
	printf '%s' "$e"
}

@test "deploy/grafana: every panel's query returns data, in its panel's unit, from a real Prometheus scraping every tool under a workload" {
	need_root
	command -v prometheus > /dev/null || skip "prometheus is not installed"
	[ -e "$MEMCG_ROOT/memory.limit_in_bytes" ] || skip "no v1 memory controller"
	local nccl=$AISCOPE_BUILD/tests/nccl D=$GL_DOUBLE f i n=0 skipped=0 p e q unit got names
	local mem needs
	[ -x "$nccl/ncclrank" ] && [ -x "$GL_CUDA/cudacall" ] || skip "needs the NCCL and CUDA test doubles"
	disk_dir
	"$HELPERS/pagecache" create "$DISK_DIR/f" 256 > /dev/null
	# a memory cgroup with a limit, half full, for oomwatch's gauges
	CG=$MEMCG_ROOT/aiscope-graf-$$
	make_cgroup "$CG"
	echo 67108864 > "$CG/memory.limit_in_bytes"
	# every tool, serving its metrics
	start_tool schedlat schedlat -i 1s --listen 127.0.0.1:0
	start_tool cachestat cachestat -i 1s --listen 127.0.0.1:0
	start_tool socketsnoop socketsnoop -i 1s --listen 127.0.0.1:0
	start_tool ipcsnoop ipcsnoop -i 1s --listen 127.0.0.1:0
	start_tool oomwatch oomwatch -i 1s --alloc-min 1M --listen 127.0.0.1:0
	start_tool numaplace numaplace -i 1s --listen 127.0.0.1:0
	# rdmasnoop as the DaemonSet runs it: idle on a host without an RDMA
	# device (its panels need one and verbs traffic: not checked here)
	start_tool rdmasnoop rdmasnoop -i 1s --wait-device --listen 127.0.0.1:0
	start_tool nclstat nclstat -i 1s --lib "$nccl/libnccl.so.2" --listen 127.0.0.1:0
	# with nvcc, the program of pinned memory, the virtual-memory API and
	# memsets too (tests/cuda/mem.cu)
	mem=
	[ -x "$GL_CUDA/mem_shared" ] && mem=1
	start_tool gpulaunch gpulaunch -i 1s --mem --latency --lib "$D/libcudart.so.12" --lib "$D/libcuda.so.1" \
		${mem:+--lib "$D/13/libcudart.so.13"} --listen 127.0.0.1:0
	start_prometheus schedlat cachestat socketsnoop ipcsnoop oomwatch numaplace rdmasnoop nclstat gpulaunch
	# the workload: 32 MiB held in the cgroup; NCCL and CUDA calls; then
	# flows, pipes and page-cache reads, misses and writes, for 8 s
	hog_in_cg hog rate 0 32
	start_bg ranks env LD_LIBRARY_PATH="$nccl" "$nccl/ncclrank" run -r 2 -i 400 -s 20000 -b
	# the ranks hold at their end (their communicators stay): ended in teardown
	for i in 0 1; do
		wait_for "$BATS_TEST_TMPDIR/ranks.out" "^rank $i pid " 30
		TEST_PIDS+=("$(awk -v r="$i" '$1 == "rank" && $2 == r { print $4; exit }' "$BATS_TEST_TMPDIR/ranks.out")")
	done
	start_bg cuda env LD_LIBRARY_PATH="$D" "$GL_CUDA/cudacall" --rt "$D/libcudart.so.12" --drv "$D/libcuda.so.1" \
		sync_us:20000 rate:200:4 sync_us:3000 rate:200:4 sync_us:5000
	if [ -n "$mem" ]; then
		LD_LIBRARY_PATH=$D/13:$D start_bg mem "$GL_CUDA/mem_shared" done sleep:60000
	fi
	for i in $(seq 8); do
		"$HELPERS/netpair" tcp4 -n 100000 -m 10 -k 1000 -l 1 > /dev/null
		head -c 200000 /dev/zero | cat > /dev/null
		"$HELPERS/ipcload" shm 65536 > /dev/null
		"$HELPERS/pagecache" drop "$DISK_DIR/f" > /dev/null
		cat "$DISK_DIR/f" "$DISK_DIR/f" > /dev/null
		dd if=/dev/zero of="$DISK_DIR/w" bs=64k count=4 conv=fsync 2> /dev/null
		sleep 1
	done
	sleep 2
	api=$PROM_API
	# every target of every panel, but those whose data this host cannot have
	for f in "$TOP"/deploy/grafana/dashboards/*.json; do
		while IFS=$'\t' read -r p unit e; do
			needs=$(jq -r --arg t "$p" '.dashboards[].panels[] | select(.title == $t) | .needs // ""' \
				"$TOP/deploy/grafana/spec.json")
			if [ -n "$needs" ] && ! { [ -n "$mem" ] && [[ $needs == *mem.cu* ]]; }; then
				echo "not checked here: ${f##*/} '$p': $e (needs $(jq -r --arg t "$p" '.dashboards[].panels[] | select(.title == $t) | .needs' "$TOP/deploy/grafana/spec.json"))"
				skipped=$((skipped + 1))
				continue
			fi
			q=$(grafana_expr "$e")
			got=$(curl -sf "$api/query" --data-urlencode "query=$q") || { echo "${f##*/} '$p': the query failed: $q"; false; }
			# data: at least one series with a number
			jq -e '.status == "success" and ([.data.result[] | .value[1] | select(. != "NaN")] | length > 0)' <<< "$got" > /dev/null ||
				{ echo "${f##*/} '$p': no data for $q"; echo "$got" | head -c 600; false; }
			# the unit: seconds from _seconds series, bytes from _bytes
			# ones, rates from rate(), a ratio between 0 and 1
			names=$(grep -o 'aiscope_[a-z0-9_]*' <<< "$e" | sort -u)
			case $unit in
			s) ! grep -v seconds <<< "$names" | grep -q . || { echo "'$p': $unit from $names"; false; } ;;
			bytes) ! grep -v bytes <<< "$names" | grep -q . || { echo "'$p': $unit from $names"; false; } ;;
			Bps) ! grep -v bytes <<< "$names" | grep -q . && [[ $e == *'rate('* ]] || { echo "'$p': $unit"; false; } ;;
			ops) [[ $e == *'rate('* ]] || { echo "'$p': ops without rate()"; false; } ;;
			percentunit) jq -e '[.data.result[] | .value[1] | select(. != "NaN") | tonumber] | all(. >= 0 and . <= 1.5)' <<< "$got" > /dev/null ||
				{ echo "'$p': not a ratio: $got"; false; } ;;
			short) ;;
			*) echo "'$p': unit $unit not checked by this test"; false ;;
			esac
			n=$((n + 1))
		done < <(jq -r '.panels[] | .title as $t | .fieldConfig.defaults.unit as $u | .targets[] | [$t, $u, .expr] | @tsv' "$f")
	done
	echo "$n queries returned data; $skipped not checked here"
	# every family the tools export has a panel (histograms by their
	# _bucket, _sum or _count)
	curl -sf "$api/label/__name__/values" | jq -r '.data[] | select(startswith("aiscope_"))' |
		sed -E 's/_(bucket|sum|count)$//' | sort -u > "$BATS_TEST_TMPDIR/families"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/families")" -ge 50 ]
	jq -r '.dashboards[].panels[].targets[].expr' "$TOP/deploy/grafana/spec.json" |
		grep -o 'aiscope_[a-z0-9_]*' | sed -E 's/_(bucket|sum|count)$//' | sort -u > "$BATS_TEST_TMPDIR/shown"
	comm -23 "$BATS_TEST_TMPDIR/families" "$BATS_TEST_TMPDIR/shown" > "$BATS_TEST_TMPDIR/unshown"
	[ ! -s "$BATS_TEST_TMPDIR/unshown" ] || { echo "families without a panel:"; cat "$BATS_TEST_TMPDIR/unshown"; false; }
	# the queries left out are those of the panels the spec says need what
	# is not here
	[ "$skipped" -eq "$(jq --arg mem "$mem" '[.dashboards[].panels[] | select(.needs) |
		select($mem == "" or (.needs | contains("mem.cu") | not)) | .targets[]] | length' "$TOP/deploy/grafana/spec.json")" ]
	[ "$((n + skipped))" -eq "$(jq '[.dashboards[].panels[].targets[]] | length' "$TOP/deploy/grafana/spec.json")" ]
}
