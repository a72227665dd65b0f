/*
 * bench_stats.h — the statistics of the microbenchmark harness: from the
 * repetitions' n-run and 2n-run counts to nanoBench's value under each of
 * its aggregates, the spread of the per-repetition differences, and the
 * noise floor a value must clear to be reported (perf_ring.h, struct
 * bp_record_bench, says what each figure means).
 *
 * Plain C on fixed-width integers: the kernel's harness (apps/bench.c)
 * computes with it and the host tool (tools/util/stat_bench.c) judges records
 * with it, so both apply one definition. NMI-safe: yes (no state).
 */
#ifndef BAREPERF_APPS_BENCH_STATS_H
#define BAREPERF_APPS_BENCH_STATS_H

#include <stdbool.h>
#include <stdint.h>

#define BENCH_TRIM_PERCENT	20	/* nanoBench's -avg drops this much at each end */

struct bench_stats {
	/* nanoBench's value, (agg(m(2n)) - agg(m(n))) / per, x1000, for its
	 * aggregates -min, -median, -avg; max only for the record's old field */
	int64_t min, median, avg, max;
	/* the per-repetition differences d_i = (m(2n)_i - m(n)_i) / per, x1000:
	 * first quartile, median, third quartile (q1 <= dmed <= q3) */
	int64_t q1, dmed, q3;
	uint64_t iqr;			/* q3 - q1 */
	uint64_t floor;			/* bench_noise_floor(iqr, per) */
	uint64_t median_n, median_2n;	/* raw medians of one n-run, one 2n-run */
	bool exact;			/* every n-run equal, every 2n-run equal */
};

/*
 * The statistics of reps pairs (m_n[i], m_2n[i]), measured in that order
 * in repetition i; per = unroll * loops * work (>= 1). scratch holds
 * 3 * reps values; m_n and m_2n are left as they were. reps >= 1.
 */
void bench_stats_compute(const uint64_t *m_n, const uint64_t *m_2n, uint32_t reps,
			 uint64_t per, uint64_t *scratch, struct bench_stats *out);

/*
 * The noise floor of a result, x1000 per unit: its spread (iqr, x1000)
 * plus the counter's resolution, one count over per units of work rounded
 * up. A result must exceed the repetitions' disagreement by at least one
 * count to be one; an exact result (iqr 0) needs one count. Always >= 1:
 * no value of 0 or below clears it.
 */
uint64_t bench_noise_floor(uint64_t iqr, uint64_t per);

/* Does a value (x1000) clear its floor, i.e. may it be shown as a result? */
bool bench_above_floor(int64_t value, uint64_t floor);

/* The value for aggregate agg (BP_BENCH_AGG_*); the median if unknown. */
int64_t bench_stats_value(const struct bench_stats *s, unsigned agg);

/* "median", "min", "avg" for BP_BENCH_AGG_*; NULL if unknown. */
const char *bench_agg_name(unsigned agg);
/* BP_BENCH_AGG_* for "median", "min" or "avg"; -1 if none of them. */
int bench_agg_parse(const char *s);

#endif
