/*
 * unwind.h — a way back out of code that faulted or ran too long: the
 * setjmp-like point a fault fix-up (kernel/trap.h, trap_set_fault_fixup)
 * or an NMI handler returns through, by rewriting the interrupted trap
 * frame so that its iretq lands at the point instead. apps/bench_code.c
 * runs the host's code under one.
 */
#ifndef BAREPERF_KERNEL_UNWIND_H
#define BAREPERF_KERNEL_UNWIND_H

#include "kernel/x86.h"
#include "kernel/trap.h"

/* Where an unwind lands: the registers a call preserves, as at save. */
struct unwind_point {
	u64 rbx, rbp, r12, r13, r14, r15, rsp, rip, rflags;
};

/* setjmp-like: 0 when saving; 1 when an unwind to p lands here. The
 * function that saved p must not have returned by then. */
int unwind_save(struct unwind_point *p) __attribute__((returns_twice));

/* Rewrite the trap frame f so that returning from the trap resumes at p
 * (unwind_save returning 1), on a stack below p's saved frame: never on
 * the interrupted code's own stack, which it may have broken. */
void unwind_frame(struct trap_frame *f, const struct unwind_point *p);

#endif
