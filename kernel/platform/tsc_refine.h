/*
 * tsc_refine.h — whether a TSC rate CPUID gave (kernel/platform/tsc_cpuid.h)
 * gives way to the rate measured against a reference clock over a long
 * window: kernel/platform/tsc.c opens the window as soon as the HPET is
 * known and closes it at the end of the boot. A crystal CPUID states can be off by
 * thousands of ppm (a 24 MHz crystal that runs at 23.913 MHz is 3600 ppm
 * slow), which no later step would notice. Pure arithmetic, so the host
 * tests run it against tables.
 */
#ifndef BAREPERF_KERNEL_TSC_REFINE_H
#define BAREPERF_KERNEL_TSC_REFINE_H

#include "kernel/x86.h"

#define TSC_REFINE_PPM		1000	/* a disagreement past this is adopted */
#define TSC_REFINE_SLACK	4	/* the window's own error must be this many
					 * times smaller than TSC_REFINE_PPM */

struct tsc_refine_in {
	u64 cpuid_hz;			/* the rate CPUID gave */
	u64 tsc_ticks;			/* TSC ticks over the window */
	u64 ref_ticks;			/* reference ticks over the same window */
	u64 ref_hz;			/* the reference's rate */
	u64 bracket_ticks;		/* TSC ticks between the reads around each
					 * end's reference read, summed: how far
					 * tsc_ticks may be off */
};

enum tsc_refine_verdict {
	TSC_REFINE_NONE,		/* nothing to measure: no rate, no ticks */
	TSC_REFINE_SHORT,		/* the window is too short to tell
					 * TSC_REFINE_PPM apart: keep CPUID's */
	TSC_REFINE_AGREE,		/* within TSC_REFINE_PPM: keep CPUID's */
	TSC_REFINE_ADOPT,		/* they disagree: the measured rate holds */
	TSC_REFINE_ODD,			/* a factor of 2 or more apart: a broken
					 * reference more likely than a wrong
					 * crystal; keep CPUID's */
};

struct tsc_refine_out {
	u64 measured_hz;		/* 0 under TSC_REFINE_NONE */
	s64 ppm;			/* measured against CPUID's, in ppm */
	u64 error_ppm;			/* the window's own error bound */
};

/* The verdict on one window, and the figures behind it (*out). Exact for
 * windows up to 100 s of a 100 MHz reference. NMI-safe: yes. */
enum tsc_refine_verdict tsc_refine_decide(const struct tsc_refine_in *in,
					  struct tsc_refine_out *out);
const char *tsc_refine_verdict_name(enum tsc_refine_verdict v);

/* Tests: take hz as the rate CPUID gave (under TCG it gives none): it
 * becomes tsc_hz, and the window against the HPET opens now, for the
 * boot's tsc_refine to close. Nothing without an HPET. */
void tsc_test_cpuid_hz(u64 hz);

#endif
