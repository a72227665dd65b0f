/* mm.h — boot-time memory set-up, private to kernel/. */
#ifndef BAREPERF_KERNEL_MM_H
#define BAREPERF_KERNEL_MM_H

#include "kernel/x86.h"
#include <uapi/bootinfo.h>

void pmm_init(const struct boot_info *bi);
/* Write once to each of up to max free 2 MiB regions (no page of them in
 * use), spread over free memory, each write's TSC ticks into ticks[];
 * returns how many. Boot CPU. */
u32 pmm_first_writes(u64 *ticks, u32 max);
void paging_init(const struct boot_info *bi);
/* End of the identity map: max(4 GiB, top of the memory map). */
u64 mem_top(const struct boot_info *bi);
/* Make one identity-mapped page below 2 MiB executable and read-only
 * (the AP trampoline), or back to read-write, no-execute. */
void paging_set_exec(u64 pa, bool exec);
/* Map [pa, pa + len), 2 MiB-aligned and inside the identity map, as
 * write-combining (PAT entry 4, set up by cpu_setup): the framebuffer.
 * Call before other CPUs start. Returns false (nothing changed) if the
 * range is not aligned or not mapped. */
bool paging_map_wc(u64 pa, u64 len);

extern char __kernel_start[], __kernel_end[];
extern const char __notes_start[], __notes_end[];
/* kernel/boot_stack.asm: the boot CPU's stack, and the unmapped page below it. */
extern char boot_stack[], boot_stack_top[], boot_stack_guard[];
extern char __rodata_start[], __rodata_end[];
extern char __data_start[], __bss_start[], __bss_end[];

#endif
