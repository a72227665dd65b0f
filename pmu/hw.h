/*
 * hw.h — how pmu/ reaches the hardware: MSRs, RDPMC, CPUID and the local
 * APIC's LVT performance-counter entry. Private to pmu/ (and the host model).
 *
 * Kernel build: thin wrappers over kernel/x86.h (and the TSC as the clock
 * of event times). The LVT PC hooks are
 * pmu_lvtpc_read/pmu_lvtpc_write, defined weak (no-ops) in pmu/cpus.c
 * until the local APIC driver defines the real ones.
 *
 * Host build (-DPMU_HOST_MODEL): every access goes to the register-level
 * PMU model (test/host/pmu_model.c). A #GP/#UD there is recorded; the
 * _safe variants return -E_FAULT, the others fail the running test.
 */
#ifndef BAREPERF_PMU_HW_H
#define BAREPERF_PMU_HW_H

#include "kernel/x86.h"
#include "pmu/pmu.h"		/* pmu_lvtpc_read/pmu_lvtpc_write */

#ifdef PMU_HOST_MODEL

u64 pmu_hw_rdmsr(u32 msr);
void pmu_hw_wrmsr(u32 msr, u64 val);
int pmu_hw_rdmsr_safe(u32 msr, u64 *val);
int pmu_hw_wrmsr_safe(u32 msr, u64 val);
u64 pmu_hw_rdpmc(u32 ecx);
int pmu_hw_rdpmc_safe(u32 ecx, u64 *val);
void pmu_hw_cpuid(u32 leaf, u32 sub, u32 r[4]);
/* The clock event times are measured with: the model's cycle count. */
u64 pmu_hw_rdtsc(void);

#else

static inline u64 pmu_hw_rdmsr(u32 msr) { return rdmsr(msr); }
static inline void pmu_hw_wrmsr(u32 msr, u64 val) { wrmsr(msr, val); }
static inline int pmu_hw_rdmsr_safe(u32 msr, u64 *val) { return rdmsr_safe(msr, val); }
static inline int pmu_hw_wrmsr_safe(u32 msr, u64 val) { return wrmsr_safe(msr, val); }
/* Serialized: lfence; rdpmc; lfence (kernel/x86.h). */
static inline u64 pmu_hw_rdpmc(u32 ecx) { return rdpmc(ecx); }
static inline int pmu_hw_rdpmc_safe(u32 ecx, u64 *val) { return rdpmc_safe(ecx, val); }
static inline void pmu_hw_cpuid(u32 leaf, u32 sub, u32 r[4])
{
	cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3]);
}
/* The clock of time_enabled/time_running: the TSC (NMI-safe). */
static inline u64 pmu_hw_rdtsc(void) { return rdtsc(); }

#endif
#endif
