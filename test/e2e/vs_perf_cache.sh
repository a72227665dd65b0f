#!/bin/sh
# vs_perf_cache.sh — tools/bench/vs_perf_bench.sh run twice with the kernel
# rebuilt in between (a kernel.elf with another build-id): both runs pass,
# the second on captures made from the new kernel. Small captures, one
# run each. Prints TAP.
#
# Usage: sh test/e2e/vs_perf_cache.sh [BUILD_DIR]   (from the repository root)

. "$(dirname "$0")/e2e_common.sh"	# TAP: ok, not_ok, check, finish
e2e_setup vs_perf_cache "${1:-build}"
if ! command -v perf > /dev/null 2>&1; then
	skip "vs_perf_bench.sh twice across a kernel rebuild" "perf is not installed"
	finish
fi
# A build directory of its own: the tools of $B, a kernel.elf to rebuild.
PB=$OUT/build
mkdir -p "$PB/bench"
ln -s "$(cd "$B" && pwd)/bareperf" "$PB/bareperf"
ln -s "$(cd "$B" && pwd)/bench/gen_capture" "$PB/bench/gen_capture"
cp "$K" "$PB/kernel.elf"
bench() {
	BENCH_QUICK=1 BENCH_VS_PERF_SAMPLES=20000 BENCH_VS_PERF_G_SAMPLES=20000 \
		sh tools/bench/vs_perf_bench.sh "$PB" > "$OUT/$1.log" 2>&1
}
bench first
check "vs_perf_bench.sh: both ratios" "$OUT/first.log" \
	sh -c "grep -q '^BENCH vs_perf_report_ratio' '$OUT/first.log' &&
	       grep -q '^BENCH vs_perf_report_g_ratio' '$OUT/first.log'"
# The rebuild: the same code, another build-id.
id=$(readelf -n "$PB/kernel.elf" | awk '/Build ID:/ { print $3; exit }')
python3 - "$PB/kernel.elf" "$id" <<'PY'
import sys
path, hexid = sys.argv[1], sys.argv[2]
b = bytearray(open(path, "rb").read())
old = bytes.fromhex(hexid)
at = b.find(old)
b[at:at + len(old)] = bytes(x ^ 0xff for x in old)
open(path, "wb").write(b)
PY
bench second
check "vs_perf_bench.sh again after a kernel rebuild: both ratios, no stale capture" \
	"$OUT/second.log" \
	sh -c "grep -q '^BENCH vs_perf_report_ratio' '$OUT/second.log' &&
	       grep -q '^BENCH vs_perf_report_g_ratio' '$OUT/second.log'"
finish
