#!/bin/sh
# stream_seeds.sh MODE CAPTURES SEEDGEN DIR [FUZZER] — seeds for the
# stream fuzzers from real captures (qemu_captures.sh) and synthetic ones
# (SEEDGEN DIR writes fuzz_session's format: a flag byte, the stream):
#   session  fuzz_session's format: 0x01 (complete), the capture's stream
#   cmd      fuzz_cmd's: one seed per command line of FUZZER (which lists
#            them with BP_FUZZ_LIST=1) and capture: its index, 0x01, the stream
set -u
mode=${1:?usage: stream_seeds.sh session|cmd CAPTURES SEEDGEN DIR [FUZZER]}
caps=${2:?} gen=${3:?} dir=${4:?} fuzzer=${5:-}
base=$(mktemp -d "${TMPDIR:-/tmp}/stream_seeds.XXXXXX") || exit 1
trap 'rm -rf "$base"' EXIT INT TERM
"$gen" "$base" > /dev/null || { echo "stream_seeds: $gen failed" >&2; exit 1; }
n=0
for c in "$caps"/*.bpc; do
	[ -e "$c" ] || { echo "stream_seeds: no captures in $caps (see $caps.log)" >&2; cat "$caps.log" >&2; exit 1; }
	# The stream starts at wire_capture_header.header_size (u32 at offset 16).
	hs=$(od -An -tu4 -j16 -N4 "$c" | tr -d ' ')
	[ "${hs:-0}" -ge 512 ] || { echo "stream_seeds: $c: no capture header" >&2; exit 1; }
	{ printf '\001'; tail -c +$((hs + 1)) "$c"; } > "$base/capture-$(basename "$c" .bpc)"
	n=$((n + 1))
done
mkdir -p "$dir"
case $mode in
session)
	cp "$base"/* "$dir"/
	;;
cmd)
	ncmds=$(BP_FUZZ_LIST=1 "$fuzzer" 2>/dev/null | grep -c '^cmd ')
	[ "$ncmds" -gt 0 ] || { echo "stream_seeds: $fuzzer lists no command lines" >&2; exit 1; }
	i=0
	while [ "$i" -lt "$ncmds" ]; do
		for s in "$base"/*; do
			{ printf "\\$(printf %03o "$i")"; cat "$s"; } > "$dir/$i-$(basename "$s")"
		done
		i=$((i + 1))
	done
	;;
*)
	echo "stream_seeds: unknown mode $mode" >&2
	exit 2
	;;
esac
echo "stream_seeds: $(ls "$dir" | wc -l) seeds in $dir ($n real captures)"
