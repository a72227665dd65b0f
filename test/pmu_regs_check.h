/*
 * pmu_regs_check.h — register-level checks of a PMU, the list of
 * kvm-unit-tests' x86/pmu.c that bareperf's driver relies on, written
 * against pmu/hw.h so that the same code runs in the guest on real
 * counters (test/guest/test_pmu_hw.c, `make test-kvm`) and on the register
 * model for every preset (test/host/test_pmu_regs.c, `make test`):
 *
 *   rdpmc      RDPMC of every GP and fixed index equals RDMSR of the counter
 *   widths     Intel: a legacy IA32_PMCx write takes EAX sign-extended to the
 *              width and is seen through IA32_A_PMCx; a full-width write is
 *              seen through both aliases; bits above the width #GP.
 *              AMD: 48-bit writes read back whole
 *   overflow   every GP and fixed index overflows, sets its status bit, and
 *              the acknowledge clears it (PMUs with a global status)
 *   pmi        every index, with its interrupt bit, raises a PMI
 *   all        every counter at once counts the same work, exactly where the
 *              event is instructions
 *   events     instructions, branches, branch-misses, cache-references and
 *              -misses on a GP counter within bounds of the work (n
 *              instructions, n/2 of them branches), ref-cycles (fixed 2)
 *              against the TSC
 *   emulated   instructions a hypervisor emulates (port I/O) are counted,
 *              overflow the counter and raise its PMI
 *   amd_v2     AMD PerfMonV2: GlobalCtl holds the counters' bits and gates
 *              them; StatusSet and StatusClr set and clear single status
 *              bits; an overflow sets its bit, which StatusClr clears alone
 *
 * Each check restores the counters it used to zero and disabled.
 */
#ifndef BAREPERF_TEST_PMU_REGS_CHECK_H
#define BAREPERF_TEST_PMU_REGS_CHECK_H

#include "pmu/pmu.h"

struct pmu_regs_env {
	const struct pmu_caps *caps;
	/* Retire n instructions at CPL 0, n/2 of them taken branches (a
	 * loop of dec, jnz), with the counters as they are. */
	void (*work)(void *arg, u64 n);
	/* Retire n instructions a hypervisor emulates (port I/O), or the
	 * same as work where nothing is emulated. */
	void (*emulated)(void *arg, u64 n);
	/* PMIs delivered on this CPU so far. */
	u64 (*pmis)(void *arg);
	void *arg;
	void (*report)(bool pass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
	void (*skip)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
};

/* Run every check above; the counters end zeroed and disabled. */
void pmu_regs_check(const struct pmu_regs_env *env);

#endif
