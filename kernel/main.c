/*
 * main.c — from the entry stub to the top layer: take over the CPU, read
 * the boot information and command line, set up memory and the devices,
 * hand over to the entry the apps layer registered (KERNEL_TOP, apps/run.c)
 * and leave with its status.
 */
#include "kernel/kernel.h"
#include "kernel/acpi.h"
#include "kernel/apic.h"
#include "kernel/cmdline.h"
#include "kernel/fb.h"
#include "kernel/mm.h"
#include "kernel/pci.h"
#include "kernel/percpu.h"
#include "kernel/quiet.h"
#include "kernel/smp.h"
#include "kernel/serial.h"
#include "kernel/stream.h"
#include "pmu/pmu.h"
#include "kernel/trap.h"
#include "kernel/uart.h"
#include <uapi/bootinfo.h>

#define PVH_MARK	0x21485650	/* kernel/entry.asm */
#define NT_GNU_BUILD_ID	3

void kmain(void *info, u32 magic, u64 entry_tsc);
void cpu_probe(void);
void cpu_setup(void);
void tsc_init(void);
int pvh_to_boot_info(const void *start_info, struct boot_info *bi, const char **why);

static struct boot_info bi;
const struct boot_info *boot_info = &bi;
u64 boot_tsc_entry;
struct kernel_options kopt;
static char cmdline[BOOT_CMDLINE_MAX];

extern const char __notes_start[], __notes_end[];
extern char boot_stack[], boot_stack_top[];		/* kernel/entry.asm */
extern const struct kernel_top __start_kernel_top[], __stop_kernel_top[];	/* linker.ld */

/* The GNU build id of this kernel, from its own notes (ELF gABI, "Note Section"). */
const u8 *kernel_build_id(u32 *len)
{
	const char *p = __notes_start;

	while (p + 12 <= __notes_end) {
		const u32 *h = (const u32 *)p;
		u32 namesz = h[0], descsz = h[1], type = h[2];
		const u8 *desc = (const u8 *)p + 12 + ALIGN_UP(namesz, 4);

		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + 12, "GNU", 4)) {
			*len = descsz;
			return desc;
		}
		p = (const char *)desc + ALIGN_UP(descsz, 4);
	}
	*len = 0;
	return NULL;
}

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

static const char *take_boot_info(void *info, u32 magic)
{
	const char *why = NULL;

	if (magic == PVH_MARK) {
		pvh_to_boot_info(info, &bi, &why);
		return why;
	}
	if (magic != BOOT_INFO_MAGIC)
		return "entered with an unknown boot protocol (esi is neither PVH nor BOOT_INFO_MAGIC)";
	const struct boot_info *in = info;
	if (in->magic != BOOT_INFO_MAGIC || in->version < 1 || in->size < 64)
		return "boot_info from the loader is malformed";
	/* Append-only ABI: copy what both sides know, the rest stays zero. */
	memcpy(&bi, in, MIN((size_t)in->size, sizeof(bi)));
	bi.cmdline[sizeof(bi.cmdline) - 1] = 0;
	bi.firmware_vendor[sizeof(bi.firmware_vendor) - 1] = 0;
	if (bi.mmap_count > BOOT_MMAP_MAX)
		return "boot_info memory map count is out of range";
	return NULL;
}

static const char *const fb_format_names[] = { "RGB", "BGR", "bitmask", "BltOnly" };

/* The screen console, on the loader's GOP framebuffer (console=fb|both,
 * or by default when there is one). What happened goes into msg, printed
 * after the banner (the first line a host tool looks for). */
static void screen_setup(char *msg, size_t n)
{
	const struct boot_framebuffer *f = &bi.fb;
	const char *why = NULL;
	const char *fmt = f->format < ARRAY_SIZE(fb_format_names) ? fb_format_names[f->format] : "?";

	msg[0] = 0;
	if (kopt.console == CONSOLE_SERIAL && f->base)
		ksnprintf(msg, n, "fb: %ux%u framebuffer left alone (console=serial)\n",
			  f->width, f->height);
	if (kopt.console == CONSOLE_SERIAL || !f->base)
		return;
	if (f->base + (u64)f->pixels_per_line * f->height * 4 > mem_top(&bi))
		why = "it lies outside the kernel's identity map";
	else
		fb_init(f->base, f->width, f->height, f->pixels_per_line, f->format, &why);
	if (kopt.console == CONSOLE_FB && fb_active())
		console_text_to_uart(false);
	if (why)
		ksnprintf(msg, n, "fb: %ux%u %s framebuffer at %#lx not used: %s\n", f->width,
			  f->height, fmt, f->base, why);
	else
		ksnprintf(msg, n, "fb: %ux%u %s, %u pixels per line, at %#lx: screen console %ux%u%s\n",
			  f->width, f->height, fmt, f->pixels_per_line, f->base, fb_cols(), fb_rows(),
			  kopt.console == CONSOLE_FB ? " (console=fb: none on the UART)" : "");
}

/* The framebuffer write-combining rather than uncached: writes go out in
 * bursts (SDM Vol. 3A 13.3). GOP reports only the visible part's size, so
 * the 2 MiB pages to change must lie inside the display controller's
 * memory BAR (PCI class 03h) that holds the framebuffer: no other device's
 * registers may share the type. Before other CPUs start. */
static void screen_write_combining(void)
{
	const struct boot_framebuffer *f = &bi.fb;
	u64 len = ALIGN_UP((u64)f->pixels_per_line * f->height * 4, 2ul << 20);

	if (!fb_active())
		return;
	if (pci_method() == PCI_METHOD_NONE)
		pci_init();
	for (u32 i = 0; i < pci_count(); i++) {
		const struct pci_dev *d = pci_get(i);
		struct pci_bar b;
		if (d->class != PCI_CLASS_DISPLAY)
			continue;
		for (int n = 0; n < 6; n++) {
			if (pci_bar(d, n, &b) || b.io || f->base < b.addr ||
			    f->base + len > b.addr + b.size)
				continue;
			if (paging_map_wc(f->base, len)) {
				kprintf("fb: framebuffer mapped write-combining (%lu MiB of BAR%d "
					"of the display controller)\n", len >> 20, n);
				return;
			}
		}
	}
	kprintf("fb: framebuffer left uncached (no display controller BAR holds whole 2 MiB "
		"pages of it)\n");
}

static void print_help_line(const char *line)
{
	kprintf("%s\n", line);
}

static void print_memory(void)
{
	u64 usable = 0;

	for (u32 i = 0; i < bi.mmap_count; i++)
		if (bi.mmap[i].type == BOOT_MEM_USABLE)
			usable += bi.mmap[i].length;
	kprintf("mem: %lu MiB usable in a %u-entry map, %lu MiB free after boot\n",
		usable >> 20, bi.mmap_count, (pmm_free_pages() * PAGE_SIZE) >> 20);
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

	const char *boot_err = take_boot_info(info, magic);
	cmdline_defaults(&kopt);
	strlcpy(cmdline, bi.cmdline, sizeof(cmdline));
	int cmd_err = boot_err ? 0 : cmdline_parse(cmdline, &kopt, err, sizeof(err));
	char fb_msg[200] = "";
	if (!boot_err)
		screen_setup(fb_msg, sizeof(fb_msg));

	kprintf("\nbareperf: booted via %s", bi.source == BOOT_SOURCE_UEFI ? "UEFI" :
		bi.source == BOOT_SOURCE_PVH ? "PVH direct boot" : "?");
	if (bi.firmware_vendor[0])
		kprintf(" (firmware: %s)", bi.firmware_vendor);
	kprintf(", ");
	print_build_id();
	kprintf("\n%s", fb_msg);
	serial_setup_early();
	if (boot_err) {
		kprintf("bareperf: cannot start: %s\n", boot_err);
		machine_exit(EXIT_PANIC);
	}
	kprintf("cmdline: \"%s\"\n", bi.cmdline);

	cpu_setup();
	pmm_init(&bi);
	paging_init(&bi);
	percpu_alloc_stacks(smp_boot_cpu());
	smp_boot_cpu()->stack_lo = (u64)boot_stack;
	smp_boot_cpu()->stack_hi = (u64)boot_stack_top;
	acpi_init();
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
	hpet_init();
	tsc_init();
	print_tsc();
	apic_init();
	ioapic_init();
	pmu_init();
	start_cpus();
	quiet_setup();
	enum stream_transport st;
	stream_parse(kopt.stream, &st);		/* the option parser checked it */
	stream_init(st, kopt.pace);
	if (bi.source == BOOT_SOURCE_UEFI && bi.loader_tsc && bi.exit_boot_tsc)
		kprintf("boot: loader start to ExitBootServices: %lu TSC ticks (%lu us)\n",
			bi.exit_boot_tsc - bi.loader_tsc,
			tsc_to_ns(bi.exit_boot_tsc - bi.loader_tsc) / 1000);

	if (__stop_kernel_top - __start_kernel_top != 1)
		panic("kmain: %ld top-level entries registered (KERNEL_TOP), want 1",
		      (long)(__stop_kernel_top - __start_kernel_top));
	machine_exit(__start_kernel_top->main());
}
