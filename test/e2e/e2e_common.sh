# e2e_common.sh — what the shell end-to-end tests of the host tool share
# (test/e2e/perf_roundtrip.sh, profilers.sh; cli.sh and trace.sh use its
# TAP functions and define their own record): TAP output, the set-up of
# their output directory with a private copy of the kernel, and the
# recording of loopnest with call chains under QEMU -icount.
#
# Source it, then: e2e_setup NAME [BUILD_DIR]. Sets
#   B    the build directory          BP   build/bareperf
#   OUT  B/test/NAME, emptied, with OUT/home (a HOME of the test's own)
#   K    OUT/kernel.elf, absolute: a private copy, so the captures,
#        perf.data and symbols agree even if the kernel is rebuilt while
#        the test runs; it sits next to the captures, so convert finds it
#        without -k
# and stops with one failed check when bareperf or kernel.elf is not built.

N=0
FAILED=0

ok() { N=$((N + 1)); echo "ok $N - $1"; }
skip() { N=$((N + 1)); echo "ok $N - $1 # SKIP $2"; }
not_ok() {
	N=$((N + 1)); FAILED=$((FAILED + 1)); echo "not ok $N - $1"
	if [ -n "${2:-}" ] && [ -f "$2" ]; then tail -n 25 "$2" | sed 's/^/#   /'; fi
}
# check NAME LOG CMD...: ok if CMD succeeds, else not ok with LOG's tail
check() { name=$1 log=$2; shift 2; if "$@"; then ok "$name"; else not_ok "$name" "$log"; fi; }
finish() { echo "1..$N"; [ "$FAILED" -eq 0 ]; exit $?; }

e2e_setup() {
	B=${2:-build}
	BP=$B/bareperf
	OUT=$B/test/$1
	rm -rf "$OUT"
	mkdir -p "$OUT/home"
	if [ ! -x "$BP" ] || [ ! -f "$B/kernel.elf" ]; then
		not_ok "$BP and $B/kernel.elf are built (make)"
		finish
	fi
	cp "$B/kernel.elf" "$OUT/kernel.elf"
	K=$(cd "$OUT" && pwd)/kernel.elf
}

# record NAME EXTRA...: loopnest with call chains under QEMU -icount into
# OUT/NAME.bpc, quietly; what record said in OUT/NAME.record.log.
record() {
	rec=$1; shift
	"$BP" record --qemu --icount -g --kernel "$K" -q "$@" -o "$OUT/$rec.bpc" \
		-- loopnest > "$OUT/$rec.record.log" 2>&1
}
