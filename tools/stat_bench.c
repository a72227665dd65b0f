/*
 * tools/stat_bench.c — the BENCH records of a capture (apps/bench.h): one
 * table per benchmark table (memlat, membw, branch, insn, priv), and the
 * memory-latency sweep as an SVG line chart (`bareperf stat --plot`).
 *
 * A record's values are x1000 per unit of work (work_unit), aggregated
 * over n_reps repetitions: from the minima, medians, 20%-trimmed means and
 * maxima (perf_ring.h, struct bp_record_bench). They are printed as they
 * are, three decimals, in record order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tools/convert.h"
#include "tools/stat_bench.h"

#define NCOLS		10
#define CELL		48

static const char *work_word(unsigned w)
{
	switch (w) {
	case BP_BENCH_WORK_COPY:	return "copy of the body";
	case BP_BENCH_WORK_INSN:	return "instruction";
	case BP_BENCH_WORK_LOAD:	return "load";
	case BP_BENCH_WORK_LINE:	return "64-byte line";
	case BP_BENCH_WORK_BRANCH:	return "branch";
	case BP_BENCH_WORK_ROUND_TRIP:	return "round trip";
	case BP_BENCH_WORK_OP:		return "operation";
	default:			return "unit of work";
	}
}

/* x1000 fixed point -> "12.345", "-0.250" */
static const char *fmt_x1000(int64_t v, char *buf, size_t n)
{
	uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	snprintf(buf, n, "%s%" PRIu64 ".%03" PRIu64, v < 0 ? "-" : "", a / 1000, a % 1000);
	return buf;
}

/* 4096 -> "4 KiB", 2097152 -> "2 MiB" (whole units only; else bytes) */
static const char *fmt_bytes(uint64_t b, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (u < 4 && b >= 1024 && !(b % 1024))
		b /= 1024, u++;
	snprintf(buf, n, "%" PRIu64 " %s", b, unit[u]);
	return buf;
}

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

static const char *fmt_param(const struct bp_record_bench *b, char *buf, size_t n)
{
	switch (b->param_unit) {
	case BP_BENCH_PARAM_NONE:	snprintf(buf, n, "-"); break;
	case BP_BENCH_PARAM_BYTES:	fmt_bytes(b->param, buf, n); break;
	case BP_BENCH_PARAM_CPU:	snprintf(buf, n, "cpu %" PRIu64, b->param); break;
	default:			snprintf(buf, n, "%" PRIu64, b->param); break;
	}
	return buf;
}

static void fmt_notes(const struct bp_record_bench *b, char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = 0;
#define NOTE(...) do {								\
		if (len < n)							\
			len += (size_t)snprintf(buf + len, n - len, "%s", len ? ", " : ""); \
		if (len < n)							\
			len += (size_t)snprintf(buf + len, n - len, __VA_ARGS__); \
	} while (0)
	if (b->flags & BP_BENCH_F_EXACT)
		NOTE("exact");
	if (b->flags & BP_BENCH_F_TSC)
		NOTE("TSC");
	if (b->flags & BP_BENCH_F_ICOUNT)
		NOTE("icount");
	if (b->flags & BP_BENCH_F_NO_PMU)
		NOTE("no-PMU");
	if (b->flags & BP_BENCH_F_LOOPED)
		NOTE("looped");
	if ((b->flags & BP_BENCH_F_DISTURBED) || b->disturbed)
		NOTE("disturbed %" PRIu32, b->disturbed);
#undef NOTE
}

static bool multi_cpu(const struct session *s)
{
	for (size_t i = 1; i < s->nbenches; i++)
		if (s->benches[i].cpu != s->benches[0].cpu)
			return true;
	return false;
}

/* "TSC ticks per load", "cycles per instruction", ... for one table. */
static void table_unit(const struct session *s, const char *table, char *buf, size_t n)
{
	const struct bp_record_bench *first = NULL;
	bool same_event = true, same_work = true, all_tsc = true, all_icount = true, no_pmu = false;

	for (size_t i = 0; i < s->nbenches; i++) {
		const struct bp_record_bench *b = &s->benches[i];
		if (strcmp(b->table, table))
			continue;
		if (!first)
			first = b;
		same_event &= !strcmp(b->event, first->event);
		same_work &= b->work_unit == first->work_unit;
		all_tsc &= !!(b->flags & BP_BENCH_F_TSC);
		all_icount &= !!(b->flags & BP_BENCH_F_ICOUNT);
		no_pmu |= !!(b->flags & BP_BENCH_F_NO_PMU);
	}
	if (!first) {
		buf[0] = 0;
		return;
	}
	char ev[64];
	if (all_tsc || !same_event)
		snprintf(ev, sizeof(ev), "%s", all_tsc ? "TSC ticks" : "counts of each row's event");
	else
		snprintf(ev, sizeof(ev), "%s counts", first->event);
	snprintf(buf, n, "%s per %s%s%s", ev,
		 same_work ? work_word(first->work_unit) : "unit of work (see the row)",
		 all_tsc && all_icount ? " (QEMU -icount: a TSC tick is a retired instruction)" : "",
		 no_pmu && !all_tsc ? "; no PMU: TSC ticks, cycles are not real" : "");
}

static void print_table(FILE *f, const struct session *s, const char *table, bool cpu_col)
{
	static const char *const head[NCOLS] = { "cpu", "name", "param", "event", "min", "median",
						 "t-mean", "max", "reps", "notes" };
	static const bool right[NCOLS] = { true, false, false, false, true, true, true, true,
					   true, false };
	size_t nrows = 0, w[NCOLS];
	bool any_param = false;
	char unit[200];
	char (*cell)[NCOLS][CELL];

	for (size_t i = 0; i < s->nbenches; i++)
		if (!strcmp(s->benches[i].table, table)) {
			nrows++;
			any_param |= s->benches[i].param_unit != BP_BENCH_PARAM_NONE;
		}
	if (!nrows || !(cell = calloc(nrows, sizeof(*cell))))
		return;
	for (int c = 0; c < NCOLS; c++)
		w[c] = strlen(head[c]);
	for (size_t i = 0, r = 0; i < s->nbenches; i++) {
		const struct bp_record_bench *b = &s->benches[i];
		if (strcmp(b->table, table))
			continue;
		snprintf(cell[r][0], CELL, "%" PRIu32, b->cpu);
		snprintf(cell[r][1], CELL, "%s", b->name);
		fmt_param(b, cell[r][2], CELL);
		snprintf(cell[r][3], CELL, "%s", b->event);
		fmt_x1000(b->min, cell[r][4], CELL);
		fmt_x1000(b->median, cell[r][5], CELL);
		fmt_x1000(b->trimmed_mean, cell[r][6], CELL);
		fmt_x1000(b->max, cell[r][7], CELL);
		snprintf(cell[r][8], CELL, "%" PRIu32, b->n_reps);
		fmt_notes(b, cell[r][9], CELL);
		for (int c = 0; c < NCOLS; c++)
			if (strlen(cell[r][c]) > w[c])
				w[c] = strlen(cell[r][c]);
		r++;
	}
	table_unit(s, table, unit, sizeof(unit));
	fprintf(f, "\n %s: %s\n\n", table, unit);
	for (size_t r = 0; r <= nrows; r++) {
		char line[NCOLS * (CELL + 2) + 8];
		size_t len = 0;
		for (int c = 0; c < NCOLS; c++) {
			const char *t = r ? cell[r - 1][c] : head[c];
			if ((c == 0 && !cpu_col) || (c == 2 && !any_param))
				continue;
			len += (size_t)snprintf(line + len, sizeof(line) - len, right[c] ? "  %*s" : "  %-*s",
						(int)w[c], t);
		}
		while (len > 0 && line[len - 1] == ' ')
			line[--len] = 0;
		fprintf(f, "%s\n", line);
	}
	free(cell);
}

int stat_bench_print(FILE *f, const struct session *s)
{
	bool cpu_col = multi_cpu(s);
	int n = 0;

	for (size_t i = 0; i < s->nbenches; i++) {
		bool seen = false;
		for (size_t k = 0; k < i && !seen; k++)
			seen = !strcmp(s->benches[k].table, s->benches[i].table);
		if (seen)
			continue;
		print_table(f, s, s->benches[i].table, cpu_col);
		n++;
	}
	if (n)
		fprintf(f, "\n  (per unit of work, from the repetitions' minima, medians, 20%%-trimmed\n"
			"  means and maxima; exact: every repetition counted the same)\n");
	return n;
}

/* ---- the memlat plot ------------------------------------------------------ */

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

int stat_bench_plot(const char *path, const struct session *s, char *err, size_t errlen)
{
	static const char *const color[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
					     "#8c564b", "#e377c2", "#17becf" };
	struct series S[MAX_SERIES];
	size_t ns = 0;
	bool cpus = multi_cpu(s), all_tsc = true, all_icount = true, same_event = true;
	uint64_t pmin = UINT64_MAX, pmax = 0;
	double ymin = HUGE_VAL, ymax = 0;
	size_t nonpos = 0;
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
		if (b->median > 0) {
			ymin = fmin(ymin, b->median / 1000.0);
			ymax = fmax(ymax, b->median / 1000.0);
		} else {
			nonpos++;		/* below the noise: no place on a log axis */
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
	char title[200], mach[80], lab[80], ylab[160];
	machine(s, mach, sizeof(mach));
	snprintf(title, sizeof(title), "memlat: pointer-chase latency by working set - %s%s", mach,
		 all_icount ? " (QEMU -icount)" : "");
	if (all_tsc || !same_event)
		snprintf(ylab, sizeof(ylab), "%s per load (median, log10 scale)",
			 all_tsc ? "TSC ticks" : "event counts");
	else
		snprintf(ylab, sizeof(ylab), "%s counts per load (median, log10 scale)", S[0].event);
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
		char label[96], v[32], sz[32];
		if (cpus)
			snprintf(label, sizeof(label), "%s (%s, cpu %" PRIu32 ")", S[k].name, S[k].event,
				 S[k].cpu);
		else
			snprintf(label, sizeof(label), "%s (%s)", S[k].name, S[k].event);
		fprintf(f, "<g class=\"series\">\n<title>");
		xml_escape(f, label);
		fprintf(f, "</title>\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"",
			c);
		for (size_t i = 0, n = 0; i < S[k].n; i++) {
			const struct bp_record_bench *b = &s->benches[S[k].idx[i]];
			if (b->median > 0)
				fprintf(f, "%s%.1f,%.1f", n++ ? " " : "", X(b->param),
					Y(b->median / 1000.0));
		}
		fprintf(f, "\"/>\n");
		for (size_t i = 0; i < S[k].n; i++) {
			const struct bp_record_bench *b = &s->benches[S[k].idx[i]];
			if (b->median <= 0)
				continue;
			fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>%s: %s</title>"
				"</circle>\n", X(b->param), Y(b->median / 1000.0), c,
				fmt_bytes(b->param, sz, sizeof(sz)), fmt_x1000(b->median, v, sizeof(v)));
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
			"(below the noise floor) not drawn</text>\n", PL, PB + 60, nonpos,
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
