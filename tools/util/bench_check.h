/*
 * tools/util/bench_check.h — `bareperf bench --check`: everything a run
 * would send, assembled and parsed, and printed, with no machine booted.
 */
#ifndef BAREPERF_TOOLS_UTIL_BENCH_CHECK_H
#define BAREPERF_TOOLS_UTIL_BENCH_CHECK_H

#include <stdbool.h>

struct bench_events;

/* What bench was given; NULL for an option not given. */
struct bench_check_in {
	const char *asm_body, *asm_init, *asm_late, *code, *code_init, *batch;
	const char *config, *msr_config;
	const struct bench_events *events;	/* -e's (and -fixed_counters'), as given */
	bool nasm;			/* --nasm: the snippets are NASM's */
};

/*
 * Assemble the snippets, parse -config and -msr_config (a refused line is
 * a warning, stderr), and print each event: its encoding, its counter, the
 * MSRs it sets and the run of the snippet it is measured in, laid out as
 * the run does (bench_events_runs). Returns 0 when all of it parses, 2
 * when a snippet does not assemble or a file holds no line that parses.
 */
int bench_check(const struct bench_check_in *in);

#endif
