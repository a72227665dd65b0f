/*
 * tools/util/flamegraph.h — a stack tree (tools/util/stack.h) drawn as a
 * flame graph: a self-contained interactive SVG.
 */
#ifndef BAREPERF_TOOLS_UTIL_FLAMEGRAPH_H
#define BAREPERF_TOOLS_UTIL_FLAMEGRAPH_H

#include <stdbool.h>
#include <stdio.h>

#include "tools/util/stack.h"

struct flamegraph_opts {
	const char *title;		/* NULL: "Flame Graph" */
	const char *subtitle;		/* NULL: none */
	unsigned width;			/* px; 0: 1200 */
	/* Appended, flamegraph.pl's options: */
	double minwidth;		/* frames narrower are left out: px; 0: 0.1 */
	bool minwidth_pct;		/* minwidth is a percentage of the total */
	bool inverted;			/* an icicle graph: the root at the top */
	const char *countname;		/* what the counts are; NULL: "samples" */
	const char *colors;		/* a palette (flamegraph_palette); NULL: by kind */
};

/* Whether name is a palette --colors accepts: hot, mem, io, red, green,
 * blue, aqua, yellow, purple, orange (shades of each, by function name). */
bool flamegraph_palette(const char *name);
extern const char flamegraph_palettes[];	/* their names, space-separated */

/* A self-contained interactive SVG (inline script: search, zoom, tooltips). */
int flamegraph_write_svg(const struct stack_tree *tr, const struct flamegraph_opts *o,
			 FILE *out);

#endif
