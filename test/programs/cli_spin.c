/* A program that turns interrupts off and never returns: no tick reaches
 * its CPU, the watchdog's NMI stops it. */
#include <bareperf.h>

static __attribute__((noinline)) void spin_masked(volatile uint64_t *n)
{
	__asm__ volatile("cli");
	for (;;)
		(*n)++;
}

int main(void)
{
	uint64_t n = 0;

	puts("cli_spin: spinning with interrupts off");
	spin_masked(&n);
	return 0;
}
