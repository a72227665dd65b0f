/*
 * bench_gas.c — a snippet of `bareperf bench` through GNU as, in the
 * syntax nanoBench and uops.info write (`.intel_syntax noprefix`), to an
 * ELF object whose .text is the code.
 *
 * The kernel copies the bytes unroll_count times and runs them at an
 * address the host does not know (apps/bench_code.c), so the code may not
 * refer to anything outside one copy: gas resolves jumps and RIP-relative
 * references to the snippet's own labels itself, and what it leaves as a
 * relocation (a symbol the snippet does not define, the absolute address
 * of one of its labels) is refused with the statement named. Each
 * statement is labelled .Lbp_K (kept in the symbol table by -L) so that a
 * relocation's offset names its statement.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/util/bench_asm_int.h"
#include "uapi/wire.h"

#define STMT_LABEL	".Lbp_"

/* The object's sections that matter. */
struct obj {
	Elf *e;
	Elf_Scn *text, *rela, *symtab;
	size_t text_ndx;
};

/* The statement whose bytes hold offset off of .text: the last label at or before it. */
static int stmt_of(const struct obj *o, uint64_t off)
{
	Elf_Data *d = elf_getdata(o->symtab, NULL);
	GElf_Shdr sh;
	GElf_Sym sym;
	int best = 0;
	uint64_t at = 0;

	gelf_getshdr(o->symtab, &sh);
	for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx != o->text_ndx)
			continue;
		const char *name = elf_strptr(o->e, sh.sh_link, sym.st_name);
		if (!name || strncmp(name, STMT_LABEL, strlen(STMT_LABEL)) || sym.st_value > off)
			continue;
		int k = atoi(name + strlen(STMT_LABEL));
		if (sym.st_value > at || (sym.st_value == at && k > best))
			best = k, at = sym.st_value;
	}
	return best;
}

/* Every relocation gas left in .text, refused with its statement. Returns their count. */
static int refuse_relocations(const struct obj *o, const char *what, const char *src)
{
	Elf_Data *rd = elf_getdata(o->rela, NULL), *sd = elf_getdata(o->symtab, NULL);
	GElf_Shdr rsh, ssh;
	GElf_Rela r;
	GElf_Sym sym;
	int n = 0;

	gelf_getshdr(o->rela, &rsh);
	gelf_getshdr(o->symtab, &ssh);
	for (size_t i = 0; rd && i < rsh.sh_size / rsh.sh_entsize; i++, n++) {
		char msg[512];

		if (!gelf_getrela(rd, (int)i, &r) || !gelf_getsym(sd, (int)GELF_R_SYM(r.r_info), &sym))
			continue;
		const char *name = elf_strptr(o->e, ssh.sh_link, sym.st_name);
		if (sym.st_shndx == SHN_UNDEF)
			snprintf(msg, sizeof(msg), "'%s' is neither a register nor a label of the "
				 "snippet (the code may refer to nothing outside itself)", name);
		else
			snprintf(msg, sizeof(msg), "takes the absolute address of a label: the copies "
				 "run at an address the host does not know (a RIP-relative "
				 "[RIP+label] does not need it)");
		bench_say_line(what, src, stmt_of(o, r.r_offset), msg);
	}
	return n;
}

/* Find .text, its relocations and the symbols; refuse bytes in any other section. */
static int find_sections(struct obj *o, const char *what)
{
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(o->e, &shstrndx))
		return -1;
	for (Elf_Scn *s = NULL; (s = elf_nextscn(o->e, s)); ) {
		const char *name = gelf_getshdr(s, &sh) ? elf_strptr(o->e, shstrndx, sh.sh_name) : NULL;

		if (!name)
			return -1;
		if (!strcmp(name, ".text")) {
			o->text = s;
			o->text_ndx = elf_ndxscn(s);
		} else if (sh.sh_type == SHT_SYMTAB) {
			o->symtab = s;
		} else if (!strcmp(name, ".rela.text")) {
			o->rela = s;
		} else if ((sh.sh_flags & SHF_ALLOC) && sh.sh_size &&
			   (sh.sh_type == SHT_PROGBITS || sh.sh_type == SHT_NOBITS)) {
			fprintf(stderr, "bareperf bench: %s puts %llu bytes in section %s: only the "
				"code (.text) is sent\n", what, (unsigned long long)sh.sh_size, name);
			return 1;
		}
	}
	return o->text && o->symtab ? 0 : -1;
}

/* The .text bytes of the object at path, refused if they are not position-independent. */
static int read_text(const char *what, const char *src, const char *path, uint8_t **out,
		     size_t *len)
{
	struct obj o = { 0 };
	int fd = open(path, O_RDONLY), rc = -1;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE ||
	    !(o.e = elf_begin(fd, ELF_C_READ, NULL))) {
		fprintf(stderr, "bareperf bench: %s: %s\n", path,
			fd < 0 ? strerror(errno) : elf_errmsg(-1));
		goto out;
	}
	int bad = find_sections(&o, what);
	if (bad < 0)
		fprintf(stderr, "bareperf bench: %s: no code in gas's object %s\n", what, path);
	if (bad || (o.rela && refuse_relocations(&o, what, src)))
		goto out;
	Elf_Data *d = elf_getdata(o.text, NULL);
	size_t n = d && d->d_buf ? d->d_size : 0;
	if (n > WIRE_CODE_MAX) {
		fprintf(stderr, "bareperf bench: %s assembles to %zu bytes, more than the %u one "
			"request carries\n", what, n, WIRE_CODE_MAX);
		goto out;
	}
	*out = malloc(n ? n : 1);
	if (*out) {
		memcpy(*out, n ? d->d_buf : "", n);
		*len = n;
		rc = 0;
	}
out:
	if (o.e)
		elf_end(o.e);
	if (fd >= 0)
		close(fd);
	return rc;
}

int bench_gas(const char *what, const char *src, const char *dir, uint8_t **out, size_t *len)
{
	char in[64], obj[64], cmd[256];

	snprintf(in, sizeof(in), "%s/in.s", dir);
	snprintf(obj, sizeof(obj), "%s/out.o", dir);
	snprintf(cmd, sizeof(cmd), "as --64 -L -o %s %s 2>&1", obj, in);
	int rc = bench_write_source(in, what, src, ".intel_syntax noprefix", STMT_LABEL "%d: ",
				    ".byte");
	if (!rc)
		rc = bench_run_assembler(what, src, cmd, in, "as", "binutils");
	if (!rc)
		rc = read_text(what, src, obj, out, len);
	unlink(in);
	unlink(obj);
	return rc;
}

/* ---- a batch through one GNU as ------------------------------------------- */

#define BATCH_SECTION	".text.bp"
#define BATCH_ROUNDS	3	/* as again without the snippets it named */

/* The batch's snippets: which go into an object, and where each starts in the source. */
struct batch {
	int n;
	const char *const *srcs;
	bool *in;
	int *line;		/* the line of its .section directive */
	uint8_t **outs;
	size_t *lens;
	char src[64], obj[64];
};

/* The source of snippets lo..hi-1 still in: a section per snippet, its
 * statements after. Returns how many it holds. */
static int write_batch(struct batch *b, int lo, int hi)
{
	FILE *f = fopen(b->src, "w");
	int at = 2, n = 0;

	if (!f)
		return 0;
	fprintf(f, ".intel_syntax noprefix\n");
	for (int i = lo; i < hi; i++) {
		if (!b->in[i])
			continue;
		fprintf(f, ".section " BATCH_SECTION "%d,\"ax\",@progbits\n", i);
		int k = bench_write_stmts(f, "--batch", b->srcs[i], NULL, ".byte");
		if (k < 0) {
			fclose(f);
			return 0;
		}
		b->line[i] = at;
		at += 1 + k;
		n++;
	}
	return fclose(f) ? 0 : n;
}

/* The snippet of lo..hi-1 whose lines hold source line ln, or -1. */
static int snippet_at(const struct batch *b, int lo, int hi, long ln)
{
	int best = -1;

	for (int i = lo; i < hi; i++)
		if (b->in[i] && b->line[i] <= ln)
			best = i;
	return best;
}

/*
 * as over the source: 0 when it said nothing; 1 when each of its
 * messages named a snippet's line (those snippets leave the batch);
 * -1 otherwise (a message about no line: gas's for a forward local
 * label never defined).
 */
static int run_batch(struct batch *b, int lo, int hi)
{
	char cmd[256], line[1024];
	size_t n = strlen(b->src);
	int named = 0, stray = 0;

	snprintf(cmd, sizeof(cmd), "as --64 -o %s %s 2>&1", b->obj, b->src);
	FILE *pp = popen(cmd, "r");
	while (pp && fgets(line, sizeof(line), pp)) {
		char *end, *at = line + n + 1;
		if (strncmp(line, b->src, n) || line[n] != ':') {
			stray++;
			continue;
		}
		long ln = strtol(at, &end, 10);
		int i = end != at && *end == ':' ? snippet_at(b, lo, hi, ln) : -1;
		if (i >= 0) {
			b->in[i] = false;
			named++;
		} else if (!strstr(at, "Assembler messages:")) {
			stray++;
		}
	}
	int st = pp ? pclose(pp) : -1;
	if (stray || st == -1 || !WIFEXITED(st) || (WEXITSTATUS(st) && !named))
		return -1;
	return named ? 1 : 0;
}

/* Each snippet's section of the object into outs; one with a relocation stays out. */
static void read_batch(struct batch *b, int lo, int hi)
{
	int fd = open(b->obj, O_RDONLY);
	Elf *e = fd >= 0 && elf_version(EV_CURRENT) != EV_NONE ?
		 elf_begin(fd, ELF_C_READ, NULL) : NULL;
	size_t shstrndx, pre = strlen(BATCH_SECTION);
	GElf_Shdr sh;

	for (Elf_Scn *s = NULL; e && !elf_getshdrstrndx(e, &shstrndx) &&
	     (s = elf_nextscn(e, s)); ) {
		const char *name = gelf_getshdr(s, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		bool rela = name && !strncmp(name, ".rela", 5);
		const char *sec = rela ? name + 5 : name;
		if (!sec || strncmp(sec, BATCH_SECTION, pre))
			continue;
		int i = atoi(sec + pre);
		Elf_Data *d = rela ? NULL : elf_getdata(s, NULL);
		if (i < lo || i >= hi || !b->in[i])
			continue;
		if (rela || !d || !d->d_buf || !d->d_size || d->d_size > WIRE_CODE_MAX ||
		    !(b->outs[i] = malloc(d->d_size))) {
			b->in[i] = false;
			continue;
		}
		memcpy(b->outs[i], d->d_buf, d->d_size);
		b->lens[i] = d->d_size;
	}
	for (int i = lo; i < hi; i++)
		if (!b->in[i] || !e) {
			free(b->outs[i]);
			b->outs[i] = NULL;
			b->lens[i] = 0;
		}
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
}

/* Snippets lo..hi-1: as on those still in; when it says what it cannot
 * tie to a snippet, each half on its own, down to the one snippet. */
static void batch_range(struct batch *b, int lo, int hi)
{
	int k = -1;

	for (int round = 0; round < BATCH_ROUNDS; round++) {
		if (!write_batch(b, lo, hi))
			return;
		k = run_batch(b, lo, hi);
		if (k == 0) {
			read_batch(b, lo, hi);
			return;
		}
		if (k < 0)
			break;
	}
	if (hi - lo == 1) {
		b->in[lo] = false;
		return;
	}
	batch_range(b, lo, lo + (hi - lo) / 2);
	batch_range(b, lo + (hi - lo) / 2, hi);
}

void bench_gas_batch(int n, const char *const *srcs, const char *dir, uint8_t **outs,
		     size_t *lens)
{
	struct batch b = { n, srcs, calloc(n, sizeof(bool)), calloc(n, sizeof(int)), outs, lens,
			   "", "" };

	snprintf(b.src, sizeof(b.src), "%s/batch.s", dir);
	snprintf(b.obj, sizeof(b.obj), "%s/batch.o", dir);
	if (b.in && b.line) {
		for (int i = 0; i < n; i++)
			b.in[i] = srcs[i] && bench_plain(srcs[i]);
		batch_range(&b, 0, n);
	}
	unlink(b.src);
	unlink(b.obj);
	free(b.in);
	free(b.line);
}
