/*
 * pgtable.c — reading the kernel's page tables: is an address mapped?
 * kernel/paging.c builds the tables; this walk calls nothing, so the fault
 * report, the backtrace and the device probes may ask it at any time, in
 * an NMI too.
 */
#include "kernel/kernel.h"
#include "kernel/pgtable.h"

u64 *kernel_pml4;
u64 *code_pml4;

u64 pte_leaf(const u64 *pml4, u64 va)
{
	const u64 *t = pml4;

	for (int level = 3; t; level--) {
		u64 e = t[(va >> (12 + 9 * level)) & 511];
		if (!(e & PTE_P) || level == 0 || (e & PTE_PS))
			return e & PTE_P ? e : 0;
		t = (const u64 *)(e & PTE_ADDR);
	}
	return 0;
}

bool va_mapped(u64 va, size_t len)
{
	if (!kernel_pml4)	/* before paging_init: nothing is known to be safe */
		return false;
	/* One walk per mapping, not per 4 KiB: a 2 MiB or 1 GiB page answers
	 * for all of itself (the ECAM window is 256 MiB). */
	for (u64 p = ALIGN_DOWN(va, PAGE_SIZE), next; p < va + len; p = next) {
		u64 *t = kernel_pml4;
		for (int level = 3; ; level--) {
			u64 e = t[(p >> (12 + 9 * level)) & 511];
			if (!(e & PTE_P))
				return false;
			if (level == 0 || (e & PTE_PS)) {
				u64 size = 1ul << (12 + 9 * level);
				next = ALIGN_DOWN(p, size) + size;
				break;
			}
			t = (u64 *)(e & PTE_ADDR);
		}
		if (next < p)
			break;		/* the top of the address space */
	}
	return true;
}
