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
 *   -- smp       every CPU in the run samples itself on every tick
 *   -- lapic     (QEMU -machine hpet=off) no HPET: cpu-clock samples on the
 *                APIC timer as an ordinary interrupt; the run's metadata
 *                says so, the loop is sampled, and a loop run with
 *                interrupts off never is
 *   -- quiet asked=N done=N refused=N
 *                the run's metadata records what turbo=/prefetch= asked
 *                for, what every CPU has and what was refused (BP_QUIET_*)
 *
 * Run with events=none so the test, not kmain, starts and stops sampling.
 */
#include "kernel/kernel.h"
#include "kernel/apic.h"
#include "pmu/pmu.h"
#include "ringbuf/ringbuf.h"
#include "test/guest/report.h"
#include <uapi/perf_ring.h>

#define PERIOD_NS	50000ul
/* QEMU takes an interrupt at the end of a translation block, so a sample's
 * TSC trails its HPET expiry by up to a block's length: the expiries are an
 * exact grid, the samples sit on it within this many instructions. */
#define TB_JITTER	64ul

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
		case BP_RECORD_APP_START: s->app_start++; break;
		case BP_RECORD_APP_STOP: s->app_stop++; break;
		case BP_RECORD_SAMPLE:
			if (bp_sample_parse(cfg->sample_type, rec, &smp))
				break;
			s->samples++;
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

static int start(char *err, size_t n)
{
	static struct profile_cfg cfg;

	err[0] = 0;
	int e = profile_parse("cpu-clock", PERIOD_NS, 0, false, 64, &cfg, err, n);
	return e ? e : profile_start(&cfg, "test_profile", err, n);
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

static void check_smp(void)
{
	char err[160];
	u64 loop = ksym_address("hot_loop"), off, size;

	ksym_lookup(loop, &off, &size);
	report(!start(err, sizeof(err)), "soft PMU sampling starts on %u CPUs (%s)", smp_cpus(), err);
	hot_loop(2000000);
	profile_stop(0);
	u64 ticks = profile_soft_ticks();
	report(profile_cpus() == smp_cpus() && smp_cpus() > 1, "the run covers all %u CPUs",
	       smp_cpus());
	for (u32 cpu = 0; cpu < profile_cpus(); cpu++) {
		struct seen s;
		scan(cpu, 0, ~0ul, loop, size, &s);
		/* The HPET's CPU (0, which started the run) samples every tick;
		 * the others sample each one or account it as lost, and the last
		 * may still be in flight to them at stop. */
		u64 merged = profile_soft_merged(cpu);
		bool counts = cpu ? s.samples + merged <= ticks && s.samples + merged + 1 >= ticks
				  : s.samples == ticks && merged == 0;
		report(s.wrong_cpu == 0 && s.cpu_info == 1 && counts,
		       "cpu %u: %lu samples + %lu reported lost for %lu ticks, all tagged cpu %u",
		       cpu, s.samples, merged, ticks, cpu);
	}
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

static void check_quiet(int argc, char **argv)
{
	char err[160];
	struct seen s;
	u64 asked = 0, done = 0, refused = 0;
	const char *a = test_arg(argc, argv, "asked"), *d = test_arg(argc, argv, "done"),
		   *r = test_arg(argc, argv, "refused");

	report(a && d && r && !parse_u64(a, &asked) && !parse_u64(d, &done) &&
	       !parse_u64(r, &refused), "expectations given: asked=%s done=%s refused=%s", a, d, r);
	report(!start(err, sizeof(err)), "sampling starts (%s)", err);
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

static int test_profile_main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "exact";

	if (!strcmp(what, "exact")) {
		check_exact();
		measure_path();
	}
	else if (!strcmp(what, "smp"))
		check_smp();
	else if (!strcmp(what, "lapic"))
		check_lapic();
	else if (!strcmp(what, "quiet"))
		check_quiet(argc, argv);
	else
		report(false, "unknown mode '%s'", what);
	return report_summary();
}

APP(test_profile, "guest test: soft PMU sampling into the rings", test_profile_main, APP_TEST);
