/*
 * profile.c — a run: per-CPU perf-ABI rings (ringbuf/), the metadata that
 * makes a capture self-describing, the NMI paths that write SAMPLE
 * records, the per-CPU run tick, and the COUNTS of counting events:
 *
 *   hardware PMU   PMI (LVT PC, NMI) -> pmu_handle_overflow -> emit_sample
 *   soft PMU       HPET comparator -> IOAPIC -> NMI on CPU 0 -> a sample
 *                  there, and an NMI IPI to every other CPU in the run, each
 *                  of which samples itself ("cpu-clock", period in ns);
 *                  every expiry is a tick due on every CPU, and a TICKS
 *                  record per CPU says how each one ended (sample, ring
 *                  full, or LOST_SAMPLES)
 *   run tick       APIC timer (VEC_APIC_TIMER) on every CPU of the run at
 *                  PROFILE_TICK_HZ -> profile_tick: pmu_tick (frequency
 *                  mode, unthrottling, event-set rotation); on the boot
 *                  CPU also the stream drain
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
#include "kernel/platform/quiet.h"
#include "kernel/stream.h"
#include "kernel/trap.h"
#include "pmu/pmu.h"
#include "pmu/trace/trace.h"
#include "ringbuf/drain.h"
#include "ringbuf/ringbuf.h"
#include <uapi/perf_ring.h>

#define MAX_CPUS_PROF	64
#define MAX_CALLCHAIN	32
#define SOFT_EVENT_NAME	"cpu-clock"
#define DEFAULT_SOFT_PERIOD_NS	250000ul	/* 4 kHz, perf's default rate */
#define DEFAULT_HW_FREQ	4000ul
#define HPET_NS_PER_S	1000000000ul

struct cpu_prof {
	struct bp_ring ring;
	void *mem;
	u64 mem_pages;
	u32 aux_pages;			/* AUX area after the data area (trace=) */
	struct pmu_ctx pmu;
	bool pmu_on;			/* the context is open and started here */
	bool ticking;			/* the run tick is on */
	u32 soft_lapic_n;		/* APIC timer samples since the last run tick */
	bool irq_was;			/* interrupts were on before the run */
	u64 soft_pending;		/* ticks posted to this CPU, not yet taken */
	u64 samples;			/* SAMPLE records written */
	u64 dropped;			/* records not written: no room (cumulative) */
	u64 samples_dropped;		/* ... of them SAMPLE records */
	u64 soft_merged;		/* ticks that arrived folded into a later NMI */
	u64 soft_seen;			/* ticks that reached this CPU: the index of the latest */
	u64 soft_last;			/* index of the last tick a sample was taken for */
	u64 nmis;
	u64 ticks;			/* run ticks taken */
	/* Soft PMU throttling (perf throttles cpu-clock too), by the TSC:
	 * samples since thr_start, the start of the current window. */
	u64 thr_start;
	u32 thr_samples;
	u32 soft_throttled;
	u64 soft_throttled_ticks;	/* ticks that found sampling throttled */
	u32 stopped;			/* stop_cpu has begun: its account is being written */
	u32 app_running;		/* the app's main runs here now (any run) */
	u64 missed_reported;		/* pmu.stats.missed already in LOST_SAMPLES */
	/* Counting: the CPU's window is [t_start, t_stop]; the app's CPU
	 * narrows it to [app_t0, app_t1] around app->main. */
	u64 t_start, t_stop;
	bool app_here;
	u64 app_t0, app_t1;
	struct pmu_value app_base[PMU_MAX_EVENTS], app_end[PMU_MAX_EVENTS];
	struct pmu_value counts[PMU_MAX_EVENTS];	/* final, written at stop */
};

static struct cpu_prof cpus[MAX_CPUS_PROF];
static struct profile_cfg cfg;
static u32 ncpus;
static bool active, soft;
static bool quiesced;		/* the app returned: no more samples this run */
/* Where the sampling window closed (close_window): the TSC, the HPET main
 * counter and the soft PMU's ticks due by then. */
static u64 close_tsc, close_hpet, close_due;
static u64 final_due;			/* ticks due on every CPU: close_due, or
					 * later if a sample raced the close */
static u64 soft_period_ns, soft_ticks;	/* soft PMU: period, NMIs from the HPET */
static u64 soft_hpet_period;		/* HPET ticks between expiries */
static u64 soft_posted;			/* expiries posted to the other CPUs */
static bool soft_started;		/* the HPET's NMIs run for this run */
static u64 throttle_window;		/* TSC ticks of one run tick: the rate's measure */
/* No HPET: the soft PMU samples on each CPU's APIC timer, an ordinary
 * interrupt at the sampling period; every soft_per_tick-th one is also
 * the run tick. */
static bool soft_lapic;
static u32 soft_per_tick;
static u64 run_id;
static const char *app_name;
static u32 max_per_tick;		/* samples per tick per CPU; 0 = no limit */
/* The run's PMU events: cfg index -> context index (-1: soft), and back. */
static int hw_idx[PMU_MAX_EVENTS], hw_cfg[PMU_MAX_EVENTS], hw_n;
static struct pmu_event_attr hw_attrs[PMU_MAX_EVENTS];
static struct pmu_ctx probe_ctx;	/* profile_start's dry run of pmu_open */

static const struct {
	const char *name;
	enum profile_soft kind;
	u64 config;
} soft_events[] = {
	{ "tsc", PROFILE_TSC, BP_CONFIG_SOFT_TSC },
	{ "cpu-clock", PROFILE_CPU_CLOCK, BP_CONFIG_SOFT_CPU_CLOCK },
	{ "task-clock", PROFILE_TASK_CLOCK, BP_CONFIG_SOFT_TASK_CLOCK },
};

static int events_total(void)
{
	return cfg.nevents + cfg.ncount;
}

struct bp_ring *profile_ring(u32 cpu)
{
	return cpu < ncpus && cpus[cpu].mem ? &cpus[cpu].ring : NULL;
}

void profile_drain(bool from_tick)
{
	struct bp_ring *rings[MAX_CPUS_PROF];

	for (u32 c = 0; c < ncpus; c++)
		rings[c] = profile_ring(c);
	bp_drain(rings, ncpus, cfg.sample_type, from_tick);
}

u64 profile_samples(u32 cpu)
{
	return cpu < ncpus ? cpus[cpu].samples : 0;
}

u64 profile_ticks(u32 cpu)
{
	return cpu < ncpus ? cpus[cpu].ticks : 0;
}

/* ---- values of events ------------------------------------------------ */

/* Event i's value on this CPU at TSC now: PMU events from the context,
 * soft ones from the TSC over the CPU's part of the run. NMI-safe. */
static void event_value(struct cpu_prof *cp, int i, u64 now, struct pmu_value *v)
{
	u64 window = now - cp->t_start;

	v->count = v->enabled = v->running = 0;
	switch (cfg.soft_ev[i]) {
	case PROFILE_HW:
		if (cp->pmu_on)
			pmu_read_value(&cp->pmu, hw_idx[i], v);
		return;
	case PROFILE_TSC:
		v->count = window;
		break;
	case PROFILE_CPU_CLOCK:
		v->count = tsc_to_ns(window);
		break;
	case PROFILE_TASK_CLOCK:
		if (cp->app_here && cp->app_t0 && now > cp->app_t0)
			v->count = tsc_to_ns((cp->app_t1 ? MIN(cp->app_t1, now) : now) - cp->app_t0);
		break;
	}
	v->enabled = v->running = window;
}

/* A record that found no room is counted by the ring (and reported in its
 * next LOST record); the kernel keeps its own cumulative count too, so it
 * can say how many were dropped once the stream has emptied the ring. */
static bool dropped_for_room(int err)
{
	return err == BP_ERING_NOSPACE || err == BP_ERING_PAUSED;
}

/* One add, atomic against an NMI on the same CPU that counts a drop too. */
static void count_drop(struct cpu_prof *cp, int err)
{
	if (dropped_for_room(err))
		__atomic_fetch_add(&cp->dropped, 1, __ATOMIC_RELAXED);
}

static int put(struct bp_ring *rb, const void *rec)
{
	int err = bp_ring_output(rb, rec);

	count_drop((struct cpu_prof *)((char *)rb - offsetof(struct cpu_prof, ring)), err);
	return err;
}

int profile_output(const void *rec)
{
	u32 cpu = this_cpu()->cpu;

	if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE) || cpu >= ncpus || !cpus[cpu].mem)
		return BP_ERING_NODATA;
	return put(&cpus[cpu].ring, rec);
}

void profile_count_drop(int err)
{
	u32 cpu = this_cpu()->cpu;

	if (cpu < ncpus && cpus[cpu].mem)
		count_drop(&cpus[cpu], err);
}

u32 profile_app_id(void)
{
	return __atomic_load_n(&active, __ATOMIC_ACQUIRE) ? (u32)run_id : 0;
}

/* ---- the NMI paths ------------------------------------------------ */

/* One SAMPLE of sample_type from frame f into rb; cp gives the group's
 * counts (BP_SAMPLE_READ). Returns the ring's verdict. NMI-safe. */
static int write_sample(struct bp_ring *rb, struct cpu_prof *cp, u64 sample_type,
			struct trap_frame *f, u64 id, u64 period)
{
	struct percpu *pc = this_cpu();
	u64 ips[MAX_CALLCHAIN];
	struct bp_group_entry grp[PMU_MAX_EVENTS];
	struct bp_sample s = {
		.ip = f->rip,
		.pid = run_id,
		.tid = pc->cpu,
		.time = rdtsc(),
		.cpu = pc->cpu,
		.id = id,
		.period = period,
	};

	if (sample_type & BP_SAMPLE_CALLCHAIN) {
		bool on_stack = f->rsp >= pc->stack_lo && f->rsp < pc->stack_hi;
		s.ips = ips;
		s.nr_ips = on_stack ? bp_callchain_fp(f->rip, f->rbp, f->rsp, pc->stack_hi,
						      ips, MAX_CALLCHAIN)
				    : (ips[0] = f->rip, 1);
		/* A frameless leaf (GCC 12 gives leaves no frame despite
		 * -mno-omit-leaf-frame-pointer) leaves its caller only at
		 * [rsp]: put it back, as the fault report does. */
		u64 ret = on_stack ? leaf_return_address(f->rip, f->rsp) : 0;
		if (ret && s.nr_ips >= 1) {
			u32 n = MIN(s.nr_ips, (u32)MAX_CALLCHAIN - 1);
			memmove(&ips[2], &ips[1], (n - 1) * sizeof(ips[0]));
			ips[1] = ret;
			s.nr_ips = n + 1;
		}
	}
	/* A group run: the counts of all its events, read now. A group does
	 * not multiplex, so its time running is its time enabled. */
	if (sample_type & BP_SAMPLE_READ) {
		for (int i = 0; i < events_total(); i++) {
			struct pmu_value v;
			event_value(cp, i, s.time, &v);
			grp[i] = (struct bp_group_entry){ cfg.attrs[i].config, v.count };
		}
		s.nr_group = events_total();
		s.group = grp;
		s.time_enabled = s.time_running = s.time - cp->t_start;
	}
	return bp_ring_output_sample(rb, sample_type, BP_MISC_KERNEL, &s);
}

/* A SAMPLE of the interrupted frame: 1 written, 0 not written (the ring
 * was full: counted). The caller has checked the window. NMI-safe. */
static int take_sample(struct trap_frame *f, u64 id, u64 period)
{
	struct cpu_prof *cp = &cpus[this_cpu()->cpu];
	int err = write_sample(&cp->ring, cp, cfg.sample_type, f, id, period);
	if (!err) {
		cp->samples++;
		return 1;
	}
	if (dropped_for_room(err))
		cp->samples_dropped++;
	count_drop(cp, err);
	return 0;
}

static void write_throttle(struct cpu_prof *cp, u32 type)
{
	struct bp_record_throttle r = {
		.header = { type, 0, sizeof(r) },
		.time = rdtsc(),
	};

	put(&cp->ring, &r);
}

/*
 * A soft-PMU sample for tick `tick` (its index), unless the tick came
 * after the window closed, or this CPU is throttled. A tick due inside
 * the window is sampled even if its NMI arrives after the close: the IPI
 * that carries it to another CPU may still be on its way when the app
 * returns. Throttling: perf throttles its cpu-clock like any sampling
 * event, once
 * max_per_tick samples come within one run tick's length. The rate is
 * measured here against the TSC, not by counting samples between run
 * ticks: an app may mask the APIC timer for seconds (apps/bench.c does),
 * and a count between ticks that never come would throttle any rate. The
 * HPET keeps firing, so the first tick after the window has passed ends
 * the throttling. A tick without a sample is not counted here: stop_cpu
 * counts every due tick that gave none.
 */
static void soft_sample(struct trap_frame *f, u64 tick)
{
	struct cpu_prof *cp = &cpus[this_cpu()->cpu];
	u64 now = rdtsc();

	if ((__atomic_load_n(&quiesced, __ATOMIC_ACQUIRE) && (!soft_started || tick > close_due)) ||
	    __atomic_load_n(&cp->stopped, __ATOMIC_RELAXED))
		return;
	if (max_per_tick && now - cp->thr_start >= throttle_window) {
		if (cp->soft_throttled) {
			write_throttle(cp, BP_RECORD_UNTHROTTLE);
			cp->soft_throttled = 0;
		}
		cp->thr_start = now;
		cp->thr_samples = 0;
	}
	if (cp->soft_throttled) {
		cp->soft_throttled_ticks++;
		return;
	}
	take_sample(f, 0, soft_period_ns);
	cp->soft_last = tick;
	if (max_per_tick && ++cp->thr_samples >= max_per_tick) {
		cp->soft_throttled = 1;
		write_throttle(cp, BP_RECORD_THROTTLE);
	}
}

/* The HPET's NMI on CPU 0. It stands for every expiry since the last one
 * (hpet_nmi_due): one sample here, the same number of ticks posted to each
 * other CPU. */
static void soft_tick(struct trap_frame *f, void *arg)
{
	(void)arg;
	struct cpu_prof *cp = &cpus[this_cpu()->cpu];
	u64 due = hpet_nmi_due(), n = due - soft_posted;

	soft_ticks++;
	soft_posted = due;
	/* Wake the other CPUs first so their samples are as close in time. */
	if (ncpus > 1) {
		for (u32 i = 0; i < ncpus; i++)
			if (&cpus[i] != cp)
				__atomic_add_fetch(&cpus[i].soft_pending, n, __ATOMIC_RELEASE);
		apic_send_ipi(0, APIC_DM_NMI | APIC_DEST_OTHERS);
	}
	cp->soft_seen = due;
	cp->soft_merged += n - 1;
	soft_sample(f, due);
}

/*
 * The NMI IPI from soft_tick on the other CPUs: ours if ticks were posted.
 * A CPU that could not run for longer than a period (a descheduled vCPU)
 * finds several; it samples once, for the latest.
 */
static bool soft_ipi_nmi(struct trap_frame *f)
{
	struct percpu *pc = this_cpu();
	struct cpu_prof *cp;
	u64 ticks;

	if (!active || !soft || pc->cpu >= ncpus)
		return false;
	cp = &cpus[pc->cpu];
	ticks = __atomic_exchange_n(&cp->soft_pending, 0, __ATOMIC_ACQ_REL);
	if (!ticks)
		return false;
	cp->soft_seen += ticks;
	cp->soft_merged += ticks - 1;
	soft_sample(f, cp->soft_seen);
	return true;
}

static void emit_sample(struct pmu_ctx *ctx, int idx, u64 period, void *arg)
{
	(void)ctx;
	if (!__atomic_load_n(&quiesced, __ATOMIC_ACQUIRE))
		(void)take_sample(arg, hw_cfg[idx], period);
}

static void throttled(struct pmu_ctx *ctx, enum pmu_throttle_event ev, void *arg)
{
	(void)ctx, (void)arg;
	write_throttle(&cpus[this_cpu()->cpu],
		       ev == PMU_THROTTLE ? BP_RECORD_THROTTLE : BP_RECORD_UNTHROTTLE);
}

static bool pmi_nmi(struct trap_frame *f)
{
	struct percpu *pc = this_cpu();

	if (!active || pc->cpu >= ncpus || !cpus[pc->cpu].pmu_on)
		return false;
	return pmu_handle_overflow(&cpus[pc->cpu].pmu, emit_sample, f) > 0;
}

/* ---- the run tick ---------------------------------------------------- */

/* PERF_RECORD_LOST_SAMPLES with perf's sample_id trailer (perf_ring.h),
 * on this CPU's ring. */
static void write_lost_samples(struct cpu_prof *cp, u64 lost)
{
	struct {
		struct bp_record_lost_samples r;
		struct bp_sample_id id;
	} rec = {
		.r = { .header = { BP_RECORD_LOST_SAMPLES, 0, sizeof(rec) }, .lost = lost },
		.id = { .pid = run_id, .tid = this_cpu()->cpu, .time = rdtsc(),
			.id = 0, .cpu = this_cpu()->cpu },
	};

	put(&cp->ring, &rec);
}

/* Samples the PMU could not take at an event-set switch: said, not lost
 * silently. */
static void report_missed(struct cpu_prof *cp)
{
	u64 missed = cp->pmu.stats.missed;

	if (missed == cp->missed_reported)
		return;
	write_lost_samples(cp, missed - cp->missed_reported);
	cp->missed_reported = missed;
}

void profile_tick(void)
{
	struct percpu *pc = this_cpu();

	if (!__atomic_load_n(&active, __ATOMIC_ACQUIRE) || pc->cpu >= ncpus)
		return;
	struct cpu_prof *cp = &cpus[pc->cpu];
	if (!cp->ticking)
		return;			/* pending when the timer was stopped */
	cp->ticks++;
	if (cp->pmu_on) {
		pmu_tick(&cp->pmu);
		report_missed(cp);
	}
}

/*
 * VEC_APIC_TIMER during a run: every CPU's tick; the boot CPU also drains
 * rings that crossed their watermark to the stream — but never while it
 * runs the app itself: on a serial line a drain holds the CPU for as long
 * as the bytes take (tens of ms at 115200 baud), which would both distort
 * what is measured and let the sampling NMIs overrun the ring anyway.
 * Such a run keeps its records in the rings (raise ring_pages= for long
 * runs; what does not fit is counted in LOST records) and is drained when
 * the app returns.
 */
static void run_tick(struct trap_frame *f)
{
	apic_eoi();
	if (soft_lapic) {
		struct cpu_prof *me = &cpus[this_cpu()->cpu];
		soft_sample(f, 0);	/* no HPET: ticks due are not known (TICKS period 0) */
		if (++me->soft_lapic_n < soft_per_tick)
			return;
		me->soft_lapic_n = 0;
	}
	profile_tick();
	trace_tick();			/* restart Intel PT after a full area */
	if (this_cpu()->cpu == 0 && !__atomic_load_n(&cpus[0].app_running, __ATOMIC_RELAXED))
		profile_drain(true);
}

/* ---- the shortest period ------------------------------------------ */

/*
 * Sampling faster than its handler can run takes the machine: a period
 * shorter than the NMI's own cost re-arms the HPET in the past forever.
 * Linux bounds its sample rate so that sampling takes at most
 * perf_cpu_time_max_percent (25%) of a CPU, from the measured length of
 * its sampling NMIs (perf_sample_event_took). We measure once at boot: a
 * self-NMI whose handler does what a soft-PMU tick does on CPU 0 — three
 * HPET register accesses (hpet_nmi's counter read, the comparator write,
 * rearm's re-check; reads stand in for the write) and a SAMPLE with its
 * call chain into a ring — timed from the ICR write to the handler's end.
 * The cheapest of FLOOR_TRIES is the handler's own cost (anything more is
 * the host running something else). cpu-clock periods below cost * 100 /
 * CPU_TIME_MAX_PERCENT are refused. Without an HPET the soft PMU samples
 * from the APIC timer's interrupt: the same measurement without the HPET
 * accesses stands for it (an interrupt's entry and exit cost about what an
 * NMI's do).
 */
#define FLOOR_TRIES		32
#define FLOOR_WAIT_NS		1000000000ul	/* for one self-NMI: generous */
#define FLOOR_FALLBACK_NS	100000ul	/* no self-NMI came back: 10 kHz */
#define CPU_TIME_MAX_PERCENT	25		/* perf_cpu_time_max_percent */
#define FLOOR_SAMPLE_TYPE	(BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID | \
				 BP_SAMPLE_CPU | BP_SAMPLE_PERIOD | BP_SAMPLE_CALLCHAIN)

static u64 soft_cost_ns, soft_floor_ns = 1;
static u32 floor_armed;			/* a measuring self-NMI is on its way */
static struct bp_ring floor_ring;
static u8 floor_mem[3 * PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));

static bool floor_nmi(struct trap_frame *f)
{
	if (!__atomic_load_n(&floor_armed, __ATOMIC_ACQUIRE) || this_cpu()->cpu != 0)
		return false;
	if (hpet_hz()) {
		hpet_read();
		hpet_read();
		hpet_read();
	}
	write_sample(&floor_ring, NULL, FLOOR_SAMPLE_TYPE, f, 0, DEFAULT_SOFT_PERIOD_NS);
	__atomic_store_n(&floor_armed, 0, __ATOMIC_RELEASE);
	return true;
}

void profile_init(void)
{
	struct bp_ring_config rc = { .id = 0 };
	u64 best = ~0ul;

	if (!tsc_hz || (!hpet_hz() && !apic_timer_hz()))
		return;			/* no soft PMU (or no clock to time it) */
	if (nmi_register(floor_nmi)) {
		kprintf("soft-pmu: no NMI handler slot to time the handler with\n");
		return;
	}
	for (int i = 0; i < FLOOR_TRIES; i++) {
		bp_ring_init(&floor_ring, floor_mem, sizeof(floor_mem), &rc);
		__atomic_store_n(&floor_armed, 1, __ATOMIC_RELEASE);
		u64 t0 = rdtsc_ordered();
		apic_send_ipi(apic_id(), APIC_DM_NMI);
		while (__atomic_load_n(&floor_armed, __ATOMIC_ACQUIRE) &&
		       !tsc_since_ns(t0, FLOOR_WAIT_NS))
			cpu_relax();
		u64 t1 = rdtsc_ordered();
		if (__atomic_exchange_n(&floor_armed, 0, __ATOMIC_ACQ_REL)) {
			soft_floor_ns = FLOOR_FALLBACK_NS;
			kprintf("soft-pmu: a self-NMI did not arrive within %lu ms; shortest "
				"cpu-clock period set to %lu ns unmeasured\n",
				FLOOR_WAIT_NS / 1000000, soft_floor_ns);
			return;
		}
		best = MIN(best, t1 - t0);
	}
	soft_cost_ns = MAX(tsc_to_ns(best), 1ul);
	soft_floor_ns = soft_cost_ns * 100 / CPU_TIME_MAX_PERCENT;
	kprintf("soft-pmu: the %s handler takes %lu ns (fastest of %d); shortest "
		"cpu-clock period %lu ns (sampling at most %d%% of a CPU)\n",
		hpet_hz() ? "NMI" : "APIC timer", soft_cost_ns, FLOOR_TRIES, soft_floor_ns,
		CPU_TIME_MAX_PERCENT);
}
BOOT_HOOK(BOOT_SMP, profile_init);

u64 profile_soft_floor_ns(void) { return soft_floor_ns; }

/* ns -> HPET ticks without overflow for any period and HPET rate. */
static bool hpet_ticks_of(u64 ns, u64 *ticks)
{
	u64 hz = hpet_hz(), whole = ns / HPET_NS_PER_S, part = ns % HPET_NS_PER_S;

	if (!hz || (whole && hz > ~0ul / whole))
		return false;
	*ticks = whole * hz;
	u64 frac = hz / HPET_NS_PER_S * part + hz % HPET_NS_PER_S * part / HPET_NS_PER_S;
	if (*ticks + frac < *ticks)
		return false;
	*ticks += frac;
	return true;
}

/*
 * The one check of a sampling event's period and frequency, for the
 * command line and the control channel alike; every bound is tested
 * before any arithmetic that could overflow. A period is in events
 * (hardware) or ns (cpu-clock); 0 means not given.
 *  - both given: refused, as perf refuses -c with -F;
 *  - freq: at most max_rate (perf's perf_event_max_sample_rate check)
 *    and one per ns;
 *  - cpu-clock: at least the measured floor above, at most what one HPET
 *    comparator step can hold;
 *  - hardware: at least 2 (Linux's x86_pmu_hw_config refuses 1: the
 *    reload value -1 overflows at once); the drivers add per-model limits.
 */
static int check_rate(const char *ev, bool is_soft, u64 period, u64 freq, char *err, size_t n)
{
	if (period && freq) {
		ksnprintf(err, n, "period=%lu and freq=%lu together: give one or the other",
			  period, freq);
		return -E_INVAL;
	}
	if (freq && ((kopt.max_rate && freq > kopt.max_rate) || freq > HPET_NS_PER_S)) {
		if (kopt.max_rate && freq > kopt.max_rate)
			ksnprintf(err, n, "freq=%lu is above max_rate=%u, the most samples/s "
				  "a CPU may take", freq, kopt.max_rate);
		else
			ksnprintf(err, n, "freq=%lu is above one sample per ns", freq);
		return -E_RANGE;
	}
	if (!is_soft) {
		if (period == 1) {
			ksnprintf(err, n, "%s: period=1 is too short: a hardware period is at "
				  "least 2", ev);
			return -E_RANGE;
		}
		return 0;
	}
	u64 ns = period ? period : freq ? HPET_NS_PER_S / freq : DEFAULT_SOFT_PERIOD_NS;
	if (ns < soft_floor_ns) {
		if (freq)
			ksnprintf(err, n, "freq=%lu is above the soft PMU's limit here, %lu "
				  "samples/s (its handler takes %lu ns; it may use %d%% of "
				  "a CPU)", freq, HPET_NS_PER_S / soft_floor_ns, soft_cost_ns,
				  CPU_TIME_MAX_PERCENT);
		else
			ksnprintf(err, n, "period=%lu ns is below the soft PMU's shortest period "
				  "here, %lu ns (its handler takes %lu ns; it may use %d%% of "
				  "a CPU)", ns, soft_floor_ns, soft_cost_ns, CPU_TIME_MAX_PERCENT);
		return -E_RANGE;
	}
	u64 ticks, ahz = apic_timer_hz();
	/* No HPET: one APIC timer count (32 bits, divide by 1) per sample. */
	if (!hpet_hz() && ahz && ns / HPET_NS_PER_S * ahz + ns % HPET_NS_PER_S * ahz /
				 HPET_NS_PER_S > 0xfffffffful) {
		ksnprintf(err, n, "period=%lu ns is longer than the APIC timer's longest, %lu ns",
			  ns, 0xfffffffful / ahz * HPET_NS_PER_S +
			  0xfffffffful % ahz * HPET_NS_PER_S / ahz);
		return -E_RANGE;
	}
	if (hpet_hz() && (!hpet_ticks_of(ns, &ticks) || ticks > HPET_NMI_MAX_TICKS)) {
		u64 max_ns = HPET_NMI_MAX_TICKS / hpet_hz() * HPET_NS_PER_S +
			     HPET_NMI_MAX_TICKS % hpet_hz() * HPET_NS_PER_S / hpet_hz();
		ksnprintf(err, n, "period=%lu ns is longer than the HPET's longest, %lu ns",
			  ns, max_ns);
		return -E_RANGE;
	}
	return 0;
}

/* ---- set-up --------------------------------------------------------- */

int profile_parse(const char *events, u64 period, u64 freq, bool callchain,
		  u32 ring_pages, struct profile_cfg *out, char *err, size_t n)
{
	char list[256];
	bool have_pmu = pmu_boot_caps.kind != PMU_KIND_NONE;

	memset(out, 0, sizeof(*out));
	out->ring_pages = ring_pages;
	out->sample_type = BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID |
			   BP_SAMPLE_CPU | BP_SAMPLE_PERIOD |
			   (callchain ? BP_SAMPLE_CALLCHAIN : 0);
	if (!strcmp(events, "none"))
		return 0;
	if (!*events)
		events = have_pmu ? "cycles" : SOFT_EVENT_NAME;
	if (strlcpy(list, events, sizeof(list)) >= sizeof(list)) {
		ksnprintf(err, n, "events: the list is longer than %zu characters", sizeof(list) - 1);
		return -E_INVAL;
	}
	for (char *p = list, *next; p && *p; p = next) {
		next = strchr(p, ',');
		if (next)
			*next++ = 0;
		if (out->nevents == PMU_MAX_EVENTS) {
			ksnprintf(err, n, "events: more than %d events", PMU_MAX_EVENTS);
			return -E_INVAL;
		}
		struct pmu_event_attr *a = &out->attrs[out->nevents];
		bool soft = !strcmp(p, SOFT_EVENT_NAME);
		if (!soft) {
			/* The name first: a misspelling is not a missing PMU. */
			int e = pmu_event_parse(p, &pmu_boot_caps, a, err, n);
			if (e == -E_NODEV && !have_pmu &&
			    (!strcmp(p, "cycles") || !strcmp(p, "cpu-cycles"))) {
				/* As perf does without hardware cycles: sample cpu-clock. */
				kprintf("bareperf: warning: event '%s': this machine has no PMU (%s); "
					"sampling cpu-clock (the HPET soft PMU) instead\n", p,
					pmu_boot_caps.none_reason);
				soft = true;
			} else if (e) {
				if (e == -E_NODEV && !have_pmu) {
					size_t k = strlen(err);
					ksnprintf(err + k, n - k, "; use events=cpu-clock, the "
						  "HPET-driven soft PMU");
				}
				return e;
			} else {
				/* The event's own period=/freq= terms win over the run's. */
				if (a->flags & PMU_ATTR_SAMPLE)
					e = check_rate(p, false, a->flags & PMU_ATTR_FREQ ? 0 : a->period,
						       a->flags & PMU_ATTR_FREQ ? a->freq : 0, err, n);
				else
					e = check_rate(p, false, period, freq, err, n);
				if (e)
					return e;
				if (!(a->flags & PMU_ATTR_SAMPLE)) {
					a->flags |= PMU_ATTR_SAMPLE | (period ? 0 : PMU_ATTR_FREQ);
					a->period = period ? period : 100000;
					a->freq = period ? 0 : freq ? freq : DEFAULT_HW_FREQ;
				}
			}
		}
		if (soft) {
			memset(a, 0, sizeof(*a));
			out->soft = true;
			out->soft_ev[out->nevents] = PROFILE_CPU_CLOCK;
			strlcpy(a->name, SOFT_EVENT_NAME, sizeof(a->name));
			a->config = BP_CONFIG_SOFT_CPU_CLOCK;
			a->generic = PMU_EV_RAW;
			a->fixed = -1;
			int e = check_rate(p, true, period, freq, err, n);
			if (e)
				return e;
			a->period = period ? period : freq ? HPET_NS_PER_S / freq : DEFAULT_SOFT_PERIOD_NS;
			a->flags = PMU_ATTR_SAMPLE;
		}
		out->nevents++;
	}
	if (out->soft && out->nevents > 1) {
		ksnprintf(err, n, "events: %s cannot be combined with other events yet",
			  SOFT_EVENT_NAME);
		return -E_INVAL;
	}
	return 0;
}

int profile_parse_count(const char *list, struct profile_cfg *out, char *err, size_t n)
{
	char buf[256];
	bool have_pmu = pmu_boot_caps.kind != PMU_KIND_NONE;

	if (!list || !*list)
		return 0;
	if (strlcpy(buf, list, sizeof(buf)) >= sizeof(buf)) {
		ksnprintf(err, n, "count: the list is longer than %zu characters", sizeof(buf) - 1);
		return -E_INVAL;
	}
	for (char *p = buf, *next; p && *p; p = next) {
		next = strchr(p, ',');
		if (next)
			*next++ = 0;
		int i = out->nevents + out->ncount;
		if (i == PMU_MAX_EVENTS) {
			ksnprintf(err, n, "count: more than %d events in a run (sampled and counted)",
				  PMU_MAX_EVENTS);
			return -E_INVAL;
		}
		struct pmu_event_attr *a = &out->attrs[i];
		memset(a, 0, sizeof(*a));
		out->soft_ev[i] = PROFILE_HW;
		for (size_t k = 0; k < ARRAY_SIZE(soft_events); k++) {
			if (strcmp(p, soft_events[k].name))
				continue;
			strlcpy(a->name, p, sizeof(a->name));
			a->config = soft_events[k].config;
			a->generic = PMU_EV_RAW;
			a->fixed = -1;
			out->soft_ev[i] = soft_events[k].kind;
		}
		if (out->soft_ev[i] == PROFILE_HW) {
			/* The name first: a misspelling is not a missing PMU. */
			int e = pmu_event_parse(p, &pmu_boot_caps, a, err, n);
			if (e == -E_NODEV && !have_pmu) {
				size_t k = strlen(err);
				ksnprintf(err + k, n - k, "; soft events: tsc, cpu-clock, task-clock");
			}
			if (e)
				return e;
			if (a->flags & PMU_ATTR_SAMPLE) {
				ksnprintf(err, n, "count: '%s' has a period or freq: sampled events go "
					  "in events=", p);
				return -E_INVAL;
			}
		}
		out->ncount++;
	}
	if (out->nevents && out->ncount)
		out->sample_type |= BP_SAMPLE_READ;
	return 0;
}

static void write_meta(struct bp_ring *rb)
{
	struct bp_record_run_meta m = {
		.header = { BP_RECORD_RUN_META, 0, sizeof(m) },
		.meta_version = BP_META_VERSION,
		.flags = (cpu_features.invariant_tsc ? BP_META_TSC_INVARIANT : 0) |
			 (soft ? BP_META_SOFT_PMU : 0) | (soft_lapic ? BP_META_SOFT_LAPIC : 0),
		.run_id = run_id,
		.nr_cpus = ncpus,
		.tsc_hz = tsc_hz,
		.start_tsc = rdtsc(),
	};
	u32 len;
	const u8 *id = kernel_build_id(&len);
	bool group = cfg.sample_type & BP_SAMPLE_READ;

	quiet_state(&m.quiet_asked, &m.quiet_done, &m.quiet_refused);

	/* ns = (tsc * mult) >> shift with the largest shift that keeps mult
	 * below 2^32 (perf's time_mult/time_shift); 10^9 << 32 fits 64 bits. */
	for (m.time_shift = 32; m.time_shift > 0 && tsc_hz; m.time_shift--) {
		u64 mult = (HPET_NS_PER_S << m.time_shift) / tsc_hz;
		if (mult < (1ul << 32)) {
			m.time_mult = mult;
			break;
		}
	}
	if (id)
		memcpy(m.build_id, id, MIN(len, (u32)sizeof(m.build_id)));
	put(rb, &m);

	/* Counting events have sample_period 0. Their sample_type is the
	 * run's all the same: readers learn how to parse SAMPLEs from it. */
	for (int i = 0; i < events_total(); i++) {
		struct bp_record_event_desc d = {
			.header = { BP_RECORD_EVENT_DESC, 0, sizeof(d) },
			.id = i,
			.config = cfg.attrs[i].config,
			.sample_type = cfg.sample_type,
			.sample_period = i < cfg.nevents ? cfg.attrs[i].period : 0,
			.group_id = group ? 0 : i,
			.flags = group && i == 0 ? BP_EVENT_F_LEADER : 0,
		};
		strlcpy(d.name, cfg.attrs[i].name, sizeof(d.name));
		put(rb, &d);
	}
}

static void write_cpu_records(struct bp_ring *rb, u32 cpu)
{
	const struct cpu_features *f = &cpu_features;
	struct bp_record_cpu_info ci = {
		.header = { BP_RECORD_CPU_INFO, 0, sizeof(ci) },
		.cpu = cpu,
		.apic_id = apic_id(),
		.vendor = !strcmp(f->vendor, "GenuineIntel") ? BP_CPU_VENDOR_INTEL :
			  !strcmp(f->vendor, "AuthenticAMD") ? BP_CPU_VENDOR_AMD :
			  BP_CPU_VENDOR_UNKNOWN,
		.family = f->family, .model = f->model, .stepping = f->stepping,
	};
	const struct pmu_caps *c = &pmu_boot_caps;
	struct bp_record_pmu_caps pc = {
		.header = { BP_RECORD_PMU_CAPS, 0, sizeof(pc) },
		.cpu = cpu,
		.kind = soft ? BP_PMU_SOFT : c->kind == PMU_KIND_NONE ? BP_PMU_NONE :
			c->intel ? BP_PMU_INTEL_ARCH : BP_PMU_AMD,
		.version = c->version,
		.nr_gp = c->nr_gp, .nr_fixed = c->nr_fixed,
		.gp_width = c->gp_width, .fixed_width = c->fixed_width,
		.flags = (c->fw_write ? BP_PMU_CAP_FULL_WIDTH : 0) |
			 (c->has_global ? BP_PMU_CAP_GLOBAL_CTRL : 0) |
			 (c->freeze ? BP_PMU_CAP_FREEZE_PMI : 0),
		.arch_events_unavail = c->arch_events_unavail,
		.perf_capabilities = c->perf_capabilities,
	};

	memcpy(ci.vendor_string, f->vendor, sizeof(f->vendor) - 1);
	memcpy(ci.brand, f->brand, MIN(sizeof(ci.brand), sizeof(f->brand) - 1));
	put(rb, &ci);
	put(rb, &pc);
}

/* APP_START or APP_STOP on this CPU's ring, stamped with time. */
static void app_record(const char *app, u64 time, bool start, s64 status)
{
	u32 cpu = this_cpu()->cpu;
	struct bp_ring *rb = &cpus[cpu].ring;

	if (start) {
		struct bp_record_app_start r = {
			.header = { BP_RECORD_APP_START, 0, sizeof(r) },
			.app_id = run_id, .cpu = cpu, .time = time,
			.text_start = (u64)__text_start, .text_end = (u64)__text_end,
		};
		strlcpy(r.name, app, sizeof(r.name));
		put(rb, &r);
	} else {
		struct bp_record_app_stop r = {
			.header = { BP_RECORD_APP_STOP, 0, sizeof(r) },
			.app_id = run_id, .cpu = cpu, .time = time, .status = status,
		};
		put(rb, &r);
	}
}

/* The final counts of the CPU's counting events: over the app's window
 * where it ran, else over the CPU's part of the run. */
static void final_counts(struct cpu_prof *cp)
{
	for (int j = 0; j < cfg.ncount; j++) {
		int i = cfg.nevents + j;
		struct pmu_value *v = &cp->counts[j];

		if (!cp->app_here || !cp->app_t1) {
			event_value(cp, i, cp->t_stop, v);
		} else if (cfg.soft_ev[i] == PROFILE_HW) {
			v->count = cp->app_end[j].count - cp->app_base[j].count;
			v->enabled = cp->app_end[j].enabled - cp->app_base[j].enabled;
			v->running = cp->app_end[j].running - cp->app_base[j].running;
		} else {
			u64 window = cp->app_t1 - cp->app_t0;
			v->count = cfg.soft_ev[i] == PROFILE_TSC ? window : tsc_to_ns(window);
			v->enabled = v->running = window;
		}
	}
}

static void write_counts(struct cpu_prof *cp, u32 cpu)
{
	struct {
		struct bp_record_counts h;
		struct bp_count_entry e[PMU_MAX_EVENTS];
	} r;
	u32 nr = cfg.ncount;

	r.h = (struct bp_record_counts){
		.header = { BP_RECORD_COUNTS, 0, sizeof(r.h) + nr * sizeof(r.e[0]) },
		.app_id = run_id, .cpu = cpu, .nr = nr,
	};
	for (u32 j = 0; j < nr; j++)
		r.e[j] = (struct bp_count_entry){ cfg.nevents + j, cp->counts[j].count,
						  cp->counts[j].enabled, cp->counts[j].running };
	put(&cp->ring, &r);
}

static unsigned open_flags(void)
{
	/* A group goes on the counters whole: no multiplexing inside it. */
	return cfg.sample_type & BP_SAMPLE_READ ? 0 : PMU_OPEN_MULTIPLEX;
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
	struct cpu_prof *cp = &cpus[cpu];
	char err[120];

	if (cpu >= ncpus)
		return;
	cp->irq_was = read_rflags() & RFLAGS_IF;
	write_cpu_records(&cp->ring, cpu);
	trace_cpu_attach(&cp->ring, run_id);	/* this CPU's trace buffer */
	if (hw_n) {
		/* This CPU's own caps: an E-core must not touch a counter
		 * only the P-cores have. */
		if (pmu_open(&cp->pmu, pmu_cpu_caps(cpu), hw_attrs, hw_n, open_flags(), err,
			     sizeof(err))) {
			kprintf("profile: cpu %u: %s\n", cpu, err);
			a->err = -E_INVAL;
			return;
		}
		pmu_set_throttle(&cp->pmu, max_per_tick, throttled, NULL);
		pmu_set_throttle_window(&cp->pmu, throttle_window);
		pmu_set_clock_hz(&cp->pmu, tsc_hz);
		apic_lvtpc_set_nmi();
		cp->pmu_on = true;
	}
	irq_disable();
	cp->t_start = rdtsc_ordered();
	app_record(a->app, cp->t_start, true, 0);
	if (cp->pmu_on)
		pmu_start(&cp->pmu);
	if (apic_timer_hz()) {
		cp->ticking = true;
		cp->soft_lapic_n = 0;
		apic_timer_periodic(soft_lapic ? MAX(apic_timer_hz() * soft_period_ns / 1000000000, 1ul)
				    : apic_timer_hz() / PROFILE_TICK_HZ);
	}
	/* The tick needs interrupts on for the whole run, also on the boot
	 * CPU, which otherwise runs with them off; stop_cpu puts them back. */
	irq_enable();
}

/*
 * The soft PMU's account on this CPU (perf_ring.h, TICKS): every tick due
 * in the window that gave no sample, written or dropped, is lost, and
 * said in one LOST_SAMPLES record. A sample is taken for one tick, each
 * for a later one than the last, so samples + dropped never exceed the
 * ticks due (final_due covers the ticks a sample raced the close for).
 */
static void write_ticks(struct cpu_prof *cp, u32 cpu)
{
	u64 taken = cp->samples + cp->samples_dropped;
	u64 lost = final_due > taken ? final_due - taken : 0;	/* a broken account shows */
	/* The window the due ticks fill: to the close, or on to the last tick
	 * a sample raced the close for, so that due = window / period. */
	u64 window = soft_started ? MAX(close_hpet - hpet_nmi_origin(),
					final_due * soft_hpet_period) : 0;
	struct bp_record_ticks r = {
		.header = { BP_RECORD_TICKS, 0, sizeof(r) },
		.app_id = run_id, .cpu = cpu,
		.hpet_hz = hpet_hz(), .period = soft_hpet_period,
		.window = window, .due = final_due,
		.samples = cp->samples, .dropped = cp->samples_dropped, .lost = lost,
		.throttled = cp->soft_throttled_ticks,
	};

	if (lost)
		write_lost_samples(cp, lost);
	put(&cp->ring, &r);
}

static void stop_cpu(void *arg)
{
	u32 cpu = this_cpu()->cpu;
	struct cpu_prof *cp = &cpus[cpu];

	if (cpu >= ncpus)
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
	cp->t_stop = close_tsc;
	if (cfg.ncount) {
		final_counts(cp);
		write_counts(cp, cpu);
	}
	if (soft)
		write_ticks(cp, cpu);
	app_record(NULL, close_tsc, false, *(int *)arg);
	trace_cpu_detach();
	irq_restore(cp->irq_was);
}

int profile_start(const struct profile_cfg *c, const char *app, char *err, size_t n)
{
	static bool registered;
	struct start_args args = { app, 0 };

	cfg = *c;
	quiesced = false;
	/* Instruction tracing (pmu/trace/trace.c): the AUX area it needs. */
	u32 aux_pages;
	int te = trace_run_prepare(&aux_pages, err, n);
	if (te)
		return te;
	if (!c->nevents && !c->ncount && !aux_pages)
		return 0;
	soft = c->soft;
	app_name = app;
	ncpus = MIN(smp_cpus(), (u32)MAX_CPUS_PROF);
	hw_n = 0;
	for (int i = 0; i < events_total(); i++) {
		hw_idx[i] = -1;
		if (cfg.soft_ev[i] != PROFILE_HW)
			continue;
		hw_idx[i] = hw_n;
		hw_cfg[hw_n] = i;
		hw_attrs[hw_n++] = cfg.attrs[i];
	}
	/* pmu_open touches no hardware: find a bad set of events here, with
	 * its reason, rather than on every CPU. */
	int e = hw_n ? pmu_open(&probe_ctx, &pmu_boot_caps, hw_attrs, hw_n, open_flags(), err, n) : 0;
	if (e) {
		if (e == -E_BUSY && (cfg.sample_type & BP_SAMPLE_READ)) {
			char why[160];
			strlcpy(why, err, sizeof(why));
			ksnprintf(err, n, "events= with count= is one group, read in every sample; "
				  "its PMU events must fit the counters together: %s", why);
		}
		return e;
	}
	/* perf: max_samples_per_tick = DIV_ROUND_UP(max_sample_rate, HZ).
	 * The soft PMU measures the rate itself (soft_sample); a PMU context
	 * is unthrottled by the run tick: without one, no limit. */
	max_per_tick = kopt.max_rate && (c->soft || apic_timer_hz()) ?
		       (kopt.max_rate + PROFILE_TICK_HZ - 1) / PROFILE_TICK_HZ : 0;
	throttle_window = tsc_hz / PROFILE_TICK_HZ;
	close_tsc = close_hpet = close_due = final_due = 0;
	soft_posted = soft_hpet_period = 0;
	soft_started = false;
	if (!apic_timer_hz())
		kprintf("profile: no APIC timer rate: no run tick (no multiplexing, frequency "
			"re-tuning or throttling)\n");
	run_id++;
	if (!registered) {
		nmi_register(soft_ipi_nmi);
		nmi_register(pmi_nmi);
		registered = true;
	}
	trap_set_handler(VEC_APIC_TIMER, run_tick);
	for (u32 i = 0; i < ncpus; i++) {
		struct cpu_prof *cp = &cpus[i];
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
	soft_lapic = soft && !hpet_hz() && apic_timer_hz();
	if (soft_lapic) {
		soft_period_ns = cfg.attrs[0].period;
		soft_per_tick = MAX(1000000000 / PROFILE_TICK_HZ / soft_period_ns, 1ul);
	}
	write_meta(&cpus[0].ring);
	__atomic_store_n(&active, true, __ATOMIC_RELEASE);
	smp_call_all(start_cpu, &args);
	if (args.err) {
		ksnprintf(err, n, "could not start the PMU on every CPU");
		profile_stop(EXIT_FAIL);
		return args.err;
	}
	if (soft && !soft_lapic) {
		u64 ticks = 0;
		soft_period_ns = cfg.attrs[0].period;
		e = !hpet_hz() ? -E_NODEV : hpet_ticks_of(soft_period_ns, &ticks) ? 0 : -E_RANGE;
		if (!e) {
			soft_hpet_period = ticks;
			e = hpet_nmi_start(ticks, apic_id(), soft_tick, NULL);
		}
		soft_started = !e;
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
 * Close the sampling window at TSC t: the soft PMU's ticks due are those
 * the HPET main counter has passed by now, and no sample is taken for a
 * later tick (nor any PMU sample). The counter is read before the close
 * is published, so a tick that expires in between may still be sampled
 * on a CPU that has not seen the close yet: profile_stop extends the
 * window to it (final_due), which keeps the count exact either way. Once
 * per run.
 */
static void close_window(u64 t)
{
	if (__atomic_load_n(&quiesced, __ATOMIC_ACQUIRE))
		return;
	close_tsc = t;
	if (soft_started) {
		close_hpet = hpet_read();
		close_due = hpet_nmi_expiries(close_hpet);
	}
	__atomic_store_n(&quiesced, true, __ATOMIC_RELEASE);
}

void profile_quiesce(void)
{
	if (active)
		close_window(rdtsc_ordered());
}

static void settle(void *arg)
{
	(void)arg;
}

void profile_stop(int status)
{
	if (!active)
		return;
	close_window(rdtsc_ordered());
	if (soft_started) {
		hpet_nmi_stop();
		/* Every CPU runs settle only once it has left the NMI it may
		 * have been in, and took the tick IPI that was pending (an NMI
		 * goes before the call's interrupt): after it, no sample is on
		 * its way. */
		smp_call_all(settle, NULL);
		final_due = close_due;
		for (u32 i = 0; i < ncpus; i++)
			final_due = MAX(final_due, cpus[i].soft_last);
	}
	smp_call_all(stop_cpu, &status);
	__atomic_store_n(&active, false, __ATOMIC_RELEASE);
}

void profile_app_enter(void)
{
	u32 cpu = this_cpu_id();

	if (active && cpu < ncpus)
		__atomic_store_n(&cpus[cpu].app_running, 1, __ATOMIC_RELAXED);
	if (!active || cpu >= ncpus || !cfg.ncount) {
		trace_app_enter(app_name);	/* tracing starts at main */
		return;
	}
	struct cpu_prof *cp = &cpus[cpu];
	bool irq = irq_save();
	u64 now = rdtsc_ordered();
	for (int j = 0; j < cfg.ncount; j++)
		event_value(cp, cfg.nevents + j, now, &cp->app_base[j]);
	cp->app_here = true;
	cp->app_t0 = rdtsc_ordered();		/* the window starts here */
	irq_restore(irq);
	trace_app_enter(app_name);		/* last, so tracing starts at main */
}

void profile_app_exit(void)
{
	u64 t1 = rdtsc_ordered();		/* ... and ends here */
	u32 cpu = this_cpu_id();

	if (active)
		close_window(t1);		/* the run's window too: APP_STOP's time */
	if (active && cpu < ncpus)
		__atomic_store_n(&cpus[cpu].app_running, 0, __ATOMIC_RELAXED);
	if (!active || cpu >= ncpus || !cpus[cpu].app_here) {
		trace_app_exit();
		return;
	}
	struct cpu_prof *cp = &cpus[cpu];
	bool irq = irq_save();
	cp->app_t1 = t1;
	for (int j = 0; j < cfg.ncount; j++)
		event_value(cp, cfg.nevents + j, t1, &cp->app_end[j]);
	irq_restore(irq);
	trace_app_exit();
}

bool profile_active(void)
{
	return active;
}

const struct profile_cfg *profile_config(void)
{
	return &cfg;
}

u32 profile_cpus(void)
{
	return ncpus;
}

u64 profile_soft_ticks(void)
{
	return soft_ticks;
}

u64 profile_soft_merged(u32 cpu)
{
	return cpu < ncpus ? cpus[cpu].soft_merged : 0;
}

/* ---- the console summary ------------------------------------------- */

#define SUMMARY_SLOTS	256
#define SUMMARY_TOP	8

struct hot {
	u64 func;		/* symbol start, or the ip when unknown */
	u64 count;
};

/*
 * Count samples per function across the rings and print the hottest. It
 * reads without releasing (no bp_ring_read_end), so the stream to the host
 * still carries every record. Not NMI-safe.
 */
/*
 * One line per counting event for the app's CPU (CPU 0 if no app ran
 * inside the run), perf stat's way: a multiplexed count is shown scaled,
 * with the factor and the share of the time it ran.
 */
static void print_counts(void)
{
	u32 cpu = 0;

	for (u32 i = 0; i < ncpus; i++)
		if (cpus[i].app_here && cpus[i].app_t1) {
			cpu = i;
			break;
		}
	const struct cpu_prof *cp = &cpus[cpu];
	u64 win = cp->app_here && cp->app_t1 ? cp->app_t1 - cp->app_t0 : cp->t_stop - cp->t_start;
	kprintf("count: %s on cpu %u: %lu TSC ticks (%lu us)%s\n", app_name ? app_name : "run",
		cpu, win, tsc_to_ns(win) / 1000,
		ncpus > 1 ? "; every CPU's counts are in its COUNTS record" : "");
	for (int j = 0; j < cfg.ncount; j++) {
		const struct pmu_value *v = &cp->counts[j];
		const char *name = cfg.attrs[cfg.nevents + j].name;
		if (!v->running) {
			kprintf("count: %s <not counted>\n", name);
		} else if (v->running >= v->enabled) {
			kprintf("count: %s %lu\n", name, v->count);
		} else {
			u64 x100 = pmu_mul_div(v->enabled, 100, v->running);
			u64 pct10 = pmu_mul_div(v->running, 1000, v->enabled);
			kprintf("count: %s %lu (scaled x%lu.%02lu, running %lu.%lu%%)\n", name,
				pmu_scaled(v), x100 / 100, x100 % 100, pct10 / 10, pct10 % 10);
		}
	}
}

void profile_summary(void)
{
	static struct hot table[SUMMARY_SLOTS];
	static u8 buf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));
	u64 total = 0, written = 0, dropped = 0, other = 0;

	if (cfg.ncount && ncpus)
		print_counts();
	trace_summary();			/* one line per traced CPU */
	if (!cfg.nevents)
		return;
	memset(table, 0, sizeof(table));
	for (u32 cpu = 0; cpu < ncpus; cpu++) {
		struct bp_ring_reader r;
		const struct bp_record_header *rec;

		written += cpus[cpu].samples;
		dropped += cpus[cpu].dropped;
		if (bp_ring_reader_init(&r, cpus[cpu].mem,
					(1 + cpus[cpu].mem_pages + cpus[cpu].aux_pages) * PAGE_SIZE))
			continue;
		bp_ring_read_begin(&r);
		while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
			struct bp_sample s;
			u64 off;
			if (rec->type != BP_RECORD_SAMPLE ||
			    bp_sample_parse(cfg.sample_type, rec, &s))
				continue;
			total++;
			u64 func = ksym_lookup(s.ip, &off, NULL) ? s.ip - off : s.ip;
			u32 h = (func >> 4) % SUMMARY_SLOTS, i;
			for (i = 0; i < SUMMARY_SLOTS; i++, h = (h + 1) % SUMMARY_SLOTS)
				if (!table[h].count || table[h].func == func)
					break;
			if (i == SUMMARY_SLOTS) {
				other++;
				continue;
			}
			table[h].func = func;
			table[h].count++;
		}
	}
	/* Written and dropped are the kernel's own totals; the table can only
	 * show what the stream has not taken off the rings yet. */
	kprintf("profile: %s, %lu samples on %u CPU%s, %lu lost%s\n",
		!cfg.soft ? cfg.attrs[0].name : soft_lapic ?
		"cpu-clock (soft PMU: APIC timer interrupts, blind where interrupts are off)" :
		"cpu-clock (soft PMU: HPET NMIs)",
		written, ncpus, ncpus == 1 ? "" : "s", dropped,
		dropped ? " (records dropped, ring full: raise ring_pages= or lower the rate)" : "");
	if (soft && !soft_started) {
		kprintf("profile: ticks due unknown: no HPET counter to count them by\n");
	} else if (soft) {
		u64 sdropped = 0;
		for (u32 cpu = 0; cpu < ncpus; cpu++)
			sdropped += cpus[cpu].samples_dropped;
		u64 due = final_due * ncpus;
		u64 lost = due > written + sdropped ? due - written - sdropped : 0;
		kprintf("profile: %lu ticks due%s (HPET counter): %lu sampled, %lu dropped "
			"(ring full), %lu lost%s\n", final_due, ncpus > 1 ? " on each CPU" : "",
			written, sdropped, lost, lost ? " (NMIs late and merged, or throttled: "
			"LOST_SAMPLES)" : "");
	}
	if (total < written)
		kprintf("  (%lu of them already went to the host: bareperf report has the profile)\n",
			written - total);
	for (int k = 0; k < SUMMARY_TOP && total; k++) {
		struct hot *best = NULL;
		for (u32 i = 0; i < SUMMARY_SLOTS; i++)
			if (table[i].count && (!best || table[i].count > best->count))
				best = &table[i];
		if (!best)
			break;
		const char *name = ksym_lookup(best->func, NULL, NULL);
		u64 pct10 = best->count * 1000 / total;
		kprintf("  %5lu.%lu%%  %8lu  %s\n", pct10 / 10, pct10 % 10, best->count,
			name ? name : "?");
		best->count = 0;
	}
	if (other)
		kprintf("  (%lu samples in functions beyond the summary's table)\n", other);
	for (u32 cpu = 0; ncpus > 1 && cpu < ncpus; cpu++)	/* for the screen console */
		kprintf("  cpu %u: %lu samples, %lu lost\n", cpu, cpus[cpu].samples,
			cpus[cpu].dropped);
}
