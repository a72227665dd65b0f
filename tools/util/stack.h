/*
 * tools/util/stack.h — call stacks for the flame graph and the folded
 * output: the samples of one event merged into a tree of frames, and
 * what kind of code each frame is.
 *
 * Symbols: every function takes the symtab of the kernel.elf that ran
 * (tools/util/session.h). An address in no function is named "[unknown]".
 * Callchain entries are looked up where symtab_chain_addr says
 * (tools/util/symbol.h): a return address at address - 1, since a call
 * that is the last instruction of a function returns to the start of
 * the next one; the RIP an interrupt hit as it is.
 *
 * Errors: 0 or -1 with one line in err (no trailing newline).
 */
#ifndef BAREPERF_TOOLS_UTIL_STACK_H
#define BAREPERF_TOOLS_UTIL_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/util/session.h"

#define CONVERT_UNKNOWN		"[unknown]"

/* The function at addr, or CONVERT_UNKNOWN (the symtab's own string). */
const char *stack_frame_name(const struct symtab *t, uint64_t addr);

/* A hash of a frame's name, stable from run to run (the flame graph's shades). */
uint64_t stack_name_hash(const char *name);

/*
 * What code an address is: a measured benchmark body (BENCH_ASM or
 * BENCH_BODY, apps/bench.h: between the labels __bench_body_start and
 * __bench_body_end that linker.ld puts around them), an app (from its
 * source file, DWARF: anything else in apps/ or test/guest/, the harness
 * included), or the kernel (the rest, with apps/'s machinery that runs the
 * apps: app.c, run.c, control.c; and addresses without line info).
 */
enum convert_kind { CONVERT_KIND_KERNEL, CONVERT_KIND_APP, CONVERT_KIND_BENCH };
enum convert_kind convert_addr_kind(const struct symtab *t, uint64_t addr);
const char *convert_kind_name(enum convert_kind k);	/* "kernel", "app", "benchmark" */

/*
 * The samples of one event merged into a tree of frames, root first: the
 * outermost caller at depth 1 under a root "all" (node 0). A sample
 * without a callchain is the one frame of its IP.
 */
struct stack_node {
	const char *name;		/* symbol name (owned by the symtab) or static */
	uint32_t parent;		/* node index; the root is its own parent */
	uint32_t first_child, next_sibling;	/* 0 = none (the root is no child) */
	uint32_t depth;			/* root 0 */
	uint64_t total;			/* samples in this frame and below */
	uint64_t self;			/* samples that ended here */
	/* Appended: */
	int kind;			/* enum convert_kind of the function (the root: kernel) */
};

struct stack_tree {
	struct stack_node *nodes;
	size_t n, cap;
	uint32_t max_depth;
	uint64_t unit;			/* what one sample counts: 1, or STACK_UNIT_FRACTION */
	/* private: (parent, name) -> node and name interning */
	struct stack_map *map;
};

/*
 * Build the tree from the samples whose event id is event_id (all samples
 * if all_events). Counts samples, not periods.
 */
int stack_tree_build(struct stack_tree *tr, const struct session *s, const struct symtab *t,
		     bool all_events, uint64_t event_id, char *err, size_t errlen);
void stack_tree_free(struct stack_tree *tr);

/*
 * The tree of folded stacks read back (flamegraph.pl's input: "a;b;c 12"
 * per line, root first, a count after the last space or tab); the names
 * are the tree's own copies, every frame of kind kernel (the text does not
 * say). A count may have a fraction, as flamegraph.pl takes it ("0.25",
 * "3."): the first one makes the tree count millionths of a sample
 * (unit STACK_UNIT_FRACTION), kept exactly to six decimals, more rounded
 * half up. Lines that are not of that form are counted in *ignored.
 */
#define STACK_UNIT_FRACTION	1000000u
int stack_tree_read_folded(struct stack_tree *tr, FILE *in, size_t *ignored, char *err,
			   size_t errlen);

/*
 * The stack-reversed tree of in (flamegraph.pl's --reverse): each stack
 * that ended in a frame read from that frame out to the outermost
 * caller, so the functions where samples ended are at depth 1. Its names
 * are in's: free out before in.
 */
int stack_tree_reverse(const struct stack_tree *in, struct stack_tree *out, char *err,
		       size_t errlen);

/* Depth-first from the root, children in name order: visit(node) in
 * pre-order, until it returns nonzero (which it returns; -1 out of memory). */
typedef int (*stack_visit_fn)(const struct stack_tree *tr, uint32_t node, void *ctx);
int stack_tree_walk(const struct stack_tree *tr, stack_visit_fn visit, void *ctx);

/* count (a node's total or self) in samples as text into buf: "12", or
 * "3.5" in a tree of fractions (to six decimals, no trailing zeros). */
const char *stack_count_text(const struct stack_tree *tr, uint64_t count, char *buf, size_t n);

/* Folded stacks ("a;b;c 12" per line, root first, children in name order):
 * one line per frame where samples ended. */
int stack_tree_write_folded(const struct stack_tree *tr, FILE *out);

#endif
