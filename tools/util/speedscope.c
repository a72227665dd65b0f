/*
 * tools/util/speedscope.c — speedscope's file format (tools/util/speedscope.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/escape.h"
#include "tools/util/evlist.h"
#include "tools/util/speedscope.h"
#include "tools/util/stack.h"

/*
 * The shared frames: one per function, found by its name's pointer (the
 * symtab hands out one per symbol; CONVERT_UNKNOWN is one string too).
 */
struct ss_frame {
	const char *name;
	const char *file;		/* NULL: no line information */
	int line;
};

struct ss_frames {
	struct ss_frame *v;
	size_t n, cap;
	uint32_t *slot;			/* hash of name -> index + 1, 0 = free */
	size_t mask;
};

static size_t ss_hash(const char *name, size_t mask)
{
	uint64_t k = (uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull;
	return (size_t)(k >> 23) & mask;
}

static int ss_grow(struct ss_frames *f)
{
	size_t mask = f->mask ? 2 * f->mask + 1 : 1023;
	uint32_t *slot = calloc(mask + 1, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < f->n; i++) {
		size_t j = ss_hash(f->v[i].name, mask);
		while (slot[j])
			j = (j + 1) & mask;
		slot[j] = (uint32_t)i + 1;
	}
	free(f->slot);
	f->slot = slot;
	f->mask = mask;
	return 0;
}

/* The frame index of the function at addr, made on first sight; -1 if out
 * of memory. */
static long ss_frame(struct ss_frames *f, const struct symtab *t, uint64_t addr)
{
	const char *name = stack_frame_name(t, addr);
	struct ss_frame fr = { name, NULL, 0 };
	size_t j;

	if (2 * (f->n + 1) > f->mask + 1 && ss_grow(f))
		return -1;
	for (j = ss_hash(name, f->mask); f->slot[j]; j = (j + 1) & f->mask)
		if (f->v[f->slot[j] - 1].name == name)
			return f->slot[j] - 1;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 1024;
		struct ss_frame *v = realloc(f->v, cap * sizeof(*v));
		if (!v)
			return -1;
		f->v = v;
		f->cap = cap;
	}
	if (t) {
		struct symbol sym = symtab_lookup(t, addr);
		if (sym.name && !symtab_line(t, sym.start, &fr.file, &fr.line))
			fr.file = NULL;
	}
	f->v[f->n] = fr;
	f->slot[j] = (uint32_t)++f->n;
	return (long)f->n - 1;
}

/* The address of a sample's frame k, leaf (k = 0) out, as everywhere
 * (symtab_chain_addr, tools/util/symbol.h). */
static uint64_t ss_addr(const struct session *s, const struct symtab *t,
			const struct bp_sample_rec *r, uint32_t k)
{
	const uint64_t *ips;

	if (!r->nr_ips)
		return r->ip;
	ips = &s->ips[r->ips_off];
	return symtab_chain_addr(t, k, k ? ips[k - 1] : 0, ips[k]);
}

static uint32_t ss_depth(const struct bp_sample_rec *r)
{
	return r->nr_ips ? r->nr_ips : 1;
}

/* The samples of one event on one CPU as a sampled profile. */
static int ss_profile(FILE *out, const struct session *s, const struct symtab *t,
		      struct ss_frames *f, uint64_t id, uint32_t cpu, bool first)
{
	const struct bp_record_event_desc *d = session_event(s, id);
	bool in_ns = d && d->config == BP_CONFIG_SOFT_CPU_CLOCK;
	uint64_t total = 0;
	const char *sep = "";
	char en[64];

	fputs(first ? "\n{" : ",\n{", out);
	fputs("\"type\":\"sampled\",\"name\":\"", out);
	json_escape(out, session_event_name(s, id, en, sizeof(en)));
	fprintf(out, " on CPU %u\",\"unit\":\"%s\",\"startValue\":0,", cpu,
		in_ns ? "nanoseconds" : "none");
	fputs("\"samples\":[", out);
	for (size_t i = 0; i < s->nsamples; i++) {
		const struct bp_sample_rec *r = &s->samples[i];
		if (r->id != id || r->cpu % SESSION_MAX_CPUS != cpu)
			continue;
		fprintf(out, "%s\n[", sep);
		for (uint32_t k = ss_depth(r); k-- > 0;) {
			long fi = ss_frame(f, t, ss_addr(s, t, r, k));
			if (fi < 0)
				return -1;
			fprintf(out, "%ld%s", fi, k ? "," : "]");
		}
		sep = ",";
		total += r->period;
	}
	fputs("],\n\"weights\":[", out);
	sep = "";
	for (size_t i = 0; i < s->nsamples; i++) {
		const struct bp_sample_rec *r = &s->samples[i];
		if (r->id != id || r->cpu % SESSION_MAX_CPUS != cpu)
			continue;
		fprintf(out, "%s%" PRIu64, sep, r->period);
		sep = ",";
	}
	fprintf(out, "],\"endValue\":%" PRIu64, total);
	fputc('}', out);
	return 0;
}

int convert_speedscope(const struct session *s, const struct symtab *t, FILE *out,
		       char *err, size_t errlen)
{
	struct ss_frames f = { 0 };
	struct evmap *m = malloc(sizeof(*m));
	bool first = true;
	int rc = -1;

	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (evmap_build(m, s, err, errlen))
		goto done;
	/* The frames first: every sample's, in the order they come. */
	for (size_t i = 0; i < s->nsamples; i++)
		for (uint32_t k = 0; k < ss_depth(&s->samples[i]); k++)
			if (ss_frame(&f, t, ss_addr(s, t, &s->samples[i], k)) < 0)
				goto oom;
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
	      "\"exporter\":\"bareperf convert\",\"name\":\"", out);
	json_escape(out, s->path);
	fputs("\",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[", out);
	for (size_t i = 0; i < f.n; i++) {
		fputs(i ? ",\n{\"name\":\"" : "\n{\"name\":\"", out);
		json_escape(out, f.v[i].name);
		fputc('"', out);
		if (f.v[i].file) {
			fputs(",\"file\":\"", out);
			json_escape(out, f.v[i].file);
			fprintf(out, "\",\"line\":%d", f.v[i].line);
		}
		fputc('}', out);
	}
	fputs("]},\n\"profiles\":[", out);
	/* One profile per event and CPU: events in the capture's order. */
	for (size_t e = 0; e < m->n; e++) {
		bool on[SESSION_MAX_CPUS] = { false };
		for (size_t i = 0; i < s->nsamples; i++)
			if (s->samples[i].id == m->ev[e].id)
				on[s->samples[i].cpu % SESSION_MAX_CPUS] = true;
		for (uint32_t cpu = 0; cpu < SESSION_MAX_CPUS; cpu++) {
			if (!on[cpu])
				continue;
			if (ss_profile(out, s, t, &f, m->ev[e].id, cpu, first))
				goto oom;
			first = false;
		}
	}
	fputs("\n]}\n", out);
	if (ferror(out)) {
		snprintf(err, errlen, "write: %s", strerror(errno));
		goto done;
	}
	rc = 0;
	goto done;
oom:
	snprintf(err, errlen, "out of memory");
done:
	free(f.v);
	free(f.slot);
	free(m);
	return rc;
}
