/*
 * wire/decode.c — streaming decoder for the wire format (uapi/wire.h,
 * wire/decode.h). The frame check, CRC and varints are wire/frame.c's,
 * the prediction rule wire/record.c's, built for the host: one
 * implementation of each for both ends.
 *
 * A frame is delivered all or nothing: its payload is expanded completely
 * into the arena first, and only a payload that expands without error is
 * handed to the callbacks.
 */
#include <stdlib.h>
#include <string.h>

#include "wire/record.h"
#include "wire/decode.h"
#include "kernel/lib/unaligned.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the wire format is little-endian; this decoder reads it in place"
#endif

/* The reorder window (accept(), below). */
#define REORDER_WINDOW	256u		/* frames that may pass a held one */
#define REORDER_FRAMES	256u		/* frames held at most */
#define REORDER_BYTES	(4u << 20)	/* encoded bytes held at most */

/* The longest run of bytes between delimiters that can still be a frame. */
#define CHUNK_MAX	WIRE_COBS_MAX(WIRE_FRAME_MAX)

struct stream_table {
	struct wire_dec_stream *s;	/* indexed by cpu */
	uint32_t n;
};

/* A frame that came ahead of its turn, held (encoded) until its turn. */
struct held {
	uint8_t *bytes;
	size_t n;
	uint64_t off, arrival;
	uint32_t seq;
	uint16_t cpu;
	uint8_t channel;
};

enum phase {
	PHASE_TEXT,			/* plain text: before the stream, after a halt */
	PHASE_STREAM,			/* frames */
};

/* A compact SAMPLE's values and where its record is in the arena. */
struct dec_sample {
	size_t at;
	struct wire_sample v;
};

struct wire_dec {
	struct wire_dec_ops ops;
	void *ctx;
	uint64_t off;			/* stream offset of the next byte fed */
	uint8_t *chunk;			/* bytes since the last delimiter */
	size_t chunk_len;
	uint64_t chunk_off;
	bool spilling;			/* chunk too long: passing bytes on as noise */
	uint8_t *frame;			/* COBS-decoded frame */
	uint8_t *arena;			/* expanded records */
	size_t arena_cap;		/* grows up to WIRE_DEC_RECORDS_MAX */
	struct dec_sample *vals;	/* the compact SAMPLEs' values (ops.sample) */
	size_t vals_cap;
	struct stream_table streams[WIRE_NR_CHANNELS];
	struct wire_dec_stats st;
	enum phase phase;
	bool just_ended;		/* END(HALT) was the chunk the next delimiter ends */
	uint64_t open_frames;		/* frames delivered since the last END */
	uint64_t arrivals;		/* frames that passed the frame check */
	struct held held[REORDER_FRAMES];
	size_t nheld, held_bytes;
};

struct wire_dec *wire_dec_new(const struct wire_dec_ops *ops, void *ctx)
{
	struct wire_dec *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	if (ops)
		d->ops = *ops;
	d->ctx = ctx;
	d->chunk = malloc(CHUNK_MAX);
	d->frame = malloc(WIRE_FRAME_MAX);
	/* Enough for a 1 KiB frame of the smallest compact samples; a frame
	 * that needs more grows it (chunk()). */
	d->arena_cap = 2 * BP_RECORD_MAX;
	d->arena = malloc(d->arena_cap);
	if (!d->chunk || !d->frame || !d->arena) {
		wire_dec_free(d);
		return NULL;
	}
	return d;
}

static void drop_held(struct wire_dec *d)
{
	for (size_t i = 0; i < d->nheld; i++)
		free(d->held[i].bytes);
	d->nheld = d->held_bytes = 0;
}

void wire_dec_free(struct wire_dec *d)
{
	if (!d)
		return;
	drop_held(d);
	for (int c = 0; c < WIRE_NR_CHANNELS; c++)
		free(d->streams[c].s);
	free(d->chunk);
	free(d->frame);
	free(d->arena);
	free(d->vals);
	free(d);
}

void wire_dec_reset(struct wire_dec *d)
{
	for (int c = 0; c < WIRE_NR_CHANNELS; c++) {
		free(d->streams[c].s);
		d->streams[c].s = NULL;
		d->streams[c].n = 0;
	}
	d->off = d->chunk_off = 0;
	d->chunk_len = 0;
	d->spilling = false;
	memset(&d->st, 0, sizeof(d->st));
	drop_held(d);
	d->phase = PHASE_TEXT;
	d->just_ended = false;
	d->open_frames = d->arrivals = 0;
}

const struct wire_dec_stats *wire_dec_stats(const struct wire_dec *d)
{
	return &d->st;
}

const struct wire_dec_stream *wire_dec_stream(const struct wire_dec *d, unsigned channel,
					      unsigned cpu)
{
	if (channel >= WIRE_NR_CHANNELS || cpu >= d->streams[channel].n ||
	    !d->streams[channel].s[cpu].seen)
		return NULL;
	return &d->streams[channel].s[cpu];
}

/* The stream (channel, cpu), grown on demand; NULL if out of memory. */
static struct wire_dec_stream *stream_get(struct wire_dec *d, unsigned channel, unsigned cpu)
{
	struct stream_table *t = &d->streams[channel];

	if (cpu >= t->n) {
		uint32_t n = cpu + 1 > 2 * t->n ? cpu + 1 : 2 * t->n;
		struct wire_dec_stream *s = realloc(t->s, n * sizeof(*s));
		if (!s)
			return NULL;
		memset(s + t->n, 0, (n - t->n) * sizeof(*s));
		t->s = s;
		t->n = n;
	}
	return &t->s[cpu];
}

/* ---- records ---------------------------------------------------------- */

static inline void st64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline void st32x2(uint8_t *p, uint32_t a, uint32_t b)
{
	memcpy(p, &a, 4);
	memcpy(p + 4, &b, 4);
}

struct rd {
	const uint8_t *p, *end;
	bool bad;
};

static inline uint64_t uv(struct rd *r)
{
	uint64_t v = 0;
	size_t k;

	/* One-byte varints are most of a compact stream. */
	if (r->p < r->end && !(*r->p & 0x80))
		return *r->p++;
	k = wire_get_uvarint(r->p, r->end, &v);
	if (!k)
		r->bad = true;
	r->p += k;
	return v;
}

static inline uint64_t sv(struct rd *r)
{
	return wire_unzigzag(uv(r));
}

/*
 * Expand one compact SAMPLE item (tag already read) into o, which has
 * room for BP_RECORD_MAX bytes, and its values into *out if out is not
 * NULL (the fields sample_type lacks 0; *out is written to even if the
 * item turns out malformed). Returns the record size, or 0 if the item is
 * malformed. The fields are written as they are decoded; the variable
 * parts (READ, CALLCHAIN) are bounded before they are written.
 *
 * shape, if not 0, is the item's sample_type, known to the caller: the
 * predicted one, and the tag has no WIRE_S_TYPE. Given as a constant, it
 * lets the compiler drop every test of a field the shape lacks.
 */
static inline __attribute__((always_inline)) uint32_t
get_sample(struct rd *r, uint8_t tag, const uint64_t *ipz, struct wire_pred *p, uint8_t *o,
	   struct wire_sample *out, uint64_t shape)
{
	struct wire_sample own, *s = out ? out : &own;
	uint8_t *q = o + sizeof(struct bp_record_header);
	uint64_t st, misc;

	if (tag & WIRE_S_RESERVED)
		return 0;
	if (shape)
		st = shape;
	else if (tag & WIRE_S_TYPE)
		st = uv(r);
	else if (p->have_type)
		st = p->sample_type;
	else
		return 0;
	misc = tag & WIRE_S_MISC ? uv(r) : p->misc;
	if (r->bad || (st & ~BP_SAMPLE_SUPPORTED) || misc > 0xffff)
		return 0;
	s->sample_type = st;
	s->misc = (uint16_t)misc;
	s->identifier = p->identifier;
	s->pid = p->pid, s->tid = p->tid;
	s->id = p->id;
	s->cpu = p->cpu, s->res = p->res;
	s->period = p->period;
	s->ip = s->time = s->addr = 0;
	if (tag & WIRE_S_STICKY) {
		uint8_t sk;
		if (r->p >= r->end)
			return 0;
		sk = *r->p++;
		if ((sk & WIRE_SK_RESERVED) ||
		    ((sk & WIRE_SK_IDENTIFIER) && !(st & BP_SAMPLE_IDENTIFIER)) ||
		    ((sk & (WIRE_SK_PID | WIRE_SK_TID)) && !(st & BP_SAMPLE_TID)) ||
		    ((sk & WIRE_SK_ID) && !(st & BP_SAMPLE_ID)) ||
		    ((sk & (WIRE_SK_CPU | WIRE_SK_RES)) && !(st & BP_SAMPLE_CPU)))
			return 0;
		if (sk & WIRE_SK_IDENTIFIER)
			s->identifier += sv(r);
		if (sk & WIRE_SK_PID)
			s->pid += (uint32_t)sv(r);
		if (sk & WIRE_SK_TID)
			s->tid += (uint32_t)sv(r);
		if (sk & WIRE_SK_ID)
			s->id += sv(r);
		if (sk & WIRE_SK_CPU)
			s->cpu += (uint32_t)sv(r);
		if (sk & WIRE_SK_RES)
			s->res += (uint32_t)sv(r);
	}
	if (tag & WIRE_S_PERIOD) {
		if (!(st & BP_SAMPLE_PERIOD))
			return 0;
		s->period += sv(r);
	}

	if (st & BP_SAMPLE_IDENTIFIER)
		st64(q, s->identifier), q += 8;
	if (st & BP_SAMPLE_IP) {
		s->ip = p->ip + (ipz ? wire_unzigzag(*ipz) : sv(r));
		st64(q, s->ip), q += 8;
	}
	if (st & BP_SAMPLE_TID)
		st32x2(q, s->pid, s->tid), q += 8;
	if (st & BP_SAMPLE_TIME) {
		s->time = p->time + p->dtime + sv(r);
		st64(q, s->time), q += 8;
	}
	if (st & BP_SAMPLE_ADDR) {
		s->addr = p->addr + sv(r);
		st64(q, s->addr), q += 8;
	}
	if (st & BP_SAMPLE_ID)
		st64(q, s->id), q += 8;
	if (st & BP_SAMPLE_CPU)
		st32x2(q, s->cpu, s->res), q += 8;
	if (st & BP_SAMPLE_PERIOD)
		st64(q, s->period), q += 8;
	s->nr_read = s->nr_ips = 0;
	s->time_enabled = s->time_running = 0;
	s->read = s->ips = NULL;
	if (st & BP_SAMPLE_READ) {
		uint64_t nr = uv(r);
		size_t room = BP_RECORD_MAX - (size_t)(q - o) - sizeof(struct bp_read_group);
		/* Bound it first: everything written below stays inside. */
		if (r->bad || nr > room / sizeof(struct bp_group_entry))
			return 0;
		s->nr_read = nr;
		s->time_enabled = p->time_enabled + sv(r);
		s->time_running = p->time_running + sv(r);
		st64(q, nr);
		st64(q + 8, s->time_enabled);
		st64(q + 16, s->time_running);
		q += sizeof(struct bp_read_group);
		s->read = q;
		for (uint64_t i = 0; i < nr; i++) {
			bool pr = i < WIRE_PRED_READ;
			st64(q, (pr ? p->read_config[i] : 0) + sv(r));
			st64(q + 8, (pr ? p->read_count[i] : 0) + sv(r));
			q += sizeof(struct bp_group_entry);
			if (r->bad)
				return 0;
		}
	}
	if (st & BP_SAMPLE_CALLCHAIN) {
		uint64_t nr = uv(r), prev = 0;
		size_t room = BP_RECORD_MAX - (size_t)(q - o) - 8;
		if (r->bad || (q - o) + 8 > BP_RECORD_MAX || nr > room / 8)
			return 0;
		s->nr_ips = nr;
		st64(q, nr), q += 8;
		s->ips = q;
		for (uint64_t i = 0; i < nr; i++) {
			uint64_t pred = i == 0 ? (st & BP_SAMPLE_IP ? s->ip : p->chain[0]) :
					i < WIRE_PRED_CHAIN ? p->chain[i] : prev;
			prev = pred + sv(r);
			st64(q, prev), q += 8;
			if (r->bad)
				return 0;
		}
	}
	if (r->bad)
		return 0;
	{
		struct bp_record_header h = { BP_RECORD_SAMPLE, s->misc, (uint16_t)(q - o) };
		memcpy(o, &h, sizeof(h));
	}
	/* The prediction rule is the encoder's own (wire/record.c). */
	if (tag & (WIRE_S_TYPE | WIRE_S_MISC | WIRE_S_STICKY | WIRE_S_PERIOD))
		wire_pred_commit_st(p, s, st);
	else
		wire_pred_commit_moved(p, s, st);
	return (uint32_t)(q - o);
}

/*
 * A WIRE_ITEM_RAW_SPARSE item's record into o (BP_RECORD_MAX bytes of
 * room): its size, or 0 if malformed (the size in its header must be the
 * item's).
 */
static uint32_t get_sparse(struct rd *r, uint8_t *o)
{
	uint64_t words;
	size_t n = wire_get_uvarint(r->p, r->end, &words);
	const uint8_t *mask;
	uint16_t sz;

	if (!n || !words || words > BP_RECORD_MAX / 8 || words > (size_t)(r->end - r->p - n))
		return 0;
	mask = r->p + n;
	r->p = mask + words;
	for (uint32_t i = 0; i < words * 8; i++) {
		if (!(mask[i / 8] & (1u << (i % 8)))) {
			o[i] = 0;
			continue;
		}
		if (r->p >= r->end || !*r->p)
			return 0;
		o[i] = *r->p++;
	}
	memcpy(&sz, o + 6, 2);
	return sz == words * 8 ? sz : 0;
}

/* The kernel's sample_type (profile/settings.c), with or without
 * CALLCHAIN: what nearly every item has, expanded by code made for it. */
#define ST_KERNEL	(BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID | \
			 BP_SAMPLE_CPU | BP_SAMPLE_PERIOD)

/*
 * wire_dec_records, and if vals is not NULL (room for len entries: an
 * item takes a byte at least) the compact SAMPLEs' values there, their
 * count in *nvals.
 */
static long expand(const uint8_t *payload, size_t len, uint8_t *out, size_t cap,
		   uint64_t *compact, struct dec_sample *vals, size_t *nvals)
{
	struct rd r = { payload, payload + len, false };
	struct wire_pred pred;
	size_t used = 0;
	uint64_t nc = 0;

	memset(&pred, 0, sizeof(pred));
	while (r.p < r.end) {
		uint8_t tag = *r.p++;
		uint32_t size;

		if (cap - used < BP_RECORD_MAX)
			return WIRE_E_SPACE;
		if (tag == WIRE_ITEM_RAW) {
			uint16_t sz;
			if ((size_t)(r.end - r.p) < sizeof(struct bp_record_header))
				return WIRE_E_PAYLOAD;
			memcpy(&sz, r.p + 6, 2);
			size = sz;
			if (size < sizeof(struct bp_record_header) || size % BP_RECORD_ALIGN ||
			    size > (size_t)(r.end - r.p))
				return WIRE_E_PAYLOAD;
			memcpy(out + used, r.p, size);
			r.p += size;
		} else if (tag == WIRE_ITEM_RAW_SPARSE) {
			size = get_sparse(&r, out + used);
			if (!size)
				return WIRE_E_PAYLOAD;
		} else if ((tag & WIRE_ITEM_SAMPLE) || (tag >= WIRE_ITEM_SAMPLE_IP &&
			   tag < WIRE_ITEM_SAMPLE_IP + WIRE_SAMPLE_IP_CODES)) {
			/* A SAMPLE item, or one whose tag holds the IP: only
			 * after a SAMPLE item that had IP. */
			uint64_t ipz = tag - WIRE_ITEM_SAMPLE_IP;
			bool in_tag = !(tag & WIRE_ITEM_SAMPLE);
			uint8_t t = in_tag ? WIRE_ITEM_SAMPLE : tag;
			const uint64_t *z = in_tag ? &ipz : NULL;
			struct wire_sample *v = vals ? &vals[nc].v : NULL;
			if (in_tag && (!pred.have_type || !(pred.sample_type & BP_SAMPLE_IP)))
				return WIRE_E_PAYLOAD;
			if (pred.have_type && !(t & WIRE_S_TYPE) && pred.sample_type == ST_KERNEL)
				size = get_sample(&r, t, z, &pred, out + used, v, ST_KERNEL);
			else if (pred.have_type && !(t & WIRE_S_TYPE) &&
				 pred.sample_type == (ST_KERNEL | BP_SAMPLE_CALLCHAIN))
				size = get_sample(&r, t, z, &pred, out + used, v,
						  ST_KERNEL | BP_SAMPLE_CALLCHAIN);
			else
				size = get_sample(&r, t, z, &pred, out + used, v, 0);
			if (!size)
				return WIRE_E_PAYLOAD;
			if (vals)
				vals[nc].at = used;
			nc++;
		} else {
			return WIRE_E_PAYLOAD;
		}
		used += size;
	}
	if (compact)
		*compact += nc;
	if (nvals)
		*nvals = vals ? nc : 0;
	return (long)used;
}

long wire_dec_records(const uint8_t *payload, size_t len, uint8_t *out, size_t cap,
		      uint64_t *compact)
{
	return expand(payload, len, out, cap, compact, NULL, NULL);
}

/* ---- frames ------------------------------------------------------------ */

/*
 * Order. Frames of one (channel, cpu) are delivered in sequence order: a
 * frame that arrives ahead of its turn (a gap before it) is held, and
 * delivered once the frames before it came; only when it has waited
 * through REORDER_WINDOW later frames (or the held frames exceed their
 * budget, or the input ends, or END says everything was sent) is the gap
 * declared lost. So a frame moved ahead by d < REORDER_WINDOW frames
 * costs nothing, and is never counted both lost and duplicated.
 */

static bool is_text(const struct wire_dec *d)
{
	return d->phase == PHASE_TEXT;
}

static void noise(struct wire_dec *d, uint64_t off, const uint8_t *p, size_t n)
{
	d->st.garbage_bytes += n;
	if (d->ops.unframed && n)
		d->ops.unframed(d->ctx, off, p, n);
}

/* Plain text outside the stream (uapi/wire.h §1, §5): not frames, not damage. */
static void text(struct wire_dec *d, uint64_t off, const uint8_t *p, size_t n)
{
	d->st.text_bytes += n;
	if (!n)
		return;
	if (d->ops.text)
		d->ops.text(d->ctx, off, p, n);
	else if (d->ops.unframed)
		d->ops.unframed(d->ctx, off, p, n);
}

/* nvals: the compact SAMPLEs of the arena's records whose values d->vals holds. */
static void deliver(struct wire_dec *d, struct wire_dec_frame *f, long nrec, size_t nvals)
{
	size_t k = 0;

	d->st.frames_ok++;
	if (d->ops.frame)
		d->ops.frame(d->ctx, f);
	if (f->channel == WIRE_CH_RECORDS) {
		for (long at = 0; at < nrec;) {
			const struct bp_record_header *h = (const void *)(d->arena + at);
			d->st.records++;
			if (h->type == BP_RECORD_SAMPLE)
				d->st.samples++;
			if (k < nvals && d->vals[k].at == (size_t)at)
				d->ops.sample(d->ctx, f, h, &d->vals[k++].v);
			else if (d->ops.record)
				d->ops.record(d->ctx, f, h);
			at += h->size;
		}
	} else if (f->channel == WIRE_CH_AUX) {
		if (d->ops.data)
			d->ops.data(d->ctx, f, f->payload + sizeof(struct wire_aux_header),
				    f->len - sizeof(struct wire_aux_header));
	} else if (d->ops.data) {
		d->ops.data(d->ctx, f, f->payload, f->len);
	}
}

/*
 * Room for the values of a payload of len bytes' compact SAMPLEs, if
 * ops.sample wants them; NULL if not (or out of memory: the samples then
 * go to ops.record, as records).
 */
static struct dec_sample *want_vals(struct wire_dec *d, size_t len)
{
	struct dec_sample *v;

	if (!d->ops.sample)
		return NULL;
	if (len <= d->vals_cap)
		return d->vals;
	v = realloc(d->vals, len * sizeof(*v));
	if (!v)
		return NULL;
	d->vals = v;
	d->vals_cap = len;
	return v;
}

/* An END message (uapi/wire.h §5) from the kernel, well formed; else NULL. */
static const struct wire_end *end_msg(const struct wire_frame *wf)
{
	struct wire_ctl_msg m;
	const struct wire_end *e;

	if (wf->channel != WIRE_CH_CONTROL || wf->cpu == WIRE_CPU_HOST ||
	    wf->len < sizeof(m) + sizeof(*e))
		return NULL;
	memcpy(&m, wf->payload, sizeof(m));
	if (m.type != WIRE_CTL_END || m.len != wf->len - sizeof(m))
		return NULL;
	e = (const void *)(wf->payload + sizeof(m));
	if (sizeof(*e) + (size_t)e->nr * sizeof(struct wire_end_stream) != m.len)
		return NULL;
	return e;
}

static void release_stream(struct wire_dec *d, unsigned ch, unsigned cpu, bool all);
static void release_all(struct wire_dec *d);

/*
 * END: everything the kernel sent is accounted for. The frames each
 * (channel, cpu) sent and we never got are lost, those at the stream's
 * end included, which no later sequence number would have shown.
 */
static void on_end(struct wire_dec *d, const struct wire_frame *wf, const struct wire_end *e)
{
	const uint8_t *p = (const uint8_t *)(e + 1);

	d->st.ends++;
	d->st.end_flags = e->flags;
	d->st.end_status = e->status;
	for (uint16_t i = 0; i < e->nr; i++, p += sizeof(struct wire_end_stream)) {
		struct wire_end_stream es;
		struct wire_dec_stream *s;
		uint32_t want, missing;

		memcpy(&es, p, sizeof(es));
		if (es.channel >= WIRE_NR_CHANNELS || !(s = stream_get(d, es.channel, es.cpu)))
			continue;
		/* The END frame itself is not in its own stream's count. */
		want = es.frames + (es.channel == wf->channel && es.cpu == wf->cpu);
		missing = want - (s->seen ? s->next_seq : 0);
		if (!missing || missing >= 0x80000000u)
			continue;
		s->seen = true;
		s->next_seq = want;
		s->lost += missing;
		d->st.lost_frames += missing;
		d->st.lost_by_channel[es.channel] += missing;
		d->st.tail_lost += missing;
	}
	d->open_frames = 0;
	if (e->flags & WIRE_END_HALT) {
		d->phase = PHASE_TEXT;	/* the machine stopped: plain text again */
		d->just_ended = true;
	}
}

/*
 * Deliver one frame that passed the frame check, lost frames of its
 * stream before it. src/n are its encoded bytes (for the unframed
 * callback if its payload is malformed), which stay valid here.
 */
static void admit(struct wire_dec *d, const uint8_t *src, size_t n, uint64_t off,
		  struct wire_frame *wf, uint32_t lost)
{
	struct wire_dec_stream *s = stream_get(d, wf->channel, wf->cpu);
	const struct wire_end *end = end_msg(wf);
	struct wire_dec_frame f;
	long nrec = 0;
	size_t nvals = 0;

	if (!s)
		return;
	if (end) {
		/* Everything held was sent before END: in first, gaps lost. */
		release_all(d);
		if (wire_frame_unpack(src, n, d->frame, WIRE_FRAME_MAX, wf))
			return;		/* cannot happen: it passed before */
		end = end_msg(wf);
		lost = wf->seq - (s->seen ? s->next_seq : 0);
		if (lost >= 0x80000000u)
			lost = 0;
	}
	if (wf->channel == WIRE_CH_RECORDS) {
		uint64_t compact = 0;
		struct dec_sample *vals = want_vals(d, wf->len);
		while ((nrec = expand(wf->payload, wf->len, d->arena, d->arena_cap, &compact,
				      vals, &nvals)) == WIRE_E_SPACE &&
		       d->arena_cap < WIRE_DEC_RECORDS_MAX) {
			size_t cap = 4 * d->arena_cap < WIRE_DEC_RECORDS_MAX ?
				     4 * d->arena_cap : WIRE_DEC_RECORDS_MAX;
			uint8_t *a = realloc(d->arena, cap);
			if (!a)
				break;
			d->arena = a;
			d->arena_cap = cap;
		}
		d->st.compact_samples += compact;
	} else if (wf->channel == WIRE_CH_AUX && wf->len < sizeof(struct wire_aux_header))
		nrec = WIRE_E_PAYLOAD;

	/* The header passed the CRC: the frame arrived, whatever its payload. */
	s->seen = true;
	s->next_seq = wf->seq + 1;
	s->lost += lost;
	d->st.lost_frames += lost;
	d->st.lost_by_channel[wf->channel] += lost;
	d->open_frames++;
	if (nrec < 0) {
		s->bad_payload++;
		d->st.bad_payload++;
		noise(d, off, src, n);
		return;
	}
	s->frames++;

	f.channel = wf->channel;
	f.flags = wf->flags;
	f.cpu = wf->cpu;
	f.seq = wf->seq;
	f.lost_before = lost;
	f.offset = off;
	f.aux_pos = wf->channel == WIRE_CH_AUX ? ld64(wf->payload) : 0;
	f.payload = wf->payload;
	f.len = wf->len;
	if (end)
		on_end(d, wf, end);
	deliver(d, &f, nrec, nvals);
}

/* The held frame of (ch, cpu) nearest its stream's next seq; -1 if none. */
static long held_next(const struct wire_dec *d, unsigned ch, unsigned cpu, uint32_t next)
{
	long best = -1;

	for (size_t i = 0; i < d->nheld; i++) {
		const struct held *h = &d->held[i];
		if (h->channel != ch || h->cpu != cpu)
			continue;
		if (best < 0 || h->seq - next < d->held[best].seq - next)
			best = (long)i;
	}
	return best;
}

static void unhold(struct wire_dec *d, size_t i)
{
	d->held_bytes -= d->held[i].n;
	free(d->held[i].bytes);
	d->held[i] = d->held[--d->nheld];
}

/* Deliver one held frame (index i), its gap counted lost; the entry goes. */
static void release_one(struct wire_dec *d, size_t i)
{
	struct held h = d->held[i];
	struct wire_dec_stream *s = stream_get(d, h.channel, h.cpu);
	struct wire_frame wf;

	d->held[i] = d->held[--d->nheld];
	d->held_bytes -= h.n;
	if (s && !wire_frame_unpack(h.bytes, h.n, d->frame, WIRE_FRAME_MAX, &wf))
		admit(d, h.bytes, h.n, h.off, &wf, h.seq - (s->seen ? s->next_seq : 0));
	free(h.bytes);
}

/*
 * Deliver the held frames of (ch, cpu) that are now in order; with all,
 * every held frame of it, in seq order, gaps counted lost.
 */
static void release_stream(struct wire_dec *d, unsigned ch, unsigned cpu, bool all)
{
	for (;;) {
		struct wire_dec_stream *s = stream_get(d, ch, cpu);
		uint32_t next = s && s->seen ? s->next_seq : 0;
		long i = held_next(d, ch, cpu, next);
		if (!s || i < 0)
			return;
		if (d->held[i].seq - next >= 0x80000000u) {
			/* Behind: the same frame came twice. */
			s->duplicates++;
			d->st.duplicates++;
			d->st.garbage_bytes += d->held[i].n;
			unhold(d, (size_t)i);
			continue;
		}
		if (d->held[i].seq != next && !all)
			return;
		release_one(d, (size_t)i);
	}
}

static void release_all(struct wire_dec *d)
{
	while (d->nheld) {
		/* The stream of the oldest held frame first: arrival order. */
		size_t o = 0;
		for (size_t i = 1; i < d->nheld; i++)
			if (d->held[i].arrival < d->held[o].arrival)
				o = i;
		release_stream(d, d->held[o].channel, d->held[o].cpu, true);
	}
}

/* Hold a frame that came ahead of its turn; false if it cannot be held. */
static bool hold(struct wire_dec *d, const struct wire_frame *wf, const uint8_t *src, size_t n,
		 uint64_t off)
{
	struct held *h;

	if (d->nheld == REORDER_FRAMES)
		return false;
	h = &d->held[d->nheld];
	h->bytes = malloc(n);
	if (!h->bytes)
		return false;
	memcpy(h->bytes, src, n);
	h->n = n;
	h->off = off;
	h->arrival = d->arrivals;
	h->channel = wf->channel;
	h->cpu = wf->cpu;
	h->seq = wf->seq;
	d->held_bytes += n;
	d->nheld++;
	d->st.held++;
	return true;
}

/* Held frames that waited long enough, or over the budget: their gaps are lost. */
static void expire(struct wire_dec *d)
{
	while (d->nheld) {
		size_t o = 0;
		for (size_t i = 1; i < d->nheld; i++)
			if (d->held[i].arrival < d->held[o].arrival)
				o = i;
		if (d->arrivals - d->held[o].arrival <= REORDER_WINDOW &&
		    d->nheld < REORDER_FRAMES && d->held_bytes <= REORDER_BYTES)
			return;
		/* Its stream up to and including it; what follows in order too. */
		{
			unsigned ch = d->held[o].channel, cpu = d->held[o].cpu;
			struct wire_dec_stream *s = stream_get(d, ch, cpu);
			uint32_t next = s && s->seen ? s->next_seq : 0, seq = d->held[o].seq;
			while (d->nheld) {
				long i = held_next(d, ch, cpu, next);
				if (i < 0 || d->held[i].seq - next > seq - next)
					break;
				release_one(d, (size_t)i);
				next = s->next_seq;
			}
			release_stream(d, ch, cpu, false);
		}
	}
}

/* The frame's CRC, which follows its payload in the unpacked frame. */
static uint32_t frame_crc(const struct wire_frame *wf)
{
	uint32_t crc;

	memcpy(&crc, wf->payload + wf->len, sizeof(crc));
	return crc;
}

/*
 * Whether a START frame (seq 0) on a stream already seen begins a new
 * numbering rather than repeating the first frame of this one. A frame is
 * (boot, channel, cpu, seq): within one boot the kernel numbers a stream
 * from 0 again only after an END (each control request is closed by one).
 * So a START with no END since the stream's own is the same frame again,
 * unless its bytes differ from it (then the END between them was lost).
 */
static bool renumbered(const struct wire_dec *d, const struct wire_dec_stream *s,
		       const struct wire_frame *wf)
{
	return d->st.ends != s->ends_at_start || frame_crc(wf) != s->start_crc;
}

/* A frame that passed the frame check: deliver, hold, or drop it. */
static void accept(struct wire_dec *d, const uint8_t *src, size_t n, uint64_t off,
		   struct wire_frame *wf)
{
	struct wire_dec_stream *s = stream_get(d, wf->channel, wf->cpu);
	uint32_t next, ahead;

	if (!s) {
		noise(d, off, src, n);
		return;
	}
	/* One boot per stream (uapi/wire.h §2): the first frame's. The host's
	 * frames and version 1 frames carry none. */
	if (wf->boot && d->st.boot && wf->boot != d->st.boot) {
		d->st.foreign_frames++;
		d->st.foreign_boot = wf->boot;
		d->st.garbage_bytes += n;
		return;
	}
	if (wf->boot)
		d->st.boot = wf->boot;
	d->arrivals++;
	if (s->seen && (wf->flags & WIRE_F_START) && wf->seq == 0 && s->next_seq != 0 &&
	    renumbered(d, s, wf)) {
		/* A new numbering on this stream (a new run or request): what
		 * was held of the old one goes first. */
		release_stream(d, wf->channel, wf->cpu, true);
		d->st.restarts++;
		s->next_seq = 0;
	}
	if ((wf->flags & WIRE_F_START) && wf->seq == 0) {
		s->ends_at_start = d->st.ends;
		s->start_crc = frame_crc(wf);
	}
	next = s->seen ? s->next_seq : 0;
	ahead = wf->seq - next;
	if (ahead >= 0x80000000u) {		/* behind: seen already */
		s->duplicates++;
		d->st.duplicates++;
		d->st.garbage_bytes += n;
		return;
	}
	/*
	 * In order, or the first frame of a stream that starts here (a new
	 * numbering, or a recording that joined mid-stream but has nothing
	 * held of it: its frames before are not coming).
	 */
	if (!ahead || (!s->seen && (wf->flags & WIRE_F_START))) {
		admit(d, src, n, off, wf, ahead);
		release_stream(d, wf->channel, wf->cpu, false);
		expire(d);
		return;
	}
	if (held_next(d, wf->channel, wf->cpu, next) >= 0) {
		for (size_t i = 0; i < d->nheld; i++)
			if (d->held[i].channel == wf->channel && d->held[i].cpu == wf->cpu &&
			    d->held[i].seq == wf->seq) {
				s->duplicates++;
				d->st.duplicates++;
				d->st.garbage_bytes += n;
				return;
			}
	}
	if (end_msg(wf) || !hold(d, wf, src, n, off)) {
		/* END goes in at once (it releases everything held); so does a
		 * frame that cannot be held: the gap before it is lost. */
		admit(d, src, n, off, wf, ahead);
		release_stream(d, wf->channel, wf->cpu, false);
	}
	expire(d);
}

/* One run of bytes between delimiters, starting at stream offset off. */
static void chunk(struct wire_dec *d, const uint8_t *src, size_t n, uint64_t off, bool cut)
{
	struct wire_frame wf;
	int rc = wire_frame_unpack(src, n, d->frame, WIRE_FRAME_MAX, &wf);

	if (rc == WIRE_OK) {
		d->phase = PHASE_STREAM;
		accept(d, src, n, off, &wf);
		return;
	}
	if (is_text(d)) {
		text(d, off, src, n);
		return;
	}
	if (cut) {
		/* The input ended inside it: not damaged, never finished. */
		d->st.cut_bytes += n;
		noise(d, off, src, n);
		return;
	}
	switch (rc) {
	case WIRE_E_SHORT:
		d->st.short_frames++;
		break;
	case WIRE_E_CRC:
		d->st.crc_errors++;
		break;
	case WIRE_E_VERSION:
		d->st.bad_version++;
		break;
	case WIRE_E_CHANNEL:
		d->st.bad_channel++;
		break;
	default:
		d->st.cobs_errors++;
		break;
	}
	noise(d, off, src, n);
}

/* Bytes that are no frame because there are too many of them. */
static void spill(struct wire_dec *d, uint64_t off, const uint8_t *p, size_t n)
{
	if (is_text(d))
		text(d, off, p, n);
	else
		noise(d, off, p, n);
}

/* Bytes of a chunk that may continue in the next feed. */
static void keep(struct wire_dec *d, const uint8_t *p, size_t n)
{
	if (d->spilling) {
		spill(d, d->off, p, n);
		return;
	}
	if (d->chunk_len + n > CHUNK_MAX) {
		/* Longer than any frame: not one, up to the next delimiter. */
		spill(d, d->chunk_off, d->chunk, d->chunk_len);
		spill(d, d->off, p, n);
		d->chunk_len = 0;
		d->spilling = true;
		return;
	}
	memcpy(d->chunk + d->chunk_len, p, n);
	d->chunk_len += n;
}

/* A delimiter (or, with cut, the end of the input) ends the chunk in progress. */
static void chunk_end(struct wire_dec *d, bool cut)
{
	if (d->spilling) {
		if (!is_text(d) && !cut)
			d->st.cobs_errors++;
		d->spilling = false;
	} else if (d->chunk_len) {
		chunk(d, d->chunk, d->chunk_len, d->chunk_off, cut);
	}
	d->chunk_len = 0;
}

/* The delimiter that ends a chunk: plain text ends at the first one. */
static void delimiter(struct wire_dec *d)
{
	if (d->just_ended)
		d->just_ended = false;	/* END's own delimiter: the text follows */
	else if (is_text(d))
		d->phase = PHASE_STREAM;
}

void wire_dec_feed(struct wire_dec *d, const void *buf, size_t len)
{
	const uint8_t *p = buf, *end = p + len;

	d->st.bytes += len;
	while (p < end) {
		const uint8_t *z = memchr(p, WIRE_DELIM, (size_t)(end - p));
		size_t n = (size_t)((z ? z : end) - p);

		if (!d->chunk_len && !d->spilling)
			d->chunk_off = d->off;
		if (z && !d->chunk_len && !d->spilling) {
			/* The whole chunk is in buf: no copy. */
			if (n)
				chunk(d, p, n, d->off, false);
		} else {
			keep(d, p, n);
			if (z)
				chunk_end(d, false);
		}
		d->off += n;
		p += n;
		if (z) {
			delimiter(d);
			d->off++;
			p++;
		}
	}
}

void wire_dec_finish(struct wire_dec *d)
{
	chunk_end(d, true);
	release_all(d);
}

bool wire_dec_complete(const struct wire_dec *d)
{
	return d->st.ends && !d->open_frames && !d->st.cut_bytes;
}
