/*
 * test_trace — the single-step instruction tracer in the guest.
 *
 * The traced app is tt_workload (below, in assembly so that its
 * instruction counts are known exactly): a counted loop, a recursion
 * (naive Fibonacci), a jump-table dispatch through an indirect jmp, a
 * loop of indirect calls, and a REP STOSB. For n (a multiple of 4):
 *
 *   tt_loop      3n + 2          tt_fib(10)   1500 (177 calls)
 *   tt_switch    3n              tt_case0..3  2, 3, 2, 2 per call, n/4 calls each
 *   tt_icall     3n + 5          tt_leaf      2n (n calls)
 *   tt_rep       4 + 65          (QEMU icount: 65 steps of rep stosb for 64
 *                                 bytes, the last one with rcx = 0)
 *   tt_workload  5n + 14
 *
 * Modes (the word after --):
 *   exact    (icount) the TSC counts instructions: every traced call's step
 *            count equals the instructions the same call retires untraced,
 *            measured with the TSC and interrupts off; the range filter
 *            counts exactly the instructions of tt_fib and of tt_loop; the
 *            AUX records are chunks that start with a SYNC; an AUX area
 *            too small for the trace gives TRUNCATED records and a trace
 *            that still counts every instruction; the figures (bytes per
 *            instruction, instructions spent per traced instruction)
 *   reference n=N   print tt_workload(N)'s instruction count (for the host
 *            end-to-end test: test/e2e/trace.sh)
 *   run n=N  run tt_workload(N) (traced by the command line's trace=)
 *   cwork n=N  run tt_cwork(N), compiled C, for the figures (trace=tt_cwork)
 *   pt       Intel PT: SKIP with the reason where there is none
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "pmu/pmu.h"
#include "profile/trace.h"
#include "ringbuf/ringbuf.h"
#include "test/guest/report.h"
#include <uapi/itrace.h>
#include <uapi/perf_ring.h>

long tt_workload(long n, long unused);
long tt_empty(long a, long b);
u64 tt_measure(long (*fn)(long, long), long a0);
extern char tt_begin[], tt_end[], tt_fib[], tt_fib_end[], tt_loop[], tt_loop_end[];

asm(".text\n"
    ".p2align 4\n"
    ".globl tt_begin, tt_end, tt_workload, tt_loop, tt_fib, tt_switch, tt_icall, tt_leaf\n"
    ".globl tt_rep, tt_case0, tt_case1, tt_case2, tt_case3, tt_empty, tt_measure\n"
    ".globl tt_fib_end, tt_loop_end\n"
    "tt_begin:\n"
    ".type tt_workload, @function\n"
    "tt_workload:\n"			/* rdi = n, a multiple of 4 */
    "	push %rbx\n"
    "	push %r12\n"
    "	mov %rdi, %rbx\n"
    "	call tt_loop\n"
    "	mov $10, %edi\n"
    "	call tt_fib\n"
    "	xor %r12d, %r12d\n"
    "1:	mov %r12d, %edi\n"
    "	call tt_switch\n"
    "	inc %r12\n"
    "	cmp %rbx, %r12\n"
    "	jb 1b\n"
    "	mov %rbx, %rdi\n"
    "	call tt_icall\n"
    "	mov $64, %edi\n"
    "	call tt_rep\n"
    "	pop %r12\n"
    "	pop %rbx\n"
    "	ret\n"
    ".size tt_workload, .-tt_workload\n"
    ".type tt_loop, @function\n"
    "tt_loop:\n"				/* sum n..1: 3n + 2 */
    "	xor %eax, %eax\n"
    "1:	add %rdi, %rax\n"
    "	dec %rdi\n"
    "	jnz 1b\n"
    "	ret\n"
    "tt_loop_end:\n"
    ".size tt_loop, .-tt_loop\n"
    ".type tt_fib, @function\n"
    "tt_fib:\n"				/* 13 per inner call, 4 per leaf */
    "	cmp $2, %rdi\n"
    "	jb 1f\n"
    "	push %rbx\n"
    "	push %rdi\n"
    "	lea -1(%rdi), %rdi\n"
    "	call tt_fib\n"
    "	mov %rax, %rbx\n"
    "	pop %rdi\n"
    "	lea -2(%rdi), %rdi\n"
    "	call tt_fib\n"
    "	add %rbx, %rax\n"
    "	pop %rbx\n"
    "	ret\n"
    "1:	mov %rdi, %rax\n"
    "	ret\n"
    "tt_fib_end:\n"
    ".size tt_fib, .-tt_fib\n"
    ".type tt_switch, @function\n"
    "tt_switch:\n"			/* 3, then the case */
    "	and $3, %edi\n"
    "	lea tt_jt(%rip), %rax\n"
    "	jmp *(%rax,%rdi,8)\n"
    ".size tt_switch, .-tt_switch\n"
    ".type tt_case0, @function\n"
    "tt_case0:\n"
    "	mov $10, %eax\n"
    "	ret\n"
    ".size tt_case0, .-tt_case0\n"
    ".type tt_case1, @function\n"
    "tt_case1:\n"
    "	mov $11, %eax\n"
    "	add $1, %eax\n"
    "	ret\n"
    ".size tt_case1, .-tt_case1\n"
    ".type tt_case2, @function\n"
    "tt_case2:\n"
    "	lea 3(%rdi), %eax\n"
    "	ret\n"
    ".size tt_case2, .-tt_case2\n"
    ".type tt_case3, @function\n"
    "tt_case3:\n"
    "	xor %eax, %eax\n"
    "	ret\n"
    ".size tt_case3, .-tt_case3\n"
    ".type tt_icall, @function\n"
    "tt_icall:\n"				/* n calls through a pointer: 3n + 5 */
    "	push %rbx\n"
    "	mov %rdi, %rbx\n"
    "	lea tt_leaf(%rip), %rax\n"
    "1:	call *%rax\n"
    "	dec %rbx\n"
    "	jnz 1b\n"
    "	pop %rbx\n"
    "	ret\n"
    ".size tt_icall, .-tt_icall\n"
    ".type tt_leaf, @function\n"
    "tt_leaf:\n"
    "	nop\n"
    "	ret\n"
    ".size tt_leaf, .-tt_leaf\n"
    ".type tt_rep, @function\n"
    "tt_rep:\n"				/* rep stosb of rdi bytes */
    "	mov %rdi, %rcx\n"
    "	lea tt_buf(%rip), %rdi\n"
    "	xor %eax, %eax\n"
    "	rep stosb\n"
    "	ret\n"
    ".size tt_rep, .-tt_rep\n"
    "tt_end:\n"
    ".type tt_empty, @function\n"
    "tt_empty:\n"
    "	ret\n"
    ".size tt_empty, .-tt_empty\n"
    /* rdi = fn, rsi = its argument: the TSC ticks from one rdtsc to the
     * next around the call (calibrated against tt_empty by the caller). */
    ".type tt_measure, @function\n"
    "tt_measure:\n"
    "	push %rbx\n"
    "	push %r12\n"
    "	push %r13\n"
    "	mov %rdi, %r12\n"
    "	mov %rsi, %rbx\n"
    "	rdtsc\n"
    "	shl $32, %rdx\n"
    "	or %rdx, %rax\n"
    "	mov %rax, %r13\n"
    "	mov %rbx, %rdi\n"
    "	call *%r12\n"
    "	rdtsc\n"
    "	shl $32, %rdx\n"
    "	or %rdx, %rax\n"
    "	sub %r13, %rax\n"
    "	pop %r13\n"
    "	pop %r12\n"
    "	pop %rbx\n"
    "	ret\n"
    ".size tt_measure, .-tt_measure\n"
    ".section .rodata\n"
    ".p2align 3\n"
    "tt_jt:\n"
    "	.quad tt_case0, tt_case1, tt_case2, tt_case3\n"
    ".bss\n"
    ".p2align 6\n"
    "tt_buf:\n"
    "	.skip 4096\n"
    ".text\n");

/*
 * Compiled code for the figures: rounds of insertion sort on 32 values
 * drawn from a pseudo-random table: data-dependent branches, loops,
 * no calls. Traced with trace=tt_cwork.
 */
long tt_cwork(long n, long seed);
long __attribute__((noipa)) tt_cwork(long n, long seed)
{
	static u32 table[256];
	u32 x = (u32)seed, buf[32];
	long sum = 0;

	for (int i = 0; i < 256; i++) {
		x = x * 1664525u + 1013904223u;
		table[i] = x >> 8;
	}
	for (long r = 0; r < n; r++) {
		const u32 *src = table + (r * 7) % 224;
		for (int i = 0; i < 32; i++) {
			u32 v = src[i];
			int j = i;
			while (j > 0 && buf[j - 1] > v) {
				buf[j] = buf[j - 1];
				j--;
			}
			buf[j] = v;
		}
		sum += buf[r & 31];
	}
	return sum;
}

#define FIB10		1500ul
/* rep stosb of 64 bytes under QEMU -icount: a trap per iteration and one
 * more with rcx = 0, as icount counts it (QEMU disables its REP shortcut
 * under icount; without icount TCG traps 64 times). */
#define REP_STEPS	65ul

static u64 expected(u64 n)
{
	u64 cases = n / 4 * (2 + 3 + 2 + 2);

	return (3 * n + 2) + FIB10 + 3 * n + cases + (3 * n + 5) + 2 * n + (4 + REP_STEPS) +
	       (5 * n + 14);
}

/* Instructions fn(a0) retires, from the TSC under icount, interrupts off. */
static u64 reference(long (*fn)(long, long), long a0)
{
	u64 flags = read_rflags();
	irq_disable();
	u64 empty = tt_measure(tt_empty, 0), d = tt_measure(fn, a0);
	if (flags & RFLAGS_IF)
		irq_enable();
	return d - empty + 1;
}

/* A ring of our own: 16 data pages, aux_pages of AUX area. */
struct ring {
	struct bp_ring rb __attribute__((aligned(64)));
	u8 *mem;
	u64 size;
};

static bool ring_make(struct ring *r, u32 aux_pages)
{
	u64 data = 16;

	r->size = (1 + data + aux_pages) * PAGE_SIZE;
	r->mem = (u8 *)pmm_alloc(1 + data + aux_pages);
	return r->mem && !bp_ring_init(&r->rb, r->mem, (1 + data) * PAGE_SIZE, NULL) &&
	       !bp_ring_aux_init(&r->rb, (1 + data) * PAGE_SIZE, aux_pages * PAGE_SIZE, 0, 0);
}

static void ring_free(struct ring *r)
{
	pmm_free((u64)r->mem, r->size / PAGE_SIZE);
}

struct auxscan {
	u64 records, empty, truncated, bytes, sync_starts, stop_pause, bad;
};

/* The AUX records in the data area, and what each chunk starts with. */
static void scan(struct ring *r, struct auxscan *s)
{
	static u8 buf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));
	struct bp_ring_reader rd;
	const struct bp_record_header *rec;

	memset(s, 0, sizeof(*s));
	if (bp_ring_reader_init(&rd, r->mem, r->size)) {
		s->bad++;
		return;
	}
	bp_ring_read_begin(&rd);
	while (bp_ring_read_next(&rd, &rec, buf, sizeof(buf)) == 1) {
		const struct bp_record_aux *a = (const void *)rec;
		u8 head[ITRACE_SYNC_MAGIC_LEN];
		if (rec->type != BP_RECORD_AUX)
			continue;
		s->records++;
		s->bytes += a->aux_size;
		s->truncated += !!(a->flags & BP_AUX_FLAG_TRUNCATED);
		if (!a->aux_size) {
			s->empty++;
			continue;
		}
		memset(head, 0, sizeof(head));
		if (bp_ring_aux_read(&rd, a->aux_offset, MIN(a->aux_size, (u64)sizeof(head)), head))
			s->bad++;
		else if (!memcmp(head, ITRACE_SYNC_MAGIC, ITRACE_SYNC_MAGIC_LEN))
			s->sync_starts++;
		else if (head[0] == ITRACE_OP_STOP && (a->flags & BP_AUX_FLAG_TRUNCATED))
			s->stop_pause++;
		else
			s->bad++;
	}
}

static void check_exact(u64 n)
{
	struct ring r;
	struct itrace_stats st;
	struct auxscan s;
	u64 ref = reference(tt_workload, n);

	report(ref == expected(n), "tt_workload(%lu) retires %lu instructions by the TSC; its "
	       "structure says %lu", n, ref, expected(n));
	report(ring_make(&r, 64), "a ring with a 64-page AUX area");

	/* Everything. */
	u64 t0 = rdtsc();
	long v = trace_call_ring(&r.rb, 0, ~0ull, tt_workload, n, 0, &st);
	u64 traced_ticks = rdtsc() - t0;
	report(v == tt_workload(n, 0), "the traced call returns the same result");
	report(st.steps == ref, "single-step count %lu = TSC-measured count %lu", st.steps, ref);
	report(st.steps_untraced == 0 && st.pauses == 0, "nothing untraced, no TRUNCATED commit");
	scan(&r, &s);
	report(s.records == st.chunks && s.bytes == st.bytes && s.truncated == 0 &&
	       s.sync_starts == s.records && !s.bad,
	       "%lu AUX records, %lu bytes, each chunk starts with a SYNC", s.records, s.bytes);
	report(st.per_class[ITRACE_C_REP] == REP_STEPS, "rep stosb of 64 bytes: %lu steps",
	       st.per_class[ITRACE_C_REP]);
	u64 milli = st.bytes * 1000 / st.steps;
	kprintf("trace: figure: %lu.%03lu trace bytes per instruction (%lu bytes for %lu "
		"instructions; %lu TNT bits, %lu TIPs, %lu compressed returns)\n", milli / 1000,
		milli % 1000, st.bytes, st.steps, st.tnt_bits, st.tips, st.rets_compressed);
	kprintf("trace: figure: %lu instructions run per traced instruction "
		"(TSC under icount: %lu traced vs %lu untraced)\n", traced_ticks / ref,
		traced_ticks, ref);
	ring_free(&r);

	/* A function, and an address range: exact counts. */
	report(ring_make(&r, 64), "a fresh ring");
	trace_call_ring(&r.rb, (u64)tt_fib, (u64)tt_fib_end, tt_workload, n, 0, &st);
	report(st.steps == FIB10, "trace=tt_fib: %lu instructions (fib(10): %lu)", st.steps, FIB10);
	report(st.syncs == 1 && st.pges == 0 && st.steps_out > 0,
	       "entered the range once (a SYNC, no PGE), %lu steps outside", st.steps_out);
	ring_free(&r);
	report(ring_make(&r, 64), "a fresh ring");
	trace_call_ring(&r.rb, (u64)tt_loop, (u64)tt_loop_end, tt_workload, n, 0, &st);
	report(st.steps == 3 * n + 2, "trace=tt_loop: %lu instructions (3n + 2 = %lu)", st.steps,
	       3 * n + 2);
	ring_free(&r);

	/* An AUX area too small, and no consumer: TRUNCATED, and still every
	 * instruction counted. */
	report(ring_make(&r, 1), "a ring with a 1-page AUX area");
	trace_call_ring(&r.rb, 0, ~0ull, tt_workload, 4 * n, 0, &st);
	scan(&r, &s);
	report(st.steps == expected(4 * n), "every instruction counted: %lu", st.steps);
	report(st.pauses >= 1 && s.truncated == st.pauses,
	       "%lu TRUNCATED AUX record%s", s.truncated, s.truncated == 1 ? "" : "s");
	report(s.stop_pause + s.sync_starts + s.empty == s.records && !s.bad, "chunks start with a SYNC, the truncated one ends in STOP PAUSE "
	       "(%lu SYNC chunks, %lu lone STOPs)", s.sync_starts, s.stop_pause);
	report(trace_producer()->paused && trace_producer()->end_pending,
	       "the producer is paused: its END waits for room");
	ring_free(&r);
}

static void check_pt(void)
{
	struct ipt_caps caps;

	if (ipt_probe(&caps)) {
		report_skip("no Intel PT: %s", caps.why);
		return;
	}
	report(caps.topa || caps.single_range, "Intel PT: ToPA %s, single-range %s, %u address "
	       "ranges", caps.topa ? (caps.topa_multi ? "multi-entry" : "one entry") : "no",
	       caps.single_range ? "yes" : "no", caps.nr_ranges);
}

static u64 arg_n(int argc, char **argv, u64 dflt)
{
	const char *s = test_arg(argc, argv, "n");
	u64 v;

	return s && !parse_u64(s, &v) && v && !(v % 4) ? v : dflt;
}

static int test_trace_main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "exact";
	u64 n = arg_n(argc, argv, 1000);

	if (!strcmp(what, "exact")) {
		check_exact(n);
	} else if (!strcmp(what, "reference")) {
		u64 ref = reference(tt_workload, n);
		kprintf("trace: reference tt_workload(%lu): %lu instructions (TSC under icount), "
			"structure: %lu\n", n, ref, expected(n));
		return ref == expected(n) ? EXIT_OK : EXIT_FAIL;
	} else if (!strcmp(what, "run")) {
		long v = tt_workload(n, 0);
		kprintf("trace: tt_workload(%lu) = %ld\n", n, v);
		return EXIT_OK;
	} else if (!strcmp(what, "cwork")) {
		u64 t0 = rdtsc_ordered();
		long v = tt_cwork(n, 12345);
		u64 t1 = rdtsc_ordered();
		kprintf("trace: tt_cwork(%lu) = %ld in %lu TSC ticks\n", n, v, t1 - t0);
		return EXIT_OK;
	} else if (!strcmp(what, "pt")) {
		check_pt();
	} else {
		report(false, "unknown mode '%s'", what);
	}
	return report_summary();
}

APP(test_trace, "guest test: single-step instruction tracer, Intel PT probe", test_trace_main,
    APP_TEST);
