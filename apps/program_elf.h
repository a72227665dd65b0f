/*
 * program_elf.h — a program's relocatable object (ELF64, x86-64, ET_REL;
 * System V ABI and its x86-64 supplement): checked as the hostile input it
 * is, laid out, linked (apps/program_elf.c). No kernel calls: the host
 * tests build it as it is (test/host/test_program_elf.c).
 */
#ifndef BAREPERF_APPS_PROGRAM_ELF_H
#define BAREPERF_APPS_PROGRAM_ELF_H

#include "kernel/x86.h"
#include <stddef.h>

struct elf64_ehdr {
	u8  ident[16];
	u16 type, machine;
	u32 version;
	u64 entry, phoff, shoff;
	u32 flags;
	u16 ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct elf64_shdr {
	u32 name, type;
	u64 flags, addr, offset, size;
	u32 link, info;
	u64 addralign, entsize;
};

struct elf64_sym {
	u32 name;
	u8  info, other;
	u16 shndx;
	u64 value, size;
};

struct elf64_rela {
	u64 offset, info;
	s64 addend;
};

#define SHT_PROGBITS	1
#define SHT_SYMTAB	2
#define SHT_STRTAB	3
#define SHT_RELA	4
#define SHT_NOTE	7
#define SHT_NOBITS	8
#define SHT_REL		9
#define SHT_INIT_ARRAY	14
#define SHT_FINI_ARRAY	15
#define SHT_PREINIT_ARRAY 16
#define SHF_WRITE	0x1
#define SHF_ALLOC	0x2
#define SHF_EXECINSTR	0x4
#define SHF_TLS		0x400
#define SHN_UNDEF	0
#define SHN_LORESERVE	0xff00
#define SHN_ABS		0xfff1
#define SHN_COMMON	0xfff2
#define STT_FUNC	2
#define STT_SECTION	3
#define STT_TLS		6
#define STB_LOCAL	0

/* The three kinds of memory a program gets, each on pages of its own, in
 * this order. */
enum elf_class { ELF_TEXT, ELF_RODATA, ELF_DATA, ELF_CLASSES, ELF_NONE = -1 };

struct elf_obj {
	const u8 *buf;
	size_t len;
	const struct elf64_ehdr *eh;
	const struct elf64_shdr *sh;
	u32 shnum;
	const struct elf64_sym *sym;
	u32 nsym;
	const char *str, *shstr;
	size_t strsz, shstrsz;
};

#define ELF_ERR_MAX	400

/* Check the whole object: its header, every section's and symbol's index
 * and offset against the buffer, every relocation's symbol and place; and
 * refuse what a program cannot have (constructors, thread-local data, REL
 * relocations). 0, or -1 with err saying what is wrong. */
int elf_parse(struct elf_obj *o, const void *buf, size_t len, char *err, size_t n);
const char *elf_section_name(const struct elf_obj *o, u32 i);
const char *elf_symbol_name(const struct elf_obj *o, u32 i);
/* The class a section is placed in, ELF_NONE if it is not placed. */
int elf_section_class(const struct elf_obj *o, u32 i);
/* Offsets of the placed sections in their class (off[shnum]), of the
 * common symbols in ELF_DATA (val[nsym], after the sections), and each
 * class's size. -1 (err) for an alignment above a page. */
int elf_layout(const struct elf_obj *o, u64 *off, u64 *val, u64 size[ELF_CLASSES],
	       char *err, size_t n);

/* An exported function's address, 0 if there is none of that name. */
typedef u64 (*elf_resolve_fn)(const char *name);
/* With each class at base[class]: the sections' addresses (off becomes
 * addr; 0 for those not placed). */
void elf_place(const struct elf_obj *o, const u64 base[ELF_CLASSES], u64 *addr);
/* Every symbol's value (val: elf_layout's), resolving undefined ones with
 * resolve only (all unresolved names in one err), then every relocation
 * of a placed section applied at its address, where its bytes are. 0, or
 * -1 with err. */
int elf_link(const struct elf_obj *o, const u64 base[ELF_CLASSES], const u64 *addr, u64 *val,
	     elf_resolve_fn resolve, char *err, size_t n);

/* The GNU build-id note's bytes (at most max), their count; 0 if none. */
u32 elf_build_id(const struct elf_obj *o, u8 *id, u32 max);
/* The newest SDK version of the .bareperf.sdk section's words; 0 if none. */
u32 elf_sdk_version(const struct elf_obj *o);
/* The index of the global symbol of that name defined in a placed
 * section, 0 if none. */
u32 elf_find_global(const struct elf_obj *o, const char *name);

#endif
