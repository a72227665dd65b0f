/*
 * tools/report.c — `bareperf report`: per event, the hottest functions
 * (or source lines) of a capture, symbolized against the kernel.elf that
 * ran, with the run's metadata and every loss above the table.
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/report.h"
#include "tools/util/trace/trace.h"

/* ---- hash tables keyed by a 64-bit value ------------------------------ */

struct ipent {
	uint64_t ip;
	uint64_t ctx;			/* cpu << 32 | pid with those sort keys, else 0 */
	uint64_t samples, period;	/* samples == 0: slot free */
};

struct iptab {
	struct ipent *e;
	size_t mask, n;
};

static inline size_t hash64(uint64_t k, size_t mask)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & mask;
}

static int iptab_init(struct iptab *h, size_t cap)
{
	h->e = calloc(cap, sizeof(*h->e));
	h->mask = cap - 1;
	h->n = 0;
	return h->e ? 0 : -1;
}

static int iptab_grow(struct iptab *h)
{
	struct iptab g;

	if (iptab_init(&g, 2 * (h->mask + 1)))
		return -1;
	for (size_t i = 0; i <= h->mask; i++) {
		const struct ipent *x = &h->e[i];
		if (!x->samples)
			continue;
		size_t j = hash64(x->ip ^ x->ctx * 0x9e3779b97f4a7c15ull, g.mask);
		while (g.e[j].samples)
			j = (j + 1) & g.mask;
		g.e[j] = *x;
		g.n++;
	}
	free(h->e);
	*h = g;
	return 0;
}

/* Add (samples, period) to the entry of (ip, ctx). */
static inline int iptab_add(struct iptab *h, uint64_t ip, uint64_t ctx, uint64_t samples,
			    uint64_t period)
{
	size_t j = hash64(ip ^ ctx * 0x9e3779b97f4a7c15ull, h->mask);

	for (;;) {
		struct ipent *x = &h->e[j];
		if (x->samples && x->ip == ip && x->ctx == ctx) {
			x->samples += samples;
			x->period += period;
			return 0;
		}
		if (!x->samples)
			break;
		j = (j + 1) & h->mask;
	}
	if (2 * (h->n + 1) > h->mask + 1) {
		if (iptab_grow(h))
			return -1;
		return iptab_add(h, ip, ctx, samples, period);
	}
	h->e[j] = (struct ipent){ ip, ctx, samples, period };
	h->n++;
	return 0;
}

/* ---- symbols, memoized per address ------------------------------------ */

struct symcache {
	const struct symtab *t;
	struct { uint64_t addr, key; const char *name; bool used; } *e;
	size_t mask, n;
};

static int symcache_init(struct symcache *c, const struct symtab *t)
{
	c->t = t;
	c->mask = 4095;
	c->n = 0;
	c->e = calloc(c->mask + 1, sizeof(*c->e));
	return c->e ? 0 : -1;
}

/* The function holding addr: its start as the key, or addr itself. */
static uint64_t symcache_get(struct symcache *c, uint64_t addr, const char **name)
{
	size_t j = hash64(addr, c->mask);

	while (c->e[j].used) {
		if (c->e[j].addr == addr) {
			*name = c->e[j].name;
			return c->e[j].key;
		}
		j = (j + 1) & c->mask;
	}
	struct symbol s = symtab_lookup(c->t, addr);
	uint64_t key = s.name ? s.start : addr;
	if (2 * (c->n + 1) > c->mask + 1) {
		/* Full enough: start over rather than rehash (a cache, not a table). */
		memset(c->e, 0, (c->mask + 1) * sizeof(*c->e));
		c->n = 0;
		j = hash64(addr, c->mask);
	}
	c->e[j].addr = addr;
	c->e[j].key = key;
	c->e[j].name = s.name;
	c->e[j].used = true;
	c->n++;
	*name = s.name;
	return key;
}

/* ---- aggregation ---------------------------------------------------- */

int report_parse_cpus(const char *list, struct report_filter *f)
{
	const char *p = list;

	memset(f->cpus, 0, sizeof(f->cpus));
	f->cpu_set = true;
	while (*p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b = a;
		if (end == p || a >= SESSION_MAX_CPUS)
			return -1;
		p = end;
		if (*p == '-') {
			b = strtoul(++p, &end, 10);
			if (end == p || b >= SESSION_MAX_CPUS || b < a)
				return -1;
			p = end;
		}
		for (unsigned long c = a; c <= b; c++)
			f->cpus[c] = true;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return 0;
}

static const struct { const char *name; enum report_key key; } sort_names[] = {
	{ "sym", RK_SYM }, { "symbol", RK_SYM }, { "dso", RK_DSO }, { "srcline", RK_SRCLINE },
	{ "line", RK_SRCLINE }, { "cpu", RK_CPU }, { "comm", RK_COMM }, { "app", RK_COMM },
	{ "pid", RK_PID }, { "run", RK_PID },
};

static int sort_key(const char *w, size_t n, enum report_key *k)
{
	for (size_t i = 0; i < sizeof(sort_names) / sizeof(sort_names[0]); i++)
		if (strlen(sort_names[i].name) == n && !strncmp(sort_names[i].name, w, n)) {
			*k = sort_names[i].key;
			return 0;
		}
	return -1;
}

int report_parse_sort(const char *list, struct report_opts *o, char *err, size_t errlen)
{
	const char *p = list;

	o->nkeys = 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		enum report_key k;
		if (!n || sort_key(p, n, &k)) {
			snprintf(err, errlen, "'%.*s' is not a sort key (sym, dso, srcline, cpu, comm, "
				 "pid)", (int)n, p);
			return -1;
		}
		bool dup = false;
		for (size_t i = 0; i < o->nkeys; i++)
			dup |= o->keys[i] == k;
		if (!dup)
			o->keys[o->nkeys++] = k;
		p += n;
		if (*p == ',' && *++p == 0) {
			snprintf(err, errlen, "'%s' ends in a comma", list);
			return -1;
		}
	}
	if (!o->nkeys) {
		snprintf(err, errlen, "no sort key given");
		return -1;
	}
	/* The one-key forms keep their meaning for the rest of the tool. */
	o->sort = o->nkeys == 1 && o->keys[0] == RK_SRCLINE ? REPORT_SORT_LINE : REPORT_SORT_SYM;
	return 0;
}

struct evstate {
	struct iptab ipt;		/* ip -> self cost */
	struct iptab child;		/* -g: function key -> inclusive cost */
	size_t root;			/* -g: virtual root of the callers trees */
};

struct report_agg {
	struct report *r;
	struct report_opts o;
	struct symcache sc;
	struct evstate *ev;		/* parallel to r->events */
	size_t cap_ev;
	uint64_t last_id;
	size_t last_ev;
	uint32_t last_pid;		/* --app: the last pid checked, and its answer */
	bool last_pid_ok, have_last_pid, app_found;
	bool ctx_cpu, ctx_pid;		/* sort keys that split an IP's samples */
	const struct session *s;	/* report_end's, for app names */
	struct cment { uint64_t key; size_t parent, node; } *cm;	/* -g: (parent, key) -> node */
	size_t cm_mask, cm_n;
};

static size_t node_new(struct report *r, uint64_t key, const char *name)
{
	if (r->npool + 1 >= r->cap_pool) {
		size_t n = r->cap_pool ? 2 * r->cap_pool : 1024;
		struct report_node *q = realloc(r->pool, n * sizeof(*q));
		if (!q)
			return 0;
		r->pool = q;
		r->cap_pool = n;
	}
	if (!r->npool)
		r->npool = 1;		/* index 0 means "none" */
	r->pool[r->npool] = (struct report_node){ key, name, 0, 0, 0, 0 };
	return r->npool++;
}

/*
 * The child of parent with key, made on first sight: a hash table of
 * (parent, key) -> node, so a node with thousands of callers costs one
 * probe, not a walk of its sibling list (which printing still uses).
 */
static int childmap_grow(struct report_agg *A)
{
	size_t cap = A->cm_mask ? 2 * (A->cm_mask + 1) : 4096;
	struct cment *e = calloc(cap, sizeof(*e));

	if (!e)
		return -1;
	for (size_t i = 0; A->cm && i <= A->cm_mask; i++) {
		size_t j;
		if (!A->cm[i].node)
			continue;
		j = hash64(A->cm[i].key ^ A->cm[i].parent * 0x9e3779b97f4a7c15ull, cap - 1);
		while (e[j].node)
			j = (j + 1) & (cap - 1);
		e[j] = A->cm[i];
	}
	free(A->cm);
	A->cm = e;
	A->cm_mask = cap - 1;
	return 0;
}

static size_t node_child(struct report_agg *A, size_t parent, uint64_t key, const char *name)
{
	struct report *r = A->r;
	size_t c, j;

	if (2 * (A->cm_n + 1) > A->cm_mask + 1 && childmap_grow(A))
		return 0;
	for (j = hash64(key ^ parent * 0x9e3779b97f4a7c15ull, A->cm_mask); A->cm[j].node;
	     j = (j + 1) & A->cm_mask)
		if (A->cm[j].parent == parent && A->cm[j].key == key)
			return A->cm[j].node;
	c = node_new(r, key, name);
	if (!c)
		return 0;
	r->pool[c].next_sibling = r->pool[parent].first_child;
	r->pool[parent].first_child = c;
	A->cm[j] = (struct cment){ key, parent, c };
	A->cm_n++;
	return c;
}

#define MAX_CHAIN 128

/* -g: one sample's chain into the event's tree and inclusive costs. */
static int add_chain(struct report_agg *A, struct evstate *E, const struct bp_sample_rec *x,
		     const uint64_t *ips)
{
	struct report *r = A->r;
	uint64_t keys[MAX_CHAIN];
	const char *names[MAX_CHAIN];
	size_t n = 0, node;

	keys[n] = symcache_get(&A->sc, x->ip, &names[n]);
	n++;
	for (uint32_t i = 1; i < x->nr_ips && n < MAX_CHAIN; i++) {
		uint64_t ret = ips[i];
		if (!ret || ret >= (uint64_t)-4095)	/* none, or a perf context marker */
			continue;
		/* A return address: the call is the instruction before it. */
		keys[n] = symcache_get(&A->sc, ret - 1, &names[n]);
		n++;
	}
	node = E->root;
	for (size_t i = 0; i < n; i++) {
		node = node_child(A, node, keys[i], names[i]);
		if (!node)
			return -1;
		r->pool[node].samples++;
		r->pool[node].period += x->period;
	}
	/* Inclusive cost once per function, however often it recurs. */
	for (size_t i = 0; i < n; i++) {
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = keys[j] == keys[i];
		if (!seen && iptab_add(&E->child, keys[i], 0, 1, x->period))
			return -1;
	}
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct report_row *x = a, *y = b;
	uint64_t px = x->child_period > x->period ? x->child_period : x->period;
	uint64_t py = y->child_period > y->period ? y->child_period : y->period;

	if (px != py)
		return px > py ? -1 : 1;
	if (x->period != y->period)
		return x->period > y->period ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static const char *app_of(const struct session *s, uint32_t pid)
{
	for (size_t i = 0; s && i < s->napps; i++)
		if (s->apps[i].app_id == pid)
			return s->apps[i].name;
	return "";
}

/* Rows are merged when every sort key compares equal (qsort's context
 * goes through this file-scope pointer: qsort has none). */
static const struct report_agg *cmp_agg;

static int cmp_keys(const void *a, const void *b)
{
	const struct report_row *x = a, *y = b;
	const struct report_agg *A = cmp_agg;
	int c;

	for (size_t i = 0; i < A->o.nkeys; i++) {
		switch (A->o.keys[i]) {
		case RK_SYM:
			if (x->key != y->key)
				return x->key < y->key ? -1 : 1;
			break;
		case RK_DSO:
			break;			/* one image */
		case RK_SRCLINE:
			if (!x->file != !y->file)
				return x->file ? -1 : 1;
			if (x->file && (c = strcmp(x->file, y->file)))
				return c;
			if (!x->file && x->line_addr != y->line_addr)
				return x->line_addr < y->line_addr ? -1 : 1;
			if (x->line != y->line)
				return x->line - y->line;
			break;
		case RK_CPU:
			if (x->cpu != y->cpu)
				return x->cpu < y->cpu ? -1 : 1;
			break;
		case RK_COMM:
			if ((c = strcmp(app_of(A->s, x->pid), app_of(A->s, y->pid))))
				return c;
			break;
		case RK_PID:
			if (x->pid != y->pid)
				return x->pid < y->pid ? -1 : 1;
			break;
		case RK_NKEYS:
			break;
		}
	}
	return 0;
}

/* Index of key in rows[0, n) sorted by key, or n. */
static size_t find_key(const struct report_row *rows, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rows[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && rows[lo].key == key ? lo : n;
}

/* Rows of one event from its distinct IPs. */
static int build_rows(struct report_agg *A, size_t ev)
{
	struct report_event *E = &A->r->events[ev];
	struct evstate *S = &A->ev[ev];
	struct iptab *h = &S->ipt;
	struct report_row *rows;
	size_t n = 0, m = 0;
	bool want_line = false;

	for (size_t i = 0; i < A->o.nkeys; i++)
		want_line |= A->o.keys[i] == RK_SRCLINE;
	rows = calloc(h->n + S->child.n + 1, sizeof(*rows));
	if (!rows)
		return -1;
	for (size_t i = 0; i <= h->mask; i++) {
		const struct ipent *x = &h->e[i];
		struct report_row *w;
		if (!x->samples)
			continue;
		w = &rows[n++];
		w->samples = x->samples;
		w->period = x->period;
		w->key = symcache_get(&A->sc, x->ip, &w->name);
		w->cpu = (uint32_t)(x->ctx >> 32);
		w->pid = (uint32_t)x->ctx;
		if (want_line && !symtab_line(A->sc.t, x->ip, &w->file, &w->line))
			w->file = NULL, w->line = 0, w->line_addr = x->ip;
	}
	/* By the sort keys; merge equal ones. */
	cmp_agg = A;
	qsort(rows, n, sizeof(*rows), cmp_keys);
	for (size_t i = 0; i < n; i++) {
		if (m && !cmp_keys(&rows[m - 1], &rows[i])) {
			rows[m - 1].samples += rows[i].samples;
			rows[m - 1].period += rows[i].period;
			continue;
		}
		rows[m++] = rows[i];
	}
	n = m;
	if (A->o.callgraph) {
		/* Inclusive costs; rows for callers that have no self samples. */
		size_t extra = n;
		for (size_t i = 0; i <= S->child.mask; i++) {
			const struct ipent *x = &S->child.e[i];
			size_t k;
			if (!x->samples)
				continue;
			if ((k = find_key(rows, n, x->ip)) < n) {
				rows[k].child_samples = x->samples;
				rows[k].child_period = x->period;
				continue;
			}
			struct symbol sy = symtab_lookup(A->sc.t, x->ip);
			rows[extra++] = (struct report_row){
				.key = x->ip, .name = sy.name && sy.start == x->ip ? sy.name : NULL,
				.child_samples = x->samples, .child_period = x->period };
		}
		/* Each leaf function's callers tree: the root's child with its key. */
		for (size_t c = A->r->pool[S->root].first_child; c; c = A->r->pool[c].next_sibling) {
			size_t k = find_key(rows, n, A->r->pool[c].key);
			if (k < n)
				rows[k].callers = c;
		}
		n = extra;
	}
	qsort(rows, n, sizeof(*rows), cmp_row);
	E->rows = rows;
	E->nrows = n;
	return 0;
}

int report_begin(struct report_agg **out, const struct symtab *t, const struct report_opts *o,
		 struct report *r)
{
	struct report_agg *A = calloc(1, sizeof(*A));

	memset(r, 0, sizeof(*r));
	*out = A;
	if (!A)
		return -1;
	A->r = r;
	A->o = *o;
	if (!A->o.nkeys) {
		A->o.keys[0] = o->sort == REPORT_SORT_LINE ? RK_SRCLINE : RK_SYM;
		A->o.nkeys = 1;
	}
	for (size_t i = 0; i < A->o.nkeys; i++) {
		A->ctx_cpu |= A->o.keys[i] == RK_CPU;
		A->ctx_pid |= A->o.keys[i] == RK_COMM || A->o.keys[i] == RK_PID;
	}
	A->last_id = UINT64_MAX;
	if (symcache_init(&A->sc, t)) {
		free(A);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* The slot of event id, made on first sight; SIZE_MAX if out of memory. */
static size_t event_slot(struct report_agg *A, uint64_t id)
{
	struct report *r = A->r;
	size_t ev;

	for (ev = 0; ev < r->nevents; ev++)
		if (r->events[ev].id == id)
			return ev;
	if (r->nevents == A->cap_ev) {
		size_t n = A->cap_ev ? 2 * A->cap_ev : 8;
		struct report_event *e = realloc(r->events, n * sizeof(*e));
		if (!e)
			return SIZE_MAX;
		r->events = e;
		struct evstate *s = realloc(A->ev, n * sizeof(*s));
		if (!s)
			return SIZE_MAX;
		A->ev = s;
		A->cap_ev = n;
	}
	memset(&r->events[ev], 0, sizeof(r->events[ev]));
	memset(&A->ev[ev], 0, sizeof(A->ev[ev]));
	r->events[ev].id = id;
	r->events[ev].min_period = UINT64_MAX;
	if (iptab_init(&A->ev[ev].ipt, 4096) ||
	    (A->o.callgraph && (iptab_init(&A->ev[ev].child, 1024) ||
				!(A->ev[ev].root = node_new(r, 0, NULL)))))
		return SIZE_MAX;
	r->nevents++;
	return ev;
}

/* --app: is pid a run of the app? (APP_START precedes its samples.) */
static bool app_match(struct report_agg *A, const struct session *s, uint32_t pid)
{
	if (A->have_last_pid && pid == A->last_pid)
		return A->last_pid_ok;
	A->have_last_pid = true;
	A->last_pid = pid;
	A->last_pid_ok = false;
	for (size_t i = 0; i < s->napps; i++)
		if (s->apps[i].app_id == pid && !strcmp(s->apps[i].name, A->o.filter.app)) {
			A->last_pid_ok = A->app_found = true;
			break;
		}
	return A->last_pid_ok;
}

int report_add(struct report_agg *A, const struct session *s, const struct bp_sample_rec *x,
	       const uint64_t *ips)
{
	struct report *r = A->r;
	size_t ev;

	if (x->cpu < SESSION_MAX_CPUS)
		r->cpu_seen[x->cpu] = true;
	if (A->o.filter.cpu_set && (x->cpu >= SESSION_MAX_CPUS || !A->o.filter.cpus[x->cpu])) {
		r->filtered_out++;
		return 0;
	}
	if (A->o.filter.app && !app_match(A, s, x->pid)) {
		r->filtered_out++;
		return 0;
	}
	if (x->id == A->last_id) {
		ev = A->last_ev;
	} else {
		if ((ev = event_slot(A, x->id)) == SIZE_MAX)
			return -1;
		A->last_id = x->id;
		A->last_ev = ev;
	}
	struct report_event *E = &r->events[ev];
	if (iptab_add(&A->ev[ev].ipt, x->ip,
		      (A->ctx_cpu ? (uint64_t)x->cpu << 32 : 0) | (A->ctx_pid ? x->pid : 0), 1,
		      x->period))
		return -1;
	E->samples++;
	E->period += x->period;
	if (x->period < E->min_period)
		E->min_period = x->period;
	if (x->period > E->max_period)
		E->max_period = x->period;
	r->samples++;
	if (x->nr_ips)
		E->with_chain++;
	if (A->o.callgraph && x->nr_ips && add_chain(A, &A->ev[ev], x, ips))
		return -1;
	return 0;
}

int report_end(struct report_agg *A, const struct session *s, char *err, size_t errlen)
{
	struct report *r = A->r;
	int rc = 0;

	A->s = s;
	if (A->o.filter.app && !A->app_found) {
		bool any = false;
		for (size_t i = 0; i < s->napps && !any; i++)
			any = !strcmp(s->apps[i].name, A->o.filter.app);
		if (!any) {
			snprintf(err, errlen, "no run of an app named '%s' in %s", A->o.filter.app,
				 s->path);
			rc = -1;
		}
	}
	/* Events described but without samples get an empty slot, in desc order. */
	for (size_t i = 0; !rc && i < s->nevents; i++)
		if (event_slot(A, s->events[i].id) == SIZE_MAX)
			rc = -1;
	for (size_t ev = 0; !rc && ev < r->nevents; ev++)
		if (build_rows(A, ev))
			rc = -1;
	if (rc && !err[0])
		snprintf(err, errlen, "out of memory aggregating %s", s->path);
	report_abort(A);
	if (rc)
		report_free(r);
	return rc;
}

void report_abort(struct report_agg *A)
{
	if (!A)
		return;
	for (size_t ev = 0; ev < A->r->nevents && A->ev; ev++) {
		free(A->ev[ev].ipt.e);
		free(A->ev[ev].child.e);
	}
	free(A->ev);
	free(A->sc.e);
	free(A->cm);
	free(A);
}

int report_aggregate(const struct session *s, const struct symtab *t,
		     const struct report_opts *o, struct report *r, char *err, size_t errlen)
{
	struct report_agg *A;

	err[0] = 0;
	if (report_begin(&A, t, o, r)) {
		snprintf(err, errlen, "out of memory aggregating %s", s->path);
		return -1;
	}
	for (size_t i = 0; i < s->nsamples; i++)
		if (report_add(A, s, &s->samples[i],
			       s->samples[i].nr_ips ? s->ips + s->samples[i].ips_off : NULL)) {
			report_abort(A);
			report_free(r);
			snprintf(err, errlen, "out of memory aggregating %s", s->path);
			return -1;
		}
	return report_end(A, s, err, errlen);
}

void report_free(struct report *r)
{
	for (size_t i = 0; r->events && i < r->nevents; i++)
		free(r->events[i].rows);
	free(r->events);
	free(r->pool);
	memset(r, 0, sizeof(*r));
}

/* ---- printing --------------------------------------------------------- */

/* Output columns: -F/--fields names them; by default the metrics, then the sort keys. */
enum col {
	COL_CHILDREN, COL_OVERHEAD, COL_SAMPLES, COL_PERIOD,
	COL_SYM, COL_DSO, COL_SRCLINE, COL_CPU, COL_COMM, COL_PID,
	COL_LINE_FUNC,			/* --sort line: "file:line  (function)" */
};
#define MAX_COLS	16

struct out {
	FILE *f;
	bool color;
	double limit;			/* --percent-limit */
	const char *cwd;		/* stripped from source paths */
	size_t cwdlen;
	enum col cols[MAX_COLS];
	size_t ncols;
	bool no_children;		/* -g --no-children: self cost only */
	const char *dso;		/* the kernel image's name */
	const struct session *s;
};

#define C_RED	"\033[31m"
#define C_GREEN	"\033[32m"
#define C_BOLD	"\033[1m"
#define C_OFF	"\033[0m"

static const char *pct_color(const struct out *o, double pct)
{
	if (!o->color)
		return "";
	return pct >= 5.0 ? C_RED : pct >= 0.5 ? C_GREEN : "";
}

static double pct_of(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static const char *short_path(const struct out *o, const char *p)
{
	if (o->cwdlen && !strncmp(p, o->cwd, o->cwdlen) && p[o->cwdlen] == '/')
		return p + o->cwdlen + 1;
	return p;
}

static void fmt_ns(uint64_t ns, char *buf, size_t n)
{
	if (ns >= 10000000000ull)
		snprintf(buf, n, "%.2f s", ns / 1e9);
	else if (ns >= 10000000)
		snprintf(buf, n, "%.2f ms", ns / 1e6);
	else if (ns >= 10000)
		snprintf(buf, n, "%.2f us", ns / 1e3);
	else
		snprintf(buf, n, "%" PRIu64 " ns", ns);
}

/* One CPU's share of a soft-PMU run: "196 samples (25.1%) + 584 lost ...". */
static void coverage_terms(FILE *f, const struct session_ticks *t)
{
	const struct bp_record_ticks *r = &t->rec;
	uint64_t missing = r->samples > t->received ? r->samples - t->received : 0;

	if (!r->period) {			/* ticks due unknown */
		fprintf(f, "%" PRIu64 " samples", t->received);
		if (r->dropped)
			fprintf(f, " + %" PRIu64 " dropped (ring full)", r->dropped);
		if (missing)
			fprintf(f, " + %" PRIu64 " written, not received", missing);
		return;
	}
	fprintf(f, "%" PRIu64 " samples (%.1f%%) + %" PRIu64 " lost", t->received,
		r->due ? 100.0 * t->received / r->due : 0.0, r->lost);
	if (r->throttled)
		fprintf(f, " (%" PRIu64 " of them throttled)", r->throttled);
	if (r->dropped)
		fprintf(f, " + %" PRIu64 " dropped (ring full)", r->dropped);
	if (missing)
		fprintf(f, " + %" PRIu64 " written, not received", missing);
	if (t->received > r->samples)
		fprintf(f, "; %" PRIu64 " more received than the kernel wrote",
			t->received - r->samples);
	if (r->samples + r->dropped + r->lost != r->due)
		fprintf(f, "; the kernel's own account does not add up (%" PRIu64 " written)",
			r->samples);
}

void report_print_coverage(FILE *f, const struct session *s, const char *pfx)
{
	for (size_t i = 0; i < s->nticks; i++) {
		const struct bp_record_ticks *r = &s->ticks[i].rec;
		char every[32], over[32], run[32] = "";
		unsigned ncpu = 0;
		bool first = true;

		for (size_t j = 0; j < s->nticks && first; j++)
			first = j >= i || s->ticks[j].rec.app_id != r->app_id;
		if (!first)
			continue;		/* printed with the run's first TICKS */
		for (size_t j = i; j < s->nticks; j++)
			ncpu += s->ticks[j].rec.app_id == r->app_id;
		fmt_ns(r->hpet_hz ? r->period * 1000000000ull / r->hpet_hz : 0, every, sizeof(every));
		/* A damaged TICKS can say more than 2^64 ns: the largest, not a wrapped cast. */
		double over_ns = r->hpet_hz ? (double)r->window * 1e9 / r->hpet_hz : 0;
		fmt_ns(over_ns < 0x1p64 ? (uint64_t)over_ns : UINT64_MAX, over, sizeof(over));
		if (s->nruns > 1)
			snprintf(run, sizeof(run), "run %u: ", r->app_id);
		if (!r->period)		/* the APIC timer's ticks: not counted */
			fprintf(f, "%scoverage: %sticks due unknown (no HPET: cpu-clock on %s APIC "
				"timer, blind while interrupts are off)%s", pfx, run,
				ncpu > 1 ? "each CPU's" : "the", ncpu > 1 ? "\n" : ": ");
		else {
			fprintf(f, "%scoverage: %s%" PRIu64 " ticks due", pfx, run, r->due);
			if (ncpu > 1)
				fprintf(f, " on each of %u CPUs", ncpu);
			fprintf(f, " (one every %s over %s, HPET counter)%s", every, over,
				ncpu > 1 ? "\n" : ": ");
		}
		for (size_t j = i; j < s->nticks; j++) {
			if (s->ticks[j].rec.app_id != r->app_id)
				continue;
			if (ncpu > 1)
				fprintf(f, "%s  cpu %u: ", pfx, s->ticks[j].rec.cpu);
			coverage_terms(f, &s->ticks[j]);
			fputc('\n', f);
		}
	}
}

static const char *vendor_name(uint32_t v)
{
	return v == BP_CPU_VENDOR_INTEL ? "Intel" : v == BP_CPU_VENDOR_AMD ? "AMD" : "unknown";
}

void report_print_header(FILE *f, const struct session *s, const char *kernel,
			 const struct symtab *t, const char *pfx)
{
	const struct wire_capture_header *h = &s->capture;
	char buf[256], hex[2 * 64 + 1];
	const uint8_t *id;
	size_t idlen;

	fprintf(f, "%scapture: %s (%s)\n", pfx, s->path, s->state);
	if (h->start_ns) {
		time_t t = (time_t)(h->start_ns / 1000000000u);
		struct tm tm;
		gmtime_r(&t, &tm);
		strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
		fprintf(f, "%srecorded: %s over %s%s%s%s\n", pfx, buf, h->link[0] ? h->link : "?",
			h->run_args[0] ? ": \"" : "", h->run_args, h->run_args[0] ? "\"" : "");
	}
	if (session_build_id(s, &id, &idlen) && kernel && t) {
		size_t kl;
		const uint8_t *kid = symtab_build_id(t, &kl);
		bool match = kid && kl >= idlen && !memcmp(kid, id, idlen);
		fprintf(f, "%skernel: %s, build-id %s %s\n", pfx, kernel,
			symtab_hex(id, idlen, hex, sizeof(hex)),
			match ? "(matches)" : "(DOES NOT MATCH: --force; symbols may be wrong)");
	} else if (session_build_id(s, &id, &idlen))
		fprintf(f, "%skernel: build-id %s\n", pfx, symtab_hex(id, idlen, hex, sizeof(hex)));
	if (s->have_cpu_info[0]) {
		const struct bp_record_cpu_info *c = &s->cpu_info[0];
		char brand[sizeof(c->brand) + 1];
		memcpy(brand, c->brand, sizeof(c->brand));
		brand[sizeof(c->brand)] = 0;
		fprintf(f, "%scpu: %s family %u model %u stepping %u \"%s\", %u CPU%s in the run\n",
			pfx, vendor_name(c->vendor), c->family, c->model, c->stepping, brand,
			s->ncpus, s->ncpus == 1 ? "" : "s");
	}
	if (s->have_cpu_info[0] || s->have_meta) {
		const struct bp_record_pmu_caps *p = &s->pmu_caps[0];
		if (s->meta.quiet_asked) {
			static const char *const q[] = { "turbo=off", "prefetch=off" };
			fprintf(f, "%smachine:", pfx);
			for (int i = 0; i < 2; i++)
				if (s->meta.quiet_asked & (1u << i))
					fprintf(f, " %s %s;", q[i], s->meta.quiet_done & (1u << i) ?
						"done" : s->meta.quiet_refused & (1u << i) ?
						"refused (see the boot log)" : "not done");
			fprintf(f, " idle CPUs in hlt\n");
		}
		if (s->meta.flags & BP_META_SOFT_LAPIC)
			fprintf(f, "%spmu: soft PMU (local APIC timer interrupts: cpu-clock; code that "
				"runs with interrupts off is not sampled); no hardware PMU used\n", pfx);
		else if (p->kind == BP_PMU_SOFT || (s->meta.flags & BP_META_SOFT_PMU))
			fprintf(f, "%spmu: soft PMU (HPET NMIs: cpu-clock); no hardware PMU used\n", pfx);
		else if (p->kind == BP_PMU_INTEL_ARCH || p->kind == BP_PMU_AMD)
			fprintf(f, "%spmu: %s v%u, %u GP counters x %u bits, %u fixed x %u bits\n", pfx,
				p->kind == BP_PMU_INTEL_ARCH ? "Intel arch perfmon" : "AMD",
				p->version, p->nr_gp, p->gp_width, p->nr_fixed, p->fixed_width);
		else
			fprintf(f, "%spmu: none found\n", pfx);
	}
	if (s->have_meta) {
		bool icount = (s->meta.flags & BP_META_ICOUNT) || strstr(h->link, "icount");
		fprintf(f, "%stsc: %.3f MHz%s%s\n", pfx, s->meta.tsc_hz / 1e6,
			s->meta.flags & BP_META_TSC_INVARIANT ? ", invariant" : "",
			icount ? "; QEMU -icount: one tick per instruction" : "");
	}
	for (size_t i = 0; i < s->nevents; i++) {
		const struct bp_record_event_desc *e = &s->events[i];
		bool ns = e->config == BP_CONFIG_SOFT_CPU_CLOCK || !strcmp(e->name, "cpu-clock");
		if (e->sample_period)
			fprintf(f, "%sevent: %s, config 0x%" PRIx64 ", sampled every %" PRIu64 "%s\n",
				pfx, e->name, e->config, e->sample_period, ns ? " ns" : "");
		else
			fprintf(f, "%sevent: %s, config 0x%" PRIx64 ", counted (bareperf stat)\n", pfx,
				e->name, e->config);
	}
	for (size_t i = 0; i < s->napps; i++) {
		const struct session_app *a = &s->apps[i];
		if (a->stopped) {
			fmt_ns(session_tsc_to_ns(s, a->stop_time) - session_tsc_to_ns(s, a->start_time),
			       buf, sizeof(buf));
			fprintf(f, "%sapp: %s (run %u) on cpu %u: %s, exit status %" PRId64 "\n", pfx,
				a->name, a->app_id, a->cpu, buf, a->status);
		} else {
			fprintf(f, "%sapp: %s (run %u) on cpu %u: no APP_STOP arrived\n", pfx,
				a->name, a->app_id, a->cpu);
		}
	}
	if (s->nsamples) {
		fmt_ns(session_tsc_to_ns(s, s->last_time) - session_tsc_to_ns(s, s->first_time),
		       buf, sizeof(buf));
		fprintf(f, "%ssamples: %zu over %s\n", pfx, s->nsamples, buf);
	}
	report_print_coverage(f, s, pfx);
}

static void print_name(FILE *f, const struct report_node *n)
{
	if (n->name)
		fputs(n->name, f);
	else
		fprintf(f, "[unknown] 0x%" PRIx64, n->key);
}

/*
 * The callers tree under node, drawn like perf's graph: a chain with no
 * branch is one name a line; a branch shows each caller's share of the
 * event. prefix holds the indentation of this level (plen bytes).
 */
static void print_callers(const struct out *o, const struct report *r, size_t node,
			  uint64_t total, char *prefix, size_t plen, int depth)
{
	size_t kids[64], nk = 0;

	if (depth > 64 || plen + 32 >= 1024)
		return;
	for (size_t c = r->pool[node].first_child; c && nk < 64; c = r->pool[c].next_sibling)
		if (pct_of(r->pool[c].period, total) >= o->limit)
			kids[nk++] = c;
	/* Largest first (insertion sort: few children). */
	for (size_t i = 1; i < nk; i++)
		for (size_t j = i; j > 0 && r->pool[kids[j]].period > r->pool[kids[j - 1]].period; j--) {
			size_t t = kids[j];
			kids[j] = kids[j - 1];
			kids[j - 1] = t;
		}
	if (nk == 1 && r->pool[kids[0]].period == r->pool[node].period) {
		fprintf(o->f, "%.*s", (int)plen, prefix);
		print_name(o->f, &r->pool[kids[0]]);
		fputc('\n', o->f);
		print_callers(o, r, kids[0], total, prefix, plen, depth + 1);
		return;
	}
	for (size_t i = 0; i < nk; i++) {
		const struct report_node *c = &r->pool[kids[i]];
		bool last = i + 1 == nk;
		int hl = fprintf(o->f, "%.*s%s--%.2f%%-- ", (int)plen, prefix, last ? " " : "|",
				 pct_of(c->period, total)) - (int)plen;
		print_name(o->f, c);
		fputc('\n', o->f);
		memset(prefix + plen, ' ', (size_t)hl);
		prefix[plen] = last ? ' ' : '|';
		print_callers(o, r, kids[i], total, prefix, plen + (size_t)hl, depth + 1);
		if (!last)
			fprintf(o->f, "%.*s|\n", (int)plen, prefix);
	}
}

static const char *col_title(const struct out *o, enum col c)
{
	static const char *const t[] = {
		[COL_CHILDREN] = "Children", [COL_OVERHEAD] = "Overhead", [COL_SAMPLES] = "Samples",
		[COL_PERIOD] = "Period", [COL_SYM] = "Symbol", [COL_DSO] = "Shared Object",
		[COL_SRCLINE] = "Source:Line", [COL_CPU] = "CPU", [COL_COMM] = "Command",
		[COL_PID] = "Pid", [COL_LINE_FUNC] = "Source:Line (function)",
	};
	bool children = false;

	for (size_t i = 0; i < o->ncols; i++)
		children |= o->cols[i] == COL_CHILDREN;
	return c == COL_OVERHEAD && children ? "Self" : t[c];
}

static bool col_numeric(enum col c)
{
	return c == COL_CHILDREN || c == COL_OVERHEAD || c == COL_SAMPLES || c == COL_PERIOD ||
	       c == COL_CPU || c == COL_PID;
}

static int col_width(enum col c)
{
	return c == COL_PERIOD ? 14 : c == COL_CPU ? 3 : c == COL_PID ? 5 : 8;
}

/* A text column's value (buf holds it when it is built). */
static const char *col_text(const struct out *o, const struct report_row *w, enum col c,
			    char *buf, size_t n)
{
	switch (c) {
	case COL_SYM:
		if (w->name)
			return w->name;
		snprintf(buf, n, "[unknown] 0x%" PRIx64, w->key);
		return buf;
	case COL_DSO:
		return o->dso;
	case COL_SRCLINE:
	case COL_LINE_FUNC:
		/* without a line (code with no debug info): perf's fallback,
		 * the function and the offset in decimal */
		if (w->file)
			snprintf(buf, n, "%s:%d", short_path(o, w->file), w->line);
		else if (w->name)
			snprintf(buf, n, "%s+%" PRIu64, w->name, w->line_addr - w->key);
		else
			snprintf(buf, n, "[unknown] 0x%" PRIx64, w->line_addr);
		if (c == COL_LINE_FUNC) {
			size_t l = strlen(buf);
			snprintf(buf + l, n - l, "  (%s)", w->name ? w->name : "?");
		}
		return buf;
	case COL_COMM: {
		const char *a = app_of(o->s, w->pid);
		return a[0] ? a : "bareperf";
	}
	default:
		return "";
	}
}

static void print_event(const struct out *o, const struct session *s, const struct report *r,
			const struct report_event *E, const struct report_opts *ro, size_t max_rows)
{
	FILE *f = o->f;
	char nb[64], buf[4096];
	const char *name = session_event_name(s, E->id, nb, sizeof(nb));
	const struct bp_record_event_desc *d = session_event(s, E->id);
	bool soft = d && !strcmp(d->name, "cpu-clock");
	bool children = ro->callgraph && !o->no_children;
	size_t shown = 0, hidden = 0, width[MAX_COLS] = { 0 };
	bool *show;

	fprintf(f, "\n# event %s: %" PRIu64 " sample%s", name, E->samples,
		E->samples == 1 ? "" : "s");
	if (E->samples && E->min_period == E->max_period)
		fprintf(f, ", period %" PRIu64 "%s", E->min_period, soft ? " ns" : "");
	else if (E->samples)
		fprintf(f, ", periods %" PRIu64 "..%" PRIu64 " (weighted by period)", E->min_period,
			E->max_period);
	fprintf(f, ", %" PRIu64 " %s\n", E->period, soft ? "ns sampled" : "events estimated");
	if (ro->callgraph && E->samples && !E->with_chain)
		fprintf(f, "# -g: no call chains in this capture (record with -g)\n");

	/* Which rows show (--no-children: those with self cost), and the
	 * widths of the text columns but the last. */
	show = calloc(E->nrows + 1, sizeof(*show));
	if (!show)
		return;
	for (size_t i = 0; i < E->nrows; i++) {
		const struct report_row *w = &E->rows[i];
		double self = pct_of(w->period, E->period);
		double child = pct_of(w->child_period, E->period);
		if (!children && !w->samples)
			continue;
		if ((children ? (child > self ? child : self) : self) < o->limit ||
		    (max_rows && shown >= max_rows)) {
			hidden++;
			continue;
		}
		show[i] = true;
		shown++;
		for (size_t k = 0; k + 1 < o->ncols; k++)
			if (!col_numeric(o->cols[k])) {
				size_t l = strlen(col_text(o, w, o->cols[k], buf, sizeof(buf)));
				width[k] = l > width[k] ? l : width[k];
			}
	}
	fputs("#\n#", f);
	for (size_t k = 0; k < o->ncols; k++) {
		const char *t = col_title(o, o->cols[k]);
		if (col_numeric(o->cols[k]))
			fprintf(f, "%s%*s", k ? "  " : " ", col_width(o->cols[k]) + !k, t);
		else if (k + 1 < o->ncols)
			fprintf(f, "  %-*s", (int)width[k], t);
		else
			fprintf(f, "  %s", t);
	}
	fputc('\n', f);
	for (size_t i = 0; i < E->nrows; i++) {
		const struct report_row *w = &E->rows[i];
		if (!show[i])
			continue;
		for (size_t k = 0; k < o->ncols; k++) {
			enum col c = o->cols[k];
			double pct;
			switch (c) {
			case COL_CHILDREN:
			case COL_OVERHEAD:
				pct = pct_of(c == COL_CHILDREN ? w->child_period : w->period, E->period);
				fprintf(f, "  %s%7.2f%%%s", pct_color(o, pct), pct, o->color ? C_OFF : "");
				break;
			case COL_SAMPLES:
				fprintf(f, "  %8" PRIu64, w->samples);
				break;
			case COL_PERIOD:
				fprintf(f, "  %14" PRIu64, w->period);
				break;
			case COL_CPU:
				fprintf(f, "  %3u", w->cpu);
				break;
			case COL_PID:
				fprintf(f, "  %5u", w->pid);
				break;
			default:
				if (k + 1 < o->ncols)
					fprintf(f, "  %-*s", (int)width[k],
						col_text(o, w, c, buf, sizeof(buf)));
				else
					fprintf(f, "  %s", col_text(o, w, c, buf, sizeof(buf)));
			}
		}
		fputc('\n', f);
		bool any = false;
		for (size_t c = w->callers ? r->pool[w->callers].first_child : 0; c && !any;
		     c = r->pool[c].next_sibling)
			any = pct_of(r->pool[c].period, E->period) >= o->limit;
		if (ro->callgraph && any) {
			char prefix[1024];
			memset(prefix, ' ', 34);
			fprintf(f, "%.*s|\n", 34, prefix);
			print_callers(o, r, w->callers, E->period, prefix, 34, 0);
			fputc('\n', f);
		}
	}
	free(show);
	if (hidden)
		fprintf(f, "# (%zu more rows below --percent-limit %.2g%% or the row limit)\n", hidden,
			o->limit);
}

struct stream_ctx {
	struct report_agg *agg;
	struct symtab *t;
	const char *kernel;
	bool force;
	char used[4096], err[1024];
};

static int add_sample(void *ctx, const struct session *s, const struct bp_sample_rec *x,
		      const uint64_t *ips)
{
	struct stream_ctx *c = ctx;

	if (!c->t) {
		if (session_symtab(s, c->kernel, c->force, &c->t, c->used, sizeof(c->used),
				   c->err, sizeof(c->err)))
			return -1;
		c->agg->sc.t = c->t;
	}
	return report_add(c->agg, s, x, ips);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bareperf report [-i FILE] [options]\n"
		"  the hottest functions (or source lines, CPUs, apps) per event in a capture,\n"
		"  symbolized against the kernel.elf that ran, with the run's metadata and\n"
		"  every loss above the tables\n"
		"  -i, --input FILE        capture (default capture.bpc; - reads standard input)\n"
		"  -k, --kernel PATH       kernel.elf (default: next to the capture, else\n"
		"                          build/kernel.elf; its build-id must match)\n"
		"  -s, --sort KEYS         rows by these keys, perf's names, comma-separated:\n"
		"                          sym (default), dso, srcline, cpu, comm (the app),\n"
		"                          pid (the app run); e.g. --sort cpu,sym\n"
		"  -F, --fields LIST       the columns, in order: overhead, sample, period and\n"
		"                          sort keys; the keys among them sort the rows\n"
		"  -g, --call-graph        callers of each function, and inclusive cost\n"
		"                          (Children); needs call chains (record -g)\n"
		"      --children          with -g: the Children column (the default)\n"
		"      --no-children       with -g: self cost only, rows with self samples\n"
		"  -C, --cpu LIST          only these CPUs, e.g. 0,2-3\n"
		"      --app NAME          only the runs of this app\n"
		"      --percent-limit P   hide rows under P%%\n"
		"  -n, --show-nr-samples   the Samples column (shown unless -F leaves it out)\n"
		"      --max-rows N        at most N rows per event\n"
		"      --header-only       the run's metadata and losses, no tables\n"
		"      --stdio             plain text (no colour even on a terminal)\n"
		"      --force             symbolize even if the kernel's build-id differs\n"
		"  -q, --quiet             no header, only the tables and the losses\n"
		"      --aux               the instruction trace (trace=): exact per-function and\n"
		"                          per-instruction counts, the call tree, any gaps\n");
}

static int cmp_self(const void *a, const void *b)
{
	const struct report_row *x = a, *y = b;

	if (x->period != y->period)
		return x->period > y->period ? -1 : 1;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static const struct { const char *name; enum col col; int key; } field_names[] = {
	{ "overhead", COL_OVERHEAD, -1 }, { "overhead_children", COL_CHILDREN, -1 },
	{ "children", COL_CHILDREN, -1 }, { "sample", COL_SAMPLES, -1 },
	{ "samples", COL_SAMPLES, -1 }, { "period", COL_PERIOD, -1 },
	{ "sym", COL_SYM, RK_SYM }, { "symbol", COL_SYM, RK_SYM }, { "dso", COL_DSO, RK_DSO },
	{ "srcline", COL_SRCLINE, RK_SRCLINE }, { "line", COL_SRCLINE, RK_SRCLINE },
	{ "cpu", COL_CPU, RK_CPU }, { "comm", COL_COMM, RK_COMM }, { "app", COL_COMM, RK_COMM },
	{ "pid", COL_PID, RK_PID }, { "run", COL_PID, RK_PID },
};

/* -F: columns in order, and the sort keys among them. */
static int parse_fields(const char *list, struct out *o, struct report_opts *keys)
{
	const char *p = list;

	o->ncols = 0;
	keys->nkeys = 0;
	while (*p) {
		size_t n = strcspn(p, ","), i;
		for (i = 0; i < sizeof(field_names) / sizeof(field_names[0]); i++)
			if (strlen(field_names[i].name) == n && !strncmp(field_names[i].name, p, n))
				break;
		if (i == sizeof(field_names) / sizeof(field_names[0]) || o->ncols == MAX_COLS) {
			fprintf(stderr, "bareperf report: --fields: '%.*s' is not a field (overhead, "
				"sample, period, sym, dso, srcline, cpu, comm, pid)\n", (int)n, p);
			return -1;
		}
		o->cols[o->ncols++] = field_names[i].col;
		if (field_names[i].key >= 0 && keys->nkeys < REPORT_MAX_KEYS)
			keys->keys[keys->nkeys++] = (enum report_key)field_names[i].key;
		p += n + (p[n] == ',');
	}
	if (!o->ncols) {
		fprintf(stderr, "bareperf report: --fields: no field given\n");
		return -1;
	}
	return 0;
}

static enum col key_col(enum report_key k)
{
	static const enum col c[] = { [RK_SYM] = COL_SYM, [RK_DSO] = COL_DSO,
		[RK_SRCLINE] = COL_SRCLINE, [RK_CPU] = COL_CPU, [RK_COMM] = COL_COMM,
		[RK_PID] = COL_PID };
	return c[k];
}

/* "0-1,3" for the CPUs set in v. */
static void cpu_list(const bool *v, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = 0;
	for (int c = 0; c < SESSION_MAX_CPUS && len < n; c++) {
		int e = c;
		if (!v[c])
			continue;
		while (e + 1 < SESSION_MAX_CPUS && v[e + 1])
			e++;
		len += snprintf(buf + len, n - len, e > c ? "%s%d-%d" : "%s%d", len ? "," : "", c, e);
		c = e;
	}
}

int cmd_report(int argc, char **argv)
{
	enum {
		OPT_APP = 256, OPT_LIMIT, OPT_MAX_ROWS, OPT_STDIO, OPT_FORCE, OPT_AUX, OPT_CHILDREN,
		OPT_NO_CHILDREN, OPT_HEADER_ONLY,
	};
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "sort", required_argument, NULL, 's' },
		{ "fields", required_argument, NULL, 'F' },
		{ "call-graph", no_argument, NULL, 'g' },
		{ "children", no_argument, NULL, OPT_CHILDREN },
		{ "no-children", no_argument, NULL, OPT_NO_CHILDREN },
		{ "cpu", required_argument, NULL, 'C' },
		{ "app", required_argument, NULL, OPT_APP },
		{ "percent-limit", required_argument, NULL, OPT_LIMIT },
		{ "show-nr-samples", no_argument, NULL, 'n' },
		{ "max-rows", required_argument, NULL, OPT_MAX_ROWS },
		{ "header-only", no_argument, NULL, OPT_HEADER_ONLY },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "aux", no_argument, NULL, OPT_AUX },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *input = "capture.bpc", *kernel = NULL, *fields = NULL;
	bool aux = false, show_nr = false, header_only = false, sorted = false;
	struct report_opts ro = { .sort = REPORT_SORT_SYM };
	struct out o = { .f = stdout };
	bool stdio = false, force = false, quiet = false;
	size_t max_rows = 0;
	char err[1024], used[4096], cwd[4096], stdin_tmp[4096] = "";
	struct session s;
	struct symtab *t;
	struct report r;
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:k:s:F:gC:nqh", lo, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'i': input = optarg; break;
		case 'k': kernel = optarg; break;
		case 's':
			if (report_parse_sort(optarg, &ro, err, sizeof(err))) {
				fprintf(stderr, "bareperf report: --sort: %s\n", err);
				return 2;
			}
			sorted = true;
			break;
		case 'F': fields = optarg; break;
		case 'g': ro.callgraph = true; break;
		case OPT_CHILDREN: ro.callgraph = true, o.no_children = false; break;
		case OPT_NO_CHILDREN: o.no_children = true; break;
		case 'C':
			if (report_parse_cpus(optarg, &ro.filter)) {
				fprintf(stderr, "bareperf report: --cpu: '%s' is not a CPU list like 0,2-3\n",
					optarg);
				return 2;
			}
			break;
		case OPT_APP: ro.filter.app = optarg; break;
		case OPT_LIMIT:
			o.limit = strtod(optarg, &end);
			if (*end || end == optarg || o.limit < 0) {
				fprintf(stderr, "bareperf report: --percent-limit: '%s' is not a percentage\n",
					optarg);
				return 2;
			}
			break;
		case 'n': show_nr = true; break;
		case OPT_MAX_ROWS:
			max_rows = strtoul(optarg, &end, 10);
			if (*end || end == optarg) {
				fprintf(stderr, "bareperf report: --max-rows: '%s' is not a number\n", optarg);
				return 2;
			}
			break;
		case OPT_HEADER_ONLY: header_only = true; break;
		case OPT_STDIO: stdio = true; break;
		case OPT_FORCE: force = true; break;
		case 'q': quiet = true; break;
		case OPT_AUX: aux = true; break;
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "bareperf report: %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "bareperf report: unknown option '%s' (bareperf report --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bareperf report: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (fields) {
		struct report_opts fk = { 0 };
		if (parse_fields(fields, &o, &fk))
			return 2;
		if (!sorted && fk.nkeys) {
			memcpy(ro.keys, fk.keys, sizeof(ro.keys));
			ro.nkeys = fk.nkeys;
			ro.sort = REPORT_SORT_SYM;
		}
		if (show_nr) {
			bool have = false;
			for (size_t i = 0; i < o.ncols; i++)
				have |= o.cols[i] == COL_SAMPLES;
			if (!have && o.ncols < MAX_COLS) {
				memmove(o.cols + 1 + (o.cols[0] <= COL_OVERHEAD), o.cols +
					(o.cols[0] <= COL_OVERHEAD), (o.ncols - (o.cols[0] <= COL_OVERHEAD)) *
					sizeof(o.cols[0]));
				o.cols[o.cols[0] <= COL_OVERHEAD] = COL_SAMPLES;
				o.ncols++;
			}
		}
	}
	if (ro.callgraph) {
		for (size_t i = 0; i < ro.nkeys; i++)
			if (ro.keys[i] != RK_SYM) {
				fprintf(stderr, "bareperf report: -g works with --sort sym\n");
				return 2;
			}
		if (ro.sort == REPORT_SORT_LINE) {
			fprintf(stderr, "bareperf report: -g works with --sort sym\n");
			return 2;
		}
	}
	if (o.no_children && !ro.callgraph)
		o.no_children = false;		/* without -g there is no Children column */
	if (!fields) {
		if (ro.callgraph && !o.no_children)
			o.cols[o.ncols++] = COL_CHILDREN;
		o.cols[o.ncols++] = COL_OVERHEAD;
		o.cols[o.ncols++] = COL_SAMPLES;
		if (!ro.nkeys)
			o.cols[o.ncols++] = ro.sort == REPORT_SORT_LINE ? COL_LINE_FUNC : COL_SYM;
		else if (ro.nkeys == 1 && ro.keys[0] == RK_SRCLINE)
			o.cols[o.ncols++] = COL_LINE_FUNC;
		else
			for (size_t i = 0; i < ro.nkeys; i++)
				o.cols[o.ncols++] = key_col(ro.keys[i]);
	}
	if (cli_input("report", &input, stdin_tmp, sizeof(stdin_tmp)))
		return 1;
	if (aux) {
		struct trace_opts to = { .force = force, .cpu = -1, .top = max_rows };
		to.kernel_elf = session_kernel_for(input, kernel, used, sizeof(used));
		rc = trace_report(input, &to, stdout);
		cli_input_done(stdin_tmp);
		return rc;
	}
	o.color = !stdio && isatty(fileno(stdout));
	if (getcwd(cwd, sizeof(cwd))) {
		o.cwd = cwd;
		o.cwdlen = strlen(cwd);
	}
	/*
	 * One streaming pass: samples are aggregated as they are decoded.
	 * The kernel.elf is chosen at the first sample, when the run's
	 * metadata (RUN_META's build-id) has arrived.
	 */
	struct stream_ctx sc = { .kernel = kernel, .force = force };
	err[0] = 0;
	if (report_begin(&sc.agg, NULL, &ro, &r)) {
		fprintf(stderr, "bareperf report: out of memory\n");
		cli_input_done(stdin_tmp);
		return 1;
	}
	rc = session_load_cb(&s, input, SESSION_NO_RECORDS | SESSION_NO_CONSOLE, add_sample, &sc,
			     err, sizeof(err));
	if (rc || (!sc.t && session_symtab(&s, kernel, force, &sc.t, sc.used, sizeof(sc.used),
					    sc.err, sizeof(sc.err)))) {
		fprintf(stderr, "bareperf report: %s\n", sc.err[0] ? sc.err : err);
		report_abort(sc.agg);
		report_free(&r);
		if (!rc)
			session_free(&s);
		symtab_free(sc.t);
		cli_input_done(stdin_tmp);
		return 1;
	}
	cli_input_done(stdin_tmp);
	if (stdin_tmp[0])
		snprintf(s.path, sizeof(s.path), "(standard input)");
	sc.agg->sc.t = sc.t;
	if (report_end(sc.agg, &s, err, sizeof(err))) {
		fprintf(stderr, "bareperf report: %s\n", err);
		symtab_free(sc.t);
		session_free(&s);
		return 1;
	}
	t = sc.t;
	snprintf(used, sizeof(used), "%s", sc.used);
	{
		const char *b = strrchr(used, '/');
		o.dso = b ? b + 1 : used;
	}
	o.s = &s;
	/* -C: a CPU that is not in the capture is named, not silently empty. */
	if (ro.filter.cpu_set) {
		bool in[SESSION_MAX_CPUS], missing[SESSION_MAX_CPUS] = { false }, any = false, some = false;
		char have[512], miss[512];
		for (int cpu = 0; cpu < SESSION_MAX_CPUS; cpu++) {
			in[cpu] = r.cpu_seen[cpu] || s.have_cpu_info[cpu];
			missing[cpu] = ro.filter.cpus[cpu] && !in[cpu];
			any |= missing[cpu];
			some |= ro.filter.cpus[cpu] && in[cpu];
		}
		if (any) {
			cpu_list(in, have, sizeof(have));
			cpu_list(missing, miss, sizeof(miss));
			fprintf(stderr, "bareperf report: %s: --cpu %s: not in this capture (its CPUs: %s)\n",
				some ? "warning" : "error", miss, have[0] ? have : "none");
			if (!some) {
				report_free(&r);
				symtab_free(t);
				session_free(&s);
				return 1;
			}
		}
	}
	if (o.no_children)
		for (size_t i = 0; i < r.nevents; i++)
			qsort(r.events[i].rows, r.events[i].nrows, sizeof(*r.events[i].rows), cmp_self);
	if (!quiet || header_only)
		report_print_header(o.f, &s, used, t, "# ");
	if (ro.filter.cpu_set || ro.filter.app)
		fprintf(o.f, "# filter:%s%s%s: %" PRIu64 " samples kept, %" PRIu64 " left out\n",
			ro.filter.cpu_set ? " cpus" : "", ro.filter.app ? " app " : "",
			ro.filter.app ? ro.filter.app : "", r.samples, r.filtered_out);
	/* A report never hides a loss: every nonzero count, before the tables. */
	if (o.color)
		fputs(C_RED, o.f);
	if (!session_print_losses(&s, o.f, "# WARNING: ") && (!quiet || header_only))
		fprintf(o.f, "# losses: none (no ring overflow, no dropped ticks, no frame lost "
			"in transit)\n");
	if (o.color)
		fputs(C_OFF, o.f);
	bool sampling = false;
	for (size_t i = 0; i < s.nevents; i++)
		sampling |= s.events[i].sample_period != 0;
	if (!s.nsamples && !header_only)
		fprintf(o.f, "# no samples in the capture%s\n",
			!s.nevents ? " (no EVENT_DESC: was sampling on? events=none?)" :
			!sampling ? ": the run only counted (count=); bareperf stat shows the counts" :
			"");
	for (size_t i = 0; i < r.nevents && !header_only; i++) {
		const struct bp_record_event_desc *d = session_event(&s, r.events[i].id);
		if (r.events[i].samples ||
		    (!(ro.filter.cpu_set || ro.filter.app) && (!d || d->sample_period)))
			print_event(&o, &s, &r, &r.events[i], &ro, max_rows);
	}
	report_free(&r);
	symtab_free(t);
	session_free(&s);
	return ferror(stdout) ? 1 : 0;
}
