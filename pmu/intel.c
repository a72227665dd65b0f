/*
 * intel.c — Intel architectural performance monitoring (SDM Vol. 3B
 * ch. 21): GP counters IA32_PMCx/IA32_PERFEVTSELx, fixed counters gated by
 * IA32_FIXED_CTR_CTRL, and (v2+) IA32_PERF_GLOBAL_CTRL/STATUS/OVF_CTRL.
 */
#include "pmu/internal.h"

static void intel_program(struct pmu_ctx *ctx, struct pmu_counter *c, bool on)
{
	if (c->hw != PMU_HW_FIXED) {
		pmu_gp_program(ctx, c, on);
		return;
	}
	u32 shift = FIXED_CTRL_SHIFT(c->idx);
	ctx->fixed_ctrl &= ~(0xfull << shift);
	if (on)
		ctx->fixed_ctrl |= (FIXED_CTRL_OS | FIXED_CTRL_USR | FIXED_CTRL_PMI) << shift;
	pmu_hw_wrmsr(MSR_IA32_FIXED_CTR_CTRL, ctx->fixed_ctrl);
}

const struct pmu_ops pmu_ops_intel = {
	.name = "intel",
	/* v2+: GLOBAL_CTRL, GLOBAL_STATUS, GLOBAL_OVF_CTRL. */
	.enable_all = pmu_global_enable_all,
	.disable_all = pmu_global_disable_all,
	.get_status = pmu_global_status,
	.ack_status = pmu_global_ack,
	.program = intel_program,
};

/* v1 (SDM 21.2.1): GP counters only, no global control or status. */
const struct pmu_ops pmu_ops_intel_v1 = {
	.name = "intel-v1",
	.enable_all = pmu_evtsel_enable_all,
	.disable_all = pmu_evtsel_disable_all,
	.get_status = pmu_topbit_status,
	.ack_status = pmu_no_ack,
	.program = pmu_gp_program,
};
