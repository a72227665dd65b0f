/*
 * pmu.h — the hardware PMU: probing, event names, counting and the body of
 * the overflow (PMI) handler: the drivers. Runs over them are profile.h.
 *
 * Vocabulary (perfmon2): a context (struct pmu_ctx) owns a set of events,
 * each programmed into one counter (a PMC configuration register plus a PMD
 * data register); the context is started and stopped as a whole; after an
 * overflow the counter is reloaded and counting restarts.
 *
 * Counts are 64-bit and virtualized: the hardware counter is 31..48 bits
 * wide; every read folds (raw - prev_raw) masked to the width into a 64-bit
 * count, and every counter has INT set so that it is folded and reloaded on
 * overflow, before it can wrap twice. Sampling events reload with -period.
 *
 * Sources: Intel SDM Vol. 3B ch. 21 (architectural perfmon v1-v5), AMD APM
 * Vol. 2 §13.2 (legacy counters, core extension, PerfMonV2).
 *
 * Concurrency: one active context per CPU, used only on that CPU. Functions
 * marked "NMI-safe: yes" may run in the PMI handler, interrupting any other
 * pmu_* call on the same CPU. Errors: 0 or -E_* (kernel/kernel.h), with a
 * sentence in err[] naming the problem.
 */
#ifndef BAREPERF_PMU_PMU_H
#define BAREPERF_PMU_PMU_H

#include <stddef.h>
#include "kernel/x86.h"

#define PMU_MAX_GP	8		/* GP counters we drive (Intel <= 8, AMD <= 6) */
#define PMU_MAX_FIXED	8		/* Intel fixed counters (v5 bitmap) */
#define PMU_MAX_EVENTS	16		/* events in one context */
#define PMU_NAME_MAX	32
#define PMU_OVF_LOOPS	64		/* PMI handler passes before "stuck" */

enum pmu_kind {
	PMU_KIND_NONE,			/* no usable PMU: soft PMU only */
	PMU_KIND_INTEL_ARCH,		/* Intel architectural perfmon v1-v5 */
	PMU_KIND_AMD_LEGACY,		/* 4 counters at 0xC0010000/4 */
	PMU_KIND_AMD_CORE_EXT,		/* PerfCtrExtCore: 6 at 0xC0010200, stride 2 */
	PMU_KIND_AMD_V2,		/* PerfMonV2: core ext + global ctl/status */
};

/*
 * Where the PMI handler unmasks LVT PC, which Intel's local APIC masks
 * when it delivers a PMI (SDM Vol. 3A 11.5.1), as Linux's
 * intel_pmu_handle_irq does per core: on entry (early: Intel before Haswell, Atom Silvermont
 * through Tremont), after handling but before re-enabling the counters
 * (mid: Atom from Gracemont on, hybrid E-cores; AMD), or after
 * re-enabling (late: Intel big cores from Haswell on, where an unmask
 * while the counters are off raises a spurious PMI).
 */
enum pmu_lvt_ack { PMU_ACK_EARLY, PMU_ACK_MID, PMU_ACK_LATE };

/* Filled once by pmu_probe(); read-only afterwards. */
struct pmu_caps {
	enum pmu_kind kind;
	bool intel, amd;		/* vendor (even when kind is NONE) */
	u32 version;			/* Intel arch perfmon version; AMD: 2 for PerfMonV2, else 1 */
	u32 family, model;

	u32 nr_gp, gp_width;
	u64 gp_mask;			/* (1 << gp_width) - 1 */
	u32 gp_sel_base, gp_ctr_base, stride;	/* MSR of GP i: base + i * stride */
	u32 gp_fw_base;			/* Intel IA32_A_PMC0 when full-width writes, else 0 */

	u32 fixed_bitmap;		/* Intel: bit i = fixed counter i exists (v5 ECX | EDX[4:0]) */
	u32 nr_fixed;			/* highest existing fixed index + 1 */
	u32 fixed_width;
	u64 fixed_mask;

	u32 arch_events_len;		/* CPUID.0AH EAX[31:24] */
	u32 arch_events_unavail;	/* CPUID.0AH EBX: bit set = event not available */

	bool has_global;		/* GLOBAL_CTRL/STATUS (Intel v2+, AMD v2) */
	u32 global_ctrl, global_status, global_ack;	/* MSRs, 0 if none */
	bool fw_write;			/* IA32_PERF_CAPABILITIES.FW_WRITE */
	bool freeze;			/* DEBUGCTL.FREEZE_PERFMON_ON_PMI (Intel v2+) */
	bool freeze_streamlined;	/* v4: freeze sets GLOBAL_STATUS.CTR_FRZ */
	bool anythread_deprecated;	/* CPUID.0AH EDX[15] */
	u64 perf_capabilities;
	u64 max_period;			/* largest period a reload can express */

	/* DEBUGCTL.FREEZE_WHILE_SMM: IA32_PERF_CAPABILITIES[12] and a safe
	 * write that holds; then always on (pmu_cpu_quiesce, pmu_start). */
	bool freeze_smm;
	/* SMIs can be counted: Intel MSR_SMI_COUNT reads (KVM emulates it);
	 * AMD Zen 1-5 PMCx02B, on the last GP counter while a context that
	 * leaves it free runs (pmu_smi_count). Under a hypervisor only the
	 * SMIs it injects into the guest: the host's are not visible. */
	bool smi_count;
	enum pmu_lvt_ack lvt_ack;	/* where the PMI handler unmasks LVT PC */
	/* Broadwell (BDM11, BDM55): INST_RETIRED.ALL periods at least 128,
	 * bits 5:0 clear (Linux bdw_limit_period). */
	bool limit_inst_retired;
	u32 core_type;			/* CPUID.1AH EAX[31:24] on hybrids, else 0 */
	/* Counters the core has beyond CPUID.0AH's, found by the model table
	 * and a write test (Alder and Raptor Lake P-cores; GLOBAL_CTRL bit
	 * numbering). */
	u64 beyond_cpuid;
	/* Counters firmware left enabled, found before the probe touched any
	 * (PERFEVTSEL.EN, IA32_FIXED_CTR_CTRL; GLOBAL_CTRL bit numbering). */
	u64 fw_owned;

	bool rdpmc_ok;			/* probed: rdpmc works */
	bool hypervisor;
	char hypervisor_id[13];
	char none_reason[96];		/* why kind == NONE */
};

/* Probe CPUID and the MSRs once. Always fills caps; returns 0 when a PMU
 * was found, -E_NODEV with caps->none_reason set otherwise. Uses the
 * _safe accessors: never faults. NMI-safe: no. */
int pmu_probe(struct pmu_caps *caps);

/*
 * Put this CPU's PMU in a known state whatever firmware left: every
 * PERFEVTSEL and IA32_FIXED_CTR_CTRL 0, the global enables 0 (they come out
 * of reset set, SDM 21.2.2), overflow status acknowledged,
 * DEBUGCTL.FREEZE_PERFMON_ON_PMI off and DEBUGCTL.FREEZE_WHILE_SMM on
 * (where probed: counts never include SMM); on AMD sets DE_CFG.LFENCE_SERIALIZE
 * so the lfence around rdpmc serializes (as Linux's init_amd). Safe
 * accessors only. Returns the DE_CFG outcome: true when lfence is known
 * to serialize (Intel: always). NMI-safe: no.
 */
bool pmu_cpu_quiesce(const struct pmu_caps *caps);
/* What pmu_cpu_quiesce did with the counters firmware left enabled, for
 * the boot log: switched off, or (no PMU driven) left counting; "" when
 * firmware left none. */
const char *pmu_fw_owned_describe(const struct pmu_caps *caps, char *buf, size_t len);

/* SMIs this CPU has taken, or -1 where they cannot be counted. Intel:
 * MSR_SMI_COUNT, any time. AMD Zen: the PMCx02B counter a running
 * context keeps on the last GP counter when its events leave that one
 * free and need no multiplexing (pmu_start); -1 when none runs, or
 * before Zen. Under a hypervisor only the guest's own SMIs count.
 * Differences between two calls are what a caller may use. NMI-safe: yes. */
s64 pmu_smi_count(const struct pmu_caps *caps);

/*
 * Whether this CPU's counters count, for code that must find them as it
 * left them (apps/bench_code.c, around code the host sent): each event
 * select's enable bit (PERFEVTSEL.EN), the fixed counters' ring enables
 * (IA32_FIXED_CTR_CTRL), the global enables and IA32_DEBUGCTL (Intel).
 * Only the enables: counter values and event selections are the
 * contexts' (pmu_stop leaves each counter disabled, not as found). Empty
 * (pmu false) without a PMU: those MSRs exist only with one.
 */
#define PMU_STATE_GP_MAX	8
struct pmu_state {
	bool pmu;
	u32 ngp;			/* event selects saved, at most PMU_STATE_GP_MAX */
	u64 sel_en[PMU_STATE_GP_MAX], fixed_en, global, debugctl;
};
/* Called for each part that changed: its name, its saved and its current value. */
typedef void (*pmu_state_changed_fn)(void *arg, const char *name, u64 was, u64 now);
/* Read it on this CPU (caps: this CPU's). Safe accessors only. */
void pmu_save_state(const struct pmu_caps *caps, struct pmu_state *s);
/* Put back on this CPU what differs from s, calling changed (if not NULL)
 * for each part first. Safe accessors only. */
void pmu_restore_state(const struct pmu_caps *caps, const struct pmu_state *s,
		       pmu_state_changed_fn changed, void *arg);

/* One line for the boot log, without "pmu: " and without newline, e.g.
 * "Intel arch perfmon v2, 4 GP counters x 48 bits, 3 fixed x 48 bits,
 * full-width writes". Returns buf. NMI-safe: yes. */
const char *pmu_describe(const struct pmu_caps *caps, char *buf, size_t len);

/* Kernel only: probe the boot CPU into pmu_boot_caps, quiesce its PMU and
 * print the boot line ("pmu: ..."). Call once from kmain after cpu_setup(). */
void pmu_init(void);
extern struct pmu_caps pmu_boot_caps;
/* Kernel only, on each AP as it starts: probe and quiesce that CPU (caps
 * differ per core type on hybrids); prints a line when they differ from
 * the boot CPU's. */
void pmu_ap_init(u32 cpu);
/* The caps of CPU cpu (the boot CPU's until that CPU was probed). */
const struct pmu_caps *pmu_cpu_caps(u32 cpu);
/* Whether LFENCE is known to serialize on CPU cpu (pmu_cpu_quiesce's
 * answer there; the boot CPU's until that CPU was probed). Where it is
 * not, serialized reads (bench) use CPUID instead. */
bool pmu_cpu_lfence_serializes(u32 cpu);

/* ---- Events ---- */

enum pmu_generic {
	PMU_EV_CYCLES, PMU_EV_INSTRUCTIONS, PMU_EV_REF_CYCLES, PMU_EV_BUS_CYCLES,
	PMU_EV_BRANCHES, PMU_EV_BRANCH_MISSES, PMU_EV_CACHE_REFERENCES,
	PMU_EV_CACHE_MISSES, PMU_EV_STALLED_FRONTEND, PMU_EV_STALLED_BACKEND,
	PMU_EV_TOPDOWN_SLOTS, PMU_EV_COUNT,
	PMU_EV_RAW = -1,
};

#define PMU_ATTR_PINNED		(1u << 0)	/* must get a counter, or pmu_open fails */
#define PMU_ATTR_SAMPLE		(1u << 1)	/* sampling: period (or freq) is set */
#define PMU_ATTR_FREQ		(1u << 2)	/* period re-tuned to reach freq samples/s */
#define PMU_ATTR_FIXED_ONLY	(1u << 3)	/* only a fixed counter can count it */
#define PMU_ATTR_COUNTER	(1u << 4)	/* only on counter attr.counter (nanoBench's CTR=) */

/* pmu_event_attr.counter: GP counter N, or PMU_COUNTER_FIXED + N for
 * Intel's fixed counter N (the numbering of Intel's event tables). */
#define PMU_COUNTER_FIXED	32

struct pmu_event_attr {
	char name[PMU_NAME_MAX];	/* for reports: the canonical name or the spec */
	u64 config;			/* PERFEVTSEL bits: event, umask, edge, inv, cmask (AMD: + event[11:8]) */
	u64 period;			/* sampling period, or the first period in freq mode */
	u64 freq;			/* PMU_ATTR_FREQ: target samples per second */
	u32 flags;			/* PMU_ATTR_* */
	s32 generic;			/* enum pmu_generic, or PMU_EV_RAW */
	s32 fixed;			/* Intel fixed counter that counts it, or -1 */
	u32 counter;			/* PMU_ATTR_COUNTER: the one counter it may use */
};

/*
 * Parse one event spec:
 *   cycles, instructions, ref-cycles, bus-cycles, branches, branch-misses,
 *   cache-references, cache-misses, stalled-cycles-frontend/-backend,
 *   topdown-slots (and perf's aliases: cpu-cycles, branch-instructions, ...)
 *   r<hex>                    raw PERFEVTSEL bits, e.g. r01c2 (umask 01, event c2)
 *   cpu/event=0xc0,umask=0,cmask=2,inv,edge,any/  (any: AnyThread, bit 21, Intel v3+)
 *   NAME/TERMS/ or rHEX/TERMS/, terms also period=N, freq=N, pinned
 * against caps (events this CPU lacks are errors). Returns 0 or -E_NOENT
 * (unknown name: err lists the closest names), -E_INVAL (syntax, period 0,
 * bits outside the raw fields), -E_NODEV (no PMU, or the CPU lacks the
 * event: CPUID.0AH EBX mask, no AMD equivalent). NMI-safe: yes.
 */
int pmu_event_parse(const char *spec, const struct pmu_caps *caps,
		    struct pmu_event_attr *out, char *err, size_t errlen);

/*
 * Whether this CPU has msr, one of the MSRs an event's selection reads
 * beside its PERFEVTSEL (nanoBench's -config fields, SDM Vol. 4:
 * MSR_OFFCORE_RSP_0/1 0x1A6/0x1A7, MSR_PEBS_LD_LAT 0x3F6,
 * MSR_PEBS_FRONTEND 0x3F7): Intel only, and the CPU must take a read and
 * a write of the value read back (safe accessors: a CPU without it #GPs).
 * 0, or -E_NODEV with the reason in err. NMI-safe: no.
 */
int pmu_event_msr_check(const struct pmu_caps *caps, u32 msr, char *err, size_t errlen);

/* Name and description of generic event i (for help output); NULL past the end. */
const char *pmu_event_name(int i, const char **desc);

/* ---- Contexts ---- */

enum pmu_hw { PMU_HW_NONE, PMU_HW_GP, PMU_HW_FIXED };

#define PMU_SET_PINNED	(-1)		/* pmu_counter.set: pinned, in every event set */
#define PMU_SET_NEVER	(-2)		/* ... fits in no set: never counts */

struct pmu_counter {
	struct pmu_event_attr attr;
	u8 hw;				/* enum pmu_hw; NONE = not scheduled (multiplexing) */
	u8 idx;				/* GP or fixed index */
	u8 bit;				/* GLOBAL_CTRL/STATUS bit: idx or 32 + idx */
	bool sampling;
	s32 set;			/* event set it belongs to, or PMU_SET_* */
	u32 sel_msr, ctr_msr, rdpmc_idx;
	u64 mask;			/* the counter's width: (1 << width) - 1 */
	u32 load_msr;			/* where a reload is written (Intel: IA32_A_PMCx with FW_WRITE) */
	u64 load_mask;			/* the bits of a reload that write takes */
	u64 min_period;			/* shortest period the hardware takes (hw_period in core.c) */
	u64 period_align;		/* ... and the bits a period keeps */
	u64 evtsel;			/* PERFEVTSEL value with EN and INT (GP) */
	u64 period;			/* reload period: sample period, or max_period (atomic:
					 * frequency mode re-tunes it from the tick) */
	u64 reload_period;		/* period as the hardware takes it (hw_period in core.c;
					 * atomic, as period) */
	u64 last_period;		/* the period the counter was last loaded with (emit's) */
	u64 left;			/* sampling: events still due when scheduled out; 0 = a period */
	u64 prev_raw;			/* last raw value folded (atomic) */
	u64 count;			/* 64-bit virtualized count (atomic) */
	u64 overflows;			/* hardware overflows handled */
	u64 samples;			/* emit() calls */
	u64 missed;			/* overflows found when scheduled out: no sample */
	/* Time on a counter (pmu clock ticks): t_running, plus now - t_in
	 * while the event is active. Written by the tick, read from NMIs. */
	u64 t_running, t_in;
	u64 freq_count, freq_time;	/* frequency mode: count and running time at the last tick */
};

enum pmu_throttle_event { PMU_THROTTLE, PMU_UNTHROTTLE };

struct pmu_ctx;
typedef void (*pmu_emit_fn)(struct pmu_ctx *ctx, int idx, u64 period, void *arg);
typedef void (*pmu_throttle_fn)(struct pmu_ctx *ctx, enum pmu_throttle_event ev, void *arg);

/* Counted, never lost silently (the NMI layer reports them). */
struct pmu_stats {
	u64 pmi;			/* pmu_handle_overflow calls */
	u64 handled;			/* ... that found an overflow */
	u64 spurious;			/* ... that found none (not ours, or already handled) */
	u64 unknown_status;		/* status bits no counter of ours explains */
	u64 stuck;			/* gave up after PMU_OVF_LOOPS passes */
	u64 throttled, unthrottled;
	u64 lvt_rearm;			/* LVT PC rewritten after a PMI */
	u64 rotations;			/* event-set switches (multiplexing) */
	u64 missed;			/* sampling overflows met at a switch: counted, no sample */
	u64 retuned;			/* frequency-mode period changes */
};

#define PMU_OPEN_RDMSR		(1u << 0)	/* read with rdmsr, not rdpmc */
#define PMU_OPEN_FREEZE		(1u << 1)	/* DEBUGCTL.FREEZE_PERFMON_ON_PMI while running */
#define PMU_OPEN_MULTIPLEX	(1u << 2)	/* events that do not fit go to more event sets */
#define PMU_OPEN_NO_FIXED	(1u << 3)	/* GP counters only */

struct pmu_ops;

struct pmu_ctx {
	const struct pmu_caps *caps;
	const struct pmu_ops *ops;
	unsigned flags;			/* PMU_OPEN_* */
	int n;
	struct pmu_counter ctr[PMU_MAX_EVENTS];
	u64 used;			/* counters taken, by GLOBAL_CTRL bit */
	u64 en;				/* GLOBAL_CTRL bits to enable (less throttled ones) */
	u64 smi_bit;			/* AMD: the GP counter counting SMIs while running, or 0 */
	u64 fixed_ctrl;			/* IA32_FIXED_CTR_CTRL value */
	u32 running;			/* between pmu_start and pmu_stop */
	u32 dead;			/* stuck PMU: counters left disabled */
	bool rdpmc;			/* reads use rdpmc (caps->rdpmc_ok, no PMU_OPEN_RDMSR) */
	/* Status bits acknowledged with ours but handled by no one: Intel's
	 * uncore overflow, DS buffer and CondChgd (bits 61-63), else 0. */
	u64 status_drop;

	u32 max_per_tick;		/* samples allowed per pmu_tick period; 0 = no limit */
	u32 tick_samples;
	u32 throttled;
	u64 throttle_time;		/* pmu clock when the last throttle began */
	pmu_throttle_fn throttle_cb;
	void *throttle_arg;
	u64 throttle_window;		/* pmu clock ticks of a tick period; 0 = unknown */
	u64 tick_start;			/* pmu clock when tick_samples started counting */

	/* Multiplexing (perfmon2's event sets): each non-pinned event belongs
	 * to one set; pinned events are in all of them; pmu_tick switches to
	 * the next set, round-robin. */
	u32 nsets, cur_set;
	u64 pinned_used, pinned_fixed_ctrl;
	/* Events (bit = index) live on a counter. The PMI handler and the
	 * readers fold only these; the tick clears a bit before it takes the
	 * event off its counter and sets it once the event is back on one
	 * (Linux x86_pmu_handle_irq skips counters not in active_mask). */
	u32 active;
	/* > 0 while the tick re-programs the PMU: a PMI in that window
	 * handles the active events but leaves the PMU disabled. */
	u32 paused;
	u64 clock_hz;			/* pmu clock (TSC) ticks per second; 0 = unknown */
	u64 t_start, t_stop;		/* pmu clock at pmu_start / pmu_stop */

	struct pmu_stats stats;
};

/*
 * Assign counters to n events: an event with PMU_ATTR_COUNTER goes to
 * that counter or fails (the CPU lacks it, another event has it, or a
 * fixed counter that counts another event); on Intel, instructions/cycles/ref-cycles/
 * topdown-slots go to their fixed counter when it exists and is free, the
 * rest to GP counters; pinned events first. Pinned events that do not fit,
 * fixed-only events whose counter is missing, a sampling period of 0 or
 * one above caps->max_period are errors naming the event. Non-pinned events
 * that do not fit are an error unless PMU_OPEN_MULTIPLEX, which packs them
 * greedily, in order, into further event sets (ctx->nsets; pmu_tick
 * rotates them); set 0 is placed, the others are unscheduled (hw =
 * PMU_HW_NONE) until their turn. An event that fits in no set beside the
 * pinned ones is left out (set PMU_SET_NEVER: count and time_running 0).
 * Touches no hardware. NMI-safe: no.
 */
int pmu_open(struct pmu_ctx *ctx, const struct pmu_caps *caps,
	     const struct pmu_event_attr *attrs, int n, unsigned flags,
	     char *err, size_t errlen);

/* Program the counters (count from 0; sampling ones from -period; no
 * period below 2, see hw_period in core.c), switch off counters that are
 * not the context's where there is no global gate, enable them, and arm
 * LVT PC (NMI, unmasked). Not NMI-safe; the context's PMIs may arrive once
 * it returns. */
int pmu_start(struct pmu_ctx *ctx);
/* Disable, fold the final counts, clear the control registers. Not NMI-safe. */
void pmu_stop(struct pmu_ctx *ctx);

/* 64-bit count of event idx: folds the hardware counter while running
 * (rdpmc, or rdmsr with PMU_OPEN_RDMSR). NMI-safe: yes (a cmpxchg on the
 * previous raw value orders it against the PMI handler). */
u64 pmu_read(struct pmu_ctx *ctx, int idx);
/* All counts at once, in event order; returns n. NMI-safe: yes. */
int pmu_read_group(struct pmu_ctx *ctx, u64 *counts, int n);

/*
 * An event's count with the times perf reads beside it: time_enabled runs
 * from pmu_start to now (or pmu_stop), time_running only while the event
 * was on a counter; in pmu clock ticks (the TSC). Without multiplexing the
 * two are equal. NMI-safe: yes.
 */
struct pmu_value {
	u64 count, enabled, running;
};
void pmu_read_value(struct pmu_ctx *ctx, int idx, struct pmu_value *v);
/* The estimate for the whole enabled time, count * enabled / running (perf
 * stat's scaling); count itself when running == enabled; 0 when it never
 * ran. NMI-safe: yes. */
u64 pmu_scaled(const struct pmu_value *v);
/* a * b / c with a 128-bit product; ~0 when the quotient does not fit or
 * c is 0. NMI-safe: yes. */
u64 pmu_mul_div(u64 a, u64 b, u64 c);
/* ECX for rdpmc of event idx (bit 30 for Intel fixed counters), or -1. */
s64 pmu_rdpmc_index(const struct pmu_ctx *ctx, int idx);

/*
 * The body of the PMI (NMI) handler. Disables the context's counters, reads
 * the overflow status, and for each overflowed counter: folds its count,
 * calls emit(ctx, idx, period, arg) for sampling events (unless throttled),
 * reloads it with -period (full-width write when available), acknowledges
 * the status (and Intel's bits 61-63, counted as unknown); re-enables; and
 * rewrites LVT PC unmasked on every vendor and every exit, also when the
 * context is not running (Intel's APIC, and older KVM hosts for AMD
 * guests, mask it on delivery), where caps->lvt_ack says: on entry,
 * before re-enabling, or after. Loops while status is set, at most
 * PMU_OVF_LOOPS passes, then
 * declares the PMU stuck (stats.stuck, counters left off). Returns the
 * number of overflows handled: 0 = not this PMU's NMI (stats.spurious).
 * NMI-safe: yes (it is the NMI path). emit must be NMI-safe too.
 */
int pmu_handle_overflow(struct pmu_ctx *ctx, pmu_emit_fn emit, void *arg);

/* At most max_per_tick samples between pmu_tick() calls; past that the
 * sampling events stop and cb(PMU_THROTTLE) runs (in NMI context); the next
 * pmu_tick() restarts them and calls cb(PMU_UNTHROTTLE). 0 = unlimited. */
void pmu_set_throttle(struct pmu_ctx *ctx, u32 max_per_tick, pmu_throttle_fn cb, void *arg);
/* The length of a tick period in pmu clock ticks. With it the budget is
 * measured against the clock: one spent over a whole period or more (the
 * tick did not come: an app masked its timer) starts a new one instead of
 * throttling, so only a rate above max_per_tick a period throttles. */
void pmu_set_throttle_window(struct pmu_ctx *ctx, u64 window);
/* The rate of the clock the context's times are in (the TSC: tsc_hz), for
 * frequency mode; without it (0) periods are not re-tuned. */
void pmu_set_clock_hz(struct pmu_ctx *ctx, u64 hz);

/*
 * The context's periodic tick (a timer interrupt on its CPU, interrupts
 * off; an NMI may interrupt it). In order:
 *  - frequency mode: each active PMU_ATTR_FREQ event's period is re-tuned
 *    with pmu_freq_adjust from the events it counted since the last tick
 *    over its running time (perf_adjust_freq_unthr_context does the
 *    same), and applies from its next reload;
 *  - throttling: a new budget of max_per_tick samples; throttled sampling
 *    events restart from a full period and cb(PMU_UNTHROTTLE) runs;
 *  - multiplexing: the next event set goes on the counters. Sampling
 *    events keep the part of their period still due.
 * A switch or restart disables the PMU (ctx->paused tells the PMI handler
 * to leave it so) and takes events off their counters through ctx->active.
 * Not NMI-safe.
 */
void pmu_tick(struct pmu_ctx *ctx);

/*
 * The local APIC's LVT performance-counter entry (SDM Vol. 3A 11.5.1),
 * through the APIC driver: pmu/cpus.c passes them to kernel/platform/apic.c.
 * Called from the PMI handler: they must be NMI-safe. The host model
 * defines them too.
 */
u32 pmu_lvtpc_read(void);
void pmu_lvtpc_write(u32 v);

/* Frequency mode: the period that would have produced target_rate samples
 * per second, given that period produced observed_rate; moves half way
 * there (damping) and clamps to [1, max_period]. Pure. NMI-safe: yes. */
u64 pmu_freq_adjust(u64 period, u64 observed_rate, u64 target_rate, u64 max_period);

#endif
