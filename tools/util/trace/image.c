/*
 * tools/util/trace/image.c — the code image the decoders walk (trace.h):
 * kernel.elf's executable PT_LOAD bytes, its function symbols and its
 * build-id (libelf), or an image built in memory for tests and fuzzing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "tools/util/trace/internal.h"

static int sym_cmp(const void *a, const void *b)
{
	const struct trace_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* Prefer the one with a size, then by name for stability. */
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void image_finish_syms(struct trace_image *im)
{
	size_t j = 0;

	qsort(im->syms, im->nsyms, sizeof(*im->syms), sym_cmp);
	for (size_t i = 0; i < im->nsyms; i++)
		if (!j || im->syms[j - 1].start != im->syms[i].start)
			im->syms[j++] = im->syms[i];
	im->nsyms = j;
}

static bool image_cs_open(struct trace_image *im)
{
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &im->cs) != CS_ERR_OK)
		return false;
	cs_option(im->cs, CS_OPT_DETAIL, CS_OPT_ON);
	im->csi = cs_malloc(im->cs);
	im->cs_ok = im->csi != NULL;
	return im->cs_ok;
}

struct trace_image *trace_image_mem(uint64_t base, const uint8_t *code, size_t len,
				    const struct trace_sym *syms, size_t nsyms)
{
	struct trace_image *im = calloc(1, sizeof(*im));

	if (!im)
		return NULL;
	im->segs = calloc(1, sizeof(*im->segs));
	im->segs[0].vaddr = base;
	im->segs[0].len = len;
	im->segs[0].bytes = xrealloc(NULL, len);
	memcpy(im->segs[0].bytes, code, len);
	im->nsegs = 1;
	im->syms = xrealloc(NULL, (nsyms ? nsyms : 1) * sizeof(*im->syms));
	im->names = xrealloc(NULL, (nsyms ? nsyms : 1) * sizeof(char *));
	for (size_t i = 0; i < nsyms; i++) {
		im->names[i] = strdup(syms[i].name);
		im->syms[i] = syms[i];
		im->syms[i].name = im->names[i];
	}
	im->nnames = im->nsyms = nsyms;
	image_finish_syms(im);
	if (!image_cs_open(im)) {
		trace_image_free(im);
		return NULL;
	}
	return im;
}

static void read_build_id(struct trace_image *im, Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t off = 0, noff, doff;
		GElf_Nhdr nh;
		while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((char *)d->d_buf + noff, "GNU", 4)) {
				im->build_id_len = nh.n_descsz < 20 ? nh.n_descsz : 20;
				memcpy(im->build_id, (char *)d->d_buf + doff, im->build_id_len);
				return;
			}
		}
	}
}

int trace_image_load(struct trace_image **out, const char *path, char *err, size_t n)
{
	struct trace_image *im;
	size_t nph = 0, cap_syms = 0;
	Elf *elf = NULL;
	int fd, rc = -1;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		seterr(err, n, "libelf: %s", elf_errmsg(-1));
		return -1;
	}
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		seterr(err, n, "%s: %s", path, strerror(errno));
		return -1;
	}
	im = calloc(1, sizeof(*im));
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!im || !elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph)) {
		seterr(err, n, "%s: not an ELF file (%s)", path, elf_errmsg(-1));
		goto out;
	}
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    !ph.p_filesz)
			continue;
		struct seg s = { ph.p_vaddr, ph.p_filesz, xrealloc(NULL, ph.p_filesz) };
		if (pread(fd, s.bytes, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz) {
			free(s.bytes);
			seterr(err, n, "%s: cannot read a code segment", path);
			goto out;
		}
		im->segs = xrealloc(im->segs, (im->nsegs + 1) * sizeof(*im->segs));
		im->segs[im->nsegs++] = s;
	}
	if (!im->nsegs) {
		seterr(err, n, "%s: no executable PT_LOAD segment", path);
		goto out;
	}
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t cnt = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; d && i < cnt; i++) {
			GElf_Sym sym;
			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			int type = GELF_ST_TYPE(sym.st_info);
			if ((type != STT_FUNC && type != STT_NOTYPE) || sym.st_shndx == SHN_UNDEF ||
			    sym.st_shndx >= SHN_LORESERVE)
				continue;
			const char *name = elf_strptr(elf, sh.sh_link, sym.st_name);
			size_t avail;
			if (!name || !*name || name[0] == '.' || !trace_image_bytes(im, sym.st_value, &avail))
				continue;
			if (im->nsyms == cap_syms) {
				cap_syms = cap_syms ? 2 * cap_syms : 1024;
				im->syms = xrealloc(im->syms, cap_syms * sizeof(*im->syms));
				im->names = xrealloc(im->names, cap_syms * sizeof(char *));
			}
			im->names[im->nsyms] = strdup(name);
			im->syms[im->nsyms] = (struct trace_sym){ im->names[im->nsyms], sym.st_value,
								  sym.st_size };
			im->nsyms++;
		}
	}
	im->nnames = im->nsyms;
	image_finish_syms(im);
	read_build_id(im, elf);
	if (!image_cs_open(im)) {
		seterr(err, n, "capstone: cannot open an x86-64 handle");
		goto out;
	}
	*out = im;
	im = NULL;
	rc = 0;
out:
	if (elf)
		elf_end(elf);
	close(fd);
	if (im)
		trace_image_free(im);
	return rc;
}

void trace_image_free(struct trace_image *im)
{
	if (!im)
		return;
	for (size_t i = 0; i < im->nsegs; i++)
		free(im->segs[i].bytes);
	free(im->segs);
	for (size_t i = 0; i < im->nnames; i++)
		free(im->names[i]);
	free(im->names);
	free(im->syms);
	for (size_t i = 0; i < im->nchunks; i++)
		free(im->chunks[i]);
	free(im->chunks);
	free(im->tab);
	if (im->csi)
		cs_free(im->csi, 1);
	if (im->cs_ok || im->cs)
		cs_close(&im->cs);
	free(im);
}

const uint8_t *trace_image_bytes(const struct trace_image *im, uint64_t ip, size_t *avail)
{
	for (size_t i = 0; i < im->nsegs; i++) {
		const struct seg *s = &im->segs[i];
		if (ip >= s->vaddr && ip - s->vaddr < s->len) {
			*avail = s->len - (ip - s->vaddr);
			return s->bytes + (ip - s->vaddr);
		}
	}
	*avail = 0;
	return NULL;
}

const struct trace_sym *trace_image_sym(const struct trace_image *im, uint64_t ip)
{
	size_t lo = 0, hi = im->nsyms;

	if (!hi || ip < im->syms[0].start)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (im->syms[mid].start <= ip)
			lo = mid;
		else
			hi = mid;
	}
	const struct trace_sym *s = &im->syms[lo];
	if (s->size && ip - s->start >= s->size)
		return NULL;
	return s;
}

const struct trace_sym *trace_image_sym_named(const struct trace_image *im, const char *name)
{
	for (size_t i = 0; i < im->nsyms; i++)
		if (!strcmp(im->syms[i].name, name))
			return &im->syms[i];
	return NULL;
}

size_t trace_image_nsyms(const struct trace_image *im)
{
	return im->nsyms;
}

const struct trace_sym *trace_image_sym_index(const struct trace_image *im, size_t i)
{
	return i < im->nsyms ? &im->syms[i] : NULL;
}

const uint8_t *trace_image_build_id(const struct trace_image *im, size_t *len)
{
	*len = im->build_id_len;
	return im->build_id_len ? im->build_id : NULL;
}

