/*
 * tools/util/stack.c — the stack tree, folded stacks and kinds of code
 * (tools/util/stack.h). The tree is also the source of `convert --to
 * folded`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/stack.h"

/* ---- the stack tree ----------------------------------------------------- */

/*
 * Names are interned twice over: by pointer (the symtab hands out one
 * pointer per symbol, so this is the fast path) and, on a pointer miss,
 * by content (two static functions with one name are one frame, as in
 * every flame graph). Children are found by (parent, name id).
 */
struct ptr_slot { const char *key; uint32_t id; };
struct str_slot { uint64_t hash; uint32_t id_plus1; };
struct child_slot { uint64_t key; uint32_t node_plus1; };

struct stack_map {
	struct ptr_slot *ptab;
	size_t pcap, pn;
	struct str_slot *stab;
	size_t scap, sn;
	const char **names;
	size_t nnames, names_cap;
	struct child_slot *ctab;
	size_t ccap, cn;
	char **owned;			/* names read from folded text: the tree's copies */
	size_t nowned, owned_cap;
};

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

/* Open addressing stays under 3/4 full. */
static bool need_rehash(size_t n, size_t cap)
{
	return (n + 1) * 4 >= cap * 3;
}

static int str_intern(struct stack_map *m, const char *name, uint32_t *id)
{
	uint64_t h = str_hash(name);

	if (need_rehash(m->sn, m->scap)) {
		size_t cap = m->scap ? m->scap * 2 : 1024;
		struct str_slot *t = calloc(cap, sizeof(*t));
		if (!t)
			return -1;
		for (size_t i = 0; i < m->scap; i++) {
			if (!m->stab[i].id_plus1)
				continue;
			size_t j = m->stab[i].hash & (cap - 1);
			while (t[j].id_plus1)
				j = (j + 1) & (cap - 1);
			t[j] = m->stab[i];
		}
		free(m->stab);
		m->stab = t;
		m->scap = cap;
	}
	for (size_t j = h & (m->scap - 1);; j = (j + 1) & (m->scap - 1)) {
		struct str_slot *sl = &m->stab[j];
		if (!sl->id_plus1) {
			if (m->nnames == m->names_cap) {
				size_t cap = m->names_cap ? m->names_cap * 2 : 1024;
				const char **v = realloc(m->names, cap * sizeof(*v));
				if (!v)
					return -1;
				m->names = v;
				m->names_cap = cap;
			}
			m->names[m->nnames] = name;
			sl->hash = h;
			sl->id_plus1 = (uint32_t)++m->nnames;
			m->sn++;
			*id = sl->id_plus1 - 1;
			return 0;
		}
		if (sl->hash == h && !strcmp(m->names[sl->id_plus1 - 1], name)) {
			*id = sl->id_plus1 - 1;
			return 0;
		}
	}
}

static int intern(struct stack_map *m, const char *name, uint32_t *id)
{
	if (need_rehash(m->pn, m->pcap)) {
		size_t cap = m->pcap ? m->pcap * 2 : 1024;
		struct ptr_slot *t = calloc(cap, sizeof(*t));
		if (!t)
			return -1;
		for (size_t i = 0; i < m->pcap; i++) {
			if (!m->ptab[i].key)
				continue;
			size_t j = mix64((uintptr_t)m->ptab[i].key) & (cap - 1);
			while (t[j].key)
				j = (j + 1) & (cap - 1);
			t[j] = m->ptab[i];
		}
		free(m->ptab);
		m->ptab = t;
		m->pcap = cap;
	}
	for (size_t j = mix64((uintptr_t)name) & (m->pcap - 1);; j = (j + 1) & (m->pcap - 1)) {
		struct ptr_slot *sl = &m->ptab[j];
		if (sl->key == name) {
			*id = sl->id;
			return 0;
		}
		if (!sl->key) {
			if (str_intern(m, name, id))
				return -1;
			sl->key = name;
			sl->id = *id;
			m->pn++;
			return 0;
		}
	}
}

static int add_node(struct stack_tree *tr, uint32_t parent, const char *name, uint32_t *out)
{
	struct stack_node *p;

	if (tr->n == tr->cap) {
		size_t cap = tr->cap ? tr->cap * 2 : 1024;
		struct stack_node *v = realloc(tr->nodes, cap * sizeof(*v));
		if (!v)
			return -1;
		tr->nodes = v;
		tr->cap = cap;
	}
	if (tr->n >= UINT32_MAX)
		return -1;
	p = &tr->nodes[parent];
	tr->nodes[tr->n] = (struct stack_node){
		.name = name, .parent = parent, .next_sibling = p->first_child,
		.depth = p->depth + 1,
	};
	p->first_child = (uint32_t)tr->n;
	if (p->depth + 1 > tr->max_depth)
		tr->max_depth = p->depth + 1;
	*out = (uint32_t)tr->n++;
	return 0;
}

static int child(struct stack_tree *tr, uint32_t parent, const char *name, uint32_t *out)
{
	struct stack_map *m = tr->map;
	uint32_t nid;
	uint64_t key;

	if (intern(m, name, &nid))
		return -1;
	key = (uint64_t)parent << 32 | nid;
	if (need_rehash(m->cn, m->ccap)) {
		size_t cap = m->ccap ? m->ccap * 2 : 4096;
		struct child_slot *t = calloc(cap, sizeof(*t));
		if (!t)
			return -1;
		for (size_t i = 0; i < m->ccap; i++) {
			if (!m->ctab[i].node_plus1)
				continue;
			size_t j = mix64(m->ctab[i].key) & (cap - 1);
			while (t[j].node_plus1)
				j = (j + 1) & (cap - 1);
			t[j] = m->ctab[i];
		}
		free(m->ctab);
		m->ctab = t;
		m->ccap = cap;
	}
	for (size_t j = mix64(key) & (m->ccap - 1);; j = (j + 1) & (m->ccap - 1)) {
		struct child_slot *sl = &m->ctab[j];
		if (sl->node_plus1 && sl->key == key) {
			*out = sl->node_plus1 - 1;
			return 0;
		}
		if (!sl->node_plus1) {
			if (add_node(tr, parent, m->names[nid], out))
				return -1;
			sl->key = key;
			sl->node_plus1 = *out + 1;
			m->cn++;
			return 0;
		}
	}
}

/* An empty tree: the root "all" alone. */
static int tree_init(struct stack_tree *tr)
{
	memset(tr, 0, sizeof(*tr));
	tr->map = calloc(1, sizeof(*tr->map));
	tr->nodes = malloc(1024 * sizeof(*tr->nodes));
	if (!tr->map || !tr->nodes)
		return -1;
	tr->cap = 1024;
	tr->nodes[0] = (struct stack_node){ .name = "all" };
	tr->n = 1;
	tr->unit = 1;
	return 0;
}

const char *stack_count_text(const struct stack_tree *tr, uint64_t count, char *buf, size_t n)
{
	uint64_t unit = tr->unit ? tr->unit : 1, part = count % unit;
	int len = snprintf(buf, n, "%" PRIu64, count / unit);

	if (part && len > 0 && (size_t)len < n) {
		int digits = 0;
		for (uint64_t u = unit; u > 1; u /= 10)
			digits++;
		while (part % 10 == 0)
			part /= 10, digits--;
		snprintf(buf + len, n - (size_t)len, ".%0*" PRIu64, digits, part);
	}
	return buf;
}

int stack_tree_build(struct stack_tree *tr, const struct session *s, const struct symtab *t,
		     bool all_events, uint64_t event_id, char *err, size_t errlen)
{
	if (tree_init(tr))
		goto oom;

	for (size_t i = 0; i < s->nsamples; i++) {
		const struct bp_sample_rec *r = &s->samples[i];
		uint32_t node = 0;

		if (!all_events && r->id != event_id)
			continue;
		tr->nodes[0].total++;
		if (!r->nr_ips) {
			if (child(tr, 0, stack_frame_name(t, r->ip), &node))
				goto oom;
			if (!tr->nodes[node].total++)
				tr->nodes[node].kind = convert_addr_kind(t, r->ip);
		}
		for (uint32_t k = r->nr_ips; k-- > 0;) {
			const uint64_t *ips = &s->ips[r->ips_off];
			uint64_t a = symtab_chain_addr(t, k, k ? ips[k - 1] : 0, ips[k]);
			if (child(tr, node, stack_frame_name(t, a), &node))
				goto oom;
			if (!tr->nodes[node].total++)
				tr->nodes[node].kind = convert_addr_kind(t, a);
		}
		tr->nodes[node].self++;
	}
	return 0;
oom:
	stack_tree_free(tr);
	snprintf(err, errlen, "out of memory building the stack tree");
	return -1;
}

/*
 * A name read from text (n bytes at s), as the tree's own copy: the one
 * copy of that content (str_intern keeps a new name's pointer, so only a
 * copy it did not keep is freed).
 */
static const char *own_name(struct stack_map *m, const char *s, size_t n)
{
	char *copy;
	uint32_t id;

	if (m->nowned == m->owned_cap) {
		size_t cap = m->owned_cap ? 2 * m->owned_cap : 1024;
		char **v = realloc(m->owned, cap * sizeof(*v));
		if (!v)
			return NULL;
		m->owned = v;
		m->owned_cap = cap;
	}
	if (!(copy = strndup(s, n)) || str_intern(m, copy, &id)) {
		free(copy);
		return NULL;
	}
	if (m->names[id] != copy) {
		free(copy);
		return m->names[id];
	}
	m->owned[m->nowned++] = copy;
	return copy;
}

/*
 * A folded line's count as flamegraph.pl takes it: digits, then perhaps a
 * point and more digits. *whole, and the fraction in millionths in *part
 * (the seventh decimal rounds it, half up; further ones are dropped);
 * *point if there was one. -1 if s is no such count, or too large.
 */
static int folded_count(const char *s, uint64_t *whole, uint64_t *part, bool *point)
{
	uint64_t scale = STACK_UNIT_FRACTION;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*whole = strtoull(s, &end, 10);
	*part = 0;
	*point = *end == '.';
	if (errno)
		return -1;
	if (*point)
		for (end++; *end >= '0' && *end <= '9'; end++) {
			if (scale > 1)
				*part += (uint64_t)(*end - '0') * (scale /= 10);
			else if (scale == 1 && *end >= '5')
				(*part)++, scale = 0;
			else
				scale = 0;
		}
	return *end ? -1 : 0;
}

/* The tree counts millionths of a sample from now on. 0, or -1 if its
 * counts are too large for that. */
static int tree_to_fractions(struct stack_tree *tr)
{
	if (tr->nodes[0].total > UINT64_MAX / STACK_UNIT_FRACTION)
		return -1;
	for (size_t i = 0; i < tr->n; i++) {
		tr->nodes[i].total *= STACK_UNIT_FRACTION;
		tr->nodes[i].self *= STACK_UNIT_FRACTION;
	}
	tr->unit = STACK_UNIT_FRACTION;
	return 0;
}

/* One folded line, "a;b;c 12" (trailing white space gone), into the tree;
 * 1 if it is no such line. */
static int folded_line(struct stack_tree *tr, char *line)
{
	char *sp = strrchr(line, ' '), *tab = strrchr(line, '\t');
	uint32_t node = 0;
	uint64_t count, whole, part;
	bool point;

	if (!sp || (tab && tab > sp))
		sp = tab;
	if (!sp || sp == line || folded_count(sp + 1, &whole, &part, &point))
		return 1;
	if (point && tr->unit == 1 && tree_to_fractions(tr))
		return 1;
	if (tr->unit == 1)
		count = whole;
	else if (whole > (UINT64_MAX - part) / STACK_UNIT_FRACTION)
		return 1;
	else
		count = whole * STACK_UNIT_FRACTION + part;
	if (tr->nodes[0].total > UINT64_MAX - count)
		return 1;
	while (sp > line && (sp[-1] == ' ' || sp[-1] == '\t'))
		sp--;
	*sp = 0;
	tr->nodes[0].total += count;
	for (char *f = line;; f++) {
		size_t n = strcspn(f, ";");
		const char *name = own_name(tr->map, f, n);
		if (!name || child(tr, node, name, &node))
			return -1;
		tr->nodes[node].total += count;
		if (!f[n])
			break;
		f += n;
	}
	tr->nodes[node].self += count;
	return 0;
}

int stack_tree_read_folded(struct stack_tree *tr, FILE *in, size_t *ignored, char *err,
			   size_t errlen)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0;

	*ignored = 0;
	if (tree_init(tr)) {
		rc = -1;
		goto done;
	}
	while (rc >= 0 && (len = getline(&line, &cap, in)) >= 0) {
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' ||
			       line[len - 1] == ' ' || line[len - 1] == '\t'))
			line[--len] = 0;
		rc = folded_line(tr, line);
		if (rc > 0)
			++*ignored;
	}
done:
	free(line);
	if (rc < 0) {
		stack_tree_free(tr);
		snprintf(err, errlen, "out of memory building the stack tree");
		return -1;
	}
	if (ferror(in)) {
		stack_tree_free(tr);
		snprintf(err, errlen, "read: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int stack_tree_reverse(const struct stack_tree *in, struct stack_tree *out, char *err,
		       size_t errlen)
{
	if (tree_init(out))
		goto oom;
	out->unit = in->unit;
	out->nodes[0].total = in->nodes[0].total;
	for (size_t n = 1; n < in->n; n++) {
		uint64_t self = in->nodes[n].self;
		uint32_t node = 0;

		if (!self)
			continue;
		for (uint32_t k = (uint32_t)n; k; k = in->nodes[k].parent) {
			if (child(out, node, in->nodes[k].name, &node))
				goto oom;
			out->nodes[node].total += self;
			out->nodes[node].kind = in->nodes[k].kind;
		}
		out->nodes[node].self += self;
	}
	return 0;
oom:
	stack_tree_free(out);
	snprintf(err, errlen, "out of memory building the stack tree");
	return -1;
}

void stack_tree_free(struct stack_tree *tr)
{
	if (tr->map) {
		for (size_t i = 0; i < tr->map->nowned; i++)
			free(tr->map->owned[i]);
		free(tr->map->owned);
		free(tr->map->ptab);
		free(tr->map->stab);
		free(tr->map->names);
		free(tr->map->ctab);
		free(tr->map);
	}
	free(tr->nodes);
	memset(tr, 0, sizeof(*tr));
}

static int cmp_by_name(const void *a, const void *b, void *tree)
{
	const struct stack_tree *tr = tree;

	return strcmp(tr->nodes[*(const uint32_t *)a].name, tr->nodes[*(const uint32_t *)b].name);
}

/* Children of node n in name order, into a malloc'ed array. */
static uint32_t *sorted_children(const struct stack_tree *tr, uint32_t n, size_t *count)
{
	size_t k = 0;
	uint32_t *v;

	for (uint32_t c = tr->nodes[n].first_child; c; c = tr->nodes[c].next_sibling)
		k++;
	v = malloc((k ? k : 1) * sizeof(*v));
	if (!v)
		return NULL;
	k = 0;
	for (uint32_t c = tr->nodes[n].first_child; c; c = tr->nodes[c].next_sibling)
		v[k++] = c;
	qsort_r(v, k, sizeof(*v), cmp_by_name, (void *)tr);
	*count = k;
	return v;
}

int stack_tree_walk(const struct stack_tree *tr, stack_visit_fn visit, void *ctx)
{
	struct frame { uint32_t *kids; size_t n, i; } *st;
	size_t depth = 0;
	int rc;

	st = malloc((tr->max_depth + 1) * sizeof(*st));
	if (!st)
		return -1;
	if ((rc = visit(tr, 0, ctx)) || !(st[0].kids = sorted_children(tr, 0, &st[0].n))) {
		free(st);
		return rc ? rc : -1;
	}
	st[0].i = 0;
	for (;;) {
		struct frame *f = &st[depth];
		uint32_t c;

		if (rc || f->i == f->n) {	/* done here (or failed): unwind */
			free(f->kids);
			if (depth == 0)
				break;
			depth--;
			continue;
		}
		c = f->kids[f->i++];
		if ((rc = visit(tr, c, ctx)))
			continue;
		f = &st[++depth];
		f->i = 0;
		if (!(f->kids = sorted_children(tr, c, &f->n))) {
			depth--;
			rc = -1;
		}
	}
	free(st);
	return rc;
}

/* ---- folded ----------------------------------------------------------- */

struct folded_ctx {
	FILE *out;
	const char **path;
};

/* A frame name fit for a folded line: no ';' (the separator), no line breaks. */
static void put_folded_name(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc(*s == ';' || *s == '\n' || *s == '\r' ? '_' : *s, out);
}

static int folded_pre(const struct stack_tree *tr, uint32_t n, void *vctx)
{
	struct folded_ctx *c = vctx;
	const struct stack_node *nd = &tr->nodes[n];

	if (n == 0)
		return 0;
	c->path[nd->depth] = nd->name;
	if (nd->self) {
		for (uint32_t d = 1; d <= nd->depth; d++) {
			if (d > 1)
				fputc(';', c->out);
			put_folded_name(c->out, c->path[d]);
		}
		char num[32];
		fprintf(c->out, " %s\n", stack_count_text(tr, nd->self, num, sizeof(num)));
	}
	return ferror(c->out) ? -1 : 0;
}

int stack_tree_write_folded(const struct stack_tree *tr, FILE *out)
{
	struct folded_ctx c = { out, calloc(tr->max_depth + 2, sizeof(char *)) };
	int rc;

	if (!c.path)
		return -1;
	rc = stack_tree_walk(tr, folded_pre, &c);
	free(c.path);
	return rc || ferror(out) ? -1 : 0;
}

const char *stack_frame_name(const struct symtab *t, uint64_t addr)
{
	struct symbol sym = symtab_lookup(t, addr);
	return sym.name ? sym.name : CONVERT_UNKNOWN;
}

uint64_t stack_name_hash(const char *name)
{
	return mix64(str_hash(name));
}

/* ---- kinds of code ------------------------------------------------------ */

/* apps/ holds the apps and, beside them, the layer's own machinery that
 * runs them: the registry, the run, the control channel and its START_RUN.
 * That is the kernel's side of a run, not an app's code. */
static bool apps_machinery(const char *file)
{
	static const char *const files[] = { "apps/app.c", "apps/run.c", "apps/run_request.c",
					     "apps/control.c" };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (strstr(file, files[i]))
			return true;
	return false;
}

/*
 * The measured benchmark bodies (BENCH_BODY and BENCH_ASM, apps/bench.h),
 * assembly or C, lie between the labels linker.ld puts around them; a
 * program the kernel loaded is app code, and so is the kernel's if its
 * source is under apps/ or test/guest/ (but for apps/'s machinery).
 */
enum convert_kind convert_addr_kind(const struct symtab *t, uint64_t addr)
{
	const char *file;
	uint64_t lo, hi;
	int line;

	if (t && symtab_value(t, "__bench_body_start", &lo) &&
	    symtab_value(t, "__bench_body_end", &hi) && addr >= lo && addr < hi)
		return CONVERT_KIND_BENCH;
	if (symtab_dso(t, addr))
		return CONVERT_KIND_APP;
	if (!t || !symtab_line(t, addr, &file, &line) || apps_machinery(file))
		return CONVERT_KIND_KERNEL;
	if (strstr(file, "apps/") || strstr(file, "test/guest/"))
		return CONVERT_KIND_APP;
	return CONVERT_KIND_KERNEL;
}

const char *convert_kind_name(enum convert_kind k)
{
	return k == CONVERT_KIND_BENCH ? "benchmark" : k == CONVERT_KIND_APP ? "app" : "kernel";
}
