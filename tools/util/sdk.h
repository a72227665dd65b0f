/*
 * tools/util/sdk.h — the compiler flags of a program built against the
 * SDK header bareperf.h to run on the bareperf kernel: the one list that
 * `bareperf cflags` prints and that the commands compiling a user's C
 * file pass to the compiler.
 *
 * The code shares the kernel's address space and conventions: no PIC,
 * the kernel code model, no red zone (interrupts run on the same stack),
 * frame pointers for the profiler's call chains, no unwind tables. SSE2
 * is allowed, as in apps/: the kernel enables it and its own code never
 * touches vector state (kernel/cpu.c).
 */
#ifndef BAREPERF_TOOLS_UTIL_SDK_H
#define BAREPERF_TOOLS_UTIL_SDK_H

#include <stddef.h>

/* The flags, then -I<the directory holding bareperf.h>. */
#define SDK_NCFLAGS	13

/*
 * argv[0 .. SDK_NCFLAGS-1] get the flags, argv[SDK_NCFLAGS] NULL (argv
 * holds SDK_NCFLAGS + 1 entries). The -I flag names includedir and is
 * written into ibuf (ibuflen bytes); the others are constant strings.
 * includedir NULL: the one this binary finds (tools/util/paths.h).
 * Returns SDK_NCFLAGS, or -1 when includedir does not fit in ibuf.
 */
int sdk_cflags_argv(const char **argv, const char *includedir, char *ibuf, size_t ibuflen);

#endif
