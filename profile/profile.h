/*
 * profile.h — runs: what apps/ calls to sample and count an app with the
 * drivers of pmu/pmu.h (profile/profile.c and the files it lists in
 * profile/profile_internal.h).
 */
#ifndef BAREPERF_PROFILE_PROFILE_H
#define BAREPERF_PROFILE_PROFILE_H

#include "pmu/pmu.h"
#include "profile/trace.h"

/*
 * A run: per-CPU rings of perf-ABI records (ringbuf/), run
 * metadata, SAMPLE records from PMIs or, where there is no PMU, from the
 * soft PMU ("cpu-clock": HPET NMIs, period in ns), and COUNTS records of
 * counting events at the end.
 *
 * The run tick: every CPU of a run takes the APIC timer at PROFILE_TICK_HZ
 * (vector VEC_APIC_TIMER; the handler is the run's, apps/run.c, and calls
 * profile_tick) for multiplexing rotation, frequency re-tuning and the
 * PMU's unthrottling (the soft PMU measures its rate against the TSC
 * itself, so an app that masks the timer cannot make it throttle). 250 Hz
 * is perf's rotation and throttling interval on a HZ=250 kernel
 * (perf_event_mux_interval_ms).
 */
#define PROFILE_TICK_HZ		250
#define PROFILE_MAX_RATE	100000	/* samples/s per CPU: perf_event_max_sample_rate */

/* Soft events, counted from the TSC (no PMU needed). */
enum profile_soft {
	PROFILE_HW,			/* a PMU event */
	PROFILE_CPU_CLOCK,		/* ns this CPU took part in the run */
	PROFILE_TASK_CLOCK,		/* ns the app ran on this CPU */
	PROFILE_TSC,			/* TSC ticks this CPU took part (QEMU -icount:
					 * instructions retired) */
};

struct bp_ring;
struct trap_frame;

/* A run's settings, whoever asks for the run (the command line, START_RUN). */
struct profile_opts {
	const char *events;		/* events=: "" cycles (cpu-clock without a
					 * PMU; none when count= is given), "none"
					 * no sampling */
	const char *count;		/* count=: counting events, "" (or NULL) none */
	u64 period, freq;		/* of the sampling events; 0: not given */
	bool callchain;			/* frame-pointer call chains in SAMPLEs */
	u32 ring_pages;			/* data pages per CPU ring, 2^n */
	u32 max_rate;			/* samples/s per CPU before throttling; 0: none */
	const char *trace;		/* trace=SPEC: instruction tracing, "" (or NULL) off */
	u32 aux_pages;			/* AUX pages per CPU for the trace */
};

/*
 * A run: nevents sampling events (attrs[0, nevents)), then ncount counting
 * events (attrs[nevents, nevents + ncount)); the event id in records is the
 * index. A run that both samples and counts is one group: every SAMPLE
 * carries READ, the counts of all its events, and its events must fit the
 * counters together (no multiplexing inside a group, as perf schedules a
 * group whole or not at all). Otherwise events beyond the counters are
 * multiplexed.
 */
struct profile_cfg {
	int nevents;			/* sampling events; 0: no sampling */
	int ncount;			/* counting events */
	struct pmu_event_attr attrs[PMU_MAX_EVENTS];
	u8 soft_ev[PMU_MAX_EVENTS];	/* enum profile_soft of each event */
	bool soft;			/* the one sampling event is cpu-clock */
	u64 sample_type;		/* BP_SAMPLE_* */
	u32 ring_pages;			/* data pages per CPU ring, 2^n */
	u32 max_rate;			/* samples/s per CPU; 0: no throttling */
	struct trace_cfg trace;		/* trace=SPEC and aux_pages=, parsed */
};

/* What a run runs: the app's name (APP_START, the summary) and its main,
 * where instruction tracing starts. NULL, or both NULL: a run without an
 * app (a test driving the rings itself). */
struct profile_app {
	const char *name;
	const void *main;
	bool on_cpu;			/* cpu is the CPU that runs main (APP_START says so) */
	u32 cpu;
	u64 text_start, text_end;	/* main's code for APP_START; 0: the kernel's text */
	const void *record;		/* a record each CPU writes before its APP_START
					 * (a loaded program's PROGRAM), or NULL */
};

/* At boot, after the APIC and the HPET: time the soft PMU's NMI handler
 * and derive the shortest cpu-clock period from it (printed). Not NMI-safe. */
void profile_init(void);
u64 profile_soft_floor_ns(void);		/* that period, ns */
/* Turn a run's settings into a run, every one checked: a run that starts
 * has good settings. Sampling events: "" picks cycles (or cpu-clock
 * without a PMU), "none" no sampling. Counting events (count=: the names
 * events= takes, and the soft events tsc, cpu-clock, task-clock): with
 * sampling events too, the run becomes a group (BP_SAMPLE_READ). trace=:
 * trace_parse's, its functions looked up. Returns 0 or an error with err
 * set. */
int profile_parse(const struct profile_opts *o, struct profile_cfg *out, char *err, size_t n);
/* Start the run on every CPU for app (NULL: none). tick handles the run
 * tick's interrupt (VEC_APIC_TIMER) and must call profile_tick; NULL: a
 * handler that only does that. Not NMI-safe. */
int profile_start(const struct profile_cfg *cfg, const struct profile_app *app,
		  void (*tick)(struct trap_frame *f), char *err, size_t n);
/* The app returned: close the run's window if profile_app_exit has not
 * (no more samples; the soft PMU's ticks due are those the HPET counter
 * has passed by now; APP_STOP carries this time). The run's records are
 * then drained before profile_stop writes its stop records. NMI-safe. */
void profile_quiesce(void);
/* Stop: closes the window if still open; each CPU writes its COUNTS, a
 * soft-PMU run's TICKS (and LOST_SAMPLES for the due ticks that gave no
 * sample) and APP_STOP with the exit status. */
void profile_stop(int status);
/* The TSC times of the last run's window on cpu, its APP_START's and
 * APP_STOP's (what the host reports as the app's time): valid after
 * profile_stop, until the next profile_start. False if no such CPU. */
bool profile_window(u32 cpu, u64 *start, u64 *stop);
/* Bracket the app's main on the CPU it runs on (apps/run.c): that CPU's
 * counts cover exactly this window; the other CPUs', and those of runs
 * started without an app, cover the whole run. profile_app_exit closes
 * the run's window, as profile_quiesce. Not NMI-safe. */
void profile_app_enter(void);
void profile_app_exit(void);
/* The run tick on this CPU, from the run's VEC_APIC_TIMER handler after its
 * EOI (interrupt context): the soft PMU's sample where it runs on the APIC
 * timer, the PMU's rotation, frequency and unthrottling, the tracer's
 * restart. False when this interrupt was only a soft-PMU sample (not a
 * run tick) or no run is on. */
bool profile_tick(struct trap_frame *f);
/* The app's main runs on cpu now. */
bool profile_app_running(u32 cpu);
bool profile_active(void);
const struct profile_cfg *profile_config(void);
u32 profile_cpus(void);
struct bp_ring *profile_ring(u32 cpu);		/* NULL if no such CPU */
/* Write a record into this CPU's ring of the run. One that finds no room
 * (or a paused ring) is counted in the run's lost total as a sample is,
 * besides the ring's next LOST record. Returns bp_ring_output's result,
 * BP_ERING_NODATA without a run or a ring here. NMI-safe: yes. */
int profile_output(const void *rec);
/* A write into this CPU's ring of the run failed with err (an AUX record
 * from bp_aux_output_end, say): count a drop as profile_output does.
 * NMI-safe: yes. */
void profile_count_drop(int err);
/* The running app's id (APP_START's app_id, SAMPLE's pid); 0 without a run. */
u32 profile_app_id(void);
u64 profile_samples(u32 cpu);			/* SAMPLE records written */
u64 profile_soft_ticks(void);			/* soft PMU NMIs from the HPET so far */
u64 profile_soft_merged(u32 cpu);		/* ticks that reached a CPU folded into a
						 * later NMI (late), CPU 0's too */
u64 profile_ticks(u32 cpu);			/* run ticks the CPU took */
/* The call chain a SAMPLE records for a sample at frame f on the stack
 * [lo, hi) (the NMI's walk, profile/sample.c): into ips, at most
 * PROFILE_MAX_CALLCHAIN entries, their number returned. NMI-safe: yes. */
#define PROFILE_MAX_CALLCHAIN	32
u32 profile_callchain(const struct trap_frame *f, u64 lo, u64 hi, u64 *ips);
/* Print the hottest functions from the rings (without consuming them), and
 * a "count:" line per counting event of the app's CPU. */
void profile_summary(void);

#endif
