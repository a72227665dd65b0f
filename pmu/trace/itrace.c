/*
 * itrace.c — the single-step tracer's producer: opcode classes, packets
 * (include/uapi/itrace.h) and the AUX area they go to (seed 002/003 API:
 * bp_aux_output_begin/skip/copy/end).
 *
 * Pure code, built into the kernel and for the host tests: it touches
 * memory only through the ring API and the hooks. Runs in the #DB handler
 * with interrupts off, on the ring's own CPU; an NMI arriving meanwhile
 * does not write the AUX area of this ring, so the handle we keep open
 * between traps is never contended (a nested writer would be refused by
 * the ring's guard, not corrupt anything).
 *
 * Chunks. The producer keeps one AUX handle open and appends packets to a
 * contiguous window of it: no packet straddles the end of the area, so
 * when the window reaches the end the chunk is committed and the next one
 * begins after bp_aux_output_skip() over the rest (the bytes skipped are
 * in no AUX record). A chunk is committed when its window is full, every
 * ITRACE_CHUNK_MAX bytes at most, so the drain sees data while the traced
 * code runs; each starts with a SYNC so it decodes on its own.
 *
 * Full area. ITRACE_RESERVE bytes of the area are never used by packets,
 * so a commit never leaves it completely full (which would stop the ring
 * without a TRUNCATED record): when a new chunk cannot get
 * ITRACE_MIN_ROOM bytes, the reserve takes a STOP PAUSE and is committed
 * with BP_AUX_FLAG_TRUNCATED, which stops the ring's producer until the
 * consumer moves aux_tail. Meanwhile the traced code keeps running
 * single-stepped and only counts; every 64 steps the producer tries
 * again, and resumes with a SYNC whose step count tells the host the
 * exact size of the gap.
 */
#include "pmu/trace/itrace.h"


/* ---- classifier ------------------------------------------------------ */

static bool is_prefix(uint8_t b)
{
	switch (b) {
	case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
	case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
		return true;
	default:
		return (b & 0xf0) == 0x40;	/* REX (64-bit mode) */
	}
}

static int32_t rel8(const uint8_t *p)
{
	return (int8_t)p[0];
}

static int32_t rel32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
			 (uint32_t)p[3] << 24);
}

static int direct(struct itrace_insn *out, int cls, uint64_t ip, unsigned len, int32_t rel)
{
	out->cls = cls;
	out->len = len;
	out->target = ip + len + (int64_t)rel;
	return cls;
}

int itrace_classify(const uint8_t *code, size_t avail, uint64_t ip, struct itrace_insn *out)
{
	size_t n = avail < ITRACE_INSN_MAX ? avail : ITRACE_INSN_MAX;
	bool o16 = false, rep = false;
	unsigned p = 0;
	int cls = ITRACE_C_SEQ;

	out->cls = ITRACE_C_SEQ;
	out->len = 0;
	out->target = 0;
	while (p < n - 1 && p < ITRACE_INSN_MAX - 1 && is_prefix(code[p])) {
		o16 |= code[p] == 0x66;
		rep |= code[p] == 0xf2 || code[p] == 0xf3;
		p++;
	}
	if (p >= n)
		return ITRACE_C_SEQ;
	uint8_t b0 = code[p];
	bool have1 = p + 1 < n, have5 = p + 5 <= n;
	uint8_t b1 = have1 ? code[p + 1] : 0;

	if ((b0 >= 0x70 && b0 <= 0x7f) || (b0 >= 0xe0 && b0 <= 0xe3)) {
		if (!have1)
			return ITRACE_C_SEQ;
		cls = direct(out, ITRACE_C_JCC, ip, p + 2, rel8(code + p + 1));
	} else if (b0 == 0x0f && have1 && b1 >= 0x80 && b1 <= 0x8f) {
		if (p + 6 > n)
			return ITRACE_C_SEQ;
		cls = direct(out, ITRACE_C_JCC, ip, p + 6, rel32(code + p + 2));
	} else if (b0 == 0xeb && have1) {
		cls = direct(out, ITRACE_C_JMP, ip, p + 2, rel8(code + p + 1));
	} else if (b0 == 0xe9 && have5) {
		cls = direct(out, ITRACE_C_JMP, ip, p + 5, rel32(code + p + 1));
	} else if (b0 == 0xe8 && have5) {
		cls = direct(out, ITRACE_C_CALL, ip, p + 5, rel32(code + p + 1));
	} else if (b0 == 0xc3 || b0 == 0xc2) {
		cls = ITRACE_C_RET;
	} else if (b0 == 0xff && have1) {
		unsigned reg = b1 >> 3 & 7;
		cls = reg == 2 ? ITRACE_C_ICALL : reg >= 3 && reg <= 5 ? ITRACE_C_IJMP : ITRACE_C_SEQ;
	} else if (b0 == 0xc7 && b1 == 0xf8) {
		cls = ITRACE_C_IJMP;			/* xbegin: aborts jump */
	} else if (b0 == 0xca || b0 == 0xcb || (b0 >= 0xcc && b0 <= 0xcf) || b0 == 0xf1 ||
		   b0 == 0x9a || b0 == 0xea) {
		cls = ITRACE_C_IJMP;
	} else if (b0 == 0x0f && have1 && (b1 == 0x05 || b1 == 0x07 || b1 == 0x34 ||
					   b1 == 0x35 || b1 == 0x0b || b1 == 0xb9 ||
					   b1 == 0xff)) {
		cls = ITRACE_C_IJMP;
	} else if (rep && ((b0 >= 0xa4 && b0 <= 0xa7) || (b0 >= 0xaa && b0 <= 0xaf) ||
			   (b0 >= 0x6c && b0 <= 0x6f))) {
		out->cls = cls = ITRACE_C_REP;
		out->len = p + 1;
		return cls;
	}
	/* Operand size of near branches differs by vendor with 66: the
	 * target, length and return address are then taken from a TIP. */
	if (o16 && cls != ITRACE_C_SEQ && cls != ITRACE_C_IJMP) {
		out->len = 0;
		out->target = 0;
		cls = ITRACE_C_IJMP;
	}
	out->cls = cls;
	return cls;
}

/* ---- encoder --------------------------------------------------------- */

static size_t put_uvarint(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

static size_t put_svarint(uint8_t *out, int64_t v)
{
	return put_uvarint(out, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void put_u64(uint8_t *out, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

void itrace_enc_init(struct itrace_enc *e)
{
	__builtin_memset(e, 0, sizeof(*e));
	e->tnt = 1;
}

size_t itrace_enc_flush(struct itrace_enc *e, uint8_t *out)
{
	if (e->tnt == 1)
		return 0;
	out[0] = (uint8_t)(ITRACE_OP_TNT | e->tnt);
	e->tnt = 1;
	return 1;
}

size_t itrace_enc_tnt(struct itrace_enc *e, uint8_t *out, bool taken)
{
	e->tnt = e->tnt << 1 | taken;
	if (e->tnt < 1u << ITRACE_TNT_MAX)
		return 0;
	return itrace_enc_flush(e, out);
}

static size_t ip_packet(struct itrace_enc *e, uint8_t *out, uint8_t op, uint64_t ip)
{
	size_t n = itrace_enc_flush(e, out);

	out[n++] = op;
	n += put_svarint(out + n, (int64_t)(ip - e->last_ip));
	e->last_ip = ip;
	return n;
}

size_t itrace_enc_tip(struct itrace_enc *e, uint8_t *out, uint64_t ip)
{
	return ip_packet(e, out, ITRACE_OP_TIP, ip);
}

size_t itrace_enc_pge(struct itrace_enc *e, uint8_t *out, uint64_t ip)
{
	return ip_packet(e, out, ITRACE_OP_PGE, ip);
}

size_t itrace_enc_async(struct itrace_enc *e, uint8_t *out, uint64_t steps, uint64_t ip)
{
	size_t n = itrace_enc_flush(e, out);

	out[n++] = ITRACE_OP_ASYNC;
	n += put_uvarint(out + n, steps - e->sync_steps);
	n += put_svarint(out + n, (int64_t)(ip - e->last_ip));
	e->last_ip = ip;
	return n;
}

size_t itrace_enc_stop(struct itrace_enc *e, uint8_t *out, unsigned reason, uint64_t steps,
		       uint64_t tsc)
{
	size_t n = itrace_enc_flush(e, out);

	out[n++] = ITRACE_OP_STOP;
	out[n++] = (uint8_t)reason;
	n += put_uvarint(out + n, steps - e->sync_steps);
	n += put_uvarint(out + n, tsc - e->sync_tsc);
	return n;
}

size_t itrace_enc_sync(struct itrace_enc *e, uint8_t *out, uint64_t ip, uint64_t tsc,
		       uint64_t steps, const uint64_t *range)
{
	size_t n = itrace_enc_flush(e, out);

	__builtin_memcpy(out + n, ITRACE_SYNC_MAGIC, ITRACE_SYNC_MAGIC_LEN);
	put_u64(out + n + 8, ip);
	put_u64(out + n + 16, tsc);
	put_u64(out + n + 24, steps);
	out[n + 32] = range ? ITRACE_SYNC_RANGE : 0;
	n += sizeof(struct itrace_sync);
	if (range) {
		put_u64(out + n, range[0]);
		put_u64(out + n + 8, range[1]);
		n += sizeof(struct itrace_range);
	}
	e->last_ip = ip;
	e->sync_steps = steps;
	e->sync_tsc = tsc;
	e->rs_n = 0;
	return n;
}

void itrace_enc_push(struct itrace_enc *e, uint64_t ret)
{
	e->rs_top = (e->rs_top + 1) % ITRACE_RETSTACK;
	e->rs[e->rs_top] = ret;
	if (e->rs_n < ITRACE_RETSTACK)
		e->rs_n++;
}

size_t itrace_enc_ret(struct itrace_enc *e, uint8_t *out, uint64_t target)
{
	if (e->rs_n) {
		uint64_t top = e->rs[e->rs_top];
		e->rs_top = (e->rs_top + ITRACE_RETSTACK - 1) % ITRACE_RETSTACK;
		e->rs_n--;
		if (top == target)
			return itrace_enc_tnt(e, out, true);
	}
	return itrace_enc_tip(e, out, target);
}

/* ---- producer ---------------------------------------------------------- */

void itrace_start(struct itrace_cpu *c, struct bp_ring *rb, uint64_t lo, uint64_t hi,
		  const struct itrace_hooks *hooks)
{
	__builtin_memset(c, 0, sizeof(*c));
	c->rb = rb;
	c->aux_size = rb ? rb->ctl->aux_size : 0;
	c->lo = lo;
	c->hi = hi;
	c->ranged = !(lo == 0 && hi == ~0ull);
	c->chunk_max = c->aux_size / 4 < ITRACE_CHUNK_MAX ? c->aux_size / 4 : ITRACE_CHUNK_MAX;
	c->resume_min = c->aux_size / 4 > ITRACE_MIN_ROOM ? c->aux_size / 4 : ITRACE_MIN_ROOM;
	c->hooks = *hooks;
	itrace_enc_init(&c->enc);
}

static bool in_range(const struct itrace_cpu *c, uint64_t ip)
{
	return ip >= c->lo && ip < c->hi;
}

static void put(struct itrace_cpu *c, const uint8_t *p, size_t n)
{
	if (!n)
		return;
	/* Within the window by construction (ensure_room). */
	bp_aux_output_copy(&c->h, c->wr, p, n);
	c->wr += n;
}

static void commit(struct itrace_cpu *c, uint64_t flags)
{
	uint8_t b[1];

	put(c, b, itrace_enc_flush(&c->enc, b));
	if (c->wr) {
		c->st.chunks++;
		c->st.bytes += c->wr;
	}
	if (flags & BP_AUX_FLAG_TRUNCATED)
		c->st.pauses++;
	bp_aux_output_end(&c->h, c->wr, flags);
	c->open = false;
	c->wr = c->room = 0;
}

/*
 * Open a handle and find a contiguous window of at least want bytes
 * below the reserve, skipping to the start of the area if the end is
 * too close. Returns the window (0: none; the handle stays open).
 */
static uint64_t open_window(struct itrace_cpu *c, uint64_t want, int *err)
{
	uint64_t pos, to_end, avail;

	*err = bp_aux_output_begin(c->rb, &c->h);
	if (*err)
		return 0;
	c->open = true;
	c->wr = 0;
	pos = c->h.head & (c->aux_size - 1);
	to_end = c->aux_size - pos;
	avail = c->h.size > ITRACE_RESERVE ? c->h.size - ITRACE_RESERVE : 0;
	if (to_end < want && avail > to_end && avail - to_end >= want) {
		bp_aux_output_skip(&c->h, to_end);
		c->st.skips++;
		c->st.skipped_bytes += to_end;
		avail -= to_end;
		to_end = c->aux_size;
	}
	c->room = to_end < avail ? to_end : avail;
	if (c->room > c->chunk_max)
		c->room = c->chunk_max;
	return c->room >= want ? c->room : 0;
}

/*
 * The area is full: the reserve takes a STOP PAUSE at steps (the handle
 * is open, window or not) and goes out TRUNCATED. Leaves us paused.
 */
static void pause_here(struct itrace_cpu *c, uint64_t steps)
{
	uint8_t b[ITRACE_ENC_MAX];
	uint64_t pos = c->h.head & (c->aux_size - 1), to_end = c->aux_size - pos;
	size_t n;

	if (to_end < ITRACE_STOP_MAX + 1 && c->h.size > to_end) {
		bp_aux_output_skip(&c->h, to_end);
		c->st.skips++;
		c->st.skipped_bytes += to_end;
	}
	n = itrace_enc_stop(&c->enc, b, ITRACE_STOP_PAUSE, steps, c->hooks.tsc(c->hooks.ctx));
	c->wr = 0;
	if (n <= c->h.size) {
		bp_aux_output_copy(&c->h, 0, b, n);
		c->wr = n;
	}
	commit(c, BP_AUX_FLAG_TRUNCATED);
	c->paused = true;
	c->pause_steps = steps;
}

/*
 * A new chunk starting with SYNC(ip, steps), with a window of at least
 * want bytes. When there is no such window: if first_try, the area is
 * full: STOP PAUSE, TRUNCATED (pause_here); else (already paused) give
 * the handle back and stay paused. False if paused.
 */
static bool new_chunk(struct itrace_cpu *c, uint64_t ip, uint64_t steps, uint64_t want,
		      bool first_try)
{
	uint8_t b[ITRACE_ENC_MAX];
	uint64_t range[2] = { c->lo, c->hi };
	int err;

	if (!open_window(c, want, &err)) {
		if (err) {
			/* Stopped and nothing freed yet: stay paused. Any other
			 * refusal is counted; we pause the same way. */
			if (err != BP_EAUX_STOPPED && err != BP_EAUX_FULL)
				c->st.begin_errors++;
			c->paused = true;
			return false;
		}
		if (first_try) {
			pause_here(c, steps);
		} else {
			/* Freed, but too little to be worth it: give it back. */
			bp_aux_output_end(&c->h, 0, 0);
			c->open = false;
		}
		return false;
	}
	if (c->paused)
		c->st.steps_untraced += steps - c->pause_steps;
	c->paused = false;
	put(c, b, itrace_enc_sync(&c->enc, b, ip, c->hooks.tsc(c->hooks.ctx), steps,
				  c->ranged ? range : NULL));
	c->st.syncs++;
	return true;
}

/*
 * Room for need more bytes in the current chunk, whose next instruction
 * is number steps + 1 at ip. 0: paused (write nothing); 1: go on;
 * 2: a SYNC at ip was just written.
 */
static int ensure(struct itrace_cpu *c, uint64_t ip, uint64_t steps, uint64_t need)
{
	if (c->paused)
		return 0;
	if (c->open && c->wr + need + 1 <= c->room)
		return 1;
	if (c->open)
		commit(c, 0);
	return new_chunk(c, ip, steps, ITRACE_MIN_ROOM, !c->paused) ? 2 : 0;
}

/* The event of the instruction at prev, number c->steps + 1, now done. */
static void account(struct itrace_cpu *c, uint64_t prev, uint64_t cur, uint64_t stack_top)
{
	uint8_t b[ITRACE_ENC_MAX];
	struct itrace_insn in;
	uint64_t s = c->steps;
	int cls;

	c->steps++;
	c->st.steps++;
	if (c->paused) {
		if ((c->steps & 63) || !new_chunk(c, prev, s, c->resume_min, false))
			return;
	}
	cls = itrace_classify(c->hooks.fetch(c->hooks.ctx, prev), ITRACE_INSN_MAX, prev, &in);
	c->st.per_class[cls]++;
	switch (cls) {
	case ITRACE_C_SEQ:
		if (cur - prev - 1 < ITRACE_INSN_MAX)
			return;
		goto async;
	case ITRACE_C_JMP:
		if (cur == in.target)
			return;
		goto async;
	case ITRACE_C_CALL:
		/* The push happens whatever comes next (uapi/itrace.h ASYNC). */
		if (cur == in.target) {
			if (!c->paused)
				itrace_enc_push(&c->enc, prev + in.len);
			return;
		}
		goto async;
	case ITRACE_C_JCC:
		if (cur != prev + in.len && cur != in.target)
			goto async;
		if (!ensure(c, prev, s, 1))
			return;
		put(c, b, itrace_enc_tnt(&c->enc, b, cur != prev + in.len));
		c->st.tnt_bits++;
		return;
	case ITRACE_C_REP:
		if (cur != prev && cur != prev + in.len)
			goto async;
		if (!ensure(c, prev, s, 1))
			return;
		put(c, b, itrace_enc_tnt(&c->enc, b, cur == prev));
		c->st.tnt_bits++;
		return;
	case ITRACE_C_RET:
		if (!ensure(c, prev, s, ITRACE_TIP_MAX))
			return;
		if (c->enc.rs_n && c->enc.rs[c->enc.rs_top] == cur)
			c->st.rets_compressed++;
		else
			c->st.tips++;
		put(c, b, itrace_enc_ret(&c->enc, b, cur));
		return;
	case ITRACE_C_ICALL:
		if (!ensure(c, prev, s, ITRACE_TIP_MAX))
			return;
		put(c, b, itrace_enc_tip(&c->enc, b, cur));
		itrace_enc_push(&c->enc, stack_top);
		c->st.tips++;
		return;
	default:
		if (!ensure(c, prev, s, ITRACE_TIP_MAX))
			return;
		put(c, b, itrace_enc_tip(&c->enc, b, cur));
		c->st.tips++;
		return;
	}
async:
	if (!ensure(c, prev, s, ITRACE_ASYNC_MAX))
		return;
	/* ensure() may have synced at prev: the push of a CALL follows the
	 * stack reset, as the decoder's does. */
	if (cls == ITRACE_C_CALL)
		itrace_enc_push(&c->enc, prev + in.len);
	put(c, b, itrace_enc_async(&c->enc, b, c->steps, cur));
	c->st.asyncs++;
}

void itrace_step(struct itrace_cpu *c, uint64_t cur, uint64_t stack_top)
{
	bool cur_in = in_range(c, cur), was_in = c->have_prev && c->prev_in;

	if (c->ended)
		return;
	if (was_in)
		account(c, c->prev, cur, stack_top);
	else
		c->st.steps_out += c->have_prev;
	if (cur_in && !was_in) {
		uint8_t b[ITRACE_ENC_MAX];
		int r = c->paused ? (new_chunk(c, cur, c->steps, c->resume_min, false) ? 2 : 0)
				  : ensure(c, cur, c->steps, ITRACE_TIP_MAX);
		if (r == 1) {
			put(c, b, itrace_enc_pge(&c->enc, b, cur));
			c->st.pges++;
		}
	}
	c->prev = cur;
	c->prev_in = cur_in;
	c->have_prev = true;
}

static bool write_end(struct itrace_cpu *c)
{
	uint8_t b[ITRACE_ENC_MAX];
	uint64_t tsc;

	if (c->paused) {
		if (!new_chunk(c, c->end_ip, c->steps, ITRACE_MIN_ROOM, false))
			return false;
	} else if (!ensure(c, c->end_ip, c->steps, ITRACE_STOP_MAX)) {
		return false;
	}
	tsc = c->hooks.tsc(c->hooks.ctx);
	put(c, b, itrace_enc_stop(&c->enc, b, ITRACE_STOP_END, c->steps, tsc));
	commit(c, 0);
	c->end_pending = false;
	return true;
}

void itrace_stop(struct itrace_cpu *c, uint64_t cur, uint64_t stack_top)
{
	if (c->ended)
		return;
	if (c->have_prev && c->prev_in)
		account(c, c->prev, cur, stack_top);
	c->have_prev = false;
	c->ended = true;
	c->end_ip = cur;
	if (!c->open && !c->paused && !c->st.syncs) {
		/* Nothing was ever in range: no stream at all. */
		return;
	}
	c->end_pending = true;
	write_end(c);
}

bool itrace_finish(struct itrace_cpu *c)
{
	if (!c->end_pending)
		return true;
	if (c->open) {
		/* A resume attempt left nothing open; defensive. */
		commit(c, 0);
	}
	return write_end(c);
}
