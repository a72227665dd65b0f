#!/bin/sh
# fuzz_trace_smoke.sh FUZZER SEEDGEN SECONDS — `make test`'s short run of
# the instruction-trace decoder fuzzer (as fuzz_smoke.sh does for the wire
# decoder): seeds, SECONDS of libFuzzer, one TAP line. A crashing input is
# kept next to FUZZER as crash-*.
set -u
fuzzer=${1:?usage: fuzz_trace_smoke.sh FUZZER SEEDGEN SECONDS}
seeds=${2:?}
secs=${3:-20}
work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz_trace.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
mkdir -p "$work/corpus" "$work/art"

echo "1..1"
if ! "$seeds" "$work/corpus" >"$work/log" 2>&1; then
	echo "not ok 1 - fuzz_trace: generating the seeds failed"
	sed 's/^/# /' "$work/log"
	exit 1
fi
"$fuzzer" -max_total_time="$secs" -max_len=70000 -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$work/art/" "$work/corpus" >"$work/log" 2>&1
rc=$?
runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/log" | tail -n 1)
if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
	echo "ok 1 - fuzz_trace $secs s, $runs execs, no crash"
	exit 0
fi
echo "not ok 1 - fuzz_trace: the fuzzer exited with status $rc"
tail -n 40 "$work/log" | sed 's/^/# /'
for a in "$work"/art/*; do
	[ -e "$a" ] || continue
	cp "$a" "$(dirname "$fuzzer")/" && echo "# kept $(dirname "$fuzzer")/$(basename "$a")"
done
exit 1
