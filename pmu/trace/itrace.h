/*
 * itrace.h — the single-step tracer's producer (itrace.c), which writes
 * instruction traces into a ring's AUX area on any x86_64 (QEMU TCG
 * included): opcode classifier, packet encoder (include/uapi/itrace.h)
 * and the AUX chunking (begin/skip/end, pause on a full area). Pure code:
 * it also builds for the host, where the tests drive it with simulated
 * executions over a real ring. Intel PT's driver, the other producer, is
 * pt.h; the traced run that drives both (the #DB handler, trace=
 * parsing, the traced call, a run's per-CPU set-up) is profile/trace.c.
 *
 * Why the software tracer classifies opcodes instead of decoding
 * lengths: a #DB trap gives the address of the instruction that ran and
 * of the next one; whether the flow fell through needs the length of the
 * first, which takes a full x86 length decoder. Only control transfers
 * can break the fall-through, and they are recognisable from prefixes,
 * the opcode and ModRM.reg alone (a dozen opcodes). So the kernel writes
 * a packet exactly for the transfers whose outcome the code does not
 * imply (TNT bits for conditional branches, REP iterations and
 * predicted returns; a target address for indirect ones), plus anchors
 * carrying step counts; the host, which has a real disassembler, supplies
 * every length and direct target. A flow the class does not allow (a SEQ
 * instruction followed by an address more than 15 bytes on, a direct
 * branch landing elsewhere) is written as an ASYNC anchor, so nothing is
 * guessed on either side.
 */
#ifndef BAREPERF_PMU_TRACE_ITRACE_H
#define BAREPERF_PMU_TRACE_ITRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/itrace.h"
#include "ringbuf/ringbuf.h"

/* ---- classifier (include/uapi/itrace.h §3). NMI-safe: yes. ---------- */

struct itrace_insn {
	uint8_t  cls;			/* enum itrace_class */
	uint8_t  len;			/* JCC/JMP/CALL/REP: the length; else 0 (unknown) */
	uint64_t target;		/* JCC/JMP/CALL: the branch target */
};

/* Classify the instruction at ip whose bytes start at code (at least
 * ITRACE_INSN_MAX readable, or avail if fewer). Returns the class. */
int itrace_classify(const uint8_t *code, size_t avail, uint64_t ip, struct itrace_insn *out);

/* ---- packet encoder (§2, §4). Every output buffer needs
 * ITRACE_ENC_MAX bytes: a packet plus a TNT byte flushed before it. ---- */

#define ITRACE_ENC_MAX		(ITRACE_SYNC_MAX + 1)

struct itrace_enc {
	uint64_t last_ip;
	uint64_t sync_steps, sync_tsc;
	uint32_t tnt;			/* 1 (stop bit) followed by pending outcomes */
	uint32_t rs_n, rs_top;		/* return stack: entries, index of the top */
	uint64_t rs[ITRACE_RETSTACK];
};

void itrace_enc_init(struct itrace_enc *e);
/* Each returns the bytes written to out. */
size_t itrace_enc_flush(struct itrace_enc *e, uint8_t *out);
size_t itrace_enc_tnt(struct itrace_enc *e, uint8_t *out, bool taken);
size_t itrace_enc_tip(struct itrace_enc *e, uint8_t *out, uint64_t ip);
size_t itrace_enc_pge(struct itrace_enc *e, uint8_t *out, uint64_t ip);
size_t itrace_enc_async(struct itrace_enc *e, uint8_t *out, uint64_t steps, uint64_t ip);
size_t itrace_enc_stop(struct itrace_enc *e, uint8_t *out, unsigned reason, uint64_t steps,
		       uint64_t tsc);
/* SYNC: pending TNT must have been flushed (it is flushed into out first
 * otherwise); resets last_ip and the return stack. range: NULL or {lo, hi}. */
size_t itrace_enc_sync(struct itrace_enc *e, uint8_t *out, uint64_t ip, uint64_t tsc,
		       uint64_t steps, const uint64_t *range);
void itrace_enc_push(struct itrace_enc *e, uint64_t ret);
/* A RET that went to target: TNT 1 if the stack predicted it, else TIP. */
size_t itrace_enc_ret(struct itrace_enc *e, uint8_t *out, uint64_t target);

/* ---- the producer: one per CPU (§5). NMI-safe: runs in the #DB
 * handler with interrupts off; not reentrant. ----------------------- */

struct itrace_hooks {
	/* The bytes of the instruction at ip (ITRACE_INSN_MAX readable). */
	const uint8_t *(*fetch)(void *ctx, uint64_t ip);
	uint64_t (*tsc)(void *ctx);
	void *ctx;
};

struct itrace_stats {
	uint64_t steps;			/* traced instructions (in range) */
	uint64_t steps_untraced;	/* ... of which ran while paused (counted at the
					 * resume; see itrace_cpu.pause_steps) */
	uint64_t steps_out;		/* #DBs outside the range */
	uint64_t bytes;			/* packet bytes committed */
	uint64_t chunks;		/* AUX commits with data */
	uint64_t syncs, tnt_bits, tips, pges, rets_compressed, asyncs;
	uint64_t pauses;		/* TRUNCATED commits */
	uint64_t skips, skipped_bytes;	/* aux_output_skip at the end of the area */
	uint64_t begin_errors;		/* begin refused for another reason than a full area */
	uint64_t per_class[ITRACE_NR_CLASSES];
};

#define ITRACE_RESERVE		64u	/* never used by packets: room for a STOP PAUSE */
#define ITRACE_MIN_ROOM		128u	/* a chunk needs this much to start */
#define ITRACE_CHUNK_MAX	4096u

struct itrace_cpu {
	/* configuration (itrace_start) */
	struct bp_ring *rb;
	uint64_t aux_size;
	uint64_t lo, hi;		/* traced range [lo, hi) */
	bool ranged;			/* not everything: SYNCs carry the range */
	uint64_t chunk_max, resume_min;
	struct itrace_hooks hooks;

	/* execution */
	uint64_t prev;
	bool have_prev, prev_in;
	uint64_t steps;			/* traced instructions so far */

	/* output */
	struct itrace_enc enc;
	struct bp_aux_handle h;
	bool open, paused, end_pending, ended;
	uint64_t wr, room;		/* bytes written in this chunk; its contiguous room */
	uint64_t pause_steps;		/* steps at the last STOP PAUSE */
	uint64_t end_ip;		/* END still to be written (paused at the stop) */
	struct itrace_stats st;
};

/* Arm the producer for one traced call on rb (which has an AUX area).
 * lo/hi: the range; lo = 0, hi = ~0 traces everything. */
void itrace_start(struct itrace_cpu *c, struct bp_ring *rb, uint64_t lo, uint64_t hi,
		  const struct itrace_hooks *hooks);
/* One single-step trap: the instruction at c->prev ran, cur runs next.
 * stack_top is the u64 at the stack pointer (a call's return address). */
void itrace_step(struct itrace_cpu *c, uint64_t cur, uint64_t stack_top);
/* The traced call returned to cur: account the last instruction, write
 * STOP END and commit. If the area is full the END stays pending. */
void itrace_stop(struct itrace_cpu *c, uint64_t cur, uint64_t stack_top);
/* Try again to write a pending END (after the consumer freed space):
 * true once nothing is pending. */
bool itrace_finish(struct itrace_cpu *c);

#endif
