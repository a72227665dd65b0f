/*
 * test_trace — the single-step tracer's packets and the host decoder
 *, cmocka, ASan+UBSan:
 *
 *   - packet encoder (pmu/trace/itrace.c) against the decoder (tools/util/trace/pkt.c):
 *     round trip of every packet kind, and malformed packets refused;
 *   - the kernel's opcode classifier against capstone, on tricky
 *     encodings and on every instruction of build/kernel.elf;
 *   - whole traces: a simulated run (test/host/trace_sim.c) through the
 *     real producer, a real ring with an AUX area, a drain, wire frames
 *     and a capture file, decoded back: every instruction exact; a range;
 *     an ASYNC; several traced calls; decoding from a mid-stream SYNC;
 *     TRUNCATED commits reported as gaps of exact size, never filled in;
 *     a lost AUX frame; the same path as Intel PT through libipt;
 *   - the reports (trace_report, trace_call_slices) on that capture,
 *     against this binary's own symbols (it is linked -no-pie).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pmu/trace/itrace.h"
#include "tools/util/trace/trace.h"
#include "test/host/trace_sim.h"

/* ---- packets ---------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_pkt_roundtrip(void **state)
{
	struct itrace_enc e;
	uint8_t buf[1 << 16];
	size_t n = 0;
	struct { int type; uint64_t a, b, c; int bits[6]; int nbits; } want[2000];
	size_t nw = 0;
	uint64_t last_ip = 0, sync_steps = 0, sync_tsc = 0;
	(void)state;

	itrace_enc_init(&e);
	while (nw < 1900 && n < sizeof(buf) - 100) {
		unsigned k = rnd() % 7;
		uint64_t ip = rnd() % 4 == 0 ? rnd() : last_ip + (rnd() % 4096) - 2048;
		if (k == 0) {
			/* A TNT byte of 1..6 outcomes. */
			int nb = 1 + rnd() % 6;
			want[nw].type = TP_TNT;
			want[nw].nbits = nb;
			for (int i = 0; i < nb; i++) {
				want[nw].bits[i] = rnd() & 1;
				n += itrace_enc_tnt(&e, buf + n, want[nw].bits[i]);
			}
			n += itrace_enc_flush(&e, buf + n);
			nw++;
		} else if (k == 1 || k == 2) {
			want[nw++] = (typeof(want[0])){ .type = k == 1 ? TP_TIP : TP_PGE, .a = ip };
			n += k == 1 ? itrace_enc_tip(&e, buf + n, ip) : itrace_enc_pge(&e, buf + n, ip);
			last_ip = ip;
		} else if (k == 3) {
			uint64_t s = sync_steps + rnd() % 100000;
			want[nw++] = (typeof(want[0])){ .type = TP_ASYNC, .a = ip, .b = s };
			n += itrace_enc_async(&e, buf + n, s, ip);
			last_ip = ip;
		} else if (k == 4) {
			uint64_t s = sync_steps + rnd() % 100000, t = sync_tsc + rnd() % 1000000;
			unsigned reason = rnd() & 1 ? ITRACE_STOP_END : ITRACE_STOP_PAUSE;
			want[nw++] = (typeof(want[0])){ .type = TP_STOP, .a = reason, .b = s, .c = t };
			n += itrace_enc_stop(&e, buf + n, reason, s, t);
		} else if (k == 5) {
			uint64_t range[2] = { rnd() >> 1, 0 };
			range[1] = range[0] + 1 + rnd() % 1000;
			bool ranged = rnd() & 1;
			sync_steps = rnd() >> 4;
			sync_tsc = rnd() >> 4;
			want[nw++] = (typeof(want[0])){ .type = TP_SYNC, .a = ip, .b = sync_steps,
							.c = ranged ? range[0] : 0 };
			n += itrace_enc_sync(&e, buf + n, ip, sync_tsc, sync_steps, ranged ? range : NULL);
			last_ip = ip;
		} else {
			buf[n++] = ITRACE_OP_PAD;
		}
	}

	/* Decode it all back. */
	size_t off = 0, i = 0;
	uint64_t dlast = 0, dsteps = 0, dtsc = 0;
	while (off < n) {
		struct trace_pkt pk;
		long r = trace_pkt_decode(buf + off, n - off, &pk);
		assert_true(r > 0);
		off += (size_t)r;
		if (pk.type == TP_PAD)
			continue;
		assert_true(i < nw);
		assert_int_equal(pk.type, want[i].type);
		switch (pk.type) {
		case TP_TNT:
			assert_int_equal(pk.tnt_n, want[i].nbits);
			for (int b = 0; b < pk.tnt_n; b++)
				assert_int_equal(pk.tnt_bits >> (pk.tnt_n - 1 - b) & 1, want[i].bits[b]);
			break;
		case TP_TIP:
		case TP_PGE:
			dlast += (uint64_t)pk.ip_delta;
			assert_true(dlast == want[i].a);
			break;
		case TP_ASYNC:
			dlast += (uint64_t)pk.ip_delta;
			assert_true(dlast == want[i].a);
			assert_true(dsteps + pk.steps == want[i].b);
			break;
		case TP_STOP:
			assert_int_equal(pk.reason, want[i].a);
			assert_true(dsteps + pk.steps == want[i].b);
			assert_true(dtsc + pk.tsc == want[i].c);
			break;
		case TP_SYNC:
			assert_true(pk.ip == want[i].a);
			assert_true(pk.steps == want[i].b);
			assert_true((pk.flags & ITRACE_SYNC_RANGE) ? pk.lo == want[i].c : want[i].c == 0);
			dlast = pk.ip;
			dsteps = pk.steps;
			dtsc = pk.tsc;
			break;
		}
		i++;
	}
	assert_int_equal(i, nw);
}

static void test_pkt_malformed(void **state)
{
	struct trace_pkt pk;
	uint8_t sync[64];
	struct itrace_enc e;
	uint64_t range[2] = { 0x2000, 0x1000 };
	(void)state;

	assert_int_equal(trace_pkt_decode((const uint8_t *)"\x80", 1, &pk), -1);	/* no outcome */
	assert_int_equal(trace_pkt_decode((const uint8_t *)"\x81", 1, &pk), -1);
	assert_int_equal(trace_pkt_decode((const uint8_t *)"\x82", 1, &pk), 1);	/* one outcome */
	assert_int_equal(pk.tnt_n, 1);
	assert_int_equal(trace_pkt_decode((const uint8_t *)"\x07", 1, &pk), -1);	/* reserved */
	assert_int_equal(trace_pkt_decode((const uint8_t *)"\x01\x80", 2, &pk), 0);	/* cut varint */
	assert_int_equal(trace_pkt_decode((const uint8_t *)"\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f",
					  11, &pk), -1);				/* > 64 bits */
	assert_int_equal(trace_pkt_decode((const uint8_t *)"\x04\x03\x00\x00", 4, &pk), -1); /* reason */
	assert_int_equal(trace_pkt_decode((const uint8_t *)"\x04\x01\x00", 3, &pk), 0);
	itrace_enc_init(&e);
	size_t n = itrace_enc_sync(&e, sync, 0x1234, 5, 6, range);		/* lo >= hi */
	assert_int_equal(trace_pkt_decode(sync, n, &pk), -1);
	range[1] = 0x3000;
	n = itrace_enc_sync(&e, sync, 0x1234, 5, 6, range);
	assert_int_equal(trace_pkt_decode(sync, n, &pk), (long)n);
	assert_int_equal(trace_pkt_decode(sync, n - 1, &pk), 0);
	sync[32] |= 0x80;							/* unknown flag */
	assert_int_equal(trace_pkt_decode(sync, n, &pk), -1);
	sync[32] &= 0x7f;
	sync[3] ^= 1;								/* bad magic */
	assert_int_equal(trace_pkt_decode(sync, n, &pk), -1);
	assert_int_equal(trace_pkt_find_sync(sync, n), -1);
	sync[3] ^= 1;
	uint8_t hay[200];
	memset(hay, 0x5a, sizeof(hay));					/* sync-looking noise */
	memcpy(hay + 77, sync, n);
	assert_int_equal(trace_pkt_find_sync(hay, sizeof(hay)), 77);
}

/* ---- classification ------------------------------------------------------ */

static const struct {
	const char *bytes;
	size_t len;
	int cls;
	const char *what;
} cases[] = {
	{ "\x90", 1, ITRACE_C_SEQ, "nop" },
	{ "\x74\x05", 2, ITRACE_C_JCC, "je rel8" },
	{ "\x0f\x85\x10\x00\x00\x00", 6, ITRACE_C_JCC, "jne rel32" },
	{ "\x3e\x74\x02", 3, ITRACE_C_JCC, "ds: je (branch hint)" },
	{ "\xe2\xfe", 2, ITRACE_C_JCC, "loop" },
	{ "\xe3\x00", 2, ITRACE_C_JCC, "jrcxz" },
	{ "\xeb\x00", 2, ITRACE_C_JMP, "jmp rel8" },
	{ "\xe9\x00\x01\x00\x00", 5, ITRACE_C_JMP, "jmp rel32" },
	{ "\xe8\x00\x00\x00\x00", 5, ITRACE_C_CALL, "call rel32" },
	{ "\xf2\xe8\x00\x00\x00\x00", 6, ITRACE_C_CALL, "bnd call" },
	{ "\xc3", 1, ITRACE_C_RET, "ret" },
	{ "\xf3\xc3", 2, ITRACE_C_RET, "rep ret" },
	{ "\xc2\x08\x00", 3, ITRACE_C_RET, "ret imm16" },
	{ "\xff\xd0", 2, ITRACE_C_ICALL, "call *%rax" },
	{ "\xff\x14\xd0", 3, ITRACE_C_ICALL, "call *(%rax,%rdx,8)" },
	{ "\x41\xff\xd3", 3, ITRACE_C_ICALL, "call *%r11" },
	{ "\xff\xe0", 2, ITRACE_C_IJMP, "jmp *%rax" },
	{ "\xff\x24\xc5\x00\x10\x00\x00", 7, ITRACE_C_IJMP, "jmp *0x1000(,%rax,8)" },
	{ "\xff\x1c\x24", 3, ITRACE_C_IJMP, "lcall *(%rsp)" },
	{ "\xff\xc1", 2, ITRACE_C_SEQ, "inc %ecx (FF /0)" },
	{ "\xff\xc9", 2, ITRACE_C_SEQ, "dec %ecx (FF /1)" },
	{ "\xff\x34\x24", 3, ITRACE_C_SEQ, "push (%rsp) (FF /6)" },
	{ "\xcb", 1, ITRACE_C_IJMP, "lret" },
	{ "\x48\xcf", 2, ITRACE_C_IJMP, "iretq" },
	{ "\xcc", 1, ITRACE_C_IJMP, "int3" },
	{ "\xcd\x80", 2, ITRACE_C_IJMP, "int $0x80" },
	{ "\x0f\x05", 2, ITRACE_C_IJMP, "syscall" },
	{ "\x0f\x0b", 2, ITRACE_C_IJMP, "ud2" },
	{ "\xc7\xf8\x00\x00\x00\x00", 6, ITRACE_C_IJMP, "xbegin" },
	{ "\xc7\xc0\x01\x00\x00\x00", 6, ITRACE_C_SEQ, "mov $1, %eax (C7 /0)" },
	{ "\xf3\xa4", 2, ITRACE_C_REP, "rep movsb" },
	{ "\xf3\x48\xab", 3, ITRACE_C_REP, "rep stosq" },
	{ "\xf2\xae", 2, ITRACE_C_REP, "repne scasb" },
	{ "\xf3\xa6", 2, ITRACE_C_REP, "repe cmpsb" },
	{ "\x66\xf3\xab", 3, ITRACE_C_REP, "rep stosw" },
	{ "\xa4", 1, ITRACE_C_SEQ, "movsb (no rep)" },
	{ "\xf2\x0f\x10\xc1", 4, ITRACE_C_SEQ, "movsd %xmm1, %xmm0 (SSE)" },
	{ "\xf3\x0f\x1e\xfa", 4, ITRACE_C_SEQ, "endbr64" },
	{ "\xf3\x90", 2, ITRACE_C_SEQ, "pause" },
	{ "\xf3\x0f\xb8\xc1", 4, ITRACE_C_SEQ, "popcnt" },
	{ "\xc5\xf8\x77", 3, ITRACE_C_SEQ, "vzeroupper (VEX)" },
	{ "\xc4\xe2\x79\x18\xc0", 5, ITRACE_C_SEQ, "vbroadcastss (VEX3)" },
	{ "\x62\xf1\x7c\x48\x28\xc1", 6, ITRACE_C_SEQ, "vmovaps zmm (EVEX)" },
	{ "\x66\x0f\x1f\x44\x00\x00", 6, ITRACE_C_SEQ, "nopw" },
	{ "\x48\x8d\x05\x00\x00\x00\x00", 7, ITRACE_C_SEQ, "lea" },
	{ "\x66\xc3", 2, ITRACE_C_IJMP, "retw (66): IJMP" },
	{ "\x66\xe9\x00\x00", 4, ITRACE_C_IJMP, "jmpw (66): IJMP" },
	{ "\x66\xff\xd0", 3, ITRACE_C_IJMP, "callw *%ax (66): IJMP" },
	{ "\x66\x74\x00", 3, ITRACE_C_IJMP, "je (66): IJMP" },
};

static void test_classify_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t code[32];
		struct itrace_insn k;
		struct trace_insn h;
		memset(code, 0x90, sizeof(code));
		memcpy(code, cases[i].bytes, cases[i].len);
		int kc = itrace_classify(code, sizeof(code), 0x400000, &k);
		int hc = trace_insn_classify(code, sizeof(code), 0x400000, &h);
		if (kc != cases[i].cls || hc != cases[i].cls)
			fail_msg("%s: kernel class %d, capstone class %d, want %d", cases[i].what, kc,
				 hc, cases[i].cls);
		if ((kc == ITRACE_C_JCC || kc == ITRACE_C_JMP || kc == ITRACE_C_CALL ||
		     kc == ITRACE_C_REP) && k.len != h.len)
			fail_msg("%s: kernel length %u, capstone %u", cases[i].what, k.len, h.len);
		if ((kc == ITRACE_C_JCC || kc == ITRACE_C_JMP || kc == ITRACE_C_CALL) &&
		    k.target != h.target)
			fail_msg("%s: kernel target %#lx, capstone %#lx", cases[i].what,
				 (unsigned long)k.target, (unsigned long)h.target);
	}
}

static void test_classify_kernel_elf(void **state)
{
	struct trace_image *im;
	char err[256];
	uint64_t n = 0, bad = 0, lo, hi;
	(void)state;

	if (access("build/kernel.elf", R_OK) ||
	    trace_image_load(&im, "build/kernel.elf", NULL, 0, err, sizeof(err))) {
		skip();
		return;
	}
	/* Every function of the kernel, swept linearly with capstone. */
	for (size_t i = 0; i < symtab_count(trace_image_symtab(im)); i++) {
		struct symbol s = symtab_at(trace_image_symtab(im), i);
		lo = s.start;
		hi = s.start + s.size;
		for (uint64_t ip = lo; ip < hi;) {
			size_t avail;
			const uint8_t *p = trace_image_bytes(im, ip, &avail);
			struct trace_insn h;
			struct itrace_insn k;
			uint8_t code[ITRACE_INSN_MAX];
			if (!p)
				break;
			memset(code, 0xcc, sizeof(code));
			memcpy(code, p, avail < sizeof(code) ? avail : sizeof(code));
			int hc = trace_insn_classify(code, sizeof(code), ip, &h);
			if (hc < 0) {
				ip++;
				continue;
			}
			int kc = itrace_classify(code, sizeof(code), ip, &k);
			n++;
			if (kc != hc || ((kc == ITRACE_C_JCC || kc == ITRACE_C_JMP ||
					  kc == ITRACE_C_CALL) && k.target != h.target)) {
				if (bad++ < 5)
					print_message("# %#lx %s: kernel class %d, capstone %d\n",
						      (unsigned long)ip, h.text, kc, hc);
			}
			ip += h.len;
		}
	}
	print_message("# kernel.elf: %lu instructions classified\n", (unsigned long)n);
	trace_image_free(im);
	assert_true(n > 10000);
	assert_int_equal(bad, 0);
}

/* ---- whole traces ---------------------------------------------------------- */

struct check {
	const uint64_t *truth;
	size_t n;
	uint64_t next;			/* the step the next instruction must have */
	bool free_next;			/* after a gap of unknown size */
	uint64_t insns, gaps, gap_insns, unknown, syncs;
	char bad[240];
};

static void ck_insn(void *ctx, uint64_t step, const struct trace_insn *ii)
{
	struct check *c = ctx;

	c->insns++;
	if (c->bad[0])
		return;
	if (c->free_next ? step < c->next : step != c->next)
		snprintf(c->bad, sizeof(c->bad), "step %lu, expected %lu", (unsigned long)step,
			 (unsigned long)c->next);
	else if (step - 1 >= c->n || c->truth[step - 1] != ii->ip)
		snprintf(c->bad, sizeof(c->bad), "step %lu at %#lx, truth %#lx", (unsigned long)step,
			 (unsigned long)ii->ip,
			 step - 1 < c->n ? (unsigned long)c->truth[step - 1] : 0ul);
	c->next = step + 1;
	c->free_next = false;
}

static void ck_gap(void *ctx, uint64_t step, uint64_t n, const char *why)
{
	struct check *c = ctx;

	c->gaps++;
	if (n == TRACE_GAP_UNKNOWN) {
		c->unknown++;
		c->free_next = true;
		return;
	}
	(void)why;
	if (!c->bad[0] && step + 1 != c->next && !(c->next == 1 && step == 0) && !c->free_next)
		snprintf(c->bad, sizeof(c->bad), "gap at step %lu, expected at %lu",
			 (unsigned long)step, (unsigned long)c->next - 1);
	c->gap_insns += n;
	c->next = step + n + 1;
}

static void ck_sync(void *ctx, uint64_t steps, uint64_t tsc)
{
	struct check *c = ctx;

	(void)steps, (void)tsc;
	c->syncs++;
}

static const struct trace_sink ck_sink = { ck_insn, ck_gap, ck_sync };

static char capture_path[64];

/* Run the simulation, write the capture, load it back, decode cpu 0. */
static void run_and_decode(const struct sim_opts *o, struct sim_result *r, struct check *c,
			   struct trace_dec_stats *st, size_t skip_bytes)
{
	struct trace_capture tc;
	char err[256];
	struct trace_image *im = sim_image();

	assert_int_equal(sim_run(o, r), 0);
	snprintf(capture_path, sizeof(capture_path), "/tmp/bp-trace-test-%d.bpc", getpid());
	assert_int_equal(sim_write_capture(r, capture_path), 0);
	if (trace_capture_load(&tc, capture_path, err, sizeof(err)))
		fail_msg("load: %s", err);
	assert_int_equal(tc.ncpus, 1);
	assert_int_equal(tc.cpus[0].format, TF_SSTEP);
	struct trace_piece *p = tc.cpus[0].pieces;
	assert_true(tc.cpus[0].npieces > 0);
	if (skip_bytes) {
		assert_true(p[0].len > skip_bytes);
		p[0].data += skip_bytes;
		p[0].len -= skip_bytes;
		p[0].aux_pos += skip_bytes;
	}
	memset(c, 0, sizeof(*c));
	c->truth = r->truth;
	c->n = r->ntruth;
	c->next = 1;
	trace_decode_sstep(im, p, tc.cpus[0].npieces, &ck_sink, c, st);
	trace_capture_free(&tc);
	trace_image_free(im);
	unlink(capture_path);
}

static void expect_exact(const struct sim_result *r, const struct check *c,
			 const struct trace_dec_stats *st)
{
	if (c->bad[0])
		fail_msg("%s", c->bad);
	if (st->errors)
		fail_msg("%lu decode errors: %s", (unsigned long)st->errors, st->first_error);
	assert_int_equal(c->insns, r->ntruth);
	assert_int_equal(c->gaps, 0);
	assert_true(st->ended);
	assert_int_equal(st->end_steps, r->ntruth);
}

static void test_trace_exact(void **state)
{
	struct sim_opts o = { .drop_aux_frame = -1 };
	struct sim_result r;
	struct check c;
	struct trace_dec_stats st;
	(void)state;

	run_and_decode(&o, &r, &c, &st, 0);
	expect_exact(&r, &c, &st);
	/* The program's shape, from the producer's side: one REP runs 5
	 * iterations and a final step. */
	assert_true(r.st.per_class[ITRACE_C_JCC] > 0 && r.st.per_class[ITRACE_C_REP] == 6);
	assert_true(r.st.rets_compressed > 0 && r.st.tips > 0 && r.st.tnt_bits > 0);
	assert_int_equal(r.st.steps, r.ntruth);
	print_message("# %zu instructions, %lu packet bytes (%.3f bytes/instruction), "
		      "%lu compressed returns\n", r.ntruth, (unsigned long)r.st.bytes,
		      (double)r.st.bytes / (double)r.ntruth, (unsigned long)r.st.rets_compressed);
	sim_free(&r);
}

static void test_trace_ranged(void **state)
{
	struct sim_opts o = { .ranged = true, .drop_aux_frame = -1 };
	struct sim_result r;
	struct check c;
	struct trace_dec_stats st;
	(void)state;

	run_and_decode(&o, &r, &c, &st, 0);
	expect_exact(&r, &c, &st);
	assert_true(r.sim_insns > r.ntruth);		/* sim_out ran untraced */
	assert_true(st.pges > 0);
	sim_free(&r);
}

static void test_trace_async(void **state)
{
	struct sim_opts o = { .async = true, .drop_aux_frame = -1 };
	struct sim_result r;
	struct check c;
	struct trace_dec_stats st;
	(void)state;

	run_and_decode(&o, &r, &c, &st, 0);
	expect_exact(&r, &c, &st);
	assert_int_equal(r.st.asyncs, 1);
	assert_int_equal(st.asyncs, 1);
	sim_free(&r);
}

static void test_trace_calls(void **state)
{
	struct sim_opts o = { .calls = 3, .drop_aux_frame = -1 };
	struct sim_result r;
	struct check c;
	struct trace_dec_stats st;
	(void)state;

	/* Three traced calls: each restarts its step count at 0. Check the
	 * instruction sequence of the last one and the ENDs. */
	assert_int_equal(sim_run(&o, &r), 0);
	struct trace_capture tc;
	char err[256];
	snprintf(capture_path, sizeof(capture_path), "/tmp/bp-trace-test-%d.bpc", getpid());
	assert_int_equal(sim_write_capture(&r, capture_path), 0);
	assert_int_equal(trace_capture_load(&tc, capture_path, err, sizeof(err)), 0);
	struct trace_image *im = sim_image();
	memset(&c, 0, sizeof(c));
	static const struct trace_sink none;
	trace_decode_sstep(im, tc.cpus[0].pieces, tc.cpus[0].npieces, &none, &c, &st);
	assert_int_equal(st.ends, 3);
	assert_int_equal(st.errors, 0);
	assert_int_equal(st.gaps, 0);
	assert_int_equal(st.insns, r.ntruth);
	assert_int_equal(st.end_steps, r.ntruth);
	trace_image_free(im);
	trace_capture_free(&tc);
	unlink(capture_path);
	sim_free(&r);
}

static void test_trace_mid_stream(void **state)
{
	struct sim_opts o = { .rounds = 500, .drop_aux_frame = -1 };
	struct sim_result r;
	struct check c;
	struct trace_dec_stats st;
	(void)state;

	/* Start decoding 100 bytes into the data: the first SYNC after that
	 * is a chunk start; everything before it is one gap of exact size. */
	run_and_decode(&o, &r, &c, &st, 100);
	if (c.bad[0])
		fail_msg("%s", c.bad);
	assert_int_equal(st.errors, 0);
	assert_int_equal(c.gaps, 1);
	assert_true(st.have_first && st.first_steps > 0);
	assert_int_equal(c.gap_insns, st.first_steps);
	assert_int_equal(c.insns + c.gap_insns, r.ntruth);
	assert_true(st.ended && st.end_steps == r.ntruth);
	print_message("# decoding began at the SYNC of step %lu\n", (unsigned long)st.first_steps);
	sim_free(&r);
}

static void test_trace_truncated(void **state)
{
	struct sim_opts o = { .aux_pages = 1, .drain_every = 20000, .rounds = 1000,
			      .drop_aux_frame = -1 };
	struct sim_result r;
	struct check c;
	struct trace_dec_stats st;
	(void)state;

	run_and_decode(&o, &r, &c, &st, 0);
	if (c.bad[0])
		fail_msg("%s", c.bad);
	assert_int_equal(st.errors, 0);
	assert_true(r.st.pauses > 0);
	/* One gap per TRUNCATED commit, each of exact size, and nothing
	 * decoded that did not run: insns + gaps = the kernel's count. */
	assert_int_equal(c.gaps, r.st.pauses);
	assert_int_equal(c.unknown, 0);
	assert_true(c.gap_insns > 0);
	assert_int_equal(c.gap_insns, r.st.steps_untraced);
	assert_int_equal(c.insns + c.gap_insns, r.ntruth);
	assert_true(st.ended && st.end_steps == r.ntruth);
	print_message("# %lu TRUNCATED commits, %lu of %zu instructions untraced, "
		      "%lu skips at the end of the area\n", (unsigned long)r.st.pauses,
		      (unsigned long)c.gap_insns, r.ntruth, (unsigned long)r.st.skips);
	sim_free(&r);
}

static void test_trace_truncated_ranged(void **state)
{
	struct sim_opts o = { .aux_pages = 1, .drain_every = 20000, .rounds = 1000,
			      .ranged = true, .drop_aux_frame = -1 };
	struct sim_result r;
	struct check c;
	struct trace_dec_stats st;
	(void)state;

	/* Chunks that begin where the flow re-enters the range. */
	run_and_decode(&o, &r, &c, &st, 0);
	if (c.bad[0])
		fail_msg("%s", c.bad);
	if (st.errors)
		fail_msg("%s", st.first_error);
	assert_true(r.st.pauses > 0);
	assert_int_equal(c.gaps, r.st.pauses);
	assert_int_equal(c.insns + c.gap_insns, r.ntruth);
	assert_true(st.ended && st.end_steps == r.ntruth);
	sim_free(&r);
}

static void test_trace_lost_frame(void **state)
{
	struct sim_opts o = { .rounds = 500, .drop_aux_frame = 3 };
	struct sim_result r;
	struct check c;
	struct trace_dec_stats st;
	(void)state;

	run_and_decode(&o, &r, &c, &st, 0);
	if (c.bad[0])
		fail_msg("%s", c.bad);
	/* The lost bytes are a gap: its size is known at the next SYNC. */
	assert_int_equal(c.gaps, 1);
	assert_int_equal(c.unknown, 0);
	assert_true(c.gap_insns > 0);
	assert_int_equal(c.insns + c.gap_insns, r.ntruth);
	sim_free(&r);
}

static void test_trace_pt(void **state)
{
	struct sim_opts o = { .drop_aux_frame = -1 };
	static uint8_t buf[1 << 16];
	struct sim_result r;
	struct check c;
	struct trace_dec_stats st;
	(void)state;

	size_t n = sim_pt_encode(&o, buf, sizeof(buf));
	assert_true(n > 16);
	struct trace_piece p = { buf, n, 0, TJ_CONT };
	assert_int_equal(trace_detect_format(&p, 1), TF_PT);
	assert_int_equal(sim_run(&o, &r), 0);
	memset(&c, 0, sizeof(c));
	c.truth = r.rep_collapsed;
	c.n = r.nrep;
	c.next = 1;
	struct trace_image *im = sim_image();
	trace_decode_pt(im, &p, 1, &ck_sink, &c, &st);
	trace_image_free(im);
	if (c.bad[0])
		fail_msg("%s", c.bad);
	if (st.errors)
		fail_msg("libipt: %s", st.first_error);
	assert_int_equal(c.insns, r.nrep);
	assert_int_equal(c.gaps, 0);
	sim_free(&r);
}

/* ---- reports ----------------------------------------------------------------- */

static char *report_of(const struct sim_opts *o, int (*cmd)(const char *, const struct trace_opts *,
							    FILE *), int *rc)
{
	struct sim_result r;
	struct trace_opts to = { .kernel_elf = "/proc/self/exe", .cpu = -1, .check = true };
	char *text = NULL;
	size_t len = 0;

	assert_int_equal(sim_run(o, &r), 0);
	snprintf(capture_path, sizeof(capture_path), "/tmp/bp-trace-test-%d.bpc", getpid());
	assert_int_equal(sim_write_capture(&r, capture_path), 0);
	FILE *f = open_memstream(&text, &len);
	*rc = cmd(capture_path, &to, f);
	fclose(f);
	unlink(capture_path);
	sim_free(&r);
	return text;
}

/* The count column of a function's row in the report's function table. */
static long fn_row(const char *text, const char *fn, int col)
{
	char pat[64];
	const char *p = text;

	snprintf(pat, sizeof(pat), "  %s\n", fn);
	while ((p = strstr(p, pat))) {
		const char *line = p;
		while (line > text && line[-1] != '\n')
			line--;
		unsigned long insns, calls;
		double share;
		if (sscanf(line, " %lu %lf%% %lu", &insns, &share, &calls) == 3)
			return col ? (long)calls : (long)insns;
		p++;
	}
	return -1;
}

static void test_report(void **state)
{
	struct sim_opts o = { .drop_aux_frame = -1 };
	int rc;
	(void)state;

	char *text = report_of(&o, trace_report, &rc);
	if (rc)
		fail_msg("trace_report failed:\n%s", text);
	assert_non_null(strstr(text, "exact: reconstructed = kernel's count"));
	/* The program's structure: sim_rec is a binary recursion three deep
	 * (1 + 2 + 4 calls: 4 leaves of 5 instructions, 3 inner frames of 7);
	 * sim_leaf is called 10 + 3 times, 2 instructions each. */
	assert_int_equal(fn_row(text, "sim_rec", 1), 7);
	assert_int_equal(fn_row(text, "sim_rec", 0), 4 * 5 + 3 * 7);
	assert_int_equal(fn_row(text, "sim_leaf", 1), 13);
	assert_int_equal(fn_row(text, "sim_leaf", 0), 26);
	assert_int_equal(fn_row(text, "sim_case2", 1), 1);
	assert_int_equal(fn_row(text, "sim_case0", 0), 2 * 2);	/* case0 and via case2 */
	free(text);

	text = report_of(&o, trace_script, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(text, "sim_main+0x0:\tpush rbp"));
	assert_non_null(strstr(text, "rep stosb"));
	free(text);
}

static void test_report_gaps(void **state)
{
	struct sim_opts o = { .aux_pages = 1, .drain_every = 20000, .rounds = 1000,
			      .drop_aux_frame = -1 };
	int rc;
	(void)state;

	char *text = report_of(&o, trace_report, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(text, "TRUNCATED (AUX area full"));
	assert_non_null(strstr(text, "instructions (AUX area full)"));
	assert_non_null(strstr(text, "exact: every instruction is accounted for"));
	free(text);
	text = report_of(&o, trace_script, &rc);
	assert_non_null(strstr(text, "-- gap: "));
	free(text);
}

struct slices {
	unsigned rec, leaf, main_;
	uint64_t main_dur;
	bool nested_ok;
};

static void on_slice(void *ctx, const struct trace_slice *s)
{
	struct slices *S = ctx;

	if (!strcmp(s->name, "sim_rec"))
		S->rec++;
	if (!strcmp(s->name, "sim_leaf")) {
		S->leaf++;
		S->nested_ok &= s->dur == 2 && s->depth >= 1;
	}
	if (!strcmp(s->name, "sim_main")) {
		S->main_++;
		S->main_dur = s->dur;
	}
}

static void test_slices(void **state)
{
	struct sim_opts o = { .drop_aux_frame = -1 };
	struct sim_result r;
	struct trace_opts to = { .kernel_elf = "/proc/self/exe", .cpu = -1 };
	struct slices S = { .nested_ok = true };
	char err[256];
	(void)state;

	assert_int_equal(sim_run(&o, &r), 0);
	snprintf(capture_path, sizeof(capture_path), "/tmp/bp-trace-test-%d.bpc", getpid());
	assert_int_equal(sim_write_capture(&r, capture_path), 0);
	if (trace_call_slices(capture_path, &to, on_slice, &S, err, sizeof(err)))
		fail_msg("%s", err);
	assert_int_equal(S.rec, 7);
	assert_int_equal(S.leaf, 13);
	assert_true(S.nested_ok);
	assert_int_equal(S.main_, 1);
	unlink(capture_path);
	sim_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pkt_roundtrip),
		cmocka_unit_test(test_pkt_malformed),
		cmocka_unit_test(test_classify_table),
		cmocka_unit_test(test_classify_kernel_elf),
		cmocka_unit_test(test_trace_exact),
		cmocka_unit_test(test_trace_ranged),
		cmocka_unit_test(test_trace_async),
		cmocka_unit_test(test_trace_calls),
		cmocka_unit_test(test_trace_mid_stream),
		cmocka_unit_test(test_trace_truncated),
		cmocka_unit_test(test_trace_truncated_ranged),
		cmocka_unit_test(test_trace_lost_frame),
		cmocka_unit_test(test_trace_pt),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_report_gaps),
		cmocka_unit_test(test_slices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
