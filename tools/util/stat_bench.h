/*
 * tools/util/stat_bench.h — `bareperf stat`'s benchmark tables and the
 * memory-latency plot, from a capture's BENCH records (apps/bench.h,
 * struct bp_record_bench).
 */
#ifndef BAREPERF_TOOLS_STAT_BENCH_H
#define BAREPERF_TOOLS_STAT_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/util/session.h"

/*
 * One table per `table` value (memlat, membw, ...), in the order they
 * first appear; rows in record order. A cpu column when the records come
 * from more than one CPU. agg: BP_BENCH_AGG_* to show, or -1 for the one
 * each record says the harness reported. Then the rows that never arrived
 * (stat_bench_missing). Returns the number of tables printed.
 */
int stat_bench_print(FILE *f, const struct session *s, int agg);

/*
 * The results missing from each app run that numbered its records (seq,
 * BENCH_END), named by their number, their table rows where the
 * neighbours prove them, and the rows around them. Prints nothing when
 * nothing is missing. Returns the number missing, -1 out of memory.
 */
int stat_bench_missing(FILE *f, const struct session *s);

/* How a record is shown: one aggregate, its spread and noise floor. */
struct stat_bench_value {
	unsigned agg;			/* BP_BENCH_AGG_* */
	int64_t value;			/* x1000 per unit */
	bool has_iqr;			/* version >= 1 */
	uint64_t iqr, floor;		/* x1000 per unit */
	bool noise;			/* value below floor: not a result */
};
void stat_bench_judge(const struct bp_record_bench *b, int agg, struct stat_bench_value *v);

/* The tables' formats, into buf (n bytes), which they return:
 * x1000 fixed point "12.345", "-0.250"; unsigned (spreads, floors);
 * bytes in whole units ("4 KiB", "2 MiB"; else bytes). */
const char *stat_bench_fmt_x1000(int64_t v, char *buf, size_t n);
const char *stat_bench_fmt_ux1000(uint64_t v, char *buf, size_t n);
const char *stat_bench_fmt_bytes(uint64_t b, char *buf, size_t n);

/* Whether the BENCH records come from more than one CPU (a cpu column). */
bool stat_bench_multi_cpu(const struct session *s);

/*
 * The memlat sweep (tools/util/stat_plot.c) as an SVG line chart at path: x = working set (log2),
 * y = the value per load (agg as stat_bench_print), one line per (name,
 * event); a value below its noise floor is a hollow point at the floor,
 * where the line breaks. Returns the number of
 * lines drawn (0: no memlat records, nothing written) or -1 with one line
 * in err.
 */
int stat_bench_plot(const char *path, const struct session *s, int agg, char *err,
		    size_t errlen);

#endif
