/*
 * profile_internal.h — what the files of a run share; not for use outside
 * profile/ (the run's interface is profile/profile.h):
 *
 *   profile.c    the run: start, the tick, quiesce, stop, the app's window
 *   sample.c     the NMI paths that write SAMPLEs (PMU and soft PMU), and
 *                the measured cost of one (the shortest soft period)
 *   records.c    the other records of a run: metadata, CPU and PMU info,
 *                APP_START/STOP, COUNTS, TICKS, LOST_SAMPLES, THROTTLE
 *   settings.c   a run's settings, parsed and checked
 *   summary.c    the console summary at the end of a run
 */
#ifndef BAREPERF_PROFILE_PROFILE_INTERNAL_H
#define BAREPERF_PROFILE_PROFILE_INTERNAL_H

#include "kernel/kernel.h"
#include "profile/profile.h"
#include "ringbuf/ringbuf.h"

#define SOFT_EVENT_NAME		"cpu-clock"
#define DEFAULT_SOFT_PERIOD_NS	250000ul	/* 4 kHz, perf's default rate */
#define HPET_NS_PER_S		1000000000ul
#define CPU_TIME_MAX_PERCENT	25		/* perf_cpu_time_max_percent */
#define MAX_CPUS_PROF		64

/* One CPU's part of the run. */
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

/* The run (one at a time). */
struct prof_run {
	struct cpu_prof cpus[MAX_CPUS_PROF];
	struct profile_cfg cfg;
	u32 ncpus;
	bool active, soft;
	bool quiesced;		/* the app returned: no more samples this run */
	/* Where the sampling window closed (close_window): the TSC, the HPET
	 * main counter and the soft PMU's ticks due by then. */
	u64 close_tsc, close_hpet, close_due;
	u64 final_due;			/* ticks due on every CPU: close_due, or
					 * later if a sample raced the close */
	u64 soft_period_ns, soft_ticks;	/* soft PMU: period, NMIs from the HPET */
	u64 soft_hpet_period;		/* HPET ticks between expiries */
	u64 soft_posted;		/* expiries posted to the other CPUs */
	bool soft_started;		/* the HPET's NMIs run for this run */
	u64 throttle_window;		/* TSC ticks of one run tick: the rate's measure */
	/* No HPET: the soft PMU samples on each CPU's APIC timer, an ordinary
	 * interrupt at the sampling period; every soft_per_tick-th one is also
	 * the run tick. */
	bool soft_lapic;
	u32 soft_per_tick;
	u64 run_id;
	const char *app_name;		/* the run's app, NULL without one */
	const void *app_main;
	u32 app_cpu1;			/* the CPU that runs it, plus one; 0: not known */
	u32 max_per_tick;		/* samples per tick per CPU; 0 = no limit */
	/* The run's PMU events: cfg index -> context index (-1: soft), and back. */
	int hw_idx[PMU_MAX_EVENTS], hw_cfg[PMU_MAX_EVENTS], hw_n;
	struct pmu_event_attr hw_attrs[PMU_MAX_EVENTS];
};

extern struct prof_run prof;		/* profile.c */
extern struct pmu_caps pmu_boot_caps;	/* cpus.c */

struct trap_frame;

/* profile.c */
int prof_events_total(void);

/* sample.c: the NMI paths (NMI-safe), and the soft PMU's handler cost,
 * measured at boot (profile_init), ns. */
void prof_soft_sample(struct trap_frame *f, u64 tick);
void prof_soft_tick(struct trap_frame *f, void *arg);
bool prof_soft_ipi_nmi(struct trap_frame *f);
bool prof_pmi_nmi(struct trap_frame *f);
void prof_throttled(struct pmu_ctx *ctx, enum pmu_throttle_event ev, void *arg);
u64 profile_soft_cost_ns(void);

/* records.c: each writes into this CPU's ring of the run (or rb), a
 * record that finds no room counted as dropped. NMI-safe unless said. */
void prof_event_value(struct cpu_prof *cp, int i, u64 now, struct pmu_value *v);
bool prof_dropped_for_room(int err);
void prof_count_drop(struct cpu_prof *cp, int err);
int prof_put(struct bp_ring *rb, const void *rec);
void prof_write_throttle(struct cpu_prof *cp, u32 type);
void prof_write_lost_samples(struct cpu_prof *cp, u64 lost);
void prof_write_meta(struct bp_ring *rb);			/* at start, CPU 0's ring */
void prof_write_cpu_records(struct bp_ring *rb, u32 cpu);	/* at start, each CPU */
void prof_app_record(const char *app, u64 time, bool start, s64 status);
void prof_final_counts(struct cpu_prof *cp);			/* at stop */
void prof_write_counts(struct cpu_prof *cp, u32 cpu);
void prof_write_ticks(struct cpu_prof *cp, u32 cpu);

/* settings.c: ns -> HPET ticks without overflow for any period and HPET
 * rate; false if there is no HPET or the result does not fit. */
bool profile_hpet_ticks(u64 ns, u64 *ticks);

#endif
