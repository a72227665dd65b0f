/*
 * tools/stat_bench.h — `bareperf stat`'s benchmark tables and the
 * memory-latency plot, from a capture's BENCH records (apps/bench.h,
 * struct bp_record_bench).
 */
#ifndef BAREPERF_TOOLS_STAT_BENCH_H
#define BAREPERF_TOOLS_STAT_BENCH_H

#include <stdio.h>

#include "tools/session.h"

/*
 * One table per `table` value (memlat, membw, ...), in the order they
 * first appear; rows in record order. A cpu column when the records come
 * from more than one CPU. Returns the number of tables printed.
 */
int stat_bench_print(FILE *f, const struct session *s);

/*
 * The memlat sweep as an SVG line chart at path: x = working set (log2),
 * y = median per load, one line per (name, event). Returns the number of
 * lines drawn (0: no memlat records, nothing written) or -1 with one line
 * in err.
 */
int stat_bench_plot(const char *path, const struct session *s, char *err, size_t errlen);

#endif
