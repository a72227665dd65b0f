/*
 * bench_table.c — the harness's console tables: titles, one row per
 * result, and the numbers formatted as they show them.
 */
#include "apps/bench_internal.h"

const char *bench_fmt_x1000(s64 v, char *buf, size_t n)
{
	u64 a = v < 0 ? -(u64)v : (u64)v;

	ksnprintf(buf, n, "%s%lu.%03lu", v < 0 ? "-" : "", a / 1000, a % 1000);
	return buf;
}

const char *bench_fmt_bytes(u64 b, char *buf, size_t n)
{
	if (b >= (1ul << 30) && !(b & ((1ul << 30) - 1)))
		ksnprintf(buf, n, "%lu GiB", b >> 30);
	else if (b >= (1ul << 20) && !(b & ((1ul << 20) - 1)))
		ksnprintf(buf, n, "%lu MiB", b >> 20);
	else if (b >= 1024 && !(b & 1023))
		ksnprintf(buf, n, "%lu KiB", b >> 10);
	else
		ksnprintf(buf, n, "%lu B", b);
	return buf;
}

bool bench_result_trusted(const struct bench_result *r)
{
	return !(r->flags & (BP_BENCH_F_NOISE | BP_BENCH_F_DISTURBED));
}

/* A result as a table shows it: the value, "< floor" when it is below
 * its noise floor (never a negative or sub-noise figure as a result), or
 * "? value" when most repetitions kept an NMI (it may be off either way). */
static const char *fmt_value(const struct bench_result *r, char *buf, size_t n)
{
	char f[24];

	if (r->flags & BP_BENCH_F_NOISE)
		ksnprintf(buf, n, "< %s", bench_fmt_x1000((s64)r->floor, f, sizeof(f)));
	else if (r->flags & BP_BENCH_F_DISTURBED)
		ksnprintf(buf, n, "? %s", bench_fmt_x1000(r->value, f, sizeof(f)));
	else
		bench_fmt_x1000(r->value, buf, n);
	return buf;
}

void bench_table(const char *table, const char *title, const char *param_label,
		 const struct bench_opts *o)
{
	if (o->quiet)
		return;
	kprintf("\n%s: %s\n", table, title);
	kprintf("  %s%-28s %-14s %10s %10s %5s  %s\n", o->cpu_column ? "cpu " : "",
		param_label, "event", bench_agg_name(o->agg), "iqr", "reps", "note");
}

void bench_print_row(const struct bench *b, const struct bench_opts *o,
		      const struct bench_result *r)
{
	char label[48], p[24], v1[24], v2[24], note[112] = "";
	size_t len;

	if (b->param_unit == BP_BENCH_PARAM_BYTES)
		ksnprintf(label, sizeof(label), "%s %s", b->name, bench_fmt_bytes(b->param, p, sizeof(p)));
	else if (b->param_unit == BP_BENCH_PARAM_CPU)
		ksnprintf(label, sizeof(label), "%s cpu %lu", b->name, b->param);
	else if (b->param_unit != BP_BENCH_PARAM_NONE)
		ksnprintf(label, sizeof(label), "%s %lu", b->name, b->param);
	else
		strlcpy(label, b->name, sizeof(label));
	if (r->flags & BP_BENCH_F_EXACT)
		strlcpy(note, "exact", sizeof(note));
	if (r->flags & BP_BENCH_F_NOISE) {
		len = strlen(note);
		ksnprintf(note + len, sizeof(note) - len, "%sbelow noise floor", len ? ", " : "");
	}
	if (r->disturbed) {
		len = strlen(note);
		ksnprintf(note + len, sizeof(note) - len, "%s%u of %u kept an NMI: untrusted",
			  len ? ", " : "", r->disturbed, r->reps);
	}
	if (r->flags & BP_BENCH_F_CPUID_SERIALIZED) {
		len = strlen(note);
		ksnprintf(note + len, sizeof(note) - len, "%sreads serialized by cpuid",
			  len ? ", " : "");
	}
	if (r->dropped) {
		len = strlen(note);
		ksnprintf(note + len, sizeof(note) - len, "%s%u more took an NMI: dropped",
			  len ? ", " : "", r->dropped);
	}
	if (o->cpu_column)
		kprintf("  %3u ", r->cpu);
	else
		kprintf("  ");
	kprintf("%-28s %-14s %10s %10s %5u  %s\n", label, r->event, fmt_value(r, v1, sizeof(v1)),
		bench_fmt_x1000((s64)r->iqr, v2, sizeof(v2)), r->reps, note);
}
