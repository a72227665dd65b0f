#!/bin/sh
# bareperf bench --check (tools/util/bench_check.c): the snippet assembled
# and nanoBench's -config and -msr_config files parsed and laid out in
# runs as the run sends them (4 to a run, TakenAlone alone, no counter
# twice), with no machine booted (--kernel names none). Prints TAP.
. "$(dirname "$0")/bench_common.sh"
BP="$B/bareperf bench --kernel /nonexistent --check"

cat >"$T/ev.cfg" <<'EOF2'
# every field of a -config line
C2.01 UOPS_RETIRED.ALL
C2.01.CMSK=1.INV.EDG UOPS_STALLS
3C.00.AnyT CYCLES_ANY
A4.04.CTR=0 SLOTS_ON_0
00.06.CTR=37 FIXED_5
C6.01.TakenAlone ALONE
B7.01.MSR_RSP0=0x10001.MSR_RSP1=0x2.TakenAlone OCR
CD.01.MSR_3F6H=0x10.MSR_PF=0x11.CTR=1 LATENCY
C2.1G REFUSED
C0.00 INSTRUCTIONS
1A0.01 AMD_HI
EOF2
printf 'msr_0xE01=0x20000000.msr_700=0x408F34 msr_706 LLC_LOOKUP\nmsr_611 PKG\n' >"$T/msr.cfg"
$BP -asm "add rax, rbx" -e tsc -config "$T/ev.cfg" -msr_config "$T/msr.cfg" >"$T/out" 2>"$T/err"
check "--check: every line parses but the bad one, exit 0, no boot" test $? = 0
check "--check: the runs' size is said" has "$T/out" "runs of at most 4 events"
check "--check: the snippet assembled" has "$T/out" "-asm             3 bytes"
check "--check: the bad line refused alone, with file and line" \
	has "$T/err" "ev.cfg:10: line refused: unit mask '1G' is not 1 or 2 hex digits"
check "--check: -e first, in run 1" grep -q '^    -e  1 *tsc' "$T/out"
check "--check: CMSK, INV, EDG encoded" grep -q '^     3  1 *r18401c2 *any *UOPS_STALLS$' "$T/out"
check "--check: AnyT is bit 21, sent" grep -q '^     4  1 *r20003c *any *CYCLES_ANY  \[AnyT\]$' "$T/out"
check "--check: CTR= a GP counter, the fifth event in run 2" \
	grep -q '^     5  2 *r4a4 *GP 0 *SLOTS_ON_0$' "$T/out"
check "--check: CTR=37 is fixed counter 5" grep -q '^     6  2 *r600 *fixed 5 *FIXED_5$' "$T/out"
check "--check: TakenAlone in a run of its own" grep -q '^     7  3 .*ALONE  \[TakenAlone\]$' "$T/out"
check "--check: the MSR fields with their MSRs, alone" \
	grep -q '^     8  4 .*OCR  \[TakenAlone\]  \[MSR 0x1a6=0x10001\]  \[MSR 0x1a7=0x2\]$' "$T/out"
check "--check: MSR_3F6H and MSR_PF" has "$T/out" "LATENCY  [MSR 0x3f6=0x10]  [MSR 0x3f7=0x11]"
check "--check: the events after TakenAlone's run share one" grep -q '^    12  5 *r1000001a0 *any *AMD_HI$' "$T/out"
check "--check: -msr_config's writes and read, in the same runs" \
	grep -q '^     1  5 *msr:0x706 *rdmsr *LLC_LOOKUP  \[wrmsr 0xe01=0x20000000\]  \[wrmsr 0x700=0x408f34\]$' "$T/out"
check "--check: the totals" has "$T/out" "13 events in 6 runs of the snippet, 1 line refused"

# Failures: a file with no good line, a snippet that does not assemble.
printf 'C2.1G A\nZZZZ.01 B\n' >"$T/bad.cfg"
$BP -asm nop -config "$T/bad.cfg" >"$T/out2" 2>"$T/err2"
check "--check: every line refused fails, exit 2" test $? = 2
check "--check: ... and says so" has "$T/err2" "bad.cfg: no line to measure (every one refused)"
$BP -asm "foo rax" -config "$T/ev.cfg" >"$T/out3" 2>"$T/err3"
check "--check: a snippet that does not assemble, exit 2" test $? = 2
printf 'nop\nadd rax, rbx\n' >"$T/batch.txt"
$BP --batch "$T/batch.txt" >"$T/out4" 2>&1
check "--check: --batch, each line assembled" has "$T/out4" "--batch $T/batch.txt:2 3 bytes"

# Without --check every line that parses is sent: the run goes on to the boot.
$B/bareperf bench -asm nop -config "$T/ev.cfg" --kernel /nonexistent >"$T/run" 2>&1
check "the run skips nothing that parses" test -z "$(grep 'skipped' "$T/run")"
check "the run goes on to the boot" has "$T/run" "/nonexistent: No such file"
$B/bareperf bench -asm nop -msr_config "$T/msr.cfg" --kernel /nonexistent >"$T/run2" 2>&1
check "the run takes -msr_config to the boot" has "$T/run2" "/nonexistent: No such file"
echo "1..$n"
exit $fail
