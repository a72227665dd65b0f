/*
 * program_elf.c — a program's relocatable object checked, laid out and
 * linked (apps/program_elf.h). Every index and offset the object holds is
 * checked against the buffer in elf_parse before anything else reads
 * through it; what follows relies on that.
 */
#include "apps/program_elf.h"
#include "kernel/lib/string.h"
#include "kernel/lib/printf.h"

#define EM_X86_64	62
#define ET_REL		1
#define ELF_PAGE	4096u
#define NT_GNU_BUILD_ID	3

enum {
	R_X86_64_NONE = 0, R_X86_64_64 = 1, R_X86_64_PC32 = 2, R_X86_64_PLT32 = 4,
	R_X86_64_32 = 10, R_X86_64_32S = 11, R_X86_64_PC64 = 24,
};

/* The System V x86-64 supplement's names, for the refusal. */
static const char *const reloc_names[] = {
	"NONE", "64", "PC32", "GOT32", "PLT32", "COPY", "GLOB_DAT", "JUMP_SLOT", "RELATIVE",
	"GOTPCREL", "32", "32S", "16", "PC16", "8", "PC8", "DTPMOD64", "DTPOFF64", "TPOFF64",
	"TLSGD", "TLSLD", "DTPOFF32", "GOTTPOFF", "TPOFF32", "PC64", "GOTOFF64", "GOTPC32",
	"GOT64", "GOTPCREL64", "GOTPC64", "GOTPLT64", "PLTOFF64", "SIZE32", "SIZE64",
	"GOTPC32_TLSDESC", "TLSDESC_CALL", "TLSDESC", "IRELATIVE", "RELATIVE64", "39", "40",
	"GOTPCRELX", "REX_GOTPCRELX",
};

/* What a program cannot have: nothing runs before main, nothing is
 * per-thread. */
static const char *const refused_sections[] = {
	".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors", ".tdata", ".tbss",
};

static bool in_buf(const struct elf_obj *o, u64 off, u64 size)
{
	return off <= o->len && size <= o->len - off;
}

static bool valid_shndx(const struct elf_obj *o, u16 i)
{
	return i < o->shnum || i == SHN_ABS || i == SHN_COMMON;
}

const char *elf_section_name(const struct elf_obj *o, u32 i)
{
	return i < o->shnum ? o->shstr + o->sh[i].name : "?";
}

const char *elf_symbol_name(const struct elf_obj *o, u32 i)
{
	const struct elf64_sym *s = &o->sym[i];

	if ((s->info & 0xf) == STT_SECTION && s->shndx < o->shnum)
		return elf_section_name(o, s->shndx);
	return o->str + s->name;
}

static const char *reloc_name(u32 type)
{
	return type < sizeof(reloc_names) / sizeof(reloc_names[0]) ? reloc_names[type] : "unknown";
}

/* A string table: in the buffer, ending in NUL. */
static bool strtab_ok(const struct elf_obj *o, u32 i)
{
	const struct elf64_shdr *s = &o->sh[i];

	return s->type == SHT_STRTAB && s->size && in_buf(o, s->offset, s->size) &&
	       o->buf[s->offset + s->size - 1] == 0;
}

/* A table of fixed-size entries: in the buffer, 8-byte aligned, whole. */
static bool table_ok(const struct elf_obj *o, const struct elf64_shdr *s, u64 entsize)
{
	return s->entsize == entsize && !(s->offset & 7) && s->size % entsize == 0 &&
	       in_buf(o, s->offset, s->size);
}

static int check_header(struct elf_obj *o, char *err, size_t n)
{
	const struct elf64_ehdr *eh = (const void *)o->buf;

	if (o->len < sizeof(*eh) || memcmp(eh->ident, "\177ELF", 4))
		return ksnprintf(err, n, "not an ELF object"), -1;
	if (eh->ident[4] != 2 || eh->ident[5] != 1 || eh->ident[6] != 1)
		return ksnprintf(err, n, "not a little-endian ELF64 object"), -1;
	if (eh->machine != EM_X86_64)
		return ksnprintf(err, n, "ELF machine %u, not x86-64 (%u)", eh->machine,
				 EM_X86_64), -1;
	if (eh->type != ET_REL)
		return ksnprintf(err, n, "ELF type %u, not a relocatable object (ET_REL: build "
				 "with -c, or link with ld -r)", eh->type), -1;
	if (eh->shentsize != sizeof(struct elf64_shdr) || !eh->shnum || eh->shnum >= SHN_LORESERVE ||
	    (eh->shoff & 7) || !in_buf(o, eh->shoff, (u64)eh->shnum * sizeof(struct elf64_shdr)))
		return ksnprintf(err, n, "the section header table is not in the object (%lu bytes; "
				 "truncated?)", (u64)o->len), -1;
	o->eh = eh;
	o->sh = (const void *)(o->buf + eh->shoff);
	o->shnum = eh->shnum;
	if (eh->shstrndx >= o->shnum || !strtab_ok(o, eh->shstrndx))
		return ksnprintf(err, n, "the section name table is broken"), -1;
	o->shstr = (const char *)o->buf + o->sh[eh->shstrndx].offset;
	o->shstrsz = o->sh[eh->shstrndx].size;
	return 0;
}

static int check_section(struct elf_obj *o, u32 i, char *err, size_t n)
{
	const struct elf64_shdr *s = &o->sh[i];

	if (s->name >= o->shstrsz)
		return ksnprintf(err, n, "section %u: its name is outside the name table", i), -1;
	const char *name = elf_section_name(o, i);
	if (s->type != SHT_NOBITS && !in_buf(o, s->offset, s->size))
		return ksnprintf(err, n, "section %s: bytes %#lx..%#lx are past the object's end "
				 "(%lu bytes; truncated?)", name, s->offset, s->offset + s->size,
				 (u64)o->len), -1;
	for (u32 k = 0; k < sizeof(refused_sections) / sizeof(refused_sections[0]); k++) {
		size_t l = strlen(refused_sections[k]);
		if (!strncmp(name, refused_sections[k], l) && (!name[l] || name[l] == '.'))
			goto refused;
	}
	if ((s->flags & SHF_TLS) || s->type == SHT_INIT_ARRAY || s->type == SHT_FINI_ARRAY ||
	    s->type == SHT_PREINIT_ARRAY)
		goto refused;
	if (s->type == SHT_REL && s->info < o->shnum && (o->sh[s->info].flags & SHF_ALLOC))
		return ksnprintf(err, n, "section %s: REL relocations (without addends) are not "
				 "supported", name), -1;
	if (s->type == SHT_SYMTAB) {
		if (o->sym)
			return ksnprintf(err, n, "more than one symbol table"), -1;
		if (!table_ok(o, s, sizeof(struct elf64_sym)) || s->link >= o->shnum ||
		    !strtab_ok(o, s->link))
			return ksnprintf(err, n, "section %s: a broken symbol table", name), -1;
		o->sym = (const void *)(o->buf + s->offset);
		o->nsym = s->size / sizeof(struct elf64_sym);
		o->str = (const char *)o->buf + o->sh[s->link].offset;
		o->strsz = o->sh[s->link].size;
	}
	return 0;
refused:
	return ksnprintf(err, n, "section %s: %s are not supported in a program (nothing runs "
			 "before main)", name, (s->flags & SHF_TLS) || name[2] == 't' ?
			 "thread-local variables" : "constructors and destructors"), -1;
}

static int check_symbols(const struct elf_obj *o, char *err, size_t n)
{
	for (u32 i = 0; i < o->nsym; i++) {
		const struct elf64_sym *s = &o->sym[i];
		if (s->name >= o->strsz || !valid_shndx(o, s->shndx))
			return ksnprintf(err, n, "symbol %u: its name or section index is out of "
					 "range", i), -1;
		if ((s->info & 0xf) == STT_TLS)
			return ksnprintf(err, n, "symbol '%s': thread-local variables are not "
					 "supported in a program", o->str + s->name), -1;
	}
	return 0;
}

static u32 reloc_width(u32 type)
{
	switch (type) {
	case R_X86_64_NONE:	return 0;
	case R_X86_64_64:
	case R_X86_64_PC64:	return 8;
	case R_X86_64_PC32:
	case R_X86_64_PLT32:
	case R_X86_64_32:
	case R_X86_64_32S:	return 4;
	default:		return ~0u;
	}
}

/* Every relocation of a placed section: a known type, a symbol that
 * exists, a place inside the section. */
static int check_relocs(const struct elf_obj *o, char *err, size_t n)
{
	for (u32 i = 0; i < o->shnum; i++) {
		const struct elf64_shdr *s = &o->sh[i];
		if (s->type != SHT_RELA)
			continue;
		if (!table_ok(o, s, sizeof(struct elf64_rela)) || s->info >= o->shnum ||
		    s->link >= o->shnum || o->sh[s->link].type != SHT_SYMTAB)
			return ksnprintf(err, n, "section %s: a broken relocation table",
					 elf_section_name(o, i)), -1;
		const struct elf64_shdr *t = &o->sh[s->info];
		if (elf_section_class(o, s->info) == ELF_NONE)
			continue;	/* debug information: not placed, not linked */
		const struct elf64_rela *r = (const void *)(o->buf + s->offset);
		for (u64 k = 0; k < s->size / sizeof(*r); k++) {
			u32 type = (u32)r[k].info, sym = r[k].info >> 32;
			u32 w = reloc_width(type);
			if (sym >= o->nsym)
				return ksnprintf(err, n, "relocation %lu in %s: symbol %u is out of "
						 "range", k, elf_section_name(o, i), sym), -1;
			if (w == ~0u)
				return ksnprintf(err, n, "relocation R_X86_64_%s in %s+%#lx (against "
						 "'%s'): not supported; build with `bareperf cflags`",
						 reloc_name(type), elf_section_name(o, s->info),
						 r[k].offset, elf_symbol_name(o, sym)), -1;
			if (t->type == SHT_NOBITS || r[k].offset > t->size || w > t->size - r[k].offset)
				return ksnprintf(err, n, "relocation %lu in %s: place %#lx is outside "
						 "%s", k, elf_section_name(o, i), r[k].offset,
						 elf_section_name(o, s->info)), -1;
		}
	}
	return 0;
}

int elf_parse(struct elf_obj *o, const void *buf, size_t len, char *err, size_t n)
{
	memset(o, 0, sizeof(*o));
	o->buf = buf;
	o->len = len;
	if (check_header(o, err, n))
		return -1;
	for (u32 i = 0; i < o->shnum; i++)
		if (check_section(o, i, err, n))
			return -1;
	if (!o->sym)
		return ksnprintf(err, n, "no symbol table (stripped?)"), -1;
	if (check_symbols(o, err, n) || check_relocs(o, err, n))
		return -1;
	return 0;
}

int elf_section_class(const struct elf_obj *o, u32 i)
{
	const struct elf64_shdr *s = &o->sh[i];

	if (!(s->flags & SHF_ALLOC) || s->type == SHT_NOTE ||
	    !strcmp(elf_section_name(o, i), ".bareperf.sdk"))
		return ELF_NONE;
	if (s->flags & SHF_EXECINSTR)
		return ELF_TEXT;
	if ((s->flags & SHF_WRITE) || s->type == SHT_NOBITS)
		return ELF_DATA;
	return ELF_RODATA;
}

static bool place(u64 *size, u64 align, u64 len, u64 *at)
{
	align = align ? align : 1;
	if (align > ELF_PAGE || (align & (align - 1)) || len > (1ul << 40))
		return false;
	*at = (*size + align - 1) & ~(align - 1);
	*size = *at + len;
	return true;
}

int elf_layout(const struct elf_obj *o, u64 *off, u64 *val, u64 size[ELF_CLASSES],
	       char *err, size_t n)
{
	memset(size, 0, ELF_CLASSES * sizeof(size[0]));
	memset(off, 0, o->shnum * sizeof(off[0]));
	/* Data's NOBITS after its PROGBITS: the bytes to copy come first. */
	for (int nobits = 0; nobits < 2; nobits++)
		for (u32 i = 0; i < o->shnum; i++) {
			const struct elf64_shdr *s = &o->sh[i];
			int c = elf_section_class(o, i);
			if (c == ELF_NONE || (s->type == SHT_NOBITS) != nobits)
				continue;
			if (!place(&size[c], s->addralign, s->size, &off[i]))
				return ksnprintf(err, n, "section %s: alignment %lu or size %lu is "
						 "too large", elf_section_name(o, i), s->addralign,
						 s->size), -1;
		}
	/* Common symbols (uninitialised globals under -fcommon): st_value is
	 * their alignment. */
	for (u32 i = 0; i < o->nsym; i++) {
		const struct elf64_sym *s = &o->sym[i];
		val[i] = 0;
		if (s->shndx == SHN_COMMON && !place(&size[ELF_DATA], s->value, s->size, &val[i]))
			return ksnprintf(err, n, "common symbol '%s': alignment %lu or size %lu is "
					 "too large", o->str + s->name, s->value, s->size), -1;
	}
	return 0;
}

static bool unresolved(const struct elf64_sym *s, const char *name, u64 val)
{
	return s->shndx == SHN_UNDEF && name[0] && !val && (s->info >> 4) != 2 /* weak */;
}

/* Every symbol's value; the undefined ones from resolve, all those it
 * does not know named in err. */
static int link_symbols(const struct elf_obj *o, const u64 base[ELF_CLASSES], const u64 *addr,
			u64 *val, elf_resolve_fn resolve, char *err, size_t n)
{
	u32 missing = 0;

	for (u32 i = 1; i < o->nsym; i++) {
		const struct elf64_sym *s = &o->sym[i];
		const char *name = o->str + s->name;
		if (s->shndx == SHN_ABS)
			val[i] = s->value;
		else if (s->shndx == SHN_COMMON)
			val[i] += base[ELF_DATA];
		else if (s->shndx != SHN_UNDEF)
			val[i] = elf_section_class(o, s->shndx) == ELF_NONE ? 0 : addr[s->shndx] + s->value;
		else if (name[0])
			val[i] = resolve(name);
		missing += unresolved(s, name, val[i]);
	}
	if (!missing)
		return 0;
	size_t at = ksnprintf(err, n, "undefined symbol%s", missing > 1 ? "s" : "");
	for (u32 i = 1, k = 0; i < o->nsym && at < n; i++)
		if (unresolved(&o->sym[i], o->str + o->sym[i].name, val[i]))
			at += ksnprintf(err + at, n - at, "%s '%s'", k++ ? "," : "",
					o->str + o->sym[i].name);
	if (at < n)
		ksnprintf(err + at, n - at, ": a program may call only what include/bareperf.h "
			  "declares");
	return -1;
}

static int apply(const struct elf_obj *o, u32 rsec, const struct elf64_rela *r, u64 s,
		 u64 p, char *err, size_t n)
{
	u32 type = (u32)r->info;
	u64 v = s + r->addend;
	u32 v32;

	switch (type) {
	case R_X86_64_NONE:
		return 0;
	case R_X86_64_64:
		memcpy((void *)p, &v, 8);
		return 0;
	case R_X86_64_PC64:
		v -= p;
		memcpy((void *)p, &v, 8);
		return 0;
	case R_X86_64_PC32:
	case R_X86_64_PLT32:
		v -= p;
		/* fall through */
	case R_X86_64_32S:
		if ((s64)v != (s32)v)
			break;
		v32 = (u32)v;
		memcpy((void *)p, &v32, 4);
		return 0;
	case R_X86_64_32:
		if (v >> 32)
			break;
		v32 = (u32)v;
		memcpy((void *)p, &v32, 4);
		return 0;
	}
	const struct elf64_shdr *rs = &o->sh[rsec];
	return ksnprintf(err, n, "relocation R_X86_64_%s in %s+%#lx (against '%s'): %#lx does "
			 "not fit 32 bits", reloc_name(type), elf_section_name(o, rs->info),
			 r->offset, elf_symbol_name(o, r->info >> 32), v), -1;
}

void elf_place(const struct elf_obj *o, const u64 base[ELF_CLASSES], u64 *addr)
{
	for (u32 i = 0; i < o->shnum; i++) {
		int c = elf_section_class(o, i);
		addr[i] = c == ELF_NONE ? 0 : base[c] + addr[i];
	}
}

int elf_link(const struct elf_obj *o, const u64 base[ELF_CLASSES], const u64 *addr, u64 *val,
	     elf_resolve_fn resolve, char *err, size_t n)
{
	if (link_symbols(o, base, addr, val, resolve, err, n))
		return -1;
	for (u32 i = 0; i < o->shnum; i++) {
		const struct elf64_shdr *s = &o->sh[i];
		if (s->type != SHT_RELA || elf_section_class(o, s->info) == ELF_NONE)
			continue;
		const struct elf64_rela *r = (const void *)(o->buf + s->offset);
		for (u64 k = 0; k < s->size / sizeof(*r); k++)
			if (apply(o, i, &r[k], val[r[k].info >> 32], addr[s->info] + r[k].offset,
				  err, n))
				return -1;
	}
	return 0;
}

u32 elf_build_id(const struct elf_obj *o, u8 *id, u32 max)
{
	for (u32 i = 0; i < o->shnum; i++) {
		const struct elf64_shdr *s = &o->sh[i];
		if (s->type != SHT_NOTE || strcmp(elf_section_name(o, i), ".note.gnu.build-id") ||
		    s->size < 16)
			continue;
		u32 h[3];
		memcpy(h, o->buf + s->offset, sizeof(h));	/* namesz, descsz, type */
		u64 desc = 12 + (((u64)h[0] + 3) & ~3ul);
		if (h[0] != 4 || h[2] != NT_GNU_BUILD_ID || memcmp(o->buf + s->offset + 12, "GNU", 4) ||
		    desc > s->size || h[1] > s->size - desc)
			continue;
		u32 len = h[1] < max ? h[1] : max;
		memcpy(id, o->buf + s->offset + desc, len);
		return len;
	}
	return 0;
}

u32 elf_sdk_version(const struct elf_obj *o)
{
	u32 v = 0, w;

	for (u32 i = 0; i < o->shnum; i++) {
		const struct elf64_shdr *s = &o->sh[i];
		if (s->type != SHT_PROGBITS || strcmp(elf_section_name(o, i), ".bareperf.sdk"))
			continue;
		for (u64 k = 0; k + 4 <= s->size; k += 4) {
			memcpy(&w, o->buf + s->offset + k, 4);
			v = w > v ? w : v;
		}
	}
	return v;
}

u32 elf_find_global(const struct elf_obj *o, const char *name)
{
	for (u32 i = 1; i < o->nsym; i++) {
		const struct elf64_sym *s = &o->sym[i];
		if ((s->info >> 4) != STB_LOCAL && s->shndx != SHN_UNDEF && s->shndx < o->shnum &&
		    elf_section_class(o, s->shndx) != ELF_NONE && !strcmp(o->str + s->name, name))
			return i;
	}
	return 0;
}
