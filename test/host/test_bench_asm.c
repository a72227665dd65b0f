/*
 * test_bench_asm.c — `bareperf bench`'s assembler (tools/util/bench_asm.c,
 * bench_gas.c) on the snippets nanoBench and uops.info write: GNU as in
 * `.intel_syntax noprefix`, nanoBench's `|n` NOPs, local labels, ';' and
 * newlines between statements; the bytes of many checked against their
 * encodings (SDM Vol. 2); bad input refused with its statement named;
 * NASM's syntax behind --nasm.
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
#include <unistd.h>
#include <cmocka.h>

#include "tools/util/bench_asm.h"

/* Assemble src; stderr's text into err. */
static int assemble(const char *src, bool nasm, uint8_t **out, size_t *len, char *err, size_t n)
{
	FILE *t = tmpfile();
	int saved = dup(2);

	assert_non_null(t);
	fflush(stderr);
	dup2(fileno(t), 2);
	int rc = bench_assemble("-asm", src, nasm, out, len);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(t);
	size_t got = fread(err, 1, n - 1, t);
	err[got] = 0;
	fclose(t);
	return rc;
}

struct known {
	const char *src;
	size_t len;
	uint8_t bytes[24];
};

/* Encodings written from the SDM's opcode tables (and read back with objdump -d). */
static const struct known typical[] = {
	{ "add RAX, RBX", 3, { 0x48, 0x01, 0xd8 } },
	{ "ADD RAX, RBX; add RBX, RAX", 6, { 0x48, 0x01, 0xd8, 0x48, 0x01, 0xc3 } },
	{ "mov RAX, QWORD PTR [R14]", 3, { 0x49, 0x8b, 0x06 } },
	{ "mov RAX, [RAX]", 3, { 0x48, 0x8b, 0x00 } },
	{ "mov RAX, R14; sub RAX, 8; mov [RAX], RAX", 10,
	  { 0x4c, 0x89, 0xf0, 0x48, 0x83, 0xe8, 0x08, 0x48, 0x89, 0x00 } },
	{ "movdqa XMM0, XMMWORD PTR [R14]", 5, { 0x66, 0x41, 0x0f, 0x6f, 0x06 } },
	{ "lock xadd QWORD PTR [R14], RAX", 5, { 0xf0, 0x49, 0x0f, 0xc1, 0x06 } },
	{ "imul RAX, RAX", 4, { 0x48, 0x0f, 0xaf, 0xc0 } },
	{ "mov QWORD PTR [R14+8], RAX", 4, { 0x49, 0x89, 0x46, 0x08 } },
	{ "vaddps YMM0, YMM1, YMM2", 4, { 0xc5, 0xf4, 0x58, 0xc2 } },
	{ "vmovdqu YMM0, YMMWORD PTR [R14]", 5, { 0xc4, 0xc1, 0x7e, 0x6f, 0x06 } },
	{ "xchg RAX, RBX", 2, { 0x48, 0x93 } },
	{ "nop", 1, { 0x90 } },
	{ "pause", 2, { 0xf3, 0x90 } },
	{ "mfence", 3, { 0x0f, 0xae, 0xf0 } },
	{ "lfence; sfence", 6, { 0x0f, 0xae, 0xe8, 0x0f, 0xae, 0xf8 } },
	{ "cpuid", 2, { 0x0f, 0xa2 } },
	{ "rdtsc", 2, { 0x0f, 0x31 } },
	{ "div RCX", 3, { 0x48, 0xf7, 0xf1 } },
	{ "movq XMM0, RAX", 5, { 0x66, 0x48, 0x0f, 0x6e, 0xc0 } },
	{ "pxor XMM1, XMM1", 4, { 0x66, 0x0f, 0xef, 0xc9 } },
	{ "prefetcht0 BYTE PTR [R14]", 4, { 0x41, 0x0f, 0x18, 0x0e } },
	{ "clflush BYTE PTR [R14]", 4, { 0x41, 0x0f, 0xae, 0x3e } },
	{ "movzx EAX, BYTE PTR [R14]", 4, { 0x41, 0x0f, 0xb6, 0x06 } },
	{ "cmovz RAX, RBX", 4, { 0x48, 0x0f, 0x44, 0xc3 } },
	{ "popcnt RAX, RBX", 5, { 0xf3, 0x48, 0x0f, 0xb8, 0xc3 } },
	{ "bswap RAX", 3, { 0x48, 0x0f, 0xc8 } },
	{ "test RAX, RAX; jz 1f; 1:", 5, { 0x48, 0x85, 0xc0, 0x74, 0x00 } },
	{ "1: dec R15; jnz 1b", 5, { 0x49, 0xff, 0xcf, 0x75, 0xfb } },
	{ "mov RCX, 3\n2: dec RCX\njnz 2b", 12,
	  { 0x48, 0xc7, 0xc1, 0x03, 0x00, 0x00, 0x00, 0x48, 0xff, 0xc9, 0x75, 0xfb } },
	{ "jmp 1f; 1:", 2, { 0xeb, 0x00 } },
	{ ".byte 0x90", 1, { 0x90 } },
	{ "lea RAX, [RIP+0]", 7, { 0x48, 0x8d, 0x05, 0x00, 0x00, 0x00, 0x00 } },
	{ "lea RAX, [RIP+1f]; nop; 1:", 8, { 0x48, 0x8d, 0x05, 0x01, 0x00, 0x00, 0x00, 0x90 } },
	{ "  nop  ;; nop ", 2, { 0x90, 0x90 } },
	{ "add RAX, RBX # a comment", 3, { 0x48, 0x01, 0xd8 } },
};

static void typical_snippets_assemble_to_their_encodings(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(typical) / sizeof(typical[0]); i++) {
		uint8_t *out;
		size_t len;
		char err[1024];

		int rc = assemble(typical[i].src, false, &out, &len, err, sizeof(err));
		if (rc || len != typical[i].len || memcmp(out, typical[i].bytes, len))
			fail_msg("'%s': rc %d, %zu bytes (want %zu), stderr: %s", typical[i].src, rc,
				 len, typical[i].len, err);
		assert_string_equal(err, "");
		free(out);
	}
}

/*
 * `|n`: one n-byte NOP. 1 to 9 bytes as the SDM's table of recommended
 * NOPs; 10 to 15 the 9-byte form (66 0F 1F 84 00 + disp32) behind more 66
 * prefixes.
 */
static void nop_statements_are_one_nop_of_n_bytes(void **state)
{
	static const uint8_t rec[9][9] = {
		{ 0x90 },
		{ 0x66, 0x90 },
		{ 0x0f, 0x1f, 0x00 },
		{ 0x0f, 0x1f, 0x40, 0x00 },
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00 },
		{ 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
		{ 0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 },
	};
	(void)state;
	for (int nasm = 0; nasm < 2; nasm++) {
		for (int n = 1; n <= 15; n++) {
			char src[32], err[1024];
			uint8_t want[15], *out;
			size_t len;

			snprintf(src, sizeof(src), "nop; |%d; nop", n);
			int pre = n > 9 ? n - 9 : 0;
			memset(want, 0x66, sizeof(want));
			memcpy(want + pre, rec[n - pre - 1], n - pre);
			int rc = assemble(src, nasm, &out, &len, err, sizeof(err));
			if (rc || len != (size_t)n + 2 || out[0] != 0x90 || memcmp(out + 1, want, n) ||
			    out[n + 1] != 0x90)
				fail_msg("'%s'%s: rc %d, %zu bytes, stderr: %s", src,
					 nasm ? " (--nasm)" : "", rc, len, err);
			free(out);
		}
	}
}

struct refused {
	const char *src;
	const char *err;	/* the whole of stderr */
};

static const struct refused bad[] = {
	{ "add RAX, RBX; foo RBX",
	  "bareperf bench: -asm line 2 'foo RBX': no such instruction: `foo RBX'\n" },
	/* gas reads an unknown register as a symbol: refused as one */
	{ "nop\nmov RAX, QWORD PTR [R99]",
	  "bareperf bench: -asm line 2 'mov RAX, QWORD PTR [R99]': 'R99' is neither a register nor "
	  "a label of the snippet (the code may refer to nothing outside itself)\n" },
	{ "add RAX, EBX",
	  "bareperf bench: -asm line 1 'add RAX, EBX': register type mismatch for `add'\n" },
	{ "nop; |0", "bareperf bench: -asm line 2 '|0': `|n` is an n-byte NOP, n from 1 to 15\n" },
	{ "|16", "bareperf bench: -asm line 1 '|16': `|n` is an n-byte NOP, n from 1 to 15\n" },
	{ "|", "bareperf bench: -asm line 1 '|': `|n` is an n-byte NOP, n from 1 to 15\n" },
	{ "nop; call foo",
	  "bareperf bench: -asm line 2 'call foo': 'foo' is neither a register nor a label of the "
	  "snippet (the code may refer to nothing outside itself)\n" },
	{ "mov RAX, OFFSET 1f; 1: nop",
	  "bareperf bench: -asm line 1 'mov RAX, OFFSET 1f': takes the absolute address of a "
	  "label: the copies run at an address the host does not know (a RIP-relative "
	  "[RIP+label] does not need it)\n" },
	{ "mov qword [r14], 0",
	  "bareperf bench: -asm line 1 'mov qword [r14], 0': ambiguous operand size for `mov' "
	  "(the size is written QWORD PTR; --nasm takes NASM's syntax)\n" },
	{ ".data; .byte 1; .text; nop",
	  "bareperf bench: -asm puts 1 bytes in section .data: only the code (.text) is sent\n" },
	{ "1:", "bareperf bench: -asm assembles to no code\n" },
	/* local labels are per copy: one the copy lacks is an error */
	{ "nop; jnz 2b",
	  "bareperf bench: -asm line 2 'jnz 2b': backward ref to unknown label \"2:\"\n" },
	/* gas names no line for a forward one: the snippet is named */
	{ "jz 1f; nop",
	  "bareperf bench: -asm: local label `\"1\" (instance number 1 of a fb label)' is not "
	  "defined\n" },
};

static void bad_snippets_are_refused_naming_the_statement(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t *out = (uint8_t *)"x";
		size_t len = 1;
		char err[1024];

		int rc = assemble(bad[i].src, false, &out, &len, err, sizeof(err));
		if (rc != -1 || out || len || strcmp(err, bad[i].err))
			fail_msg("'%s': rc %d, %zu bytes, stderr:\n%s(want:\n%s)", bad[i].src, rc, len,
				 err, bad[i].err);
	}
}

/* NASM's syntax stays behind --nasm, its messages mapped the same way. */
/*
 * --batch's one GNU as: every snippet above in one call, good and bad
 * mixed. What it gives is what bench_assemble gives alone, byte for byte;
 * what it leaves (NULL) bench_assemble refuses or takes as a snippet of
 * its own (a directive, a named label, a `|` form); it says nothing.
 */
static void batch_gives_what_each_alone_gives(void **state)
{
	enum { NT = sizeof(typical) / sizeof(typical[0]), NB = sizeof(bad) / sizeof(bad[0]) };
	const char *srcs[2 * NT + NB + 1];
	uint8_t *outs[2 * NT + NB + 1];
	size_t lens[2 * NT + NB + 1];
	int n = 0, taken = 0;

	(void)state;
	/* twice over, so that numeric labels recur in one source */
	for (int i = 0; i < 2 * NT; i++)
		srcs[n++] = typical[i % NT].src;
	for (int i = 0; i < NB; i++)
		srcs[n++] = bad[i].src;
	srcs[n++] = NULL;
	FILE *t = tmpfile();
	int saved = dup(2);
	fflush(stderr);
	dup2(fileno(t), 2);
	bench_assemble_batch(n, srcs, false, outs, lens);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	assert_int_equal(ftell(t), 0);
	fclose(t);
	for (int i = 0; i < n; i++) {
		uint8_t *one;
		size_t len;
		char err[1024];

		if (!outs[i]) {
			assert_true(i >= NT || !srcs[i] || strchr(srcs[i], '.') ||
				    strchr(srcs[i], '|'));
			continue;
		}
		taken++;
		assert_int_equal(assemble(srcs[i], false, &one, &len, err, sizeof(err)), 0);
		if (len != lens[i] || memcmp(one, outs[i], len))
			fail_msg("'%s': %zu bytes in the batch, %zu alone", srcs[i], lens[i], len);
		free(one);
		free(outs[i]);
	}
	assert_true(taken >= 2 * (NT - 3));
}

static void nasm_syntax_behind_its_option(void **state)
{
	uint8_t *out;
	size_t len;
	char err[1024];
	static const uint8_t want[] = { 0x49, 0xc7, 0x06, 0x00, 0x00, 0x00, 0x00, 0x0f, 0x1f, 0x00 };
	(void)state;

	assert_int_equal(assemble("mov qword [r14], 0; |3", true, &out, &len, err, sizeof(err)), 0);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(out, want, len);
	free(out);
	assert_int_equal(assemble("add rax, rbx; foo rbx", true, &out, &len, err, sizeof(err)), -1);
	assert_string_equal(err, "bareperf bench: -asm line 2 'foo rbx': parser: instruction expected\n");
	assert_int_equal(assemble("|16", true, &out, &len, err, sizeof(err)), -1);
	assert_string_equal(err, "bareperf bench: -asm line 1 '|16': `|n` is an n-byte NOP, n from 1 to 15\n");
}

/* nanoBench's `n*|x|`: x written n times, several statements in x, other
 * statements around it; a bad count or an unclosed x refused. */
static void repeat_statements_write_x_n_times(void **state)
{
	static const struct known rep[] = {
		{ "3*|add RAX, RBX|", 9, { 0x48, 0x01, 0xd8, 0x48, 0x01, 0xd8, 0x48, 0x01, 0xd8 } },
		{ "nop; 2*|add RAX, RBX; nop| ; pause", 11,
		  { 0x90, 0x48, 0x01, 0xd8, 0x90, 0x48, 0x01, 0xd8, 0x90, 0xf3, 0x90 } },
		{ "1*|nop|\n2*|cpuid|", 5, { 0x90, 0x0f, 0xa2, 0x0f, 0xa2 } },
		{ "4*|1: jmp 1f; 1:|", 8, { 0xeb, 0x00, 0xeb, 0x00, 0xeb, 0x00, 0xeb, 0x00 } },
	};
	static const char *const bad[] = { "0*|nop|", "2*|nop", "99999*|nop|", "2*|nop|nop" };
	(void)state;
	for (int nasm = 0; nasm < 2; nasm++) {
		for (size_t i = 0; i < sizeof(rep) / sizeof(rep[0]); i++) {
			uint8_t *out;
			size_t len;
			char err[1024];

			if (nasm && strchr(rep[i].src, ':'))
				continue;
			int rc = assemble(rep[i].src, nasm, &out, &len, err, sizeof(err));
			if (rc || len != rep[i].len || memcmp(out, rep[i].bytes, len))
				fail_msg("'%s'%s: rc %d, %zu bytes (want %zu), stderr: %s", rep[i].src,
					 nasm ? " (NASM)" : "", rc, len, rep[i].len, err);
			free(out);
		}
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint8_t *out;
		size_t len;
		char err[1024];

		assert_int_equal(assemble(bad[i], false, &out, &len, err, sizeof(err)), -1);
		if (!strstr(err, "`n*|x|` is x written n times"))
			fail_msg("'%s': stderr: %s", bad[i], err);
	}
}

static void empty_is_no_code(void **state)
{
	uint8_t *out = (uint8_t *)"x";
	size_t len = 1;
	(void)state;

	assert_int_equal(bench_assemble("-asm_init", NULL, false, &out, &len), 0);
	assert_null(out);
	assert_int_equal(bench_assemble("-asm_init", "", true, &out, &len), 0);
	assert_int_equal(len, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(typical_snippets_assemble_to_their_encodings),
		cmocka_unit_test(nop_statements_are_one_nop_of_n_bytes),
		cmocka_unit_test(bad_snippets_are_refused_naming_the_statement),
		cmocka_unit_test(batch_gives_what_each_alone_gives),
		cmocka_unit_test(nasm_syntax_behind_its_option),
		cmocka_unit_test(repeat_statements_write_x_n_times),
		cmocka_unit_test(empty_is_no_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
