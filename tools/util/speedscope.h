/*
 * tools/util/speedscope.h — a capture in speedscope's own file format
 * (`bareperf convert --to speedscope`).
 *
 * Errors: 0 or -1 with one line in err (no trailing newline).
 */
#ifndef BAREPERF_TOOLS_UTIL_SPEEDSCOPE_H
#define BAREPERF_TOOLS_UTIL_SPEEDSCOPE_H

#include <stddef.h>
#include <stdio.h>

#include "tools/util/session.h"

/*
 * speedscope's JSON file format (its file-format-schema.json): the
 * functions once, as "shared" frames (name, and the file and line where
 * the function starts when DWARF says), then one "sampled" profile per
 * event and CPU, its samples in time order, each a stack of frame indices
 * root first with its period as weight: nanoseconds for cpu-clock, the
 * event's count ("none") for the others. speedscope adds up weights, so a
 * stretch of lost or merged ticks weighs nothing.
 */
int convert_speedscope(const struct session *s, const struct symtab *t, FILE *out,
		       char *err, size_t errlen);

#endif
