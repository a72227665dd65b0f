/*
 * trap.h — the saved state of an interrupted context, and handler hooks.
 */
#ifndef BAREPERF_KERNEL_TRAP_H
#define BAREPERF_KERNEL_TRAP_H

#include <stddef.h>
#include "kernel/x86.h"

/* Layout written by kernel/isr.asm: the GS base and the CR3 the trap
 * came with (put back on return; a handler that resumes kernel code
 * elsewhere sets them to the kernel's; cr3 is 0 unless the trap came on
 * the page tables of code run on purpose, paging_code_cr3), the GPRs
 * pushed in reverse, then the stub's vector and error code, then what the
 * CPU pushed (SDM Vol. 3A 6.14.1). A handler may rewrite the frame to
 * resume elsewhere, but not R12-R15: the return path does not reload them
 * (the C code preserved them; kernel/unwind.c's unwind_to loads its own).
 * trap.c panics where a handler or fix-up wrote them (NMI handlers, on
 * the sampling path, are not checked). */
struct trap_frame {
	u64 gs_base, cr3;
	u64 r15, r14, r13, r12, r11, r10, r9, r8;
	u64 rbp, rdi, rsi, rdx, rcx, rbx, rax;
	u64 vector, error;
	u64 rip, cs, rflags, rsp, ss;
};
_Static_assert(offsetof(struct trap_frame, vector) == 17 * 8, "isr.asm push order");
_Static_assert(sizeof(struct trap_frame) == 24 * 8, "isr.asm frame size");
_Static_assert(offsetof(struct trap_frame, rip) == 19 * 8, "isr.asm TRAP_FRAME_RIP");
/* The return address of isr_common's call to trap_dispatch: the frame
 * above it holds the interrupted RIP and RBP (kernel/isr.asm). */
extern const char isr_frame_return[];

#define VEC_DE	0
#define VEC_DB	1
#define VEC_NMI	2
#define VEC_BP	3
#define VEC_UD	6
#define VEC_DF	8
#define VEC_GP	13
#define VEC_PF	14
#define VEC_MC	18
#define VEC_IRQ_BASE	32

typedef void (*trap_handler_t)(struct trap_frame *f);
/* Install a handler for a vector (exceptions included: it then decides). */
void trap_set_handler(unsigned vector, trap_handler_t h);
/* Where the CPUs' struct percpu live: an entry that finds a GS base not
 * the kernel's checks the one it derives against them (isr.asm). */
struct percpu;
void trap_set_percpu(const struct percpu *base, u32 n);
/* The handler for an interrupt vector (32 and up) no one installed one for:
 * the local APIC's, which counts it and EOIs it (kernel/platform/apic.c).
 * Until it is set, such a vector is ignored. */
void trap_set_stray_handler(trap_handler_t h);

/* Before any handler, for every vector (after the exception table's
 * fix-ups): true if it took the trap (it rewrote the frame to resume
 * elsewhere). It must leave alone what it does not know for its own,
 * NMIs and interrupts included. Up to four, asked in the order set (a
 * second set of one is ignored): apps/bench_code.c's and
 * apps/program.c's, for code run on purpose. */
typedef bool (*trap_fixup_t)(struct trap_frame *f);
void trap_set_fault_fixup(trap_fixup_t fn);
/* Every CPU is up with its GS base set (kernel/main.c, after start_cpus):
 * from now until a fault fix-up is set (code run on purpose may change
 * the GS base), interrupt entry takes the base its GDT gives without
 * reading it. */
void trap_gs_settled(void);
/* "#GP general protection" for 13; "interrupt" above 31. */
const char *trap_name(unsigned vector);

/* kernel/nmi.c. NMI handlers answer "was it mine?": return true if they
 * handled it. Every registered handler runs on each NMI (several sources
 * may fire at once); an NMI none claims is counted in
 * percpu.nmi_unclaimed. nmi_register: 0, or -E_BUSY when all slots are
 * taken; safe from any context. */
typedef bool (*nmi_handler_t)(struct trap_frame *f);
int nmi_register(nmi_handler_t h);
/* trap_dispatch's, for vector 2: run the handlers. Not for an NMI nested
 * inside a handler (percpu.nmi_depth set), which the caller reports as
 * fatal. */
void nmi_dispatch(struct trap_frame *f);

void idt_init(void);		/* builds the shared IDT (boot CPU) */
void idt_load(void);		/* loads it (every CPU) */

/* Print the error code, the registers and the backtrace of a trap. */
void trap_report(const struct trap_frame *f);
/* Print the register dump and backtrace for a fatal trap, then exit. */
void fatal_trap(struct trap_frame *f, const char *why) __attribute__((noreturn));

#endif
