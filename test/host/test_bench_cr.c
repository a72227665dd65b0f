/*
 * test_bench_cr.c — bench's check for writes to CR0 and CR4 that hang
 * QEMU's TCG (tools/util/bench_cr.c), on snippets assembled by GNU as:
 * the constants of the hostile batteries (test/e2e/bench_state.sh,
 * bench_code.sh) caught with the bit named; the CR writes the batteries
 * measure (a bit of CR0 or CR4 the CPU takes, put back after) let through.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tools/util/bench_asm.h"
#include "tools/util/bench_cr.h"

struct cr_case {
	const char *src;
	const char *why;	/* a part of the reason; NULL: let through */
};

static const struct cr_case cases[] = {
	{ "mov rax, -1; mov cr4, rax", "writes CR4 = 0xffffffffffffffff, with bit 11 (UMIP), which bench's QEMU CPU" },
	{ "xor eax, eax; mov cr0, rax", "writes CR0 = 0, PE and PG clear: a CPU raises #GP" },
	{ "mov rax, 0; mov cr0, rax", "CR0 = 0, PE and PG clear" },
	{ "mov rax, cr4; bts rax, 12; mov cr4, rax", "sets bit 12 (LA57) of CR4, which" },
	{ "mov rax, cr4; bts rax, 13; mov cr4, rax", "sets bit 13 (VMXE) of CR4" },
	{ "mov rax, cr4; bts rax, 32; mov cr4, rax", "sets bit 32 of CR4" },
	{ "mov rax, cr4; or rax, 0x8000; mov cr4, rax", "sets bit 15 of CR4" },
	{ "mov r9, -1; mov cr4, r9", "bit 11" },
	{ "mov eax, 0x1000; mov cr4, rax", "writes CR4 = 0x1000, with bit 12 (LA57)" },
	{ "mov rax, -1; mov rbx, rax; nop; mov cr4, rbx", NULL },	/* nop: not followed */
	{ "mov rax, -1; mov rbx, rax; mov cr4, rbx", "bit 11" },
	{ "mov rcx, 0x80000000; not rcx; mov cr0, rcx", NULL },		/* PE set by the not */
	{ "mov ecx, 0x7fffffff; not ecx; mov cr0, rcx", NULL },
	{ "mov ecx, 0x7fffffff; not ecx; and ecx, 0x7ffffffe; mov cr0, rcx", "writes CR0 = 0, PE" },
	/* what the batteries measure, and what resets the machine (reported) */
	{ "mov rax, cr4; or rax, 4; mov cr4, rax", NULL },
	{ "mov rax, cr4; btr rax, 9; mov cr4, rax", NULL },
	{ "mov rax, cr4; btr rax, 5; mov cr4, rax", NULL },
	{ "mov rax, cr0; btr rax, 16; mov cr0, rax", NULL },
	{ "mov rax, cr0; btr rax, 31; mov cr0, rax", NULL },
	{ "mov rax, cr0; or rax, 8; mov cr0, rax", NULL },
	{ "mov rax, cr4; and rax, 0x7ff; mov cr4, rax", NULL },
	{ "mov rax, -1; add rax, 1; mov cr4, rax", NULL },
	{ "mov rax, -1; mov cr3, rax", NULL },
	{ "mov rax, -1; mov cr8, rax", NULL },
	{ "add rax, rbx", NULL },
};

static void constant_writes_that_hang_tcg_are_caught(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *code;
		size_t len;
		char why[512] = "";

		assert_int_equal(bench_assemble("-asm", cases[i].src, false, &code, &len), 0);
		int hangs = bench_cr_hangs_tcg(code, len, why, sizeof(why));
		free(code);
		if (hangs != !!cases[i].why || (cases[i].why && !strstr(why, cases[i].why)))
			fail_msg("'%s': %d, '%s' (want %s)", cases[i].src, hangs, why,
				 cases[i].why ? cases[i].why : "let through");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(constant_writes_that_hang_tcg_are_caught),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
