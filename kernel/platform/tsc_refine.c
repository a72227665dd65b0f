/*
 * tsc_refine.c — the verdict on a TSC rate from CPUID against one measured
 * over a long window (what and why: kernel/platform/tsc_refine.h).
 */
#include "kernel/kernel.h"
#include "kernel/platform/tsc_refine.h"

#define PPM	1000000ul

/* a * b / c without overflow while (a % c) * b fits 64 bits. */
static u64 mul_div(u64 a, u64 b, u64 c)
{
	return a / c * b + a % c * b / c;
}

enum tsc_refine_verdict tsc_refine_decide(const struct tsc_refine_in *in,
					  struct tsc_refine_out *out)
{
	*out = (struct tsc_refine_out){ 0 };
	if (!in->cpuid_hz || !in->tsc_ticks || !in->ref_ticks || !in->ref_hz)
		return TSC_REFINE_NONE;

	u64 hz = mul_div(in->tsc_ticks, in->ref_hz, in->ref_ticks);
	u64 diff = hz > in->cpuid_hz ? hz - in->cpuid_hz : in->cpuid_hz - hz;

	out->measured_hz = hz;
	out->ppm = (s64)mul_div(diff, PPM, in->cpuid_hz) * (hz < in->cpuid_hz ? -1 : 1);
	/* Each end is off by up to its bracket in TSC ticks and by up to
	 * one reference tick (the reference counts whole ticks). */
	out->error_ppm = (in->bracket_ticks * PPM + in->tsc_ticks - 1) / in->tsc_ticks +
			 (2 * PPM + in->ref_ticks - 1) / in->ref_ticks;
	if (hz / 2 >= in->cpuid_hz || in->cpuid_hz / 2 >= hz)
		return TSC_REFINE_ODD;
	if (out->error_ppm * TSC_REFINE_SLACK > TSC_REFINE_PPM)
		return TSC_REFINE_SHORT;
	return diff * PPM > in->cpuid_hz * TSC_REFINE_PPM ? TSC_REFINE_ADOPT : TSC_REFINE_AGREE;
}

const char *tsc_refine_verdict_name(enum tsc_refine_verdict v)
{
	static const char *const names[] = {
		[TSC_REFINE_NONE] = "nothing measured",
		[TSC_REFINE_SHORT] = "window too short to tell; CPUID's kept",
		[TSC_REFINE_AGREE] = "they agree; CPUID's kept",
		[TSC_REFINE_ADOPT] = "they disagree; the measured rate adopted",
		[TSC_REFINE_ODD] = "a factor of 2 apart: the reference is suspect; CPUID's kept",
	};

	return (u32)v < ARRAY_SIZE(names) ? names[v] : "?";
}
