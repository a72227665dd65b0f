/*
 * tools/util/trace/image.c — the code image the decoders walk (trace.h):
 * a kernel.elf's symbols and executable bytes through the tools' ELF
 * reader (tools/util/symbol.h), or code and symbols given in memory for
 * tests and fuzzing; and the capstone handle insn.c decodes with.
 */
#include <string.h>

#include "tools/util/trace/internal.h"

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
				    const struct symbol *syms, size_t nsyms)
{
	struct trace_image *im = calloc(1, sizeof(*im));

	if (!im)
		return NULL;
	im->mem.vaddr = base;
	im->mem.len = len;
	im->mem.bytes = xrealloc(NULL, len);
	memcpy(im->mem.bytes, code, len);
	im->syms = symtab_new(syms, nsyms);
	if (!im->syms || !image_cs_open(im)) {
		trace_image_free(im);
		return NULL;
	}
	return im;
}

int trace_image_load(struct trace_image **out, const char *path, const uint8_t *build_id,
		     size_t build_id_len, char *err, size_t n)
{
	struct trace_image *im = calloc(1, sizeof(*im));
	uint64_t vaddr, size, off;

	*out = NULL;
	if (!im) {
		seterr(err, n, "%s: out of memory", path);
		return -1;
	}
	if (symtab_load(&im->syms, path, build_id, build_id_len, err, n)) {
		free(im);
		return -1;
	}
	if (!symtab_exec_segments(im->syms, &vaddr, &size, &off, 1)) {
		seterr(err, n, "%s: no executable PT_LOAD segment", path);
		trace_image_free(im);
		return -1;
	}
	if (!image_cs_open(im)) {
		seterr(err, n, "capstone: cannot open an x86-64 handle");
		trace_image_free(im);
		return -1;
	}
	*out = im;
	return 0;
}

void trace_image_free(struct trace_image *im)
{
	if (!im)
		return;
	free(im->mem.bytes);
	symtab_free(im->syms);
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
	if (!im->mem.bytes)
		return symtab_code(im->syms, ip, avail);
	if (ip >= im->mem.vaddr && ip - im->mem.vaddr < im->mem.len) {
		*avail = im->mem.len - (ip - im->mem.vaddr);
		return im->mem.bytes + (ip - im->mem.vaddr);
	}
	*avail = 0;
	return NULL;
}

const struct symtab *trace_image_symtab(const struct trace_image *im)
{
	return im->syms;
}

struct symbol trace_image_sym(const struct trace_image *im, uint64_t ip)
{
	return symtab_lookup(im->syms, ip);
}
