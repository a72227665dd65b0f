#!/bin/sh
# qemu_captures.sh BUILD OUTDIR — real captures for the fuzzers' seeds:
# the build's kernel under QEMU (TCG, PVH), recorded by the build's
# bareperf, a few KB each: call chains, two CPUs with a small ring, a
# counting run, a memlat sweep (BENCH records), an instruction trace
# (AUX). Under -icount (--icount): virtual time, so a busy host changes
# neither the captures nor whether a CPU is late. Regenerated when the
# kernel or the tool changes (make); nothing is committed. Exit status 1,
# with the reason, if a run fails.
set -u
B=${1:?usage: qemu_captures.sh BUILD OUTDIR}
out=${2:?}
tmp=$out.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
# name|record options and app
runs='chains|-g -c 100000 -- loopnest
smp2|--smp 2 -c 20000 --ring-pages 2 -- loopnest
counts|--count task-clock,tsc -- loopnest
memlat|-c 1000000 -- bench_memlat quick=1
trace|-e none --append trace=tt_cwork -- test_trace cwork n=20'
echo "$runs" | while IFS='|' read -r name args; do
	# shellcheck disable=SC2086 # args are words
	if ! "$B/bareperf" record --qemu --icount -q --timeout 300 -k "$B/kernel.elf" \
		-o "$tmp/$name.bpc" $args > "$tmp/$name.log" 2>&1 < /dev/null; then
		echo "qemu_captures: record $args failed:" >&2
		tail -n 20 "$tmp/$name.log" >&2
		exit 1
	fi
	rm -f "$tmp/$name.kernel.elf" "$tmp/$name.log"
done || exit 1
rm -rf "$out"
mv "$tmp" "$out"
