/*
 * tools/util/chrome.c — Chrome/Perfetto trace-event JSON (tools/util/chrome.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/util/chrome.h"
#include "tools/util/escape.h"
#include "tools/util/stack.h"

/* ---- Chrome trace-event JSON ---------------------------------------------- */

/*
 * Sampled stacks for the Trace Event format's "stackFrames" and "samples"
 * (the format's sampling profile: each sample names its leaf frame by id,
 * each frame its parent). Frames are interned root first: one id per
 * distinct (parent, function); names are the symtab's own strings (or
 * CONVERT_UNKNOWN), so a pointer identifies a function.
 */
struct sframe {
	uint32_t parent;		/* 0: a root */
	const char *name;
	enum convert_kind kind;
};

struct sframes {
	struct sframe *v;		/* v[0] unused: id 0 means none */
	size_t n, cap;
	uint32_t *slot;			/* hash of (parent, name) -> id, 0 = free */
	size_t mask;
};

static size_t sf_hash(uint32_t parent, const char *name, size_t mask)
{
	uint64_t k = (uint64_t)(uintptr_t)name * 0x9e3779b97f4a7c15ull ^ parent;
	k ^= k >> 29;
	return (size_t)(k * 0xbf58476d1ce4e5b9ull >> 17) & mask;
}

static int sf_grow(struct sframes *f)
{
	size_t mask = f->mask ? 2 * f->mask + 1 : 1023;
	uint32_t *slot = calloc(mask + 1, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t id = 1; id < f->n; id++) {
		size_t j = sf_hash(f->v[id].parent, f->v[id].name, mask);
		while (slot[j])
			j = (j + 1) & mask;
		slot[j] = (uint32_t)id;
	}
	free(f->slot);
	f->slot = slot;
	f->mask = mask;
	return 0;
}

/* The id of (parent, name), made on first sight; 0 if out of memory. */
static uint32_t sf_intern(struct sframes *f, uint32_t parent, const char *name,
			  const struct symtab *t, uint64_t addr)
{
	size_t j;

	if (2 * (f->n + 1) > f->mask + 1 && sf_grow(f))
		return 0;
	for (j = sf_hash(parent, name, f->mask); f->slot[j]; j = (j + 1) & f->mask)
		if (f->v[f->slot[j]].parent == parent && f->v[f->slot[j]].name == name)
			return f->slot[j];
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 1024;
		struct sframe *v = realloc(f->v, cap * sizeof(*v));
		if (!v)
			return 0;
		f->v = v;
		f->cap = cap;
	}
	if (!f->n)
		f->n = 1;
	f->v[f->n] = (struct sframe){ parent, name, convert_addr_kind(t, addr) };
	f->slot[j] = (uint32_t)f->n;
	return (uint32_t)f->n++;
}

/* A sample's leaf frame id: its chain from the outermost caller in. */
static uint32_t sample_frame(struct sframes *f, const struct session *s, const struct symtab *t,
			     const struct bp_sample_rec *r)
{
	uint32_t id = 0;

	if (!r->nr_ips)
		return sf_intern(f, 0, stack_frame_name(t, r->ip), t, r->ip);
	for (uint32_t k = r->nr_ips; k-- > 0;) {
		const uint64_t *ips = &s->ips[r->ips_off];
		uint64_t a = symtab_chain_addr(t, k, k ? ips[k - 1] : 0, ips[k]);
		if (!(id = sf_intern(f, id, stack_frame_name(t, a), t, a)))
			return 0;
	}
	return id;
}

/* ns as JSON microseconds, exactly: "123.456". */
static void put_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

/*
 * The samples again as a flame chart, one track per CPU under a process of
 * their own, for viewers that read only trace events (Perfetto's JSON
 * importer does not read stackFrames and samples): a sample's stack spans
 * the time to the CPU's next sample (for cpu-clock, its period when the
 * next one is more than two periods away: a gap closes every frame);
 * consecutive samples share the frames their stacks have in common.
 */
#define FLAME_DEPTH	128

struct flame_cpu {
	uint32_t st[FLAME_DEPTH];	/* open frames, root first */
	uint32_t n;
	uint64_t end;			/* ns: where the open frames end */
	uint64_t last_dur;
};

static void flame_close(FILE *out, struct flame_cpu *c, uint32_t cpu, uint32_t keep, uint64_t t)
{
	for (; c->n > keep; c->n--) {
		fprintf(out, ",\n{\"ph\":\"E\",\"pid\":3,\"tid\":%u,\"ts\":", cpu);
		put_us(out, t);
		fputc('}', out);
	}
}

static int chrome_flame(FILE *out, const struct session *s, const struct sframes *f,
			const uint32_t *leaf)
{
	struct flame_cpu *cs = calloc(SESSION_MAX_CPUS, sizeof(*cs));
	size_t *next = malloc(s->nsamples * sizeof(*next)), last[SESSION_MAX_CPUS];
	bool seen[SESSION_MAX_CPUS] = { false };

	if (!cs || !next) {
		free(cs);
		free(next);
		return -1;
	}
	for (size_t c = 0; c < SESSION_MAX_CPUS; c++)
		last[c] = SIZE_MAX;
	for (size_t i = s->nsamples; i-- > 0;) {	/* each sample's next on its CPU */
		uint32_t cpu = s->samples[i].cpu % SESSION_MAX_CPUS;
		next[i] = last[cpu];
		last[cpu] = i;
	}
	fputs(",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":3,\"tid\":0,"
	      "\"args\":{\"name\":\"sampled stacks\"}}", out);
	for (size_t i = 0; i < s->nsamples; i++) {
		const struct bp_sample_rec *r = &s->samples[i];
		const struct bp_record_event_desc *d = session_event(s, r->id);
		uint32_t cpu = r->cpu % SESSION_MAX_CPUS, st[FLAME_DEPTH], n = 0, k = 0;
		struct flame_cpu *c = &cs[cpu];
		uint64_t t = session_tsc_to_ns(s, r->time), dur;
		bool in_ns = d && d->config == BP_CONFIG_SOFT_CPU_CLOCK;

		if (!seen[cpu]) {
			seen[cpu] = true;
			fprintf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":3,\"tid\":%u,"
				"\"args\":{\"name\":\"CPU %u samples\"}}", cpu, cpu);
		}
		if (next[i] != SIZE_MAX) {
			uint64_t tn = session_tsc_to_ns(s, s->samples[next[i]].time);
			dur = tn > t ? tn - t : 0;
			if (in_ns && dur > 2 * r->period)
				dur = r->period;
		} else {
			dur = in_ns ? r->period : c->last_dur;
		}
		c->last_dur = dur;
		for (uint32_t id = leaf[i]; id && n < FLAME_DEPTH; id = f->v[id].parent)
			st[n++] = id;
		for (uint32_t a = 0, b = n; a < b--; a++) {	/* root first */
			uint32_t x = st[a];
			st[a] = st[b], st[b] = x;
		}
		if (c->n && t > c->end)
			flame_close(out, c, cpu, 0, c->end);	/* a gap */
		while (k < c->n && k < n && c->st[k] == st[k])
			k++;
		flame_close(out, c, cpu, k, t);
		for (; k < n; k++) {
			fputs(",\n{\"name\":\"", out);
			json_escape(out, f->v[st[k]].name);
			fprintf(out, "\",\"cat\":\"%s\",\"ph\":\"B\",\"pid\":3,\"tid\":%u,\"ts\":",
				convert_kind_name(f->v[st[k]].kind), cpu);
			put_us(out, t);
			fputc('}', out);
			c->st[c->n++] = st[k];
		}
		c->end = t + dur;
	}
	for (uint32_t cpu = 0; cpu < SESSION_MAX_CPUS; cpu++)
		flame_close(out, &cs[cpu], cpu, 0, cs[cpu].end);
	free(cs);
	free(next);
	return 0;
}


convert_slices_fn convert_trace_slices;

struct slice_ctx {
	const struct session *s;
	FILE *out;
	uint64_t n;
	bool named[SESSION_MAX_CPUS];	/* the CPU's track has its thread_name */
};

/* One traced call as a complete event on its CPU's track of the trace
 * ("CPU n calls", named before its first call). */
static void chrome_slice(void *ctx, uint32_t cpu, const char *name, uint64_t start_tsc,
			 uint64_t dur_tsc)
{
	struct slice_ctx *c = ctx;
	uint64_t start = session_tsc_to_ns(c->s, start_tsc), stop = session_tsc_to_ns(c->s, start_tsc + dur_tsc);

	if (!start_tsc)
		return;				/* no time known for it */
	if (cpu < SESSION_MAX_CPUS && !c->named[cpu]) {
		c->named[cpu] = true;
		fprintf(c->out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":2,\"tid\":%u,"
			"\"args\":{\"name\":\"CPU %u calls\"}}", cpu, cpu);
	}
	fputs(",\n{\"name\":\"", c->out);
	json_escape(c->out, name);
	fprintf(c->out, "\",\"cat\":\"trace\",\"ph\":\"X\",\"pid\":2,\"tid\":%u,\"ts\":", cpu);
	put_us(c->out, start);
	fputs(",\"dur\":", c->out);
	put_us(c->out, stop > start ? stop - start : 0);
	fputs("}", c->out);
	c->n++;
}

int convert_chrome(const struct session *s, const struct symtab *t, FILE *out,
		   char *err, size_t errlen)
{
	bool cpu_seen[SESSION_MAX_CPUS] = { false };
	const char *sep = "\n";
	uint64_t last = s->nsamples ? s->samples[s->nsamples - 1].time : 0;

	for (size_t i = 0; i < s->napps; i++)
		if (s->apps[i].cpu < SESSION_MAX_CPUS)
			cpu_seen[s->apps[i].cpu] = true;
	for (size_t i = 0; i < s->nsamples; i++)
		if (s->samples[i].cpu < SESSION_MAX_CPUS)
			cpu_seen[s->samples[i].cpu] = true;
	for (size_t i = 0; i < s->napps; i++)
		if (s->apps[i].stop_time > last)
			last = s->apps[i].stop_time;

	fputs("{\"traceEvents\":[", out);
	fprintf(out, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
		"\"args\":{\"name\":\"bareperf\"}}", sep);
	sep = ",\n";
	for (uint32_t cpu = 0; cpu < SESSION_MAX_CPUS; cpu++) {
		if (!cpu_seen[cpu])
			continue;
		fprintf(out, "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
			"\"args\":{\"name\":\"CPU %u\"}}", sep, cpu, cpu);
		fprintf(out, "%s{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
			"\"args\":{\"sort_index\":%u}}", sep, cpu, cpu);
	}

	/* App runs: complete events ("X") on their CPU's track. */
	for (size_t i = 0; i < s->napps; i++) {
		const struct session_app *a = &s->apps[i];
		uint64_t start = session_tsc_to_ns(s, a->start_time);
		uint64_t stop = session_tsc_to_ns(s, a->stopped ? a->stop_time : last);
		char name[sizeof(a->name) + 1];

		snprintf(name, sizeof(name), "%.*s", (int)sizeof(a->name), a->name);
		fprintf(out, "%s{\"name\":\"", sep);
		json_escape(out, name[0] ? name : "app");
		fprintf(out, "\",\"cat\":\"app\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":", a->cpu);
		put_us(out, start);
		fputs(",\"dur\":", out);
		put_us(out, stop > start ? stop - start : 0);
		fprintf(out, ",\"args\":{\"app_id\":%u", a->app_id);
		if (a->stopped)
			fprintf(out, ",\"status\":%" PRId64, a->status);
		else
			fputs(",\"stopped\":false", out);
		fputs("}}", out);
	}

	/* An instruction trace in the capture: its calls as slices, on a
	 * process of their own ("instruction trace"), one track per CPU. */
	if (s->aux_bytes && convert_trace_slices) {
		struct slice_ctx c = { .s = s, .out = out };
		char terr[256];
		fputs(",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,\"tid\":0,"
		      "\"args\":{\"name\":\"instruction trace\"}}", out);
		if (convert_trace_slices(s->path, t ? symtab_path(t) : NULL, chrome_slice, &c, terr,
					 sizeof(terr)))
			fprintf(stderr, "bareperf convert: instruction trace: %s\n", terr);
	}
	/* Samples: a flame chart per CPU in the trace events, then the
	 * format's sampling profile (stackFrames + samples), one per CPU. */
	if (s->nsamples) {
		struct sframes f = { 0 };
		uint32_t *leaf = malloc(s->nsamples * sizeof(*leaf));
		bool ok = leaf != NULL;
		for (size_t i = 0; ok && i < s->nsamples; i++)
			ok = (leaf[i] = sample_frame(&f, s, t, &s->samples[i])) != 0;
		if (!ok || chrome_flame(out, s, &f, leaf)) {
			free(leaf);
			free(f.v);
			free(f.slot);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		fputs("\n],\"stackFrames\":{", out);
		for (size_t id = 1; id < f.n; id++) {
			fprintf(out, "%s\n\"%zu\":{\"name\":\"", id > 1 ? "," : "", id);
			json_escape(out, f.v[id].name);
			fprintf(out, "\",\"category\":\"%s\"", convert_kind_name(f.v[id].kind));
			if (f.v[id].parent)
				fprintf(out, ",\"parent\":\"%u\"", f.v[id].parent);
			fputc('}', out);
		}
		fputs("},\"samples\":[", out);
		for (size_t i = 0; i < s->nsamples; i++) {
			const struct bp_sample_rec *r = &s->samples[i];
			char en[64];
			fprintf(out, "%s\n{\"cpu\":%u,\"pid\":1,\"tid\":%u,\"ts\":", i ? "," : "",
				r->cpu, r->cpu);
			put_us(out, session_tsc_to_ns(s, r->time));
			fputs(",\"name\":\"", out);
			json_escape(out, session_event_name(s, r->id, en, sizeof(en)));
			fprintf(out, "\",\"sf\":\"%u\",\"weight\":%" PRIu64 "}", leaf[i], r->period);
		}
		fputs("\n]", out);
		free(leaf);
		free(f.v);
		free(f.slot);
	} else {
		fputs("\n]", out);
	}
	/*
	 * No "displayTimeUnit": the Trace Event format makes it a display hint
	 * and ts microseconds, but Perfetto's JSON importer reads it as the
	 * unit of ts ("ns" shrinks every time 1000x there).
	 */
	fputs(",\"otherData\":{\"source\":\"bareperf\"", out);
	fprintf(out, ",\"samples\":%zu,\"frames_lost\":%" PRIu64, s->nsamples,
		s->loss.frames_lost_total);
	{
		uint64_t ring = 0, ls = 0;
		for (int c = 0; c < SESSION_MAX_CPUS; c++)
			ring += s->loss.ring_lost[c], ls += s->loss.lost_samples[c];
		fprintf(out, ",\"ring_lost\":%" PRIu64 ",\"lost_samples\":%" PRIu64, ring, ls);
	}
	fputs("}}\n", out);
	if (ferror(out)) {
		snprintf(err, errlen, "write: %s", strerror(errno));
		return -1;
	}
	return 0;
}
