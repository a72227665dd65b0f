/*
 * bench.h — the microbenchmark harness (apps/bench.c the measurement;
 * bench_opts.c, bench_events.c, bench_lvt.c, bench_records.c,
 * bench_table.c around it; bench_mem.c and bench_caches.c for the suite)
 * and the suite's entry points (apps/bench_*.c).
 *
 * The method is nanoBench's (Abel & Reineke, "nanoBench: A Low-Overhead
 * Tool for Running Microbenchmarks on x86 Systems", ISPASS 2020): the body
 * is unrolled n times and 2n times, each version runs the same number of
 * loop iterations between two serialized counter reads (lfence; rdpmc;
 * lfence, or cpuid on either side where LFENCE is not known to serialize:
 * pmu_cpu_lfence_serializes, and the result carries
 * BP_BENCH_F_CPUID_SERIALIZED), and the result is
 *
 *         (m(2n) - m(n)) / (n * loops * work)       per unit of work
 *
 * so the counter reads, the call, the loop and any set-up in the block
 * cancel out. m() is aggregated over the repetitions before subtracting,
 * as nanoBench's -median (the default here), -min and -avg (the mean of
 * the middle 60%) do; agg= picks the one the tables show, the BENCH
 * record carries all three. Beside the value goes the spread of the
 * per-repetition differences m(2n)_i - m(n)_i (their interquartile
 * range), and a value below its noise floor, that spread plus one count
 * per unit of work, is shown as "< floor", never as a result
 * (apps/bench_stats.h). Results are fixed-point, x1000 (kernel C has no
 * floating point).
 *
 * Writing a benchmark: one C file.
 *
 *   BENCH_ASM(add_lat, 100, "", "add %rcx, %rax", "");
 *
 *   static const struct bench b = {
 *           .table = "insn", .name = "add r64 latency",
 *           .code = &add_lat, .loops = 10, .work_unit = BP_BENCH_WORK_INSN,
 *   };
 *   struct bench_result r[BENCH_MAX_RESULTS];
 *   bench_run(&b, opts, r, BENCH_MAX_RESULTS);
 *
 * BENCH_ASM(id, n, init, body, fini) makes two functions in assembly: init,
 * then `loops` iterations of exactly n (or 2n) copies of body (GNU as
 * .rept), then fini and ret. Under the SysV ABI as called: %rdi = the
 * bench's arg, %rsi = the loop counter (do not touch it). body may use
 * %rax %rcx %rdx %rdi %r8-%r11 and the vector registers; %rbx %rbp
 * %r12-%r15 only if init pushes and fini pops them. Label 1 is the loop's;
 * use 2: to 9: inside a body (they are local to each copy).
 *
 * A C body instead (.body): void fn(void *arg, u64 copies) runs `copies`
 * copies of the work (the harness passes n*loops and 2n*loops); its own
 * loop overhead per copy is then part of the result (BP_BENCH_F_LOOPED).
 *
 * While measuring, the local APIC's timer, thermal, performance-counter
 * and error LVT entries are masked (not cli: nanoBench's observation that
 * pending masked interrupts lower retirement throughput on some cores);
 * LINT0 stays masked as the kernel left it, LINT1 (the NMI pin) is left
 * alone, and so is LVT PC while the run itself uses the hardware PMU (a
 * PMI lost to the mask would silence its counter). Masking the timer
 * pauses the run tick (multiplexing, the stream drain) for one benchmark.
 * NMIs cannot be masked: a repetition during which this CPU took an NMI (a
 * soft-PMU sample, say) is measured again, up to BENCH_NMI_RETRIES times;
 * once one is hit on every try, NMIs come faster than a repetition lasts
 * and the rest are taken as they come. While most repetitions are clean,
 * the disturbed ones are dropped (`dropped`; `reps` counts those used);
 * else all are kept, counted in `disturbed`, and the result is flagged
 * BP_BENCH_F_DISTURBED: not a value to rank (bench_result_trusted). Exact
 * measurements under -icount need a run without sampling (events=none) or
 * a sampling period longer than the benchmark.
 *
 * PMU events need the PMU to themselves: while the run samples or counts
 * with the hardware PMU (the kernel's default events=cycles on a machine
 * with one), the harness measures only the "tsc" pseudo-event and says
 * so; boot with events=none to count PMU events here.
 *
 * Not reentrant: one bench_run at a time (it keeps its buffers static).
 */
#ifndef BAREPERF_APPS_BENCH_H
#define BAREPERF_APPS_BENCH_H

#include "kernel/kernel.h"
#include "apps/app.h"
#include "apps/bench_stats.h"
#include <uapi/perf_ring.h>

#define BENCH_MAX_EVENTS	4
#define BENCH_MAX_RESULTS	(BENCH_MAX_EVENTS * 64)	/* events x CPUs */
#define BENCH_MAX_REPS		1001
#define BENCH_NMI_RETRIES	4
#define BENCH_NAME_MAX		32

#define BENCH_STR(x)		#x
#define BENCH_XSTR(x)		BENCH_STR(x)

/* The two unrolled versions of an assembly body (BENCH_ASM). */
typedef void (*bench_fn)(void *arg, u64 count);
struct bench_asm {
	bench_fn run_n, run_2n;		/* count = loops */
	u32 n;
};

/*
 * BENCH_BODY marks a function as a measured body: the linker gathers
 * every body between __bench_body_start and __bench_body_end
 * (linker.ld), so the tools tell a sample in a body from one in the
 * harness or the app by its address alone (the flame graph colours them
 * apart). Mark C bodies (struct bench.body) with it; BENCH_ASM does.
 */
#define BENCH_BODY		__attribute__((section(".text.bench_body")))

/*
 * A body is a naked C function holding only its assembly: the compiler
 * emits no prologue or epilogue, but it does describe the function in the
 * debug info (its address range and the BENCH_ASM line), so a sample in
 * the body has a symbol and a source line like any C function.
 */
#define BENCH_ASM_FN(sym, copies, init, body, fini)			\
	__attribute__((naked, noinline, used, aligned(64))) BENCH_BODY	\
	static void sym(void *arg __attribute__((unused)),		\
			u64 loops __attribute__((unused)))		\
	{								\
		asm volatile(init "\n"					\
			     ".balign 16\n"					\
			     "1:\n"						\
			     ".rept " copies "\n"				\
			     body "\n"						\
			     ".endr\n"						\
			     "dec %rsi\n"					\
			     "jnz 1b\n"					\
			     fini "\n"						\
			     "ret\n");						\
	}

#define BENCH_ASM(id, n, init, body, fini)				\
	BENCH_ASM_FN(bench_##id##_n, BENCH_XSTR(n), init, body, fini)	\
	BENCH_ASM_FN(bench_##id##_2n, BENCH_XSTR(2 * (n)), init, body, fini) \
	static const struct bench_asm id = { bench_##id##_n, bench_##id##_2n, (n) }

/* struct bench.flags */
#define BENCH_NMI_OK		(1u << 0)	/* NMIs are part of the body: keep them */
#define BENCH_PER_CPU_SETUP	(1u << 1)	/* run setup/teardown on each measuring CPU */

struct bench {
	const char *table;		/* groups rows into one table: "memlat" */
	const char *name;		/* the row (< 32 characters): "chase 4k-pages" */
	u64 param;			/* e.g. working-set bytes, pattern length */
	u16 param_unit;			/* BP_BENCH_PARAM_* */
	u16 work_unit;			/* BP_BENCH_WORK_* */
	u64 work;			/* units of work per copy of the body (0 = 1) */
	u64 loops;			/* block iterations per measurement (0 = 1) */
	u32 unroll;			/* C bodies: n (0 = 1); BENCH_ASM has its own */
	u32 flags;			/* BENCH_* */
	const struct bench_asm *code;	/* either this ... */
	bench_fn body;			/* ... or a C body running `copies` copies (BENCH_BODY) */
	void *arg;
	/* Optional, outside the measured region; a non-zero return skips the
	 * benchmark with the message the set-up printed. */
	int (*setup)(void *arg);
	void (*teardown)(void *arg);
	/* NULL, or BENCH_MAX_REPS (n-run, 2n-run) pairs per event, in the
	 * order of the events: each measurement's counts as read, before a
	 * disturbed one is left out. */
	u64 (*readings)[2];
};

/*
 * What an event asks beside its spec (RUN_CODE's EVENT_CTR and
 * EVENT_MSR, nanoBench's -config fields): the one counter it may count
 * on, and MSRs written before it is measured and put back after (a PMU
 * event's: only those its selection reads, pmu_event_msr_check). An
 * event whose counter or MSR the CPU lacks, or whose MSR access faults,
 * is refused alone (bench_result.refused); the others are measured.
 */
#define BENCH_EVENT_MSRS	16
struct bench_event_opts {
	bool on_counter;
	u32 counter;			/* GP N, or PMU_COUNTER_FIXED + N */
	u32 nmsr;
	struct bench_msr_write {
		u32 msr;
		u64 value;
	} msr[BENCH_EVENT_MSRS];
};

/* RUN_CODE's EVENT_CTR or EVENT_MSR (uapi/wire.h; type, the value and
 * its length) into the event o received last. 0, or -E_INVAL: no event
 * before it, a counter given twice or past the numbering, more than
 * BENCH_EVENT_MSRS MSRs, a malformed value. */
struct bench_opts;
int bench_event_opt_take(struct bench_opts *o, u16 type, const void *v, size_t len);

/* What the user asked for; bench_parse_args fills it from "key=value". */
struct bench_opts {
	int cpu;			/* -1: every CPU in turn */
	u32 reps, warmup;		/* 0: the benchmark's default */
	u32 nevents;
	char events[BENCH_MAX_EVENTS][BENCH_NAME_MAX];	/* "tsc", "msr:0xZ", or PMU event specs */
	struct bench_event_opts event_opts[BENCH_MAX_EVENTS];	/* zero: nothing beside */
	u64 min_bytes, max_bytes;	/* memory sweeps (0: default) */
	u32 max_pattern;		/* branch sweep */
	bool quick;			/* the suite's small, fast parameters */
	bool quiet;			/* no console table rows */
	bool no_records;		/* do not write BENCH records */
	bool no_drain;			/* never drain the stream to make room for them */
	u16 agg;			/* BP_BENCH_AGG_*: what the tables show */
	bool cpu_column;		/* tables show the CPU (cpu=all) */
	const char *pages;		/* memlat: "4k", "2m" or "both" */
};

struct bench_result {
	u32 cpu;
	u32 flags;			/* BP_BENCH_F_* */
	char event[BENCH_NAME_MAX];
	u32 reps, warmup, unroll;
	u32 disturbed;			/* repetitions kept with an NMI: the value is untrusted */
	u32 dropped;			/* repetitions that took an NMI, left out of reps */
	u64 loops, work;
	s64 min, median, tmean, max;	/* x1000 per unit of work, per aggregate */
	s64 value;			/* the one agg selects */
	u16 agg;			/* BP_BENCH_AGG_* */
	u64 iqr;			/* x1000: spread of the per-repetition differences */
	u64 floor;			/* x1000: the noise floor; value below it is noise */
	u64 median_n, median_2n;	/* raw counts of one measurement */
	s32 smis;			/* SMIs during the measurement (MSR_SMI_COUNT); -1: not countable */
	char refused[120];		/* not "": the event was not measured, this is why */
};

/* Why the last bench_run returned an error (also on the console); "" if
 * it did not. */
const char *bench_refusal(void);

/* Neither below its noise floor nor from mostly disturbed repetitions. */
bool bench_result_trusted(const struct bench_result *r);

/* Defaults: parse "cpu=N|all events=a,b reps=N warmup=N min=SIZE max=SIZE
 * pattern=N pages=4k|2m|both quick=1 quiet=1 records=0 drain=0
 * agg=median|min|avg" (SIZE: 4096, 64k, 2m, 1g). Unknown words are an
 * error naming them; returns 0 or -E_INVAL. */
int bench_parse_args(int argc, char **argv, struct bench_opts *o);
void bench_opts_default(struct bench_opts *o);

/*
 * Run one benchmark for every requested event, on o->cpu or on every CPU
 * in turn; print a row per result (unless quiet) and write a BENCH record
 * into the measuring CPU's ring when a run is active. reps/warmup default
 * to def_reps / def_warmup (o overrides). Returns the number of results,
 * 0 if the set-up skipped it, or -E_* (bad event, bad CPU).
 *
 * Records are numbered per app run (seq, table_row). A record that finds
 * too little room in its ring first drains the stream (outside the
 * measured region; not with drain=0 or without a stream), waiting up to
 * BENCH_ROOM_WAIT_MS; one that still does not fit is dropped, counted in
 * the run's lost total and the ring's next LOST record, and leaves its gap.
 */
#define BENCH_ROOM_WAIT_MS	2000
int bench_run(const struct bench *b, const struct bench_opts *o, u32 def_reps,
	      u32 def_warmup, struct bench_result *res, int max_res);

/*
 * The app's benchmarks are done: write the run's BENCH_END record (how
 * many results there were, how many found no room), so a reader can name
 * the rows it is missing, and say so on the console if any were lost.
 * Every app that calls bench_run calls this before it returns.
 */
void bench_end(const struct bench_opts *o);

/* Console tables: a title, then a header line naming the columns. */
void bench_table(const char *table, const char *title, const char *param_label,
		 const struct bench_opts *o);
/* "x.yyy" for a x1000 value, into buf; returns buf. */
const char *bench_fmt_x1000(s64 v, char *buf, size_t n);
/* "4 KiB", "2 MiB", "1 GiB" */
const char *bench_fmt_bytes(u64 bytes, char *buf, size_t n);

/* What the "tsc" pseudo-event is on this machine, in words. */
const char *bench_tsc_meaning(void);
/* Does the TSC count retired instructions (QEMU -icount shift=0)? Probed
 * once by measuring nop blocks. */
bool bench_tsc_counts_insns(void);
/* "TSC ... " when every event is the TSC, else "counts of the event". */
const char *bench_events_meaning(const struct bench_opts *o);
/* Running under QEMU's TCG (hypervisor id "TCGTCGTCGTCG")? */
bool bench_is_tcg(void);
/* Is the hardware PMU usable for counting now (present, rdpmc works, not
 * busy sampling this run)? why: a sentence if not. */
bool bench_pmu_usable(const char **why);

/* ---- helpers for suite apps ---- */

/* Deterministic xorshift64* random numbers. */
u64 bench_rand(u64 *state);

/*
 * A pointer chase over nodes of `stride` bytes at buf: node i's first
 * word points at node next(i), where next is one random cycle through all
 * nodes (Sattolo's algorithm), so a walk visits every node once per lap.
 * Returns the start node. bench_chase_cycle walks it and returns the
 * length of the cycle through buf (== nodes when it is one cycle), or 0
 * if a pointer leaves the buffer or is misaligned.
 */
void *bench_chase_build(void *buf, u64 nodes, u64 stride, u64 seed);
u64 bench_chase_cycle(const void *buf, u64 nodes, u64 stride);

/* Memory for a working set: 2 MiB pages (the identity map, 2 MiB-aligned
 * above 1 MiB; smaller buffers may straddle two 2 MiB pages)
 * or 4 KiB pages (vmalloc_stack's mapping; kept and reused, never freed:
 * the kernel has no vfree). Returns NULL if RAM does not allow it. */
void *bench_mem_2m(u64 bytes);
void bench_mem_2m_free(void *p, u64 bytes);
void *bench_mem_4k(u64 bytes);
/* The largest working set a sweep may use: a power of two that leaves
 * headroom in free RAM. */
u64 bench_mem_cap(void);

/* Caches from CPUID (Intel leaf 4, AMD 0x8000001D or 0x80000005/6). */
struct bench_cache {
	u32 level;
	char type;			/* 'd', 'i', 'u' */
	u64 bytes;
};
int bench_caches(struct bench_cache *c, int max);

/* The suite: each runs its benchmarks with the given options; returns an
 * exit code. */
int bench_memlat(const struct bench_opts *o);
int bench_membw(const struct bench_opts *o);
int bench_branch(const struct bench_opts *o);
int bench_insn(const struct bench_opts *o);
int bench_priv(const struct bench_opts *o);

/*
 * A measurement left by unwinding (apps/bench_code.c, after a fault or
 * the watchdog in the code it measured): put back the LVT entries it
 * masked and stop the counter it started. Nothing if none is held.
 */
void bench_abandon(void);

/* Tests: the SMI count is read through read instead of pmu_smi_count
 * (NULL: pmu_smi_count again), to see where the measurement reads it. */
struct pmu_caps;
void bench_test_smi_reader(s64 (*read)(const struct pmu_caps *caps));

#endif
