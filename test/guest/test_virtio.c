#include "kernel/kernel.h"
#include "kernel/pci.h"
#include "test/guest/report.h"
#include <uapi/bootinfo.h>

static int test_virtio_main(int argc, char **argv)
{
	(void)argc; (void)argv;
	for (u32 i = 0; i < boot_info->mmap_count; i++) kprintf("mmap %#lx-%#lx type %u\n", boot_info->mmap[i].base, boot_info->mmap[i].base + boot_info->mmap[i].length, boot_info->mmap[i].type);
	int n = pci_init();
	report(n > 0, "pci_init found %d", n);
	for (u32 i = 0; i < pci_count(); i++) {
		struct pci_dev *d = pci_get(i);
		char nm[16];
		kprintf("%s %04x:%04x class %02x.%02x.%02x hdr %u cmd %04x\n", pci_name(d, nm, sizeof nm), d->vendor, d->device, d->class, d->subclass, d->prog_if, d->header_type, pci_read16(d, PCI_COMMAND));
		for (int b = 0; b < 6; b++) {
			struct pci_bar bar;
			int r = pci_bar(d, b, &bar);
			if (r == 0)
				kprintf("  bar%d %s%s%s addr %#lx size %#lx mapped %d\n", b, bar.io ? "io" : "mem", bar.is64 ? "64" : "", bar.prefetch ? " pf" : "", bar.addr, bar.size, bar.mapped);
		}
		for (u8 c = pci_cap_find(d, PCI_CAP_ID_VNDR, 0); c; c = pci_cap_find(d, PCI_CAP_ID_VNDR, c))
			kprintf("  vndr cap at %#x: %08x %08x %08x %08x\n", c, pci_read32(d, c), pci_read32(d, c+4), pci_read32(d, c+8), pci_read32(d, c+12));
		kprintf("  msix cap %#x\n", pci_cap_find(d, PCI_CAP_ID_MSIX, 0));
	}
	return report_summary();
}

APP(test_virtio, "guest test: PCI enumeration and the virtio console", test_virtio_main, APP_TEST);
