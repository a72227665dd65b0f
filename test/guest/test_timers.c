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
 *   -- deadclock  calibrating against a counter that never moves (an I/O
 *                 port nothing decodes: a clock-gated PIT, an absent PM
 *                 timer) gives up by elapsed time, within a second
 *   -- leftover   vectors left in service and requested, as firmware can
 *                 leave them: APIC set-up retires the in-service ones,
 *                 the requested one arrives as a counted stray, and lower
 *                 vectors are delivered again
 *   -- x2apic     (on -cpu max) the APIC disabled, then set up again:
 *                 xAPIC before x2APIC (SDM 11.12.5), timer interrupts work
 *   -- route      HPET NMIs to an APIC id the IOAPIC cannot address fail
 *   -- counter32  the HPET main counter read as 32 bits across its wrap:
 *                 time stays monotonic, NMIs keep their period
 *   -- hpet       LegacyReplacement left on by firmware is turned off by
 *                 hpet_init; starting and stopping HPET NMIs never halts
 *                 the main counter (no clock time is lost)
 *   -- tiny       a one-tick HPET period (10 ns, shorter than one NMI):
 *                 the re-arm skips to a future expiry instead of chasing
 *                 the counter forever, and counts the expiries it skipped
 *   -- refine     the boot took a TSC rate 4% fast as CPUID's (a hook at
 *                 BOOT_PLATFORM: under TCG CPUID gives none): its end
 *                 measured the rate against the HPET and adopted it, and
 *                 the APIC timer's rate follows
 *   -- rep        a 1 MiB memset and memcpy hold an HPET NMI off no longer
 *                 than a plain loop does, within REP_HOLD_US (QEMU's TCG
 *                 runs up to 65536 steps of a rep string instruction before
 *                 it looks at interrupts)
 *
 * Run with events=none: the default sampling run holds the HPET NMI.
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "kernel/platform/acpi.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/platform/tsc_refine.h"
#include "kernel/trap.h"
#include "test/guest/report.h"

static volatile u64 timer_irqs;

static void count_timer(struct trap_frame *f)
{
	(void)f;
	timer_irqs++;
	apic_eoi();
}

/* Busy-wait for `ns` by the HPET, interrupts as the caller left them.
 * The HPET is polled every 10 us of TSC time, not back to back: under
 * -icount each MMIO read costs QEMU microseconds of host time but the
 * guest one instruction, so a tight poll takes the host seconds per
 * virtual millisecond on a busy machine. */
static void hpet_wait_ns(u64 ns)
{
	u64 end = hpet_read() + hpet_hz() * ns / 1000000000ul;

	while (hpet_read() < end) {
		u64 t0 = rdtsc_ordered();
		while (tsc_to_ns(rdtsc_ordered() - t0) < 10000)
			cpu_relax();
	}
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
	/* One 10 ms window whose halves agree is the whole calibration. */
	u64 t0 = rdtsc_ordered();
	u64 hz = hpet_hz() ? tsc_calibrate(hpet_read, ~0ul, hpet_hz(), "HPET") : 0;
	u64 us = tsc_to_ns(rdtsc_ordered() - t0) / 1000;
	u64 off = hz > tsc_hz ? hz - tsc_hz : tsc_hz - hz;
	report(hz && off * 2000 <= tsc_hz && us < 20000,
	       "calibration against the HPET: %lu Hz in %lu us, within 500 ppm of the boot's %lu Hz",
	       hz, us, tsc_hz);
}

/* The boot's APIC timer rate against one counted over 20 ms, each end a
 * count read between two TSC reads (the tightest of several). */
static void check_apic_timer_hz(void)
{
	u64 t[2], dt[2];
	u32 c[2];

	apic_timer_oneshot(0xffffffffu);
	for (int i = 0; i < 2; i++) {
		if (i)
			tsc_wait_ns(20000000);
		dt[i] = ~0ul;
		for (int k = 0; k < 8; k++) {	/* the tightest of 8 brackets */
			u64 a = rdtsc_ordered();
			u32 cur = apic_read(APIC_TMR_CUR);
			u64 b = rdtsc_ordered();
			if (b - a < dt[i])
				dt[i] = b - a, t[i] = a + (b - a) / 2, c[i] = cur;
		}
	}
	apic_timer_stop();
	u64 hz = (u64)(c[0] - c[1]) * tsc_hz / (t[1] - t[0]), want = apic_timer_hz();
	u64 off = hz > want ? hz - want : want - hz;
	report(off * 1000 <= want, "APIC timer at %lu Hz, the boot's figure %lu Hz within 0.1%% "
	       "(count read in %lu and %lu TSC ticks)", hz, want, dt[0], dt[1]);
}

/* ---- the TSC rate CPUID gave, refined at the end of the boot ---- */

#define REFINE_WINDOW_MS	100	/* the window's error well under 250 ppm
					 * with a TCG bracket of a few us */

static u64 refine_true_hz, refine_cpuid_hz, refine_apic_hz;

/* With "app=test_timers -- refine": the rate calibrated so far, 4% fast,
 * taken as CPUID's, and the boot held long enough for its end to tell. */
static void pretend_cpuid_rate(void)
{
	if (!kopt.app || strcmp(kopt.app, "test_timers") || kopt.app_argc < 1 ||
	    strcmp(kopt.app_argv[0], "refine"))
		return;
	refine_true_hz = tsc_hz;
	refine_cpuid_hz = tsc_hz + tsc_hz / 25;
	tsc_test_cpuid_hz(refine_cpuid_hz);
	refine_apic_hz = apic_timer_hz();
	hpet_wait_ns(REFINE_WINDOW_MS * 1000000ul);
}
BOOT_HOOK(BOOT_PLATFORM, pretend_cpuid_rate);

static void check_refine(void)
{
	u64 off = refine_true_hz > tsc_hz ? refine_true_hz - tsc_hz : tsc_hz - refine_true_hz;

	report(refine_cpuid_hz && tsc_hz != refine_cpuid_hz &&
	       !strcmp(tsc_hz_source, "HPET, refining CPUID's"),
	       "the boot gave up CPUID's %lu Hz for the measured %lu Hz (%s)", refine_cpuid_hz,
	       tsc_hz, tsc_hz_source);
	report(refine_true_hz && off * 1000 <= refine_true_hz,
	       "the measured rate %lu Hz is the calibrated %lu Hz within 0.1%%", tsc_hz,
	       refine_true_hz);
	report(refine_apic_hz && apic_timer_hz() * 26 / 25 * 1000 >= refine_apic_hz * 999 &&
	       apic_timer_hz() * 26 / 25 * 1000 <= refine_apic_hz * 1001,
	       "the APIC timer's rate followed the TSC's: %lu Hz, from %lu Hz with CPUID's",
	       apic_timer_hz(), refine_apic_hz);
	check_apic_timer_hz();
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
	apic_timer_stop();
	/* An expiry as the wait ended may still be on its way (under -icount
	 * it lands at the same point of every run, before or after the
	 * stop): it is let in here, one of the periodic's, not counted as
	 * the one-shot's below. */
	hpet_wait_ns(100000);
	irq_disable();
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

/* A loop with interrupts off: NMIs must still land here. noclone: GCC's
 * clone of it (spin_with_irqs_off.isra.0, its result unused) would have
 * a name ksym_address does not find. */
static u64 __attribute__((noinline, noclone)) spin_with_irqs_off(u64 n)
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

/* hpet_nmi_start takes any period from 1 tick; profile.c refuses short
 * ones, but the re-arm itself must end whatever it is given. */
static void check_tiny_period(void)
{
	nmi_samples = 0;
	int err = hpet_nmi_start(1, apic_id(), record_rip, NULL);
	report(!err, "a one-tick HPET NMI period starts (err %d)", err);
	if (err)
		return;
	/* QEMU may drop an expiry armed a tick ahead, and on a loaded host
	 * its timer thread may not run for milliseconds. An NMI of our own
	 * finds the expiries due all the same (the handler goes by time), so
	 * one is sent each millisecond that brought none: the re-arm runs
	 * for certain. Done after 5 ms with an NMI taken; a bound of 2 s. */
	u64 t0 = rdtsc_ordered(), ns = 0, kick = 0;
	u32 kicks = 0, seen = 0;
	while (ns < 2000000000ul && (ns < 5000000 || !nmi_samples)) {
		if (ns >= kick) {
			if (nmi_samples == seen) {
				apic_send_ipi(apic_id(), APIC_DM_NMI);
				kicks++;
			}
			seen = nmi_samples;
			kick = ns + 1000000;
		}
		cpu_relax();
		ns = tsc_to_ns(rdtsc_ordered() - t0);
	}
	hpet_nmi_stop();
	report(nmi_samples > 0, "the CPU went on: %u NMIs in %lu ms (%u of our own sent)",
	       nmi_samples, ns / 1000000, kicks);
	report(hpet_nmi_merged() > hpet_nmi_count(),
	       "expiries skipped by the re-arm are counted: %lu merged, %lu NMIs",
	       hpet_nmi_merged(), hpet_nmi_count());
}

/*
 * A start whose first tries are undone (the counter passed the first
 * expiry before the check): the handler runs for the expiries of the try
 * that held and none other, so the calls and the NMIs the HPET counts
 * agree. Ten ticks ahead is passed before the check can read the counter.
 */
static volatile u64 arm_calls;

static void count_call(struct trap_frame *f, void *arg)
{
	(void)f, (void)arg;
	arm_calls++;
}

static void check_start_retry(void)
{
	arm_calls = 0;
	hpet_test_arm_margin(10);
	int err = hpet_nmi_start(hpet_hz() / 1000, apic_id(), count_call, NULL);
	hpet_test_arm_margin(0);
	u32 retries = hpet_nmi_retries();
	report(!err && retries > 0, "a start armed 10 ticks ahead is undone and tried again "
	       "(err %d, %u tries undone)", err, retries);
	if (err)
		return;
	tsc_wait_ns(20000000);
	hpet_nmi_stop();
	u64 calls = arm_calls, count = hpet_nmi_count();
	/* One expiry may fall between the check that held and the handler
	 * being set: counted, not called. */
	report(calls <= count && count - calls <= 1 && count > 0,
	       "the handler ran once per NMI of the try that held: %lu calls, %lu NMIs", calls, count);
}

#define VEC_LEFT_LOW	0x71		/* taken, never EOI'd */
#define VEC_LEFT_HIGH	0x81		/* taken inside it, never EOI'd */
#define VEC_REQUESTED	0x70		/* requested with interrupts off */
#define VEC_AFTER	0x72		/* blocked while 0x71 is in service */

static volatile u32 left_taken, after_taken;

static void take_no_eoi(struct trap_frame *f)
{
	(void)f;
	if (left_taken++ == 0) {
		/* Inside 0x71: a higher class interrupts it, also never EOI'd. */
		apic_send_ipi(apic_id(), APIC_DM_FIXED | VEC_LEFT_HIGH);
		irq_enable();
		while (left_taken < 2)
			cpu_relax();
		irq_disable();
	}
}

static void take_after(struct trap_frame *f)
{
	(void)f;
	after_taken++;
	apic_eoi();
}

static void check_leftover(void)
{
	irq_disable();
	trap_set_handler(VEC_LEFT_LOW, take_no_eoi);
	trap_set_handler(VEC_LEFT_HIGH, take_no_eoi);
	apic_send_ipi(apic_id(), APIC_DM_FIXED | VEC_LEFT_LOW);
	irq_enable();
	u64 t0 = rdtsc_ordered();
	while (left_taken < 2 && !tsc_since_ns(t0, 1000000000ul))
		cpu_relax();
	irq_disable();
	apic_send_ipi(apic_id(), APIC_DM_FIXED | VEC_REQUESTED);
	trap_set_handler(VEC_LEFT_LOW, NULL);	/* the kernel never knew them */
	trap_set_handler(VEC_LEFT_HIGH, NULL);
	report(left_taken == 2 && apic_in_service(VEC_LEFT_LOW) && apic_in_service(VEC_LEFT_HIGH),
	       "two vectors left in service (%#x, %#x), one requested (%#x)",
	       VEC_LEFT_LOW, VEC_LEFT_HIGH, VEC_REQUESTED);
	apic_init();				/* set-up, as after the firmware */
	report(!apic_in_service(VEC_LEFT_LOW) && !apic_in_service(VEC_LEFT_HIGH),
	       "APIC set-up retired both in-service vectors");
	u64 strays = apic_stray_count();
	trap_set_handler(VEC_AFTER, take_after);
	irq_enable();
	apic_send_ipi(apic_id(), APIC_DM_FIXED | VEC_AFTER);
	t0 = rdtsc_ordered();
	while (!after_taken && !tsc_since_ns(t0, 1000000000ul))
		cpu_relax();
	irq_disable();
	report(apic_stray_count() == strays + 1,
	       "the requested vector arrived as one counted stray (%lu), not a fatal error",
	       apic_stray_count() - strays);
	report(after_taken == 1, "a vector of the formerly blocked class is delivered (%u)",
	       after_taken);
}

static void check_x2apic_reenable(void)
{
	if (!cpu_features.x2apic) {
		report_skip("no x2APIC on this CPU (QEMU: -cpu max, QEMU >= 8.1)");
		return;
	}
	irq_disable();
	u64 base = rdmsr(MSR_IA32_APIC_BASE);
	/* x2APIC -> disabled is legal; the APIC forgets its state. */
	wrmsr(MSR_IA32_APIC_BASE, base & ~(APIC_BASE_ENABLE | APIC_BASE_X2APIC));
	report(!(rdmsr(MSR_IA32_APIC_BASE) & APIC_BASE_ENABLE), "the local APIC is disabled");
	apic_init();
	u64 now = rdmsr(MSR_IA32_APIC_BASE);
	report((now & APIC_BASE_ENABLE) && (now & APIC_BASE_X2APIC) && apic_is_x2apic(),
	       "set up again in x2APIC mode (IA32_APIC_BASE %#lx)", now);
	timer_irqs = 0;
	trap_set_handler(VEC_APIC_TIMER, count_timer);
	apic_timer_oneshot(10000);
	irq_enable();
	u64 t0 = rdtsc_ordered();
	while (!timer_irqs && !tsc_since_ns(t0, 1000000000ul))
		cpu_relax();
	irq_disable();
	report(timer_irqs == 1, "its timer interrupt arrives (%lu)", timer_irqs);
}

static void check_route_range(void)
{
	int err = hpet_nmi_start(hpet_hz() / 1000, 300, record_rip, NULL);

	report(err == -E_INVAL, "HPET NMIs to APIC id 300 are refused (err %d): the IOAPIC "
	       "addresses 8-bit ids", err);
	if (!err)
		hpet_nmi_stop();
	err = hpet_nmi_start(hpet_hz() / 1000, apic_id(), record_rip, NULL);
	report(!err, "to this CPU they still start (err %d)", err);
	if (!err)
		hpet_nmi_stop();
}

static volatile u64 last_nmi_hpet;

static void record_last(struct trap_frame *f, void *arg)
{
	(void)f, (void)arg;
	last_nmi_hpet = hpet_read();
}

static void check_counter32(void)
{
	const u64 ms = hpet_hz() / 1000, start = (1ul << 32) - 20 * ms;
	u64 prev = 0, backwards = 0;

	hpet_test_counter(32, start);
	u64 t0 = rdtsc_ordered();
	while (!tsc_since_ns(t0, 40000000ul)) {
		u64 now = hpet_read();
		backwards += now < prev;
		prev = now;
	}
	report(!backwards && prev > (1ul << 32),
	       "read as 32 bits, the counter runs on across the wrap (%#lx, %lu steps back)",
	       prev, backwards);
	hpet_test_counter(32, start);
	last_nmi_hpet = 0;
	u64 h0 = hpet_read();
	int err = hpet_nmi_start(ms, apic_id(), record_last, NULL);
	report(!err, "1 ms HPET NMIs start 20 ms before the wrap (err %d)", err);
	if (err)
		return;
	/* Until an NMI comes 20 ms past the wrap (a busy host delays QEMU's
	 * timer thread: wait by time, up to 10 s, not a fixed window). */
	t0 = rdtsc_ordered();
	while (last_nmi_hpet < (1ul << 32) + 20 * ms && !tsc_since_ns(t0, 10000000000ul))
		cpu_relax();
	u64 h1 = hpet_read();
	hpet_nmi_stop();
	/* Merged or not, never more expiries than were due by h1 (the first
	 * was due at h0 + ms, h0 read a little before the start). */
	u64 got = hpet_nmi_count() + hpet_nmi_merged(), due = (h1 - h0) / ms;
	report(got && got <= due + 1 && this_cpu()->nmi_unclaimed == 0,
	       "across the wrap: %lu expiries for %lu due (%lu NMIs, %lu merged, %lu echoes), "
	       "%lu unclaimed NMIs", got, due, hpet_nmi_count(), hpet_nmi_merged(),
	       hpet_nmi_echoes(), this_cpu()->nmi_unclaimed);
	report(last_nmi_hpet >= (1ul << 32) + 20 * ms,
	       "NMIs went on past the wrap (the last at %#lx)", last_nmi_hpet);
	hpet_test_counter(64, hpet_read());
}

#define UNDECODED_PORT	0xe0		/* nothing on q35 answers: reads all ones */

static u64 read_dead_port(void) { return inl(UNDECODED_PORT); }

static void check_dead_clock(void)
{
	u64 t0 = rdtsc_ordered();
	u64 hz = tsc_calibrate(read_dead_port, 0xffffff, ACPI_PM_TIMER_HZ, "dead port");
	u64 ms = tsc_to_ns(rdtsc_ordered() - t0) / 1000000;

	report(hz == 0 && ms < 1000, "calibration against a counter that never moves gives up "
	       "after %lu ms (rate %lu)", ms, hz);
}

#define HPET_GEN_CONF_REG	0x10
#define   HPET_LEG_RT		(1ul << 1)

static void check_hpet_setup(void)
{
	volatile u64 *conf = (volatile u64 *)(acpi->hpet.addr + HPET_GEN_CONF_REG);

	*conf |= HPET_LEG_RT;		/* as firmware may leave it */
	bool ok = hpet_init();
	report(ok && !(*conf & HPET_LEG_RT) && (*conf & 1),
	       "hpet_init turns LegacyReplacement off, the counter on (GEN_CONF 0x%lx)", *conf);
	/* Start/stop pairs with a period that never expires: the HPET keeps
	 * time with the TSC throughout (a halt per start would lose some). */
	u64 h0 = hpet_read(), t0 = rdtsc_ordered();
	u32 started = 0;
	for (int i = 0; i < 2000; i++) {
		started += !hpet_nmi_start(HPET_NMI_MAX_TICKS, apic_id(), record_rip, NULL);
		hpet_nmi_stop();
	}
	u64 h1 = hpet_read(), t1 = rdtsc_ordered();
	u64 hpet_ns = (h1 - h0) * 1000000000ul / hpet_hz(), tsc_ns = tsc_to_ns(t1 - t0);
	report(started == 2000 && hpet_ns * 1000 >= tsc_ns * 995,
	       "2000 HPET NMI starts: the main counter kept time (%lu us by the HPET, %lu us by "
	       "the TSC)", hpet_ns / 1000, tsc_ns / 1000);
}

/*
 * How long a large memset and memcpy hold an NMI off. On hardware a rep
 * string instruction takes interrupts between its steps; QEMU's TCG (not
 * under -icount) runs up to 65536 steps at a time before it looks, about
 * 250 us for the 512 KiB of a rep stosq on a 2.5 GHz host: a soft-PMU tick
 * (250 us) waits that long. kernel/lib/string.c cuts its rep instructions
 * into pieces to bound it.
 *
 * Each NMI's delay is the HPET counter at the handler less the expiry it
 * answers (the first one after the previous NMI's). The worst delay of a
 * try is the least of REP_TRIES tries: a host that preempts QEMU delays one
 * try, the instruction delays every one. A plain store loop over the same
 * memory is measured the same way: when even its NMIs wait more than
 * REP_QUIET_US the host is too busy to tell, and the check is a skip.
 *
 * A piece's hold grows as the host slows QEMU down (a 16 KiB memcpy held
 * 89 us on a quiet host, 764 us at a load of 20 on 2 cores), so a hold
 * above REP_HOLD_US is judged against one rep instruction over the whole
 * 1 MiB, measured in the same run: the pieces must hold an NMI off at most
 * 1/REP_CUT of what it does (QEMU 10 on a quiet host: a 1 MiB rep movsq
 * 361 us, the pieces 78 us; a rep stosq 0 us either way).
 */
#define REP_TRIES	48
#define REP_BYTES	(1ul << 20)
#define REP_PERIOD_US	50
#define REP_HOLD_US	100		/* what a memset or memcpy may hold an NMI off */
#define REP_QUIET_US	60		/* a plain loop's NMIs wait less on a quiet host */
#define REP_CUT		2		/* pieces against one rep instruction */

static volatile u64 rep_prev_due, rep_worst;	/* HPET ticks */
static u64 rep_period;
static u8 *rep_a, *rep_b;

static void time_nmi(struct trap_frame *f, void *arg)
{
	u64 now = hpet_read(), expiry = hpet_nmi_origin() + (rep_prev_due + 1) * rep_period;

	(void)f, (void)arg;
	if (now > expiry && now - expiry > rep_worst)
		rep_worst = now - expiry;
	rep_prev_due = hpet_nmi_due();
}

static void rep_memset(void) { memset(rep_a, 0x5a, REP_BYTES); }
static void rep_memcpy(void) { memcpy(rep_b, rep_a, REP_BYTES); }

static void rep_stos_whole(void)
{
	void *d = rep_a;
	u64 n = REP_BYTES / 8;

	asm volatile("rep stosq" : "+D"(d), "+c"(n) : "a"(0x5a5a5a5a5a5a5a5aul) : "memory");
}

static void rep_movs_whole(void)
{
	void *d = rep_b;
	const void *src = rep_a;
	u64 n = REP_BYTES / 8;

	asm volatile("rep movsq" : "+D"(d), "+S"(src), "+c"(n) : : "memory");
}

/* A hold within REP_HOLD_US, or at most 1/REP_CUT of one rep instruction's;
 * a skip where the pieces held more and one rep instruction too little to
 * tell the instruction's hold from the host's delays of the moment. */
static void report_hold(const char *what, u64 pieces, u64 whole)
{
	if (pieces > REP_HOLD_US && whole < REP_CUT * 2 * REP_HOLD_US) {
		report_skip("a 1 MiB %s holds an NMI off %lu us, one rep instruction %lu us: the "
			    "host's delays this run are as long as the instruction's", what, pieces,
			    whole);
		return;
	}
	report(pieces <= REP_HOLD_US || pieces * REP_CUT <= whole,
	       "a 1 MiB %s holds an NMI off %lu us (at most %d, or 1/%d of one rep "
	       "instruction's %lu us)", what, pieces, REP_HOLD_US, REP_CUT, whole);
}

static void plain_stores(void)
{
	volatile u64 *p = (volatile u64 *)rep_a;

	for (u64 i = 0; i < REP_BYTES / 8; i++)
		p[i] = i;
}

/* The longest NMI delay across op in us, the least of REP_TRIES tries;
 * ~0 if the NMIs do not start. */
static u64 nmi_hold_us(void (*op)(void))
{
	u64 best = ~0ul;

	for (int t = 0; t < REP_TRIES; t++) {
		rep_worst = rep_prev_due = 0;
		if (hpet_nmi_start(rep_period, apic_id(), time_nmi, NULL))
			return ~0ul;
		op();
		/* An expiry still waiting for its NMI waits at least this long. */
		u64 now = hpet_read(), expiry = hpet_nmi_origin() + (rep_prev_due + 1) * rep_period;
		hpet_nmi_stop();
		if (now > expiry && now - expiry > rep_worst)
			rep_worst = now - expiry;
		best = MIN(best, (u64)rep_worst);
	}
	return best * 1000000 / hpet_hz();
}

static void check_rep_hold(void)
{
	rep_a = (u8 *)pmm_alloc(REP_BYTES / PAGE_SIZE);
	rep_b = (u8 *)pmm_alloc(REP_BYTES / PAGE_SIZE);
	rep_period = hpet_hz() * REP_PERIOD_US / 1000000;
	if (!rep_a || !rep_b) {
		report(false, "two 1 MiB buffers");
		return;
	}
	u64 plain = nmi_hold_us(plain_stores);
	u64 set = nmi_hold_us(rep_memset), cpy = nmi_hold_us(rep_memcpy);
	u64 set1 = nmi_hold_us(rep_stos_whole), cpy1 = nmi_hold_us(rep_movs_whole);

	kprintf("rep: NMIs held off up to %lu us by a 1 MiB memset, %lu us by a memcpy, "
		"%lu us by a plain store loop, %lu and %lu us by one rep stosq and movsq "
		"(least of %d tries each, a %u us period)\n",
		set, cpy, plain, set1, cpy1, REP_TRIES, REP_PERIOD_US);
	if (plain > REP_QUIET_US) {
		report_skip("a memset and a memcpy of 1 MiB hold an NMI off %d us at most: the host "
			    "is too busy to tell (a plain loop's NMIs waited %lu us)", REP_HOLD_US,
			    plain);
		report_skip("(memcpy, as memset)");
	} else {
		report_hold("memset", set, set1);
		report_hold("memcpy", cpy, cpy1);
	}
	pmm_free((u64)rep_a, REP_BYTES / PAGE_SIZE);
	pmm_free((u64)rep_b, REP_BYTES / PAGE_SIZE);
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
	} else if (!strcmp(what, "x2apic")) {
		check_x2apic_reenable();
	} else if (!strcmp(what, "route")) {
		check_route_range();
	} else if (!strcmp(what, "counter32")) {
		check_counter32();
	} else if (!strcmp(what, "leftover")) {
		check_leftover();
	} else if (!strcmp(what, "apichz")) {
		check_apic_timer_hz();
	} else if (!strcmp(what, "refine")) {
		check_refine();
	} else if (!strcmp(what, "deadclock")) {
		check_dead_clock();
	} else if (!strcmp(what, "hpet")) {
		check_hpet_setup();
	} else if (!strcmp(what, "tiny")) {
		check_tiny_period();
	} else if (!strcmp(what, "rep")) {
		check_rep_hold();
	} else if (!strcmp(what, "retry")) {
		check_start_retry();
	} else {
		report(false, "unknown mode '%s'", what);
	}
	return report_summary();
}

APP(test_timers, "guest test: TSC, APIC timer, HPET, NMIs", test_timers_main, APP_TEST);
