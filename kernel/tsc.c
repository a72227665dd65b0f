/*
 * tsc.c — the TSC frequency.
 *
 * CPUID 0x15 (TSC/crystal ratio and crystal clock) when the CPU reports
 * it, else CPUID 0x16 (base frequency, MHz), else a calibration against
 * PIT channel 2 (8254, 1.193182 MHz), which every PC and QEMU's q35 have.
 * kernel/hpet.c refines this once ACPI is up (not here yet).
 */
#include "kernel/kernel.h"

#define PIT_HZ		1193182ul
#define PIT_CH2		0x42
#define PIT_CMD		0x43
#define PIT_GATE	0x61		/* bit 0: gate 2, bit 1: speaker, bit 5: OUT2 */
#define CAL_MS		10

u64 tsc_hz;
const char *tsc_hz_source = "unknown";

static u64 from_cpuid(void)
{
	u32 a, b, c, d;

	if (cpu_features.max_leaf >= 0x15) {
		cpuid(0x15, &a, &b, &c, &d);
		if (a && b && c) {
			tsc_hz_source = "CPUID 0x15";
			return (u64)c * b / a;
		}
	}
	if (cpu_features.max_leaf >= 0x16) {
		cpuid(0x16, &a, &b, &c, &d);
		if (a & 0xffff) {
			tsc_hz_source = "CPUID 0x16";
			return (u64)(a & 0xffff) * 1000000;
		}
	}
	return 0;
}

/* Count TSC ticks over CAL_MS of PIT channel 2 in mode 0 (one-shot). */
static u64 from_pit(void)
{
	u32 count = PIT_HZ * CAL_MS / 1000;
	u8 gate = inb(PIT_GATE);

	outb(PIT_GATE, (gate & ~0x02) | 0x01);	/* speaker off, gate on */
	outb(PIT_CMD, 0xb0);			/* ch2, lo/hi byte, mode 0, binary */
	outb(PIT_CH2, count & 0xff);
	outb(PIT_CH2, count >> 8);
	u64 t0 = rdtsc_ordered();
	u64 spins = 0;
	while (!(inb(PIT_GATE) & 0x20))
		if (++spins > 100000000ul) {
			outb(PIT_GATE, gate);
			return 0;	/* no PIT */
		}
	u64 t1 = rdtsc_ordered();
	outb(PIT_GATE, gate);
	tsc_hz_source = "PIT calibration";
	return (t1 - t0) * 1000 / CAL_MS;
}

void tsc_init(void);
void tsc_init(void)
{
	tsc_hz = from_cpuid();
	if (!tsc_hz)
		tsc_hz = from_pit();
}

u64 tsc_to_ns(u64 ticks)
{
	if (!tsc_hz)
		return 0;
	/* Split so nothing overflows 64 bits for any tsc_hz below 18 GHz. */
	return ticks / tsc_hz * 1000000000ul + ticks % tsc_hz * 1000000000ul / tsc_hz;
}
