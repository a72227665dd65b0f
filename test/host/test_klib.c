/*
 * test_klib — the kernel's printf and string functions against the host
 * libc, which is the reference for what C99 says they do.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/lib/klib_rename.h"
#include "kernel/lib/string.h"
#include "kernel/lib/printf.h"

/* Format with both and compare text and return value. */
#define SAME(fmt, ...) do {						\
	char want[256], got[256];					\
	int nw = snprintf(want, sizeof(want), fmt, __VA_ARGS__);	\
	int ng = ksnprintf(got, sizeof(got), fmt, __VA_ARGS__);		\
	assert_string_equal(got, want);					\
	assert_int_equal(ng, nw);					\
} while (0)

static void printf_integers(void **state)
{
	(void)state;
	SAME("%d %i %u", 0, -1, 42u);
	SAME("%d", INT32_MIN);
	SAME("%ld %lu", (long)INT64_MIN, (unsigned long)UINT64_MAX);
	SAME("%lld %llx", -5ll, 0xdeadbeefcafeull);
	SAME("%zu %zd", (size_t)12345, (ssize_t)-9);
	SAME("%hd %hu %hhd %hhu", (short)-3, (unsigned short)65535, (signed char)-128, (unsigned char)255);
	SAME("%x %X %o", 0xabcu, 0xabcu, 0777u);
	SAME("%#x %#X %#o %#x %#o", 255u, 255u, 8u, 0u, 0u);
}

static void printf_width_precision_flags(void **state)
{
	(void)state;
	SAME("[%5d][%-5d][%05d][%+d][% d]", 42, 42, 42, 42, 42);
	SAME("[%05d][%+05d]", -42, 42);
	SAME("[%.3d][%8.3d][%-8.3d][%.0d]", 7, 7, 7, 0);
	SAME("[%016lx][%-16lx|]", 0x1234ul, 0x1234ul);
	SAME("[%*d][%-*d][%.*d]", 6, 1, 6, 1, 4, 1);
	SAME("[%*d]", -6, 1);
	SAME("[%#010x][%#.6x]", 0x1fu, 0x1fu);
}

static void printf_strings_chars(void **state)
{
	(void)state;
	SAME("[%s][%10s][%-10s][%.2s][%10.2s]", "abc", "abc", "abc", "abc", "abc");
	SAME("[%c][%3c][%-3c]", 'x', 'y', 'z');
	SAME("100%% [%s]", "");
	SAME("%p", (void *)0x1234);
}

static void printf_truncation(void **state)
{
	char buf[8];
	(void)state;

	memset(buf, 'X', sizeof(buf));
	assert_int_equal(ksnprintf(buf, sizeof(buf), "%s", "hello world"), 11);
	assert_string_equal(buf, "hello w");
	assert_int_equal(ksnprintf(buf, 1, "%d", 12345), 5);
	assert_int_equal(buf[0], 0);
	buf[0] = 'Q';
	assert_int_equal(ksnprintf(buf, 0, "%d", 12345), 5);
	assert_int_equal(buf[0], 'Q');		/* size 0: nothing written */
}

static char sunk[4096];
static size_t sunk_len;
static unsigned sink_calls;

static void sink(const char *s, size_t n, void *ctx)
{
	(void)ctx;
	assert_true(sunk_len + n < sizeof(sunk));
	(memcpy)(sunk + sunk_len, s, n);
	sunk_len += n;
	sink_calls++;
}

static int sink_printf(const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvprintf_sink(sink, NULL, fmt, ap);
	va_end(ap);
	return n;
}

static void printf_sink_has_no_length_limit(void **state)
{
	char big[1000], want[2100];
	(void)state;

	(memset)(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	sunk_len = 0;
	sink_calls = 0;
	int n = sink_printf("<%s|%d|%s>", big, 12345, big);
	snprintf(want, sizeof(want), "<%s|%d|%s>", big, 12345, big);
	assert_int_equal(n, strlen(want));
	assert_int_equal(sunk_len, strlen(want));
	assert_memory_equal(sunk, want, sunk_len);
	assert_true(sink_calls > 1);		/* it streamed, in pieces */
}

static void string_functions(void **state)
{
	char a[64], b[64];
	(void)state;

	for (size_t n = 0; n < 40; n++) {
		(memset)(a, 0, sizeof(a));
		(memset)(b, 0x55, sizeof(b));
		assert_ptr_equal(memcpy(a + 1, "0123456789abcdefghijklmnopqrstuvwxyzABCDEF", n), a + 1);
		assert_memory_equal(a + 1, "0123456789abcdefghijklmnopqrstuvwxyzABCDEF", n);
		assert_int_equal(a[n + 1], 0);		/* no overrun */
		assert_ptr_equal(memset(b, 'z', n), b);
		assert_int_equal(b[n], 0x55);
	}
	/* memmove both directions, overlapping */
	strcpy(a, "0123456789");
	memmove(a + 2, a, 8);
	assert_memory_equal(a, "0101234567", 10);
	strcpy(a, "0123456789");
	memmove(a, a + 2, 8);
	assert_memory_equal(a, "2345678989", 10);

	assert_true(memcmp("abc", "abd", 3) < 0);
	assert_true(memcmp("abd", "abc", 3) > 0);
	assert_int_equal(memcmp("abc", "abd", 2), 0);
	assert_int_equal(strlen(""), 0);
	assert_int_equal(strlen("abc"), 3);
	assert_int_equal(strnlen("abcdef", 3), 3);
	assert_int_equal(strcmp("a", "a"), 0);
	assert_true(strcmp("a", "b") < 0);
	assert_true(strcmp("\xff", "a") > 0);		/* compares as unsigned char */
	assert_int_equal(strncmp("abcX", "abcY", 3), 0);
	assert_true(strncmp("abcX", "abcY", 4) < 0);
	const char *h = "hello";
	assert_ptr_equal(strchr(h, 'l'), h + 2);
	assert_ptr_equal(strchr(h, 0), h + 5);
	assert_null(strchr(h, 'z'));
	assert_int_equal(strlcpy(a, "truncate me", 5), 11);
	assert_string_equal(a, "trun");
}

static void parse_numbers(void **state)
{
	uint64_t v;
	(void)state;

	assert_int_equal(parse_u64("0", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("115200", &v), 0);
	assert_int_equal(v, 115200);
	assert_int_equal(parse_u64("0x3F8", &v), 0);
	assert_int_equal(v, 0x3f8);
	assert_int_equal(parse_u64("18446744073709551615", &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(parse_u64("18446744073709551616", &v), -1);	/* overflow */
	assert_int_equal(parse_u64("0x10000000000000000", &v), -1);
	assert_int_equal(parse_u64("", &v), -1);
	assert_int_equal(parse_u64("0x", &v), -1);
	assert_int_equal(parse_u64("12a", &v), -1);
	assert_int_equal(parse_u64("-1", &v), -1);
	assert_int_equal(parse_u64("0xfg", &v), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(printf_integers),
		cmocka_unit_test(printf_width_precision_flags),
		cmocka_unit_test(printf_strings_chars),
		cmocka_unit_test(printf_truncation),
		cmocka_unit_test(printf_sink_has_no_length_limit),
		cmocka_unit_test(string_functions),
		cmocka_unit_test(parse_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
