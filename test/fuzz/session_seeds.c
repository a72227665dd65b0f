/*
 * session_seeds DIR — seeds for fuzz_session: the stream part of
 * synthetic captures (test/host/capgen.c), each behind the flag byte the
 * target reads first: a run with every kind of loss, call chains with
 * IDENTIFIER and two events, two CPUs, and a counting run.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/host/capgen.h"

static struct capgen g;
static char err[256];

static void save(const char *tmp, const char *dir, const char *name)
{
	char path[512];
	FILE *in = fopen(tmp, "rb"), *out;
	static uint8_t buf[1 << 20];
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	out = fopen(path, "wb");
	if (!in || !out || fseek(in, sizeof(struct wire_capture_header), SEEK_SET))
		exit(1);
	fputc(1, out);		/* flags: complete */
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	fclose(in);
	if (fclose(out))
		exit(1);
}

int main(int argc, char **argv)
{
	char tmp[] = "/tmp/session_seeds-XXXXXX";
	const uint64_t ips[4] = { 0xffffffff80100010ull, 0xffffffff80100105ull,
				  0xffffffff80100205ull, 0xffffffff80100305ull };
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	if ((fd = mkstemp(tmp)) < 0)
		return 1;
	close(fd);

	if (capgen_open(&g, tmp, CAPGEN_ST, "boot text\r\n", err, sizeof(err)))
		return 1;
	capgen_meta(&g, 1, 1000000000, 0, NULL, 0);
	capgen_event(&g, 0, "cpu-clock", 0, 250000);
	capgen_cpu(&g, 0, BP_PMU_SOFT);
	capgen_app(&g, 0, true, 1, "loopnest", 0, 0);
	for (int i = 0; i < 40; i++)
		capgen_sample(&g, 0, 0, ips[i % 4], (uint64_t)i * 1000, 250000, 1, 0, NULL);
	capgen_lost(&g, 0, 3);
	capgen_lost_samples(&g, 0, 2);
	capgen_throttle(&g, 0, true, 50000);
	capgen_throttle(&g, 0, false, 60000);
	capgen_app(&g, 0, false, 1, NULL, 90000, 0);
	capgen_flush(&g, 0);
	capgen_console(&g, 0, "app: loopnest: exit status 0\r\n");
	if (capgen_close(&g, 0, err, sizeof(err)))
		return 1;
	save(tmp, argv[1], "run");

	if (capgen_open(&g, tmp, CAPGEN_ST | BP_SAMPLE_IDENTIFIER | BP_SAMPLE_CALLCHAIN, NULL, err,
			sizeof(err)))
		return 1;
	capgen_meta(&g, 2, 2000000000, 0, NULL, 0);
	capgen_event(&g, 5, "cycles", 0x3c, 100000);
	capgen_event(&g, 6, "instructions", 0xc0, 100000);
	capgen_flush(&g, 0);
	for (int i = 0; i < 30; i++)
		capgen_sample(&g, (unsigned)i % 2, 5 + (uint64_t)(i % 2), ips[0], (uint64_t)i, 100000,
			      1, 1 + (uint32_t)i % 4, ips);
	if (capgen_close(&g, 0, err, sizeof(err)))
		return 1;
	save(tmp, argv[1], "chains");

	if (capgen_open(&g, tmp, CAPGEN_ST, NULL, err, sizeof(err)))
		return 1;
	capgen_meta(&g, 1, 1000000000, 0, NULL, 0);
	capgen_event(&g, 0, "task-clock", BP_CONFIG_SOFT_TASK_CLOCK, 0);
	capgen_event(&g, 1, "tsc", BP_CONFIG_SOFT_TSC, 0);
	capgen_app(&g, 0, true, 1, "loopnest", 0, 0);
	{
		struct {
			struct bp_record_counts h;
			struct bp_count_entry e[2];
		} c = { { { BP_RECORD_COUNTS, 0, sizeof(c) }, 1, 0, 2 },
			{ { 0, 1000, 1000, 1000 }, { 1, 5000, 2000, 1000 } } };
		capgen_record(&g, 0, &c);
	}
	capgen_app(&g, 0, false, 1, NULL, 1000, 0);
	if (capgen_close(&g, 0, err, sizeof(err)))
		return 1;
	save(tmp, argv[1], "counts");
	unlink(tmp);
	return 0;
}
