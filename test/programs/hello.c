/* A program that uses the SDK: text, malloc, time, CPUs, a bp_bench row. */
#include <bareperf.h>

static const char greeting[] = "hello from a loaded program";
static unsigned calls;			/* bss */
int shared_counter = 5;			/* data; -fpic reaches it through the GOT */

static void on_other_cpu(void *arg)
{
	*(volatile unsigned *)arg = bp_cpu() + 100;
}

static void add_up(void *arg, uint64_t iters)
{
	volatile uint64_t *sum = arg;

	for (uint64_t i = 0; i < iters; i++)
		*sum += i;
	calls++;
}

int main(int argc, char **argv)
{
	uint64_t t0 = bp_ns(), sum = 0;
	char *text = malloc(64);

	if (!text)
		return 1;
	snprintf(text, 64, "%s, %d args", greeting, argc);
	puts(text);
	free(text);
	printf("hello: argv[1]=%s cpus=%u cpu=%u counter=%d\n", argc > 1 ? argv[1] : "-",
	       bp_cpus(), bp_cpu(), shared_counter++);
	if (bp_cpus() > 1) {
		volatile unsigned where = 0;
		unsigned other = bp_cpu() ? 0 : 1;
		int e = bp_run_on(other, on_other_cpu, (void *)&where);
		if (!e)
			e = bp_wait(other);
		printf("hello: bp_run_on cpu %u: %d, it ran on cpu %d\n", other, e, (int)where - 100);
	}
	bp_bench("add_up", add_up, (void *)&sum);
	printf("hello: bench called the body %u times, %lu ns in all\n", calls,
	       (unsigned long)(bp_ns() - t0));
	return argc > 1 ? 7 : 3;
}
