#!/usr/bin/env bash
# Runs every test layer this machine can run and ends with the line
#   N passed, N failed, N skipped
# Exits non-zero when anything failed. Usage: tests/run.sh [BUILD_DIR]
# (AISCOPE_SANITIZE=1 and AISCOPE_BATS: below)
# Layers: C unit tests (TAP), bats files (contract and end-to-end), and,
# with AISCOPE_TEST_VM=1, the VM matrix.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export AISCOPE_BUILD=${1:-$top/build}
case $AISCOPE_BUILD in /*) ;; *) AISCOPE_BUILD=$top/$AISCOPE_BUILD ;; esac
cd "$top" || exit 1

passed=0 failed=0 skipped=0
log=$(mktemp)
san_dir=
trap 'rm -f "$log"; [ -z "$san_dir" ] || rm -rf "$san_dir"' EXIT

# make test SANITIZE=1 (AISCOPE_SANITIZE=1): the ASan+UBSan build in
# build/sanitize. ASan and LeakSanitizer write each report to a file of its
# own (log_path, so a tool's stderr stays what the tests expect) and stop
# the program at the first one; a suite that leaves a report fails, with
# the report shown and kept in $AISCOPE_BUILD/sanitizer-reports/. Leaks
# are reported at exit (LSan needs ptrace of its own threads, which root
# and the tests' unprivileged runs both have). UBSan in GCC 12's combined
# runtime ignores log_path: its reports go to stderr and abort the program
# (-fno-sanitize-recover, abort_on_error), so the test that ran it fails.
if [ "${AISCOPE_SANITIZE:-0}" = 1 ]; then
	san_dir=$(mktemp -d /tmp/aiscope-sanitize.XXXXXX) || exit 1
	chmod 1777 "$san_dir"		# runs as nobody write there too
	export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:log_path=$san_dir/asan:${ASAN_OPTIONS:-}"
	export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
	mkdir -p "$AISCOPE_BUILD/sanitizer-reports"
fi

# san_check LABEL: a sanitizer report left by the suite just run fails it
san_check() {
	local f
	[ -n "$san_dir" ] || return 0
	for f in "$san_dir"/*; do
		[ -e "$f" ] || continue
		echo "[$1] not ok - sanitizer report ${f##*/}:"
		sed -n "1,40s/^/[$1] # /p" "$f"
		mv "$f" "$AISCOPE_BUILD/sanitizer-reports/$1.${f##*/}"
		failed=$((failed + 1))
	done
}

# count TAP lines of one suite, echoing them with a label
count_tap() {
	local label=$1 line
	while IFS= read -r line; do
		printf '[%s] %s\n' "$label" "$line"
		case $line in
		"not ok "*) failed=$((failed + 1)) ;;
		"ok "*"# skip"*|"ok "*"# SKIP"*) skipped=$((skipped + 1)) ;;
		"ok "*) passed=$((passed + 1)) ;;
		esac
	done
}

if [ "$(id -u)" -ne 0 ]; then
	echo "tests/run.sh: not root: the end-to-end tests will be skipped (run 'sudo make test')" >&2
fi

# run_suite LABEL CMD...: counts CMD's TAP lines as they come (a layer
# stopped from outside, as .ci/run's timeout does, has shown what ran); a
# suite that exits non-zero without a failed test line (it crashed, or its
# runner did) counts as one failure. Each suite ends with its seconds.
rc_file=$(mktemp)
trap 'rm -f "$log" "$rc_file"; [ -z "$san_dir" ] || rm -rf "$san_dir"' EXIT
run_suite() {
	local label=$1 rc t0=$SECONDS
	shift
	count_tap "$label" < <("$@" 2>&1 | tee "$log"; echo "${PIPESTATUS[0]}" > "$rc_file")
	wait $! 2> /dev/null	# the process substitution (bash 5.1)
	rc=$(cat "$rc_file")
	if [ "${rc:-1}" -ne 0 ] && ! grep -q '^not ok' "$log"; then
		echo "[$label] not ok - $1 exited ${rc:-with no status}"
		failed=$((failed + 1))
	fi
	echo "[$label] # $((SECONDS - t0)) s"
	san_check "$label"
}

# AISCOPE_TEST_VM=1: the VM matrix starts now, in the background: its
# first steps (fetching the kernels, building the two initramfs images: a
# minute or two, mostly waiting on the archive and gzip) overlap the native
# layers, and so does one VM at a time (VM_EARLY_JOBS: the native layers
# keep 0.8 of the two CPUs busy on average, one emulated guest 0.66 of one);
# the others boot two at a time once those are done (VM_GO), since two
# guests beside them would take the CPUs the native tests' timings assume.
# Its lines are counted after the native layers', as they come.
vm_dir= vm_pid=
if [ "${AISCOPE_TEST_VM:-0}" = 1 ] && [ -x scripts/vm/run-matrix.sh ]; then
	vm_dir=$(mktemp -d /tmp/aiscope-vm.XXXXXX) || exit 1
	(VM_GO=$vm_dir/go VM_GO_PID=$$ scripts/vm/run-matrix.sh > "$vm_dir/out" 2>&1
	 echo $? > "$vm_dir/rc") &
	vm_pid=$!
	trap 'rm -f "$log" "$rc_file"; [ -z "$san_dir" ] || rm -rf "$san_dir"
	      kill "$vm_pid" 2> /dev/null; rm -rf "$vm_dir"' EXIT
fi

# vm_matrix: lets the matrix boot its VMs and shows its output until it ends
vm_matrix() {
	touch "$vm_dir/go"
	tail -n +1 -s 1 --pid="$vm_pid" -f "$vm_dir/out"
	exit "$(cat "$vm_dir/rc" 2> /dev/null || echo 1)"
}

for t in "$AISCOPE_BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	run_suite "unit:$(basename "$t")" "$t"
done

# test fixtures fetched from package archives (never committed): the CUDA
# libraries gpulaunch's tests call; their tests skip when this fails
if [ -x scripts/fixtures.sh ]; then
	scripts/fixtures.sh "$AISCOPE_BUILD/fixtures" || echo "tests/run.sh: fixtures unavailable" >&2
fi

# AISCOPE_BATS="NAME[:REGEX] ...": only these tests/NAME.bats, each with
# only the tests whose names match REGEX (no spaces) when one is given (.ci/run's
# CI_SANITIZE_BATS passes one to its sanitize layer, which runs them all by default)
if [ -n "${AISCOPE_BATS:-}" ]; then
	for sel in $AISCOPE_BATS; do
		name=${sel%%:*}
		if [ ! -e "tests/$name.bats" ]; then
			echo "[$name] not ok - AISCOPE_BATS names no tests/$name.bats"
			failed=$((failed + 1))
		elif [ "$sel" = "$name" ]; then
			run_suite "$name" bats --tap -T "tests/$name.bats"
		else
			run_suite "$name" bats --tap -T -f "${sel#*:}" "tests/$name.bats"
		fi
	done
else
	for f in tests/*.bats; do
		[ -e "$f" ] || continue
		run_suite "$(basename "$f" .bats)" bats --tap -T "$f"
	done
fi

[ -z "$vm_pid" ] || run_suite vm vm_matrix

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
