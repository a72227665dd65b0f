/*
 * core.c — contexts: counter assignment, start/stop, 64-bit virtualized
 * reads, the overflow (PMI) handler body, throttling, frequency re-tuning.
 * Vendor behaviour comes through ctx->ops (intel.c, amd.c).
 *
 * Virtualization (same scheme as Linux's x86_perf_event_update): each
 * counter remembers the raw value last folded (prev_raw); a read takes the
 * new raw value, swaps it in with a cmpxchg, and adds (new - prev) masked to
 * the counter width. A PMI that folds and reloads the counter between a
 * reader's two steps changes prev_raw, so the reader's cmpxchg fails and it
 * retries: no count is lost or added twice. Every counter has INT set and
 * starts at -period (counting: -max_period), so the handler folds it before
 * it could wrap past prev_raw.
 */
#include "pmu/internal.h"

#define FREQ_START_PERIOD	100000	/* first period of a freq-mode event */

static u64 raw_read(struct pmu_ctx *ctx, const struct pmu_counter *c)
{
	u64 v;

	if (ctx->caps->rdpmc_ok && !(ctx->flags & PMU_OPEN_RDMSR))
		v = pmu_hw_rdpmc(c->rdpmc_idx);
	else
		v = pmu_hw_rdmsr(c->ctr_msr);
	return v & pmu_ctr_mask(ctx, c);
}

static u64 fold(struct pmu_ctx *ctx, struct pmu_counter *c)
{
	u64 mask = pmu_ctr_mask(ctx, c), prev, now;

	do {
		prev = __atomic_load_n(&c->prev_raw, __ATOMIC_RELAXED);
		now = raw_read(ctx, c);
	} while (!__atomic_compare_exchange_n(&c->prev_raw, &prev, now, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return __atomic_add_fetch(&c->count, (now - prev) & mask, __ATOMIC_RELAXED);
}

/* Load -period; the next overflow comes after exactly period events. */
static void reload(struct pmu_ctx *ctx, struct pmu_counter *c)
{
	u64 start = (0 - c->period) & pmu_ctr_mask(ctx, c);

	ctx->ops->write_ctr(ctx, c, start);
	__atomic_store_n(&c->prev_raw, start, __ATOMIC_RELAXED);
}

static bool scheduled(const struct pmu_counter *c)
{
	return c->hw != PMU_HW_NONE;
}

/* ---- Helpers for PMUs without global control ---- */

void pmu_gp_program(struct pmu_ctx *ctx, struct pmu_counter *c, bool on)
{
	u64 v = 0;

	if (on)
		v = ctx->caps->has_global ? c->evtsel : c->evtsel & ~EVTSEL_EN;
	pmu_hw_wrmsr(c->sel_msr, v);
}

void pmu_evtsel_enable_all(struct pmu_ctx *ctx)
{
	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		if (scheduled(c) && (ctx->en >> c->bit & 1))
			pmu_hw_wrmsr(c->sel_msr, c->evtsel | EVTSEL_EN);
	}
}

void pmu_evtsel_disable_all(struct pmu_ctx *ctx)
{
	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		if (scheduled(c))
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
		if (!scheduled(c))
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

static void place(struct pmu_ctx *ctx, struct pmu_counter *c, enum pmu_hw hw, u32 idx)
{
	const struct pmu_caps *caps = ctx->caps;

	c->hw = hw;
	c->idx = idx;
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
	ctx->used |= 1ull << c->bit;
}

static int assign(struct pmu_ctx *ctx, struct pmu_counter *c, char *err, size_t errlen)
{
	const struct pmu_caps *caps = ctx->caps;
	const struct pmu_event_attr *a = &c->attr;
	bool pinned = a->flags & PMU_ATTR_PINNED;

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
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < n; i++) {
			struct pmu_counter *c = &ctx->ctr[i];
			if (!!(c->attr.flags & PMU_ATTR_PINNED) != (pass == 0))
				continue;
			int rc = assign(ctx, c, err, errlen);
			if (rc) {
				ctx->n = 0;
				return rc;
			}
		}
	}
	/* A fixed counter may be narrower than the GP ones (CPUID.0AH:EDX). */
	for (int i = 0; i < n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		u64 limit = caps->fixed_mask >> 1;
		if (c->hw != PMU_HW_FIXED || c->period <= limit)
			continue;
		if (c->sampling) {
			pmu_err(err, errlen, "'%s': period %lu exceeds fixed counter %u's %u bits",
				c->attr.name, (unsigned long)c->period, c->idx, caps->fixed_width);
			ctx->n = 0;
			return -E_RANGE;
		}
		c->period = limit;
	}
	ctx->en = ctx->used;
	return 0;
}

/* ---- Start, stop, read ---- */

static void ack_ours(struct pmu_ctx *ctx)
{
	if (ctx->caps->has_global)
		ctx->ops->ack_status(ctx, ctx->used);
}

static void set_freeze(struct pmu_ctx *ctx, bool on)
{
	if (!(ctx->flags & PMU_OPEN_FREEZE) || !ctx->caps->freeze)
		return;
	u64 v = pmu_hw_rdmsr(MSR_IA32_DEBUGCTL);
	v = on ? v | DEBUGCTL_FREEZE_PERFMON_ON_PMI : v & ~DEBUGCTL_FREEZE_PERFMON_ON_PMI;
	pmu_hw_wrmsr(MSR_IA32_DEBUGCTL, v);
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
	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		__atomic_store_n(&c->count, 0, __ATOMIC_RELAXED);
		c->overflows = c->samples = 0;
		if (!scheduled(c))
			continue;
		reload(ctx, c);
		ctx->ops->program(ctx, c, true);
	}
	ack_ours(ctx);
	ctx->en = ctx->used;
	ctx->throttled = 0;
	ctx->tick_samples = 0;
	ctx->dead = 0;
	set_freeze(ctx, true);
	__atomic_store_n(&ctx->running, 1, __ATOMIC_RELEASE);
	ctx->ops->enable_all(ctx);
	return 0;
}

void pmu_stop(struct pmu_ctx *ctx)
{
	if (!ctx->running)
		return;
	ctx->ops->disable_all(ctx);
	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		if (!scheduled(c))
			continue;
		fold(ctx, c);
		ctx->ops->program(ctx, c, false);
	}
	ack_ours(ctx);
	set_freeze(ctx, false);
	__atomic_store_n(&ctx->running, 0, __ATOMIC_RELEASE);
}

u64 pmu_read(struct pmu_ctx *ctx, int idx)
{
	if (idx < 0 || idx >= ctx->n)
		return 0;
	struct pmu_counter *c = &ctx->ctr[idx];
	if (scheduled(c) && __atomic_load_n(&ctx->running, __ATOMIC_ACQUIRE))
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
	for (int i = 0; i < ctx->n; i++)
		if (ctx->ctr[i].sampling && scheduled(&ctx->ctr[i]))
			ctx->en &= ~(1ull << ctx->ctr[i].bit);
	ctx->stats.throttled++;
	if (ctx->throttle_cb)
		ctx->throttle_cb(ctx, PMU_THROTTLE, ctx->throttle_arg);
}

static void handle_counter(struct pmu_ctx *ctx, int i, pmu_emit_fn emit, void *arg)
{
	struct pmu_counter *c = &ctx->ctr[i];

	fold(ctx, c);
	c->overflows++;
	if (c->sampling && !ctx->throttled) {
		c->samples++;
		if (emit)
			emit(ctx, i, c->period, arg);
		if (ctx->max_per_tick && ++ctx->tick_samples >= ctx->max_per_tick)
			throttle(ctx);
	}
	reload(ctx, c);
}

int pmu_handle_overflow(struct pmu_ctx *ctx, pmu_emit_fn emit, void *arg)
{
	const struct pmu_ops *ops = ctx->ops;
	int handled = 0;

	ctx->stats.pmi++;
	if (!ops || !__atomic_load_n(&ctx->running, __ATOMIC_ACQUIRE)) {
		ctx->stats.spurious++;
		return 0;
	}
	ops->disable_all(ctx);
	for (int pass = 0;; pass++) {
		u64 status = ops->get_status(ctx);
		if (!status)
			break;
		if (pass == PMU_OVF_LOOPS) {
			/* Status that will not clear: stop rather than loop in NMI
			 * context forever (Linux resets the PMU after 100 passes). */
			ops->ack_status(ctx, status);
			ctx->stats.stuck++;
			ctx->dead = 1;
			break;
		}
		/* Acknowledge first: an overflow that happens while we handle
		 * this one sets its bit again and is seen on the next pass. */
		ops->ack_status(ctx, status);
		if (status & ~ctx->used & ~(GLOBAL_STATUS_CTR_FRZ | GLOBAL_STATUS_LBR_FRZ))
			ctx->stats.unknown_status++;
		for (int i = 0; i < ctx->n; i++) {
			struct pmu_counter *c = &ctx->ctr[i];
			if (scheduled(c) && (status >> c->bit & 1)) {
				handle_counter(ctx, i, emit, arg);
				handled++;
			}
		}
	}
	/* The APIC set the LVT PC mask when it delivered the PMI (Intel):
	 * unmask it, or no further PMI arrives. Done even when nothing was
	 * found, since this NMI may have been a PMI whose overflow an earlier
	 * pass already handled. */
	if (ops->lvt_masked_on_pmi) {
		pmu_lvtpc_write(LVT_DELIVERY_NMI);
		ctx->stats.lvt_rearm++;
	}
	if (!ctx->dead)
		ops->enable_all(ctx);
	if (handled)
		ctx->stats.handled++;
	else
		ctx->stats.spurious++;
	return handled;
}

/* ---- Throttling and frequency mode ---- */

void pmu_set_throttle(struct pmu_ctx *ctx, u32 max_per_tick, pmu_throttle_fn cb, void *arg)
{
	ctx->max_per_tick = max_per_tick;
	ctx->throttle_cb = cb;
	ctx->throttle_arg = arg;
}

void pmu_tick(struct pmu_ctx *ctx)
{
	ctx->tick_samples = 0;
	if (!ctx->throttled || !ctx->running || ctx->dead)
		return;
	ctx->ops->disable_all(ctx);
	for (int i = 0; i < ctx->n; i++) {
		struct pmu_counter *c = &ctx->ctr[i];
		if (c->sampling && scheduled(c)) {
			fold(ctx, c);
			reload(ctx, c);
		}
	}
	ctx->throttled = 0;
	ctx->en = ctx->used;
	ctx->stats.unthrottled++;
	if (ctx->throttle_cb)
		ctx->throttle_cb(ctx, PMU_UNTHROTTLE, ctx->throttle_arg);
	ctx->ops->enable_all(ctx);
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
