/*
 * tools/util/trace/internal.h — what the trace decoder's files share and
 * nothing outside tools/util/trace/ uses: the code image's layout
 * (image.c builds it, insn.c caches decoded instructions in it), memory
 * that never fails (the tools exit on exhaustion), the one-line error
 * of trace.h's contract, and the hash the instruction tables use.
 */
#ifndef BAREPERF_TOOLS_UTIL_TRACE_INTERNAL_H
#define BAREPERF_TOOLS_UTIL_TRACE_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <capstone/capstone.h>

#include "tools/util/trace/trace.h"

/* Instruction cache (insn.c): open addressing on ip, entries in stable chunks. */
#define ARENA_CHUNK	4096

struct trace_image {
	struct symtab *syms;		/* the symbols; the code too, loaded from a file */
	struct {			/* trace_image_mem: the code, copied */
		uint64_t vaddr;
		size_t len;
		uint8_t *bytes;
	} mem;

	struct trace_insn **tab;	/* hash table of pointers */
	size_t tab_cap, tab_n;
	struct trace_insn **chunks;
	size_t nchunks, chunk_used;
	csh cs;
	cs_insn *csi;
	bool cs_ok;
};

static inline void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q) {
		fprintf(stderr, "bareperf: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return q;
}

#define GROW(arr, n, cap) do {							\
	if ((n) == (cap)) {							\
		(cap) = (cap) ? 2 * (cap) : 16;					\
		(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));		\
	}									\
} while (0)

static inline void seterr(char *err, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static inline void seterr(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (!err || !n)
		return;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

static inline size_t hash_ip(uint64_t ip, size_t cap)
{
	ip ^= ip >> 29;
	ip *= 0xbf58476d1ce4e5b9ull;
	ip ^= ip >> 32;
	return (size_t)ip & (cap - 1);
}

#endif
