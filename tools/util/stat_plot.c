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

int stat_bench_plot(const char *path, const struct session *s, int agg, char *err,
		    size_t errlen)
{
	static const char *const color[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
					     "#8c564b", "#e377c2", "#17becf" };
	struct series S[MAX_SERIES];
	size_t ns = 0;
	bool cpus = stat_bench_multi_cpu(s), all_tsc = true, all_icount = true, same_event = true;
	uint64_t pmin = UINT64_MAX, pmax = 0;
	double ymin = HUGE_VAL, ymax = 0;
	size_t nonpos = 0;
	unsigned aggs = 0;
	int rc = -1;
	FILE *f = NULL;

	memset(S, 0, sizeof(S));
	for (size_t i = 0; i < s->nbenches; i++) {
		const struct bp_record_bench *b = &s->benches[i];
		size_t k;
		if (!plottable(b))
			continue;
		for (k = 0; k < ns; k++)
			if (!strcmp(S[k].name, b->name) && !strcmp(S[k].event, b->event) &&
			    (!cpus || S[k].cpu == b->cpu))
				break;
		if (k == ns) {
			if (ns == MAX_SERIES)
				continue;
			S[ns++] = (struct series){ b->name, b->event, b->cpu, NULL, 0 };
		}
		size_t *q = realloc(S[k].idx, (S[k].n + 1) * sizeof(*q));
		if (!q) {
			snprintf(err, errlen, "%s: out of memory", path);
			goto out;
		}
		S[k].idx = q;
		S[k].idx[S[k].n++] = i;
		pmin = b->param < pmin ? b->param : pmin;
		pmax = b->param > pmax ? b->param : pmax;
		struct stat_bench_value v;
		stat_bench_judge(b, agg, &v);
		aggs |= 1u << v.agg;
		/* a point below its noise floor is drawn at the floor, hollow */
		double y = (v.noise ? (double)v.floor : (double)v.value) / 1000.0;
		if (y > 0) {
			ymin = fmin(ymin, y);
			ymax = fmax(ymax, y);
		} else {
			nonpos++;		/* no place on a log axis */
		}
		all_tsc &= !!(b->flags & BP_BENCH_F_TSC);
		all_icount &= !!(b->flags & BP_BENCH_F_ICOUNT);
		same_event &= !strcmp(b->event, S[0].event);
	}
	if (!ns)
		return 0;
	sort_s = s;
	for (size_t k = 0; k < ns; k++)
		qsort(S[k].idx, S[k].n, sizeof(size_t), cmp_param);

	/* x: log2 of the working set, whole powers of two at the ends */
	int x0 = (int)floor(log2((double)pmin)), x1 = (int)ceil(log2((double)pmax));
	if (x1 <= x0)
		x0--, x1++;
	int xstep = (x1 - x0 + 11) / 12;
	/*
	 * y: log10, whole decades at the ends, so an L1 hit of a few ticks
	 * and a DRAM miss of hundreds both read: the knees between cache
	 * levels are steps of the same height whatever the latency.
	 */
	if (ymax <= 0)
		ymin = ymax = 1;
	int y0 = (int)floor(log10(ymin)), y1 = (int)ceil(log10(ymax));
	if (y1 <= y0)
		y1 = y0 + 1;
#define X(p) (PL + (PR - PL) * (log2((double)(p)) - x0) / (x1 - x0))
#define Y(v) (PB - (PB - PT) * (log10(v) - y0) / (y1 - y0))

	if (!(f = fopen(path, "w"))) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	char title[200], mach[80], lab[80], ylab[160], aggname[16];
	snprintf(aggname, sizeof(aggname), "%s",
		 aggs && !(aggs & (aggs - 1)) ? bench_agg_name((unsigned)__builtin_ctz(aggs)) : "value");
	machine(s, mach, sizeof(mach));
	snprintf(title, sizeof(title), "memlat: pointer-chase latency by working set - %s%s", mach,
		 all_icount ? " (QEMU -icount)" : "");
	if (all_tsc || !same_event)
		snprintf(ylab, sizeof(ylab), "%s per load (%s, log10 scale)",
			 all_tsc ? "TSC ticks" : "event counts", aggname);
	else
		snprintf(ylab, sizeof(ylab), "%s counts per load (%s, log10 scale)", S[0].event,
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
	for (int e = x0; e <= x1; e += xstep)
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
			X(pow(2, e)), PT, X(pow(2, e)), PB);
	for (int e = y0; e <= y1; e++)
		for (int d = 1; d < 10 && (e < y1 || d == 1); d++)
			fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"%s/>\n", PL,
				Y(d * pow(10, e)), PR, Y(d * pow(10, e)), d == 1 ? " stroke=\"#bbb\"" : "");
	fprintf(f, "</g>\n<g stroke=\"black\" stroke-width=\"1\">\n"
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n"
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>\n</g>\n",
		PL, PB, PR, PB, PL, PT, PL, PB);
	fprintf(f, "<g class=\"xticks\" text-anchor=\"middle\">\n");
	for (int e = x0; e <= x1; e += xstep)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\">%s</text>\n", X(pow(2, e)), PB + 18,
			fmt_bytes_short(1ull << (e < 0 ? 0 : e > 62 ? 62 : e), lab, sizeof(lab)));
	fprintf(f, "</g>\n<g class=\"yticks\" text-anchor=\"end\">\n");
	for (int e = y0; e <= y1; e++)
		for (int d = 1; d < 10 && (e < y1 || d == 1); d += d == 2 ? 3 : d == 5 ? 5 : 1)
			fprintf(f, "<text x=\"%d\" y=\"%.1f\">%g</text>\n", PL - 6,
				Y(d * pow(10, e)) + 4, d * pow(10, e));
	fprintf(f, "</g>\n<text class=\"xlabel\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">"
		"working set (bytes, log2 scale)</text>\n", (PL + PR) / 2, PB + 42);
	fprintf(f, "<text class=\"ylabel\" x=\"18\" y=\"%d\" text-anchor=\"middle\" "
		"transform=\"rotate(-90 18 %d)\">", (PT + PB) / 2, (PT + PB) / 2);
	xml_escape(f, ylab);
	fprintf(f, "</text>\n");
	/* the lines, their points (with the value as a tooltip), the legend */
	for (size_t k = 0; k < ns; k++) {
		const char *c = color[k % (sizeof(color) / sizeof(color[0]))];
		char label[96], vb[32], sz[32];
		if (cpus)
			snprintf(label, sizeof(label), "%s (%s, cpu %" PRIu32 ")", S[k].name, S[k].event,
				 S[k].cpu);
		else
			snprintf(label, sizeof(label), "%s (%s)", S[k].name, S[k].event);
		fprintf(f, "<g class=\"series\">\n<title>");
		xml_escape(f, label);
		fprintf(f, "</title>\n");
		/* The line joins results only: it breaks at a point below its
		 * noise floor, which is no result to join. */
		bool open = false;
		for (size_t i = 0; i < S[k].n; i++) {
			const struct bp_record_bench *b = &s->benches[S[k].idx[i]];
			struct stat_bench_value v;
			stat_bench_judge(b, agg, &v);
			if (v.noise || v.value <= 0) {
				if (open)
					fprintf(f, "\"/>\n");
				open = false;
				continue;
			}
			if (!open)
				fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
					"points=\"", c);
			fprintf(f, "%s%.1f,%.1f", open ? " " : "", X(b->param), Y(v.value / 1000.0));
			open = true;
		}
		if (open)
			fprintf(f, "\"/>\n");
		for (size_t i = 0; i < S[k].n; i++) {
			const struct bp_record_bench *b = &s->benches[S[k].idx[i]];
			struct stat_bench_value v;
			stat_bench_judge(b, agg, &v);
			if (v.noise && v.floor > 0)
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"white\" "
					"stroke=\"%s\"><title>%s: below the noise floor %s</title>"
					"</circle>\n", X(b->param), Y(v.floor / 1000.0), c,
					stat_bench_fmt_bytes(b->param, sz, sizeof(sz)),
					stat_bench_fmt_ux1000(v.floor, vb, sizeof(vb)));
			else if (!v.noise && v.value > 0)
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">"
					"<title>%s: %s</title></circle>\n", X(b->param),
					Y(v.value / 1000.0), c, stat_bench_fmt_bytes(b->param, sz, sizeof(sz)),
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
	if (nonpos)
		fprintf(f, "<text class=\"note\" x=\"%d\" y=\"%d\">%zu point%s at or below zero "
			"(no place on a log axis) not drawn</text>\n", PL, PB + 60, nonpos,
			nonpos == 1 ? "" : "s");
	fprintf(f, "</svg>\n");
#undef X
#undef Y
	if (ferror(f)) {
		snprintf(err, errlen, "cannot write %s", path);
		goto out;
	}
	rc = (int)ns;
out:
	if (f && fclose(f) && rc >= 0) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		rc = -1;
	}
	for (size_t k = 0; k < ns; k++)
		free(S[k].idx);
	return rc;
}
