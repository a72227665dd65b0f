/*
 * test/programs/hot_loops.c — a program for the symbol tests: two loops a
 * profile finds, one called from the other, in a plain C object built
 * with the SDK flags. main lands in .text.startup, the loops in .text:
 * each section at st_value 0 of its own, so an address named right
 * proves the sections were placed where the kernel put them.
 */
static volatile unsigned long hot_sink;

__attribute__((noinline)) void hot_inner(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		hot_sink += i * 3;
}

__attribute__((noinline)) void hot_outer(unsigned long n)
{
	for (int k = 0; k < 64; k++)
		hot_inner(n);
}

int main(void)
{
	hot_outer(100000);
	return (int)(hot_sink & 1);
}
