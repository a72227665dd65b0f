/*
 * tools/util/trace/flow.c — the single-step tracer's flow decoder
 * (trace.h): its packets (pkt.c) walked over the code (insn.c) into
 * every executed instruction, each reached only once a later packet or
 * anchor proves it ran; what cannot be proven is a gap.
 */
#include <inttypes.h>
#include <string.h>

#include "tools/util/trace/internal.h"

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

/* A SYNC or STOP for the step the walk has reached: the anchor itself. */
static void take_anchor(struct sdec *d)
{
	struct trace_pkt p = d->pk;

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
}

/*
 * The packet ahead, before the next instruction (no TNT bits pending):
 * true when it ends this step (an anchor taken, the data ended, an
 * error); *override when an ASYNC sends the next instruction elsewhere.
 */
static bool packet_ahead(struct sdec *d, bool *override)
{
	int s = peek(d);

	if (s == PK_EOD) {
		bool more = d->pi + 1 < d->np;
		lose_sync(d, more && d->pcs[d->pi + 1].join == TJ_PAUSE ? "AUX area full" :
			  more ? "AUX data missing" : NULL);
		if (!more)
			d->why = "the trace ends without STOP END";
		return true;
	}
	if (s == PK_BAD) {
		error_at(d, "bad packet at AUX %#" PRIx64 " (byte %#x)", aux_pos(d),
			 d->pcs[d->pi].data[d->off]);
		lose_sync(d, "bad packet");
		return true;
	}
	const struct trace_pkt *pk = &d->pk;
	uint64_t abs = pk->type == TP_SYNC ? pk->steps : d->sync_steps + pk->steps;
	if (pk->type == TP_SYNC || pk->type == TP_STOP) {
		if (abs == d->count) {
			take_anchor(d);
			return true;
		}
		if (abs < d->count) {
			error_at(d, "%s for step %" PRIu64 " after the walk reached step %" PRIu64,
				 pkt_name(pk->type), abs, d->count);
			lose_sync(d, "decode error");
			return true;
		}
	} else if (pk->type == TP_ASYNC) {
		if (abs == d->count + 1) {
			*override = true;
		} else if (abs <= d->count) {
			error_at(d, "ASYNC for step %" PRIu64 " after the walk reached step %" PRIu64,
				 abs, d->count);
			lose_sync(d, "decode error");
			return true;
		}
	}
	return false;
}

/* Left the range: only a PGE (or an anchor, packet_ahead) can follow. */
static void reenter(struct sdec *d)
{
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
}

/* The ASYNC ahead takes the walk from ii to its target. */
static void take_async(struct sdec *d, const struct trace_insn *ii)
{
	if (ii->cls == ITRACE_C_CALL)
		push(d, ii->ip + ii->len);
	d->ip = d->last_ip + (uint64_t)d->pk.ip_delta;
	d->last_ip = d->ip;
	consume(d);
	confirm(d);
	d->st->asyncs++;
}

/* A ret with its call on the stack: a TNT 1 (to the call's next) or a TIP. */
static void ret_predicted(struct sdec *d, const struct trace_insn *ii)
{
	uint64_t top = d->rs[d->rs_top], tip = 0;

	d->rs_top = (d->rs_top + ITRACE_RETSTACK - 1) % ITRACE_RETSTACK;
	d->rs_n--;
	int ev = next_event(d, &tip);
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
}

/* Where ii goes: by its class, from the packets when it branches. */
static void walk(struct sdec *d, const struct trace_insn *ii)
{
	uint64_t tip = 0;
	int ev;

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
			ret_predicted(d, ii);
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

/* One instruction, or one anchor. */
static void step(struct sdec *d)
{
	bool override = false;

	if (!d->tnt_n && packet_ahead(d, &override))
		return;
	if (d->ip < d->lo || d->ip >= d->hi) {
		reenter(d);
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
	if (override)
		take_async(d, ii);
	else
		walk(d, ii);
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

