/*
 * run_drain.c — the run's drain (apps/run.h): the run hands its rings
 * over (ringbuf/drain.c never asks pmu/ for them). Apart from apps/run.c
 * because code below the run, a benchmark waiting for room for its
 * record (apps/bench_records.c), drains too.
 */
#include "kernel/kernel.h"
#include "kernel/stream.h"
#include "apps/run.h"
#include "profile/profile.h"
#include "ringbuf/drain.h"

void run_drain(bool from_tick)
{
	struct bp_ring *rings[STREAM_MAX_CPUS];
	u32 n = MIN(profile_cpus(), (u32)STREAM_MAX_CPUS);

	for (u32 cpu = 0; cpu < n; cpu++)
		rings[cpu] = profile_ring(cpu);
	bp_drain(rings, n, profile_config()->sample_type, from_tick);
}
