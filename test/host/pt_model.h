/*
 * pt_model.h — a register-level model of Intel Processor Trace output for
 * host tests of pmu/trace/pt.c (built with -DPMU_HOST_MODEL: pmu/hw.h's MSR,
 * CPUID and LVT PC accesses land here).
 *
 * What it models, from the SDM (Vol. 3C ch. 33), written here rather than
 * taken from pmu/regs.h so a wrong constant in the driver shows up:
 *   - CPUID leaves 0, 07H (EBX[25]) and 14H (sub-leaves 0 and 1);
 *   - IA32_RTIT_CTL (0x570): reserved bits, ToPA without ToPA support,
 *     ADDRn_CFG beyond the ranges, and any change other than TraceEn while
 *     TraceEn is 1 raise #GP (33.2.8.2);
 *   - IA32_RTIT_STATUS (0x571), _OUTPUT_BASE (0x560), _OUTPUT_MASK_PTRS
 *     (0x561), _ADDRn_A/B (0x580..): #GP when written with TraceEn 1;
 *     OUTPUT_BASE[6:0] must be 0; MASK_PTRS[6:0] read as 1s (33.2.8.7-8);
 *   - the output engine: bytes written through the ToPA tables (END
 *     entries chain tables, a region of 4 KiB << Size is filled, then the
 *     next entry; INT raises the ToPA PMI: IA32_PERF_GLOBAL_STATUS bit 55,
 *     cleared through IA32_PERF_GLOBAL_OVF_CTRL; STOP sets
 *     RTIT_STATUS.Stopped and no byte is written after), or through one
 *     single-range region that wraps (33.2.7);
 *   - LVT PC: a PMI is delivered as an NMI (the callback) unless masked,
 *     and the delivery masks it (SDM Vol. 3A 11.5.1).
 * Physical addresses are host pointers.
 */
#ifndef BAREPERF_TEST_HOST_PT_MODEL_H
#define BAREPERF_TEST_HOST_PT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pt_model_cfg {
	uint32_t max_leaf;		/* CPUID.0:EAX */
	bool pt;			/* CPUID.(7,0):EBX[25] */
	bool topa, topa_multi, single_range, ip_filter;
	uint32_t nr_ranges;
};

struct pt_wrmsr {
	uint32_t msr;
	uint64_t val;
};

struct pt_model {
	struct pt_model_cfg cfg;
	uint64_t ctl, status, base, mask_ptrs, addr[8], global_status;
	uint32_t lvtpc;
	uint64_t written, dropped;		/* trace bytes stored / not stored */
	unsigned faults;
	char last_fault[160];
	unsigned pmis, pmis_masked;
	void (*nmi)(void *arg);
	void *nmi_arg;
	struct pt_wrmsr log[4096];		/* every WRMSR, in order */
	size_t nlog;
};

extern struct pt_model *pt_model;

void ptm_init(struct pt_model *m, const struct pt_model_cfg *cfg);
/* The processor writes n trace bytes (PMIs are delivered as they arise). */
void ptm_emit(struct pt_model *m, const uint8_t *bytes, size_t n);
/* The last value written to msr (0 if never). */
uint64_t ptm_last(const struct pt_model *m, uint32_t msr);

#endif
