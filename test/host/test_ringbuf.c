/*
 * test_ringbuf.c — unit tests for ringbuf/: the control page and record
 * ABI, size validation, wrap-around, LOST accounting, nesting, the
 * watermark, overwrite mode, the AUX area, SAMPLE encoding and the reader.
 *
 * Each rule of the ring has a test that fails when the rule is broken.
 * Nesting is exercised two ways: a signal raised between begin and end
 * (the NMI arrives mid-record), and single-stepping a writer with the x86
 * trap flag so that a nested writer runs at every instruction boundary of
 * begin/copy/end, with the published part of the ring checked at every
 * step. No test depends on timing.
 *
 * This file builds twice: test_ringbuf (ASan+UBSan, every test but the
 * single-step one) and test_ringbuf_step (-DRINGBUF_SINGLE_STEP, no
 * sanitizers, -O2 like the kernel: the single-step test alone; each trap
 * is a debug exception, and instrumented code would multiply them).
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <cmocka.h>

#include <linux/perf_event.h>	/* the oracle for perf's numbers */

#include "ringbuf/ringbuf.h"
#include "ringbuf/callchain.h"

#define PAGE		BP_RING_PAGE_SIZE
#define TEST_RING_ID	0x1d
#define TEST_TYPE	BP_RECORD_BAREPERF_LAST	/* records the tests write */

/* Helpers both builds compile; each build uses some of them. */
#define HELPER		static __attribute__((unused))

/* ------------------------------------------------------------------ */
/* A ring with its memory and a reader                                 */

struct tr {
	struct bp_ring *rb;
	uint8_t *mem;
	uint64_t ring_size;		/* control page + data: what init gets */
	uint64_t total;			/* + AUX */
	uint64_t aux_offset;
	struct bp_ring_reader rd;
	uint64_t buf[BP_RECORD_MAX / 8];	/* bounce buffer for wrapped records */
};

HELPER struct tr *tr_new_cfg(unsigned data_pages, const struct bp_ring_config *cfg,
			     unsigned aux_pages, uint32_t aux_flags)
{
	struct tr *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->ring_size = (uint64_t)(1 + data_pages) * PAGE;
	t->aux_offset = aux_pages ? t->ring_size : 0;
	t->total = t->ring_size + (uint64_t)aux_pages * PAGE;
	t->mem = aligned_alloc(PAGE, t->total);
	t->rb = aligned_alloc(BP_CACHELINE, sizeof(*t->rb));
	assert_non_null(t->mem);
	assert_non_null(t->rb);
	assert_int_equal(bp_ring_init(t->rb, t->mem, t->ring_size, cfg), 0);
	if (aux_pages)
		assert_int_equal(bp_ring_aux_init(t->rb, t->aux_offset,
						  (uint64_t)aux_pages * PAGE, aux_flags, 0), 0);
	assert_int_equal(bp_ring_reader_init(&t->rd, t->mem, t->total), 0);
	return t;
}

HELPER struct tr *tr_new(unsigned data_pages, uint32_t flags)
{
	struct bp_ring_config cfg = { .flags = flags, .id = TEST_RING_ID };

	return tr_new_cfg(data_pages, &cfg, 0, 0);
}

HELPER void tr_free(struct tr *t)
{
	free(t->mem);
	free(t->rb);
	free(t);
}

/* ------------------------------------------------------------------ */
/* Test records: header, seed, then words derived from the seed         */

HELPER uint64_t pattern(uint64_t seed, uint64_t i)
{
	return seed * 0x9e3779b97f4a7c15ull + i * 0xbf58476d1ce4e5b9ull + 1;
}

HELPER void rec_fill(uint64_t *w, uint32_t size, uint64_t seed)
{
	struct bp_record_header hdr = { .type = TEST_TYPE, .misc = 0, .size = (uint16_t)size };
	uint32_t i;

	memcpy(&w[0], &hdr, sizeof(hdr));
	if (size >= 16)
		w[1] = seed;
	for (i = 2; i < size / 8; i++)
		w[i] = pattern(seed, i);
}

/* A test record is intact: right type, size, and every word. */
HELPER bool rec_intact(const struct bp_record_header *r, uint64_t *seed)
{
	const uint64_t *w = (const uint64_t *)r;
	uint32_t i;

	if (r->type != TEST_TYPE || r->size < 8 || r->size % 8)
		return false;
	if (r->size < 16)
		return true;
	for (i = 2; i < r->size / 8u; i++)
		if (w[i] != pattern(w[1], i))
			return false;
	if (seed)
		*seed = w[1];
	return true;
}

/* No malloc, no large frame: this also runs inside the "NMI" handlers. */
HELPER int put_rec_at(struct bp_ring *rb, uint32_t size, uint64_t seed, uint64_t *pos)
{
	uint64_t w[size / 8 + 1];
	struct bp_ring_handle h;
	int err;

	rec_fill(w, size, seed);
	err = bp_ring_output_begin(rb, &h, size);
	if (err)
		return err;
	if (pos)
		*pos = h.pos;
	if (bp_ring_output_copy(&h, w, size))
		abort();
	bp_ring_output_end(&h);
	return 0;
}

HELPER int put_rec(struct bp_ring *rb, uint32_t size, uint64_t seed)
{
	return put_rec_at(rb, size, seed, NULL);
}

HELPER int next_rec(struct tr *t, const struct bp_record_header **rec)
{
	return bp_ring_read_next(&t->rd, rec, t->buf, sizeof(t->buf));
}

/* Read everything published and release it; returns the record count. */
HELPER int drain(struct tr *t)
{
	const struct bp_record_header *rec;
	int n = 0;

	bp_ring_read_begin(&t->rd);
	while (next_rec(t, &rec) == 1)
		n++;
	bp_ring_read_end(&t->rd);
	return n;
}

/* Move head and tail to pos (a multiple of 8) with one filler record. */
HELPER void tr_seek(struct tr *t, uint64_t pos)
{
	while (pos) {
		uint64_t step = pos > t->rb->max_record ? t->rb->max_record : pos;

		assert_int_equal(put_rec(t->rb, (uint32_t)step, 0), 0);
		drain(t);
		pos -= step;
	}
}

HELPER uint64_t data_head(struct tr *t)
{
	return t->rb->ctl->data_head;
}

#ifndef RINGBUF_SINGLE_STEP

/* ------------------------------------------------------------------ */
/* ABI                                                                 */

static void test_abi_matches_perf(void **state)
{
	(void)state;
	assert_int_equal(BP_RECORD_LOST, PERF_RECORD_LOST);
	assert_int_equal(BP_RECORD_THROTTLE, PERF_RECORD_THROTTLE);
	assert_int_equal(BP_RECORD_UNTHROTTLE, PERF_RECORD_UNTHROTTLE);
	assert_int_equal(BP_RECORD_SAMPLE, PERF_RECORD_SAMPLE);
	assert_int_equal(BP_RECORD_AUX, PERF_RECORD_AUX);
	assert_int_equal(BP_RECORD_ITRACE_START, PERF_RECORD_ITRACE_START);
	assert_int_equal(BP_RECORD_LOST_SAMPLES, PERF_RECORD_LOST_SAMPLES);

	assert_int_equal(BP_SAMPLE_IP, PERF_SAMPLE_IP);
	assert_int_equal(BP_SAMPLE_TID, PERF_SAMPLE_TID);
	assert_int_equal(BP_SAMPLE_TIME, PERF_SAMPLE_TIME);
	assert_int_equal(BP_SAMPLE_ADDR, PERF_SAMPLE_ADDR);
	assert_int_equal(BP_SAMPLE_READ, PERF_SAMPLE_READ);
	assert_int_equal(BP_SAMPLE_CALLCHAIN, PERF_SAMPLE_CALLCHAIN);
	assert_int_equal(BP_SAMPLE_ID, PERF_SAMPLE_ID);
	assert_int_equal(BP_SAMPLE_CPU, PERF_SAMPLE_CPU);
	assert_int_equal(BP_SAMPLE_PERIOD, PERF_SAMPLE_PERIOD);
	assert_int_equal(BP_SAMPLE_IDENTIFIER, PERF_SAMPLE_IDENTIFIER);

	assert_int_equal(BP_AUX_FLAG_TRUNCATED, PERF_AUX_FLAG_TRUNCATED);
	assert_int_equal(BP_AUX_FLAG_OVERWRITE, PERF_AUX_FLAG_OVERWRITE);
	assert_int_equal(BP_AUX_FLAG_PARTIAL, PERF_AUX_FLAG_PARTIAL);
	assert_int_equal(BP_AUX_FLAG_COLLISION, PERF_AUX_FLAG_COLLISION);

	assert_int_equal(BP_MISC_CPUMODE_MASK, PERF_RECORD_MISC_CPUMODE_MASK);
	assert_int_equal(BP_MISC_KERNEL, PERF_RECORD_MISC_KERNEL);
	assert_int_equal(BP_MISC_USER, PERF_RECORD_MISC_USER);
	assert_int_equal(BP_MISC_EXACT_IP, PERF_RECORD_MISC_EXACT_IP);

	assert_int_equal(sizeof(struct bp_record_header), sizeof(struct perf_event_header));
	assert_true(BP_RECORD_BAREPERF_FIRST >= 0x4000);
}

static void test_ctl_layout(void **state)
{
	struct bp_ring_config cfg = { .id = 0x1234 };
	struct tr *t = tr_new_cfg(4, &cfg, 0, 0);
	struct bp_ring_ctl *ctl = t->rb->ctl;

	(void)state;
	assert_int_equal(sizeof(*ctl), PAGE);
	/* Producer- and consumer-written words on different cache lines. */
	assert_int_equal(offsetof(struct bp_ring_ctl, data_head) / BP_CACHELINE,
			 offsetof(struct bp_ring_ctl, aux_head) / BP_CACHELINE);
	assert_int_equal(offsetof(struct bp_ring_ctl, data_tail) / BP_CACHELINE,
			 offsetof(struct bp_ring_ctl, aux_tail) / BP_CACHELINE);
	assert_int_not_equal(offsetof(struct bp_ring_ctl, data_head) / BP_CACHELINE,
			     offsetof(struct bp_ring_ctl, data_tail) / BP_CACHELINE);

	assert_ptr_equal(ctl, t->mem);
	assert_int_equal(ctl->version, BP_RING_VERSION);
	assert_int_equal(ctl->compat_version, BP_RING_COMPAT_VERSION);
	assert_int_equal(ctl->page_size, PAGE);
	assert_int_equal(ctl->data_offset, PAGE);
	assert_int_equal(ctl->data_size, 4 * PAGE);
	assert_int_equal(ctl->data_watermark, 2 * PAGE);
	assert_int_equal(ctl->ring_id, 0x1234);
	assert_int_equal(ctl->aux_size, 0);
	assert_int_equal(ctl->data_head, 0);
	assert_int_equal(ctl->data_tail, 0);
	tr_free(t);
}

/* ------------------------------------------------------------------ */
/* Size validation                                                     */

static void test_init_sizes_valid(void **state)
{
	static const unsigned pages[] = { 0, 2, 4, 8, 16, 64 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		struct tr *t = tr_new(pages[i], 0);

		assert_int_equal(t->rb->ctl->data_size, (uint64_t)pages[i] * PAGE);
		if (pages[i])
			assert_int_equal(put_rec(t->rb, 16, 1), 0);
		tr_free(t);
	}
}

static void test_init_sizes_refused(void **state)
{
	static const unsigned bad_pages[] = { 1, 3, 5, 6, 7, 9, 12, 33 };
	struct bp_ring_config cfg = { 0 };
	uint64_t size = 65 * PAGE;
	uint8_t *mem = aligned_alloc(PAGE, size);
	struct bp_ring *rb = aligned_alloc(BP_CACHELINE, sizeof(*rb));
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad_pages) / sizeof(bad_pages[0]); i++)
		assert_int_equal(bp_ring_init(rb, mem, (1 + bad_pages[i]) * PAGE, NULL),
				 BP_ERING_SIZE);
	assert_int_equal(bp_ring_init(rb, mem, 0, NULL), BP_ERING_SIZE);
	assert_int_equal(bp_ring_init(rb, mem, 8, NULL), BP_ERING_SIZE);
	assert_int_equal(bp_ring_init(rb, mem, 3 * PAGE + 8, NULL), BP_ERING_SIZE);
	assert_int_equal(bp_ring_init(rb, mem + 64, 3 * PAGE, NULL), BP_ERING_ALIGN);
	assert_int_equal(bp_ring_init(NULL, mem, 3 * PAGE, NULL), BP_ERING_INVAL);
	assert_int_equal(bp_ring_init(rb, NULL, 3 * PAGE, NULL), BP_ERING_INVAL);
	cfg.flags = 0x80;
	assert_int_equal(bp_ring_init(rb, mem, 3 * PAGE, &cfg), BP_ERING_INVAL);
	cfg.flags = 0;
	cfg.watermark = 2 * PAGE + 8;
	assert_int_equal(bp_ring_init(rb, mem, 3 * PAGE, &cfg), BP_ERING_INVAL);
	/* The size error is its own code. */
	assert_int_not_equal(BP_ERING_SIZE, BP_ERING_INVAL);
	assert_int_not_equal(BP_ERING_SIZE, BP_ERING_ALIGN);
	free(mem);
	free(rb);
}

static void test_metadata_only_ring(void **state)
{
	struct tr *t = tr_new(0, 0);
	struct bp_ring_handle h;

	(void)state;
	assert_int_equal(bp_ring_output_begin(t->rb, &h, 16), BP_ERING_NODATA);
	assert_int_equal(bp_ring_lost(t->rb), 0);
	assert_int_equal(bp_ring_aux_init(t->rb, PAGE, PAGE, 0, 0), BP_ERING_NODATA);
	assert_int_equal(bp_ring_read_begin(&t->rd), 0);
	tr_free(t);
}

static void test_record_size_refused(void **state)
{
	struct tr *t = tr_new(2, 0);
	struct bp_ring_handle h;
	static const uint32_t bad[] = { 0, 4, 12, 2 * PAGE + 8, BP_RECORD_MAX + 8, 0xfffffff8u };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(bp_ring_output_begin(t->rb, &h, bad[i]), BP_ERING_RECSIZE);
	assert_int_equal(bp_ring_lost(t->rb), 0);
	assert_int_equal(t->rb->nest, 0);
	assert_int_equal(t->rb->head, 0);
	/* The largest record, the whole data area, fits an empty ring. */
	assert_int_equal(put_rec(t->rb, 2 * PAGE, 7), 0);
	tr_free(t);
}

/* ------------------------------------------------------------------ */
/* Publication, copying, reading                                       */

static void test_publish_at_end(void **state)
{
	struct tr *t = tr_new(2, 0);
	const struct bp_record_header *rec;
	struct bp_ring_handle h;
	uint64_t w[5], seed;

	(void)state;
	rec_fill(w, sizeof(w), 42);
	assert_int_equal(bp_ring_output_begin(t->rb, &h, sizeof(w)), 0);
	assert_int_equal(bp_ring_output_copy(&h, w, 16), 0);
	assert_int_equal(bp_ring_read_begin(&t->rd), 0);
	assert_int_equal(bp_ring_output_copy(&h, (uint8_t *)w + 16, sizeof(w) - 16), 0);
	assert_int_equal(bp_ring_read_begin(&t->rd), 0);
	bp_ring_output_end(&h);
	assert_int_equal(bp_ring_read_begin(&t->rd), sizeof(w));
	assert_int_equal(next_rec(t, &rec), 1);
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 42);
	assert_int_equal(next_rec(t, &rec), 0);
	tr_free(t);
}

static void test_copy_overflow_refused(void **state)
{
	struct tr *t = tr_new(2, 0);
	struct bp_ring_handle h;
	uint64_t w[4];
	uint8_t before[16];

	(void)state;
	rec_fill(w, sizeof(w), 3);
	memcpy(before, t->rb->data + 16, sizeof(before));
	assert_int_equal(bp_ring_output_begin(t->rb, &h, 16), 0);
	assert_int_equal(bp_ring_output_copy(&h, w, 24), BP_ERING_OVERFLOW);
	assert_memory_equal(t->rb->data + 16, before, sizeof(before));
	assert_int_equal(bp_ring_output_copy(&h, w, 8), 0);
	assert_int_equal(bp_ring_output_copy(&h, w, 16), BP_ERING_OVERFLOW);
	assert_int_equal(bp_ring_output_copy(&h, &w[1], 8), 0);
	assert_int_equal(bp_ring_output_copy(&h, w, 1), BP_ERING_OVERFLOW);
	bp_ring_output_end(&h);
	tr_free(t);
}

static void test_output_whole_record(void **state)
{
	struct tr *t = tr_new(2, 0);
	const struct bp_record_header *rec;
	uint64_t w[6], seed;

	(void)state;
	rec_fill(w, sizeof(w), 99);
	assert_int_equal(bp_ring_output(t->rb, w), 0);
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 99);
	tr_free(t);
}

/*
 * Write and read back records of sizes that are odd multiples of 8, so
 * that, over data_size / 8 records, a record starts at every 8-aligned
 * offset of the area and many cross its end.
 */
static void test_wrap_every_offset(void **state)
{
	static const uint32_t sizes[] = { 8, 16, 24, 40, 56, 1016, 4104, 8184 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct tr *t = tr_new(2, 0);
		uint64_t ds = t->rb->data_size, n = ds / 8, k, pos, seed, crossed = 0;
		uint8_t *seen = calloc(n, 1);
		uint64_t covered = 0;

		for (k = 0; k < 2 * n; k++) {
			const struct bp_record_header *rec;

			assert_int_equal(put_rec_at(t->rb, sizes[i], k, &pos), 0);
			if (!seen[(pos & (ds - 1)) / 8]++)
				covered++;
			if ((pos & (ds - 1)) + sizes[i] > ds)
				crossed++;
			assert_int_equal(bp_ring_read_begin(&t->rd), sizes[i]);
			assert_int_equal(next_rec(t, &rec), 1);
			assert_true(rec_intact(rec, &seed));
			if (sizes[i] >= 16)
				assert_int_equal(seed, k);
			assert_int_equal(next_rec(t, &rec), 0);
			bp_ring_read_end(&t->rd);
		}
		/* Odd multiples of 8 reach every offset; 16 reaches half. */
		if (sizes[i] / 8 % 2)
			assert_int_equal(covered, n);
		/* Only sizes that do not divide the area can cross its end. */
		if (ds % sizes[i])
			assert_true(crossed > 0);
		free(seen);
		tr_free(t);
	}
}

static void test_record_crossing_end(void **state)
{
	struct tr *t = tr_new(2, 0);
	uint64_t ds = t->rb->data_size, w[5], seed;
	const struct bp_record_header *rec;
	uint8_t small[16];

	(void)state;
	tr_seek(t, ds - 16);
	rec_fill(w, sizeof(w), 77);
	assert_int_equal(put_rec(t->rb, sizeof(w), 77), 0);
	/* 16 bytes at the end of the area, 24 at its start. */
	assert_memory_equal(t->rb->data + ds - 16, w, 16);
	assert_memory_equal(t->rb->data, (uint8_t *)w + 16, 24);

	bp_ring_read_begin(&t->rd);
	assert_int_equal(bp_ring_read_next(&t->rd, &rec, small, sizeof(small)), BP_ERING_BUFSZ);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_ptr_equal(rec, (void *)t->buf);
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 77);
	bp_ring_read_end(&t->rd);

	/* An 8-byte record in the last 8 bytes is read in place. */
	tr_seek(t, ds - 8 - 24);
	assert_int_equal(put_rec(t->rb, 8, 0), 0);
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_ptr_equal(rec, t->rb->data + ds - 8);
	tr_free(t);
}

/* A: the producer never writes over what the consumer has not released (D). */
static void test_no_overwrite_unread(void **state)
{
	struct tr *t = tr_new(2, 0);
	uint64_t ds = t->rb->data_size, n;
	const struct bp_record_header *rec;
	int i;

	(void)state;
	for (n = 0; n < ds / 64; n++)
		assert_int_equal(put_rec(t->rb, 64, n), 0);
	assert_int_equal(bp_ring_free(t->rb), 0);
	assert_int_equal(put_rec(t->rb, 8, 0), BP_ERING_NOSPACE);

	/* Read everything, release nothing: still full. */
	bp_ring_read_begin(&t->rd);
	for (i = 0; next_rec(t, &rec) == 1; i++)
		assert_true(rec_intact(rec, NULL));
	assert_int_equal(i, ds / 64);
	assert_int_equal(put_rec(t->rb, 8, 0), BP_ERING_NOSPACE);
	assert_int_equal(t->rb->ctl->data_tail, 0);

	bp_ring_read_end(&t->rd);
	assert_int_equal(t->rb->ctl->data_tail, ds);
	assert_int_equal(bp_ring_free(t->rb), ds);
	assert_int_equal(put_rec(t->rb, 64, 1), 0);
	tr_free(t);
}

static void test_reader_rejects_corrupt_header(void **state)
{
	struct tr *t = tr_new(2, 0);
	const struct bp_record_header *rec;
	struct bp_record_header *h = (struct bp_record_header *)t->rb->data;
	static const uint16_t bad[] = { 0, 4, 12, 32 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(put_rec(t->rb, 24, 1), 0);
		h->size = bad[i];	/* 32: larger than the 24 published */
		bp_ring_read_begin(&t->rd);
		assert_int_equal(next_rec(t, &rec), BP_ERING_CORRUPT);
		h->size = 24;
		assert_int_equal(next_rec(t, &rec), 1);
		bp_ring_read_end(&t->rd);
		tr_seek(t, t->rb->data_size - 24);	/* back to offset 0 */
	}
	tr_free(t);
}

static void test_reader_init_validation(void **state)
{
	struct tr *t = tr_new(2, 0);
	struct bp_ring_ctl *ctl = t->rb->ctl;
	struct bp_ring_reader r;

	(void)state;
	assert_int_equal(bp_ring_reader_init(&r, t->mem, t->total), 0);
	assert_int_equal(bp_ring_reader_init(&r, t->mem, t->total - PAGE), BP_ERING_CORRUPT);
	ctl->compat_version = BP_RING_VERSION + 1;
	assert_int_equal(bp_ring_reader_init(&r, t->mem, t->total), BP_ERING_VERSION);
	ctl->compat_version = BP_RING_COMPAT_VERSION;
	ctl->version = 0;
	assert_int_equal(bp_ring_reader_init(&r, t->mem, t->total), BP_ERING_CORRUPT);
	ctl->version = BP_RING_VERSION;
	ctl->data_size = 3 * PAGE;
	assert_int_equal(bp_ring_reader_init(&r, t->mem, 4 * PAGE), BP_ERING_CORRUPT);
	ctl->data_size = 2 * PAGE;
	ctl->aux_size = PAGE;
	ctl->aux_offset = PAGE;		/* overlaps the data area */
	assert_int_equal(bp_ring_reader_init(&r, t->mem, t->total + PAGE), BP_ERING_CORRUPT);
	tr_free(t);
}

/* ------------------------------------------------------------------ */
/* LOST                                                                */

static void read_lost_then(struct tr *t, uint64_t lost, uint64_t seed)
{
	const struct bp_record_header *rec;
	const struct bp_record_lost *l;
	uint64_t s;

	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_int_equal(rec->type, BP_RECORD_LOST);
	assert_int_equal(rec->size, sizeof(*l));
	l = (const struct bp_record_lost *)rec;
	assert_int_equal(l->id, TEST_RING_ID);
	assert_int_equal(l->lost, lost);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_true(rec_intact(rec, &s));
	assert_int_equal(s, seed);
	assert_int_equal(next_rec(t, &rec), 0);
	bp_ring_read_end(&t->rd);
}

static void test_lost_exact_count(void **state)
{
	static const uint64_t counts[] = { 1, 7, 1000 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		struct tr *t = tr_new(2, 0);
		const struct bp_record_header *rec;
		uint64_t k;

		while (put_rec(t->rb, 64, 0) == 0)
			;
		/* The first failure above counts too. */
		for (k = 1; k < counts[i]; k++)
			assert_int_equal(put_rec(t->rb, 64, 0), BP_ERING_NOSPACE);
		assert_int_equal(bp_ring_lost(t->rb), counts[i]);
		drain(t);
		assert_int_equal(put_rec(t->rb, 32, 5), 0);
		assert_int_equal(bp_ring_lost(t->rb), 0);
		read_lost_then(t, counts[i], 5);

		/* Nothing lost since: no LOST record. */
		assert_int_equal(put_rec(t->rb, 32, 6), 0);
		bp_ring_read_begin(&t->rd);
		assert_int_equal(next_rec(t, &rec), 1);
		assert_int_equal(rec->type, TEST_TYPE);
		tr_free(t);
	}
}

/* The LOST record and the record share one reservation: both or neither. */
static void test_lost_needs_room_for_both(void **state)
{
	struct tr *t = tr_new(2, 0);
	uint64_t ds = t->rb->data_size;

	(void)state;
	assert_int_equal(put_rec(t->rb, (uint32_t)(ds - 64), 1), 0);
	assert_int_equal(put_rec(t->rb, 128, 2), BP_ERING_NOSPACE);
	assert_int_equal(bp_ring_lost(t->rb), 1);
	/* 64 bytes free: the record alone would fit, with LOST it does not. */
	assert_int_equal(put_rec(t->rb, 48, 3), BP_ERING_NOSPACE);
	assert_int_equal(bp_ring_lost(t->rb), 2);
	assert_int_equal(put_rec(t->rb, 40, 4), 0);	/* 24 + 40 = 64 */
	assert_int_equal(bp_ring_lost(t->rb), 0);
	bp_ring_read_begin(&t->rd);
	{
		const struct bp_record_header *rec;

		assert_int_equal(next_rec(t, &rec), 1);
		bp_ring_read_end(&t->rd);
	}
	read_lost_then(t, 2, 4);
	tr_free(t);
}

static void test_pause_drops_and_counts(void **state)
{
	struct tr *t = tr_new(2, 0);
	int i;

	(void)state;
	bp_ring_pause(t->rb, true);
	for (i = 0; i < 3; i++)
		assert_int_equal(put_rec(t->rb, 16, 0), BP_ERING_PAUSED);
	assert_int_equal(data_head(t), 0);
	bp_ring_pause(t->rb, false);
	assert_int_equal(put_rec(t->rb, 16, 9), 0);
	read_lost_then(t, 3, 9);
	tr_free(t);
}

/* ------------------------------------------------------------------ */
/* Nesting: an NMI (signal) arrives between begin and end               */

static struct tr *nest_t;
static int nest_err;
static uint32_t nest_size;

static void nest_handler(int sig)
{
	(void)sig;
	nest_err = put_rec(nest_t->rb, nest_size, 0xb);
}

static void raise_nested(struct tr *t, uint32_t size)
{
	struct sigaction sa = { .sa_handler = nest_handler };

	nest_t = t;
	nest_size = size;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
}

static void test_nested_writer_published_by_outer(void **state)
{
	struct tr *t = tr_new(2, 0);
	const struct bp_record_header *rec;
	struct bp_ring_handle h;
	uint64_t w[6], seed;

	(void)state;
	rec_fill(w, sizeof(w), 0xa);
	assert_int_equal(bp_ring_output_begin(t->rb, &h, sizeof(w)), 0);
	assert_int_equal(bp_ring_output_copy(&h, w, 16), 0);
	raise_nested(t, 40);
	assert_int_equal(nest_err, 0);
	/* The nested record is complete, the outer one is not: nothing shows. */
	assert_int_equal(data_head(t), 0);
	assert_int_equal(bp_ring_output_copy(&h, (uint8_t *)w + 16, sizeof(w) - 16), 0);
	bp_ring_output_end(&h);
	assert_int_equal(data_head(t), sizeof(w) + 40);

	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 0xa);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 0xb);
	assert_int_equal(t->rb->nest, 0);
	tr_free(t);
}

/*
 * An NMI that reserves space after the outermost writer has read the head
 * must still be published by it: the re-check after letting go. The
 * wakeup hook runs at that point (head read and published, nest held),
 * so a record written from it plays that NMI.
 */
static void hook_writes(struct bp_ring *rb, void *arg)
{
	int *calls = arg;

	if ((*calls)++ == 0)
		assert_int_equal(put_rec(rb, 24, 0xc), 0);
}

static void test_nested_after_publish_is_published(void **state)
{
	int calls = 0;
	struct bp_ring_config cfg = { .id = TEST_RING_ID, .watermark = 64,
				      .notify = hook_writes, .notify_arg = &calls };
	struct tr *t = tr_new_cfg(2, &cfg, 0, 0);
	const struct bp_record_header *rec;
	uint64_t seed;

	(void)state;
	assert_int_equal(put_rec(t->rb, 64, 0xa), 0);
	assert_int_equal(calls, 1);
	assert_int_equal(data_head(t), 64 + 24);
	assert_int_equal(t->rb->nest, 0);
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 0xc);
	tr_free(t);
}

#endif /* !RINGBUF_SINGLE_STEP */

#ifdef RINGBUF_SINGLE_STEP

/* ------------------------------------------------------------------ */
/* Single-stepping: a nested writer at every instruction boundary       */

/*
 * With EFLAGS.TF set the CPU traps after every instruction (SDM Vol. 3B
 * §17.3.1.4, single-step); Linux turns the trap into SIGTRAP. The handler
 * plays an NMI: at one chosen step it runs a second writer on the same
 * ring, and at every step it checks what a consumer would see. Only
 * instructions of this executable count as steps (not the sanitizer
 * runtime's), and the records are prepared before stepping starts, so a
 * run is a few hundred steps: begin, copy, end.
 */
#define EFLAGS_TF	0x100

extern const char __executable_start[], etext[];

static void trap_flag(bool on)
{
	if (on)
		__asm__ __volatile__("pushfq; orq %0, (%%rsp); popfq" : : "i"(EFLAGS_TF) : "memory", "cc");
	else
		__asm__ __volatile__("pushfq; andq %0, (%%rsp); popfq" : : "i"(~EFLAGS_TF) : "memory", "cc");
}

struct ss_scenario {
	const char *name;
	void (*setup)(struct tr *t);
	void (*outer)(struct tr *t);		/* runs single-stepped */
	void (*nested)(struct tr *t);		/* the NMI, at one step */
	void (*verify)(struct tr *t);		/* after both */
	uint32_t flags;				/* ring flags */
	unsigned aux_pages;
};

#define SS_AUX_A	256			/* AUX bytes of the outer writer */
#define SS_AUX_B	128			/* ... of the nested one */

static struct {
	const struct ss_scenario *sc;
	struct tr *t;
	long step, inject_at;
	bool injected;
	uint64_t last_head;
	long violations;
	long nested_refused, nested_ok;
} ss;

static uint64_t ss_rec_a[6], ss_rec_b[5];	/* filled before stepping */
static uint8_t ss_aux_a[SS_AUX_A], ss_aux_b[SS_AUX_B];

static uint8_t ss_aux_byte(uint64_t len, uint64_t i)
{
	return (uint8_t)(len + 3 * i);
}

static void ss_prepare(void)
{
	uint64_t i;

	rec_fill(ss_rec_a, sizeof(ss_rec_a), 0xa);
	rec_fill(ss_rec_b, sizeof(ss_rec_b), 0xb);
	for (i = 0; i < SS_AUX_A; i++)
		ss_aux_a[i] = ss_aux_byte(SS_AUX_A, i);
	for (i = 0; i < SS_AUX_B; i++)
		ss_aux_b[i] = ss_aux_byte(SS_AUX_B, i);
}

/* An AUX record's data: the writer's pattern, chosen by its length. */
static bool ss_aux_intact(const struct bp_ring_reader *r, const struct bp_record_aux *a)
{
	uint8_t data[SS_AUX_A];
	uint64_t i;

	if ((a->aux_size != SS_AUX_A && a->aux_size != SS_AUX_B) ||
	    bp_ring_aux_read(r, a->aux_offset, a->aux_size, data))
		return false;
	for (i = 0; i < a->aux_size; i++)
		if (data[i] != ss_aux_byte(a->aux_size, i))
			return false;
	return true;
}

/*
 * The consumer's view at one instruction boundary: data_head never moves
 * backwards, and everything published parses into complete, intact
 * records, AUX records included with their data.
 */
static void ss_check_published(void)
{
	struct bp_ring_reader r;
	const struct bp_record_header *rec;
	uint64_t buf[64], head;
	bool backward = ss.sc->flags & BP_RING_F_OVERWRITE;
	int ret;

	if (bp_ring_reader_init(&r, ss.t->mem, ss.t->total))
		ss.violations++;
	bp_ring_read_begin(&r);
	head = r.head;
	if (backward ? (int64_t)(head - ss.last_head) > 0 : head < ss.last_head)
		ss.violations++;
	ss.last_head = head;
	while ((ret = bp_ring_read_next(&r, &rec, buf, sizeof(buf))) == 1) {
		if (rec->type == BP_RECORD_LOST)
			continue;
		if (rec->type == BP_RECORD_AUX) {
			if (!ss_aux_intact(&r, (const struct bp_record_aux *)rec))
				ss.violations++;
			continue;
		}
		if (!rec_intact(rec, NULL))
			ss.violations++;
	}
	if (ret < 0)
		ss.violations++;
}

static void ss_trap(int sig, siginfo_t *si, void *ctx)
{
	const ucontext_t *uc = ctx;
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];

	(void)sig;
	(void)si;
	if (rip < (uintptr_t)__executable_start || rip >= (uintptr_t)etext)
		return;
	ss.step++;
	ss_check_published();
	if (!ss.injected && ss.step == ss.inject_at) {
		ss.injected = true;
		ss.sc->nested(ss.t);
	}
}

static __attribute__((noinline)) void ss_run_outer(struct tr *t)
{
	trap_flag(true);
	ss.sc->outer(t);
	trap_flag(false);
}

static long ss_run(const struct ss_scenario *sc, long inject_at)
{
	struct bp_ring_config cfg = { .flags = sc->flags, .id = TEST_RING_ID };
	struct tr *t = tr_new_cfg(2, &cfg, sc->aux_pages, 0);

	memset(&ss.step, 0, sizeof(ss) - offsetof(__typeof__(ss), step));
	ss.sc = sc;
	ss.t = t;
	ss.inject_at = inject_at;
	if (sc->setup)
		sc->setup(t);
	ss.last_head = data_head(t);
	ss_run_outer(t);
	if (inject_at && !ss.injected)
		fail_msg("%s: step %ld never reached", sc->name, inject_at);
	if (!inject_at)
		sc->nested(t);		/* after the outer writer: the reference run */
	ss_check_published();
	assert_int_equal(t->rb->nest, 0);
	assert_int_equal(t->rb->aux_nest, 0);
	assert_int_equal(data_head(t), t->rb->head);	/* all published */
	sc->verify(t);
	tr_free(t);
	return ss.step;
}

/* begin + copy + end of a prepared record, nothing else. */
static int ss_write(struct bp_ring *rb, const uint64_t *w)
{
	const struct bp_record_header *hdr = (const void *)w;
	struct bp_ring_handle h;
	int err;

	err = bp_ring_output_begin(rb, &h, hdr->size);
	if (err)
		return err;
	bp_ring_output_copy(&h, w, 16);		/* in two pieces, as a sampler does */
	bp_ring_output_copy(&h, &w[2], hdr->size - 16u);
	bp_ring_output_end(&h);
	return 0;
}

/* Which of the two writers' records the consumer finds, in any order. */
static unsigned find_seeds(struct tr *t, uint64_t *lost)
{
	const struct bp_record_header *rec;
	unsigned found = 0;
	uint64_t seed;

	*lost = 0;
	bp_ring_read_begin(&t->rd);
	while (next_rec(t, &rec) == 1) {
		if (rec->type == BP_RECORD_LOST) {
			*lost += ((const struct bp_record_lost *)rec)->lost;
			continue;
		}
		assert_true(rec_intact(rec, &seed));
		if (seed == 0xa || seed == 0xb) {
			assert_false(found & (1u << (seed - 0xa)));	/* exactly once */
			found |= 1u << (seed - 0xa);
		}
	}
	return found;
}

static void ss_outer_a(struct tr *t)
{
	if (ss_write(t->rb, ss_rec_a))
		abort();
}

static void ss_nested_b(struct tr *t)
{
	if (ss_write(t->rb, ss_rec_b))
		abort();
}

static void ss_verify_both(struct tr *t)
{
	uint64_t lost;

	assert_int_equal(find_seeds(t, &lost), 3);
	assert_int_equal(lost, 0);
}

/* Three drops pending: whichever writer goes first reports them, once. */
static void ss_setup_lost(struct tr *t)
{
	int i;

	bp_ring_pause(t->rb, true);
	for (i = 0; i < 3; i++)
		assert_int_equal(put_rec(t->rb, 16, 0), BP_ERING_PAUSED);
	bp_ring_pause(t->rb, false);
}

static void ss_verify_lost(struct tr *t)
{
	uint64_t lost;

	assert_int_equal(find_seeds(t, &lost), 3);
	assert_int_equal(lost, 3);
	assert_int_equal(bp_ring_lost(t->rb), 0);
}

/* Room for one of the two: the other is dropped and counted. */
static void ss_setup_full(struct tr *t)
{
	assert_int_equal(put_rec(t->rb, (uint32_t)(t->rb->data_size - sizeof(ss_rec_a)), 0x1), 0);
}

/* The outer writer's record crosses the end of the data area. */
static void ss_setup_wrap(struct tr *t)
{
	tr_seek(t, t->rb->data_size - 24);
}

/* Room for one of the two, and the outer writer's record wraps. */
static void ss_setup_wrap_full(struct tr *t)
{
	tr_seek(t, t->rb->data_size + 24);
	ss_setup_full(t);
}

static void ss_outer_a_may_fail(struct tr *t)
{
	int err = ss_write(t->rb, ss_rec_a);

	if (err && err != BP_ERING_NOSPACE)
		abort();
}

static void ss_nested_b_may_fail(struct tr *t)
{
	int err = ss_write(t->rb, ss_rec_b);

	if (err && err != BP_ERING_NOSPACE)
		abort();
}

static void ss_verify_one(struct tr *t)
{
	uint64_t lost;
	unsigned found = find_seeds(t, &lost);

	assert_true(found == 1 || found == 2);
	assert_int_equal(lost + bp_ring_lost(t->rb), 1);
}

static void ss_verify_backward(struct tr *t)
{
	uint64_t lost;

	bp_ring_pause(t->rb, true);
	assert_int_equal(find_seeds(t, &lost), 3);
}

/* AUX: an AUX writer interrupted at every step by another one. */
static void ss_aux_write(struct tr *t, const uint8_t *data, uint64_t len, bool nested)
{
	struct bp_aux_handle h;
	int err = bp_aux_output_begin(t->rb, &h);

	if (err == BP_EAUX_NESTED && nested) {
		ss.nested_refused++;
		return;
	}
	if (err || bp_aux_output_skip(&h, 8) || bp_aux_output_copy(&h, 0, data, len) ||
	    bp_aux_output_end(&h, len, 0))
		abort();
	if (nested)
		ss.nested_ok++;
}

static void ss_outer_aux(struct tr *t)
{
	ss_aux_write(t, ss_aux_a, SS_AUX_A, false);
}

static void ss_nested_aux(struct tr *t)
{
	ss_aux_write(t, ss_aux_b, SS_AUX_B, true);
}

static void ss_verify_aux(struct tr *t)
{
	const struct bp_record_header *rec;
	int records = 0;

	bp_ring_read_begin(&t->rd);
	while (next_rec(t, &rec) == 1) {
		assert_int_equal(rec->type, BP_RECORD_AUX);
		assert_true(ss_aux_intact(&t->rd, (const struct bp_record_aux *)rec));
		records++;
	}
	/* The nested writer is either refused or completes: never half. */
	assert_int_equal(ss.nested_ok + ss.nested_refused, 1);
	assert_int_equal(records, 1 + ss.nested_ok);
}

static const struct ss_scenario ss_scenarios[] = {
	{ "plain", NULL, ss_outer_a, ss_nested_b, ss_verify_both, 0, 0 },
	{ "lost", ss_setup_lost, ss_outer_a, ss_nested_b, ss_verify_lost, 0, 0 },
	{ "full", ss_setup_full, ss_outer_a_may_fail, ss_nested_b_may_fail, ss_verify_one, 0, 0 },
	{ "wrap", ss_setup_wrap, ss_outer_a, ss_nested_b, ss_verify_both, 0, 0 },
	{ "wrap-full", ss_setup_wrap_full, ss_outer_a_may_fail, ss_nested_b_may_fail,
	  ss_verify_one, 0, 0 },
	{ "overwrite", NULL, ss_outer_a, ss_nested_b, ss_verify_backward, BP_RING_F_OVERWRITE, 0 },
	{ "overwrite-lost", ss_setup_lost, ss_outer_a, ss_nested_b, ss_verify_backward,
	  BP_RING_F_OVERWRITE, 0 },
	{ "aux", NULL, ss_outer_aux, ss_nested_aux, ss_verify_aux, 0, 2 },
};

static void test_nmi_at_every_instruction(void **state)
{
	struct sigaction sa = { .sa_sigaction = ss_trap, .sa_flags = SA_SIGINFO };
	size_t i;

	(void)state;
	ss_prepare();
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, NULL);
	for (i = 0; i < sizeof(ss_scenarios) / sizeof(ss_scenarios[0]); i++) {
		const struct ss_scenario *sc = &ss_scenarios[i];
		long steps, k, refused = 0;

		ss_run(sc, 0);		/* warm-up: binds PLT entries lazily resolved */
		steps = ss_run(sc, 0);

		assert_true(steps > 20);
		for (k = 1; k <= steps; k++) {
			ss_run(sc, k);
			if (ss.violations)
				fail_msg("%s: nested writer at step %ld of %ld: %ld violations",
					 sc->name, k, steps, ss.violations);
			refused += ss.nested_refused;
		}
		/* The guard was met at some steps and not at others. */
		if (sc->aux_pages)
			assert_true(refused > 0 && refused < steps);
	}
	signal(SIGTRAP, SIG_DFL);
}

#endif /* RINGBUF_SINGLE_STEP */

#ifndef RINGBUF_SINGLE_STEP

/* ------------------------------------------------------------------ */
/* Watermark                                                           */

struct hook_log {
	int calls;
	uint64_t head_at_call;
	uint32_t nest_at_call;
	uint64_t tail_at_call;
};

static void hook_log(struct bp_ring *rb, void *arg)
{
	struct hook_log *l = arg;

	l->calls++;
	l->head_at_call = rb->ctl->data_head;
	l->nest_at_call = rb->nest;
	l->tail_at_call = rb->ctl->data_tail;
}

static void check_watermark(uint64_t watermark)
{
	struct hook_log log = { 0 };
	struct bp_ring_config cfg = { .id = TEST_RING_ID, .watermark = watermark,
				      .notify = hook_log, .notify_arg = &log };
	struct tr *t = tr_new_cfg(4, &cfg, 0, 0);
	uint64_t wm = watermark ? watermark : t->rb->data_size / 2;
	uint64_t head = 0, next = wm, k;
	int expected = 0;

	for (k = 0; k < 4 * t->rb->data_size / 40; k++) {
		uint32_t bits;

		assert_int_equal(put_rec(t->rb, 40, k), 0);
		head += 40;
		bits = bp_ring_wakeup_take(t->rb);
		if (head >= next) {
			/* Posted by this record, from the producer, not by draining. */
			expected++;
			next = head + wm;
			assert_int_equal(bits, BP_WAKEUP_DATA);
			assert_int_equal(log.head_at_call, head);
			assert_int_equal(log.nest_at_call, 1);
			drain(t);
		} else {
			assert_int_equal(bits, 0);
		}
		assert_int_equal(log.calls, expected);
		assert_int_equal(bp_ring_wakeup_take(t->rb), 0);
	}
	assert_true(expected >= 7);
	tr_free(t);
}

static void test_watermark_default_half(void **state)
{
	(void)state;
	check_watermark(0);
}

static void test_watermark_custom(void **state)
{
	(void)state;
	check_watermark(1000);
}

/* ------------------------------------------------------------------ */
/* Overwrite mode                                                      */

static uint32_t ow_size(uint64_t i)
{
	return 16 + 8 * (uint32_t)(i % 13);
}

static void test_overwrite_keeps_newest(void **state)
{
	struct tr *t = tr_new(2, BP_RING_F_OVERWRITE);
	const struct bp_record_header *rec;
	uint64_t n = 5000, i, seed, bytes = 0, expect = n - 1;
	int ret;

	(void)state;
	assert_true(t->rb->ctl->flags & BP_RING_F_OVERWRITE);
	for (i = 0; i < n; i++)
		assert_int_equal(put_rec(t->rb, ow_size(i), i), 0);
	bp_ring_pause(t->rb, true);
	assert_int_equal(put_rec(t->rb, 16, 0), BP_ERING_PAUSED);

	assert_int_equal(bp_ring_read_begin(&t->rd), t->rb->data_size);
	while ((ret = next_rec(t, &rec)) == 1) {
		assert_true(rec_intact(rec, &seed));
		assert_int_equal(seed, expect);	/* newest first, none missing */
		assert_int_equal(rec->size, ow_size(seed));
		bytes += rec->size;
		expect--;
	}
	assert_int_equal(ret, 0);
	/* Everything that fits was found; the next older one did not fit. */
	assert_true(bytes <= t->rb->data_size);
	assert_true(bytes + ow_size(expect) > t->rb->data_size);
	tr_free(t);
}

static void test_overwrite_partial_fill(void **state)
{
	struct tr *t = tr_new(2, BP_RING_F_OVERWRITE);
	const struct bp_record_header *rec;
	uint64_t seed;
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		assert_int_equal(put_rec(t->rb, 32, i), 0);
	bp_ring_read_begin(&t->rd);
	for (i = 2; i >= 0; i--) {
		assert_int_equal(next_rec(t, &rec), 1);
		assert_true(rec_intact(rec, &seed));
		assert_int_equal(seed, i);
	}
	assert_int_equal(next_rec(t, &rec), 0);	/* zeroed: never written */
	tr_free(t);
}

static void test_overwrite_every_offset(void **state)
{
	struct tr *t = tr_new(2, BP_RING_F_OVERWRITE);
	uint64_t ds = t->rb->data_size, k, covered = 0, pos, seed;
	uint8_t *seen = calloc(ds / 8, 1);

	(void)state;
	for (k = 0; k < 2 * ds / 8; k++) {
		const struct bp_record_header *rec;

		assert_int_equal(put_rec_at(t->rb, 40, k, &pos), 0);
		if (!seen[(pos & (ds - 1)) / 8]++)
			covered++;
		bp_ring_read_begin(&t->rd);
		assert_int_equal(next_rec(t, &rec), 1);
		assert_true(rec_intact(rec, &seed));
		assert_int_equal(seed, k);
		if (k) {
			assert_int_equal(next_rec(t, &rec), 1);
			assert_true(rec_intact(rec, &seed));
			assert_int_equal(seed, k - 1);
		}
	}
	assert_int_equal(covered, ds / 8);
	free(seen);
	tr_free(t);
}

/* A nested writer may not wrap onto a record the outer one is filling. */
static void test_overwrite_nested_guard(void **state)
{
	struct tr *t = tr_new(2, BP_RING_F_OVERWRITE);
	uint64_t ds = t->rb->data_size, w[BP_RECORD_MAX / 8], seed;
	const struct bp_record_header *rec;
	struct bp_ring_handle h;
	uint32_t big = (uint32_t)ds - 256, lost = sizeof(struct bp_record_lost);

	(void)state;
	rec_fill(w, big, 0xa);
	assert_int_equal(bp_ring_output_begin(t->rb, &h, big), 0);
	assert_int_equal(bp_ring_output_copy(&h, w, 64), 0);
	raise_nested(t, 264);			/* would reach 8 bytes into it */
	assert_int_equal(nest_err, BP_ERING_NOSPACE);
	assert_int_equal(bp_ring_lost(t->rb), 1);
	raise_nested(t, 256 - lost + 8);	/* with its LOST record: 8 too many */
	assert_int_equal(nest_err, BP_ERING_NOSPACE);
	assert_int_equal(bp_ring_lost(t->rb), 2);
	raise_nested(t, 256 - lost);		/* fits exactly */
	assert_int_equal(nest_err, 0);
	assert_int_equal(bp_ring_output_copy(&h, (uint8_t *)w + 64, big - 64), 0);
	bp_ring_output_end(&h);

	bp_ring_pause(t->rb, true);
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 0xb);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_int_equal(rec->type, BP_RECORD_LOST);
	assert_int_equal(((const struct bp_record_lost *)rec)->lost, 2);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 0xa);
	assert_int_equal(next_rec(t, &rec), 0);
	tr_free(t);
}

static void test_overwrite_lost_order(void **state)
{
	struct tr *t = tr_new(2, BP_RING_F_OVERWRITE);
	const struct bp_record_header *rec;
	uint64_t seed;
	int i;

	(void)state;
	assert_int_equal(put_rec(t->rb, 32, 1), 0);
	bp_ring_pause(t->rb, true);
	for (i = 0; i < 3; i++)
		assert_int_equal(put_rec(t->rb, 32, 0), BP_ERING_PAUSED);
	bp_ring_pause(t->rb, false);
	assert_int_equal(put_rec(t->rb, 32, 2), 0);

	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_rec(t, &rec), 1);		/* newest */
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 2);
	assert_int_equal(next_rec(t, &rec), 1);		/* then the drops before it */
	assert_int_equal(rec->type, BP_RECORD_LOST);
	assert_int_equal(((const struct bp_record_lost *)rec)->lost, 3);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_true(rec_intact(rec, &seed));
	assert_int_equal(seed, 1);
	assert_int_equal(next_rec(t, &rec), 0);
	tr_free(t);
}

/* ------------------------------------------------------------------ */
/* AUX                                                                 */

#define AUX_PAGES	4

static struct tr *tr_aux(uint32_t aux_flags)
{
	struct bp_ring_config cfg = { .id = TEST_RING_ID };

	return tr_new_cfg(2, &cfg, AUX_PAGES, aux_flags);
}

static void fill_pattern(uint8_t *p, uint64_t off, uint64_t len)
{
	uint64_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)((off + i) * 7 + 3);
}

static void aux_put(struct bp_aux_handle *h, uint64_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	fill_pattern(p, h->head, len);
	assert_int_equal(bp_aux_output_copy(h, 0, p, len), 0);
	free(p);
}

/* Next AUX record; 0 if the next record is something else or none. */
static int next_aux(struct tr *t, struct bp_record_aux *out)
{
	const struct bp_record_header *rec;

	if (next_rec(t, &rec) != 1 || rec->type != BP_RECORD_AUX)
		return 0;
	memcpy(out, rec, sizeof(*out));
	return 1;
}

static void aux_check_data(struct tr *t, const struct bp_record_aux *a)
{
	uint8_t *got = malloc(a->aux_size + 1), *want = malloc(a->aux_size + 1);

	assert_int_equal(bp_ring_aux_read(&t->rd, a->aux_offset, a->aux_size, got), 0);
	fill_pattern(want, a->aux_offset, a->aux_size);
	assert_memory_equal(got, want, a->aux_size);
	free(got);
	free(want);
}

static void test_aux_init_validation(void **state)
{
	struct tr *t = tr_new(2, 0);
	uint64_t data_end = 3 * PAGE;

	(void)state;
	assert_int_equal(bp_ring_aux_init(t->rb, 2 * PAGE, PAGE, 0, 0), BP_EAUX_OFFSET);
	assert_int_equal(bp_ring_aux_init(t->rb, data_end + 8, PAGE, 0, 0), BP_EAUX_OFFSET);
	assert_int_equal(bp_ring_aux_init(t->rb, data_end, 0, 0, 0), BP_EAUX_SIZE);
	assert_int_equal(bp_ring_aux_init(t->rb, data_end, 3 * PAGE, 0, 0), BP_EAUX_SIZE);
	assert_int_equal(bp_ring_aux_init(t->rb, data_end, PAGE + 8, 0, 0), BP_EAUX_SIZE);
	assert_int_equal(bp_ring_aux_init(t->rb, data_end, PAGE, 0x40, 0), BP_ERING_INVAL);
	assert_int_equal(bp_ring_aux_init(t->rb, data_end, PAGE, 0, 2 * PAGE), BP_ERING_INVAL);
	{
		struct bp_aux_handle h;

		assert_int_equal(bp_aux_output_begin(t->rb, &h), BP_EAUX_NONE);
	}
	tr_free(t);

	t = tr_aux(0);
	assert_int_equal(t->rb->ctl->aux_offset, 3 * PAGE);
	assert_int_equal(t->rb->ctl->aux_size, AUX_PAGES * PAGE);
	assert_int_equal(t->rb->ctl->aux_watermark, AUX_PAGES * PAGE / 2);
	assert_true(t->rb->ctl->aux_offset >= t->rb->ctl->data_offset + t->rb->ctl->data_size);
	assert_int_equal(bp_ring_aux_init(t->rb, 3 * PAGE, PAGE, 0, 0), BP_ERING_INVAL);
	tr_free(t);
}

static void test_aux_begin_bounded_by_tail(void **state)
{
	struct tr *t = tr_aux(0);
	uint64_t as = AUX_PAGES * PAGE;
	struct bp_record_aux a;
	struct bp_aux_handle h;

	(void)state;
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(h.size, as);
	aux_put(&h, 1000);
	assert_int_equal(bp_aux_output_end(&h, 1000, 0), 0);

	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(h.head, 1000);
	assert_int_equal(h.size, as - 1000);
	aux_put(&h, 3000);
	assert_int_equal(bp_aux_output_end(&h, 3000, 0), 0);

	/* The consumer finishes the first record only. */
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_aux(t, &a), 1);
	aux_check_data(t, &a);
	bp_ring_aux_release(&t->rd, a.aux_offset + a.aux_size);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(h.size, as - 3000);
	assert_int_equal(bp_aux_output_end(&h, 0, 0), 0);
	tr_free(t);
}

static void test_aux_full_stops_until_freed(void **state)
{
	struct tr *t = tr_aux(0);
	uint64_t as = AUX_PAGES * PAGE;
	struct bp_record_aux a;
	struct bp_aux_handle h;

	(void)state;
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	aux_put(&h, as);
	assert_int_equal(bp_aux_output_end(&h, as, 0), 0);
	bp_ring_wakeup_take(t->rb);

	assert_int_equal(bp_aux_output_begin(t->rb, &h), BP_EAUX_FULL);
	assert_true(bp_ring_wakeup_take(t->rb) & BP_WAKEUP_AUX);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), BP_EAUX_STOPPED);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), BP_EAUX_STOPPED);

	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_aux(t, &a), 1);
	aux_check_data(t, &a);
	bp_ring_aux_release(&t->rd, 512);	/* part of it */
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(h.size, 512);
	assert_int_equal(h.head, as);
	tr_free(t);
}

static void test_aux_record_only_when_something(void **state)
{
	struct tr *t = tr_aux(0);
	const struct bp_record_header *rec;
	struct bp_record_aux a;
	struct bp_aux_handle h;

	(void)state;
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(bp_aux_output_end(&h, 0, 0), 0);
	assert_int_equal(data_head(t), 0);
	assert_int_equal(t->rb->ctl->aux_head, 0);

	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	aux_put(&h, 100);
	assert_int_equal(bp_aux_output_end(&h, 100, BP_AUX_FLAG_PARTIAL | BP_AUX_FLAG_COLLISION), 0);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(bp_aux_output_end(&h, 0, BP_AUX_FLAG_PARTIAL), 0);
	assert_int_equal(t->rb->ctl->aux_head, 100);

	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_aux(t, &a), 1);
	assert_int_equal(a.header.size, sizeof(a));
	assert_int_equal(a.aux_offset, 0);
	assert_int_equal(a.aux_size, 100);
	assert_int_equal(a.flags, BP_AUX_FLAG_PARTIAL | BP_AUX_FLAG_COLLISION);
	aux_check_data(t, &a);
	assert_int_equal(next_aux(t, &a), 1);
	assert_int_equal(a.aux_offset, 100);
	assert_int_equal(a.aux_size, 0);
	assert_int_equal(a.flags, BP_AUX_FLAG_PARTIAL);
	assert_int_equal(next_rec(t, &rec), 0);
	tr_free(t);
}

static void test_aux_skip(void **state)
{
	struct tr *t = tr_aux(0);
	uint64_t as = AUX_PAGES * PAGE;
	struct bp_record_aux a;
	struct bp_aux_handle h;

	(void)state;
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(bp_aux_output_skip(&h, 24), 0);
	assert_int_equal(h.head, 24);
	assert_int_equal(h.size, as - 24);
	assert_int_equal(bp_aux_output_skip(&h, as - 23), BP_EAUX_SKIP);
	assert_int_equal(h.head, 24);			/* unchanged */
	assert_int_equal(h.size, as - 24);
	aux_put(&h, 40);
	assert_int_equal(bp_aux_output_end(&h, 40, 0), 0);
	assert_int_equal(t->rb->ctl->aux_head, 64);

	/* Padding with nothing after it is undone. */
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(bp_aux_output_skip(&h, 64), 0);
	assert_int_equal(bp_aux_output_end(&h, 0, 0), 0);
	assert_int_equal(t->rb->ctl->aux_head, 64);

	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_aux(t, &a), 1);
	assert_int_equal(a.aux_offset, 24);
	assert_int_equal(a.aux_size, 40);
	aux_check_data(t, &a);
	/* Releasing up to the record's end frees the padding too. */
	bp_ring_aux_release(&t->rd, a.aux_offset + a.aux_size);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(h.size, as);
	tr_free(t);
}

static void test_aux_end_errors(void **state)
{
	struct tr *t = tr_aux(0);
	struct bp_aux_handle h = { 0 };

	(void)state;
	assert_int_equal(bp_aux_output_end(&h, 0, 0), BP_EAUX_HANDLE);
	assert_int_equal(bp_aux_output_skip(&h, 0), BP_EAUX_HANDLE);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(bp_aux_output_end(&h, h.size + 1, 0), BP_EAUX_COMMIT);
	assert_int_equal(bp_aux_output_end(&h, 0, BP_AUX_FLAG_OVERWRITE), BP_EAUX_FLAGS);
	assert_int_equal(bp_aux_output_end(&h, 0, 0x100), BP_EAUX_FLAGS);
	assert_int_equal(bp_aux_output_copy(&h, 1, "x", h.size), BP_ERING_OVERFLOW);
	/* Still open after the refusals. */
	assert_int_equal(bp_aux_output_end(&h, 8, 0), 0);
	assert_int_equal(bp_aux_output_end(&h, 8, 0), BP_EAUX_HANDLE);
	assert_int_equal(t->rb->ctl->aux_head, 8);
	tr_free(t);
}

static struct tr *aux_nest_t;
static int aux_nest_err;

static void aux_nest_handler(int sig)
{
	struct bp_aux_handle h;

	(void)sig;
	aux_nest_err = bp_aux_output_begin(aux_nest_t->rb, &h);
}

static void test_aux_nested_refused(void **state)
{
	struct tr *t = tr_aux(0);
	struct sigaction sa = { .sa_handler = aux_nest_handler };
	struct bp_aux_handle h, h2;
	struct bp_record_aux a;

	(void)state;
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(bp_aux_output_begin(t->rb, &h2), BP_EAUX_NESTED);

	aux_nest_t = t;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	raise(SIGUSR2);
	assert_int_equal(aux_nest_err, BP_EAUX_NESTED);

	/* The refusals left the open handle alone. */
	aux_put(&h, 64);
	assert_int_equal(bp_aux_output_end(&h, 64, 0), 0);
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_aux(t, &a), 1);
	aux_check_data(t, &a);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	tr_free(t);
}

static void test_aux_truncated_stops(void **state)
{
	struct tr *t = tr_aux(0);
	struct bp_record_aux a;
	struct bp_aux_handle h;

	(void)state;
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	aux_put(&h, 200);
	assert_int_equal(bp_aux_output_end(&h, 200, BP_AUX_FLAG_TRUNCATED), 0);
	assert_true(bp_ring_wakeup_take(t->rb) & BP_WAKEUP_AUX);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), BP_EAUX_STOPPED);

	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_aux(t, &a), 1);
	assert_int_equal(a.flags, BP_AUX_FLAG_TRUNCATED);
	assert_int_equal(a.aux_size, 200);
	aux_check_data(t, &a);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), BP_EAUX_STOPPED);
	bp_ring_aux_release(&t->rd, a.aux_offset + a.aux_size);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	tr_free(t);
}

/*
 * Random chunk sizes and a consumer that lags by a random number of
 * records: every chunk read back is intact, so the producer never wrote
 * over data the consumer had not released.
 */
static void test_aux_never_overwrites_unread(void **state)
{
	struct tr *t = tr_aux(0);
	uint64_t as = AUX_PAGES * PAGE, checked = 0, truncated = 0;
	unsigned seed = 1;
	int i;

	(void)state;
	bp_ring_read_begin(&t->rd);
	for (i = 0; i < 20000; i++) {
		struct bp_aux_handle h;
		struct bp_record_aux a;
		int err = bp_aux_output_begin(t->rb, &h);
		int k;

		if (err == 0) {
			uint64_t want = 1 + rand_r(&seed) % (as / 3);
			uint64_t len = want < h.size ? want : h.size;

			assert_true(h.size <= as - (h.head - t->rb->ctl->aux_tail));
			aux_put(&h, len);
			assert_int_equal(bp_aux_output_end(&h, len,
					 len < want ? BP_AUX_FLAG_TRUNCATED : 0), 0);
			truncated += len < want;
		} else {
			assert_true(err == BP_EAUX_FULL || err == BP_EAUX_STOPPED);
		}
		for (k = rand_r(&seed) % 3; k > 0; k--) {
			bp_ring_read_begin(&t->rd);
			if (!next_aux(t, &a))
				break;
			aux_check_data(t, &a);
			checked++;
			bp_ring_read_end(&t->rd);
			bp_ring_aux_release(&t->rd, a.aux_offset + a.aux_size);
		}
	}
	assert_true(checked > 1000);
	assert_true(truncated > 100);
	tr_free(t);
}

static void test_aux_snapshot(void **state)
{
	struct tr *t = tr_aux(BP_RING_F_AUX_OVERWRITE);
	uint64_t as = AUX_PAGES * PAGE;
	struct bp_record_aux a;
	struct bp_aux_handle h;
	int i;

	(void)state;
	assert_true(t->rb->ctl->flags & BP_RING_F_AUX_OVERWRITE);
	for (i = 0; i < 10; i++) {
		assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
		assert_int_equal(h.size, as);		/* never bounded by aux_tail */
		aux_put(&h, as / 3);
		assert_int_equal(bp_aux_output_end(&h, as / 3, i == 5 ? BP_AUX_FLAG_TRUNCATED : 0), 0);
	}
	assert_int_equal(t->rb->ctl->aux_head, 10 * (as / 3));
	bp_ring_read_begin(&t->rd);
	for (i = 0; i < 10; i++) {
		assert_int_equal(next_aux(t, &a), 1);
		assert_true(a.flags & BP_AUX_FLAG_OVERWRITE);
		if (i >= 8)	/* the last aux_size bytes are intact */
			aux_check_data(t, &a);
	}
	tr_free(t);
}

static void test_aux_wraps(void **state)
{
	struct tr *t = tr_aux(0);
	uint64_t as = AUX_PAGES * PAGE;
	struct bp_record_aux a;
	struct bp_aux_handle h;
	uint8_t *raw = t->mem + t->aux_offset;

	(void)state;
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(bp_aux_output_end(&h, as - 100, 0), 0);
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_aux(t, &a), 1);
	bp_ring_aux_release(&t->rd, as - 100);

	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(h.size, as);
	aux_put(&h, 300);
	assert_int_equal(bp_aux_output_end(&h, 300, 0), 0);
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_aux(t, &a), 1);
	assert_int_equal(a.aux_offset, as - 100);
	aux_check_data(t, &a);
	/* 100 bytes at the end of the area, 200 at its start. */
	assert_int_equal(raw[as - 100], (uint8_t)((as - 100) * 7 + 3));
	assert_int_equal(raw[199], (uint8_t)((as + 199) * 7 + 3));
	tr_free(t);
}

static void test_aux_watermark(void **state)
{
	struct tr *t = tr_aux(0);
	uint64_t as = AUX_PAGES * PAGE;
	struct bp_aux_handle h;

	(void)state;
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(bp_aux_output_end(&h, as / 2 - 8, 0), 0);
	assert_false(bp_ring_wakeup_take(t->rb) & BP_WAKEUP_AUX);
	assert_int_equal(bp_aux_output_begin(t->rb, &h), 0);
	assert_int_equal(bp_aux_output_end(&h, 8, 0), 0);
	assert_true(bp_ring_wakeup_take(t->rb) & BP_WAKEUP_AUX);
	tr_free(t);
}

/* ------------------------------------------------------------------ */
/* SAMPLE                                                              */

static const uint64_t sample_bits[] = {
	BP_SAMPLE_IDENTIFIER, BP_SAMPLE_IP, BP_SAMPLE_TID, BP_SAMPLE_TIME, BP_SAMPLE_ADDR,
	BP_SAMPLE_ID, BP_SAMPLE_CPU, BP_SAMPLE_PERIOD, BP_SAMPLE_READ, BP_SAMPLE_CALLCHAIN,
};
#define NR_SAMPLE_BITS (sizeof(sample_bits) / sizeof(sample_bits[0]))

static const struct bp_group_entry group3[] = {
	{ .config = 0xc0, .count = 1111 }, { .config = 0x3c, .count = 2222 },
	{ .config = 0x412e, .count = 33 },
};
static const uint64_t ips4[] = { 0x401000, 0x401234, 0x402000, 0x403000 };

static const struct bp_sample full_sample = {
	.ip = 0x401000, .pid = 7, .tid = 8, .time = 123456789, .addr = 0xdead0,
	.id = 42, .cpu = 3, .period = 100000, .time_enabled = 5000, .time_running = 4000,
	.nr_group = 3, .group = group3, .nr_ips = 4, .ips = ips4,
};

static uint64_t subset_type(unsigned mask)
{
	uint64_t type = 0;
	size_t i;

	for (i = 0; i < NR_SAMPLE_BITS; i++)
		if (mask & (1u << i))
			type |= sample_bits[i];
	return type;
}

static void test_sample_size_all_subsets(void **state)
{
	unsigned mask;

	(void)state;
	for (mask = 0; mask < 1u << NR_SAMPLE_BITS; mask++) {
		uint64_t type = subset_type(mask);
		uint32_t want = 8;
		size_t i;

		for (i = 0; i < NR_SAMPLE_BITS; i++)
			if (mask & (1u << i))
				want += 8;
		if (type & BP_SAMPLE_READ)
			want += 16 + 3 * 16;		/* enabled, running, entries */
		if (type & BP_SAMPLE_CALLCHAIN)
			want += 4 * 8;
		assert_int_equal(bp_sample_size(type, &full_sample), want);
	}
	assert_int_equal(bp_sample_size(BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_CPU,
					&full_sample), 40);
	assert_int_equal(bp_sample_size(1ull << 10, &full_sample), 0);	/* RAW: unsupported */
}

/* The bytes of a full sample, field by field, in perf's order. */
static void test_sample_layout_perf_order(void **state)
{
	struct tr *t = tr_new(2, 0);
	uint64_t type = BP_SAMPLE_SUPPORTED;
	const struct bp_record_header *rec;
	const uint64_t *w;
	uint64_t want[] = {
		0,					/* header, checked apart */
		42,					/* IDENTIFIER */
		0x401000,				/* IP */
		7 | (8ull << 32),			/* TID: pid, tid */
		123456789,				/* TIME */
		0xdead0,				/* ADDR */
		42,					/* ID */
		3,					/* CPU: cpu, res */
		100000,					/* PERIOD */
		3, 5000, 4000,				/* READ: nr, enabled, running */
		0xc0, 1111, 0x3c, 2222, 0x412e, 33,	/*   {config, count} x 3 */
		4, 0x401000, 0x401234, 0x402000, 0x403000,	/* CALLCHAIN */
	};
	size_t i;

	(void)state;
	assert_int_equal(bp_ring_output_sample(t->rb, type, BP_MISC_KERNEL | BP_MISC_EXACT_IP,
					       &full_sample), 0);
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_int_equal(rec->type, BP_RECORD_SAMPLE);
	assert_int_equal(rec->misc, BP_MISC_KERNEL | BP_MISC_EXACT_IP);
	assert_int_equal(rec->size, sizeof(want));
	w = (const uint64_t *)rec;
	for (i = 1; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(w[i], want[i]);
	tr_free(t);
}

static void test_sample_roundtrip(void **state)
{
	struct tr *t = tr_new(16, 0);
	unsigned mask;

	(void)state;
	for (mask = 0; mask < 1u << NR_SAMPLE_BITS; mask++) {
		uint64_t type = subset_type(mask);
		const struct bp_record_header *rec;
		struct bp_sample s;

		assert_int_equal(bp_ring_output_sample(t->rb, type, 0, &full_sample), 0);
		bp_ring_read_begin(&t->rd);
		assert_int_equal(next_rec(t, &rec), 1);
		assert_int_equal(bp_sample_parse(type, rec, &s), 0);
		if (type & BP_SAMPLE_IP)
			assert_int_equal(s.ip, full_sample.ip);
		if (type & BP_SAMPLE_TID) {
			assert_int_equal(s.pid, full_sample.pid);
			assert_int_equal(s.tid, full_sample.tid);
		}
		if (type & BP_SAMPLE_TIME)
			assert_int_equal(s.time, full_sample.time);
		if (type & BP_SAMPLE_ADDR)
			assert_int_equal(s.addr, full_sample.addr);
		if (type & (BP_SAMPLE_ID | BP_SAMPLE_IDENTIFIER))
			assert_int_equal(s.id, full_sample.id);
		if (type & BP_SAMPLE_CPU)
			assert_int_equal(s.cpu, full_sample.cpu);
		if (type & BP_SAMPLE_PERIOD)
			assert_int_equal(s.period, full_sample.period);
		if (type & BP_SAMPLE_READ) {
			assert_int_equal(s.nr_group, 3);
			assert_int_equal(s.time_enabled, 5000);
			assert_int_equal(s.time_running, 4000);
			assert_memory_equal(s.group, group3, sizeof(group3));
		}
		if (type & BP_SAMPLE_CALLCHAIN) {
			assert_int_equal(s.nr_ips, 4);
			assert_memory_equal(s.ips, ips4, sizeof(ips4));
		}
		/* The same record read with another sample_type does not parse. */
		if (type & BP_SAMPLE_IP)
			assert_int_equal(bp_sample_parse(type & ~BP_SAMPLE_IP, rec, &s),
					 BP_ERING_CORRUPT);
		bp_ring_read_end(&t->rd);
	}
	tr_free(t);
}

static void test_sample_refused(void **state)
{
	struct tr *t = tr_new(16, 0);
	struct bp_sample big = full_sample;
	uint64_t *ips = calloc(BP_RECORD_MAX / 8, sizeof(*ips));
	struct bp_record_header hdr = { .type = BP_RECORD_SAMPLE, .size = 8 };
	struct bp_sample s;

	(void)state;
	big.ips = ips;
	big.nr_ips = BP_RECORD_MAX / 8;
	assert_int_equal(bp_ring_output_sample(t->rb, BP_SAMPLE_CALLCHAIN, 0, &big), BP_ERING_SAMPLE);
	assert_int_equal(bp_ring_output_sample(t->rb, 1ull << 12, 0, &full_sample), BP_ERING_SAMPLE);
	assert_int_equal(bp_sample_parse(1ull << 12, &hdr, &s), BP_ERING_SAMPLE);
	assert_int_equal(bp_sample_parse(BP_SAMPLE_IP, &hdr, &s), BP_ERING_CORRUPT);
	hdr.type = BP_RECORD_LOST;
	assert_int_equal(bp_sample_parse(0, &hdr, &s), BP_ERING_CORRUPT);
	assert_int_equal(data_head(t), 0);
	free(ips);
	tr_free(t);
}

/* A SAMPLE read back as sample_type: every one-word field the type names. */
static void check_words_sample(struct tr *t, uint64_t type, uint16_t misc)
{
	const struct bp_record_header *rec;
	struct bp_sample s;

	assert_int_equal(next_rec(t, &rec), 1);
	assert_int_equal(rec->type, BP_RECORD_SAMPLE);
	assert_int_equal(rec->misc, misc);
	assert_int_equal(rec->size, bp_sample_size(type, &full_sample));
	assert_int_equal(bp_sample_parse(type, rec, &s), 0);
	assert_int_equal(s.ip, full_sample.ip);
	assert_int_equal(s.pid, full_sample.pid);
	assert_int_equal(s.tid, full_sample.tid);
	assert_int_equal(s.time, full_sample.time);
	if (type & BP_SAMPLE_ADDR)
		assert_int_equal(s.addr, full_sample.addr);
	assert_int_equal(s.cpu, full_sample.cpu);
	assert_int_equal(s.period, full_sample.period);
}

/*
 * SAMPLEs of one-word fields only (an NMI's usual record: written in
 * place on the fast path) at every 8-aligned offset of the data area, so
 * that some cross its end; then into a full ring (dropped, and the LOST
 * record goes first once there is room) and a paused one.
 */
static void test_sample_words_every_offset(void **state)
{
	static const uint64_t types[] = {
		BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_CPU | BP_SAMPLE_PERIOD,
		BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ADDR | BP_SAMPLE_CPU |
			BP_SAMPLE_PERIOD,
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct tr *t = tr_new(2, 0);
		uint64_t ds = t->rb->data_size, size = bp_sample_size(types[i], &full_sample);
		const struct bp_record_header *rec;
		uint64_t k, crossed = 0;
		int n = 0;

		for (k = 0; k < 2 * ds / 8; k++) {
			uint64_t pos = t->rb->head;

			assert_int_equal(bp_ring_output_sample(t->rb, types[i], BP_MISC_KERNEL,
							       &full_sample), 0);
			crossed += (pos & (ds - 1)) + size > ds;
			bp_ring_read_begin(&t->rd);
			check_words_sample(t, types[i], BP_MISC_KERNEL);
			bp_ring_read_end(&t->rd);
		}
		assert_true(crossed > 0);
		while (bp_ring_output_sample(t->rb, types[i], 0, &full_sample) == 0)
			n++;
		assert_int_equal(n, ds / size);
		assert_int_equal(bp_ring_output_sample(t->rb, types[i], 0, &full_sample),
				 BP_ERING_NOSPACE);
		assert_int_equal(drain(t), n);
		assert_int_equal(bp_ring_output_sample(t->rb, types[i], 0, &full_sample), 0);
		bp_ring_read_begin(&t->rd);
		assert_int_equal(next_rec(t, &rec), 1);
		assert_int_equal(rec->type, BP_RECORD_LOST);
		assert_int_equal(((const struct bp_record_lost *)rec)->lost, 2);
		check_words_sample(t, types[i], 0);
		bp_ring_read_end(&t->rd);
		bp_ring_pause(t->rb, true);
		assert_int_equal(bp_ring_output_sample(t->rb, types[i], 0, &full_sample),
				 BP_ERING_PAUSED);
		assert_int_equal(bp_ring_lost(t->rb), 1);
		tr_free(t);
	}
}

/*
 * SAMPLEs with a call chain (record -g: one-word fields, then the chain)
 * of 1 to 32 addresses at every 8-aligned offset of the data area, so
 * that some cross its end, read back whole; then into a full ring (the
 * LOST record goes first once there is room) and a paused one.
 */
static void test_sample_chain_every_offset(void **state)
{
	const uint64_t type = BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID |
			      BP_SAMPLE_CPU | BP_SAMPLE_PERIOD | BP_SAMPLE_CALLCHAIN;
	struct tr *t = tr_new(2, 0);
	uint64_t ds = t->rb->data_size, k, crossed = 0, ips[32];
	struct bp_sample smp = full_sample, got;
	const struct bp_record_header *rec;
	int n = 0;

	(void)state;
	for (k = 0; k < 32; k++)
		ips[k] = 0x400000 + 0x10 * k;
	smp.ips = ips;
	for (k = 0; k < 3 * ds / 8; k++) {
		uint64_t pos = t->rb->head;

		smp.nr_ips = 1 + k % 32;
		assert_int_equal(bp_ring_output_sample(t->rb, type, BP_MISC_KERNEL, &smp), 0);
		crossed += (pos & (ds - 1)) + bp_sample_size(type, &smp) > ds;
		bp_ring_read_begin(&t->rd);
		assert_int_equal(next_rec(t, &rec), 1);
		assert_int_equal(rec->type, BP_RECORD_SAMPLE);
		assert_int_equal(rec->misc, BP_MISC_KERNEL);
		assert_int_equal(rec->size, bp_sample_size(type, &smp));
		assert_int_equal(bp_sample_parse(type, rec, &got), 0);
		assert_int_equal(got.ip, smp.ip);
		assert_int_equal(got.tid, smp.tid);
		assert_int_equal(got.time, smp.time);
		assert_int_equal(got.id, smp.id);
		assert_int_equal(got.cpu, smp.cpu);
		assert_int_equal(got.period, smp.period);
		assert_int_equal(got.nr_ips, smp.nr_ips);
		assert_memory_equal(got.ips, ips, smp.nr_ips * sizeof(*ips));
		bp_ring_read_end(&t->rd);
	}
	assert_true(crossed > 0);
	smp.nr_ips = 8;
	while (bp_ring_output_sample(t->rb, type, 0, &smp) == 0)
		n++;
	assert_int_equal(n, ds / bp_sample_size(type, &smp));
	assert_int_equal(bp_ring_output_sample(t->rb, type, 0, &smp), BP_ERING_NOSPACE);
	assert_int_equal(drain(t), n);
	assert_int_equal(bp_ring_output_sample(t->rb, type, 0, &smp), 0);
	bp_ring_read_begin(&t->rd);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_int_equal(rec->type, BP_RECORD_LOST);
	assert_int_equal(((const struct bp_record_lost *)rec)->lost, 2);
	assert_int_equal(next_rec(t, &rec), 1);
	assert_int_equal(bp_sample_parse(type, rec, &got), 0);
	assert_int_equal(got.nr_ips, 8);
	assert_memory_equal(got.ips, ips, 8 * sizeof(*ips));
	bp_ring_read_end(&t->rd);
	bp_ring_pause(t->rb, true);
	assert_int_equal(bp_ring_output_sample(t->rb, type, 0, &smp), BP_ERING_PAUSED);
	tr_free(t);
}

/* A stack of 8 frames laid out as x86-64 code with frame pointers builds it. */
static void test_callchain_fp(void **state)
{
	uint64_t stack[64] = { 0 }, ips[16];
	uint64_t lo = (uintptr_t)stack, hi = (uintptr_t)(stack + 64);
	int f;

	(void)state;
	/* Frame f at stack[4f]: [0] = next frame, [1] = return address. */
	for (f = 0; f < 8; f++) {
		stack[4 * f] = f < 7 ? (uintptr_t)&stack[4 * (f + 1)] : 0;
		stack[4 * f + 1] = 0x1000 + f;
	}
	assert_int_equal(bp_callchain_fp(0x999, lo, lo, hi, ips, 16), 9);
	assert_int_equal(ips[0], 0x999);
	for (f = 0; f < 8; f++)
		assert_int_equal(ips[1 + f], 0x1000 + f);

	assert_int_equal(bp_callchain_fp(0x999, lo, lo, hi, ips, 4), 4);	/* max */
	assert_int_equal(bp_callchain_fp(0x999, lo, lo, hi, ips, 0), 0);
	assert_int_equal(bp_callchain_fp(0x999, lo + 4, lo, hi, ips, 16), 1);	/* misaligned */
	assert_int_equal(bp_callchain_fp(0x999, lo - 64, lo, hi, ips, 16), 1);	/* below */
	assert_int_equal(bp_callchain_fp(0x999, hi - 8, lo, hi, ips, 16), 1);	/* frame past hi */
	/* A frame pointing down the stack (a loop) ends the walk. */
	stack[4 * 3] = (uintptr_t)&stack[4];
	assert_int_equal(bp_callchain_fp(0x999, lo, lo, hi, ips, 16), 5);
	/* Bounds cut the chain: only frames inside [lo, hi). */
	stack[4 * 3] = (uintptr_t)&stack[16];
	assert_int_equal(bp_callchain_fp(0x999, lo, lo, lo + 8 * 12, ips, 16), 4);
}

/* The walk's rule as plainly as it reads (ringbuf/callchain.h), checked
 * at every frame: the reference bp_walk_frames must agree with. */
static uint32_t walk_reference(uint64_t ip, uint64_t fp, uint64_t lo, uint64_t hi,
			       uint64_t *ips, uint32_t max, uint64_t stop, uint64_t *next)
{
	uint32_t n = 0;

	ips[n++] = ip;
	while (n < max) {
		if (fp < lo || fp >= hi || hi - fp < 16 || fp % 8)
			break;
		const uint64_t *frame = (const uint64_t *)(uintptr_t)fp;
		if (frame[1] == 0)
			break;
		ips[n++] = frame[1];
		if (frame[0] <= fp)
			break;
		if (stop && frame[1] == stop) {
			*next = frame[0];
			break;
		}
		fp = frame[0];
	}
	return n;
}

static uint64_t walk_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A frame pointer into stack[0..words) for a generated stack: mostly a
 * frame higher up, sometimes the same one or one lower (a loop), 4 bytes
 * off (misaligned), just below the stack or past its end, or 0. */
static uint64_t walk_link(uint64_t *stack, uint32_t words, uint32_t at, uint64_t *x)
{
	uint64_t base = (uintptr_t)stack, r = walk_rand(x) % 100;
	uint32_t up = at + 2 + (uint32_t)(walk_rand(x) % 6);

	if (r < 60)
		return up < words ? base + 8 * up : 0;
	if (r < 66)
		return base + 8 * at;
	if (r < 72)
		return base + 8 * (walk_rand(x) % (at + 1));
	if (r < 78)
		return base + 8 * (walk_rand(x) % words) + 4;
	if (r < 84)
		return base - 8 * (1 + walk_rand(x) % 4);
	if (r < 90)
		return base + 8 * (words - 1 + walk_rand(x) % 3);
	return 0;
}

/* bp_walk_frames (and bp_callchain_fp over it) against the reference on
 * many generated stacks: good chains, loops, misaligned frames, frames
 * outside [lo, hi), zero return addresses, a stop address, every max. */
static void test_callchain_generated(void **state)
{
	enum { WORDS = 48, MAXN = 20 };
	uint64_t stack[WORDS + 8], x = 0x9e3779b97f4a7c15ull;
	uint64_t got[MAXN + 1], want[MAXN + 1];
	uint64_t *s = stack + 4;		/* words below it stay readable */
	const uint64_t stop = 0x5700;

	(void)state;
	for (int round = 0; round < 20000; round++) {
		for (uint32_t i = 0; i < WORDS; i += 2) {
			uint64_t r = walk_rand(&x) % 16;
			s[i] = walk_link(s, WORDS, i, &x);
			s[i + 1] = r == 0 ? 0 : r == 1 ? stop : 0x1000 + i;
		}
		for (uint32_t i = 0; i < 4; i++)
			stack[i] = stack[WORDS + 4 + i] = walk_rand(&x);
		uint64_t lo = (uintptr_t)(s + walk_rand(&x) % 4);
		uint64_t hi = (uintptr_t)(s + WORDS - walk_rand(&x) % 6);
		uint64_t fp = walk_rand(&x) % 8 ? (uintptr_t)(s + 2 * (walk_rand(&x) % 8))
						: walk_link(s, WORDS, 0, &x);
		uint32_t max = 1 + (uint32_t)(walk_rand(&x) % MAXN);
		uint64_t want_next = 1, got_next = 1, use_stop = round % 2 ? stop : 0;
		uint32_t nw = walk_reference(0x999, fp, lo, hi, want, max, use_stop, &want_next);
		uint32_t ng = bp_walk_frames(0x999, fp, lo, hi, got, max, use_stop, &got_next);

		assert_int_equal(ng, nw);
		assert_memory_equal(got, want, nw * sizeof(*got));
		assert_int_equal(got_next, want_next);
		if (!use_stop) {
			assert_int_equal(bp_callchain_fp(0x999, fp, lo, hi, got, max), nw);
			assert_memory_equal(got, want, nw * sizeof(*got));
		}
	}
	/* A stack under 16 bytes from 0 holds no frame. */
	assert_int_equal(bp_walk_frames(0x999, 0, 0, 8, got, MAXN, 0, NULL), 1);
}

/* ------------------------------------------------------------------ */

static void test_strerror(void **state)
{
	int i, j;

	(void)state;
	for (i = 0; i > -BP_ERING_NR_ERRORS; i--) {
		const char *s = bp_ring_strerror(i);

		assert_non_null(s);
		assert_string_not_equal(s, "unknown error");
		for (j = 0; j > i; j--)
			assert_string_not_equal(s, bp_ring_strerror(j));
	}
	assert_string_equal(bp_ring_strerror(-BP_ERING_NR_ERRORS), "unknown error");
	assert_string_equal(bp_ring_strerror(1), "unknown error");
	assert_string_equal(bp_ring_strerror(-1000), "unknown error");
}

#endif /* !RINGBUF_SINGLE_STEP */

int main(void)
{
#ifdef RINGBUF_SINGLE_STEP
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nmi_at_every_instruction),
	};
#else
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_abi_matches_perf),
		cmocka_unit_test(test_ctl_layout),
		cmocka_unit_test(test_init_sizes_valid),
		cmocka_unit_test(test_init_sizes_refused),
		cmocka_unit_test(test_metadata_only_ring),
		cmocka_unit_test(test_record_size_refused),
		cmocka_unit_test(test_publish_at_end),
		cmocka_unit_test(test_copy_overflow_refused),
		cmocka_unit_test(test_output_whole_record),
		cmocka_unit_test(test_wrap_every_offset),
		cmocka_unit_test(test_record_crossing_end),
		cmocka_unit_test(test_no_overwrite_unread),
		cmocka_unit_test(test_reader_rejects_corrupt_header),
		cmocka_unit_test(test_reader_init_validation),
		cmocka_unit_test(test_lost_exact_count),
		cmocka_unit_test(test_lost_needs_room_for_both),
		cmocka_unit_test(test_pause_drops_and_counts),
		cmocka_unit_test(test_nested_writer_published_by_outer),
		cmocka_unit_test(test_nested_after_publish_is_published),
		cmocka_unit_test(test_watermark_default_half),
		cmocka_unit_test(test_watermark_custom),
		cmocka_unit_test(test_overwrite_keeps_newest),
		cmocka_unit_test(test_overwrite_partial_fill),
		cmocka_unit_test(test_overwrite_every_offset),
		cmocka_unit_test(test_overwrite_nested_guard),
		cmocka_unit_test(test_overwrite_lost_order),
		cmocka_unit_test(test_aux_init_validation),
		cmocka_unit_test(test_aux_begin_bounded_by_tail),
		cmocka_unit_test(test_aux_full_stops_until_freed),
		cmocka_unit_test(test_aux_record_only_when_something),
		cmocka_unit_test(test_aux_skip),
		cmocka_unit_test(test_aux_end_errors),
		cmocka_unit_test(test_aux_nested_refused),
		cmocka_unit_test(test_aux_truncated_stops),
		cmocka_unit_test(test_aux_never_overwrites_unread),
		cmocka_unit_test(test_aux_snapshot),
		cmocka_unit_test(test_aux_wraps),
		cmocka_unit_test(test_aux_watermark),
		cmocka_unit_test(test_sample_size_all_subsets),
		cmocka_unit_test(test_sample_layout_perf_order),
		cmocka_unit_test(test_sample_roundtrip),
		cmocka_unit_test(test_sample_refused),
		cmocka_unit_test(test_sample_words_every_offset),
		cmocka_unit_test(test_sample_chain_every_offset),
		cmocka_unit_test(test_callchain_fp),
		cmocka_unit_test(test_callchain_generated),
		cmocka_unit_test(test_strerror),
	};
#endif

	return cmocka_run_group_tests(tests, NULL, NULL);
}
