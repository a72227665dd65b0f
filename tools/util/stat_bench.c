/*
 * tools/util/stat_bench.c — the BENCH records of a capture (apps/bench.h): one
 * table per benchmark table (memlat, membw, branch, insn, priv), and the
 * rows that never arrived. The memory-latency chart is tools/util/stat_plot.c.
 *
 * A record's values are x1000 per unit of work (work_unit): nanoBench's
 * value under its -min, -median and -avg aggregates, and the spread (iqr)
 * of the per-repetition differences (perf_ring.h, struct bp_record_bench).
 * A table shows one aggregate (the harness's choice, or --agg) and the
 * iqr, three decimals, in record order; a value below its noise floor
 * (apps/bench_stats.h, one definition with the harness) shows as "< F".
 * The records' seq numbers and the run's BENCH_END name the rows that
 * never arrived.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "apps/bench_stats.h"
#include "tools/util/bench_out.h"
#include "tools/util/stat_bench.h"

#define NCOLS		8
#define CELL		80

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
const char *stat_bench_fmt_x1000(int64_t v, char *buf, size_t n)
{
	uint64_t a = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	snprintf(buf, n, "%s%" PRIu64 ".%03" PRIu64, v < 0 ? "-" : "", a / 1000, a % 1000);
	return buf;
}

/* x1000 fixed point, unsigned (spreads, floors) -> "12.345" */
const char *stat_bench_fmt_ux1000(uint64_t v, char *buf, size_t n)
{
	snprintf(buf, n, "%" PRIu64 ".%03" PRIu64, v / 1000, v % 1000);
	return buf;
}

/* 4096 -> "4 KiB", 2097152 -> "2 MiB" (whole units only; else bytes) */
const char *stat_bench_fmt_bytes(uint64_t b, char *buf, size_t n)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (u < 4 && b >= 1024 && !(b % 1024))
		b /= 1024, u++;
	snprintf(buf, n, "%" PRIu64 " %s", b, unit[u]);
	return buf;
}

static const char *fmt_param(const struct bp_record_bench *b, char *buf, size_t n)
{
	switch (b->param_unit) {
	case BP_BENCH_PARAM_NONE:	snprintf(buf, n, "-"); break;
	case BP_BENCH_PARAM_BYTES:	stat_bench_fmt_bytes(b->param, buf, n); break;
	case BP_BENCH_PARAM_CPU:	snprintf(buf, n, "cpu %" PRIu64, b->param); break;
	default:			snprintf(buf, n, "%" PRIu64, b->param); break;
	}
	return buf;
}

/* The aggregate a record is shown with: the caller's choice, else the
 * one the harness reported (records before version 1: the median). */
static unsigned rec_agg(const struct bp_record_bench *b, int agg)
{
	if (agg >= 0)
		return (unsigned)agg;
	return b->bench_version >= 1 && bench_agg_name(b->agg) ? b->agg : BP_BENCH_AGG_MEDIAN;
}

void stat_bench_judge(const struct bp_record_bench *b, int agg, struct stat_bench_value *v)
{
	unsigned a = rec_agg(b, agg);
	uint64_t per = (uint64_t)(b->unroll ? b->unroll : 1) * (b->loops ? b->loops : 1) *
		       (b->work ? b->work : 1);

	v->agg = a;
	v->value = a == BP_BENCH_AGG_MIN ? b->min : a == BP_BENCH_AGG_AVG ? b->trimmed_mean
									 : b->median;
	v->has_iqr = b->bench_version >= 1;
	v->iqr = v->has_iqr ? b->iqr : 0;
	/* Without a spread (older records) the floor is the resolution alone. */
	v->floor = bench_noise_floor(v->iqr, per);
	v->noise = !bench_above_floor(v->value, v->floor);
}

static void fmt_notes(const struct bp_record_bench *b, const struct stat_bench_value *v,
		      char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = 0;
#define NOTE(...) do {								\
		if (len < n)							\
			len += (size_t)snprintf(buf + len, n - len, "%s", len ? ", " : ""); \
		if (len < n)							\
			len += (size_t)snprintf(buf + len, n - len, __VA_ARGS__); \
	} while (0)
	if (v->noise)
		NOTE("below noise floor");
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
	if (b->flags & BP_BENCH_F_CPUID_SERIALIZED)
		NOTE("cpuid-serialized");
#undef NOTE
}

bool stat_bench_multi_cpu(const struct session *s)
{
	for (size_t i = 1; i < s->nbenches; i++)
		if (s->benches[i].cpu != s->benches[0].cpu)
			return true;
	return false;
}

/* "TSC ticks per load", "cycles per instruction", ... for one table. */
static void table_unit(const struct session *s, const size_t *rows, size_t nrows, char *buf,
		       size_t n)
{
	const struct bp_record_bench *first = NULL;
	bool same_event = true, same_work = true, all_tsc = true, all_icount = true, no_pmu = false;

	for (size_t i = 0; i < nrows; i++) {
		const struct bp_record_bench *b = &s->benches[rows[i]];
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

/* NCOLS columns: cpu, name, param, event, value, iqr, reps, notes */
/* One table: the records rows[0..nrows) of s->benches, in that order. */
static void print_table(FILE *f, const struct session *s, const size_t *rows, size_t nrows,
			bool cpu_col, int agg, unsigned *aggs_seen)
{
	const char *head[NCOLS] = { "cpu", "name", "param", "event", "value", "iqr", "reps",
				    "notes" };
	static const bool right[NCOLS] = { true, false, false, false, true, true, true, false };
	size_t w[NCOLS];
	const char *table = s->benches[rows[0]].table;
	bool any_param = false, any_iqr = false;
	int one_agg = -2;		/* -2: none yet, -1: mixed */
	char unit[200];
	char (*cell)[NCOLS][CELL];

	for (size_t i = 0; i < nrows; i++)
		any_param |= s->benches[rows[i]].param_unit != BP_BENCH_PARAM_NONE;
	if (!nrows || !(cell = calloc(nrows, sizeof(*cell))))
		return;
	for (size_t r = 0; r < nrows; r++) {
		const struct bp_record_bench *b = &s->benches[rows[r]];
		struct stat_bench_value v;
		char fl[32];
		stat_bench_judge(b, agg, &v);
		one_agg = one_agg == -2 || one_agg == (int)v.agg ? (int)v.agg : -1;
		*aggs_seen |= 1u << v.agg;
		any_iqr |= v.has_iqr;
		snprintf(cell[r][0], CELL, "%" PRIu32, b->cpu);
		snprintf(cell[r][1], CELL, "%s", b->name);
		fmt_param(b, cell[r][2], CELL);
		snprintf(cell[r][3], CELL, "%s", b->event);
		/* Below the floor the value is not a result: only the bound shows. */
		if (b->flags & BP_BENCH_F_DISTURBED) {
			/* Most repetitions kept an NMI: shown, marked, not a result. */
			stat_bench_fmt_x1000(v.value, fl, sizeof(fl));
			snprintf(cell[r][4], CELL, "? %s", fl);
		} else if (v.noise)
			snprintf(cell[r][4], CELL, "< %s", stat_bench_fmt_ux1000(v.floor, fl, sizeof(fl)));
		else
			stat_bench_fmt_x1000(v.value, cell[r][4], CELL);
		if (v.has_iqr)
			stat_bench_fmt_ux1000(v.iqr, cell[r][5], CELL);
		else
			snprintf(cell[r][5], CELL, "-");
		snprintf(cell[r][6], CELL, "%" PRIu32, b->n_reps);
		fmt_notes(b, &v, cell[r][7], CELL);
	}
	/* The value is a difference of aggregates, agg(2n) - agg(n), not an
	 * aggregate of one set of values: "min:2n-n" can exceed
	 * "median:2n-n", and its head says which it is. */
	char agg_head[32];
	if (one_agg >= 0) {
		snprintf(agg_head, sizeof(agg_head), "%s:2n-n", bench_agg_name((unsigned)one_agg));
		head[4] = agg_head;
	}
	for (int c = 0; c < NCOLS; c++)
		w[c] = strlen(head[c]);
	for (size_t r = 0; r < nrows; r++)
		for (int c = 0; c < NCOLS; c++)
			if (strlen(cell[r][c]) > w[c])
				w[c] = strlen(cell[r][c]);
	table_unit(s, rows, nrows, unit, sizeof(unit));
	fprintf(f, "\n %s: %s\n\n", table, unit);
	for (size_t r = 0; r <= nrows; r++) {
		char line[NCOLS * (CELL + 2) + 8];
		size_t len = 0;
		for (int c = 0; c < NCOLS; c++) {
			const char *t = r ? cell[r - 1][c] : head[c];
			if ((c == 0 && !cpu_col) || (c == 2 && !any_param) || (c == 5 && !any_iqr))
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

/* ---- rows that never arrived ------------------------------------------------ */

static const struct session *seq_s;

/* BENCH records by (app_id, seq); stable on ties by index. */
static int cmp_app_seq(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct bp_record_bench *x = &seq_s->benches[i], *y = &seq_s->benches[j];

	if (x->app_id != y->app_id)
		return x->app_id < y->app_id ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return i < j ? -1 : i > j;
}

static int cmp_end_app(const void *a, const void *b)
{
	uint32_t x = seq_s->bench_ends[*(const size_t *)a].app_id;
	uint32_t y = seq_s->bench_ends[*(const size_t *)b].app_id;

	return x < y ? -1 : x > y;
}

/* "memlat 'chase 2m-pages 512 KiB' (tsc, cpu 1)" */
static void row_label(const struct bp_record_bench *b, bool cpu_col, char *buf, size_t n)
{
	char p[48];

	if (b->param_unit == BP_BENCH_PARAM_NONE)
		snprintf(buf, n, "%s '%s' (%s", b->table, b->name, b->event);
	else
		snprintf(buf, n, "%s '%s %s' (%s", b->table, b->name, fmt_param(b, p, sizeof(p)),
			 b->event);
	size_t len = strlen(buf);
	if (cpu_col)
		snprintf(buf + len, n - len, ", cpu %" PRIu32 ")", b->cpu);
	else
		snprintf(buf + len, n - len, ")");
}

/* "memlat rows 3-5" into buf */
static void rows_of(const char *table, uint32_t first, uint32_t last, char *buf, size_t n)
{
	if (first == last)
		snprintf(buf, n, "%s row %" PRIu32, table, first);
	else
		snprintf(buf, n, "%s rows %" PRIu32 "-%" PRIu32, table, first, last);
}

/* The tables of one app run and the first seq received of each: a gap
 * holds the first rows of a table only if none of it came before. */
#define GAP_TABLES	64

struct first_seen {
	size_t n;
	const char *table[GAP_TABLES];
	uint32_t seq[GAP_TABLES];
};

/* The first seq received of table, UINT32_MAX if none, 0 if not tracked. */
static uint32_t first_of(const struct first_seen *fs, const char *table)
{
	for (size_t i = 0; i < fs->n; i++)
		if (!strcmp(fs->table[i], table))
			return fs->seq[i];
	return fs->n == GAP_TABLES ? 0 : UINT32_MAX;
}

/*
 * Results a..z of a run are missing; prev and next are the results
 * received around them (NULL: none). A table's rows are numbered apart,
 * so some of the missing rows can be named by table and row: all of them
 * when both neighbours are of one table with exactly that many rows
 * between; the first rows of next's table when none of that table came
 * earlier. At the end of the run, beyond stands in for next: the run's
 * end record says the table and row of its last result (beyond->table,
 * beyond->table_row one past it).
 */
static void print_gap(FILE *f, const struct first_seen *fs, uint32_t a, uint32_t z,
		      const struct bp_record_bench *prev, const struct bp_record_bench *next,
		      const struct bp_record_bench *beyond, bool cpu_col)
{
	char pl[160], nl[160], rows[96] = "";
	uint32_t k = z - a + 1, named = 0;
	const struct bp_record_bench *after = next ? next : beyond;

	if (prev)
		row_label(prev, cpu_col, pl, sizeof(pl));
	if (next)
		row_label(next, cpu_col, nl, sizeof(nl));
	if (prev && after && !strcmp(prev->table, after->table) && prev->table_row &&
	    after->table_row == prev->table_row + k + 1)
		rows_of(prev->table, prev->table_row + 1, after->table_row - 1, rows, sizeof(rows)),
		named = k;
	else if (after && after->table_row > 1 && after->table_row - 1 <= k &&
		 (!prev || strcmp(prev->table, after->table)) && first_of(fs, after->table) >= a)
		rows_of(after->table, 1, after->table_row - 1, rows, sizeof(rows)),
		named = after->table_row - 1;
	fprintf(f, "    result%s %" PRIu32, k > 1 ? "s" : "", a);
	if (k > 1)
		fprintf(f, "-%" PRIu32, z);
	if (rows[0])
		fprintf(f, " (%s%s)", named < k ? "with " : "", rows);
	if (prev && next)
		fprintf(f, ": between %s and %s\n", pl, nl);
	else if (prev)
		fprintf(f, ": after %s, the last received\n", pl);
	else if (next)
		fprintf(f, ": before %s, the first received\n", nl);
	else
		fprintf(f, ": every result of the run\n");
}

/*
 * One app run: its numbered records idx[0..n) in seq order (may be
 * none), its BENCH_END records ends[0..ne). Returns how many are missing.
 */
static uint64_t run_missing(FILE *f, const struct session *s, uint32_t app, const size_t *idx,
			    size_t n, const size_t *ends, size_t ne, bool cpu_col, uint64_t ring_lost)
{
	static struct first_seen fs;
	static struct bp_record_bench beyond;
	uint32_t total = 0, end_lost = 0, last = n ? s->benches[idx[n - 1]].seq : 0, got = 0;
	const struct bp_record_bench_end *end = NULL;

	for (size_t k = 0; k < ne; k++) {
		const struct bp_record_bench_end *e = &s->bench_ends[ends[k]];
		if (!end || e->results > end->results)
			end = e;
		total = e->results > total ? e->results : total;
		end_lost += e->lost;
	}
	if (!ne)
		total = last;
	fs.n = 0;
	for (size_t k = 0; k < n; k++) {
		const struct bp_record_bench *b = &s->benches[idx[k]];
		if (k && b->seq == s->benches[idx[k - 1]].seq)
			continue;			/* a duplicate */
		got += b->seq <= total;
		if (fs.n < GAP_TABLES && first_of(&fs, b->table) == UINT32_MAX) {
			fs.table[fs.n] = b->table;
			fs.seq[fs.n++] = b->seq;
		}
	}
	if (got == total) {
		/* complete as far as anyone can tell; the end may be unknown */
		if (!ne && ring_lost)
			fprintf(f, "\n  app run %" PRIu32 ": no BENCH_END record arrived: results "
				"after the last (%" PRIu32 ") would not show as missing\n", app, last);
		return 0;
	}
	fprintf(f, "\n  missing: %" PRIu32 " of %" PRIu32 " BENCH results of app run %" PRIu32
		" never arrived\n  (", total - got, total, app);
	if (ne)
		fprintf(f, "the harness found no room for %" PRIu32 " of them", end_lost);
	else
		fprintf(f, "no BENCH_END record: later ones would not show");
	fprintf(f, "; the LOST records count %" PRIu64 " dropped records in all):\n", ring_lost);
	uint64_t want = 1;		/* 64 bits: seq may be UINT32_MAX */
	const struct bp_record_bench *prev = NULL;
	for (size_t k = 0; k < n; k++) {
		const struct bp_record_bench *b = &s->benches[idx[k]];
		if (b->seq < want || b->seq > total)
			continue;	/* a duplicate, or beyond the end record's count */
		if (b->seq > want)
			print_gap(f, &fs, (uint32_t)want, b->seq - 1, prev, b, NULL, cpu_col);
		want = (uint64_t)b->seq + 1;
		prev = b;
	}
	if (want <= total) {
		/* the end record's last result, as a row one past it */
		bool known = end && end->last_row && end->last_row < UINT32_MAX;
		if (known) {
			memset(&beyond, 0, sizeof(beyond));
			memcpy(beyond.table, end->last_table, sizeof(beyond.table));
			beyond.table_row = end->last_row + 1;
		}
		print_gap(f, &fs, (uint32_t)want, total, prev, NULL, known ? &beyond : NULL,
			  cpu_col);
	}
	if (!ne)
		fprintf(f, "    (no BENCH_END record arrived: results after the last one "
			"received would not show here)\n");
	return total - got;
}

int stat_bench_missing(FILE *f, const struct session *s)
{
	bool cpu_col = stat_bench_multi_cpu(s);
	uint64_t ring_lost = 0, missing = 0;
	size_t *idx = malloc((s->nbenches + 1) * sizeof(*idx));
	size_t *ends = malloc((s->nbench_ends + 1) * sizeof(*ends));
	size_t n = 0, i = 0, e = 0;

	if (!idx || !ends) {
		free(idx);
		free(ends);
		return -1;
	}
	for (uint32_t c = 0; c < SESSION_MAX_CPUS; c++)
		ring_lost += s->loss.ring_lost[c];
	/* Records from before version 1 carry no numbers: nothing to claim. */
	for (size_t k = 0; k < s->nbenches; k++)
		if (s->benches[k].seq)
			idx[n++] = k;
	for (size_t k = 0; k < s->nbench_ends; k++)
		ends[k] = k;
	seq_s = s;
	qsort(idx, n, sizeof(*idx), cmp_app_seq);
	qsort(ends, s->nbench_ends, sizeof(*ends), cmp_end_app);
	/* Walk both, one app run at a time, in app id order. */
	while (i < n || e < s->nbench_ends) {
		uint32_t app = i < n ? s->benches[idx[i]].app_id : UINT32_MAX;
		if (e < s->nbench_ends && s->bench_ends[ends[e]].app_id < app)
			app = s->bench_ends[ends[e]].app_id;
		size_t i0 = i, e0 = e;
		while (i < n && s->benches[idx[i]].app_id == app)
			i++;
		while (e < s->nbench_ends && s->bench_ends[ends[e]].app_id == app)
			e++;
		missing += run_missing(f, s, app, idx + i0, i - i0, ends + e0, e - e0, cpu_col,
				       ring_lost);
	}
	free(idx);
	free(ends);
	return missing > INT32_MAX ? INT32_MAX : (int)missing;
}

/* Records by table name, then stream order. */
static int cmp_table(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int c = strcmp(seq_s->benches[i].table, seq_s->benches[j].table);

	return c ? c : i < j ? -1 : i > j;
}

/* Tables by their first record. */
static const size_t *grp_idx;

static int cmp_group(const void *a, const void *b)
{
	size_t x = grp_idx[*(const size_t *)a], y = grp_idx[*(const size_t *)b];

	return x < y ? -1 : x > y;
}

int stat_bench_print(FILE *f, const struct session *s, int agg)
{
	bool cpu_col = stat_bench_multi_cpu(s);
	unsigned aggs = 0;
	int n = 0;
	size_t *idx = malloc((s->nbenches + 1) * sizeof(*idx));
	size_t *grp = malloc((s->nbenches + 1) * sizeof(*grp)), ngrp = 0;

	if (!idx || !grp) {
		free(idx);
		free(grp);
		return 0;
	}
	/* One table per name, in the order the names first appear: sorted
	 * by name (stable), each group starts at its first record. */
	for (size_t i = 0; i < s->nbenches; i++)
		idx[i] = i;
	seq_s = s;
	qsort(idx, s->nbenches, sizeof(*idx), cmp_table);
	for (size_t i = 0; i < s->nbenches; i++)
		if (!i || strcmp(s->benches[idx[i]].table, s->benches[idx[i - 1]].table))
			grp[ngrp++] = i;
	grp_idx = idx;
	qsort(grp, ngrp, sizeof(*grp), cmp_group);
	for (size_t g = 0; g < ngrp; g++) {
		size_t a = grp[g], z = a + 1;
		while (z < s->nbenches && !strcmp(s->benches[idx[z]].table, s->benches[idx[a]].table))
			z++;
		print_table(f, s, idx + a, z - a, cpu_col, agg, &aggs);
		n++;
	}
	free(idx);
	free(grp);
	if (n) {
		fprintf(f, "\n  (per unit of work, nanoBench's value: the");
		for (unsigned a = 0, k = 0; a <= BP_BENCH_AGG_AVG; a++)
			if (aggs & (1u << a))
				fprintf(f, "%s %s", k++ ? " or" : "",
					a == BP_BENCH_AGG_AVG ? "avg (mean of the middle 60%)"
							      : bench_agg_name(a));
		fprintf(f, " of the 2n-runs\n"
			"  less that of the n-runs (headed A:2n-n: a difference of two aggregates, so\n"
			"  min:2n-n may exceed median:2n-n); --agg median|min|avg chooses; iqr:\n"
			"  interquartile range of the per-repetition differences m(2n)_i - m(n)_i;\n"
			"  \"< F\": below the noise floor F = iqr + one count per unit of work, not a\n"
			"  result; \"? V\": most repetitions kept an NMI, not a result either; exact:\n"
			"  every repetition counted the same)\n");
		for (size_t i = 0; i < s->nbenches; i++)
			if (s->benches[i].flags & BP_BENCH_F_CPUID_SERIALIZED) {
				fprintf(f, "  (cpuid-serialized: %s)\n", bench_cpuid_note);
				break;
			}
	}
	stat_bench_missing(f, s);
	return n;
}
