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
#define PDE_PAT		(1ul << 12)	/* PAT index bit 2 in a 2 MiB entry (SDM Vol. 3A 4.5) */
#define PTE_NX		(1ul << 63)
#define PTE_ADDR	0x000ffffffffff000ul

/* The PML4, set once by paging_init; NULL before it. */
extern u64 *kernel_pml4;

#endif
