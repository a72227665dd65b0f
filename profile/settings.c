/*
 * settings.c — a run's settings, checked: the events= and count= lists
 * turned into a struct profile_cfg, the one check of every sampling
 * period and frequency (the command line and START_RUN alike), and
 * trace= parsed (trace_parse), all before the run starts.
 */
#include "kernel/kernel.h"
#include "kernel/platform/apic.h"
#include "pmu/pmu.h"
#include "profile/profile_internal.h"
#include "profile/trace.h"
#include <uapi/perf_ring.h>

#define DEFAULT_HW_FREQ	4000ul

static const struct {
	const char *name;
	enum profile_soft kind;
	u64 config;
} soft_events[] = {
	{ "tsc", PROFILE_TSC, BP_CONFIG_SOFT_TSC },
	{ "cpu-clock", PROFILE_CPU_CLOCK, BP_CONFIG_SOFT_CPU_CLOCK },
	{ "task-clock", PROFILE_TASK_CLOCK, BP_CONFIG_SOFT_TASK_CLOCK },
};

/* ns -> HPET ticks without overflow for any period and HPET rate. */
bool profile_hpet_ticks(u64 ns, u64 *ticks)
{
	u64 hz = hpet_hz(), whole = ns / HPET_NS_PER_S, part = ns % HPET_NS_PER_S;

	if (!hz || (whole && hz > ~0ul / whole))
		return false;
	*ticks = whole * hz;
	u64 frac = hz / HPET_NS_PER_S * part + hz % HPET_NS_PER_S * part / HPET_NS_PER_S;
	if (*ticks + frac < *ticks)
		return false;
	*ticks += frac;
	return true;
}

/*
 * The one check of a sampling event's period and frequency, for the
 * command line and the control channel alike; every bound is tested
 * before any arithmetic that could overflow. A period is in events
 * (hardware) or ns (cpu-clock); 0 means not given.
 *  - both given: refused, as perf refuses -c with -F;
 *  - freq: at most max_rate (perf's perf_event_max_sample_rate check)
 *    and one per ns;
 *  - cpu-clock: at least the measured floor (profile_init), at most what one HPET
 *    comparator step can hold;
 *  - hardware: at least 2 (Linux's x86_pmu_hw_config refuses 1: the
 *    reload value -1 overflows at once); the drivers add per-model limits.
 */
static int check_rate(const char *ev, bool is_soft, u64 period, u64 freq, u32 max_rate,
		      char *err, size_t n)
{
	if (period && freq) {
		ksnprintf(err, n, "period=%lu and freq=%lu together: give one or the other",
			  period, freq);
		return -E_INVAL;
	}
	if (freq && ((max_rate && freq > max_rate) || freq > HPET_NS_PER_S)) {
		if (max_rate && freq > max_rate)
			ksnprintf(err, n, "freq=%lu is above max_rate=%u, the most samples/s "
				  "a CPU may take", freq, max_rate);
		else
			ksnprintf(err, n, "freq=%lu is above one sample per ns", freq);
		return -E_RANGE;
	}
	if (!is_soft) {
		if (period == 1) {
			ksnprintf(err, n, "%s: period=1 is too short: a hardware period is at "
				  "least 2", ev);
			return -E_RANGE;
		}
		return 0;
	}
	u64 ns = period ? period : freq ? HPET_NS_PER_S / freq : DEFAULT_SOFT_PERIOD_NS;
	if (ns < prof_floor.floor_ns) {
		if (freq)
			ksnprintf(err, n, "freq=%lu is above the soft PMU's limit here, %lu "
				  "samples/s (its handler takes %lu ns; it may use %d%% of "
				  "a CPU)", freq, HPET_NS_PER_S / prof_floor.floor_ns,
				  prof_floor.cost_ns, CPU_TIME_MAX_PERCENT);
		else
			ksnprintf(err, n, "period=%lu ns is below the soft PMU's shortest period "
				  "here, %lu ns (its handler takes %lu ns; it may use %d%% of "
				  "a CPU)", ns, prof_floor.floor_ns, prof_floor.cost_ns,
				  CPU_TIME_MAX_PERCENT);
		return -E_RANGE;
	}
	u64 ticks, ahz = apic_timer_hz();
	/* No HPET: one APIC timer count (32 bits, divide by 1) per sample. */
	if (!hpet_hz() && ahz && ns / HPET_NS_PER_S * ahz + ns % HPET_NS_PER_S * ahz /
				 HPET_NS_PER_S > 0xfffffffful) {
		ksnprintf(err, n, "period=%lu ns is longer than the APIC timer's longest, %lu ns",
			  ns, 0xfffffffful / ahz * HPET_NS_PER_S +
			  0xfffffffful % ahz * HPET_NS_PER_S / ahz);
		return -E_RANGE;
	}
	if (hpet_hz() && (!profile_hpet_ticks(ns, &ticks) || ticks > HPET_NMI_MAX_TICKS)) {
		u64 max_ns = HPET_NMI_MAX_TICKS / hpet_hz() * HPET_NS_PER_S +
			     HPET_NMI_MAX_TICKS % hpet_hz() * HPET_NS_PER_S / hpet_hz();
		ksnprintf(err, n, "period=%lu ns is longer than the HPET's longest, %lu ns",
			  ns, max_ns);
		return -E_RANGE;
	}
	return 0;
}

/* The sampling events (events=) of a run. */
static int parse_events(const char *events, u64 period, u64 freq, u32 max_rate,
			struct profile_cfg *out, char *err, size_t n)
{
	char list[256];
	bool have_pmu = pmu_boot_caps.kind != PMU_KIND_NONE;

	if (!strcmp(events, "none"))
		return 0;
	if (!*events)
		events = have_pmu ? "cycles" : SOFT_EVENT_NAME;
	if (strlcpy(list, events, sizeof(list)) >= sizeof(list)) {
		ksnprintf(err, n, "events: the list is longer than %zu characters", sizeof(list) - 1);
		return -E_INVAL;
	}
	for (char *p = list, *next; p && *p; p = next) {
		next = strchr(p, ',');
		if (next)
			*next++ = 0;
		if (out->nevents == PMU_MAX_EVENTS) {
			ksnprintf(err, n, "events: more than %d events", PMU_MAX_EVENTS);
			return -E_INVAL;
		}
		struct pmu_event_attr *a = &out->attrs[out->nevents];
		bool soft = !strcmp(p, SOFT_EVENT_NAME);
		if (!soft) {
			/* The name first: a misspelling is not a missing PMU. */
			int e = pmu_event_parse(p, &pmu_boot_caps, a, err, n);
			if (e == -E_NODEV && !have_pmu &&
			    (!strcmp(p, "cycles") || !strcmp(p, "cpu-cycles"))) {
				/* As perf does without hardware cycles: sample cpu-clock. */
				kprintf("bareperf: warning: event '%s': this machine has no PMU (%s); "
					"sampling cpu-clock (the HPET soft PMU) instead\n", p,
					pmu_boot_caps.none_reason);
				soft = true;
			} else if (e) {
				if (e == -E_NODEV && !have_pmu) {
					size_t k = strlen(err);
					ksnprintf(err + k, n - k, "; use events=cpu-clock, the "
						  "HPET-driven soft PMU");
				}
				return e;
			} else {
				/* The event's own period=/freq= terms win over the run's. */
				if (a->flags & PMU_ATTR_SAMPLE)
					e = check_rate(p, false, a->flags & PMU_ATTR_FREQ ? 0 : a->period,
						       a->flags & PMU_ATTR_FREQ ? a->freq : 0, max_rate,
						       err, n);
				else
					e = check_rate(p, false, period, freq, max_rate, err, n);
				if (e)
					return e;
				if (!(a->flags & PMU_ATTR_SAMPLE)) {
					a->flags |= PMU_ATTR_SAMPLE | (period ? 0 : PMU_ATTR_FREQ);
					a->period = period ? period : 100000;
					a->freq = period ? 0 : freq ? freq : DEFAULT_HW_FREQ;
				}
			}
		}
		if (soft) {
			memset(a, 0, sizeof(*a));
			out->soft = true;
			out->soft_ev[out->nevents] = PROFILE_CPU_CLOCK;
			strlcpy(a->name, SOFT_EVENT_NAME, sizeof(a->name));
			a->config = BP_CONFIG_SOFT_CPU_CLOCK;
			a->generic = PMU_EV_RAW;
			a->fixed = -1;
			int e = check_rate(p, true, period, freq, max_rate, err, n);
			if (e)
				return e;
			a->period = period ? period : freq ? HPET_NS_PER_S / freq : DEFAULT_SOFT_PERIOD_NS;
			a->flags = PMU_ATTR_SAMPLE;
		}
		out->nevents++;
	}
	if (out->soft && out->nevents > 1) {
		ksnprintf(err, n, "events: %s cannot be combined with other events yet",
			  SOFT_EVENT_NAME);
		return -E_INVAL;
	}
	return 0;
}

/* The counting events (count=) of a run whose sampling events are parsed. */
static int parse_count(const char *list, struct profile_cfg *out, char *err, size_t n)
{
	char buf[256];
	bool have_pmu = pmu_boot_caps.kind != PMU_KIND_NONE;

	if (!list || !*list)
		return 0;
	if (strlcpy(buf, list, sizeof(buf)) >= sizeof(buf)) {
		ksnprintf(err, n, "count: the list is longer than %zu characters", sizeof(buf) - 1);
		return -E_INVAL;
	}
	for (char *p = buf, *next; p && *p; p = next) {
		next = strchr(p, ',');
		if (next)
			*next++ = 0;
		int i = out->nevents + out->ncount;
		if (i == PMU_MAX_EVENTS) {
			ksnprintf(err, n, "count: more than %d events in a run (sampled and counted)",
				  PMU_MAX_EVENTS);
			return -E_INVAL;
		}
		struct pmu_event_attr *a = &out->attrs[i];
		memset(a, 0, sizeof(*a));
		out->soft_ev[i] = PROFILE_HW;
		for (size_t k = 0; k < ARRAY_SIZE(soft_events); k++) {
			if (strcmp(p, soft_events[k].name))
				continue;
			strlcpy(a->name, p, sizeof(a->name));
			a->config = soft_events[k].config;
			a->generic = PMU_EV_RAW;
			a->fixed = -1;
			out->soft_ev[i] = soft_events[k].kind;
		}
		if (out->soft_ev[i] == PROFILE_HW) {
			/* The name first: a misspelling is not a missing PMU. */
			int e = pmu_event_parse(p, &pmu_boot_caps, a, err, n);
			if (e == -E_NODEV && !have_pmu) {
				size_t k = strlen(err);
				ksnprintf(err + k, n - k, "; soft events: tsc, cpu-clock, task-clock");
			}
			if (e)
				return e;
			if (a->flags & PMU_ATTR_SAMPLE) {
				ksnprintf(err, n, "count: '%s' has a period or freq: sampled events go "
					  "in events=", p);
				return -E_INVAL;
			}
		}
		out->ncount++;
	}
	if (out->nevents && out->ncount)
		out->sample_type |= BP_SAMPLE_READ;
	return 0;
}

int profile_parse(const struct profile_opts *o, struct profile_cfg *out, char *err, size_t n)
{
	memset(out, 0, sizeof(*out));
	out->ring_pages = o->ring_pages;
	out->max_rate = o->max_rate;
	out->sample_type = BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID |
			   BP_SAMPLE_CPU | BP_SAMPLE_PERIOD |
			   (o->callchain ? BP_SAMPLE_CALLCHAIN : 0);
	const char *events = o->events ? o->events : "";
	/* Counting events alone are a counting run (bareperf stat): no
	 * sampling unless events= asks for it too. */
	if (!*events && o->count && *o->count)
		events = "none";
	int e = parse_events(events, o->period, o->freq, o->max_rate, out, err, n);
	if (!e)
		e = parse_count(o->count, out, err, n);
	/* Its functions looked up now: a bad trace= is refused with the
	 * other settings, not once the run has begun. */
	return e ? e : trace_parse(o->trace ? o->trace : "", o->aux_pages, &out->trace, err, n);
}
