#!/bin/sh
# bareperf bench's machine state (apps/bench_code.h) and nanoBench's
# options beyond the basics, under QEMU -icount (the TSC counts
# instructions: exact). R14, RDI, RSI, RSP and RBP each point into the
# middle of an area of its own, guarded on both sides: loads through each
# see what the one-time init stored there, a write at the last word is
# fine, one past it faults and names the area. Prints TAP.
. "$(dirname "$0")/bench_common.sh"
IR='Instructions retired (TSC under -icount)'
# nanoBench's line names the TSC "TSC"; what it counts under -icount is
# said on stderr.
NB='TSC'

# Each register's area gets its own value once; a loop of that many
# iterations reads it back: 1 + 2 * value instructions per copy.
cat >"$T/regs.txt" <<'EOF2'
mov rcx, [rdi]; .l: dec rcx; jnz .l
mov rcx, [rsi]; .l: dec rcx; jnz .l
mov rcx, [rbp]; .l: dec rcx; jnz .l
mov rcx, [r14]; .l: dec rcx; jnz .l
mov rcx, [rsp]; .l: dec rcx; jnz .l
mov rax, [rdi]
mov [r14+524280], rax
mov [r14+524288], rax
mov [rdi+524288], rax
mov [rsi-524296], rax
mov [rsp+524288], rax
mov [rbp+524288], rax
add rax, rbx
EOF2
$BP bench --icount -unroll_count 10 --batch "$T/regs.txt" -asm_one_time_init \
	"mov rcx, 3; mov [rdi], rcx; inc rcx; mov [rsi], rcx; inc rcx; mov [rbp], rcx; inc rcx; mov [r14], rcx; inc rcx; mov [rsp], rcx" \
	>"$T/regs.csv" 2>"$T/regs.err"
echo "# regs exit $?"; sed 's/^/# /' "$T/regs.csv" "$T/regs.err"
row() { sed -n "$1p" "$T/regs.csv"; }
loaded() {	# loaded ROW REG VALUE
	check "-asm_one_time_init's $3 read back through $2: $((1 + 2 * $3)).000" \
		test "$(row $1)" = "\"mov rcx, [$2]; .l: dec rcx; jnz .l\",\"$IR\",$((1 + 2 * $3)).000,"
}
loaded 2 rdi 3
loaded 3 rsi 4
loaded 4 rbp 5
loaded 5 r14 6
loaded 6 rsp 7
check "mov rax, [rdi] = 1.000" test "$(row 7)" = "\"mov rax, [rdi]\",\"$IR\",1.000,"
check "a write at R14 + 512 KiB - 8 = 1.000" test "$(row 8)" = "\"mov [r14+524280], rax\",\"$IR\",1.000,"
pf() {	# pf SNIPPET TEXT: faults, the area named
	check "$1: #PF, $2" grep -qF "\"$1\",,,\"fault: #PF page fault at offset 0 of the snippet (copy 0), address 0x" "$T/regs.csv"
	check "$1: $2" grep -qE "^\"$(printf '%s' "$1" | sed 's/[][+]/\\&/g')\",,,.*: $2 \[0x[0-9a-f]+, 0x[0-9a-f]+\), error code 0x2\"$" "$T/regs.csv"
}
pf "mov [r14+524288], rax" "0 bytes past the end of R14's area"
pf "mov [rdi+524288], rax" "0 bytes past the end of RDI's area"
pf "mov [rsi-524296], rax" "8 bytes before the start of RSI's area"
pf "mov [rsp+524288], rax" "0 bytes past the end of RSP's area"
pf "mov [rbp+524288], rax" "0 bytes past the end of RBP's area"
check "measured right after the faults" test "$(row 14)" = "\"add rax, rbx\",\"$IR\",1.000,"

# R14's area resized: 2 MiB, its middle still R14.
printf 'mov [r14+1048568], rax\nmov [r14+1048576], rax\nmov [r14-1048584], rax\n' >"$T/r14.txt"
$BP bench --icount -R14_size 2 --batch "$T/r14.txt" >"$T/r14.csv" 2>"$T/r14.err"
echo "# -R14_size exit $?"; sed 's/^/# /' "$T/r14.csv" "$T/r14.err"
check "-R14_size 2: a write at R14 + 1 MiB - 8 = 1.000" \
	test "$(sed -n 2p "$T/r14.csv")" = "\"mov [r14+1048568], rax\",\"$IR\",1.000,"
check "-R14_size 2: R14 + 1 MiB faults, the 2 MiB area named" \
	grep -qE "^\"mov \[r14\+1048576\], rax\",,,.*: 0 bytes past the end of R14's area \[0x([0-9a-f]+), 0x[0-9a-f]+\), error" "$T/r14.csv"
check "-R14_size 2: R14 - 1 MiB - 8 faults, named" \
	has "$T/r14.csv" ": 8 bytes before the start of R14's area ["
lo=$(sed -n "s/^.*R14's area \[0x\([0-9a-f]*\), 0x\([0-9a-f]*\)).*$/\1 \2/p" "$T/r14.csv" | head -1)
# The low 32 bits: sh's arithmetic is signed 64-bit.
lo32() { printf '%d' "0x$(printf '%s' "$1" | tail -c 8)"; }
size=$(test -n "$lo" && echo $(($(lo32 "${lo#* }") - $(lo32 "${lo% *}"))))
check "-R14_size 2: the area is 2 MiB (${size:-?} bytes)" test "$size" = 2097152
$BP bench --icount -R14_size 100000 -asm nop >"$T/big" 2>&1
check "-R14_size beyond the memory: refused with the reason, exit 3" test $? = 3 -a -n \
	"$(grep -F "bareperf bench: RUN_CODE: R14's area of 102400000 KiB does not fit: " "$T/big")"

# -df: the drain's code is outside the difference, but in the fixed
# overhead (basic mode's first version): 3 x (LFENCE, 4096 + 512 NOPs).
$BP bench --icount -basic_mode -verbose -asm "add rax, rbx" >"$T/plain" 2>&1
$BP bench --icount -basic_mode -verbose -df -asm "add rax, rbx" >"$T/df" 2>&1
sed 's/^/# /' "$T/plain" "$T/df"
first() { sed -n 's/^.*median of \([0-9]*\) (first version).*$/\1/p' "$1"; }
check "-df: add rax, rbx still 1.00" has "$T/df" "$NB: 1.00"
a=$(first "$T/plain"); b=$(first "$T/df")
check "-df: the fixed overhead grows by the three drains (${a:-?} -> ${b:-?})" \
	test -n "$a" -a -n "$b" -a $((b - a)) -ge $((3 * 4609 - 64)) -a $((b - a)) -le $((3 * 4609 + 64))

# Aggregates and output.
$BP bench --icount -range -asm "add rax, rbx; add rbx, rax" >"$T/range" 2>/dev/null
check "-range: VALUE [MIN;MAX]" test "$(cat "$T/range")" = "$NB: 2.00 [2.00;2.00]"
$BP bench --icount -max -asm "add rax, rbx" >"$T/max" 2>/dev/null
check "-max: the maximum, 1.00" test "$(cat "$T/max")" = "$NB: 1.00"
$BP bench --icount -remove_empty_events -asm "add rax, rbx" >"$T/rm" 2>/dev/null
check "-remove_empty_events keeps an event that occurred" test "$(cat "$T/rm")" = "$NB: 1.00"
$BP bench --icount -fixed_counters -asm nop >"$T/fixed" 2>&1
check "-fixed_counters without a PMU: refused by name with the reason, exit 3" \
	test $? = 3 -a -n "$(grep -F 'bareperf bench: RUN_CODE: -fixed_counters: ' "$T/fixed")"
$BP bench -no_mem -asm nop >"$T/nomem" 2>&1
check "-no_mem: refused by name with the reason, exit 2" \
	test $? = 2 -a -n "$(grep -F 'bareperf bench: -no_mem: not supported: ' "$T/nomem")"
printf '\271\005\000\000\000' >"$T/late.bin"	# mov ecx, 5
$BP bench --icount -code_late_init "$T/late.bin" -asm "mov rdx, rcx; .l: dec rdx; jnz .l" \
	>"$T/late" 2>/dev/null
check "-code_late_init: its RCX = 5 seen by the body (1 + 2 * 5)" \
	test "$(cat "$T/late")" = "$NB: 11.00"
echo "1..$n"
exit $fail
