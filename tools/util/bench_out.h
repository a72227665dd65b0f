/*
 * tools/util/bench_out.h — `bareperf bench`'s results as nanoBench prints
 * them: "NAME: value" lines, its names for the fixed counters, and the
 * readings -verbose asks the kernel for (uapi/wire.h, RUN_CODE).
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_OUT_H
#define BAREPERF_TOOLS_UTIL_BENCH_OUT_H

#include <stdint.h>
#include <stdio.h>

/*
 * The name nanoBench prints for event (as the kernel names it in its
 * ITEM) with flags BP_BENCH_F_*: "Core cycles", "Instructions retired",
 * "Reference cycles" for the fixed counters' events, "TSC" for the TSC
 * (under QEMU -icount too: what it counts there is said apart, once),
 * else event itself.
 */
const char *bench_nb_name(const char *event, unsigned flags);

/* "NAME: value" with two decimals, nanoBench's line, and a newline. */
void bench_nb_line(FILE *f, const char *name, double value);
/* -range's: the line with the smallest and largest value, " [min;max]". */
void bench_nb_range_line(FILE *f, const char *name, double value, double min, double max);

/*
 * Why a value with flags should not be taken as it is (mostly disturbed
 * measurements, or below its noise floor), or NULL: bench says it on
 * stderr, never in the value's line.
 */
const char *bench_nb_note(unsigned flags);
/*
 * What BP_BENCH_F_CPUID_SERIALIZED means, one clause: bench says it once
 * on stderr, stat --bench below its tables (its rows' notes say
 * "cpuid-serialized").
 */
extern const char bench_cpuid_note[];

/*
 * A "reading EVENT FIRST n,2n ..." ITEM: its event into event, the index
 * of its first pair into *first, its pairs into pairs (at most max of
 * them). Returns how many, or -1 when item is no reading (or malformed).
 */
int bench_parse_readings(const char *item, char *event, size_t len, unsigned *first,
			 uint64_t (*pairs)[2], int max);

#endif
