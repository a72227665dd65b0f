/*
 * bench_code_trap.c — RUN_CODE's fault fix-up, watchdog and guarded run
 * (apps/bench_code_trap.h), built without SSE.
 */
#include "apps/bench_code_trap.h"
#include "apps/bench_state.h"
#include "apps/bench_code.h"
#include "apps/program.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/mm.h"

#define MSR_KERNEL_GS_BASE	0xc0000102u	/* SDM Vol. 4 table 2-2 */
#define MSR_MCG_STATUS		0x17au
#define   MCG_STATUS_MCIP	(1ul << 2)
#define OP_INT			0xcd		/* INT imm8 */

struct bench_code_run bench_run_state;
u64 bench_code_area;
#define run bench_run_state

static bool in_area(u64 rip)
{
	return rip >= bench_code_area && rip < bench_code_area + BENCH_CODE_AREA_PAGES * PAGE_SIZE;
}

/* A software INT n: the two bytes before the return RIP, in the code's
 * pages, are INT with this vector. A real machine check (MCIP set) that
 * happens to follow such bytes is not one. */
static bool soft_int(const struct trap_frame *f)
{
	u64 mcg;

	if (!in_area(f->rip - 2) || !in_area(f->rip - 1))
		return false;
	const u8 *p = (const u8 *)(f->rip - 2);
	if (p[0] != OP_INT || p[1] != f->vector)
		return false;
	return f->vector != VEC_MC || rdmsr_safe(MSR_MCG_STATUS, &mcg) || !(mcg & MCG_STATUS_MCIP);
}

/* Unwind to the request; the GS base the code had is the trap's to put
 * back (isr.asm), unless it is told the kernel's. */
static void stop(struct trap_frame *f, int why, u64 rip)
{
	run.active = false;
	run.why = why;
	run.rip = rip;
	if (f->gs_base != run.gs.want)
		run.gs.seen = f->gs_base;
	unwind_frame(f, &run.at);
	f->gs_base = run.gs.want;
	f->cr3 = run.kernel_cr3;
}

bool bench_code_fault_fixup(struct trap_frame *f)
{
	u64 v = f->vector;

	if (!run.active || this_cpu_id() != run.cpu)
		return false;
	bool soft = soft_int(f), on_code = f->cr3 == run.code_cr3;
	/* A #DB in the harness is the code's too: only the code sets
	 * breakpoints while it is active. So is a fault in a loaded
	 * program's function the code called (not in a kernel function: the
	 * harness calls those too), and whatever faulted on the code's page
	 * tables, a kernel function it called included: the harness never
	 * runs on them. So is a #DF there: an exception whose frame went to
	 * a stack the code pointed at memory it may not write (SDM Vol. 3A
	 * 6.15, interrupt 8: a #PF in delivering a #PF). */
	if (!soft && (v >= 32 || v == VEC_NMI || (v == VEC_DF && !on_code) || v == VEC_MC ||
		      (!in_area(f->rip) && !program_text_holds(f->rip) && v != VEC_DB &&
		       !on_code)))
		return false;
	bench_state_debug_off();
	run.soft = soft;
	run.vector = v;
	run.error = f->error;
	run.cr2 = v == VEC_PF && !soft ? read_cr2() : 0;
	stop(f, STOP_FAULT, soft ? f->rip - 2 : f->rip);
	return true;
}

/* Every quarter of the timeout: stop code that ran past it when the NMI
 * interrupted the code itself (not the harness around it, which may hold
 * the console). */
void bench_code_watchdog(struct trap_frame *f, void *arg)
{
	(void)arg;
	if (!run.active || this_cpu_id() != run.cpu)
		return;
	u64 el = hpet_read() - run.t0;
	if (el < run.timeout_ticks || (!in_area(f->rip) && el < 2 * run.timeout_ticks))
		return;
	bench_state_debug_off();
	stop(f, STOP_TIMEOUT, f->rip);
}

void bench_code_cpu_save(struct bench_code_cpu *s)
{
	s->cr0 = read_cr0();
	s->cr4 = read_cr4();
	s->gs_base = rdmsr(MSR_IA32_GS_BASE);
	s->kernel_gs_base = rdmsr(MSR_KERNEL_GS_BASE);
	s->efer = rdmsr(MSR_IA32_EFER);
}

/* Noinline and after the unwind point: nothing here may use SSE. */
static void __attribute__((noinline)) put_back(const struct bench_code_cpu *s,
					       struct bench_code_cpu *now)
{
	bench_code_cpu_save(now);
	/* What the generated code's exit or the unwind put back already. */
	if (run.gs.seen != run.gs.want)
		now->gs_base = run.gs.seen;
	if (run.cr0.seen != run.cr0.want)
		now->cr0 = run.cr0.seen;
	if (run.cr4.seen != run.cr4.want)
		now->cr4 = run.cr4.seen;
	if (run.efer_seen)
		now->efer = run.efer_seen;
	if (now->efer != s->efer)
		wrmsr(MSR_IA32_EFER, s->efer);
	if (now->cr0 != s->cr0)
		write_cr0(s->cr0);
	if (now->cr4 != s->cr4)
		write_cr4(s->cr4);
	if (now->gs_base != s->gs_base)
		wrmsr(MSR_IA32_GS_BASE, s->gs_base);
	if (now->kernel_gs_base != s->kernel_gs_base)
		wrmsr(MSR_KERNEL_GS_BASE, s->kernel_gs_base);
}

void bench_code_guarded(void (*fn)(void *), void *arg, const struct bench_code_cpu *before,
			struct bench_code_cpu *found)
{
	run.gs = (struct bench_code_kept){ before->gs_base, before->gs_base };
	run.cr0 = (struct bench_code_kept){ before->cr0, before->cr0 };
	run.cr4 = (struct bench_code_kept){ before->cr4, before->cr4 };
	run.efer_seen = 0;
	if (!unwind_save(&run.at)) {
		run.t0 = hpet_read();
		run.active = true;
		fn(arg);
		run.active = false;
	}
	put_back(before, found);
}
