/* report.c — TAP output for in-guest tests (see report.h). */
#include "kernel/kernel.h"
#include "test/guest/report.h"

static unsigned npass, nfail, nskip;

static void line(const char *status, const char *directive, const char *fmt, va_list ap)
{
	char msg[200];

	kvsnprintf(msg, sizeof(msg), fmt, ap);
	kprintf("%s %u - %s%s\n", status, npass + nfail + nskip, msg, directive);
}

void report(bool pass, const char *fmt, ...)
{
	va_list ap;

	pass ? npass++ : nfail++;
	va_start(ap, fmt);
	line(pass ? "ok" : "not ok", "", fmt, ap);
	va_end(ap);
}

void report_skip(const char *fmt, ...)
{
	va_list ap;
	char msg[200];

	nskip++;
	va_start(ap, fmt);
	kvsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	kprintf("ok %u - %s # SKIP\n", npass + nfail + nskip, msg);
}

int report_summary(void)
{
	kprintf("1..%u\n# %u passed, %u failed, %u skipped\n",
		npass + nfail + nskip, npass, nfail, nskip);
	return nfail ? EXIT_FAIL : EXIT_OK;
}

const char *test_arg(int argc, char **argv, const char *key)
{
	size_t n = strlen(key);

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], key, n) && argv[i][n] == '=')
			return argv[i] + n + 1;
	return NULL;
}
