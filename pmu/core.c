/*
 * core.c — contexts: counter assignment, start/stop, 64-bit virtualized
 * reads, the overflow (PMI) handler body, throttling, frequency re-tuning.
 * Vendor behaviour comes through ctx->ops (intel.c, amd.c); the global
 * registers, the same on both vendors but for their MSRs, are here.
 *
 * Virtualization (same scheme as Linux's x86_perf_event_update): each
 * counter remembers the raw value last folded (prev_raw); a read takes the
 * new raw value, swaps it in with a cmpxchg, and adds (new - prev) masked to
 * the counter width. A PMI that folds and reloads the counter between a
 * reader's two steps changes prev_raw, so the reader's cmpxchg fails and it
 * retries: no count is lost or added twice. Every counter has INT set and
 * starts at -period (counting: -max_period), so the handler folds it before
 * it could wrap past prev_raw.
 *
 * Multiplexing follows perfmon2's event sets: pmu_open packs the events
 * that do not fit into further sets, pmu_tick switches sets round-robin,
 * and every event keeps time_enabled/time_running so a count can be
 * scaled to the whole run. Against the PMI (an NMI, which nothing can
 * hold off) the tick uses two things: ctx->active, the events whose
 * counter the handler and readers may touch (cleared before an event
 * leaves its counter, set once it is on one), and ctx->paused, which
 * makes a handler that runs meanwhile leave the PMU disabled for the tick
 * to re-enable (Linux: active_mask in x86_pmu_handle_irq, and the
 * cpuc->enabled test before the handler re-enables).
 */
#include "pmu/internal.h"

#define FREQ_START_PERIOD	100000	/* first period of a freq-mode event */

/* The counter's raw value, masked to its width: mask is c->mask. */
static inline u64 raw_read_masked(struct pmu_ctx *ctx, const struct pmu_counter *c, u64 mask)
{
	u64 v;

	if (ctx->rdpmc)
		v = pmu_hw_rdpmc(c->rdpmc_idx);
	else
		v = pmu_hw_rdmsr(c->ctr_msr);
	return v & mask;
}

static inline u64 raw_read(struct pmu_ctx *ctx, const struct pmu_counter *c)
{
	return raw_read_masked(ctx, c, c->mask);
}

static u64 fold(struct pmu_ctx *ctx, struct pmu_counter *c)
{
	u64 mask = c->mask, prev, now;

	do {
		prev = __atomic_load_n(&c->prev_raw, __ATOMIC_RELAXED);
		now = raw_read(ctx, c);
	} while (!__atomic_compare_exchange_n(&c->prev_raw, &prev, now, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return __atomic_add_fetch(&c->count, (now - prev) & mask, __ATOMIC_RELAXED);
}

static bool scheduled(const struct pmu_counter *c)
{
	return c->hw != PMU_HW_NONE;
}

static bool is_active(const struct pmu_ctx *ctx, int i)
{
	return __atomic_load_n(&ctx->active, __ATOMIC_RELAXED) >> i & 1;
}

/* The tick and the NMI handler run on the same CPU: ordering the compiler
 * is all it takes (a signal fence), the CPU sees its own program order. */
static void set_active(struct pmu_ctx *ctx, int i, bool on)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (on)
		__atomic_or_fetch(&ctx->active, 1u << i, __ATOMIC_RELAXED);
	else
		__atomic_and_fetch(&ctx->active, ~(1u << i), __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/*
 * ---- Global control (Intel v2+, AMD PerfMonV2) ----
 *
 * One MSR each, caps give which: GLOBAL_CTRL gates every counter (SDM
 * 21.2.2; AMD PerfCntrGlobalCtl), GLOBAL_STATUS has a bit per overflow
 * (read-only), and 1s written to the ack register clear them (Intel
 * GLOBAL_OVF_CTRL, v4 GLOBAL_STATUS_RESET, which also clears CTR_FRZ and
 * so unfreezes the counters; AMD PerfCntrGlobalStatusClr). The vendor
 * tables use them as their hooks; the PMI handler makes the same
 * accesses inline, without a call through the table.
 */
static inline void global_enable(struct pmu_ctx *ctx)
{
	pmu_hw_wrmsr(ctx->caps->global_ctrl, ctx->en);
}

static inline void global_disable(struct pmu_ctx *ctx)
{
	pmu_hw_wrmsr(ctx->caps->global_ctrl, 0);
}

static inline u64 global_status(struct pmu_ctx *ctx)
{
	return pmu_hw_rdmsr(ctx->caps->global_status);
}

static inline void global_ack(struct pmu_ctx *ctx, u64 status)
{
	pmu_hw_wrmsr(ctx->caps->global_ack, status);
}

void pmu_global_enable_all(struct pmu_ctx *ctx)
{
	global_enable(ctx);
}

void pmu_global_disable_all(struct pmu_ctx *ctx)
{
	global_disable(ctx);
}

u64 pmu_global_status(struct pmu_ctx *ctx)
{
	return global_status(ctx);
}

void pmu_global_ack(struct pmu_ctx *ctx, u64 status)
{
	global_ack(ctx, status);
}

/* ---- Helpers for PMUs without global control ---- */

void pmu_gp_program(struct pmu_ctx *ctx, struct pmu_counter *c, bool on)
{
	u64 v = 0;

	if (on)
		v = ctx->caps->has_global ? c->evtsel : c->evtsel & ~EVTSEL_EN;
	pmu_hw_wrmsr(c->sel_msr, v);
}

/* Active events only: an event the tick is moving has no counter yet. */
void pmu_evtsel_enable_all(struct pmu_ctx *ctx)
{
	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		if (is_active(ctx, i) && (ctx->en >> c->bit & 1))
			pmu_hw_wrmsr(c->sel_msr, c->evtsel | EVTSEL_EN);
	}
}

void pmu_evtsel_disable_all(struct pmu_ctx *ctx)
{
	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		if (is_active(ctx, i))
			pmu_hw_wrmsr(c->sel_msr, c->evtsel & ~EVTSEL_EN);
	}
}

/*
 * No status register: a counter loaded with -period has its top bit set
 * until it wraps through zero, so a clear top bit means "overflowed"
 * (Linux amd_pmu_test_overflow_topbit; hence max_period < 2^(width-1)).
 */
u64 pmu_topbit_status(struct pmu_ctx *ctx)
{
	u64 status = 0;

	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		if (!is_active(ctx, i))
			continue;
		u64 top = 1ull << (ctx->caps->gp_width - 1);
		if (!(pmu_hw_rdmsr(c->ctr_msr) & top))
			status |= 1ull << c->bit;
	}
	return status;
}

void pmu_no_ack(struct pmu_ctx *ctx, u64 status)
{
	(void)ctx;
	(void)status;
}

/* ---- Opening: counter assignment ---- */

static const char *owner(const struct pmu_ctx *ctx, u32 bit)
{
	for (int i = 0; i < ctx->n; i++)
		if (scheduled(&ctx->ctr[i]) && ctx->ctr[i].bit == bit)
			return ctx->ctr[i].attr.name;
	return "?";
}

/* The largest period counter c can reload with. */
static u64 ctr_limit(const struct pmu_ctx *ctx, const struct pmu_counter *c)
{
	u64 max = ctx->caps->max_period;

	return c->hw == PMU_HW_FIXED ? MIN(max, ctx->caps->fixed_mask >> 1) : max;
}

/*
 * Where c's reloads are written. SDM 21.2.6: a WRMSR to IA32_PMCx writes
 * EAX[31:0] sign-extended to the counter width, so -period survives only
 * for period < 2^31 (max_period says so); IA32_A_PMCx
 * (PERF_CAPABILITIES.FW_WRITE) takes the full width. Fixed counters, and
 * AMD's 48-bit counters, take the full width directly.
 */
static void load_reg(const struct pmu_ctx *ctx, struct pmu_counter *c)
{
	const struct pmu_caps *caps = ctx->caps;

	c->load_msr = c->ctr_msr;
	c->load_mask = ~0ull;
	if (caps->intel && c->hw == PMU_HW_GP) {
		if (caps->fw_write)
			c->load_msr = caps->gp_fw_base + c->idx;
		else
			c->load_mask = 0xffffffffull;
	}
}

/*
 * The periods the hardware can take for c (hw_period): never below 2 (a
 * counter one event from overflow loses its PMI on some CPUs: Linux's
 * x86_perf_event_set_period), and on Broadwell INST_RETIRED.ALL (c0/01)
 * at least 128 with bits 5:0 clear (BDM11, BDM55: Linux
 * bdw_limit_period).
 */
static void period_limits(const struct pmu_ctx *ctx, struct pmu_counter *c)
{
	c->min_period = 2;
	c->period_align = ~0ull;
	if (ctx->caps->limit_inst_retired && c->hw == PMU_HW_GP &&
	    (c->evtsel & (EVTSEL_EVENT | EVTSEL_UMASK)) == 0x01c0) {
		c->min_period = 128;
		c->period_align = ~0x3full;
	}
}

/* The period n as the hardware can take it for c: period_limits'. */
static inline u64 hw_period(const struct pmu_counter *c, u64 n)
{
	return (n < c->min_period ? c->min_period : n) & c->period_align;
}

static void place(struct pmu_ctx *ctx, struct pmu_counter *c, enum pmu_hw hw, u32 idx)
{
	const struct pmu_caps *caps = ctx->caps;

	c->hw = hw;
	c->idx = idx;
	c->mask = hw == PMU_HW_FIXED ? caps->fixed_mask : caps->gp_mask;
	if (hw == PMU_HW_FIXED) {
		c->bit = PMU_FIXED_BIT(idx);
		c->ctr_msr = MSR_IA32_FIXED_CTR0 + idx;
		c->rdpmc_idx = RDPMC_FIXED | idx;
		ctx->fixed_ctrl |= (FIXED_CTRL_OS | FIXED_CTRL_USR | FIXED_CTRL_PMI)
				   << FIXED_CTRL_SHIFT(idx);
	} else {
		c->bit = idx;
		c->sel_msr = caps->gp_sel_base + idx * caps->stride;
		c->ctr_msr = caps->gp_ctr_base + idx * caps->stride;
		c->rdpmc_idx = idx;
		/* OS and USR: the kernel and its apps share one address space. */
		c->evtsel = c->attr.config | EVTSEL_OS | EVTSEL_USR | EVTSEL_INT | EVTSEL_EN;
	}
	load_reg(ctx, c);
	period_limits(ctx, c);
	/* Counting events reload with the largest period the counter takes; a
	 * fixed counter may be narrower than the GP ones (CPUID.0AH:EDX). */
	if (!c->sampling)
		c->period = ctr_limit(ctx, c);
	c->reload_period = hw_period(c, c->period);
	ctx->used |= 1ull << c->bit;
}

/* An event bound to one counter (PMU_ATTR_COUNTER): that one, or an error. */
static int assign_counter(struct pmu_ctx *ctx, struct pmu_counter *c, char *err, size_t errlen)
{
	const struct pmu_caps *caps = ctx->caps;
	const struct pmu_event_attr *a = &c->attr;
	bool fixed = a->counter >= PMU_COUNTER_FIXED;
	u32 idx = fixed ? a->counter - PMU_COUNTER_FIXED : a->counter;

	if (fixed && (!caps->intel || idx >= 32 || !(caps->fixed_bitmap >> idx & 1))) {
		pmu_err(err, errlen, "'%s' asks for fixed counter %u, which this CPU lacks",
			a->name, idx);
		return -E_NODEV;
	}
	if (fixed && (ctx->flags & PMU_OPEN_NO_FIXED)) {
		pmu_err(err, errlen, "'%s' asks for fixed counter %u, but GP counters only were "
			"asked for", a->name, idx);
		return -E_BUSY;
	}
	/* A fixed counter counts its own event whatever the selection says. */
	if (fixed && a->fixed >= 0 && (u32)a->fixed != idx) {
		pmu_err(err, errlen, "'%s' counts on fixed counter %d, not on fixed counter %u",
			a->name, a->fixed, idx);
		return -E_INVAL;
	}
	if (!fixed && idx >= caps->nr_gp) {
		pmu_err(err, errlen, "'%s' asks for GP counter %u; this CPU has %u (0 to %u)",
			a->name, idx, caps->nr_gp, caps->nr_gp - 1);
		return -E_NODEV;
	}
	u32 bit = fixed ? PMU_FIXED_BIT(idx) : idx;
	if (ctx->used >> bit & 1) {
		pmu_err(err, errlen, "'%s' asks for %s counter %u, already taken by '%s'", a->name,
			fixed ? "fixed" : "GP", idx, owner(ctx, bit));
		return -E_BUSY;
	}
	place(ctx, c, fixed ? PMU_HW_FIXED : PMU_HW_GP, idx);
	return 0;
}

static int assign(struct pmu_ctx *ctx, struct pmu_counter *c, char *err, size_t errlen)
{
	const struct pmu_caps *caps = ctx->caps;
	const struct pmu_event_attr *a = &c->attr;
	bool pinned = a->flags & PMU_ATTR_PINNED;

	if (a->flags & PMU_ATTR_COUNTER)
		return assign_counter(ctx, c, err, errlen);
	if (a->fixed >= 0 && caps->intel && !(ctx->flags & PMU_OPEN_NO_FIXED) &&
	    (caps->fixed_bitmap >> a->fixed & 1) &&
	    !(ctx->used >> PMU_FIXED_BIT(a->fixed) & 1)) {
		place(ctx, c, PMU_HW_FIXED, (u32)a->fixed);
		return 0;
	}
	if (a->flags & PMU_ATTR_FIXED_ONLY) {
		if (a->fixed < 0 || !(caps->fixed_bitmap >> a->fixed & 1))
			pmu_err(err, errlen, "'%s' counts only on fixed counter %d, which this CPU lacks",
				a->name, a->fixed);
		else if (ctx->flags & PMU_OPEN_NO_FIXED)
			pmu_err(err, errlen, "'%s' counts only on fixed counter %d, but GP counters only "
				"were asked for", a->name, a->fixed);
		else
			pmu_err(err, errlen, "'%s' counts only on fixed counter %d, already taken by '%s'",
				a->name, a->fixed, owner(ctx, PMU_FIXED_BIT(a->fixed)));
		return -E_BUSY;
	}
	for (u32 i = 0; i < caps->nr_gp; i++) {
		if (!(ctx->used >> i & 1)) {
			place(ctx, c, PMU_HW_GP, i);
			return 0;
		}
	}
	if (pinned) {
		pmu_err(err, errlen, "too many pinned events: '%s' finds all %u GP counters taken "
			"(the CPU has %u GP and %u fixed counters)", a->name, caps->nr_gp,
			caps->nr_gp, pmu_popcount(caps->fixed_bitmap));
		return -E_BUSY;
	}
	if (ctx->flags & PMU_OPEN_MULTIPLEX)
		return 0;		/* left unscheduled: hw = PMU_HW_NONE */
	pmu_err(err, errlen, "'%s' does not fit: all %u GP counters are in use; more events than "
		"counters need multiplexing (PMU_OPEN_MULTIPLEX)", a->name, caps->nr_gp);
	return -E_BUSY;
}

/* A sampling period the counter it landed on cannot hold is an error. */
static int check_width(struct pmu_ctx *ctx, struct pmu_counter *c, char *err, size_t errlen)
{
	if (c->sampling && c->hw == PMU_HW_FIXED && c->period > ctr_limit(ctx, c)) {
		pmu_err(err, errlen, "'%s': period %lu exceeds fixed counter %u's %u bits",
			c->attr.name, (unsigned long)c->period, c->idx, ctx->caps->fixed_width);
		return -E_RANGE;
	}
	return 0;
}

static bool fixed_held_by_unpinned(const struct pmu_ctx *ctx, const struct pmu_counter *c)
{
	const struct pmu_caps *caps = ctx->caps;
	s32 f = c->attr.fixed;

	return (c->attr.flags & PMU_ATTR_FIXED_ONLY) && f >= 0 && (caps->fixed_bitmap >> f & 1) &&
	       !(ctx->flags & PMU_OPEN_NO_FIXED) && !(ctx->pinned_used >> PMU_FIXED_BIT(f) & 1);
}

/*
 * Pack the non-pinned events into event sets: each set starts from the
 * counters the pinned events leave and takes, in order, every remaining
 * event that fits (perfmon2's sets, filled greedily). Without
 * PMU_OPEN_MULTIPLEX an event that does not fit is an error (assign says
 * so), so there is one set. Events that fit in no set stay PMU_SET_NEVER.
 */
static int make_sets(struct pmu_ctx *ctx, char *err, size_t errlen)
{
	u32 todo = 0;

	for (int i = 0; i < ctx->n; i++) {
		if (ctx->ctr[i].set == PMU_SET_PINNED)
			continue;
		ctx->ctr[i].set = PMU_SET_NEVER;
		todo |= 1u << i;
	}
	ctx->nsets = 0;
	while (todo && ctx->nsets < PMU_MAX_EVENTS) {
		u32 placed = 0;

		ctx->used = ctx->pinned_used;
		ctx->fixed_ctrl = ctx->pinned_fixed_ctrl;
		for (int i = 0; i < ctx->n; i++) {
			struct pmu_counter *c = &ctx->ctr[i];
			if (!(todo >> i & 1))
				continue;
			c->hw = PMU_HW_NONE;
			int rc = assign(ctx, c, err, errlen);
			if (rc) {
				/* A fixed-only event whose counter another
				 * event of this set took: a later set. */
				if (!(ctx->flags & PMU_OPEN_MULTIPLEX) || !fixed_held_by_unpinned(ctx, c))
					return rc;
				if (err && errlen)
					err[0] = 0;
				continue;
			}
			if (!scheduled(c))
				continue;
			rc = check_width(ctx, c, err, errlen);
			if (rc)
				return rc;
			c->set = (s32)ctx->nsets;
			placed |= 1u << i;
		}
		if (!placed)
			break;
		todo &= ~placed;
		ctx->nsets++;
	}
	if (!ctx->nsets)
		ctx->nsets = 1;
	return 0;
}

/* Put set s's events on counters (placement only: no hardware). The same
 * greedy order as make_sets, so each event gets the counter it got there. */
static void load_set(struct pmu_ctx *ctx, u32 s)
{
	ctx->used = ctx->pinned_used;
	ctx->fixed_ctrl = ctx->pinned_fixed_ctrl;
	for (int i = 0; i < ctx->n; i++)
		if (ctx->ctr[i].set != PMU_SET_PINNED)
			ctx->ctr[i].hw = PMU_HW_NONE;
	for (int i = 0; i < ctx->n; i++)
		if (ctx->ctr[i].set == (s32)s)
			(void)assign(ctx, &ctx->ctr[i], NULL, 0);	/* fit at open: cannot fail */
	ctx->cur_set = s;
}

int pmu_open(struct pmu_ctx *ctx, const struct pmu_caps *caps,
	     const struct pmu_event_attr *attrs, int n, unsigned flags,
	     char *err, size_t errlen)
{
	memset(ctx, 0, sizeof(*ctx));
	if (err && errlen)
		err[0] = 0;
	if (!caps || caps->kind == PMU_KIND_NONE) {
		pmu_err(err, errlen, "no hardware PMU (%s)", caps ? caps->none_reason : "not probed");
		return -E_NODEV;
	}
	if (n < 1 || n > PMU_MAX_EVENTS) {
		pmu_err(err, errlen, "%d events: a context holds 1 to %d", n, PMU_MAX_EVENTS);
		return -E_INVAL;
	}
	ctx->caps = caps;
	ctx->ops = pmu_ops_for(caps);
	ctx->flags = flags;
	ctx->n = n;
	ctx->rdpmc = caps->rdpmc_ok && !(flags & PMU_OPEN_RDMSR);
	ctx->status_drop = caps->intel ? GLOBAL_STATUS_UNC_OVF | GLOBAL_STATUS_OVF_BUF |
					 GLOBAL_STATUS_COND_CHGD : 0;

	for (int i = 0; i < n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		const struct pmu_event_attr *a = &attrs[i];

		c->attr = *a;
		c->attr.name[PMU_NAME_MAX - 1] = 0;
		if (a->flags & PMU_ATTR_SAMPLE) {
			if (a->flags & PMU_ATTR_FREQ) {
				if (!a->freq) {
					pmu_err(err, errlen, "'%s': frequency 0", a->name);
					return -E_INVAL;
				}
				c->period = a->period ? a->period : MIN((u64)FREQ_START_PERIOD,
									caps->max_period);
			} else {
				if (!a->period) {
					pmu_err(err, errlen, "'%s': sampling period 0", a->name);
					return -E_INVAL;
				}
				c->period = a->period;
			}
			if (c->period > caps->max_period) {
				pmu_err(err, errlen, "'%s': period %lu exceeds the largest reload, %lu%s",
					a->name, (unsigned long)c->period, (unsigned long)caps->max_period,
					caps->intel && !caps->fw_write ?
					" (no full-width writes: legacy writes take 31 bits)" : "");
				return -E_RANGE;
			}
			c->sampling = true;
		} else {
			c->period = caps->max_period;
		}
	}
	/* Pinned events choose first, so a non-pinned one cannot starve them. */
	for (int i = 0; i < n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		if (!(c->attr.flags & PMU_ATTR_PINNED))
			continue;
		c->set = PMU_SET_PINNED;
		int rc = assign(ctx, c, err, errlen);
		if (!rc)
			rc = check_width(ctx, c, err, errlen);
		if (rc) {
			ctx->n = 0;
			return rc;
		}
	}
	ctx->pinned_used = ctx->used;
	ctx->pinned_fixed_ctrl = ctx->fixed_ctrl;
	int rc = make_sets(ctx, err, errlen);
	if (rc) {
		ctx->n = 0;
		return rc;
	}
	load_set(ctx, 0);
	ctx->en = ctx->used;
	return 0;
}

/* ---- Start, stop, read ---- */

static void ack_ours(struct pmu_ctx *ctx)
{
	if (ctx->caps->has_global)
		ctx->ops->ack_status(ctx, ctx->used);
}

/*
 * DEBUGCTL: FREEZE_PERFMON_ON_PMI while running where asked for, and
 * FREEZE_WHILE_SMM always (as Linux's freeze_on_smi, but on by default:
 * SMM time is firmware's, never the measured code's). The SMM freeze is
 * left on at stop. Neither is written where the probe's safe write failed:
 * KVM #GPs on both.
 */
static void set_freeze(struct pmu_ctx *ctx, bool on)
{
	u64 set = 0, clear = 0;

	if ((ctx->flags & PMU_OPEN_FREEZE) && ctx->caps->freeze)
		*(on ? &set : &clear) |= DEBUGCTL_FREEZE_PERFMON_ON_PMI;
	if (on && ctx->caps->freeze_smm)
		set |= DEBUGCTL_FREEZE_WHILE_SMM;
	if (!set && !clear)
		return;
	u64 v = pmu_hw_rdmsr(MSR_IA32_DEBUGCTL);
	u64 want = (v | set) & ~clear;
	if (want != v)
		pmu_hw_wrmsr(MSR_IA32_DEBUGCTL, want);
}

/* Write raw (already masked to the width) into c's counter. */
static inline void write_ctr(const struct pmu_counter *c, u64 raw)
{
	pmu_hw_wrmsr(c->load_msr, raw & c->load_mask);
}

/* Load -n; the next overflow comes after exactly n events (n as the
 * hardware can take it, hw_period). Returns the n loaded. */
static u64 load(struct pmu_counter *c, u64 n)
{
	n = hw_period(c, n);
	u64 start = (0 - n) & c->mask;

	write_ctr(c, start);
	__atomic_store_n(&c->prev_raw, start, __ATOMIC_RELAXED);
	return n;
}

/*
 * A new period: frequency mode may have re-tuned it since the last one.
 * over = events the counter took past its overflow before the handler
 * folded it (time passes in the NMI): they are counted, and the next
 * period is shortened by as many, so samples keep one per period on
 * average (Linux's period_left does the same). The sample reports the
 * period as the hardware takes it.
 */
static void reload(struct pmu_counter *c, u64 over)
{
	u64 p = __atomic_load_n(&c->reload_period, __ATOMIC_RELAXED);

	c->last_period = p;
	(void)load(c, over < p ? p - over : p);
}

/* Put event i, placed on its counter, to work (PMU disabled). */
static void sched_in(struct pmu_ctx *ctx, int i, u64 now)
{
	struct pmu_counter *c = &ctx->ctr[i];

	/* Sampling: the rest of the period it was switched out in, unless
	 * frequency mode has shortened the period below that meanwhile. */
	if (c->sampling && c->left && c->left <= c->period)
		(void)load(c, c->left);
	else
		reload(c, 0);
	c->left = 0;
	ctx->ops->program(ctx, c, true);
	c->t_in = now;
	set_active(ctx, i, true);
}

/*
 * Take event i off its counter (PMU disabled). Time first, then the
 * active bit, then the last fold, so a reader in an NMI sees the running
 * time without a gap and no fold can follow ours. A sampling event keeps
 * what remains of its period; one that overflowed without its PMI being
 * handled yet loses that sample (counted in missed), never its count.
 * Returns its status bit.
 */
static u64 sched_out(struct pmu_ctx *ctx, int i, u64 now)
{
	struct pmu_counter *c = &ctx->ctr[i];
	u64 mask = c->mask, top = mask ^ (mask >> 1);

	c->t_running += now - c->t_in;
	c->t_in = now;
	set_active(ctx, i, false);
	fold(ctx, c);
	if (c->sampling) {
		u64 raw = __atomic_load_n(&c->prev_raw, __ATOMIC_RELAXED);
		if (raw & top) {
			c->left = (0 - raw) & mask;
		} else {
			c->left = 0;
			c->missed++;
			ctx->stats.missed++;
		}
	}
	ctx->ops->program(ctx, c, false);
	return 1ull << c->bit;
}

/*
 * AMD Zen counts SMIs with an event (PMCx02B), not an MSR: while running,
 * a context whose events leave the last GP counter free (and that needs
 * no multiplexing, so no event set takes it later) keeps PMCx02B there
 * for pmu_smi_count. No INT: it never takes part in overflow handling.
 */
static void smi_counter(struct pmu_ctx *ctx, bool on)
{
	const struct pmu_caps *caps = ctx->caps;
	u32 last = caps->nr_gp - 1;
	u32 sel = caps->gp_sel_base + last * caps->stride;

	if (!on) {
		if (ctx->smi_bit)
			pmu_hw_wrmsr(sel, 0);
		ctx->smi_bit = 0;
		return;
	}
	if (!caps->amd || !caps->smi_count || ctx->nsets > 1 ||
	    ((ctx->used | caps->fw_owned) >> last & 1))
		return;
	pmu_hw_wrmsr(caps->gp_ctr_base + last * caps->stride, 0);
	pmu_hw_wrmsr(sel, AMD_EVENT_LS_SMI_RX | EVTSEL_OS | EVTSEL_USR | EVTSEL_EN);
	ctx->smi_bit = 1ull << last;
}

int pmu_start(struct pmu_ctx *ctx)
{
	if (!ctx->ops || !ctx->n)
		return -E_INVAL;
	if (ctx->running)
		return -E_BUSY;
	/* GLOBAL_CTRL comes out of reset with the GP enables set (SDM 21.2.2;
	 * KVM emulates that): gate everything off before programming. */
	ctx->ops->disable_all(ctx);
	if (ctx->cur_set)
		load_set(ctx, 0);
	u64 now = pmu_hw_rdtsc();
	ctx->t_start = now;
	ctx->t_stop = 0;
	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		__atomic_store_n(&c->count, 0, __ATOMIC_RELAXED);
		c->overflows = c->samples = c->missed = 0;
		c->left = c->t_running = c->freq_count = c->freq_time = 0;
		c->t_in = now;
		if (scheduled(c))
			sched_in(ctx, i, now);
	}
	/* Without a global gate a counter someone else enabled (firmware,
	 * which may also re-enable it from SMM) would keep raising PMIs
	 * through the run: switch off every counter that is not ours. */
	if (!ctx->caps->has_global)
		for (u32 i = 0; i < ctx->caps->nr_gp; i++)
			if (!(ctx->used >> i & 1))
				pmu_hw_wrmsr(ctx->caps->gp_sel_base + i * ctx->caps->stride, 0);
	smi_counter(ctx, true);
	ack_ours(ctx);
	ctx->en = ctx->used | ctx->smi_bit;
	ctx->throttled = 0;
	ctx->tick_samples = 0;
	ctx->tick_start = now;
	ctx->dead = 0;
	ctx->paused = 0;
	set_freeze(ctx, true);
	__atomic_store_n(&ctx->running, 1, __ATOMIC_RELEASE);
	ctx->ops->enable_all(ctx);
	/* A stray PMI before this point (one that found the context not
	 * running) may have left LVT PC masked: arm it now. */
	pmu_lvtpc_write(LVT_DELIVERY_NMI);
	return 0;
}

void pmu_stop(struct pmu_ctx *ctx)
{
	if (!ctx->running)
		return;
	ctx->ops->disable_all(ctx);
	u64 now = pmu_hw_rdtsc();
	for (int i = 0; i < ctx->n; i++)
		if (is_active(ctx, i))
			sched_out(ctx, i, now);
	ack_ours(ctx);
	smi_counter(ctx, false);
	set_freeze(ctx, false);
	ctx->t_stop = now;
	__atomic_store_n(&ctx->running, 0, __ATOMIC_RELEASE);
}

u64 pmu_read(struct pmu_ctx *ctx, int idx)
{
	if (idx < 0 || idx >= ctx->n)
		return 0;
	struct pmu_counter *c = &ctx->ctr[idx];
	if (is_active(ctx, idx) && __atomic_load_n(&ctx->running, __ATOMIC_ACQUIRE))
		return fold(ctx, c);
	return __atomic_load_n(&c->count, __ATOMIC_RELAXED);
}

int pmu_read_group(struct pmu_ctx *ctx, u64 *counts, int n)
{
	n = MIN(n, ctx->n);
	for (int i = 0; i < n; i++)
		counts[i] = pmu_read(ctx, i);
	return n;
}

void pmu_read_value(struct pmu_ctx *ctx, int idx, struct pmu_value *v)
{
	v->count = v->enabled = v->running = 0;
	if (idx < 0 || idx >= ctx->n)
		return;
	const struct pmu_counter *c = &ctx->ctr[idx];
	bool on = __atomic_load_n(&ctx->running, __ATOMIC_ACQUIRE);
	u64 now = on ? pmu_hw_rdtsc() : ctx->t_stop;
	/* Times before the count: an NMI reading between the two sees at most
	 * the events of its own few instructions more than the time says. */
	u64 run = c->t_running + (on && is_active(ctx, idx) ? now - c->t_in : 0);

	v->enabled = now - ctx->t_start;
	v->running = MIN(run, v->enabled);
	v->count = pmu_read(ctx, idx);
}

u64 pmu_mul_div(u64 a, u64 b, u64 c)
{
	unsigned __int128 p = (unsigned __int128)a * b;
	u64 hi = (u64)(p >> 64), lo = (u64)p, q, r;

	if (!c || hi >= c)
		return ~0ull;
	/* 128 by 64 bits in one divq (SDM Vol. 2A DIV): the kernel links no
	 * libgcc for __udivti3; hi < c keeps the quotient in 64 bits. */
	asm("divq %4" : "=a"(q), "=d"(r) : "a"(lo), "d"(hi), "rm"(c));
	(void)r;
	return q;
}

u64 pmu_scaled(const struct pmu_value *v)
{
	if (!v->running)
		return 0;
	if (v->running >= v->enabled)
		return v->count;
	return pmu_mul_div(v->count, v->enabled, v->running);
}

s64 pmu_rdpmc_index(const struct pmu_ctx *ctx, int idx)
{
	if (idx < 0 || idx >= ctx->n || !scheduled(&ctx->ctr[idx]))
		return -1;
	return ctx->ctr[idx].rdpmc_idx;
}

/* ---- The PMI handler body ---- */

static void throttle(struct pmu_ctx *ctx)
{
	ctx->throttled = 1;
	ctx->throttle_time = pmu_hw_rdtsc();
	for (int i = 0; i < ctx->n; i++)
		if (ctx->ctr[i].sampling && is_active(ctx, i))
			ctx->en &= ~(1ull << ctx->ctr[i].bit);
	ctx->stats.throttled++;
	if (ctx->throttle_cb)
		ctx->throttle_cb(ctx, PMU_THROTTLE, ctx->throttle_arg);
}

/* The tick's budget is spent: throttle, unless it took a whole tick period
 * or more (the tick has not come), which is no rate above the limit. */
static void budget_spent(struct pmu_ctx *ctx)
{
	u64 now = pmu_hw_rdtsc();

	if (ctx->throttle_window && now - ctx->tick_start >= ctx->throttle_window) {
		ctx->tick_start = now;
		ctx->tick_samples = 0;
		return;
	}
	throttle(ctx);
}

/*
 * Fold an overflowed counter. No reader can be between its two steps on
 * this CPU while the handler runs (an NMI interrupts them, not the other
 * way round), so the swap needs no retry; a reader the NMI interrupted
 * finds prev_raw changed and retries.
 */
static void fold_in_nmi(struct pmu_ctx *ctx, struct pmu_counter *c, u64 mask)
{
	u64 prev = __atomic_load_n(&c->prev_raw, __ATOMIC_RELAXED);
	u64 now = raw_read_masked(ctx, c, mask);

	__atomic_store_n(&c->prev_raw, now, __ATOMIC_RELAXED);
	__atomic_add_fetch(&c->count, (now - prev) & mask, __ATOMIC_RELAXED);
}

/* One overflowed counter: fold, sample, reload. Out of line: the pass
 * loop that calls it keeps fewer values live across emit. */
static __attribute__((noinline)) void handle_counter(struct pmu_ctx *ctx, int i,
						    struct pmu_counter *c, pmu_emit_fn emit,
						    void *arg)
{
	u64 mask = c->mask;

	fold_in_nmi(ctx, c, mask);
	c->overflows++;
	if (c->sampling && !ctx->throttled) {
		c->samples++;
		if (emit)
			emit(ctx, i, c->last_period, arg);
		if (ctx->max_per_tick && ++ctx->tick_samples >= ctx->max_per_tick)
			budget_spent(ctx);
	}
	/* The raw value last folded (emit may have read the counter again):
	 * past zero, it is the overshoot. Without one the period is loaded
	 * as it is, hw_period's already. */
	u64 raw = __atomic_load_n(&c->prev_raw, __ATOMIC_RELAXED);
	u64 over = raw & (mask ^ (mask >> 1)) ? 0 : raw;
	u64 p = __atomic_load_n(&c->reload_period, __ATOMIC_RELAXED);
	u64 start = (0 - (over ? hw_period(c, over < p ? p - over : p) : p)) & mask;

	c->last_period = p;
	write_ctr(c, start);
	__atomic_store_n(&c->prev_raw, start, __ATOMIC_RELAXED);
}

/* Each active event whose counter's bit is set in status; the count. */
static inline __attribute__((always_inline)) int handle_status(struct pmu_ctx *ctx, u64 status,
								pmu_emit_fn emit, void *arg)
{
	int handled = 0;

	for (u32 m = __atomic_load_n(&ctx->active, __ATOMIC_RELAXED); m; m &= m - 1) {
		int i = __builtin_ctz(m);
		struct pmu_counter *c = &ctx->ctr[i];
		if (status >> c->bit & 1) {
			handle_counter(ctx, i, c, emit, arg);
			handled++;
		}
	}
	return handled;
}

/* LVT PC back to NMI, unmasked. Intel's local APIC masks it on each PMI
 * it delivers (SDM Vol. 3A 11.5.1); AMD's does not, but KVM hosts from
 * a16eb25b09c0 until the fix that limits the mask to Intel guests mask it
 * for AMD guests too. Rewriting it costs one APIC write, so every vendor
 * does it. */
static void lvt_rearm(struct pmu_ctx *ctx)
{
	pmu_lvtpc_write(LVT_DELIVERY_NMI);
	ctx->stats.lvt_rearm++;
}

/* The handler's register steps: inline where the PMU has global
 * registers, through the flavour's hooks where it has not. */
static inline void pmi_disable_all(struct pmu_ctx *ctx, bool global)
{
	if (global)
		global_disable(ctx);
	else
		ctx->ops->disable_all(ctx);
}

static inline void pmi_enable_all(struct pmu_ctx *ctx, bool global)
{
	if (global)
		global_enable(ctx);
	else
		ctx->ops->enable_all(ctx);
}

static inline u64 pmi_status(struct pmu_ctx *ctx, bool global)
{
	return global ? global_status(ctx) : ctx->ops->get_status(ctx);
}

static inline void pmi_ack(struct pmu_ctx *ctx, bool global, u64 status)
{
	if (global)
		global_ack(ctx, status);
	else
		ctx->ops->ack_status(ctx, status);
}

/* Not running: still a PMI may have masked LVT PC, and the run about to
 * start needs it armed. */
static __attribute__((noinline)) int pmi_not_running(struct pmu_ctx *ctx)
{
	if (ctx->ops)
		lvt_rearm(ctx);
	ctx->stats.spurious++;
	return 0;
}

/* Status that will not clear: stop rather than loop in NMI context
 * forever (Linux resets the PMU after 100 passes). */
static __attribute__((noinline)) void pmi_stuck(struct pmu_ctx *ctx, bool global, u64 status)
{
	pmi_ack(ctx, global, status);
	ctx->stats.stuck++;
	ctx->dead = 1;
}

/* The handler for a running context; global: the PMU has global
 * registers (a constant at each call, so each flavour gets its own
 * copy, the global one without calls through the table). */
static inline __attribute__((always_inline)) int handle_overflow(struct pmu_ctx *ctx,
								 pmu_emit_fn emit, void *arg,
								 const bool global)
{
	int handled = 0;

	/* Only this context's bits are ours to handle and acknowledge: others
	 * (Intel PT's ToPA PMI, bit 55, pmu/trace/pt.c) belong to other NMI
	 * handlers, which must still see them set. Intel's bits 61-63
	 * (uncore overflow, DS buffer, CondChgd: status_drop) belong to no
	 * one here and are acknowledged with ours, as Linux's
	 * intel_pmu_handle_irq does, after being counted as unknown. */
	const enum pmu_lvt_ack lvt_ack = ctx->caps->lvt_ack;
	const u64 mine = ctx->used | GLOBAL_STATUS_CTR_FRZ | GLOBAL_STATUS_LBR_FRZ;
	pmi_disable_all(ctx, global);
	if (lvt_ack == PMU_ACK_EARLY)
		lvt_rearm(ctx);
	u64 all = pmi_status(ctx, global);
	if (all & ~mine & ~GLOBAL_STATUS_TRACE_TOPA_PMI)
		ctx->stats.unknown_status++;
	for (int pass = 0;; pass++, all = pmi_status(ctx, global)) {
		u64 status = all & mine;
		if (all & ctx->status_drop)
			pmi_ack(ctx, global, all & ctx->status_drop);
		if (!status)
			break;
		if (pass == PMU_OVF_LOOPS) {
			pmi_stuck(ctx, global, status);
			break;
		}
		/* Acknowledge first: an overflow that happens while we handle
		 * this one sets its bit again and is seen on the next pass. */
		pmi_ack(ctx, global, status);
		/* Only active events: one the tick is taking off its counter
		 * is the tick's to fold. */
		handled += handle_status(ctx, status, emit, arg);
	}
	/* Re-arm LVT PC on every exit, even when nothing was found: this NMI
	 * may have been a PMI whose overflow an earlier pass already handled.
	 * Where the core wants it (enum pmu_lvt_ack): on entry, above; before
	 * re-enabling; or after (an unmask while the counters are off raises
	 * a spurious PMI on Haswell and later big cores). */
	if (lvt_ack == PMU_ACK_MID)
		lvt_rearm(ctx);
	/* Paused: the tick we interrupted re-enables when it is done. */
	if (!ctx->dead && !__atomic_load_n(&ctx->paused, __ATOMIC_RELAXED))
		pmi_enable_all(ctx, global);
	if (lvt_ack == PMU_ACK_LATE)
		lvt_rearm(ctx);
	if (handled)
		ctx->stats.handled++;
	else
		ctx->stats.spurious++;
	return handled;
}

int pmu_handle_overflow(struct pmu_ctx *ctx, pmu_emit_fn emit, void *arg)
{
	ctx->stats.pmi++;
	if (!ctx->ops || !__atomic_load_n(&ctx->running, __ATOMIC_ACQUIRE))
		return pmi_not_running(ctx);
	if (ctx->caps->has_global)
		return handle_overflow(ctx, emit, arg, true);
	return handle_overflow(ctx, emit, arg, false);
}

/* ---- The tick: throttling, frequency mode, multiplexing ---- */

void pmu_set_throttle(struct pmu_ctx *ctx, u32 max_per_tick, pmu_throttle_fn cb, void *arg)
{
	ctx->max_per_tick = max_per_tick;
	ctx->throttle_cb = cb;
	ctx->throttle_arg = arg;
}

void pmu_set_throttle_window(struct pmu_ctx *ctx, u64 window)
{
	ctx->throttle_window = window;
}

void pmu_set_clock_hz(struct pmu_ctx *ctx, u64 hz)
{
	ctx->clock_hz = hz;
}

static void pause_pmu(struct pmu_ctx *ctx)
{
	__atomic_add_fetch(&ctx->paused, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ctx->ops->disable_all(ctx);
}

static void resume_pmu(struct pmu_ctx *ctx)
{
	u64 en = ctx->used | ctx->smi_bit;

	if (ctx->throttled)
		for (int i = 0; i < ctx->n; i++)
			if (ctx->ctr[i].sampling && is_active(ctx, i))
				en &= ~(1ull << ctx->ctr[i].bit);
	ctx->en = en;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_sub_fetch(&ctx->paused, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (!ctx->dead)
		ctx->ops->enable_all(ctx);
}

/* Switch to event set s (PMU paused). */
static void switch_set(struct pmu_ctx *ctx, u32 s, u64 now)
{
	u64 out = 0;

	for (int i = 0; i < ctx->n; i++)
		if (ctx->ctr[i].set != PMU_SET_PINNED && is_active(ctx, i))
			out |= sched_out(ctx, i, now);
	/* An overflow of an event just taken off must not be blamed on the
	 * next event on its counter. */
	if (out && ctx->caps->has_global)
		ctx->ops->ack_status(ctx, out);
	load_set(ctx, s);
	for (int i = 0; i < ctx->n; i++)
		if (ctx->ctr[i].set == (s32)s && scheduled(&ctx->ctr[i]))
			sched_in(ctx, i, now);
	ctx->stats.rotations++;
}

/*
 * Frequency mode (perf_adjust_freq_unthr_context): the events counted
 * since the last tick over the time the event ran give its rate; the
 * period that turns that rate into freq samples/s is rate / freq.
 * pmu_freq_adjust takes rates in samples/s; both the observed one
 * (rate / period) and the target are passed multiplied by the period, so
 * a fraction of a sample still counts. A throttled event stopped counting
 * at throttle_time: that part of the interval is left out.
 */
static void freq_tick(struct pmu_ctx *ctx, u64 now)
{
	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		if (!c->sampling || !(c->attr.flags & PMU_ATTR_FREQ) || !is_active(ctx, i))
			continue;
		u64 count = fold(ctx, c), run = c->t_running + (now - c->t_in);
		u64 dc = count - c->freq_count, dt = run - c->freq_time;
		c->freq_count = count;
		c->freq_time = run;
		if (ctx->throttled) {
			u64 off = now - ctx->throttle_time;
			dt = dt > off ? dt - off : 0;
		}
		if (!dc || !dt || !ctx->clock_hz || !c->attr.freq)
			continue;
		u64 rate = pmu_mul_div(dc, ctx->clock_hz, dt);		/* events/s */
		u64 p = __atomic_load_n(&c->period, __ATOMIC_RELAXED), t = c->attr.freq;
		while (t > ~0ull / p) {
			t >>= 1;
			rate >>= 1;
		}
		if (!rate || !t)
			continue;
		u64 next = pmu_freq_adjust(p, rate, t * p, ctr_limit(ctx, c));
		if (next != p) {
			__atomic_store_n(&c->period, next, __ATOMIC_RELAXED);
			__atomic_store_n(&c->reload_period, hw_period(c, next), __ATOMIC_RELAXED);
			ctx->stats.retuned++;
		}
	}
}

void pmu_tick(struct pmu_ctx *ctx)
{
	ctx->tick_samples = 0;
	ctx->tick_start = pmu_hw_rdtsc();
	if (!__atomic_load_n(&ctx->running, __ATOMIC_ACQUIRE) || ctx->dead)
		return;
	u64 now = pmu_hw_rdtsc();
	freq_tick(ctx, now);
	bool unthrottle = ctx->throttled;
	if (!unthrottle && ctx->nsets < 2)
		return;
	pause_pmu(ctx);
	if (unthrottle) {
		/* Throttled events restart from a whole period. */
		for (int i = 0; i < ctx->n; i++) {
			struct pmu_counter *c = &ctx->ctr[i];
			if (c->sampling && is_active(ctx, i)) {
				fold(ctx, c);
				reload(c, 0);
			}
		}
		ctx->throttled = 0;
		ctx->stats.unthrottled++;
		if (ctx->throttle_cb)
			ctx->throttle_cb(ctx, PMU_UNTHROTTLE, ctx->throttle_arg);
	}
	if (ctx->nsets > 1)
		switch_set(ctx, (ctx->cur_set + 1) % ctx->nsets, now);
	resume_pmu(ctx);
}

u64 pmu_freq_adjust(u64 period, u64 observed_rate, u64 target_rate, u64 max_period)
{
	u64 ideal;

	if (!max_period)
		return 0;
	if (!period)
		period = 1;
	if (!target_rate)
		return MIN(period, max_period);
	if (!observed_rate) {
		/* No sample in the interval: the period is far too long. */
		ideal = period / 2;
	} else {
		/* ideal = period * observed / target without 128-bit division
		 * (the kernel has no libgcc): drop low bits of both rates. */
		u64 o = observed_rate, t = target_rate;
		while (period > ~0ull / o) {
			o >>= 1;
			t >>= 1;
			if (!o)
				o = 1;
			if (!t)
				return max_period;
		}
		ideal = period * o / t;
	}
	/* Half way: damps the oscillation of a noisy rate. */
	u64 next = ideal >= period ? period + (ideal - period) / 2 : period - (period - ideal) / 2;
	if (next < 1)
		next = 1;
	return MIN(next, max_period);
}
