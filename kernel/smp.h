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

#endif
