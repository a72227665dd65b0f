/*
 * tools/util/convert_perf.c — a capture to perf.data, for the real
 * `perf report` / `perf script` / `perf annotate` (tools/util/convert_perf.h);
 * the file format itself is tools/util/perfdata.c, the build-id cache
 * tools/util/buildid_cache.c.
 *
 * What we write and why
 * ---------------------
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
 *     absolute addresses the kernel walked, unchanged: perf looks each
 *     one up as it is (as it does Linux's), so the RIP an interrupt hit,
 *     the entry after isr_frame_return (kernel/isr.asm), is named right;
 *   - one COMM record per app run: pid = tid = the run id (the SAMPLE
 *     pid), comm = the app's name, or "bareperf" if no APP_START names it.
 *
 * A program the kernel loaded from a relocatable object (PROGRAM records,
 * its object found by the session) is no part of kernel.elf, and perf
 * reads a kernel map other than [kernel.kallsyms] as a kernel module,
 * whose symbols it relocates from the running kernel's module sections.
 * So the program is what perf knows best, a process's executable:
 *
 *   - its object is linked by the system's ld into an image with every
 *     section where the run placed it (tools/util/program_image.h), a
 *     GNU build-id of its own, kept as OUT.NAME.elf (builtin-convert puts
 *     it in the build-id cache too);
 *   - each run of the program (the runs of an app of its name; all runs
 *     if none has it) gets an MMAP2 of each executable segment of the
 *     image, at its address, pgoff = its file offset, with the image's
 *     build-id (PERF_RECORD_MISC_MMAP_BUILD_ID), and BUILD_ID names it;
 *   - a sample whose ip is in the program is a user-mode sample
 *     (cpumode PERF_RECORD_MISC_USER, exclude_user clear), and a call
 *     chain switches context with PERF_CONTEXT_USER / PERF_CONTEXT_KERNEL
 *     markers where it passes between the program and the kernel.
 *
 * perf report then names the program's functions with the image as their
 * shared object, perf annotate disassembles the image with its source.
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
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tools/util/convert_perf.h"
#include "tools/util/evlist.h"
#include "tools/util/perfdata.h"
#include "tools/util/program_image.h"

#define CONVERT_ROUND		4096	/* samples between FINISHED_ROUND records */
#define MAX_SEGMENTS		16
#define MAX_PROGRAMS		64
/* callchain addresses that fit a SAMPLE: header, 6 fields, nr, marker */
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

/* ---- perf.data -------------------------------------------------------- */

/* The sample_id_all trailer for our sample_type: {pid, tid}, time, id, {cpu, res}. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint32_t cpu, res;
};

/* A program linked into an image for perf (program_image.h). */
struct conv_prog {
	const char *name;
	uint64_t start, end;
	char image[4096];		/* absolute */
	uint8_t id[20];
	size_t idlen;
	uint64_t vaddr[MAX_SEGMENTS], size[MAX_SEGMENTS], off[MAX_SEGMENTS];
	size_t nseg;			/* its executable segments */
};

struct pd_conv {
	struct pd_writer w;
	const struct session *s;
	struct conv_prog prog[MAX_PROGRAMS];
	size_t nprog;
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

static bool in_program(const struct pd_conv *c, uint64_t ip)
{
	for (size_t i = 0; i < c->nprog; i++)
		if (ip >= c->prog[i].start && ip < c->prog[i].end)
			return true;
	return false;
}

/*
 * A run's map of one executable segment of a program's image: MMAP2 with
 * the image's build-id, pgoff = the segment's file offset.
 */
static void write_program_mmap(struct pd_conv *c, uint32_t pid, uint64_t first_id,
			       const struct conv_prog *g, size_t seg)
{
	size_t flen = strlen(g->image);
	uint32_t ids[2] = { pid, pid };
	uint64_t f[3] = { g->vaddr[seg], g->size[seg], g->off[seg] };
	uint8_t bid[24] = { (uint8_t)g->idlen };
	uint32_t prot[2] = { PROT_READ | PROT_EXEC, MAP_PRIVATE };
	uint8_t *p = rec_begin(c, 8 + 24 + 24 + 8 + flen + 8 + sizeof(struct sample_id));

	if (!p)
		return;
	memcpy(bid + 4, g->id, g->idlen);
	memcpy(p, ids, 8), p += 8;
	memcpy(p, f, 24), p += 24;
	memcpy(p, bid, 24), p += 24;
	memcpy(p, prot, 8), p += 8;
	memcpy(p, g->image, flen), p += (flen + 8) & ~(size_t)7;
	p = put_sample_id(p, pid, 0, first_id, 0);
	rec_end(c, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID, p);
}

/* perf's cpumode for a sample: user if the kernel said CPL 3 or the ip
 * is in a program's image, else kernel. */
static uint16_t sample_cpumode(const struct pd_conv *c, const struct bp_sample_rec *r)
{
	return (r->misc & BP_MISC_CPUMODE_MASK) == BP_MISC_USER || in_program(c, r->ip) ?
	       PERF_RECORD_MISC_USER : PERF_RECORD_MISC_KERNEL;
}

/*
 * The chain perf reads: a context marker, then the addresses, and a marker
 * again wherever they pass between the kernel and a program. At most max
 * entries into out; returns how many.
 */
static uint64_t chain_with_markers(const struct pd_conv *c, const struct bp_sample_rec *r,
				   const uint64_t *ips, uint64_t nr, uint64_t *out, uint64_t max)
{
	bool user_cpl = (r->misc & BP_MISC_CPUMODE_MASK) == BP_MISC_USER;
	uint64_t n = 0, mode = 0;

	for (uint64_t i = 0; i < nr; i++) {
		uint64_t want = user_cpl || in_program(c, ips[i]) ? PERF_CONTEXT_USER
								 : PERF_CONTEXT_KERNEL;
		if (want != mode) {
			if (n + 2 > max)
				break;
			out[n++] = mode = want;
		}
		if (n == max)
			break;
		out[n++] = ips[i];
	}
	return n;
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
	uint64_t nr = r->nr_ips ? r->nr_ips : 1, n;
	uint8_t *p;

	/* A record's size is a u16; the context markers make ours longer
	 * than the kernel's, so the deepest frames of the longest possible
	 * chain would not fit: keep the innermost. */
	p = rec_begin(c, sizeof(f) + (MAX_CHAIN + 2) * 8);
	if (!p)
		return;
	memcpy(p, &f, sizeof(f)), p += sizeof(f);
	if (c->sample_type & PERF_SAMPLE_CALLCHAIN) {
		n = chain_with_markers(c, r, r->nr_ips ? &c->s->ips[r->ips_off] : &r->ip, nr,
				       (uint64_t *)(void *)(p + 8), MAX_CHAIN + 1);
		memcpy(p, &n, 8), p += 8 + n * 8;
	}
	rec_end(c, PERF_RECORD_SAMPLE, sample_cpumode(c, r) | (r->misc & PERF_RECORD_MISC_EXACT_IP),
		p);
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
	for (size_t i = 0; i < c->nprog; i++)
		if (c->prog[i].idlen)
			pd_add_build_id(&c->w, PERF_RECORD_MISC_USER, c->prog[i].id,
					c->prog[i].idlen, c->prog[i].image);
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

/* Each program of t read from its object, linked into its image beside out
 * (a warning on stderr for one that cannot be: perf will not name it). */
static void link_programs(struct pd_conv *c, const struct symtab *t, const char *out)
{
	const struct symtab *p;
	char err[1024], path[4096];

	for (size_t i = 0; (p = symtab_program_at(t, i)) && c->nprog < MAX_PROGRAMS; i++) {
		struct conv_prog *g = &c->prog[c->nprog];
		struct symtab *img;
		const uint8_t *id;
		if (!symtab_is_program_object(p))
			continue;
		symtab_program_range(p, &g->name, &g->start, &g->end);
		program_image_path(out, g->name, path, sizeof(path));
		if (!program_image_link(p, t, path, err, sizeof(err)) && !realpath(path, g->image))
			snprintf(err, sizeof(err), "%.900s: %s", path, strerror(errno));
		if (!g->image[0] || symtab_load(&img, g->image, NULL, 0, err, sizeof(err))) {
			fprintf(stderr, "bareperf convert: warning: program %s: %s; perf will not "
				"name its code\n", g->name, err);
			memset(g, 0, sizeof(*g));
			continue;
		}
		id = symtab_build_id(img, &g->idlen);
		g->idlen = g->idlen < sizeof(g->id) ? g->idlen : sizeof(g->id);
		memcpy(g->id, id, g->idlen);
		g->nseg = symtab_exec_segments(img, g->vaddr, g->size, g->off, MAX_SEGMENTS);
		symtab_free(img);
		c->nprog++;
	}
}

/* Whether run pid runs program g: its app has g's name, or no app has. */
static bool runs_program(const struct session *s, uint32_t pid, const struct conv_prog *g)
{
	bool named = false;

	for (size_t i = 0; i < s->napps; i++) {
		bool same = !strncmp(s->apps[i].name, g->name, sizeof(s->apps[i].name));
		if (same && s->apps[i].app_id == pid)
			return true;
		named |= same;
	}
	return !named;
}

static void write_program_mmaps(struct pd_conv *c, const uint32_t *pids, size_t npids)
{
	for (size_t i = 0; i < npids; i++)
		for (size_t k = 0; k < c->nprog; k++)
			for (size_t j = 0; runs_program(c->s, pids[i], &c->prog[k]) &&
					   j < c->prog[k].nseg; j++)
				write_program_mmap(c, pids[i], 1, &c->prog[k], j);
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
	link_programs(c, t, out);
	for (size_t i = 0; i < s->nsamples; i++) {
		callchain |= s->samples[i].nr_ips > 0;
		user |= sample_cpumode(c, &s->samples[i]) == PERF_RECORD_MISC_USER;
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
	write_program_mmaps(c, pids, npids);

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
