/*
 * bench.c — the microbenchmark harness's measurement: nanoBench's n / 2n
 * unrolling, serialized counter reads, repetitions retried around NMIs and
 * SMIs, and their statistics, for each event on each CPU asked for. See
 * bench.h; its refusals, the options, events (and what the TSC counts),
 * LVT masking, records and tables are bench_refuse.c, bench_opts.c,
 * bench_events.c, bench_lvt.c, bench_records.c and bench_table.c.
 */
#include "apps/bench_internal.h"
#include "kernel/percpu.h"
#include "profile/profile.h"

static u64 __attribute__((noinline)) measure_tsc(bench_fn fn, void *arg, u64 count)
{
	u64 t0 = rdtsc_ordered();
	fn(arg, count);
	return rdtsc_ordered() - t0;
}

static u64 __attribute__((noinline)) measure_pmc(bench_fn fn, void *arg, u64 count, u32 ecx)
{
	u64 c0 = rdpmc(ecx);		/* lfence; rdpmc; lfence */
	fn(arg, count);
	return rdpmc(ecx) - c0;
}

/* The same where LFENCE is not known to serialize (pmu_cpu_lfence_serializes):
 * cpuid on either side of each read. */
static u64 __attribute__((noinline)) measure_tsc_cpuid(bench_fn fn, void *arg, u64 count)
{
	u64 t0 = rdtsc_cpuid();
	fn(arg, count);
	return rdtsc_cpuid() - t0;
}

static u64 __attribute__((noinline)) measure_pmc_cpuid(bench_fn fn, void *arg, u64 count, u32 ecx)
{
	u64 c0 = rdpmc_cpuid(ecx);
	fn(arg, count);
	return rdpmc_cpuid(ecx) - c0;
}

/* An msr: event's MSR read around the run, ordered the same two ways. */
static u64 __attribute__((noinline)) measure_msr(bench_fn fn, void *arg, u64 count, u32 msr,
						 bool by_cpuid)
{
	u64 c0 = by_cpuid ? rdmsr_cpuid(msr) : rdmsr_ordered(msr);
	fn(arg, count);
	return (by_cpuid ? rdmsr_cpuid(msr) : rdmsr_ordered(msr)) - c0;
}

static u64 measure(const struct bench_event *e, bool by_cpuid, bench_fn fn, void *arg, u64 count,
		   u32 ecx)
{
	if (e->rdmsr)
		return measure_msr(fn, arg, count, e->msr, by_cpuid);
	if (e->tsc)
		return by_cpuid ? measure_tsc_cpuid(fn, arg, count) : measure_tsc(fn, arg, count);
	return by_cpuid ? measure_pmc_cpuid(fn, arg, count, ecx) : measure_pmc(fn, arg, count, ecx);
}


static s64 (*smi_reader)(const struct pmu_caps *caps);	/* bench_test_smi_reader */

void bench_test_smi_reader(s64 (*read)(const struct pmu_caps *caps))
{
	smi_reader = read;
}

static s64 smi_read(const struct pmu_caps *caps)
{
	return smi_reader ? smi_reader(caps) : pmu_smi_count(caps);
}

/* One (bench, CPU) job; the arrays are static: bench_run is not reentrant
 * and runs one CPU at a time. */
struct job {
	const struct bench *b;
	const struct bench_event *ev;
	int nev;
	u32 reps, warmup;
	bool records, drain;
	u16 agg;
	struct bench_result *res;	/* nev results for this CPU */
	int err;
};

static u64 m_n[BENCH_MAX_REPS], m_2n[BENCH_MAX_REPS], scratch[3 * BENCH_MAX_REPS];
static bool m_hit[BENCH_MAX_REPS];	/* repetition i was kept with an NMI or SMI in it */
static struct pmu_ctx bench_pmu;
/* What a measurement holds while it runs, for bench_abandon: the MSRs
 * its event wrote (msr, their old values) too. */
static struct {
	bool pmu_on, lvt_on;
	struct lvt_state lvt;
	const struct bench_event_opts *msr;
	u64 msr_old[BENCH_EVENT_MSRS];
} held;

void bench_abandon(void)
{
	if (held.lvt_on)
		bench_lvt_restore(&held.lvt);
	if (held.pmu_on)
		pmu_stop(&bench_pmu);
	if (held.msr)
		bench_msr_restore(held.msr, held.msr_old);
	held.lvt_on = held.pmu_on = false;
	held.msr = NULL;
}

/* e on a counter of this CPU's (a hybrid's E-core lacks some of the
 * P-core's), started: rdpmc's ECX and the counter's width into *ecx and
 * *width_mask. 0, or -E_* with the refusal said. */
static int open_counter(const struct bench *b, const struct bench_event *e, u32 *ecx,
			u64 *width_mask)
{
	const struct pmu_caps *caps = pmu_cpu_caps(this_cpu_id());
	char err[160];

	if (pmu_open(&bench_pmu, caps, &e->attr, 1, 0, err, sizeof(err))) {
		bench_refuse("%s: event %s: %s", b->name, e->name, err);
		return -E_INVAL;
	}
	s64 idx = pmu_rdpmc_index(&bench_pmu, 0);
	if (idx < 0) {
		bench_refuse("%s: event %s got no counter rdpmc can read", b->name, e->name);
		return -E_NODEV;
	}
	*ecx = idx;
	pmu_start(&bench_pmu);
	held.pmu_on = true;
	*width_mask = bench_pmu.ctr[0].hw == PMU_HW_FIXED ? caps->fixed_mask : caps->gp_mask;
	return 0;
}

/* Measure one event: warm-up, then reps pairs of (n, 2n) measurements. */
static int measure_event(struct job *j, const struct bench_event *e, struct bench_result *r)
{
	const struct bench *b = j->b;
	bool c_body = !b->code;
	u32 n = c_body ? MAX(b->unroll, 1u) : b->code->n;
	u64 loops = MAX(b->loops, 1ul), work = MAX(b->work, 1ul);
	bench_fn fn_n = c_body ? b->body : b->code->run_n;
	bench_fn fn_2n = c_body ? b->body : b->code->run_2n;
	u64 cnt_n = c_body ? n * loops : loops, cnt_2n = c_body ? 2 * n * loops : loops;
	u64 width_mask = ~0ul;
	u32 ecx = 0;
	struct percpu *pc = this_cpu();
	struct lvt_state lvt = { 0 };
	bool by_cpuid = !pmu_cpu_lfence_serializes(pc->cpu), on_pmu = !e->tsc && !e->rdmsr;

	memset(r, 0, sizeof(*r));
	strlcpy(r->event, e->name, sizeof(r->event));
	/* Refused alone: the others are measured. */
	strlcpy(r->refused, e->refused, sizeof(r->refused));
	if (r->refused[0] ||
	    bench_msr_apply(e->x, held.msr_old, r->refused, sizeof(r->refused)))
		return 0;
	held.msr = e->x;
	if (on_pmu) {
		int err = open_counter(b, e, &ecx, &width_mask);
		if (err) {
			bench_abandon();
			return err;
		}
	}
#define MEASURE(fn, cnt) (measure(e, by_cpuid, fn, b->arg, cnt, ecx) & width_mask)
	bench_lvt_mask(&lvt);
	held.lvt = lvt;
	held.lvt_on = true;
	for (u32 w = 0; w < j->warmup; w++) {
		(void)MEASURE(fn_n, cnt_n);
		(void)MEASURE(fn_2n, cnt_2n);
	}
	/* A repetition that took an NMI is measured again; once one has
	 * been hit on every try, NMIs come faster than a repetition takes
	 * and retrying only costs time: keep what comes from then on. */
	u32 retries = b->flags & BENCH_NMI_OK ? 0 : BENCH_NMI_RETRIES;
	/* An SMI is a disturbance like an NMI: pmu_smi_count (MSR_SMI_COUNT on
	 * Intel, PMCx02B on Zen) is read before the n-run, between the runs
	 * and after the 2n-run, so that each run has a read on either side:
	 * under a hypervisor the read is a VM exit, and one only before the
	 * n-run and after the 2n-run would weigh on the two unequally. -1
	 * where SMIs cannot be counted (older AMD, or hidden by a hypervisor). */
	const struct pmu_caps *smi_caps = pmu_cpu_caps(pc->cpu);
	s64 smi0 = smi_read(smi_caps);
	for (u32 i = 0; i < j->reps; i++) {
		m_hit[i] = false;
		for (u32 tries = 0; ; tries++) {
			u64 nmi = __atomic_load_n(&pc->nmi_count, __ATOMIC_RELAXED);
			s64 smi_n = smi_read(smi_caps);
			m_n[i] = MEASURE(fn_n, cnt_n);
			s64 smi_2n = smi_read(smi_caps);
			m_2n[i] = MEASURE(fn_2n, cnt_2n);
			s64 smi_after = smi_read(smi_caps);
			if (nmi == __atomic_load_n(&pc->nmi_count, __ATOMIC_RELAXED) &&
			    smi_n == smi_2n && smi_2n == smi_after)
				break;
			if (tries >= retries) {
				m_hit[i] = !(b->flags & BENCH_NMI_OK);
				r->disturbed += m_hit[i];
				retries = 0;
				break;
			}
		}
	}
	held.lvt_on = false;
	bench_lvt_restore(&lvt);
	for (u32 i = 0; b->readings && i < j->reps; i++) {
		b->readings[(e - j->ev) * BENCH_MAX_REPS + i][0] = m_n[i];
		b->readings[(e - j->ev) * BENCH_MAX_REPS + i][1] = m_2n[i];
	}
	r->smis = smi0 < 0 ? -1 : (s32)(smi_read(smi_caps) - smi0);
	if (r->smis > 0)
		kprintf("bench: %s: %d SMIs during the measurement (repetitions they hit were retried)\n",
			b->name, r->smis);
#undef MEASURE
	if (on_pmu) {
		held.pmu_on = false;
		pmu_stop(&bench_pmu);
	}
	bench_msr_restore(e->x, held.msr_old);
	held.msr = NULL;

	/*
	 * A kept NMI lengthens the one run it hit, n or 2n, and the value is
	 * agg(2n) - agg(n): one in the n-runs makes the body look faster,
	 * even negative. While most repetitions are clean, the statistics
	 * come from those alone (the others are dropped, counted); else the
	 * value is from disturbed repetitions and is flagged as untrusted.
	 */
	struct bench_stats st;
	u32 used = j->reps;

	if (r->disturbed && j->reps - r->disturbed >= j->reps / 2 + 1) {
		used = 0;
		for (u32 i = 0; i < j->reps; i++) {
			if (m_hit[i])
				continue;
			m_n[used] = m_n[i];
			m_2n[used++] = m_2n[i];
		}
		r->dropped = r->disturbed;
		r->disturbed = 0;
	}
	bench_stats_compute(m_n, m_2n, used, n * loops * work, scratch, &st);
	r->cpu = pc->cpu;
	r->reps = used;
	r->warmup = j->warmup;
	r->unroll = n;
	r->loops = loops;
	r->work = work;
	r->min = st.min;
	r->median = st.median;
	r->tmean = st.avg;
	r->max = st.max;
	r->agg = j->agg;
	r->value = bench_stats_value(&st, j->agg);
	r->iqr = st.iqr;
	r->floor = st.floor;
	r->median_n = st.median_n;
	r->median_2n = st.median_2n;
	r->flags = (st.exact ? BP_BENCH_F_EXACT : 0) | (c_body ? BP_BENCH_F_LOOPED : 0) |
		   (r->disturbed ? BP_BENCH_F_DISTURBED : 0) |
		   (bench_above_floor(r->value, r->floor) ? 0 : BP_BENCH_F_NOISE) |
		   (by_cpuid ? BP_BENCH_F_CPUID_SERIALIZED : 0);
	if (e->tsc)
		r->flags |= BP_BENCH_F_TSC | (bench_tsc_counts_insns() ? BP_BENCH_F_ICOUNT : 0) |
			    (pmu_boot_caps.kind == PMU_KIND_NONE ? BP_BENCH_F_NO_PMU : 0);
	return 0;
}

static void run_job(void *arg)
{
	struct job *j = arg;
	const struct bench *b = j->b;

	if ((b->flags & BENCH_PER_CPU_SETUP) && b->setup && b->setup(b->arg)) {
		j->err = 1;		/* skipped: the set-up said why */
		return;
	}
	for (int i = 0; i < j->nev; i++) {
		int e = measure_event(j, &j->ev[i], &j->res[i]);
		if (e) {
			j->err = e;
			break;
		}
		if (j->records && !j->res[i].refused[0])
			bench_write_record(b, &j->res[i], j->drain);
	}
	if ((b->flags & BENCH_PER_CPU_SETUP) && b->teardown)
		b->teardown(b->arg);
}

int bench_run(const struct bench *b, const struct bench_opts *o, u32 def_reps,
	      u32 def_warmup, struct bench_result *res, int max_res)
{
	static struct bench_event ev[BENCH_MAX_EVENTS];
	int nev, nres = 0;
	u32 first = o->cpu < 0 ? 0 : (u32)o->cpu;
	u32 last = o->cpu < 0 ? smp_cpus() - 1 : (u32)o->cpu;

	bench_refuse_clear();
	nev = bench_resolve_events(o, ev);
	if (nev < 0)
		return nev;
	if (first >= smp_cpus()) {
		bench_refuse("no CPU %u (%u online)", first, smp_cpus());
		return -E_NOENT;
	}
	if (!(b->flags & BENCH_PER_CPU_SETUP) && b->setup && b->setup(b->arg))
		return 0;
	for (u32 cpu = first; cpu <= last; cpu++) {
		if (nres + nev > max_res) {
			kprintf("bench: %s: more results than the %d-entry array holds\n",
				b->name, max_res);
			break;
		}
		struct job j = {
			.b = b, .ev = ev, .nev = nev,
			.reps = MIN(o->reps ? o->reps : MAX(def_reps, 1u), (u32)BENCH_MAX_REPS),
			.warmup = o->warmup ? o->warmup : def_warmup,
			.records = !o->no_records,
			.drain = !o->no_drain,
			.agg = o->agg,
			.res = res + nres,
		};
		int e = smp_call(cpu, run_job, &j, true);
		if (e) {
			bench_refuse("%s: cpu %u: %s", b->name, cpu, smp_call_why(e));
			continue;
		}
		if (j.err == 1)
			continue;
		if (j.err)
			return j.err;
		for (int i = 0; i < nev; i++)
			if (!o->quiet && !res[nres + i].refused[0])
				bench_print_row(b, o, &res[nres + i]);
		nres += nev;
	}
	if (!(b->flags & BENCH_PER_CPU_SETUP) && b->teardown)
		b->teardown(b->arg);
	return nres;
}
