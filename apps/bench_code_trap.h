/*
 * bench_code_trap.h — the parts of RUN_CODE (apps/bench_code.c) that run
 * in trap and NMI context: the fault fix-up and the watchdog. Built with
 * the kernel's flags (no SSE, apps/apps.mk).
 */
#ifndef BAREPERF_APPS_BENCH_CODE_TRAP_H
#define BAREPERF_APPS_BENCH_CODE_TRAP_H

#include "kernel/kernel.h"
#include "kernel/trap.h"
#include "kernel/unwind.h"

enum stop_why { STOP_NONE, STOP_FAULT, STOP_TIMEOUT };

/* The request being run; the fix-up and the watchdog read it. */
struct bench_code_run {
	volatile bool active;
	u32 cpu;
	struct unwind_point at;
	u64 t0, timeout_ticks;
	/* what stopped it */
	volatile int why;
	u64 vector, error, rip, cr2;
	/* the code's layout, for naming an offset */
	u64 fn[2], body[2], body_end[2], init[2], init_end[2], late[2], late_end[2];
	u64 len;
};
extern struct bench_code_run bench_run_state;
extern u64 bench_code_area;	/* the generated code's pages, 0 until the first request */

/* trap_set_fault_fixup's. */
bool bench_code_fault_fixup(struct trap_frame *f);
/* The HPET NMI (hpet_nmi_start): stops code that ran past the timeout. */
void bench_code_watchdog(struct trap_frame *f, void *arg);

#endif
