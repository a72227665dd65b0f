/*
 * amd.c — AMD core performance counters (APM Vol. 2 §13.2): legacy
 * PerfEvtSel0-3/PerfCtr0-3 (0xC0010000/4, stride 1), the core extension's
 * six CTL/CTR pairs (0xC0010200, stride 2), and PerfMonV2's global
 * PerfCntrGlobalCtl/Status/StatusClr (0xC0000301/300/302).
 *
 * Counters are 48 bits and take full 48-bit writes. Without PerfMonV2 there
 * is no status register: overflow is read from each counter's top bit. The
 * local APIC does not mask LVT PC when it delivers a PMI; today's KVM does
 * not either for AMD guests, but hosts from a16eb25b09c0 until the fix that
 * limits the mask to Intel guests do: core.c rewrites it after every PMI.
 */
#include "pmu/internal.h"

static void amd_write_ctr(struct pmu_ctx *ctx, const struct pmu_counter *c, u64 raw)
{
	(void)ctx;
	pmu_hw_wrmsr(c->ctr_msr, raw);
}

const struct pmu_ops pmu_ops_amd_legacy = {
	.name = "amd-legacy",
	.enable_all = pmu_evtsel_enable_all,
	.disable_all = pmu_evtsel_disable_all,
	.get_status = pmu_topbit_status,
	.ack_status = pmu_no_ack,
	.program = pmu_gp_program,
	.write_ctr = amd_write_ctr,
};

/* Same behaviour; the MSR bases and stride differ, and caps has them. */
const struct pmu_ops pmu_ops_amd_core_ext = {
	.name = "amd-core-ext",
	.enable_all = pmu_evtsel_enable_all,
	.disable_all = pmu_evtsel_disable_all,
	.get_status = pmu_topbit_status,
	.ack_status = pmu_no_ack,
	.program = pmu_gp_program,
	.write_ctr = amd_write_ctr,
};

static void amd_v2_enable_all(struct pmu_ctx *ctx)
{
	pmu_hw_wrmsr(MSR_AMD_PERF_CNTR_GLOBAL_CTL, ctx->en);
}

static void amd_v2_disable_all(struct pmu_ctx *ctx)
{
	(void)ctx;
	pmu_hw_wrmsr(MSR_AMD_PERF_CNTR_GLOBAL_CTL, 0);
}

/* PerfCntrGlobalStatus is read-only; writing 1s to StatusClr clears them. */
static u64 amd_v2_get_status(struct pmu_ctx *ctx)
{
	(void)ctx;
	return pmu_hw_rdmsr(MSR_AMD_PERF_CNTR_GLOBAL_STATUS);
}

static void amd_v2_ack_status(struct pmu_ctx *ctx, u64 status)
{
	(void)ctx;
	pmu_hw_wrmsr(MSR_AMD_PERF_CNTR_GLOBAL_STATUS_CLR, status);
}

const struct pmu_ops pmu_ops_amd_v2 = {
	.name = "amd-perfmon-v2",
	.enable_all = amd_v2_enable_all,
	.disable_all = amd_v2_disable_all,
	.get_status = amd_v2_get_status,
	.ack_status = amd_v2_ack_status,
	.program = pmu_gp_program,
	.write_ctr = amd_write_ctr,
};
