/*
 * tsc.c — the TSC frequency, from the best source the machine has:
 *   0. a hypervisor's timing leaf, CPUID 0x40000010 (kernel/platform/tsc_cpuid.c),
 *   1. CPUID 0x15 (TSC/crystal ratio and crystal clock; SDM Vol. 3B 19.7.3),
 *      with the crystal from the model or 0x16 where 0x15 gives none
 *      (kernel/platform/tsc_cpuid.c),
 *   2. CPUID 0x16 (processor base frequency, MHz),
 *   3. calibration against the HPET (ACPI HPET table),
 *   4. calibration against the ACPI PM timer (FADT, 3.579545 MHz),
 *   5. calibration against PIT channel 2 (8254, 1.193182 MHz).
 * Call after acpi_init and hpet_start. A rate from CPUID is checked once
 * more against the HPET over the whole boot (tsc_refine, at its end):
 * kernel/platform/tsc_refine.h. The HPET calibration, too, ends there:
 * the boot runs on the rate of its first CAL_FIRST_MS, and tsc_refine
 * measures the whole window, CAL_MS at least. Both windows open at
 * tsc_window_open, as soon as the HPET is known, so the boot's own work
 * fills them.
 */
#include "kernel/kernel.h"
#include "kernel/console.h"
#include "kernel/boot.h"
#include "kernel/platform/acpi.h"
#include "kernel/platform/apic.h"
#include "kernel/platform/tsc_cpuid.h"
#include "kernel/platform/tsc_refine.h"

#define PIT_HZ		1193182ul
#define PIT_CH2		0x42
#define PIT_CMD		0x43
#define PIT_GATE	0x61		/* bit 0: gate 2, bit 1: speaker, bit 5: OUT2 */
#define CAL_MS		10
#define CAL_FIRST_MS	2		/* the HPET calibration's first part: the
					 * boot's rate until tsc_refine */
#define CAL_WAIT_MS	100		/* for one CAL_MS window: a clock that does
					 * not move (clock-gated PIT, absent PM
					 * timer) costs this, not a stalled boot */
#define CAL_AGREE_PPM	1000		/* a window's halves: the bracket of a
					 * reference read under TCG is ~1.3 us,
					 * up to 260 ppm of a 5 ms half */
#define TSC_HZ_MAX	10000000000ul	/* tsc_since_ns before tsc_hz is known */

u64 tsc_hz;
const char *tsc_hz_source = "unknown";

/* The refinement's window: its first (TSC, HPET) pair (started), taken at
 * tsc_window_open; where tsc_hz is the HPET calibration's first part, the
 * pair at its end (first.*) too. */
static struct {
	bool started, open, calibrating;
	u64 tsc, ref, bracket;
	struct { u64 tsc, ref, bracket; } first;
} refine;

/*
 * One (TSC, reference) pair: the reference read is bracketed by two TSC
 * reads and the tightest of several tries is kept, so an SMI or a
 * preempted vCPU between the two reads cannot skew it. Returns that
 * bracket's width in TSC ticks.
 */
static u64 read_pair(u64 (*read)(void), u64 *tsc, u64 *ref)
{
	u64 best = ~0ul;

	for (int i = 0; i < 16; i++) {
		u64 a = rdtsc_ordered(), r = read(), b = rdtsc_ordered();
		if (b - a < best) {
			best = b - a;
			*tsc = a + (b - a) / 2;
			*ref = r;
		}
	}
	return best;
}

/*
 * The window's first (TSC, HPET) pair, once; false without an HPET.
 * Called as soon as the HPET is known, before the boot's work that needs
 * no TSC rate, then again by tsc_init's sources.
 */
bool tsc_window_open(void)
{
	if (!refine.started && hpet_hz()) {
		refine.bracket = read_pair(hpet_read, &refine.tsc, &refine.ref);
		refine.started = true;
	}
	return refine.started;
}

static u64 from_cpuid(void)
{
	struct tsc_cpuid c = {
		.max_leaf = cpu_features.max_leaf,
		.intel = !strcmp(cpu_features.vendor, "GenuineIntel"),
		.family = cpu_features.family,
		.model = cpu_features.model,
	};
	enum tsc_cpuid_how how;
	u32 a, b, cx, d;

	if (c.max_leaf >= 0x15) {
		cpuid(0x15, &a, &b, &cx, &d);
		c.l15_eax = a, c.l15_ebx = b, c.l15_ecx = cx;
	}
	if (c.max_leaf >= 0x16) {
		cpuid(0x16, &a, &b, &cx, &d);
		c.l16_eax = a;
	}
	/* The timing leaf where the hypervisor is one that defines it. */
	if (cpu_features.hypervisor && (!strcmp(cpu_features.hypervisor_id, "VMwareVMware") ||
					!strcmp(cpu_features.hypervisor_id, "KVMKVMKVM"))) {
		cpuid(0x40000000, &a, &b, &cx, &d);
		if (a >= 0x40000010) {
			cpuid(0x40000010, &a, &b, &cx, &d);
			c.hv_tsc_khz = a;
		}
	}
	u64 hz = tsc_hz_from_cpuid(&c, &how);
	if (hz)
		tsc_hz_source = tsc_cpuid_how_name(how);
	if (hz && tsc_window_open())
		refine.open = true;
	return hz;
}

/* Wait until the reference has moved `span` ticks (`ms`) past r0; false,
 * with the reason printed, if it has not within CAL_WAIT_MS. */
static bool wait_ref(u64 (*read)(void), u64 mask, u64 r0, u64 span, u32 ms, const char *name)
{
	u64 t0 = rdtsc_ordered();

	while (((read() - r0) & mask) < span)
		if (tsc_since_ns(t0, CAL_WAIT_MS * 1000000ul)) {
			kprintf("tsc: the %s did not advance %u ms in %u ms; not "
				"calibrating against it\n", name, ms, CAL_WAIT_MS);
			return false;
		}
	return true;
}

/* TSC Hz from two (TSC, reference) pairs. */
static u64 pair_hz(u64 t0, u64 r0, u64 t1, u64 r1, u64 mask, u64 ref_hz)
{
	return (t1 - t0) * ref_hz / ((r1 - r0) & mask);
}

/*
 * TSC frequency against a reference counter of ref_hz (masked to `mask`
 * bits: the PM timer has 24); 0 if the reference does not move. One
 * CAL_MS window, read also at its middle: where its two halves agree
 * within CAL_AGREE_PPM, the TSC and the reference kept one rate
 * throughout and the whole window is the figure. Otherwise two more
 * windows are taken and the median of the three kept.
 */
u64 tsc_calibrate(u64 (*read)(void), u64 mask, u64 ref_hz, const char *name)
{
	u64 span = ref_hz * CAL_MS / 1000, t[3], r[3], hz[3];

	read_pair(read, &t[0], &r[0]);
	for (int i = 1; i < 3; i++) {
		if (!wait_ref(read, mask, r[0], span * i / 2, CAL_MS, name))
			return 0;
		read_pair(read, &t[i], &r[i]);
	}
	hz[0] = pair_hz(t[0], r[0], t[2], r[2], mask, ref_hz);
	u64 first = pair_hz(t[0], r[0], t[1], r[1], mask, ref_hz);
	u64 second = pair_hz(t[1], r[1], t[2], r[2], mask, ref_hz);
	u64 diff = first > second ? first - second : second - first;
	if (diff <= hz[0] / 1000000 * CAL_AGREE_PPM)
		return hz[0];
	for (int i = 1; i < 3; i++) {
		read_pair(read, &t[0], &r[0]);
		if (!wait_ref(read, mask, r[0], span, CAL_MS, name))
			return 0;
		read_pair(read, &t[1], &r[1]);
		hz[i] = pair_hz(t[0], r[0], t[1], r[1], mask, ref_hz);
	}
	/* median of three */
	u64 lo = MIN(hz[0], hz[1]), hi = MAX(hz[0], hz[1]);
	return MAX(lo, MIN(hi, hz[2]));
}

static u16 pm_port;
static u64 pm_read(void) { return inl(pm_port); }

/*
 * The HPET calibration's first part: the rate over CAL_FIRST_MS, the
 * window left open for tsc_refine to close at the end of the boot. The
 * boot until then takes this rate (timeouts, the soft PMU's floor); its
 * own error, a read's bracket at each end over 2 ms, is five times a
 * whole window's.
 */
static u64 from_hpet(void)
{
	u64 hz = hpet_hz(), span = hz * CAL_FIRST_MS / 1000;

	if (!tsc_window_open())
		return 0;
	if (!wait_ref(hpet_read, ~0ul, refine.ref, span, CAL_FIRST_MS, "HPET"))
		return 0;
	refine.first.bracket = read_pair(hpet_read, &refine.first.tsc, &refine.first.ref);
	refine.open = refine.calibrating = true;
	tsc_hz_source = "HPET calibration";
	return pair_hz(refine.tsc, refine.ref, refine.first.tsc, refine.first.ref, ~0ul, hz);
}

static u64 from_pm_timer(void)
{
	u64 hz;

	pm_port = acpi->fadt.pm_timer_port;
	if (!pm_port)
		return 0;
	hz = tsc_calibrate(pm_read, acpi->fadt.pm_timer_32bit ? 0xfffffffful : 0xfffffful,
			       ACPI_PM_TIMER_HZ, "ACPI PM timer");
	if (hz)
		tsc_hz_source = "ACPI PM timer calibration";
	return hz;
}

/* PIT channel 2 in mode 0 (one-shot); OUT2 goes high at terminal count. */
static u64 from_pit(void)
{
	u32 count = PIT_HZ * CAL_MS / 1000;
	u8 gate = inb(PIT_GATE);

	outb(PIT_GATE, (gate & ~0x02) | 0x01);	/* speaker off, gate on */
	outb(PIT_CMD, 0xb0);			/* ch2, lo/hi byte, mode 0, binary */
	outb(PIT_CH2, count & 0xff);
	outb(PIT_CH2, count >> 8);
	u64 t0 = rdtsc_ordered();
	while (!(inb(PIT_GATE) & 0x20))
		if (tsc_since_ns(t0, CAL_WAIT_MS * 1000000ul)) {
			outb(PIT_GATE, gate);
			kprintf("tsc: PIT channel 2 did not count %u ms in %u ms; no PIT\n",
				CAL_MS, CAL_WAIT_MS);
			return 0;
		}
	u64 t1 = rdtsc_ordered();
	outb(PIT_GATE, gate);
	tsc_hz_source = "PIT calibration";
	return (t1 - t0) * 1000 / CAL_MS;
}

void tsc_init(void)
{
	u64 (*const sources[])(void) = { from_cpuid, from_hpet, from_pm_timer, from_pit };

	for (size_t i = 0; i < ARRAY_SIZE(sources) && !tsc_hz; i++)
		tsc_hz = sources[i]();
	console_set_tsc_hz(tsc_hz);
}

/* A rate's error bound in ppm over `ticks` TSC ticks whose ends were
 * read within `bracket` TSC ticks of each other, the reference counting
 * `ref_ticks` whole ticks meanwhile. */
static u64 error_ppm(u64 bracket, u64 ticks, u64 ref_ticks)
{
	return (bracket * 1000000ul + ticks - 1) / ticks + (2000000ul + ref_ticks - 1) / ref_ticks;
}

/*
 * The HPET calibration's whole window, from tsc_window_open to now
 * (CAL_MS at least: the rest is waited out). Where its first part (the boot's rate
 * so far) and the rest kept one rate, within CAL_AGREE_PPM beyond their
 * own errors, the whole window's rate is tsc_hz; otherwise the TSC is
 * calibrated anew (tsc_calibrate: three windows where one disagrees).
 */
static void close_calibration(void)
{
	u64 hz = hpet_hz(), t, r;

	wait_ref(hpet_read, ~0ul, refine.ref, hz * CAL_MS / 1000, CAL_MS, "HPET");
	u64 bracket = read_pair(hpet_read, &t, &r);
	u64 whole = pair_hz(refine.tsc, refine.ref, t, r, ~0ul, hz);
	u64 rest = pair_hz(refine.first.tsc, refine.first.ref, t, r, ~0ul, hz);
	u64 diff = tsc_hz > rest ? tsc_hz - rest : rest - tsc_hz;
	u64 agree_ppm = CAL_AGREE_PPM +
		error_ppm(refine.bracket + refine.first.bracket, refine.first.tsc - refine.tsc,
			  refine.first.ref - refine.ref) +
		error_ppm(refine.first.bracket + bracket, t - refine.first.tsc,
			  r - refine.first.ref);

	if (diff > whole / 1000000 * agree_ppm) {
		u64 again = tsc_calibrate(hpet_read, ~0ul, hz, "HPET");
		kprintf("tsc: against the HPET, the boot's first %u ms gave %lu Hz, the rest "
			"%lu Hz (more than %lu ppm apart): calibrated again, %lu Hz\n",
			CAL_FIRST_MS, tsc_hz, rest, agree_ppm, again);
		whole = again ? again : tsc_hz;
	} else {
		kprintf("tsc: against the HPET over %lu ms: %lu.%03lu MHz (+-%lu ppm), the first "
			"%u ms %+ld ppm from it\n", tsc_to_ns(t - refine.tsc) / 1000000,
			whole / 1000000, whole / 1000 % 1000,
			error_ppm(refine.bracket + bracket, t - refine.tsc, r - refine.ref),
			CAL_FIRST_MS, ((s64)tsc_hz - (s64)whole) * 1000000 / (s64)whole);
	}
	tsc_hz = whole;
	console_set_tsc_hz(tsc_hz);
}

/*
 * The rate CPUID gave, against the HPET over the window from from_cpuid
 * to now, the end of the boot: no boot time is spent waiting on it, and
 * the window lasts as long as the boot. Where the two disagree by more
 * than TSC_REFINE_PPM, the measured rate becomes tsc_hz; the APIC
 * timer's rate, kept as a ratio to the TSC, follows it. A rate the HPET
 * calibration's first part gave is replaced by the whole window's
 * (close_calibration).
 */
void tsc_refine(void)
{
	struct tsc_refine_out out;
	u64 t, r;

	if (!refine.open)
		return;
	refine.open = false;
	if (refine.calibrating) {
		close_calibration();
		return;
	}
	u64 bracket = read_pair(hpet_read, &t, &r);
	struct tsc_refine_in in = {
		.cpuid_hz = tsc_hz, .tsc_ticks = t - refine.tsc, .ref_ticks = r - refine.ref,
		.ref_hz = hpet_hz(), .bracket_ticks = refine.bracket + bracket,
	};
	enum tsc_refine_verdict v = tsc_refine_decide(&in, &out);

	kprintf("tsc: against the HPET over %lu ms: %lu.%03lu MHz, %+ld ppm (+-%lu) from "
		"%s's %lu.%03lu MHz: %s\n", tsc_to_ns(in.tsc_ticks) / 1000000,
		out.measured_hz / 1000000, out.measured_hz / 1000 % 1000, out.ppm,
		out.error_ppm, tsc_hz_source, tsc_hz / 1000000, tsc_hz / 1000 % 1000,
		tsc_refine_verdict_name(v));
	if (v != TSC_REFINE_ADOPT)
		return;
	tsc_hz = out.measured_hz;
	tsc_hz_source = "HPET, refining CPUID's";
	console_set_tsc_hz(tsc_hz);
}

void tsc_test_cpuid_hz(u64 hz)
{
	if (!hpet_hz())
		return;
	tsc_hz = hz;
	tsc_hz_source = "CPUID (a test's figure)";
	console_set_tsc_hz(tsc_hz);
	refine.bracket = read_pair(hpet_read, &refine.tsc, &refine.ref);
	refine.open = true;
	refine.calibrating = false;	/* a rate from CPUID: no HPET window to close */
}

u64 tsc_to_ns(u64 ticks)
{
	if (!tsc_hz)
		return 0;
	/* Split so nothing overflows 64 bits for any tsc_hz below 18 GHz. */
	return ticks / tsc_hz * 1000000000ul + ticks % tsc_hz * 1000000000ul / tsc_hz;
}

bool tsc_since_ns(u64 t0, u64 ns)
{
	u64 dt = rdtsc_ordered() - t0;

	if (tsc_hz)
		return tsc_to_ns(dt) >= ns;
	/* dt / TSC_HZ_MAX s, without overflow for any dt */
	return dt / TSC_HZ_MAX * 1000000000ul + dt % TSC_HZ_MAX / (TSC_HZ_MAX / 1000000000ul) >= ns;
}
