/*
 * tools/util/flamegraph.c — the flame graph SVG (tools/util/flamegraph.h):
 * the root at the bottom, callers below callees (upside down when
 * inverted: an icicle graph), children in name order, width proportional
 * to samples. The inline script gives tooltips (name,
 * samples, percentage; also on the details line), click to zoom, and a
 * regex search that highlights the matching frames and sums their share
 * without double counting.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/escape.h"
#include "tools/util/flamegraph.h"

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
	double min_w;			/* px: narrower frames are left out */
	double *x;			/* per node: left edge */
	uint64_t total;
	size_t elided;
	bool inverted;
	const char *countname;		/* NULL: "sample(s)" */
	int palette;			/* index in palettes[], -1: by kind */
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

/*
 * Or one palette for every frame (--colors, flamegraph.pl's names for
 * them), shaded by name the same way.
 */
static const struct {
	const char *name;
	unsigned base[3], span[3];
} palettes[] = {
	{ "hot", { 205, 50, 0 }, { 50, 180, 50 } },
	{ "mem", { 0, 175, 40 }, { 30, 65, 170 } },
	{ "io", { 80, 90, 185 }, { 60, 60, 60 } },
	{ "red", { 195, 40, 40 }, { 60, 70, 70 } },
	{ "green", { 40, 175, 40 }, { 70, 70, 70 } },
	{ "blue", { 60, 80, 195 }, { 70, 70, 60 } },
	{ "aqua", { 40, 165, 165 }, { 60, 70, 70 } },
	{ "yellow", { 175, 175, 40 }, { 70, 70, 40 } },
	{ "purple", { 160, 60, 180 }, { 70, 60, 70 } },
	{ "orange", { 200, 90, 0 }, { 55, 70, 40 } },
};

const char flamegraph_palettes[] = "hot mem io red green blue aqua yellow purple orange";

static int palette_index(const char *name)
{
	for (size_t i = 0; name && i < sizeof(palettes) / sizeof(palettes[0]); i++)
		if (!strcmp(palettes[i].name, name))
			return (int)i;
	return -1;
}

bool flamegraph_palette(const char *name)
{
	return palette_index(name) >= 0;
}

static void frame_color(const char *name, int kind, int palette, unsigned rgb[3])
{
	uint64_t h = stack_name_hash(name);
	const unsigned *base, *span;

	if (kind < 0 || kind > CONVERT_KIND_BENCH)
		kind = CONVERT_KIND_KERNEL;
	base = palette >= 0 ? palettes[palette].base : kinds[kind].base;
	span = palette >= 0 ? palettes[palette].span : kinds[kind].span;
	for (int i = 0; i < 3; i++)
		rgb[i] = base[i] + (unsigned)((h >> (8 * i)) % (span[i] + 1));
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
	char num[32];

	/* Children start at their parent's left edge, one after the other. */
	if (n == 0) {
		c->x[0] = FG_XPAD;
	} else {
		x = c->x[nd->parent];
		c->x[n] = x;
		c->x[nd->parent] = x + w;	/* next sibling's left edge */
	}
	x = c->x[n];
	if (w < c->min_w) {
		c->elided++;
		return 0;
	}
	/* the root at the bottom, callees above; inverted, the root at the top */
	if (c->inverted)
		y = FG_TOP + nd->depth * FG_FRAME_H;
	else
		y = c->height - FG_BOTTOM - (nd->depth + 1) * FG_FRAME_H;
	if (n == 0)
		rgb[0] = 200, rgb[1] = 200, rgb[2] = 200;
	else
		frame_color(nd->name, nd->kind, c->palette, rgb);
	fputs("<g class=\"f\"><title>", c->out);
	xml_escape(c->out, nd->name);
	fprintf(c->out, " (%s ", stack_count_text(tr, nd->total, num, sizeof(num)));
	if (c->countname)
		xml_escape(c->out, c->countname);
	else
		fputs(nd->total == tr->unit ? "sample" : "samples", c->out);
	fprintf(c->out, ", %.2f%%)</title><rect x=\"%.1f\" y=\"%.1f\" "
		"width=\"%.1f\" height=\"%d\" fill=\"rgb(%u,%u,%u)\" rx=\"2\" ry=\"2\"/>"
		"<text x=\"%.1f\" y=\"%.1f\">", 100.0 * nd->total / c->total,
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
"var XPAD = " "%d" ", WIDTH = %u, CHAR_W = %.2f, FRAME_H = %d, INVERTED = %d;\n"
"var searching = null, zoomed = null;\n"
"function fname(g) {\n"
"  var t = g.getElementsByTagName('title')[0].textContent;\n"
"  return t.replace(/ \\([0-9]+ [^(),]*, [0-9.]+%%\\)$/, '');\n"
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
"    /* z's callers: below it, or above it in an icicle graph */\n"
"    var below = (INVERTED ? f.y < z.y : f.y > z.y) &&\n"
"                f.x <= z.x + 0.05 && f.x + f.w >= z.x + z.w - 0.05;\n"
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
	c.min_w = !o || !o->minwidth ? FG_MIN_W :
		  o->minwidth_pct ? o->minwidth / 100 * (width - 2 * FG_XPAD) : o->minwidth;
	c.inverted = o && o->inverted;
	c.countname = o ? o->countname : NULL;
	c.palette = palette_index(o ? o->colors : NULL);
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
	/* the legend: what each colour means (one palette: nothing to tell) */
	fputs("<g id=\"legend\">", out);
	for (int k = 0, x = FG_XPAD; c.palette < 0 && k <= CONVERT_KIND_BENCH; k++) {
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
	rc = c.total ? stack_tree_walk(tr, svg_pre, &c) : 0;
	fputs("</g>\n", out);
	if (!c.total)
		fprintf(out, "<text x=\"%u\" y=\"%.0f\" text-anchor=\"middle\">no samples</text>\n",
			width / 2, c.height / 2);
	fprintf(out, svg_script, FG_XPAD, width, FG_CHAR_W, FG_FRAME_H, c.inverted);
	fputs("</svg>\n", out);
	free(c.x);
	return rc || ferror(out) ? -1 : 0;
}
