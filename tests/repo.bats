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
