/*
 * tools/util/hist.h — `bareperf report`'s aggregation (perf's hist and
 * sort), apart from its printing so the unit tests can check the numbers
 * (test/host/test_report.c); the printing is tools/builtin-report.c.
 *
 * Samples are weighted by their period (perf's "Overhead"): with a fixed
 * period that is the sample share; in frequency mode a sample that stands
 * for more events weighs more. Aggregation keys each distinct IP once in a
 * hash table, then symbolizes the distinct IPs: the cost per sample is one
 * hash probe, whatever the size of the symbol table.
 */
#ifndef BAREPERF_TOOLS_UTIL_HIST_H
#define BAREPERF_TOOLS_UTIL_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/util/session.h"

enum report_sort { REPORT_SORT_SYM, REPORT_SORT_LINE };

/*
 * --sort keys, perf's names: rows are the distinct combinations of the
 * keys, in the order given. sym: the function; dso: the image (always
 * kernel.elf: one address space); srcline: file and line (DWARF), one
 * row per line whatever function holds it, as perf;
 * cpu; comm: the app's name; pid: the app run (APP_START's id).
 */
enum report_key { RK_SYM, RK_DSO, RK_SRCLINE, RK_CPU, RK_COMM, RK_PID, RK_NKEYS };
#define REPORT_MAX_KEYS		RK_NKEYS

struct report_filter {
	bool cpu_set;				/* false: every CPU */
	bool cpus[SESSION_MAX_CPUS];
	const char *app;			/* NULL: every app run */
	/* Appended: */
	bool time_set;				/* --time: only samples in [time_lo, time_hi], */
	uint64_t time_lo, time_hi;		/* ns since the run's start (as script prints) */
	const char *symbols;			/* -S: only samples in these functions
						 * (comma-separated names), NULL: all */
};

struct report_opts {
	enum report_sort sort;			/* with nkeys 0: the key is sym or srcline */
	bool callgraph;				/* -g: callers tree, inclusive cost */
	struct report_filter filter;
	/* Appended: */
	enum report_key keys[REPORT_MAX_KEYS];	/* --sort sym,cpu,...: nkeys > 0 */
	size_t nkeys;
	unsigned max_stack;			/* -g: frames of a chain used, leaf first
						 * (perf's --max-stack); 0: all (up to 128) */
	bool inverted;				/* -g: a row's tree is its chains from the
						 * outermost caller down to it (perf's -G,
						 * caller order), not its callers */
};

/* Parse perf's --sort list ("cpu,sym"; "symbol", "line" and "app"/"run"
 * are accepted too) into o->keys. -1 with the offending word in err. */
int report_parse_sort(const char *list, struct report_opts *o, char *err, size_t errlen);

/* The call-graph tree of -g: a row's callers, their callers, ... (or,
 * inverted, the outermost callers, what they call, ... down to the row's
 * function). Nodes live in report.pool; links are indices into it, 0 = none. */
struct report_node {
	uint64_t key;			/* symbol start, or the address if in no symbol */
	const char *name;		/* NULL if unknown */
	uint64_t samples, period;
	size_t first_child, next_sibling;
};

struct report_row {
	uint64_t key;			/* symbol start, or the IP when it is in no symbol */
	const char *name;		/* symbol name, NULL if unknown */
	const char *file;		/* REPORT_SORT_LINE: source file, NULL if unknown */
	int line;
	uint64_t samples, period;	/* self */
	uint64_t child_samples, child_period;	/* -g: samples with it anywhere in the chain */
	size_t callers;			/* -g: pool index of its node (its callers are the
					 * node's children), 0 without */
	/* Appended: */
	uint32_t cpu, pid;		/* with the cpu, comm or pid keys */
	uint64_t line_addr;		/* srcline key without line info: the address */
	uint32_t more_functions;	/* srcline: functions on the line besides name's */
};

struct report_event {
	uint64_t id;
	uint64_t samples, period;	/* after the filter */
	uint64_t min_period, max_period;
	uint64_t with_chain;		/* samples that have a call chain */
	struct report_row *rows;	/* by period, largest first */
	size_t nrows;
};

struct report {
	struct report_event *events;	/* in the order of their EVENT_DESC */
	size_t nevents;
	uint64_t samples;		/* after the filter, all events */
	uint64_t filtered_out;
	bool cpu_seen[SESSION_MAX_CPUS];	/* CPUs with samples, before the filter */
	struct report_node *pool;	/* every tree node */
	size_t npool, cap_pool;
};

/* 0, or -1 with a line in err (out of memory, unknown app name). */
int report_aggregate(const struct session *s, const struct symtab *t,
		     const struct report_opts *o, struct report *r, char *err, size_t errlen);
void report_free(struct report *r);

/*
 * The same in steps, for a streaming load (session_load_cb): begin, one
 * add per sample (ips: its call chain), end (which builds the rows and
 * frees the aggregator; abort frees it without). begin/add: 0 or -1 (out
 * of memory); end: 0 or -1 with a line in err.
 */
struct report_agg;
int report_begin(struct report_agg **a, const struct symtab *t, const struct report_opts *o,
		 struct report *r);
int report_add(struct report_agg *a, const struct session *s, const struct bp_sample_rec *x,
	       const uint64_t *ips);
int report_end(struct report_agg *a, const struct session *s, char *err, size_t errlen);
void report_abort(struct report_agg *a);
/* The symbols to name IPs with, when they are known only after report_begin
 * (a streaming load finds the kernel from the capture's first records). */
void report_set_symtab(struct report_agg *a, const struct symtab *t);
/* -g: the call chains added so far are named with the symbols as they
 * stand now (they wait, each distinct chain once, until this or
 * report_end): call it before the symbols change. 0, or -1 (out of memory). */
int report_flush(struct report_agg *a);

/* The name of app run pid (APP_START's id), "" if none names it. */
const char *report_app_name(const struct session *s, uint32_t pid);

/* Parse "0,2-3" into filter->cpus; -1 if malformed. */
int report_parse_cpus(const char *list, struct report_filter *f);

/*
 * Parse perf's --time START,STOP (seconds.nanoseconds; either may be
 * left out: from the start, to the end) into f. perf's percentages and
 * several ranges are refused by name. -1 with a line in err.
 */
int report_parse_time(const char *spec, struct report_filter *f, char *err, size_t errlen);
/* Is a sample at tsc inside f's --time (true without one)? */
bool report_time_in(const struct report_filter *f, const struct session *s, uint64_t tsc);
/* Is name one of -S's comma-separated list? */
bool report_symbol_in(const char *list, const char *name);

#endif
