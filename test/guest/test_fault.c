/*
 * test_fault — provoke a CPU exception on purpose. The runner checks that
 * the kernel prints the exception, the registers and a symbolized call
 * trace through these functions, and exits with EXIT_PANIC.
 *
 *   -- null     write through a NULL pointer (#PF, page 0 is unmapped)
 *   -- ud       ud2 (#UD)
 *   -- gp       load from a non-canonical address (#GP)
 *   -- div      divide by zero (#DE)
 *   -- stack    unbounded recursion into the boot stack's guard page (#DF)
 *   -- panic    a kernel panic()
 *   -- irq      ud2 in an interrupt's handler (#UD), the interrupt taken at
 *               the first instruction of irq_landing: the call trace goes
 *               on through irq_landing+0x0 to its callers
 *   -- r12      a handler that writes R12 into its trap frame, which the
 *               return does not reload (kernel/trap.h): trap.c's check
 *               panics
 */
#include "kernel/kernel.h"
#include "apps/app.h"
#include "kernel/platform/apic.h"
#include "kernel/trap.h"

#define VEC_FAULT_IRQ	0x70
#define VEC_FAULT_R12	0x71

static volatile int sink;
static volatile int depth_limit = 1 << 30;	/* never reached: the guard page is */

/* Each fault is one explicit instruction: the compiler may legally drop or
 * rewrite a C-level NULL store or division by zero. */
static void __attribute__((noinline)) fault_null(void)
{
	asm volatile("movl $1, (%0)" : : "r"(0ul) : "memory");
}

static void __attribute__((noinline)) fault_ud(void)
{
	asm volatile("ud2");
}

static void __attribute__((noinline)) fault_gp(void)
{
	asm volatile("movl (%0), %%eax" : : "r"(0x8000000000000000ul) : "rax", "memory");
}

static void __attribute__((noinline)) fault_div(void)
{
	asm volatile("xorl %%ecx, %%ecx; movl $1, %%eax; xorl %%edx, %%edx; divl %%ecx"
		     : : : "rax", "rcx", "rdx");
}

static int __attribute__((noinline)) fault_stack(int depth)
{
	volatile char pad[512];

	pad[0] = depth;
	if (depth == depth_limit)
		return 0;
	return fault_stack(depth + 1) + pad[0];
}

static void fault_in_handler(struct trap_frame *f)
{
	(void)f;
	asm volatile("ud2");
}

/* Where the interrupt lands: before it has made its own frame. */
__attribute__((naked, noinline)) static void irq_landing(void)
{
	asm volatile("nop\n"
		     "ret\n");
}

/* The interrupt is raised with interrupts off; sti lets one instruction
 * more run, the call, so that it is taken at irq_landing's first byte. */
static void __attribute__((noinline)) fault_irq(void)
{
	trap_set_handler(VEC_FAULT_IRQ, fault_in_handler);
	irq_disable();
	apic_send_ipi(apic_id(), APIC_DM_FIXED | VEC_FAULT_IRQ);
	asm volatile("sti\n"
		     "call %P0\n" : : "i"(irq_landing) : "memory");
}

static void write_r12(struct trap_frame *f)
{
	f->r12 = ~f->r12;
}

static void __attribute__((noinline)) fault_r12(void)
{
	trap_set_handler(VEC_FAULT_R12, write_r12);
	asm volatile("int %0" : : "i"(VEC_FAULT_R12) : "memory");
}

static int test_fault_main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "null";

	kprintf("test_fault: provoking '%s'\n", what);
	if (!strcmp(what, "null"))
		fault_null();
	else if (!strcmp(what, "ud"))
		fault_ud();
	else if (!strcmp(what, "gp"))
		fault_gp();
	else if (!strcmp(what, "div"))
		fault_div();
	else if (!strcmp(what, "stack"))
		sink = fault_stack(0);
	else if (!strcmp(what, "irq"))
		fault_irq();
	else if (!strcmp(what, "r12"))
		fault_r12();
	else if (!strcmp(what, "panic"))
		panic("test_fault: deliberate panic (%s)", what);
	else {
		kprintf("test_fault: unknown fault '%s'\n", what);
		return EXIT_USAGE;
	}
	kprintf("test_fault: '%s' did not fault\n", what);
	return EXIT_FAIL;
}

APP(test_fault, "guest test: deliberate CPU exceptions", test_fault_main, APP_TEST);
