/*
 * profile.c — a run: every CPU's ring and PMU context
 * opened and started, the run tick, the window closed when the app
 * returns, every CPU's stop records, and the window of the app's main on
 * its CPU. The paths that feed the rings:
 *
 *   hardware PMU   PMI (LVT PC, NMI) -> pmu_handle_overflow -> a SAMPLE
 *                  (sample.c)
 *   soft PMU       HPET comparator -> IOAPIC -> NMI on CPU 0 -> a sample
 *                  there, and an NMI IPI to every other CPU in the run, each
 *                  of which samples itself ("cpu-clock", period in ns);
 *                  every expiry is a tick due on every CPU, and a TICKS
 *                  record per CPU says how each one ended (sample, ring
 *                  full, or LOST_SAMPLES)
 *   run tick       APIC timer (VEC_APIC_TIMER) on every CPU of the run at
 *                  PROFILE_TICK_HZ -> the run's handler (apps/run.c) ->
 *                  profile_tick: pmu_tick (frequency mode, unthrottling,
 *                  event-set rotation), the tracer's restart
 *   counting       hardware events in the same PMU context (multiplexed
 *                  when they do not fit), soft ones (tsc, cpu-clock,
 *                  task-clock) from the TSC; a COUNTS record per CPU at stop
 *
 * Everything on the NMI path touches only this CPU's ring and counters;
 * the tick touches only this CPU's context, with interrupts off.
 */
#include "kernel/kernel.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/trap.h"
#include "pmu/pmu.h"
#include "profile/profile_internal.h"
#include "profile/trace.h"
#include "ringbuf/ringbuf.h"
#include <uapi/perf_ring.h>

static struct pmu_ctx probe_ctx;	/* profile_start's dry run of pmu_open */

struct bp_ring *profile_ring(u32 cpu)
{
	return cpu < prof.ncpus && prof.cpus[cpu].mem ? &prof.cpus[cpu].ring : NULL;
}

u64 profile_samples(u32 cpu)
{
	return cpu < prof.ncpus ? prof.cpus[cpu].samples : 0;
}

u64 profile_ticks(u32 cpu)
{
	return cpu < prof.ncpus ? prof.cpus[cpu].ticks : 0;
}

u32 profile_app_id(void)
{
	return __atomic_load_n(&prof.active, __ATOMIC_ACQUIRE) ? (u32)prof.run_id : 0;
}

/* Samples the PMU could not take at an event-set switch: said, not lost
 * silently. */
static void report_missed(struct cpu_prof *cp)
{
	u64 missed = cp->pmu.stats.missed;

	if (missed == cp->missed_reported)
		return;
	prof_write_lost_samples(cp, missed - cp->missed_reported);
	cp->missed_reported = missed;
}

/* This CPU's run tick: the PMU's rotation, frequency and unthrottling. */
static void tick_cpu(void)
{
	struct percpu *pc = this_cpu();

	if (!__atomic_load_n(&prof.active, __ATOMIC_ACQUIRE) || pc->cpu >= prof.ncpus)
		return;
	struct cpu_prof *cp = &prof.cpus[pc->cpu];
	if (!cp->ticking)
		return;			/* pending when the timer was stopped */
	cp->ticks++;
	if (cp->pmu_on) {
		pmu_tick(&cp->pmu);
		report_missed(cp);
	}
}

bool profile_tick(struct trap_frame *f)
{
	if (!__atomic_load_n(&prof.active, __ATOMIC_ACQUIRE) || this_cpu()->cpu >= prof.ncpus)
		return false;
	if (prof.soft_lapic) {
		struct cpu_prof *me = &prof.cpus[this_cpu()->cpu];
		prof_soft_sample(f, 0);	/* no HPET: ticks due are not known (TICKS period 0) */
		if (++me->soft_lapic_n < prof.soft_per_tick)
			return false;
		me->soft_lapic_n = 0;
	}
	tick_cpu();
	trace_tick();			/* restart Intel PT after a full area */
	return true;
}

bool profile_app_running(u32 cpu)
{
	return cpu < prof.ncpus && __atomic_load_n(&prof.cpus[cpu].app_running, __ATOMIC_RELAXED);
}

/* The run tick for a caller of profile_start that brings no handler. */
static void tick_only(struct trap_frame *f)
{
	apic_eoi();
	profile_tick(f);
}

static unsigned open_flags(void)
{
	/* A group goes on the counters whole: no multiplexing inside it. */
	return prof.cfg.sample_type & BP_SAMPLE_READ ? 0 : PMU_OPEN_MULTIPLEX;
}

static bool irq_save(void)
{
	bool on = read_rflags() & RFLAGS_IF;

	irq_disable();
	return on;
}

static void irq_restore(bool on)
{
	if (on)
		irq_enable();
}

struct start_args {
	const char *app;
	int err;
};

/* On each CPU: its records, its PMU context started, its tick. */
static void start_cpu(void *arg)
{
	struct start_args *a = arg;
	u32 cpu = this_cpu()->cpu;
	struct cpu_prof *cp = &prof.cpus[cpu];
	char err[120];

	if (cpu >= prof.ncpus)
		return;
	cp->irq_was = read_rflags() & RFLAGS_IF;
	prof_write_cpu_records(&cp->ring, cpu);
	trace_cpu_attach(&cp->ring, prof.run_id);	/* this CPU's trace buffer */
	if (prof.hw_n) {
		/* This CPU's own caps: an E-core must not touch a counter
		 * only the P-cores have. */
		if (pmu_open(&cp->pmu, pmu_cpu_caps(cpu), prof.hw_attrs, prof.hw_n, open_flags(), err,
			     sizeof(err))) {
			kprintf("profile: cpu %u: %s\n", cpu, err);
			a->err = -E_INVAL;
			return;
		}
		pmu_set_throttle(&cp->pmu, prof.max_per_tick, prof_throttled, NULL);
		pmu_set_throttle_window(&cp->pmu, prof.throttle_window);
		pmu_set_clock_hz(&cp->pmu, tsc_hz);
		apic_lvtpc_set_nmi();
		cp->pmu_on = true;
	}
	irq_disable();
	cp->t_start = rdtsc_ordered();
	prof_app_record(a->app, cp->t_start, true, 0);
	if (cp->pmu_on)
		pmu_start(&cp->pmu);
	if (apic_timer_hz()) {
		cp->ticking = true;
		cp->soft_lapic_n = 0;
		apic_timer_periodic(prof.soft_lapic ? MAX(apic_timer_hz() * prof.soft_period_ns / 1000000000, 1ul)
				    : apic_timer_hz() / PROFILE_TICK_HZ);
	}
	/* The tick needs interrupts on for the whole run, also on the boot
	 * CPU, which otherwise runs with them off; stop_cpu puts them back. */
	irq_enable();
}

static void stop_cpu(void *arg)
{
	u32 cpu = this_cpu()->cpu;
	struct cpu_prof *cp = &prof.cpus[cpu];

	if (cpu >= prof.ncpus)
		return;
	/* No sample on this CPU from here: a tick's NMI still on its way
	 * would land after the account below. */
	__atomic_store_n(&cp->stopped, 1, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	irq_disable();
	if (cp->ticking) {
		apic_timer_stop();
		cp->ticking = false;
	}
	if (cp->pmu_on) {
		pmu_stop(&cp->pmu);
		report_missed(cp);
	}
	/* The run's window ends where sampling closed: when the app returned,
	 * not after the drain that followed. */
	cp->t_stop = prof.close_tsc;
	if (prof.cfg.ncount) {
		prof_final_counts(cp);
		prof_write_counts(cp, cpu);
	}
	if (prof.soft)
		prof_write_ticks(cp, cpu);
	prof_app_record(NULL, prof.close_tsc, false, *(int *)arg);
	trace_cpu_detach();
	irq_restore(cp->irq_was);
}

int profile_start(const struct profile_cfg *c, const struct profile_app *app,
		  void (*tick)(struct trap_frame *f), char *err, size_t n)
{
	struct start_args args = { app ? app->name : NULL, 0 };

	prof.cfg = *c;
	prof.quiesced = false;
	/* Instruction tracing (profile/trace.c): the AUX area it needs. */
	u32 aux_pages = trace_run_prepare(&c->trace);
	if (!c->nevents && !c->ncount && !aux_pages)
		return 0;
	prof.soft = c->soft;
	prof.app_name = app ? app->name : NULL;
	prof.app_main = app ? app->main : NULL;
	prof.app_cpu1 = app && app->on_cpu ? app->cpu + 1 : 0;
	prof.app_text0 = app ? app->text_start : 0;
	prof.app_text1 = app ? app->text_end : 0;
	prof.app_record = app ? app->record : NULL;
	prof.ncpus = MIN(smp_cpus(), (u32)MAX_CPUS_PROF);
	prof.hw_n = 0;
	for (int i = 0; i < prof_events_total(); i++) {
		prof.hw_idx[i] = -1;
		if (prof.cfg.soft_ev[i] != PROFILE_HW)
			continue;
		prof.hw_idx[i] = prof.hw_n;
		prof.hw_cfg[prof.hw_n] = i;
		prof.hw_attrs[prof.hw_n++] = prof.cfg.attrs[i];
	}
	/* pmu_open touches no hardware: find a bad set of events here, with
	 * its reason, rather than on every CPU. */
	int e = prof.hw_n ? pmu_open(&probe_ctx, &pmu_boot_caps, prof.hw_attrs, prof.hw_n,
				     open_flags(), err, n) : 0;
	if (e) {
		if (e == -E_BUSY && (prof.cfg.sample_type & BP_SAMPLE_READ)) {
			char why[160];
			strlcpy(why, err, sizeof(why));
			ksnprintf(err, n, "events= with count= is one group, read in every sample; "
				  "its PMU events must fit the counters together: %s", why);
		}
		return e;
	}
	/* perf: max_samples_per_tick = DIV_ROUND_UP(max_sample_rate, HZ).
	 * The soft PMU measures the rate itself (prof_soft_sample); a PMU context
	 * is unthrottled by the run tick: without one, no limit. */
	prof.max_per_tick = c->max_rate && (c->soft || apic_timer_hz()) ?
		       (c->max_rate + PROFILE_TICK_HZ - 1) / PROFILE_TICK_HZ : 0;
	prof.throttle_window = tsc_hz / PROFILE_TICK_HZ;
	prof.close_tsc = prof.close_hpet = prof.close_due = prof.final_due = 0;
	prof.soft_posted = prof.soft_hpet_period = 0;
	prof.soft_started = false;
	if (!apic_timer_hz())
		kprintf("profile: no APIC timer rate: no run tick (no multiplexing, frequency "
			"re-tuning or throttling)\n");
	prof.run_id++;
	trap_set_handler(VEC_APIC_TIMER, tick ? tick : tick_only);
	for (u32 i = 0; i < prof.ncpus; i++) {
		struct cpu_prof *cp = &prof.cpus[i];
		if (!cp->mem || cp->mem_pages != c->ring_pages || cp->aux_pages != aux_pages) {
			if (cp->mem)
				pmm_free(virt_to_phys(cp->mem), 1 + cp->mem_pages + cp->aux_pages);
			u64 pa = pmm_alloc(1 + c->ring_pages + aux_pages);
			if (!pa) {
				ksnprintf(err, n, "no memory for a %u-page ring%s on cpu %u",
					  c->ring_pages, aux_pages ? " and its AUX area" : "", i);
				cp->mem = NULL;
				return -E_NOMEM;
			}
			cp->mem = (void *)pa;
			cp->mem_pages = c->ring_pages;
			cp->aux_pages = aux_pages;
		}
		struct bp_ring_config rc = { .id = i };
		e = bp_ring_init(&cp->ring, cp->mem, (1 + c->ring_pages) * PAGE_SIZE, &rc);
		if (!e && aux_pages)
			e = bp_ring_aux_init(&cp->ring, (1 + c->ring_pages) * PAGE_SIZE,
					     aux_pages * PAGE_SIZE, 0, 0);
		if (e) {
			ksnprintf(err, n, "ring on cpu %u: %s", i, bp_ring_strerror(e));
			return -E_INVAL;
		}
		cp->samples = cp->dropped = cp->soft_merged = cp->ticks = cp->missed_reported = 0;
		cp->samples_dropped = cp->soft_seen = cp->soft_last = cp->soft_throttled_ticks = 0;
		cp->soft_pending = cp->thr_start = cp->thr_samples = cp->soft_throttled = 0;
		cp->stopped = cp->app_running = 0;
		cp->pmu_on = cp->ticking = cp->app_here = false;
		cp->app_t0 = cp->app_t1 = cp->t_start = cp->t_stop = 0;
	}
	/* No HPET (many recent PCs disable it), no PMU: cpu-clock on the APIC
	 * timer, which cannot see code with interrupts off (said in the
	 * run's metadata and the summary). */
	prof.soft_lapic = prof.soft && !hpet_hz() && apic_timer_hz();
	if (prof.soft_lapic) {
		prof.soft_period_ns = prof.cfg.attrs[0].period;
		prof.soft_per_tick = MAX(1000000000 / PROFILE_TICK_HZ / prof.soft_period_ns, 1ul);
	}
	prof_took_start();
	prof_write_meta(&prof.cpus[0].ring);
	__atomic_store_n(&prof.active, true, __ATOMIC_RELEASE);
	smp_call_all(start_cpu, &args);
	if (args.err) {
		ksnprintf(err, n, "could not start the PMU on every CPU");
		profile_stop(EXIT_FAIL);
		return args.err;
	}
	if (prof.soft && !prof.soft_lapic) {
		u64 ticks = 0;
		prof.soft_period_ns = prof.cfg.attrs[0].period;
		e = !hpet_hz() ? -E_NODEV : profile_hpet_ticks(prof.soft_period_ns, &ticks) ? 0 : -E_RANGE;
		if (!e) {
			prof.soft_hpet_period = ticks;
			e = hpet_nmi_start(ticks, apic_id(), prof_soft_tick, NULL);
		}
		prof.soft_started = !e;
		if (e) {
			ksnprintf(err, n, "soft PMU: %s", e == -E_NODEV ?
				  "no HPET comparator can deliver NMIs here" : e == -E_INVAL ?
				  "the IOAPIC cannot send the HPET's NMI to this CPU (APIC id "
				  "above 255)" : "the period is out of the HPET's range");
			profile_stop(EXIT_FAIL);
			return e;
		}
	}
	return 0;
}

/*
 * Close the sampling window: the soft PMU's ticks due are those the HPET
 * main counter has passed by now, and no sample is taken for a later tick
 * (nor any PMU sample). The counter is read before the close is
 * published, so a tick that expires in between may still be sampled on a
 * CPU that has not seen the close yet: profile_stop extends the window to
 * it (final_due), which keeps the count exact either way. The close's
 * time, APP_STOP's, is read last: every tick due, raced or not, lies
 * before it, even when the vCPU stalls in between. Once per run; returns
 * the close's time, or now if the window had closed.
 */
static u64 close_window(void)
{
	if (__atomic_load_n(&prof.quiesced, __ATOMIC_ACQUIRE))
		return rdtsc_ordered();
	if (prof.soft_started) {
		prof.close_hpet = hpet_read();
		prof.close_due = hpet_nmi_expiries(prof.close_hpet);
	}
	__atomic_store_n(&prof.quiesced, true, __ATOMIC_RELEASE);
	prof.close_tsc = rdtsc_ordered();
	return prof.close_tsc;
}

void profile_quiesce(void)
{
	if (prof.active)
		close_window();
}

static void settle(void *arg)
{
	(void)arg;
}

void profile_stop(int status)
{
	if (!prof.active)
		return;
	close_window();
	if (prof.soft_started) {
		hpet_nmi_stop();
		/* Every CPU runs settle only once it has left the NMI it may
		 * have been in, and took the tick IPI that was pending (an NMI
		 * goes before the call's interrupt): after it, no sample is on
		 * its way. */
		smp_call_all(settle, NULL);
		prof.final_due = prof.close_due;
		for (u32 i = 0; i < prof.ncpus; i++)
			prof.final_due = MAX(prof.final_due, prof.cpus[i].soft_last);
	}
	smp_call_all(stop_cpu, &status);
	__atomic_store_n(&prof.active, false, __ATOMIC_RELEASE);
}

bool profile_window(u32 cpu, u64 *start, u64 *stop)
{
	if (cpu >= prof.ncpus || !prof.cpus[cpu].t_start)
		return false;
	*start = prof.cpus[cpu].t_start;
	*stop = prof.cpus[cpu].t_stop;
	return true;
}

void profile_app_enter(void)
{
	u32 cpu = this_cpu_id();

	if (prof.active && cpu < prof.ncpus)
		__atomic_store_n(&prof.cpus[cpu].app_running, 1, __ATOMIC_RELAXED);
	if (!prof.active || cpu >= prof.ncpus || !prof.cfg.ncount) {
		trace_app_enter(prof.app_main);	/* tracing starts at main */
		return;
	}
	struct cpu_prof *cp = &prof.cpus[cpu];
	bool irq = irq_save();
	u64 now = rdtsc_ordered();
	for (int j = 0; j < prof.cfg.ncount; j++)
		prof_event_value(cp, prof.cfg.nevents + j, now, &cp->app_base[j]);
	cp->app_here = true;
	cp->app_t0 = rdtsc_ordered();		/* the window starts here */
	irq_restore(irq);
	trace_app_enter(prof.app_main);		/* last, so tracing starts at main */
}

void profile_app_exit(void)
{
	/* ... and ends here, where the run's window closes: APP_STOP's time */
	u64 t1 = prof.active ? close_window() : rdtsc_ordered();
	u32 cpu = this_cpu_id();

	if (prof.active && cpu < prof.ncpus)
		__atomic_store_n(&prof.cpus[cpu].app_running, 0, __ATOMIC_RELAXED);
	if (!prof.active || cpu >= prof.ncpus || !prof.cpus[cpu].app_here) {
		trace_app_exit();
		return;
	}
	struct cpu_prof *cp = &prof.cpus[cpu];
	bool irq = irq_save();
	cp->app_t1 = t1;
	for (int j = 0; j < prof.cfg.ncount; j++)
		prof_event_value(cp, prof.cfg.nevents + j, t1, &cp->app_end[j]);
	irq_restore(irq);
	trace_app_exit();
}

bool profile_active(void)
{
	return prof.active;
}

const struct profile_cfg *profile_config(void)
{
	return &prof.cfg;
}

u32 profile_cpus(void)
{
	return prof.ncpus;
}

u64 profile_soft_ticks(void)
{
	return prof.soft_ticks;
}

u64 profile_soft_merged(u32 cpu)
{
	return cpu < prof.ncpus ? prof.cpus[cpu].soft_merged : 0;
}
