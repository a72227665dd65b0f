/*
 * capgen.h — synthetic capture files, built the way the kernel builds
 * its stream: records laid out as perf_ring.h says, framed by the
 * kernel's own encoder (wire/record.c), written by the capture writer
 * (tools/util/capture.c). For the session and report tests and for the
 * benchmark generator (test/bench/gen_capture.c).
 */
#ifndef BAREPERF_TEST_HOST_CAPGEN_H
#define BAREPERF_TEST_HOST_CAPGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/record.h"
#include "tools/util/capture.h"

#define CAPGEN_MAX_CPUS	16
#define CAPGEN_STAGE	(64u << 10)

/* The sample_type the kernel uses (profile/settings.c), without call chains. */
#define CAPGEN_ST	(BP_SAMPLE_IP | BP_SAMPLE_TID | BP_SAMPLE_TIME | BP_SAMPLE_ID | \
			 BP_SAMPLE_CPU | BP_SAMPLE_PERIOD)

struct capgen {
	struct capture_writer w;
	struct wire_enc enc[CAPGEN_MAX_CPUS];
	uint8_t stage[CAPGEN_MAX_CPUS][CAPGEN_STAGE] __attribute__((aligned(8)));
	size_t len[CAPGEN_MAX_CPUS];
	uint8_t *out;
	uint64_t sample_type;
	int drop;			/* encoder outputs to leave out (lost in transit) */
	uint64_t dropped_frames;	/* frames they held */
	uint64_t dropped_records;	/* records they held */
	bool failed;
	bool no_end;			/* capgen_close() writes no END: a cut stream */
	uint32_t main_cpu;		/* APP_START's main_cpu: the app's CPU + 1, 0 not said */
	uint32_t boot;			/* the boot its frames carry, one per capture */
	uint8_t end_reason;		/* a halting END's enum wire_end_reason */
};

/*
 * Create path (the capture header, link "capgen"), and write boot_text
 * (may be NULL) as the unframed text before the stream. sample_type is
 * what the encoders compact (every event of the capture shares it).
 */
int capgen_open(struct capgen *g, const char *path, uint64_t sample_type,
		const char *boot_text, char *err, size_t errlen);
/* A unit test's fixture: an empty file made as /tmp/NAME-XXXXXX (its
 * name written to path[cap]) and a capgen to write it; NULL when either
 * fails. capgen_tmp_free removes the file and frees the capgen. */
struct capgen *capgen_tmp(char *path, size_t cap, const char *name);
void capgen_tmp_free(struct capgen *g, const char *path);
/* Stage one record (header.size bytes) on cpu's stream. */
void capgen_record(struct capgen *g, unsigned cpu, const void *rec);
/* Frame and write what cpu has staged. */
void capgen_flush(struct capgen *g, unsigned cpu);
/* Console text as CONSOLE frames of cpu. */
void capgen_console(struct capgen *g, unsigned cpu, const char *text);
/* The kernel's END (uapi/wire.h §5) on cpu's CONTROL channel: every
 * stream's frame count so far; halt: the machine stops with status. */
void capgen_end(struct capgen *g, unsigned cpu, uint32_t status, bool halt);
/* Flush every CPU, write END (halt, status 0) unless no_end, close the
 * capture with flags (WIRE_CAPF_*). */
int capgen_close(struct capgen *g, uint32_t flags, char *err, size_t errlen);

/* Records, staged on cpu. */
void capgen_meta(struct capgen *g, unsigned nr_cpus, uint64_t tsc_hz, uint64_t start_tsc,
		 const uint8_t *build_id, size_t build_id_len);
void capgen_event(struct capgen *g, uint64_t id, const char *name, uint64_t config,
		  uint64_t sample_period);
void capgen_cpu(struct capgen *g, unsigned cpu, uint32_t pmu_kind);
void capgen_app(struct capgen *g, unsigned cpu, bool start, uint32_t app_id, const char *name,
		uint64_t time, int64_t status);
void capgen_sample(struct capgen *g, unsigned cpu, uint64_t id, uint64_t ip, uint64_t time,
		   uint64_t period, uint32_t pid, uint32_t nr_ips, const uint64_t *ips);
void capgen_lost(struct capgen *g, unsigned cpu, uint64_t lost);
void capgen_lost_samples(struct capgen *g, unsigned cpu, uint64_t lost);
void capgen_throttle(struct capgen *g, unsigned cpu, bool on, uint64_t time);
/* A soft-PMU TICKS account: a tick every 5000 HPET ticks at 100 MHz
 * (50 us), the window due ticks long. */
void capgen_ticks(struct capgen *g, unsigned cpu, uint32_t app_id, uint64_t due,
		  uint64_t samples, uint64_t dropped, uint64_t lost, uint64_t throttled);

#endif
