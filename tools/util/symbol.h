/*
 * tools/util/symbol.h — the one ELF reader of the host tools
 * (tools/util/symbol.c, elfutils libelf + libdw): a kernel.elf's function
 * symbols, source lines, executable segments and GNU build-id, and those
 * of the programs the kernel loaded from relocatable objects. Sessions
 * choose their kernel.elf with it (tools/util/session.h: session_symtab), the
 * trace decoder walks the code it maps (tools/util/trace/image.c).
 *
 * Errors: 0 or -1 with one line in err.
 */
#ifndef BAREPERF_TOOLS_UTIL_SYMBOL_H
#define BAREPERF_TOOLS_UTIL_SYMBOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct symtab;

/*
 * Load the function symbols and line tables of kernel.elf. If build_id is
 * not NULL, the file's GNU build-id must match it: otherwise -1 with
 * "kernel.elf does not match the capture: build-id ... vs ..." in err.
 */
int symtab_load(struct symtab **out, const char *path, const uint8_t *build_id,
		size_t build_id_len, char *err, size_t errlen);
void symtab_free(struct symtab *t);

struct symbol {
	const char *name;		/* NULL if addr is in no function */
	uint64_t start, size;
};

/* The function holding addr; NULL name when none. Fast (binary search).
 * An address in a program's range (symtab_add_program) is the program's. */
struct symbol symtab_lookup(const struct symtab *t, uint64_t addr);
/*
 * The address to look up for entry i of a sample's call chain (entry 0
 * its IP, then return addresses outward), addr, whose entry i - 1 is
 * prev: a return address at addr - 1, the call before it (a call that
 * is a function's last instruction returns to the start of the next
 * one); the IP as it is, and so the entry after the kernel's
 * isr_frame_return (kernel/isr.asm), the RIP an interrupt hit.
 */
uint64_t symtab_chain_addr(const struct symtab *t, size_t i, uint64_t prev, uint64_t addr);
/* Source file and line for addr (DWARF), or false. */
/* The value of the ELF symbol called name, of any type (linker-script
 * labels too); false if the file has none. Scans .symtab: for a few names. */
bool symtab_value(const struct symtab *t, const char *name, uint64_t *value);
bool symtab_line(const struct symtab *t, uint64_t addr, const char **file, int *line);
/* The executable PT_LOAD segments (for perf.data MMAP records). */
size_t symtab_exec_segments(const struct symtab *t, uint64_t *vaddr, uint64_t *size,
			    uint64_t *file_off, size_t max);

/* The file's GNU build-id (NULL, 0 if it has none) and its path. */
const uint8_t *symtab_build_id(const struct symtab *t, size_t *len);
const char *symtab_path(const struct symtab *t);
/* The function symbols, sorted by address: count, and the i-th. */
size_t symtab_count(const struct symtab *t);
struct symbol symtab_at(const struct symtab *t, size_t i);
/* The GNU build-id of an ELF file without loading its symbols: length
 * (<= cap) or -1 with a line in err. 0 means the file has none. */
int symtab_read_build_id(const char *path, uint8_t *id, size_t cap, char *err, size_t errlen);
/* Lowercase hex of id into buf (2 * n + 1 bytes). */
char *symtab_hex(const uint8_t *id, size_t n, char *buf, size_t bufsize);

/* By name (a linear search): true and *out, or false. */
bool symtab_find(const struct symtab *t, const char *name, struct symbol *out);
/*
 * The bytes at addr of the executable PT_LOAD segment holding it, as the
 * file has them, and how many follow in that segment (*avail); NULL if
 * addr is in none. Valid until symtab_free.
 */
const uint8_t *symtab_code(const struct symtab *t, uint64_t addr, size_t *avail);
/*
 * A table without a file (tests, fuzzing): syms copied, names included,
 * and sorted; an unsized symbol ends at the next one. No lines, segments
 * or build-id. NULL if out of memory.
 */
struct symtab *symtab_new(const struct symbol *syms, size_t n);

/*
 * A program the kernel loaded from a relocatable object (BP_RECORD_PROGRAM):
 * its name, build-id, the range it occupies and where each allocated
 * section of the object was placed.
 */
struct symtab_section {
	uint64_t addr, size;
	uint32_t shndx;
};
struct symtab_program {
	const char *name;
	const uint8_t *build_id;
	size_t build_id_len;
	uint64_t start, end;
	const struct symtab_section *secs;
	size_t nsecs;
};
/*
 * Load the object at path (ET_REL; its build-id must match p's when p has
 * one) as placed: a function symbol at its section's address plus its
 * st_value, source lines from its DWARF relocated for that layout.
 */
int symtab_load_program(struct symtab **out, const char *path, const struct symtab_program *p,
			char *err, size_t errlen);
/* A program whose object is not at hand: its range is one symbol, "[NAME]".
 * NULL if out of memory. */
struct symtab *symtab_new_program(const struct symtab_program *p);
/*
 * Give a program's table to the kernel's (which frees it): symtab_lookup
 * and symtab_line on the kernel's table then answer from the program's
 * for the addresses in its [start, end) (the last added, where ranges
 * overlap). -1 if out of memory.
 */
int symtab_add_program(struct symtab *kernel, struct symtab *prog);
size_t symtab_program_count(const struct symtab *t);
/* The name of the program whose range holds addr, NULL for the kernel's. */
const char *symtab_dso(const struct symtab *t, uint64_t addr);
/* The i-th program added (NULL past the last), and its name and range. */
const struct symtab *symtab_program_at(const struct symtab *t, size_t i);
void symtab_program_range(const struct symtab *p, const char **name, uint64_t *start,
			  uint64_t *end);
/* Whether p was read from its object (not symtab_new_program's [NAME]). */
bool symtab_is_program_object(const struct symtab *p);
/*
 * A GNU ld script that links a program's object (p, loaded from it) into
 * an image with each section where its run placed it: the placed ones at
 * their addresses, the others past the program's end, the image's own
 * build-id note last; each symbol the object takes from the kernel gets
 * the value the kernel's loader gave it: the SDK's export of that name
 * (apps/sdk.h), else the kernel's symbol. -1 with a line in err when the
 * kernel has neither.
 */
int symtab_program_ldscript(const struct symtab *p, const struct symtab *kernel, FILE *f,
			    char *err, size_t errlen);

/*
 * An ELF file read for its sections rather than its symbols (bareperf
 * list-apps: kernel.elf's .apps table and the strings it points at).
 * elf_file_open: 0, or -1 with "PATH: why" in err ("not a 64-bit ELF
 * file" for anything else).
 */
struct elf_file;
int elf_file_open(struct elf_file **out, const char *path, char *err, size_t errlen);
void elf_file_close(struct elf_file *f);
/* The section called name: true with its bytes (NULL, 0 when it has
 * none), or false if the file has no such section. Valid until close. */
bool elf_file_section(const struct elf_file *f, const char *name, const void **data, size_t *len);
/* The NUL-terminated string at vaddr in an allocated section, or NULL. */
const char *elf_file_string(const struct elf_file *f, uint64_t vaddr);

#endif
