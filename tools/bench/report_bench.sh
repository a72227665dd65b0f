#!/bin/sh
# BENCH report_msamples_per_s: samples per second through `bareperf report`
# on a synthetic 10-million-sample capture (build/bench/gen_capture), the
# whole command timed: load, decode, aggregate, symbolize, print. Best of 3
# (BENCH_QUICK=1: one million samples, one run).
set -eu
B=${1:-build}
reps="1 2 3"
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	N=${BENCH_SAMPLES:-1000000} reps=1
else
	N=${BENCH_SAMPLES:-10000000}
fi
CAP=$B/bench/capture-$N.bpc
if [ ! -f "$CAP" ] || [ "$B/bench/gen_capture" -nt "$CAP" ] || [ "$B/kernel.elf" -nt "$CAP" ]; then
	"$B/bench/gen_capture" -n "$N" -k "$B/kernel.elf" -o "$CAP"
fi
best=
for i in $reps; do
	t0=$(date +%s.%N)
	"$B/bareperf" report -i "$CAP" -k "$B/kernel.elf" --stdio > /dev/null
	t1=$(date +%s.%N)
	best=$(echo "$t0 $t1 ${best:-0}" | awk '{ d = $2 - $1; if ($3 == 0 || d < $3) print d; else print $3 }')
done
echo "$N $best" | awk '{ printf "BENCH report_msamples_per_s %.1f Msamples/s\n", $1 / $2 / 1e6 }'
