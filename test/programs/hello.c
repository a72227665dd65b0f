/*
 * test/programs/hello.c — a program of the user's own, as `bareperf record
 * -- hello.c` sends it: prints its arguments and the sum of a loop.
 */
#include <bareperf.h>

/* Sums i * 3 for i < n; noinline, so the profile can name it. */
__attribute__((noinline)) long work(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += i * 3;
	return s;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		printf("hello: argument %d: %s\n", i, argv[i]);
	printf("hello: work(1000000) = %ld\n", work(1000000));
	return 0;
}
