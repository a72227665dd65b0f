/*
 * trace.h — the traced run: trace= parsed, the per-CPU trace buffers (the
 * AUX areas of a run's rings), the traced call and the single-step #DB
 * handler (profile/trace.c), over the two producers: the single-step
 * tracer (pmu/trace/itrace.h) and Intel PT (pmu/trace/pt.h).
 */
#ifndef BAREPERF_PROFILE_TRACE_H
#define BAREPERF_PROFILE_TRACE_H

#include "pmu/trace/itrace.h"
#include "pmu/trace/pt.h"

enum trace_kind {
	TRACE_OFF = 0,
	TRACE_SSTEP,			/* single-step (#DB) tracer */
	TRACE_PT,			/* Intel Processor Trace */
};

struct trace_cfg {
	enum trace_kind kind;
	uint64_t lo, hi;		/* [lo, hi); 0, ~0 = everything */
	char spec[64];			/* as given, for messages */
	uint32_t aux_pages;		/* AUX area pages per CPU (2^n) */
};

/*
 * Parse the trace= option: [sstep:|pt:]all|FUNC|START-END, where FUNC is
 * a function name and START, END are addresses (0x...) or function names
 * (END names the function whose end closes the range). "" or "off": no
 * tracing. pt: where Intel PT is absent fails with the reason and the
 * offer of the single-step tracer. Kernel only (resolves symbols).
 */
int trace_parse(const char *spec, uint32_t aux_pages, struct trace_cfg *out, char *err,
		size_t n);

/*
 * profile/profile.c's hooks. trace_run_prepare(): this run's tracing, as
 * trace_parse made it (profile_parse); returns the AUX pages per CPU to
 * set up, 0 without tracing. trace_cpu_attach/detach run on each CPU of
 * the run (smp_call_all): the ring's AUX area is this CPU's trace buffer
 * until detach. Not NMI-safe.
 */
uint32_t trace_run_prepare(const struct trace_cfg *cfg);
void trace_cpu_attach(struct bp_ring *rb, uint32_t run_id);
void trace_cpu_detach(void);

/*
 * The app of a traced run (profile/profile.c calls these around app->main on
 * the app's CPU): trace_app_enter arms the tracer and sets RFLAGS.TF; the
 * single-step handler ignores the few instructions until entry (the app's
 * main; NULL: a run without an app, nothing traced) begins, traces until main returns (to the return address and stack
 * pointer its call left), and clears TF there. Intel PT is switched on
 * and off instead. trace_app_exit writes a pending END (waiting up to 2 s
 * for the drain to make room) and stops PT. Not NMI-safe.
 */
void trace_app_enter(const void *entry);
void trace_app_exit(void);
/* The run tick on each CPU: restarts Intel PT paused by a full AUX area
 * once the drain has made room (the single-step tracer retries by
 * itself). Interrupt context, not NMI-safe. */
void trace_tick(void);

/*
 * Run fn(a0, a1) traced on this CPU by the single-step tracer into rb's
 * AUX area, instructions in [lo, hi) (0, ~0: all), independently of any
 * run (guest tests use it with rings of their own). Untraced if a traced
 * call is already running here. Returns fn's result; *st, if not NULL,
 * gets the producer's counts. Not NMI-safe; interrupts keep their state
 * and are not traced.
 */
long trace_call_ring(struct bp_ring *rb, uint64_t lo, uint64_t hi,
		     long (*fn)(long, long), long a0, long a1, struct itrace_stats *st);
/* The same with the run's configuration and ring (untraced without one). */
long trace_call(long (*fn)(long, long), long a0, long a1);
bool trace_running(void);		/* a traced call is running on this CPU */
const struct trace_cfg *trace_config(void);
/* The single-step producer of this CPU's last traced call. */
const struct itrace_cpu *trace_producer(void);

/* The producer's counts for cpu (software tracer), NULL if none. */
const struct itrace_stats *trace_stats(uint32_t cpu);
/* One line per CPU on the console: steps, bytes, pauses. */
void trace_summary(void);

#endif
