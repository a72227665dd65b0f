/*
 * test_pmu — the real drivers in pmu/ against the register-level PMU model,
 * for every PMU flavour: probe, counting exactness, 64-bit counts across
 * hardware overflow, sampling with reload, PMI delivery and the LVT PC
 * re-arm, group reads, throttling, freeze on PMI, stuck and spurious PMIs,
 * full-width vs legacy reloads, counter assignment and its errors;
 * multiplexing (event sets rotated by pmu_tick, scaled counts), frequency
 * mode and throttling on the tick, group reads inside the PMI.
 * Scenarios follow kvm-unit-tests x86/pmu.c where it has one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/kernel.h"
#include "pmu/pmu.h"
#include "test/host/pmu_model.h"

#define LVT_NMI		0x400u
#define LVT_MASKED	(1u << 16)

static struct pmu_model M;
static struct pmu_caps caps;
static struct pmu_ctx ctx;
static char err[256];

/* What the emit callback saw. */
static struct {
	unsigned n, per_idx[PMU_MAX_EVENTS];
	u64 last_period[PMU_MAX_EVENTS];
	bool group_ok;			/* group read inside emit was consistent */
	bool group_check;
	unsigned throttle, unthrottle;
	unsigned nmi_calls, nmi_lvt_masked_on_entry;
	int handled;
	u64 inject_in_nmi;		/* instructions to run inside the NMI, before handling */
} log_;

static void unexpected_fault(struct pmu_model *m, const char *what)
{
	(void)m;
	fail_msg("unexpected fault in a non-_safe access: %s", what);
}

static void emit(struct pmu_ctx *c, int idx, u64 period, void *arg)
{
	(void)arg;
	log_.n++;
	log_.per_idx[idx]++;
	log_.last_period[idx] = period;
	if (log_.group_check) {
		u64 v[PMU_MAX_EVENTS];
		pmu_read_group(c, v, c->n);
		/* The overflowed counter was just folded: exactly samples * period. */
		if (v[idx] != c->ctr[idx].samples * period)
			log_.group_ok = false;
	}
}

static void on_nmi(struct pmu_model *m, void *arg)
{
	(void)arg;
	log_.nmi_calls++;
	if (m->lvtpc & LVT_MASKED)
		log_.nmi_lvt_masked_on_entry++;
	if (log_.inject_in_nmi) {
		u64 n = log_.inject_in_nmi;
		log_.inject_in_nmi = 0;
		model_retire(m, n);
	}
	log_.handled += pmu_handle_overflow(&ctx, emit, NULL);
}

static void on_throttle(struct pmu_ctx *c, enum pmu_throttle_event ev, void *arg)
{
	(void)c;
	(void)arg;
	if (ev == PMU_THROTTLE)
		log_.throttle++;
	else
		log_.unthrottle++;
}

static enum model_flavour flav(void **state)
{
	return (enum model_flavour)(uintptr_t)*state;
}

static void boot(enum model_flavour f)
{
	model_init(&M, model_preset(f));
	M.unexpected_fault = unexpected_fault;
	M.nmi = on_nmi;
	memset(&log_, 0, sizeof(log_));
	log_.group_ok = true;
	assert_int_equal(pmu_probe(&caps), 0);
	M.lvtpc = LVT_NMI;		/* what the APIC driver will set up */
}

static struct pmu_event_attr ev(const char *spec)
{
	struct pmu_event_attr a;
	int rc = pmu_event_parse(spec, &caps, &a, err, sizeof(err));
	if (rc)
		fail_msg("parse '%s': %d %s", spec, rc, err);
	return a;
}

static void open_n(const struct pmu_event_attr *a, int n, unsigned flags)
{
	int rc = pmu_open(&ctx, &caps, a, n, flags, err, sizeof(err));
	if (rc)
		fail_msg("pmu_open: %d %s", rc, err);
}

static bool contains(const char *s, const char *w)
{
	return strstr(s, w) != NULL;
}

/* ---- Probe ---- */

static void probe(void **state)
{
	enum model_flavour f = flav(state);
	const struct model_cfg *cfg = model_preset(f);
	char line[256];

	boot(f);
	pmu_describe(&caps, line, sizeof(line));
	print_message("# pmu: %s\n", line);
	if (cfg->intel) {
		assert_int_equal(caps.kind, PMU_KIND_INTEL_ARCH);
		assert_int_equal(caps.version, cfg->version);
		assert_int_equal(caps.nr_gp, cfg->nr_gp);
		assert_int_equal(caps.gp_width, cfg->gp_width);
		assert_int_equal(caps.fw_write, cfg->fw_write);
		assert_int_equal(caps.has_global, cfg->version >= 2);
		u32 bm = cfg->version >= 2 ? ((1u << cfg->nr_fixed_edx) - 1) |
			 (cfg->version >= 5 ? cfg->fixed_ecx : 0) : 0;
		assert_int_equal(caps.fixed_bitmap, bm);
		char want[64];
		snprintf(want, sizeof(want), "Intel arch perfmon v%u, %u GP counters x %u bits",
			 cfg->version, cfg->nr_gp, cfg->gp_width);
		assert_true(contains(line, want));
		assert_true(contains(line, cfg->fw_write ? "full-width writes" : "31-bit reloads"));
		assert_int_equal(caps.max_period, cfg->fw_write ? (1ull << 47) - 1 : (1ull << 31) - 1);
	} else {
		enum pmu_kind k = cfg->perfmon_v2 ? PMU_KIND_AMD_V2 : cfg->core_ext ?
				  PMU_KIND_AMD_CORE_EXT : PMU_KIND_AMD_LEGACY;
		assert_int_equal(caps.kind, k);
		assert_int_equal(caps.nr_gp, cfg->perfmon_v2 ? cfg->amd_nr : cfg->core_ext ? 6 : 4);
		assert_int_equal(caps.gp_width, 48);
		assert_int_equal(caps.stride, cfg->core_ext ? 2 : 1);
		assert_int_equal(caps.gp_ctr_base, cfg->core_ext ? 0xc0010201 : 0xc0010004);
		assert_int_equal(caps.has_global, cfg->perfmon_v2);
		assert_int_equal(caps.max_period, (1ull << 47) - 1);
		assert_true(contains(line, "AMD"));
	}
	assert_true(caps.rdpmc_ok);
	if (cfg->hypervisor)
		assert_true(contains(line, "hypervisor \"KVMKVMKVM\""));
	/* The freezes are offered only where DEBUGCTL takes them: never
	 * under KVM, whatever the perfmon version; the line says so. */
	bool frz = cfg->intel && cfg->version >= 2 && !cfg->kvm;
	bool smm = frz && cfg->smm_freeze;
	assert_int_equal(caps.freeze, frz);
	assert_int_equal(caps.freeze_smm, smm);
	assert_int_equal(contains(line, "freeze"), frz);
	assert_int_equal(contains(line, "freeze in SMM"), smm);
	bool smi = cfg->intel || (cfg->family >= 0x17 && cfg->family <= 0x1a);
	assert_int_equal(caps.smi_count, smi);
	M.smi_count = 5;
	assert_int_equal(pmu_smi_count(&caps), cfg->intel ? 5 : -1);	/* AMD: none running */
	assert_int_equal(contains(line, "SMIs not countable") || contains(line, "SMIs not detectable"),
			 !smi);
	assert_int_equal(contains(line, "host SMIs not visible"), smi && cfg->hypervisor);
	/* The probe used only the _safe accessors; the faults it took are
	 * the DEBUGCTL bits this CPU refuses, each a #GP. */
	unsigned want = cfg->intel && cfg->version >= 2 ? !frz + (cfg->smm_freeze && !smm) : 0;
	assert_int_equal(M.faults, want);
	if (want)
		assert_true(contains(M.last_fault, "IA32_DEBUGCTL"));
	assert_int_equal(caps.fw_owned, 0);
	assert_false(contains(line, "firmware"));
}

static void probe_none(void **state)
{
	enum model_flavour f = flav(state);
	char line[256];

	model_init(&M, model_preset(f));
	M.unexpected_fault = unexpected_fault;
	assert_int_equal(pmu_probe(&caps), -E_NODEV);
	assert_int_equal(caps.kind, PMU_KIND_NONE);
	assert_false(caps.rdpmc_ok);
	pmu_describe(&caps, line, sizeof(line));
	print_message("# pmu: %s\n", line);
	assert_true(contains(line, "none ("));
	assert_true(contains(line, "soft PMU"));
	if (f == MODEL_TCG_INTEL)
		assert_true(contains(line, "CPUID.0AH is all zero"));
	else
		assert_true(contains(line, "do not hold a written value"));
	/* Everything refuses cleanly. */
	struct pmu_event_attr a;
	assert_int_equal(pmu_event_parse("cycles", &caps, &a, err, sizeof(err)), -E_NODEV);
	assert_true(contains(err, "no"));
	a.config = 0xc0;
	assert_int_equal(pmu_open(&ctx, &caps, &a, 1, 0, err, sizeof(err)), -E_NODEV);
	assert_true(contains(err, "no hardware PMU"));
}

/* ---- Counting ---- */

static bool has_fixed2(void)
{
	return caps.intel && (caps.fixed_bitmap & 4);
}

static void count_exact_mode(enum model_flavour f, unsigned flags)
{
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 3, [SIG_BRANCHES] = 1 } };
	const u64 N = 1000003;

	boot(f);
	struct pmu_event_attr a[4] = { ev("instructions"), ev("cycles"), ev("branches") };
	int n = caps.nr_gp >= 3 || caps.fixed_bitmap ? 3 : 2;	/* Intel v1 has 2 counters */
	if (has_fixed2())
		a[n++] = ev("ref-cycles");
	open_n(a, n, flags);
	model_run(&M, &c, 5);			/* before start: not counted */
	assert_int_equal(pmu_start(&ctx), 0);
	model_run(&M, &c, N);
	assert_int_equal(pmu_read(&ctx, 0), 3 * N);	/* while running */
	assert_int_equal(pmu_read(&ctx, 1), N);
	pmu_stop(&ctx);
	model_run(&M, &c, 77);			/* after stop: not counted */
	assert_int_equal(pmu_read(&ctx, 0), 3 * N);
	assert_int_equal(pmu_read(&ctx, 1), N);
	if (n >= 3)
		assert_int_equal(pmu_read(&ctx, 2), N);
	if (n == 4)
		assert_int_equal(pmu_read(&ctx, 3), N);
	/* Restart counts from zero. */
	assert_int_equal(pmu_start(&ctx), 0);
	model_run(&M, &c, 10);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 30);
	assert_int_equal(M.pmi_raised, 0);
}

static void count_exact(void **state)
{
	count_exact_mode(flav(state), 0);
}

static void count_exact_rdmsr(void **state)
{
	boot(flav(state));
	u64 rdpmcs = M.rdpmcs;
	count_exact_mode(flav(state), PMU_OPEN_RDMSR);
	assert_int_equal(M.rdpmcs, rdpmcs);	/* the probe's own rdpmc came before */
}

/* 64-bit counts across hardware overflow: counting counters overflow every
 * max_period events; the PMI folds and reloads them; nothing is lost. */
static void count_across_overflow(void **state)
{
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 4 } };

	boot(flav(state));
	u64 N = caps.max_period * 3 + 12345;	/* cycles; instructions overflow ~12 times */
	struct pmu_event_attr a[2] = { ev("instructions"), ev("cycles") };
	open_n(a, 2, 0);
	pmu_start(&ctx);
	model_run(&M, &c, N / 2);
	assert_int_equal(pmu_read(&ctx, 0), 4 * (N / 2));
	model_run(&M, &c, N - N / 2);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 4 * N);
	assert_int_equal(pmu_read(&ctx, 1), N);
	assert_true(ctx.ctr[0].overflows >= 12);
	assert_true(ctx.ctr[1].overflows >= 3);
	assert_int_equal(log_.n, 0);		/* counting events emit nothing */
	assert_int_equal(M.pmi_lost_masked, 0);
	assert_int_equal(ctx.stats.spurious, 0);
	assert_int_equal(log_.nmi_calls, M.pmi_delivered);
	assert_int_equal(ctx.stats.lvt_rearm, log_.nmi_calls);	/* every vendor */
}

/* ---- Sampling ---- */

static void sampling(void **state)
{
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 1 } };

	boot(flav(state));
	struct pmu_event_attr a[2] = { ev("instructions/period=1000/"), ev("cycles/period=3000/") };
	open_n(a, 2, 0);
	log_.group_check = true;
	pmu_start(&ctx);
	model_run(&M, &c, 1000000);
	pmu_stop(&ctx);
	assert_int_equal(log_.per_idx[0], 1000);
	assert_int_equal(log_.per_idx[1], 333);
	assert_int_equal(log_.last_period[0], 1000);
	assert_int_equal(log_.last_period[1], 3000);
	assert_true(log_.group_ok);
	assert_int_equal(pmu_read(&ctx, 0), 1000000);	/* no count lost to reloads */
	assert_int_equal(pmu_read(&ctx, 1), 1000000);
	assert_int_equal(log_.handled, 1333);
	/* Both overflow together every 3000 cycles: one NMI handles both. */
	assert_int_equal(M.pmi_delivered, 1000);
	assert_int_equal(M.pmi_lost_masked, 0);
	assert_int_equal(ctx.stats.spurious, 0);
	assert_int_equal(ctx.stats.unknown_status, 0);
	/* Intel, and KVM on any vendor: the APIC masked LVT PC on every
	 * delivery, the handler re-armed it. */
	if (caps.intel || M.cfg.kvm)
		assert_int_equal(log_.nmi_lvt_masked_on_entry, log_.nmi_calls);
	else
		assert_int_equal(log_.nmi_lvt_masked_on_entry, 0);
	assert_int_equal(ctx.stats.lvt_rearm, log_.nmi_calls);
	assert_int_equal(M.lvtpc, LVT_NMI);
	assert_int_equal(M.pmi_spurious, 0);
}

/* A PMI reaches the handler only through an unmasked LVT PC: with it masked
 * the overflow is lost as an interrupt but stays visible in the status (or
 * the counter's top bit), so a later handler call still finds it. */
static void pmi_needs_unmasked_lvt(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions/period=500/");
	open_n(&a, 1, 0);
	pmu_start(&ctx);
	assert_int_equal(M.lvtpc, LVT_NMI);	/* pmu_start arms it */
	M.lvtpc = LVT_NMI | LVT_MASKED;
	model_retire(&M, 700);
	assert_int_equal(M.pmi_raised, 1);
	assert_int_equal(M.pmi_lost_masked, 1);
	assert_int_equal(log_.nmi_calls, 0);
	assert_int_equal(pmu_handle_overflow(&ctx, emit, NULL), 1);
	assert_int_equal(log_.per_idx[0], 1);
	assert_int_equal(pmu_read(&ctx, 0), 700);
	assert_int_equal(M.lvtpc, LVT_NMI);	/* the handler unmasks it */
	model_retire(&M, 500);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 1200);
}

/* An NMI handler that reloads the counter but does not unmask LVT PC:
 * Intel, and KVM on any vendor (a16eb25b09c0), then deliver the first PMI
 * only (the entry was masked on delivery); bare AMD keeps delivering.
 * This is why pmu_handle_overflow re-arms it on every vendor. */
static void reload_only_nmi(struct pmu_model *m, void *arg)
{
	(void)arg;
	log_.nmi_calls++;
	if (caps.intel) {
		assert_int_equal(model_wrmsr(m, caps.gp_ctr_base, 0xffffff9c), 0);
		if (caps.has_global)
			assert_int_equal(model_wrmsr(m, 0x390, 1), 0);
	} else {
		assert_int_equal(model_wrmsr(m, caps.gp_ctr_base, (1ull << 48) - 100), 0);
		if (caps.has_global)
			assert_int_equal(model_wrmsr(m, 0xc0000302, 1), 0);
	}
}

static void lvt_rearm_needed(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions/period=100/");
	open_n(&a, 1, PMU_OPEN_NO_FIXED);
	M.nmi = reload_only_nmi;
	pmu_start(&ctx);
	model_retire(&M, 1000);
	if (caps.intel || M.cfg.kvm) {
		/* The second PMI is lost; nothing reloads after it. */
		assert_int_equal(M.pmi_raised, 2);
		assert_int_equal(M.pmi_delivered, 1);
		assert_int_equal(M.pmi_lost_masked, 1);
		assert_true(M.lvtpc & LVT_MASKED);
	} else {
		assert_int_equal(M.pmi_raised, 10);
		assert_int_equal(M.pmi_delivered, 10);
		assert_false(M.lvtpc & LVT_MASKED);
	}
	M.nmi = NULL;
	pmu_stop(&ctx);
}

static void spurious_nmi(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions/period=100000/");
	open_n(&a, 1, 0);
	pmu_start(&ctx);
	model_retire(&M, 10);
	M.lvtpc |= LVT_MASKED;		/* as if a PMI had just been delivered */
	assert_int_equal(pmu_handle_overflow(&ctx, emit, NULL), 0);
	assert_int_equal(ctx.stats.spurious, 1);
	assert_int_equal(ctx.stats.handled, 0);
	assert_int_equal(M.lvtpc, LVT_NMI);	/* re-armed regardless */
	model_retire(&M, 10);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 20);
	/* Not running: not ours. */
	assert_int_equal(pmu_handle_overflow(&ctx, emit, NULL), 0);
	assert_int_equal(ctx.stats.spurious, 2);
}

/* A status bit that never clears: the handler gives up after
 * PMU_OVF_LOOPS passes, says so, and leaves the counters off. */
/* One of the context's own status bits that will not clear: the handler
 * gives up after PMU_OVF_LOOPS passes and leaves the counters off. */
static void stuck_pmu(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions");
	open_n(&a, 1, 0);
	pmu_start(&ctx);
	model_retire(&M, 10);
	M.stuck_status = 1ull << ctx.ctr[0].bit;
	pmu_handle_overflow(&ctx, emit, NULL);
	assert_int_equal(ctx.stats.stuck, 1);
	assert_true(ctx.dead);
	M.stuck_status = 0;
	model_retire(&M, 1000);			/* counters stay off */
	assert_int_equal(pmu_read(&ctx, 0), 10);
	pmu_stop(&ctx);
}

/* A status bit that is not the context's (another PMU user's, like Intel
 * PT's ToPA PMI): not handled, not acknowledged (its owner must see it),
 * counted as unknown, and it does not kill the PMU. */
static void foreign_status(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions");
	open_n(&a, 1, 0);
	pmu_start(&ctx);
	model_retire(&M, 10);
	M.stuck_status = caps.intel ? 1ull << 62 : 1ull << 5;
	int h = pmu_handle_overflow(&ctx, emit, NULL);
	assert_int_equal(h, 0);
	assert_int_equal(ctx.stats.stuck, 0);
	assert_int_equal(ctx.stats.unknown_status, 1);
	assert_false(ctx.dead);
	M.stuck_status = 0;
	model_retire(&M, 1000);			/* still counting */
	assert_int_equal(pmu_read(&ctx, 0), 1010);
	pmu_stop(&ctx);
}

/* ---- Throttling ---- */

static void throttling(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a[2] = { ev("instructions/period=100/"), ev("cycles") };
	open_n(a, 2, 0);
	pmu_set_throttle(&ctx, 5, on_throttle, NULL);
	pmu_start(&ctx);
	model_retire(&M, 10000);
	assert_int_equal(log_.per_idx[0], 5);
	assert_int_equal(log_.throttle, 1);
	assert_int_equal(ctx.stats.throttled, 1);
	/* The counting event keeps counting while sampling is throttled. */
	assert_int_equal(pmu_read(&ctx, 1), 10000);
	pmu_tick(&ctx);
	assert_int_equal(log_.unthrottle, 1);
	model_retire(&M, 300);
	assert_int_equal(log_.per_idx[0], 8);
	pmu_tick(&ctx);				/* not throttled: nothing to undo */
	assert_int_equal(log_.unthrottle, 1);
	model_retire(&M, 1000);
	assert_int_equal(log_.per_idx[0], 13);	/* a fresh budget of 5, then throttled */
	assert_int_equal(log_.throttle, 2);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 1), 11300);
}

/* The budget against the clock: spread over more than a tick period (the
 * tick never comes) it is no rate above the limit; spent within one, it
 * throttles. One cycle per instruction: a sample every 100 cycles. */
static void throttling_by_rate(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions/period=100/");
	open_n(&a, 1, 0);
	pmu_set_throttle(&ctx, 5, on_throttle, NULL);
	pmu_set_throttle_window(&ctx, 450);
	pmu_start(&ctx);
	model_retire(&M, 10000);		/* 5 samples every 500 cycles, no tick */
	assert_int_equal(log_.per_idx[0], 100);
	assert_int_equal(log_.throttle, 0);
	pmu_stop(&ctx);

	memset(&log_, 0, sizeof(log_));
	pmu_set_throttle_window(&ctx, 600);	/* 5 samples in 500 cycles: too many */
	pmu_start(&ctx);
	model_retire(&M, 10000);
	assert_int_equal(log_.per_idx[0], 5);
	assert_int_equal(log_.throttle, 1);
	pmu_stop(&ctx);
}

/* ---- Reloads: legacy vs full-width writes ---- */

static void period_limits(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions");
	a.flags |= PMU_ATTR_SAMPLE;
	a.period = caps.max_period + 1;
	assert_int_equal(pmu_open(&ctx, &caps, &a, 1, 0, err, sizeof(err)), -E_RANGE);
	assert_true(contains(err, "exceeds the largest reload"));
	if (caps.intel && !caps.fw_write)
		assert_true(contains(err, "legacy writes take 31 bits"));
	a.period = 0;
	assert_int_equal(pmu_open(&ctx, &caps, &a, 1, 0, err, sizeof(err)), -E_INVAL);
	assert_true(contains(err, "period 0"));

	/* The largest period reloads exactly: the counter holds -period. */
	a.period = caps.max_period;
	open_n(&a, 1, PMU_OPEN_NO_FIXED);
	pmu_start(&ctx);
	assert_int_equal(M.gp[0], (0 - caps.max_period) & caps.gp_mask);
	if (caps.intel && !caps.fw_write)	/* 0x80000001 sign-extended by the CPU */
		assert_int_equal(M.gp[0], 0xffffffff80000001ull & caps.gp_mask);
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 1 } };
	model_run(&M, &c, caps.max_period - 1);
	assert_int_equal(log_.n, 0);
	model_run(&M, &c, 1);
	assert_int_equal(log_.n, 1);
	model_run(&M, &c, 5);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), caps.max_period + 5);
}

/* ---- Freeze on PMI (Intel v2+) ---- */

/* Every preset: where the CPU has no freeze (Intel v1, AMD, KVM, which
 * #GPs on DEBUGCTL bit 12) PMU_OPEN_FREEZE is a no-op, never a fault. */
static void freeze_on_pmi(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a[2] = { ev("instructions/period=1000/"), ev("cycles") };
	for (int frz = 0; frz < 2; frz++) {
		memset(&log_, 0, sizeof(log_));
		unsigned faults = M.faults;
		open_n(a, 2, frz ? PMU_OPEN_FREEZE : 0);
		pmu_start(&ctx);
		assert_int_equal(!!(M.debugctl & (1ull << 12)), frz && caps.freeze);
		assert_int_equal(!!(M.debugctl & (1ull << 14)), caps.freeze_smm);
		model_retire(&M, 999);
		/* 7 instructions "inside the NMI", before the handler runs. */
		log_.inject_in_nmi = 7;
		model_retire(&M, 1);
		assert_int_equal(log_.per_idx[0], 1);
		model_retire(&M, 1000);
		pmu_stop(&ctx);
		assert_int_equal(M.debugctl & ((1ull << 12) | (1ull << 14)),
				 caps.freeze_smm ? 1ull << 14 : 0);
		/* Frozen: the handler's own 7 are not counted. */
		assert_int_equal(pmu_read(&ctx, 1), frz && caps.freeze ? 2000 : 2007);
		assert_int_equal(M.global_status & (1ull << 59), 0);
		assert_int_equal(M.faults, faults);
	}
}

/*
 * SMM freeze: the cycles an SMI spends in SMM are firmware's. Where
 * IA32_PERF_CAPABILITIES[12] offers DEBUGCTL.FREEZE_WHILE_SMM, it is on
 * from the CPU's quiesce at boot (the harness's counts) and at every
 * pmu_start, whatever the flags (a run's counts), and stays on after
 * pmu_stop; elsewhere (KVM, AMD, v1-v3 without the capability) the SMM
 * cycles count, and nothing faults.
 */
static void smm_freeze(void **state)
{
	const struct model_cfg *cfg = model_preset(flav(state));
	bool frz = cfg->intel && cfg->smm_freeze && !cfg->kvm;

	boot(flav(state));
	assert_int_equal(caps.freeze_smm, frz);
	unsigned faults = M.faults;
	pmu_cpu_quiesce(&caps);
	assert_int_equal(!!(M.debugctl & (1ull << 14)), frz);
	for (unsigned flags = 0; flags <= PMU_OPEN_FREEZE; flags += PMU_OPEN_FREEZE) {
		M.debugctl &= ~(1ull << 14);	/* someone cleared it: pmu_start sets it */
		struct pmu_event_attr a = ev("cycles");
		open_n(&a, 1, flags | PMU_OPEN_NO_FIXED);
		pmu_start(&ctx);
		assert_int_equal(!!(M.debugctl & (1ull << 14)), frz);
		model_retire(&M, 1000);
		model_smi(&M, 500);
		model_retire(&M, 1000);
		pmu_stop(&ctx);
		assert_int_equal(pmu_read(&ctx, 0), frz ? 2000 : 2500);
		assert_int_equal(!!(M.debugctl & (1ull << 14)), frz);
	}
	assert_int_equal(M.faults, faults);
}

/* RDPMC faulting on one index (here the fixed counters, as a hypervisor
 * that emulates GP RDPMC only): the probe tries every index, turns RDPMC
 * off, and the PMI handler's reads go through RDMSR; a probe of index 0
 * alone would leave a plain RDPMC to fault in NMI context. */
static void rdpmc_every_index(void **state)
{
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 1 } };
	struct model_cfg cfg = *model_preset(flav(state));
	char line[256];

	cfg.rdpmc_no_fixed = true;
	model_init(&M, &cfg);
	M.unexpected_fault = unexpected_fault;
	M.nmi = on_nmi;
	memset(&log_, 0, sizeof(log_));
	log_.group_ok = true;
	assert_int_equal(pmu_probe(&caps), 0);
	M.lvtpc = LVT_NMI;
	assert_false(caps.rdpmc_ok);
	assert_true(contains(pmu_describe(&caps, line, sizeof(line)), "rdpmc faults"));
	struct pmu_event_attr a[2] = { ev("instructions/period=1000/"), ev("cycles") };
	open_n(a, 2, 0);
	pmu_start(&ctx);
	model_run(&M, &c, 100000);
	pmu_stop(&ctx);
	assert_int_equal(log_.per_idx[0], 100);
	assert_int_equal(pmu_read(&ctx, 0), 100000);
	assert_int_equal(pmu_read(&ctx, 1), 100000);
}

/* Alder Lake: CPUID.0AH reports 6 GP and fixed counters 0-2 on both core
 * types and there is no leaf 23H; the P-core has 8 GP counters and fixed
 * counter 3. The probe finds them on the P-core, write-tested, adds none
 * on the E-core or where a hypervisor passes the P-core's CPUID through
 * without them (only _safe accesses), and then every counter the core has
 * counts at once, exactly. */
static void hybrid_pcore_counters(void **state)
{
	enum model_flavour f = flav(state);
	const struct model_cfg *cfg = model_preset(f);
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 2, [SIG_BRANCHES] = 1,
					[SIG_SLOTS] = 4 } };
	char line[256];

	boot(f);
	pmu_describe(&caps, line, sizeof(line));
	print_message("# pmu: %s\n", line);
	assert_int_equal(caps.core_type, cfg->core_type);
	assert_int_equal(caps.nr_gp, cfg->nr_gp + cfg->extra_gp);
	assert_int_equal(caps.fixed_bitmap, 0x7 | cfg->extra_fixed);
	assert_int_equal(caps.nr_fixed, cfg->extra_fixed ? 4 : 3);
	assert_int_equal(contains(line, "8 GP counters"), cfg->extra_gp != 0);
	assert_int_equal(contains(line, "beyond CPUID.0AH"), cfg->extra_gp != 0);

	struct pmu_event_attr a[PMU_MAX_EVENTS];
	int n = 0;
	a[n++] = ev("instructions");
	a[n++] = ev("cycles");
	a[n++] = ev("ref-cycles");
	if (caps.fixed_bitmap & 8)
		a[n++] = ev("topdown-slots");
	for (u32 i = 0; i < caps.nr_gp; i++)
		a[n++] = ev("branches");
	open_n(a, n, 0);
	pmu_start(&ctx);
	model_run(&M, &c, 100000);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 200000);
	assert_int_equal(pmu_read(&ctx, 1), 100000);
	if (caps.fixed_bitmap & 8)
		assert_int_equal(pmu_read(&ctx, 3), 400000);
	for (int i = n - (int)caps.nr_gp; i < n; i++)
		assert_int_equal(pmu_read(&ctx, i), 100000);
	/* One more GP event than the core has does not fit. */
	a[n++] = ev("branches");
	assert_int_not_equal(pmu_open(&ctx, &caps, a, n, 0, err, sizeof(err)), 0);
}

/*
 * AMD SMI counting: Zen 1-5 count SMIs with PMCx02B (LsSmiRx), kept on
 * the last GP counter while a context whose events leave it free runs,
 * as the harness's one event does; Intel reads MSR_SMI_COUNT. The
 * event's own count is untouched, and a context that needs every counter
 * keeps them all (no SMI count then, on AMD).
 */
static void amd_smi_count(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("cycles");
	open_n(&a, 1, PMU_OPEN_NO_FIXED);
	pmu_start(&ctx);
	s64 s0 = pmu_smi_count(&caps);
	model_retire(&M, 1000);
	model_smi(&M, 100);
	model_smi(&M, 100);
	model_retire(&M, 1000);
	s64 s1 = pmu_smi_count(&caps);
	pmu_stop(&ctx);
	const struct model_cfg *cfg = model_preset(flav(state));
	bool zen = cfg->amd && cfg->family >= 0x17 && cfg->family <= 0x1a;
	assert_int_equal(caps.smi_count, cfg->intel || zen);
	if (caps.smi_count)
		assert_int_equal(s1 - s0, 2);
	else
		assert_int_equal(s1, -1);
	assert_int_equal(pmu_read(&ctx, 0), caps.freeze_smm ? 2000 : 2200);
	if (caps.amd)
		assert_int_equal(pmu_smi_count(&caps), -1);	/* stopped: the counter is given back */
	/* Every GP counter taken: the events keep them. */
	struct pmu_event_attr all[PMU_MAX_GP];
	for (u32 i = 0; i < caps.nr_gp; i++)
		all[i] = ev("instructions");
	open_n(all, (int)caps.nr_gp, PMU_OPEN_NO_FIXED);
	pmu_start(&ctx);
	if (caps.amd)
		assert_int_equal(pmu_smi_count(&caps), -1);
	model_retire(&M, 500);
	pmu_stop(&ctx);
	for (u32 i = 0; i < caps.nr_gp; i++)
		assert_int_equal(pmu_read(&ctx, (int)i), 500);
}

/*
 * Where the PMI handler unmasks LVT PC, per core (Linux's early, mid and
 * late acknowledgment): on entry before Haswell and on the Atoms
 * Silvermont through Tremont; before re-enabling on the Atoms from
 * Gracemont on (Clearwater Forest's Darkmont too) and on AMD; after
 * re-enabling on the big cores from Haswell on. The model records where
 * the unmask came; sampling stays exact everywhere.
 */
static void pmi_ack_point(void **state)
{
	enum model_flavour f = flav(state);
	int want = ACK_LATE;

	if (f == MODEL_INTEL_SNB || f == MODEL_INTEL_TREMONT)
		want = ACK_EARLY;
	else if (f == MODEL_INTEL_GRACEMONT || f == MODEL_INTEL_CWF || model_preset(f)->amd)
		want = ACK_MID;
	boot(f);
	assert_int_equal(caps.lvt_ack, want == ACK_EARLY ? PMU_ACK_EARLY :
			 want == ACK_MID ? PMU_ACK_MID : PMU_ACK_LATE);
	struct pmu_event_attr a = ev("instructions/period=1000/");
	open_n(&a, 1, PMU_OPEN_NO_FIXED);
	pmu_start(&ctx);
	model_retire(&M, 10000);
	pmu_stop(&ctx);
	assert_int_equal(M.ack_seen, want);
	assert_int_equal(log_.per_idx[0], 10);
	assert_int_equal(M.pmi_lost_masked, 0);
	assert_int_equal(M.pmi_spurious, 0);
}

/* A PMI that arrives while the context is open but not running (a stray
 * overflow between the APIC arming LVT PC and pmu_start) masks LVT PC on
 * Intel and under KVM: the handler re-arms it on that path too, and
 * pmu_start arms it again, so the run still samples. */
static void stray_pmi_before_start(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions/period=1000/");
	open_n(&a, 1, PMU_OPEN_NO_FIXED);
	/* Someone else's counter (the last GP) overflows with INT. */
	u32 last = caps.nr_gp - 1;
	u64 cyc = caps.intel ? 0x3c : 0x76;
	assert_int_equal(model_wrmsr(&M, caps.gp_ctr_base + last * caps.stride, caps.gp_mask - 9), 0);
	assert_int_equal(model_wrmsr(&M, caps.gp_sel_base + last * caps.stride,
				     cyc | (1ull << 16) | (1ull << 17) | (1ull << 20) | (1ull << 22)), 0);
	if (caps.has_global)
		assert_int_equal(model_wrmsr(&M, caps.global_ctrl, 1ull << last), 0);
	model_retire(&M, 20);
	assert_int_equal(log_.nmi_calls, 1);
	assert_int_equal(log_.handled, 0);
	assert_int_equal(M.lvtpc, LVT_NMI);		/* the not-running path re-armed it */
	assert_int_equal(model_wrmsr(&M, caps.gp_sel_base + last * caps.stride, 0), 0);
	/* Masked again, as a PMI after the handler's last look would leave
	 * it: pmu_start arms it. */
	M.lvtpc |= LVT_MASKED;
	pmu_start(&ctx);
	model_retire(&M, 100000);
	pmu_stop(&ctx);
	assert_int_equal(log_.per_idx[0], 100);
	assert_int_equal(M.pmi_lost_masked, 0);
}

/* Firmware hand-off: a GP counter counting cycles with INT close to
 * overflow, fixed counter 0 enabled, GLOBAL_CTRL at reset, DEBUGCTL's
 * freeze set, LVT PC armed. The probe reports the counters (not "no
 * PMU"), tests a free one, quiesce clears it all, and a run samples
 * exactly, with no PMI of firmware's. */
static void firmware_handoff(void **state)
{
	enum model_flavour f = flav(state);
	char line[256];

	model_init(&M, model_preset(f));
	M.unexpected_fault = unexpected_fault;
	M.nmi = on_nmi;
	memset(&log_, 0, sizeof(log_));
	u32 last = 0;			/* PMC0, the counter the old probe wrote */
	model_firmware_handoff(&M, last);
	M.msr_cycles = 2;		/* a counting counter moves between two accesses */
	assert_int_equal(pmu_probe(&caps), 0);
	pmu_describe(&caps, line, sizeof(line));
	print_message("# pmu: %s\n", line);
	u64 want = 1ull << last;
	if (caps.intel && caps.version >= 2)
		want |= 1ull << 32;
	assert_int_equal(caps.fw_owned, want);
	assert_true(contains(line, "firmware had counters"));
	assert_true(contains(pmu_fw_owned_describe(&caps, line, sizeof(line)), "switched off"));
	/* The firmware counter was not touched by the probe: still counting. */
	assert_int_equal(M.evtsel[last] & (1ull << 22), 1ull << 22);
	bool lfence = pmu_cpu_quiesce(&caps);
	assert_int_equal(lfence, true);
	for (u32 i = 0; i < M.nr_gp; i++)
		assert_int_equal(M.evtsel[i], 0);
	assert_int_equal(M.fixed_ctrl, 0);
	if (caps.has_global)
		assert_int_equal(M.global_ctrl, 0);
	assert_int_equal(M.debugctl & ((1ull << 12) | (1ull << 14)),
			 caps.freeze_smm ? 1ull << 14 : 0);
	if (caps.amd)
		assert_int_equal(M.de_cfg & 2, 2);	/* LFENCE_SERIALIZE */
	model_retire(&M, 10000);
	assert_int_equal(M.pmi_raised, 0);
	/* Without a global gate, firmware (SMM) may enable its counter again
	 * behind our back: pmu_start switches it off. */
	u32 other = M.nr_gp - 1;
	if (!caps.has_global) {
		M.evtsel[other] = (caps.intel ? 0x3c : 0x76) | (1ull << 16) | (1ull << 17) |
				  (1ull << 20) | (1ull << 22);
		M.gp[other] = M.gp_mask - 5000;
	}
	struct pmu_event_attr a = ev("instructions/period=1000/");
	open_n(&a, 1, PMU_OPEN_NO_FIXED);
	pmu_start(&ctx);
	model_retire(&M, 100000);
	pmu_stop(&ctx);
	assert_int_equal(log_.per_idx[0], 100);
	assert_int_equal(ctx.stats.spurious, 0);
	assert_int_equal(M.pmi_raised, 100);
	assert_int_equal(pmu_read(&ctx, 0), 100000);
}

/* Firmware that enabled every GP counter leaves none to test: the probe
 * says so rather than blaming the PMU. */
static void firmware_owns_all(void **state)
{
	model_init(&M, model_preset(flav(state)));
	M.unexpected_fault = unexpected_fault;
	for (u32 i = 0; i < M.nr_gp; i++)
		M.evtsel[i] = 1ull << 22;
	assert_int_equal(pmu_probe(&caps), -E_NODEV);
	assert_true(contains(caps.none_reason, "firmware has every"));
	/* No PMU is driven: the quiesce leaves them, and the log says so. */
	char line[256];
	pmu_cpu_quiesce(&caps);
	for (u32 i = 0; i < M.nr_gp; i++)
		assert_int_equal(M.evtsel[i], 1ull << 22);
	pmu_fw_owned_describe(&caps, line, sizeof(line));
	print_message("# pmu: %s\n", line);
	assert_true(contains(line, "left as they are"));
	assert_false(contains(line, "switched off"));
}

/* Hardware periods: never below 2 (a counter one event from overflow
 * loses its PMI on some CPUs), and Broadwell's INST_RETIRED.ALL at least
 * 128 with bits 5:0 clear. The sample carries the period that ran. */
static void min_period(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions/period=1/");
	open_n(&a, 1, PMU_OPEN_NO_FIXED);
	pmu_start(&ctx);
	assert_int_equal(M.gp[0], (0 - 2ull) & caps.gp_mask);
	model_retire(&M, 100);
	pmu_stop(&ctx);
	assert_int_equal(log_.per_idx[0], 50);
	assert_int_equal(log_.last_period[0], 2);
	assert_int_equal(M.erratum_hits, 0);
	assert_int_equal(pmu_read(&ctx, 0), 100);
	if (!caps.intel)
		return;
	/* INST_RETIRED.ALL, event c0 umask 01. */
	static const struct { u64 period, hw; } p[] = { { 100, 128 }, { 1000, 960 }, { 4096, 4096 } };
	for (size_t i = 0; i < ARRAY_SIZE(p); i++) {
		memset(&log_, 0, sizeof(log_));
		char spec[64];
		snprintf(spec, sizeof(spec), "r01c0/period=%lu/", (unsigned long)p[i].period);
		a = ev(spec);
		open_n(&a, 1, PMU_OPEN_NO_FIXED);
		pmu_start(&ctx);
		u64 hw = M.cfg.bdw_errata ? p[i].hw : p[i].period;
		assert_int_equal(M.gp[0], (0 - hw) & caps.gp_mask);
		model_retire(&M, 100000);
		pmu_stop(&ctx);
		assert_int_equal(log_.last_period[0], hw);
		assert_int_equal(log_.per_idx[0], 100000 / hw);
		assert_int_equal(M.erratum_hits, 0);
	}
}

/* Intel's GLOBAL_STATUS bits 61-63 (uncore overflow, DS buffer,
 * CondChgd) are no counter's: counted as unknown and acknowledged, so they
 * do not stay set; bit 55 (Intel PT's ToPA PMI) is left for its owner. */
static void status_bits_61_63(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a = ev("instructions/period=1000/");
	open_n(&a, 1, 0);
	pmu_start(&ctx);
	M.global_status |= (1ull << 61) | (1ull << 62) | (1ull << 63);
	model_retire(&M, 1000);
	assert_int_equal(log_.per_idx[0], 1);
	assert_int_equal(ctx.stats.unknown_status, 1);
	assert_int_equal(M.global_status, 0);
	model_retire(&M, 1000);
	assert_int_equal(log_.per_idx[0], 2);
	assert_int_equal(ctx.stats.unknown_status, 1);
	pmu_stop(&ctx);
}

/* Time passes inside the handler: counters still enabled at NMI entry and
 * after re-enabling keep counting (nmi_msr_cycles per access). Counts
 * stay exact against the model's own tally; the events past an overflow
 * shorten the next period, so samples stay one per period; no spurious
 * PMI. */
static void handler_time(void **state)
{
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 1 } };

	boot(flav(state));
	M.nmi_msr_cycles = 3;
	struct pmu_event_attr a[2] = { ev("instructions/period=1000/"), ev("cycles/period=777/") };
	open_n(a, 2, PMU_OPEN_NO_FIXED);
	pmu_start(&ctx);
	model_run(&M, &c, 1000000);
	pmu_stop(&ctx);
	for (int i = 0; i < 2; i++) {
		u64 n = pmu_read(&ctx, i), per = i ? 777 : 1000;
		assert_int_equal(n, M.gp_counted[ctx.ctr[i].idx]);
		/* Never more samples than periods; fewer only by PMIs that
		 * came while LVT PC was still masked in the handler (the
		 * window late unmasking leaves, as on real CPUs): such an
		 * overflow waits for the next PMI, its overshoot can exceed a
		 * period, and at most two periods go unsampled per lost PMI. */
		if (!(log_.per_idx[i] * per <= n && n / per <= log_.per_idx[i] + 2 * M.pmi_lost_masked))
			fail_msg("event %d: %u samples of %lu for a count of %lu (pmi raised %u "
				 "delivered %u lost %u latched %u, overflows %lu)", i, log_.per_idx[i],
				 (unsigned long)per, (unsigned long)n, M.pmi_raised, M.pmi_delivered,
				 M.pmi_lost_masked, M.pmi_latched, (unsigned long)ctx.ctr[i].overflows);
	}
	assert_true(M.gp_counted[1] > 1000000);		/* the handler's cycles counted */
	assert_int_equal(M.pmi_spurious, 0);
	/* AMD's APIC does not mask LVT PC: an overflow at NMI entry, before
	 * the counters are off, raises a PMI that the running handler then
	 * handles, and the latched NMI finds nothing (Linux counts on an
	 * "NMI window" for these). */
	assert_true(ctx.stats.spurious <= M.pmi_latched);
	assert_int_equal(M.erratum_hits, 0);
}

/* KVM: the host's perf may take a counter away for a while; the guest's
 * count falls short of the work, and the driver reports what its counter
 * counted, no more, never a wrapped or doubled figure. */
static void kvm_undercount(void **state)
{
	boot(flav(state));
	M.host_steal_every = 50;
	struct pmu_event_attr a[2] = { ev("instructions/period=10000/"), ev("cycles") };
	open_n(a, 2, PMU_OPEN_NO_FIXED);
	pmu_start(&ctx);
	model_retire(&M, 1000000);
	pmu_stop(&ctx);
	assert_true(M.stolen > 0);
	for (int i = 0; i < 2; i++) {
		u64 n = pmu_read(&ctx, i);
		assert_int_equal(n, M.gp_counted[ctx.ctr[i].idx]);
		assert_true(n < 1000000 && n >= 1000000 - 1000000 / 50);
	}
	assert_int_equal(log_.per_idx[0], pmu_read(&ctx, 0) / 10000);
}

/* ---- Counter assignment ---- */

static void assignment(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a[3] = { ev("cycles"), ev("instructions"), ev("cycles") };
	int n = caps.nr_gp >= 3 || caps.fixed_bitmap ? 3 : 2;	/* Intel v1: 2 counters */
	open_n(a, n, 0);
	if (caps.intel && caps.fixed_bitmap & 2) {
		assert_int_equal(ctx.ctr[0].hw, PMU_HW_FIXED);
		assert_int_equal(ctx.ctr[0].idx, 1);
		assert_int_equal(pmu_rdpmc_index(&ctx, 0), (1 << 30) | 1);
		assert_int_equal(ctx.ctr[1].hw, PMU_HW_FIXED);
		assert_int_equal(pmu_rdpmc_index(&ctx, 1), 1 << 30);
		assert_int_equal(ctx.ctr[2].hw, PMU_HW_GP);	/* fixed 1 taken */
	} else {
		for (int i = 0; i < n; i++) {
			assert_int_equal(ctx.ctr[i].hw, PMU_HW_GP);
			assert_int_equal(pmu_rdpmc_index(&ctx, i), i);
		}
	}
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 2 } };
	pmu_start(&ctx);
	model_run(&M, &c, 1234);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 1234);
	assert_int_equal(pmu_read(&ctx, 1), 2468);
	if (n == 3)
		assert_int_equal(pmu_read(&ctx, 2), 1234);

	open_n(a, n, PMU_OPEN_NO_FIXED);
	for (int i = 0; i < n; i++)
		assert_int_equal(ctx.ctr[i].hw, PMU_HW_GP);
	assert_int_equal(pmu_rdpmc_index(&ctx, 7), -1);
}

/* pa with PMU_ATTR_COUNTER on counter k (GP k, or PMU_COUNTER_FIXED + N). */
static struct pmu_event_attr on_counter(const char *spec, u32 k)
{
	struct pmu_event_attr a = ev(spec);

	a.flags |= PMU_ATTR_COUNTER;
	a.counter = k;
	return a;
}

/* nanoBench's CTR=: an event bound to one counter gets that one, counts
 * there, and is refused with the reason where the CPU lacks it or another
 * event holds it. */
static void counter_bound(void **state)
{
	boot(flav(state));
	u32 last = caps.nr_gp - 1;
	struct pmu_event_attr a[2] = { on_counter("branches", last), ev("cycles") };
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 2, [SIG_BRANCHES] = 1 } };

	open_n(a, 2, PMU_OPEN_NO_FIXED);
	assert_int_equal(ctx.ctr[0].hw, PMU_HW_GP);
	assert_int_equal(ctx.ctr[0].idx, last);
	assert_int_equal(pmu_rdpmc_index(&ctx, 0), last);
	assert_int_equal(ctx.ctr[1].idx, 0);		/* the first one free */
	pmu_start(&ctx);
	model_run(&M, &c, 777);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 777);
	assert_int_equal(M.gp_counted[last], 777);

	a[0] = on_counter("branches", caps.nr_gp);
	assert_int_equal(pmu_open(&ctx, &caps, a, 1, 0, err, sizeof(err)), -E_NODEV);
	assert_true(contains(err, "asks for GP counter"));
	assert_true(contains(err, "this CPU has"));
	a[0] = on_counter("branches", 0);
	a[1] = on_counter("cycles", 0);
	assert_int_equal(pmu_open(&ctx, &caps, a, 2, 0, err, sizeof(err)), -E_BUSY);
	assert_true(contains(err, "already taken by 'branches'"));

	a[0] = on_counter("cycles", PMU_COUNTER_FIXED + 1);
	int rc = pmu_open(&ctx, &caps, a, 1, 0, err, sizeof(err));
	if (!caps.intel || !(caps.fixed_bitmap & 2)) {
		assert_int_equal(rc, -E_NODEV);
		assert_true(contains(err, "asks for fixed counter 1, which this CPU lacks"));
		return;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(ctx.ctr[0].hw, PMU_HW_FIXED);
	assert_int_equal(ctx.ctr[0].idx, 1);
	a[0] = on_counter("instructions", PMU_COUNTER_FIXED + 1);
	assert_int_equal(pmu_open(&ctx, &caps, a, 1, 0, err, sizeof(err)), -E_INVAL);
	assert_true(contains(err, "counts on fixed counter 0, not on fixed counter 1"));
}

/* The MSRs an event's selection reads beside PERFEVTSEL (nanoBench's
 * MSR_RSP0/1, MSR_3F6H, MSR_PF): taken where the model has them, left as
 * they were, and refused with the reason elsewhere. */
static void event_msrs(void **state)
{
	static const u32 msr[] = { 0x1a6, 0x1a7, 0x3f6, 0x3f7 };
	static const u32 bit[] = { MODEL_XMSR_OFFCORE, MODEL_XMSR_OFFCORE, MODEL_XMSR_LD_LAT,
				   MODEL_XMSR_FRONTEND };

	boot(flav(state));
	M.offcore[1] = 0x1234;
	for (size_t i = 0; i < ARRAY_SIZE(msr); i++) {
		bool has = M.cfg.intel && !M.cfg.kvm && (M.cfg.xmsr & bit[i]);
		unsigned faults = M.faults;
		int rc = pmu_event_msr_check(&caps, msr[i], err, sizeof(err));
		if (has) {
			assert_int_equal(rc, 0);
		} else {
			assert_int_equal(rc, -E_NODEV);
			assert_true(contains(err, M.cfg.intel ? "has no MSR" : "not Intel"));
			assert_int_equal(M.faults, faults + (M.cfg.intel ? 1 : 0));
		}
	}
	if (M.cfg.xmsr & MODEL_XMSR_OFFCORE && !M.cfg.kvm)
		assert_int_equal(M.offcore[1], 0x1234);		/* written back as read */
	assert_int_equal(pmu_event_msr_check(&caps, 0x10, err, sizeof(err)), -E_INVAL);
	assert_true(contains(err, "none of an event's extra MSRs"));
}

static void too_many_events(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a[PMU_MAX_EVENTS];
	u32 n = caps.nr_gp + 1;

	for (u32 i = 0; i < n; i++)
		a[i] = ev("branches/pinned/");
	assert_int_equal(pmu_open(&ctx, &caps, a, (int)n, 0, err, sizeof(err)), -E_BUSY);
	assert_true(contains(err, "too many pinned events"));
	assert_true(contains(err, "'branches"));
	/* Not pinned: an error unless multiplexing is allowed. */
	for (u32 i = 0; i < n; i++)
		a[i] = ev("branches");
	assert_int_equal(pmu_open(&ctx, &caps, a, (int)n, 0, err, sizeof(err)), -E_BUSY);
	assert_true(contains(err, "multiplexing"));
	open_n(a, (int)n, PMU_OPEN_MULTIPLEX);
	assert_int_equal(ctx.ctr[n - 1].hw, PMU_HW_NONE);
	assert_int_equal(pmu_rdpmc_index(&ctx, (int)n - 1), -1);
	struct model_cycle c = { .n = { [SIG_BRANCHES] = 1 } };
	pmu_start(&ctx);
	model_run(&M, &c, 100);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 100);
	assert_int_equal(pmu_read(&ctx, (int)n - 1), 0);
	/* A non-pinned event does not take a pinned one's counter. */
	a[0] = ev("branches");
	for (u32 i = 1; i < n; i++)
		a[i] = ev("branch-misses/pinned/");
	open_n(a, (int)n, PMU_OPEN_MULTIPLEX | PMU_OPEN_NO_FIXED);
	assert_int_equal(ctx.ctr[0].hw, PMU_HW_NONE);
	for (u32 i = 1; i < n; i++)
		assert_int_equal(ctx.ctr[i].hw, PMU_HW_GP);
	assert_int_equal(pmu_open(&ctx, &caps, a, 0, 0, err, sizeof(err)), -E_INVAL);
	assert_int_equal(pmu_open(&ctx, &caps, a, PMU_MAX_EVENTS + 1, 0, err, sizeof(err)), -E_INVAL);
}

/* cmask / inv / edge through the driver, on a 2-0-2-0 instruction pattern. */
static void cmask_inv_edge(void **state)
{
	struct model_cycle two = { .n = { [SIG_INSTRUCTIONS] = 2 } }, zero = { { 0 } };

	boot(flav(state));
	struct pmu_event_attr a[4] = {
		ev("instructions"),
		ev(caps.intel ? "cpu/event=0xc0,cmask=2/" : "cpu/event=0xc0,cmask=2/"),
		ev("cpu/event=0xc0,cmask=1,inv/"),
		ev("cpu/event=0xc0,cmask=1,edge/"),
	};
	open_n(a, caps.nr_gp >= 4 ? 4 : 2, PMU_OPEN_NO_FIXED);
	pmu_start(&ctx);
	for (int i = 0; i < 500; i++) {
		model_run(&M, &two, 3);		/* one rising edge per 3-cycle burst */
		model_run(&M, &zero, 2);
	}
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 3000);	/* instructions */
	assert_int_equal(pmu_read(&ctx, 1), 1500);	/* cycles with >= 2 */
	if (ctx.n == 4) {
		assert_int_equal(pmu_read(&ctx, 2), 1000);	/* cycles with < 1 */
		assert_int_equal(pmu_read(&ctx, 3), 500);	/* bursts */
	}
}

/* Intel v5: fixed counters 0, 1 and 3; no fixed 2. */
static void v5_fixed_bitmap(void **state)
{
	(void)state;
	boot(MODEL_INTEL_V5);
	assert_int_equal(caps.fixed_bitmap, 0xb);
	assert_int_equal(caps.nr_fixed, 4);
	struct pmu_event_attr a[3] = { ev("instructions"), ev("cycles"), ev("topdown-slots") };
	open_n(a, 3, 0);
	assert_int_equal(ctx.ctr[2].hw, PMU_HW_FIXED);
	assert_int_equal(ctx.ctr[2].idx, 3);
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 1, [SIG_SLOTS] = 4 } };
	pmu_start(&ctx);
	model_run(&M, &c, 999);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 2), 4 * 999);
	struct pmu_event_attr r;
	assert_int_equal(pmu_event_parse("ref-cycles", &caps, &r, err, sizeof(err)), -E_NODEV);
	assert_true(contains(err, "fixed counter 2, which this CPU lacks"));
	assert_int_equal(M.fixed_ctrl, 0);
}

/* Events CPUID.0AH:EBX marks unavailable are refused, by name and raw. */
static void unavailable_events(void **state)
{
	(void)state;
	struct model_cfg cfg = *model_preset(MODEL_KVM_V2);
	cfg.ebx_unavail = 1u << 5 | 1u << 2;	/* branches, ref (bus) cycles */
	model_init(&M, &cfg);
	M.unexpected_fault = unexpected_fault;
	assert_int_equal(pmu_probe(&caps), 0);
	struct pmu_event_attr a;
	assert_int_equal(pmu_event_parse("branches", &caps, &a, err, sizeof(err)), -E_NODEV);
	assert_true(contains(err, "CPUID.0AH:EBX bit 5"));
	assert_int_equal(pmu_event_parse("r00c4", &caps, &a, err, sizeof(err)), -E_NODEV);
	assert_true(contains(err, "branches retired"));
	assert_int_equal(pmu_event_parse("bus-cycles", &caps, &a, err, sizeof(err)), -E_NODEV);
	assert_int_equal(pmu_event_parse("branch-misses", &caps, &a, err, sizeof(err)), 0);
	/* Events past the EBX length are not enumerated: unavailable too. */
	cfg.ebx_unavail = 0;
	cfg.ebx_len = 5;
	model_init(&M, &cfg);
	assert_int_equal(pmu_probe(&caps), 0);
	assert_int_equal(pmu_event_parse("branch-misses", &caps, &a, err, sizeof(err)), -E_NODEV);
}

/* Fixed counters narrower than the GP ones (CPUID.0AH:EDX[12:5]). */
static void narrow_fixed(void **state)
{
	(void)state;
	struct model_cfg cfg = *model_preset(MODEL_KVM_V2);
	cfg.fixed_width = 36;
	model_init(&M, &cfg);
	M.unexpected_fault = unexpected_fault;
	M.nmi = on_nmi;
	M.lvtpc = LVT_NMI;
	memset(&log_, 0, sizeof(log_));
	assert_int_equal(pmu_probe(&caps), 0);
	struct pmu_event_attr a = ev("cycles/period=0x900000000/");	/* > 2^35 */
	assert_int_equal(pmu_open(&ctx, &caps, &a, 1, 0, err, sizeof(err)), -E_RANGE);
	assert_true(contains(err, "fixed counter 1's 36 bits"));
	a = ev("cycles");
	open_n(&a, 1, 0);
	assert_int_equal(ctx.ctr[0].hw, PMU_HW_FIXED);
	struct model_cycle c = { { 0 } };
	pmu_start(&ctx);
	model_run(&M, &c, (1ull << 37) + 99);		/* wraps a 36-bit counter twice */
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), (1ull << 37) + 99);
	assert_true(ctx.ctr[0].overflows >= 4);
}

/* ---- Frequency mode ---- */

static void freq_adjust(void **state)
{
	(void)state;
	const u64 max = (1ull << 47) - 1;
	/* Twice the wanted rate: the period moves half way to double. */
	assert_int_equal(pmu_freq_adjust(1000, 2000, 1000, max), 1500);
	assert_int_equal(pmu_freq_adjust(1000, 500, 1000, max), 750);
	assert_int_equal(pmu_freq_adjust(1000, 1000, 1000, max), 1000);
	assert_int_equal(pmu_freq_adjust(1000, 0, 1000, max), 750);	/* no samples: shorter */
	assert_int_equal(pmu_freq_adjust(0, 10, 10, max), 1);
	assert_int_equal(pmu_freq_adjust(1, 1, 1000000, max), 1);
	assert_int_equal(pmu_freq_adjust(max, ~0ull, 1, max), max);	/* no overflow, clamped */
	assert_int_equal(pmu_freq_adjust(1ull << 40, 1ull << 30, 1ull << 29, max), 3ull << 39);
	/* Converges: a workload of 1e9 events/s, wanted 4000 samples/s. */
	u64 p = 1000;
	for (int i = 0; i < 60; i++)
		p = pmu_freq_adjust(p, 1000000000ull / p, 4000, max);
	assert_true(p > 249000 && p < 251000);
}

/* ---- Multiplexing: event sets rotated by pmu_tick ---- */

/* What a counter adds per cycle in mux_cycle, per event name below. */
static const struct { const char *name; u64 rate; } mux_events[] = {
	{ "instructions", 3 }, { "branches", 2 }, { "branch-misses", 1 }, { "cycles", 1 },
};
static const struct model_cycle mux_cycle = {
	.n = { [SIG_INSTRUCTIONS] = 3, [SIG_BRANCHES] = 2, [SIG_BRANCH_MISSES] = 1 } };

static int open_mux(int n, int pinned, u64 *rate)
{
	struct pmu_event_attr a[PMU_MAX_EVENTS];

	for (int i = 0; i < n; i++) {
		char spec[64];
		int k = i < pinned ? 3 : i % 4;
		snprintf(spec, sizeof(spec), "%s%s", mux_events[k].name, i < pinned ? "/pinned/" : "");
		a[i] = ev(spec);
		rate[i] = mux_events[k].rate;
	}
	open_n(a, n, PMU_OPEN_MULTIPLEX | PMU_OPEN_NO_FIXED);
	return n;
}

/*
 * Twice as many events as GP counters: two event sets that alternate on
 * every tick. Each event runs half the time, and its count scaled by
 * enabled / running is the whole run's count exactly (the model's work is
 * uniform and its clock only moves with it). Intervals long enough that
 * counters overflow and are folded across the switches; an odd number of
 * them, so set 0 runs one interval more than set 1.
 */
static void multiplex_scaling(void **state)
{
	u64 rate[PMU_MAX_EVENTS];

	boot(flav(state));
	int n = (int)MIN(2 * caps.nr_gp, (u32)PMU_MAX_EVENTS);
	open_mux(n, 0, rate);
	assert_int_equal(ctx.nsets, 2);
	for (int i = 0; i < n; i++)
		assert_int_equal(ctx.ctr[i].set, i < (int)caps.nr_gp ? 0 : 1);
	const u64 K = caps.max_period / 2 + 12345, T = 11;
	pmu_start(&ctx);
	u64 t0 = M.tsc;
	for (u64 t = 0; t < T; t++) {
		model_run(&M, &mux_cycle, K);
		if (t + 1 < T)
			pmu_tick(&ctx);
	}
	pmu_stop(&ctx);
	assert_int_equal(ctx.stats.rotations, T - 1);
	assert_int_equal(M.tsc - t0, K * T);
	for (int i = 0; i < n; i++) {
		struct pmu_value v;
		u64 ran = i < (int)caps.nr_gp ? (T + 1) / 2 : T / 2;
		pmu_read_value(&ctx, i, &v);
		assert_int_equal(v.enabled, K * T);
		assert_int_equal(v.running, K * ran);
		assert_int_equal(v.count, rate[i] * K * ran);
		assert_int_equal(pmu_scaled(&v), rate[i] * K * T);
	}
	assert_true(ctx.ctr[0].overflows >= 2);
	assert_int_equal(ctx.stats.unknown_status, 0);
	assert_int_equal(ctx.stats.missed, 0);
	/* Even: each set exactly half, time_running = time_enabled / 2. */
	u64 w = 0, r = 0, p = 0;
	pmu_start(&ctx);
	for (u64 t = 0; t < 10; t++) {
		model_run(&M, &mux_cycle, 1000);
		u64 w0 = M.wrmsrs, r0 = M.rdmsrs, p0 = M.rdpmcs;
		pmu_tick(&ctx);
		w += M.wrmsrs - w0, r += M.rdmsrs - r0, p += M.rdpmcs - p0;
	}
	pmu_stop(&ctx);
	/* What one rotation costs in register accesses. */
	print_message("# rotation of %d events on %u counters: %lu wrmsr, %lu rdmsr, %lu rdpmc per tick\n",
		      n, caps.nr_gp, (unsigned long)w / 10, (unsigned long)r / 10, (unsigned long)p / 10);
	for (int i = 0; i < n; i++) {
		struct pmu_value v;
		pmu_read_value(&ctx, i, &v);
		assert_int_equal(2 * v.running, v.enabled);
		assert_int_equal(pmu_scaled(&v), rate[i] * 10000);
	}
}

/* A pinned event stays on its counter in every set (time_running ==
 * time_enabled); the rest make three sets. */
static void multiplex_pinned(void **state)
{
	u64 rate[PMU_MAX_EVENTS];

	boot(flav(state));
	int free = (int)caps.nr_gp - 1;
	int n = 1 + MIN(3 * free, PMU_MAX_EVENTS - 1);
	open_mux(n, 1, rate);
	assert_int_equal(ctx.nsets, 3);
	assert_int_equal(ctx.ctr[0].set, PMU_SET_PINNED);
	pmu_start(&ctx);
	for (int t = 0; t < 9; t++) {
		model_run(&M, &mux_cycle, 3000);
		pmu_tick(&ctx);
	}
	pmu_stop(&ctx);
	for (int i = 0; i < n; i++) {
		struct pmu_value v;
		pmu_read_value(&ctx, i, &v);
		assert_int_equal(v.enabled, 27000);
		assert_int_equal(v.running, i ? 9000 : 27000);
		assert_int_equal(pmu_scaled(&v), rate[i] * 27000);
	}
	/* An event that fits in no set beside the pinned ones never counts. */
	struct pmu_event_attr a[PMU_MAX_EVENTS];
	for (u32 i = 0; i < caps.nr_gp; i++)
		a[i] = ev("branches/pinned/");
	a[caps.nr_gp] = ev("instructions");
	open_n(a, (int)caps.nr_gp + 1, PMU_OPEN_MULTIPLEX | PMU_OPEN_NO_FIXED);
	assert_int_equal(ctx.ctr[caps.nr_gp].set, PMU_SET_NEVER);
	pmu_start(&ctx);
	model_run(&M, &mux_cycle, 100);
	pmu_tick(&ctx);
	pmu_stop(&ctx);
	struct pmu_value v;
	pmu_read_value(&ctx, (int)caps.nr_gp, &v);
	assert_int_equal(v.count, 0);
	assert_int_equal(v.running, 0);
	assert_int_equal(v.enabled, 100);
	assert_int_equal(pmu_scaled(&v), 0);
}

/* Sampling events multiplexed: a period interrupted by a switch resumes
 * where it stopped, so samples = counted events / period, not one per
 * stint. */
static void multiplex_sampling(void **state)
{
	struct pmu_event_attr a[PMU_MAX_EVENTS];

	boot(flav(state));
	int n = (int)MIN(2 * caps.nr_gp, (u32)PMU_MAX_EVENTS);
	for (int i = 0; i < n; i++)
		a[i] = ev("instructions/period=1000/");
	open_n(a, n, PMU_OPEN_MULTIPLEX | PMU_OPEN_NO_FIXED);
	assert_int_equal(ctx.nsets, 2);
	pmu_start(&ctx);
	for (int t = 0; t < 20; t++) {
		model_retire(&M, 1500);
		pmu_tick(&ctx);
	}
	pmu_stop(&ctx);
	for (int i = 0; i < n; i++) {
		struct pmu_value v;
		pmu_read_value(&ctx, i, &v);
		assert_int_equal(v.count, 15000);
		assert_int_equal(v.running, 15000);
		assert_int_equal(log_.per_idx[i], 15);
		assert_int_equal(log_.last_period[i], 1000);
	}
	assert_int_equal(ctx.stats.missed, 0);
	assert_int_equal(ctx.stats.unknown_status, 0);
}

/* Intel: fixed counters rotate too. instructions and cycles alternate, so
 * each set puts its first of each on fixed counters 0 and 1 and the rest
 * on GP counters; every event's scaled count is still exact. */
static void multiplex_fixed(void **state)
{
	struct pmu_event_attr a[PMU_MAX_EVENTS];
	u64 rate[PMU_MAX_EVENTS];

	boot(flav(state));
	int n = (int)MIN(2 * (caps.nr_gp + 2), (u32)PMU_MAX_EVENTS);
	for (int i = 0; i < n; i++) {
		a[i] = ev(i % 2 ? "cycles" : "instructions");
		rate[i] = i % 2 ? 1 : 3;
	}
	open_n(a, n, PMU_OPEN_MULTIPLEX);
	assert_int_equal(ctx.nsets, 2);
	assert_int_equal(ctx.ctr[0].hw, PMU_HW_FIXED);
	assert_int_equal(ctx.ctr[1].hw, PMU_HW_FIXED);
	pmu_start(&ctx);
	for (int t = 0; t < 6; t++) {
		model_run(&M, &mux_cycle, caps.max_period / 3 + 777);
		pmu_tick(&ctx);
	}
	pmu_stop(&ctx);
	u64 total = 6 * (caps.max_period / 3 + 777);
	for (int i = 0; i < n; i++) {
		struct pmu_value v;
		pmu_read_value(&ctx, i, &v);
		assert_int_equal(v.enabled, total);
		assert_int_equal(2 * v.running, total);
		assert_int_equal(pmu_scaled(&v), rate[i] * total);
	}
	assert_int_equal(M.fixed_ctrl, 0);
	assert_int_equal(ctx.stats.unknown_status, 0);
}

/* Two events only fixed counter 2 counts (ref-cycles): an error, or with
 * multiplexing one event set each. */
static void multiplex_fixed_only(void **state)
{
	struct model_cycle c = { { 0 } };

	(void)state;
	boot(MODEL_INTEL_V4);
	struct pmu_event_attr two[2] = { ev("ref-cycles"), ev("ref-cycles") };
	assert_int_equal(pmu_open(&ctx, &caps, two, 2, 0, err, sizeof(err)), -E_BUSY);
	assert_true(contains(err, "already taken by 'ref-cycles'"));
	open_n(two, 2, PMU_OPEN_MULTIPLEX);
	assert_int_equal(ctx.nsets, 2);
	assert_int_equal(ctx.ctr[1].set, 1);
	pmu_start(&ctx);
	model_run(&M, &c, 100);
	pmu_tick(&ctx);
	model_run(&M, &c, 300);
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 100);
	assert_int_equal(pmu_read(&ctx, 1), 300);
	assert_int_equal(ctx.ctr[1].hw, PMU_HW_FIXED);
}

/* ---- Frequency mode: the tick re-tunes the period ---- */

#define MODEL_HZ	1000000000ull		/* one model cycle = 1 ns */
#define TICK_CYCLES	(MODEL_HZ / 250)

static void freq_convergence(void **state)
{
	struct model_cycle one = { .n = { [SIG_INSTRUCTIONS] = 1 } };
	struct model_cycle three = { .n = { [SIG_INSTRUCTIONS] = 3 } };

	boot(flav(state));
	struct pmu_event_attr a = ev("instructions/freq=4000/");
	open_n(&a, 1, 0);
	pmu_set_clock_hz(&ctx, MODEL_HZ);
	assert_int_equal(ctx.ctr[0].period, 100000);	/* the first period */
	pmu_start(&ctx);
	unsigned before = 0;
	for (int t = 0; t < 30; t++) {
		before = log_.per_idx[0];
		model_run(&M, &one, TICK_CYCLES);
		pmu_tick(&ctx);
	}
	/* 1e9 instructions/s at 4000 samples/s: 250000 per sample, 16 a tick. */
	u64 p = ctx.ctr[0].period;
	print_message("# freq 4000/s at 1e9 events/s: period %lu after 30 ticks\n", (unsigned long)p);
	assert_true(p > 247500 && p < 252500);
	assert_true(log_.per_idx[0] - before >= 15 && log_.per_idx[0] - before <= 17);
	/* Three times the work: the period follows. */
	for (int t = 0; t < 30; t++)
		model_run(&M, &three, TICK_CYCLES), pmu_tick(&ctx);
	p = ctx.ctr[0].period;
	assert_true(p > 742500 && p < 757500);
	pmu_stop(&ctx);
	assert_true(ctx.stats.retuned > 10);
	assert_int_equal(pmu_read(&ctx, 0), 30 * TICK_CYCLES * 4);
}

/* Throttling on the tick, with frequency mode: a period far too short
 * hits the budget every tick (THROTTLE, then UNTHROTTLE at the tick);
 * the rate measured up to the throttle still re-tunes the period, until
 * no tick throttles any more. */
static void freq_throttle(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a[2] = { ev("instructions/freq=4000/"), ev("cycles") };
	a[0].period = 10;
	open_n(a, 2, PMU_OPEN_NO_FIXED);
	pmu_set_clock_hz(&ctx, MODEL_HZ);
	pmu_set_throttle(&ctx, 100, on_throttle, NULL);
	pmu_start(&ctx);
	model_retire(&M, TICK_CYCLES);
	assert_int_equal(log_.throttle, 1);
	assert_int_equal(log_.per_idx[0], 100);	/* exactly the budget */
	pmu_tick(&ctx);
	assert_int_equal(log_.unthrottle, 1);
	unsigned thr = 0;
	for (int t = 0; t < 40; t++) {
		thr = log_.throttle;
		model_retire(&M, TICK_CYCLES);
		pmu_tick(&ctx);
	}
	assert_int_equal(log_.throttle, thr);		/* the last tick did not throttle */
	assert_int_equal(log_.unthrottle, log_.throttle);
	assert_int_equal(ctx.stats.throttled, log_.throttle);
	print_message("# freq 4000/s from period 10, 100 samples/tick max: %u throttled ticks, "
		      "period %lu\n", log_.throttle, (unsigned long)ctx.ctr[0].period);
	assert_true(ctx.ctr[0].period > 240000 && ctx.ctr[0].period < 260000);
	pmu_stop(&ctx);
	/* The counting event never stopped. */
	assert_int_equal(pmu_read(&ctx, 1), 41 * TICK_CYCLES);
}

/* Throttle and unthrottle on every tick at a fixed period: the budget is
 * exact per tick, and the count of the throttled event stops meanwhile. */
static void throttle_ticks(void **state)
{
	boot(flav(state));
	struct pmu_event_attr a[2] = { ev("instructions/period=100/"), ev("cycles") };
	open_n(a, 2, 0);
	pmu_set_throttle(&ctx, 7, on_throttle, NULL);
	pmu_start(&ctx);
	for (int t = 0; t < 10; t++) {
		model_retire(&M, 10000);
		assert_int_equal(log_.per_idx[0], 7 * (t + 1));
		assert_int_equal(log_.throttle, t + 1);
		pmu_tick(&ctx);
		assert_int_equal(log_.unthrottle, t + 1);
	}
	pmu_stop(&ctx);
	assert_int_equal(pmu_read(&ctx, 0), 10 * 700);
	assert_int_equal(pmu_read(&ctx, 1), 100000);
}

/* ---- Group reads in samples: counts and times of every event ---- */

static struct {
	bool check;
	u64 t0;
	unsigned bad;
} grp;

static void emit_group(struct pmu_ctx *c, int idx, u64 period, void *arg)
{
	(void)arg;
	emit(c, idx, period, arg);
	struct pmu_value v[PMU_MAX_EVENTS];
	for (int i = 0; i < c->n; i++)
		pmu_read_value(c, i, &v[i]);
	u64 now = M.tsc - grp.t0;
	/* The sampler has exactly samples * period; cycles equals the clock;
	 * branches one in two cycles; every event ran all the time. */
	grp.bad += v[0].count != c->ctr[0].samples * period;
	grp.bad += v[1].count != now;
	grp.bad += c->n > 2 && v[2].count != now / 2;
	for (int i = 0; i < c->n; i++)
		grp.bad += v[i].enabled != now || v[i].running != now;
}

static void group_nmi(struct pmu_model *m, void *arg)
{
	(void)m, (void)arg;
	log_.handled += pmu_handle_overflow(&ctx, emit_group, NULL);
}

static void group_read(void **state)
{
	struct model_cycle c = { .n = { [SIG_INSTRUCTIONS] = 1 } };
	struct model_cycle cb = { .n = { [SIG_INSTRUCTIONS] = 1, [SIG_BRANCHES] = 1 } };

	boot(flav(state));
	struct pmu_event_attr a[3] = { ev("instructions/period=1000/"), ev("cycles"), ev("branches") };
	int n = caps.nr_gp >= 3 || caps.fixed_bitmap ? 3 : 2;	/* Intel v1: 2 counters */
	open_n(a, n, 0);
	M.nmi = group_nmi;
	memset(&grp, 0, sizeof(grp));
	pmu_start(&ctx);
	grp.t0 = M.tsc;
	for (int i = 0; i < 5000; i++) {
		model_run(&M, &c, 1);
		model_run(&M, &cb, 1);
	}
	pmu_stop(&ctx);
	assert_int_equal(log_.per_idx[0], 10);
	assert_int_equal(grp.bad, 0);
	struct pmu_value v;
	pmu_read_value(&ctx, n - 1, &v);
	assert_int_equal(v.count, n == 3 ? 5000 : 10000);
	assert_int_equal(v.enabled, 10000);
}

static void mul_div(void **state)
{
	(void)state;
	assert_int_equal(pmu_mul_div(6, 7, 3), 14);
	assert_int_equal(pmu_mul_div(1ull << 62, 1ull << 10, 1ull << 20), 1ull << 52);
	assert_int_equal(pmu_mul_div(~0ull, ~0ull, ~0ull), ~0ull);
	assert_int_equal(pmu_mul_div(~0ull, 2, 1), ~0ull);		/* does not fit */
	assert_int_equal(pmu_mul_div(5, 5, 0), ~0ull);
	assert_int_equal(pmu_mul_div(1000000007ull * 3, 999999937ull, 999999937ull),
			 1000000007ull * 3);
	struct pmu_value v = { 1000, 3000, 1500 };
	assert_int_equal(pmu_scaled(&v), 2000);
	v = (struct pmu_value){ 1000, 3000, 3000 };
	assert_int_equal(pmu_scaled(&v), 1000);
	v = (struct pmu_value){ 0, 3000, 0 };
	assert_int_equal(pmu_scaled(&v), 0);
}

/* ---- The table of scenarios x flavours ---- */

struct scenario {
	const char *name;
	void (*fn)(void **);
	unsigned flavours;		/* bit per enum model_flavour */
};

#define F(x) (1u << (x))
#define ALL_PMU (F(MODEL_INTEL_V1) | F(MODEL_INTEL_V2) | F(MODEL_KVM_V2) | F(MODEL_INTEL_V4) | \
		 F(MODEL_INTEL_V5) | F(MODEL_INTEL_BDW) | F(MODEL_AMD_LEGACY) | F(MODEL_AMD_CORE_EXT) | \
		 F(MODEL_AMD_V2) | F(MODEL_KVM_AMD) | F(MODEL_KVM_AMD_V2))
#define INTEL_GLOBAL (F(MODEL_INTEL_V2) | F(MODEL_KVM_V2) | F(MODEL_INTEL_V4) | F(MODEL_INTEL_V5) | \
		      F(MODEL_INTEL_BDW))
#define GLOBAL_PMU (ALL_PMU & ~(F(MODEL_INTEL_V1) | F(MODEL_AMD_LEGACY) | F(MODEL_AMD_CORE_EXT) | \
		    F(MODEL_KVM_AMD)))

static const struct scenario scenarios[] = {
	{ "probe", probe, ALL_PMU },
	{ "probe_none", probe_none, F(MODEL_TCG_INTEL) | F(MODEL_TCG_AMD) },
	{ "count_exact", count_exact, ALL_PMU },
	{ "count_exact_rdmsr", count_exact_rdmsr, ALL_PMU },
	{ "count_across_overflow", count_across_overflow, ALL_PMU },
	{ "sampling", sampling, ALL_PMU },
	{ "pmi_needs_unmasked_lvt", pmi_needs_unmasked_lvt, ALL_PMU },
	{ "lvt_rearm_needed", lvt_rearm_needed, ALL_PMU },
	{ "spurious_nmi", spurious_nmi, ALL_PMU },
	{ "stuck_pmu", stuck_pmu, GLOBAL_PMU },
	{ "foreign_status", foreign_status, GLOBAL_PMU },
	{ "throttling", throttling, ALL_PMU },
	{ "throttling_by_rate", throttling_by_rate, ALL_PMU },
	{ "period_limits", period_limits, ALL_PMU },
	{ "freeze_on_pmi", freeze_on_pmi, ALL_PMU },
	{ "smm_freeze", smm_freeze, ALL_PMU },
	{ "pmi_ack_point", pmi_ack_point, F(MODEL_INTEL_SNB) | F(MODEL_INTEL_TREMONT) |
	  F(MODEL_INTEL_GRACEMONT) | F(MODEL_INTEL_CWF) | F(MODEL_INTEL_V4) | F(MODEL_INTEL_V5) |
	  F(MODEL_INTEL_BDW) | F(MODEL_KVM_V2) | F(MODEL_AMD_V2) | F(MODEL_KVM_AMD_V2) },
	{ "amd_smi_count", amd_smi_count, ALL_PMU },
	{ "rdpmc_every_index", rdpmc_every_index, F(MODEL_KVM_V2) | F(MODEL_INTEL_V5) },
	{ "hybrid_pcore_counters", hybrid_pcore_counters, F(MODEL_INTEL_ADL_P) | F(MODEL_INTEL_ADL_E) |
	  F(MODEL_KVM_ADL_P) },
	{ "stray_pmi_before_start", stray_pmi_before_start, ALL_PMU },
	{ "firmware_handoff", firmware_handoff, ALL_PMU },
	{ "firmware_owns_all", firmware_owns_all, ALL_PMU },
	{ "min_period", min_period, ALL_PMU },
	{ "status_bits_61_63", status_bits_61_63, INTEL_GLOBAL },
	{ "handler_time", handler_time, ALL_PMU },
	{ "kvm_undercount", kvm_undercount, F(MODEL_KVM_V2) | F(MODEL_KVM_AMD) | F(MODEL_KVM_AMD_V2) },
	{ "assignment", assignment, ALL_PMU },
	{ "too_many_events", too_many_events, ALL_PMU },
	{ "counter_bound", counter_bound, ALL_PMU },
	{ "event_msrs", event_msrs, ALL_PMU | F(MODEL_INTEL_SNB) | F(MODEL_INTEL_ADL_P) |
	  F(MODEL_INTEL_TREMONT) },
	{ "cmask_inv_edge", cmask_inv_edge, ALL_PMU },
	{ "v5_fixed_bitmap", v5_fixed_bitmap, 0 },
	{ "unavailable_events", unavailable_events, 0 },
	{ "narrow_fixed", narrow_fixed, 0 },
	{ "freq_adjust", freq_adjust, 0 },
	{ "multiplex_scaling", multiplex_scaling, ALL_PMU },
	{ "multiplex_pinned", multiplex_pinned, ALL_PMU },
	{ "multiplex_sampling", multiplex_sampling, ALL_PMU },
	{ "multiplex_fixed", multiplex_fixed, GLOBAL_PMU & ~(F(MODEL_AMD_V2) | F(MODEL_KVM_AMD_V2) |
								 F(MODEL_INTEL_V5)) },
	{ "freq_convergence", freq_convergence, ALL_PMU },
	{ "freq_throttle", freq_throttle, ALL_PMU },
	{ "throttle_ticks", throttle_ticks, ALL_PMU },
	{ "group_read", group_read, ALL_PMU },
	{ "mul_div", mul_div, 0 },
	{ "multiplex_fixed_only", multiplex_fixed_only, 0 },
};

int main(void)
{
	static struct CMUnitTest tests[512];
	static char names[512][64];
	size_t n = 0;

	for (size_t s = 0; s < ARRAY_SIZE(scenarios); s++) {
		const struct scenario *sc = &scenarios[s];
		if (!sc->flavours) {
			tests[n] = (struct CMUnitTest){ sc->name, sc->fn, NULL, NULL, NULL };
			n++;
			continue;
		}
		for (int f = 0; f < MODEL_FLAVOURS; f++) {
			if (!(sc->flavours >> f & 1))
				continue;
			snprintf(names[n], sizeof(names[n]), "%s/%s", sc->name, model_preset(f)->name);
			tests[n] = (struct CMUnitTest){ names[n], sc->fn, NULL, NULL,
							(void *)(uintptr_t)f };
			n++;
		}
	}
	return _cmocka_run_group_tests("pmu", tests, n, NULL, NULL);
}
