/*
 * bench_state.h — the system state a snippet of RUN_CODE (apps/bench_code.c)
 * can change in ring 0, saved before it runs and checked after.
 */
#pragma once
#include "kernel/x86.h"
#include "pmu/pmu.h"

#define BENCH_STATE_NLVT 8	/* the APIC registers saved (apps/bench_state.c) */

/*
 * System state a snippet can change in ring 0 and later snippets would
 * run under. Saved before a request's code runs and compared after; what
 * changed is named with both values in the reply and put back.
 *
 * Counters: only whether each counts and DEBUGCTL (struct pmu_state,
 * pmu/pmu.h), because the harness itself programs and stops the counters
 * in between.
 */

struct sys_state {
	u64 cr0, cr3, cr4, efer;
	struct desc_ptr gdt, idt;
	u32 lvt[BENCH_STATE_NLVT];
	u32 nlvt;			/* entries this APIC has (thermal from MaxLVT 5) */
	struct pmu_state pmu;
};

void bench_state_save(struct sys_state *s);
/* Compare with s; put back and describe (into buf, empty when nothing
 * changed) what the code changed. */
void bench_state_check(const struct sys_state *s, char *buf, size_t n);
