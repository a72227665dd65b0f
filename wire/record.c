/*
 * wire/record.c — the record codec (include/uapi/wire.h §3-4 for the
 * format, wire/record.h for the contract): ring records into RECORDS
 * frames, SAMPLE records as compact items predicted from the one before.
 * The frames themselves (COBS, CRC, numbering) are the link layer's,
 * wire/frame.c.
 *
 * An item that does not fit is rolled back by restoring the writer (a few
 * words); the predictions are updated only after an item is committed, so
 * they need no rollback.
 */
#include "kernel/lib/string.h"
#include "kernel/lib/unaligned.h"
#include "ringbuf/ringbuf.h"
#include "wire/record.h"

/* Fields of one u64 (or two u32) each. */
#define SAMPLE_WORDS	(BP_SAMPLE_IDENTIFIER | BP_SAMPLE_IP | BP_SAMPLE_TID | \
			 BP_SAMPLE_TIME | BP_SAMPLE_ADDR | BP_SAMPLE_ID | \
			 BP_SAMPLE_CPU | BP_SAMPLE_PERIOD)

uint32_t wire_sample_size(uint64_t sample_type, uint64_t nr_read, uint64_t nr_ips)
{
	uint64_t size = sizeof(struct bp_record_header);

	if (sample_type & ~BP_SAMPLE_SUPPORTED)
		return 0;
	/* No __builtin_popcount: without -mpopcnt it calls into libgcc. */
	for (uint64_t w = sample_type & SAMPLE_WORDS; w; w &= w - 1)
		size += 8;
	if (sample_type & BP_SAMPLE_READ) {
		if (nr_read > BP_RECORD_MAX / sizeof(struct bp_group_entry))
			return 0;
		size += sizeof(struct bp_read_group) + nr_read * sizeof(struct bp_group_entry);
	}
	if (sample_type & BP_SAMPLE_CALLCHAIN) {
		if (nr_ips > BP_RECORD_MAX / 8)
			return 0;
		size += 8 + nr_ips * 8;
	}
	return size > BP_RECORD_MAX ? 0 : (uint32_t)size;
}

/* ---- the encoder ------------------------------------------------------ */

void wire_encoder_init(struct wire_enc *e, const struct wire_enc_config *cfg)
{
	memset(e, 0, sizeof(*e));
	wire_framer_init(&e->framer, cfg->cpu, cfg->boot, cfg->frame_target);
	e->sample_type = cfg->sample_type;
}

void wire_encoder_use_framer(struct wire_enc *e, struct wire_framer *l)
{
	e->ext = l;
}

void wire_encoder_set_sample_type(struct wire_enc *e, uint64_t sample_type)
{
	e->sample_type = sample_type;
}

int wire_encoder_add_event(struct wire_enc *e, uint64_t id, uint64_t sample_type)
{
	for (uint32_t i = 0; i < e->nr_events; i++) {
		if (e->events[i].id == id) {
			e->events[i].sample_type = sample_type;
			return WIRE_OK;
		}
	}
	if (e->nr_events == WIRE_ENC_MAX_EVENTS)
		return WIRE_E_SPACE;
	e->events[e->nr_events].id = id;
	e->events[e->nr_events].sample_type = sample_type;
	e->nr_events++;
	return WIRE_OK;
}

/* ---- compact SAMPLE items ------------------------------------------- */

/*
 * True if rec (size bytes) is exactly a SAMPLE laid out for st: the ring's
 * own parser takes it apart (bp_sample_parse), with the fields it folds
 * (IDENTIFIER beside ID, CPU's reserved half) kept apart for an exact copy.
 */
static bool sample_parse(uint64_t st, const uint8_t *rec, uint32_t size, struct wire_sample *v)
{
	const struct bp_record_header *h = (const struct bp_record_header *)rec;
	struct bp_sample s;

	/* The parser reads the header in place: ring records are 8-aligned. */
	if ((uintptr_t)rec % BP_RECORD_ALIGN || h->size != size ||
	    bp_sample_parse(st, h, &s))
		return false;
	v->sample_type = st;
	v->misc = h->misc;
	v->identifier = s.identifier;
	v->ip = s.ip;
	v->pid = s.pid;
	v->tid = s.tid;
	v->time = s.time;
	v->addr = s.addr;
	v->id = s.id;
	v->cpu = s.cpu;
	v->res = s.res;
	v->period = s.period;
	v->nr_read = st & BP_SAMPLE_READ ? s.nr_group : 0;
	v->time_enabled = s.time_enabled;
	v->time_running = s.time_running;
	v->read = (const uint8_t *)s.group;
	v->nr_ips = st & BP_SAMPLE_CALLCHAIN ? s.nr_ips : 0;
	v->ips = (const uint8_t *)s.ips;
	return true;
}

/* The prediction for callchain slot i (uapi/wire.h §4). */
static inline uint64_t chain_pred(const struct wire_pred *p, uint64_t st, uint64_t ip,
				  uint64_t i, uint64_t prev_entry)
{
	if (i == 0)
		return st & BP_SAMPLE_IP ? ip : p->chain[0];
	return i < WIRE_PRED_CHAIN ? p->chain[i] : prev_entry;
}

static void put_sample(struct wire_writer *w, const struct wire_pred *p, const struct wire_sample *v)
{
	uint64_t st = v->sample_type;
	uint8_t tag = WIRE_ITEM_SAMPLE, sticky = 0;

	if (!p->have_type || p->sample_type != st)
		tag |= WIRE_S_TYPE;
	if (v->misc != p->misc)
		tag |= WIRE_S_MISC;
	if ((st & BP_SAMPLE_IDENTIFIER) && v->identifier != p->identifier)
		sticky |= WIRE_SK_IDENTIFIER;
	if ((st & BP_SAMPLE_TID) && v->pid != p->pid)
		sticky |= WIRE_SK_PID;
	if ((st & BP_SAMPLE_TID) && v->tid != p->tid)
		sticky |= WIRE_SK_TID;
	if ((st & BP_SAMPLE_ID) && v->id != p->id)
		sticky |= WIRE_SK_ID;
	if ((st & BP_SAMPLE_CPU) && v->cpu != p->cpu)
		sticky |= WIRE_SK_CPU;
	if ((st & BP_SAMPLE_CPU) && v->res != p->res)
		sticky |= WIRE_SK_RES;
	if (sticky)
		tag |= WIRE_S_STICKY;
	if ((st & BP_SAMPLE_PERIOD) && v->period != p->period)
		tag |= WIRE_S_PERIOD;

	/* Every prediction holds and the IP moved little: the tag says so
	 * and carries the IP. */
	uint64_t ipz = wire_zigzag(v->ip - p->ip);
	bool ip_in_tag = tag == WIRE_ITEM_SAMPLE && (st & BP_SAMPLE_IP) &&
			 ipz < WIRE_SAMPLE_IP_CODES;

	wire_put_byte(w, ip_in_tag ? (uint8_t)(WIRE_ITEM_SAMPLE_IP + ipz) : tag);
	if (tag & WIRE_S_TYPE)
		wire_put_uvarint_w(w, st);
	if (tag & WIRE_S_MISC)
		wire_put_uvarint_w(w, v->misc);
	if (tag & WIRE_S_STICKY) {
		wire_put_byte(w, sticky);
		/* u32 fields: the difference modulo 2^32, sign-extended. */
		if (sticky & WIRE_SK_IDENTIFIER)
			wire_put_svarint(w, v->identifier - p->identifier);
		if (sticky & WIRE_SK_PID)
			wire_put_svarint(w, (uint64_t)(int64_t)(int32_t)(v->pid - p->pid));
		if (sticky & WIRE_SK_TID)
			wire_put_svarint(w, (uint64_t)(int64_t)(int32_t)(v->tid - p->tid));
		if (sticky & WIRE_SK_ID)
			wire_put_svarint(w, v->id - p->id);
		if (sticky & WIRE_SK_CPU)
			wire_put_svarint(w, (uint64_t)(int64_t)(int32_t)(v->cpu - p->cpu));
		if (sticky & WIRE_SK_RES)
			wire_put_svarint(w, (uint64_t)(int64_t)(int32_t)(v->res - p->res));
	}
	if (tag & WIRE_S_PERIOD)
		wire_put_svarint(w, v->period - p->period);

	if ((st & BP_SAMPLE_IP) && !ip_in_tag)
		wire_put_svarint(w, v->ip - p->ip);
	if (st & BP_SAMPLE_TIME)
		wire_put_svarint(w, (v->time - p->time) - p->dtime);
	if (st & BP_SAMPLE_ADDR)
		wire_put_svarint(w, v->addr - p->addr);
	if (st & BP_SAMPLE_READ) {
		wire_put_uvarint_w(w, v->nr_read);
		wire_put_svarint(w, v->time_enabled - p->time_enabled);
		wire_put_svarint(w, v->time_running - p->time_running);
		for (uint64_t i = 0; i < v->nr_read; i++) {
			bool pr = i < WIRE_PRED_READ;
			wire_put_svarint(w, ld64(v->read + 16 * i) - (pr ? p->read_config[i] : 0));
			wire_put_svarint(w, ld64(v->read + 16 * i + 8) - (pr ? p->read_count[i] : 0));
			if (w->full)
				return;
		}
	}
	if (st & BP_SAMPLE_CALLCHAIN) {
		uint64_t prev = 0;

		wire_put_uvarint_w(w, v->nr_ips);
		for (uint64_t i = 0; i < v->nr_ips; i++) {
			uint64_t ip = ld64(v->ips + 8 * i);
			wire_put_svarint(w, ip - chain_pred(p, st, v->ip, i, prev));
			prev = ip;
			if (w->full)
				return;
		}
	}
}

/* The sample_type a SAMPLE record was written with, as far as we know. */
static bool sample_view(const struct wire_enc *e, const uint8_t *rec, uint32_t size,
			struct wire_sample *v)
{
	if (size >= 16) {
		uint64_t id = ld64(rec + 8);
		for (uint32_t i = 0; i < e->nr_events; i++)
			if (e->events[i].id == id &&
			    sample_parse(e->events[i].sample_type, rec, size, v))
				return true;
	}
	return e->sample_type && sample_parse(e->sample_type, rec, size, v);
}

static void learn_event(struct wire_enc *e, const uint8_t *rec, uint32_t size)
{
	uint64_t id, st;

	if (size < sizeof(struct bp_record_event_desc))
		return;
	id = ld64(rec + __builtin_offsetof(struct bp_record_event_desc, id));
	st = ld64(rec + __builtin_offsetof(struct bp_record_event_desc, sample_type));
	if (st & BP_SAMPLE_IDENTIFIER)
		wire_encoder_add_event(e, id, st);
	else
		e->sample_type = st;
}

/*
 * A record verbatim: with sparse, as WIRE_ITEM_RAW_SPARSE (a mask of its
 * nonzero bytes, then those bytes) when that is shorter, as most
 * non-SAMPLE records are (names and reserved fields NUL-padded); else as
 * WIRE_ITEM_RAW.
 */
static void put_raw(struct wire_writer *w, const uint8_t *rec, uint32_t size, bool sparse)
{
	uint32_t words = size / 8, nonzero = 0;
	uint8_t tmp[10];

	for (uint32_t i = 0; sparse && i < size; i++)
		nonzero += rec[i] != 0;
	if (!sparse || 1 + wire_put_uvarint(tmp, words) + words + nonzero >= 1 + size) {
		wire_put_byte(w, WIRE_ITEM_RAW);
		wire_put_bytes(w, rec, size);
		return;
	}
	wire_put_byte(w, WIRE_ITEM_RAW_SPARSE);
	wire_put_uvarint_w(w, words);
	for (uint32_t i = 0; i < size; i += 8) {
		uint8_t mask = 0;
		for (uint32_t b = 0; b < 8; b++)
			mask |= (uint8_t)((rec[i + b] != 0) << b);
		wire_put_byte(w, mask);
	}
	for (uint32_t i = 0; i < size; i++)
		if (rec[i])
			wire_put_byte(w, rec[i]);
}

/*
 * Write one record as an item. limit: the payload the frame may reach.
 * False (and w as it was) if it does not fit.
 */
static bool put_record(struct wire_enc *e, struct wire_writer *w, const uint8_t *rec,
		       uint32_t size, size_t limit)
{
	struct wire_writer save = *w;
	struct wire_sample v;
	uint32_t type = ld32(rec);

	if (type == BP_RECORD_SAMPLE && sample_view(e, rec, size, &v)) {
		put_sample(w, &e->pred, &v);
		/* Compact only if it is no longer than raw. */
		if (!w->full && wire_payload_len(w) <= limit && w->raw - save.raw <= 1 + (size_t)size) {
			wire_pred_commit(&e->pred, &v);
			e->stats.samples_compact++;
			e->stats.records++;
			return true;
		}
		*w = save;
	}
	put_raw(w, rec, size, wire_encoder_framer(e)->sparse);
	if (w->full || wire_payload_len(w) > limit) {
		*w = save;
		return false;
	}
	if (type == BP_RECORD_SAMPLE)
		e->stats.samples_raw++;
	else if (type == BP_RECORD_EVENT_DESC)
		learn_event(e, rec, size);
	e->stats.records++;
	return true;
}

/* The size of the record at in[0, left), or 0 if its header is malformed. */
static uint32_t record_size(const uint8_t *in, size_t left)
{
	uint32_t size;

	if (left < sizeof(struct bp_record_header))
		return 0;
	size = ld16(in + 6);
	if (size < sizeof(struct bp_record_header) || size % BP_RECORD_ALIGN || size > left)
		return 0;
	return size;
}

/* A record that describes the run (kept and repeated, wire_descs). */
static bool is_descriptor(uint32_t type)
{
	switch (type) {
	case BP_RECORD_RUN_META:
	case BP_RECORD_CPU_INFO:
	case BP_RECORD_PMU_CAPS:
	case BP_RECORD_EVENT_DESC:
	case BP_RECORD_APP_START:
	case BP_RECORD_PROGRAM:
		return true;
	default:
		return false;
	}
}

void wire_descs_keep(struct wire_descs *d, const void *records, size_t len)
{
	const uint8_t *in = records;
	uint32_t size;

	for (size_t at = 0; at < len && (size = record_size(in + at, len - at)); at += size) {
		const struct bp_record_header *h = (const struct bp_record_header *)(in + at);
		if (!is_descriptor(h->type))
			continue;
		if (h->type == BP_RECORD_RUN_META)
			d->len = 0;
		if (d->len + size > d->cap) {
			d->dropped++;
			continue;
		}
		memcpy(d->buf + d->len, h, size);
		d->len += size;
	}
}

/* Whole records at records[0, len) taken without a frame (hold_repeats). */
static size_t held(const uint8_t *in, size_t len)
{
	size_t done = 0;
	uint32_t size;

	while (done < len && (size = record_size(in + done, len - done)))
		done += size;
	return done;
}

static size_t encode_closed(struct wire_enc *e, struct wire_framer *l, const uint8_t *in,
			    size_t len, size_t *consumed, uint8_t *out, size_t outcap);

/*
 * Records into the frame open in l->span (opening one as needed); a frame
 * that reaches frame_target is closed into out, and so is one whose
 * records so far are the run's descriptors when other records follow: a
 * capture cut anywhere after them still has them. A record that fits no
 * frame of span_cap goes on its own through encode_closed.
 */
static size_t encode_spanning(struct wire_enc *e, struct wire_framer *l, const uint8_t *in,
			      size_t len, size_t *consumed, uint8_t *out, size_t outcap)
{
	size_t done = 0, at = 0, used;
	uint32_t size;

	while (done < len) {
		if (!(size = record_size(in + done, len - done))) {
			e->stats.bad_input++;
			break;
		}
		if (!l->span_open) {
			if (!wire_frame_open(l, &l->span_w, l->span, 0, l->span_cap, WIRE_CH_RECORDS))
				break;
			memset(&e->pred, 0, sizeof(e->pred));	/* predictions restart per frame */
			l->span_open = true;
			l->span_records = 0;
		}
		bool desc = is_descriptor(((const struct bp_record_header *)(in + done))->type);
		size_t limit = l->span_records ? l->frame_target : WIRE_PAYLOAD_MAX;
		if (l->span_records && l->span_descs && !desc)
			limit = 0;		/* the descriptors' frame ends here */
		if (put_record(e, &l->span_w, in + done, size, limit)) {
			l->span_records++;
			l->span_descs = desc;
			done += size;
			continue;
		}
		if (outcap - at < l->span_cap)
			break;			/* call again with the rest */
		if (l->span_records) {
			at += wire_framer_finish(l, out + at, outcap - at);
			continue;		/* the record opens the next frame */
		}
		l->span_open = false;		/* too large for span: a frame of its own */
		at += encode_closed(e, l, in + done, size, &used, out + at, outcap - at);
		if (!used)
			break;
		done += used;
	}
	*consumed = done;
	return at;
}

size_t wire_encode_records(struct wire_enc *e, const void *records, size_t len,
			   size_t *consumed, uint8_t *out, size_t outcap)
{
	struct wire_framer *l = wire_encoder_framer(e);
	const uint8_t *in = records;
	size_t done, at;

	if (l->hold_repeats && (l->flags & WIRE_F_REPEAT)) {
		*consumed = held(in, len);
		return 0;
	}
	if (l->span && !(l->flags & WIRE_F_REPEAT))
		at = encode_spanning(e, l, in, len, &done, out, outcap);
	else
		at = encode_closed(e, l, in, len, &done, out, outcap);
	if (l->keep && !(l->flags & WIRE_F_REPEAT))
		wire_descs_keep(l->keep, in, done);
	*consumed = done;
	return at;
}

/* Records into frames closed within the call (the default). */
static size_t encode_closed(struct wire_enc *e, struct wire_framer *l, const uint8_t *in,
			    size_t len, size_t *consumed, uint8_t *out, size_t outcap)
{
	size_t done = 0, at = 0;

	while (done < len) {
		struct wire_writer w;
		size_t fdone = done;
		uint32_t size, n = 0;

		if (!record_size(in + done, len - done)) {
			e->stats.bad_input++;
			break;
		}
		if (!wire_frame_open(l, &w, out, at, outcap, WIRE_CH_RECORDS))
			break;
		memset(&e->pred, 0, sizeof(e->pred));	/* predictions restart per frame */
		while (fdone < len && (size = record_size(in + fdone, len - fdone))) {
			/* A record larger than the target gets a frame of its own. */
			size_t limit = n ? l->frame_target : WIRE_PAYLOAD_MAX;
			if (!put_record(e, &w, in + fdone, size, limit))
				break;
			fdone += size;
			n++;
		}
		if (!n)
			break;		/* not even one record fits in out */
		at = wire_frame_close(l, &w, WIRE_CH_RECORDS);
		done = fdone;
	}
	l->bytes += at;
	*consumed = done;
	return at;
}
