/*
 * tools/builtin-stat.c — `bareperf stat`: a counter table per app run and CPU,
 * like perf stat, with derived metrics and min/median/max and perf's
 * spread over repetitions (several captures, or `stat -r N -- APP`).
 * Events the kernel refuses for want of a PMU show as "<not supported>".
 *
 * Two sources of numbers, each row saying which (struct row.source):
 *   counted     COUNTS records (the kernel's count= events): exact counts
 *               over the app's window on each CPU; a multiplexed event
 *               (time_running < time_enabled) is scaled by
 *               enabled/running, as perf stat does, and marked with the
 *               share of the time it ran; "<not counted>" if it never ran.
 *   estimated   a sampled event (events=): S samples of period P stand
 *               for about S x P events, marked "(est.)".
 * Samples and the app's duration (TSC) are measured. `stat -- APP` asks
 * the kernel for counting events (count=), so its table is counted.
 *
 * A capture holding BENCH records (the bench_* apps, suite) also gets
 * their tables (tools/util/stat_bench.c), and --plot FILE.svg draws its memlat
 * sweep; --bench prints only those.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/util/cli.h"
#include "tools/commands.h"
#include "tools/util/header.h"
#include "apps/bench_stats.h"
#include "tools/util/stat_bench.h"

#define MAX_ROWS	40
#define MAX_REPS	64

enum source { SRC_MEASURED, SRC_COUNTED, SRC_ESTIMATED };

#define NOT_COUNTED	(-1.0)		/* on no counter at any time */
#define NOT_SUPPORTED	(-2.0)		/* refused: no counter for it on the machine */

struct row {
	char name[72];			/* "duration", "cycles", "cpu-clock samples" */
	const char *unit;		/* "ns", "" */
	enum source source;
	double v[MAX_REPS];		/* one value per repetition; NOT_COUNTED, or
					 * NOT_SUPPORTED (the kernel refused the event) */
	int n;
	double enabled, running;	/* SRC_COUNTED: multiplexing, summed */
	double run_ns;			/* ns the event ran, summed over the repetitions:
					 * a counted event's time_running, else the run's
					 * window (perf's CSV run-time field) */
	bool from_ticks;		/* SRC_ESTIMATED cpu-clock: ticks due x period */
};

/* One table: the runs of one app on one CPU. */
struct table {
	char app[32];
	uint32_t cpu;
	struct row rows[MAX_ROWS];
	int nrows;
	int reps;
	int64_t status;			/* of the last run */
	int app_cpu;			/* the CPU that ran the app (last run), -1: unknown */
};

struct tables {
	struct table *t;
	size_t n, cap;
};

static struct table *table_get(struct tables *T, const char *app, uint32_t cpu)
{
	for (size_t i = 0; i < T->n; i++)
		if (!strcmp(T->t[i].app, app) && T->t[i].cpu == cpu)
			return &T->t[i];
	if (T->n == T->cap) {
		size_t n = T->cap ? 2 * T->cap : 8;
		struct table *q = realloc(T->t, n * sizeof(*q));
		if (!q)
			return NULL;
		T->t = q;
		T->cap = n;
	}
	struct table *t = &T->t[T->n++];
	memset(t, 0, sizeof(*t));
	snprintf(t->app, sizeof(t->app), "%s", app);
	t->cpu = cpu;
	return t;
}

static struct row *row_get(struct table *t, const char *name, const char *unit, enum source src)
{
	for (int i = 0; i < t->nrows; i++)
		if (!strcmp(t->rows[i].name, name))
			return &t->rows[i];
	if (t->nrows == MAX_ROWS)
		return NULL;
	struct row *r = &t->rows[t->nrows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->unit = unit;
	r->source = src;
	return r;
}

static void row_add(struct table *t, const char *name, const char *unit, enum source src,
		    double v, double run_ns)
{
	struct row *r = row_get(t, name, unit, src);

	if (r && r->n < MAX_REPS) {
		r->v[r->n++] = v;
		r->run_ns += run_ns;
	}
}

/* A span of TSC ticks in ns, at the capture's rate. */
static double ticks_ns(const struct session *s, uint64_t ticks)
{
	return s->have_meta ? (double)session_tsc_to_ns(s, s->meta.start_tsc + ticks) : (double)ticks;
}

/* Samples and period sums per (run, cpu, event), gathered while streaming. */
struct acc {
	uint32_t pid, cpu;
	uint64_t id, samples, period;
};

struct accs {
	struct acc *a;
	size_t n, cap;
	size_t last;
};

static int accumulate(void *ctx, const struct session *s, const struct bp_sample_rec *x,
		      const uint64_t *ips)
{
	struct accs *A = ctx;
	struct acc *e = A->n ? &A->a[A->last] : NULL;

	(void)s, (void)ips;
	if (!e || e->pid != x->pid || e->cpu != x->cpu || e->id != x->id) {
		size_t i;
		for (i = 0; i < A->n; i++)
			if (A->a[i].pid == x->pid && A->a[i].cpu == x->cpu && A->a[i].id == x->id)
				break;
		if (i == A->n) {
			if (A->n == A->cap) {
				size_t n = A->cap ? 2 * A->cap : 16;
				struct acc *q = realloc(A->a, n * sizeof(*q));
				if (!q)
					return -1;
				A->a = q;
				A->cap = n;
			}
			A->a[A->n++] = (struct acc){ x->pid, x->cpu, x->id, 0, 0 };
		}
		A->last = i;
		e = &A->a[i];
	}
	e->samples++;
	e->period += x->period;
	return 0;
}

/* Every app run of one capture into the tables, one repetition each. */
static void add_session(struct tables *T, const struct session *s, const struct accs *A)
{
	for (size_t a = 0; a < s->napps; a++) {
		const struct session_app *app = &s->apps[a];
		struct table *t = table_get(T, app->name, app->cpu);
		uint64_t end = app->stopped ? app->stop_time : s->last_time;
		char nb[64], name[96];

		if (!t)
			return;
		t->reps++;
		t->status = app->status;
		t->app_cpu = session_app_cpu(s, a);
		double window = (double)(session_tsc_to_ns(s, end) -
					 session_tsc_to_ns(s, app->start_time));
		row_add(t, "duration", "ns", SRC_MEASURED, window, window);
		/* Counted events: this run's COUNTS entries on this CPU. */
		for (size_t i = 0; i < s->ncounts; i++) {
			const struct session_count *c = &s->counts[i];
			const struct bp_record_event_desc *d;
			struct row *r;
			if (c->app_id != app->app_id || c->cpu != app->cpu)
				continue;
			d = session_event(s, c->id);
			const char *en = session_event_name(s, c->id, nb, sizeof(nb));
			const char *unit = !d ? "" :
				d->config == BP_CONFIG_SOFT_CPU_CLOCK ||
				d->config == BP_CONFIG_SOFT_TASK_CLOCK ? "ns" :
				d->config == BP_CONFIG_SOFT_TSC ? "tck" : "";
			if (!(r = row_get(t, en, unit, SRC_COUNTED)) || r->n >= MAX_REPS)
				continue;
			r->source = SRC_COUNTED;
			if (!c->time_running) {
				r->v[r->n++] = NOT_COUNTED;
				continue;
			}
			r->v[r->n++] = c->time_running < c->time_enabled ?
				(double)c->count * (double)c->time_enabled / (double)c->time_running :
				(double)c->count;
			r->enabled += (double)c->time_enabled;
			r->running += (double)c->time_running;
			r->run_ns += ticks_ns(s, c->time_running);
		}
		/* Sampled events: samples, and the count they stand for. */
		for (size_t e = 0; e < s->nevents; e++) {
			const struct bp_record_event_desc *d = &s->events[e];
			uint64_t samples = 0, period = 0;
			bool dup = !d->sample_period;	/* a counting event */
			for (size_t k = 0; k < e && !dup; k++)
				dup = s->events[k].id == d->id;
			if (dup)
				continue;
			for (size_t i = 0; i < A->n; i++) {
				const struct acc *x = &A->a[i];
				if (x->id == d->id && x->pid == app->app_id && x->cpu == app->cpu) {
					samples += x->samples;
					period += x->period;
				}
			}
			const char *en = session_event_name(s, d->id, nb, sizeof(nb));
			bool soft = !strcmp(en, "cpu-clock");
			snprintf(name, sizeof(name), "%s samples", en);
			row_add(t, name, "", SRC_MEASURED, (double)samples, window);
			/* The soft PMU's cpu-clock: every tick due stands for one
			 * period, sampled or lost (TICKS counts both); samples x
			 * period would leave the lost ticks out. */
			const struct session_ticks *tk =
				soft ? session_ticks_of(s, app->app_id, app->cpu) : NULL;
			struct row *r = row_get(t, en, soft ? "ns" : "", SRC_ESTIMATED);
			if (!r || r->n >= MAX_REPS)
				continue;
			r->run_ns += window;
			if (tk && tk->rec.period && tk->rec.due) {
				r->v[r->n++] = (double)tk->rec.due * (double)d->sample_period;
				r->from_ticks = true;
			} else {
				r->v[r->n++] = (double)period;
			}
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median, min and max of a row's repetitions. */
static double med(const struct row *r, double *lo, double *hi)
{
	double v[MAX_REPS];

	memcpy(v, r->v, (size_t)r->n * sizeof(double));
	qsort(v, (size_t)r->n, sizeof(double), cmp_double);
	*lo = v[0];
	*hi = v[r->n - 1];
	return r->n % 2 ? v[r->n / 2] : (v[r->n / 2 - 1] + v[r->n / 2]) / 2;
}

/* 1234567 -> "1,234,567" */
static const char *grouped(double d, char *buf, size_t n)
{
	char raw[40];
	int len, w = 0, lead;

	if (d < 0 || d >= 1e19) {
		snprintf(buf, n, "%.0f", d);
		return buf;
	}
	len = snprintf(raw, sizeof(raw), "%" PRIu64, (uint64_t)(d + 0.5));
	lead = len % 3 ? len % 3 : 3;
	for (int i = 0; i < len && (size_t)w + 2 < n; i++) {
		if (i && (i - lead) % 3 == 0)
			buf[w++] = ',';
		buf[w++] = raw[i];
	}
	buf[w] = 0;
	return buf;
}

static const struct row *find_row(const struct table *t, const char *name)
{
	for (int i = 0; i < t->nrows; i++)
		if (!strcmp(t->rows[i].name, name) && t->rows[i].n)
			return &t->rows[i];
	return NULL;
}

/*
 * perf stat -r's spread: the standard error of the repetitions' mean (the
 * sample standard deviation over sqrt(n)), in % of the mean. The value
 * shown beside it is the median. -1 for one repetition, a repetition
 * without a count, or a zero mean.
 */
static double spread_pct(const struct row *r)
{
	double mean = 0, ss = 0;

	if (r->n < 2)
		return -1;
	for (int i = 0; i < r->n; i++) {
		if (r->v[i] < 0)
			return -1;		/* a repetition that did not count it */
		mean += r->v[i] / r->n;
	}
	for (int i = 0; i < r->n; i++)
		ss += (r->v[i] - mean) * (r->v[i] - mean);
	if (mean <= 0)
		return -1;
	return 100.0 * sqrt(ss / (r->n - 1) / r->n) / mean;
}

/* perf's "<not counted>" or "<not supported>" for a median below zero. */
static const char *not_counted(double m)
{
	return m == NOT_SUPPORTED ? "<not supported>" : "<not counted>";
}

/* perf stat's unit for a time in ns: msec (task-clock, cpu-clock). */
static bool in_msec(const struct row *r)
{
	return !strcmp(r->unit, "ns") && (!strcmp(r->name, "task-clock") ||
					  !strcmp(r->name, "cpu-clock"));
}

static double row_med(const struct row *r)
{
	double lo, hi;
	return med(r, &lo, &hi);
}

/* perf stat's derived metrics, from whichever rows exist. */
static void derived(const struct table *t, const struct row *r, char *buf, size_t n)
{
	const struct row *o;

	buf[0] = 0;
	if (!strcmp(r->name, "instructions") && (o = find_row(t, "cycles")) && row_med(o) > 0)
		snprintf(buf, n, "# %.2f insn per cycle", row_med(r) / row_med(o));
	else if (!strcmp(r->name, "branch-misses") && (o = find_row(t, "branches")) && row_med(o) > 0)
		snprintf(buf, n, "# %.2f%% of all branches", 100 * row_med(r) / row_med(o));
	else if (!strcmp(r->name, "cache-misses") && (o = find_row(t, "cache-references")) &&
		 row_med(o) > 0)
		snprintf(buf, n, "# %.2f%% of all cache refs", 100 * row_med(r) / row_med(o));
	else if (r->source == SRC_COUNTED && !strcmp(r->name, "task-clock") &&
		 (o = find_row(t, "duration")) && row_med(o) > 0)
		snprintf(buf, n, "# %.3f CPUs utilized", row_med(r) / row_med(o));
	else if (!strcmp(r->name, "instructions") && (o = find_row(t, "tsc")) && row_med(o) > 0)
		snprintf(buf, n, "# %.2f insn per TSC tick", row_med(r) / row_med(o));
	else if (!strcmp(r->name, "duration"))
		snprintf(buf, n, "# %.3f ms", row_med(r) / 1e6);
	else if (r->source == SRC_ESTIMATED && r->from_ticks)
		snprintf(buf, n, "# estimated: ticks due x period");
	else if (r->source == SRC_ESTIMATED)
		snprintf(buf, n, "# estimated: samples x period");
}

/*
 * -x SEP: perf stat's CSV layout (perf-stat(1), CSV FORMAT), one line per
 * counter: value, unit, event, run time (ns the counter ran: a counted
 * event's time_running, else the run's window), percentage of the run it
 * ran, metric value, metric unit. An estimate's event is named as in the
 * table, "cpu-clock (est.)". With several tables each line starts with
 * the table's CPU, "CPUn" as perf stat -A does, or "APP/CPUn" when the
 * captures hold runs of several apps.
 */
static void print_table_csv(const struct table *t, const char *sep, int prefix)
{
	char der[96], label[100];

	for (int i = 0; i < t->nrows; i++) {
		const struct row *r = &t->rows[i];
		double lo, hi, m, pct = 100.0;
		const char *metric = "", *munit = "";
		char mv[96];
		if (!r->n)
			continue;
		if (prefix > 1)
			printf("%s/", t->app);
		if (prefix)
			printf("CPU%u%s", t->cpu, sep);
		m = med(r, &lo, &hi);
		snprintf(label, sizeof(label), "%s%s", r->name,
			 r->source == SRC_ESTIMATED ? " (est.)" : "");
		const char *unit = in_msec(r) ? "msec" : r->unit;
		double sp = spread_pct(r);
		if (m < 0) {
			/* value, unit, event, run time, %, [spread,] metric, unit */
			printf("%s%s%s%s%s%s0%s0.00%s%s%s\n", not_counted(m), sep, unit, sep, label, sep,
			       sep, sep, t->reps > 1 ? sep : "", sep);
			continue;
		}
		derived(t, r, der, sizeof(der));
		if (!strncmp(der, "# ", 2) && !strstr(der, "estimated")) {
			size_t k = strcspn(der + 2, " ");
			snprintf(mv, sizeof(mv), "%.*s", (int)k, der + 2);
			metric = mv;
			munit = der + 2 + k + (der[2 + k] == ' ');
		}
		if (r->source == SRC_COUNTED && r->enabled > 0)
			pct = 100.0 * r->running / r->enabled;
		printf("%.2f%s%s%s%s%s%.0f%s%.2f%s", in_msec(r) ? m / 1e6 : m, sep, unit, sep, label, sep,
		       r->run_ns / r->n, sep, pct, sep);
		if (t->reps > 1 && sp >= 0)
			printf("%.2f%%%s", sp, sep);
		else if (t->reps > 1)
			printf("%s", sep);
		printf("%s%s%s\n", metric, sep, munit);
	}
}

static void print_table(const struct table *t)
{
	char num[48], lo_s[48], hi_s[48], der[96], label[100];

	/* Every CPU of a run has a table; only one of them ran the app. */
	if (t->app_cpu == (int)t->cpu)
		printf("\n Performance counter stats for '%s' on cpu %u", t->app, t->cpu);
	else if (t->app_cpu >= 0)
		printf("\n Performance counter stats for cpu %u while '%s' ran on cpu %d", t->cpu,
		       t->app, t->app_cpu);
	else
		printf("\n Performance counter stats for cpu %u during '%s' (the CPU that ran it "
		       "is not in the capture)", t->cpu, t->app);
	if (t->reps > 1)
		printf(" (%d runs)", t->reps);
	printf(":\n\n");
	for (int i = 0; i < t->nrows; i++) {
		const struct row *r = &t->rows[i];
		double lo, hi, m;
		if (!r->n)
			continue;
		m = med(r, &lo, &hi);
		if (m < 0) {
			printf("  %18s %-3s %s\n", not_counted(m), r->unit, r->name);
			continue;
		}
		derived(t, r, der, sizeof(der));
		snprintf(label, sizeof(label), "%s%s", r->name,
			 r->source == SRC_ESTIMATED ? " (est.)" : "");
		char line[400];
		int len = snprintf(line, sizeof(line), "  %18s %-3s %-30s %-32s",
				   grouped(m, num, sizeof(num)), r->unit, label, der);
		if (r->source == SRC_COUNTED && r->enabled > 0 && r->running < r->enabled)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " (%.2f%%)",
					100.0 * r->running / r->enabled);
		if (spread_pct(r) >= 0)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " ( +- %.2f%% )",
					spread_pct(r));
		if (r->n > 1 && lo != hi)
			len += snprintf(line + len, sizeof(line) - (size_t)len, " [min %s, max %s]",
					grouped(lo, lo_s, sizeof(lo_s)), grouped(hi, hi_s, sizeof(hi_s)));
		while (len > 0 && line[len - 1] == ' ')
			line[--len] = 0;
		printf("%s\n", line);
	}
	if (t->reps > 1)
		printf("\n  (median of %d runs; [min, max] where they differ; ( +- x%% ): perf's\n"
		       "  spread, the standard error of the runs' mean in %% of the mean)\n", t->reps);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bareperf stat -i FILE [-i FILE ...] [--bench] [--agg A] [--plot FILE.svg]\n"
		"       bareperf stat [-r N] [record options] -- APP [ARGS]\n"
		"  a counter table per app run and CPU, counted by the kernel (count=); with\n"
		"  several captures or -r N the median, min and max over the repetitions\n"
		"  -i, --input FILE   a capture (repeat for repetitions; - reads standard input)\n"
		"  -r, --repeat N     run APP N times (bareperf record --qemu each time); each\n"
		"                     value is the median, with perf's spread ( +- x.xx%% ):\n"
		"                     the standard error of the runs' mean, in %% of the mean\n"
		"  -e, --events LIST  events to count (count=; default task-clock,tsc, plus\n"
		"                     cycles,instructions,branches,branch-misses with --kvm);\n"
		"                     on a machine without a PMU the hardware ones show as\n"
		"                     <not supported> and the software ones are counted\n"
		"  record options     passed to bareperf record (--smp, --icount, --kvm, --tty ...)\n"
		"  -x, --field-separator SEP  perf stat's CSV layout, fields separated by SEP,\n"
		"                     one line per counter: [CPU,]value,unit,event,run time,\n"
		"                     %% running,[spread with -r,]metric value,metric unit;\n"
		"                     task-clock and cpu-clock in msec (perf's). run time: ns the\n"
		"                     counter ran (a counted event's time running, else the\n"
		"                     run's duration); estimates named \"EVENT (est.)\"; the\n"
		"                     leading CPUn (APP/CPUn if several apps) only with\n"
		"                     several tables, as perf stat -A; no benchmark tables\n"
		"  --bench            only the benchmark tables (BENCH records); nothing if none\n"
		"  --agg A            benchmark values with nanoBench's aggregate A: median,\n"
		"                     min or avg (default: the one the harness reported); a\n"
		"                     value is A of the 2n-runs less A of the n-runs, headed\n"
		"                     \"A:2n-n\": not A over one set of values (min:2n-n can\n"
		"                     exceed median:2n-n)\n"
		"  --plot FILE.svg    the memlat sweep (latency by working set) as an SVG chart\n"
		"\n"
		"  Counts come from the kernel's COUNTS records (exact; scaled and marked when\n"
		"  multiplexed). A capture of a sampling run has none: its counts are estimated\n"
		"  from samples (samples x period), marked \"(est.)\"; the soft PMU's cpu-clock\n"
		"  from its ticks due (sampled or lost) x period. No \"CPUs utilized\" for it:\n"
		"  its timer ticks whether the CPU works or idles, so against the run's\n"
		"  duration it is 1.0 by construction.\n"
		"\n"
		"  BENCH records (bench_* apps, suite): one table per benchmark table, values\n"
		"  per unit of work (nanoBench's: agg of the 2n-runs less agg of the n-runs)\n"
		"  with the spread of the per-repetition differences; a value below its noise\n"
		"  floor shows as \"< F\"; rows whose records never arrived are named.\n");
}

/* The command's options, its captures and the tables they fill. */
struct stat_cmd {
	const char *inputs[MAX_REPS];
	int ninputs;
	const char *count, *plot, *sep;
	char soft[256];			/* -e's software events, when the kernel refused
					 * the others: what the runs count */
	char unsupported[256];		/* ... and those others, "<not supported>" */
	bool kvm, bench_only, plotted, plot_failed;
	int nbench, agg, reps;
	char *rec_argv[256];		/* record's options, then a run's */
	int rec_argc;
	int app_at;			/* argv's index of the app after "--"; -1: none */
	char tmpl[MAX_REPS][64];	/* counting mode's temporary captures */
	struct tables T;
};

/* One option of stat's own at argv[*i]: 1 taken, 0 not stat's, -2 bad. */
static int stat_option(int argc, char **argv, int *i, struct stat_cmd *c)
{
	const char *a = argv[*i];

	/* perf stat -x SEP, also written -xSEP and --field-separator[=]SEP */
	if (!strcmp(a, "-x") || !strcmp(a, "--field-separator")) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "bareperf stat: %s needs a separator\n", a);
			return -2;
		}
		c->sep = argv[++*i];
	} else if (!strncmp(a, "-x", 2) || !strncmp(a, "--field-separator=", 18)) {
		c->sep = a[1] == 'x' ? a + 2 : a + 18;
	} else if (!strcmp(a, "-i") || !strcmp(a, "--input")) {
		if (c->ninputs == MAX_REPS) {
			fprintf(stderr, "bareperf stat: at most %d captures\n", MAX_REPS);
			return -2;
		}
		c->inputs[c->ninputs++] = argv[++*i];
	} else if (!strcmp(a, "-r") || !strcmp(a, "--repeat")) {
		char *end;
		long n = strtol(argv[++*i], &end, 10);
		if (*end || n < 1 || n > MAX_REPS) {
			fprintf(stderr, "bareperf stat: -r: '%s' is not a count from 1 to %d\n",
				argv[*i], MAX_REPS);
			return -2;
		}
		c->reps = (int)n;
	} else if (!strcmp(a, "--plot")) {
		c->plot = argv[++*i];
	} else if (!strcmp(a, "--bench")) {
		c->bench_only = true;
	} else if (!strcmp(a, "--agg")) {
		c->agg = bench_agg_parse(argv[++*i]);
		if (c->agg < 0) {
			fprintf(stderr, "bareperf stat: --agg: '%s' is not median, min or avg\n",
				argv[*i]);
			return -2;
		}
	} else if (!strcmp(a, "-e") || !strcmp(a, "--events")) {
		if (*i + 1 >= argc) {
			fprintf(stderr, "bareperf stat: %s needs a value\n", a);
			return -2;
		}
		c->count = argv[++*i];	/* perf stat -e: the events to count */
	} else {
		return 0;
	}
	return 1;
}

/* The options into c: -1 to go on, else the command's exit status.
 * Anything not stat's own before "--" belongs to record. */
static int parse_args(int argc, char **argv, struct stat_cmd *c)
{
	c->rec_argv[c->rec_argc++] = (char *)"record";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--")) {
			c->app_at = i + 1;
			break;
		}
		if ((!strcmp(a, "-i") || !strcmp(a, "--input") || !strcmp(a, "-r") ||
		     !strcmp(a, "--repeat") || !strcmp(a, "--plot") || !strcmp(a, "--agg")) &&
		    i + 1 >= argc) {
			fprintf(stderr, "bareperf stat: %s needs a value\n", a);
			return 2;
		}
		int k = stat_option(argc, argv, &i, c);
		if (k < 0)
			return 2;
		if (!k && c->rec_argc < 200) {
			c->kvm |= !strcmp(a, "--kvm");
			c->rec_argv[c->rec_argc++] = argv[i];
		}
	}
	if (c->ninputs && c->app_at >= 0) {
		fprintf(stderr, "bareperf stat: either -i FILE or -- APP, not both\n");
		return 2;
	}
	if (c->ninputs && c->rec_argc > 1) {
		/* what is not stat's own goes to record, which -i never runs */
		fprintf(stderr, "bareperf stat: '%s' is not an option of stat -i FILE (record's "
				"options go with stat -- APP)\n", c->rec_argv[1]);
		return 2;
	}
	if (!c->ninputs && c->app_at < 0) {
		fprintf(stderr, "bareperf stat: give a capture (-i FILE) or an app (-- APP)\n");
		return 2;
	}
	return -1;
}

/* A counting run's temporary capture, and record's copy of the kernel beside it. */
static void remove_run(const char *path)
{
	char copy[128];

	session_kernel_copy_path(path, copy, sizeof(copy));
	unlink(copy);
	unlink(path);
}

/* The software events (pmu/profile.c's): every machine counts them. */
static bool soft_event(const char *name, size_t n)
{
	static const char *const soft[] = { "cpu-clock", "task-clock", "tsc" };

	for (size_t i = 0; i < sizeof(soft) / sizeof(soft[0]); i++)
		if (strlen(soft[i]) == n && !strncmp(soft[i], name, n))
			return true;
	return false;
}

/*
 * Did the run in capture path fail because the machine has no PMU for
 * -e's hardware events (the kernel's refusal, before any app ran, with
 * its reason code: session_refused_no_pmu), while -e has software events
 * too? Then c->soft and c->unsupported split -e's list, and true: perf
 * stat counts what it can and prints "<not supported>" for the rest.
 */
static bool split_unsupported(struct stat_cmd *c, const char *path)
{
	struct session s;
	char err[256];
	bool refused;

	if (session_load_flags(&s, path, SESSION_NO_RECORDS | SESSION_NO_CONSOLE, err,
			       sizeof(err)))
		return false;
	refused = session_refused_no_pmu(&s);
	session_free(&s);
	if (!refused)
		return false;
	c->soft[0] = c->unsupported[0] = 0;
	for (const char *p = c->count; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		size_t n = strcspn(p, ","), l;
		char *to = soft_event(p, n) ? c->soft : c->unsupported;
		if (!n || (l = strlen(to)) + n + 2 > sizeof(c->soft))
			continue;
		snprintf(to + l, sizeof(c->soft) - l, "%s%.*s", l ? "," : "", (int)n, p);
	}
	return c->soft[0] && c->unsupported[0];
}

/* "<not supported>" rows for the events the kernel refused, in every table. */
static void add_unsupported(struct stat_cmd *c)
{
	for (size_t i = 0; i < c->T.n; i++) {
		struct table *t = &c->T.t[i];
		for (const char *p = c->unsupported; *p;
		     p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
			char name[72];
			struct row *r;
			snprintf(name, sizeof(name), "%.*s", (int)strcspn(p, ","), p);
			if (!(r = row_get(t, name, "", SRC_COUNTED)))
				continue;
			while (r->n < t->reps && r->n < MAX_REPS)
				r->v[r->n++] = NOT_SUPPORTED;
		}
	}
}

/*
 * Counting mode: a run per repetition with count= (and no sampling),
 * into temporary captures. Without -e: the soft events every machine
 * has, plus perf stat's hardware set where a PMU is sure (--kvm passes
 * the host's through). 0, or the exit status.
 */
static int run_app(int argc, char **argv, struct stat_cmd *c)
{
	if (!c->count)
		c->count = c->kvm ? "task-clock,tsc,cycles,instructions,branches,branch-misses" :
				    "task-clock,tsc";
	c->rec_argv[c->rec_argc++] = (char *)"--count";
	c->rec_argv[c->rec_argc++] = (char *)c->count;
	int base = c->rec_argc;
	for (int k = 0; k < c->reps; k++) {
		int fd;
		snprintf(c->tmpl[k], sizeof(c->tmpl[k]), "/tmp/bareperf-stat-XXXXXX");
		if ((fd = mkstemp(c->tmpl[k])) < 0) {
			fprintf(stderr, "bareperf stat: cannot create a temporary file: %s\n",
				strerror(errno));
			return 1;
		}
		close(fd);
		c->inputs[c->ninputs++] = c->tmpl[k];
		c->rec_argc = base;
		c->rec_argv[c->rec_argc++] = (char *)"-q";
		c->rec_argv[c->rec_argc++] = (char *)"-o";
		c->rec_argv[c->rec_argc++] = c->tmpl[k];
		c->rec_argv[c->rec_argc++] = (char *)"--";
		for (int i = c->app_at; i < argc && c->rec_argc < 254; i++)
			c->rec_argv[c->rec_argc++] = argv[i];
		c->rec_argv[c->rec_argc] = NULL;
		int st = cmd_record(c->rec_argc, c->rec_argv);
		if (st == 2 && k == 0 && !c->unsupported[0] && split_unsupported(c, c->tmpl[k])) {
			fprintf(stderr, "bareperf stat: no PMU for %s on this machine: counting %s, "
				"as perf stat does (<not supported>)\n", c->unsupported, c->soft);
			c->rec_argv[base - 1] = c->soft;
			remove_run(c->tmpl[k]);
			c->ninputs--;
			k--;
			continue;
		}
		if (st) {
			fprintf(stderr, "bareperf stat: run %d: bareperf record ended with status %d\n",
				k + 1, st);
			return st;
		}
	}
	return 0;
}

/* What the user gave: not the temporary files behind - and -- APP. */
static void shown_name(const struct stat_cmd *c, char **argv, int k, char *buf, size_t n)
{
	const char *in = c->inputs[k];

	if (c->app_at >= 0)
		snprintf(buf, n, "run %d of '%s'", k + 1, argv[c->app_at]);
	else
		snprintf(buf, n, "%s", strcmp(in, "-") ? in : "(standard input)");
}

/* What capture s adds: to the tables, and its benchmarks (printed, --plot). */
static int add_capture(struct stat_cmd *c, struct session *s, const struct accs *A, int k,
		       const char *shown)
{
	char err[1024];
	int rc = 0;

	if (c->bench_only) {
		/* only the benchmarks: nothing at all for a capture without */
		session_warn(s, "stat");
		if (s->nbenches && c->ninputs > 1)
			printf("%s# bench results of %s:\n", c->nbench ? "\n" : "", shown);
	} else if (c->sep) {
		/* CSV: the counts only; losses still reach the user */
		session_warn(s, "stat");
		add_session(&c->T, s, A);
	} else {
		if (k == 0 || c->ninputs == 1)
			header_print(stdout, s, NULL, NULL, "# ");
		session_print_losses(s, stdout, "# WARNING: ");
		if (!s->napps)
			printf("# %s: no app run (no APP_START record)\n", shown);
		add_session(&c->T, s, A);
		if (s->nbenches && c->ninputs > 1)
			printf("\n# bench results of %s:\n", shown);
	}
	if (!c->sep)
		c->nbench += stat_bench_print(stdout, s, c->agg);
	else if (s->nbenches)
		fprintf(stderr, "bareperf stat: -x: the %zu BENCH records of %s are not in the "
				"CSV (no CSV layout for them): stat --bench without -x shows them\n",
			s->nbenches, shown);
	if (c->plot && !c->plotted && !c->plot_failed) {
		int n = stat_bench_plot(c->plot, s, c->agg, err, sizeof(err));
		if (n < 0) {
			fprintf(stderr, "bareperf stat: %s\n", err);
			rc = 1;
			c->plot_failed = true;
		}
		c->plotted = n > 0;
	}
	return rc;
}

/* Load capture k and add it: 0, or the exit status 1 (*fatal: stop here). */
static int read_capture(struct stat_cmd *c, char **argv, int k, bool *fatal)
{
	struct session s;
	struct accs A = { 0 };
	char stdin_tmp[4096], shown[128], err[1024];
	const char *in = c->inputs[k];

	shown_name(c, argv, k, shown, sizeof(shown));
	*fatal = true;
	if (cli_input("stat", &in, stdin_tmp, sizeof(stdin_tmp)))
		return 1;
	/* The console is kept: it names the CPU that ran the app. */
	if (session_load_cb(&s, in, SESSION_NO_RECORDS, accumulate, &A, err, sizeof(err))) {
		cli_input_name(in, shown, err, sizeof(err));
		fprintf(stderr, "bareperf stat: %s\n", err);
		cli_input_done(stdin_tmp);
		free(A.a);
		return 1;
	}
	*fatal = false;
	cli_input_done(stdin_tmp);
	snprintf(s.path, sizeof(s.path), "%s", shown);
	int rc = add_capture(c, &s, &A, k, shown);
	free(A.a);
	session_free(&s);
	return rc;
}

/* The tables: -x's CSV, or the text with its notes. */
static void print_counts(const struct stat_cmd *c)
{
	const struct tables *T = &c->T;

	if (c->sep) {
		int prefix = T->n > 1;
		for (size_t i = 1; i < T->n; i++)
			if (strcmp(T->t[i].app, T->t[0].app))
				prefix = 2;
		for (size_t i = 0; i < T->n; i++)
			print_table_csv(&T->t[i], c->sep, prefix);
		if (!T->n)
			fprintf(stderr, "bareperf stat: no app run in the capture: nothing to count\n");
		return;
	}
	bool est = false, scaled = false;
	for (size_t i = 0; i < T->n; i++) {
		print_table(&T->t[i]);
		for (int k = 0; k < T->t[i].nrows; k++) {
			const struct row *r = &T->t[i].rows[k];
			est |= r->source == SRC_ESTIMATED;
			scaled |= r->source == SRC_COUNTED && r->running < r->enabled;
		}
	}
	if (!T->n)
		printf("\n  no app run in the capture: nothing to count\n");
	if (est)
		printf("\n  (est.): estimated from samples (samples x sampling period; the soft PMU's\n"
		       "  cpu-clock: its ticks due, sampled or lost, x period), not counted;\n"
		       "  bareperf stat -- APP (count=) counts exactly.\n");
	if (scaled)
		printf("\n  (NN.NN%%): the event was multiplexed: on a counter that share of the time;\n"
		       "  its count is scaled by time_enabled/time_running.\n");
}

/* -x against what the captures hold: 0, or the exit status 2. */
static int check_sep(const struct stat_cmd *c)
{
	if (c->sep && !*c->sep) {
		fprintf(stderr, "bareperf stat: -x: the separator is empty\n");
		return 2;
	}
	if (c->sep && c->bench_only) {
		fprintf(stderr, "bareperf stat: -x: the benchmark tables (--bench) have no CSV "
				"layout; drop -x, or -x without --bench for the counters\n");
		return 2;
	}
	return 0;
}

/* Counting mode's temporary captures, and record's copies of the kernel. */
static void remove_runs(const struct stat_cmd *c)
{
	if (c->app_at < 0)
		return;
	for (int k = 0; k < c->ninputs; k++)
		if (!strncmp(c->inputs[k], "/tmp/bareperf-stat-", 19))
			remove_run(c->inputs[k]);
}

int cmd_stat(int argc, char **argv)
{
	struct stat_cmd c = { .agg = -1, .reps = 1, .app_at = -1 };
	bool fatal = false;
	int rc;

	if ((rc = parse_args(argc, argv, &c)) >= 0)
		return rc;
	rc = 0;
	if ((!c.ninputs && (rc = run_app(argc, argv, &c))) || (rc = check_sep(&c)))
		goto out;
	for (int k = 0; k < c.ninputs && !fatal; k++) {
		int e = read_capture(&c, argv, k, &fatal);
		rc = e ? e : rc;
	}
	if (fatal)
		goto out;
	/* --bench is silent about what is not there (make run uses it on any capture) */
	if (c.plot && !c.plotted && !c.plot_failed && !c.bench_only)
		fprintf(stderr, "bareperf stat: --plot: no memlat BENCH records; %s not written\n",
			c.plot);
	else if (c.plotted && !c.bench_only)
		fprintf(stderr, "bareperf stat: wrote %s\n", c.plot);
	add_unsupported(&c);
	if (!c.bench_only)
		print_counts(&c);
out:
	free(c.T.t);
	remove_runs(&c);
	return rc;
}
