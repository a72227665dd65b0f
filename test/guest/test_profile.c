/*
 * test_profile — sampling end to end inside the guest: the soft PMU
 * (cpu-clock, HPET NMIs) samples a known loop and the SAMPLE records in the
 * per-CPU rings are checked.
 *
 *   -- exact     (under -icount shift=0, where the TSC counts retired
 *                instructions and virtual nanoseconds) every sample taken
 *                while the loop ran has its IP inside it, there is one per
 *                HPET expiry, and consecutive ones are exactly one period
 *                apart
 *   -- smp       every CPU in the run samples itself on every tick, or
 *                counts the tick lost: samples + dropped + lost = ticks due
 *   -- throttle  (icount) above max_rate sampling is throttled, and the
 *                ticks it skipped are counted lost, exactly
 *   -- masked    (icount) below max_rate, an APIC timer masked for longer
 *                than the throttle's budget lasts throttles nothing
 *   -- took      (icount) samples that take more than 25% of a CPU at the
 *                shortest period lower the samples a tick as the run goes
 *   -- lapic     (QEMU -machine hpet=off) no HPET: cpu-clock samples on the
 *                APIC timer as an ordinary interrupt; the run's metadata
 *                says so, the loop is sampled, and a loop run with
 *                interrupts off never is
 *   -- cost      (icount) what one soft-PMU sample costs the code it
 *                interrupts, NMI entry to iret, in instructions: without a
 *                call chain and with an 8-frame one (make bench's
 *                soft_pmi_insn_per_sample lines, test/bench_guest.py)
 *   -- irq       (icount) a sample taken inside an interrupt's handler
 *                has in its call chain the function the interrupt hit,
 *                between the handler's frames and that function's callers
 *   -- frameless a sample's call chain from a function hit before its
 *                frame is set up (at its push %rbp, before its mov %rsp,
 *                %rbp) or at its ret names its caller, on synthetic
 *                stacks, as profile/sample.c builds it
 *   -- quiet asked=N done=N refused=N
 *                the run's metadata records what turbo=/prefetch= asked
 *                for, what every CPU has and what was refused (BP_QUIET_*)
 *
 * The HPET modes check each CPU's TICKS record against what its ring holds:
 * the SAMPLE records, the LOST_SAMPLES total and the ticks due, which must
 * match the time the window lasted.
 *
 * Run with events=none so the test, not kmain, starts and stops sampling.
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "apps/run.h"
#include "kernel/platform/apic.h"
#include "kernel/trap.h"
#include "profile/profile.h"
#include "ringbuf/ringbuf.h"
#include "test/guest/report.h"
#include <uapi/perf_ring.h>

#define PERIOD_NS	50000ul
/* Runs without -icount: the soft PMU's shortest period (its measured
 * handler time x4, 25% of a CPU) is 52 us on a quiet host under TCG and
 * reached 66 us on a loaded one. */
#define TCG_PERIOD_NS	(4 * PERIOD_NS)
/* QEMU takes an interrupt at the end of a translation block, so a sample's
 * TSC trails its HPET expiry by up to a block's length: the expiries are an
 * exact grid, the samples sit on it within this many instructions. */
#define TB_JITTER	64ul
#define HPET_NS_PER_S_TEST	1000000000ul

static u64 __attribute__((noipa)) hot_loop(u64 n)
{
	u64 x = 1;

	for (u64 i = 0; i < n; i++)
		asm volatile("imul $3, %0, %0; add %1, %0" : "+r"(x) : "r"(i));
	return x;
}

static u8 buf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));
static struct bp_record_run_meta last_meta;
static bool have_meta;

static const struct bp_record_run_meta *profile_last_meta(void)
{
	return have_meta ? &last_meta : NULL;
}

struct seen {
	u64 samples, in_window, in_loop, regular, meta, cpu_info, app_start, app_stop;
	u32 meta_flags;
	u64 first_time, last_time, wrong_cpu;
	u64 lost_samples, lost_records, lost_wrong_cpu, throttle, unthrottle;
	u64 first_sample, start_time, stop_time;	/* TSC: first SAMPLE, APP_START, APP_STOP */
	struct bp_record_ticks ticks;
	u64 nticks;
};

static void scan(u32 cpu, u64 t0, u64 t1, u64 loop, u64 loop_size, struct seen *s)
{
	struct bp_ring_reader r;
	const struct bp_record_header *rec;
	const struct profile_cfg *cfg = profile_config();

	memset(s, 0, sizeof(*s));
	if (bp_ring_reader_init(&r, (u8 *)profile_ring(cpu)->ctl,
				(1 + cfg->ring_pages) * PAGE_SIZE))
		return;
	bp_ring_read_begin(&r);
	while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
		struct bp_sample smp;
		switch (rec->type) {
		case BP_RECORD_RUN_META:
			s->meta++;
			s->meta_flags = ((const struct bp_record_run_meta *)rec)->flags;
			last_meta = *(const struct bp_record_run_meta *)rec;
			have_meta = true;
			break;
		case BP_RECORD_CPU_INFO: s->cpu_info++; break;
		case BP_RECORD_APP_START:
			s->app_start++;
			s->start_time = ((const struct bp_record_app_start *)rec)->time;
			break;
		case BP_RECORD_APP_STOP:
			s->app_stop++;
			s->stop_time = ((const struct bp_record_app_stop *)rec)->time;
			break;
		case BP_RECORD_THROTTLE: s->throttle++; break;
		case BP_RECORD_UNTHROTTLE: s->unthrottle++; break;
		case BP_RECORD_TICKS:
			memcpy(&s->ticks, rec, sizeof(s->ticks));
			s->nticks++;
			break;
		case BP_RECORD_LOST_SAMPLES: {
			const struct bp_record_lost_samples *l = (const void *)rec;
			const struct bp_sample_id *id = (const void *)(l + 1);
			s->lost_records++;
			s->lost_samples += l->lost;
			s->lost_wrong_cpu += rec->size < sizeof(*l) + sizeof(*id) ||
					     id->cpu != cpu;
			break;
		}
		case BP_RECORD_SAMPLE:
			if (bp_sample_parse(cfg->sample_type, rec, &smp))
				break;
			s->samples++;
			if (!s->first_sample)
				s->first_sample = smp.time;
			s->wrong_cpu += smp.cpu != cpu;
			if (smp.time <= t0 || smp.time >= t1)
				break;
			s->in_window++;
			s->in_loop += smp.ip >= loop && smp.ip < loop + loop_size;
			if (s->last_time && smp.time - s->last_time <= PERIOD_NS + TB_JITTER &&
			    smp.time - s->last_time >= PERIOD_NS - TB_JITTER)
				s->regular++;
			if (!s->first_time)
				s->first_time = smp.time;
			s->last_time = smp.time;
			break;
		}
	}
}

/* A cpu-clock run at period_ns, with call chains or not; max_rate: the
 * boot's, or this limit. */
static int start_ring(u64 period_ns, const u32 *max_rate, bool callchain, u32 ring_pages,
		      char *err, size_t n)
{
	static struct profile_cfg cfg;

	err[0] = 0;
	struct profile_opts o = run_opts_boot();
	o.events = "cpu-clock", o.count = "", o.period = period_ns, o.freq = 0;
	o.callchain = callchain, o.ring_pages = ring_pages;
	if (max_rate)
		o.max_rate = *max_rate;
	int e = profile_parse(&o, &cfg, err, n);
	return e ? e : profile_start(&cfg, &(struct profile_app){ .name = "test_profile" }, NULL,
				     err, n);
}

static int start_chain(u64 period_ns, const u32 *max_rate, bool callchain, char *err, size_t n)
{
	return start_ring(period_ns, max_rate, callchain, 64, err, n);
}

static int start_rate(u64 period_ns, const u32 *max_rate, char *err, size_t n)
{
	return start_chain(period_ns, max_rate, false, err, n);
}

static int start_period(u64 period_ns, char *err, size_t n)
{
	return start_rate(period_ns, NULL, err, n);
}

static int start(char *err, size_t n)
{
	return start_period(PERIOD_NS, err, n);
}

/*
 * The CPU's account (TICKS) against its ring: the samples it holds, the
 * LOST_SAMPLES it holds (each tagged with the CPU), samples + dropped +
 * lost = due, due = the whole periods in the window, and due against
 * the time the window lasted by the TSC, from cpu 0's APP_START (start)
 * to APP_STOP: never more than fits in it (bar the TSC's and the HPET's
 * rates differing), and under icount (exact) within a tick of it. Not
 * under icount the HPET may start long after APP_START: on a busy host a
 * vCPU can stall there for tens of ms.
 */
static void check_account(u32 cpu, const struct seen *s, u64 start, u64 period_ns, bool exact)
{
	const struct bp_record_ticks *t = &s->ticks;
	u64 ns = s->stop_time > start ? tsc_to_ns(s->stop_time - start) : 0;
	u64 want = ns / period_ns;
	u64 first = t->hpet_hz ? t->period * HPET_NS_PER_S_TEST / t->hpet_hz : 0;

	report(s->nticks == 1 && t->cpu == cpu && t->samples == s->samples &&
	       t->lost == s->lost_samples && s->lost_wrong_cpu == 0,
	       "cpu %u: TICKS matches the ring: %lu samples, %lu lost in %lu LOST_SAMPLES "
	       "(ring: %lu, %lu)", cpu, t->samples, t->lost, s->lost_records, s->samples,
	       s->lost_samples);
	report(t->samples + t->dropped + t->lost == t->due && t->due > 0,
	       "cpu %u: %lu samples + %lu dropped + %lu lost = %lu ticks due", cpu, t->samples,
	       t->dropped, t->lost, t->due);
	report(first == period_ns && t->period && t->due == t->window / t->period &&
	       t->due <= want + 1 + want / 200 && (!exact || t->due + 1 >= want),
	       "cpu %u: %lu ticks due in %lu HPET ticks, %lu%s by the TSC: APP_START to "
	       "APP_STOP %lu ns, a tick every %lu ns", cpu, t->due, t->window, want,
	       exact ? " +-1" : " at most", ns, first);
}

static void check_exact(void)
{
	char err[160];
	u64 loop = ksym_address("hot_loop"), off, size;

	ksym_lookup(loop, &off, &size);
	report(!start(err, sizeof(err)), "soft PMU sampling starts (%s)", err);
	u64 ticks0 = profile_soft_ticks(), t0 = rdtsc();
	hot_loop(2000000);
	u64 t1 = rdtsc(), ticks1 = profile_soft_ticks();
	profile_stop(0);

	struct seen s;
	scan(0, t0, t1, loop, size, &s);
	report(s.meta == 1 && s.cpu_info == 1 && s.app_start == 1 && s.app_stop == 1,
	       "ring holds the run metadata, CPU info, app start and stop");
	report(s.in_window > 50, "%lu samples while the loop ran", s.in_window);
	report(s.in_window == ticks1 - ticks0,
	       "one sample per HPET NMI during the loop (%lu samples, %lu NMIs)",
	       s.in_window, ticks1 - ticks0);
	report(s.in_loop == s.in_window, "every one of them has its IP in hot_loop (%lu of %lu)",
	       s.in_loop, s.in_window);
	report(s.regular == s.in_window - 1,
	       "consecutive samples %lu +- %lu TSC ticks apart (%lu of %lu intervals)",
	       PERIOD_NS, TB_JITTER, s.regular, s.in_window - 1);
	u64 span = s.last_time - s.first_time, want = (s.in_window - 1) * PERIOD_NS;
	report(span + TB_JITTER >= want && span <= want + TB_JITTER,
	       "no drift: first to last sample %lu TSC ticks for %lu periods", span,
	       s.in_window - 1);
	report(bp_ring_lost(profile_ring(0)) == 0, "nothing lost");
	/* Under icount every tick is taken in time: every one due is a sample. */
	check_account(0, &s, s.start_time, PERIOD_NS, true);
	report(s.ticks.lost == 0 && s.lost_records == 0 && s.ticks.samples == s.ticks.due &&
	       s.samples == s.ticks.due, "every tick due gave a sample: %lu of %lu, none lost",
	       s.samples, s.ticks.due);
	kprintf("profile: exact: %lu samples in hot_loop over %lu TSC ticks\n", s.in_window, t1 - t0);
}

/*
 * The whole cost of one soft-PMU sample, NMI entry to iret (HPET re-arm and
 * one IP+TID+TIME+ID+CPU+PERIOD SAMPLE included): the largest jump of the
 * TSC between two iterations of a loop that only reads it, less the
 * loop's own step. Under icount the TSC counts instructions.
 */
static void __attribute__((noipa)) max_gap(u64 n, u64 *gap, u64 *step)
{
	u64 prev = rdtsc(), big = 0, small = ~0ul;

	for (u64 i = 0; i < n; i++) {
		u64 t = rdtsc(), d = t - prev;
		big = MAX(big, d);
		small = MIN(small, d);
		prev = t;
	}
	*gap = big;
	*step = small;
}

static void measure_path(void)
{
	char err[160];
	u64 gap, step;

	if (start(err, sizeof(err)))
		return;
	max_gap(200000, &gap, &step);
	profile_stop(0);
	report(gap > step, "soft PMU sample path measured");
	kprintf("profile: soft PMU NMI path: %lu instructions from NMI entry to iret "
		"(one SAMPLE of IP TID TIME ID CPU PERIOD)\n", gap - step);
}

/*
 * make bench's figure: every jump of the TSC above the loop's own step in a
 * loop that only reads it is one sample's whole cost (the HPET re-arm, the
 * SAMPLE, and the entry and exit); the median of COST_GAPS of them, with
 * their spread. Under icount the TSC counts instructions.
 */
#define COST_GAPS	64

struct cost {
	u64 median, lo, hi, n, step;
};

static void sort_u64(u64 *v, u64 n)
{
	for (u64 i = 1; i < n; i++)
		for (u64 j = i; j && v[j - 1] > v[j]; j--) {
			u64 t = v[j];
			v[j] = v[j - 1], v[j - 1] = t;
		}
}

static void __attribute__((noipa)) gaps(struct cost *c)
{
	static u64 g[COST_GAPS];
	u64 prev = rdtsc(), small = ~0ul, n = 0;

	for (u64 i = 0; i < 4000000 && n < COST_GAPS; i++) {
		u64 t = rdtsc(), d = t - prev;
		small = MIN(small, d);
		if (d > 16 * small)
			g[n++] = d;
		prev = t;
	}
	sort_u64(g, n);
	*c = (struct cost){ .n = n, .step = small };
	if (n)
		c->median = g[n / 2] - small, c->lo = g[0] - small, c->hi = g[n - 1] - small;
}

/* gaps() under `depth` more frames: noipa keeps each one a real call with
 * its own frame, and the add after the call keeps it from being a tail
 * call. cut: the outermost of them hides the frames above it from the
 * frame walk (its saved frame pointer reads 0 while gaps() runs, which
 * ends a walk as the bottom of a shallower stack would), so that the
 * chains are as deep as asked whatever the app's own depth. */
static u64 __attribute__((noipa)) nest(u32 depth, bool cut, struct cost *c)
{
	volatile u64 *fp = __builtin_frame_address(0);
	u64 saved = fp[0], r = 0;

	if (cut)
		fp[0] = 0;
	if (!depth)
		gaps(c);
	else
		r = nest(depth - 1, false, c) + 1;
	fp[0] = saved;
	return r;
}

/* The depth of the call chains in cpu 0's ring (the last SAMPLE's). */
static u64 chain_depth(void)
{
	struct bp_ring_reader r;
	const struct bp_record_header *rec;
	const struct profile_cfg *cfg = profile_config();
	u64 nr = 0;

	if (bp_ring_reader_init(&r, (u8 *)profile_ring(0)->ctl, (1 + cfg->ring_pages) * PAGE_SIZE))
		return 0;
	bp_ring_read_begin(&r);
	while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
		struct bp_sample smp;
		if (rec->type == BP_RECORD_SAMPLE && !bp_sample_parse(cfg->sample_type, rec, &smp))
			nr = smp.nr_ips;
	}
	bp_ring_read_end(&r);
	return nr;
}

static bool cost_run(bool callchain, u32 depth, bool cut, struct cost *c, u64 *frames)
{
	char err[160];

	if (start_chain(PERIOD_NS, NULL, callchain, err, sizeof(err))) {
		report(false, "soft PMU sampling starts (%s)", err);
		return false;
	}
	nest(depth, cut, c);
	profile_stop(0);
	*frames = callchain ? chain_depth() : 0;
	return c->n > 0;
}

#define COST_FRAMES	8

static void measure_cost(void)
{
	struct cost c, g;
	u64 frames, nr;

	if (!cost_run(false, 0, false, &c, &frames) || !cost_run(true, 0, true, &g, &nr))
		return;
	/* nr frames at depth 0: each level of nest() adds one. */
	u32 depth = nr < COST_FRAMES ? COST_FRAMES - nr : 0;
	if (!cost_run(true, depth, true, &g, &frames))
		return;
	report(c.n == COST_GAPS && g.n == COST_GAPS && frames == COST_FRAMES,
	       "soft PMU sample cost measured: %lu and %lu samples, %lu-frame chains", c.n, g.n,
	       frames);
	kprintf("profile: cost: %lu instructions NMI entry to iret (median of %lu, %lu..%lu, "
		"loop step %lu), no call chain\n", c.median, c.n, c.lo, c.hi, c.step);
	kprintf("profile: cost_g: %lu instructions NMI entry to iret (median of %lu, %lu..%lu, "
		"loop step %lu), %lu-frame call chain\n", g.median, g.n, g.lo, g.hi, g.step, frames);
}

static void check_smp(void)
{
	char err[160];
	u64 loop = ksym_address("hot_loop"), off, size;

	ksym_lookup(loop, &off, &size);
	report(!start_period(TCG_PERIOD_NS, err, sizeof(err)), "soft PMU sampling starts on %u CPUs (%s)",
	       smp_cpus(), err);
	hot_loop(2000000);
	profile_stop(0);
	u64 ticks = profile_soft_ticks();
	report(profile_cpus() == smp_cpus() && smp_cpus() > 1, "the run covers all %u CPUs",
	       smp_cpus());
	u64 due = 0, start0 = 0;
	for (u32 cpu = 0; cpu < profile_cpus(); cpu++) {
		struct seen s;
		scan(cpu, 0, ~0ul, loop, size, &s);
		if (!cpu)
			start0 = s.start_time;
		report(s.wrong_cpu == 0 && s.cpu_info == 1,
		       "cpu %u: %lu samples, all tagged cpu %u (%lu HPET NMIs on cpu 0)", cpu,
		       s.samples, cpu, ticks);
		check_account(cpu, &s, start0, TCG_PERIOD_NS, false);
		report(!cpu || s.ticks.due == due, "cpu %u: the same ticks due as cpu 0 (%lu)", cpu,
		       due);
		if (!cpu)
			due = s.ticks.due;
	}
}

/* Sampling at more than max_rate: throttled, with every tick it skipped
 * counted lost. 20 kHz against 2000/s: a 4 ms window takes the 8 samples
 * a tick allows, then skips 72 ticks. */
static void check_throttle(void)
{
	char err[160];
	const u32 rate = 2000;
	struct seen s;

	report(!start_rate(PERIOD_NS, &rate, err, sizeof(err)),
	       "soft PMU at 20 kHz, max_rate=2000 (%s)", err);
	hot_loop(10000000);
	profile_stop(0);
	scan(0, 0, ~0ul, 0, 0, &s);
	check_account(0, &s, s.start_time, PERIOD_NS, true);
	u64 per_window = (2000 + PROFILE_TICK_HZ - 1) / PROFILE_TICK_HZ;
	report(s.throttle > 1 && s.unthrottle + 1 >= s.throttle &&
	       s.ticks.throttled == s.ticks.lost && s.ticks.lost > s.samples,
	       "throttled %lu times (%lu unthrottled): %lu samples, %lu ticks skipped and "
	       "counted lost", s.throttle, s.unthrottle, s.samples, s.ticks.throttled);
	report(s.samples <= (s.throttle + 1) * per_window && s.samples >= s.throttle * per_window,
	       "%lu samples in %lu throttle windows of %lu", s.samples, s.throttle + 1, per_window);
}

/*
 * An app that masks the APIC timer (apps/bench.c does, for a whole
 * benchmark) stops the run tick. At 4 kHz against max_rate 100000 the
 * rate is 25 times below the limit: no throttling however long the tick
 * stays away (perf's 400-a-tick budget is spent after 100 ms of it).
 */
static void check_masked(void)
{
	char err[160];
	struct seen s;

	report(!start_period(250000, err, sizeof(err)), "soft PMU at 4 kHz, max_rate=%u (%s)",
	       kopt.max_rate, err);
	u32 lvt = apic_read(APIC_LVT_TIMER);
	apic_write(APIC_LVT_TIMER, lvt | APIC_LVT_MASKED);
	u64 t0 = rdtsc();
	hot_loop(60000000);
	u64 t1 = rdtsc();
	apic_write(APIC_LVT_TIMER, lvt);
	profile_stop(0);
	scan(0, 0, ~0ul, 0, 0, &s);
	check_account(0, &s, s.start_time, 250000, true);
	report(tsc_to_ns(t1 - t0) > 150000000ul && s.throttle == 0 && s.ticks.lost == 0 &&
	       s.samples == s.ticks.due,
	       "timer masked for %lu ms at 4 kHz: %lu samples, %lu THROTTLE, %lu lost",
	       tsc_to_ns(t1 - t0) / 1000000, s.samples, s.throttle, s.ticks.lost);
}

/* What interrupts took from a loop of n TSC reads: a read that trails
 * the last by more than 16 of the smallest steps was held up. */
struct stolen {
	u64 gaps, ticks, total;		/* interruptions, their TSC ticks, the loop's */
};

static void __attribute__((noipa)) stolen(u64 n, struct stolen *st)
{
	u64 t0 = rdtsc(), prev = t0, small = ~0ul;

	*st = (struct stolen){ 0 };
	for (u64 i = 0; i < n; i++) {
		u64 t = rdtsc(), d = t - prev;
		small = MIN(small, d);
		if (d > 16 * small)
			st->gaps++, st->ticks += d - small;
		prev = t;
	}
	st->total = prev - t0;
}

/* stolen() under `depth` more frames; the barrier keeps each call a call
 * (no tail call, no loop). */
static u64 __attribute__((noipa)) deep(u32 depth, u64 n, struct stolen *st)
{
	if (!depth) {
		stolen(n, st);
		return 0;
	}
	u64 r = deep(depth - 1, n, st);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

#define TOOK_FRAMES	32	/* the deepest chain a SAMPLE holds */
#define TOOK_READS	600000	/* ~15 ms under icount: four run ticks or so */
#define TOOK_RING_PAGES	512	/* every sample and the TICKS record fit */
#define TOOK_SLOW	10	/* the first run's period: this many times longer */
#define TOOK_SHARE_MAX	32	/* % of the loop the samples may take: 25%; the
				 * NMI's entry and exit, which the run takes
				 * from the boot's hot figure (here ~8% short);
				 * the first tick, before the average rose */

/* A run at period_ns of samples with TOOK_FRAMES-deep chains over the
 * loop; its ring's account in *s, the loop's in *st. */
static bool took_run(u64 period_ns, struct seen *s, struct stolen *st)
{
	char err[160];
	const u32 unlimited = 0;

	if (start_ring(period_ns, &unlimited, true, TOOK_RING_PAGES, err, sizeof(err))) {
		report(false, "soft PMU at %lu ns, call chains, no max_rate (%s)", period_ns, err);
		return false;
	}
	deep(TOOK_FRAMES, TOOK_READS, st);
	profile_stop(0);
	scan(0, 0, ~0ul, 0, 0, s);
	check_account(0, s, s->start_time, period_ns, false);
	return true;
}

/*
 * At the shortest period the boot allows, with the deepest call chains and
 * no max_rate, the run's samples take far more than the 25% of a CPU the
 * boot's hot, shallow one promised. A first run, TOOK_SLOW times slower,
 * measures what one such sample takes from the loop; in the second the
 * samples a tick must be lowered while the run goes, the ticks beyond them
 * throttled (THROTTLE records, TICKS' throttled), and the samples taken
 * must cost the loop about 25% of its time. The throttled ticks' NMIs
 * still come (the HPET keeps firing) and are not counted in that share.
 */
static void check_took(void)
{
	u64 period = (profile_soft_floor_ns() + 999) / 1000 * 1000;
	struct stolen a, b;
	struct seen s;

	if (!took_run(TOOK_SLOW * period, &s, &a) || !took_run(period, &s, &b))
		return;
	u64 each = a.gaps ? a.ticks / a.gaps : 0, share = s.samples * each * 100 / b.total;
	report(a.gaps && s.throttle > 0 && s.ticks.throttled > 0 &&
	       s.ticks.throttled == s.ticks.lost,
	       "at %lu ns: sampling lowered, throttled %lu times (%lu unthrottled), %lu "
	       "samples, %lu ticks skipped and counted throttled", period, s.throttle,
	       s.unthrottle, s.samples, s.ticks.throttled);
	report(share <= TOOK_SHARE_MAX, "%lu samples of %lu TSC ticks each (the last: %lu frames) "
	       "took %lu%% of the loop's %lu (at most %d%%)", s.samples, each, chain_depth(),
	       share, b.total, TOOK_SHARE_MAX);
}

static u64 __attribute__((noipa)) cli_loop(u64 n)
{
	u64 x = 1;

	irq_disable();
	for (u64 i = 0; i < n; i++)
		asm volatile("imul $3, %0, %0; add %1, %0" : "+r"(x) : "r"(i));
	irq_enable();
	return x;
}

static void check_lapic(void)
{
	char err[160];
	u64 loop = ksym_address("hot_loop"), cli = ksym_address("cli_loop"), off, size, cli_size;
	struct seen s, c;

	ksym_lookup(loop, &off, &size);
	ksym_lookup(cli, &off, &cli_size);
	report(!start(err, sizeof(err)), "cpu-clock sampling starts without an HPET (%s)", err);
	u64 t0 = rdtsc();
	hot_loop(2000000);
	u64 t1 = rdtsc();
	cli_loop(2000000);
	u64 t2 = rdtsc();
	profile_stop(0);
	scan(0, t0, t1, loop, size, &s);
	scan(0, t1, t2, cli, cli_size, &c);
	report(s.meta == 1 && (s.meta_flags & BP_META_SOFT_PMU) && (s.meta_flags & BP_META_SOFT_LAPIC),
	       "the run's metadata says: soft PMU on the APIC timer (flags %#x)", s.meta_flags);
	report(s.in_window > 20 && s.in_loop * 10 >= s.in_window * 9,
	       "%lu samples while the loop ran, %lu with the IP in hot_loop", s.in_window, s.in_loop);
	report(c.in_loop == 0, "none in a loop that runs with interrupts off (%lu)", c.in_loop);
	report(profile_soft_ticks() == 0, "no HPET NMIs (%lu)", profile_soft_ticks());
	report(bp_ring_lost(profile_ring(0)) == 0, "nothing lost");
}

#define VEC_TEST_IRQ	0x70
#define IRQ_SPIN	20000ul		/* the handler's loop: about 70 us under icount */
#define IRQ_RAISES	300

static u64 irq_taken;

static u64 __attribute__((noipa)) irq_spin(u64 n)
{
	u64 x = 1;

	for (u64 i = 0; i < n; i++)
		asm volatile("imul $3, %0, %0; add %1, %0" : "+r"(x) : "r"(i));
	return x;
}

/* Most of the time is spent here, inside the interrupt, where the
 * samples land. */
static void irq_handler(struct trap_frame *f)
{
	(void)f;
	irq_spin(IRQ_SPIN);
	irq_taken++;
	apic_eoi();
}

/* The function the interrupt hits: it raises the interrupt with
 * interrupts off, so that the interrupt is taken here, just after sti,
 * never inside apic_send_ipi. */
static u64 __attribute__((noipa)) irq_victim(u32 n)
{
	u64 x = 1;

	for (u32 i = 0; i < n; i++) {
		irq_disable();
		apic_send_ipi(apic_id(), APIC_DM_FIXED | VEC_TEST_IRQ);
		irq_enable();
		asm volatile("imul $3, %0, %0; add %1, %0" : "+r"(x) : "r"((u64)i));
	}
	return x;
}

static bool in_func(u64 ip, u64 start, u64 size)
{
	return ip >= start && ip < start + size;
}

static void print_chain(const struct bp_sample *smp)
{
	kprintf("profile: a chain from inside the handler:");
	for (u64 i = 0; i < smp->nr_ips; i++) {
		u64 off;
		const char *name = ksym_lookup(smp->ips[i] - (i > 0), &off, NULL);
		kprintf(" %s", name ? name : "?");
	}
	kprintf("\n");
}

static void check_irq(void)
{
	char err[160];
	u64 spin = ksym_address("irq_spin"), victim = ksym_address("irq_victim"), off;
	u64 spin_size, victim_size, in_handler = 0, missed = 0;
	struct bp_ring_reader r;
	const struct bp_record_header *rec;

	ksym_lookup(spin, &off, &spin_size);
	ksym_lookup(victim, &off, &victim_size);
	trap_set_handler(VEC_TEST_IRQ, irq_handler);
	report(!start_chain(PERIOD_NS, NULL, true, err, sizeof(err)),
	       "cpu-clock sampling with call chains starts (%s)", err);
	irq_victim(IRQ_RAISES);
	profile_stop(0);
	trap_set_handler(VEC_TEST_IRQ, NULL);
	report(irq_taken == IRQ_RAISES, "the interrupt was taken %lu times", irq_taken);

	const struct profile_cfg *cfg = profile_config();
	if (bp_ring_reader_init(&r, (u8 *)profile_ring(0)->ctl, (1 + cfg->ring_pages) * PAGE_SIZE))
		return;
	bp_ring_read_begin(&r);
	while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
		struct bp_sample smp;
		if (rec->type != BP_RECORD_SAMPLE || bp_sample_parse(cfg->sample_type, rec, &smp) ||
		    !in_func(smp.ip, spin, spin_size))
			continue;
		bool hit = false;
		for (u64 i = 1; i < smp.nr_ips; i++)
			hit |= in_func(smp.ips[i], victim, victim_size);
		if (!in_handler || (!hit && !missed))
			print_chain(&smp);
		in_handler++;
		missed += !hit;
	}
	bp_ring_read_end(&r);
	report(in_handler >= 20, "%lu samples inside the handler", in_handler);
	report(!missed, "%lu of them have irq_victim, the function interrupted, in their chain",
	       in_handler - missed);
}

static void check_quiet(int argc, char **argv)
{
	char err[160];
	struct seen s;
	u64 asked = 0, done = 0, refused = 0;
	const char *a = test_arg(argc, argv, "asked"), *d = test_arg(argc, argv, "done"),
		   *r = test_arg(argc, argv, "refused");

	report(a && d && r && !parse_u64(a, &asked) && !parse_u64(d, &done) &&
	       !parse_u64(r, &refused), "expectations given: asked=%s done=%s refused=%s", a, d, r);
	report(!start_period(TCG_PERIOD_NS, err, sizeof(err)), "sampling starts (%s)", err);
	profile_stop(0);
	scan(0, 0, ~0ul, 0, 0, &s);
	const struct bp_record_run_meta *m = profile_last_meta();
	report(s.meta == 1 && m, "the run has its metadata");
	if (!m)
		return;
	report(m->quiet_asked == asked && m->quiet_done == done && m->quiet_refused == refused,
	       "metadata: quiet asked %#x done %#x refused %#x (expected %#lx %#lx %#lx)",
	       m->quiet_asked, m->quiet_done, m->quiet_refused, asked, done, refused);
}

/*
 * A callee with its prologue's two instructions apart, as GCC schedules
 * them, and a caller that calls it through a register (so that its return
 * address is not found as a direct call's, leaf_return_of).
 */
asm(".pushsection .text\n"
    ".globl frameless_callee\n"
    ".type frameless_callee, @function\n"
    "frameless_callee:\n"
    "	push %rbp\n"			/* +0 */
    "	nop\n"				/* +1 */
    "	mov %rsp, %rbp\n"		/* +2 */
    "	nop\n"				/* +5 */
    "	pop %rbp\n"			/* +6 */
    "	ret\n"				/* +7 */
    ".size frameless_callee, . - frameless_callee\n"
    ".globl frameless_caller\n"
    ".type frameless_caller, @function\n"
    "frameless_caller:\n"
    "	push %rbp\n"
    "	mov %rsp, %rbp\n"
    "	lea frameless_callee(%rip), %rax\n"
    "	call *%rax\n"
    ".globl frameless_caller_ret\n"
    "frameless_caller_ret:\n"
    "	pop %rbp\n"
    "	ret\n"
    ".size frameless_caller, . - frameless_caller\n"
    ".popsection\n");
void frameless_callee(void);
void frameless_caller(void);
extern const char frameless_caller_ret[];

/* The chain profile/sample.c records for an NMI at rip with sp and rbp,
 * on a stack of [lo, hi). */
static u32 sample_chain(u64 rip, u64 *sp, u64 rbp, u64 lo, u64 hi, u64 *ips, u32 max)
{
	u64 ret = frameless_return_of(rip, sp, rbp);

	ips[0] = rip;
	return ret ? 1 + bp_callchain_fp(ret, rbp, lo, hi, ips + 1, max - 1)
		   : bp_callchain_fp(rip, rbp, lo, hi, ips, max);
}

/*
 * A sample inside a handler (interrupts off) whose trap hit the callee
 * after its push %rbp: the walk goes through the handler's frame and
 * trap_dispatch's to the trap's entry frame (kernel/isr.asm: the
 * interrupted RBP and RIP, the trap frame above it), and from there the
 * callee's caller must follow the callee as at a sample's own RIP, by
 * profile_callchain, the NMI's own walk. The stack as the trap left it:
 *   hs[0]   the handler's frame: hs[2], a return address into it
 *   hs[2]   trap_dispatch's: hs[4], isr_frame_return
 *   hs[4]   the entry frame: the interrupted RBP (hs[34]) and RIP
 *   hs[6]   the trap frame, 24 words
 *   hs[31]  the interrupted stack: the callee's pushed RBP, its return
 *           address into the caller
 *   hs[34]  the caller's frame, hs[36] its caller's, the last.
 */
static void check_frameless_trapped(void)
{
	static u64 hs[40] __attribute__((aligned(16)));
	const u64 f = (u64)frameless_callee, ret_c = (u64)frameless_caller_ret;
	const u64 ret_h = (u64)measure_cost + 1, ret_b = (u64)check_irq + 1;
	const u64 ret_a = (u64)check_quiet + 1, isr_ret = (u64)isr_frame_return;
	struct trap_frame *tf = (struct trap_frame *)&hs[6], in_handler = { 0 };
	u64 ips[PROFILE_MAX_CALLCHAIN];

	_Static_assert(6 + sizeof(struct trap_frame) / 8 <= 31, "the trap frame fits below hs[31]");
	memset(hs, 0, sizeof(hs));
	hs[0] = (u64)&hs[2], hs[1] = ret_h;
	hs[2] = (u64)&hs[4], hs[3] = isr_ret;
	hs[4] = (u64)&hs[34], hs[5] = f + 1;
	tf->rip = f + 1, tf->rbp = (u64)&hs[34], tf->rsp = (u64)&hs[31], tf->rflags = RFLAGS_IF;
	hs[31] = (u64)&hs[34], hs[32] = ret_c;
	hs[34] = (u64)&hs[36], hs[35] = ret_b;
	hs[37] = ret_a;
	/* The handler's RIP: no push %rbp or ret there, and the stack's
	 * top word no return address. */
	in_handler.rip = ret_c;
	in_handler.rsp = in_handler.rbp = (u64)&hs[0];
	u32 n = profile_callchain(&in_handler, (u64)hs, (u64)(hs + 40), ips);
	report(n == 7 && ips[0] == ret_c && ips[1] == ret_h && ips[2] == isr_ret && ips[3] == f + 1 &&
	       ips[4] == ret_c && ips[5] == ret_b && ips[6] == ret_a,
	       "a sample in a handler whose trap hit a prologue: the chain goes on through the "
	       "trap to the callee, its caller, their callers (%u entries: %lx %lx %lx %lx %lx "
	       "%lx %lx; caller's return %lx)", n, ips[0], ips[1], ips[2], ips[3],
	       n > 4 ? ips[4] : 0, n > 5 ? ips[5] : 0, n > 6 ? ips[6] : 0, ret_c);
}

static void check_frameless(void)
{
	static u64 stk[8] __attribute__((aligned(16)));
	const u64 f = (u64)frameless_callee, ret_c = (u64)frameless_caller_ret;
	const u64 ret_b = (u64)check_irq + 1, ret_a = (u64)check_quiet + 1;
	const u64 lo = (u64)stk, hi = (u64)(stk + 8);
	static const struct { const char *where; u32 off; u32 sp; u32 rbp; } cases[] = {
		{ "at its push %rbp", 0, 2, 4 },
		{ "after its push %rbp", 1, 1, 4 },
		{ "at its mov %rsp, %rbp", 2, 1, 4 },
		{ "with its frame set up", 5, 1, 1 },
		{ "at its ret", 7, 2, 4 },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		u64 ips[8];
		/* The caller's frame at stk[4], its caller's at stk[6]; the
		 * return address into the caller at stk[2], the pushed RBP
		 * below it. */
		memset(stk, 0, sizeof(stk));
		stk[1] = (u64)&stk[4];
		stk[2] = ret_c;
		stk[4] = (u64)&stk[6];
		stk[5] = ret_b;
		stk[7] = ret_a;
		u32 n = sample_chain(f + cases[i].off, &stk[cases[i].sp], (u64)&stk[cases[i].rbp],
				     lo, hi, ips, ARRAY_SIZE(ips));
		report(n == 4 && ips[0] == f + cases[i].off && ips[1] == ret_c && ips[2] == ret_b &&
		       ips[3] == ret_a,
		       "a sample %s: the chain is callee, caller, its callers (%u entries: %lx %lx "
		       "%lx %lx; caller's return %lx)", cases[i].where, n, ips[0], n > 1 ? ips[1] : 0,
		       n > 2 ? ips[2] : 0, n > 3 ? ips[3] : 0, ret_c);
	}
	/* What the NMI reads in a set-up frame is not taken for a return. */
	report(frameless_return_of(f + 5, &stk[1], (u64)&stk[1]) == 0,
	       "no return address taken from a frame that is set up");
	check_frameless_trapped();
}

static int test_profile_main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "exact";

	if (!strcmp(what, "exact")) {
		check_exact();
		measure_path();
	}
	else if (!strcmp(what, "cost"))
		measure_cost();
	else if (!strcmp(what, "smp"))
		check_smp();
	else if (!strcmp(what, "throttle"))
		check_throttle();
	else if (!strcmp(what, "masked"))
		check_masked();
	else if (!strcmp(what, "took"))
		check_took();
	else if (!strcmp(what, "lapic"))
		check_lapic();
	else if (!strcmp(what, "irq"))
		check_irq();
	else if (!strcmp(what, "frameless"))
		check_frameless();
	else if (!strcmp(what, "quiet"))
		check_quiet(argc, argv);
	else
		report(false, "unknown mode '%s'", what);
	return report_summary();
}

APP(test_profile, "guest test: soft PMU sampling into the rings", test_profile_main, APP_TEST);
