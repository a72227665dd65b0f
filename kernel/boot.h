/*
 * boot.h — the steps kmain (kernel/main.c) takes to bring the machine up,
 * each defined in the file named. Private to kernel/.
 */
#ifndef BAREPERF_KERNEL_BOOT_H
#define BAREPERF_KERNEL_BOOT_H

#include "kernel/kernel.h"

struct boot_info;

/* kernel/entry.asm jumps here: info and magic as the boot protocol left
 * them in rsi/esi, the TSC read at entry. */
void kmain(void *info, u32 magic, u64 entry_tsc) __attribute__((noreturn));

/* bootinfo.c: fill boot_info from what the loader (magic ==
 * BOOT_INFO_MAGIC) or the PVH start info passed. NULL, or why it cannot
 * be used. */
const char *boot_info_take(void *info, u32 magic);

/* platform/pvh.c: convert Xen's hvm_start_info into bi. 0, or -1 with
 * *why set. */
int pvh_to_boot_info(const void *start_info, struct boot_info *bi, const char **why);

/* cpu.c: read CPUID into cpu_features (first thing, boot CPU); then
 * enable what the kernel uses (SSE, PAT, NX...) on each CPU. */
void cpu_probe(void);
void cpu_setup(void);

/* platform/tsc.c: find the TSC's rate (tsc_hz, tsc_hz_source). The
 * windows it measures over open first, as soon as hpet_init has run. */
bool tsc_window_open(void);
void tsc_init(void);
/* platform/tsc.c: a rate from CPUID checked against the HPET over the boot
 * so far, or the HPET calibration's window closed; call once, at its end. */
void tsc_refine(void);

/* The AP trampoline (kernel/trampoline.asm): its bounds, and the labels
 * of the fields smp.c patches in its copy below 1 MiB. */
extern const char trampoline_start[], trampoline_end[];
extern const char tp_gdt_base[], tp_far32[], tp_far64[], tp_base_imm[];
extern const char tp_cr3[], tp_efer[], tp_stack[], tp_entry[], tp_arg[];
extern const char tp_gdt[], tramp32[], tramp64[];
extern const char tp_idt[], tp_idt_base[], tp_ivt_nmi[], tp_idt_nmi_lo[], tp_idt_nmi_hi[];
extern const char tp_park_esp[], tp_claim_pa[], tp_park_iret32[], tp_park_stack32[];
extern const char tp_parked[];

/* hooks.c: kernel.h's boot hooks, in link order; linker.ld gathers them. */
extern const struct boot_hook __start_boot_hooks[], __stop_boot_hooks[];
extern const struct cpu_up_hook __start_cpu_up_hooks[], __stop_cpu_up_hooks[];
extern const struct kernel_main_hook __start_kernel_main[], __stop_kernel_main[];
/* panic.c: kernel.h's exit steps. */
extern const struct exit_step_hook __start_exit_steps[], __stop_exit_steps[];
void boot_hooks_run(enum boot_stage stage);
void boot_hooks_cpu_up(u32 cpu);
/* The registered top of the stack's entry: its exit code. */
int boot_main(void);

#endif
