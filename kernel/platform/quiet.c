/*
 * quiet.c — turbo and hardware prefetchers off on request (what and why:
 * kernel/platform/quiet.h). MSRs from the SDM Vol. 4 (Intel) and AMD's processor
 * programming references; each change is a read, a write and a read back
 * through the *_safe accessors, so a #GP or a write that does not hold is
 * a message, never a crash.
 */
#include "kernel/kernel.h"
#include "kernel/percpu.h"
#include "kernel/platform/quiet.h"

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
#define CPUID_THERMAL_POWER		0x06
#define   CPUID_06_EAX_TURBO		(1u << 1)
/* AMD */
#define MSR_AMD_HWCR			0xc0010015
#define   HWCR_CPB_DIS			(1ull << 25)	/* core performance boost disable */
#define MSR_AMD_PREFETCH_CONTROL	0xc0000108	/* family 19h and later */
#define   AMD_PF_L1_STREAM		(1ull << 0)
#define   AMD_PF_L1_STRIDE		(1ull << 1)
#define   AMD_PF_L1_REGION		(1ull << 2)
#define   AMD_PF_L2_STREAM		(1ull << 3)
#define   AMD_PF_UP_DOWN		(1ull << 5)
#define CPUID_AMD_POWER			0x80000007
#define   CPUID_8000_0007_EDX_CPB	(1u << 9)

#define QUIET_MAX_CPUS			64

struct change {
	u32 msr;
	u64 bits;
	const char *name;		/* the register, for messages */
};

struct cpu_result {
	u32 done, refused;		/* BP_QUIET_* */
	char why[2][112];		/* per setting, the first refusal's reason */
};

static u32 asked, done_all, refused_any;
static struct cpu_result result[QUIET_MAX_CPUS];

static bool is_intel(void) { return !strcmp(cpu_features.vendor, "GenuineIntel"); }
static bool is_amd(void) { return !strcmp(cpu_features.vendor, "AuthenticAMD"); }

/* Set bits in an MSR; 0, or -E_FAULT with why filled. */
static int set_bits(const struct change *c, char *why, size_t n)
{
	u64 v, back;

	if (rdmsr_safe(c->msr, &v)) {
		ksnprintf(why, n, "%s (MSR %#x): #GP on rdmsr", c->name, c->msr);
		return -E_FAULT;
	}
	if ((v & c->bits) == c->bits)
		return 0;
	if (wrmsr_safe(c->msr, v | c->bits)) {
		ksnprintf(why, n, "%s (MSR %#x): #GP on wrmsr", c->name, c->msr);
		return -E_FAULT;
	}
	if (rdmsr_safe(c->msr, &back) || (back & c->bits) != c->bits) {
		ksnprintf(why, n, "%s (MSR %#x): the write did not hold (read back %#lx; "
			  "a hypervisor ignoring it?)", c->name, c->msr, back);
		return -E_FAULT;
	}
	return 0;
}

/* The registers a setting changes on this CPU; 0 if there is nothing to do
 * (why then says so), -E_NODEV if no documented control exists. */
static int plan(u32 what, struct change *c, int *nc, char *why, size_t n)
{
	u32 a, b, cc, d;

	*nc = 0;
	if (what == BP_QUIET_TURBO_OFF && is_intel()) {
		u64 misc = 0;
		cpuid(CPUID_THERMAL_POWER, &a, &b, &cc, &d);
		rdmsr_safe(MSR_IA32_MISC_ENABLE, &misc);
		/* With MISC_ENABLE[38] set, CPUID.06H:EAX[1] reads 0 (SDM Vol. 4,
		 * Table 2-2): no turbo bit and no disable bit means no turbo. */
		if (!(a & CPUID_06_EAX_TURBO) && !(misc & MISC_ENABLE_TURBO_DISABLE)) {
			ksnprintf(why, n, "no turbo on this CPU (CPUID.06H:EAX[1] = 0)");
			return 0;
		}
		c[(*nc)++] = (struct change){ MSR_IA32_MISC_ENABLE, MISC_ENABLE_TURBO_DISABLE,
					      "IA32_MISC_ENABLE[38]" };
		c[(*nc)++] = (struct change){ MSR_IA32_PERF_CTL, PERF_CTL_TURBO_DISENGAGE,
					      "IA32_PERF_CTL[32]" };
		return 0;
	}
	if (what == BP_QUIET_TURBO_OFF && is_amd()) {
		cpuid(0x80000000, &a, &b, &cc, &d);
		if (a >= CPUID_AMD_POWER)
			cpuid(CPUID_AMD_POWER, &a, &b, &cc, &d);
		else
			d = 0;
		if (!(d & CPUID_8000_0007_EDX_CPB)) {
			ksnprintf(why, n, "no core performance boost on this CPU "
				  "(CPUID.80000007H:EDX[9] = 0)");
			return 0;
		}
		c[(*nc)++] = (struct change){ MSR_AMD_HWCR, HWCR_CPB_DIS, "HWCR.CpbDis" };
		return 0;
	}
	if (what == BP_QUIET_PREFETCH_OFF && is_intel()) {
		c[(*nc)++] = (struct change){ MSR_MISC_FEATURE_CONTROL,
					      PREFETCH_L2_HW | PREFETCH_L2_ADJACENT |
					      PREFETCH_DCU_HW | PREFETCH_DCU_IP, "MSR 1A4H[3:0]" };
		return 0;
	}
	if (what == BP_QUIET_PREFETCH_OFF && is_amd() && cpu_features.family >= 0x19) {
		c[(*nc)++] = (struct change){ MSR_AMD_PREFETCH_CONTROL,
					      AMD_PF_L1_STREAM | AMD_PF_L1_STRIDE | AMD_PF_L1_REGION |
					      AMD_PF_L2_STREAM | AMD_PF_UP_DOWN, "PrefetchControl" };
		return 0;
	}
	ksnprintf(why, n, "no documented control on %s family %#x", cpu_features.vendor,
		  cpu_features.family);
	return -E_NODEV;
}

static void apply_cpu(void *arg)
{
	u32 cpu = this_cpu()->cpu;
	struct cpu_result *r = &result[cpu < QUIET_MAX_CPUS ? cpu : QUIET_MAX_CPUS - 1];
	static const u32 settings[] = { BP_QUIET_TURBO_OFF, BP_QUIET_PREFETCH_OFF };

	(void)arg;
	memset(r, 0, sizeof(*r));
	for (int s = 0; s < 2; s++) {
		struct change c[2];
		int nc, i;
		if (!(asked & settings[s]))
			continue;
		if (plan(settings[s], c, &nc, r->why[s], sizeof(r->why[s]))) {
			r->refused |= settings[s];
			continue;
		}
		for (i = 0; i < nc; i++)
			if (set_bits(&c[i], r->why[s], sizeof(r->why[s])))
				break;
		if (i < nc) {
			r->refused |= settings[s];
			continue;
		}
		r->done |= settings[s];
		if (nc)
			ksnprintf(r->why[s], sizeof(r->why[s]), "%s%s%s set", c[0].name,
				  nc > 1 ? ", " : "", nc > 1 ? c[1].name : "");
	}
}

void quiet_setup(void)
{
	static const char *const names[] = { "turbo=off", "prefetch=off" };
	u32 ncpus = MIN(smp_cpus(), (u32)QUIET_MAX_CPUS);

	asked = (kopt.turbo_off ? BP_QUIET_TURBO_OFF : 0) |
		(kopt.prefetch_off ? BP_QUIET_PREFETCH_OFF : 0);
	done_all = refused_any = 0;
	if (!asked)
		return;
	smp_call_all(apply_cpu, NULL);
	done_all = asked;
	for (int s = 0; s < 2; s++) {
		u32 bit = 1u << s, ok = 0;
		int first_bad = -1;
		if (!(asked & bit))
			continue;
		for (u32 i = 0; i < ncpus; i++) {
			if (result[i].done & bit)
				ok++;
			else if (first_bad < 0)
				first_bad = (int)i;
		}
		if (first_bad < 0) {
			kprintf("quiet: %s done on %u of %u CPUs: %s\n", names[s], ok, ncpus,
				result[0].why[s]);
			continue;
		}
		done_all &= ~bit;
		refused_any |= bit;
		kprintf("quiet: %s refused on %u of %u CPUs (cpu %d: %s); left as the firmware "
			"set it there\n", names[s], ncpus - ok, ncpus, first_bad, result[first_bad].why[s]);
	}
	kprintf("quiet: idle CPUs wait in hlt with interrupts on; the CPU running the app "
		"never idles\n");
}

void quiet_state(u32 *a, u32 *d, u32 *r)
{
	*a = asked;
	*d = done_all;
	*r = refused_any;
}
