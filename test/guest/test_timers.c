/*
 * test_timers — clocks, timer interrupts and NMIs (issue: kernel interrupt
 * and timing machinery).
 *
 *   -- rates      TSC frequency sane and stable; APIC timer and HPET NMI
 *                 rates within 10 % of what was asked
 *   -- nmi        HPET NMIs interrupt code running with interrupts off and
 *                 report RIPs inside it; NMIs landing inside an ordinary
 *                 interrupt handler leave its state intact
 *   -- icount     (under -icount shift=0) the number of HPET NMIs during a
 *                 run equals elapsed virtual time / period, exactly
 *
 * Run with events=none: the default sampling run holds the HPET NMI.
 */
#include "kernel/kernel.h"
#include "kernel/apic.h"
#include "kernel/percpu.h"
#include "kernel/trap.h"
#include "test/guest/report.h"

static volatile u64 timer_irqs;

static void count_timer(struct trap_frame *f)
{
	(void)f;
	timer_irqs++;
	apic_eoi();
}

/* Busy-wait for `ns` by the HPET, interrupts as the caller left them. */
static void hpet_wait_ns(u64 ns)
{
	u64 end = hpet_read() + hpet_hz() * ns / 1000000000ul;

	while (hpet_read() < end)
		cpu_relax();
}

/* The same by the TSC: no MMIO, so QEMU's timer thread is not starved by
 * a vCPU polling the emulated HPET (which costs it whole HPET periods). */
static void tsc_wait_ns(u64 ns)
{
	u64 t0 = rdtsc_ordered();

	while (tsc_to_ns(rdtsc_ordered() - t0) < ns)
		cpu_relax();
}

static void check_tsc(void)
{
	report(tsc_hz > 100000000ul && tsc_hz < 10000000000ul,
	       "TSC frequency %lu Hz from %s is between 100 MHz and 10 GHz", tsc_hz, tsc_hz_source);
	u64 rate[2];
	for (int i = 0; i < 2; i++) {
		u64 h0 = hpet_read(), t0 = rdtsc_ordered();
		hpet_wait_ns(20000000);
		u64 h1 = hpet_read(), t1 = rdtsc_ordered();
		rate[i] = (t1 - t0) * hpet_hz() / (h1 - h0);
	}
	u64 diff = rate[0] > rate[1] ? rate[0] - rate[1] : rate[1] - rate[0];
	report(diff * 100 < rate[0] * 2, "TSC rate stable over two 20 ms windows (%lu, %lu Hz)",
	       rate[0], rate[1]);
}

static void check_apic_timer(void)
{
	const u64 hz = 1000, ms = 100;
	u64 count = apic_timer_hz() / hz;

	trap_set_handler(VEC_APIC_TIMER, count_timer);
	timer_irqs = 0;
	apic_timer_periodic(count);
	irq_enable();
	tsc_wait_ns(ms * 1000000);
	irq_disable();
	apic_timer_stop();
	u64 want = hz * ms / 1000;
	report(timer_irqs * 10 >= want * 9 && timer_irqs * 10 <= want * 11,
	       "APIC timer periodic at %lu Hz: %lu interrupts in %lu ms (want %lu +-10%%)",
	       hz, timer_irqs, ms, want);

	timer_irqs = 0;
	apic_timer_oneshot(count);
	irq_enable();
	hpet_wait_ns(20000000);
	irq_disable();
	report(timer_irqs == 1, "APIC timer one-shot fires exactly once (%lu)", timer_irqs);

	if (cpu_features.tsc_deadline) {
		timer_irqs = 0;
		apic_timer_deadline(rdtsc() + tsc_hz / 1000);
		irq_enable();
		hpet_wait_ns(20000000);
		irq_disable();
		report(timer_irqs == 1, "APIC timer TSC-deadline mode fires once (%lu)", timer_irqs);
		apic_timer_stop();
	} else {
		report_skip("CPU has no TSC-deadline mode");
	}
}

#define MAX_SAMPLES 256
static volatile u64 nmi_rips[MAX_SAMPLES];
static volatile u32 nmi_samples;

static void record_rip(struct trap_frame *f, void *arg)
{
	(void)arg;
	if (nmi_samples < MAX_SAMPLES)
		nmi_rips[nmi_samples] = f->rip;
	nmi_samples++;
}

static void check_nmi_rate(void)
{
	const u64 period_ns = 1000000, ms = 100;
	u64 ticks = hpet_hz() * period_ns / 1000000000ul;

	nmi_samples = 0;
	int err = hpet_nmi_start(ticks, apic_id(), record_rip, NULL);
	report(err == 0, "HPET NMI routed through the IOAPIC (err %d)", err);
	if (err)
		return;
	tsc_wait_ns(ms * 1000000);
	hpet_nmi_stop();
	u64 want = ms * 1000000 / period_ns, got = hpet_nmi_count();
	report(got * 10 >= want * 9 && got * 10 <= want * 11,
	       "HPET NMI every %lu us: %lu NMIs in %lu ms (want %lu +-10%%)",
	       period_ns / 1000, got, ms, want);
	report(this_cpu()->nmi_unclaimed == 0, "no unclaimed NMIs (%lu)", this_cpu()->nmi_unclaimed);
}

/* A loop with interrupts off: NMIs must still land here. */
static u64 __attribute__((noinline)) spin_with_irqs_off(u64 n)
{
	u64 x = 0;

	for (u64 i = 0; i < n; i++)
		asm volatile("add %1, %0" : "+r"(x) : "r"(i));
	return x;
}

static void check_nmi_in_cli(void)
{
	u64 ticks = hpet_hz() / 5000;		/* every 200 us */
	u64 off, size;
	u64 func = ksym_address("spin_with_irqs_off");

	ksym_lookup(func, &off, &size);
	nmi_samples = 0;
	irq_disable();
	hpet_nmi_start(ticks, apic_id(), record_rip, NULL);
	u64 t0 = rdtsc_ordered();
	while (nmi_samples < 20 && tsc_to_ns(rdtsc_ordered() - t0) < 1000000000ul)
		spin_with_irqs_off(100000);
	hpet_nmi_stop();
	u32 inside = 0, n = MIN(nmi_samples, (u32)MAX_SAMPLES);
	for (u32 i = 0; i < n; i++)
		inside += nmi_rips[i] >= func && nmi_rips[i] < func + size;
	report(n >= 20, "NMIs arrive while interrupts are disabled (%u)", n);
	/* The loop is nearly all the time spent; a sample or two may land in
	 * the caller between calls. */
	report(inside * 10 >= n * 8, "%u of %u NMI RIPs inside spin_with_irqs_off", inside, n);
}

/* An interrupt handler that runs long enough for NMIs to land inside it
 * and checks that its own registers and stack survive them. */
static volatile u32 irq_corrupt, irq_runs;
static void long_handler(struct trap_frame *f)
{
	(void)f;
	u64 a = 0x1111, b = 0x2222, c = 0x3333, d = 0x4444;
	volatile u64 canary[8];

	for (int i = 0; i < 8; i++)
		canary[i] = 0xc0ffee00 + i;
	/* Rounds of 2M iterations until an NMI has landed, bounded by 1 s of
	 * TSC time: on a loaded host one round can pass between two HPET
	 * NMIs (the timer runs on QEMU's main thread). */
	u32 seen = nmi_samples;
	u64 rounds = 0, limit = tsc_hz ? tsc_hz : 1000000000ul, t0 = rdtsc_ordered();
	do {
		for (u64 i = 0; i < 2000000; i++) {
			asm volatile("" : "+r"(a), "+r"(b), "+r"(c), "+r"(d));
			a += 1; b += 2; c += 3; d += 4;
		}
		rounds++;
	} while (nmi_samples == seen && rdtsc_ordered() - t0 < limit);
	for (int i = 0; i < 8; i++)
		irq_corrupt |= canary[i] != 0xc0ffee00 + (u64)i;
	irq_corrupt |= a != 0x1111 + 2000000 * rounds || b != 0x2222 + 4000000 * rounds ||
		       c != 0x3333 + 6000000 * rounds || d != 0x4444 + 8000000 * rounds;
	irq_runs++;
	apic_eoi();
}

static void check_nmi_nesting(void)
{
	u64 func = ksym_address("long_handler"), off, size;

	ksym_lookup(func, &off, &size);
	trap_set_handler(VEC_APIC_TIMER, long_handler);
	irq_corrupt = irq_runs = 0;
	nmi_samples = 0;
	hpet_nmi_start(hpet_hz() / 20000, apic_id(), record_rip, NULL);	/* 50 us */
	apic_timer_oneshot(1000);
	irq_enable();
	while (!irq_runs)
		cpu_relax();
	irq_disable();
	hpet_nmi_stop();
	u32 inside = 0, n = MIN(nmi_samples, (u32)MAX_SAMPLES);
	for (u32 i = 0; i < n; i++)
		inside += nmi_rips[i] >= func && nmi_rips[i] < func + size;
	report(inside > 0, "%u NMIs landed inside the interrupt handler", inside);
	report(!irq_corrupt, "the interrupt handler's registers and stack survived them");
	trap_set_handler(VEC_APIC_TIMER, count_timer);
}

/*
 * Under -icount shift=0 a TSC tick is one retired instruction and one
 * virtual nanosecond, and the HPET counts that virtual time at 100 MHz:
 * the run is deterministic and its counts exact.
 */
static volatile u64 loop_tsc;			/* the loop's latest rdtsc */
static volatile u64 nmi_at_hpet[MAX_SAMPLES];
static volatile u64 nmi_entry_cost, nmi_exit_start;

static void record_hpet(struct trap_frame *f, void *arg)
{
	u64 t = rdtsc();

	(void)f, (void)arg;
	if (nmi_samples < MAX_SAMPLES)
		nmi_at_hpet[nmi_samples] = hpet_read();
	if (nmi_samples++ == 2) {
		nmi_entry_cost = t - loop_tsc;
		nmi_exit_start = rdtsc();
	}
}

static void check_icount(void)
{
	const u64 period = 1000;		/* HPET ticks: 10 us, 10000 instructions */
	u64 exit_cost = 0;

	nmi_samples = 0;
	nmi_entry_cost = nmi_exit_start = 0;
	int err = hpet_nmi_start(period, apic_id(), record_hpet, NULL);
	if (err) {
		report(false, "HPET NMI starts (err %d; run with events=none)", err);
		return;
	}
	/* Spin reading the TSC until well past the third NMI: the jump in the
	 * TSC across it is the whole NMI, split by the handler's timestamps. */
	u64 deadline = rdtsc() + 100 * period * (tsc_hz / hpet_hz());
	while (nmi_samples < 4 && rdtsc() < deadline) {
		u64 t = rdtsc();
		/* t may predate the NMI if it landed just after the read. */
		if (nmi_exit_start && !exit_cost && t > nmi_exit_start)
			exit_cost = t - nmi_exit_start;
		loop_tsc = t;
	}
	spin_with_irqs_off(300000);
	u64 h_end = hpet_read();
	hpet_nmi_stop();

	/* QEMU delivers an interrupt at the end of a translation block, so the
	 * handler's timestamp trails the (exact) expiry by up to a block:
	 * intervals sit on the grid within that, and nothing accumulates. */
	const u64 jitter = 8;			/* HPET ticks: 80 instructions */
	u32 n = MIN(nmi_samples, (u32)MAX_SAMPLES), regular = 0;
	for (u32 i = 1; i < n; i++) {
		u64 d = nmi_at_hpet[i] - nmi_at_hpet[i - 1];
		regular += d + jitter >= period && d <= period + jitter;
	}
	report(n > 100 && regular == n - 1,
	       "all %u HPET NMIs %lu +- %lu HPET ticks apart (%u intervals of %u)",
	       n, period, jitter, regular, n - 1);
	u64 span = nmi_at_hpet[n - 1] - nmi_at_hpet[0], span_want = (n - 1) * period;
	report(span + jitter >= span_want && span <= span_want + jitter,
	       "no drift: first to last NMI %lu HPET ticks for %u periods", span, n - 1);
	/* Expiries from the first one to the end: the count is exact. */
	u64 handler_latency = nmi_at_hpet[0] % period;	/* same for every NMI */
	u64 first = nmi_at_hpet[0] - handler_latency;
	u64 want = 1 + (h_end - first) / period;
	report(hpet_nmi_count() == want || (hpet_nmi_count() + 1 == want &&
	       (h_end - first) % period < handler_latency),
	       "NMI count %lu equals the expiries between the first and the end (%lu)",
	       hpet_nmi_count(), want);
	report(this_cpu()->nmi_unclaimed == 0 && hpet_nmi_merged() == 0,
	       "no unclaimed NMIs (%lu), no merged expiries (%lu)",
	       this_cpu()->nmi_unclaimed, hpet_nmi_merged());
	report(nmi_entry_cost > 0 && exit_cost > 0,
	       "NMI cost measured: %lu instructions from the interrupted loop to the handler, "
	       "%lu from the handler back to the loop", nmi_entry_cost, exit_cost);
	kprintf("icount: nmi entry %lu insns, exit %lu insns\n", nmi_entry_cost, exit_cost);
}

static int test_timers_main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "rates";

	if (!hpet_hz()) {
		report(false, "an HPET is present (q35 has one)");
		return report_summary();
	}
	if (!strcmp(what, "rates")) {
		check_tsc();
		check_apic_timer();
		check_nmi_rate();
	} else if (!strcmp(what, "nmi")) {
		check_nmi_in_cli();
		check_nmi_nesting();
	} else if (!strcmp(what, "icount")) {
		check_icount();
	} else {
		report(false, "unknown mode '%s'", what);
	}
	return report_summary();
}

APP(test_timers, "guest test: TSC, APIC timer, HPET, NMIs", test_timers_main, APP_TEST);
