/*
 * tools/util/bench_cr.c — writes to CR0 and CR4 that hang QEMU's TCG
 * (tools/util/bench_cr.h). Encodings from the SDM Vol. 2 opcode tables:
 * REX 0100WRXB (2.2.1), ModR/M mod 11 a register operand (2.1.5).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tools/util/bench_cr.h"

#define CR0_PE		(1ull << 0)
#define CR0_PG		(1ull << 31)
#define LOW32		0xffffffffull

/* What is known of a register's bits: those surely 1, those surely 0. */
struct bits {
	uint64_t one, zero;
};

static const char *const cr4_names[32] = {
	"VME", "PVI", "TSD", "DE", "PSE", "PAE", "MCE", "PGE", "PCE", "OSFXSR", "OSXMMEXCPT",
	"UMIP", "LA57", "VMXE", "SMXE", NULL, "FSGSBASE", "PCIDE", "OSXSAVE", "KL", "SMEP",
	"SMAP", "PKE", "CET", "PKS", "UINTR",
};

static uint64_t imm(const uint8_t *p, int size)
{
	uint64_t v = 0;

	for (int i = size - 1; i >= 0; i--)
		v = v << 8 | p[i];
	if (size < 8 && (v >> (8 * size - 1)) & 1)	/* sign-extended */
		v |= ~0ull << (8 * size);
	return v;
}

static struct bits constant(uint64_t v)
{
	return (struct bits){ v, ~v };
}

/* A 32-bit operation's result: its upper half cleared (SDM Vol. 1 3.4.1.1). */
static struct bits narrow(struct bits b, bool w)
{
	if (!w) {
		b.one &= LOW32;
		b.zero |= ~LOW32;
	}
	return b;
}

/* OR, AND, XOR (ModR/M reg 1, 4, 6) of a register with the constant v. */
static struct bits alu(struct bits b, int op, uint64_t v)
{
	if (op == 1)
		return (struct bits){ b.one | v, b.zero & ~v };
	if (op == 4)
		return (struct bits){ b.one & v, b.zero | ~v };
	if (op == 6)
		return (struct bits){ (b.one & ~v) | (b.zero & v), (b.zero & ~v) | (b.one & v) };
	return (struct bits){ 0, 0 };
}

/* Why the write of b to CR(cr) would hang TCG, into why; 0 when it would not. */
static int judge(int cr, struct bits b, char *why, size_t n)
{
	bool known = (b.one | b.zero) == ~0ull;
	char what[64];

	if (cr == 4 && (b.one & ~BENCH_CR4_TCG_BITS)) {
		int bit = __builtin_ctzll(b.one & ~BENCH_CR4_TCG_BITS);
		const char *name = bit < 32 ? cr4_names[bit] : NULL;
		snprintf(what, sizeof(what), "bit %d%s%s%s", bit, name ? " (" : "", name ? name : "",
			 name ? ")" : "");
		if (known)
			snprintf(why, n, "writes CR4 = %#llx, with %s", (unsigned long long)b.one, what);
		else
			snprintf(why, n, "sets %s of CR4", what);
		snprintf(why + strlen(why), n - strlen(why), ", which bench's QEMU CPU (qemu64) "
			 "lacks: a CPU raises #GP, QEMU's TCG hangs (an SVM #VMEXIT path outside "
			 "any guest, QEMU's lock held)");
		return 1;
	}
	if (cr == 0 && (b.zero & CR0_PE) && (b.zero & CR0_PG)) {
		if (known)
			snprintf(why, n, "writes CR0 = %#llx, PE and PG clear", (unsigned long long)b.one);
		else
			snprintf(why, n, "clears PE and PG of CR0");
		snprintf(why + strlen(why), n - strlen(why), ": a CPU raises #GP in 64-bit mode, "
			 "QEMU's TCG leaves long mode for real mode and the machine never answers");
		return 1;
	}
	return 0;
}

/* The bytes each followed one-byte opcode takes after it (ModR/M, immediate). */
static const uint8_t after[256] = {
	[0x31] = 1, [0x33] = 1, [0x89] = 1, [0x8b] = 1, [0xf7] = 1, [0x83] = 2,
	[0x81] = 5, [0xc7] = 5, [0x0d] = 4, [0x25] = 4, [0x35] = 4,
	[0xb8] = 4, [0xb9] = 4, [0xba] = 4, [0xbb] = 4, [0xbc] = 4, [0xbd] = 4, [0xbe] = 4,
	[0xbf] = 4,
};

/* 0F 20 (MOV from CRn), 0F 22 (MOV to CRn), 0F BA (BT, BTS, BTR, BTC with
 * an immediate) at p, after a REX of k bytes; as step. */
static int step_0f(const uint8_t *p, size_t left, int k, struct bits r[16], char *why, size_t n)
{
	static const int ops[4] = { 0, 1, 4, 6 };	/* BT, BTS, BTR, BTC as OR, AND, XOR */
	int rex = k ? p[0] : 0;
	bool w = rex & 8;

	if (left < (size_t)k + 3)
		return 0;
	const uint8_t *m = p + k + 2;
	int digit = (m[0] >> 3) & 7, reg = digit | (rex & 4 ? 8 : 0);
	int rm = (m[0] & 7) | (rex & 1 ? 8 : 0);
	if (p[k + 1] == 0x20) {
		r[rm] = (struct bits){ 0, 0 };
		return k + 3;
	}
	if (p[k + 1] == 0x22)
		return (reg == 0 || reg == 4) && judge(reg, r[rm], why, n) ? -1 : k + 3;
	if (p[k + 1] != 0xba || m[0] >> 6 != 3 || left < (size_t)k + 4 || digit < 4)
		return 0;
	uint64_t bit = 1ull << (m[1] & (w ? 63 : 31));
	int o = ops[digit - 4];
	if (o)
		r[rm] = narrow(alu(r[rm], o, o == 4 ? ~bit : bit), w);
	return k + 4;
}

/*
 * The instruction at p (at most left bytes, REX included) if it is one
 * the sweep follows: its length, with what it does to r[] done; 0 if not.
 * A MOV to CR0 or CR4 is judged: -1 with the reason in why.
 */
static int step(const uint8_t *p, size_t left, struct bits r[16], char *why, size_t n)
{
	int k = left && (p[0] & 0xf0) == 0x40 ? 1 : 0, rex = k ? p[0] : 0;
	bool w = rex & 8;
	uint8_t op = left > (size_t)k ? p[k] : 0;
	bool mov_imm = op >= 0xb8 && op <= 0xbf;

	if (op == 0x0f)
		return step_0f(p, left, k, r, why, n);
	if (!after[op] || left < (size_t)k + 1 + (mov_imm && w ? 8 : after[op]))
		return 0;
	const uint8_t *m = p + k + 1;		/* what follows the opcode */
	if (op == 0x0d || op == 0x25 || op == 0x35) {	/* OR, AND, XOR of RAX with imm32 */
		r[0] = narrow(alu(r[0], op == 0x0d ? 1 : op == 0x25 ? 4 : 6, imm(m, 4)), w);
		return k + 5;
	}
	int digit = (m[0] >> 3) & 7, reg = digit | (rex & 4 ? 8 : 0);
	int rm = (m[0] & 7) | (rex & 1 ? 8 : 0);
	if (mov_imm) {				/* mov r, imm32 (imm64 with REX.W) */
		r[(op & 7) | (rex & 1 ? 8 : 0)] = constant(imm(m, w ? 8 : 4) & (w ? ~0ull : LOW32));
		return k + 1 + (w ? 8 : 4);
	}
	if (m[0] >> 6 != 3)			/* a memory operand: not followed */
		return 0;
	switch (op) {
	case 0x89:	/* mov r/m, r */
		r[rm] = narrow(r[reg], w);
		return k + 2;
	case 0x8b:	/* mov r, r/m */
		r[reg] = narrow(r[rm], w);
		return k + 2;
	case 0x31:	/* xor: zero when both operands are one register */
	case 0x33:
		r[op == 0x31 ? rm : reg] = reg == rm ? constant(0) : (struct bits){ 0, 0 };
		return k + 2;
	case 0xf7:	/* not (the group's other members: not followed) */
		if (digit != 2)
			return 0;
		r[rm] = narrow((struct bits){ r[rm].zero, r[rm].one }, w);
		return k + 2;
	case 0x83:	/* OR, AND, XOR, ... with imm8 or imm32, sign-extended */
	case 0x81:
		if (digit != 7)			/* CMP changes nothing */
			r[rm] = narrow(alu(r[rm], digit, imm(m + 1, op == 0x83 ? 1 : 4)), w);
		return k + (op == 0x83 ? 3 : 6);
	case 0xc7:	/* mov r/m, imm32 */
		if (digit)
			return 0;
		r[rm] = constant(imm(m + 1, 4) & (w ? ~0ull : LOW32));
		return k + 6;
	}
	return 0;
}

int bench_cr_hangs_tcg(const uint8_t *code, size_t len, char *why, size_t n)
{
	struct bits r[16];

	memset(r, 0, sizeof(r));
	for (size_t at = 0; at < len; ) {
		int k = step(code + at, len - at, r, why, n);
		if (k < 0)
			return 1;
		if (k == 0) {
			/* not followed: nothing known from here */
			memset(r, 0, sizeof(r));
			k = 1;
		}
		at += (size_t)k;
	}
	return 0;
}
