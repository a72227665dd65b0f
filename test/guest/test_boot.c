/*
 * test_boot — what the foundation promises, checked from inside the guest:
 * the boot path handed over what it should, memory and paging are set up
 * as documented, vector state is usable, symbols resolve.
 *
 * Arguments (after -- on the command line):
 *   source=pvh|uefi   expected boot path
 *   mem=MiB           RAM QEMU was given (-m), to check the memory map
 *   marker=WORD       must arrive (the UEFI test sets it in bareperf.cfg)
 */
#include "kernel/kernel.h"
#include "kernel/percpu.h"
#include "apps/app.h"
#include "kernel/dev/pci.h"
#include "test/guest/report.h"
#include <uapi/bootinfo.h>

static int __attribute__((noinline)) known_function(int x)
{
	return x * 3 + 1;
}

/* The ECAM window (256 MiB, large pages): va_mapped walks once a mapping,
 * not once a 4 KiB page (65536 walks). The fastest of three. */
static void check_big_range(void)
{
	u64 base = pci_ecam_base(), len = 256ul << 20, best = ~0ul;
	bool ok = true;

	if (!base) {
		report_skip("no ECAM window");
		return;
	}
	for (int i = 0; i < 3; i++) {
		u64 t0 = rdtsc_ordered();
		ok &= va_mapped(base, len);
		best = MIN(best, rdtsc_ordered() - t0);
	}
	u64 us = tsc_to_ns(best) / 1000;
	report(ok && us < 200, "va_mapped of the 256 MiB ECAM window at %#lx: %lu us", base, us);
}

static void check_boot_info(int argc, char **argv)
{
	const char *src = test_arg(argc, argv, "source");
	u32 want = src && !strcmp(src, "uefi") ? BOOT_SOURCE_UEFI : BOOT_SOURCE_PVH;

	report(boot_info->source == want, "boot source is %s (boot_info.source = %u)",
	       src ? src : "pvh", boot_info->source);
	report(boot_info->version == BOOT_INFO_VERSION, "boot_info version %u",
	       boot_info->version);

	const char *mem = test_arg(argc, argv, "mem");
	u64 usable = 0, mib = 0;
	for (u32 i = 0; i < boot_info->mmap_count; i++)
		if (boot_info->mmap[i].type == BOOT_MEM_USABLE)
			usable += boot_info->mmap[i].length;
	if (mem && !parse_u64(mem, &mib))
		/* Firmware keeps some RAM for itself; it must not keep more than 64 MiB. */
		report(usable <= (mib << 20) && usable + (64ul << 20) >= (mib << 20),
		       "memory map: %lu MiB usable of %lu MiB", usable >> 20, mib);
	else
		report(usable >= (16ul << 20), "memory map: %lu MiB usable", usable >> 20);

	const char *marker = test_arg(argc, argv, "marker");
	if (marker)
		report(!strcmp(marker, "from-cfg"), "command line carried marker=%s", marker);

	if (want == BOOT_SOURCE_UEFI) {
		const char *rsdp = (const char *)boot_info->acpi_rsdp;
		u8 sum = 0;
		if (rsdp)
			for (int i = 0; i < 20; i++)	/* ACPI 6.5 5.2.5.3: v1 checksum */
				sum += (u8)rsdp[i];
		report(rsdp && !memcmp(rsdp, "RSD PTR ", 8) && sum == 0,
		       "ACPI RSDP handed over at %#lx with a valid checksum", (u64)rsdp);
		report(boot_info->firmware_vendor[0] != 0, "firmware vendor \"%s\"",
		       boot_info->firmware_vendor);
		report(boot_info->kernel_phys && !(boot_info->kernel_phys & 0xfff),
		       "kernel loaded at firmware-given phys %#lx", boot_info->kernel_phys);
	}
}

/* The tables code run on purpose runs on (kernel/paging.c,
 * paging_code_cr3): what the kernel writes is read-only there, but for
 * the code's own pages, the IST stacks and MMIO; what is mapped after
 * they are built reaches them too. */
static u64 code_tables_probe;

static void check_code_tables(void)
{
	u64 cr3 = paging_code_cr3(), page = pmm_alloc(1);
	u64 stack_before = vmalloc_stack(1), code_before = vmalloc_code(1);

	report(cr3 && cr3 != read_cr3() && paging_code_cr3() == cr3,
	       "the code's page tables: built once, at %#lx (the kernel's at %#lx)", cr3, read_cr3());
	report(paging_code_readonly((u64)&code_tables_probe), "kernel data: read-only to code");
	report(!paging_code_readonly((u64)&known_function), "kernel text: read-only to both");
	report(paging_code_readonly(stack_before - 8), "a kernel stack: read-only to code");
	report(paging_code_readonly(page) && paging_code_readonly(read_cr3()),
	       "RAM by its physical address (a page, the PML4): read-only to code");
	report(!paging_code_readonly(code_before) && !paging_code_readonly(this_cpu()->tss.ist[0] - 8),
	       "the code's pages and an IST stack: writable to code");
	report(!paging_code_readonly(0xfee00000), "the local APIC's MMIO: writable to code");
	u64 stack_after = vmalloc_stack(1), code_after = vmalloc_code(1);
	report(paging_code_readonly(stack_after - 8) && !paging_code_readonly(code_after) &&
	       va_mapped(code_after, PAGE_SIZE),
	       "mapped after they were built: a stack read-only, the code's pages writable");
	pmm_free(page, 1);
}

static void check_memory(void)
{
	size_t before = pmm_free_pages();
	u64 one = pmm_alloc(1), run = pmm_alloc(16);
	bool zero = true;

	for (u64 *p = (u64 *)run; p < (u64 *)(run + 16 * PAGE_SIZE); p++)
		zero &= *p == 0;
	report(one && run && !(run & 0xfff) && zero, "pmm: 1 page at %#lx, 16 zeroed pages at %#lx",
	       one, run);
	memset((void *)run, 0xa5, 16 * PAGE_SIZE);
	report(pmm_free_pages() == before - 17, "pmm: free count drops by 17");
	pmm_free(one, 1);
	pmm_free(run, 16);
	report(pmm_free_pages() == before, "pmm: free count restored after free");
	report(pmm_alloc(1ul << 40) == 0, "pmm: an impossible allocation fails cleanly");

	report(!va_mapped(0, 1), "page 0 is unmapped (NULL faults)");
	report(va_mapped((u64)&known_function, 1), "kernel text is mapped");
	report(read_cr0() & CR0_WP, "CR0.WP set: kernel cannot write read-only pages");
	if (cpu_features.nx)
		report(rdmsr(MSR_IA32_EFER) & EFER_NXE, "EFER.NXE set");
	else
		report_skip("CPU has no NX");
	u64 stack = vmalloc_stack(2);
	report(stack && va_mapped(stack - 2 * PAGE_SIZE, 2 * PAGE_SIZE) &&
	       !va_mapped(stack - 3 * PAGE_SIZE, 1), "vmalloc_stack: 2 pages with a guard page below");
	check_big_range();
	check_code_tables();
}

static void check_cpu(void)
{
	volatile double x = 1.5, y = 2.25;	/* -msse2: uses XMM registers */

	report(x * y == 3.375, "SSE arithmetic works (CR4.OSFXSR)");
	report(tsc_hz > 0, "TSC frequency known: %lu Hz (%s)", tsc_hz, tsc_hz_source);
}

static void check_symbols(void)
{
	u64 off = ~0ul, size = 0;
	const char *name = ksym_lookup((u64)&known_function + 1, &off, &size);

	report(name && !strcmp(name, "known_function") && off == 1 && size > 1,
	       "ksym_lookup resolves known_function+1 (got %s+%#lx)", name ? name : "?", off);
	report(ksym_address("kmain") != 0, "ksym_address finds kmain");
	report(known_function(2) == 7, "known_function is callable");
}

static void check_printf(void)
{
	char buf[64];
	int n = ksnprintf(buf, sizeof(buf), "%05d|%-4s|%#x|%lu", 42, "ab", 255, 1ul << 40);

	report(n == 29 && !strcmp(buf, "00042|ab  |0xff|1099511627776"),
	       "ksnprintf formats in the kernel (\"%s\")", buf);
}

static int test_boot_main(int argc, char **argv)
{
	check_boot_info(argc, argv);
	check_memory();
	check_cpu();
	check_symbols();
	check_printf();
	return report_summary();
}

APP(test_boot, "guest test: boot hand-over, memory, paging, symbols", test_boot_main, APP_TEST);
