/* smp.h — other CPUs (kernel/smp.c). */
#ifndef BAREPERF_KERNEL_SMP_H
#define BAREPERF_KERNEL_SMP_H

#include "kernel/x86.h"

#define MAX_CPUS	64

struct percpu;

/* Start every CPU in apic_ids (the boot CPU's own id is skipped). */
void smp_init(const u32 *apic_ids, u32 n);
struct percpu *smp_boot_cpu(void);
struct percpu *smp_cpu(u32 i);		/* NULL if no such CPU */
/* CPUs that woke after the boot CPU gave up on them (or with ap_wait_ms=0)
 * and parked in the trampoline, never to run the kernel. */
u32 smp_parked(void);

#endif
