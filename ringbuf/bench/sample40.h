/* ringbuf/bench/sample40.h — the record the benchmarks write. */
#ifndef BAREPERF_RINGBUF_BENCH_SAMPLE40_H
#define BAREPERF_RINGBUF_BENCH_SAMPLE40_H

#include "ringbuf/ringbuf.h"

/* A SAMPLE with sample_type IP | TID | TIME | CPU: 40 bytes. */
struct sample40 {
	struct bp_record_header header;
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};
_Static_assert(sizeof(struct sample40) == 40, "sample40 size");

int bench_sample40(struct bp_ring *rb, const struct sample40 *s);

#endif
