/*
 * test/programs/big.c — about 100 KB of object: how long a LOAD takes on a
 * serial line.
 */
#include <bareperf.h>

/* One byte set: the whole array is in the object's .rodata. */
const unsigned char blob[100 * 1024] = { 1 };

int main(void)
{
	unsigned sum = 0;

	for (unsigned i = 0; i < sizeof(blob); i++)
		sum += blob[i];
	printf("big: sum %u\n", sum);
	return sum == 1 ? 0 : 1;
}
