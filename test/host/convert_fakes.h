/*
 * test/host/convert_fakes.h — stand-ins for tools/util/session.c and
 * tools/util/symbol.c, so the convert and flamegraph tests build sessions in
 * memory and run without a capture or libdw.
 *
 * The fake symtab is a sorted list of functions and exec segments the
 * test sets, or, from symtab_load(), what a small <elf.h> reader finds in
 * a real ELF file (FUNC symbols of .symtab, NOTYPE ones as labels, PF_X
 * PT_LOAD segments).
 * session_tsc_to_ns uses RUN_META's time_mult/time_shift/time_zero
 * relative to start_tsc, as tools/util/session.h describes it.
 */
#ifndef BAREPERF_TEST_CONVERT_FAKES_H
#define BAREPERF_TEST_CONVERT_FAKES_H

#include "tools/util/session.h"

struct fake_sym {
	const char *name;
	uint64_t start, size;
};

struct fake_seg {
	uint64_t vaddr, size, off;
};

/* A symtab holding these (copied; syms need not be sorted). */
struct symtab *fake_symtab(const struct fake_sym *syms, size_t n,
			   const struct fake_seg *segs, size_t nseg);
/* symtab_value answers value for name (as for a linker-script label). */
void fake_symtab_label(struct symtab *t, const char *name, uint64_t value);
/* symtab_line answers file (line 1) for every address of function name. */
void fake_symtab_file(struct symtab *t, const char *name, const char *file);
/* One program the kernel loaded, in [start, end): symtab_dso names it. */
void fake_symtab_program(struct symtab *t, const char *name, uint64_t start, uint64_t end);

/*
 * Building sessions: fs_init zeroes s and sets RUN_META with 1 TSC tick =
 * 1 ns (time_mult 1 << 20, shift 20), start_tsc 0. fs_sample takes the
 * callchain (ips[0] = the IP) or, with nr 0, just ip. Samples must be
 * added in time order. fs_free frees what the fs_* calls allocated.
 */
void fs_init(struct session *s);
void fs_event(struct session *s, uint64_t id, const char *name, uint64_t config,
	      uint64_t period);
void fs_app(struct session *s, uint32_t app_id, uint32_t cpu, const char *name,
	    uint64_t start, uint64_t stop);
void fs_sample(struct session *s, uint64_t time, uint32_t cpu, uint32_t pid, uint64_t id,
	       uint64_t period, uint64_t ip, const uint64_t *ips, uint32_t nr);
void fs_free(struct session *s);

/* session_load's stand-in returns this session (shallow copy) for any path. */
extern const struct session *fake_loaded_session;

#endif
