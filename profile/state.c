/*
 * state.c — the run's state (state.h), defined once: the run, the soft
 * PMU's measured floor, and the count of records that found no room.
 */
#include "kernel/kernel.h"
#include "kernel/percpu.h"
#include "profile/state.h"
#include "ringbuf/ringbuf.h"

struct prof_run prof;
struct prof_soft_floor prof_floor = { .floor_ns = 1 };

int prof_events_total(void)
{
	return prof.cfg.nevents + prof.cfg.ncount;
}

u64 profile_soft_floor_ns(void)
{
	return prof_floor.floor_ns;
}

bool prof_dropped_for_room(int err)
{
	return err == BP_ERING_NOSPACE || err == BP_ERING_PAUSED;
}

/* One add, atomic against an NMI on the same CPU that counts a drop too. */
void prof_count_drop(struct cpu_prof *cp, int err)
{
	if (prof_dropped_for_room(err))
		__atomic_fetch_add(&cp->dropped, 1, __ATOMIC_RELAXED);
}

void profile_count_drop(int err)
{
	u32 cpu = this_cpu()->cpu;

	if (cpu < prof.ncpus && prof.cpus[cpu].mem)
		prof_count_drop(&prof.cpus[cpu], err);
}
