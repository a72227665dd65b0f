/*
 * bench_events.c — what the harness measures: the events asked for
 * resolved against the PMU (or the "tsc" pseudo-event), and whether the
 * PMU is free to count them while a run may be sampling with it.
 */
#include "apps/bench_internal.h"
#include "kernel/percpu.h"
#include "profile/profile.h"

/* Does the "tsc" event count instructions (QEMU -icount)? The probe:
 * blocks of 1000 and 2000 nops, timed by the TSC. */
BENCH_ASM(tsc_probe, 1000, "", "nop", "");

static u64 __attribute__((noinline)) probe_ticks(bench_fn fn)
{
	u64 t0 = rdtsc_ordered();
	fn(NULL, 1);
	return rdtsc_ordered() - t0;
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
			u64 a = probe_ticks(tsc_probe.run_n);
			u64 b = probe_ticks(tsc_probe.run_2n);
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
bool bench_run_uses_pmu(void)
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
	if (bench_run_uses_pmu()) {
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

/*
 * What a PMU event asks beside its spec, checked against this CPU: its
 * one counter (a trial placement, touching no hardware) and its MSRs
 * (pmu_event_msr_check). What the CPU lacks refuses e alone.
 */
static void check_event_opts(struct bench_event *e)
{
	static struct pmu_ctx trial;
	const struct bench_event_opts *x = e->x;
	char err[120];

	if (x->on_counter) {
		e->attr.flags |= PMU_ATTR_COUNTER;
		e->attr.counter = x->counter;
		if (pmu_open(&trial, &pmu_boot_caps, &e->attr, 1, 0, err, sizeof(err))) {
			strlcpy(e->refused, err, sizeof(e->refused));
			return;
		}
	}
	for (u32 i = 0; i < x->nmsr; i++) {
		if (pmu_event_msr_check(&pmu_boot_caps, x->msr[i].msr, err, sizeof(err))) {
			strlcpy(e->refused, err, sizeof(e->refused));
			return;
		}
	}
}

/* The events to measure: o->events, or the defaults (cycles and
 * instructions with a usable PMU, else tsc). */
int bench_resolve_events(const struct bench_opts *o, struct bench_event *ev)
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
		static const struct bench_event_opts none;
		ev[i].x = o->nevents ? &o->event_opts[i] : &none;
		ev[i].refused[0] = 0;
		ev[i].rdmsr = false;
		ev[i].tsc = !strcmp(ev[i].name, "tsc");
		if (ev[i].tsc && ev[i].x->on_counter)
			strlcpy(ev[i].refused, "the TSC is no PMU counter: it takes no counter",
				sizeof(ev[i].refused));
		if (ev[i].tsc || !bench_msr_event(&ev[i]))
			continue;
		if (!pmu) {
			bench_refuse("event '%s' needs a hardware PMU: %s; the tsc event needs none",
			       ev[i].name, why);
			return -E_NODEV;
		}
		if (pmu_event_parse(ev[i].name, &pmu_boot_caps, &ev[i].attr, err, sizeof(err))) {
			bench_refuse("event '%s': %s", ev[i].name, err);
			return -E_INVAL;
		}
		ev[i].attr.flags &= ~(PMU_ATTR_SAMPLE | PMU_ATTR_FREQ);
		ev[i].attr.period = 0;
		check_event_opts(&ev[i]);
	}
	return n;
}
