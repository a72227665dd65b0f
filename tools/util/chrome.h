/*
 * tools/util/chrome.h — a capture as Chrome/Perfetto trace-event JSON
 * (`bareperf convert --to chrome`).
 *
 * Errors: 0 or -1 with one line in err (no trailing newline).
 */
#ifndef BAREPERF_TOOLS_UTIL_CHROME_H
#define BAREPERF_TOOLS_UTIL_CHROME_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/util/session.h"

/*
 * Chrome/Perfetto trace-event JSON: app runs (and an instruction trace's
 * calls) as "X" slices, one track per CPU; the samples twice: as the
 * format's sampling profile, "stackFrames" (each frame names its parent;
 * category = its kind, below) and "samples" (cpu, tid = the CPU, ts in
 * us, the event's name, sf = the leaf frame, weight = the period), which
 * speedscope reads, and as a flame chart of B/E events per CPU (process
 * "sampled stacks"), which viewers of trace events alone (Perfetto) draw.
 */
int convert_chrome(const struct session *s, const struct symtab *t, FILE *out,
		   char *err, size_t errlen);

/*
 * Function-call slices from an instruction trace (trace= runs), for the
 * Chrome output: the bareperf command sets this to the trace decoder
 * (tools/util/trace/, capstone and libipt); the unit tests leave it NULL
 * and link without them. It calls emit once per call: cpu, function name,
 * start and duration in TSC ticks (0, 0 when unknown). 0 or -1 with err.
 */
typedef void (*convert_slice_emit)(void *ctx, uint32_t cpu, const char *name,
				   uint64_t start_tsc, uint64_t dur_tsc);
typedef int (*convert_slices_fn)(const char *capture, const char *kernel,
				 convert_slice_emit emit, void *ctx, char *err, size_t n);
extern convert_slices_fn convert_trace_slices;

#endif
