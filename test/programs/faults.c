/* A program that faults as its argument says: null, ud2, div. */
#include <bareperf.h>

static volatile int zero;

static __attribute__((noinline)) int crash_null(void)
{
	return *(volatile int *)(uintptr_t)zero;
}

static __attribute__((noinline)) int crash_div(void)
{
	return 100 / zero;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 1;
	printf("faults: about to %s\n", argv[1]);
	if (!strcmp(argv[1], "null"))
		return crash_null();
	if (!strcmp(argv[1], "div"))
		return crash_div();
	if (!strcmp(argv[1], "ud2"))
		__asm__ volatile("ud2");
	return 2;
}
