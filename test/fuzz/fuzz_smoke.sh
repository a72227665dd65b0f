#!/bin/sh
# fuzz_smoke.sh FUZZER SEEDGEN SECONDS [MAX_LEN [DICT [LIBFUZZER-FLAGS...]]] —
# `make test`'s short fuzzing run of one libFuzzer target: generate the
# seeds, run the target for SECONDS from them in a scratch directory, print
# one TAP line named after the target with the edges it covered. A crashing
# input is kept next to FUZZER as crash-* (reproduce: FUZZER crash-...).
set -u
fuzzer=${1:?usage: fuzz_smoke.sh FUZZER SEEDGEN SECONDS [MAX_LEN [DICT [FLAGS...]]]}
seeds=${2:?}
secs=${3:-20}
max_len=${4:-80000}
dict=${5:-}
shift $(($# < 5 ? $# : 5))
name=$(basename "$fuzzer")
work=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/corpus" "$work/art"

echo "1..1"
if ! "$seeds" "$work/corpus" >"$work/log" 2>&1; then
	echo "not ok 1 - $name: generating the seeds failed"
	sed 's/^/# /' "$work/log"
	exit 1
fi
# Inputs that once crashed a tool (test/fuzz/regress/NAME/) run first.
regress=$(dirname "$0")/regress/$name
[ ! -d "$regress" ] || cp "$regress"/* "$work/corpus/" 2>/dev/null
"$fuzzer" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
	${dict:+-dict="$dict"} -print_final_stats=1 "$@" \
	-artifact_prefix="$work/art/" "$work/corpus" >"$work/log" 2>&1
rc=$?
runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/log" | tail -n 1)
edges=$(sed -n 's/.*Loaded 1 modules *(\([0-9]*\) inline 8-bit counters).*/\1/p' "$work/log" | head -n 1)
cov=$(sed -n 's/^#[0-9].* cov: \([0-9]*\) .*/\1/p' "$work/log" | tail -n 1)
if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
	echo "ok 1 - $name $secs s, $runs execs, no crash; cov: ${cov:-?} of ${edges:-?} edges"
	exit 0
fi
echo "not ok 1 - $name: the fuzzer exited with status $rc"
tail -n 40 "$work/log" | sed 's/^/# /'
for a in "$work"/art/*; do
	[ -e "$a" ] || continue
	cp "$a" "$(dirname "$fuzzer")/" && echo "# kept $(dirname "$fuzzer")/$(basename "$a")"
done
exit 1
