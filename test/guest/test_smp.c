/*
 * test_smp — every CPU the MADT lists comes up and runs work with its own
 * per-CPU data; a panic on one CPU stops and dumps the others.
 *
 *   -- cpus=N        expect N CPUs online, run work on each
 *   -- panic         cpu 1 panics while the others spin; the runner checks
 *                    that every other CPU reports where it was
 */
#include "kernel/kernel.h"
#include "kernel/apic.h"
#include "kernel/percpu.h"
#include "test/guest/report.h"

#define MAX_TEST_CPUS 64

struct seen {
	u32 cpu, apic_id;
	u64 self;
	u64 sum;
};
static struct seen seen[MAX_TEST_CPUS];
static volatile u32 arrived;

static void whoami(void *arg)
{
	struct percpu *pc = this_cpu();
	struct seen *s = &seen[pc->cpu];
	u64 sum = 0;

	(void)arg;
	for (u64 i = 0; i <= 100000 + pc->cpu; i++)
		sum += i;
	s->cpu = pc->cpu;
	s->apic_id = apic_id();
	s->self = (u64)pc->self;
	s->sum = sum;
	__atomic_add_fetch(&arrived, 1, __ATOMIC_RELAXED);
}

static void check_cpus(u64 want)
{
	u32 n = smp_cpus();

	report(n == want, "%u CPUs online (expected %lu)", n, want);
	arrived = 0;
	memset(seen, 0, sizeof(seen));
	smp_call_all(whoami, NULL);
	report(arrived == n, "smp_call_all ran on %u CPUs", arrived);
	bool distinct = true, right = true;
	for (u32 i = 0; i < n; i++) {
		u64 k = 100000 + i;
		right &= seen[i].cpu == i && seen[i].sum == k * (k + 1) / 2 && seen[i].self;
		for (u32 j = 0; j < i; j++)
			distinct &= seen[i].apic_id != seen[j].apic_id && seen[i].self != seen[j].self;
	}
	report(right, "each CPU found its own index through GS and computed its own sum");
	report(distinct, "APIC ids and per-CPU blocks are distinct");

	if (n > 1) {
		arrived = 0;
		int err = smp_call(n - 1, whoami, NULL, true);
		report(!err && arrived == 1 && seen[n - 1].cpu == n - 1,
		       "smp_call runs a function on the last CPU (%u) and waits", n - 1);
		report(smp_call(n + 5, whoami, NULL, true) == -E_NOENT,
		       "smp_call to a CPU that does not exist fails cleanly");
	} else {
		report_skip("one CPU: no cross-CPU calls to test");
	}
}

static volatile u32 spinning;

static void __attribute__((noinline)) spin_forever(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&spinning, 1, __ATOMIC_RELAXED);
	for (;;)
		cpu_relax();
}

static void __attribute__((noinline)) panic_here(void *arg)
{
	(void)arg;
	while (spinning < smp_cpus() - 2)
		cpu_relax();
	panic("test_smp: deliberate panic on cpu %u", this_cpu()->cpu);
}

static int test_smp_main(int argc, char **argv)
{
	const char *cpus = test_arg(argc, argv, "cpus");
	u64 want = 1;

	if (argc > 1 && !strcmp(argv[1], "panic")) {
		if (smp_cpus() < 2) {
			report(false, "the panic test needs at least 2 CPUs");
			return report_summary();
		}
		for (u32 i = 2; i < smp_cpus(); i++)
			smp_call(i, spin_forever, NULL, false);
		smp_call(1, panic_here, NULL, false);
		spin_forever(NULL);
	}
	if (cpus)
		parse_u64(cpus, &want);
	check_cpus(want);
	return report_summary();
}

APP(test_smp, "guest test: CPUs, per-CPU data, cross-CPU calls, stop on panic",
    test_smp_main, APP_TEST);
