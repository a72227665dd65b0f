#!/bin/sh
# bareperf bench end to end (tools/builtin-bench.c, apps/bench_code.c): under
# QEMU -icount the TSC counts instructions, so results are exact. One boot
# runs a batch mixing good snippets with a fault, an invalid opcode, a
# privileged #GP and an endless loop: each gets its error and the next
# snippet is measured right. Then loop and basic-mode values; nanoBench's
# option prefixes, NAME: value lines, -verbose's readings and batch lines
# of options, several experiments in one boot; and the errors caught
# before anything is sent. Prints TAP.
. "$(dirname "$0")/bench_common.sh"

# Snippets that take the machine down, in a boot of their own, in the
# background meanwhile: a write to the kernel's text (CR0.WP cleared
# first), a null IDT under the watchdog's NMI (a triple fault: QEMU exits),
# and CR4 = -1, which QEMU's TCG does not refuse with a #GP as a CPU does
# (QEMU hangs): bench refuses it before sending it. Each is reported, QEMU
# boots again after each that took it down, and the snippet after it is
# measured right; after the last one QEMU is only stopped.
text=$(nm "$B/kernel.elf" | sed -n 's/^\([0-9a-f]*\) . __text_start$/0x\1/p')
cat >"$T/kill.txt" <<EOF2
mov rax, cr0; btr rax, 16; mov cr0, rax; mov rbx, $text; inc BYTE PTR [rbx]
add rax, rbx
mov QWORD PTR [r14], 0; lidt [r14]; jmp \$
add rax, rbx
mov rax, -1; mov cr4, rax
add rax, rbx
mov rax, cr3; and rax, -4096; or QWORD PTR [rax], 0x200
add rax, rbx
mov QWORD PTR [r14], 0; lidt [r14]; jmp \$
EOF2
$BP bench --icount --timeout 300 --batch "$T/kill.txt" >"$T/kill.csv" 2>"$T/kill.err" &
kill_pid=$!
# The UEFI boot (OVMF, the loader, a private ESP), plain TCG: the TSC is
# not exact there, so a positive value and an exact error.
printf 'add rax, rbx\nud2\n' >"$T/uefi.txt"
$BP bench --uefi --build "$B" --kernel "$B/kernel.elf" --batch "$T/uefi.txt" >"$T/uefi.csv" \
	2>"$T/uefi.err" &
uefi_pid=$!
# OVMF under -icount boots in a minute or more: the wait covers it, and
# the TSC counts instructions there too.
$BP bench --uefi --icount --build "$B" --kernel "$B/kernel.elf" -asm "add rax, rbx" \
	>"$T/uefi_icount" 2>&1 &
uefi_icount_pid=$!

$BP bench --icount --timeout 300 -asm_init "mov r12, 5" --batch test/e2e/bench_code_batch.txt \
	>"$T/batch.csv" 2>"$T/batch.err"
echo "# batch exit $?"; sed 's/^/# /' "$T/batch.csv" "$T/batch.err"
row() { sed -n "$1p" "$T/batch.csv"; }
check "header" test "$(row 1)" = 'asm,event,value,error'
check "add rax, rbx = 1.000" test "$(row 2)" = '"add rax, rbx","Instructions retired (TSC under -icount)",1.000,'
check "two adds = 2.000" test "$(row 3)" = '"add rax, rbx; add rbx, rax","Instructions retired (TSC under -icount)",2.000,'
check "#PF named with its offset and address" has "$T/batch.csv" '"mov rax, [0]",,,"fault: #PF page fault at offset 0 of the snippet (copy 0), address 0'
check "#UD named" has "$T/batch.csv" '"ud2",,,"fault: #UD invalid opcode at offset 0 of the snippet'
check "privileged #GP at offset 4" has "$T/batch.csv" '"mov ax, 0xfff8; ltr ax",,,"fault: #GP general protection at offset 0x4 of the snippet (copy 0), error code 0xfff8"'
check "endless loop stopped by the watchdog" has "$T/batch.csv" '"jmp $",,,"timeout: the code ran longer than 300 ms, stopped by the watchdog'
check "-asm_init state seen by the body (1 + 2 * 5)" has "$T/batch.csv" '"mov rcx, r12; .l: dec rcx; jnz .l","Instructions retired (TSC under -icount)",11.000,'
check "measured right after the faults" test "$(row 9)" = '"add rax, rbx","Instructions retired (TSC under -icount)",1.000,'
# Changed system state: measured, named with both values, put back.
cr4=$(sed -n 's/^.*mov cr4, rax: note: the code changed CR4 (was \(0x[0-9a-f]*\), now \(0x[0-9a-f]*\)): put back$/\1 \2/p' "$T/batch.err")
check "a CR4 change: both values said (now = was | 4), put back" \
	test -n "$cr4" -a "$(printf '%#x' $((${cr4% *} | 4)))" = "${cr4#* }"
check "the CR4 snippet itself measured: 3 instructions" test "$(row 10)" = '"mov rax, cr4; or rax, 4; mov cr4, rax","Instructions retired (TSC under -icount)",3.000,'
efer=$(sed -n 's/^.*wrmsr: note: the code changed EFER (was \(0x[0-9a-f]*\), now \(0x[0-9a-f]*\)): put back$/\1 \2/p' "$T/batch.err")
check "an MSR (EFER.SCE set): both values said, put back" \
	test -n "$efer" -a "$(printf '%#x' $((${efer% *} | 1)))" = "${efer#* }"
check "an APIC LVT entry (LINT0): named, put back" \
	grep -Eq '0x10033: note: the code changed LVT LINT0 \(was 0x[0-9a-f]+, now 0x10033\): put back$' "$T/batch.err"
check "IDTR: the limit named with both values, put back" \
	has "$T/batch.err" "lidt [r14]: note: the code changed IDTR limit (was 0xfff, now 0x7ff): put back"
check "interrupts off (cli; jmp \$): the watchdog's NMI still stops it" \
	has "$T/batch.csv" '"cli; jmp $",,,"timeout: the code ran longer than 300 ms, stopped by the watchdog at offset 0x1 of the snippet'
check "measured right after all of them" test "$(row 15)" = '"add rax, rbx","Instructions retired (TSC under -icount)",1.000,'
# nanoBench's syntax: GNU as, PTR sizes, |n NOPs, local labels per copy.
check "mov RAX, QWORD PTR [R14] = 1.000" test "$(row 16)" = '"mov RAX, QWORD PTR [R14]","Instructions retired (TSC under -icount)",1.000,'
check "|15 is one NOP: 1.000" test "$(row 17)" = '"|15","Instructions retired (TSC under -icount)",1.000,'
check "test; jz 1f; 1: in every copy: 2.000" test "$(row 18)" = '"test RAX, RAX; jz 1f; 1:","Instructions retired (TSC under -icount)",2.000,'
check "lock xadd QWORD PTR [R14], RAX; |3 = 2.000" test "$(row 19)" = '"lock xadd QWORD PTR [R14], RAX; |3","Instructions retired (TSC under -icount)",2.000,'
check "18 snippets, 5 failed" has "$T/batch.err" "18 snippets, 5 refused or failed; "

# A table of 200 snippets in one boot, one row each.
i=0; while [ $i -lt 200 ]; do echo "add rax, $i; imul rbx, rcx"; i=$((i + 1)); done >"$T/b200"
$BP bench --icount -unroll_count 10 -n_measurements 3 -warm_up_count 1 --batch "$T/b200" >"$T/b200.csv" 2>"$T/b200.err"
check "200 snippets in one boot: 200 rows of 2.000" test "$(grep -c '",2.000,$' "$T/b200.csv")" = 200
sed 's/^/# /' "$T/b200.err"

$BP bench --icount -asm "add rax, rbx" -loop_count 100 -unroll_count 10 >"$T/loop" 2>/dev/null
check "-loop_count 100 -unroll_count 10: 1.00 per copy" test "$(cat "$T/loop")" = 'TSC: 1.00'
$BP bench --icount --nasm -asm "add rax, rbx; add qword [r14], rax" -basic_mode -no_normalization \
	-unroll_count 50 >"$T/basic" 2>/dev/null
check "--nasm -basic_mode -no_normalization: 100 for 50 copies of 2" test "$(cat "$T/basic")" = 'TSC: 100.00'

# nanoBench's command line: unique prefixes, its NAME: value lines on
# stdout (what the TSC counts under -icount said once, on stderr).
$BP bench --icount -l 2 -u 10 -asm "add RAX, RBX" >"$T/abbr" 2>"$T/abbr.err"
check "-l 2 -u 10 (nanoBench's prefixes): the NAME: value line exactly" \
	test "$(cat "$T/abbr")" = 'TSC: 1.00'
check "under --icount what the TSC counts is said once, on stderr" \
	test "$(cat "$T/abbr.err")" = "bareperf bench: TSC: QEMU's -icount makes the TSC count instructions: it is instructions retired"
$BP bench --icount -verbose -n_measurements 10 -u 10 -asm "add RAX, RBX" >"$T/verbose" 2>&1
check "-verbose -n_measurements 10: 10 readings, each a pair of the two versions" \
	test "$(grep -Ec '^bareperf bench: TSC: measurement ([1-9]|10) of 10: [0-9]+ \(first version\), [0-9]+ \(second\)$' "$T/verbose")" = 10
check "-verbose: the value line as without it" test "$(grep -c '^TSC: 1.00$' "$T/verbose")" = 1
# Different experiments, nanoBench's options on their lines, in one boot.
cat >"$T/exp.txt" <<'EOF2'
add rax, rbx
-asm_init "mov RCX, 7" -asm "dec RCX; 3*|add RAX, RBX|" -l 2 -unroll_count 20
-asm 'mov RAX, QWORD PTR [R14]' -u 5 -basic_mode -no_normalization
EOF2
$BP bench --icount --batch "$T/exp.txt" >"$T/exp.csv" 2>"$T/exp.err"
echo "# experiments exit $?"; sed 's/^/# /' "$T/exp.csv" "$T/exp.err"
erow() { sed -n "$1p" "$T/exp.csv"; }
check "--batch: a plain line is a snippet" test "$(erow 2)" = '"add rax, rbx","Instructions retired (TSC under -icount)",1.000,'
check "--batch: a line of options, n*|x| in it, named by its line" test "$(erow 3)" = \
	'"-asm_init ""mov RCX, 7"" -asm ""dec RCX; 3*|add RAX, RBX|"" -l 2 -unroll_count 20","Instructions retired (TSC under -icount)",4.000,'
check "--batch: another experiment's options in the same boot" test "$(erow 4)" = \
	"\"-asm 'mov RAX, QWORD PTR [R14]' -u 5 -basic_mode -no_normalization\",\"Instructions retired (TSC under -icount)\",5.000,"
check "--batch: three experiments, one boot, none failed" has "$T/exp.err" "3 snippets, 0 refused or failed; "

$BP bench --icount --smp 2 -cpu 1 --json -asm "add rax, rbx" >"$T/cpu1" 2>&1
check "-cpu 1 --json: measured on the second CPU" test "$(cat "$T/cpu1")" = '{"asm": "add rax, rbx", "results": {"Instructions retired (TSC under -icount)": 1.000}, "error": null}'
# hlt on the second CPU under -icount: the control CPU waits halted, so the
# virtual clock moves on and the watchdog's NMI stops it in seconds of
# wall time (with the control CPU spinning: 220 s, then a reboot).
printf 'hlt\nadd RAX, RBX\n' >"$T/hlt.txt"
t0=$(date +%s)
$BP bench --icount --smp 2 -cpu 1 --batch "$T/hlt.txt" >"$T/hlt.csv" 2>"$T/hlt.err"
t_hlt=$(($(date +%s) - t0))
sed 's/^/# /' "$T/hlt.csv"
check "-cpu 1 hlt under --icount: stopped by the watchdog (${t_hlt} s, boot included)" \
	grep -Eq '^"hlt",,,"timeout: the code ran longer than 2000 ms, stopped by the watchdog at offset 0 of the snippet \(copy [0-9]+\)"$' "$T/hlt.csv"
check "-cpu 1 after the hlt: add RAX, RBX measured 1.000 in the same boot, in under 150 s" \
	test "$(sed -n 3p "$T/hlt.csv")" = '"add RAX, RBX","Instructions retired (TSC under -icount)",1.000,' -a "$t_hlt" -lt 150

wait $kill_pid
echo "# kill batch exit $?"; sed 's/^/# /' "$T/kill.csv" "$T/kill.err"
krow() { sed -n "$1p" "$T/kill.csv"; }
ok1='"add rax, rbx","Instructions retired (TSC under -icount)",1.000,'
check "a write to the kernel's text: the boot stops, CR0.WP named" \
	grep -Eq '^"mov rax, cr0.*",,,"stopped: the code wrote the kernel.s code or read-only data \(their hash was 0x[0-9a-f]+, now 0x[0-9a-f]+\): this boot runs no more code, reboot the machine; the code changed CR0 \(was 0x[0-9a-f]+, now 0x[0-9a-f]+\): put back; QEMU booted again for the next snippet"$' "$T/kill.csv"
check "after the reboot: measured right" test "$(krow 3)" = "$ok1"
check "a null IDT under the watchdog's NMI: the reset reported" \
	test "$(krow 4)" = '"mov QWORD PTR [r14], 0; lidt [r14]; jmp $",,,"the machine reset or stopped while it ran (a triple fault?); QEMU booted again for the next snippet"'
check "after the reset: measured right" test "$(krow 5)" = "$ok1"
check "CR4 = -1 hangs QEMU's TCG: refused before it is sent, the value and bit named" \
	test "$(krow 6)" = '"mov rax, -1; mov cr4, rax",,,"refused before it was sent: the code writes CR4 = 0xffffffffffffffff, with bit 11 (UMIP), which bench'"'"'s QEMU CPU (qemu64) lacks: a CPU raises #GP, QEMU'"'"'s TCG hangs (an SVM #VMEXIT path outside any guest, QEMU'"'"'s lock held), so bench does not run it under TCG (--kvm runs it)"'
check "after the refusal: measured right" test "$(krow 7)" = "$ok1"
# CR3 names the snippet's own page tables, and RAM by its physical
# address (where they are) is read-only to it: the store faults.
check "a write to a page-table entry: a #PF, RAM named" \
	grep -Eq '^"mov rax, cr3.*",,,"fault: #PF write to kernel memory \(RAM by its physical address: the kernel.s page tables, stacks and heap\) at offset 0x9 of the snippet \(copy 0\), address 0x[0-9a-f]+, error code 0x3"$' "$T/kill.csv"
check "after it, in the same boot: measured right" test "$(krow 9)" = "$ok1"
check "the last snippet resets the machine: no reboot claimed, 5 failed" \
	test "$(krow 10)" = '"mov QWORD PTR [r14], 0; lidt [r14]; jmp $",,,"the machine reset or stopped while it ran (a triple fault?); QEMU stopped (no snippet after it)"' \
	-a -n "$(grep -F '9 snippets, 5 refused or failed' "$T/kill.err")"

wait $uefi_pid
echo "# uefi batch exit $?"; sed 's/^/# /' "$T/uefi.csv" "$T/uefi.err"
check "--uefi: measured through OVMF and the loader" \
	grep -Eq '^"add rax, rbx","TSC ticks",-?[0-9]+\.[0-9]{3},$' "$T/uefi.csv"
check "--uefi: a fault named, in the same boot" \
	has "$T/uefi.csv" '"ud2",,,"fault: #UD invalid opcode at offset 0 of the snippet'

wait $uefi_icount_pid
echo "# uefi --icount exit $?"; sed 's/^/# /' "$T/uefi_icount"
check "--uefi --icount: OVMF boots, exact" \
	test "$(grep -v '^bareperf bench: ' "$T/uefi_icount")" = 'TSC: 1.00'

# Refused by the kernel: the reason comes back in the reply (no PMU under TCG).
$BP bench --icount -asm "add rax, rbx" -e cycles >"$T/nopmu" 2>&1
check "-e cycles without a PMU: refused with the reason, exit 3" test $? = 3 -a -n \
	"$(grep -E "^bareperf bench: RUN_CODE: event 'cycles' needs a hardware PMU: .+; the tsc event needs none$" "$T/nopmu")"

# Refused before anything is sent: no kernel needed to see it.
$BP bench -asm "add rax, rbx; foo rbx" --kernel /nonexistent >"$T/asm" 2>&1
check "assembler error names the statement, exit 2" test $? = 2 -a "$(cat "$T/asm")" = "bareperf bench: -asm line 2 'foo rbx': no such instruction: \`foo rbx'"
$BP bench -asm "mov RAX, QWORD PTR [R14]; call foo" --kernel /nonexistent >"$T/ext" 2>&1
check "a symbol outside the snippet refused, named" test $? = 2 -a "$(cat "$T/ext")" = "bareperf bench: -asm line 2 'call foo': 'foo' is neither a register nor a label of the snippet (the code may refer to nothing outside itself)"
$BP bench --nasm -asm "add rax, rbx; foo rbx" --kernel /nonexistent >"$T/nasm" 2>&1
check "--nasm: NASM's error names the statement" test $? = 2 -a "$(cat "$T/nasm")" = "bareperf bench: -asm line 2 'foo rbx': parser: instruction expected"
head -c 5000 /dev/zero | tr '\0' '\220' >"$T/big.bin"
$BP bench -code "$T/big.bin" --kernel /nonexistent >"$T/big" 2>&1
check "a blob over the limit is refused" has "$T/big" "is larger than 4096 bytes"
$BP bench -asm nop -unroll_count 0 --kernel /nonexistent >"$T/unroll" 2>&1
check "-unroll_count 0: one message with the true range, exit 2" test $? = 2 -a \
	"$(cat "$T/unroll")" = "bareperf bench: -unroll_count needs a number from 1 to 100000, not '0'"
$BP bench -asm nop -frobnicate --kernel /nonexistent >"$T/opt" 2>&1
check "unknown option" has "$T/opt" "unknown option '-frobnicate'"
$BP bench -asm nop -a 1 --kernel /nonexistent >"$T/amb" 2>&1
check "an ambiguous prefix refused, every candidate named, exit 2" test $? = 2 -a "$(cat "$T/amb")" = \
	"bareperf bench: -a is ambiguous: -asm, -asm_init, -asm_late_init, -asm_one_time_init, -alignment_offset, -avg"
printf -- '-asm nop -e cycles\n' >"$T/line_e.txt"
$BP bench --batch "$T/line_e.txt" --kernel /nonexistent >"$T/line_e" 2>&1
check "--batch: a line may not set the events" has "$T/line_e" "-e is the command line's, not a --batch line's"
# -config: nanoBench's lines, checked before anything is sent.
printf '# nanoBench config\nC2.01 UOPS_RETIRED.ALL\nC2.01.CMSK=1.INV UOPS_STALLS\n' >"$T/ok.cfg"
printf 'C2.01.CTR=0 UOPS_ON_0\n' >"$T/ctr.cfg"
printf 'C2.1G UOPS_BAD\n' >"$T/bad.cfg"
$BP bench -asm nop -config "$T/ctr.cfg" --kernel /nonexistent >"$T/c1" 2>&1
check "-config: CTR= sent, on to the boot" has "$T/c1" "/nonexistent: No such file"
$BP bench -asm nop -config "$T/bad.cfg" --kernel /nonexistent >"$T/c2" 2>&1
check "-config: a bad unit mask refused" has "$T/c2" "bad.cfg:1: line refused: unit mask '1G' is not 1 or 2 hex digits"
$BP bench -asm nop -config "$T/ok.cfg" --kernel /nonexistent >"$T/c4" 2>&1
check "-config: good lines pass to the boot" has "$T/c4" "/nonexistent: No such file"
echo "1..$n"
exit $fail
