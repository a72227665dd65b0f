/*
 * pgtable.c — reading the kernel's page tables: is an address mapped?
 * kernel/paging.c builds the tables; this walk calls nothing, so the fault
 * report, the backtrace and the device probes may ask it at any time, in
 * an NMI too.
 */
#include "kernel/kernel.h"
#include "kernel/pgtable.h"

u64 *kernel_pml4;

bool va_mapped(u64 va, size_t len)
{
	if (!kernel_pml4)	/* before paging_init: nothing is known to be safe */
		return false;
	for (u64 p = ALIGN_DOWN(va, PAGE_SIZE); p < va + len; p += PAGE_SIZE) {
		u64 *t = kernel_pml4;
		for (int level = 3; ; level--) {
			u64 e = t[(p >> (12 + 9 * level)) & 511];
			if (!(e & PTE_P))
				return false;
			if (level == 0 || (e & PTE_PS))
				break;
			t = (u64 *)(e & PTE_ADDR);
		}
	}
	return true;
}
