/*
 * test_smp — every CPU the MADT lists comes up and runs work with its own
 * per-CPU data; a panic on one CPU stops and dumps the others.
 *
 *   -- cpus=N        expect N CPUs online, run work on each
 *   -- panic         cpu 1 panics while the others spin; the runner checks
 *                    that every other CPU reports where it was
 *   -- console       cpu 1 holds the console lock: a writer gives up after a
 *                    bounded wait, and the next holder says so
 *   -- parked=N      (boot with ap_wait_ms=0) N CPUs woke, were refused and
 *                    parked without running the kernel; NMIs broadcast to
 *                    them (as the soft PMU and a panic do) leave them parked
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/smp.h"
#include "kernel/trap.h"
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

static volatile u64 got_arg;

static void take_arg(void *arg)
{
	got_arg = (u64)arg;
}

/* x2APIC ICR fence: on Intel every IPI's WRMSR comes after MFENCE;LFENCE,
 * so the target sees the mailbox written before it; AMD needs none. */
static void check_icr_fence(u32 cpu)
{
	bool amd = !strcmp(cpu_features.vendor, "AuthenticAMD") ||
		   !strcmp(cpu_features.vendor, "HygonGenuine");
	bool want = apic_is_x2apic() && !amd;
	u64 f0 = apic_icr_fences();
	u32 right = 0;

	for (u64 i = 1; i <= 100; i++)
		if (!smp_call(cpu, take_arg, (void *)i, true) && got_arg == i)
			right++;
	u64 fences = apic_icr_fences() - f0;
	report(right == 100 && (want ? fences >= 100 : fences == 0),
	       "x2APIC ICR fence: %lu ICR writes fenced over 100 calls (%s, %s), each saw its own "
	       "argument (%u)", fences, apic_is_x2apic() ? "x2APIC" : "xAPIC", cpu_features.vendor,
	       right);
}

static volatile u32 release, held, ran;

static void hold_irqs_off(void *arg)
{
	(void)arg;
	irq_disable();
	held = 1;
	while (!release)
		cpu_relax();
}

static void mark_ran(void *arg)
{
	(void)arg;
	ran++;
}

/* A CPU that never takes a call (interrupts off): smp_call(wait) gives up
 * after SMP_CALL_TAKE_MS with -E_TIMEDOUT and withdraws the call, which
 * never runs; once the CPU is back, calls work again. */
static void check_call_bound(u32 cpu)
{
	release = held = ran = 0;
	smp_call(cpu, hold_irqs_off, NULL, false);
	while (!held)
		cpu_relax();
	u64 t0 = rdtsc_ordered();
	int err = smp_call(cpu, mark_ran, NULL, true);
	u64 ms = tsc_to_ns(rdtsc_ordered() - t0) / 1000000;
	release = 1;
	while (!smp_call_done(cpu))
		cpu_relax();
	report(err == -E_TIMEDOUT && ms >= SMP_CALL_TAKE_MS && ms < 4 * SMP_CALL_TAKE_MS,
	       "smp_call to a CPU with interrupts off gives up after %lu ms: %s", ms,
	       smp_call_why(err));
	report(ran == 0, "the withdrawn call never ran");
	report(!smp_call(cpu, mark_ran, NULL, true) && ran == 1,
	       "the CPU takes calls again once its interrupts are on");
}

static void hold_console(void *arg)
{
	(void)arg;
	if (!console_lock_output())
		return;
	held = 1;
	while (!release)
		cpu_relax();
	console_unlock_output();
}

/* The console lock held by a CPU that does not let go: a writer gives up
 * after a bounded wait and writes nothing; the next holder says who
 * waited for whom (the runner checks that line). */
static void check_console_lock(void)
{
	if (smp_cpus() < 2) {
		report(false, "the console lock test needs at least 2 CPUs");
		return;
	}
	release = held = 0;
	smp_call(1, hold_console, NULL, false);
	while (!held)
		cpu_relax();
	u64 t0 = rdtsc_ordered();
	int n = kprintf("this line waits for cpu 1 and is dropped\n");
	u64 ms = tsc_to_ns(rdtsc_ordered() - t0) / 1000000;
	release = 1;
	while (!smp_call_done(1))
		cpu_relax();
	report(n == 0 && ms >= 1000 && ms < 60000,
	       "a writer gave up on the console lock held by cpu 1 after %lu ms", ms);
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
		check_icr_fence(n - 1);
		check_call_bound(n - 1);
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

static void check_parked(u64 want)
{
	u64 t0 = rdtsc_ordered();

	while (smp_parked() < want && tsc_to_ns(rdtsc_ordered() - t0) < 10000000000ul)
		cpu_relax();
	report(smp_cpus() == 1, "no other CPU admitted: %u online", smp_cpus());
	report(smp_parked() == want, "%u CPUs parked in the trampoline (expected %lu), after "
	       "%lu ms", smp_parked(), want, tsc_to_ns(rdtsc_ordered() - t0) / 1000000);
	u64 nmis = this_cpu()->nmi_count;
	for (int i = 0; i < 100; i++)
		apic_send_ipi(0, APIC_DM_NMI | APIC_DEST_ALL);
	t0 = rdtsc_ordered();
	while (this_cpu()->nmi_count < nmis + 100 && tsc_to_ns(rdtsc_ordered() - t0) < 2000000000ul)
		cpu_relax();
	report(this_cpu()->nmi_count >= nmis + 1,
	       "100 NMIs broadcast to every CPU: the boot CPU took %lu, the parked CPUs "
	       "stayed parked", this_cpu()->nmi_count - nmis);
	report(smp_parked() == want, "still %u parked", smp_parked());
}

static int test_smp_main(int argc, char **argv)
{
	const char *cpus = test_arg(argc, argv, "cpus");
	const char *park = test_arg(argc, argv, "parked");
	u64 want = 1;

	if (park) {
		parse_u64(park, &want);
		check_parked(want);
		return report_summary();
	}

	if (argc > 1 && !strcmp(argv[1], "console")) {
		check_console_lock();
		return report_summary();
	}
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
