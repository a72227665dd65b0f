/*
 * run.c — a run, top to bottom: the kernel hands the machine to run_main
 * once it is up; it runs the app the command line names (or serves the
 * host's requests, apps/control.c, whose START_RUN, apps/run_request.c,
 * comes back here for each run).
 * A run:
 *
 *   start    the stream switches to frames, then pmu/ opens every CPU's
 *            ring and PMU context and starts the run tick (profile_start)
 *   app      the app's main on its CPU, bracketed by profile_app_enter/
 *            exit (the counting window, the tracer)
 *   tick     run_tick, every CPU at PROFILE_TICK_HZ: pmu/'s part, then the
 *            boot CPU drains rings past their watermark
 *   quiesce  the sampling window closes (no more samples)
 *   drain    the rings go to the host, making room
 *   stop     each CPU writes its stop records; the summary; the last drain
 *
 * The ordering rules, each for a reason:
 *  1. stream_start before profile_start: from then on console text goes
 *     out as frames, so the host sees the run's records and its text in
 *     the order they happened.
 *  2. profile_start installs run_tick before any CPU's APIC timer starts.
 *  3. profile_app_enter/exit bracket exactly the app's main, on the CPU it
 *     runs on: that CPU's counts are the app's, not the run's set-up; the
 *     tracer is armed last on enter, so tracing starts at main.
 *  4. The tick never drains while the boot CPU runs the app itself: on a
 *     serial line a drain holds the CPU for as long as the bytes take
 *     (tens of ms at 115200 baud), which would distort what is measured
 *     and let the sampling NMIs overrun the ring anyway. Such a run keeps
 *     its records in the rings (raise ring_pages= for long runs; what does
 *     not fit is counted in LOST records) and is drained when the app
 *     returns.
 *  5. quiesce, drain, then stop: the stop records (COUNTS, TICKS,
 *     APP_STOP) go into rings with room, each preceded by a LOST record
 *     for whatever was dropped, so the host's accounting is complete.
 *  6. The summary reads the rings without consuming them: after stop (the
 *     final counts exist), before the last drain (which empties them).
 */
#include "kernel/kernel.h"
#include "kernel/platform/apic.h"
#include "kernel/stream.h"
#include "kernel/trap.h"
#include "apps/app.h"
#include "apps/control.h"
#include "apps/program.h"
#include "apps/run.h"
#include "profile/profile.h"
#include <uapi/wire.h>

/* VEC_APIC_TIMER during a run, on every CPU of it (interrupt context). */
static void run_tick(struct trap_frame *f)
{
	apic_eoi();
	bool tick = profile_tick(f);
	program_watchdog(f);		/* a loaded program past its time */
	if (!tick)
		return;			/* only a soft-PMU sample, or no run */
	if (this_cpu_id() == 0 && !profile_app_running(0))
		run_drain(true);	/* rule 4 */
}

struct remote_app {
	const struct app *app;
	int argc;
	char **argv;
	int rc;
};

static void remote_main(void *arg)
{
	struct remote_app *r = arg;

	profile_app_enter();		/* rule 3 */
	if (r->app->flags & APP_PROGRAM)
		r->rc = program_main(r->app, r->argc, r->argv);
	else
		r->rc = r->app->main(r->argc, r->argv);
	profile_app_exit();
}

int app_run_on(u32 cpu, const struct app *app, int argc, char **argv,
	       const struct profile_cfg *cfg)
{
	char err[200];
	struct remote_app r = { app, argc, argv, 0 };
	struct profile_app who = { app->name, app->main, .on_cpu = true, .cpu = cpu };

	if (app->flags & APP_PROGRAM)
		program_run_begin(app, &who);
	/* start (rules 1, 2) */
	u64 t0 = rdtsc_ordered();
	stream_start();
	if (profile_start(cfg, &who, run_tick, err, sizeof(err))) {
		kprintf("bareperf: cannot start sampling: %s\n", err);
		return EXIT_USAGE;
	}
	/* the app, while run_tick ticks */
	kprintf("app: %s: start on cpu %u\n", app->name, cpu);
	int e = smp_call(cpu, remote_main, &r, true);
	if (e) {
		kprintf("app: %s: cpu %u: %s\n", app->name, cpu, smp_call_why(e));
		r.rc = EXIT_USAGE;
	}
	int rc = r.rc;
	u64 t1 = rdtsc_ordered();
	/* quiesce, drain, stop (rule 5) */
	profile_quiesce();
	run_drain(false);
	profile_stop(rc);
	/* The host's figure for the app is APP_START to APP_STOP; starting
	 * the run (rings, records, every CPU's set-up) comes before it. */
	u64 w0, w1;
	if (profile_window(cpu, &w0, &w1) && w0 >= t0 && w1 >= w0)
		kprintf("app: %s: exit status %d after %lu TSC ticks (%lu us) from APP_START to "
			"APP_STOP; starting the run took %lu us before\n", app->name, rc, w1 - w0,
			tsc_to_ns(w1 - w0) / 1000, tsc_to_ns(w0 - t0) / 1000);
	else
		kprintf("app: %s: exit status %d after %lu TSC ticks (%lu us), the run's start "
			"included\n", app->name, rc, t1 - t0, tsc_to_ns(t1 - t0) / 1000);
	profile_summary();		/* rule 6 */
	run_drain(false);
	return rc;
}

int app_run(const struct app *app, int argc, char **argv, const struct profile_cfg *cfg)
{
	return app_run_on(this_cpu_id(), app, argc, argv, cfg);
}

struct profile_opts run_opts_boot(void)
{
	return (struct profile_opts){
		.events = kopt.events, .count = kopt.count,
		.period = kopt.period, .freq = kopt.freq,
		.callchain = kopt.callchain, .ring_pages = kopt.ring_pages,
		.max_rate = kopt.max_rate,
		.trace = kopt.trace, .aux_pages = kopt.aux_pages,
	};
}

/* The run the command line asks for. */
static int run_cmdline_app(void)
{
	const struct app *app = app_find(kopt.app);
	char *argv[ARRAY_SIZE(kopt.app_argv) + 1];
	static struct profile_cfg cfg;
	struct profile_opts o = run_opts_boot();
	char err[200];

	if (!app) {
		kprintf("bareperf: no app named '%s'. Apps:\n", kopt.app);
		app_list_print();
		return EXIT_USAGE;
	}
	int e = profile_parse(&o, &cfg, err, sizeof(err));
	if (e) {
		kprintf("bareperf: %s\n", err);
		/* With no PMU, every event refused for want of a device is
		 * refused for want of the PMU (pmu_event_parse). */
		if (e == -E_NODEV && pmu_boot_caps.kind == PMU_KIND_NONE)
			stream_end_reason(WIRE_END_REASON_NO_PMU);
		return EXIT_USAGE;
	}
	argv[0] = (char *)app->name;
	for (int i = 0; i <= kopt.app_argc; i++)
		argv[i + 1] = kopt.app_argv[i];
	u64 t0 = rdtsc_ordered();
	kprintf("boot: kernel entry to app start: %lu TSC ticks (%lu us)\n",
		t0 - boot_tsc_entry, tsc_to_ns(t0 - boot_tsc_entry) / 1000);
	return app_run(app, kopt.app_argc + 1, argv, &cfg);
}

/* What the machine is for (KERNEL_MAIN: the kernel hands over here once it
 * is up): with control=1 the runs the host asks for, else the one run the
 * command line names. */
static int run_main(void)
{
	if (kopt.control)
		return control_serve();
	return run_cmdline_app();
}
KERNEL_MAIN(run_main);
