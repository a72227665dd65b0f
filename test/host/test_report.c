/*
 * test_report — symbolization (tools/util/symbol.c) and report aggregation
 * (tools/util/hist.c). The symbol table under test is this test binary's own
 * (linked -no-pie, so a function's address is its symbol's value): its
 * functions are looked up by address, their source lines come back from
 * DWARF, and samples "taken" in them are aggregated: shares weighted by
 * period, filters by CPU and app, the call-graph tree and inclusive cost,
 * the by-line view, and the build-id check against a capture.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "test/host/capgen.h"
#include "tools/commands.h"
#include "tools/util/hist.h"

/* Functions to sample. Each sits on one line so its entry's line is known. */
static const int fn_hot_line = __LINE__ + 1;
static __attribute__((noinline, used)) int fn_hot(int x) { return x * 3 + 1; }
static __attribute__((noinline, used)) int fn_warm(int x) { return x * 5 + 2; }
static __attribute__((noinline, used)) int fn_cold(int x) { return x * 7 + 3; }
static __attribute__((noinline, used)) int fn_mid(int x) { return fn_hot(x) + 1; }
static __attribute__((noinline, used)) int fn_top(int x) { return fn_mid(x) + fn_warm(x); }
/* Two functions on one source line: one srcline, two symbols. */
static __attribute__((noinline, used)) int fn_twin_a(int x) { return x * 11 + 5; } static __attribute__((noinline, used)) int fn_twin_b(int x) { return x * 13 + 7; }

#define A(f) ((uint64_t)(uintptr_t)&(f))

/* The label after the kernel's call to trap_dispatch (kernel/isr.asm): in
 * a chain, the entry after it is the RIP an interrupt hit. */
__asm__(".text\n.globl isr_frame_return\nisr_frame_return:\n\tnop\n");
extern const char isr_frame_return[];

static struct symtab *T;
static char err[512];

static int setup(void **state)
{
	(void)state;
	return symtab_load(&T, "/proc/self/exe", NULL, 0, err, sizeof(err));
}

static int teardown(void **state)
{
	(void)state;
	symtab_free(T);
	return 0;
}

static void lookup(void **state)
{
	struct symbol s;

	(void)state;
	s = symtab_lookup(T, A(fn_hot));
	assert_string_equal(s.name, "fn_hot");
	assert_int_equal(s.start, A(fn_hot));
	assert_true(s.size > 0);
	s = symtab_lookup(T, A(fn_hot) + s.size - 1);
	assert_string_equal(s.name, "fn_hot");
	s = symtab_lookup(T, A(fn_top) + 1);
	assert_string_equal(s.name, "fn_top");
	s = symtab_lookup(T, 0x10);
	assert_null(s.name);
	s = symtab_lookup(T, ~0ull);
	assert_null(s.name);
	/* The table is sorted and every entry looks itself up. */
	assert_true(symtab_count(T) > 10);
	for (size_t i = 1; i < symtab_count(T); i++) {
		struct symbol a = symtab_at(T, i - 1), b = symtab_at(T, i);
		assert_true(a.start < b.start);
		assert_int_equal(symtab_lookup(T, b.start).start, b.start);
	}
}

static void lines(void **state)
{
	const char *file;
	int line;

	(void)state;
	assert_true(symtab_line(T, A(fn_hot), &file, &line));
	assert_non_null(strstr(file, "test_report.c"));
	assert_int_equal(line, fn_hot_line);
	assert_true(symtab_line(T, A(fn_warm), &file, &line));
	assert_int_equal(line, fn_hot_line + 1);
	assert_false(symtab_line(T, 0x10, &file, &line));
}

static void build_id_check(void **state)
{
	struct symtab *t;
	size_t n;
	const uint8_t *id = symtab_build_id(T, &n);
	uint8_t other[20];
	int k;

	(void)state;
	assert_non_null(id);
	assert_true(n >= 8);
	assert_int_equal(symtab_load(&t, "/proc/self/exe", id, n, err, sizeof(err)), 0);
	symtab_free(t);
	k = symtab_read_build_id("/proc/self/exe", other, sizeof(other), err, sizeof(err));
	assert_int_equal(k, (int)n);
	assert_memory_equal(other, id, n);
	other[0] ^= 0xff;
	assert_int_equal(symtab_load(&t, "/proc/self/exe", other, n, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "does not match the capture: build-id"));
	assert_null(strchr(err, '\n'));
	assert_int_equal(symtab_load(&t, "/etc/hostname", NULL, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not an ELF file"));
}

/* ---- aggregation over a session built in memory ------------------------ */

static struct session S;
static struct bp_sample_rec samples[512];
static uint64_t ips[2048];
static struct session_app apps[2];
static struct bp_record_event_desc events[2];

static void sess_init(void)
{
	memset(&S, 0, sizeof(S));
	snprintf(S.path, sizeof(S.path), "in-memory");
	S.samples = samples;
	S.ips = ips;
	S.apps = apps;
	S.events = events;
	memset(events, 0, sizeof(events));
	events[0].id = 0;
	snprintf(events[0].name, sizeof(events[0].name), "cpu-clock");
	events[1].id = 1;
	snprintf(events[1].name, sizeof(events[1].name), "cycles");
	S.nevents = 2;
	memset(apps, 0, sizeof(apps));
	apps[0] = (struct session_app){ .app_id = 1, .cpu = 0, .name = "alpha" };
	apps[1] = (struct session_app){ .app_id = 2, .cpu = 1, .name = "beta" };
	S.napps = 2;
}

static void add(uint64_t ip, uint64_t period, uint32_t cpu, uint32_t pid, uint64_t id,
		uint32_t nr, const uint64_t *chain)
{
	struct bp_sample_rec *x = &samples[S.nsamples++];

	memset(x, 0, sizeof(*x));
	x->ip = ip;
	x->period = period;
	x->cpu = cpu;
	x->pid = pid;
	x->id = id;
	x->time = S.nsamples;
	if (nr) {
		x->nr_ips = nr;
		x->ips_off = S.nips;
		memcpy(ips + S.nips, chain, nr * sizeof(*chain));
		S.nips += nr;
	}
}

static const struct report_row *row(const struct report_event *e, const char *name)
{
	for (size_t i = 0; i < e->nrows; i++)
		if (e->rows[i].name && !strcmp(e->rows[i].name, name))
			return &e->rows[i];
	return NULL;
}

static void hottest_first(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_SYM };
	struct report r;

	(void)state;
	sess_init();
	for (int i = 0; i < 70; i++)
		add(A(fn_hot) + (uint64_t)(i % 3), 100, 0, 1, 0, 0, NULL);
	for (int i = 0; i < 20; i++)
		add(A(fn_warm), 100, 0, 1, 0, 0, NULL);
	for (int i = 0; i < 9; i++)
		add(A(fn_cold) + 1, 100, 0, 1, 0, 0, NULL);
	add(0x10, 100, 0, 1, 0, 0, NULL);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	assert_int_equal(r.nevents, 2);		/* cycles: described, no samples */
	assert_int_equal(r.samples, 100);
	const struct report_event *e = &r.events[0];
	assert_int_equal(e->id, 0);
	assert_int_equal(e->samples, 100);
	assert_int_equal(e->period, 10000);
	assert_int_equal(e->nrows, 4);
	assert_string_equal(e->rows[0].name, "fn_hot");
	assert_int_equal(e->rows[0].samples, 70);
	assert_int_equal(e->rows[0].period, 7000);
	assert_int_equal(e->rows[0].key, A(fn_hot));
	assert_string_equal(e->rows[1].name, "fn_warm");
	assert_string_equal(e->rows[2].name, "fn_cold");
	assert_null(e->rows[3].name);
	assert_int_equal(e->rows[3].key, 0x10);
	assert_int_equal(r.events[1].samples, 0);
	report_free(&r);
}

static void weighted_by_period(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_SYM };
	struct report r;

	(void)state;
	sess_init();
	for (int i = 0; i < 10; i++)
		add(A(fn_hot), 1000, 0, 1, 1, 0, NULL);
	for (int i = 0; i < 3; i++)
		add(A(fn_warm), 5000, 0, 1, 1, 0, NULL);	/* fewer samples, more events */
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	const struct report_event *e = r.events[0].id == 1 ? &r.events[0] : &r.events[1];
	assert_int_equal(e->id, 1);
	assert_string_equal(e->rows[0].name, "fn_warm");
	assert_int_equal(e->rows[0].period, 15000);
	assert_int_equal(e->min_period, 1000);
	assert_int_equal(e->max_period, 5000);
	report_free(&r);
}

static void filters(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_SYM };
	struct report r;

	(void)state;
	sess_init();
	for (int i = 0; i < 10; i++)
		add(A(fn_hot), 1, 0, 1, 0, 0, NULL);
	for (int i = 0; i < 5; i++)
		add(A(fn_warm), 1, 1, 2, 0, 0, NULL);
	assert_int_equal(report_parse_cpus("1", &o.filter), 0);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	assert_int_equal(r.samples, 5);
	assert_int_equal(r.filtered_out, 10);
	assert_string_equal(r.events[0].rows[0].name, "fn_warm");
	report_free(&r);

	memset(&o.filter, 0, sizeof(o.filter));
	o.filter.app = "alpha";
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	assert_int_equal(r.samples, 10);
	assert_string_equal(r.events[0].rows[0].name, "fn_hot");
	report_free(&r);

	o.filter.app = "gamma";
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no run of an app named 'gamma'"));

	struct report_filter f;
	assert_int_equal(report_parse_cpus("0,2-3", &f), 0);
	assert_true(f.cpu_set && f.cpus[0] && !f.cpus[1] && f.cpus[2] && f.cpus[3] && !f.cpus[4]);
	assert_int_equal(report_parse_cpus("3-1", &f), -1);
	assert_int_equal(report_parse_cpus("x", &f), -1);
	assert_int_equal(report_parse_cpus("1;2", &f), -1);
	assert_int_equal(report_parse_cpus("999", &f), -1);
}

static void call_graph(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_SYM, .callgraph = true };
	struct report r;
	/* ip in fn_hot, returns into fn_mid and fn_top (a return address is
	 * after the call: looked up at address - 1). */
	const uint64_t hot[3] = { A(fn_hot), A(fn_mid) + 5, A(fn_top) + 5 };
	const uint64_t warm[2] = { A(fn_warm), A(fn_top) + 9 };

	(void)state;
	sess_init();
	for (int i = 0; i < 30; i++)
		add(hot[0], 1, 0, 1, 0, 3, hot);
	for (int i = 0; i < 10; i++)
		add(warm[0], 1, 0, 1, 0, 2, warm);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	const struct report_event *e = &r.events[0];
	assert_int_equal(e->with_chain, 40);
	const struct report_row *top = row(e, "fn_top"), *h = row(e, "fn_hot"), *m = row(e, "fn_mid");
	assert_non_null(top);
	assert_non_null(h);
	assert_non_null(m);
	/* Sorted by inclusive cost: fn_top has every sample, no self. */
	assert_ptr_equal(&e->rows[0], top);
	assert_int_equal(top->child_samples, 40);
	assert_int_equal(top->samples, 0);
	assert_int_equal(h->samples, 30);
	assert_int_equal(m->child_samples, 30);
	/* fn_hot's callers: fn_mid, then fn_top. */
	assert_int_not_equal(h->callers, 0);
	size_t c = r.pool[h->callers].first_child;
	assert_int_not_equal(c, 0);
	assert_string_equal(r.pool[c].name, "fn_mid");
	assert_int_equal(r.pool[c].samples, 30);
	assert_int_equal(r.pool[c].next_sibling, 0);
	c = r.pool[c].first_child;
	assert_string_equal(r.pool[c].name, "fn_top");
	report_free(&r);
}

/*
 * -g's chains wait, each distinct one once, until the aggregation ends (or
 * report_flush): the tree is the one a sample at a time makes. Built both
 * ways, flushed after every sample and not at all, over two events,
 * repeated chains, chains that differ in their last frame only, chainless
 * samples and a recursion, callee and caller order: the same nodes, in
 * the same order, with the same counts; the same rows.
 */
static void agg_chains(const struct report_opts *o, bool each, struct report *r)
{
	struct report_agg *A;

	assert_int_equal(report_begin(&A, T, o, r), 0);
	for (size_t i = 0; i < S.nsamples; i++) {
		const struct bp_sample_rec *x = &samples[i];
		assert_int_equal(report_add(A, &S, x, x->nr_ips ? ips + x->ips_off : NULL), 0);
		if (each)
			assert_int_equal(report_flush(A), 0);
	}
	assert_int_equal(report_end(A, &S, err, sizeof(err)), 0);
}

/* The trees under node a of ra and node b of rb: the same nodes in the same
 * order (their numbers in the pool may differ: events' roots come between). */
static void same_tree(const struct report *ra, size_t a, const struct report *rb, size_t b)
{
	assert_int_equal(!a, !b);
	if (!a)
		return;
	assert_int_equal(ra->pool[a].key, rb->pool[b].key);
	assert_ptr_equal(ra->pool[a].name, rb->pool[b].name);
	assert_int_equal(ra->pool[a].samples, rb->pool[b].samples);
	assert_int_equal(ra->pool[a].period, rb->pool[b].period);
	size_t x = ra->pool[a].first_child, y = rb->pool[b].first_child;
	for (; x && y; x = ra->pool[x].next_sibling, y = rb->pool[y].next_sibling)
		same_tree(ra, x, rb, y);
	assert_int_equal(x, 0);
	assert_int_equal(y, 0);
}

static void call_graph_batched(void **state)
{
	const uint64_t hot[3] = { A(fn_hot), A(fn_mid) + 5, A(fn_top) + 5 };
	const uint64_t hot2[3] = { A(fn_hot), A(fn_mid) + 5, A(fn_warm) + 5 };
	const uint64_t rec[4] = { A(fn_cold), A(fn_mid) + 5, A(fn_mid) + 5, A(fn_top) + 5 };
	const uint64_t warm[2] = { A(fn_warm), A(fn_top) + 9 };

	(void)state;
	sess_init();
	for (int i = 0; i < 60; i++) {
		uint64_t id = i % 7 == 3;
		switch (i % 5) {
		case 0: add(hot[0], 1 + i % 3, 0, 1, id, 3, hot); break;
		case 1: add(hot2[0], 2, 0, 1, id, 3, hot2); break;
		case 2: add(A(fn_cold) + 1, 1, 0, 1, id, 0, NULL); break;
		case 3: add(rec[0], 1, 0, 1, id, 4, rec); break;
		default: add(warm[0], 3, 0, 1, id, 2, warm); break;
		}
	}
	for (int inv = 0; inv < 2; inv++) {
		struct report_opts o = { .sort = REPORT_SORT_SYM, .callgraph = true,
					 .inverted = inv };
		struct report one, all;
		agg_chains(&o, true, &one);
		agg_chains(&o, false, &all);
		assert_int_equal(one.npool, all.npool);
		assert_int_equal(one.nevents, 2);
		assert_int_equal(all.nevents, 2);
		for (size_t ev = 0; ev < 2; ev++) {
			const struct report_event *a = &one.events[ev], *b = &all.events[ev];
			assert_int_equal(a->nrows, b->nrows);
			for (size_t k = 0; k < a->nrows; k++) {
				assert_int_equal(a->rows[k].key, b->rows[k].key);
				assert_int_equal(a->rows[k].samples, b->rows[k].samples);
				assert_int_equal(a->rows[k].period, b->rows[k].period);
				assert_int_equal(a->rows[k].child_samples, b->rows[k].child_samples);
				assert_int_equal(a->rows[k].child_period, b->rows[k].child_period);
				same_tree(&one, a->rows[k].callers, &all, b->rows[k].callers);
			}
		}
		report_free(&one);
		report_free(&all);
	}
}

/* -g across an interrupt: the RIP after isr_frame_return, on fn_warm's
 * first byte, is fn_warm (not the function before it), a return address
 * on it is not. */
static void call_graph_interrupted(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_SYM, .callgraph = true };
	struct report r;
	const uint64_t irq[4] = { A(fn_hot), A(isr_frame_return), A(fn_warm), A(fn_top) + 9 };
	const uint64_t ret[3] = { A(fn_hot), A(fn_warm), A(fn_top) + 9 };

	(void)state;
	sess_init();
	for (int i = 0; i < 4; i++)
		add(irq[0], 1, 0, 1, 0, 4, irq);
	add(ret[0], 1, 0, 1, 0, 3, ret);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	const struct report_row *w = row(&r.events[0], "fn_warm");
	assert_non_null(w);
	assert_int_equal(w->child_samples, 4);
	assert_int_equal(w->samples, 0);
	report_free(&r);
}

/* script --json across the same interrupt: the entry after isr_frame_return
 * is named as it is, fn_warm+0x0; the return address after it at - 1. */
static void script_interrupted(void **state)
{
	const uint64_t irq[4] = { A(fn_hot), A(isr_frame_return), A(fn_warm), A(fn_top) + 9 };
	char cap[128], out[] = "/tmp/test_report-script-XXXXXX", line[4096], want[64];
	char *argv[] = { "script", "--json", "-i", cap, "-k", "/proc/self/exe", NULL };
	struct capgen *g = capgen_tmp(cap, sizeof(cap), "test_report");
	struct symbol top = symtab_lookup(T, A(fn_top) + 8);
	bool seen = false;
	int fd, saved;
	FILE *f;

	(void)state;
	assert_non_null(g);
	assert_int_equal(capgen_open(g, cap, CAPGEN_ST | BP_SAMPLE_CALLCHAIN, NULL, err,
				     sizeof(err)), 0);
	capgen_meta(g, 1, 1000000000, 0, NULL, 0);
	capgen_event(g, 0, "cpu-clock", 0, 1000000);
	capgen_cpu(g, 0, BP_PMU_SOFT);
	capgen_sample(g, 0, 0, irq[0], 1000, 1000000, 1, 4, irq);
	assert_int_equal(capgen_close(g, 0, err, sizeof(err)), 0);

	assert_true((fd = mkstemp(out)) >= 0);
	fflush(stdout);
	saved = dup(1);
	dup2(fd, 1);
	int rc = cmd_script(6, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(fd);
	assert_int_equal(rc, 0);

	snprintf(want, sizeof(want), "\"sym\":\"%s+0x%" PRIx64 "\"", top.name,
		 A(fn_top) + 8 - top.start);
	assert_non_null(f = fopen(out, "r"));
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "\"callchain\"")) {
			assert_non_null(strstr(line, "{\"ip\":\"0x"));
			assert_non_null(strstr(line, "\"sym\":\"fn_warm+0x0\""));
			assert_non_null(strstr(line, want));
			seen = true;
		}
	fclose(f);
	unlink(out);
	capgen_tmp_free(g, cap);
	assert_true(seen);
}

/* -G (perf's caller order): a row's tree runs from the outermost caller
 * down to the row's function. */
static void call_graph_inverted(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_SYM, .callgraph = true, .inverted = true };
	struct report r;
	const uint64_t hot[3] = { A(fn_hot), A(fn_mid) + 5, A(fn_top) + 5 };
	const char *want[] = { "fn_top", "fn_mid", "fn_hot" };

	(void)state;
	sess_init();
	for (int i = 0; i < 7; i++)
		add(hot[0], 1, 0, 1, 0, 3, hot);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	const struct report_row *h = row(&r.events[0], "fn_hot");
	assert_non_null(h);
	assert_int_equal(row(&r.events[0], "fn_top")->child_samples, 7);
	size_t c = h->callers;
	for (size_t i = 0; i < 3; i++) {
		c = r.pool[c].first_child;
		assert_int_not_equal(c, 0);
		assert_string_equal(r.pool[c].name, want[i]);
		assert_int_equal(r.pool[c].samples, 7);
		assert_int_equal(r.pool[c].next_sibling, 0);
	}
	assert_int_equal(r.pool[c].first_child, 0);
	report_free(&r);
}

/* Every function in a chain has its tree, those without samples of their
 * own too (perf's --children): -G, its chains from the outermost caller
 * down to it; -g, its callers, innermost first. */
static void call_graph_children(void **state)
{
	struct report r;
	const uint64_t hot[3] = { A(fn_hot), A(fn_mid) + 5, A(fn_top) + 5 };
	const uint64_t warm[2] = { A(fn_warm), A(fn_top) + 9 };

	(void)state;
	for (int inv = 0; inv < 2; inv++) {
		struct report_opts o = { .sort = REPORT_SORT_SYM, .callgraph = true,
					 .inverted = inv };
		sess_init();
		for (int i = 0; i < 7; i++)
			add(hot[0], 1, 0, 1, 0, 3, hot);
		for (int i = 0; i < 2; i++)
			add(warm[0], 1, 0, 1, 0, 2, warm);
		assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
		const struct report_row *m = row(&r.events[0], "fn_mid");
		const struct report_row *top = row(&r.events[0], "fn_top");
		assert_non_null(m);
		assert_non_null(top);
		assert_int_equal(m->samples, 0);
		/* fn_mid: -G fn_top then fn_mid; -g fn_top. */
		assert_int_not_equal(m->callers, 0);
		size_t c = r.pool[m->callers].first_child;
		assert_int_not_equal(c, 0);
		assert_string_equal(r.pool[c].name, "fn_top");
		assert_int_equal(r.pool[c].samples, 7);
		assert_int_equal(r.pool[c].next_sibling, 0);
		c = r.pool[c].first_child;
		if (inv) {
			assert_string_equal(r.pool[c].name, "fn_mid");
			assert_int_equal(r.pool[c].first_child, 0);
		} else {
			assert_int_equal(c, 0);
		}
		/* fn_top, every sample's outermost caller: -G itself alone;
		 * -g no callers. */
		assert_int_not_equal(top->callers, 0);
		c = r.pool[top->callers].first_child;
		if (inv) {
			assert_string_equal(r.pool[c].name, "fn_top");
			assert_int_equal(r.pool[c].samples, 9);
			assert_int_equal(r.pool[c].first_child, 0);
		} else {
			assert_int_equal(c, 0);
		}
		report_free(&r);
	}
}

/* -g on samples without a chain: each still counts toward its own
 * function's inclusive cost, so Children is never below Self. */
static void call_graph_chainless(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_SYM, .callgraph = true };
	struct report r;
	const uint64_t hot[3] = { A(fn_hot), A(fn_mid) + 5, A(fn_top) + 5 };

	(void)state;
	sess_init();
	for (int i = 0; i < 5; i++)
		add(hot[0], 1, 0, 1, 0, 3, hot);
	for (int i = 0; i < 7; i++)
		add(A(fn_hot), 1, 0, 1, 0, 0, NULL);
	for (int i = 0; i < 3; i++)
		add(A(fn_warm), 1, 0, 1, 0, 0, NULL);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	const struct report_event *e = &r.events[0];
	assert_int_equal(e->with_chain, 5);
	const struct report_row *h = row(e, "fn_hot"), *w = row(e, "fn_warm");
	assert_non_null(h);
	assert_non_null(w);
	assert_int_equal(h->samples, 12);
	assert_int_equal(h->child_samples, 12);
	assert_int_equal(h->child_period, h->period);
	assert_int_equal(w->child_samples, 3);
	assert_int_equal(w->child_period, w->period);
	for (size_t i = 0; i < e->nrows; i++)
		assert_true(e->rows[i].child_period >= e->rows[i].period);
	report_free(&r);
}

static void by_line(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_LINE };
	struct report r;

	(void)state;
	sess_init();
	for (int i = 0; i < 4; i++)
		add(A(fn_hot), 1, 0, 1, 0, 0, NULL);
	add(A(fn_warm), 1, 0, 1, 0, 0, NULL);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	const struct report_event *e = &r.events[0];
	assert_int_equal(e->nrows, 2);
	assert_non_null(strstr(e->rows[0].file, "test_report.c"));
	assert_int_equal(e->rows[0].line, fn_hot_line);
	assert_int_equal(e->rows[0].samples, 4);
	assert_string_equal(e->rows[0].name, "fn_hot");
	assert_int_equal(e->rows[1].line, fn_hot_line + 1);
	report_free(&r);
}

/* --sort srcline: one row per line, as perf, whatever functions share
 * it; the row names the first and counts the others. */
static void by_line_merges_functions(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_LINE };
	struct report r;

	(void)state;
	sess_init();
	for (int i = 0; i < 6; i++)
		add(A(fn_twin_a), 1, 0, 1, 0, 0, NULL);
	for (int i = 0; i < 4; i++)
		add(A(fn_twin_b), 1, 0, 1, 0, 0, NULL);
	add(A(fn_hot), 1, 0, 1, 0, 0, NULL);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	const struct report_event *e = &r.events[0];
	assert_int_equal(e->nrows, 2);
	assert_int_equal(e->rows[0].samples, 10);
	assert_int_equal(e->rows[0].more_functions, 1);
	assert_non_null(e->rows[0].name);
	assert_true(!strcmp(e->rows[0].name, "fn_twin_a") || !strcmp(e->rows[0].name, "fn_twin_b"));
	assert_int_equal(e->rows[1].samples, 1);
	assert_int_equal(e->rows[1].more_functions, 0);
	report_free(&r);
}

/* perf's --time START,STOP: seconds.nanoseconds, either end left out;
 * percent slices and several ranges refused by name. */
static void time_window(void **state)
{
	struct report_filter f = { 0 };

	(void)state;
	assert_int_equal(report_parse_time("1.5,2.000000003", &f, err, sizeof(err)), 0);
	assert_true(f.time_set);
	assert_int_equal(f.time_lo, 1500000000ull);
	assert_int_equal(f.time_hi, 2000000003ull);
	assert_int_equal(report_parse_time(",0.25", &f, err, sizeof(err)), 0);
	assert_int_equal(f.time_lo, 0);
	assert_int_equal(f.time_hi, 250000000ull);
	assert_int_equal(report_parse_time("3,", &f, err, sizeof(err)), 0);
	assert_int_equal(f.time_lo, 3000000000ull);
	assert_int_equal(f.time_hi, UINT64_MAX);
	assert_int_equal(report_parse_time("10%/2", &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "percent slices are not supported"));
	assert_int_equal(report_parse_time("1,2 3,4", &f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "one range only"));
	assert_int_equal(report_parse_time("2,1", &f, err, sizeof(err)), -1);
	assert_int_equal(report_parse_time("1.5", &f, err, sizeof(err)), -1);
	assert_int_equal(report_parse_time("x,1", &f, err, sizeof(err)), -1);
	assert_int_equal(report_parse_time("1,2s", &f, err, sizeof(err)), -1);

	/* Without RUN_META the clock is the sample's own time (1, 2, ...). */
	struct report_opts o = { .sort = REPORT_SORT_SYM };
	struct report r;
	sess_init();
	for (int i = 0; i < 10; i++)
		add(i < 5 ? A(fn_hot) : A(fn_warm), 1, 0, 1, 0, 0, NULL);
	o.filter.time_set = true;
	o.filter.time_lo = 4;
	o.filter.time_hi = 7;
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	assert_int_equal(r.samples, 4);
	assert_int_equal(r.filtered_out, 6);
	assert_int_equal(row(&r.events[0], "fn_hot")->samples, 2);
	assert_int_equal(row(&r.events[0], "fn_warm")->samples, 2);
	report_free(&r);
}

/* -S: only the samples in the functions named; shares are of those. */
static void symbol_filter(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_SYM, .filter.symbols = "fn_cold,fn_warm" };
	struct report r;

	(void)state;
	assert_true(report_symbol_in("a,fn_warm", "fn_warm"));
	assert_false(report_symbol_in("fn_warm", "fn_war"));
	assert_false(report_symbol_in("fn_war", "fn_warm"));
	assert_false(report_symbol_in("fn_warm", NULL));
	sess_init();
	for (int i = 0; i < 6; i++)
		add(A(fn_hot), 1, 0, 1, 0, 0, NULL);
	for (int i = 0; i < 3; i++)
		add(A(fn_warm), 1, 0, 1, 0, 0, NULL);
	add(A(fn_cold), 1, 0, 1, 0, 0, NULL);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	const struct report_event *e = &r.events[0];
	assert_int_equal(e->nrows, 2);
	assert_int_equal(e->period, 4);
	assert_int_equal(r.filtered_out, 6);
	assert_null(row(e, "fn_hot"));
	assert_int_equal(row(e, "fn_warm")->samples, 3);
	report_free(&r);
}

/* --max-stack N: -g uses a chain's first N frames, the leaf first. */
static void max_stack(void **state)
{
	struct report_opts o = { .sort = REPORT_SORT_SYM, .callgraph = true, .max_stack = 2 };
	struct report r;
	const uint64_t hot[3] = { A(fn_hot), A(fn_mid) + 5, A(fn_top) + 5 };

	(void)state;
	sess_init();
	for (int i = 0; i < 5; i++)
		add(hot[0], 1, 0, 1, 0, 3, hot);
	assert_int_equal(report_aggregate(&S, T, &o, &r, err, sizeof(err)), 0);
	const struct report_event *e = &r.events[0];
	assert_non_null(row(e, "fn_mid"));
	assert_int_equal(row(e, "fn_mid")->child_samples, 5);
	assert_null(row(e, "fn_top"));
	report_free(&r);
}

/* A capture whose RUN_META names this binary's build-id (or another). */
static void session_kernel_choice(void **state)
{
	char path[64], used[256];
	struct capgen *g = malloc(sizeof(*g));
	struct session s;
	struct symtab *t;
	size_t n;
	const uint8_t *id = symtab_build_id(T, &n);
	uint8_t wrong[20];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/test_report-XXXXXX");
	assert_true((fd = mkstemp(path)) >= 0);
	close(fd);
	for (int pass = 0; pass < 2; pass++) {
		memcpy(wrong, id, n < 20 ? n : 20);
		wrong[3] ^= pass;
		assert_int_equal(capgen_open(g, path, CAPGEN_ST, NULL, err, sizeof(err)), 0);
		capgen_meta(g, 1, 1000000000, 0, wrong, n < 20 ? n : 20);
		capgen_event(g, 0, "cpu-clock", 0, 1000);
		capgen_sample(g, 0, 0, A(fn_hot), 5, 1000, 1, 0, NULL);
		assert_int_equal(capgen_close(g, 0, err, sizeof(err)), 0);
		assert_int_equal(session_load(&s, path, err, sizeof(err)), 0);
		int rc = session_symtab(&s, "/proc/self/exe", false, &t, used, sizeof(used), err,
					sizeof(err));
		if (pass == 0) {
			assert_int_equal(rc, 0);
			assert_string_equal(used, "/proc/self/exe");
			struct report_opts o = { .sort = REPORT_SORT_SYM };
			struct report r;
			assert_int_equal(report_aggregate(&s, t, &o, &r, err, sizeof(err)), 0);
			assert_string_equal(r.events[0].rows[0].name, "fn_hot");
			report_free(&r);
			symtab_free(t);
		} else {
			assert_int_equal(rc, -1);
			assert_non_null(strstr(err, "does not match the capture"));
			/* --force loads it anyway (with a warning on stderr). */
			assert_int_equal(session_symtab(&s, "/proc/self/exe", true, &t, used,
							sizeof(used), err, sizeof(err)), 0);
			symtab_free(t);
		}
		session_free(&s);
	}
	unlink(path);
	free(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(lookup),
		cmocka_unit_test(lines),
		cmocka_unit_test(build_id_check),
		cmocka_unit_test(hottest_first),
		cmocka_unit_test(weighted_by_period),
		cmocka_unit_test(filters),
		cmocka_unit_test(call_graph),
		cmocka_unit_test(call_graph_chainless),
		cmocka_unit_test(call_graph_interrupted),
		cmocka_unit_test(call_graph_batched),
		cmocka_unit_test(script_interrupted),
		cmocka_unit_test(call_graph_inverted),
		cmocka_unit_test(call_graph_children),
		cmocka_unit_test(by_line),
		cmocka_unit_test(by_line_merges_functions),
		cmocka_unit_test(time_window),
		cmocka_unit_test(symbol_filter),
		cmocka_unit_test(max_stack),
		cmocka_unit_test(session_kernel_choice),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
