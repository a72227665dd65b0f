/*
 * tools/trace_dec.c — instruction traces decoded on the host (see
 * trace_dec.h): kernel.elf through libelf, instructions through capstone,
 * the single-step tracer's packets (include/uapi/itrace.h) by hand, Intel
 * PT through libipt, and the reports built on the instruction stream.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <capstone/capstone.h>
#include <intel-pt.h>

#include "uapi/perf_ring.h"
#include "uapi/wire.h"
#include "tools/util/capture.h"
#include "tools/trace_dec.h"
#include "tools/util/wire_dec.h"

static void seterr(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (!err || !n)
		return;
	va_start(ap, fmt);
	vsnprintf(err, n, fmt, ap);
	va_end(ap);
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q) {
		fprintf(stderr, "bareperf: out of memory (%zu bytes)\n", n);
		exit(1);
	}
	return q;
}

#define GROW(arr, n, cap) do {							\
	if ((n) == (cap)) {							\
		(cap) = (cap) ? 2 * (cap) : 16;					\
		(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));		\
	}									\
} while (0)

/* ===================================================================== */
/* Image                                                                  */

struct seg {
	uint64_t vaddr;
	size_t len;
	uint8_t *bytes;
};

/* Instruction cache: open addressing on ip, entries in stable chunks. */
#define ARENA_CHUNK	4096

struct arena {
	struct trace_insn *chunk;
	size_t used;
};

struct trace_image {
	struct seg *segs;
	size_t nsegs;
	struct trace_sym *syms;
	size_t nsyms;
	char **names;
	size_t nnames;
	uint8_t build_id[20];
	size_t build_id_len;

	struct trace_insn **tab;	/* hash table of pointers */
	size_t tab_cap, tab_n;
	struct trace_insn **chunks;
	size_t nchunks, chunk_used;
	csh cs;
	cs_insn *csi;
	bool cs_ok;
};

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

/* ===================================================================== */
/* Instructions                                                           */

static bool is_jcc(unsigned id)
{
	switch (id) {
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JE: case X86_INS_JGE:
	case X86_INS_JG: case X86_INS_JLE: case X86_INS_JL: case X86_INS_JNE:
	case X86_INS_JNO: case X86_INS_JNP: case X86_INS_JNS: case X86_INS_JO:
	case X86_INS_JP: case X86_INS_JRCXZ: case X86_INS_JS:
	case X86_INS_LOOP: case X86_INS_LOOPE: case X86_INS_LOOPNE:
		return true;
	default:
		return false;
	}
}

static bool is_far(unsigned id)
{
	switch (id) {
	case X86_INS_LJMP: case X86_INS_LCALL: case X86_INS_RETF: case X86_INS_RETFQ:
	case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ:
	case X86_INS_INT: case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO:
	case X86_INS_SYSCALL: case X86_INS_SYSRET: case X86_INS_SYSENTER: case X86_INS_SYSEXIT:
	case X86_INS_UD2: case X86_INS_UD2B: case X86_INS_UD0: case X86_INS_XBEGIN:
		return true;
	default:
		return false;
	}
}

/*
 * include/uapi/itrace.h §3 from capstone's view of the instruction: ids
 * and operand kinds for branches, the opcode byte for string operations
 * (an SSE movsd is also "movsd" with an F2 prefix).
 */
static int classify_cs(const cs_insn *ci, struct trace_insn *out)
{
	const cs_x86 *x = &ci->detail->x86;
	bool o16 = x->prefix[2] == X86_PREFIX_OPSIZE;
	bool rep = x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPNE;
	bool imm = x->op_count >= 1 && x->operands[0].type == X86_OP_IMM;
	uint8_t op0 = x->opcode[0];
	int cls = ITRACE_C_SEQ, flow = TK_OTHER;

	out->target = 0;
	if (is_jcc(ci->id)) {
		cls = ITRACE_C_JCC;
		flow = TK_JUMP;
	} else if (ci->id == X86_INS_JMP) {
		cls = imm ? ITRACE_C_JMP : ITRACE_C_IJMP;
		flow = TK_JUMP;
	} else if (ci->id == X86_INS_CALL) {
		cls = imm ? ITRACE_C_CALL : ITRACE_C_ICALL;
		flow = TK_CALL;
	} else if (ci->id == X86_INS_RET) {
		cls = ITRACE_C_RET;
		flow = TK_RET;
	} else if (is_far(ci->id)) {
		cls = ITRACE_C_IJMP;
		flow = TK_FAR;
	} else if (rep && x->opcode[1] == 0 &&
		   ((op0 >= 0xa4 && op0 <= 0xa7) || (op0 >= 0xaa && op0 <= 0xaf) ||
		    (op0 >= 0x6c && op0 <= 0x6f))) {
		cls = ITRACE_C_REP;
	}
	if ((cls == ITRACE_C_JCC || cls == ITRACE_C_JMP || cls == ITRACE_C_CALL) && imm)
		out->target = (uint64_t)x->operands[0].imm;
	if (o16 && cls != ITRACE_C_SEQ && cls != ITRACE_C_IJMP && cls != ITRACE_C_REP) {
		cls = ITRACE_C_IJMP;
		out->target = 0;
	}
	out->ip = ci->address;
	out->len = (uint8_t)ci->size;
	out->cls = (uint8_t)cls;
	out->flow = (uint8_t)flow;
	size_t m = strlen(ci->mnemonic);
	if (m >= sizeof(out->text))
		m = sizeof(out->text) - 1;
	memcpy(out->text, ci->mnemonic, m);
	out->text[m] = 0;
	if (ci->op_str[0] && m + 2 < sizeof(out->text)) {
		size_t k = strlen(ci->op_str), room = sizeof(out->text) - m - 2;
		out->text[m] = ' ';
		memcpy(out->text + m + 1, ci->op_str, k < room ? k : room);
		out->text[m + 1 + (k < room ? k : room)] = 0;
	}
	return cls;
}

int trace_insn_classify(const uint8_t *code, size_t n, uint64_t ip, struct trace_insn *out)
{
	static csh cs;
	static cs_insn *ci;
	const uint8_t *p = code;
	uint64_t addr = ip;

	if (!ci) {
		if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
			return -1;
		cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
		ci = cs_malloc(cs);
	}
	if (!cs_disasm_iter(cs, &p, &n, &addr, ci))
		return -1;
	return classify_cs(ci, out);
}

static size_t hash_ip(uint64_t ip, size_t cap)
{
	ip ^= ip >> 29;
	ip *= 0xbf58476d1ce4e5b9ull;
	ip ^= ip >> 32;
	return (size_t)ip & (cap - 1);
}

static void tab_insert(struct trace_insn **tab, size_t cap, struct trace_insn *e)
{
	size_t h = hash_ip(e->ip, cap);

	while (tab[h])
		h = (h + 1) & (cap - 1);
	tab[h] = e;
}

const struct trace_insn *trace_insn_at(struct trace_image *im, uint64_t ip)
{
	size_t h, avail;

	if (im->tab_cap) {
		for (h = hash_ip(ip, im->tab_cap); im->tab[h]; h = (h + 1) & (im->tab_cap - 1))
			if (im->tab[h]->ip == ip)
				return im->tab[h];
	}
	const uint8_t *p = trace_image_bytes(im, ip, &avail);
	uint64_t addr = ip;
	if (!p || !cs_disasm_iter(im->cs, &p, &avail, &addr, im->csi))
		return NULL;
	if (im->chunk_used == ARENA_CHUNK || !im->nchunks) {
		im->chunks = xrealloc(im->chunks, (im->nchunks + 1) * sizeof(*im->chunks));
		im->chunks[im->nchunks++] = xrealloc(NULL, ARENA_CHUNK * sizeof(struct trace_insn));
		im->chunk_used = 0;
	}
	struct trace_insn *e = &im->chunks[im->nchunks - 1][im->chunk_used++];
	classify_cs(im->csi, e);
	if (2 * (im->tab_n + 1) > im->tab_cap) {
		size_t cap = im->tab_cap ? 2 * im->tab_cap : 4096;
		struct trace_insn **t = calloc(cap, sizeof(*t));
		if (!t)
			xrealloc(NULL, (size_t)-1 / 2);
		for (size_t i = 0; i < im->tab_cap; i++)
			if (im->tab[i])
				tab_insert(t, cap, im->tab[i]);
		free(im->tab);
		im->tab = t;
		im->tab_cap = cap;
	}
	tab_insert(im->tab, im->tab_cap, e);
	im->tab_n++;
	return e;
}

/* ===================================================================== */
/* Packets                                                                */

/* 1: ok; 0: cut short; -1: more than 64 bits. */
static int get_uvarint(const uint8_t *p, size_t n, size_t *used, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < 10; i++) {
		if (i >= n)
			return 0;
		uint64_t b = p[i];
		if (i == 9 && b > 1)
			return -1;
		x |= (b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*used = i + 1;
			*v = x;
			return 1;
		}
	}
	return -1;
}

static int get_svarint(const uint8_t *p, size_t n, size_t *used, int64_t *v)
{
	uint64_t z;
	int r = get_uvarint(p, n, used, &z);

	if (r == 1)
		*v = (int64_t)((z >> 1) ^ (0 - (z & 1)));
	return r;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

long trace_pkt_decode(const uint8_t *p, size_t n, struct trace_pkt *pkt)
{
	size_t off = 1, u;
	int r;

	memset(pkt, 0, sizeof(*pkt));
	if (!n)
		return 0;
	if (p[0] & ITRACE_OP_TNT) {
		unsigned v = p[0] & 0x7f, nb = 0;
		if (v < 2)
			return -1;
		while (v >> (nb + 1))
			nb++;
		pkt->type = TP_TNT;
		pkt->tnt_n = (uint8_t)nb;
		pkt->tnt_bits = (uint8_t)(v & ((1u << nb) - 1));
		return 1;
	}
	switch (p[0]) {
	case ITRACE_OP_PAD:
		pkt->type = TP_PAD;
		return 1;
	case ITRACE_OP_TIP:
	case ITRACE_OP_PGE:
		pkt->type = p[0] == ITRACE_OP_TIP ? TP_TIP : TP_PGE;
		r = get_svarint(p + off, n - off, &u, &pkt->ip_delta);
		return r == 1 ? (long)(off + u) : r;
	case ITRACE_OP_ASYNC:
		pkt->type = TP_ASYNC;
		r = get_uvarint(p + off, n - off, &u, &pkt->steps);
		if (r != 1)
			return r;
		off += u;
		r = get_svarint(p + off, n - off, &u, &pkt->ip_delta);
		return r == 1 ? (long)(off + u) : r;
	case ITRACE_OP_STOP:
		pkt->type = TP_STOP;
		if (n < 2)
			return 0;
		pkt->reason = p[1];
		if (pkt->reason != ITRACE_STOP_END && pkt->reason != ITRACE_STOP_PAUSE)
			return -1;
		off = 2;
		r = get_uvarint(p + off, n - off, &u, &pkt->steps);
		if (r != 1)
			return r;
		off += u;
		r = get_uvarint(p + off, n - off, &u, &pkt->tsc);
		return r == 1 ? (long)(off + u) : r;
	case ITRACE_OP_SYNC: {
		size_t need = sizeof(struct itrace_sync);
		if (n < ITRACE_SYNC_MAGIC_LEN)
			return memcmp(p, ITRACE_SYNC_MAGIC, n) ? -1 : 0;
		if (memcmp(p, ITRACE_SYNC_MAGIC, ITRACE_SYNC_MAGIC_LEN))
			return -1;
		if (n < need)
			return 0;
		pkt->type = TP_SYNC;
		pkt->ip = get_u64(p + 8);
		pkt->tsc = get_u64(p + 16);
		pkt->steps = get_u64(p + 24);
		pkt->flags = p[32];
		if (pkt->flags & ~ITRACE_SYNC_FLAGS)
			return -1;
		pkt->lo = 0;
		pkt->hi = ~0ull;
		if (pkt->flags & ITRACE_SYNC_RANGE) {
			need += sizeof(struct itrace_range);
			if (n < need)
				return 0;
			pkt->lo = get_u64(p + 33);
			pkt->hi = get_u64(p + 41);
			if (pkt->lo >= pkt->hi)
				return -1;
		}
		return (long)need;
	}
	default:
		return -1;
	}
}

long trace_pkt_find_sync(const uint8_t *p, size_t n)
{
	size_t off = 0;

	while (off < n) {
		const uint8_t *m = memmem(p + off, n - off, ITRACE_SYNC_MAGIC, ITRACE_SYNC_MAGIC_LEN);
		struct trace_pkt pk;
		if (!m)
			return -1;
		off = (size_t)(m - p);
		if (trace_pkt_decode(m, n - off, &pk) > 0)
			return (long)off;
		off++;
	}
	return -1;
}

/* ===================================================================== */
/* Software tracer: packets -> instructions                               */

struct pend {
	uint64_t step;
	const struct trace_insn *ii;
};

enum peek_state { PK_OK, PK_EOD, PK_BAD };

struct sdec {
	struct trace_image *im;
	const struct trace_piece *pcs;
	size_t np, pi, off;
	const struct trace_sink *sink;
	void *ctx;
	struct trace_dec_stats *st;

	bool synced, after_end, started;
	uint64_t ip, count, confirmed, last_ip, sync_steps, sync_tsc, lo, hi;
	unsigned tnt_n, tnt_bits;
	uint64_t rs[ITRACE_RETSTACK];
	unsigned rs_n, rs_top;
	const char *why;		/* why sync was lost */

	struct pend *q;
	size_t qn, qcap;

	bool peeked;
	int pk_state;
	struct trace_pkt pk;
	long pk_len;
};

static void error_at(struct sdec *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void error_at(struct sdec *d, const char *fmt, ...)
{
	va_list ap;

	d->st->errors++;
	if (!d->st->first_error[0]) {
		va_start(ap, fmt);
		vsnprintf(d->st->first_error, sizeof(d->st->first_error), fmt, ap);
		va_end(ap);
	}
}

static uint64_t aux_pos(const struct sdec *d)
{
	return d->pi < d->np ? d->pcs[d->pi].aux_pos + d->off : 0;
}

static void confirm(struct sdec *d)
{
	for (size_t i = 0; i < d->qn; i++) {
		d->st->insns++;
		if (d->sink->insn)
			d->sink->insn(d->ctx, d->q[i].step, d->q[i].ii);
	}
	d->qn = 0;
	d->confirmed = d->count;
}

static void gap(struct sdec *d, uint64_t at, uint64_t n, const char *why)
{
	d->st->gaps++;
	if (n == TRACE_GAP_UNKNOWN)
		d->st->gaps_unknown++;
	else
		d->st->gap_insns += n;
	if (d->sink->gap)
		d->sink->gap(d->ctx, at, n, why);
}

/* Stop trusting the state: what is unconfirmed is dropped (it becomes
 * part of the gap the next SYNC measures). */
static void lose_sync(struct sdec *d, const char *why)
{
	d->qn = 0;
	d->count = d->confirmed;
	d->synced = false;
	d->why = why;
	d->tnt_n = 0;
}

static int peek(struct sdec *d)
{
	if (d->peeked)
		return d->pk_state;
	d->peeked = true;
	for (;;) {
		if (d->pi >= d->np) {
			d->pk_state = PK_EOD;
			return PK_EOD;
		}
		const struct trace_piece *p = &d->pcs[d->pi];
		if (d->off >= p->len) {
			if (d->pi + 1 < d->np && d->pcs[d->pi + 1].join == TJ_CONT) {
				d->pi++;
				d->off = 0;
				continue;
			}
			d->pk_state = PK_EOD;
			return PK_EOD;
		}
		d->pk_len = trace_pkt_decode(p->data + d->off, p->len - d->off, &d->pk);
		if (d->pk_len > 0 && d->pk.type == TP_PAD) {
			d->off++;
			continue;
		}
		d->pk_state = d->pk_len > 0 ? PK_OK : PK_BAD;
		return d->pk_state;
	}
}

static void consume(struct sdec *d)
{
	d->off += (size_t)d->pk_len;
	d->peeked = false;
	d->st->packets++;
}

static void apply_sync(struct sdec *d, const struct trace_pkt *pk)
{
	d->ip = d->last_ip = pk->ip;
	d->count = d->confirmed = pk->steps;
	d->sync_steps = pk->steps;
	d->sync_tsc = pk->tsc;
	d->lo = pk->lo;
	d->hi = pk->hi;
	d->rs_n = 0;
	d->tnt_n = 0;
	d->synced = true;
	d->after_end = false;
	d->st->syncs++;
	if (d->sink->sync)
		d->sink->sync(d->ctx, pk->steps, pk->tsc);
}

/*
 * Find the next SYNC from the cursor on, across pieces, and start there.
 * The gap since the last confirmed instruction is measured by its step
 * count. False when the data ends first.
 */
static bool resync(struct sdec *d)
{
	const char *why = d->why ? d->why : "decode error";

	d->peeked = false;
	while (d->pi < d->np) {
		const struct trace_piece *p = &d->pcs[d->pi];
		long at = d->off < p->len ? trace_pkt_find_sync(p->data + d->off, p->len - d->off) : -1;
		if (at < 0) {
			d->pi++;
			d->off = 0;
			if (d->pi < d->np && d->pcs[d->pi].join == TJ_PAUSE && !d->why)
				why = "AUX area full";
			continue;
		}
		d->off += (size_t)at;
		peek(d);
		struct trace_pkt pk = d->pk;
		consume(d);
		if (!d->st->have_first) {
			d->st->have_first = true;
			d->st->first_steps = pk.steps;
			if (pk.steps)
				gap(d, 0, pk.steps, "before the first SYNC in the data");
		} else if (d->after_end) {
			/* A new traced call: its steps start again. */
		} else if (pk.steps >= d->confirmed) {
			gap(d, d->confirmed, pk.steps - d->confirmed, why);
		} else {
			error_at(d, "step count goes back from %" PRIu64 " to %" PRIu64
				 " at AUX %#" PRIx64 " without a STOP END", d->confirmed, pk.steps,
				 aux_pos(d));
		}
		d->started = true;
		d->why = NULL;
		apply_sync(d, &pk);
		return true;
	}
	return false;
}

/* The next TNT bit (0/1), or a TIP (2, *tip set); -1: neither. */
static int next_event(struct sdec *d, uint64_t *tip)
{
	if (!d->tnt_n) {
		if (peek(d) != PK_OK)
			return -1;
		if (d->pk.type == TP_TNT) {
			d->tnt_n = d->pk.tnt_n;
			d->tnt_bits = d->pk.tnt_bits;
			consume(d);
		} else if (d->pk.type == TP_TIP) {
			*tip = d->last_ip + (uint64_t)d->pk.ip_delta;
			d->last_ip = *tip;
			consume(d);
			d->st->tips++;
			return 2;
		} else {
			return -1;
		}
	}
	d->tnt_n--;
	d->st->tnt_bits++;
	return d->tnt_bits >> d->tnt_n & 1;
}

static void push(struct sdec *d, uint64_t ret)
{
	d->rs_top = (d->rs_top + 1) % ITRACE_RETSTACK;
	d->rs[d->rs_top] = ret;
	if (d->rs_n < ITRACE_RETSTACK)
		d->rs_n++;
}

static const char *pkt_name(int t)
{
	static const char *const n[] = { "PAD", "TNT", "TIP", "PGE", "ASYNC", "STOP", "SYNC" };
	return t >= 0 && t <= TP_SYNC ? n[t] : "?";
}

/* Could not get the event an instruction needs. */
static void event_missing(struct sdec *d, const struct trace_insn *ii, const char *what)
{
	int s = peek(d);

	if (s == PK_EOD) {
		lose_sync(d, d->pi + 1 < d->np && d->pcs[d->pi + 1].join == TJ_PAUSE ?
			  "AUX area full" : "AUX data missing");
		return;
	}
	error_at(d, "at %#" PRIx64 " (%s, step %" PRIu64 "): expected %s, found %s at AUX %#" PRIx64,
		 ii->ip, ii->text, d->count, what, s == PK_OK ? pkt_name(d->pk.type) : "a bad packet",
		 aux_pos(d));
	lose_sync(d, "decode error");
}

static void queue(struct sdec *d, const struct trace_insn *ii)
{
	if (d->qn == d->qcap) {
		d->qcap = d->qcap ? 2 * d->qcap : 256;
		d->q = xrealloc(d->q, d->qcap * sizeof(*d->q));
	}
	d->count++;
	d->q[d->qn++] = (struct pend){ d->count, ii };
}

/* One instruction, or one anchor. */
static void step(struct sdec *d)
{
	bool override = false;
	uint64_t tip = 0;
	int ev;

	if (!d->tnt_n) {
		int s = peek(d);
		if (s == PK_EOD) {
			bool more = d->pi + 1 < d->np;
			lose_sync(d, more && d->pcs[d->pi + 1].join == TJ_PAUSE ? "AUX area full" :
				  more ? "AUX data missing" : NULL);
			if (!more)
				d->why = "the trace ends without STOP END";
			return;
		}
		if (s == PK_BAD) {
			error_at(d, "bad packet at AUX %#" PRIx64 " (byte %#x)", aux_pos(d),
				 d->pcs[d->pi].data[d->off]);
			lose_sync(d, "bad packet");
			return;
		}
		const struct trace_pkt *pk = &d->pk;
		uint64_t abs = pk->type == TP_SYNC ? pk->steps : d->sync_steps + pk->steps;
		if (pk->type == TP_SYNC || pk->type == TP_STOP) {
			if (abs == d->count) {
				struct trace_pkt p = *pk;
				if (p.type == TP_SYNC) {
					/* Outside the range, a SYNC is the way back in. */
					bool outside = d->ip < d->lo || d->ip >= d->hi;
					if (p.ip != d->ip && !outside) {
						error_at(d, "SYNC at step %" PRIu64 " says %#" PRIx64
							 ", the walk reached %#" PRIx64, p.steps, p.ip, d->ip);
						lose_sync(d, "decode error");
						return;	/* resync() takes this SYNC */
					}
					consume(d);
					confirm(d);
					apply_sync(d, &p);
					return;
				}
				consume(d);
				confirm(d);
				if (p.reason == ITRACE_STOP_END) {
					d->st->ended = true;
					d->st->ends++;
					d->st->end_steps += d->count;
					d->st->end_tsc = d->sync_tsc + p.tsc;
					d->after_end = true;
					d->synced = false;
					d->why = NULL;
				} else {
					lose_sync(d, "AUX area full");
				}
				return;
			}
			if (abs < d->count) {
				error_at(d, "%s for step %" PRIu64 " after the walk reached step %" PRIu64,
					 pkt_name(pk->type), abs, d->count);
				lose_sync(d, "decode error");
				return;
			}
		} else if (pk->type == TP_ASYNC) {
			if (abs == d->count + 1) {
				override = true;
			} else if (abs <= d->count) {
				error_at(d, "ASYNC for step %" PRIu64 " after the walk reached step %" PRIu64,
					 abs, d->count);
				lose_sync(d, "decode error");
				return;
			}
		}
	}
	if (d->ip < d->lo || d->ip >= d->hi) {
		/* Left the range: only a PGE (or an anchor, above) can follow. */
		if (!d->tnt_n && peek(d) == PK_OK && d->pk.type == TP_PGE) {
			d->ip = d->last_ip + (uint64_t)d->pk.ip_delta;
			d->last_ip = d->ip;
			consume(d);
			confirm(d);
			d->st->pges++;
			return;
		}
		struct trace_insn fake = { .ip = d->ip };
		snprintf(fake.text, sizeof(fake.text), "outside the range");
		event_missing(d, &fake, "PGE");
		return;
	}
	const struct trace_insn *ii = trace_insn_at(d->im, d->ip);
	if (!ii) {
		error_at(d, "no instruction at %#" PRIx64 " in kernel.elf (step %" PRIu64 ")", d->ip,
			 d->count + 1);
		lose_sync(d, "decode error");
		return;
	}
	queue(d, ii);
	if (override) {
		if (ii->cls == ITRACE_C_CALL)
			push(d, ii->ip + ii->len);
		d->ip = d->last_ip + (uint64_t)d->pk.ip_delta;
		d->last_ip = d->ip;
		consume(d);
		confirm(d);
		d->st->asyncs++;
		return;
	}
	switch (ii->cls) {
	case ITRACE_C_SEQ:
		d->ip += ii->len;
		return;
	case ITRACE_C_JMP:
		d->ip = ii->target;
		return;
	case ITRACE_C_CALL:
		push(d, ii->ip + ii->len);
		d->ip = ii->target;
		return;
	case ITRACE_C_JCC:
	case ITRACE_C_REP:
		ev = next_event(d, &tip);
		if (ev < 0 || ev == 2) {
			event_missing(d, ii, "a TNT bit");
			return;
		}
		confirm(d);
		if (ii->cls == ITRACE_C_JCC)
			d->ip = ev ? ii->target : ii->ip + ii->len;
		else
			d->ip = ev ? ii->ip : ii->ip + ii->len;
		return;
	case ITRACE_C_RET:
		if (d->rs_n) {
			uint64_t top = d->rs[d->rs_top];
			d->rs_top = (d->rs_top + ITRACE_RETSTACK - 1) % ITRACE_RETSTACK;
			d->rs_n--;
			ev = next_event(d, &tip);
			if (ev == 1 || ev == 2) {
				confirm(d);
				d->ip = ev == 1 ? top : tip;
				return;
			}
			if (ev == 0) {
				error_at(d, "ret at %#" PRIx64 ": TNT 0 (returns are 1 or a TIP)", ii->ip);
				lose_sync(d, "decode error");
				return;
			}
			event_missing(d, ii, "a TNT bit or a TIP");
			return;
		}
		/* An empty stack always gives a TIP. */
		__attribute__((fallthrough));
	case ITRACE_C_ICALL:
	case ITRACE_C_IJMP:
		if (d->tnt_n || (ev = next_event(d, &tip)) != 2) {
			if (d->tnt_n)
				error_at(d, "at %#" PRIx64 " (%s): TNT bits pending where a TIP belongs",
					 ii->ip, ii->text);
			event_missing(d, ii, "a TIP");
			return;
		}
		confirm(d);
		if (ii->cls == ITRACE_C_ICALL)
			push(d, ii->ip + ii->len);
		d->ip = tip;
		return;
	}
}

void trace_decode_sstep(struct trace_image *im, const struct trace_piece *pieces,
			size_t npieces, const struct trace_sink *sink, void *ctx,
			struct trace_dec_stats *st)
{
	struct sdec d = { .im = im, .pcs = pieces, .np = npieces, .sink = sink, .ctx = ctx,
			  .st = st };

	memset(st, 0, sizeof(*st));
	for (size_t i = 0; i < npieces; i++)
		st->bytes += pieces[i].len;
	for (;;) {
		if (!d.synced) {
			if (!resync(&d))
				break;
			continue;
		}
		step(&d);
	}
	/* The data ended: whatever was not anchored is a gap of unknown size. */
	if (!d.after_end && d.started)
		gap(&d, d.confirmed, TRACE_GAP_UNKNOWN,
		    d.why ? d.why : "the trace ends without STOP END");
	free(d.q);
}

/* ===================================================================== */
/* Intel PT (libipt)                                                      */

static int pt_read_mem(uint8_t *buf, size_t size, const struct pt_asid *asid, uint64_t ip,
		       void *ctx)
{
	size_t avail;
	const uint8_t *p = trace_image_bytes(ctx, ip, &avail);

	(void)asid;
	if (!p)
		return -pte_nomap;
	if (size > avail)
		size = avail;
	memcpy(buf, p, size);
	return (int)size;
}

static void pt_run(struct trace_image *im, uint8_t *buf, size_t len, const struct trace_sink *sink,
		   void *ctx, struct trace_dec_stats *st, uint64_t *count, const char *why_before)
{
	struct pt_config cfg;
	struct pt_insn_decoder *dec;
	int status;
	bool first = true;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + len;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec) {
		st->errors++;
		return;
	}
	pt_image_set_callback(pt_insn_get_image(dec), pt_read_mem, im);
	for (;;) {
		status = pt_insn_sync_forward(dec);
		if (status < 0)
			break;
		st->syncs++;
		if (!first || why_before) {
			st->gaps++;
			st->gaps_unknown++;
			if (sink->gap)
				sink->gap(ctx, *count, TRACE_GAP_UNKNOWN,
					  first ? why_before : "PT decode error");
		}
		first = false;
		for (;;) {
			while (status & pts_event_pending) {
				struct pt_event ev;
				status = pt_insn_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				if (ev.type == ptev_overflow) {
					st->gaps++;
					st->gaps_unknown++;
					if (sink->gap)
						sink->gap(ctx, *count, TRACE_GAP_UNKNOWN,
							  "PT internal buffer overflow");
				}
				if (ev.has_tsc && sink->sync)
					sink->sync(ctx, *count, ev.tsc);
			}
			if (status < 0)
				break;
			struct pt_insn insn;
			memset(&insn, 0, sizeof(insn));
			status = pt_insn_next(dec, &insn, sizeof(insn));
			if (status >= 0 && insn.iclass != ptic_error) {
				const struct trace_insn *ii = trace_insn_at(im, insn.ip);
				(*count)++;
				if (ii) {
					st->insns++;
					if (sink->insn)
						sink->insn(ctx, *count, ii);
				} else {
					/* libipt walked it, capstone cannot decode it: say so. */
					st->errors++;
					if (!st->first_error[0])
						snprintf(st->first_error, sizeof(st->first_error),
							 "capstone cannot decode the instruction at %#"
							 PRIx64 " libipt stepped over", insn.ip);
					st->gaps++;
					st->gap_insns++;
					if (sink->gap)
						sink->gap(ctx, *count - 1, 1, "undecodable instruction");
				}
			}
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			break;
		st->errors++;
		if (!st->first_error[0])
			snprintf(st->first_error, sizeof(st->first_error), "libipt: %s",
				 pt_errstr(pt_errcode(status)));
	}
	pt_insn_free_decoder(dec);
}

void trace_decode_pt(struct trace_image *im, const struct trace_piece *pieces,
		     size_t npieces, const struct trace_sink *sink, void *ctx,
		     struct trace_dec_stats *st)
{
	uint64_t count = 0;
	size_t i = 0;

	memset(st, 0, sizeof(*st));
	while (i < npieces) {
		size_t len = 0, j = i;
		const char *why = i == 0 ? NULL : pieces[i].join == TJ_PAUSE ? "AUX area full" :
			"AUX data missing";
		do
			len += pieces[j++].len;
		while (j < npieces && pieces[j].join == TJ_CONT);
		uint8_t *buf = xrealloc(NULL, len), *p = buf;
		for (size_t k = i; k < j; k++) {
			memcpy(p, pieces[k].data, pieces[k].len);
			p += pieces[k].len;
		}
		st->bytes += len;
		pt_run(im, buf, len, sink, ctx, st, &count, why);
		free(buf);
		i = j;
	}
}

/* ===================================================================== */
/* Captures                                                               */

struct ival {
	uint64_t lo, hi;
};

struct auxrec {
	uint64_t off, size, flags;
};

struct cpu_acc {
	uint32_t cpu, run;		/* a run's rings start again at AUX counter 0 */
	uint8_t *buf;			/* AUX bytes by counter */
	uint64_t buf_cap;
	struct ival *cov;		/* received ranges, sorted, merged */
	size_t ncov, cov_cap;
	struct auxrec *recs;
	size_t nrecs, recs_cap;
	uint64_t bytes, lost_records, lost_frames;
};

struct cap_priv {
	struct cpu_acc *acc;
	size_t nacc;
	uint32_t run;			/* RUN_META records seen */
	char *console;
	size_t console_len, console_cap;
	struct trace_capture *tc;
};

static struct cpu_acc *acc_for(struct cap_priv *P, uint32_t cpu)
{
	for (size_t i = 0; i < P->nacc; i++)
		if (P->acc[i].cpu == cpu && P->acc[i].run == P->run)
			return &P->acc[i];
	P->acc = xrealloc(P->acc, (P->nacc + 1) * sizeof(*P->acc));
	memset(&P->acc[P->nacc], 0, sizeof(*P->acc));
	P->acc[P->nacc].cpu = cpu;
	P->acc[P->nacc].run = P->run;
	return &P->acc[P->nacc++];
}

static void cov_add(struct cpu_acc *a, uint64_t lo, uint64_t hi)
{
	size_t i;

	if (lo >= hi)
		return;
	/* Mostly appends: merge with the last range when adjacent. */
	if (a->ncov && a->cov[a->ncov - 1].hi == lo) {
		a->cov[a->ncov - 1].hi = hi;
		return;
	}
	GROW(a->cov, a->ncov, a->cov_cap);
	for (i = a->ncov; i > 0 && a->cov[i - 1].lo > lo; i--)
		a->cov[i] = a->cov[i - 1];
	a->cov[i] = (struct ival){ lo, hi };
	a->ncov++;
	/* Merge overlaps (rare: duplicates). */
	size_t j = 0;
	for (i = 0; i < a->ncov; i++) {
		if (j && a->cov[i].lo <= a->cov[j - 1].hi) {
			if (a->cov[i].hi > a->cov[j - 1].hi)
				a->cov[j - 1].hi = a->cov[i].hi;
		} else {
			a->cov[j++] = a->cov[i];
		}
	}
	a->ncov = j;
}

/* Bytes from lo covered contiguously (up to hi). */
static uint64_t cov_run(const struct cpu_acc *a, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < a->ncov; i++)
		if (a->cov[i].lo <= lo && lo < a->cov[i].hi)
			return (a->cov[i].hi < hi ? a->cov[i].hi : hi) - lo;
	return 0;
}

static uint64_t cov_next(const struct cpu_acc *a, uint64_t lo)
{
	uint64_t best = UINT64_MAX;

	for (size_t i = 0; i < a->ncov; i++)
		if (a->cov[i].lo > lo && a->cov[i].lo < best)
			best = a->cov[i].lo;
	return best;
}

static void console_add(struct cap_priv *P, const void *p, size_t n)
{
	if (P->console_len + n + 1 > P->console_cap) {
		P->console_cap = 2 * (P->console_len + n + 1);
		P->console = xrealloc(P->console, P->console_cap);
	}
	memcpy(P->console + P->console_len, p, n);
	P->console_len += n;
	P->console[P->console_len] = 0;
}

static void cap_frame(void *ctx, const struct wire_dec_frame *f)
{
	struct cap_priv *P = ctx;

	if (f->lost_before && (f->channel == WIRE_CH_RECORDS || f->channel == WIRE_CH_AUX))
		acc_for(P, f->cpu)->lost_frames += f->lost_before;
}

static void cap_record(void *ctx, const struct wire_dec_frame *f, const struct bp_record_header *rec)
{
	struct cap_priv *P = ctx;
	struct trace_capture *tc = P->tc;

	switch (rec->type) {
	case BP_RECORD_AUX:
		if (rec->size >= sizeof(struct bp_record_aux)) {
			const struct bp_record_aux *r = (const void *)rec;
			struct cpu_acc *a = acc_for(P, f->cpu);
			GROW(a->recs, a->nrecs, a->recs_cap);
			a->recs[a->nrecs++] = (struct auxrec){ r->aux_offset, r->aux_size, r->flags };
		}
		break;
	case BP_RECORD_LOST:
		acc_for(P, f->cpu)->lost_records++;
		break;
	case BP_RECORD_RUN_META:
		/* A new run (control=1 serves many in one boot): its rings,
		 * AUX counters included, start from 0 again. */
		P->run++;
		if (rec->size >= sizeof(struct bp_record_run_meta)) {
			const struct bp_record_run_meta *m = (const void *)rec;
			memcpy(tc->build_id, m->build_id, sizeof(tc->build_id));
			tc->build_id_len = 20;
			while (tc->build_id_len && !tc->build_id[tc->build_id_len - 1])
				tc->build_id_len--;
			tc->meta_flags = m->flags;
		}
		break;
	}
}

#define AUX_HOLE_MAX	(64ull << 20)

static void cap_data(void *ctx, const struct wire_dec_frame *f, const uint8_t *p, size_t n)
{
	struct cap_priv *P = ctx;

	if (f->channel == WIRE_CH_CONSOLE) {
		console_add(P, p, n);
		return;
	}
	if (f->channel != WIRE_CH_AUX || !n)
		return;
	struct cpu_acc *a = acc_for(P, f->cpu);
	uint64_t end = f->aux_pos + n;
	/*
	 * The buffer is dense from counter 0 (a run's rings start there), so
	 * a frame's position is memory: accept positions within twice the
	 * data received so far plus AUX_HOLE_MAX of holes (lost frames); a
	 * frame beyond is implausible and counted lost, rather than costing
	 * gigabytes for a few bytes.
	 */
	if (end < f->aux_pos || end > (1ull << 34) || end > 2 * (a->bytes + n) + AUX_HOLE_MAX) {
		a->lost_frames++;
		return;
	}
	if (end > a->buf_cap) {
		uint64_t cap = a->buf_cap ? a->buf_cap : 65536;
		while (cap < end)
			cap *= 2;
		a->buf = xrealloc(a->buf, cap);
		memset(a->buf + a->buf_cap, 0, cap - a->buf_cap);
		a->buf_cap = cap;
	}
	memcpy(a->buf + f->aux_pos, p, n);
	cov_add(a, f->aux_pos, end);
	a->bytes += n;
}

static void cap_unframed(void *ctx, uint64_t off, const uint8_t *p, size_t n)
{
	(void)off;
	console_add(ctx, p, n);
}

static void add_piece(struct trace_cpu_data *c, size_t *cap, const uint8_t *data, size_t len,
		      uint64_t pos, int join)
{
	GROW(c->pieces, c->npieces, *cap);
	c->pieces[c->npieces++] = (struct trace_piece){ data, len, pos, join };
}

static int rec_cmp(const void *a, const void *b)
{
	const struct auxrec *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

static void build_pieces(struct cpu_acc *a, struct trace_cpu_data *c)
{
	size_t cap = 0;
	int join = TJ_CONT;

	c->cpu = a->cpu;
	c->run = a->run;
	c->aux_bytes = a->bytes;
	c->records = a->nrecs;
	c->records_lost = a->lost_records + a->lost_frames;
	if (!a->nrecs && a->ncov) {
		/* No AUX records at all: every received range on its own. */
		for (size_t i = 0; i < a->ncov; i++)
			add_piece(c, &cap, a->buf + a->cov[i].lo, a->cov[i].hi - a->cov[i].lo,
				  a->cov[i].lo, i ? TJ_LOSS : TJ_CONT);
		return;
	}
	if (a->nrecs)		/* AUX data but no AUX record: recs is NULL */
		qsort(a->recs, a->nrecs, sizeof(*a->recs), rec_cmp);
	for (size_t i = 0; i < a->nrecs; i++) {
		const struct auxrec *r = &a->recs[i];
		if (r->flags & BP_AUX_FLAG_TRUNCATED)
			c->truncated++;
		for (uint64_t pos = r->off, end = r->off + r->size; pos < end;) {
			uint64_t run = cov_run(a, pos, end);
			if (run) {
				add_piece(c, &cap, a->buf + pos, run, pos, join);
				join = TJ_CONT;
				pos += run;
			} else {
				uint64_t next = cov_next(a, pos);
				next = next < end ? next : end;
				c->missing_bytes += next - pos;
				join = TJ_LOSS;
				pos = next;
			}
		}
		if (r->flags & BP_AUX_FLAG_TRUNCATED)
			join = TJ_PAUSE;
	}
}

int trace_detect_format(const struct trace_piece *pieces, size_t n)
{
	static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
					 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };

	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = pieces[i].data;
		size_t len = pieces[i].len;
		const uint8_t *a = memmem(p, len, psb, sizeof(psb));
		long b = trace_pkt_find_sync(p, len);
		if (a && (b < 0 || a - p < b))
			return TF_PT;
		if (b >= 0)
			return TF_SSTEP;
	}
	return TF_NONE;
}

int trace_capture_load(struct trace_capture *tc, const char *path, char *err, size_t n)
{
	struct cap_priv *P = calloc(1, sizeof(*P));
	struct wire_dec_ops ops = { .frame = cap_frame, .record = cap_record, .data = cap_data,
				    .unframed = cap_unframed };
	struct capture_reader r;
	struct wire_dec *d;

	memset(tc, 0, sizeof(*tc));
	if (!P)
		return -1;
	P->tc = tc;
	tc->priv = P;
	if (capture_open(&r, path, err, n)) {
		trace_capture_free(tc);
		return -1;
	}
	d = wire_dec_new(&ops, P);
	if (!d || capture_decode(&r, d, err, n)) {
		if (d)
			wire_dec_free(d);
		capture_close_reader(&r);
		trace_capture_free(tc);
		return -1;
	}
	wire_dec_free(d);
	capture_close_reader(&r);
	tc->console = P->console;
	tc->nruns = P->run;
	tc->cpus = calloc(P->nacc ? P->nacc : 1, sizeof(*tc->cpus));
	for (size_t i = 0; i < P->nacc; i++) {
		build_pieces(&P->acc[i], &tc->cpus[tc->ncpus]);
		tc->cpus[tc->ncpus].format = trace_detect_format(tc->cpus[tc->ncpus].pieces,
								 tc->cpus[tc->ncpus].npieces);
		tc->ncpus++;
	}
	return 0;
}

void trace_capture_free(struct trace_capture *tc)
{
	struct cap_priv *P = tc->priv;

	for (size_t i = 0; i < tc->ncpus; i++)
		free(tc->cpus[i].pieces);
	free(tc->cpus);
	if (P) {
		for (size_t i = 0; i < P->nacc; i++) {
			free(P->acc[i].buf);
			free(P->acc[i].cov);
			free(P->acc[i].recs);
		}
		free(P->acc);
		free(P->console);
		free(P);
	}
	memset(tc, 0, sizeof(*tc));
}

/* ===================================================================== */
/* Analysis: counts, call tree, slices                                    */

struct icount {
	const struct trace_insn *ii;
	uint64_t count;
};

struct node {
	const struct trace_sym *fn;
	size_t parent;			/* index, or SIZE_MAX for a root */
	size_t child, next;		/* first child, next sibling (SIZE_MAX: none) */
	uint64_t calls, self, total;
};

struct frame {
	size_t node;
	uint64_t start;
	uint64_t start_tsc;
	uint64_t ret;			/* return address its call pushed; 0 unknown */
};

struct fnstat {
	const struct trace_sym *fn;
	uint64_t insns, calls;
};

struct analysis {
	struct trace_image *im;
	uint32_t cpu;
	/* per instruction */
	struct icount *tab;
	size_t cap, n;
	/* call tree */
	struct node *nodes;
	size_t nnodes, nodes_cap;
	struct frame *stack;
	size_t depth, stack_cap;
	bool pending_call, pending_ret, fresh;
	uint64_t call_ret;		/* return address of the pending call */
	/* slices */
	trace_slice_fn slice;
	void *slice_ctx;
	uint64_t last_step;
	/* TSC interpolation from SYNC anchors */
	uint64_t sync_steps, sync_tsc, prev_sync_steps, prev_sync_tsc;
	/* script */
	FILE *script;
	const struct trace_opts *opts;
	uint64_t script_lines;
	/* gaps, for the report */
	struct { uint64_t step, n; const char *why; } gaps[64];
	size_t ngaps, ngaps_total;
};

static size_t new_node(struct analysis *A, const struct trace_sym *fn, size_t parent)
{
	GROW(A->nodes, A->nnodes, A->nodes_cap);
	A->nodes[A->nnodes] = (struct node){ fn, parent, SIZE_MAX, SIZE_MAX, 0, 0, 0 };
	if (parent != SIZE_MAX) {
		A->nodes[A->nnodes].next = A->nodes[parent].child;
		A->nodes[parent].child = A->nnodes;
	}
	return A->nnodes++;
}

static size_t child_of(struct analysis *A, size_t parent, const struct trace_sym *fn)
{
	size_t c = parent == SIZE_MAX ? SIZE_MAX : A->nodes[parent].child;

	if (parent == SIZE_MAX) {
		for (size_t i = 0; i < A->nnodes; i++)
			if (A->nodes[i].parent == SIZE_MAX && A->nodes[i].fn == fn)
				return i;
		return new_node(A, fn, SIZE_MAX);
	}
	for (; c != SIZE_MAX; c = A->nodes[c].next)
		if (A->nodes[c].fn == fn)
			return c;
	return new_node(A, fn, parent);
}

static uint64_t tsc_of(const struct analysis *A, uint64_t step)
{
	if (!A->sync_tsc)
		return 0;
	if (A->prev_sync_tsc && A->sync_steps > A->prev_sync_steps) {
		double r = (double)(A->sync_tsc - A->prev_sync_tsc) /
			   (double)(A->sync_steps - A->prev_sync_steps);
		return A->sync_tsc + (uint64_t)(r * (double)(step - A->sync_steps));
	}
	return A->sync_tsc;
}

static const char *sym_name(const struct trace_sym *s)
{
	return s ? s->name : "[unknown]";
}

static void emit_slice(struct analysis *A, const struct frame *f, uint64_t end_step)
{
	if (!A->slice)
		return;
	const struct node *nd = &A->nodes[f->node];
	struct trace_slice s = {
		.cpu = A->cpu, .depth = (uint32_t)(A->depth - 1), .name = sym_name(nd->fn),
		.start = f->start, .dur = end_step >= f->start ? end_step - f->start + 1 : 0,
		.start_tsc = f->start_tsc,
	};
	uint64_t t = tsc_of(A, end_step);
	s.dur_tsc = t > f->start_tsc ? t - f->start_tsc : 0;
	A->slice(A->slice_ctx, &s);
}

static void close_all(struct analysis *A)
{
	while (A->depth) {
		emit_slice(A, &A->stack[A->depth - 1], A->last_step);
		A->depth--;
	}
	A->fresh = true;
	A->pending_call = A->pending_ret = false;
}

static void push_frame(struct analysis *A, size_t node, uint64_t step, uint64_t ret)
{
	GROW(A->stack, A->depth, A->stack_cap);
	A->stack[A->depth++] = (struct frame){ node, step, tsc_of(A, step), ret };
}

/* A return to ip: pop to the frame whose call pushed ip (a return may
 * skip frames: longjmp-like code), or one frame if none did. */
static void pop_to(struct analysis *A, uint64_t ip)
{
	size_t keep = A->depth - 1;

	for (size_t i = A->depth; i-- > 0;)
		if (A->stack[i].ret == ip) {
			keep = i;
			break;
		}
	while (A->depth > keep) {
		emit_slice(A, &A->stack[A->depth - 1], A->last_step);
		A->depth--;
	}
}

static void an_insn(void *ctx, uint64_t step, const struct trace_insn *ii)
{
	struct analysis *A = ctx;
	const struct trace_sym *fn = trace_image_sym(A->im, ii->ip);

	/* per instruction */
	if (2 * (A->n + 1) > A->cap) {
		size_t cap = A->cap ? 2 * A->cap : 4096;
		struct icount *t = calloc(cap, sizeof(*t));
		if (!t)
			xrealloc(NULL, (size_t)-1 / 2);
		for (size_t i = 0; i < A->cap; i++) {
			if (!A->tab[i].ii)
				continue;
			size_t h = hash_ip(A->tab[i].ii->ip, cap);
			while (t[h].ii)
				h = (h + 1) & (cap - 1);
			t[h] = A->tab[i];
		}
		free(A->tab);
		A->tab = t;
		A->cap = cap;
	}
	size_t h = hash_ip(ii->ip, A->cap);
	while (A->tab[h].ii && A->tab[h].ii != ii)
		h = (h + 1) & (A->cap - 1);
	if (!A->tab[h].ii) {
		A->tab[h].ii = ii;
		A->n++;
	}
	A->tab[h].count++;

	/* call tree */
	if (A->fresh || !A->depth) {
		size_t nd = child_of(A, SIZE_MAX, fn);
		A->nodes[nd].calls++;
		push_frame(A, nd, step, 0);
		A->fresh = false;
	} else if (A->pending_call) {
		size_t nd = child_of(A, A->stack[A->depth - 1].node, fn);
		A->nodes[nd].calls++;
		push_frame(A, nd, step, A->call_ret);
	} else if (A->pending_ret) {
		pop_to(A, ii->ip);
		if (!A->depth) {
			/* Returned above where tracing began: a new root. */
			size_t nd = child_of(A, SIZE_MAX, fn);
			A->nodes[nd].calls++;
			push_frame(A, nd, step, 0);
		}
	}
	A->pending_call = ii->flow == TK_CALL;
	A->pending_ret = ii->flow == TK_RET;
	A->call_ret = ii->ip + ii->len;
	A->nodes[A->stack[A->depth - 1].node].self++;
	A->last_step = step;

	if (A->script && (!A->opts->have_range ||
			  (ii->ip >= A->opts->lo && ii->ip < A->opts->hi))) {
		if (fn)
			fprintf(A->script, "%3u %12" PRIu64 " %016" PRIx64 " %s+0x%" PRIx64 ":\t%s\n",
				A->cpu, step, ii->ip, fn->name, ii->ip - fn->start, ii->text);
		else
			fprintf(A->script, "%3u %12" PRIu64 " %016" PRIx64 " [unknown]:\t%s\n", A->cpu,
				step, ii->ip, ii->text);
		A->script_lines++;
	}
}

static void an_gap(void *ctx, uint64_t step, uint64_t n, const char *why)
{
	struct analysis *A = ctx;

	if (A->ngaps < 64)
		A->gaps[A->ngaps++] = (typeof(A->gaps[0])){ step, n, why };
	A->ngaps_total++;
	if (A->script) {
		if (n == TRACE_GAP_UNKNOWN)
			fprintf(A->script, "%3u %12" PRIu64 " -- gap: instructions not in the trace (%s)\n",
				A->cpu, step, why);
		else
			fprintf(A->script, "%3u %12" PRIu64 " -- gap: %" PRIu64
				" instructions not in the trace (%s)\n", A->cpu, step, n, why);
	}
	close_all(A);
}

static void an_sync(void *ctx, uint64_t steps, uint64_t tsc)
{
	struct analysis *A = ctx;

	A->prev_sync_steps = A->sync_steps;
	A->prev_sync_tsc = A->sync_tsc;
	A->sync_steps = steps;
	A->sync_tsc = tsc;
}

static const struct trace_sink an_sink = { an_insn, an_gap, an_sync };

static void an_free(struct analysis *A)
{
	free(A->tab);
	free(A->nodes);
	free(A->stack);
}

static void node_totals(struct analysis *A)
{
	/* Children are created after parents: one reverse pass sums up. */
	for (size_t i = 0; i < A->nnodes; i++)
		A->nodes[i].total = A->nodes[i].self;
	for (size_t i = A->nnodes; i-- > 0;)
		if (A->nodes[i].parent != SIZE_MAX)
			A->nodes[A->nodes[i].parent].total += A->nodes[i].total;
}

/* ===================================================================== */
/* Commands                                                               */

struct session_ctx {
	struct trace_capture tc;
	struct trace_image *im;
	char err[256];
};

static int open_all(struct session_ctx *S, const char *capture, const struct trace_opts *o)
{
	const char *elf = o && o->kernel_elf ? o->kernel_elf : "build/kernel.elf";
	size_t idlen;

	memset(S, 0, sizeof(*S));
	if (trace_capture_load(&S->tc, capture, S->err, sizeof(S->err)))
		return -1;
	if (trace_image_load(&S->im, elf, S->err, sizeof(S->err))) {
		trace_capture_free(&S->tc);
		return -1;
	}
	const uint8_t *id = trace_image_build_id(S->im, &idlen);
	if (S->tc.build_id_len && id &&
	    (idlen < S->tc.build_id_len || memcmp(id, S->tc.build_id, S->tc.build_id_len))) {
		if (!o || !o->force) {
			snprintf(S->err, sizeof(S->err),
				 "%s does not match the capture (build-ids differ); "
				 "give the kernel.elf that ran, or force", elf);
			trace_image_free(S->im);
			trace_capture_free(&S->tc);
			return -1;
		}
		fprintf(stderr, "bareperf: warning: %s does not match the capture's build-id\n", elf);
	}
	return 0;
}

static void close_all_s(struct session_ctx *S)
{
	trace_image_free(S->im);
	trace_capture_free(&S->tc);
}

static void decode_cpu(struct session_ctx *S, struct trace_cpu_data *c, struct analysis *A,
		       struct trace_dec_stats *st)
{
	A->im = S->im;
	A->cpu = c->cpu;
	A->fresh = true;
	if (c->format == TF_PT)
		trace_decode_pt(S->im, c->pieces, c->npieces, &an_sink, A, st);
	else
		trace_decode_sstep(S->im, c->pieces, c->npieces, &an_sink, A, st);
	close_all(A);
}

static const char *format_name(int f)
{
	return f == TF_PT ? "Intel PT" : f == TF_SSTEP ? "single-step tracer" : "none";
}

static int fn_cmp(const void *a, const void *b)
{
	const struct fnstat *x = a, *y = b;

	if (x->insns != y->insns)
		return x->insns > y->insns ? -1 : 1;
	return strcmp(sym_name(x->fn), sym_name(y->fn));
}

static int ic_cmp(const void *a, const void *b)
{
	const struct icount *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return x->ii->ip < y->ii->ip ? -1 : x->ii->ip > y->ii->ip;
}

static void print_tree(FILE *out, const struct analysis *A, size_t nd, int depth, int *rows,
		       int max_rows)
{
	for (size_t c = nd; c != SIZE_MAX && *rows < max_rows; c = A->nodes[c].next) {
		const struct node *n = &A->nodes[c];
		fprintf(out, "  %10" PRIu64 " %14" PRIu64 " %12" PRIu64 "  %*s%s\n", n->calls, n->total,
			n->self, 2 * depth, "", sym_name(n->fn));
		(*rows)++;
		if (depth < 32)
			print_tree(out, A, n->child, depth + 1, rows, max_rows);
	}
}

static void report_losses(FILE *out, const struct trace_cpu_data *c)
{
	if (c->truncated)
		fprintf(out, "#   %" PRIu64 " AUX commit%s TRUNCATED (AUX area full: raise aux_pages=)\n",
			c->truncated, c->truncated == 1 ? "" : "s");
	if (c->missing_bytes)
		fprintf(out, "#   %" PRIu64 " AUX bytes announced by AUX records never arrived\n",
			c->missing_bytes);
	if (c->records_lost)
		fprintf(out, "#   %" PRIu64 " record losses on this CPU (LOST records or lost frames): "
			"AUX records may be missing\n", c->records_lost);
}

int trace_report(const char *capture, const struct trace_opts *o, FILE *out)
{
	struct session_ctx S;
	int top = o->top > 0 ? o->top : 25, rc = 0, ncpu = 0;

	if (open_all(&S, capture, o)) {
		fprintf(stderr, "bareperf report --aux: %s\n", S.err);
		return 1;
	}
	for (size_t i = 0; i < S.tc.ncpus; i++) {
		struct trace_cpu_data *c = &S.tc.cpus[i];
		struct analysis A = { 0 };
		struct trace_dec_stats st;

		if (o->cpu >= 0 && (uint32_t)o->cpu != c->cpu)
			continue;
		if (c->format == TF_NONE && !c->records)
			continue;
		ncpu++;
		decode_cpu(&S, c, &A, &st);
		node_totals(&A);

		if (S.tc.nruns > 1)
			fprintf(out, "# run %u of %u\n", c->run, S.tc.nruns);
		fprintf(out, "# cpu %u: %s, %" PRIu64 " AUX bytes in %" PRIu64 " records\n", c->cpu,
			format_name(c->format), st.bytes, c->records);
		fprintf(out, "# reconstructed: %" PRIu64 " instructions\n", st.insns);
		if (st.gaps)
			fprintf(out, "# gaps: %" PRIu64 " (%" PRIu64 " instructions not traced%s)\n",
				st.gaps, st.gap_insns,
				st.gaps_unknown ? ", plus gaps of unknown size" : "");
		for (size_t g = 0; g < A.ngaps; g++) {
			if (A.gaps[g].n == TRACE_GAP_UNKNOWN)
				fprintf(out, "#   gap after step %" PRIu64 ": unknown size (%s)\n",
					A.gaps[g].step, A.gaps[g].why);
			else
				fprintf(out, "#   gap after step %" PRIu64 ": %" PRIu64
					" instructions (%s)\n", A.gaps[g].step, A.gaps[g].n, A.gaps[g].why);
		}
		if (A.ngaps_total > A.ngaps)
			fprintf(out, "#   ... %zu more gaps\n", A.ngaps_total - A.ngaps);
		report_losses(out, c);
		bool exact = false;
		if (c->format == TF_SSTEP) {
			if (st.ended) {
				exact = !st.gaps_unknown && !st.errors &&
					st.insns + st.gap_insns == st.end_steps;
				fprintf(out, "# kernel: %" PRIu64 " instructions traced (STOP END%s)\n",
					st.end_steps, st.ends > 1 ? ", all traced calls" : "");
				fprintf(out, "# %s\n", exact ? (st.gap_insns ?
					"exact: every instruction is accounted for (reconstructed + gaps = kernel's count)" :
					"exact: reconstructed = kernel's count") :
					"NOT exact: the reconstruction and the kernel's count differ");
			} else {
				fprintf(out, "# kernel: no STOP END in the data: its count is unknown\n");
			}
		} else if (c->format == TF_PT) {
			fprintf(out, "# Intel PT: counts are instructions (a REP string instruction "
				"counts once)\n");
		}
		if (st.errors)
			fprintf(out, "# decode errors: %" PRIu64 " (first: %s)\n", st.errors,
				st.first_error);
		if (o->check && !exact)
			rc = 1;

		/* functions */
		struct fnstat *fs = NULL;
		size_t nfs = 0, fcap = 0;
		for (size_t k = 0; k < A.cap; k++) {
			if (!A.tab[k].ii)
				continue;
			const struct trace_sym *fn = trace_image_sym(S.im, A.tab[k].ii->ip);
			size_t j;
			for (j = 0; j < nfs && fs[j].fn != fn; j++)
				;
			if (j == nfs) {
				GROW(fs, nfs, fcap);
				fs[nfs++] = (struct fnstat){ fn, 0, 0 };
			}
			fs[j].insns += A.tab[k].count;
		}
		for (size_t k = 0; k < A.nnodes; k++)
			for (size_t j = 0; j < nfs; j++)
				if (fs[j].fn == A.nodes[k].fn)
					fs[j].calls += A.nodes[k].calls;
		if (nfs)	/* no instruction decoded: fs is NULL */
			qsort(fs, nfs, sizeof(*fs), fn_cmp);
		fprintf(out, "#\n# %12s %7s %10s  %s\n", "instructions", "share", "calls", "function");
		for (size_t j = 0; j < nfs && (int)j < top; j++)
			fprintf(out, "  %12" PRIu64 " %6.2f%% %10" PRIu64 "  %s\n", fs[j].insns,
				st.insns ? 100.0 * (double)fs[j].insns / (double)st.insns : 0.0,
				fs[j].calls, sym_name(fs[j].fn));
		if (nfs > (size_t)top)
			fprintf(out, "  (%zu more functions)\n", nfs - (size_t)top);
		free(fs);

		/* call tree */
		fprintf(out, "#\n# call tree: %10s %14s %12s  %s\n", "calls", "instructions", "self",
			"function");
		int rows = 0;
		for (size_t k = 0; k < A.nnodes; k++)
			if (A.nodes[k].parent == SIZE_MAX)
				print_tree(out, &A, k, 0, &rows, 4 * top);
		/* hottest instructions */
		struct icount *ic = calloc(A.n ? A.n : 1, sizeof(*ic));
		size_t nic = 0;
		for (size_t k = 0; k < A.cap; k++)
			if (A.tab[k].ii)
				ic[nic++] = A.tab[k];
		qsort(ic, nic, sizeof(*ic), ic_cmp);
		fprintf(out, "#\n# %12s %16s  %s\n", "count", "address", "instruction");
		for (size_t j = 0; j < nic && (int)j < top; j++) {
			const struct trace_sym *fn = trace_image_sym(S.im, ic[j].ii->ip);
			fprintf(out, "  %12" PRIu64 " %016" PRIx64 "  %s+0x%" PRIx64 ":  %s\n", ic[j].count,
				ic[j].ii->ip, sym_name(fn), fn ? ic[j].ii->ip - fn->start : 0,
				ic[j].ii->text);
		}
		fprintf(out, "#\n");
		free(ic);
		an_free(&A);
	}
	if (!ncpu) {
		fprintf(out, "# no AUX trace data in %s (run with trace=...)\n", capture);
		rc = o->check ? 1 : 0;
	}
	close_all_s(&S);
	return rc;
}

int trace_script(const char *capture, const struct trace_opts *o, FILE *out)
{
	struct session_ctx S;

	if (open_all(&S, capture, o)) {
		fprintf(stderr, "bareperf script --aux: %s\n", S.err);
		return 1;
	}
	for (size_t i = 0; i < S.tc.ncpus; i++) {
		struct trace_cpu_data *c = &S.tc.cpus[i];
		struct analysis A = { .script = out, .opts = o };
		struct trace_dec_stats st;

		if ((o->cpu >= 0 && (uint32_t)o->cpu != c->cpu) || c->format == TF_NONE)
			continue;
		decode_cpu(&S, c, &A, &st);
		if (st.errors)
			fprintf(out, "%3u -- decode errors: %" PRIu64 " (first: %s)\n", c->cpu, st.errors,
				st.first_error);
		an_free(&A);
	}
	close_all_s(&S);
	return 0;
}

int trace_call_slices(const char *capture, const struct trace_opts *o, trace_slice_fn fn,
		      void *ctx, char *err, size_t n)
{
	struct session_ctx S;

	if (open_all(&S, capture, o)) {
		seterr(err, n, "%s", S.err);
		return -1;
	}
	for (size_t i = 0; i < S.tc.ncpus; i++) {
		struct trace_cpu_data *c = &S.tc.cpus[i];
		struct analysis A = { .slice = fn, .slice_ctx = ctx, .opts = o };
		struct trace_dec_stats st;

		if ((o && o->cpu >= 0 && (uint32_t)o->cpu != c->cpu) || c->format == TF_NONE)
			continue;
		decode_cpu(&S, c, &A, &st);
		an_free(&A);
	}
	close_all_s(&S);
	return 0;
}

int trace_parse_range(struct trace_image *im, const char *s, uint64_t *lo, uint64_t *hi,
		      char *err, size_t n)
{
	char a[128], *dash;
	const struct trace_sym *sym;

	if (strlen(s) >= sizeof(a)) {
		seterr(err, n, "range '%s' is too long", s);
		return -1;
	}
	strcpy(a, s);
	dash = strchr(a, '-');
	if (!dash) {
		/* One function. */
		if (!(sym = trace_image_sym_named(im, a)) || !sym->size) {
			seterr(err, n, "range '%s': not START-END and not a function of kernel.elf", s);
			return -1;
		}
		*lo = sym->start;
		*hi = sym->start + sym->size;
		return 0;
	}
	*dash = 0;
	const char *part[2] = { a, dash + 1 };
	uint64_t v[2];
	for (int i = 0; i < 2; i++) {
		char *end;
		errno = 0;
		v[i] = strtoull(part[i], &end, 0);
		if (*part[i] && !*end && !errno)
			continue;
		if (!(sym = trace_image_sym_named(im, part[i]))) {
			seterr(err, n, "range '%s': '%s' is neither an address nor a symbol", s,
			       part[i]);
			return -1;
		}
		v[i] = i ? sym->start + sym->size : sym->start;
	}
	if (v[0] >= v[1]) {
		seterr(err, n, "range '%s' is empty", s);
		return -1;
	}
	*lo = v[0];
	*hi = v[1];
	return 0;
}

int trace_opts_set_range(struct trace_opts *o, const char *range, char *err, size_t n)
{
	struct trace_image *im;
	int rc;

	if (trace_image_load(&im, o->kernel_elf ? o->kernel_elf : "build/kernel.elf", err, n))
		return -1;
	rc = trace_parse_range(im, range, &o->lo, &o->hi, err, n);
	o->have_range = !rc;
	trace_image_free(im);
	return rc;
}

