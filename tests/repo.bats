#!/usr/bin/env bats
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Checks on the tree itself: what neither a compiler nor groff would notice.

TOP=$(cd "$(dirname "$BATS_TEST_FILENAME")/.." && pwd)

@test "no merge-conflict markers are left in the tree" {
	cd "$TOP"
	local hits
	if git rev-parse --git-dir > /dev/null 2>&1; then
		hits=$(git grep -nE '^(<<<<<<< |>>>>>>> |=======$)' -- . ':!*.svg' || true)
	else
		hits=$(grep -rnE '^(<<<<<<< |>>>>>>> |=======$)' Makefile README.md bpf lib tools \
			man tests scripts completions docs deploy 2>/dev/null | grep -v '\.svg:' || true)
	fi
	[ -z "$hits" ] || { echo "$hits"; false; }
}

@test "groff formats every man page without a warning" {
	cd "$TOP"
	command -v groff > /dev/null || skip "groff is not installed"
	local f out
	for f in man/*.[78]; do
		out=$(LC_ALL=C.UTF-8 groff -man -Tutf8 -ww -z "$f" 2>&1)
		[ -z "$out" ] || { echo "$f: $out"; false; }
	done
}

# bpf/uprobe_stack.bpf.h: a uprobe program without the guard may be given a
# per-CPU private stack, which preempted tasks then share. The guard is a
# tail call (helper 12); each uprobe program of the built objects holds one.
@test "every uprobe program holds the stack guard (a tail call)" {
	command -v llvm-objdump > /dev/null || skip "llvm-objdump is not installed"
	local o sec missing="" n=0
	for o in "${AISCOPE_BUILD:-$TOP/build}"/bpf/*.bpf.o; do
		for sec in uprobe uretprobe uprobe.s uprobe.multi uretprobe.multi; do
			out=$(llvm-objdump -d --no-show-raw-insn --section="$sec" "$o" 2> /dev/null |
				awk -v o="${o##*/}" '/^[0-9a-f]+ <[a-z_0-9]+>:$/ && $2 !~ /^<LBB/ {
					if (name != "") { print (t ? "ok " : "missing ") o ":" name }
					name = $2; t = 0 }
				/call 12$/ { t = 1 }
				END { if (name != "") print (t ? "ok " : "missing ") o ":" name }')
			n=$((n + $(echo "$out" | grep -c '^ok ' || true)))
			missing="$missing$(echo "$out" | grep '^missing ' || true)"
		done
	done
	echo "$n guarded"
	[ -z "$missing" ] || { echo "$missing"; false; }
	[ "$n" -ge 30 ]
}
