/*
 * wire_seeds DIR — write a small seed corpus for fuzz_wire into DIR:
 * valid streams (mode 0), RECORDS payloads (mode 1), payloads of every
 * channel (mode 2) and capture files (mode 3). Generated each time from
 * the encoder, so the seeds follow the format as it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/record.h"
#include "test/fuzz/seed_file.h"
#include "tools/util/capture.h"
#include "test/host/wire_gen.h"

/* A stream of a few frames from two CPUs, with boot text in front. */
static void make_stream(struct wg_buf *s, uint64_t st, int samples, uint64_t seed_)
{
	uint8_t *rec = malloc(1 << 16), out[WIRE_ENC_OUT_MIN];
	struct wg_rng r = { seed_ };
	size_t used, w;

	wg_buf_put(s, "boot\r\n", 6);
	for (uint16_t cpu = 0; cpu < 2; cpu++) {
		struct wire_enc e;
		struct wire_enc_config cfg = { .cpu = cpu, .sample_type = st, .frame_target = 160 };
		struct wg_loop l;
		size_t n = cpu ? 0 : wg_other_records(&r, rec);

		wire_encoder_init(&e, &cfg);
		wg_loop_init(&l, seed_ + cpu, 4000, 40);
		for (int i = 0; i < samples; i++)
			n += i % 5 ? wg_loop_sample(&l, rec + n, st, cpu) :
				     wg_random_sample(&r, rec + n, st);
		wg_encode_records(&e, rec, n, s);
		w = wire_encode_bytes(&e, WIRE_CH_CONSOLE, "hello\n", 6, &used, out, sizeof(out));
		wg_buf_put(s, out, w);
		w = wire_encode_aux(&e, 4096, rec, 100, &used, out, sizeof(out));
		wg_buf_put(s, out, w);
	}
	free(rec);
}

int main(int argc, char **argv)
{
	static const uint64_t types[] = {
		BP_SAMPLE_IP | BP_SAMPLE_TIME,
		BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID | BP_SAMPLE_CPU |
			BP_SAMPLE_PERIOD,
		BP_SAMPLE_IDENTIFIER | BP_SAMPLE_IP | BP_SAMPLE_ADDR | BP_SAMPLE_READ |
			BP_SAMPLE_CALLCHAIN,
		BP_SAMPLE_SUPPORTED,
	};
	uint8_t fb[WIRE_FRAME_MAX];

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	seed_dir(argv[1]);
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		struct wg_buf s = { 0 };
		make_stream(&s, types[t], 12, 100 + t);
		seed("stream", 0, s.p, s.len);

		/* Each frame's payload: mode 1 (RECORDS) and mode 2 (any channel). */
		for (size_t at = 0, k = 0; at < s.len && k < 6; k++) {
			uint8_t *z = memchr(s.p + at, 0, s.len - at);
			struct wire_frame f;
			if (!z)
				break;
			size_t n = (size_t)(z - (s.p + at));
			if (n && !wire_frame_unpack(s.p + at, n, fb, sizeof(fb), &f)) {
				uint8_t hdr[3] = { f.channel, (uint8_t)f.cpu, 0 };
				struct wg_buf m = { 0 };
				if (f.channel == WIRE_CH_RECORDS)
					seed("payload", 1, f.payload, f.len);
				wg_buf_put(&m, hdr, 3);
				wg_buf_put(&m, f.payload, f.len);
				seed("framed", 2, m.p, m.len);
				wg_buf_free(&m);
			}
			at += n + 1;
		}

		/* A capture: complete, and one never closed. */
		struct wire_capture_header h;
		memset(&h, 0, sizeof(h));
		memcpy(h.magic, WIRE_CAPTURE_MAGIC, WIRE_CAPTURE_MAGIC_LEN);
		h.version = WIRE_CAPTURE_VERSION;
		h.compat_version = WIRE_CAPTURE_COMPAT_VERSION;
		h.header_size = sizeof(h);
		h.wire_version = WIRE_VERSION;
		h.flags = t % 2 ? WIRE_CAPF_COMPLETE : 0;
		h.data_size = t % 2 ? s.len : 0;
		struct wg_buf c = { 0 };
		wg_buf_put(&c, &h, sizeof(h));
		wg_buf_put(&c, s.p, s.len);
		seed("capture", 3, c.p, c.len);
		wg_buf_free(&c);
		wg_buf_free(&s);
	}
	return 0;
}
