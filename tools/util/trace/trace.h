/*
 * tools/util/trace/trace.h — instruction traces from the AUX area, decoded on
 * the host into every executed instruction: the single-step tracer's
 * packets (include/uapi/itrace.h) walked over kernel.elf's code with
 * capstone, and Intel PT decoded with libipt. Both feed the same reports:
 * exact per-instruction and per-function counts, the call tree, the
 * instruction stream, and call slices for a Chrome trace.
 *
 * Layers, each usable on its own (the tests and the fuzzer use them), one
 * file each under tools/util/trace/:
 *   trace_image   image.c: kernel.elf's executable bytes and function symbols
 *   trace_insn    insn.c: one instruction, from capstone, cached per address
 *   trace_pkt     pkt.c: one packet of the software tracer
 *   trace_decode  flow.c (software tracer), pt.c (Intel PT, libipt): pieces
 *                 of AUX data (what AUX records cover, in order, with the
 *                 gaps between them) -> instructions and gaps
 *   trace_capture aux.c: a capture's AUX data and AUX records per CPU
 *   trace_report / trace_script / trace_call_slices: report.c, the commands,
 *                 over analysis.c (counts, call tree, slices)
 *
 * Nothing is papered over: an instruction reaches the sink only once a
 * later packet or anchor proves it ran; whatever cannot be proven is a
 * gap, with its exact size when the trace says it (a SYNC after a
 * TRUNCATED commit counts the instructions that ran untraced).
 *
 * Errors: 0 or -1 with one line in err.
 */
#ifndef BAREPERF_TOOLS_UTIL_TRACE_TRACE_H
#define BAREPERF_TOOLS_UTIL_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uapi/itrace.h"
#include "tools/util/symbol.h"

/* ---- code image ------------------------------------------------------- */

struct trace_image;

/*
 * kernel.elf through the tools' ELF reader (tools/util/symbol.h): its
 * function symbols and the bytes of its executable PT_LOAD segments. If
 * build_id is not NULL the file's must match it (symtab_load's check and
 * message).
 */
int trace_image_load(struct trace_image **out, const char *path, const uint8_t *build_id,
		     size_t build_id_len, char *err, size_t n);
/* An image from memory (tests, fuzzing): code at base, symbols copied. */
struct trace_image *trace_image_mem(uint64_t base, const uint8_t *code, size_t len,
				    const struct symbol *syms, size_t nsyms);
void trace_image_free(struct trace_image *im);
/* Bytes at ip and how many follow it in the same segment; NULL if none. */
const uint8_t *trace_image_bytes(const struct trace_image *im, uint64_t ip, size_t *avail);
/* The symbols (symtab_count, symtab_at, symtab_find, symtab_build_id ...). */
const struct symtab *trace_image_symtab(const struct trace_image *im);
/* The function holding ip (symtab_lookup): name NULL if none. */
struct symbol trace_image_sym(const struct trace_image *im, uint64_t ip);

/* ---- instructions (capstone) ------------------------------------------ */

/* What the call tree needs beyond the tracer's class. */
enum trace_flow {
	TK_OTHER, TK_CALL, TK_RET, TK_JUMP, TK_FAR,
};

struct trace_insn {
	uint64_t ip;
	uint64_t target;		/* JCC/JMP/CALL */
	uint8_t  len;
	uint8_t  cls;			/* enum itrace_class, by include/uapi/itrace.h §3 */
	uint8_t  flow;			/* enum trace_flow */
	char     text[56];		/* "mnemonic operands" */
};

/* The instruction at ip (cached); NULL if it is not in the image or
 * capstone cannot decode it. */
const struct trace_insn *trace_insn_at(struct trace_image *im, uint64_t ip);
/* Classify with capstone only, uncached (tests compare with the kernel's
 * classifier). Returns the class, or -1 if the bytes do not decode. */
int trace_insn_classify(const uint8_t *code, size_t n, uint64_t ip, struct trace_insn *out);

/* ---- packets ------------------------------------------------------------ */

enum trace_pkt_type {
	TP_PAD, TP_TNT, TP_TIP, TP_PGE, TP_ASYNC, TP_STOP, TP_SYNC,
};

struct trace_pkt {
	int type;			/* enum trace_pkt_type */
	uint8_t tnt_n;			/* TNT: outcomes, oldest in bit tnt_n - 1 */
	uint8_t tnt_bits;
	uint8_t reason;			/* STOP */
	uint8_t flags;			/* SYNC */
	int64_t ip_delta;		/* TIP, PGE, ASYNC */
	uint64_t steps;			/* SYNC: absolute; ASYNC, STOP: since the SYNC */
	uint64_t tsc;			/* SYNC: absolute; STOP: since the SYNC */
	uint64_t ip;			/* SYNC */
	uint64_t lo, hi;		/* SYNC with ITRACE_SYNC_RANGE */
};

/* Decode one packet: bytes used (> 0), 0 if p holds only part of one,
 * -1 if it is not a valid packet. */
long trace_pkt_decode(const uint8_t *p, size_t n, struct trace_pkt *pkt);
/* Offset of the first valid SYNC in p[0, n), or -1. */
long trace_pkt_find_sync(const uint8_t *p, size_t n);

/* ---- decoding ------------------------------------------------------------- */

/* How a piece of AUX data follows the one before it. */
enum trace_join {
	TJ_CONT,			/* the same packet stream */
	TJ_PAUSE,			/* after a TRUNCATED commit: instructions ran untraced */
	TJ_LOSS,			/* data missing (lost frames or records, cut capture) */
};

struct trace_piece {
	const uint8_t *data;
	size_t len;
	uint64_t aux_pos;		/* AUX counter of data[0], for messages */
	int join;			/* enum trace_join */
};

#define TRACE_GAP_UNKNOWN	UINT64_MAX

struct trace_sink {
	/* Instruction number step (1-based, the kernel's count) ran at ii->ip. */
	void (*insn)(void *ctx, uint64_t step, const struct trace_insn *ii);
	/* Instructions after number step are not in the trace: n of them
	 * (TRACE_GAP_UNKNOWN: the trace never says). why: one phrase. */
	void (*gap)(void *ctx, uint64_t step, uint64_t n, const char *why);
	/* A SYNC: instruction number steps + 1 ran at TSC tsc (or later). */
	void (*sync)(void *ctx, uint64_t steps, uint64_t tsc);
};

struct trace_dec_stats {
	uint64_t insns;			/* reached the sink */
	uint64_t packets, syncs, tnt_bits, tips, pges, asyncs;
	uint64_t gaps, gap_insns;	/* gaps, and instructions in gaps of known size */
	uint64_t gaps_unknown;		/* gaps of unknown size */
	uint64_t errors;		/* decode errors (desync, bad packet, undecodable code) */
	char first_error[160];
	bool ended;			/* a STOP END was reached */
	uint64_t ends;			/* STOP ENDs (one per traced call) */
	uint64_t end_steps;		/* their step counts summed: the kernel's total */
	uint64_t end_tsc;
	uint64_t first_steps;		/* steps of the first SYNC (> 0: started mid-stream) */
	bool have_first;
	uint64_t bytes;
};

/* The software tracer's packets. */
void trace_decode_sstep(struct trace_image *im, const struct trace_piece *pieces,
			size_t npieces, const struct trace_sink *sink, void *ctx,
			struct trace_dec_stats *st);
/* Intel PT (libipt); pieces as above, TJ_* boundaries restart the decoder. */
void trace_decode_pt(struct trace_image *im, const struct trace_piece *pieces,
		     size_t npieces, const struct trace_sink *sink, void *ctx,
		     struct trace_dec_stats *st);

/* ---- captures ------------------------------------------------------------- */

enum trace_format { TF_NONE, TF_SSTEP, TF_PT };

struct trace_cpu_data {
	uint32_t cpu;
	uint32_t run;			/* 1, 2, ...: the RUN_META it followed (0: none) */
	int format;			/* enum trace_format, from the data */
	struct trace_piece *pieces;
	size_t npieces;
	uint64_t aux_bytes;		/* AUX data received */
	uint64_t records, truncated;	/* AUX records, ... TRUNCATED */
	uint64_t missing_bytes;		/* covered by records, never received */
	uint64_t records_lost;		/* LOST records / RECORDS frames lost: AUX records may be missing */
};

struct trace_capture {
	struct trace_cpu_data *cpus;
	size_t ncpus;
	uint8_t build_id[20];		/* the kernel's, as the capture tells it */
	size_t build_id_len;		/* (session_build_id); 0: unknown */
	uint32_t nruns;			/* RUN_META records: runs in the capture */
	char *console;			/* console text, NUL-terminated (the session's) */
	void *priv;
};

/* Read by the session loader (tools/util/session.h), which keeps the rest. */
int trace_capture_load(struct trace_capture *tc, const char *path, char *err, size_t n);
void trace_capture_free(struct trace_capture *tc);
/* Format of a CPU's data: PT if it holds a PSB, sstep if it has a SYNC. */
int trace_detect_format(const struct trace_piece *pieces, size_t n);

/* ---- commands --------------------------------------------------------------- */

struct trace_opts {
	const char *kernel_elf;		/* the kernel.elf that ran (required) */
	bool force;			/* decode even if the build-ids differ */
	bool have_range;		/* script: only instructions in [lo, hi) */
	uint64_t lo, hi;
	int cpu;			/* -1: all */
	int top;			/* report: rows per table (0: 25) */
	bool check;			/* report: exit 1 unless counts are exact */
};

/* Parse "START-END" (hex addresses or symbol names) against kernel.elf. */
int trace_parse_range(struct trace_image *im, const char *s, uint64_t *lo, uint64_t *hi,
		      char *err, size_t n);
/* The same for --range: loads o->kernel_elf, sets o->lo, o->hi, o->have_range. */
int trace_opts_set_range(struct trace_opts *o, const char *range, char *err, size_t n);

/*
 * `bareperf report --aux`: per-function and per-instruction counts, the
 * call tree, gaps and the kernel's own count. 0 ok, 1 problem (with
 * o->check: also when the reconstruction is not exact), 2 usage.
 */
int trace_report(const char *capture, const struct trace_opts *o, FILE *out);
/* `bareperf script --aux`: every instruction, "cpu step address symbol+off text". */
int trace_script(const char *capture, const struct trace_opts *o, FILE *out);

struct trace_slice {
	uint32_t cpu;
	uint32_t depth;			/* 0 = outermost traced frame */
	const char *name;		/* function, or "[unknown]" */
	uint64_t start;			/* step of its first instruction */
	uint64_t dur;			/* instructions until its return (inclusive) */
	uint64_t start_tsc;		/* TSC estimate at start (SYNC-interpolated), 0 unknown */
	uint64_t dur_tsc;
};
typedef void (*trace_slice_fn)(void *ctx, const struct trace_slice *s);
/*
 * `bareperf convert --to chrome`: one call per function call in the
 * trace (callees before their callers, as they finish; frames still open
 * at the end or at a gap are closed there). Time is instructions (steps).
 */
int trace_call_slices(const char *capture, const struct trace_opts *o, trace_slice_fn fn,
		      void *ctx, char *err, size_t n);

#endif
