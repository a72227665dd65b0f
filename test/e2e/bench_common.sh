# bench_common.sh — what the bench end-to-end scripts share
# (test/e2e/bench_*.sh): the build directory from $1, a private temporary
# directory removed on exit, and TAP checks. Source it first; end with
#	echo "1..$n"; exit $fail
B=${1:-build}
BP=$B/bareperf
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
n=0
fail=0
check() {	# check DESCRIPTION COMMAND...: ok if the command succeeds
	d=$1
	shift
	n=$((n + 1))
	if "$@"; then echo "ok $n - $d"; else echo "not ok $n - $d"; fail=1; fi
}
skip() {	# skip DESCRIPTION REASON: counted, not passed
	n=$((n + 1))
	echo "ok $n - $1 # SKIP $2"
}
has() { grep -qF -- "$2" "$1"; }
