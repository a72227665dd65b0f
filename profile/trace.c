/*
 * trace.c — the traced run: trace= parsing, the per-CPU trace buffers
 * (the AUX areas profile/profile.c sets up), the traced call and the
 * single-step #DB handler. The producers are pmu/trace/itrace.c
 * (single-step) and pmu/trace/pt.c (Intel PT).
 *
 * Single-stepping (SDM Vol. 3B 18.3.1.4): TF is set with popf, and the
 * trap comes after the instruction following the popf; from then on
 * every #DB reports the next instruction after one has run. The handler
 * runs on its own IST stack (IST_DB) with TF and IF clear (interrupt
 * gate), so neither it nor the interrupts and NMIs the traced code takes
 * are traced; the iretq restores TF.
 *
 * Two ways in. trace_call_ring sets TF in a trampoline right before its
 * `call`: the first trap reports the function's first instruction, the
 * one reporting the trampoline's return site ends the trace. An app run
 * (trace_app_enter, from profile/profile.c just before app->main) sets TF
 * and arms: traps are ignored until one reports main's first
 * instruction; then the return address and stack pointer there say where
 * main returns, and the trap that reports both ends the trace. Either
 * end clears TF in the saved RFLAGS. A stray single-step trap (TF left
 * set by anything else) only clears TF.
 *
 * Cost: every traced instruction becomes a trap, a C handler and an
 * iretq: the traced code runs some hundred times slower. make bench
 * measures it as trace_tcg_slowdown (test/e2e/trace_bench.sh): the wall
 * time of tt_cwork traced over its time untraced, under TCG. Timers keep
 * running and interrupts keep being taken at full speed between steps.
 */
#include "kernel/kernel.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/stream.h"
#include "kernel/trap.h"
#include "profile/profile.h"
#include "profile/trace.h"

#define MAX_TRACE_CPUS	64
#define FINISH_WAIT_NS	2000000000ul	/* wait for room for a pending END: 2 s */
#define ARMED_MAX	10000		/* traps before main is reached: give up after */

enum { T_IDLE, T_ARMED, T_ACTIVE };

struct tcpu {
	struct itrace_cpu p;		/* single-step producer */
	struct ipt_cpu pt;		/* Intel PT */
	void *pt_tables;		/* ToPA pages */
	u32 pt_table_pages;
	struct bp_ring *rb;		/* this run's ring, NULL when detached */
	u32 state;			/* T_*: written here and by the #DB handler */
	bool pt_on;
	u64 entry;			/* T_ARMED: main's first instruction */
	u64 stop_rip, stop_rsp;		/* T_ACTIVE: where the trace ends (rsp 0: any) */
	u64 armed_steps;
	u64 stray;			/* single-step traps outside a traced call */
	u64 calls;
};

static struct tcpu tcpus[MAX_TRACE_CPUS];
static struct trace_cfg run_cfg;
static struct ipt_caps pt_caps;
static bool pt_probed, handlers_set;

static void ensure_handlers(void);

extern char trace_tramp_ret[];
long trace_tramp(void *fn, long a0, long a1);

/*
 * fn(a0, a1) with TF set: the trap after `call` reports fn's first
 * instruction; the one reporting trace_tramp_ret ends the trace. The
 * frame pointer keeps backtraces through it working.
 */
asm(".text\n"
    ".globl trace_tramp, trace_tramp_ret\n"
    ".type trace_tramp, @function\n"
    "trace_tramp:\n"
    "	push %rbp\n"
    "	mov %rsp, %rbp\n"
    "	mov %rdi, %rax\n"
    "	mov %rsi, %rdi\n"
    "	mov %rdx, %rsi\n"
    "	pushfq\n"
    "	orq $0x100, (%rsp)\n"		/* RFLAGS_TF */
    "	popfq\n"
    "	call *%rax\n"
    "trace_tramp_ret:\n"
    "	pop %rbp\n"
    "	ret\n"
    ".size trace_tramp, .-trace_tramp\n");

static struct tcpu *me(void)
{
	u32 cpu = this_cpu()->cpu;

	return cpu < MAX_TRACE_CPUS ? &tcpus[cpu] : NULL;
}

const struct trace_cfg *trace_config(void)
{
	return &run_cfg;
}

/* ---- trace= ------------------------------------------------------------ */

/* An address or a function name; end: the end of the named function. */
static int addr_of(const char *s, bool end, u64 *out, char *err, size_t n)
{
	u64 v, off, size;

	if (!parse_u64(s, &v)) {
		*out = v;
		return 0;
	}
	v = ksym_address(s);
	if (!v || !ksym_lookup(v, &off, &size) || off) {
		ksnprintf(err, n, "trace: no function '%s' in this kernel", s);
		return -E_NOENT;
	}
	*out = end ? v + size : v;
	return 0;
}

int trace_parse(const char *spec, uint32_t aux_pages, struct trace_cfg *out, char *err,
		size_t n)
{
	char buf[64], *dash;
	const char *what = spec;

	memset(out, 0, sizeof(*out));
	out->aux_pages = aux_pages;
	if (!*spec || !strcmp(spec, "off"))
		return 0;
	strlcpy(out->spec, spec, sizeof(out->spec));
	out->kind = TRACE_SSTEP;
	if (!strncmp(what, "sstep:", 6)) {
		what += 6;
	} else if (!strncmp(what, "pt:", 3)) {
		what += 3;
		if (!pt_probed) {
			ipt_probe(&pt_caps);
			pt_probed = true;
		}
		if (!pt_caps.present) {
			ksnprintf(err, n, "trace: %s: Intel PT is not available: %s. The single-step "
				  "tracer works on any x86-64 CPU: trace=%s", spec, pt_caps.why, what);
			return -E_NODEV;
		}
		out->kind = TRACE_PT;
	}
	if (strlcpy(buf, what, sizeof(buf)) >= sizeof(buf)) {
		ksnprintf(err, n, "trace: '%s' is too long", spec);
		return -E_INVAL;
	}
	if (!strcmp(buf, "all")) {
		out->lo = 0;
		out->hi = ~0ull;
		return 0;
	}
	if ((dash = strchr(buf, '-'))) {
		*dash = 0;
		int e = addr_of(buf, false, &out->lo, err, n);
		if (!e)
			e = addr_of(dash + 1, true, &out->hi, err, n);
		if (e)
			return e;
		if (out->lo >= out->hi) {
			ksnprintf(err, n, "trace: the range %s is empty", spec);
			return -E_RANGE;
		}
		return 0;
	}
	int e = addr_of(buf, false, &out->lo, err, n);
	if (e)
		return e;
	return addr_of(buf, true, &out->hi, err, n);
}

/* ---- the #DB handler --------------------------------------------------- */

static const u8 *fetch(void *ctx, u64 ip)
{
	(void)ctx;
	return (const u8 *)ip;
}

static u64 tsc(void *ctx)
{
	(void)ctx;
	return rdtsc();
}

static const struct itrace_hooks hooks = { fetch, tsc, NULL };

static void set_tf(void)
{
	asm volatile("pushfq; orq %0, (%%rsp); popfq" : : "i"(RFLAGS_TF) : "memory", "cc");
}

static void clear_tf(void)
{
	asm volatile("pushfq; andq %0, (%%rsp); popfq" : : "i"(~RFLAGS_TF) : "memory", "cc");
}

static void db_trap(struct trap_frame *f)
{
	u64 dr6 = read_dr6();
	struct tcpu *t;

	write_dr6(DR6_CLEAR);
	if (!(dr6 & DR6_BS))
		fatal_trap(f, "#DB debug (no single step: bareperf sets no breakpoints)");
	t = me();
	if (!t || t->state == T_IDLE) {
		f->rflags &= ~RFLAGS_TF;
		if (t)
			t->stray++;
		return;
	}
	u64 top = *(const u64 *)f->rsp;
	if (t->state == T_ARMED) {
		if (f->rip != t->entry) {
			if (++t->armed_steps > ARMED_MAX) {
				f->rflags &= ~RFLAGS_TF;
				t->state = T_IDLE;
			}
			return;
		}
		/* main's first instruction: its return address is on the stack. */
		t->stop_rip = top;
		t->stop_rsp = f->rsp + 8;
		t->state = T_ACTIVE;
	} else if (f->rip == t->stop_rip && (!t->stop_rsp || f->rsp == t->stop_rsp)) {
		itrace_stop(&t->p, f->rip, top);
		f->rflags &= ~RFLAGS_TF;
		t->state = T_IDLE;
		return;
	}
	itrace_step(&t->p, f->rip, top);
}

static bool pt_nmi(struct trap_frame *f)
{
	struct tcpu *t = me();

	(void)f;
	return t && t->rb && run_cfg.kind == TRACE_PT && ipt_cpu_pmi(&t->pt);
}

/* ---- the run --------------------------------------------------------- */

uint32_t trace_run_prepare(const struct trace_cfg *cfg)
{
	run_cfg = *cfg;
	for (u32 i = 0; i < MAX_TRACE_CPUS; i++)
		tcpus[i].calls = 0;		/* trace_summary: this run only */
	if (run_cfg.kind == TRACE_OFF)
		return 0;
	ensure_handlers();
	return run_cfg.aux_pages;
}

void trace_cpu_attach(struct bp_ring *rb, uint32_t run_id)
{
	struct tcpu *t = me();

	if (!t || run_cfg.kind == TRACE_OFF || !rb->ctl->aux_size)
		return;
	t->rb = rb;
	t->state = T_IDLE;
	t->pt_on = false;
	t->calls = 0;
	memset(&t->p.st, 0, sizeof(t->p.st));
	if (run_cfg.kind == TRACE_PT) {
		char err[160];
		u32 pages = ipt_topa_pages(&pt_caps, rb->ctl->aux_size / PAGE_SIZE);
		if (pages && pages != t->pt_table_pages) {
			if (t->pt_tables)
				pmm_free(virt_to_phys(t->pt_tables), t->pt_table_pages);
			u64 pa = pmm_alloc(pages);
			t->pt_tables = (void *)pa;
			t->pt_table_pages = pa ? pages : 0;
		}
		u8 *aux = (u8 *)rb->ctl + rb->ctl->aux_offset;
		if ((pages && !t->pt_tables) ||
		    ipt_cpu_init(&t->pt, &pt_caps, rb, virt_to_phys(aux), t->pt_tables,
				t->pt_tables ? virt_to_phys(t->pt_tables) : 0, run_cfg.lo, run_cfg.hi,
				err, sizeof(err))) {
			kprintf("trace: cpu %u: %s\n", this_cpu()->cpu,
				pages && !t->pt_tables ? "no memory for the ToPA tables" : err);
			t->rb = NULL;
			return;
		}
		apic_lvtpc_set_nmi();
	}
	struct bp_record_itrace_start r = {
		.header = { BP_RECORD_ITRACE_START, 0, sizeof(r) },
		.pid = run_id,
		.tid = this_cpu()->cpu,
	};
	profile_count_drop(bp_ring_output(rb, &r));	/* rb is this CPU's ring of the run */
}

void trace_cpu_detach(void)
{
	struct tcpu *t = me();

	if (!t || !t->rb)
		return;
	if (t->pt_on)
		ipt_cpu_stop(&t->pt);
	t->pt_on = false;
	t->rb = NULL;
}

bool trace_running(void)
{
	struct tcpu *t = me();

	return t && t->state != T_IDLE;
}

const struct itrace_cpu *trace_producer(void)
{
	struct tcpu *t = me();

	return t ? &t->p : NULL;
}

/* The END could not be written: the area is full. Give the drain (the
 * run tick on the boot CPU) a little time to make room, if it runs: not
 * when nothing streams, nor on the boot CPU with interrupts off. */
static void finish(struct tcpu *t)
{
	u64 t0 = rdtsc();

	while (!itrace_finish(&t->p)) {
		if (!stream_active() || (this_cpu()->cpu == 0 && !(read_rflags() & RFLAGS_IF)) ||
		    tsc_to_ns(rdtsc() - t0) > FINISH_WAIT_NS) {
			kprintf("trace: cpu %u: the AUX area stayed full: the trace ends in a gap "
				"(%lu instructions traced in all)\n", this_cpu()->cpu, t->p.steps);
			return;
		}
		cpu_relax();
	}
}

static void ensure_handlers(void)
{
	if (!handlers_set) {
		trap_set_handler(VEC_DB, db_trap);
		nmi_register(pt_nmi);
		handlers_set = true;
	}
}

long trace_call_ring(struct bp_ring *rb, uint64_t lo, uint64_t hi,
		     long (*fn)(long, long), long a0, long a1, struct itrace_stats *st)
{
	struct tcpu *t = me();
	long r;

	if (!t || t->state != T_IDLE || t->pt_on || !rb || !rb->ctl->aux_size)
		return fn(a0, a1);
	ensure_handlers();
	t->calls++;
	itrace_start(&t->p, rb, lo, hi, &hooks);
	t->stop_rip = (u64)trace_tramp_ret;
	t->stop_rsp = 0;
	t->state = T_ACTIVE;
	r = trace_tramp((void *)fn, a0, a1);
	if (t->state != T_IDLE) {
		/* Only if the trap at the return site never came. */
		t->state = T_IDLE;
		kprintf("trace: cpu %u: the traced call returned without its last trap\n",
			this_cpu()->cpu);
	}
	if (t->p.end_pending)
		finish(t);
	if (st)
		*st = t->p.st;
	return r;
}

long trace_call(long (*fn)(long, long), long a0, long a1)
{
	struct tcpu *t = me();

	if (!t || !t->rb || run_cfg.kind == TRACE_OFF)
		return fn(a0, a1);
	if (run_cfg.kind == TRACE_PT) {
		if (t->state != T_IDLE || t->pt_on)
			return fn(a0, a1);
		t->calls++;
		t->pt_on = true;
		ipt_cpu_start(&t->pt);
		long r = fn(a0, a1);
		ipt_cpu_stop(&t->pt);
		t->pt_on = false;
		return r;
	}
	return trace_call_ring(t->rb, run_cfg.lo, run_cfg.hi, fn, a0, a1, NULL);
}

void trace_app_enter(const void *entry)
{
	struct tcpu *t = me();

	if (!t || !t->rb || !entry || run_cfg.kind == TRACE_OFF || t->state != T_IDLE || t->pt_on)
		return;
	t->calls++;
	if (run_cfg.kind == TRACE_PT) {
		t->pt_on = true;
		ipt_cpu_start(&t->pt);
		return;
	}
	itrace_start(&t->p, t->rb, run_cfg.lo, run_cfg.hi, &hooks);
	t->entry = (u64)entry;
	t->armed_steps = 0;
	t->state = T_ARMED;
	set_tf();
}

void trace_app_exit(void)
{
	struct tcpu *t = me();

	if (!t || !t->rb)
		return;
	if (t->pt_on) {
		ipt_cpu_stop(&t->pt);
		t->pt_on = false;
		return;
	}
	if (t->state != T_IDLE) {
		/* main never reached, or its return never seen: stop here. */
		t->state = T_IDLE;
		clear_tf();
		kprintf("trace: cpu %u: %s\n", this_cpu()->cpu, t->p.have_prev || t->p.steps ?
			"the app returned without the trap that ends the trace" :
			"the app's main was never reached: nothing traced");
		itrace_stop(&t->p, 0, 0);
	}
	if (t->p.end_pending)
		finish(t);
}

void trace_tick(void)
{
	struct tcpu *t = me();

	/* pt_nmi can interrupt us: the poll only acts while PT is paused,
	 * when no PMI can come. */
	if (t && t->rb && t->pt_on && t->pt.paused)
		ipt_cpu_poll(&t->pt);
}

const struct itrace_stats *trace_stats(uint32_t cpu)
{
	return cpu < MAX_TRACE_CPUS && tcpus[cpu].calls ? &tcpus[cpu].p.st : NULL;
}

void trace_summary(void)
{
	for (u32 cpu = 0; cpu < MAX_TRACE_CPUS; cpu++) {
		const struct tcpu *t = &tcpus[cpu];
		if (!t->calls)
			continue;
		if (run_cfg.kind == TRACE_PT) {
			kprintf("trace: cpu %u: Intel PT, %lu bytes in %lu commits, %lu ToPA PMIs, "
				"%lu truncated, %lu errors\n", cpu, t->pt.st.bytes, t->pt.st.commits,
				t->pt.st.pmis, t->pt.st.truncated, t->pt.st.errors);
			continue;
		}
		const struct itrace_stats *s = &t->p.st;
		u64 untraced = s->steps_untraced + (t->p.paused ? t->p.steps - t->p.pause_steps : 0);
		u64 milli = s->steps ? s->bytes * 1000 / s->steps : 0;
		kprintf("trace: cpu %u: %lu instructions traced in %lu call%s, %lu bytes "
			"(%lu.%03lu bytes/instruction) in %lu chunks, %lu TRUNCATED "
			"(%lu instructions untraced)\n", cpu, s->steps, t->calls,
			t->calls == 1 ? "" : "s", s->bytes, milli / 1000, milli % 1000, s->chunks,
			s->pauses, untraced);
	}
}
