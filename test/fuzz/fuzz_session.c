/*
 * fuzz_session — libFuzzer target for the capture loader and the report
 * aggregator (tools/util/session.c, tools/util/hist.c), ASan + UBSan. The input
 * is the stream part of a capture: the target puts a valid capture header
 * in front (the header parser has its own target, fuzz_wire), so the
 * fuzzer spends its time in what the session builds from the stream:
 * records of every type, samples of every sample_type, call chains,
 * COUNTS, losses. The first byte chooses the header's flags (bit 0
 * complete, bit 1 interrupted, bit 2 a data_size beyond the file:
 * truncated) and, with bit 3 clear, has test/fuzz/fuzz_frames.c give the
 * frames their CRCs back, so that mutated payloads reach the parsers.
 *
 * Each input is loaded twice, kept (session_load) and streamed
 * (session_load_cb), aggregated with call graphs and by line, and every
 * sample's chain is read whole: any out-of-bounds access is a sanitizer
 * report. Seeds: test/fuzz/session_seeds.c and real captures
 * (test/fuzz/stream_seeds.sh).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/fuzz/fuzz_frames.h"
#include "tools/util/header.h"
#include "tools/util/hist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int sink_cb(void *ctx, const struct session *s, const struct bp_sample_rec *r,
		   const uint64_t *ips)
{
	uint64_t *acc = ctx;

	(void)s;
	for (uint32_t i = 0; i < r->nr_ips; i++)
		*acc += ips[i];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wire_capture_header h;
	struct session s;
	char path[64], err[512];
	const uint8_t *stream = data + 1;
	uint64_t acc = 0;
	size_t n;
	int fd;

	if (!size)
		return 0;
	n = size - 1;
	if (!(data[0] & 8))
		stream = fuzz_fixed_stream(stream, &n);
	fuzz_capture_header(&h, (data[0] & 1 ? WIRE_CAPF_COMPLETE : 0) |
				(data[0] & 2 ? WIRE_CAPF_INTERRUPTED : 0),
			    n + (data[0] & 4 ? 100 : 0));
	fd = fuzz_capture_memfd(&h, stream, n, path, sizeof(path));

	if (!session_load(&s, path, err, sizeof(err))) {
		struct report_opts o = { .sort = REPORT_SORT_SYM, .callgraph = true };
		struct report r;
		FILE *null = fopen("/dev/null", "w");
		for (size_t i = 0; i < s.nsamples; i++) {
			const struct bp_sample_rec *x = &s.samples[i];
			if (x->nr_ips && (x->ips_off > s.nips || x->nr_ips > s.nips - x->ips_off))
				abort();
			if (i && x->time < s.samples[i - 1].time)
				abort();	/* merged by time */
		}
		for (size_t i = 0; i < s.nrecords; i++) {
			const struct bp_record_header *rh = (const void *)(s.rec_data + s.records[i].off);
			struct bp_sample_rec x;
			const uint8_t *chain;
			if (s.records[i].off + rh->size > s.rec_data_len)
				abort();
			if (rh->type == BP_RECORD_SAMPLE &&
			    !session_parse_sample(&s, s.records[i].cpu, rh, &x, &chain))
				for (uint32_t k = 0; k < x.nr_ips; k++) {
					uint64_t a;
					memcpy(&a, chain + 8 * k, 8);
					acc += a;
				}
		}
		if (!report_aggregate(&s, NULL, &o, &r, err, sizeof(err)))
			report_free(&r);
		o.callgraph = false;
		o.sort = REPORT_SORT_LINE;
		if (!report_aggregate(&s, NULL, &o, &r, err, sizeof(err)))
			report_free(&r);
		if (null) {
			session_print_losses(&s, null, "");
			header_print(null, &s, NULL, NULL, "");
			fclose(null);
		}
		(void)session_tsc_to_ns(&s, s.last_time);
		session_free(&s);
	}
	if (!session_load_cb(&s, path, SESSION_NO_RECORDS, sink_cb, &acc, err, sizeof(err)))
		session_free(&s);
	close(fd);
	return acc == 42 ? 0 : 0;
}
