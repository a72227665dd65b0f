/*
 * run.h — running apps: a run from start to stop (apps/run.c), from the
 * command line or at the host's request over the stream (apps/control.h,
 * START_RUN in apps/run_request.c).
 * The top of the stack: it drives pmu/ (profile.h) and the stream.
 */
#ifndef BAREPERF_APPS_RUN_H
#define BAREPERF_APPS_RUN_H

#include "kernel/x86.h"
#include "profile/profile.h"

struct app;

/* Run one app, sampled as cfg says, then drain its records to the host.
 * Returns the app's exit code. */
int app_run(const struct app *app, int argc, char **argv, const struct profile_cfg *cfg);
/* The same with the app itself running on CPU cpu (sampling stays driven
 * from this one). */
int app_run_on(u32 cpu, const struct app *app, int argc, char **argv,
	       const struct profile_cfg *cfg);
/* The drain: the run's rings to the host (ringbuf/drain.h), every record
 * of every ring, or with from_tick only rings past their watermark and
 * nothing if the output is busy. Not NMI-safe. */
void run_drain(bool from_tick);
/* A run's settings as the boot command line gives them (events=, count=,
 * period=, freq=, callchain=, ring_pages=, max_rate=, trace=, aux_pages=). */
struct profile_opts run_opts_boot(void);

#endif
