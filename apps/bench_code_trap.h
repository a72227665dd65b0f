/*
 * bench_code_trap.h — the parts of RUN_CODE (apps/bench_code.c) that run
 * in trap and NMI context or right after code stopped: the fault fix-up,
 * the watchdog, the unwind point, and putting back the CPU state that SSE
 * and this_cpu() depend on. Built with the kernel's flags (no SSE,
 * apps/apps.mk): code may leave CR0.TS or CR0.EM set, CR4.OSFXSR clear or
 * another GS base, and all of this runs before anything puts them back.
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
	bool soft;			/* an INT n the code ran (rip is after it) */
	u64 vector, error, rip, cr2;
	/* What the kernel needs of GS base, CR0 and CR4 (want), and what
	 * was there instead when code stopped or left (seen, = want if
	 * nothing else): the generated code's exit puts them back before
	 * returning to the harness, which uses SSE and GS. */
	struct bench_code_kept { u64 want, seen; } gs, cr0, cr4;
	/* The code's page tables (paging_code_cr3) and the kernel's: a trap
	 * taken on the code's is the code's, and an unwind returns on the
	 * kernel's. */
	u64 code_cr3, kernel_cr3;
	/* EFER as the code left it when the generated code's exit put the
	 * kernel's back (0: it had not changed it). */
	u64 efer_seen;
	/* the code's layout, for naming an offset */
	/* [0] and [1]: n and 2n copies; [2]: the one-time init */
	u64 fn[3], body[3], body_end[3], init[3], init_end[3], late[3], late_end[3];
	u64 len;
};
extern struct bench_code_run bench_run_state;
extern u64 bench_code_area;	/* the generated code's pages, 0 until the first request */

/* The CPU state the kernel's own code needs, saved before code runs. */
struct bench_code_cpu {
	u64 cr0, cr4, gs_base, kernel_gs_base, efer;
};

/* trap_set_fault_fixup's: unwinds a CPU exception the code raised, or an
 * INT n it ran, also in a loaded program's function it called, or
 * anywhere while the code's page tables were on (a #DF too: its stack was
 * not writable); false for all else (a real #MC never unwinds). */
bool bench_code_fault_fixup(struct trap_frame *f);
/* The HPET NMI (hpet_nmi_start): stops code that ran past the timeout. */
void bench_code_watchdog(struct trap_frame *f, void *arg);

/* Run fn(arg) with the fix-up and the watchdog armed (the watchdog is
 * started by the caller). Whether it returned or was stopped, CR0, CR4,
 * EFER and both GS bases are then put back to *before before anything else
 * runs, and what was found in their place is stored in *found. */
void bench_code_guarded(void (*fn)(void *), void *arg, const struct bench_code_cpu *before,
			struct bench_code_cpu *found);
void bench_code_cpu_save(struct bench_code_cpu *s);

#endif
