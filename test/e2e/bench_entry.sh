#!/bin/sh
# bareperf bench with snippets aimed at the kernel's entry paths
# (kernel/isr.asm, kernel/trap.c, apps/bench_code_trap.c): software
# interrupts to exception and interrupt vectors, SWAPGS, and the CR0/CR4
# bits that make SSE fault. Each is reported with its own row and the
# machine lives on: the `add rax, rbx` after it is measured exactly (QEMU
# -icount: the TSC counts instructions) in the same boot. Prints TAP.
. "$(dirname "$0")/bench_common.sh"
ok1='"add rax, rbx","Instructions retired (TSC under -icount)",1.000,'

# One boot: each hostile snippet, then the add that must measure 1.
cat >"$T/entry.txt" <<'EOF2'
int 8
add rax, rbx
int 13
add rax, rbx
int 14
add rax, rbx
int 18
add rax, rbx
int 2
add rax, rbx
int 0x20
add rax, rbx
int 0x80
add rax, rbx
mov rax, cr0; or rax, 8; mov cr0, rax
add rax, rbx
mov rax, cr0; or rax, 4; mov cr0, rax
add rax, rbx
mov rax, cr4; btr rax, 9; mov cr4, rax
add rax, rbx
EOF2
$BP bench --kernel "$B/kernel.elf" --icount --timeout 300 --batch "$T/entry.txt" >"$T/entry.csv" 2>"$T/entry.err"
echo "# batch exit $?"; sed 's/^/# /' "$T/entry.csv" "$T/entry.err"
row() { sed -n "$1p" "$T/entry.csv"; }
i=2
for v in 0x8 0xd 0xe 0x12 0x2 0x20 0x80; do
	check "int $v: reported as the code's int, at offset 0 of the snippet" \
		has "$T/entry.csv" "\",,,\"fault: the code ran int $v at offset 0 of the snippet (copy 0)\""
	check "after int $v: add rax, rbx = 1.000" test "$(row $((i + 1)))" = "$ok1"
	i=$((i + 2))
done
for bit in 8:TS 4:EM; do
	check "CR0.${bit#*:} set: measured (3 instructions)" \
		test "$(row $i)" = "\"mov rax, cr0; or rax, ${bit%:*}; mov cr0, rax\",\"Instructions retired (TSC under -icount)\",3.000,"
	check "CR0.${bit#*:} set: named with both values, put back" \
		grep -Eq "or rax, ${bit%:*}; mov cr0, rax: note: the code changed CR0 \(was 0x[0-9a-f]+, now 0x[0-9a-f]+\): put back$" "$T/entry.err"
	check "after CR0.${bit#*:}: add rax, rbx = 1.000" test "$(row $((i + 1)))" = "$ok1"
	i=$((i + 2))
done
check "CR4.OSFXSR cleared: measured (3 instructions)" \
	test "$(row $i)" = '"mov rax, cr4; btr rax, 9; mov cr4, rax","Instructions retired (TSC under -icount)",3.000,'
check "CR4.OSFXSR cleared: named with both values, put back" \
	grep -Eq 'btr rax, 9; mov cr4, rax: note: the code changed CR4 \(was 0x[0-9a-f]+, now 0x[0-9a-f]+\): put back$' "$T/entry.err"
check "after CR4.OSFXSR: add rax, rbx = 1.000" test "$(row $((i + 1)))" = "$ok1"
check "all in one boot: the machine never went down" \
	test -z "$(grep -F 'QEMU booted again' "$T/entry.csv")" -a "$(grep -c '' "$T/entry.csv")" = 21

# SWAPGS: an odd number of copies leaves the other GS base loaded; an NMI
# or exception meanwhile enters with it. Both bases named and put back.
# The exception (ud2) and the watchdog's NMI (jmp $) after a SWAPGS enter
# with the other GS base for sure.
printf 'swapgs\nadd rax, rbx\nswapgs; ud2\nadd rax, rbx\nswapgs; jmp $\nadd rax, rbx\n' \
	>"$T/swapgs.txt"
for u in 1001 1; do
	$BP bench --kernel "$B/kernel.elf" --icount --timeout 300 -unroll_count $u --batch "$T/swapgs.txt" \
		>"$T/gs$u.csv" 2>"$T/gs$u.err"
	echo "# swapgs -unroll_count $u exit $?"; sed 's/^/# /' "$T/gs$u.csv" "$T/gs$u.err"
	check "swapgs, unroll $u: measured (1 instruction)" \
		test "$(sed -n 2p "$T/gs$u.csv")" = '"swapgs","Instructions retired (TSC under -icount)",1.000,'
	check "swapgs, unroll $u: both GS bases named, put back" \
		grep -Eq '^bareperf bench: swapgs: note: the code changed GS_BASE \(was 0x[0-9a-f]+, now (0|0x[0-9a-f]+)\), KERNEL_GS_BASE \(was (0|0x[0-9a-f]+), now 0x[0-9a-f]+\): put back$' "$T/gs$u.err"
	check "after swapgs, unroll $u: add rax, rbx = 1.000" test "$(sed -n 3p "$T/gs$u.csv")" = "$ok1"
	check "swapgs; ud2, unroll $u: the #UD reported" \
		has "$T/gs$u.csv" '"swapgs; ud2",,,"fault: #UD invalid opcode at offset 0x3 of the snippet (copy 0), error code 0; the code changed GS_BASE'
	check "after swapgs; ud2, unroll $u: add rax, rbx = 1.000" test "$(sed -n 5p "$T/gs$u.csv")" = "$ok1"
	check "swapgs; jmp \$, unroll $u: stopped by the watchdog" \
		has "$T/gs$u.csv" '"swapgs; jmp $",,,"timeout: the code ran longer than 300 ms, stopped by the watchdog at offset 0x3 of the snippet (copy 0); the code changed GS_BASE'
	check "after swapgs; jmp \$, unroll $u: add rax, rbx = 1.000" test "$(sed -n 7p "$T/gs$u.csv")" = "$ok1"
	check "swapgs, unroll $u: all in one boot" test -z "$(grep -F 'QEMU booted again' "$T/gs$u.csv")"
done
echo "1..$n"
exit $fail
