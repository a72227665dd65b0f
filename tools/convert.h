/*
 * tools/convert.h — what `bareperf convert` and `bareperf flamegraph`
 * are made of (tools/convert.c, tools/flamegraph.c), callable on a
 * struct session built in memory, so the host tests need no capture.
 *
 * Symbols: every function takes the symtab of the kernel.elf that ran
 * (tools/session.h). An address in no function is named "[unknown]".
 * Return addresses (callchain entries after the first) are looked up at
 * address - 1: a call that is the last instruction of a function returns
 * to the start of the next one.
 *
 * Errors: 0 or -1 with one line in err (no trailing newline).
 */
#ifndef BAREPERF_TOOLS_CONVERT_H
#define BAREPERF_TOOLS_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/session.h"

#define CONVERT_UNKNOWN		"[unknown]"

/* ---- perf.data (tools/convert.c) ----------------------------------------- */

#define CONVERT_KERNEL_MAP	"[kernel.kallsyms]"	/* perf's name for the kernel */

/*
 * Write a perf.data file of kernel-mode samples that `perf report`,
 * `perf script` and `perf annotate` read with kernel.elf as the kernel
 * image (vmlinux), found by its build-id. The layout and why it is that
 * way: tools/convert.c, "perf.data". kernel_path names the file in the
 * header's command line.
 */
int convert_perfdata(const struct session *s, const struct symtab *t,
		     const char *kernel_path, const uint8_t *build_id, size_t build_id_len,
		     const char *out, char *err, size_t errlen);
/*
 * Put kernel_path (absolute) into perf's build-id cache under its build-id,
 * as `perf buildid-cache -a` does; dir_out receives the cache's directory.
 */
int convert_buildid_cache(const char *kernel_path, const uint8_t *id, size_t idlen,
			  char *dir_out, size_t dirlen, char *err, size_t errlen);

/* perf's event type and config for a bareperf event: generic names map to
 * PERF_TYPE_HARDWARE/SOFTWARE, anything else is PERF_TYPE_RAW, config. */
void convert_event_type(const struct bp_record_event_desc *d, uint32_t *type, uint64_t *config);

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

/*
 * What code an address is: a measured benchmark body (BENCH_ASM or
 * BENCH_BODY, apps/bench.h: between the labels __bench_body_start and
 * __bench_body_end that linker.ld puts around them), an app (from its
 * source file, DWARF: anything else in apps/ or test/guest/, the harness
 * included), or the kernel (the rest, and addresses without line info).
 */
enum convert_kind { CONVERT_KIND_KERNEL, CONVERT_KIND_APP, CONVERT_KIND_BENCH };
enum convert_kind convert_addr_kind(const struct symtab *t, uint64_t addr);
const char *convert_kind_name(enum convert_kind k);	/* "kernel", "app", "benchmark" */

/* ---- stacks (tools/flamegraph.c) ----------------------------------------- */

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

/* Folded stacks ("a;b;c 12" per line, root first, children in name order):
 * one line per frame where samples ended. */
int stack_tree_write_folded(const struct stack_tree *tr, FILE *out);

struct flamegraph_opts {
	const char *title;		/* NULL: "Flame Graph" */
	const char *subtitle;		/* NULL: none */
	unsigned width;			/* px; 0: 1200 */
};

/* A self-contained interactive SVG (inline script: search, zoom, tooltips). */
int flamegraph_write_svg(const struct stack_tree *tr, const struct flamegraph_opts *o,
			 FILE *out);

/*
 * The event the folded output and the flame graph show: the one named
 * name (NULL: the first event, in EVENT_DESC order, that has samples).
 * -1 with a message listing the events if there is no such event.
 * *multiple is set when other events have samples too.
 */
int convert_pick_event(const struct session *s, const char *name, uint64_t *id,
		       const char **picked_name, bool *multiple, char *err, size_t errlen);

/*
 * session_load(in), then the kernel's symbols as report does
 * (session_symtab: kernel, else kernel.elf next to the capture or
 * build/kernel.elf, checked against the capture's build-id unless force);
 * kpath (PATH_MAX bytes) receives the absolute path of the file used.
 * Prints errors (naming `bareperf cmd`) and the capture's losses on stderr.
 */
int convert_open(const char *cmd, const char *in, const char *kernel, bool force,
		 struct session *s, struct symtab **t, char *kpath);

/* Bytes of the valid UTF-8 sequence at p, 0 if it is not one. */
size_t utf8_seq_len(const unsigned char *p);
/* Escape text for XML (& < > " ' and bytes XML 1.0 forbids) into out. */
void xml_escape(FILE *out, const char *s);
/* Escape text for a JSON string (without the quotes) into out. */
void json_escape(FILE *out, const char *s);

#endif
