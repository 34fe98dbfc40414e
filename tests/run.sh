#!/usr/bin/env bash
# Runs every test layer this machine can run and ends with the line
#   N passed, N failed, N skipped
# Exits non-zero when anything failed. Usage: tests/run.sh [BUILD_DIR]
# Layers: C unit tests (TAP), bats files (contract and end-to-end), and,
# with AISCOPE_TEST_VM=1, the VM matrix.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
export AISCOPE_BUILD=${1:-$top/build}
case $AISCOPE_BUILD in /*) ;; *) AISCOPE_BUILD=$top/$AISCOPE_BUILD ;; esac
cd "$top" || exit 1

passed=0 failed=0 skipped=0
log=$(mktemp)
trap 'rm -f "$log"' EXIT

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

# run_suite LABEL CMD...: counts CMD's TAP lines; a suite that exits
# non-zero without a failed test line (it crashed, or its runner did)
# counts as one failure
run_suite() {
	local label=$1 rc
	shift
	"$@" > "$log" 2>&1
	rc=$?
	count_tap "$label" < "$log"
	if [ $rc -ne 0 ] && ! grep -q '^not ok' "$log"; then
		echo "[$label] not ok - $1 exited $rc"
		failed=$((failed + 1))
	fi
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

for f in tests/*.bats; do
	[ -e "$f" ] || continue
	run_suite "$(basename "$f" .bats)" bats --tap "$f"
done

if [ "${AISCOPE_TEST_VM:-0}" = 1 ] && [ -x scripts/vm/run-matrix.sh ]; then
	run_suite vm scripts/vm/run-matrix.sh
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
