/*
 * test_coverage — what a report says about a soft-PMU run's ticks, on
 * synthetic captures framed by the kernel's own encoder: the coverage
 * line (ticks due against the samples that arrived, one line per CPU
 * where the run had several) and the losses lines, which stay silent only
 * when every counter is zero — LOST, LOST_SAMPLES, throttling, frames
 * lost, a TICKS account that never came, samples written that did not
 * arrive.
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

#include "test/host/capgen.h"
#include "tools/util/header.h"
#include "tools/util/session.h"

#define TSC_HZ 1000000000ull		/* 1 GHz: a TSC tick is a ns */
#define IP0 0xffffffff80100000ull

static char path[64];
static struct capgen *G;
static char err[512];
static char *cov, *loss;
static int nloss;

static int setup(void **state)
{
	(void)state;
	G = capgen_tmp(path, sizeof(path), "test_coverage");
	return G ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	capgen_tmp_free(G, path);
	return 0;
}

static int clear(void **state)
{
	(void)state;
	free(cov);
	free(loss);
	cov = loss = NULL;
	return 0;
}

/* A cpu-clock run on ncpu CPUs, a tick every 50 us: samples[c] SAMPLE
 * records sent on cpu c, the TICKS account as given (no TICKS if due[c]
 * is ~0), lost_sent[c] in LOST_SAMPLES. */
struct run {
	unsigned ncpu;
	uint64_t due[2], samples[2], sent[2], dropped[2], lost[2], lost_sent[2], throttled[2];
	uint64_t ring_lost[2];
};

static void make(const struct run *r)
{
	assert_int_equal(capgen_open(G, path, CAPGEN_ST, NULL, err, sizeof(err)), 0);
	capgen_meta(G, r->ncpu, TSC_HZ, 0, NULL, 0);
	capgen_event(G, 0, "cpu-clock", 0, 50000);
	for (unsigned c = 0; c < r->ncpu; c++) {
		capgen_cpu(G, c, BP_PMU_SOFT);
		capgen_app(G, c, true, 1, "loopnest", 0, 0);
	}
	capgen_flush(G, 0);
	for (unsigned c = 0; c < r->ncpu; c++) {
		for (uint64_t i = 0; i < r->sent[c]; i++)
			capgen_sample(G, c, 0, IP0 + i % 16, 50000 * (i + 1), 50000, 1, 0, NULL);
		if (r->ring_lost[c])
			capgen_lost(G, c, r->ring_lost[c]);
		if (r->lost_sent[c])
			capgen_lost_samples(G, c, r->lost_sent[c]);
		if (r->due[c] != ~0ull)
			capgen_ticks(G, c, 1, r->due[c], r->samples[c], r->dropped[c], r->lost[c],
				     r->throttled[c]);
		capgen_app(G, c, false, 1, NULL, 50000 * (r->due[c] + 1), 0);
	}
	if (capgen_close(G, 0, err, sizeof(err)))
		fail_msg("capgen_close: %s", err);
}

/* Load the capture; the coverage lines and the losses lines, as text. */
static void load(void)
{
	struct session s;
	size_t len;
	FILE *f;

	assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
	f = open_memstream(&cov, &len);
	header_print_coverage(f, &s, "# ");
	fclose(f);
	f = open_memstream(&loss, &len);
	nloss = session_print_losses(&s, f, "# WARNING: ");
	fclose(f);
	session_free(&s);
}

static void every_tick_sampled(void **state)
{
	struct run r = { .ncpu = 1, .due = { 412 }, .samples = { 412 }, .sent = { 412 } };

	(void)state;
	make(&r);
	load();
	assert_string_equal(cov, "# coverage: 412 ticks due (one every 50.00 us over 20.60 ms, "
			    "HPET counter): 412 samples (100.0%) + 0 lost\n");
	assert_int_equal(nloss, 0);		/* the report may say "losses: none" */
	assert_string_equal(loss, "");
}

/* The busy-host run: most ticks merged into later NMIs. */
static void dropped_ticks(void **state)
{
	struct run r = { .ncpu = 1, .due = { 3040 }, .samples = { 43 }, .sent = { 43 },
			 .lost = { 2997 }, .lost_sent = { 2997 } };

	(void)state;
	make(&r);
	load();
	assert_string_equal(cov, "# coverage: 3040 ticks due (one every 50.00 us over 152.00 ms, "
			    "HPET counter): 43 samples (1.4%) + 2997 lost\n");
	assert_int_equal(nloss, 1);
	assert_non_null(strstr(loss, "# WARNING: LOST_SAMPLES: 2997 samples not taken on cpu 0"));
}

/* Two CPUs: one line each; throttled ticks and ring-full drops named. */
static void two_cpus(void **state)
{
	struct run r = { .ncpu = 2, .due = { 800, 800 }, .samples = { 700, 600 },
			 .sent = { 700, 600 }, .dropped = { 0, 150 }, .lost = { 100, 50 },
			 .lost_sent = { 100, 50 }, .throttled = { 100, 0 },
			 .ring_lost = { 0, 150 } };

	(void)state;
	make(&r);
	load();
	assert_string_equal(cov,
		"# coverage: 800 ticks due on each of 2 CPUs (one every 50.00 us over 40.00 ms, "
		"HPET counter)\n"
		"#   cpu 0: 700 samples (87.5%) + 100 lost (100 of them throttled)\n"
		"#   cpu 1: 600 samples (75.0%) + 50 lost + 150 dropped (ring full)\n");
	assert_non_null(strstr(loss, "LOST: 150 records dropped on cpu 1"));
	assert_non_null(strstr(loss, "LOST_SAMPLES: 100 samples not taken on cpu 0"));
	assert_non_null(strstr(loss, "LOST_SAMPLES: 50 samples not taken on cpu 1"));
}

/* The kernel wrote 50 samples, 40 arrived (a stream cut short without a
 * lost frame to show for it): said in both places. */
static void samples_not_received(void **state)
{
	struct run r = { .ncpu = 1, .due = { 50 }, .samples = { 50 }, .sent = { 40 } };

	(void)state;
	make(&r);
	load();
	assert_string_equal(cov, "# coverage: 50 ticks due (one every 50.00 us over 2500.00 us, "
			    "HPET counter): 40 samples (80.0%) + 0 lost + 10 written, not "
			    "received\n");
	assert_int_equal(nloss, 1);
	assert_non_null(strstr(loss, "samples missing: 10 of the 50 SAMPLE records cpu 0 wrote"));
}

/* No TICKS for a soft-PMU run that stopped: its losses are unknown, never
 * "none". */
static void no_account(void **state)
{
	struct run r = { .ncpu = 1, .due = { ~0ull }, .sent = { 30 } };

	(void)state;
	make(&r);
	load();
	assert_string_equal(cov, "");
	assert_int_equal(nloss, 1);
	assert_non_null(strstr(loss, "ticks unaccounted on cpu 0 (run 1): no TICKS record"));
}

/* An account that does not add up is shown as such, not balanced. */
static void inconsistent_account(void **state)
{
	struct run r = { .ncpu = 1, .due = { 100 }, .samples = { 90 }, .sent = { 90 },
			 .lost = { 5 }, .lost_sent = { 5 } };

	(void)state;
	make(&r);
	load();
	assert_non_null(strstr(cov, "90 samples (90.0%) + 5 lost; the kernel's own account does "
				    "not add up (90 written)"));
}

/* No HPET: cpu-clock ran on the APIC timer (TICKS period 0), whose missed
 * ticks nobody counted: the coverage says so, and so do the losses. */
static void apic_timer_run(void **state)
{
	struct run r = { .ncpu = 1, .due = { ~0ull }, .sent = { 30 } };
	struct bp_record_ticks t = {
		.header = { BP_RECORD_TICKS, 0, sizeof(t) }, .app_id = 1, .cpu = 0, .samples = 30,
	};

	(void)state;
	assert_int_equal(capgen_open(G, path, CAPGEN_ST, NULL, err, sizeof(err)), 0);
	capgen_meta(G, 1, TSC_HZ, 0, NULL, 0);
	capgen_event(G, 0, "cpu-clock", 0, 50000);
	capgen_cpu(G, 0, BP_PMU_SOFT);
	capgen_app(G, 0, true, 1, "loopnest", 0, 0);
	for (uint64_t i = 0; i < r.sent[0]; i++)
		capgen_sample(G, 0, 0, IP0, 50000 * (i + 1), 50000, 1, 0, NULL);
	capgen_record(G, 0, &t);
	capgen_app(G, 0, false, 1, NULL, 50000 * 31, 0);
	if (capgen_close(G, 0, err, sizeof(err)))
		fail_msg("capgen_close: %s", err);
	load();
	assert_string_equal(cov, "# coverage: ticks due unknown (no HPET: cpu-clock on the APIC "
			    "timer, blind while interrupts are off): 30 samples\n");
	assert_int_equal(nloss, 1);
	assert_non_null(strstr(loss, "ticks due unknown on cpu 0 (run 1): no HPET"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(every_tick_sampled, clear),
		cmocka_unit_test_teardown(dropped_ticks, clear),
		cmocka_unit_test_teardown(two_cpus, clear),
		cmocka_unit_test_teardown(samples_not_received, clear),
		cmocka_unit_test_teardown(no_account, clear),
		cmocka_unit_test_teardown(inconsistent_account, clear),
		cmocka_unit_test_teardown(apic_timer_run, clear),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
