/* mm.h — boot-time memory set-up, private to kernel/. */
#ifndef BAREPERF_KERNEL_MM_H
#define BAREPERF_KERNEL_MM_H

#include "kernel/x86.h"
#include <uapi/bootinfo.h>

void pmm_init(const struct boot_info *bi);
void paging_init(const struct boot_info *bi);
/* Lowest page-aligned base of RAM used for page tables etc. */
u64 mem_top(const struct boot_info *bi);

extern char __kernel_start[], __kernel_end[];
extern char __text_start[], __text_end[];
extern char __rodata_start[], __rodata_end[];
extern char __data_start[], __bss_start[], __bss_end[];

#endif
