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

#include "tools/commands.h"
#include "tools/report.h"
#include "tools/trace_dec.h"

/* ---- hash tables keyed by a 64-bit value ------------------------------ */

struct ipent {
	uint64_t ip;
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
		size_t j = hash64(x->ip, g.mask);
		while (g.e[j].samples)
			j = (j + 1) & g.mask;
		g.e[j] = *x;
		g.n++;
	}
	free(h->e);
	*h = g;
	return 0;
}

/* Add (samples, period) to ip's entry. */
static inline int iptab_add(struct iptab *h, uint64_t ip, uint64_t samples, uint64_t period)
{
	size_t j = hash64(ip, h->mask);

	for (;;) {
		struct ipent *x = &h->e[j];
		if (x->samples && x->ip == ip) {
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
		return iptab_add(h, ip, samples, period);
	}
	h->e[j] = (struct ipent){ ip, samples, period };
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

static size_t node_child(struct report *r, size_t parent, uint64_t key, const char *name)
{
	size_t c;

	for (c = r->pool[parent].first_child; c; c = r->pool[c].next_sibling)
		if (r->pool[c].key == key)
			return c;
	c = node_new(r, key, name);
	if (!c)
		return 0;
	r->pool[c].next_sibling = r->pool[parent].first_child;
	r->pool[parent].first_child = c;
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
		node = node_child(r, node, keys[i], names[i]);
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
		if (!seen && iptab_add(&E->child, keys[i], 1, x->period))
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

static int cmp_line(const void *a, const void *b)
{
	const struct report_row *x = a, *y = b;
	int c;

	if (!x->file != !y->file)
		return x->file ? -1 : 1;
	if (x->file && (c = strcmp(x->file, y->file)))
		return c;
	if (!x->file && x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->line - y->line;
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
		if (A->o.sort == REPORT_SORT_LINE &&
		    !symtab_line(A->sc.t, x->ip, &w->file, &w->line))
			w->file = NULL, w->line = 0, w->key = x->ip;
	}
	/* By function (file NULL: by key) or by file and line; merge equal ones. */
	qsort(rows, n, sizeof(*rows), cmp_line);
	for (size_t i = 0; i < n; i++) {
		if (m && !cmp_line(&rows[m - 1], &rows[i])) {
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
	if (iptab_add(&A->ev[ev].ipt, x->ip, 1, x->period))
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

struct out {
	FILE *f;
	bool color;
	double limit;			/* --percent-limit */
	const char *cwd;		/* stripped from source paths */
	size_t cwdlen;
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
		fmt_ns(r->hpet_hz ? (uint64_t)((double)r->window * 1e9 / r->hpet_hz) : 0, over,
		       sizeof(over));
		if (s->nruns > 1)
			snprintf(run, sizeof(run), "run %u: ", r->app_id);
		fprintf(f, "%scoverage: %s%" PRIu64 " ticks due", pfx, run, r->due);
		if (ncpu > 1)
			fprintf(f, " on each of %u CPUs", ncpu);
		fprintf(f, " (one every %s over %s, HPET counter)%s", every, over,
			ncpu > 1 ? "\n" : ": ");
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

static void print_event(const struct out *o, const struct session *s, const struct report *r,
			const struct report_event *E, const struct report_opts *ro, size_t max_rows)
{
	FILE *f = o->f;
	char nb[64];
	const char *name = session_event_name(s, E->id, nb, sizeof(nb));
	const struct bp_record_event_desc *d = session_event(s, E->id);
	bool soft = d && !strcmp(d->name, "cpu-clock");
	size_t shown = 0, hidden = 0;

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
	if (ro->callgraph)
		fprintf(f, "#\n#  Children      Self   Samples  %s\n", "Symbol");
	else if (ro->sort == REPORT_SORT_LINE)
		fprintf(f, "#\n#  Overhead   Samples  Source:Line (function)\n");
	else
		fprintf(f, "#\n#  Overhead   Samples  Symbol\n");
	for (size_t i = 0; i < E->nrows; i++) {
		const struct report_row *w = &E->rows[i];
		double self = pct_of(w->period, E->period);
		double child = pct_of(w->child_period, E->period);
		if ((ro->callgraph ? (child > self ? child : self) : self) < o->limit ||
		    (max_rows && shown >= max_rows)) {
			hidden++;
			continue;
		}
		shown++;
		if (ro->callgraph)
			fprintf(f, "  %s%7.2f%%%s  %s%7.2f%%%s  %8" PRIu64 "  ", pct_color(o, child), child,
				o->color ? C_OFF : "", pct_color(o, self), self, o->color ? C_OFF : "",
				w->samples);
		else
			fprintf(f, "  %s%7.2f%%%s  %8" PRIu64 "  ", pct_color(o, self), self,
				o->color ? C_OFF : "", w->samples);
		if (ro->sort == REPORT_SORT_LINE) {
			if (w->file)
				fprintf(f, "%s:%d", short_path(o, w->file), w->line);
			else
				fprintf(f, "[unknown] 0x%" PRIx64, w->key);
			fprintf(f, "  (%s)\n", w->name ? w->name : "?");
		} else if (w->name) {
			fprintf(f, "%s\n", w->name);
		} else {
			fprintf(f, "[unknown] 0x%" PRIx64 "\n", w->key);
		}
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
		"  the hottest functions per event in a capture, symbolized against kernel.elf\n"
		"  -i, --input FILE        capture (default capture.bpc)\n"
		"  -k, --kernel PATH       kernel.elf (default: next to the capture, else\n"
		"                          build/kernel.elf; its build-id must match)\n"
		"  -s, --sort sym|line     by function (default) or by source line\n"
		"  -g, --call-graph        callers of each function, and inclusive cost\n"
		"  -C, --cpu LIST          only these CPUs, e.g. 0,2-3\n"
		"      --app NAME          only the runs of this app\n"
		"      --percent-limit P   hide rows under P%%\n"
		"  -n, --max-rows N        at most N rows per event\n"
		"      --stdio             plain text (no colour even on a terminal)\n"
		"      --force             symbolize even if the kernel's build-id differs\n"
		"  -q, --quiet             no header, only the tables and the losses\n"
		"      --aux               the instruction trace (trace=): exact per-function and\n"
		"                          per-instruction counts, the call tree, any gaps\n");
}

int cmd_report(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "sort", required_argument, NULL, 's' },
		{ "call-graph", no_argument, NULL, 'g' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "app", required_argument, NULL, 'a' },
		{ "percent-limit", required_argument, NULL, 'p' },
		{ "max-rows", required_argument, NULL, 'n' },
		{ "stdio", no_argument, NULL, 'S' },
		{ "force", no_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "aux", no_argument, NULL, 'A' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *input = "capture.bpc", *kernel = NULL;
	bool aux = false;
	struct report_opts ro = { .sort = REPORT_SORT_SYM };
	struct out o = { .f = stdout };
	bool stdio = false, force = false, quiet = false;
	size_t max_rows = 0;
	char err[1024], used[4096], cwd[4096];
	struct session s;
	struct symtab *t;
	struct report r;
	int c, rc;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:k:s:gC:n:qh", lo, NULL)) != -1) {
		char *end;
		switch (c) {
		case 'i': input = optarg; break;
		case 'k': kernel = optarg; break;
		case 's':
			if (!strcmp(optarg, "sym") || !strcmp(optarg, "symbol"))
				ro.sort = REPORT_SORT_SYM;
			else if (!strcmp(optarg, "line") || !strcmp(optarg, "srcline"))
				ro.sort = REPORT_SORT_LINE;
			else {
				fprintf(stderr, "bareperf report: --sort: '%s' is not sym or line\n", optarg);
				return 2;
			}
			break;
		case 'g': ro.callgraph = true; break;
		case 'C':
			if (report_parse_cpus(optarg, &ro.filter)) {
				fprintf(stderr, "bareperf report: --cpu: '%s' is not a CPU list like 0,2-3\n",
					optarg);
				return 2;
			}
			break;
		case 'a': ro.filter.app = optarg; break;
		case 'p':
			o.limit = strtod(optarg, &end);
			if (*end || end == optarg || o.limit < 0) {
				fprintf(stderr, "bareperf report: --percent-limit: '%s' is not a percentage\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			max_rows = strtoul(optarg, &end, 10);
			if (*end || end == optarg) {
				fprintf(stderr, "bareperf report: --max-rows: '%s' is not a number\n", optarg);
				return 2;
			}
			break;
		case 'S': stdio = true; break;
		case 'f': force = true; break;
		case 'q': quiet = true; break;
		case 'A': aux = true; break;
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
	if (ro.callgraph && ro.sort == REPORT_SORT_LINE) {
		fprintf(stderr, "bareperf report: -g works with --sort sym\n");
		return 2;
	}
	if (aux) {
		struct trace_opts to = { .force = force, .cpu = -1, .top = max_rows };
		to.kernel_elf = session_kernel_for(input, kernel, used, sizeof(used));
		return trace_report(input, &to, stdout);
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
		return 1;
	}
	sc.agg->sc.t = sc.t;
	if (report_end(sc.agg, &s, err, sizeof(err))) {
		fprintf(stderr, "bareperf report: %s\n", err);
		symtab_free(sc.t);
		session_free(&s);
		return 1;
	}
	t = sc.t;
	snprintf(used, sizeof(used), "%s", sc.used);
	if (!quiet)
		report_print_header(o.f, &s, used, t, "# ");
	if (ro.filter.cpu_set || ro.filter.app)
		fprintf(o.f, "# filter:%s%s%s: %" PRIu64 " samples kept, %" PRIu64 " left out\n",
			ro.filter.cpu_set ? " cpus" : "", ro.filter.app ? " app " : "",
			ro.filter.app ? ro.filter.app : "", r.samples, r.filtered_out);
	/* A report never hides a loss: every nonzero count, before the tables. */
	if (o.color)
		fputs(C_RED, o.f);
	if (!session_print_losses(&s, o.f, "# WARNING: ") && !quiet)
		fprintf(o.f, "# losses: none (no ring overflow, no dropped ticks, no frame lost "
			"in transit)\n");
	if (o.color)
		fputs(C_OFF, o.f);
	bool sampling = false;
	for (size_t i = 0; i < s.nevents; i++)
		sampling |= s.events[i].sample_period != 0;
	if (!s.nsamples)
		fprintf(o.f, "# no samples in the capture%s\n",
			!s.nevents ? " (no EVENT_DESC: was sampling on? events=none?)" :
			!sampling ? ": the run only counted (count=); bareperf stat shows the counts" :
			"");
	for (size_t i = 0; i < r.nevents; i++) {
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
