#!/bin/sh
# program_perf.sh — end to end for a program of the user's own in the
# readers: record test/programs/hot_loops.c in QEMU (-icount, call chains),
# then
#   - bareperf report names its functions (hot_inner, called from main,
#     called from the kernel's program_main: hot_inner keeps no frame of
#     its own, so a frame-pointer walk skips hot_outer), its shared object (the program's name), its
#     source lines (--sort srcline: the loop's line), and script -F dso
#     says the same;
#   - without its object (moved away, an empty build-id cache) each
#     reader says once what it looked for, and the program's addresses
#     show as [hot_loops]+0x..., never as a kernel symbol;
#   - convert --to perf.data links its image beside perf.data and puts it
#     in the build-id cache; the real perf report names the functions
#     ([.], the image as shared object) with their callers, the kernel's
#     among them, perf report
#     --sort srcline the loop's line, perf annotate --stdio disassembles
#     hot_inner with its source, from the build-id cache alone too.
# Prints TAP.
#
# Usage: sh test/e2e/program_perf.sh [BUILD_DIR]   (from the repository root)

. "$(dirname "$0")/e2e_common.sh"
e2e_setup program_perf "${1:-}"
SRC=test/programs/hot_loops.c
LINE=$(grep -n 'hot_sink += i \* 3;' "$SRC" | cut -d: -f1)
PERF() { HOME=$OUT/home perf "$@"; }
RD() { HOME=$OUT/home "$BP" "$@"; }
mkdir -p "$OUT/empty"

check "record -- $SRC with call chains (QEMU -icount)" "$OUT/p.record.log" \
	sh -c 'HOME="$1"/home "$2" record --qemu --icount -g --kernel "$3" -q -o "$1/p.bpc" \
		-- "$4" > "$1/p.record.log" 2>&1' sh "$OUT" "$BP" "$K" "$SRC"
check "record kept the program's object beside the capture" "$OUT/p.record.log" \
	test -s "$OUT/p.hot_loops.o"
[ -s "$OUT/p.bpc" ] || finish

RD report -i "$OUT/p.bpc" --stdio -q > "$OUT/report.txt" 2> "$OUT/report.err"
check "report names hot_inner" "$OUT/report.txt" grep -q ' hot_inner$' "$OUT/report.txt"
check "report says nothing of a missing object" "$OUT/report.err" \
	sh -c '! grep -q "no object" "$1"' sh "$OUT/report.err"
RD report -i "$OUT/p.bpc" --stdio -q --sort dso,sym > "$OUT/dso.txt" 2>&1
check "report --sort dso,sym: hot_inner's shared object is hot_loops" "$OUT/dso.txt" \
	grep -Eq 'hot_loops +hot_inner$' "$OUT/dso.txt"
RD report -i "$OUT/p.bpc" --stdio -q --sort srcline > "$OUT/srcline.txt" 2>&1
check "report --sort srcline: hot_loops.c:$LINE" "$OUT/srcline.txt" \
	grep -q "hot_loops.c:$LINE " "$OUT/srcline.txt"
RD report -i "$OUT/p.bpc" --stdio -q -g > "$OUT/callers.txt" 2>&1
check "report -g: hot_inner from main from the kernel's program_main" "$OUT/callers.txt" \
	sh -c 'grep -A4 " hot_inner$" "$1" | grep -q " main$" &&
	       grep -A4 " hot_inner$" "$1" | grep -q program_main' sh "$OUT/callers.txt"
RD script -i "$OUT/p.bpc" -F ip,sym,dso > "$OUT/script.txt" 2>&1
check "script -F ip,sym,dso: hot_inner (hot_loops)" "$OUT/script.txt" \
	grep -q 'hot_inner (hot_loops)' "$OUT/script.txt"

mv "$OUT/p.hot_loops.o" "$OUT/away.o"
HOME=$OUT/empty "$BP" script -i "$OUT/p.bpc" -F ip,sym,dso > "$OUT/missing.txt" 2>&1
mv "$OUT/away.o" "$OUT/p.hot_loops.o"
check "without the object: said once, with what was looked for" "$OUT/missing.txt" \
	sh -c '[ "$(grep -c "no object of program hot_loops" "$1")" -eq 1 ] &&
	       grep -q "p.hot_loops.o" "$1"' sh "$OUT/missing.txt"
check "without the object: [hot_loops]+0x..., no hot_inner" "$OUT/missing.txt" \
	sh -c 'grep -q "\[hot_loops\]+0x" "$1" && ! grep -q hot_inner "$1"' sh "$OUT/missing.txt"

check "convert --to perf.data" "$OUT/convert.err" \
	sh -c 'HOME="$1"/home "$2" convert -i "$1/p.bpc" --to perf.data -o "$1/p.data" \
		2> "$1/convert.err"' sh "$OUT" "$BP"
check "convert linked the program's image" "$OUT/convert.err" test -s "$OUT/p.data.hot_loops.elf"
if ! command -v perf > /dev/null 2>&1; then
	skip "perf reads the program" "perf is not installed (Debian linux-perf)"
	finish
fi
PERF report -i "$OUT/p.data" --stdio --no-children > "$OUT/perf_report.txt" 2>&1
check "perf report: [.] hot_inner in p.data.hot_loops.elf" "$OUT/perf_report.txt" \
	grep -Eq 'p\.data\.hot_loops\.elf +\[\.\] hot_inner' "$OUT/perf_report.txt"
check "perf report -g: hot_inner from main from the kernel's program_main" \
	"$OUT/perf_report.txt" \
	sh -c 'grep -A6 "\[\.\] hot_inner" "$1" | grep -q " main$" &&
	       grep -A6 "\[\.\] hot_inner" "$1" | grep -q program_main' sh "$OUT/perf_report.txt"
PERF report -i "$OUT/p.data" --stdio --no-children --sort srcline > "$OUT/perf_srcline.txt" 2>&1
check "perf report --sort srcline: hot_loops.c:$LINE" "$OUT/perf_srcline.txt" \
	grep -q "hot_loops.c:$LINE\$" "$OUT/perf_srcline.txt"
PERF annotate -i "$OUT/p.data" --stdio hot_inner > "$OUT/annotate.txt" 2>&1
check "perf annotate hot_inner: its code and source" "$OUT/annotate.txt" \
	sh -c 'grep -q "<hot_inner>:" "$1" && grep -q "hot_sink += i \* 3;" "$1"' \
	sh "$OUT/annotate.txt"
mv "$OUT/p.data.hot_loops.elf" "$OUT/away.elf"
PERF annotate -i "$OUT/p.data" --stdio hot_inner > "$OUT/annotate_cache.txt" 2>&1
mv "$OUT/away.elf" "$OUT/p.data.hot_loops.elf"
check "perf annotate hot_inner from the build-id cache alone" "$OUT/annotate_cache.txt" \
	sh -c 'grep -q "<hot_inner>:" "$1" && grep -q "hot_sink += i \* 3;" "$1"' \
	sh "$OUT/annotate_cache.txt"
finish
