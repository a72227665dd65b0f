/*
 * tools/util/util.h — small helpers every part of the host tool uses.
 *
 * Errors in tools/: a function that can fail returns 0 (or a count) or a
 * negative code, and writes one line of text, without a trailing newline,
 * into the caller's err buffer; the command prints it, naming itself
 * ("bareperf record: ..."). fail() and fail_code() are that last step.
 */
#ifndef BAREPERF_TOOLS_UTIL_UTIL_H
#define BAREPERF_TOOLS_UTIL_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/*
 * Format one line into err (errlen bytes; err may be NULL) and return
 * code (a module's own negative error code). Inline, so the modules that
 * only need this (the codec's capture files, the ELF reader) link
 * without util.c.
 */
__attribute__((format(printf, 4, 5)))
static inline int fail_code(int code, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

/* The same, returning -1. */
#define fail(err, errlen, ...)	fail_code(-1, (err), (errlen), __VA_ARGS__)

/* Seconds on CLOCK_MONOTONIC: for timeouts and rates. */
double now_s(void);

/* Copy the file from to to (created or truncated, mode 0644). 0, or -1 with err. */
int copy_file(const char *from, const char *to, char *err, size_t errlen);

#endif
