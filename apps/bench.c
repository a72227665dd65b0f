/*
 * bench.c — the microbenchmark harness: nanoBench's n / 2n unrolling,
 * serialized counter reads, LVT masking, repetitions and their statistics,
 * BENCH records, console tables; and the helpers the suite apps share
 * (pointer chases, working-set memory, CPUID cache sizes). See bench.h.
 */
#include "apps/bench.h"
#include "apps/run.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/stream.h"
#include "profile/profile.h"
#include "ringbuf/ringbuf.h"

#define MAX_TABLES	32		/* distinct tables of one app run (table_row) */
#define SZ_2M		(2ul << 20)
#define VMALLOC_MAX	(512ul << 20)	/* 4 KiB-page buffers: the vmalloc area is ~1 GiB */
#define MEM_HEADROOM	(16ul << 20)	/* left free for rings, stacks, page tables */

/* ---- options --------------------------------------------------------- */

void bench_opts_default(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cpu = this_cpu_id();
	o->pages = "both";
}

static int parse_size(const char *s, u64 *out)
{
	char num[24];
	size_t n = strlen(s);
	u64 mult = 1;

	if (!n || n >= sizeof(num))
		return -1;
	switch (s[n - 1]) {
	case 'k': case 'K': mult = 1ul << 10; n--; break;
	case 'm': case 'M': mult = 1ul << 20; n--; break;
	case 'g': case 'G': mult = 1ul << 30; n--; break;
	}
	memcpy(num, s, n);
	num[n] = 0;
	if (parse_u64(num, out) || *out > (~0ul / mult))
		return -1;
	*out *= mult;
	return 0;
}

static int set_events(struct bench_opts *o, const char *list)
{
	o->nevents = 0;
	while (*list) {
		const char *end = strchr(list, ',');
		size_t len = end ? (size_t)(end - list) : strlen(list);
		if (o->nevents == BENCH_MAX_EVENTS || !len || len >= BENCH_NAME_MAX) {
			kprintf("bench: events: at most %d events of fewer than %d characters\n",
				BENCH_MAX_EVENTS, BENCH_NAME_MAX);
			return -E_INVAL;
		}
		memcpy(o->events[o->nevents], list, len);
		o->events[o->nevents++][len] = 0;
		list += len + (end ? 1 : 0);
	}
	return 0;
}

int bench_parse_args(int argc, char **argv, struct bench_opts *o)
{
	bench_opts_default(o);
	for (int i = 1; i < argc; i++) {
		char *a = argv[i], *v = strchr(a, '=');
		u64 x;
		int bad = 0;

		if (!v) {
			kprintf("bench: '%s' is not key=value\n", a);
			return -E_INVAL;
		}
		size_t klen = v++ - a;
#define KEY(k) (klen == sizeof(k) - 1 && !strncmp(a, k, klen))
		if (KEY("cpu")) {
			if (!strcmp(v, "all"))
				o->cpu = -1, o->cpu_column = true;
			else if (parse_u64(v, &x) || x >= smp_cpus())
				bad = 1;
			else
				o->cpu = x;
		} else if (KEY("events")) {
			if (set_events(o, v))
				return -E_INVAL;
		} else if (KEY("reps")) {
			bad = parse_u64(v, &x) || x < 1 || x > BENCH_MAX_REPS;
			o->reps = x;
		} else if (KEY("warmup")) {
			bad = parse_u64(v, &x) || x > 1000;
			o->warmup = x;
		} else if (KEY("min")) {
			bad = parse_size(v, &o->min_bytes);
		} else if (KEY("max")) {
			bad = parse_size(v, &o->max_bytes);
		} else if (KEY("pattern")) {
			bad = parse_u64(v, &x) || x < 2 || x > (1u << 24) || (x & (x - 1));
			o->max_pattern = x;
		} else if (KEY("pages")) {
			bad = strcmp(v, "4k") && strcmp(v, "2m") && strcmp(v, "both");
			o->pages = v;
		} else if (KEY("quick")) {
			o->quick = strcmp(v, "0");
		} else if (KEY("quiet")) {
			o->quiet = strcmp(v, "0");
		} else if (KEY("records")) {
			o->no_records = !strcmp(v, "0");
		} else if (KEY("drain")) {
			o->no_drain = !strcmp(v, "0");
		} else if (KEY("agg")) {
			int g = bench_agg_parse(v);
			bad = g < 0;
			o->agg = g < 0 ? 0 : (u16)g;
		} else {
			kprintf("bench: unknown option '%s'; options: cpu=N|all events=LIST "
				"reps=N warmup=N min=SIZE max=SIZE pattern=N pages=4k|2m|both "
				"quick=0|1 quiet=0|1 records=0|1 drain=0|1 agg=median|min|avg\n", a);
			return -E_INVAL;
		}
#undef KEY
		if (bad) {
			kprintf("bench: bad value in '%s'%s\n", a,
				!strncmp(a, "cpu", 3) ? " (a CPU number or all)" :
				!strncmp(a, "reps", 4) ? " (1 to 1001)" :
				!strncmp(a, "agg", 3) ? " (median, min or avg: nanoBench's aggregates)" :
				!strncmp(a, "pattern", 7) ? " (a power of two, 2 to 2^24)" : "");
			return -E_INVAL;
		}
	}
	return 0;
}

/* ---- events ------------------------------------------------------------ */

/* Why the last bench_run returned an error, for bench_refusal. */
static char refusal[200];

static void __attribute__((format(printf, 1, 2))) refuse(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kvsnprintf(refusal, sizeof(refusal), fmt, ap);
	va_end(ap);
	kprintf("bench: %s\n", refusal);
}

const char *bench_refusal(void)
{
	return refusal;
}

/* The probe: blocks of 1000 and 2000 nops. */
BENCH_ASM(tsc_probe, 1000, "", "nop", "");

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

bool bench_tsc_counts_insns(void)
{
	static int known = -1;

	/* Three undisturbed probes must all find the 1000 extra nops to be
	 * exactly 1000 ticks; one NMI-free pair in 20 tries is plenty. */
	if (known < 0) {
		int good = 0;
		known = 1;
		for (int tries = 0; tries < 20 && good < 3 && known; tries++) {
			u64 nmi = __atomic_load_n(&this_cpu()->nmi_count, __ATOMIC_RELAXED);
			u64 a = measure_tsc(tsc_probe.run_n, NULL, 1);
			u64 b = measure_tsc(tsc_probe.run_2n, NULL, 1);
			if (nmi != __atomic_load_n(&this_cpu()->nmi_count, __ATOMIC_RELAXED))
				continue;
			good++;
			known = b - a == 1000;
		}
		known &= good == 3;
	}
	return known;
}

/* Does the active run program the hardware PMU (sampling or counting)? */
static bool run_uses_pmu(void)
{
	const struct profile_cfg *p = profile_config();

	if (!profile_active())
		return false;
	for (int i = 0; i < p->nevents + p->ncount; i++)
		if (p->soft_ev[i] == PROFILE_HW)
			return true;
	return false;
}

bool bench_pmu_usable(const char **why)
{
	const struct pmu_caps *c = &pmu_boot_caps;

	if (c->kind == PMU_KIND_NONE) {
		*why = c->none_reason[0] ? c->none_reason : "no PMU";
		return false;
	}
	if (!c->rdpmc_ok) {
		*why = "rdpmc does not work here";
		return false;
	}
	if (run_uses_pmu()) {
		*why = "the run has the hardware PMU (boot with events=none and no count= to "
		       "count here)";
		return false;
	}
	*why = NULL;
	return true;
}

const char *bench_tsc_meaning(void)
{
	if (bench_tsc_counts_insns())
		return "TSC (counts instructions under QEMU -icount)";
	if (pmu_boot_caps.kind == PMU_KIND_NONE)
		return "TSC ticks (no PMU: cycles are not real)";
	return "TSC ticks";
}

bool bench_is_tcg(void)
{
	return cpu_features.hypervisor && !strcmp(cpu_features.hypervisor_id, "TCGTCGTCGTCG");
}

const char *bench_events_meaning(const struct bench_opts *o)
{
	const char *why;

	for (u32 i = 0; i < o->nevents; i++)
		if (strcmp(o->events[i], "tsc"))
			return "counts of each event";
	if (!o->nevents && bench_pmu_usable(&why))
		return "counts of each event";
	return bench_tsc_meaning();
}

struct bench_event {
	char name[BENCH_NAME_MAX];
	bool tsc;
	struct pmu_event_attr attr;
};

/* The events to measure: o->events, or the defaults (cycles and
 * instructions with a usable PMU, else tsc). */
static int resolve_events(const struct bench_opts *o, struct bench_event *ev)
{
	const char *why;
	bool pmu = bench_pmu_usable(&why);
	int n = 0;

	if (!o->nevents) {
		if (pmu) {
			strlcpy(ev[0].name, "cycles", BENCH_NAME_MAX);
			strlcpy(ev[1].name, "instructions", BENCH_NAME_MAX);
			n = 2;
		} else {
			strlcpy(ev[0].name, "tsc", BENCH_NAME_MAX);
			n = 1;
		}
	} else {
		for (u32 i = 0; i < o->nevents; i++)
			strlcpy(ev[n++].name, o->events[i], BENCH_NAME_MAX);
	}
	for (int i = 0; i < n; i++) {
		char err[160];
		ev[i].tsc = !strcmp(ev[i].name, "tsc");
		if (ev[i].tsc)
			continue;
		if (!pmu) {
			refuse("event '%s' needs a hardware PMU: %s; the tsc event needs none",
			       ev[i].name, why);
			return -E_NODEV;
		}
		if (pmu_event_parse(ev[i].name, &pmu_boot_caps, &ev[i].attr, err, sizeof(err))) {
			refuse("event '%s': %s", ev[i].name, err);
			return -E_INVAL;
		}
		ev[i].attr.flags &= ~(PMU_ATTR_SAMPLE | PMU_ATTR_FREQ);
		ev[i].attr.period = 0;
	}
	return n;
}

/* ---- the measurement ---------------------------------------------------- */

/* LVT entries held masked while measuring (SDM Vol. 3A 11.5.1). */
struct lvt_state {
	u32 timer, therm, pc, error;
	bool has_therm, mask_pc;
};

static void lvt_mask(struct lvt_state *s)
{
	u32 max_lvt = (apic_read(APIC_VERSION) >> 16) & 0xff;

	/* MaxLVT + 1 entries: 5 = timer, thermal, PC, LINT0, LINT1, error. */
	s->has_therm = max_lvt >= 5;
	/* A run on the hardware PMU owns LVT PC: a PMI lost while masked
	 * would leave its counter silent, so leave it (its NMIs are retried).
	 * Masking the timer pauses the run tick (multiplexing, re-tuning,
	 * the drain) for the length of one benchmark. */
	s->mask_pc = max_lvt >= 4 && !run_uses_pmu();
	s->timer = apic_read(APIC_LVT_TIMER);
	apic_write(APIC_LVT_TIMER, s->timer | APIC_LVT_MASKED);
	if (s->has_therm) {
		s->therm = apic_read(APIC_LVT_THERM);
		apic_write(APIC_LVT_THERM, s->therm | APIC_LVT_MASKED);
	}
	if (s->mask_pc) {
		s->pc = apic_read(APIC_LVT_PC);
		apic_write(APIC_LVT_PC, s->pc | APIC_LVT_MASKED);
	}
	s->error = apic_read(APIC_LVT_ERROR);
	apic_write(APIC_LVT_ERROR, s->error | APIC_LVT_MASKED);
}

static void lvt_restore(const struct lvt_state *s)
{
	apic_write(APIC_LVT_ERROR, s->error);
	if (s->mask_pc)
		apic_write(APIC_LVT_PC, s->pc);
	if (s->has_therm)
		apic_write(APIC_LVT_THERM, s->therm);
	apic_write(APIC_LVT_TIMER, s->timer);
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
/* What a measurement holds while it runs, for bench_abandon. */
static struct {
	bool pmu_on, lvt_on;
	struct lvt_state lvt;
} held;

void bench_abandon(void)
{
	if (held.lvt_on)
		lvt_restore(&held.lvt);
	if (held.pmu_on)
		pmu_stop(&bench_pmu);
	held.lvt_on = held.pmu_on = false;
}

/*
 * What the records of this app run have been numbered so far: seq and
 * table_row (perf_ring.h), and the results that found no room. A new run
 * (another app id) starts again from 1. Only bench_run's jobs and
 * bench_end touch it, one at a time (smp_call waits for each job).
 */
static struct {
	u32 app_id;
	u32 seq, lost;
	u32 last_row;			/* table_row of result seq, in last_table */
	char last_table[16];
	u32 ntables;
	char table[MAX_TABLES][16];
	u32 rows[MAX_TABLES];
} numbering;

static void numbering_for_run(u32 app_id)
{
	if (numbering.app_id != app_id) {
		memset(&numbering, 0, sizeof(numbering));
		numbering.app_id = app_id;
	}
}

static u32 next_table_row(const char *table)
{
	u32 i;

	for (i = 0; i < numbering.ntables; i++)
		if (!strncmp(numbering.table[i], table, sizeof(numbering.table[i]) - 1))
			return ++numbering.rows[i];
	if (i == MAX_TABLES)
		return 0;		/* more tables than tracked: row unknown */
	strlcpy(numbering.table[i], table, sizeof(numbering.table[i]));
	numbering.ntables++;
	return numbering.rows[i] = 1;
}

/*
 * Room for a record of size bytes (and the LOST record that may have to
 * precede it) in this CPU's ring: outside any NMI, the records can wait
 * while the stream drains every ring, as the end of the run would. A
 * drain that frees nothing (a transport that stalled) is given up after
 * BENCH_ROOM_WAIT_MS of TSC time, and said.
 */
static void make_room(struct bp_ring *rb, u32 size, bool drain)
{
	u64 need = size + sizeof(struct bp_record_lost);

	if (bp_ring_free(rb) >= need || !drain || !stream_active())
		return;
	/* tsc_hz unknown: a 4 GHz guess, so the wait lasts at least as long */
	u64 t0 = rdtsc(), limit = (tsc_hz ? tsc_hz : 4000000000ul) / 1000 * BENCH_ROOM_WAIT_MS;
	while (bp_ring_free(rb) < need) {
		if (rdtsc() - t0 > limit) {
			kprintf("bench: cpu %u: the ring still has no room for a BENCH record "
				"after %u ms of draining: the record is dropped (counted)\n",
				this_cpu_id(), BENCH_ROOM_WAIT_MS);
			return;
		}
		run_drain(false);
		cpu_relax();
	}
}

static void write_record(const struct bench *b, const struct bench_result *r, bool drain)
{
	u32 cpu = this_cpu_id();
	struct bp_ring *rb = profile_active() ? profile_ring(cpu) : NULL;
	struct bp_record_bench rec = {
		.header = { BP_RECORD_BENCH, 0, sizeof(rec) },
		.cpu = cpu,
		.param = b->param,
		.param_unit = b->param_unit,
		.work_unit = b->work_unit,
		.flags = r->flags,
		.n_reps = r->reps,
		.warmup = r->warmup,
		.unroll = r->unroll,
		.disturbed = r->disturbed,
		.loops = r->loops,
		.work = r->work,
		.min = r->min,
		.median = r->median,
		.trimmed_mean = r->tmean,
		.max = r->max,
		.median_n = r->median_n,
		.median_2n = r->median_2n,
		.bench_version = BP_BENCH_VERSION,
		.agg = r->agg,
		.iqr = r->iqr,
	};

	if (!rb)
		return;
	rec.app_id = profile_app_id();
	numbering_for_run(rec.app_id);
	rec.seq = ++numbering.seq;
	rec.table_row = numbering.last_row = next_table_row(b->table);
	strlcpy(rec.table, b->table, sizeof(rec.table));
	strlcpy(numbering.last_table, b->table, sizeof(numbering.last_table));
	strlcpy(rec.name, b->name, sizeof(rec.name));
	strlcpy(rec.event, r->event, sizeof(rec.event));
	make_room(rb, sizeof(rec), drain);
	rec.time = rdtsc();
	if (profile_output(&rec))
		numbering.lost++;	/* counted by the run and the ring's LOST too */
}

void bench_end(const struct bench_opts *o)
{
	u32 app_id = profile_app_id();
	struct bp_record_bench_end rec = {
		.header = { BP_RECORD_BENCH_END, 0, sizeof(rec) },
		.app_id = app_id,
		.cpu = this_cpu_id(),
	};

	if (o->no_records || !profile_active() || !profile_ring(rec.cpu))
		return;
	numbering_for_run(app_id);
	rec.results = numbering.seq;
	rec.lost = numbering.lost;
	rec.last_row = numbering.last_row;
	strlcpy(rec.last_table, numbering.last_table, sizeof(rec.last_table));
	make_room(profile_ring(rec.cpu), sizeof(rec), true);	/* after the measurements */
	int err = profile_output(&rec);
	if (numbering.lost || err)
		kprintf("bench: %u of %u BENCH records found no room in the rings%s (counted in "
			"LOST records; bareperf stat --bench names the rows)\n", numbering.lost,
			numbering.seq, err ? ", nor did the end record" : "");
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
	char err[160];

	memset(r, 0, sizeof(*r));
	if (!e->tsc) {
		/* This CPU's counters: a hybrid's E-core lacks some of the P-core's. */
		const struct pmu_caps *caps = pmu_cpu_caps(pc->cpu);
		if (pmu_open(&bench_pmu, caps, &e->attr, 1, 0, err, sizeof(err))) {
			refuse("%s: event %s: %s", b->name, e->name, err);
			return -E_INVAL;
		}
		s64 idx = pmu_rdpmc_index(&bench_pmu, 0);
		if (idx < 0) {
			refuse("%s: event %s got no counter rdpmc can read", b->name, e->name);
			return -E_NODEV;
		}
		ecx = idx;
		pmu_start(&bench_pmu);
		held.pmu_on = true;
		width_mask = bench_pmu.ctr[0].hw == PMU_HW_FIXED ? caps->fixed_mask : caps->gp_mask;
	}
#define MEASURE(fn, cnt) ((e->tsc ? measure_tsc(fn, b->arg, cnt) \
			  : measure_pmc(fn, b->arg, cnt, ecx)) & width_mask)
	lvt_mask(&lvt);
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
	/* An SMI is a disturbance like an NMI: MSR_SMI_COUNT (Intel) is read
	 * around each repetition; -1 where SMIs cannot be counted (AMD). */
	const struct pmu_caps *smi_caps = pmu_cpu_caps(pc->cpu);
	s64 smi0 = pmu_smi_count(smi_caps);
	for (u32 i = 0; i < j->reps; i++) {
		m_hit[i] = false;
		for (u32 tries = 0; ; tries++) {
			u64 nmi = __atomic_load_n(&pc->nmi_count, __ATOMIC_RELAXED);
			s64 smi = pmu_smi_count(smi_caps);
			m_n[i] = MEASURE(fn_n, cnt_n);
			m_2n[i] = MEASURE(fn_2n, cnt_2n);
			s64 smi_after = pmu_smi_count(smi_caps);
			if (nmi == __atomic_load_n(&pc->nmi_count, __ATOMIC_RELAXED) && smi == smi_after)
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
	lvt_restore(&lvt);
	r->smis = smi0 < 0 ? -1 : (s32)(pmu_smi_count(smi_caps) - smi0);
	if (r->smis > 0)
		kprintf("bench: %s: %d SMIs during the measurement (repetitions they hit were retried)\n",
			b->name, r->smis);
#undef MEASURE
	if (!e->tsc) {
		held.pmu_on = false;
		pmu_stop(&bench_pmu);
	}

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
	strlcpy(r->event, e->name, sizeof(r->event));
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
		   (bench_above_floor(r->value, r->floor) ? 0 : BP_BENCH_F_NOISE);
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
		if (j->records)
			write_record(b, &j->res[i], j->drain);
	}
	if ((b->flags & BENCH_PER_CPU_SETUP) && b->teardown)
		b->teardown(b->arg);
}

/* ---- console ------------------------------------------------------------ */

const char *bench_fmt_x1000(s64 v, char *buf, size_t n)
{
	u64 a = v < 0 ? -(u64)v : (u64)v;

	ksnprintf(buf, n, "%s%lu.%03lu", v < 0 ? "-" : "", a / 1000, a % 1000);
	return buf;
}

const char *bench_fmt_bytes(u64 b, char *buf, size_t n)
{
	if (b >= (1ul << 30) && !(b & ((1ul << 30) - 1)))
		ksnprintf(buf, n, "%lu GiB", b >> 30);
	else if (b >= (1ul << 20) && !(b & ((1ul << 20) - 1)))
		ksnprintf(buf, n, "%lu MiB", b >> 20);
	else if (b >= 1024 && !(b & 1023))
		ksnprintf(buf, n, "%lu KiB", b >> 10);
	else
		ksnprintf(buf, n, "%lu B", b);
	return buf;
}

bool bench_result_trusted(const struct bench_result *r)
{
	return !(r->flags & (BP_BENCH_F_NOISE | BP_BENCH_F_DISTURBED));
}

/* A result as a table shows it: the value, "< floor" when it is below
 * its noise floor (never a negative or sub-noise figure as a result), or
 * "? value" when most repetitions kept an NMI (it may be off either way). */
static const char *fmt_value(const struct bench_result *r, char *buf, size_t n)
{
	char f[24];

	if (r->flags & BP_BENCH_F_NOISE)
		ksnprintf(buf, n, "< %s", bench_fmt_x1000((s64)r->floor, f, sizeof(f)));
	else if (r->flags & BP_BENCH_F_DISTURBED)
		ksnprintf(buf, n, "? %s", bench_fmt_x1000(r->value, f, sizeof(f)));
	else
		bench_fmt_x1000(r->value, buf, n);
	return buf;
}

void bench_table(const char *table, const char *title, const char *param_label,
		 const struct bench_opts *o)
{
	if (o->quiet)
		return;
	kprintf("\n%s: %s\n", table, title);
	kprintf("  %s%-28s %-14s %10s %10s %5s  %s\n", o->cpu_column ? "cpu " : "",
		param_label, "event", bench_agg_name(o->agg), "iqr", "reps", "note");
}

static void print_row(const struct bench *b, const struct bench_opts *o,
		      const struct bench_result *r)
{
	char label[48], p[24], v1[24], v2[24], note[64] = "";
	size_t len;

	if (b->param_unit == BP_BENCH_PARAM_BYTES)
		ksnprintf(label, sizeof(label), "%s %s", b->name, bench_fmt_bytes(b->param, p, sizeof(p)));
	else if (b->param_unit == BP_BENCH_PARAM_CPU)
		ksnprintf(label, sizeof(label), "%s cpu %lu", b->name, b->param);
	else if (b->param_unit != BP_BENCH_PARAM_NONE)
		ksnprintf(label, sizeof(label), "%s %lu", b->name, b->param);
	else
		strlcpy(label, b->name, sizeof(label));
	if (r->flags & BP_BENCH_F_EXACT)
		strlcpy(note, "exact", sizeof(note));
	if (r->flags & BP_BENCH_F_NOISE) {
		len = strlen(note);
		ksnprintf(note + len, sizeof(note) - len, "%sbelow noise floor", len ? ", " : "");
	}
	if (r->disturbed) {
		len = strlen(note);
		ksnprintf(note + len, sizeof(note) - len, "%s%u of %u kept an NMI: untrusted",
			  len ? ", " : "", r->disturbed, r->reps);
	}
	if (r->dropped) {
		len = strlen(note);
		ksnprintf(note + len, sizeof(note) - len, "%s%u more took an NMI: dropped",
			  len ? ", " : "", r->dropped);
	}
	if (o->cpu_column)
		kprintf("  %3u ", r->cpu);
	else
		kprintf("  ");
	kprintf("%-28s %-14s %10s %10s %5u  %s\n", label, r->event, fmt_value(r, v1, sizeof(v1)),
		bench_fmt_x1000((s64)r->iqr, v2, sizeof(v2)), r->reps, note);
}

/* ---- bench_run ------------------------------------------------------------ */

int bench_run(const struct bench *b, const struct bench_opts *o, u32 def_reps,
	      u32 def_warmup, struct bench_result *res, int max_res)
{
	static struct bench_event ev[BENCH_MAX_EVENTS];
	int nev, nres = 0;
	u32 first = o->cpu < 0 ? 0 : (u32)o->cpu;
	u32 last = o->cpu < 0 ? smp_cpus() - 1 : (u32)o->cpu;

	refusal[0] = 0;
	nev = resolve_events(o, ev);
	if (nev < 0)
		return nev;
	if (first >= smp_cpus()) {
		refuse("no CPU %u (%u online)", first, smp_cpus());
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
			refuse("%s: cpu %u: %s", b->name, cpu, smp_call_why(e));
			continue;
		}
		if (j.err == 1)
			continue;
		if (j.err)
			return j.err;
		for (int i = 0; i < nev; i++)
			if (!o->quiet)
				print_row(b, o, &res[nres + i]);
		nres += nev;
	}
	if (!(b->flags & BENCH_PER_CPU_SETUP) && b->teardown)
		b->teardown(b->arg);
	return nres;
}

/* ---- helpers for the suite ------------------------------------------------ */

u64 bench_rand(u64 *s)
{
	/* xorshift64* (Vigna 2016); never seeded with 0. */
	u64 x = *s ? *s : 0x9e3779b97f4a7c15ul;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545f4914f6cdd1dul;
}

void *bench_chase_build(void *buf, u64 nodes, u64 stride, u64 seed)
{
	u8 *base = buf;
	u64 s = seed;

	/* Sattolo's algorithm, in place: node i's word holds a[i], starting
	 * from the identity; swapping a[i] with an a[j], j < i, for i from the
	 * top down leaves a cyclic permutation (one cycle through all). */
	for (u64 i = 0; i < nodes; i++)
		*(u64 *)(base + i * stride) = i;
	for (u64 i = nodes - 1; i > 0; i--) {
		u64 j = (u64)(((unsigned __int128)bench_rand(&s) * i) >> 64);	/* [0, i) */
		u64 *a = (u64 *)(base + i * stride), *c = (u64 *)(base + j * stride);
		u64 t = *a;
		*a = *c;
		*c = t;
	}
	for (u64 i = 0; i < nodes; i++) {
		u64 *w = (u64 *)(base + i * stride);
		*w = (u64)(base + *w * stride);
	}
	return base;
}

u64 bench_chase_cycle(const void *buf, u64 nodes, u64 stride)
{
	const u8 *base = buf, *p = buf;
	u64 steps = 0;

	do {
		u64 next = *(const u64 *)p;
		if (next < (u64)base || next >= (u64)base + nodes * stride ||
		    (next - (u64)base) % stride)
			return 0;
		p = (const u8 *)next;
		steps++;
	} while (p != base && steps <= nodes);
	return p == base ? steps : 0;
}

u64 bench_mem_cap(void)
{
	u64 free = pmm_free_pages() * PAGE_SIZE, cap = 1ul << 12;

	if (free <= MEM_HEADROOM + SZ_2M)
		return 0;
	free -= MEM_HEADROOM + SZ_2M;		/* + the 2 MiB alignment slack */
	while (cap * 2 <= free)
		cap *= 2;
	return cap;
}

/* Small buffers are not worth a 2 MiB alignment (pmm_alloc zeroes what
 * it hands out): they take their pages as they come. */
#define SMALL_BUF	(1ul << 20)

void *bench_mem_2m(u64 bytes)
{
	u64 pages = ALIGN_UP(bytes, SZ_2M) / PAGE_SIZE + SZ_2M / PAGE_SIZE;
	u64 pa;

	if (bytes <= SMALL_BUF)
		return (void *)pmm_alloc(ALIGN_UP(bytes, PAGE_SIZE) / PAGE_SIZE);
	if (pages * PAGE_SIZE + MEM_HEADROOM > pmm_free_pages() * PAGE_SIZE)
		return NULL;
	pa = pmm_alloc(pages);
	if (!pa)
		return NULL;
	/* The identity map is made of 2 MiB pages (kernel/paging.c); start on
	 * one so the buffer spans as few as possible. The slack before the
	 * aligned start is given back, and so is what follows the buffer. */
	u64 start = ALIGN_UP(pa, SZ_2M), end = start + ALIGN_UP(bytes, SZ_2M);
	if (start > pa)
		pmm_free(pa, (start - pa) / PAGE_SIZE);
	if (pa + pages * PAGE_SIZE > end)
		pmm_free(end, (pa + pages * PAGE_SIZE - end) / PAGE_SIZE);
	return (void *)start;
}

void bench_mem_2m_free(void *p, u64 bytes)
{
	if (p)
		pmm_free((u64)p, ALIGN_UP(bytes, bytes <= SMALL_BUF ? PAGE_SIZE : SZ_2M) / PAGE_SIZE);
}

void *bench_mem_4k(u64 bytes)
{
	static u64 base, size;
	u64 pages = ALIGN_UP(bytes, PAGE_SIZE) / PAGE_SIZE;

	if (bytes <= size)
		return (void *)base;
	/* Page tables come on top: one 4 KiB table per 512 pages. */
	if (bytes > VMALLOC_MAX ||
	    (pages + pages / 512 + 2) * PAGE_SIZE + MEM_HEADROOM > pmm_free_pages() * PAGE_SIZE)
		return NULL;
	u64 top = vmalloc_stack(pages);
	if (!top)
		return NULL;
	if (size)
		kprintf("bench: a %lu KiB 4 KiB-page buffer stays allocated (no vfree)\n",
			size >> 10);
	base = top - pages * PAGE_SIZE;
	size = pages * PAGE_SIZE;
	return (void *)base;
}

static void add_cache(struct bench_cache *c, int *n, int max, u32 level, char type, u64 bytes)
{
	if (*n < max && bytes) {
		c[*n].level = level;
		c[*n].type = type;
		c[*n].bytes = bytes;
		(*n)++;
	}
}

int bench_caches(struct bench_cache *c, int max)
{
	const struct cpu_features *f = &cpu_features;
	u32 a, b, cx, d, leaf = 0;
	int n = 0;

	if (!strcmp(f->vendor, "GenuineIntel") && f->max_leaf >= 4)
		leaf = 4;
	if (!strcmp(f->vendor, "AuthenticAMD") && f->max_ext_leaf >= 0x8000001d) {
		cpuid(0x80000001, &a, &b, &cx, &d);
		if (cx & (1u << 22))		/* TOPOEXT */
			leaf = 0x8000001d;
	}
	/* Deterministic cache parameters (SDM Vol. 2A CPUID leaf 04H; AMD APM
	 * Vol. 3 CPUID Fn8000_001D: the same layout). */
	for (u32 i = 0; leaf && i < 16; i++) {
		cpuid_count(leaf, i, &a, &b, &cx, &d);
		u32 type = a & 0x1f;
		if (!type)
			break;
		u64 bytes = (u64)((b >> 22) + 1) * (((b >> 12) & 0x3ff) + 1) *
			    ((b & 0xfff) + 1) * ((u64)cx + 1);
		add_cache(c, &n, max, (a >> 5) & 7, type == 1 ? 'd' : type == 2 ? 'i' : 'u', bytes);
	}
	if (!n && f->max_ext_leaf >= 0x80000006) {
		/* AMD's older leaves (APM Vol. 3, Fn8000_0005 and _0006). */
		cpuid(0x80000005, &a, &b, &cx, &d);
		add_cache(c, &n, max, 1, 'd', (u64)(cx >> 24) << 10);
		cpuid(0x80000006, &a, &b, &cx, &d);
		add_cache(c, &n, max, 2, 'u', (u64)(cx >> 16) << 10);
		add_cache(c, &n, max, 3, 'u', (u64)(d >> 18) << 19);
	}
	return n;
}
