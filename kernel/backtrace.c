/*
 * backtrace.c — symbolized frame-pointer backtraces, for the fault report,
 * panics and the stop of the other CPUs, and a frameless leaf's caller for
 * the sampling NMI. Every read of the stack is checked against the page
 * tables first (va_mapped), so a corrupt frame ends the walk, not the
 * report. A trap's entry links the interrupted code's frame into the
 * chain (kernel/isr.asm), so a backtrace from inside a handler goes on
 * through the function the trap hit.
 */
#include "kernel/kernel.h"
#include "kernel/trap.h"

#define BACKTRACE_MAX	32

static void print_frame(u64 pc, bool is_return, unsigned repeat)
{
	u64 off, size;
	/* A return address may lie just past a noreturn call at the very end
	 * of the caller: look up pc - 1, which is inside the call. */
	const char *name = ksym_lookup(is_return ? pc - 1 : pc, &off, &size);

	if (is_return)
		off++;
	if (name)
		kprintf("  [<%016lx>] %s+0x%lx/0x%lx", pc, name, off, size);
	else
		kprintf("  [<%016lx>] ?", pc);
	if (repeat > 1)
		kprintf("  (x%u)", repeat);
	kprintf("\n");
}

/*
 * GCC 12 gives leaf functions no frame even with -mno-omit-leaf-frame-pointer,
 * so a fault in a leaf would hide the leaf's caller. If the word at the top
 * of the stack is a return address whose preceding instruction is a direct
 * call (E8 rel32) to the function holding rip, it is that caller.
 */
u64 leaf_return_address(u64 rip, u64 rsp)
{
	if (rsp & 7 || !va_mapped(rsp, 8))
		return 0;
	return leaf_return_of(rip, *(u64 *)rsp);
}

/* The kernel's text, or code with a symbol (a loaded program's). */
static bool is_text(u64 pc)
{
	return (pc >= (u64)__text_start && pc < (u64)__text_end) || ksym_lookup(pc, NULL, NULL);
}

#define PUSH_RBP	0x55
#define RET		0xc3
#define PROLOGUE_MAX	64	/* bytes from a function's push %rbp to its mov %rsp, %rbp */

/*
 * An interrupt that hits a function before its frame is set up, or after
 * it is taken down, finds RBP still (or again) its caller's frame: a walk
 * from RBP goes from the function to its caller's caller, and the caller
 * is missed. Its return address is then on the stack:
 *   at the push %rbp (the first instruction, or a shrink-wrapped prologue's)
 *   and at the ret: sp[0];
 *   after the push, before the mov %rsp, %rbp (GCC schedules other
 *   instructions between them): sp[1], above the pushed RBP, which is
 *   then RBP itself (once the frame is set up RBP points at that slot).
 * Otherwise, a frameless leaf called directly (leaf_return_of). The
 * instruction is read only in the kernel's text or a program's.
 */
u64 frameless_return_of(u64 rip, const u64 *sp, u64 rbp)
{
	const u8 *ip = (const u8 *)rip;
	u64 off, ret;

	if (!is_text(rip))
		return 0;
	if (*ip == PUSH_RBP || *ip == RET)
		ret = sp[0];
	else if (sp[0] == rbp && ksym_lookup(rip, &off, NULL) && off <= PROLOGUE_MAX &&
		 *(ip - off) == PUSH_RBP)
		ret = sp[1];
	else
		return leaf_return_of(rip, sp[0]);
	return ret != rip && is_text(ret) ? ret : 0;
}

/* The sampling NMI's path: the cheap tests first, then the one symbol
 * lookup (the function holding rip starts at the call's target, which is
 * then a symbol's start itself). */
u64 leaf_return_of(u64 rip, u64 ret)
{
	u64 func_off;

	if (ret < (u64)__text_start + 5 || ret >= (u64)__text_end)
		return 0;
	if (*(u8 *)(ret - 5) != 0xe8)
		return 0;
	u64 target = ret + (s64)*(s32 *)(ret - 4);
	if (target > rip || !ksym_lookup(rip, &func_off, NULL))
		return 0;
	return target == rip - func_off ? ret : 0;
}

void backtrace_print(u64 rip, u64 rbp, u64 leaf_ret)
{
	u64 pc = rip;
	bool is_return = false;
	unsigned repeat = 1, depth;

	if (leaf_ret) {
		print_frame(rip, false, 1);
		pc = leaf_ret;
		is_return = true;
	}

	for (depth = 0; depth < BACKTRACE_MAX; depth++) {
		/* Frame: [rbp] = caller's rbp, [rbp + 8] = return address. Stop at
		 * the outermost frame (rbp = 0) or anything that does not look
		 * like a frame on a mapped kernel stack. */
		u64 next_pc = 0, next = 0, next_leaf = 0;
		bool next_is_return = true;
		if (rbp && !(rbp & 7) && va_mapped(rbp, 16)) {
			next = ((u64 *)rbp)[0];
			next_pc = ((u64 *)rbp)[1];
			/* Frames go up the stack; a return address outside the
			 * kernel's text and programs' (the AP trampoline) ends
			 * the walk. */
			if ((next && next <= rbp) || !is_text(next_pc))
				next_pc = 0;
			/* A trap's entry frame, with isr_common's return
			 * address just beneath it and the trap frame above,
			 * holds the RIP the trap interrupted: an address to
			 * print as it is, perhaps in a leaf, a prologue or at
			 * a ret, whose caller is then on the interrupted stack. */
			next_is_return = !va_mapped(rbp - 8, 8) ||
					 ((u64 *)rbp)[-1] != (u64)isr_frame_return;
			const struct trap_frame *tf = (const struct trap_frame *)(rbp + 16);
			if (!next_is_return && next_pc && va_mapped((u64)tf, sizeof(*tf)) &&
			    !(tf->rsp & 7) && va_mapped(tf->rsp, 16))
				next_leaf = frameless_return_of(next_pc, (const u64 *)tf->rsp, tf->rbp);
		}
		/* Runs of one frame (deep recursion) print once with a count. */
		if (next_pc == pc && depth + 1 < BACKTRACE_MAX) {
			repeat++;
		} else {
			print_frame(pc, is_return, repeat);
			repeat = 1;
		}
		if (!next_pc)
			return;
		pc = next_pc;
		is_return = next_is_return;
		rbp = next;
		if (next_leaf) {
			print_frame(pc, false, 1);
			pc = next_leaf;
			is_return = true;
		}
	}
	kprintf("  ... (stopped after %d frames)\n", BACKTRACE_MAX);
}
