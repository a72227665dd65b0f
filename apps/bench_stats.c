/*
 * bench_stats.c — the harness's statistics (bench_stats.h). nanoBench's
 * method (Abel & Reineke, ISPASS 2020, and its README): each of run(n) and
 * run(2n) is aggregated over the repetitions, then the difference is
 * divided by the units of work; -avg is the mean without the top and
 * bottom 20%. The spread comes from the pairs instead: the n-run and the
 * 2n-run of one repetition ran back to back, so their difference is one
 * estimate of the body alone, and the spread of those estimates is what
 * says how far a value can be trusted.
 */
#include "apps/bench_stats.h"
#include <uapi/perf_ring.h>

static void sort_u64(uint64_t *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		uint64_t x = v[i];
		uint32_t j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

static void sort_s64(int64_t *v, uint32_t n)
{
	for (uint32_t i = 1; i < n; i++) {
		int64_t x = v[i];
		uint32_t j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

/* x / d rounded to nearest (halves away from zero), for signed x. */
static int64_t div_round(int64_t x, uint64_t d)
{
	return x >= 0 ? (int64_t)(((uint64_t)x + d / 2) / d)
		      : -(int64_t)(((uint64_t)-x + d / 2) / d);
}

struct agg {
	int64_t min, median, avg, max;	/* x1000, one measurement */
};

/* v sorted ascending. */
static void aggregate(const uint64_t *v, uint32_t n, struct agg *a)
{
	uint32_t trim = n * BENCH_TRIM_PERCENT / 100;
	uint64_t sum = 0;

	a->min = (int64_t)(v[0] * 1000);
	a->max = (int64_t)(v[n - 1] * 1000);
	a->median = n & 1 ? (int64_t)(v[n / 2] * 1000) : (int64_t)((v[n / 2 - 1] + v[n / 2]) * 500);
	for (uint32_t i = trim; i < n - trim; i++)
		sum += v[i];
	a->avg = (int64_t)(sum * 1000 / (n - 2 * trim));
}

/* The q/4 quantile of sorted v (q = 1, 2, 3), linear interpolation
 * between the order statistics at (n - 1) * q / 4: monotone in q. */
static int64_t quartile(const int64_t *v, uint32_t n, uint32_t q)
{
	uint64_t pos4 = (uint64_t)(n - 1) * q;		/* position, in quarters */
	uint32_t i = (uint32_t)(pos4 / 4), f = (uint32_t)(pos4 % 4);

	if (!f)
		return v[i];
	/* v[i] + (v[i+1] - v[i]) * f / 4, without overflowing the difference */
	return v[i] + (int64_t)(((uint64_t)v[i + 1] - (uint64_t)v[i]) / 4 * f +
				((uint64_t)v[i + 1] - (uint64_t)v[i]) % 4 * f / 4);
}

void bench_stats_compute(const uint64_t *m_n, const uint64_t *m_2n, uint32_t reps,
			 uint64_t per, uint64_t *scratch, struct bench_stats *out)
{
	uint64_t *a = scratch, *b = scratch + reps;
	int64_t *d = (int64_t *)(scratch + 2 * reps);
	struct agg a1, a2;

	if (!per)
		per = 1;
	for (uint32_t i = 0; i < reps; i++) {
		a[i] = m_n[i];
		b[i] = m_2n[i];
		d[i] = div_round((int64_t)(m_2n[i] - m_n[i]) * 1000, per);
	}
	sort_u64(a, reps);
	sort_u64(b, reps);
	sort_s64(d, reps);
	aggregate(a, reps, &a1);
	aggregate(b, reps, &a2);
	out->min = div_round(a2.min - a1.min, per);
	out->median = div_round(a2.median - a1.median, per);
	out->avg = div_round(a2.avg - a1.avg, per);
	out->max = div_round(a2.max - a1.max, per);
	out->q1 = quartile(d, reps, 1);
	out->dmed = quartile(d, reps, 2);
	out->q3 = quartile(d, reps, 3);
	out->iqr = (uint64_t)out->q3 - (uint64_t)out->q1;
	out->floor = bench_noise_floor(out->iqr, per);
	out->median_n = (uint64_t)a1.median / 1000;
	out->median_2n = (uint64_t)a2.median / 1000;
	out->exact = a[0] == a[reps - 1] && b[0] == b[reps - 1];
}

uint64_t bench_noise_floor(uint64_t iqr, uint64_t per)
{
	uint64_t res = per ? (1000 + per - 1) / per : 1000;

	return iqr > UINT64_MAX - res ? UINT64_MAX : iqr + res;
}

bool bench_above_floor(int64_t value, uint64_t floor)
{
	return value > 0 && (uint64_t)value >= floor;
}

int64_t bench_stats_value(const struct bench_stats *s, unsigned agg)
{
	return agg == BP_BENCH_AGG_MIN ? s->min : agg == BP_BENCH_AGG_AVG ? s->avg : s->median;
}

const char *bench_agg_name(unsigned agg)
{
	switch (agg) {
	case BP_BENCH_AGG_MEDIAN:	return "median";
	case BP_BENCH_AGG_MIN:		return "min";
	case BP_BENCH_AGG_AVG:		return "avg";
	default:			return (const char *)0;
	}
}

int bench_agg_parse(const char *s)
{
	for (unsigned a = 0; a <= BP_BENCH_AGG_AVG; a++) {
		const char *n = bench_agg_name(a), *p = s;
		while (*n && *n == *p)
			n++, p++;
		if (!*n && !*p)
			return (int)a;
	}
	return -1;
}
