/*
 * fuzz_wire — libFuzzer target for the wire decoder and the capture reader
 * (ASan + UBSan). The first input byte picks what the rest is:
 *
 *   0  a byte stream from the cable, fed in pieces of varying size
 *   1  one RECORDS payload, expanded directly; whatever expands is
 *      encoded again and must decode to the same records (a round trip
 *      oracle for the encoder and the decoder together)
 *   2  a channel, a cpu and a payload, wrapped in a frame with the right
 *      CRC, so the payload parser is reached through the whole stream path
 *   3  a capture file
 *
 * Every delivered record must be well formed (size >= 8, a multiple of 8,
 * 8-aligned); anything else aborts, and so does any sanitizer report.
 * Seeds: test/fuzz/wire_seeds.c.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/record.h"
#include "test/host/wire_gen.h"
#include "tools/util/capture.h"
#include "wire/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t records_seen;

static void check_record(void *ctx, const struct wire_dec_frame *f,
			 const struct bp_record_header *rec)
{
	(void)ctx;
	if (f->channel != WIRE_CH_RECORDS || (uintptr_t)rec % 8 || rec->size < 8 ||
	    rec->size % 8)
		abort();
	records_seen++;
}

static void check_data(void *ctx, const struct wire_dec_frame *f, const uint8_t *p, size_t n)
{
	volatile uint8_t sink = 0;

	(void)ctx;
	if (f->channel == WIRE_CH_RECORDS || f->channel >= WIRE_NR_CHANNELS)
		abort();
	for (size_t i = 0; i < n; i++)	/* every byte readable */
		sink ^= p[i];
	(void)sink;
}

static void check_unframed(void *ctx, uint64_t off, const uint8_t *p, size_t n)
{
	(void)ctx, (void)off;
	if (n && (p[0] == 0 || p[n - 1] == 0))	/* delimiters never included */
		abort();
}

static const struct wire_dec_ops checks = {
	.record = check_record, .data = check_data, .unframed = check_unframed,
};

static struct wire_dec *dec;

static void feed_in_pieces(const uint8_t *p, size_t n, uint32_t seed)
{
	while (n) {
		size_t k = 1 + (seed % 1500);
		seed = seed * 1103515245u + 12345u;
		if (k > n)
			k = n;
		wire_dec_feed(dec, p, k);
		p += k;
		n -= k;
	}
	wire_dec_finish(dec);
	/* The counters agree with what came out. */
	if (wire_dec_stats(dec)->records != records_seen)
		abort();
}

/* Mode 1: expand, then encode what came out and expand that again. */
static void payload_round_trip(const uint8_t *p, size_t n)
{
	static uint8_t *first, *second, *out;
	struct wire_enc e;
	struct wire_enc_config cfg = { .cpu = 9, .frame_target = 64 + n % 900 };
	long len;
	uint64_t st;

	if (!first) {
		first = malloc(WIRE_DEC_RECORDS_MAX);
		second = malloc(WIRE_DEC_RECORDS_MAX);
		out = malloc(WIRE_ENC_OUT_MIN);
	}
	if (n > WIRE_PAYLOAD_MAX)
		return;
	len = wire_dec_records(p, n, first, WIRE_DEC_RECORDS_MAX, NULL);
	if (len < 0)
		return;
	/* The sample_type of the first compact item, if it names one. */
	if (n > 1 && (p[0] & WIRE_ITEM_SAMPLE) && (p[0] & WIRE_S_TYPE) &&
	    wire_get_uvarint(p + 1, p + n, &st))
		cfg.sample_type = st;
	wire_encoder_init(&e, &cfg);

	size_t at = 0, got = 0;
	while (at < (size_t)len) {
		size_t used, w = wire_encode_records(&e, first + at, (size_t)len - at, &used,
						     out, WIRE_ENC_OUT_MIN);
		if (!used)
			abort();
		/* Each frame alone: strip delimiters, check, expand. */
		for (size_t s = 0; s < w;) {
			uint8_t *z = memchr(out + s, 0, w - s);
			struct wire_frame f;
			static uint8_t fb[WIRE_FRAME_MAX];
			size_t fl = (size_t)(z - (out + s));
			if (!z)
				abort();
			if (fl) {
				if (wire_frame_unpack(out + s, fl, fb, sizeof(fb), &f))
					abort();
				long k = wire_dec_records(f.payload, f.len, second + got,
							  WIRE_DEC_RECORDS_MAX - got, NULL);
				if (k < 0)
					abort();
				got += (size_t)k;
			}
			s += fl + 1;
		}
		at += used;
	}
	if (got != (size_t)len || memcmp(first, second, got))
		abort();
}

/* Mode 2: a valid frame around the payload, noise either side. */
static void framed(const uint8_t *p, size_t n)
{
	static uint8_t *raw, *enc;
	uint8_t channel;
	uint16_t cpu;
	size_t e;

	if (!raw) {
		raw = malloc(WIRE_FRAME_MAX);
		enc = malloc(WIRE_ENCODED_MAX + 8);
	}
	if (n < 3 || n - 3 > WIRE_PAYLOAD_MAX)
		return;
	channel = p[0] % WIRE_NR_CHANNELS;
	memcpy(&cpu, p + 1, 2);
	p += 3, n -= 3;
	enc[0] = 'x';
	enc[1] = 0;
	e = 2 + wire_cobs_encode(raw, wg_raw_frame(raw, channel, WIRE_F_START, cpu, 0, p, n), enc + 2);
	enc[e++] = 0;
	feed_in_pieces(enc, e, (uint32_t)n);
}

static void capture(const uint8_t *p, size_t n)
{
	struct capture_reader r;
	char err[256], what[128];
	FILE *f;

	if (!n)
		return;
	f = fmemopen((void *)p, n, "rb");
	if (!f)
		return;
	if (capture_open_file(&r, f, "fuzz", err, sizeof(err)) == 0) {
		capture_describe(&r.info, what, sizeof(what));
		capture_decode(&r, dec, err, sizeof(err));
		if (wire_dec_stats(dec)->records != records_seen)
			abort();
		capture_close_reader(&r);
	} else if (!err[0] || strchr(err, '\n')) {
		abort();		/* one line, always */
	}
	fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dec && !(dec = wire_dec_new(&checks, NULL)))
		abort();
	wire_dec_reset(dec);
	records_seen = 0;
	if (size < 1)
		return 0;
	switch (data[0] & 3) {
	case 0:
		feed_in_pieces(data + 1, size - 1, size > 1 ? data[1] : 0);
		break;
	case 1:
		payload_round_trip(data + 1, size - 1);
		break;
	case 2:
		framed(data + 1, size - 1);
		break;
	default:
		capture(data + 1, size - 1);
		break;
	}
	return 0;
}
