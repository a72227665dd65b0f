#!/bin/sh
# fuzz_smoke.sh FUZZER SEEDGEN SECONDS [MAX_LEN] — `make test`'s short
# fuzzing run of one libFuzzer target: generate the seeds, run the target
# for SECONDS from them in a scratch directory, print one TAP line named
# after the target. A crashing input is kept next to FUZZER as crash-*
# (reproduce: FUZZER crash-...).
set -u
fuzzer=${1:?usage: fuzz_smoke.sh FUZZER SEEDGEN SECONDS [MAX_LEN]}
seeds=${2:?}
secs=${3:-20}
max_len=${4:-80000}
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
"$fuzzer" -max_total_time="$secs" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
	-artifact_prefix="$work/art/" "$work/corpus" >"$work/log" 2>&1
rc=$?
runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/log" | tail -n 1)
if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
	echo "ok 1 - $name $secs s, $runs execs, no crash"
	exit 0
fi
echo "not ok 1 - $name: the fuzzer exited with status $rc"
tail -n 40 "$work/log" | sed 's/^/# /'
for a in "$work"/art/*; do
	[ -e "$a" ] || continue
	cp "$a" "$(dirname "$fuzzer")/" && echo "# kept $(dirname "$fuzzer")/$(basename "$a")"
done
exit 1
