#!/bin/sh
# trace_bench.sh — the single-step tracer's figures, as
# `BENCH <name> <value> <unit>` lines for make bench:
#   trace_bytes_per_insn       AUX bytes per traced instruction, compiled C
#                              (tt_cwork: loops, data-dependent branches)
#   trace_bytes_per_insn_mix   the same for tt_workload (calls, an indirect
#                              jump table, indirect calls, a recursion)
#   trace_tcg_slowdown         wall time traced / untraced under TCG (no
#                              icount: the TSC follows the host clock)
#   trace_decode_minsn_per_s   instructions the host reconstructs per second
#                              (bptrace, capstone, a release build)
# Usage: sh test/e2e/trace_bench.sh [BUILD_DIR]   (from the repository root;
# BENCH_QUICK=1: a quarter of the work in each run)
B=${1:-build}
OUT=$B/bench/trace
mkdir -p "$OUT"
fail() { echo "trace_bench: $*" >&2; exit 1; }
[ -x "$B/bareperf" ] && [ -x "$B/bptrace" ] && [ -f "$B/kernel.elf" ] || fail "make first"

run() {	# run LOG WORDS...: boot PVH, TCG without icount
	log=$1; shift
	python3 tools/bpqemu.py --build "$B" --timeout 300 "$@" 2>&1 < /dev/null |
		tr -d '\r' > "$OUT/$log"
	grep -q 'kernel exit code 0' "$OUT/$log" || fail "$* failed: see $OUT/$log"
}
ticks() { sed -n 's/^trace: tt_cwork([0-9]*) = [0-9-]* in \([0-9]*\) TSC ticks$/\1/p' "$OUT/$1"; }

# tt_cwork's time is linear in n: the untraced run does 100 times more
# rounds, so that it lasts long enough to time.
N=400
[ "${BENCH_QUICK:-0}" != 1 ] || N=100
run plain.log events=none app=test_trace -- cwork n=$((100 * N))
run traced.log trace=tt_cwork events=none app=test_trace -- cwork n=$N
t0=$(ticks plain.log) t1=$(ticks traced.log)
[ -n "$t0" ] && [ -n "$t1" ] || fail "no timing lines in $OUT/plain.log, $OUT/traced.log"
bpi=$(sed -n 's/^trace: cpu 0: .* (\([0-9.]*\) bytes\/instruction).*/\1/p' "$OUT/traced.log")
echo "BENCH trace_bytes_per_insn $bpi bytes"
echo "BENCH trace_tcg_slowdown $(awk -v a="$t1" -v b="$t0" 'BEGIN { printf "%.0f", 100 * a / b }') x"

run mix.log trace=tt_begin-tt_end events=none app=test_trace -- run n=4000
bpi=$(sed -n 's/^trace: cpu 0: .* (\([0-9.]*\) bytes\/instruction).*/\1/p' "$OUT/mix.log")
echo "BENCH trace_bytes_per_insn_mix $bpi bytes"

"$B/bareperf" record --qemu --kernel "$B/kernel.elf" -q -e none \
	--append "trace=tt_cwork aux_pages=256" -o "$OUT/cwork.bpc" -- test_trace cwork n=1000 \
	> "$OUT/record.log" 2>&1 < /dev/null || fail "record: see $OUT/record.log"
"$B/bptrace" bench "$OUT/cwork.bpc" -k "$B/kernel.elf" || fail "bptrace bench"
