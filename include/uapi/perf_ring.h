/*
 * perf_ring.h — the output ABI of a bareperf ring: the control page, the
 * record layouts, and the protocol a consumer follows.
 *
 * Shared by ringbuf/ (the producer, and the drain that consumes) and tools/ (the
 * host decoder). The shape follows Linux perf's mmap ring buffer ("new
 * output ABI", 2009; perf_event_open(2), "MMAP layout") and its AUX area
 * (2015):
 * one control page, then a data area of 2^n pages holding self-describing
 * records, then an optional AUX area of 2^m pages for bulk trace data.
 * Record types, sample_type bits, misc bits and AUX flags keep perf's
 * numbers wherever perf has the same thing, so the host tool converts to
 * perf.data without a translation table; our own records start at 0x4000.
 *
 * Rules for changing this file: fixed-width fields only; never reorder,
 * resize or renumber anything; new fields go into reserved space, new
 * record types and bits are appended. A reader accepts a control page when
 * compat_version <= the BP_RING_VERSION it was built with.
 */
#ifndef BAREPERF_UAPI_PERF_RING_H
#define BAREPERF_UAPI_PERF_RING_H

#include <stdint.h>

#define BP_RING_VERSION		1
#define BP_RING_COMPAT_VERSION	1	/* oldest reader that can read this */
#define BP_RING_PAGE_SIZE	4096u
#define BP_CACHELINE		64u

/*
 * Memory ordering, written down once (cf. perf_event.h, "ring buffer
 * protocol"). Heads and tails are free-running 64-bit byte counters; the
 * position in an area is `counter & (size - 1)`.
 *
 *   producer (ringbuf/)                    consumer (drain, host)
 *
 *   tail = load_acquire(data_tail)    (A)  head = load_acquire(data_head) (C)
 *   if (head + size - tail > data_size)    read records in [tail, head)
 *           drop the record, count it      store_release(data_tail, new)  (D)
 *   write the record at head
 *   store_release(data_head, head+size) (B)
 *
 *   A pairs with D: once the producer sees a tail, the consumer's reads of
 *     everything below it are finished, so the producer may overwrite it.
 *   B pairs with C: once the consumer sees a head, every byte below it has
 *     been written.
 *
 * The AUX area uses the same four points on aux_head/aux_tail. Its data is
 * announced by an AUX record in the data area; B on data_head (after the
 * AUX data was written) is what makes it visible, so a consumer reads an
 * AUX region only after reading its AUX record, and advances aux_tail (D)
 * to the end of the last AUX record it has finished with, never further.
 *
 * data_head is written by the producer only, data_tail by the consumer
 * only; they sit on separate cache lines so polling one side does not
 * steal the line the other side writes.
 *
 * Consumer protocol (non-overwrite data area):
 *   1. head = load_acquire(&ctl->data_head)                          (C)
 *   2. while tail != head: hdr = data[tail & (data_size-1)]; the record
 *      is hdr.size bytes and may continue at the start of the area (only
 *      its header is guaranteed contiguous); process it; tail += hdr.size
 *   3. store_release(&ctl->data_tail, tail)                          (D)
 *
 * Overwrite mode (flags & BP_RING_F_OVERWRITE, the flight recorder): the
 * producer writes records backward, from high to low counters, so
 * data_head is always the start of the newest record; the tail is never
 * read. A reader pauses the producer, then walks forward from data_head
 * (newest first) until it has covered data_size bytes, meets a header
 * with size 0 (never written: the area starts zeroed), or meets a record
 * that would end beyond data_head + data_size (its end was overwritten).
 */

/* struct bp_ring_ctl.flags */
#define BP_RING_F_OVERWRITE	(1u << 0)	/* data area is a flight recorder */
#define BP_RING_F_AUX_OVERWRITE	(1u << 1)	/* AUX area in snapshot mode */

/*
 * The control page, first page of every ring. Geometry fields are written
 * once before the first record and are read-only afterwards.
 */
struct bp_ring_ctl {
	uint32_t version;		/* BP_RING_VERSION of the producer */
	uint32_t compat_version;	/* BP_RING_COMPAT_VERSION */
	uint32_t page_size;		/* BP_RING_PAGE_SIZE */
	uint32_t flags;			/* BP_RING_F_* */
	uint64_t data_offset;		/* from the start of this page */
	uint64_t data_size;		/* 0 (metadata only) or 2^n pages, n >= 1 */
	uint64_t aux_offset;		/* >= data_offset + data_size; 0 if no AUX */
	uint64_t aux_size;		/* 0 or 2^m pages */
	uint64_t data_watermark;	/* bytes between wakeups of the consumer */
	uint64_t aux_watermark;		/* same for the AUX area */
	uint64_t ring_id;		/* the id LOST records carry */
	uint8_t  reserved0[1024 - 72];

	/* Offset 1024: written by the producer only. */
	uint64_t data_head;		/* B: store_release; C: load_acquire */
	uint64_t aux_head;
	uint8_t  reserved1[BP_CACHELINE - 16];

	/* Offset 1088: written by the consumer only. */
	uint64_t data_tail;		/* D: store_release; A: load_acquire */
	uint64_t aux_tail;
	uint8_t  reserved2[BP_CACHELINE - 16];

	uint8_t  reserved3[BP_RING_PAGE_SIZE - 1024 - 2 * BP_CACHELINE];
};
_Static_assert(sizeof(struct bp_ring_ctl) == BP_RING_PAGE_SIZE, "bp_ring_ctl ABI");
_Static_assert(__builtin_offsetof(struct bp_ring_ctl, data_head) == 1024, "bp_ring_ctl ABI");
_Static_assert(__builtin_offsetof(struct bp_ring_ctl, data_tail) == 1088, "bp_ring_ctl ABI");

/*
 * Every record starts with this header. size covers the whole record,
 * header included, and is a multiple of BP_RECORD_ALIGN, so a header never
 * straddles the end of the data area.
 */
struct bp_record_header {
	uint32_t type;			/* enum bp_record_type */
	uint16_t misc;			/* BP_MISC_* */
	uint16_t size;
};
_Static_assert(sizeof(struct bp_record_header) == 8, "bp_record_header ABI");

#define BP_RECORD_ALIGN		8u
#define BP_RECORD_MAX		0xfff8u		/* largest 8-aligned u16 */

enum bp_record_type {
	/* perf's numbers (include/uapi/linux/perf_event.h, PERF_RECORD_*) */
	BP_RECORD_LOST		= 2,	/* struct bp_record_lost */
	BP_RECORD_THROTTLE	= 5,	/* struct bp_record_throttle */
	BP_RECORD_UNTHROTTLE	= 6,	/* struct bp_record_throttle */
	BP_RECORD_SAMPLE	= 9,	/* fields chosen by sample_type, below */
	BP_RECORD_AUX		= 11,	/* struct bp_record_aux */
	BP_RECORD_ITRACE_START	= 12,	/* struct bp_record_itrace_start */
	BP_RECORD_LOST_SAMPLES	= 13,	/* struct bp_record_lost_samples */

	/* bareperf run metadata, 0x4000 and up, appended in order */
	BP_RECORD_BAREPERF_FIRST = 0x4000,
	BP_RECORD_RUN_META	= 0x4000,	/* struct bp_record_run_meta */
	BP_RECORD_CPU_INFO	= 0x4001,	/* struct bp_record_cpu_info */
	BP_RECORD_PMU_CAPS	= 0x4002,	/* struct bp_record_pmu_caps */
	BP_RECORD_EVENT_DESC	= 0x4003,	/* struct bp_record_event_desc */
	BP_RECORD_APP_START	= 0x4004,	/* struct bp_record_app_start */
	BP_RECORD_APP_STOP	= 0x4005,	/* struct bp_record_app_stop */
	BP_RECORD_COUNTS	= 0x4006,	/* struct bp_record_counts + bp_count_entry[nr] */
	BP_RECORD_BENCH		= 0x4007,	/* struct bp_record_bench */
	BP_RECORD_TICKS		= 0x4008,	/* struct bp_record_ticks */
	BP_RECORD_BENCH_END	= 0x4009,	/* struct bp_record_bench_end */
	BP_RECORD_PROGRAM	= 0x400a,	/* struct bp_record_program + bp_program_section[nr] */
	/* 0x400b .. 0x7fff: reserved for future bareperf records */
	BP_RECORD_BAREPERF_LAST	= 0x7fff,
};

/* bp_record_header.misc, perf's PERF_RECORD_MISC_* values */
#define BP_MISC_CPUMODE_MASK	(7u << 0)
#define   BP_MISC_CPUMODE_UNKNOWN (0u << 0)
#define   BP_MISC_KERNEL	(1u << 0)	/* sample taken at CPL 0 */
#define   BP_MISC_USER		(2u << 0)	/* sample taken at CPL 3 */
#define BP_MISC_EXACT_IP	(1u << 14)	/* ip is the exact instruction (PEBS, IBS) */

/*
 * SAMPLE records. An event's sample_type selects the fields; they appear
 * in this order, which is perf's (perf_event.h, PERF_RECORD_SAMPLE):
 *
 *	{ u64 id;                 } IDENTIFIER  (id first: a reader that
 *	                                          knows nothing else finds the
 *	                                          event, hence its sample_type)
 *	{ u64 ip;                 } IP
 *	{ u32 pid, tid;           } TID         pid = app id, tid = app thread
 *	{ u64 time;               } TIME        TSC
 *	{ u64 addr;               } ADDR
 *	{ u64 id;                 } ID
 *	{ u32 cpu, res;           } CPU
 *	{ u64 period;             } PERIOD
 *	{ struct bp_read_group    } READ        the whole group, always with
 *	  + struct bp_group_entry[nr]             time_enabled/time_running
 *	{ u64 nr; u64 ips[nr];    } CALLCHAIN   ips[0] = the sampled ip, then
 *	                                          return addresses walked from
 *	                                          frame pointers, innermost first
 *
 * The READ entries are the seed's group entries {event config, count}
 * (perf_counter "new output ABI", perf_output_group); a converter to
 * perf.data maps config to the event id through BP_RECORD_EVENT_DESC.
 */
#define BP_SAMPLE_IP		(1ull << 0)
#define BP_SAMPLE_TID		(1ull << 1)
#define BP_SAMPLE_TIME		(1ull << 2)
#define BP_SAMPLE_ADDR		(1ull << 3)
#define BP_SAMPLE_READ		(1ull << 4)
#define BP_SAMPLE_CALLCHAIN	(1ull << 5)
#define BP_SAMPLE_ID		(1ull << 6)
#define BP_SAMPLE_CPU		(1ull << 7)
#define BP_SAMPLE_PERIOD	(1ull << 8)
#define BP_SAMPLE_IDENTIFIER	(1ull << 16)
#define BP_SAMPLE_SUPPORTED	(BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | \
				 BP_SAMPLE_ADDR | BP_SAMPLE_READ | \
				 BP_SAMPLE_CALLCHAIN | BP_SAMPLE_ID | \
				 BP_SAMPLE_CPU | BP_SAMPLE_PERIOD | \
				 BP_SAMPLE_IDENTIFIER)

struct bp_read_group {
	uint64_t nr;			/* entries that follow */
	uint64_t time_enabled;		/* TSC ticks the group was enabled */
	uint64_t time_running;		/* ... and on the PMU (multiplexing) */
};
_Static_assert(sizeof(struct bp_read_group) == 24, "bp_read_group ABI");

struct bp_group_entry {
	uint64_t config;		/* the event's raw encoding, as in EVENT_DESC */
	uint64_t count;
};
_Static_assert(sizeof(struct bp_group_entry) == 16, "bp_group_entry ABI");

/* Records with a fixed layout. */

struct bp_record_lost {			/* records dropped for want of room */
	struct bp_record_header header;
	uint64_t id;			/* bp_ring_ctl.ring_id of the ring */
	uint64_t lost;			/* exact count since the previous LOST */
};
_Static_assert(sizeof(struct bp_record_lost) == 24, "bp_record_lost ABI");

struct bp_record_throttle {		/* THROTTLE and UNTHROTTLE */
	struct bp_record_header header;
	uint64_t time;			/* TSC */
	uint64_t id;
	uint64_t stream_id;
};
_Static_assert(sizeof(struct bp_record_throttle) == 32, "bp_record_throttle ABI");

/* bp_record_aux.flags, perf's PERF_AUX_FLAG_* values */
#define BP_AUX_FLAG_TRUNCATED	0x01ull	/* AUX area was full: data cut short */
#define BP_AUX_FLAG_OVERWRITE	0x02ull	/* snapshot mode: data may wrap */
#define BP_AUX_FLAG_PARTIAL	0x04ull	/* record holds gaps (hardware) */
#define BP_AUX_FLAG_COLLISION	0x08ull	/* sample collided with another */

struct bp_record_aux {			/* [aux_offset, +aux_size) in the AUX area */
	struct bp_record_header header;
	uint64_t aux_offset;		/* AUX counter, position = & (aux_size-1) */
	uint64_t aux_size;
	uint64_t flags;			/* BP_AUX_FLAG_* */
};
_Static_assert(sizeof(struct bp_record_aux) == 32, "bp_record_aux ABI");

struct bp_record_itrace_start {		/* hardware trace started for an app */
	struct bp_record_header header;
	uint32_t pid;
	uint32_t tid;
};
_Static_assert(sizeof(struct bp_record_itrace_start) == 16, "bp_record_itrace_start ABI");

struct bp_record_lost_samples {		/* samples the PMU itself dropped */
	struct bp_record_header header;
	uint64_t lost;
};
_Static_assert(sizeof(struct bp_record_lost_samples) == 16, "bp_record_lost_samples ABI");

/*
 * perf's sample_id trailer (perf_event.h, sample_id_all) for the run's
 * sample_type, which always holds TID, TIME, ID and CPU and never
 * STREAM_ID or IDENTIFIER: the kernel appends it to LOST_SAMPLES, so the
 * record is PERF_RECORD_LOST_SAMPLES as perf writes it, saying which CPU
 * lost the samples and when. Readers take the fixed part (header.size
 * tells whether the trailer is there).
 */
struct bp_sample_id {
	uint32_t pid, tid;		/* TID: app id, CPU index */
	uint64_t time;			/* TIME: TSC when the count was written */
	uint64_t id;			/* ID: the event */
	uint32_t cpu, res;		/* CPU */
};
_Static_assert(sizeof(struct bp_sample_id) == 32, "bp_sample_id ABI");

/*
 * Run metadata: written by the kernel at the start of a run, before any
 * sample, so the host tool can decode and convert without outside input.
 */
#define BP_META_VERSION		1

/* bp_record_run_meta.flags */
#define BP_META_TSC_INVARIANT	(1u << 0)	/* CPUID.80000007H:EDX[8] */
#define BP_META_SOFT_PMU	(1u << 1)	/* samples come from the HPET soft PMU */
#define BP_META_ICOUNT		(1u << 2)	/* TSC counts retired instructions (QEMU -icount) */
/* The soft PMU's samples come from each CPU's local APIC timer as an
 * ordinary interrupt (no HPET to send NMIs): code that runs with
 * interrupts off is never sampled; its time shows at the instruction
 * that turns them back on. */
#define BP_META_SOFT_LAPIC	(1u << 3)

struct bp_record_run_meta {
	struct bp_record_header header;
	uint32_t meta_version;		/* BP_META_VERSION */
	uint32_t flags;			/* BP_META_* */
	uint64_t run_id;
	uint32_t nr_cpus;		/* CPUs taking part in the run */
	uint32_t reserved_u32;
	uint64_t tsc_hz;		/* TSC frequency */
	/*
	 * TSC to nanoseconds, as perf's time_zero/time_mult/time_shift:
	 * ns = time_zero + (tsc >> shift) * mult + (((tsc & mask) * mult) >> shift)
	 */
	uint64_t time_zero;
	uint32_t time_mult;
	uint16_t time_shift;
	uint16_t reserved_u16;
	uint64_t start_tsc;		/* TSC when the run started */
	uint8_t  build_id[20];		/* GNU build-id of kernel.elf */
	/* A quiet machine (kernel/platform/quiet.h), BP_QUIET_* bits: what the
	 * command line asked for, what every CPU now has, and what at least
	 * one CPU refused (a #GP, or a write that did not hold). 0 in
	 * captures from kernels that predate them. */
	uint32_t quiet_asked;
	uint32_t quiet_done;
	uint32_t quiet_refused;
	uint8_t  reserved[32];
};
_Static_assert(sizeof(struct bp_record_run_meta) == 128, "bp_record_run_meta ABI");

#define BP_QUIET_TURBO_OFF	(1u << 0)	/* Intel IA32_MISC_ENABLE[38] + IA32_PERF_CTL[32]; AMD HWCR.CpbDis */
#define BP_QUIET_PREFETCH_OFF	(1u << 1)	/* Intel MSR 1A4H[3:0]; AMD PrefetchControl */

enum bp_cpu_vendor {
	BP_CPU_VENDOR_UNKNOWN	= 0,
	BP_CPU_VENDOR_INTEL	= 1,
	BP_CPU_VENDOR_AMD	= 2,
};

struct bp_record_cpu_info {		/* one per CPU taking part */
	struct bp_record_header header;
	uint32_t cpu;			/* index, as in SAMPLE's cpu field */
	uint32_t apic_id;
	uint32_t vendor;		/* enum bp_cpu_vendor */
	uint32_t family;		/* display family, CPUID.1:EAX */
	uint32_t model;			/* display model */
	uint32_t stepping;
	uint32_t microcode;		/* IA32_BIOS_SIGN_ID[63:32], 0 if unknown */
	uint32_t reserved_u32;
	char     vendor_string[16];	/* CPUID.0, NUL-padded */
	char     brand[48];		/* CPUID.80000002H-80000004H, NUL-padded */
	uint8_t  reserved[32];
};
_Static_assert(sizeof(struct bp_record_cpu_info) == 136, "bp_record_cpu_info ABI");

enum bp_pmu_kind {
	BP_PMU_NONE		= 0,
	BP_PMU_INTEL_ARCH	= 1,	/* architectural perfmon, CPUID.0AH */
	BP_PMU_AMD		= 2,	/* AMD core counters / PerfMonV2 */
	BP_PMU_SOFT		= 3,	/* HPET-driven soft PMU */
};

/* bp_record_pmu_caps.flags */
#define BP_PMU_CAP_FULL_WIDTH	(1u << 0)	/* full-width counter writes */
#define BP_PMU_CAP_GLOBAL_CTRL	(1u << 1)	/* global enable/status MSRs */
#define BP_PMU_CAP_FREEZE_PMI	(1u << 2)	/* freeze counters on PMI */
#define BP_PMU_CAP_AUX_TRACE	(1u << 3)	/* a hardware tracer feeds the AUX area */

struct bp_record_pmu_caps {		/* one per CPU taking part */
	struct bp_record_header header;
	uint32_t cpu;
	uint32_t kind;			/* enum bp_pmu_kind */
	uint32_t version;		/* perfmon version, CPUID.0AH:EAX[7:0] */
	uint32_t nr_gp;			/* general-purpose counters */
	uint32_t nr_fixed;		/* fixed-function counters */
	uint32_t gp_width;		/* bits */
	uint32_t fixed_width;		/* bits */
	uint32_t flags;			/* BP_PMU_CAP_* */
	uint64_t arch_events_unavail;	/* CPUID.0AH:EBX, a set bit = not available */
	uint64_t perf_capabilities;	/* IA32_PERF_CAPABILITIES, 0 if absent */
	uint8_t  reserved[32];
};
_Static_assert(sizeof(struct bp_record_pmu_caps) == 88, "bp_record_pmu_caps ABI");

/* bp_record_event_desc.flags */
#define BP_EVENT_F_FIXED	(1u << 0)	/* runs on a fixed-function counter */
#define BP_EVENT_F_LEADER	(1u << 1)	/* leads its group */

struct bp_record_event_desc {		/* one per event, before its samples */
	struct bp_record_header header;
	uint64_t id;			/* SAMPLE's ID/IDENTIFIER value */
	uint64_t config;		/* raw encoding: event | umask << 8 | ... */
	uint64_t config1;		/* extra MSR value (offcore, ldlat), else 0 */
	uint64_t sample_type;		/* BP_SAMPLE_* of this event's samples */
	uint64_t sample_period;		/* 0: counting only */
	uint64_t group_id;		/* id of the group leader (== id for it) */
	uint32_t counter;		/* counter index it was placed on */
	uint32_t flags;			/* BP_EVENT_F_* */
	char     name[64];		/* NUL-terminated, e.g. "inst_retired.any" */
	uint8_t  reserved[32];
};
_Static_assert(sizeof(struct bp_record_event_desc) == 160, "bp_record_event_desc ABI");

struct bp_record_app_start {		/* an app (microbenchmark) begins */
	struct bp_record_header header;
	uint32_t app_id;		/* the pid in SAMPLE's TID field */
	uint32_t cpu;
	uint64_t time;			/* TSC */
	uint64_t text_start;		/* the app's code, for symbolization */
	uint64_t text_end;
	char     name[32];		/* NUL-terminated */
	uint32_t main_cpu;		/* the CPU that runs the app's main, plus one;
					 * 0: not said (older kernels, a run of no app) */
	uint8_t  reserved[12];
};
_Static_assert(sizeof(struct bp_record_app_start) == 88, "bp_record_app_start ABI");

struct bp_record_app_stop {
	struct bp_record_header header;
	uint32_t app_id;
	uint32_t cpu;
	uint64_t time;			/* TSC */
	int64_t  status;		/* the app's return value, 0 = success */
	uint64_t iterations;		/* measured iterations it completed */
	uint8_t  reserved[16];
};
_Static_assert(sizeof(struct bp_record_app_stop) == 56, "bp_record_app_stop ABI");

/*
 * COUNTS: the counting events of a run (bareperf stat), one record per
 * CPU, written when the app stops, before APP_STOP. nr entries follow the
 * fixed part: the READ group entry widened by the event's own times.
 * time_running < time_enabled means the event was multiplexed: count is
 * what it counted while on a counter, and count * time_enabled /
 * time_running estimates the whole window (perf stat's scaling; a report
 * marks such a count as scaled); time_running 0: never counted. Times are
 * TSC ticks. The window is the app's main on the CPU it ran on, the whole
 * run on the others; time_enabled says how long it was.
 */
struct bp_count_entry {
	uint64_t id;			/* the event: EVENT_DESC id (sample_period 0) */
	uint64_t count;
	uint64_t time_enabled;
	uint64_t time_running;
};
_Static_assert(sizeof(struct bp_count_entry) == 32, "bp_count_entry ABI");

struct bp_record_counts {
	struct bp_record_header header;
	uint32_t app_id;
	uint32_t cpu;
	uint64_t nr;			/* struct bp_count_entry that follow */
};
_Static_assert(sizeof(struct bp_record_counts) == 24, "bp_record_counts ABI");

/*
 * TICKS: the account of a soft-PMU run (cpu-clock) on one CPU, written
 * when the run stops, before APP_STOP. The HPET comparator expires every
 * `period` ticks of the HPET main counter (hpet_hz a second), the first
 * expiry `period` after the run started; the sampling window is `window`
 * HPET ticks from the start to the moment the app returned (or the run
 * stopped). `due` is the number of expiries inside it, read off the HPET
 * main counter: each one is a tick every CPU of the run should have
 * sampled. Every due tick is exactly one of
 *     samples   a SAMPLE record written to this CPU's ring,
 *     dropped   a sample taken but not written: the ring was full (the
 *               ring's LOST records count it among the records dropped),
 *     lost      no sample taken: the NMI came late and merged with the
 *               next, or found sampling throttled (throttled says how many
 *               of them) or closed; the CPU's LOST_SAMPLES records add up
 *               to it,
 * so samples + dropped + lost == due. A reader that also counts what
 * arrived can tell the link's losses from the kernel's. period 0: no HPET
 * drove the ticks (BP_META_SOFT_LAPIC: each CPU's APIC timer did, and
 * missed the ticks that came while interrupts were off): due, lost and
 * window are unknown and 0; samples and dropped are counted.
 */
struct bp_record_ticks {
	struct bp_record_header header;
	uint32_t app_id;		/* as APP_START */
	uint32_t cpu;
	uint64_t hpet_hz;		/* HPET main counter rate */
	uint64_t period;		/* HPET ticks between expiries */
	uint64_t window;		/* HPET ticks from the start to the close, or to
					 * the last due tick sampled after it */
	uint64_t due;			/* expiries in the window */
	uint64_t samples;		/* SAMPLE records written */
	uint64_t dropped;		/* samples not written: ring full */
	uint64_t lost;			/* due ticks that gave no sample */
	uint64_t throttled;		/* ... of them: found sampling throttled */
	uint8_t  reserved[32];
};
_Static_assert(sizeof(struct bp_record_ticks) == 112, "bp_record_ticks ABI");

/*
 * The config (EVENT_DESC, READ entries) of soft events, which the kernel
 * derives from the TSC rather than a PMU counter. Bit 63 lies outside
 * every PERFEVTSEL encoding. Under QEMU -icount shift=0 the TSC advances
 * one tick per retired instruction, so tsc counts instructions exactly.
 */
#define BP_CONFIG_SOFT			(1ull << 63)
#define BP_CONFIG_SOFT_CPU_CLOCK	(BP_CONFIG_SOFT | 0)	/* ns: perf's cpu-clock */
#define BP_CONFIG_SOFT_TASK_CLOCK	(BP_CONFIG_SOFT | 1)	/* ns the app ran: task-clock */
#define BP_CONFIG_SOFT_TSC		(BP_CONFIG_SOFT | 0x100)	/* TSC ticks */

/*
 * A microbenchmark result (apps/bench.h): one per benchmark, event and CPU.
 * The harness measures the body unrolled n and 2n times, `loops` block
 * iterations each, n_reps times after `warmup` discarded runs; m(n) and
 * m(2n) are aggregated over the repetitions, then
 *     value = (agg(m(2n)) - agg(m(n))) / (unroll * loops * work)
 * is the count of `event` per unit of work (work_unit), x1000, rounded:
 * nanoBench's result, with agg its -min, -median or -avg (the mean of the
 * middle 60%, top and bottom 20% dropped). The three are in min, median
 * and trimmed_mean; `agg` (version 1) says which one the harness reported.
 *
 * The spread is a figure of the per-repetition pairs: d_i = m(2n)_i -
 * m(n)_i per unit of work, and iqr their interquartile range (third
 * quartile minus first, linear interpolation between order statistics),
 * x1000. A value below its noise floor, iqr plus one count per unit of
 * work (rounded up), is not a measurement of the body: it does not exceed
 * the repetitions' disagreement by even one count (BP_BENCH_F_NOISE for
 * the reported aggregate).
 *
 * A table is the records sharing `table`; a line of a sweep (a plot) those
 * sharing table, name and event, x = param.
 *
 * Identity (version 1): seq numbers the BENCH results one app run produced,
 * from 1, in the order the harness measured them, on every CPU together;
 * table_row numbers those with the same table. A record the ring had no
 * room for leaves a gap in both (and is counted in a LOST record); the
 * run's BENCH_END record, written when the app's benchmarks are done, says
 * how many there were, so a reader can also name those missing at the end.
 */
#define BP_BENCH_VERSION	1	/* 0: written before seq, table_row, agg, iqr */

/* bp_record_bench.param_unit: what param counts */
#define BP_BENCH_PARAM_NONE	0	/* no parameter: a row of a table */
#define BP_BENCH_PARAM_BYTES	1	/* working-set size */
#define BP_BENCH_PARAM_LENGTH	2	/* pattern length (period) */
#define BP_BENCH_PARAM_COUNT	3	/* a count of something, e.g. threads */
#define BP_BENCH_PARAM_CPU	4	/* the other CPU of a round trip */

/* bp_record_bench.work_unit: what one unit of work is */
#define BP_BENCH_WORK_COPY	0	/* one copy of the body */
#define BP_BENCH_WORK_INSN	1	/* one instruction of the kind measured */
#define BP_BENCH_WORK_LOAD	2	/* one dependent load (pointer chase) */
#define BP_BENCH_WORK_LINE	3	/* one 64-byte line read, written or copied */
#define BP_BENCH_WORK_BRANCH	4	/* one conditional branch */
#define BP_BENCH_WORK_ROUND_TRIP 5	/* one round trip between two CPUs */
#define BP_BENCH_WORK_OP	6	/* one operation (instruction + its set-up) */

/* bp_record_bench.flags */
#define BP_BENCH_F_EXACT	(1u << 0)	/* every repetition counted the same (min == max) */
#define BP_BENCH_F_TSC		(1u << 1)	/* event is the TSC, not a PMU counter */
#define BP_BENCH_F_ICOUNT	(1u << 2)	/* the TSC counts retired instructions (QEMU -icount) */
#define BP_BENCH_F_NO_PMU	(1u << 3)	/* no PMU: TSC ticks, cycles are not real */
#define BP_BENCH_F_LOOPED	(1u << 4)	/* C body: its loop overhead per copy is included */
#define BP_BENCH_F_DISTURBED	(1u << 5)	/* most repetitions kept an NMI: value untrusted */
#define BP_BENCH_F_NOISE	(1u << 6)	/* the reported value is below its noise floor */
#define BP_BENCH_F_CPUID_SERIALIZED (1u << 7)	/* LFENCE does not serialize there: reads
						 * serialized by CPUID (a larger, noisier overhead) */

/* bp_record_bench.agg: nanoBench's aggregate functions */
#define BP_BENCH_AGG_MEDIAN	0	/* -median (the harness's default) */
#define BP_BENCH_AGG_MIN	1	/* -min */
#define BP_BENCH_AGG_AVG	2	/* -avg: mean of the middle 60% */

struct bp_record_bench {
	struct bp_record_header header;
	uint32_t app_id;		/* as APP_START, 0 if unknown */
	uint32_t cpu;			/* the CPU measured on */
	char     table[16];		/* NUL-terminated: "memlat", "insn", ... */
	char     name[32];		/* NUL-terminated: "chase 4k-pages", "add r64 lat" */
	char     event[32];		/* NUL-terminated: "tsc" or a PMU event spec */
	uint64_t param;			/* e.g. working-set bytes; param_unit says */
	uint16_t param_unit;		/* BP_BENCH_PARAM_* */
	uint16_t work_unit;		/* BP_BENCH_WORK_* */
	uint32_t flags;			/* BP_BENCH_F_* */
	uint32_t n_reps;		/* repetitions aggregated */
	uint32_t warmup;		/* runs discarded before them */
	uint32_t unroll;		/* n */
	uint32_t disturbed;		/* of n_reps, kept an NMI after retries (disturbed ones
					 * are dropped while most are clean) */
	uint64_t loops;			/* block iterations per measurement */
	uint64_t work;			/* units of work per copy of the body */
	int64_t  min;			/* x1000 per unit of work: from the minima */
	int64_t  median;		/* ... from the medians */
	int64_t  trimmed_mean;		/* ... from the means of the middle 60% */
	int64_t  max;			/* ... from the maxima (a difference of two
					 * outliers: readers do not show it) */
	uint64_t median_n;		/* raw median count of one n-run (overhead included) */
	uint64_t median_2n;		/* ... of one 2n-run */
	uint64_t time;			/* TSC when the result was written */
	/* Version 1 (zero before): */
	uint16_t bench_version;		/* BP_BENCH_VERSION */
	uint16_t agg;			/* BP_BENCH_AGG_*: the aggregate reported */
	uint32_t seq;			/* this result's number in the app run, from 1 */
	uint32_t table_row;		/* ... among the run's results of this table, from 1 */
	uint32_t reserved_u32;
	uint64_t iqr;			/* x1000 per unit: IQR of the per-repetition differences */
	uint8_t  reserved[8];
};
_Static_assert(sizeof(struct bp_record_bench) == 232, "bp_record_bench ABI");
_Static_assert(__builtin_offsetof(struct bp_record_bench, param) == 96, "bp_record_bench ABI");
_Static_assert(__builtin_offsetof(struct bp_record_bench, min) == 144, "bp_record_bench ABI");
_Static_assert(__builtin_offsetof(struct bp_record_bench, bench_version) == 200,
	       "bp_record_bench ABI");
_Static_assert(__builtin_offsetof(struct bp_record_bench, iqr) == 216, "bp_record_bench ABI");

/*
 * The end of an app run's benchmarks: how many BENCH results the harness
 * produced (the highest seq) and how many of them found no room in a ring
 * (each also counted in a LOST record of the CPU it was measured on), and
 * the table and table_row of the last one, so results missing at the end
 * can be named too. Written into the app's CPU's ring when the app's
 * benchmarks are done.
 */
struct bp_record_bench_end {
	struct bp_record_header header;
	uint32_t app_id;		/* as APP_START */
	uint32_t cpu;			/* the CPU that wrote it */
	uint32_t results;		/* BENCH results of the run: seq 1 .. results */
	uint32_t lost;			/* ... of them not written for want of room */
	char     last_table[16];	/* NUL-terminated: the table of result `results` */
	uint32_t last_row;		/* ... and its table_row (0: no result) */
	uint32_t reserved_u32;
};
_Static_assert(sizeof(struct bp_record_bench_end) == 48, "bp_record_bench_end ABI");

/*
 * PROGRAM: a program the host sent as a relocatable object (WIRE_CTL_LOAD,
 * apps/program.c), written before each run of it, ahead of its APP_START:
 * where the kernel placed each of the object's allocated sections. With
 * the object file, found by its build-id, a reader names every address in
 * [start, end) as the kernel's own: a symbol's address is its section's
 * addr plus its st_value.
 */
struct bp_record_program {
	struct bp_record_header header;
	uint8_t  build_id[20];		/* the object's GNU build-id note, zero-padded */
	uint8_t  build_id_len;		/* 0: the object had none */
	uint8_t  reserved[3];
	uint32_t nr;			/* struct bp_program_section entries that follow */
	uint32_t reserved_u32;
	char     name[32];		/* NUL-terminated: the app name its runs carry */
	uint64_t start, end;		/* every byte the program occupies */
};
_Static_assert(sizeof(struct bp_record_program) == 88, "bp_record_program ABI");

#define BP_PROGRAM_SEC_EXEC	(1u << 0)	/* mapped read-only, executable */
#define BP_PROGRAM_SEC_WRITE	(1u << 1)	/* mapped read-write, no-execute */

struct bp_program_section {
	uint64_t addr;			/* where the section's first byte is */
	uint64_t size;
	uint32_t shndx;			/* its index in the object's section headers */
	uint32_t flags;			/* BP_PROGRAM_SEC_*; neither: read-only data */
};
_Static_assert(sizeof(struct bp_program_section) == 24, "bp_program_section ABI");

#endif
