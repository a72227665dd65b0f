/*
 * bench_code.c — RUN_CODE: measure machine code the host sent (contract
 * and register convention in apps/bench_code.h).
 */
#include "apps/bench_code.h"
#include "apps/bench_state.h"
#include "apps/bench.h"
#include "apps/program.h"
#include "kernel/platform/apic.h"
#include "kernel/percpu.h"
#include "kernel/smp.h"
#include "apps/control.h"
#include "kernel/trap.h"
#include "apps/bench_code_trap.h"
#include "kernel/mm.h"
#include "kernel/lib/hash.h"
#include "pmu/pmu.h"
#include <uapi/wire.h>

#define run bench_run_state
#define area bench_code_area


/* The registers that point into memory areas of their own, nanoBench's:
 * each area's top, pages and middle. */
enum { REG_R14, REG_RDI, REG_RSI, REG_RSP, REG_RBP, NREG_AREAS };
static const char *const reg_name[NREG_AREAS] = { "R14", "RDI", "RSI", "RSP", "RBP" };
static struct reg_area { u64 top, pages, mid; } reg_area[NREG_AREAS];
/* R14's area mapped this many times; each CPU's count when it last
 * dropped its translations. */
static u64 r14_maps, r14_maps_seen[MAX_CPUS];
static u64 saved_rsp;		/* the kernel RSP inside the generated function */
static u64 code_cr3;		/* the code's page tables (paging_code_cr3) */
static u32 kernel_efer;		/* EFER as the kernel runs with it (its high half is 0) */
static u64 image_hash_ref;	/* image_hash() before any code ran */
/* The code area's first pages, read-only and executable: the last code
 * generated, up to area_code_end; the pages after them stay writable and
 * not executable. */
static u64 area_exec_pages, area_code_end;
static char stopped[200];	/* what code did that stops code in this boot, or "" */

/* Name what bench_code_guarded found and put back at once: CR0, CR4 and
 * the GS bases (appended to buf). */
static void cpu_said(const struct bench_code_cpu *was, const struct bench_code_cpu *found,
		     char *buf, size_t n)
{
	static const struct { size_t off; const char *name; } regs[] = {
		{ offsetof(struct bench_code_cpu, cr0), "CR0" },
		{ offsetof(struct bench_code_cpu, cr4), "CR4" },
		{ offsetof(struct bench_code_cpu, efer), "EFER" },
		{ offsetof(struct bench_code_cpu, gs_base), "GS_BASE" },
		{ offsetof(struct bench_code_cpu, kernel_gs_base), "KERNEL_GS_BASE" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(regs); i++) {
		u64 w = *(const u64 *)((const u8 *)was + regs[i].off);
		u64 f = *(const u64 *)((const u8 *)found + regs[i].off);
		size_t have = strlen(buf);
		if (f != w && have < n)
			ksnprintf(buf + have, n - have, "%s%s (was %#lx, now %#lx)",
				  have ? ", " : "", regs[i].name, w, f);
	}
}

/*
 * FNV-1a (kernel/lib/hash.h) over the words [p, end) in four lanes, word
 * i into lane i % 4, the lanes then folded into h: as with one lane a
 * change to any one word changes the result (each step is a bijection of
 * its lane, each fold of the running value), in fewer instructions a
 * word: under QEMU's TCG the time is the instructions'.
 */
static u64 hash_words(u64 h, const u64 *p, const u64 *end)
{
	u64 l0 = h, l1 = h + 1, l2 = h + 2, l3 = h + 3;

	for (; p + 4 <= end; p += 4) {
		l0 = fnv1a(l0, p[0]);
		l1 = fnv1a(l1, p[1]);
		l2 = fnv1a(l2, p[2]);
		l3 = fnv1a(l3, p[3]);
	}
	for (; p < end; p++)
		l0 = fnv1a(l0, *p);
	return fnv1a(fnv1a(fnv1a(fnv1a(h, l0), l1), l2), l3);
}

/* hash_words over [p, p + n), its last n % 8 bytes one at a time. */
static u64 hash_bytes(u64 h, const u8 *p, size_t n)
{
	h = hash_words(h, (const u64 *)p, (const u64 *)p + n / 8);
	for (size_t i = n & ~7ul; i < n; i++)
		h = fnv1a(h, p[i]);
	return h;
}

/*
 * The kernel's code and read-only data, hashed once before any snippet
 * runs and again after each: a change cannot be put back (nothing says
 * which bytes were right), so it stops code running in this boot.
 */
static u64 image_hash(void)
{
	u64 h = hash_words(FNV1A_START, (const u64 *)__text_start, (const u64 *)__text_end);

	return hash_words(h, (const u64 *)__rodata_start, (const u64 *)__rodata_end);
}

/*
 * What the CPU reads behind the kernel's back, hashed before the code runs
 * and after: every page-table entry (paging_hash) and the bytes of the GDT
 * and the IDT that GDTR and IDTR name. Like the image, a change cannot be
 * put back, so it stops code running in this boot.
 */
static u64 tables_hash(const struct sys_state *s)
{
	u64 h = paging_hash();

	h = hash_bytes(h, (const u8 *)s->gdt.base, (size_t)s->gdt.limit + 1);
	return hash_bytes(h, (const u8 *)s->idt.base, (size_t)s->idt.limit + 1);
}

/* ---- code generation ---------------------------------------------------- */

struct gen {
	u8 *p, *end;
	bool full;
};

static void emit(struct gen *g, const void *b, size_t n)
{
	if ((size_t)(g->end - g->p) < n) {
		g->full = true;
		return;
	}
	memcpy(g->p, b, n);
	g->p += n;
}

/* n copies of b: one emitted, then what is written so far copied after
 * itself until there are n (a memcpy a doubling, not one per copy). */
static void emit_copies(struct gen *g, const void *b, size_t len, u64 n)
{
	u8 *first = g->p;
	u64 have = 1;

	if (!n || !len)
		return;
	if ((size_t)(g->end - g->p) / len < n) {
		g->full = true;
		return;
	}
	emit(g, b, len);
	while (have < n) {
		u64 more = MIN(have, n - have);
		memcpy(g->p, first, more * len);
		g->p += more * len;
		have += more;
	}
}

static void emit_imm64(struct gen *g, const u8 *op, u64 imm)
{
	emit(g, op, 2);
	emit(g, &imm, 8);
}

struct code_req {
	const u8 *body, *init, *late, *once;
	u64 body_len, init_len, late_len, once_len;
	u64 unroll, loops, reps, warmup, initial, flags, timeout_ms, align, cpu;
	u64 r14_pages;
	struct bench_opts o;
};

/* LFENCE, then runs of 1-byte and 15-byte NOPs: the front end drained. */
static void emit_drain(struct gen *g)
{
	static const u8 lfence[] = { 0x0f, 0xae, 0xe8 }, nop = 0x90;
	static const u8 nop15[] = {
		0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x2e,		/* prefixes, */
		0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,		/* nopw 0(rax,rax) */
	};

	emit(g, lfence, sizeof(lfence));
	for (int i = 0; i < BENCH_CODE_DRAIN_NOP1; i++)
		emit(g, &nop, 1);
	for (int i = 0; i < BENCH_CODE_DRAIN_NOP15; i++)
		emit(g, nop15, sizeof(nop15));
}

/* A version's head, its entry (run.fn[k]) to the end of the late-init
 * code and its drain: saves, the registers set, the init codes. */
static void gen_head(struct gen *g, const struct code_req *r, int k)
{
	static const u8 pro[] = {
		0x53, 0x55, 0x41, 0x54, 0x41, 0x55, 0x41, 0x56, 0x41, 0x57,	/* push rbx..r15 */
		0x9c, 0xfc,							/* pushfq; cld */
	};
	static const u8 zero[] = {
		0x31, 0xc0, 0x31, 0xdb, 0x31, 0xc9, 0x31, 0xd2,
		0x45, 0x31, 0xc0, 0x45, 0x31, 0xc9, 0x45, 0x31, 0xd2, 0x45, 0x31, 0xdb,
		0x45, 0x31, 0xe4, 0x45, 0x31, 0xed,				/* xor r32, r32 */
	};
	/* mov REG, imm64 for R14 RDI RSI RSP RBP (reg_area's order) */
	static const u8 mov_reg[NREG_AREAS][2] = {
		{ 0x49, 0xbe }, { 0x48, 0xbf }, { 0x48, 0xbe }, { 0x48, 0xbc }, { 0x48, 0xbd },
	};
	static const u8 mov_rax[] = { 0x48, 0xb8 }, mov_r15[] = { 0x49, 0xbf };
	static const u8 save_rsp[] = { 0x48, 0x89, 0x20 };		/* mov [rax], rsp */
	static const u8 cr3_write[] = { 0x0f, 0x22, 0xd8 };		/* mov cr3, rax */
	bool drain = r->flags & WIRE_CODEF_DRAIN;

	run.fn[k] = (u64)g->p;
	emit(g, pro, sizeof(pro));
	emit_imm64(g, mov_rax, (u64)&saved_rsp);
	emit(g, save_rsp, sizeof(save_rsp));
	for (int i = 0; i < NREG_AREAS; i++)
		emit_imm64(g, mov_reg[i], reg_area[i].mid);
	/* The code's page tables, once RSP is on the code's own stack: an
	 * interrupt's frame goes there, writable in both. */
	emit_imm64(g, mov_rax, code_cr3);
	emit(g, cr3_write, sizeof(cr3_write));
	if (r->loops)
		emit_imm64(g, mov_r15, r->loops);
	emit(g, zero, sizeof(zero));
	run.init[k] = (u64)g->p;
	emit(g, r->init, r->init_len);
	run.init_end[k] = (u64)g->p;
	if (drain)
		emit_drain(g);
	run.late[k] = (u64)g->p;
	emit(g, r->late, r->late_len);
	run.late_end[k] = (u64)g->p;
	if (drain)
		emit_drain(g);
}

/* A version's tail: the body's `copies` copies from the alignment asked
 * for (run.body[k]), the loop around them, the put-back and the return. */
static void gen_tail(struct gen *g, const struct code_req *r, u64 copies, int k)
{
	static const u8 epi[] = {
		0x48, 0x8b, 0x20,						/* mov rsp, [rax] */
		0x9d, 0x41, 0x5f, 0x41, 0x5e, 0x41, 0x5d, 0x41, 0x5c, 0x5d, 0x5b, /* popfq, pops */
		0xc3,
	};
	static const u8 mov_rax[] = { 0x48, 0xb8 };
	static const u8 dec_r15[] = { 0x49, 0xff, 0xcf }, nop = 0x90;
	static const u8 cr3_write[] = { 0x0f, 0x22, 0xd8 };		/* mov cr3, rax */
	/* EFER back if the code changed it, what it was kept in R9 (0 if
	 * not), then stored at RSI = &run.efer_seen if not 0. */
	static const u8 efer_read[] = {
		0xb9, 0x80, 0x00, 0x00, 0xc0, 0x0f, 0x32,		/* mov ecx, EFER; rdmsr */
		0x45, 0x31, 0xc9, 0x3d,					/* xor r9d, r9d; cmp eax, */
	}, efer_back[] = {
		0x74, 0x0c, 0x41, 0x89, 0xc1, 0xb8,			/* je +12; mov r9d, eax; mov eax, */
	}, efer_write[] = {
		0x31, 0xd2, 0x0f, 0x30,					/* xor edx, edx; wrmsr */
	}, efer_keep[] = {
		0x45, 0x85, 0xc9, 0x74, 0x03, 0x4c, 0x89, 0x0e,		/* test r9d, r9d; jz +3; mov [rsi], r9 */
	};
	/* The kernel's GS base, CR0 and CR4 back if the code changed them
	 * (SWAPGS; CR0.TS makes SSE fault), what was there instead kept in
	 * run.*.seen: RSI = &run.gs, &run.cr0, &run.cr4. */
	static const u8 gs_read[] = {
		0xb9, 0x01, 0x01, 0x00, 0xc0,				/* mov ecx, MSR_GS_BASE */
		0x0f, 0x32, 0x48, 0xc1, 0xe2, 0x20, 0x48, 0x09, 0xd0,	/* rdmsr; rax = edx:eax */
	}, mov_rsi[] = { 0x48, 0xbe };
	static const u8 gs_back[] = {
		0x48, 0x3b, 0x06, 0x74, 0x10,				/* cmp rax, [rsi]; je +16 */
		0x48, 0x89, 0x46, 0x08, 0x48, 0x8b, 0x06,		/* [rsi + 8] = rax; rax = [rsi] */
		0x48, 0x89, 0xc2, 0x48, 0xc1, 0xea, 0x20, 0x0f, 0x30,	/* edx:eax = rax; wrmsr */
	};
	static const u8 cr0_read[] = { 0x0f, 0x20, 0xc0 }, cr4_read[] = { 0x0f, 0x20, 0xe0 };
	static const u8 cr_back[] = {
		0x48, 0x3b, 0x06, 0x74, 0x0a,				/* cmp rax, [rsi]; je +10 */
		0x48, 0x89, 0x46, 0x08, 0x48, 0x8b, 0x06,		/* [rsi + 8] = rax; rax = [rsi] */
	}, cr0_write[] = { 0x0f, 0x22, 0xc0 }, cr4_write[] = { 0x0f, 0x22, 0xe0 };
	bool drain = r->flags & WIRE_CODEF_DRAIN;

	while (!g->full && ((u64)g->p & 63) != r->align)
		emit(g, &nop, 1);
	run.body[k] = (u64)g->p;
	emit_copies(g, r->body, r->body_len, copies);
	run.body_end[k] = (u64)g->p;
	if (r->loops) {
		emit(g, dec_r15, sizeof(dec_r15));
		/* jnz rel32 back to the first copy */
		s32 rel = (s32)((s64)run.body[k] - (s64)((u64)g->p + 6));
		u8 jnz[6] = { 0x0f, 0x85 };
		memcpy(jnz + 2, &rel, 4);
		emit(g, jnz, sizeof(jnz));
	}
	if (drain)
		emit_drain(g);
	/* EFER first, before anything is read through the page tables: with
	 * NXE clear an entry with NX set is a reserved-bit #PF (SDM Vol. 3A
	 * 4.7), and the switch to the kernel's tables empties the TLB. */
	emit(g, efer_read, sizeof(efer_read));
	emit(g, &kernel_efer, 4);
	emit(g, efer_back, sizeof(efer_back));
	emit(g, &kernel_efer, 4);
	emit(g, efer_write, sizeof(efer_write));
	/* The kernel's page tables back before anything writes its memory. */
	emit_imm64(g, mov_rax, run.kernel_cr3);
	emit(g, cr3_write, sizeof(cr3_write));
	emit_imm64(g, mov_rsi, (u64)&run.efer_seen);
	emit(g, efer_keep, sizeof(efer_keep));
	emit_imm64(g, mov_rsi, (u64)&run.cr4);
	emit(g, cr4_read, sizeof(cr4_read));
	emit(g, cr_back, sizeof(cr_back));
	emit(g, cr4_write, sizeof(cr4_write));
	emit_imm64(g, mov_rsi, (u64)&run.cr0);
	emit(g, cr0_read, sizeof(cr0_read));
	emit(g, cr_back, sizeof(cr_back));
	emit(g, cr0_write, sizeof(cr0_write));
	emit(g, gs_read, sizeof(gs_read));
	emit_imm64(g, mov_rsi, (u64)&run.gs);
	emit(g, gs_back, sizeof(gs_back));
	emit_imm64(g, mov_rax, (u64)&saved_rsp);
	emit(g, epi, sizeof(epi));
	while (!g->full && ((u64)g->p & 63))
		emit(g, &nop, 1);
}

/* One version of the function with `copies` copies; its layout in run. */
static void gen_fn(struct gen *g, const struct code_req *r, u64 copies, int k)
{
	gen_head(g, r, k);
	gen_tail(g, r, copies, k);
}

/* A jmp rel32 to `to`, written at `at`. */
static void put_jmp(u8 *at, u64 to)
{
	s32 rel = (s32)((s64)to - (s64)((u64)at + 5));

	at[0] = 0xe9;
	memcpy(at + 1, &rel, 4);
}

/*
 * The two versions, a with copies_a copies and b with copies_b, into g;
 * how many copies that wrote. Where a's copies can be the last copies_a
 * of b's, at the alignment a would have of its own (nanoBench's: each
 * version's first copy at the same offset from a 64-byte boundary), and
 * no loop goes back to a first copy, a's head jumps into b's copies and
 * b's head jumps to its first: the copies are written (and, under TCG,
 * translated) once, both versions run one jmp more, and a's run is b's
 * without its first copies_b - copies_a copies. Else each version has
 * copies of its own.
 */
static u64 gen_versions(struct gen *g, const struct code_req *r, u64 copies_a, u64 copies_b)
{
	u64 skip = copies_b - copies_a;

	if (r->loops || copies_b < copies_a || skip % 64 * (r->body_len % 64) % 64) {
		gen_fn(g, r, copies_a, 0);
		gen_fn(g, r, copies_b, 1);
		return copies_a + copies_b;
	}
	u8 jmp[5] = { 0 }, *jmp_b;

	gen_head(g, r, 1);
	jmp_b = g->p;
	emit(g, jmp, sizeof(jmp));
	gen_tail(g, r, copies_b, 1);
	gen_head(g, r, 0);
	u8 *jmp_a = g->p;
	emit(g, jmp, sizeof(jmp));
	if (g->full)
		return copies_b;
	put_jmp(jmp_b, run.body[1]);
	run.body[0] = run.body[1] + skip * r->body_len;
	run.body_end[0] = run.body_end[1];
	put_jmp(jmp_a, run.body[0]);
	return copies_b;
}

/* How far the store after the one at va goes (drop_translations): 64
 * bytes in the last code's copies of the body (run.body[k], versions 0
 * and 1) but in a page's last 64, else 8. */
static u64 drop_step(u64 va)
{
	if ((va & (PAGE_SIZE - 1)) >= PAGE_SIZE - 64)
		return 8;
	for (int k = 0; k < 2; k++)
		if (va >= run.body[k] && va < run.body_end[k])
			return 64;
	return 8;
}

/*
 * Under TCG, a store to a page that holds translated code takes QEMU's
 * slow path (dropping the translations it overlaps) for as long as any
 * are left on the page: the last code's pages, written over eight bytes
 * at a time, cost several times a fresh page. A store into each
 * translation first drops them all, each word written back as it was:
 * around the copies (the entries, the registers set, the put-back), a
 * translation is a few instructions, ended by a CR3 or MSR write, a jump
 * or a page's end, and each aligned 8-byte word is written; in the
 * copies one runs up to 512 instructions or to its page's end, and a
 * store every 64 bytes, every 8 in a page's last 64, meets each. One a
 * store misses (a body of branches) keeps its page on the slow path
 * while the new code is written: it costs time only.
 */
static void drop_translations(u64 va, u64 end)
{
	for (u64 p = va; p < end; p += drop_step(p))
		*(volatile u64 *)p = *(volatile u64 *)p;
}

/* ---- the request ------------------------------------------------------- */

static int take_u64(const u8 *v, size_t len, u64 *out)
{
	if (len != sizeof(u64))
		return -1;
	memcpy(out, v, sizeof(u64));
	return 0;
}

static int parse(const u8 *p, size_t len, struct code_req *r)
{
	memset(r, 0, sizeof(*r));
	r->unroll = 1000;
	r->reps = 10;
	r->warmup = 5;
	r->timeout_ms = BENCH_CODE_TIMEOUT_MS;
	r->cpu = this_cpu_id();
	r->r14_pages = BENCH_CODE_REG_PAGES;
	bench_opts_default(&r->o);
	u64 r14_size = r->r14_pages * PAGE_SIZE;
	while (len) {
		struct wire_ctl_msg t;
		if (len < sizeof(t)) {
			control_reply(WIRE_CTL_ERROR, "RUN_CODE: a parameter is cut short", 34);
			return -1;
		}
		memcpy(&t, p, sizeof(t));
		const u8 *v = p + sizeof(t);
		if (t.len > len - sizeof(t)) {
			control_replyf(WIRE_CTL_ERROR, "RUN_CODE: parameter %u runs past the message",
				       t.type);
			return -1;
		}
		int bad = 0;
		switch (t.type) {
		case WIRE_CODE_BODY:
		case WIRE_CODE_INIT:
		case WIRE_CODE_LATE_INIT:
		case WIRE_CODE_ONE_TIME_INIT:
			if (t.len > WIRE_CODE_MAX) {
				control_replyf(WIRE_CTL_ERROR, "RUN_CODE: %u bytes of code; at most %u",
					       t.len, WIRE_CODE_MAX);
				return -1;
			}
			if (t.type == WIRE_CODE_BODY)
				r->body = v, r->body_len = t.len;
			else if (t.type == WIRE_CODE_INIT)
				r->init = v, r->init_len = t.len;
			else if (t.type == WIRE_CODE_LATE_INIT)
				r->late = v, r->late_len = t.len;
			else
				r->once = v, r->once_len = t.len;
			break;
		case WIRE_CODE_UNROLL:	bad = take_u64(v, t.len, &r->unroll); break;
		case WIRE_CODE_LOOPS:	bad = take_u64(v, t.len, &r->loops); break;
		case WIRE_CODE_REPS:	bad = take_u64(v, t.len, &r->reps); break;
		case WIRE_CODE_WARMUP:	bad = take_u64(v, t.len, &r->warmup); break;
		case WIRE_CODE_INITIAL_WARMUP: bad = take_u64(v, t.len, &r->initial); break;
		case WIRE_CODE_FLAGS:	bad = take_u64(v, t.len, &r->flags); break;
		case WIRE_CODE_TIMEOUT_MS: bad = take_u64(v, t.len, &r->timeout_ms); break;
		case WIRE_CODE_ALIGN:	bad = take_u64(v, t.len, &r->align); break;
		case WIRE_CODE_CPU:	bad = take_u64(v, t.len, &r->cpu); break;
		case WIRE_CODE_R14_SIZE: bad = take_u64(v, t.len, &r14_size); break;
		case WIRE_CODE_EVENT:
			bad = r->o.nevents >= BENCH_MAX_EVENTS || !t.len ||
			      t.len >= BENCH_NAME_MAX;
			if (!bad) {
				for (u32 i = 0; i < t.len; i++)
					bad |= v[i] < 0x21 || v[i] > 0x7e;
				memcpy(r->o.events[r->o.nevents], v, t.len);
				r->o.events[r->o.nevents++][t.len] = 0;
			}
			break;
		case WIRE_CODE_EVENT_CTR:
		case WIRE_CODE_EVENT_MSR:
			bad = bench_event_opt_take(&r->o, t.type, v, t.len) != 0;
			break;
		default:
			control_replyf(WIRE_CTL_ERROR, "RUN_CODE: unknown parameter %u", t.type);
			return -1;
		}
		if (bad) {
			control_replyf(WIRE_CTL_ERROR, "RUN_CODE: parameter %u is malformed or too long "
				       "(at most %d events of %d characters)", t.type,
				       BENCH_MAX_EVENTS, BENCH_NAME_MAX - 1);
			return -1;
		}
		p += sizeof(t) + t.len;
		len -= sizeof(t) + t.len;
	}
	const char *why = !r->body_len ? "no code (BODY) given" :
			  !r->unroll || r->unroll > 100000 ? "unroll count must be 1 to 100000" :
			  !r->reps || r->reps > BENCH_MAX_REPS ? "measurements must be 1 to "
								BENCH_XSTR(BENCH_MAX_REPS) :
			  r->warmup > 100000 || r->initial > 100000 ? "warm-up counts must be at most 100000" :
			  r->flags & ~(u64)(WIRE_CODEF_BASIC | WIRE_CODEF_NO_NORM | WIRE_CODEF_READINGS |
					    WIRE_CODEF_DRAIN | WIRE_CODEF_FIXED) ?
				"unknown flags" :
			  !r14_size || r14_size % (2 * PAGE_SIZE) ? "R14's area must be a positive "
				"multiple of 8 KiB (its middle on a page)" :
			  r->align > 63 ? "alignment offset must be 0 to 63" :
			  !r->timeout_ms || r->timeout_ms > 3600000 ? "timeout must be 1 ms to 1 hour" :
			  r->cpu >= smp_cpus() ? "no such CPU" :
			  NULL;
	if (why) {
		control_replyf(WIRE_CTL_ERROR, "RUN_CODE: %s", why);
		return -1;
	}
	/* The fixed counters' events go to those counters (pmu/pmu.h). */
	if (r->flags & WIRE_CODEF_FIXED) {
		if (bench_pmu_usable(&why) && !pmu_boot_caps.nr_fixed)
			why = "this PMU has no fixed-function counters";
		if (why) {
			control_replyf(WIRE_CTL_ERROR, "RUN_CODE: -fixed_counters: %s", why);
			return -1;
		}
	}
	r->r14_pages = r14_size / PAGE_SIZE;
	return 0;
}

/* Map a register's area of `pages`, the code's to write: 0, or -1 (out
 * of memory). */
static int map_reg_area(struct reg_area *a, u64 pages)
{
	u64 base = vmalloc_code(pages), top = base + pages * PAGE_SIZE;

	if (!base)
		return -1;
	*a = (struct reg_area){ top, pages, top - pages * PAGE_SIZE / 2 };
	return 0;
}

/* Pages left free for the kernel when R14's area grows. */
#define RESERVE_PAGES	(16 * 256)

/*
 * The code area and the registers' areas, made at the first request;
 * R14's made again when the request asks for another size (the old one
 * freed first). NULL, or why not (the reply's text).
 */
static const char *setup_memory(const struct code_req *r)
{
	static char why[120];

	/* The code's page tables: the kernel's (every CPU's) with what the
	 * kernel writes read-only; what is mapped later reaches them too. */
	if (!code_cr3 && !(code_cr3 = paging_code_cr3()))
		return "out of memory for the code's page tables";
	run.code_cr3 = code_cr3;
	run.kernel_cr3 = read_cr3();
	kernel_efer = rdmsr(MSR_IA32_EFER);
	if (!area) {
		area = vmalloc_code(BENCH_CODE_AREA_PAGES);
		if (!area)
			return "out of memory for the code area";
		for (int i = REG_RDI; i < NREG_AREAS; i++)
			if (map_reg_area(&reg_area[i], BENCH_CODE_REG_PAGES))
				return "out of memory for the registers' areas";
		image_hash_ref = image_hash();
		trap_set_fault_fixup(bench_code_fault_fixup);
	}
	struct reg_area *a = &reg_area[REG_R14];
	if (a->pages == r->r14_pages)
		return NULL;
	u64 can = pmm_free_pages() + a->pages;
	can = can > RESERVE_PAGES ? can - RESERVE_PAGES : 0;
	if (r->r14_pages > can) {
		ksnprintf(why, sizeof(why), "R14's area of %lu KiB does not fit: %lu KiB of "
			  "memory free for it", r->r14_pages * 4, can * 4);
		return why;
	}
	if (a->pages)
		vfree_stack(a->top, a->pages);
	*a = (struct reg_area){ 0 };
	if (map_reg_area(a, r->r14_pages)) {
		ksnprintf(why, sizeof(why), "R14's area of %lu KiB could not be mapped (no "
			  "kernel addresses or memory left for it)", r->r14_pages * 4);
		return why;
	}
	r14_maps++;
	return NULL;
}

/*
 * addr next to a register's area, in its guard pages: "8 bytes past the
 * end of R14's area" into buf; "" when it is not. The nearest area is
 * named (two areas may share a guard page).
 */
static void area_named(u64 addr, char *buf, size_t n)
{
	u64 best = PAGE_SIZE + 1;

	buf[0] = 0;
	for (int i = 0; i < NREG_AREAS; i++) {
		const struct reg_area *a = &reg_area[i];
		u64 lo = a->top - a->pages * PAGE_SIZE;
		if (!a->pages)
			continue;
		if (addr >= a->top && addr - a->top < best) {
			best = addr - a->top;
			ksnprintf(buf, n, ": %lu bytes past the end of %s's area [%#lx, %#lx)",
				  best, reg_name[i], lo, a->top);
		}
		if (addr < lo && lo - addr < best) {
			best = lo - addr;
			ksnprintf(buf, n, ": %lu bytes before the start of %s's area [%#lx, %#lx)",
				  best, reg_name[i], lo, a->top);
		}
	}
}

#define PF_P	(1ul << 0)	/* #PF error code: a protection violation (SDM Vol. 3A 4.7) */
#define PF_W	(1ul << 1)	/* ... on a write */

/*
 * addr, a store to which faulted, as the kernel memory it is: "the
 * kernel's data, .bss+0x40" into buf; "" when it is not memory the kernel
 * writes and the code's page tables keep read-only (paging_code_cr3).
 */
static void kernel_named(u64 addr, u64 error, char *buf, size_t n)
{
	static const struct { const char *lo, *hi, *name; } image[] = {
		{ __text_start, __text_end, "the kernel's code, .text" },
		{ __rodata_start, __rodata_end, "the kernel's read-only data, .rodata" },
		{ __data_start, __bss_start, "the kernel's data, .data" },
		{ __bss_start, __bss_end, "the kernel's data, .bss" },
	};

	buf[0] = 0;
	if ((error & (PF_P | PF_W)) != (PF_P | PF_W) || !paging_code_readonly(addr))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(image); i++)
		if (addr >= (u64)image[i].lo && addr < (u64)image[i].hi) {
			ksnprintf(buf, n, "%s+%#lx", image[i].name, addr - (u64)image[i].lo);
			return;
		}
	ksnprintf(buf, n, addr >> 63 ? "a kernel stack or other kernel memory" :
		  "RAM by its physical address: the kernel's page tables, stacks and heap");
}

/* Where in the code rip is, as text. */
static void where(u64 rip, char *buf, size_t n)
{
	for (int k = 0; k < 3; k++) {
		if (k == 2 && rip >= run.init[k] && rip < run.init_end[k]) {
			ksnprintf(buf, n, "at offset %#lx of the one-time init code",
				  rip - run.init[k]);
			return;
		}
		if (rip >= run.body[k] && rip < run.body_end[k]) {
			ksnprintf(buf, n, "at offset %#lx of the snippet (copy %lu)",
				  (rip - run.body[k]) % run.len, (rip - run.body[k]) / run.len);
			return;
		}
		if (rip >= run.init[k] && rip < run.init_end[k]) {
			ksnprintf(buf, n, "at offset %#lx of the init code", rip - run.init[k]);
			return;
		}
		if (rip >= run.late[k] && rip < run.late_end[k]) {
			ksnprintf(buf, n, "at offset %#lx of the late-init code", rip - run.late[k]);
			return;
		}
	}
	u64 off;
	const char *fn = program_text_holds(rip) ? ksym_lookup(rip, &off, NULL) : NULL;
	if (rip >= area && rip < area + BENCH_CODE_AREA_PAGES * PAGE_SIZE)
		ksnprintf(buf, n, "in the code around the snippet, at %#lx", rip);
	else if (fn)
		ksnprintf(buf, n, "in %s+%#lx, which the snippet called", fn, off);
	else if (program_text_holds(rip))
		ksnprintf(buf, n, "in a function the snippet called, at %#lx", rip);
	else
		ksnprintf(buf, n, "outside the snippet, at %#lx (the snippet broke the harness?)",
			  rip);
}

/* One measurement on the CPU that runs the code; the reply is the
 * control CPU's to send. */
struct job {
	struct code_req *r;
	struct bench *b;
	struct bench_result *res;
	int n, err;
	bool image_changed;
	u64 tables_was, tables_now;	/* tables_hash before and after */
	char changed[360];
	char lost[120];		/* what could not be put back */
	char errtext[160];
	u32 waiter_apic;	/* run on another CPU: the control CPU, woken at the end */
	bool done;
};

/* The code's runs, under bench_code_guarded. */
static void run_code_reps(void *arg)
{
	struct job *j = arg;
	const struct code_req *r = j->r;

	if (r->once_len)
		((bench_fn)run.fn[2])(NULL, 1);
	for (u64 i = 0; i < r->initial; i++) {
		((bench_fn)run.fn[0])(NULL, 1);
		((bench_fn)run.fn[1])(NULL, 1);
	}
	j->n = bench_run(j->b, &r->o, r->reps, r->warmup, j->res, BENCH_MAX_EVENTS);
}

static void measure_job(void *arg)
{
	struct job *j = arg;
	struct code_req *r = j->r;
	u64 hz = hpet_hz();
	u64 period = hz * r->timeout_ms / 4000;
	int err = hz ? hpet_nmi_start(MIN(MAX(period, 1ul), HPET_NMI_MAX_TICKS),
				      this_cpu()->apic_id, bench_code_watchdog, NULL) : -E_NODEV;

	if (err) {
		ksnprintf(j->errtext, sizeof(j->errtext), "no watchdog (the HPET NMI: error %d): "
			  "not running code nothing could stop", err);
		return;
	}
	static struct sys_state before;
	struct bench_code_cpu cpu, found;

	/* R14's area moved since this CPU last ran code: its old
	 * translations go (the areas are not global pages). Only then: a
	 * TLB kept warm lets code that clears EFER.NXE get to the put-back. */
	if (r14_maps_seen[this_cpu_id()] != r14_maps) {
		write_cr3(read_cr3());
		r14_maps_seen[this_cpu_id()] = r14_maps;
	}
	bench_state_save(&before);
	bench_code_cpu_save(&cpu);
	/* Without CR0.WP the code's read-only tables stop no store at CPL 0
	 * (SDM Vol. 3A 4.6.1); the put-back after each request sets it. */
	if (!(cpu.cr0 & CR0_WP)) {
		hpet_nmi_stop();
		ksnprintf(j->errtext, sizeof(j->errtext), "CR0.WP is clear: the code's read-only "
			  "page tables would not stop its stores");
		return;
	}
	j->tables_was = tables_hash(&before);
	run.why = STOP_NONE;
	run.cpu = this_cpu_id();
	run.timeout_ticks = hz * r->timeout_ms / 1000;
	/* The control CPU wrote the code: serialize before running it here
	 * (SDM Vol. 3A 9.1.3, cross-modifying code). */
	u32 a, b, c, d;
	cpuid(0, &a, &b, &c, &d);
	bench_state_enter();
	bench_code_guarded(run_code_reps, j, &cpu, &found);
	bench_state_early(&before, j->changed, sizeof(j->changed));
	cpu_said(&cpu, &found, j->changed, sizeof(j->changed));
	if (run.why != STOP_NONE)
		bench_abandon();
	hpet_nmi_stop();
	bench_state_check(&before, j->changed, sizeof(j->changed), j->lost, sizeof(j->lost));
	j->tables_now = tables_hash(&before);
	if (image_hash() != image_hash_ref)
		j->image_changed = true;
}

static void take_call(void *arg)
{
	(void)arg;
}

/* measure_job on another CPU: its end wakes the control CPU (run_job_on). */
static void measure_job_there(void *arg)
{
	struct job *j = arg;

	measure_job(j);
	__atomic_store_n(&j->done, true, __ATOMIC_RELEASE);
	apic_send_ipi(j->waiter_apic, APIC_DM_FIXED | VEC_IPI_CALL);
}

/*
 * Run the job on the code's CPU, the control CPU waiting in hlt rather
 * than a spin. Under QEMU's -icount the virtual clock (the HPET's: the
 * watchdog's) advances with the instructions run, and a spin of pause
 * (each a way out of QEMU's loop) advanced it so slowly that a `hlt` on
 * CPU 1 outlived the host's wait (220 s of wall time for a 2 s timeout);
 * with every CPU halted QEMU moves the clock to its next timer at once.
 * A call first checks that the CPU takes calls (smp_call's error if not).
 */
static int run_job_on(u32 cpu, struct job *j)
{
	u64 if_was = read_rflags() & RFLAGS_IF;
	int err = smp_call(cpu, take_call, NULL, true);

	j->waiter_apic = this_cpu()->apic_id;
	if (err || (err = smp_call(cpu, measure_job_there, j, false)))
		return err;
	for (;;) {
		irq_disable();
		if (__atomic_load_n(&j->done, __ATOMIC_ACQUIRE))
			break;
		asm volatile("sti; hlt" : : : "memory");	/* sti's shadow covers hlt */
	}
	while (!smp_call_done(cpu))
		cpu_relax();
	if (if_was)
		irq_enable();
	return 0;
}

/* Every measurement's (n-run, 2n-run) counts, as asked
 * (WIRE_CODEF_READINGS): "reading EVENT FIRST n,2n ..." ITEMs. */
static u64 readings[BENCH_MAX_EVENTS * BENCH_MAX_REPS][2];

static void send_readings(const struct bench_result *res, int n, u64 reps)
{
	char text[512];

	for (int i = 0; i < n; i++) {
		for (u64 k = 0; k < reps && !res[i].refused[0]; ) {
			size_t at = ksnprintf(text, sizeof(text), "reading\t%s\t%lu", res[i].event, k);
			/* a pair is at most 2 * 20 digits and 2 separators */
			for (; k < reps && at + 42 < sizeof(text); k++)
				at += ksnprintf(text + at, sizeof(text) - at, "\t%lu,%lu",
						readings[i * BENCH_MAX_REPS + k][0],
						readings[i * BENCH_MAX_REPS + k][1]);
			control_reply(WIRE_CTL_ITEM, text, at);
		}
	}
}

static void serve(const u8 *v, size_t len)
{
	static struct code_req r;
	static struct bench_asm code;
	static struct bench b;
	static struct bench_result res[BENCH_MAX_EVENTS];
	char text[200];

	/* Said apart from the snippet that did it: this one did nothing. */
	if (stopped[0]) {
		control_replyf(WIRE_CTL_ERROR, "stopped: not run, earlier code in this boot %s: "
			       "this boot runs no more code, reboot the machine", stopped);
		return;
	}
	if (parse(v, len, &r))
		return;
	const char *no_memory = setup_memory(&r);
	if (no_memory) {
		control_replyf(WIRE_CTL_ERROR, "RUN_CODE: %s", no_memory);
		return;
	}
	bool basic = r.flags & WIRE_CODEF_BASIC, norm = !(r.flags & WIRE_CODEF_NO_NORM);
	u64 copies_a = basic ? 0 : r.unroll, copies_b = basic ? r.unroll : 2 * r.unroll;

	/* W^X: writable (not executable) while written (area_release), then
	 * executable; only the pages the code fills are flipped (each an
	 * INVLPG). */
	struct gen g = { (u8 *)area, (u8 *)area + BENCH_CODE_AREA_PAGES * PAGE_SIZE, false };
	run.len = r.body_len;
	u64 written = gen_versions(&g, &r, copies_a, copies_b);
	static struct code_req once;
	once = (struct code_req){ .init = r.once, .init_len = r.once_len };
	gen_fn(&g, &once, 0, 2);
	if (g.full) {
		control_replyf(WIRE_CTL_ERROR, "RUN_CODE: %lu copies of %lu bytes do not fit the "
			       "%u KiB code area: lower the unroll count", written,
			       r.body_len, BENCH_CODE_AREA_PAGES * 4);
		return;
	}
	area_code_end = (u64)g.p;
	area_exec_pages = (area_code_end - area + PAGE_SIZE - 1) / PAGE_SIZE;
	paging_code_exec(area, area_exec_pages, true);

	code = (struct bench_asm){ (bench_fn)run.fn[0], (bench_fn)run.fn[1],
				   norm ? (u32)r.unroll : 1 };
	b = (struct bench){
		.table = "code", .name = "snippet", .loops = 1,
		.work = norm && r.loops ? r.loops : 1,
		.code = &code,
		.readings = r.flags & WIRE_CODEF_READINGS ? readings : NULL,
	};
	r.o.cpu = r.cpu;
	r.o.quiet = true;
	r.o.no_records = true;
	r.o.reps = r.reps;

	static struct job j;
	j = (struct job){ .r = &r, .b = &b, .res = res };
	if (r.cpu == this_cpu_id())
		measure_job(&j);
	else if ((j.err = run_job_on(r.cpu, &j)))
		ksnprintf(j.errtext, sizeof(j.errtext), "cpu %lu: %s", r.cpu, smp_call_why(j.err));
	if (j.errtext[0]) {
		control_replyf(WIRE_CTL_ERROR, "RUN_CODE: %s", j.errtext);
		return;
	}
	int n = j.n;
	char changed[sizeof(j.changed) + 32] = "";
	if (j.changed[0])
		ksnprintf(changed, sizeof(changed), "; the code changed %s: put back", j.changed);
	if (j.image_changed) {
		u64 now = image_hash();
		ksnprintf(stopped, sizeof(stopped), "wrote the kernel's code or read-only data "
			  "(their hash was %#lx, now %#lx)", image_hash_ref, now);
		control_replyf(WIRE_CTL_ERROR, "stopped: the code %s: this boot runs no more code, "
			       "reboot the machine%s", stopped, changed);
		return;
	}
	if (j.lost[0]) {
		ksnprintf(stopped, sizeof(stopped), "changed what could not be put back: %s",
			  j.lost);
		control_replyf(WIRE_CTL_ERROR, "stopped: the code %s: this boot runs no more code, "
			       "reboot the machine%s", stopped, changed);
		return;
	}
	if (j.tables_now != j.tables_was) {
		ksnprintf(stopped, sizeof(stopped), "wrote the page tables, the GDT or the IDT "
			  "(their hash was %#lx, now %#lx)", j.tables_was, j.tables_now);
		control_replyf(WIRE_CTL_ERROR, "stopped: the code %s: this boot runs no more code, "
			       "reboot the machine%s", stopped, changed);
		return;
	}
	if (run.why != STOP_NONE) {
		where(run.rip, text, sizeof(text));
		if (run.why == STOP_TIMEOUT)
			control_replyf(WIRE_CTL_ERROR, "timeout: the code ran longer than %lu ms, "
				       "stopped by the watchdog %s%s", r.timeout_ms, text, changed);
		else if (run.soft)
			control_replyf(WIRE_CTL_ERROR, "fault: the code ran int %#lx %s%s",
				       run.vector, text, changed);
		else if (run.vector == VEC_PF) {
			char named[120];
			kernel_named(run.cr2, run.error, named, sizeof(named));
			if (named[0]) {
				control_replyf(WIRE_CTL_ERROR, "fault: #PF write to kernel memory "
					       "(%s) %s, address %#lx, error code %#lx%s", named,
					       text, run.cr2, run.error, changed);
				return;
			}
			area_named(run.cr2, named, sizeof(named));
			control_replyf(WIRE_CTL_ERROR, "fault: #PF page fault %s, address %#lx%s, "
				       "error code %#lx%s", text, run.cr2, named, run.error, changed);
		}
		else if (run.vector == VEC_DF)
			control_replyf(WIRE_CTL_ERROR, "fault: #DF double fault %s: the CPU could "
				       "not push an exception's frame (RSP at memory the code may not "
				       "write?)%s", text, changed);
		else
			control_replyf(WIRE_CTL_ERROR, "fault: %s %s, error code %#lx%s",
				       trap_name(run.vector), text, run.error, changed);
		return;
	}
	if (n <= 0) {
		control_replyf(WIRE_CTL_ERROR, "RUN_CODE: %s%s", bench_refusal()[0] ?
			       bench_refusal() : "no result", changed);
		return;
	}
	for (int i = 0; i < n; i++) {
		const struct bench_result *x = &res[i];
		const char *label = x->flags & BP_BENCH_F_TSC ? bench_tsc_meaning() : x->event;
		if (x->refused[0]) {
			control_replyf(WIRE_CTL_ITEM, "refused\t%s\t%s", x->event, x->refused);
			continue;
		}
		control_replyf(WIRE_CTL_ITEM, "%s\t%s\t%ld\t%ld\t%ld\t%lu\t%u\t%u\t%lu\t%lu\t%ld",
			       x->event, label, x->min, x->median, x->tmean, x->iqr, x->flags,
			       x->disturbed, x->median_n, x->median_2n, x->max);
	}
	if (b.readings)
		send_readings(res, n, r.reps);
	control_replyf(WIRE_CTL_OK, "%d events%s", n, changed);
}

/* The code area writable again, not executable, its translations
 * dropped: made ready for the next code once the reply has gone, while
 * the host reads it and sends the next request. */
static void area_release(void)
{
	if (!area_exec_pages)
		return;
	paging_code_exec(area, area_exec_pages, false);
	drop_translations(area, area_code_end);
	area_exec_pages = area_code_end = 0;
}

void bench_code_serve(const u8 *v, size_t len)
{
	serve(v, len);
	area_release();
}

/* The control channel's RUN_CODE (apps/control.h): only with code=1. */
static void run_code(const u8 *v, size_t len)
{
	if (!kopt.code) {
		control_reply(WIRE_CTL_ERROR, "RUN_CODE needs code=1 on the kernel command line "
			      "(it runs arbitrary code: for machines you own)", 95);
		return;
	}
	bench_code_serve(v, len);
}
CONTROL_HANDLER(run_code, WIRE_CTL_RUN_CODE, run_code);
