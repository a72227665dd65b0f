/*
 * tools/util/session.c — a capture decoded once into what the analysis
 * commands read (tools/util/session.h).
 *
 * The capture's bytes go through the wire decoder (wire/decode.h); its
 * record callback sorts each record into the session: metadata, app runs,
 * samples (parsed by their event's sample_type, perf_ring.h), losses. A
 * SAMPLE carries no type of its own: as in perf, its layout is the
 * sample_type of its event, found through IDENTIFIER (the first u64) when
 * the events have it, else the one sample_type all events share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tools/util/capture.h"
#include "tools/util/session.h"
#include "tools/util/util.h"
#include "kernel/lib/unaligned.h"

/*
 * A SAMPLE's fields, in their order in the record (perf_ring.h): each
 * one's sample_type bit and its u64 words. READ's group entries follow
 * its three words, CALLCHAIN's addresses its count.
 */
enum sample_field {
	F_IDENTIFIER, F_IP, F_TID, F_TIME, F_ADDR, F_ID, F_CPU, F_PERIOD, F_READ, F_CALLCHAIN,
	NR_SAMPLE_FIELDS
};

static const struct {
	uint64_t bit;
	uint8_t words;
} sample_fields[NR_SAMPLE_FIELDS] = {
	[F_IDENTIFIER] = { BP_SAMPLE_IDENTIFIER, 1 },
	[F_IP] = { BP_SAMPLE_IP, 1 },
	[F_TID] = { BP_SAMPLE_TID, 1 },
	[F_TIME] = { BP_SAMPLE_TIME, 1 },
	[F_ADDR] = { BP_SAMPLE_ADDR, 1 },
	[F_ID] = { BP_SAMPLE_ID, 1 },
	[F_CPU] = { BP_SAMPLE_CPU, 1 },
	[F_PERIOD] = { BP_SAMPLE_PERIOD, 1 },
	[F_READ] = { BP_SAMPLE_READ, sizeof(struct bp_read_group) / 8 },
	[F_CALLCHAIN] = { BP_SAMPLE_CALLCHAIN, 1 },
};

/*
 * Where a sample_type puts each field (sample_fields): offsets from the
 * record's start, 0 for a field it lacks. CALLCHAIN's is where its count
 * is when READ's group is empty; each group entry moves it 16 bytes on.
 */
struct sample_layout {
	uint64_t st;
	bool known;			/* st has no bit this reader does not know */
	uint8_t at[NR_SAMPLE_FIELDS];
	uint8_t size;			/* the record's size without READ's entries
					 * and the chain's addresses */
};

struct loader {
	struct session *s;
	unsigned flags;
	bool have_st;			/* lay below is known (an EVENT_DESC arrived) */
	uint64_t default_id;		/* the first event's id: a sample's without ID fields */
	struct sample_layout lay;	/* the first event's sample_type's (events
					 * without IDENTIFIER share it) */
	uint64_t values_st;		/* lay's sample_type if on_sample may read
					 * its samples' values as they are; else
					 * a sample_type no sample has (~0) */
	bool oom;
	session_sample_fn cb;		/* not NULL: samples go here, not into s->samples */
	void *cb_ctx;
	bool cb_failed;
	bool seen[WIRE_NR_CHANNELS][SESSION_MAX_CPUS];	/* a frame of (channel, cpu) arrived */
	size_t cap_samples, cap_ips, cap_records, cap_rec_data, cap_console;
	size_t cap_events, cap_apps, cap_throttle, cap_counts, cap_benches, cap_ticks, cap_bench_ends;
	size_t cap_programs;
	uint8_t *defer;			/* SAMPLEs before any EVENT_DESC: {u32 cpu, pad, record} */
	size_t defer_len, cap_defer;
	uint64_t since_ticks[SESSION_MAX_CPUS];	/* SAMPLEs per CPU since its last TICKS */
	/* The latest run (its RUN_META), for repeated descriptors: where its
	 * events start in s, and which CPUs' CPU_INFO and PMU_CAPS it sent
	 * (run_nr + 1 when they came; 0: none yet). */
	bool have_run;
	struct bp_record_run_meta run;
	uint32_t run_nr;
	size_t run_events;
	uint32_t info_run[SESSION_MAX_CPUS], caps_run[SESSION_MAX_CPUS];
	bool repeat_read;		/* a repeated descriptor filled a gap */
	const struct session_tap *tap;	/* not NULL: sees the stream too */
	void *tap_ctx;
};

/* Make room for one more element of size sz in *p (capacity *cap, count n). */
static bool grow(struct loader *L, void **p, size_t *cap, size_t n, size_t sz, size_t more)
{
	size_t want = n + more;
	void *q;

	if (want <= *cap)
		return true;
	size_t ncap = *cap ? *cap : 64;
	while (ncap < want)
		ncap *= 2;
	q = realloc(*p, ncap * sz);
	if (!q) {
		L->oom = true;
		return false;
	}
	*p = q;
	*cap = ncap;
	return true;
}

/*
 * The samples array grows to hundreds of MB on a long capture: map it
 * with transparent huge pages asked for (page faults were a third of
 * `report`'s time with 4 KiB pages) and grow it with mremap (no copy).
 */
static void *big_grow(void *p, size_t old_bytes, size_t new_bytes)
{
	void *q = p ? mremap(p, old_bytes, new_bytes, MREMAP_MAYMOVE) :
		      mmap(NULL, new_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			   -1, 0);

	if (q == MAP_FAILED)
		return NULL;
	madvise(q, new_bytes, MADV_HUGEPAGE);
	return q;
}

static bool grow_samples(struct loader *L)
{
	struct session *s = L->s;
	size_t ncap;
	void *q;

	if (s->nsamples < L->cap_samples)
		return true;
	ncap = L->cap_samples ? 2 * L->cap_samples : 65536;
	q = big_grow(s->samples, s->samples_mapped, ncap * sizeof(*s->samples));
	if (!q) {
		L->oom = true;
		return false;
	}
	s->samples = q;
	s->samples_mapped = ncap * sizeof(*s->samples);
	L->cap_samples = ncap;
	return true;
}

/* Copy a record of a fixed layout: what arrived, zero-filled to the size
 * this reader knows (a shorter record from an older kernel reads as 0s). */
static void copy_rec(void *dst, size_t dsz, const struct bp_record_header *h)
{
	memset(dst, 0, dsz);
	memcpy(dst, h, h->size < dsz ? h->size : dsz);
}

static void note_cpu(struct session *s, uint32_t cpu)
{
	if (cpu < SESSION_MAX_CPUS && cpu + 1 > s->max_cpu)
		s->max_cpu = cpu + 1;
}

static const struct bp_record_event_desc *find_event(const struct session *s, uint64_t id)
{
	/* The latest description of id wins: a later run may redefine it. */
	for (size_t i = s->nevents; i-- > 0;)
		if (s->events[i].id == id)
			return &s->events[i];
	return NULL;
}

static void layout_of(uint64_t st, struct sample_layout *l)
{
	uint8_t at = sizeof(struct bp_record_header);

	memset(l, 0, sizeof(*l));
	l->st = st;
	l->known = !(st & ~BP_SAMPLE_SUPPORTED);
	for (int f = 0; f < NR_SAMPLE_FIELDS; f++)
		if (st & sample_fields[f].bit) {
			l->at[f] = at;
			at += 8 * sample_fields[f].words;
		}
	l->size = at;
}

/* An EVENT_DESC into the session; false if it had it already. */
static bool add_event(struct loader *L, const struct bp_record_header *h)
{
	struct session *s = L->s;
	struct bp_record_event_desc d;

	copy_rec(&d, sizeof(d), h);
	d.name[sizeof(d.name) - 1] = 0;
	for (size_t i = 0; i < s->nevents; i++)
		if (!memcmp(&s->events[i], &d, sizeof(d)))
			return false;	/* the same event again (a repeated run) */
	if (!grow(L, (void **)&s->events, &L->cap_events, s->nevents, sizeof(d), 1))
		return false;
	s->events[s->nevents++] = d;
	if (!L->have_st) {
		L->have_st = true;
		L->default_id = d.id;
		layout_of(d.sample_type, &L->lay);
		if (!(d.sample_type & BP_SAMPLE_IDENTIFIER))
			L->values_st = d.sample_type;
	}
	return true;
}

/*
 * Read a SAMPLE of stream CPU cpu laid out as l says into r, *chain at its
 * call chain's addresses (NULL if it has none); false if the record is
 * not exactly that: another type, a size its fields do not add up to.
 */
static bool parse_laid_out(const struct session *s, const struct sample_layout *l,
			   uint64_t default_id, uint32_t cpu, const struct bp_record_header *h,
			   struct bp_sample_rec *r, const uint8_t **chain)
{
	const uint8_t *p = (const uint8_t *)h;
	size_t size = l->size, group = 0;
	uint64_t nr = 0, n;

	if (!l->known || h->type != BP_RECORD_SAMPLE || h->size % BP_RECORD_ALIGN ||
	    h->size < size)
		return false;
	if (l->at[F_READ]) {
		n = ld64(p + l->at[F_READ]);
		if (n > (h->size - size) / sizeof(struct bp_group_entry))
			return false;
		group = (size_t)n * sizeof(struct bp_group_entry);
		size += group;
	}
	if (l->at[F_CALLCHAIN] ? (nr = ld64(p + l->at[F_CALLCHAIN] + group)) != (h->size - size) / 8u :
				 h->size != size)
		return false;
	memset(r, 0, sizeof(*r));
	r->misc = h->misc;
	if (l->at[F_IP])
		r->ip = ld64(p + l->at[F_IP]);
	if (l->at[F_TID])
		r->pid = ld32(p + l->at[F_TID]), r->tid = ld32(p + l->at[F_TID] + 4);
	if (l->at[F_TIME])
		r->time = ld64(p + l->at[F_TIME]);
	r->id = l->at[F_ID] ? ld64(p + l->at[F_ID]) :
		l->at[F_IDENTIFIER] ? ld64(p + l->at[F_IDENTIFIER]) : default_id;
	r->cpu = l->at[F_CPU] ? ld32(p + l->at[F_CPU]) : cpu;
	if (l->at[F_PERIOD]) {
		r->period = ld64(p + l->at[F_PERIOD]);
	} else {
		const struct bp_record_event_desc *e = find_event(s, r->id);
		r->period = e && e->sample_period ? e->sample_period : 1;
	}
	*chain = NULL;
	if (l->at[F_CALLCHAIN]) {
		r->nr_ips = (uint32_t)nr;
		*chain = p + l->at[F_CALLCHAIN] + group + 8;
		if (!l->at[F_IP] && nr)
			r->ip = ld64(*chain);
	}
	return true;
}

/*
 * Parse one SAMPLE of stream CPU cpu by the sample_type of its event:
 * l, the one all events share, unless l has IDENTIFIER: then the first
 * field names the event, whose own sample_type says how to read the rest.
 */
static bool parse_sample(const struct session *s, const struct sample_layout *l,
			 uint64_t default_id, uint32_t cpu, const struct bp_record_header *h,
			 struct bp_sample_rec *r, const uint8_t **chain)
{
	const struct bp_record_event_desc *e;
	struct sample_layout el;

	if (l->at[F_IDENTIFIER]) {
		if (h->size < sizeof(*h) + 8)
			return false;
		e = find_event(s, ld64((const uint8_t *)(h + 1)));
		if (!e || !(e->sample_type & BP_SAMPLE_IDENTIFIER))
			return false;
		if (e->sample_type != l->st) {
			layout_of(e->sample_type, &el);
			l = &el;
		}
	}
	return parse_laid_out(s, l, default_id, cpu, h, r, chain);
}

int session_parse_sample(const struct session *s, uint32_t cpu, const struct bp_record_header *h,
			 struct bp_sample_rec *r, const uint8_t **chain)
{
	struct sample_layout l;

	if (!s->nevents || h->type != BP_RECORD_SAMPLE)
		return -1;
	layout_of(s->events[0].sample_type, &l);
	return parse_sample(s, &l, s->events[0].id, cpu, h, r, chain) ? 0 : -1;
}

/* A sample read into r (its chain's addresses at chain) into s->samples. */
static void store_sample(struct loader *L, struct bp_sample_rec *r, const uint8_t *chain)
{
	struct session *s = L->s;

	if (r->nr_ips) {
		if (!grow(L, (void **)&s->ips, &L->cap_ips, s->nips, 8, r->nr_ips))
			return;		/* out of memory: reported by the loader */
		memcpy(s->ips + s->nips, chain, (size_t)r->nr_ips * 8);
		r->ips_off = s->nips;
		s->nips += r->nr_ips;
	}
	if (!grow_samples(L))
		return;
	s->samples[s->nsamples++] = *r;
	note_cpu(s, r->cpu);
}

/* A sample read into r into the session: to the caller's function, if
 * it gave one, else into s->samples. */
static inline void take_sample(struct loader *L, struct bp_sample_rec *r, const uint8_t *chain)
{
	struct session *s = L->s;

	if (!L->cb) {
		store_sample(L, r, chain);
		return;
	}
	if (!s->nsamples++)
		s->first_time = r->time;
	if (r->time > s->last_time)
		s->last_time = r->time;
	if (r->time < s->first_time)
		s->first_time = r->time;
	note_cpu(s, r->cpu);
	if (L->cb(L->cb_ctx, s, r, (const uint64_t *)(const void *)chain))
		L->cb_failed = true;
}

/* One SAMPLE into the session; false if it cannot be parsed. */
static bool add_sample(struct loader *L, uint32_t cpu, const struct bp_record_header *h)
{
	struct bp_sample_rec r;
	const uint8_t *chain;

	if (!L->have_st || !parse_sample(L->s, &L->lay, L->default_id, cpu, h, &r, &chain))
		return false;
	take_sample(L, &r, chain);
	return true;
}

static void add_app_start(struct loader *L, const struct bp_record_header *h)
{
	struct session *s = L->s;
	struct bp_record_app_start r;
	struct session_app *a;

	copy_rec(&r, sizeof(r), h);
	if (!grow(L, (void **)&s->apps, &L->cap_apps, s->napps, sizeof(*a), 1))
		return;
	a = &s->apps[s->napps++];
	memset(a, 0, sizeof(*a));
	a->app_id = r.app_id;
	a->cpu = r.cpu;
	a->main_cpu = r.main_cpu;
	memcpy(a->name, r.name, sizeof(a->name) - 1);
	a->start_time = r.time;
}

static void add_app_stop(struct loader *L, const struct bp_record_header *h)
{
	struct session *s = L->s;
	struct bp_record_app_stop r;

	copy_rec(&r, sizeof(r), h);
	for (size_t i = s->napps; i-- > 0;) {
		struct session_app *a = &s->apps[i];
		if (a->app_id == r.app_id && a->cpu == r.cpu && !a->stopped) {
			a->stop_time = r.time;
			a->status = r.status;
			a->stopped = true;
			return;
		}
	}
}

static void add_throttle(struct loader *L, const struct wire_dec_frame *f,
			 const struct bp_record_header *h)
{
	struct session *s = L->s;
	struct bp_record_throttle r;

	copy_rec(&r, sizeof(r), h);
	if (h->type == BP_RECORD_THROTTLE) {
		if (!grow(L, (void **)&s->throttle, &L->cap_throttle, s->nthrottle,
			  sizeof(*s->throttle), 1))
			return;
		s->throttle[s->nthrottle++] = (struct session_throttle){ f->cpu, r.time, 0 };
		s->loss.nthrottle++;
		return;
	}
	for (size_t i = s->nthrottle; i-- > 0;)
		if (s->throttle[i].cpu == f->cpu && !s->throttle[i].end) {
			s->throttle[i].end = r.time;
			return;
		}
}

static void add_counts(struct loader *L, const struct bp_record_header *h)
{
	struct session *s = L->s;
	struct bp_record_counts c;
	const uint8_t *p = (const uint8_t *)h + sizeof(c);

	if (h->size < sizeof(c))
		return;
	memcpy(&c, h, sizeof(c));
	if (c.nr > (h->size - sizeof(c)) / sizeof(struct bp_count_entry) ||
	    !grow(L, (void **)&s->counts, &L->cap_counts, s->ncounts, sizeof(*s->counts), c.nr))
		return;
	for (uint64_t i = 0; i < c.nr; i++, p += sizeof(struct bp_count_entry)) {
		struct bp_count_entry e;
		memcpy(&e, p, sizeof(e));
		s->counts[s->ncounts++] = (struct session_count){ c.app_id, c.cpu, e.id, e.count,
								   e.time_enabled, e.time_running };
	}
}

/* A BENCH record, kept whole (NUL-terminated strings) whatever the flags. */
static void add_bench(struct loader *L, const struct bp_record_header *h)
{
	struct session *s = L->s;
	struct bp_record_bench *b;

	if (h->size < offsetof(struct bp_record_bench, median_n) ||
	    !grow(L, (void **)&s->benches, &L->cap_benches, s->nbenches, sizeof(*s->benches), 1))
		return;
	b = &s->benches[s->nbenches++];
	copy_rec(b, sizeof(*b), h);
	b->table[sizeof(b->table) - 1] = 0;
	b->name[sizeof(b->name) - 1] = 0;
	b->event[sizeof(b->event) - 1] = 0;
}

/* A TICKS record, with the samples of its CPU that arrived before it. */
static void add_ticks(struct loader *L, const struct wire_dec_frame *f,
		      const struct bp_record_header *h)
{
	struct session *s = L->s;
	struct session_ticks *t;

	if (h->size < offsetof(struct bp_record_ticks, reserved) || f->cpu >= SESSION_MAX_CPUS ||
	    !grow(L, (void **)&s->ticks, &L->cap_ticks, s->nticks, sizeof(*s->ticks), 1))
		return;
	t = &s->ticks[s->nticks++];
	copy_rec(&t->rec, sizeof(t->rec), h);
	t->received = L->since_ticks[f->cpu];
	L->since_ticks[f->cpu] = 0;
}

const struct session_ticks *session_ticks_of(const struct session *s, uint32_t app_id,
					     uint32_t cpu)
{
	for (size_t i = 0; i < s->nticks; i++)
		if (s->ticks[i].rec.app_id == app_id && s->ticks[i].rec.cpu == cpu)
			return &s->ticks[i];
	return NULL;
}

static void add_bench_end(struct loader *L, const struct bp_record_header *h)
{
	struct session *s = L->s;

	struct bp_record_bench_end *e;

	if (h->size < offsetof(struct bp_record_bench_end, last_table) ||
	    !grow(L, (void **)&s->bench_ends, &L->cap_bench_ends, s->nbench_ends,
		  sizeof(*s->bench_ends), 1))
		return;
	e = &s->bench_ends[s->nbench_ends++];
	copy_rec(e, sizeof(*e), h);
	e->last_table[sizeof(e->last_table) - 1] = 0;
}

static bool same_program(const struct session_program *a, const struct bp_record_program *r,
			 const struct bp_program_section *sec, uint32_t nsec)
{
	return a->nsec == nsec && !strcmp(a->rec.name, r->name) &&
	       a->rec.build_id_len == r->build_id_len &&
	       !memcmp(a->rec.build_id, r->build_id, sizeof(r->build_id)) &&
	       a->rec.start == r->start && a->rec.end == r->end &&
	       !memcmp(a->sec, sec, nsec * sizeof(*sec));
}

/* The PROGRAM record h's fixed part into r, its name ended and its
 * build-id length bounded: the number of its sections that fit in the
 * record, or -1 if h is too short to be one. */
static long program_of(const struct bp_record_header *h, struct bp_record_program *r)
{
	uint32_t nsec;

	if (h->size < sizeof(*r))
		return -1;
	copy_rec(r, sizeof(*r), h);
	r->name[sizeof(r->name) - 1] = 0;
	if (r->build_id_len > sizeof(r->build_id))
		r->build_id_len = sizeof(r->build_id);
	nsec = (uint32_t)((h->size - sizeof(*r)) / sizeof(struct bp_program_section));
	return r->nr < nsec ? r->nr : nsec;
}

/* The PROGRAM record h is one the session has. */
static bool have_program(const struct session *s, const struct bp_record_header *h)
{
	struct bp_record_program r;
	long nsec = program_of(h, &r);

	if (nsec < 0)
		return false;
	for (size_t i = 0; i < s->nprograms; i++)
		if (same_program(&s->programs[i], &r, (const void *)((const uint8_t *)h + sizeof(r)),
				 (uint32_t)nsec))
			return true;
	return false;
}

/* A PROGRAM record and the sections of it that fit in the record. */
static void add_program(struct loader *L, const struct bp_record_header *h)
{
	struct session *s = L->s;
	struct bp_record_program r;
	struct session_program *p;
	long got = program_of(h, &r);

	if (got < 0)
		return;
	uint32_t nsec = (uint32_t)got;
	struct bp_program_section *sec = malloc((nsec ? nsec : 1) * sizeof(*sec));
	if (!sec) {
		L->oom = true;
		return;
	}
	memcpy(sec, (const uint8_t *)h + sizeof(r), nsec * sizeof(*sec));
	for (size_t i = 0; i < s->nprograms; i++)
		if (same_program(&s->programs[i], &r, sec, nsec)) {
			free(sec);
			return;
		}
	if (!grow(L, (void **)&s->programs, &L->cap_programs, s->nprograms,
		  sizeof(*s->programs), 1)) {
		free(sec);
		return;
	}
	p = &s->programs[s->nprograms++];
	p->rec = r;
	p->sec = sec;
	p->nsec = nsec;
}

static void keep_record(struct loader *L, const struct wire_dec_frame *f,
			const struct bp_record_header *h)
{
	struct session *s = L->s;

	if (!grow(L, (void **)&s->records, &L->cap_records, s->nrecords, sizeof(*s->records), 1) ||
	    !grow(L, (void **)&s->rec_data, &L->cap_rec_data, s->rec_data_len, 1, h->size))
		return;
	memcpy(s->rec_data + s->rec_data_len, h, h->size);
	s->records[s->nrecords++] = (struct session_record){ f->cpu, h->type, s->rec_data_len };
	s->rec_data_len += h->size;
}

/*
 * SAMPLEs that came before their EVENT_DESC (another CPU's frames can
 * overtake the one that holds it; a damaged frame held it and a repeat,
 * uapi/wire.h §3, brings it later) wait for it, so every command reads
 * the same samples whatever the arrival order: copied here, up to
 * DEFER_MAX bytes, and tried again at each new EVENT_DESC; those left at
 * the end are unreadable.
 */
#define DEFER_MAX	(16u << 20)

static void defer_sample(struct loader *L, uint32_t cpu, const struct bp_record_header *h)
{
	if (L->defer_len + 8 + h->size > DEFER_MAX ||
	    !grow(L, (void **)&L->defer, &L->cap_defer, L->defer_len, 1, 8 + h->size)) {
		L->s->loss.bad_samples++;
		return;
	}
	memcpy(L->defer + L->defer_len, &cpu, 4);
	memcpy(L->defer + L->defer_len + 8, h, h->size);
	L->defer_len += 8 + h->size;
}

/* The waiting samples that can be read now; the others wait on. */
static void read_deferred(struct loader *L)
{
	size_t kept = 0;

	for (size_t at = 0, n; at < L->defer_len; at += n) {
		const struct bp_record_header *h = (const void *)(L->defer + at + 8);
		uint32_t cpu;
		memcpy(&cpu, L->defer + at, 4);
		n = 8 + h->size;
		if (!add_sample(L, cpu, h)) {
			memmove(L->defer + kept, L->defer + at, n);
			kept += n;
		}
	}
	L->defer_len = kept;
}

/* a (a record kept with copy_rec) holds what h holds. */
static bool same_rec(const void *a, size_t asz, const struct bp_record_header *h)
{
	return !memcmp(a, h, h->size < asz ? h->size : asz);
}

/*
 * A record of a WIRE_F_REPEAT frame (repeat; uapi/wire.h §3), or one
 * after such a record was read: true if the session lacks it (its first
 * sending was lost, or the capture began after it), to be read as the
 * first; false if it has it, or if it differs from the one of its run and
 * key that it has: damage, counted, not read. A repeat frame's record
 * that is no descriptor is not read.
 */
static bool repeat_is_new(struct loader *L, const struct bp_record_header *h, bool repeat)
{
	struct session *s = L->s;
	bool mismatch = false;
	uint32_t cpu;

	switch (h->type) {
	case BP_RECORD_RUN_META:
		if (!L->have_run || ld64((const uint8_t *)h + offsetof(struct bp_record_run_meta,
								     run_id)) != L->run.run_id)
			return true;
		mismatch = !same_rec(&L->run, sizeof(L->run), h);
		break;
	case BP_RECORD_EVENT_DESC: {
		struct bp_record_event_desc d;
		copy_rec(&d, sizeof(d), h);
		d.name[sizeof(d.name) - 1] = 0;
		for (size_t i = 0; i < s->nevents; i++)
			if (!memcmp(&s->events[i], &d, sizeof(d)))
				return false;
		for (size_t i = L->run_events; i < s->nevents; i++)
			mismatch |= s->events[i].id == d.id;
		if (!mismatch)
			return true;
		break;
	}
	case BP_RECORD_CPU_INFO:
	case BP_RECORD_PMU_CAPS:
		if (h->size < 12)
			return false;
		cpu = ld32((const uint8_t *)(h + 1));
		if (cpu >= SESSION_MAX_CPUS)
			return false;
		if (h->type == BP_RECORD_CPU_INFO ? L->info_run[cpu] != L->run_nr + 1 :
						    L->caps_run[cpu] != L->run_nr + 1)
			return true;
		mismatch = h->type == BP_RECORD_CPU_INFO ?
			   !same_rec(&s->cpu_info[cpu], sizeof(s->cpu_info[cpu]), h) :
			   !same_rec(&s->pmu_caps[cpu], sizeof(s->pmu_caps[cpu]), h);
		break;
	case BP_RECORD_APP_START: {
		struct bp_record_app_start r;
		const struct session_app *a = NULL;
		copy_rec(&r, sizeof(r), h);
		for (size_t i = 0; i < s->napps && !a; i++)
			if (s->apps[i].app_id == r.app_id && s->apps[i].cpu == r.cpu)
				a = &s->apps[i];
		if (!a)
			return true;
		mismatch = a->start_time != r.time || a->main_cpu != r.main_cpu ||
			   strncmp(a->name, r.name, sizeof(a->name) - 1);
		break;
	}
	case BP_RECORD_PROGRAM:
		return !have_program(s, h);
	default:
		return !repeat;		/* not a descriptor: never read twice */
	}
	if (mismatch)
		s->loss.repeat_mismatch++;
	return false;
}

static void on_record(void *ctx, const struct wire_dec_frame *f, const struct bp_record_header *h)
{
	struct loader *L = ctx;
	struct session *s = L->s;
	uint32_t cpu = f->cpu;

	if (L->oom || L->cb_failed)
		return;
	/* Once a repeat filled a gap, an original held back behind it (frames
	 * of two CPUs cross) must not count twice either. */
	if ((f->flags & WIRE_F_REPEAT) || L->repeat_read) {
		if (!repeat_is_new(L, h, f->flags & WIRE_F_REPEAT))
			return;
		L->repeat_read |= (f->flags & WIRE_F_REPEAT) != 0;
	}
	note_cpu(s, cpu);
	switch (h->type) {
	case BP_RECORD_SAMPLE:
		if (cpu < SESSION_MAX_CPUS)
			L->since_ticks[cpu]++;
		if (!add_sample(L, cpu, h))
			defer_sample(L, cpu, h);
		break;
	case BP_RECORD_RUN_META:
		if (!s->have_meta) {
			copy_rec(&s->meta, sizeof(s->meta), h);
			s->have_meta = true;
		}
		s->nruns++;
		/* A first RUN_META that came repeated heads what came before it. */
		if (L->have_run || !(f->flags & WIRE_F_REPEAT)) {
			L->run_events = s->nevents;
			L->run_nr++;
		}
		copy_rec(&L->run, sizeof(L->run), h);
		L->have_run = true;
		break;
	case BP_RECORD_CPU_INFO: {
		struct bp_record_cpu_info ci;
		copy_rec(&ci, sizeof(ci), h);
		if (ci.cpu < SESSION_MAX_CPUS) {
			s->cpu_info[ci.cpu] = ci;
			s->have_cpu_info[ci.cpu] = true;
			L->info_run[ci.cpu] = L->run_nr + 1;
			note_cpu(s, ci.cpu);
		}
		break;
	}
	case BP_RECORD_PMU_CAPS: {
		struct bp_record_pmu_caps pc;
		copy_rec(&pc, sizeof(pc), h);
		if (pc.cpu < SESSION_MAX_CPUS) {
			s->pmu_caps[pc.cpu] = pc;
			L->caps_run[pc.cpu] = L->run_nr + 1;
		}
		break;
	}
	case BP_RECORD_EVENT_DESC:
		if (add_event(L, h))
			read_deferred(L);
		break;
	case BP_RECORD_APP_START:
		add_app_start(L, h);
		break;
	case BP_RECORD_APP_STOP:
		add_app_stop(L, h);
		break;
	case BP_RECORD_LOST:
		if (cpu < SESSION_MAX_CPUS && h->size >= sizeof(struct bp_record_lost))
			s->loss.ring_lost[cpu] += ((const struct bp_record_lost *)h)->lost;
		break;
	case BP_RECORD_LOST_SAMPLES:
		if (cpu < SESSION_MAX_CPUS && h->size >= sizeof(struct bp_record_lost_samples))
			s->loss.lost_samples[cpu] += ((const struct bp_record_lost_samples *)h)->lost;
		break;
	case BP_RECORD_THROTTLE:
	case BP_RECORD_UNTHROTTLE:
		add_throttle(L, f, h);
		break;
	case BP_RECORD_COUNTS:
		add_counts(L, h);
		break;
	case BP_RECORD_BENCH:
		add_bench(L, h);
		break;
	case BP_RECORD_TICKS:
		add_ticks(L, f, h);
		break;
	case BP_RECORD_BENCH_END:
		add_bench_end(L, h);
		break;
	case BP_RECORD_PROGRAM:
		add_program(L, h);
		break;
	case BP_RECORD_AUX:
		if (h->size >= sizeof(struct bp_record_aux) &&
		    (((const struct bp_record_aux *)h)->flags & BP_AUX_FLAG_TRUNCATED))
			s->loss.aux_truncated++;
		break;
	default:
		break;
	}
	if (!(L->flags & SESSION_NO_RECORDS))
		keep_record(L, f, h);
	if (L->tap && L->tap->record)
		L->tap->record(L->tap_ctx, s, f, h);
}

/*
 * A SAMPLE the decoder expanded from a compact item, with its values v:
 * read from them, not from the record, when they are what parse_sample
 * would take out of it (v's sample_type is L->values_st); otherwise, and
 * whenever the record itself is needed first (a repeat), as on_record
 * reads it.
 */
static void on_sample(void *ctx, const struct wire_dec_frame *f, const struct bp_record_header *h,
		      const struct wire_sample *v)
{
	struct loader *L = ctx;
	uint64_t st = v->sample_type;
	const struct bp_record_event_desc *e;

	if (st != L->values_st || (f->flags & WIRE_F_REPEAT) || L->repeat_read) {
		on_record(ctx, f, h);
		return;
	}
	if (L->oom || L->cb_failed)
		return;
	note_cpu(L->s, f->cpu);
	if (f->cpu < SESSION_MAX_CPUS)
		L->since_ticks[f->cpu]++;
	struct bp_sample_rec r = {
		.time = v->time,
		.ip = v->ip,
		.period = v->period,
		.id = st & BP_SAMPLE_ID ? v->id : L->default_id,
		.cpu = st & BP_SAMPLE_CPU ? v->cpu : f->cpu,
		.pid = st & BP_SAMPLE_TID ? v->pid : 0,
		.tid = st & BP_SAMPLE_TID ? v->tid : 0,
		.nr_ips = (uint32_t)v->nr_ips,
		.misc = v->misc,
	};
	if (!(st & BP_SAMPLE_PERIOD)) {
		e = find_event(L->s, r.id);
		r.period = e && e->sample_period ? e->sample_period : 1;
	}
	if (!(st & BP_SAMPLE_IP) && r.nr_ips)
		r.ip = ld64(v->ips);
	take_sample(L, &r, v->ips);
	if (!(L->flags & SESSION_NO_RECORDS))
		keep_record(L, f, h);
	if (L->tap && L->tap->record)
		L->tap->record(L->tap_ctx, L->s, f, h);
}

static void add_console(struct loader *L, const uint8_t *p, size_t n)
{
	struct session *s = L->s;

	if (L->flags & SESSION_NO_CONSOLE)
		return;
	/* Bounded: noise that never forms a frame is not a console. */
	if (s->console_len + n > SESSION_CONSOLE_MAX) {
		size_t room = SESSION_CONSOLE_MAX - s->console_len;
		s->console_dropped += n - room;
		n = room;
	}
	if (!n || !grow(L, (void **)&s->console, &L->cap_console, s->console_len, 1, n + 1))
		return;
	memcpy(s->console + s->console_len, p, n);
	s->console_len += n;
	s->console[s->console_len] = 0;
}

static void on_frame(void *ctx, const struct wire_dec_frame *f)
{
	struct loader *L = ctx;

	note_cpu(L->s, f->cpu);
	if (f->channel < WIRE_NR_CHANNELS && f->cpu < SESSION_MAX_CPUS &&
	    !L->seen[f->channel][f->cpu]) {
		L->seen[f->channel][f->cpu] = true;
		L->s->loss.frames_before_first[f->channel][f->cpu] = f->lost_before;
		L->s->loss.frames_before_first_total += f->lost_before;
	}
	if (L->tap && L->tap->frame)
		L->tap->frame(L->tap_ctx, L->s, f);
}

static void on_data(void *ctx, const struct wire_dec_frame *f, const uint8_t *p, size_t n)
{
	struct loader *L = ctx;

	if (f->channel == WIRE_CH_CONSOLE)
		add_console(L, p, n);
	else if (f->channel == WIRE_CH_AUX)
		L->s->aux_bytes += n;
	if (L->tap && L->tap->data)
		L->tap->data(L->tap_ctx, L->s, f, p, n);
}

/* Inside the stream: noise, counted by the decoder, never shown as text. */
static void on_unframed(void *ctx, uint64_t off, const uint8_t *p, size_t n)
{
	struct loader *L = ctx;

	(void)off, (void)p;
	L->s->noise_bytes += n;
}

/* Plain text outside the stream: the boot text, a halted machine's last words. */
static void on_text(void *ctx, uint64_t off, const uint8_t *p, size_t n)
{
	(void)off;
	add_console(ctx, p, n);
}

/* Samples arrive in time order per CPU; merge the CPUs by time. */
struct order {
	uint64_t time;
	uint32_t cpu;
	uint32_t idx;
};

static int cmp_order(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int sort_samples(struct session *s)
{
	struct order *o;
	struct bp_sample_rec *sorted;
	size_t n = s->nsamples, i;

	for (i = 1; i < n; i++)
		if (s->samples[i].time < s->samples[i - 1].time)
			break;
	if (i >= n)
		return 0;
	if (n > UINT32_MAX)
		return 0;	/* beyond 4 billion samples: left in arrival order */
	o = malloc(n * sizeof(*o));
	sorted = big_grow(NULL, 0, n * sizeof(*sorted));
	if (!o || !sorted) {
		free(o);
		if (sorted)
			munmap(sorted, n * sizeof(*sorted));
		return -1;
	}
	for (i = 0; i < n; i++)
		o[i] = (struct order){ s->samples[i].time, s->samples[i].cpu, (uint32_t)i };
	qsort(o, n, sizeof(*o), cmp_order);
	for (i = 0; i < n; i++)
		sorted[i] = s->samples[o[i].idx];
	free(o);
	munmap(s->samples, s->samples_mapped);
	s->samples = sorted;
	s->samples_mapped = n * sizeof(*sorted);
	return 0;
}

static void collect_losses(struct session *s, const struct wire_dec *d)
{
	const struct wire_dec_stats *st = wire_dec_stats(d);

	s->dec = *st;
	s->complete = wire_dec_complete(d);
	s->loss.crc_errors = st->crc_errors;
	s->loss.bad_frames = st->cobs_errors + st->short_frames + st->bad_version +
			     st->bad_channel + st->bad_payload;
	s->loss.garbage_bytes = st->garbage_bytes;
	s->loss.duplicates = st->duplicates;
	s->loss.frames_lost_total = st->lost_frames - s->loss.frames_before_first_total;
	for (unsigned ch = 0; ch < WIRE_NR_CHANNELS; ch++)
		for (unsigned cpu = 0; cpu < SESSION_MAX_CPUS; cpu++) {
			const struct wire_dec_stream *ws = wire_dec_stream(d, ch, cpu);
			if (ws)
				s->loss.frames_lost[ch][cpu] = ws->lost -
							       s->loss.frames_before_first[ch][cpu];
		}
}

static uint64_t count_records(const uint8_t *p, size_t len)
{
	uint64_t n = 0;

	for (size_t at = 0; at < len; n++) {
		const struct bp_record_header *h = (const void *)(p + at + 8);
		at += 8 + h->size;
	}
	return n;
}

/* All the capture's data through d, in pieces: memory does not grow with it. */
static int decode(struct capture_reader *r, struct wire_dec *d, char *err, size_t errlen)
{
	enum { CHUNK = 1 << 16 };
	uint8_t *buf = malloc(CHUNK);
	long got;

	if (!buf)
		return fail(err, errlen, "%s: out of memory", r->name);
	while ((got = capture_read(r, buf, CHUNK, err, errlen)) > 0)
		wire_dec_feed(d, buf, (size_t)got);
	free(buf);
	wire_dec_finish(d);
	return got < 0 ? -1 : 0;
}

static int load(struct session *s, const char *path, unsigned flags, session_sample_fn cb,
		void *ctx, const struct session_tap *tap, void *tap_ctx, char *err, size_t errlen)
{
	struct capture_reader r;
	struct loader L = { .s = s, .flags = flags, .cb = cb, .cb_ctx = ctx, .tap = tap,
			    .tap_ctx = tap_ctx, .values_st = ~0ull };
	const struct wire_dec_ops ops = { on_frame, on_record, on_data, on_unframed, on_text,
					  on_sample };
	struct wire_dec *d;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = capture_open(&r, path, err, errlen);
	if (rc)
		return -1;
	snprintf(s->path, sizeof(s->path), "%s", r.name);
	s->capture = r.info.hdr;
	d = wire_dec_new(&ops, &L);
	if (!d) {
		capture_close_reader(&r);
		return fail(err, errlen, "%s: out of memory", path);
	}
	rc = decode(&r, d, err, errlen);
	s->data_bytes = r.pos;
	/* Read as a stream, its size is known only now. */
	s->truncated = r.info.truncated;
	s->interrupted = r.info.interrupted || !r.info.complete;
	capture_describe(&r.info, s->state, sizeof(s->state));
	capture_close_reader(&r);
	collect_losses(s, d);
	/* No EVENT_DESC ever came: the waiting samples cannot be read. */
	s->loss.bad_samples += count_records(L.defer, L.defer_len);
	free(L.defer);
	wire_dec_free(d);
	if (rc) {
		session_free(s);
		return -1;
	}
	if (L.oom || L.cb_failed || (!cb && sort_samples(s))) {
		session_free(s);
		return fail(err, errlen, "%s: out of memory loading the capture", path);
	}
	if (s->nsamples && !cb) {
		s->first_time = s->samples[0].time;
		s->last_time = s->samples[s->nsamples - 1].time;
	}
	s->ncpus = s->have_meta && s->meta.nr_cpus ? s->meta.nr_cpus : s->max_cpu;
	if (!s->console) {
		s->console = calloc(1, 1);
		if (!s->console) {
			session_free(s);
			return fail(err, errlen, "%s: out of memory", path);
		}
	}
	return 0;
}

int session_load_cb(struct session *s, const char *path, unsigned flags,
		    session_sample_fn cb, void *ctx, char *err, size_t errlen)
{
	return load(s, path, flags, cb, ctx, NULL, NULL, err, errlen);
}

int session_load_tap(struct session *s, const char *path, unsigned flags,
		     const struct session_tap *tap, void *ctx, char *err, size_t errlen)
{
	return load(s, path, flags, NULL, NULL, tap, ctx, err, errlen);
}

int session_load_flags(struct session *s, const char *path, unsigned flags,
		       char *err, size_t errlen)
{
	return session_load_cb(s, path, flags, NULL, NULL, err, errlen);
}

int session_load(struct session *s, const char *path, char *err, size_t errlen)
{
	return session_load_flags(s, path, 0, err, errlen);
}

void session_free(struct session *s)
{
	free(s->events);
	free(s->apps);
	if (s->samples_mapped)
		munmap(s->samples, s->samples_mapped);
	else
		free(s->samples);
	s->samples_mapped = 0;
	free(s->ips);
	free(s->throttle);
	free(s->records);
	free(s->rec_data);
	free(s->console);
	free(s->counts);
	s->counts = NULL;
	s->ncounts = 0;
	free(s->benches);
	s->benches = NULL;
	s->nbenches = 0;
	free(s->ticks);
	s->ticks = NULL;
	s->nticks = 0;
	free(s->bench_ends);
	s->bench_ends = NULL;
	s->nbench_ends = 0;
	for (size_t i = 0; i < s->nprograms; i++)
		free(s->programs[i].sec);
	free(s->programs);
	s->programs = NULL;
	s->nprograms = 0;
	s->events = NULL;
	s->apps = NULL;
	s->samples = NULL;
	s->ips = NULL;
	s->throttle = NULL;
	s->records = NULL;
	s->rec_data = NULL;
	s->console = NULL;
	s->nevents = s->napps = s->nsamples = s->nips = s->nthrottle = 0;
	s->nrecords = s->rec_data_len = s->console_len = 0;
}

const struct bp_record_event_desc *session_event(const struct session *s, uint64_t id)
{
	return find_event(s, id);
}

const char *session_event_name(const struct session *s, uint64_t id, char *buf, size_t n)
{
	const struct bp_record_event_desc *e = find_event(s, id);

	if (e && e->name[0])
		return e->name;
	snprintf(buf, n, "event %" PRIu64, id);
	return buf;
}
