/*
 * bench_code.h — machine code sent by the host (`bareperf bench`, the
 * control channel's RUN_CODE, include/uapi/wire.h), measured with the
 * harness's method (apps/bench.h): nanoBench's interface without a Linux
 * kernel in the way. Only with control=1 code=1: it runs arbitrary code
 * in ring 0, for machines you own.
 *
 * The generated function, placed in pages written first and then remapped
 * read-only executable (W^X kept; paging_code_exec), is
 *
 *	save RBX RBP R12-R15 and RFLAGS on the kernel stack, CLD
 *	R14, RDI, RSI, RSP and RBP = the middle of a memory area of each
 *	  one's own (nanoBench's): 1 MiB each, R14's resizable (RUN_CODE's
 *	  R14_SIZE, bench -R14_size), zeroed when mapped; an unmapped
 *	  guard page below and above each, so an access past an area
 *	  faults and the reply names the area and how far past it is
 *	RAX RBX RCX RDX R8-R13 = 0
 *	R15 = loop count (only with a loop; the body must not change it)
 *	CR3 = the code's page tables (paging_code_cr3)
 *	init code, [drain], late-init code, [drain], NOPs up to the alignment
 *	  offset
 *	the body n times (2n times; 0 times in basic mode), in a loop
 *	  `dec r15; jnz` when the loop count is not 0, [drain]
 *	CR3 = the kernel's
 *	CR4, CR0 and the GS base put back if the code changed them
 *	RSP, RFLAGS and the saved registers restored, ret
 *
 * [drain] (flag DRAIN, bench -df): LFENCE, a long run of 1-byte NOPs,
 * then of 15-byte NOPs, draining the front end's buffers; the same in
 * both versions, so not in the difference. The one-time init code runs
 * once, in a function of its own with the same registers, before the
 * first measurement of a request.
 *
 * The body may use every other general-purpose and vector register, the
 * stack and the areas; the areas are not cleared between snippets (R14's
 * is new, zeroed, when its size changes). The code starts from the init
 * state of x87, SSE and AVX (MXCSR and the x87 control word at their
 * defaults). After each request, what the code may have changed for the
 * snippets after it is compared with its value before (struct sys_state,
 * apps/bench_state.h: the debug and control registers, the GS base and
 * KERNEL_GS_BASE, EFER, XCR0, MXCSR, the x87 control word, dirty upper YMM
 * halves, IA32_APIC_BASE, PAT, MTRRdefType, SPEC_CTRL, MISC_ENABLE, MSR
 * 0x1A4, TSC_ADJUST, FS_BASE, the SYSCALL MSRs, GDTR, IDTR, the TSS's stack
 * pointers, the local APIC's TPR, SVR and LVT entries and, with a PMU,
 * which counters count and IA32_DEBUGCTL). A change is put back and the
 * reply names it with both values; what cannot be put back stops code
 * running in this boot, as below. The kernel's code and read-only
 * data are hashed before the first request and after each: a write there
 * cannot be undone, so the reply is an ERROR "stopped: ..." and every
 * later request gets it too (the host reboots QEMU; a real machine needs
 * a reset). On the code's page tables the kernel's memory is read-only
 * (its image, its stacks, RAM by its physical address: kernel/paging.c),
 * so a stray store there faults and is reported as the code's ("#PF
 * write to kernel memory"); only code that clears CR0.WP or loads a CR3
 * of its own gets past that.
 *
 * A CPU exception the code raises unwinds to the request (the fault
 * fix-up, apps/bench_code_trap.c, returning through an unwind point,
 * kernel/unwind.h),
 * and so does the watchdog, an HPET NMI that stops code running longer
 * than the timeout: the reply is an ERROR naming the exception (or the
 * INT n the code ran, whatever its vector) and the offset in the snippet,
 * and the next request runs. A real #MC, and a fault outside the code's
 * pages and page tables (or a #DF there), are the kernel's to report.
 * The NMI is not masked by CLI; code that breaks its delivery (the IDT,
 * the HPET, the IOAPIC route) or hangs the CPU gets no reply at all, and
 * the host reports the silence in wall time.
 * Runs on the CPU serving the control channel.
 */
#ifndef BAREPERF_APPS_BENCH_CODE_H
#define BAREPERF_APPS_BENCH_CODE_H

#include "kernel/kernel.h"

#define BENCH_CODE_AREA_PAGES	1024	/* 4 MiB for the two versions */
#define BENCH_CODE_REG_PAGES	256	/* 1 MiB: each register's area, R14's default */
#define BENCH_CODE_DRAIN_NOP1	4096	/* the drain: 1-byte NOPs, */
#define BENCH_CODE_DRAIN_NOP15	512	/* then 15-byte NOPs */
#define BENCH_CODE_TIMEOUT_MS	2000

/* Serve one RUN_CODE request (value: WIRE_CODE_* triples); replies with
 * control_reply, ending in OK or ERROR. */
void bench_code_serve(const u8 *v, size_t len);

#endif
