/*
 * internal.h — what the files of pmu/ share: the vendor ops table chosen
 * at probe, and the helpers both vendors' "legacy" flavours use.
 */
#ifndef BAREPERF_PMU_INTERNAL_H
#define BAREPERF_PMU_INTERNAL_H

#include "kernel/kernel.h"
#include "pmu/pmu.h"
#include "pmu/regs.h"
#include "pmu/hw.h"

/*
 * One table per PMU flavour. The differences between Intel perfmon
 * versions and AMD's three flavours are data in struct pmu_caps (MSR bases,
 * stride, widths); these hooks cover only what differs in behaviour.
 */
struct pmu_ops {
	const char *name;
	/* Gate all of ctx's counters on/off (GLOBAL_CTRL, or each EN bit). */
	void (*enable_all)(struct pmu_ctx *ctx);
	void (*disable_all)(struct pmu_ctx *ctx);
	/* Overflowed counters, by GLOBAL_STATUS bit (and other status bits). */
	u64 (*get_status)(struct pmu_ctx *ctx);
	void (*ack_status)(struct pmu_ctx *ctx, u64 status);
	/* Write the control register(s) of one counter; on=false clears them. */
	void (*program)(struct pmu_ctx *ctx, struct pmu_counter *c, bool on);
};

extern const struct pmu_ops pmu_ops_intel, pmu_ops_intel_v1;
extern const struct pmu_ops pmu_ops_amd_legacy, pmu_ops_amd_core_ext, pmu_ops_amd_v2;

static inline const struct pmu_ops *pmu_ops_for(const struct pmu_caps *caps)
{
	switch (caps->kind) {
	case PMU_KIND_INTEL_ARCH:
		return caps->has_global ? &pmu_ops_intel : &pmu_ops_intel_v1;
	case PMU_KIND_AMD_LEGACY:
		return &pmu_ops_amd_legacy;
	case PMU_KIND_AMD_CORE_EXT:
		return &pmu_ops_amd_core_ext;
	case PMU_KIND_AMD_V2:
		return &pmu_ops_amd_v2;
	default:
		return NULL;
	}
}

/* The hooks of PMUs with global control (Intel v2+, AMD PerfMonV2), by
 * the MSRs caps give: core.c. */
void pmu_global_enable_all(struct pmu_ctx *ctx);
void pmu_global_disable_all(struct pmu_ctx *ctx);
u64 pmu_global_status(struct pmu_ctx *ctx);
void pmu_global_ack(struct pmu_ctx *ctx, u64 status);

/* Per-counter EN gating and top-bit overflow detection, for PMUs without
 * global control (Intel v1, AMD legacy and core-ext): core.c. */
void pmu_evtsel_enable_all(struct pmu_ctx *ctx);
void pmu_evtsel_disable_all(struct pmu_ctx *ctx);
u64 pmu_topbit_status(struct pmu_ctx *ctx);
void pmu_no_ack(struct pmu_ctx *ctx, u64 status);
void pmu_gp_program(struct pmu_ctx *ctx, struct pmu_counter *c, bool on);

/* Bit count without libgcc (the kernel links none; no POPCNT assumed). */
static inline u32 pmu_popcount(u64 v)
{
	u32 n = 0;

	for (; v; v &= v - 1)
		n++;
	return n;
}

/* Bounded, NUL-terminated formatting into err (NULL allowed). */
void pmu_err(char *err, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
