/*
 * test_stat_bench.c — the harness's statistics (apps/bench_stats.c) on any
 * input, and `bareperf stat --bench` (tools/util/stat_bench.c) on sessions
 * built in memory: what a table shows for results below their noise
 * floor, and the rows it names when BENCH records never arrived.
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

#include "apps/bench_stats.h"
#include "tools/util/stat_bench.h"

/* ---- statistics ------------------------------------------------------------ */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* Reference quartile of sorted doubles, linear interpolation at (n-1)q/4. */
static double ref_quartile(const double *v, uint32_t n, int q)
{
	double pos = (double)(n - 1) * q / 4;
	uint32_t i = (uint32_t)pos;

	return i + 1 < n ? v[i] + (v[i + 1] - v[i]) * (pos - i) : v[i];
}

/*
 * For random inputs of every shape (tiny and huge counts, 2n-runs below
 * the n-runs, outliers, 1 to 101 repetitions): the quartiles are ordered,
 * the spread is their difference, the floor is at least the spread and
 * the resolution, and a value is a result only when it clears the floor
 * (so never 0 or below). The quartiles match a floating-point reference.
 */
static void order_holds_for_any_input(void **state)
{
	static uint64_t mn[101], m2n[101], scratch[303];
	(void)state;

	for (int trial = 0; trial < 20000; trial++) {
		uint32_t reps = 1 + (uint32_t)(rnd() % 101);
		uint64_t per = 1 + rnd() % (trial % 3 ? 5000 : 3);
		uint64_t base = rnd() % (trial % 5 ? 100000 : 1000000000ull);
		uint64_t body = rnd() % (trial % 7 ? 1000 : 50);
		for (uint32_t i = 0; i < reps; i++) {
			uint64_t noise1 = rnd() % (trial % 4 ? 50 : 1 + base / 10);
			uint64_t noise2 = rnd() % (trial % 4 ? 50 : 1 + base / 10);
			mn[i] = base + body + noise1;
			m2n[i] = base + 2 * body + noise2;
			if (rnd() % 10 == 0)		/* an outlier, either way */
				(rnd() & 1 ? mn : m2n)[i] += rnd() % 100000;
		}
		uint64_t mn_copy[101], m2n_copy[101];
		memcpy(mn_copy, mn, sizeof(mn));
		memcpy(m2n_copy, m2n, sizeof(m2n));
		struct bench_stats st;
		bench_stats_compute(mn, m2n, reps, per, scratch, &st);
		assert_memory_equal(mn, mn_copy, sizeof(mn));		/* inputs untouched */
		assert_memory_equal(m2n, m2n_copy, sizeof(m2n));
		assert_true(st.q1 <= st.dmed && st.dmed <= st.q3);
		assert_true(st.iqr == (uint64_t)(st.q3 - st.q1));
		assert_true(st.floor == st.iqr + (1000 + per - 1) / per && st.floor >= 1);
		for (unsigned a = 0; a <= BP_BENCH_AGG_AVG; a++) {
			int64_t v = bench_stats_value(&st, a);
			bool shown = bench_above_floor(v, st.floor);
			assert_true(!shown || (v > 0 && (uint64_t)v >= st.floor));
			assert_true(shown || v <= 0 || (uint64_t)v < st.floor);
		}
		/* the quartiles against doubles (x1000 per unit, rounded: within 1) */
		double d[101];
		long long dl[101];
		for (uint32_t i = 0; i < reps; i++)
			dl[i] = (long long)m2n[i] - (long long)mn[i];
		qsort(dl, reps, sizeof(dl[0]), cmp_ll);
		for (uint32_t i = 0; i < reps; i++)
			d[i] = (double)dl[i] * 1000.0 / (double)per;
		for (int q = 1; q <= 3; q++) {
			double want = ref_quartile(d, reps, q);
			int64_t got = q == 1 ? st.q1 : q == 2 ? st.dmed : st.q3;
			assert_true(got >= want - 1.5 && got <= want + 1.5);
		}
		bool same = true;
		for (uint32_t i = 1; i < reps; i++)
			same &= mn[i] == mn[0] && m2n[i] == m2n[0];
		assert_int_equal(st.exact, same);
		if (same)
			assert_int_equal(st.iqr, 0);
	}
}

/* The cases: a 2n-run median below the n-run one is no latency;
 * identical repetitions stay exact, and a body of k counts per unit is
 * exactly k.000 with no spread. */
static void negative_and_exact(void **state)
{
	uint64_t mn[5] = { 1000, 1002, 1001, 1003, 1000 }, m2n[5] = { 998, 1001, 999, 1010, 997 };
	uint64_t scratch[15];
	struct bench_stats st;
	(void)state;

	bench_stats_compute(mn, m2n, 5, 1, scratch, &st);
	assert_true(st.median < 0);
	assert_false(bench_above_floor(st.median, st.floor));
	assert_false(bench_above_floor(st.min, st.floor));

	for (int i = 0; i < 5; i++)
		mn[i] = 5000, m2n[i] = 5000 + 3 * 1000;		/* 3 counts a unit, per = 1000 */
	bench_stats_compute(mn, m2n, 5, 1000, scratch, &st);
	assert_true(st.exact);
	assert_int_equal(st.median, 3000);
	assert_int_equal(st.min, 3000);
	assert_int_equal(st.avg, 3000);
	assert_int_equal(st.iqr, 0);
	assert_int_equal(st.floor, 1);		/* one count over 1000 units, rounded up */
	assert_true(bench_above_floor(st.median, st.floor));

	for (int i = 0; i < 5; i++)
		m2n[i] = mn[i];				/* nothing: 0 is below any floor */
	bench_stats_compute(mn, m2n, 5, 1000, scratch, &st);
	assert_int_equal(st.median, 0);
	assert_false(bench_above_floor(st.median, st.floor));

	/* A value as large as its spread is no result (lfence 0.406, iqr
	 * 0.406); one count more is. */
	assert_false(bench_above_floor(406, bench_noise_floor(406, 1000)));
	assert_true(bench_above_floor(407, bench_noise_floor(406, 1000)));
	assert_int_equal(bench_noise_floor(0, 3), 334);	/* one count in 3 units, rounded up */
	assert_int_equal(bench_noise_floor(UINT64_MAX, 1), UINT64_MAX);

	/* aggregates by name, both ways */
	for (unsigned a = 0; a <= BP_BENCH_AGG_AVG; a++)
		assert_int_equal(bench_agg_parse(bench_agg_name(a)), (int)a);
	assert_int_equal(bench_agg_parse("max"), -1);
	assert_int_equal(bench_agg_parse("med"), -1);
	assert_null(bench_agg_name(7));
}

/* ---- stat --bench ------------------------------------------------------------ */

static struct bp_record_bench mk(uint32_t seq, uint32_t row, const char *table, const char *name,
				 uint64_t param, int64_t median, uint64_t iqr)
{
	struct bp_record_bench b;

	memset(&b, 0, sizeof(b));
	b.header.type = BP_RECORD_BENCH;
	b.header.size = sizeof(b);
	b.app_id = 1;
	snprintf(b.table, sizeof(b.table), "%s", table);
	snprintf(b.name, sizeof(b.name), "%s", name);
	snprintf(b.event, sizeof(b.event), "tsc");
	b.param = param;
	b.param_unit = param ? BP_BENCH_PARAM_BYTES : BP_BENCH_PARAM_NONE;
	b.flags = BP_BENCH_F_TSC;
	b.n_reps = 5;
	b.unroll = 100;
	b.loops = 10;
	b.work = 1;
	b.min = b.median = b.trimmed_mean = median;
	b.max = -22641;				/* never shown */
	b.bench_version = BP_BENCH_VERSION;
	b.agg = BP_BENCH_AGG_MEDIAN;
	b.seq = seq;
	b.table_row = row;
	b.iqr = iqr;
	return b;
}

static char *print(const struct session *s, int agg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	stat_bench_print(f, s, agg);
	fclose(f);
	return buf;
}

/* A column never shows a value below its floor as a result: "< F", with
 * the note; the max column is gone; --agg picks the aggregate. */
static void below_floor_is_marked(void **state)
{
	struct bp_record_bench b[3] = {
		mk(1, 1, "insn", "add r64 lat", 0, 1000, 0),
		mk(2, 2, "insn", "mfence", 0, -328, 120),	/* negative */
		mk(3, 3, "insn", "pause", 0, 276000, 300000),	/* inside its spread */
	};
	struct session s;
	(void)state;

	memset(&s, 0, sizeof(s));
	b[0].min = 900;
	s.benches = b;
	s.nbenches = 3;
	char *out = print(&s, -1);
	assert_non_null(strstr(out, "  median:2n-n"));
	assert_non_null(strstr(out, "iqr"));
	const char *head = strstr(out, "  name");
	assert_non_null(head);
	const char *eol = strchr(head, '\n');
	assert_true(eol && !memmem(head, (size_t)(eol - head), "max", 3));	/* no max column */
	assert_null(strstr(out, "-0.328"));
	assert_null(strstr(out, "22.641"));
	assert_non_null(strstr(out, "< 0.121"));		/* iqr + one count in 1000 */
	assert_non_null(strstr(out, "< 300.001"));
	assert_null(strstr(out, "276.000"));
	assert_non_null(strstr(out, "1.000"));
	assert_non_null(strstr(out, "below noise floor"));
	/* every shown value of a row is >= 0: no '-' right before a digit in a row */
	for (const char *p = out; (p = strchr(p, '-')); p++)
		assert_false(p[1] >= '0' && p[1] <= '9' && p > out && p[-1] == ' ');
	free(out);

	out = print(&s, BP_BENCH_AGG_MIN);
	/* a difference of two mins, headed so: not a min over the same values */
	assert_non_null(strstr(out, "  min:2n-n"));
	assert_non_null(strstr(out, "may exceed median:2n-n"));
	assert_non_null(strstr(out, "0.900"));
	free(out);
}

/* A row most of whose repetitions kept an NMI is marked "? V", as the
 * kernel's own table marks it: shown, never taken for a result. */
static void disturbed_is_marked(void **state)
{
	struct bp_record_bench b[2] = {
		mk(1, 1, "membw", "read scalar 1 MiB", 0, 4069, 169),
		mk(2, 2, "membw", "read scalar 256 KiB", 0, 10700, 100),
	};
	struct session s;
	(void)state;

	memset(&s, 0, sizeof(s));
	b[0].flags |= BP_BENCH_F_DISTURBED;
	b[0].disturbed = 5;
	s.benches = b;
	s.nbenches = 2;
	char *out = print(&s, -1);
	assert_non_null(strstr(out, "? 4.069"));
	assert_non_null(strstr(out, "disturbed 5"));
	assert_non_null(strstr(out, "\"? V\": most repetitions kept an NMI"));
	assert_null(strstr(out, "? 10.700"));
	assert_non_null(strstr(out, "10.700"));
	free(out);
}

/* Counters read serialized by CPUID (LFENCE does not serialize on that
 * CPU): the row's notes say so, and a line below the tables says what it
 * means; without the flag neither shows. */
static void cpuid_serialized_is_said(void **state)
{
	struct bp_record_bench b[2] = {
		mk(1, 1, "insn", "add r64 lat", 0, 1000, 0),
		mk(2, 2, "insn", "add r64 tput", 0, 250, 0),
	};
	struct session s;
	char *out;
	(void)state;

	memset(&s, 0, sizeof(s));
	s.benches = b;
	s.nbenches = 2;
	out = print(&s, -1);
	assert_null(strstr(out, "cpuid-serialized"));
	free(out);
	b[0].flags |= BP_BENCH_F_CPUID_SERIALIZED;
	out = print(&s, -1);
	assert_non_null(strstr(out, "TSC, cpuid-serialized"));
	assert_non_null(strstr(out, "(cpuid-serialized: LFENCE does not serialize"));
	free(out);
}

/* Lost records: the rows are named by number, table row and neighbours;
 * the end record names those at the end; without it, the tool says what
 * it cannot know. */
static void missing_rows_are_named(void **state)
{
	struct bp_record_bench b[6] = {
		mk(1, 1, "memlat", "chase 2m-pages", 4096, 6500, 100),
		mk(2, 2, "memlat", "chase 2m-pages", 8192, 6500, 100),
		/* 3, 4: memlat rows 3-4 lost */
		mk(5, 5, "memlat", "chase 2m-pages", 65536, 12000, 100),
		/* 6: the end of memlat, or a table between */
		/* 7, 8: branch rows 1-2 lost */
		mk(9, 3, "branch", "random, period", 0, 7000, 100),
		mk(10, 1, "insn", "add r64 lat", 0, 1000, 0),
		mk(11, 2, "insn", "add r64 tput", 0, 250, 0),
		/* 12, 13: the last two, named by BENCH_END */
	};
	/* 12, 13: insn rows 3-4, by the end record's last table and row */
	struct bp_record_bench_end end = { { BP_RECORD_BENCH_END, 0, sizeof(end) }, 1, 0, 13, 7,
					   "insn", 4, 0 };
	struct session s;
	(void)state;

	memset(&s, 0, sizeof(s));
	s.benches = b;
	s.nbenches = 6;
	s.bench_ends = &end;
	s.nbench_ends = 1;
	s.loss.ring_lost[0] = 7;
	char *out = print(&s, -1);
	assert_non_null(strstr(out, "missing: 7 of 13 BENCH results of app run 1"));
	assert_non_null(strstr(out, "no room for 7"));
	assert_non_null(strstr(out, "results 3-4 (memlat rows 3-4): between memlat "
				    "'chase 2m-pages 8 KiB' (tsc) and memlat 'chase 2m-pages 64 KiB'"));
	assert_non_null(strstr(out, "results 6-8 (with branch rows 1-2): between memlat "
				    "'chase 2m-pages 64 KiB' (tsc) and branch 'random, period' (tsc)"));
	assert_non_null(strstr(out, "results 12-13 (insn rows 3-4): after insn 'add r64 tput' (tsc), "
				    "the last received"));
	free(out);

	/* Nothing missing: not a word. */
	struct bp_record_bench c[2] = { mk(1, 1, "insn", "a", 0, 1000, 0),
					mk(2, 2, "insn", "b", 0, 1000, 0) };
	end.results = 2;
	end.lost = 0;
	s.benches = c;
	s.nbenches = 2;
	s.loss.ring_lost[0] = 0;
	out = print(&s, -1);
	assert_null(strstr(out, "missing"));
	free(out);

	/* No end record, and losses in the capture: the tail is unknown. */
	s.nbench_ends = 0;
	s.loss.ring_lost[1] = 3;
	out = print(&s, -1);
	assert_non_null(strstr(out, "no BENCH_END record arrived"));
	free(out);

	/* A gap without the end record: named, and the tail still unknown. */
	c[1].seq = 3;
	out = print(&s, -1);
	assert_non_null(strstr(out, "missing: 1 of 3"));
	assert_non_null(strstr(out, "result 2: between insn 'a' (tsc) and insn 'b' (tsc)"));
	assert_non_null(strstr(out, "no BENCH_END record"));
	free(out);

	/* An end record of another run whose results all vanished. */
	struct bp_record_bench_end ends[2] = { end, end };
	ends[0].app_id = 1;
	ends[0].results = 3;
	ends[1].app_id = 2;
	ends[1].results = 4;
	ends[1].lost = 4;
	snprintf(ends[1].last_table, sizeof(ends[1].last_table), "priv");
	s.bench_ends = ends;
	s.nbench_ends = 2;
	out = print(&s, -1);
	assert_non_null(strstr(out, "missing: 1 of 3 BENCH results of app run 1"));
	assert_non_null(strstr(out, "missing: 4 of 4 BENCH results of app run 2"));
	assert_non_null(strstr(out, "results 1-4 (priv rows 1-4): every result of the run"));
	assert_null(strstr(out, "no BENCH_END"));
	free(out);
	s.nbench_ends = 0;

	/* Records from before version 1 carry no numbers: nothing is claimed. */
	c[0].seq = c[1].seq = 0;
	c[0].bench_version = c[1].bench_version = 0;
	out = print(&s, -1);
	assert_null(strstr(out, "missing"));
	free(out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(order_holds_for_any_input),
		cmocka_unit_test(negative_and_exact),
		cmocka_unit_test(below_floor_is_marked),
		cmocka_unit_test(disturbed_is_marked),
		cmocka_unit_test(cpuid_serialized_is_said),
		cmocka_unit_test(missing_rows_are_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
