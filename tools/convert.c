/*
 * tools/convert.c — `bareperf convert`: a capture to perf.data (for the
 * real `perf report` / `perf script`), folded stacks (flamegraph.pl's
 * input) or Chrome/Perfetto trace-event JSON.
 *
 * perf.data: what we write and why
 * --------------------------------
 * Every sample was taken in ring 0 of the bareperf kernel, and the file
 * says so, as `perf record -e cpu-clock:k` on Linux would:
 *
 *   - the attrs say exclude_user (no sample is user mode) and
 *     exclude_hv; samples have cpumode PERF_RECORD_MISC_KERNEL;
 *   - one kernel MMAP record, pid -1 (perf's host kernel), named
 *     "[kernel.kallsyms]_SYM" with pgoff = SYM's address: perf takes the
 *     part after "[kernel.kallsyms]" as its reference symbol and finds it
 *     at the same address in kernel.elf, so no relocation applies (perf
 *     warns "Kernel address maps ... were restricted" when a kernel map
 *     that samples hit has no reference symbol). It spans kernel.elf's
 *     executable segments;
 *   - the BUILD_ID feature gives [kernel.kallsyms] kernel.elf's build-id,
 *     so perf loads kernel.elf as the kernel image (vmlinux): given with
 *     `perf report -k kernel.elf`, or found in perf's build-id cache,
 *     where convert puts it as `perf buildid-cache -a` would
 *     ($PERF_BUILDID_DIR or ~/.debug: DIR/<path>/<build-id>/elf and the
 *     link DIR/.build-id/xx/<rest>), as `perf record` does for the kernel
 *     it ran on; --no-buildid-cache leaves the cache alone;
 *   - callchains are {PERF_CONTEXT_KERNEL, ip, return addresses...}, the
 *     absolute addresses the kernel walked;
 *   - one COMM record per app run: pid = tid = the run id (the SAMPLE
 *     pid), comm = the app's name, or "bareperf" if no APP_START names it.
 *
 * Samples keep their order (the session sorts them by time) and carry
 * IP|TID|TIME|ID|CPU|PERIOD, plus CALLCHAIN if any sample has one.
 * tid = pid: one thread per run (the kernel's tid is the CPU number,
 * which perf would take for threads of their own; the CPU is in the
 * sample's cpu field already). Time is ns since the run's start. A
 * FINISHED_ROUND record follows every CONVERT_ROUND samples so perf can
 * sort in bounded memory. sample_id_all is set: every other record ends
 * in {pid, tid, time, id, cpu, res}.
 *
 * Losses: every LOST record of the capture (ring overflow) becomes a
 * PERF_RECORD_LOST and every LOST_SAMPLES one a PERF_RECORD_LOST_SAMPLES,
 * on its CPU, at the time of that CPU's sample before it in the stream
 * (LOST records carry no time of their own); whatever the session counts
 * beyond the records it kept is written at the end, so the totals are
 * the session's. perf report then warns as on Linux ("lost N chunks",
 * "Total Lost Samples"). THROTTLE/UNTHROTTLE records go in time order.
 *
 * The header tells the recording, not the conversion: hostname = the
 * link the capture came over, cmdline = the kernel and the command line
 * it ran ("kernel.elf stream=uart app=loopnest"), and the file's mtime,
 * which perf prints as "captured on", is the capture's start.
 *
 * Features: BUILD_ID, HOSTNAME, OSRELEASE, VERSION, ARCH ("x86_64"),
 * NRCPUS, CPUDESC, CPUID (when CPU_INFO came), CMDLINE, EVENT_DESC (the
 * event names), SAMPLE_TIME.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/convert.h"
#include "tools/perfdata.h"

#define CONVERT_ROUND		4096	/* samples between FINISHED_ROUND records */
#define MAX_SEGMENTS		16
/* callchain entries that fit a SAMPLE: header, 6 fields, nr, marker */
#define MAX_CHAIN		((0xfff8u - 8 - 48 - 8 - 8) / 8)

/* ---- events ----------------------------------------------------------- */

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} generic_events[] = {
	{ "cycles",		PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles",		PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions",	PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references",	PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses",	PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches",		PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses",	PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles",		PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "ref-cycles",		PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
	{ "cpu-clock",		PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
};

void convert_event_type(const struct bp_record_event_desc *d, uint32_t *type, uint64_t *config)
{
	for (size_t i = 0; i < sizeof(generic_events) / sizeof(generic_events[0]); i++)
		if (!strcmp(d->name, generic_events[i].name)) {
			*type = generic_events[i].type;
			*config = generic_events[i].config;
			return;
		}
	*type = PERF_TYPE_RAW;
	*config = d->config;
}

/* The events of a capture as perf will see them: EVENT_DESCs, then any id
 * samples carry that no EVENT_DESC described. perf id = index + 1 (perf
 * takes id 0 to mean "the first event"). */
struct evmap {
	struct bp_record_event_desc ev[PD_MAX_ATTRS];
	bool synthetic[PD_MAX_ATTRS];
	size_t n;
	size_t last;			/* cache: index of the last lookup */
};

static int evmap_find(struct evmap *m, uint64_t bp_id)
{
	if (m->n && m->ev[m->last].id == bp_id)
		return (int)m->last;
	for (size_t i = 0; i < m->n; i++)
		if (m->ev[i].id == bp_id) {
			m->last = i;
			return (int)i;
		}
	return -1;
}

static int evmap_build(struct evmap *m, const struct session *s, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < s->nevents; i++) {
		if (evmap_find(m, s->events[i].id) >= 0)
			continue;
		if (m->n == PD_MAX_ATTRS)
			goto too_many;
		m->ev[m->n++] = s->events[i];
	}
	for (size_t i = 0; i < s->nsamples; i++) {
		uint64_t id = s->samples[i].id;
		if (evmap_find(m, id) >= 0)
			continue;
		if (m->n == PD_MAX_ATTRS)
			goto too_many;
		memset(&m->ev[m->n], 0, sizeof(m->ev[0]));
		m->ev[m->n].id = id;
		snprintf(m->ev[m->n].name, sizeof(m->ev[0].name), "event%" PRIu64, id);
		m->synthetic[m->n++] = true;
	}
	return 0;
too_many:
	snprintf(err, errlen, "more than %d events in the capture", PD_MAX_ATTRS);
	return -1;
}

int convert_pick_event(const struct session *s, const char *name, uint64_t *id,
		       const char **picked_name, bool *multiple, char *err, size_t errlen)
{
	struct evmap *m = malloc(sizeof(*m));
	uint64_t *count;
	int pick = -1, rc = -1;
	size_t with_samples = 0;

	if (!m || evmap_build(m, s, err, errlen)) {
		if (!m)
			snprintf(err, errlen, "out of memory");
		free(m);
		return -1;
	}
	count = calloc(m->n + 1, sizeof(*count));
	if (!count) {
		snprintf(err, errlen, "out of memory");
		free(m);
		return -1;
	}
	for (size_t i = 0; i < s->nsamples; i++)
		count[evmap_find(m, s->samples[i].id)]++;
	for (size_t i = 0; i < m->n; i++) {
		with_samples += count[i] > 0;
		if (pick < 0 && (name ? !strcmp(m->ev[i].name, name) : count[i] > 0))
			pick = (int)i;
	}
	if (pick >= 0) {
		const struct bp_record_event_desc *d = session_event(s, m->ev[pick].id);
		*id = m->ev[pick].id;
		if (picked_name)
			*picked_name = d ? d->name : "event";
		if (multiple)
			*multiple = with_samples > (count[pick] > 0);
		rc = 0;
	} else if (!s->nsamples) {
		snprintf(err, errlen, "the capture holds no samples");
	} else {
		size_t len = snprintf(err, errlen, "no event named '%s'; the capture has:", name);
		for (size_t i = 0; i < m->n && len < errlen; i++)
			len += snprintf(err + len, errlen - len, " %s", m->ev[i].name);
	}
	free(count);
	free(m);
	return rc;
}

/* ---- perf.data -------------------------------------------------------- */

/* The sample_id_all trailer for our sample_type: {pid, tid}, time, id, {cpu, res}. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint32_t cpu, res;
};

struct pd_conv {
	struct pd_writer w;
	const struct session *s;
	struct evmap ev;
	uint64_t sample_type;
	uint8_t *rec;			/* record being built */
	size_t rec_cap;
};

/* Build a record of up to len body bytes in c->rec; returns the body pointer. */
static uint8_t *rec_begin(struct pd_conv *c, size_t len)
{
	if (len + 64 > c->rec_cap) {
		size_t cap = (len + 64) * 2;
		uint8_t *p = realloc(c->rec, cap);
		if (!p) {
			if (!c->w.failed)
				snprintf(c->w.err, sizeof(c->w.err), "%s: out of memory", c->w.path);
			c->w.failed = true;
			return NULL;
		}
		c->rec = p;
		c->rec_cap = cap;
	}
	memset(c->rec, 0, len + 64);
	return c->rec + sizeof(struct perf_event_header);
}

static void rec_end(struct pd_conv *c, uint32_t type, uint16_t misc, uint8_t *end)
{
	struct perf_event_header *h = (void *)c->rec;
	size_t size = (size_t)(end - c->rec);

	if (size > 0xfff8) {		/* callers keep records smaller */
		if (!c->w.failed)
			snprintf(c->w.err, sizeof(c->w.err), "%s: internal error: a %zu-byte record",
				 c->w.path, size);
		c->w.failed = true;
		return;
	}
	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)((size + 7) & ~(size_t)7);
	pd_write_record(&c->w, h);
}

static uint8_t *put_sample_id(uint8_t *p, uint32_t pid, uint64_t time, uint64_t id, uint32_t cpu)
{
	struct sample_id si = { pid, pid, time, id, cpu, 0 };

	memcpy(p, &si, sizeof(si));
	return p + sizeof(si);
}

static uint64_t ns(const struct session *s, uint64_t tsc)
{
	return session_tsc_to_ns(s, tsc);
}

static const char *app_name(const struct session *s, uint32_t pid)
{
	for (size_t i = 0; i < s->napps; i++)
		if (s->apps[i].app_id == pid && s->apps[i].name[0])
			return s->apps[i].name;
	return "bareperf";
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Every pid of the capture, sorted, once each. */
static uint32_t *list_pids(const struct session *s, size_t *n)
{
	uint32_t *v = malloc((s->napps + 1) * sizeof(*v)), last_pid = 0;
	size_t nv = 0, cap = s->napps + 1;
	bool have_last = false;

	if (!v)
		return NULL;
	for (size_t i = 0; i < s->napps; i++)
		v[nv++] = s->apps[i].app_id;
	for (size_t i = 0; i < s->nsamples; i++) {
		uint32_t pid = s->samples[i].pid;
		if (have_last && pid == last_pid)
			continue;
		have_last = true, last_pid = pid;
		bool seen = false;
		for (size_t j = 0; j < nv && !seen; j++)
			seen = v[j] == pid;
		if (seen)
			continue;
		if (nv == cap) {
			uint32_t *nvp = realloc(v, (cap *= 2) * sizeof(*v));
			if (!nvp) {
				free(v);
				return NULL;
			}
			v = nvp;
		}
		v[nv++] = pid;
	}
	qsort(v, nv, sizeof(*v), cmp_u32);
	size_t out = 0;
	for (size_t i = 0; i < nv; i++)
		if (!out || v[out - 1] != v[i])
			v[out++] = v[i];
	*n = out;
	return v;
}

static void write_comm(struct pd_conv *c, uint32_t pid, uint64_t first_id)
{
	const char *comm = app_name(c->s, pid);
	uint8_t *p = rec_begin(c, 8 + 32 + sizeof(struct sample_id));
	uint32_t ids[2] = { pid, pid };

	if (!p)
		return;
	memcpy(p, ids, 8), p += 8;
	memcpy(p, comm, strnlen(comm, 31)), p += (strnlen(comm, 31) + 8) & ~7u;
	p = put_sample_id(p, pid, 0, first_id, 0);
	rec_end(c, PERF_RECORD_COMM, 0, p);
}

/*
 * The kernel's map: pid -1, [start, start + len) over the executable
 * segments, "[kernel.kallsyms]" + the reference symbol, pgoff = its
 * address (perf's synthesized kernel MMAP: machine.c, kmap ref_reloc_sym).
 */
static void write_kernel_mmap(struct pd_conv *c, uint64_t first_id, uint64_t start,
			      uint64_t len, const char *ref_sym, uint64_t ref_addr)
{
	char name[256];
	size_t flen;
	uint32_t ids[2] = { (uint32_t)-1, 0 };
	uint64_t f[3] = { start, len, ref_addr };
	uint8_t *p;

	snprintf(name, sizeof(name), "%s%s", CONVERT_KERNEL_MAP, ref_sym);
	flen = strlen(name);
	p = rec_begin(c, 8 + 24 + flen + 8 + sizeof(struct sample_id));
	if (!p)
		return;
	memcpy(p, ids, 8), p += 8;
	memcpy(p, f, 24), p += 24;
	memcpy(p, name, flen), p += (flen + 8) & ~(size_t)7;
	p = put_sample_id(p, (uint32_t)-1, 0, first_id, 0);
	rec_end(c, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL, p);
}

/* perf's cpumode for a sample: user if the kernel said CPL 3, else kernel. */
static uint16_t sample_cpumode(const struct bp_sample_rec *r)
{
	return (r->misc & BP_MISC_CPUMODE_MASK) == BP_MISC_USER ? PERF_RECORD_MISC_USER
								 : PERF_RECORD_MISC_KERNEL;
}

static void write_sample(struct pd_conv *c, const struct bp_sample_rec *r)
{
	struct {
		uint64_t ip;
		uint32_t pid, tid;
		uint64_t time, id;
		uint32_t cpu, res;
		uint64_t period;
	} f = { r->ip, r->pid, r->pid, ns(c->s, r->time),
		(uint64_t)evmap_find(&c->ev, r->id) + 1, r->cpu, 0, r->period };
	uint64_t nr = r->nr_ips ? r->nr_ips : 1;
	uint8_t *p;

	/* A record's size is a u16; the context marker makes ours 8 bytes
	 * longer than the kernel's, so the deepest frames of the longest
	 * possible chain would not fit: keep the innermost. */
	if (nr > MAX_CHAIN)
		nr = MAX_CHAIN;
	p = rec_begin(c, sizeof(f) + (nr + 2) * 8);
	if (!p)
		return;
	memcpy(p, &f, sizeof(f)), p += sizeof(f);
	if (c->sample_type & PERF_SAMPLE_CALLCHAIN) {
		uint16_t mode = sample_cpumode(r);
		uint64_t n = nr + 1;
		uint64_t mark = mode == PERF_RECORD_MISC_USER ? PERF_CONTEXT_USER : PERF_CONTEXT_KERNEL;
		memcpy(p, &n, 8), p += 8;
		memcpy(p, &mark, 8), p += 8;
		if (r->nr_ips)
			memcpy(p, &c->s->ips[r->ips_off], nr * 8);
		else
			memcpy(p, &r->ip, 8);
		p += nr * 8;
	}
	rec_end(c, PERF_RECORD_SAMPLE, sample_cpumode(r) | (r->misc & PERF_RECORD_MISC_EXACT_IP), p);
}

static void write_throttle(struct pd_conv *c, const struct session_throttle *t, bool start,
			   uint32_t pid)
{
	uint64_t time = ns(c->s, start ? t->start : t->end);
	uint64_t f[3] = { time, 1, 0 };
	uint8_t *p = rec_begin(c, 24 + sizeof(struct sample_id));

	if (!p)
		return;
	memcpy(p, f, 24), p += 24;
	p = put_sample_id(p, pid, time, 1, t->cpu);
	rec_end(c, start ? PERF_RECORD_THROTTLE : PERF_RECORD_UNTHROTTLE, 0, p);
}

struct tev {				/* a throttle edge, for merging by time */
	uint64_t tsc;
	uint32_t idx;
	bool start;
};

static int cmp_tev(const void *a, const void *b)
{
	const struct tev *x = a, *y = b;
	return (x->tsc > y->tsc) - (x->tsc < y->tsc);
}

struct lev {				/* one loss, for merging by time */
	uint64_t tsc;			/* its CPU's sample before it; 0: none yet */
	uint64_t k;			/* that CPU's samples before it, in the stream */
	uint64_t n;			/* records or samples lost */
	uint32_t cpu;
	bool samples;			/* LOST_SAMPLES, else LOST */
};

static int cmp_lev_ck(const void *a, const void *b)
{
	const struct lev *x = a, *y = b;

	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return (x->k > y->k) - (x->k < y->k);
}

static int cmp_lev_tsc(const void *a, const void *b)
{
	const struct lev *x = a, *y = b;
	return (x->tsc > y->tsc) - (x->tsc < y->tsc);
}

/*
 * Every LOST and LOST_SAMPLES record of the capture, each at the time of
 * the sample its CPU sent before it (the session keeps a CPU's samples in
 * stream order), then what the session's totals count beyond the records
 * (records not kept) at the last sample's time. Sorted by time.
 */
static struct lev *list_losses(const struct session *s, size_t *nout)
{
	uint64_t *seen = calloc(SESSION_MAX_CPUS, sizeof(*seen));
	uint64_t *lost = calloc(2 * SESSION_MAX_CPUS, sizeof(*lost));
	size_t *cursor = calloc(SESSION_MAX_CPUS + 1, sizeof(*cursor));
	size_t n = 0, cap = 16;
	struct lev *v = malloc(cap * sizeof(*v));
	uint64_t last = s->nsamples ? s->samples[s->nsamples - 1].time : 0;

	if (!seen || !lost || !cursor || !v)
		goto oom;
	for (size_t i = 0; i < s->nrecords; i++) {
		const struct session_record *sr = &s->records[i];
		struct lev e = { .cpu = sr->cpu };
		if (sr->cpu >= SESSION_MAX_CPUS)
			continue;
		if (sr->type == BP_RECORD_SAMPLE) {
			seen[sr->cpu]++;
			continue;
		}
		if (sr->type == BP_RECORD_LOST) {
			struct bp_record_lost l;
			memcpy(&l, s->rec_data + sr->off, sizeof(l));
			e.n = l.lost;
		} else if (sr->type == BP_RECORD_LOST_SAMPLES) {
			struct bp_record_lost_samples l;
			memcpy(&l, s->rec_data + sr->off, sizeof(l));
			e.n = l.lost, e.samples = true;
		} else {
			continue;
		}
		if (!e.n)
			continue;
		e.k = seen[sr->cpu];
		lost[2 * sr->cpu + e.samples] += e.n;
		if (n == cap) {
			struct lev *nv = realloc(v, (cap *= 2) * sizeof(*v));
			if (!nv)
				goto oom;
			v = nv;
		}
		v[n++] = e;
	}
	/* times: the k-th sample of each CPU */
	qsort(v, n, sizeof(*v), cmp_lev_ck);
	for (size_t i = n; i-- > 0;)
		cursor[v[i].cpu] = i;
	memset(seen, 0, SESSION_MAX_CPUS * sizeof(*seen));
	for (size_t i = 0; i < n; i++)
		v[i].tsc = v[i].k ? last : (s->nsamples ? s->samples[0].time : 0);
	for (size_t i = 0; i < s->nsamples; i++) {
		uint32_t cpu = s->samples[i].cpu;
		if (cpu >= SESSION_MAX_CPUS)
			continue;
		seen[cpu]++;
		while (cursor[cpu] < n && v[cursor[cpu]].cpu == cpu && v[cursor[cpu]].k <= seen[cpu]) {
			if (v[cursor[cpu]].k == seen[cpu])
				v[cursor[cpu]].tsc = s->samples[i].time;
			cursor[cpu]++;
		}
	}
	/* the session's totals beyond the records */
	for (uint32_t cpu = 0; cpu < SESSION_MAX_CPUS; cpu++)
		for (int kind = 0; kind < 2; kind++) {
			uint64_t total = kind ? s->loss.lost_samples[cpu] : s->loss.ring_lost[cpu];
			if (total <= lost[2 * cpu + kind])
				continue;
			if (n == cap) {
				struct lev *nv = realloc(v, (cap *= 2) * sizeof(*v));
				if (!nv)
					goto oom;
				v = nv;
			}
			v[n++] = (struct lev){ last, 0, total - lost[2 * cpu + kind], cpu, kind };
		}
	qsort(v, n, sizeof(*v), cmp_lev_tsc);
	free(seen);
	free(lost);
	free(cursor);
	*nout = n;
	return v;
oom:
	free(seen);
	free(lost);
	free(cursor);
	free(v);
	return NULL;
}

static void write_loss(struct pd_conv *c, const struct lev *e, uint32_t pid)
{
	uint64_t time = ns(c->s, e->tsc);
	uint8_t *p = rec_begin(c, 16 + sizeof(struct sample_id));

	if (!p)
		return;
	if (e->samples) {
		memcpy(p, &e->n, 8), p += 8;
	} else {
		uint64_t f[2] = { 1, e->n };
		memcpy(p, f, 16), p += 16;
	}
	p = put_sample_id(p, pid, time, 1, e->cpu);
	rec_end(c, e->samples ? PERF_RECORD_LOST_SAMPLES : PERF_RECORD_LOST, 0, p);
}

/* "word word ..." into a string list, the first word first. */
static void set_cmdline(struct pd_conv *c, const char *first, const char *line)
{
	char *copy = strdup(line), *save = NULL;
	const char **v = malloc((strlen(line) / 2 + 2) * sizeof(*v));
	size_t n = 0;

	if (!copy || !v) {
		free(copy);
		free(v);
		return;
	}
	v[n++] = first;
	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		v[n++] = w;
	pd_set_feature_strings(&c->w, PD_FEAT_CMDLINE, v, n);
	free(copy);
	free(v);
}

static void set_features(struct pd_conv *c, const char *kernel_path, const uint8_t *build_id,
			 size_t build_id_len)
{
	const struct session *s = c->s;
	uint32_t ncpus = s->have_meta && s->meta.nr_cpus ? s->meta.nr_cpus : s->ncpus;
	uint32_t nrcpus[2];
	char buf[128];
	int cpu0 = -1;

	if (!ncpus)
		ncpus = 1;
	nrcpus[0] = nrcpus[1] = ncpus;
	for (int i = 0; i < SESSION_MAX_CPUS && cpu0 < 0; i++)
		if (s->have_cpu_info[i])
			cpu0 = i;

	if (build_id_len)
		pd_add_build_id(&c->w, PERF_RECORD_MISC_KERNEL, build_id, build_id_len,
				CONVERT_KERNEL_MAP);
	/* the machine that ran, as the capture names it: the link it came over */
	snprintf(buf, sizeof(buf), "%.*s", (int)sizeof(s->capture.link), s->capture.link);
	pd_set_feature_string(&c->w, PD_FEAT_HOSTNAME, buf[0] ? buf : "bareperf");
	pd_set_feature_string(&c->w, PD_FEAT_OSRELEASE, "bareperf");
	snprintf(buf, sizeof(buf), "%.*s", (int)sizeof(s->capture.tool), s->capture.tool);
	pd_set_feature_string(&c->w, PD_FEAT_VERSION, buf[0] ? buf : "bareperf");
	pd_set_feature_string(&c->w, PD_FEAT_ARCH, "x86_64");
	pd_set_feature(&c->w, PD_FEAT_NRCPUS, nrcpus, sizeof(nrcpus));
	if (cpu0 >= 0) {
		const struct bp_record_cpu_info *ci = &s->cpu_info[cpu0];
		const char *b = ci->brand;
		size_t n = strnlen(b, sizeof(ci->brand));
		while (n && *b == ' ')
			b++, n--;
		while (n && b[n - 1] == ' ')
			n--;
		snprintf(buf, sizeof(buf), "%.*s", (int)n, b);
		pd_set_feature_string(&c->w, PD_FEAT_CPUDESC, buf[0] ? buf : "unknown");
		snprintf(buf, sizeof(buf), "%.*s,%u,%u,%u", (int)strnlen(ci->vendor_string, 16),
			 ci->vendor_string, ci->family, ci->model, ci->stepping);
		pd_set_feature_string(&c->w, PD_FEAT_CPUID, buf);
	} else {
		pd_set_feature_string(&c->w, PD_FEAT_CPUDESC, "unknown");
	}
	{
		/* what the kernel ran: its file and its command line */
		const char *base = strrchr(kernel_path, '/');
		char line[sizeof(s->capture.run_args) + 1];
		snprintf(line, sizeof(line), "%.*s", (int)sizeof(s->capture.run_args),
			 s->capture.run_args);
		set_cmdline(c, base ? base + 1 : kernel_path, line);
	}
	if (s->nsamples) {
		uint64_t t[2] = { ns(s, s->samples[0].time),
				  ns(s, s->samples[s->nsamples - 1].time) };
		pd_set_feature(&c->w, PD_FEAT_SAMPLE_TIME, t, sizeof(t));
	}
}

int convert_perfdata(const struct session *s, const struct symtab *t,
		     const char *kernel_path, const uint8_t *build_id, size_t build_id_len,
		     const char *out, char *err, size_t errlen)
{
	struct pd_conv *c = calloc(1, sizeof(*c));
	uint64_t vaddr[MAX_SEGMENTS], size[MAX_SEGMENTS], off[MAX_SEGMENTS];
	uint64_t kstart = UINT64_MAX, kend = 0;
	size_t nseg, npids = 0, nthr = 0, ti = 0, nloss = 0, li = 0;
	uint32_t *pids = NULL, last_pid;
	struct tev *thr = NULL;
	struct lev *loss = NULL;
	struct symbol ref;
	bool callchain = false, user = false;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->s = s;
	nseg = symtab_exec_segments(t, vaddr, size, off, MAX_SEGMENTS);
	for (size_t i = 0; i < nseg; i++) {
		if (vaddr[i] < kstart)
			kstart = vaddr[i];
		if (vaddr[i] + size[i] > kend)
			kend = vaddr[i] + size[i];
	}
	ref = nseg ? symtab_lookup(t, kstart) : (struct symbol){ 0 };
	if (!nseg || !ref.name || ref.start != kstart) {
		snprintf(err, errlen, "%s: %s", kernel_path, nseg ?
			 "no symbol at the start of its code (perf's kernel map needs one)" :
			 "no executable segment to map");
		goto fail_early;
	}
	if (evmap_build(&c->ev, s, err, errlen))
		goto fail_early;
	pids = list_pids(s, &npids);
	thr = malloc((2 * s->nthrottle + 1) * sizeof(*thr));
	loss = list_losses(s, &nloss);
	if (!pids || !thr || !loss) {
		snprintf(err, errlen, "out of memory");
		goto fail_early;
	}
	for (size_t i = 0; i < s->nsamples; i++) {
		callchain |= s->samples[i].nr_ips > 0;
		user |= sample_cpumode(&s->samples[i]) == PERF_RECORD_MISC_USER;
	}
	c->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			 (callchain ? PERF_SAMPLE_CALLCHAIN : 0);

	if (pd_create(&c->w, out, err, errlen))
		goto fail_early;
	for (size_t i = 0; i < c->ev.n; i++) {
		const struct bp_record_event_desc *d = &c->ev.ev[i];
		struct perf_event_attr a = {
			.sample_period = d->sample_period ? d->sample_period : 1,
			.sample_type = c->sample_type,
			.exclude_user = !user,
			.exclude_hv = 1,
			.sample_id_all = 1,
			.mmap = i == 0,
			.comm = i == 0,
		};
		uint64_t id = i + 1;
		if (c->ev.synthetic[i])
			a.type = PERF_TYPE_RAW, a.config = 0;
		else {
			uint64_t config;
			convert_event_type(d, &a.type, &config);
			a.config = config;
		}
		a.config1 = d->config1;
		pd_add_attr(&c->w, &a, d->name, &id, 1);
	}

	write_kernel_mmap(c, 1, kstart, kend - kstart, ref.name, ref.start);
	for (size_t i = 0; i < npids; i++)
		write_comm(c, pids[i], 1);

	for (size_t i = 0; i < s->nthrottle; i++) {
		thr[nthr++] = (struct tev){ s->throttle[i].start, (uint32_t)i, true };
		if (s->throttle[i].end)
			thr[nthr++] = (struct tev){ s->throttle[i].end, (uint32_t)i, false };
	}
	qsort(thr, nthr, sizeof(*thr), cmp_tev);

	last_pid = npids ? pids[0] : 0;
	for (size_t i = 0; i < s->nsamples; i++) {
		const struct bp_sample_rec *r = &s->samples[i];
		while (ti < nthr && thr[ti].tsc <= r->time) {
			write_throttle(c, &s->throttle[thr[ti].idx], thr[ti].start, last_pid);
			ti++;
		}
		/* a loss at a sample's time goes after that sample */
		while (li < nloss && loss[li].tsc < r->time)
			write_loss(c, &loss[li++], last_pid);
		write_sample(c, r);
		last_pid = r->pid;
		if ((i + 1) % CONVERT_ROUND == 0) {
			struct perf_event_header h = { PD_RECORD_FINISHED_ROUND, 0, sizeof(h) };
			pd_write_record(&c->w, &h);
		}
	}
	for (; ti < nthr; ti++)
		write_throttle(c, &s->throttle[thr[ti].idx], thr[ti].start, last_pid);
	for (; li < nloss; li++)
		write_loss(c, &loss[li], last_pid);
	{
		struct perf_event_header h = { PD_RECORD_FINISHED_ROUND, 0, sizeof(h) };
		pd_write_record(&c->w, &h);
	}
	set_features(c, kernel_path, build_id, build_id_len);
	free(pids);
	free(thr);
	free(loss);
	free(c->rec);
	{
		int rc = pd_close(&c->w, err, errlen);
		free(c);
		/* perf prints the file's mtime as "captured on": the recording's start */
		if (!rc && s->capture.start_ns) {
			struct timespec ts[2] = {
				{ (time_t)(s->capture.start_ns / 1000000000u),
				  (long)(s->capture.start_ns % 1000000000u) },
			};
			ts[1] = ts[0];
			if (utimensat(AT_FDCWD, out, ts, 0))
				fprintf(stderr, "bareperf convert: %s: cannot set its time: %s\n",
					out, strerror(errno));
		}
		return rc;
	}

fail_early:
	free(pids);
	free(thr);
	free(loss);
	free(c);
	return -1;
}

/*
 * perf's build-id cache, as `perf buildid-cache -a FILE` fills it:
 * DIR/<absolute path>/<build-id>/elf holds the file (a hard link, else a
 * copy) and DIR/.build-id/<2 hex>/<rest> links to its directory
 * (tools/perf/util/build-id.c, build_id_cache__add). DIR is
 * $PERF_BUILDID_DIR, else $HOME/.debug.
 */
static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0755) && errno != EEXIST) {
			*p = '/';
			return -1;
		}
		*p = '/';
	}
	return mkdir(path, 0755) && errno != EEXIST ? -1 : 0;
}

static int copy_file(const char *from, const char *to)
{
	char tmpl[PATH_MAX + 8], buf[1 << 16];
	FILE *in, *out;
	size_t n;
	int fd, rc = 0;

	if (link(from, to) == 0)
		return 0;
	if (strlen(to) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmpl, to, strlen(to));
	memcpy(tmpl + strlen(to), ".XXXXXX", 8);
	if (!(in = fopen(from, "rb")))
		return -1;
	if ((fd = mkstemp(tmpl)) < 0 || !(out = fdopen(fd, "wb"))) {
		if (fd >= 0)
			close(fd), unlink(tmpl);
		fclose(in);
		return -1;
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			rc = -1;
	if (ferror(in) || fclose(out))
		rc = -1;
	fclose(in);
	if (rc || chmod(tmpl, 0644) || rename(tmpl, to)) {
		unlink(tmpl);
		return -1;
	}
	return 0;
}

int convert_buildid_cache(const char *kernel_path, const uint8_t *id, size_t idlen,
			  char *dir_out, size_t dirlen, char *err, size_t errlen)
{
	const char *env = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
	char dir[PATH_MAX], hex[2 * 64 + 1], path[4 * PATH_MAX], link_dir[3 * PATH_MAX];
	char target[3 * PATH_MAX], have[3 * PATH_MAX];
	struct stat st;
	ssize_t n;

	if (!idlen || idlen > 64) {
		snprintf(err, errlen, "%s has no build-id", kernel_path);
		return -1;
	}
	if (env && *env)
		snprintf(dir, sizeof(dir), "%s", env);
	else if (home && *home)
		snprintf(dir, sizeof(dir), "%s/.debug", home);
	else {
		snprintf(err, errlen, "neither PERF_BUILDID_DIR nor HOME is set");
		return -1;
	}
	snprintf(dir_out, dirlen, "%s", dir);
	for (size_t i = 0; i < idlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	snprintf(path, sizeof(path), "%s%s/%s", dir, kernel_path, hex);
	if (mkdirs(path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	strcat(path, "/elf");
	if (stat(path, &st) && copy_file(kernel_path, path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	snprintf(link_dir, sizeof(link_dir), "%s/.build-id/%.2s", dir, hex);
	if (mkdirs(link_dir)) {
		snprintf(err, errlen, "%s: %s", link_dir, strerror(errno));
		return -1;
	}
	snprintf(target, sizeof(target), "../..%s/%s", kernel_path, hex);
	snprintf(path, sizeof(path), "%s/%s", link_dir, hex + 2);
	n = readlink(path, have, sizeof(have) - 1);
	if (n >= 0 && (size_t)n == strlen(target) && !memcmp(have, target, (size_t)n))
		return 0;
	unlink(path);
	if (symlink(target, path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- text escaping ------------------------------------------------------ */

size_t utf8_seq_len(const unsigned char *p)
{
	size_t n;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if ((p[0] & 0xe0) == 0xc0)
		n = 2, cp = p[0] & 0x1f;
	else if ((p[0] & 0xf0) == 0xe0)
		n = 3, cp = p[0] & 0x0f;
	else if ((p[0] & 0xf8) == 0xf0)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

void json_escape(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p) {
		size_t n = utf8_seq_len(p);
		if (n == 0) {
			fputs("\\ufffd", out);		/* not UTF-8 */
			p++;
		} else if (*p == '"' || *p == '\\') {
			fputc('\\', out), fputc(*p++, out);
		} else if (*p < 0x20) {
			fprintf(out, "\\u%04x", *p++);
		} else {
			fwrite(p, 1, n, out);
			p += n;
		}
	}
}

/* ---- kinds of code ------------------------------------------------------ */

/*
 * The measured benchmark bodies (BENCH_BODY and BENCH_ASM, apps/bench.h),
 * assembly or C, lie between the labels linker.ld puts around them; the
 * rest is app code if its source is under apps/ or test/guest/.
 */
enum convert_kind convert_addr_kind(const struct symtab *t, uint64_t addr)
{
	const char *file;
	uint64_t lo, hi;
	int line;

	if (t && symtab_value(t, "__bench_body_start", &lo) &&
	    symtab_value(t, "__bench_body_end", &hi) && addr >= lo && addr < hi)
		return CONVERT_KIND_BENCH;
	if (!t || !symtab_line(t, addr, &file, &line))
		return CONVERT_KIND_KERNEL;
	if (strstr(file, "apps/") || strstr(file, "test/guest/"))
		return CONVERT_KIND_APP;
	return CONVERT_KIND_KERNEL;
}

const char *convert_kind_name(enum convert_kind k)
{
	return k == CONVERT_KIND_BENCH ? "benchmark" : k == CONVERT_KIND_APP ? "app" : "kernel";
}

/* ---- Chrome trace-event JSON ---------------------------------------------- */

static const char *sym_name(const struct symtab *t, uint64_t addr)
{
	struct symbol sym = symtab_lookup(t, addr);
	return sym.name ? sym.name : CONVERT_UNKNOWN;
}

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
		return sf_intern(f, 0, sym_name(t, r->ip), t, r->ip);
	for (uint32_t k = r->nr_ips; k-- > 0;) {
		uint64_t a = s->ips[r->ips_off + k] - (k ? 1 : 0);
		if (!(id = sf_intern(f, id, sym_name(t, a), t, a)))
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
		uint64_t t = ns(s, r->time), dur;
		bool in_ns = d && d->config == BP_CONFIG_SOFT_CPU_CLOCK;

		if (!seen[cpu]) {
			seen[cpu] = true;
			fprintf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":3,\"tid\":%u,"
				"\"args\":{\"name\":\"CPU %u samples\"}}", cpu, cpu);
		}
		if (next[i] != SIZE_MAX) {
			uint64_t tn = ns(s, s->samples[next[i]].time);
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
	uint64_t start = ns(c->s, start_tsc), stop = ns(c->s, start_tsc + dur_tsc);

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
		uint64_t start = ns(s, a->start_time);
		uint64_t stop = ns(s, a->stopped ? a->stop_time : last);
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
			put_us(out, ns(s, r->time));
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

/* ---- the command ---------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: bareperf convert [-i CAPTURE] --to perf.data|folded|chrome [-o OUT]\n"
	      "                        [-k KERNEL] [--force] [--event NAME]\n"
	      "  -i, --input FILE     the capture (default capture.bpc; - reads standard input)\n"
	      "  -t, --to FORMAT      perf.data: for perf report / perf script (-o default perf.data)\n"
	      "                       folded: folded stacks for flamegraph.pl (-o default stdout)\n"
	      "                       chrome: Chrome/Perfetto trace-event JSON (-o default stdout)\n"
	      "  -k, --kernel PATH    the kernel.elf that ran (default: kernel.elf next to the\n"
	      "                       capture, or build/kernel.elf; its build-id must match)\n"
	      "  -f, --force          use the kernel even if its build-id differs\n"
	      "  -e, --event NAME     folded: the event to show (default: the first with samples)\n"
	      "  --no-buildid-cache   perf.data: leave perf's build-id cache (~/.debug) alone\n",
	      f);
}

int convert_open(const char *cmd, const char *in, const char *kernel, bool force,
		 struct session *s, struct symtab **t, char *kpath)
{
	char err[1024], used[4096], stdin_tmp[4096];

	if (cli_input(cmd, &in, stdin_tmp, sizeof(stdin_tmp)))
		return -1;
	/* No console: it is not converted, and need not be held. */
	if (session_load_flags(s, in, SESSION_NO_CONSOLE, err, sizeof(err))) {
		fprintf(stderr, "bareperf %s: %s\n", cmd, err);
		cli_input_done(stdin_tmp);
		return -1;
	}
	cli_input_done(stdin_tmp);
	if (session_symtab(s, kernel, force, t, used, sizeof(used), err, sizeof(err))) {
		fprintf(stderr, "bareperf %s: %s\n", cmd, err);
		session_free(s);
		return -1;
	}
	if (!realpath(used, kpath)) {
		fprintf(stderr, "bareperf %s: %s: %s\n", cmd, used, strerror(errno));
		symtab_free(*t);
		session_free(s);
		return -1;
	}
	session_print_losses(s, stderr, "bareperf: warning: ");
	return 0;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "input",  required_argument, NULL, 'i' },
		{ "output", required_argument, NULL, 'o' },
		{ "to",     required_argument, NULL, 't' },
		{ "kernel", required_argument, NULL, 'k' },
		{ "event",  required_argument, NULL, 'e' },
		{ "force",  no_argument,       NULL, 'f' },
		{ "no-buildid-cache", no_argument, NULL, 'B' },
		{ "help",   no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *in = "capture.bpc", *outp = NULL, *to = NULL, *kernel = NULL, *event = NULL;
	char kpath[PATH_MAX], err[512];
	struct session *s;
	struct symtab *t = NULL;
	bool force = false, cache = true;
	int c, rc = 1;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:t:k:e:fBh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': outp = optarg; break;
		case 't': to = optarg; break;
		case 'k': kernel = optarg; break;
		case 'e': event = optarg; break;
		case 'f': force = true; break;
		case 'B': cache = false; break;
		case 'h': usage(stdout); return 0;
		case ':':
			fprintf(stderr, "bareperf convert: %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "bareperf convert: unknown option '%s' (bareperf convert "
				"--help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bareperf convert: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!to) {
		fprintf(stderr, "bareperf convert: --to perf.data|folded|chrome is required\n");
		usage(stderr);
		return 2;
	}
	if (strcmp(to, "perf.data") && strcmp(to, "folded") && strcmp(to, "chrome")) {
		fprintf(stderr, "bareperf convert: --to %s: not perf.data, folded or chrome\n", to);
		return 2;
	}
	if (!outp)
		outp = strcmp(to, "perf.data") ? "-" : "perf.data";
	if (!strcmp(to, "perf.data") && !strcmp(outp, "-")) {
		fprintf(stderr, "bareperf convert: perf.data needs a file (perf reads it with "
			"seeks)\n");
		return 2;
	}

	s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "bareperf convert: out of memory\n");
		return 1;
	}
	if (convert_open("convert", in, kernel, force, s, &t, kpath)) {
		free(s);
		return 1;
	}

	if (!strcmp(to, "perf.data")) {
		/* the file's own build-id: what perf will check (with --force it
		 * may differ from the capture's) */
		size_t idlen;
		const uint8_t *id = symtab_build_id(t, &idlen);
		char dir[PATH_MAX];
		if (convert_perfdata(s, t, kpath, id, idlen, outp, err, sizeof(err))) {
			fprintf(stderr, "bareperf convert: %s\n", err);
		} else {
			fprintf(stderr, "bareperf convert: %zu samples to %s (kernel: %s)\n",
				s->nsamples, outp, kpath);
			rc = 0;
			if (!cache)
				fprintf(stderr, "bareperf convert: perf finds the kernel's symbols "
					"with: perf report -i %s -k %s\n", outp, kpath);
			else if (convert_buildid_cache(kpath, id, idlen, dir, sizeof(dir), err,
						       sizeof(err)))
				fprintf(stderr, "bareperf convert: warning: build-id cache: %s; "
					"perf needs: perf report -i %s -k %s\n", err, outp, kpath);
			else
				fprintf(stderr, "bareperf convert: %s is in perf's build-id cache "
					"(%s): perf report -i %s finds it\n", kpath, dir, outp);
		}
	} else {
		FILE *out = strcmp(outp, "-") ? fopen(outp, "w") : stdout;
		if (!out) {
			fprintf(stderr, "bareperf convert: %s: %s\n", outp, strerror(errno));
			goto done;
		}
		if (!strcmp(to, "chrome")) {
			rc = convert_chrome(s, t, out, err, sizeof(err)) ? 1 : 0;
		} else {
			struct stack_tree tr;
			uint64_t id;
			const char *name;
			bool multiple;
			rc = 1;
			if (!convert_pick_event(s, event, &id, &name, &multiple, err, sizeof(err)) &&
			    !stack_tree_build(&tr, s, t, false, id, err, sizeof(err))) {
				if (multiple && !event)
					fprintf(stderr, "bareperf convert: several events sampled; folded "
						"stacks of %s (choose with --event)\n", name);
				rc = stack_tree_write_folded(&tr, out) ? 1 : 0;
				if (rc)
					snprintf(err, sizeof(err), "write: %s", strerror(errno));
				stack_tree_free(&tr);
			}
		}
		if (out != stdout) {
			if (fclose(out) && !rc) {
				snprintf(err, sizeof(err), "%s: %s", outp, strerror(errno));
				rc = 1;
			}
		} else if (fflush(out) && !rc) {
			snprintf(err, sizeof(err), "stdout: %s", strerror(errno));
			rc = 1;
		}
		if (rc)
			fprintf(stderr, "bareperf convert: %s\n", err);
	}
done:
	symtab_free(t);
	session_free(s);
	free(s);
	return rc;
}
