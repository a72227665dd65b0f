/*
 * bench_state.h — the system state a snippet of RUN_CODE (apps/bench_code.c)
 * can change in ring 0, saved before it runs and checked after.
 */
#pragma once
#include "kernel/x86.h"
#include "kernel/percpu.h"
#include "pmu/pmu.h"

#define BENCH_STATE_NLVT 8	/* the APIC registers saved (apps/bench_state.c) */
#define BENCH_STATE_NMSR 11	/* the plain MSRs saved (apps/bench_state.c) */

/*
 * System state a snippet can change in ring 0 and later snippets would
 * run under. Saved before a request's code runs and compared after; what
 * changed is named with both values in the reply and put back:
 *
 *  - at once, before any harness code runs (bench_state_early): the debug
 *    registers (DR7 off first, so no breakpoint fires in the harness), CR0,
 *    CR4, CR3, EFER and XCR0, then the extended state: the snippet starts
 *    from the x87/SSE/AVX init state with MXCSR and the x87 control word at
 *    their defaults (bench_state_enter), what it leaves (MXCSR, the x87
 *    control word, dirty upper halves of the YMM registers) is named and
 *    the harness's own extended state is loaded back;
 *  - then (bench_state_check): IA32_APIC_BASE, the MSRs of msrs[] where the
 *    CPU has them (PAT, MTRRdefType, SPEC_CTRL, MISC_ENABLE, 0x1A4,
 *    TSC_ADJUST, FS_BASE, STAR, LSTAR, CSTAR, SFMASK), GDTR, IDTR, the TSS's
 *    stack pointers (RSP0-2, IST1-7), the local APIC's TPR, SVR and LVTs;
 *  - counters: only whether each counts and DEBUGCTL (struct pmu_state,
 *    pmu/pmu.h), because the harness itself programs and stops the
 *    counters in between.
 *
 * What cannot be put back (QEMU's local APIC, once disabled, stays off) is
 * named apart: it stops code running in this boot.
 */
struct sys_state {
	u64 cr0, cr3, cr4, efer, xcr0;
	u64 dr[4], dr6, dr7;
	u64 apic_base;
	u64 msr[BENCH_STATE_NMSR];
	u32 msr_have;			/* bit i: msrs[i] read without a #GP */
	bool has_apic_base;
	struct desc_ptr gdt, idt;
	struct tss tss;
	u32 lvt[BENCH_STATE_NLVT];
	u32 nlvt;			/* entries this APIC has (thermal from MaxLVT 5) */
	struct pmu_state pmu;
};

void bench_state_save(struct sys_state *s);
/* The harness's extended state saved, the snippet's defined start loaded. */
void bench_state_enter(void);
/* Breakpoints off (DR7) and DR6 reset, once per run: the first thing the
 * harness does when it takes control back (the fault fix-up, the
 * watchdog, the return). */
void bench_state_debug_off(void);
/* Put back, at once, what the harness's own code runs on; describe it
 * into buf (emptied first). */
void bench_state_early(const struct sys_state *s, char *buf, size_t n);
/* Compare the rest with s; put back and describe (appended to buf) what
 * the code changed, and into lost (empty when none) what could not be
 * put back. */
void bench_state_check(const struct sys_state *s, char *buf, size_t n, char *lost, size_t nlost);
