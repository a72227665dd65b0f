/* string.h — the few libc string functions the kernel has (kernel/lib/string.c). */
#ifndef BAREPERF_KERNEL_LIB_STRING_H
#define BAREPERF_KERNEL_LIB_STRING_H

#include <stddef.h>
#include <stdint.h>

void *memcpy(void *dst, const void *src, size_t n);
void *memmove(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t n);
char *strchr(const char *s, int c);
size_t strlcpy(char *dst, const char *src, size_t size);
/* Parse an unsigned number: decimal, or hex with 0x. Returns 0, or -1 if
 * s is empty, has other characters, or overflows 64 bits. */
int parse_u64(const char *s, uint64_t *out);

#endif
