/*
 * test_bench — the microbenchmark harness (apps/bench.c) and the suite.
 *
 *   -- exact     under -icount shift=0, events=none: the TSC counts retired
 *                instructions, so a body of k instructions unrolled n and 2n
 *                times must measure exactly k per copy (equality, for every
 *                aggregate); a pointer chase exactly one load per node; the
 *                chase is one cycle through every node; the same benchmarks
 *                run twice give identical BENCH records; repetitions an
 *                injected NMI disturbed are dropped, or flag the result
 *                untrusted when most are; each n-run and 2n-run has an
 *                SMI read on either side. Prints the harness's overhead
 *                per measurement, in instructions.
 *   -- records app=NAME [app args]
 *                runs a suite app inside the kernel's sampling run and checks
 *                every BENCH record it left in the rings is well formed.
 */
#include "apps/bench.h"
#include "profile/profile.h"
#include "apps/run.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "ringbuf/ringbuf.h"
#include "test/guest/report.h"

/* k-instruction bodies: nops and adds. */
BENCH_ASM(k1, 10, "", "add $1, %rax", "");
BENCH_ASM(k3, 16, "", "nop\n add $1, %rax\n nop", "");
BENCH_ASM(k7, 8, "xor %ecx, %ecx", ".rept 3\n add $1, %rax\n nop\n .endr\n add %rax, %rcx", "");
BENCH_ASM(k20, 25, "", ".rept 10\n add $1, %rax\n nop\n .endr", "");
BENCH_ASM(k0, 1, "", "", "");
BENCH_ASM(chase1, 32, "mov %rdi, %rax", "mov (%rax), %rax", "");

static const struct kcase {
	u32 k;
	const struct bench_asm *code;
	u64 loops;
} kcases[] = {
	{ 1, &k1, 7 }, { 3, &k3, 5 }, { 7, &k7, 11 }, { 20, &k20, 3 },
};

static u8 buf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));

static void opts_tsc(struct bench_opts *o, u32 reps)
{
	bench_opts_default(o);
	o->nevents = 1;
	strlcpy(o->events[0], "tsc", sizeof(o->events[0]));
	o->reps = reps;
	o->warmup = 1;
	o->quiet = true;
}

static bool all_equal(const struct bench_result *r, s64 v)
{
	return r->min == v && r->median == v && r->tmean == v && r->max == v;
}

static void check_k(void)
{
	struct bench_opts o;
	struct bench_result r;

	opts_tsc(&o, 5);
	for (u32 i = 0; i < ARRAY_SIZE(kcases); i++) {
		const struct kcase *c = &kcases[i];
		struct bench b = { .table = "test", .name = "k", .param = c->k,
				   .param_unit = BP_BENCH_PARAM_COUNT, .code = c->code,
				   .loops = c->loops, .work_unit = BP_BENCH_WORK_COPY };
		int n = bench_run(&b, &o, 5, 1, &r, 1);
		char v[24];
		report(n == 1 && all_equal(&r, c->k * 1000) && (r.flags & BP_BENCH_F_EXACT) &&
		       (r.flags & BP_BENCH_F_ICOUNT),
		       "k=%u body unrolled %u and %u times, %lu loops: %s instructions per copy "
		       "(min, median, trimmed mean and max all equal)", c->k, c->code->n,
		       2 * c->code->n, c->loops, bench_fmt_x1000(r.median, v, sizeof(v)));
		/* The 2n-run does n * loops * k more than the n-run, exactly. */
		report(n == 1 && r.median_2n - r.median_n == c->code->n * c->loops * c->k,
		       "k=%u: m(2n) - m(n) = %lu = n * loops * k", c->k, r.median_2n - r.median_n);
	}
}

static void overhead(void)
{
	struct bench_opts o;
	struct bench_result r;
	struct bench b = { .table = "test", .name = "empty", .code = &k0, .loops = 1 };
	const u32 reps = 21;

	opts_tsc(&o, reps);
	o.no_records = true;
	u64 t0 = rdtsc_ordered();
	int n = bench_run(&b, &o, reps, 1, &r, 1);
	u64 total = rdtsc_ordered() - t0;
	/* m(n) of an empty body with one loop: what the harness itself puts
	 * between the two counter reads (call, ret, dec/jnz, the reads' tails). */
	u64 in_region = r.median_n - 2;		/* less the loop's dec + jnz */
	u64 measurements = 2 * (reps + 1);
	u64 outside = (total - (reps + 1) * (r.median_n + r.median_2n)) / measurements;
	report(n == 1 && r.min == 0 && r.median == 0 && (r.flags & BP_BENCH_F_EXACT),
	       "empty body: 0 instructions per copy");
	report(in_region > 0 && in_region < 40,
	       "harness overhead inside the measured region: %lu instructions", in_region);
	kprintf("bench: harness overhead per measurement: %lu instructions between the two "
		"serialized counter reads (plus 2 per loop iteration), %lu instructions of "
		"bookkeeping outside them (%lu measurements in %lu instructions)\n",
		in_region, outside, measurements, total);
}

static void check_chase(void)
{
	static const u64 sizes[] = { 1, 2, 3, 7, 64, 1000, 4096, 65536 };
	u8 *mem = bench_mem_2m(65536 * 64);
	bool ok = mem != NULL;

	for (u32 i = 0; ok && i < ARRAY_SIZE(sizes); i++)
		for (u64 seed = 1; seed <= 3; seed++) {
			bench_chase_build(mem, sizes[i], 64, seed);
			u64 len = bench_chase_cycle(mem, sizes[i], 64);
			if (len != sizes[i]) {
				report(false, "%lu nodes, seed %lu: a cycle of %lu", sizes[i], seed, len);
				ok = false;
			}
		}
	report(ok, "Sattolo: one cycle through every node, 1 to 65536 nodes, 3 seeds each");

	/* Break it into two cycles: the check must notice. */
	bench_chase_build(mem, 1000, 64, 9);
	u64 *a = (u64 *)mem, *b = (u64 *)*a;
	u64 t = *a;
	*a = *b;
	*b = t;			/* node 0 skips its old successor, which now loops on itself */
	report(bench_chase_cycle(mem, 1000, 64) != 1000, "a broken chase is not one cycle");
	/* Unequal strides: 128-byte nodes. */
	bench_chase_build(mem, 4096, 128, 4);
	report(bench_chase_cycle(mem, 4096, 128) == 4096, "128-byte nodes: one cycle too");

	/* The chase as a benchmark: exactly one instruction (the load) per node. */
	struct bench_opts o;
	struct bench_result r;
	opts_tsc(&o, 3);
	struct bench bc = { .table = "test", .name = "chase", .param = 65536 * 64,
			    .param_unit = BP_BENCH_PARAM_BYTES, .work_unit = BP_BENCH_WORK_LOAD,
			    .code = &chase1, .loops = 65536 / 32,
			    .arg = bench_chase_build(mem, 65536, 64, 5) };
	int n = bench_run(&bc, &o, 3, 1, &r, 1);
	report(n == 1 && all_equal(&r, 1000), "pointer chase over 4 MiB: 1 instruction per load");
	u64 t0 = rdtsc_ordered();
	bench_chase_build(mem, 65536, 64, 6);
	u64 t1 = rdtsc_ordered();
	kprintf("bench: building a 65536-node chase: %lu instructions (%lu per node)\n",
		t1 - t0, (t1 - t0) / 65536);
	bench_mem_2m_free(mem, 65536 * 64);
}

/*
 * A C body that disturbs chosen n-runs: it sends this CPU an NMI and
 * works 8 times longer, as a run an NMI handler stretched. n-runs are the
 * calls with `loops` copies (unroll 1); they are numbered from 0, warm-up
 * included.
 */
struct disturb {
	u64 loops;
	u32 calls, from, to;
};

static void disturbed_body(void *arg, u64 copies)
{
	struct disturb *d = arg;
	u64 work = copies;

	if (copies == d->loops && d->calls++ - d->from < d->to - d->from) {
		apic_send_ipi(this_cpu()->apic_id, APIC_DM_NMI);
		work *= 8;
	}
	for (u64 i = 0; i < work; i++)
		asm volatile("nop");
}

/* One warm-up, then rep 0 is tried 1 + BENCH_NMI_RETRIES times: disturbing
 * n-runs 1 to 1 + BENCH_NMI_RETRIES keeps rep 0 disturbed, and every one
 * disturbed after that is kept as it comes. */
static void run_disturbed(u32 reps, u32 kept, u16 agg, struct bench_result *r)
{
	struct bench_opts o;
	struct disturb d = { .loops = 50, .from = kept ? 1 : 0,
			     .to = kept ? 1 + BENCH_NMI_RETRIES + kept : 0 };
	struct bench b = { .table = "test", .name = "disturbed", .body = disturbed_body,
			   .arg = &d, .loops = d.loops, .unroll = 1 };

	opts_tsc(&o, reps);
	o.no_records = true;
	o.agg = agg;
	memset(r, 0, sizeof(*r));
	bench_run(&b, &o, reps, 1, r, 1);
}

static void check_disturbed(void)
{
	struct bench_result clean, some, most;

	run_disturbed(9, 0, BP_BENCH_AGG_AVG, &clean);
	report(!clean.disturbed && !clean.dropped && clean.reps == 9 && clean.value > 0 &&
	       (clean.flags & BP_BENCH_F_EXACT), "an undisturbed C body: %ld/1000 per copy, exact",
	       clean.value);
	/* 4 of 9 n-runs stretched: the avg of the n-runs would take 3 of them */
	run_disturbed(9, 4, BP_BENCH_AGG_AVG, &some);
	report(some.value == clean.value && some.reps == 5 && some.dropped == 4 &&
	       !some.disturbed && bench_result_trusted(&some),
	       "4 of 9 repetitions disturbed: dropped, the other 5 give %ld/1000 (want %ld/1000; "
	       "%u reps, %u dropped, %u kept)", some.value, clean.value, some.reps, some.dropped,
	       some.disturbed);
	run_disturbed(9, 6, BP_BENCH_AGG_MEDIAN, &most);
	report(most.disturbed == 6 && most.reps == 9 && (most.flags & BP_BENCH_F_DISTURBED) &&
	       !bench_result_trusted(&most),
	       "6 of 9 repetitions disturbed: kept and flagged untrusted (%ld/1000, %u kept)",
	       most.value, most.disturbed);
}

/* ---- where the SMI count is read ---- */

/* What happened, in order: 'S' an SMI read, 'n' an n-run, '2' a 2n-run. */
static char smi_log[128];
static u32 smi_logged;

static void smi_log_add(char c)
{
	if (smi_logged < sizeof(smi_log) - 1)
		smi_log[smi_logged++] = c;
}

static s64 smi_read_logged(const struct pmu_caps *caps)
{
	(void)caps;
	smi_log_add('S');
	return 7;			/* no SMI ever comes */
}

#define SMI_LOOPS	20

static void smi_logged_body(void *arg, u64 copies)
{
	(void)arg;
	smi_log_add(copies == SMI_LOOPS ? 'n' : '2');
	for (u64 i = 0; i < copies; i++)
		asm volatile("nop");
}

/*
 * Under a hypervisor an SMI read is a VM exit: each of the n-run and the
 * 2n-run has one right before and right after it, or the difference
 * carries it on one side only. And an empty body still measures exactly 0
 * with the reads in place.
 */
static void check_smi_reads(void)
{
	struct bench_opts o;
	struct bench_result r, plain;
	struct bench b = { .table = "test", .name = "smi", .body = smi_logged_body,
			   .loops = SMI_LOOPS, .unroll = 1 };
	struct bench empty = { .table = "test", .name = "empty", .code = &k0, .loops = 1 };
	const u32 reps = 3;

	opts_tsc(&o, reps);
	o.no_records = true;
	smi_logged = 0;
	memset(smi_log, 0, sizeof(smi_log));
	bench_test_smi_reader(smi_read_logged);
	int n = bench_run(&b, &o, reps, 1, &r, 1);
	/* The warm-up's runs, then from the first read on the repetitions. */
	const char *timed = strchr(smi_log, 'S');
	u32 runs = 0, bare = 0;
	for (const char *p = timed; p && *p; p++) {
		if (*p == 'S')
			continue;
		runs++;
		bare += p[-1] != 'S' || p[1] != 'S';
	}
	report(n == 1 && runs == 2 * reps && !bare, "each n-run and 2n-run has an SMI read right "
	       "before and after it (%u runs, %u without; read S, n-run n, 2n-run 2: %s)", runs,
	       bare, smi_log);
	n = bench_run(&empty, &o, reps, 1, &r, 1);
	bench_test_smi_reader(NULL);
	int m = bench_run(&empty, &o, reps, 1, &plain, 1);
	report(n == 1 && m == 1 && r.median == 0 && (r.flags & BP_BENCH_F_EXACT) &&
	       r.median_n == plain.median_n && r.median_2n == plain.median_2n,
	       "empty body with the SMI reads: 0 instructions per copy, n-run %lu and 2n-run %lu "
	       "instructions as without them", r.median_n, r.median_2n);
}

/* ---- records ---- */

#define MAX_SEQ		1024

struct scan {
	u32 bench, bad, app_start, app_id, lost_records;
	struct bp_record_bench recs[64];
	u32 kept;
	u32 ends, end_results, end_lost;	/* BENCH_END records */
	u32 by_cpuid;			/* records with BP_BENCH_F_CPUID_SERIALIZED */
};

/* seq numbers seen over every CPU's ring (check_records) */
static u8 seq_seen[MAX_SEQ + 1];

static const char *well_formed(const struct bp_record_bench *r, u32 cpu, u32 app_id)
{
	const u32 known = BP_BENCH_F_EXACT | BP_BENCH_F_TSC | BP_BENCH_F_ICOUNT |
			  BP_BENCH_F_NO_PMU | BP_BENCH_F_LOOPED | BP_BENCH_F_DISTURBED |
			  BP_BENCH_F_NOISE | BP_BENCH_F_CPUID_SERIALIZED;

	if (r->header.size != sizeof(*r))
		return "size";
	if (strnlen(r->table, sizeof(r->table)) == sizeof(r->table) || !r->table[0])
		return "table";
	if (strnlen(r->name, sizeof(r->name)) == sizeof(r->name) || !r->name[0])
		return "name";
	if (strnlen(r->event, sizeof(r->event)) == sizeof(r->event) || !r->event[0])
		return "event";
	if (r->cpu != cpu)
		return "cpu";
	if (r->app_id != app_id)
		return "app_id";
	if (r->param_unit > BP_BENCH_PARAM_CPU || r->work_unit > BP_BENCH_WORK_OP)
		return "units";
	if (r->flags & ~known)
		return "flags";
	if (!r->n_reps || !r->unroll || !r->loops || !r->work || r->disturbed > r->n_reps)
		return "counts";
	/* With an odd number of repetitions the medians are single
	 * measurements: the result follows from them. */
	s64 diff = (s64)(r->median_2n - r->median_n) * 1000;
	u64 d = (u64)r->unroll * r->loops * r->work;
	s64 want = diff >= 0 ? (s64)(((u64)diff + d / 2) / d) : -(s64)(((u64)-diff + d / 2) / d);
	if ((r->n_reps & 1) && r->median != want)
		return "median does not follow from the raw medians";
	if (r->bench_version != BP_BENCH_VERSION || !bench_agg_name(r->agg))
		return "version or agg";
	if (!r->seq || !r->table_row || r->table_row > r->seq)
		return "seq or table_row";
	/* the noise mark is the floor's verdict on the reported aggregate */
	s64 v = r->agg == BP_BENCH_AGG_MIN ? r->min : r->agg == BP_BENCH_AGG_AVG ?
		r->trimmed_mean : r->median;
	if (!!(r->flags & BP_BENCH_F_NOISE) != !bench_above_floor(v, bench_noise_floor(r->iqr, d)))
		return "noise flag";
	if ((r->flags & BP_BENCH_F_EXACT) && r->iqr)
		return "an exact result with a spread";
	if (r->reserved_u32)
		return "reserved";
	for (u32 i = 0; i < sizeof(r->reserved); i++)
		if (r->reserved[i])
			return "reserved";
	return NULL;
}

static void scan_ring(u32 cpu, struct scan *s)
{
	struct bp_ring_reader rd;
	const struct bp_record_header *rec;
	struct bp_ring *rb = profile_ring(cpu);

	memset(s, 0, sizeof(*s));
	if (!rb || bp_ring_reader_init(&rd, (u8 *)rb->ctl, (u64)BP_RING_PAGE_SIZE + rb->data_size))
		return;
	bp_ring_read_begin(&rd);
	while (bp_ring_read_next(&rd, &rec, buf, sizeof(buf)) == 1) {
		if (rec->type == BP_RECORD_APP_START) {
			s->app_start++;
			s->app_id = ((const struct bp_record_app_start *)rec)->app_id;
		}
		if (rec->type == BP_RECORD_LOST)
			s->lost_records++;
		if (rec->type == BP_RECORD_BENCH_END) {
			const struct bp_record_bench_end *e = (const void *)rec;
			s->ends++;
			s->end_results = e->results;
			s->end_lost = e->lost;
			if (e->app_id != s->app_id || e->cpu != cpu || e->reserved_u32 ||
			    !e->last_table[0] || !e->last_row || e->last_row > e->results)
				s->bad++;
		}
		if (rec->type != BP_RECORD_BENCH)
			continue;
		const struct bp_record_bench *r = (const void *)rec;
		const char *why = well_formed(r, cpu, s->app_id);
		s->bench++;
		s->by_cpuid += !!(r->flags & BP_BENCH_F_CPUID_SERIALIZED);
		if (r->seq <= MAX_SEQ && seq_seen[r->seq]++)
			why = why ? why : "a seq number seen twice";
		if (why) {
			if (s->bad++ < 3)
				kprintf("bench: cpu %u: malformed BENCH record %s/%s: %s\n", cpu,
					r->table, r->name, why);
		}
		if (s->kept < ARRAY_SIZE(s->recs))
			s->recs[s->kept++] = *r;
	}
}

/* Two identical runs, in one boot, give identical records. */
static void check_identical(void)
{
	static struct profile_cfg cfg;
	static struct scan s;
	struct bench_opts o;
	struct bench_result r;
	char err[160] = "";
	u8 *mem = bench_mem_2m(1 << 20);

	/* A run for the rings, sampling once a (virtual) second: under icount
	 * that is 10^9 instructions, longer than this whole test. */
	struct profile_opts po = run_opts_boot();
	po.events = "cpu-clock", po.count = "", po.period = 1000000000ul, po.freq = 0;
	po.callchain = false, po.ring_pages = 64;
	int e = profile_parse(&po, &cfg, err, sizeof(err));
	if (!e)
		e = profile_start(&cfg, &(struct profile_app){ .name = "test_bench" }, NULL, err,
				  sizeof(err));
	report(!e && mem, "a run with rings for the records%s%s", err[0] ? ": " : "", err);
	if (e || !mem)
		return;
	opts_tsc(&o, 5);
	for (int round = 0; round < 2; round++) {
		for (u32 i = 0; i < ARRAY_SIZE(kcases); i++) {
			struct bench b = { .table = "test", .name = "k", .param = kcases[i].k,
					   .param_unit = BP_BENCH_PARAM_COUNT,
					   .code = kcases[i].code, .loops = kcases[i].loops };
			bench_run(&b, &o, 5, 1, &r, 1);
		}
		struct bench bc = { .table = "test", .name = "chase", .param = 1 << 20,
				    .param_unit = BP_BENCH_PARAM_BYTES,
				    .work_unit = BP_BENCH_WORK_LOAD, .code = &chase1,
				    .loops = (1 << 20) / 64 / 32,
				    .arg = bench_chase_build(mem, (1 << 20) / 64, 64, 77) };
		bench_run(&bc, &o, 5, 1, &r, 1);
	}
	profile_stop(0);
	bench_mem_2m_free(mem, 1 << 20);

	scan_ring(this_cpu_id(), &s);
	u32 per_round = ARRAY_SIZE(kcases) + 1, same = 0;
	report(s.bench == 2 * per_round && s.bad == 0 && s.lost_records == 0,
	       "%u BENCH records in the ring, all well formed (want %u)", s.bench, 2 * per_round);
	for (u32 i = 0; i < per_round && s.kept == 2 * per_round; i++) {
		struct bp_record_bench a = s.recs[i], b = s.recs[i + per_round];
		report(b.seq == a.seq + per_round && b.table_row == a.table_row + per_round,
		       "record %u of the second round is numbered %u (row %u) after %u (row %u)",
		       i, b.seq, b.table_row, a.seq, a.table_row);
		a.time = b.time = 0;
		a.seq = b.seq = a.table_row = b.table_row = 0;
		same += !memcmp(&a, &b, sizeof(a));
	}
	report(same == per_round, "the second run's records equal the first's (%u of %u, "
	       "time stamps aside)", same, per_round);
}

static void check_exact(void)
{
	report(bench_tsc_counts_insns(), "the TSC counts instructions (QEMU -icount shift=0)");
	if (!bench_tsc_counts_insns()) {
		report_skip("exact checks need -icount shift=0,sleep=off and events=none");
		return;
	}
	check_k();
	overhead();
	check_smi_reads();
	check_chase();
	check_disturbed();
	check_identical();
}

static void check_records(int argc, char **argv)
{
	const char *name = test_arg(argc, argv, "app");
	/* cpuid=1: every record must say its reads were serialized by cpuid
	 * (LFENCE not known to serialize); cpuid=0: none may. */
	const char *cpuid = test_arg(argc, argv, "cpuid");
	const struct app *app = name ? app_find(name) : NULL;
	char *args[32];
	int n = 0;
	static struct scan s;

	if (!app) {
		report(false, "records: no app '%s'", name ? name : "(app= missing)");
		return;
	}
	if (!profile_active()) {
		report_skip("records: no run is active (boot without events=none)");
		return;
	}
	args[n++] = (char *)app->name;
	for (int i = 2; i < argc && n < 31; i++)
		if (strncmp(argv[i], "app=", 4) && strncmp(argv[i], "cpuid=", 6))
			args[n++] = argv[i];
	args[n] = NULL;
	u64 t0 = rdtsc_ordered();
	int rc = app->main(n, args);
	u64 took = rdtsc_ordered() - t0;
	report(rc == EXIT_OK, "%s ran to completion on %u CPU%s in %lu ms (exit code %d)",
	       app->name, smp_cpus(), smp_cpus() == 1 ? "" : "s", tsc_to_ns(took) / 1000000, rc);
	bool all = false;
	for (int i = 1; i < n; i++)
		all |= !strcmp(args[i], "cpu=all");
	u32 total = 0, ends = 0, end_results = 0, end_lost = 0, by_cpuid = 0;
	memset(seq_seen, 0, sizeof(seq_seen));
	for (u32 cpu = 0; cpu < smp_cpus(); cpu++) {
		scan_ring(cpu, &s);
		total += s.bench;
		by_cpuid += s.by_cpuid;
		ends += s.ends;
		if (s.ends) {
			end_results = s.end_results;
			end_lost = s.end_lost;
		}
		bool need = all || cpu == this_cpu_id();
		report(s.bad == 0 && s.app_start == 1 && (!need || s.bench > 0) &&
		       s.lost_records == 0 && !bp_ring_lost(profile_ring(cpu)),
		       "cpu %u: %u BENCH records, all well formed, none lost", cpu, s.bench);
	}
	/* Every CPU's records together are numbered 1..N with no gap, and the
	 * one BENCH_END says N, none lost. */
	u32 gaps = 0;
	for (u32 q = 1; q <= total && q <= MAX_SEQ; q++)
		gaps += !seq_seen[q];
	report(ends == 1 && end_results == total && end_lost == 0 && gaps == 0 && total <= MAX_SEQ,
	       "one BENCH_END: %u results (the rings hold %u, numbered 1..%u with %u gaps), %u lost",
	       end_results, total, total, gaps, end_lost);
	if (cpuid)
		report(by_cpuid == (cpuid[0] == '1' ? total : 0),
		       "%u of %u records say their reads were serialized by cpuid (want %s)",
		       by_cpuid, total, cpuid[0] == '1' ? "all" : "none");
	kprintf("bench: %s left %u BENCH records of %zu bytes\n", app->name, total,
		sizeof(struct bp_record_bench));
}

static int test_bench_main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "exact";

	if (!strcmp(what, "exact"))
		check_exact();
	else if (!strcmp(what, "records"))
		check_records(argc, argv);
	else
		report(false, "unknown mode '%s'", what);
	return report_summary();
}

APP(test_bench, "guest test: the microbenchmark harness and the suite's records",
    test_bench_main, APP_TEST);
