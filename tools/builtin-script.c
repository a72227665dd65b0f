/*
 * tools/builtin-script.c — `bareperf script`: every record of a capture in stream
 * order, one line each, for scripts: text (perf script's shape), CSV with
 * a header row, or JSON Lines (one object per line).
 */
#define _GNU_SOURCE
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/cli.h"
#include "tools/commands.h"
#include "tools/util/header.h"
#include "tools/util/hist.h"
#include "tools/util/trace/trace.h"

enum fmt { FMT_TEXT, FMT_CSV, FMT_JSON };

struct ctx {
	const struct session *s;
	const struct symtab *t;		/* NULL: --no-symbols */
	enum fmt fmt;
	bool chains;			/* -g: perf script's layout, call chains */
	FILE *f;
	size_t nseg;			/* -g: the kernel's executable segments */
	uint64_t seg_lo[16], seg_hi[16];
	unsigned fields;		/* -g, -F: perf script's fields (PF_*) */
	bool ns;			/* --ns: perf's layout's times to the nanosecond */
	struct report_filter time;	/* --time: the samples shown */
};

/* A record's fixed layout, zero-filled beyond what arrived. */
static void fixed(void *dst, size_t n, const struct bp_record_header *h)
{
	memset(dst, 0, n);
	memcpy(dst, h, h->size < n ? h->size : n);
}

/* Fixed-size NUL-padded text as a C string. */
static const char *text(const char *src, size_t n, char *buf)
{
	memcpy(buf, src, n);
	buf[n] = 0;
	return buf;
}

/* JSON/CSV-safe copy of s (our names: no quotes expected, but be exact). */
static void put_str(FILE *f, enum fmt fmt, const char *s)
{
	if (fmt == FMT_JSON) {
		fputc('"', f);
		for (; *s; s++) {
			unsigned char c = (unsigned char)*s;
			if (c == '"' || c == '\\')
				fprintf(f, "\\%c", c);
			else if (c < 0x20)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
		fputc('"', f);
	} else if (fmt == FMT_CSV && strpbrk(s, ",\"\n")) {
		fputc('"', f);
		for (; *s; s++) {
			if (*s == '"')
				fputc('"', f);
			fputc(*s, f);
		}
		fputc('"', f);
	} else {
		fputs(s, f);
	}
}

static const char *app_name(const struct session *s, uint32_t pid)
{
	for (size_t i = 0; i < s->napps; i++)
		if (s->apps[i].app_id == pid)
			return s->apps[i].name;
	return "?";
}

/* "name+0x1c" or "[unknown]" into buf. */
static const char *symbolize(const struct ctx *c, uint64_t addr, char *buf, size_t n)
{
	struct symbol sym;

	if (!c->t) {
		snprintf(buf, n, "%s", "");
		return buf;
	}
	sym = symtab_lookup(c->t, addr);
	if (sym.name)
		snprintf(buf, n, "%s+0x%" PRIx64, sym.name, addr - sym.start);
	else
		snprintf(buf, n, "[unknown]");
	return buf;
}

static void sample(const struct ctx *c, uint32_t cpu, const struct bp_record_header *h)
{
	const struct session *s = c->s;
	struct bp_sample_rec r;
	const uint8_t *chain;
	char sym[256], en[64];
	FILE *f = c->f;

	if (session_parse_sample(s, cpu, h, &r, &chain)) {
		if (c->fmt == FMT_JSON)
			fprintf(f, "{\"type\":\"SAMPLE\",\"cpu\":%u,\"unreadable\":true}\n", cpu);
		else if (c->fmt == FMT_CSV)
			fprintf(f, "SAMPLE,%u,,,,,,,,,,unreadable\n", cpu);
		else
			fprintf(f, "%16s [%03u] %16s  SAMPLE (unreadable: no EVENT_DESC, or malformed)\n",
				"", cpu, "");
		return;
	}
	if (!report_time_in(&c->time, s, r.time))
		return;
	uint64_t ns = session_tsc_to_ns(s, r.time);
	const char *ev = session_event_name(s, r.id, en, sizeof(en));
	symbolize(c, r.ip, sym, sizeof(sym));
	if (c->fmt == FMT_TEXT) {
		fprintf(f, "%16s %5u [%03u] %6" PRIu64 ".%09" PRIu64 ": %10" PRIu64 " %s: %16" PRIx64
			" %s\n", app_name(s, r.pid), r.tid, r.cpu, ns / 1000000000u, ns % 1000000000u,
			r.period, ev, r.ip, sym);
		return;
	}
	if (c->fmt == FMT_CSV) {
		fprintf(f, "SAMPLE,%u,%" PRIu64 ",%" PRIu64 ",", r.cpu, ns, r.time);
		put_str(f, c->fmt, ev);
		fprintf(f, ",%" PRIu64 ",0x%" PRIx64 ",", r.period, r.ip);
		put_str(f, c->fmt, sym);
		fprintf(f, ",%u,%u,", r.pid, r.tid);
		for (uint32_t i = 0; i < r.nr_ips; i++) {
			uint64_t a;
			memcpy(&a, chain + 8 * i, 8);
			fprintf(f, "%s0x%" PRIx64, i ? ";" : "", a);
		}
		fprintf(f, ",\n");
		return;
	}
	fprintf(f, "{\"type\":\"SAMPLE\",\"cpu\":%u,\"time_ns\":%" PRIu64 ",\"tsc\":%" PRIu64
		",\"event\":", r.cpu, ns, r.time);
	put_str(f, c->fmt, ev);
	fprintf(f, ",\"period\":%" PRIu64 ",\"ip\":\"0x%" PRIx64 "\",\"sym\":", r.period, r.ip);
	put_str(f, c->fmt, sym);
	fprintf(f, ",\"pid\":%u,\"tid\":%u,\"misc\":%u", r.pid, r.tid, r.misc);
	if (r.nr_ips) {
		uint64_t prev = 0;
		fprintf(f, ",\"callchain\":[");
		for (uint32_t i = 0; i < r.nr_ips; i++) {
			uint64_t a;
			memcpy(&a, chain + 8 * i, 8);
			symbolize(c, symtab_chain_addr(c->t, i, prev, a), sym, sizeof(sym));
			prev = a;
			fprintf(f, "%s{\"ip\":\"0x%" PRIx64 "\",\"sym\":", i ? "," : "", a);
			put_str(f, c->fmt, sym);
			fputc('}', f);
		}
		fputc(']', f);
	}
	fprintf(f, "}\n");
}

/*
 * -g and -F: perf script's own layout, so what reads perf script reads
 * this (FlameGraph's stackcollapse-perf.pl, speedscope's perf importer):
 * the samples in time order, each "comm tid [cpu] sec.usec: period event:"
 * (the fields -F picks), then one "\t%16x sym+off (dso)" line per frame
 * (srcline on a line of its own) and a blank line, or, when no sample has
 * a chain, the frame on the same line (perf's builtin-script.c,
 * perf_sample__fprintf_start, process_event and the callchain printer).
 * The kernel is [kernel.kallsyms], as in the perf.data that convert
 * writes; frames are looked up at their address, as perf does.
 */
enum {
	PF_COMM = 1 << 0, PF_TID = 1 << 1, PF_PID = 1 << 2, PF_CPU = 1 << 3, PF_TIME = 1 << 4,
	PF_PERIOD = 1 << 5, PF_EVENT = 1 << 6, PF_IP = 1 << 7, PF_SYM = 1 << 8,
	PF_SYMOFF = 1 << 9, PF_DSO = 1 << 10, PF_SRCLINE = 1 << 11,
	PF_DEFAULT = PF_COMM | PF_TID | PF_CPU | PF_TIME | PF_PERIOD | PF_EVENT | PF_IP | PF_SYM |
		     PF_SYMOFF | PF_DSO,
};

static const struct { const char *name; unsigned bit; } perf_fields[] = {
	{ "comm", PF_COMM }, { "tid", PF_TID }, { "pid", PF_PID }, { "cpu", PF_CPU },
	{ "time", PF_TIME }, { "period", PF_PERIOD }, { "event", PF_EVENT }, { "ip", PF_IP },
	{ "sym", PF_SYM }, { "symoff", PF_SYMOFF }, { "dso", PF_DSO }, { "srcline", PF_SRCLINE },
};

/*
 * perf script -F's list: the fields, or, when every word starts with + or
 * -, the default fields with those added or removed (perf's -F +srcline,
 * -F -cpu,+period; the two forms do not mix). 0 and a line on stderr for
 * an unknown field.
 */
static unsigned parse_perf_fields(const char *list)
{
	bool edit = *list == '+' || *list == '-';
	unsigned bits = edit ? PF_DEFAULT : 0;

	while (*list) {
		size_t n = strcspn(list, ","), i;
		char op = *list == '+' || *list == '-' ? *list : 0;
		if (!op != !edit) {
			fprintf(stderr, "bareperf script: -F: '%.*s': adding or removing fields (+f, -f)"
				" does not mix with naming them\n", (int)n, list);
			return 0;
		}
		list += !!op, n -= !!op;
		for (i = 0; i < sizeof(perf_fields) / sizeof(perf_fields[0]); i++)
			if (strlen(perf_fields[i].name) == n && !strncmp(perf_fields[i].name, list, n))
				break;
		if (i == sizeof(perf_fields) / sizeof(perf_fields[0])) {
			fprintf(stderr, "bareperf script: -F: '%.*s' is not a field (comm, tid, pid, "
				"cpu, time, period, event, ip, sym, symoff, dso, srcline)\n", (int)n, list);
			return 0;
		}
		if (op == '-')
			bits &= ~perf_fields[i].bit;
		else
			bits |= perf_fields[i].bit;
		list += n + (list[n] == ',');
	}
	if (!bits)
		fprintf(stderr, "bareperf script: -F: no field given\n");
	return bits;
}

static void perf_frame(const struct ctx *c, uint64_t a, char sep)
{
	struct symbol sym = c->t ? symtab_lookup(c->t, a) : (struct symbol){ 0 };
	bool kernel = false;
	unsigned f = c->fields;
	const char *file;
	int line;

	for (size_t i = 0; i < c->nseg && !kernel; i++)
		kernel = a >= c->seg_lo[i] && a < c->seg_hi[i];
	if (f & PF_IP)
		fprintf(c->f, "%c%16" PRIx64, sep, a);
	if (f & (PF_SYM | PF_SYMOFF)) {
		fputc(' ', c->f);
		if (!sym.name)
			fputs("[unknown]", c->f);
		else if (f & PF_SYMOFF)
			fprintf(c->f, "%s+0x%" PRIx64, sym.name, a - sym.start);
		else
			fputs(sym.name, c->f);
	}
	if (f & PF_DSO) {
		const char *prog = symtab_dso(c->t, a);
		fprintf(c->f, " (%s)", prog ? prog : kernel ? "[kernel.kallsyms]" : "[unknown]");
	}
	/* perf's srcline: the file's base name; nothing when there is no line */
	if ((f & PF_SRCLINE) && c->t && symtab_line(c->t, a, &file, &line)) {
		const char *b = strrchr(file, '/');
		fprintf(c->f, "\n  %s:%d", b ? b + 1 : file, line);
	}
}

static void perf_samples(struct ctx *c)
{
	const struct session *s = c->s;
	bool chains = false;
	unsigned f = c->fields;
	char en[64];

	if (c->t) {
		uint64_t v[16], sz[16], off[16];
		c->nseg = symtab_exec_segments(c->t, v, sz, off, 16);
		for (size_t i = 0; i < c->nseg; i++)
			c->seg_lo[i] = v[i], c->seg_hi[i] = v[i] + sz[i];
	}
	for (size_t i = 0; i < s->nsamples && !chains; i++)
		chains = s->samples[i].nr_ips > 0;
	for (size_t i = 0; i < s->nsamples; i++) {
		const struct bp_sample_rec *r = &s->samples[i];
		uint64_t ns = session_tsc_to_ns(s, r->time);
		if (!report_time_in(&c->time, s, r->time))
			continue;
		if (f & PF_COMM)
			fprintf(c->f, chains ? "%s " : "%16s ", app_name(s, r->pid));
		if ((f & PF_PID) && (f & PF_TID))
			fprintf(c->f, "%5u/%-5u ", r->pid, r->pid);
		else if (f & (PF_PID | PF_TID))
			fprintf(c->f, "%5u ", r->pid);
		if (f & PF_CPU)
			fprintf(c->f, "[%03u] ", r->cpu);
		if ((f & PF_TIME) && c->ns)
			fprintf(c->f, "%5" PRIu64 ".%09" PRIu64 ": ", ns / 1000000000u,
				ns % 1000000000u);
		else if (f & PF_TIME)
			fprintf(c->f, "%5" PRIu64 ".%06" PRIu64 ": ", ns / 1000000000u,
				ns % 1000000000u / 1000u);
		if (f & PF_PERIOD)
			fprintf(c->f, "%10" PRIu64 " ", r->period);
		if (f & PF_EVENT)
			fprintf(c->f, "%s: ", session_event_name(s, r->id, en, sizeof(en)));
		if (!(f & (PF_IP | PF_SYM | PF_SYMOFF | PF_DSO | PF_SRCLINE))) {
			fputc('\n', c->f);
			continue;
		}
		if (!chains) {
			perf_frame(c, r->ip, ' ');
			fputc('\n', c->f);
			continue;
		}
		fputc('\n', c->f);
		if (!r->nr_ips) {
			perf_frame(c, r->ip, '\t');
			fputc('\n', c->f);
		}
		for (uint32_t k = 0; k < r->nr_ips; k++) {
			perf_frame(c, s->ips[r->ips_off + k], '\t');
			fputc('\n', c->f);
		}
		fputc('\n', c->f);
	}
}

/*
 * Any other record: its fields as "key=value" words (text), the detail
 * column (CSV), or members (JSON). A record's words: up to 14 pairs,
 * and its time when it carries one.
 */
struct kv {
	const char *k;
	uint64_t v;
	const char *str;		/* not NULL: a text value */
	bool hex;
	bool sgn;			/* v is an int64_t */
};

struct words {
	const struct session *s;
	struct kv kv[14];
	int n;
	uint64_t tsc;
	bool have_time;
	char b1[72], b2[24], brand[52], list[512];	/* the text values */
};

static void kv_u(struct words *w, const char *k, uint64_t v)
{
	w->kv[w->n++] = (struct kv){ k, v, NULL, false, false };
}

static void kv_x(struct words *w, const char *k, uint64_t v)
{
	w->kv[w->n++] = (struct kv){ k, v, NULL, true, false };
}

static void kv_s(struct words *w, const char *k, const char *str)
{
	w->kv[w->n++] = (struct kv){ k, 0, str, false, false };
}

static void kv_i(struct words *w, const char *k, int64_t v)
{
	w->kv[w->n++] = (struct kv){ k, (uint64_t)v, NULL, false, true };
}

static void at_time(struct words *w, uint64_t tsc)
{
	w->tsc = tsc;
	w->have_time = true;
}

/* ---- one printer per record type ------------------------------------------ */

static void lost_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_lost r;

	fixed(&r, sizeof(r), h);
	kv_u(w, "id", r.id);
	kv_u(w, "lost", r.lost);
}

static void throttle_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_throttle r;

	fixed(&r, sizeof(r), h);
	at_time(w, r.time);
	kv_u(w, "id", r.id);
	kv_u(w, "stream_id", r.stream_id);
}

static void aux_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_aux r;

	fixed(&r, sizeof(r), h);
	kv_x(w, "aux_offset", r.aux_offset);
	kv_u(w, "aux_size", r.aux_size);
	kv_x(w, "flags", r.flags);
}

static void itrace_start_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_itrace_start r;

	fixed(&r, sizeof(r), h);
	kv_u(w, "pid", r.pid);
	kv_u(w, "tid", r.tid);
}

static void lost_samples_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_lost_samples r;

	fixed(&r, sizeof(r), h);
	kv_u(w, "lost", r.lost);
}

static void ticks_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_ticks r;

	fixed(&r, sizeof(r), h);
	kv_u(w, "due", r.due);
	kv_u(w, "samples", r.samples);
	kv_u(w, "dropped", r.dropped);
	kv_u(w, "lost", r.lost);
	kv_u(w, "throttled", r.throttled);
	kv_u(w, "period", r.period);
	kv_u(w, "window", r.window);
	kv_u(w, "hpet_hz", r.hpet_hz);
}

static void run_meta_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_run_meta r;

	fixed(&r, sizeof(r), h);
	at_time(w, r.start_tsc);
	kv_u(w, "run_id", r.run_id);
	kv_u(w, "nr_cpus", r.nr_cpus);
	kv_u(w, "tsc_hz", r.tsc_hz);
	kv_x(w, "flags", r.flags);
	kv_u(w, "time_mult", r.time_mult);
	kv_u(w, "time_shift", r.time_shift);
	kv_s(w, "build_id", symtab_hex(r.build_id, sizeof(r.build_id), w->b1, sizeof(w->b1)));
}

static void cpu_info_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_cpu_info r;

	fixed(&r, sizeof(r), h);
	kv_u(w, "apic_id", r.apic_id);
	kv_s(w, "vendor", text(r.vendor_string, sizeof(r.vendor_string), w->b2));
	kv_u(w, "family", r.family);
	kv_u(w, "model", r.model);
	kv_u(w, "stepping", r.stepping);
	kv_s(w, "brand", text(r.brand, sizeof(r.brand), w->brand));
}

static void pmu_caps_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_pmu_caps r;

	fixed(&r, sizeof(r), h);
	kv_u(w, "kind", r.kind);
	kv_u(w, "version", r.version);
	kv_u(w, "nr_gp", r.nr_gp);
	kv_u(w, "nr_fixed", r.nr_fixed);
	kv_u(w, "gp_width", r.gp_width);
	kv_u(w, "fixed_width", r.fixed_width);
	kv_x(w, "flags", r.flags);
}

static void event_desc_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_event_desc r;

	fixed(&r, sizeof(r), h);
	kv_u(w, "id", r.id);
	kv_s(w, "name", text(r.name, sizeof(r.name) - 1, w->b1));
	kv_x(w, "config", r.config);
	kv_x(w, "sample_type", r.sample_type);
	kv_u(w, "sample_period", r.sample_period);
	kv_u(w, "counter", r.counter);
}

static void app_start_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_app_start r;

	fixed(&r, sizeof(r), h);
	at_time(w, r.time);
	kv_u(w, "app_id", r.app_id);
	kv_s(w, "name", text(r.name, sizeof(r.name) - 1, w->b1));
	if (r.main_cpu)		/* the CPU that runs the app, plus one */
		kv_u(w, "main_cpu", r.main_cpu - 1);
	kv_x(w, "text_start", r.text_start);
	kv_x(w, "text_end", r.text_end);
}

static void app_stop_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_app_stop r;

	fixed(&r, sizeof(r), h);
	at_time(w, r.time);
	kv_u(w, "app_id", r.app_id);
	kv_i(w, "status", r.status);
	kv_u(w, "iterations", r.iterations);
}

static void counts_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_counts r;
	size_t len = 0;

	fixed(&r, sizeof(r), h);
	kv_u(w, "app_id", r.app_id);
	kv_u(w, "cpu", r.cpu);
	/* name=count/time_enabled/time_running for each entry */
	w->list[0] = 0;
	for (uint64_t i = 0; i < r.nr && (i + 1) * 32 + sizeof(r) <= h->size &&
			     len < sizeof(w->list); i++) {
		struct bp_count_entry e;
		char nb[32];
		memcpy(&e, (const uint8_t *)h + sizeof(r) + i * sizeof(e), sizeof(e));
		len += (size_t)snprintf(w->list + len, sizeof(w->list) - len,
					"%s%s=%" PRIu64 "/%" PRIu64 "/%" PRIu64, i ? " " : "",
					session_event_name(w->s, e.id, nb, sizeof(nb)), e.count,
					e.time_enabled, e.time_running);
	}
	kv_s(w, "counts", w->list);
}

static void bench_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_bench r;

	fixed(&r, sizeof(r), h);
	at_time(w, r.time);
	r.table[sizeof(r.table) - 1] = r.name[sizeof(r.name) - 1] = 0;
	r.event[sizeof(r.event) - 1] = 0;
	snprintf(w->list, sizeof(w->list), "%s/%s/%s", r.table, r.name, r.event);
	kv_s(w, "bench", w->list);
	kv_u(w, "param", r.param);
	kv_i(w, "median_x1000", r.median);
	kv_i(w, "min_x1000", r.min);
	kv_u(w, "n_reps", r.n_reps);
	if (r.bench_version >= 1) {
		kv_i(w, "avg_x1000", r.trimmed_mean);
		kv_u(w, "iqr_x1000", r.iqr);
		kv_u(w, "seq", r.seq);
		kv_u(w, "table_row", r.table_row);
	}
}

static void bench_end_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_bench_end r;

	fixed(&r, sizeof(r), h);
	kv_u(w, "app_id", r.app_id);
	kv_u(w, "results", r.results);
	kv_u(w, "lost", r.lost);
}

/* PROGRAM: the program, its build-id and range; each section as
 * shndx@addr+size (x executable, w writable). */
static void program_words(struct words *w, const struct bp_record_header *h)
{
	struct bp_record_program r;
	size_t len = 0;

	fixed(&r, sizeof(r), h);
	r.name[sizeof(r.name) - 1] = 0;
	snprintf(w->brand, sizeof(w->brand), "%s", r.name);
	kv_s(w, "name", w->brand);
	kv_s(w, "build_id", symtab_hex(r.build_id, r.build_id_len < sizeof(r.build_id) ?
				       r.build_id_len : sizeof(r.build_id), w->b1, sizeof(w->b1)));
	kv_x(w, "start", r.start);
	kv_x(w, "end", r.end);
	w->list[0] = 0;
	for (uint32_t i = 0; i < r.nr && sizeof(r) + (i + 1) * sizeof(struct bp_program_section) <=
					 h->size && len < sizeof(w->list); i++) {
		struct bp_program_section e;
		memcpy(&e, (const uint8_t *)h + sizeof(r) + i * sizeof(e), sizeof(e));
		len += (size_t)snprintf(w->list + len, sizeof(w->list) - len,
					"%s%u@0x%" PRIx64 "+0x%" PRIx64 "%s%s", i ? " " : "", e.shndx,
					e.addr, e.size, e.flags & BP_PROGRAM_SEC_EXEC ? "x" : "",
					e.flags & BP_PROGRAM_SEC_WRITE ? "w" : "");
	}
	kv_s(w, "sections", w->list);
}

/* A record of a type without a printer: its header. */
static void header_words(struct words *w, const struct bp_record_header *h)
{
	kv_u(w, "size", h->size);
	kv_x(w, "misc", h->misc);
}

/* The record types: each one's name, and what prints it (SAMPLE: sample()). */
static const struct record_type {
	uint32_t type;
	const char *name;
	void (*words)(struct words *w, const struct bp_record_header *h);
} record_types[] = {
	{ BP_RECORD_LOST,		"LOST",		lost_words },
	{ BP_RECORD_THROTTLE,		"THROTTLE",	throttle_words },
	{ BP_RECORD_UNTHROTTLE,		"UNTHROTTLE",	throttle_words },
	{ BP_RECORD_SAMPLE,		"SAMPLE",	header_words },
	{ BP_RECORD_AUX,		"AUX",		aux_words },
	{ BP_RECORD_ITRACE_START,	"ITRACE_START",	itrace_start_words },
	{ BP_RECORD_LOST_SAMPLES,	"LOST_SAMPLES",	lost_samples_words },
	{ BP_RECORD_RUN_META,		"RUN_META",	run_meta_words },
	{ BP_RECORD_CPU_INFO,		"CPU_INFO",	cpu_info_words },
	{ BP_RECORD_PMU_CAPS,		"PMU_CAPS",	pmu_caps_words },
	{ BP_RECORD_EVENT_DESC,		"EVENT_DESC",	event_desc_words },
	{ BP_RECORD_APP_START,		"APP_START",	app_start_words },
	{ BP_RECORD_APP_STOP,		"APP_STOP",	app_stop_words },
	{ BP_RECORD_COUNTS,		"COUNTS",	counts_words },
	{ BP_RECORD_BENCH,		"BENCH",	bench_words },
	{ BP_RECORD_TICKS,		"TICKS",	ticks_words },
	{ BP_RECORD_BENCH_END,		"BENCH_END",	bench_end_words },
	{ BP_RECORD_PROGRAM,		"PROGRAM",	program_words },
};

static const struct record_type *record_type(uint32_t type)
{
	for (size_t i = 0; i < sizeof(record_types) / sizeof(record_types[0]); i++)
		if (record_types[i].type == type)
			return &record_types[i];
	return NULL;
}

/* ---- the words, in each format -------------------------------------------- */

static void words_text(FILE *f, uint32_t cpu, const char *tn, const struct words *w, uint64_t ns)
{
	if (w->have_time)
		fprintf(f, "%16s       [%03u] %6" PRIu64 ".%09" PRIu64 ": %s", "", cpu,
			ns / 1000000000u, ns % 1000000000u, tn);
	else
		fprintf(f, "%16s       [%03u] %16s: %s", "", cpu, "", tn);
	for (int i = 0; i < w->n; i++) {
		const struct kv *kv = &w->kv[i];
		if (kv->str)
			fprintf(f, " %s=\"%s\"", kv->k, kv->str);
		else if (kv->sgn)
			fprintf(f, " %s=%" PRId64, kv->k, (int64_t)kv->v);
		else
			fprintf(f, kv->hex ? " %s=0x%" PRIx64 : " %s=%" PRIu64, kv->k, kv->v);
	}
	fputc('\n', f);
}

static void words_csv(FILE *f, uint32_t cpu, const char *tn, const struct words *w, uint64_t ns)
{
	char detail[1024];
	size_t len = 0;

	fprintf(f, "%s,%u,", tn, cpu);
	if (w->have_time)
		fprintf(f, "%" PRIu64 ",%" PRIu64, ns, w->tsc);
	else
		fputc(',', f);
	fprintf(f, ",,,,,,,,");
	/* detail: key=value words separated by spaces, quoted as a field */
	for (int i = 0; i < w->n && len < sizeof(detail); i++) {
		const struct kv *kv = &w->kv[i];
		if (kv->str)
			len += (size_t)snprintf(detail + len, sizeof(detail) - len, "%s%s=%s",
						i ? " " : "", kv->k, kv->str);
		else if (kv->sgn)
			len += (size_t)snprintf(detail + len, sizeof(detail) - len,
						"%s%s=%" PRId64, i ? " " : "", kv->k, (int64_t)kv->v);
		else
			len += (size_t)snprintf(detail + len, sizeof(detail) - len,
						kv->hex ? "%s%s=0x%" PRIx64 : "%s%s=%" PRIu64,
						i ? " " : "", kv->k, kv->v);
	}
	put_str(f, FMT_CSV, len < sizeof(detail) ? detail : "");
	fputc('\n', f);
}

static void words_json(FILE *f, uint32_t cpu, const char *tn, const struct words *w, uint64_t ns)
{
	fprintf(f, "{\"type\":\"%s\",\"cpu\":%u", tn, cpu);
	if (w->have_time)
		fprintf(f, ",\"time_ns\":%" PRIu64 ",\"tsc\":%" PRIu64, ns, w->tsc);
	for (int i = 0; i < w->n; i++) {
		const struct kv *kv = &w->kv[i];
		fprintf(f, ",\"%s\":", kv->k);
		if (kv->str)
			put_str(f, FMT_JSON, kv->str);
		else if (kv->hex)
			fprintf(f, "\"0x%" PRIx64 "\"", kv->v);
		else if (kv->sgn)
			fprintf(f, "%" PRId64, (int64_t)kv->v);
		else
			fprintf(f, "%" PRIu64, kv->v);
	}
	fprintf(f, "}\n");
}

static void other(const struct ctx *c, uint32_t cpu, const struct bp_record_header *h)
{
	const struct record_type *rt = record_type(h->type);
	struct words w = { .s = c->s };
	char tb[32];
	const char *tn = rt ? rt->name : tb;

	if (!rt)
		snprintf(tb, sizeof(tb), "TYPE_%#x", h->type);
	(rt ? rt->words : header_words)(&w, h);
	uint64_t ns = session_tsc_to_ns(c->s, w.tsc);
	if (c->fmt == FMT_TEXT)
		words_text(c->f, cpu, tn, &w, ns);
	else if (c->fmt == FMT_CSV)
		words_csv(c->f, cpu, tn, &w, ns);
	else
		words_json(c->f, cpu, tn, &w, ns);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bareperf script [-i FILE] [--csv | --json] [options]\n"
		"  every record of a capture in stream order, one line each\n"
		"  -i, --input FILE    capture (default capture.bpc; - reads standard input)\n"
		"  -k, --kernel PATH   kernel.elf for symbols (as bareperf report)\n"
		"      --csv           CSV with a header row: type,cpu,time_ns,tsc,event,period,\n"
		"                      ip,sym,pid,tid,callchain,detail\n"
		"      --json          JSON Lines: one object per record\n"
		"  -g                  the samples in perf script's layout, with their call\n"
		"                      chains (what stackcollapse-perf.pl and speedscope read)\n"
		"  -F, --fields LIST   perf script's layout with these fields: comm, tid, pid,\n"
		"                      cpu, time, period, event, ip, sym, symoff, dso, srcline\n"
		"                      (default comm,tid,cpu,time,period,event,ip,sym,symoff,dso;\n"
		"                      +f,-f: the default with f added or removed, as perf)\n"
		"      --ns            perf's layout: times to the nanosecond (9 decimals)\n"
		"      --time START,STOP  only the samples in this window, seconds.nanoseconds\n"
		"                      since the run's start (perf's format; ,STOP and START,\n"
		"                      too)\n"
		"      --no-symbols    do not load kernel.elf\n"
		"      --force         symbolize even if the kernel's build-id differs\n"
		"      --header        text: the run's metadata first (# lines)\n"
		"      --console       print the console text (boot text and CONSOLE frames) "
		"instead\n"
		"      --aux           the instruction trace (trace=): every executed\n"
		"                      instruction, \"cpu step address symbol+off text\"\n"
		"      --range A-B     with --aux: only instructions in [A, B) (addresses or\n"
		"                      symbol names)\n");
}

int cmd_script(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "csv", no_argument, NULL, 'c' },
		{ "json", no_argument, NULL, 'j' },
		{ "no-symbols", no_argument, NULL, 'N' },
		{ "force", no_argument, NULL, 'f' },
		{ "header", no_argument, NULL, 'H' },
		{ "console", no_argument, NULL, 'C' },
		{ "aux", no_argument, NULL, 'A' },
		{ "range", required_argument, NULL, 'R' },
		{ "fields", required_argument, NULL, 'F' },
		{ "ns", no_argument, NULL, 'n' },
		{ "time", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *input = "capture.bpc", *kernel = NULL, *range = NULL;
	bool nosym = false, force = false, header = false, console = false, aux = false;
	struct ctx c = { .fmt = FMT_TEXT, .f = stdout };
	char err[1024], used[4096], stdin_tmp[4096];
	struct session s;
	struct symtab *t = NULL;
	int ch;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":i:k:gF:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'i': input = optarg; break;
		case 'k': kernel = optarg; break;
		case 'c': c.fmt = FMT_CSV; break;
		case 'j': c.fmt = FMT_JSON; break;
		case 'g': c.chains = true; break;
		case 'N': nosym = true; break;
		case 'f': force = true; break;
		case 'H': header = true; break;
		case 'C': console = true; break;
		case 'A': aux = true; break;
		case 'R': range = optarg; break;
		case 'F':
			if (!(c.fields = parse_perf_fields(optarg)))
				return 2;
			break;
		case 'n': c.ns = true; break;
		case 'T':
			if (report_parse_time(optarg, &c.time, err, sizeof(err))) {
				fprintf(stderr, "bareperf script: --time: %s\n", err);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "bareperf script: %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "bareperf script: unknown option '%s' (bareperf script --help)\n",
				argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bareperf script: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (c.fields && c.fmt != FMT_TEXT) {
		fprintf(stderr, "bareperf script: -F is perf script's text layout, not --csv or --json\n");
		return 2;
	}
	if (c.chains && !c.fields)
		c.fields = PF_DEFAULT;
	if (range && !aux) {
		fprintf(stderr, "bareperf script: --range works with --aux\n");
		return 2;
	}
	if (aux) {
		struct trace_opts to = { .force = force, .cpu = -1 };
		to.kernel_elf = session_kernel_for(input, kernel, used, sizeof(used));
		if (range && trace_opts_set_range(&to, range, err, sizeof(err))) {
			fprintf(stderr, "bareperf script: --range: %s\n", err);
			return 2;
		}
		return trace_script(input, &to, stdout);
	}
	if (cli_input("script", &input, stdin_tmp, sizeof(stdin_tmp)))
		return 1;
	if (session_load_flags(&s, input, console ? SESSION_NO_RECORDS : SESSION_NO_CONSOLE,
			       err, sizeof(err))) {
		cli_input_name(stdin_tmp, "(standard input)", err, sizeof(err));
		fprintf(stderr, "bareperf script: %s\n", err);
		cli_input_done(stdin_tmp);
		return 1;
	}
	cli_input_done(stdin_tmp);
	if (stdin_tmp[0])
		snprintf(s.path, sizeof(s.path), "(standard input)");
	if (console) {
		fwrite(s.console, 1, s.console_len, stdout);
		session_warn(&s, "script");
		session_free(&s);
		return ferror(stdout) ? 1 : 0;
	}
	if (!nosym && session_symtab(&s, kernel, force, &t, used, sizeof(used), err, sizeof(err))) {
		fprintf(stderr, "bareperf script: %s\n", err);
		session_free(&s);
		return 1;
	}
	c.s = &s;
	c.t = t;
	if (header && c.fmt == FMT_TEXT) {
		header_print(stdout, &s, t ? used : NULL, t, "# ");
		session_print_losses(&s, stdout, "# WARNING: ");
	}
	if (c.fields && c.fmt == FMT_TEXT) {
		perf_samples(&c);
		goto done;
	}
	if (c.fmt == FMT_CSV)
		printf("type,cpu,time_ns,tsc,event,period,ip,sym,pid,tid,callchain,detail\n");
	for (size_t i = 0; i < s.nrecords; i++) {
		const struct session_record *r = &s.records[i];
		const struct bp_record_header *h = (const void *)(s.rec_data + r->off);
		if (h->type == BP_RECORD_SAMPLE)
			sample(&c, r->cpu, h);
		else
			other(&c, r->cpu, h);
	}
done:
	session_warn(&s, "script");
	symtab_free(t);
	session_free(&s);
	return ferror(stdout) ? 1 : 0;
}
