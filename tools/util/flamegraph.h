/*
 * tools/util/flamegraph.h — a stack tree (tools/util/stack.h) drawn as a
 * flame graph: a self-contained interactive SVG.
 */
#ifndef BAREPERF_TOOLS_UTIL_FLAMEGRAPH_H
#define BAREPERF_TOOLS_UTIL_FLAMEGRAPH_H

#include <stdio.h>

#include "tools/util/stack.h"

struct flamegraph_opts {
	const char *title;		/* NULL: "Flame Graph" */
	const char *subtitle;		/* NULL: none */
	unsigned width;			/* px; 0: 1200 */
};

/* A self-contained interactive SVG (inline script: search, zoom, tooltips). */
int flamegraph_write_svg(const struct stack_tree *tr, const struct flamegraph_opts *o,
			 FILE *out);

#endif
