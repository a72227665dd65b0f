/*
 * quiet_plan.h — which MSR bits turn turbo or the hardware prefetchers off
 * on one CPU (kernel/platform/quiet_plan.c): a decision on CPUID values and
 * one MSR already read, with no access of its own, so the host tests run
 * it against model presets. kernel/platform/quiet.c applies the plan.
 */
#ifndef BAREPERF_KERNEL_QUIET_PLAN_H
#define BAREPERF_KERNEL_QUIET_PLAN_H

#include "kernel/x86.h"
#include <uapi/perf_ring.h>	/* BP_QUIET_* */

/* What the plan looks at, read on the CPU it is for. */
struct quiet_cpu {
	bool intel, amd;
	u32 family, model;		/* display family/model (CPUID.1:EAX) */
	bool hypervisor;		/* CPUID.1:ECX[31]: a guest */
	u32 core_type;			/* CPUID.1AH:EAX[31:24] on hybrids, else 0 */
	u32 l06_eax;			/* CPUID.06H:EAX */
	u64 misc_enable;		/* IA32_MISC_ENABLE (Intel), 0 if unreadable */
	u32 l80000007_edx;		/* CPUID.80000007H:EDX (AMD), 0 if absent */
};

struct quiet_change {
	u32 msr;
	u64 bits;			/* to set */
	const char *name;		/* the register, for messages */
};

/* Registers one setting changes at most. */
#define QUIET_PLAN_MAX	2

/*
 * The changes one setting (BP_QUIET_TURBO_OFF or BP_QUIET_PREFETCH_OFF)
 * needs on this CPU, in c[0..*nc). Returns 0 (with *nc == 0 and why saying
 * so when there is nothing to do); -E_NODEV with why filled when the CPU
 * has no documented control; -E_BUSY when the control is not the guest's
 * (turbo under a hypervisor: the host's).
 */
int quiet_plan(const struct quiet_cpu *cpu, u32 what, struct quiet_change c[QUIET_PLAN_MAX],
	       int *nc, char *why, size_t n);

#endif
