/*
 * quiet_plan.c — the MSR bits behind turbo=off and prefetch=off on one CPU
 * (what and why: kernel/platform/quiet_plan.h). MSRs from the SDM Vol. 4
 * (Intel) and AMD's processor programming references.
 *
 * A guest does not control turbo: the host's frequency policy runs
 * whatever the guest writes. KVM reads CPUID.06H:EAX[1] as 0 and keeps
 * any value written to IA32_MISC_ENABLE, so a write and a read-back
 * there "hold" while nothing changed; HWCR on AMD is the same.
 *
 * MSR 1A4H (MSR_MISC_FEATURE_CONTROL) has per-core-type bits. The big
 * cores from Nehalem on, the Crestmont Atoms and the hybrids' cores use
 * bits 0-3: L2 hardware, L2 adjacent line, DCU hardware, DCU IP. Goldmont,
 * Goldmont Plus, Tremont (also Lakefield's E-cores) and Silvermont-D have
 * only L2 hardware (bit 0) and DCU hardware (bit 2), and Xeon Phi has them
 * at bit 1 (L2) and bit 0 (DCU); the other bits are reserved there.
 * Other Atoms have no documented control.
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
#define   PHI_PREFETCH_DCU_HW		(1ull << 0)
#define   PHI_PREFETCH_L2_HW		(1ull << 1)
#define CPUID_06_EAX_TURBO		(1u << 1)
#define HYBRID_CORE_ATOM		0x20		/* CPUID.1AH:EAX[31:24] */
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

/* Family 6 models whose MSR 1A4H has L2 and DCU hardware prefetchers only. */
static const u8 l2_dcu_only[] = {
	0x4d,				/* Silvermont-D (Avoton) */
	0x5c, 0x5f, 0x7a,		/* Goldmont, Goldmont-D, Goldmont Plus */
	0x86, 0x96, 0x9c,		/* Tremont: -D, Elkhart Lake, Jasper Lake */
};
/* Family 6 models with the four bits 0-3 (from Nehalem; Crestmont). */
static const u8 four_bits[] = {
	0x1a, 0x1e, 0x1f, 0x2e, 0x25, 0x2c, 0x2f,	/* Nehalem, Westmere */
	0x2a, 0x2d, 0x3a, 0x3e,				/* Sandy Bridge, Ivy Bridge */
	0x3c, 0x3f, 0x45, 0x46,				/* Haswell */
	0x3d, 0x47, 0x4f, 0x56,				/* Broadwell */
	0x4e, 0x5e, 0x55, 0x8e, 0x9e, 0xa5, 0xa6,	/* Skylake .. Comet Lake */
	0x66, 0x6a, 0x6c, 0x7d, 0x7e, 0x9d,		/* Cannon Lake, Ice Lake */
	0x8c, 0x8d, 0xa7, 0x8f, 0xcf,			/* Tiger, Rocket, Sapphire, Emerald */
	0xad, 0xae,					/* Granite Rapids */
	0x97, 0x9a, 0xb7, 0xba, 0xbf, 0xbe,		/* Alder Lake, Raptor Lake */
	0xaa, 0xac, 0xc5, 0xc6, 0xb5,			/* Meteor Lake, Arrow Lake */
	0xaf, 0xb6,					/* Crestmont: Sierra Forest, Grand Ridge */
};

static bool model_in(const struct quiet_cpu *cpu, const u8 *m, size_t n)
{
	if (cpu->family != 6)
		return false;
	for (size_t i = 0; i < n; i++)
		if (cpu->model == m[i])
			return true;
	return false;
}

/* MSR 1A4H's prefetcher bits on this core (0: none documented). */
static u64 intel_prefetch_bits(const struct quiet_cpu *cpu)
{
	/* Lakefield (8AH): Sunny Cove P-core, Tremont E-cores. */
	if (cpu->family == 6 && cpu->model == 0x8a)
		return cpu->core_type == HYBRID_CORE_ATOM ? PREFETCH_L2_HW | PREFETCH_DCU_HW :
		       PREFETCH_L2_HW | PREFETCH_L2_ADJACENT | PREFETCH_DCU_HW | PREFETCH_DCU_IP;
	if (cpu->family == 6 && (cpu->model == 0x57 || cpu->model == 0x85))	/* Xeon Phi */
		return PHI_PREFETCH_L2_HW | PHI_PREFETCH_DCU_HW;
	if (model_in(cpu, l2_dcu_only, ARRAY_SIZE(l2_dcu_only)))
		return PREFETCH_L2_HW | PREFETCH_DCU_HW;
	if (model_in(cpu, four_bits, ARRAY_SIZE(four_bits)))
		return PREFETCH_L2_HW | PREFETCH_L2_ADJACENT | PREFETCH_DCU_HW | PREFETCH_DCU_IP;
	return 0;
}

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
	if (what == BP_QUIET_TURBO_OFF && cpu->hypervisor && (cpu->intel || cpu->amd)) {
		ksnprintf(why, n, "not controllable from a guest: the host's turbo runs as the host "
			  "sets it");
		return -E_BUSY;
	}
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
		u64 bits = intel_prefetch_bits(cpu);
		if (bits) {
			add(c, nc, MSR_MISC_FEATURE_CONTROL, bits,
			    bits == 0xf ? "MSR 1A4H[3:0]" : bits == 0x5 ? "MSR 1A4H[2,0]" :
			    "MSR 1A4H[1:0]");
			return 0;
		}
		ksnprintf(why, n, "no documented control on family %#x model %#x", cpu->family,
			  cpu->model);
		return -E_NODEV;
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
