/*
 * tools/util/bench_asm_int.h — inside bench's assembler (bench_asm.h):
 * what its two assemblers (bench_asm.c: NASM, bench_gas.c: GNU as) share
 * from bench_src.c: the snippet cut into statements, nanoBench's `|n`
 * NOPs, the assembler run with its messages mapped back to the
 * statements; and bench_gas.c's entry. Private to those three files.
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_ASM_INT_H
#define BAREPERF_TOOLS_UTIL_BENCH_ASM_INT_H

#include <stddef.h>
#include <stdint.h>

/* The longest x86 instruction, and so the longest `|n` NOP (SDM Vol. 2A 2.3.11). */
#define BENCH_NOP_MAX	15

/* nanoBench's `n*|x|`: n at most BENCH_REPEAT_MAX, the source written
 * out at most BENCH_SOURCE_MAX characters. */
#define BENCH_REPEAT_MAX	10000
#define BENCH_SOURCE_MAX	(1 << 20)

/*
 * src with each `n*|x|` statement written out: x n times, ';' between
 * the copies (malloc'd); NULL after a message on stderr naming what when
 * one is malformed or the result too long.
 */
char *bench_expand_repeats(const char *what, const char *src);

/*
 * Write src to path, one statement a line after the line head, so that
 * statement k is line k + 1. label_fmt (or NULL) is printed with k before
 * each statement; a `|n` statement becomes n bytes of NOP written as
 * byte_op (".byte" or "db"). A bad `|n` is named and refused. Returns 0
 * or -1.
 */
int bench_write_source(const char *path, const char *what, const char *src, const char *head,
		       const char *label_fmt, const char *byte_op);

/*
 * Run cmd (its stderr joined to stdout), an assembler reading the file
 * in: each message "in:LINE: ..." is printed naming statement LINE - 1 of
 * src. tool names it for a missing program, package for its install.
 * Returns 0 when it exited 0 with no error, else -1.
 */
int bench_run_assembler(const char *what, const char *src, const char *cmd, const char *in,
			const char *tool, const char *package);

/*
 * "bareperf bench: WHAT line K 'STATEMENT': MESSAGE" on stderr; without
 * the statement when k names none.
 */
void bench_say_line(const char *what, const char *src, int k, const char *msg);

/*
 * GNU as in Intel syntax without register prefixes (nanoBench's and
 * uops.info's): src assembled in dir, the .text bytes into *out (malloc'd,
 * *len bytes). Code that refers to anything outside itself (a symbol it
 * does not define, an absolute address of its own) is refused, naming the
 * statement. Returns 0 or -1.
 */
int bench_gas(const char *what, const char *src, const char *dir, uint8_t **out, size_t *len);

#endif
