/*
 * tools/util/symbol.c — the symbols of a kernel.elf (tools/util/symbol.h): function
 * symbols from .symtab, sorted for binary search; source lines from the
 * DWARF line tables through libdw; the GNU build-id that ties the file to
 * a capture. A program's relocatable object is read the same way, each
 * section at the address the kernel placed it: symbols at that address
 * plus st_value, lines through libdwfl, which applies the object's DWARF
 * relocations for that layout. elfutils: libelf (gelf_*), libdw, libdwfl.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/util/symbol.h"
#include "tools/util/util.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

#define BUILD_ID_MAX	64
#define MAX_SEGMENTS	16

struct sym {
	uint64_t start, size;
	const char *name;
	uint8_t rank;			/* lower wins among symbols at one address */
};

struct symtab {
	char path[4096];
	int fd;
	Elf *elf;
	Dwarf *dw;			/* NULL: no DWARF (lines unknown) */
	struct sym *syms;
	size_t nsyms;
	uint8_t build_id[BUILD_ID_MAX];
	size_t build_id_len;
	struct { uint64_t vaddr, size, off, filesz; } seg[MAX_SEGMENTS];
	size_t nseg;
	char *names;			/* symtab_new: the names, back to back */
	/* A program (ET_REL): its name, range and where its sections are. */
	bool rel;
	char prog_name[32];
	uint64_t prog_start, prog_end;
	struct symtab_section *secs;
	size_t nsecs;
	Dwfl *dwfl;			/* owns dw when not NULL */
	/* A kernel: the programs loaded into it, owned. */
	struct symtab **progs;
	size_t nprogs;
	uint64_t isr_frame_return;	/* a kernel's (kernel/isr.asm); 0: none */
};

char *symtab_hex(const uint8_t *id, size_t n, char *buf, size_t bufsize)
{
	size_t i;

	for (i = 0; i < n && 2 * i + 2 < bufsize; i++)
		snprintf(buf + 2 * i, 3, "%02x", id[i]);
	buf[bufsize ? 2 * i : 0] = 0;
	return buf;
}

/* The NT_GNU_BUILD_ID note of e, from its SHT_NOTE sections. */
static size_t find_build_id(Elf *e, uint8_t *id, size_t cap)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		if (!(d = elf_getdata(scn, NULL)))
			continue;
		size_t off = 0, name_off, desc_off;
		GElf_Nhdr nh;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4)) {
				size_t n = nh.n_descsz < cap ? nh.n_descsz : cap;
				memcpy(id, (const uint8_t *)d->d_buf + desc_off, n);
				return n;
			}
		}
	}
	return 0;
}

static int open_elf(const char *path, int *fd, Elf **e, char *err, size_t errlen)
{
	elf_version(EV_CURRENT);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	*e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*e || elf_kind(*e) != ELF_K_ELF) {
		if (*e)
			elf_end(*e);
		close(*fd);
		return fail(err, errlen, "%s: not an ELF file", path);
	}
	return 0;
}

int symtab_read_build_id(const char *path, uint8_t *id, size_t cap, char *err, size_t errlen)
{
	int fd;
	Elf *e;
	size_t n;

	if (open_elf(path, &fd, &e, err, errlen))
		return -1;
	n = find_build_id(e, id, cap);
	elf_end(e);
	close(fd);
	return (int)n;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* One symbol per address, the best ranked; unsized ones end at the next symbol. */
static void sort_syms(struct symtab *t)
{
	size_t w = 0;

	if (t->nsyms)
		qsort(t->syms, t->nsyms, sizeof(*t->syms), cmp_sym);
	for (size_t i = 0; i < t->nsyms; i++) {
		if (w && t->syms[w - 1].start == t->syms[i].start)
			continue;
		t->syms[w++] = t->syms[i];
	}
	t->nsyms = w;
	for (size_t i = 0; i + 1 < t->nsyms; i++) {
		struct sym *s = &t->syms[i];
		if (s->rank & 2 && s->start + s->size > t->syms[i + 1].start)
			s->size = t->syms[i + 1].start - s->start;
	}
}

/*
 * Where section shndx starts: its sh_addr in a linked file (*addr as
 * given), the address the kernel placed it at in a program's object;
 * false if the program's run did not place it.
 */
static bool section_addr(const struct symtab *t, size_t shndx, uint64_t *addr)
{
	if (!t->rel)
		return true;
	for (size_t i = 0; i < t->nsecs; i++)
		if (t->secs[i].shndx == shndx) {
			*addr = t->secs[i].addr;
			return true;
		}
	return false;
}

/*
 * Code symbols: STT_FUNC, and STT_NOTYPE labels in executable sections
 * (the NASM entry code and interrupt stubs have no type and no size).
 * At one address the sized FUNC wins, global before local; a symbol
 * without a size reaches to the next symbol or the end of its section.
 */
static int load_syms(struct symtab *t, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	while ((scn = elf_nextscn(t->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		if (!(d = elf_getdata(scn, NULL)))
			continue;
		size_t n = sh.sh_size / sh.sh_entsize;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			GElf_Shdr tsh;
			Elf_Scn *target;
			const char *name;
			int type;
			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF ||
			    s.st_shndx >= SHN_LORESERVE)
				continue;
			type = GELF_ST_TYPE(s.st_info);
			if (type != STT_FUNC && type != STT_NOTYPE)
				continue;
			target = elf_getscn(t->elf, s.st_shndx);
			if (!target || !gelf_getshdr(target, &tsh) || !(tsh.sh_flags & SHF_EXECINSTR) ||
			    !section_addr(t, s.st_shndx, &tsh.sh_addr))
				continue;
			name = elf_strptr(t->elf, sh.sh_link, s.st_name);
			if (!name || !*name || name[0] == '$' || !strncmp(name, ".L", 2))
				continue;
			if (t->nsyms == cap) {
				size_t ncap = cap ? 2 * cap : 1024;
				struct sym *q = realloc(t->syms, ncap * sizeof(*q));
				if (!q)
					return fail(err, errlen, "%s: out of memory", t->path);
				t->syms = q;
				cap = ncap;
			}
			uint64_t sec_end = tsh.sh_addr + tsh.sh_size;
			if (t->rel)
				s.st_value += tsh.sh_addr;
			t->syms[t->nsyms++] = (struct sym){
				.start = s.st_value,
				/* unsized: bounded by the section now, by the next symbol below */
				.size = s.st_size ? s.st_size : (s.st_value < sec_end ? sec_end - s.st_value : 0),
				.name = name,
				.rank = (uint8_t)((type == STT_FUNC ? 0 : 4) + (s.st_size ? 0 : 2) +
						  (GELF_ST_BIND(s.st_info) == STB_LOCAL ? 1 : 0)),
			};
		}
	}
	sort_syms(t);
	return 0;
}

static void load_segments(struct symtab *t)
{
	size_t n;

	if (elf_getphdrnum(t->elf, &n))
		return;
	for (size_t i = 0; i < n && t->nseg < MAX_SEGMENTS; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(t->elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			t->seg[t->nseg].vaddr = ph.p_vaddr;
			t->seg[t->nseg].size = ph.p_memsz;
			t->seg[t->nseg].off = ph.p_offset;
			t->seg[t->nseg].filesz = ph.p_filesz;
			t->nseg++;
		}
	}
}

/*
 * Open path into t and check its build-id against the capture's (when
 * build_id is not NULL); whose: "kernel", "program NAME" for the message.
 */
static int open_checked(struct symtab *t, const char *path, const uint8_t *build_id,
			size_t build_id_len, const char *whose, char *err, size_t errlen)
{
	char want[2 * BUILD_ID_MAX + 1], have[2 * BUILD_ID_MAX + 1];
	size_t n;

	snprintf(t->path, sizeof(t->path), "%s", path);
	if (open_elf(path, &t->fd, &t->elf, err, errlen)) {
		t->fd = -1;
		t->elf = NULL;
		return -1;
	}
	t->build_id_len = find_build_id(t->elf, t->build_id, sizeof(t->build_id));
	if (!build_id || !build_id_len)
		return 0;
	n = build_id_len < t->build_id_len ? build_id_len : t->build_id_len;
	if (!t->build_id_len)
		return fail(err, errlen, "%s does not match the capture: it has no build-id, the "
			    "capture's %s had %s", path, whose,
			    symtab_hex(build_id, build_id_len, want, sizeof(want)));
	if (!n || memcmp(build_id, t->build_id, n))
		return fail(err, errlen, "%s does not match the capture: build-id %s vs %s", path,
			    symtab_hex(t->build_id, t->build_id_len, have, sizeof(have)),
			    symtab_hex(build_id, build_id_len, want, sizeof(want)));
	return 0;
}

int symtab_load(struct symtab **out, const char *path, const uint8_t *build_id,
		size_t build_id_len, char *err, size_t errlen)
{
	struct symtab *t = calloc(1, sizeof(*t));

	*out = NULL;
	if (!t)
		return fail(err, errlen, "%s: out of memory", path);
	if (open_checked(t, path, build_id, build_id_len, "kernel", err, errlen) ||
	    load_syms(t, err, errlen)) {
		symtab_free(t);
		return -1;
	}
	load_segments(t);
	t->dw = dwarf_begin_elf(t->elf, DWARF_C_READ, NULL);
	symtab_value(t, "isr_frame_return", &t->isr_frame_return);	/* 0 if none */
	*out = t;
	return 0;
}

/* ---- a program's relocatable object ----------------------------------- */

/* libdwfl asks for the module's file: the object t was read from. */
static int prog_find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
			 char **file_name, Elf **elfp)
{
	const struct symtab *t = *userdata;

	(void)mod, (void)name, (void)base;
	*elfp = NULL;
	*file_name = strdup(t->path);
	return open(t->path, O_RDONLY | O_CLOEXEC);
}

/* ... and, to relocate its DWARF, where each section is: as recorded;
 * -1 (not loaded) for one the run did not place. */
static int prog_section_address(Dwfl_Module *mod, void **userdata, const char *modname,
				Dwarf_Addr base, const char *secname, GElf_Word shndx,
				const GElf_Shdr *sh, Dwarf_Addr *addr)
{
	const struct symtab *t = *userdata;
	uint64_t a = sh->sh_addr;

	(void)mod, (void)modname, (void)base, (void)secname;
	*addr = section_addr(t, shndx, &a) ? a : (Dwarf_Addr)-1;
	return 0;
}

static char *prog_debuginfo_path;

static const Dwfl_Callbacks prog_callbacks = {
	.find_elf = prog_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = prog_section_address,
	.debuginfo_path = &prog_debuginfo_path,
};

/* The object's DWARF, relocated for the recorded layout; NULL if none. */
static Dwarf *prog_dwarf(struct symtab *t)
{
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	void **ud;

	if (t->prog_end <= t->prog_start || !(t->dwfl = dwfl_begin(&prog_callbacks)))
		return NULL;
	mod = dwfl_report_module(t->dwfl, t->prog_name, t->prog_start, t->prog_end);
	if (!mod || dwfl_report_end(t->dwfl, NULL, NULL))
		return NULL;
	dwfl_module_info(mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
	*ud = t;
	return dwfl_module_getdwarf(mod, &bias);
}

static int program_init(struct symtab *t, const struct symtab_program *p)
{
	snprintf(t->prog_name, sizeof(t->prog_name), "%s", p->name);
	t->rel = true;
	t->prog_start = p->start;
	t->prog_end = p->end;
	t->secs = malloc((p->nsecs ? p->nsecs : 1) * sizeof(*t->secs));
	if (!t->secs)
		return -1;
	memcpy(t->secs, p->secs, p->nsecs * sizeof(*t->secs));
	t->nsecs = p->nsecs;
	return 0;
}

int symtab_load_program(struct symtab **out, const char *path, const struct symtab_program *p,
			char *err, size_t errlen)
{
	struct symtab *t = calloc(1, sizeof(*t));
	char whose[64];
	GElf_Ehdr eh;

	*out = NULL;
	if (!t)
		return fail(err, errlen, "%s: out of memory", path);
	t->fd = -1;
	snprintf(whose, sizeof(whose), "program %s", p->name);
	if (program_init(t, p)) {
		symtab_free(t);
		return fail(err, errlen, "%s: out of memory", path);
	}
	if (open_checked(t, path, p->build_id, p->build_id_len, whose, err, errlen)) {
		symtab_free(t);
		return -1;
	}
	if (!gelf_getehdr(t->elf, &eh) || eh.e_type != ET_REL) {
		fail(err, errlen, "%s: not a relocatable object", path);
		symtab_free(t);
		return -1;
	}
	if (load_syms(t, err, errlen)) {
		symtab_free(t);
		return -1;
	}
	t->dw = prog_dwarf(t);
	*out = t;
	return 0;
}

struct symtab *symtab_new_program(const struct symtab_program *p)
{
	char name[48];
	struct symbol whole;
	struct symtab *t;

	snprintf(name, sizeof(name), "[%s]", p->name);
	whole = (struct symbol){ name, p->start, p->end - p->start };
	t = symtab_new(&whole, 1);
	if (t && program_init(t, p)) {
		symtab_free(t);
		return NULL;
	}
	return t;
}

int symtab_add_program(struct symtab *kernel, struct symtab *prog)
{
	struct symtab **q = realloc(kernel->progs, (kernel->nprogs + 1) * sizeof(*q));

	if (!q)
		return -1;
	kernel->progs = q;
	kernel->progs[kernel->nprogs++] = prog;
	return 0;
}

size_t symtab_program_count(const struct symtab *t)
{
	return t ? t->nprogs : 0;
}

/* The table that names addr: the program's holding it (the last added of
 * those whose ranges overlap), else t. */
static const struct symtab *table_for(const struct symtab *t, uint64_t addr)
{
	for (size_t i = t ? t->nprogs : 0; i-- > 0;)
		if (addr >= t->progs[i]->prog_start && addr < t->progs[i]->prog_end)
			return t->progs[i];
	return t;
}

const char *symtab_dso(const struct symtab *t, uint64_t addr)
{
	const struct symtab *p = table_for(t, addr);

	return p && p->rel ? p->prog_name : NULL;
}

/* The 8 bytes at vaddr in an allocated section of t's file. */
static bool read_u64(const struct symtab *t, uint64_t vaddr, uint64_t *out)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(t->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
		    vaddr - sh.sh_addr + 8 > sh.sh_size)
			continue;
		if (!(d = elf_getdata(scn, NULL)) || !d->d_buf || vaddr - sh.sh_addr + 8 > d->d_size)
			return false;
		memcpy(out, (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr), 8);
		return true;
	}
	return false;
}

/*
 * What the kernel's loader links a program's undefined symbol name to:
 * the function the SDK exports under that name (apps/sdk.h: SDK_EXPORT's
 * struct sdk_export { name, addr } at __sdk_export_NAME), else the
 * kernel's own symbol of that name.
 */
static bool kernel_value(const struct symtab *kernel, const char *name, uint64_t *v)
{
	char exp[256];
	uint64_t at;

	snprintf(exp, sizeof(exp), "__sdk_export_%s", name);
	if (symtab_value(kernel, exp, &at) && read_u64(kernel, at + 8, v))
		return true;
	return symtab_value(kernel, name, v);
}

/* The undefined symbols of a program's object, as "NAME = VALUE;" lines with
 * the kernel's values; -1 if the kernel lacks one that is not weak. */
static int ldscript_symbols(const struct symtab *p, const struct symtab *kernel, FILE *f,
			    char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(p->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *name;
			uint64_t v;
			if (!gelf_getsym(d, (int)i, &s) || s.st_shndx != SHN_UNDEF ||
			    !(name = elf_strptr(p->elf, sh.sh_link, s.st_name)) || !*name)
				continue;
			if (kernel_value(kernel, name, &v))
				fprintf(f, "\"%s\" = 0x%" PRIx64 ";\n", name, v);
			else if (GELF_ST_BIND(s.st_info) != STB_WEAK)
				return fail(err, errlen, "%s: %s is not in the kernel's symbols",
					    p->path, name);
		}
	}
	return 0;
}

int symtab_program_ldscript(const struct symtab *p, const struct symtab *kernel, FILE *f,
			    char *err, size_t errlen)
{
	Elf_Scn *scn = NULL;
	size_t shstr;
	uint64_t rest = (p->prog_end + 0xfff) & ~(uint64_t)0xfff;

	if (!p->rel || !p->elf || elf_getshdrstrndx(p->elf, &shstr))
		return fail(err, errlen, "%s: not a program's object", p->path);
	fprintf(f, "SECTIONS\n{\n");
	/* the placed sections at their addresses, then the others past the end */
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			fprintf(f, "\t. = 0x%" PRIx64 ";\n", rest);
		while ((scn = elf_nextscn(p->elf, scn))) {
			GElf_Shdr sh;
			const char *name;
			uint64_t at = 0;
			if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
			    !(name = elf_strptr(p->elf, shstr, sh.sh_name)) ||
			    !strcmp(name, ".note.gnu.build-id"))
				continue;
			bool placed = section_addr(p, elf_ndxscn(scn), &at);
			if (placed && !pass)
				fprintf(f, "\t%s 0x%" PRIx64 " : { *(%s) }\n", name, at, name);
			else if (!placed && pass)
				fprintf(f, "\t%s : { *(%s) }\n", name, name);
		}
	}
	fprintf(f, "\t.note.gnu.build-id : { *(.note.gnu.build-id) }\n}\n");
	return ldscript_symbols(p, kernel, f, err, errlen);
}

bool symtab_is_program_object(const struct symtab *p)
{
	return p->rel && p->elf;
}

const struct symtab *symtab_program_at(const struct symtab *t, size_t i)
{
	return t && i < t->nprogs ? t->progs[i] : NULL;
}

void symtab_program_range(const struct symtab *p, const char **name, uint64_t *start,
			  uint64_t *end)
{
	*name = p->prog_name;
	*start = p->prog_start;
	*end = p->prog_end;
}

void symtab_free(struct symtab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nprogs; i++)
		symtab_free(t->progs[i]);
	free(t->progs);
	if (t->dwfl)
		dwfl_end(t->dwfl);
	else if (t->dw)
		dwarf_end(t->dw);
	if (t->elf)
		elf_end(t->elf);
	if (t->fd >= 0)
		close(t->fd);
	free(t->syms);
	free(t->names);
	free(t->secs);
	free(t);
}

bool symtab_value(const struct symtab *t, const char *name, uint64_t *value)
{
	Elf_Scn *scn = NULL;

	while (t && t->elf && (scn = elf_nextscn(t->elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;
			if (gelf_getsym(d, (int)i, &s) && s.st_shndx != SHN_UNDEF &&
			    (n = elf_strptr(t->elf, sh.sh_link, s.st_name)) && !strcmp(n, name)) {
				*value = s.st_value;
				return true;
			}
		}
	}
	return false;
}

uint64_t symtab_chain_addr(const struct symtab *t, size_t i, uint64_t prev, uint64_t addr)
{
	if (!i || (t && t->isr_frame_return && prev == t->isr_frame_return))
		return addr;
	return addr - 1;
}

struct symbol symtab_lookup(const struct symtab *t, uint64_t addr)
{
	struct symbol r = { NULL, 0, 0 };
	size_t lo, hi;

	t = table_for(t, addr);
	lo = 0;
	hi = t ? t->nsyms : 0;

	/* The last symbol starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo) {
		const struct sym *s = &t->syms[lo - 1];
		if (addr - s->start < s->size || (addr == s->start)) {
			r.name = s->name;
			r.start = s->start;
			r.size = s->size;
		}
	}
	return r;
}

bool symtab_line(const struct symtab *t, uint64_t addr, const char **file, int *line)
{
	Dwarf_Die cu;
	Dwarf_Line *l;
	const char *f;

	t = table_for(t, addr);
	if (!t || !t->dw || !dwarf_addrdie(t->dw, addr, &cu))
		return false;
	l = dwarf_getsrc_die(&cu, addr);
	if (!l || !(f = dwarf_linesrc(l, NULL, NULL)) || dwarf_lineno(l, line))
		return false;
	*file = f;
	return true;
}

size_t symtab_exec_segments(const struct symtab *t, uint64_t *vaddr, uint64_t *size,
			    uint64_t *file_off, size_t max)
{
	size_t n = t->nseg < max ? t->nseg : max;

	for (size_t i = 0; i < n; i++) {
		vaddr[i] = t->seg[i].vaddr;
		size[i] = t->seg[i].size;
		file_off[i] = t->seg[i].off;
	}
	return n;
}

const uint8_t *symtab_build_id(const struct symtab *t, size_t *len)
{
	*len = t->build_id_len;
	return t->build_id_len ? t->build_id : NULL;
}

const char *symtab_path(const struct symtab *t)
{
	return t->path;
}

size_t symtab_count(const struct symtab *t)
{
	return t->nsyms;
}

struct symbol symtab_at(const struct symtab *t, size_t i)
{
	struct symbol r = { NULL, 0, 0 };

	if (i < t->nsyms) {
		r.name = t->syms[i].name;
		r.start = t->syms[i].start;
		r.size = t->syms[i].size;
	}
	return r;
}

bool symtab_find(const struct symtab *t, const char *name, struct symbol *out)
{
	for (size_t i = 0; t && i < t->nsyms; i++)
		if (!strcmp(t->syms[i].name, name)) {
			*out = symtab_at(t, i);
			return true;
		}
	return false;
}

const uint8_t *symtab_code(const struct symtab *t, uint64_t addr, size_t *avail)
{
	size_t fsize = 0;
	const uint8_t *file = t && t->elf ? (const uint8_t *)elf_rawfile(t->elf, &fsize) : NULL;

	*avail = 0;
	for (size_t i = 0; file && i < t->nseg; i++) {
		uint64_t off = addr - t->seg[i].vaddr;
		if (addr < t->seg[i].vaddr || off >= t->seg[i].filesz ||
		    t->seg[i].off > fsize || t->seg[i].filesz > fsize - t->seg[i].off)
			continue;
		*avail = t->seg[i].filesz - off;
		return file + t->seg[i].off + off;
	}
	return NULL;
}

struct symtab *symtab_new(const struct symbol *syms, size_t n)
{
	struct symtab *t = calloc(1, sizeof(*t));
	size_t bytes = 0, at = 0;

	if (!t)
		return NULL;
	t->fd = -1;
	for (size_t i = 0; i < n; i++)
		bytes += strlen(syms[i].name) + 1;
	t->syms = calloc(n ? n : 1, sizeof(*t->syms));
	t->names = malloc(bytes ? bytes : 1);
	if (!t->syms || !t->names) {
		symtab_free(t);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(syms[i].name) + 1;
		memcpy(t->names + at, syms[i].name, len);
		t->syms[i] = (struct sym){ syms[i].start, syms[i].size, t->names + at,
					   (uint8_t)(syms[i].size ? 0 : 2) };
		at += len;
	}
	t->nsyms = n;
	sort_syms(t);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(syms[i].name, "isr_frame_return"))
			t->isr_frame_return = syms[i].start;
	return t;
}

/* ---- an ELF file's sections and strings ------------------------------- */

struct elf_file {
	int fd;
	Elf *e;
	size_t shstr;			/* the section name table's index */
};

int elf_file_open(struct elf_file **out, const char *path, char *err, size_t errlen)
{
	struct elf_file *f = calloc(1, sizeof(*f));

	*out = NULL;
	if (!f)
		return fail(err, errlen, "%s: out of memory", path);
	elf_version(EV_CURRENT);
	if ((f->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fail(err, errlen, "%s: %s", path, strerror(errno));
		free(f);
		return -1;
	}
	f->e = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (!f->e || elf_kind(f->e) != ELF_K_ELF || gelf_getclass(f->e) != ELFCLASS64 ||
	    elf_getshdrstrndx(f->e, &f->shstr)) {
		elf_file_close(f);
		return fail(err, errlen, "%s: not a 64-bit ELF file", path);
	}
	*out = f;
	return 0;
}

void elf_file_close(struct elf_file *f)
{
	if (!f)
		return;
	if (f->e)
		elf_end(f->e);
	close(f->fd);
	free(f);
}

bool elf_file_section(const struct elf_file *f, const char *name, const void **data, size_t *len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(f->e, scn))) {
		GElf_Shdr sh;
		const char *sn;
		if (!gelf_getshdr(scn, &sh) || !(sn = elf_strptr(f->e, f->shstr, sh.sh_name)) ||
		    strcmp(sn, name))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		*data = d && d->d_buf ? d->d_buf : NULL;
		*len = d && d->d_buf ? d->d_size : 0;
		return true;
	}
	return false;
}

const char *elf_file_string(const struct elf_file *f, uint64_t vaddr)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(f->e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
		    vaddr >= sh.sh_addr + sh.sh_size)
			continue;
		if (!(d = elf_getdata(scn, NULL)) || !d->d_buf)
			return NULL;
		const char *s = (const char *)d->d_buf + (vaddr - sh.sh_addr);
		size_t room = d->d_size - (vaddr - sh.sh_addr);
		return memchr(s, 0, room) ? s : NULL;
	}
	return NULL;
}
