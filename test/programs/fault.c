/*
 * test/programs/fault.c — reads address 8, which is not mapped: its run
 * ends with the kernel's report of the fault, naming main.
 */
#include <bareperf.h>

int main(void)
{
	volatile int *p = (int *)8;

	printf("fault: reading address 8\n");
	return *p;
}
