/* A program that never returns: the watchdog stops it. */
#include <bareperf.h>

static __attribute__((noinline)) void spin_forever(volatile uint64_t *n)
{
	for (;;)
		(*n)++;
}

int main(void)
{
	uint64_t n = 0;

	puts("hang: spinning");
	spin_forever(&n);
	return 0;
}
