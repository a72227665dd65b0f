/*
 * tsc_cpuid.h — the TSC frequency from CPUID alone (kernel/platform/tsc_cpuid.c):
 * pure arithmetic on the leaf values, so the host tests run it against
 * real CPUs' CPUID dumps.
 */
#ifndef BAREPERF_KERNEL_TSC_CPUID_H
#define BAREPERF_KERNEL_TSC_CPUID_H

#include "kernel/x86.h"

struct tsc_cpuid {
	u32 max_leaf;			/* CPUID.0:EAX */
	bool intel;
	u32 family, model;		/* display family/model (CPUID.1:EAX) */
	u32 l15_eax, l15_ebx, l15_ecx;	/* TSC/crystal ratio denominator, numerator, crystal Hz */
	u32 l16_eax;			/* processor base frequency, MHz */
	u32 hv_tsc_khz;			/* a hypervisor's timing leaf 40000010H:EAX;
					 * 0 where it has none */
};

enum tsc_cpuid_how {
	TSC_CPUID_NONE,			/* CPUID does not tell: calibrate */
	TSC_CPUID_HYPERVISOR,		/* the hypervisor's kHz for the TSC it presents */
	TSC_CPUID_CRYSTAL,		/* 15H with its crystal: exact */
	TSC_CPUID_MODEL_CRYSTAL,	/* 15H ratio x the model's known crystal (SDM 19.7.3) */
	TSC_CPUID_BASE,			/* 15H ratio, crystal derived from 16H's base MHz */
	TSC_CPUID_16H,			/* 16H's base MHz alone (rounded to 1 MHz) */
};

/* TSC Hz from CPUID, and how it was found (*how). A hypervisor's timing
 * leaf comes first: a guest's TSC may be scaled from the host's, whose
 * 15H and 16H the guest sees. 16H is a sanity check
 * on a model crystal: a result more than 2% from the base frequency is
 * not trusted, and the 16H derivation is used instead. NMI-safe: yes. */
u64 tsc_hz_from_cpuid(const struct tsc_cpuid *c, enum tsc_cpuid_how *how);
const char *tsc_cpuid_how_name(enum tsc_cpuid_how how);

#endif
