/*
 * tools/util/trace/analysis.h — an analysis of one CPU's instruction
 * stream (analysis.c), which the trace commands (report.c) read: the
 * decoders feed an_sink with a struct analysis as its context.
 */
#ifndef BAREPERF_TOOLS_UTIL_TRACE_ANALYSIS_H
#define BAREPERF_TOOLS_UTIL_TRACE_ANALYSIS_H

#include "tools/util/trace/internal.h"

struct icount {
	const struct trace_insn *ii;
	uint64_t count;
};

struct node {
	struct symbol fn;		/* name NULL: outside every function */
	size_t parent;			/* index, or SIZE_MAX for a root */
	size_t child, next;		/* first child, next sibling (SIZE_MAX: none) */
	uint64_t calls, self, total;
};

struct call_frame {
	size_t node;
	uint64_t start;
	uint64_t start_tsc;
	uint64_t ret;			/* return address its call pushed; 0 unknown */
};

struct analysis {
	struct trace_image *im;
	uint32_t cpu;
	/* per instruction */
	struct icount *tab;
	size_t cap, n;
	/* call tree */
	struct node *nodes;
	size_t nnodes, nodes_cap;
	struct call_frame *stack;
	size_t depth, stack_cap;
	bool pending_call, pending_ret, fresh;
	uint64_t call_ret;		/* return address of the pending call */
	/* slices */
	trace_slice_fn slice;
	void *slice_ctx;
	uint64_t last_step;
	/* TSC interpolation from SYNC anchors */
	uint64_t sync_steps, sync_tsc, prev_sync_steps, prev_sync_tsc;
	/* script */
	FILE *script;
	const struct trace_opts *opts;
	uint64_t script_lines;
	/* gaps, for the report */
	struct { uint64_t step, n; const char *why; } gaps[64];
	size_t ngaps, ngaps_total;
};

/* The sink: counts, call tree, slices (A->slice) and script lines
 * (A->script). Set A->im, A->cpu and A->fresh = true first. */
extern const struct trace_sink an_sink;
/* Close every open frame at the last step (their slices are emitted). */
void an_close(struct analysis *A);
/* Sum the call tree's totals (self + descendants), once at the end. */
void an_totals(struct analysis *A);
void an_free(struct analysis *A);
/* The symbol's name, "[unknown]" for none. */
const char *an_sym_name(struct symbol s);
/* The same function (symbols of one table; two unknowns are the same). */
bool an_same_fn(struct symbol a, struct symbol b);

#endif
