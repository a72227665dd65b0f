/*
 * debug_exit.c — leaving a VM with the exit code: QEMU's isa-debug-exit
 * device (-device isa-debug-exit,iobase=0xf4,iosize=0x04), which makes
 * QEMU exit with (code << 1) | 1. Only where a hypervisor runs us: on bare
 * hardware port 0xf4 may belong to something else.
 */
#include "kernel/kernel.h"

#define DEBUG_EXIT_PORT		0xf4
/* The write asks QEMU to shut down (QEMU 9.1 on: a request its main loop
 * serves, not exit() in the write), so this CPU runs on for a while, on a
 * busy host for tens of ms. Wait this long before machine_exit goes on to
 * say the machine halted: a line begun sooner is cut by the exit, and a
 * cut line would be taken for the kernel's last words. */
#define DEBUG_EXIT_WAIT_MS	3000

static void debug_exit(enum exit_code code)
{
	if (!cpu_features.hypervisor)
		return;
	u64 t0 = rdtsc_ordered();
	outl(DEBUG_EXIT_PORT, code);
	while (!tsc_since_ns(t0, DEBUG_EXIT_WAIT_MS * 1000000ul))
		cpu_relax();
}
EXIT_STEP(EXIT_LEAVE, debug_exit);
