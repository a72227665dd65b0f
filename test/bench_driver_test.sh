#!/bin/sh
# bench_driver_test.sh — TAP checks of make bench's driver
# (tools/bench/run_all.sh) on stand-in benchmark commands: it must fail a
# command that exits non-zero, prints no BENCH line without a reason, or
# prints a malformed one, and accept well-formed lines and a stated skip.
# Usage: sh test/bench_driver_test.sh   (from the repository root)
set -u
d=$(mktemp -d "${TMPDIR:-/tmp}/bench_driver.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT INT TERM
n=0 failed=0
mk() { printf '#!/bin/sh\n%s\n' "$2" > "$d/$1"; chmod +x "$d/$1"; }
check() {	# check WANT-STATUS WHAT COMMAND...
	want=$1 what=$2
	shift 2
	sh tools/bench/run_all.sh "$@" > "$d/out" 2>&1
	rc=$?
	n=$((n + 1))
	if [ "$rc" -eq "$want" ]; then
		echo "ok $n - $what (status $rc)"
	else
		failed=$((failed + 1))
		echo "not ok $n - $what: status $rc, expected $want"
		sed 's/^/# /' "$d/out"
	fi
}
mk good 'echo "# a comment"; echo "BENCH a_rate 12.5 MB/s"; echo "BENCH b_ratio 3 x"'
mk sci 'echo "BENCH c_tiny 1.5e-03 s"'
mk skip 'echo "# thing: skipped: no such tool here" >&2'
mk silent 'echo "# nothing measured"'
mk fails 'echo "BENCH a_rate 1 MB/s"; exit 3'
mk badval 'echo "BENCH a_rate fast MB/s"'
mk nounit 'echo "BENCH a_rate 12"'
check 0 "well-formed BENCH lines pass" "$d/good" "$d/sci"
check 0 "a stated skip passes" "$d/good" "$d/skip"
check 1 "no BENCH line and no reason fails" "$d/good" "$d/silent"
check 1 "a non-zero exit fails even with BENCH lines" "$d/fails"
check 1 "a value that is not a number fails" "$d/badval"
check 1 "a line without a unit fails" "$d/nounit"
BENCH_QUICK=1 sh tools/bench/run_all.sh "$d/good" > "$d/out" 2>&1
n=$((n + 1))
if grep -q '^# make bench: quick mode' "$d/out" && grep -q '(quick)$' "$d/out"; then
	echo "ok $n - quick mode says its figures are not results"
else
	failed=$((failed + 1))
	echo "not ok $n - quick mode is not announced"
	sed 's/^/# /' "$d/out"
fi
echo "1..$n"
[ "$failed" -eq 0 ]
