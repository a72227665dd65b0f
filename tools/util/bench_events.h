/*
 * tools/util/bench_events.h — the events one `bareperf bench` measures:
 * -e's, -config's and -msr_config's lines in the order given, laid out in
 * the runs of the snippet that measure them (one RUN_CODE request each,
 * never multiplexed), and each run's events as the request's parameters
 * (uapi/wire.h: EVENT, EVENT_CTR, EVENT_MSR).
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_EVENTS_H
#define BAREPERF_TOOLS_UTIL_BENCH_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/util/bench_config.h"

/* The events one request measures: the kernel's BENCH_MAX_EVENTS. */
#define BENCH_RUN_EVENTS	4

/* One event as the run sends it. */
struct bench_run_event {
	char spec[32];			/* what the kernel parses: a PMU spec, tsc, msr:0xZ */
	char label[64];			/* the name printed; "" for -e's (the kernel's) */
	char origin[96];		/* where it came from: "-e", "-config FILE:LINE" */
	int line;			/* its line in the file; 0 for -e's */
	bool any;			/* AnyT (in spec already; for --check) */
	bool rdmsr;			/* an -msr_config line: spec is "msr:0xZ" */
	int ctr;			/* -1, or CTR= (BENCH_CTR_FIXED_BASE + N: fixed N) */
	bool alone;			/* TakenAlone: a run of its own */
	int nmsr;			/* MSRs written around it, put back after */
	struct bench_msr_write msr[BENCH_MSR_WRITES];
	int run;			/* bench_events_runs: the run that measures it, from 0 */
};

struct bench_events {
	struct bench_run_event *ev;
	int n, cap;
	int nruns;			/* bench_events_runs' */
};

/* Append one event (-e's: label ""); at: where it goes, 0 to n. Returns
 * the event (its other fields cleared: ctr -1). */
struct bench_run_event *bench_events_insert(struct bench_events *l, int at, const char *spec,
					    const char *label, const char *origin);

/*
 * The lines of path, -config's format or (msr) -msr_config's, appended to
 * l: CTR=, TakenAlone and the MSR fields kept with each event, an
 * -msr_config line's MSR read as the event "msr:0xZ" with its writes.
 * Refused lines are warnings (bench_config_read), counted in *nrefused.
 * Returns 0, or -1 with one line on stderr (the file unread, or no line
 * that parses).
 */
int bench_events_load(struct bench_events *l, const char *path, bool msr, int *nrefused);

/*
 * Lay the events out in runs, in order, as nanoBench groups them: a run
 * holds at most per_run events; a TakenAlone event has one of its own;
 * two events bound to the same counter, or writing one MSR with two
 * values, go to different runs. A run takes the events that follow
 * while they fit, so the results come in the order given. Sets each
 * event's run and l->nruns (1 for no events: the kernel's defaults).
 */
int bench_events_runs(struct bench_events *l, int per_run);

/* The index of run r's first event (l->n past the last run). */
int bench_events_first(const struct bench_events *l, int r);

/*
 * Run r's events as RUN_CODE parameters, from buf + at: each EVENT, then
 * its EVENT_CTR and EVENT_MSRs. Returns the new end, or cap + 1 when they
 * do not fit.
 */
size_t bench_events_put(const struct bench_events *l, int r, uint8_t *buf, size_t at, size_t cap);

void bench_events_free(struct bench_events *l);

#endif
