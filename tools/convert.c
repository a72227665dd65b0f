/*
 * tools/convert.c — `bareperf convert`: a capture to perf.data (for the
 * real `perf report` / `perf script`), folded stacks (flamegraph.pl's
 * input) or Chrome/Perfetto trace-event JSON.
 *
 * perf.data: what we write and why
 * --------------------------------
 * perf symbolizes a sample through the maps of the thread it belongs to.
 * Kernel-mode samples would send it to [kernel.kallsyms] of the *host*
 * (/proc/kallsyms, a vmlinux it searches for), which is not our kernel;
 * so every sample is written as user mode (PERF_RECORD_MISC_USER) in a
 * synthetic process, and kernel.elf is a file that process mapped:
 *
 *   - one COMM record per process: pid = tid = the app run id (the
 *     SAMPLE pid), comm = the app's name, or "bareperf" if no APP_START
 *     names it;
 *   - one MMAP record per executable PT_LOAD segment of kernel.elf and
 *     process, misc USER, at the segment's virtual address with pgoff =
 *     its file offset and filename = kernel.elf's absolute path. perf
 *     accepts user maps in the high half (0xffffffff80100000): it looks
 *     an IP up in the thread's maps first. It then reads the ELF's
 *     symbols itself, relative to the file offset, as for any executable;
 *   - the BUILD_ID feature names kernel.elf's build-id for that path, so
 *     perf checks it is the file that ran; no ~/.debug cache is needed:
 *     perf falls back to the path in the MMAP record;
 *   - the attrs say exclude_kernel (no sample is kernel mode), which also
 *     keeps perf report from warning that kernel samples cannot be
 *     resolved without kallsyms (checked with perf 6.1).
 *
 * Samples keep their order (the session sorts them by time) and carry
 * IP|TID|TIME|ID|CPU|PERIOD, plus CALLCHAIN if any sample has one:
 * {PERF_CONTEXT_USER, ip, return addresses...}. tid = pid: one thread per
 * run (the kernel's tid is the CPU number, which perf would take for
 * threads of their own; the CPU is in the sample's cpu field already).
 * Time is ns since the run's start. A FINISHED_ROUND record follows
 * every CONVERT_ROUND samples so perf can sort in bounded memory.
 * sample_id_all is set: every other record ends in {pid, tid, time, id,
 * cpu, res}. Losses become
 * LOST (ring overflow, per CPU) and LOST_SAMPLES records at the end, and
 * THROTTLE/UNTHROTTLE records in time order.
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

static void write_comm_mmap(struct pd_conv *c, uint32_t pid, uint64_t first_id,
			    const char *kernel_path, const uint64_t *vaddr,
			    const uint64_t *size, const uint64_t *off, size_t nseg)
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

	for (size_t i = 0; i < nseg; i++) {
		size_t flen = strlen(kernel_path);
		uint64_t f[3] = { vaddr[i], size[i], off[i] };
		p = rec_begin(c, 8 + 24 + flen + 8 + sizeof(struct sample_id));
		if (!p)
			return;
		memcpy(p, ids, 8), p += 8;
		memcpy(p, f, 24), p += 24;
		memcpy(p, kernel_path, flen), p += (flen + 8) & ~(size_t)7;
		p = put_sample_id(p, pid, 0, first_id, 0);
		rec_end(c, PERF_RECORD_MMAP, PERF_RECORD_MISC_USER, p);
	}
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

	/* A record's size is a u16; the PERF_CONTEXT_USER marker makes ours
	 * 8 bytes longer than the kernel's, so the deepest frames of the
	 * longest possible chain would not fit: keep the innermost. */
	if (nr > MAX_CHAIN)
		nr = MAX_CHAIN;
	p = rec_begin(c, sizeof(f) + (nr + 2) * 8);
	if (!p)
		return;
	memcpy(p, &f, sizeof(f)), p += sizeof(f);
	if (c->sample_type & PERF_SAMPLE_CALLCHAIN) {
		uint64_t n = nr + 1, mark = PERF_CONTEXT_USER;
		memcpy(p, &n, 8), p += 8;
		memcpy(p, &mark, 8), p += 8;
		if (r->nr_ips)
			memcpy(p, &c->s->ips[r->ips_off], nr * 8);
		else
			memcpy(p, &r->ip, 8);
		p += nr * 8;
	}
	rec_end(c, PERF_RECORD_SAMPLE,
		PERF_RECORD_MISC_USER | (r->misc & PERF_RECORD_MISC_EXACT_IP), p);
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

static void write_losses(struct pd_conv *c, uint32_t pid, uint64_t time)
{
	const struct session_loss *l = &c->s->loss;

	for (uint32_t cpu = 0; cpu < SESSION_MAX_CPUS; cpu++) {
		if (l->ring_lost[cpu]) {
			uint64_t f[2] = { 1, l->ring_lost[cpu] };
			uint8_t *p = rec_begin(c, 16 + sizeof(struct sample_id));
			if (!p)
				return;
			memcpy(p, f, 16), p += 16;
			p = put_sample_id(p, pid, time, 1, cpu);
			rec_end(c, PERF_RECORD_LOST, 0, p);
		}
		if (l->lost_samples[cpu]) {
			uint8_t *p = rec_begin(c, 8 + sizeof(struct sample_id));
			if (!p)
				return;
			memcpy(p, &l->lost_samples[cpu], 8), p += 8;
			p = put_sample_id(p, pid, time, 1, cpu);
			rec_end(c, PERF_RECORD_LOST_SAMPLES, 0, p);
		}
	}
}

static void set_features(struct pd_conv *c, const char *kernel_path, const uint8_t *build_id,
			 size_t build_id_len, int argc, char **argv)
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
		pd_add_build_id(&c->w, PERF_RECORD_MISC_USER, build_id, build_id_len, kernel_path);
	pd_set_feature_string(&c->w, PD_FEAT_HOSTNAME, "bareperf");
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
	if (argc > 0 && argv) {
		/* "bareperf convert ...": argv[0] is the subcommand */
		const char **v = malloc((size_t)(argc + 1) * sizeof(*v));
		if (v) {
			v[0] = "bareperf";
			memcpy(v + 1, argv, (size_t)argc * sizeof(*v));
			pd_set_feature_strings(&c->w, PD_FEAT_CMDLINE, v, (size_t)argc + 1);
			free(v);
		}
	}
	if (s->nsamples) {
		uint64_t t[2] = { ns(s, s->samples[0].time),
				  ns(s, s->samples[s->nsamples - 1].time) };
		pd_set_feature(&c->w, PD_FEAT_SAMPLE_TIME, t, sizeof(t));
	}
}

int convert_perfdata(const struct session *s, const struct symtab *t,
		     const char *kernel_path, const uint8_t *build_id, size_t build_id_len,
		     const char *out, int argc, char **argv, char *err, size_t errlen)
{
	struct pd_conv *c = calloc(1, sizeof(*c));
	uint64_t vaddr[MAX_SEGMENTS], size[MAX_SEGMENTS], off[MAX_SEGMENTS];
	size_t nseg, npids = 0, nthr = 0, ti = 0;
	uint32_t *pids = NULL, last_pid;
	struct tev *thr = NULL;
	bool callchain = false;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	c->s = s;
	if (kernel_path[0] != '/') {
		snprintf(err, errlen, "%s: perf needs an absolute path to kernel.elf", kernel_path);
		goto fail_early;
	}
	nseg = symtab_exec_segments(t, vaddr, size, off, MAX_SEGMENTS);
	if (!nseg) {
		snprintf(err, errlen, "%s: no executable segment to map", kernel_path);
		goto fail_early;
	}
	if (evmap_build(&c->ev, s, err, errlen))
		goto fail_early;
	pids = list_pids(s, &npids);
	thr = malloc((2 * s->nthrottle + 1) * sizeof(*thr));
	if (!pids || !thr) {
		snprintf(err, errlen, "out of memory");
		goto fail_early;
	}
	for (size_t i = 0; i < s->nsamples && !callchain; i++)
		callchain = s->samples[i].nr_ips > 0;
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
			.exclude_kernel = 1,
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

	for (size_t i = 0; i < npids; i++)
		write_comm_mmap(c, pids[i], 1, kernel_path, vaddr, size, off, nseg);

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
		write_sample(c, r);
		last_pid = r->pid;
		if ((i + 1) % CONVERT_ROUND == 0) {
			struct perf_event_header h = { PD_RECORD_FINISHED_ROUND, 0, sizeof(h) };
			pd_write_record(&c->w, &h);
		}
	}
	for (; ti < nthr; ti++)
		write_throttle(c, &s->throttle[thr[ti].idx], thr[ti].start, last_pid);
	write_losses(c, last_pid, s->nsamples ? ns(s, s->samples[s->nsamples - 1].time) : 0);
	{
		struct perf_event_header h = { PD_RECORD_FINISHED_ROUND, 0, sizeof(h) };
		pd_write_record(&c->w, &h);
	}
	set_features(c, kernel_path, build_id, build_id_len, argc, argv);
	free(pids);
	free(thr);
	free(c->rec);
	{
		int rc = pd_close(&c->w, err, errlen);
		free(c);
		return rc;
	}

fail_early:
	free(pids);
	free(thr);
	free(c);
	return -1;
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

/* ---- Chrome trace-event JSON ---------------------------------------------- */

static const char *sym_name(const struct symtab *t, uint64_t addr)
{
	struct symbol sym = symtab_lookup(t, addr);
	return sym.name ? sym.name : CONVERT_UNKNOWN;
}

/* ns as JSON microseconds, exactly: "123.456". */
static void put_us(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

convert_slices_fn convert_trace_slices;

struct slice_ctx {
	const struct session *s;
	FILE *out;
	uint64_t n;
};

/* One traced call as a complete event on its CPU's track of the trace. */
static void chrome_slice(void *ctx, uint32_t cpu, const char *name, uint64_t start_tsc,
			 uint64_t dur_tsc)
{
	struct slice_ctx *c = ctx;
	uint64_t start = ns(c->s, start_tsc), stop = ns(c->s, start_tsc + dur_tsc);

	if (!start_tsc)
		return;				/* no time known for it */
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

	/* Samples: instant events on their CPU's track, named by function. */
	for (size_t i = 0; i < s->nsamples; i++) {
		const struct bp_sample_rec *r = &s->samples[i];
		const struct bp_record_event_desc *d = session_event(s, r->id);

		fprintf(out, "%s{\"name\":\"", sep);
		json_escape(out, sym_name(t, r->ip));
		fprintf(out, "\",\"cat\":\"sample\",\"ph\":\"i\",\"s\":\"t\",\"pid\":1,\"tid\":%u,"
			"\"ts\":", r->cpu);
		put_us(out, ns(s, r->time));
		fprintf(out, ",\"args\":{\"ip\":\"0x%" PRIx64 "\",\"event\":\"", r->ip);
		if (d) {
			char name[sizeof(d->name) + 1];
			snprintf(name, sizeof(name), "%.*s", (int)sizeof(d->name), d->name);
			json_escape(out, name);
		} else {
			fprintf(out, "event%" PRIu64, r->id);
		}
		fprintf(out, "\",\"period\":%" PRIu64, r->period);
		if (r->nr_ips) {
			fputs(",\"callchain\":[", out);
			for (uint32_t k = 0; k < r->nr_ips; k++) {
				uint64_t a = s->ips[r->ips_off + k];
				fputs(k ? ",\"" : "\"", out);
				json_escape(out, sym_name(t, k ? a - 1 : a));
				fputc('"', out);
			}
			fputc(']', out);
		}
		fputs("}}", out);
	}
	/* An instruction trace in the capture: its calls as slices, on a
	 * process of their own ("instruction trace"), one track per CPU. */
	if (s->aux_bytes && convert_trace_slices) {
		struct slice_ctx c = { s, out, 0 };
		char terr[256];
		fputs(",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":2,\"tid\":0,"
		      "\"args\":{\"name\":\"instruction trace\"}}", out);
		if (convert_trace_slices(s->path, t ? symtab_path(t) : NULL, chrome_slice, &c, terr,
					 sizeof(terr)))
			fprintf(stderr, "bareperf convert: instruction trace: %s\n", terr);
	}
	fputs("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":\"bareperf\"", out);
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
	      "  -i, --input FILE     the capture (default capture.bpc)\n"
	      "  -t, --to FORMAT      perf.data: for perf report / perf script (-o default perf.data)\n"
	      "                       folded: folded stacks for flamegraph.pl (-o default stdout)\n"
	      "                       chrome: Chrome/Perfetto trace-event JSON (-o default stdout)\n"
	      "  -k, --kernel PATH    the kernel.elf that ran (default: kernel.elf next to the\n"
	      "                       capture, or build/kernel.elf; its build-id must match)\n"
	      "  -f, --force          use the kernel even if its build-id differs\n"
	      "  -e, --event NAME     folded: the event to show (default: the first with samples)\n",
	      f);
}

int convert_open(const char *cmd, const char *in, const char *kernel, bool force,
		 struct session *s, struct symtab **t, char *kpath)
{
	char err[1024], used[4096];

	/* No console: it is not converted, and need not be held. */
	if (session_load_flags(s, in, SESSION_NO_CONSOLE, err, sizeof(err))) {
		fprintf(stderr, "bareperf %s: %s\n", cmd, err);
		return -1;
	}
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
		{ "help",   no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *in = "capture.bpc", *outp = NULL, *to = NULL, *kernel = NULL, *event = NULL;
	char kpath[PATH_MAX], err[512];
	struct session *s;
	struct symtab *t = NULL;
	bool force = false;
	int c, rc = 1;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":i:o:t:k:e:fh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i': in = optarg; break;
		case 'o': outp = optarg; break;
		case 't': to = optarg; break;
		case 'k': kernel = optarg; break;
		case 'e': event = optarg; break;
		case 'f': force = true; break;
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
		if (convert_perfdata(s, t, kpath, id, idlen, outp, argc, argv, err, sizeof(err)))
			fprintf(stderr, "bareperf convert: %s\n", err);
		else {
			fprintf(stderr, "bareperf convert: %zu samples to %s (symbols: %s)\n",
				s->nsamples, outp, kpath);
			rc = 0;
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
