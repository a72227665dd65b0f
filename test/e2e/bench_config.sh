#!/bin/sh
# bareperf bench running nanoBench's -msr_config whole (tools/util/bench_events.c,
# apps/bench_msr.c) under QEMU -icount: each line's MSR writes made around
# its measurement and put back, its MSR read around each run like a
# counter, a line whose MSR faults refused alone, and more than 64 events
# measured in runs of 4, results in the file's order. QEMU's TCG has no
# PMU, so -config's events cannot be counted here (the model tests count
# CTR= and the MSR fields: test/host/test_pmu.c); and it reads most MSRs
# as 0 without a fault (IA32_TSC too: measured with QEMU 10.0), so the
# counter read is FS_BASE, which the snippet steps. Prints TAP.
. "$(dirname "$0")/bench_common.sh"

# The body steps FS_BASE (MSR 0xC0000100) by one when TSC_AUX (0xC0000103)
# is not 0: the line that writes TSC_AUX sees 1.00 per copy, the others 0.
step='mov ecx, 0xc0000103; rdmsr; test eax, eax; jz 1f; mov ecx, 0xc0000100; rdmsr; inc eax; wrmsr; 1:'
cat >"$T/msr.cfg" <<'EOF2'
# TSC_AUX written around the line's runs, FS_BASE read
msr_C0000103=1 msr_C0000100 AUX_SET
msr_C0000100 AUX_AS_IS
msr_C0000103=0 msr_C0000100 AUX_ZERO
msr_802 X2APIC_ID
msr_808=0x10 msr_C0000100 TPR_WRITE
msr_10 TSC_MSR
EOF2
$BP bench --icount -asm "$step" -e tsc -msr_config "$T/msr.cfg" >"$T/out" 2>"$T/err"
echo "# exit $?"; sed 's/^/# /' "$T/out" "$T/err"
check "-msr_config: exit 0, the results in the file's order" test "$(cat "$T/out")" = "TSC: 4.00
AUX_SET: 1.00
AUX_AS_IS: 0.00
AUX_ZERO: 0.00
TSC_MSR: 0.00"
check "-msr_config: an MSR read that faults refuses its line alone, with file and line" \
	has "$T/err" "msr.cfg:5: X2APIC_ID: not measured: a read of MSR 0x802 faults (#GP): this machine does not have it"
check "-msr_config: an MSR write that faults refuses its line alone" \
	has "$T/err" "msr.cfg:6: TPR_WRITE: not measured: a read (to put it back after the write) of MSR 0x808 faults (#GP)"
check "-msr_config: the writes put back (TSC_AUX 0 again: AUX_AS_IS steps nothing, no note)" \
	test -z "$(grep 'changed TSC_AUX\|changed FS_BASE' "$T/err")"

# More than 64 events: 70 lines, TSC_AUX 1 for the first 35 and 0 for the
# rest, one refused among them; 4 to a run (the kernel's most per
# request), results in order.
i=1
while [ $i -le 70 ]; do
	if [ $i = 50 ]; then echo "msr_802 REFUSED_$i"
	elif [ $i -le 35 ]; then echo "msr_C0000103=1 msr_C0000100 STEP_$i"
	else echo "msr_C0000103=0 msr_C0000100 STILL_$i"; fi
	i=$((i + 1))
done >"$T/many.cfg"
i=1
{ echo "TSC: 4.00"; while [ $i -le 70 ]; do
	if [ $i = 50 ]; then :; elif [ $i -le 35 ]; then echo "STEP_$i: 1.00"
	else echo "STILL_$i: 0.00"; fi
	i=$((i + 1))
done; } >"$T/many.want"
$BP bench --kernel /nonexistent --check -asm "$step" -e tsc -msr_config "$T/many.cfg" >"$T/many.check" 2>&1
check "--check: 71 events in 18 runs of 4" has "$T/many.check" "71 events in 18 runs of the snippet"
$BP bench --icount -asm "$step" -e tsc -msr_config "$T/many.cfg" >"$T/many.out" 2>"$T/many.err"
echo "# exit $?"; sed 's/^/# /' "$T/many.err"
check "71 events: every result, in the file's order" cmp -s "$T/many.out" "$T/many.want"
check "71 events: the refused one named alone" \
	has "$T/many.err" "many.cfg:50: REFUSED_50: not measured: a read of MSR 0x802 faults (#GP)"
check "71 events: no other refusal" test "$(grep -c 'not measured' "$T/many.err")" = 1
# -verbose: each event's own readings, also for two events of one spec
# in one run (the readings come in the events' order).
printf 'msr_C0000103=1 msr_C0000100 A\nmsr_C0000103=0 msr_C0000100 B\n' >"$T/two.cfg"
$BP bench --icount -asm "$step" -msr_config "$T/two.cfg" -verbose -n_measurements 2 \
	-unroll_count 10 >"$T/two.out" 2>"$T/two.err"
check "-verbose: A's readings are A's (10 and 20 steps)" \
	has "$T/two.err" "A: measurement 2 of 2: 10 (first version), 20 (second)"
check "-verbose: B's readings are B's (no steps)" \
	has "$T/two.err" "B: measurement 2 of 2: 0 (first version), 0 (second)"
echo "1..$n"
exit $fail
