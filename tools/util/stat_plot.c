/*
 * tools/util/stat_plot.c — the memory-latency sweep of a capture's BENCH
 * records as an SVG line chart (`bareperf stat --plot`,
 * tools/util/stat_bench.h): x = working set (log2), y = the value per
 * load, one line per (name, event).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "apps/bench_stats.h"
#include "tools/util/escape.h"
#include "tools/util/stat_bench.h"

/* The x axis labels: 4096 -> "4K", 1 << 30 -> "1G" */
static const char *fmt_bytes_short(uint64_t b, char *buf, size_t n)
{
	static const char *const unit[] = { "", "K", "M", "G", "T" };
	int u = 0;

	while (u < 4 && b >= 1024 && !(b % 1024))
		b /= 1024, u++;
	snprintf(buf, n, "%" PRIu64 "%s", b, unit[u]);
	return buf;
}

#define PLOT_W		760
#define PLOT_H		460
#define PL		80		/* plot area: left, right, top, bottom edges */
#define PR		(PLOT_W - 210)
#define PT		56
#define PB		(PLOT_H - 64)
#define MAX_SERIES	16

struct series {
	const char *name, *event;
	uint32_t cpu;
	size_t *idx;			/* into s->benches, sorted by param */
	size_t n;
};

static const struct session *sort_s;

static int cmp_param(const void *a, const void *b)
{
	uint64_t x = sort_s->benches[*(const size_t *)a].param;
	uint64_t y = sort_s->benches[*(const size_t *)b].param;

	return x < y ? -1 : x > y;
}

static bool plottable(const struct bp_record_bench *b)
{
	return !strcmp(b->table, "memlat") && b->param_unit == BP_BENCH_PARAM_BYTES && b->param;
}

/* The machine, for the title: CPU_INFO's brand string, else vendor/family/model. */
static void machine(const struct session *s, char *buf, size_t n)
{
	buf[0] = 0;
	for (uint32_t c = 0; c < SESSION_MAX_CPUS; c++) {
		if (!s->have_cpu_info[c])
			continue;
		const struct bp_record_cpu_info *ci = &s->cpu_info[c];
		char brand[sizeof(ci->brand) + 1], *p = brand;
		memcpy(brand, ci->brand, sizeof(ci->brand));
		brand[sizeof(ci->brand)] = 0;
		while (*p == ' ')
			p++;
		for (size_t l = strlen(p); l && p[l - 1] == ' '; l--)
			p[l - 1] = 0;
		if (*p)
			snprintf(buf, n, "%s", p);
		else
			snprintf(buf, n, "%s family %u model %u",
				 ci->vendor == BP_CPU_VENDOR_INTEL ? "Intel" :
				 ci->vendor == BP_CPU_VENDOR_AMD ? "AMD" : "unknown vendor",
				 ci->family, ci->model);
		break;
	}
	if (!buf[0])
		snprintf(buf, n, "unknown machine");
}

static const char *const color[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
				     "#8c564b", "#e377c2", "#17becf" };

/* One chart: its series, what they have in common, and its axes. */
struct plot {
	const struct session *s;
	int agg;
	struct series S[MAX_SERIES];
	size_t ns;
	bool cpus, all_tsc, all_icount, same_event;
	uint64_t pmin, pmax;
	double ymin, ymax;
	size_t nonpos;			/* points at or below zero */
	unsigned aggs;			/* 1 << the aggregates the values are */
	int x0, x1, xstep, y0, y1;	/* the axes' ends: log2 bytes, log10 values */
};

static double px(const struct plot *P, double p)
{
	return PL + (PR - PL) * (log2(p) - P->x0) / (P->x1 - P->x0);
}

static double py(const struct plot *P, double v)
{
	return PB - (PB - PT) * (log10(v) - P->y0) / (P->y1 - P->y0);
}

/* Group the plottable BENCH records into series, noting the ranges. */
static int gather(struct plot *P, const char *path, char *err, size_t errlen)
{
	const struct session *s = P->s;

	for (size_t i = 0; i < s->nbenches; i++) {
		const struct bp_record_bench *b = &s->benches[i];
		struct series *S = P->S;
		size_t k;
		if (!plottable(b))
			continue;
		for (k = 0; k < P->ns; k++)
			if (!strcmp(S[k].name, b->name) && !strcmp(S[k].event, b->event) &&
			    (!P->cpus || S[k].cpu == b->cpu))
				break;
		if (k == P->ns) {
			if (P->ns == MAX_SERIES)
				continue;
			S[P->ns++] = (struct series){ b->name, b->event, b->cpu, NULL, 0 };
		}
		size_t *q = realloc(S[k].idx, (S[k].n + 1) * sizeof(*q));
		if (!q) {
			snprintf(err, errlen, "%s: out of memory", path);
			return -1;
		}
		S[k].idx = q;
		S[k].idx[S[k].n++] = i;
		P->pmin = b->param < P->pmin ? b->param : P->pmin;
		P->pmax = b->param > P->pmax ? b->param : P->pmax;
		struct stat_bench_value v;
		stat_bench_judge(b, P->agg, &v);
		P->aggs |= 1u << v.agg;
		/* a point below its noise floor is drawn at the floor, hollow */
		double y = (v.noise ? (double)v.floor : (double)v.value) / 1000.0;
		if (y > 0) {
			P->ymin = fmin(P->ymin, y);
			P->ymax = fmax(P->ymax, y);
		} else {
			P->nonpos++;		/* no place on a log axis */
		}
		P->all_tsc &= !!(b->flags & BP_BENCH_F_TSC);
		P->all_icount &= !!(b->flags & BP_BENCH_F_ICOUNT);
		P->same_event &= !strcmp(b->event, S[0].event);
	}
	return 0;
}

/* Each series in order of working set, and the axes' ends. */
static void scale(struct plot *P)
{
	sort_s = P->s;
	for (size_t k = 0; k < P->ns; k++)
		qsort(P->S[k].idx, P->S[k].n, sizeof(size_t), cmp_param);

	/* x: log2 of the working set, whole powers of two at the ends */
	P->x0 = (int)floor(log2((double)P->pmin));
	P->x1 = (int)ceil(log2((double)P->pmax));
	if (P->x1 <= P->x0)
		P->x0--, P->x1++;
	P->xstep = (P->x1 - P->x0 + 11) / 12;
	/*
	 * y: log10, whole decades at the ends, so an L1 hit of a few ticks
	 * and a DRAM miss of hundreds both read: the knees between cache
	 * levels are steps of the same height whatever the latency.
	 */
	if (P->ymax <= 0)
		P->ymin = P->ymax = 1;
	P->y0 = (int)floor(log10(P->ymin));
	P->y1 = (int)ceil(log10(P->ymax));
	if (P->y1 <= P->y0)
		P->y1 = P->y0 + 1;
}

/* The SVG's head, the title, the grid, the axes and their labels. */
static void draw_frame(FILE *f, const struct plot *P)
{
	char title[200], mach[80], lab[80], ylab[160], aggname[16];
	unsigned aggs = P->aggs;

	snprintf(aggname, sizeof(aggname), "%s",
		 aggs && !(aggs & (aggs - 1)) ? bench_agg_name((unsigned)__builtin_ctz(aggs)) : "value");
	machine(P->s, mach, sizeof(mach));
	snprintf(title, sizeof(title), "memlat: pointer-chase latency by working set - %s%s", mach,
		 P->all_icount ? " (QEMU -icount)" : "");
	if (P->all_tsc || !P->same_event)
		snprintf(ylab, sizeof(ylab), "%s per load (%s, log10 scale)",
			 P->all_tsc ? "TSC ticks" : "event counts", aggname);
	else
		snprintf(ylab, sizeof(ylab), "%s counts per load (%s, log10 scale)", P->S[0].event,
			 aggname);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" font-family=\"Verdana, sans-serif\" "
		"font-size=\"12\">\n"
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n",
		PLOT_W, PLOT_H, PLOT_W, PLOT_H, PLOT_W, PLOT_H);
	fprintf(f, "<text x=\"%d\" y=\"26\" text-anchor=\"middle\" font-size=\"15\">", PLOT_W / 2);
	xml_escape(f, title);
	fprintf(f, "</text>\n");
	/* grid and axes */
	fprintf(f, "<g stroke=\"#ddd\" stroke-width=\"1\">\n");
	for (int e = P->x0; e <= P->x1; e += P->xstep)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
			px(P, pow(2, e)), PT, px(P, pow(2, e)), PB);
	for (int e = P->y0; e <= P->y1; e++)
		for (int d = 1; d < 10 && (e < P->y1 || d == 1); d++)
			fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"%s/>\n", PL,
				py(P, d * pow(10, e)), PR, py(P, d * pow(10, e)),
				d == 1 ? " stroke=\"#bbb\"" : "");
	fprintf(f, "</g>\n<g stroke=\"black\" stroke-width=\"1\">\n"
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n</g>\n",
		PL, PB, PR, PB, PL, PT, PL, PB);
	fprintf(f, "<g class=\"xticks\" text-anchor=\"middle\">\n");
	for (int e = P->x0; e <= P->x1; e += P->xstep)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s</text>\n", px(P, pow(2, e)), PB + 18,
			fmt_bytes_short(1ull << (e < 0 ? 0 : e > 62 ? 62 : e), lab, sizeof(lab)));
	fprintf(f, "</g>\n<g class=\"yticks\" text-anchor=\"end\">\n");
	for (int e = P->y0; e <= P->y1; e++)
		for (int d = 1; d < 10 && (e < P->y1 || d == 1); d += d == 2 ? 3 : d == 5 ? 5 : 1)
			fprintf(f, "<text x=\"%d\" y=\"%.1f\">%g</text>\n", PL - 6,
				py(P, d * pow(10, e)) + 4, d * pow(10, e));
	fprintf(f, "</g>\n<text class=\"xlabel\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
		"working set (bytes, log2 scale)</text>\n", (PL + PR) / 2, PB + 42);
	fprintf(f, "<text class=\"ylabel\" x=\"18\" y=\"%d\" text-anchor=\"middle\" "
		"transform=\"rotate(-90 18 %d)\">", (PT + PB) / 2, (PT + PB) / 2);
	xml_escape(f, ylab);
	fprintf(f, "</text>\n");
}

/* Series k: its line, its points (with the value as a tooltip), its legend. */
static void draw_series(FILE *f, const struct plot *P, size_t k)
{
	const struct series *S = &P->S[k];
	const char *c = color[k % (sizeof(color) / sizeof(color[0]))];
	char label[96], vb[32], sz[32];

	if (P->cpus)
		snprintf(label, sizeof(label), "%s (%s, cpu %" PRIu32 ")", S->name, S->event, S->cpu);
	else
		snprintf(label, sizeof(label), "%s (%s)", S->name, S->event);
	fprintf(f, "<g class=\"series\">\n<title>");
	xml_escape(f, label);
	fprintf(f, "</title>\n");
	/* The line joins results only: it breaks at a point below its
	 * noise floor, which is no result to join. */
	bool open = false;
	for (size_t i = 0; i < S->n; i++) {
		const struct bp_record_bench *b = &P->s->benches[S->idx[i]];
		struct stat_bench_value v;
		stat_bench_judge(b, P->agg, &v);
		if (v.noise || v.value <= 0) {
			if (open)
				fprintf(f, "\"/>\n");
			open = false;
			continue;
		}
		if (!open)
			fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
				"points=\"", c);
		fprintf(f, "%s%.1f,%.1f", open ? " " : "", px(P, (double)b->param),
			py(P, v.value / 1000.0));
		open = true;
	}
	if (open)
		fprintf(f, "\"/>\n");
	for (size_t i = 0; i < S->n; i++) {
		const struct bp_record_bench *b = &P->s->benches[S->idx[i]];
		struct stat_bench_value v;
		stat_bench_judge(b, P->agg, &v);
		if (v.noise && v.floor > 0)
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"white\" "
				"stroke=\"%s\"><title>%s: below the noise floor %s</title>"
				"</circle>\n", px(P, (double)b->param), py(P, v.floor / 1000.0), c,
				stat_bench_fmt_bytes(b->param, sz, sizeof(sz)),
				stat_bench_fmt_ux1000(v.floor, vb, sizeof(vb)));
		else if (!v.noise && v.value > 0)
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">"
				"<title>%s: %s</title></circle>\n", px(P, (double)b->param),
				py(P, v.value / 1000.0), c, stat_bench_fmt_bytes(b->param, sz, sizeof(sz)),
				stat_bench_fmt_x1000(v.value, vb, sizeof(vb)));
	}
	fprintf(f, "</g>\n");
	int ly = PT + 10 + 20 * (int)k;
	fprintf(f, "<g class=\"legend\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		"stroke=\"%s\" stroke-width=\"2\"/><text x=\"%d\" y=\"%d\">", PR + 14, ly, PR + 38,
		ly, c, PR + 44, ly + 4);
	xml_escape(f, label);
	fprintf(f, "</text></g>\n");
}

int stat_bench_plot(const char *path, const struct session *s, int agg, char *err,
		    size_t errlen)
{
	int rc = -1;
	FILE *f = NULL;
	struct plot P = { .s = s, .agg = agg, .cpus = stat_bench_multi_cpu(s), .all_tsc = true,
			  .all_icount = true, .same_event = true, .pmin = UINT64_MAX,
			  .ymin = HUGE_VAL };
	if (gather(&P, path, err, errlen))
		goto out;
	if (!P.ns)
		return 0;
	scale(&P);
	if (!(f = fopen(path, "w"))) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	draw_frame(f, &P);
	for (size_t k = 0; k < P.ns; k++)
		draw_series(f, &P, k);
	if (P.nonpos)
		fprintf(f, "<text class=\"note\" x=\"%d\" y=\"%d\">%zu point%s at or below zero "
			"(no place on a log axis) not drawn</text>\n", PL, PB + 60, P.nonpos,
			P.nonpos == 1 ? "" : "s");
	fprintf(f, "</svg>\n");
	if (ferror(f)) {
		snprintf(err, errlen, "cannot write %s", path);
		goto out;
	}
	rc = (int)P.ns;
out:
	if (f && fclose(f) && rc >= 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		rc = -1;
	}
	for (size_t k = 0; k < P.ns; k++)
		free(P.S[k].idx);
	return rc;
}
