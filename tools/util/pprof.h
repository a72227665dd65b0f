/*
 * tools/util/pprof.h — a capture as a pprof profile (`bareperf convert
 * --to pprof`): what `go tool pprof` reads and what continuous-profiling
 * systems (Pyroscope, Parca, Cloud Profiler) ingest.
 *
 * Errors: 0 or -1 with one line in err (no trailing newline).
 */
#ifndef BAREPERF_TOOLS_UTIL_PPROF_H
#define BAREPERF_TOOLS_UTIL_PPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/util/session.h"

/*
 * The samples of one event (event_id) as a gzipped profile.proto
 * (perftools.profiles.Profile, github.com/google/pprof proto/profile.proto),
 * encoded here from the message's field numbers. Each sample's values are
 * [samples/count, cpu/nanoseconds] for cpu-clock, [samples/count,
 * EVENT/count] (its period) for the others; its locations run leaf first
 * (return addresses at address - 1, an interrupted RIP as it is: as in
 * tools/util/stack.h), with a
 * "cpu" label. A location names its function and line (DWARF); functions
 * their name, file and first line; the mappings are the kernel.elf's
 * executable segments with its path and GNU build-id.
 */
int convert_pprof(const struct session *s, const struct symtab *t, uint64_t event_id,
		  FILE *out, char *err, size_t errlen);

#endif
