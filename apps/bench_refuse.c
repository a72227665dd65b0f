/*
 * bench_refuse.c — why the harness refused a run: said on the console and
 * kept for bench_refusal (RUN_CODE's reply carries it).
 */
#include "apps/bench_internal.h"

/* Why the last bench_run returned an error, for bench_refusal. */
static char refusal[200];

void bench_refuse(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(refusal, sizeof(refusal), fmt, ap);
	va_end(ap);
	kprintf("bench: %s\n", refusal);
}

const char *bench_refusal(void)
{
	return refusal;
}

void bench_refuse_clear(void)
{
	refusal[0] = 0;
}
