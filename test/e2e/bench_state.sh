#!/bin/sh
# bareperf bench's saved system state (apps/bench_state.c) against hostile
# snippets, in one batch under QEMU -icount: each changes something a later
# snippet would run under, in ring 0; each is reported (the change named
# with both values and put back, or its fault, or the machine's silence)
# and the `add rax, rbx` after it must measure exactly 1 instruction.
# Prints TAP.
. "$(dirname "$0")/bench_common.sh"

# A breakpoint on a harness function the measurement calls every
# repetition; the TSS found from TR and the GDT, its IST1 (byte 0x24)
# moved by 8: the TSS is read-only to a snippet, so the store faults.
sym() { nm "$B/kernel.elf" | sed -n "s/^\([0-9a-f]*\) . $1\$/0x\1/p"; }
tsc=$(sym measure_tsc)
# Stray stores into the kernel's memory, each a #PF on the snippet's page
# tables, after which the kernel runs on unharmed: a harness variable the
# next request reads (the hash of the kernel's image it compares with: a
# change there would stop every later snippet as "stopped"), the IDT's #UD gate (a later ud2 would jump to nowhere), the boot CPU's
# struct percpu (its self pointer: this_cpu()), the return address of
# the generated function on the kernel stack it runs from (saved_rsp),
# and RSP pointed at kernel data: the push faults, the #PF's frame cannot
# be pushed there either, a #DF (its own stack) that is the snippet's too.
hash_ref=$(sym image_hash_ref)
cpus=$(sym cpus)
saved_rsp=$(sym saved_rsp)
tss='sgdt [r14]; xor eax, eax; str ax; mov rbx, [r14+2]; add rbx, rax; mov eax, [rbx+2]; and eax, 0xffffff; movzx ecx, BYTE PTR [rbx+7]; shl ecx, 24; or eax, ecx; mov ecx, [rbx+8]; shl rcx, 32; or rax, rcx'
add='add rax, rbx'
cat >"$T/hostile.txt" <<EOF2
mov rax, $tsc; mov dr0, rax; mov eax, 0x401; mov dr7, rax
$add
mov rax, -1; mov cr4, rax
$add
xor eax, eax; mov cr0, rax
$add
mov ecx, 0x277; xor eax, eax; xor edx, edx; wrmsr
$add
mov ecx, 0x1b; rdmsr; bts eax, 10; wrmsr
$add
mov DWORD PTR [r14], 0; ldmxcsr [r14]
$add
xor ecx, ecx; mov eax, 1; xor edx, edx; xsetbv
$add
mov ecx, 0xc0000080; rdmsr; btr eax, 11; wrmsr
$add
mov ecx, 0xc0000100; mov eax, 0x1234; xor edx, edx; wrmsr
$add
mov ecx, 0xc0000082; mov eax, 0x1234; xor edx, edx; wrmsr
$add
mov ecx, 0x2ff; mov eax, 0x806; xor edx, edx; wrmsr
$add
$tss; or QWORD PTR [rax+0x24], 8
$add
mov rax, $hash_ref; inc QWORD PTR [rax]
$add
sidt [r14]; mov rax, [r14+2]; mov QWORD PTR [rax+0x60], rbx
$add
ud2
$add
mov rax, $cpus; mov QWORD PTR [rax], rbx
$add
mov rax, $saved_rsp; mov rax, [rax]; mov QWORD PTR [rax+0x38], rbx
$add
mov rsp, $cpus; push rax
$add
jmp \$
$add
vpcmpeqd ymm1, ymm1, ymm1; vaddps ymm0, ymm1, ymm2
$add
mov ecx, 0x1b; rdmsr; btr eax, 11; wrmsr
$add
EOF2
$BP bench --icount --timeout 300 --batch "$T/hostile.txt" >"$T/out.csv" 2>"$T/out.err"
echo "# batch exit $?"; sed 's/^/# /' "$T/out.csv" "$T/out.err"
row() { sed -n "$1p" "$T/out.csv"; }
note() { grep -F "$1: note: the code changed " "$T/out.err" | sed 's/^.*: note: the code changed //'; }
ok1='"add rax, rbx","Instructions retired (TSC under -icount)",1.000,'
rows=$(($(wc -l <"$T/hostile.txt") + 1))
r=3
while [ $r -le $rows ]; do
	check "row $r, after the snippet in row $((r - 1)): add rax, rbx = 1.000" test "$(row $r)" = "$ok1"
	r=$((r + 2))
done

check "DR0 on measure_tsc, DR7 enabled: the #DB in the harness reported, DR0/6/7 put back" \
	grep -Eq '^"mov rax, 0x[0-9a-f]+; mov dr0, rax; mov eax, 0x401; mov dr7, rax",,,"fault: #DB debug outside the snippet, at 0x[0-9a-f]+ \(the snippet broke the harness\?\), error code 0; the code changed DR0 \(was 0, now 0x[0-9a-f]+\), DR6 \(was 0xffff0ff0, now 0xffff0ff1\), DR7 \(was 0x400, now 0x401\): put back"$' "$T/out.csv"
# QEMU's TCG raises no #GP here as a CPU does: CR4's reserved bits take an
# SVM #VMEXIT path even outside a guest (QEMU hangs), and CR0 with PE and
# PG clear leaves long mode; bench refuses both before sending them.
refused='refused before it was sent: the code writes '
check "mov cr4, -1 (no #GP under TCG): refused, not sent" \
	grep -Fq "\"mov rax, -1; mov cr4, rax\",,,\"${refused}CR4 = 0xffffffffffffffff, with bit 11 (UMIP)" "$T/out.csv"
check "mov cr0, 0 (no #GP under TCG): refused, not sent" \
	grep -Fq "\"xor eax, eax; mov cr0, rax\",,,\"${refused}CR0 = 0, PE and PG clear" "$T/out.csv"
check "PAT = 0: named, put back" \
	grep -Eq '^IA32_PAT \(was 0x[0-9a-f]+, now 0\): put back$' <<EOF2
$(note 'mov ecx, 0x277; xor eax, eax; xor edx, edx; wrmsr')
EOF2
check "x2APIC enable: qemu64 has no x2APIC, the #GP reported" \
	has "$T/out.csv" '"mov ecx, 0x1b; rdmsr; bts eax, 10; wrmsr",,,"fault: #GP general protection at offset 0xb of the snippet (copy 0), error code 0"'
check "MXCSR = 0: named against its default, put back" \
	test "$(note 'mov DWORD PTR [r14], 0; ldmxcsr [r14]')" = "MXCSR (was 0x1f80, now 0): put back"
if has "$T/out.csv" '"xor ecx, ecx; mov eax, 1; xor edx, edx; xsetbv",,,"fault: #UD'; then
	skip "xsetbv XCR0 = 1" "bench's QEMU CPU (qemu64) has no XSAVE: xsetbv is #UD, reported"
else
	check "xsetbv XCR0 = 1: named, put back" \
		grep -Eq '^XCR0 \(was 0x[0-9a-f]+, now 0x1\)' <<EOF2
$(note 'xor ecx, ecx; mov eax, 1; xor edx, edx; xsetbv')
EOF2
fi
efer=$(note 'mov ecx, 0xc0000080; rdmsr; btr eax, 11; wrmsr' | sed -n 's/^EFER (was \(0x[0-9a-f]*\), now \(0x[0-9a-f]*\)): put back$/\1 \2/p')
check "EFER.NXE cleared: measured, named with both values, put back" \
	test -n "$efer" -a "$(printf '%#x' $((${efer% *} & ~0x800)))" = "${efer#* }"
check "FS_BASE: named, put back" \
	test "$(note 'mov ecx, 0xc0000100; mov eax, 0x1234; xor edx, edx; wrmsr')" = "FS_BASE (was 0, now 0x1234): put back"
check "LSTAR: named, put back" \
	test "$(note 'mov ecx, 0xc0000082; mov eax, 0x1234; xor edx, edx; wrmsr')" = "LSTAR (was 0, now 0x1234): put back"
# MTRRdefType: QEMU's is 0 without firmware (and the code runs many times:
# a toggle would undo itself), so the write enables MTRRs, WB by default.
check "MTRRdefType = 0x806: named, put back" \
	grep -Eq '^IA32_MTRR_DEF_TYPE \(was (0x[0-9a-f]+|0), now 0x806\): put back$' <<EOF2
$(note 'mov ecx, 0x2ff; mov eax, 0x806; xor edx, edx; wrmsr')
EOF2
kdata='fault: #PF write to kernel memory \(the kernel.s data, \.bss\+0x[0-9a-f]+\)'
check "a TSS IST pointer: the store faults, the TSS is read-only to the snippet" \
	grep -Eq "^\"sgdt .*; or QWORD PTR \[rax\+0x24\], 8\",,,\"$kdata at offset 0x[0-9a-f]+ of the snippet \(copy 0\), address 0x[0-9a-f]+, error code 0x3\"\$" "$T/out.csv"
check "a harness variable the next request reads: the store faults, named" \
	grep -Eq "^\"mov rax, $hash_ref; inc QWORD PTR \[rax\]\",,,\"$kdata at offset 0x7 of the snippet \(copy 0\), address $hash_ref, error code 0x3\"\$" "$T/out.csv"
check "the IDT's #UD gate: the store faults, named" \
	grep -Eq "^\"sidt .*\",,,\"$kdata at offset 0x8 of the snippet \(copy 0\), address 0x[0-9a-f]+, error code 0x3\"\$" "$T/out.csv"
check "ud2 after it: the IDT's gate intact, #UD reported" \
	has "$T/out.csv" '"ud2",,,"fault: #UD invalid opcode at offset 0 of the snippet (copy 0), error code 0"'
check "the boot CPU's struct percpu: the store faults, named" \
	grep -Eq "^\"mov rax, $cpus; mov QWORD PTR \[rax\], rbx\",,,\"$kdata at offset 0x7 of the snippet \(copy 0\), address $cpus, error code 0x3\"\$" "$T/out.csv"
check "the kernel stack's return address: the store faults, named" \
	grep -Eq "^\"mov rax, $saved_rsp; .*\",,,\"$kdata at offset 0xa of the snippet \(copy 0\), address 0x[0-9a-f]+, error code 0x3\"\$" "$T/out.csv"
check "RSP at kernel data, a push: the #DF is the snippet's, reported" \
	grep -Eq "^\"mov rsp, $cpus; push rax\",,,\"fault: #DF double fault at offset 0x7 of the snippet \(copy 0\)" "$T/out.csv"
check "jmp \$ after it: the watchdog's NMI (IST1) stops it" \
	has "$T/out.csv" '"jmp $",,,"timeout: the code ran longer than 300 ms, stopped by the watchdog at offset 0 of the snippet (copy 0)"'
if has "$T/out.csv" '"vpcmpeqd ymm1, ymm1, ymm1; vaddps ymm0, ymm1, ymm2",,,"fault: #UD'; then
	skip "vaddps ymm0 without vzeroupper" "bench's QEMU CPU (qemu64) has no AVX: #UD, reported"
else
	check "vaddps ymm0 without vzeroupper: dirty upper halves named, cleared" \
		grep -Eq '^the upper halves of YMM registers .* \(was 0, now 0x3\): put back$' <<EOF2
$(note 'vpcmpeqd ymm1, ymm1, ymm1; vaddps ymm0, ymm1, ymm2')
EOF2
fi
check "the local APIC disabled: IA32_APIC_BASE named with both values, put back" \
	grep -Eq '^IA32_APIC_BASE \(was 0x[0-9a-f]+9[0-9a-f]{2}, now 0x[0-9a-f]+1[0-9a-f]{2}\)' <<EOF2
$(note 'mov ecx, 0x1b; rdmsr; btr eax, 11; wrmsr')
EOF2
echo "1..$n"
exit $fail
