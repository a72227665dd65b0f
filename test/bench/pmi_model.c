/*
 * pmi_model — drives the hardware PMI path for pmi_model.sh, which runs
 * this under callgrind and counts the instructions of pmi_path() only: the
 * drivers' overflow handler (pmu_handle_overflow, pmu/core.c) for one
 * sampling counter, with an IP+TIME+PERIOD SAMPLE written into a ring, as
 * profile/sample.c's PMI does. The PMU is the register-level model
 * (test/host/pmu_model.c, Intel arch perfmon v4); its register accesses
 * (pmu_hw_*, pmu_lvtpc_*) are left out of the count by the script, each
 * call standing for the one rdmsr, wrmsr or rdpmc it models.
 *
 * usage: pmi_model N     (N PMIs; prints the model's accesses per PMI)
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernel/kernel.h"
#include "pmu/pmu.h"
#include "ringbuf/ringbuf.h"
#include "test/host/pmu_model.h"
#include <uapi/perf_ring.h>

#define PERIOD		10000
#define DATA_PAGES	64
#define LVT_NMI		0x400u
#define SAMPLE_TYPE	(BP_SAMPLE_IP | BP_SAMPLE_TIME | BP_SAMPLE_PERIOD)

static struct pmu_model M;
static struct pmu_caps caps;
static struct pmu_ctx ctx;
static struct bp_ring ring;
static u64 samples, ip = 0xffffffff81000000ull;

/* As profile/sample.c's write_sample fills it: field by field, without
 * zeroing the whole struct first. */
static void emit(struct pmu_ctx *c, int idx, u64 period, void *arg)
{
	(void)c, (void)idx, (void)arg;
	struct bp_sample s;

	s.ip = ip;
	s.pid = 1;
	s.tid = 0;
	s.time = __builtin_ia32_rdtsc();
	s.addr = 0;
	s.id = 0;
	s.cpu = 0;
	s.period = period;
	s.nr_group = 0;
	s.nr_ips = 0;
	samples += !bp_ring_output_sample(&ring, SAMPLE_TYPE, BP_MISC_KERNEL, &s);
}

/* What callgrind counts: one PMI, NMI handler entry to return. */
void __attribute__((noinline)) pmi_path(void);
void __attribute__((noinline)) pmi_path(void)
{
	(void)pmu_handle_overflow(&ctx, emit, NULL);
}

static void on_nmi(struct pmu_model *m, void *arg)
{
	(void)m, (void)arg;
	pmi_path();
}

static void drain(struct bp_ring_reader *r)
{
	static u8 buf[BP_RECORD_MAX] __attribute__((aligned(8)));
	const struct bp_record_header *rec;

	bp_ring_read_begin(r);
	while (bp_ring_read_next(r, &rec, buf, sizeof(buf)) > 0)
		;
	bp_ring_read_end(r);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000;
	u64 size = (u64)(1 + DATA_PAGES) * BP_RING_PAGE_SIZE;
	void *mem = aligned_alloc(BP_RING_PAGE_SIZE, size);
	struct bp_ring_reader r;
	struct pmu_event_attr a;
	char err[160];

	model_init(&M, model_preset(MODEL_INTEL_V4));
	M.nmi = on_nmi;
	if (!mem || bp_ring_init(&ring, mem, size, NULL) || bp_ring_reader_init(&r, mem, size) ||
	    pmu_probe(&caps) ||
	    pmu_event_parse("instructions/period=" "10000" "/", &caps, &a, err, sizeof(err)) ||
	    pmu_open(&ctx, &caps, &a, 1, 0, err, sizeof(err))) {
		fprintf(stderr, "pmi_model: setup failed: %s\n", err);
		return 1;
	}
	M.lvtpc = LVT_NMI;
	pmu_start(&ctx);
	u64 r0 = M.rdmsrs, w0 = M.wrmsrs, p0 = M.rdpmcs;
	for (long i = 0; i < n; i++) {
		model_retire(&M, PERIOD);
		ip += 4;
		if (i % 1024 == 1023)
			drain(&r);
	}
	u64 rd = M.rdmsrs - r0, wr = M.wrmsrs - w0, pmc = M.rdpmcs - p0;
	pmu_stop(&ctx);
	if (samples != (u64)n || pmu_read(&ctx, 0) != (u64)n * PERIOD) {
		fprintf(stderr, "pmi_model: %llu samples for %ld periods, count %llu\n",
			(unsigned long long)samples, n, (unsigned long long)pmu_read(&ctx, 0));
		return 1;
	}
	printf("%.1f rdmsr, %.1f wrmsr, %.1f rdpmc per PMI\n", (double)rd / n, (double)wr / n,
	       (double)pmc / n);
	free(mem);
	return 0;
}
