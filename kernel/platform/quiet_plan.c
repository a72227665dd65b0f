/*
 * quiet_plan.c — the MSR bits behind turbo=off and prefetch=off on one CPU
 * (what and why: kernel/platform/quiet_plan.h). MSRs from the SDM Vol. 4
 * (Intel) and AMD's processor programming references.
 */
#include "kernel/kernel.h"
#include "kernel/platform/quiet_plan.h"

/* Intel */
#define MSR_IA32_PERF_CTL		0x199
#define   PERF_CTL_TURBO_DISENGAGE	(1ull << 32)	/* IDA/Turbo disengage, thread scope */
#define MSR_IA32_MISC_ENABLE		0x1a0
#define   MISC_ENABLE_TURBO_DISABLE	(1ull << 38)	/* IDA disable, package scope */
#define MSR_MISC_FEATURE_CONTROL	0x1a4		/* "hardware prefetcher control" */
#define   PREFETCH_L2_HW		(1ull << 0)
#define   PREFETCH_L2_ADJACENT		(1ull << 1)
#define   PREFETCH_DCU_HW		(1ull << 2)
#define   PREFETCH_DCU_IP		(1ull << 3)
#define CPUID_06_EAX_TURBO		(1u << 1)
/* AMD */
#define MSR_AMD_HWCR			0xc0010015
#define   HWCR_CPB_DIS			(1ull << 25)	/* core performance boost disable */
#define MSR_AMD_PREFETCH_CONTROL	0xc0000108	/* family 19h and later */
#define   AMD_PF_L1_STREAM		(1ull << 0)
#define   AMD_PF_L1_STRIDE		(1ull << 1)
#define   AMD_PF_L1_REGION		(1ull << 2)
#define   AMD_PF_L2_STREAM		(1ull << 3)
#define   AMD_PF_UP_DOWN		(1ull << 5)
#define CPUID_8000_0007_EDX_CPB		(1u << 9)

static void add(struct quiet_change *c, int *nc, u32 msr, u64 bits, const char *name)
{
	c[(*nc)++] = (struct quiet_change){ msr, bits, name };
}

static int intel_turbo(const struct quiet_cpu *cpu, struct quiet_change *c, int *nc, char *why,
		       size_t n)
{
	/* With MISC_ENABLE[38] set, CPUID.06H:EAX[1] reads 0 (SDM Vol. 4,
	 * Table 2-2): no turbo bit and no disable bit means no turbo. */
	if (!(cpu->l06_eax & CPUID_06_EAX_TURBO) && !(cpu->misc_enable & MISC_ENABLE_TURBO_DISABLE)) {
		ksnprintf(why, n, "no turbo on this CPU (CPUID.06H:EAX[1] = 0)");
		return 0;
	}
	add(c, nc, MSR_IA32_MISC_ENABLE, MISC_ENABLE_TURBO_DISABLE, "IA32_MISC_ENABLE[38]");
	add(c, nc, MSR_IA32_PERF_CTL, PERF_CTL_TURBO_DISENGAGE, "IA32_PERF_CTL[32]");
	return 0;
}

int quiet_plan(const struct quiet_cpu *cpu, u32 what, struct quiet_change c[QUIET_PLAN_MAX],
	       int *nc, char *why, size_t n)
{
	*nc = 0;
	why[0] = 0;
	if (what == BP_QUIET_TURBO_OFF && cpu->intel)
		return intel_turbo(cpu, c, nc, why, n);
	if (what == BP_QUIET_TURBO_OFF && cpu->amd) {
		if (!(cpu->l80000007_edx & CPUID_8000_0007_EDX_CPB)) {
			ksnprintf(why, n, "no core performance boost on this CPU "
				  "(CPUID.80000007H:EDX[9] = 0)");
			return 0;
		}
		add(c, nc, MSR_AMD_HWCR, HWCR_CPB_DIS, "HWCR.CpbDis");
		return 0;
	}
	if (what == BP_QUIET_PREFETCH_OFF && cpu->intel) {
		add(c, nc, MSR_MISC_FEATURE_CONTROL, PREFETCH_L2_HW | PREFETCH_L2_ADJACENT |
		    PREFETCH_DCU_HW | PREFETCH_DCU_IP, "MSR 1A4H[3:0]");
		return 0;
	}
	if (what == BP_QUIET_PREFETCH_OFF && cpu->amd && cpu->family >= 0x19) {
		add(c, nc, MSR_AMD_PREFETCH_CONTROL, AMD_PF_L1_STREAM | AMD_PF_L1_STRIDE |
		    AMD_PF_L1_REGION | AMD_PF_L2_STREAM | AMD_PF_UP_DOWN, "PrefetchControl");
		return 0;
	}
	ksnprintf(why, n, "no documented control on %s family %#x",
		  cpu->intel ? "GenuineIntel" : cpu->amd ? "AuthenticAMD" : "this vendor", cpu->family);
	return -E_NODEV;
}
