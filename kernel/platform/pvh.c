/*
 * pvh.c — turn the PVH start info QEMU hands a -kernel ELF into our
 * boot_info. Layout from Xen's public hvm/start_info.h (version 1).
 */
#include "kernel/kernel.h"
#include "kernel/boot.h"
#include "kernel/mm.h"
#include <uapi/bootinfo.h>

#define HVM_START_MAGIC	0x336ec578

struct hvm_start_info {
	u32 magic;
	u32 version;
	u32 flags;
	u32 nr_modules;
	u64 modlist_paddr;
	u64 cmdline_paddr;
	u64 rsdp_paddr;
	u64 memmap_paddr;	/* version >= 1 */
	u32 memmap_entries;
	u32 reserved;
};

struct hvm_memmap_entry {
	u64 addr;
	u64 size;
	u32 type;		/* E820 type */
	u32 reserved;
};

static u32 e820_to_boot(u32 t)
{
	switch (t) {
	case 1: return BOOT_MEM_USABLE;
	case 3: return BOOT_MEM_ACPI_RECLAIM;
	case 4: return BOOT_MEM_ACPI_NVS;
	case 5: return BOOT_MEM_BAD;
	default: return BOOT_MEM_RESERVED;
	}
}

int pvh_to_boot_info(const void *start_info, struct boot_info *bi, const char **why)
{
	const struct hvm_start_info *si = start_info;

	if (si->magic != HVM_START_MAGIC) {
		*why = "PVH start info has a bad magic";
		return -E_INVAL;
	}
	if (si->version < 1 || !si->memmap_paddr || !si->memmap_entries) {
		*why = "PVH start info carries no memory map (version 0)";
		return -E_INVAL;
	}
	bi->magic = BOOT_INFO_MAGIC;
	bi->version = BOOT_INFO_VERSION;
	bi->size = sizeof(*bi);
	bi->source = BOOT_SOURCE_PVH;
	bi->kernel_phys = (u64)__kernel_start - 0xffffffff80000000ul;
	bi->kernel_size = __kernel_end - __kernel_start;
	bi->acpi_rsdp = si->rsdp_paddr;
	if (si->cmdline_paddr)
		strlcpy(bi->cmdline, (const char *)si->cmdline_paddr, sizeof(bi->cmdline));

	const struct hvm_memmap_entry *e = (const void *)si->memmap_paddr;
	u32 n = MIN(si->memmap_entries, (u32)BOOT_MMAP_MAX);
	for (u32 i = 0; i < n; i++) {
		bi->mmap[i].base = e[i].addr;
		bi->mmap[i].length = e[i].size;
		bi->mmap[i].type = e820_to_boot(e[i].type);
	}
	bi->mmap_count = n;
	return 0;
}
