/*
 * intel.c — Intel architectural performance monitoring (SDM Vol. 3B
 * ch. 21): GP counters IA32_PMCx/IA32_PERFEVTSELx, fixed counters gated by
 * IA32_FIXED_CTR_CTRL, and (v2+) IA32_PERF_GLOBAL_CTRL/STATUS/OVF_CTRL.
 */
#include "pmu/internal.h"

/* v2+: one write gates every counter (SDM 21.2.2). */
static void intel_enable_all(struct pmu_ctx *ctx)
{
	pmu_hw_wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, ctx->en);
}

static void intel_disable_all(struct pmu_ctx *ctx)
{
	(void)ctx;
	pmu_hw_wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
}

static u64 intel_get_status(struct pmu_ctx *ctx)
{
	(void)ctx;
	return pmu_hw_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS);
}

/* IA32_PERF_GLOBAL_OVF_CTRL (v4: GLOBAL_STATUS_RESET): 1 clears the bit;
 * this also clears CTR_FRZ, which unfreezes the counters (v4). */
static void intel_ack_status(struct pmu_ctx *ctx, u64 status)
{
	(void)ctx;
	pmu_hw_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, status);
}

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

/*
 * SDM 21.2.6: a WRMSR to IA32_PMCx writes EAX[31:0] sign-extended to the
 * counter width, so -period survives only for period < 2^31 (max_period
 * says so); IA32_A_PMCx (PERF_CAPABILITIES.FW_WRITE) takes the full width.
 * Fixed counters take the full width directly.
 */
static void intel_write_ctr(struct pmu_ctx *ctx, const struct pmu_counter *c, u64 raw)
{
	const struct pmu_caps *caps = ctx->caps;

	if (c->hw == PMU_HW_FIXED)
		pmu_hw_wrmsr(c->ctr_msr, raw);
	else if (caps->fw_write)
		pmu_hw_wrmsr(caps->gp_fw_base + c->idx, raw);
	else
		pmu_hw_wrmsr(c->ctr_msr, raw & 0xffffffffull);
}

const struct pmu_ops pmu_ops_intel = {
	.name = "intel",
	.enable_all = intel_enable_all,
	.disable_all = intel_disable_all,
	.get_status = intel_get_status,
	.ack_status = intel_ack_status,
	.program = intel_program,
	.write_ctr = intel_write_ctr,
};

/* v1 (SDM 21.2.1): GP counters only, no global control or status. */
const struct pmu_ops pmu_ops_intel_v1 = {
	.name = "intel-v1",
	.enable_all = pmu_evtsel_enable_all,
	.disable_all = pmu_evtsel_disable_all,
	.get_status = pmu_topbit_status,
	.ack_status = pmu_no_ack,
	.program = pmu_gp_program,
	.write_ctr = intel_write_ctr,
};
