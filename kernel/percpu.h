/*
 * percpu.h — per-CPU data, reached through GS.
 *
 * GS base points at the CPU's struct percpu, whose first field points at
 * itself, so this_cpu() is one load from %gs:0 and needs no APIC-ID scan.
 * The kernel runs at CPL 0 only, so GS is set once per CPU and never swapped.
 */
#ifndef BAREPERF_KERNEL_PERCPU_H
#define BAREPERF_KERNEL_PERCPU_H

#include <stddef.h>
#include "kernel/x86.h"

/* 64-bit TSS (SDM Vol. 3A 8.7). */
struct tss {
	u32 reserved0;
	u64 rsp[3];
	u64 reserved1;
	u64 ist[7];
	u64 reserved2;
	u16 reserved3;
	u16 iomap_base;
} __attribute__((packed));
_Static_assert(sizeof(struct tss) == 104, "TSS layout");

/* IST slots (1-based in the IDT gate). */
enum { IST_NMI = 1, IST_DF = 2, IST_MC = 3, IST_DB = 4, IST_COUNT = 4 };
#define IST_STACK_PAGES 4

/* GDT selectors. */
#define SEL_KCODE	0x08
#define SEL_KDATA	0x10
#define SEL_TSS		0x18
#define GDT_ENTRIES	5		/* null, code, data, TSS (two slots) */

struct percpu {
	struct percpu *self;		/* must stay at offset 0: %gs:0 */
	u32 cpu;			/* dense index, 0 = boot CPU */
	u32 apic_id;
	u64 nmi_count;			/* NMIs taken */
	u64 nmi_unclaimed;		/* NMIs no handler claimed */
	u32 in_fatal;			/* a fatal exception is being reported */
	u32 nmi_depth;			/* > 0 while an NMI handler runs */
	u64 stack_lo, stack_hi;		/* the CPU's main stack, for callchains */
	/* smp_call() mailbox: the caller fills arg, then publishes fn. */
	void (*call_fn)(void *);
	void *call_arg;
	u64 call_seq, call_done;
	u64 gdt[GDT_ENTRIES] __attribute__((aligned(16)));
	struct tss tss __attribute__((aligned(16)));
};
_Static_assert(offsetof(struct percpu, self) == 0, "this_cpu() reads %gs:0");

static inline struct percpu *this_cpu(void)
{
	struct percpu *p;
	asm volatile("mov %%gs:0, %0" : "=r"(p));
	return p;
}

/* Load this CPU's GDT, TSS and GS base. */
void percpu_init(struct percpu *pc, u32 cpu, u32 apic_id);
/* Give the CPU guarded IST stacks (needs paging_init). */
void percpu_alloc_stacks(struct percpu *pc);

#endif
