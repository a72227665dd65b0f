/*
 * tools/util/bench_asm_int.h — inside bench's assembler (bench_asm.h):
 * what its two assemblers (bench_asm.c: NASM, bench_gas.c: GNU as) share
 * from bench_src.c: the snippet cut into statements, nanoBench's `|n`
 * NOPs, the assembler run with its messages mapped back to the
 * statements; and bench_gas.c's entry. Private to those three files.
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_ASM_INT_H
#define BAREPERF_TOOLS_UTIL_BENCH_ASM_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
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
 * bench_write_source's statements alone, onto f: the number of lines
 * written (one a statement), or -1 after a bad `|n` is named.
 */
int bench_write_stmts(FILE *f, const char *what, const char *src, const char *label_fmt,
		      const char *byte_op);

/*
 * src can share one object with other snippets (bench_gas_batch): it
 * defines no symbol of its own (a named label; numeric ones such as `1:`
 * are local to their neighbours) and has no directive (which could change
 * the section or the syntax of the snippets after it) and no nanoBench
 * `|` form.
 */
bool bench_plain(const char *src);

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

/*
 * The bench_plain snippets among srcs (NULL: none) through one GNU as in
 * dir, each in a section of its own: those that assembled with no message,
 * no relocation and 1 to WIRE_CODE_MAX bytes into outs[i] (malloc'd,
 * lens[i] bytes); the others' outs[i] stay NULL, for bench_gas on its own,
 * which names their errors. Says nothing.
 */
void bench_gas_batch(int n, const char *const *srcs, const char *dir, uint8_t **outs,
		     size_t *lens);

#endif
