/*
 * profile_internal.h — what the files of a run call in each other; not
 * for use outside profile/ (the run's interface is profile/profile.h):
 *
 *   state.c      the run's state (state.h): defined there once, read by
 *                every file below
 *   profile.c    the run: start, the tick, quiesce, stop, the app's window
 *   sample.c     the NMI paths that write SAMPLEs (PMU and soft PMU), and
 *                the measured cost of one (the shortest soft period)
 *   took.c       the soft PMU's samples timed while a run goes, and its
 *                rate lowered where they take too much of a CPU
 *   records.c    the other records of a run: metadata, CPU and PMU info,
 *                APP_START/STOP, COUNTS, TICKS, LOST_SAMPLES, THROTTLE
 *   settings.c   a run's settings, parsed and checked
 *   summary.c    the console summary at the end of a run
 *   trace.c      the traced run (its own interface, trace.h)
 */
#ifndef BAREPERF_PROFILE_PROFILE_INTERNAL_H
#define BAREPERF_PROFILE_PROFILE_INTERNAL_H

#include "kernel/kernel.h"
#include "profile/profile.h"
#include "profile/state.h"
#include "ringbuf/ringbuf.h"

struct trap_frame;

/* sample.c: the NMI paths. NMI-safe. */
void prof_soft_sample(struct trap_frame *f, u64 tick);
void prof_soft_tick(struct trap_frame *f, void *arg);
void prof_throttled(struct pmu_ctx *ctx, enum pmu_throttle_event ev, void *arg);

/* took.c: the soft PMU's samples timed, and the samples a tick lowered
 * where they take more than CPU_TIME_MAX_PERCENT. prof_took_start at a
 * run's start, after max_per_tick and throttle_window; prof_soft_took
 * after each soft sample, with the TSC prof_soft_sample read at its start
 * (NMI-safe); prof_took_summary in the run's summary. */
void prof_took_start(void);
void prof_took_summary(void);

/* The average is over ~2^TOOK_SHIFT samples; one sample counts at most
 * TOOK_SPIKE averages. Inline: it runs on every soft sample, and
 * prof_took_lower (the average past its limit) almost never. */
#define TOOK_SHIFT	7
#define TOOK_SPIKE	4
void prof_took_lower(struct cpu_prof *cp);

static inline void prof_soft_took(struct cpu_prof *cp, u64 t0)
{
	u64 avg = cp->took >> TOOK_SHIFT, len = rdtsc() - t0;

	cp->took += MIN(len, TOOK_SPIKE * avg) - avg;
	if (cp->took > __atomic_load_n(&prof.took_limit, __ATOMIC_RELAXED))
		prof_took_lower(cp);
}

/* records.c: each writes into this CPU's ring of the run (or rb), a
 * record that finds no room counted as dropped. NMI-safe unless said. */
void prof_event_value(struct cpu_prof *cp, int i, u64 now, struct pmu_value *v);
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
