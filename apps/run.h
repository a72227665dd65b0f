/*
 * run.h — running apps: a run from start to stop (apps/run.c), from the
 * command line or at the host's request over the stream (apps/control.c).
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

/* control=1: serve CONTROL requests until the host sends none for ever;
 * returns an exit code only if the transport fails. */
int control_serve(void);
/* A reply to the request being served (a CONTROL frame, text cut at 512
 * bytes); the last one is OK or ERROR. */
void control_reply(u16 type, const char *text, size_t len);
__printf(2, 3) void control_replyf(u16 type, const char *fmt, ...);

#endif
