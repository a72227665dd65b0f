/*
 * string.c — memory and string helpers for a kernel with no libc.
 *
 * Compiled into the kernel with -ffreestanding, and into a host test
 * (test/host/test_klib.c) with the names prefixed so they do not collide
 * with the host libc (KLIB_HOST_TEST, kernel/lib/klib_rename.h).
 */
#ifdef KLIB_HOST_TEST
#include "kernel/lib/klib_rename.h"
#endif
#include "kernel/lib/string.h"

/*
 * Eight bytes a step, then the tail a byte at a time: rep movsb alone is
 * as fast on a CPU with ERMSB, but an emulator (QEMU's TCG) runs a rep
 * string instruction one step at a time, and under -icount counts every
 * step as an instruction.
 *
 * In pieces of REP_PIECE bytes: a CPU takes an interrupt between the steps
 * of a rep instruction, but QEMU's TCG (not under -icount) runs up to
 * 65536 steps before it looks, the 512 KiB of a rep movsq in about 250 us
 * on a 2.5 GHz host, and holds an NMI (a soft-PMU tick) off that long. A
 * piece bounds the wait to some 10 us; on hardware it costs a loop step.
 */
#define REP_PIECE	(16u << 10)

void *memcpy(void *dst, const void *src, size_t n)
{
	void *d = dst;
	size_t q = n / 8, r = n % 8;

	while (q) {
		size_t k = q < REP_PIECE / 8 ? q : REP_PIECE / 8;
		q -= k;
		asm volatile("rep movsq" : "+D"(d), "+S"(src), "+c"(k) : : "memory");
	}
	asm volatile("rep movsb" : "+D"(d), "+S"(src), "+c"(r) : : "memory");
	return dst;
}

void *memmove(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d == s || n == 0)
		return dst;
	if (d < s || d >= s + n)
		return memcpy(dst, src, n);
	while (n--)
		d[n] = s[n];
	return dst;
}

/* As memcpy: eight bytes a step, then the tail, in pieces. */
void *memset(void *dst, int c, size_t n)
{
	void *d = dst;
	size_t q = n / 8, r = n % 8;
	unsigned long v = (unsigned char)c * 0x0101010101010101ul;

	while (q) {
		size_t k = q < REP_PIECE / 8 ? q : REP_PIECE / 8;
		q -= k;
		asm volatile("rep stosq" : "+D"(d), "+c"(k) : "a"(v) : "memory");
	}
	asm volatile("rep stosb" : "+D"(d), "+c"(r) : "a"(v) : "memory");
	return dst;
}

int memcmp(const void *a, const void *b, size_t n)
{
	const unsigned char *x = a, *y = b;

	for (; n; n--, x++, y++)
		if (*x != *y)
			return *x - *y;
	return 0;
}

size_t strlen(const char *s)
{
	const char *p = s;

	while (*p)
		p++;
	return p - s;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;

	while (n < max && s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t n)
{
	for (; n; n--, a++, b++) {
		if (*a != *b)
			return (unsigned char)*a - (unsigned char)*b;
		if (!*a)
			break;
	}
	return 0;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

size_t strlcpy(char *dst, const char *src, size_t size)
{
	size_t len = strlen(src);

	if (size) {
		size_t n = len < size - 1 ? len : size - 1;
		memcpy(dst, src, n);
		dst[n] = 0;
	}
	return len;
}

int parse_u64(const char *s, uint64_t *out)
{
	unsigned base = 10;
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s)
		return -1;
	for (; *s; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return -1;
		if (v > (UINT64_MAX - d) / base)
			return -1;
		v = v * base + d;
	}
	*out = v;
	return 0;
}
