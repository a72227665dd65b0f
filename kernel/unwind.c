/*
 * unwind.c — the unwind points of kernel/unwind.h: unwind_save stores the
 * callee-saved registers, the return address and RFLAGS; unwind_frame
 * points a trap frame at unwind_to, which the trap's iretq enters with
 * RDI = the point and which reloads them, returning 1 from unwind_save.
 */
#include "kernel/kernel.h"
#include "kernel/unwind.h"

__attribute__((naked)) int unwind_save(struct unwind_point *p __attribute__((unused)))
{
	asm volatile("mov %rbx, 0(%rdi)\n"
		     "mov %rbp, 8(%rdi)\n"
		     "mov %r12, 16(%rdi)\n"
		     "mov %r13, 24(%rdi)\n"
		     "mov %r14, 32(%rdi)\n"
		     "mov %r15, 40(%rdi)\n"
		     "lea 8(%rsp), %rax\n"		/* the caller's RSP after ret */
		     "mov %rax, 48(%rdi)\n"
		     "mov (%rsp), %rax\n"
		     "mov %rax, 56(%rdi)\n"
		     "pushfq\n"
		     "pop %rax\n"
		     "mov %rax, 64(%rdi)\n"
		     "xor %eax, %eax\n"
		     "ret\n");
}

/* Entered by iretq from a rewritten trap frame, RDI = the point. */
__attribute__((naked, noreturn)) static void unwind_to(void)
{
	asm volatile("mov 0(%rdi), %rbx\n"
		     "mov 8(%rdi), %rbp\n"
		     "mov 16(%rdi), %r12\n"
		     "mov 24(%rdi), %r13\n"
		     "mov 32(%rdi), %r14\n"
		     "mov 40(%rdi), %r15\n"
		     "mov 48(%rdi), %rsp\n"
		     "mov $1, %eax\n"
		     "jmp *56(%rdi)\n");
}

void unwind_frame(struct trap_frame *f, const struct unwind_point *p)
{
	f->rdi = (u64)p;
	f->rip = (u64)unwind_to;
	/* Below the saved frame (dead once unwound), never on the code's
	 * own stack, which it may have broken. */
	f->rsp = ALIGN_DOWN(p->rsp - 1024, 16) - 8;
	f->rflags = p->rflags;
}
