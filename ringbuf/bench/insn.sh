#!/bin/sh
# ringbuf/bench/insn.sh BINARY — BENCH ring_insn_per_sample.
#
# Runs BINARY (ring_insn) under callgrind, collecting only inside
# bench_sample40() (begin + copy + end of one 40-byte SAMPLE), and divides
# the instructions by the number of calls. Deterministic: callgrind counts
# instructions, not time (BENCH_QUICK=1: 10000 calls, the same figure).
set -e
bin=${1:?usage: insn.sh path/to/ring_insn}
n=100000
[ "${BENCH_QUICK:-0}" != 1 ] || n=10000
out=$(mktemp)
trap 'rm -f "$out"' EXIT

valgrind --tool=callgrind --callgrind-out-file="$out" \
	--toggle-collect=bench_sample40 "$bin" "$n" >/dev/null 2>&1 || {
	echo "insn.sh: valgrind failed" >&2
	exit 1
}
ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$out")
echo "# ring_insn_per_sample: goal <= 45 instructions; $ir instructions in $n calls"
awk -v ir="$ir" -v n="$n" 'BEGIN { printf "BENCH ring_insn_per_sample %.1f insn\n", ir / n }'
