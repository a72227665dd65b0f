/*
 * loader.c — BOOTX64.EFI: load kernel.elf and hand over a boot_info.
 *
 * efi_main runs these steps in order; any failure prints one
 * "bareperf-boot: error: ..." line, waits so a human can read it, frees
 * what was allocated and returns the status to the firmware:
 *
 *   1. read \kernel.elf from the volume this image was loaded from and
 *      validate it with elfcheck();
 *   2. copy its PT_LOAD segments into one block of pages the firmware
 *      chooses (never a fixed physical address);
 *   3. build the command line from LoadOptions and \bareperf.cfg;
 *   4. fill boot_info: ACPI RSDP, GOP framebuffer, firmware identity;
 *   5. build 4-level page tables: identity map + the kernel at p_vaddr;
 *   6. ExitBootServices with the final memory map, converted into
 *      boot_info.mmap[];
 *   7. load CR3 and jump to e_entry (rdi = boot_info, esi = magic).
 *
 * The hand-off contract is in include/uapi/bootinfo.h. Section numbers
 * cite the UEFI Specification 2.10.
 */
#include <efi.h>
#include <efilib.h>

#include "boot/elfcheck.h"
#include "boot/idmap.h"
#include "uapi/bootinfo.h"

#define PAGE_SIZE	4096ull
#define MIB		(1ull << 20)
#define GIB		(1ull << 30)

#define ERROR_STALL_US	3000000		/* keep an error on screen for 3 s */
#define EBS_TRIES	8		/* ExitBootServices attempts */
#define MMAP_SLACK	64		/* spare descriptors in the map buffer */
#define CFG_MAX		(64 * 1024)	/* \bareperf.cfg larger than this is refused */
#define SAY_MAX		(BOOT_CMDLINE_MAX + 128)	/* one message line, CHAR16s */

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab);

/* ---- privileged instructions (the loader's only ones) ---- */

static inline uint64_t rdtsc(void)
{
	uint32_t lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t read_cr4(void)
{
	uint64_t v;

	__asm__ volatile("mov %%cr4, %0" : "=r"(v));
	return v;
}
#define CR4_LA57	(1ull << 12)	/* SDM Vol 3A §2.5: 5-level paging */

static inline void outb(uint16_t port, uint8_t v)
{
	__asm__ volatile("outb %0, %1" : : "a"(v), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t v;

	__asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
	return v;
}

/* ---- messages: ConOut, and COM1 when ConOut does not reach it ---- */

/*
 * Should we also write messages to COM1 ourselves?
 *
 * Measured: OVMF (Debian ovmf 2022.11, q35) has the serial terminal in
 * ConOut. Its ConOut variable holds two device paths,
 *   PciRoot(0)/Pci(0x1,0x0)/AcpiAdr(...)                         (GOP)
 *   PciRoot(0)/Pci(0x1F,0x0)/Serial(0)/Uart(115200,8,N,1)/VenMsg(PcAnsi)
 * and every Print() line appears on QEMU's -serial output, so writing
 * COM1 as well would print each line twice. Real PCs often have ConOut on
 * the screen only, and a serial cable is how bareperf users watch a
 * headless box. So we decide at run time: mirror to COM1 only if no
 * instance of the ConOut variable (§3.3 Globally Defined Variables)
 * contains a UART node (§10.3.4 Messaging Device Path, UART) and a 16550
 * answers at COM1 (its scratch register keeps what we write).
 */
#define COM1		0x3f8
#define   UART_THR	0	/* transmit holding register (DLAB=0) */
#define   UART_DLL	0	/* divisor latch, low (DLAB=1) */
#define   UART_IER	1
#define   UART_DLM	1	/* divisor latch, high (DLAB=1) */
#define   UART_FCR	2
#define     FCR_ENABLE_CLEAR	0x07
#define   UART_LCR	3
#define     LCR_8N1	0x03
#define     LCR_DLAB	0x80
#define   UART_MCR	4
#define     MCR_DTR_RTS	0x03
#define   UART_LSR	5
#define     LSR_THRE	0x20	/* transmit holding register empty */
#define   UART_SCR	7
#define UART_BAUD_DIV	1	/* 115200 baud from the 1.8432 MHz clock */
#define UART_SPIN_MAX	100000	/* give up on a UART that never drains */

static int mirror_serial;

/* Does a (multi-instance) device path contain a UART node? Bounded by size. */
static int devpath_has_uart(const uint8_t *p, UINTN size)
{
	UINTN off = 0;

	while (size - off >= 4) {
		uint16_t len = p[off + 2] | p[off + 3] << 8;

		if (len < 4 || len > size - off)
			return 0;
		if (p[off] == MESSAGING_DEVICE_PATH && p[off + 1] == MSG_UART_DP)
			return 1;
		off += len;
	}
	return 0;
}

static void serial_setup(void)
{
	UINTN size = 0;
	uint8_t *conout = LibGetVariableAndSize(L"ConOut", &gEfiGlobalVariableGuid, &size);
	int on_conout = conout && devpath_has_uart(conout, size);

	if (conout)
		FreePool(conout);
	if (on_conout)
		return;
	outb(COM1 + UART_SCR, 0xa5);
	if (inb(COM1 + UART_SCR) != 0xa5)
		return;		/* no 16550 at COM1 */
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_LCR, LCR_DLAB);
	outb(COM1 + UART_DLL, UART_BAUD_DIV);
	outb(COM1 + UART_DLM, 0);
	outb(COM1 + UART_LCR, LCR_8N1);
	outb(COM1 + UART_FCR, FCR_ENABLE_CLEAR);
	outb(COM1 + UART_MCR, MCR_DTR_RTS);
	mirror_serial = 1;
}

static void serial_putc(char c)
{
	for (int i = 0; i < UART_SPIN_MAX && !(inb(COM1 + UART_LSR) & LSR_THRE); i++)
		;
	outb(COM1 + UART_THR, (uint8_t)c);
}

/* Print "bareperf-boot: <prefix><fmt...>" as one line. Boot services only. */
static void vsay(const CHAR16 *prefix, const CHAR16 *fmt, va_list ap)
{
	CHAR16 line[SAY_MAX];
	UINTN n;

	StrCpy(line, L"bareperf-boot: ");
	StrCat(line, prefix);
	n = StrLen(line);
	VSPrint(line + n, sizeof(line) - (n + 3) * sizeof(CHAR16), fmt, ap);
	StrCat(line, L"\r\n");
	uefi_call_wrapper(ST->ConOut->OutputString, 2, ST->ConOut, line);
	if (mirror_serial)
		for (const CHAR16 *c = line; *c; c++)
			serial_putc(*c < 0x80 ? (char)*c : '?');
}

static void say(const CHAR16 *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(L"", fmt, ap);
	va_end(ap);
}

static void error(const CHAR16 *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(L"error: ", fmt, ap);
	va_end(ap);
}

/* ---- everything the loader allocates, freed in one place on failure ---- */

struct efi_map {
	uint8_t *buf;			/* raw EFI_MEMORY_DESCRIPTORs */
	UINTN cap, size, key, desc_size;
	UINT32 desc_version;
};

struct loader {
	EFI_HANDLE image;
	EFI_LOADED_IMAGE *li;
	EFI_FILE_HANDLE root;		/* the boot volume */
	uint8_t *elf;			/* kernel.elf contents */
	UINTN elf_len;
	struct elfcheck_result ek;
	EFI_PHYSICAL_ADDRESS kernel;	/* span bytes, kernel_phys */
	struct boot_info *bi;
	EFI_PHYSICAL_ADDRESS tables;	/* all page-table pages, PML4 first */
	UINTN table_pages;
	struct efi_map map;
	struct boot_mem_range *scratch;	/* one entry per raw descriptor */
	int ebs_called;			/* boot services may be gone: no more calls */
};

static void free_pages(EFI_PHYSICAL_ADDRESS addr, uint64_t bytes)
{
	if (addr)
		uefi_call_wrapper(BS->FreePages, 2, addr, EFI_SIZE_TO_PAGES(bytes));
}

static void loader_free(struct loader *l)
{
	if (l->scratch)
		FreePool(l->scratch);
	if (l->map.buf)
		FreePool(l->map.buf);
	free_pages(l->tables, l->table_pages * PAGE_SIZE);
	free_pages((EFI_PHYSICAL_ADDRESS)(UINTN)l->bi, sizeof(*l->bi));
	free_pages(l->kernel, l->ek.span);
	if (l->elf)
		FreePool(l->elf);
	if (l->root)
		uefi_call_wrapper(l->root->Close, 1, l->root);
}

static EFI_STATUS alloc_pages(uint64_t bytes, EFI_PHYSICAL_ADDRESS *out)
{
	EFI_STATUS st = uefi_call_wrapper(BS->AllocatePages, 4, AllocateAnyPages,
					  EfiLoaderData, EFI_SIZE_TO_PAGES(bytes), out);
	if (EFI_ERROR(st)) {
		*out = 0;
		error(L"cannot allocate %ld KiB (%r)", bytes / 1024, st);
		return st;
	}
	ZeroMem((void *)(UINTN)*out, bytes);
	return EFI_SUCCESS;
}

/* ---- step 1: files on the boot volume (§9.1 Loaded Image, §13.4, §13.5) ---- */

static EFI_STATUS open_boot_volume(struct loader *l)
{
	EFI_SIMPLE_FILE_SYSTEM_PROTOCOL *fs;
	EFI_STATUS st;

	st = uefi_call_wrapper(BS->HandleProtocol, 3, l->image,
			       &gEfiLoadedImageProtocolGuid, (void **)&l->li);
	if (EFI_ERROR(st))
		return st;
	st = uefi_call_wrapper(BS->HandleProtocol, 3, l->li->DeviceHandle,
			       &gEfiSimpleFileSystemProtocolGuid, (void **)&fs);
	if (EFI_ERROR(st))
		return st;
	return uefi_call_wrapper(fs->OpenVolume, 2, fs, &l->root);
}

/*
 * Read a whole file from the boot volume into pool memory. On success the
 * caller frees *buf. A file larger than max is refused with
 * EFI_BAD_BUFFER_SIZE. Prints nothing: the caller knows what the file is.
 */
static EFI_STATUS read_file(struct loader *l, CHAR16 *name, UINTN max,
			    uint8_t **buf, UINTN *len)
{
	EFI_FILE_HANDLE fh;
	EFI_FILE_INFO *info;
	EFI_STATUS st;
	UINTN size, got = 0;

	*buf = NULL;
	*len = 0;
	st = uefi_call_wrapper(l->root->Open, 5, l->root, &fh, name, EFI_FILE_MODE_READ, 0);
	if (EFI_ERROR(st))
		return st;
	info = LibFileInfo(fh);
	if (!info) {
		st = EFI_DEVICE_ERROR;
		goto out;
	}
	size = info->FileSize;
	FreePool(info);
	if (size > max) {
		st = EFI_BAD_BUFFER_SIZE;
		goto out;
	}
	*buf = AllocatePool(size ? size : 1);
	if (!*buf) {
		st = EFI_OUT_OF_RESOURCES;
		goto out;
	}
	/* File.Read may return fewer bytes than asked; 0 means end of file. */
	while (got < size) {
		UINTN n = size - got;

		st = uefi_call_wrapper(fh->Read, 3, fh, &n, *buf + got);
		if (EFI_ERROR(st)) {
			FreePool(*buf);
			*buf = NULL;
			goto out;
		}
		if (n == 0)
			break;
		got += n;
	}
	*len = got;
	st = EFI_SUCCESS;
out:
	uefi_call_wrapper(fh->Close, 1, fh);
	return st;
}

static EFI_STATUS read_kernel(struct loader *l)
{
	EFI_STATUS st = open_boot_volume(l);
	int rc;

	if (!EFI_ERROR(st))
		st = read_file(l, L"\\kernel.elf", ~(UINTN)0, &l->elf, &l->elf_len);
	if (EFI_ERROR(st)) {
		/* No file system on our device counts as "not found" too. */
		if (!l->root || st == EFI_NOT_FOUND)
			error(L"\\kernel.elf not found on the boot volume (%r)", st);
		else
			error(L"cannot read \\kernel.elf (%r)", st);
		return st;
	}
	rc = elfcheck(l->elf, l->elf_len, &l->ek);
	if (rc) {
		error(L"\\kernel.elf is not a bareperf kernel: %a", l->ek.reason);
		return EFI_LOAD_ERROR;
	}
	return EFI_SUCCESS;
}

/* ---- step 2: place the segments ---- */

static EFI_STATUS place_kernel(struct loader *l)
{
	struct elf64_ehdr eh;
	struct elf64_phdr ph;
	EFI_STATUS st = alloc_pages(l->ek.span, &l->kernel);

	if (EFI_ERROR(st))
		return st;
	/* alloc_pages zeroed the block: that is the .bss (p_memsz > p_filesz). */
	CopyMem(&eh, l->elf, sizeof(eh));
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		elfcheck_phdr(l->elf, i, &ph);
		if (ph.p_type == PT_LOAD)
			CopyMem((void *)(UINTN)(l->kernel + ph.p_vaddr - l->ek.vaddr_min),
				l->elf + ph.p_offset, ph.p_filesz);
	}
	say(L"loaded kernel.elf (%ld bytes) at phys 0x%lx", (UINT64)l->elf_len, l->kernel);
	FreePool(l->elf);
	l->elf = NULL;
	return EFI_SUCCESS;
}

/* ---- step 3: the command line ---- */

/*
 * Words from all sources, separated by single spaces. `len` counts every
 * character wanted, also those that no longer fit, so an overlong command
 * line can be reported with its real length.
 */
struct cmdline {
	char *buf;			/* BOOT_CMDLINE_MAX bytes */
	UINTN len;
	int gap;			/* whitespace seen since the last word */
};

static void cmdline_putc(struct cmdline *c, char ch)
{
	if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
		c->gap = 1;
		return;
	}
	if (c->gap && c->len > 0) {
		if (c->len < BOOT_CMDLINE_MAX - 1)
			c->buf[c->len] = ' ';
		c->len++;
	}
	c->gap = 0;
	if (c->len < BOOT_CMDLINE_MAX - 1)
		c->buf[c->len] = ch;
	c->len++;
}

static int is_text(unsigned ch)
{
	return (ch >= 0x20 && ch <= 0x7e) || ch == '\t' || ch == '\r' || ch == '\n';
}

static int ends_with_efi(const CHAR16 *w, UINTN n)
{
	static const char ext[] = ".efi";

	if (n < 4)
		return 0;
	for (UINTN i = 0; i < 4; i++)
		if ((w[n - 4 + i] | 0x20) != ext[i])	/* ASCII lower case */
			return 0;
	return 1;
}

/*
 * LoadOptions (§9.1) are whatever the boot manager or shell passed: the
 * UEFI shell passes its command line, starting with the image path; a
 * Boot#### option may carry binary OptionalData. Only printable UTF-16
 * text is used, without a leading "*.efi" word.
 */
static void cmdline_from_options(struct cmdline *c, const EFI_LOADED_IMAGE *li)
{
	const CHAR16 *w = li->LoadOptions;
	UINTN n = w ? li->LoadOptionsSize / sizeof(CHAR16) : 0;
	UINTN i = 0, end;

	for (end = 0; end < n && w[end]; end++)
		if (!is_text(w[end]))
			return;
	while (i < end && (w[i] == ' ' || w[i] == '\t'))
		i++;
	UINTN word = i;
	while (i < end && w[i] != ' ' && w[i] != '\t')
		i++;
	if (!ends_with_efi(w + word, i - word))
		i = word;
	for (; i < end; i++)
		cmdline_putc(c, (char)w[i]);
}

/*
 * \bareperf.cfg: free text, '#' starts a comment that runs to the end of
 * the line, lines are joined with spaces. Anything but printable ASCII
 * outside comments is refused, naming the line. A UTF-8 byte order mark
 * (as Windows editors write) is skipped.
 */
static EFI_STATUS cmdline_from_cfg(struct loader *l, struct cmdline *c)
{
	uint8_t *cfg;
	UINTN len, i = 0, line = 1;
	int comment = 0;
	EFI_STATUS st = read_file(l, L"\\bareperf.cfg", CFG_MAX, &cfg, &len);

	if (st == EFI_NOT_FOUND)
		return EFI_SUCCESS;		/* the file is optional */
	if (st == EFI_BAD_BUFFER_SIZE) {
		error(L"\\bareperf.cfg is larger than %d KiB", CFG_MAX / 1024);
		return st;
	}
	if (EFI_ERROR(st)) {
		error(L"cannot read \\bareperf.cfg (%r)", st);
		return st;
	}
	if (len >= 3 && cfg[0] == 0xef && cfg[1] == 0xbb && cfg[2] == 0xbf)
		i = 3;
	cmdline_putc(c, ' ');
	for (; i < len; i++) {
		if (cfg[i] == '\n') {
			line++;
			comment = 0;
		} else if (cfg[i] == '#') {
			comment = 1;
		}
		if (comment)
			continue;
		if (!is_text(cfg[i])) {
			error(L"\\bareperf.cfg line %ld: not printable ASCII text", (UINT64)line);
			FreePool(cfg);
			return EFI_INVALID_PARAMETER;
		}
		cmdline_putc(c, (char)cfg[i]);
	}
	FreePool(cfg);
	return EFI_SUCCESS;
}

static EFI_STATUS build_cmdline(struct loader *l)
{
	struct cmdline c = { .buf = l->bi->cmdline };
	EFI_STATUS st;

	cmdline_from_options(&c, l->li);
	st = cmdline_from_cfg(l, &c);
	if (EFI_ERROR(st))
		return st;
	if (c.len > BOOT_CMDLINE_MAX - 1) {
		error(L"command line too long (%ld characters, at most %d)",
		      (UINT64)c.len, BOOT_CMDLINE_MAX - 1);
		return EFI_BAD_BUFFER_SIZE;
	}
	c.buf[c.len] = '\0';
	say(L"cmdline: \"%a\"", c.buf);
	return EFI_SUCCESS;
}

/* ---- step 4: what the firmware knows (§4.6 Configuration Table, §12.9 GOP) ---- */

static int guid_eq(const EFI_GUID *a, const EFI_GUID *b)
{
	return CompareMem(a, b, sizeof(*a)) == 0;
}

static uint64_t find_rsdp(void)
{
	EFI_GUID acpi20 = ACPI_20_TABLE_GUID;
	uint64_t acpi10 = 0;

	for (UINTN i = 0; i < ST->NumberOfTableEntries; i++) {
		EFI_CONFIGURATION_TABLE *t = &ST->ConfigurationTable[i];

		if (guid_eq(&t->VendorGuid, &acpi20))
			return (uint64_t)(UINTN)t->VendorTable;
		if (guid_eq(&t->VendorGuid, &AcpiTableGuid))
			acpi10 = (uint64_t)(UINTN)t->VendorTable;
	}
	return acpi10;
}

static void find_framebuffer(struct boot_framebuffer *fb)
{
	EFI_GRAPHICS_OUTPUT_PROTOCOL *gop;
	EFI_STATUS st = uefi_call_wrapper(BS->LocateProtocol, 3,
					  &gEfiGraphicsOutputProtocolGuid, NULL, (void **)&gop);

	/* PixelBltOnly: no linear framebuffer, FrameBufferBase is not valid. */
	if (EFI_ERROR(st) || !gop->Mode || !gop->Mode->Info ||
	    gop->Mode->Info->PixelFormat == PixelBltOnly)
		return;
	fb->base = gop->Mode->FrameBufferBase;
	fb->size = gop->Mode->FrameBufferSize;
	fb->width = gop->Mode->Info->HorizontalResolution;
	fb->height = gop->Mode->Info->VerticalResolution;
	fb->pixels_per_line = gop->Mode->Info->PixelsPerScanLine;
	fb->format = gop->Mode->Info->PixelFormat;
}

static EFI_STATUS fill_boot_info(struct loader *l, uint64_t loader_tsc)
{
	struct boot_info *bi;
	EFI_PHYSICAL_ADDRESS addr;
	EFI_STATUS st = alloc_pages(sizeof(*bi), &addr);

	if (EFI_ERROR(st))
		return st;
	l->bi = bi = (struct boot_info *)(UINTN)addr;
	bi->magic = BOOT_INFO_MAGIC;
	bi->version = BOOT_INFO_VERSION;
	bi->size = sizeof(*bi);
	bi->source = BOOT_SOURCE_UEFI;
	bi->kernel_phys = l->kernel;
	bi->kernel_size = l->ek.span;
	bi->acpi_rsdp = find_rsdp();
	bi->loader_tsc = loader_tsc;
	bi->uefi_revision = ST->Hdr.Revision;
	for (UINTN i = 0; ST->FirmwareVendor && i < sizeof(bi->firmware_vendor) - 1 &&
			  ST->FirmwareVendor[i]; i++) {
		CHAR16 ch = ST->FirmwareVendor[i];

		bi->firmware_vendor[i] = ch >= 0x20 && ch <= 0x7e ? (char)ch : '?';
	}
	find_framebuffer(&bi->fb);
	return EFI_SUCCESS;
}

/* ---- the memory map (§7.2 GetMemoryMap) ---- */

static EFI_MEMORY_DESCRIPTOR *desc(const struct efi_map *m, UINTN i)
{
	return (EFI_MEMORY_DESCRIPTOR *)(m->buf + i * m->desc_size);
}

static UINTN desc_count(const struct efi_map *m)
{
	return m->size / m->desc_size;
}

static EFI_STATUS get_map(struct efi_map *m)
{
	m->size = m->cap;
	return uefi_call_wrapper(BS->GetMemoryMap, 5, &m->size, (EFI_MEMORY_DESCRIPTOR *)m->buf,
				 &m->key, &m->desc_size, &m->desc_version);
}

/*
 * Allocate the map buffer once, with room for MMAP_SLACK more descriptors
 * than the map has now: allocations made after this (page tables, Print)
 * may split free ranges, and ExitBootServices needs a map fetched with no
 * allocation in between (§7.4.6). The scratch array for the conversion is
 * allocated here too, for the same reason.
 */
static EFI_STATUS map_alloc(struct loader *l)
{
	struct efi_map *m = &l->map;
	EFI_STATUS st;

	m->cap = 0;
	st = get_map(m);
	if (st != EFI_BUFFER_TOO_SMALL) {
		error(L"GetMemoryMap failed (%r)", st);
		return EFI_ERROR(st) ? st : EFI_DEVICE_ERROR;
	}
	/* Descriptors may be larger than EFI_MEMORY_DESCRIPTOR, never smaller. */
	m->cap = m->size + MMAP_SLACK * (m->desc_size > sizeof(EFI_MEMORY_DESCRIPTOR) ?
					 m->desc_size : 2 * sizeof(EFI_MEMORY_DESCRIPTOR));
	m->buf = AllocatePool(m->cap);
	l->scratch = AllocatePool(m->cap / sizeof(EFI_MEMORY_DESCRIPTOR) * sizeof(*l->scratch));
	if (!m->buf || !l->scratch) {
		error(L"cannot allocate the memory map buffer");
		return EFI_OUT_OF_RESOURCES;
	}
	st = get_map(m);
	if (!EFI_ERROR(st) && m->desc_size < sizeof(EFI_MEMORY_DESCRIPTOR))
		st = EFI_INCOMPATIBLE_VERSION;
	if (EFI_ERROR(st))
		error(L"GetMemoryMap failed (%r)", st);
	return st;
}

static uint32_t boot_mem_type(UINT32 efi_type)
{
	switch (efi_type) {
	case EfiConventionalMemory:
	case EfiBootServicesCode:
	case EfiBootServicesData:
		return BOOT_MEM_USABLE;		/* free once boot services exit */
	case EfiLoaderCode:
	case EfiLoaderData:
		return BOOT_MEM_LOADER;		/* kernel, boot_info, page tables */
	case EfiACPIReclaimMemory:
		return BOOT_MEM_ACPI_RECLAIM;
	case EfiACPIMemoryNVS:
		return BOOT_MEM_ACPI_NVS;
	case EfiMemoryMappedIO:
	case EfiMemoryMappedIOPortSpace:
		return BOOT_MEM_MMIO;
	case EfiUnusableMemory:
		return BOOT_MEM_BAD;
	default:
		/* reserved, runtime services, PAL code, persistent, unaccepted */
		return BOOT_MEM_RESERVED;
	}
}

/* Append a non-empty range if there is room; count it either way. */
static UINTN map_push(struct boot_mem_range *out, UINTN count, const struct boot_mem_range *e)
{
	if (!e->length)
		return count;
	if (count < BOOT_MMAP_MAX)
		out[count] = *e;
	return count + 1;
}

/*
 * Convert the raw map into bi->mmap[]: sorted by address (the firmware
 * does not promise an order), adjacent ranges of the same type merged.
 * Pure computation — it runs between GetMemoryMap and ExitBootServices.
 * Returns the number of ranges needed; at most BOOT_MMAP_MAX are stored.
 */
static UINTN convert_map(struct loader *l)
{
	const struct efi_map *m = &l->map;
	struct boot_mem_range *r = l->scratch, *out = l->bi->mmap;
	struct boot_mem_range cur = { 0 };
	UINTN n = desc_count(m), count = 0;

	for (UINTN i = 0; i < n; i++) {
		const EFI_MEMORY_DESCRIPTOR *d = desc(m, i);
		struct boot_mem_range e = {
			.base = d->PhysicalStart,
			.length = d->NumberOfPages * PAGE_SIZE,
			.type = boot_mem_type(d->Type),
		};
		UINTN j = i;

		for (; j > 0 && r[j - 1].base > e.base; j--)	/* insertion sort */
			r[j] = r[j - 1];
		r[j] = e;
	}
	for (UINTN i = 0; i < n; i++) {
		if (r[i].length == 0)
			continue;
		if (cur.length && cur.type == r[i].type && cur.base + cur.length == r[i].base) {
			cur.length += r[i].length;
			continue;
		}
		count = map_push(out, count, &cur);
		cur = r[i];
	}
	count = map_push(out, count, &cur);
	l->bi->mmap_count = count < BOOT_MMAP_MAX ? count : BOOT_MMAP_MAX;
	return count;
}

/* ---- step 5: page tables (SDM Vol 3A §4.5, 4-level paging) ---- */

#define PTE_P		(1ull << 0)
#define PTE_W		(1ull << 1)
#define PT_ENTRIES	512
#define IDMAP_RANGES	1024

/* CPUID.80000001H:EDX[26]: 1 GiB pages (SDM Vol. 2A CPUID). */
static int cpu_has_gib_pages(void)
{
	uint32_t a, b, c, d;

	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
	if (a < 0x80000001u)
		return 0;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000001u), "c"(0));
	return (d >> 26) & 1;
}

/*
 * What the identity map covers: [0, 4 GiB) whole (the APIC, IOAPIC, HPET
 * and 32-bit BARs live there; uncached unless a descriptor says WB), then
 * every range the memory map describes, RAM and MMIO alike (write-back
 * where it has EFI_MEMORY_WB), and the GOP framebuffer. Holes above
 * 4 GiB stay unmapped: the map's size follows what is there, not the
 * highest address (boot/idmap.c).
 */
static struct idmap_range idmap_ranges[IDMAP_RANGES];

static size_t idmap_collect(const struct loader *l)
{
	size_t n = 0;

	idmap_ranges[n++] = (struct idmap_range){ 0, 4 * GIB, 0 };
	if (l->bi->fb.base && l->bi->fb.size)
		idmap_ranges[n++] = (struct idmap_range){ l->bi->fb.base, l->bi->fb.size, 0 };
	for (UINTN i = 0; i < desc_count(&l->map); i++) {
		const EFI_MEMORY_DESCRIPTOR *d = desc(&l->map, i);

		if (!d->NumberOfPages)
			continue;
		if (n == IDMAP_RANGES)
			return 0;
		idmap_ranges[n++] = (struct idmap_range){ d->PhysicalStart,
			d->NumberOfPages * PAGE_SIZE, (d->Attribute & EFI_MEMORY_WB) != 0 };
	}
	return n;
}

/*
 * One allocation holds every table, in this order:
 *   identity map (PML4 first, boot/idmap.c) | kernel PDPT | kernel PD |
 *   kernel PTs.
 *
 * A 2 MiB page is write-back if it overlaps a range the map says
 * supports WB (EFI_MEMORY_WB), else PCD|PWT (uncached), so MMIO and
 * holes are never cached through our tables; a GiB all of one kind is a
 * 1 GiB page where the CPU has them. The firmware's MTRRs still apply on
 * top (SDM Vol 3A §11.5.2.2: an MTRR UC range stays UC under a WB PTE),
 * which covers the legacy VGA hole inside the first 2 MiB.
 *
 * The kernel: [vaddr_min, vaddr_min + span) → kernel_phys with 4 KiB
 * pages, writable and executable; elfcheck() keeps it inside PML4[511],
 * PDPT[510]. No NX bits are set anywhere, so EFER.NXE does not matter.
 */
static EFI_STATUS build_page_tables(struct loader *l)
{
	uint64_t va = l->ek.vaddr_min, va_end = va + l->ek.span;
	int gib = cpu_has_gib_pages();
	size_t nranges, nid;
	UINTN npt;
	uint64_t *pml4, *kpdpt, *kpd, *pt;
	EFI_STATUS st;

	if (read_cr4() & CR4_LA57) {
		error(L"the firmware runs with 5-level paging, which this loader does not support");
		return EFI_UNSUPPORTED;
	}
	nranges = idmap_collect(l);
	if (!nranges) {
		error(L"the memory map has more than %d ranges", IDMAP_RANGES - 2);
		return EFI_UNSUPPORTED;
	}
	nid = idmap_pages(idmap_ranges, nranges, gib);
	if (!nid) {
		error(L"the memory map reaches above what 4-level paging can identity-map");
		return EFI_UNSUPPORTED;
	}
	npt = ((va_end - 1) >> 21) - (va >> 21) + 1;
	l->table_pages = nid + 2 + npt;
	st = alloc_pages(l->table_pages * PAGE_SIZE, &l->tables);
	if (EFI_ERROR(st))
		return st;

	pml4 = (uint64_t *)(UINTN)l->tables;
	if (idmap_build(idmap_ranges, nranges, gib, pml4, nid) != nid) {
		error(L"identity map: the tables did not fit the %lu pages planned", (uint64_t)nid);
		return EFI_LOAD_ERROR;
	}
	kpdpt = pml4 + nid * PT_ENTRIES;
	kpd = kpdpt + PT_ENTRIES;
	pt = kpd + PT_ENTRIES;

	pml4[(va >> 39) % PT_ENTRIES] = (uint64_t)(UINTN)kpdpt | PTE_P | PTE_W;
	kpdpt[(va >> 30) % PT_ENTRIES] = (uint64_t)(UINTN)kpd | PTE_P | PTE_W;
	for (uint64_t v = va, phys = l->kernel; v < va_end; v += PAGE_SIZE, phys += PAGE_SIZE) {
		uint64_t *pde = &kpd[(v >> 21) % PT_ENTRIES];

		if (!*pde) {
			*pde = (uint64_t)(UINTN)pt | PTE_P | PTE_W;
			pt += PT_ENTRIES;
		}
		((uint64_t *)(UINTN)(*pde & ~(PAGE_SIZE - 1)))[(v >> 12) % PT_ENTRIES] =
			phys | PTE_P | PTE_W;
	}
	return EFI_SUCCESS;
}

/* ---- steps 6 and 7: leave the firmware ---- */

static void __attribute__((noreturn))
enter_kernel(uint64_t pml4, uint64_t entry, struct boot_info *bi)
{
	/* The identity map keeps this code, the stack and bi valid after
	 * the CR3 load; the kernel mapping makes e_entry valid. */
	__asm__ volatile("cli\n\t"
			 "cld\n\t"
			 "mov %0, %%cr3\n\t"
			 "jmp *%1"
			 : : "r"(pml4), "r"(entry), "D"(bi), "S"((uint64_t)BOOT_INFO_MAGIC)
			 : "memory");
	__builtin_unreachable();
}

/*
 * §7.4.6: ExitBootServices fails with EFI_INVALID_PARAMETER when the map
 * key is stale; the caller must then call GetMemoryMap again and retry,
 * and may call no other boot service (not even Print) after the first
 * attempt, which may already have shut part of them down. Errors before
 * that first attempt are reported normally; after it all we can do is
 * hand the status back. If the map outgrows boot_info.mmap[] on a retry
 * (it cannot on the first attempt, that is checked), the highest ranges
 * are dropped: the kernel then merely uses less memory.
 */
static EFI_STATUS exit_boot_services(struct loader *l)
{
	EFI_STATUS st = EFI_SUCCESS;
	UINTN tries;

	say(L"exiting boot services");
	for (tries = 0; tries < EBS_TRIES; tries++) {
		st = get_map(&l->map);
		if (EFI_ERROR(st))
			break;
		UINTN need = convert_map(l);
		if (!l->ebs_called && need > BOOT_MMAP_MAX) {
			error(L"the firmware memory map has %ld ranges, boot_info holds %d",
			      (UINT64)need, BOOT_MMAP_MAX);
			return EFI_BUFFER_TOO_SMALL;
		}
		l->ebs_called = 1;
		st = uefi_call_wrapper(BS->ExitBootServices, 2, l->image, l->map.key);
		if (st != EFI_INVALID_PARAMETER)
			break;
	}
	if (EFI_ERROR(st) && !l->ebs_called)
		error(L"GetMemoryMap failed (%r)", st);
	l->bi->ebs_retries = tries;
	return st;
}

EFI_STATUS efi_main(EFI_HANDLE image, EFI_SYSTEM_TABLE *systab)
{
	uint64_t loader_tsc = rdtsc();
	struct loader l = { .image = image };
	EFI_STATUS st;

	InitializeLib(image, systab);
	serial_setup();

	st = read_kernel(&l);
	if (!EFI_ERROR(st))
		st = place_kernel(&l);
	if (!EFI_ERROR(st))
		st = fill_boot_info(&l, loader_tsc);
	if (!EFI_ERROR(st))
		st = build_cmdline(&l);
	if (!EFI_ERROR(st))
		st = map_alloc(&l);
	if (!EFI_ERROR(st))
		st = build_page_tables(&l);
	if (!EFI_ERROR(st))
		st = exit_boot_services(&l);
	if (EFI_ERROR(st)) {
		if (l.ebs_called)
			return st;	/* boot services are (partly) gone */
		uefi_call_wrapper(BS->Stall, 1, ERROR_STALL_US);
		loader_free(&l);
		return st;
	}
	l.bi->exit_boot_tsc = rdtsc();
	enter_kernel(l.tables, l.ek.entry, l.bi);
}
