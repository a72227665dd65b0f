/*
 * test/programs/undef.c — calls a function the kernel does not export:
 * the LOAD is refused, naming it.
 */
#include <bareperf.h>

void bp_no_such_function(void);

int main(void)
{
	bp_no_such_function();
	return 0;
}
