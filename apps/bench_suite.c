/*
 * suite — the benchmark suite in one app: what machine and PMU this is,
 * then memory latency, memory bandwidth, branch prediction, instruction
 * latency/throughput and privileged operations, each with small, quick
 * parameters by default (quick=0 for the full sweeps), then a summary.
 */
#include "apps/bench.h"
#include "profile/profile.h"

static void describe_machine(void)
{
	const struct cpu_features *f = &cpu_features;
	const struct profile_cfg *p = profile_config();
	const char *why;
	char line[200];

	kprintf("suite: machine: %s \"%s\", %u CPU%s, %lu MiB free RAM%s%s\n", f->vendor,
		f->brand, smp_cpus(), smp_cpus() == 1 ? "" : "s",
		(pmm_free_pages() * PAGE_SIZE) >> 20,
		f->hypervisor ? ", under a hypervisor: " : "", f->hypervisor ? f->hypervisor_id : "");
	kprintf("suite: pmu: %s\n", pmu_describe(&pmu_boot_caps, line, sizeof(line)));
	if (bench_pmu_usable(&why))
		kprintf("suite: counting with the PMU (cycles, instructions; branch-misses for "
			"branches) through %s\n", pmu_cpu_lfence_serializes(0) ? "lfence; rdpmc; lfence" :
			"cpuid; rdpmc; cpuid (lfence may not serialize here)");
	else if (pmu_boot_caps.kind == PMU_KIND_NONE)
		kprintf("suite: no PMU here%s, so there are no real cycle counts: the benchmarks "
			"count %s\n", bench_is_tcg() ? " (QEMU TCG: CPUID.0AH is empty, rdpmc "
			"raises #UD)" : "", bench_tsc_meaning());
	else
		kprintf("suite: the PMU is not usable for counting: %s; counting %s\n", why,
			bench_tsc_meaning());
	if (profile_active() && p->nevents)
		kprintf("suite: this run is also sampled (%s%s): its profile follows the "
			"tables; a repetition hit by a sample's NMI is measured again, or dropped\n",
			p->soft ? "cpu-clock: the soft PMU, HPET NMIs" : p->attrs[0].name,
			p->soft ? "" : ", hardware PMU");
	else
		kprintf("suite: no sampling in this run (events=none)\n");
}

static int suite_main(int argc, char **argv)
{
	struct bench_opts o;
	static const struct part {
		const char *name;
		int (*fn)(const struct bench_opts *o);
	} parts[] = {
		{ "memlat", bench_memlat }, { "membw", bench_membw }, { "branch", bench_branch },
		{ "insn", bench_insn }, { "priv", bench_priv },
	};
	u64 took[ARRAY_SIZE(parts)];
	int rc = EXIT_OK, failed = 0;

	if (bench_parse_args(argc, argv, &o))
		return EXIT_USAGE;
	/* quick unless asked otherwise */
	o.quick = true;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "quick=0"))
			o.quick = false;
	describe_machine();
	kprintf("suite: a row's %s is nanoBench's value: the %s of the 2n-runs less the %s of "
		"the n-runs, per unit of work (agg=median|min|avg chooses)\n"
		"suite: iqr: the interquartile range of the per-repetition differences; \"< F\": "
		"below the noise floor F = iqr + one count per unit, not a result; \"? V\": most "
		"repetitions kept an NMI, not a result either\n",
		bench_agg_name(o.agg),
		o.agg == BP_BENCH_AGG_AVG ? "mean of the middle 60%" : bench_agg_name(o.agg),
		o.agg == BP_BENCH_AGG_AVG ? "same" : bench_agg_name(o.agg));
	u64 t0 = rdtsc_ordered();
	for (u32 i = 0; i < ARRAY_SIZE(parts); i++) {
		u64 t = rdtsc_ordered();
		int r = parts[i].fn(&o);
		took[i] = rdtsc_ordered() - t;
		if (r) {
			kprintf("suite: %s failed (exit code %d)\n", parts[i].name, r);
			rc = EXIT_FAIL;
			failed++;
		}
	}
	u64 total = rdtsc_ordered() - t0;
	bench_end(&o);
	kprintf("\nsuite: %zu benchmark groups, %d failed, in %lu TSC ticks (%lu ms):",
		ARRAY_SIZE(parts), failed, total, tsc_to_ns(total) / 1000000);
	for (u32 i = 0; i < ARRAY_SIZE(parts); i++)
		kprintf(" %s %lu ms%s", parts[i].name, tsc_to_ns(took[i]) / 1000000,
			i + 1 < ARRAY_SIZE(parts) ? "," : "\n");
	kprintf("suite: every table row is also a BENCH record in the run's ring; "
		"`bareperf stat` prints them from a capture\n");
	return rc;
}

APP(suite, "the benchmark suite: memory latency and bandwidth, branches, instructions, "
    "privileged ops (quick)", suite_main, 0);
