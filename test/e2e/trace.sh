#!/bin/sh
# trace.sh — end to end for the single-step instruction tracer:
# the kernel traces an app in QEMU (-icount), streams the AUX area over the
# UART, and the host decodes the capture against kernel.elf with capstone:
#   - the reconstructed instruction count equals the kernel's own count
#     (STOP END) and the TSC-measured count of the same code run untraced
#     in another boot (under icount the TSC counts instructions);
#   - per-function counts are what test/guest/test_trace.c's structure
#     dictates (loop 3n+2, fib(10) 1500 in 177 calls, ...);
#   - `script --range tt_fib` lists exactly fib's 1500 instructions;
#   - the Chrome JSON parses and holds one slice per call;
#   - an AUX area too small for the trace: TRUNCATED records, the report
#     shows the gaps, and reconstructed + untraced = the kernel's count;
#   - trace=pt: without Intel PT fails with the reason and the offer of
#     the single-step tracer.
# Prints TAP. Usage: sh test/e2e/trace.sh [BUILD_DIR]   (from the repository root)

B=${1:-build}
BP=$B/bareperf
T=$B/bptrace
OUT=$B/test/trace_e2e
. "$(dirname "$0")/e2e_common.sh"	# TAP: ok, not_ok, finish
# is NAME GOT WANT [LOG]
is() { if [ "$2" = "$3" ]; then ok "$1 ($2)"; else not_ok "$1: got '$2', want '$3'" "${4:-}"; fi; }

rm -rf "$OUT"
mkdir -p "$OUT"
if [ ! -x "$BP" ] || [ ! -x "$T" ] || [ ! -f "$B/kernel.elf" ]; then
	not_ok "$BP, $T and $B/kernel.elf are built (make)"
	finish
fi
cp "$B/kernel.elf" "$OUT/kernel.elf"
K=$OUT/kernel.elf
NW=1000		# tt_workload's n: a multiple of 4

# record NAME N AUX_PAGES [TRACE]
record() {
	"$BP" record --qemu --icount --kernel "$K" -q -e none \
		--append "trace=${4:-tt_begin-tt_end} aux_pages=$3" -o "$OUT/$1.bpc" \
		-- test_trace run n=$2 > "$OUT/$1.record.log" 2>&1 < /dev/null
}
field() {	# field REPORT REGEX-with-one-group
	sed -n "s/$2/\1/p" "$1" | head -n 1
}
fn_count() {	# fn_count REPORT FUNCTION: instructions column of the function table
	awk -v f="$2" '$NF == f && $2 ~ /%$/ { print $1; exit }' "$1"
}
fn_calls() {
	awk -v f="$2" '$NF == f && $2 ~ /%$/ { print $3; exit }' "$1"
}

# tt_workload is assembly: its count does not depend on the build, so the
# reference runs may boot $B/kernel.elf itself.
REF=$(python3 tools/bpqemu.py --build "$B" --icount --timeout 60 events=none app=test_trace \
	-- reference n=$NW 2>&1 < /dev/null | tee "$OUT/ref.log" |
	sed -n "s/^trace: reference tt_workload($NW): \([0-9]*\) instructions.*/\1/p")
if [ -n "$REF" ]; then ok "untraced tt_workload($NW): $REF instructions by the TSC (icount)"
else not_ok "untraced reference run" "$OUT/ref.log"; finish; fi

# ---- a full trace ----------------------------------------------------------------
if record full $NW 64; then ok "record tt_workload($NW) traced (trace=tt_begin-tt_end)"
else not_ok "record tt_workload($NW) traced" "$OUT/full.record.log"; finish; fi
"$T" report "$OUT/full.bpc" -k "$K" --check > "$OUT/full.report" 2>&1
rc=$?
is "report --check: exact" "$rc" 0 "$OUT/full.report"
is "reconstructed = TSC-measured count" "$(field "$OUT/full.report" '^# reconstructed: \([0-9]*\) instructions')" "$REF" "$OUT/full.report"
is "kernel's count (STOP END) = TSC-measured count" "$(field "$OUT/full.report" '^# kernel: \([0-9]*\) instructions.*')" "$REF" "$OUT/full.report"
is "tt_loop: 3n + 2" "$(fn_count "$OUT/full.report" tt_loop)" $((3 * NW + 2)) "$OUT/full.report"
is "tt_fib(10): 1500 instructions" "$(fn_count "$OUT/full.report" tt_fib)" 1500 "$OUT/full.report"
# The same through the bareperf command.
"$BP" report --aux -i "$OUT/full.bpc" -k "$K" > "$OUT/full.bp_report" 2>&1
if cmp -s "$OUT/full.report" "$OUT/full.bp_report"; then
	ok "bareperf report --aux prints what bptrace report does"
else
	not_ok "bareperf report --aux differs from bptrace report" "$OUT/full.bp_report"
fi
"$BP" convert -i "$OUT/full.bpc" -k "$K" --to chrome -o "$OUT/full.json" > "$OUT/full.convert" 2>&1
is "bareperf convert --to chrome: one trace slice per tt_fib call" \
	"$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(sum(1 for e in d["traceEvents"] if e.get("cat") == "trace" and e["name"] == "tt_fib"))' \
		"$OUT/full.json" 2>> "$OUT/full.convert")" 177 "$OUT/full.convert"
"$BP" script --aux --range tt_fib -i "$OUT/full.bpc" -k "$K" > "$OUT/full.fib_script" 2>&1
is "bareperf script --aux --range tt_fib: one line per executed instruction" \
	"$(grep -c ' tt_fib+0x' "$OUT/full.fib_script")" 1500 "$OUT/full.fib_script"
is "tt_fib(10): 177 calls" "$(fn_calls "$OUT/full.report" tt_fib)" 177 "$OUT/full.report"
is "tt_switch: 3n through the jump table" "$(fn_count "$OUT/full.report" tt_switch)" $((3 * NW)) "$OUT/full.report"
is "tt_case1: 3 per dispatch, n/4 dispatches" "$(fn_count "$OUT/full.report" tt_case1)" $((3 * NW / 4)) "$OUT/full.report"
is "tt_icall: 3n + 5" "$(fn_count "$OUT/full.report" tt_icall)" $((3 * NW + 5)) "$OUT/full.report"
is "tt_leaf: n indirect calls" "$(fn_calls "$OUT/full.report" tt_leaf)" $NW "$OUT/full.report"
is "tt_rep: 4 + 65 rep stosb steps" "$(fn_count "$OUT/full.report" tt_rep)" 69 "$OUT/full.report"
is "tt_workload itself: 5n + 14" "$(fn_count "$OUT/full.report" tt_workload)" $((5 * NW + 14)) "$OUT/full.report"

"$T" script "$OUT/full.bpc" -k "$K" --range tt_fib > "$OUT/fib.script" 2>&1
is "script --range tt_fib: one line per instruction" "$(grep -c 'tt_fib+0x' "$OUT/fib.script")" 1500 "$OUT/fib.script"
"$T" chrome "$OUT/full.bpc" -k "$K" > "$OUT/full.json" 2> "$OUT/chrome.err"
slices=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for e in d["traceEvents"] if e["name"]=="tt_fib" and e["ph"]=="X"))' "$OUT/full.json" 2>> "$OUT/chrome.err")
is "chrome JSON: one tt_fib slice per call" "$slices" 177 "$OUT/chrome.err"

# ---- an AUX area too small: TRUNCATED, gaps, and still every instruction accounted ----
NT=40000
REFT=$(python3 tools/bpqemu.py --build "$B" --icount --timeout 60 events=none app=test_trace \
	-- reference n=$NT 2>&1 < /dev/null | tee "$OUT/reft.log" |
	sed -n "s/^trace: reference tt_workload($NT): \([0-9]*\) instructions.*/\1/p")
if record small $NT 1 tt_switch-tt_case3; then ok "record tt_workload($NT) with a 1-page AUX area"
else not_ok "record with a 1-page AUX area" "$OUT/small.record.log"; finish; fi
"$T" report "$OUT/small.bpc" -k "$K" --check > "$OUT/small.report" 2>&1
rc=$?
is "report --check: every instruction accounted for" "$rc" 0 "$OUT/small.report"
trunc=$(field "$OUT/small.report" '^#   \([0-9]*\) AUX commits\{0,1\} TRUNCATED.*')
if [ -n "$trunc" ] && [ "$trunc" -gt 0 ]; then ok "$trunc TRUNCATED AUX commits reported"
else not_ok "TRUNCATED AUX commits reported" "$OUT/small.report"; fi
gaps=$(grep -c 'instructions (AUX area full)' "$OUT/small.report")
if [ "$gaps" -gt 0 ]; then ok "the report shows $gaps gaps (AUX area full), each with its size"
else not_ok "the report shows the gaps" "$OUT/small.report"; fi
rec=$(field "$OUT/small.report" '^# reconstructed: \([0-9]*\) instructions')
untr=$(field "$OUT/small.report" '^# gaps: [0-9]* (\([0-9]*\) instructions not traced.*')
kern=$(field "$OUT/small.report" '^# kernel: \([0-9]*\) instructions.*')
# The range tt_switch-tt_case3 holds tt_switch and the four cases: 3n + 9n/4.
is "reconstructed + untraced = kernel's count" "$((rec + untr))" "$kern" "$OUT/small.report"
is "kernel's count = the range's share of tt_workload($NT)" "$kern" $((3 * NT + 9 * NT / 4)) "$OUT/small.report"
"$T" script "$OUT/small.bpc" -k "$K" > "$OUT/small.script" 2>&1
if grep -q -- '-- gap: [0-9]* instructions not in the trace (AUX area full)' "$OUT/small.script"
then ok "script marks the gaps"; else not_ok "script marks the gaps" "$OUT/small.script"; fi
[ -n "$REFT" ] || not_ok "reference run n=$NT" "$OUT/reft.log"

# ---- Intel PT where there is none ----------------------------------------------
python3 tools/bpqemu.py --build "$B" --timeout 60 trace=pt:all events=none app=test_trace -- run \
	> "$OUT/pt.log" 2>&1 < /dev/null
rc=$?
if [ $rc -eq 2 ] && grep -q "Intel PT is not available: .*single-step tracer works on any x86-64 CPU: trace=all" "$OUT/pt.log"
then ok "trace=pt:all without Intel PT: refused with the reason and the single-step offer"
else not_ok "trace=pt:all without Intel PT (exit $rc)" "$OUT/pt.log"; fi

finish
