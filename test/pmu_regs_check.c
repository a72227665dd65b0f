/*
 * pmu_regs_check.c — register-level PMU checks for the guest and the
 * register model (what and why: test/pmu_regs_check.h). Registers from the
 * SDM Vol. 3B ch. 21 and the APM Vol. 2 §13.2, through pmu/regs.h: the
 * model's own constants (test/host/pmu_model.c) catch a wrong one there.
 */
#include "kernel/kernel.h"
#include "pmu/hw.h"
#include "pmu/regs.h"
#include "test/pmu_regs_check.h"

#define INSTRUCTIONS	0x00c0ull	/* Intel INST_RETIRED.ANY_P, AMD PMCx0C0 */
#define OVF_AFTER	1000u		/* a counter preset this far below overflow */
#define WORK		(10u * OVF_AFTER)

static u32 gp_ctr(const struct pmu_caps *c, u32 i) { return c->gp_ctr_base + i * c->stride; }
static u32 gp_sel(const struct pmu_caps *c, u32 i) { return c->gp_sel_base + i * c->stride; }

static bool has_fixed(const struct pmu_caps *c, u32 i)
{
	return c->intel && (c->fixed_bitmap >> i & 1);
}

static u32 ack_msr(const struct pmu_caps *c)
{
	return c->global_ack;
}

/* Everything off and zero, status acknowledged. */
static void all_off(const struct pmu_caps *c)
{
	u64 v;

	if (c->has_global)
		pmu_hw_wrmsr_safe(c->global_ctrl, 0);
	for (u32 i = 0; i < c->nr_gp; i++) {
		pmu_hw_wrmsr_safe(gp_sel(c, i), 0);
		pmu_hw_wrmsr_safe(gp_ctr(c, i), 0);
	}
	if (c->intel && c->fixed_bitmap) {
		pmu_hw_wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL, 0);
		for (u32 i = 0; i < PMU_MAX_FIXED; i++)
			if (has_fixed(c, i))
				pmu_hw_wrmsr_safe(MSR_IA32_FIXED_CTR0 + i, 0);
	}
	if (c->has_global && !pmu_hw_rdmsr_safe(c->global_status, &v) && v)
		pmu_hw_wrmsr_safe(ack_msr(c), v);
}

/* ---- rdpmc ---- */

static void check_rdpmc(const struct pmu_regs_env *env)
{
	const struct pmu_caps *c = env->caps;
	u32 bad = 0, n = 0;
	u64 m, p;

	if (!c->rdpmc_ok) {
		env->skip("rdpmc: the probe found RDPMC faulting");
		return;
	}
	for (u32 i = 0; i < c->nr_gp; i++, n++) {
		u64 want = 0x1000 + 0x111 * i;
		pmu_hw_wrmsr_safe(gp_ctr(c, i), want);
		if (pmu_hw_rdmsr_safe(gp_ctr(c, i), &m) || pmu_hw_rdpmc_safe(i, &p) || m != want ||
		    p != want) {
			if (!bad++)
				env->report(false, "rdpmc: GP %u: rdmsr %#lx, rdpmc %#lx, wrote %#lx", i,
					    (unsigned long)m, (unsigned long)p, (unsigned long)want);
		}
	}
	for (u32 i = 0; i < PMU_MAX_FIXED; i++) {
		if (!has_fixed(c, i))
			continue;
		u64 want = 0x2000 + 0x111 * i;
		n++;
		pmu_hw_wrmsr_safe(MSR_IA32_FIXED_CTR0 + i, want);
		if (pmu_hw_rdmsr_safe(MSR_IA32_FIXED_CTR0 + i, &m) ||
		    pmu_hw_rdpmc_safe(RDPMC_FIXED | i, &p) || m != want || p != want) {
			if (!bad++)
				env->report(false, "rdpmc: fixed %u: rdmsr %#lx, rdpmc %#lx, wrote %#lx",
					    i, (unsigned long)m, (unsigned long)p, (unsigned long)want);
		}
	}
	all_off(c);
	env->report(!bad, "rdpmc of each of the %u counters equals rdmsr (%u differ)", n, bad);
}

/* ---- widths ---- */

static void check_widths(const struct pmu_regs_env *env)
{
	const struct pmu_caps *c = env->caps;
	u32 bad = 0;
	u64 v, a;

	for (u32 i = 0; i < c->nr_gp; i++) {
		if (c->amd) {
			u64 want = (1ull << (c->gp_width - 1)) | 0x1234;
			pmu_hw_wrmsr_safe(gp_ctr(c, i), want);
			bad += pmu_hw_rdmsr_safe(gp_ctr(c, i), &v) || v != want;
			continue;
		}
		/* Legacy: EAX sign-extended from bit 31, EDX ignored. */
		pmu_hw_wrmsr_safe(gp_ctr(c, i), 0x0000dead80001234ull);
		u64 want = 0xffffffff80001234ull & c->gp_mask;
		bad += pmu_hw_rdmsr_safe(gp_ctr(c, i), &v) || v != want;
		if (!c->fw_write)
			continue;
		bad += pmu_hw_rdmsr_safe(MSR_IA32_A_PMC0 + i, &a) || a != want;
		/* Full width: the top bit and a low pattern, through both. */
		want = (1ull << (c->gp_width - 1)) | 0x5678;
		bad += pmu_hw_wrmsr_safe(MSR_IA32_A_PMC0 + i, want) != 0;
		bad += pmu_hw_rdmsr_safe(gp_ctr(c, i), &v) || v != want;
		bad += pmu_hw_rdmsr_safe(MSR_IA32_A_PMC0 + i, &a) || a != want;
		/* A bit above the width #GPs. */
		bad += pmu_hw_wrmsr_safe(MSR_IA32_A_PMC0 + i, 1ull << c->gp_width) == 0;
	}
	all_off(c);
	env->report(!bad, "%s writes to the %u GP counters read back as the width says "
		    "(%u wrong)", c->amd ? "48-bit" : c->fw_write ? "legacy and full-width" :
		    "legacy (sign-extended)", c->nr_gp, bad);
	if (c->intel && !c->fw_write)
		env->skip("widths: no full-width writes (IA32_PERF_CAPABILITIES[13] clear)");
}

/* ---- overflow, status, acknowledge, PMI ---- */

/* Arm one counter (GP i, or fixed i when fixed) to overflow after
 * OVF_AFTER events, with or without its PMI, and return its global bit. */
static u64 arm(const struct pmu_caps *c, bool fixed, u32 i, bool pmi)
{
	if (fixed) {
		pmu_hw_wrmsr_safe(MSR_IA32_FIXED_CTR0 + i, (0 - (u64)OVF_AFTER) & c->fixed_mask);
		pmu_hw_wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL,
				  (FIXED_CTRL_OS | FIXED_CTRL_USR | (pmi ? FIXED_CTRL_PMI : 0))
				  << FIXED_CTRL_SHIFT(i));
		return 1ull << PMU_FIXED_BIT(i);
	}
	pmu_hw_wrmsr_safe(gp_ctr(c, i), (0 - (u64)OVF_AFTER) & c->gp_mask);
	pmu_hw_wrmsr_safe(gp_sel(c, i), INSTRUCTIONS | EVTSEL_OS | EVTSEL_USR | EVTSEL_EN |
			  (pmi ? EVTSEL_INT : 0));
	return 1ull << i;
}

/* Overflow one counter in work (env->work or env->emulated); its status
 * bit afterwards (or, with no global status, whether the counter
 * wrapped), and the PMIs it raised. The counter is left disabled. */
static bool overflow_one(const struct pmu_regs_env *env, void (*work)(void *arg, u64 n),
			 bool fixed, u32 i, bool pmi, u64 *pmis)
{
	const struct pmu_caps *c = env->caps;
	u64 bit = arm(c, fixed, i, pmi), v, before = env->pmis(env->arg);
	bool seen;

	pmu_lvtpc_write(LVT_DELIVERY_NMI);
	if (c->has_global)
		pmu_hw_wrmsr_safe(c->global_ctrl, bit);
	work(env->arg, WORK);
	if (c->has_global)
		pmu_hw_wrmsr_safe(c->global_ctrl, 0);
	else
		pmu_hw_wrmsr_safe(gp_sel(c, i), 0);
	*pmis = env->pmis(env->arg) - before;
	if (c->has_global)
		seen = !pmu_hw_rdmsr_safe(c->global_status, &v) && (v & bit);
	else
		seen = !pmu_hw_rdmsr_safe(gp_ctr(c, i), &v) && v < WORK;
	return seen;
}

static void check_overflow(const struct pmu_regs_env *env, bool pmi)
{
	const struct pmu_caps *c = env->caps;
	u32 n = 0, not_set = 0, not_acked = 0, no_pmi = 0;
	u64 v, pmis;

	all_off(c);
	for (u32 k = 0; k < PMU_MAX_GP + PMU_MAX_FIXED; k++) {
		bool fixed = k >= PMU_MAX_GP;
		u32 i = fixed ? k - PMU_MAX_GP : k;
		if (fixed ? !has_fixed(c, i) || i == 3 : i >= c->nr_gp)
			continue;		/* fixed 3 counts slots: not a given rate */
		n++;
		bool seen = overflow_one(env, env->work, fixed, i, pmi, &pmis);
		if (pmi) {
			no_pmi += pmis == 0;
		} else {
			not_set += !seen;
			if (c->has_global) {
				u64 bit = fixed ? 1ull << PMU_FIXED_BIT(i) : 1ull << i;
				pmu_hw_wrmsr_safe(ack_msr(c), bit);
				not_acked += pmu_hw_rdmsr_safe(c->global_status, &v) || (v & bit);
			}
		}
		all_off(c);
	}
	pmu_lvtpc_write(LVT_DELIVERY_NMI);
	if (pmi)
		env->report(!no_pmi, "each of the %u counters raises a PMI on overflow "
			    "(%u did not)", n, no_pmi);
	else if (c->has_global)
		env->report(!not_set && !not_acked, "each of the %u counters overflows, sets its "
			    "status bit and is acknowledged (%u did not set it, %u stayed set after "
			    "the acknowledge)", n, not_set, not_acked);
	else
		env->report(!not_set, "each of the %u counters overflows and wraps (no global "
			    "status here; %u did not)", n, not_set);
}

/* ---- every counter at once ---- */

static void check_all(const struct pmu_regs_env *env)
{
	const struct pmu_caps *c = env->caps;
	u64 got[PMU_MAX_GP], fix[PMU_MAX_FIXED] = { 0 }, all = 0, v;
	u32 bad = 0, differ = 0;

	all_off(c);
	for (u32 i = 0; i < c->nr_gp; i++) {
		pmu_hw_wrmsr_safe(gp_sel(c, i), INSTRUCTIONS | EVTSEL_OS | EVTSEL_USR |
				  (c->has_global ? EVTSEL_EN : 0));
		all |= 1ull << i;
	}
	u64 fctl = 0;
	for (u32 i = 0; i < PMU_MAX_FIXED; i++)
		if (has_fixed(c, i)) {
			fctl |= (FIXED_CTRL_OS | FIXED_CTRL_USR) << FIXED_CTRL_SHIFT(i);
			all |= 1ull << PMU_FIXED_BIT(i);
		}
	if (fctl)
		pmu_hw_wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL, fctl);
	if (c->has_global) {
		pmu_hw_wrmsr_safe(c->global_ctrl, all);
	} else {
		for (u32 i = 0; i < c->nr_gp; i++)
			pmu_hw_wrmsr_safe(gp_sel(c, i), INSTRUCTIONS | EVTSEL_OS | EVTSEL_USR |
					  EVTSEL_EN);
	}
	env->work(env->arg, WORK);
	if (c->has_global)
		pmu_hw_wrmsr_safe(c->global_ctrl, 0);
	else
		for (u32 i = 0; i < c->nr_gp; i++)
			pmu_hw_wrmsr_safe(gp_sel(c, i), 0);
	for (u32 i = 0; i < c->nr_gp; i++) {
		got[i] = pmu_hw_rdmsr_safe(gp_ctr(c, i), &v) ? 0 : v;
		/* The work, plus what the enabling and disabling writes
		 * retire around it. */
		bad += got[i] < WORK || got[i] > WORK + WORK / 10;
		differ += c->has_global && got[i] != got[0];
	}
	for (u32 i = 0; i < PMU_MAX_FIXED; i++)
		if (has_fixed(c, i))
			fix[i] = pmu_hw_rdmsr_safe(MSR_IA32_FIXED_CTR0 + i, &v) ? 0 : v;
	if (has_fixed(c, 0))
		differ += fix[0] != got[0];
	bad += has_fixed(c, 1) && !fix[1];
	bad += has_fixed(c, 2) && !fix[2];
	all_off(c);
	env->report(!bad && !differ, "all %u GP%s counters at once: %lu instructions each "
		    "(%u out of bounds, %u differ%s)", c->nr_gp, c->intel && c->fixed_bitmap ?
		    " and the fixed" : "", (unsigned long)got[0], bad, differ,
		    c->has_global ? "" : "; enabled one by one: not compared");
}

/* ---- generic events within bounds ---- */

/* One event on GP counter 0 around the work: its count, or ~0 if the event
 * does not parse for this CPU (*why says so). */
static u64 count_event(const struct pmu_regs_env *env, const char *name, char *why, size_t n)
{
	const struct pmu_caps *c = env->caps;
	struct pmu_event_attr a;
	u64 v;

	if (pmu_event_parse(name, c, &a, why, n))
		return ~0ull;
	all_off(c);
	pmu_hw_wrmsr_safe(gp_sel(c, 0), a.config | EVTSEL_OS | EVTSEL_USR | EVTSEL_EN);
	if (c->has_global)
		pmu_hw_wrmsr_safe(c->global_ctrl, 1);
	env->work(env->arg, WORK);
	if (c->has_global)
		pmu_hw_wrmsr_safe(c->global_ctrl, 0);
	pmu_hw_wrmsr_safe(gp_sel(c, 0), 0);
	v = pmu_hw_rdmsr_safe(gp_ctr(c, 0), &v) ? 0 : v;
	all_off(c);
	return v;
}

static void check_events(const struct pmu_regs_env *env)
{
	/* Per WORK instructions: the loop's own, its branches, and room for
	 * what the enabling write and a hypervisor's exits add (under KVM on
	 * AMD a VMRUN counts as a branch; Atom errata over-count). */
	static const struct { const char *name; u64 min, max; } ev[] = {
		{ "instructions", WORK, WORK + WORK / 10 },
		{ "branches", WORK / 2, WORK / 2 + WORK / 10 },
		{ "branch-misses", 0, WORK / 20 },
		{ "cache-references", 0, WORK },
		{ "cache-misses", 0, WORK },
	};
	const struct pmu_caps *c = env->caps;
	char why[160];

	for (u32 i = 0; i < ARRAY_SIZE(ev); i++) {
		u64 v = count_event(env, ev[i].name, why, sizeof(why));
		if (v == ~0ull) {
			env->skip("events: %s: %s", ev[i].name, why);
			continue;
		}
		env->report(v >= ev[i].min && v <= ev[i].max, "%s: %lu in a loop of %u instructions "
			    "(bounds %lu..%lu)", ev[i].name, (unsigned long)v, WORK,
			    (unsigned long)ev[i].min, (unsigned long)ev[i].max);
	}
	if (!has_fixed(c, 2)) {
		env->skip("events: ref-cycles: no fixed counter 2");
		return;
	}
	/* ref-cycles ticks at the TSC's rate (SDM 21.2.2: CPU_CLK_UNHALTED.REF_TSC). */
	all_off(c);
	pmu_hw_wrmsr_safe(MSR_IA32_FIXED_CTR_CTRL, (FIXED_CTRL_OS | FIXED_CTRL_USR) << FIXED_CTRL_SHIFT(2));
	u64 t0 = pmu_hw_rdtsc();
	pmu_hw_wrmsr_safe(c->global_ctrl, 1ull << PMU_FIXED_BIT(2));
	env->work(env->arg, 100 * WORK);
	pmu_hw_wrmsr_safe(c->global_ctrl, 0);
	u64 t = pmu_hw_rdtsc() - t0, v;
	v = pmu_hw_rdmsr_safe(MSR_IA32_FIXED_CTR0 + 2, &v) ? 0 : v;
	all_off(c);
	env->report(v >= t / 4 && v <= t + t / 10, "ref-cycles (fixed 2) %lu over %lu TSC ticks "
		    "(bounds: a quarter to 1.1 times)", (unsigned long)v, (unsigned long)t);
}

/* ---- emulated instructions ---- */

static void check_emulated(const struct pmu_regs_env *env)
{
	const struct pmu_caps *c = env->caps;
	u64 v, pmis;

	all_off(c);
	/* Instructions on GP 0, OVF_AFTER from overflow; then WORK emulated. */
	bool st = overflow_one(env, env->emulated, false, 0, false, &pmis);
	v = pmu_hw_rdmsr_safe(gp_ctr(c, 0), &v) ? 0 : v;
	all_off(c);
	/* Counted from -OVF_AFTER: WORK - OVF_AFTER after the wrap. */
	bool counted = v >= WORK - OVF_AFTER && v < WORK + WORK / 10;
	env->report(counted && (!c->has_global || st), "%u emulated instructions counted "
		    "across an overflow (counter %lu after the wrap%s)", WORK, (unsigned long)v,
		    c->has_global ? (st ? ", status bit set" : ", status bit NOT set") : "");

	/* The same with the counter's PMI bit: KVM counts the instructions it
	 * emulates in software (kvm_pmu_incr_counter), apart from the host
	 * perf event whose overflow raises the PMI for the rest, so an
	 * overflow there must raise the PMI itself. */
	overflow_one(env, env->emulated, false, 0, true, &pmis);
	all_off(c);
	pmu_lvtpc_write(LVT_DELIVERY_NMI);
	env->report(pmis > 0, "an overflow in %u emulated instructions raises the counter's PMI "
		    "(%lu PMIs)", WORK, (unsigned long)pmis);
}

/* ---- AMD PerfMonV2: global control, status, set and clear ---- */

static u64 rd(u32 msr)
{
	u64 v;

	return pmu_hw_rdmsr_safe(msr, &v) ? ~0ull : v;
}

/* Counter 0 over the work, its global enable bit as given: its count. */
static u64 gated(const struct pmu_regs_env *env, bool enabled)
{
	const struct pmu_caps *c = env->caps;

	all_off(c);
	pmu_hw_wrmsr_safe(gp_sel(c, 0), INSTRUCTIONS | EVTSEL_OS | EVTSEL_USR | EVTSEL_EN);
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_CTL, enabled ? 1 : 0);
	env->work(env->arg, WORK);
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_CTL, 0);
	u64 v = rd(gp_ctr(c, 0));
	all_off(c);
	return v;
}

/*
 * APM Vol. 2 §13.2.2: PerfCntrGlobalCtl enables counter i with bit i (on
 * top of PerfEvtSel.En); PerfCntrGlobalStatus (read-only) has bit i set by
 * counter i's overflow; a 1 written to PerfCntrGlobalStatusClr clears that
 * bit, to PerfCntrGlobalStatusSet sets it, and the other bits stay.
 */
static void check_amd_v2(const struct pmu_regs_env *env)
{
	const struct pmu_caps *c = env->caps;
	u64 all = (1ull << c->nr_gp) - 1, v, bad = 0;

	all_off(c);
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_CTL, all);
	v = rd(MSR_AMD_PERF_CNTR_GLOBAL_CTL);
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_CTL, 0);
	env->report(v == all && rd(MSR_AMD_PERF_CNTR_GLOBAL_CTL) == 0, "PerfMonV2: GlobalCtl "
		    "holds the %u counters' bits (%#lx) and 0", c->nr_gp, (unsigned long)v);

	u64 off = gated(env, false), on = gated(env, true);
	env->report(off == 0 && on >= WORK && on <= WORK + WORK / 10, "PerfMonV2: a counter "
		    "enabled in PerfEvtSel counts with its GlobalCtl bit (%lu) and not without "
		    "(%lu)", (unsigned long)on, (unsigned long)off);

	/* Set every bit, clear them one at a time; a write to the status
	 * itself (read-only: ignored, or a #GP under KVM) changes nothing. */
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_STATUS_SET, all);
	bad += rd(MSR_AMD_PERF_CNTR_GLOBAL_STATUS) != all;
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_STATUS, 0);
	bad += rd(MSR_AMD_PERF_CNTR_GLOBAL_STATUS) != all;
	for (u32 i = 0; i < c->nr_gp; i++) {
		pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR, 1ull << i);
		bad += rd(MSR_AMD_PERF_CNTR_GLOBAL_STATUS) != (all & ~((2ull << i) - 1));
	}
	env->report(!bad, "PerfMonV2: StatusSet sets the %u bits, StatusClr clears one at a time "
		    "and leaves the rest, a write to the status changes nothing (%lu wrong)",
		    c->nr_gp, (unsigned long)bad);

	/* An overflow sets its bit beside one set by hand; clearing it
	 * leaves the other, and the counter counts on past the wrap. */
	u32 last = c->nr_gp - 1;
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_STATUS_SET, 1ull << last);
	u64 bit = arm(c, false, 0, false);
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_CTL, bit);
	env->work(env->arg, WORK);
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_CTL, 0);
	u64 st = rd(MSR_AMD_PERF_CNTR_GLOBAL_STATUS), ctr = rd(gp_ctr(c, 0));
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR, bit);
	u64 after = rd(MSR_AMD_PERF_CNTR_GLOBAL_STATUS);
	all_off(c);
	env->report(st == (bit | 1ull << last) && after == 1ull << last &&
		    ctr >= WORK - OVF_AFTER && ctr < WORK + WORK / 10, "PerfMonV2: an overflow "
		    "sets its status bit beside a set one (%#lx), StatusClr of it leaves the "
		    "other (%#lx), the counter counts on past the wrap (%lu)", (unsigned long)st,
		    (unsigned long)after, (unsigned long)ctr);
	pmu_hw_wrmsr_safe(MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR, all);
}

void pmu_regs_check(const struct pmu_regs_env *env)
{
	const struct pmu_caps *c = env->caps;

	if (c->kind == PMU_KIND_NONE) {
		env->skip("register checks: no PMU (%s)", c->none_reason);
		return;
	}
	if (c->fw_owned) {
		env->skip("register checks: firmware owns counters 0x%lx", (unsigned long)c->fw_owned);
		return;
	}
	check_rdpmc(env);
	check_widths(env);
	check_overflow(env, false);
	check_overflow(env, true);
	check_all(env);
	check_events(env);
	check_emulated(env);
	if (c->amd && c->has_global)
		check_amd_v2(env);
}
