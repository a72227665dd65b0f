#!/bin/sh
# BENCH vs_perf_report_ratio: how much faster `bareperf report` reads a
# capture than the real `perf report --stdio` reads the same samples
# converted to perf.data (`bareperf convert --to perf.data`), on a
# synthetic capture (build/bench/gen_capture, no call chains) against a
# private copy of kernel.elf.
#
# What is timed: each whole command's CPU time, user + system, as the
# kernel accounts it to the child process and its threads (wait4's
# rusage, read by python3), not wall-clock time: on a shared machine the
# wall clock counts the time other processes hold the CPUs, and the two
# tools run for very different lengths of time, so the ratio would move
# with the load. Both commands run once untimed first (the page cache
# holds both inputs, the kernel.elf and the tools), then alternately,
# N times each; the figure is the ratio of the two fastest runs. Neither
# tool has a cache the other lacks: each reads its own file, perf with an
# empty HOME (no ~/.debug) and the kernel image given with -k.
# Goals: >= 10x without call chains, >= 12x with them. Absolute times go
# to stderr.
#
# Usage: sh tools/bench/vs_perf_bench.sh [BUILD_DIR]   (BENCH_VS_PERF_SAMPLES=N,
# BENCH_VS_PERF_G_SAMPLES=N; BENCH_VS_PERF_RUNS=N timed runs each, default 5;
# BENCH_QUICK=1: 300000 samples, 3 timed runs each)
set -eu
B=${1:-build}
if [ "${BENCH_QUICK:-0}" = 1 ]; then
	N=${BENCH_VS_PERF_SAMPLES:-300000} runs=${BENCH_VS_PERF_RUNS:-3}
else
	N=${BENCH_VS_PERF_SAMPLES:-3000000} runs=${BENCH_VS_PERF_RUNS:-5}
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

# cpu_time OUT ERR CMD...: run CMD with stdout to OUT and stderr to ERR;
# print the seconds of CPU time (user + system) it and its threads took.
# Fails if CMD fails.
cpu_time() {
	r=$(python3 tools/bench/cpu_time.py "$@") || return 1
	echo "${r% *}"
}
min() { echo "$1 $2" | awk '{ print ($2 == "" || $1 < $2) ? $1 : $2 }'; }

# time_both SUFFIX CAPTURE [-g]: bareperf report of $D/CAPTURE.bpc into
# $D/bpSUFFIX.txt and perf report of $D/CAPTURE.data into
# $D/perfSUFFIX.txt (.err), with -g if given: both once untimed, then
# $runs times each, alternately; the fastest CPU times in best_bp and
# best_perf.
time_both() {
	best_bp= best_perf=
	i=0
	while [ "$i" -le "$runs" ]; do
		t_bp=$(cpu_time "$D/bp$1.txt" "$D/bp$1.err" "$B/bareperf" report \
			-i "$D/$2.bpc" -k "$D/kernel.elf" --stdio ${3:-}) ||
			{ cat "$D/bp$1.err" >&2; exit 1; }
		t_perf=$(cpu_time "$D/perf$1.txt" "$D/perf$1.err" env "HOME=$D/home" perf report \
			--stdio ${3:-} -i "$D/$2.data" -k "$D/kernel.elf") ||
			{ cat "$D/perf$1.err" >&2; exit 1; }
		if [ "$i" -gt 0 ]; then		# run 0 warms the caches
			best_bp=$(min "$t_bp" "$best_bp")
			best_perf=$(min "$t_perf" "$best_perf")
		fi
		i=$((i + 1))
	done
}

time_both "" "cap-$N"
# The two must agree on what they measured: the same top function.
top_bp=$(awk '!/^#/ && NF == 3 && $1 ~ /%$/ { print $3; exit }' "$D/bp.txt")
top_perf=$(awk '$4 == "[k]" { print $5; exit }' "$D/perf.txt")
if [ -z "$top_bp" ] || [ "$top_bp" != "$top_perf" ]; then
	echo "vs_perf_report_ratio: the reports disagree: bareperf '$top_bp', perf '$top_perf'" >&2
	exit 1
fi
echo "# vs_perf_report_ratio: goal >= 10; $N samples, CPU time, best of $runs:" \
	"bareperf report ${best_bp}s, perf report ${best_perf}s" >&2
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
time_both g "capg-$NG" -g
# Both read every sample: the same total.
n_bp=$(awk '/^# event .* samples/ { print $4; exit }' "$D/bpg.txt")
if [ "$n_bp" != "$NG" ] || ! grep -q "^# Samples: " "$D/perfg.txt"; then
	echo "vs_perf_report_g_ratio: bareperf read '$n_bp' samples of $NG, or perf printed no report" >&2
	exit 1
fi
echo "# vs_perf_report_g_ratio: goal >= 12; $NG samples with chains, CPU time, best of $runs:" \
	"bareperf report -g ${best_bp}s, perf report -g ${best_perf}s" >&2
echo "$best_perf $best_bp" | awk '{ printf "BENCH vs_perf_report_g_ratio %.1f x\n", $1 / $2 }'
