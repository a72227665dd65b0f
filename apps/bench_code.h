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
 *	init code, [drain], late-init code, [drain], NOPs up to the alignment
 *	  offset
 *	the body n times (2n times; 0 times in basic mode), in a loop
 *	  `dec r15; jnz` when the loop count is not 0, [drain]
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
 * is new, zeroed, when its size changes). After each request, what the code may have changed for the
 * snippets after it is compared with its value before: CR0, CR3, CR4,
 * EFER, GDTR, IDTR, the local APIC's TPR, SVR and LVT entries and, with a
 * PMU, which counters count (event select EN bits, the fixed counters'
 * enables, the global enables) and IA32_DEBUGCTL. A change is put back and
 * the reply names it with both values. The kernel's code and read-only
 * data are hashed before the first request and after each: a write there
 * cannot be undone, so the reply is an ERROR "stopped: ..." and every
 * later request gets it too (the host reboots QEMU; a real machine needs
 * a reset). Writes to other kernel memory are not detected.
 *
 * A CPU exception while the code runs (a fault in it, or anything it
 * breaks in the harness) unwinds to the request (the fault fix-up in
 * kernel/trap.c returning through an unwind point, kernel/unwind.h),
 * and so does the watchdog, an HPET NMI that stops code running longer
 * than the timeout: the reply is an ERROR naming the exception and the
 * offset in the snippet, and the next request runs.
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
