/*
 * state.h — the run's state, defined once (state.c), for every file of
 * profile/: the run and each CPU's part of it, the soft PMU's measured
 * floor, the constants they are counted in, and the count of a record
 * that found no room. Its functions call nothing else in profile/.
 */
#ifndef BAREPERF_PROFILE_STATE_H
#define BAREPERF_PROFILE_STATE_H

#include "kernel/kernel.h"
#include "pmu/pmu.h"
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
	u64 took;			/* a sample's average length, TSC ticks << 7 (took.c) */
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
	u64 app_text0, app_text1;	/* its code (APP_START), the kernel's if 0 */
	const void *app_record;		/* written before APP_START, or NULL */
	u32 max_per_tick;		/* samples per tick per CPU; 0 = no limit;
					 * lowered by took.c while the run goes */
	/* The soft PMU's samples against CPU_TIME_MAX_PERCENT (took.c): the
	 * TSC ticks of a run tick sampling may take, the limit on a CPU's
	 * average (cpu_prof.took) at the current max_per_tick, the times it
	 * was lowered, the length that last lowered it and max_per_tick at
	 * the start. */
	u64 took_budget, took_limit, took_when;
	u32 took_lowered, took_max_was;
	/* The run's PMU events: cfg index -> context index (-1: soft), and back. */
	int hw_idx[PMU_MAX_EVENTS], hw_cfg[PMU_MAX_EVENTS], hw_n;
	struct pmu_event_attr hw_attrs[PMU_MAX_EVENTS];
};

extern struct prof_run prof;

/* The run's events, sampled and counted. */
int prof_events_total(void);

/*
 * The soft PMU's handler, timed at boot (profile_init, sample.c): its
 * cost and the shortest cpu-clock period it allows (settings.c refuses
 * shorter ones; 1 until measured); and in TSC ticks, the SAMPLE's part
 * of the cost and the rest (NMI entry and exit, the HPET accesses), which
 * took.c adds to the samples it times.
 */
struct prof_soft_floor {
	u64 cost_ns, floor_ns;
	u64 sample_ticks, rest_ticks;
};

extern struct prof_soft_floor prof_floor;

/* A record that found no room is counted by the ring (and reported in its
 * next LOST record); the kernel keeps its own cumulative count too, so it
 * can say how many were dropped once the stream has emptied the ring.
 * NMI-safe. */
bool prof_dropped_for_room(int err);
void prof_count_drop(struct cpu_prof *cp, int err);

#endif
