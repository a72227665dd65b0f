/*
 * ringbuf/bench/ring_insn.c — drives bench_sample40() for insn.sh, which
 * runs this under callgrind and counts only the instructions inside that
 * function (--toggle-collect). A drain every DRAIN_EVERY samples keeps the
 * ring from filling, so the measured calls take the path an NMI handler
 * takes in steady state (including the occasional tail refresh).
 *
 * usage: ring_insn N     (N samples; prints nothing but errors)
 */
#include <stdio.h>
#include <stdlib.h>

#include "ringbuf/bench/sample40.h"

#define DATA_PAGES	64
#define DRAIN_EVERY	1024

static struct bp_ring ring;

static void drain(struct bp_ring_reader *r)
{
	static uint8_t buf[BP_RECORD_MAX] __attribute__((aligned(8)));
	const struct bp_record_header *rec;

	bp_ring_read_begin(r);
	while (bp_ring_read_next(r, &rec, buf, sizeof(buf)) > 0)
		;
	bp_ring_read_end(r);
}

int main(int argc, char **argv)
{
	uint64_t size = (uint64_t)(1 + DATA_PAGES) * BP_RING_PAGE_SIZE;
	struct sample40 s = {
		.header = { .type = BP_RECORD_SAMPLE, .misc = BP_MISC_KERNEL, .size = sizeof(s) },
		.ip = 0xffffffff81000000ull, .pid = 1, .tid = 1, .time = 1000, .cpu = 0,
	};
	struct bp_ring_reader r;
	long i, n = argc > 1 ? atol(argv[1]) : 100000;
	void *mem = aligned_alloc(BP_RING_PAGE_SIZE, size);

	if (!mem || bp_ring_init(&ring, mem, size, NULL) || bp_ring_reader_init(&r, mem, size)) {
		fprintf(stderr, "ring_insn: setup failed\n");
		return 1;
	}
	for (i = 0; i < n; i++) {
		s.time++;
		if (bench_sample40(&ring, &s)) {
			fprintf(stderr, "ring_insn: write %ld failed\n", i);
			return 1;
		}
		if (i % DRAIN_EVERY == DRAIN_EVERY - 1)
			drain(&r);
	}
	free(mem);
	return 0;
}
