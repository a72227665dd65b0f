/* A program that allocates until malloc says no. */
#include <bareperf.h>

int main(void)
{
	unsigned mib = 0;

	while (malloc(1 << 20))
		mib++;
	printf("oom: malloc gave %u MiB before NULL\n", mib);
	return mib ? 0 : 1;
}
