/*
 * profile.c — a sampling run: per-CPU perf-ABI rings (ringbuf/), the
 * metadata that makes a capture self-describing, and the NMI paths that
 * write SAMPLE records:
 *
 *   hardware PMU   PMI (LVT PC, NMI) -> pmu_handle_overflow -> emit_sample
 *   soft PMU       HPET comparator -> IOAPIC -> NMI on CPU 0 -> a sample
 *                  there, and an NMI IPI to every other CPU in the run, each
 *                  of which samples itself ("cpu-clock", period in ns)
 *
 * Everything on the NMI path touches only this CPU's ring and counters.
 */
#include "kernel/kernel.h"
#include "kernel/apic.h"
#include "kernel/percpu.h"
#include "kernel/trap.h"
#include "pmu/pmu.h"
#include "ringbuf/ringbuf.h"
#include <uapi/perf_ring.h>

#define MAX_CPUS_PROF	64
#define MAX_CALLCHAIN	32
#define SOFT_EVENT_NAME	"cpu-clock"
#define DEFAULT_SOFT_PERIOD_NS	250000ul	/* 4 kHz, perf's default rate */
#define DEFAULT_HW_FREQ	4000ul
#define HPET_NS_PER_S	1000000000ul

struct cpu_prof {
	struct bp_ring ring;
	void *mem;
	u64 mem_pages;
	struct pmu_ctx pmu;
	u32 soft_pending;		/* ticks posted to this CPU, not yet taken */
	u64 samples;			/* SAMPLE records written */
	u64 soft_merged;		/* ticks that arrived while one was pending */
	u64 nmis;
};

static struct cpu_prof cpus[MAX_CPUS_PROF];
static struct profile_cfg cfg;
static u32 ncpus;
static bool active, soft;
static u64 soft_period_ns, soft_ticks;	/* soft PMU: period, NMIs from the HPET */
static u64 run_id;
extern struct pmu_caps pmu_boot_caps;
extern char __text_start[], __text_end[];

struct bp_ring *profile_ring(u32 cpu)
{
	return cpu < ncpus && cpus[cpu].mem ? &cpus[cpu].ring : NULL;
}

u64 profile_samples(u32 cpu)
{
	return cpu < ncpus ? cpus[cpu].samples : 0;
}

/* ---- the NMI paths ------------------------------------------------ */

static void take_sample(struct trap_frame *f, u64 id, u64 period)
{
	struct percpu *pc = this_cpu();
	struct cpu_prof *cp = &cpus[pc->cpu];
	u64 ips[MAX_CALLCHAIN];
	struct bp_sample s = {
		.ip = f->rip,
		.pid = run_id,
		.tid = pc->cpu,
		.time = rdtsc(),
		.cpu = pc->cpu,
		.id = id,
		.period = period,
	};

	if (cfg.sample_type & BP_SAMPLE_CALLCHAIN) {
		bool on_stack = f->rsp >= pc->stack_lo && f->rsp < pc->stack_hi;
		s.ips = ips;
		s.nr_ips = on_stack ? bp_callchain_fp(f->rip, f->rbp, f->rsp, pc->stack_hi,
						      ips, MAX_CALLCHAIN)
				    : (ips[0] = f->rip, 1);
	}
	if (!bp_ring_output_sample(&cp->ring, cfg.sample_type, BP_MISC_KERNEL, &s))
		cp->samples++;
}

static void soft_tick(struct trap_frame *f, void *arg)
{
	(void)arg;
	u32 me = this_cpu()->cpu;

	soft_ticks++;
	/* Wake the other CPUs first so their samples are as close in time. */
	if (ncpus > 1) {
		for (u32 i = 0; i < ncpus; i++)
			if (i != me)
				__atomic_add_fetch(&cpus[i].soft_pending, 1, __ATOMIC_RELEASE);
		apic_send_ipi(0, APIC_DM_NMI | APIC_DEST_OTHERS);
	}
	take_sample(f, 0, soft_period_ns);
}

/*
 * The NMI IPI from soft_tick on the other CPUs: ours if ticks were posted.
 * A CPU that could not run for longer than a period (a descheduled vCPU)
 * finds several; it samples once and says how many it could not take in a
 * LOST_SAMPLES record, so no tick disappears silently.
 */
static bool soft_ipi_nmi(struct trap_frame *f)
{
	struct percpu *pc = this_cpu();
	struct cpu_prof *cp;
	u32 ticks;

	if (!active || !soft || pc->cpu >= ncpus)
		return false;
	cp = &cpus[pc->cpu];
	ticks = __atomic_exchange_n(&cp->soft_pending, 0, __ATOMIC_ACQ_REL);
	if (!ticks)
		return false;
	if (ticks > 1) {
		struct bp_record_lost_samples r = {
			.header = { BP_RECORD_LOST_SAMPLES, 0, sizeof(r) },
			.lost = ticks - 1,
		};
		cp->soft_merged += ticks - 1;
		bp_ring_output(&cp->ring, &r);
	}
	take_sample(f, 0, soft_period_ns);
	return true;
}

static void emit_sample(struct pmu_ctx *ctx, int idx, u64 period, void *arg)
{
	(void)ctx;
	take_sample(arg, idx, period);
}

static void throttled(struct pmu_ctx *ctx, enum pmu_throttle_event ev, void *arg)
{
	struct cpu_prof *cp = &cpus[this_cpu()->cpu];
	struct bp_record_throttle r = {
		.header = { ev == PMU_THROTTLE ? BP_RECORD_THROTTLE : BP_RECORD_UNTHROTTLE, 0,
			    sizeof(r) },
		.time = rdtsc(),
	};

	(void)ctx, (void)arg;
	bp_ring_output(&cp->ring, &r);
}

static bool pmi_nmi(struct trap_frame *f)
{
	struct percpu *pc = this_cpu();

	if (!active || soft || pc->cpu >= ncpus)
		return false;
	return pmu_handle_overflow(&cpus[pc->cpu].pmu, emit_sample, f) > 0;
}

/* ---- set-up --------------------------------------------------------- */

int profile_parse(const char *events, u64 period, u64 freq, bool callchain,
		  u32 ring_pages, struct profile_cfg *out, char *err, size_t n)
{
	char list[256];
	bool have_pmu = pmu_boot_caps.kind != PMU_KIND_NONE;

	memset(out, 0, sizeof(*out));
	out->ring_pages = ring_pages;
	out->sample_type = BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID |
			   BP_SAMPLE_CPU | BP_SAMPLE_PERIOD |
			   (callchain ? BP_SAMPLE_CALLCHAIN : 0);
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
		if (!strcmp(p, SOFT_EVENT_NAME)) {
			out->soft = true;
			strlcpy(a->name, SOFT_EVENT_NAME, sizeof(a->name));
			a->period = period ? period : freq ? HPET_NS_PER_S / freq : DEFAULT_SOFT_PERIOD_NS;
			a->flags = PMU_ATTR_SAMPLE;
		} else {
			if (!have_pmu) {
				ksnprintf(err, n, "event '%s': this machine has no PMU (%s); "
					  "use events=cpu-clock, the HPET-driven soft PMU", p,
					  cpu_features.hypervisor ? "a hypervisor without a vPMU" :
					  "none found");
				return -E_NODEV;
			}
			int e = pmu_event_parse(p, &pmu_boot_caps, a, err, n);
			if (e)
				return e;
			if (!(a->flags & PMU_ATTR_SAMPLE)) {
				a->flags |= PMU_ATTR_SAMPLE | (period ? 0 : PMU_ATTR_FREQ);
				a->period = period ? period : 100000;
				a->freq = period ? 0 : freq ? freq : DEFAULT_HW_FREQ;
			}
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

static void write_meta(struct bp_ring *rb)
{
	struct bp_record_run_meta m = {
		.header = { BP_RECORD_RUN_META, 0, sizeof(m) },
		.meta_version = BP_META_VERSION,
		.flags = (cpu_features.invariant_tsc ? BP_META_TSC_INVARIANT : 0) |
			 (soft ? BP_META_SOFT_PMU : 0),
		.run_id = run_id,
		.nr_cpus = ncpus,
		.tsc_hz = tsc_hz,
		.start_tsc = rdtsc(),
	};
	u32 len;
	const u8 *id = kernel_build_id(&len);

	/* ns = (tsc * mult) >> shift with the largest shift that keeps mult
	 * below 2^32 (perf's time_mult/time_shift); 10^9 << 32 fits 64 bits. */
	for (m.time_shift = 32; m.time_shift > 0 && tsc_hz; m.time_shift--) {
		u64 mult = (HPET_NS_PER_S << m.time_shift) / tsc_hz;
		if (mult < (1ul << 32)) {
			m.time_mult = mult;
			break;
		}
	}
	if (id)
		memcpy(m.build_id, id, MIN(len, (u32)sizeof(m.build_id)));
	bp_ring_output(rb, &m);

	for (int i = 0; i < cfg.nevents; i++) {
		struct bp_record_event_desc d = {
			.header = { BP_RECORD_EVENT_DESC, 0, sizeof(d) },
			.id = i,
			.config = cfg.attrs[i].config,
			.sample_type = cfg.sample_type,
			.sample_period = cfg.attrs[i].period,
			.group_id = 0,
		};
		strlcpy(d.name, cfg.attrs[i].name, sizeof(d.name));
		bp_ring_output(rb, &d);
	}
}

static void write_cpu_records(struct bp_ring *rb, u32 cpu)
{
	const struct cpu_features *f = &cpu_features;
	struct bp_record_cpu_info ci = {
		.header = { BP_RECORD_CPU_INFO, 0, sizeof(ci) },
		.cpu = cpu,
		.apic_id = apic_id(),
		.vendor = !strcmp(f->vendor, "GenuineIntel") ? BP_CPU_VENDOR_INTEL :
			  !strcmp(f->vendor, "AuthenticAMD") ? BP_CPU_VENDOR_AMD :
			  BP_CPU_VENDOR_UNKNOWN,
		.family = f->family, .model = f->model, .stepping = f->stepping,
	};
	const struct pmu_caps *c = &pmu_boot_caps;
	struct bp_record_pmu_caps pc = {
		.header = { BP_RECORD_PMU_CAPS, 0, sizeof(pc) },
		.cpu = cpu,
		.kind = soft ? BP_PMU_SOFT : c->kind == PMU_KIND_NONE ? BP_PMU_NONE :
			c->intel ? BP_PMU_INTEL_ARCH : BP_PMU_AMD,
		.version = c->version,
		.nr_gp = c->nr_gp, .nr_fixed = c->nr_fixed,
		.gp_width = c->gp_width, .fixed_width = c->fixed_width,
		.flags = (c->fw_write ? BP_PMU_CAP_FULL_WIDTH : 0) |
			 (c->has_global ? BP_PMU_CAP_GLOBAL_CTRL : 0) |
			 (c->freeze ? BP_PMU_CAP_FREEZE_PMI : 0),
		.arch_events_unavail = c->arch_events_unavail,
		.perf_capabilities = c->perf_capabilities,
	};

	memcpy(ci.vendor_string, f->vendor, sizeof(f->vendor) - 1);
	memcpy(ci.brand, f->brand, MIN(sizeof(ci.brand), sizeof(f->brand) - 1));
	bp_ring_output(rb, &ci);
	bp_ring_output(rb, &pc);
}

static void app_record(const char *app, u64 text_start, u64 text_end, bool start, s64 status)
{
	u32 cpu = this_cpu()->cpu;
	struct bp_ring *rb = &cpus[cpu].ring;

	if (start) {
		struct bp_record_app_start r = {
			.header = { BP_RECORD_APP_START, 0, sizeof(r) },
			.app_id = run_id, .cpu = cpu, .time = rdtsc(),
			.text_start = text_start, .text_end = text_end,
		};
		strlcpy(r.name, app, sizeof(r.name));
		bp_ring_output(rb, &r);
	} else {
		struct bp_record_app_stop r = {
			.header = { BP_RECORD_APP_STOP, 0, sizeof(r) },
			.app_id = run_id, .cpu = cpu, .time = rdtsc(), .status = status,
		};
		bp_ring_output(rb, &r);
	}
}

struct start_args {
	const char *app;
	int err;
};

/* On each CPU: its records, and its PMU context started. */
static void start_cpu(void *arg)
{
	struct start_args *a = arg;
	u32 cpu = this_cpu()->cpu;
	struct cpu_prof *cp = &cpus[cpu];
	char err[120];

	write_cpu_records(&cp->ring, cpu);
	app_record(a->app, (u64)__text_start, (u64)__text_end, true, 0);
	if (soft)
		return;
	if (pmu_open(&cp->pmu, &pmu_boot_caps, cfg.attrs, cfg.nevents, 0, err, sizeof(err))) {
		kprintf("profile: cpu %u: %s\n", cpu, err);
		a->err = -E_INVAL;
		return;
	}
	pmu_set_throttle(&cp->pmu, 0, throttled, NULL);
	apic_lvtpc_set_nmi();
	pmu_start(&cp->pmu);
}

static void stop_cpu(void *arg)
{
	u32 cpu = this_cpu()->cpu;

	if (!soft)
		pmu_stop(&cpus[cpu].pmu);
	app_record(NULL, 0, 0, false, *(int *)arg);
}

int profile_start(const struct profile_cfg *c, const char *app, char *err, size_t n)
{
	static bool registered;
	struct start_args args = { app, 0 };

	if (!c->nevents)
		return 0;
	cfg = *c;
	soft = c->soft;
	ncpus = MIN(smp_cpus(), (u32)MAX_CPUS_PROF);
	run_id++;
	if (!registered) {
		nmi_register(soft_ipi_nmi);
		nmi_register(pmi_nmi);
		registered = true;
	}
	for (u32 i = 0; i < ncpus; i++) {
		struct cpu_prof *cp = &cpus[i];
		if (!cp->mem || cp->mem_pages != c->ring_pages) {
			if (cp->mem)
				pmm_free(virt_to_phys(cp->mem), 1 + cp->mem_pages);
			u64 pa = pmm_alloc(1 + c->ring_pages);
			if (!pa) {
				ksnprintf(err, n, "no memory for a %u-page ring on cpu %u",
					  c->ring_pages, i);
				return -E_NOMEM;
			}
			cp->mem = (void *)pa;
			cp->mem_pages = c->ring_pages;
		}
		struct bp_ring_config rc = { .id = i };
		int e = bp_ring_init(&cp->ring, cp->mem, (1 + c->ring_pages) * PAGE_SIZE, &rc);
		if (e) {
			ksnprintf(err, n, "ring on cpu %u: %s", i, bp_ring_strerror(e));
			return -E_INVAL;
		}
		cp->samples = cp->soft_merged = 0;
		cp->soft_pending = 0;
	}
	write_meta(&cpus[0].ring);
	__atomic_store_n(&active, true, __ATOMIC_RELEASE);
	smp_call_all(start_cpu, &args);
	if (args.err) {
		ksnprintf(err, n, "could not start the PMU on every CPU");
		profile_stop(EXIT_FAIL);
		return args.err;
	}
	if (soft) {
		soft_period_ns = cfg.attrs[0].period;
		u64 ticks = hpet_hz() * soft_period_ns / HPET_NS_PER_S;
		int e = hpet_nmi_start(ticks ? ticks : 1, apic_id(), soft_tick, NULL);
		if (e) {
			ksnprintf(err, n, "soft PMU: %s", e == -E_NODEV ?
				  "no HPET comparator can deliver NMIs here" :
				  "the period is out of the HPET's range");
			profile_stop(EXIT_FAIL);
			return e;
		}
	}
	return 0;
}

void profile_stop(int status)
{
	if (!active)
		return;
	if (soft)
		hpet_nmi_stop();
	smp_call_all(stop_cpu, &status);
	__atomic_store_n(&active, false, __ATOMIC_RELEASE);
}

bool profile_active(void)
{
	return active;
}

const struct profile_cfg *profile_config(void)
{
	return &cfg;
}

u32 profile_cpus(void)
{
	return ncpus;
}

u64 profile_soft_ticks(void)
{
	return soft_ticks;
}

u64 profile_soft_merged(u32 cpu)
{
	return cpu < ncpus ? cpus[cpu].soft_merged : 0;
}

/* ---- the console summary ------------------------------------------- */

#define SUMMARY_SLOTS	256
#define SUMMARY_TOP	8

struct hot {
	u64 func;		/* symbol start, or the ip when unknown */
	u64 count;
};

/*
 * Count samples per function across the rings and print the hottest. It
 * reads without releasing (no bp_ring_read_end), so the stream to the host
 * still carries every record. Not NMI-safe.
 */
void profile_summary(void)
{
	static struct hot table[SUMMARY_SLOTS];
	static u8 buf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));
	u64 total = 0, lost = 0, other = 0;

	if (!cfg.nevents)
		return;
	memset(table, 0, sizeof(table));
	for (u32 cpu = 0; cpu < ncpus; cpu++) {
		struct bp_ring_reader r;
		const struct bp_record_header *rec;

		lost += bp_ring_lost(&cpus[cpu].ring);
		if (bp_ring_reader_init(&r, cpus[cpu].mem, (1 + cpus[cpu].mem_pages) * PAGE_SIZE))
			continue;
		bp_ring_read_begin(&r);
		while (bp_ring_read_next(&r, &rec, buf, sizeof(buf)) == 1) {
			struct bp_sample s;
			u64 off;
			if (rec->type != BP_RECORD_SAMPLE ||
			    bp_sample_parse(cfg.sample_type, rec, &s))
				continue;
			total++;
			u64 func = ksym_lookup(s.ip, &off, NULL) ? s.ip - off : s.ip;
			u32 h = (func >> 4) % SUMMARY_SLOTS, i;
			for (i = 0; i < SUMMARY_SLOTS; i++, h = (h + 1) % SUMMARY_SLOTS)
				if (!table[h].count || table[h].func == func)
					break;
			if (i == SUMMARY_SLOTS) {
				other++;
				continue;
			}
			table[h].func = func;
			table[h].count++;
		}
	}
	kprintf("profile: %s, %lu samples on %u CPU%s, %lu lost%s\n",
		cfg.soft ? "cpu-clock (soft PMU: HPET NMIs)" : cfg.attrs[0].name,
		total, ncpus, ncpus == 1 ? "" : "s", lost,
		lost ? " (ring full: raise ring_pages=)" : "");
	for (int k = 0; k < SUMMARY_TOP && total; k++) {
		struct hot *best = NULL;
		for (u32 i = 0; i < SUMMARY_SLOTS; i++)
			if (table[i].count && (!best || table[i].count > best->count))
				best = &table[i];
		if (!best)
			break;
		const char *name = ksym_lookup(best->func, NULL, NULL);
		u64 pct10 = best->count * 1000 / total;
		kprintf("  %5lu.%lu%%  %8lu  %s\n", pct10 / 10, pct10 % 10, best->count,
			name ? name : "?");
		best->count = 0;
	}
	if (other)
		kprintf("  (%lu samples in functions beyond the summary's table)\n", other);
}
