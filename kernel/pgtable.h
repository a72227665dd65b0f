/* pgtable.h — the kernel's page tables (SDM Vol. 3A 4.5, 4-level paging):
 * the entries' bits, and the top table. kernel/paging.c builds them,
 * kernel/pgtable.c reads them. Private to kernel/. */
#ifndef BAREPERF_KERNEL_PGTABLE_H
#define BAREPERF_KERNEL_PGTABLE_H

#include "kernel/x86.h"

#define PTE_P		(1ul << 0)
#define PTE_W		(1ul << 1)
#define PTE_PWT		(1ul << 3)
#define PTE_PCD		(1ul << 4)
#define PTE_A		(1ul << 5)	/* Accessed, set by the CPU (SDM Vol. 3A 4.8) */
#define PTE_D		(1ul << 6)	/* Dirty, in a leaf */
#define PTE_PS		(1ul << 7)
#define PTE_CODE_RW	(1ul << 9)	/* ignored by the CPU: writable in code_pml4 too */
#define PDE_PAT		(1ul << 12)	/* PAT index bit 2 in a 2 MiB entry (SDM Vol. 3A 4.5) */
#define PTE_NX		(1ul << 63)
#define PTE_ADDR	0x000ffffffffff000ul

/* The PML4, set once by paging_init; NULL before it. */
extern u64 *kernel_pml4;
/* The PML4 code run on purpose runs on (paging_code_cr3); NULL until it
 * is built. kernel/isr.asm compares CR3 with it on every entry. */
extern u64 *code_pml4;

/* What code_pml4's tables hold where the kernel's hold the leaf e: the
 * same page, read-only unless the kernel marked it the code's too. */
static inline u64 pte_code_view(u64 e)
{
	return e & PTE_CODE_RW ? e : e & ~PTE_W;
}

/* The leaf entry that maps va in the tables under pml4 (a 4 KiB, 2 MiB
 * or 1 GiB page), or 0 if none; reads only, NMI-safe. */
u64 pte_leaf(const u64 *pml4, u64 va);

#endif
