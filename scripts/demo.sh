#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A short tour of the aiscope tools against workloads the demo starts itself.
#
#   scripts/demo.sh [--no-deps] [--no-build] [TOOL...]     (make demo)
#
# Installs missing packages (scripts/deps.sh), builds, then runs each tool
# (or only the TOOLs named) for a few seconds. Needs root; no terminal needed.
#
# Adding a tool: write scripts/demo/<tool>.sh defining demo_<tool>() (start a
# workload with start_bg, show commands with `show`); tools without one are
# skipped with a note.
set -euo pipefail


top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# the Makefile's order (schedlat first), then any demo file it does not name
mapfile -t DEMOS < <(cd scripts/demo && ls *.sh | sed 's/\.sh$//' |
	awk 'BEGIN { n = split("schedlat socketsnoop ipcsnoop cachestat oomwatch gpulaunch nclstat rdmasnoop numaplace topograph", o, " "); for (i = 1; i <= n; i++) r[o[i]] = i }
	     { print (($0 in r) ? r[$0] : 100) " " $0 }' | sort -n | cut -d" " -f2)
B=build			# relative, so that the commands shown read well

deps=1 build=1 only=()
for a in "$@"; do
	case $a in
	--no-deps) deps=0 ;;
	--no-build) build=0 ;;
	-h|--help) sed -n '3,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "demo.sh: unknown option '$a'" >&2; exit 2 ;;
	*) only+=("$a") ;;
	esac
done
if [ ${#only[@]} -gt 0 ]; then
	for t in "${only[@]}"; do
		[[ " ${DEMOS[*]} " == *" $t "* ]] ||
			{ echo "demo.sh: no demo for '$t' (have: ${DEMOS[*]})" >&2; exit 2; }
	done
	DEMOS=("${only[@]}")
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "demo.sh: the tools load BPF programs: run as root (make demo)" >&2
	exit 1
fi

bold='' off=''
if [ -t 1 ]; then bold=$'\e[1m' off=$'\e[0m'; fi

# header TEXT...: what the next step shows
header() { printf '\n%s==> %s%s\n' "$bold" "$*" "$off"; }
# show CMD...: print the command, then run it; stop the demo if it fails
show() {
	printf '$ %s\n' "$*"
	"$@" || die "'$*' failed (exit $?)"
}
# show_sh 'PIPELINE': the same for a shell pipeline (pipefail is on)
show_sh() {
	printf '$ %s\n' "$1"
	bash -o pipefail -c "$1" || die "'$1' failed (exit $?)"
}
die() { echo "demo.sh: $*" >&2; exit 1; }

# Workloads: started with start_bg, ended (TERM, then wait) by stop_bg at the
# end of each demo and on any exit.
tmp=$(mktemp -d)
bg_pids=()
stop_bg() {
	local p
	for p in "${bg_pids[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	bg_pids=()
}
trap 'stop_bg; rm -rf "$tmp"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start_bg NAME READY_REGEX CMD...: start CMD in the background with its
# stdout in $tmp/NAME.out and wait (up to 5 s) for a line matching READY_REGEX.
# Sets BG_PID.
start_bg() {
	local name=$1 ready=$2 i
	shift 2
	"$@" > "$tmp/$name.out" 2>&1 &
	BG_PID=$!
	bg_pids+=("$BG_PID")
	for ((i = 0; i < 50; i++)); do
		grep -Eq "$ready" "$tmp/$name.out" && return 0
		kill -0 "$BG_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$tmp/$name.out" >&2
	die "workload '$*' did not get ready"
}

# One file per tool: scripts/demo/<tool>.sh defines demo_<tool>().
for f in "$top"/scripts/demo/*.sh; do
	# shellcheck source=/dev/null
	. "$f"
done

# ---- main ----------------------------------------------------------------
if [ $deps -eq 1 ]; then
	header "Installing missing packages (scripts/deps.sh)"
	scripts/deps.sh || die "scripts/deps.sh failed"
fi
if [ $build -eq 1 ]; then
	header "Building (make)"
	make -C "$top" --no-print-directory -j"$(nproc 2>/dev/null || echo 2)" ||
		die "the build failed"
fi

for t in "${DEMOS[@]}"; do
	declare -F "demo_$t" >/dev/null || die "no demo_$t function"
	"demo_$t"
done
header "Done. Each tool has a man page (man/<tool>.8) and --help with examples."
