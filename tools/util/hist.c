/*
 * tools/util/hist.c — `bareperf report`'s aggregation (tools/util/hist.h):
 * samples keyed by IP (and CPU/run when those are sort keys) in a hash
 * table, symbolized once per distinct IP, then merged into rows by the
 * sort keys; call chains into a caller tree.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/hist.h"

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

/* A new entry for (ip, ctx) at its free slot j, the table grown first
 * when it is half full: -1 if out of memory. */
static __attribute__((noinline)) int iptab_insert(struct iptab *h, size_t j, uint64_t ip, uint64_t ctx, uint64_t samples,
			uint64_t period)
{
	if (2 * (h->n + 1) > h->mask + 1) {
		if (iptab_grow(h))
			return -1;
		j = hash64(ip ^ ctx * 0x9e3779b97f4a7c15ull, h->mask);
		while (h->e[j].samples)
			j = (j + 1) & h->mask;
	}
	h->e[j] = (struct ipent){ ip, ctx, samples, period };
	h->n++;
	return 0;
}

/* Add (samples, period) to the entry of (ip, ctx): one probe per sample
 * here, the rare new entry out of line. */
static inline int iptab_add(struct iptab *h, uint64_t ip, uint64_t ctx, uint64_t samples,
			    uint64_t period)
{
	size_t j = hash64(ip ^ ctx * 0x9e3779b97f4a7c15ull, h->mask);

	for (;;) {
		struct ipent *x = &h->e[j];
		if (!x->samples)
			return iptab_insert(h, j, ip, ctx, samples, period);
		if (x->ip == ip && x->ctx == ctx) {
			x->samples += samples;
			x->period += period;
			return 0;
		}
		j = (j + 1) & h->mask;
	}
}

/* ---- symbols, memoized per address ------------------------------------ */

/* Entries the cache grows to; past that it starts over when half full. */
#define SYMCACHE_MAX	(1u << 18)

struct symcache {
	const struct symtab *t;
	struct symcache_ent { uint64_t addr, key; const char *name; bool used; } *e;
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

/* Make room for one more entry: twice the slots, or (at SYMCACHE_MAX, or
 * out of memory) an empty cache. */
static void symcache_room(struct symcache *c)
{
	size_t cap = 2 * (c->mask + 1);
	struct symcache_ent *e = cap <= SYMCACHE_MAX ? calloc(cap, sizeof(*e)) : NULL;

	if (!e) {
		memset(c->e, 0, (c->mask + 1) * sizeof(*c->e));
		c->n = 0;
		return;
	}
	for (size_t i = 0; i <= c->mask; i++) {
		size_t j;
		if (!c->e[i].used)
			continue;
		for (j = hash64(c->e[i].addr, cap - 1); e[j].used; j = (j + 1) & (cap - 1))
			;
		e[j] = c->e[i];
	}
	free(c->e);
	c->e = e;
	c->mask = cap - 1;
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
		symcache_room(c);
		for (j = hash64(addr, c->mask); c->e[j].used; j = (j + 1) & c->mask)
			;
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

/* "sec[.nanoseconds]" of --time into ns: the bytes used, 0 if none. */
static size_t parse_seconds(const char *p, uint64_t *ns)
{
	const char *q = p;
	uint64_t sec = 0, frac = 0, scale = 1000000000u;

	while (*q >= '0' && *q <= '9' && q - p < 12)
		sec = sec * 10 + (uint64_t)(*q++ - '0');
	if (q == p)
		return 0;
	if (*q == '.')
		for (q++; *q >= '0' && *q <= '9'; q++)
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*q - '0') * scale;
			}
	*ns = sec * 1000000000u + frac;
	return (size_t)(q - p);
}

int report_parse_time(const char *spec, struct report_filter *f, char *err, size_t errlen)
{
	const char *comma = strchr(spec, ',');
	bool bad = !comma;
	size_t n;

	if (strchr(spec, '%')) {
		snprintf(err, errlen, "'%s': perf's percent slices are not supported: give "
			 "START,STOP in seconds.nanoseconds (as bareperf script prints them)", spec);
		return -1;
	}
	if (strchr(spec, ' ')) {
		snprintf(err, errlen, "'%s': one range only (START,STOP), not several", spec);
		return -1;
	}
	f->time_lo = 0;
	f->time_hi = UINT64_MAX;
	if (!bad && comma > spec)
		bad = parse_seconds(spec, &f->time_lo) != (size_t)(comma - spec);
	if (!bad && comma[1])
		bad = !(n = parse_seconds(comma + 1, &f->time_hi)) || comma[1 + n];
	if (bad || f->time_lo > f->time_hi) {
		snprintf(err, errlen, "'%s' is not START,STOP in seconds.nanoseconds (either may "
			 "be left out: ,STOP or START,)", spec);
		return -1;
	}
	f->time_set = true;
	return 0;
}

bool report_time_in(const struct report_filter *f, const struct session *s, uint64_t tsc)
{
	uint64_t ns;

	if (!f->time_set)
		return true;
	ns = session_tsc_to_ns(s, tsc);
	return ns >= f->time_lo && ns <= f->time_hi;
}

bool report_symbol_in(const char *list, const char *name)
{
	size_t l = name ? strlen(name) : 0;

	for (const char *p = list; l && *p;) {
		size_t n = strcspn(p, ",");
		if (n == l && !strncmp(p, name, l))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
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

/*
 * -g: the distinct call chains of the samples not yet in the trees, each
 * with its samples and period, in the order of their first sample: a
 * sample costs one probe here, and a chain is named and walked into its
 * tree once (chains_flush), not once per sample. Put in that order, they
 * make the tree (its nodes, their order) that one sample at a time makes.
 */
/*
 * A chain of up to PCHAIN_INLINE addresses is kept in its entry too, and
 * an entry is one cache line: a sample whose chain is short finds and
 * counts it reading that line alone. Every chain's addresses are also at
 * ips[off], where chains_flush reads them.
 */
#define PCHAIN_INLINE	3

struct pchain {
	uint64_t ip, samples, period;
	uint32_t ev, nr;		/* event slot; its nr ips at ips[off] */
	uint32_t off;
	uint64_t in[PCHAIN_INLINE];	/* nr <= PCHAIN_INLINE: the ips again */
} __attribute__((aligned(64)));

struct chains {
	struct pchain *c;
	size_t n, cap;
	uint64_t *ips;
	size_t nips, cap_ips;
	uint32_t *slot;			/* index + 1 into c, 0: free */
	size_t mask;
};

/* Chain ips that may wait before they go into the trees. */
#define CHAINS_PENDING_MAX	(4u << 20)

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
	uint64_t ctx_mask;		/* of cpu << 32 | pid: the sort keys that
					 * split an IP's samples */
	bool filtering;			/* a filter is set: kept() says */
	const struct session *s;	/* report_end's, for app names */
	struct cment { uint64_t key; size_t parent, node; } *cm;	/* -g: (parent, key) -> node */
	size_t cm_mask, cm_n;
	struct chains pend;		/* -g: chains not yet in the trees */
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

/* The child of parent with key, if there is one; else 0. */
static size_t node_find(const struct report_agg *A, size_t parent, uint64_t key)
{
	if (!A->cm)
		return 0;
	for (size_t j = hash64(key ^ parent * 0x9e3779b97f4a7c15ull, A->cm_mask); A->cm[j].node;
	     j = (j + 1) & A->cm_mask)
		if (A->cm[j].parent == parent && A->cm[j].key == key)
			return A->cm[j].node;
	return 0;
}

#define MAX_CHAIN 128

/* -g: a chain (its leaf ip, then nr_ips ips: ips[0] the leaf again, then
 * return addresses) of samples with period into the event's tree and
 * inclusive costs; a sample with no chain (nr_ips 0) is a chain of its own ip. */
static int add_chain(struct report_agg *A, struct evstate *E, uint64_t ip, uint32_t nr_ips,
		     const uint64_t *ips, uint64_t samples, uint64_t period)
{
	struct report *r = A->r;
	uint64_t keys[MAX_CHAIN];
	const char *names[MAX_CHAIN];
	size_t n = 0, node;
	size_t max = A->o.max_stack && A->o.max_stack < MAX_CHAIN ? A->o.max_stack : MAX_CHAIN;

	keys[n] = symcache_get(&A->sc, ip, &names[n]);
	n++;
	for (uint32_t i = 1; i < nr_ips && n < max; i++) {
		uint64_t ret = ips[i];
		if (!ret || ret >= (uint64_t)-4095)	/* none, or a perf context marker */
			continue;
		/* A return address: the call is the instruction before it;
		 * or the RIP an interrupt hit (tools/util/symbol.h). */
		keys[n] = symcache_get(&A->sc, symtab_chain_addr(A->sc.t, i, ips[i - 1], ret),
				       &names[n]);
		n++;
	}
	/* Under the root, every function of the chain, as perf's --children
	 * has it, once however often it recurs (its innermost call); under
	 * each its callers, innermost first, or (inverted) the chain from the
	 * outermost caller down to it. Its inclusive cost likewise once. */
	for (size_t j = 0; j < n; j++) {
		bool seen = false;
		for (size_t i = 0; i < j && !seen; i++)
			seen = keys[i] == keys[j];
		if (seen)
			continue;
		node = E->root;
		for (size_t k = 0; k < n - j + A->o.inverted; k++) {
			size_t i = j + (!A->o.inverted ? k : k ? n - j - k : 0);
			node = node_child(A, node, keys[i], names[i]);
			if (!node)
				return -1;
			r->pool[node].samples += samples;
			r->pool[node].period += period;
		}
		if (iptab_add(&E->child, keys[j], 0, samples, period))
			return -1;
	}
	return 0;
}

static uint64_t chain_hash(size_t ev, uint64_t ip, uint32_t nr, const uint64_t *ips)
{
	uint64_t h = (ev * 0x9e3779b97f4a7c15ull ^ ip) * 0xff51afd7ed558ccdull ^ nr;

	for (uint32_t i = 0; i < nr; i++)
		h = (h ^ (h >> 29) ^ ips[i]) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 32);
}

static void chains_free(struct chains *p)
{
	free(p->c);
	free(p->ips);
	free(p->slot);
	memset(p, 0, sizeof(*p));
}

/* Every pending chain into its event's tree, in the order of its first
 * sample; the table is empty after. 0, or -1 if out of memory. */
static int chains_flush(struct report_agg *A)
{
	struct chains *p = &A->pend;

	for (size_t i = 0; i < p->n; i++) {
		const struct pchain *c = &p->c[i];
		if (add_chain(A, &A->ev[c->ev], c->ip, c->nr, c->nr ? p->ips + c->off : NULL,
			      c->samples, c->period))
			return -1;
	}
	if (p->slot)
		memset(p->slot, 0, (p->mask + 1) * sizeof(*p->slot));
	p->n = p->nips = 0;
	return 0;
}

/* Twice the slots (4096 at first), the chains hashed into them again. */
static int chains_rehash(struct chains *p)
{
	size_t cap = p->slot ? 2 * (p->mask + 1) : 4096;
	uint32_t *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < p->n; i++) {
		const struct pchain *c = &p->c[i];
		size_t j = chain_hash(c->ev, c->ip, c->nr, p->ips + c->off) & (cap - 1);
		while (slot[j])
			j = (j + 1) & (cap - 1);
		slot[j] = (uint32_t)(i + 1);
	}
	free(p->slot);
	p->slot = slot;
	p->mask = cap - 1;
	return 0;
}

/* A new pending chain at free slot j (its hash h), the tables grown as needed. */
static int chains_insert(struct report_agg *A, size_t j, uint64_t h, size_t ev,
			 const struct bp_sample_rec *x, const uint64_t *ips)
{
	struct chains *p = &A->pend;

	if (p->nips + x->nr_ips > CHAINS_PENDING_MAX || p->n >= UINT32_MAX - 1) {
		if (chains_flush(A))
			return -1;
		j = SIZE_MAX;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 1024;
		struct pchain *c = aligned_alloc(_Alignof(struct pchain), cap * sizeof(*c));
		if (!c)
			return -1;
		if (p->n)
			memcpy(c, p->c, p->n * sizeof(*c));
		free(p->c);
		p->c = c;
		p->cap = cap;
	}
	if (p->nips + x->nr_ips > p->cap_ips) {
		size_t cap = p->cap_ips ? 2 * p->cap_ips : 4096;
		while (cap < p->nips + x->nr_ips)
			cap *= 2;
		uint64_t *q = realloc(p->ips, cap * sizeof(*q));
		if (!q)
			return -1;
		p->ips = q;
		p->cap_ips = cap;
	}
	if (!p->slot || 2 * (p->n + 1) > p->mask + 1) {
		if (chains_rehash(p))
			return -1;
		j = SIZE_MAX;
	}
	if (j == SIZE_MAX)
		for (j = h & p->mask; p->slot[j]; j = (j + 1) & p->mask)
			;
	if (x->nr_ips)
		memcpy(p->ips + p->nips, ips, x->nr_ips * sizeof(*ips));
	p->c[p->n] = (struct pchain){ x->ip, 1, x->period, (uint32_t)ev, x->nr_ips,
				      (uint32_t)p->nips, { 0 } };
	if (x->nr_ips <= PCHAIN_INLINE && x->nr_ips)
		memcpy(p->c[p->n].in, ips, x->nr_ips * sizeof(*ips));
	p->nips += x->nr_ips;
	p->slot[j] = (uint32_t)++p->n;
	return 0;
}

static bool same_ips(const uint64_t *a, const uint64_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* -g: one sample's chain (see add_chain), counted with the same chain
 * of earlier samples until the next flush. */
static __attribute__((noinline)) int chains_add(struct report_agg *A, size_t ev, const struct bp_sample_rec *x,
		      const uint64_t *ips)
{
	struct chains *p = &A->pend;
	uint64_t h = chain_hash(ev, x->ip, x->nr_ips, ips);
	size_t j = SIZE_MAX;

	if (p->slot)
		for (j = h & p->mask; p->slot[j]; j = (j + 1) & p->mask) {
			struct pchain *c = &p->c[p->slot[j] - 1];
			if (c->ev == ev && c->ip == x->ip && c->nr == x->nr_ips &&
			    same_ips(c->nr <= PCHAIN_INLINE ? c->in : p->ips + c->off, ips, c->nr)) {
				c->samples++;
				c->period += x->period;
				return 0;
			}
		}
	return chains_insert(A, j, h, ev, x, ips);
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

const char *report_app_name(const struct session *s, uint32_t pid)
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
		case RK_DSO: {			/* the kernel's, or a program's */
			const char *dx = symtab_dso(A->sc.t, x->key), *dy = symtab_dso(A->sc.t, y->key);
			if (dx != dy && (c = strcmp(dx ? dx : "", dy ? dy : "")))
				return c;
			break;
		}
		case RK_SRCLINE:
			if (!x->file != !y->file)
				return x->file ? -1 : 1;
			if (x->file && (c = strcmp(x->file, y->file)))
				return c;
			if (!x->file && x->line_addr != y->line_addr)
				return x->line_addr < y->line_addr ? -1 : 1;
			if (x->line != y->line)
				return x->line - y->line;
			/* One row per line, as perf: a line shared by several
			 * functions (inlined code, macros) is one row. */
			break;
		case RK_CPU:
			if (x->cpu != y->cpu)
				return x->cpu < y->cpu ? -1 : 1;
			break;
		case RK_COMM:
			if ((c = strcmp(report_app_name(A->s, x->pid), report_app_name(A->s, y->pid))))
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

/* The rows' order: by the sort keys, then by function (a line's
 * functions next to each other, to be counted as they merge). */
static int cmp_keys_fn(const void *a, const void *b)
{
	const struct report_row *x = a, *y = b;
	int c = cmp_keys(a, b);

	if (c || x->key == y->key)
		return c;
	return x->key < y->key ? -1 : 1;
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
	qsort(rows, n, sizeof(*rows), cmp_keys_fn);
	for (size_t i = 0; i < n; i++) {
		uint64_t prev_fn = i ? rows[i - 1].key : 0;
		if (m && !cmp_keys(&rows[m - 1], &rows[i])) {
			rows[m - 1].samples += rows[i].samples;
			rows[m - 1].period += rows[i].period;
			rows[m - 1].more_functions += rows[i].key != prev_fn;
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
				.child_samples = x->samples, .child_period = x->period,
				.callers = node_find(A, S->root, x->ip) };
		}
		/* Each function's callers tree: the root's child with its key. */
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
		if (A->o.keys[i] == RK_CPU)
			A->ctx_mask |= 0xffffffffull << 32;
		if (A->o.keys[i] == RK_COMM || A->o.keys[i] == RK_PID)
			A->ctx_mask |= 0xffffffffull;
	}
	A->filtering = o->filter.cpu_set || o->filter.app || o->filter.time_set ||
		       o->filter.symbols;
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

/* Does the filter keep x? (-C, --app, --time, -S) Out of line, as the
 * rest of report_add's rarer work: what stays in it is one sample's
 * path without them. */
static __attribute__((noinline)) bool kept(struct report_agg *A, const struct session *s, const struct bp_sample_rec *x)
{
	if (A->o.filter.cpu_set && (x->cpu >= SESSION_MAX_CPUS || !A->o.filter.cpus[x->cpu]))
		return false;
	if (A->o.filter.app && !app_match(A, s, x->pid))
		return false;
	if (!report_time_in(&A->o.filter, s, x->time))
		return false;
	if (A->o.filter.symbols) {
		const char *name;
		symcache_get(&A->sc, x->ip, &name);
		if (!report_symbol_in(A->o.filter.symbols, name))
			return false;
	}
	return true;
}

int report_add(struct report_agg *A, const struct session *s, const struct bp_sample_rec *x,
	       const uint64_t *ips)
{
	struct report *r = A->r;
	size_t ev;

	if (x->cpu < SESSION_MAX_CPUS)
		r->cpu_seen[x->cpu] = true;
	if (A->filtering && !kept(A, s, x)) {
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
	if (iptab_add(&A->ev[ev].ipt, x->ip, A->ctx_mask & ((uint64_t)x->cpu << 32 | x->pid), 1,
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
	/* A sample without a chain is still its own function's cost: it
	 * counts toward that function's inclusive cost (a chain of one), so
	 * Children is never below Self. */
	if (A->o.callgraph && chains_add(A, ev, x, ips))
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
	if (!rc && chains_flush(A))
		rc = -1;
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

void report_set_symtab(struct report_agg *A, const struct symtab *t)
{
	A->sc.t = t;
}

int report_flush(struct report_agg *A)
{
	return chains_flush(A);
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
	chains_free(&A->pend);
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
