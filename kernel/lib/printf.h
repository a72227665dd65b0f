/*
 * printf.h — the kernel's formatter (kernel/lib/printf.c).
 *
 * Supports %d %i %u %x %X %o %p %s %c %%, flags '-' '0' '+' ' ' '#',
 * width and precision (also '*'), and the length modifiers hh h l ll z t j.
 * No floating point. Output is always NUL-terminated when size > 0; the
 * return value is the length the full output would have had, as in C99.
 * NMI-safe: yes (no state).
 */
#ifndef BAREPERF_KERNEL_LIB_PRINTF_H
#define BAREPERF_KERNEL_LIB_PRINTF_H

#include <stdarg.h>
#include <stddef.h>

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
/* Format without a length limit, handing the text to sink in pieces. */
int kvprintf_sink(void (*sink)(const char *s, size_t n, void *ctx), void *ctx,
		  const char *fmt, va_list ap);
int ksnprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
