/*
 * sample.c — the NMI paths of a run that write SAMPLE records: the PMU's
 * overflow (PMI), the soft PMU's HPET tick on CPU 0 and its IPI to every
 * other CPU (or the APIC timer where there is no HPET), with the soft
 * PMU's throttling; and, at boot, the measured cost of one such NMI,
 * which bounds the shortest cpu-clock period.
 */
#include "kernel/kernel.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/trap.h"
#include "pmu/pmu.h"
#include "profile/profile_internal.h"
#include "ringbuf/callchain.h"
#include "ringbuf/ringbuf.h"
#include <uapi/perf_ring.h>

#define MAX_CALLCHAIN	PROFILE_MAX_CALLCHAIN

/* The steps of one sample are functions for reading's sake, inlined so a
 * sample costs no call layers: they run on every NMI of a run. */
#define SAMPLE_STEP	static inline __attribute__((always_inline))

/* &prof.cpus[cpu], as a pointer kept in a register: left to itself the
 * compiler rebuilds the address from cpu (the array's address is a
 * constant) at each use on the NMI path, a dozen instructions a sample.
 * The empty asm hides where the pointer came from. */
static inline struct cpu_prof *cpu_prof(u32 cpu)
{
	struct cpu_prof *cp = &prof.cpus[cpu];

	asm("" : "+r"(cp));
	return cp;
}

/* A group run's counts, all its events read at time: into grp, their
 * number returned. Out of line: only a group run has them, and the soft
 * PMU's NMI path then keeps fewer values live across its SAMPLE. */
static __attribute__((noinline)) u32 read_group(struct cpu_prof *cp, u64 time,
						struct bp_group_entry *grp)
{
	for (int i = 0; i < prof_events_total(); i++) {
		struct pmu_value v;
		prof_event_value(cp, i, time, &v);
		grp[i] = (struct bp_group_entry){ prof.cfg.attrs[i].config, v.count };
	}
	return prof_events_total();
}

/* The return address of the function holding rip, if it has no frame of
 * its own there (kernel/kernel.h: frameless_return_of), from the stack at
 * sp; 0 unless sp is 8-aligned with two words inside [lo, hi). */
SAMPLE_STEP u64 caller_off_frame(u64 rip, u64 sp, u64 rbp, u64 lo, u64 hi)
{
	return sp >= lo && sp < hi && !(sp & 7) && hi - sp >= 16 ?
	       frameless_return_of(rip, (const u64 *)sp, rbp) : 0;
}

/*
 * The chain on from a trap's entry frame (kernel/isr.asm) at fp, which a
 * walk from inside a handler met: ips holds n entries, the last of them
 * the trap's return address, isr_frame_return. The entry frame holds the
 * interrupted RIP and RBP, the trap frame lies above it: the RIP goes in,
 * then its caller if the trap found it without a frame of its own, as
 * callchain does for the sample's RIP, and the walk goes on from the
 * interrupted RBP, to the next trap's entry frame if it meets one. The
 * walk's rule is the same as without (the entry frame inside the stack,
 * 8-aligned, its RIP not 0, each frame above the one before).
 */
static u32 chain_past_traps(u64 fp, u64 hi, u64 *ips, u32 n)
{
	while (n < MAX_CALLCHAIN) {
		const struct trap_frame *tf = (const struct trap_frame *)(fp + BP_FRAME_BYTES);
		const u64 *entry = (const u64 *)fp;
		u64 next = 0, ret = 0, ip;

		if (fp > hi || hi - fp < BP_FRAME_BYTES || (fp & 7) || !entry[1])
			break;
		if (hi - fp - BP_FRAME_BYTES >= sizeof(*tf))
			ret = caller_off_frame(entry[1], tf->rsp, tf->rbp, fp, hi);
		ip = entry[1];
		if (ret) {
			ips[n++] = ip;
			ip = ret;
			if (n == MAX_CALLCHAIN)
				break;
		}
		n += bp_walk_frames(ip, entry[0], fp + 1, hi, ips + n, MAX_CALLCHAIN - n,
				    (u64)isr_frame_return, &next);
		if (!next)
			break;
		fp = next;
	}
	return n;
}

/* callchain's where the sampled code ran with interrupts off, perhaps in
 * a handler: the same, and on past each trap's entry frame it meets. Out
 * of line: most samples find interrupts on. */
static __attribute__((noinline)) u32 chain_off(const struct trap_frame *f, u64 lo, u64 hi,
					      u64 *ips)
{
	u64 ret = caller_off_frame(f->rip, f->rsp, f->rbp, lo, hi), next = 0;
	u32 n;

	ips[0] = f->rip;
	n = ret ? 1 + bp_walk_frames(ret, f->rbp, f->rsp, hi, ips + 1, MAX_CALLCHAIN - 1,
				     (u64)isr_frame_return, &next)
		: bp_walk_frames(f->rip, f->rbp, f->rsp, hi, ips, MAX_CALLCHAIN,
				 (u64)isr_frame_return, &next);
	return next ? chain_past_traps(next, hi, ips, n) : n;
}

/*
 * A sample's call chain by frame pointers, the walk's rule
 * ringbuf/callchain.h's, from frame f on the stack [lo, hi): at most
 * MAX_CALLCHAIN entries into ips, their number returned. A frameless
 * leaf (GCC 12 gives leaves no frame despite
 * -mno-omit-leaf-frame-pointer), or a function hit in its prologue or at
 * its ret, leaves its caller only on the stack: it is put back as the
 * first return address of the walk. A sample inside a handler walks on
 * past isr_common to the RIP the interrupt hit and its callers: the
 * trap's entry links them in (kernel/isr.asm), and chain_past_traps does
 * for that RIP what is done here for the sample's. Handlers run with
 * interrupts off (interrupt gates, kernel/trap.c): code that ran with
 * them on was in none, and its walk looks for no entry frame.
 */
SAMPLE_STEP u32 callchain(const struct trap_frame *f, u64 lo, u64 hi, u64 *ips)
{
	bool on_stack = f->rsp >= lo && f->rsp < hi;

	if (on_stack && !(f->rflags & RFLAGS_IF))
		return chain_off(f, lo, hi, ips);
	u64 ret = on_stack ? caller_off_frame(f->rip, f->rsp, f->rbp, lo, hi) : 0;
	ips[0] = f->rip;
	return !on_stack ? 1 :
	       ret ? 1 + bp_walk_frames(ret, f->rbp, f->rsp, hi, ips + 1, MAX_CALLCHAIN - 1, 0, NULL)
		   : bp_walk_frames(f->rip, f->rbp, f->rsp, hi, ips, MAX_CALLCHAIN, 0, NULL);
}

u32 profile_callchain(const struct trap_frame *f, u64 lo, u64 hi, u64 *ips)
{
	return callchain(f, lo, hi, ips);
}

/* One SAMPLE of sample_type from frame f into rb, taken at TSC time on
 * the CPU pc (this one); cp gives the group's counts (BP_SAMPLE_READ).
 * Returns the ring's verdict. NMI-safe. */
SAMPLE_STEP int write_sample(struct bp_ring *rb, struct cpu_prof *cp, const struct percpu *pc,
			     u64 sample_type, struct trap_frame *f, u64 id, u64 period, u64 time)
{
	u64 ips[MAX_CALLCHAIN];
	struct bp_group_entry grp[PMU_MAX_EVENTS];
	struct bp_sample s;

	/* Field by field: the writer reads only what sample_type names (and
	 * READ's and CALLCHAIN's parts, nr_group and nr_ips included, only
	 * below), and zeroing the whole struct first would cost the NMI a
	 * dozen stores more. */
	s.ip = f->rip;
	s.pid = prof.run_id;
	s.tid = pc->cpu;
	s.time = time;
	s.addr = 0;
	s.id = id;
	s.cpu = pc->cpu;
	s.period = period;

	if (sample_type & BP_SAMPLE_CALLCHAIN) {
		s.ips = ips;
		s.nr_ips = callchain(f, pc->stack_lo, pc->stack_hi, ips);
	}
	/* A group run: the counts of all its events, read now. A group does
	 * not multiplex, so its time running is its time enabled. */
	if (sample_type & BP_SAMPLE_READ) {
		s.nr_group = read_group(cp, s.time, grp);
		s.group = grp;
		s.time_enabled = s.time_running = s.time - cp->t_start;
	}
	return bp_ring_output_sample(rb, sample_type, BP_MISC_KERNEL, &s);
}

/* A SAMPLE of the interrupted frame into this CPU's (cp's) ring: 1
 * written, 0 not written (the ring was full: counted). The caller has
 * checked the window. NMI-safe. */
SAMPLE_STEP int take_sample(struct cpu_prof *cp, const struct percpu *pc, struct trap_frame *f,
			    u64 id, u64 period, u64 time)
{
	int err = write_sample(&cp->ring, cp, pc, prof.cfg.sample_type, f, id, period, time);
	if (!err) {
		cp->samples++;
		return 1;
	}
	if (prof_dropped_for_room(err))
		cp->samples_dropped++;
	prof_count_drop(cp, err);
	return 0;
}

/*
 * A soft-PMU sample for tick `tick` (its index), unless the tick came
 * after the window closed, or this CPU is throttled. A tick due inside
 * the window is sampled even if its NMI arrives after the close: the IPI
 * that carries it to another CPU may still be on its way when the app
 * returns. Throttling: perf throttles its cpu-clock like any sampling
 * event, once
 * max_per_tick samples come within one run tick's length. The rate is
 * measured here against the TSC, not by counting samples between run
 * ticks: an app may mask the APIC timer for seconds (apps/bench.c does),
 * and a count between ticks that never come would throttle any rate. The
 * HPET keeps firing, so the first tick after the window has passed ends
 * the throttling. A tick without a sample is not counted here: the TICKS
 * record (prof_write_ticks, at stop) counts every due tick that gave none.
 */
SAMPLE_STEP void soft_sample(struct cpu_prof *cp, const struct percpu *pc, struct trap_frame *f,
			     u64 tick)
{
	u64 now = rdtsc();

	if ((__atomic_load_n(&prof.quiesced, __ATOMIC_ACQUIRE) &&
	     (!prof.soft_started || tick > prof.close_due)) ||
	    __atomic_load_n(&cp->stopped, __ATOMIC_RELAXED))
		return;
	if (prof.max_per_tick && now - cp->thr_start >= prof.throttle_window) {
		if (cp->soft_throttled) {
			prof_write_throttle(cp, BP_RECORD_UNTHROTTLE);
			cp->soft_throttled = 0;
			now = rdtsc();	/* the sample comes after the record */
		}
		cp->thr_start = now;
		cp->thr_samples = 0;
	}
	if (cp->soft_throttled) {
		cp->soft_throttled_ticks++;
		return;
	}
	/* Set before the SAMPLE (nothing reads it in between): one value
	 * fewer kept across the ring's call. */
	cp->soft_last = tick;
	take_sample(cp, pc, f, 0, prof.soft_period_ns, now);
	prof_soft_took(cp, now);
	if (prof.max_per_tick && ++cp->thr_samples >= prof.max_per_tick) {
		cp->soft_throttled = 1;
		prof_write_throttle(cp, BP_RECORD_THROTTLE);
	}
}

void prof_soft_sample(struct trap_frame *f, u64 tick)
{
	const struct percpu *pc = this_cpu();

	soft_sample(cpu_prof(pc->cpu), pc, f, tick);
}

/* The HPET's NMI on CPU 0. It stands for every expiry since the last one
 * (hpet_nmi_due): one sample here, the same number of ticks posted to each
 * other CPU. */
void prof_soft_tick(struct trap_frame *f, void *arg)
{
	(void)arg;
	const struct percpu *pc = this_cpu();
	struct cpu_prof *cp = cpu_prof(pc->cpu);
	u64 due = hpet_nmi_due(), n = due - prof.soft_posted;

	prof.soft_ticks++;
	prof.soft_posted = due;
	/* Wake the other CPUs first so their samples are as close in time. */
	if (prof.ncpus > 1) {
		for (u32 i = 0; i < prof.ncpus; i++)
			if (&prof.cpus[i] != cp)
				__atomic_add_fetch(&prof.cpus[i].soft_pending, n, __ATOMIC_RELEASE);
		apic_send_ipi(0, APIC_DM_NMI | APIC_DEST_OTHERS);
	}
	cp->soft_seen = due;
	cp->soft_merged += n - 1;
	soft_sample(cp, pc, f, due);
}

/*
 * The NMI IPI from soft_tick on the other CPUs, once prof_nmi has seen
 * ticks posted. A CPU that could not run for longer than a period (a
 * descheduled vCPU) finds several; it samples once, for the latest. Not
 * inlined: prof_nmi, which every NMI calls, then needs no room for a
 * sample when it has none to take.
 */
static __attribute__((noinline)) void soft_ipi(struct cpu_prof *cp, struct trap_frame *f)
{
	u64 ticks = __atomic_exchange_n(&cp->soft_pending, 0, __ATOMIC_ACQ_REL);

	cp->soft_seen += ticks;
	cp->soft_merged += ticks - 1;
	soft_sample(cp, this_cpu(), f, cp->soft_seen);
}

static void emit_sample(struct pmu_ctx *ctx, int idx, u64 period, void *arg)
{
	const struct percpu *pc = this_cpu();

	(void)ctx;
	if (!__atomic_load_n(&prof.quiesced, __ATOMIC_ACQUIRE))
		(void)take_sample(cpu_prof(pc->cpu), pc, arg, prof.hw_cfg[idx], period, rdtsc());
}

void prof_throttled(struct pmu_ctx *ctx, enum pmu_throttle_event ev, void *arg)
{
	(void)ctx, (void)arg;
	prof_write_throttle(&prof.cpus[this_cpu()->cpu],
		       ev == PMU_THROTTLE ? BP_RECORD_THROTTLE : BP_RECORD_UNTHROTTLE);
}

/*
 * Sampling faster than its handler can run takes the machine: a period
 * shorter than the NMI's own cost re-arms the HPET in the past forever.
 * Linux bounds its sample rate so that sampling takes at most
 * perf_cpu_time_max_percent (25%) of a CPU, from the measured length of
 * its sampling NMIs (perf_sample_event_took). We measure once at boot: a
 * self-NMI whose handler does what a soft-PMU tick does on CPU 0 — three
 * HPET register accesses (hpet_nmi's counter read, the comparator write,
 * rearm's re-check; reads stand in for the write) and a SAMPLE with its
 * call chain into a ring — timed from the ICR write to the handler's end.
 * The cheapest of FLOOR_TRIES is the handler's own cost (anything more is
 * the host running something else). cpu-clock periods below cost * 100 /
 * CPU_TIME_MAX_PERCENT are refused. The run's own samples, which cost more
 * (cold caches, deeper chains, the IPIs), are timed as it goes (took.c),
 * which adds to them the part of this cost outside the SAMPLE's writing.
 * Without an HPET the soft PMU samples from the APIC timer's interrupt:
 * the same measurement without the HPET accesses stands for it (an
 * interrupt's entry and exit cost about what an NMI's do).
 */
#define FLOOR_TRIES		32
#define FLOOR_WAIT_NS		1000000000ul	/* for one self-NMI: generous */
#define FLOOR_FALLBACK_NS	100000ul	/* no self-NMI came back: 10 kHz */
#define FLOOR_SAMPLE_TYPE	(BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID | \
				 BP_SAMPLE_CPU | BP_SAMPLE_PERIOD | BP_SAMPLE_CALLCHAIN)

/* A SAMPLE of FLOOR_SAMPLE_TYPE at most: header, 6 words, the chain. */
#define FLOOR_RECORD_MAX	(8 * (1 + 6 + 1 + MAX_CALLCHAIN))

static u32 floor_armed;			/* a measuring self-NMI is on its way */
static u64 floor_sample;		/* TSC ticks its SAMPLE took */
static struct bp_ring floor_ring;
static u8 floor_mem[3 * PAGE_SIZE] __attribute__((aligned(PAGE_SIZE)));

/* prof_nmi's, while floor_armed. Not inlined there: it runs at boot only. */
static __attribute__((noinline)) bool floor_nmi(struct trap_frame *f)
{
	if (this_cpu()->cpu != 0)
		return false;
	if (hpet_hz()) {
		hpet_read();
		hpet_read();
		hpet_read();
	}
	u64 t0 = rdtsc();
	write_sample(&floor_ring, NULL, this_cpu(), FLOOR_SAMPLE_TYPE, f, 0, DEFAULT_SOFT_PERIOD_NS,
		     t0);
	floor_sample = rdtsc() - t0;
	__atomic_store_n(&floor_armed, 0, __ATOMIC_RELEASE);
	return true;
}

/* prof_nmi's, when one of its sources may have sent the NMI. */
static __attribute__((noinline)) bool prof_nmi_sources(struct trap_frame *f, u32 cpu)
{
	bool claimed = false;

	if (__atomic_load_n(&floor_armed, __ATOMIC_ACQUIRE))
		claimed = floor_nmi(f);
	if (!prof.active || cpu >= prof.ncpus)
		return claimed;
	struct cpu_prof *cp = cpu_prof(cpu);
	/* Ticks are posted only before the IPI and taken only here, on this
	 * CPU: seen once, they are still there for soft_ipi's exchange. */
	if (prof.soft && __atomic_load_n(&cp->soft_pending, __ATOMIC_ACQUIRE)) {
		soft_ipi(cp, f);
		claimed = true;
	}
	if (cp->pmu_on && pmu_handle_overflow(&cp->pmu, emit_sample, f) > 0)
		claimed = true;
	return claimed;
}

/*
 * The profiler's NMI handler, one for its three sources: the boot's
 * measuring self-NMI, the soft PMU's IPI, the PMU's overflow. Each is
 * asked on every NMI, as separate handlers would be (NMIs that arrive
 * together merge into one), in one call instead of three. Most NMIs
 * bring none of them (the HPET's own on its CPU): those are told apart
 * here with a few loads and no frame. The measuring self-NMI comes only
 * at boot, before any run; ticks are posted only in a soft run (which
 * prof_nmi_sources checks again) and emptied at each run's start.
 */
static bool prof_nmi(struct trap_frame *f)
{
	u32 cpu = this_cpu()->cpu;

	if (!prof.active || cpu >= prof.ncpus)
		return __atomic_load_n(&floor_armed, __ATOMIC_ACQUIRE) && prof_nmi_sources(f, cpu);
	const struct cpu_prof *cp = cpu_prof(cpu);
	if (!__atomic_load_n(&cp->soft_pending, __ATOMIC_ACQUIRE) && !cp->pmu_on)
		return false;
	return prof_nmi_sources(f, cpu);
}

void profile_init(void)
{
	struct bp_ring_config rc = { .id = 0 };
	u64 best = ~0ul, best_sample = ~0ul;

	/* At boot, before the HPET's handler (which comes with the first run)
	 * and any program's check, which must see a sample's frame before it
	 * unwinds (apps/program.c). */
	if (nmi_register(prof_nmi)) {
		kprintf("profile: no NMI handler slot: no sampling\n");
		return;
	}
	if (!tsc_hz || (!hpet_hz() && !apic_timer_hz()))
		return;			/* no soft PMU (or no clock to time it) */
	for (int i = 0; i < FLOOR_TRIES; i++) {
		/* Emptied only when a sample might not fit: zeroing the ring
		 * every time costs more than the measuring (under TCG, 0.3 ms
		 * a time). */
		if (!i || bp_ring_free(&floor_ring) < FLOOR_RECORD_MAX)
			bp_ring_init(&floor_ring, floor_mem, sizeof(floor_mem), &rc);
		__atomic_store_n(&floor_armed, 1, __ATOMIC_RELEASE);
		u64 t0 = rdtsc_ordered();
		apic_send_ipi(apic_id(), APIC_DM_NMI);
		while (__atomic_load_n(&floor_armed, __ATOMIC_ACQUIRE) &&
		       !tsc_since_ns(t0, FLOOR_WAIT_NS))
			cpu_relax();
		u64 t1 = rdtsc_ordered();
		if (__atomic_exchange_n(&floor_armed, 0, __ATOMIC_ACQ_REL)) {
			prof_floor.floor_ns = FLOOR_FALLBACK_NS;
			kprintf("soft-pmu: a self-NMI did not arrive within %lu ms; shortest "
				"cpu-clock period set to %lu ns unmeasured\n",
				FLOOR_WAIT_NS / 1000000, prof_floor.floor_ns);
			return;
		}
		best = MIN(best, t1 - t0);
		best_sample = MIN(best_sample, floor_sample);
	}
	prof_floor.sample_ticks = MIN(best_sample, best);
	prof_floor.rest_ticks = best - prof_floor.sample_ticks;
	prof_floor.cost_ns = MAX(tsc_to_ns(best), 1ul);
	prof_floor.floor_ns = prof_floor.cost_ns * 100 / CPU_TIME_MAX_PERCENT;
	kprintf("soft-pmu: the %s handler takes %lu ns (fastest of %d); shortest "
		"cpu-clock period %lu ns (sampling at most %d%% of a CPU)\n",
		hpet_hz() ? "NMI" : "APIC timer", prof_floor.cost_ns, FLOOR_TRIES,
		prof_floor.floor_ns, CPU_TIME_MAX_PERCENT);
}
BOOT_HOOK(BOOT_SMP, profile_init);
