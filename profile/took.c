/*
 * took.c — the soft PMU's rate bounded by what its samples take while the
 * run goes on. The boot's figure (profile_init, sample.c) is the fastest
 * of a few hot-cache self-NMIs: the run's own samples are longer (cold
 * caches, deeper call chains, on CPU 0 the comparator write and the IPI to
 * the other CPUs). Linux keeps a running average of its sampling NMIs'
 * lengths and lowers the highest sample rate once that average, at that
 * rate, would take more than perf_cpu_time_max_percent of a CPU
 * (perf_sample_event_took). The same here, per run:
 *
 *   - each sample's length, from prof_soft_sample's entry to the end of
 *     its SAMPLE, is averaged per CPU over about TOOK_AVG samples, with a
 *     sample longer than TOOK_SPIKE times the average counted at that (a
 *     vCPU preempted inside one sample is not the handler's cost; a
 *     lasting change still moves the average within a few hundred);
 *   - the whole handler is that average plus what the boot measured
 *     around it (NMI entry and exit, the HPET accesses): prof_floor.rest;
 *   - where that, times the samples a run tick may take, passes
 *     CPU_TIME_MAX_PERCENT of the tick, the samples per tick
 *     (prof.max_per_tick) are lowered to what fits. prof_soft_sample's
 *     throttle then skips the ticks beyond it, writes THROTTLE and
 *     UNTHROTTLE records and counts those ticks in TICKS' throttled.
 *
 * The limit is only lowered, within a run; the next run starts again from
 * its settings.
 */
#include "kernel/kernel.h"
#include "profile/profile_internal.h"

/* The average's limit, fixed point, where at most n samples a tick
 * are taken: ~0 where nothing lower than n could be asked. */
static u64 limit_for(u64 n)
{
	u64 each = prof.took_budget / n;

	if (n <= 1)
		return ~0ul;
	return each > prof_floor.rest_ticks ? (each - prof_floor.rest_ticks) << TOOK_SHIFT : 0;
}

void prof_took_start(void)
{
	u64 tick_ns = HPET_NS_PER_S / PROFILE_TICK_HZ, period = prof.cfg.attrs[0].period;
	u64 per_tick = period ? (tick_ns + period - 1) / period : 1;

	prof.took_budget = prof.throttle_window * CPU_TIME_MAX_PERCENT / 100;
	prof.took_lowered = 0;
	prof.took_max_was = prof.max_per_tick;
	if (prof.max_per_tick)
		per_tick = MIN(per_tick, (u64)prof.max_per_tick);
	prof.took_limit = prof.soft && prof.took_budget ? limit_for(per_tick) : ~0ul;
	for (u32 i = 0; i < prof.ncpus; i++)
		prof.cpus[i].took = MAX(prof_floor.sample_ticks, 1ul) << TOOK_SHIFT;
}

/* The average passed its limit (prof_soft_took, profile_internal.h):
 * fewer samples a tick, as many as fit. */
void prof_took_lower(struct cpu_prof *cp)
{
	u64 took = prof_floor.rest_ticks + (cp->took >> TOOK_SHIFT);
	u32 n = MAX(prof.took_budget / took, 1ul);
	u32 cur = __atomic_load_n(&prof.max_per_tick, __ATOMIC_RELAXED);

	while (!cur || n < cur)
		if (__atomic_compare_exchange_n(&prof.max_per_tick, &cur, n, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			__atomic_add_fetch(&prof.took_lowered, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&prof.took_when, took, __ATOMIC_RELAXED);
			cur = n;
			break;
		}
	__atomic_store_n(&prof.took_limit, limit_for(cur), __ATOMIC_RELAXED);
}

void prof_took_summary(void)
{
	u64 throttled = 0;

	if (!prof.took_lowered)
		return;
	for (u32 i = 0; i < prof.ncpus; i++)
		throttled += prof.cpus[i].soft_throttled_ticks;
	kprintf("profile: a sample took %lu ns (its average, NMI entry to exit), over %d%% "
		"of a CPU at this rate: lowered to %u samples a tick (%lu/s); %lu ticks "
		"throttled%s\n", tsc_to_ns(prof.took_when), CPU_TIME_MAX_PERCENT,
		prof.max_per_tick, (u64)prof.max_per_tick * PROFILE_TICK_HZ, throttled,
		prof.took_max_was ? " (with max_rate's)" : "");
}
