#!/bin/sh
# BENCH report_s_<N>, report_rss_mb_<N> (and perf_report_s_<N>,
# perf_report_rss_mb_<N>): how `bareperf report --stdio` and `perf report
# --stdio` grow with the work, the whole command's CPU time (user +
# system) and peak RSS, from the child's rusage (wait4, read by python3;
# CPU time, not wall-clock: the latter counts the time other processes
# hold the CPUs), on synthetic captures of 1M, 3M and 10M samples
# (build/bench/gen_capture, no call chains; perf reads the same samples
# converted to perf.data, with an empty HOME and -k, as vs_perf_bench.sh).
# Then report_growth_x and perf_report_growth_x: the time at the largest
# size over the time at the smallest, against the size ratio (10: linear).
# BENCH_QUICK=1: 100k, 300k and 1M samples.
#
# Usage: sh tools/bench/report_scale.sh [BUILD_DIR]
set -eu
B=${1:-build}
sizes="1000000 3000000 10000000"
[ "${BENCH_QUICK:-0}" != 1 ] || sizes="100000 300000 1000000"
D=$B/bench/scale
mkdir -p "$D/home"
perf=1
command -v perf > /dev/null 2>&1 || perf=0
cmp -s "$B/kernel.elf" "$D/kernel.elf" || { rm -f "$D"/cap-*; cp "$B/kernel.elf" "$D/kernel.elf"; }

label() { echo "$1" | awk '{ print ($1 >= 1e6) ? $1 / 1e6 "M" : $1 / 1e3 "k" }'; }
# timed OUT CMD...: "CPU-seconds peak-KiB" of CMD (stdout to OUT).
timed() {
	out=$1
	shift
	python3 tools/bench/cpu_time.py "$out" "$D/err" "$@" || {
		cat "$D/err" >&2
		exit 1
	}
}

first= last= pfirst= plast=
for n in $sizes; do
	l=$(label "$n")
	cap=$D/cap-$n.bpc
	if [ ! -s "$cap" ] || [ "$B/bench/gen_capture" -nt "$cap" ]; then
		"$B/bench/gen_capture" -n "$n" -k "$D/kernel.elf" -o "$cap"
	fi
	r=$(timed "$D/bp.txt" "$B/bareperf" report -i "$cap" -k "$D/kernel.elf" --stdio)
	echo "$r" | awk -v l="$l" '{ printf "BENCH report_s_%s %.3f s\nBENCH report_rss_mb_%s %.1f MB\n", l, $1, l, $2 / 1024 }'
	first=${first:-$r} last=$r
	[ "$perf" = 1 ] || continue
	if [ ! -s "$D/cap-$n.data" ] || [ "$B/bareperf" -nt "$D/cap-$n.data" ]; then
		"$B/bareperf" convert -i "$cap" -k "$D/kernel.elf" --to perf.data \
			--no-buildid-cache -o "$D/cap-$n.data" 2> "$D/convert.log"
	fi
	r=$(timed "$D/perf.txt" env "HOME=$D/home" perf report --stdio -i "$D/cap-$n.data" \
		-k "$D/kernel.elf")
	echo "$r" | awk -v l="$l" '{ printf "BENCH perf_report_s_%s %.3f s\nBENCH perf_report_rss_mb_%s %.1f MB\n", l, $1, l, $2 / 1024 }'
	pfirst=${pfirst:-$r} plast=$r
done
ratio=$(echo "$sizes" | awk '{ print $NF / $1 }')
echo "# report growth: ${ratio}x the samples; time and peak RSS, smallest to largest:" \
	"bareperf $first -> $last, perf ${pfirst:-(not installed)} -> ${plast:-}"
echo "$first $last" | awk '{ printf "BENCH report_growth_x %.1f x\n", $3 / ($1 > 0 ? $1 : 1e-6) }'
[ "$perf" = 0 ] ||
	echo "$pfirst $plast" | awk '{ printf "BENCH perf_report_growth_x %.1f x\n", $3 / ($1 > 0 ? $1 : 1e-6) }'
