/*
 * records.c — the records of a run other than SAMPLEs (perf_ring.h): the
 * metadata that makes a capture self-describing (RUN_META, EVENT_DESC,
 * CPU_INFO, PMU_CAPS), APP_START/APP_STOP, the COUNTS of counting events,
 * the soft PMU's TICKS account, LOST_SAMPLES and THROTTLE; and the values
 * of events they carry.
 */
#include "kernel/kernel.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/platform/quiet.h"
#include "pmu/pmu.h"
#include "profile/profile_internal.h"
#include "ringbuf/ringbuf.h"
#include <uapi/perf_ring.h>

extern char __text_start[], __text_end[];

/* Event i's value on this CPU at TSC now: PMU events from the context,
 * soft ones from the TSC over the CPU's part of the run. NMI-safe. */
void prof_event_value(struct cpu_prof *cp, int i, u64 now, struct pmu_value *v)
{
	u64 window = now - cp->t_start;

	v->count = v->enabled = v->running = 0;
	switch (prof.cfg.soft_ev[i]) {
	case PROFILE_HW:
		if (cp->pmu_on)
			pmu_read_value(&cp->pmu, prof.hw_idx[i], v);
		return;
	case PROFILE_TSC:
		v->count = window;
		break;
	case PROFILE_CPU_CLOCK:
		v->count = tsc_to_ns(window);
		break;
	case PROFILE_TASK_CLOCK:
		if (cp->app_here && cp->app_t0 && now > cp->app_t0)
			v->count = tsc_to_ns((cp->app_t1 ? MIN(cp->app_t1, now) : now) - cp->app_t0);
		break;
	}
	v->enabled = v->running = window;
}

int prof_put(struct bp_ring *rb, const void *rec)
{
	int err = bp_ring_output(rb, rec);

	prof_count_drop((struct cpu_prof *)((char *)rb - offsetof(struct cpu_prof, ring)), err);
	return err;
}

int profile_output(const void *rec)
{
	u32 cpu = this_cpu()->cpu;

	if (!__atomic_load_n(&prof.active, __ATOMIC_ACQUIRE) || cpu >= prof.ncpus || !prof.cpus[cpu].mem)
		return BP_ERING_NODATA;
	return prof_put(&prof.cpus[cpu].ring, rec);
}

void prof_write_throttle(struct cpu_prof *cp, u32 type)
{
	struct bp_record_throttle r = {
		.header = { type, 0, sizeof(r) },
		.time = rdtsc(),
	};

	prof_put(&cp->ring, &r);
}

/* PERF_RECORD_LOST_SAMPLES with perf's sample_id trailer (perf_ring.h),
 * on this CPU's ring. */
void prof_write_lost_samples(struct cpu_prof *cp, u64 lost)
{
	struct {
		struct bp_record_lost_samples r;
		struct bp_sample_id id;
	} rec = {
		.r = { .header = { BP_RECORD_LOST_SAMPLES, 0, sizeof(rec) }, .lost = lost },
		.id = { .pid = prof.run_id, .tid = this_cpu()->cpu, .time = rdtsc(),
			.id = 0, .cpu = this_cpu()->cpu },
	};

	prof_put(&cp->ring, &rec);
}

void prof_write_meta(struct bp_ring *rb)
{
	struct bp_record_run_meta m = {
		.header = { BP_RECORD_RUN_META, 0, sizeof(m) },
		.meta_version = BP_META_VERSION,
		.flags = (cpu_features.invariant_tsc ? BP_META_TSC_INVARIANT : 0) |
			 (prof.soft ? BP_META_SOFT_PMU : 0) | (prof.soft_lapic ? BP_META_SOFT_LAPIC : 0),
		.run_id = prof.run_id,
		.nr_cpus = prof.ncpus,
		.tsc_hz = tsc_hz,
		.start_tsc = rdtsc(),
	};
	u32 len;
	const u8 *id = kernel_build_id(&len);
	bool group = prof.cfg.sample_type & BP_SAMPLE_READ;

	quiet_state(&m.quiet_asked, &m.quiet_done, &m.quiet_refused);

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
	prof_put(rb, &m);

	/* Counting events have sample_period 0. Their sample_type is the
	 * run's all the same: readers learn how to parse SAMPLEs from it. */
	for (int i = 0; i < prof_events_total(); i++) {
		struct bp_record_event_desc d = {
			.header = { BP_RECORD_EVENT_DESC, 0, sizeof(d) },
			.id = i,
			.config = prof.cfg.attrs[i].config,
			.sample_type = prof.cfg.sample_type,
			.sample_period = i < prof.cfg.nevents ? prof.cfg.attrs[i].period : 0,
			.group_id = group ? 0 : i,
			.flags = group && i == 0 ? BP_EVENT_F_LEADER : 0,
		};
		strlcpy(d.name, prof.cfg.attrs[i].name, sizeof(d.name));
		prof_put(rb, &d);
	}
}

void prof_write_cpu_records(struct bp_ring *rb, u32 cpu)
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
		.kind = prof.soft ? BP_PMU_SOFT : c->kind == PMU_KIND_NONE ? BP_PMU_NONE :
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
	prof_put(rb, &ci);
	prof_put(rb, &pc);
}

/* APP_START or APP_STOP on this CPU's ring, stamped with time. */
void prof_app_record(const char *app, u64 time, bool start, s64 status)
{
	u32 cpu = this_cpu()->cpu;
	struct bp_ring *rb = &prof.cpus[cpu].ring;

	if (start) {
		struct bp_record_app_start r = {
			.header = { BP_RECORD_APP_START, 0, sizeof(r) },
			.app_id = prof.run_id, .cpu = cpu, .time = time,
			.text_start = prof.app_text0 ? prof.app_text0 : (u64)__text_start,
			.text_end = prof.app_text0 ? prof.app_text1 : (u64)__text_end,
			.main_cpu = prof.app_cpu1,
		};
		if (prof.app_record)
			prof_put(rb, prof.app_record);
		strlcpy(r.name, app ? app : "", sizeof(r.name));
		prof_put(rb, &r);
	} else {
		struct bp_record_app_stop r = {
			.header = { BP_RECORD_APP_STOP, 0, sizeof(r) },
			.app_id = prof.run_id, .cpu = cpu, .time = time, .status = status,
		};
		prof_put(rb, &r);
	}
}

/* The final counts of the CPU's counting events: over the app's window
 * where it ran, else over the CPU's part of the run. */
void prof_final_counts(struct cpu_prof *cp)
{
	for (int j = 0; j < prof.cfg.ncount; j++) {
		int i = prof.cfg.nevents + j;
		struct pmu_value *v = &cp->counts[j];

		if (!cp->app_here || !cp->app_t1) {
			prof_event_value(cp, i, cp->t_stop, v);
		} else if (prof.cfg.soft_ev[i] == PROFILE_HW) {
			v->count = cp->app_end[j].count - cp->app_base[j].count;
			v->enabled = cp->app_end[j].enabled - cp->app_base[j].enabled;
			v->running = cp->app_end[j].running - cp->app_base[j].running;
		} else {
			u64 window = cp->app_t1 - cp->app_t0;
			v->count = prof.cfg.soft_ev[i] == PROFILE_TSC ? window : tsc_to_ns(window);
			v->enabled = v->running = window;
		}
	}
}

void prof_write_counts(struct cpu_prof *cp, u32 cpu)
{
	struct {
		struct bp_record_counts h;
		struct bp_count_entry e[PMU_MAX_EVENTS];
	} r;
	u32 nr = prof.cfg.ncount;

	r.h = (struct bp_record_counts){
		.header = { BP_RECORD_COUNTS, 0, sizeof(r.h) + nr * sizeof(r.e[0]) },
		.app_id = prof.run_id, .cpu = cpu, .nr = nr,
	};
	for (u32 j = 0; j < nr; j++)
		r.e[j] = (struct bp_count_entry){ prof.cfg.nevents + j, cp->counts[j].count,
						  cp->counts[j].enabled, cp->counts[j].running };
	prof_put(&cp->ring, &r);
}

/*
 * The soft PMU's account on this CPU (perf_ring.h, TICKS): every tick due
 * in the window that gave no sample, written or dropped, is lost, and
 * said in one LOST_SAMPLES record. A sample is taken for one tick, each
 * for a later one than the last, so samples + dropped never exceed the
 * ticks due (final_due covers the ticks a sample raced the close for).
 */
void prof_write_ticks(struct cpu_prof *cp, u32 cpu)
{
	u64 taken = cp->samples + cp->samples_dropped;
	u64 lost = prof.final_due > taken ? prof.final_due - taken : 0;	/* a broken account shows */
	/* The window the due ticks fill: to the close, or on to the last tick
	 * a sample raced the close for, so that due = window / period. */
	u64 window = prof.soft_started ? MAX(prof.close_hpet - hpet_nmi_origin(),
					prof.final_due * prof.soft_hpet_period) : 0;
	struct bp_record_ticks r = {
		.header = { BP_RECORD_TICKS, 0, sizeof(r) },
		.app_id = prof.run_id, .cpu = cpu,
		.hpet_hz = hpet_hz(), .period = prof.soft_hpet_period,
		.window = window, .due = prof.final_due,
		.samples = cp->samples, .dropped = cp->samples_dropped, .lost = lost,
		.throttled = cp->soft_throttled_ticks,
	};

	if (lost)
		prof_write_lost_samples(cp, lost);
	prof_put(&cp->ring, &r);
}
