/*
 * tools/builtin-report.c — `bareperf report`: per event, the hottest functions
 * (or source lines) of a capture, symbolized against the kernel.elf that
 * ran, with the run's metadata and every loss above the table. The
 * aggregation and the sort keys are tools/util/hist.c, the metadata lines
 * tools/util/header.c; this file is the options and the table.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/util/cli.h"
#include "tools/commands.h"
#include "tools/util/header.h"
#include "tools/util/hist.h"
#include "tools/util/trace/trace.h"

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
	bool no_graph;			/* -g none: the columns of -g, no callers tree */
	double graph_limit;		/* -g's threshold: tree branches under it hidden */
	const char *dso;		/* the kernel image's name */
	const struct session *s;
	const struct symtab *t;		/* names the programs' ranges (their dso) */
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
	double limit = o->limit > o->graph_limit ? o->limit : o->graph_limit;

	if (depth > 64 || plen + 32 >= 1024)
		return;
	for (size_t c = r->pool[node].first_child; c && nk < 64; c = r->pool[c].next_sibling)
		if (pct_of(r->pool[c].period, total) >= limit)
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
	case COL_DSO: {
		const char *prog = symtab_dso(o->t, w->key);
		return prog ? prog : o->dso;
	}
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
			if (w->more_functions)
				snprintf(buf + l, n - l, "  (%s and %u more)", w->name ? w->name : "?",
					 w->more_functions);
			else
				snprintf(buf + l, n - l, "  (%s)", w->name ? w->name : "?");
		}
		return buf;
	case COL_COMM: {
		const char *a = report_app_name(o->s, w->pid);
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
		fprintf(f, "# -g: no call chains for this event (record with -g): Children is Self\n");
	else if (ro->callgraph && E->with_chain < E->samples)
		fprintf(f, "# -g: %" PRIu64 " of %" PRIu64 " samples have no call chain: they count as"
			   " their own function only\n", E->samples - E->with_chain, E->samples);

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
			any = pct_of(r->pool[c].period, E->period) >= o->limit &&
			      pct_of(r->pool[c].period, E->period) >= o->graph_limit;
		if (ro->callgraph && any && !o->no_graph) {
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

/* The first sample: the run's metadata has come, its symbols can load.
 * Out of line, so that the other samples' path is a test and a jump. */
static __attribute__((noinline)) int add_first(struct stream_ctx *c, const struct session *s,
					       const struct bp_sample_rec *x, const uint64_t *ips)
{
	if (session_symtab(s, c->kernel, c->force, &c->t, c->used, sizeof(c->used),
			   c->err, sizeof(c->err)))
		return -1;
	report_set_symtab(c->agg, c->t);
	return report_add(c->agg, s, x, ips);
}

static int add_sample(void *ctx, const struct session *s, const struct bp_sample_rec *x,
		      const uint64_t *ips)
{
	struct stream_ctx *c = ctx;

	if (!c->t)
		return add_first(c, s, x, ips);
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
		"                          LIBDIR's (bareperf record -h); its build-id must\n"
		"                          match)\n"
		"  -s, --sort KEYS         rows by these keys, perf's names, comma-separated:\n"
		"                          sym (default), dso, srcline, cpu, comm (the app),\n"
		"                          pid (the app run); e.g. --sort cpu,sym\n"
		"  -F, --fields LIST       the columns, in order: overhead, sample, period and\n"
		"                          sort keys; the keys among them sort the rows\n"
		"  -g, --call-graph[=SPEC]  callers of each function in any chain (those\n"
		"                          without samples of their own too, as perf's\n"
		"                          --children -g callee), and inclusive cost\n"
		"                          (Children); needs call chains (record -g). SPEC,\n"
		"                          perf's words in any order: graph (the default),\n"
		"                          none (no tree drawn), callee (each function's\n"
		"                          callers, the default), caller (as -G), function,\n"
		"                          percent, and a threshold: tree branches under it %%\n"
		"                          are hidden; flat, fractal, folded, address,\n"
		"                          srcline, branch, period, count are refused by name\n"
		"  -G, --inverted          -g in perf's caller order: each function's chains\n"
		"                          from the outermost caller down to it\n"
		"      --max-stack N       -g: the first N frames of each chain, leaf first\n"
		"      --children          with -g: the Children column (the default)\n"
		"      --no-children       with -g: self cost only, rows with self samples\n"
		"  -C, --cpu LIST          only these CPUs, e.g. 0,2-3\n"
		"      --app NAME          only the runs of this app\n"
		"  -S, --symbols LIST      only samples in these functions (comma-separated);\n"
		"                          percentages are of what is kept\n"
		"      --time START,STOP   only samples in this window, seconds.nanoseconds\n"
		"                          since the run's start as bareperf script prints\n"
		"                          them (perf's format; ,STOP and START, too)\n"
		"      --percent-limit P   hide rows under P%%\n"
		"  -n, --show-nr-samples   the Samples column (shown unless -F leaves it out)\n"
		"      --max-rows N        at most N rows per event\n"
		"      --header            the run's metadata, then the report (as perf report\n"
		"                          --header; the default unless -q)\n"
		"      --header-only       the run's metadata and losses, no tables\n"
		"      --stats             the count of each record type and the losses, no\n"
		"                          tables (perf's --stats)\n"
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

/* perf's -g words: the print type, order, key and value. */
static const char *const graph_words[] = {
	"graph", "none", "callee", "caller", "function", "percent",	/* taken */
	"flat", "fractal", "folded", "address", "srcline", "branch", "period", "count",
};
#define GRAPH_WORDS_TAKEN	6
#define NGRAPH_WORDS		(sizeof(graph_words) / sizeof(graph_words[0]))

/* The index of w (n bytes) in graph_words, or NGRAPH_WORDS. */
static size_t graph_word(const char *w, size_t n)
{
	size_t i = 0;

	while (i < NGRAPH_WORDS && (strlen(graph_words[i]) != n || strncmp(graph_words[i], w, n)))
		i++;
	return i;
}

/* Is w (n bytes) a percentage like 0.5? */
static bool is_percent(const char *w, size_t n)
{
	size_t digits = strspn(w, "0123456789"), dot = w[digits] == '.';

	return digits + dot + (dot ? strspn(w + digits + 1, "0123456789") : 0) == n && n > dot;
}

/* Is w a -g value, perf's words or numbers separated by commas? */
static bool call_graph_words(const char *w)
{
	while (*w) {
		size_t n = strcspn(w, ",");
		if (graph_word(w, n) == NGRAPH_WORDS && !is_percent(w, n))
			return false;
		w += n + (w[n] == ',');
	}
	return true;
}

/* -g's value into o and ro: 0, or -1 after a line on stderr. */
static int call_graph_spec(const char *spec, struct out *o, struct report_opts *ro)
{
	int numbers = 0;

	if (!call_graph_words(spec)) {
		fprintf(stderr, "bareperf report: -g: '%s' is not perf's graph,threshold,order,key,"
			"value (e.g. graph,0.5,callee)\n", spec);
		return -1;
	}
	for (const char *w = spec; *w;) {
		size_t n = strcspn(w, ","), i = graph_word(w, n);
		if (i == NGRAPH_WORDS && numbers++) {
			fprintf(stderr, "bareperf report: -g %s: perf's print limit (a second "
				"number) is not supported\n", spec);
			return -1;
		} else if (i == NGRAPH_WORDS) {
			o->graph_limit = strtod(w, NULL);
		} else if (i >= GRAPH_WORDS_TAKEN) {
			fprintf(stderr, "bareperf report: -g %.*s: not supported: the graph is perf's "
				"graph by function, in absolute percentages (callee or caller order)\n",
				(int)n, w);
			return -1;
		} else if (!strcmp(graph_words[i], "none")) {
			o->no_graph = true;
		} else if (!strcmp(graph_words[i], "caller") || !strcmp(graph_words[i], "callee")) {
			ro->inverted = !strcmp(graph_words[i], "caller");
		}
		w += n + (w[n] == ',');
	}
	return 0;
}

#define REPORT_DEFAULT_INPUT	"capture.bpc"

/* The command's options and the buffers they point into. */
struct report_cmd {
	const char *input, *kernel, *fields;
	bool aux, show_nr, header_only, header, sorted, stdio, force, quiet, stats;
	size_t max_rows;
	struct report_opts ro;
	struct out o;
	char used[4096], cwd[4096], stdin_tmp[4096];
};

/* The options into c: -1 to go on, else the command's exit status. */
static int parse_args(int argc, char **argv, struct report_cmd *c)
{
	enum {
		OPT_APP = 256, OPT_LIMIT, OPT_MAX_ROWS, OPT_STDIO, OPT_FORCE, OPT_AUX, OPT_CHILDREN,
		OPT_NO_CHILDREN, OPT_HEADER_ONLY, OPT_HEADER, OPT_MAX_STACK, OPT_STATS, OPT_TIME,
	};
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "sort", required_argument, NULL, 's' },
		{ "fields", required_argument, NULL, 'F' },
		{ "call-graph", optional_argument, NULL, 'g' },
		{ "inverted", no_argument, NULL, 'G' },
		{ "max-stack", required_argument, NULL, OPT_MAX_STACK },
		{ "symbols", required_argument, NULL, 'S' },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "time", required_argument, NULL, OPT_TIME },
		{ "children", no_argument, NULL, OPT_CHILDREN },
		{ "no-children", no_argument, NULL, OPT_NO_CHILDREN },
		{ "cpu", required_argument, NULL, 'C' },
		{ "app", required_argument, NULL, OPT_APP },
		{ "percent-limit", required_argument, NULL, OPT_LIMIT },
		{ "show-nr-samples", no_argument, NULL, 'n' },
		{ "max-rows", required_argument, NULL, OPT_MAX_ROWS },
		{ "header-only", no_argument, NULL, OPT_HEADER_ONLY },
		{ "header", no_argument, NULL, OPT_HEADER },
		{ "stdio", no_argument, NULL, OPT_STDIO },
		{ "force", no_argument, NULL, OPT_FORCE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "aux", no_argument, NULL, OPT_AUX },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[1024];
	int k;

	optind = 0;
	opterr = 0;
	while ((k = getopt_long(argc, argv, ":i:k:s:F:g::GS:C:nqh", lo, NULL)) != -1) {
		char *end;
		switch (k) {
		case 'i': c->input = optarg; break;
		case 'k': c->kernel = optarg; break;
		case 's':
			if (report_parse_sort(optarg, &c->ro, err, sizeof(err))) {
				fprintf(stderr, "bareperf report: --sort: %s\n", err);
				return 2;
			}
			c->sorted = true;
			break;
		case 'F': c->fields = optarg; break;
		case 'g':
			c->ro.callgraph = true;
			/* perf's -g takes its value as the next word too: -g caller */
			if (!optarg && optind < argc && call_graph_words(argv[optind]))
				optarg = argv[optind++];
			if (optarg && call_graph_spec(optarg, &c->o, &c->ro))
				return 2;
			break;
		case 'G': c->ro.callgraph = c->ro.inverted = true; break;
		case OPT_MAX_STACK:
			c->ro.max_stack = (unsigned)strtoul(optarg, &end, 10);
			if (*end || end == optarg || !c->ro.max_stack || optarg[0] == '-') {
				fprintf(stderr, "bareperf report: --max-stack: '%s' is not a number of "
					"frames from 1\n", optarg);
				return 2;
			}
			break;
		case 'S': c->ro.filter.symbols = optarg; break;
		case OPT_STATS: c->stats = true; break;
		case OPT_TIME:
			if (report_parse_time(optarg, &c->ro.filter, err, sizeof(err))) {
				fprintf(stderr, "bareperf report: --time: %s\n", err);
				return 2;
			}
			break;
		case OPT_CHILDREN: c->ro.callgraph = true, c->o.no_children = false; break;
		case OPT_NO_CHILDREN: c->o.no_children = true; break;
		case 'C':
			if (report_parse_cpus(optarg, &c->ro.filter)) {
				fprintf(stderr, "bareperf report: --cpu: '%s' is not a CPU list like 0,2-3\n",
					optarg);
				return 2;
			}
			break;
		case OPT_APP: c->ro.filter.app = optarg; break;
		case OPT_LIMIT:
			c->o.limit = strtod(optarg, &end);
			if (*end || end == optarg || c->o.limit < 0) {
				fprintf(stderr, "bareperf report: --percent-limit: '%s' is not a percentage\n",
					optarg);
				return 2;
			}
			break;
		case 'n': c->show_nr = true; break;
		case OPT_MAX_ROWS:
			c->max_rows = strtoul(optarg, &end, 10);
			if (*end || end == optarg) {
				fprintf(stderr, "bareperf report: --max-rows: '%s' is not a number\n", optarg);
				return 2;
			}
			break;
		case OPT_HEADER_ONLY: c->header_only = true; break;
		case OPT_HEADER: c->header = true; break;
		case OPT_STDIO: c->stdio = true; break;
		case OPT_FORCE: c->force = true; break;
		case 'q': c->quiet = true; break;
		case OPT_AUX: c->aux = true; break;
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
	if (c->header)
		c->quiet = false;	/* --header wins over -q, whatever the order */
	return -1;
}

/* -F's columns (and their sort keys, unless --sort gave them), -n's samples column. */
static int field_columns(struct report_cmd *c)
{
	struct report_opts fk = { 0 };
	struct out *o = &c->o;

	if (parse_fields(c->fields, o, &fk))
		return 2;
	if (!c->sorted && fk.nkeys) {
		memcpy(c->ro.keys, fk.keys, sizeof(c->ro.keys));
		c->ro.nkeys = fk.nkeys;
		c->ro.sort = REPORT_SORT_SYM;
	}
	if (c->show_nr) {
		bool have = false;
		for (size_t i = 0; i < o->ncols; i++)
			have |= o->cols[i] == COL_SAMPLES;
		if (!have && o->ncols < MAX_COLS) {
			memmove(o->cols + 1 + (o->cols[0] <= COL_OVERHEAD), o->cols +
				(o->cols[0] <= COL_OVERHEAD), (o->ncols - (o->cols[0] <= COL_OVERHEAD)) *
				sizeof(o->cols[0]));
			o->cols[o->cols[0] <= COL_OVERHEAD] = COL_SAMPLES;
			o->ncols++;
		}
	}
	return 0;
}

/* The table's columns, checked against -g: 0, or the exit status 2. */
static int columns(struct report_cmd *c)
{
	struct report_opts *ro = &c->ro;
	struct out *o = &c->o;

	if (c->fields && field_columns(c))
		return 2;
	if (ro->callgraph) {
		for (size_t i = 0; i < ro->nkeys; i++)
			if (ro->keys[i] != RK_SYM) {
				fprintf(stderr, "bareperf report: -g works with --sort sym\n");
				return 2;
			}
		if (ro->sort == REPORT_SORT_LINE) {
			fprintf(stderr, "bareperf report: -g works with --sort sym\n");
			return 2;
		}
	}
	if (o->no_children && !ro->callgraph)
		o->no_children = false;		/* without -g there is no Children column */
	if (!c->fields) {
		if (ro->callgraph && !o->no_children)
			o->cols[o->ncols++] = COL_CHILDREN;
		o->cols[o->ncols++] = COL_OVERHEAD;
		o->cols[o->ncols++] = COL_SAMPLES;
		if (!ro->nkeys)
			o->cols[o->ncols++] = ro->sort == REPORT_SORT_LINE ? COL_LINE_FUNC : COL_SYM;
		else if (ro->nkeys == 1 && ro->keys[0] == RK_SRCLINE)
			o->cols[o->ncols++] = COL_LINE_FUNC;
		else
			for (size_t i = 0; i < ro->nkeys; i++)
				o->cols[o->ncols++] = key_col(ro->keys[i]);
	}
	return 0;
}

/*
 * Open the capture and aggregate it in one streaming pass: samples are
 * aggregated as they are decoded. The kernel.elf is chosen at the first
 * sample, when the run's metadata (RUN_META's build-id) has arrived.
 * 0 with s, r and *t to free, or the exit status 1.
 */
static int aggregate(struct report_cmd *c, struct session *s, struct report *r,
		     struct symtab **t)
{
	struct stream_ctx sc = { .kernel = c->kernel, .force = c->force };
	char err[1024] = "";
	int rc;

	if (report_begin(&sc.agg, NULL, &c->ro, r)) {
		fprintf(stderr, "bareperf report: out of memory\n");
		cli_input_done(c->stdin_tmp);
		return 1;
	}
	/* The console is kept: a failed run's reason is its last words there. */
	rc = session_load_cb(s, c->input, SESSION_NO_RECORDS, add_sample, &sc,
			     err, sizeof(err));
	cli_input_name(c->stdin_tmp, "(standard input)", err, sizeof(err));
	cli_input_name(c->stdin_tmp, "(standard input)", sc.err, sizeof(sc.err));
	if (!rc)
		cli_input_name(c->stdin_tmp, "(standard input)", s->path, sizeof(s->path));
	if (rc || (!sc.t && session_symtab(s, c->kernel, c->force, &sc.t, sc.used, sizeof(sc.used),
					    sc.err, sizeof(sc.err)))) {
		fprintf(stderr, "bareperf report: %s\n", sc.err[0] ? sc.err : err);
		report_abort(sc.agg);
		report_free(r);
		if (!rc)
			session_free(s);
		symtab_free(sc.t);
		cli_input_done(c->stdin_tmp);
		return 1;
	}
	cli_input_done(c->stdin_tmp);
	if (c->stdin_tmp[0])
		snprintf(s->path, sizeof(s->path), "(standard input)");
	/* The chains are named as the samples came: before the programs
	 * loaded after the first sample join the symbols. */
	if (report_flush(sc.agg)) {
		fprintf(stderr, "bareperf report: out of memory\n");
		report_abort(sc.agg);
		report_free(r);
		symtab_free(sc.t);
		session_free(s);
		return 1;
	}
	session_symtab_programs(s, sc.t);
	report_set_symtab(sc.agg, sc.t);
	if (report_end(sc.agg, s, err, sizeof(err))) {
		fprintf(stderr, "bareperf report: %s\n", err);
		symtab_free(sc.t);
		session_free(s);
		return 1;
	}
	*t = sc.t;
	snprintf(c->used, sizeof(c->used), "%s", sc.used);
	const char *b = strrchr(c->used, '/');
	c->o.dso = b ? b + 1 : c->used;
	c->o.s = s;
	c->o.t = sc.t;
	return 0;
}

/* -C: a CPU that is not in the capture is named, not silently empty.
 * false when none of the CPUs asked for is in it. */
static bool cpus_present(const struct report_cmd *c, const struct session *s,
			 const struct report *r)
{
	bool in[SESSION_MAX_CPUS], missing[SESSION_MAX_CPUS] = { false }, any = false, some = false;
	const struct report_filter *fl = &c->ro.filter;
	char have[512], miss[512];

	if (!fl->cpu_set)
		return true;
	for (int cpu = 0; cpu < SESSION_MAX_CPUS; cpu++) {
		in[cpu] = r->cpu_seen[cpu] || s->have_cpu_info[cpu];
		missing[cpu] = fl->cpus[cpu] && !in[cpu];
		any |= missing[cpu];
		some |= fl->cpus[cpu] && in[cpu];
	}
	if (!any)
		return true;
	cpu_list(in, have, sizeof(have));
	cpu_list(missing, miss, sizeof(miss));
	fprintf(stderr, "bareperf report: %s: --cpu %s: not in this capture (its CPUs: %s)\n",
		some ? "warning" : "error", miss, have[0] ? have : "none");
	return some;
}

/* The header, the filter, every loss, then one table per event. */
static void print_report(const struct report_cmd *c, const struct session *s,
			 const struct report *r, const struct symtab *t)
{
	const struct report_filter *fl = &c->ro.filter;
	const struct out *o = &c->o;
	bool header = !c->quiet || c->header_only;

	if (header)
		header_print(o->f, s, c->used, t, "# ");
	bool filtered = fl->cpu_set || fl->app || fl->time_set || fl->symbols;

	if (filtered)
		fprintf(o->f, "# filter:%s%s%s%s%s%s: %" PRIu64 " samples kept, %" PRIu64 " left out\n",
			fl->cpu_set ? " cpus" : "", fl->app ? " app " : "", fl->app ? fl->app : "",
			fl->time_set ? " time" : "", fl->symbols ? " symbols " : "",
			fl->symbols ? fl->symbols : "", r->samples, r->filtered_out);
	/* A report never hides a loss: every nonzero count, before the tables. */
	if (o->color)
		fputs(C_RED, o->f);
	if (!session_print_losses(s, o->f, "# WARNING: ") && header)
		fprintf(o->f, "# losses: none (no ring overflow, no dropped ticks, no frame lost "
			"in transit)\n");
	if (o->color)
		fputs(C_OFF, o->f);
	bool sampling = false;
	for (size_t i = 0; i < s->nevents; i++)
		sampling |= s->events[i].sample_period != 0;
	uint32_t code;
	char why[8];
	bool failed = session_run_failed(s, &code, why, sizeof(why));
	if (!s->nsamples && !c->header_only)
		fprintf(o->f, "# no samples in the capture%s\n",
			failed ? " (the run failed: see the WARNING above)" :
			!s->nevents ? " (no EVENT_DESC: was sampling on? events=none?)" :
			!sampling ? ": the run only counted (count=); bareperf stat shows the counts" :
			"");
	for (size_t i = 0; i < r->nevents && !c->header_only; i++) {
		const struct bp_record_event_desc *d = session_event(s, r->events[i].id);
		if (r->events[i].samples || (!filtered && (!d || d->sample_period)))
			print_event(o, s, r, &r->events[i], &c->ro, c->max_rows);
	}
}

/* --stats: the count of each record type, perf's "Aggregated stats". */
static int print_stats(const struct report_cmd *c)
{
	static const struct { uint32_t type; const char *name; } types[] = {
		{ BP_RECORD_SAMPLE, "SAMPLE" }, { BP_RECORD_LOST, "LOST" },
		{ BP_RECORD_LOST_SAMPLES, "LOST_SAMPLES" }, { BP_RECORD_THROTTLE, "THROTTLE" },
		{ BP_RECORD_UNTHROTTLE, "UNTHROTTLE" }, { BP_RECORD_AUX, "AUX" },
		{ BP_RECORD_ITRACE_START, "ITRACE_START" }, { BP_RECORD_RUN_META, "RUN_META" },
		{ BP_RECORD_CPU_INFO, "CPU_INFO" }, { BP_RECORD_PMU_CAPS, "PMU_CAPS" },
		{ BP_RECORD_EVENT_DESC, "EVENT_DESC" }, { BP_RECORD_APP_START, "APP_START" },
		{ BP_RECORD_APP_STOP, "APP_STOP" }, { BP_RECORD_COUNTS, "COUNTS" },
		{ BP_RECORD_BENCH, "BENCH" }, { BP_RECORD_TICKS, "TICKS" },
		{ BP_RECORD_BENCH_END, "BENCH_END" },
	};
	uint64_t n[sizeof(types) / sizeof(types[0])] = { 0 }, other = 0;
	struct session s;
	char err[1024];

	if (session_load_flags(&s, c->input, SESSION_NO_CONSOLE, err, sizeof(err))) {
		cli_input_name(c->stdin_tmp, "(standard input)", err, sizeof(err));
		fprintf(stderr, "bareperf report: %s\n", err);
		return 1;
	}
	for (size_t i = 0; i < s.nrecords; i++) {
		const struct bp_record_header *h = (const void *)(s.rec_data + s.records[i].off);
		size_t k = 0;
		while (k < sizeof(types) / sizeof(types[0]) && types[k].type != h->type)
			k++;
		if (k < sizeof(types) / sizeof(types[0]))
			n[k]++;
		else
			other++;
	}
	printf("Aggregated stats:\n%20s records: %10zu\n", "TOTAL", s.nrecords);
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
		if (n[k])
			printf("%20s records: %10" PRIu64 "\n", types[k].name, n[k]);
	if (other)
		printf("%20s records: %10" PRIu64 "\n", "(unknown type)", other);
	session_print_losses(&s, stdout, "# WARNING: ");
	session_free(&s);
	return ferror(stdout) ? 1 : 0;
}

/*
 * No capture at input, and no -i (input is the default, capture.bpc) or
 * one naming a file that is not there: say which file was looked for and
 * how to get one, as perf report does for a missing perf.data. True if
 * so (said on stderr).
 */
static bool no_capture(const char *input)
{
	if (!strcmp(input, "-") || access(input, F_OK) == 0 || errno != ENOENT)
		return false;
	if (!strcmp(input, REPORT_DEFAULT_INPUT))
		fprintf(stderr, "bareperf report: no %s here (the default input, in the current "
			"directory): record one with 'bareperf record [-g] -- APP', or name a capture "
			"with -i FILE\n", input);
	else
		fprintf(stderr, "bareperf report: %s: no such file (record one with 'bareperf "
			"record -o %s -- APP')\n", input, input);
	return true;
}

int cmd_report(int argc, char **argv)
{
	struct report_cmd c = { .input = REPORT_DEFAULT_INPUT, .ro = { .sort = REPORT_SORT_SYM },
				.o = { .f = stdout } };
	struct session s;
	struct symtab *t;
	struct report r;
	int rc;

	if ((rc = parse_args(argc, argv, &c)) >= 0 || (rc = columns(&c)))
		return rc;
	if (cli_input("report", &c.input, c.stdin_tmp, sizeof(c.stdin_tmp)))
		return 1;
	if (no_capture(c.input))
		return 1;
	if (c.stats) {
		rc = print_stats(&c);
		cli_input_done(c.stdin_tmp);
		return rc;
	}
	if (c.aux) {
		struct trace_opts to = { .force = c.force, .cpu = -1, .top = c.max_rows };
		to.kernel_elf = session_kernel_for(c.input, c.kernel, c.used, sizeof(c.used));
		rc = trace_report(c.input, &to, stdout);
		cli_input_done(c.stdin_tmp);
		return rc;
	}
	c.o.color = !c.stdio && isatty(fileno(stdout));
	if (getcwd(c.cwd, sizeof(c.cwd))) {
		c.o.cwd = c.cwd;
		c.o.cwdlen = strlen(c.cwd);
	}
	if (aggregate(&c, &s, &r, &t))
		return 1;
	if (!cpus_present(&c, &s, &r)) {
		report_free(&r);
		symtab_free(t);
		session_free(&s);
		return 1;
	}
	if (c.o.no_children)
		for (size_t i = 0; i < r.nevents; i++)
			qsort(r.events[i].rows, r.events[i].nrows, sizeof(*r.events[i].rows), cmp_self);
	print_report(&c, &s, &r, t);
	report_free(&r);
	symtab_free(t);
	session_free(&s);
	return ferror(stdout) ? 1 : 0;
}
