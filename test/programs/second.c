/* A second program, loaded beside the first; its exit status says which
 * build of it ran (VERSION, given with -D when it replaces itself). */
#include <bareperf.h>

#ifndef VERSION
#define VERSION 1
#endif

static int table[256];

static int fill(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += table[i & 255] = i * VERSION;
	return s;
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("second: version %d, sum %d\n", VERSION, fill(1000 + argc));
	return 10 + VERSION;
}
