#!/usr/bin/env bash
# scripts/bench/uprobe-attach.sh: the time to attach and detach 100 uprobes,
# as 100 single uprobes and as one uprobe_multi link (the two ways
# lib/uprobe attaches gpulaunch's and nclstat's probes, chosen by
# feat_uprobe_multi), beside bpftrace attaching the same 100 functions.
#
# Target: a library the script builds with 100 functions aiscope_bench_f0..f99. Each
# round calls the 100 functions once with the probes attached and checks
# that 100 hits were counted (bpftrace: its @hits map must say 100).
# Writes the uprobe-attach section of docs/PERFORMANCE.md. As root, after
# `make`:
#
#   scripts/bench/uprobe-attach.sh
#
# Environment: N (probes, default 100), ROUNDS (default 11), REPS (bpftrace
# runs, default 5), OUT (default docs/PERFORMANCE.md), BUILD (default
# build), BPFTRACE (default bpftrace).
set -u -o pipefail

# shellcheck source=scripts/bench/lib.sh
. "$(dirname "$0")/lib.sh"

N=${N:-100}
ROUNDS=${ROUNDS:-11}
REPS=${REPS:-5}
BUILD=${BUILD:-$BENCH_ROOT/build}

bench_init
cd "$BENCH_ROOT" || exit 1
bench_libbpf
need bpftool bpftool

# the target library and a caller for bpftrace's runs
t=$BENCH_TMP
{
	for ((i = 0; i < N; i++)); do
		printf 'int __attribute__((noinline)) aiscope_bench_f%d(int x) { return x + %d; }\n' "$i" "$i"
	done
} >"$t/funcs.c"
cc -O1 -shared -fPIC -o "$t/libfuncs.so" "$t/funcs.c" || bench_die "building the target library"
cat >"$t/caller.c" <<EOF
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	void *dl = dlopen(argv[1], RTLD_NOW);
	char name[32];
	int i, sum = 0;

	if (!dl)
		return 1;
	for (i = 0; i < $N; i++) {
		snprintf(name, sizeof(name), "aiscope_bench_f%d", i);
		sum += ((int (*)(int))dlsym(dl, name))(i);
	}
	return sum == 0;
}
EOF
cc -O1 -o "$t/caller" "$t/caller.c" -ldl || bench_die "building the caller"

# the bench program: BPF object, skeleton, libbpf static
clang -g -O2 -target bpf -D__TARGET_ARCH_$arch -Ibpf/vmlinux/$arch -I"$libbpf/include" \
	-c scripts/bench/uprobe-attach.bpf.c -o "$t/uprobe-attach.bpf.o" &&
	bpftool gen skeleton "$t/uprobe-attach.bpf.o" name uprobe_attach_bpf >"$t/uprobe-attach.skel.h" &&
	cc -O2 -I"$t" -I"$libbpf/include" scripts/bench/uprobe-attach.c "$libbpf/lib/libbpf.a" \
		-lelf -lz -ldl -o "$t/uprobe-attach" || bench_die "building uprobe-attach"

bench_log "$N functions, $ROUNDS rounds each way"
"$t/uprobe-attach" "$t/libfuncs.so" "$N" "$ROUNDS" >"$t/ours" || bench_die "uprobe-attach failed"
cat "$t/ours" >&2

# bpftrace: exec to exit of a run that attaches the N probes, runs the
# caller (-c) and detaches, against the same with 1 probe: the difference
# is what N-1 more probes cost it
bt_run() {	# PATTERN EXPECTED -> ms, or "nan" when the count is not EXPECTED
	local t0 out
	t0=$EPOCHREALTIME
	out=$("$BPFTRACE" -e "uprobe:$t/libfuncs.so:$1 { @hits = count(); }" -c "$t/caller $t/libfuncs.so" 2>&1)
	local us
	us=$(us_since "$t0")
	if ! grep -qx "@hits: $2" <<<"$out"; then
		bench_log "bpftrace $1: expected @hits: $2, got: $(tr '\n' ' ' <<<"$out" | cut -c1-200)"
		echo nan
		return
	fi
	awk -v u="$us" 'BEGIN { printf "%.1f\n", u / 1000 }'
}
bt_all=nan bt_one=nan bt_ver=-
if command -v "$BPFTRACE" >/dev/null; then
	bt_ver=$(bpftrace_version)
	for ((r = 0; r < REPS; r++)); do bt_run 'aiscope_bench_f*' "$N"; done >"$t/bt_all"
	for ((r = 0; r < REPS; r++)); do bt_run aiscope_bench_f0 1; done >"$t/bt_one"
	bt_all=$(median <"$t/bt_all") bt_one=$(median <"$t/bt_one")
fi

read -r _ s_att s_det s_n < <(grep '^single ' "$t/ours")
read -r _ m_att m_det m_n < <(grep '^uprobe_multi ' "$t/ours")
body=$t/body
{
	echo "## uprobe attach: $N probes"
	echo
	echo "$BENCH_DATE, $BENCH_KERNEL, $BENCH_NPROC CPUs ($BENCH_CPU), load average $BENCH_LOAD."
	echo "$N functions of one library, each probed by a program that counts its hits; every"
	echo "round calls the $N functions once and checks that $N hits were counted. Medians of $ROUNDS rounds"
	echo "(libbpf $(sed -n 's/^#define LIBBPF_\(MAJOR\|MINOR\)_VERSION \([0-9]*\)/\2/p' \
		"$libbpf/include/bpf/libbpf_version.h" | paste -sd.)) as lib/uprobe attaches them:"
	echo
	md_header "way" "attach $N (ms)" "detach $N (ms)" "rounds"
	md_row "$N single uprobes (one perf event each)" "$s_att" "$s_det" "$s_n"
	md_row "one uprobe_multi link ($N offsets)" "$m_att" "$m_det" "$m_n"
	echo
	echo "bpftrace $bt_ver, exec to exit of \`bpftrace -e 'uprobe:LIB:PATTERN { @hits = count(); }' -c CALLER\`"
	echo "(attach, the caller's $N calls, detach), median of $REPS:"
	echo
	md_header "bpftrace probes" "exec to exit (ms)"
	md_row "1 (aiscope_bench_f0)" "$bt_one"
	md_row "$N (aiscope_bench_f*)" "$bt_all"
	echo
	echo "Detach is what a tool's exit waits for: each single uprobe's perf event removes a trace event"
	echo "after grace periods, one after the other; a uprobe_multi link goes at once (kernel 6.6+)."
	echo
	echo "Reproduce: \`scripts/bench/uprobe-attach.sh\` (as root, after \`make\`)."
} >"$body"
md_section "$OUT" uprobe-attach "$body"
cat "$body"
