/*
 * bench_code_trap.c — RUN_CODE's fault fix-up and watchdog
 * (apps/bench_code_trap.h), built without SSE.
 */
#include "apps/bench_code_trap.h"
#include "apps/bench_code.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/mm.h"

struct bench_code_run bench_run_state;
u64 bench_code_area;
#define run bench_run_state
#define area bench_code_area

bool bench_code_fault_fixup(struct trap_frame *f)
{
	if (!run.active || this_cpu_id() != run.cpu)
		return false;
	run.active = false;
	run.why = STOP_FAULT;
	run.vector = f->vector;
	run.error = f->error;
	run.rip = f->rip;
	run.cr2 = f->vector == VEC_PF ? read_cr2() : 0;
	unwind_frame(f, &run.at);
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
	bool in_code = f->rip >= area && f->rip < area + BENCH_CODE_AREA_PAGES * PAGE_SIZE;
	if (el < run.timeout_ticks || (!in_code && el < 2 * run.timeout_ticks))
		return;
	run.active = false;
	run.why = STOP_TIMEOUT;
	run.rip = f->rip;
	unwind_frame(f, &run.at);
}
