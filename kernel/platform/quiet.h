/*
 * quiet.h — a quiet machine for microbenchmarks (kernel/platform/quiet.c): turbo
 * off and the hardware prefetchers off, on request (turbo=off,
 * prefetch=off), on every CPU, through MSR probes that survive a #GP or a
 * hypervisor that ignores the write. What was asked, done and refused goes
 * into the run's metadata (bp_record_run_meta.quiet_*) and the boot log.
 *
 * Idle CPUs (those not running the app) wait in hlt with interrupts on
 * (kernel/smp.c), so a sibling's C-state exits are the only wake-ups they
 * cause; the measuring CPU itself never idles while the app runs.
 */
#ifndef BAREPERF_KERNEL_QUIET_H
#define BAREPERF_KERNEL_QUIET_H

#include "kernel/x86.h"

/* Bits of bp_record_run_meta.quiet_asked / quiet_done / quiet_refused. */
#include <uapi/perf_ring.h>

/* After start_cpus: apply kopt's turbo= and prefetch= on every CPU and
 * print one line per setting. Not NMI-safe. */
void quiet_setup(void);
/* What was asked, done on every CPU, and refused on at least one. */
void quiet_state(u32 *asked, u32 *done, u32 *refused);

#endif
