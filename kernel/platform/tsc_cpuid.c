/*
 * tsc_cpuid.c — the TSC frequency from a hypervisor's timing leaf
 * 40000010H (EAX: TSC kHz; VMware's, also KVM's under QEMU's
 * vmware-cpuid-freq), else from CPUID leaves 15H and 16H (SDM Vol. 2A
 * CPUID; Vol. 3B 19.7.3 "Determining the Processor Base Frequency"):
 *   TSC = crystal Hz (15H ECX) x numerator (15H EBX) / denominator (15H EAX).
 * Skylake, Kaby Lake, Coffee Lake and Comet Lake client parts and Goldmont
 * report the ratio but a crystal of 0: the SDM's table of nominal crystal
 * frequencies gives 24 MHz for the Core parts and 19.2 MHz for Goldmont,
 * and Linux's native_calibrate_tsc uses 25 MHz for Denverton. Other parts
 * with crystal 0 (Skylake-SP among them, whose 25 MHz table entry
 * disagrees with its base frequency) get the crystal from 16H's base MHz,
 * as Linux does: 16H is rounded to 1 MHz, so a model crystal is preferred
 * and 16H checks it.
 */
#include "kernel/platform/tsc_cpuid.h"

/* Intel family 6 models with a known crystal and a 15H crystal of 0. */
static const struct {
	u8 model;
	u32 crystal_hz;
} model_crystal[] = {
	{ 0x4e, 24000000 }, { 0x5e, 24000000 },		/* Skylake client */
	{ 0x8e, 24000000 }, { 0x9e, 24000000 },		/* Kaby, Coffee, Whiskey, Amber Lake */
	{ 0xa5, 24000000 }, { 0xa6, 24000000 },		/* Comet Lake */
	{ 0x5c, 19200000 },				/* Goldmont */
	{ 0x5f, 25000000 },				/* Goldmont-D (Denverton) */
};

static u32 known_crystal(const struct tsc_cpuid *c)
{
	if (!c->intel || c->family != 6)
		return 0;
	for (u32 i = 0; i < sizeof(model_crystal) / sizeof(model_crystal[0]); i++)
		if (model_crystal[i].model == c->model)
			return model_crystal[i].crystal_hz;
	return 0;
}

u64 tsc_hz_from_cpuid(const struct tsc_cpuid *c, enum tsc_cpuid_how *how)
{
	u64 base = c->max_leaf >= 0x16 ? (u64)(c->l16_eax & 0xffff) * 1000000 : 0;

	*how = TSC_CPUID_NONE;
	if (c->hv_tsc_khz) {
		*how = TSC_CPUID_HYPERVISOR;
		return (u64)c->hv_tsc_khz * 1000;
	}
	if (c->max_leaf >= 0x15 && c->l15_eax && c->l15_ebx) {
		u64 num = c->l15_ebx, den = c->l15_eax;
		if (c->l15_ecx) {
			*how = TSC_CPUID_CRYSTAL;
			return c->l15_ecx * num / den;
		}
		u32 xtal = known_crystal(c);
		if (xtal) {
			u64 hz = xtal * num / den;
			/* 16H as a sanity check: within 2% of the base. */
			if (!base || (hz * 50 >= base * 49 && hz * 50 <= base * 51)) {
				*how = TSC_CPUID_MODEL_CRYSTAL;
				return hz;
			}
		}
		if (base) {
			/* crystal = base x den / num, then TSC = crystal x num / den:
			 * the base itself, less the crystal's rounding to 1 Hz. */
			*how = TSC_CPUID_BASE;
			return base * den / num * num / den;
		}
	}
	if (base) {
		*how = TSC_CPUID_16H;
		return base;
	}
	return 0;
}

const char *tsc_cpuid_how_name(enum tsc_cpuid_how how)
{
	switch (how) {
	case TSC_CPUID_HYPERVISOR: return "CPUID 0x40000010, the hypervisor's";
	case TSC_CPUID_CRYSTAL: return "CPUID 0x15";
	case TSC_CPUID_MODEL_CRYSTAL: return "CPUID 0x15 ratio, the model's crystal";
	case TSC_CPUID_BASE: return "CPUID 0x15 ratio, crystal from 0x16";
	case TSC_CPUID_16H: return "CPUID 0x16";
	default: return "none";
	}
}
