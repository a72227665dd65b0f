/*
 * tools/wire_dec.c — streaming decoder for the wire format (uapi/wire.h,
 * tools/wire_dec.h). The frame check, CRC, varints and the prediction
 * rule are kernel/wire.c's, built for the host: one implementation of
 * each for both ends.
 *
 * A frame is delivered all or nothing: its payload is expanded completely
 * into the arena first, and only a payload that expands without error is
 * handed to the callbacks.
 */
#include <stdlib.h>
#include <string.h>

#include "kernel/wire.h"
#include "tools/wire_dec.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the wire format is little-endian; this decoder reads it in place"
#endif

/* The longest run of bytes between delimiters that can still be a frame. */
#define CHUNK_MAX	WIRE_COBS_MAX(WIRE_FRAME_MAX)

struct stream_table {
	struct wire_dec_stream *s;	/* indexed by cpu */
	uint32_t n;
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
	struct stream_table streams[WIRE_NR_CHANNELS];
	struct wire_dec_stats st;
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

void wire_dec_free(struct wire_dec *d)
{
	if (!d)
		return;
	for (int c = 0; c < WIRE_NR_CHANNELS; c++)
		free(d->streams[c].s);
	free(d->chunk);
	free(d->frame);
	free(d->arena);
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

static inline uint64_t ld64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

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
 * room for BP_RECORD_MAX bytes. Returns the record size, or 0 if the item
 * is malformed. The fields are written as they are decoded; the variable
 * parts (READ, CALLCHAIN) are bounded before they are written.
 */
static uint32_t get_sample(struct rd *r, uint8_t tag, struct wire_pred *p, uint8_t *o)
{
	struct wire_sample s;
	uint8_t *q = o + sizeof(struct bp_record_header);
	uint64_t st, misc;

	if (tag & WIRE_S_RESERVED)
		return 0;
	if (tag & WIRE_S_TYPE)
		st = uv(r);
	else if (p->have_type)
		st = p->sample_type;
	else
		return 0;
	misc = tag & WIRE_S_MISC ? uv(r) : p->misc;
	if (r->bad || (st & ~BP_SAMPLE_SUPPORTED) || misc > 0xffff)
		return 0;
	s.sample_type = st;
	s.misc = (uint16_t)misc;
	s.identifier = p->identifier;
	s.pid = p->pid, s.tid = p->tid;
	s.id = p->id;
	s.cpu = p->cpu, s.res = p->res;
	s.period = p->period;
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
			s.identifier += sv(r);
		if (sk & WIRE_SK_PID)
			s.pid += (uint32_t)sv(r);
		if (sk & WIRE_SK_TID)
			s.tid += (uint32_t)sv(r);
		if (sk & WIRE_SK_ID)
			s.id += sv(r);
		if (sk & WIRE_SK_CPU)
			s.cpu += (uint32_t)sv(r);
		if (sk & WIRE_SK_RES)
			s.res += (uint32_t)sv(r);
	}
	if (tag & WIRE_S_PERIOD) {
		if (!(st & BP_SAMPLE_PERIOD))
			return 0;
		s.period += sv(r);
	}

	if (st & BP_SAMPLE_IDENTIFIER)
		st64(q, s.identifier), q += 8;
	if (st & BP_SAMPLE_IP) {
		s.ip = p->ip + sv(r);
		st64(q, s.ip), q += 8;
	}
	if (st & BP_SAMPLE_TID)
		st32x2(q, s.pid, s.tid), q += 8;
	if (st & BP_SAMPLE_TIME) {
		s.time = p->time + p->dtime + sv(r);
		st64(q, s.time), q += 8;
	}
	if (st & BP_SAMPLE_ADDR) {
		s.addr = p->addr + sv(r);
		st64(q, s.addr), q += 8;
	}
	if (st & BP_SAMPLE_ID)
		st64(q, s.id), q += 8;
	if (st & BP_SAMPLE_CPU)
		st32x2(q, s.cpu, s.res), q += 8;
	if (st & BP_SAMPLE_PERIOD)
		st64(q, s.period), q += 8;
	s.nr_read = s.nr_ips = 0;
	if (st & BP_SAMPLE_READ) {
		uint64_t nr = uv(r);
		size_t room = BP_RECORD_MAX - (size_t)(q - o) - sizeof(struct bp_read_group);
		/* Bound it first: everything written below stays inside. */
		if (r->bad || nr > room / sizeof(struct bp_group_entry))
			return 0;
		s.nr_read = nr;
		s.time_enabled = p->time_enabled + sv(r);
		s.time_running = p->time_running + sv(r);
		st64(q, nr);
		st64(q + 8, s.time_enabled);
		st64(q + 16, s.time_running);
		q += sizeof(struct bp_read_group);
		s.read = q;
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
		s.nr_ips = nr;
		st64(q, nr), q += 8;
		s.ips = q;
		for (uint64_t i = 0; i < nr; i++) {
			uint64_t pred = i == 0 ? (st & BP_SAMPLE_IP ? s.ip : p->chain[0]) :
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
		struct bp_record_header h = { BP_RECORD_SAMPLE, s.misc, (uint16_t)(q - o) };
		memcpy(o, &h, sizeof(h));
	}
	/* The prediction rule is the encoder's own (kernel/wire.c). */
	wire_pred_commit(p, &s);
	return (uint32_t)(q - o);
}

long wire_dec_records(const uint8_t *payload, size_t len, uint8_t *out, size_t cap,
		      uint64_t *compact)
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
		} else if (tag & WIRE_ITEM_SAMPLE) {
			size = get_sample(&r, tag, &pred, out + used);
			if (!size)
				return WIRE_E_PAYLOAD;
			nc++;
		} else {
			return WIRE_E_PAYLOAD;
		}
		used += size;
	}
	if (compact)
		*compact += nc;
	return (long)used;
}

/* ---- frames ------------------------------------------------------------ */

static void noise(struct wire_dec *d, uint64_t off, const uint8_t *p, size_t n)
{
	d->st.garbage_bytes += n;
	if (d->ops.unframed && n)
		d->ops.unframed(d->ctx, off, p, n);
}

static void deliver(struct wire_dec *d, struct wire_dec_frame *f, long nrec)
{
	d->st.frames_ok++;
	if (d->ops.frame)
		d->ops.frame(d->ctx, f);
	if (f->channel == WIRE_CH_RECORDS) {
		for (long at = 0; at < nrec;) {
			const struct bp_record_header *h = (const void *)(d->arena + at);
			d->st.records++;
			if (h->type == BP_RECORD_SAMPLE)
				d->st.samples++;
			if (d->ops.record)
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

/* One run of bytes between delimiters, starting at stream offset off. */
static void chunk(struct wire_dec *d, const uint8_t *src, size_t n, uint64_t off)
{
	struct wire_frame wf;
	struct wire_dec_frame f;
	struct wire_dec_stream *s;
	uint32_t lost;
	long nrec = 0;
	int rc = wire_frame_unpack(src, n, d->frame, WIRE_FRAME_MAX, &wf);

	switch (rc) {
	case WIRE_OK:
		break;
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
	if (rc != WIRE_OK || !(s = stream_get(d, wf.channel, wf.cpu))) {
		noise(d, off, src, n);
		return;
	}

	if (!s->seen) {
		lost = wf.seq;			/* frames 0 .. seq-1 never came */
	} else if ((wf.flags & WIRE_F_START) && wf.seq == 0 && s->next_seq != 0) {
		d->st.restarts++;		/* a new run on this stream */
		lost = 0;
	} else {
		lost = wf.seq - s->next_seq;
		if (lost >= 0x80000000u) {	/* behind: seen already */
			s->duplicates++;
			d->st.duplicates++;
			d->st.garbage_bytes += n;
			return;
		}
	}

	if (wf.channel == WIRE_CH_RECORDS) {
		uint64_t compact = 0;
		while ((nrec = wire_dec_records(wf.payload, wf.len, d->arena, d->arena_cap,
						&compact)) == WIRE_E_SPACE &&
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
	} else if (wf.channel == WIRE_CH_AUX && wf.len < sizeof(struct wire_aux_header))
		nrec = WIRE_E_PAYLOAD;

	/* The header passed the CRC: the frame arrived, whatever its payload. */
	s->seen = true;
	s->next_seq = wf.seq + 1;
	s->lost += lost;
	d->st.lost_frames += lost;
	d->st.lost_by_channel[wf.channel] += lost;
	if (nrec < 0) {
		s->bad_payload++;
		d->st.bad_payload++;
		noise(d, off, src, n);
		return;
	}
	s->frames++;

	f.channel = wf.channel;
	f.flags = wf.flags;
	f.cpu = wf.cpu;
	f.seq = wf.seq;
	f.lost_before = lost;
	f.offset = off;
	f.aux_pos = wf.channel == WIRE_CH_AUX ? ld64(wf.payload) : 0;
	f.payload = wf.payload;
	f.len = wf.len;
	deliver(d, &f, nrec);
}

/* Bytes of a chunk that may continue in the next feed. */
static void keep(struct wire_dec *d, const uint8_t *p, size_t n)
{
	if (d->spilling) {
		noise(d, d->off, p, n);
		return;
	}
	if (d->chunk_len + n > CHUNK_MAX) {
		/* Longer than any frame: noise up to the next delimiter. */
		noise(d, d->chunk_off, d->chunk, d->chunk_len);
		noise(d, d->off, p, n);
		d->chunk_len = 0;
		d->spilling = true;
		return;
	}
	memcpy(d->chunk + d->chunk_len, p, n);
	d->chunk_len += n;
}

/* A delimiter: the chunk in progress is complete. */
static void chunk_end(struct wire_dec *d)
{
	if (d->spilling) {
		d->st.cobs_errors++;
		d->spilling = false;
	} else if (d->chunk_len) {
		chunk(d, d->chunk, d->chunk_len, d->chunk_off);
	}
	d->chunk_len = 0;
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
				chunk(d, p, n, d->off);
		} else {
			keep(d, p, n);
			if (z)
				chunk_end(d);
		}
		d->off += n;
		p += n;
		if (z) {
			d->off++;
			p++;
		}
	}
}

void wire_dec_finish(struct wire_dec *d)
{
	chunk_end(d);
}
