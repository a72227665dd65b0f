/*
 * bench_internal.h — what the harness's files (apps/bench*.c) share
 * between them and nothing else: the resolved events, the LVT entries
 * masked while measuring, a BENCH record and a table row.
 */
#ifndef BAREPERF_APPS_BENCH_INTERNAL_H
#define BAREPERF_APPS_BENCH_INTERNAL_H

#include "apps/bench.h"
#include "pmu/pmu.h"

/* apps/bench_refuse.c: say why bench_run fails (bench_refusal, the console). */
void __attribute__((format(printf, 1, 2))) bench_refuse(const char *fmt, ...);
/* A new run: no refusal yet. */
void bench_refuse_clear(void);

/* apps/bench_events.c */
struct bench_event {
	char name[BENCH_NAME_MAX];
	bool tsc;
	bool rdmsr;			/* "msr:0xZ": MSR msr read around each run */
	u32 msr;
	struct pmu_event_attr attr;
	const struct bench_event_opts *x;	/* its counter and MSRs (o->event_opts) */
	char refused[120];		/* not "": refused alone, this is why */
};
/* The events to measure: o->events, or the defaults (cycles and
 * instructions with a usable PMU, else tsc); their number or -E_*. An
 * event refused alone (its counter, its MSRs) has refused set instead. */
int bench_resolve_events(const struct bench_opts *o, struct bench_event *ev);
/* Does the active run program the hardware PMU (sampling or counting)? */
bool bench_run_uses_pmu(void);

/* apps/bench_msr.c: an event's MSR writes (x; NULL: none), made before
 * it is measured on this CPU and put back after. bench_msr_apply writes
 * them in order, each old value read into old first; on a fault it puts
 * back what it wrote, says why and returns -E_FAULT. */
int bench_msr_apply(const struct bench_event_opts *x, u64 *old, char *why, size_t len);
void bench_msr_restore(const struct bench_event_opts *x, const u64 *old);
/* "msr:0xZ" as an event: e->rdmsr, Z into e->msr, which must read
 * without a fault (else e->refused says so). 0, or -E_INVAL: not such a
 * name. */
int bench_msr_event(struct bench_event *e);

/* apps/bench_lvt.c */
/* LVT entries held masked while measuring (SDM Vol. 3A 11.5.1). */
struct lvt_state {
	u32 timer, therm, pc, error;
	bool has_therm, mask_pc;
};
void bench_lvt_mask(struct lvt_state *s);
void bench_lvt_restore(const struct lvt_state *s);

/* apps/bench_records.c: result r of b as a BENCH record in this CPU's
 * ring (drain: the stream may drain to make room). */
void bench_write_record(const struct bench *b, const struct bench_result *r, bool drain);

/* apps/bench_table.c: result r of b as a row of its table. */
void bench_print_row(const struct bench *b, const struct bench_opts *o,
		     const struct bench_result *r);

#endif
