/*
 * test/programs/addchain.c — a function of known cost for `bareperf bench
 * -code_c addchain.c -function addchain`: 100 dependent adds.
 */
#include <bareperf.h>

void addchain(void)
{
	__asm__ volatile(".rept 100\n\tadd %%rax, %%rax\n\t.endr" ::: "rax");
}

int main(void)
{
	addchain();
	return 0;
}
