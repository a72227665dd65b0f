/*
 * tools/util/trace/insn.c — the instruction decoder (trace.h): capstone's
 * view of one x86-64 instruction, classified as the kernel's tracer does
 * (include/uapi/itrace.h §3), cached per address in the image.
 */
#include <string.h>

#include "tools/util/trace/internal.h"

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

