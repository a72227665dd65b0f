/*
 * tools/util/bench_asm.h — the snippets of `bareperf bench` as machine
 * code: assembled with GNU as (the default) or NASM, or read from a flat
 * binary. Errors go to
 * stderr as one line each, prefixed "bareperf bench: ".
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_ASM_H
#define BAREPERF_TOOLS_UTIL_BENCH_ASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Read the flat binary at path into *out (malloc'd, *len bytes); what
 * names it in errors (e.g. "-code"). Longer than WIRE_CODE_MAX bytes (the
 * most one request carries) is an error. Returns 0 or -1.
 */
int bench_read_code(const char *path, uint8_t **out, size_t *len, const char *what);

/*
 * Assemble src into *out (malloc'd, *len bytes): 64-bit code in Intel
 * syntax, statements separated by ';' or newlines, as nanoBench takes
 * them; what names it in errors (e.g. "-asm"). The syntax is GNU as's
 * `.intel_syntax noprefix` (nanoBench's and uops.info's: `mov RAX, QWORD
 * PTR [R14]`), or NASM's when nasm is true. Both take nanoBench's `|n`,
 * one n-byte NOP (1 <= n <= 15), and its `n*|x|`, x written n times (x
 * runs to the next '|'). Empty or NULL src: 0 with *out NULL,
 * *len 0. Messages name the statement (its number from 1 and its text);
 * code that assembles to nothing or to more than WIRE_CODE_MAX bytes, or
 * (GNU as) refers to anything outside itself, is an error. Returns 0 or -1.
 */
int bench_assemble(const char *what, const char *src, bool nasm, uint8_t **out, size_t *len);

/*
 * Many snippets at once, for --batch: one GNU as for all those of srcs
 * (NULL: none) that it can take together (no named label, directive or
 * `|` form of their own; not with NASM). Each that assembled without a
 * message, as bench_assemble would, is in outs[i] (malloc'd, lens[i]
 * bytes); every other outs[i] is NULL, for bench_assemble, which says
 * what is wrong with it. Prints nothing.
 */
void bench_assemble_batch(int n, const char *const *srcs, bool nasm, uint8_t **outs, size_t *lens);

#endif
