/*
 * test_pmu_hw — the PMU suite for machines with real counters (KVM with
 * -cpu host, bare metal); `make test-kvm` runs it. Without a PMU every
 * check is reported as SKIP with the reason, never as a pass.
 *
 *   exact      instructions retired by a loop of known length, measured with
 *              n and 2n iterations so start/stop overhead cancels: exactly
 *              2 instructions per iteration
 *   overflow   a counter preset to overflow many times during the loop still
 *              gives the exact 64-bit count
 *   sample     PMIs at a period of instructions: the number of samples
 *              matches count / period and their IPs lie in the loop
 *   firmware   after boot every counter is off (firmware's were switched
 *              off), whatever the boot found enabled
 *   freeze     DEBUGCTL.FREEZE_PERFMON_ON_PMI is set only while a context
 *              asks for it, and only where the probe's safe write took it
 *              (KVM refuses it: SKIP with that reason)
 *   smm        DEBUGCTL.FREEZE_WHILE_SMM is on from boot where the probe
 *              offers it (IA32_PERF_CAPABILITIES[12]; KVM: SKIP)
 *   smi        the SMI count reads and never goes back (Intel MSR_SMI_COUNT;
 *              AMD Zen PMCx02B beside a running context; before Zen: SKIP)
 *   pcore      an Alder or Raptor Lake P-core has GP counters 6-7 and fixed
 *              counter 3 beyond CPUID.0AH (bare metal; a guest: SKIP where
 *              the hypervisor does not offer them)
 *   regs       the register-level checks of test/pmu_regs_check.c on every
 *              GP and fixed index: rdpmc against rdmsr, legacy and full-width
 *              writes, overflow, status and acknowledge, a PMI, all at once
 *              (the same checks pass on the register model: test_pmu_regs)
 *
 * Run with events=none: the test opens the counters itself.
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "apps/run.h"
#include "profile/profile.h"
#include "ringbuf/ringbuf.h"
#include "test/guest/report.h"
#include "test/pmu_regs_check.h"
#include "kernel/percpu.h"
#include "kernel/smp.h"
#include <uapi/perf_ring.h>

extern struct pmu_caps pmu_boot_caps;

/* 2 instructions per iteration: dec, jnz. */
static void __attribute__((noipa)) dec_loop(u64 n)
{
	asm volatile("1: dec %0; jnz 1b" : "+r"(n) : : "cc");
}

static u64 count_loop(struct pmu_ctx *ctx, u64 n)
{
	pmu_start(ctx);
	dec_loop(n);
	pmu_stop(ctx);
	return pmu_read(ctx, 0);
}

static int open_insn(struct pmu_ctx *ctx, u64 period, char *err, size_t n)
{
	struct pmu_event_attr a;
	int e = pmu_event_parse("instructions", &pmu_boot_caps, &a, err, n);

	if (e)
		return e;
	if (period) {
		a.flags |= PMU_ATTR_SAMPLE;
		a.period = period;
	}
	return pmu_open(ctx, &pmu_boot_caps, &a, 1,
			pmu_boot_caps.rdpmc_ok ? 0 : PMU_OPEN_RDMSR, err, n);
}

static void check_exact(void)
{
	struct pmu_ctx ctx;
	char err[160];
	const u64 n = 1000000;

	if (open_insn(&ctx, 0, err, sizeof(err))) {
		report(false, "open instructions: %s", err);
		return;
	}
	count_loop(&ctx, n);			/* warm up */
	u64 a = count_loop(&ctx, n), b = count_loop(&ctx, 2 * n);
	/* The Atoms from Gracemont on (and hybrids' E-cores) over-count
	 * retired instructions around VM exits and interrupts (errata, as
	 * kvm-unit-tests allows): a little more, never less. */
	const struct pmu_caps *pc = &pmu_boot_caps;
	u32 m = pc->model;
	bool atom = pc->intel && (pc->core_type == 0x20 ||
				  (pc->family == 6 && (m == 0xbe || m == 0xaf || m == 0xb6 || m == 0xdd)));
	u64 slack = atom ? 2 * n / 1000 + 64 : 0;
	report(b - a >= 2 * n && b - a <= 2 * n + slack, "2n - n iterations retired %s%lu "
	       "instructions (got %lu)", atom ? "at least " : "exactly ", 2 * n, b - a);
	u64 c = count_loop(&ctx, 2 * n);
	report(c >= b - slack && c <= b + slack, "the same measurement twice gives the same count "
	       "(%lu, %lu%s)", b, c, atom ? ", within an Atom's over-count" : "");
}

static void check_overflow(void)
{
	struct pmu_ctx ctx;
	char err[160];
	const u64 n = 5000000, period = 100003;	/* ~100 overflows of a preset counter */

	if (open_insn(&ctx, period, err, sizeof(err))) {
		report(false, "open sampling instructions: %s", err);
		return;
	}
	u64 a = count_loop(&ctx, n), b = count_loop(&ctx, 2 * n);
	report(b - a == 2 * n, "across %lu counter overflows the count stays exact (%lu)",
	       2 * n / period, b - a);
}

static void check_sample(void)
{
	static struct profile_cfg cfg;
	static u8 buf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));
	char err[160];
	const u64 n = 5000000, period = 100003;
	u64 loop = ksym_address("dec_loop"), off, size;

	ksym_lookup(loop, &off, &size);
	struct profile_opts o = run_opts_boot();
	o.events = "instructions", o.count = "", o.period = period, o.freq = 0;
	o.callchain = false, o.ring_pages = 64;
	if (profile_parse(&o, &cfg, err, sizeof(err)) ||
	    profile_start(&cfg, &(struct profile_app){ .name = "test_pmu_hw" }, NULL, err,
			  sizeof(err))) {
		report(false, "start sampling instructions: %s", err);
		return;
	}
	dec_loop(n);
	profile_stop(0);

	struct bp_ring_reader r;
	const struct bp_record_header *rec;
	u64 samples = 0, inside = 0;
	bp_ring_reader_init(&r, (u8 *)profile_ring(0)->ctl, (1 + cfg.ring_pages) * PAGE_SIZE);
	bp_ring_read_begin(&r);
	while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
		struct bp_sample s;
		if (rec->type != BP_RECORD_SAMPLE || bp_sample_parse(cfg.sample_type, rec, &s))
			continue;
		samples++;
		inside += s.ip >= loop && s.ip < loop + size;
	}
	u64 want = 2 * n / period;
	report(samples >= want && samples <= want + 2,
	       "%lu PMI samples for %lu instructions at period %lu (want %lu..%lu)",
	       samples, 2 * n, period, want, want + 2);
	report(inside + 2 >= samples, "%lu of %lu sample IPs inside dec_loop", inside, samples);
}

#define MSR_DEBUGCTL		0x1d9
#define DEBUGCTL_FREEZE		(1ull << 12)
#define DEBUGCTL_FREEZE_SMM	(1ull << 14)

static void check_firmware_state(void)
{
	const struct pmu_caps *c = &pmu_boot_caps;
	u32 on = 0;
	u64 v;

	for (u32 i = 0; i < c->nr_gp; i++)
		if (!rdmsr_safe(c->gp_sel_base + i * c->stride, &v) && (v & (1ull << 22)))
			on |= 1u << i;
	report(!on, "no GP counter enabled after boot (firmware had 0x%lx on; enabled now 0x%x)",
	       (unsigned long)c->fw_owned, on);
	if (c->has_global) {
		v = 0;
		report(!rdmsr_safe(c->global_ctrl, &v) && !v, "global enables are 0 after boot (0x%lx)",
		       (unsigned long)v);
	}
}

static void check_freeze(void)
{
	const struct pmu_caps *c = &pmu_boot_caps;
	struct pmu_ctx ctx;
	struct pmu_event_attr a;
	char err[160];
	u64 during = 0, after = ~0ull;

	if (!c->freeze) {
		report_skip("DEBUGCTL.FREEZE_PERFMON_ON_PMI: %s", c->intel ?
			    "the probe's safe write was refused (KVM #GPs on it)" :
			    "not an Intel PMU");
		return;
	}
	if (pmu_event_parse("instructions", c, &a, err, sizeof(err)) ||
	    pmu_open(&ctx, c, &a, 1, PMU_OPEN_FREEZE | (c->rdpmc_ok ? 0 : PMU_OPEN_RDMSR), err,
		     sizeof(err))) {
		report(false, "open instructions with freeze: %s", err);
		return;
	}
	pmu_start(&ctx);
	rdmsr_safe(MSR_DEBUGCTL, &during);
	dec_loop(1000);
	pmu_stop(&ctx);
	rdmsr_safe(MSR_DEBUGCTL, &after);
	report((during & DEBUGCTL_FREEZE) && !(after & DEBUGCTL_FREEZE),
	       "FREEZE_PERFMON_ON_PMI set while running, clear after (0x%lx, 0x%lx)",
	       (unsigned long)during, (unsigned long)after);
}

static void check_smm_freeze(void)
{
	const struct pmu_caps *c = &pmu_boot_caps;
	u64 v = 0;

	if (!c->freeze_smm) {
		report_skip("DEBUGCTL.FREEZE_WHILE_SMM: %s", !c->intel ? "not an Intel PMU" :
			    "not offered (IA32_PERF_CAPABILITIES[12] clear, or the write refused)");
		return;
	}
	rdmsr_safe(MSR_DEBUGCTL, &v);
	report(v & DEBUGCTL_FREEZE_SMM, "FREEZE_WHILE_SMM on since boot (DEBUGCTL 0x%lx)",
	       (unsigned long)v);
}

static void check_smi(void)
{
	const struct pmu_caps *c = &pmu_boot_caps;
	struct pmu_ctx ctx;
	struct pmu_event_attr a;
	char err[160];

	if (!c->smi_count) {
		report_skip("SMI count: %s", c->amd ? "AMD before Zen has no SMI event" :
			    "MSR_SMI_COUNT does not read on this CPU");
		return;
	}
	/* AMD counts SMIs beside a running context (one event leaves the
	 * last counter free). */
	bool ctx_on = c->amd && !pmu_event_parse("instructions", c, &a, err, sizeof(err)) &&
		      !pmu_open(&ctx, c, &a, 1, c->rdpmc_ok ? 0 : PMU_OPEN_RDMSR, err, sizeof(err));
	if (ctx_on)
		pmu_start(&ctx);
	s64 x = pmu_smi_count(c);
	dec_loop(10000000);
	s64 y = pmu_smi_count(c);
	if (ctx_on)
		pmu_stop(&ctx);
	report(x >= 0 && y >= x, "%s reads and does not go back (%ld, then %ld)",
	       c->amd ? "PMCx02B (LsSmiRx)" : "MSR_SMI_COUNT", (long)x, (long)y);
}

static void check_pcore(void)
{
	const struct pmu_caps *c = &pmu_boot_caps;
	u32 m = c->model;
	bool adl_rpl = c->intel && c->family == 6 &&
		       (m == 0x97 || m == 0x9a || m == 0xb7 || m == 0xba || m == 0xbf);
	const u64 want = 3ull << 6 | 1ull << (32 + 3);

	if (!adl_rpl || c->core_type != 0x40) {
		report_skip("P-core counters beyond CPUID.0AH: not an Alder or Raptor Lake P-core "
			    "(family %#x model %#x, core type %#x)", c->family, m, c->core_type);
		return;
	}
	if (c->hypervisor && c->beyond_cpuid != want) {
		report_skip("P-core counters beyond CPUID.0AH: the hypervisor offers 0x%lx of them",
			    (unsigned long)c->beyond_cpuid);
		return;
	}
	report(c->beyond_cpuid == want && c->nr_gp == 8 && (c->fixed_bitmap & 8),
	       "the P-core has GP counters 6-7 and fixed counter 3 beyond CPUID.0AH (0x%lx; "
	       "%u GP, fixed 0x%x)", (unsigned long)c->beyond_cpuid, c->nr_gp, c->fixed_bitmap);
}

/* n instructions, near enough: dec_loop's two per iteration, and the call. */
static void regs_work(void *arg, u64 n)
{
	(void)arg;
	dec_loop(MAX(n / 2, 1ul));
}

/* n instructions, a third of them port writes to 0x80 (the POST port:
 * nothing listens), each a VM exit that KVM emulates. */
static void __attribute__((noipa)) regs_io(void *arg, u64 n)
{
	u64 k = MAX(n / 3, 1ul);

	(void)arg;
	asm volatile("xor %%eax, %%eax; 1: outb %%al, $0x80; dec %0; jnz 1b"
		     : "+c"(k) : : "rax", "cc", "memory");
}

static u64 regs_pmis(void *arg)
{
	(void)arg;
	return __atomic_load_n(&this_cpu()->nmi_count, __ATOMIC_RELAXED);
}

static void regs_on_cpu(void *arg)
{
	const struct pmu_regs_env *env = arg;

	pmu_regs_check(env);
}

/* On every CPU, each with the caps its own probe found (pmu_ap_init). */
static void check_regs(void)
{
	for (u32 cpu = 0; cpu < smp_cpus(); cpu++) {
		const struct pmu_caps *c = pmu_cpu_caps(cpu);
		struct pmu_regs_env env = { c, regs_work, regs_io, regs_pmis, NULL, report,
					    report_skip };
		if (cpu == this_cpu()->cpu) {
			pmu_regs_check(&env);
			continue;
		}
		report(cpu == 0 || c != &pmu_boot_caps, "cpu %u probed its own PMU", cpu);
		int e = smp_call(cpu, regs_on_cpu, &env, true);
		if (e)
			report(false, "cpu %u: register checks: %s", cpu, smp_call_why(e));
	}
}

static int test_pmu_hw_main(int argc, char **argv)
{
	(void)argc, (void)argv;
	if (pmu_boot_caps.kind == PMU_KIND_NONE) {
		report_skip("no PMU on this machine (%s): exact counting", pmu_boot_caps.none_reason);
		report_skip("no PMU on this machine: counts across overflow");
		report_skip("no PMU on this machine: PMI sampling");
		report_skip("no PMU on this machine: counters off after boot");
		report_skip("no PMU on this machine: freeze on PMI");
		report_skip("no PMU on this machine: freeze in SMM");
		report_skip("no PMU on this machine: SMI count");
		report_skip("no PMU on this machine: P-core counters beyond CPUID.0AH");
		report_skip("no PMU on this machine: register checks on every counter");
		return report_summary();
	}
	check_exact();
	check_overflow();
	check_sample();
	check_firmware_state();
	check_freeze();
	check_smm_freeze();
	check_smi();
	check_pcore();
	check_regs();
	return report_summary();
}

APP(test_pmu_hw, "guest test: real PMU counting, overflow and PMI sampling", test_pmu_hw_main,
    APP_TEST);
