#!/bin/sh
# run_all.sh CMD... — make bench's driver: runs each benchmark command
# (BENCH_CMDS, one word each), shows its output, and checks it: the command
# must exit 0 and print at least one well-formed "BENCH <name> <value>
# <unit>" line on stdout (a number for the value), or say why it skipped
# ("skipped: <reason>", e.g. perf not installed). Any other outcome stops
# the run with status 1. With BENCH_QUICK=1 in the environment each
# command does less work (fewer repetitions, smaller inputs): the figures
# are then only a check that the benchmark still runs, not results.
set -u
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
quick=${BENCH_QUICK:-0}
[ "$quick" = 1 ] && echo "# make bench: quick mode (BENCH_QUICK=1): the figures are not results"
now() { date +%s.%N; }
t_all=$(now)
nlines=0 nskip=0
for c in "$@"; do
	name=$(basename "$c")
	t0=$(now)
	sh -c "$c" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	t=$(echo "$t0 $(now)" | awk '{ printf "%.1f", $2 - $1 }')
	cat "$tmp/out"
	cat "$tmp/err" >&2
	good=$(grep -cE '^BENCH [A-Za-z0-9_]+ -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)? [^ ]+$' "$tmp/out")
	bad=$(grep '^BENCH' "$tmp/out" |
	      grep -vE '^BENCH [A-Za-z0-9_]+ -?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)? [^ ]+$')
	if [ "$rc" -ne 0 ]; then
		echo "make bench: $name failed (exit status $rc) after $t s" >&2
		exit 1
	fi
	if [ -n "$bad" ]; then
		echo "make bench: $name printed a malformed BENCH line: $bad" >&2
		exit 1
	fi
	if [ "$good" -eq 0 ]; then
		if grep -q 'skipped: ' "$tmp/out" "$tmp/err"; then
			nskip=$((nskip + 1))
			echo "# $name: skipped ($t s)"
			continue
		fi
		echo "make bench: $name printed no BENCH line and no reason to skip" >&2
		exit 1
	fi
	nlines=$((nlines + good))
	echo "# $name: $good BENCH lines in $t s"
done
echo "# make bench: $# commands, $nlines BENCH lines, $nskip skipped," \
	"$(echo "$t_all $(now)" | awk '{ printf "%.0f", $2 - $1 }') s$([ "$quick" = 1 ] && echo ' (quick)')"
