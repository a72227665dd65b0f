/*
 * test_session — the capture loader (tools/util/session.c) on synthetic
 * captures framed by the kernel's own encoder (test/host/capgen.c):
 * metadata, app runs, samples merged by time across CPUs, call chains,
 * IDENTIFIER, every kind of loss counted exactly (ring LOST, LOST_SAMPLES,
 * throttling, frames lost in transit), the boot text not counted as
 * damage, streaming, and the bad inputs: not a capture, too short, a
 * newer version, a truncated capture that still loads what it holds.
 * The stream as it may arrive: frames out of order (one answer for the
 * kept and the streamed load), a stream without its END (cut at a frame
 * boundary or inside a frame), a halted machine's text after END, a
 * frame of another boot spliced in, and a file of noise (bounded memory).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "wire/record.h"
#include "test/host/capgen.h"
#include "tools/util/session.h"

#define BOOT "bareperf: booted via capgen\r\nstream: starting\r\n"
#define TSC_HZ 2000000000ull

static char path[64];
static struct capgen *G;
static char err[512];
static const uint8_t bid[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };

static int setup(void **state)
{
	(void)state;
	G = capgen_tmp(path, sizeof(path), "test_session");
	return G ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	capgen_tmp_free(G, path);
	return 0;
}

static void open_gen(uint64_t st)
{
	assert_int_equal(capgen_open(G, path, st, BOOT, err, sizeof(err)), 0);
}

static void close_gen(uint32_t flags)
{
	if (capgen_close(G, flags, err, sizeof(err)))
		fail_msg("capgen_close: %s", err);
}

/* A one-CPU run: 100 samples, 3 LOST, 2 LOST_SAMPLES, one throttle. */
static void one_cpu_run(void)
{
	open_gen(CAPGEN_ST);
	capgen_meta(G, 1, TSC_HZ, 1000, bid, sizeof(bid));
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_cpu(G, 0, BP_PMU_SOFT);
	capgen_app(G, 0, true, 7, "loopnest", 1000, 0);
	for (int i = 0; i < 100; i++)
		capgen_sample(G, 0, 0, 0xffffffff80100000ull + (i % 10) * 4, 2000 + i * 500000ull,
			      250000, 7, 0, NULL);
	capgen_lost(G, 0, 3);
	capgen_lost_samples(G, 0, 2);
	capgen_throttle(G, 0, true, 60000000);
	capgen_throttle(G, 0, false, 61000000);
	capgen_ticks(G, 0, 7, 102, 100, 0, 2, 0);
	capgen_app(G, 0, false, 7, NULL, 52000000, 1);
	capgen_flush(G, 0);
	capgen_console(G, 0, "app: loopnest: start\r\n");
	close_gen(0);
}

static void loads_a_run(void **state)
{
	struct session s;

	(void)state;
	one_cpu_run();
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_true(s.have_meta);
	assert_memory_equal(s.meta.build_id, bid, sizeof(bid));
	assert_int_equal(s.ncpus, 1);
	assert_int_equal(s.nevents, 1);
	assert_string_equal(s.events[0].name, "cpu-clock");
	assert_int_equal(s.napps, 1);
	assert_string_equal(s.apps[0].name, "loopnest");
	assert_int_equal(s.apps[0].app_id, 7);
	assert_true(s.apps[0].stopped);
	assert_int_equal(s.apps[0].status, 1);
	assert_int_equal(s.nsamples, 100);
	for (size_t i = 0; i < s.nsamples; i++) {
		assert_int_equal(s.samples[i].time, 2000 + i * 500000ull);
		assert_int_equal(s.samples[i].period, 250000);
		assert_int_equal(s.samples[i].pid, 7);
		assert_int_equal(s.samples[i].cpu, 0);
		assert_int_equal(s.samples[i].nr_ips, 0);
	}
	assert_int_equal(s.first_time, 2000);
	assert_int_equal(s.last_time, 2000 + 99 * 500000ull);
	assert_int_equal(s.loss.ring_lost[0], 3);
	assert_int_equal(s.loss.lost_samples[0], 2);
	assert_int_equal(s.loss.nthrottle, 1);
	assert_int_equal(s.nthrottle, 1);
	assert_int_equal(s.throttle[0].end, 61000000);
	/* The boot text is the console's start, not a damaged frame. */
	assert_int_equal(s.loss.crc_errors, 0);
	assert_int_equal(s.loss.bad_frames, 0);
	assert_int_equal(s.loss.frames_lost_total, 0);
	assert_int_equal(s.noise_bytes, 0);
	assert_non_null(strstr(s.console, "bareperf: booted via capgen"));
	assert_non_null(strstr(s.console, "app: loopnest: start"));
	assert_false(s.truncated);
	assert_false(s.interrupted);
	assert_non_null(strstr(s.state, "complete"));
	/* Every record kept for script, in stream order. */
	assert_int_equal(s.records[0].type, BP_RECORD_RUN_META);
	assert_true(s.nrecords >= 100 + 9);
	/* 2 GHz: 2000 ticks after start_tsc are 1000 ns. */
	assert_int_equal(session_tsc_to_ns(&s, 3000), 1000);
	session_free(&s);
}

static void losses_are_printed(void **state)
{
	struct session s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	one_cpu_run();
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	f = open_memstream(&buf, &len);
	assert_int_equal(session_print_losses(&s, f, "# "), 3);
	fclose(f);
	assert_non_null(strstr(buf, "LOST: 3 records dropped on cpu 0"));
	assert_non_null(strstr(buf, "LOST_SAMPLES: 2 samples"));
	assert_non_null(strstr(buf, "throttled: 1 interval"));
	free(buf);
	session_free(&s);
}

/* BENCH records (a version-0 one, whose spread fields are absent) and the
 * BENCH_END record are kept, whole, on whichever CPU they arrive. */
static void bench_records_and_end(void **state)
{
	struct bp_record_bench b;
	struct bp_record_bench_end e;
	struct session s;

	(void)state;
	open_gen(CAPGEN_ST);
	capgen_meta(G, 2, TSC_HZ, 1000, bid, sizeof(bid));
	capgen_app(G, 0, true, 7, "suite", 1000, 0);
	memset(&b, 0, sizeof(b));
	b.header = (struct bp_record_header){ BP_RECORD_BENCH, 0, sizeof(b) };
	b.app_id = 7;
	strcpy(b.table, "insn");
	strcpy(b.name, "add r64 lat");
	strcpy(b.event, "tsc");
	b.median = 1000;
	b.bench_version = BP_BENCH_VERSION;
	b.seq = 1;
	b.table_row = 1;
	b.iqr = 25;
	capgen_record(G, 0, &b);
	b.cpu = 1;
	b.seq = 3;
	b.table_row = 3;
	capgen_record(G, 1, &b);
	memset(&e, 0, sizeof(e));
	e.header = (struct bp_record_header){ BP_RECORD_BENCH_END, 0, sizeof(e) };
	e.app_id = 7;
	e.results = 4;
	e.lost = 2;
	strcpy(e.last_table, "insn");
	e.last_row = 4;
	capgen_record(G, 0, &e);
	capgen_app(G, 0, false, 7, NULL, 52000000, 0);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.nbenches, 2);
	assert_int_equal(s.benches[0].seq + s.benches[1].seq, 4);
	assert_int_equal(s.benches[0].iqr, 25);
	assert_int_equal(s.nbench_ends, 1);
	assert_int_equal(s.bench_ends[0].app_id, 7);
	assert_int_equal(s.bench_ends[0].results, 4);
	assert_int_equal(s.bench_ends[0].lost, 2);
	assert_string_equal(s.bench_ends[0].last_table, "insn");
	assert_int_equal(s.bench_ends[0].last_row, 4);
	session_free(&s);
}

/* Two CPUs whose frames arrive out of time order: merged by time. */
static void merges_cpus_by_time(void **state)
{
	struct session s;

	(void)state;
	open_gen(CAPGEN_ST);
	capgen_meta(G, 2, TSC_HZ, 0, bid, sizeof(bid));
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	for (unsigned c = 0; c < 2; c++) {
		capgen_cpu(G, c, BP_PMU_SOFT);
		capgen_app(G, c, true, 1, "two", 0, 0);
	}
	capgen_flush(G, 0);	/* the metadata first, as the kernel's drain sends it */
	/* cpu 1 drains first; every cpu-0 sample ties with one of cpu 1. */
	for (int i = 0; i < 50; i++)
		capgen_sample(G, 1, 0, 0x1000 + i, 100 + 10 * i, 1, 1, 0, NULL);
	capgen_flush(G, 1);
	for (int i = 0; i < 50; i++)
		capgen_sample(G, 0, 0, 0x2000 + i, 105 + 10 * i - (i % 2) * 5, 1, 1, 0, NULL);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.nsamples, 100);
	assert_int_equal(s.ncpus, 2);
	for (size_t i = 1; i < s.nsamples; i++) {
		const struct bp_sample_rec *a = &s.samples[i - 1], *b = &s.samples[i];
		assert_true(a->time <= b->time);
		if (a->time == b->time)
			assert_true(a->cpu < b->cpu);	/* ties: the lower CPU first */
	}
	session_free(&s);
}

static void frames_lost_in_transit(void **state)
{
	struct session s;
	uint64_t dropped, dropped_records;

	(void)state;
	open_gen(CAPGEN_ST);
	capgen_meta(G, 1, TSC_HZ, 0, bid, sizeof(bid));
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_flush(G, 0);
	for (int k = 0; k < 3; k++) {
		if (k == 1)
			G->drop = 1;
		for (int i = 0; i < 2000; i++)
			capgen_sample(G, 0, 0, 0xffffffff80000000ull + (uint64_t)(i * 7919 % 65536),
				      (uint64_t)(k * 2000 + i) * 1000, 250000, 1, 0, NULL);
		capgen_flush(G, 0);
	}
	dropped = G->dropped_frames;
	dropped_records = G->dropped_records;
	close_gen(0);
	assert_true(dropped > 0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.loss.frames_lost[WIRE_CH_RECORDS][0], dropped);
	assert_int_equal(s.loss.frames_lost_total, dropped);
	/* Exactly the samples of the lost frames are missing, no more. */
	assert_int_equal(s.nsamples, 6000 - dropped_records);
	session_free(&s);
}

static void callchains_and_identifier(void **state)
{
	struct session s;
	const uint64_t ips[3] = { 0xffffffff80100010ull, 0xffffffff80100105ull, 0xffffffff80100205ull };
	uint64_t st = CAPGEN_ST | BP_SAMPLE_IDENTIFIER | BP_SAMPLE_CALLCHAIN;

	(void)state;
	open_gen(st);
	capgen_meta(G, 1, TSC_HZ, 0, bid, sizeof(bid));
	capgen_event(G, 5, "cycles", 0x3c, 100000);
	capgen_event(G, 9, "instructions", 0xc0, 200000);
	for (int i = 0; i < 10; i++)
		capgen_sample(G, 0, i % 2 ? 9 : 5, ips[0], 100 + i, i % 2 ? 200000 : 100000, 1,
			      3, ips);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.nsamples, 10);
	assert_int_equal(s.nips, 30);
	for (size_t i = 0; i < s.nsamples; i++) {
		const struct bp_sample_rec *x = &s.samples[i];
		assert_int_equal(x->id, i % 2 ? 9 : 5);
		assert_int_equal(x->nr_ips, 3);
		assert_memory_equal(&s.ips[x->ips_off], ips, sizeof(ips));
	}
	char nb[32];
	assert_string_equal(session_event_name(&s, 9, nb, sizeof(nb)), "instructions");
	assert_string_equal(session_event_name(&s, 4, nb, sizeof(nb)), "event 4");
	session_free(&s);
}

/*
 * Sample types without IDENTIFIER or READ are read at fixed offsets: each
 * field where its sample_type puts it, those it leaves out from the
 * stream (CPU), the event (ID, PERIOD) or the chain (IP); a record one
 * word short, or whose chain length disagrees with its size, is refused.
 */
static void sample_layouts(void **state)
{
	static const uint64_t types[] = {
		CAPGEN_ST,
		BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_CPU | BP_SAMPLE_PERIOD,
		BP_SAMPLE_IP | BP_SAMPLE_TIME,
		BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_CALLCHAIN,
		BP_SAMPLE_IP | BP_SAMPLE_ID | BP_SAMPLE_PERIOD | BP_SAMPLE_CALLCHAIN,
	};
	const uint64_t ips[3] = { 0xffffffff80100010ull, 0xffffffff80100105ull, 0xffffffff80100205ull };
	struct session s;

	(void)state;
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		uint64_t st = types[t];
		bool chain = st & BP_SAMPLE_CALLCHAIN;
		uint8_t rec[256] __attribute__((aligned(8))) = { 0 };
		struct bp_record_header h = { BP_RECORD_SAMPLE, 0,
					      (uint16_t)wire_sample_size(st, 0, chain ? 3 : 0) };

		open_gen(st);
		capgen_meta(G, 2, TSC_HZ, 0, bid, sizeof(bid));
		capgen_event(G, 7, "cycles", 0x3c, 4000);
		for (int i = 0; i < 4; i++)
			capgen_sample(G, 1, 7, 0xffffffff80100000ull + 16 * i, 100 + i, 5000 + i, 3,
				      chain ? 3 : 0, ips);
		/* One word short; and (with a chain) one more ip than it holds. */
		h.size -= 8;
		memcpy(rec, &h, sizeof(h));
		capgen_record(G, 1, rec);
		if (chain) {
			h.size += 8;
			memcpy(rec, &h, sizeof(h));
			memset(rec + sizeof(h), 0, sizeof(rec) - sizeof(h));
			rec[h.size - 4 * 8] = 4;	/* nr_ips, before its 3 ips */
			capgen_record(G, 1, rec);
		}
		close_gen(0);
		assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
		assert_int_equal(s.nsamples, 4);
		assert_int_equal(s.loss.bad_samples, chain ? 2 : 1);
		for (size_t i = 0; i < s.nsamples; i++) {
			const struct bp_sample_rec *x = &s.samples[i];
			assert_int_equal(x->ip, st & BP_SAMPLE_IP ? 0xffffffff80100000ull + 16 * i :
						ips[0]);
			assert_int_equal(x->pid, st & BP_SAMPLE_TID ? 3 : 0);
			assert_int_equal(x->tid, st & BP_SAMPLE_TID ? 1 : 0);
			assert_int_equal(x->time, st & BP_SAMPLE_TIME ? 100 + i : 0);
			assert_int_equal(x->id, 7);
			assert_int_equal(x->cpu, 1);
			assert_int_equal(x->period, st & BP_SAMPLE_PERIOD ? 5000 + i : 4000);
			assert_int_equal(x->nr_ips, chain ? 3 : 0);
			if (chain)
				assert_memory_equal(&s.ips[x->ips_off], ips, sizeof(ips));
		}
		session_free(&s);
	}
}

static void sample_before_its_event_is_counted(void **state)
{
	struct session s;

	(void)state;
	/* A sample before its EVENT_DESC is read once the event comes (another
	 * CPU's frames may overtake it); one whose event never comes is not. */
	open_gen(CAPGEN_ST);
	capgen_sample(G, 0, 0, 0x1000, 1, 1, 1, 0, NULL);
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_sample(G, 0, 0, 0x1000, 2, 1, 1, 0, NULL);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.nsamples, 2);
	assert_int_equal(s.loss.bad_samples, 0);
	session_free(&s);
	open_gen(CAPGEN_ST);
	capgen_sample(G, 0, 0, 0x1000, 1, 1, 1, 0, NULL);
	capgen_sample(G, 0, 0, 0x1000, 2, 1, 1, 0, NULL);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.nsamples, 0);
	assert_int_equal(s.loss.bad_samples, 2);
	session_free(&s);
}

/* The run's descriptors staged again on cpu 0, as the kernel's drain
 * repeats them: WIRE_F_REPEAT frames, one record each; event_name names
 * the EVENT_DESC (another name: a damaged repeat). */
static void repeat_descriptors(const char *event_name)
{
	struct wire_framer *l = wire_encoder_framer(&G->enc[0]);
	uint32_t target = l->frame_target;

	capgen_flush(G, 0);
	l->flags = WIRE_F_REPEAT;
	l->frame_target = 1;
	capgen_meta(G, 1, TSC_HZ, 0, bid, sizeof(bid));
	capgen_cpu(G, 0, BP_PMU_SOFT);
	capgen_event(G, 0, event_name, 0, 250000);
	capgen_app(G, 0, true, 1, "loopnest", 10, 0);
	capgen_flush(G, 0);
	l->flags = 0;
	l->frame_target = target;
}

static void repeated_descriptors(void **state)
{
	struct session s;

	(void)state;
	/* The frame of the descriptors is lost: the samples after it wait
	 * for their repeat, read once; equal repeats add nothing; one that
	 * differs is counted as damage, not read. */
	open_gen(CAPGEN_ST);
	capgen_console(G, 0, "app: loopnest: start on cpu 0\n");	/* capgen drops no first frame */
	capgen_meta(G, 1, TSC_HZ, 0, bid, sizeof(bid));
	capgen_cpu(G, 0, BP_PMU_SOFT);
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_app(G, 0, true, 1, "loopnest", 10, 0);
	G->drop = 1;
	capgen_flush(G, 0);
	for (int i = 0; i < 100; i++)
		capgen_sample(G, 0, 0, 0x1000 + (uint64_t)i, 100 + (uint64_t)i, 250000, 1, 0, NULL);
	repeat_descriptors("cpu-clock");
	for (int i = 0; i < 100; i++)
		capgen_sample(G, 0, 0, 0x1000 + (uint64_t)i, 200 + (uint64_t)i, 250000, 1, 0, NULL);
	repeat_descriptors("cpu-clock");
	repeat_descriptors("cycles");
	capgen_app(G, 0, false, 1, "loopnest", 400, 0);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.nsamples, 200);
	assert_int_equal(s.loss.bad_samples, 0);
	assert_true(s.have_meta);
	assert_int_equal(s.nruns, 1);
	assert_int_equal(s.nevents, 1);
	assert_string_equal(s.events[0].name, "cpu-clock");
	assert_int_equal(s.napps, 1);
	assert_true(s.apps[0].stopped);
	assert_true(s.have_cpu_info[0]);
	assert_int_equal(s.loss.repeat_mismatch, 1);
	session_free(&s);
}

struct counted {
	uint64_t n, ips;
};

static int count_cb(void *ctx, const struct session *s, const struct bp_sample_rec *r,
		    const uint64_t *ips)
{
	struct counted *c = ctx;

	(void)s;
	c->n++;
	if (r->nr_ips)
		c->ips += ips[r->nr_ips - 1];
	return 0;
}

static void streaming_keeps_no_samples(void **state)
{
	struct session s;
	struct counted c = { 0, 0 };

	(void)state;
	one_cpu_run();
	assert_int_equal(session_load_cb(&s, path, SESSION_NO_RECORDS | SESSION_NO_CONSOLE,
					 count_cb, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n, 100);
	assert_int_equal(s.nsamples, 100);
	assert_null(s.samples);
	assert_int_equal(s.nrecords, 0);
	assert_int_equal(s.first_time, 2000);
	assert_int_equal(s.last_time, 2000 + 99 * 500000ull);
	assert_int_equal(s.loss.ring_lost[0], 3);
	session_free(&s);
}

static void write_file(const char *p, const void *data, size_t n)
{
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
}

static size_t read_file(const char *p, uint8_t **data)
{
	FILE *f = fopen(p, "rb");
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	*data = malloc((size_t)n);
	assert_non_null(*data);
	assert_int_equal(fread(*data, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return (size_t)n;
}

static void not_a_capture(void **state)
{
	struct session s;

	(void)state;
	write_file(path, "just some text\n", 15);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a bareperf capture"));
	assert_null(strchr(err, '\n'));
	write_file(path, "", 0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "empty file"));
	assert_int_equal(session_load(&s, "/nonexistent/capture.bpc", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
}

static void newer_version(void **state)
{
	struct session s;
	uint8_t *data;
	size_t n;
	struct wire_capture_header h;

	(void)state;
	one_cpu_run();
	n = read_file(path, &data);
	memcpy(&h, data, sizeof(h));
	h.version = 7;
	h.compat_version = 7;
	memcpy(data, &h, sizeof(h));
	write_file(path, data, n);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "newer bareperf"));
	free(data);
}

static void truncated_capture_loads_what_it_holds(void **state)
{
	struct session s;
	uint8_t *data;
	size_t n;

	(void)state;
	open_gen(CAPGEN_ST);
	capgen_meta(G, 1, TSC_HZ, 0, bid, sizeof(bid));
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_flush(G, 0);
	for (int i = 0; i < 5000; i++)
		capgen_sample(G, 0, 0, 0xffffffff80000000ull + (uint64_t)(i * 7919 % 65536), i, 1, 1,
			      0, NULL);
	close_gen(0);
	n = read_file(path, &data);
	/* Cut inside the data: a complete capture shorter than its header says. */
	write_file(path, data, sizeof(struct wire_capture_header) + (n - 512) / 2);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_true(s.truncated);
	assert_non_null(strstr(s.state, "truncated"));
	assert_true(s.have_meta);
	assert_true(s.nsamples > 1000 && s.nsamples < 4000);
	session_free(&s);
	/* Cut inside the header: nothing to load. */
	write_file(path, data, 100);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "truncated"));
	free(data);
}

static void interrupted_capture(void **state)
{
	struct session s;

	(void)state;
	open_gen(CAPGEN_ST);
	capgen_meta(G, 1, TSC_HZ, 0, bid, sizeof(bid));
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_sample(G, 0, 0, 0x1000, 1, 1, 1, 0, NULL);
	close_gen(WIRE_CAPF_INTERRUPTED);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_true(s.interrupted);
	assert_false(s.truncated);
	assert_int_equal(s.nsamples, 1);
	session_free(&s);
}


/* ---- the stream as it arrives: reordered, cut, foreign ---------------- */

#define MAX_CHUNKS	4096

/* A capture's stream split at its delimiters (each chunk was followed by 0x00). */
struct chunks {
	uint8_t *file;
	size_t size, hdr, n;
	size_t off[MAX_CHUNKS], len[MAX_CHUNKS];
};

static void split(const char *p, struct chunks *c)
{
	uint32_t hs;
	size_t at;

	c->size = read_file(p, &c->file);
	memcpy(&hs, c->file + offsetof(struct wire_capture_header, header_size), 4);
	c->hdr = hs;
	c->n = 0;
	for (at = c->hdr; at < c->size;) {
		const uint8_t *z = memchr(c->file + at, 0, c->size - at);
		size_t end = z ? (size_t)(z - c->file) : c->size;
		assert_true(c->n < MAX_CHUNKS);
		c->off[c->n] = at;
		c->len[c->n++] = end - at;
		at = end + 1;
	}
}

/* The frame header of chunk i: false if it is no frame (the boot text). */
static bool chunk_frame(const struct chunks *c, size_t i, struct wire_frame *f)
{
	static uint8_t buf[WIRE_FRAME_MAX];

	return wire_frame_unpack(c->file + c->off[i], c->len[i], buf, sizeof(buf), f) == 0;
}

/* Write the capture again with its chunks in order[0, n), each + 0x00
 * (the last one without if open_end), and extra (if not NULL) as chunk
 * number extra_at. */
static void rewrite_end(const struct chunks *c, const size_t *order, size_t n,
			const uint8_t *extra, size_t extra_len, size_t extra_at, bool open_end)
{
	FILE *f = fopen(path, "wb");
	uint64_t data = 0;
	struct wire_capture_header h;

	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		data += c->len[order[i]] + 1;
	if (extra)
		data += extra_len + 1;
	data -= open_end;
	memcpy(&h, c->file, sizeof(h));
	h.data_size = data;
	assert_int_equal(fwrite(&h, 1, sizeof(h), f), sizeof(h));
	assert_int_equal(fwrite(c->file + sizeof(h), 1, c->hdr - sizeof(h), f), c->hdr - sizeof(h));
	for (size_t i = 0; i <= n; i++) {
		if (extra && i == extra_at) {
			fwrite(extra, 1, extra_len, f);
			fputc(0, f);
		}
		if (i < n) {
			fwrite(c->file + c->off[order[i]], 1, c->len[order[i]], f);
			if (!open_end || i + 1 < n)
				fputc(0, f);
		}
	}
	fclose(f);
}

static void rewrite(const struct chunks *c, const size_t *order, size_t n,
		    const uint8_t *extra, size_t extra_len, size_t extra_at)
{
	rewrite_end(c, order, n, extra, extra_len, extra_at, false);
}

/* Two CPUs, many frames each: 3000 samples on cpu 0, 1000 on cpu 1. */
static void two_cpu_many_frames(void)
{
	open_gen(CAPGEN_ST);
	capgen_meta(G, 2, TSC_HZ, 0, bid, sizeof(bid));
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	for (unsigned c = 0; c < 2; c++) {
		capgen_cpu(G, c, BP_PMU_SOFT);
		capgen_app(G, c, true, 1, "two", 0, 0);
	}
	capgen_flush(G, 0);
	for (int k = 0; k < 30; k++) {
		for (int i = 0; i < 100; i++)
			capgen_sample(G, 0, 0, 0xffffffff80000000ull + (uint64_t)(i * 7919 % 65536),
				      (uint64_t)(k * 100 + i) * 1000, 250000, 1, 0, NULL);
		capgen_flush(G, 0);
		if (k % 3 == 0) {
			for (int i = 0; i < 100; i++)
				capgen_sample(G, 1, 0, 0xffffffff80001000ull + (uint64_t)i,
					      (uint64_t)(k * 100 + i) * 1000 + 1, 250000, 1, 0, NULL);
			capgen_flush(G, 1);
		}
	}
	for (unsigned c = 0; c < 2; c++)
		capgen_app(G, c, false, 1, NULL, 4000000, 0);
	close_gen(0);
}

/* session_load (script, convert, flamegraph) and session_load_cb (report,
 * stat) must give one answer. */
static void one_answer(uint64_t want_samples)
{
	struct session s;
	struct counted c = { 0, 0 };

	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.nsamples, want_samples);
	assert_int_equal(s.loss.bad_samples, 0);
	assert_int_equal(s.loss.frames_lost_total, 0);
	assert_int_equal(s.loss.frames_before_first_total, 0);
	assert_int_equal(s.loss.duplicates, 0);
	assert_int_equal(s.loss.crc_errors + s.loss.bad_frames, 0);
	assert_true(s.complete);
	assert_int_equal(s.napps, 2);
	assert_true(s.apps[0].stopped && s.apps[1].stopped);
	for (size_t i = 1; i < s.nsamples; i++)
		assert_true(s.samples[i - 1].time <= s.samples[i].time);
	session_free(&s);
	assert_int_equal(session_load_cb(&s, path, SESSION_NO_RECORDS | SESSION_NO_CONSOLE,
					 count_cb, &c, err, sizeof(err)), 0);
	assert_int_equal(c.n, want_samples);
	assert_int_equal(s.loss.bad_samples + s.loss.frames_lost_total + s.loss.duplicates, 0);
	session_free(&s);
}

static void frames_out_of_order_give_one_answer(void **state)
{
	struct chunks *c = malloc(sizeof(*c));
	size_t order[MAX_CHUNKS], n = 0, first_rec = 0, cpu1 = 0;
	struct wire_frame f;

	(void)state;
	assert_non_null(c);
	two_cpu_many_frames();
	one_answer(4000);
	split(path, c);
	assert_false(chunk_frame(c, 0, &f));		/* the boot text */
	for (size_t i = 1; i < c->n; i++) {
		if (!c->len[i])
			continue;		/* a CPU's leading 0x00 */
		assert_true(chunk_frame(c, i, &f));
		if (f.channel == WIRE_CH_RECORDS && f.cpu == 0 && !first_rec)
			first_rec = i;		/* RUN_META, EVENT_DESC, ... */
		if (f.channel == WIRE_CH_RECORDS && f.cpu == 1 && !cpu1)
			cpu1 = i;
	}
	assert_true(c->n > 40 && first_rec && cpu1 > first_rec);
	/*
	 * cpu 1's first frame ahead of cpu 0's metadata (its samples come
	 * before any EVENT_DESC), and frame 36 moved ahead of the 8 before it.
	 */
	order[n++] = 0;
	order[n++] = cpu1;
	for (size_t i = 1; i < c->n; i++) {
		if (i == cpu1 || i == 36)
			continue;
		if (i == 28)
			order[n++] = 36;
		order[n++] = i;
	}
	assert_int_equal(n, c->n);
	rewrite(c, order, n, NULL, 0, 0);
	one_answer(4000);
	free(c->file);
	free(c);
}

static bool losses_say(const struct session *s, const char *what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool found;

	session_print_losses(s, f, "# ");
	fclose(f);
	found = strstr(buf, what) != NULL;
	free(buf);
	return found;
}

static void a_stream_without_its_end_says_so(void **state)
{
	struct session s;
	struct chunks *c = malloc(sizeof(*c));
	size_t order[MAX_CHUNKS];
	uint64_t dropped;

	(void)state;
	assert_non_null(c);
	/* Complete: END arrived, nothing to say. */
	one_cpu_run();
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_true(s.complete);
	assert_false(losses_say(&s, "no end"));
	session_free(&s);

	/* Cut exactly at a frame boundary: no sequence gap shows it, but the
	 * END is missing. */
	two_cpu_many_frames();
	split(path, c);
	for (size_t i = 0; i < c->n; i++)
		order[i] = i;
	rewrite(c, order, c->n * 3 / 4, NULL, 0, 0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_false(s.complete);
	assert_true(s.nsamples > 1000 && s.nsamples < 4000);
	assert_int_equal(s.loss.frames_lost_total + s.loss.crc_errors + s.loss.bad_frames, 0);
	assert_true(losses_say(&s, "the capture has no end: the kernel's END never arrived"));
	assert_true(losses_say(&s, "unknown"));
	session_free(&s);

	/* Cut inside a frame: not a damaged frame, still no end. */
	c->len[c->n / 2] /= 2;
	rewrite_end(c, order, c->n / 2 + 1, NULL, 0, 0, true);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_false(s.complete);
	assert_int_equal(s.loss.crc_errors + s.loss.bad_frames, 0);
	assert_true(losses_say(&s, "the capture has no end: it stops inside a frame"));
	session_free(&s);
	free(c->file);

	/* The last frames lost, then END: END's counts show them lost. */
	open_gen(CAPGEN_ST);
	capgen_meta(G, 1, TSC_HZ, 0, bid, sizeof(bid));
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_flush(G, 0);
	for (int i = 0; i < 2000; i++)
		capgen_sample(G, 0, 0, 0xffffffff80000000ull + (uint64_t)(i * 7919 % 65536),
			      (uint64_t)i * 1000, 250000, 1, 0, NULL);
	G->drop = 1;
	capgen_flush(G, 0);
	dropped = G->dropped_frames;
	close_gen(0);
	assert_true(dropped > 0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_true(s.complete);
	assert_int_equal(s.loss.frames_lost[WIRE_CH_RECORDS][0], dropped);
	assert_int_equal(s.dec.tail_lost, dropped);
	assert_true(losses_say(&s, "frames lost in transit"));
	session_free(&s);
	free(c);
}

static void text_outside_the_stream_is_not_damage(void **state)
{
	struct session s;
	static const char halted[] = "bareperf: halted (exit status 0); reset the machine";
	static const uint8_t cut_frame[] = { 0x02, 0x10, 0x01, 0x01, 0x02, 0x05 };
	char e[128];

	(void)state;
	/* A halted machine's last words after its END, cut by QEMU's exit. */
	open_gen(CAPGEN_ST);
	G->no_end = true;
	capgen_meta(G, 1, TSC_HZ, 0, bid, sizeof(bid));
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_sample(G, 0, 0, 0x1000, 1, 1, 1, 0, NULL);
	capgen_flush(G, 0);
	capgen_end(G, 0, 0, true);
	assert_int_equal(capture_append(&G->w, halted, sizeof(halted) - 1, e, sizeof(e)), 0);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.loss.crc_errors + s.loss.bad_frames, 0);
	assert_true(s.complete);
	assert_non_null(strstr(s.console, halted));
	assert_int_equal(s.noise_bytes, 0);
	session_free(&s);

	/* The same with a frame cut after END (an older kernel's CONSOLE frame). */
	open_gen(CAPGEN_ST);
	G->no_end = true;
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_flush(G, 0);
	capgen_end(G, 0, 3, true);
	assert_int_equal(capture_append(&G->w, cut_frame, sizeof(cut_frame), e, sizeof(e)), 0);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.loss.crc_errors + s.loss.bad_frames, 0);
	assert_true(s.complete);
	assert_int_equal(s.dec.end_status, 3);
	session_free(&s);

	/* Boot text and no stream at all: no frame, no damage, no end. */
	open_gen(CAPGEN_ST);
	G->no_end = true;
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.loss.crc_errors + s.loss.bad_frames, 0);
	assert_false(s.complete);
	assert_non_null(strstr(s.console, "booted via capgen"));
	session_free(&s);

	/* Real damage inside the stream still counts. */
	open_gen(CAPGEN_ST);
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_flush(G, 0);
	assert_int_equal(capture_append(&G->w, cut_frame, sizeof(cut_frame), e, sizeof(e)), 0);
	assert_int_equal(capture_append(&G->w, "", 1, e, sizeof(e)), 0);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.loss.crc_errors + s.loss.bad_frames, 1);
	assert_true(s.complete);
	session_free(&s);
}

/* Which CPU ran the app, and whether the run failed: from the records
 * and the kernel's console lines, never assumed. */
static void app_cpu_and_failed_run(void **state)
{
	struct session s;
	uint32_t code;
	char why[160];

	(void)state;
	/* Two CPUs, both write APP_START/APP_STOP, each naming cpu 1. */
	open_gen(CAPGEN_ST);
	G->no_end = true;
	G->main_cpu = 1 + 1;
	capgen_meta(G, 2, TSC_HZ, 0, bid, sizeof(bid));
	capgen_app(G, 0, true, 1, "loopnest", 10, 0);
	capgen_app(G, 1, true, 1, "loopnest", 10, 0);
	capgen_app(G, 0, false, 1, "loopnest", 100, 0);
	capgen_app(G, 1, false, 1, "loopnest", 100, 0);
	capgen_console(G, 0, "bareperf: freq=100000 is above the limit\r\n");
	capgen_flush(G, 0);
	capgen_flush(G, 1);
	capgen_end(G, 0, 2, true);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.napps, 2);
	assert_int_equal(session_app_cpu(&s, 0), 1);
	assert_int_equal(session_app_cpu(&s, 1), 1);
	assert_true(session_run_failed(&s, &code, why, sizeof(why)));
	assert_int_equal(code, 2);
	assert_string_equal(why, "bareperf: freq=100000 is above the limit");
	session_free(&s);

	/* APP_START without main_cpu (an older kernel): unknown on two CPUs,
	 * the one CPU on one; a run that ended with status 0 did not fail. */
	open_gen(CAPGEN_ST);
	capgen_meta(G, 2, TSC_HZ, 0, bid, sizeof(bid));
	capgen_app(G, 0, true, 1, "loopnest", 10, 0);
	capgen_app(G, 1, true, 1, "loopnest", 10, 0);
	capgen_app(G, 1, true, 2, "other", 200, 0);
	capgen_flush(G, 0);
	capgen_flush(G, 1);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.napps, 3);
	assert_int_equal(session_app_cpu(&s, 0), -1);
	assert_int_equal(session_app_cpu(&s, 2), 1);
	assert_false(session_run_failed(&s, &code, why, sizeof(why)));
	session_free(&s);
}

/* A run refused for want of a PMU is known by the END's reason code,
 * not by the words of the console line that says so. */
static void no_pmu_refusal_by_its_code(void **state)
{
	struct session s;

	(void)state;
	open_gen(CAPGEN_ST);
	G->end_reason = WIRE_END_REASON_NO_PMU;
	capgen_console(G, 0, "bareperf: count: 'instructions' cannot be counted without "
		       "performance counters\r\n");
	capgen_end(G, 0, 2, true);
	G->no_end = true;
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_true(session_refused_no_pmu(&s));
	session_free(&s);

	/* The old words with no code: another refusal (or an older kernel). */
	open_gen(CAPGEN_ST);
	capgen_console(G, 0, "bareperf: count: 'instructions' needs a hardware PMU, and this "
		       "machine has none (QEMU TCG)\r\n");
	capgen_end(G, 0, 2, true);
	G->no_end = true;
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_false(session_refused_no_pmu(&s));
	session_free(&s);
}

static void frames_of_another_boot_are_refused(void **state)
{
	struct session s;
	struct chunks *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	size_t order[MAX_CHUNKS], pick = 0;
	struct wire_frame f;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	/* Another boot's capture: an app run and samples of its own. */
	open_gen(CAPGEN_ST);
	capgen_meta(G, 1, TSC_HZ, 0, bid, sizeof(bid));
	capgen_event(G, 0, "cpu-clock", 0, 250000);
	capgen_app(G, 0, true, 9, "other", 0, 0);
	for (int i = 0; i < 79; i++)
		capgen_sample(G, 0, 0, 0x5000 + (uint64_t)i, (uint64_t)i, 1, 9, 0, NULL);
	capgen_flush(G, 0);
	close_gen(0);
	split(path, b);
	for (size_t i = 1; i < b->n && !pick; i++)
		if (b->len[i] && chunk_frame(b, i, &f) && f.channel == WIRE_CH_RECORDS)
			pick = i;
	assert_true(pick);

	two_cpu_many_frames();
	split(path, a);
	for (size_t i = 0; i < a->n; i++)
		order[i] = i;
	/* One valid frame of the other boot spliced into the middle. */
	rewrite(a, order, a->n, b->file + b->off[pick], b->len[pick], a->n / 2);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_int_equal(s.nsamples, 4000);
	assert_int_equal(s.napps, 2);
	assert_int_equal(s.dec.foreign_frames, 1);
	assert_int_equal(s.loss.frames_lost_total + s.loss.duplicates, 0);
	assert_true(losses_say(&s, "frames of another boot refused: 1"));
	session_free(&s);
	free(a->file);
	free(b->file);
	free(a);
	free(b);
}

static void noise_is_not_kept_whole(void **state)
{
	struct session s;
	enum { NOISE = 24 << 20 };
	uint8_t *noise = malloc(1 << 20);
	char e[128];

	(void)state;
	assert_non_null(noise);
	for (size_t i = 0; i < (1 << 20); i++)
		noise[i] = (uint8_t)(1 + (i * 2654435761u >> 13) % 255);	/* never 0x00 */
	open_gen(CAPGEN_ST);
	G->no_end = true;
	for (int k = 0; k < NOISE >> 20; k++)
		assert_int_equal(capture_append(&G->w, noise, 1 << 20, e, sizeof(e)), 0);
	close_gen(0);
	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	assert_true(s.console_len <= SESSION_CONSOLE_MAX);
	assert_int_equal(s.console_len + s.console_dropped,
			 NOISE + strlen(BOOT));
	assert_true(losses_say(&s, "console text not kept"));
	session_free(&s);
	free(noise);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loads_a_run),
		cmocka_unit_test(frames_out_of_order_give_one_answer),
		cmocka_unit_test(a_stream_without_its_end_says_so),
		cmocka_unit_test(text_outside_the_stream_is_not_damage),
		cmocka_unit_test(noise_is_not_kept_whole),
		cmocka_unit_test(frames_of_another_boot_are_refused),
		cmocka_unit_test(losses_are_printed),
		cmocka_unit_test(bench_records_and_end),
		cmocka_unit_test(merges_cpus_by_time),
		cmocka_unit_test(frames_lost_in_transit),
		cmocka_unit_test(callchains_and_identifier),
		cmocka_unit_test(sample_layouts),
		cmocka_unit_test(sample_before_its_event_is_counted),
		cmocka_unit_test(repeated_descriptors),
		cmocka_unit_test(streaming_keeps_no_samples),
		cmocka_unit_test(not_a_capture),
		cmocka_unit_test(newer_version),
		cmocka_unit_test(truncated_capture_loads_what_it_holds),
		cmocka_unit_test(interrupted_capture),
		cmocka_unit_test(app_cpu_and_failed_run),
		cmocka_unit_test(no_pmu_refusal_by_its_code),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
