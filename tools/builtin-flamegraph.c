/*
 * tools/builtin-flamegraph.c — `bareperf flamegraph`: samples merged into a tree
 * of stacks (also the source of `convert --to folded`), drawn as a
 * self-contained interactive SVG: the root at the bottom, callers below
 * callees, children in name order, width proportional to samples. The
 * inline script gives tooltips (name, samples, percentage; also on the
 * details line), click to zoom, and a regex search that highlights the
 * matching frames and sums their share without double counting.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "tools/commands.h"
#include "tools/convert.h"

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

static const char *frame_name(const struct symtab *t, uint64_t addr)
{
	struct symbol sym = symtab_lookup(t, addr);
	return sym.name ? sym.name : CONVERT_UNKNOWN;
}

int stack_tree_build(struct stack_tree *tr, const struct session *s, const struct symtab *t,
		     bool all_events, uint64_t event_id, char *err, size_t errlen)
{
	memset(tr, 0, sizeof(*tr));
	tr->map = calloc(1, sizeof(*tr->map));
	tr->nodes = malloc(1024 * sizeof(*tr->nodes));
	if (!tr->map || !tr->nodes)
		goto oom;
	tr->cap = 1024;
	tr->nodes[0] = (struct stack_node){ .name = "all" };
	tr->n = 1;

	for (size_t i = 0; i < s->nsamples; i++) {
		const struct bp_sample_rec *r = &s->samples[i];
		uint32_t node = 0;

		if (!all_events && r->id != event_id)
			continue;
		tr->nodes[0].total++;
		if (!r->nr_ips) {
			if (child(tr, 0, frame_name(t, r->ip), &node))
				goto oom;
			if (!tr->nodes[node].total++)
				tr->nodes[node].kind = convert_addr_kind(t, r->ip);
		}
		for (uint32_t k = r->nr_ips; k-- > 0;) {
			uint64_t a = s->ips[r->ips_off + k] - (k ? 1 : 0);
			if (child(tr, node, frame_name(t, a), &node))
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

void stack_tree_free(struct stack_tree *tr)
{
	if (tr->map) {
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

/* Depth-first from the root, children in name order: visit(node) in
 * pre-order, until it returns nonzero. */
typedef int (*visit_fn)(const struct stack_tree *tr, uint32_t node, void *ctx);

static int walk(const struct stack_tree *tr, visit_fn visit, void *ctx)
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
		fprintf(c->out, " %" PRIu64 "\n", nd->self);
	}
	return ferror(c->out) ? -1 : 0;
}

int stack_tree_write_folded(const struct stack_tree *tr, FILE *out)
{
	struct folded_ctx c = { out, calloc(tr->max_depth + 2, sizeof(char *)) };
	int rc;

	if (!c.path)
		return -1;
	rc = walk(tr, folded_pre, &c);
	free(c.path);
	return rc || ferror(out) ? -1 : 0;
}

/* ---- SVG ---------------------------------------------------------------- */

void xml_escape(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq_len(p);
		switch (n ? *p : 0) {
		case 0:   fputc('?', out); p++; continue;	/* not UTF-8 */
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		case '\t': case '\n': case '\r': fputc(' ', out); break;
		default:
			if (*p < 0x20)		/* not allowed in XML 1.0, even escaped */
				fputc('?', out);
			else
				fwrite(p, 1, n, out);
		}
		p += n;
	}
}

#define FG_FRAME_H	16
#define FG_FONT		12
#define FG_CHAR_W	(FG_FONT * 0.59)	/* average glyph width, px */
#define FG_XPAD		10
#define FG_TOP		80		/* title, subtitle, buttons, legend */
#define FG_BOTTOM	30		/* details line */
#define FG_MIN_W	0.1		/* narrower frames are left out, px */

struct svg_ctx {
	FILE *out;
	double scale;			/* px per sample */
	double height;
	double *x;			/* per node: left edge */
	uint64_t total;
	size_t elided;
};

/*
 * Colour by kind of code, shade by name (stable from run to run): the
 * kernel orange, apps green, benchmark bodies blue, so the measured code
 * stands out from the harness and the kernel around it. The legend shows
 * one swatch of each.
 */
static const struct {
	const char *label;
	unsigned base[3], span[3];
} kinds[] = {
	[CONVERT_KIND_KERNEL] = { "kernel", { 225, 120, 20 }, { 30, 60, 30 } },
	[CONVERT_KIND_APP] = { "app", { 60, 165, 60 }, { 50, 60, 50 } },
	[CONVERT_KIND_BENCH] = { "benchmark body", { 60, 120, 200 }, { 40, 60, 55 } },
};

static void frame_color(const char *name, int kind, unsigned rgb[3])
{
	uint64_t h = mix64(str_hash(name));

	if (kind < 0 || kind > CONVERT_KIND_BENCH)
		kind = CONVERT_KIND_KERNEL;
	for (int i = 0; i < 3; i++)
		rgb[i] = kinds[kind].base[i] + (unsigned)((h >> (8 * i)) % (kinds[kind].span[i] + 1));
}

/* Truncate name to what fits in w px: the whole name, "abc..", or nothing. */
static void put_label(FILE *out, const char *name, double w)
{
	size_t fit = (size_t)(w / FG_CHAR_W), len = strlen(name);
	char buf[512];

	if (fit < 3)
		return;
	if (len <= fit) {
		xml_escape(out, name);
		return;
	}
	fit -= 2;
	if (fit >= sizeof(buf))
		fit = sizeof(buf) - 1;
	/* cut at a character boundary */
	while (fit && ((unsigned char)name[fit] & 0xc0) == 0x80)
		fit--;
	memcpy(buf, name, fit);
	buf[fit] = 0;
	xml_escape(out, buf);
	fputs("..", out);
}

static int svg_pre(const struct stack_tree *tr, uint32_t n, void *vctx)
{
	struct svg_ctx *c = vctx;
	const struct stack_node *nd = &tr->nodes[n];
	double w = nd->total * c->scale, x, y;
	unsigned rgb[3];

	/* Children start at their parent's left edge, one after the other. */
	if (n == 0) {
		c->x[0] = FG_XPAD;
	} else {
		x = c->x[nd->parent];
		c->x[n] = x;
		c->x[nd->parent] = x + w;	/* next sibling's left edge */
	}
	x = c->x[n];
	if (w < FG_MIN_W) {
		c->elided++;
		return 0;
	}
	y = c->height - FG_BOTTOM - (nd->depth + 1) * FG_FRAME_H;
	if (n == 0)
		rgb[0] = 200, rgb[1] = 200, rgb[2] = 200;
	else
		frame_color(nd->name, nd->kind, rgb);
	fputs("<g class=\"f\"><title>", c->out);
	xml_escape(c->out, nd->name);
	fprintf(c->out, " (%" PRIu64 " sample%s, %.2f%%)</title><rect x=\"%.1f\" y=\"%.1f\" "
		"width=\"%.1f\" height=\"%d\" fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/>"
		"<text x=\"%.1f\" y=\"%.1f\">",
		nd->total, nd->total == 1 ? "" : "s", 100.0 * nd->total / c->total,
		x, y, w, FG_FRAME_H - 1, rgb[0], rgb[1], rgb[2], x + 3, y + FG_FRAME_H - 4.5);
	put_label(c->out, nd->name, w - 6);
	fputs("</text></g>\n", c->out);
	return ferror(c->out) ? -1 : 0;
}

/*
 * The script. Frames are the <g class="f"> elements; each one's rect keeps
 * its original x/width in ox/ow (read once), its depth comes from y.
 */
static const char svg_script[] =
"<script type=\"text/ecmascript\"><![CDATA[\n"
"'use strict';\n"
"var svg = document.documentElement, frames = [], details, matchedText, unzoomBtn;\n"
"var XPAD = " "%d" ", WIDTH = %u, CHAR_W = %.2f, FRAME_H = %d;\n"
"var searching = null, zoomed = null;\n"
"function fname(g) {\n"
"  var t = g.getElementsByTagName('title')[0].textContent;\n"
"  return t.replace(/ \\([0-9]+ samples?, [0-9.]+%%\\)$/, '');\n"
"}\n"
"function label(name, w) {\n"
"  var fit = Math.floor((w - 6) / CHAR_W);\n"
"  if (fit < 3) return '';\n"
"  if (name.length <= fit) return name;\n"
"  return name.substring(0, fit - 2) + '..';\n"
"}\n"
"function init() {\n"
"  details = document.getElementById('details');\n"
"  matchedText = document.getElementById('matched');\n"
"  unzoomBtn = document.getElementById('unzoom');\n"
"  var gs = document.getElementsByClassName('f');\n"
"  for (var i = 0; i < gs.length; i++) {\n"
"    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
"    var f = { g: g, r: r, t: g.getElementsByTagName('text')[0], name: fname(g),\n"
"              x: +r.getAttribute('x'), w: +r.getAttribute('width'),\n"
"              y: +r.getAttribute('y'), fill: r.getAttribute('fill') };\n"
"    frames.push(f);\n"
"    g.addEventListener('click', (function (f) { return function () { zoom(f); }; })(f));\n"
"    g.addEventListener('mouseover', (function (f) { return function () {\n"
"      details.textContent = 'Function: ' + f.g.getElementsByTagName('title')[0].textContent;\n"
"    }; })(f));\n"
"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
"  }\n"
"  unzoomBtn.addEventListener('click', unzoom);\n"
"  document.getElementById('search').addEventListener('click', function () {\n"
"    if (searching) clearSearch(); else askSearch();\n"
"  });\n"
"  window.addEventListener('keydown', function (e) {\n"
"    if ((e.ctrlKey && e.key === 'f') || e.key === '/') { e.preventDefault(); askSearch(); }\n"
"    else if (e.key === 'Escape') { clearSearch(); unzoom(); }\n"
"  });\n"
"}\n"
"function place(f, x, w) {\n"
"  f.r.setAttribute('x', x.toFixed(1));\n"
"  f.r.setAttribute('width', w.toFixed(1));\n"
"  f.t.setAttribute('x', (x + 3).toFixed(1));\n"
"  f.t.textContent = label(f.name, w);\n"
"}\n"
"function zoom(z) {\n"
"  var scale = (WIDTH - 2 * XPAD) / z.w;\n"
"  zoomed = z;\n"
"  unzoomBtn.style.opacity = '1';\n"
"  frames.forEach(function (f) {\n"
"    var inside = f.x >= z.x - 0.05 && f.x + f.w <= z.x + z.w + 0.05;\n"
"    var below = f.y > z.y && f.x <= z.x + 0.05 && f.x + f.w >= z.x + z.w - 0.05;\n"
"    f.g.style.display = inside || below ? '' : 'none';\n"
"    f.g.style.opacity = below ? '0.5' : '';\n"
"    if (below) place(f, XPAD, WIDTH - 2 * XPAD);\n"
"    else if (inside) place(f, XPAD + (f.x - z.x) * scale, f.w * scale);\n"
"  });\n"
"  if (searching) search(searching);\n"
"}\n"
"function unzoom() {\n"
"  zoomed = null;\n"
"  unzoomBtn.style.opacity = '0';\n"
"  frames.forEach(function (f) {\n"
"    f.g.style.display = ''; f.g.style.opacity = '';\n"
"    place(f, f.x, f.w);\n"
"  });\n"
"  if (searching) search(searching);\n"
"}\n"
"function askSearch() {\n"
"  var term = prompt('Search for (regular expression):', searching ? searching.source : '');\n"
"  if (term === null || term === '') return;\n"
"  var re;\n"
"  try { re = new RegExp(term); }\n"
"  catch (e) { alert('Not a regular expression: ' + e.message); return; }\n"
"  search(re);\n"
"}\n"
"function search(re) {\n"
"  searching = re;\n"
"  var spans = [], root = frames.length ? frames[0] : null;\n"
"  var lo = zoomed ? zoomed.x : -1e9, hi = zoomed ? zoomed.x + zoomed.w : 1e9;\n"
"  frames.forEach(function (f) {\n"
"    if (re.test(f.name)) {\n"
"      f.r.setAttribute('fill', 'rgb(230,0,230)');\n"
"      var a = Math.max(f.x, lo), b = Math.min(f.x + f.w, hi);\n"
"      if (b > a) spans.push([a, b]);\n"
"    } else {\n"
"      f.r.setAttribute('fill', f.fill);\n"
"    }\n"
"  });\n"
"  /* a match inside another adds nothing */\n"
"  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n"
"  var sum = 0, end = -1;\n"
"  spans.forEach(function (s) {\n"
"    if (s[0] >= end - 0.05) { sum += s[1] - s[0]; end = s[1]; }\n"
"    else if (s[1] > end) { sum += s[1] - end; end = s[1]; }\n"
"  });\n"
"  var whole = zoomed ? zoomed.w : (root ? root.w : 1);\n"
"  document.getElementById('search').textContent = 'Reset Search';\n"
"  matchedText.textContent = 'Matched: ' +\n"
"    (100 * Math.min(sum, whole) / whole).toFixed(1) + '%%';\n"
"}\n"
"function clearSearch() {\n"
"  searching = null;\n"
"  frames.forEach(function (f) { f.r.setAttribute('fill', f.fill); });\n"
"  document.getElementById('search').textContent = 'Search';\n"
"  matchedText.textContent = ' ';\n"
"}\n"
"init();\n"
"]]></script>\n";

int flamegraph_write_svg(const struct stack_tree *tr, const struct flamegraph_opts *o,
			 FILE *out)
{
	unsigned width = o && o->width ? o->width : 1200;
	const char *title = o && o->title ? o->title : "Flame Graph";
	struct svg_ctx c = { .out = out };
	int rc;

	c.total = tr->nodes[0].total;
	c.scale = c.total ? (double)(width - 2 * FG_XPAD) / (double)c.total : 0;
	c.height = FG_TOP + FG_BOTTOM + (tr->max_depth + 1) * FG_FRAME_H;
	c.x = calloc(tr->n, sizeof(*c.x));
	if (!c.x)
		return -1;

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%u\" height=\"%.0f\" viewBox=\"0 0 %u %.0f\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n", width, c.height, width, c.height);
	fprintf(out, "<style type=\"text/css\">\n"
		"text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: %dpx; fill: #000; }\n"
		".f text { pointer-events: none; }\n"
		".f:hover rect { stroke: #000; stroke-width: 0.5; cursor: pointer; }\n"
		".btn { cursor: pointer; fill: #333; }\n"
		"#title { font-size: 17px; }\n"
		"</style>\n", FG_FONT);
	fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%.0f\" fill=\"#f8f8f0\"/>\n",
		width, c.height);
	fprintf(out, "<text id=\"title\" x=\"%u\" y=\"24\" text-anchor=\"middle\">", width / 2);
	xml_escape(out, title);
	fputs("</text>\n", out);
	if (o && o->subtitle) {
		fprintf(out, "<text id=\"subtitle\" x=\"%u\" y=\"42\" text-anchor=\"middle\" "
			"fill=\"#555\">", width / 2);
		xml_escape(out, o->subtitle);
		fputs("</text>\n", out);
	}
	/* the legend: what each colour means */
	fputs("<g id=\"legend\">", out);
	for (int k = 0, x = FG_XPAD; k <= CONVERT_KIND_BENCH; k++) {
		unsigned rgb[3];
		for (int i = 0; i < 3; i++)
			rgb[i] = kinds[k].base[i] + kinds[k].span[i] / 2;
		fprintf(out, "<rect x=\"%d\" y=\"52\" width=\"12\" height=\"12\" "
			"fill=\"rgb(%u,%u,%u)\"/><text x=\"%d\" y=\"62\">%s</text>", x, rgb[0], rgb[1],
			rgb[2], x + 16, kinds[k].label);
		x += 16 + (int)(strlen(kinds[k].label) * FG_CHAR_W) + 18;
	}
	fputs("</g>\n", out);
	fprintf(out, "<text id=\"unzoom\" class=\"btn\" x=\"%d\" y=\"24\" style=\"opacity:0\">"
		"Reset Zoom</text>\n", FG_XPAD);
	fprintf(out, "<text id=\"search\" class=\"btn\" x=\"%u\" y=\"24\" text-anchor=\"end\">"
		"Search</text>\n", width - FG_XPAD);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%.0f\"> </text>\n", FG_XPAD,
		c.height - 10);
	fprintf(out, "<text id=\"matched\" x=\"%u\" y=\"%.0f\" text-anchor=\"end\"> </text>\n",
		width - FG_XPAD, c.height - 10);

	fputs("<g id=\"frames\">\n", out);
	rc = c.total ? walk(tr, svg_pre, &c) : 0;
	fputs("</g>\n", out);
	if (!c.total)
		fprintf(out, "<text x=\"%u\" y=\"%.0f\" text-anchor=\"middle\">no samples</text>\n",
			width / 2, c.height / 2);
	fprintf(out, svg_script, FG_XPAD, width, FG_CHAR_W, FG_FRAME_H);
	fputs("</svg>\n", out);
	free(c.x);
	return rc || ferror(out) ? -1 : 0;
}

/* ---- the command ---------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: bareperf flamegraph [-i CAPTURE] [-o OUT.svg] [-k KERNEL] [--force]\n"
	      "                           [--event NAME] [--title TEXT] [--width PX]\n"
	      "  -i, --input FILE     the capture (default capture.bpc; - reads standard input)\n"
	      "  -o, --output FILE    the SVG (default flamegraph.svg; - for stdout)\n"
	      "  -k, --kernel PATH    the kernel.elf that ran (default: kernel.elf next to the\n"
	      "                       capture, or build/kernel.elf; its build-id must match)\n"
	      "  -f, --force          use the kernel even if its build-id differs\n"
	      "  -e, --event NAME     the event to draw (default: the first with samples)\n"
	      "      --title TEXT     the graph's title (default Flame Graph)\n"
	      "      --width PX       200 to 100000 (default 1200)\n"
	      "Open the SVG in a browser: hover for names and percentages, click to zoom,\n"
	      "Ctrl-F or the Search button to highlight functions by regular expression.\n",
	      f);
}

int cmd_flamegraph(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input",  required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "event",  required_argument, NULL, 'e' },
		{ "force",  no_argument,       NULL, 'f' },
		{ "title",  required_argument, NULL, 'T' },
		{ "width",  required_argument, NULL, 'w' },
		{ "help",   no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *in = "capture.bpc", *outp = "flamegraph.svg", *kernel = NULL;
	const char *event = NULL, *title = NULL, *ev_name = NULL;
	char kpath[PATH_MAX], err[512], subtitle[512];
	struct flamegraph_opts fo = { 0 };
	struct session *s;
	struct symtab *t = NULL;
	struct stack_tree tr;
	bool multiple, force = false;
	uint64_t id;
	FILE *out;
	int c, rc = 1;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:k:e:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': outp = optarg; break;
		case 'k': kernel = optarg; break;
		case 'e': event = optarg; break;
		case 'f': force = true; break;
		case 'T': title = optarg; break;
		case 'w': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v < 200 || v > 100000) {
				fprintf(stderr, "bareperf flamegraph: --width %s: not 200 to 100000\n",
					optarg);
				return 2;
			}
			fo.width = (unsigned)v;
			break;
		}
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "bareperf flamegraph: %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "bareperf flamegraph: unknown option '%s' (bareperf flamegraph "
				"--help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bareperf flamegraph: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "bareperf flamegraph: out of memory\n");
		return 1;
	}
	if (convert_open("flamegraph", in, kernel, force, s, &t, kpath)) {
		free(s);
		return 1;
	}
	if (convert_pick_event(s, event, &id, &ev_name, &multiple, err, sizeof(err)) ||
	    stack_tree_build(&tr, s, t, false, id, err, sizeof(err))) {
		fprintf(stderr, "bareperf flamegraph: %s\n", err);
		goto done;
	}
	if (multiple && !event)
		fprintf(stderr, "bareperf flamegraph: several events sampled; drawing %s "
			"(choose with --event)\n", ev_name);
	snprintf(subtitle, sizeof(subtitle), "%s, %" PRIu64 " samples, %s", ev_name,
		 tr.nodes[0].total, in);
	fo.title = title;
	fo.subtitle = subtitle;
	out = strcmp(outp, "-") ? fopen(outp, "w") : stdout;
	if (!out) {
		fprintf(stderr, "bareperf flamegraph: %s: %s\n", outp, strerror(errno));
	} else {
		rc = flamegraph_write_svg(&tr, &fo, out) ? 1 : 0;
		if (out != stdout ? fclose(out) : fflush(out))
			rc = 1;
		if (rc)
			fprintf(stderr, "bareperf flamegraph: %s: write failed: %s\n", outp,
				strerror(errno));
	}
	stack_tree_free(&tr);
done:
	symtab_free(t);
	session_free(s);
	free(s);
	return rc;
}
