/*
 * test_pt — the Intel PT driver (pmu/trace/pt.c) against the PT register model
 * (test/host/pt_model.c), with a real ring and AUX area (ringbuf/):
 * detection from CPUID, the ToPA tables over the AUX pages (multi-entry
 * tables chained by END, one-entry tables, the circle closed), the MSR
 * values written and their order (nothing but TraceEn changes while
 * tracing), the STOP/INT marks, the ToPA PMI committing with
 * aux_output_end and restarting, truncation when the consumer falls
 * behind and the restart once it catches up, every committed byte in
 * order, the IP filter, single-range output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pmu/trace/pt.h"
#include "test/host/pt_model.h"

#define PAGE		4096ull
#define DATA_PAGES	16
#define CTL_BASE	((1ull << 13) | (1ull << 2) | (1ull << 10))	/* BranchEn OS TSCEn */

static const struct pt_model_cfg full = {
	.max_leaf = 0x14, .pt = true, .topa = true, .topa_multi = true, .single_range = true,
	.ip_filter = true, .nr_ranges = 2,
};

struct rig {
	struct bp_ring rb __attribute__((aligned(64)));
	uint8_t *alloc, *mem;
	uint64_t size, aux_off, aux_size;
	uint64_t *tables;
	struct pt_model m;
	struct ipt_caps caps;
	struct ipt_cpu pc;
	/* what the consumer has seen */
	uint8_t *got;
	size_t ngot;
	uint64_t records, truncated, read_to;
};

static struct rig *R;

static void nmi(void *arg)
{
	struct rig *r = arg;

	ipt_cpu_pmi(&r->pc);
}

static struct rig *rig_new(const struct pt_model_cfg *cfg, uint32_t aux_pages, uint64_t lo,
			   uint64_t hi, int *init_rc, char *err, size_t n)
{
	struct rig *r = calloc(1, sizeof(*r));
	uint64_t align = aux_pages * PAGE;

	assert_non_null(r);
	ptm_init(&r->m, cfg);
	r->m.nmi = nmi;
	r->m.nmi_arg = r;
	r->m.lvtpc = 4u << 8;			/* NMI, unmasked */
	r->aux_off = (1 + DATA_PAGES) * PAGE;
	r->aux_size = aux_pages * PAGE;
	r->size = r->aux_off + r->aux_size;
	/* The AUX area naturally aligned (single-range output wants it). */
	r->alloc = aligned_alloc(align, ((r->size + align) + align - 1) / align * align);
	r->mem = r->alloc + align - r->aux_off % align;
	assert_int_equal(bp_ring_init(&r->rb, r->mem, r->aux_off, NULL), 0);
	assert_int_equal(bp_ring_aux_init(&r->rb, r->aux_off, r->aux_size, 0, 0), 0);
	ipt_probe(&r->caps);
	uint32_t tp = ipt_topa_pages(&r->caps, aux_pages);
	r->tables = tp ? aligned_alloc(PAGE, tp * PAGE) : NULL;
	*init_rc = ipt_cpu_init(&r->pc, &r->caps, &r->rb, (uint64_t)(uintptr_t)(r->mem + r->aux_off),
				r->tables, (uint64_t)(uintptr_t)r->tables, lo, hi, err, n);
	r->got = malloc(1 << 22);
	R = r;
	return r;
}

static void rig_free(struct rig *r)
{
	free(r->alloc);
	free(r->tables);
	free(r->got);
	free(r);
}

/* The consumer: AUX records in order, their bytes appended to got. */
static void consume(struct rig *r, bool release)
{
	static uint8_t buf[BP_RECORD_MAX + 8] __attribute__((aligned(8)));
	struct bp_ring_reader rd;
	const struct bp_record_header *rec;

	assert_int_equal(bp_ring_reader_init(&rd, r->mem, r->size), 0);
	bp_ring_read_begin(&rd);
	while (bp_ring_read_next(&rd, &rec, buf, sizeof(buf)) == 1) {
		const struct bp_record_aux *a = (const void *)rec;
		if (rec->type != BP_RECORD_AUX)
			continue;
		r->records++;
		r->truncated += !!(a->flags & BP_AUX_FLAG_TRUNCATED);
		assert_true(a->aux_size <= r->aux_size);
		assert_int_equal(bp_ring_aux_read(&rd, a->aux_offset, a->aux_size, r->got + r->ngot), 0);
		r->ngot += a->aux_size;
		r->read_to = a->aux_offset + a->aux_size;
	}
	bp_ring_read_end(&rd);
	if (release)
		bp_ring_aux_release(&rd, r->read_to);
}

/* Trace bytes: a counter, so order and loss are visible. */
static uint64_t seq;

static void emit(struct rig *r, size_t n)
{
	static uint8_t b[1 << 20];

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(seq++ * 7 + 3);
	ptm_emit(&r->m, b, n);
}

/* got must be runs of the counter sequence; returns the number of runs
 * (1 = no byte lost in between). */
static int runs(const struct rig *r)
{
	int n = r->ngot ? 1 : 0;

	for (size_t i = 1; i < r->ngot; i++) {
		uint8_t want = (uint8_t)(r->got[i - 1] + 7);
		if (r->got[i] != want)
			n++;
	}
	return n;
}

/* ---- tests ---------------------------------------------------------------- */

static void test_probe(void **state)
{
	struct pt_model m;
	struct ipt_caps c;
	struct pt_model_cfg cfg = full;
	(void)state;

	cfg.max_leaf = 0xd;				/* QEMU TCG's qemu64 */
	ptm_init(&m, &cfg);
	assert_int_not_equal(ipt_probe(&c), 0);
	assert_false(c.present);
	assert_non_null(strstr(c.why, "no leaf 14H"));
	cfg = full;
	cfg.pt = false;
	ptm_init(&m, &cfg);
	assert_int_not_equal(ipt_probe(&c), 0);
	assert_non_null(strstr(c.why, "EBX[25] is 0"));
	cfg = full;
	cfg.topa = cfg.topa_multi = cfg.single_range = false;	/* trace transport only */
	ptm_init(&m, &cfg);
	assert_int_not_equal(ipt_probe(&c), 0);
	assert_non_null(strstr(c.why, "neither ToPA nor single-range"));
	ptm_init(&m, &full);
	assert_int_equal(ipt_probe(&c), 0);
	assert_true(c.present && c.topa && c.topa_multi && c.single_range && c.ip_filter);
	assert_int_equal(c.nr_ranges, 2);
	assert_int_equal(m.faults, 0);
}

static void test_topa_layout(void **state)
{
	char err[160];
	int rc;
	(void)state;

	/* Multi-entry tables: 1024 AUX pages = 511 + 511 + 2 regions. */
	struct rig *r = rig_new(&full, 1024, 0, ~0ull, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(r->pc.ntables, 3);
	uint64_t aux = (uint64_t)(uintptr_t)(r->mem + r->aux_off), tab = (uint64_t)(uintptr_t)r->tables;
	for (uint64_t gi = 0; gi < 1024; gi++) {
		uint64_t t = gi / 511, e = gi % 511, v = r->tables[t * 512 + e];
		assert_true((v & ~0xfffull) == aux + gi * PAGE);
		assert_int_equal(v & 0xfff, 0);			/* 4 KiB, no END/INT/STOP */
	}
	assert_true(r->tables[0 * 512 + 511] == ((tab + 1 * PAGE) | 1));
	assert_true(r->tables[1 * 512 + 511] == ((tab + 2 * PAGE) | 1));
	assert_true(r->tables[2 * 512 + 2] == (tab | 1));	/* the circle closes */
	rig_free(r);

	/* One region per table. */
	struct pt_model_cfg one = full;
	one.topa_multi = false;
	r = rig_new(&one, 16, 0, ~0ull, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(r->pc.ntables, 16);
	tab = (uint64_t)(uintptr_t)r->tables;
	for (uint64_t t = 0; t < 16; t++) {
		assert_true((r->tables[t * 512] & ~0xfffull) ==
			    (uint64_t)(uintptr_t)(r->mem + r->aux_off) + t * PAGE);
		assert_true(r->tables[t * 512 + 1] == ((tab + ((t + 1) % 16) * PAGE) | 1));
	}
	assert_int_equal(r->m.nlog, 0);				/* init touches no MSR */
	rig_free(r);
}

static void test_start_msrs(void **state)
{
	char err[160];
	int rc;
	(void)state;

	struct rig *r = rig_new(&full, 16, 0, ~0ull, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(ipt_cpu_start(&r->pc), 0);
	/* Order: status, output base, pointers, then TraceEn last (33.3.2). */
	assert_true(r->m.nlog >= 4);
	assert_int_equal(r->m.log[r->m.nlog - 1].msr, 0x570);
	assert_true(r->m.log[r->m.nlog - 1].val == (CTL_BASE | (1ull << 8) | 1));
	assert_true(ptm_last(&r->m, 0x571) == 0);
	assert_true(ptm_last(&r->m, 0x560) == (uint64_t)(uintptr_t)r->tables);
	assert_true(ptm_last(&r->m, 0x561) == 0x7f);
	/* An empty 64 KiB area: at most 64 KiB - 1 below the limit, whole
	 * regions: STOP|INT on region 14, INT half way on region 7. */
	assert_true((r->tables[14] & 0x14) == 0x14);
	assert_true((r->tables[7] & 0x14) == 0x04);
	for (int i = 0; i < 16; i++)
		if (i != 14 && i != 7)
			assert_int_equal(r->tables[i] & 0x14, 0);
	assert_int_equal(r->m.faults, 0);
	ipt_cpu_stop(&r->pc);
	assert_true(r->m.ctl == (CTL_BASE | (1ull << 8)));	/* TraceEn off, nothing else */
	for (int i = 0; i < 16; i++)
		assert_int_equal(r->tables[i] & 0x14, 0);	/* marks cleared */
	rig_free(r);
}

static void test_pmi_commit_restart(void **state)
{
	char err[160];
	int rc;
	(void)state;

	seq = 0;
	struct rig *r = rig_new(&full, 16, 0, ~0ull, &rc, err, sizeof(err));
	assert_int_equal(ipt_cpu_start(&r->pc), 0);
	emit(r, 8 * PAGE + 100);		/* past the INT region 7 */
	assert_int_equal(r->m.pmis, 1);
	assert_int_equal(r->pc.st.pmis, 1);
	assert_int_equal(r->m.global_status & (1ull << 55), 0);	/* acknowledged */
	assert_int_equal(r->m.lvtpc & (1u << 16), 0);		/* unmasked again */
	assert_true(r->m.ctl & 1);				/* restarted */
	/* The restart put the output where it stood: region 8, offset 100. */
	assert_true(r->m.mask_ptrs == (0x7f | 8ull << 7 | 100ull << 32));
	consume(r, true);
	assert_int_equal(r->records, 1);
	assert_int_equal(r->ngot, 8 * PAGE);
	/* A consumer that keeps up: many laps round the circle, PMIs at the
	 * INT marks, never a stop. */
	for (int i = 0; i < 10; i++) {
		emit(r, 6 * PAGE + 17);
		consume(r, true);
	}
	ipt_cpu_stop(&r->pc);
	consume(r, true);
	assert_int_equal(r->ngot, 8 * PAGE + 100 + 10 * (6 * PAGE + 17));
	assert_int_equal(runs(r), 1);			/* every byte, in order */
	assert_int_equal(r->truncated, 0);
	assert_int_equal(r->m.dropped, 0);
	assert_int_equal(r->m.faults, 0);
	print_message("# %u PMIs, %lu commits\n", r->m.pmis, (unsigned long)r->pc.st.commits);
	rig_free(r);
}

static void test_truncate_and_resume(void **state)
{
	char err[160];
	int rc;
	(void)state;

	seq = 0;
	struct rig *r = rig_new(&full, 16, 0, ~0ull, &rc, err, sizeof(err));
	assert_int_equal(ipt_cpu_start(&r->pc), 0);
	/* No consumer: the STOP region fills, tracing stops, TRUNCATED. */
	emit(r, 40 * PAGE + 5);		/* the dropped count shows in the pattern */
	assert_true(r->pc.paused);
	assert_false(r->m.ctl & 1);
	assert_true(r->m.dropped > 0);
	consume(r, false);
	assert_int_equal(r->truncated, 1);
	assert_true(r->ngot <= 16 * PAGE && r->ngot >= 15 * PAGE);
	/* Nothing unseen was overwritten: one unbroken run. */
	assert_int_equal(runs(r), 1);
	assert_false(ipt_cpu_poll(&r->pc));		/* no room yet */
	/* The consumer catches up; the poll restarts tracing. */
	consume(r, true);
	assert_true(ipt_cpu_poll(&r->pc));
	assert_true(r->m.ctl & 1);
	assert_int_equal(r->m.status, 0);		/* Stopped cleared before TraceEn */
	emit(r, 3 * PAGE);
	ipt_cpu_stop(&r->pc);
	consume(r, true);
	assert_int_equal(runs(r), 2);			/* one gap: the truncation */
	assert_int_equal(r->pc.st.truncated, 1);
	assert_int_equal(r->m.faults, 0);
	rig_free(r);
}

static void test_one_entry_tables(void **state)
{
	struct pt_model_cfg one = full;
	char err[160];
	int rc;
	(void)state;

	seq = 0;
	one.topa_multi = false;
	struct rig *r = rig_new(&one, 16, 0, ~0ull, &rc, err, sizeof(err));
	assert_int_equal(ipt_cpu_start(&r->pc), 0);
	for (int i = 0; i < 12; i++) {
		emit(r, 5 * PAGE + 333);
		consume(r, true);
	}
	ipt_cpu_stop(&r->pc);
	consume(r, true);
	assert_int_equal(r->ngot, 12 * (5 * PAGE + 333));
	assert_int_equal(runs(r), 1);
	assert_int_equal(r->m.faults, 0);
	rig_free(r);
}

static void test_filter(void **state)
{
	char err[160];
	int rc;
	(void)state;

	struct rig *r = rig_new(&full, 16, 0x1000, 0x2000, &rc, err, sizeof(err));
	assert_int_equal(rc, 0);
	assert_int_equal(ipt_cpu_start(&r->pc), 0);
	assert_true(ptm_last(&r->m, 0x580) == 0x1000);
	assert_true(ptm_last(&r->m, 0x581) == 0x1fff);		/* inclusive */
	assert_true(r->m.ctl == (CTL_BASE | (1ull << 8) | 1ull << 32 | 1));
	assert_int_equal(r->m.faults, 0);
	ipt_cpu_stop(&r->pc);
	rig_free(r);

	struct pt_model_cfg nf = full;
	nf.ip_filter = false;
	r = rig_new(&nf, 16, 0x1000, 0x2000, &rc, err, sizeof(err));
	assert_int_not_equal(rc, 0);
	assert_non_null(strstr(err, "no IP filtering"));
	rig_free(r);
}

static void test_single_range(void **state)
{
	struct pt_model_cfg sr = full;
	char err[160];
	int rc;
	(void)state;

	seq = 0;
	sr.topa = sr.topa_multi = false;
	struct rig *r = rig_new(&sr, 16, 0, ~0ull, &rc, err, sizeof(err));
	if (rc)
		fail_msg("%s", err);
	assert_true(r->pc.single);
	assert_int_equal(ipt_cpu_start(&r->pc), 0);
	assert_true(r->m.ctl == (CTL_BASE | 1));			/* no ToPA bit */
	assert_true(ptm_last(&r->m, 0x560) == (uint64_t)(uintptr_t)(r->mem + r->aux_off));
	assert_true(ptm_last(&r->m, 0x561) == (16 * PAGE - 1));	/* the size mask */
	emit(r, 5000);
	ipt_cpu_stop(&r->pc);
	consume(r, true);
	assert_int_equal(r->ngot, 5000);
	assert_int_equal(runs(r), 1);
	assert_int_equal(r->m.faults, 0);
	rig_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe),
		cmocka_unit_test(test_topa_layout),
		cmocka_unit_test(test_start_msrs),
		cmocka_unit_test(test_pmi_commit_restart),
		cmocka_unit_test(test_truncate_and_resume),
		cmocka_unit_test(test_one_entry_tables),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_single_range),
	};
	(void)R;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
