/* A function bench calls that reads through a null pointer: the snippet's
 * fault, reported naming it; the machine measures the next snippet. */
#include <bareperf.h>

static volatile uintptr_t zero;

__attribute__((noinline)) int deref_null(void)
{
	return *(volatile int *)zero;
}

int main(void)
{
	return deref_null();
}
