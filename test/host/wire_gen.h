/*
 * wire_gen.h — records and streams for the wire codec's tests, fuzz seeds
 * and benchmark: a deterministic PRNG, SAMPLE and other records laid out
 * as perf_ring.h says, a synthetic hot loop, and a decoder callback that
 * collects what comes out, frame by frame.
 */
#ifndef BAREPERF_TEST_HOST_WIRE_GEN_H
#define BAREPERF_TEST_HOST_WIRE_GEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/perf_ring.h"
#include "uapi/wire.h"
#include "wire/record.h"
#include "wire/decode.h"

/* xorshift64*: the same numbers on every run. */
struct wg_rng {
	uint64_t s;
};

static inline uint64_t wg_next(struct wg_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

static inline uint64_t wg_below(struct wg_rng *r, uint64_t n)
{
	return n ? wg_next(r) % n : 0;
}

/* Field values of one SAMPLE; wg_sample() writes those st selects. */
struct wg_sample {
	uint16_t misc;
	uint64_t identifier, ip, time, addr, id, period;
	uint32_t pid, tid, cpu, res;
	uint64_t time_enabled, time_running;
	uint32_t nr_read;
	const struct bp_group_entry *read;
	uint32_t nr_ips;
	const uint64_t *ips;
};

/* Write the SAMPLE record; returns its size (0 if too large). */
uint32_t wg_sample(uint8_t *out, uint64_t st, const struct wg_sample *s);

/* A value that exercises the codec: small, large, negative, edge. */
uint64_t wg_value(struct wg_rng *r);

/* A SAMPLE with random field values (nr_read <= 12, nr_ips <= 40). */
uint32_t wg_random_sample(struct wg_rng *r, uint8_t *out, uint64_t st);

/* One record of each non-SAMPLE type in perf_ring.h, plus one of an
 * unknown type; returns the bytes written (< 4096). */
size_t wg_other_records(struct wg_rng *r, uint8_t *out);

/*
 * A hot loop: IP within 48 bytes of a base, time advancing by period
 * +- jitter per sample. State carries across calls.
 */
struct wg_loop {
	uint64_t base, time, period, jitter;
	struct wg_rng rng;
};
void wg_loop_init(struct wg_loop *l, uint64_t seed, uint64_t period, uint64_t jitter);
uint32_t wg_loop_sample(struct wg_loop *l, uint8_t *out, uint64_t st, uint32_t cpu);

/* A growing byte buffer. */
struct wg_buf {
	uint8_t *p;
	size_t len, cap;
};
void wg_buf_put(struct wg_buf *b, const void *p, size_t n);
void wg_buf_free(struct wg_buf *b);

/* A frame before COBS (uapi/wire.h §2) written by hand, not by the
 * encoder: channel, flags, cpu, seq, boot 0, the payload, its CRC32C.
 * f must hold WIRE_FRAME_MIN + len bytes; returns that length. */
size_t wg_raw_frame(uint8_t *f, unsigned channel, uint8_t flags, uint16_t cpu, uint32_t seq,
		    const uint8_t *payload, size_t len);

/* Encode all of records[0, len) into b (asserting progress). */
void wg_encode_records(struct wire_enc *e, const void *records, size_t len, struct wg_buf *b);

/* What a decoder delivered, frame by frame. */
struct wg_frame {
	uint8_t channel;
	uint16_t cpu;
	uint32_t seq, lost_before;
	uint64_t aux_pos;
	uint64_t offset;		/* in the stream decoded */
	size_t at, len;			/* content: records or data, in the blob */
	uint32_t nrec;
};

struct wg_collect {
	struct wg_frame *f;
	size_t n, cap;
	struct wg_buf blob;		/* contents, frame after frame */
	struct wg_buf unframed;		/* bytes that were no frame */
	uint64_t records;
};

extern const struct wire_dec_ops wg_collect_ops;	/* ctx: struct wg_collect * */
void wg_collect_free(struct wg_collect *c);
/* Decode stream in pieces of pseudo-random size, collecting into c. */
struct wire_dec *wg_decode(const uint8_t *stream, size_t len, struct wg_collect *c,
			   uint64_t seed);

#endif
