#!/usr/bin/env bats
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The front command (cmd/aiscope.c): "aiscope TOOL ARG..." executes the tool
# in place, so the tool's arguments, exit status and signals are the tool's
# own; list, help, --version; a name that is not a tool is one line and
# exit 2. The exec itself is checked against stand-in tools in a directory
# of the test's own (AISCOPE_LIBEXECDIR), the real tools where they run.

bats_require_minimum_version 1.5.0
load lib

TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)

teardown() {
	aiscope_teardown
}

# the Makefile's TOOLS
make_tools() {
	# shellcheck disable=SC2016 # make expands $(TOOLS)
	printf 'aiscope-print-tools:\n\t@echo $(TOOLS)\n' |
		make --no-print-directory -s -C "$TOP" -f Makefile -f - aiscope-print-tools
}

# stand_in NAME BODY: an executable NAME in $BATS_TEST_TMPDIR/libexec
stand_in() {
	mkdir -p "$BATS_TEST_TMPDIR/libexec"
	printf '#!/bin/bash\n%s\n' "$2" > "$BATS_TEST_TMPDIR/libexec/$1"
	chmod +x "$BATS_TEST_TMPDIR/libexec/$1"
}

@test "aiscope --version, list and help" {
	run --separate-stderr "$BIN/aiscope" --version
	[ "$status" -eq 0 ]
	[ "$output" = "aiscope $(make -s -C "$TOP" --no-print-directory -f Makefile -f - <<< $'v:\n\t@echo $(VERSION)' v)" ]
	run -0 "$BIN/aiscope" -V
	[ "$output" = "aiscope $("$BIN/schedlat" --version | sed 's/^schedlat \([^ ]*\) .*/\1/')" ]
	run --separate-stderr "$BIN/aiscope" list
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$(echo "$output" | paste -sd' ')" = "$(make_tools)" ]
	run --separate-stderr "$BIN/aiscope" help
	[ "$status" -eq 0 ]
	[[ "$output" == "Usage: aiscope TOOL"* ]]
	for t in $(make_tools); do
		printf '%s\n' "$output" | grep -qx "  $t"
	done
	# help TOOL is the tool's --help
	run --separate-stderr "$BIN/aiscope" help schedlat
	[ "$status" -eq 0 ]
	[ "$output" = "$(env -u ARGP_HELP_FMT "$BIN/schedlat" --help)" ]
}

@test "aiscope: no tool, an unknown tool, a path or an extra argument: one line on stderr, exit 2" {
	local w
	run --separate-stderr "$BIN/aiscope"
	[ "$status" -eq 2 ]
	[ -z "$output" ]
	[[ "$stderr" == "Usage: aiscope TOOL"* ]]
	for w in nosuch cachestat-bpfcc ../schedlat /bin/true "" sched; do
		run --separate-stderr "$BIN/aiscope" "$w" -j
		echo "$w: $status $stderr"
		[ "$status" -eq 2 ]
		[ -z "$output" ]
		[ "$stderr" = "aiscope: '$w' is not an aiscope tool (aiscope list shows them)" ]
	done
	run --separate-stderr "$BIN/aiscope" help nosuch
	[ "$status" -eq 2 ]
	[ "$stderr" = "aiscope: 'nosuch' is not an aiscope tool (aiscope list shows them)" ]
	run --separate-stderr "$BIN/aiscope" list extra
	[ "$status" -eq 2 ]
	[ "$(echo "$stderr" | wc -l)" -eq 1 ]
}

@test "aiscope TOOL executes the tool in place: its argv, exit status and signals pass through" {
	local d=$BATS_TEST_TMPDIR/libexec
	stand_in schedlat 'printf "%s\n" "$0" "$@" > "$OUTF"; echo "pid $$" >> "$OUTF"; exit "${CODE:-0}"'
	stand_in cachestat 'kill -TERM $$'
	# the arguments arrive as given, blanks and empty ones included
	run env AISCOPE_LIBEXECDIR="$d" OUTF="$BATS_TEST_TMPDIR/argv" CODE=42 "$BIN/aiscope" schedlat -j "a b" "" -- -x
	[ "$status" -eq 42 ]
	printf '%s\n' "$d/schedlat" -j "a b" "" -- -x > "$BATS_TEST_TMPDIR/want"
	head -n 6 "$BATS_TEST_TMPDIR/argv" | diff "$BATS_TEST_TMPDIR/want" -
	# one process: the tool has aiscope's PID (exec, not a child)
	bash -c 'echo "pid $$"; exec env AISCOPE_LIBEXECDIR="$1" OUTF="$2" "$3" schedlat' _ \
		"$d" "$BATS_TEST_TMPDIR/argv" "$BIN/aiscope" > "$BATS_TEST_TMPDIR/pid"
	[ "$(tail -n 1 "$BATS_TEST_TMPDIR/argv")" = "$(cat "$BATS_TEST_TMPDIR/pid")" ]
	# a tool killed by a signal: aiscope's caller sees that signal
	run env AISCOPE_LIBEXECDIR="$d" "$BIN/aiscope" cachestat
	[ "$status" -eq $((128 + 15)) ]
	# a known tool that is not installed there: 127, naming the path
	run -127 --separate-stderr env AISCOPE_LIBEXECDIR="$d" "$BIN/aiscope" nclstat
	[ "$stderr" = "aiscope: cannot run $d/nclstat: No such file or directory" ]
	# one that is there but not executable: 126
	chmod -x "$d/schedlat"
	run --separate-stderr env AISCOPE_LIBEXECDIR="$d" "$BIN/aiscope" schedlat
	[ "$status" -eq 126 ]
	[ "$stderr" = "aiscope: cannot run $d/schedlat: Permission denied" ]
}

@test "aiscope finds the tools in ../libexec/aiscope beside itself, without AISCOPE_LIBEXECDIR" {
	local d=$BATS_TEST_TMPDIR/root
	mkdir -p "$d/sbin" "$d/libexec/aiscope"
	cp "$BIN/aiscope" "$d/sbin/"
	cp "$BIN/schedlat" "$d/libexec/aiscope/"
	run -0 env -u AISCOPE_LIBEXECDIR "$d/sbin/aiscope" schedlat --version
	[ "$output" = "$("$BIN/schedlat" --version)" ]
	# through a symlink too: the link's target directory counts
	ln -s "$d/sbin/aiscope" "$BATS_TEST_TMPDIR/link"
	run -0 env -u AISCOPE_LIBEXECDIR "$BATS_TEST_TMPDIR/link" schedlat --version
	run -127 env -u AISCOPE_LIBEXECDIR "$d/sbin/aiscope" cachestat --version
}

@test "aiscope TOOL: the real tools' usage errors and exit codes are those of the tool run directly" {
	local t direct front
	for t in $(make_tools); do
		# argp names argv[0]: the tool's name, as aiscope passes it
		direct=$(exec -a "$t" "$BIN/$t" --no-such-option 2>&1) && false
		front=$("$BIN/aiscope" "$t" --no-such-option 2>&1) && false
		run "$BIN/aiscope" "$t" --no-such-option
		[ "$status" -eq 2 ]
		[ "$front" = "$direct" ]
	done
}

@test "aiscope schedlat: SIGINT reaches the tool, which ends with its summary (exit 0)" {
	need_root
	local pid
	"$BIN/aiscope" schedlat -j -i 1 > "$BATS_TEST_TMPDIR/s.json" 2> "$BATS_TEST_TMPDIR/s.err" &
	pid=$!
	TEST_PIDS+=("$pid")
	wait_for "$BATS_TEST_TMPDIR/s.json" "\"type\":\"sample\"" 30
	[ "$(readlink "/proc/$pid/exe")" = "$(readlink -f "$BIN/schedlat")" ]
	kill -INT "$pid"
	wait "$pid"
	tail -n 1 "$BATS_TEST_TMPDIR/s.json" | jq -e '.type == "summary" and .tool == "schedlat" and .exit_reason == "signal"'
}
