/*
 * test_count — counting runs, group reads and throttling inside the guest,
 * with the soft events (tsc, cpu-clock, task-clock) that need no PMU. Each
 * mode runs a small app (test_count_work: a dec/jnz loop of N iterations,
 * 2N instructions) through app_run, as the kernel runs any app, and then
 * reads the records it left in the rings.
 *
 *   -- exact     (-icount shift=0: the TSC counts retired instructions)
 *                count=tsc,cpu-clock,task-clock: one COUNTS record, the
 *                app's window exactly: two runs differ by exactly the
 *                instructions their loops differ by; cpu-clock and
 *                task-clock are that window in ns. Also measures the run
 *                tick's cost in instructions.
 *   -- smp       the app on CPU 1 of 2: one COUNTS record per CPU, the
 *                app's CPU counting its window, the other the whole run
 *   -- read      events=cpu-clock with count=tsc,cpu-clock is a group:
 *                every SAMPLE carries READ with the three counts, exact
 *                against the sample's own time
 *   -- throttle  (max_rate= on the command line) a soft-PMU rate above it
 *                is throttled to max_rate / PROFILE_TICK_HZ samples per
 *                tick, with THROTTLE and UNTHROTTLE records
 *
 * Run with events=none, so the test, not kmain, starts and stops the runs.
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "apps/run.h"
#include "profile/profile.h"
#include "ringbuf/ringbuf.h"
#include "test/guest/report.h"
#include <uapi/perf_ring.h>

#define PERIOD_NS	50000ul
#define TB_JITTER	64ul		/* see test_profile.c */

static u64 __attribute__((noipa)) spin(u64 n)
{
	asm volatile("1: dec %0; jnz 1b" : "+r"(n));
	return n;
}

static int work_main(int argc, char **argv)
{
	u64 n = 1000;

	if (argc > 1)
		parse_u64(argv[1], &n);
	spin(n ? n : 1);
	return EXIT_OK;
}

APP(test_count_work, "guest test: a counted dec/jnz loop (argument: iterations)", work_main,
    APP_TEST);

static u8 buf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));

/* What one CPU's ring holds after a run. */
struct seen {
	u32 counts_records, desc, throttle, unthrottle, samples, read_bad, read_samples;
	struct bp_record_counts counts;
	struct bp_count_entry entry[PMU_MAX_EVENTS];
	struct bp_record_event_desc descs[PMU_MAX_EVENTS];
	u64 app_start, app_stop;
	u32 order_bad;			/* THROTTLE/UNTHROTTLE out of turn, samples while throttled */
	bool throttled;
	u64 tsc_prev, regular, read_pairs;
};

static void scan(u32 cpu, struct seen *s)
{
	struct bp_ring_reader r;
	const struct bp_record_header *rec;
	const struct profile_cfg *cfg = profile_config();

	memset(s, 0, sizeof(*s));
	if (!profile_ring(cpu) || bp_ring_reader_init(&r, (u8 *)profile_ring(cpu)->ctl,
						       (1 + cfg->ring_pages) * PAGE_SIZE))
		return;
	bp_ring_read_begin(&r);
	while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
		struct bp_sample smp;
		switch (rec->type) {
		case BP_RECORD_COUNTS: {
			const struct bp_record_counts *c = (const void *)rec;
			s->counts_records++;
			s->counts = *c;
			if (c->nr <= PMU_MAX_EVENTS &&
			    rec->size == sizeof(*c) + c->nr * sizeof(struct bp_count_entry))
				memcpy(s->entry, c + 1, c->nr * sizeof(struct bp_count_entry));
			else
				s->counts.nr = ~0ul;
			break;
		}
		case BP_RECORD_EVENT_DESC:
			if (s->desc < PMU_MAX_EVENTS)
				s->descs[s->desc] = *(const struct bp_record_event_desc *)rec;
			s->desc++;
			break;
		case BP_RECORD_APP_START:
			s->app_start = ((const struct bp_record_app_start *)rec)->time;
			break;
		case BP_RECORD_APP_STOP:
			s->app_stop = ((const struct bp_record_app_stop *)rec)->time;
			break;
		case BP_RECORD_THROTTLE:
			s->throttle++;
			s->order_bad += s->throttled;
			s->throttled = true;
			break;
		case BP_RECORD_UNTHROTTLE:
			s->unthrottle++;
			s->order_bad += !s->throttled;
			s->throttled = false;
			break;
		case BP_RECORD_SAMPLE:
			if (bp_sample_parse(cfg->sample_type, rec, &smp))
				break;
			s->samples++;
			s->order_bad += s->throttled;	/* no sample while throttled */
			if (!(cfg->sample_type & BP_SAMPLE_READ))
				break;
			/* READ: ids 0 (the sampler, cpu-clock), 1 tsc, 2 cpu-clock. */
			s->read_samples++;
			if (smp.nr_group != 3 || smp.group[0].config != BP_CONFIG_SOFT_CPU_CLOCK ||
			    smp.group[1].config != BP_CONFIG_SOFT_TSC ||
			    smp.group[2].config != BP_CONFIG_SOFT_CPU_CLOCK) {
				s->read_bad++;
				break;
			}
			u64 tsc = smp.group[1].count;
			s->read_bad += tsc != smp.time - s->app_start ||
				       smp.time_enabled != tsc || smp.time_running != tsc ||
				       smp.group[2].count != tsc_to_ns(tsc) ||
				       smp.group[0].count != smp.group[2].count;
			if (s->tsc_prev) {
				u64 d = tsc - s->tsc_prev;
				s->read_pairs++;
				s->regular += d + TB_JITTER >= PERIOD_NS && d <= PERIOD_NS + TB_JITTER;
			}
			s->tsc_prev = tsc;
			break;
		}
	}
}

/* Throttle accounting by a second pass: samples per UNTHROTTLE interval. */
static void budgets(u32 cpu, u32 budget, u32 *full, u32 *over, u32 *intervals)
{
	struct bp_ring_reader r;
	const struct bp_record_header *rec;
	const struct profile_cfg *cfg = profile_config();
	u32 n = 0;

	*full = *over = *intervals = 0;
	if (bp_ring_reader_init(&r, (u8 *)profile_ring(cpu)->ctl, (1 + cfg->ring_pages) * PAGE_SIZE))
		return;
	bp_ring_read_begin(&r);
	while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
		if (rec->type == BP_RECORD_SAMPLE) {
			n++;
		} else if (rec->type == BP_RECORD_THROTTLE) {
			*full += n == budget;
			*over += n > budget;
			(*intervals)++;
		} else if (rec->type == BP_RECORD_UNTHROTTLE) {
			n = 0;
		}
	}
	*over += n > budget;
}

static int run_app(const char *name, u32 cpu, const char *events, u64 period, const char *count,
		   u64 iters, char *err, size_t n)
{
	static struct profile_cfg cfg;
	static char arg[24];
	char *argv[3] = { (char *)name, arg, NULL };
	const struct app *app = app_find(name);

	ksnprintf(arg, sizeof(arg), "%lu", iters);
	err[0] = 0;
	struct profile_opts o = run_opts_boot();
	o.events = events, o.count = count, o.period = period, o.freq = 0;
	o.callchain = false, o.ring_pages = 64;
	int e = profile_parse(&o, &cfg, err, n);
	if (e)
		return e;
	return app_run_on(cpu, app, 2, argv, &cfg);
}

static int run(u32 cpu, const char *events, u64 period, const char *count, u64 iters,
	       char *err, size_t n)
{
	return run_app("test_count_work", cpu, events, period, count, iters, err, n);
}

/* The TSC window of the app in the COUNTS record of cpu, or 0. */
static u64 tsc_count(const struct seen *s)
{
	return s->counts_records == 1 && s->counts.nr == 3 ? s->entry[0].count : 0;
}

static void check_exact(void)
{
	char err[160];
	struct seen s;
	const u64 n1 = 1000, n2 = 3000;

	report(!run(0, "none", 0, "tsc,cpu-clock,task-clock", n1, err, sizeof(err)),
	       "a counting run of tsc,cpu-clock,task-clock (%s)", err);
	scan(0, &s);
	report(s.counts_records == 1 && s.counts.nr == 3 && s.counts.cpu == 0,
	       "one COUNTS record with 3 entries (%u records)", s.counts_records);
	report(s.desc == 3 && s.descs[0].sample_period == 0 && s.descs[1].sample_period == 0 &&
	       !strcmp(s.descs[0].name, "tsc") && !strcmp(s.descs[2].name, "task-clock") &&
	       s.descs[0].config == BP_CONFIG_SOFT_TSC, "EVENT_DESC for each, sample_period 0");
	bool ids = true, times = true;
	for (int i = 0; i < 3; i++) {
		ids &= s.entry[i].id == (u64)i;
		times &= s.entry[i].time_enabled == s.entry[0].count &&
			 s.entry[i].time_running == s.entry[0].count;
	}
	report(ids && times, "entries are ids 0..2, time_enabled = time_running = the TSC window");
	u64 t = s.entry[0].count;
	report(s.entry[1].count == tsc_to_ns(t) && s.entry[2].count == tsc_to_ns(t),
	       "cpu-clock and task-clock are the window in ns (%lu ns for %lu TSC ticks)",
	       s.entry[1].count, t);
	report(t > 2 * n1 && t < s.app_stop - s.app_start,
	       "the window holds the loop and lies inside the run (%lu < %lu)", t,
	       s.app_stop - s.app_start);

	/* Under icount one TSC tick per instruction: runs of n1 and n2
	 * iterations differ by exactly 2 (n2 - n1). A run tick inside a
	 * window adds its own instructions: try again (deterministic here). */
	u64 a = 0, b = 0;
	int tries;
	for (tries = 1; tries <= 3; tries++) {
		run(0, "none", 0, "tsc,cpu-clock,task-clock", n1, err, sizeof(err));
		scan(0, &s);
		a = tsc_count(&s);
		run(0, "none", 0, "tsc,cpu-clock,task-clock", n2, err, sizeof(err));
		scan(0, &s);
		b = tsc_count(&s);
		if (b - a == 2 * (n2 - n1))
			break;
	}
	report(b - a == 2 * (n2 - n1),
	       "exact: %lu and %lu iterations count %lu and %lu TSC ticks, %lu apart (%d tries)",
	       n1, n2, a, b, b - a, tries);
	kprintf("count: exact: the window is the loop's %lu instructions + %lu of call, "
		"return and hooks\n", 2 * n1, a - 2 * n1);
}

/* The run tick's cost: the largest TSC jump in a loop that only reads
 * the TSC, less the loop's step, while a counting run ticks. */
static u64 gap_big, gap_small;

static int __attribute__((noipa)) gap_main(int argc, char **argv)
{
	u64 prev = rdtsc(), big = 0, small = ~0ul;

	(void)argc, (void)argv;
	for (u64 i = 0; i < 3000000; i++) {
		u64 t = rdtsc(), d = t - prev;
		big = MAX(big, d);
		small = MIN(small, d);
		prev = t;
	}
	gap_big = big;
	gap_small = small;
	return EXIT_OK;
}

APP(test_count_gap, "guest test: the largest TSC gap in a loop", gap_main, APP_TEST);

static void measure_tick(void)
{
	char err[160];

	run_app("test_count_gap", 0, "none", 0, "tsc", 0, err, sizeof(err));
	u64 ticks = profile_ticks(0);
	report(ticks > 0 && gap_big > gap_small, "the run tick fired %lu times during the loop",
	       ticks);
	kprintf("count: run tick: %lu instructions from the interrupted loop back to it "
		"(counting run, boot CPU, stream off)\n", gap_big - gap_small);
}

static void check_smp(void)
{
	char err[160];
	struct seen s0, s1;

	if (smp_cpus() < 2) {
		report_skip("needs 2 CPUs");
		return;
	}
	report(!run(1, "none", 0, "tsc,cpu-clock,task-clock", 200000, err, sizeof(err)),
	       "a counting run with the app on cpu 1 (%s)", err);
	scan(0, &s0);
	scan(1, &s1);
	report(s0.counts_records == 1 && s1.counts_records == 1 && s0.counts.cpu == 0 &&
	       s1.counts.cpu == 1, "one COUNTS record on each CPU");
	report(s1.entry[0].count >= 400000 && s1.entry[2].count == tsc_to_ns(s1.entry[0].count),
	       "cpu 1 (the app's) counts its window: %lu TSC ticks, task-clock %lu ns",
	       s1.entry[0].count, s1.entry[2].count);
	report(s0.entry[0].count > s1.entry[0].count && s0.entry[2].count == 0 &&
	       s0.entry[0].count == s0.app_stop - s0.app_start,
	       "cpu 0 counts the whole run (%lu TSC ticks, APP_START to APP_STOP), task-clock 0",
	       s0.entry[0].count);
}

static void check_read(void)
{
	char err[160];
	struct seen s;

	report(!run(0, "cpu-clock", PERIOD_NS, "tsc,cpu-clock", 2500000, err, sizeof(err)),
	       "a group run: events=cpu-clock count=tsc,cpu-clock (%s)", err);
	const struct profile_cfg *cfg = profile_config();
	report(cfg->sample_type & BP_SAMPLE_READ, "its samples carry READ");
	scan(0, &s);
	report(s.desc == 3 && s.descs[0].flags == BP_EVENT_F_LEADER && s.descs[2].group_id == 0 &&
	       s.descs[1].sample_period == 0, "EVENT_DESC: id 0 leads the group of 3");
	report(s.read_samples > 50 && s.read_bad == 0,
	       "%u samples, each with the 3 counts, tsc exactly its time since APP_START",
	       s.read_samples);
	report(s.regular == s.read_pairs,
	       "tsc in consecutive samples %lu +- %lu apart (%lu of %lu)", PERIOD_NS, TB_JITTER,
	       s.regular, s.read_pairs);
	report(s.counts_records == 1 && s.counts.nr == 2 && s.entry[0].id == 1,
	       "COUNTS has the 2 counting events, ids 1 and 2");
	/* What a sample with READ costs: the largest gap in a TSC loop. */
	run_app("test_count_gap", 0, "cpu-clock", PERIOD_NS, "tsc,cpu-clock", 0, err, sizeof(err));
	kprintf("count: soft PMU sample with READ of 3 events: %lu instructions from NMI entry "
		"to iret\n", gap_big - gap_small);
}

static void check_throttle(void)
{
	char err[160];
	struct seen s;
	u32 budget = kopt.max_rate ? (kopt.max_rate + PROFILE_TICK_HZ - 1) / PROFILE_TICK_HZ : 0;
	const u64 period = 20000;	/* 50000 samples/s */

	if (!budget || budget >= 1000000000ul / period / PROFILE_TICK_HZ) {
		report_skip("max_rate=%u does not throttle %lu samples/s", kopt.max_rate,
			    1000000000ul / period);
		return;
	}
	u64 h0 = profile_soft_ticks();
	report(!run(0, "cpu-clock", period, "", 10000000, err, sizeof(err)),
	       "sampling at %lu samples/s with max_rate=%u (%s)", 1000000000ul / period,
	       kopt.max_rate, err);
	scan(0, &s);
	u32 full, over, intervals;
	budgets(0, budget, &full, &over, &intervals);
	u64 nmis = profile_soft_ticks() - h0;
	report(s.throttle >= 3 && s.unthrottle + 1 >= s.throttle && s.order_bad == 0,
	       "%u THROTTLE, %u UNTHROTTLE, alternating, no sample while throttled",
	       s.throttle, s.unthrottle);
	report(full == intervals && over == 0,
	       "every throttled tick took exactly %u samples (%u of %u)", budget, full, intervals);
	report(s.samples < nmis, "%u samples for %lu soft-PMU NMIs", s.samples, nmis);
}

static int test_count_main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "exact";

	if (!strcmp(what, "exact")) {
		check_exact();
		measure_tick();
	} else if (!strcmp(what, "smp")) {
		check_smp();
	} else if (!strcmp(what, "read")) {
		check_read();
	} else if (!strcmp(what, "throttle")) {
		check_throttle();
	} else {
		report(false, "unknown mode '%s'", what);
	}
	return report_summary();
}

APP(test_count, "guest test: counting runs, group reads, throttling", test_count_main, APP_TEST);
