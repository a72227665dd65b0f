/*
 * trace_sim.c — see trace_sim.h. The program below is only ever read
 * (by capstone, the producer's classifier and the simulator), never run.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "wire/record.h"
#include "tools/util/capture.h"
#include "test/host/trace_sim.h"

/* The program. [sim_begin, sim_end) is "the range"; sim_out and
 * sim_stop lie after it. Loops, sites and outcomes: see struct sim. */
asm(
	"	.text\n"
	"	.p2align 6\n"
	"	.globl sim_begin, sim_end, sim_main, sim_tail, sim_leaf, sim_case0\n"
	"	.globl sim_case1, sim_case2, sim_case3, sim_rec, sim_mid, sim_tramp\n"
	"	.globl sim_stop, sim_out, sim_code_end\n"
	"sim_begin:\n"
	"	.type sim_main, @function\n"
	"sim_main:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	mov $10, %ecx\n"
	"1:	call sim_leaf\n"			/* CALL */
	"	dec %ecx\n"				/* FF /1: SEQ */
	"	jnz 1b\n"				/* A: loop */
	"	lea sim_table(%rip), %rax\n"
	"	xor %edx, %edx\n"
	"2:	call *(%rax,%rdx,8)\n"			/* B: ICALL, the four cases */
	"	inc %edx\n"
	"	cmp $4, %edx\n"
	"	jb 2b\n"				/* C: loop 4 */
	"	call sim_rec\n"				/* binary recursion */
	"	call sim_mid\n"				/* returns through sim_tramp */
	"	mov $5, %ecx\n"
	"	rep stosb\n"				/* D: REP, 5 iterations */
	"	jmp 3f\n"
	"	nop\n"
	"	nop\n"
	"3:	lea sim_jt(%rip), %rax\n"
	"	jmp *(%rax)\n"				/* E: IJMP to sim_tail */
	"	.size sim_main, .-sim_main\n"
	"	.type sim_tail, @function\n"
	"sim_tail:\n"
	"	call sim_out\n"				/* leaves the range */
	"	test %eax, %eax\n"
	"	je 4f\n"				/* F: short forward jcc over one nop */
	"	nop\n"
	"4:	nop\n"
	"	.byte 0x66, 0x90\n"
	"	.byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n"
	"	mov $3, %ecx\n"
	"5:	call sim_leaf\n"
	"	loop 5b\n"				/* G: loop 3 */
	"	nop\n"					/* H: ASYNC site */
	"	pop %rbp\n"
	"	ret\n"					/* to the traced call's return site */
	"	.size sim_tail, .-sim_tail\n"
	"	.type sim_leaf, @function\n"
	"sim_leaf:\n"
	"	nop\n"
	"	ret\n"
	"	.size sim_leaf, .-sim_leaf\n"
	"	.type sim_case0, @function\n"
	"sim_case0:\n"
	"	mov $1, %eax\n"
	"	ret\n"
	"	.size sim_case0, .-sim_case0\n"
	"	.type sim_case1, @function\n"
	"sim_case1:\n"
	"	nop\n"
	"	nop\n"
	"	ret\n"
	"	.size sim_case1, .-sim_case1\n"
	"	.type sim_case2, @function\n"
	"sim_case2:\n"
	"	jmp sim_case0\n"			/* tail jump */
	"	.size sim_case2, .-sim_case2\n"
	"	.type sim_case3, @function\n"
	"sim_case3:\n"
	"	ret\n"
	"	.size sim_case3, .-sim_case3\n"
	"	.type sim_rec, @function\n"
	"sim_rec:\n"
	"	push %rbx\n"
	"	cmp $0, %rdi\n"
	"	je 6f\n"				/* R: base case at depth 3 */
	"	call sim_rec\n"
	"	call sim_rec\n"
	"6:	pop %rbx\n"
	"	ret\n"
	"	.size sim_rec, .-sim_rec\n"
	"	.type sim_mid, @function\n"
	"sim_mid:\n"
	"	call sim_tramp\n"			/* never returns here */
	"	ud2\n"
	"	.size sim_mid, .-sim_mid\n"
	"	.type sim_tramp, @function\n"
	"sim_tramp:\n"
	"	add $8, %rsp\n"				/* T: drops sim_mid's frame */
	"	ret\n"					/* returns to sim_main: not the stack top */
	"	.size sim_tramp, .-sim_tramp\n"
	"sim_end:\n"
	"	.type sim_out, @function\n"
	"sim_out:\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"	.size sim_out, .-sim_out\n"
	"	.type sim_stop, @function\n"
	"sim_stop:\n"
	"	nop\n"
	"	.size sim_stop, .-sim_stop\n"
	"	.p2align 4\n"
	"sim_code_end:\n"
	"	.fill 32, 1, 0xcc\n"
	"	.section .data.rel.ro, \"aw\"\n"
	"	.p2align 3\n"
	"sim_table:\n"
	"	.quad sim_case0, sim_case1, sim_case2, sim_case3\n"
	"sim_jt:\n"
	"	.quad sim_tail\n"
	"	.text\n");

extern const char sim_begin[], sim_end[], sim_main[], sim_tail[], sim_leaf[], sim_case0[],
	sim_case1[], sim_case2[], sim_case3[], sim_rec[], sim_mid[], sim_tramp[], sim_stop[],
	sim_out[], sim_code_end[];

static const struct {
	const char *name;
	const char *addr;
} names[] = {
	{ "sim_main", sim_main }, { "sim_tail", sim_tail }, { "sim_leaf", sim_leaf },
	{ "sim_case0", sim_case0 }, { "sim_case1", sim_case1 }, { "sim_case2", sim_case2 },
	{ "sim_case3", sim_case3 }, { "sim_rec", sim_rec }, { "sim_mid", sim_mid },
	{ "sim_tramp", sim_tramp }, { "sim_out", sim_out }, { "sim_stop", sim_stop },
	{ "sim_begin", sim_begin }, { "sim_end", sim_end }, { "sim_code_end", sim_code_end },
};

uint64_t sim_addr(const char *name)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(names[i].name, name))
			return (uint64_t)(uintptr_t)names[i].addr;
	abort();
}

struct trace_image *sim_image(void)
{
	struct symbol syms[12];
	size_t n = 0;
	uint64_t base = sim_addr("sim_begin"), end = sim_addr("sim_code_end") + 32;

	for (size_t i = 0; i < 12; i++) {
		uint64_t a = (uint64_t)(uintptr_t)names[i].addr, next = end;
		/* Sizes: up to the next function (the .size values, in effect). */
		for (size_t j = 0; j < 12; j++) {
			uint64_t b = (uint64_t)(uintptr_t)names[j].addr;
			if (b > a && b < next)
				next = b;
		}
		if (next > sim_addr("sim_end") && a < sim_addr("sim_end"))
			next = sim_addr("sim_end");
		syms[n++] = (struct symbol){ names[i].name, a, next - a };
	}
	return trace_image_mem(base, (const uint8_t *)(uintptr_t)base, end - base, syms, n);
}

/* ---- the simulator ------------------------------------------------------ */

enum { MAXDEPTH = 256 };

struct sim {
	struct trace_image *im;
	uint64_t A, B, C, D, E, F, G, H, R, T, fwd;
	uint64_t visits[10];
	uint64_t stack[MAXDEPTH], callee[MAXDEPTH];
	int depth;
	int rep_left;
	bool async, async_done;
	uint32_t rounds;
};

/* The nth (from 0) instruction of class cls in [lo, hi). */
static uint64_t find(struct trace_image *im, uint64_t lo, uint64_t hi, int cls, int nth)
{
	for (uint64_t ip = lo; ip < hi;) {
		const struct trace_insn *ii = trace_insn_at(im, ip);
		if (!ii)
			abort();
		if (ii->cls == cls && nth-- == 0)
			return ip;
		ip += ii->len;
	}
	abort();
}

static void sim_init(struct sim *s, struct trace_image *im, const struct sim_opts *o)
{
	uint64_t m = sim_addr("sim_main"), t = sim_addr("sim_tail");

	memset(s, 0, sizeof(*s));
	s->im = im;
	s->A = find(im, m, t, ITRACE_C_JCC, 0);
	s->B = find(im, m, t, ITRACE_C_ICALL, 0);
	s->C = find(im, m, t, ITRACE_C_JCC, 1);
	s->D = find(im, m, t, ITRACE_C_REP, 0);
	s->E = find(im, m, t, ITRACE_C_IJMP, 0);
	s->F = find(im, t, sim_addr("sim_leaf"), ITRACE_C_JCC, 0);
	s->G = find(im, t, sim_addr("sim_leaf"), ITRACE_C_JCC, 1);
	s->H = s->G + trace_insn_at(im, s->G)->len;
	s->fwd = trace_insn_at(im, s->F)->target;
	s->R = find(im, sim_addr("sim_rec"), sim_addr("sim_mid"), ITRACE_C_JCC, 0);
	s->T = sim_addr("sim_tramp");
	s->async = o->async;
	s->rounds = o->rounds ? o->rounds : 1;
	s->rep_left = -1;
}

static int rec_depth(const struct sim *s)
{
	int n = 0;

	for (int i = 0; i < s->depth; i++)
		n += s->callee[i] == sim_addr("sim_rec");
	return n;
}

static uint64_t visit(struct sim *s, int site)
{
	return s->visits[site]++;
}

/*
 * Execute the instruction at ip: the next ip, or 0 when the traced call
 * returns. *ret: what a call pushed (the stack top after it).
 */
static uint64_t sim_exec(struct sim *s, const struct trace_insn *ii, uint64_t *ret, bool *jumped)
{
	uint64_t ip = ii->ip, ft = ip + ii->len;
	uint64_t v;

	*jumped = false;
	switch (ii->cls) {
	case ITRACE_C_SEQ:
		if (ip == s->T)
			s->depth--;			/* add $8, %rsp */
		if (ip == s->H && s->async && !s->async_done) {
			s->async_done = true;
			*jumped = true;
			return s->fwd;			/* "an exception handler resumed elsewhere" */
		}
		return ft;
	case ITRACE_C_JMP:
		return ii->target;
	case ITRACE_C_CALL:
	case ITRACE_C_ICALL: {
		uint64_t to = ii->target;
		if (ii->cls == ITRACE_C_ICALL) {
			static const char *cases[] = { "sim_case0", "sim_case1", "sim_case2",
						       "sim_case3" };
			to = sim_addr(cases[visit(s, 1) % 4]);
		}
		if (s->depth == MAXDEPTH)
			abort();
		s->stack[s->depth] = ft;
		s->callee[s->depth++] = to;
		*ret = ft;
		return to;
	}
	case ITRACE_C_JCC: {
		bool taken;
		if (ip == s->A) {
			v = visit(s, 0);
			taken = v % (10 * s->rounds) != 10 * s->rounds - 1;
		} else if (ip == s->C) {
			taken = visit(s, 2) % (4 * s->rounds) != 4 * s->rounds - 1;
		} else if (ip == s->F) {
			taken = visit(s, 5) % 2 == 0;
		} else if (ip == s->G) {
			taken = visit(s, 6) % 3 != 2;
		} else if (ip == s->R) {
			taken = rec_depth(s) >= 3;
		} else {
			abort();
		}
		return taken ? ii->target : ft;
	}
	case ITRACE_C_REP:
		if (s->rep_left < 0)
			s->rep_left = 5;
		if (s->rep_left-- > 0)
			return ip;
		s->rep_left = -1;
		return ft;
	case ITRACE_C_RET:
		if (!s->depth)
			return 0;
		return s->stack[--s->depth];
	case ITRACE_C_IJMP:
		if (ip == s->E)
			return sim_addr("sim_tail");
		abort();
	}
	abort();
}

/* ---- ring, drain, capture ------------------------------------------------ */

struct sim_ring {
	struct bp_ring rb;
	uint8_t *mem;
	uint64_t size, aux_size;
};

struct drain {
	struct wire_enc enc;
	uint8_t *out;
	size_t len, cap;
	int drop;
	uint64_t aux_frames;
};

static void append(struct drain *D, const void *p, size_t n)
{
	if (D->len + n > D->cap) {
		D->cap = 2 * (D->len + n) + 65536;
		D->out = realloc(D->out, D->cap);
		if (!D->out)
			abort();
	}
	memcpy(D->out + D->len, p, n);
	D->len += n;
}

static void drain(struct sim_ring *R, struct drain *D)
{
	static uint8_t stage[1 << 20], recbuf[BP_RECORD_MAX + 8], tmp[WIRE_ENC_OUT_MIN];
	struct bp_ring_reader r;
	const struct bp_record_header *rec;
	size_t len = 0, used;

	if (bp_ring_reader_init(&r, R->mem, R->size))
		abort();
	bp_ring_read_begin(&r);
	while (len + BP_RECORD_MAX <= sizeof(stage) &&
	       bp_ring_read_next(&r, &rec, recbuf, sizeof(recbuf)) == 1) {
		memcpy(stage + len, rec, rec->size);
		len += rec->size;
	}
	for (size_t done = 0; done < len; done += used) {
		size_t w = wire_encode_records(&D->enc, stage + done, len - done, &used, tmp,
					       sizeof(tmp));
		append(D, tmp, w);
		if (!used)
			abort();
	}
	bp_ring_read_end(&r);
	uint64_t head = bp_ring_aux_head(&r), tail = r.ctl->aux_tail;
	while (tail < head) {
		uint64_t pos = tail & (R->aux_size - 1), n = head - tail;
		if (n > R->aux_size - pos)
			n = R->aux_size - pos;
		if (n > 512)
			n = 512;
		size_t w = wire_encode_aux(&D->enc, tail, r.aux + pos, n, &used, tmp, sizeof(tmp));
		if ((int64_t)D->aux_frames++ != D->drop)
			append(D, tmp, w);
		tail += used;
	}
	bp_ring_aux_release(&r, tail);
}

static const uint8_t *fetch(void *ctx, uint64_t ip)
{
	(void)ctx;
	return (const uint8_t *)(uintptr_t)ip;
}

static uint64_t fake_tsc(void *ctx)
{
	uint64_t *t = ctx;

	return *t += 37;
}

static void add_truth(uint64_t **v, size_t *n, size_t *cap, uint64_t ip)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 4096;
		*v = realloc(*v, *cap * sizeof(**v));
		if (!*v)
			abort();
	}
	(*v)[(*n)++] = ip;
}

int sim_run(const struct sim_opts *o, struct sim_result *r)
{
	static struct sim_ring R __attribute__((aligned(64)));
	struct trace_image *im = sim_image();
	uint32_t aux_pages = o->aux_pages ? o->aux_pages : 16, data_pages = 16;
	uint64_t lo = 0, hi = ~0ull, tsc = 1000;
	struct itrace_hooks hooks = { fetch, fake_tsc, &tsc };
	struct itrace_cpu *cpu = calloc(1, sizeof(*cpu));
	struct drain D = { .drop = o->drop_aux_frame };
	size_t cap_t = 0, cap_r = 0;
	struct wire_enc_config ec = { .cpu = 0 };

	memset(r, 0, sizeof(*r));
	if (!im || !cpu)
		return -1;
	memset(&R.rb, 0, sizeof(R.rb));
	R.aux_size = (uint64_t)aux_pages * 4096;
	R.size = (1 + data_pages + aux_pages) * 4096ull;
	R.mem = aligned_alloc(4096, R.size);
	if (!R.mem || bp_ring_init(&R.rb, R.mem, (1 + data_pages) * 4096ull, NULL) ||
	    bp_ring_aux_init(&R.rb, (1 + data_pages) * 4096ull, R.aux_size, 0, 0))
		return -1;
	wire_encoder_init(&D.enc, &ec);
	if (o->ranged) {
		lo = sim_addr("sim_begin");
		hi = sim_addr("sim_end");
	}
	for (uint32_t call = 0; call < (o->calls ? o->calls : 1); call++) {
		struct sim s;
		uint64_t ip = sim_addr("sim_main"), steps_since = 0;
		sim_init(&s, im, o);
		itrace_start(cpu, &R.rb, lo, hi, &hooks);
		itrace_step(cpu, ip, 0);
		for (;;) {
			const struct trace_insn *ii = trace_insn_at(im, ip);
			uint64_t ret = 0, next;
			bool jumped;
			if (!ii)
				abort();
			next = sim_exec(&s, ii, &ret, &jumped);
			r->sim_insns++;
			if (ip >= lo && ip < hi) {
				add_truth(&r->truth, &r->ntruth, &cap_t, ip);
				if (!(ii->cls == ITRACE_C_REP && next == ip))
					add_truth(&r->rep_collapsed, &r->nrep, &cap_r, ip);
			}
			if (!next) {
				itrace_stop(cpu, sim_addr("sim_stop"), 0);
				break;
			}
			itrace_step(cpu, next, ret);
			ip = next;
			if (o->drain_every && ++steps_since % o->drain_every == 0)
				drain(&R, &D);
		}
		for (int tries = 0; !itrace_finish(cpu) && tries < 4; tries++)
			drain(&R, &D);
		drain(&R, &D);
		r->steps = cpu->steps;
		const uint64_t *a = (const uint64_t *)&cpu->st;
		uint64_t *b = (uint64_t *)&r->st;
		for (size_t i = 0; i < sizeof(r->st) / sizeof(uint64_t); i++)
			b[i] += a[i];
	}
	r->stream = D.out;
	r->stream_len = D.len;
	r->aux_frames = D.aux_frames;
	free(R.mem);
	free(cpu);
	trace_image_free(im);
	return 0;
}

void sim_free(struct sim_result *r)
{
	free(r->truth);
	free(r->rep_collapsed);
	free(r->stream);
	memset(r, 0, sizeof(*r));
}

int sim_write_capture(const struct sim_result *r, const char *path)
{
	struct capture_writer w;
	struct capture_meta m = { .link_kind = WIRE_LINK_FILE, .link = "trace_sim" };
	char err[256];

	if (capture_create(&w, path, &m, err, sizeof(err)) ||
	    capture_append(&w, r->stream, r->stream_len, err, sizeof(err)) ||
	    capture_close(&w, 0, err, sizeof(err))) {
		fprintf(stderr, "trace_sim: %s\n", err);
		return -1;
	}
	return 0;
}

/* ---- the same path as Intel PT -------------------------------------------- */

struct ptenc {
	struct pt_encoder *e;
	uint64_t tnt;
	uint8_t ntnt;
};

static void pt_put(struct ptenc *p, struct pt_packet *pk)
{
	if (pt_enc_next(p->e, pk) < 0)
		abort();
}

static void pt_flush(struct ptenc *p)
{
	struct pt_packet pk = { .type = ppt_tnt_8 };

	if (!p->ntnt)
		return;
	pk.payload.tnt.bit_size = p->ntnt;
	pk.payload.tnt.payload = p->tnt;
	pt_put(p, &pk);
	p->tnt = 0;
	p->ntnt = 0;
}

static void pt_ip(struct ptenc *p, enum pt_packet_type t, uint64_t ip)
{
	struct pt_packet pk = { .type = t };

	pt_flush(p);
	pk.payload.ip.ipc = pt_ipc_full;
	pk.payload.ip.ip = ip;
	pt_put(p, &pk);
}

size_t sim_pt_encode(const struct sim_opts *o, uint8_t *buf, size_t cap)
{
	struct trace_image *im = sim_image();
	struct pt_config cfg;
	struct ptenc p = { 0 };
	struct pt_packet pk;
	struct sim s;
	uint64_t ip = sim_addr("sim_main");

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + cap;
	p.e = pt_alloc_encoder(&cfg);
	if (!p.e || !im)
		abort();
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_psb;
	pt_put(&p, &pk);
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_mode;
	pk.payload.mode.leaf = pt_mol_exec;
	pk.payload.mode.bits.exec.csl = 1;
	pt_put(&p, &pk);
	memset(&pk, 0, sizeof(pk));
	pk.type = ppt_psbend;
	pt_put(&p, &pk);
	pt_ip(&p, ppt_tip_pge, ip);
	sim_init(&s, im, o);
	for (;;) {
		const struct trace_insn *ii = trace_insn_at(im, ip);
		uint64_t ret, next;
		bool jumped;
		next = sim_exec(&s, ii, &ret, &jumped);
		if (!next) {
			pt_ip(&p, ppt_tip_pgd, sim_addr("sim_stop"));
			break;
		}
		switch (ii->cls) {
		case ITRACE_C_JCC:
			p.tnt = p.tnt << 1 | (next != ip + ii->len);
			if (++p.ntnt == 6)
				pt_flush(&p);
			break;
		case ITRACE_C_RET:
		case ITRACE_C_ICALL:
		case ITRACE_C_IJMP:
			pt_ip(&p, ppt_tip, next);
			break;
		default:
			break;
		}
		ip = next;
	}
	uint64_t off = 0;
	pt_enc_get_offset(p.e, &off);
	pt_free_encoder(p.e);
	trace_image_free(im);
	return (size_t)off;
}
