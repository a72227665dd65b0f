/*
 * main.c — from the entry stub to the top of the stack: take over the
 * CPU, read the boot information and command line, set up memory, the
 * platform and the other CPUs (calling the boot hooks the layers above
 * registered, kernel/kernel.h), then hand over to the registered
 * top-level entry (KERNEL_MAIN: apps/run.c) and leave with its status.
 */
#include "kernel/kernel.h"
#include "kernel/console.h"
#include "kernel/boot.h"
#include "kernel/platform/acpi.h"
#include "kernel/platform/apic.h"
#include "kernel/cmdline.h"
#include "kernel/dev/screen.h"
#include "kernel/mm.h"
#include "kernel/percpu.h"
#include "kernel/platform/quiet.h"
#include "kernel/smp.h"
#include "kernel/dev/serial.h"
#include "kernel/stream.h"
#include "kernel/trap.h"
#include "kernel/platform/uart.h"
#include <uapi/bootinfo.h>

static char cmdline[BOOT_CMDLINE_MAX];

static void print_build_id(void)
{
	u32 len;
	const u8 *id = kernel_build_id(&len);

	kprintf("build-id ");
	for (u32 i = 0; i < len; i++)
		kprintf("%02x", id[i]);
	if (!id)
		kprintf("none");
}

static void print_help_line(const char *line)
{
	kprintf("%s\n", line);
}

static void print_memory(void)
{
	u64 usable = 0;

	for (u32 i = 0; i < boot_info->mmap_count; i++)
		if (boot_info->mmap[i].type == BOOT_MEM_USABLE)
			usable += boot_info->mmap[i].length;
	kprintf("mem: %lu MiB usable in a %u-entry map, %lu MiB free after boot\n",
		usable >> 20, boot_info->mmap_count, (pmm_free_pages() * PAGE_SIZE) >> 20);
}

/*
 * What a run's first write to free memory costs (pmm_first_writes). When
 * the host backs the machine's RAM only as it is written, each first
 * write to a region stalls the CPU for as long as the host takes, the
 * HPET's NMIs held off with it: a soft-PMU run that writes fresh memory
 * loses ticks (ten for a 2 ms stall at 4 kHz) that no setting of the
 * kernel's can save. Which regions are fresh depends on what the firmware
 * wrote: OVMF writes other memory than a PVH boot does.
 */
/* Four regions: a stalling host shows in all of them, and each stall is
 * ~2 ms of boot (sixteen added 24 ms to kernel_init_ms under plain QEMU). */
#define FIRST_WRITES		4
#define FIRST_WRITE_SLOW_NS	100000ul	/* a host page fault, not a store */

static void print_first_writes(void)
{
	u64 ns[FIRST_WRITES], slowest = 0;
	u32 n = tsc_hz ? pmm_first_writes(ns, FIRST_WRITES) : 0, slow = 0;

	if (!n)
		return;
	for (u32 i = 0; i < n; i++) {
		ns[i] = tsc_to_ns(ns[i]);
		slow += ns[i] >= FIRST_WRITE_SLOW_NS;
		slowest = MAX(slowest, ns[i]);
	}
	kprintf("mem: first writes to free RAM: %u of %u 2 MiB regions stalled, the slowest "
		"%lu us%s\n", slow, n, slowest / 1000, !slow ? "" :
		" (the host backs RAM as it is first written: a run stalls, NMIs held off, "
		"on each fresh 2 MiB it writes; QEMU: -mem-prealloc)");
}

static void print_cpu(void)
{
	const struct cpu_features *f = &cpu_features;

	kprintf("cpu: %s family %u model %u stepping %u \"%s\"\n",
		f->vendor, f->family, f->model, f->stepping, f->brand);
	kprintf("cpu: features:%s%s%s%s%s%s%s; %s%s\n",
		f->nx ? " nx" : "", f->xsave ? " xsave" : "", f->avx ? " avx" : "",
		f->avx2 ? " avx2" : "", f->x2apic ? " x2apic" : "",
		f->tsc_deadline ? " tsc-deadline" : "", f->invariant_tsc ? " invariant-tsc" : "",
		f->hypervisor ? "hypervisor " : "bare metal", f->hypervisor_id);
}

static void print_tsc(void)
{
	if (tsc_hz)
		kprintf("tsc: %lu.%03lu MHz (%s)\n", tsc_hz / 1000000, tsc_hz / 1000 % 1000,
			tsc_hz_source);
	else
		kprintf("tsc: frequency unknown (no CPUID 0x15/0x16, no PIT); times are in ticks\n");
}

static void start_cpus(void)
{
	u32 ids[MAX_CPUS], n = 0;

	for (u32 i = 0; i < acpi->madt.ncpus && n < MAX_CPUS; i++)
		if (acpi->madt.cpu[i].enabled)
			ids[n++] = acpi->madt.cpu[i].apic_id;
	smp_init(ids, n);
	if (acpi->madt.cpus_enabled > acpi->madt.ncpus)
		kprintf("smp: the MADT lists %u CPUs; bareperf supports %u\n",
			acpi->madt.cpus_enabled, MAX_CPUS);
	kprintf("smp: %u CPU%s online\n", smp_cpus(), smp_cpus() == 1 ? "" : "s");
}

void kmain(void *info, u32 magic, u64 entry_tsc)
{
	char err[256];

	boot_tsc_entry = entry_tsc;
	/* Our own GDT, TSS and IDT first, so any fault from here on is reported. */
	percpu_init(smp_boot_cpu(), 0, 0);
	idt_init();
	cpu_probe();
	/* The control registers before any other code runs: QEMU TCG
	 * translates each block anew after a change of CR0.MP/EM/TS or
	 * CR4.OSFXSR, so code run on both sides of it costs twice. */
	cpu_setup();

	const char *boot_err = boot_info_take(info, magic);
	cmdline_defaults(&kopt);
	strlcpy(cmdline, boot_info->cmdline, sizeof(cmdline));
	int cmd_err = boot_err ? 0 : cmdline_parse(cmdline, &kopt, err, sizeof(err));
	char fb_msg[200] = "";
	if (!boot_err)
		screen_setup(fb_msg, sizeof(fb_msg));

	kprintf("\nbareperf: booted via %s", boot_info->source == BOOT_SOURCE_UEFI ? "UEFI" :
		boot_info->source == BOOT_SOURCE_PVH ? "PVH direct boot" : "?");
	if (boot_info->firmware_vendor[0])
		kprintf(" (firmware: %s)", boot_info->firmware_vendor);
	kprintf(", ");
	print_build_id();
	kprintf("\n%s", fb_msg);
	serial_setup_early();
	if (boot_err) {
		kprintf("bareperf: cannot start: %s\n", boot_err);
		machine_exit(EXIT_PANIC);
	}
	kprintf("cmdline: \"%s\"\n", boot_info->cmdline);

	pmm_init(boot_info);
	paging_init(boot_info);
	percpu_alloc_stacks(smp_boot_cpu());
	smp_boot_cpu()->stack_lo = (u64)boot_stack;
	smp_boot_cpu()->stack_hi = (u64)boot_stack_top;
	acpi_init();
	/* The clocks' calibration windows open as soon as the HPET is known,
	 * before what was found is printed; the work up to tsc_init and
	 * apic_timer_calibrate fills them. */
	hpet_start();
	tsc_window_open();
	acpi_print_summary();
	hpet_report();
	apic_init();
	/* The UART ACPI names is known only now; a bad command line is
	 * reported after this, so it reaches that port too. */
	serial_setup();
	screen_write_combining();
	if (cmd_err) {
		kprintf("bareperf: bad command line: %s\nOptions:\n", err);
		cmdline_help(print_help_line);
		kprintf("  -- ARGS...                   words after -- go to the app\n");
		machine_exit(EXIT_USAGE);
	}
	print_cpu();
	print_memory();
	tsc_init();
	print_tsc();
	print_first_writes();
	apic_timer_calibrate();
	ioapic_init();
	boot_hooks_run(BOOT_PLATFORM);
	start_cpus();
	trap_gs_settled();
	quiet_setup();
	boot_hooks_run(BOOT_SMP);
	tsc_refine();
	enum stream_transport st;
	stream_parse(kopt.stream, &st);		/* the option parser checked it */
	stream_init(st, kopt.pace);
	if (boot_info->source == BOOT_SOURCE_UEFI && boot_info->loader_tsc && boot_info->exit_boot_tsc)
		kprintf("boot: loader start to ExitBootServices: %lu TSC ticks (%lu us)\n",
			boot_info->exit_boot_tsc - boot_info->loader_tsc,
			tsc_to_ns(boot_info->exit_boot_tsc - boot_info->loader_tsc) / 1000);

	machine_exit(boot_main());
}
