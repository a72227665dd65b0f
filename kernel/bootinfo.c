/*
 * bootinfo.c — what the kernel was booted with: the boot information
 * (from the UEFI loader or the PVH start info), the parsed command line
 * and the kernel's own build-id. Written once by kmain, read everywhere.
 */
#include "kernel/kernel.h"
#include "kernel/boot.h"
#include "kernel/mm.h"
#include <uapi/bootinfo.h>

#define PVH_MARK	0x21485650	/* kernel/entry.asm */
#define NT_GNU_BUILD_ID	3

static struct boot_info bi;
const struct boot_info *boot_info = &bi;
u64 boot_tsc_entry;
struct kernel_options kopt;

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

const char *boot_info_take(void *info, u32 magic)
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
