/*
 * tools/util/header.h — the run's metadata, as the capture's records
 * tell it, above report's, stat's and script's output (perf's "header"
 * lines).
 */
#ifndef BAREPERF_TOOLS_UTIL_HEADER_H
#define BAREPERF_TOOLS_UTIL_HEADER_H

#include <stdio.h>

#include "tools/util/session.h"

/* The run's metadata (capture, kernel, CPU, PMU, TSC, events, app runs),
 * one line each, every line prefixed: report, stat and script print it.
 * kernel/t: the kernel.elf loaded (its build-id is compared), or NULL.
 * The coverage lines below end it. */
void header_print(FILE *f, const struct session *s, const char *kernel,
		  const struct symtab *t, const char *prefix);

/*
 * A soft-PMU run's coverage, from its TICKS records: the ticks due (read
 * off the HPET counter by the kernel) against the samples that arrived,
 * and what became of the rest (lost, dropped for want of ring room,
 * written but not received); one line per CPU where the run had more.
 * Nothing for runs without TICKS (hardware PMU runs). Part of the header.
 */
void header_print_coverage(FILE *f, const struct session *s, const char *pfx);

#endif
