/*
 * profile_internal.h — what the files of a run (pmu/profile.c,
 * pmu/settings.c) share; not for use outside pmu/.
 */
#ifndef BAREPERF_PMU_PROFILE_INTERNAL_H
#define BAREPERF_PMU_PROFILE_INTERNAL_H

#include "kernel/kernel.h"

#define SOFT_EVENT_NAME		"cpu-clock"
#define DEFAULT_SOFT_PERIOD_NS	250000ul	/* 4 kHz, perf's default rate */
#define HPET_NS_PER_S		1000000000ul
#define CPU_TIME_MAX_PERCENT	25		/* perf_cpu_time_max_percent */

/* ns -> HPET ticks without overflow for any period and HPET rate; false
 * if there is no HPET or the result does not fit. */
bool profile_hpet_ticks(u64 ns, u64 *ticks);
/* The soft PMU's handler cost, measured at boot (profile_init), ns. */
u64 profile_soft_cost_ns(void);

#endif
