/*
 * hooks.c — running the boot hooks the layers above register
 * (kernel/kernel.h: BOOT_HOOK, CPU_UP_HOOK, KERNEL_MAIN). The descriptors
 * sit in sections of their own, gathered by linker.ld.
 */
#include "kernel/kernel.h"
#include "kernel/boot.h"

void boot_hooks_run(enum boot_stage stage)
{
	for (const struct boot_hook *h = __start_boot_hooks; h < __stop_boot_hooks; h++)
		if (h->stage == stage)
			h->fn();
}

void boot_hooks_cpu_up(u32 cpu)
{
	for (const struct cpu_up_hook *h = __start_cpu_up_hooks; h < __stop_cpu_up_hooks; h++)
		h->fn(cpu);
}

int boot_main(void)
{
	long n = __stop_kernel_main - __start_kernel_main;

	if (n != 1)
		panic("boot: %ld top-level entries registered (KERNEL_MAIN), need exactly one", n);
	return __start_kernel_main->fn();
}
