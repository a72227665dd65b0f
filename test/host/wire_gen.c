/*
 * wire_gen.c — test data for the wire codec (wire_gen.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/host/wire_gen.h"

static void put64(uint8_t **q, uint64_t v)
{
	memcpy(*q, &v, 8);
	*q += 8;
}

static void put32x2(uint8_t **q, uint32_t a, uint32_t b)
{
	memcpy(*q, &a, 4);
	memcpy(*q + 4, &b, 4);
	*q += 8;
}

uint32_t wg_sample(uint8_t *out, uint64_t st, const struct wg_sample *s)
{
	uint32_t size = wire_sample_size(st, s->nr_read, s->nr_ips);
	struct bp_record_header h = { BP_RECORD_SAMPLE, s->misc, (uint16_t)size };
	uint8_t *q = out + sizeof(h);

	if (!size)
		return 0;
	memcpy(out, &h, sizeof(h));
	if (st & BP_SAMPLE_IDENTIFIER)
		put64(&q, s->identifier);
	if (st & BP_SAMPLE_IP)
		put64(&q, s->ip);
	if (st & BP_SAMPLE_TID)
		put32x2(&q, s->pid, s->tid);
	if (st & BP_SAMPLE_TIME)
		put64(&q, s->time);
	if (st & BP_SAMPLE_ADDR)
		put64(&q, s->addr);
	if (st & BP_SAMPLE_ID)
		put64(&q, s->id);
	if (st & BP_SAMPLE_CPU)
		put32x2(&q, s->cpu, s->res);
	if (st & BP_SAMPLE_PERIOD)
		put64(&q, s->period);
	if (st & BP_SAMPLE_READ) {
		put64(&q, s->nr_read);
		put64(&q, s->time_enabled);
		put64(&q, s->time_running);
		for (uint32_t i = 0; i < s->nr_read; i++) {
			put64(&q, s->read[i].config);
			put64(&q, s->read[i].count);
		}
	}
	if (st & BP_SAMPLE_CALLCHAIN) {
		put64(&q, s->nr_ips);
		for (uint32_t i = 0; i < s->nr_ips; i++)
			put64(&q, s->ips[i]);
	}
	if ((uint32_t)(q - out) != size) {
		fprintf(stderr, "wg_sample: size %u, wrote %td\n", size, q - out);
		abort();
	}
	return size;
}

uint64_t wg_value(struct wg_rng *r)
{
	static const uint64_t edge[] = {
		0, 1, 2, 63, 64, 127, 128, 0x7fffffff, 0x80000000, 0xffffffff,
		0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
		0xffffffffffffffffull, 0xfffffffffffffffeull, 0xffffffff80000000ull,
	};
	switch (wg_below(r, 5)) {
	case 0:
		return edge[wg_below(r, sizeof(edge) / sizeof(edge[0]))];
	case 1:
		return wg_below(r, 300);
	case 2:
		return 0xffffffff80000000ull + wg_below(r, 1u << 24);	/* kernel text */
	case 3:
		return wg_next(r) >> wg_below(r, 64);
	default:
		return wg_next(r);
	}
}

uint32_t wg_random_sample(struct wg_rng *r, uint8_t *out, uint64_t st)
{
	struct bp_group_entry read[12];
	uint64_t ips[40];
	struct wg_sample s = {
		.misc = (uint16_t)(wg_below(r, 4) ? BP_MISC_KERNEL : wg_next(r)),
		.identifier = wg_below(r, 3) ? wg_below(r, 4) : wg_value(r),
		.ip = wg_value(r), .time = wg_value(r), .addr = wg_value(r),
		.id = wg_below(r, 3) ? wg_below(r, 4) : wg_value(r),
		.period = wg_below(r, 2) ? 100000 : wg_value(r),
		.pid = (uint32_t)(wg_below(r, 2) ? 1 : wg_value(r)),
		.tid = (uint32_t)(wg_below(r, 2) ? 0 : wg_value(r)),
		.cpu = (uint32_t)(wg_below(r, 2) ? wg_below(r, 4) : wg_value(r)),
		.res = (uint32_t)(wg_below(r, 8) ? 0 : wg_value(r)),
		.time_enabled = wg_value(r), .time_running = wg_value(r),
		.nr_read = (uint32_t)wg_below(r, 13),
		.read = read,
		.nr_ips = (uint32_t)wg_below(r, 41),
		.ips = ips,
	};
	for (uint32_t i = 0; i < s.nr_read; i++) {
		read[i].config = wg_value(r);
		read[i].count = wg_value(r);
	}
	for (uint32_t i = 0; i < s.nr_ips; i++)
		ips[i] = i == 0 && wg_below(r, 2) ? s.ip : wg_value(r);
	return wg_sample(out, st, &s);
}

static void fill(struct wg_rng *r, void *p, size_t n)
{
	uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)wg_next(r);
}

#define HDR(type, rec)	(struct bp_record_header){ (type), 0, sizeof(rec) }

size_t wg_other_records(struct wg_rng *r, uint8_t *out)
{
	uint8_t *q = out;
	struct bp_record_lost lost;
	struct bp_record_throttle thr;
	struct bp_record_aux aux;
	struct bp_record_itrace_start its;
	struct bp_record_lost_samples ls;
	struct bp_record_run_meta meta;
	struct bp_record_cpu_info ci;
	struct bp_record_pmu_caps pc;
	struct bp_record_event_desc ed;
	struct bp_record_app_start as;
	struct bp_record_app_stop ap;
	uint8_t unknown[40];

#define EMIT(type, rec) do {					\
		fill(r, &(rec), sizeof(rec));			\
		(rec).header = HDR(type, rec);			\
		(rec).header.misc = (uint16_t)wg_below(r, 3);	\
		memcpy(q, &(rec), sizeof(rec));			\
		q += sizeof(rec);				\
	} while (0)

	EMIT(BP_RECORD_LOST, lost);
	EMIT(BP_RECORD_THROTTLE, thr);
	EMIT(BP_RECORD_UNTHROTTLE, thr);
	EMIT(BP_RECORD_AUX, aux);
	EMIT(BP_RECORD_ITRACE_START, its);
	EMIT(BP_RECORD_LOST_SAMPLES, ls);
	EMIT(BP_RECORD_RUN_META, meta);
	EMIT(BP_RECORD_CPU_INFO, ci);
	EMIT(BP_RECORD_PMU_CAPS, pc);
	/* An EVENT_DESC teaches the encoder a sample_type: keep it valid. */
	EMIT(BP_RECORD_EVENT_DESC, ed);
	{
		uint64_t st = (wg_next(r) & BP_SAMPLE_SUPPORTED) | BP_SAMPLE_IDENTIFIER;
		memcpy(q - sizeof(ed) + __builtin_offsetof(struct bp_record_event_desc, sample_type),
		       &st, 8);
	}
	EMIT(BP_RECORD_APP_START, as);
	EMIT(BP_RECORD_APP_STOP, ap);
	{
		struct bp_record_header h = { BP_RECORD_BAREPERF_LAST, 7, sizeof(unknown) };
		fill(r, unknown, sizeof(unknown));
		memcpy(unknown, &h, sizeof(h));
		memcpy(q, unknown, sizeof(unknown));
		q += sizeof(unknown);
	}
#undef EMIT
	return (size_t)(q - out);
}

void wg_loop_init(struct wg_loop *l, uint64_t seed, uint64_t period, uint64_t jitter)
{
	l->rng.s = seed | 1;
	l->base = 0xffffffff80104000ull + (wg_next(&l->rng) & 0xfff0);
	l->time = 1000000000ull + wg_below(&l->rng, 1u << 20);
	l->period = period;
	l->jitter = jitter;
}

uint32_t wg_loop_sample(struct wg_loop *l, uint8_t *out, uint64_t st, uint32_t cpu)
{
	uint64_t ips[4];
	struct wg_sample s = {
		.misc = BP_MISC_KERNEL,
		.ip = l->base + wg_below(&l->rng, 48),
		.pid = 1, .tid = cpu, .cpu = cpu, .id = 0, .identifier = 0,
		.period = l->period,
		.nr_ips = 3, .ips = ips,
	};

	l->time += l->period - l->jitter + wg_below(&l->rng, 2 * l->jitter + 1);
	s.time = l->time;
	ips[0] = s.ip;
	ips[1] = l->base + 0x200;
	ips[2] = l->base + 0x400;
	return wg_sample(out, st, &s);
}

void wg_buf_put(struct wg_buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			abort();
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

void wg_buf_free(struct wg_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

size_t wg_raw_frame(uint8_t *f, unsigned channel, uint8_t flags, uint16_t cpu, uint32_t seq,
		    const uint8_t *payload, size_t len)
{
	uint32_t crc;

	f[0] = WIRE_VC(channel);
	f[1] = flags;
	memcpy(f + 2, &cpu, 2);
	memcpy(f + 4, &seq, 4);
	memset(f + 8, 0, 4);			/* boot: unknown */
	memcpy(f + WIRE_HEADER_SIZE, payload, len);
	crc = wire_crc32c(0, f, WIRE_HEADER_SIZE + len);
	memcpy(f + WIRE_HEADER_SIZE + len, &crc, 4);
	return WIRE_FRAME_MIN + len;
}

void wg_encode_records(struct wire_enc *e, const void *records, size_t len, struct wg_buf *b)
{
	static uint8_t out[WIRE_ENC_OUT_MIN];
	const uint8_t *in = records;

	while (len) {
		size_t used, n = wire_encode_records(e, in, len, &used, out, sizeof(out));
		if (!used) {
			fprintf(stderr, "wg_encode_records: no progress\n");
			abort();
		}
		wg_buf_put(b, out, n);
		in += used;
		len -= used;
	}
}

static void c_frame(void *ctx, const struct wire_dec_frame *f)
{
	struct wg_collect *c = ctx;

	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->f = realloc(c->f, c->cap * sizeof(*c->f));
		if (!c->f)
			abort();
	}
	c->f[c->n++] = (struct wg_frame){
		.channel = f->channel, .cpu = f->cpu, .seq = f->seq,
		.lost_before = f->lost_before, .aux_pos = f->aux_pos,
		.offset = f->offset, .at = c->blob.len,
	};
}

static void c_record(void *ctx, const struct wire_dec_frame *f, const struct bp_record_header *rec)
{
	struct wg_collect *c = ctx;

	(void)f;
	if ((uintptr_t)rec % 8 || rec->size < 8 || rec->size % 8)
		abort();
	wg_buf_put(&c->blob, rec, rec->size);
	c->f[c->n - 1].len += rec->size;
	c->f[c->n - 1].nrec++;
	c->records++;
}

static void c_data(void *ctx, const struct wire_dec_frame *f, const uint8_t *p, size_t n)
{
	struct wg_collect *c = ctx;

	(void)f;
	wg_buf_put(&c->blob, p, n);
	c->f[c->n - 1].len += n;
}

static void c_unframed(void *ctx, uint64_t off, const uint8_t *p, size_t n)
{
	struct wg_collect *c = ctx;

	(void)off;
	wg_buf_put(&c->unframed, p, n);
}

const struct wire_dec_ops wg_collect_ops = {
	.frame = c_frame, .record = c_record, .data = c_data, .unframed = c_unframed,
};

void wg_collect_free(struct wg_collect *c)
{
	free(c->f);
	wg_buf_free(&c->blob);
	wg_buf_free(&c->unframed);
	memset(c, 0, sizeof(*c));
}

struct wire_dec *wg_decode(const uint8_t *stream, size_t len, struct wg_collect *c,
			   uint64_t seed)
{
	struct wire_dec *d = wire_dec_new(&wg_collect_ops, c);
	struct wg_rng r = { seed | 1 };

	if (!d)
		abort();
	for (size_t at = 0; at < len;) {
		size_t n = seed ? 1 + wg_below(&r, 3000) : len;
		if (n > len - at)
			n = len - at;
		wire_dec_feed(d, stream + at, n);
		at += n;
	}
	wire_dec_finish(d);
	return d;
}
