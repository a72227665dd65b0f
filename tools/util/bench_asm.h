/*
 * tools/util/bench_asm.h — the snippets of `bareperf bench` as machine
 * code: assembled with NASM, or read from a flat binary. Errors go to
 * stderr as one line each, prefixed "bareperf bench: ".
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_ASM_H
#define BAREPERF_TOOLS_UTIL_BENCH_ASM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Read the flat binary at path into *out (malloc'd, *len bytes); what
 * names it in errors (e.g. "-code"). Longer than WIRE_CODE_MAX bytes (the
 * most one request carries) is an error. Returns 0 or -1.
 */
int bench_read_code(const char *path, uint8_t **out, size_t *len, const char *what);

/*
 * Assemble src (NASM, Intel syntax, 64-bit; ';' between lines) into *out
 * (malloc'd, *len bytes). Empty or NULL src: 0 with *out NULL, *len 0.
 * NASM's messages name the snippet's line and show it; code that
 * assembles to nothing, or to more than WIRE_CODE_MAX bytes, is an error.
 * Returns 0 or -1.
 */
int bench_assemble(const char *what, const char *src, uint8_t **out, size_t *len);

#endif
