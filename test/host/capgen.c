/*
 * capgen.c — synthetic capture files (capgen.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/host/capgen.h"

struct capgen *capgen_tmp(char *path, size_t cap, const char *name)
{
	struct capgen *g;
	int fd;

	snprintf(path, cap, "/tmp/%s-XXXXXX", name);
	fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	close(fd);
	g = malloc(sizeof(*g));
	if (!g)
		unlink(path);
	return g;
}

void capgen_tmp_free(struct capgen *g, const char *path)
{
	unlink(path);
	free(g);
}

int capgen_open(struct capgen *g, const char *path, uint64_t sample_type,
		const char *boot_text, char *err, size_t errlen)
{
	struct capture_meta m = { .link_kind = WIRE_LINK_FILE, .link = "capgen",
				  .run_args = "synthetic" };

	memset(g, 0, sizeof(*g));
	g->sample_type = sample_type;
	g->out = malloc(4 * WIRE_ENC_OUT_MIN);
	if (!g->out) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	static uint32_t boots;

	/* Every capture a boot of its own, as the kernel picks one per boot. */
	g->boot = 0x600d0000u + ++boots;
	for (unsigned c = 0; c < CAPGEN_MAX_CPUS; c++) {
		struct wire_enc_config cfg = { .cpu = (uint16_t)c, .sample_type = sample_type,
					       .boot = g->boot };
		wire_encoder_init(&g->enc[c], &cfg);
	}
	if (capture_create(&g->w, path, &m, err, errlen)) {
		free(g->out);
		g->out = NULL;
		return -1;
	}
	if (boot_text && capture_append(&g->w, boot_text, strlen(boot_text), err, errlen))
		g->failed = true;
	return 0;
}

void capgen_flush(struct capgen *g, unsigned cpu)
{
	size_t done = 0, used;
	char err[256];

	while (done < g->len[cpu]) {
		uint64_t before = g->enc[cpu].framer.frames, rec_before = g->enc[cpu].stats.records;
		size_t n = wire_encode_records(&g->enc[cpu], g->stage[cpu] + done,
					       g->len[cpu] - done, &used, g->out, 4 * WIRE_ENC_OUT_MIN);
		/* Dropping frames keeps the leading 0x00 of the very first output. */
		if (g->drop > 0 && before > 0) {
			g->drop--;
			g->dropped_frames += g->enc[cpu].framer.frames - before;
			g->dropped_records += g->enc[cpu].stats.records - rec_before;
		} else if (capture_append(&g->w, g->out, n, err, sizeof(err))) {
			g->failed = true;
		}
		if (!used)
			break;
		done += used;
	}
	g->len[cpu] = 0;
}

void capgen_record(struct capgen *g, unsigned cpu, const void *rec)
{
	const struct bp_record_header *h = rec;

	if (cpu >= CAPGEN_MAX_CPUS)
		abort();
	if (g->len[cpu] + h->size > CAPGEN_STAGE)
		capgen_flush(g, cpu);
	memcpy(g->stage[cpu] + g->len[cpu], rec, h->size);
	g->len[cpu] += h->size;
}

void capgen_console(struct capgen *g, unsigned cpu, const char *text)
{
	size_t done = 0, used, len = strlen(text);
	char err[256];

	while (done < len) {
		size_t n = wire_encode_bytes(&g->enc[cpu], WIRE_CH_CONSOLE, text + done, len - done,
					     &used, g->out, 4 * WIRE_ENC_OUT_MIN);
		if (capture_append(&g->w, g->out, n, err, sizeof(err)))
			g->failed = true;
		if (!used)
			break;
		done += used;
	}
}

void capgen_end(struct capgen *g, unsigned cpu, uint32_t status, bool halt)
{
	static uint8_t msg[sizeof(struct wire_ctl_msg) + sizeof(struct wire_end) +
			   CAPGEN_MAX_CPUS * WIRE_NR_CHANNELS * sizeof(struct wire_end_stream)];
	struct wire_ctl_msg m = { WIRE_CTL_END, 0 };
	struct wire_end e = { status, halt ? WIRE_END_HALT | g->end_reason << WIRE_END_REASON_SHIFT : 0,
			      0 };
	size_t at = sizeof(m) + sizeof(e), used, n;
	char err[256];

	for (unsigned c = 0; c < CAPGEN_MAX_CPUS; c++)
		for (unsigned ch = 0; ch < WIRE_NR_CHANNELS; ch++) {
			struct wire_end_stream es = { (uint8_t)ch, 0, (uint16_t)c, g->enc[c].framer.seq[ch] };
			if (!es.frames)
				continue;
			memcpy(msg + at, &es, sizeof(es));
			at += sizeof(es);
			e.nr++;
		}
	m.len = (uint16_t)(at - sizeof(m));
	memcpy(msg, &m, sizeof(m));
	memcpy(msg + sizeof(m), &e, sizeof(e));
	n = wire_encode_bytes(&g->enc[cpu], WIRE_CH_CONTROL, msg, at, &used, g->out,
			      4 * WIRE_ENC_OUT_MIN);
	if (capture_append(&g->w, g->out, n, err, sizeof(err)))
		g->failed = true;
}

int capgen_close(struct capgen *g, uint32_t flags, char *err, size_t errlen)
{
	int rc;

	for (unsigned c = 0; c < CAPGEN_MAX_CPUS; c++)
		capgen_flush(g, c);
	if (!g->no_end)
		capgen_end(g, 0, 0, true);
	rc = capture_close(&g->w, flags, err, errlen);
	free(g->out);
	g->out = NULL;
	if (!rc && g->failed) {
		snprintf(err, errlen, "a write failed");
		return -1;
	}
	return rc;
}

void capgen_meta(struct capgen *g, unsigned nr_cpus, uint64_t tsc_hz, uint64_t start_tsc,
		 const uint8_t *build_id, size_t build_id_len)
{
	struct bp_record_run_meta m = {
		.header = { BP_RECORD_RUN_META, 0, sizeof(m) },
		.meta_version = BP_META_VERSION,
		.flags = BP_META_SOFT_PMU,
		.run_id = 1,
		.nr_cpus = nr_cpus,
		.tsc_hz = tsc_hz,
		.start_tsc = start_tsc,
	};

	/* ns = (tsc * mult) >> shift, as profile/records.c computes them. */
	for (m.time_shift = 32; m.time_shift > 0 && tsc_hz; m.time_shift--) {
		uint64_t mult = (1000000000ull << m.time_shift) / tsc_hz;
		if (mult < (1ull << 32)) {
			m.time_mult = (uint32_t)mult;
			break;
		}
	}
	if (build_id)
		memcpy(m.build_id, build_id, build_id_len < 20 ? build_id_len : 20);
	capgen_record(g, 0, &m);
}

void capgen_event(struct capgen *g, uint64_t id, const char *name, uint64_t config,
		  uint64_t sample_period)
{
	struct bp_record_event_desc d = {
		.header = { BP_RECORD_EVENT_DESC, 0, sizeof(d) },
		.id = id,
		.config = config,
		.sample_type = g->sample_type,
		.sample_period = sample_period,
		.group_id = id,
	};

	snprintf(d.name, sizeof(d.name), "%s", name);
	capgen_record(g, 0, &d);
}

void capgen_cpu(struct capgen *g, unsigned cpu, uint32_t pmu_kind)
{
	struct bp_record_cpu_info ci = {
		.header = { BP_RECORD_CPU_INFO, 0, sizeof(ci) },
		.cpu = cpu, .apic_id = cpu, .vendor = BP_CPU_VENDOR_INTEL,
		.family = 6, .model = 0x55, .stepping = 4,
	};
	struct bp_record_pmu_caps pc = {
		.header = { BP_RECORD_PMU_CAPS, 0, sizeof(pc) },
		.cpu = cpu, .kind = pmu_kind, .version = 4, .nr_gp = 4, .nr_fixed = 3,
		.gp_width = 48, .fixed_width = 48,
	};

	memcpy(ci.vendor_string, "GenuineIntel", 12);
	snprintf(ci.brand, sizeof(ci.brand), "capgen synthetic CPU");
	capgen_record(g, cpu, &ci);
	capgen_record(g, cpu, &pc);
}

void capgen_app(struct capgen *g, unsigned cpu, bool start, uint32_t app_id, const char *name,
		uint64_t time, int64_t status)
{
	if (start) {
		struct bp_record_app_start r = {
			.header = { BP_RECORD_APP_START, 0, sizeof(r) },
			.app_id = app_id, .cpu = cpu, .time = time, .main_cpu = g->main_cpu,
		};
		snprintf(r.name, sizeof(r.name), "%s", name);
		capgen_record(g, cpu, &r);
	} else {
		struct bp_record_app_stop r = {
			.header = { BP_RECORD_APP_STOP, 0, sizeof(r) },
			.app_id = app_id, .cpu = cpu, .time = time, .status = status,
		};
		capgen_record(g, cpu, &r);
	}
}

static void put64(uint8_t **q, uint64_t v)
{
	memcpy(*q, &v, 8);
	*q += 8;
}

static void put32x2(uint8_t **q, uint32_t a, uint32_t b)
{
	memcpy(*q, &a, 4);
	memcpy(*q + 4, &b, 4);
	*q += 8;
}

void capgen_sample(struct capgen *g, unsigned cpu, uint64_t id, uint64_t ip, uint64_t time,
		   uint64_t period, uint32_t pid, uint32_t nr_ips, const uint64_t *ips)
{
	uint64_t st = g->sample_type;
	uint8_t rec[BP_RECORD_MAX] __attribute__((aligned(8)));
	uint32_t size = wire_sample_size(st, 0, nr_ips);
	struct bp_record_header h = { BP_RECORD_SAMPLE, BP_MISC_KERNEL, (uint16_t)size };
	uint8_t *q = rec + sizeof(h);

	if (!size)
		abort();
	memcpy(rec, &h, sizeof(h));
	if (st & BP_SAMPLE_IDENTIFIER)
		put64(&q, id);
	if (st & BP_SAMPLE_IP)
		put64(&q, ip);
	if (st & BP_SAMPLE_TID)
		put32x2(&q, pid, cpu);
	if (st & BP_SAMPLE_TIME)
		put64(&q, time);
	if (st & BP_SAMPLE_ID)
		put64(&q, id);
	if (st & BP_SAMPLE_CPU)
		put32x2(&q, cpu, 0);
	if (st & BP_SAMPLE_PERIOD)
		put64(&q, period);
	if (st & BP_SAMPLE_CALLCHAIN) {
		put64(&q, nr_ips);
		for (uint32_t i = 0; i < nr_ips; i++)
			put64(&q, ips[i]);
	}
	if ((uint32_t)(q - rec) != size)
		abort();
	capgen_record(g, cpu, rec);
}

void capgen_lost(struct capgen *g, unsigned cpu, uint64_t lost)
{
	struct bp_record_lost r = { { BP_RECORD_LOST, 0, sizeof(r) }, cpu, lost };

	capgen_record(g, cpu, &r);
}

void capgen_lost_samples(struct capgen *g, unsigned cpu, uint64_t lost)
{
	struct bp_record_lost_samples r = { { BP_RECORD_LOST_SAMPLES, 0, sizeof(r) }, lost };

	capgen_record(g, cpu, &r);
}

void capgen_throttle(struct capgen *g, unsigned cpu, bool on, uint64_t time)
{
	struct bp_record_throttle r = {
		{ on ? BP_RECORD_THROTTLE : BP_RECORD_UNTHROTTLE, 0, sizeof(r) }, time, 0, 0 };

	capgen_record(g, cpu, &r);
}

void capgen_ticks(struct capgen *g, unsigned cpu, uint32_t app_id, uint64_t due,
		  uint64_t samples, uint64_t dropped, uint64_t lost, uint64_t throttled)
{
	struct bp_record_ticks r = {
		.header = { BP_RECORD_TICKS, 0, sizeof(r) },
		.app_id = app_id, .cpu = cpu, .hpet_hz = 100000000, .period = 5000,
		.window = due * 5000, .due = due, .samples = samples, .dropped = dropped,
		.lost = lost, .throttled = throttled,
	};
	capgen_record(g, cpu, &r);
}
