/*
 * bootinfo.h — what a loader hands the kernel.
 *
 * Shared by boot/ (the UEFI loader), kernel/ and host tests. Fixed-width,
 * versioned and append-only: a loader fills BOOT_INFO_VERSION and `size`,
 * and the kernel reads only fields that lie within `size`. Never reorder
 * or resize a field; add new ones before `reserved` and shrink it.
 *
 * Hand-off contract (UEFI path, boot/loader.c → kernel/entry.asm _start64):
 *   - 64-bit long mode, interrupts off, boot services exited;
 *   - paging on with the loader's tables: every physical address below
 *     max(4 GiB, top of the memory map) is identity-mapped, and the
 *     kernel's PT_LOAD segments are mapped at their p_vaddr onto the
 *     contiguous physical block starting at kernel_phys;
 *   - rdi = physical (= identity-mapped) address of struct boot_info,
 *     esi = BOOT_INFO_MAGIC; the stack is the loader's and is abandoned.
 * The PVH path (QEMU -kernel) builds the same struct inside the kernel
 * from the hvm_start_info QEMU provides.
 */
#ifndef BAREPERF_UAPI_BOOTINFO_H
#define BAREPERF_UAPI_BOOTINFO_H

#include <stdint.h>

#define BOOT_INFO_MAGIC		0x42504249u	/* "IBPB" little-endian */
#define BOOT_INFO_VERSION	1
#define BOOT_CMDLINE_MAX	1024
#define BOOT_MMAP_MAX		256

enum boot_source {
	BOOT_SOURCE_UEFI = 1,
	BOOT_SOURCE_PVH  = 2,
};

enum boot_mem_type {
	BOOT_MEM_USABLE      = 1,	/* free RAM, the kernel may allocate it */
	BOOT_MEM_RESERVED    = 2,
	BOOT_MEM_ACPI_RECLAIM = 3,
	BOOT_MEM_ACPI_NVS    = 4,
	BOOT_MEM_LOADER      = 5,	/* kernel image, boot_info, loader page tables */
	BOOT_MEM_MMIO        = 6,
	BOOT_MEM_BAD         = 7,
};

struct boot_mem_range {
	uint64_t base;
	uint64_t length;
	uint32_t type;			/* enum boot_mem_type */
	uint32_t reserved;
};
_Static_assert(sizeof(struct boot_mem_range) == 24, "boot_mem_range ABI");

struct boot_framebuffer {
	uint64_t base;			/* 0 when the firmware offered no GOP */
	uint64_t size;
	uint32_t width, height;
	uint32_t pixels_per_line;
	uint32_t format;		/* EFI_GRAPHICS_PIXEL_FORMAT */
};
_Static_assert(sizeof(struct boot_framebuffer) == 32, "boot_framebuffer ABI");

struct boot_info {
	uint32_t magic;			/* BOOT_INFO_MAGIC */
	uint16_t version;		/* BOOT_INFO_VERSION */
	uint16_t size;			/* sizeof(struct boot_info) as the loader knew it */
	uint32_t source;		/* enum boot_source */
	uint32_t mmap_count;		/* valid entries in mmap[] */

	uint64_t kernel_phys;		/* physical address of __kernel_start */
	uint64_t kernel_size;		/* bytes from __kernel_start to __kernel_end */
	uint64_t acpi_rsdp;		/* physical address of the RSDP, 0 if none */
	uint64_t loader_tsc;		/* TSC when the loader started, 0 if unknown */
	uint64_t exit_boot_tsc;		/* TSC just before jumping to the kernel */
	uint32_t uefi_revision;		/* EFI system table revision, 0 on PVH */
	uint32_t ebs_retries;		/* ExitBootServices attempts beyond the first */

	struct boot_framebuffer fb;

	char     cmdline[BOOT_CMDLINE_MAX];	/* NUL-terminated ASCII */
	char     firmware_vendor[64];		/* ASCII, from the system table */

	struct boot_mem_range mmap[BOOT_MMAP_MAX];

	uint8_t  reserved[256];
};
_Static_assert(sizeof(struct boot_info) == 64 + 32 + 1024 + 64 + 24 * 256 + 256,
	       "boot_info ABI");

#endif
