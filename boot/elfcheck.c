/*
 * elfcheck.c — refuse anything that is not a loadable bareperf kernel.
 *
 * The file comes from a FAT volume a user may have written anything to,
 * so every size and offset is checked against the buffer with the
 * subtraction form (a <= len && b <= len - a) that cannot overflow.
 * Headers are copied out with memcpy because nothing guarantees that
 * e_phoff is aligned.
 */
#include "boot/elfcheck.h"

static const uint8_t elf_magic[4] = { 0x7f, 'E', 'L', 'F' };

static int fail(struct elfcheck_result *out, int err, const char *why)
{
	out->reason = why;
	return err;
}

void elfcheck_phdr(const void *buf, unsigned i, struct elf64_phdr *ph)
{
	struct elf64_ehdr eh;

	__builtin_memcpy(&eh, buf, sizeof(eh));
	__builtin_memcpy(ph, (const uint8_t *)buf + eh.e_phoff +
			 (uint64_t)i * sizeof(*ph), sizeof(*ph));
}

/* Is [off, off + size) inside a buffer of len bytes? */
static int in_file(uint64_t off, uint64_t size, size_t len)
{
	return off <= len && size <= len - off;
}

int elfcheck(const void *buf, size_t len, struct elfcheck_result *out)
{
	struct elf64_ehdr eh;
	struct elf64_phdr ph;
	uint64_t end = 0;		/* highest p_vaddr + p_memsz so far */
	int entry_ok = 0;

	*out = (struct elfcheck_result){ .reason = "ok" };
	if (buf == NULL || len < sizeof(eh))
		return fail(out, ELFCHECK_ETRUNC, "file too short for an ELF header");
	__builtin_memcpy(&eh, buf, sizeof(eh));

	if (__builtin_memcmp(eh.e_ident + EI_MAG0, elf_magic, sizeof(elf_magic)))
		return fail(out, ELFCHECK_EMAGIC, "no ELF magic (not an ELF file)");
	if (eh.e_ident[EI_CLASS] != ELFCLASS64)
		return fail(out, ELFCHECK_ECLASS, "not a 64-bit ELF file (ELFCLASS64 expected)");
	if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return fail(out, ELFCHECK_EDATA, "not a little-endian ELF file");
	if (eh.e_ident[EI_VERSION] != EV_CURRENT || eh.e_version != EV_CURRENT)
		return fail(out, ELFCHECK_EVERSION, "unknown ELF version");
	if (eh.e_type != ET_EXEC)
		return fail(out, ELFCHECK_ETYPE, "not an executable (ET_EXEC expected)");
	if (eh.e_machine != EM_X86_64)
		return fail(out, ELFCHECK_EMACHINE, "built for another machine (x86_64 expected)");
	if (eh.e_phentsize != sizeof(ph))
		return fail(out, ELFCHECK_EPHENT, "unexpected program header size");
	/* e_phnum <= 0xffff, so the table size cannot overflow. */
	if (!in_file(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(ph), len))
		return fail(out, ELFCHECK_EPHDRS, "program header table lies outside the file");

	for (unsigned i = 0; i < eh.e_phnum; i++) {
		elfcheck_phdr(buf, i, &ph);
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_filesz > ph.p_memsz)
			return fail(out, ELFCHECK_EFILESZ, "segment file size exceeds its memory size");
		if (!in_file(ph.p_offset, ph.p_filesz, len))
			return fail(out, ELFCHECK_EOFFSET, "segment data lies outside the file");
		if (ph.p_vaddr < ELFCHECK_VADDR_MIN || ph.p_vaddr >= ELFCHECK_VADDR_END ||
		    ph.p_memsz > ELFCHECK_VADDR_END - ph.p_vaddr)
			return fail(out, ELFCHECK_EVADDR, "segment outside the kernel address range");
		/* ELF-64 spec: PT_LOAD entries are sorted by p_vaddr. We copy
		 * them into one block, so they must not overlap either. */
		if (out->nload == 0) {
			if (ph.p_vaddr % ELFCHECK_PAGE)
				return fail(out, ELFCHECK_EALIGN, "first segment is not page-aligned");
			out->vaddr_min = ph.p_vaddr;
		} else if (ph.p_vaddr < end) {
			return fail(out, ELFCHECK_EORDER, "segments overlap or are not sorted by address");
		}
		end = ph.p_vaddr + ph.p_memsz;
		if (end - out->vaddr_min > ELFCHECK_SPAN_MAX)
			return fail(out, ELFCHECK_ESPAN, "segments span more than 256 MiB");
		if ((ph.p_flags & PF_X) && eh.e_entry >= ph.p_vaddr &&
		    eh.e_entry - ph.p_vaddr < ph.p_filesz)
			entry_ok = 1;
		out->nload++;
	}
	if (out->nload == 0)
		return fail(out, ELFCHECK_ENOLOAD, "no loadable (PT_LOAD) segment");
	if (!entry_ok)
		return fail(out, ELFCHECK_EENTRY, "entry point is not inside an executable segment");

	out->entry = eh.e_entry;
	/* end <= ELFCHECK_VADDR_END, so rounding up cannot wrap. */
	out->span = ((end + ELFCHECK_PAGE - 1) & ~(ELFCHECK_PAGE - 1)) - out->vaddr_min;
	return ELFCHECK_OK;
}
