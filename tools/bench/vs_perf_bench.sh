#!/bin/sh
# BENCH vs_perf_report_ratio: how much faster `bareperf report` reads a
# capture than the real `perf report --stdio` reads the same samples
# converted to perf.data (`bareperf convert --to perf.data`). Both whole
# commands are timed in the same run, alternately, best of 3 each, on a
# synthetic capture (build/bench/gen_capture, no call chains) against a
# private copy of kernel.elf. Neither tool has a warm cache the other lacks:
# each reads its own file, perf with an empty HOME (no ~/.debug) and the
# kernel image given with -k.
# Goals: >= 10x without call chains, >= 12x with them. Absolute times go to stderr.
#
# Usage: sh tools/bench/vs_perf_bench.sh [BUILD_DIR]   (BENCH_VS_PERF_SAMPLES=N;
# BENCH_QUICK=1: 300000 samples, one run each)
set -eu
B=${1:-build}
reps="1 2 3"
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	N=${BENCH_VS_PERF_SAMPLES:-300000} reps=1
else
	N=${BENCH_VS_PERF_SAMPLES:-3000000}
fi
D=$B/bench/vs_perf
if ! command -v perf > /dev/null 2>&1; then
	echo "# vs_perf_report_ratio: skipped: perf is not installed (Debian linux-perf)" >&2
	exit 0
fi
mkdir -p "$D/home"
if ! cmp -s "$B/kernel.elf" "$D/kernel.elf" || [ ! -s "$D/cap-$N.bpc" ] ||
   [ "$B/bench/gen_capture" -nt "$D/cap-$N.bpc" ]; then
	rm -f "$D"/cap-*
	cp "$B/kernel.elf" "$D/kernel.elf"
	"$B/bench/gen_capture" -n "$N" -k "$D/kernel.elf" -o "$D/cap-$N.bpc"
fi
if [ ! -s "$D/cap-$N.data" ] || [ "$B/bareperf" -nt "$D/cap-$N.data" ]; then
	"$B/bareperf" convert -i "$D/cap-$N.bpc" -k "$D/kernel.elf" --to perf.data \
		--no-buildid-cache -o "$D/cap-$N.data" 2> "$D/convert.log"
fi

now() { date +%s.%N; }
best_bp= best_perf=
for i in $reps; do
	t0=$(now)
	"$B/bareperf" report -i "$D/cap-$N.bpc" -k "$D/kernel.elf" --stdio > "$D/bp.txt"
	t1=$(now)
	HOME=$D/home perf report --stdio -i "$D/cap-$N.data" -k "$D/kernel.elf" > "$D/perf.txt" \
		2> "$D/perf.err"
	t2=$(now)
	best_bp=$(echo "$t0 $t1 ${best_bp:-0}" | awk '{ d = $2 - $1; print ($3 == 0 || d < $3) ? d : $3 }')
	best_perf=$(echo "$t1 $t2 ${best_perf:-0}" | awk '{ d = $2 - $1; print ($3 == 0 || d < $3) ? d : $3 }')
done
# The two must agree on what they measured: the same top function.
top_bp=$(awk '!/^#/ && NF == 3 && $1 ~ /%$/ { print $3; exit }' "$D/bp.txt")
top_perf=$(awk '$4 == "[k]" { print $5; exit }' "$D/perf.txt")
if [ -z "$top_bp" ] || [ "$top_bp" != "$top_perf" ]; then
	echo "vs_perf_report_ratio: the reports disagree: bareperf '$top_bp', perf '$top_perf'" >&2
	exit 1
fi
echo "# vs_perf_report_ratio: goal >= 10; $N samples: bareperf report ${best_bp}s, perf report ${best_perf}s" >&2
echo "$best_perf $best_bp" | awk '{ printf "BENCH vs_perf_report_ratio %.1f x\n", $1 / $2 }'

# BENCH vs_perf_report_g_ratio: the same with call chains, -g on both sides
# (perf: its default children + call graph; bareperf: children and callers
# trees), on a synthetic capture of BENCH_VS_PERF_G_SAMPLES samples with
# chains (gen_capture -g).
# The capture is made from $D/kernel.elf, which the first part keeps in
# step with $B/kernel.elf: it is remade when that copy is not the one it
# was made from (its checksum in capg-NG.key).
NG=${BENCH_VS_PERF_G_SAMPLES:-300000}
key=$(cksum < "$D/kernel.elf")
if [ "$(cat "$D/capg-$NG.key" 2> /dev/null)" != "$key" ] || [ ! -s "$D/capg-$NG.bpc" ] ||
   [ "$B/bench/gen_capture" -nt "$D/capg-$NG.bpc" ]; then
	rm -f "$D"/capg-*
	"$B/bench/gen_capture" -g -n "$NG" -k "$D/kernel.elf" -o "$D/capg-$NG.bpc"
	echo "$key" > "$D/capg-$NG.key"
fi
if [ ! -s "$D/capg-$NG.data" ] || [ "$B/bareperf" -nt "$D/capg-$NG.data" ]; then
	"$B/bareperf" convert -i "$D/capg-$NG.bpc" -k "$D/kernel.elf" --to perf.data \
		--no-buildid-cache -o "$D/capg-$NG.data" 2> "$D/convertg.log"
fi
best_bp= best_perf=
for i in $reps; do
	t0=$(now)
	"$B/bareperf" report -i "$D/capg-$NG.bpc" -k "$D/kernel.elf" --stdio -g > "$D/bpg.txt"
	t1=$(now)
	HOME=$D/home perf report --stdio -g -i "$D/capg-$NG.data" -k "$D/kernel.elf" \
		> "$D/perfg.txt" 2> "$D/perfg.err"
	t2=$(now)
	best_bp=$(echo "$t0 $t1 ${best_bp:-0}" | awk '{ d = $2 - $1; print ($3 == 0 || d < $3) ? d : $3 }')
	best_perf=$(echo "$t1 $t2 ${best_perf:-0}" | awk '{ d = $2 - $1; print ($3 == 0 || d < $3) ? d : $3 }')
done
# Both read every sample: the same total.
n_bp=$(awk '/^# event .* samples/ { print $4; exit }' "$D/bpg.txt")
if [ "$n_bp" != "$NG" ] || ! grep -q "^# Samples: " "$D/perfg.txt"; then
	echo "vs_perf_report_g_ratio: bareperf read '$n_bp' samples of $NG, or perf printed no report" >&2
	exit 1
fi
echo "# vs_perf_report_g_ratio: goal >= 12; $NG samples with chains: bareperf report -g ${best_bp}s, perf report -g ${best_perf}s" >&2
echo "$best_perf $best_bp" | awk '{ printf "BENCH vs_perf_report_g_ratio %.1f x\n", $1 / $2 }'
