/*
 * wire_bench — the wire codec's benchmarks (make bench):
 *
 *   BENCH wire_bytes_per_sample   bytes on the cable per IP+TIME SAMPLE of
 *                                 a hot loop (goal <= 3.5; perf.data spends
 *                                 40+), frames and delimiters included
 *   BENCH decode_mb_per_s         host decoder throughput over a synthetic
 *                                 multi-MB stream, MB (10^6 bytes) of wire
 *                                 data per second, best of 3
 *
 * The hot loop: IP within 48 bytes, time advancing by a 100000-tick period
 * +- 500, encoded the way the drain does it, a 4 KiB batch of records per
 * call, default frame size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wire/record.h"
#include "wire/decode.h"
#include "test/host/wire_gen.h"

#define BAUD		115200
#define BATCH_BYTES	4096

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Encode samples of the hot loop from ncpu CPUs; returns wire bytes. */
static size_t hot_loop(uint64_t st, size_t samples, int ncpu, struct wg_buf *out,
		       size_t *record_bytes)
{
	uint8_t *rec = malloc(BATCH_BYTES + BP_RECORD_MAX);
	struct wire_enc e[8];
	struct wg_loop l[8];

	*record_bytes = 0;
	for (int c = 0; c < ncpu; c++) {
		struct wire_enc_config cfg = { .cpu = (uint16_t)c, .sample_type = st };
		wire_encoder_init(&e[c], &cfg);
		wg_loop_init(&l[c], 77 + c, 100000, 500);
	}
	for (size_t done = 0; done < samples;) {
		int c = (int)(done / 512 % ncpu);
		size_t n = 0;
		while (n < BATCH_BYTES && done < samples) {
			n += wg_loop_sample(&l[c], rec + n, st, (uint32_t)c);
			done++;
		}
		*record_bytes += n;
		wg_encode_records(&e[c], rec, n, out);
	}
	free(rec);
	return out->len;
}

static uint64_t sink;

static void on_record(void *ctx, const struct wire_dec_frame *f, const struct bp_record_header *rec)
{
	(void)ctx, (void)f;
	sink += rec->size;
}

int main(void)
{
	const uint64_t st_ip_time = BP_SAMPLE_IP | BP_SAMPLE_TIME;
	const uint64_t st_kernel = BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID |
				   BP_SAMPLE_CPU | BP_SAMPLE_PERIOD;
	const size_t n = 1000000;
	struct wg_buf w = { 0 };
	size_t rb, wire;
	double per, best = 0;

	wire = hot_loop(st_ip_time, n, 1, &w, &rb);
	per = (double)wire / n;
	printf("# wire: IP+TIME hot-loop samples: %zu record bytes each, %.2f on the wire; "
	       "goal <= 3.5; at %d baud (10 bits a byte) that is %.0f samples/s\n",
	       rb / n, per, BAUD, BAUD / 10.0 / per);
	printf("BENCH wire_bytes_per_sample %.2f bytes\n", per);

	/* pmu/profile.c's sample_type, four CPUs: the decoder's stream. */
	w.len = 0;
	wire = hot_loop(st_kernel, 2000000, 4, &w, &rb);
	struct wire_dec_ops ops = { .record = on_record };
	struct wire_dec *d = wire_dec_new(&ops, NULL);
	for (int run = 0; run < 3; run++) {
		wire_dec_reset(d);
		double t0 = now();
		for (size_t at = 0; at < wire; at += 65536)
			wire_dec_feed(d, w.p + at, wire - at < 65536 ? wire - at : 65536);
		wire_dec_finish(d);
		double mbs = wire / 1e6 / (now() - t0);
		if (wire_dec_stats(d)->records != 2000000 || wire_dec_stats(d)->lost_frames) {
			fprintf(stderr, "wire_bench: decoded %llu records, expected 2000000\n",
				(unsigned long long)wire_dec_stats(d)->records);
			return 1;
		}
		if (mbs > best)
			best = mbs;
	}
	printf("# wire: decoded %.1f MB of wire (%.1f MB of records, %.2f bytes a sample), "
	       "best of 3: %.1f M records/s\n", wire / 1e6, rb / 1e6, (double)wire / 2000000,
	       best * 1e6 / ((double)wire / 2000000) / 1e6);
	printf("BENCH decode_mb_per_s %.1f MB/s\n", best);
	wire_dec_free(d);
	wg_buf_free(&w);
	return 0;
}
