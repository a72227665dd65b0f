#!/bin/sh
# test/bench/pmi_model.sh BINARY — BENCH pmi_insn_per_sample_model.
#
# Runs BINARY (pmi_model) under callgrind, collecting only inside
# pmi_path() (the PMI handler's body for one counter, an IP+TIME+PERIOD
# SAMPLE into a ring) and not inside the register model's accessors
# (pmu_hw_*, pmu_lvtpc_*: each --toggle-collect flips collection on entry
# and back on exit), whose calls stand for the one instruction each
# models. Deterministic: callgrind counts instructions, not time.
set -e
bin=${1:?usage: pmi_model.sh path/to/pmi_model}
n=20000
[ "${BENCH_QUICK:-0}" != 1 ] || n=2000
out=$(mktemp)
trap 'rm -f "$out" "$out.txt"' EXIT

valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect=pmi_path \
	--toggle-collect='pmu_hw_*' --toggle-collect='pmu_lvtpc_*' "$bin" "$n" >"$out.txt" 2>&1 || {
	cat "$out.txt" >&2
	echo "pmi_model.sh: valgrind failed" >&2
	exit 1
}
ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$out")
echo "# pmi_insn_per_sample_model: goal <= 300; the overflow handler and its SAMPLE," \
	"Intel v4 model, one counter; $ir instructions in $n PMIs;" \
	"$(grep 'per PMI' "$out.txt")"
awk -v ir="$ir" -v n="$n" 'BEGIN { printf "BENCH pmi_insn_per_sample_model %.1f insn\n", ir / n }'
