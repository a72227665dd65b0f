/*
 * quiet.c — turbo and hardware prefetchers off on request (what and why:
 * kernel/platform/quiet.h). Which MSR bits, per CPU, is quiet_plan's
 * (kernel/platform/quiet_plan.c); each change is a read, a write and a read back
 * through the *_safe accessors, so a #GP or a write that does not hold is
 * a message, never a crash.
 */
#include "kernel/kernel.h"
#include "kernel/percpu.h"
#include "kernel/platform/quiet.h"
#include "kernel/platform/quiet_plan.h"

#define QUIET_MAX_CPUS			64

struct cpu_result {
	u32 done, refused;		/* BP_QUIET_* */
	char why[2][112];		/* per setting, the first refusal's reason */
};

static u32 asked, done_all, refused_any;
static struct cpu_result result[QUIET_MAX_CPUS];

/* Set bits in an MSR; 0, or -E_FAULT with why filled. */
static int set_bits(const struct quiet_change *c, char *why, size_t n)
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

/* What quiet_plan looks at, read on this CPU (a hybrid's core type is
 * its own). */
static void read_cpu(struct quiet_cpu *q)
{
	u32 a, b, c, d;

	memset(q, 0, sizeof(*q));
	q->intel = !strcmp(cpu_features.vendor, "GenuineIntel");
	q->amd = !strcmp(cpu_features.vendor, "AuthenticAMD");
	q->family = cpu_features.family;
	q->model = cpu_features.model;
	q->hypervisor = cpu_features.hypervisor;
	if (q->intel) {
		if (cpu_features.max_leaf >= 0x06) {
			cpuid(0x06, &a, &b, &c, &d);
			q->l06_eax = a;
		}
		if (cpu_features.max_leaf >= 0x1a) {
			cpuid(0x1a, &a, &b, &c, &d);
			q->core_type = a >> 24;
		}
		if (rdmsr_safe(0x1a0, &q->misc_enable))		/* IA32_MISC_ENABLE */
			q->misc_enable = 0;
	}
	if (q->amd && cpu_features.max_ext_leaf >= 0x80000007) {
		cpuid(0x80000007, &a, &b, &c, &d);
		q->l80000007_edx = d;
	}
}

static void apply_cpu(void *arg)
{
	u32 cpu = this_cpu()->cpu;
	struct cpu_result *r = &result[cpu < QUIET_MAX_CPUS ? cpu : QUIET_MAX_CPUS - 1];
	static const u32 settings[] = { BP_QUIET_TURBO_OFF, BP_QUIET_PREFETCH_OFF };

	struct quiet_cpu q;

	(void)arg;
	memset(r, 0, sizeof(*r));
	read_cpu(&q);
	for (int s = 0; s < 2; s++) {
		struct quiet_change c[QUIET_PLAN_MAX];
		int nc, i;
		if (!(asked & settings[s]))
			continue;
		if (quiet_plan(&q, settings[s], c, &nc, r->why[s], sizeof(r->why[s]))) {
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
