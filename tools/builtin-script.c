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
};

static const char *type_name(uint32_t type, char *buf, size_t n)
{
	switch (type) {
	case BP_RECORD_LOST: return "LOST";
	case BP_RECORD_THROTTLE: return "THROTTLE";
	case BP_RECORD_UNTHROTTLE: return "UNTHROTTLE";
	case BP_RECORD_SAMPLE: return "SAMPLE";
	case BP_RECORD_AUX: return "AUX";
	case BP_RECORD_ITRACE_START: return "ITRACE_START";
	case BP_RECORD_LOST_SAMPLES: return "LOST_SAMPLES";
	case BP_RECORD_RUN_META: return "RUN_META";
	case BP_RECORD_CPU_INFO: return "CPU_INFO";
	case BP_RECORD_PMU_CAPS: return "PMU_CAPS";
	case BP_RECORD_EVENT_DESC: return "EVENT_DESC";
	case BP_RECORD_APP_START: return "APP_START";
	case BP_RECORD_APP_STOP: return "APP_STOP";
	case BP_RECORD_COUNTS: return "COUNTS";
	case BP_RECORD_BENCH: return "BENCH";
	case BP_RECORD_TICKS: return "TICKS";
	case BP_RECORD_BENCH_END: return "BENCH_END";
	default:
		snprintf(buf, n, "TYPE_%#x", type);
		return buf;
	}
}

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
		fprintf(f, ",\"callchain\":[");
		for (uint32_t i = 0; i < r.nr_ips; i++) {
			uint64_t a;
			memcpy(&a, chain + 8 * i, 8);
			symbolize(c, i ? a - 1 : a, sym, sizeof(sym));
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

/* perf script -F's list; 0 and a line on stderr for an unknown field. */
static unsigned parse_perf_fields(const char *list)
{
	unsigned bits = 0;

	while (*list) {
		size_t n = strcspn(list, ","), i;
		for (i = 0; i < sizeof(perf_fields) / sizeof(perf_fields[0]); i++)
			if (strlen(perf_fields[i].name) == n && !strncmp(perf_fields[i].name, list, n))
				break;
		if (i == sizeof(perf_fields) / sizeof(perf_fields[0])) {
			fprintf(stderr, "bareperf script: -F: '%.*s' is not a field (comm, tid, pid, "
				"cpu, time, period, event, ip, sym, symoff, dso, srcline)\n", (int)n, list);
			return 0;
		}
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
	if (f & PF_DSO)
		fprintf(c->f, " (%s)", kernel ? "[kernel.kallsyms]" : "[unknown]");
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
		if (f & PF_COMM)
			fprintf(c->f, chains ? "%s " : "%16s ", app_name(s, r->pid));
		if ((f & PF_PID) && (f & PF_TID))
			fprintf(c->f, "%5u/%-5u ", r->pid, r->pid);
		else if (f & (PF_PID | PF_TID))
			fprintf(c->f, "%5u ", r->pid);
		if (f & PF_CPU)
			fprintf(c->f, "[%03u] ", r->cpu);
		if (f & PF_TIME)
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
 * column (CSV), or members (JSON). kv holds up to 12 pairs; string
 * values are marked by a NULL num.
 */
struct kv {
	const char *k;
	uint64_t v;
	const char *str;		/* not NULL: a text value */
	bool hex;
	bool sgn;			/* v is an int64_t */
};

static void other(const struct ctx *c, uint32_t cpu, const struct bp_record_header *h)
{
	const struct session *s = c->s;
	struct kv kv[14];
	int n = 0;
	uint64_t tsc = 0;
	bool have_time = false;
	char tb[32], b1[72], b2[24], brand[52], list[512];
	const char *tn = type_name(h->type, tb, sizeof(tb));
	FILE *f = c->f;

#define KV(key, val) (kv[n++] = (struct kv){ key, (val), NULL, false, false })
#define KX(key, val) (kv[n++] = (struct kv){ key, (val), NULL, true, false })
#define KS(key, val) (kv[n++] = (struct kv){ key, 0, (val), false, false })
#define KI(key, val) (kv[n++] = (struct kv){ key, (uint64_t)(val), NULL, false, true })
	switch (h->type) {
	case BP_RECORD_LOST: {
		struct bp_record_lost r;
		fixed(&r, sizeof(r), h);
		KV("id", r.id);
		KV("lost", r.lost);
		break;
	}
	case BP_RECORD_THROTTLE:
	case BP_RECORD_UNTHROTTLE: {
		struct bp_record_throttle r;
		fixed(&r, sizeof(r), h);
		tsc = r.time, have_time = true;
		KV("id", r.id);
		KV("stream_id", r.stream_id);
		break;
	}
	case BP_RECORD_AUX: {
		struct bp_record_aux r;
		fixed(&r, sizeof(r), h);
		KX("aux_offset", r.aux_offset);
		KV("aux_size", r.aux_size);
		KX("flags", r.flags);
		break;
	}
	case BP_RECORD_ITRACE_START: {
		struct bp_record_itrace_start r;
		fixed(&r, sizeof(r), h);
		KV("pid", r.pid);
		KV("tid", r.tid);
		break;
	}
	case BP_RECORD_LOST_SAMPLES: {
		struct bp_record_lost_samples r;
		fixed(&r, sizeof(r), h);
		KV("lost", r.lost);
		break;
	}
	case BP_RECORD_TICKS: {
		struct bp_record_ticks r;
		fixed(&r, sizeof(r), h);
		KV("due", r.due);
		KV("samples", r.samples);
		KV("dropped", r.dropped);
		KV("lost", r.lost);
		KV("throttled", r.throttled);
		KV("period", r.period);
		KV("window", r.window);
		KV("hpet_hz", r.hpet_hz);
		break;
	}
	case BP_RECORD_RUN_META: {
		struct bp_record_run_meta r;
		fixed(&r, sizeof(r), h);
		tsc = r.start_tsc, have_time = true;
		KV("run_id", r.run_id);
		KV("nr_cpus", r.nr_cpus);
		KV("tsc_hz", r.tsc_hz);
		KX("flags", r.flags);
		KV("time_mult", r.time_mult);
		KV("time_shift", r.time_shift);
		KS("build_id", symtab_hex(r.build_id, sizeof(r.build_id), b1, sizeof(b1)));
		break;
	}
	case BP_RECORD_CPU_INFO: {
		struct bp_record_cpu_info r;
		fixed(&r, sizeof(r), h);
		KV("apic_id", r.apic_id);
		KS("vendor", text(r.vendor_string, sizeof(r.vendor_string), b2));
		KV("family", r.family);
		KV("model", r.model);
		KV("stepping", r.stepping);
		KS("brand", text(r.brand, sizeof(r.brand), brand));
		break;
	}
	case BP_RECORD_PMU_CAPS: {
		struct bp_record_pmu_caps r;
		fixed(&r, sizeof(r), h);
		KV("kind", r.kind);
		KV("version", r.version);
		KV("nr_gp", r.nr_gp);
		KV("nr_fixed", r.nr_fixed);
		KV("gp_width", r.gp_width);
		KV("fixed_width", r.fixed_width);
		KX("flags", r.flags);
		break;
	}
	case BP_RECORD_EVENT_DESC: {
		struct bp_record_event_desc r;
		fixed(&r, sizeof(r), h);
		KV("id", r.id);
		KS("name", text(r.name, sizeof(r.name) - 1, b1));
		KX("config", r.config);
		KX("sample_type", r.sample_type);
		KV("sample_period", r.sample_period);
		KV("counter", r.counter);
		break;
	}
	case BP_RECORD_APP_START: {
		struct bp_record_app_start r;
		fixed(&r, sizeof(r), h);
		tsc = r.time, have_time = true;
		KV("app_id", r.app_id);
		KS("name", text(r.name, sizeof(r.name) - 1, b1));
		KX("text_start", r.text_start);
		KX("text_end", r.text_end);
		break;
	}
	case BP_RECORD_APP_STOP: {
		struct bp_record_app_stop r;
		fixed(&r, sizeof(r), h);
		tsc = r.time, have_time = true;
		KV("app_id", r.app_id);
		KI("status", r.status);
		KV("iterations", r.iterations);
		break;
	}
	case BP_RECORD_COUNTS: {
		struct bp_record_counts r;
		size_t len = 0;
		fixed(&r, sizeof(r), h);
		KV("app_id", r.app_id);
		KV("cpu", r.cpu);
		/* name=count/time_enabled/time_running for each entry */
		list[0] = 0;
		for (uint64_t i = 0; i < r.nr && (i + 1) * 32 + sizeof(r) <= h->size &&
				     len < sizeof(list); i++) {
			struct bp_count_entry e;
			char nb[32];
			memcpy(&e, (const uint8_t *)h + sizeof(r) + i * sizeof(e), sizeof(e));
			len += (size_t)snprintf(list + len, sizeof(list) - len,
						"%s%s=%" PRIu64 "/%" PRIu64 "/%" PRIu64, i ? " " : "",
						session_event_name(s, e.id, nb, sizeof(nb)), e.count,
						e.time_enabled, e.time_running);
		}
		KS("counts", list);
		break;
	}
	case BP_RECORD_BENCH: {
		struct bp_record_bench r;
		fixed(&r, sizeof(r), h);
		tsc = r.time, have_time = true;
		r.table[sizeof(r.table) - 1] = r.name[sizeof(r.name) - 1] = 0;
		r.event[sizeof(r.event) - 1] = 0;
		snprintf(list, sizeof(list), "%s/%s/%s", r.table, r.name, r.event);
		KS("bench", list);
		KV("param", r.param);
		KI("median_x1000", r.median);
		KI("min_x1000", r.min);
		KV("n_reps", r.n_reps);
		if (r.bench_version >= 1) {
			KI("avg_x1000", r.trimmed_mean);
			KV("iqr_x1000", r.iqr);
			KV("seq", r.seq);
			KV("table_row", r.table_row);
		}
		break;
	}
	case BP_RECORD_BENCH_END: {
		struct bp_record_bench_end r;
		fixed(&r, sizeof(r), h);
		KV("app_id", r.app_id);
		KV("results", r.results);
		KV("lost", r.lost);
		break;
	}
	default:
		KV("size", h->size);
		KX("misc", h->misc);
		break;
	}
	uint64_t ns = session_tsc_to_ns(s, tsc);
	if (c->fmt == FMT_TEXT) {
		if (have_time)
			fprintf(f, "%16s       [%03u] %6" PRIu64 ".%09" PRIu64 ": %s", "", cpu,
				ns / 1000000000u, ns % 1000000000u, tn);
		else
			fprintf(f, "%16s       [%03u] %16s: %s", "", cpu, "", tn);
		for (int i = 0; i < n; i++) {
			if (kv[i].str)
				fprintf(f, " %s=\"%s\"", kv[i].k, kv[i].str);
			else if (kv[i].sgn)
				fprintf(f, " %s=%" PRId64, kv[i].k, (int64_t)kv[i].v);
			else
				fprintf(f, kv[i].hex ? " %s=0x%" PRIx64 : " %s=%" PRIu64, kv[i].k, kv[i].v);
		}
		fputc('\n', f);
	} else if (c->fmt == FMT_CSV) {
		fprintf(f, "%s,%u,", tn, cpu);
		if (have_time)
			fprintf(f, "%" PRIu64 ",%" PRIu64, ns, tsc);
		else
			fputc(',', f);
		fprintf(f, ",,,,,,,,");
		/* detail: key=value words separated by spaces, quoted as a field */
		char detail[1024];
		size_t len = 0;
		for (int i = 0; i < n && len < sizeof(detail); i++) {
			if (kv[i].str)
				len += (size_t)snprintf(detail + len, sizeof(detail) - len, "%s%s=%s",
							i ? " " : "", kv[i].k, kv[i].str);
			else if (kv[i].sgn)
				len += (size_t)snprintf(detail + len, sizeof(detail) - len,
							"%s%s=%" PRId64, i ? " " : "", kv[i].k,
							(int64_t)kv[i].v);
			else
				len += (size_t)snprintf(detail + len, sizeof(detail) - len,
							kv[i].hex ? "%s%s=0x%" PRIx64 : "%s%s=%" PRIu64,
							i ? " " : "", kv[i].k, kv[i].v);
		}
		put_str(f, FMT_CSV, len < sizeof(detail) ? detail : "");
		fputc('\n', f);
	} else {
		fprintf(f, "{\"type\":\"%s\",\"cpu\":%u", tn, cpu);
		if (have_time)
			fprintf(f, ",\"time_ns\":%" PRIu64 ",\"tsc\":%" PRIu64, ns, tsc);
		for (int i = 0; i < n; i++) {
			fprintf(f, ",\"%s\":", kv[i].k);
			if (kv[i].str)
				put_str(f, FMT_JSON, kv[i].str);
			else if (kv[i].hex)
				fprintf(f, "\"0x%" PRIx64 "\"", kv[i].v);
			else if (kv[i].sgn)
				fprintf(f, "%" PRId64, (int64_t)kv[i].v);
			else
				fprintf(f, "%" PRIu64, kv[i].v);
		}
		fprintf(f, "}\n");
	}
#undef KV
#undef KX
#undef KS
#undef KI
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
		"                      (default comm,tid,cpu,time,period,event,ip,sym,symoff,dso)\n"
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
	if (s.truncated)
		fprintf(stderr, "bareperf script: %s: %s\n", input, s.state);
	symtab_free(t);
	session_free(&s);
	return ferror(stdout) ? 1 : 0;
}
