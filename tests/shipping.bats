#!/usr/bin/env bats
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# Shipping --json to a log pipeline on a plain host, for real: the agent and
# collector configs of deploy/rsyslog/ run in two private rsyslogd (each with
# its own config, pid file, work directory and a free loopback port; no
# /dev/log, nothing of the system's syslog), a real tool appends to the file
# the agent tails, and the collector's output is compared with what the tool
# wrote: every record, byte for byte once the added "host" is taken out,
# across a logrotate copytruncate, a collector stopped and restarted, and an
# agent restarted while the collector was down.

bats_require_minimum_version 1.5.0
load lib

TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
RS=$TOP/deploy/rsyslog

setup() {
	command -v rsyslogd > /dev/null || skip "rsyslogd is not installed (package rsyslog; make deps installs it)"
	compgen -G '/usr/lib/*/rsyslog/omrelp.so' > /dev/null || compgen -G '/usr/lib/rsyslog/omrelp.so' > /dev/null ||
		skip "rsyslog's RELP modules are not installed (package rsyslog-relp; make deps installs it)"
	D=$BATS_TEST_TMPDIR
	LOGDIR=$D/log
	OUT=$D/collector/aiscope.json
	HOST=$(uname -n | cut -d. -f1)
}

teardown() {
	local p
	# a writer a failed test left stopped (hold_writer) must see its SIGTERM
	for p in "${TEST_PIDS[@]}"; do
		kill -CONT "$p" 2>/dev/null
	done
	aiscope_teardown
}

# ---- helpers ----

# subst FILE FROM TO: replaces the fixed string FROM by TO in FILE, and
# fails when FROM is not there (a reworded deploy file must not leave the
# test tailing /var/log or sending to the example host)
subst() {
	local f=$1 from=$2 to=$3 s
	s=$(< "$f")
	[[ $s == *"$from"* ]] || { echo "subst: '$from' not in $f" >&2; return 1; }
	printf '%s\n' "${s//"$from"/"$to"}" > "$f"
}

# ship_configs [tcp]: the agent's and the collector's rsyslog.conf under $D,
# each including its deploy/rsyslog/ file changed only in its paths, ports
# and the agent's retry interval (10 s there, 1 s here); with "tcp", the
# agent's plain TCP action replaces its RELP one, as its comment says. Sets
# RPORT (RELP) and TPORT (plain TCP).
ship_configs() {
	local n a=$D/agent/aiscope.conf
	RPORT=$(free_port)
	TPORT=$(free_port)
	[ "$RPORT" != "$TPORT" ]
	mkdir -p "$D/agent" "$D/collector" "$LOGDIR"
	cp "$RS/aiscope-agent.conf" "$a"
	subst "$a" '/var/log/aiscope/*.json' "$LOGDIR/*.json"
	subst "$a" 'action.resumeInterval="10"' 'action.resumeInterval="1"'
	if [ "${1:-relp}" = tcp ]; then
		sed -i -e '/^\taction(type="omrelp"/,/resumeInterval="1")$/d' \
			-e '/^\t#action(type="omfwd"/,/resumeInterval="1")$/s/^\t#/\t/' "$a"
		subst "$a" 'target="logs.example.internal" port="10514"' "target=\"127.0.0.1\" port=\"$TPORT\""
		! grep -q '^[^#]*action(type="omrelp"' "$a" || false
	else
		subst "$a" 'target="logs.example.internal" port="2514"' "target=\"127.0.0.1\" port=\"$RPORT\""
		! grep -q '^[^#]*action(type="omfwd"' "$a" || false
	fi
	cp "$RS/aiscope-collector.conf" "$D/collector/aiscope.conf"
	subst "$D/collector/aiscope.conf" '/var/log/aiscope-fleet/aiscope.json' "$OUT"
	subst "$D/collector/aiscope.conf" 'port="2514"' "port=\"$RPORT\""
	subst "$D/collector/aiscope.conf" 'port="10514"' "port=\"$TPORT\""
	# the way Debian's /etc/rsyslog.conf includes /etc/rsyslog.d/, with
	# rsyslog's own messages kept in a file of the test (never sent to the
	# system's log socket)
	for n in agent collector; do
		cat > "$D/$n/rsyslog.conf" <<-EOF
			global(workDirectory="$D/$n" processInternalMessages="on")
			*.* action(type="omfile" file="$D/$n/internal.log")
			include(file="$D/$n/aiscope.conf")
		EOF
		rsyslogd -N1 -f "$D/$n/rsyslog.conf"
	done
}

# listens PID PORT: PID listens on TCP PORT
listens() {
	ss -Htlnp "sport = :$2" | grep -q "pid=$1,"
}

# start_rsyslog NAME: rsyslogd in the foreground on $D/NAME's config; sets
# RS_PID. The collector is waited for until it listens on both ports.
start_rsyslog() {
	local n=$1 i
	start_bg "rsyslogd-$n" rsyslogd -n -f "$D/$n/rsyslog.conf" -i "$D/$n/rsyslogd.pid"
	RS_PID=$BG_PID
	[ "$n" = collector ] || return 0
	for ((i = 0; i < 200; i++)); do
		listens "$RS_PID" "$RPORT" && listens "$RS_PID" "$TPORT" && return 0
		proc_gone "$RS_PID" && break
		sleep 0.05
	done
	echo "the collector does not listen on ports $RPORT and $TPORT:" >&2
	ss -Htlnp "sport = :$RPORT or sport = :$TPORT" >&2
	cat "$BATS_TEST_TMPDIR/rsyslogd-$n.err" "$D/$n/internal.log" >&2 2>/dev/null
	return 1
}

# lines FILE: its number of lines (0 when it does not exist)
lines() {
	if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi
}

# wait_lines FILE N [SECONDS]: until FILE has at least N lines
wait_lines() {
	local i
	for ((i = 0; i < ${3:-15} * 20; i++)); do
		[ "$(lines "$1")" -ge "$2" ] && return 0
		sleep 0.05
	done
	echo "timed out: $1 has $(lines "$1") lines, not $2" >&2
	cat "$D"/*/internal.log >&2 2>/dev/null
	return 1
}

# last_seq FILE: the highest interval number of the sample records so far
last_seq() {
	grep -o '"seq":[0-9]*' "$1" | cut -d: -f2 | sort -n | tail -1
}

# unhost FILE: the collector's lines without the "host" the agent put first
unhost() {
	sed 's/^{"host":"[^"]*",/{/' "$1"
}

# ---- tests ----

@test "deploy/rsyslog: the agent, collector and logrotate files parse as shipped" {
	local f=$BATS_TEST_TMPDIR/main.conf n
	for n in aiscope-agent aiscope-collector; do
		# as Debian's rsyslog.conf sets it (imfile keeps its state there)
		printf 'global(workDirectory="%s")\ninclude(file="%s")\n' "$BATS_TEST_TMPDIR" "$RS/$n.conf" > "$f"
		run rsyslogd -N1 -f "$f"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"End of config validation run"* ]]
		[[ "$output" != *error* ]]
	done
	if command -v logrotate > /dev/null; then
		run logrotate -d -s "$BATS_TEST_TMPDIR/lr.state" "$RS/aiscope.logrotate"
		echo "$output"
		[ "$status" -eq 0 ]
		[[ "$output" == *"rotating pattern: /var/log/aiscope/*.json  after 1 days (7 rotations)"* ]]
		[[ "$output" != *error* ]]
	fi
}

# hold_writer PID FILE: stops PID (the writer of FILE) at the end of a line
hold_writer() {
	local i
	for ((i = 0; i < 100; i++)); do
		kill -STOP "$1"
		[ "$(tail -c 1 "$2" | od -An -c | tr -d ' ')" = '\n' ] && return 0
		kill -CONT "$1"
		sleep 0.05
	done
	return 1
}

# ship_schedlat MODE: schedlat -j appends to a file the agent tails, through
# tee, which keeps the truth (everything the tool wrote, whatever happens to
# the file), while the file is rotated by logrotate, the agent is restarted
# and the collector is stopped and started again; then checks that the
# collector holds exactly the tool's records. MODE relp stops the collector
# while records are on the wire and wants every record exactly once; tcp
# stops it between records and wants every record at least once: plain TCP
# has no acknowledgement, and omfwd may send its last batch again when it
# finds the connection closed (docs/fleet.md).
ship_schedlat() {
	local mode=$1 truth=$D/truth.json tailed=$LOGDIR/schedlat.json pipe tee_pid tool_pid agent coll
	local i n_rot n_down n_queued n_total seq
	ship_configs "$mode"
	start_rsyslog collector
	coll=$RS_PID
	start_rsyslog agent
	agent=$RS_PID
	start_bg tool bash -c '"$0" -j -r 0 -i 1s -d 16s | tee "$1" >> "$2"' "$BIN/schedlat" "$truth" "$tailed"
	pipe=$BG_PID
	wait_for "$BATS_TEST_TMPDIR/tool.err" Tracing
	tool_pid=$(pgrep -P "$pipe" -x schedlat)
	tee_pid=$(pgrep -P "$pipe" -x tee)
	[ -n "$tool_pid" ] && [ -n "$tee_pid" ]
	TEST_PIDS+=("$tool_pid" "$tee_pid")
	wait_for "$truth" '"seq":2,' 15

	# 1. logrotate's copytruncate, with the writer held at a line's end
	# (as the tools are between intervals) once the collector has every
	# line: what is written between the copy and the truncation is lost
	# whatever reads the file, so the test keeps that window empty
	hold_writer "$tee_pid" "$tailed"
	n_rot=$(lines "$tailed")
	wait_lines "$OUT" "$n_rot"
	cp "$RS/aiscope.logrotate" "$D/logrotate.conf"
	subst "$D/logrotate.conf" '/var/log/aiscope/*.json' "$LOGDIR/*.json"
	logrotate -f -s "$D/logrotate.state" "$D/logrotate.conf"
	kill -CONT "$tee_pid"
	[ "$(lines "$tailed.1")" -eq "$n_rot" ]
	[ "$(lines "$tailed")" -lt "$n_rot" ]
	# records written after the rotation arrive: imfile read the
	# truncated file again from its start
	wait_lines "$OUT" $((n_rot + 1))

	# 2. the agent is stopped once it has sent every line, the tool writes
	# on, and the agent started again resumes at the position it saved: no
	# line twice, none missed. (Stopped with records in flight, it can
	# lose them: docs/fleet.md.)
	hold_writer "$tee_pid" "$tailed"
	wait_lines "$OUT" "$(lines "$truth")"
	stop_tool "$agent" TERM
	kill -CONT "$tee_pid"
	seq=$(last_seq "$truth")
	wait_for "$truth" "\"seq\":$((seq + 2)),"
	start_rsyslog agent
	agent=$RS_PID

	# 3. the collector stops; the agent queues what the tool writes
	seq=$(last_seq "$truth")
	if [ "$mode" = tcp ]; then
		hold_writer "$tee_pid" "$tailed"
		wait_lines "$OUT" "$(lines "$truth")"
	else
		wait_for "$OUT" "\"seq\":$((seq + 1)),"
	fi
	stop_tool "$coll" TERM
	[ "$mode" = tcp ] && kill -CONT "$tee_pid"
	n_down=$(lines "$OUT")
	n_queued=$(lines "$truth")
	seq=$(last_seq "$truth")
	wait_for "$truth" "\"seq\":$((seq + 2)),"
	[ "$(lines "$OUT")" -eq "$n_down" ]
	# the agent did try the collector meanwhile, and failed
	grep -q "127.0.0.1.*$([ "$mode" = tcp ] && echo "$TPORT" || echo "$RPORT")" "$D/agent/internal.log"
	n_queued=$(($(lines "$truth") - n_queued))
	start_rsyslog collector
	coll=$RS_PID

	# 4. the tool ends (-d 16s); the collector gets every record, once
	for ((i = 0; i < 300; i++)); do
		proc_gone "$pipe" && break
		sleep 0.1
	done
	proc_gone "$pipe" || { echo "schedlat -d 16s still runs 30 s later" >&2; return 1; }
	wait "$pipe"
	n_total=$(lines "$truth")
	wait_lines "$OUT" "$n_total" 30
	sleep 2
	echo "records: $n_total written, $(lines "$OUT") at the collector; $n_rot before the rotation;" \
		"$n_down at the collector when it stopped, $n_queued written while it was down"
	jq -r .type "$truth" | sort | uniq -c
	# on a failure: which records went missing or came twice, and what
	# rsyslog said
	echo "missing at the collector: $(comm -13 <(unhost "$OUT" | sort) <(sort "$truth") | wc -l)," \
		"extra: $(comm -23 <(unhost "$OUT" | sort) <(sort "$truth") | wc -l)"
	cat "$D/agent/internal.log" "$D/collector/internal.log" 2> /dev/null | grep -v 'origin software' || true
	[ "$(tail -1 "$truth" | jq -r .type)" = summary ]
	# logrotate's copy and the truncated file hold the truth between them
	cat "$tailed.1" "$tailed" | cmp - "$truth"
	if [ "$mode" = tcp ]; then
		# none lost; a record sent twice is one of the truth's, unchanged
		# (the truth's lines are distinct, so its set is all of it)
		[ "$(sort -u "$truth" | wc -l)" -eq "$n_total" ]
		[ "$(lines "$OUT")" -ge "$n_total" ]
		diff <(jq -c -S 'del(.host)' "$OUT" | sort -u) <(jq -c -S 'del(.host)' "$truth" | sort -u)
		diff <(unhost "$OUT" | sort -u) <(sort -u "$truth")
		echo "sent twice: $(($(lines "$OUT") - n_total))"
	else
		[ "$(lines "$OUT")" -eq "$n_total" ]
		# each record equal as JSON, and as bytes: the tool's "host" kept,
		# none added
		diff <(jq -c -S . "$OUT" | sort) <(jq -c -S . "$truth" | sort)
		diff <(unhost "$OUT" | sort) <(sort "$truth")
	fi
	# the tool's own host (its nodename), not rsyslog's in front of it
	[ "$(jq -r .host "$OUT" | sort -u)" = "$(uname -n)" ]
	[ "$(grep -c '"host":' "$OUT")" -eq "$(lines "$OUT")" ]
	[ "$(grep -c '"host":.*"host":' "$OUT")" -eq 0 ]
	if cmp -s <(unhost "$OUT") "$truth"; then echo "order: kept"; else echo "order: changed"; fi
}

@test "rsyslog over RELP ships every schedlat record unchanged, across copytruncate, an agent restart and a collector down mid-stream" {
	need_root
	command -v logrotate > /dev/null || skip "logrotate is not installed (make deps installs it)"
	ship_schedlat relp
}

@test "rsyslog over plain TCP (newline-delimited JSON) ships every schedlat record unchanged, at least once, with a collector down between records" {
	need_root
	command -v logrotate > /dev/null || skip "logrotate is not installed (make deps installs it)"
	ship_schedlat tcp
}

@test "rsyslog: a line that is not JSON arrives marked unparsed; integers above 2^63 and escapes arrive unchanged; a record with its own host goes out as written" {
	local f rec own
	ship_configs
	start_rsyslog collector
	start_rsyslog agent
	f=$LOGDIR/other.json
	rec='{"type":"sample","tool":"t","ts":"2026-01-01T00:00:00.000000000Z","big":18446744073709551615,"f":0.1,"s":"caf\u00e9 \"x\"\t\/","n":null,"a":[1,{"b":true}]}'
	# a record that names its host (every tool's, since the host key) goes
	# out as written: one "host", the tool's
	own='{"type":"sample","tool":"t","ts":"2026-01-01T00:00:00.000000000Z","schema":1,"host":"elsewhere","n":1}'
	printf 'oops: not json\n%s\n%s\n' "$rec" "$own" >> "$f"
	wait_lines "$OUT" 3
	cat "$OUT"
	[ "$(lines "$OUT")" -eq 3 ]
	[ "$(sed -n 3p "$OUT")" = "$own" ]
	jq -e --arg h "$HOST" --arg f "$f" \
		'. == {host: $h, type: "unparsed", file: $f, line: "oops: not json"}' < <(sed -n 1p "$OUT")
	[ "$(unhost "$OUT" | sed -n 2p)" = "$rec" ]
}
