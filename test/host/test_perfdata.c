/*
 * test_perfdata.c — the perf.data writer (tools/util/perfdata.c) and
 * `convert --to perf.data` (tools/util/convert_perf.c), checked by reading the
 * written file back with our own reader, field by field. The real perf
 * reads the same files in test/e2e/perf_roundtrip.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/commands.h"
#include "tools/util/convert_perf.h"
#include "tools/util/perfdata.h"
#include "test/host/convert_fakes.h"
#include "test/host/tmpdir.h"

#define KPATH	"/opt/bp/kernel.elf"
#define F_MAIN	0xffffffff80100000ull
#define F_MATMUL 0xffffffff80100100ull
#define F_SIEVE	0xffffffff80100180ull
#define F_KMAIN	0xffffffff80100200ull

static const struct fake_sym syms[] = {
	{ "loopnest_main", F_MAIN, 0x100 },
	{ "matmul", F_MATMUL, 0x80 },
	{ "sieve", F_SIEVE, 0x80 },
	{ "kmain", F_KMAIN, 0x100 },
};
static const struct fake_seg segs[] = {
	{ 0xffffffff80100000ull, 0x1be3a, 0x1000 },
	{ 0xffffffff80200000ull, 0x2000, 0x40000 },
};
static const uint8_t build_id[20] = { 0x27, 0x11, 0x41, 0xfc, 0x38, 0xbb, 0x42, 0x77, 0x16,
				      0x7e, 0x53, 0x02, 0x41, 0x12, 0xa1, 0x6a, 0x32, 0x68,
				      0x10, 0x37 };

static int setup_dir(void **state)
{
	(void)state;
	return tmpdir_make("test_perfdata");
}

static int teardown_dir(void **state)
{
	(void)state;
	return tmpdir_remove();
}

/* Two events, two CPUs, one app, callchains. */
static void sample_session(struct session *s)
{
	fs_init(s);
	s->meta.nr_cpus = 2;
	s->have_cpu_info[0] = true;
	strcpy(s->cpu_info[0].vendor_string, "GenuineIntel");
	strcpy(s->cpu_info[0].brand, "  Intel(R) Xeon(R) CPU  ");
	s->cpu_info[0].family = 6, s->cpu_info[0].model = 85, s->cpu_info[0].stepping = 4;
	memcpy(s->meta.build_id, build_id, 20);
	strcpy(s->capture.link, "qemu-pvh:serial-stdio");
	strcpy(s->capture.run_args, "stream=uart  app=loopnest");
	fs_event(s, 0, "cycles", 0x3c, 100000);
	fs_event(s, 1, "inst_retired.any", 0xc0, 200000);
	fs_app(s, 1, 0, "loopnest", 100, 100000);
	fs_app(s, 1, 1, "loopnest", 100, 100000);
	for (int i = 0; i < 10; i++) {
		uint64_t ips[3] = { (i % 2 ? F_SIEVE : F_MATMUL) + 4 * i, F_MAIN + 0x20,
				    F_KMAIN + 0x40 };
		fs_sample(s, 1000 + 100 * i, i % 2, 1, i % 3 == 2 ? 1 : 0, 100000, 0, ips, 3);
	}
}

struct readback {
	struct pd_file pf;
	struct perf_event_attr attr[8];
	const uint64_t *ids[8];
	size_t nids[8];
};

static void read_back(struct readback *rb, const char *path)
{
	char err[256];

	memset(rb, 0, sizeof(*rb));
	if (pd_read(&rb->pf, path, err, sizeof(err)))
		fail_msg("%s", err);
	for (size_t i = 0; i < rb->pf.nattrs && i < 8; i++)
		assert_int_equal(pd_attr(&rb->pf, i, &rb->attr[i], &rb->ids[i], &rb->nids[i]), 0);
}

static void convert(const struct session *s, const char *out)
{
	struct symtab *t = fake_symtab(syms, 4, segs, 2);
	char err[256];
	if (convert_perfdata(s, t, KPATH, build_id, 20, out, err, sizeof(err)))
		fail_msg("convert_perfdata: %s", err);
	symtab_free(t);
}

static void test_header_and_attrs(void **state)
{
	struct session s;
	struct readback rb;
	const struct pd_file_header *h = &rb.pf.hdr;

	(void)state;
	sample_session(&s);
	convert(&s, tmpdir_path("a.data"));
	read_back(&rb, tmpdir_path("a.data"));

	assert_memory_equal(h->magic, "PERFILE2", 8);
	assert_int_equal(h->size, 104);
	assert_int_equal(h->attr_size, PERF_ATTR_SIZE_VER7 + 16);
	assert_int_equal(rb.pf.nattrs, 2);
	assert_int_equal(h->event_types.size, 0);
	/* sections in order, 8-aligned, data right after the attrs */
	assert_int_equal(h->attrs.offset + h->attrs.size, h->data.offset);
	assert_int_equal(h->data.offset % 8, 0);
	assert_true(h->data.size > 0);

	/* cycles: a generic hardware event; the other one raw */
	assert_int_equal(rb.attr[0].type, PERF_TYPE_HARDWARE);
	assert_int_equal(rb.attr[0].config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(rb.attr[1].type, PERF_TYPE_RAW);
	assert_int_equal(rb.attr[1].config, 0xc0);
	for (int i = 0; i < 2; i++) {
		const struct perf_event_attr *a = &rb.attr[i];
		assert_int_equal(a->size, PERF_ATTR_SIZE_VER7);
		assert_int_equal(a->sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				 PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU |
				 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN);
		assert_int_equal(a->sample_id_all, 1);
		/* ring 0 samples, as perf record -e ...:k would say */
		assert_int_equal(a->exclude_kernel, 0);
		assert_int_equal(a->exclude_user, 1);
		assert_int_equal(a->freq, 0);
		assert_int_equal(rb.nids[i], 1);
		assert_int_equal(rb.ids[i][0], (uint64_t)i + 1);
	}
	assert_int_equal(rb.attr[0].sample_period, 100000);
	assert_int_equal(rb.attr[1].sample_period, 200000);
	assert_int_equal(rb.attr[0].mmap, 1);
	assert_int_equal(rb.attr[0].comm, 1);
	assert_int_equal(rb.attr[1].mmap, 0);
	pd_free(&rb.pf);
	fs_free(&s);
}

struct sid { uint32_t pid, tid; uint64_t time, id; uint32_t cpu, res; };

static void trailer(const struct perf_event_header *r, struct sid *out)
{
	memcpy(out, (const uint8_t *)r + r->size - sizeof(*out), sizeof(*out));
}

static void test_comm_mmap_samples(void **state)
{
	struct session s;
	struct readback rb;
	const struct perf_event_header *r;
	uint64_t off = 0;
	size_t nsamples = 0, ncomm = 0, nmmap = 0, nround = 0;
	uint64_t last_time = 0;

	(void)state;
	sample_session(&s);
	convert(&s, tmpdir_path("b.data"));
	read_back(&rb, tmpdir_path("b.data"));

	while ((r = pd_next_record(&rb.pf, &off))) {
		struct sid sid;
		switch (r->type) {
		case PERF_RECORD_COMM: {
			const uint32_t *pt = (const void *)(r + 1);
			assert_int_equal(nsamples, 0);
			assert_int_equal(pt[0], 1);
			assert_int_equal(pt[1], 1);
			assert_string_equal((const char *)(pt + 2), "loopnest");
			trailer(r, &sid);
			assert_int_equal(sid.pid, 1);
			assert_int_equal(sid.time, 0);
			assert_int_equal(sid.id, 1);
			ncomm++;
			break;
		}
		case PERF_RECORD_MMAP: {
			/* the kernel's map: host pid, both exec segments, its
			 * reference symbol at its own address */
			const uint8_t *p = (const void *)(r + 1);
			int32_t pid;
			uint64_t f[3];
			memcpy(&pid, p, 4);
			memcpy(f, p + 8, 24);
			assert_int_equal(r->misc, PERF_RECORD_MISC_KERNEL);
			assert_int_equal(pid, -1);
			assert_int_equal(f[0], segs[0].vaddr);
			assert_int_equal(f[1], segs[1].vaddr + segs[1].size - segs[0].vaddr);
			assert_int_equal(f[2], F_MAIN);
			assert_string_equal((const char *)p + 32, "[kernel.kallsyms]loopnest_main");
			assert_int_equal(ncomm, 0);		/* before any COMM */
			nmmap++;
			break;
		}
		case PERF_RECORD_SAMPLE: {
			struct pd_sample ps;
			const struct bp_sample_rec *sr = &s.samples[nsamples];
			assert_int_equal(pd_parse_sample(r, rb.attr[0].sample_type, &ps), 0);
			assert_int_equal(r->misc, PERF_RECORD_MISC_KERNEL);
			assert_int_equal(ps.ip, sr->ip);
			assert_int_equal(ps.pid, 1);
			assert_int_equal(ps.tid, 1);
			assert_int_equal(ps.time, session_tsc_to_ns(&s, sr->time));
			assert_int_equal(ps.id, sr->id + 1);
			assert_int_equal(ps.cpu, sr->cpu);
			assert_int_equal(ps.period, sr->period);
			assert_int_equal(ps.nr, 4);
			assert_int_equal(ps.ips[0], PERF_CONTEXT_KERNEL);
			for (int k = 0; k < 3; k++)
				assert_int_equal(ps.ips[k + 1], s.ips[sr->ips_off + k]);
			assert_true(ps.time >= last_time);
			last_time = ps.time;
			nsamples++;
			break;
		}
		case PD_RECORD_FINISHED_ROUND:
			assert_int_equal(r->size, 8);
			nround++;
			break;
		default:
			fail_msg("unexpected record type %u", r->type);
		}
	}
	assert_int_equal(off, rb.pf.hdr.data.size);	/* every byte is a record */
	assert_int_equal(ncomm, 1);			/* one process */
	assert_int_equal(nmmap, 1);			/* the kernel's */
	assert_int_equal(nsamples, 10);
	assert_int_equal(nround, 1);			/* the final one */
	pd_free(&rb.pf);
	fs_free(&s);
}

static void test_features(void **state)
{
	struct session s;
	struct readback rb;
	const uint8_t *p;
	size_t len, used;
	const char *str;

	(void)state;
	sample_session(&s);
	convert(&s, tmpdir_path("c.data"));
	read_back(&rb, tmpdir_path("c.data"));

	p = pd_feature(&rb.pf, PD_FEAT_ARCH, &len);
	assert_non_null(p);
	assert_string_equal(pd_string(p, len, &used), "x86_64");
	assert_int_equal(used, len);
	assert_int_equal(used, 4 + 64);			/* padded to NAME_ALIGN */

	p = pd_feature(&rb.pf, PD_FEAT_NRCPUS, &len);
	assert_non_null(p);
	assert_int_equal(len, 8);
	assert_int_equal(((const uint32_t *)p)[0], 2);
	assert_int_equal(((const uint32_t *)p)[1], 2);

	p = pd_feature(&rb.pf, PD_FEAT_CPUDESC, &len);
	assert_string_equal(pd_string(p, len, NULL), "Intel(R) Xeon(R) CPU");
	p = pd_feature(&rb.pf, PD_FEAT_CPUID, &len);
	assert_string_equal(pd_string(p, len, NULL), "GenuineIntel,6,85,4");
	p = pd_feature(&rb.pf, PD_FEAT_HOSTNAME, &len);
	assert_string_equal(pd_string(p, len, NULL), "qemu-pvh:serial-stdio");

	/* BUILD_ID: one entry for the kernel, host pid, kernel mode */
	p = pd_feature(&rb.pf, PD_FEAT_BUILD_ID, &len);
	assert_non_null(p);
	{
		struct pd_build_id b;
		memcpy(&b, p, sizeof(b));
		assert_int_equal(b.header.size, len);
		assert_int_equal(b.header.misc, PERF_RECORD_MISC_KERNEL | PD_MISC_BUILD_ID_SIZE);
		assert_int_equal(b.pid, -1);
		assert_int_equal(b.size, 20);
		assert_memory_equal(b.build_id, build_id, 20);
		/* perf's own entries are 36 + a multiple of 64 bytes: not 8-aligned */
		assert_string_equal((const char *)p + sizeof(b), "[kernel.kallsyms]");
		assert_int_equal(len, 36 + 64);
	}

	/* CMDLINE: the kernel and its command line, as a string list */
	p = pd_feature(&rb.pf, PD_FEAT_CMDLINE, &len);
	assert_non_null(p);
	assert_int_equal(*(const uint32_t *)p, 3);
	assert_string_equal(pd_string(p + 4, len - 4, &used), "kernel.elf");
	{
		size_t used2;
		assert_string_equal(pd_string(p + 4 + used, len - 4 - used, &used2), "stream=uart");
		assert_string_equal(pd_string(p + 4 + used + used2, len - 4 - used - used2, NULL),
				    "app=loopnest");
	}

	/* EVENT_DESC: names and ids */
	p = pd_feature(&rb.pf, PD_FEAT_EVENT_DESC, &len);
	assert_non_null(p);
	{
		uint32_t nr, asz, nids;
		size_t o = 8;
		memcpy(&nr, p, 4);
		memcpy(&asz, p + 4, 4);
		assert_int_equal(nr, 2);
		assert_int_equal(asz, PERF_ATTR_SIZE_VER7);
		for (uint32_t i = 0; i < nr; i++) {
			struct perf_event_attr a = { 0 };
			uint64_t id;
			memcpy(&a, p + o, asz);
			assert_int_equal(a.type, rb.attr[i].type);
			o += asz;
			memcpy(&nids, p + o, 4);
			assert_int_equal(nids, 1);
			o += 4;
			str = pd_string(p + o, len - o, &used);
			assert_string_equal(str, i ? "inst_retired.any" : "cycles");
			o += used;
			memcpy(&id, p + o, 8);
			assert_int_equal(id, i + 1);
			o += 8;
		}
		assert_int_equal(o, len);
	}

	/* SAMPLE_TIME: first and last sample, ns */
	p = pd_feature(&rb.pf, PD_FEAT_SAMPLE_TIME, &len);
	assert_int_equal(len, 16);
	assert_int_equal(((const uint64_t *)p)[0], 1000);
	assert_int_equal(((const uint64_t *)p)[1], 1900);

	/* the feature table sits right after the data; the file ends with
	 * the last feature body */
	{
		uint64_t end = 0, table = rb.pf.hdr.data.offset + rb.pf.hdr.data.size;
		size_t nfeat = 0;
		for (int f = 1; f < PD_FEAT_BITS; f++)
			if (pd_feature(&rb.pf, f, &len)) {
				nfeat++;
				end = (uint64_t)(pd_feature(&rb.pf, f, &len) - rb.pf.buf) + len;
			}
		assert_int_equal(nfeat, 11);
		assert_true(table + nfeat * 16 <= end);
		assert_int_equal((end + 7) & ~7ull, rb.pf.len);
	}
	assert_null(pd_feature(&rb.pf, PD_FEAT_TRACING_DATA, &len));
	pd_free(&rb.pf);
	fs_free(&s);
}

/* Without callchains, sample_type has no CALLCHAIN and samples are shorter. */
static void test_no_callchain(void **state)
{
	struct session s;
	struct readback rb;
	const struct perf_event_header *r;
	uint64_t off = 0;
	size_t n = 0;

	(void)state;
	fs_init(&s);
	fs_event(&s, 0, "cpu-clock", 0, 250000);
	for (int i = 0; i < 5000; i++)
		fs_sample(&s, 10 + i, 0, 3, 0, 250000, F_SIEVE + (i & 0x3f), NULL, 0);
	s.samples[7].misc |= BP_MISC_EXACT_IP;
	convert(&s, tmpdir_path("d.data"));
	read_back(&rb, tmpdir_path("d.data"));
	assert_int_equal(rb.attr[0].type, PERF_TYPE_SOFTWARE);
	assert_int_equal(rb.attr[0].config, PERF_COUNT_SW_CPU_CLOCK);
	assert_int_equal(rb.attr[0].sample_type & PERF_SAMPLE_CALLCHAIN, 0);
	size_t rounds = 0;
	while ((r = pd_next_record(&rb.pf, &off))) {
		if (r->type == PD_RECORD_FINISHED_ROUND)
			rounds++;
		if (r->type == PERF_RECORD_COMM)
			assert_string_equal((const char *)(r + 1) + 8, "bareperf");	/* no app */
		if (r->type != PERF_RECORD_SAMPLE)
			continue;
		struct pd_sample ps;
		assert_int_equal(pd_parse_sample(r, rb.attr[0].sample_type, &ps), 0);
		assert_int_equal(r->size, 8 + 48);
		assert_int_equal(ps.ip, s.samples[n].ip);
		assert_int_equal(ps.pid, 3);
		assert_int_equal(r->misc, PERF_RECORD_MISC_KERNEL |
				 (n == 7 ? PERF_RECORD_MISC_EXACT_IP : 0));
		n++;
	}
	assert_int_equal(n, 5000);
	assert_int_equal(rounds, 5000 / 4096 + 1);
	pd_free(&rb.pf);
	fs_free(&s);
}

/* The longest chain a capture can hold still fits a perf record (u16 size). */
static void test_long_callchain(void **state)
{
	struct session s;
	struct readback rb;
	const struct perf_event_header *r;
	uint64_t off = 0, *ips = calloc(9000, sizeof(*ips));
	int n = 0;

	(void)state;
	for (int i = 0; i < 9000; i++)
		ips[i] = F_MAIN + i % 0x100;
	fs_init(&s);
	fs_event(&s, 0, "cycles", 0x3c, 1000);
	fs_sample(&s, 1, 0, 1, 0, 1000, 0, ips, 9000);
	fs_sample(&s, 2, 0, 1, 0, 1000, 0, ips, 3);
	convert(&s, tmpdir_path("l.data"));
	read_back(&rb, tmpdir_path("l.data"));
	while ((r = pd_next_record(&rb.pf, &off))) {
		struct pd_sample ps;
		if (r->type != PERF_RECORD_SAMPLE)
			continue;
		assert_int_equal(pd_parse_sample(r, rb.attr[0].sample_type, &ps), 0);
		if (n++ == 0) {
			assert_true(r->size <= 0xfff8);
			assert_int_equal(ps.nr, (0xfff8 - 72) / 8 + 1);
			assert_int_equal(ps.ips[1], ips[0]);	/* the innermost kept */
		} else {
			assert_int_equal(ps.nr, 4);
		}
	}
	assert_int_equal(n, 2);
	pd_free(&rb.pf);
	fs_free(&s);
	free(ips);
}

/* Losses and throttling become LOST, LOST_SAMPLES, THROTTLE records, in time order. */
static void test_losses_and_throttle(void **state)
{
	struct session s;
	struct readback rb;
	const struct perf_event_header *r;
	uint64_t off = 0, last = 0;
	int lost = 0, lost_samples = 0, thr = 0, unthr = 0;
	struct session_throttle t[1] = { { .cpu = 1, .start = 1250, .end = 1450 } };

	(void)state;
	sample_session(&s);
	s.loss.ring_lost[1] = 17;
	s.loss.lost_samples[0] = 3;
	s.throttle = malloc(sizeof(t));
	memcpy(s.throttle, t, sizeof(t));
	s.nthrottle = 1;
	convert(&s, tmpdir_path("e.data"));
	read_back(&rb, tmpdir_path("e.data"));
	while ((r = pd_next_record(&rb.pf, &off))) {
		struct sid sid;
		if (r->type == PD_RECORD_FINISHED_ROUND)
			continue;
		if (r->type == PERF_RECORD_SAMPLE) {	/* no trailer: time from the body */
			struct pd_sample ps;
			pd_parse_sample(r, rb.attr[0].sample_type, &ps);
			sid.time = ps.time;
		} else {
			trailer(r, &sid);
		}
		if (sid.time < last)
			fail_msg("record type %u at %llu after %llu", r->type,
				 (unsigned long long)sid.time, (unsigned long long)last);
		last = sid.time;
		switch (r->type) {
		case PERF_RECORD_LOST: {
			const uint64_t *f = (const void *)(r + 1);
			assert_int_equal(f[1], 17);
			assert_int_equal(sid.cpu, 1);
			lost++;
			break;
		}
		case PERF_RECORD_LOST_SAMPLES:
			assert_int_equal(*(const uint64_t *)(r + 1), 3);
			assert_int_equal(sid.cpu, 0);
			lost_samples++;
			break;
		case PERF_RECORD_THROTTLE:
			assert_int_equal(sid.time, 1250);
			assert_int_equal(*(const uint64_t *)(r + 1), 1250);
			thr++;
			break;
		case PERF_RECORD_UNTHROTTLE:
			assert_int_equal(sid.time, 1450);
			unthr++;
			break;
		}
	}
	assert_int_equal(lost, 1);
	assert_int_equal(lost_samples, 1);
	assert_int_equal(thr, 1);
	assert_int_equal(unthr, 1);
	pd_free(&rb.pf);
	fs_free(&s);
}

/*
 * Every LOST and LOST_SAMPLES record of the capture becomes one perf
 * record, on its CPU, at the time of that CPU's sample before it; what
 * the totals count beyond the records comes at the end.
 */
static void test_loss_records(void **state)
{
	struct session s;
	struct readback rb;
	const struct perf_event_header *r;
	uint64_t off = 0, prev = 0;
	struct { uint32_t cpu, type; uint64_t n; } in[] = {
		{ 0, BP_RECORD_SAMPLE, 0 }, { 1, BP_RECORD_LOST, 7 }, { 0, BP_RECORD_SAMPLE, 0 },
		{ 0, BP_RECORD_LOST, 5 }, { 1, BP_RECORD_SAMPLE, 0 }, { 0, BP_RECORD_SAMPLE, 0 },
		{ 0, BP_RECORD_LOST_SAMPLES, 2 },
	};
	struct { uint32_t type, cpu; uint64_t n, time; } want[] = {
		{ PERF_RECORD_LOST, 1, 7, 1000 }, { PERF_RECORD_LOST, 0, 5, 1200 },
		{ PERF_RECORD_LOST_SAMPLES, 0, 2, 1400 }, { PERF_RECORD_LOST, 0, 4, 1900 },
	};
	size_t nin = sizeof(in) / sizeof(in[0]), k = 0;

	(void)state;
	sample_session(&s);
	s.records = calloc(nin, sizeof(*s.records));
	s.rec_data = calloc(nin, 24);
	for (size_t i = 0; i < nin; i++) {
		struct bp_record_lost l = { .header = { .type = in[i].type, .size = 24 },
					    .lost = in[i].n };
		struct bp_record_lost_samples ls = {
			.header = { .type = in[i].type, .size = 16 }, .lost = in[i].n };
		if (in[i].type == BP_RECORD_LOST_SAMPLES)
			memcpy(s.rec_data + 24 * i, &ls, sizeof(ls));
		else
			memcpy(s.rec_data + 24 * i, &l, sizeof(l));
		s.records[i] = (struct session_record){ in[i].cpu, in[i].type, 24 * i };
	}
	s.nrecords = nin;
	s.loss.ring_lost[0] = 9;		/* 4 more than its records say */
	s.loss.ring_lost[1] = 7;
	s.loss.lost_samples[0] = 2;
	convert(&s, tmpdir_path("m.data"));
	read_back(&rb, tmpdir_path("m.data"));
	while ((r = pd_next_record(&rb.pf, &off))) {
		struct sid sid;
		if (r->type == PERF_RECORD_SAMPLE) {
			struct pd_sample ps;
			pd_parse_sample(r, rb.attr[0].sample_type, &ps);
			assert_true(ps.time >= prev);
			prev = ps.time;
			continue;
		}
		if (r->type != PERF_RECORD_LOST && r->type != PERF_RECORD_LOST_SAMPLES)
			continue;
		trailer(r, &sid);
		assert_true(k < 4);
		assert_int_equal(r->type, want[k].type);
		assert_int_equal(sid.cpu, want[k].cpu);
		assert_int_equal(sid.time, want[k].time);
		assert_true(sid.time >= prev);
		prev = sid.time;
		if (r->type == PERF_RECORD_LOST)
			assert_int_equal(((const uint64_t *)(r + 1))[1], want[k].n);
		else
			assert_int_equal(((const uint64_t *)(r + 1))[0], want[k].n);
		k++;
	}
	assert_int_equal(k, 4);
	pd_free(&rb.pf);
	free(s.records);
	free(s.rec_data);
	fs_free(&s);
}

/* A sample id without EVENT_DESC gets an attr of its own; apps name their pids. */
static void test_undescribed_event_and_pids(void **state)
{
	struct session s;
	struct readback rb;
	const struct perf_event_header *r;
	uint64_t off = 0;
	int comm[3] = { 0 };

	(void)state;
	fs_init(&s);
	fs_event(&s, 0, "instructions", 0xc0, 1000);
	fs_app(&s, 4, 0, "alpha", 1, 50);
	fs_app(&s, 5, 0, "beta", 60, 90);
	fs_sample(&s, 10, 0, 4, 0, 1000, F_MAIN, NULL, 0);
	fs_sample(&s, 70, 0, 5, 7, 1000, F_MAIN, NULL, 0);
	fs_sample(&s, 95, 0, 9, 0, 1000, F_MAIN, NULL, 0);
	convert(&s, tmpdir_path("f.data"));
	read_back(&rb, tmpdir_path("f.data"));
	assert_int_equal(rb.pf.nattrs, 2);
	assert_int_equal(rb.attr[0].type, PERF_TYPE_HARDWARE);
	assert_int_equal(rb.attr[0].config, PERF_COUNT_HW_INSTRUCTIONS);
	assert_int_equal(rb.attr[1].type, PERF_TYPE_RAW);
	assert_int_equal(rb.ids[1][0], 2);
	while ((r = pd_next_record(&rb.pf, &off))) {
		const uint32_t *p = (const void *)(r + 1);
		if (r->type == PERF_RECORD_COMM) {
			const char *c = (const char *)(p + 2);
			if (p[0] == 4)
				assert_string_equal(c, "alpha"), comm[0]++;
			else if (p[0] == 5)
				assert_string_equal(c, "beta"), comm[1]++;
			else if (p[0] == 9)
				assert_string_equal(c, "bareperf"), comm[2]++;
			else
				fail_msg("COMM for pid %u", p[0]);
		}
		if (r->type == PERF_RECORD_SAMPLE) {
			struct pd_sample ps;
			pd_parse_sample(r, rb.attr[0].sample_type, &ps);
			if (ps.pid == 5)
				assert_int_equal(ps.id, 2);
		}
	}
	assert_int_equal(comm[0], 1);
	assert_int_equal(comm[1], 1);
	assert_int_equal(comm[2], 1);
	{
		size_t len;
		const uint8_t *p = pd_feature(&rb.pf, PD_FEAT_EVENT_DESC, &len);
		size_t o = 8 + PERF_ATTR_SIZE_VER7 + 4;
		size_t used;
		pd_string(p + o, len - o, &used);
		o += used + 8 + PERF_ATTR_SIZE_VER7 + 4;
		assert_string_equal(pd_string(p + o, len - o, NULL), "event7");
	}
	pd_free(&rb.pf);
	fs_free(&s);
}

static void test_event_type_map(void **state)
{
	static const struct { const char *name; uint32_t type; uint64_t config; } cases[] = {
		{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
		{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
		{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
		{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
		{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
		{ "br_misp_retired.all_branches", PERF_TYPE_RAW, 0x1234c5 },
		{ "Cycles", PERF_TYPE_RAW, 0x1234c5 },	/* names are exact */
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bp_record_event_desc d = { .config = 0x1234c5 };
		uint32_t type;
		uint64_t config;
		strcpy(d.name, cases[i].name);
		convert_event_type(&d, &type, &config);
		assert_int_equal(type, cases[i].type);
		assert_int_equal(config, cases[i].config);
	}
}

static void test_errors(void **state)
{
	struct session s;
	struct symtab *t = fake_symtab(syms, 4, segs, 2), *noseg = fake_symtab(syms, 4, NULL, 0);
	struct symtab *nosym = fake_symtab(syms + 1, 3, segs, 2);
	char err[256];

	(void)state;
	sample_session(&s);
	assert_int_equal(convert_perfdata(&s, nosym, KPATH, NULL, 0, tmpdir_path("g.data"), err,
					  sizeof(err)), -1);
	assert_non_null(strstr(err, "no symbol at the start"));
	assert_int_equal(convert_perfdata(&s, noseg, KPATH, NULL, 0, tmpdir_path("g.data"), err,
					  sizeof(err)), -1);
	assert_non_null(strstr(err, "no executable segment"));
	assert_int_equal(convert_perfdata(&s, t, KPATH, NULL, 0, "/nonexistent/dir/x.data", err,
					  sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent/dir/x.data"));
	assert_int_equal(access(tmpdir_path("g.data"), F_OK), -1);	/* nothing left behind */
	symtab_free(t);
	symtab_free(noseg);
	symtab_free(nosym);
	fs_free(&s);
}

/* The reader refuses what is not a perf.data file or lies about its sections. */
static void test_reader_rejects(void **state)
{
	struct pd_file pf;
	struct session s;
	struct readback rb;
	char err[256];
	uint8_t *copy;

	(void)state;
	sample_session(&s);
	convert(&s, tmpdir_path("h.data"));
	read_back(&rb, tmpdir_path("h.data"));
	copy = malloc(rb.pf.len);

	assert_int_equal(pd_read_mem(&pf, rb.pf.buf, 50, err, sizeof(err)), -1);
	memcpy(copy, rb.pf.buf, rb.pf.len);
	copy[0] = 'X';
	assert_int_equal(pd_read_mem(&pf, copy, rb.pf.len, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "magic"));
	memcpy(copy, rb.pf.buf, rb.pf.len);
	((struct pd_file_header *)copy)->data.size = rb.pf.len;
	assert_int_equal(pd_read_mem(&pf, copy, rb.pf.len, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "outside"));
	memcpy(copy, rb.pf.buf, rb.pf.len);
	assert_int_equal(pd_read_mem(&pf, copy, rb.pf.len, err, sizeof(err)), 0);
	pd_free(&pf);

	/* a record whose size runs past the data section ends the walk */
	memcpy(copy, rb.pf.buf, rb.pf.len);
	((struct perf_event_header *)(copy + rb.pf.hdr.data.offset))->size = 0xfff8;
	assert_int_equal(pd_read_mem(&pf, copy, rb.pf.len, err, sizeof(err)), 0);
	{
		uint64_t off = 0;
		assert_null(pd_next_record(&pf, &off));
	}
	pd_free(&pf);
	free(copy);
	pd_free(&rb.pf);
	fs_free(&s);
}

/* The low-level writer on its own: attrs after the first record are refused. */
static void test_writer_order(void **state)
{
	struct pd_writer *w = malloc(sizeof(*w));
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE };
	struct perf_event_header h = { PD_RECORD_FINISHED_ROUND, 0, 8 };
	struct pd_file pf;
	uint64_t id = 42;
	char err[256];

	(void)state;
	assert_int_equal(pd_create(w, tmpdir_path("i.data"), err, sizeof(err)), 0);
	assert_int_equal(pd_add_attr(w, &a, "x", &id, 1), 0);
	pd_write_record(w, &h);
	assert_int_equal(pd_add_attr(w, &a, "y", &id, 1), -1);
	pd_set_feature_string(w, PD_FEAT_ARCH, "x86_64");
	assert_int_equal(pd_close(w, err, sizeof(err)), 0);
	assert_int_equal(pd_read(&pf, tmpdir_path("i.data"), err, sizeof(err)), 0);
	assert_int_equal(pf.nattrs, 1);
	assert_int_equal(pf.hdr.data.size, 8);
	pd_free(&pf);

	/* a malformed record fails the file at close and removes it */
	assert_int_equal(pd_create(w, tmpdir_path("j.data"), err, sizeof(err)), 0);
	h.size = 12;
	pd_write_record(w, &h);
	assert_int_equal(pd_close(w, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "size 12"));
	assert_int_equal(access(tmpdir_path("j.data"), F_OK), -1);
	free(w);
}

/* cmd_convert end to end on a fake-loaded session. */
static void test_cmd_convert(void **state)
{
	struct session s;
	char *ok[] = { "convert", "-i", "x.bpc", "--to", "perf.data", "-o", tmpdir_path("k.data"),
		       "--kernel", "/proc/self/exe", NULL };
	char *bad_to[] = { "convert", "-i", "x.bpc", "--to", "csv", NULL };
	char *no_to[] = { "convert", "-i", "x.bpc", NULL };
	char *no_value[] = { "convert", "--to", "perf.data", "-o", NULL };
	char *extra[] = { "convert", "--to", "perf.data", "junk", NULL };
	char *stdout_pd[] = { "convert", "-i", "x", "--to", "perf.data", "-o", "-", NULL };
	struct pd_file pf;
	char err[256];

	(void)state;
	sample_session(&s);
	fake_loaded_session = &s;
	setenv("PERF_BUILDID_DIR", tmpdir_path("cache"), 1);
	assert_int_equal(cmd_convert(9, ok), 0);
	/* the kernel went into perf's build-id cache under its build-id
	 * (the fake symtab's) and path, linked from .build-id/xx/rest */
	{
		char exe[4096], path[8192], hex[41];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		assert_true(n > 0);
		exe[n] = 0;
		for (int i = 0; i < 20; i++)
			snprintf(hex + 2 * i, 3, "%02x", (uint8_t)"fake-build-id-0123456"[i]);
		snprintf(path, sizeof(path), "%s%s/%s/elf", tmpdir_path("cache"), exe, hex);
		assert_int_equal(access(path, R_OK), 0);
		snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s/elf", tmpdir_path("cache"), hex, hex + 2);
		assert_int_equal(access(path, R_OK), 0);
	}
	unsetenv("PERF_BUILDID_DIR");
	assert_int_equal(pd_read(&pf, tmpdir_path("k.data"), err, sizeof(err)), 0);
	assert_int_equal(pf.nattrs, 2);
	pd_free(&pf);
	assert_int_equal(cmd_convert(5, bad_to), 2);
	assert_int_equal(cmd_convert(3, no_to), 2);
	assert_int_equal(cmd_convert(4, no_value), 2);
	assert_int_equal(cmd_convert(4, extra), 2);
	assert_int_equal(cmd_convert(7, stdout_pd), 2);
	fake_loaded_session = NULL;
	fs_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_and_attrs),
		cmocka_unit_test(test_comm_mmap_samples),
		cmocka_unit_test(test_features),
		cmocka_unit_test(test_no_callchain),
		cmocka_unit_test(test_long_callchain),
		cmocka_unit_test(test_losses_and_throttle),
		cmocka_unit_test(test_loss_records),
		cmocka_unit_test(test_undescribed_event_and_pids),
		cmocka_unit_test(test_event_type_map),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_reader_rejects),
		cmocka_unit_test(test_writer_order),
		cmocka_unit_test(test_cmd_convert),
	};
	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
