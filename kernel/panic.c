/*
 * panic.c — leaving the machine: the registered exit steps, and panics
 * (with a backtrace, kernel/backtrace.c).
 */
#include "kernel/kernel.h"
#include "kernel/boot.h"
#include "kernel/percpu.h"

/* Every registered step of one kind (kernel.h: EXIT_STEP), by name. */
static void exit_steps(enum exit_step step, enum exit_code code)
{
	for (const struct exit_step_hook *h = __start_exit_steps; h < __stop_exit_steps; h++)
		if (h->step == step)
			h->fn(code);
}

void panic_stop_others(void)
{
	exit_steps(EXIT_STOP_OTHERS, EXIT_PANIC);
}

void machine_exit(enum exit_code code)
{
	irq_disable();
	exit_steps(EXIT_OUTPUT, code);		/* an exit before the UART was chosen */
	/* The stream's last frame: the host knows it got everything, and the
	 * exit code from the kernel itself, not only from QEMU's status. */
	exit_steps(EXIT_STREAM_END, code);
	exit_steps(EXIT_FLUSH, code);
	exit_steps(EXIT_LEAVE, code);
	/* Bare hardware, or a VM without the exit device: stop here. */
	kprintf("bareperf: halted (exit status %d); reset the machine to run again\n", code);
	exit_steps(EXIT_FLUSH, code);
	for (;;)
		halt();
}

void panic(const char *fmt, ...)
{
	va_list ap;
	struct percpu *pc = this_cpu();

	irq_disable();
	__atomic_store_n(&pc->in_fatal, 1, __ATOMIC_RELAXED);
	kprintf("\nbareperf: PANIC on cpu %u: ", pc->cpu);
	va_start(ap, fmt);
	kvprintf(fmt, ap);
	va_end(ap);
	kprintf("\nCall trace:\n");
	u64 here;
	asm volatile("leaq 0(%%rip), %0" : "=r"(here));
	backtrace_print(here, (u64)__builtin_frame_address(0), 0);
	panic_stop_others();
	machine_exit(EXIT_PANIC);
}
