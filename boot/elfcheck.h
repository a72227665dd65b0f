/*
 * elfcheck.h — validate a kernel.elf image before the loader touches it.
 *
 * Pure code: no firmware calls, no allocation, no libc beyond <stdint.h>
 * and <stddef.h>, so the same file builds into the EFI loader and into the
 * host unit test (test/host/test_elfcheck.c). The ELF structures are our
 * own fixed-width copies of the ELF-64 Object File Format (v1.5) layouts,
 * so neither build depends on <elf.h>.
 */
#ifndef BAREPERF_BOOT_ELFCHECK_H
#define BAREPERF_BOOT_ELFCHECK_H

#include <stddef.h>
#include <stdint.h>

/* e_ident[] indices and values (ELF-64 spec, "ELF Identification"). */
#define EI_MAG0		0
#define EI_CLASS	4
#define   ELFCLASS64	2
#define EI_DATA		5
#define   ELFDATA2LSB	1
#define EI_VERSION	6
#define EI_NIDENT	16
#define EV_CURRENT	1
#define ET_EXEC		2
#define EM_X86_64	62

/* Program header p_type / p_flags. */
#define PT_LOAD		1
#define PT_NOTE		4
#define PF_X		1
#define PF_W		2
#define PF_R		4

struct elf64_ehdr {
	uint8_t  e_ident[EI_NIDENT];
	uint16_t e_type;
	uint16_t e_machine;
	uint32_t e_version;
	uint64_t e_entry;
	uint64_t e_phoff;
	uint64_t e_shoff;
	uint32_t e_flags;
	uint16_t e_ehsize;
	uint16_t e_phentsize;
	uint16_t e_phnum;
	uint16_t e_shentsize;
	uint16_t e_shnum;
	uint16_t e_shstrndx;
};
_Static_assert(sizeof(struct elf64_ehdr) == 64, "Elf64_Ehdr layout");

struct elf64_phdr {
	uint32_t p_type;
	uint32_t p_flags;
	uint64_t p_offset;
	uint64_t p_vaddr;
	uint64_t p_paddr;
	uint64_t p_filesz;
	uint64_t p_memsz;
	uint64_t p_align;
};
_Static_assert(sizeof(struct elf64_phdr) == 56, "Elf64_Phdr layout");

/*
 * Where a bareperf kernel may live: the top 2 GiB minus the last GiB
 * (-mcmodel=kernel; linker.ld links at KERNEL_VMA + 1 MiB). Every PT_LOAD
 * must fall inside, which also keeps the loader's mapping inside one page
 * directory (PML4[511], PDPT[510]).
 */
#define ELFCHECK_VADDR_MIN	0xffffffff80000000ull
#define ELFCHECK_VADDR_END	0xffffffffc0000000ull
#define ELFCHECK_SPAN_MAX	(256ull << 20)
#define ELFCHECK_PAGE		4096ull

/* Reasons for refusal; 0 means the image is acceptable. */
enum elfcheck_err {
	ELFCHECK_OK = 0,
	ELFCHECK_ETRUNC = -1,		/* shorter than an ELF header */
	ELFCHECK_EMAGIC = -2,
	ELFCHECK_ECLASS = -3,
	ELFCHECK_EDATA = -4,
	ELFCHECK_EVERSION = -5,
	ELFCHECK_ETYPE = -6,
	ELFCHECK_EMACHINE = -7,
	ELFCHECK_EPHENT = -8,		/* e_phentsize is not sizeof(elf64_phdr) */
	ELFCHECK_EPHDRS = -9,		/* program header table outside the file */
	ELFCHECK_ENOLOAD = -10,
	ELFCHECK_EFILESZ = -11,		/* p_filesz > p_memsz */
	ELFCHECK_EOFFSET = -12,		/* segment bytes outside the file */
	ELFCHECK_EVADDR = -13,		/* segment outside the kernel range */
	ELFCHECK_EORDER = -14,		/* PT_LOADs unsorted or overlapping */
	ELFCHECK_EALIGN = -15,		/* first PT_LOAD not page-aligned */
	ELFCHECK_ESPAN = -16,
	ELFCHECK_EENTRY = -17,		/* entry not inside an executable PT_LOAD */
};

struct elfcheck_result {
	uint64_t entry;		/* e_entry */
	uint64_t vaddr_min;	/* p_vaddr of the first PT_LOAD (page-aligned) */
	uint64_t span;		/* bytes to reserve from vaddr_min, page-rounded */
	unsigned nload;		/* number of PT_LOAD headers */
	const char *reason;	/* static text; "ok" or why the image was refused */
};

/*
 * Check that buf[0..len) is an x86_64 ELF64 executable the loader can
 * place: header sane, program header table and every PT_LOAD's file bytes
 * inside the buffer, PT_LOADs sorted, non-overlapping, inside
 * [ELFCHECK_VADDR_MIN, ELFCHECK_VADDR_END) and spanning at most
 * ELFCHECK_SPAN_MAX, entry inside the file-backed part of an executable
 * PT_LOAD. No field is trusted; buf need not be aligned.
 *
 * Returns 0 and fills *out, or a negative enum elfcheck_err with
 * out->reason set. Only reads buf. Safe to call anywhere.
 */
int elfcheck(const void *buf, size_t len, struct elfcheck_result *out);

/*
 * Copy program header i (i < e_phnum) of an image that elfcheck()
 * accepted. Unaligned-safe.
 */
void elfcheck_phdr(const void *buf, unsigned i, struct elf64_phdr *ph);

#endif
